"""Device runtime of the protected naive Bayes classifier (container kind
``"protected_nb"``).

A two-class naive Bayes model over binary features, in integer log-odds
form, whose features travel over a noisy channel protected by a repetition
code: feature j is sent ``2 r_j + 1`` times and majority-decoded on the device
(seed paper 000; notation of ``DESIGN.md``).

Container schema (written by :func:`make_protected_nb_arrays`, read by
:func:`load_protected_nb`):

=============== ====== ===== ===============================================
array           dtype  shape meaning
=============== ====== ===== ===============================================
``repetitions`` uint16 (n,)  r_j; feature j is transmitted 2 r_j + 1 times
``weights``     int32  (n,)  integer flip effect of x_j = 1 versus x_j = 0
``bias``        int32  (1,)  integer log-odds when every feature is 0
``scale_shift`` int32  (1,)  s: float log-odds ~ (bias + sum_j x_j w_j) / 2**s
=============== ====== ===== ===============================================

See ``docs/container_format.md`` for the byte layout.

``sum_j |weights_j| + |bias| < 2**31`` (checked on write and on load), so the
device may accumulate in int32. Classification: ``acc = bias + sum_j x_j
weights_j``, label 1 iff ``acc > 0``. Transmission is feature-major: the
copies of feature 0, then those of feature 1, ...
"""

from types import MappingProxyType
from numbers import Real

import numpy as np

from .. import accounting
from .._limits import check_allocation
from .._validation import check_meta, check_scalar, fail
from ..artifact import Container, read_container, write_container
from ..channel import check_bits, check_channel_eps
from ..device import Device, Inference, register_kind
from ..errors import ContainerError, DeviceError
from ._kernels.naive_bayes import _accumulate, _decode_accumulate, _majority_decode, \
    _nb_outcomes

__all__ = [
    "ProtectedNBDevice",
    "load_protected_nb",
    "make_protected_nb_arrays",
]

KIND = "protected_nb"
MAX_REPETITION = 2**16 - 1
MAX_SCALE_SHIFT = 62
ACC_LIMIT = 2**31  # sum |weights| + |bias| must stay below (int32 accumulator)
#: Metadata keys the tools read, and their types (``firmware_sim._validation.META_TYPES``).
META = {"feature_names": "str_list", "planned_mean_scp": "number_text",
        "planned_scp_lower": "number_text", "planned_scp_upper": "number_text",
        "planned_eps": "numbers_text", "planning_points": "int_text",
        "budget_bits": "int_text", "scp_method": "str"}


def _check_safe_sum(abs_sum, err):
    if abs_sum >= ACC_LIMIT:
        raise err(f"sum(|weights|) + |bias| = {abs_sum} must be < 2**31 so that an int32 "
                  "accumulator cannot overflow")


def _int_array(a, name, ndim):
    arr = np.asarray(a)
    if arr.size == 0 and arr.dtype == np.float64:  # [] -> empty int array
        arr = arr.astype(np.int64)
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.integer)):
        raise TypeError(f"{name} must hold integers (round and cast first); got dtype {arr.dtype}")
    if arr.ndim != ndim:
        raise DeviceError(f"{name} must be {ndim}-dimensional; got shape {arr.shape}")
    return arr


def _int_scalar(v, name):
    arr = np.asarray(v)
    if arr.shape == (1,):
        arr = arr.reshape(())
    if arr.shape != () or arr.dtype == object or not np.issubdtype(arr.dtype, np.integer) \
            or isinstance(v, bool):
        raise TypeError(f"{name} must be an integer (or an integer array of shape (1,)); got {v!r}")
    return int(arr)


def make_protected_nb_arrays(weights, bias, repetitions, scale_shift):
    """Build the arrays of a ``"protected_nb"`` container (the schema lives here).

    Parameters
    ----------
    weights : array-like of int, shape (n,)
        Integer flip effects (x_j = 1 versus x_j = 0), already scaled; must fit
        int32.
    bias : int
        Integer log-odds when every feature is 0; must fit int32.
    repetitions : array-like of int, shape (n,)
        r_j in [0, 65535]; feature j is transmitted 2 r_j + 1 times.
    scale_shift : int
        s in [0, 62]: float log-odds ~ (bias + sum_j x_j weights_j) / 2**s.

    Returns
    -------
    dict
        ``{"repetitions": uint16 (n,), "weights": int32 (n,), "bias": int32 (1,),
        "scale_shift": int32 (1,)}``, ready for
        ``firmware_sim.artifact.write_container(path, "protected_nb", arrays, meta)``.

    Raises
    ------
    TypeError
        Non-integer input.
    DeviceError
        n = 0, mismatched lengths, values out of range, or
        ``sum |weights| + |bias| >= 2**31``.

    Examples
    --------
    >>> arrays = make_protected_nb_arrays([3, -5], -1, [1, 0], 4)
    >>> {k: (v.dtype.name, v.tolist()) for k, v in arrays.items()}
    {'repetitions': ('uint16', [1, 0]), 'weights': ('int32', [3, -5]), 'bias': ('int32', [-1]), 'scale_shift': ('int32', [4])}
    """
    w = _int_array(weights, "weights", 1)
    r = _int_array(repetitions, "repetitions", 1)
    b = _int_scalar(bias, "bias")
    s = _int_scalar(scale_shift, "scale_shift")
    n = w.shape[0]
    if n < 1:
        raise DeviceError("weights must have at least one feature; got shape (0,)")
    if r.shape != (n,):
        raise DeviceError(f"repetitions must have shape ({n},), one per feature; got {r.shape}")
    for name, arr, lo, hi in (("weights", w, -2**31, 2**31 - 1),
                              ("repetitions", r, 0, MAX_REPETITION)):
        bad = (arr < lo) | (arr > hi)
        if bad.any():
            j = int(np.flatnonzero(bad)[0])
            raise DeviceError(f"{name}[{j}] must be in [{lo}, {hi}]; got {arr[j]}")
    if not -2**31 <= b <= 2**31 - 1:
        raise DeviceError(f"bias must fit int32; got {b}")
    if not 0 <= s <= MAX_SCALE_SHIFT:
        raise DeviceError(f"scale_shift must be in [0, {MAX_SCALE_SHIFT}]; got {s}")
    _check_safe_sum(int(np.abs(w.astype(np.int64)).sum()) + abs(b), DeviceError)
    return {
        "repetitions": r.astype(np.uint16),
        "weights": w.astype(np.int32),
        "bias": np.array([b], dtype=np.int32),
        "scale_shift": np.array([s], dtype=np.int32),
    }


def load_protected_nb(source, profile=None):
    """Load a protected naive Bayes device from a container.

    Parameters
    ----------
    source : str, os.PathLike, bytes or Container
        Container file, its bytes, or an already parsed :class:`Container`.
    profile : DeviceProfile, str or None
        When given (a profile or a built-in profile name such as
        ``"cortex-m0"``), refuse an artifact that does not fit its flash, RAM
        or integer widths (:func:`firmware_sim.profiles.check_fits`).

    Returns
    -------
    ProtectedNBDevice

    Raises
    ------
    ContainerError
        Malformed container, wrong kind, or a missing field / wrong dtype /
        wrong shape / out-of-range value, naming the field.
    DoesNotFitError
        The artifact exceeds ``profile`` (the message says by how much).

    Examples
    --------
    >>> from firmware_sim.artifact import write_container
    >>> raw = write_container(None, "protected_nb",
    ...                       make_protected_nb_arrays([4, -2, 3], -2, [1, 0, 2], 3))
    >>> dev = load_protected_nb(raw)
    >>> dev.n_features, dev.total_bits
    (3, 9)
    >>> dev.predict([[1, 0, 0], [0, 1, 1]]).tolist()
    [1, 0]
    """
    container = source if isinstance(source, Container) else read_container(source)
    device = ProtectedNBDevice(container)
    if profile is not None:
        from ..profiles import check_fits, get_profile
        check_fits(get_profile(profile), device.resources(), container)
    return device


class ProtectedNBDevice(Device):
    """The protected naive Bayes classifier as a device runs it.

    Build it with :func:`load_protected_nb` (from a container) or
    :meth:`from_arrays`.

    Attributes
    ----------
    repetitions : ndarray of uint16, shape (n,)
    weights : ndarray of int32, shape (n,)
    bias : int
    scale_shift : int
    n_features : int
    copies : ndarray of int64, shape (n,)
        ``2 * repetitions + 1``.
    total_bits : int
        Channel bits per transmitted point, ``sum(copies)``.
    container : Container
    meta : dict

    Examples
    --------
    >>> dev = ProtectedNBDevice.from_arrays([4, -2, 3], -2, [1, 0, 2], 3)
    >>> bits = dev.transmit([[1, 0, 1]])
    >>> bits.tolist()
    [[1, 1, 1, 0, 1, 1, 1, 1, 1]]
    >>> dev.decision([[1, 0, 1]]).tolist(), dev.predict_bits(bits).tolist()
    ([5], [1])
    """

    # -- the kind's spec (firmware_sim.contract.BaseDevice) -------------------
    kind = KIND
    kind_code = 1
    frame_dtype = np.dtype(np.uint8)
    stage_symbols = 2
    default_site = "wire"
    c_sources = ("ec_nb.c",)
    c_switch = "EC_WITH_NB"
    #: The C runtime built at -O2 with this kind only (benchmarks/README.md,
    #: "Firmware"): cortex-m0plus for ``cortex-m0``, cortex-m4 for ``cortex-m4``;
    #: on AVR (-Os) and RV32 the probe's flash minus the image and the peak stack
    #: (``python benchmarks/bench_firmware.py --targets atmega328p,atmega2560,rv32imac
    #: --no-emlearn``).
    runtime_bytes = MappingProxyType({"cortex-m0": (3376, 392), "cortex-m4": (2720, 360),
                                      "atmega328p": (5022, 271), "atmega2560": (5158, 277),
                                      "rv32imac": (3510, 336)})

    @classmethod
    def erasure_owners(cls, container):
        """Image protection's fallback: a detected upset of a weight reads it as 0
        (the feature is left out of the log-odds); of the bias, the bias as 0."""
        return {name: np.full(container.arrays[name].size, -1, np.int64)
                for name in ("weights", "bias") if name in container.arrays}

    @classmethod
    def check_container(cls, container):
        """Rules of kind ``protected_nb`` (``docs/container_format.md``); returns
        ``repetitions``, ``weights``, ``bias``, ``scale_shift``, ``n``,
        ``total_bits``."""
        super().check_container(container)
        reps = container.require("repetitions", np.uint16, (None,))
        n = reps.shape[0]
        if n < 1:
            fail(KIND, "array 'repetitions' must have at least one feature; got shape (0,)")
        w = container.require("weights", np.int32, (n,))
        bias = check_scalar(container, "bias", np.int32)
        shift = check_scalar(container, "scale_shift", np.int32, 0, MAX_SCALE_SHIFT)
        abs_sum = int(np.abs(w.astype(np.int64)).sum()) + abs(bias)
        if abs_sum >= ACC_LIMIT:
            fail(KIND, f"arrays 'weights' and 'bias': sum(|weights|) + |bias| = {abs_sum} "
                       "must be < 2**31 (int32 accumulator)")
        total_bits = int(reps.astype(np.int64).sum()) * 2 + n
        if total_bits >= 2**32:
            fail(KIND, f"array 'repetitions': sum(2 * repetitions + 1) = {total_bits} must be "
                       "< 2**32 (uint32 bit index)")
        check_meta(container, META, lengths={"classes": 2, "feature_names": (0, n)})
        return {"repetitions": reps, "weights": w, "bias": bias, "scale_shift": shift, "n": n,
                "total_bits": total_bits}

    def __init__(self, container):
        if not isinstance(container, Container):
            raise TypeError("ProtectedNBDevice takes a Container; use load_protected_nb(source) "
                            "or ProtectedNBDevice.from_arrays(...)")
        if container.kind != KIND:
            raise ContainerError(f"container kind is {container.kind!r}; expected {KIND!r}")
        v = self.check_container(container)  # every rule of docs/container_format.md
        reps, w, n = v["repetitions"], v["weights"], v["n"]
        bias, shift = v["bias"], v["scale_shift"]
        self.container = container
        self.meta = container.meta
        self.repetitions = reps
        self.weights = w
        self.bias = bias
        self.scale_shift = shift
        self.n_features = n
        self._reps = reps.astype(np.int64)
        self._w = w.astype(np.int64)
        self.copies = 2 * self._reps + 1
        self.copies.flags.writeable = False
        self.total_bits = int(self.copies.sum())

    @classmethod
    def from_arrays(cls, weights, bias, repetitions, scale_shift=0, meta=None):
        """Device from raw parameters, through a real container round trip.

        Parameters are those of :func:`make_protected_nb_arrays`; ``meta`` is
        stored as container metadata.
        """
        arrays = make_protected_nb_arrays(weights, bias, repetitions, scale_shift)
        return cls(read_container(write_container(None, KIND, arrays, meta)))

    def __repr__(self):
        return (f"ProtectedNBDevice(n_features={self.n_features}, total_bits={self.total_bits}, "
                f"flash_bytes={self.container.nbytes})")

    # -- input gates -------------------------------------------------------
    def _check_X(self, X):
        X = check_bits(X, name="X")
        if X.ndim != 2:
            hint = " (use X.reshape(1, -1) for one sample)" if X.ndim == 1 else ""
            raise DeviceError(f"X must be 2-dimensional (n_samples, n_features); "
                              f"got shape {X.shape}{hint}")
        if X.shape[1] != self.n_features:
            raise DeviceError(f"X must have {self.n_features} columns (features); "
                              f"got shape {X.shape}")
        return X

    def _check_received(self, bits):
        bits = check_bits(bits, name="bits")
        if bits.ndim != 2 or bits.shape[1] != self.total_bits:
            raise DeviceError(f"bits must have shape (n_samples, {self.total_bits}) "
                              f"(total_bits, feature-major copies); got shape {bits.shape}")
        return bits

    # -- device operations -------------------------------------------------
    def transmit(self, X):
        """Channel bits of each point: feature j repeated ``2 r_j + 1`` times.

        Parameters
        ----------
        X : array-like of 0/1, shape (t, n)

        Returns
        -------
        ndarray of uint8, shape (t, total_bits)
            Feature-major: the copies of feature 0, then of feature 1, ...

        Raises
        ------
        SizeLimitError
            ``t * total_bits`` bytes above the size limit (the repetition
            code multiplies the input: up to 131071 copies of a feature).
        """
        X = self._check_X(X)
        check_allocation(f"X with {X.shape[0]:,} points", X.shape[0] * self.total_bits,
                         what=f"the transmitted bits ({self.total_bits:,} per point)",
                         hint="transmit fewer points at a time")
        return np.repeat(X, self.copies, axis=1)

    def majority_decode(self, bits):
        """Decode received bits: feature j is 1 iff at least ``r_j + 1`` of its
        ``2 r_j + 1`` copies are 1.

        Parameters
        ----------
        bits : array-like of 0/1, shape (t, total_bits)

        Returns
        -------
        ndarray of uint8, shape (t, n)
        """
        bits = self._check_received(bits)
        out = np.empty((bits.shape[0], self.n_features), dtype=np.uint8)
        _majority_decode(bits, self._reps, out)
        return out

    def decision(self, X):
        """Integer log-odds ``bias + sum_j X[:, j] * weights[j]`` (int64, shape (t,))."""
        X = self._check_X(X)
        out = np.empty(X.shape[0], dtype=np.int64)
        _accumulate(X, self._w, self.bias, out)
        return out

    def predict(self, X):
        """Labels (int64 0/1) of noiseless features: 1 iff the decision is > 0."""
        return (self.decision(X) > 0).astype(np.int64)

    def decision_bits(self, bits):
        """Integer log-odds of received bits (majority-decoded in the same loop)."""
        bits = self._check_received(bits)
        out = np.empty(bits.shape[0], dtype=np.int64)
        _decode_accumulate(bits, self._reps, self._w, self.bias, out)
        return out

    def predict_bits(self, bits):
        """Labels of received bits: ``predict(majority_decode(bits))``, in one pass."""
        return (self.decision_bits(bits) > 0).astype(np.int64)

    # -- the device contract (firmware_sim.contract) ---------------------------
    @property
    def frame_width(self):
        """Bits per frame: ``total_bits``."""
        return self.total_bits

    def encode(self, X):
        """Host side: the repeated feature bits of each point (:meth:`transmit`)."""
        return self.transmit(X)

    def infer(self, frames):
        """Device side: majority-decode, accumulate, sign.

        Returns an :class:`~firmware_sim.device.Inference` with the labels
        (int64 0/1) and ``decision["accumulator"]`` (the int64 log-odds).
        """
        frames = self.check_frames(frames)
        acc = np.empty(frames.shape[0], dtype=np.int64)
        _decode_accumulate(frames, self._reps, self._w, self.bias, acc)
        return Inference((acc > 0).astype(np.int64), {"accumulator": acc})

    def labels(self, frames):
        return self.infer(frames).labels

    def stage(self, frames):
        """Intermediate results: the majority-decoded feature bits (t, n) uint8."""
        frames = self.check_frames(frames)
        out = np.empty((frames.shape[0], self.n_features), dtype=np.uint8)
        _majority_decode(frames, self._reps, out)
        return out

    def finish(self, intermediate):
        """Labels of decoded feature bits (the accumulate-and-sign step)."""
        return self.predict(intermediate)

    def cost_counts(self, frames=None):
        """The C runtime's work (``ec_nb.c``) for the cost model: the open reads
        the image (``profiles.image_counts``) and sums the weights and the
        repetitions once; an inference checks and counts every received bit
        (``one_bits``: those equal to 1), decodes every feature and adds the
        weight of those decoded as 1 (``ones``)."""
        from ..profiles import image_counts

        n, nbits = self.n_features, self.total_bits
        opened = {**image_counts(self.container), "features": n}
        infer = {"call": 1, "bits": nbits, "features": n, "one_bits": nbits, "ones": n}
        if frames is not None:
            f = self.check_frames(frames)
            t = f.shape[0]
            infer = {"call": np.ones(t), "bits": np.full(t, float(nbits)),
                     "features": np.full(t, float(n)),
                     "one_bits": f.sum(axis=1, dtype=np.int64).astype(float),
                     "ones": self.stage(f).sum(axis=1, dtype=np.int64).astype(float)}
        return {"open": opened, "infer": infer}

    def decision_layout(self):
        """The accumulator, one integer per frame."""
        return (("accumulator", 1),)

    def channel_eps(self, eps, site, width):
        """At the wire, one probability per feature (shape (n,)) is also
        accepted and applied to each of its copies; else as the base class."""
        n, nbits = self.n_features, self.total_bits
        if site != "wire" or isinstance(eps, (bool, Real)):
            return super().channel_eps(eps, site, width)
        shape = np.shape(eps)
        if shape == (n,) and n != nbits:
            per_feature = check_channel_eps(eps, n)
            if isinstance(per_feature, float):
                return per_feature
            return np.repeat(per_feature, self.copies)
        if shape not in ((), (1,), (nbits,)):
            raise DeviceError(f"eps must be a scalar, per feature (shape ({n},)) or per "
                              f"channel bit (shape ({nbits},)); got shape {shape}")
        return check_channel_eps(eps, nbits)

    def stream_labeler(self, site):
        """At the wire, the decode-and-accumulate kernel on the rows as they are
        (unchecked: the engine's rows come from :meth:`encode`)."""
        if site != "wire":
            return super().stream_labeler(site)
        reps, w, bias = self._reps, self._w, self.bias

        def predict(bits):
            out = np.empty(bits.shape[0], np.int64)        # per call: threads share this
            _decode_accumulate(bits, reps, w, bias, out)
            return (out > 0).astype(np.int64)
        return predict

    def bit_fault_runner(self, site, fault, stream, clean, y, n_trials):
        """Additive faults at the wire, when every copy of a feature carries the
        feature's bit (what :meth:`transmit` sends): a feature flips when more
        than r_j of its copies are in error (``_nb_outcomes`` on each batch's
        error masks); equal, trial for trial, to decoding the noisy rows."""
        if site != "wire" or not fault.additive or not self._copies_agree(stream):
            return None
        t, width = stream.shape
        dec8 = self._first_copies(stream)         # = the majority: every copy agrees
        clean_acc = np.empty(t, np.int64)
        _accumulate(dec8, self._w, self.bias, clean_acc)
        swing = (1 - 2 * dec8.astype(np.int64)) * self._w.astype(np.int64)[None, :]
        pair_word, pair_mask, feat_start = self._pairs(width)
        reps = self._reps.astype(np.int64)
        y_arr = np.empty(0, np.int64) if y is None else y

        def run(start, nrows, rng, same, correct):
            masks = fault.error_masks(nrows, width, rng)
            _nb_outcomes(masks, start, n_trials, pair_word, pair_mask, feat_start, reps, swing,
                         clean_acc, clean, y_arr, same, correct)
        return run

    def _first_copies(self, tx):
        """Copy 0 of every feature (t, n) uint8: the decoded features when the
        copies agree."""
        start = np.cumsum(self.copies) - self.copies
        return np.ascontiguousarray(tx[:, start], dtype=np.uint8)

    def _copies_agree(self, tx):
        """Every copy of a feature carries the feature's bit (what ``transmit`` sends)."""
        return bool(np.array_equal(np.repeat(self._first_copies(tx), self.copies, axis=1), tx))

    def _pairs(self, width):
        """Per feature, the (wire word, bit mask) pairs holding its copies."""
        owner = np.repeat(np.arange(self.n_features, dtype=np.int64), self.copies)
        col = np.arange(width, dtype=np.int64)
        word = col >> 6
        key = owner * (1 + (width >> 6)) + word
        uniq, first = np.unique(key, return_index=True)
        pair_word = word[first]
        pair_mask = np.zeros(uniq.size, np.uint64)
        np.bitwise_or.at(pair_mask, np.searchsorted(uniq, key),
                         np.left_shift(np.uint64(1), (col & 63).astype(np.uint64)))
        feat_start = np.searchsorted(owner[first], np.arange(self.n_features + 1))
        return pair_word, pair_mask, feat_start.astype(np.int64)

    # -- accounting --------------------------------------------------------
    def resources(self, X=None, y=None):
        """Flash, RAM and operations of one inference on the device.

        Parameters
        ----------
        X : array-like of 0/1, shape (t, n), optional
            If given, ``accumulate_additions_mean`` reports the mean number of
            features equal to 1 (accumulate additions on noiseless input).
        y : ignored
            Present so the method is scorer-shaped.

        Returns
        -------
        dict
            ``flash_bytes``: size of the whole container (header, table,
            parameters, metadata), what is stored in flash.
            ``parameter_bytes``: bytes of the arrays the inference loop reads
            (repetitions 2n + weights 4n + bias 4; ``scale_shift`` and metadata
            are not read).
            ``ram_bytes``: one inference with the received bits held packed:
            ``ceil(total_bits / 8)`` bytes of receive buffer plus an int32
            accumulator, a uint32 vote counter and a uint32 bit index
            (``ram_breakdown`` itemises; ``ram_bytes_unpacked`` holds one byte
            per bit instead). Parameters are read in place from flash.
            ``ops_per_inference``: what the decode-and-classify loop does:
            ``vote_additions`` (one per received bit), ``vote_comparisons``
            (count > r_j, one per feature), ``accumulate_additions`` (one per
            feature decoded as 1; worst case n), ``sign_comparisons`` (acc > 0)
            and their ``total``; ``packed_bit_extractions`` (a shift-and-mask
            per bit, only when bits are stored packed) is not in ``total``.
            Loop control is not counted.

        Examples
        --------
        >>> dev = ProtectedNBDevice.from_arrays([4, -2, 3], -2, [1, 0, 2], 3)
        >>> r = dev.resources()
        >>> r["parameter_bytes"], r["ram_bytes"], r["ops_per_inference"]["total"]
        (22, 14, 16)
        """
        n, nbits = self.n_features, self.total_bits
        ram = accounting.ram_model(nbits, scalars={"accumulator": 4, "vote_counter": 4,
                                                   "bit_index": 4})
        ops = {
            "vote_additions": nbits,
            "vote_comparisons": n,
            "accumulate_additions": n,
            "sign_comparisons": 1,
        }
        ops["total"] = sum(ops.values())
        ops["packed_bit_extractions"] = nbits
        report = {
            "kind": KIND,
            "n_features": n,
            "total_bits": nbits,
            "flash_bytes": self.container.nbytes,
            "parameter_bytes": accounting.array_bytes(
                self.container, ("repetitions", "weights", "bias")),
            **ram,
            "ops_per_inference": ops,
        }
        if X is not None:
            X = self._check_X(X)
            report["accumulate_additions_mean"] = float(X.sum(axis=1).mean()) if len(X) else 0.0
        return report


register_kind(ProtectedNBDevice)
