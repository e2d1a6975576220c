"""Numba kernels of the ECOC device runtime (integer arithmetic only).

The wrappers in :mod:`firmware_sim.ecoc` validate the container and the
inputs, allocate the outputs and draw any random numbers; these kernels only
compute.  Inputs are the fixed-point features ``q`` (int16).

The host model has its own copies of the tree walk, the symbol choice from
linear scores and the Hamming-nearest decoders
(``edgecode/ecoc/_kernels/predict.py``: float inputs; the packages may not
import each other); ``tests/test_kernel_copies.py`` pins each pair together.
Popcount and bit packing: :mod:`firmware_sim._kernels.bits`, the one
device-side copy.
"""

import numpy as np
from numba import njit

from .bits import _pack_bits as _pack  # noqa: F401  (packed outputs: the shared layout)
from .bits import _popcount64


@njit(cache=True, nogil=True)
def _linear_scores(q, weights, bias, out):
    """``out[i, o] = bias[o] + sum_f q[i, f] * weights[f, o]`` in int64."""
    n, d = q.shape
    k = weights.shape[1]
    for i in range(n):
        for o in range(k):
            out[i, o] = bias[o]
        for f in range(d):
            v = np.int64(q[i, f])
            if v != 0:
                for o in range(k):
                    out[i, o] += v * np.int64(weights[f, o])


@njit(cache=True, nogil=True)
def _scores_to_symbols(scores, out_off, n_out, cls_off, n_cls, classes, sym):
    """One symbol per column: constant, sign (> 0 -> second class) or first argmax."""
    n, m = sym.shape
    for i in range(n):
        for j in range(m):
            k = n_out[j]
            c0 = cls_off[j]
            if k == 0:
                sym[i, j] = classes[c0]
            elif k == 1:
                sym[i, j] = classes[c0 + 1] if scores[i, out_off[j]] > 0 else classes[c0]
            else:
                o = out_off[j]
                best = 0
                top = scores[i, o]
                for t in range(1, k):
                    if scores[i, o + t] > top:
                        top = scores[i, o + t]
                        best = t
                sym[i, j] = classes[c0 + best]


@njit(cache=True, nogil=True)
def _tree_symbols(q, feature, threshold, left, right, leaf, root, sym):
    """Walk one flattened tree per column on fixed-point inputs (left iff q <= threshold)."""
    n, m = sym.shape
    for i in range(n):
        for j in range(m):
            node = root[j]
            while feature[node] >= 0:
                if q[i, feature[node]] <= threshold[node]:
                    node = left[node]
                else:
                    node = right[node]
            sym[i, j] = leaf[node]


@njit(cache=True, nogil=True)
def _decode_packed(words, code, used, unused, labels):
    """Hamming-nearest binary codeword: ``2 popcount((w ^ c) & used) + unused``, first min."""
    n, w = words.shape
    c = code.shape[0]
    for i in range(n):
        best = 0
        bestd = -1
        for r in range(c):
            d = 0
            for k in range(w):
                d += np.int64(_popcount64((words[i, k] ^ code[r, k]) & used[r, k]))
            d = 2 * d + unused[r]
            if bestd < 0 or d < bestd:
                bestd = d
                best = r
        labels[i] = best


@njit(cache=True, nogil=True)
def _decode_symbols(sym, code, unused, labels):
    """Hamming-nearest N-ary codeword: ``2 #(used and unequal) + unused``, first min."""
    n, m = sym.shape
    c = code.shape[0]
    for i in range(n):
        best = 0
        bestd = -1
        for r in range(c):
            d = 0
            for j in range(m):
                if code[r, j] >= 0 and code[r, j] != sym[i, j]:
                    d += 1
            d = 2 * d + unused[r]
            if bestd < 0 or d < bestd:
                bestd = d
                best = r
        labels[i] = best
