"""Export a fitted SSBC to the device container and to ONNX.

The ONNX graph reproduces the device's fixed-point pipeline
(:mod:`firmware_sim.ssbc`) with integer operators only (int64 MatMul, Div by
powers of two on non-negative values, Gather from the exp table), so
onnxruntime's bits equal the device runtime's bit for bit.  Opset 17.

Input ``X`` (N, d), float32 or float64 (``input_dtype``; float64 is cast to
float32 in the graph, as the device's ``encode`` does).  Outputs (``outputs=
"labels"``, format version 2): with a labelled code table ``label`` (N,), the
class labels of the k-NN vote (int64 for integer classes, string for string
classes), ``bits`` uint8 (N, n_bits) in {0,1} (bit i of the code is column i;
packed LSB first elsewhere) and ``nearest_distance`` int64 (N,), the Hamming
distance to the nearest stored code; without a table ``bits`` only.  The k-NN
vote: the k nearest table rows by Hamming distance, ties to the lower row; the
most voted class, ties to the lower class index.  ``outputs="legacy"`` keeps
the layout of format version 1: ``bits`` then ``label`` as the class index.

Integer tables are stored in the narrowest integer type that holds them
(anchors and projection int16, exp table uint16, packed codes uint8, ...) and
widened to int64 by Cast nodes at run time, so the .onnx file is about the
size of the container.  Metadata values are JSON text (``classes`` a JSON
list).
"""

import math

import numpy as np
from onnx import TensorProto, helper, numpy_helper
from sklearn.utils.validation import check_is_fitted

from edgecode.hashing import SSBC
from firmware_sim.artifact import write_container
from firmware_sim.ssbc import EXP_SHIFT, INPUT_LIMIT, LUT_SEGMENTS, load_ssbc, make_ssbc_arrays

from .result import ExportResult
from .onnx_utils import (ONNX_FORMAT_VERSION, class_labels_initializer, finish_model,
                         input_elem_type, json_props, narrow_int_initializer, save_model)

__all__ = ["export_ssbc", "ssbc_arrays", "ssbc_to_onnx", "ExportResult", "ExportPrecisionWarning",
           "BIT_AGREEMENT_WARN"]



def _check_labels(y):
    """Refuse missing labels (NaN / None) in a code table's labels."""
    if y.ndim != 1:
        raise ValueError(f"y_table must be 1-D, one label per row of X_table; got shape {y.shape}")
    if y.dtype.kind in "fc":
        bad = np.flatnonzero(np.isnan(y))
    elif y.dtype == object:
        bad = np.flatnonzero([v is None or (isinstance(v, float) and math.isnan(v))
                              for v in y.tolist()])
    else:
        bad = ()
    if len(bad):
        raise ValueError(f"y_table must not hold missing labels: y_table[{int(bad[0])}] is "
                         f"{y[bad[0]]!r} ({len(bad)} missing in all); drop those rows or label "
                         "them")


def ssbc_arrays(model, *, X_table=None, y_table=None, knn_k=5, classes=None):
    """Container arrays of a fitted SSBC (plus a labelled table of the codes of
    ``X_table``, computed by the device pipeline itself).

    Returns ``(arrays, classes)``; ``classes`` maps class index -> label.

    Raises
    ------
    ValueError
        ``X_table`` without ``y_table`` (or the reverse), a row count mismatch,
        a missing label (NaN or None) in ``y_table``, or a label not in ``classes``.

    Examples
    --------
    >>> import numpy as np
    >>> from edgecode.hashing import SSBC
    >>> X = np.random.default_rng(0).normal(size=(40, 3))
    >>> h = SSBC(4, 10, 6, random_state=0).fit(X)
    >>> arrays, classes = ssbc_arrays(h, X_table=X, y_table=["a", "b"] * 20, knn_k=3)
    >>> classes.tolist(), arrays["table_codes"].shape
    (['a', 'b'], (40, 1))
    >>> ssbc_arrays(h, X_table=X[:2], y_table=[1.0, np.nan])
    Traceback (most recent call last):
    ...
    ValueError: y_table must not hold missing labels: y_table[1] is np.float64(nan) (1 missing in all); drop those rows or label them
    """
    if not isinstance(model, SSBC):
        raise TypeError(f"model must be a fitted edgecode.hashing.SSBC; got {type(model).__name__}")
    check_is_fitted(model)
    arrays = make_ssbc_arrays(model.anchors_, float(model.sigma_), model.projection_,
                              model.thresholds_)
    if X_table is None and y_table is None:
        return arrays, None
    if X_table is None or y_table is None:
        raise ValueError("X_table and y_table go together")
    y = np.asarray(y_table)
    _check_labels(y)
    Xt = np.asarray(X_table, dtype=np.float64)
    if Xt.ndim != 2 or Xt.shape[0] != y.shape[0]:
        raise ValueError(f"X_table must have one row per label of y_table ({y.shape[0]}); "
                         f"got shape {Xt.shape}")
    if classes is None:
        classes, idx = np.unique(y, return_inverse=True)
    else:
        classes = np.asarray(classes)
        _check_labels(classes)
        lookup = {c: i for i, c in enumerate(classes.tolist())}
        try:
            idx = np.array([lookup[v] for v in y.tolist()])
        except KeyError as exc:
            raise ValueError(f"y_table holds label {exc.args[0]!r} not in classes") from exc
    dev = load_ssbc(write_container(None, "ssbc", arrays))
    table_bits = dev.bits(Xt)
    full = make_ssbc_arrays(model.anchors_, float(model.sigma_), model.projection_,
                            model.thresholds_, table_bits=table_bits, table_labels=idx,
                            n_classes=len(classes), knn_k=knn_k)
    return full, classes


def _c(name, value, dtype=np.int64):
    return numpy_helper.from_array(np.asarray(value, dtype=dtype), name)


def ssbc_to_onnx(arrays, *, props=None, classes=None, input_dtype="float32", outputs="labels"):
    """ONNX graph of the device pipeline from the container arrays (opset 17).

    Parameters
    ----------
    arrays : dict
        Container arrays (:func:`ssbc_arrays` / ``make_ssbc_arrays``).
    props : dict, optional
        Extra metadata (each value stored as JSON text).
    classes : array-like, optional
        Labels of the class indices of a stored table (default: the indices).
        Integer classes give an int64 ``label``, floating ones double, others
        strings.
    input_dtype : {"float32", "float64"}, default "float32"
        Element type of the input ``X``.  float64 inputs are cast to float32
        first, exactly as the device's ``encode`` does, so both give the
        device's codes bit for bit.
    outputs : {"labels", "legacy"}, default "labels"
        ``"labels"``: with a table ``label`` (class labels), ``bits`` and
        ``nearest_distance`` (int64 Hamming distance to the nearest stored code);
        without one ``bits`` only.  ``"legacy"``: ``bits`` then, with a table,
        ``label`` as the int64 class index (the layout before format version 2).

    Returns
    -------
    onnx.ModelProto
        Checked with ``onnx.checker.check_model(full_check=True)``.

    Examples
    --------
    >>> import numpy as np
    >>> import onnxruntime as ort
    >>> from firmware_sim.ssbc import make_ssbc_arrays
    >>> arr = make_ssbc_arrays(np.eye(2), 1.0, np.array([[1.0], [-1.0]]), np.zeros(1),
    ...                        table_bits=[[0], [1]], table_labels=[0, 1], knn_k=1)
    >>> model = ssbc_to_onnx(arr, classes=["b, second", "a"], input_dtype="float64")
    >>> [o.name for o in model.graph.output]
    ['label', 'bits', 'nearest_distance']
    >>> sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    >>> label, bits, dist = sess.run(None, {"X": np.array([[1.0, 0.0], [0.0, 1.0]])})
    >>> label.tolist(), bits.tolist(), dist.tolist()
    (['a', 'b, second'], [[1], [0]], [0, 0])
    """
    in_type, in_elem = input_elem_type(input_dtype)
    if outputs not in ("labels", "legacy"):
        raise ValueError(f"outputs must be 'labels' or 'legacy'; got {outputs!r}")
    A = np.asarray(arrays["anchors"])
    m, d = A.shape
    P = np.asarray(arrays["projection"])
    k = P.shape[1]
    s_in = int(arrays["input_shift"][0])
    pow2 = np.array([2**i for i in range(17)], np.int64)
    N = helper.make_node
    inits, nodes = [], []

    def table(name, values):  # narrow stored copy + Cast to int64
        init, cast = narrow_int_initializer(name, np.asarray(values))
        inits.append(init)
        nodes.extend(cast)

    inits += [
        _c("in_scale", np.float32(2.0**s_in), np.float32),
        _c("in_lo", np.float32(-INPUT_LIMIT), np.float32),
        _c("in_hi", np.float32(INPUT_LIMIT), np.float32),
        _c("two", 2), _c("axis1", [1]),
        _c("dist_clamp", arrays["dist_clamp"][0]),
        _c("exp_mult", arrays["exp_mult"][0]),
        _c("pow_shift", 2**EXP_SHIFT),
        _c("q16", 65536), _c("seg", LUT_SEGMENTS), _c("one", 1), _c("sixteen", 16),
        _c("pow2", pow2),
    ]
    table("anchors", A)
    table("lut", arrays["exp_lut"])
    table("projection", P)
    table("thresholds", arrays["thresholds"])
    x_in = "X"
    if in_type == "float64":
        # the device casts float64 inputs to float32 before it scales them
        nodes.append(N("Cast", ["X"], ["X_f32"], to=TensorProto.FLOAT))
        x_in = "X_f32"
    nodes += [
        # 1. input quantization: rint(clip(x * 2**s)), half to even
        N("Mul", [x_in, "in_scale"], ["x_scaled"]),
        N("Clip", ["x_scaled", "in_lo", "in_hi"], ["x_clipped"]),
        N("Round", ["x_clipped"], ["x_round"]),
        N("Cast", ["x_round"], ["xq"], to=TensorProto.INT64),
        # 2. exact squared distances |x|^2 - 2 x.a + |a|^2 (int64); one anchor table
        N("Transpose", ["anchors"], ["anchors_T"], perm=[1, 0]),
        N("Mul", ["anchors", "anchors"], ["anchors_sq"]),
        N("ReduceSum", ["anchors_sq", "axis1"], ["anchor_sq"], keepdims=0),
        N("Mul", ["xq", "xq"], ["xq_sq"]),
        N("ReduceSum", ["xq_sq", "axis1"], ["x_sq"], keepdims=1),
        N("MatMul", ["xq", "anchors_T"], ["cross"]),
        N("Mul", ["cross", "two"], ["cross2"]),
        N("Sub", ["x_sq", "cross2"], ["d_part"]),
        N("Add", ["d_part", "anchor_sq"], ["dist"]),
        # 3. affinity 2**(-t) in Q15: t in Q16, table + interpolation, shift
        N("Min", ["dist", "dist_clamp"], ["dist_c"]),
        N("Mul", ["dist_c", "exp_mult"], ["t_wide"]),
        N("Div", ["t_wide", "pow_shift"], ["t_q16"]),
        N("Div", ["t_q16", "q16"], ["t_int"]),
        N("Mul", ["t_int", "q16"], ["t_int_q16"]),
        N("Sub", ["t_q16", "t_int_q16"], ["t_frac"]),
        N("Div", ["t_frac", "seg"], ["lut_i"]),
        N("Mul", ["lut_i", "seg"], ["lut_i_seg"]),
        N("Sub", ["t_frac", "lut_i_seg"], ["lut_r"]),
        N("Add", ["lut_i", "one"], ["lut_i1"]),
        N("Gather", ["lut", "lut_i"], ["lut_lo"], axis=0),
        N("Gather", ["lut", "lut_i1"], ["lut_hi"], axis=0),
        N("Sub", ["seg", "lut_r"], ["lut_rc"]),
        N("Mul", ["lut_lo", "lut_rc"], ["interp_a"]),
        N("Mul", ["lut_hi", "lut_r"], ["interp_b"]),
        N("Add", ["interp_a", "interp_b"], ["interp"]),
        N("Div", ["interp", "seg"], ["w_frac"]),
        N("Min", ["t_int", "sixteen"], ["t_shift"]),
        N("Gather", ["pow2", "t_shift"], ["w_div"], axis=0),
        N("Div", ["w_frac", "w_div"], ["w_q15"]),
        # 4. projection and thresholds
        N("MatMul", ["w_q15", "projection"], ["acc"]),
        N("Greater", ["acc", "thresholds"], ["bits_bool"]),
        N("Cast", ["bits_bool"], ["bits"], to=TensorProto.UINT8),
    ]
    bits_out = helper.make_tensor_value_info("bits", TensorProto.UINT8, ["N", k])
    outputs_info = [bits_out]
    has_table = "table_codes" in arrays
    if has_table:
        nc = int(arrays["n_classes"][0])
        kk = int(arrays["knn_k"][0])
        table("table_codes", arrays["table_codes"])
        table("table_labels", arrays["table_labels"])
        inits += [
            _c("bit_weights", 2 ** np.arange(8, dtype=np.int64)),
            _c("axis2", [2]), _c("row_shape", [0, -1]),
            _c("slice_0", [0]), _c("slice_k", [k]),
            _c("class_ids", np.arange(nc, dtype=np.int64).reshape(1, 1, nc)),
            _c("knn_k", [kk]),
        ]
        nodes += [
            # unpack the stored codes (T, ceil(k / 8)) bytes, LSB first -> (T, k) bits
            N("Unsqueeze", ["table_codes", "axis2"], ["codes_3"]),
            N("Div", ["codes_3", "bit_weights"], ["codes_shifted"]),
            N("Mod", ["codes_shifted", "two"], ["table_bits_3"]),
            N("Reshape", ["table_bits_3", "row_shape"], ["table_bits_pad"]),
            N("Slice", ["table_bits_pad", "slice_0", "slice_k", "axis1"], ["table_bits"]),
            N("Transpose", ["table_bits"], ["table_T"], perm=[1, 0]),
            N("ReduceSum", ["table_bits", "axis1"], ["table_ones"], keepdims=0),
            # Hamming distance: |b| + |t| - 2 b.t
            N("Cast", ["bits"], ["bits_i"], to=TensorProto.INT64),
            N("ReduceSum", ["bits_i", "axis1"], ["bits_ones"], keepdims=1),
            N("MatMul", ["bits_i", "table_T"], ["common"]),
            N("Mul", ["common", "two"], ["common2"]),
            N("Add", ["bits_ones", "table_ones"], ["ones_sum"]),
            N("Sub", ["ones_sum", "common2"], ["hamming"]),
            # k nearest (ties to the lower row), most voted class (ties to the lower index)
            N("TopK", ["hamming", "knn_k"], ["nn_dist", "nn_idx"], axis=1, largest=0,
              sorted=1),
            N("Gather", ["table_labels", "nn_idx"], ["nn_labels"], axis=0),
            N("Unsqueeze", ["nn_labels", "axis2"], ["nn_labels_3"]),
            N("Equal", ["nn_labels_3", "class_ids"], ["onehot_bool"]),
            N("Cast", ["onehot_bool"], ["onehot"], to=TensorProto.INT64),
            N("ReduceSum", ["onehot", "axis1"], ["votes"], keepdims=0),
        ]
        if outputs == "legacy":
            nodes.append(N("ArgMax", ["votes"], ["label"], axis=1, keepdims=0,
                           select_last_index=0))
            outputs_info.append(helper.make_tensor_value_info("label", TensorProto.INT64, ["N"]))
        else:
            if classes is None:
                classes = np.arange(nc)
            if len(classes) != nc:
                raise ValueError(f"classes must name the {nc} classes of the table; got "
                                 f"{len(classes)}")
            cl_init, cl_type, cl_list = class_labels_initializer("class_labels", classes)
            inits += [cl_init, _c("first", 0)]
            nodes += [
                N("ArgMax", ["votes"], ["label_index"], axis=1, keepdims=0,
                  select_last_index=0),
                N("Gather", ["class_labels", "label_index"], ["label"], axis=0),
                N("Gather", ["nn_dist", "first"], ["nearest_distance"], axis=1),
            ]
            outputs_info = [helper.make_tensor_value_info("label", cl_type, ["N"]), bits_out,
                            helper.make_tensor_value_info("nearest_distance", TensorProto.INT64,
                                                          ["N"])]
    meta = {"format_version": ONNX_FORMAT_VERSION, "kind": "ssbc", "n_bits": k,
            "n_features": d, "n_anchors": m, "bit_order": "lsb_first", "input": "X",
            "input_dtype": in_type, "outputs": [o.name for o in outputs_info]}
    if has_table:
        meta["knn_k"] = kk
        if outputs == "labels":
            meta["classes"] = cl_list
    meta.update(props or {})
    graph = helper.make_graph(
        nodes, "ssbc",
        [helper.make_tensor_value_info("X", in_elem, ["N", d])],
        outputs_info, initializer=inits)
    return finish_model(graph, doc="edgecode SSBC: fixed-point Gaussian affinities to anchors, "
                        "integer projection, sign bits (and Hamming k-NN label)",
                        props=json_props(meta))


#: Bit agreement (device vs float model on ``X_check``) below which an
#: uncentred export warns (:class:`ExportPrecisionWarning`).
BIT_AGREEMENT_WARN = 0.99


class ExportPrecisionWarning(UserWarning):
    """The fixed-point device agrees with the float model less than it should."""


def export_ssbc(model, *, container_path=None, onnx_path=None, X_table=None, y_table=None,
                knn_k=5, X_check=None, meta=None, onnx_input_dtype="float32",
                onnx_outputs="labels"):
    """Write a fitted SSBC as an ``"ssbc"`` container and an ONNX graph.

    Parameters
    ----------
    model : SSBC (fitted)
    container_path, onnx_path : path or None
    X_table, y_table : array-like, optional
        Points and labels of the stored k-NN code table (codes computed by the
        device pipeline).  Labels must not be missing (NaN or None).
    knn_k : int, default 5
    X_check : array-like, optional
        Points on which device bits are compared with the float model's.
    meta : dict, optional
        Extra metadata stored in the container and the ONNX graph.
    onnx_input_dtype : {"float32", "float64"}, default "float32"
        Element type of the ONNX input ``X`` (:func:`ssbc_to_onnx`).
    onnx_outputs : {"labels", "legacy"}, default "labels"
        ONNX outputs (:func:`ssbc_to_onnx`): ``"labels"`` (the default) gives
        ``label`` (class labels), ``bits``, ``nearest_distance``; ``"legacy"``
        (for callers that unpack ``bits, label = sess.run(None, ...)``) gives
        ``bits`` and the class index ``label``.

    Returns
    -------
    ExportResult

    Raises
    ------
    ValueError
        Missing labels in ``y_table``, mismatched table sizes, bad options.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import load_iris
    >>> from edgecode.hashing import SSBC
    >>> X, y = load_iris(return_X_y=True)
    >>> names = np.array(["setosa, Iris", "versicolor", "virginica"])[y]
    >>> h = SSBC(16, 40, 24, random_state=0).fit(X)
    >>> ex = export_ssbc(h, X_table=X, y_table=names, knn_k=3, onnx_input_dtype="float64",
    ...                  onnx_outputs="labels")
    >>> [o.name for o in ex.onnx_model.graph.output]
    ['label', 'bits', 'nearest_distance']
    >>> import json
    >>> json.loads({p.key: p.value for p in ex.onnx_model.metadata_props}["classes"])
    ['setosa, Iris', 'versicolor', 'virginica']
    """
    in_type, _ = input_elem_type(onnx_input_dtype)
    if onnx_outputs not in ("labels", "legacy"):
        raise ValueError(f"onnx_outputs must be 'labels' or 'legacy'; got {onnx_outputs!r}")
    arrays, classes = ssbc_arrays(model, X_table=X_table, y_table=y_table, knn_k=knn_k)
    info = {"n_bits": int(model.n_bits), "n_anchors": int(model.anchors_.shape[0]),
            "sigma": float(model.sigma_), "mode": model.mode,
            "rotation": model.rotation or "none", "bit_order": "lsb_first",
            **({"classes": [str(c) for c in classes]} if classes is not None else {}),
            **(meta or {})}
    blob = write_container(container_path, "ssbc", arrays, meta=info)
    dev = load_ssbc(blob)
    agree = None
    if X_check is not None:
        Xc = np.asarray(X_check, dtype=np.float64)
        agree = float((dev.bits(Xc) == model.encode(Xc.astype(np.float32).astype(np.float64)))
                      .mean())
        if agree < BIT_AGREEMENT_WARN and not (model.center or model.rotation is not None):
            import warnings
            warnings.warn(
                f"the device's fixed-point bits equal the float model's on only "
                f"{100 * agree:.2f}% of the check bits: with center=False (the paper's codes) "
                "many projections lie near the threshold 0, where fixed-point rounding flips "
                "them; SSBC(center=True) thresholds at the mean projection (typically > 99.8% "
                "agreement; 'edgecode hash --method ssbc-center', the default)",
                ExportPrecisionWarning, stacklevel=2)
    props = {"sigma": float(model.sigma_), "mode": model.mode, **(meta or {})}
    if classes is not None:
        props["classes"] = class_labels_initializer("classes", classes)[2]
    onnx_model = ssbc_to_onnx(arrays, props=props, classes=classes, input_dtype=in_type,
                              outputs=onnx_outputs)
    if onnx_path is not None:
        save_model(onnx_model, onnx_path)
    return ExportResult("ssbc", blob, onnx_model, dev, dev.resources(),
                        0 if X_check is None else int(len(X_check)), None,
                        {"classes": classes, "bit_agreement": agree})
