"""Quality of a coding matrix: row, column and total distance; properties P1-P4.

Symbols (shared by every ``edgecode.ecoc`` function): a coding matrix is an
integer array of shape (n_classes, n_columns); a used entry is in
{0, ..., N-1} (binary codes use {0, 1}); the ternary "class not used by this
learner" symbol is -1.

Distance rule: the Hamming distance between two rows (or two columns) counts
the positions whose symbols are both used and differ, plus **1/2 for every
position where either symbol is -1** (Allwein, Schapire and Singer's rule:
a learner that ignores a class says nothing about it, half an error either
way).  Distances are therefore multiples of 1/2 and are returned as floats;
without -1 entries they are whole numbers.
"""

import warnings
from dataclasses import dataclass, field

import numpy as np

from ._kernels.codes import _canonical_rows, _min_offdiag, _pair_distances

__all__ = ["check_code", "warn_degenerate", "pairwise_distances", "row_distance", "column_distance",
           "total_distance", "distance_stats", "check_properties", "CodeProperties", "METRICS"]

#: Distances between codewords: "hamming" (unequal symbols, the -1 rule above) or
#: "absolute" (sum of |a - b| over positions, seed 001's formula (7); no -1 entries).
METRICS = ("hamming", "absolute")

#: Bytes of the int32 difference block held at a time by the absolute distance.
_ABS_BLOCK_BYTES = 1 << 26


def check_code(M, *, name="M"):
    """Return ``M`` as a C-contiguous int8 (int16 when a symbol exceeds 127) matrix.

    Entries must be integers >= -1; the matrix must be 2-dimensional with at
    least one row and one column.  Float input with whole values is accepted.

    Raises
    ------
    TypeError
        Non-numeric input or non-integer values.
    ValueError
        Wrong number of dimensions, empty, entries < -1 or > 32766.

    Examples
    --------
    >>> from edgecode.ecoc.quality import check_code
    >>> check_code([[0, 1], [1, -1]]).dtype
    dtype('int8')
    >>> check_code([[0, -2]])
    Traceback (most recent call last):
    ...
    ValueError: M entries must be >= -1 (-1 = class not used); got -2
    """
    try:
        arr = np.asarray(M)
    except Exception as exc:
        raise TypeError(f"{name} must be an integer matrix; got {type(M).__name__}") from exc
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == np.bool_):
        raise TypeError(f"{name} must be an integer matrix; got dtype {arr.dtype}")
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-dimensional (n_classes, n_columns); "
                         f"got shape {arr.shape}")
    if arr.shape[0] < 1 or arr.shape[1] < 1:
        raise ValueError(f"{name} must have at least one row and one column; got shape {arr.shape}")
    if not np.issubdtype(arr.dtype, np.integer) and arr.dtype != np.bool_:
        if np.iscomplexobj(arr) or not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
            raise TypeError(f"{name} must hold whole numbers (symbols); got dtype {arr.dtype}")
    lo, hi = (int(arr.min()), int(arr.max()))
    if lo < -1:
        raise ValueError(f"{name} entries must be >= -1 (-1 = class not used); got {lo}")
    if hi > 32766:
        raise ValueError(f"{name} entries must be <= 32766; got {hi}")
    dtype = np.int8 if hi <= 127 else np.int16
    return np.ascontiguousarray(arr, dtype=dtype)


def _check_table_bytes(r, what):
    """Refuse an r x r distance table (int64, plus a float64 copy) above MAX_CODE_BYTES."""
    from . import _memory
    nbytes = 16 * int(r) * int(r)
    if nbytes > _memory.MAX_CODE_BYTES:
        raise ValueError(
            f"the {r} x {r} table of pairwise distances between {what} needs about "
            f"{nbytes:,} bytes ({nbytes / 2 ** 30:.3g} GiB), above the limit of "
            f"{_memory.MAX_CODE_BYTES:,} bytes (edgecode.ecoc._memory.MAX_CODE_BYTES)")


def _doubled(A, what="rows"):
    _check_table_bytes(A.shape[0], f"{A.shape[0]} {what}")
    out = np.empty((A.shape[0], A.shape[0]), np.int64)
    _pair_distances(A, False, out)
    return out


def _check_metric(metric, A):
    if metric not in METRICS:
        raise ValueError(f"metric must be 'hamming' or 'absolute'; got {metric!r}")
    if metric == "absolute" and (A < 0).any():
        raise ValueError("metric='absolute' needs symbols >= 0; M has -1 (class not used) "
                         "entries, for which |a - b| is undefined")
    return metric


def _absolute(A, what="rows"):
    """r x r table of sum_k |A[i, k] - A[j, k]| (int64), in row blocks of bounded memory."""
    _check_table_bytes(A.shape[0], f"{A.shape[0]} {what}")
    r, n = A.shape
    B = A.astype(np.int32)
    out = np.empty((r, r), np.int64)
    step = max(1, _ABS_BLOCK_BYTES // max(4 * r * n, 1))
    for i0 in range(0, r, step):
        blk = np.abs(B[i0:i0 + step, None, :] - B[None, :, :])
        out[i0:i0 + step] = blk.sum(axis=2, dtype=np.int64)
    return out


def _table(A, metric, what="rows"):
    """Pairwise distances as float64: Hamming (from the doubled kernel) or absolute."""
    if metric == "absolute":
        return _absolute(A, what).astype(np.float64)
    return _doubled(A, what) / 2.0


def pairwise_distances(M, axis=0, metric="hamming"):
    """All pairwise distances between the rows (axis=0) or columns (axis=1).

    Parameters
    ----------
    M : array-like of shape (n_classes, n_columns)
        Coding matrix (symbols >= 0, -1 = class not used).
    axis : {0, 1}, default=0
        0 for distances between rows (codewords), 1 between columns (learners).
    metric : {"hamming", "absolute"}, default="hamming"
        ``"hamming"``: positions where both symbols are used and differ, plus
        1/2 per position where either is -1 (seed 001's formula (6), the
        Kronecker-delta distance).  ``"absolute"``: ``sum_k |a_k - b_k|``
        (formula (7), used by the seed's reference [5] to pick random N-ary
        codes); for symbols >= 0 only.

    Returns
    -------
    D : ndarray of float64, shape (r, r)
        Zero diagonal.

    Raises
    ------
    ValueError
        Unknown metric, or -1 entries with ``metric="absolute"``.

    Examples
    --------
    >>> from edgecode.ecoc import pairwise_distances
    >>> pairwise_distances([[0, 1, -1], [1, 1, 0]])
    array([[0. , 1.5],
           [1.5, 0. ]])
    >>> pairwise_distances([[0, 1, 4], [2, 1, 0]], metric="absolute")
    array([[0., 6.],
           [6., 0.]])
    """
    A = check_code(M)
    if axis not in (0, 1):
        raise ValueError(f"axis must be 0 (rows) or 1 (columns); got {axis!r}")
    _check_metric(metric, A)
    if axis == 1:
        A = np.ascontiguousarray(A.T)
    return _table(A, metric, ("rows", "columns")[axis])


def _min_distance(A, what="rows", metric="hamming"):
    if A.shape[0] < 2:
        return float("nan")
    if metric == "absolute":
        D = _absolute(A, what)
        return float(D[np.triu_indices(A.shape[0], 1)].min())
    best, _ = _min_offdiag(_doubled(A, what))
    return best / 2.0


def row_distance(M, metric="hamming"):
    """d_r(M): the minimum distance between two rows (nan for one row).

    ``metric``: "hamming" (default) or "absolute" (see :func:`pairwise_distances`).

    Examples
    --------
    >>> from edgecode.ecoc import row_distance
    >>> row_distance([[0, 0, 0], [0, 1, 1], [1, 0, 1]])
    2.0
    >>> row_distance([[0, 0, 0], [0, 2, 2], [1, 0, 1]], metric="absolute")
    2.0
    """
    A = check_code(M)
    return _min_distance(A, metric=_check_metric(metric, A))


def column_distance(M, metric="hamming"):
    """d_c(M): the minimum distance between two columns (nan for one column).

    ``metric``: "hamming" (default) or "absolute" (see :func:`pairwise_distances`).

    Examples
    --------
    >>> from edgecode.ecoc import column_distance
    >>> column_distance([[0, 0, 0], [0, 1, 1], [1, 0, 1]])
    1.0
    """
    A = check_code(M)
    _check_metric(metric, A)
    return _min_distance(np.ascontiguousarray(A.T), "columns", metric)


def total_distance(M, metric="hamming"):
    """d_T(M) = d_r(M) + d_c(M); a single column (or row) contributes 0.

    ``metric``: "hamming" (default) or "absolute" (see :func:`pairwise_distances`).

    Examples
    --------
    >>> from edgecode.ecoc import make_code, total_distance
    >>> total_distance(make_code("hadamard", 8))   # Sylvester: d_r = d_c = 4
    8.0
    >>> total_distance([[0, 2], [2, 0]], metric="absolute")     # rows 4 apart, columns 4
    8.0
    """
    A = check_code(M)
    _check_metric(metric, A)
    dr = _min_distance(A, metric=metric) if A.shape[0] > 1 else 0.0
    dc = _min_distance(np.ascontiguousarray(A.T), "columns", metric) if A.shape[1] > 1 else 0.0
    return dr + dc


def distance_stats(M, axis=0):
    """(min, mean, std, max) of the pairwise distances between rows (axis=0) or columns.

    Examples
    --------
    >>> from edgecode.ecoc import distance_stats
    >>> distance_stats([[0, 0, 0], [0, 1, 1], [1, 1, 1]])
    (1.0, 2.0, 0.816496580927726, 3.0)
    """
    D = pairwise_distances(M, axis=axis)
    r = D.shape[0]
    if r < 2:
        return (float("nan"),) * 4
    v = D[np.triu_indices(r, 1)]
    return float(v.min()), float(v.mean()), float(v.std()), float(v.max())


@dataclass
class CodeProperties:
    """Report of :func:`check_properties` (P1-P4 of seed 001 and the distance spread).

    Attributes
    ----------
    shape : tuple of int
        (n_classes, n_columns).
    n_symbols : int
        Alphabet size N (largest used symbol + 1).
    ternary : bool
        Whether some entry is -1 (class not used).
    d_r, d_c, d_T : float
        P1 and P2: minimum row and column distance, their sum.
    row_mean, row_std, col_mean, col_std : float
        Mean and standard deviation of all pairwise row / column distances.
    equal_rows : list of (int, int)
        Pairs of identical rows (two classes the code cannot tell apart).
    constant_columns : list of int
        P4 violations: columns with fewer than two distinct used symbols.
    equivalent_columns : list of (int, int)
        P3 violations: pairs of columns equal up to a relabelling of their used
        symbols with the same -1 positions (binary: equal or complementary).
    """

    shape: tuple
    n_symbols: int
    ternary: bool
    d_r: float
    d_c: float
    d_T: float
    row_mean: float
    row_std: float
    col_mean: float
    col_std: float
    equal_rows: list = field(default_factory=list)
    constant_columns: list = field(default_factory=list)
    equivalent_columns: list = field(default_factory=list)

    @property
    def p3(self):
        """True when no two columns are equal up to a relabelling of symbols."""
        return not self.equivalent_columns

    @property
    def p4(self):
        """True when no column is constant."""
        return not self.constant_columns

    @property
    def valid(self):
        """Distinct rows, P3 and P4 all hold."""
        return not (self.equal_rows or self.constant_columns or self.equivalent_columns)

    def report(self):
        """A few lines of text for people."""
        c, n = self.shape
        kind = "ternary" if self.ternary else ("binary" if self.n_symbols <= 2 else
                                               f"{self.n_symbols}-ary")
        lines = [
            f"{c} classes x {n} columns, {kind}",
            f"P1 row distance    d_r = {self.d_r:g}   (pairs: mean {self.row_mean:.3f}, "
            f"std {self.row_std:.3f}); corrects {max(int((self.d_r - 1) // 2), 0)} "
            f"flipped learner outputs",
            f"P2 column distance d_c = {self.d_c:g}   (pairs: mean {self.col_mean:.3f}, "
            f"std {self.col_std:.3f})",
            f"   total distance  d_T = {self.d_T:g}",
            f"P3 no equivalent columns: {_ok(self.equivalent_columns)}",
            f"P4 no constant columns:   {_ok(self.constant_columns)}",
            f"   distinct rows:         {_ok(self.equal_rows)}",
        ]
        return "\n".join(lines)

    def __str__(self):
        return self.report()


def _ok(items, show=5):
    if not items:
        return "yes"
    more = f" ... ({len(items)} in all)" if len(items) > show else ""
    return "NO: " + ", ".join(str(x) for x in items[:show]) + more


def check_properties(M):
    """Check properties P1-P4 of seed 001 and the spread of the distances.

    Parameters
    ----------
    M : array-like of shape (n_classes, n_columns)
        Coding matrix (symbols >= 0, -1 = class not used).

    Returns
    -------
    CodeProperties
        d_r (P1), d_c (P2), d_T, the mean and std of pairwise distances, and
        the lists of equal rows, constant columns (P4) and columns equal up to
        a relabelling of symbols (P3; binary: equal or complementary).

    Notes
    -----
    A column is constant when its used (>= 0) entries take fewer than two
    distinct values: its learner has nothing to separate.  For P3, columns
    are compared after relabelling each column's used symbols in order of
    first appearance, with -1 kept in place; this is the binary complement
    generalised to N symbols, and treats a ternary column and its
    complement (same -1 positions) as the same learner.

    Examples
    --------
    >>> from edgecode.ecoc import check_properties
    >>> p = check_properties([[0, 1, 0], [1, 0, 0], [0, 1, 0]])
    >>> p.d_r, p.equal_rows, p.constant_columns, p.equivalent_columns
    (0.0, [(0, 2)], [2], [(0, 1)])
    """
    A = check_code(M)
    c, n = A.shape
    AT = np.ascontiguousarray(A.T)
    Dr, Dc = _doubled(A), _doubled(AT, "columns")
    iu_r, iu_c = np.triu_indices(c, 1), np.triu_indices(n, 1)
    vr, vc = Dr[iu_r] / 2.0, Dc[iu_c] / 2.0
    dr = float(vr.min()) if c > 1 else float("nan")
    dc = float(vc.min()) if n > 1 else float("nan")
    exact = np.empty((c, c), np.int64)
    _pair_distances(A, True, exact)
    hit = np.flatnonzero(exact[iu_r] == 0)
    equal_rows = [(int(iu_r[0][h]), int(iu_r[1][h])) for h in hit]
    constant = []
    for k in range(n):
        used = AT[k][AT[k] >= 0]
        if used.size == 0 or np.all(used == used[0]):
            constant.append(k)
    canon = np.empty_like(AT)
    _canonical_rows(AT, canon)
    ec = np.empty((n, n), np.int64)
    _pair_distances(canon, True, ec)
    hit = np.flatnonzero(ec[iu_c] == 0)
    equiv = [(int(iu_c[0][h]), int(iu_c[1][h])) for h in hit]
    return CodeProperties(
        shape=(c, n), n_symbols=int(max(A.max(), 0)) + 1, ternary=bool((A < 0).any()),
        d_r=dr, d_c=dc, d_T=(0.0 if c < 2 else dr) + (0.0 if n < 2 else dc),
        row_mean=float(vr.mean()) if c > 1 else float("nan"),
        row_std=float(vr.std()) if c > 1 else float("nan"),
        col_mean=float(vc.mean()) if n > 1 else float("nan"),
        col_std=float(vc.std()) if n > 1 else float("nan"),
        equal_rows=equal_rows, constant_columns=constant, equivalent_columns=equiv)


def _code_key(A):
    """Key to maximise: (valid, doubled d_T, -pairs at the minima).

    Valid: distinct rows, no constant column, no relabel-equivalent columns.
    """
    c, n = A.shape
    AT = np.ascontiguousarray(A.T)
    Dr = np.empty((c, c), np.int64)
    _pair_distances(A, False, Dr)
    dr, cr = _min_offdiag(Dr) if c > 1 else (0, 0)
    Dc = np.empty((n, n), np.int64)
    _pair_distances(AT, False, Dc)
    dc, cc = _min_offdiag(Dc) if n > 1 else (0, 0)
    valid = True
    ternary = bool((A < 0).any())
    if c > 1 and ternary:
        X = np.empty((c, c), np.int64)
        _pair_distances(A, True, X)
        valid = _min_offdiag(X)[0] > 0
        for k in range(n):
            used = AT[k][AT[k] >= 0]
            if used.size == 0 or np.all(used == used[0]):
                valid = False
                break
    elif c > 1:
        valid = dr > 0 and not bool((A == A[0]).all(axis=0).any())
    if valid and n > 1:
        canon = np.empty_like(AT)
        _canonical_rows(AT, canon)
        E = np.empty((n, n), np.int64)
        _pair_distances(canon, True, E)
        e, _ = _min_offdiag(E)
        valid = e > 0
    return (bool(valid), int(dr + dc), -int(cr + cc))


def warn_degenerate(code, *, name="code", rows=True, columns=True, stacklevel=2):
    """Warn (``UserWarning``) about identical rows and constant columns of a code.

    Identical rows: those classes cannot be told apart (the lowest class index
    wins a tie); the message names the 0-based row pairs.  A constant column
    gives every class it uses the same symbol (its learner is constant); the
    message names the columns.  At most 10 of each are listed.

    Parameters
    ----------
    code : ndarray of int, shape (n_classes, n_columns)
        A validated code (entries -1 or symbols).
    name : str, default="code"
        How the message calls the matrix.
    rows, columns : bool, default=True
        Which defects to look for.
    stacklevel : int, default=2
        Passed to :func:`warnings.warn`.

    Returns
    -------
    (pairs, columns) : (list of (int, int), list of int)
        What was found (and warned about).

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     warn_degenerate(np.array([[0, 1], [0, 1], [0, 0]]))
    ([(0, 1)], [0])
    """
    code = np.asarray(code, dtype=np.int64)
    pairs, const = [], []
    if rows:
        _, inverse, counts = np.unique(code, axis=0, return_inverse=True, return_counts=True)
        inverse = inverse.reshape(-1)
        for g in np.flatnonzero(counts > 1):
            members = np.flatnonzero(inverse == g)
            pairs.extend((int(members[0]), int(r)) for r in members[1:])
        pairs.sort()
        if pairs:
            more = f" and {len(pairs) - 10} more" if len(pairs) > 10 else ""
            warnings.warn(f"{name} has identical rows (0-based pairs) {pairs[:10]}{more}: "
                          "those classes cannot be told apart and the lowest class index "
                          "wins", UserWarning, stacklevel=stacklevel)
    if columns:
        used = code >= 0
        lo = np.where(used, code, np.iinfo(np.int64).max).min(axis=0)
        hi = np.where(used, code, -1).max(axis=0)
        const = np.flatnonzero(lo == hi).tolist()
        if const:
            more = f" and {len(const) - 10} more" if len(const) > 10 else ""
            warnings.warn(f"{name} columns {const[:10]}{more} give every used class the same "
                          "symbol: their learners are constant (they carry no information)",
                          UserWarning, stacklevel=stacklevel)
    return pairs, const
