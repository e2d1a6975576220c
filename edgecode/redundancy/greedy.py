"""Greedy redundancy allocation (seed 000, Algorithm 2) at any feature count.

Each step adds one repetition unit (two copies) to the feature whose unit
lowers the mean change probability ``1 - SCP`` over the planning points the
most.  Because ``1 - SCP`` is multilinear in the flip probabilities, the gain
of feature j is exactly

    gain_j = (eps_j(r_j) - eps_j(r_j + 1)) * mean_x I_j(x),

with ``I_j`` its influence (:mod:`edgecode.redundancy.influence`): one pass
computes every candidate's gain, where a naive greedy evaluates the SCP n
times per step.  A step changes only the stepped feature's eps, from e to
e' < e; every other feature's influence at every point is a window mass of
the flip-sum law without it, which that step multiplies by a factor in
``[e' / e, (1 - e') / (1 - e)]``.  So a stale gain has a certified upper
bound, and candidates are evaluated lazily: the one with the best bound is
refreshed until a fresh gain beats every other bound.  The result is the
plan the eager greedy would pick (same ties: lowest feature index).
"""

import math
import time
import warnings
from dataclasses import dataclass, field

import numpy as np

from .._config import (PLAN_CERTIFY_EXACT_MAX, PLAN_EXACT_MAX_FEATURES, PLAN_GRID_RESOLUTION,
                       PLAN_REFRESH_BATCH, PLAN_SERIES_RTOL, PLAN_WARN_SECONDS)
from .._validation import check_eps, check_int, check_margin_deltas
from .. import scp as _scp
from .influence import make_engine, resolve_influence_method
from .repetition import _budget_units, repetition_error

__all__ = ["allocate_greedy", "Allocation", "mean_scp", "certify_plan", "estimate_plan_seconds",
           "PLAN_METHODS", "SCP_METHODS", "PlanningCostWarning"]

#: Lazy candidate evaluation (tests switch it off to compare with the eager greedy).
_LAZY = True

#: relative slack of the lazy bounds for the truncation of each influence
_SLACK = 4.0 * PLAN_SERIES_RTOL

#: ``method`` values of :func:`allocate_greedy`.
PLAN_METHODS = ("auto", "exact", "grid", "approx", "bounds")


class PlanningCostWarning(UserWarning):
    """A plan is expected to take long; the message gives the estimate."""


def _change_exact(margin, deltas, eps, **kw):
    return _scp.scp_exact(margin, deltas, eps, return_change=True, **kw)


def _change_approx(margin, deltas, eps, **kw):
    return _scp.scp_approx(margin, deltas, eps, return_change=True, **kw)


def _change_bounds(margin, deltas, eps, **kw):
    return 1.0 - _scp.scp_bounds(margin, deltas, eps, **kw)[0]


#: SCP evaluators, as functions returning the change probability 1 - SCP per
#: point: used by :func:`mean_scp` and by the evaluate-every-candidate greedy
#: of methods ``approx`` (the seed's Algorithm 1) and ``bounds`` (optimises
#: the certified lower bound).
SCP_METHODS = {"exact": _change_exact, "approx": _change_approx, "bounds": _change_bounds}


def _resolve_method(method, n):
    if method == "auto":
        return "exact" if n <= PLAN_EXACT_MAX_FEATURES else "grid"
    if method not in PLAN_METHODS:
        raise ValueError(f"method must be one of {list(PLAN_METHODS)}; got {method!r}")
    if method in ("exact", "grid"):
        return resolve_influence_method(method, n)
    return method


def mean_scp(margin, deltas, eps, repetitions=None, method="auto", **method_options):
    """Mean SCP over the points when feature j is protected by ``2 r_j + 1`` copies.

    The per-feature channel ``eps`` becomes ``repetition_error(eps_j, r_j)``.
    ``method``: ``exact``, ``approx`` or ``bounds`` (the certified lower
    bound); ``auto`` is exact up to 20 features, else bounds.

    Examples
    --------
    >>> from edgecode.redundancy import mean_scp
    >>> round(mean_scp([1.0], [[-2.0, 0.5]], 0.1, [1, 0]), 6)   # 1 - repetition_error(0.1, 1)
    0.972
    """
    margin, deltas = check_margin_deltas(margin, deltas)
    n = deltas.shape[1]
    eps = check_eps(eps, n)
    r = np.zeros(n, np.int64) if repetitions is None else np.asarray(repetitions, np.int64)
    if r.shape != (n,) or np.any(r < 0):
        raise ValueError(f"repetitions must be {n} non-negative integers; got {repetitions!r}")
    if method == "auto":
        method = "exact" if n <= PLAN_EXACT_MAX_FEATURES else "bounds"
    if method not in SCP_METHODS:
        raise ValueError(f"method must be one of {['auto', *SCP_METHODS]}; got {method!r}")
    fn = SCP_METHODS[method]
    return 1.0 - float(fn(margin, deltas, repetition_error(eps, r), **method_options).mean())


@dataclass
class Allocation:
    """Result of a redundancy plan.

    Attributes
    ----------
    repetitions : ndarray of shape (n_features,)
        r_j; feature j is sent ``2 r_j + 1`` times.
    mean_scp : float
        Mean SCP over the planning points under the plan: exact where the
        certificate is exact; otherwise the planning method's value (the grid
        estimate for ``grid``, the seed's approximation for ``approx``, the
        certified lower bound for ``bounds``) moved into the certified
        interval when it falls outside.
    history : list of (feature, mean_scp)
        One entry per greedy step: the feature that got a unit and the mean
        SCP after it (as ``mean_scp``).  Empty for a uniform plan.
    method : str
        The planning method actually used (``auto`` resolved).
    budget_bits : int
    eps : ndarray of shape (n_features,)
        The per-copy channel flip probabilities planned for.
    effective_eps : ndarray of shape (n_features,)
        Probability that a feature is wrong after majority decoding.
    scp_lower, scp_upper : float
        Certified interval for the mean SCP of the plan (equal when exact;
        NaN when the plan was not certified).
    certified_by : str or None
        ``"exact"`` (``scp_exact``) or ``"bounds"`` (``scp_bounds``).
    stats : dict
        Work done: ``influence_columns`` (feature-influence evaluations over
        all points; the eager greedy needs ``n * steps``), ``active_points``
        (points whose class can change), ``grid_cells``, ``plan_seconds``,
        ``certify_seconds``.
    """

    repetitions: np.ndarray
    mean_scp: float
    history: list = field(default_factory=list)
    method: str = "exact"
    budget_bits: int = 0
    eps: np.ndarray = None
    effective_eps: np.ndarray = None
    scp_lower: float = float("nan")
    scp_upper: float = float("nan")
    certified_by: str = None
    stats: dict = field(default_factory=dict)

    @property
    def bits_per_feature(self):
        """Transmitted bits per feature, ``2 r_j + 1``."""
        return 2 * self.repetitions + 1

    @property
    def total_bits(self):
        """Bits sent per inference: n plus the redundancy spent."""
        return int(self.bits_per_feature.sum())


def certify_plan(margin, deltas, effective_eps):
    """Certified interval ``(lower, upper, how)`` for the mean SCP under ``effective_eps``.

    Exact (``scp_exact``, lower == upper) when at most ``PLAN_CERTIFY_EXACT_MAX``
    features can flip and move a margin; else the means of ``scp_bounds``.
    """
    margin, deltas = check_margin_deltas(margin, deltas)
    eps = check_eps(effective_eps, deltas.shape[1], name="effective_eps")
    live = (eps > 0) & (deltas != 0).any(axis=0)
    if live.sum() <= PLAN_CERTIFY_EXACT_MAX:
        cols = np.flatnonzero(live)
        if cols.size == 0:
            return 1.0, 1.0, "exact"
        change = _scp.scp_exact(margin, deltas[:, cols], eps[cols], return_change=True)
        v = 1.0 - float(change.mean())
        return v, v, "exact"
    lo, up = _scp.scp_bounds(margin, deltas, eps)
    return float(lo.mean()), float(up.mean()), "bounds"


#: seconds per elementary operation on one core of the benchmark machine
#: (``benchmarks/bench_planner.py``); only used for warnings and CLI notes.
_SECONDS_PER_OP = {
    "subset": 4e-9,          # exact: one subset sum (with mask) per point
    "fft_cell": 1.5e-9,      # grid: inverse FFT per cell and log2(cells)
    "cell": 1e-9,            # grid: spectrum update and running sum per cell
    "influence": 5e-8,       # grid: one influence (point, feature)
    "bounds_feature": 2e-5,  # scp_bounds: one (point, feature) at the default resolution
    "approx_feature": 5e-6,  # scp_approx (k = 50): one (point, feature)
}


def estimate_plan_seconds(t, n, units, method, resolution=PLAN_GRID_RESOLUTION):
    """Rough wall time of :func:`allocate_greedy` on one core, for a warning or a CLI note.

    ``exact``: a meet in the middle per point and step; ``grid``: one
    inverse FFT and spectrum update per point and step plus the influences
    it re-evaluates (counted as 60% of all, what lazy evaluation leaves on
    dense synthetic data; far fewer on real data); ``approx`` / ``bounds``:
    n SCP evaluations per step.  Certification included.  Upper-side
    estimates: points whose class cannot change are counted.

    Examples
    --------
    >>> from edgecode.redundancy import estimate_plan_seconds
    >>> bool(estimate_plan_seconds(500, 1024, 1024, "grid") < 120)
    True
    """
    c = _SECONDS_PER_OP
    if n <= PLAN_CERTIFY_EXACT_MAX:
        certify = t * 2.0 ** ((n + 1) // 2) * n * c["subset"]
    else:
        certify = t * n * c["bounds_feature"]
    if method == "exact":
        half = 2.0 ** ((min(n, 64) + 1) // 2)
        return t * 2 * half * n * c["subset"] * (units + 1) + certify
    if method == "grid":
        per_step = t * (resolution * math.log2(resolution) * c["fft_cell"]
                        + 2 * resolution * c["cell"] + 0.6 * n * c["influence"])
        build = t * min(n, 256) * resolution / 2 * c["cell"] * 4
        return build + per_step * (units + 1) + certify
    per_eval = c["bounds_feature"] if method == "bounds" else c["approx_feature"]
    return t * n * per_eval * n * (units + 1) + certify


def allocate_greedy(margin, deltas, eps, budget_bits, method="auto", progress=None, *,
                    resolution=PLAN_GRID_RESOLUTION, certify=True, **method_options):
    """Greedy redundancy allocation (seed 000, Algorithm 2), any number of features.

    Starting from no protection, each step adds one repetition unit (two more
    copies) to the feature whose extra unit raises the mean SCP over the t
    points the most, until ``budget_bits / 2`` units are spent.  Ties go to
    the lowest feature index.

    Parameters
    ----------
    margin : array-like of shape (t,)
        Log-odds S(x) of the planning points.
    deltas : array-like of shape (t, n)
        Flip effects D_j(x).
    eps : float or array-like of shape (n,)
        Per-copy flip probability of each feature's channel, in [0, 1/2).
    budget_bits : int
        Redundancy bits to spend (even; n bits are always sent on top).
    method : {"auto", "exact", "grid", "approx", "bounds"}, default="auto"
        How the gains are computed:

        * ``exact``: exact influences by meet in the middle, O(2**(n/2) n)
          per point and step; n <= 30.
        * ``grid``: influences from a discretised flip-sum distribution per
          point (``resolution`` cells), updated incrementally, candidates
          evaluated lazily; O(t n resolution) once plus O(t resolution) per
          step.  Any n (thousands of features in seconds to minutes).
        * ``approx``: the seed's own method, every candidate scored by its
          Algorithm 1 (``k``, ``shift``, ``hybrid`` options); n evaluations
          per step, slow beyond a few dozen features.
        * ``bounds``: every candidate scored by the certified lower bound of
          ``scp_bounds``; n evaluations per step, slow.
        * ``auto``: ``exact`` up to ``PLAN_EXACT_MAX_FEATURES`` (20)
          features, where it is as cheap as the grid and has no
          discretisation, else ``grid``.  ``Allocation.method`` says which.
    progress : callable or None
        Called as ``progress(step, n_steps, feature, mean_scp)`` after each step.
    resolution : int, default=PLAN_GRID_RESOLUTION (2048)
        Grid cells per point (``grid`` only).
    certify : bool, default=True
        Compute a certified interval for the plan's mean SCP
        (``scp_lower``, ``scp_upper``): exact when at most 24 features can
        flip, ``scp_bounds`` otherwise.
    **method_options
        Passed to the SCP function of ``approx`` (``k``, ``shift``,
        ``hybrid``) and ``bounds`` (``resolution``).

    Returns
    -------
    Allocation

    Raises
    ------
    ValueError
        On bad inputs (NaN, shapes, eps outside [0, 1/2)), t = 0, an odd or
        negative budget, or a budget that cannot be spent (every feature has
        eps_j = 0 or D_j = 0 at every point).

    Warns
    -----
    PlanningCostWarning
        Before a run expected to take more than ``PLAN_WARN_SECONDS``.

    Notes
    -----
    ``exact`` and ``grid`` use the exact gain identity
    ``gain_j = (eps_j(r_j) - eps_j(r_j + 1)) mean_x I_j(x)`` (see the module
    docstring) with lazy evaluation; ``exact`` gives the plan the seed's
    Algorithm 2 gives with exact SCP.  ``grid`` is an approximation (the
    flip effects are rounded to 1/resolution of each point's range); the
    returned plan is certified afterwards, so what is reported is guaranteed.

    Examples
    --------
    >>> import numpy as np
    >>> from edgecode.redundancy import allocate_greedy
    >>> margin = np.array([1.0, 2.0])
    >>> deltas = np.array([[-3.0, -0.5], [-3.0, -0.5]])  # feature 0 decides
    >>> plan = allocate_greedy(margin, deltas, 0.1, budget_bits=4, method="exact")
    >>> plan.repetitions
    array([2, 0])
    >>> bool(plan.scp_lower <= plan.mean_scp <= plan.scp_upper)
    True
    """
    margin, deltas = check_margin_deltas(margin, deltas)
    t, n = deltas.shape
    if t == 0:
        raise ValueError("margin and deltas need at least one planning point; got t = 0")
    eps = check_eps(eps, n)
    units = _budget_units(budget_bits)
    if not isinstance(certify, (bool, np.bool_)):
        raise TypeError(f"certify must be True or False; got {certify!r}")
    resolution = check_int(resolution, name="resolution", low=16, high=2 ** 24)
    name = _resolve_method(method, n)
    useful = (eps > 0) & (deltas != 0).any(axis=0)
    if units and not useful.any():
        raise ValueError(
            f"budget_bits={budget_bits} cannot be spent: every feature has eps_j = 0 or a "
            "zero flip effect D_j at every planning point, so no repetition changes the SCP")
    expected = estimate_plan_seconds(t, n, units, name, resolution)
    if expected > PLAN_WARN_SECONDS:
        warnings.warn(f"allocate_greedy: {name} plan of {units} units over n = {n} features and "
                      f"t = {t} points is expected to take about {expected:.0f} s on one core",
                      PlanningCostWarning, stacklevel=2)
    t0 = time.perf_counter()
    if name in ("exact", "grid"):
        engine = make_engine(name, margin, deltas, eps, resolution)
        r, history, stats = _greedy_by_influence(engine, eps, units, progress)
        value = 1.0 - float(engine.change.mean())
    else:
        r, history, value = _greedy_by_evaluation(margin, deltas, eps, units, progress,
                                                  SCP_METHODS[name], method_options)
        stats = {"influence_columns": 0, "scp_evaluations": n * units + 1}
    stats["plan_seconds"] = time.perf_counter() - t0
    err = repetition_error(eps, r)
    lower = upper = float("nan")
    how = None
    if certify:
        t1 = time.perf_counter()
        lower, upper, how = certify_plan(margin, deltas, err)
        stats["certify_seconds"] = time.perf_counter() - t1
        if how == "exact":
            value = lower  # report the certifier's (independent) exact value
        else:
            value = min(max(value, lower), upper)  # the truth is in [lower, upper]
    return Allocation(r, value, history, name, 2 * units, eps, err, lower, upper, how, stats)


def _greedy_by_influence(engine, eps, units, progress):
    """Lazy greedy over exact gains ``drop_j * mean_x I_j(x)`` (module docstring)."""
    n = eps.shape[0]
    t = engine.t
    r = np.zeros(n, np.int64)
    err = np.asarray(repetition_error(eps, r), dtype=np.float64)
    nxt = np.asarray(repetition_error(eps, r + 1), dtype=np.float64)
    drop = err - nxt
    total, pos, neg = engine.evaluate(np.arange(n))    # sums over the points
    evaluated = n
    mean, pos, neg = total / t, pos / t, neg / t       # pos, neg: window masses
    fresh = np.ones(n, bool)
    grow = np.ones(n)                              # bound factors since the last refresh
    shrink = np.ones(n)
    history = []
    for step in range(units):
        first_pass = True
        while True:
            # the influences are computed to PLAN_SERIES_RTOL relative (and
            # PLAN_SERIES_TOL absolute) per point: the bounds carry that slack
            bound = drop * ((grow * pos - shrink * neg) + _SLACK * (pos + neg) + 1e-14)
            key = np.where(fresh, drop * mean, bound)
            i = int(np.argmax(key))
            if fresh[i]:
                break
            stale = np.flatnonzero(~fresh)
            if engine.refresh_all or not _LAZY:
                batch = stale
            else:
                # one pass over the points costs about the same for a few
                # features or many: first the best few bounds, then every
                # stale candidate whose bound still beats the best fresh gain
                best_fresh = key[fresh].max() if fresh.any() else -np.inf
                cand = stale[key[stale] >= best_fresh]
                if first_pass and cand.size > PLAN_REFRESH_BATCH:
                    order = np.argsort(-key[cand], kind="stable")
                    cand = cand[order[:PLAN_REFRESH_BATCH]]
                first_pass = False
                batch = np.sort(cand)
            b_total, b_pos, b_neg = engine.evaluate(batch)
            evaluated += batch.size
            mean[batch] = b_total / t
            pos[batch] = b_pos / t
            neg[batch] = b_neg / t
            fresh[batch] = True
            grow[batch] = 1.0
            shrink[batch] = 1.0
        j = i
        e_old, e_new = err[j], nxt[j]
        engine.step(j, e_new)
        r[j] += 1
        err[j] = e_new
        nxt[j] = repetition_error(eps[j], r[j] + 1)
        drop[j] = err[j] - nxt[j]
        # every other influence is a window mass multiplied by a factor in
        # [e'/e, (1-e')/(1-e)]; feature j's own influence does not change
        grow *= (1.0 - e_new) / (1.0 - e_old)
        shrink *= (e_new / e_old) if e_old > 0 else 1.0
        fresh[:] = False
        fresh[j] = True
        grow[j] = shrink[j] = 1.0
        value = 1.0 - float(engine.change.mean())
        history.append((j, value))
        if progress is not None:
            progress(step + 1, units, j, value)
    stats = {"influence_columns": int(evaluated), "eager_columns": int(n * (units + 1)),
             "active_points": int(engine.n_active), "grid_cells": int(getattr(engine, "cells", 0))}
    return r, history, stats


def _greedy_by_evaluation(margin, deltas, eps, units, progress, fn, options):
    """Algorithm 2 as written: score every candidate by a full SCP evaluation."""
    n = deltas.shape[1]
    r = np.zeros(n, dtype=np.int64)
    err = repetition_error(eps, r)
    current = float(fn(margin, deltas, err, **options).mean())
    history = []
    for step in range(units):
        best_j, best = -1, np.inf
        for j in range(n):
            if eps[j] == 0.0:
                continue  # a noiseless feature gains nothing
            trial = err.copy()
            trial[j] = repetition_error(eps[j], r[j] + 1)
            value = float(fn(margin, deltas, trial, **options).mean())
            if value < best:
                best_j, best = j, value
        r[best_j] += 1
        err[best_j] = repetition_error(eps[best_j], r[best_j])
        current = best
        history.append((best_j, 1.0 - best))
        if progress is not None:
            progress(step + 1, units, best_j, 1.0 - best)
    return r, history, 1.0 - current
