"""Numba kernels of the SSBC device runtime (integer arithmetic only).

The fixed-point pipeline (spec: ``docs/container_format.md``, kind ``ssbc``):

    D_j   = sum_i (x_i - a_ji)^2                       int64, exact
    t_j   = (min(D_j, dist_clamp) * exp_mult) >> 40    Q16 of D_j log2(e) / sigma
    n, f  = t_j >> 16, t_j & 0xFFFF
    i, r  = f >> 8, f & 0xFF
    w_j   = ((lut[i] (256 - r) + lut[i + 1] r) >> 8) >> min(n, 16)     Q15
    acc_b = sum_j w_j P_jb                             int64
    bit_b = acc_b > thresholds_b
"""

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def _q15_exp_neg(dist, exp_mult, dist_clamp, lut):
    """Q15 affinity exp(-dist / sigma) of an int64 squared distance: the one copy of
    the device's exponential (clamp, Q16 exponent, table of 2^(-i/256) with linear
    interpolation, shift by the integer part)."""
    if dist > dist_clamp:
        dist = dist_clamp
    t = (dist * exp_mult) >> 40
    sh = t >> 16
    f = t & 0xFFFF
    idx = f >> 8
    r = f & 0xFF
    w = (np.int64(lut[idx]) * (256 - r) + np.int64(lut[idx + 1]) * r) >> 8
    if sh > 16:
        sh = 16
    return w >> sh


@njit(cache=True, nogil=True)
def _ssbc_bits(xq, aq, exp_mult, dist_clamp, lut, pq, thr, out):
    """Code bits (uint8 0/1) of the quantized inputs ``xq`` (N, d) into ``out`` (N, k)."""
    n, d = xq.shape
    m = aq.shape[0]
    k = pq.shape[1]
    acc = np.empty(k, dtype=np.int64)
    for p in range(n):
        for b in range(k):
            acc[b] = 0
        for j in range(m):
            dist = np.int64(0)
            for i in range(d):
                diff = np.int64(xq[p, i]) - np.int64(aq[j, i])
                dist += diff * diff
            w = _q15_exp_neg(dist, exp_mult, dist_clamp, lut)
            if w != 0:
                for b in range(k):
                    acc[b] += w * np.int64(pq[j, b])
        for b in range(k):
            out[p, b] = 1 if acc[b] > thr[b] else 0


@njit(cache=True, nogil=True)
def _affinity_q15(xq, aq, exp_mult, dist_clamp, lut, out):
    """The Q15 affinities w_j of each input (N, m), same arithmetic as ``_ssbc_bits``."""
    n, d = xq.shape
    m = aq.shape[0]
    for p in range(n):
        for j in range(m):
            dist = np.int64(0)
            for i in range(d):
                diff = np.int64(xq[p, i]) - np.int64(aq[j, i])
                dist += diff * diff
            out[p, j] = _q15_exp_neg(dist, exp_mult, dist_clamp, lut)


@njit(cache=True, nogil=True)
def _hamming_knn(codes, table, labels, k, n_classes, popcnt8, out_label, out_dist):
    """k-NN vote over a packed uint8 code table.

    The k nearest table rows (distance, then lower row index) vote; the class
    with most votes wins, ties to the lower class index.  ``out_dist`` receives
    the distance to the nearest row.
    """
    n, nb = codes.shape
    T = table.shape[0]
    best_d = np.empty(k, dtype=np.int64)
    best_i = np.empty(k, dtype=np.int64)
    votes = np.zeros(n_classes, dtype=np.int64)   # (np.empty here: a slower loop)
    for p in range(n):
        cnt = 0
        for t in range(T):
            dd = np.int64(0)
            for b in range(nb):
                dd += popcnt8[codes[p, b] ^ table[t, b]]
            # insert (dd, t) into the sorted best list; later rows lose ties
            if cnt < k:
                pos = cnt
                cnt += 1
            elif dd < best_d[k - 1]:
                pos = k - 1
            else:
                continue
            while pos > 0 and best_d[pos - 1] > dd:
                best_d[pos] = best_d[pos - 1]
                best_i[pos] = best_i[pos - 1]
                pos -= 1
            best_d[pos] = dd
            best_i[pos] = t
        for c in range(n_classes):
            votes[c] = 0
        for q in range(cnt):
            votes[labels[best_i[q]]] += 1
        win = 0
        for c in range(1, n_classes):
            if votes[c] > votes[win]:
                win = c
        out_label[p] = win
        out_dist[p] = best_d[0]
