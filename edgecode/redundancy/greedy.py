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
from .._validation import check_allocation, check_eps, check_int, check_margin_deltas
from .. import scp as _scp
from .influence import GridEngine, make_engine, resolve_influence_method
from .repetition import _budget_units, repetition_error

__all__ = ["allocate_greedy", "Allocation", "mean_scp", "certify_plan", "score_allocation",
           "estimate_plan_seconds", "max_useful_units", "resolve_plan_method", "PLAN_METHODS",
           "SCP_METHODS", "PlanningCostWarning"]

#: Lazy candidate evaluation (tests switch it off to compare with the eager greedy).
_LAZY = True

#: relative slack of the lazy bounds for the truncation of each influence
_SLACK = 4.0 * PLAN_SERIES_RTOL

#: ``method`` values of :func:`allocate_greedy`.
PLAN_METHODS = ("auto", "exact", "grid", "approx", "bounds")

#: bytes of one ``Allocation.history`` entry (a tuple of an int and a float in a list)
_HISTORY_ENTRY_BYTES = 120

#: why a plan stopped before its budget was spent (``Allocation.stop_reason``)
STOP_ZERO = "1-SCP is 0 in double precision"
STOP_ROUNDING = "no unit can raise the mean SCP by a representable amount"
STOP_NO_GAIN = "no unit raises the mean SCP"


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


def resolve_plan_method(method, n):
    """The influence engine :func:`allocate_greedy` uses for ``method`` on ``n`` features.

    ``"auto"`` is ``"exact"`` up to ``PLAN_EXACT_MAX_FEATURES`` (20) features
    and ``"grid"`` above; ``"exact"`` and ``"grid"`` are checked against the
    feature count; ``"approx"`` and ``"bounds"`` are returned as they are.

    Examples
    --------
    >>> from edgecode.redundancy import resolve_plan_method
    >>> resolve_plan_method("auto", 16), resolve_plan_method("auto", 180)
    ('exact', 'grid')
    """
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
        ``certify_seconds``, ``max_useful_units`` (the most units any plan
        could spend usefully, :func:`max_useful_units`).
    unused_bits : int
        Redundancy bits of ``budget_bits`` left unspent because the plan
        stopped early (0 when the whole budget was spent).  The plan sends
        ``budget_bits - unused_bits`` redundancy bits.
    stop_reason : str or None
        Why the plan stopped early, None when it spent its budget: ``"1-SCP is
        0 in double precision"`` (the mean SCP is 1.0 as a float), ``"no unit
        can raise the mean SCP by a representable amount"`` (the best gain is
        below half a unit in the last place of the mean SCP) or ``"no unit
        raises the mean SCP"`` (no gain is positive).  The step it stopped at
        is ``len(history)``.
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
    unused_bits: int = 0
    stop_reason: str = None

    @property
    def stopped_early(self):
        """True when the plan stopped before spending its budget (``stop_reason``)."""
        return self.stop_reason is not None

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


def score_allocation(margin, deltas, effective_eps, resolution=None):
    """Mean SCP under ``effective_eps``: ``(estimate, lower, upper, how)``.

    Exact (:func:`certify_plan`, ``how="exact"``, all three equal) when at most
    ``PLAN_CERTIFY_EXACT_MAX`` features can flip and move a margin; otherwise
    the grid engine's estimate (``resolution`` cells per point, default
    ``PLAN_GRID_RESOLUTION``) clipped into the certified interval of
    :func:`edgecode.scp.scp_bounds` (``how="bounds"``), computed 256 points at
    a time so that Ctrl-C is answered promptly. ``edgecode plan`` scores the
    none, uniform and greedy allocations with it.

    Examples
    --------
    >>> from edgecode.redundancy import repetition_error, score_allocation
    >>> est, lo, up, how = score_allocation([1.0], [[-2.0, 0.5]], repetition_error(0.1, [1, 0]))
    >>> round(est, 6), how
    (0.972, 'exact')
    """
    margin, deltas = check_margin_deltas(margin, deltas)
    eps = check_eps(effective_eps, deltas.shape[1], name="effective_eps")
    resolution = PLAN_GRID_RESOLUTION if resolution is None else resolution
    live = (eps > 0) & (deltas != 0).any(axis=0)
    if live.sum() <= PLAN_CERTIFY_EXACT_MAX:
        lo, up, how = certify_plan(margin, deltas, eps)
        return lo, lo, up, how
    est = 1.0 - float(GridEngine(margin, deltas, eps, resolution).change.mean())
    lows, ups = [], []
    for a in range(0, len(margin), 256):
        lo, up = _scp.scp_bounds(margin[a:a + 256], deltas[a:a + 256], eps)
        lows.append(lo)
        ups.append(up)
    lo, up = float(np.concatenate(lows).mean()), float(np.concatenate(ups).mean())
    return min(max(est, lo), up), lo, up, "bounds"


def max_useful_units(eps, useful=None, scp_floor=0.5):
    """Most repetition units per feature that can still raise a mean SCP >= ``scp_floor``.

    A unit on feature j at ``r_j`` units gains at most
    ``eps_j(r_j) - eps_j(r_j + 1) < eps_j(r_j)`` in mean SCP (influences are
    in [-1, 1]); once that is below a quarter of the spacing of float64
    numbers at ``scp_floor``, adding it cannot change the mean SCP's value,
    so a greedy plan stops (:func:`allocate_greedy`) before any feature gets
    more units than returned here.  0 for features that are not ``useful``
    (eps_j = 0 or no flip effect).  The sum bounds the steps of any plan,
    whatever the budget: at eps = 0.2 no feature gets more than 78 units
    (157 copies), at eps = 0.01 more than 11.

    Examples
    --------
    >>> from edgecode.redundancy import max_useful_units
    >>> max_useful_units([0.2, 0.01, 0.0]).tolist()
    [78, 11, 0]
    """
    eps = np.atleast_1d(np.asarray(eps, dtype=np.float64))
    floor = float(np.spacing(np.float64(max(float(scp_floor), 0.0)))) / 4.0
    out = np.zeros(eps.shape[0], np.int64)
    live = eps > 0 if useful is None else (np.asarray(useful, bool) & (eps > 0))
    values, inverse = np.unique(eps[live], return_inverse=True)
    caps = np.empty(values.shape[0], np.int64)
    for i, e in enumerate(values):          # smallest r with eps(r) <= floor: bisection
        lo, hi = 0, 1
        while repetition_error(e, hi) > floor:
            lo, hi = hi, 2 * hi
        while lo < hi:
            mid = (lo + hi) // 2
            if repetition_error(e, mid) > floor:
                lo = mid + 1
            else:
                hi = mid
        caps[i] = lo
    out[live] = caps[inverse]
    return out


#: wall seconds per elementary operation on the benchmark machine (2 cores shared
#: with other test runs, numba's default thread count), set between what it
#: measures quiet and busy (busy runs take 1.4-1.9x longer), so that the estimate
#: is within 2x of both (``benchmarks/bench_planner.py --estimate``, table in
#: ``benchmarks/README.md``); only used for warnings and the command line's
#: expected-time line.
_SECONDS_PER_OP = {
    "subset": 1.15e-9,       # exact: one (subset, feature) of a meet in the middle, per point
    "grid_cell": 3.75e-9,    # grid: one step's update of one cell of a point (amortised rebuilds)
    "grid_build": 2.55e-9,   # grid: one (cell, feature group) of a point's first spectrum
    "influence": 7.3e-8,     # grid: one influence (point, feature)
    "bounds_feature": 3.6e-6,  # scp_bounds at the default resolution: one (point, feature + 32)
    "approx_cell": 3e-10,    # scp_approx: one coefficient update (k L^2 n / 2 per point)
}

#: grid engine, lazy evaluation: influences refreshed per step, as a fraction of n,
#: for steps below n / 2, up to 2 n, and after (measured on DNA and synthetic data:
#: 0.28-0.48, 0.6-0.7, and 0.15 over the 11,443 steps of a DNA plan)
_REFRESH = ((0.5, 0.3), (2.0, 0.7), (math.inf, 0.15))

#: a budget beyond ``max_useful_units`` stops, in the measured plans, after
#: 80-87% of those units (house votes, NLTCS, DNA at eps = 0.2)
_USEFUL_FRACTION = 0.85


def _score_seconds(t, n):
    """One certificate of a plan (``certify_plan``): exact up to 24 features, else bounds."""
    c = _SECONDS_PER_OP
    if n <= PLAN_CERTIFY_EXACT_MAX:          # scp_exact: no masks, about half a step
        h1 = n // 2
        return t * (2.0 ** h1 + 2.0 ** (n - h1)) * (n + 4) * c["subset"] / 2
    return t * (n + 32) * c["bounds_feature"]


def _grid_build_seconds(t, n, resolution):
    """The grid engine's first spectra and its first evaluation of all n influences."""
    c = _SECONDS_PER_OP
    return t * min(n, 128) * resolution / 2 * c["grid_build"] + t * n * c["influence"]


def estimate_plan_seconds(t, n, units, method, resolution=PLAN_GRID_RESOLUTION, *, eps=None,
                          extra_scores=0):
    """Expected wall time of :func:`allocate_greedy`, for a warning or the CLI's note.

    ``exact``: one meet in the middle per point and step; ``grid``: the
    first spectra, then per point and step one update of its cells and the
    influences that lazy evaluation refreshes (0.3 n per step below n / 2
    steps, 0.7 n up to 2 n, 0.15 n after); ``approx`` / ``bounds``: n SCP
    evaluations per step.  The certificate is included, and ``extra_scores`` more plans
    scored as ``edgecode plan`` scores its none and uniform rows (a
    certificate each, with the grid's estimate above 24 features).  Points
    whose class cannot change are counted (an upper-side estimate).  With
    ``eps`` (per feature, or one value) a budget beyond
    :func:`max_useful_units` counts 85% of those units: a plan stops before
    them whatever the budget (after 80-87% of them in the measured cases).
    Calibrated on the benchmark machine (``benchmarks/README.md``, "Planner
    time estimates"): within 2x of the measured times there.

    Examples
    --------
    >>> from edgecode.redundancy import estimate_plan_seconds
    >>> bool(estimate_plan_seconds(500, 1024, 1024, "grid") < 120)
    True
    >>> bool(estimate_plan_seconds(435, 16, 5 * 10**8, "exact", eps=0.2) < 60)  # stops early
    True
    """
    t, n, units = int(t), int(n), int(units)
    if eps is not None:   # a plan stops before any feature has more units than is useful
        cap = int(max_useful_units(np.broadcast_to(np.asarray(eps, dtype=np.float64),
                                                   (n,))).sum())
        if units > cap:
            units = math.ceil(_USEFUL_FRACTION * cap)
    c = _SECONDS_PER_OP
    score = _score_seconds(t, n)
    extra = float(extra_scores) * (score + (_grid_build_seconds(t, n, resolution)
                                            if n > PLAN_CERTIFY_EXACT_MAX else 0.0))
    if method == "exact":
        h1 = n // 2
        per_step = t * (2.0 ** h1 + 2.0 ** (n - h1)) * (n + 4) * c["subset"]
        return per_step * (units + 1) + score + extra
    if method == "grid":
        cell = t * resolution * c["grid_cell"]
        steps, done = 0.0, 0
        for upto, fraction in _REFRESH:
            k = max(0, min(units, math.ceil(upto * n) if upto < math.inf else units) - done)
            steps += k * (cell + t * fraction * n * c["influence"])
            done += k
        return _grid_build_seconds(t, n, resolution) + steps + score + extra
    if method == "bounds":
        per_eval = t * (n + 32) * c["bounds_feature"]
    else:
        e = 0.2 if eps is None else float(np.mean(eps))
        rows = min(n, math.ceil(n * e + 12 * math.sqrt(n * e * (1 - e)) + 10))
        per_eval = t * n * 50 * rows * rows / 2 * c["approx_cell"]
    return per_eval * (n * units + 1) + score + extra


def allocate_greedy(margin, deltas, eps, budget_bits, method="auto", progress=None, *,
                    resolution=PLAN_GRID_RESOLUTION, certify=True, **method_options):
    """Greedy redundancy allocation (seed 000, Algorithm 2), any number of features.

    Starting from no protection, each step adds one repetition unit (two more
    copies) to the feature whose extra unit raises the mean SCP over the t
    points the most, until ``budget_bits / 2`` units are spent, or until no
    unit can raise the mean SCP any more: then the plan stops early and says
    so (``Allocation.stop_reason``, ``Allocation.unused_bits``).  Ties go to
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
        Called as ``progress(step, n_steps, feature, mean_scp)`` after each
        step; ``n_steps`` is the number of units the budget pays for, or the
        most any plan can spend usefully when that is smaller (see Notes).
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
        eps_j = 0 or D_j = 0 at every point); before anything is allocated,
        when the engine's state (``resolution`` cells per point: 24 bytes
        each; exact: 16 t n bytes) or the history of the useful steps (120
        bytes each) would exceed ``MAX_ALLOCATION_BYTES``.
    KeyboardInterrupt
        On Ctrl-C: the kernels run in batches of bounded work
        (``BATCH_WORK``), so it is answered within a fraction of a second.

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

    Early stop: a step needs a gain ``g > 0`` with ``mean_scp + g >
    mean_scp`` in float64.  When the mean SCP is 1.0 ("1-SCP is 0 in double
    precision"), when the best gain is below half the spacing of floats at
    the mean SCP ("no unit can raise the mean SCP by a representable
    amount") or when no gain is positive ("no unit raises the mean SCP"), the
    plan stops and keeps the rest of the budget unspent: ``unused_bits``,
    ``stop_reason``, and ``len(history)`` steps.  A unit's gain is at most
    ``eps_j(r_j)``, so no feature ever gets more than
    :func:`max_useful_units` units (78 at eps = 0.2): a budget of 2**62 bits
    costs what a useful one does, in time and memory (the history is priced
    on those steps, never on the budget).

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
    >>> big = allocate_greedy(margin, deltas, 0.1, budget_bits=2**62, method="exact")
    >>> big.stop_reason, big.repetitions, big.unused_bits == 2**62 - 2 * 33
    ('1-SCP is 0 in double precision', array([33,  0]), True)
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
    name = resolve_plan_method(method, n)
    useful = (eps > 0) & (deltas != 0).any(axis=0)
    if units and not useful.any():
        raise ValueError(
            f"budget_bits={budget_bits} cannot be spent: every feature has eps_j = 0 or a "
            "zero flip effect D_j at every planning point, so no repetition changes the SCP")
    cap = max_useful_units(eps, useful)          # for a mean SCP >= 1/2; refined below
    expected = estimate_plan_seconds(t, n, units, name, resolution,
                                     eps=np.where(useful, eps, 0.0))
    if expected > PLAN_WARN_SECONDS:
        warnings.warn(f"allocate_greedy: {name} plan of {min(units, int(cap.sum()))} units over "
                      f"n = {n} features and t = {t} points is expected to take about "
                      f"{expected:.0f} s", PlanningCostWarning, stacklevel=2)
    t0 = time.perf_counter()
    if name in ("exact", "grid"):
        engine = make_engine(name, margin, deltas, eps, resolution)
        start = 1.0 - float(engine.change.mean())
    else:
        engine = None
        change0 = float(SCP_METHODS[name](margin, deltas, eps, **method_options).mean())
        start = 1.0 - change0
    # no plan spends more units than this usefully (whatever the budget): the history
    # is priced on it and the loop never runs past it
    if start < 0.5:
        cap = max_useful_units(eps, useful, scp_floor=start)
    steps = int(min(units, int(cap.sum())))
    check_allocation(f"budget_bits={budget_bits}", _HISTORY_ENTRY_BYTES * steps,
                     what=f"the plan's history (one entry per step, up to {steps:,} steps that "
                     "can still raise the mean SCP)",
                     hint="use a smaller budget_bits")
    if engine is not None:
        r, history, stats, value, reason = _greedy_by_influence(engine, eps, steps, progress,
                                                                start)
    else:
        r, history, value, reason = _greedy_by_evaluation(margin, deltas, eps, steps, progress,
                                                          SCP_METHODS[name], method_options,
                                                          change0)
        stats = {"influence_columns": 0, "scp_evaluations": n * len(history) + 1}
    if reason is None and len(history) < units:
        reason = STOP_ROUNDING      # every feature is at its max_useful_units
    stats["plan_seconds"] = time.perf_counter() - t0
    stats["max_useful_units"] = int(cap.sum())
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
    return Allocation(r, value, history, name, 2 * units, eps, err, lower, upper, how, stats,
                      unused_bits=2 * (units - len(history)), stop_reason=reason)


def _stop(value, gain):
    """Why a step of ``gain`` cannot raise the mean SCP ``value`` (None: it can)."""
    if value >= 1.0:
        return STOP_ZERO
    if not gain > 0.0:
        return STOP_NO_GAIN
    if not value + gain > value:
        return STOP_ROUNDING
    return None


def _greedy_by_influence(engine, eps, units, progress, value):
    """Lazy greedy over exact gains ``drop_j * mean_x I_j(x)`` (module docstring).

    Runs at most ``units`` steps, and stops early when the best gain cannot
    raise the mean SCP ``value`` (:func:`_stop`).  Returns ``(r, history,
    stats, value, reason)``.
    """
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
    reason = None
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
        reason = _stop(value, drop[i] * mean[i])
        if reason is not None:
            break
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
    stats = {"influence_columns": int(evaluated), "eager_columns": int(n * (len(history) + 1)),
             "active_points": int(engine.n_active), "grid_cells": int(getattr(engine, "cells", 0))}
    return r, history, stats, value, reason


def _greedy_by_evaluation(margin, deltas, eps, units, progress, fn, options, change=None):
    """Algorithm 2 as written: score every candidate by a full SCP evaluation.

    ``fn`` returns change probabilities; ``change`` is their mean at ``eps``
    when already known.  At most ``units`` steps; stops early when the best
    candidate cannot raise the mean SCP (the rule of :func:`_stop`).
    Returns ``(r, history, mean_scp, reason)``.
    """
    n = deltas.shape[1]
    r = np.zeros(n, dtype=np.int64)
    err = repetition_error(eps, r)
    current = float(fn(margin, deltas, err, **options).mean()) if change is None else change
    history = []
    reason = None
    for step in range(units):
        if 1.0 - current >= 1.0:
            reason = STOP_ZERO
            break
        best_j, best = -1, np.inf
        for j in range(n):
            if eps[j] == 0.0:
                continue  # a noiseless feature gains nothing
            trial = err.copy()
            trial[j] = repetition_error(eps[j], r[j] + 1)
            value = float(fn(margin, deltas, trial, **options).mean())
            if value < best:
                best_j, best = j, value
        if best_j < 0 or not best < current:
            reason = STOP_NO_GAIN
        elif not 1.0 - best > 1.0 - current:
            reason = STOP_ROUNDING
        if reason is not None:
            break
        r[best_j] += 1
        err[best_j] = repetition_error(eps[best_j], r[best_j])
        current = best
        history.append((best_j, 1.0 - best))
        if progress is not None:
            progress(step + 1, units, best_j, 1.0 - best)
    return r, history, 1.0 - current, reason
