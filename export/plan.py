"""Plan a protected naive Bayes device: fit, plan, score, write (``edgecode plan``'s library).

The command line parses its options and prints; this module does the work, in
three stages a caller can run apart (to print an expected time before the
long one, or to plan without writing anything):

1. :func:`prepare_plan` fits :class:`edgecode.naive_bayes.BinaryNaiveBayes` on
   the fitting rows and computes the planning points' margins and flip
   effects, the influence method and the expected time
   (:class:`PlanSetup`);
2. :func:`solve_plan` spends the budget greedily
   (:func:`edgecode.redundancy.allocate_greedy`) and scores the allocations
   *none*, *uniform* (when the budget gives every feature a unit) and
   *greedy* with certified figures
   (:func:`edgecode.redundancy.score_allocation`) (:class:`PlanOutcome`);
3. :func:`export_plan` writes the container, the ONNX graph and the plan file
   (CSV or JSON), all or nothing (:class:`export.atomic.AtomicOutputs`).

:func:`plan_protection` runs the first two.

Examples
--------
>>> from export.data import load_binary
>>> out = plan_protection(load_binary("house_votes"), 0.2, 32)
>>> out.setup.n_features, out.setup.method_used, [a.name for a in out.allocations]
(16, 'exact', ['none', 'uniform', 'greedy'])
>>> round(1 - out.greedy.estimate, 4), round(out.ratio, 2)
(0.0311, 1.34)
"""

import json
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["PlanSetup", "ScoredAllocation", "PlanOutcome", "prepare_plan", "solve_plan",
           "plan_protection", "method_reason", "plan_meta", "write_plan_file", "export_plan"]


@dataclass(frozen=True)
class PlanSetup:
    """What a plan is computed from (:func:`prepare_plan`).

    Attributes
    ----------
    data : edgecode.datasets.BinaryDataset
    fit_rows, plan_rows : BinaryDataset
        The rows the model is fitted on and planned on (the data's split,
        else every row for both).
    model : BinaryNaiveBayes
        Fitted on the true labels (a CSV's values), so that exports return them.
    X_plan : ndarray
        The planning points (at most ``max_points``).
    margin, deltas : ndarray
        Log-odds and flip effects of the planning points.
    feature_names : list of str
    eps : float or ndarray
        The channel flip probability as given (one, or one per feature).
    eps_per_feature : ndarray of shape (n_features,)
    budget_bits : int
    method, method_used : str
        The requested influence method and the one ``auto`` resolves to.
    resolution : int
        Grid cells per point of the grid engine.
    expected_seconds : float
        The estimate of planning and scoring
        (:func:`edgecode.redundancy.estimate_plan_seconds`).
    accuracy : float
        The model's accuracy on the planning rows (all of them).
    """

    data: object
    fit_rows: object
    plan_rows: object
    model: object
    X_plan: np.ndarray
    margin: np.ndarray
    deltas: np.ndarray
    feature_names: list
    eps: object
    eps_per_feature: np.ndarray
    budget_bits: int
    method: str
    method_used: str
    resolution: int
    expected_seconds: float
    accuracy: float

    @property
    def n_features(self):
        return self.deltas.shape[1]

    @property
    def n_points(self):
        return self.deltas.shape[0]


@dataclass(frozen=True)
class ScoredAllocation:
    """One allocation and its mean SCP: ``estimate`` in ``[lower, upper]``,
    certified ``how`` (``"exact"``: all three equal, or ``"bounds"``)."""

    name: str
    repetitions: np.ndarray
    estimate: float
    lower: float
    upper: float
    how: str


@dataclass(frozen=True)
class PlanOutcome:
    """A solved plan (:func:`solve_plan`).

    Attributes
    ----------
    setup : PlanSetup
    plan : edgecode.redundancy.Allocation
        The greedy plan.
    allocations : tuple of ScoredAllocation
        ``none``, ``uniform`` (when the budget gives every feature a unit) and
        ``greedy``, in that order.
    plan_seconds : float
        Time of the greedy plan.
    elapsed_seconds : float
        Time of the plan and the scores.
    """

    setup: PlanSetup
    plan: object
    allocations: tuple
    plan_seconds: float
    elapsed_seconds: float

    def allocation(self, name):
        """The scored allocation called ``name`` (None if there is none)."""
        return next((a for a in self.allocations if a.name == name), None)

    @property
    def greedy(self):
        return self.allocations[-1]

    @property
    def reference(self):
        """What the greedy plan is compared with: ``uniform`` if there is one, else ``none``."""
        return self.allocation("uniform") or self.allocations[0]

    @property
    def exact(self):
        """True when every allocation's SCP is exact."""
        return all(a.how == "exact" for a in self.allocations)

    @property
    def ratio(self):
        """``(1 - SCP of the reference) / (1 - SCP of greedy)`` (inf when greedy's is 0)."""
        g = self.greedy.estimate
        return (1 - self.reference.estimate) / (1 - g) if g < 1 else float("inf")

    @property
    def uniform_scp(self):
        u = self.allocation("uniform")
        return None if u is None else u.estimate

    @property
    def none_scp(self):
        return self.allocations[0].estimate


def _split_rows(data, fit_split, plan_split):
    """(fit rows, plan rows): the named parts where the data has a split, else all/all."""
    if data.split is None:
        return data, data
    fit = data.subset(fit_split) if fit_split != "all" else data
    plan = data.subset(plan_split) if plan_split != "all" else data
    return fit, plan


def prepare_plan(data, eps, budget_bits, *, method="auto", alpha=1.0, fit_split="train",
                 plan_split="test", max_points=None, resolution=None):
    """Fit naive Bayes and set up the plan (stage 1).

    Parameters
    ----------
    data : edgecode.datasets.BinaryDataset
        :func:`export.data.load_binary` reads one from a bundled name or CSV.
    eps : float or array-like of shape (n_features,)
        Channel flip probability in [0, 0.5).
    budget_bits : int
        Redundancy bits to spend (one unit is two copies).
    method : {"auto", "exact", "grid", "approx", "bounds"}
        Influence method of :func:`edgecode.redundancy.allocate_greedy`.
    alpha : float
        Laplace smoothing.
    fit_split, plan_split : str
        Rows to fit and to plan on where the data has a split (``"all"``:
        every row).
    max_points : int, optional
        Plan on at most this many points.
    resolution : int, optional
        Grid cells per point (default ``PLAN_GRID_RESOLUTION``).

    Returns
    -------
    PlanSetup
    """
    from edgecode._config import PLAN_GRID_RESOLUTION
    from edgecode.naive_bayes import BinaryNaiveBayes
    from edgecode.redundancy import estimate_plan_seconds, resolve_plan_method

    resolution = PLAN_GRID_RESOLUTION if resolution is None else resolution
    fit_rows, plan_rows = _split_rows(data, fit_split, plan_split)
    nb = BinaryNaiveBayes(alpha=alpha).fit(fit_rows.X, fit_rows.labels())
    Xp = plan_rows.X if max_points is None else plan_rows.X[:max_points]
    margin, deltas = nb.decision_function(Xp), nb.flip_deltas(Xp)
    t, n = deltas.shape
    names = list(data.feature_names) if len(data.feature_names) == n else \
        [f"x{j}" for j in range(n)]
    eps = eps if np.ndim(eps) else float(eps)
    eps_vec = np.broadcast_to(np.asarray(eps, dtype=float), (n,)).copy()
    used = resolve_plan_method(method, n)
    # the plan (at most the steps any plan can use), then the none and uniform rows
    n_rows = 1 + int(budget_bits >= 2 * n)
    expected = estimate_plan_seconds(t, n, budget_bits // 2, used, resolution, eps=eps_vec,
                                     extra_scores=n_rows)
    accuracy = nb.score(plan_rows.X, plan_rows.labels())
    return PlanSetup(data, fit_rows, plan_rows, nb, Xp, margin, deltas, names, eps, eps_vec,
                     int(budget_bits), method, used, resolution, expected, accuracy)


def solve_plan(setup, progress=None):
    """Plan greedily and score none / uniform / greedy (stage 2).

    ``progress(step, total, feature, value)`` is
    :func:`edgecode.redundancy.allocate_greedy`'s callback. A
    :class:`edgecode.redundancy.PlanningCostWarning` of a long plan is the
    caller's to show or silence (the command line prints its own estimate).

    Returns
    -------
    PlanOutcome
    """
    from edgecode.redundancy import (allocate_greedy, allocate_uniform, repetition_error,
                                     score_allocation)

    s = setup
    n, budget = s.n_features, s.budget_bits
    t0 = time.perf_counter()
    plan = allocate_greedy(s.margin, s.deltas, s.eps, budget, method=s.method,
                           progress=progress, resolution=s.resolution)
    plan_s = time.perf_counter() - t0
    rows = [ScoredAllocation("none", np.zeros(n, int),
                             *score_allocation(s.margin, s.deltas, s.eps_per_feature,
                                               s.resolution))]
    if budget >= 2 * n:
        ru = allocate_uniform(n, budget)
        rows.append(ScoredAllocation("uniform", ru, *score_allocation(
            s.margin, s.deltas, repetition_error(s.eps_per_feature, ru), s.resolution)))
    rows.append(ScoredAllocation("greedy", plan.repetitions, plan.mean_scp, plan.scp_lower,
                                 plan.scp_upper, plan.certified_by))
    return PlanOutcome(setup, plan, tuple(rows), plan_s, time.perf_counter() - t0)


def plan_protection(data, eps, budget_bits, *, progress=None, **options):
    """:func:`prepare_plan` then :func:`solve_plan` (``options``: those of
    :func:`prepare_plan`). Returns a :class:`PlanOutcome`."""
    return solve_plan(prepare_plan(data, eps, budget_bits, **options), progress=progress)


def method_reason(requested, used, n, resolution):
    """One line saying which influence method a plan uses and why."""
    from edgecode._config import PLAN_EXACT_MAX_FEATURES

    if used == "exact":
        why = (f"n = {n} <= {PLAN_EXACT_MAX_FEATURES} features: exact influences by meet in "
               f"the middle (2^{(n + 1) // 2} subset sums per half and point)")
    elif used == "grid":
        why = (f"n = {n} > {PLAN_EXACT_MAX_FEATURES} features: exact influences would cost "
               f"2^{(n + 1) // 2} per point and step; the grid engine ({resolution} cells per "
               "point) costs the same at any n, and the plan is certified afterwards")
    elif used == "approx":
        why = "the seed's Algorithm 1 (k buckets), every candidate evaluated at every step"
    else:
        why = "the certified lower bound, every candidate evaluated at every step"
    head = f"method {requested} -> {used}" if requested == "auto" else f"method {used}"
    return f"{head}: {why}"


def plan_meta(outcome, dataset_ref=None, dataset_options=None):
    """The metadata a plan's artifacts record (text values): the dataset and its
    options (so that later commands find the rows), the planned eps and mean
    SCP with its certified interval, the planning points, method and budget."""
    s, plan = outcome.setup, outcome.plan
    meta = {"dataset": str(s.data.name if dataset_ref is None else dataset_ref),
            "planned_eps": json.dumps(np.atleast_1d(s.eps).tolist()),
            "planned_mean_scp": repr(plan.mean_scp),
            "planned_scp_lower": repr(plan.scp_lower),
            "planned_scp_upper": repr(plan.scp_upper),
            "planning_points": str(len(s.X_plan)),
            "scp_method": plan.method, "budget_bits": str(s.budget_bits)}
    if dataset_options:
        meta["dataset_options"] = json.dumps(dataset_options)
    return meta


def write_plan_file(path, outcome, meta):
    """The full plan as CSV (one row per feature) or JSON (``meta``, the certified
    interval and the features), by the file suffix."""
    path = Path(path)
    s, plan = outcome.setup, outcome.plan
    names = s.feature_names
    rows = [{"index": int(j), "name": names[j], "copies": int(2 * plan.repetitions[j] + 1),
             "repetitions": int(plan.repetitions[j]), "eps": float(plan.eps[j]),
             "effective_eps": float(plan.effective_eps[j])} for j in range(len(names))]
    if path.suffix.lower() == ".json":
        doc = {**meta, "certified_by": plan.certified_by,
               "planned_eps": np.atleast_1d(s.eps).tolist(),
               "planned_mean_scp": plan.mean_scp, "planned_scp_lower": plan.scp_lower,
               "planned_scp_upper": plan.scp_upper, "planning_points": len(s.X_plan),
               "budget_bits": s.budget_bits, "unused_bits": plan.unused_bits,
               "stop_reason": plan.stop_reason, "features": rows}
        path.write_text(json.dumps(doc, indent=1) + "\n")
    else:
        import csv
        with open(path, "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(rows[0]) if rows else ["index"])
            w.writeheader()
            w.writerows(rows)


def export_plan(outcome, *, out=None, onnx_out=None, plan_out=None, dataset_ref=None,
                dataset_options=None):
    """Write a plan's container (``out``), ONNX graph (``onnx_out``) and plan file
    (``plan_out``, ``.csv`` or ``.json``): all of them or, on any error or
    Ctrl-C, none (a file already there is left as it was).

    Returns
    -------
    ExportResult or None
        The export (None when neither ``out`` nor ``onnx_out`` is given).
    """
    from export.atomic import AtomicOutputs

    meta = plan_meta(outcome, dataset_ref, dataset_options)
    exp = None
    with AtomicOutputs([out, onnx_out, plan_out]) as tmp:
        if out is not None or onnx_out is not None:
            from export.naive_bayes import export_protected_nb
            exp = export_protected_nb(outcome.setup.model, outcome.plan.repetitions,
                                      container_path=tmp[out], onnx_path=tmp[onnx_out],
                                      X_check=outcome.setup.data.X, meta=meta)
        if plan_out is not None:
            write_plan_file(tmp[plan_out], outcome, meta)
    return exp
