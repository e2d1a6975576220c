"""Simulated annealing of a binary coding matrix (seed 003)."""

import math
import sys
from numbers import Real

import numpy as np

from .._validation import check_int
from ._kernels.codes import _anneal, _pair_distances
from ._memory import check_code_bytes
from ._random import as_random_state

__all__ = ["annealed", "code_energy"]

#: energy charged to a pair of equal codewords (as if their distance were 1/2)
_ZERO_PENALTY = 4.0


def _inv2(n_max):
    d = np.arange(n_max + 2, dtype=np.float64)
    out = np.empty_like(d)
    out[0] = _ZERO_PENALTY
    out[1:] = 1.0 / d[1:] ** 2
    return out


def code_energy(M):
    """Electrostatic energy ``sum_{i<j} 1 / d(w_i, w_j)^2`` of a binary code.

    Equal codewords count 4 (as if 1/2 apart).

    Examples
    --------
    >>> from edgecode.ecoc.annealing import code_energy
    >>> code_energy([[0, 0], [1, 1], [0, 1]])      # distances 2, 1, 1
    2.25
    """
    from .quality import check_code
    A = check_code(M)
    D = np.empty((A.shape[0], A.shape[0]), np.int64)
    _pair_distances(A, True, D)
    iu = np.triu_indices(A.shape[0], 1)
    return float(_inv2(A.shape[1])[D[iu] // 2].sum())


def _random_binary(rng, c, n):
    """Random c x n binary matrix without constant columns (c >= 2)."""
    M = rng.integers(0, 2, (c, n), dtype=np.int8)
    while True:
        bad = (M == M[0]).all(axis=0)
        if not bad.any():
            return M
        M[:, bad] = rng.integers(0, 2, (c, int(bad.sum())), dtype=np.int8)


def annealed(n_classes, n_columns=None, random_state=None, *, n_temps=100,
             moves_per_temp=None, t0=0.2, t_min=0.01, p_flip=0.9, p_add=0.05,
             min_columns=None, max_columns=None, start=None, progress=None):
    """Binary code optimised by simulated annealing of the electrostatic energy (seed 003).

    Parameters
    ----------
    n_classes : int
        Number of classes c (>= 2).
    n_columns : int, optional
        Width of the random start; default ``ceil(10 log2 c)``.
    random_state : int, RandomState, Generator or None
        Seed of the start matrix and of the moves.
    n_temps : int, default=100
        Number of temperatures (the seed's N = 100 iterations).
    moves_per_temp : int, optional
        Moves tried at each temperature (the seed's L0); default ``100 c``.
    t0, t_min : float, default=0.2, 0.01
        First and last temperature, in units of the mean pair energy
        ``E0 / (c (c-1) / 2)`` of the start (the seed's T0 = E0 / 5 and
        Tmin = 0.01; see Notes).  Geometric cooling from t0 to t_min.
    p_flip, p_add : float, default=0.9, 0.05
        Move probabilities: flip one bit, add a random column; the rest
        (0.05) removes a random column.
    min_columns, max_columns : int, optional
        Width bounds for the add/remove moves; both default to ``n_columns``,
        so the result has exactly the requested shape (add/remove moves are
        then never made).  Widen them to let the annealing choose the width.
    start : array-like of shape (c, n), optional
        Start matrix instead of a random one (binary, no constant column).
    progress : callable or True, optional
        Called as ``progress(done_temps, n_temps, energy)`` after every block
        of temperatures; ``True`` prints a line to stderr.

    Returns
    -------
    M : ndarray of int8, shape (c, n)
        Binary code, no constant column; a column equal or complementary to
        an earlier one is replaced at the end by the random new column that
        raises the energy least.

    Notes
    -----
    Energy ``E(M) = sum_{i<j} 1 / d(w_i, w_j)^2`` (equal codewords 4).
    A flip changes c - 1 pair distances by one, so its energy change is
    computed in O(c) from the maintained distance matrix; adding or removing
    a column changes every pair (O(c^2)).  Metropolis acceptance
    ``exp(-dE / T)``.  The seed gives T0 = E0 / 5 and Tmin = 0.01 without
    an energy scale; read in absolute units every move would be accepted
    (|dE| ~ 1e-4 for c = 100, n = 104), so here the temperatures are
    relative to the mean pair energy.  Flips that would make a column
    constant are not proposed.

    Examples
    --------
    >>> from edgecode.ecoc import annealed, check_properties
    >>> M = annealed(10, 12, random_state=0, n_temps=20)
    >>> M.shape, M.dtype, check_properties(M).p4
    ((10, 12), dtype('int8'), True)
    """
    c = check_int(n_classes, name="n_classes", low=2)
    rng = np.random.default_rng(as_random_state(random_state).randint(0, 2 ** 31 - 1))
    if start is not None:
        from .quality import check_code
        M0 = check_code(start, name="start")
        if M0.shape[0] != c or not np.isin(M0, (0, 1)).all():
            raise ValueError(f"start must be a binary matrix with {c} rows; got shape {M0.shape}")
        if (M0 == M0[0]).all(axis=0).any():
            raise ValueError("start must have no constant column")
        n = M0.shape[1] if n_columns is None else check_int(n_columns, name="n_columns", low=1)
        if n != M0.shape[1]:
            raise ValueError(f"n_columns={n} but start has {M0.shape[1]} columns")
    else:
        limit = 2 ** (c - 1) - 1 if c < 63 else None
        n = (math.ceil(10 * math.log2(c)) if n_columns is None
             else check_int(n_columns, name="n_columns", low=1))
        if n_columns is None and limit is not None:
            n = min(n, limit)
        if limit is not None and n > limit:
            raise ValueError(f"n_columns={n} is too large: a binary code for {c} classes has at "
                             f"most {limit} columns (distinct, non-complementary, non-constant)")
    n_temps = check_int(n_temps, name="n_temps", low=1)
    L = 100 * c if moves_per_temp is None else check_int(moves_per_temp, name="moves_per_temp",
                                                          low=1)
    lo = n if min_columns is None else check_int(min_columns, name="min_columns", low=1)
    hi = n if max_columns is None else check_int(max_columns, name="max_columns", low=n)
    if lo > n:
        raise ValueError(f"min_columns must be <= n_columns={n}; got {lo}")
    for name, v in (("t0", t0), ("t_min", t_min)):
        if not isinstance(v, Real) or isinstance(v, bool) or not (0 < v < math.inf):
            raise ValueError(f"{name} must be a positive finite number; got {v!r}")
    if t_min > t0:
        raise ValueError(f"t_min must be <= t0; got t_min={t_min}, t0={t0}")
    for name, v in (("p_flip", p_flip), ("p_add", p_add)):
        if not isinstance(v, Real) or isinstance(v, bool) or not 0 <= v <= 1:   # NaN fails
            raise ValueError(f"{name} must be in [0, 1]; got {v!r}")
    if p_flip + p_add > 1:
        raise ValueError(f"p_flip + p_add must be <= 1; got {p_flip + p_add}")
    if progress is True:
        progress = _print_progress
    # the code (up to max_columns), the c x c distance table and its pair indices
    check_code_bytes("annealed", c, hi, 2 * c * hi + 16 * c * c)
    M = np.zeros((c, hi), np.int8)
    M[:, :n] = M0 if start is not None else _random_binary(rng, c, n)
    D = np.empty((c, c), np.int64)
    _pair_distances(np.ascontiguousarray(M[:, :n]), True, D)
    D //= 2
    inv2 = _inv2(hi)
    iu = np.triu_indices(c, 1)
    E0 = float(inv2[D[iu]].sum())
    scale = E0 / len(iu[0])
    T = np.array([t0 * scale])
    cooling = (t_min / t0) ** (1.0 / max(n_temps - 1, 1))
    ones = np.zeros(hi, np.int64)
    ones[:n] = M[:, :n].sum(axis=0)
    width = np.array([n], np.int64)
    energy = np.array([E0])
    state = np.array([rng.integers(0, 2 ** 63 - 1)], dtype=np.uint64)
    stats = np.zeros(2, np.int64)
    block = max(1, n_temps // 10) if progress is not None else n_temps
    done = 0
    while done < n_temps:
        step = min(block, n_temps - done)
        _anneal(M, width, D, inv2, ones, T, step, L, cooling, float(p_flip), float(p_add),
                lo, state, energy, stats)
        done += step
        if progress is not None:
            progress(done, n_temps, float(energy[0]))
    return _repair_columns(np.ascontiguousarray(M[:, :width[0]]), rng)


def _repair_columns(M, rng, candidates=64):
    """Replace each column equal or complementary to an earlier one (P3).

    The replacement is the candidate random non-constant column, new up to
    complement, that raises the energy least.  Columns stay if no candidate
    is new (then P3 cannot hold at this width anyway).
    """
    c, n = M.shape
    key = lambda col: col.tobytes() if col[0] == 0 else (1 - col).tobytes()  # noqa: E731
    seen = {}
    for k in range(n):
        kk = key(M[:, k])
        if kk not in seen:
            seen[kk] = k
            continue
        D = np.empty((c, c), np.int64)
        _pair_distances(np.ascontiguousarray(np.delete(M, k, axis=1)), True, D)
        D //= 2
        inv2 = _inv2(n)
        best, best_e = None, None
        for _ in range(candidates):
            col = rng.integers(0, 2, c, dtype=np.int8)
            if col.min() == col.max() or key(col) in seen:
                continue
            e = inv2[D + (col[:, None] != col[None, :])][np.triu_indices(c, 1)].sum()
            if best_e is None or e < best_e:
                best, best_e = col, e
        if best is not None:
            M[:, k] = best
            seen[key(best)] = k
    return M


def _print_progress(done, total, energy):
    print(f"annealing {done}/{total} temperatures, energy {energy:.6g}", file=sys.stderr)
