"""Numba kernels of the protected naive Bayes device (:mod:`firmware_sim.kinds.naive_bayes`).

The device loop (majority decoding, integer accumulation) and the fast path
of campaigns under additive wire faults (``_nb_outcomes``: a batch of error
masks, ``masks[i, w]`` bit b = wire position ``64 w + b`` of row i arrives
in error, counted without rebuilding the noisy rows; tested equal to
decoding the noisy rows). No validation, no random numbers.
"""

import numpy as np
from numba import njit

from ..._kernels.bits import _popcount64


@njit(cache=True, nogil=True)
def _majority_decode(bits, reps, out):
    """Feature-major majority vote: ``out[i, j] = (#ones in copies of j) > reps[j]``."""
    t = bits.shape[0]
    n = reps.shape[0]
    for i in range(t):
        pos = 0
        for j in range(n):
            m = 2 * reps[j] + 1
            c = 0
            for k in range(m):
                c += bits[i, pos + k]
            pos += m
            out[i, j] = 1 if c > reps[j] else 0


@njit(cache=True, nogil=True)
def _accumulate(X, weights, bias, out):
    """Integer log-odds ``out[i] = bias + sum_j X[i, j] * weights[j]`` (int64).

    (``_decode_accumulate`` with every ``reps[j] = 0`` gives the same sums, but
    its loop over copies does not vectorise: about 13x slower.)"""
    t, n = X.shape
    for i in range(t):
        acc = bias
        for j in range(n):
            if X[i, j]:
                acc += weights[j]
        out[i] = acc


@njit(cache=True, nogil=True)
def _decode_accumulate(bits, reps, weights, bias, out):
    """Device inference on received bits: majority-decode each feature and,
    when it decodes to 1, add its weight; ``out[i]`` is the accumulator.

    This is the loop a microcontroller runs (see ``ProtectedNBDevice.resources``
    for its operation count): one addition per received bit, one comparison
    per feature, one addition per feature decoded as 1.
    """
    t = bits.shape[0]
    n = reps.shape[0]
    for i in range(t):
        acc = bias
        pos = 0
        for j in range(n):
            m = 2 * reps[j] + 1
            c = 0
            for k in range(m):
                c += bits[i, pos + k]
            pos += m
            if c > reps[j]:
                acc += weights[j]
        out[i] = acc


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
