"""Fitted ECOC base learners as flat arrays: the one table of learner families.

:class:`~edgecode.ecoc.ECOCClassifier` flattens its learners once, at the end
of ``fit`` (:func:`flatten_learners`); its fast predict path evaluates the
flat arrays, and the exporters read the same arrays
(:meth:`ECOCClassifier.learner_arrays`, folded through a pipeline by
:func:`export.pipeline.fold_pipeline`, quantized by :mod:`export.ecoc`).

The supported families, listed once in :data:`LEARNER_FAMILIES` (every learner
of a classifier must belong to one family; columns whose classes share one
symbol are :class:`ConstantSymbol` stand-ins and fit any family):

========  ===========================================  ================================
family    learners                                     flat arrays
========  ===========================================  ================================
linear    ``LinearClassifierMixin`` with ``coef_``     ``weights`` (d, k), ``bias`` (k,),
          and ``intercept_`` (logistic regression,     ``n_out`` (n_columns,): column j
          linear SVM, SGD, ridge, perceptron) and      owns the next ``n_out[j]`` scores
          ``MultinomialNB``                            (0: constant, 1: the sign of one
                                                       score, else the argmax)
tree      single-output ``BaseDecisionTree``           ``feature`` (-1 at leaves),
          (``DecisionTreeClassifier``,                 ``threshold`` (float64; left iff
          ``ExtraTreeClassifier``)                     ``float32(x) <= threshold``),
                                                       ``left``, ``right``, ``leaf`` (the
                                                       symbol) per node, ``root`` per column
========  ===========================================  ================================

Learners outside the table are *generic*: ``predict`` calls each of them, and
the model does not export. A new family is one :class:`LearnerFamily` entry
(a test of membership and a flattening function) plus, to run it on the
device, its kernels there.
"""

from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np
import scipy.sparse as sp
from sklearn.linear_model._base import LinearClassifierMixin
from sklearn.naive_bayes import MultinomialNB
from sklearn.tree import BaseDecisionTree

from ._kernels.predict import _linear_symbols, _tree_symbols

__all__ = ["LearnerFamily", "LEARNER_FAMILIES", "FlatLearners", "flatten_learners",
           "linear_params", "ConstantSymbol", "LinearShapeError"]


class ConstantSymbol:
    """Stand-in learner for a column whose used classes all share one symbol."""

    def __init__(self, symbol):
        self.classes_ = np.array([symbol])

    def predict(self, X):
        return np.full(X.shape[0], self.classes_[0])


class LinearShapeError(ValueError):
    """A linear learner's parameters do not have a shape the flat arrays understand
    (the classifier then predicts through the learners and does not export)."""


def is_linear(e):
    """Member of the ``linear`` family."""
    if isinstance(e, MultinomialNB):
        return True
    return isinstance(e, LinearClassifierMixin) and hasattr(e, "coef_") \
        and hasattr(e, "intercept_")


def is_tree(e):
    """Member of the ``tree`` family."""
    return isinstance(e, BaseDecisionTree) and hasattr(e, "classes_") \
        and getattr(e, "n_outputs_", 1) == 1 and hasattr(e, "tree_")


def linear_params(e, n_features=None, column=None):
    """(coef (k, d) float64, intercept (k,) float64) whose argmax / sign is the prediction.

    Normalises the shapes scikit-learn's linear classifiers use, as
    ``LinearClassifierMixin.decision_function`` reads them: ``coef_`` is
    (k, d), or 1-D (d,) for a two-class learner such as ``RidgeClassifier``
    (one signed score, k = 1); ``intercept_`` is (k,), (1,) or a scalar
    (``fit_intercept=False`` in ``RidgeClassifier`` / ``LinearSVC``). k must be
    1 (two classes: the second iff the score is > 0) or ``len(classes_)``
    (argmax). Anything else raises :class:`LinearShapeError` naming the learner.
    """
    if isinstance(e, MultinomialNB):
        coef, intercept = e.feature_log_prob_, e.class_log_prior_
        names = ("feature_log_prob_", "class_log_prior_")
    else:
        coef, intercept = e.coef_, e.intercept_
        names = ("coef_", "intercept_")
    who = type(e).__name__ + ("" if column is None else f" (code column {column})")
    if sp.issparse(coef):  # sparsified linear models
        coef = coef.toarray()
    coef = np.asarray(coef, dtype=np.float64)
    intercept = np.asarray(intercept, dtype=np.float64)
    n_cls = len(e.classes_)
    raw = coef.shape
    if coef.ndim == 1:
        coef = coef[None, :]
    allowed = (1, 2) if n_cls == 2 else (n_cls,)
    if coef.ndim != 2 or coef.shape[0] not in allowed \
            or (n_features is not None and coef.shape[1] != n_features):
        d = "d" if n_features is None else str(n_features)
        want = f"({d},) or (1, {d})" if n_cls == 2 else f"({n_cls}, {d})"
        raise LinearShapeError(
            f"linear learner {who} has {names[0]} of shape {raw}; for {n_cls} classes "
            f"{want} is needed (one score per class, or one signed score for two)")
    k = coef.shape[0]
    if not (intercept.size == 1 or (intercept.ndim >= 1 and intercept.size == k
                                    and intercept.shape[-1] == k)):
        raise LinearShapeError(
            f"linear learner {who} has {names[1]} of shape {intercept.shape}; a scalar, "
            f"(1,) or ({k},) is needed for its {names[0]} of shape {raw}")
    intercept = np.broadcast_to(intercept.reshape(-1), (k,)).copy()
    return coef, intercept


def _flatten_linear(estimators, feature_indices, n_features):
    blocks, biases, out_off, n_out = [], [], [], []
    pos = 0
    for j, (e, idx) in enumerate(zip(estimators, feature_indices)):
        out_off.append(pos)
        if isinstance(e, ConstantSymbol):
            n_out.append(0)
            continue
        rows = np.arange(n_features) if idx is None else idx
        coef, intercept = linear_params(e, n_features=rows.shape[0], column=j)
        k = coef.shape[0]
        full = np.zeros((n_features, k))
        full[rows] = coef.T
        blocks.append(full)
        biases.append(intercept)
        n_out.append(k)
        pos += k
    return {"weights": np.ascontiguousarray(np.hstack(blocks)),
            "bias": np.concatenate(biases).astype(np.float64),
            "out_offset": np.asarray(out_off, np.int64), "n_out": np.asarray(n_out, np.int64)}


def _flatten_trees(estimators, feature_indices, n_features):
    feat, thr, left, right, leaf, root = [], [], [], [], [], []
    pos = 0
    for e, idx in zip(estimators, feature_indices):
        root.append(pos)
        if isinstance(e, ConstantSymbol):
            feat.append(np.array([-1])), thr.append(np.zeros(1))
            left.append(np.array([-1])), right.append(np.array([-1]))
            leaf.append(np.array([e.classes_[0]]))
            pos += 1
            continue
        t = e.tree_
        f = t.feature.astype(np.int64)
        internal = t.children_left >= 0
        f = np.where(internal, f, -1)
        if idx is not None:
            f = np.where(internal, idx[np.maximum(f, 0)], -1)
        feat.append(f)
        thr.append(t.threshold.astype(np.float64))
        left.append(np.where(internal, t.children_left + pos, -1))
        right.append(np.where(internal, t.children_right + pos, -1))
        leaf.append(e.classes_[np.argmax(t.value[:, 0, :], axis=1)].astype(np.int64))
        pos += t.node_count
    return {"feature": np.concatenate(feat).astype(np.int64),
            "threshold": np.concatenate(thr),
            "left": np.concatenate(left).astype(np.int64),
            "right": np.concatenate(right).astype(np.int64),
            "leaf": np.concatenate(leaf).astype(np.int16),
            "root": np.asarray(root, np.int64)}


@dataclass(frozen=True)
class LearnerFamily:
    """One row of the learner table.

    Attributes
    ----------
    name : str
        ``fast_path_`` of a classifier whose learners all belong here, and
        ``learner_arrays()["kind"]``.
    learners : str
        What the family accepts, for messages.
    accepts : callable
        ``accepts(estimator) -> bool``.
    flatten : callable
        ``flatten(estimators, feature_indices, n_features) -> dict`` of flat
        arrays; raises a ``ValueError`` (naming the learner) when a member's
        parameters cannot be flattened.
    exported : tuple of str
        The arrays :meth:`FlatLearners.learner_arrays` hands to exporters.
    """

    name: str
    learners: str
    accepts: Callable
    flatten: Callable
    exported: tuple


#: The supported learner families, in the order they are tried.
LEARNER_FAMILIES = (
    LearnerFamily("linear", "linear learners (LinearClassifierMixin, MultinomialNB)",
                  is_linear, _flatten_linear, ("weights", "bias", "n_out")),
    LearnerFamily("tree", "decision trees", is_tree, _flatten_trees,
                  ("feature", "threshold", "left", "right", "leaf", "root")),
)


@dataclass(frozen=True, eq=False)
class FlatLearners:
    """A classifier's learners, flattened (:func:`flatten_learners`).

    Attributes
    ----------
    kind : str
        The family's name, or ``"generic"`` (learners outside the table, or
        a member that could not be flattened: see ``refusal``).
    arrays : dict
        The family's flat arrays (empty for ``"generic"``).
    col_classes : ndarray of int16
        Every column's learner symbols, concatenated.
    col_cls_offset, col_n_classes : ndarray of int64, shape (n_columns,)
        Where column j's symbols start in ``col_classes``, and how many.
    refusal : str or None
        Why a family's member could not be flattened.
    learner_names : tuple of str
        The learners' class names (for messages).
    """

    kind: str
    arrays: dict
    col_classes: np.ndarray
    col_cls_offset: np.ndarray
    col_n_classes: np.ndarray
    refusal: Optional[str] = None
    learner_names: tuple = ()

    def symbols(self, X, out):
        """Fill ``out`` (int16 (n, n_columns)) with the learners' symbols of dense or
        sparse ``X`` from the flat arrays; False (``out`` untouched) where they do
        not apply: generic learners, or trees on sparse input or on NaN (each
        tree's learned missing-value branch is its own ``predict``'s)."""
        a = self.arrays
        if self.kind == "linear":
            scores = np.ascontiguousarray(X @ a["weights"] + a["bias"])
            _linear_symbols(scores, a["out_offset"], a["n_out"], self.col_cls_offset,
                            self.col_n_classes, self.col_classes, out)
            return True
        if self.kind == "tree" and not sp.issparse(X) and not np.isnan(X).any():
            X32 = np.ascontiguousarray(X, dtype=np.float32)
            _tree_symbols(X32, a["feature"], a["threshold"], a["left"], a["right"],
                          a["leaf"], a["root"], out)
            return True
        return False

    def learner_arrays(self):
        """Copies of the flat arrays, as :meth:`ECOCClassifier.learner_arrays` returns
        them; ValueError for generic learners (naming why)."""
        family = next((f for f in LEARNER_FAMILIES if f.name == self.kind), None)
        if family is None:
            if self.refusal:
                raise ValueError(f"learner_arrays: {self.refusal}")
            needs = " or ".join(f.learners for f in LEARNER_FAMILIES)
            raise ValueError(f"learner_arrays needs {needs}; got {sorted(set(self.learner_names))}")
        return {"kind": family.name, **{k: self.arrays[k].copy() for k in family.exported},
                "col_classes": self.col_classes.copy(),
                "col_n_classes": self.col_n_classes.copy()}


def flatten_learners(estimators, feature_indices, n_features):
    """Flatten fitted ECOC learners through the first family of
    :data:`LEARNER_FAMILIES` that holds all of them.

    Parameters
    ----------
    estimators : list
        One fitted learner per code column (``ConstantSymbol`` for constant columns).
    feature_indices : list of (ndarray or None)
        The columns of X each learner reads (None: all).
    n_features : int

    Returns
    -------
    FlatLearners
    """
    cls_off, n_cls, classes = [], [], []
    for e in estimators:
        cls_off.append(len(classes))
        n_cls.append(len(e.classes_))
        classes.extend(int(s) for s in e.classes_)
    common = dict(col_classes=np.asarray(classes, np.int16),
                  col_cls_offset=np.asarray(cls_off, np.int64),
                  col_n_classes=np.asarray(n_cls, np.int64),
                  learner_names=tuple(type(e).__name__ for e in estimators))
    learners = [e for e in estimators if not isinstance(e, ConstantSymbol)]
    for family in LEARNER_FAMILIES:
        if learners and all(family.accepts(e) for e in learners):
            try:
                arrays = family.flatten(estimators, feature_indices, n_features)
            except LinearShapeError as exc:
                # predict still works through the learners' own predict; exporters
                # (learner_arrays) say why the flat arrays could not be built
                return FlatLearners("generic", {}, refusal=str(exc), **common)
            return FlatLearners(family.name, arrays, **common)
    return FlatLearners("generic", {}, **common)
