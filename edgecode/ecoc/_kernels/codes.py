"""Numba kernels for ``edgecode.ecoc`` coding matrices (njit only; wrappers validate).

The kernels, one job each:

* ``_pair_distances`` -- all pairwise doubled Hamming distances between the rows
  of a small-integer matrix (call it on the transpose for columns).
* ``_sylvester_fill``  -- entries of the N-ary Sylvester matrix M_k(N) at chosen
  row and column indices, from their base-N digits.
* ``_canonical_rows``, ``_min_offdiag``, ``_draw_valid`` -- helpers.
* ``_random_search``   -- best of K random matrices by row or total distance,
  drawn valid (no equal rows, no constant or relabel-equivalent columns).
* ``_swap_climb``      -- the adaptive truncation's hill climb over kept rows/columns.
* ``_anneal``          -- simulated annealing of a binary code under the
  electrostatic energy sum_{i<j} 1 / d_ij^2 (seed 003).

Distances are *doubled* so that they stay integers: a position where both
symbols are used (>= 0) and differ counts 2, a position where either symbol is
the ternary "unused" -1 counts 1 (Allwein, Schapire and Singer's 1/2), all
others 0.  With ``exact=True`` the -1 is an ordinary symbol (equality test).
"""

import numpy as np
from numba import njit

from ..._config import NJIT

# ---------------------------------------------------------------- distances


@njit(**NJIT)
def _pair_distances(A, exact, out):
    """Fill ``out[i, j]`` (int64, shape (r, r)) with doubled distances of rows of A.

    ``exact=False``: the -1 rule above; ``exact=True``: 2 * #unequal symbols.
    The diagonal is set to 0.  ``A`` is C-contiguous int8 or int16.
    """
    r, n = A.shape
    ternary = False
    if not exact:
        for i in range(r):
            for k in range(n):
                if A[i, k] < 0:
                    ternary = True
                    break
            if ternary:
                break
    for i in range(r):
        out[i, i] = 0
        a = A[i]
        for j in range(i + 1, r):
            b = A[j]
            s = 0
            if ternary:
                s2 = 0
                for k in range(n):
                    x = a[k]
                    y = b[k]
                    dc = (x | y) < 0
                    s += np.int32((x != y) & (not dc))
                    s2 += np.int32(dc)
                s = 2 * s + s2
            else:
                for k in range(n):
                    s += np.int32(a[k] != b[k])
                s = 2 * s
            out[i, j] = s
            out[j, i] = s


@njit(**NJIT)
def _min_offdiag(D):
    """(minimum, number of pairs i < j at the minimum) of a symmetric matrix; (-1, 0) if r < 2."""
    r = D.shape[0]
    best = -1
    cnt = 0
    for i in range(r):
        for j in range(i + 1, r):
            v = D[i, j]
            if best < 0 or v < best:
                best = v
                cnt = 1
            elif v == best:
                cnt += 1
    return best, cnt


@njit(**NJIT)
def _canonical_rows(A, out):
    """Relabel each row's used symbols by order of first appearance (-1 kept).

    Two rows are equal up to a relabelling of symbols iff their canonical
    forms are equal (call it on the transpose for columns).  ``out`` has A's
    shape and dtype.
    """
    r, n = A.shape
    N = 1
    for i in range(r):
        for k in range(n):
            if A[i, k] + 1 > N:
                N = A[i, k] + 1
    lab = np.empty(N, np.int64)
    for i in range(r):
        lab[:] = -1
        nxt = 0
        for k in range(n):
            s = A[i, k]
            if s < 0:
                out[i, k] = s
            else:
                if lab[s] < 0:
                    lab[s] = nxt
                    nxt += 1
                out[i, k] = lab[s]


# ---------------------------------------------------------------- Sylvester


@njit(**NJIT)
def _sylvester_fill(rows, cols, base, N, k, out):
    """``out[i, j] = sum_d base[u_d, v_d] mod N`` for u = digits(rows[i]), v = digits(cols[j])."""
    nr = rows.shape[0]
    nc = cols.shape[0]
    du = np.empty(k, np.int64)
    dv = np.empty((nc, k), np.int64)
    for j in range(nc):
        x = cols[j]
        for d in range(k):
            dv[j, d] = x % N
            x //= N
    for i in range(nr):
        x = rows[i]
        for d in range(k):
            du[d] = x % N
            x //= N
        for j in range(nc):
            s = 0
            for d in range(k):
                s += base[du[d], dv[j, d]]
            out[i, j] = s % N


# ---------------------------------------------------------------- random numbers


@njit(**NJIT)
def _next(state):
    """splitmix64 step on ``state[0]`` (uint64); returns 64 random bits."""
    state[0] += np.uint64(0x9E3779B97F4A7C15)
    z = state[0]
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@njit(**NJIT)
def _uniform(state):
    """A float in [0, 1) with 53 random bits."""
    return (_next(state) >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@njit(**NJIT)
def _randint(state, m):
    """An integer in [0, m) (m >= 1)."""
    return np.int64(_next(state) % np.uint64(m))


# ---------------------------------------------------------------- best of K random


@njit(**NJIT)
def _draw_valid(N, p_unused, state, cur, AT, canon_T, scratch, col_tries):
    """Draw ``cur`` column by column: each column is redrawn (up to ``col_tries``
    times) until it has two distinct used symbols and is not equal, up to a
    relabelling of symbols, to an earlier column.  Returns False on failure.
    """
    c, n = cur.shape
    for k in range(n):
        ok = False
        for _ in range(col_tries):
            first = -1
            two = False
            for i in range(c):
                if p_unused > 0.0 and _uniform(state) < p_unused:
                    s = -1
                else:
                    s = _randint(state, N)
                AT[k, i] = s
                if s >= 0:
                    if first < 0:
                        first = s
                    elif s != first:
                        two = True
            if not two:
                continue
            # canonical form of the new column, compared with the earlier ones
            scratch[:] = -1
            nxt = 0
            for i in range(c):
                s = AT[k, i]
                if s < 0:
                    canon_T[k, i] = s
                else:
                    if scratch[s] < 0:
                        scratch[s] = nxt
                        nxt += 1
                    canon_T[k, i] = scratch[s]
            dup = False
            for q in range(k):
                same = True
                for i in range(c):
                    if canon_T[q, i] != canon_T[k, i]:
                        same = False
                        break
                if same:
                    dup = True
                    break
            if not dup:
                ok = True
                break
        if not ok:
            return False
        for i in range(c):
            cur[i, k] = AT[k, i]
    return True


@njit(**NJIT)
def _random_search(N, p_unused, n_draws, max_attempts, criterion, state, best, cur):
    """Best of ``n_draws`` valid random matrices into ``best`` (shape (c, n)).

    Entries are -1 with probability ``p_unused``, else uniform in {0..N-1};
    columns are drawn valid (see ``_draw_valid``), a draw with two equal rows
    is redrawn.  ``criterion`` 0: largest d_r; 1: largest d_T = d_r + d_c;
    ties go to the draw with fewer pairs at the minimum.  At most
    ``max_attempts`` draws in all.  Returns (number of valid draws, best score
    as doubled distance or -1).
    """
    c, n = best.shape
    AT = np.empty((n, c), cur.dtype)
    canon_T = np.empty((n, c), cur.dtype)
    scratch = np.empty(N, np.int64)
    Dr = np.empty((c, c), np.int64)
    Dc = np.empty((n, n), np.int64)
    best_score = -1
    best_cnt = 0
    valid = 0
    attempts = 0
    while valid < n_draws and attempts < max_attempts:
        attempts += 1
        if not _draw_valid(N, p_unused, state, cur, AT, canon_T, scratch, 1000):
            continue
        _pair_distances(cur, np.bool_(True), Dr)   # np.bool_: not a literal (one version)
        if c > 1 and _min_offdiag(Dr)[0] == 0:
            continue
        valid += 1
        _pair_distances(cur, np.bool_(False), Dr)
        dr, cnt = _min_offdiag(Dr)
        score = dr
        if criterion == 1:
            _pair_distances(AT, np.bool_(False), Dc)
            dc, cnt2 = _min_offdiag(Dc)
            if n < 2:
                dc, cnt2 = 0, 0
            score = dr + dc
            cnt += cnt2
        if score > best_score or (score == best_score and cnt < best_cnt):
            best_score = score
            best_cnt = cnt
            for i in range(c):          # element loops: numba's slice copy compiles
                for j in range(n):      # its shape-error formatting (seconds)
                    best[i, j] = cur[i, j]
    return valid, best_score


# ---------------------------------------------------------------- annealing


@njit(**NJIT)
def _anneal(M, width, D, inv2, ones, T, n_temps, moves_per_temp, cooling, p_flip, p_add,
            min_width, state, energy, stats):
    """Simulated annealing of a binary code in place (seed 003).

    ``M`` (c, max_width) int8 holds the code in its first ``width[0]`` columns;
    ``D`` (c, c) int64 the current row distances, ``inv2[d] = 1 / d^2`` (with a
    large penalty at d = 0), ``ones[k]`` the number of 1s of column k.  Runs
    ``n_temps`` temperatures starting at ``T[0]`` (multiplied by ``cooling``
    after each), ``moves_per_temp`` moves each: flip one bit (probability
    ``p_flip``, O(c) energy update), add a random column (``p_add``), or
    remove a random column (the rest); add/remove change every pair, O(c^2).
    Moves that would leave a constant column, or leave the width outside
    [min_width, max_width], are not made.  Metropolis acceptance.  Updates
    ``energy[0]``, ``width[0]``, ``T[0]``; ``stats`` counts (proposed, accepted).
    """
    c, max_width = M.shape
    newcol = np.empty(c, np.int8)
    E = energy[0]
    t = T[0]
    for _ in range(n_temps):
        for _ in range(moves_per_temp):
            stats[0] += 1
            z = _uniform(state)
            w = width[0]
            if z < p_flip:
                i = _randint(state, c)
                k = _randint(state, w)
                b = M[i, k]
                # column stays non-constant: needs another entry equal to b ... and one != new
                o = ones[k] + (1 - 2 * b)
                if o <= 0 or o >= c:
                    continue
                dE = 0.0
                for j in range(c):
                    if j != i:
                        d = D[i, j]
                        nd = d + 1 if M[j, k] == b else d - 1
                        dE += inv2[nd] - inv2[d]
                if dE <= 0.0 or _uniform(state) < np.exp(-dE / t):
                    M[i, k] = 1 - b
                    ones[k] = o
                    for j in range(c):
                        if j != i:
                            if M[j, k] == b:
                                D[i, j] += 1
                            else:
                                D[i, j] -= 1
                            D[j, i] = D[i, j]
                    E += dE
                    stats[1] += 1
            elif z < p_flip + p_add:
                if w >= max_width:
                    continue
                o = 0
                for i in range(c):
                    newcol[i] = np.int8(_next(state) >> np.uint64(63))
                    o += newcol[i]
                if o == 0 or o == c:
                    continue
                dE = 0.0
                for i in range(c):
                    for j in range(i + 1, c):
                        if newcol[i] != newcol[j]:
                            dE += inv2[D[i, j] + 1] - inv2[D[i, j]]
                if dE <= 0.0 or _uniform(state) < np.exp(-dE / t):
                    for i in range(c):
                        M[i, w] = newcol[i]
                        for j in range(i + 1, c):
                            if newcol[i] != newcol[j]:
                                D[i, j] += 1
                                D[j, i] = D[i, j]
                    ones[w] = o
                    width[0] = w + 1
                    E += dE
                    stats[1] += 1
            else:
                if w <= min_width:
                    continue
                k = _randint(state, w)
                dE = 0.0
                for i in range(c):
                    for j in range(i + 1, c):
                        if M[i, k] != M[j, k]:
                            dE += inv2[D[i, j] - 1] - inv2[D[i, j]]
                if dE <= 0.0 or _uniform(state) < np.exp(-dE / t):
                    for i in range(c):
                        for j in range(i + 1, c):
                            if M[i, k] != M[j, k]:
                                D[i, j] -= 1
                                D[j, i] = D[i, j]
                    # move the last column into slot k
                    for i in range(c):
                        M[i, k] = M[i, w - 1]
                    ones[k] = ones[w - 1]
                    width[0] = w - 1
                    E += dE
                    stats[1] += 1
        t *= cooling
    energy[0] = E
    T[0] = t


# ---------------------------------------------------------------- truncation hill climb


@njit(**NJIT)
def _entry(u, v, base, N, k):
    s = 0
    for _ in range(k):
        s += base[u % N, v % N]
        u //= N
        v //= N
    return s % N


@njit(**NJIT)
def _col_hash(A, p, seen):
    """64-bit FNV hash of column p of A (symbols 0..N-1) relabelled by first appearance.

    Equal up to a relabelling of symbols => equal hashes (the climb treats
    equal hashes as equivalent columns, so a collision only costs a move).
    ``seen`` is scratch of length N.
    """
    c = A.shape[0]
    seen[:] = -1
    h = np.uint64(1469598103934665603)
    nxt = 0
    for i in range(c):
        s = A[i, p]
        if seen[s] < 0:
            seen[s] = nxt
            nxt += 1
        h = (h ^ np.uint64(seen[s] + 1)) * np.uint64(1099511628211)
    return h


@njit(**NJIT)
def _key(Dr, Dc, hashes, A, out):
    """out = (violations, d_T, pairs at minima) of the current state."""
    c, n = A.shape
    viol = 0
    mr = -1
    cr = 0
    for i in range(c):
        for j in range(i + 1, c):
            v = Dr[i, j]
            if v == 0:
                viol += 1
            if mr < 0 or v < mr:
                mr = v
                cr = 1
            elif v == mr:
                cr += 1
    mc = -1
    cc = 0
    for i in range(n):
        for j in range(i + 1, n):
            v = Dc[i, j]
            if hashes[i] == hashes[j]:
                viol += 1
            if mc < 0 or v < mc:
                mc = v
                cc = 1
            elif v == mc:
                cc += 1
    for p in range(n):
        const = True
        for i in range(1, c):
            if A[i, p] != A[0, p]:
                const = False
                break
        if const:
            viol += 1
    out[0] = viol
    out[1] = max(mr, 0) + max(mc, 0)
    out[2] = cr + cc


@njit(**NJIT)
def _better(a, b):
    """Key a better than key b: fewer violations, then larger d_T, then fewer minimal pairs."""
    if a[0] != b[0]:
        return a[0] < b[0]
    if a[1] != b[1]:
        return a[1] > b[1]
    return a[2] < b[2]


@njit(**NJIT)
def _swap_climb(rows, cols, K, base, N, k, max_evals, key, block0):
    """First-improvement hill climb on the kept rows and columns of M_k(N).

    Swaps one kept row (column) for an unused index while the key
    (violations, d_T, pairs at the minima) improves; state updated
    incrementally (a column swap costs O(c^2 + n c), a row swap
    O(n^2 + n c)).  Modifies ``rows`` and ``cols`` and fills ``key`` (int64[3])
    with the final key; ``block0`` keeps column index 0 out.  Returns the
    number of evaluated swaps.
    """
    seen = np.empty(N, np.int64)
    c = rows.shape[0]
    n = cols.shape[0]
    A = np.empty((c, n), np.int64)
    for i in range(c):
        for p in range(n):
            A[i, p] = _entry(rows[i], cols[p], base, N, k)
    Dr = np.zeros((c, c), np.int64)
    Dc = np.zeros((n, n), np.int64)
    for i in range(c):
        for j in range(i + 1, c):
            s = 0
            for p in range(n):
                s += A[i, p] != A[j, p]
            Dr[i, j] = s
            Dr[j, i] = s
    for p in range(n):
        for q in range(p + 1, n):
            s = 0
            for i in range(c):
                s += A[i, p] != A[i, q]
            Dc[p, q] = s
            Dc[q, p] = s
    hashes = np.empty(n, np.uint64)
    for p in range(n):
        hashes[p] = _col_hash(A, p, seen)
    used_r = np.zeros(K, np.bool_)
    used_c = np.zeros(K, np.bool_)
    for i in range(c):
        used_r[rows[i]] = True
    for p in range(n):
        used_c[cols[p]] = True
    new = np.empty(3, np.int64)
    _key(Dr, Dc, hashes, A, key)
    x = np.empty(c, np.int64)
    y = np.empty(n, np.int64)
    dcol = np.empty(n, np.int64)
    drow = np.empty(c, np.int64)
    oldx = np.empty(c, np.int64)
    oldy = np.empty(n, np.int64)
    evals = 0
    improved = True
    while improved and evals < max_evals:
        improved = False
        # ---- column swaps
        for p in range(n):
            for q in range(K):
                if used_c[q] or evals >= max_evals:
                    continue
                evals += 1
                for i in range(c):
                    x[i] = _entry(rows[i], q, base, N, k)
                    oldx[i] = A[i, p]
                    A[i, p] = x[i]
                hp = hashes[p]
                hashes[p] = _col_hash(A, p, seen)
                for i in range(c):
                    for j in range(i + 1, c):
                        Dr[i, j] += np.int64(x[i] != x[j]) - np.int64(oldx[i] != oldx[j])
                        Dr[j, i] = Dr[i, j]
                for m in range(n):
                    dcol[m] = Dc[p, m]
                    if m != p:
                        s = 0
                        for i in range(c):
                            s += A[i, m] != x[i]
                        Dc[p, m] = s
                        Dc[m, p] = s
                _key(Dr, Dc, hashes, A, new)
                if _better(new, key):
                    key[0] = new[0]
                    key[1] = new[1]
                    key[2] = new[2]
                    used_c[cols[p]] = False
                    used_c[q] = True
                    cols[p] = q
                    improved = True
                else:                                    # undo
                    for i in range(c):
                        A[i, p] = oldx[i]
                    hashes[p] = hp
                    for i in range(c):
                        for j in range(i + 1, c):
                            Dr[i, j] -= np.int64(x[i] != x[j]) - np.int64(oldx[i] != oldx[j])
                            Dr[j, i] = Dr[i, j]
                    for m in range(n):
                        Dc[p, m] = dcol[m]
                        Dc[m, p] = dcol[m]
        # ---- row swaps
        for i in range(c):
            for u in range(K):
                if used_r[u] or evals >= max_evals:
                    continue
                evals += 1
                for p in range(n):
                    y[p] = _entry(u, cols[p], base, N, k)
                    oldy[p] = A[i, p]
                    A[i, p] = y[p]
                for p in range(n):
                    for q in range(p + 1, n):
                        Dc[p, q] += np.int64(y[p] != y[q]) - np.int64(oldy[p] != oldy[q])
                        Dc[q, p] = Dc[p, q]
                for j in range(c):
                    drow[j] = Dr[i, j]
                    if j != i:
                        s = 0
                        for p in range(n):
                            s += A[j, p] != y[p]
                        Dr[i, j] = s
                        Dr[j, i] = s
                for p in range(n):
                    hashes[p] = _col_hash(A, p, seen)
                _key(Dr, Dc, hashes, A, new)
                if _better(new, key):
                    key[0] = new[0]
                    key[1] = new[1]
                    key[2] = new[2]
                    used_r[rows[i]] = False
                    used_r[u] = True
                    rows[i] = u
                    improved = True
                else:
                    for p in range(n):
                        A[i, p] = oldy[p]
                    for p in range(n):
                        for q in range(p + 1, n):
                            Dc[p, q] -= np.int64(y[p] != y[q]) - np.int64(oldy[p] != oldy[q])
                            Dc[q, p] = Dc[p, q]
                    for j in range(c):
                        Dr[i, j] = drow[j]
                        Dr[j, i] = drow[j]
                    for p in range(n):
                        hashes[p] = _col_hash(A, p, seen)
    return evals
