"""Coding-matrix designs for ECOC ensembles, one entry point: :func:`make_code`.

Symbols (fixed for all of ``edgecode.ecoc``): a matrix of shape
(n_classes, n_columns), dtype int8 (int16 when N > 128 symbols); a used entry
is in {0, ..., N-1} (binary codes use {0, 1}); the ternary "class not used
by this learner" symbol is -1.  Distances count 1/2 where either entry is -1
(see :mod:`edgecode.ecoc.quality`).
"""

import inspect
import math

import numpy as np

from .._config import ECOC_EXHAUSTIVE_MAX_CLASSES, ECOC_MAX_SYLVESTER
from .._validation import check_allocation, check_int
from ._kernels.codes import _min_offdiag, _pair_distances, _random_search
from ._memory import MAX_CODE_BYTES, check_code_bytes
from ._random import as_random_state, plain_matrix
from .annealing import annealed
from .bch import bch_generator, bch_generator_matrix, bch_lengths
from .quality import _absolute, _code_key
from .sylvester import _check_orientation, is_prime, sylvester_entries, truncate

__all__ = ["make_code", "DESIGNS", "MAX_CODE_BYTES", "one_vs_all", "one_vs_one", "exhaustive", "dense_random",
           "sparse_random", "hadamard", "nary", "nary_random", "bch", "annealed"]


def _dtype(N):
    return np.int8 if N <= 128 else np.int16


def _check_classes(n_classes, low=2):
    return check_int(n_classes, name="n_classes", low=low)


def _check_columns(n_columns, default, *, limit=None, why=""):
    if n_columns is None:
        return default
    n = check_int(n_columns, name="n_columns", low=1)
    if limit is not None and n > limit:
        raise ValueError(f"n_columns={n} is too large: {why} has at most {limit} columns")
    return n


def _check_N(N, *, prime):
    N = check_int(N, name="N", low=2, high=32767)
    if prime and not is_prime(N):
        raise ValueError(f"N must be a prime for the N-ary Sylvester construction "
                         f"(2, 3, 5, 7, 11, 13, ...); got N={N}")
    return N


def _stirling2_sum(c, N):
    """Number of partitions of c classes into 2..N non-empty groups (distinct learners)."""
    S = [[0] * (N + 1) for _ in range(c + 1)]
    S[0][0] = 1
    for i in range(1, c + 1):
        for j in range(1, min(i, N) + 1):
            S[i][j] = j * S[i - 1][j] + S[i - 1][j - 1]
    return sum(S[c][j] for j in range(2, min(c, N) + 1))


def _state(random_state):
    rs = as_random_state(random_state)
    return np.array([rs.randint(0, 2 ** 63 - 1, dtype=np.int64)], dtype=np.uint64)


# ----------------------------------------------------------------- fixed designs


def one_vs_all(n_classes, n_columns=None):
    """One-vs-all: column j separates class j (entry 1) from the rest (0).

    Parameters
    ----------
    n_classes : int
        Number of classes c >= 2.
    n_columns : int, optional
        Must be c (the default) if given.

    Returns
    -------
    ndarray of int8, shape (c, c)
        The identity matrix.

    Examples
    --------
    >>> from edgecode.ecoc import one_vs_all
    >>> one_vs_all(3)
    array([[1, 0, 0],
           [0, 1, 0],
           [0, 0, 1]], dtype=int8)
    """
    c = _check_classes(n_classes)
    if n_columns is not None and check_int(n_columns, name="n_columns", low=1) != c:
        raise ValueError(f"n_columns must be n_classes={c} for one_vs_all; got {n_columns}")
    check_code_bytes("one_vs_all", c, c, c * c)
    return np.eye(c, dtype=np.int8)


def one_vs_one(n_classes, n_columns=None):
    """One-vs-one (ternary): a column per pair i < j; class i is 0, class j is 1, others -1.

    Columns in the order (0, 1), (0, 2), ..., (c-2, c-1), as scikit-learn's
    ``OneVsOneClassifier`` (which labels class j as the positive one).

    Parameters
    ----------
    n_classes : int
        Number of classes c >= 2.
    n_columns : int, optional
        Must be c (c - 1) / 2 (the default) if given.

    Returns
    -------
    ndarray of int8, shape (c, c (c - 1) / 2)

    Examples
    --------
    >>> from edgecode.ecoc import one_vs_one
    >>> one_vs_one(3)
    array([[ 0,  0, -1],
           [ 1, -1,  0],
           [-1,  1,  1]], dtype=int8)
    """
    c = _check_classes(n_classes)
    n = c * (c - 1) // 2
    if n_columns is not None and check_int(n_columns, name="n_columns", low=1) != n:
        raise ValueError(f"n_columns must be c(c-1)/2 = {n} for one_vs_one; got {n_columns}")
    check_code_bytes("one_vs_one", c, n, c * n + 24 * n)    # matrix + pair indices
    M = np.full((c, n), -1, dtype=np.int8)
    i, j = np.triu_indices(c, 1)
    cols = np.arange(n)
    M[i, cols] = 0
    M[j, cols] = 1
    return M


def exhaustive(n_classes, n_columns=None):
    """Dietterich and Bakiri's exhaustive code: all 2^(c-1) - 1 distinct learners.

    Row 0 is all ones; row i >= 1 alternates runs of 2^(c-1-i) zeros and ones.
    Every pair of rows is at distance 2^(c-2).

    Parameters
    ----------
    n_classes : int
        Number of classes, 2 <= c <= ``ECOC_EXHAUSTIVE_MAX_CLASSES`` (16).
    n_columns : int, optional
        Keep the first n_columns columns (default: all 2^(c-1) - 1).

    Returns
    -------
    ndarray of int8, shape (c, n_columns)

    Examples
    --------
    >>> from edgecode.ecoc import exhaustive
    >>> exhaustive(4)
    array([[1, 1, 1, 1, 1, 1, 1],
           [0, 0, 0, 0, 1, 1, 1],
           [0, 0, 1, 1, 0, 0, 1],
           [0, 1, 0, 1, 0, 1, 0]], dtype=int8)
    """
    c = _check_classes(n_classes)
    if c > ECOC_EXHAUSTIVE_MAX_CLASSES:
        raise ValueError(f"n_classes={c} is too many for the exhaustive code (2^(c-1) - 1 = "
                         f"{2 ** (c - 1) - 1} columns); the limit is ECOC_EXHAUSTIVE_MAX_CLASSES="
                         f"{ECOC_EXHAUSTIVE_MAX_CLASSES}. Use 'dense_random', 'nary' or 'bch'.")
    full = 2 ** (c - 1) - 1
    n = _check_columns(n_columns, full, limit=full, why=f"the exhaustive code for {c} classes")
    check_code_bytes("exhaustive", c, n, c * n + 16 * n)
    j = np.arange(n)
    M = np.empty((c, n), dtype=np.int8)
    M[0] = 1
    for i in range(1, c):
        M[i] = (j >> (c - 1 - i)) & 1
    return M


# ----------------------------------------------------------------- random designs


def _check_criterion(criterion):
    crit = {"row": 0, "total": 1}
    if criterion not in crit:
        raise ValueError(f"criterion must be 'row' (d_r) or 'total' (d_T); got {criterion!r}")
    return crit[criterion]


def _check_screen(screen):
    if not isinstance(screen, (bool, np.bool_)):
        raise TypeError(f"screen must be True or False; got {screen!r}")
    return bool(screen)


def _best_random(c, n, N, p_unused, n_draws, criterion, random_state, design):
    code = _check_criterion(criterion)
    n_draws = check_int(n_draws, name="n_draws", low=1)
    # best, current, two transposed copies, row and column distance tables
    item = np.dtype(_dtype(N)).itemsize
    check_code_bytes(design, c, n, 4 * c * n * item + 8 * c * c + 8 * n * n)
    best = np.empty((c, n), _dtype(N))
    cur = np.empty((c, n), _dtype(N))
    max_attempts = 20 * n_draws + 1000
    valid, _ = _random_search(int(N), float(p_unused), n_draws, max_attempts, code,
                              _state(random_state), best, cur)
    if valid == 0:
        raise ValueError(
            f"no valid {c} x {n} matrix in {max_attempts} random draws (every draw had equal "
            "rows, a constant column or two equivalent columns); use more columns or another "
            "design, or screen=False for a plain random matrix")
    return best


def _min_pairs(A, metric):
    """(minimum off-diagonal distance, number of pairs at it): Hamming doubled, or absolute."""
    if metric == "absolute":
        D = _absolute(A)
        np.fill_diagonal(D, np.iinfo(np.int64).max)
        m = D.min()
        return int(m), int((D == m).sum() // 2)
    D = np.empty((A.shape[0], A.shape[0]), np.int64)
    _pair_distances(A, False, D)
    return _min_offdiag(D)


def _plain_score(M, total, metric="hamming"):
    """(score, pairs at the minima) of a plain draw: d_r, or d_T = d_r + d_c."""
    c, n = M.shape
    score, cnt = _min_pairs(M, metric) if c > 1 else (0, 0)
    if total and n > 1:
        dc, cc = _min_pairs(np.ascontiguousarray(M.T), metric)
        score, cnt = score + dc, cnt + cc
    return int(score), int(cnt)


def _plain_random(c, n, N, p_unused, n_draws, criterion, random_state, design,
                  metric="hamming"):
    """One plain i.i.d. matrix (n_draws None or 1), or the best of n_draws plain draws."""
    code = _check_criterion(criterion)
    n_draws = 1 if n_draws is None else check_int(n_draws, name="n_draws", low=1)
    item = np.dtype(_dtype(N)).itemsize
    extra = 0 if n_draws == 1 else 2 * c * n * item + 8 * c * c + 8 * n * n
    check_code_bytes(design, c, n, c * n * (item + 8) + extra)
    rs = as_random_state(random_state)
    best, best_key = None, None
    for _ in range(n_draws):
        M = plain_matrix(rs, c, n, N, p_unused, _dtype(N))
        if n_draws == 1:
            return M
        score, cnt = _plain_score(M, code == 1, metric)
        if best_key is None or (score, -cnt) > best_key:
            best, best_key = M, (score, -cnt)
    return best


def dense_random(n_classes, n_columns=None, *, n_draws=None, criterion="row", screen=True,
                 random_state=None):
    """Random binary matrix (Allwein, Schapire and Singer's dense code): best of
    ``n_draws`` screened draws, or a plain i.i.d. matrix with ``screen=False``.

    Parameters
    ----------
    n_classes : int
        Number of classes c >= 2.
    n_columns : int, optional
        Default ``ceil(10 log2 c)``; with ``screen=True`` capped at
        2^(c-1) - 1, the number of distinct, non-complementary, non-constant
        columns (also the limit).  ``screen=False`` has no cap.
    n_draws : int, optional
        ``screen=True`` (default 100): valid draws to compare.
        ``screen=False`` (default 1): one plain matrix; an explicit
        ``n_draws > 1`` keeps the best of that many plain draws by
        ``criterion`` (nothing rejected).
    criterion : {"row", "total"}, default="row"
        Keep the draw with the largest d_r, or d_T = d_r + d_c; ties go to the
        draw with fewer pairs at the minimum.  Unused for a single draw.
    screen : bool, default=True
        True: every draw is screened (see Notes).  False: the papers' plain
        random matrix, i.i.d. entries 0 / 1 with probability 1/2 each.
    random_state : int, RandomState, Generator or None
        Same seed, same matrix (for either value of ``screen``).

    Returns
    -------
    ndarray of int8, shape (c, n)
        With ``screen=True``: never a duplicate, complementary or constant
        column, never two equal rows.  With ``screen=False`` any of these can
        occur.

    Notes
    -----
    Screened draws are built column by column: a column that is constant or
    equal (or complementary) to an earlier one is redrawn, so every draw is
    valid column-wise; a draw with two equal rows is discarded.  A plain draw
    (``screen=False``, one draw) is ``RandomState.randint(0, 2, (c, n))`` of
    the random state: entries are independent Bernoulli(1/2).

    Examples
    --------
    >>> from edgecode.ecoc import dense_random, check_properties
    >>> M = dense_random(6, random_state=0)
    >>> M.shape, check_properties(M).valid
    ((6, 26), True)
    >>> dense_random(3, 4, screen=False, random_state=0)    # plain: a constant column is kept
    array([[0, 1, 1, 0],
           [1, 1, 1, 1],
           [1, 1, 1, 0]], dtype=int8)
    """
    c = _check_classes(n_classes)
    default = math.ceil(10 * math.log2(c))
    if not _check_screen(screen):
        n = _check_columns(n_columns, default)
        return _plain_random(c, n, 2, 0.0, n_draws, criterion, random_state, "dense_random")
    limit = 2 ** (c - 1) - 1 if c < 63 else None
    n = _check_columns(n_columns, default if limit is None else min(default, limit), limit=limit,
                       why=f"a binary code for {c} classes (distinct non-constant, "
                           "non-complementary columns)")
    if n < 63 and c > 2 ** n:
        raise ValueError(f"n_columns={n} is too small: {c} distinct binary rows need "
                         f">= {math.ceil(math.log2(c))} columns")
    return _best_random(c, n, 2, 0.0, 100 if n_draws is None else n_draws, criterion,
                        random_state, "dense_random")


def sparse_random(n_classes, n_columns=None, *, n_draws=None, criterion="row", p_unused=0.5,
                  screen=True, random_state=None):
    """Random ternary matrix (Allwein, Schapire and Singer's sparse code): best of
    ``n_draws`` screened draws, or a plain i.i.d. matrix with ``screen=False``.

    Each entry is -1 (class not used) with probability ``p_unused``, else 0 or
    1 with equal probability.

    Parameters
    ----------
    n_classes : int
        Number of classes c >= 2.
    n_columns : int, optional
        Default ``ceil(15 log2 c)``; with ``screen=True`` capped at
        (3^c - 2^(c+1) + 1) / 2, the number of distinct ternary learners
        (also the limit).  ``screen=False`` has no cap.
    n_draws : int, optional
        ``screen=True`` (default 100): valid draws to compare.
        ``screen=False`` (default 1): one plain matrix; an explicit
        ``n_draws > 1`` keeps the best of that many plain draws by
        ``criterion`` (nothing rejected).
    criterion : {"row", "total"}, default="row"
    p_unused : float, default=0.5
        Probability of -1, in [0, 1).
    screen : bool, default=True
        True: screened draws (each column uses both 0 and 1, no two columns
        equal up to swapping 0 and 1, no two equal rows).  False: the papers'
        plain random matrix, i.i.d. entries, nothing rejected.
    random_state : int, RandomState, Generator or None

    Returns
    -------
    ndarray of int8, shape (c, n)
        With ``screen=True``: each column uses both 0 and 1; no two columns
        equal up to swapping 0 and 1 (same -1 positions); no two equal rows.

    Notes
    -----
    A plain draw takes one uniform u per entry from the random state
    (``random_sample``): -1 if u < p_unused, else 0 or 1 as u falls in the
    lower or upper half of [p_unused, 1).

    Examples
    --------
    >>> from edgecode.ecoc import sparse_random, check_properties
    >>> M = sparse_random(5, random_state=0)
    >>> M.shape, check_properties(M).valid, int(M.min())
    ((5, 35), True, -1)
    >>> sparse_random(3, 4, screen=False, random_state=0)
    array([[ 0,  0,  0,  0],
           [-1,  0, -1,  1],
           [ 1, -1,  1,  0]], dtype=int8)
    """
    c = _check_classes(n_classes)
    default = math.ceil(15 * math.log2(c))
    if not isinstance(p_unused, (int, float)) or not 0 <= p_unused < 1:
        raise ValueError(f"p_unused must be in [0, 1); got {p_unused!r}")
    if not _check_screen(screen):
        n = _check_columns(n_columns, default)
        return _plain_random(c, n, 2, float(p_unused), n_draws, criterion, random_state,
                             "sparse_random")
    limit = (3 ** c - 2 ** (c + 1) + 1) // 2 if c < 40 else None
    n = _check_columns(n_columns, default if limit is None else min(default, limit), limit=limit,
                       why=f"a ternary code for {c} classes (distinct learners using both 0 and "
                           "1)")
    return _best_random(c, n, 2, float(p_unused), 100 if n_draws is None else n_draws,
                        criterion, random_state, "sparse_random")


def nary_random(n_classes, n_columns=None, N=3, *, n_draws=None, criterion="total", screen=True,
                metric="hamming", random_state=None):
    """Random N-ary matrix (the seed 001 baseline): best of ``n_draws`` draws by d_T.

    Parameters
    ----------
    n_classes : int
        Number of classes c >= 2.
    n_columns : int, optional
        Default c; with ``screen=True`` capped at the number of distinct
        learners (partitions of the classes into 2..N groups), which is also
        the limit.  ``screen=False`` has no cap.
    N : int, default=3
        Alphabet size >= 2 (any integer).
    n_draws : int, optional
        ``screen=True`` (default 1000): valid draws to compare.
        ``screen=False`` (default 1): one plain matrix; an explicit
        ``n_draws > 1`` keeps the best of that many plain draws by
        ``criterion`` -- ``screen=False, n_draws=1000`` is the seed's
        "best of 1000 randomly generated matrices by d_T" (nothing
        rejected: a draw with equal rows simply scores d_r = 0).
    criterion : {"total", "row"}, default="total"
    screen : bool, default=True
        True: every draw is screened (no equal rows, no constant column, no
        two columns equal up to a relabelling of symbols).  False: plain
        i.i.d. entries, uniform on {0, ..., N-1}.
    metric : {"hamming", "absolute"}, default="hamming"
        Distance that ``criterion`` measures: Hamming (seed 001's formula
        (6)) or the absolute-value distance ``sum |a - b|`` (formula (7), as
        the seed's reference [5]; its appendix compares the two).
        ``"absolute"`` needs ``screen=False``.
    random_state : int, RandomState, Generator or None

    Returns
    -------
    ndarray of int8 (int16 if N > 128), shape (c, n)

    Notes
    -----
    A plain draw is ``RandomState.randint(0, N, (c, n))`` of the random
    state; best-of-K plain draws are K such draws in a row.

    Examples
    --------
    >>> from edgecode.ecoc import nary_random, total_distance
    >>> M = nary_random(5, 5, N=3, n_draws=50, random_state=0)
    >>> M.shape, total_distance(M) >= 5
    ((5, 5), True)
    >>> nary_random(3, 4, N=5, screen=False, random_state=0)
    array([[4, 0, 3, 3],
           [3, 1, 3, 2],
           [4, 0, 0, 4]], dtype=int8)
    """
    c = _check_classes(n_classes)
    N = _check_N(N, prime=False)
    if metric not in ("hamming", "absolute"):
        raise ValueError(f"metric must be 'hamming' or 'absolute'; got {metric!r}")
    if not _check_screen(screen):
        n = _check_columns(n_columns, c)
        return _plain_random(c, n, N, 0.0, n_draws, criterion, random_state, "nary_random",
                             metric)
    if metric != "hamming":
        raise ValueError("metric='absolute' needs screen=False (the screened search measures "
                         "Hamming distances)")
    limit = _stirling2_sum(c, N) if c <= 64 else None
    n = _check_columns(n_columns, c if limit is None else min(c, limit), limit=limit,
                       why=f"a {N}-ary code for {c} classes (distinct learners)")
    if n * math.log(N) < math.log(c):
        raise ValueError(f"n_columns={n} is too small: {c} distinct {N}-ary rows need "
                         f">= {math.ceil(math.log(c) / math.log(N))} columns")
    return _best_random(c, n, N, 0.0, 1000 if n_draws is None else n_draws, criterion,
                        random_state, "nary_random")


# ----------------------------------------------------------------- Sylvester designs


def nary(n_classes, n_columns=None, N=3, *, truncation="adaptive", k=None, orientation="ours"):
    """N-ary Sylvester code M_k(N) (seed 001) truncated to c x n.

    Parameters
    ----------
    n_classes : int
        Number of classes c >= 2.
    n_columns : int, optional
        Default c (square), capped at the number of distinct learners
        (2^(c-1) - 1 for N = 2), which is also the limit.
    N : int or list of int, default=3
        Prime alphabet size (2 gives the binary Sylvester-Hadamard code).  A
        list of primes (the alphabet sizes the learners can handle) lets the
        design choose: each is built and the one with the best (validity,
        d_T, fewest pairs at the minimum distances) is returned, the smaller
        N on ties; its alphabet is ``M.max() + 1`` at most.
    truncation : {"adaptive", "top_left"}, default="adaptive"
        Which rows and columns of M_k(N) to keep (see
        :func:`edgecode.ecoc.sylvester.truncate`).  ``"top_left"`` is the
        seed's rule.
    k : int, optional
        Force the power k (N**k >= max(c, n)); default: chosen by the rule.
    orientation : {"ours", "paper", "product"}, default="ours"
        The base matrix M_1(N) (:func:`edgecode.ecoc.sylvester.sylvester_base`).
        ``"paper"`` is the seed's ``i j mod N`` with indices 1..N (N = 2:
        Sylvester-Hadamard in natural order); with ``truncation="top_left"``
        it reproduces the seed's remark (equal rows only for N = 2, at 10 x 5
        and 11 x 5).  ``"ours"`` (DESIGN.md's formula) with
        ``truncation="top_left"`` gives equal rows for N = 3, 5, 7 at 10 x 5
        and 11 x 5 too; under the default adaptive truncation the two are
        about as good (``benchmarks/results_seed001.md``).

    Returns
    -------
    ndarray of int8 (int16 if N > 128), shape (c, n)

    Raises
    ------
    ValueError
        N not prime; unknown truncation or orientation; n_columns above the number of distinct learners or too
        small for c distinct rows; N**k beyond ``ECOC_MAX_SYLVESTER``.

    Notes
    -----
    ``M_k(N)[u, v] = sum_d M_1(N)[u_d, v_d] mod N`` over the base-N digits of
    the row and column indices, with (orientation "ours") ``M_1(N)[i, j] =
    2^{-1}(i + j - (i-j)^2) mod N`` for odd N and ``i j mod 2`` for N = 2.  Every pair of rows and of
    columns of the full matrix is at distance (N-1)/N N^k, so d_T = 2 (N-1)
    N^(k-1).  Entries are computed from the indices; the N^k x N^k matrix is
    never built.

    Examples
    --------
    >>> from edgecode.ecoc import nary, row_distance, column_distance
    >>> M = nary(9, 9, N=3, truncation="top_left")      # the full M_2(3)
    >>> row_distance(M), column_distance(M)
    (6.0, 6.0)
    >>> int(nary(10, 5, N=[2, 3, 5]).max()) + 1          # chooses N = 5 here
    5
    >>> nary(4, 3, N=3, truncation="top_left", orientation="paper")
    array([[2, 0, 1],
           [0, 2, 1],
           [1, 1, 1],
           [0, 1, 2]], dtype=int8)
    """
    c = _check_classes(n_classes)
    if isinstance(N, (list, tuple)):
        if not N:
            raise ValueError("N must be a prime or a non-empty list of primes; got []")
        primes = sorted({_check_N(v, prime=True) for v in N})
        best, best_key = None, None
        for p in primes:
            try:
                M = nary(c, n_columns, N=p, truncation=truncation, k=k, orientation=orientation)
            except ValueError:
                if len(primes) == 1:
                    raise
                continue
            key = _code_key(M)
            if best_key is None or key > best_key:
                best, best_key = M, key
        if best is None:
            raise ValueError(f"no N in {primes} gives a valid {c}-class code with "
                             f"n_columns={n_columns}")
        return best.astype(_dtype(primes[-1]), copy=False)
    N = _check_N(N, prime=True)
    limit = _stirling2_sum(c, N) if c <= 64 else None
    n = _check_columns(n_columns, c if limit is None else min(c, limit), limit=limit,
                       why=f"a {N}-ary code for {c} classes (distinct learners: partitions of "
                           f"the classes into 2..{N} groups)")
    if n * math.log(N) < math.log(c) - 1e-12:
        raise ValueError(f"n_columns={n} is too small: {c} distinct {N}-ary rows need "
                         f">= {math.ceil(math.log(c) / math.log(N) - 1e-12)} columns")
    if truncation not in ("adaptive", "top_left"):
        raise ValueError(f"truncation must be 'adaptive' or 'top_left'; got {truncation!r}")
    if k is not None:
        k = check_int(k, name="k", low=1)
    need = max(c, n)
    if need > ECOC_MAX_SYLVESTER or (k is not None and N ** k > ECOC_MAX_SYLVESTER):
        raise ValueError(f"n_classes/n_columns too large: the Sylvester matrix would exceed "
                         f"ECOC_MAX_SYLVESTER={ECOC_MAX_SYLVESTER} rows")
    item = np.dtype(_dtype(N)).itemsize
    if truncation == "adaptive":   # int64 working copy, row/column distance tables
        work = (8 + item) * c * n + 8 * c * c + 8 * n * n
    else:
        work = item * c * n
    check_code_bytes(f"nary(N={N}, truncation={truncation!r})", c, n, work)
    _check_orientation(orientation)
    rows, cols, kk = truncate(c, n, N, rule=truncation, k=k, orientation=orientation)
    M = sylvester_entries(rows, cols, N, kk, orientation)
    if truncation == "top_left":
        _fix_equal_rows(M, N)
    return M


def _fix_equal_rows(M, N):
    """The seed's repair: a row equal to an earlier one gets its first entry changed."""
    c = M.shape[0]
    for i in range(1, c):
        for _ in range(N):
            if not (M[:i] == M[i]).all(axis=1).any():
                break
            M[i, 0] = (M[i, 0] + 1) % N


def hadamard(n_classes, n_columns=None, *, truncation="adaptive", k=None):
    """Binary Sylvester-Hadamard (Walsh) code truncated to c x n: ``nary(..., N=2)``.

    Parameters
    ----------
    n_classes : int
        Number of classes c >= 2.
    n_columns : int, optional
        Default c, capped at 2^(c-1) - 1 (the limit: distinct,
        non-complementary, non-constant columns).
    truncation : {"adaptive", "top_left"}, default="adaptive"
    k : int, optional
        Force the power (2**k >= max(c, n)).

    Returns
    -------
    ndarray of int8, shape (c, n)

    Examples
    --------
    >>> from edgecode.ecoc import hadamard, check_properties
    >>> p = check_properties(hadamard(8, 8, truncation="top_left"))
    >>> p.d_r, p.d_c, p.constant_columns      # the full Walsh matrix has one constant column
    (4.0, 4.0, [0])
    """
    return nary(n_classes, n_columns, N=2, truncation=truncation, k=k)


# ----------------------------------------------------------------- BCH


def bch(n_classes, n_columns=None, *, t=None, n_draws=20, random_state=None):
    """c codewords of a binary BCH code of length n = 2^m - 1 (Bose, Ray-Chaudhuri).

    Parameters
    ----------
    n_classes : int
        Number of classes c >= 2.
    n_columns : int, optional
        Code length, one of 7, 15, 31, 63, 127, 255, 511, 1023; default the
        smallest at least ``ceil(10 log2 c)``.
    t : int, optional
        Correctable errors; designed minimum distance 2t + 1.  Default: the
        largest t whose code still has >= c codewords.
    n_draws : int, default=20
        Random sets of c distinct non-zero messages compared by d_T (any set
        keeps d_r >= 2t + 1; the draw only improves the columns).
    random_state : int, RandomState, Generator or None

    Returns
    -------
    ndarray of int8, shape (c, n)
        Rows are codewords; d_r >= 2t + 1.

    Notes
    -----
    The generator polynomial ``g = lcm(m_1, ..., m_2t)`` is computed over
    GF(2^m) (:mod:`edgecode.ecoc.bch`); codewords are ``message(x) g(x)``.

    Examples
    --------
    >>> from edgecode.ecoc import bch, row_distance
    >>> M = bch(10, 15, t=3, random_state=0)        # the (15, 5) code, d = 7
    >>> M.shape, row_distance(M) >= 7
    ((10, 15), True)
    """
    c = _check_classes(n_classes)
    if n_columns is None:
        want = math.ceil(10 * math.log2(c))
        n = next((L for L in bch_lengths() if L >= want), bch_lengths()[-1])
    else:
        n = check_int(n_columns, name="n_columns", low=1)
        if n not in bch_lengths():
            raise ValueError(f"n_columns must be a BCH length 2^m - 1, one of {bch_lengths()}; "
                             f"got {n}")
    if t is None:
        t = 0
        for tt in range(1, (n - 1) // 2 + 1):
            kdim = n - (bch_generator(n, tt).bit_length() - 1)
            if 2 ** kdim - 1 >= c:
                t = tt
        if t == 0:
            raise ValueError(f"n_classes={c} is too many for BCH length {n}: even t=1 "
                             f"has only {2 ** (n - n.bit_length()) - 1} non-zero codewords")
    else:
        t = check_int(t, name="t", low=1, high=(n - 1) // 2)
    G = bch_generator_matrix(n, t)
    kdim = G.shape[0]
    if 2 ** kdim - 1 < c:
        raise ValueError(f"n_classes={c} is too many for the BCH({n}, {kdim}) code with t={t}: "
                         f"it has {2 ** kdim - 1} non-zero codewords; use a smaller t or a "
                         "longer code")
    n_draws = check_int(n_draws, name="n_draws", low=1)
    # messages, their int64 product with G, the int8 code (two alive at a time)
    check_code_bytes("bch", c, n, 9 * c * kdim + 8 * c * n + 2 * c * n)
    if n_draws > 1:
        # comparing draws by d_T: the c x c row and n x n column distance tables (int64),
        # the column relabelling table and its canonical copy
        from . import _memory
        check_allocation(f"bch: n_classes={c} with n_draws={n_draws}",
                         8 * c * c + 16 * n * n + c * n,
                         what=f"comparing the draws by d_T (a {c} x {c} table of row distances)",
                         hint="pass n_draws=1 (one draw, not compared: its rows are still at "
                         "distance >= 2t + 1), or use fewer classes",
                         limit=_memory.MAX_CODE_BYTES)
    rs = as_random_state(random_state)
    best, best_key = None, None
    Gf = G.astype(np.float64)
    for _ in range(n_draws):
        msgs = _distinct_messages(rs, c, kdim)
        # exact in float64 (sums of at most kdim <= 1023 ones): BLAS instead of an int product
        M = (np.rint(msgs.astype(np.float64) @ Gf).astype(np.int64) % 2).astype(np.int8)
        if n_draws == 1:
            return M
        key = _code_key(M)
        if best_key is None or key > best_key:
            best, best_key = M, key
    return best


def _distinct_messages(rs, c, kdim):
    """c distinct non-zero k-bit messages as a (c, k) 0/1 array."""
    if kdim <= 62:
        seen = set()
        while len(seen) < c:
            seen.update(int(v) for v in rs.randint(1, 2 ** kdim, size=c - len(seen),
                                                     dtype=np.int64))
        vals = np.array(sorted(seen)[:c], dtype=np.int64)
        rs.shuffle(vals)
        return ((vals[:, None] >> np.arange(kdim)) & 1).astype(np.uint8)
    while True:
        m = rs.randint(0, 2, size=(c, kdim)).astype(np.uint8)
        if m.any(axis=1).all() and len(np.unique(m, axis=0)) == c:
            return m


# ----------------------------------------------------------------- entry point

#: Design name -> (constructor, whether it takes the alphabet size N).
DESIGNS = {
    "one_vs_all": (one_vs_all, False),
    "one_vs_one": (one_vs_one, False),
    "exhaustive": (exhaustive, False),
    "dense_random": (dense_random, False),
    "sparse_random": (sparse_random, False),
    "hadamard": (hadamard, False),
    "nary": (nary, True),
    "nary_random": (nary_random, True),
    "bch": (bch, False),
    "annealed": (annealed, False),
}


def make_code(design, n_classes, n_columns=None, N=2, random_state=None, **options):
    """Build a coding matrix by design name.

    Parameters
    ----------
    design : str
        One of "one_vs_all", "one_vs_one", "exhaustive", "dense_random",
        "sparse_random", "hadamard", "nary", "nary_random", "bch", "annealed".
    n_classes : int
        Number of classes c (rows).
    n_columns : int, optional
        Number of learners n (columns).  Defaults: one_vs_all c; one_vs_one
        c(c-1)/2; exhaustive 2^(c-1) - 1; dense_random, annealed
        ceil(10 log2 c); sparse_random ceil(15 log2 c); hadamard, nary,
        nary_random c; bch the smallest 2^m - 1 >= ceil(10 log2 c).
    N : int, default=2
        Alphabet size, for "nary" (a prime, or a list of primes to choose
        from) and "nary_random"; every other design is binary (or ternary)
        and needs N = 2.
    random_state : int, RandomState, Generator or None
        For the random designs (dense_random, sparse_random, nary_random,
        bch, annealed); ignored by the deterministic ones.
    **options
        Passed to the design's constructor (e.g. ``truncation="top_left"``,
        ``n_draws=10``, ``criterion="total"``, ``t=6``; ``screen=False``
        gives the random designs' plain i.i.d. matrix).

    Returns
    -------
    M : ndarray of shape (n_classes, n_columns)
        int8 (int16 if N > 128); used symbols in {0, ..., N-1}, -1 = class
        not used by the learner (one_vs_one, sparse_random).

    Raises
    ------
    ValueError
        Unknown design (the message lists the valid ones), N != 2 for a
        binary design, or bad arguments for the design.
    TypeError
        An option the design does not take.

    Examples
    --------
    >>> from edgecode.ecoc import make_code
    >>> make_code("nary", 4, 3, N=3)
    array([[2, 0, 1],
           [0, 2, 1],
           [2, 1, 0],
           [1, 0, 2]], dtype=int8)
    >>> make_code("hamming", 4)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: unknown design 'hamming'; valid designs: one_vs_all, one_vs_one, ...
    """
    if not isinstance(design, str) or design not in DESIGNS:
        raise ValueError(f"unknown design {design!r}; valid designs: {', '.join(DESIGNS)}")
    fn, takes_N = DESIGNS[design]
    params = inspect.signature(fn).parameters
    for name in options:
        if name not in params or name in ("n_classes", "n_columns", "N", "random_state"):
            allowed = [p for p in params if p not in ("n_classes", "n_columns", "N",
                                                      "random_state")]
            raise TypeError(f"design {design!r} takes no option {name!r}; its options: "
                            f"{', '.join(allowed) or 'none'}")
    if options.get("return_info"):
        raise TypeError("make_code returns the matrix only; call annealed(..., "
                        "return_info=True) for the annealing record")
    kwargs = dict(options)
    if takes_N:
        kwargs["N"] = N
    else:
        N = check_int(N, name="N", low=2)
        if N != 2:
            raise ValueError(f"design {design!r} is binary; N must be 2 (use 'nary' or "
                             f"'nary_random' for N={N})")
    if "random_state" in params:
        kwargs["random_state"] = random_state
    return fn(n_classes, n_columns, **kwargs)
