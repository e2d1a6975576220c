"""Size limits of the device side: every size is priced before it is allocated.

``firmware_sim`` runs campaigns of any length in batches of bounded memory
(:data:`BATCH_BYTES` of frames at a time), and refuses, before allocating,
any single array above :data:`MAX_ALLOCATION_BYTES` with a
:class:`~firmware_sim.errors.SizeLimitError` that names the parameter, the
need and the limit. The same limit as the host side's
(``edgecode._config.MAX_ALLOCATION_BYTES``); ``firmware_sim`` does not import
edgecode, so the number is kept here too and a test pins the two equal.
"""

from .errors import SizeLimitError

__all__ = ["MAX_ALLOCATION_BYTES", "BATCH_BYTES", "check_allocation"]

#: Largest single allocation a device-side call may ask for (2 GiB).
MAX_ALLOCATION_BYTES = 2 * 2 ** 30

#: Working memory of one batch of a campaign or a simulation (frames, their
#: faulty copies and labels): long runs loop over batches of about this size
#: and return to Python between them (progress, Ctrl-C).
BATCH_BYTES = 32 * 2 ** 20


def _gib(n):
    return f"{n / 2 ** 30:.3g} GiB"


def check_allocation(param, nbytes, *, what, hint="use a smaller value", limit=None):
    """Raise :class:`SizeLimitError` if ``nbytes`` exceeds the limit (nothing allocated yet).

    >>> check_allocation("n_trials=10", 80, what="the labels")
    >>> check_allocation("n_trials=10**12", 8 * 10**12, what="the labels of every trial")
    Traceback (most recent call last):
    ...
    firmware_sim.errors.SizeLimitError: n_trials=10**12: the labels of every trial needs 8,000,000,000,000 bytes (7.45e+03 GiB), above the limit of 2,147,483,648 bytes (2 GiB, firmware_sim._limits.MAX_ALLOCATION_BYTES); use a smaller value
    """
    limit = MAX_ALLOCATION_BYTES if limit is None else int(limit)
    nbytes = int(nbytes)
    if nbytes > limit:
        raise SizeLimitError(f"{param}: {what} needs {nbytes:,} bytes ({_gib(nbytes)}), above "
                             f"the limit of {limit:,} bytes ({_gib(limit)}, "
                             f"firmware_sim._limits.MAX_ALLOCATION_BYTES); {hint}")
