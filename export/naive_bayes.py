"""Export a redundancy-protected naive Bayes model to the device container and to ONNX.

The device classifies with integers: ``acc = bias + sum_j x_j weights_j`` and
label 1 iff ``acc > 0``, where ``weights_j = round(2**s (w_j(1) - w_j(0)))``
and ``bias = round(2**s (b + sum_j w_j(0)))`` (DESIGN.md notation).  The scale
``2**s`` is the smallest power of two (from ``2**4``) at which the integer
labels equal the float model's on every check input: all ``2**n`` inputs when
n <= 20 (so the device agrees with the float model whatever the channel does),
plus the rows of ``X_check``.
"""


import numpy as np
from onnx import TensorProto, helper, numpy_helper
from sklearn.utils.validation import check_is_fitted

from edgecode._validation import check_binary
from firmware_sim.artifact import write_container
from firmware_sim.naive_bayes import load_protected_nb, make_protected_nb_arrays

from .result import ExportResult
from .onnx_utils import finish_model, save_model

__all__ = ["quantize_naive_bayes", "export_protected_nb", "protected_nb_to_onnx",
           "ExportResult", "EXHAUSTIVE_MAX_FEATURES"]

#: Up to this many features the quantizer checks every one of the 2**n inputs.
EXHAUSTIVE_MAX_FEATURES = 20
_INT32_SAFE = 2**31 - 1


def _all_inputs(n):
    idx = np.arange(2**n, dtype=np.int64)
    return ((idx[:, None] >> np.arange(n)) & 1).astype(np.float64)


def quantize_naive_bayes(model, X_check=None, *, min_shift=4, max_shift=26):
    """Integer weights for ``model`` (a fitted BinaryNaiveBayes).

    Returns
    -------
    weights : ndarray of shape (n,), int32
    bias : int
    shift : int
        s, with the float log-odds ``~ (bias + x @ weights) / 2**s``.
    checked : int
        How many inputs the labels were verified on.

    Raises
    ------
    ValueError
        If no shift up to ``max_shift`` reproduces every label within int32.
    """
    check_is_fitted(model)
    w0, w1 = model.weights_
    d = w1 - w0
    c0 = model.bias_ + w0.sum()
    n = d.shape[0]
    parts = []
    if n <= EXHAUSTIVE_MAX_FEATURES:
        parts.append(_all_inputs(n))
    if X_check is not None:
        parts.append(check_binary(X_check, name="X_check").astype(np.float64))
    if not parts:
        raise ValueError(f"X_check is required when n_features = {n} > "
                         f"{EXHAUSTIVE_MAX_FEATURES} (too many inputs to check them all)")
    X = np.vstack(parts)
    want = (c0 + X @ d) > 0
    for s in range(min_shift, max_shift + 1):
        wq = np.round(d * 2.0**s)
        bq = np.round(c0 * 2.0**s)
        if np.abs(wq).sum() + abs(bq) > _INT32_SAFE:
            break
        if np.array_equal((bq + X @ wq) > 0, want):
            return wq.astype(np.int32), int(bq), s, X.shape[0]
    raise ValueError(
        f"no scale 2**s with s in [{min_shift}, {max_shift}] reproduces the float labels on "
        f"all {X.shape[0]} check inputs within int32 accumulators: some input has log-odds "
        f"within {np.abs(c0 + X @ d).min():.3g} of the decision threshold")


def protected_nb_to_onnx(weights, bias, repetitions, *, props=None):
    """ONNX graph: raw received bits -> majority decode -> integer NB -> label.

    Input ``bits``: uint8 (N, sum_j (2 r_j + 1)), the feature-major copies.
    Outputs ``label`` int64 (N,) (0/1 class index) and ``decision`` int32 (N,),
    the integer accumulator ``bias + sum_j x_j weights_j``.
    """
    weights = np.asarray(weights, np.int32)
    r = np.asarray(repetitions, np.int64)
    n = weights.shape[0]
    copies = 2 * r + 1
    total = int(copies.sum())
    group = np.zeros((total, n), np.int32)
    group[np.arange(total), np.repeat(np.arange(n), copies)] = 1
    inits = [
        numpy_helper.from_array(group, "copy_to_feature"),
        numpy_helper.from_array(r.astype(np.int32), "majority_threshold"),
        numpy_helper.from_array(weights, "weights"),
        numpy_helper.from_array(np.array(bias, np.int32), "bias"),
        numpy_helper.from_array(np.array(0, np.int32), "zero"),
    ]
    nodes = [
        helper.make_node("Cast", ["bits"], ["bits_i32"], to=TensorProto.INT32),
        # ones among the 2 r_j + 1 copies of each feature
        helper.make_node("MatMul", ["bits_i32", "copy_to_feature"], ["ones_count"]),
        # majority: count >= r_j + 1
        helper.make_node("Greater", ["ones_count", "majority_threshold"], ["decoded_bool"]),
        helper.make_node("Cast", ["decoded_bool"], ["decoded"], to=TensorProto.INT32),
        helper.make_node("MatMul", ["decoded", "weights"], ["weighted_sum"]),
        helper.make_node("Add", ["weighted_sum", "bias"], ["decision"]),
        helper.make_node("Greater", ["decision", "zero"], ["label_bool"]),
        helper.make_node("Cast", ["label_bool"], ["label"], to=TensorProto.INT64),
    ]
    graph = helper.make_graph(
        nodes, "protected_naive_bayes",
        [helper.make_tensor_value_info("bits", TensorProto.UINT8, ["N", total])],
        [helper.make_tensor_value_info("label", TensorProto.INT64, ["N"]),
         helper.make_tensor_value_info("decision", TensorProto.INT32, ["N"])],
        initializer=inits)
    return finish_model(graph, doc="edgecode protected naive Bayes: majority-decode repeated "
                        "bits, integer log-odds, label = decision > 0", props=props)


def export_protected_nb(model, repetitions, *, container_path=None, onnx_path=None,
                        X_check=None, meta=None):
    """Write a fitted BinaryNaiveBayes with its repetition plan as container and ONNX.

    Parameters
    ----------
    model : BinaryNaiveBayes (fitted)
    repetitions : array-like of shape (n_features,)
        r_j from a plan (feature j is sent ``2 r_j + 1`` times).
    container_path, onnx_path : path or None
        Where to write; ``None`` keeps the artifact in memory only.
    X_check : array-like or None
        Extra inputs on which integer labels must equal the float model's.
    meta : dict or None
        Extra metadata stored in both artifacts (e.g. the planner's mean SCP).

    Returns
    -------
    ExportResult

    Examples
    --------
    >>> from edgecode.datasets import load_house_votes
    >>> from edgecode.naive_bayes import BinaryNaiveBayes
    >>> from export.naive_bayes import export_protected_nb
    >>> d = load_house_votes()
    >>> nb = BinaryNaiveBayes().fit(d.X, d.y)
    >>> out = export_protected_nb(nb, [1] * 16, X_check=d.X)
    >>> out.checked_inputs
    65971
    """
    check_is_fitted(model)
    n = model.n_features_in_
    r = np.asarray(repetitions)
    if r.shape != (n,) or not np.issubdtype(r.dtype, np.integer) or np.any(r < 0) \
            or np.any(r > 2**15 - 1):
        raise ValueError(f"repetitions must be {n} integers in [0, 32767], one per feature; "
                         f"got {repetitions!r}")
    weights, bias, shift, checked = quantize_naive_bayes(model, X_check)
    info = {"classes": [str(c) for c in model.classes_],
            "feature_names": [str(f) for f in getattr(model, "feature_names_in_", [])],
            **(meta or {})}
    arrays = make_protected_nb_arrays(weights, bias, r, shift)
    blob = write_container(container_path, "protected_nb", arrays, meta=info)
    device = load_protected_nb(blob)
    res = device.resources()
    onnx_model = protected_nb_to_onnx(weights, bias, r, props={
        "classes": ",".join(info["classes"]), "scale_shift": shift,
        **{k: v for k, v in (meta or {}).items()}})
    if onnx_path is not None:
        save_model(onnx_model, onnx_path)
    return ExportResult("protected_nb", blob, onnx_model, device, res, checked, 0,
                        {"scale_shift": shift})
