"""Run a device artifact through a binary symmetric channel on its data rows
(``edgecode simulate``'s library): one path for every model kind.

:func:`simulate_artifact` loads the artifact (:func:`firmware_sim.load`), finds
its data rows (the dataset it records, or one given, through the kind's rows
function of :mod:`export.registry`), runs :func:`firmware_sim.simulate` at the
kind's default site and returns a :class:`SimulationReport`: the measured
same-classification rate with its Wilson interval, the accuracy under noise
when the rows have labels, and, for a kind with a closed form, the predicted
rate next to it (:func:`kind_prediction`).

A kind's prediction is a function ``predict(device, X, eps) -> (mean, lower,
upper, method)``: the mean over the points of the probability that a point
keeps its clean label under a BSC of flip probability ``eps`` at the kind's
default site, with certified bounds (``lower == upper == mean`` when exact).
A kind's spec gives it (:meth:`export.registry.KindSpec.same_rate_prediction`;
protected naive Bayes: the SCP of the device's integer model); a kind without
one returns None (ECOC and SSBC: their closed forms are per campaign point,
:mod:`export.analytics`).
"""

import time
from dataclasses import dataclass
from typing import Callable, NamedTuple, Optional

import numpy as np

__all__ = ["SamePrediction", "SimulationReport", "simulate_artifact", "kind_prediction"]


class SamePrediction(NamedTuple):
    """A closed-form same-classification rate: ``mean`` in ``[lower, upper]``;
    ``method`` says how (``"exact"``, ``"bounds-midpoint"``, ...)."""

    mean: float
    lower: float
    upper: float
    method: str

    @property
    def exact(self):
        return self.method == "exact"


def kind_prediction(kind: str) -> Optional[Callable]:
    """The closed-form same-rate prediction of ``kind``
    (:meth:`export.registry.KindSpec.same_rate_prediction`), or None when the
    kind has no registered spec."""
    from export.registry import find_kind_spec

    spec = find_kind_spec(kind)
    return None if spec is None else spec.same_rate_prediction


@dataclass(frozen=True)
class SimulationReport:
    """What :func:`simulate_artifact` measured.

    Attributes
    ----------
    kind, site : str
        The artifact's model kind and the site whose bits flipped.
    data_name : str
        The rows' dataset (for messages).
    n_points, n_trials : int
    eps : float or ndarray
    random_state : int or None
    confidence : float
        Level of ``ci``.
    result : firmware_sim.SimulationResult
        The per-point counts.
    rate : float
        Pooled same-classification rate.
    ci : (float, float)
        Wilson interval of the pooled count (conservative: points with
        different rates only shrink the variance).
    accuracy : float or None
        Accuracy under noise (None without labels).
    prediction : SamePrediction or None
        The kind's closed form on the same points and eps (None if the kind
        has none).
    planned : dict or None
        What the artifact's planner predicted (``planned_mean_scp``,
        ``planned_eps``, ``planning_points`` of its metadata), if it records it.
    seconds : float
        Time of the Monte Carlo run.
    """

    kind: str
    site: str
    data_name: str
    n_points: int
    n_trials: int
    eps: object
    random_state: object
    confidence: float
    result: object
    rate: float
    ci: tuple
    accuracy: Optional[float]
    prediction: Optional[SamePrediction]
    planned: Optional[dict]
    seconds: float

    @property
    def inside(self):
        """Whether the predicted mean lies in the interval (None without a prediction)."""
        if self.prediction is None:
            return None
        return bool(self.ci[0] <= self.prediction.mean <= self.ci[1])


def _planned(meta):
    if meta.get("planned_mean_scp") is None:
        return None
    return {k: meta.get(k) for k in ("planned_mean_scp", "planned_eps", "planning_points")}


def simulate_artifact(artifact, eps, n_trials, *, dataset=None, split="test", random_state=0,
                      confidence=0.99, max_points=None, n_jobs=None, progress=None,
                      data_options=None):
    """Monte Carlo run of a device artifact under a BSC at its kind's default site.

    Parameters
    ----------
    artifact : path, bytes or firmware_sim.artifact.Container
    eps : float or array-like
        Flip probability (:func:`firmware_sim.simulate`).
    n_trials : int
        Noisy passes per point.
    dataset : str or (X, y), optional
        The rows: a bundled name or CSV path (read with the data options the
        artifact records, updated by ``data_options``) or an ``(X, y)`` pair
        of true labels; default: the dataset the artifact records.
    split : str
        Rows of the dataset's split to use (``"all"``: every row).
    random_state : int, optional
        Seed of the channel.
    confidence : float
        Level of the Wilson interval.
    max_points : int, optional
        Use at most this many rows.
    n_jobs : int, optional
        Threads; the counts do not depend on it.
    progress : callable, optional
        ``progress(done, total)`` between batches (:func:`firmware_sim.simulate`).
    data_options : dict, optional
        ``label``, ``ignore``, ``positive`` (:func:`export.data.load_recorded`).

    Returns
    -------
    SimulationReport

    Raises
    ------
    ValueError
        The artifact records no dataset and none is given; rows whose width is
        not the artifact's; a kind without a rows function.
    firmware_sim.ContainerError
        A malformed or inconsistent artifact.
    """
    from firmware_sim.campaign import wilson_interval
    from export.registry import kind_rows
    from firmware_sim import load, simulate
    from firmware_sim.artifact import Container, read_container

    container = artifact if isinstance(artifact, Container) else read_container(artifact)
    device = load(container)
    meta = container.meta or {}
    if dataset is None:
        dataset = meta.get("dataset")
        if dataset is None:
            raise ValueError("the artifact records no dataset; pass --data")
    X, y, name = kind_rows(container.kind)(container, dataset, split, **(data_options or {}))
    if max_points is not None:
        X, y = X[:max_points], (None if y is None else y[:max_points])
    width = getattr(device, "n_features", None)
    if width is not None and np.ndim(X) == 2 and np.shape(X)[1] != width:
        raise ValueError(f"the artifact expects {width} features but {name} has "
                         f"{np.shape(X)[1]}")
    eps = eps if np.ndim(eps) else float(eps)
    t0 = time.perf_counter()
    res = simulate(device, X, eps, n_trials, random_state=random_state, y=y, n_jobs=n_jobs,
                   progress=progress)
    seconds = time.perf_counter() - t0
    total = len(X) * n_trials
    same = int(np.sum(res.same))
    lo, hi = (float(v) for v in wilson_interval(same, total, confidence))
    # the closed form after the run: it may import scikit-learn, whose import and
    # teardown would delay the start and an interrupted run's exit
    predict = kind_prediction(container.kind)
    got = None if predict is None else predict(device, X, eps)
    prediction = None if got is None else SamePrediction(*got)
    return SimulationReport(container.kind, device.default_site, name, len(X), n_trials, eps,
                            random_state, confidence, res, same / total, (lo, hi), res.accuracy,
                            prediction, _planned(meta), seconds)
