"""Wire protection of fixed-point features: per (feature, bit) repetition with
majority decoding, a layer over any kind whose frames are int16 features
(issue 27).

An image of any such kind (ECOC, SSBC, forest, ...) that holds the reserved
array ``"__wire_copies__"`` (uint8, shape ``(n_features, 16)``: the copies of
bit b of feature f, odd, 1..255) loads (:func:`firmware_sim.load`) as a
:class:`WireProtectedDevice` wrapping the kind's own device:

* ``encode(X)`` is the host side: the kind's int16 frame, then every bit sent
  ``copies[f, b]`` times. The wire frame is uint8 0/1 bits, feature-major, bit
  0 (least significant) first within a feature, a bit's copies together:
  ``[f0b0 x c00, f0b1 x c01, ..., f0b15 x c0,15, f1b0 x c10, ...]``.
* ``infer(bits)`` majority-decodes every bit (more than half of its copies
  are 1), rebuilds the int16 frame and runs the kind's ``infer`` on it.

Interleaving is a property of the link, as for protected naive Bayes: wrap
the wire fault in :class:`~firmware_sim.faults.Interleave` with
:meth:`WireProtectedDevice.wire_order` (copy-major order: copy 0 of every
bit, then copy 1 of the bits with three or more copies, ...).

Rules (``docs/container_format.md``, "Wire protection layer"): the kind's
frames are int16; ``__wire_copies__`` is uint8 of shape
``(frame_width, 16)``; every entry is odd (1, 3, 5, ..., 255).

Imports numpy and the contract only.
"""

import numpy as np

from .contract import register_layer
from .device import Device
from .errors import ContainerError, DeviceError
from .faults.interleave import copy_major_order

__all__ = ["WIRE_COPIES", "WireProtectedDevice", "check_wire_copies", "wrap_wire",
           "with_wire_copies", "failure_probability"]

#: The reserved array of the layer.
WIRE_COPIES = "__wire_copies__"
#: Bits per fixed-point feature.
BITS = 16
MAX_COPIES = 255


def check_wire_copies(copies, n_features, kind="wire", err=ContainerError):
    """The layer's rules on ``copies`` (``(n_features, 16)``, odd entries in 1..255):
    returns it as int64, or raises ``err`` naming the rule."""
    c = np.asarray(copies)
    if c.shape != (n_features, BITS):
        raise err(f"{kind} container: array {WIRE_COPIES!r} must have shape "
                  f"({n_features}, {BITS}) (one entry per feature and bit); got {c.shape}")
    c = c.astype(np.int64)
    bad = (c < 1) | (c > MAX_COPIES) | (c % 2 == 0)
    if bad.any():
        f, b = (int(v) for v in np.argwhere(bad)[0])
        raise err(f"{kind} container: array {WIRE_COPIES!r}[{f}, {b}] = {c[f, b]}: every "
                  f"bit is sent an odd number of times in 1..{MAX_COPIES} (majority decoding)")
    return c


def failure_probability(copies, eps):
    """Probability that the majority of ``copies`` (odd) copies is wrong when each
    flips independently with probability ``eps``:
    ``sum_{i > c/2} C(c, i) eps^i (1 - eps)^(c - i)`` (elementwise).

    >>> round(float(failure_probability(3, 0.01)), 8)
    0.000298
    """
    from math import comb
    copies = np.asarray(copies, np.int64)
    eps = float(eps)
    out = np.zeros(copies.shape, np.float64)
    for c in np.unique(copies):
        c = int(c)
        out[copies == c] = sum(comb(c, i) * eps ** i * (1 - eps) ** (c - i)
                               for i in range(c // 2 + 1, c + 1))
    return out


class WireProtectedDevice(Device):
    """A kind's device behind repeated, majority-decoded wire bits.

    Built by :func:`firmware_sim.load` from an image holding
    ``"__wire_copies__"`` (or :func:`wrap_wire`). Every hook the engine asks
    (stage, finish, decision layout, workspace, ...) is the wrapped kind's,
    on the decoded frames; frames are the wire bits (uint8 0/1).

    Attributes
    ----------
    inner : Device
        The kind's device (it reads int16 frames).
    copies : ndarray of int64, shape (n_features, 16)
    total_bits : int
        Wire bits per point.
    container, meta, kind, kind_code
        Those of the image (the wrapped kind's).

    Examples
    --------
    >>> import numpy as np
    >>> from firmware_sim.kinds.ecoc import ECOCDevice, make_ecoc_arrays
    >>> from firmware_sim.artifact import write_container
    >>> from firmware_sim import load
    >>> arrays = make_ecoc_arrays([[0], [1]], [0, 1], [2], [0.0], [0],
    ...                           linear=dict(weights=[[1]], bias=[0], n_out=[1]))
    >>> copies = np.full((1, 16), 1, np.uint8); copies[0, 15] = 5
    >>> dev = load(write_container(None, "ecoc", {**arrays, WIRE_COPIES: copies}))
    >>> type(dev).__name__, dev.total_bits
    ('WireProtectedDevice', 20)
    >>> bits = dev.encode([[-3.0], [4.0]])
    >>> bits[:, 15:].tolist()       # the sign bit, five times
    [[1, 1, 1, 1, 1], [0, 0, 0, 0, 0]]
    >>> bits[0, 15:17] = 0          # two of five copies flip: decoded anyway
    >>> dev.infer(bits).labels.tolist()
    [0, 1]
    """

    frame_dtype = np.dtype(np.uint8)
    default_site = "wire"

    def __init__(self, inner, copies, container=None):
        if not isinstance(inner, Device):
            raise TypeError(f"inner must be a Device; got {type(inner).__name__}")
        if inner.frame_dtype != np.int16:
            raise ContainerError(f"{inner.kind} container: array {WIRE_COPIES!r}: the wire "
                                 f"layer protects int16 features; kind {inner.kind!r} sends "
                                 f"{inner.frame_dtype} frames")
        n = int(inner.frame_width)
        self.inner = inner
        self.kind = inner.kind
        self.kind_code = inner.kind_code
        self.stage_symbols = inner.stage_symbols
        self.container = container if container is not None else inner.container
        self.meta = getattr(inner, "meta", self.container.meta)
        self.n_features = n
        self.copies = check_wire_copies(copies, n, inner.kind)
        self.copies.flags.writeable = False
        flat = self.copies.reshape(-1)
        self.total_bits = int(flat.sum())
        self._starts = np.concatenate([[0], np.cumsum(flat)[:-1]]).astype(np.int64)
        self._repeat_index = np.repeat(np.arange(flat.size), flat)

    def __repr__(self):
        return (f"WireProtectedDevice({self.inner!r}, total_bits={self.total_bits}, "
                f"overhead={self.overhead:.3f})")

    # -- the layer --------------------------------------------------------------
    @property
    def frame_width(self):
        return self.total_bits

    @property
    def overhead(self):
        """Extra wire bits over one copy of each bit: ``total_bits / (16 n) - 1``."""
        return self.total_bits / (BITS * self.n_features) - 1.0

    def wire_order(self):
        """The copy-major (interleaved) wire order of the frame positions
        (:func:`~firmware_sim.faults.copy_major_order`)."""
        return copy_major_order(self.copies.reshape(-1))

    def encode(self, X):
        """Host side: the kind's int16 frames, every bit repeated (uint8 0/1 of
        shape ``(t, total_bits)``)."""
        return self.repeat(self.inner.encode(X))

    def repeat(self, frames16):
        """Wire bits of int16 frames (the transmitter's half of :meth:`encode`)."""
        frames16 = self.inner.check_frames(frames16)
        raw = frames16.astype("<i2", copy=False).view(np.uint8)
        bits = np.unpackbits(raw, axis=1, bitorder="little")      # (t, 16 n), f-major
        return np.ascontiguousarray(bits[:, self._repeat_index])

    def decode(self, bits):
        """Device side: majority-decode wire bits into the int16 frames."""
        bits = self.check_frames(bits)
        t = bits.shape[0]
        if t == 0:
            return np.zeros((0, self.n_features), np.int16)
        counts = np.add.reduceat(bits.astype(np.int32, copy=False), self._starts, axis=1)
        ones = (2 * counts > self.copies.reshape(1, -1)).astype(np.uint8)
        raw = np.packbits(ones, axis=1, bitorder="little")
        return np.ascontiguousarray(raw).view("<i2").astype(np.int16, copy=False)

    # -- the contract, on the decoded frames ---------------------------------------
    def infer(self, frames):
        return self.inner.infer(self.decode(frames))

    def labels(self, frames):
        return self.inner.labels(self.decode(frames))

    def stage(self, frames):
        return self.inner.stage(self.decode(frames))

    def finish(self, intermediate):
        return self.inner.finish(intermediate)

    def decision_layout(self):
        return self.inner.decision_layout()

    def cost_counts(self, frames=None):
        """The kind's counts on the decoded frames (the cost model prices the
        inference; the majority decoding of the wire bits is not counted)."""
        return self.inner.cost_counts(None if frames is None else self.decode(frames))

    def workspace_bytes(self):
        """The kind's workspace plus the decoded frame (2 bytes per feature, rounded
        up to 8)."""
        return int(self.inner.workspace_bytes()) + (2 * self.n_features + 7) // 8 * 8

    def c_defines(self):
        return {**self.inner.c_defines(), "EC_WITH_WIRE": 1}

    @property
    def c_sources(self):
        return tuple(self.inner.c_sources) + ("ec_wire.c",)

    @property
    def c_switch(self):
        return self.inner.c_switch

    @property
    def runtime_bytes(self):
        return self.inner.runtime_bytes

    def resources(self):
        r = dict(self.inner.resources())
        r["flash_bytes"] = int(self.container.nbytes)
        r["wire_bits"] = self.total_bits
        r["wire_overhead"] = self.overhead
        r["ram_bytes"] = int(r.get("ram_bytes", 0)) + 2 * self.n_features
        return r

    def quantize(self, X):
        """The kind's int16 frames of ``X`` (before repetition)."""
        return self.inner.encode(X)

    def __getattr__(self, name):
        # the kind's own attributes (classes, code, ...) read through the layer
        if name.startswith("_") or name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)


def wrap_wire(device, container=None):
    """The kind's ``device`` behind the wire layer of ``container`` (the loader's
    hook, :func:`firmware_sim.contract.register_layer`)."""
    container = container if container is not None else device.container
    if WIRE_COPIES not in container.arrays:
        raise ContainerError(f"{container.kind} container: no array {WIRE_COPIES!r}")
    arr = container.arrays[WIRE_COPIES]
    if arr.dtype != np.uint8:
        raise ContainerError(f"{container.kind} container: array {WIRE_COPIES!r} must have "
                             f"dtype uint8; got {arr.dtype.name}")
    return WireProtectedDevice(device, arr, container)


def with_wire_copies(device, copies, meta=None):
    """A protected image: ``device``'s container (any int16-feature kind) with
    ``"__wire_copies__"`` = ``copies`` added (and ``meta`` merged into its
    metadata); returns the container's bytes.

    >>> import numpy as np
    >>> from firmware_sim.kinds.ecoc import make_ecoc_arrays
    >>> from firmware_sim.artifact import write_container
    >>> from firmware_sim import load
    >>> raw = write_container(None, "ecoc", make_ecoc_arrays([[0], [1]], [0, 1], [2],
    ...                       [0.0], [0], linear=dict(weights=[[1]], bias=[0], n_out=[1])))
    >>> load(with_wire_copies(load(raw), np.full((1, 16), 3))).total_bits
    48
    """
    from .artifact import write_container
    base = device.inner if isinstance(device, WireProtectedDevice) else device
    if base.frame_dtype != np.int16:
        raise DeviceError(f"the wire layer protects int16 features; kind {base.kind!r} sends "
                          f"{base.frame_dtype} frames")
    c = check_wire_copies(copies, int(base.frame_width), base.kind, err=DeviceError)
    container = base.container
    arrays = {k: v for k, v in container.arrays.items() if k != WIRE_COPIES}
    arrays[WIRE_COPIES] = c.astype(np.uint8)
    m = dict(container.meta)
    if container.class_names is not None and "classes" not in m:
        m["classes"] = list(container.class_names)
    if meta:
        m.update(meta)
    return write_container(None, container.kind, arrays, m or None)


register_layer(WIRE_COPIES, wrap_wire)
