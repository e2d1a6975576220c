"""Issue 24, ``edgecode.redundancy``: sizes priced before anything is allocated,
a planner that stops early (and says why) when its budget can no longer change
the SCP, no memory proportional to a budget beyond any useful plan, estimates
that count only useful steps, and plans that stop on Ctrl-C."""

import numpy as np
import pytest
from numpy.testing import assert_array_equal

import edgecode._config as config
from edgecode.datasets import load_house_votes
from edgecode.naive_bayes import BinaryNaiveBayes
from edgecode.redundancy import (allocate_greedy, allocate_uniform, estimate_plan_seconds,
                                 max_useful_units, repetition_error)
from edgecode.redundancy import greedy as greedy_mod

from interrupt import SETUP_RNG, run_and_interrupt


def _house():
    d = load_house_votes()
    nb = BinaryNaiveBayes().fit(d.X, d.y)
    return nb.decision_function(d.X), nb.flip_deltas(d.X)


def test_allocate_uniform_refuses_a_huge_feature_count_before_allocating():
    with pytest.raises(ValueError, match=r"n_features=1000000000000: .* needs "
                                         r"8,000,000,000,000 bytes .*MAX_ALLOCATION_BYTES"):
        allocate_uniform(10 ** 12, 4)
    with pytest.raises(ValueError, match=r"budget_bits=1606\d+ is too large"):
        allocate_uniform(4, 2 ** 200)
    assert_array_equal(allocate_uniform(4, 2 ** 62), [2 ** 59] * 4)


def test_a_budget_whose_useful_plan_is_huge_is_refused_naming_it():
    # at eps = 0.4999 a unit gains so little that ~9e8 units per feature stay useful:
    # the history of such a plan would not fit, and the call says so before planning
    margin, deltas = np.array([1.0, -1.0]), np.array([[-2.0, 0.5], [1.5, 1.0]])
    with pytest.raises(ValueError, match=r"budget_bits=1000000000000: the plan's history .* "
                                         r"needs [\d,]+ bytes .*MAX_ALLOCATION_BYTES"):
        allocate_greedy(margin, deltas, 0.4999, 10 ** 12, method="exact")


@pytest.mark.parametrize("budget", [10 ** 6, 2 ** 62])
def test_greedy_stops_early_when_the_budget_cannot_change_the_scp(budget):
    """The issue's calls: both used to run for hours (10**6) or forever (2**62)."""
    margin, deltas = _house()
    seen = []
    plan = allocate_greedy(margin, deltas, 0.2, budget, progress=lambda *a: seen.append(a))
    steps = len(plan.history)
    assert plan.stopped_early and plan.stop_reason in (greedy_mod.STOP_ZERO,
                                                       greedy_mod.STOP_ROUNDING)
    cap = int(max_useful_units(np.full(16, 0.2)).sum())
    assert 0 < steps <= cap < 2000 and plan.stats["max_useful_units"] == cap
    assert plan.repetitions.sum() == steps
    assert plan.unused_bits == budget - 2 * steps and plan.budget_bits == budget
    assert plan.total_bits == 16 + 2 * steps
    assert 1 - plan.mean_scp < 1e-13
    # progress counts against the steps any plan can take, not the budget
    assert seen[-1][0] == steps and all(s[1] == min(budget // 2, cap) for s in seen)
    # the same plan as with a budget that it spends exactly
    again = allocate_greedy(margin, deltas, 0.2, 2 * steps)
    assert_array_equal(again.repetitions, plan.repetitions)
    assert again.unused_bits == 0 and again.stop_reason is None


def test_greedy_stops_when_no_unit_raises_the_scp():
    # S = 1, D = (-2, +2): SCP = 1 - eps_0 (1 - eps_1); protecting feature 1 lowers it
    plan = allocate_greedy([1.0], [[-2.0, 2.0]], [0.1, 0.2], 10 ** 9, method="exact")
    assert plan.repetitions[1] == 0 and plan.stopped_early
    assert plan.unused_bits == 10 ** 9 - 2 * plan.repetitions[0]
    for method in ("grid", "bounds", "approx"):
        p = allocate_greedy([1.0], [[-2.0, 2.0]], [0.1, 0.2], 10 ** 6, method=method)
        assert p.stopped_early and p.repetitions[1] == 0, method
    # feature 0 noiseless: the SCP is already 1, nothing is spent
    p = allocate_greedy([1.0], [[-2.0, 2.0]], [0.0, 0.2], 8, method="exact")
    assert p.repetitions.tolist() == [0, 0] and p.stop_reason == greedy_mod.STOP_ZERO
    assert p.unused_bits == 8 and p.history == []
    # the three reasons, by the rule itself
    assert greedy_mod._stop(1.0, 0.1) == greedy_mod.STOP_ZERO
    assert greedy_mod._stop(0.9, 0.0) == greedy_mod.STOP_NO_GAIN
    assert greedy_mod._stop(0.9, -1e-3) == greedy_mod.STOP_NO_GAIN
    assert greedy_mod._stop(0.9, 1e-17) == greedy_mod.STOP_ROUNDING
    assert greedy_mod._stop(0.9, 1e-16) is None


def test_a_spent_budget_is_not_marked_as_stopped():
    margin, deltas = _house()
    plan = allocate_greedy(margin, deltas, 0.2, 32)
    assert plan.stop_reason is None and plan.unused_bits == 0 and not plan.stopped_early


def test_max_useful_units_bounds_the_steps():
    assert max_useful_units([0.2, 0.01, 0.0]).tolist() == [78, 11, 0]
    assert max_useful_units([0.3, 0.3], useful=[True, False]).tolist() == [
        int(max_useful_units([0.3])[0]), 0]
    # a unit beyond the cap gains less than a quarter of the spacing of the SCP
    for e in (0.05, 0.2, 0.45):
        r = int(max_useful_units([e])[0])
        assert repetition_error(e, r) <= np.spacing(0.5) / 4 < repetition_error(e, r - 1)


def test_plan_estimate_counts_the_useful_steps_only():
    # the case of the issue: 5e8 units on house votes used to be estimated at 2.5e7 s
    assert estimate_plan_seconds(435, 16, 5 * 10 ** 8, "exact", eps=0.2) < 60
    assert estimate_plan_seconds(435, 16, 5 * 10 ** 8, "exact") > 10 ** 5
    assert estimate_plan_seconds(500, 1000, 1000, "grid", extra_scores=2) > \
        estimate_plan_seconds(500, 1000, 1000, "grid")


def test_engine_state_is_priced_before_allocating(monkeypatch):
    margin, deltas = _house()
    monkeypatch.setattr(config, "MAX_ALLOCATION_BYTES", 10 ** 6)
    with pytest.raises(ValueError, match=r"resolution=2048 with t=435 planning points: the grid "
                                         r"engine's state .* needs [\d,]+ bytes"):
        allocate_greedy(margin, deltas, 0.2, 4, method="grid")
    with pytest.raises(ValueError, match=r"t=40000 planning points: the exact engine's "
                                         r"influences"):
        allocate_greedy(np.tile(margin, 92)[:40000], np.tile(deltas, (92, 1))[:40000], 0.2, 4,
                        method="exact")


def test_batches_do_not_change_the_plan(monkeypatch):
    rng = np.random.default_rng(4)
    margin, deltas = rng.normal(size=40), rng.normal(size=(40, 30))
    eps = rng.uniform(0.01, 0.3, 30)
    plans = []
    for work in (2 ** 26, 50):
        monkeypatch.setattr(config, "BATCH_WORK", work)
        monkeypatch.setattr("edgecode.redundancy.influence.BATCH_WORK", work)
        monkeypatch.setattr("edgecode.redundancy.influence._COLUMN_BLOCK_BYTES",
                            2 ** 26 if work > 50 else 8 * 40 * 3)
        plans.append((allocate_greedy(margin, deltas, eps, 40, method="grid"),
                      allocate_greedy(margin[:30], deltas[:30, :14], eps[:14], 20,
                                      method="exact")))
    for a, b in zip(*plans):
        assert_array_equal(a.repetitions, b.repetitions)
        assert a.history == b.history and a.mean_scp == b.mean_scp


_SETUP_PLANNER = SETUP_RNG + """
from edgecode.datasets import load_house_votes
from edgecode.naive_bayes import BinaryNaiveBayes
from edgecode.redundancy import allocate_greedy
d = load_house_votes()
nb = BinaryNaiveBayes().fit(d.X, d.y)
m, D = nb.decision_function(d.X), nb.flip_deltas(d.X)
allocate_greedy(m[:5], D[:5], 0.2, 4)
allocate_greedy(m[:5], np.tile(D[:5], 2)[:, :26], 0.2, 2, method="exact")
"""


@pytest.mark.parametrize("body", [
    # eps = 0.45 on house votes: tens of thousands of useful steps (minutes)
    "allocate_greedy(m, D, 0.45, 10**9)",
    # 20000 points at n = 26: one pass of exact influences takes tens of seconds
    "allocate_greedy(rng.normal(size=20000), rng.normal(size=(20000, 26)), 0.2, 10,"
    " method='exact')",
])
def test_greedy_plan_stops_on_ctrl_c(body):
    code, err = run_and_interrupt(body, _SETUP_PLANNER, wait=2.0)
    assert "KeyboardInterrupt" in err and code != 0
