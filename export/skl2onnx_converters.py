"""skl2onnx converters: ``skl2onnx.to_onnx`` on pipelines that contain an
:class:`~edgecode.ecoc.classifier.ECOCClassifier` or a binary hasher of
:mod:`edgecode.hashing` (SSBC, SignRandomProjection, PCASign, ITQ).

skl2onnx converts a pipeline step by step with the converter registered for
each step's class; this module registers one for ``ECOCClassifier`` (call
:func:`register`, or import the module). The graph is the *float* model, what
``pipeline.predict`` computes: every column's learner through skl2onnx's own
converter of that learner (any learner skl2onnx converts: linear models,
trees, naive Bayes, ...), after the column's feature selection (a Gather),
then Hamming decoding (doubled distances ``2 #(used and unequal) + #unused``,
the first minimum: ties to the lowest class index) and the class labels.
Outputs: ``label`` (the class labels) and ``scores`` (float, the negated
doubled distances: larger is better). The device graph, with the fixed-point
quantizer fitted on calibration data, is :func:`export.ecoc.export_ecoc`'s.

Only ``decoding="hamming"`` converts (the other decodings need the learners'
margins; :class:`NotConvertibleError` otherwise). The hashers convert with ``output="bits"`` (uint8 0/1, one column
per bit; the packed formats are refused): SSBC as Gaussian affinities to its
anchors (``|x|^2 + |a|^2 - 2 x.a``, clamped at 0, ``exp(-d / sigma)``), the
projection and the thresholds; the baselines as ``(x - mean) @ projection >
thresholds``. The arithmetic is in the input's type: feed float64
(``to_onnx(model, X.astype(np.float64))``) to get the codes ``transform``
computes, bit for bit up to the summation order of the products.
Needs ``skl2onnx`` (``pip install 'edgecode[skl2onnx]'``).

Examples
--------
>>> import numpy as np
>>> from sklearn.datasets import load_iris
>>> from sklearn.linear_model import LogisticRegression
>>> from sklearn.pipeline import make_pipeline
>>> from sklearn.preprocessing import StandardScaler
>>> from skl2onnx import to_onnx
>>> from edgecode.ecoc.classifier import ECOCClassifier
>>> from export.skl2onnx_converters import register
>>> register()
>>> X, y = load_iris(return_X_y=True)
>>> pipe = make_pipeline(StandardScaler(), ECOCClassifier(LogisticRegression(),
...                      code="one_vs_all")).fit(X, y)
>>> onx = to_onnx(pipe, X[:1].astype(np.float32), target_opset=17)
>>> import onnxruntime as ort
>>> sess = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
>>> label = sess.run(["label"], {"X": X.astype(np.float32)})[0]
>>> bool((label == pipe.predict(X.astype(np.float32))).mean() > 0.99)
True
"""

import numpy as np

__all__ = ["register", "NotConvertibleError"]


class NotConvertibleError(ValueError, NotImplementedError):
    """A fitted model whose configuration has no ONNX conversion (``decoding``
    other than Hamming, a packed hasher ``output``). A ``ValueError``, as the
    exporters raise for the same models, and a ``NotImplementedError``, as
    skl2onnx's own converters raise for what they do not convert."""

_REGISTERED = False


def _numeric_classes(classes):
    """Classes the label output carries as int64, as skl2onnx's own classifiers do:
    integers, bools, and floats (scikit-learn accepts only integral float labels
    for classification, so ``2.0`` becomes ``2``, not the string ``'2.0'``)."""
    c = np.asarray(classes)
    return c.dtype.kind in "iub" or (c.dtype.kind == "f" and bool(np.all(c == np.round(c))))


def _parser(scope, model, inputs, custom_parsers=None):
    from skl2onnx import get_model_alias
    from skl2onnx.common.data_types import FloatTensorType, Int64TensorType, StringTensorType

    op = scope.declare_local_operator(get_model_alias(type(model)), model)
    op.inputs = inputs
    label_type = Int64TensorType() if _numeric_classes(model.classes_) else StringTensorType()
    op.outputs.append(scope.declare_local_variable("label", label_type))
    op.outputs.append(scope.declare_local_variable("scores", FloatTensorType()))
    return list(op.outputs)


def _shape(operator):
    n = operator.inputs[0].get_first_dimension()
    c = len(operator.raw_operator.classes_)
    operator.outputs[0].type = operator.outputs[0].type.__class__([n])
    operator.outputs[1].type = operator.outputs[1].type.__class__([n, c])


def _convert(scope, operator, container):
    from skl2onnx.algebra.onnx_ops import (
        OnnxAdd, OnnxArgMin, OnnxCast, OnnxConcat, OnnxEqual, OnnxGather, OnnxIdentity,
        OnnxMatMul, OnnxMul, OnnxNeg, OnnxReshape, OnnxShape, OnnxSlice,
        OnnxConstantOfShape)
    from skl2onnx.algebra.onnx_operator import OnnxSubEstimator
    from onnx import TensorProto, numpy_helper

    from edgecode.ecoc.learners import ConstantSymbol

    model = operator.raw_operator
    opv = container.target_opset
    if model.decoding != "hamming":
        raise NotConvertibleError(
            f"ECOCClassifier(decoding={model.decoding!r}) has no ONNX conversion: only "
            "Hamming decoding converts (refit with set_params(decoding='hamming'))")
    X = operator.inputs[0]
    code = np.asarray(model.code_, dtype=np.int64)
    c, m = code.shape
    # batch size of X as a 1-d tensor, for the constant columns
    n_of = OnnxSlice(OnnxShape(X, op_version=opv), np.array([0], np.int64),
                     np.array([1], np.int64), op_version=opv)
    columns = []
    for j, (est, idx) in enumerate(zip(model.estimators_, model.feature_indices_)):
        if isinstance(est, ConstantSymbol):
            value = numpy_helper.from_array(np.array([int(est.classes_[0])], np.int64))
            col = OnnxConstantOfShape(OnnxConcat(n_of, np.array([1], np.int64), axis=0,
                                                 op_version=opv),
                                      value=value, op_version=opv)
        else:
            xin = X if idx is None else OnnxGather(X, np.asarray(idx, np.int64), axis=1,
                                                   op_version=opv)
            options = {"zipmap": False} if hasattr(est, "predict_proba") else None
            sub = OnnxSubEstimator(est, xin, op_version=opv, options=options)
            sym = OnnxCast(sub[0], to=TensorProto.INT64, op_version=opv)
            col = OnnxReshape(sym, np.array([-1, 1], np.int64), op_version=opv)
        columns.append(col)
    symbols = columns[0] if m == 1 else OnnxConcat(*columns, axis=1, op_version=opv)
    # doubled distance: 2 sum_j used[r, j] (symbol_j != code[r, j]) + unused_r
    #   = 2 (used_count_r - sum_j used[r, j] (symbol_j == code[r, j])) + unused_r
    # one-hot of the symbols over the alphabet, times a table (N m, c)
    N = int(max(model.n_symbols_, int(code.max()) + 1, 2))
    eq_blocks = []
    for s in range(N):
        eq_blocks.append(OnnxCast(OnnxEqual(symbols, np.array(s, np.int64), op_version=opv),
                                  to=TensorProto.FLOAT, op_version=opv))
    onehot = eq_blocks[0] if N == 1 else OnnxConcat(*eq_blocks, axis=1, op_version=opv)
    table = np.zeros((N * m, c), np.float32)
    for s in range(N):
        table[s * m:(s + 1) * m, :] = (code.T == s).astype(np.float32)
    matches = OnnxMatMul(onehot, table, op_version=opv)                     # (n, c)
    used = (code >= 0).sum(axis=1).astype(np.float32)
    unused = (code < 0).sum(axis=1).astype(np.float32)
    # -d2 = 2 matches - (2 used + unused)
    neg_d2 = OnnxAdd(OnnxMul(matches, np.array(2.0, np.float32), op_version=opv),
                     (-(2.0 * used + unused)).astype(np.float32)[None, :], op_version=opv)
    best = OnnxArgMin(OnnxNeg(neg_d2, op_version=opv), axis=1, keepdims=0,
                      select_last_index=0, op_version=opv)
    classes = np.asarray(model.classes_)
    table_labels = classes.astype(np.int64) if _numeric_classes(classes) else \
        np.array([str(v) for v in classes])
    label = OnnxGather(table_labels, best, axis=0, op_version=opv,
                       output_names=[operator.outputs[0].full_name])
    scores = OnnxIdentity(neg_d2, op_version=opv, output_names=[operator.outputs[1].full_name])
    label.add_to(scope, container)
    scores.add_to(scope, container)


def _hasher_shape(operator):
    from skl2onnx.common.data_types import UInt8TensorType

    n = operator.inputs[0].get_first_dimension()
    operator.outputs[0].type = UInt8TensorType([n, int(operator.raw_operator.n_bits)])


def _hasher_convert(scope, operator, container):
    from onnx import TensorProto
    from skl2onnx.algebra.onnx_ops import (
        OnnxAdd, OnnxCast, OnnxExp, OnnxGreater, OnnxMatMul, OnnxMax, OnnxMul,
        OnnxReduceSumSquare, OnnxSub)
    from skl2onnx.common.data_types import DoubleTensorType

    from edgecode.hashing import SSBC

    model = operator.raw_operator
    opv = container.target_opset
    if getattr(model, "output", "bits") != "bits":
        raise NotConvertibleError(
            f"{type(model).__name__}(output={model.output!r}) has no ONNX conversion: only "
            "output='bits' converts (set_params(output='bits'))")
    dt = np.float64 if isinstance(operator.inputs[0].type, DoubleTensorType) else np.float32
    X = operator.inputs[0]
    if isinstance(model, SSBC):
        A = np.asarray(model.anchors_, np.float64)
        if opv >= 18:
            x_sq = OnnxReduceSumSquare(X, np.array([1], np.int64), keepdims=1, op_version=opv)
        else:
            x_sq = OnnxReduceSumSquare(X, axes=[1], keepdims=1, op_version=opv)
        cross = OnnxMatMul(X, A.T.astype(dt), op_version=opv)
        d = OnnxSub(OnnxAdd(x_sq, (A * A).sum(axis=1)[None, :].astype(dt), op_version=opv),
                    OnnxMul(cross, np.array(2.0, dt), op_version=opv), op_version=opv)
        d = OnnxMax(d, np.array(0.0, dt), op_version=opv)
        W = OnnxExp(OnnxMul(d, np.array(-1.0 / float(model.sigma_), dt), op_version=opv),
                    op_version=opv)
        emb = OnnxMatMul(W, np.asarray(model.projection_, np.float64).astype(dt),
                         op_version=opv)
    else:
        centred = OnnxSub(X, np.asarray(model.mean_, np.float64).astype(dt)[None, :],
                          op_version=opv)
        emb = OnnxMatMul(centred, np.asarray(model.projection_, np.float64).astype(dt),
                         op_version=opv)
    bits = OnnxCast(OnnxGreater(emb, np.asarray(model.thresholds_, np.float64).astype(dt),
                                op_version=opv),
                    to=TensorProto.UINT8, op_version=opv,
                    output_names=[operator.outputs[0].full_name])
    bits.add_to(scope, container)


def register():
    """Register the converters of ``ECOCClassifier`` and the hashers with skl2onnx
    (idempotent)."""
    global _REGISTERED
    if _REGISTERED:
        return
    try:
        from skl2onnx import update_registered_converter
    except ImportError as exc:
        raise ImportError("the skl2onnx converters need skl2onnx: pip install "
                          "'edgecode[skl2onnx]'") from exc
    from edgecode.ecoc.classifier import ECOCClassifier
    from edgecode.hashing import ITQ, SSBC, PCASign, SignRandomProjection

    update_registered_converter(ECOCClassifier, "EdgecodeECOCClassifier", _shape, _convert,
                                parser=_parser, overwrite=True)
    for cls in (SSBC, SignRandomProjection, PCASign, ITQ):
        update_registered_converter(cls, f"Edgecode{cls.__name__}", _hasher_shape,
                                    _hasher_convert, overwrite=True)
    _REGISTERED = True
