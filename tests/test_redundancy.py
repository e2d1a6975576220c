from fractions import Fraction
from math import comb

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from numpy.testing import assert_allclose, assert_array_equal

from edgecode.datasets import load_house_votes
from edgecode.naive_bayes import BinaryNaiveBayes
from edgecode.redundancy import (allocate_greedy, allocate_uniform, mean_scp,
                                 repetition_error)

from naive import scp_bruteforce


def _tail_exact(eps, r):
    """Majority failure of 2r+1 copies in exact rational arithmetic."""
    e = Fraction(eps)
    m = 2 * r + 1
    return float(sum(comb(m, i) * e**i * (1 - e) ** (m - i) for i in range(r + 1, m + 1)))


@given(st.floats(0, 0.4999), st.integers(0, 30))
@settings(max_examples=200, deadline=None)
def test_repetition_error_matches_exact_binomial_tail(eps, r):
    assert_allclose(repetition_error(eps, r), _tail_exact(eps, r), rtol=1e-9, atol=1e-300)


def test_repetition_error_closed_forms_and_large_r():
    assert repetition_error(0.2, 0) == pytest.approx(0.2)
    assert repetition_error(0.1, 1) == pytest.approx(3 * 0.01 * 0.9 + 0.001)
    assert repetition_error(0.0, 5) == 0.0
    # large r and tiny eps: no underflow to garbage, monotone decreasing in r
    vals = repetition_error(0.2, np.arange(0, 400, 50))
    assert np.all(np.diff(vals) < 0) and np.all(vals > 0)
    tiny = repetition_error(1e-3, np.arange(0, 400, 50))  # underflows to 0, never negative
    assert np.all(np.diff(tiny) <= 0) and np.all(tiny >= 0)
    assert_allclose(repetition_error(1e-3, 50), _tail_exact(1e-3, 50), rtol=1e-9)
    # vectorised broadcast
    assert repetition_error([0.1, 0.2], [[0], [1]]).shape == (2, 2)


@pytest.mark.parametrize("eps, r, match", [(0.5, 1, r"eps must be in \[0, 0.5\)"),
                                           (-0.1, 1, "eps"), (np.nan, 1, "eps"),
                                           (0.1, -1, "r must be >= 0"),
                                           (0.1, 1.5, "integers")])
def test_repetition_error_bad_input(eps, r, match):
    with pytest.raises(ValueError, match=match):
        repetition_error(eps, r)


def test_allocate_uniform_spreads_evenly():
    assert_array_equal(allocate_uniform(4, 0), [0, 0, 0, 0])
    assert_array_equal(allocate_uniform(4, 8), [1, 1, 1, 1])
    assert_array_equal(allocate_uniform(4, 14), [2, 2, 2, 1])
    for n in range(1, 9):
        for b in range(0, 60, 2):
            r = allocate_uniform(n, b)
            assert r.sum() * 2 == b and r.max() - r.min() <= 1
    with pytest.raises(ValueError, match="budget_bits must be even"):
        allocate_uniform(3, 5)
    with pytest.raises(ValueError, match="budget_bits must be >= 0"):
        allocate_uniform(3, -2)


def _greedy_reference(margin, deltas, eps, units):
    """Algorithm 2 with brute-force SCP: try every feature, keep the best mean."""
    n = deltas.shape[1]
    r = np.zeros(n, int)
    for _ in range(units):
        best, best_j = -1.0, -1
        for j in range(n):
            trial = r.copy()
            trial[j] += 1
            v = scp_bruteforce(margin, deltas, repetition_error(eps, trial)).mean()
            if v > best + 1e-13:
                best, best_j = v, j
        r[best_j] += 1
    return r, best


@pytest.mark.parametrize("seed", range(5))
def test_greedy_matches_bruteforce_reference(seed):
    rng = np.random.default_rng(seed)
    t, n = 6, 7
    margin = rng.normal(0, 1.5, t)
    deltas = rng.normal(0, 2, (t, n))
    eps = rng.uniform(0.05, 0.3, n)
    plan = allocate_greedy(margin, deltas, eps, budget_bits=10, method="exact")
    r_ref, v_ref = _greedy_reference(margin, deltas, eps, 5)
    assert_array_equal(plan.repetitions, r_ref)
    assert plan.mean_scp == pytest.approx(v_ref, abs=1e-12)
    assert len(plan.history) == 5 and plan.total_bits == n + 10
    # each history entry is the mean SCP of the plan so far
    assert plan.history[-1][1] == pytest.approx(plan.mean_scp)


def test_greedy_beats_uniform_on_house_votes_and_is_reproducible():
    d = load_house_votes()
    nb = BinaryNaiveBayes().fit(d.X, d.y)
    margin, deltas = nb.decision_function(d.X), nb.flip_deltas(d.X)
    plan = allocate_greedy(margin, deltas, 0.2, 32, method="exact")
    uni = mean_scp(margin, deltas, 0.2, allocate_uniform(16, 32), method="exact")
    assert plan.repetitions.sum() == 16
    assert 1 - plan.mean_scp < 1 - uni  # the seed's Table II: the plan helps
    again = allocate_greedy(margin, deltas, 0.2, 32, method="exact")
    assert_array_equal(plan.repetitions, again.repetitions)
    # the bounds planner certifies its objective: lower bound <= exact mean SCP
    m, D = margin[:80], deltas[:80]
    pb = allocate_greedy(m, D, 0.2, 4, method="bounds")
    assert pb.mean_scp <= mean_scp(m, D, 0.2, pb.repetitions, "exact") + 1e-12


def test_greedy_progress_and_errors():
    margin, deltas = np.array([1.0]), np.array([[-2.0, -0.1]])
    seen = []
    allocate_greedy(margin, deltas, 0.1, 4, method="exact",
                    progress=lambda *a: seen.append(a))
    assert [s[0] for s in seen] == [1, 2] and all(s[1] == 2 for s in seen)
    with pytest.raises(ValueError, match="method must be one of"):
        allocate_greedy(margin, deltas, 0.1, 4, method="magic")
    with pytest.raises(ValueError, match="budget_bits must be even"):
        allocate_greedy(margin, deltas, 0.1, 3)
    with pytest.raises(ValueError, match=r"eps\[1\] must be in \[0, 0.5\)"):
        allocate_greedy(margin, deltas, [0.1, 0.7], 2)
    with pytest.raises(ValueError, match="deltas must have one row per margin"):
        allocate_greedy(margin, np.zeros((2, 2)), 0.1, 2)


def test_noiseless_features_get_no_units():
    margin, deltas = np.array([0.5, -0.5]), np.array([[-1.0, -1.0], [1.0, 1.0]])
    plan = allocate_greedy(margin, deltas, [0.0, 0.2], 6, method="exact")
    assert_array_equal(plan.repetitions, [0, 3])
