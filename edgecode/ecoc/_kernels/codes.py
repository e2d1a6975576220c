"""Numba kernels for ``edgecode.ecoc`` coding matrices (njit only; wrappers validate).

The kernels, one job each:

* ``_pair_distances`` -- all pairwise doubled Hamming distances between the rows
  of a small-integer matrix (call it on the transpose for columns).
* ``_sylvester_fill``  -- entries of the N-ary Sylvester matrix M_k(N) at chosen
  row and column indices, from their base-N digits.
* ``_canonical_rows``, ``_min_offdiag`` -- helpers.
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
    The diagonal is set to 0.  ``A`` is C-contiguous int8 or int16.  Returns
    (minimum over i < j, number of pairs at it), (-1, 0) if r < 2, as
    ``_min_offdiag(out)``.
    """
    r, n = A.shape
    best = -1
    cnt = 0
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
    for i in range(r):
        for j in range(i + 1, r):
            s = out[i, j]
            if best < 0 or s < best:
                best = s
                cnt = 1
            elif s == best:
                cnt += 1
    return best, cnt


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
        for s in range(N):
            lab[s] = -1
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
def _random_search(N, p_unused, n_draws, max_attempts, criterion, state, best, cur):
    """Best of ``n_draws`` valid random matrices into ``best`` (shape (c, n)).

    Entries are -1 with probability ``p_unused``, else uniform in {0..N-1};
    columns are drawn valid (each redrawn, up to 1000 times, until it has two
    distinct used symbols and is not equal, up to a relabelling of symbols,
    to an earlier column), a draw with two equal rows is redrawn.
    ``criterion`` 0: largest d_r; 1: largest d_T = d_r + d_c; ties go to the
    draw with fewer pairs at the minimum.  At most
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
        ok = True                   # n = 0: a valid draw
        for k in range(n):
            ok = False
            for _ in range(1000):
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
                for s in range(N):
                    scratch[s] = -1
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
                ok = True
                for q in range(k):
                    same = True
                    for i in range(c):
                        if canon_T[q, i] != canon_T[k, i]:
                            same = False
                            break
                    if same:
                        ok = False
                        break
                if ok:
                    break
            if not ok:
                break
            for i in range(c):
                cur[i, k] = AT[k, i]
        if not ok:
            continue
        # np.bool_: not a literal (one version)
        if _pair_distances(cur, np.bool_(True), Dr)[0] == 0:
            continue
        valid += 1
        dr, cnt = _pair_distances(cur, np.bool_(False), Dr)
        score = dr
        if criterion == 1:
            dc, cnt2 = _pair_distances(AT, np.bool_(False), Dc)
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
    col = np.empty(c, np.int8)
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
            else:
                add = z < p_flip + p_add
                if add:                         # a random non-constant column into slot w
                    if w >= max_width:
                        continue
                    k = w
                    o = 0
                    for i in range(c):
                        col[i] = np.int8(_next(state) >> np.uint64(63))
                        o += col[i]
                    if o == 0 or o == c:
                        continue
                else:                           # column k out, the last one into its slot
                    if w <= min_width:
                        continue
                    k = _randint(state, w)
                    for i in range(c):
                        col[i] = M[i, k]
                    o = ones[w - 1]
                # every pair of rows the column separates moves by one
                step = 1 if add else -1
                dE = 0.0
                for i in range(c):          # (two loops: a constant step is faster)
                    for j in range(i + 1, c if add else 0):
                        if col[i] != col[j]:
                            dE += inv2[D[i, j] + 1] - inv2[D[i, j]]
                    for j in range(i + 1, 0 if add else c):
                        if col[i] != col[j]:
                            dE += inv2[D[i, j] - 1] - inv2[D[i, j]]
                if dE <= 0.0 or _uniform(state) < np.exp(-dE / t):
                    for i in range(c):
                        for j in range(i + 1, c):
                            if col[i] != col[j]:
                                D[i, j] += step
                                D[j, i] = D[i, j]
                        M[i, k] = col[i] if add else M[i, w - 1]
                    ones[k] = o
                    width[0] = w + step
                    E += dE
                    stats[1] += 1
        t *= cooling
    energy[0] = E
    T[0] = t


# ---------------------------------------------------------------- truncation hill climb
#
# The climb keeps the piece both ways round, A (c, n) and AT (n, c), so that a
# column swap is a row swap of AT: one code path for both sides.  Every array
# is int64 (one allocation signature).


@njit(**NJIT)
def _line(base, x, N, dx, digs, out, col):
    """Digits of the index x (base N, lowest first) into ``dx``; then
    ``out[j] = sum_t base[dx[t], digs[j, t]] mod N`` for every row j of
    ``digs``: the row x of M_k(N) at the columns of those digits (``col``:
    ``base[digs[j, t], dx[t]]``, the column x at those rows).  ``base`` is
    M_1(N), entries 0..N-1.
    """
    for t in range(dx.shape[0]):
        dx[t] = x % N
        x //= N
    for j in range(digs.shape[0]):
        s = 0
        for t in range(dx.shape[0]):
            a = dx[t]
            b = digs[j, t]
            s += base[b, a] if col else base[a, b]
            if s >= N:
                s -= N
        out[j] = s


@njit(**NJIT)
def _hmin(h):
    """(smallest value present in histogram ``h``, its count); (-1, 0) if empty."""
    for v in range(h.shape[0]):
        if h[v] > 0:
            return v, h[v]
    return -1, 0


@njit(**NJIT)
def _put(L, O, l, z, old, D, h, t, undo):
    """Line l of the piece becomes z (row l of L, column l of O = L transposed);
    its previous entries go to ``old``.

    Row and column l of the distance table ``D`` get the distances of the
    rows of L to z (``undo``: get ``t``, the values before the last call),
    their previous values go to ``t``, and the histogram ``h`` of ``D`` over
    pairs i < j follows.  Returns the new minimum of ``h`` and its count.
    """
    for j in range(L.shape[1]):
        old[j] = L[l, j]
        L[l, j] = z[j]
        O[j, l] = z[j]
    for m in range(L.shape[0]):
        if m != l:
            if undo:
                v = t[m]
            else:
                v = 0
                for p in range(L.shape[1]):
                    v += L[m, p] != z[p]
            a = D[l, m]
            h[a] -= 1
            h[v] += 1
            D[l, m] = v
            D[m, l] = v
            t[m] = a
    return _hmin(h)


@njit(**NJIT)
def _other_side(D, a, b, h, low, apply, slack, need, room):
    """(minimum or -1, pairs at it) of ``D + [a_i != a_j] - [b_i != b_j]`` over
    pairs i < j: the other side's distances when one line changes from b to a.

    Each pair moves by at most 1, so the new minimum is m - 1, m or m + 1 for
    m the minimum of the histogram ``h`` of D, and only the pairs within 2 of
    m count: ``low`` lists them, and maybe a few more (i, j interleaved from
    ``low[1]``; ``low[0]`` is the used length).  When m >= 2 and ``slack``
    (violations still allowed) is <= 0, the swap can only win by a minimum
    above ``need``, or at ``need`` with fewer than ``room`` pairs: (-1, 0) is
    returned as soon as it cannot.  ``apply``: also write the new distances
    into D and h, and list in ``low`` the pairs up to m + 3 (those within 2 of
    the new minimum, which is >= m - 1, and maybe a few more).
    """
    m = _hmin(h)[0]
    if m < 2 or slack > 0 or apply:     # no early stop
        need = m - 2
    elif slack < 0:
        return -1, 0
    # the most pairs that may fall to m - 1, stay at m, rise to m + 1
    big = low.shape[0]
    room = max(room - 1, 0)
    c0 = (need < m - 1) * big + (need == m - 1) * room
    c1 = (need < m) * big + (need == m) * room
    c2 = (need < m + 1) * big + (need == m + 1) * room
    lo = 0
    mid = 0
    hi = 0
    for s in range(1, low[0], 2):
        i = low[s]
        j = low[s + 1]
        v = D[i, j] + (np.int64(a[i] != a[j]) - np.int64(b[i] != b[j]))
        lo += v == m - 1
        mid += v == m
        hi += v == m + 1
        if (lo > c0) | (mid > c1) | (hi > c2):
            return -1, 0
    if apply:           # the new minimum is >= m - 1: keep the pairs up to m + 3
        low[0] = 1
        for i in range(D.shape[0]):
            for j in range(i + 1, D.shape[0]):
                v = D[i, j] + (np.int64(a[i] != a[j]) - np.int64(b[i] != b[j]))
                h[D[i, j]] -= 1
                h[v] += 1
                D[i, j] = v
                D[j, i] = v
                if v <= m + 3:
                    low[low[0]] = i
                    low[low[0] + 1] = j
                    low[0] += 2
    if lo > 0:
        return m - 1, lo
    if mid > 0:
        return m, mid
    if hi > 0:
        return m + 1, hi
    return -1, 0


@njit(**NJIT)
def _column_violations(AT, N):
    """Constant columns + pairs of columns equal up to a relabelling of symbols.

    Columns are the rows of ``AT`` (symbols 0..N-1).  Each gets the 64-bit FNV
    hash of its relabelling by first appearance (int64 arithmetic, wrapping);
    equal hashes count as equivalent columns, so a collision only costs a move.
    """
    n, c = AT.shape
    seen = np.empty(N, np.int64)
    hashes = np.empty(n, np.int64)
    v = 0
    for p in range(n):
        for s in range(N):
            seen[s] = -1
        h = 1469598103934665603
        nxt = 0
        for i in range(c):
            s = AT[p, i]
            if seen[s] < 0:
                seen[s] = nxt
                nxt += 1
            h = (h ^ (seen[s] + 1)) * 1099511628211
        hashes[p] = h
        v += nxt == 1
        for q in range(p):
            v += hashes[q] == h
    return v


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
    (violations, d_T, pairs at the minima) improves; violations are equal
    row pairs, constant columns and pairs of columns equal up to a
    relabelling (``_column_violations``).  A swap is evaluated in O(n c) plus
    the pairs of the other side near its minimum: the changed side's
    distances to the new line and its minimum from a histogram (``_put``),
    the other side's new minimum (``_other_side``, which stops as soon as the
    swap cannot win), the column violations (O(n c + n^2)) only when the
    swap can still win; an accepted swap updates the tables in O(c^2 + n^2).
    ``base`` is M_1(N) (entries 0..N-1).  Modifies ``rows`` and ``cols`` and
    fills ``key`` (int64[3]) with the final key; ``block0`` is not used
    (column index 0 is kept out by the caller's starting columns).  Returns
    the number of evaluated swaps.
    """
    c = rows.shape[0]
    n = cols.shape[0]
    A = np.empty((c, n), np.int64)
    AT = np.empty((n, c), np.int64)
    Dr = np.empty((c, c), np.int64)
    Dc = np.empty((n, n), np.int64)
    rdig = np.empty((c, k), np.int64)
    cdig = np.empty((n, k), np.int64)
    hr = np.empty(n + 1, np.int64)          # histograms of Dr, Dc over pairs i < j
    hc = np.empty(c + 1, np.int64)
    low = np.empty(max(c * (c - 1), n * (n - 1)) + 1, np.int64)
    low[0] = 1
    z = np.empty(max(c, n), np.int64)       # a new line, the line it replaces, old distances
    oz = np.empty(max(c, n), np.int64)
    t = np.empty(max(c, n), np.int64)
    d = np.empty(k, np.int64)
    new = np.empty(key.shape[0], np.int64)
    no = np.bool_(False)                    # np.bool_: not a literal (one version)
    # per side: its lines, their transpose, the distance table and histogram of
    # each side, the used and the kept indices, the digits of each side
    S = ((AT, A, Dc, hc, Dr, hr, np.empty(K, np.int64), cols, cdig, rdig),
         (A, AT, Dr, hr, Dc, hc, np.empty(K, np.int64), rows, rdig, cdig))
    for side in range(2):
        L, O, Ds, hs, Do, ho, used, idx, dl, do = S[side]
        for q in range(K):
            used[q] = 0
        for v in range(hs.shape[0]):
            hs[v] = 0
        hs[0] = L.shape[0] * (L.shape[0] - 1) // 2      # all pairs at 0: Ds = 0
        for i in range(L.shape[0]):
            used[idx[i]] = 1
            for j in range(L.shape[0]):
                Ds[i, j] = 0
            for j in range(k):
                dl[i, j] = 0
    for step in range(3):       # the rows' digits; the columns (all of A); the rows' distances
        side = 1 - step % 2
        L, O, Ds, hs, Do, ho, used, idx, dl, do = S[side]
        for l in range(L.shape[0]):
            _line(base, idx[l], N, dl[l], do, z, side == 0)
            _put(L, O, l, z, oz, Ds, hs, t, no)
    mr, cr = _hmin(hr)
    mc, cc = _hmin(hc)
    key[0] = (cr if mr == 0 else 0) + _column_violations(AT, N)
    key[1] = max(mr, 0) + max(mc, 0)
    key[2] = cr + cc
    evals = 0
    improved = True
    while improved and evals < max_evals:
        improved = False
        for side in range(2):       # column swaps (line l of AT), then row swaps (of A)
            L, O, Ds, hs, Do, ho, used, idx, dl, do = S[side]
            _other_side(Do, z, z, ho, low, not no, key[0], key[1], key[2])  # pairs near the min
            for l in range(L.shape[0]):
                for q in range(K):
                    if used[q] or evals >= max_evals:
                        continue
                    evals += 1
                    _line(base, q, N, d, do, z, side == 0)
                    ms, cs = _put(L, O, l, z, oz, Ds, hs, t, no)
                    mo, co = _other_side(Do, z, oz, ho, low, no, key[0] - (hs[0] if side else 0),
                                         key[1] - max(ms, 0), key[2] - cs)
                    new[0] = hs[0] if side else (co if mo == 0 else 0)    # equal rows
                    new[1] = max(ms, 0) + max(mo, 0)
                    new[2] = cs + co
                    if _better(new, key):       # the column violations only add: count them now
                        new[0] += _column_violations(AT, N)
                    if _better(new, key):
                        for j in range(3):
                            key[j] = new[j]
                        _other_side(Do, z, oz, ho, low, not no, key[0], key[1], key[2])
                        for j in range(k):
                            dl[l, j] = d[j]
                        used[idx[l]] = 0
                        used[q] = 1
                        idx[l] = q
                        improved = True
                    else:                                    # undo
                        _put(L, O, l, oz, z, Ds, hs, t, not no)
    return evals
