"""Numba kernels of the campaign fast paths (``firmware_sim.campaign``).

Each turns a batch of error masks (``masks[i, w]`` bit b: wire position
``64 w + b`` of row i arrives in error; see ``_kernels.faults._cut_rows``)
into the device's labels without rebuilding the noisy rows, and counts them.
Row ``i`` of a batch is trial ``(row0 + i) % n_trials`` of point
``(row0 + i) // n_trials``. Every kernel adds to ``same[p]`` (label equals the
clean label ``clean_label[p]``) and, when ``y`` has one entry per point, to
``correct[p]`` (label equals ``y[p]``). Tests check each against decoding the
noisy rows with the device (same masks, trial for trial).
"""

import numpy as np
from numba import njit

from .bits import _lowest_bit, _popcount64
from .faults import _uniform_below

_ONE = np.uint64(1)


@njit(cache=True, nogil=True)
def _nb_outcomes(masks, row0, n_trials, pair_word, pair_mask, feat_start, reps, swing,
                 clean_acc, clean_label, y, same, correct):
    """Protected naive Bayes (repetition + majority, integer log-odds).

    All ``2 r_j + 1`` copies of feature j carry the same bit, so its majority
    flips exactly when more than ``r_j`` of them arrive in error; the errors
    of feature j are ``popcount(mask[pair_word[k]] & pair_mask[k])`` summed
    over its pairs ``k in [feat_start[j], feat_start[j + 1])`` (one pair per
    wire word holding a copy). A flipped feature moves the accumulator by
    ``swing[p, j] = (1 - 2 x_pj) w_j``; the label is ``acc > 0``. Cost
    O(rows x pairs) without data-dependent branches but one per feature
    (rarely taken); one-word frames (at most 64 wire bits) take a shorter loop.
    """
    has_y = y.shape[0] == same.shape[0]
    n = reps.shape[0]
    one_word = masks.shape[1] == 1 and pair_word.shape[0] == n
    p = row0 // n_trials
    left = n_trials - row0 % n_trials
    s_same = 0
    s_corr = 0
    for i in range(masks.shape[0]):
        if left == 0:
            same[p] += s_same
            if has_y:
                correct[p] += s_corr
            s_same = 0
            s_corr = 0
            p += 1
            left = n_trials
        left -= 1
        acc = clean_acc[p]
        if one_word:                     # every feature's copies in word 0
            m = masks[i, 0]
            for j in range(n):
                if np.int64(_popcount64(m & pair_mask[j])) > reps[j]:
                    acc += swing[p, j]
        else:
            for j in range(n):
                cnt = np.uint64(0)
                for k in range(feat_start[j], feat_start[j + 1]):
                    cnt += _popcount64(masks[i, pair_word[k]] & pair_mask[k])
                if np.int64(cnt) > reps[j]:
                    acc += swing[p, j]
        label = 1 if acc > 0 else 0
        s_same += 1 if label == clean_label[p] else 0
        if has_y:
            s_corr += 1 if label == y[p] else 0
    same[p] += s_same
    if has_y:
        correct[p] += s_corr


@njit(cache=True, nogil=True)
def _ecoc_binary_outcomes(masks, row0, n_trials, clean_words, code, used, unused, radius,
                          clean_label, y, same, correct):
    """Binary ECOC: the noisy outputs are ``clean_words[p] ^ mask`` (packed like
    the masks), decoded Hamming-nearest as the device does
    (``2 popcount((w ^ c) & used) + unused``, first minimum). A row with at
    most ``radius[p]`` errors keeps the clean label without decoding (each
    error moves every doubled distance by at most 2; see
    ``firmware_sim.ecoc.flip_radius``)."""
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
