"""Seeded fault-injection campaigns on any device runtime.

:func:`run_campaign` sweeps one parameter of a fault model
(:mod:`firmware_sim.faults`) over a grid, runs ``n_trials`` independent
trials per point of ``X`` at every grid value (each grid value with its own
child of one ``SeedSequence``), and reports the same-classification rate
(the label equals the device's clean label) and, given ``y``, the accuracy,
each with a Wilson confidence interval. :class:`CampaignResult` writes and
reads the JSON report.

The device is any :class:`~firmware_sim.device.Device` (or what
:func:`firmware_sim.load` opens: a path, bytes or a ``Container``); the
campaign uses the device contract only. ``frames = device.encode(X)`` is
what the clean host sends; the clean label of a point is
``device.infer(frames).labels``. Faults act where a real device is hit
(``site``, :data:`firmware_sim.device.SITES`):

* ``site="wire"``: bit faults on the frames' bits on the wire
  (int16 frames as 16 bits each, least significant first);
* ``site="intermediate"``: bit faults on the device's intermediate results
  (``device.stage(frames)``, then ``device.finish``): decoded feature bits
  (naive Bayes), learner outputs (ECOC; noisy computation), code bits
  (SSBC);
* image faults (``ParameterUpset``) on the stored image: each trial loads
  the faulty image with :func:`firmware_sim.load` and re-runs it on the
  clean host's frames (with a :class:`~firmware_sim.faults.Compose`, its
  bit faults then hit ``site`` of that faulty device).

``site=None`` takes ``device.default_site``: the wire for naive Bayes, the
intermediate results for ECOC and SSBC (the noise each is designed for).

Symbols. ECOC with an N-ary code (``device.stage_symbols = N > 2``) has
symbols ``0 .. N-1`` as intermediate results. A bit fault there acts on an
all-zero *event* frame of the same shape, and every position it sets is an
event: that symbol is replaced by one of the other ``N - 1`` symbols chosen
uniformly (what ``ECOCDevice.corrupt`` does). Only additive faults (BSC,
burst, their interleavings and compositions) have this meaning; a stuck line
has no symbol meaning and is refused.

Fast paths (same draws and counts as the plain path, tested equal): protected
naive Bayes under additive wire faults, binary and N-ary ECOC under
additive intermediate faults.

Imports numpy only (analytic predictions live in ``export.analytics``,
printing and plotting in ``export.report``).
"""

import json
import math
import time
from dataclasses import asdict, dataclass, field
from numbers import Integral
from statistics import NormalDist

import numpy as np

from ._kernels import _accumulate, _decode_accumulate
from ._kernels.ecoc import _pack
from ._kernels.campaign import _ecoc_binary_outcomes, _ecoc_symbol_outcomes, _nb_outcomes
from ._kernels.faults import _replace_symbols
from ._limits import check_allocation
from ._parallel import (MAX_ROWS, SUB_ROWS, SeededBatches, Ticker, count_labels, repeat_rows,
                        run_seeded_batches, seed_sequence)
from .artifact import ContainerError
from .channel import _BLOCK_BITS
from .device import SITES, load
from .ecoc import ECOCDevice, doubled_distances, flip_radius
from .errors import FrameError, SizeLimitError
from .faults import BSC, Compose, Fault, _draw_seed
from .device import SimulationResult
from .naive_bayes import ProtectedNBDevice
from .naive_bayes import simulate as _simulate_nb_wire

__all__ = ["run_campaign", "simulate", "CampaignResult", "CampaignPoint", "wilson_interval",
           "REPORT_VERSION"]

#: Version of the JSON report layout (2: ``random_state`` and ``site``; version 1
#: reports, with ``seed``, are still read).
REPORT_VERSION = 2

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
    random_state : int
        Root of the campaign's ``SeedSequence``.
    site : str
        Where the bit faults acted (``"wire"`` or ``"intermediate"``).
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
    random_state: int
    site: str
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
        if d.get("version") == 1:          # version 1 named the seed ``seed``
            d["random_state"] = d.pop("seed")
            d.setdefault("site", None)
            d["version"] = REPORT_VERSION
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


def _finisher(device, site):
    """Labels of the faulted stream of ``site`` (what follows the faults)."""
    if site == "intermediate":
        return device.finish
    if type(device) is ProtectedNBDevice:          # unchecked: rows come from encode
        reps, w, bias = device._reps, device._w, device.bias

        def predict(bits):
            out = np.empty(bits.shape[0], np.int64)        # per call: threads share this
            _decode_accumulate(bits, reps, w, bias, out)
            return (out > 0).astype(np.int64)
        return predict
    if device.frame_dtype == np.uint8:
        return device.labels
    return lambda bits: device.labels(device.frames_from_wire(bits))


def _stream(device, frames, site):
    """(the clean stream the bit faults act on, its alphabet size)."""
    if site == "wire":
        return device.wire_bits(frames), 2
    return np.ascontiguousarray(device.stage(frames)), int(device.stage_symbols)


def _as_device(device):
    """A Device, or what firmware_sim.load opens (path, bytes or Container)."""
    import os

    from .artifact import Container
    from .device import Device

    if not isinstance(device, (Device, Container, bytes, bytearray, memoryview, str,
                               os.PathLike)):
        raise TypeError("device must be a firmware_sim Device (or a path, bytes or Container "
                        f"that firmware_sim.load opens); got {type(device).__name__}")
    return load(device)


def _check_site(site):
    if site not in ("wire", "intermediate"):
        raise ValueError(f"site must be 'wire' or 'intermediate' (image faults act on the "
                         f"image whatever the site; sites: {SITES}); got {site!r}")
    return site


def _n_trials(n_trials):
    if isinstance(n_trials, bool) or not isinstance(n_trials, (Integral, np.integer)):
        raise TypeError(f"n_trials must be an integer; got {n_trials!r}")
    if n_trials < 1:
        raise ValueError(f"n_trials must be >= 1; got {n_trials}")
    return int(n_trials)


def _check_rows(t, n_trials):
    """Refuse a run whose (point, trial) rows do not fit an int64 row index.

    Memory does not grow with ``n_trials``: the rows run in batches (a run
    of 10**12 trials is merely long: it reports progress and stops on Ctrl-C).
    """
    if t * n_trials > MAX_ROWS:
        raise SizeLimitError(f"n_trials={n_trials}: {t} points x {n_trials} trials = "
                             f"{t * n_trials:.3e} (point, trial) rows, above the "
                             f"{MAX_ROWS:.3e} that an int64 row index counts; use fewer trials")


#: Bytes a grid value's result holds per point (``same_per_point``: a Python
#: int in a list) and in all (the fault, its seed, the point's record).
_POINT_BYTES, _VALUE_BYTES = 36, 4096


def _grid_values(grid, t):
    """``list(grid)``, its size checked first: the results of a grid value (a
    record and a count per point) are priced against the size limit before
    any fault is built or seed spawned (an iterator is read one value past the
    limit at most)."""
    import itertools

    from ._limits import MAX_ALLOCATION_BYTES

    per_value = _VALUE_BYTES + _POINT_BYTES * int(t)
    try:
        n = len(grid)
    except TypeError:
        grid = list(itertools.islice(iter(grid), MAX_ALLOCATION_BYTES // per_value + 1))
        n = len(grid)
    check_allocation(f"grid of {n:,} values", n * per_value,
                     what=f"the campaign's results ({int(t):,} per-point counts per value)",
                     hint="use fewer grid values or fewer points")
    return list(grid)


def _clean_labels(device, frames):
    labels = device.infer(frames).labels
    if labels is None:
        raise ValueError(f"{type(device).__name__} computes no labels (an SSBC image without "
                         "a code table): export it with a table (X_table, y_table) to "
                         "campaign it")
    return np.asarray(labels, np.int64).reshape(-1)


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


def run_campaign(device, X, fault, param=None, grid=None, n_trials=1000, random_state=0, y=None,
                 site=None, confidence=0.99, progress=None, n_jobs=None, client=None):
    """Sweep a fault parameter; at each value run every point ``n_trials`` times.

    Parameters
    ----------
    device : Device, Container, path or bytes
        Any device of the contract (:mod:`firmware_sim.device`).
    X : array-like, shape (t, n)
        Clean inputs (what ``device.encode`` takes: 0/1 features for naive
        Bayes, float features for ECOC and SSBC).
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
    random_state : int
        Root of a ``numpy.random.SeedSequence``; grid value k uses child k of
        ``SeedSequence(random_state).spawn(len(grid))``, so each value's
        result depends only on (random_state, k) and re-running gives the
        same report.
    y : array-like of int, shape (t,), optional
        True labels as the device's label indices (0/1 for naive Bayes,
        class indices for ECOC and SSBC), for the accuracy.
    site : {"wire", "intermediate"}, optional
        Where bit faults act (module docstring; default
        ``device.default_site``: the wire for naive Bayes, the learner
        outputs for ECOC, the code bits for SSBC); image faults always hit
        the stored image.
    confidence : float
        Confidence level of the Wilson intervals.
    progress : callable, optional
        Called between batches (about ten times a second at most, and at the
        end) as ``progress(done, total, text)``: ``done`` of ``total =
        len(grid) * t * n_trials`` (point, trial) inferences, ``text`` the
        grid value (``"eps=0.1 (2/4)"``). It runs in the calling thread; an
        exception it raises (``KeyboardInterrupt`` included) stops the
        campaign, threads and Dask tasks too.
    n_jobs : int, optional
        Threads for bit faults (None: numba's thread count; -1: every CPU).
        Each batch of (point, trial) rows has its own seed, so the result is
        the same for any ``n_jobs``.
    client : dask.distributed.Client, optional
        Run the batches on the Dask cluster of this connected client
        (``Client("tcp://host:8786")``): same result as a local run
        (:mod:`firmware_sim.distributed`; needs ``pip install
        'edgecode[distributed]'``). Ctrl-C cancels the submitted tasks.

    Notes
    -----
    Memory does not grow with ``n_trials``: bit faults run in batches of about
    4 Mi wire bits (``BATCH_BITS``; each with its own seed), image faults one
    faulty image at a time, and the engine returns to Python between them
    (progress, Ctrl-C: ``KeyboardInterrupt`` within a batch, well under a
    second). Sizes are checked before anything is allocated: the grid's
    results (a count per point and value) against
    ``firmware_sim._limits.MAX_ALLOCATION_BYTES``, and points x trials
    against an int64 row index (:class:`~firmware_sim.errors.SizeLimitError`).

    Returns
    -------
    CampaignResult

    Raises
    ------
    TypeError
        Device not a Device (nor something ``firmware_sim.load`` opens), fault
        not a Fault.
    ValueError
        Bad ``n_trials``, ``grid`` without ``param`` (or the reverse),
        unknown parameter, ``y`` of the wrong length.
    SizeLimitError
        A grid whose results would exceed the size limit, or more (point,
        trial) rows than an int64 counts (a ``ValueError``).

    Examples
    --------
    >>> from firmware_sim.naive_bayes import ProtectedNBDevice
    >>> from firmware_sim.faults import BSC
    >>> dev = ProtectedNBDevice.from_arrays([2], -1, [1])      # label = x, 3 copies
    >>> res = run_campaign(dev, [[0], [1]], BSC(0.0), "eps", [0.0, 0.1], 5000, random_state=1)
    >>> res.points[0].same_rate, abs(res.points[1].same_rate - 0.972) < 0.01  # 1 - 3e^2 + 2e^3
    (1.0, True)
    """
    if not isinstance(fault, Fault):
        raise TypeError(f"fault must be a firmware_sim.faults.Fault; got {type(fault).__name__}")
    device = _as_device(device)
    site = device.default_site if site is None else _check_site(site)
    image = fault.target in ("image", "mixed")
    n_trials = _n_trials(n_trials)
    if (param is None) != (grid is None):
        raise ValueError("give param and grid together (or neither for a single point)")
    n_hint = len(X) if hasattr(X, "__len__") else 1        # the points, before encode(X)
    _check_rows(n_hint, n_trials)
    grid = [None] if param is None else _grid_values(grid, n_hint)
    if not grid:
        raise ValueError("grid must have at least one value")
    faults = [fault if v is None else fault.with_params(**{param: v}) for v in grid]
    if client is not None:
        from .distributed import check_client
        check_client(client)            # before any work
    seed = random_state
    if isinstance(seed, bool) or not isinstance(seed, (Integral, np.integer)) or seed < 0:
        raise ValueError(f"random_state must be a non-negative integer (the root of the "
                         f"campaign's SeedSequence); got {seed!r}")
    if not 0.0 < float(confidence) < 1.0:
        raise ValueError(f"confidence must be in (0, 1); got {confidence}")

    frames = device.encode(X)
    clean = _clean_labels(device, frames)
    t = clean.shape[0]
    _check_rows(t, n_trials)
    stream, n_sym = _stream(device, frames, site)
    if n_sym > 2 and not _symbol_fault_ok(fault):
        raise ValueError(f"{type(device).__name__} computes {n_sym}-ary symbols at site "
                         f"{site!r}: only additive bit faults (bsc, burst) have a symbol "
                         "meaning (an event replaces the symbol by a uniformly random other "
                         "one); got " + repr(fault))
    width = stream.shape[1]
    if y is not None:
        y = _labels(_check_labels(y), t, "y")
    for f in faults:
        f._check_width(width)
    children = np.random.SeedSequence(int(seed)).spawn(len(grid))
    remote = None
    if client is not None and not image:
        from .distributed import bits_point_on_cluster, scatter_payload
        remote = scatter_payload(client, device, X, y, n_trials, site)

    points = []
    per_value = t * n_trials
    ticker = Ticker(progress, len(grid) * per_value)
    for k, (value, f) in enumerate(zip(grid, faults)):
        t0 = time.perf_counter()
        text = (f"{param}={value:g}" if isinstance(value, (int, float)) and
                not isinstance(value, bool) else f"{param}={value}") if param is not None \
            else ""
        text = f"{text} ({k + 1}/{len(grid)})" if len(grid) > 1 else text

        def tick(rows, _base=k * per_value, _text=text):
            ticker(_base + rows, _text)

        if image:
            rng = np.random.default_rng(children[k])
            same, correct, refused = _image_point(device, frames, clean, y, f, rng, n_trials,
                                                  site, tick)
            ci_n = n_trials
        elif remote is not None:
            same, correct = bits_point_on_cluster(client, remote, f, children[k], t, width,
                                                  n_trials, y is not None, progress=tick)
            refused, ci_n = 0, t * n_trials
        else:
            same, correct = _bits_point(device, stream, clean, y, f, children[k], n_trials,
                                        n_sym, site, n_jobs, tick)
            refused, ci_n = 0, t * n_trials
        tick(per_value)
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
    return CampaignResult(param=param, grid=grid, n_trials=n_trials, n_points=t,
                          random_state=int(seed), site=site, confidence=float(confidence),
                          fault=fault.to_dict(), device=_device_info(device), points=points)


def _symbol_fault_ok(fault):
    if fault.target == "image":
        return True
    if isinstance(fault, Compose):
        return all(f.additive for f in fault.bit_faults)
    return bool(fault.additive)


def _apply_wire_fault(fault, frame, rng, n_sym):
    """A bit fault on bits, or (N-ary) its events as uniform symbol replacements
    (the events' masks, then one seed for the replacement symbols: the draws
    ``_symbol_point`` makes)."""
    if n_sym == 2:
        fault.apply_inplace(frame, rng)
        return
    masks = fault.error_masks(frame.shape[0], frame.shape[1], rng)
    _replace_symbols(frame, masks, n_sym, _draw_seed(rng))


def _plan(t, n_trials, width, seed):
    """The batches of (point, trial) rows (fixed size, so a seed gives the same
    result on every machine and path) and their seeds: a
    :class:`~firmware_sim._parallel.SeededBatches` (described, not listed)."""
    return SeededBatches(t * n_trials, max(1, BATCH_BITS // max(width, 1)), seed)


def _batches(t, n_trials, width):
    """(first row, rows) of the batches of (point, trial) rows, one at a time."""
    plan = _plan(t, n_trials, width, 0)
    for i in range(len(plan)):
        yield plan.bounds(i)


def _bits_point(device, tx, clean, y, fault, seed, n_trials, n_sym=2, site="wire", n_jobs=None,
                progress=None):
    """Bit faults at one grid value: batches of (point, trial) rows of the clean
    stream ``tx`` through the fault and the rest of the device.

    Batch b draws its faults from ``default_rng(seed.spawn(n_batches)[b])``:
    a seed per fixed batch, never per thread, so the counts are the same for
    any ``n_jobs`` (and on a Dask cluster, :mod:`firmware_sim.distributed`).
    ``progress(rows_done)`` is called between batches. Returns ``(same,
    correct or None)``, int64 counts per point.
    """
    run = _batch_runner(device, tx, clean, y, fault, n_trials, n_sym, site)
    return _seeded_batches(run, tx, y, seed, n_trials, n_jobs, progress)


def _plain_bits_point(device, tx, clean, y, fault, seed, n_trials, n_sym=2, site="wire",
                      n_jobs=None):
    """:func:`_bits_point` on the plain path only (the fast paths' reference)."""
    run = _plain_runner(device, tx, clean, y, fault, n_trials, n_sym, site)
    return _seeded_batches(run, tx, y, seed, n_trials, n_jobs)


def _seeded_batches(run, tx, y, seed, n_trials, n_jobs, progress=None):
    t, width = tx.shape
    plan = _plan(t, n_trials, width, seed)
    same, correct = run_seeded_batches(run, plan, t, n_jobs, progress)
    return same, (None if y is None else correct)


def _batch_runner(device, tx, clean, y, fault, n_trials, n_sym=2, site="wire"):
    """``run(start, nrows, rng, same, correct)`` for one batch of this fault and
    device: the fast paths for additive faults consume the error masks without
    building the noisy rows (same draws, same counts as the plain path)."""
    if fault.additive:
        if site == "wire" and type(device) is ProtectedNBDevice and _nb_copies_agree(device, tx):
            return _nb_additive_runner(device, tx, clean, y, fault, n_trials)
        if site == "intermediate" and type(device) is ECOCDevice:
            if n_sym == 2:
                return _ecoc_additive_runner(device, tx, clean, y, fault, n_trials)
            return _symbol_runner(device, tx, clean, y, fault, n_trials, n_sym)
    return _plain_runner(device, tx, clean, y, fault, n_trials, n_sym, site)


def _plain_runner(device, tx, clean, y, fault, n_trials, n_sym=2, site="wire"):
    """The plain path: build every noisy row and run the rest of the device on it."""
    t, width = tx.shape
    predict = _finisher(device, site)

    def run(start, nrows, rng, same, correct):
        bits = repeat_rows(tx, start, nrows, n_trials)
        _apply_wire_fault(fault, bits, rng, n_sym)
        for a in range(0, nrows, SUB_ROWS):        # bounded temporaries for narrow rows
            labels = np.asarray(predict(bits[a:a + SUB_ROWS]))
            count_labels(labels, start + a, n_trials, clean, y, same, correct)
    return run


def _first_copies(device, tx):
    """Copy 0 of every feature (t, n) uint8: the decoded features when the
    copies agree."""
    start = np.cumsum(device.copies) - device.copies
    return np.ascontiguousarray(tx[:, start], dtype=np.uint8)


def _nb_copies_agree(device, tx):
    """Every copy of a feature carries the feature's bit (what ``transmit`` sends)."""
    return bool(np.array_equal(np.repeat(_first_copies(device, tx), device.copies, axis=1), tx))


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


def _nb_additive_runner(device, tx, clean, y, fault, n_trials):
    """Protected NB under XOR noise: consume each batch's error masks
    (``_nb_outcomes``: a feature flips when more than r_j of its copies are in
    error); equal, trial for trial, to running the device loop on the noisy rows."""
    t, width = tx.shape
    dec8 = _first_copies(device, tx)         # = the majority: every copy agrees
    clean_acc = np.empty(t, np.int64)
    _accumulate(dec8, device._w, device.bias, clean_acc)
    swing = (1 - 2 * dec8.astype(np.int64)) * device._w.astype(np.int64)[None, :]
    pair_word, pair_mask, feat_start = _nb_pairs(device, width)
    reps = device._reps.astype(np.int64)
    y_arr = np.empty(0, np.int64) if y is None else y

    def run(start, nrows, rng, same, correct):
        masks = fault.error_masks(nrows, width, rng)
        _nb_outcomes(masks, start, n_trials, pair_word, pair_mask, feat_start, reps, swing,
                     clean_acc, clean, y_arr, same, correct)
    return run


def _ecoc_additive_runner(ecoc, tx, clean, y, fault, n_trials):
    """Binary ECOC under XOR noise on the learner outputs: XOR each batch's error
    masks into the point's packed clean outputs and decode Hamming-nearest
    (``_ecoc_binary_outcomes``); equal, trial for trial, to decoding every
    noisy row with the device."""
    t, width = tx.shape
    clean_words = np.empty((t, ecoc._code_bits.shape[1]), np.uint64)
    _pack((tx != 0).view(np.uint8), clean_words)
    radius = flip_radius(doubled_distances(ecoc.code, tx), clean)
    y_arr = np.empty(0, np.int64) if y is None else y

    def run(start, nrows, rng, same, correct):
        masks = fault.error_masks(nrows, width, rng)
        _ecoc_binary_outcomes(masks, start, n_trials, clean_words, ecoc._code_bits,
                              ecoc._code_used, ecoc.unused, radius, clean, y_arr, same,
                              correct)
    return run


def _symbol_runner(ecoc, tx, clean, y, fault, n_trials, n_sym):
    """N-ary ECOC: each event of the fault's masks replaces a symbol by a uniformly
    random other one; only the rows with events are re-decoded, by updating the
    clean doubled distances per event (``_ecoc_symbol_outcomes``). Same draws
    and counts as :func:`_apply_wire_fault` plus the device's decoder."""
    t, width = tx.shape
    code = np.asarray(ecoc.code, dtype=np.int64)
    used = code >= 0
    clean_dist = doubled_distances(code, tx)
    radius = flip_radius(clean_dist, clean)
    # step[j, a, b, r]: change of the doubled distance to row r when symbol a of
    # column j is received as b
    s = np.arange(n_sym)
    neq = (s[None, :, None] != code.T[:, None, :]) & used.T[:, None, :]     # (L, N, c)
    step = np.ascontiguousarray(2 * (neq[:, None, :, :].astype(np.int32)
                                     - neq[:, :, None, :]))                # (L, a, b, c)
    y_arr = np.empty(0, np.int64) if y is None else y
    clean_dist = clean_dist.astype(np.int32)

    def run(start, nrows, rng, same, correct):
        masks = fault.error_masks(nrows, width, rng)
        dist = np.empty(code.shape[0], np.int32)          # scratch: one per batch (threads)
        _ecoc_symbol_outcomes(masks, start, n_trials, tx, step, clean_dist, n_sym,
                              _draw_seed(rng), radius, clean, y_arr, same, correct, dist)
    return run


def _image_point(device, frames, clean, y, fault, rng, n_trials, site="wire", progress=None):
    """Image faults: one faulty image per trial, loaded with ``firmware_sim.load``
    and run on every point's clean frame (a Compose's bit faults then hit
    ``site`` of that faulty device). ``progress(rows_done)`` after each trial
    (``t`` rows each)."""
    t = frames.shape[0]
    bit_faults = fault.bit_faults if isinstance(fault, Compose) else ()
    same = np.zeros(t, np.int64)
    correct = None if y is None else np.zeros(t, np.int64)
    refused = 0
    for trial in range(n_trials):
        if progress is not None and trial:
            progress(trial * t)
        try:
            dev = load(fault.apply_container(device.container, rng))
        except ContainerError:
            refused += 1
            continue
        try:
            labels = _faulty_labels(dev, frames, bit_faults, rng, site)
        except FrameError:  # the faulty device expects another frame: desynchronised
            refused += 1
            continue
        same += labels == clean
        if y is not None:
            correct += labels == y
    return same, correct, refused


def _faulty_labels(dev, frames, bit_faults, rng, site):
    """Labels of a (faulty) device on the clean frames, after the bit faults at ``site``."""
    if not bit_faults:
        return np.asarray(dev.labels(frames), np.int64)
    if site == "wire":
        bits = dev.wire_bits(frames).copy()
        n_sym = 2
    else:
        bits = np.ascontiguousarray(dev.stage(frames))
        n_sym = int(dev.stage_symbols)
    for bf in bit_faults:
        _apply_wire_fault(bf, bits, rng, n_sym)
    if site == "wire":
        return np.asarray(dev.labels(dev.frames_from_wire(bits)), np.int64)
    return np.asarray(dev.finish(bits), np.int64)


def simulate(device, X, eps, n_trials, random_state=None, y=None, site=None, n_jobs=None,
             progress=None):
    """Run every point through a binary symmetric channel ``n_trials`` times.

    One engine for every model kind: ``frames = device.encode(X)``, each
    bit of the stream at ``site`` flips with probability ``eps``, the rest of
    the device runs on the noisy stream, and each trial's label is compared
    with the clean label (and with ``y`` when given).

    Parameters
    ----------
    device : Device, Container, path or bytes
    X : array-like
        Points, what ``device.encode`` takes.
    eps : float or array-like
        Flip probability in [0, 1]: one for every bit, or one per position of
        the stream (for naive Bayes at the wire also one per feature, applied
        to each of its copies). At an N-ary ECOC's intermediate results, the
        probability that a symbol is replaced by a uniformly random other one.
    n_trials : int
        Independent trials per point (>= 1).
    random_state : None, int, SeedSequence or numpy Generator, optional
    y : array-like of int, shape (t,), optional
        True labels (class indices); ``correct`` then counts trials labelled ``y``.
    site : {"wire", "intermediate"}, optional
        Default ``device.default_site`` (see :mod:`firmware_sim.campaign`).
    n_jobs : int, optional
        Threads (None: numba's thread count; -1: every CPU); the result does
        not depend on it.
    progress : callable, optional
        ``progress(done, total)`` between batches (about ten times a second
        at most, and at the end), in the calling thread: ``done`` of ``total
        = t * n_trials`` (point, trial) inferences. An exception it raises
        (``KeyboardInterrupt`` included) stops the run, threads too.

    Returns
    -------
    SimulationResult

    Raises
    ------
    SizeLimitError
        More (point, trial) rows than an int64 counts. Any other ``n_trials``
        runs in batches of bounded memory (about 4 Mi wire bits each); a
        long run reports progress and stops on Ctrl-C between batches.

    Examples
    --------
    >>> from firmware_sim.naive_bayes import ProtectedNBDevice
    >>> dev = ProtectedNBDevice.from_arrays([2], -1, [1])   # label = x
    >>> res = simulate(dev, [[0], [1]], 0.0, 100, random_state=0)
    >>> res.same.tolist(), res.clean_labels.tolist()
    ([100, 100], [0, 1])
    >>> simulate(dev, [[1]], 0.1, 20000, random_state=0).same_rate.round(2).tolist()
    [0.97]
    """
    device = _as_device(device)
    site = device.default_site if site is None else _check_site(site)
    if site == "wire" and type(device) is ProtectedNBDevice:
        return _simulate_nb_wire(device, X, eps, n_trials, random_state=random_state, y=y,
                                 n_jobs=n_jobs, progress=progress)
    n_trials = _n_trials(n_trials)
    _check_rows(len(X) if hasattr(X, "__len__") else 1, n_trials)
    frames = device.encode(X)
    clean = _clean_labels(device, frames)
    t = clean.shape[0]
    _check_rows(t, n_trials)
    stream, n_sym = _stream(device, frames, site)
    fault = BSC(eps)
    fault._check_width(stream.shape[1])
    if y is not None:
        y = _labels(_check_labels(y), t, "y")
    ticker = Ticker(progress, t * n_trials)
    root = seed_sequence(random_state)
    same, correct = _bits_point(device, stream, clean, y, fault, root, n_trials, n_sym, site,
                                n_jobs, ticker)
    ticker(t * n_trials)
    if root is random_state:         # the caller's SeedSequence moves on, as spawn moved it
        _plan(t, n_trials, stream.shape[1], root).advance_root()
    eps_bits = np.full(stream.shape[1], fault.eps) if isinstance(fault.eps, float) \
        else np.array(fault.eps, np.float64)
    eps_bits.flags.writeable = False
    return SimulationResult(same, clean, n_trials, eps_bits, correct)
