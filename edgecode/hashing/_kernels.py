"""Numba kernels for ``edgecode.hashing`` (njit only; the wrappers validate).

* ``_ctpop``             -- LLVM ``ctpop`` on a uint64 (one POPCNT instruction),
  imported from :mod:`edgecode._kernels` (the one host-side copy).
* ``_affinity_from_gram`` -- Gaussian affinities from a cross product, in place.
* ``_hamming_topk``      -- top-k Hamming search over packed uint64 codes
  (bounded buckets per distance, one database pass per block of queries).
* ``_rank_metrics``      -- recall@R, precision@R and average precision of one
  Hamming ranking per query against its true neighbours.

Packed codes are uint64 words, bit i of a code in word ``i // 64`` at bit
position ``i % 64`` (LSB first; see ``docs/container_format.md``).  Hamming
rankings break ties by the lower database index.
"""

import math

import numpy as np
from numba import njit

from .._config import NJIT
from .._kernels import _ctpop  # the one host-side popcount


@njit(**NJIT)
def _affinity_from_gram(G, x_sq, a_sq, inv_sigma):
    """``G[i, j] <- exp(-max(x_sq[i] + a_sq[j] - 2 G[i, j], 0) * inv_sigma)`` in place."""
    n, m = G.shape
    for i in range(n):
        xi = x_sq[i]
        for j in range(m):
            d = xi + a_sq[j] - 2.0 * G[i, j]
            if d < 0.0:
                d = 0.0
            G[i, j] = math.exp(-d * inv_sigma)


@njit(**NJIT)
def _distances(db, q, out, hist):
    """Hamming distance of every row of ``db`` to ``q`` into ``out``; histogram in ``hist``."""
    n, W = db.shape
    hist[:] = 0
    for i in range(n):
        s = _ctpop(db[i, 0] ^ q[0])
        for w in range(1, W):
            s += _ctpop(db[i, w] ^ q[w])
        out[i] = s
        hist[s] += 1


#: queries scanned together in one pass over the database (loads amortised)
_QBLOCK = 8


@njit(**NJIT)
def _offer(qb, d, i, k, thr, total, sizes, bucket):
    """Offer item i at distance d to query qb's bounded top-k buckets."""
    t = thr[qb]
    if d > t or (d == t and total[qb] == k):
        return
    c = sizes[qb, d]
    bucket[qb, d, c] = i
    sizes[qb, d] = c + 1
    total[qb] += 1
    if total[qb] > k:               # drop the latest item at the worst distance
        sizes[qb, t] -= 1
        total[qb] -= 1
    if total[qb] == k:
        while sizes[qb, t] == 0:
            t -= 1
        thr[qb] = t


@njit(**NJIT)
def _hamming_topk(db, queries, k, out_dist, out_idx):
    """The k nearest rows of ``db`` to each query, sorted by (distance, index).

    One pass over the database per block of ``_QBLOCK`` queries.  Each query
    keeps, per possible distance, the indices met so far (at most k each) and
    the threshold ``thr``: the largest kept distance once k items are kept.
    A row farther than ``thr`` (or tied with it when k are kept: later rows
    lose ties) is skipped after one XOR + popcount + compare, so the scan
    rarely stores anything.
    """
    n, W = db.shape
    nq = queries.shape[0]
    B = 64 * W
    thr = np.empty(_QBLOCK, dtype=np.int64)
    total = np.empty(_QBLOCK, dtype=np.int64)
    sizes = np.empty((_QBLOCK, B + 1), dtype=np.int64)
    bucket = np.empty((_QBLOCK, B + 1, k), dtype=np.int64)
    for q0 in range(0, nq, _QBLOCK):
        nb = min(_QBLOCK, nq - q0)
        thr[:] = B
        total[:] = 0
        sizes[:, :] = 0
        if W == 1:
            for i in range(n):
                x = db[i, 0]
                for qb in range(nb):
                    d = np.int64(_ctpop(x ^ queries[q0 + qb, 0]))
                    if d <= thr[qb]:
                        _offer(qb, d, i, k, thr, total, sizes, bucket)
        elif W == 2:
            for i in range(n):
                x0 = db[i, 0]
                x1 = db[i, 1]
                for qb in range(nb):
                    d = np.int64(_ctpop(x0 ^ queries[q0 + qb, 0])) + \
                        np.int64(_ctpop(x1 ^ queries[q0 + qb, 1]))
                    if d <= thr[qb]:
                        _offer(qb, d, i, k, thr, total, sizes, bucket)
        else:
            for i in range(n):
                for qb in range(nb):
                    d = np.int64(_ctpop(db[i, 0] ^ queries[q0 + qb, 0]))
                    for w in range(1, W):
                        d += np.int64(_ctpop(db[i, w] ^ queries[q0 + qb, w]))
                    if d <= thr[qb]:
                        _offer(qb, d, i, k, thr, total, sizes, bucket)
        for qb in range(nb):
            p = 0
            for d in range(B + 1):
                for c in range(sizes[qb, d]):
                    if p < k:
                        out_idx[q0 + qb, p] = bucket[qb, d, c]
                        out_dist[q0 + qb, p] = d
                        p += 1


#: codes per chunk of the 64-bit scan: distances of a chunk go to a uint8
#: buffer in one vectorisable loop that also counts the candidates; chunks
#: without any are skipped
_CHUNK64 = 256


@njit(**NJIT)
def _chunk_distances(col, x, out, t):
    """uint8 Hamming distances of ``col`` (1-D uint64) to ``x``; count of those <= t."""
    cnt = 0
    for i in range(col.shape[0]):
        d = np.uint8(_ctpop(col[i] ^ x))
        out[i] = d
        cnt += np.int64(d <= t)
    return cnt


@njit(**NJIT)
def _hamming_topk_64(col, queries, k, out_dist, out_idx):
    """:func:`_hamming_topk` for 64-bit codes held as 1-D arrays (same results).

    One pass per query; each chunk's distances are computed by a loop the
    compiler vectorises (1-D contiguous input, uint8 output: vector popcount
    where the CPU has it), and only chunks with a candidate at or below the
    current threshold are offered, in index order, to the bounded buckets.
    """
    n = col.shape[0]
    thr = np.empty(1, dtype=np.int64)
    total = np.empty(1, dtype=np.int64)
    sizes = np.empty((1, 65), dtype=np.int64)
    bucket = np.empty((1, 65, k), dtype=np.int64)
    buf = np.empty(_CHUNK64, dtype=np.uint8)
    for qi in range(queries.shape[0]):
        thr[0] = 64
        total[0] = 0
        sizes[:, :] = 0
        x = queries[qi]
        for c0 in range(0, n, _CHUNK64):
            m = min(_CHUNK64, n - c0)
            t = np.uint8(thr[0])
            if _chunk_distances(col[c0:c0 + m], x, buf, t) == 0:
                continue
            for i in range(m):
                if buf[i] <= t:
                    _offer(0, np.int64(buf[i]), c0 + i, k, thr, total, sizes, bucket)
                    t = np.uint8(thr[0])
        p = 0
        for d in range(65):
            for c in range(sizes[0, d]):
                if p < k:
                    out_idx[qi, p] = bucket[0, d, c]
                    out_dist[qi, p] = d
                    p += 1


@njit(**NJIT)
def _rank_metrics(db, queries, true_nn, R, recall, precision, ap):
    """Metrics of each query's full Hamming ranking (ties by lower index).

    ``true_nn[q]`` holds the indices of the query's k relevant items.  The
    rank of item j is ``#{i: d_i < d_j} + #{i < j: d_i == d_j}``.
    """
    n, W = db.shape
    k = true_nn.shape[1]
    dist = np.empty(n, dtype=np.int32)
    hist = np.zeros(64 * W + 1, dtype=np.int64)
    start = np.zeros(64 * W + 1, dtype=np.int64)
    mark = np.zeros(n, dtype=np.bool_)
    ranks = np.empty(k, dtype=np.int64)
    for qi in range(queries.shape[0]):
        _distances(db, queries[qi], dist, hist)
        cum = 0
        for dd in range(hist.shape[0]):
            start[dd] = cum
            cum += hist[dd]
        for t in range(k):
            mark[true_nn[qi, t]] = True
        found = 0
        for i in range(n):
            d = dist[i]
            r = start[d]
            start[d] = r + 1
            if mark[i]:
                ranks[found] = r
                found += 1
                mark[i] = False
        ranks[:found] = np.sort(ranks[:found])
        hits = 0
        s = 0.0
        for t in range(found):
            if ranks[t] < R:
                hits += 1
            s += (t + 1.0) / (ranks[t] + 1.0)
        recall[qi] = hits / k
        precision[qi] = hits / R
        ap[qi] = s / k
