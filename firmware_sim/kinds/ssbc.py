"""Device runtime of streaming spectral binary codes (container kind ``"ssbc"``).

The device turns a float32 input point into a binary code with integer
arithmetic only, and optionally classifies it by a Hamming-nearest k-NN vote
against a stored labelled code table.  The fixed-point scheme:

1. **Input**: ``x_q = rint(clip(x * 2**input_shift, -32767, 32767))`` as int16
   (float32 multiply by a power of two, round half to even).  The anchors are
   stored quantized the same way.
2. **Squared distance** to each anchor, exact in int64: ``D = sum (x_q - a_q)^2``.
3. **Affinity** ``exp(-D / sigma_q)`` with ``sigma_q = sigma * 4**input_shift``,
   written as ``2**(-t)``, ``t = D log2(e) / sigma_q``:
   ``t_q = (min(D, dist_clamp) * exp_mult) >> 40`` is t in Q16
   (``exp_mult = round(2**56 log2(e) / sigma_q)``); its integer part n shifts,
   its fraction f (16 bits) indexes a 257-entry Q15 table of ``2**(-i/256)``
   (``exp_lut``) with linear interpolation on the low 8 bits:
   ``w = ((lut[f>>8] (256 - r) + lut[(f>>8)+1] r) >> 8) >> min(n, 16)``,
   r = f & 255.  w is Q15 (0..32768); the interpolation error of 2**-x is
   below 2e-6 relative, so w is within about 1.5 LSB of ``2**15 exp(-D/sigma_q)``.
   ``dist_clamp`` caps D where t >= 17 (w = 0), which keeps the product
   below 2**62.
4. **Projection**: ``acc_b = sum_j w_j P_jb`` (int64; ``P = round(V 2**projection_shift)``
   as int16) and ``bit_b = acc_b > thresholds_b``
   (``thresholds = round(t_float 2**(15 + projection_shift))``).

Codes are packed LSB first: bit i in byte ``i // 8`` at position ``i % 8``.
The ONNX graph of ``export.ssbc`` computes the same integers, so its bits equal
this runtime's bit for bit.  Schema and byte layout:
``docs/container_format.md`` (section "Model kind ssbc").
"""

import math
from fractions import Fraction
from numbers import Integral, Real
from types import MappingProxyType

import numpy as np

from .. import accounting
from .._validation import check_meta, check_range, check_scalar, fail
from ..artifact import Container, read_container, write_container
from ..channel import bsc, check_bits, check_random_state
from ..device import Device, Inference, register_kind
from ..errors import ContainerError, DeviceError
from ._kernels.ssbc import _affinity_q15, _hamming_knn, _ssbc_bits

__all__ = ["SSBCDevice", "load_ssbc", "make_ssbc_arrays", "exp_lut", "quantize_input",
           "EXP_SHIFT", "INPUT_LIMIT", "LUT_SEGMENTS", "T_MAX"]

KIND = "ssbc"
#: Right shift turning ``D * exp_mult`` into Q16 of t.
EXP_SHIFT = 40
#: Table segments of 2**-x on [0, 1].
LUT_SEGMENTS = 256
#: t (in log2 units) at and beyond which the Q15 affinity is 0.
T_MAX = 17
INPUT_LIMIT = 32767
_POPCNT8 = np.array([bin(i).count("1") for i in range(256)], dtype=np.int64)


def exp_lut():
    """The 257-entry Q15 table ``round(2**15 * 2**(-i/256))``, i = 0..256 (uint16)."""
    i = np.arange(LUT_SEGMENTS + 1, dtype=np.float64)
    return np.round(2.0**15 * np.exp2(-i / LUT_SEGMENTS)).astype(np.uint16)


def _pow2_shift(max_abs, limit):
    """Largest s in [-30, 30] with max_abs * 2**s <= limit (30 if max_abs == 0)."""
    if max_abs == 0:
        return 30
    s = int(math.floor(math.log2(limit / max_abs)))
    while max_abs * 2.0**s > limit:
        s -= 1
    return max(-30, min(30, s))


def quantize_input(X, input_shift):
    """float32 points -> int16 fixed point (the device's input stage)."""
    X = np.asarray(X, dtype=np.float32)
    scaled = X * np.float32(2.0**input_shift)
    return np.rint(np.clip(scaled, -INPUT_LIMIT, INPUT_LIMIT)).astype(np.int16)


def make_ssbc_arrays(anchors, sigma, projection, thresholds, *, table_bits=None,
                     table_labels=None, n_classes=None, knn_k=5, input_shift=None):
    """Quantize a float SSBC model into the arrays of an ``"ssbc"`` container.

    Parameters
    ----------
    anchors : array (m, d) float
    sigma : float > 0
        Affinity ``exp(-||x - a||^2 / sigma)``.
    projection : array (m, k) float
    thresholds : array (k,) float
        Float bit b is ``w(x) . projection[:, b] > thresholds[b]``.
    table_bits : array (T, k) of 0/1, optional
        Labelled code table for k-NN classification (stored packed).
    table_labels : array (T,) of int in [0, n_classes), optional
    n_classes : int, optional (default ``max(table_labels) + 1``)
    knn_k : int, default 5
    input_shift : int, optional
        Default: the largest s with ``max|anchors| * 2**s <= 2**14`` (inputs up
        to twice the anchors' range stay representable).

    Returns
    -------
    dict of arrays (see the schema in ``docs/container_format.md``)

    Examples
    --------
    >>> import numpy as np
    >>> arr = make_ssbc_arrays(np.eye(2), 1.0, np.array([[1.0], [-1.0]]), np.zeros(1))
    >>> sorted(arr)
    ['anchors', 'dist_clamp', 'exp_lut', 'exp_mult', 'input_shift', 'projection', 'projection_shift', 'sigma', 'thresholds']
    >>> int(arr["input_shift"][0]), arr["anchors"].tolist()
    (14, [[16384, 0], [0, 16384]])
    """
    A = np.asarray(anchors, dtype=np.float64)
    P = np.asarray(projection, dtype=np.float64)
    t = np.asarray(thresholds, dtype=np.float64)
    if A.ndim != 2 or A.shape[0] < 1 or A.shape[1] < 1:
        raise DeviceError(f"anchors must have shape (m, d) with m, d >= 1; got {A.shape}")
    m = A.shape[0]
    if P.ndim != 2 or P.shape[0] != m or P.shape[1] < 1:
        raise DeviceError(f"projection must have shape ({m}, k); got {P.shape}")
    k = P.shape[1]
    if t.shape != (k,):
        raise DeviceError(f"thresholds must have shape ({k},); got {t.shape}")
    for name, a in (("anchors", A), ("projection", P), ("thresholds", t)):
        if not np.all(np.isfinite(a)):
            raise DeviceError(f"{name} must be finite")
    if not (isinstance(sigma, Real) and math.isfinite(sigma) and sigma > 0):
        raise DeviceError(f"sigma must be a positive finite number; got {sigma!r}")
    if input_shift is None:
        input_shift = _pow2_shift(float(np.abs(A).max()), 2.0**14)
    aq = quantize_input(A, input_shift)
    sigma_q = float(sigma) * 4.0**input_shift
    mult = round(2.0**(EXP_SHIFT + 16) * math.log2(math.e) / sigma_q)
    if not 1 <= mult < 2**62:
        raise DeviceError(f"sigma={sigma} is out of range for input_shift={input_shift}: "
                          f"exp_mult={mult} must be in [1, 2**62)")
    clamp = -(-(T_MAX << (EXP_SHIFT + 16)) // mult)
    if clamp * mult >= 2**63:
        raise DeviceError("dist_clamp * exp_mult overflows int64")
    ps = _pow2_shift(float(np.abs(P).max()), 32767.0)
    pq = np.round(P * 2.0**ps).astype(np.int16)
    tq = np.round(t * 2.0**(15 + ps))
    if np.any(np.abs(tq) >= 2.0**62):
        raise DeviceError("thresholds are too large for int64 accumulators")
    arrays = {
        "anchors": aq,
        "input_shift": np.array([input_shift], np.int32),
        "sigma": np.array([sigma], np.float64),
        "exp_mult": np.array([mult], np.int64),
        "dist_clamp": np.array([clamp], np.int64),
        "exp_lut": exp_lut(),
        "projection": pq,
        "projection_shift": np.array([ps], np.int32),
        "thresholds": tq.astype(np.int64),
    }
    if table_bits is not None or table_labels is not None:
        if table_bits is None or table_labels is None:
            raise DeviceError("table_bits and table_labels go together")
        tb = check_bits(table_bits, name="table_bits", ndim=2)
        if tb.shape[1] != k or tb.shape[0] < 1:
            raise DeviceError(f"table_bits must have shape (T, {k}) with T >= 1; got {tb.shape}")
        lab = np.asarray(table_labels)
        if lab.shape != (tb.shape[0],) or not np.issubdtype(lab.dtype, np.integer):
            raise DeviceError(f"table_labels must be {tb.shape[0]} integers; got {lab.dtype} "
                              f"{lab.shape}")
        nc = int(lab.max()) + 1 if n_classes is None else int(n_classes)
        if lab.min() < 0 or lab.max() >= nc:
            raise DeviceError(f"table_labels must be in [0, {nc}); got [{lab.min()}, {lab.max()}]")
        if not (isinstance(knn_k, Integral) and 1 <= knn_k <= tb.shape[0]):
            raise DeviceError(f"knn_k must be an integer in [1, {tb.shape[0]}]; got {knn_k!r}")
        arrays["table_codes"] = np.packbits(tb, axis=1, bitorder="little")
        arrays["table_labels"] = lab.astype(np.int32)
        arrays["n_classes"] = np.array([nc], np.int32)
        arrays["knn_k"] = np.array([knn_k], np.int32)
    return arrays


class SSBCDevice(Device):
    """The ``"ssbc"`` model as a device runs it (build with :func:`load_ssbc`).

    Attributes
    ----------
    n_anchors, n_features, n_bits : int
    input_shift, projection_shift : int
    has_table : bool
        Whether a labelled code table (k-NN) is stored.
    container : Container

    Examples
    --------
    >>> import numpy as np
    >>> dev = SSBCDevice.from_arrays(make_ssbc_arrays(np.eye(2), 1.0,
    ...                              np.array([[1.0], [-1.0]]), np.zeros(1)))
    >>> dev.bits([[1.0, 0.0], [0.0, 1.0]]).tolist()
    [[1], [0]]
    """

    # -- the kind's spec (firmware_sim.contract.BaseDevice) -------------------
    kind = KIND
    kind_code = 3
    frame_dtype = np.dtype(np.int16)
    default_site = "intermediate"
    stage_symbols = 2
    c_sources = ("ec_ssbc.c",)
    c_switch = "EC_WITH_SSBC"
    #: The C runtime built at -O2 with this kind only (benchmarks/README.md,
    #: "Firmware"): cortex-m0plus for ``cortex-m0``, cortex-m4 for ``cortex-m4``;
    #: on AVR (-Os) and RV32 the probe's flash minus the image and the peak stack
    #: (``python benchmarks/bench_firmware.py --targets atmega328p,atmega2560,rv32imac
    #: --no-emlearn``).
    runtime_bytes = MappingProxyType({"cortex-m0": (8299, 432), "cortex-m4": (6875, 416),
                                      "atmega328p": (13783, 432), "atmega2560": (13903, 435),
                                      "rv32imac": (9937, 400)})

    @classmethod
    def check_container(cls, container):
        """Rules of kind ``ssbc`` (``docs/container_format.md``); returns the
        validated arrays by name plus ``m, d, k``, ``input_shift``,
        ``projection_shift``, ``sigma``, ``exp_mult``, ``dist_clamp``,
        ``has_table`` and, with a table, ``n_classes`` and ``knn_k``."""
        super().check_container(container)
        return _check_rules(container)

    def __init__(self, container):
        if not isinstance(container, Container):
            raise TypeError("SSBCDevice takes a Container; use load_ssbc(source)")
        if container.kind != KIND:
            raise ContainerError(f"container kind is {container.kind!r}; expected {KIND!r}")
        c = container
        v = self.check_container(c)  # every rule of docs/container_format.md
        m, d, k = v["m"], v["d"], v["k"]
        self.input_shift = v["input_shift"]
        self.projection_shift = v["projection_shift"]
        self.has_table = v["has_table"]
        if self.has_table:
            self.knn_k = v["knn_k"]
            self.n_classes = v["n_classes"]
            self._table = np.ascontiguousarray(v["table_codes"])
            self._labels = v["table_labels"].astype(np.int64)
        self.container = c
        self.meta = c.meta
        self.sigma = v["sigma"]
        self.n_anchors, self.n_features, self.n_bits = m, d, k
        self._A = np.ascontiguousarray(v["anchors"])
        self._P = np.ascontiguousarray(v["projection"])
        self._thr = np.ascontiguousarray(v["thresholds"])
        self._lut = v["exp_lut"].astype(np.int64)
        self._mult, self._clamp = v["exp_mult"], v["dist_clamp"]

    @classmethod
    def from_arrays(cls, arrays, meta=None):
        """Device from :func:`make_ssbc_arrays` output, through a container round trip."""
        return cls(read_container(write_container(None, KIND, arrays, meta)))

    def __repr__(self):
        return (f"SSBCDevice(n_bits={self.n_bits}, n_anchors={self.n_anchors}, "
                f"n_features={self.n_features}, table={self.has_table}, "
                f"flash_bytes={self.container.nbytes})")

    # -- inference ----------------------------------------------------------
    def _check_X(self, X):
        try:
            X = np.asarray(X, dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise TypeError("X must be array-like of numbers") from exc
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise DeviceError(f"X must have shape (n_samples, {self.n_features}); got {X.shape}")
        if not np.all(np.isfinite(X)):
            raise DeviceError("X must be finite")
        return X

    def quantize(self, X):
        """int16 fixed-point inputs (N, d)."""
        return quantize_input(self._check_X(X), self.input_shift)

    def affinity_q15(self, X):
        """Q15 affinities (N, m) as int64 (diagnostics; ``bits`` fuses this step)."""
        xq = self.quantize(X)
        out = np.empty((xq.shape[0], self.n_anchors), dtype=np.int64)
        _affinity_q15(xq, self._A, self._mult, self._clamp, self._lut, out)
        return out

    def bits(self, X):
        """Code bits (N, n_bits) uint8 {0,1}, computed in fixed point."""
        xq = self.quantize(X)
        out = np.empty((xq.shape[0], self.n_bits), dtype=np.uint8)
        _ssbc_bits(xq, self._A, self._mult, self._clamp, self._lut, self._P, self._thr, out)
        return out

    def codes(self, X):
        """Packed codes (N, ceil(n_bits / 8)) uint8, LSB first."""
        return np.packbits(self.bits(X), axis=1, bitorder="little")

    def _require_table(self):
        if not self.has_table:
            raise DeviceError("this container stores no labelled code table; export it with "
                              "a table to classify")

    def table_bits(self):
        """The stored table as {0,1} bits (T, n_bits)."""
        self._require_table()
        return np.unpackbits(self._table, axis=1, count=self.n_bits, bitorder="little")

    def knn_bits(self, bits, table_bits=None):
        """k-NN class indices (int64) of given code bits (N, n_bits).

        ``table_bits`` replaces the stored table (e.g. a noisy copy of it).
        Returns ``(labels, nearest_distance)``.
        """
        self._require_table()
        b = check_bits(bits, name="bits", ndim=2)
        if b.shape[1] != self.n_bits:
            raise DeviceError(f"bits must have shape (N, {self.n_bits}); got {b.shape}")
        tab = self._table
        if table_bits is not None:
            tb = check_bits(table_bits, name="table_bits", ndim=2)
            if tb.shape != (tab.shape[0], self.n_bits):
                raise DeviceError(f"table_bits must have shape ({tab.shape[0]}, {self.n_bits}); "
                                  f"got {tb.shape}")
            tab = np.packbits(tb, axis=1, bitorder="little")
            tab.flags.writeable = False      # typed as the container's table: one compiled kernel
        packed = np.packbits(b, axis=1, bitorder="little")
        lab = np.empty(b.shape[0], dtype=np.int64)
        dist = np.empty(b.shape[0], dtype=np.int64)
        _hamming_knn(packed, tab, self._labels, self.knn_k, self.n_classes, _POPCNT8, lab, dist)
        return lab, dist

    def predict(self, X):
        """k-NN class index (int64) of each input against the stored table."""
        return self.knn_bits(self.bits(X))[0]

    def predict_noisy(self, X, eps_bits=0.0, eps_table=0.0, random_state=None):
        """Classify with bit flips: each computed bit flips with ``eps_bits`` and
        each stored table bit with ``eps_table`` (binary symmetric channel,
        :func:`firmware_sim.channel.bsc`; a fresh noisy table per call)."""
        self._require_table()
        rng = check_random_state(random_state)
        b = self.bits(X)
        if eps_bits:
            b = bsc(b, eps_bits, random_state=rng)
        tb = None
        if eps_table:
            tb = bsc(self.table_bits(), eps_table, random_state=rng)
        return self.knn_bits(b, tb)[0]

    # -- the device contract (firmware_sim.contract) -----------------------------
    @property
    def frame_width(self):
        """int16 features per frame."""
        return self.n_features

    def encode(self, X):
        """Host side: float features -> int16 fixed-point frames (:meth:`quantize`)."""
        return self.quantize(X)

    def infer(self, frames):
        """Device side: affinity, projection, sign on int16 frames; with a table,
        the k-NN vote.

        Returns an :class:`~firmware_sim.device.Inference`: the k-NN class
        indices (None without a table), ``decision["code_bits"]`` (uint8
        (t, n_bits)) and, with a table, ``decision["nearest_distance"]``
        (Hamming distance to the nearest stored code).
        """
        bits = self.stage(frames)
        if not self.has_table:
            return Inference(None, {"code_bits": bits})
        lab, dist = self.knn_bits(bits)
        return Inference(lab, {"code_bits": bits, "nearest_distance": dist})

    def labels(self, frames):
        self._require_table()
        return self.knn_bits(self.stage(frames))[0]

    def stage(self, frames):
        """Intermediate results: the code bits of int16 frames (t, n_bits) uint8."""
        xq = self.check_frames(frames)
        out = np.empty((xq.shape[0], self.n_bits), dtype=np.uint8)
        _ssbc_bits(xq, self._A, self._mult, self._clamp, self._lut, self._P, self._thr, out)
        return out

    def finish(self, intermediate):
        """k-NN labels of code bits (needs the table)."""
        return self.knn_bits(intermediate)[0]

    def cost_counts(self, frames=None):
        """The C runtime's work (``ec_ssbc.c``) for the cost model. Inference:
        ``distance_terms`` (anchors x features squared differences, int64),
        ``anchors`` through the Q15 exponential, ``projection_macs`` (bits per
        anchor whose affinity is not 0: counted on the frames, else every
        anchor), ``bits`` thresholded; with a table, ``table_bytes`` popcounts
        (rows x code bytes), ``table_rows`` and the k-NN ``insertions`` (on
        the frames; else the k first ones). Open: the image
        (``profiles.image_counts``) and the arrays its rules read."""
        from ..profiles import image_counts

        m, d, k = self.n_anchors, self.n_features, self.n_bits
        nb = -(-k // 8)
        infer = {"call": 1, "distance_terms": m * d, "anchors": m, "projection_macs": m * k,
                 "bits": k}
        opened = {**image_counts(self.container), "anchor_values": m * d,
                  "projection_values": m * k, "bits": k}
        if self.has_table:
            T = int(self._table.shape[0])
            infer.update(table_rows=T, table_bytes=T * nb, insertions=min(self.knn_k, T))
            opened.update(table_rows=T, table_bytes=T * nb)
        if frames is None:
            return {"open": opened, "infer": infer}
        q = self.check_frames(frames)
        t = q.shape[0]
        out = {key: np.full(t, float(v)) for key, v in infer.items()}
        aff = np.empty((t, m), dtype=np.int64)
        _affinity_q15(np.ascontiguousarray(q, np.int16), self._A, self._mult, self._clamp,
                      self._lut, aff)
        live = np.count_nonzero(aff[:, 1:], axis=1) + min(m, 1)   # anchor 0 always assigns
        out["projection_macs"] = live.astype(float) * k
        if self.has_table:
            codes = np.packbits(self.stage(q), axis=1, bitorder="little")
            K = self.knn_k
            ins = np.zeros(t)
            for i in range(t):
                dist = np.unpackbits(codes[i] ^ self._table, axis=1).sum(axis=1)
                best = []
                for dd in dist.tolist():
                    if len(best) < K:
                        best.append(dd)
                    elif dd < best[-1]:
                        best[-1] = dd
                    else:
                        continue
                    best.sort()
                    ins[i] += 1
            out["insertions"] = ins
        return {"open": opened, "infer": out}

    def decision_layout(self):
        """The code bits, then (with a table) the distance to the nearest stored code."""
        layout = (("code_bits", self.n_bits),)
        return layout + (("nearest_distance", 1),) if self.has_table else layout

    def workspace_bytes(self):
        """The runtime's accumulators (8 bytes a bit) and, with a table, the k-NN
        best list and the votes, plus fixed scalars."""
        extra = 16 * self.knn_k + 8 * self.n_classes + 16 if self.has_table else 0
        return 8 * self.n_bits + extra + 64

    # -- accounting ---------------------------------------------------------
    def resources(self):
        """Flash, RAM and operations of one inference.

        ``ram_bytes``: the int16 input (2 d), one Q15 affinity at a time (4),
        the k int64 accumulators (8 k), the packed code (ceil(k / 8)), and with
        a table the k-NN best list (knn_k x (4 + 4)) plus votes (4 n_classes).
        Parameters are read in place from flash.  ``ops_per_inference`` counts
        arithmetic on data: subtractions and multiply-adds of the distances,
        the exp stage (multiply, 5 shifts/masks, table reads, interpolation),
        the projection multiply-adds, threshold compares, and table XOR +
        popcount per byte.

        Examples
        --------
        >>> import numpy as np
        >>> dev = SSBCDevice.from_arrays(make_ssbc_arrays(np.eye(2), 1.0,
        ...                              np.array([[1.0], [-1.0]]), np.zeros(1)))
        >>> dev.resources()["ops_per_inference"]["total"]
        35
        """
        m, d, k = self.n_anchors, self.n_features, self.n_bits
        nb = (k + 7) // 8
        scalars = {"input_int16": 2 * d, "affinity": 4, "accumulators": 8 * k}
        ops = {
            "distance_subtractions": m * d,
            "distance_multiply_adds": m * d,
            "exp_stage": m * 12,
            "projection_multiply_adds": m * k,
            "threshold_comparisons": k,
        }
        names = ["anchors", "input_shift", "exp_mult", "dist_clamp", "exp_lut", "projection",
                 "thresholds"]
        if self.has_table:
            T = self._table.shape[0]
            scalars["knn_best"] = 8 * self.knn_k
            scalars["votes"] = 4 * self.n_classes
            ops["table_xor_popcount"] = 2 * T * nb
            ops["knn_insertions_worst"] = T * self.knn_k
            names += ["table_codes", "table_labels", "n_classes", "knn_k"]
        ops["total"] = sum(ops.values())
        ram = accounting.ram_model(k, scalars)
        return {
            "kind": KIND,
            "n_bits": k,
            "n_anchors": m,
            "n_features": d,
            "flash_bytes": self.container.nbytes,
            "parameter_bytes": accounting.array_bytes(self.container, names),
            **ram,
            "ops_per_inference": ops,
        }


# --------------------------------------------------------------------------
# The kind's consistency rules (docs/container_format.md; the C loader checks
# the same ones)
# --------------------------------------------------------------------------
SSBC_META = {"n_bits": "int", "n_anchors": "int", "sigma": "number", "mode": "str",
             "rotation": "str", "bit_order": "str"}


def _check_rules(container):
    """Rules of kind ``ssbc`` (the kind is checked); see
    :meth:`SSBCDevice.check_container`."""
    kind = "ssbc"
    c, req = container, container.require
    A = req("anchors", np.int16, (None, None))
    m, d = A.shape
    if m < 1 or d < 1:
        fail(kind, f"array 'anchors' must have shape (m, d) with m, d >= 1; got {A.shape}")
    # D = sum_i (x_i - a_i)^2 <= d * 65535^2 (an int16 frame may hold -32768) fits int64
    # for every d < 2**31, which a file under 4 GiB guarantees (2 d bytes of anchors)
    check_range(kind, "anchors", A, -32767, 32767)
    input_shift = check_scalar(c, "input_shift", np.int32, -30, 30)
    sigma = check_scalar(c, "sigma", np.float64)
    if not (math.isfinite(sigma) and sigma > 0):
        fail(kind, f"array 'sigma' must be positive and finite; got {sigma}")
    mult = check_scalar(c, "exp_mult", np.int64, 1, 2**62 - 1)
    clamp = check_scalar(c, "dist_clamp", np.int64, 0)
    if clamp * mult >= 2**63 or clamp * mult < (T_MAX << (EXP_SHIFT + 16)):
        fail(kind, "arrays 'dist_clamp' and 'exp_mult': dist_clamp * exp_mult must lie in "
                    f"[17 * 2**56, 2**63); got {clamp * mult}")
    sigma_q = sigma * 4.0**input_shift
    exact = 2.0**(EXP_SHIFT + 16) * math.log2(math.e) / sigma_q \
        if math.isfinite(sigma_q) and sigma_q > 0 else math.inf
    if not math.isfinite(exact) or abs(Fraction(mult) - Fraction(exact)) > Fraction(1, 2):
        fail(kind, f"array 'exp_mult' must be round(2**56 log2(e) / (sigma * 4**input_shift))"
                    f" = round({exact!r}) with sigma = {sigma!r}, input_shift = "
                    f"{input_shift}; got {mult}")
    want_clamp = -(-(T_MAX << (EXP_SHIFT + 16)) // mult)
    if clamp != want_clamp:
        fail(kind, f"array 'dist_clamp' must be ceil(17 * 2**56 / exp_mult) = {want_clamp}; "
                    f"got {clamp}")
    lut = req("exp_lut", np.uint16, (LUT_SEGMENTS + 1,))
    if not np.array_equal(lut, exp_lut()):
        fail(kind, "array 'exp_lut' must be the Q15 table round(2**15 * 2**(-i/256)), "
                    "i = 0..256")
    P = req("projection", np.int16, (m, None))
    k = P.shape[1]
    if k < 1:
        fail(kind, "array 'projection' must have at least one column (bit)")
    projection_shift = check_scalar(c, "projection_shift", np.int32, -30, 30)
    thr = req("thresholds", np.int64, (k,))
    check_range(kind, "thresholds", thr, -(2**62) + 1, 2**62 - 1,
                rule="must have |value| < 2**62")
    if m * 32768 * 32768 >= 2**62:
        fail(kind, f"array 'anchors': {m} anchors could overflow the int64 accumulator")
    out = {"anchors": A, "projection": P, "thresholds": thr, "exp_lut": lut, "m": m, "d": d,
           "k": k, "input_shift": input_shift, "projection_shift": projection_shift,
           "sigma": sigma, "exp_mult": mult, "dist_clamp": clamp,
           "has_table": "table_codes" in c.arrays}
    lengths, values = {}, {"n_bits": k, "n_anchors": m, "bit_order": "lsb_first"}
    if out["has_table"]:
        nb = (k + 7) // 8
        tab = req("table_codes", np.uint8, (None, nb))
        T = tab.shape[0]
        if T < 1:
            fail(kind, "array 'table_codes' is empty")
        if k % 8 and np.any(tab[:, -1] >> (k % 8)):
            row = int(np.flatnonzero(tab[:, -1] >> (k % 8))[0])
            fail(kind, f"array 'table_codes' has nonzero padding bits beyond bit {k - 1} "
                        f"(row {row})")
        labels = req("table_labels", np.int32, (T,))
        # a class with no table row never wins the vote: n_classes <= T bounds the
        # vote counters the device allocates
        nc = check_scalar(c, "n_classes", np.int32, 1, T)
        check_range(kind, "table_labels", labels, 0, nc - 1, rule=f"must be in [0, {nc})")
        knn_k = check_scalar(c, "knn_k", np.int32, 1, T)
        out.update(table_codes=tab, table_labels=labels, n_classes=nc, knn_k=knn_k)
        lengths["classes"] = nc
    else:
        for name in ("table_labels", "n_classes", "knn_k"):
            if name in c.arrays:
                fail(kind, f"array {name!r} given without 'table_codes'")
    check_meta(c, SSBC_META, lengths=lengths, values=values)
    return out


def load_ssbc(source):
    """Read and validate an ``"ssbc"`` container (path, bytes or Container) into an
    :class:`SSBCDevice`."""
    return SSBCDevice(source if isinstance(source, Container) else read_container(source))


register_kind(SSBCDevice)
