"""The clean side of a run, from the device contract alone: the device, its clean
labels, and the stream the bit faults act on at a site.

``frames = device.encode(X)`` is what the clean host sends; the clean label
of a point is ``device.infer(frames).labels``. At ``site="wire"`` the stream
is the frames' bits (:meth:`~firmware_sim.contract.BaseDevice.wire_bits`,
alphabet 2); at ``"intermediate"`` it is ``device.stage(frames)`` (alphabet
``device.stage_symbols``: N-ary symbols where a kind computes them).

Imports numpy and the contract only.
"""

import json
import os
from numbers import Integral

import numpy as np

from ..artifact import Container
from ..contract import SITES, BaseDevice, load
from ..errors import DeviceError, SizeLimitError
from .batches import MAX_ROWS
from .report import json_default

__all__ = ["as_device", "check_site", "check_n_trials", "check_rows", "check_labels",
           "clean_labels", "stream", "device_info"]


def as_device(device):
    """A device of the contract, or what :func:`firmware_sim.load` opens (path,
    bytes or Container); anything else is a TypeError."""
    if not isinstance(device, (BaseDevice, Container, bytes, bytearray, memoryview, str,
                               os.PathLike)):
        raise TypeError("device must be a firmware_sim Device (or a path, bytes or Container "
                        f"that firmware_sim.load opens); got {type(device).__name__}")
    return load(device)


def check_site(site):
    """``site`` if bit faults can act there (``"wire"`` or ``"intermediate"``)."""
    if site not in ("wire", "intermediate"):
        raise DeviceError(f"site must be 'wire' or 'intermediate' (image faults act on the "
                          f"image whatever the site; sites: {SITES}); got {site!r}")
    return site


def check_n_trials(n_trials):
    """``n_trials`` as an int >= 1."""
    if isinstance(n_trials, bool) or not isinstance(n_trials, (Integral, np.integer)):
        raise TypeError(f"n_trials must be an integer; got {n_trials!r}")
    if n_trials < 1:
        raise DeviceError(f"n_trials must be >= 1; got {n_trials}")
    return int(n_trials)


def check_rows(t, n_trials):
    """Refuse a run whose (point, trial) rows do not fit an int64 row index.

    Memory does not grow with ``n_trials``: the rows run in batches (a run
    of 10**12 trials is merely long: it reports progress and stops on Ctrl-C).
    """
    if t * n_trials > MAX_ROWS:
        raise SizeLimitError(f"n_trials={n_trials}: {t} points x {n_trials} trials = "
                             f"{t * n_trials:.3e} (point, trial) rows, above the "
                             f"{MAX_ROWS:.3e} that an int64 row index counts; use fewer trials")


def check_labels(y, t):
    """True labels as int64 class indices, one per point (``t`` points)."""
    a = np.asarray(y)
    if a.dtype == np.bool_:
        a = a.astype(np.int64)
    if not np.issubdtype(a.dtype, np.number) or np.iscomplexobj(a):
        raise TypeError(f"y must hold class labels (integers); got dtype {a.dtype}")
    if a.size and (not np.all(a == np.rint(a)) or a.min() < 0):
        raise DeviceError("y must hold non-negative integer class labels (the device's label "
                          "indices, 0 .. n_classes - 1)")
    a = a.astype(np.int64).reshape(-1)
    if a.shape[0] != t:
        raise DeviceError(f"y must have shape ({t},), one label per point; got {a.shape}")
    return a


def clean_labels(device, frames):
    """The labels of the clean frames (int64), refused when the device computes none."""
    labels = device.infer(frames).labels
    if labels is None:
        raise DeviceError(f"{type(device).__name__} computes no labels on these frames "
                          "(infer(frames).labels is None): a campaign compares labels; export "
                          "the model with what gives it labels (e.g. a labelled code table)")
    return np.asarray(labels, np.int64).reshape(-1)


def stream(device, frames, site):
    """(the clean stream the bit faults act on at ``site``, its alphabet size)."""
    if site == "wire":
        return device.wire_bits(frames), 2
    return np.ascontiguousarray(device.stage(frames)), int(device.stage_symbols)


def device_info(device):
    """``type``, ``repr``, ``kind`` and (when it answers) ``resources`` of a device,
    for a report."""
    info = {"type": type(device).__name__, "repr": repr(device)}
    container = getattr(device, "container", None)
    if container is not None:
        info["kind"] = container.kind
    try:
        info["resources"] = json.loads(json.dumps(device.resources(), default=json_default))
    except Exception:  # resources are informative only
        pass
    return info
