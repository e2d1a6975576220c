"""Seed 003 fidelity: the paper's annealing schedule, the transposed 104 x 100
distance experiment (small stand-in) and the three per-dichotomizer selection
measures against brute-force formulas."""

import math

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.naive_bayes import MultinomialNB

from edgecode.ecoc import ECOCClassifier, annealed, code_energy, distance_stats
from edgecode.ecoc.annealing import SCHEDULES
from edgecode.ecoc.feature_selection import feature_scores, select_top_k


def _energy_brute(M):
    M = np.asarray(M)
    e = 0.0
    for i in range(len(M)):
        for j in range(i + 1, len(M)):
            d = int((M[i] != M[j]).sum())
            e += 4.0 if d == 0 else 1.0 / d ** 2
    return e


def _start(c, n, seed):
    M = np.random.default_rng(seed).integers(0, 2, (c, n)).astype(np.int8)
    M[0] = 1 - M[1]                              # no constant column
    return M


# ---------------------------------------------------------------- paper schedule


def test_schedule_table_states_the_papers_parameters():
    p = SCHEDULES["paper"]
    assert (p["n_temps"], p["moves_per_temp"], p["t0"], p["t_min"]) == (100, 30, 0.2, 0.01)
    assert p["keep_best"] and not p["repair"] and p["p_flip"] + p["p_add"] < 1
    assert SCHEDULES["ours"]["moves_per_temp"] == "100c"


@pytest.mark.parametrize("c,n", [(6, 10), (20, 31), (40, 24)])
def test_paper_schedule_runs_reproducible_shapes_energy(c, n):
    S = _start(c, n, c)
    M, info = annealed(c, start=S, random_state=3, schedule="paper", return_info=True)
    assert M.shape[0] == c and max(1, n // 2) <= M.shape[1] <= n
    assert M.dtype == np.int8 and np.isin(M, (0, 1)).all()
    assert not (M == M[0]).all(axis=0).any()                 # no constant column
    # energy never worse than the start, and reported exactly
    assert info["energy"] <= info["energy_start"] + 1e-12
    assert_allclose(info["energy_start"], _energy_brute(S))
    assert_allclose(info["energy"], _energy_brute(M))
    assert info["proposed"] == 100 * 30
    assert_allclose(info["T0"], info["energy_start"] / 5)
    assert_allclose(info["Tmin"], min(0.01, info["energy_start"] / 5))
    M2 = annealed(c, start=S, random_state=3, schedule="paper")
    assert_array_equal(M, M2)
    # without a start: a random one, same seed same code
    assert_array_equal(annealed(c, n, random_state=5, schedule="paper"),
                       annealed(c, n, random_state=5, schedule="paper"))


def test_paper_schedule_fixed_width_and_overrides():
    S = _start(12, 16, 1)
    M, info = annealed(12, start=S, random_state=0, schedule="paper", min_columns=16,
                       max_columns=16, moves_per_temp=50, n_temps=7, return_info=True)
    assert M.shape == (12, 16) and info["proposed"] == 350
    assert info["options"]["min_columns"] == 16 and info["options"]["schedule"] == "paper"
    # keep_best=False returns the last state, which may be worse than the start
    _, last = annealed(12, start=S, random_state=0, schedule="paper", keep_best=False,
                       return_info=True)
    assert last["options"]["keep_best"] is False


def test_paper_schedule_width_moves_happen():
    # add/remove moves are on: adding a column always lowers the energy, so
    # with room above n the width grows; it never leaves the bounds
    for s in range(4):
        M = annealed(10, 20, random_state=s, schedule="paper", max_columns=30)
        assert 20 < M.shape[1] <= 30
        assert_allclose(code_energy(M), _energy_brute(M))
    seen = []
    annealed(10, 20, random_state=0, schedule="paper", keep_best=False, p_flip=0.0,
             p_add=0.5, progress=lambda d, t, e: seen.append(e))
    assert len(seen) == 10 and len(set(seen)) > 1


def test_ours_default_unchanged_by_the_new_options():
    S = _start(30, 40, 0)
    a = annealed(30, start=S, random_state=0, n_temps=30)
    b = annealed(30, start=S, random_state=0, n_temps=30, schedule="ours", keep_best=False,
                 repair=True, min_columns=40, max_columns=40)
    assert_array_equal(a, b)
    c, info = annealed(30, start=S, random_state=0, n_temps=30, return_info=True)
    assert_array_equal(a, c)
    assert info["proposed"] == 30 * 100 * 30 and info["energy"] < info["energy_start"]
    # keep_best with our schedule: never above the start either
    d, info = annealed(30, start=S, random_state=0, n_temps=30, keep_best=True, repair=False,
                       return_info=True)
    assert info["energy"] <= info["energy_start"]
    assert_allclose(code_energy(d), info["energy"])


def test_schedule_errors():
    with pytest.raises(ValueError, match="schedule must be one of"):
        annealed(5, schedule="fast")
    with pytest.raises(TypeError, match="keep_best must be True or False"):
        annealed(5, keep_best=1)
    with pytest.raises(TypeError, match="repair must be True or False"):
        annealed(5, schedule="paper", repair="no")
    with pytest.raises(ValueError, match="t0 must be a positive"):
        annealed(5, schedule="paper", t0=-1.0)
    # paper: T0 below Tmin is allowed (held at T0), ours refuses t_min > t0
    annealed(5, 4, schedule="paper", t0=1e-6, random_state=0)
    with pytest.raises(ValueError, match="t_min must be <= t0"):
        annealed(5, t0=0.01, t_min=0.1)


def test_transposed_experiment_small():
    # the 104 x 100 experiment's shape logic on a small code: c codewords of
    # n bits; annealing pulls the mean towards the balanced maximum
    # n * ceil(c/2) * floor(c/2) / (c (c-1) / 2) and shrinks the spread
    c, n = 26, 20
    S = _start(c, n, 7)
    M = annealed(c, start=S, random_state=0)
    top = n * math.ceil(c / 2) * (c // 2) / (c * (c - 1) / 2)
    _, m0, s0, _ = distance_stats(S)
    mn, m1, s1, _ = distance_stats(M)
    assert m1 <= top + 1e-9 and m1 > m0 - 0.5 and s1 < s0
    assert top - m1 < 0.2


# ---------------------------------------------------------------- selection measures


def _brute(X, target, measure):
    """Per term, from the 2 x S contingency table counted with loops."""
    X = np.asarray(X)
    syms = sorted(set(target.tolist()))
    N = len(target)
    out = []
    for t in range(X.shape[1]):
        tab = np.zeros((2, len(syms)))
        for i in range(N):
            tab[0 if X[i, t] != 0 else 1, syms.index(target[i])] += 1
        if measure == "delta":
            best = 0.0
            for k in range(len(syms)):
                rest = N - tab[:, k].sum()
                a = tab[0, k] / tab[:, k].sum() if tab[:, k].sum() else 0.0
                b = (tab[0].sum() - tab[0, k]) / rest if rest else 0.0
                best = max(best, abs(a - b))
                if len(syms) == 2:
                    best = abs(a - b)            # the positive superclass (symbol 1) vs rest
            out.append(best)
            continue
        if measure == "chi2" and len(syms) == 2:
            # closed form of Pearson's chi-square for a 2 x 2 table
            A, B = tab[0, 1], tab[0, 0]
            C, D = tab[1, 1], tab[1, 0]
            den = (A + C) * (B + D) * (A + B) * (C + D)
            out.append(N * (A * D - C * B) ** 2 / den if den else 0.0)
            continue
        if measure == "chi2":
            s = 0.0
            for a in range(2):
                for k in range(len(syms)):
                    e = tab[a].sum() * tab[:, k].sum() / N
                    s += (tab[a, k] - e) ** 2 / e if e else 0.0
            out.append(s)
            continue
        # information gain = H(S) - H(S | presence), nats
        def H(p):
            p = p[p > 0]
            return -(p * np.log(p)).sum()
        hs = H(tab.sum(axis=0) / N)
        cond = sum(tab[a].sum() / N * H(tab[a] / tab[a].sum()) for a in range(2)
                   if tab[a].sum())
        out.append(hs - cond)
    return np.array(out)


@pytest.mark.parametrize("measure", ["chi2", "delta", "ig"])
@pytest.mark.parametrize("n_sym", [2, 3])
def test_selection_measures_match_brute_force(measure, n_sym):
    rng = np.random.default_rng(n_sym)
    X = (rng.random((40, 12)) < rng.random(12)).astype(float) * rng.integers(1, 4, (40, 12))
    X[:, 3] = 0                                   # a term in no document
    X[:, 4] = 1                                   # a term in every document
    target = rng.integers(0, n_sym, 40)
    X[:, 5] = target == 1                         # a perfectly discriminant term
    got = feature_scores(X, target, measure)
    assert_allclose(got, _brute(X, target, measure), atol=1e-12)
    assert_allclose(feature_scores(sp.csr_matrix(X), target, measure), got, atol=1e-12)
    assert got[3] == 0 and got[4] == 0 and np.argmax(got) == 5
    k = 4
    order = np.argsort(-got, kind="stable")[:k]
    assert_array_equal(select_top_k(X, target, measure, k), np.sort(order))


def test_delta_is_the_papers_difference_of_document_rates():
    # paper eq. 8: delta(t, c) = #(t, c)/|c| - #(t, not c)/|not c|; ranked by |delta|
    X = np.array([[1, 0, 1], [1, 0, 0], [0, 1, 0], [0, 1, 1], [0, 0, 1]])
    pos = np.array([1, 1, 0, 0, 0])
    assert_allclose(feature_scores(X, pos, "delta"), [1.0, 2 / 3, abs(1 / 2 - 2 / 3)])


def test_ecoc_per_dichotomizer_selection_uses_each_columns_split():
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(4), 15)
    X = (rng.random((60, 30)) < 0.2).astype(float)
    X[:, :4] += np.eye(4)[y]                      # term j marks class j
    code = np.array([[0, 0, 1], [0, 1, 0], [1, 0, 0], [1, 1, 1]], np.int8)
    for measure in ("chi2", "delta", "ig"):
        clf = ECOCClassifier(MultinomialNB(), code=code, feature_selection=(measure, 5))
        clf.fit(X, y)
        for j, idx in enumerate(clf.feature_indices_):
            assert_array_equal(idx, select_top_k(X, code[y, j], measure, 5))
        assert clf.score(X, y) > 0.6
