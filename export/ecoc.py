"""Export an ECOC classifier (linear learners or decision trees) to the container and ONNX.

The container holds the device's integers; the ONNX graph holds the same
integers plus, by default, the device's input quantizer, so it takes the raw
features ``X`` (float32 or float64) and gives the class labels, bit-exact with
``firmware_sim.load(container)`` (``device.encode(X)`` then ``device.infer``).
``input="frame"`` gives the device-frame graph instead (int16 ``q``, see
:func:`firmware_sim.ecoc.quantize_inputs`; labels are class indices).
A scikit-learn ``Pipeline`` whose steps before the ECOCClassifier are
scalers or feature selectors is folded into the learners first
(:mod:`export.pipeline`). Only Hamming decoding exports.

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

ONNX (opset 17, plus ai.onnx.ml 3 for trees; see ``docs/onnx.md``): input
quantizer -- Cast to double, Sub ``in_center``, Mul ``2**in_shift``, Round
(half to even, as ``numpy.rint``), Clip to [-32767, 32767]; linear -- one
MatMul whose product is exact (float32 if every |partial sum| < 2**24,
float64 if < 2**53, else the int32 weights split into two 16-bit halves
multiplied in float64 and recombined in int64), Add bias, then Greater
(two-class learners) or ArgMax + Gather (k-class learners); trees --
``TreeEnsembleRegressor`` with one target per column whose leaf value is the
symbol. Then Hamming decoding as one MatMul of the (one-hot) symbols with a
table of +-2 (exact small integers) plus a per-class constant, ArgMin (first
minimum = lowest class index) and Gather of the class labels.
"""


import json

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from sklearn.utils.validation import check_is_fitted

from firmware_sim.artifact import FORMAT_VERSION, write_container
from firmware_sim.ecoc import Q_MAX, load_ecoc, make_ecoc_arrays, quantize_inputs
from firmware_sim.kinds.ecoc import score_arithmetic

from ._trees_onnx import _tree_ensemble
from .pipeline import fold_pipeline
from .result import ExportResult
from .onnx_utils import (IR_VERSION, ONNX_FORMAT_VERSION, OPSET, class_labels_initializer,
                         input_elem_type, json_props, narrow_int_initializer, save_model)

__all__ = ["fit_input_quantizer", "quantize_ecoc", "ecoc_to_onnx", "export_ecoc", "ExportResult",
           "onnx_metadata", "linear_matmul_dtype",
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


#: Accumulator widths of :func:`export_ecoc` (``accumulator``): the bound on
#: every partial score the quantized weights must respect; ``"auto"`` takes
#: ``"int32"`` when it changes no learner output on the calibration rows, else
#: ``"int64"`` (the default).
ACCUMULATORS = ("auto", "int64", "int32")
#: |q| of an int16 frame value (-32768 included): the frame range of the bounds.
_Q_ABS_MAX = 32768


def _fits_int32(Wq, Bq):
    """Every weight in int16 and, per output, |B| + 32768 sum_f |W| <= 2^31 - 1:
    the C runtime's 32-bit score sums are exact (``linear_accumulator``)."""
    Wq = np.asarray(Wq, np.int64)
    Bq = np.asarray(Bq, np.int64)
    if Wq.size and (Wq.min() < -32768 or Wq.max() > 32767):
        return False
    bound = np.abs(Bq).astype(object) + _Q_ABS_MAX * np.abs(Wq).sum(axis=0).astype(object)
    return all(int(b) <= 2**31 - 1 for b in bound)


def linear_accumulator(arrays):
    """The narrowest exact arithmetic of an ECOC image's linear scores, as the
    C runtime derives it at open (``docs/firmware.md``, "Narrow arithmetic"):
    ``"int32"`` (every weight in int16 and every output's ``|B| + 32768
    sum_f |W|`` below 2**31: 16x16->32-bit products, 32-bit sums), ``"w16"``
    (every weight in int16: the same products, 64-bit sums in two 32-bit
    words) or ``"int64"`` (split 32-bit weights); None for tree learners.
    ``edgecode firmware`` compiles in this arithmetic only
    (``firmware_sim.kinds.ecoc.score_arithmetic``).

    >>> linear_accumulator({"lin_weights": np.array([[3], [-2]], np.int32),
    ...                     "lin_bias": np.array([7], np.int64)})
    'int32'
    >>> linear_accumulator({"lin_weights": np.array([[40000]], np.int32),
    ...                     "lin_bias": np.array([0], np.int64)})
    'int64'
    """
    if "lin_weights" not in arrays:
        return None
    return score_arithmetic(arrays["lin_weights"], arrays["lin_bias"])


def _quantize_linear(la, center, shift, col_n_out, accumulator="int64"):
    _check_linear_arrays(la, center.shape[0])
    if accumulator not in ("int64", "int32"):
        raise ValueError(f"accumulator must be 'int64' or 'int32'; got {accumulator!r}")
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
        if accumulator == "int32":
            # the largest scale whose weights fit int16 and whose partial scores
            # stay below 2**31 for every int16 frame
            while s > -1100 and not _fits_int32(np.rint(Wf[:, sl] * 2.0**s),
                                                np.rint(bf[sl] * 2.0**s)):
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


def _exact_thresholds(la, T, center, shift, window=3):
    """Move each fixed-point threshold to where the float model really splits.

    A learner goes left iff ``float32(x') <= t`` where ``x'`` is what it sees
    (the raw feature, or a pipeline's ``transform`` of it); the fixed-point
    threshold ``T`` (left iff ``q <= T``) is first computed in float64
    arithmetic, which can be off by one grid step at a rounding boundary.
    Here the grid points ``c + k 2**-e`` for ``k`` within ``window`` of ``T``
    are run through the same arithmetic (monotone in ``x``) and ``T`` becomes
    the largest ``k`` that goes left, so on the grid the device splits
    exactly as the float model does.
    """
    feat = np.asarray(la["feature"])
    idx = np.flatnonzero(feat >= 0)
    if idx.size == 0:
        return T
    inner = np.asarray(la.get("learner_feature", feat))[idx]
    t = np.asarray(la.get("learner_threshold", la["threshold"]), np.float64)[idx]
    f = feat[idx]
    offs = np.arange(-window, window + 1)
    w = offs.shape[0]
    cand = T[idx].astype(np.int64)[:, None] + offs                       # (nodes, w)
    rows = np.arange(idx.size * w)
    R = np.tile(center, (rows.shape[0], 1))
    fr = np.repeat(f, w)
    R[rows, fr] = center[fr] + cand.ravel() * np.exp2(-shift[fr].astype(np.float64))
    transform = la.get("transform")
    Xp = np.asarray(transform(R) if transform is not None else R, np.float64)
    v = Xp[rows, np.repeat(inner, w)].astype(np.float32).astype(np.float64)
    left = (v <= np.repeat(t, w)).reshape(-1, w)
    # monotone: left on a prefix of the window; keep T where the window does not
    # contain the switch (the float64 estimate is then as good as we know)
    n_left = left.sum(axis=1)
    prefix = (np.cumsum(~left, axis=1) == 0).sum(axis=1) == n_left
    ok = (n_left > 0) & (n_left < w) & prefix
    out = T.copy()
    out[idx[ok]] = np.clip(cand[ok, n_left[ok] - 1], -Q_MAX - 1, Q_MAX)
    return out


def _check_decoding(ecoc, model):
    decoding = getattr(ecoc, "decoding", "hamming")
    if decoding == "hamming":
        return
    if ecoc is model:
        how = "model.set_params(decoding='hamming').fit(X, y)"
    else:
        how = f"pipeline.set_params({model.steps[-1][0]}__decoding='hamming').fit(X, y)"
    raise ValueError(
        f"the model decodes with decoding={decoding!r}, but only Hamming decoding exports: "
        "the device decodes the learners' hard symbols by Hamming distance, so its labels "
        f"would differ from the model's predictions. Refit with {how} and export that")


def quantize_ecoc(model, X_calib, *, accumulator="int64"):
    """Device arrays of a fitted ECOCClassifier (linear learners or trees).

    Parameters
    ----------
    model : ECOCClassifier or sklearn.pipeline.Pipeline (fitted)
        A pipeline ends in an ECOCClassifier; the steps before it are folded
        into the learners (:func:`export.pipeline.fold_pipeline`). Decoding
        must be ``"hamming"``.
    X_calib : array-like (n, n_features)
        Raw data (what the pipeline receives) whose per-feature range sets the
        input quantizer.
    accumulator : {"auto", "int64", "int32"}
        Linear learners: ``"int64"`` (default) scales each learner's weights to
        31 bits (scores summed in 64 bits); ``"int32"`` to the largest scale whose
        weights fit int16 and whose partial scores stay below 2**31 for every
        int16 frame, so that the C runtime sums them in 32 bits (about 4x
        fewer cycles on an 8-bit AVR; coarser weights). ``"auto"``: the
        ``"int32"`` weights when every learner output they give on
        ``X_calib`` equals the ``"int64"`` weights' (so the same labels on
        those rows), else the ``"int64"`` ones; ``info["accumulator"]`` says
        which.

    Returns
    -------
    arrays : dict
        For :func:`firmware_sim.artifact.write_container` (kind ``"ecoc"``).
    info : dict
        ``learner_kind``, ``weight_shifts`` (linear: per column), the
        quantizer (``in_center``, ``in_shift``) and ``ecoc`` (the final
        ECOCClassifier).

    Raises
    ------
    ValueError
        For non-Hamming decoding, a pipeline step that does not fold, learners
        that are neither linear nor trees, or X_calib of the wrong width.
    """
    ecoc, la, n_features = fold_pipeline(model)
    _check_decoding(ecoc, model)
    center, shift = fit_input_quantizer(X_calib)
    if center.shape[0] != n_features:
        raise ValueError(f"X_calib has {center.shape[0]} features; the model expects "
                         f"{n_features}")
    common = dict(code=ecoc.code_, col_classes=la["col_classes"],
                  col_n_classes=la["col_n_classes"], in_center=center, in_shift=shift)
    info = {"learner_kind": la["kind"], "in_center": center, "in_shift": shift, "ecoc": ecoc}
    if accumulator not in ACCUMULATORS:
        raise ValueError(f"accumulator must be one of {ACCUMULATORS}; got {accumulator!r}")
    if la["kind"] == "linear":
        tries = ("int32", "int64") if accumulator == "auto" else (accumulator,)
        outputs = {}
        for acc in tries:
            Wq, Bq, shifts = _quantize_linear(la, center, shift, la["n_out"], acc)
            arrays = make_ecoc_arrays(**common, linear={"weights": Wq, "bias": Bq,
                                                        "n_out": la["n_out"]})
            outputs[acc] = (arrays, shifts)
        if accumulator == "auto":
            q = quantize_inputs(np.asarray(X_calib, dtype=np.float64), center, shift)
            narrow, wide = (load_ecoc(write_container(None, "ecoc", outputs[a][0]))
                            .learner_outputs(q) for a in ("int32", "int64"))
            accumulator = "int32" if np.array_equal(narrow, wide) else "int64"
        arrays, info["weight_shifts"] = outputs[accumulator]
        info["accumulator"] = accumulator
    else:
        T = _exact_thresholds(la, _quantize_thresholds(la, center, shift), center, shift)
        tree = {"feature": la["feature"], "threshold": T,
                "left": la["left"], "right": la["right"], "leaf": la["leaf"],
                "root": la["root"]}
        arrays = make_ecoc_arrays(**common, tree=tree)
    return arrays, info


# ------------------------------------------------------------------ ONNX


def _init(name, value, inits):
    inits.append(numpy_helper.from_array(np.asarray(value), name))
    return name


def _node(nodes, op, inputs, outputs, **attrs):
    nodes.append(helper.make_node(op, inputs, outputs, **attrs))
    return outputs[0]


def _narrow(name, values, to, nodes, inits):
    """An integer table stored in its narrowest integer type, Cast to ``to`` in the graph.

    onnxruntime folds the Cast of an initializer once when the session is
    created, so the file is smaller and inference is unchanged; every value is
    an integer below 2**53 (2**24 for float32), so the Cast is exact.
    """
    init, cast = narrow_int_initializer(name, values, to=to)
    inits.append(init)
    nodes.extend(cast)
    return name


def linear_matmul_dtype(arrays):
    """How the linear graph multiplies exactly: ``"float32"``, ``"float64"`` or ``"split64"``.

    Every product ``q_f W[f, o]`` and every partial sum of ``B[o] + q W[:, o]``
    is an integer; a float type represents them all exactly when
    ``sum_f 32767 |W[f, o]| + |B[o]|`` stays below 2**24 (float32) or 2**53
    (float64). Otherwise the weights are split as ``W = 2**16 Wh + Wl``
    (``0 <= Wl < 2**16``), both halves multiplied exactly in float64 and the
    results recombined in int64 (``"split64"``), or, for more than ~2**21
    features, the product is done in int64 (``"int64"``).

    Examples
    --------
    >>> linear_matmul_dtype({"lin_weights": np.array([[3], [-2]], np.int32),
    ...                      "lin_bias": np.array([7], np.int64)})
    'float32'
    >>> linear_matmul_dtype({"lin_weights": np.array([[2**31 - 1]] * 200, np.int32),
    ...                      "lin_bias": np.array([0], np.int64)})
    'split64'
    """
    W = np.abs(np.asarray(arrays["lin_weights"], np.float64))
    B = np.abs(np.asarray(arrays["lin_bias"], np.float64))
    if W.size == 0:
        return "float32"
    bound = float((Q_MAX * W.sum(axis=0) + B).max()) * (1 + 1e-9)
    if bound < 2.0**24:
        return "float32"
    if bound < 2.0**53:
        return "float64"
    if Q_MAX * 2.0**16 * W.shape[0] * (1 + 1e-9) < 2.0**53:
        return "split64"
    return "int64"


def _linear_scores(arrays, q, nodes, inits):
    """Nodes from ``q`` (float64 exact integers, (N, d)) to the scores; returns (name, dtype)."""
    W = arrays["lin_weights"].astype(np.int64)
    B = arrays["lin_bias"].astype(np.int64)
    how = linear_matmul_dtype(arrays)
    if how in ("float32", "float64"):
        dt = np.float32 if how == "float32" else np.float64
        to = TensorProto.FLOAT if how == "float32" else TensorProto.DOUBLE
        if how == "float32":
            q = _node(nodes, "Cast", [q], ["q32"], to=TensorProto.FLOAT)
        w = _narrow("lin_weights", W, to, nodes, inits)
        mm = _node(nodes, "MatMul", [q, w], ["mm"])
        return _node(nodes, "Add", [mm, _narrow("lin_bias", B, to, nodes, inits)],
                     ["scores"]), dt
    if how == "split64":
        hi = np.floor_divide(W, 2**16)
        lo = W - hi * 2**16
        mh = _node(nodes, "MatMul", [q, _narrow("lin_w_hi", hi, TensorProto.DOUBLE, nodes,
                                                inits)], ["mm_hi"])
        ml = _node(nodes, "MatMul", [q, _narrow("lin_w_lo", lo, TensorProto.DOUBLE, nodes,
                                                inits)], ["mm_lo"])
        mh = _node(nodes, "Cast", [mh], ["mm_hi64"], to=TensorProto.INT64)
        ml = _node(nodes, "Cast", [ml], ["mm_lo64"], to=TensorProto.INT64)
        mh = _node(nodes, "Mul", [mh, _init("two16", np.array(2**16, np.int64), inits)],
                   ["mm_hi_sh"])
        mm = _node(nodes, "Add", [mh, ml], ["mm"])
    else:
        q = _node(nodes, "Cast", [q], ["q64"], to=TensorProto.INT64)
        mm = _node(nodes, "MatMul", [q, _init("lin_weights", W, inits)], ["mm"])
    return _node(nodes, "Add", [mm, _init("lin_bias", B, inits)], ["scores"]), np.int64


def _symbols_linear(arrays, q, nodes, inits):
    """Nodes from ``q`` to 'symbols' (N, m) int64 and 'sym_f' (N, m) float32."""
    scores, dt = _linear_scores(arrays, q, nodes, inits)
    zero = _init("zero", np.array(0, dt), inits)
    n_out = arrays["col_n_out"]
    out_off = arrays["col_out_offset"]
    cls_off = arrays["col_cls_offset"]
    classes = arrays["col_classes"].astype(np.int64)
    m = n_out.shape[0]
    binary = [j for j in range(m) if n_out[j] == 1]
    lo = np.array([classes[cls_off[j]] for j in binary], np.int64)
    step = np.array([classes[cls_off[j] + 1] - classes[cls_off[j]] for j in binary], np.int64)
    plain = bool((lo == 0).all() and (step == 1).all())
    if len(binary) == m:
        # every learner has two classes, one score each, in column order
        pos = _node(nodes, "Greater", [scores, zero], ["bin_pos"])
        if plain:
            _node(nodes, "Cast", [pos], ["symbols"], to=TensorProto.INT64)
            _node(nodes, "Cast", [pos], ["sym_f"], to=TensorProto.FLOAT)
            return
        bit = _node(nodes, "Cast", [pos], ["bin_bit"], to=TensorProto.INT64)
        mul = _node(nodes, "Mul", [bit, _init("bin_step", step, inits)], ["bin_mul"])
        _node(nodes, "Add", [mul, _init("bin_lo", lo, inits)], ["symbols"])
        _node(nodes, "Cast", ["symbols"], ["sym_f"], to=TensorProto.FLOAT)
        return
    pieces, order = [], []
    if binary:
        idx = np.array([out_off[j] for j in binary], np.int64)
        g = _node(nodes, "Gather", [scores, _init("bin_idx", idx, inits)], ["bin_scores"], axis=1)
        pos = _node(nodes, "Greater", [g, zero], ["bin_pos"])
        bit = _node(nodes, "Cast", [pos], ["bin_bit"], to=TensorProto.INT64)
        mul = _node(nodes, "Mul", [bit, _init("bin_step", step, inits)], ["bin_mul"])
        pieces.append(_node(nodes, "Add", [mul, _init("bin_lo", lo, inits)], ["bin_sym"]))
        order += binary
    one = _init("axis_one", np.array([1], np.int64), inits)
    for j in range(m):
        k = int(n_out[j])
        if k == 1:
            continue
        if k == 0:
            const = np.array([[classes[cls_off[j]]]], np.int64)
            sl = _node(nodes, "Slice", [q, _init(f"c{j}_s", np.array([0], np.int64), inits),
                                        _init(f"c{j}_e", np.array([1], np.int64), inits), one],
                       [f"c{j}_col"])
            if "zero_q" not in {i.name for i in inits}:
                _init("zero_q", np.array(0.0), inits)
            z = _node(nodes, "Mul", [sl, "zero_q"], [f"c{j}_zero"])
            z = _node(nodes, "Cast", [z], [f"c{j}_zero64"], to=TensorProto.INT64)
            pieces.append(_node(nodes, "Add", [z, _init(f"c{j}_v", const, inits)],
                                [f"c{j}_sym"]))
        else:
            o = int(out_off[j])
            table = classes[cls_off[j]:cls_off[j] + k]
            sl = _node(nodes, "Slice", [scores, _init(f"c{j}_s", np.array([o], np.int64), inits),
                                        _init(f"c{j}_e", np.array([o + k], np.int64), inits),
                                        one], [f"c{j}_scores"])
            arg = _node(nodes, "ArgMax", [sl], [f"c{j}_arg"], axis=1, keepdims=1,
                        select_last_index=0)
            pieces.append(_node(nodes, "Gather", [_init(f"c{j}_cls", table, inits), arg],
                                [f"c{j}_sym"], axis=0))
        order.append(j)
    cat = _node(nodes, "Concat", pieces, ["sym_unordered"], axis=1)
    perm = np.argsort(np.array(order, np.int64)).astype(np.int64)
    _node(nodes, "Gather", [cat, _init("sym_perm", perm, inits)], ["symbols"], axis=1)
    _node(nodes, "Cast", ["symbols"], ["sym_f"], to=TensorProto.FLOAT)


def _symbols_tree(arrays, qf, nodes, inits):
    """Nodes from ``qf`` (float32 (N, d)) to 'symbols' int64 and 'sym_f' float32: the
    trees in the compact node format (kind forest's), one ensemble target per
    column whose value is the leaf reached, which is the symbol."""
    tree_arrays = {k: arrays[k] for k in ("tree_root", "node_feature", "node_threshold",
                                          "node_left", "node_right")}
    tree_arrays["n_classes"] = np.asarray(arrays["n_symbols"], np.int64)   # L = N symbols
    leaves = _tree_ensemble(tree_arrays, qf, nodes)
    nodes.append(helper.make_node("Identity", [leaves], ["symbols"]))
    nodes.append(helper.make_node("Identity", ["leaf_f"], ["sym_f"]))


def _hamming(arrays, nodes, inits):
    """Nodes from 'sym_f' (N, m) float32 to 'distance2' float32 (N, c): one MatMul.

    ``distance2[r] = 2 #{j used by r, s_j != M[r, j]} + #{j unused by r}``.
    Binary code: ``#mismatch_r = sum_j used M + s . (used (1 - 2 M))``.
    N-ary: ``#mismatch_r = #used_r - onehot(s) . [used and M == v]``.
    """
    code = arrays["code"].astype(np.int64)
    c, m = code.shape
    used = (code >= 0).astype(np.int64)
    unused = arrays["unused_count"].astype(np.int64)
    n_sym = int(arrays["n_symbols"][0])
    if n_sym == 2:
        table = 2 * (used * (1 - 2 * code)).T                      # (m, c)
        const = 2 * (used * code).sum(axis=1) + unused
        x = "sym_f"
    else:
        table = np.zeros((m, n_sym, c), np.int64)
        for v in range(n_sym):
            table[:, v, :] = -2 * (used * (code == v)).T
        table = table.reshape(m * n_sym, c)
        const = 2 * used.sum(axis=1) + unused
        s3 = _node(nodes, "Unsqueeze", ["sym_f", _init("axis_last", np.array([2], np.int64),
                                                         inits)], ["sym3"])
        eq = _node(nodes, "Equal", [s3, _init("alphabet", np.arange(n_sym, dtype=np.float32),
                                              inits)], ["onehot_b"])
        oh = _node(nodes, "Cast", [eq], ["onehot3"], to=TensorProto.FLOAT)
        x = _node(nodes, "Reshape", [oh, _init("onehot_shape",
                                               np.array([0, m * n_sym], np.int64), inits)],
                  ["onehot"])
    mm = _node(nodes, "MatMul", [x, _narrow("hamming_table", table, TensorProto.FLOAT, nodes,
                                            inits)], ["d2_var"])
    return _node(nodes, "Add", [mm, _narrow("hamming_const", const, TensorProto.FLOAT, nodes,
                                            inits)], ["d2_f"])


def ecoc_to_onnx(arrays, *, props=None, input="features", input_dtype="float32",
                 classes=None):
    """ONNX graph of the device arrays: inputs -> symbols -> Hamming distances -> label.

    Parameters
    ----------
    arrays : dict
        The ``ecoc`` container's arrays (:func:`quantize_ecoc`).
    props : dict or None
        Extra ``metadata_props`` (every value is stored as JSON text, next to
        the graph's own keys, see ``docs/onnx.md``).
    input : {"features", "frame"}, default "features"
        ``"features"``: input ``X`` (N, d) of ``input_dtype``, quantized inside
        the graph exactly as :func:`firmware_sim.ecoc.quantize_inputs` does
        (finite inputs; NaN gives unspecified labels where the device
        refuses). ``"frame"``: input ``q`` int16 (N, d), the device frame.
    input_dtype : {"float32", "float64"}, default "float32"
        Element type of ``X`` (``input="features"`` only). float32 inputs are
        cast to double before the quantizer, as the host's float64 arithmetic.
    classes : sequence or None
        Class labels; ``label`` is then ``classes[index]`` (int64 for integer
        labels, string otherwise). None: ``label`` is the class index.

    Returns
    -------
    onnx.ModelProto
        Outputs ``label`` (N,), ``symbols`` int64 (N, n_columns) (learner
        outputs) and ``distance2`` int64 (N, n_classes) (doubled Hamming
        distances; ties go to the lowest class index).
    """
    if input not in ("features", "frame"):
        raise ValueError(f"input must be 'features' or 'frame'; got {input!r}")
    input_dtype, in_type = input_elem_type(input_dtype)
    code = arrays["code"].astype(np.int64)
    c, m = code.shape
    d = arrays["in_center"].shape[0]
    nodes, inits = [], []
    linear = int(arrays["learner_kind"][0]) == 1
    if input == "features":
        in_info = helper.make_tensor_value_info("X", in_type, ["N", d])
        x = "X"
        if input_dtype == "float32":
            x = _node(nodes, "Cast", [x], ["X64"], to=TensorProto.DOUBLE)
        scale = np.exp2(arrays["in_shift"].astype(np.float64))
        x = _node(nodes, "Sub", [x, _init("in_center", arrays["in_center"].astype(np.float64),
                                          inits)], ["X_centered"])
        x = _node(nodes, "Mul", [x, _init("in_scale", scale, inits)], ["X_scaled"])
        x = _node(nodes, "Round", [x], ["X_rounded"])
        q = _node(nodes, "Clip", [x, _init("q_min", np.array(-Q_MAX, np.float64), inits),
                                  _init("q_max", np.array(Q_MAX, np.float64), inits)], ["qd"])
    else:
        in_info = helper.make_tensor_value_info("q", TensorProto.INT16, ["N", d])
        q = _node(nodes, "Cast", ["q"], ["qd"], to=TensorProto.DOUBLE)
    if linear:
        _symbols_linear(arrays, q, nodes, inits)
    else:
        qf = _node(nodes, "Cast", [q], ["qf"], to=TensorProto.FLOAT)
        _symbols_tree(arrays, qf, nodes, inits)
    d2 = _hamming(arrays, nodes, inits)
    _node(nodes, "Cast", [d2], ["distance2"], to=TensorProto.INT64)
    meta = {"format_version": ONNX_FORMAT_VERSION, "kind": "ecoc",
            "learner_kind": "linear" if linear else "tree", "n_features": int(d),
            "n_columns": int(m), "n_classes": int(c), "n_symbols": int(arrays["n_symbols"][0]),
            "input": "X" if input == "features" else "q",
            "input_dtype": input_dtype if input == "features" else "int16",
            "outputs": ["label", "symbols", "distance2"],
            "label": "class index" if classes is None else "class label",
            "decoding": "hamming", "tie_rule": "lowest class index",
            "quantizer": {"center": [float(v) for v in arrays["in_center"]],
                          "shift": [int(v) for v in arrays["in_shift"]], "q_max": Q_MAX,
                          "formula": "clip(rint((x - center) * 2**shift), -q_max, q_max)"},
            "container_format_version": int(FORMAT_VERSION)}
    if linear:
        meta["linear_matmul"] = linear_matmul_dtype(arrays)
    if classes is None:
        label_type = TensorProto.INT64
        _node(nodes, "ArgMin", [d2], ["label"], axis=1, keepdims=0, select_last_index=0)
    else:
        if len(classes) != c:
            raise ValueError(f"classes has {len(classes)} labels; the code has {c} rows")
        cl_init, label_type, meta["classes"] = class_labels_initializer("classes", classes)
        inits.append(cl_init)
        idx = _node(nodes, "ArgMin", [d2], ["class_index"], axis=1, keepdims=0,
                    select_last_index=0)
        _node(nodes, "Gather", ["classes", idx], ["label"], axis=0)
    graph = helper.make_graph(
        nodes, "ecoc_" + ("linear" if linear else "tree"), [in_info],
        [helper.make_tensor_value_info("label", label_type, ["N"]),
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
    meta.update(props or {})
    helper.set_model_props(model, json_props(meta))
    onnx.checker.check_model(model, full_check=True)
    return model


def onnx_metadata(onnx_model):
    """The ``metadata_props`` of an exported ECOC graph, JSON values decoded.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.linear_model import LogisticRegression
    >>> from edgecode.ecoc.classifier import ECOCClassifier
    >>> X, y = load_iris(return_X_y=True)
    >>> names = np.array(["setosa, Iris", "versicolor", "virginica"])[y]
    >>> clf = ECOCClassifier(LogisticRegression(), code=[[0, 1], [1, 0], [1, 1]]).fit(X, names)
    >>> meta = onnx_metadata(export_ecoc(clf, X).onnx_model)
    >>> meta["classes"], meta["decoding"], meta["input"]
    (['setosa, Iris', 'versicolor', 'virginica'], 'hamming', 'X')
    """
    out = {}
    for p in onnx_model.metadata_props:
        try:
            out[p.key] = json.loads(p.value)
        except ValueError:
            out[p.key] = p.value
    return out


def export_ecoc(model, X_calib, *, container_path=None, onnx_path=None, X_check=None,
                meta=None, onnx_input="features", onnx_input_dtype="float32",
                accumulator="int64"):
    """Write a fitted ECOCClassifier as an ``ecoc`` container and an ONNX graph.

    Parameters
    ----------
    model : ECOCClassifier or sklearn.pipeline.Pipeline (fitted)
        Linear learners or decision trees, ``decoding="hamming"``. A pipeline
        ends in an ECOCClassifier; the steps before it must fold into the
        learners (scalers, feature selectors, see :mod:`export.pipeline`).
    X_calib : array-like (n, n_features)
        Raw features (what ``model.predict`` takes); sets the input quantizer;
        device labels are checked on it.
    container_path, onnx_path : path or None
    X_check : array-like or None
        Extra rows on which device and float labels are compared.
    meta : dict or None
        Extra metadata for both artifacts.
    onnx_input : {"features", "frame"}, default "features"
        The ONNX graph's input: raw features ``X`` (labels out) or the
        device's int16 frame ``q`` (class indices out); see
        :func:`ecoc_to_onnx`.
    onnx_input_dtype : {"float32", "float64"}, default "float32"
        Element type of ``X`` in the features graph.
    accumulator : {"int64", "auto", "int32"}, default "int64"
        Linear learners: the width the weights are scaled for (see
        :func:`quantize_ecoc`); ``"int32"`` makes the firmware's scores 32-bit
        sums of 16x16-bit products, ``"auto"`` does so when that changes no
        learner output on ``X_calib`` (``details["accumulator"]`` says what the
        image allows, whichever was asked; ``label_mismatches`` counts what the
        quantized weights change on ``X_calib``).

    Returns
    -------
    ExportResult
        ``details``: ``classes`` (the labels), ``onnx_input``,
        ``linear_matmul`` (linear learners: how the graph multiplies),
        ``accumulator`` (linear learners: :func:`linear_accumulator` of the
        image, the arithmetic the C runtime uses).

    Raises
    ------
    ValueError
        If the model decodes otherwise than by Hamming distance, a pipeline
        step does not fold, or the learners are neither linear nor trees.

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
    >>> import onnxruntime as ort
    >>> sess = ort.InferenceSession(out.onnx_model.SerializeToString(),
    ...                             providers=["CPUExecutionProvider"])
    >>> sess.run(["label"], {"X": X[:3].astype(np.float32)})[0].tolist()
    [0, 0, 0]
    """
    if onnx_input not in ("features", "frame"):
        raise ValueError(f"onnx_input must be 'features' or 'frame'; got {onnx_input!r}")
    input_elem_type(onnx_input_dtype, what="onnx_input_dtype")       # before any work
    check_is_fitted(model)
    arrays, info = quantize_ecoc(model, X_calib, accumulator=accumulator)
    ecoc = info["ecoc"]
    rows = [np.asarray(X_calib, dtype=np.float64)]
    if X_check is not None:
        rows.append(np.asarray(X_check, dtype=np.float64))
    Xc = np.vstack(rows)
    meta_all = {"classes": [str(v) for v in ecoc.classes_], "learner_kind": info["learner_kind"],
                "n_symbols": int(ecoc.n_symbols_),
                "tie_rule": "lowest class index", **(meta or {})}
    if "weight_shifts" in info:
        meta_all["weight_shifts"] = [int(s) for s in info["weight_shifts"]]
    blob = write_container(container_path, "ecoc", arrays, meta=meta_all)
    device = load_ecoc(blob)
    q = quantize_inputs(Xc, info["in_center"], info["in_shift"])
    dev_labels = device.predict(q)
    float_labels = np.searchsorted(ecoc.classes_, model.predict(Xc))
    mismatches = int(np.sum(dev_labels != float_labels))
    props = {"meta": meta} if meta else None
    onnx_model = ecoc_to_onnx(arrays, props=props, input=onnx_input,
                              input_dtype=onnx_input_dtype,
                              classes=ecoc.classes_ if onnx_input == "features" else None)
    if onnx_path is not None:
        save_model(onnx_model, onnx_path)
    res = device.resources()
    details = {"classes": ecoc.classes_.copy(), "onnx_input": onnx_input}
    if info["learner_kind"] == "linear":
        details["linear_matmul"] = linear_matmul_dtype(arrays)
        details["accumulator"] = linear_accumulator(arrays)
    return ExportResult("ecoc", blob, onnx_model, device, res, int(Xc.shape[0]), mismatches,
                        details)
