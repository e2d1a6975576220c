"""What the engine returns: campaign reports (JSON), simulation results, Wilson intervals.

Imports numpy and the standard library only.
"""

import json
from dataclasses import asdict, dataclass, field
from statistics import NormalDist

import numpy as np

from ..errors import DeviceError

__all__ = ["CampaignResult", "CampaignPoint", "SimulationResult", "wilson_interval",
           "REPORT_VERSION", "json_default"]

#: Version of the JSON report layout (2: ``random_state`` and ``site``; version 1
#: reports, with ``seed``, are still read).
REPORT_VERSION = 2


def wilson_interval(successes, trials, confidence=0.99):
    """Wilson score interval of a binomial proportion, clipped to [0, 1].

    ``successes`` and ``trials`` are numbers or arrays (broadcast together: one
    interval per entry); ``trials <= 0`` gives the uninformative ``(0, 1)``.
    Returns ``(lower, upper)``: floats for scalar input, float64 arrays
    otherwise. The host's copy (``edgecode._stats.wilson_interval``; the
    packages may not share one) has the same semantics, pinned by
    ``tests/test_kernel_copies.py``.

    Examples
    --------
    >>> lo, hi = wilson_interval(50, 100, 0.95)
    >>> round(lo, 4), round(hi, 4)
    (0.4038, 0.5962)
    >>> wilson_interval(0, 0)
    (0.0, 1.0)
    >>> [a.round(3).tolist() for a in wilson_interval([0, 5], [10, 0], 0.95)]
    [[0.0, 0.0], [0.278, 1.0]]
    """
    s = np.asarray(successes, np.float64)
    n = np.asarray(trials, np.float64)
    ok = n > 0
    safe = np.where(ok, n, 1.0)
    p = s / safe
    z = NormalDist().inv_cdf(0.5 + 0.5 * float(confidence))
    z2n = z * z / safe
    centre = (p + z2n / 2) / (1 + z2n)
    half = z / (1 + z2n) * np.sqrt(np.maximum(p * (1 - p), 0.0) / safe + z2n / (4 * safe))
    lo = np.where(ok, np.clip(centre - half, 0.0, 1.0), 0.0)
    hi = np.where(ok, np.clip(centre + half, 0.0, 1.0), 1.0)
    if s.ndim == 0 and n.ndim == 0:
        return float(lo), float(hi)
    return lo, hi


@dataclass(frozen=True)
class SimulationResult:
    """Outcome of :func:`firmware_sim.simulate`: every point ``n_trials`` times
    through a binary symmetric channel at one site.

    Attributes
    ----------
    same : ndarray of int64, shape (t,)
        Per point, the number of trials whose label equals the clean label.
    clean_labels : ndarray of int64, shape (t,)
        Labels of the noiseless points.
    n_trials : int
        Trials per point.
    eps_bits : ndarray of float64, shape (L,)
        Flip probability of every faulted bit (the channel bits at the wire,
        the intermediate results at ``"intermediate"``).
    correct : ndarray of int64, shape (t,), or None
        Per point, trials whose label equals ``y`` (when ``y`` was given).

    Notes
    -----
    Unpacks as a pair: ``same, clean_labels = simulate(...)``.
    """

    same: np.ndarray
    clean_labels: np.ndarray
    n_trials: int
    eps_bits: np.ndarray
    correct: object = None

    def __iter__(self):
        return iter((self.same, self.clean_labels))

    @property
    def same_rate(self):
        """Per-point estimate of the same-classification probability (SCP)."""
        return self.same / self.n_trials

    @property
    def mean_same_rate(self):
        """Mean SCP estimate over the points."""
        return float(self.same.sum() / (self.same.size * self.n_trials))

    @property
    def accuracy(self):
        """Mean accuracy under noise against ``y`` (None if ``y`` was not given)."""
        if self.correct is None:
            return None
        return float(self.correct.sum() / (self.correct.size * self.n_trials))


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
        return json.loads(json.dumps(d, default=json_default))

    def to_json(self, path=None, *, indent=1):
        """The report as JSON text; written to ``path`` too when given."""
        text = json.dumps(self.to_dict(), indent=indent, allow_nan=False,
                          default=json_default)
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
            raise DeviceError(f"campaign report version {d.get('version')!r}; this reader "
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


def json_default(o):
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, tuple):
        return list(o)
    raise TypeError(f"not JSON-serialisable: {type(o).__name__}")
