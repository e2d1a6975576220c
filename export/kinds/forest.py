"""The bridge spec of tree forests (issue 25 item 6): kind ``"forest"``.

A random forest, extra trees or one decision tree of scikit-learn, stored as
narrow preorder node arrays with a shared leaf table (:mod:`export.forest`
exports it, :class:`firmware_sim.kinds.forest.ForestDevice` runs it).

* **data rows**: numeric features (:func:`export.data.table_rows`);
* **budget** configurations ``{"kind": "forest", "estimator": "rf" | "extra",
  "n_trees": T, "max_depth": D, "leaf": "proba" | "class"}`` (plus
  ``"leaf_bits"`` for probability leaves): the grid ``forest_estimators x
  forest_trees x forest_depths x forest_leaves`` of the search space
  (``edgecode budget --forest-trees 5,15 --forest-depths 3,6 --forest-leaves
  class,proba``). Screening is a lower bound (not exact): T one-leaf trees
  and a one-row leaf table, the smallest image a trained forest of T trees
  can have (its nodes are known only after training);
* **closed form**: none exact. For independent noise on the tree outputs (a
  BSC at the intermediate site: each tree's leaf replaced by a random other
  one) a lower bound of the same-classification rate from each point's
  *radius*, the most trees whose leaves can all change without changing its
  label (:func:`forest_radius`): ``P(Binomial(T, eps) <= radius)``.

Examples
--------
>>> from export.registry import kind_spec
>>> kind_spec("forest").label({"kind": "forest", "estimator": "rf", "n_trees": 15,
...                            "max_depth": 4, "leaf": "proba", "leaf_bits": 8})
'forest rf T=15 d=4 proba8'
"""

import numpy as np

from export._budget_space import Fitted, ints_at_least, one_of, tuple_of
from export.registry import KindSpec, SpaceOption, register_kind_spec

__all__ = ["ForestSpec", "forest_radius", "analytic_forest", "ESTIMATORS", "LEAF_FORMS"]

#: ``forest_estimators`` values: random forest, extra trees.
ESTIMATORS = ("rf", "extra")
#: ``forest_leaves`` values (:func:`export.forest.export_forest`'s ``leaf``).
LEAF_FORMS = ("class", "proba")
#: Decision levels the format stores (``firmware_sim.kinds.forest.MAX_DEPTH``).
_MAX_DEPTH = 64
#: Trees per forest the growing search steps through.
TREE_LADDER = (2, 3, 5, 8, 12, 16, 20, 24, 30, 36, 45, 54, 64, 80, 96, 128)
#: Depth limits the growing search steps through.
DEPTH_LADDER = (2, 3, 4, 6, 8, 10, 12, 14, 16, 20, 24, 32)


def _depths(value):
    v = ints_at_least("forest_depths", 1)(value)
    bad = [d for d in v if d > _MAX_DEPTH]
    if bad:
        raise ValueError(f"space.forest_depths must be at most {_MAX_DEPTH} (the forest format "
                         f"stores at most {_MAX_DEPTH} levels); got {bad}")
    return v


def _leaf_bits(value):
    if value not in (8, 16) or isinstance(value, bool):
        raise ValueError(f"space.forest_leaf_bits must be 8 or 16; got {value!r}")
    return int(value)


class ForestSpec(KindSpec):
    """Tree forests on the bridge (see the module docstring)."""

    kind = "forest"
    protection_sites = ("wire", "image")
    marker = "P"
    site_text = "forest tree outputs"
    exact_closed_form = False
    compute_text = "forest tree outputs"
    space_options = (
        SpaceOption("forest_estimators", ("rf",), one_of("forest_estimators", ESTIMATORS),
                    cli="--forest-estimators",
                    help="forest estimators: rf (random forest), extra (extra trees) "
                    "(comma list)"),
        SpaceOption("forest_trees", (5, 20), ints_at_least("forest_trees", 1),
                    cli="--forest-trees", item=int, help="trees per forest (comma list)"),
        SpaceOption("forest_depths", (4, 8), _depths, cli="--forest-depths", item=int,
                    help="forest depth limits (comma list, at most 64)"),
        SpaceOption("forest_leaves", LEAF_FORMS, one_of("forest_leaves", LEAF_FORMS),
                    cli="--forest-leaves",
                    help="forest leaf forms: class (hard vote, no table), proba (soft vote, "
                    "a shared table of quantized probabilities) (comma list)"),
        SpaceOption("forest_leaf_bits", 8, _leaf_bits),
    )
    example_space = {"forest_trees": (4,), "forest_depths": (3,),
                     "forest_leaves": ("class", "proba")}
    example_variants = ("rf_proba", "extra_class")
    analytic_note = ("forest: no exact closed form; under independent noise on the tree "
                     "outputs a lower bound of the same rate, P(Binomial(T, eps) <= radius), "
                     "from each point's radius (the most trees whose leaves may all change "
                     "without changing its label)")

    def configurations(self, space, *, n_classes, n_features, binary):
        out = []
        for est in tuple_of(space.forest_estimators):
            for n in space.forest_trees:
                for depth in space.forest_depths:
                    for leaf in tuple_of(space.forest_leaves):
                        cfg = {"kind": self.kind, "estimator": est, "n_trees": int(n),
                               "max_depth": int(depth), "leaf": leaf}
                        if leaf == "proba":
                            cfg["leaf_bits"] = int(space.forest_leaf_bits)
                        out.append(cfg)
        return out

    def seeds(self, space, *, n_classes, n_features, binary):
        """The fewest trees of the shallowest depth, per estimator and leaf form."""
        T, d = min(space.forest_trees), min(space.forest_depths)
        return [cfg for cfg in self.configurations(space, n_classes=n_classes,
                                                   n_features=n_features, binary=binary)
                if cfg["n_trees"] == T and cfg["max_depth"] == d]

    def grow(self, config, space, *, n_classes, n_features, binary):
        """One step each: more trees (about 1.5 times, then 1.25 times:
        :data:`TREE_LADDER`), deeper
        trees (:data:`DEPTH_LADDER`)."""
        out = []
        T, d = int(config["n_trees"]), int(config["max_depth"])
        more = [t for t in TREE_LADDER if t > T]
        if more:
            out.append({**config, "n_trees": more[0]})
        deeper = [x for x in DEPTH_LADDER if x > d]
        if deeper:
            out.append({**config, "max_depth": deeper[0]})
        return out

    def family(self, config):
        """Estimator and leaf form: class leaves (no table) and probability leaves grow
        on their own fronts (class leaves take far less flash per tree)."""
        return f"forest {config['estimator']} {config['leaf']}"

    def baselines(self, space, *, n_classes, n_features, binary):
        """A plain random forest: scikit-learn's defaults (unlimited depth, here the
        format's 64 levels; soft vote, 8-bit probability leaves), growing numbers of
        trees."""
        ladder = [{"kind": self.kind, "estimator": "rf", "n_trees": t, "max_depth": _MAX_DEPTH,
                   "leaf": "proba", "leaf_bits": 8} for t in (1,) + TREE_LADDER]
        return [("plain forest", ladder)]

    def label(self, config):
        leaf = config["leaf"] + (str(config["leaf_bits"]) if config["leaf"] == "proba" else "")
        return (f"forest {config['estimator']} T={config['n_trees']} d={config['max_depth']} "
                f"{leaf}")

    def screen(self, config, task, random_state):
        from firmware_sim import load, write_container
        from firmware_sim.kinds.forest import make_forest_arrays

        T, C, d = int(config["n_trees"]), task.n_classes, task.n_features
        leaf_value = None
        if config["leaf"] == "proba":              # one row of the table's dtype
            leaf_value = np.full((1, C), 2 ** int(config.get("leaf_bits", 16)) - 1)
        # T one-leaf trees (no decision node): the smallest image of T trees
        arrays = make_forest_arrays(np.zeros(0), np.zeros(0), np.zeros(0), np.zeros(0),
                                    np.zeros(T, np.int64), C, np.zeros(d), np.zeros(d, np.int8),
                                    leaf_value=leaf_value)
        res = load(write_container(None, self.kind, arrays)).resources()
        return {"flash_bytes": int(res["flash_bytes"]), "ram_bytes": int(res["ram_bytes"]),
                "exact": False}

    def fit(self, config, task, *, plan_eps, random_state, screened=None):
        from export.forest import export_forest, fit_forest

        model = fit_forest(task.X_train, task.labels(task.y_train), kind=config["estimator"],
                           n_trees=int(config["n_trees"]), max_depth=int(config["max_depth"]),
                           random_state=random_state)
        ex = export_forest(model, task.X_test, leaf=config["leaf"],
                           leaf_bits=int(config.get("leaf_bits", 16)), meta=task.meta)
        # the model's classes as indices of the task's (every class has training rows)
        idx = np.searchsorted(task.classes, np.asarray(model.classes_))
        where = {int(v): i for i, v in enumerate(idx.tolist())}
        y_dev = np.array([where.get(int(v), len(idx)) for v in task.y_test], np.int64)
        Xd = task.X_test
        labels = np.asarray(ex.device.infer(ex.device.encode(Xd)).labels, np.int64)
        acc = float(np.mean(labels == y_dev))
        info = {"n_nodes": int(ex.device.n_nodes), "n_leaves": int(ex.device.n_leaves),
                "label_mismatches": ex.label_mismatches}
        return Fitted(ex, Xd, y_dev, acc, info)

    def analytic(self, device, X, fault, y=None, site=None):
        return analytic_forest(device, X, fault, y,
                               site=device.default_site if site is None else site)

    def example_fit(self, X, y, *, meta, variant="rf_proba"):
        from export.forest import export_forest, fit_forest

        if variant == "rf_proba":
            model = fit_forest(X, y, kind="rf", n_trees=10, max_depth=4, random_state=0)
            leaf = "proba"
        elif variant == "extra_class":
            model = fit_forest(X, y, kind="extra", n_trees=7, max_depth=5, random_state=0)
            leaf = "class"
        else:
            raise ValueError(f"variant must be one of {self.example_variants}; got {variant!r}")
        return export_forest(model, X, leaf=leaf, meta=dict(meta))


# ----------------------------------------------------------------------------
# closed forms
# ----------------------------------------------------------------------------
def _leaf_votes(device):
    """int64 (n_leaves, n_classes): what each leaf adds to the votes."""
    if device.leaf == "class":
        return np.eye(device.n_classes, dtype=np.int64)
    return device.container.arrays["leaf_value"].astype(np.int64)


def forest_radius(device, leaves):
    """Per point, the most trees whose leaves can all be replaced (by any leaves)
    without changing its label.

    A tree whose leaf ``l`` is replaced by ``l'`` moves the margin ``V[w] - V[c]``
    of the winner ``w`` over class ``c`` by ``(v_l'[w] - v_l'[c]) - (v_l[w] -
    v_l[c])`` (``v`` a leaf's votes); the worst ``k`` trees together take the
    ``k`` largest worst-case moves. The label stays while every margin stays
    positive (classes before ``w``: ties go to the lowest index) or non-negative
    (classes after it).

    Parameters
    ----------
    device : firmware_sim.kinds.forest.ForestDevice
    leaves : int array (t, n_trees)
        Clean leaf ids (``device.stage(frames)``).

    Returns
    -------
    int64 array (t,)
        In ``[0, n_trees]``.

    Examples
    --------
    Three one-leaf trees voting class 0 (class leaves): one changed tree
    leaves votes 2 : 1, two can make class 1 win; with votes 2 : 1 a single
    change can.

    >>> from firmware_sim.kinds.forest import ForestDevice, make_forest_arrays
    >>> from firmware_sim import read_container, write_container
    >>> a = make_forest_arrays([], [], [], [], [0, 0, 0], 2, [0.0], [0])
    >>> dev = ForestDevice(read_container(write_container(None, "forest", a)))
    >>> forest_radius(dev, [[0, 0, 0], [0, 0, 1]]).tolist()
    [1, 0]
    """
    V = _leaf_votes(device)
    leaves = np.asarray(leaves, np.int64)
    votes = V[leaves].sum(axis=1)                        # (t, C)
    win = np.argmax(votes, axis=1)                       # the first largest, as the device
    t, T = leaves.shape
    C = V.shape[1]
    radius = np.full(t, T, np.int64)
    for c in range(C):
        other = win != c
        if not other.any():
            continue
        w = win[other]
        own = V[leaves[other], w[:, None]] - V[leaves[other], c]       # (n, T)
        best = (V[:, w] - V[:, [c]]).min(axis=0)                        # worst leaf, (n,)
        drop = np.sort(own - best[:, None], axis=1)[:, ::-1]           # largest first
        room = votes[other, w] - votes[other, c] - (c < w).astype(np.int64)
        # the most k with the k largest drops summing to <= room
        k = np.sum(np.cumsum(drop, axis=1) <= room[:, None], axis=1)
        radius[other] = np.minimum(radius[other], k)
    return radius


def analytic_forest(device, X, fault, y=None, site="intermediate"):
    """The closed forms of a forest under ``fault`` at ``site``: a lower bound only.

    For a BSC (or an interleaved one) on the tree outputs, each tree's leaf is
    replaced by a uniformly random other leaf with probability ``eps``,
    independently: the label is kept at least when no more trees than the
    point's :func:`forest_radius` change, so ``same_rate >= mean
    P(Binomial(T, eps) <= radius)``. Nothing exact is computed (the vote of
    random leaves has no small closed form), so ``available`` is False.

    Returns
    -------
    dict
        ``available`` False, ``reason``; with the bound, ``same_rate_lower_bound``,
        ``per_output_eps``, ``radius_min``, ``radius_mean``.
    """
    from scipy.stats import binom

    from export._closed_forms import analytic_upsets
    from firmware_sim.faults import BSC, Interleave

    if fault.target in ("image", "mixed"):
        return analytic_upsets(device, X, fault, y)
    if site != "intermediate":
        return {"available": False, "reason": "no closed form for faults on the int16 "
                "features on the wire (the bound covers the tree outputs)"}
    inner = fault.fault if isinstance(fault, Interleave) else fault
    if not isinstance(inner, BSC) or np.ndim(inner.eps) != 0:
        return {"available": False, "reason": "no closed form for this fault on the tree "
                "outputs (the bound needs independent noise with one rate for every tree)"}
    e = float(inner.eps)
    rad = forest_radius(device, device.stage(device.encode(X)))
    bound = float(binom.cdf(rad, device.n_trees, e).mean())
    return {"available": False, "per_output_eps": e, "same_rate_lower_bound": bound,
            "radius_min": int(rad.min(initial=0)), "radius_mean": float(rad.mean()),
            "reason": "no exact closed form for forests (a lower bound of the same rate from "
                      "each point's radius is given)"}


register_kind_spec(ForestSpec)
