"""Simulated annealing of a binary coding matrix (seed 003)."""

import math
import sys
from numbers import Real

import numpy as np

from .._validation import check_int
from ._kernels.codes import _anneal, _pair_distances
from ._memory import check_code_bytes
from ._random import as_random_state

__all__ = ["annealed", "code_energy", "SCHEDULES"]

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


#: Keyword defaults of each schedule (see :func:`annealed`).  ``"100c"`` means
#: 100 moves per class; ``"n_columns"`` the requested width; ``"half"`` half of it.
SCHEDULES = {
    "ours": {"n_temps": 100, "moves_per_temp": "100c", "t0": 0.2, "t_min": 0.01,
             "p_flip": 0.9, "p_add": 0.05, "min_columns": "n_columns",
             "max_columns": "n_columns", "keep_best": False, "repair": True},
    "paper": {"n_temps": 100, "moves_per_temp": 30, "t0": 0.2, "t_min": 0.01,
              "p_flip": 0.9, "p_add": 0.05, "min_columns": "half",
              "max_columns": "n_columns", "keep_best": True, "repair": False},
}


def annealed(n_classes, n_columns=None, random_state=None, *, schedule="ours", n_temps=None,
             moves_per_temp=None, t0=None, t_min=None, p_flip=None, p_add=None,
             min_columns=None, max_columns=None, keep_best=None, repair=None, start=None,
             progress=None, return_info=False):
    """Binary code optimised by simulated annealing of the electrostatic energy (seed 003).

    Parameters
    ----------
    n_classes : int
        Number of classes c (>= 2).
    n_columns : int, optional
        Width of the random start; default ``ceil(10 log2 c)``.
    random_state : int, RandomState, Generator or None
        Seed of the start matrix and of the moves.
    schedule : {"ours", "paper"}, default="ours"
        Which defaults the keywords below take when left at None (the table
        is :data:`SCHEDULES`).  ``"ours"``: 100 temperatures of ``100 c``
        moves, temperatures relative to the mean pair energy, fixed width,
        P3 repair at the end.  ``"paper"``: the seed's stated parameters,
        N = 100 temperatures of L0 = 30 moves, T0 = E0 / 5 and
        Tmin = 0.01 in absolute energy units, column add and remove moves
        on (width between ``n_columns // 2`` and ``n_columns``), the best
        state seen returned, no repair.  Explicit keywords override either.
    n_temps : int, optional
        Number of temperatures (the seed's N = 100 iterations).
    moves_per_temp : int, optional
        Moves tried at each temperature (the seed's L0): ours ``100 c``,
        paper 30.
    t0, t_min : float, optional
        First and last temperature (geometric cooling, ``n_temps`` steps),
        both 0.2 and 0.01 by default.  ``"ours"``: in units of the mean
        pair energy ``E0 / (c (c-1) / 2)`` of the start.  ``"paper"``: t0
        is a fraction of the start energy (T0 = t0 E0 = E0 / 5) and t_min is
        absolute (Tmin = 0.01); if T0 <= Tmin the temperature stays at T0.
    p_flip, p_add : float, optional
        Move probabilities (0.9 and 0.05 by default): flip one bit, add a
        random column; the rest (0.05) removes a random column.  The seed
        names p1, p2, p3 without values.
    min_columns, max_columns : int, optional
        Width bounds for the add/remove moves.  Ours: both ``n_columns``, so
        the result has exactly the requested shape (add/remove moves are then
        never made).  Paper: ``max(1, n_columns // 2)`` and ``n_columns``
        (adding a column always lowers the energy, so an unbounded width only
        grows; the requested width is the cap).
    keep_best : bool, optional
        Return the lowest-energy state among the start and the ends of the
        temperatures (paper: True) instead of the final state (ours: False).
        With True the result's energy is never above the start's.
    repair : bool, optional
        Replace, at the end, each column equal or complementary to an earlier
        one by the random new column that raises the energy least (P3; ours:
        True, paper: False).
    start : array-like of shape (c, n), optional
        Start matrix instead of a random one (binary, no constant column).
    progress : callable or True, optional
        Called as ``progress(done_temps, n_temps, energy)`` after every block
        of temperatures; ``True`` prints a line to stderr.
    return_info : bool, default=False
        Also return a dict: ``energy_start``, ``energy`` (of the result),
        ``proposed`` and ``accepted`` move counts, ``T0`` and ``Tmin`` (the
        absolute temperatures used) and the resolved ``options``.

    Returns
    -------
    M : ndarray of int8, shape (c, n')
        Binary code, no constant column; ``n' = n`` unless the width bounds
        allow add/remove moves.
    info : dict
        Only with ``return_info=True``.

    Raises
    ------
    ValueError
        Unknown schedule, bad counts, temperatures or probabilities, a start
        matrix that is not binary with c rows and no constant column.

    Notes
    -----
    Energy ``E(M) = sum_{i<j} 1 / d(w_i, w_j)^2`` (equal codewords 4).
    A flip changes c - 1 pair distances by one, so its energy change is
    computed in O(c) from the maintained distance matrix; adding or removing
    a column changes every pair (O(c^2)).  Metropolis acceptance
    ``exp(-dE / T)``.  The seed gives T0 = E0 / 5 and Tmin = 0.01 without
    saying what energy scale they assume.  Read in absolute units (the
    ``"paper"`` schedule) nearly every move is accepted when c is large
    (|dE| ~ 1e-4 for c = 104, n = 100, against T >= 0.01), so the paper
    schedule is close to a random walk there and ``keep_best`` is what
    keeps its result no worse than the start; ours makes the temperatures
    relative to the mean pair energy and tries ``100 c`` moves per
    temperature.  Flips that would make a column constant are not proposed.

    References
    ----------
    Seed 003 (SA for ECOC text classifiers): energy as a system of charges,
    neighbour moves p1 / p2 / p3, T0 = f0 / 5, Tmin = 0.01, L0 = 30, N = 100.

    Examples
    --------
    >>> from edgecode.ecoc import annealed, check_properties
    >>> M = annealed(10, 12, random_state=0, n_temps=20)
    >>> M.shape, M.dtype, check_properties(M).p4
    ((10, 12), dtype('int8'), True)
    >>> P, info = annealed(10, 12, random_state=0, schedule="paper", return_info=True)
    >>> P.shape[0], 6 <= P.shape[1] <= 12, info["energy"] <= info["energy_start"]
    (10, True, True)
    """
    if not isinstance(schedule, str) or schedule not in SCHEDULES:
        raise ValueError(f"schedule must be one of {tuple(SCHEDULES)}; got {schedule!r}")
    opts = dict(SCHEDULES[schedule])
    for name, v in (("n_temps", n_temps), ("moves_per_temp", moves_per_temp), ("t0", t0),
                    ("t_min", t_min), ("p_flip", p_flip), ("p_add", p_add),
                    ("min_columns", min_columns), ("max_columns", max_columns),
                    ("keep_best", keep_best), ("repair", repair)):
        if v is not None:
            opts[name] = v
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
    n_temps = check_int(opts["n_temps"], name="n_temps", low=1)
    L = opts["moves_per_temp"]
    L = 100 * c if L == "100c" else check_int(L, name="moves_per_temp", low=1)
    width_default = {"n_columns": n, "half": max(1, n // 2)}
    lo, hi = opts["min_columns"], opts["max_columns"]
    lo = check_int(width_default.get(lo, lo) if isinstance(lo, str) else lo,
                   name="min_columns", low=1)
    hi = check_int(width_default.get(hi, hi) if isinstance(hi, str) else hi,
                   name="max_columns", low=n)
    if lo > n:
        raise ValueError(f"min_columns must be <= n_columns={n}; got {lo}")
    t0, t_min = opts["t0"], opts["t_min"]
    for name, v in (("t0", t0), ("t_min", t_min)):
        if not isinstance(v, Real) or isinstance(v, bool) or not (0 < v < math.inf):
            raise ValueError(f"{name} must be a positive finite number; got {v!r}")
    if schedule == "ours" and t_min > t0:
        raise ValueError(f"t_min must be <= t0; got t_min={t_min}, t0={t0}")
    p_flip, p_add = opts["p_flip"], opts["p_add"]
    for name, v in (("p_flip", p_flip), ("p_add", p_add)):
        if not isinstance(v, Real) or isinstance(v, bool) or not 0 <= v <= 1:   # NaN fails
            raise ValueError(f"{name} must be in [0, 1]; got {v!r}")
    if p_flip + p_add > 1:
        raise ValueError(f"p_flip + p_add must be <= 1; got {p_flip + p_add}")
    keep = opts["keep_best"]
    rep = opts["repair"]
    for name, v in (("keep_best", keep), ("repair", rep), ("return_info", return_info)):
        if not isinstance(v, (bool, np.bool_)):
            raise TypeError(f"{name} must be True or False; got {v!r}")
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
    if schedule == "ours":
        scale = E0 / len(iu[0])
        T_start, T_end = t0 * scale, t_min * scale
    else:
        T_start = t0 * E0
        T_end = min(float(t_min), T_start)
    T = np.array([T_start])
    cooling = (T_end / T_start) ** (1.0 / max(n_temps - 1, 1))
    ones = np.zeros(hi, np.int64)
    ones[:n] = M[:, :n].sum(axis=0)
    width = np.array([n], np.int64)
    energy = np.array([E0])
    state = np.array([rng.integers(0, 2 ** 63 - 1)], dtype=np.uint64)
    stats = np.zeros(2, np.int64)
    if keep:
        block = 1
    else:
        block = max(1, n_temps // 10) if progress is not None else n_temps
    best, best_e = M[:, :n].copy(), E0
    done = 0
    while done < n_temps:
        step = min(block, n_temps - done)
        _anneal(M, width, D, inv2, ones, T, step, L, cooling, float(p_flip), float(p_add),
                lo, state, energy, stats)
        done += step
        if keep:
            e = float(inv2[D[iu]].sum())            # exact, from the maintained distances
            energy[0] = e
            if e < best_e:
                best, best_e = M[:, :width[0]].copy(), e
        if progress is not None and (not keep or done % max(1, n_temps // 10) == 0
                                     or done == n_temps):
            progress(done, n_temps, float(energy[0]))
    out = best if keep else np.ascontiguousarray(M[:, :width[0]])
    if rep:
        out = _repair_columns(out, rng)
    if not return_info:
        return out
    info = {"energy_start": E0, "energy": code_energy(out), "proposed": int(stats[0]),
            "accepted": int(stats[1]), "T0": float(T_start), "Tmin": float(T_end),
            "options": {**opts, "moves_per_temp": L, "min_columns": lo, "max_columns": hi,
                        "schedule": schedule}}
    return out, info


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
