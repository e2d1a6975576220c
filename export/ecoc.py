"""Export an ECOC classifier (linear learners or decision trees) to the container and ONNX.

Both artifacts take the same fixed-point inputs ``q`` (int16, see
:func:`firmware_sim.ecoc.quantize_inputs`) and hold the same integers, so
onnxruntime and the device runtime give equal labels on every input.

Input quantization (:func:`fit_input_quantizer`): per feature, from the
calibration data's range [lo, hi], the largest power of two ``2**e`` with
``max(|lo - c|, |hi - c|) 2**e <= 32767`` where the center ``c`` (the
midpoint, rounded to the ``2**-e`` grid) is itself on the grid; then
``q = clip(rint((x - c) 2**e), -32767, 32767)``. Integer-valued features
with a range below 2**15 are therefore represented exactly.

Linear learners: learner l (one column) gets a shift ``k_l``; weights
``W[f, o] = rint(w[f, o] 2**(k_l - e_f))`` (int32, ``k_l`` the largest with
``max |W| <= 2**31 - 1``) and bias ``B[o] = rint((b[o] + sum_f w[f, o] c_f)
2**k_l)`` (int64); the device computes ``B + q W`` with an int64
accumulator, which equals ``2**k_l`` times the float score up to rounding.

Trees: threshold ``t`` of feature f becomes ``floor((t - c_f) 2**e_f)``
(clipped to [-32768, 32767]); for an input on the grid ``x <= t`` iff
``q <= floor((t - c) 2**e)``.

ONNX (opset 17, plus ai.onnx.ml 3 for trees): linear -- Cast, MatMul
(int64), Add, then per column Greater (two-class learners) or ArgMax +
Gather (k-class learners); trees -- ``TreeEnsembleRegressor`` with one
target per column whose leaf value is the symbol. Then Hamming decoding
(Equal, Not, Cast, Mul by the used mask, ReduceSum, times 2 plus the unused
count) and ArgMin (first minimum = lowest class index).
"""


import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from sklearn.utils.validation import check_is_fitted

from firmware_sim.artifact import write_container
from firmware_sim.ecoc import Q_MAX, load_ecoc, make_ecoc_arrays, quantize_inputs

from .result import ExportResult
from .onnx_utils import IR_VERSION, OPSET, save_model

__all__ = ["fit_input_quantizer", "quantize_ecoc", "ecoc_to_onnx", "export_ecoc", "ExportResult",
           "ML_OPSET"]

#: Opset of the ai.onnx.ml domain (TreeEnsembleRegressor) used by tree graphs.
ML_OPSET = 3
_W_MAX = 2**31 - 1
_B_MAX = 2**62


def fit_input_quantizer(X):
    """(center float64 (d,), shift int8 (d,)) of the per-feature power-of-two quantizer.

    Examples
    --------
    >>> c, e = fit_input_quantizer([[0.0, -1.0], [16.0, 1.0]])
    >>> c.tolist(), e.tolist()
    ([8.0, 0.0], [11, 14])
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] < 1:
        raise ValueError(f"X must be a non-empty 2-d array; got shape {X.shape}")
    if not np.isfinite(X).all():
        raise ValueError("X must be finite (no NaN or inf) to fit the input quantizer")
    lo, hi = X.min(axis=0), X.max(axis=0)
    center = np.empty(X.shape[1])
    shift = np.empty(X.shape[1], np.int64)
    for f in range(X.shape[1]):
        mid, half = (lo[f] + hi[f]) / 2.0, (hi[f] - lo[f]) / 2.0
        e = 0 if half == 0 else int(np.floor(np.log2(Q_MAX / half)))
        e = int(np.clip(e, -100, 100))
        while True:
            c = np.round(mid * 2.0**e) / 2.0**e
            if max(abs(lo[f] - c), abs(hi[f] - c)) * 2.0**e <= Q_MAX or e <= -100:
                break
            e -= 1
        center[f], shift[f] = c, e
    return center, shift.astype(np.int8)


def _check_linear_arrays(la, n_features):
    """Shapes and finiteness of learner_arrays' linear part (clear errors before quantizing)."""
    W, b = np.asarray(la["weights"]), np.asarray(la["bias"])
    n_out = np.asarray(la["n_out"], np.int64)
    k = int(n_out.sum())
    if W.shape != (n_features, k) or b.shape != (k,):
        raise ValueError(f"learner_arrays gave weights of shape {W.shape} and bias of shape "
                         f"{b.shape}; ({n_features}, {k}) and ({k},) are needed for "
                         f"n_out summing to {k}")
    if not (np.isfinite(W).all() and np.isfinite(b).all()):
        col = np.repeat(np.arange(n_out.shape[0]), n_out)
        bad = np.unique(col[~(np.isfinite(W).all(axis=0) & np.isfinite(b))])
        raise ValueError(f"the linear learners of code columns {bad[:10].tolist()} have "
                         "non-finite weights or intercepts (NaN or inf); they cannot be "
                         "quantized")


def _quantize_linear(la, center, shift, col_n_out):
    _check_linear_arrays(la, center.shape[0])
    W, b = la["weights"], la["bias"]
    scale_f = np.exp2(-shift.astype(np.float64))          # x = c + q 2**-e
    Wf = W * scale_f[:, None]
    bf = b + center @ W
    Wq = np.zeros(W.shape, np.int64)
    Bq = np.zeros(b.shape, np.int64)
    shifts = np.zeros(col_n_out.shape[0], np.int64)
    pos = 0
    for j, k in enumerate(col_n_out):
        if k == 0:
            continue
        sl = slice(pos, pos + k)
        a = np.abs(Wf[:, sl]).max()
        bmax = np.abs(bf[sl]).max()
        s = 60 if a == 0 else int(np.floor(np.log2(_W_MAX / a)))
        if bmax > 0:
            s = min(s, int(np.floor(np.log2(_B_MAX / bmax))))
        s = min(s, 60)
        while np.abs(np.rint(Wf[:, sl] * 2.0**s)).max() > _W_MAX:
            s -= 1
        Wq[:, sl] = np.rint(Wf[:, sl] * 2.0**s)
        Bq[sl] = np.rint(bf[sl] * 2.0**s)
        shifts[j] = s
        pos += k
    return Wq.astype(np.int32), Bq, shifts


def _quantize_thresholds(la, center, shift):
    f = la["feature"]
    internal = f >= 0
    fi = np.where(internal, f, 0)
    t = np.floor((la["threshold"] - center[fi]) * np.exp2(shift[fi].astype(np.float64)))
    t = np.clip(t, -Q_MAX - 1, Q_MAX)
    return np.where(internal, t, 0).astype(np.int32)


def quantize_ecoc(model, X_calib):
    """Device arrays of a fitted ECOCClassifier (linear learners or trees).

    Parameters
    ----------
    model : edgecode.ecoc.classifier.ECOCClassifier (fitted)
    X_calib : array-like (n, n_features)
        Data whose per-feature range sets the input quantizer.

    Returns
    -------
    arrays : dict
        For :func:`firmware_sim.artifact.write_container` (kind ``"ecoc"``).
    info : dict
        ``learner_kind``, ``weight_shifts`` (linear: per column) and the
        quantizer.
    """
    check_is_fitted(model)
    la = model.learner_arrays()
    center, shift = fit_input_quantizer(X_calib)
    if center.shape[0] != model.n_features_in_:
        raise ValueError(f"X_calib has {center.shape[0]} features; the model expects "
                         f"{model.n_features_in_}")
    common = dict(code=model.code_, col_classes=la["col_classes"],
                  col_n_classes=la["col_n_classes"], in_center=center, in_shift=shift)
    info = {"learner_kind": la["kind"], "in_center": center, "in_shift": shift}
    if la["kind"] == "linear":
        Wq, Bq, shifts = _quantize_linear(la, center, shift, la["n_out"])
        arrays = make_ecoc_arrays(**common, linear={"weights": Wq, "bias": Bq,
                                                    "n_out": la["n_out"]})
        info["weight_shifts"] = shifts
    else:
        tree = {"feature": la["feature"], "threshold": _quantize_thresholds(la, center, shift),
                "left": la["left"], "right": la["right"], "leaf": la["leaf"],
                "root": la["root"]}
        arrays = make_ecoc_arrays(**common, tree=tree)
    return arrays, info


# ------------------------------------------------------------------ ONNX
def _init(name, value, inits):
    inits.append(numpy_helper.from_array(np.asarray(value), name))
    return name


def _symbols_linear(arrays, nodes, inits):
    """Nodes computing 'symbols' (N, m) int64 from 'q64' for linear learners."""
    W = arrays["lin_weights"].astype(np.int64)
    nodes.append(helper.make_node("MatMul", ["q64", _init("lin_weights", W, inits)], ["mm"]))
    nodes.append(helper.make_node("Add", ["mm", _init("lin_bias", arrays["lin_bias"], inits)],
                                  ["scores"]))
    n_out = arrays["col_n_out"]
    out_off = arrays["col_out_offset"]
    cls_off = arrays["col_cls_offset"]
    classes = arrays["col_classes"].astype(np.int64)
    m = n_out.shape[0]
    pieces, order = [], []
    binary = [j for j in range(m) if n_out[j] == 1]
    if binary:
        idx = np.array([out_off[j] for j in binary], np.int64)
        lo = np.array([classes[cls_off[j]] for j in binary], np.int64)
        step = np.array([classes[cls_off[j] + 1] - classes[cls_off[j]] for j in binary], np.int64)
        nodes += [
            helper.make_node("Gather", ["scores", _init("bin_idx", idx, inits)], ["bin_scores"],
                             axis=1),
            helper.make_node("Greater", ["bin_scores", _init("zero64", np.array(0, np.int64),
                                                             inits)], ["bin_pos"]),
            helper.make_node("Cast", ["bin_pos"], ["bin_bit"], to=TensorProto.INT64),
            helper.make_node("Mul", ["bin_bit", _init("bin_step", step, inits)], ["bin_mul"]),
            helper.make_node("Add", ["bin_mul", _init("bin_lo", lo, inits)], ["bin_sym"]),
        ]
        pieces.append("bin_sym")
        order += binary
    for j in range(m):
        k = int(n_out[j])
        if k == 1:
            continue
        if k == 0:
            const = np.array([[classes[cls_off[j]]]], np.int64)
            nodes += [
                helper.make_node("Slice", ["q64", _init(f"c{j}_s", np.array([0], np.int64), inits),
                                           _init(f"c{j}_e", np.array([1], np.int64), inits),
                                           _init(f"c{j}_a", np.array([1], np.int64), inits)],
                                 [f"c{j}_col"]),
                helper.make_node("Mul", [f"c{j}_col", "zero64"], [f"c{j}_zero"])
                if "zero64" in {i.name for i in inits} else
                helper.make_node("Mul", [f"c{j}_col", _init("zero64", np.array(0, np.int64),
                                                            inits)], [f"c{j}_zero"]),
                helper.make_node("Add", [f"c{j}_zero", _init(f"c{j}_v", const, inits)],
                                 [f"c{j}_sym"]),
            ]
        else:
            o = int(out_off[j])
            table = classes[cls_off[j]:cls_off[j] + k]
            nodes += [
                helper.make_node("Slice", ["scores",
                                           _init(f"c{j}_s", np.array([o], np.int64), inits),
                                           _init(f"c{j}_e", np.array([o + k], np.int64), inits),
                                           _init(f"c{j}_a", np.array([1], np.int64), inits)],
                                 [f"c{j}_scores"]),
                helper.make_node("ArgMax", [f"c{j}_scores"], [f"c{j}_arg"], axis=1, keepdims=1,
                                 select_last_index=0),
                helper.make_node("Gather", [_init(f"c{j}_cls", table, inits), f"c{j}_arg"],
                                 [f"c{j}_sym"], axis=0),
            ]
        pieces.append(f"c{j}_sym")
        order.append(j)
    return pieces, order


def _symbols_tree(arrays, nodes, inits):
    """Nodes computing 'symbols' (N, m) from 'qf' with one TreeEnsembleRegressor."""
    feat, thr = arrays["tree_feature"], arrays["tree_threshold"]
    left, right, leaf, root = (arrays["tree_left"], arrays["tree_right"], arrays["tree_leaf"],
                               arrays["tree_root"])
    m = root.shape[0]
    ends = list(root[1:]) + [feat.shape[0]]
    a = {k: [] for k in ("treeids", "nodeids", "featureids", "values", "modes", "true", "false")}
    t_tree, t_node, t_id, t_w = [], [], [], []
    for j in range(m):
        r0, r1 = int(root[j]), int(ends[j])
        for g in range(r0, r1):
            a["treeids"].append(j)
            a["nodeids"].append(g - r0)
            if feat[g] >= 0:
                a["featureids"].append(int(feat[g]))
                a["values"].append(float(thr[g]))
                a["modes"].append("BRANCH_LEQ")
                a["true"].append(int(left[g]) - r0)
                a["false"].append(int(right[g]) - r0)
            else:
                a["featureids"].append(0)
                a["values"].append(0.0)
                a["modes"].append("LEAF")
                a["true"].append(0)
                a["false"].append(0)
                t_tree.append(j)
                t_node.append(g - r0)
                t_id.append(j)
                t_w.append(float(leaf[g]))
    nodes.append(helper.make_node(
        "TreeEnsembleRegressor", ["qf"], ["tree_out"], domain="ai.onnx.ml",
        n_targets=m, aggregate_function="SUM", post_transform="NONE",
        nodes_treeids=a["treeids"], nodes_nodeids=a["nodeids"],
        nodes_featureids=a["featureids"], nodes_values=a["values"], nodes_modes=a["modes"],
        nodes_truenodeids=a["true"], nodes_falsenodeids=a["false"],
        nodes_missing_value_tracks_true=[0] * len(a["modes"]),
        target_treeids=t_tree, target_nodeids=t_node, target_ids=t_id, target_weights=t_w))
    nodes.append(helper.make_node("Cast", ["tree_out"], ["symbols"], to=TensorProto.INT64))


def ecoc_to_onnx(arrays, *, props=None):
    """ONNX graph of the device arrays: fixed-point inputs -> symbols -> Hamming -> label.

    Input ``q``: int16 (N, n_features). Outputs ``label`` int64 (N,) (class
    index), ``symbols`` int64 (N, n_columns) (learner outputs) and
    ``distance2`` int64 (N, n_classes) (doubled Hamming distances).
    """
    code = arrays["code"].astype(np.int64)
    c, m = code.shape
    d = arrays["in_center"].shape[0]
    nodes, inits = [], []
    linear = int(arrays["learner_kind"][0]) == 1
    if linear:
        nodes.append(helper.make_node("Cast", ["q"], ["q64"], to=TensorProto.INT64))
        pieces, order = _symbols_linear(arrays, nodes, inits)
        nodes.append(helper.make_node("Concat", pieces, ["sym_unordered"], axis=1))
        perm = np.argsort(np.array(order, np.int64)).astype(np.int64)
        nodes.append(helper.make_node("Gather", ["sym_unordered",
                                                 _init("sym_perm", perm, inits)],
                                      ["symbols"], axis=1))
    else:
        nodes.append(helper.make_node("Cast", ["q"], ["qf"], to=TensorProto.FLOAT))
        _symbols_tree(arrays, nodes, inits)
    used = (code >= 0).astype(np.int64)
    nodes += [
        helper.make_node("Unsqueeze", ["symbols", _init("axis1", np.array([1], np.int64), inits)],
                         ["sym3"]),
        helper.make_node("Equal", ["sym3", _init("code", code, inits)], ["same"]),
        helper.make_node("Not", ["same"], ["differ"]),
        helper.make_node("Cast", ["differ"], ["differ64"], to=TensorProto.INT64),
        helper.make_node("Mul", ["differ64", _init("used", used, inits)], ["miss"]),
        helper.make_node("ReduceSum", ["miss", _init("axis2", np.array([2], np.int64), inits)],
                         ["mismatches"], keepdims=0),
        helper.make_node("Mul", ["mismatches", _init("two", np.array(2, np.int64), inits)],
                         ["mis2"]),
        helper.make_node("Add", ["mis2", _init("unused", arrays["unused_count"].astype(np.int64),
                                               inits)], ["distance2"]),
        helper.make_node("ArgMin", ["distance2"], ["label"], axis=1, keepdims=0,
                         select_last_index=0),
    ]
    graph = helper.make_graph(
        nodes, "ecoc_" + ("linear" if linear else "tree"),
        [helper.make_tensor_value_info("q", TensorProto.INT16, ["N", d])],
        [helper.make_tensor_value_info("label", TensorProto.INT64, ["N"]),
         helper.make_tensor_value_info("symbols", TensorProto.INT64, ["N", m]),
         helper.make_tensor_value_info("distance2", TensorProto.INT64, ["N", c])],
        initializer=inits)
    opsets = [helper.make_opsetid("", OPSET)]
    if not linear:
        opsets.append(helper.make_opsetid("ai.onnx.ml", ML_OPSET))
    model = helper.make_model(graph, opset_imports=opsets, producer_name="edgecode",
                              doc_string="edgecode ECOC: fixed-point learners, Hamming-nearest "
                              "codeword (ties: lowest class index)")
    model.ir_version = IR_VERSION
    if props:
        helper.set_model_props(model, {str(k): str(v) for k, v in props.items()})
    onnx.checker.check_model(model, full_check=True)
    return model


def export_ecoc(model, X_calib, *, container_path=None, onnx_path=None, X_check=None,
                meta=None):
    """Write a fitted ECOCClassifier as an ``ecoc`` container and an ONNX graph.

    Parameters
    ----------
    model : ECOCClassifier (fitted, linear learners or decision trees)
    X_calib : array-like (n, n_features)
        Sets the input quantizer; device labels are checked on it.
    container_path, onnx_path : path or None
    X_check : array-like or None
        Extra rows on which device and float labels are compared.
    meta : dict or None
        Extra metadata for both artifacts.

    Returns
    -------
    ExportResult

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.tree import DecisionTreeClassifier
    >>> from edgecode.ecoc.classifier import ECOCClassifier
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = ECOCClassifier(DecisionTreeClassifier(random_state=0),
    ...                      code=[[0, 0, 1], [1, 0, 0], [0, 1, 0]]).fit(X, y)
    >>> out = export_ecoc(clf, X)
    >>> out.label_mismatches, out.device.learner_kind
    (0, 'tree')
    """
    check_is_fitted(model)
    arrays, info = quantize_ecoc(model, X_calib)
    rows = [np.asarray(X_calib, dtype=np.float64)]
    if X_check is not None:
        rows.append(np.asarray(X_check, dtype=np.float64))
    Xc = np.vstack(rows)
    meta_all = {"classes": [str(v) for v in model.classes_], "learner_kind": info["learner_kind"],
                "n_symbols": int(model.n_symbols_),
                "tie_rule": "lowest class index", **(meta or {})}
    if "weight_shifts" in info:
        meta_all["weight_shifts"] = [int(s) for s in info["weight_shifts"]]
    blob = write_container(container_path, "ecoc", arrays, meta=meta_all)
    device = load_ecoc(blob)
    q = quantize_inputs(Xc, info["in_center"], info["in_shift"])
    dev_labels = device.predict(q)
    float_labels = np.searchsorted(model.classes_, model.predict(Xc))
    mismatches = int(np.sum(dev_labels != float_labels))
    onnx_model = ecoc_to_onnx(arrays, props={"classes": ",".join(meta_all["classes"]),
                                             "learner_kind": info["learner_kind"]})
    if onnx_path is not None:
        save_model(onnx_model, onnx_path)
    res = device.resources()
    return ExportResult("ecoc", blob, onnx_model, device, res, int(Xc.shape[0]), mismatches)
