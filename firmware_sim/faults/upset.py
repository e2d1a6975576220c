"""Single-event upsets in the stored image (:class:`ParameterUpset`, registry name ``seu``)."""

import numpy as np

from ..artifact import PROTECT_NAME, Container, read_container, write_container
from ..errors import DeviceError
from .base import Fault
from .registry import register_fault
from .image import flip_bits_of_bytes, flip_positions, rate_or_count, upset_bytes

__all__ = ["ParameterUpset"]


class ParameterUpset(Fault):
    """Single-event upsets in the stored parameters of an artifact.

    Parameters
    ----------
    rate : float in [0, 1], optional
        Per-bit upset probability.
    count : int, optional
        Exact number of upset bits (uniform over the targeted bits). Give
        exactly one of ``rate`` and ``count``.
    arrays : sequence of str, optional
        Container arrays to upset (default: every array, and the protection
        ``"__protect__"`` of a protected image; ``"__meta__"`` is never
        touched). E.g. ``["table_codes"]`` for an SSBC k-NN code table.
    checked : bool, default False
        False: the upsets hit the arrays' bytes in the image the device holds
        and the device uses them as they are (it does not verify the CRC, or
        the upset happened after its boot-time check): the container is
        re-emitted with the flipped data and a matching CRC, byte for byte
        the original layout. True: the upsets hit any byte of the raw image
        (header, table, data, CRC) and the loader verifies it, so any upset
        is refused with :class:`~firmware_sim.artifact.ContainerError`
        (the CRC-32 detects every error pattern of up to 3 bits in images
        this small, and most others).

    Notes
    -----
    A loader may still refuse an unchecked image whose values break its
    schema (e.g. protected naive Bayes refuses weights whose absolute sum
    overflows int32); :func:`firmware_sim.campaign.run_campaign` counts such
    trials as ``refused``.

    Examples
    --------
    >>> import numpy as np
    >>> from firmware_sim.artifact import read_container, write_container
    >>> c = read_container(write_container(None, "ssbc", {"codes": np.zeros(8, np.uint8)}))
    >>> rng = np.random.default_rng(0)
    >>> int(np.unpackbits(ParameterUpset(count=5).apply_container(c, rng).arrays["codes"]).sum())
    5
    """

    target = "image"
    name = "seu"

    @classmethod
    def default_params(cls, params):
        """One upset (``count=1``) when neither rate nor count is given."""
        params = dict(params)
        if "rate" not in params and "count" not in params:
            params["count"] = 1
        return params

    def __init__(self, rate=None, count=None, arrays=None, checked=False):
        self.rate, self.count = rate_or_count(rate, count)
        if arrays is not None:
            if isinstance(arrays, str):
                arrays = [arrays]
            arrays = tuple(str(a) for a in arrays)
        self.arrays = arrays
        if not isinstance(checked, (bool, np.bool_)):
            raise TypeError(f"checked must be a bool; got {checked!r}")
        self.checked = bool(checked)

    def params(self):
        return {"rate": self.rate, "count": self.count, "arrays": self.arrays,
                "checked": self.checked}

    def rebuild(self, current, changes):
        if "rate" in changes and "count" not in changes:
            current = {**current, "count": None}
        if "count" in changes and "rate" not in changes:
            current = {**current, "rate": None}
        return ParameterUpset(**{**current, **changes})

    def targeted_bits(self, container):
        """Number of bits this model may upset in ``container``."""
        if self.checked:
            return 8 * container.nbytes
        return 8 * sum(a.nbytes for a in self.targets(container).values())

    def targets(self, container):
        """The targeted arrays by name: ``arrays`` (default: every array, and the
        protection ``"__protect__"`` of a protected image, last)."""
        stored = dict(container.arrays)
        if container.protect is not None:
            stored[PROTECT_NAME] = container.protect
        names = list(stored) if self.arrays is None else list(self.arrays)
        missing = [n for n in names if n not in stored]
        if missing:
            raise DeviceError(f"arrays {missing} are not in the {container.kind} container "
                              f"(present: {sorted(stored)})")
        return {n: stored[n] for n in names}

    def apply_container(self, container, rng):
        """The upset image, parsed (raises ContainerError when the loader refuses it)."""
        if not isinstance(container, Container):
            raise TypeError(f"container must be a firmware_sim Container; got "
                            f"{type(container).__name__}")
        if self.checked:
            return read_container(upset_bytes(container.tobytes(), rng, self.rate, self.count))
        pos = flip_positions(self.targeted_bits(container), rng, self.rate, self.count)
        return self.apply_positions(container, pos)

    def apply_positions(self, container, positions):
        """The image with the given targeted bits flipped, parsed.

        ``positions`` index the bits :meth:`targeted_bits` counts: bit ``k`` is
        bit ``k % 8`` (LSB first) of byte ``k // 8`` of the targeted arrays'
        bytes, concatenated in the order of ``arrays`` (default: the
        container's order); with ``checked`` the raw image's bytes. Raises
        ContainerError when the loader refuses the image (always, for a
        checked upset).
        """
        positions = np.asarray(positions, np.int64).reshape(-1)
        n = self.targeted_bits(container)
        if positions.size and (positions.min() < 0 or positions.max() >= n):
            raise DeviceError(f"bit positions must be in [0, {n}); got "
                              f"[{positions.min()}, {positions.max()}]")
        if self.checked:
            buf = np.frombuffer(container.tobytes(), np.uint8).copy()
            flip_bits_of_bytes(buf, positions)
            return read_container(buf.tobytes())
        targets = self.targets(container)
        sizes = [a.nbytes for a in targets.values()]
        blob = np.concatenate([np.frombuffer(a.tobytes(), np.uint8) for a in targets.values()]) \
            if targets else np.empty(0, np.uint8)
        if positions.size == 0:
            return container
        flip_bits_of_bytes(blob, positions)
        arrays = dict(container.arrays)
        protect = container.protect
        offset = 0
        for (name, a), size in zip(targets.items(), sizes):
            new = np.frombuffer(blob[offset:offset + size].tobytes(),
                                dtype=a.dtype).reshape(a.shape)
            if name == PROTECT_NAME:
                protect = new
            else:
                arrays[name] = new
            offset += size
        return read_container(write_container(None, container.kind, arrays,
                                              container.meta or None, protect=protect))


register_fault(ParameterUpset)
