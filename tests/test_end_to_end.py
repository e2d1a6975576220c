"""Plan -> export -> device: the simulated device agrees with the planner."""

import numpy as np

from edgecode.datasets import load_house_votes
from edgecode.naive_bayes import BinaryNaiveBayes
from edgecode.redundancy import allocate_greedy
from export.naive_bayes import export_protected_nb
from firmware_sim.naive_bayes import load_protected_nb, simulate
from statistics import NormalDist


def test_simulated_rate_contains_planned_scp_house_votes_eps_02():
    d = load_house_votes()
    nb = BinaryNaiveBayes().fit(d.X, d.y)
    plan = allocate_greedy(nb.decision_function(d.X), nb.flip_deltas(d.X), 0.2, 32,
                           method="exact")
    device = load_protected_nb(export_protected_nb(nb, plan.repetitions, X_check=d.X).container)
    trials = 4000
    same, _ = simulate(device, d.X, 0.2, trials, random_state=12345)
    total = len(d.X) * trials
    rate = same.sum() / total
    # 99% normal interval of the pooled rate; pooling points with different p
    # only shrinks the true variance, so this interval is conservative
    z = NormalDist().inv_cdf(0.995)
    half = z * np.sqrt(rate * (1 - rate) / total)
    assert abs(rate - plan.mean_scp) <= half, (rate, plan.mean_scp, half)
    # and the device is not trivially right: it does change labels sometimes
    assert 0.9 < rate < 0.99
