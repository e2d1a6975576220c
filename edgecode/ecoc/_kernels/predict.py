"""Numba kernels of :class:`edgecode.ecoc.ECOCClassifier`'s fast predict path.

Plain functions on C-contiguous arrays that the classifier validated and
allocated; no validation, no randomness, no Python objects.  One kernel, one
job:

* ``_linear_symbols``: stacked linear scores -> one symbol per column,
* ``_tree_symbols``: flattened decision trees -> one symbol per column,
* ``_pack_bits``: binary symbols -> uint64 words (column j is bit j % 64 of
  word j // 64),
* ``_hamming_packed`` / ``_hamming_symbols``: nearest codeword in (doubled)
  Hamming distance, lowest class index on ties (popcount:
  :mod:`edgecode._kernels`, the one host-side copy).

The device runtime has its own copies of these kernels
(``firmware_sim/kinds/_kernels/ecoc.py``, ``bits.py``: fixed-point inputs, no
edgecode import); ``tests/test_kernel_copies.py`` pins each pair together.
"""

import numpy as np
from numba import njit

from ..._config import NJIT
from ..._kernels import _popcount64

# uint64 constants: numba turns mixed uint64/int64 arithmetic into float64
_ONE = np.uint64(1)
_M63 = np.uint64(63)


@njit(**NJIT)
def _linear_symbols(scores, out_off, n_out, cls_off, n_cls, classes, sym):
    """Symbol of each column from its learner's linear scores.

    Column j owns scores ``out_off[j] .. out_off[j] + n_out[j] - 1`` and the
    learner classes ``classes[cls_off[j] .. cls_off[j] + n_cls[j] - 1]``
    (sorted symbols).  ``n_out[j] == 0``: constant learner (its one class);
    ``== 1``: binary learner, second class iff the score is > 0;
    ``>= 2``: first class of largest score (argmax, first on ties).
    """
    n, m = sym.shape
    for i in range(n):
        for j in range(m):
            k = n_out[j]
            c0 = cls_off[j]
            if k == 0:
                sym[i, j] = classes[c0]
            elif k == 1:
                if scores[i, out_off[j]] > 0.0:
                    sym[i, j] = classes[c0 + 1]
                else:
                    sym[i, j] = classes[c0]
            else:
                o = out_off[j]
                best = 0
                top = scores[i, o]
                for t in range(1, k):
                    v = scores[i, o + t]
                    if v > top:
                        top = v
                        best = t
                sym[i, j] = classes[c0 + best]


@njit(**NJIT)
def _tree_symbols(X, feature, threshold, left, right, leaf, root, sym):
    """Walk one flattened tree per column: left iff ``X[i, feature] <= threshold``.

    Internal nodes have ``feature >= 0``; a leaf has ``feature == -1`` and its
    symbol in ``leaf``.  ``X`` is float32 as in scikit-learn's trees (the
    comparison promotes to float64, exactly as ``tree_.apply`` does).
    """
    n, m = sym.shape
    for i in range(n):
        for j in range(m):
            node = root[j]
            while feature[node] >= 0:
                if X[i, feature[node]] <= threshold[node]:
                    node = left[node]
                else:
                    node = right[node]
            sym[i, j] = leaf[node]


@njit(**NJIT)
def _pack_bits(sym, out):
    """Pack 0/1 symbols ``sym`` (n, m) into ``out`` (n, ceil(m / 64)) uint64."""
    n, m = sym.shape
    w = out.shape[1]
    for i in range(n):
        for k in range(w):
            out[i, k] = 0
        for j in range(m):
            if sym[i, j] == 1:
                u = np.uint64(j)
                out[i, j >> 6] |= _ONE << (u & _M63)


@njit(**NJIT)
def _hamming_packed(pred, code, used, unused, labels, dist2):
    """Binary codes: ``dist2[i, r] = 2 popcount((pred_i ^ code_r) & used_r) + unused[r]``.

    ``labels[i]`` is the first r of smallest ``dist2`` (lowest class index on
    ties).
    """
    n, w = pred.shape
    c = code.shape[0]
    for i in range(n):
        best = 0
        bestd = -1
        for r in range(c):
            d = 0
            for k in range(w):
                d += np.int64(_popcount64((pred[i, k] ^ code[r, k]) & used[r, k]))
            d = 2 * d + unused[r]
            dist2[i, r] = d
            if bestd < 0 or d < bestd:
                bestd = d
                best = r
        labels[i] = best


@njit(**NJIT)
def _hamming_symbols(sym, code, unused, labels, dist2):
    """N-ary codes: ``dist2[i, r] = 2 #{j : code[r, j] >= 0, sym[i, j] != code[r, j]} + unused[r]``.

    ``labels[i]`` is the first r of smallest ``dist2``.
    """
    n, m = sym.shape
    c = code.shape[0]
    for i in range(n):
        best = 0
        bestd = -1
        for r in range(c):
            d = 0
            for j in range(m):
                cj = code[r, j]
                if cj >= 0 and cj != sym[i, j]:
                    d += 1
            d = 2 * d + unused[r]
            dist2[i, r] = d
            if bestd < 0 or d < bestd:
                bestd = d
                best = r
        labels[i] = best
