"""Export a fitted SSBC to the device container and to ONNX.

The ONNX graph reproduces the device's fixed-point pipeline
(:mod:`firmware_sim.ssbc`) with integer operators only (int64 MatMul, Div by
powers of two on non-negative values, Gather from the exp table), so
onnxruntime's bits equal the device runtime's bit for bit.  Opset 17.

Inputs ``X`` float32 (N, d).  Outputs ``bits`` uint8 (N, n_bits) in {0,1}
(bit i of the code is column i; packed LSB first elsewhere) and, when a
labelled code table is stored, ``label`` int64 (N,): the k-NN class index
(the k nearest table rows by Hamming distance, ties to the lower row; the
most voted class, ties to the lower class index).
"""


import numpy as np
from onnx import TensorProto, helper, numpy_helper
from sklearn.utils.validation import check_is_fitted

from edgecode.hashing import SSBC
from firmware_sim.artifact import write_container
from firmware_sim.ssbc import EXP_SHIFT, INPUT_LIMIT, LUT_SEGMENTS, load_ssbc, make_ssbc_arrays

from .result import ExportResult
from .onnx_utils import finish_model, save_model

__all__ = ["export_ssbc", "ssbc_arrays", "ssbc_to_onnx", "ExportResult"]


def ssbc_arrays(model, *, X_table=None, y_table=None, knn_k=5, classes=None):
    """Container arrays of a fitted SSBC (plus a labelled table of the codes of
    ``X_table``, computed by the device pipeline itself).

    Returns ``(arrays, classes)``; ``classes`` maps class index -> label.
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
    if classes is None:
        classes, idx = np.unique(y, return_inverse=True)
    else:
        classes = np.asarray(classes)
        lookup = {c: i for i, c in enumerate(classes.tolist())}
        try:
            idx = np.array([lookup[v] for v in y.tolist()])
        except KeyError as exc:
            raise ValueError(f"y_table holds label {exc.args[0]!r} not in classes") from exc
    dev = load_ssbc(write_container(None, "ssbc", arrays))
    table_bits = dev.bits(np.asarray(X_table, dtype=np.float64))
    full = make_ssbc_arrays(model.anchors_, float(model.sigma_), model.projection_,
                            model.thresholds_, table_bits=table_bits, table_labels=idx,
                            n_classes=len(classes), knn_k=knn_k)
    return full, classes


def _c(name, value, dtype=np.int64):
    return numpy_helper.from_array(np.asarray(value, dtype=dtype), name)


def ssbc_to_onnx(arrays, *, props=None):
    """ONNX graph of the device pipeline from the container arrays."""
    A = arrays["anchors"].astype(np.int64)
    m, d = A.shape
    P = arrays["projection"].astype(np.int64)
    k = P.shape[1]
    s_in = int(arrays["input_shift"][0])
    pow2 = np.array([2**i for i in range(17)], np.int64)
    inits = [
        _c("in_scale", np.float32(2.0**s_in), np.float32),
        _c("in_lo", np.float32(-INPUT_LIMIT), np.float32),
        _c("in_hi", np.float32(INPUT_LIMIT), np.float32),
        _c("anchors_T", A.T.copy()),
        _c("anchor_sq", (A * A).sum(axis=1)[None, :]),
        _c("two", 2), _c("axis1", [1]),
        _c("dist_clamp", arrays["dist_clamp"][0]),
        _c("exp_mult", arrays["exp_mult"][0]),
        _c("pow_shift", 2**EXP_SHIFT),
        _c("q16", 65536), _c("seg", LUT_SEGMENTS), _c("one", 1), _c("sixteen", 16),
        _c("lut", arrays["exp_lut"].astype(np.int64)),
        _c("pow2", pow2),
        _c("projection", P),
        _c("thresholds", arrays["thresholds"].astype(np.int64)),
    ]
    N = helper.make_node
    nodes = [
        # 1. input quantization: rint(clip(x * 2**s)), half to even
        N("Mul", ["X", "in_scale"], ["x_scaled"]),
        N("Clip", ["x_scaled", "in_lo", "in_hi"], ["x_clipped"]),
        N("Round", ["x_clipped"], ["x_round"]),
        N("Cast", ["x_round"], ["xq"], to=TensorProto.INT64),
        # 2. exact squared distances |x|^2 - 2 x.a + |a|^2 (int64)
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
    outputs = [helper.make_tensor_value_info("bits", TensorProto.UINT8, ["N", k])]
    if "table_codes" in arrays:
        tb = np.unpackbits(arrays["table_codes"], axis=1, count=k, bitorder="little")
        T = tb.shape[0]
        nc = int(arrays["n_classes"][0])
        kk = int(arrays["knn_k"][0])
        inits += [
            _c("table_T", tb.T.astype(np.int64)),
            _c("table_not_T", (1 - tb.T).astype(np.int64)),
            _c("table_labels", arrays["table_labels"].astype(np.int64)),
            _c("class_ids", np.arange(nc, dtype=np.int64).reshape(1, 1, nc)),
            _c("knn_k", [kk]), _c("axis2", [2]),
        ]
        nodes += [
            N("Cast", ["bits"], ["bits_i"], to=TensorProto.INT64),
            N("Sub", ["one", "bits_i"], ["bits_not"]),
            N("MatMul", ["bits_i", "table_not_T"], ["ham_a"]),
            N("MatMul", ["bits_not", "table_T"], ["ham_b"]),
            N("Add", ["ham_a", "ham_b"], ["hamming"]),
            N("TopK", ["hamming", "knn_k"], ["nn_dist", "nn_idx"], axis=1, largest=0,
              sorted=1),
            N("Gather", ["table_labels", "nn_idx"], ["nn_labels"], axis=0),
            N("Unsqueeze", ["nn_labels", "axis2"], ["nn_labels_3"]),
            N("Equal", ["nn_labels_3", "class_ids"], ["onehot_bool"]),
            N("Cast", ["onehot_bool"], ["onehot"], to=TensorProto.INT64),
            N("ReduceSum", ["onehot", "axis1"], ["votes"], keepdims=0),
            N("ArgMax", ["votes"], ["label"], axis=1, keepdims=0, select_last_index=0),
        ]
        outputs.append(helper.make_tensor_value_info("label", TensorProto.INT64, ["N"]))
        del T
    graph = helper.make_graph(
        nodes, "ssbc",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", d])],
        outputs, initializer=inits)
    return finish_model(graph, doc="edgecode SSBC: fixed-point Gaussian affinities to anchors, "
                        "integer projection, sign bits (and Hamming k-NN label)", props=props)


def export_ssbc(model, *, container_path=None, onnx_path=None, X_table=None, y_table=None,
                knn_k=5, X_check=None, meta=None):
    """Write a fitted SSBC as an ``"ssbc"`` container and an ONNX graph.

    Parameters
    ----------
    model : SSBC (fitted)
    container_path, onnx_path : path or None
    X_table, y_table : array-like, optional
        Points and labels of the stored k-NN code table (codes computed by the
        device pipeline).
    knn_k : int, default 5
    X_check : array-like, optional
        Points on which device bits are compared with the float model's.
    meta : dict, optional

    Returns
    -------
    ExportResult
    """
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
    onnx_model = ssbc_to_onnx(arrays, props={"n_bits": model.n_bits, "bit_order": "lsb_first",
                                             **({"classes": ",".join(info["classes"])}
                                                if classes is not None else {})})
    if onnx_path is not None:
        save_model(onnx_model, onnx_path)
    return ExportResult("ssbc", blob, onnx_model, dev, dev.resources(),
                        0 if X_check is None else int(len(X_check)), None,
                        {"classes": classes, "bit_agreement": agree})
