"""Seeded fault-injection campaigns on any device runtime.

:func:`run_campaign` sweeps one parameter of a fault model
(:mod:`firmware_sim.faults`) over a grid, runs ``n_trials`` independent
trials per point of ``X`` at every grid value (each grid value with its own
child of one ``SeedSequence``), and reports the same-classification rate
(the label equals the device's clean label) and, given ``y``, the accuracy,
each with a Wilson confidence interval. :class:`CampaignResult` writes and
reads the JSON report.

Device protocol (what a runtime needs to be campaigned)::

    device.transmit(X)      -> uint8 array (t, L): the bits on the wire per point
    device.predict_bits(B)  -> int array (t,): labels of received bits B (t, L)
    device.container        -> Container the device was loaded from
                               (only for image faults, with ``loader``)

The clean label of a point is ``predict_bits(transmit(X))``: the same
pipeline on a noiseless wire (for the built-in devices, ``predict(X)``).
``ProtectedNBDevice`` has all three. :class:`ECOCOutputs` wraps an ECOC
device (the wire is its learners' outputs, ``predict_bits`` decodes them) and
:class:`SSBCCodes` an SSBC device (the wire is the computed code, decoded by
the k-NN vote against the stored table; image faults hit the table). Bit
faults act on ``transmit``'s output; image faults act on ``device.container``
and the campaign re-loads the device from the faulty image with
``loader(container)`` (default ``type(device)(container)``; both adapters
accept a container).

Symbols on the wire. A device with ``wire_symbols = N > 2`` (an N-ary ECOC
ensemble) transmits symbols ``0 .. N-1`` instead of bits. A bit fault then
acts on an all-zero *event* frame of the same shape, and every position it
sets is an event: that symbol is replaced by one of the other ``N - 1``
symbols chosen uniformly (what ``ECOCDevice.corrupt`` does). Only additive
faults (BSC, burst, their interleavings and compositions) have this meaning;
a stuck line has no symbol meaning and is refused.

Imports numpy only (plotting and analytic predictions live in
``export.campaign``).
"""

import json
import math
import time
from dataclasses import asdict, dataclass, field
from numbers import Integral
from statistics import NormalDist

import numpy as np

from ._kernels import _accumulate, _decode_accumulate, _majority_decode
from ._kernels.ecoc import _pack
from ._kernels.campaign import _ecoc_binary_outcomes, _ecoc_symbol_outcomes, _nb_outcomes
from ._kernels.faults import _replace_symbols
from .artifact import Container, ContainerError
from .channel import _BLOCK_BITS, check_bits
from .faults import Compose, Fault, _draw_seed
from .ecoc import ECOCDevice
from .naive_bayes import ProtectedNBDevice
from .ssbc import SSBCDevice

__all__ = ["run_campaign", "CampaignResult", "CampaignPoint", "wilson_interval",
           "REPORT_VERSION", "ECOCOutputs", "SSBCCodes"]

#: Version of the JSON report layout.
REPORT_VERSION = 1

#: Wire bits per batch of the bit-fault path (bounds memory; fixed, so a seed
#: gives the same result on every machine). At most the channel's block size,
#: so a batch's BSC errors are one draw whichever path consumes them.
BATCH_BITS = min(1 << 22, _BLOCK_BITS)


def wilson_interval(successes, trials, confidence=0.99):
    """Wilson score interval of a binomial proportion, clipped to [0, 1].

    Examples
    --------
    >>> lo, hi = wilson_interval(50, 100, 0.95)
    >>> round(lo, 4), round(hi, 4)
    (0.4038, 0.5962)
    """
    if trials <= 0:
        return (0.0, 1.0)
    p = float(successes) / trials
    z = NormalDist().inv_cdf(0.5 + 0.5 * float(confidence))
    z2n = z * z / trials
    centre = (p + z2n / 2) / (1 + z2n)
    half = z / (1 + z2n) * math.sqrt(max(p * (1 - p), 0.0) / trials + z2n / (4 * trials))
    return (max(0.0, centre - half), min(1.0, centre + half))


@dataclass
class CampaignPoint:
    """Result at one grid value.

    Attributes
    ----------
    value : float or None
        The swept parameter's value.
    fault : dict
        The fault model at this value (``Fault.to_dict``).
    same_rate : float
        Fraction of (point, trial) pairs labelled as the clean device labels.
    same_ci : [float, float]
    accuracy, accuracy_ci : float, [float, float] or None
        Against ``y`` when given.
    refused : int
        Trials whose faulty image the loader refused, or whose received frame
        no longer matched the faulty device (image faults only); they count
        as neither same nor correct.
    ci_trials : int
        Sample size behind the intervals: points x trials for bit faults
        (independent across points and trials); trials for image faults (one
        faulty image serves every point, so the trial is the unit: the Wilson
        interval of the mean per-trial rate, conservative because a [0, 1]
        variable with mean m has variance at most m (1 - m)).
    elapsed_s : float
    trials_per_s : float
        (point, trial) inferences per second, faults included.
    same_per_point : list of int
        Per point, trials with the clean label.
    """

    value: object
    fault: dict
    same_rate: float
    same_ci: list
    accuracy: object
    accuracy_ci: object
    refused: int
    ci_trials: int
    elapsed_s: float
    trials_per_s: float
    same_per_point: list = field(repr=False, default_factory=list)
    analytic: object = None


@dataclass
class CampaignResult:
    """A campaign's report (see :func:`run_campaign`); JSON via :meth:`to_json`.

    Attributes
    ----------
    param : str or None
    grid : list
    n_trials, n_points : int
    seed : int
    confidence : float
    fault : dict
        The base fault model.
    device : dict
        ``kind``, ``repr`` and, when available, ``resources``.
    points : list of CampaignPoint
    notes : dict
        Free-form (the analytic layer records what it could or could not
        predict here).
    """

    param: object
    grid: list
    n_trials: int
    n_points: int
    seed: int
    confidence: float
    fault: dict
    device: dict
    points: list
    notes: dict = field(default_factory=dict)
    version: int = REPORT_VERSION

    def to_dict(self):
        d = asdict(self)
        return json.loads(json.dumps(d, default=_json_default))

    def to_json(self, path=None, *, indent=1):
        """The report as JSON text; written to ``path`` too when given."""
        text = json.dumps(self.to_dict(), indent=indent, allow_nan=False,
                          default=_json_default)
        if path is not None:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text + "\n")
        return text

    @classmethod
    def from_dict(cls, d):
        d = dict(d)
        if d.get("version") != REPORT_VERSION:
            raise ValueError(f"campaign report version {d.get('version')!r}; this reader "
                             f"reads version {REPORT_VERSION}")
        d["points"] = [CampaignPoint(**p) for p in d["points"]]
        return cls(**d)

    @classmethod
    def from_json(cls, path_or_text):
        """Read a report written by :meth:`to_json` (a path or the JSON text)."""
        text = str(path_or_text)
        if not text.lstrip().startswith("{"):
            with open(path_or_text, encoding="utf-8") as f:
                text = f.read()
        return cls.from_dict(json.loads(text))

    def table(self):
        """Rows ``(value, same_rate, lo, hi, accuracy, refused)`` for printing."""
        return [(p.value, p.same_rate, p.same_ci[0], p.same_ci[1], p.accuracy, p.refused)
                for p in self.points]


def _json_default(o):
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, tuple):
        return list(o)
    raise TypeError(f"not JSON-serialisable: {type(o).__name__}")


class ECOCOutputs:
    """An ECOC device in campaigns: the faults act on its learners' outputs.

    ``transmit(X)`` is the learner outputs (one bit per column for a binary
    or ternary code, whose learners answer 0/1; one symbol per column for an
    N-ary code, see the module docstring), ``predict_bits`` is the device's
    Hamming-nearest decoding (ties to the lowest class index) and
    ``predict`` its clean label. So a BSC of flip probability eps on the wire
    is exactly ``ECOCDevice.corrupt(outputs, eps)``: noisy computation of the
    learners, not of the inputs.

    Parameters
    ----------
    device : ECOCDevice or Container
        A container is loaded (so ``type(adapter)`` is a campaign loader for
        parameter upsets).

    Notes
    -----
    Inputs ``X``: int16 arrays are taken as fixed-point features (what
    ``ECOCDevice.predict`` takes); anything else is quantized with the
    container's quantizer (``ECOCDevice.quantize``).
    """

    def __init__(self, device):
        if isinstance(device, Container):
            device = ECOCDevice(device)
        if not isinstance(device, ECOCDevice):
            raise TypeError(f"ECOCOutputs wraps an ECOCDevice or an ecoc Container; got "
                            f"{type(device).__name__}")
        self.device = device
        self.container = device.container
        self.wire_symbols = int(device.n_symbols)

    def __repr__(self):
        return f"ECOCOutputs({self.device!r})"

    def _q(self, X):
        X = np.asarray(X)
        return X if X.dtype == np.int16 else self.device.quantize(X)

    def transmit(self, X):
        return self.device.learner_outputs(self._q(X)).astype(np.uint8)

    def predict(self, X):
        return self.device.predict(self._q(X))

    def predict_bits(self, bits):
        return self.device.decode(bits)

    def resources(self):
        return self.device.resources()


class SSBCCodes:
    """An SSBC device with a labelled code table in campaigns.

    ``transmit(X)`` is the fixed-point code bits the device computes,
    ``predict_bits`` the k-NN vote of given code bits against the stored
    table, ``predict`` the clean k-NN label. Bit faults hit the computed code
    (``predict_noisy(eps_bits=...)``); ``ParameterUpset(arrays=["table_codes"])``
    hits the stored table (``predict_noisy(eps_table=...)`` draws one noisy
    table per call; the campaign draws one per trial and runs every point
    through it).

    Parameters
    ----------
    device : SSBCDevice or Container
        Must store a code table.
    """

    def __init__(self, device):
        if isinstance(device, Container):
            device = SSBCDevice(device)
        if not isinstance(device, SSBCDevice):
            raise TypeError(f"SSBCCodes wraps an SSBCDevice or an ssbc Container; got "
                            f"{type(device).__name__}")
        device._require_table()
        self.device = device
        self.container = device.container

    def __repr__(self):
        return f"SSBCCodes({self.device!r})"

    def transmit(self, X):
        return self.device.bits(X)

    def predict(self, X):
        return self.device.predict(X)

    def predict_bits(self, bits):
        return self.device.knn_bits(bits)[0]

    def resources(self):
        return self.device.resources()


def _fast_predictor(device):
    """Unchecked ``predict_bits`` for runtimes we know (inputs come from ``transmit``)."""
    if type(device) is ProtectedNBDevice:
        reps, w, bias = device._reps, device._w, device.bias

        def predict(bits, _buf=[np.empty(0, np.int64)]):
            if _buf[0].shape[0] < bits.shape[0]:
                _buf[0] = np.empty(bits.shape[0], np.int64)
            out = _buf[0][:bits.shape[0]]
            _decode_accumulate(bits, reps, w, bias, out)
            return (out > 0).astype(np.int64)
        return predict
    return device.predict_bits


def _check_protocol(device, image):
    needed = ["transmit", "predict_bits"] + (["container"] if image else [])
    missing = [m for m in needed if not hasattr(device, m)]
    if missing:
        raise TypeError(f"device must provide {needed} (see firmware_sim.campaign); "
                        f"{type(device).__name__} lacks {missing}")


def _device_info(device):
    info = {"type": type(device).__name__, "repr": repr(device)}
    container = getattr(device, "container", None)
    if container is not None:
        info["kind"] = container.kind
    try:
        info["resources"] = json.loads(json.dumps(device.resources(), default=_json_default))
    except Exception:  # resources are informative only
        pass
    return info


def _check_labels(y):
    a = np.asarray(y)
    if a.dtype == np.bool_:
        return a.astype(np.int64)
    if not np.issubdtype(a.dtype, np.number) or np.iscomplexobj(a):
        raise TypeError(f"y must hold class labels (integers); got dtype {a.dtype}")
    if a.size and (not np.all(a == np.rint(a)) or a.min() < 0):
        raise ValueError("y must hold non-negative integer class labels (the device's label "
                         "indices: 0/1 for naive Bayes, 0 .. c-1 for ECOC and SSBC)")
    return a


def _labels(a, t, name):
    a = np.asarray(a).astype(np.int64).reshape(-1)
    if a.shape[0] != t:
        raise ValueError(f"{name} must have shape ({t},), one label per point; got {a.shape}")
    return a


def run_campaign(device, X, fault, param=None, grid=None, n_trials=1000, seed=0, y=None,
                 loader=None, confidence=0.99, progress=None):
    """Sweep a fault parameter; at each value run every point ``n_trials`` times.

    Parameters
    ----------
    device : object
        A device following the protocol of this module's docstring.
    X : array-like, shape (t, n)
        Clean inputs (what ``device.transmit`` takes).
    fault : firmware_sim.faults.Fault
        The fault model; bit faults, image faults or a :class:`Compose` of both.
    param : str, optional
        Parameter of ``fault`` to sweep (``Fault.with_params`` names, e.g.
        ``"eps"``, ``"flip_rate"``, ``"rate"``, ``"count"``, ``"1.p"``).
        None: a single point with ``fault`` as given.
    grid : sequence, optional
        Values of ``param`` (required with ``param``).
    n_trials : int
        Trials per point of X and grid value (>= 1).
    seed : int
        Root of a ``numpy.random.SeedSequence``; grid value k uses child k of
        ``SeedSequence(seed).spawn(len(grid))``, so each value's result
        depends only on (seed, k) and re-running gives the same report.
    y : array-like of int, shape (t,), optional
        True labels as the device's label indices (0/1 for naive Bayes,
        class indices for ECOC and SSBC), for the accuracy.
    loader : callable, optional
        ``loader(container) -> device`` for image faults (default
        ``type(device)``).
    confidence : float
        Confidence level of the Wilson intervals.
    progress : callable, optional
        Called as ``progress(k, len(grid), point)`` after each grid value.

    Returns
    -------
    CampaignResult

    Raises
    ------
    TypeError
        Device without the protocol's methods, fault not a Fault.
    ValueError
        Bad ``n_trials``, ``grid`` without ``param`` (or the reverse),
        unknown parameter, ``y`` of the wrong length.

    Examples
    --------
    >>> from firmware_sim.naive_bayes import ProtectedNBDevice
    >>> from firmware_sim.faults import BSC
    >>> dev = ProtectedNBDevice.from_arrays([2], -1, [1])      # label = x, 3 copies
    >>> res = run_campaign(dev, [[0], [1]], BSC(0.0), "eps", [0.0, 0.1], 5000, seed=1)
    >>> res.points[0].same_rate, abs(res.points[1].same_rate - 0.972) < 0.01  # 1 - 3e^2 + 2e^3
    (1.0, True)
    """
    if not isinstance(fault, Fault):
        raise TypeError(f"fault must be a firmware_sim.faults.Fault; got {type(fault).__name__}")
    image = fault.target in ("image", "mixed")
    _check_protocol(device, image)
    if isinstance(n_trials, bool) or not isinstance(n_trials, (Integral, np.integer)):
        raise TypeError(f"n_trials must be an integer; got {n_trials!r}")
    n_trials = int(n_trials)
    if n_trials < 1:
        raise ValueError(f"n_trials must be >= 1; got {n_trials}")
    if (param is None) != (grid is None):
        raise ValueError("give param and grid together (or neither for a single point)")
    grid = [None] if param is None else list(grid)
    if not grid:
        raise ValueError("grid must have at least one value")
    faults = [fault if v is None else fault.with_params(**{param: v}) for v in grid]
    if isinstance(seed, bool) or not isinstance(seed, (Integral, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer; got {seed!r}")
    if not 0.0 < float(confidence) < 1.0:
        raise ValueError(f"confidence must be in (0, 1); got {confidence}")

    n_sym = _wire_symbols(device)
    if n_sym > 2 and not _symbol_fault_ok(fault):
        raise ValueError(f"{type(device).__name__} sends {n_sym}-ary symbols: only additive "
                         "bit faults (bsc, burst) have a symbol meaning (an event replaces the "
                         "symbol by a uniformly random other one); got " + repr(fault))
    tx = _check_wire(device.transmit(X), n_sym)
    if tx.ndim != 2:
        raise ValueError(f"device.transmit must return (t, L) bits; got shape {tx.shape}")
    t, width = tx.shape
    # the clean label: the same pipeline on a noiseless wire (for the built-in
    # devices this is predict(X), without computing the wire a second time)
    clean = _labels(np.asarray(device.predict_bits(tx)), t, "device.predict_bits(transmit(X))")
    if y is not None:
        y = _labels(_check_labels(y), t, "y")
    for f in faults:
        f._check_width(width)
    children = np.random.SeedSequence(int(seed)).spawn(len(grid))
    if loader is None:
        loader = type(device)

    points = []
    for k, (value, f) in enumerate(zip(grid, faults)):
        rng = np.random.default_rng(children[k])
        t0 = time.perf_counter()
        if image:
            same, correct, refused = _image_point(device, tx, clean, y, f, rng, n_trials, loader,
                                                  n_sym)
            ci_n = n_trials
        else:
            same, correct = _bits_point(device, tx, clean, y, f, rng, n_trials, n_sym)
            refused, ci_n = 0, t * n_trials
        elapsed = time.perf_counter() - t0
        total = t * n_trials
        rate = float(same.sum()) / total
        acc = None if correct is None else float(correct.sum()) / total
        pt = CampaignPoint(
            value=value, fault=f.to_dict(), same_rate=rate,
            same_ci=list(wilson_interval(rate * ci_n, ci_n, confidence)),
            accuracy=acc,
            accuracy_ci=None if acc is None else list(wilson_interval(acc * ci_n, ci_n,
                                                                      confidence)),
            refused=int(refused), ci_trials=int(ci_n), elapsed_s=elapsed,
            trials_per_s=total / elapsed if elapsed > 0 else math.inf,
            same_per_point=same.tolist())
        points.append(pt)
        if progress is not None:
            progress(k + 1, len(grid), pt)
    return CampaignResult(param=param, grid=grid, n_trials=n_trials, n_points=t, seed=int(seed),
                          confidence=float(confidence), fault=fault.to_dict(),
                          device=_device_info(device), points=points)


def _wire_symbols(device):
    n = getattr(device, "wire_symbols", 2)
    if isinstance(n, bool) or not isinstance(n, (Integral, np.integer)) or n < 2:
        raise ValueError(f"device.wire_symbols must be an integer >= 2; got {n!r}")
    return int(n)


def _symbol_fault_ok(fault):
    if fault.target == "image":
        return True
    if isinstance(fault, Compose):
        return all(f.additive for f in fault.bit_faults)
    return bool(fault.additive)


def _check_wire(tx, n_sym):
    if n_sym == 2:
        return np.ascontiguousarray(check_bits(tx, name="transmitted bits"))
    a = np.asarray(tx)
    if not np.issubdtype(a.dtype, np.integer):
        raise TypeError(f"transmitted symbols must be integers; got dtype {a.dtype}")
    if a.size and (a.min() < 0 or a.max() >= n_sym):
        raise ValueError(f"transmitted symbols must be in [0, {n_sym}); got "
                         f"[{a.min()}, {a.max()}]")
    return np.ascontiguousarray(a, dtype=np.uint8 if n_sym <= 256 else np.int64)


def _apply_wire_fault(fault, frame, rng, n_sym):
    """A bit fault on bits, or (N-ary) its events as uniform symbol replacements
    (the events' masks, then one seed for the replacement symbols: the draws
    ``_symbol_point`` makes)."""
    if n_sym == 2:
        fault.apply_inplace(frame, rng)
        return
    masks = fault.error_masks(frame.shape[0], frame.shape[1], rng)
    _replace_symbols(frame, masks, n_sym, _draw_seed(rng))


def _batches(t, n_trials, width):
    """(first row, rows) of the batches of (point, trial) rows (fixed size, so a
    seed gives the same result on every machine and path)."""
    rows_total = t * n_trials
    step = max(1, BATCH_BITS // max(width, 1))
    for start in range(0, rows_total, step):
        yield start, min(step, rows_total - start)


def _bits_point(device, tx, clean, y, fault, rng, n_trials, n_sym=2):
    """Bit faults: batches of (point, trial) rows through fault and device; for
    additive faults on the three built-in device kinds the fast paths consume
    the error masks without building the noisy rows (same draws, same counts)."""
    if fault.additive:
        if type(device) is ProtectedNBDevice and _nb_copies_agree(device, tx):
            return _nb_additive_point(device, tx, clean, y, fault, rng, n_trials)
        if type(device) is ECOCOutputs:
            if n_sym == 2:
                return _ecoc_additive_point(device.device, tx, clean, y, fault, rng, n_trials)
            return _symbol_point(device.device, tx, clean, y, fault, rng, n_trials, n_sym)
    t, width = tx.shape
    predict = _fast_predictor(device)
    same = np.zeros(t, np.int64)
    correct = None if y is None else np.zeros(t, np.int64)
    for start, nrows in _batches(t, n_trials, width):
        point = np.arange(start, start + nrows, dtype=np.int64) // n_trials
        bits = tx.take(point, axis=0)
        _apply_wire_fault(fault, bits, rng, n_sym)
        labels = np.asarray(predict(bits))
        same += np.bincount(point[labels == clean[point]], minlength=t)
        if y is not None:
            correct += np.bincount(point[labels == y[point]], minlength=t)
    return same, correct


def _nb_copies_agree(device, tx):
    """Every copy of a feature carries the feature's bit (what ``transmit`` sends)."""
    dec = np.empty((tx.shape[0], device.n_features), np.uint8)
    _majority_decode(tx, device._reps, dec)
    return bool(np.array_equal(np.repeat(dec, device.copies, axis=1), tx))


def _nb_pairs(device, width):
    """Per feature, the (wire word, bit mask) pairs holding its copies."""
    owner = np.repeat(np.arange(device.n_features, dtype=np.int64), device.copies)
    col = np.arange(width, dtype=np.int64)
    word = col >> 6
    key = owner * (1 + (width >> 6)) + word
    uniq, first = np.unique(key, return_index=True)
    pair_word = word[first]
    pair_mask = np.zeros(uniq.size, np.uint64)
    np.bitwise_or.at(pair_mask, np.searchsorted(uniq, key),
                     np.left_shift(np.uint64(1), (col & 63).astype(np.uint64)))
    feat_start = np.searchsorted(owner[first], np.arange(device.n_features + 1))
    return pair_word, pair_mask, feat_start.astype(np.int64)


def _nb_additive_point(device, tx, clean, y, fault, rng, n_trials):
    """Protected NB under XOR noise: consume each batch's error masks
    (``_nb_outcomes``: a feature flips when more than r_j of its copies are in
    error); equal, trial for trial, to running the device loop on the noisy rows."""
    t, width = tx.shape
    dec8 = np.empty((t, device.n_features), np.uint8)
    _majority_decode(tx, device._reps, dec8)
    clean_acc = np.empty(t, np.int64)
    _accumulate(dec8, device._w, device.bias, clean_acc)
    swing = (1 - 2 * dec8.astype(np.int64)) * device._w.astype(np.int64)[None, :]
    pair_word, pair_mask, feat_start = _nb_pairs(device, width)
    reps = device._reps.astype(np.int64)
    same = np.zeros(t, np.int64)
    correct = np.zeros(t, np.int64)
    y_arr = np.empty(0, np.int64) if y is None else y
    for start, nrows in _batches(t, n_trials, width):
        masks = fault.error_masks(nrows, width, rng)
        _nb_outcomes(masks, start, n_trials, pair_word, pair_mask, feat_start, reps, swing,
                     clean_acc, clean, y_arr, same, correct)
    return same, (None if y is None else correct)


def _doubled_distances(code, sym):
    """(t, c) doubled Hamming distances of received symbols to every row, the
    device's rule (``2 #(used and unequal) + unused``), in chunks of points."""
    code = np.asarray(code, np.int64)
    used = code >= 0
    t, L = sym.shape
    out = np.empty((t, code.shape[0]), np.int64)
    step = max(1, (1 << 22) // max(1, code.size))
    for a in range(0, t, step):
        s = np.asarray(sym[a:a + step], np.int64)
        out[a:a + step] = 2 * ((s[:, None, :] != code[None]) & used[None]).sum(axis=2)
    return out + (~used).sum(axis=1)[None, :]


def _flip_radius(dist, label):
    """Per point, how many received symbols may change without any chance of
    changing its label: each change moves every doubled distance by at most 2,
    so the first minimum ``label`` stays while ``4 k < D_r - D_label`` for
    rows before it and ``4 k <= D_r - D_label`` after it (ties go to the
    lowest index)."""
    t, c = dist.shape
    if c < 2:
        return np.full(t, np.iinfo(np.int64).max // 2, np.int64)
    gap = dist - dist[np.arange(t), label][:, None]
    rad = np.where(np.arange(c)[None, :] > label[:, None], gap // 4, (gap - 1) // 4)
    rad[np.arange(t), label] = np.iinfo(np.int64).max // 2
    return rad.min(axis=1)


def _ecoc_additive_point(ecoc, tx, clean, y, fault, rng, n_trials):
    """Binary ECOC under XOR noise on the learner outputs: XOR each batch's error
    masks into the point's packed clean outputs and decode Hamming-nearest
    (``_ecoc_binary_outcomes``); equal, trial for trial, to decoding every
    noisy row with the device."""
    t, width = tx.shape
    clean_words = np.empty((t, ecoc._code_bits.shape[1]), np.uint64)
    _pack(tx.astype(np.int16), clean_words)
    radius = _flip_radius(_doubled_distances(ecoc.code, tx), clean)
    same = np.zeros(t, np.int64)
    correct = np.zeros(t, np.int64)
    y_arr = np.empty(0, np.int64) if y is None else y
    for start, nrows in _batches(t, n_trials, width):
        masks = fault.error_masks(nrows, width, rng)
        _ecoc_binary_outcomes(masks, start, n_trials, clean_words, ecoc._code_bits,
                              ecoc._code_used, ecoc.unused, radius, clean, y_arr, same,
                              correct)
    return same, (None if y is None else correct)


def _symbol_point(ecoc, tx, clean, y, fault, rng, n_trials, n_sym):
    """N-ary ECOC: each event of the fault's masks replaces a symbol by a uniformly
    random other one; only the rows with events are re-decoded, by updating the
    clean doubled distances per event (``_ecoc_symbol_outcomes``). Same draws
    and counts as :func:`_apply_wire_fault` plus the device's decoder."""
    t, width = tx.shape
    code = np.asarray(ecoc.code, dtype=np.int64)
    used = code >= 0
    clean_dist = _doubled_distances(code, tx)
    radius = _flip_radius(clean_dist, clean)
    # step[j, a, b, r]: change of the doubled distance to row r when symbol a of
    # column j is received as b
    s = np.arange(n_sym)
    neq = (s[None, :, None] != code.T[:, None, :]) & used.T[:, None, :]     # (L, N, c)
    step = np.ascontiguousarray(2 * (neq[:, None, :, :].astype(np.int32)
                                     - neq[:, :, None, :]))                # (L, a, b, c)
    same = np.zeros(t, np.int64)
    correct = np.zeros(t, np.int64)
    y_arr = np.empty(0, np.int64) if y is None else y
    clean_dist = clean_dist.astype(np.int32)
    dist = np.empty(code.shape[0], np.int32)
    for start, nrows in _batches(t, n_trials, width):
        masks = fault.error_masks(nrows, width, rng)
        _ecoc_symbol_outcomes(masks, start, n_trials, tx, step, clean_dist, n_sym,
                              _draw_seed(rng), radius, clean, y_arr, same, correct, dist)
    return same, (None if y is None else correct)


def _image_point(device, tx, clean, y, fault, rng, n_trials, loader, n_sym=2):
    """Image faults: one faulty image per trial, every point through it."""
    t = tx.shape[0]
    bit_faults = fault.bit_faults if isinstance(fault, Compose) else ()
    same = np.zeros(t, np.int64)
    correct = None if y is None else np.zeros(t, np.int64)
    refused = 0
    for _ in range(n_trials):
        try:
            dev = loader(fault.apply_container(device.container, rng))
        except ContainerError:
            refused += 1
            continue
        bits = tx.copy()
        for bf in bit_faults:
            _apply_wire_fault(bf, bits, rng, n_sym)
        try:
            labels = np.asarray(dev.predict_bits(bits)).astype(np.int64)
        except ValueError:  # the faulty device expects another frame: desynchronised
            refused += 1
            continue
        same += labels == clean
        if y is not None:
            correct += labels == y
    return same, correct, refused
