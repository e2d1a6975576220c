"""Export a fitted tree forest (random forest, extra trees, one decision tree) to the
``forest`` container and an ONNX graph.

:func:`export_forest` takes a fitted scikit-learn ``RandomForestClassifier``,
``ExtraTreesClassifier`` or ``DecisionTreeClassifier`` (or a ``Pipeline``
ending in one whose other steps fold: per-feature monotone affine scalers and
feature selectors, :mod:`export.pipeline`) and writes

* the container the device reads (``docs/container_format.md``, "Model kind
  forest"): decision nodes in preorder as narrow typed arrays, leaves
  deduplicated in a shared table of quantized per-class probabilities
  (``leaf="proba"``, the soft vote ``predict`` computes) or no table at all
  (``leaf="class"``: the leaf id is the tree's majority class, a hard vote);
* an ONNX graph (opset 17 and ai.onnx.ml 3): raw float features in, the true
  class labels out, plus every tree's leaf id and the integer votes, equal to
  the device's on every input (the same quantizer, thresholds and integers).

Input quantizer (:func:`fit_threshold_quantizer`). Frames are the ECOC
quantizer's int16 ``q = clip(rint((x - c) 2**e), -32767, 32767)``, but each
feature's ``c`` and ``e`` come from the trees' thresholds on it rather than
from data: only the comparisons with thresholds matter, so the finest step
that keeps every threshold inside +-32760 is used (values beyond are clipped
and still compare the same with every threshold), never finer than twice the
float32 resolution at the thresholds (scikit-learn compares float32
features). A threshold ``t`` becomes ``floor((t - c) 2**e)``, then the grid
points next to it are run through the model's own float arithmetic (a
pipeline's ``transform``, the float32 cast) and the largest that goes left is
kept: on the grid the device splits exactly as the model does, and off the
grid only a feature within one quantizer step of a threshold can go the other
way. ``export_forest`` counts those inputs (``near_threshold``) and the ones
whose vote changes although every tree reaches the model's leaf
(``vote_differences``: probability quantization near a tie, or the hard vote
of class leaves).
"""

import math

import numpy as np
import onnx
from onnx import TensorProto, helper
from sklearn.utils.validation import check_is_fitted

from firmware_sim.artifact import FORMAT_VERSION, write_container
from firmware_sim.ecoc import Q_MAX
from firmware_sim.kinds.forest import MAX_DEPTH, load_forest, make_forest_arrays

from ._trees_onnx import _tree_ensemble
from .ecoc import ML_OPSET, _exact_thresholds, _init, _node
from .onnx_utils import (IR_VERSION, ONNX_FORMAT_VERSION, OPSET, class_labels_initializer,
                         input_elem_type, json_props, narrow_int_initializer, save_model)
from .pipeline import affine_of_steps
from .result import ExportResult

__all__ = ["export_forest", "quantize_forest", "forest_to_onnx", "fit_threshold_quantizer",
           "float_leaves", "fit_forest", "ESTIMATORS", "KINDS", "LEAVES", "LEAF_BITS"]

#: What :func:`export_forest` accepts (or a Pipeline ending in one).
ESTIMATORS = ("RandomForestClassifier", "ExtraTreesClassifier", "DecisionTreeClassifier")
#: :func:`fit_forest`'s kinds: ``--kind`` of ``edgecode forest``.
KINDS = {"rf": "RandomForestClassifier", "extra": "ExtraTreesClassifier",
         "tree": "DecisionTreeClassifier"}
#: Leaf forms: per-class quantized probabilities (soft vote) or the majority class.
LEAVES = ("proba", "class")
#: Bits of a quantized leaf probability.
LEAF_BITS = (8, 16)
#: Thresholds are mapped inside +-Q_FIT, so that a clipped frame value
#: (+-32767) still compares with every threshold as the raw value does.
Q_FIT = 32760
_E_MIN, _E_MAX = -128, 100
#: Grid points per chunk of the exact-threshold pass (bounds its memory).
_CHUNK_CELLS = 1 << 22


# ------------------------------------------------------------------ model
def fit_forest(X, y, *, kind="rf", n_trees=100, max_depth=None, min_samples_leaf=1,
               random_state=0, progress=None):
    """Fit a forest (or one tree) on ``X, y``, reporting progress between trees.

    Parameters
    ----------
    X, y : array-likes
    kind : {"rf", "extra", "tree"}
        ``RandomForestClassifier``, ``ExtraTreesClassifier`` or one
        ``DecisionTreeClassifier`` (``n_trees`` must then be 1).
    n_trees, max_depth, min_samples_leaf, random_state
        The estimator's ``n_estimators``, ``max_depth``, ``min_samples_leaf``,
        ``random_state``.
    progress : callable, optional
        ``progress(done, total, "trees")`` after each group of trees (a
        forest grows by ``warm_start``, in 20 steps of at most 25 trees: the same
        trees as one ``fit``); an exception it raises (``KeyboardInterrupt``)
        stops the fit.

    Returns
    -------
    The fitted estimator.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> X, y = load_iris(return_X_y=True)
    >>> steps = []
    >>> rf = fit_forest(X, y, n_trees=5, max_depth=2, progress=lambda d, t, s: steps.append(d))
    >>> len(rf.estimators_), steps
    (5, [1, 2, 3, 4, 5])
    """
    from sklearn.ensemble import ExtraTreesClassifier, RandomForestClassifier
    from sklearn.tree import DecisionTreeClassifier

    if kind not in KINDS:
        raise ValueError(f"kind must be one of {sorted(KINDS)}; got {kind!r}")
    if isinstance(n_trees, bool) or int(n_trees) != n_trees or n_trees < 1:
        raise ValueError(f"n_trees must be an integer >= 1; got {n_trees!r}")
    n_trees = int(n_trees)
    if kind == "tree":
        if n_trees != 1:
            raise ValueError(f"kind 'tree' fits one decision tree; got n_trees={n_trees}")
        est = DecisionTreeClassifier(max_depth=max_depth, min_samples_leaf=min_samples_leaf,
                                     random_state=random_state).fit(X, y)
        if progress is not None:
            progress(1, 1, "trees")
        return est
    cls = RandomForestClassifier if kind == "rf" else ExtraTreesClassifier
    est = cls(n_estimators=0, max_depth=max_depth, min_samples_leaf=min_samples_leaf,
              random_state=random_state, warm_start=True)
    step = max(1, min(n_trees // 20, 25))
    for done in list(range(step, n_trees, step)) + [n_trees]:
        est.set_params(n_estimators=done).fit(X, y)
        if progress is not None:
            progress(done, n_trees, "trees")
    return est.set_params(warm_start=False)


def _unpack(model):
    """(final estimator, steps before it, their transform or None, raw features)."""
    from sklearn.ensemble import ExtraTreesClassifier, RandomForestClassifier
    from sklearn.pipeline import Pipeline
    from sklearn.tree import DecisionTreeClassifier

    accepted = (RandomForestClassifier, ExtraTreesClassifier, DecisionTreeClassifier)
    steps, est, where = [], model, "model"
    if isinstance(model, Pipeline):
        if not model.steps:
            raise ValueError("the pipeline has no steps")
        steps = list(model.steps[:-1])
        where, est = f"the pipeline's last step {model.steps[-1][0]!r}", model.steps[-1][1]
    if not isinstance(est, accepted):
        raise TypeError(f"{where} must be a fitted {', '.join(ESTIMATORS[:-1])} or "
                        f"{ESTIMATORS[-1]} (or a Pipeline ending in one); got "
                        f"{type(est).__name__}")
    check_is_fitted(est)
    if getattr(est, "n_outputs_", 1) != 1:
        raise ValueError(f"{type(est).__name__} was fitted on {est.n_outputs_} outputs; the "
                         "device runs single-output classifiers (fit one model per output)")
    d_raw = est.n_features_in_
    if steps:
        first = getattr(model, "n_features_in_", None) if model is not est else None
        d_raw = int(first) if first is not None else int(est.n_features_in_)
    transform = model[:-1].transform if steps else None
    return est, steps, transform, int(d_raw)


def _trees(est):
    return [e.tree_ for e in est.estimators_] if hasattr(est, "estimators_") else [est.tree_]


def _preorder(tree):
    """Decision node ids of a scikit-learn tree in preorder (left subtree first)."""
    left, right = tree.children_left, tree.children_right
    order, stack = [], [0]
    while stack:
        nd = stack.pop()
        if left[nd] < 0:
            continue
        order.append(nd)
        stack.append(int(right[nd]))
        stack.append(int(left[nd]))
    return order


def _leaf_rows(tree, leaf, leaf_bits):
    """(leaf node ids, their device values): quantized probabilities (int64 rows)
    or the majority class (the first largest, as ``predict``)."""
    nodes = np.flatnonzero(tree.children_left < 0)
    value = np.asarray(tree.value[nodes, 0, :], np.float64)
    if leaf == "class":
        return nodes, np.argmax(value, axis=1).astype(np.int64)
    total = value.sum(axis=1, keepdims=True)
    p = value / np.where(total > 0, total, 1.0)
    return nodes, np.rint(p * (2**leaf_bits - 1)).astype(np.int64)


def fit_threshold_quantizer(feature, threshold, step_min, n_features):
    """Per-feature ``(center float64 (d,), shift int8 (d,))`` from the thresholds.

    Parameters
    ----------
    feature, threshold : arrays (n,)
        Raw feature and raw threshold of every decision node.
    step_min : array (n,)
        Smallest useful quantizer step at each node (the float resolution of
        the model's own comparison there).
    n_features : int

    Notes
    -----
    For the thresholds ``[lo, hi]`` of a feature: the largest ``e`` in
    [-128, 100] with ``max(|lo - c|, |hi - c|) 2**e <= 32760`` (``c`` the
    midpoint on the ``2**-e`` grid) and ``2**-e >= step_min``; one threshold
    gives ``e`` from ``step_min`` alone. A feature no node tests gets
    ``c = 0, e = 0`` (the device never reads it).

    Examples
    --------
    >>> c, e = fit_threshold_quantizer([0, 0], [0.5, 15.5], [2**-22, 2**-19], 2)
    >>> c.tolist(), e.tolist()
    ([8.0, 0.0], [12, 0])
    """
    feature = np.asarray(feature, np.int64)
    threshold = np.asarray(threshold, np.float64)
    step_min = np.asarray(step_min, np.float64)
    center = np.zeros(n_features)
    shift = np.zeros(n_features, np.int64)
    for f in np.unique(feature).tolist():
        sel = feature == f
        t = threshold[sel]
        lo, hi = float(t.min()), float(t.max())
        mid, half = (lo + hi) / 2.0, (hi - lo) / 2.0
        smin = float(step_min[sel].max())
        e = _E_MAX if smin <= 0 else int(math.floor(-math.log2(smin)))
        if half > 0:
            e = min(e, int(math.floor(math.log2(Q_FIT / half))))
        e = int(np.clip(e, _E_MIN, _E_MAX))
        while True:
            c = math.ldexp(round(math.ldexp(mid, e)), -e)
            if max(abs(lo - c), abs(hi - c)) * 2.0**e <= Q_FIT or e <= _E_MIN:
                break
            e -= 1
        center[f], shift[f] = c, e
    return center, shift.astype(np.int8)


def _exact_in_chunks(la, T, center, shift):
    """:func:`export.ecoc._exact_thresholds` a bounded number of grid rows at a time."""
    per = max(1, _CHUNK_CELLS // (7 * max(1, center.shape[0])))
    out = T.copy()
    for a in range(0, T.shape[0], per):
        part = {k: (v[a:a + per] if isinstance(v, np.ndarray) else v) for k, v in la.items()}
        out[a:a + per] = _exact_thresholds(part, T[a:a + per], center, shift)
    return out


def quantize_forest(model, *, leaf="proba", leaf_bits=16):
    """Device arrays of a fitted forest, tree or pipeline ending in one.

    Parameters
    ----------
    model : RandomForestClassifier, ExtraTreesClassifier, DecisionTreeClassifier or Pipeline
    leaf : {"proba", "class"}
        Per-class quantized probabilities (soft vote, what ``predict`` does) or
        the majority class of each leaf (hard vote, no leaf table).
    leaf_bits : {8, 16}
        Bits of a quantized probability (``leaf="proba"``).

    Returns
    -------
    arrays : dict
        For :func:`firmware_sim.artifact.write_container` (kind ``"forest"``).
    info : dict
        ``estimator`` (the final one), ``transform`` (the steps' own, or None),
        ``leaf_of_node`` (per tree, scikit-learn node id -> leaf id, -1 at a
        decision node), ``depth`` (per tree), ``n_features``.

    Raises
    ------
    TypeError
        A model that is not one of :data:`ESTIMATORS` (or a pipeline ending in one).
    ValueError
        A step that does not fold, a multi-output model, a tree deeper than
        the format's 64 levels, a bad ``leaf`` or ``leaf_bits``.
    """
    if leaf not in LEAVES:
        raise ValueError(f"leaf must be one of {LEAVES}; got {leaf!r}")
    if leaf == "proba" and leaf_bits not in LEAF_BITS:
        raise ValueError(f"leaf_bits must be one of {LEAF_BITS}; got {leaf_bits!r}")
    est, steps, transform, d_raw = _unpack(model)
    src, a, b = affine_of_steps(steps, d_raw)
    if src.shape[0] != est.n_features_in_:
        raise ValueError(f"the steps before the {type(est).__name__} give {src.shape[0]} "
                         f"features; it was fitted on {est.n_features_in_}")
    trees = _trees(est)
    n_classes = int(np.atleast_1d(est.n_classes_)[0])
    depths = np.array([t.max_depth for t in trees], np.int64)
    if depths.max(initial=0) > MAX_DEPTH:
        k = int(np.argmax(depths))
        raise ValueError(f"tree {k} has {depths[k]} decision levels; the forest format stores "
                         f"at most {MAX_DEPTH} (refit with max_depth <= {MAX_DEPTH})")
    # the leaf table (deduplicated) and every tree's leaves
    leaf_nodes, rows = zip(*(_leaf_rows(t, leaf, leaf_bits) for t in trees))
    if leaf == "class":
        ids = list(rows)
        n_leaves, table = n_classes, None
    else:
        allrows = np.vstack(rows)
        uniq, first, inverse = np.unique(allrows, axis=0, return_index=True,
                                         return_inverse=True)
        rank = np.empty(len(first), np.int64)
        rank[np.argsort(first, kind="stable")] = np.arange(len(first))   # first-seen order
        table = uniq[np.argsort(rank)]
        flat = rank[inverse.reshape(-1)]
        cuts = np.cumsum([len(r) for r in rows])[:-1]
        ids = np.split(flat, cuts)
        n_leaves = table.shape[0]
    leaf_of_node = []
    for t, nodes, lid in zip(trees, leaf_nodes, ids):
        m = np.full(t.node_count, -1, np.int64)
        m[nodes] = lid
        leaf_of_node.append(m)
    # decision nodes in preorder, references relative and forward
    feat, thr, inner_f, inner_t, left, right, root = [], [], [], [], [], [], []
    start = 0
    for t, lmap in zip(trees, leaf_of_node):
        order = _preorder(t)
        if not order:
            root.append(int(lmap[0]))
            continue
        pos = np.full(t.node_count, -1, np.int64)
        pos[order] = start + np.arange(len(order))
        root.append(n_leaves + start)
        for nd in order:
            i = pos[nd]
            for child, out in ((t.children_left[nd], left), (t.children_right[nd], right)):
                out.append(int(lmap[child]) if lmap[child] >= 0
                           else n_leaves + int(pos[child] - i - 1))
        inner_f.append(t.feature[order])
        inner_t.append(t.threshold[order])
        start += len(order)
    inner_f = np.concatenate(inner_f).astype(np.int64) if inner_f else np.zeros(0, np.int64)
    inner_t = np.concatenate(inner_t).astype(np.float64) if inner_t else np.zeros(0)
    scale = a[inner_f]
    if (scale <= 0).any():
        bad = int(inner_f[np.flatnonzero(scale <= 0)[0]])
        raise ValueError(f"cannot fold the pipeline into trees: feature {bad} of the "
                         f"{type(est).__name__} is scaled by {float(a[bad])!r} (<= 0) by the "
                         "steps before it; a node 'x <= t' would become 'x >= t'', which the "
                         "device does not evaluate")
    feat = src[inner_f]
    thr = (inner_t - b[inner_f]) / np.where(scale > 0, scale, 1.0)
    # the model compares float32(x') <= t': its resolution at the node, in raw units
    step_min = 2.0 * np.spacing(np.abs(inner_t).astype(np.float32)).astype(np.float64) / \
        np.where(scale > 0, scale, 1.0)
    center, shift = fit_threshold_quantizer(feat, thr, step_min, d_raw)
    T = np.floor((thr - center[feat]) * np.exp2(shift[feat].astype(np.float64)))
    T = np.clip(T, -Q_MAX - 1, Q_MAX).astype(np.int64)
    la = {"feature": feat, "threshold": thr, "learner_feature": inner_f,
          "learner_threshold": inner_t, "transform": transform}
    T = _exact_in_chunks(la, T, center, shift) if T.size else T
    arrays = make_forest_arrays(feat, T, left, right, root, n_classes, center, shift,
                                leaf_value=table)
    info = {"estimator": est, "transform": transform, "leaf_of_node": leaf_of_node,
            "depth": depths, "n_features": d_raw, "leaf": leaf,
            "leaf_bits": leaf_bits if leaf == "proba" else None}
    return arrays, info


def float_leaves(info, X):
    """Leaf ids the float model's trees reach on raw rows ``X`` (t, T): scikit-learn's
    own ``apply`` on what the trees see (the steps' ``transform``, float32),
    mapped to the device's leaf ids (``info`` from :func:`quantize_forest`)."""
    est, transform = info["estimator"], info["transform"]
    Xl = np.asarray(transform(X) if transform is not None else X, np.float32)
    trees = est.estimators_ if hasattr(est, "estimators_") else [est]
    out = np.empty((Xl.shape[0], len(trees)), np.int64)
    for k, (tr, lmap) in enumerate(zip(trees, info["leaf_of_node"])):
        out[:, k] = lmap[tr.apply(Xl)]
    return out


# ------------------------------------------------------------------ ONNX
def _input_quantizer(center, shift, input_dtype, nodes, inits):
    """Nodes from ``X`` (``input_dtype``) to ``"qd"``: the device's input quantizer
    ``clip(rint((x - center) 2**shift), -32767, 32767)`` in double, exactly as
    :func:`firmware_sim.ecoc.quantize_inputs` (the graph of
    :func:`export.ecoc.ecoc_to_onnx` quantizes the same way)."""
    x = "X"
    if input_dtype == "float32":
        x = _node(nodes, "Cast", [x], ["X64"], to=TensorProto.DOUBLE)
    scale = np.exp2(np.asarray(shift).astype(np.float64))
    x = _node(nodes, "Sub", [x, _init("in_center", np.asarray(center, np.float64), inits)],
              ["X_centered"])
    x = _node(nodes, "Mul", [x, _init("in_scale", scale, inits)], ["X_scaled"])
    x = _node(nodes, "Round", [x], ["X_rounded"])
    return _node(nodes, "Clip", [x, _init("q_min", np.array(-Q_MAX, np.float64), inits),
                                 _init("q_max", np.array(Q_MAX, np.float64), inits)], ["qd"])


def forest_to_onnx(arrays, *, classes=None, input="features", input_dtype="float32",
                   props=None):
    """ONNX graph of the device arrays: features -> quantizer -> trees -> votes -> label.

    Parameters
    ----------
    arrays : dict
        The ``forest`` container's arrays (:func:`quantize_forest`).
    classes : sequence or None
        Class labels; ``label`` is then ``classes[index]`` (int64 for integer
        labels, double for floats, string otherwise). None: the class index.
    input : {"features", "frame"}
        ``"features"``: ``X`` (N, d) of ``input_dtype``, quantized in the graph
        as the device's ``encode`` does; ``"frame"``: ``q`` int16 (N, d), the
        device frame.
    input_dtype : {"float32", "float64"}
    props : dict or None
        Extra metadata (JSON values).

    Returns
    -------
    onnx.ModelProto
        Outputs ``label`` (N,), ``leaves`` int64 (N, T) (leaf id per tree) and
        ``votes`` int64 (N, C); the label is the first class with the most
        votes, as on the device.
    """
    if input not in ("features", "frame"):
        raise ValueError(f"input must be 'features' or 'frame'; got {input!r}")
    input_dtype, in_type = input_elem_type(input_dtype)
    d = int(arrays["in_center"].shape[0])
    C = int(arrays["n_classes"][0])
    T = int(arrays["tree_root"].shape[0])
    proba = "leaf_value" in arrays
    nodes, inits = [], []
    if input == "features":
        in_info = helper.make_tensor_value_info("X", in_type, ["N", d])
        q = _input_quantizer(arrays["in_center"], arrays["in_shift"], input_dtype, nodes, inits)
    else:
        in_info = helper.make_tensor_value_info("q", TensorProto.INT16, ["N", d])
        q = "q"
    qf = _node(nodes, "Cast", [q], ["qf"], to=TensorProto.FLOAT)
    leaves = _tree_ensemble(arrays, qf, nodes)
    if proba:
        init, cast = narrow_int_initializer("leaf_table", arrays["leaf_value"].astype(np.int64))
        inits.append(init)
        nodes.extend(cast)
        per = _node(nodes, "Gather", ["leaf_table", leaves], ["leaf_votes"], axis=0)
    else:
        per = _node(nodes, "OneHot", [leaves, _init("n_cls", np.array(C, np.int64), inits),
                                      _init("onehot_values", np.array([0, 1], np.int64),
                                            inits)], ["leaf_votes"], axis=-1)
    votes = _node(nodes, "ReduceSum", [per, _init("tree_axis", np.array([1], np.int64), inits)],
                  ["votes"], keepdims=0)
    meta = {"format_version": ONNX_FORMAT_VERSION, "kind": "forest",
            "leaf": "proba" if proba else "class", "n_trees": T, "n_features": d,
            "n_classes": C, "n_leaves": int(arrays["leaf_value"].shape[0]) if proba else C,
            "input": "X" if input == "features" else "q",
            "input_dtype": input_dtype if input == "features" else "int16",
            "outputs": ["label", "leaves", "votes"],
            "label": "class index" if classes is None else "class label",
            "tie_rule": "lowest class index",
            "quantizer": {"center": [float(v) for v in arrays["in_center"]],
                          "shift": [int(v) for v in arrays["in_shift"]], "q_max": Q_MAX,
                          "formula": "clip(rint((x - center) * 2**shift), -q_max, q_max)"},
            "container_format_version": int(FORMAT_VERSION)}
    if proba:
        meta["leaf_bits"] = 8 * arrays["leaf_value"].dtype.itemsize
    # ArgMax on doubles: exact (votes < 2**53) and supported by every runtime
    vd = _node(nodes, "Cast", [votes], ["votes_d"], to=TensorProto.DOUBLE)
    if classes is None:
        label_type = TensorProto.INT64
        _node(nodes, "ArgMax", [vd], ["label"], axis=1, keepdims=0, select_last_index=0)
    else:
        if len(classes) != C:
            raise ValueError(f"classes has {len(classes)} labels; the forest has {C} classes")
        cl_init, label_type, meta["classes"] = class_labels_initializer("classes", classes)
        inits.append(cl_init)
        idx = _node(nodes, "ArgMax", [vd], ["class_index"], axis=1, keepdims=0,
                    select_last_index=0)
        _node(nodes, "Gather", ["classes", idx], ["label"], axis=0)
    graph = helper.make_graph(
        nodes, "forest_" + meta["leaf"], [in_info],
        [helper.make_tensor_value_info("label", label_type, ["N"]),
         helper.make_tensor_value_info("leaves", TensorProto.INT64, ["N", T]),
         helper.make_tensor_value_info("votes", TensorProto.INT64, ["N", C])],
        initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET),
                                                    helper.make_opsetid("ai.onnx.ml",
                                                                        ML_OPSET)],
                              producer_name="edgecode",
                              doc_string="edgecode forest: fixed-point trees, integer vote "
                              "(ties: lowest class index)")
    model.ir_version = IR_VERSION
    meta.update(props or {})
    helper.set_model_props(model, json_props(meta))
    onnx.checker.check_model(model, full_check=True)
    return model


# ------------------------------------------------------------------ export
def _check_rows(X, d):
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[1] != d:
        raise ValueError(f"X_check must have shape (n_samples, {d}) (the model's raw "
                         f"features); got shape {X.shape}")
    if not np.isfinite(X).all():
        i = int(np.flatnonzero(~np.isfinite(X).all(axis=1))[0])
        raise ValueError(f"X_check must be finite (no NaN or inf); row {i} is not")
    return X


def export_forest(model, X_check=None, *, container_path=None, onnx_path=None, leaf="proba",
                  leaf_bits=16, meta=None, onnx_input="features", onnx_input_dtype="float32"):
    """Write a fitted forest as a ``forest`` container and an ONNX graph.

    Parameters
    ----------
    model : RandomForestClassifier, ExtraTreesClassifier, DecisionTreeClassifier or Pipeline
        Fitted; a pipeline ends in one of these and its other steps must fold
        (:data:`export.pipeline.FOLDABLE`: per-feature monotone affine scalers,
        feature selectors, ``"passthrough"``).
    X_check : array-like (n, n_features), optional
        Raw rows (what ``model.predict`` takes) on which the device's labels are
        compared with ``model.predict``; the quantizer does not need them
        (it is fitted on the thresholds).
    container_path, onnx_path : path or None
    leaf : {"proba", "class"}
        ``"proba"`` (default): per-class probabilities quantized to
        ``leaf_bits``, the soft vote of ``predict``. ``"class"``: the majority
        class of each leaf, a hard vote (for a single tree the same labels; for
        a forest the vote of its trees' classes), the smallest image.
    leaf_bits : {8, 16}
        Bits per quantized probability (``leaf="proba"``); 16 makes vote
        changes from quantization rare.
    meta : dict or None
        Extra metadata for both artifacts (the dataset, ...).
    onnx_input : {"features", "frame"}
    onnx_input_dtype : {"float32", "float64"}

    Returns
    -------
    ExportResult
        ``label_mismatches``: checked rows whose device label differs from
        ``model.predict``. ``details``: ``classes``, ``leaf``, ``leaf_bits``,
        ``n_trees``, ``n_nodes``, ``n_leaves``, ``bytes_per_node``,
        ``near_threshold`` (rows where some tree reaches another leaf than
        the float model: a feature within one quantizer step of a
        threshold), ``vote_differences`` (rows where every tree reaches the
        model's leaf but the integer vote picks another class: quantized
        probabilities near a tie, or the hard vote of class leaves),
        ``onnx_input``. ``label_mismatches <= near_threshold +
        vote_differences``.

    Raises
    ------
    TypeError
        A model that is not a supported forest or tree (or a pipeline ending in one).
    ValueError
        An unfitted model, a step that does not fold, a multi-output model, a
        tree deeper than 64 levels, ``X_check`` of the wrong shape or not
        finite, a bad option.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.ensemble import RandomForestClassifier
    >>> X, y = load_iris(return_X_y=True)
    >>> names = np.array(["setosa", "versicolor", "virginica"])[y]
    >>> rf = RandomForestClassifier(10, max_depth=4, random_state=0).fit(X, names)
    >>> out = export_forest(rf, X)
    >>> out.label_mismatches, out.device.n_trees, out.classes.tolist()
    (0, 10, ['setosa', 'versicolor', 'virginica'])
    """
    if onnx_input not in ("features", "frame"):
        raise ValueError(f"onnx_input must be 'features' or 'frame'; got {onnx_input!r}")
    input_elem_type(onnx_input_dtype, what="onnx_input_dtype")
    arrays, info = quantize_forest(model, leaf=leaf, leaf_bits=leaf_bits)
    est = info["estimator"]
    Xc = None if X_check is None else _check_rows(X_check, info["n_features"])
    classes = np.asarray(est.classes_)
    meta_all = {"classes": [str(v) for v in classes.tolist()], "leaf": leaf,
                "estimator": type(est).__name__, "n_estimators": len(info["depth"]),
                "max_depth": int(info["depth"].max(initial=0)),
                "tie_rule": "lowest class index", **(meta or {})}
    if leaf == "proba":
        meta_all["leaf_bits"] = 8 * arrays["leaf_value"].dtype.itemsize
    blob = write_container(container_path, "forest", arrays, meta=meta_all)
    device = load_forest(blob)
    details = {"classes": classes.copy(), "leaf": leaf, "leaf_bits": meta_all.get("leaf_bits"),
               "n_trees": device.n_trees, "n_nodes": device.n_nodes,
               "n_leaves": device.n_leaves,
               "bytes_per_node": device.resources()["bytes_per_node"],
               "near_threshold": None, "vote_differences": None, "onnx_input": onnx_input}
    mismatches, n_checked = None, 0
    if Xc is not None and len(Xc):
        n_checked = int(Xc.shape[0])
        inf = device.infer(device.encode(Xc))
        index = {v: i for i, v in enumerate(classes.tolist())}
        want = np.array([index[v] for v in np.asarray(model.predict(Xc)).tolist()], np.int64)
        mismatches = int(np.sum(inf.labels != want))
        fl = float_leaves(info, Xc)
        near = np.any(np.asarray(inf.decision["leaves"], np.int64) != fl, axis=1)
        vote_of_float = device.vote(fl)[0]
        details["near_threshold"] = int(near.sum())
        details["vote_differences"] = int(np.sum(~near & (vote_of_float != want)))
    onnx_model = forest_to_onnx(arrays, classes=classes if onnx_input == "features" else None,
                                input=onnx_input, input_dtype=onnx_input_dtype,
                                props={"meta": meta} if meta else None)
    if onnx_path is not None:
        save_model(onnx_model, onnx_path)
    return ExportResult("forest", blob, onnx_model, device, device.resources(), n_checked,
                        mismatches, details)
