"""Numba kernels for ``edgecode.hashing`` (njit only; the wrappers validate).

* ``_ctpop``             -- LLVM ``ctpop`` on a uint64 (one POPCNT instruction),
  imported from :mod:`edgecode._kernels` (the one host-side copy).
* ``_affinity_from_gram`` -- Gaussian affinities from a cross product, in place
  (a range of rows: threads take row chunks).
* ``_hamming_topk_tiled`` -- top-k Hamming search over codes held as
  transposed tiles (vectorised distances per tile and block of queries,
  bounded buckets per distance).
* ``_rank_metrics``      -- recall@R, precision@R and average precision of one
  Hamming ranking per query against its true neighbours.

Packed codes are uint64 words, bit i of a code in word ``i // 64`` at bit
position ``i % 64`` (LSB first; see ``docs/container_format.md``).  Hamming
rankings break ties by the lower database index.
"""

import math

from numba import njit

from .._config import NJIT, NJIT_NOGIL
from .._kernels import _ctpop  # the one host-side popcount


@njit(**NJIT_NOGIL)
def _affinity_from_gram(G, x_sq, a_sq, inv_sigma, start, stop):
    """``G[i, j] <- exp(-max(x_sq[i] + a_sq[j] - 2 G[i, j], 0) * inv_sigma)`` in
    place, rows ``start .. stop - 1`` (``edgecode._parallel.run_chunks``)."""
    m = G.shape[1]
    for i in range(start, stop):
        xi = x_sq[i]
        for j in range(m):
            d = xi + a_sq[j] - 2.0 * G[i, j]
            if d < 0.0:
                d = 0.0
            G[i, j] = math.exp(-d * inv_sigma)


@njit(**NJIT)
def _distances(db, q, out, hist):
    """Hamming distance of every row of ``db`` to ``q`` into ``out``; histogram in ``hist``.

    Its own function, not inlined into :func:`_rank_metrics`: there the loop
    runs out of registers (2x slower, measured)."""
    n, W = db.shape
    for dd in range(hist.shape[0]):
        hist[dd] = 0
    for i in range(n):
        s = _ctpop(db[i, 0] ^ q[0])
        for w in range(1, W):
            s += _ctpop(db[i, w] ^ q[w])
        out[i] = s
        hist[s] += 1


#: codes per tile of the scan (transposed: word w of the tile's codes
#: contiguous; 64 KB at 512 bits), and queries scanned against a tile while it
#: is in cache (fewer when k is large: the buckets stay under 64 MB)
TILE = 1024
_TQBLOCK = 32


@njit(**NJIT_NOGIL)
def _tile_distances(tile, q, d, th):
    """``d[i] = sum_w popcount(tile[w, i] ^ q[w])``, two words at a time over the
    tile's ``TILE`` contiguous columns (loops of a known trip count that the
    compiler vectorises: AVX2 vector popcount); returns how many are <= ``th``
    (a tile without one is skipped)."""
    W = tile.shape[0]
    T = TILE
    cnt = 0
    if W == 1:
        qa = q[0]
        ra = tile[0]
        for i in range(T):
            x = _ctpop(ra[i] ^ qa)
            d[i] = x
            cnt += x <= th
        return cnt
    if W == 2:
        qa = q[0]
        qb = q[1]
        ra = tile[0]
        rb = tile[1]
        for i in range(T):
            x = _ctpop(ra[i] ^ qa) + _ctpop(rb[i] ^ qb)
            d[i] = x
            cnt += x <= th
        return cnt
    # W >= 3: the first one or two words, pairs, the last pair with the count
    qa = q[0]
    ra = tile[0]
    if W % 2 == 1:
        for i in range(T):
            d[i] = _ctpop(ra[i] ^ qa)
        w = 1
    else:
        qb = q[1]
        rb = tile[1]
        for i in range(T):
            d[i] = _ctpop(ra[i] ^ qa) + _ctpop(rb[i] ^ qb)
        w = 2
    while w < W - 2:
        qa = q[w]
        qb = q[w + 1]
        ra = tile[w]
        rb = tile[w + 1]
        for i in range(T):
            d[i] += _ctpop(ra[i] ^ qa) + _ctpop(rb[i] ^ qb)
        w += 2
    qa = q[W - 2]
    qb = q[W - 1]
    ra = tile[W - 2]
    rb = tile[W - 1]
    for i in range(T):
        x = d[i] + _ctpop(ra[i] ^ qa) + _ctpop(rb[i] ^ qb)
        d[i] = x
        cnt += x <= th
    return cnt


@njit(**NJIT_NOGIL)
def _hamming_topk_tiled(tiles, n, queries, k, out_dist, out_idx, thr, total, sizes, bucket, d,
                        q_start, q_stop):
    """The k nearest codes to each query, sorted by (distance, index).

    ``tiles[t, w, i]`` is word w of code ``t * TILE + i`` (codes past ``n``
    are padding and never offered). Queries ``[q_start, q_stop)`` go in
    blocks of ``QB = thr.shape[0]``: each tile is scanned for every query of
    the block while it is in cache (vectorised distances, :func:`_tile_distances`),
    then the distances at or below a query's threshold are offered, in index
    order, to its bounded buckets (per possible distance, at most k indices;
    the threshold ``thr`` is the largest kept distance once k are kept, and a
    code farther, or tied with it when k are kept, is skipped): ties keep the
    lower index.  Scratch, allocated by the wrapper (one set per thread):
    ``thr``, ``total`` (QB,), ``sizes`` (QB, 64 W + 1), ``bucket``
    (QB, 64 W + 1, k), ``d`` (TILE,), all int64.
    """
    nt, W, T = tiles.shape
    B = 64 * W
    QB = thr.shape[0]
    for q0 in range(q_start, q_stop, QB):
        nb = q_stop - q0
        if nb > QB:
            nb = QB
        for qb in range(QB):
            thr[qb] = B
            total[qb] = 0
            for dd in range(B + 1):
                sizes[qb, dd] = 0
        for t in range(nt):
            base = t * T
            m = n - base
            if m > T:
                m = T
            tile = tiles[t]
            for qb in range(nb):
                th = thr[qb]
                if _tile_distances(tile, queries[q0 + qb], d, th) == 0:
                    continue
                for s0 in range(0, m, 64):      # 64-code stretches: a vectorised count
                    s1 = s0 + 64                # first, the scalar scan only where needed
                    if s1 > m:
                        s1 = m
                    c = 0
                    for i in range(s0, s1):
                        c += d[i] <= th
                    if c == 0:
                        continue
                    for i in range(s0, s1):     # offer code base + i at distance di
                        di = d[i]
                        if di < th or (di == th and total[qb] < k):
                            sz = sizes[qb, di]
                            bucket[qb, di, sz] = base + i
                            sizes[qb, di] = sz + 1
                            total[qb] += 1
                            if total[qb] > k:   # drop the latest item at the worst distance
                                sizes[qb, th] -= 1
                                total[qb] -= 1
                            if total[qb] == k:
                                while sizes[qb, th] == 0:
                                    th -= 1
                                thr[qb] = th
        for qb in range(nb):
            p = 0
            for dd in range(B + 1):
                for c in range(sizes[qb, dd]):
                    if p < k:
                        out_idx[q0 + qb, p] = bucket[qb, dd, c]
                        out_dist[q0 + qb, p] = dd
                        p += 1


@njit(**NJIT)
def _rank_metrics(db, queries, true_nn, R, recall, precision, ap, dist, start, mark, ranks):
    """Metrics of each query's full Hamming ranking (ties by lower index).

    ``true_nn[q]`` holds the indices of the query's k relevant items.  The
    rank of item j is ``#{i: d_i < d_j} + #{i < j: d_i == d_j}``.  Scratch,
    allocated by the wrapper: ``dist`` int32 (n,), ``start`` int64
    (64 W + 1,), ``mark`` bool (n,) all False (left so), ``ranks`` int64 (k,).
    """
    n, W = db.shape
    k = true_nn.shape[1]
    for qi in range(queries.shape[0]):
        _distances(db, queries[qi], dist, start)    # start <- histogram of distances
        cum = 0
        for dd in range(start.shape[0]):            # in place: first rank at each distance
            c = start[dd]
            start[dd] = cum
            cum += c
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
        # insertion sort of the (few) ranks: numba's np.sort costs seconds to compile
        for a in range(1, found):
            v = ranks[a]
            b = a - 1
            while b >= 0 and ranks[b] > v:
                ranks[b + 1] = ranks[b]
                b -= 1
            ranks[b + 1] = v
        hits = 0
        s = 0.0
        for t in range(found):
            if ranks[t] < R:
                hits += 1
            s += (t + 1.0) / (ranks[t] + 1.0)
        recall[qi] = hits / k
        precision[qi] = hits / R
        ap[qi] = s / k
