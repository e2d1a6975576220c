"""N-ary Sylvester matrices M_k(N) (seed 001) and their truncation to c x n.

``M_k(N)[u, v] = sum_d M_1(N)[u_d, v_d] mod N`` with u, v the base-N digit
vectors of the row and column indices (DESIGN.md).  Entries are computed from
the indices, so a c x n piece costs O(c n k) time and O(c n) memory whatever
N^k is.

Orientations (which base matrix M_1(N); see :func:`sylvester_base`):

* ``"ours"`` (default) -- ``2^{-1} (i + j - (i - j)^2) mod N`` for odd N,
  ``i j mod 2`` for N = 2 (DESIGN.md).
* ``"paper"`` -- ``m_ij = i j mod N`` with the seed's 1-based indices
  i, j = 1..N for odd N, i.e. ``(i + 1)(j + 1) mod N`` 0-based, which is the
  0-based product matrix with its row and column order reversed; for N = 2
  Sylvester's Hadamard matrix in its natural (Walsh) order, ``i j mod 2``.
  This is the reading that reproduces the seed's remark on the top-left
  rule exactly on Pendigits, Usps and Vowel: equal rows only for N = 2, at
  10 x 5 and 11 x 5.
* ``"product"`` -- ``i j mod N`` with 0-based indices for every N (also
  composite N, where the distance property fails: the seed's N = 4, k = 2
  example has d_T = 16, not 24).  Its first row and column are constant.

The M_k(N) of all three have the same row and column distances, (N-1)/N N^k
(prime N); they differ in which rows and columns a truncation keeps.
"""

import math

import numpy as np

from .._config import ECOC_ADAPTIVE_BUDGET, ECOC_MAX_SYLVESTER
from .._validation import check_allocation
from . import _memory
from ._kernels.codes import (_canonical_rows, _pair_distances, _swap_climb,
                             _sylvester_fill)

__all__ = ["is_prime", "sylvester_base", "sylvester_entries", "truncate", "ORIENTATIONS"]

#: Names of the base-matrix orientations (see the module docstring).
ORIENTATIONS = ("ours", "paper", "product")


def _check_orientation(orientation):
    if orientation not in ORIENTATIONS:
        raise ValueError(f"orientation must be one of {', '.join(map(repr, ORIENTATIONS))}; "
                         f"got {orientation!r}")
    return orientation


def is_prime(N):
    """True when the integer N is prime (trial division; N is small here).

    Examples
    --------
    >>> from edgecode.ecoc.sylvester import is_prime
    >>> [p for p in range(15) if is_prime(p)]
    [2, 3, 5, 7, 11, 13]
    """
    if N < 2:
        return False
    for p in range(2, math.isqrt(N) + 1):
        if N % p == 0:
            return False
    return True


def sylvester_base(N, orientation="ours"):
    """The N x N base matrix M_1(N) of an orientation.

    Parameters
    ----------
    N : int
        Alphabet size; a prime for "ours" and "paper", any N >= 2 for
        "product" (composite N lose the distance property).
    orientation : {"ours", "paper", "product"}, default="ours"
        ``"ours"``: ``i j mod 2`` for N = 2, else ``2^{-1} (i + j - (i - j)^2)
        mod N`` (symmetric, rows at distance N - 1, no constant column).
        ``"paper"``: ``i j mod 2`` for N = 2 (Sylvester-Hadamard, natural
        order), else ``(i + 1)(j + 1) mod N`` (the seed's ``i j mod N`` with
        indices 1..N; its last row and column are constant).
        ``"product"``: ``i j mod N`` (first row and column constant).

    Returns
    -------
    ndarray of int64, shape (N, N)
        Symmetric; for prime N every two rows (and columns) differ in N - 1
        places.

    Examples
    --------
    >>> from edgecode.ecoc.sylvester import sylvester_base
    >>> sylvester_base(3)
    array([[0, 0, 2],
           [0, 1, 1],
           [2, 1, 2]])
    >>> sylvester_base(3, orientation="paper")
    array([[1, 2, 0],
           [2, 1, 0],
           [0, 0, 0]])
    """
    _check_orientation(orientation)
    i = np.arange(N)[:, None]
    j = np.arange(N)[None, :]
    if N == 2 or orientation == "product":
        return (i * j) % N
    if orientation == "paper":
        return ((i + 1) * (j + 1)) % N
    half = (N + 1) // 2                       # 2^{-1} mod N for odd N
    return (half * ((i + j - (i - j) ** 2) % N)) % N


def _dtype(N):
    return np.int8 if N <= 128 else np.int16


def sylvester_entries(rows, cols, N, k, orientation="ours"):
    """The sub-matrix ``M_k(N)[rows][:, cols]`` computed entry by entry.

    Parameters
    ----------
    rows, cols : array-like of int
        Indices in [0, N**k).
    N : int
        Alphabet size (prime, except for ``orientation="product"``).
    k : int
        Power; M_k(N) is N**k x N**k.
    orientation : {"ours", "paper", "product"}, default="ours"
        Base matrix M_1(N), see :func:`sylvester_base`.

    Returns
    -------
    ndarray of shape (len(rows), len(cols)), int8 (int16 if N > 128)

    Examples
    --------
    >>> from edgecode.ecoc.sylvester import sylvester_entries
    >>> sylvester_entries([0, 1, 2, 3], [0, 1, 2, 3], 2, 2)   # the Walsh matrix, 0/1
    array([[0, 0, 0, 0],
           [0, 1, 0, 1],
           [0, 0, 1, 1],
           [0, 1, 1, 0]], dtype=int8)
    """
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    cols = np.ascontiguousarray(cols, dtype=np.int64)
    dtype = _dtype(N)
    check_allocation(f"len(rows)={rows.shape[0]}, len(cols)={cols.shape[0]}",
                     rows.shape[0] * cols.shape[0] * np.dtype(dtype).itemsize,
                     what=f"the {rows.shape[0]} x {cols.shape[0]} sub-matrix",
                     hint="ask for fewer rows or columns", limit=_memory.MAX_CODE_BYTES)
    out = np.empty((rows.shape[0], cols.shape[0]), dtype)
    base = np.ascontiguousarray(sylvester_base(N, orientation), dtype=np.int64)
    _sylvester_fill(rows, cols, base, int(N), int(k), out)
    return out


def _natural_k(N, size):
    """Smallest k >= 1 with N**k >= size."""
    k = 1
    while N ** k < size:
        k += 1
    return k


def _reversed_digits(K, N, k):
    idx = np.arange(K, dtype=np.int64)
    out = np.zeros(K, dtype=np.int64)
    x = idx.copy()
    for _ in range(k):
        out = out * N + x % N
        x //= N
    return out


def _violation_key(A):
    """(-violations, d_T, -pairs at the minima) of a Sylvester piece (no -1 entries).

    Violations: equal row pairs + constant columns + pairs of columns equal up
    to a relabelling of symbols.  Distances as plain counts.
    """
    c, n = A.shape
    AT = np.ascontiguousarray(A.T)
    Dr = np.empty((c, c), np.int64)
    _pair_distances(A, True, Dr)
    Dc = np.empty((n, n), np.int64)
    _pair_distances(AT, True, Dc)
    iu_r, iu_c = np.triu_indices(c, 1), np.triu_indices(n, 1)
    vr, vc = Dr[iu_r] // 2, Dc[iu_c] // 2
    canon = np.empty_like(AT)
    _canonical_rows(AT, canon)
    E = np.empty((n, n), np.int64)
    _pair_distances(canon, True, E)
    viol = int((vr == 0).sum()) + int((A == A[0]).all(axis=0).sum()) + int((E[iu_c] == 0).sum())
    dr = int(vr.min()) if c > 1 else 0
    dc = int(vc.min()) if n > 1 else 0
    cnt = (int((vr == dr).sum()) if c > 1 else 0) + (int((vc == dc).sum()) if n > 1 else 0)
    return (-viol, dr + dc, -cnt)


#: candidate window pairs evaluated per k even when over the budget
_MIN_CANDIDATES = 2


def _candidate_pairs(row_windows, col_windows):
    """Window pairs, most promising first: matching kinds (scattered, top-left,
    spread), then the remaining cross product."""
    nr, nc = len(row_windows), len(col_windows)
    first = [(nr - _SCATTERED, nc - _SCATTERED), (0, 0)]
    first += [(nr - _SCATTERED + s, nc - _SCATTERED + s) for s in range(1, _SCATTERED)]
    seen = set()
    for i, j in first + [(i, j) for i in range(nr) for j in range(nc)]:
        if 0 <= i < nr and 0 <= j < nc and (i, j) not in seen:
            seen.add((i, j))
            yield row_windows[i], col_windows[j]


#: number of scattered (fixed-seed pseudo-random) index subsets among the candidates
_SCATTERED = 3


def _windows(K, N, k, size):
    """Candidate index sets of ``size`` elements out of range(K), best guesses first."""
    nat = np.arange(K, dtype=np.int64)
    orders = [nat]
    if k > 1:
        orders.append(_reversed_digits(K, N, k))
    starts = [0]
    if K // N >= 1 and size <= K - K // N:
        starts.append(K // N)           # skip the first coset (it holds index 0)
    if K - size not in starts:
        starts.append(K - size)
    cands = [order[(s + np.arange(size)) % K] for order in orders for s in starts]
    step = K // size
    if step > 1:                        # evenly spread: every digit varies
        cands += [(np.arange(size) * step + off) % K for off in (0, 1)]
    if size < K:                        # scattered subsets (fixed seeds: deterministic)
        for seed in range(_SCATTERED):
            perm = np.random.default_rng(seed).permutation(K)
            cands.append(np.sort(perm[:size]))
    seen, out = set(), []
    for sel in cands:
        key = tuple(np.sort(sel))
        if key not in seen:
            seen.add(key)
            out.append(np.ascontiguousarray(sel, dtype=np.int64))
    return out


def truncate(n_classes, n_columns, N, rule="adaptive", k=None, orientation="ours"):
    """Rows and columns of M_k(N) to keep for a c x n code, and k.

    Parameters
    ----------
    n_classes, n_columns : int
        Wanted shape (c, n).
    N : int
        Prime alphabet size.
    rule : {"adaptive", "top_left"}, default="adaptive"
        ``"top_left"``: the seed's rule -- the smallest k with N**k >= max(c, n),
        rows 0..c-1 and columns 0..n-1 (two equal rows get the first entry of
        the later one changed, as in the seed).  ``"adaptive"``: see Notes.
    k : int, optional
        Force the power (N**k must be >= max(c, n)).
    orientation : {"ours", "paper", "product"}, default="ours"
        Base matrix M_1(N) (:func:`sylvester_base`); the adaptive rule scores
        the candidate rows and columns of that matrix.

    Returns
    -------
    rows, cols : ndarray of int64
        Indices into M_k(N).
    k : int
        The power used.

    Notes
    -----
    The adaptive rule maximises the key (-violations, d_T, -pairs at the
    minimum distances); violations are equal row pairs, constant columns and
    pairs of columns equal up to a relabelling of symbols.  For k = k0 and
    k0 + 1 (k0 the smallest power that fits; k0 + 2 too when N^(k0+1) < 64)
    it scores candidate index sets for the rows and for the columns:

    * windows of consecutive indices starting at 0 (the seed's top-left), at
      N^(k-1) (a coset with the top digit fixed: avoids index 0) and at the
      end, in natural and in digit-reversed order;
    * evenly spread indices ``i * floor(N^k / size)``, so that every digit
      varies (rows confined to fewer digits make columns equal up to a
      relabelling: column pairs differing only in an unused digit are
      shifts of each other);
    * three scattered subsets from fixed seeds (deterministic).

    When column 0 of M_1(N) is constant (N = 2, or ``"product"``), column 0
    of M_k(N) (constant too) is left out when n < N^k.  Row/column pairs of matching kinds come first (the first
    scattered pair and the top-left pair are always scored), then the cross
    product while the budget ``ECOC_ADAPTIVE_BUDGET`` (operations; one
    selection costs c^2 n + n^2 c) lasts.  The best pair of each k then goes
    through a first-improvement hill climb (numba, ``_swap_climb``) that
    swaps one kept row or column for an unused index while the key
    improves, each swap evaluated incrementally in O(c^2 + n^2 + c n), with
    the remaining budget split between the k; the best result is kept.
    Deterministic: same arguments, same matrix.

    Examples
    --------
    >>> from edgecode.ecoc.sylvester import truncate
    >>> rows, cols, k = truncate(5, 3, 2, rule="top_left")
    >>> rows.tolist(), cols.tolist(), k
    ([0, 1, 2, 3, 4], [0, 1, 2], 3)
    >>> rows, cols, k = truncate(5, 3, 2)
    >>> len(rows), len(cols), 0 in cols.tolist()      # never the constant Walsh column 0
    (5, 3, False)
    """
    c, n = n_classes, n_columns
    _check_orientation(orientation)
    if rule != "top_left":
        # each scored candidate is a c x n sub-matrix and its c x c and n x n tables
        check_allocation(f"n_classes={c}, n_columns={n}",
                         c * n * np.dtype(_dtype(N)).itemsize + 8 * c * c + 8 * n * n,
                         what=f"scoring {c} x {n} candidate sub-matrices",
                         hint="use fewer classes or columns, or rule='top_left'",
                         limit=_memory.MAX_CODE_BYTES)
    k0 = _natural_k(N, max(c, n))
    if k is not None:
        if N ** k < max(c, n):
            raise ValueError(f"k={k} gives a {N**k} x {N**k} matrix, smaller than the requested "
                             f"{c} x {n}; use k >= {k0}")
        ks = [k]
    else:
        ks = [k0] if rule == "top_left" else [k0, k0 + 1]
        if rule != "top_left" and N ** (k0 + 1) < 64:      # tiny: one more power
            ks.append(k0 + 2)
    ks = [kk for kk in ks if N ** kk <= ECOC_MAX_SYLVESTER] or ks[:1]
    if rule == "top_left":
        kk = ks[0]
        return np.arange(c, dtype=np.int64), np.arange(n, dtype=np.int64), kk
    base = np.ascontiguousarray(sylvester_base(N, orientation), dtype=np.int64)
    const0 = bool((base[:, 0] == base[0, 0]).all())    # column 0 of M_1 (so of M_k) constant
    init = c * c * n + n * n * c + 1          # full evaluation of one selection
    step = c * c + n * n + n * c + 1          # one incremental swap
    budget = ECOC_ADAPTIVE_BUDGET
    key = np.empty(3, np.int64)
    starts = []                                   # best window pair per k
    for kk in ks:
        K = N ** kk
        best = None
        block0 = const0 and n <= K - 1          # e.g. column 0 of a Walsh matrix
        col_windows = ([w + 1 for w in _windows(K - 1, N, kk, n)] if block0
                       else _windows(K, N, kk, n))
        row_windows = _windows(K, N, kk, c)
        done = 0
        for rows, cols in _candidate_pairs(row_windows, col_windows):
            if done >= _MIN_CANDIDATES and budget < init:
                break
            budget -= init
            done += 1
            cand = _violation_key(sylvester_entries(rows, cols, N, kk, orientation))
            if best is None or cand > best[0]:
                best = (cand, rows, cols, kk)
        starts.append(best + (block0,))
    final = None
    share = max(budget, 0) // (step * len(starts))
    for cand, rows, cols, kk, block0 in starts:
        rows, cols = rows.copy(), cols.copy()
        if share > 0:
            _swap_climb(rows, cols, N ** kk, base, N, kk, share, key, block0)
            cand = (-int(key[0]), int(key[1]), -int(key[2]))
        if final is None or cand > final[0]:
            final = (cand, rows, cols, kk)
    _, rows, cols, kk = final
    return rows, cols, kk
