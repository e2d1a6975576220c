"""The redundancy planner at scale: influences, lazy greedy, grid engine, certificates.

References: finite differences of ``scp_exact`` (the change probability is
multilinear in eps, so a secant is the derivative), the evaluate-every-candidate
greedy of Algorithm 2 with exact SCP, brute-force enumeration, and an
independent numpy Monte Carlo for large n.
"""

import warnings

import numba
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from numpy.testing import assert_allclose, assert_array_equal

from edgecode.datasets import load_dna, load_house_votes, load_nltcs
from edgecode.naive_bayes import BinaryNaiveBayes
from edgecode.redundancy import (PlanningCostWarning, allocate_greedy, allocate_uniform,
                                 certify_plan, estimate_plan_seconds, influences, mean_scp,
                                 repetition_error)
from edgecode.redundancy import greedy as greedy_mod
from edgecode.redundancy.greedy import SCP_METHODS, _greedy_by_evaluation
from edgecode.scp import scp_exact

from naive import scp_bruteforce


def _nb_case(name):
    if name == "house_votes":
        d = load_house_votes()
        nb = BinaryNaiveBayes().fit(d.X, d.y)
        return nb.decision_function(d.X), nb.flip_deltas(d.X)
    d = load_nltcs()
    nb = BinaryNaiveBayes().fit(d.subset("train").X, d.subset("train").y)
    X = d.subset("test").X[:800]
    return nb.decision_function(X), nb.flip_deltas(X)


def _synthetic_nb(n, t, seed):
    """Margins and flip effects of a naive Bayes fitted on synthetic binary data."""
    rng = np.random.default_rng(seed)
    p0 = rng.beta(1, 3, n)
    p1 = np.clip(p0 + rng.normal(0, 0.08, n), 0.01, 0.99)
    y = rng.integers(0, 2, 1500 + t)
    X = (rng.random((len(y), n)) < np.where(y[:, None] == 1, p1, p0)).astype(np.uint8)
    nb = BinaryNaiveBayes().fit(X[:1500], y[:1500])
    return nb.decision_function(X[1500:]), nb.flip_deltas(X[1500:])


def _secant_influences(margin, deltas, eps):
    """d change / d eps_j as a secant of scp_exact between eps_j = 0 and 0.4 (exact: multilinear)."""
    out = np.empty(deltas.shape)
    for j in range(deltas.shape[1]):
        lo, hi = eps.copy(), eps.copy()
        lo[j], hi[j] = 0.0, 0.4
        out[:, j] = (scp_exact(margin, deltas, hi, return_change=True)
                     - scp_exact(margin, deltas, lo, return_change=True)) / 0.4
    return out


# ---------------------------------------------------------------- influences

@given(st.integers(1, 11), st.integers(1, 6), st.integers(0, 10 ** 6))
@settings(max_examples=60, deadline=None)
def test_exact_influences_are_the_derivative(n, t, seed):
    rng = np.random.default_rng(seed)
    margin = rng.normal(0, 2, t)
    deltas = rng.normal(0, 1.5, (t, n)) * (rng.random((t, n)) < 0.85)  # some exact zeros
    eps = rng.uniform(0, 0.49, n) * (rng.random(n) < 0.9)               # some eps == 0
    r = influences(margin, deltas, eps, method="exact")
    assert_allclose(r.change, scp_exact(margin, deltas, eps, return_change=True), atol=1e-13)
    assert_allclose(r.influence, _secant_influences(margin, deltas, eps), atol=1e-12)


def test_exact_influences_on_integer_ties_match_bruteforce():
    # integer flip effects: sums hit the threshold exactly, S = 0 is class 0
    rng = np.random.default_rng(3)
    for _ in range(30):
        t, n = 4, 6
        margin = rng.integers(-3, 4, t).astype(float)
        deltas = rng.integers(-3, 4, (t, n)).astype(float)
        eps = rng.uniform(0.05, 0.45, n)
        r = influences(margin, deltas, eps, method="exact")
        for j in range(n):
            lo, hi = eps.copy(), eps.copy()
            lo[j], hi[j] = 0.0, 0.3
            sec = (scp_bruteforce(margin, deltas, lo) - scp_bruteforce(margin, deltas, hi)) / 0.3
            assert_allclose(r.influence[:, j], sec, atol=1e-12)


def test_grid_influences_converge_to_exact():
    rng = np.random.default_rng(7)
    t, n = 25, 14
    margin = rng.normal(0, 2, t)
    deltas = rng.normal(0, 1.2, (t, n))
    eps = rng.uniform(0.02, 0.45, n)
    ex = influences(margin, deltas, eps, method="exact")
    errs = []
    for res in (512, 4096, 32768):
        g = influences(margin, deltas, eps, method="grid", resolution=res)
        errs.append(np.abs(g.influence.mean(0) - ex.influence.mean(0)).max())
        assert np.abs(g.change - ex.change).max() < 0.02
    assert errs[2] < 2e-4 and errs[2] < errs[0]


def test_influence_hand_case_and_auto_method():
    r = influences([1.0], [[-2.0, 2.0]], [0.1, 0.2])
    assert r.method == "exact"
    assert_allclose(r.influence, [[0.8, -0.1]], atol=1e-15)   # change = e0 (1 - e1)
    g = influences([1.0], [[-2.0, 2.0]], [0.1, 0.2], method="grid")
    assert_allclose(g.influence, [[0.8, -0.1]], atol=2e-3)
    assert influences(np.zeros(2), np.ones((2, 21)), 0.1).method == "grid"


# ---------------------------------------------------------------- greedy: exact engine

def _reference_greedy(margin, deltas, eps, units):
    """Algorithm 2 as written: every candidate scored by a full exact SCP evaluation."""
    r, history, value, _ = _greedy_by_evaluation(
        margin, deltas, np.broadcast_to(eps, deltas.shape[1]).copy(), units, None,
        SCP_METHODS["exact"], {})
    return r, history, value


@pytest.mark.parametrize("data", ["house_votes", "nltcs"])
@pytest.mark.parametrize("eps", [0.2, 0.03])
def test_exact_planner_equals_algorithm_2(data, eps):
    margin, deltas = _nb_case(data)
    n = deltas.shape[1]
    for units in (5, n, 2 * n):
        r_ref, _, v_ref = _reference_greedy(margin, deltas, eps, units)
        plan = allocate_greedy(margin, deltas, eps, 2 * units, method="exact")
        ours = mean_scp(margin, deltas, eps, plan.repetitions, "exact")
        assert abs(ours - v_ref) <= 1e-12, (units, plan.repetitions, r_ref)
        assert plan.scp_lower == plan.scp_upper == pytest.approx(ours, abs=1e-14)
        assert plan.certified_by == "exact" and plan.method == "exact"


# ---------------------------------------------------------------- greedy: grid engine

@pytest.mark.parametrize("data", ["house_votes", "nltcs"])
@pytest.mark.parametrize("eps", [0.2, 0.03])
def test_grid_planner_within_1e4_of_exact_greedy(data, eps):
    margin, deltas = _nb_case(data)
    n = deltas.shape[1]
    for units in (5, n, 2 * n):
        exact = allocate_greedy(margin, deltas, eps, 2 * units, method="exact")
        grid = allocate_greedy(margin, deltas, eps, 2 * units, method="grid")
        assert grid.method == "grid" and grid.certified_by == "exact"
        assert abs(grid.scp_lower - exact.scp_lower) <= 1e-4, units
        # the grid's own estimate is close to the certified value of its plan
        assert abs(grid.mean_scp - grid.scp_lower) <= 2e-3


@pytest.mark.parametrize("seed", range(6))
def test_grid_planner_within_1e4_of_exact_greedy_random(seed):
    rng = np.random.default_rng(seed)
    t, n = 40, int(rng.integers(6, 16))
    margin = rng.normal(0, 2.0, t)
    deltas = rng.normal(0, 1.0, (t, n)) * rng.uniform(0.2, 1.5, n)
    eps = rng.uniform(0.02, 0.4, n)
    units = int(rng.integers(1, 2 * n))
    exact = allocate_greedy(margin, deltas, eps, 2 * units, method="exact")
    grid = allocate_greedy(margin, deltas, eps, 2 * units, method="grid")
    assert abs(grid.scp_lower - exact.scp_lower) <= 1e-4


def test_lazy_evaluation_gives_the_eager_plan(monkeypatch):
    margin, deltas = _synthetic_nb(60, 50, 1)
    lazy = allocate_greedy(margin, deltas, 0.2, 120, method="grid", certify=False)
    monkeypatch.setattr(greedy_mod, "_LAZY", False)
    eager = allocate_greedy(margin, deltas, 0.2, 120, method="grid", certify=False)
    assert_array_equal(lazy.repetitions, eager.repetitions)
    assert [h[0] for h in lazy.history] == [h[0] for h in eager.history]
    assert lazy.stats["influence_columns"] < eager.stats["influence_columns"]


def test_results_do_not_depend_on_the_thread_count():
    margin, deltas = _synthetic_nb(80, 60, 2)
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = allocate_greedy(margin, deltas, 0.15, 100, method="grid")
        numba.set_num_threads(max(2, before) if numba.config.NUMBA_NUM_THREADS > 1 else 1)
        two = allocate_greedy(margin, deltas, 0.15, 100, method="grid")
    finally:
        numba.set_num_threads(before)
    assert_array_equal(one.repetitions, two.repetitions)
    assert one.history == two.history
    assert (one.scp_lower, one.scp_upper) == (two.scp_lower, two.scp_upper)


def test_large_n_plan_against_independent_monte_carlo():
    """n = 300: the certified interval and the grid estimate agree with a numpy Monte Carlo."""
    margin, deltas = _synthetic_nb(300, 40, 3)
    plan = allocate_greedy(margin, deltas, 0.2, 600, method="grid")
    assert plan.certified_by == "bounds"
    assert plan.scp_lower <= plan.scp_upper
    rng = np.random.default_rng(0)
    trials, kept = 20000, 0
    pos = margin > 0
    for _ in range(trials // 2000):
        flips = rng.random((2000, deltas.shape[1])) < plan.effective_eps
        kept += ((margin[None, :] + flips @ deltas.T > 0) == pos).sum()
    mc = kept / (trials * len(margin))
    half = 4.0 * np.sqrt(mc * (1 - mc) / (trials * len(margin))) + 1e-12
    assert plan.scp_lower - half <= mc <= plan.scp_upper + half
    assert abs(plan.mean_scp - mc) <= half + 2e-3
    # and the plan beats spreading the same budget evenly, by a wide margin
    uniform = repetition_error(np.full(300, 0.2), allocate_uniform(300, 600))
    lo_u, up_u, _ = certify_plan(margin, deltas, uniform)
    assert 1 - plan.scp_upper < 0.7 * (1 - up_u)


def test_real_data_n180_against_monte_carlo_and_a_normal_greedy():
    """DNA (bundled, 180 features): certified interval and estimate vs an independent Monte
    Carlo, and the plan is at least as good as a normal-approximation greedy's."""
    from scipy.special import ndtr
    d = load_dna()
    nb = BinaryNaiveBayes().fit(d.X, d.y)
    X = d.X[::8]                                   # 399 planning points
    margin, deltas = nb.decision_function(X), nb.flip_deltas(X)
    eps, units = 0.05, 40
    plan = allocate_greedy(margin, deltas, eps, 2 * units)
    assert plan.method == "grid" and plan.certified_by == "bounds"
    # independent check: numpy Monte Carlo of the plan's effective channel
    rng = np.random.default_rng(5)
    pos, kept, trials = margin > 0, 0, 20000
    for _ in range(trials // 2000):
        flips = rng.random((2000, deltas.shape[1])) < plan.effective_eps
        kept += ((margin[None, :] + flips @ deltas.T > 0) == pos).sum()
    mc = kept / (trials * len(margin))
    half = 4.0 * np.sqrt(mc * (1 - mc) / (trials * len(margin)))
    assert plan.scp_lower - half <= mc <= plan.scp_upper + half
    # a normal-approximation greedy (the numpy peer of benchmarks/bench_planner.py)
    sgn = np.where(margin > 0, 1.0, -1.0)
    thr, D = -sgn * margin, sgn[:, None] * deltas
    r, e = np.zeros(D.shape[1], int), np.full(D.shape[1], eps)
    for _ in range(units):
        mq = (D @ e)[:, None] - e * D
        sq = np.sqrt(np.maximum(((D * D) @ (e * (1 - e)))[:, None] - e * (1 - e) * D * D, 1e-12))
        infl = ndtr((thr[:, None] - D - mq) / sq) - ndtr((thr[:, None] - mq) / sq)
        j = int(np.argmax((e - repetition_error(eps, r + 1)) * infl.mean(axis=0)))
        r[j] += 1
        e[j] = repetition_error(eps, r[j])
    lo_n, up_n, _ = certify_plan(margin, deltas, e)
    assert 1 - plan.scp_upper <= 1 - lo_n     # not worse than the peer's plan, certified


def test_noiseless_and_irrelevant_features_get_nothing():
    margin = np.array([0.5, -0.5, 0.2])
    deltas = np.array([[-1.0, 0.0, -0.6], [1.0, 0.0, 0.7], [-0.3, 0.0, -0.4]])
    for method in ("exact", "grid"):
        plan = allocate_greedy(margin, deltas, [0.0, 0.2, 0.2], 8, method=method)
        assert plan.repetitions[0] == 0 and plan.repetitions[1] == 0
        assert plan.repetitions.sum() == 4


# ---------------------------------------------------------------- usability

def test_progress_history_and_stats():
    margin, deltas = _nb_case("house_votes")
    seen = []
    plan = allocate_greedy(margin, deltas, 0.2, 12, progress=lambda *a: seen.append(a))
    assert [s[0] for s in seen] == list(range(1, 7)) and all(s[1] == 6 for s in seen)
    assert [s[2] for s in seen] == [h[0] for h in plan.history]
    assert plan.history[-1][1] == pytest.approx(plan.mean_scp, abs=1e-12)
    assert plan.stats["influence_columns"] <= plan.stats["eager_columns"]
    assert plan.stats["plan_seconds"] >= 0 and plan.stats["certify_seconds"] >= 0


def test_cost_warning(monkeypatch):
    margin, deltas = _nb_case("house_votes")
    assert estimate_plan_seconds(500, 4096, 4096, "grid") > estimate_plan_seconds(
        500, 1024, 1024, "grid") > estimate_plan_seconds(500, 64, 64, "grid")
    assert estimate_plan_seconds(500, 1000, 1000, "bounds") > 3600
    monkeypatch.setattr(greedy_mod, "PLAN_WARN_SECONDS", 0.0)
    with pytest.warns(PlanningCostWarning, match=r"expected to take about"):
        allocate_greedy(margin[:10], deltas[:10], 0.2, 2)
    monkeypatch.setattr(greedy_mod, "PLAN_WARN_SECONDS", 1e9)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        allocate_greedy(margin[:10], deltas[:10], 0.2, 2)


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(margin=np.zeros(0), deltas=np.zeros((0, 3))), ValueError, "t = 0"),
    (dict(margin=[np.nan, 1.0]), ValueError, r"margin\[0\] must be finite"),
    (dict(margin=[np.inf, 1.0]), ValueError, r"margin\[0\] must be finite"),
    (dict(budget_bits=5), ValueError, "budget_bits must be even"),
    (dict(budget_bits=-2), ValueError, "budget_bits must be >= 0"),
    (dict(eps=0.5), ValueError, r"eps must be in \[0, 0.5\)"),
    (dict(eps=[0.1, 0.1]), ValueError, "shape"),
    (dict(deltas=np.zeros((2, 3))), ValueError, "cannot be spent"),
    (dict(eps=0.0), ValueError, "cannot be spent"),
    (dict(method="magic"), ValueError, "method must be one of"),
    (dict(method="grid", resolution=1000), ValueError, "power of two"),
    (dict(method="grid", resolution=8), ValueError, "resolution must be >= 16"),
    (dict(certify="yes"), TypeError, "certify must be True or False"),
])
def test_bad_input_gets_one_clear_error(kwargs, exc, match):
    args = dict(margin=[1.0, -0.5], deltas=[[-2.0, 0.5, 1.0], [1.0, 1.0, -0.3]], eps=0.1,
                budget_bits=4)
    args.update(kwargs)
    with pytest.raises(exc, match=match):
        allocate_greedy(args.pop("margin"), args.pop("deltas"), args.pop("eps"),
                        args.pop("budget_bits"), **args)


def test_exact_method_refuses_large_n():
    with pytest.raises(ValueError, match="method='grid'"):
        allocate_greedy(np.ones(2), np.ones((2, 40)), 0.1, 2, method="exact")
