"""Fold the preprocessing of a scikit-learn Pipeline into an ECOC ensemble's device arrays.

A device runs the learners on the raw sensor features (after its own
power-of-two input quantizer), so every step before the
:class:`~edgecode.ecoc.classifier.ECOCClassifier` must be *folded* into the
learners. The steps that fold are per-feature affine maps and feature
subsets: together they map raw features ``x`` (``d_raw``) to learner features
``x'_i = a_i x[src_i] + b_i`` (``i < d'``).

* linear learners (``score = w . x' + b0``) become
  ``W_raw[src_i] += a_i w_i`` (a raw feature no step keeps gets weight 0)
  and ``b0' = b0 + sum_i b_i w_i``;
* a tree node ``x'_i <= t`` becomes ``x[src_i] <= (t - b_i) / a_i``, which
  needs ``a_i > 0`` (a negative scale would turn ``<=`` into ``>=``: refused).

What folds (:data:`FOLDABLE`): ``StandardScaler``, ``MinMaxScaler`` (without
``clip=True``), ``MaxAbsScaler``, ``RobustScaler``, any feature selector with
``get_support()`` (``SelectKBest``, ``VarianceThreshold``,
``SelectFromModel``, ...), ``"passthrough"`` / ``None`` steps (and
``FunctionTransformer()`` without ``func``: the identity), nested
``Pipeline`` s of these, and ``ColumnTransformer`` s whose transformers are
``"passthrough"``, ``"drop"`` or any of these. Anything else is refused with
an error naming the step and its class.

The fold is exact in real arithmetic; in floating point the folded weights
and thresholds can differ from the pipeline's in the last bits, so an input
lying exactly on a tree threshold (after scaling) may fall on the other side.
"""

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.feature_selection._base import SelectorMixin
from sklearn.utils.validation import check_is_fitted

__all__ = ["FOLDABLE", "fold_pipeline", "affine_of_steps"]

#: What :func:`fold_pipeline` can fold into the device arrays (for error messages and docs).
FOLDABLE = ("StandardScaler", "MinMaxScaler (clip=False)", "MaxAbsScaler", "RobustScaler",
            "feature selectors with get_support() (SelectKBest, VarianceThreshold, "
            "SelectFromModel, ...)", "'passthrough' / None / FunctionTransformer() without func",
            "ColumnTransformer of 'passthrough' / 'drop' / the steps above",
            "nested Pipeline of the steps above")


class _Affine:
    """``x'[i] = a[i] * x[src[i]] + b[i]``: what a chain of folded steps does to raw ``x``."""

    def __init__(self, src, a, b, d_raw):
        self.src = np.asarray(src, np.int64)
        self.a = np.asarray(a, np.float64)
        self.b = np.asarray(b, np.float64)
        self.d_raw = int(d_raw)

    @classmethod
    def identity(cls, d):
        return cls(np.arange(d), np.ones(d), np.zeros(d), d)

    @property
    def d_out(self):
        return self.src.shape[0]

    def scale(self, a, b):
        """Then ``x'' = a x' + b`` (per output feature)."""
        a = np.broadcast_to(np.asarray(a, np.float64), (self.d_out,))
        b = np.broadcast_to(np.asarray(b, np.float64), (self.d_out,))
        return _Affine(self.src, a * self.a, a * self.b + b, self.d_raw)

    def select(self, idx):
        """Then keep the outputs ``idx`` (in that order)."""
        idx = np.asarray(idx, np.int64)
        return _Affine(self.src[idx], self.a[idx], self.b[idx], self.d_raw)

    def apply(self, X):
        """The folded map on raw rows (for tests)."""
        X = np.asarray(X, np.float64)
        return X[:, self.src] * self.a + self.b


def _refuse(where, step, why=None):
    name = type(step).__name__ if not isinstance(step, str) else repr(step)
    msg = (f"cannot fold pipeline step {where} ({name}) into the device arrays"
           + (f": {why}" if why else "")
           + "; the steps that fold are: " + "; ".join(FOLDABLE)
           + ". Apply other preprocessing before calling export, and fit the classifier "
           "on its output")
    return ValueError(msg)


def _n_in(step, where, d):
    n = getattr(step, "n_features_in_", None)
    if n is not None and int(n) != d:
        raise ValueError(f"pipeline step {where} ({type(step).__name__}) was fitted on {n} "
                         f"features but receives {d} from the steps before it")


def _fold_step(aff, step, where):
    """``aff`` followed by ``step`` (an _Affine), or a ValueError naming the step."""
    if step is None or (isinstance(step, str) and step == "passthrough"):
        return aff
    if isinstance(step, str):
        raise _refuse(where, step, "only 'passthrough' and None are accepted as strings here")
    if not isinstance(step, BaseEstimator):
        raise _refuse(where, step, "not a scikit-learn estimator")
    cls = type(step).__name__
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import (FunctionTransformer, MaxAbsScaler, MinMaxScaler,
                                       RobustScaler, StandardScaler)
    if isinstance(step, Pipeline):
        for name, sub in step.steps:
            aff = _fold_step(aff, sub, f"{where}/{name!r}")
        return aff
    try:
        check_is_fitted(step)
    except Exception as exc:  # NotFittedError and friends
        raise ValueError(f"pipeline step {where} ({cls}) is not fitted") from exc
    _n_in(step, where, aff.d_out)
    if type(step) is StandardScaler:
        mean = step.mean_ if step.with_mean else 0.0
        scale = step.scale_ if step.with_std else 1.0
        return aff.scale(1.0 / np.asarray(scale, np.float64),
                         -np.asarray(mean, np.float64) / np.asarray(scale, np.float64))
    if type(step) is MinMaxScaler:
        if step.clip:
            raise _refuse(where, step, "clip=True is not affine")
        return aff.scale(step.scale_, step.min_)
    if type(step) is MaxAbsScaler:
        return aff.scale(1.0 / step.scale_, 0.0)
    if type(step) is RobustScaler:
        center = step.center_ if step.with_centering and step.center_ is not None else 0.0
        scale = step.scale_ if step.with_scaling and step.scale_ is not None else 1.0
        return aff.scale(1.0 / np.asarray(scale, np.float64),
                         -np.asarray(center, np.float64) / np.asarray(scale, np.float64))
    if type(step) is FunctionTransformer and step.func is None:
        return aff      # the identity (ColumnTransformer's fitted 'passthrough')
    if isinstance(step, SelectorMixin):
        return aff.select(np.flatnonzero(step.get_support()))
    if isinstance(step, ColumnTransformer):
        return _fold_column_transformer(aff, step, where)
    raise _refuse(where, step)


def _fold_column_transformer(aff, ct, where):
    n_out = sum(sl.stop - sl.start for sl in ct.output_indices_.values())
    src = np.zeros(n_out, np.int64)
    a, b = np.zeros(n_out), np.zeros(n_out)
    filled = np.zeros(n_out, bool)
    to_input = getattr(ct, "_transformer_to_input_indices", None)
    if to_input is None:
        raise _refuse(where, ct, "this scikit-learn version does not record the input columns")
    for name, trans, _cols in ct.transformers_:
        out = ct.output_indices_[name]
        if out.stop == out.start:
            continue
        cols = np.asarray(to_input[name], np.int64)
        sub = _fold_step(aff.select(cols), trans, f"{where}/{name!r}")
        if sub.d_out != out.stop - out.start:
            raise _refuse(where, ct, f"transformer {name!r} gives {sub.d_out} columns where "
                          f"{out.stop - out.start} were expected")
        src[out], a[out], b[out] = sub.src, sub.a, sub.b
        filled[out] = True
    if not filled.all():
        raise _refuse(where, ct, "some output columns come from no transformer")
    return _Affine(src, a, b, aff.d_raw)


def affine_of_steps(steps, d_raw):
    """The folded map of a list of ``(name, step)`` on ``d_raw`` raw features.

    Returns
    -------
    (src, a, b) : int64 (d',), float64 (d',), float64 (d',)
        ``x'[i] = a[i] * x[src[i]] + b[i]``.

    Examples
    --------
    >>> from sklearn.preprocessing import MinMaxScaler
    >>> sc = MinMaxScaler().fit([[0.0, 10.0], [2.0, 20.0]])
    >>> src, a, b = affine_of_steps([("sc", sc)], 2)
    >>> src.tolist(), a.tolist(), b.tolist()
    ([0, 1], [0.5, 0.1], [0.0, -1.0])
    """
    aff = _Affine.identity(d_raw)
    for name, step in steps:
        aff = _fold_step(aff, step, repr(name))
    return aff.src, aff.a, aff.b


def _fold_linear(la, src, a, b, d_raw):
    W = np.asarray(la["weights"], np.float64)       # (d', k)
    bias = np.asarray(la["bias"], np.float64)
    Wa = W * a[:, None]
    W_raw = np.zeros((d_raw, W.shape[1]))
    np.add.at(W_raw, src, Wa)
    out = dict(la)
    out["weights"] = W_raw
    out["bias"] = bias + b @ W
    return out


def _fold_tree(la, src, a, b, where):
    feat = np.asarray(la["feature"], np.int64)
    thr = np.asarray(la["threshold"], np.float64)
    internal = feat >= 0
    f = np.where(internal, feat, 0)
    used_a = a[f[internal]]
    if (used_a <= 0).any():
        bad = int(np.unique(f[internal][used_a <= 0])[0])
        raise ValueError(f"cannot fold the pipeline into trees: learner feature {bad} is "
                         f"scaled by {float(a[bad])!r} (<= 0) by the steps before {where}; a tree "
                         "node 'x <= t' would become 'x >= t'', which the device does not "
                         "evaluate")
    out = dict(la)
    out["learner_feature"], out["learner_threshold"] = feat, thr
    out["feature"] = np.where(internal, src[f], -1)
    out["threshold"] = np.where(internal, (thr - b[f]) / np.where(internal, a[f], 1.0), 0.0)
    return out


def fold_pipeline(model):
    """The ECOCClassifier of ``model`` and its learner arrays on raw features.

    Parameters
    ----------
    model : ECOCClassifier or sklearn.pipeline.Pipeline (fitted)
        A pipeline's last step must be an ECOCClassifier; the steps before it
        must fold (see :data:`FOLDABLE`).

    Returns
    -------
    ecoc : ECOCClassifier
        The final estimator (its ``classes_``, ``code_``, ``decoding``).
    arrays : dict
        As :meth:`ECOCClassifier.learner_arrays`, but on the raw features the
        pipeline receives (weights / tree features and thresholds folded).
        Trees of a pipeline also carry ``learner_feature`` and
        ``learner_threshold`` (the nodes as the learners see them) and
        ``transform`` (the steps' own ``transform``), so that an exporter
        can check each folded threshold against the pipeline's arithmetic.
    n_features : int
        Number of raw features.

    Raises
    ------
    ValueError
        Naming the first step that does not fold, and its class.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from sklearn.linear_model import LogisticRegression
    >>> from edgecode.ecoc.classifier import ECOCClassifier
    >>> X, y = load_iris(return_X_y=True)
    >>> pipe = make_pipeline(StandardScaler(), ECOCClassifier(LogisticRegression(),
    ...                      code=[[0, 1], [1, 0], [1, 1]])).fit(X, y)
    >>> ecoc, la, d = fold_pipeline(pipe)
    >>> scores = X @ la["weights"] + la["bias"]
    >>> inner = ecoc.learner_arrays()
    >>> ref = pipe[:-1].transform(X) @ inner["weights"] + inner["bias"]
    >>> bool(np.allclose(scores, ref)), d
    (True, 4)
    """
    from sklearn.pipeline import Pipeline

    from edgecode.ecoc.classifier import ECOCClassifier

    if isinstance(model, ECOCClassifier):
        check_is_fitted(model)
        return model, model.learner_arrays(), int(model.n_features_in_)
    if not isinstance(model, Pipeline):
        raise TypeError("model must be a fitted ECOCClassifier or a Pipeline ending in one; "
                        f"got {type(model).__name__}")
    steps = list(model.steps)
    if not steps:
        raise ValueError("the pipeline has no steps")
    last_name, ecoc = steps[-1]
    if not isinstance(ecoc, ECOCClassifier):
        raise TypeError(f"the pipeline's last step {last_name!r} must be an ECOCClassifier; "
                        f"got {type(ecoc).__name__}")
    check_is_fitted(ecoc)
    d_raw = getattr(model, "n_features_in_", None)
    if d_raw is None:  # only 'passthrough' steps before the classifier
        d_raw = ecoc.n_features_in_
    src, a, b = affine_of_steps(steps[:-1], int(d_raw))
    if src.shape[0] != ecoc.n_features_in_:
        raise ValueError(f"the steps before {last_name!r} give {src.shape[0]} features; the "
                         f"ECOCClassifier was fitted on {ecoc.n_features_in_}")
    la = ecoc.learner_arrays()
    if la["kind"] == "linear":
        folded = _fold_linear(la, src, a, b, int(d_raw))
    else:
        folded = _fold_tree(la, src, a, b, repr(last_name))
        folded["transform"] = model[:-1].transform
    return ecoc, folded, int(d_raw)
