"""Seeded fault-injection campaigns and simulations: the one engine over the device contract.

:func:`run_campaign` sweeps one parameter of a fault model
(:mod:`firmware_sim.faults`) over a grid, runs ``n_trials`` independent
trials per point of ``X`` at every grid value (each grid value with its own
child of one ``SeedSequence``), and reports the same-classification rate
(the label equals the device's clean label) and, given ``y``, the accuracy,
each with a Wilson confidence interval. :class:`~firmware_sim.engine.CampaignResult`
writes and reads the JSON report. :func:`simulate` is the same engine with a
binary symmetric channel (:class:`~firmware_sim.faults.BSC`, the one BSC
sampler) at one site, for every kind, seeded by ``random_state`` itself.

The device is any :class:`~firmware_sim.contract.BaseDevice` (or what
:func:`firmware_sim.load` opens: a path, bytes or a ``Container``); the
engine uses the device contract only (:mod:`firmware_sim.engine.streams`).
Faults act where a real device is hit (``site``,
:data:`firmware_sim.contract.SITES`):

* ``site="wire"``: bit faults on the frames' bits on the wire
  (int16 frames as 16 bits each, least significant first);
* ``site="intermediate"``: bit faults on the device's intermediate results
  (``device.stage(frames)``, then ``device.finish``): noisy computation;
* image faults (``ParameterUpset``) on the stored image: each trial loads
  the faulty image with :func:`firmware_sim.load` and re-runs it on the
  clean host's frames (:mod:`firmware_sim.engine.image`; with a
  :class:`~firmware_sim.faults.Compose`, its bit faults then hit ``site`` of
  that faulty device).

``site=None`` takes ``device.default_site`` (the noise each kind is designed
for). A kind computing N-ary symbols at a site (``stage_symbols = N > 2``)
gets symbol events (:mod:`firmware_sim.engine.runner`); only faults with
:attr:`~firmware_sim.faults.Fault.acts_on_symbols` are accepted there.

Fast paths are the kinds' own
(:meth:`~firmware_sim.contract.BaseDevice.bit_fault_runner`: same draws and
counts as the plain path, tested equal); where the batches run is an
executor (:mod:`firmware_sim.engine.executors`).

Imports numpy only (analytic predictions live in ``export.analytics``,
printing and plotting in ``export.report``).
"""

import itertools
import math
import time
from numbers import Integral

import numpy as np

from .. import _limits
from .._limits import check_allocation
from ..errors import DeviceError
from ..faults import BSC, Fault
from .batches import Ticker, plan_batches, seed_sequence
from .executors import BitJob, check_client, executor_for
from .image import image_point
from .report import CampaignPoint, CampaignResult, SimulationResult, wilson_interval
from .streams import as_device, check_labels, check_n_trials, check_rows, check_site, \
    clean_labels, device_info, stream

__all__ = ["run_campaign", "simulate"]


def run_campaign(device, X, fault, param=None, grid=None, n_trials=1000, random_state=0, y=None,
                 site=None, confidence=0.99, progress=None, n_jobs=None, client=None,
                 executor=None):
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
    executor : firmware_sim.engine.Executor, optional
        Where the bit-fault batches run (replaces ``n_jobs`` and ``client``:
        :class:`~firmware_sim.engine.ThreadExecutor`,
        :class:`~firmware_sim.engine.DaskExecutor` or your own); the counts
        do not depend on it.

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
    DeviceError
        Bad ``n_trials``, ``grid`` without ``param`` (or the reverse),
        unknown parameter, ``y`` of the wrong length.
    SizeLimitError
        A grid whose results would exceed the size limit, or more (point,
        trial) rows than an int64 counts (a ``DeviceError``, so a ``ValueError``).

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
    device = as_device(device)
    site = device.default_site if site is None else check_site(site)
    image = fault.target in ("image", "mixed")
    n_trials = check_n_trials(n_trials)
    if (param is None) != (grid is None):
        raise DeviceError("give param and grid together (or neither for a single point)")
    n_hint = len(X) if hasattr(X, "__len__") else 1        # the points, before encode(X)
    check_rows(n_hint, n_trials)
    grid = [None] if param is None else _grid_values(grid, n_hint)
    if not grid:
        raise DeviceError("grid must have at least one value")
    faults = [fault if v is None else fault.with_params(**{param: v}) for v in grid]
    if executor is None:
        if client is not None:
            check_client(client)            # before any work
        executor = executor_for(n_jobs, client)
    seed = random_state
    if isinstance(seed, bool) or not isinstance(seed, (Integral, np.integer)) or seed < 0:
        raise DeviceError(f"random_state must be a non-negative integer (the root of the "
                          f"campaign's SeedSequence); got {seed!r}")
    if not 0.0 < float(confidence) < 1.0:
        raise DeviceError(f"confidence must be in (0, 1); got {confidence}")

    frames = device.encode(X)
    clean = clean_labels(device, frames)
    t = clean.shape[0]
    check_rows(t, n_trials)
    rows, n_sym = stream(device, frames, site)
    if n_sym > 2 and not fault.acts_on_symbols:
        raise DeviceError(f"{type(device).__name__} computes {n_sym}-ary symbols at site "
                          f"{site!r}: only additive bit faults (bsc, burst) have a symbol "
                          "meaning (an event replaces the symbol by a uniformly random other "
                          "one); got " + repr(fault))
    width = rows.shape[1]
    if y is not None:
        y = check_labels(y, t)
    for f in faults:
        f.check_width(width)
    children = np.random.SeedSequence(int(seed)).spawn(len(grid))
    job = BitJob(device, X, y, n_trials, site, rows, n_sym, clean)
    if not image:
        executor.start(job)

    points = []
    per_value = t * n_trials
    ticker = Ticker(progress, len(grid) * per_value)
    for k, (value, f) in enumerate(zip(grid, faults)):
        t0 = time.perf_counter()
        text = (f"{param}={value:g}" if isinstance(value, (int, float)) and
                not isinstance(value, bool) else f"{param}={value}") if param is not None \
            else ""
        text = f"{text} ({k + 1}/{len(grid)})" if len(grid) > 1 else text

        def tick(rows_done, _base=k * per_value, _text=text):
            ticker(_base + rows_done, _text)

        if image:
            rng = np.random.default_rng(children[k])
            same, correct, refused = image_point(device, frames, clean, y, f, rng, n_trials,
                                                 site, tick)
            ci_n = n_trials
        else:
            same, correct = _bit_counts(executor, job, f, children[k], tick)
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
                          fault=fault.to_dict(), device=device_info(device), points=points)


def _bit_counts(executor, job, fault, seed, progress=None):
    """``(same, correct or None)`` of one bit fault over every seeded batch of the
    job, wherever the executor runs them."""
    same, correct = executor.count(job, fault, seed, progress)
    return same, (None if job.y is None else correct)


#: Bytes a grid value's result holds per point (``same_per_point``: a Python
#: int in a list) and in all (the fault, its seed, the point's record).
_POINT_BYTES, _VALUE_BYTES = 36, 4096


def _grid_values(grid, t):
    """``list(grid)``, its size checked first: the results of a grid value (a
    record and a count per point) are priced against the size limit before
    any fault is built or seed spawned (an iterator is read one value past the
    limit at most)."""
    per_value = _VALUE_BYTES + _POINT_BYTES * int(t)
    try:
        n = len(grid)
    except TypeError:
        grid = list(itertools.islice(iter(grid), _limits.MAX_ALLOCATION_BYTES // per_value + 1))
        n = len(grid)
    check_allocation(f"grid of {n:,} values", n * per_value,
                     what=f"the campaign's results ({int(t):,} per-point counts per value)",
                     hint="use fewer grid values or fewer points")
    return list(grid)



def simulate(device, X, eps, n_trials, random_state=None, y=None, site=None, n_jobs=None,
             progress=None, executor=None):
    """Run every point through a binary symmetric channel ``n_trials`` times.

    One engine for every model kind: ``frames = device.encode(X)``, each
    bit of the stream at ``site`` flips with probability ``eps``, the rest of
    the device runs on the noisy stream, and each trial's label is compared
    with the clean label (and with ``y`` when given). It is the campaign
    engine with :class:`~firmware_sim.faults.BSC` at one point (same sampler,
    fast paths and executors), seeded by ``random_state`` itself: with
    ``random_state = SeedSequence(r).spawn(1)[0]`` it counts exactly what
    ``run_campaign(device, X, BSC(eps), n_trials=..., random_state=r)`` does.

    Parameters
    ----------
    device : Device, Container, path or bytes
    X : array-like
        Points, what ``device.encode`` takes.
    eps : float or array-like
        Flip probability in [0, 1]: one for every bit, or one per position of
        the stream; a kind may take other shapes
        (:meth:`~firmware_sim.contract.BaseDevice.channel_eps`: protected
        naive Bayes at the wire takes one per feature, applied to each of its
        copies). On an N-ary stream, the probability that a symbol is
        replaced by a uniformly random other one.
    n_trials : int
        Independent trials per point (>= 1).
    random_state : None, int, SeedSequence or numpy Generator, optional
    y : array-like of int, shape (t,), optional
        True labels (class indices); ``correct`` then counts trials labelled ``y``.
    site : {"wire", "intermediate"}, optional
        Default ``device.default_site`` (see :mod:`firmware_sim.engine.campaign`).
    n_jobs : int, optional
        Threads (None: numba's thread count; -1: every CPU); the result does
        not depend on it.
    progress : callable, optional
        ``progress(done, total)`` between batches (about ten times a second
        at most, and at the end), in the calling thread: ``done`` of ``total
        = t * n_trials`` (point, trial) inferences. An exception it raises
        (``KeyboardInterrupt`` included) stops the run, threads too.
    executor : firmware_sim.engine.Executor, optional
        Where the batches run (default ``ThreadExecutor(n_jobs)``; a
        :class:`~firmware_sim.engine.DaskExecutor` runs them on a cluster);
        the result does not depend on it.

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
    device = as_device(device)
    site = device.default_site if site is None else check_site(site)
    n_trials = check_n_trials(n_trials)
    check_rows(len(X) if hasattr(X, "__len__") else 1, n_trials)
    if executor is None:
        executor = executor_for(n_jobs)
    frames = device.encode(X)
    clean = clean_labels(device, frames)
    t = clean.shape[0]
    check_rows(t, n_trials)
    rows, n_sym = stream(device, frames, site)
    width = rows.shape[1]
    fault = BSC(device.channel_eps(eps, site, width))
    fault.check_width(width)
    if y is not None:
        y = check_labels(y, t)
    job = BitJob(device, X, y, n_trials, site, rows, n_sym, clean)
    executor.start(job)
    ticker = Ticker(progress, t * n_trials)
    root = seed_sequence(random_state)
    same, correct = _bit_counts(executor, job, fault, root, ticker)
    ticker(t * n_trials)
    if root is random_state:         # the caller's SeedSequence moves on, as spawn moved it
        plan_batches(t, n_trials, width, root).advance_root()
    eps_bits = np.full(width, fault.eps) if isinstance(fault.eps, float) \
        else np.array(fault.eps, np.float64)
    eps_bits.flags.writeable = False
    return SimulationResult(same, clean, n_trials, eps_bits, correct)
