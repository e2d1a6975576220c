"""``edgecode plan`` and ``edgecode simulate`` as library calls (issue 25: the CLI
parses and prints; :mod:`export.plan` and :mod:`export.simulate` do the work),
checked against independent computations on real data."""

import json
from pathlib import Path

import numpy as np
import pytest

import firmware_sim
from edgecode.datasets import load_house_votes
from edgecode.naive_bayes import BinaryNaiveBayes
from edgecode.redundancy import allocate_greedy, allocate_uniform, repetition_error
from edgecode.scp import scp_exact
from export.data import load_binary
from export.plan import export_plan, plan_protection, prepare_plan, solve_plan
from export.simulate import kind_prediction, simulate_artifact

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def hv_plan():
    return plan_protection(load_binary("house_votes"), 0.2, 32)


def test_plan_scores_are_the_exact_scp_of_each_allocation(hv_plan):
    """Slow reference: the 2^16 exact SCP of the none / uniform / greedy
    allocations, on a model fitted here (house votes has no split: all rows)."""
    d = load_house_votes()
    nb = BinaryNaiveBayes().fit(d.X, d.y)
    m, D = nb.decision_function(d.X), nb.flip_deltas(d.X)
    greedy = allocate_greedy(m, D, 0.2, 32)
    want = {"none": np.zeros(16, int), "uniform": allocate_uniform(16, 32),
            "greedy": greedy.repetitions}
    assert [a.name for a in hv_plan.allocations] == ["none", "uniform", "greedy"]
    for a in hv_plan.allocations:
        assert np.array_equal(a.repetitions, want[a.name]), a.name
        ref = float(scp_exact(m, D, repetition_error(np.full(16, 0.2), want[a.name])).mean())
        assert a.how == "exact" and a.lower == a.upper
        assert a.estimate == pytest.approx(ref, abs=1e-12), a.name
    assert hv_plan.reference.name == "uniform"
    assert hv_plan.ratio == pytest.approx((1 - hv_plan.uniform_scp) / (1 - greedy.mean_scp))


def test_prepare_then_solve_equals_plan_protection(hv_plan):
    setup = prepare_plan(load_binary("house_votes"), 0.2, 32)
    assert setup.method_used == "exact" and setup.expected_seconds > 0
    again = solve_plan(setup)
    assert np.array_equal(again.plan.repetitions, hv_plan.plan.repetitions)
    assert again.greedy.estimate == hv_plan.greedy.estimate


def test_a_small_budget_has_no_uniform_row():
    out = plan_protection(load_binary("house_votes"), 0.2, 4)
    assert [a.name for a in out.allocations] == ["none", "greedy"]
    assert out.reference.name == "none" and out.uniform_scp is None


def test_export_plan_writes_all_or_nothing(hv_plan, tmp_path, monkeypatch):
    art, js = tmp_path / "p.edgc", tmp_path / "p.json"
    exp = export_plan(hv_plan, out=art, plan_out=js, dataset_ref="house_votes")
    doc = json.loads(js.read_text())
    assert doc["planned_mean_scp"] == hv_plan.plan.mean_scp and len(doc["features"]) == 16
    dev = firmware_sim.load(art)
    assert dev.container.meta["dataset"] == "house_votes" and exp.device.kind == "protected_nb"
    assert np.array_equal(dev.repetitions, hv_plan.plan.repetitions)

    import export.plan as plan_mod

    def broken(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(plan_mod, "write_plan_file", broken)
    with pytest.raises(OSError, match="disk full"):
        export_plan(hv_plan, out=tmp_path / "q.edgc", plan_out=tmp_path / "q.json")
    assert not (tmp_path / "q.edgc").exists() and not (tmp_path / "q.json").exists()


def test_simulate_artifact_is_the_device_simulation_and_its_closed_form(hv_plan, tmp_path):
    """One path for every kind: the counts are firmware_sim.simulate's for the
    same seed, the interval holds the exact SCP of the device's integer model."""
    art = tmp_path / "hv.edgc"
    export_plan(hv_plan, out=art, dataset_ref="house_votes")
    rep = simulate_artifact(art, 0.2, 200, random_state=3)
    dev = firmware_sim.load(art)
    d = load_house_votes()
    ref = firmware_sim.simulate(dev, d.X, 0.2, 200, random_state=3, y=d.y)
    assert np.array_equal(rep.result.same, ref.same)
    assert rep.rate == ref.same.sum() / (len(d.X) * 200)
    assert rep.accuracy == ref.accuracy and rep.site == "wire" and rep.kind == "protected_nb"
    assert rep.prediction.exact and rep.inside
    assert rep.planned["planned_mean_scp"] == repr(hv_plan.plan.mean_scp)
    # an (X, y) pair and max_points
    rep2 = simulate_artifact(art, 0.2, 50, dataset=(d.X, d.y), max_points=40, random_state=0)
    assert rep2.n_points == 40 and rep2.data_name == "array"


def test_simulate_artifact_on_a_kind_without_a_closed_form(tmp_path, monkeypatch):
    from export.cli import main
    art = tmp_path / "g.edgc"
    assert main(["hash", str(DATA / "glass.csv"), "--bits", "16", "--anchors", "24",
                 "--sketch", "20", "--knn", "3", "--out", str(art)]) == 0
    assert kind_prediction("ssbc")(None, None, 0.05) is None    # no closed form
    rep = simulate_artifact(art, 0.05, 5, split="all", random_state=0)
    assert rep.prediction is None and rep.inside is None and rep.site == "intermediate"
    assert rep.n_points == 214 and rep.accuracy is not None
    # a prediction the kind's spec gives is used, through the same one path
    from export.registry import kind_spec
    spec = type(kind_spec("ssbc"))
    monkeypatch.setattr(spec, "same_rate_prediction",
                        lambda self, device, X, eps: (0.5, 0.0, 1.0, "toy"))
    rep = simulate_artifact(art, 0.05, 5, split="all", random_state=0)
    assert rep.prediction == (0.5, 0.0, 1.0, "toy")
    assert rep.inside is (rep.ci[0] <= 0.5 <= rep.ci[1]) and rep.rate > 0.5


def test_simulate_artifact_errors(tmp_path, hv_plan):
    art = tmp_path / "x.edgc"
    export_plan(hv_plan, out=art, dataset_ref="house_votes")
    with pytest.raises(ValueError, match="the artifact expects 16 features but array has 3"):
        simulate_artifact(art, 0.1, 5, dataset=(np.zeros((4, 3), np.uint8), None))
