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

from numbers import Integral, Real

import numpy as np

from . import accounting
from ._kernels import _accumulate, _decode_accumulate, _majority_decode
from ._validation import check_protected_nb
from ._limits import check_allocation
from ._parallel import (MAX_ROWS, SUB_ROWS, SeededBatches, Ticker, count_labels, repeat_rows,
                        run_seeded_batches)
from .errors import SizeLimitError
from .device import Device, Inference, SimulationResult, register_kind
from .artifact import Container, ContainerError, read_container, write_container
from .channel import _flip_inplace, check_bits, check_channel_eps

__all__ = [
    "ProtectedNBDevice",
    "SimulationResult",
    "load_protected_nb",
    "make_protected_nb_arrays",
    "simulate",
]

KIND = "protected_nb"
MAX_REPETITION = 2**16 - 1
MAX_SCALE_SHIFT = 62
ACC_LIMIT = 2**31  # sum |weights| + |bias| must stay below (int32 accumulator)

#: Channel bits per simulated batch (bounds memory; fixed so results are
#: reproducible across machines).
_BATCH_BITS = 1 << 22


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
        raise ValueError(f"{name} must be {ndim}-dimensional; got shape {arr.shape}")
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
    ValueError
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
        raise ValueError("weights must have at least one feature; got shape (0,)")
    if r.shape != (n,):
        raise ValueError(f"repetitions must have shape ({n},), one per feature; got {r.shape}")
    for name, arr, lo, hi in (("weights", w, -2**31, 2**31 - 1),
                              ("repetitions", r, 0, MAX_REPETITION)):
        bad = (arr < lo) | (arr > hi)
        if bad.any():
            j = int(np.flatnonzero(bad)[0])
            raise ValueError(f"{name}[{j}] must be in [{lo}, {hi}]; got {arr[j]}")
    if not -2**31 <= b <= 2**31 - 1:
        raise ValueError(f"bias must fit int32; got {b}")
    if not 0 <= s <= MAX_SCALE_SHIFT:
        raise ValueError(f"scale_shift must be in [0, {MAX_SCALE_SHIFT}]; got {s}")
    _check_safe_sum(int(np.abs(w.astype(np.int64)).sum()) + abs(b), ValueError)
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
        from .profiles import check_fits, get_profile
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

    def __init__(self, container):
        if not isinstance(container, Container):
            raise TypeError("ProtectedNBDevice takes a Container; use load_protected_nb(source) "
                            "or ProtectedNBDevice.from_arrays(...)")
        if container.kind != KIND:
            raise ContainerError(f"container kind is {container.kind!r}; expected {KIND!r}")
        v = check_protected_nb(container)  # every rule of docs/container_format.md
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
            raise ValueError(f"X must be 2-dimensional (n_samples, n_features); "
                             f"got shape {X.shape}{hint}")
        if X.shape[1] != self.n_features:
            raise ValueError(f"X must have {self.n_features} columns (features); "
                             f"got shape {X.shape}")
        return X

    def _check_received(self, bits):
        bits = check_bits(bits, name="bits")
        if bits.ndim != 2 or bits.shape[1] != self.total_bits:
            raise ValueError(f"bits must have shape (n_samples, {self.total_bits}) "
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

    # -- the device contract (firmware_sim.device) ---------------------------
    frame_dtype = np.dtype(np.uint8)
    stage_symbols = 2
    default_site = "wire"

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


def _expand_eps(device, eps):
    """eps (scalar, per feature (n,) or per channel bit (total_bits,)) -> float or (total_bits,)."""
    n, nbits = device.n_features, device.total_bits
    if not isinstance(eps, (bool, Real)):
        shape = np.shape(eps)
        if shape == (n,) and n != nbits:
            per_feature = check_channel_eps(eps, n)
            if isinstance(per_feature, float):
                return per_feature
            return np.repeat(per_feature, device.copies)
        if shape not in ((), (1,), (nbits,)):
            raise ValueError(f"eps must be a scalar, per feature (shape ({n},)) or per channel "
                             f"bit (shape ({nbits},)); got shape {shape}")
    return check_channel_eps(eps, nbits)


def simulate(device, X, eps, n_trials, random_state=None, y=None, n_jobs=None, progress=None):
    """Run every point through the noisy channel ``n_trials`` times.

    Each trial transmits the point (``device.transmit``), flips the channel
    bits with :func:`firmware_sim.channel.bsc` noise, majority-decodes and
    classifies on the device, and compares with the clean label.

    Parameters
    ----------
    device : ProtectedNBDevice
    X : array-like of 0/1, shape (t, n)
        Points (noiseless features).
    eps : float or array-like
        Flip probability in [0, 1] of every channel bit: a scalar, one per
        feature (shape (n,), applied to each of its copies) or one per channel
        bit (shape (total_bits,)).
    n_trials : int
        Independent transmissions per point (>= 1).
    random_state : None, int, SeedSequence or numpy Generator, optional
    y : array-like of 0/1, shape (t,), optional
        True labels; if given, ``correct`` counts trials labelled ``y``.
    n_jobs : int, optional
        Threads (None: numba's thread count; -1: every CPU this process may
        use; k >= 1: k). The result does not depend on it.
    progress : callable, optional
        ``progress(done, total)`` between batches (about ten times a second
        at most, and at the end), in the calling thread: ``done`` of ``total
        = t * n_trials`` (point, trial) inferences. An exception it raises
        (``KeyboardInterrupt`` included) stops the run, threads too.

    Returns
    -------
    SimulationResult
        ``same`` (per-point count of trials with the clean label),
        ``clean_labels``, ``correct``, and rates as properties.

    Raises
    ------
    SizeLimitError
        More (point, trial) rows than an int64 counts; any other
        ``n_trials`` runs in batches of bounded memory.

    Notes
    -----
    Trials are processed in batches of about 4 Mi channel bits; each batch
    is received bits, BSC noise drawn by geometric skipping, then one numba
    pass that decodes and accumulates (in pieces of ``SUB_ROWS`` rows, so
    narrow frames keep small temporaries). Memory does not grow with
    ``n_trials``: the batches are described, not listed, and the run returns
    to Python between them (progress; Ctrl-C stops it within a batch).
    Batch b draws its noise from
    ``default_rng(seed.spawn(n_batches)[b])`` (a seed per fixed batch, never
    per thread) and threads take contiguous ranges of batches with their own
    counters, so the counts are the same for any ``n_jobs``. For a single feature with r
    repetitions the label changes exactly when the majority fails, with
    probability ``sum_{i=r+1}^{2r+1} C(2r+1, i) eps^i (1-eps)^(2r+1-i)``.

    Examples
    --------
    >>> dev = ProtectedNBDevice.from_arrays([2], -1, [1])   # label = x
    >>> res = simulate(dev, [[0], [1]], 0.0, 100, random_state=0)
    >>> res.same.tolist(), res.clean_labels.tolist()
    ([100, 100], [0, 1])
    >>> simulate(dev, [[1]], 0.1, 20000, random_state=0).same_rate.round(2).tolist()
    [0.97]
    """
    if not isinstance(device, ProtectedNBDevice):
        raise TypeError(f"device must be a ProtectedNBDevice; got {type(device).__name__}")
    X = device._check_X(X)
    if isinstance(n_trials, bool) or not isinstance(n_trials, (Integral, np.integer)):
        raise TypeError(f"n_trials must be an integer; got {n_trials!r}")
    n_trials = int(n_trials)
    if n_trials < 1:
        raise ValueError(f"n_trials must be >= 1; got {n_trials}")
    eps_bits = _expand_eps(device, eps)
    t = X.shape[0]
    if t * n_trials > MAX_ROWS:
        raise SizeLimitError(f"n_trials={n_trials}: {t} points x {n_trials} trials = "
                             f"{t * n_trials:.3e} (point, trial) rows, above the "
                             f"{MAX_ROWS:.3e} that an int64 row index counts; use fewer trials")
    if y is not None:
        y = check_bits(y, name="y", ndim=1).astype(np.int64)
        if y.shape[0] != t:
            raise ValueError(f"y must have shape ({t},), one label per row of X; got {y.shape}")
    clean = device.predict(X)
    tx = device.transmit(X)
    nbits = device.total_bits
    rows_total = t * n_trials
    batches = SeededBatches(rows_total, max(1, _BATCH_BITS // nbits), random_state)
    reps, w, bias = device._reps, device._w, device.bias

    def run(start, nrows, rng, same, correct):
        bits = repeat_rows(tx, start, nrows, n_trials)
        _flip_inplace(bits.reshape(-1), nbits, eps_bits, rng)
        for a in range(0, nrows, SUB_ROWS):        # bounded temporaries for narrow frames
            part = bits[a:a + SUB_ROWS]
            acc = np.empty(part.shape[0], dtype=np.int64)
            _decode_accumulate(part, reps, w, bias, acc)
            count_labels((acc > 0).astype(np.int64), start + a, n_trials, clean, y, same,
                         correct)

    ticker = Ticker(progress, rows_total)
    same, correct = run_seeded_batches(run, batches, t, n_jobs, ticker)
    ticker(rows_total)
    if batches.root is random_state:   # the caller's SeedSequence moves on, as spawn moved it
        batches.advance_root()
    if y is None:
        correct = None
    if isinstance(eps_bits, float):
        eps_bits = np.full(nbits, eps_bits)
    eps_bits.flags.writeable = False
    return SimulationResult(same, clean, n_trials, eps_bits, correct)


register_kind("protected_nb", 1, ProtectedNBDevice)
