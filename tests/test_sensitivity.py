"""Exhaustive single-upset tables against brute force and against campaigns."""

import numpy as np
import pytest

from edgecode.datasets import load_house_votes
from edgecode.naive_bayes import BinaryNaiveBayes
from export.naive_bayes import quantize_naive_bayes
from firmware_sim import ProtectedNBDevice
from firmware_sim.campaign import run_campaign
from firmware_sim.faults import BSC, ParameterUpset
from firmware_sim.sensitivity import single_upset_table


@pytest.fixture(scope="module")
def house_votes():
    d = load_house_votes()
    nb = BinaryNaiveBayes().fit(d.X, d.y)
    w, b, s, _ = quantize_naive_bayes(nb, d.X)
    return d, ProtectedNBDevice.from_arrays(w, b, np.ones(16, int), s)


def _brute_force_weights(dev, X):
    """Label-unchanged counts per weight bit with plain integer arithmetic."""
    w = dev.weights.astype(np.int64)
    clean = (X @ w + dev.bias > 0)
    out = []
    for j in range(w.size):
        for k in range(32):
            v = w.astype(np.int32).view(np.uint32).copy()
            v[j] ^= np.uint32(1 << k)
            v = v.view(np.int32).astype(np.int64)
            out.append(int(((X @ v + dev.bias > 0) == clean).sum()))
    return np.array(out)


def test_table_equals_brute_force_on_the_weights(house_votes):
    d, dev = house_votes
    tab = single_upset_table(dev, d.X, arrays=["weights"], y=d.y)
    assert tab.n_bits == 16 * 32 and tab.n_points == len(d.X)
    ok = ~tab.refused
    assert tab.refused.sum() <= 16            # only sign bits can overflow the int32 sum
    np.testing.assert_array_equal(tab.same[ok], _brute_force_weights(dev, d.X)[ok])
    # low bits rarely matter, sign bits do: the most critical bits are high ones
    top = tab.critical_bits(5)
    assert all(b["array"] == "weights" and b["bit"] >= 20 for b in top)
    assert top[0]["change_rate"] >= top[-1]["change_rate"]
    (row,) = tab.per_array()
    assert row["bits"] == 512 and 0 < row["mean_change_rate"] < row["max_change_rate"] <= 1


def test_prediction_matches_campaigns(house_votes):
    d, dev = house_votes
    tab = single_upset_table(dev, d.X, y=d.y)          # every array, 832 bits
    assert [a[0] for a in tab.arrays] == list(dev.container.arrays)
    # exactly one upset per image: exact, inside the simulated 99% interval
    one = ParameterUpset(count=1)
    pred = tab.predict(one)
    res = run_campaign(dev, d.X, one, n_trials=1500, random_state=3, y=d.y).points[0]
    assert pred["same_rate_interval"][0] == pred["same_rate_interval"][1] == pred["same_rate"]
    lo, hi = res.same_ci
    assert lo <= pred["same_rate"] <= hi
    alo, ahi = res.accuracy_ci
    assert alo <= pred["accuracy"] <= ahi
    assert abs(res.refused / 1500 - pred["refused_rate_interval"][0]) < 0.03
    # a per-bit rate: certified interval of width P(two or more upsets)
    rate = ParameterUpset(rate=2e-4)
    pr = tab.predict(rate)
    a, b = pr["same_rate_interval"]
    assert b - a == pytest.approx(pr["p_more_than_one_upset"]) and b - a < 0.02
    sim = run_campaign(dev, d.X, rate, n_trials=1500, random_state=4).points[0]
    assert sim.same_ci[0] <= b and a <= sim.same_ci[1]
    assert tab.predict(ParameterUpset(count=0))["same_rate"] == 1.0
    assert not tab.predict(ParameterUpset(count=2))["available"]
    assert not tab.predict(BSC(0.1))["available"]
    assert not tab.predict(ParameterUpset(count=1, checked=True))["available"]


def test_checked_upsets_are_all_refused_and_limits_are_named(house_votes):
    d, dev = house_votes
    tab = single_upset_table(dev, d.X[:20], checked=True)
    assert tab.refused.all() and tab.n_bits == 8 * dev.container.nbytes
    assert tab.predict(ParameterUpset(count=1, checked=True))["same_rate"] == 0.0
    with pytest.raises(ValueError, match="exceed max_bits=100"):
        single_upset_table(dev, d.X, max_bits=100)
    with pytest.raises(ValueError, match="not in the protected_nb container"):
        single_upset_table(dev, d.X, arrays=["nope"])
    with pytest.raises(ValueError, match="y must have shape"):
        single_upset_table(dev, d.X, arrays=["bias"], y=[0, 1])


def test_table_is_priced_and_reports_progress_between_bits(house_votes, monkeypatch):
    d, dev = house_votes
    calls = []
    tab = single_upset_table(dev, d.X[:50], arrays=["bias", "weights"],
                             progress=lambda *c: calls.append(c))
    assert calls[-1] == (tab.n_bits, tab.n_bits, "bits")
    assert [c[0] for c in calls] == sorted({c[0] for c in calls})     # increasing, once each
    from firmware_sim import _limits
    from firmware_sim.errors import SizeLimitError
    monkeypatch.setattr(_limits, "MAX_ALLOCATION_BYTES", 1000)
    with pytest.raises(SizeLimitError, match="544 targeted bits: the upset table"):
        single_upset_table(dev, d.X[:50], arrays=["bias", "weights"])
