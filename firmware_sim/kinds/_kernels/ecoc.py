"""Numba kernels of the ECOC device runtime (integer arithmetic only).

The wrappers in :mod:`firmware_sim.kinds.ecoc` validate the container and the
inputs, allocate the outputs and draw any random numbers; these kernels only
compute.  Inputs are the fixed-point features ``q`` (int16).

The host model has its own copies of the tree walk, the symbol choice from
linear scores and the Hamming-nearest decoders
(``edgecode/ecoc/_kernels/predict.py``: float inputs; the packages may not
import each other); ``tests/test_kernel_copies.py`` pins each pair together.
Popcount and bit packing: :mod:`firmware_sim._kernels.bits`, the one
device-side copy.

The campaign fast paths (``_ecoc_binary_outcomes``, ``_ecoc_symbol_outcomes``)
turn a batch of error masks (``masks[i, w]`` bit b: position ``64 w + b`` of
row i is in error) into the device's labels without rebuilding the noisy
rows, and count them. Row ``i`` of a batch is trial ``(row0 + i) % n_trials``
of point ``(row0 + i) // n_trials``; each adds to ``same[p]`` (label equals
the clean label) and, when ``y`` has one entry per point, to ``correct[p]``.
Tests check each against decoding the noisy rows with the device.
"""

import numpy as np
from numba import njit

from ..._kernels.bits import _lowest_bit, _popcount64
from ..._kernels.bits import _pack_bits as _pack  # noqa: F401  (packed outputs: the shared layout)
from ..._kernels.faults import _uniform_below

_ONE = np.uint64(1)


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


@njit(cache=True, nogil=True)
def _ecoc_binary_outcomes(masks, row0, n_trials, clean_words, code, used, unused, radius,
                          clean_label, y, same, correct):
    """Binary ECOC: the noisy outputs are ``clean_words[p] ^ mask`` (packed like
    the masks), decoded Hamming-nearest as the device does
    (``2 popcount((w ^ c) & used) + unused``, first minimum). A row with at
    most ``radius[p]`` errors keeps the clean label without decoding (each
    error moves every doubled distance by at most 2; see
    ``firmware_sim.kinds.ecoc.flip_radius``)."""
    has_y = y.shape[0] == same.shape[0]
    nw = masks.shape[1]
    c = code.shape[0]
    p = row0 // n_trials
    left = n_trials - row0 % n_trials
    for i in range(masks.shape[0]):
        if left == 0:
            p += 1
            left = n_trials
        left -= 1
        k = np.uint64(0)
        for w in range(nw):
            k += _popcount64(masks[i, w])
        label = clean_label[p]
        if np.int64(k) > radius[p]:
            bestd = np.int64(1) << 62
            for r in range(c):
                d = np.uint64(0)
                for w in range(nw):
                    d += _popcount64((clean_words[p, w] ^ masks[i, w] ^ code[r, w]) & used[r, w])
                dd = 2 * np.int64(d) + unused[r]
                lt = dd < bestd
                bestd = dd if lt else bestd
                label = r if lt else label
        if label == clean_label[p]:
            same[p] += 1
        if has_y and label == y[p]:
            correct[p] += 1


@njit(cache=True, nogil=True)
def _ecoc_symbol_outcomes(masks, row0, n_trials, clean_sym, step, clean_dist, n_sym, seed,
                          radius, clean_label, y, same, correct, dist):
    """N-ary ECOC: an event replaces the clean symbol by one of the other
    ``n_sym - 1`` chosen uniformly (the draws of ``_replace_symbols`` with the
    same seed, in the same order); each event moves the doubled distances
    ``clean_dist[p]`` to every row by ``step[j, old, new]`` (a vector over the
    classes: ``2 ([new != code[r, j]] - [old != code[r, j]])``, 0 where the
    code entry is -1), then the first minimum is the label. A row with at
    most ``radius[p]`` events keeps the clean label (its replacement symbols
    are still drawn, so the stream stays that of ``_replace_symbols``). Cost
    O(rows + events x classes). Scratch: ``dist`` (classes,). (The splitmix64
    state is allocated here: as an argument it may alias the counts, and the
    event loop runs about 3% slower.)"""
    state = np.empty(1, np.uint64)
    state[0] = np.uint64(seed)
    has_y = y.shape[0] == same.shape[0]
    nw = masks.shape[1]
    c = clean_dist.shape[1]
    p = row0 // n_trials
    left = n_trials - row0 % n_trials
    for i in range(masks.shape[0]):
        if left == 0:
            p += 1
            left = n_trials
        left -= 1
        label = clean_label[p]
        k = np.uint64(0)
        for w in range(nw):
            k += _popcount64(masks[i, w])
        if np.int64(k) <= radius[p]:
            for _ in range(np.int64(k)):
                _uniform_below(state, n_sym - 1)
            nw_scan = 0
        else:
            nw_scan = nw
        first = True
        for w in range(nw_scan):
            m = masks[i, w]
            while m:
                j = (w << 6) + np.int64(_lowest_bit(m))
                m &= m - _ONE
                if first:
                    for r in range(c):
                        dist[r] = clean_dist[p, r]
                    first = False
                old = np.int64(clean_sym[p, j])
                new = old + 1 + _uniform_below(state, n_sym - 1)
                if new >= n_sym:
                    new -= n_sym
                for r in range(c):
                    dist[r] += step[j, old, new, r]
        if not first:
            label = _first_min(dist)
        if label == clean_label[p]:
            same[p] += 1
        if has_y and label == y[p]:
            correct[p] += 1


@njit(cache=True, nogil=True, inline="always")
def _first_min(dist):
    """Index of the first minimum (select, not branch, per entry)."""
    best = dist[0]
    label = 0
    for r in range(1, dist.shape[0]):
        d = dist[r]
        lt = d < best
        best = d if lt else best
        label = r if lt else label
    return label
