"""Export a redundancy-protected naive Bayes model to the device container and to ONNX.

The device classifies with integers: ``acc = bias + sum_j x_j weights_j`` and
label 1 iff ``acc > 0``, where ``weights_j = round(2**s (w_j(1) - w_j(0)))``
and ``bias = round(2**s (b + sum_j w_j(0)))`` (DESIGN.md notation).  The scale
``2**s`` is the smallest power of two (from ``2**4``) at which the integer
labels equal the float model's on every check input: all ``2**n`` inputs when
n <= 20 (so the device agrees with the float model whatever the channel does),
plus the rows of ``X_check``.

ONNX (opset 17, :func:`protected_nb_to_onnx`): input ``X``, the raw features
(float32, float64, bool or uint8; feature j is 1 iff ``X[:, j]`` exceeds the
model's ``binarize`` threshold, else 0.5), or ``bits``, the received repeated
bits (uint8, majority-decoded in the graph); outputs ``label`` (the model's
class labels) and ``decision`` (int32 accumulator).  Metadata values are JSON
text (``classes`` a JSON list).
"""


import numpy as np
from onnx import TensorProto, helper, numpy_helper
from sklearn.utils.validation import check_is_fitted

from edgecode._validation import check_binary
from firmware_sim.artifact import write_container
from firmware_sim.naive_bayes import load_protected_nb, make_protected_nb_arrays

from .result import ExportResult
from .onnx_utils import (FLOAT_INPUTS, ONNX_FORMAT_VERSION, class_labels_initializer,
                         finish_model, input_elem_type, json_props, narrow_int_initializer,
                         save_model)

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


_FEATURE_TYPES = {**FLOAT_INPUTS, "bool": TensorProto.BOOL, "uint8": TensorProto.UINT8}


def protected_nb_to_onnx(weights, bias, repetitions=None, *, input="features", classes=None,
                         input_dtype="float32", binarize=None, props=None):
    """ONNX graph of the integer naive Bayes the device runs (opset 17).

    Parameters
    ----------
    weights : array-like of int32, shape (n,)
    bias : int
    repetitions : array-like of int, shape (n,), optional
        r_j (feature j is sent ``2 r_j + 1`` times); required for ``input="bits"``.
    input : {"features", "bits"}, default "features"
        ``"features"``: input ``X`` (N, n), the raw features; feature j counts
        as 1 iff ``X[:, j] > threshold`` (``binarize``, or 0.5 when ``binarize``
        is None, so 0/1 inputs are read exactly as the device reads them).
        ``"bits"``: input ``bits`` uint8 (N, sum_j (2 r_j + 1)), the received
        feature-major copies, majority-decoded in the graph (the device frame).
    classes : array-like of 2 labels, optional
        ``label`` is ``classes[decision > 0]`` (int64 for integer classes,
        double for floating ones, string otherwise); default the class index
        0/1 as int64.
    input_dtype : {"float32", "float64", "bool", "uint8"}, default "float32"
        Element type of ``X`` (``input="features"`` only; ``bits`` is uint8).
        The graph casts ``X`` to double before it compares.
    binarize : float, optional
        Threshold of the model's binarization (``BinaryNaiveBayes(binarize=)``).
    props : dict, optional
        Extra metadata (each value stored as JSON text).

    Returns
    -------
    onnx.ModelProto
        Outputs ``label`` (N,) and ``decision`` int32 (N,), the integer
        accumulator ``bias + sum_j x_j weights_j``; checked with
        ``onnx.checker.check_model(full_check=True)``.

    Examples
    --------
    >>> import numpy as np
    >>> import onnxruntime as ort
    >>> model = protected_nb_to_onnx([5, -3], -1, classes=["no, never", "yes"],
    ...                              input_dtype="float64")
    >>> sess = ort.InferenceSession(model.SerializeToString(),
    ...                             providers=["CPUExecutionProvider"])
    >>> label, decision = sess.run(None, {"X": np.array([[1.0, 0.0], [0.0, 1.0]])})
    >>> label.tolist(), decision.tolist()
    (['yes', 'no, never'], [4, -4])
    >>> bits_model = protected_nb_to_onnx([5, -3], -1, [1, 0], input="bits")
    >>> [i.name for i in bits_model.graph.input]
    ['bits']
    """
    if input not in ("features", "bits"):
        raise ValueError(f"input must be 'features' or 'bits'; got {input!r}")
    weights = np.asarray(weights)
    if weights.ndim != 1 or weights.size < 1 or not np.issubdtype(weights.dtype, np.integer):
        raise ValueError(f"weights must be a non-empty 1-D integer array; got {weights!r}")
    weights = weights.astype(np.int32)
    n = weights.shape[0]
    N = helper.make_node
    inits = [
        numpy_helper.from_array(weights, "weights"),
        numpy_helper.from_array(np.array(bias, np.int32), "bias"),
        numpy_helper.from_array(np.array(0, np.int32), "zero"),
    ]
    meta = {"format_version": ONNX_FORMAT_VERSION, "kind": "protected_nb", "n_features": n}
    if input == "bits":
        if repetitions is None:
            raise ValueError("input='bits' needs repetitions (r_j per feature)")
        r = np.asarray(repetitions)
        if r.shape != (n,) or not np.issubdtype(r.dtype, np.integer) or np.any(r < 0):
            raise ValueError(f"repetitions must be {n} non-negative integers; got {repetitions!r}")
        r = r.astype(np.int64)
        copies = 2 * r + 1
        total = int(copies.sum())
        group = np.zeros((total, n), np.uint8)
        group[np.arange(total), np.repeat(np.arange(n), copies)] = 1
        g_init, g_cast = narrow_int_initializer("copy_to_feature", group, to=TensorProto.INT32)
        inits += [g_init, numpy_helper.from_array(r.astype(np.int32), "majority_threshold")]
        nodes = g_cast + [
            N("Cast", ["bits"], ["bits_i32"], to=TensorProto.INT32),
            # ones among the 2 r_j + 1 copies of each feature
            N("MatMul", ["bits_i32", "copy_to_feature"], ["ones_count"]),
            # majority: count >= r_j + 1
            N("Greater", ["ones_count", "majority_threshold"], ["decoded_bool"]),
        ]
        graph_input = helper.make_tensor_value_info("bits", TensorProto.UINT8, ["N", total])
        meta.update(input="bits", input_dtype="uint8", total_bits=total,
                    repetitions=r.tolist())
    else:
        in_type, in_elem = input_elem_type(input_dtype, _FEATURE_TYPES)
        thr = 0.5 if binarize is None else float(binarize)
        if not np.isfinite(thr):
            raise ValueError(f"binarize must be a finite number; got {binarize!r}")
        inits.append(numpy_helper.from_array(np.array(thr, np.float64), "threshold"))
        nodes = [N("Cast", ["X"], ["X_f64"], to=TensorProto.DOUBLE),
                 N("Greater", ["X_f64", "threshold"], ["decoded_bool"])]
        graph_input = helper.make_tensor_value_info("X", in_elem, ["N", n])
        meta.update(input="X", input_dtype=in_type, threshold=thr,
                    binarize=None if binarize is None else thr)
    nodes += [
        N("Cast", ["decoded_bool"], ["decoded"], to=TensorProto.INT32),
        N("MatMul", ["decoded", "weights"], ["weighted_sum"]),
        N("Add", ["weighted_sum", "bias"], ["decision"]),
        N("Greater", ["decision", "zero"], ["label_bool"]),
    ]
    if classes is None:
        nodes.append(N("Cast", ["label_bool"], ["label"], to=TensorProto.INT64))
        label_type = TensorProto.INT64
    else:
        if len(classes) != 2:
            raise ValueError(f"classes must hold the 2 class labels; got {list(classes)!r}")
        cl_init, label_type, meta["classes"] = class_labels_initializer("class_labels", classes)
        inits.append(cl_init)
        nodes += [N("Cast", ["label_bool"], ["label_index"], to=TensorProto.INT64),
                  N("Gather", ["class_labels", "label_index"], ["label"], axis=0)]
    meta["outputs"] = ["label", "decision"]
    meta.update(props or {})
    graph = helper.make_graph(
        nodes, "protected_naive_bayes", [graph_input],
        [helper.make_tensor_value_info("label", label_type, ["N"]),
         helper.make_tensor_value_info("decision", TensorProto.INT32, ["N"])],
        initializer=inits)
    doc = ("edgecode protected naive Bayes: " +
           ("majority-decode repeated bits" if input == "bits" else "threshold raw features") +
           ", integer log-odds, label = decision > 0")
    return finish_model(graph, doc=doc, props=json_props(meta))


def export_protected_nb(model, repetitions, *, container_path=None, onnx_path=None,
                        X_check=None, meta=None, onnx_input="features",
                        onnx_input_dtype="float32"):
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
    onnx_input : {"features", "bits"}, default "features"
        Input of the ONNX graph (:func:`protected_nb_to_onnx`): ``"features"``
        (the default), the raw features ``X`` (binarized with the model's
        ``binarize`` threshold, else ``x > 0.5``), or ``"bits"``, the received
        repeated bits (the device frame, majority-decoded in the graph).
        Either graph outputs ``label`` (the model's class labels) and
        ``decision``.
    onnx_input_dtype : {"float32", "float64", "bool", "uint8"}, default "float32"
        Element type of ``X`` when ``onnx_input="features"``.

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
    >>> feat = export_protected_nb(nb, [1] * 16, onnx_input="features", onnx_input_dtype="uint8")
    >>> [(i.name, i.type.tensor_type.elem_type) for i in feat.onnx_model.graph.input]
    [('X', 2)]
    """
    check_is_fitted(model)
    n = model.n_features_in_
    r = np.asarray(repetitions)
    if r.shape != (n,) or not np.issubdtype(r.dtype, np.integer) or np.any(r < 0) \
            or np.any(r > 2**15 - 1):
        raise ValueError(f"repetitions must be {n} integers in [0, 32767], one per feature; "
                         f"got {repetitions!r}")
    if onnx_input not in ("bits", "features"):
        raise ValueError(f"onnx_input must be 'bits' or 'features'; got {onnx_input!r}")
    in_type, _ = input_elem_type(onnx_input_dtype, _FEATURE_TYPES)
    weights, bias, shift, checked = quantize_naive_bayes(model, X_check)
    binarize = getattr(model, "binarize", None)
    info = {"classes": [str(c) for c in model.classes_],
            "feature_names": [str(f) for f in getattr(model, "feature_names_in_", [])],
            **({"binarize": float(binarize)} if binarize is not None else {}),
            **(meta or {})}
    arrays = make_protected_nb_arrays(weights, bias, r, shift)
    blob = write_container(container_path, "protected_nb", arrays, meta=info)
    device = load_protected_nb(blob)
    res = device.resources()
    onnx_model = protected_nb_to_onnx(weights, bias, r, input=onnx_input,
                                      classes=model.classes_, input_dtype=in_type,
                                      binarize=binarize,
                                      props={"scale_shift": shift, **(meta or {})})
    if onnx_path is not None:
        save_model(onnx_model, onnx_path)
    return ExportResult("protected_nb", blob, onnx_model, device, res, checked, 0,
                        {"scale_shift": shift})

