"""The bridge spec of protected naive Bayes (seed 000): kind ``"protected_nb"``.

Binary features x in {0,1}^n, two classes; feature j travels ``2 r_j + 1``
times and is majority-decoded on the device (:mod:`export.naive_bayes`
exports it, :class:`firmware_sim.ProtectedNBDevice` runs it).

* **data rows**: 0/1 features and labels 0/1 (:func:`export.data.binary_rows`);
* **budget** configurations ``{"kind": "protected_nb", "plan": "uniform" |
  "greedy", "budget_bits": B}``: feature j sent ``2 r_j + 1`` times, the
  ``r`` spread evenly (uniform) or by seed 000's Algorithm 2 (greedy,
  planned on training rows at the fault's per-bit wire error); ``B = 0`` is
  the unprotected model (plan ``"none"``). Binary features and two classes
  only. Screening is exact (the image holds one count per feature whatever
  the plan; the frame length sizes the RAM);
* **closed form** under independent per-bit wire noise: the exact SCP of the
  device's integer model (:func:`device_scp`, certified bounds above
  :data:`DEVICE_SCP_EXACT_MAX` features), :func:`analytic_protected_nb`.

Examples
--------
>>> from export.registry import kind_spec
>>> spec = kind_spec("protected_nb")
>>> spec.label({"kind": "protected_nb", "plan": "greedy", "budget_bits": 32})
'nb greedy 32 bits'
>>> from export.budget import SearchSpace
>>> [spec.label(c) for c in spec.configurations(SearchSpace(nb_rates=(0, 1)), n_classes=2,
...                                             n_features=4, binary=True)]
['nb unprotected', 'nb uniform 8 bits', 'nb greedy 8 bits']

What ``edgecode simulate`` predicts (the SCP of the device's integer model):

>>> from firmware_sim import ProtectedNBDevice
>>> dev = ProtectedNBDevice.from_arrays([3, 2], -4, [1, 0], 0)
>>> mean, lo, hi, method = spec.same_rate_prediction(dev, [[1, 1], [1, 0]], 0.1)
>>> round(mean, 4), method
(0.8888, 'exact')
"""

import numpy as np

from export._budget_space import Fitted, ints_at_least, one_of
from export.registry import KindSpec, SpaceOption, register_kind_spec

__all__ = ["NaiveBayesSpec", "device_scp", "analytic_protected_nb", "DEVICE_SCP_EXACT_MAX"]

#: Training rows (a seeded subset) the greedy plan maximises the mean SCP over.
PLAN_POINTS = 200


class NaiveBayesSpec(KindSpec):
    """Protected naive Bayes on the bridge (see the module docstring)."""

    kind = "protected_nb"
    protection_sites = ("image",)       # at the wire its repetition plans are its own
    name = "nb"
    marker = "s"
    site_text = "NB wire bits"
    compute_text = "NB decoded feature bits"
    space_options = (
        SpaceOption("nb_plans", ("uniform", "greedy"), one_of("nb_plans", ("uniform", "greedy"))),
        SpaceOption("nb_rates", (0, 1, 2, 3), ints_at_least("nb_rates", 0), cli="--nb-rates",
                    item=int, help="naive Bayes budgets as 2 n R bits, one per R (comma "
                    "list; 0 = unprotected)"),
    )
    example_space = {"nb_rates": (0, 1)}
    analytic_note = ("protected NB: exact SCP of the device's integer model with "
                     "repetition_error per feature (independent noise only)")

    def rows(self, container, dataset, split, **options):
        from export.data import binary_rows
        return binary_rows(container, dataset, split, **options)

    def accepts(self, n_classes, binary):
        return bool(binary)

    def unsupported(self, task):
        if not task.binary:
            return "naive Bayes needs binary features and two classes"
        return None

    def configurations(self, space, *, n_classes, n_features, binary):
        out = []
        if not binary:
            return out
        if 0 in space.nb_rates:
            out.append({"kind": self.kind, "plan": "none", "budget_bits": 0})
        for R in space.nb_rates:
            if R == 0:
                continue
            for plan in space.nb_plans:
                out.append({"kind": self.kind, "plan": plan,
                            "budget_bits": int(2 * n_features * R)})
        return out

    def seeds(self, space, *, n_classes, n_features, binary):
        """Unprotected, and each plan at the smallest redundancy rate."""
        cfgs = self.configurations(space, n_classes=n_classes, n_features=n_features,
                                   binary=binary)
        if not cfgs:
            return []
        low = min((c["budget_bits"] for c in cfgs if c["budget_bits"]), default=None)
        return [c for c in cfgs if c["budget_bits"] in (0, low)]

    def grow(self, config, space, *, n_classes, n_features, binary):
        """One more repetition rate (``2 n`` bits more) of the same plan."""
        if config["plan"] == "none":
            return []
        return [{**config, "budget_bits": int(config["budget_bits"]) + 2 * int(n_features)}]

    def label(self, config):
        return "nb unprotected" if config["plan"] == "none" else \
            f"nb {config['plan']} {config['budget_bits']} bits"

    def screen(self, config, task, random_state):
        from edgecode.redundancy import allocate_uniform
        from firmware_sim import load, make_protected_nb_arrays, write_container

        d = task.n_features
        r = np.zeros(d, np.int64)
        if config["budget_bits"]:
            r = np.asarray(allocate_uniform(d, config["budget_bits"]), np.int64) \
                if config["plan"] == "uniform" else _greedy_shape(d, config["budget_bits"])
        arrays = make_protected_nb_arrays(np.ones(d, np.int64), 0, r, 0)
        res = load(write_container(None, self.kind, arrays)).resources()
        return {"flash_bytes": int(res["flash_bytes"]), "ram_bytes": int(res["ram_bytes"]),
                "exact": config["plan"] != "greedy"}

    def fit(self, config, task, *, plan_eps, random_state, screened=None):
        import warnings

        from edgecode.naive_bayes import BinaryNaiveBayes
        from edgecode.redundancy import PlanningCostWarning, allocate_greedy, allocate_uniform
        from export.naive_bayes import export_protected_nb

        # trained on the true labels, so that the exports carry them; accuracies
        # compare class indices
        Xtr = task.X_train.astype(np.uint8)
        nb = BinaryNaiveBayes().fit(Xtr, task.labels(task.y_train))
        d, B = task.n_features, int(config["budget_bits"])
        info = {}
        if B == 0:
            r = np.zeros(d, np.int64)
        elif config["plan"] == "uniform":
            r = np.asarray(allocate_uniform(d, B), np.int64)
        else:
            rng = np.random.default_rng(random_state)
            rows = Xtr if len(Xtr) <= PLAN_POINTS else \
                Xtr[np.sort(rng.choice(len(Xtr), PLAN_POINTS, replace=False))]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", PlanningCostWarning)
                plan = allocate_greedy(nb.decision_function(rows), nb.flip_deltas(rows),
                                       float(plan_eps), B)
            r = np.asarray(plan.repetitions, np.int64)
            info = {"planned_mean_scp": float(plan.mean_scp), "plan_method": plan.method}
        info["repetitions"] = r.tolist()
        Xd = task.X_test.astype(np.uint8)
        # above 20 features the integer model is verified on rows, not on every input
        ex = export_protected_nb(nb, r, meta=task.meta, X_check=np.vstack([Xtr, Xd]))
        acc = float(np.mean(ex.device.predict(Xd) == task.y_test))
        return Fitted(ex, Xd, task.y_test, acc, info)

    def analytic(self, device, X, fault, y=None, site=None):
        return analytic_protected_nb(device, X, fault, y,
                                     site=device.default_site if site is None else site)

    def same_rate_prediction(self, device, X, eps):
        scp, lo, hi, method = device_scp(device, X, eps)
        return float(scp.mean()), float(lo.mean()), float(hi.mean()), method

    def describe_method(self, method):
        return {"exact": "exact SCP of the device's integer model",
                "bounds-midpoint": "midpoint of certified SCP bounds (more than 24 features)"
                }.get(method, method)

    def example_fit(self, X, y, *, meta, variant="default"):
        from edgecode.naive_bayes import BinaryNaiveBayes
        from edgecode.redundancy import allocate_uniform
        from export.naive_bayes import export_protected_nb

        X = np.asarray(X, np.uint8)
        nb = BinaryNaiveBayes().fit(X, y)
        return export_protected_nb(nb, allocate_uniform(X.shape[1], 2 * X.shape[1]),
                                   meta=dict(meta))


def _greedy_shape(d, budget_bits):
    """A repetition vector with the greedy plan's total (its frame length is what
    sizes the RAM; the image holds one count per feature whatever the plan)."""
    r = np.zeros(d, np.int64)
    r[0] = budget_bits // 2
    return r


# ----------------------------------------------------------------------------
# closed forms (export.analytics re-exports them)
# ----------------------------------------------------------------------------
#: :func:`device_scp` is exact (``edgecode.scp.scp_exact``) up to this many
#: features, the midpoint of certified bounds (``scp_bounds``) above.
DEVICE_SCP_EXACT_MAX = 24


def device_scp(device, X, eps, decoded=False):
    """Per point, the same-classification probability of a protected NB device
    whose wire bits flip independently with probability ``eps``.

    Feature j decodes wrong with ``repetition_error(eps_j, r_j)``; margins and
    flip effects are the device's own integer weights over
    ``2**scale_shift``, so this is the SCP of what the device runs (not of the
    float model it was quantized from).

    Parameters
    ----------
    device : ProtectedNBDevice
    X : array-like of 0/1, shape (t, n)
    eps : float or array-like of shape (n,)
        Per-bit flip probability, one or one per feature, in [0, 1/2).
    decoded : bool
        The flips hit the decoded feature bits (the ``intermediate`` site),
        after the repetitions: each feature is wrong with ``eps`` itself.

    Returns
    -------
    scp : ndarray of float, shape (t,)
        Exact up to :data:`DEVICE_SCP_EXACT_MAX` features, else the midpoint
        of the certified bounds.
    lo, hi : ndarray of float, shape (t,)
        Certified bounds (both ``scp`` when exact).
    method : {"exact", "bounds-midpoint"}

    Examples
    --------
    Weights 3 and 2, bias -4, feature 0 sent three times (wrong after
    majority with probability ``3 eps^2 (1 - eps) + eps^3 = 0.028``):

    >>> from firmware_sim.naive_bayes import ProtectedNBDevice
    >>> dev = ProtectedNBDevice.from_arrays([3, 2], -4, [1, 0], 0)
    >>> scp, lo, hi, method = device_scp(dev, [[1, 1], [1, 0]], 0.1)
    >>> scp.round(4).tolist(), method     # (1 - 0.028) (1 - 0.1), 1 - (1 - 0.028) 0.1
    ([0.8748, 0.9028], 'exact')
    """
    from edgecode.redundancy import repetition_error
    from edgecode.scp import scp_bounds, scp_exact

    scale = 2.0 ** device.scale_shift
    margin = device.decision(X).astype(np.float64) / scale
    deltas = (1.0 - 2.0 * np.asarray(X, np.float64)) * device.weights.astype(np.float64) / scale
    reps = device.repetitions.astype(np.int64)
    eff = repetition_error(np.broadcast_to(eps, (device.n_features,)),
                           np.zeros_like(reps) if decoded else reps)
    if device.n_features <= DEVICE_SCP_EXACT_MAX:
        scp = scp_exact(margin, deltas, eff)
        return scp, scp, scp, "exact"
    lo, hi = scp_bounds(margin, deltas, eff)
    return (lo + hi) / 2.0, lo, hi, "bounds-midpoint"


def analytic_protected_nb(device, X, fault, y=None, site="wire"):
    """Expected same-classification rate (and accuracy) of a protected NB device.

    Parameters
    ----------
    device : ProtectedNBDevice
    X : array-like of 0/1, shape (t, n)
    fault : firmware_sim.faults.Fault
    y : array-like of 0/1, optional

    Returns
    -------
    dict
        ``available`` (bool); if True ``same_rate``, ``accuracy`` (or None),
        ``per_bit_eps``, ``method``; else ``reason`` and, for burst noise,
        ``bsc_same_rate_at_mean_flip_rate`` (a reference, not a prediction).

    Notes
    -----
    With per-bit error ``e`` independent across bits, feature j decodes wrong
    with ``e^(r_j) = P(Binomial(2 r_j + 1, e) > r_j)`` independently of the
    others, so the label stays with probability ``SCP(x, e^(r))`` (DESIGN.md)
    and is correct with ``SCP`` when the clean label is right, ``1 - SCP``
    otherwise. The margins and flip effects are the device's own integer
    weights over ``2**scale_shift``, so this predicts what the device runs.
    """
    from export._closed_forms import analytic_upsets, independent_eps, mean_flip_rate
    from firmware_sim import ProtectedNBDevice
    from firmware_sim.faults import Compose, GilbertElliott, Interleave

    if not isinstance(device, ProtectedNBDevice):
        return {"available": False, "reason": f"no analytic model for {type(device).__name__}"}
    X = device._check_X(X)
    decoded = site == "intermediate" and fault.target == "bits"
    if site not in ("wire", "intermediate") and fault.target == "bits":
        return {"available": False, "reason": "the closed form covers channel bits on the wire "
                "and on the decoded feature bits (sites 'wire', 'intermediate')"}
    e = independent_eps(fault)
    if e is None:
        out = {"available": False}
        inner = fault.fault if isinstance(fault, Interleave) else fault
        if isinstance(inner, GilbertElliott) or (
                isinstance(inner, Compose) and any(isinstance(f, GilbertElliott)
                                                   for f in inner.faults)):
            out["reason"] = ("no closed form for burst (Gilbert-Elliott) noise: the copies of a "
                             "feature are adjacent on the wire, so their errors are correlated "
                             "and majority failure is not a binomial tail")
        elif fault.target in ("image", "mixed"):
            return analytic_upsets(device, X, fault, y)
        else:
            out["reason"] = ("no closed form implemented for this fault (needs independent "
                             "noise with one rate for every bit)")
        rate = mean_flip_rate(fault)
        if rate is not None and rate < 0.5:
            scp = device_scp(device, X, rate, decoded)[0]
            out["bsc_same_rate_at_mean_flip_rate"] = float(scp.mean())
            out["mean_flip_rate"] = rate
        return out
    if not e < 0.5:
        return {"available": False, "reason": f"per-bit error {e} >= 1/2 (planner range is "
                                              "[0, 1/2))"}
    scp, _, _, method = device_scp(device, X, e, decoded)
    acc = None
    if y is not None:
        y = np.asarray(y).astype(np.int64).reshape(-1)
        right = device.predict(X) == y
        acc = float(np.where(right, scp, 1.0 - scp).mean())
    return {"available": True, "same_rate": float(scp.mean()), "accuracy": acc,
            "per_bit_eps": e, "method": method}

register_kind_spec(NaiveBayesSpec)
