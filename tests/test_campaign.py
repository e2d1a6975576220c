"""Campaigns: seeds, JSON reports, the device protocol, analytic vs simulated."""

import argparse
import math
import json
import sys

import numpy as np
import pytest

from edgecode.datasets import load_house_votes
from edgecode.naive_bayes import BinaryNaiveBayes
from edgecode.redundancy import allocate_greedy
from export.analytics import add_analytic, analytic_protected_nb
from export.cli import campaign as cli_campaign
from export.demo_campaign import compare_channels, house_votes_devices
from export.naive_bayes import quantize_naive_bayes
from export.report import format_campaign
from firmware_sim import Device, ProtectedNBDevice
from firmware_sim.campaign import CampaignResult, run_campaign, wilson_interval
from firmware_sim.faults import (
    BSC,
    Compose,
    GilbertElliott,
    Interleave,
    ParameterUpset,
    StuckAt,
    copy_major_order,
)


@pytest.fixture(scope="module")
def house_votes_device():
    d = load_house_votes()
    nb = BinaryNaiveBayes().fit(d.X, d.y)
    plan = allocate_greedy(nb.decision_function(d.X), nb.flip_deltas(d.X), 0.1, 32,
                           method="exact")
    w, b, s, _ = quantize_naive_bayes(nb, d.X)
    dev = ProtectedNBDevice.from_arrays(w, b, plan.repetitions, s,
                                        meta={"dataset": "house_votes"})
    return d, dev, plan


class DuckDevice(Device):
    """The device contract by delegation (a type the engine has no fast path for):
    must give the same result."""

    def __init__(self, inner):
        self.inner = inner
        self.container = inner.container
        self.frame_dtype = inner.frame_dtype
        self.stage_symbols = inner.stage_symbols
        self.default_site = inner.default_site

    @property
    def frame_width(self):
        return self.inner.frame_width

    def encode(self, X):
        return self.inner.encode(X)

    def infer(self, frames):
        return self.inner.infer(frames)

    def stage(self, frames):
        return self.inner.stage(frames)

    def finish(self, intermediate):
        return self.inner.finish(intermediate)

    def predict(self, X):
        return self.inner.predict(X)

    def resources(self):
        return self.inner.resources()


def _small_device():
    return ProtectedNBDevice.from_arrays([6, -4, 3, 5, -2], -2, [1, 0, 2, 1, 0], 1)


def _X(t=40, n=5, seed=0):
    return np.random.default_rng(seed).integers(0, 2, (t, n)).astype(np.uint8)


# ---------------------------------------------------------------- closed forms
def test_single_feature_matches_majority_failure():
    dev = ProtectedNBDevice.from_arrays([2], -1, [2])          # label = x, 5 copies
    res = run_campaign(dev, [[0], [1]], BSC(0.2), "eps", [0.0, 0.2, 0.4], 20000, random_state=3,
                       confidence=0.999)
    for p in res.points:
        e = p.value
        fail = sum(math.comb(5, i) * e**i * (1 - e) ** (5 - i) for i in (3, 4, 5))
        lo, hi = p.same_ci
        assert lo <= 1 - fail <= hi


def test_analytic_matches_simulation_under_bsc(house_votes_device):
    d, dev, plan = house_votes_device
    grid = [0.05, 0.1, 0.2]
    res = run_campaign(dev, d.X, BSC(0.1), "eps", grid, 3000, random_state=5, y=d.y, confidence=0.999)
    add_analytic(res, dev, d.X, BSC(0.1), "eps", d.y)
    assert res.notes["analytic_inside_ci"] == [True, True, True]
    for p in res.points:
        a = p.analytic
        assert a["available"] and a["method"] == "exact"
        lo, hi = p.accuracy_ci
        assert lo <= a["accuracy"] <= hi
    # the planner's own prediction at its planning eps is what the device sees
    assert res.points[1].analytic["same_rate"] == pytest.approx(plan.mean_scp, abs=2e-4)
    text = format_campaign(res)
    assert "0.1" in text and "analytic" in text


def test_random_stuck_lines_are_a_bsc_of_half_the_rate(house_votes_device):
    d, dev, _ = house_votes_device
    fault = StuckAt(rate=0.2)
    a = analytic_protected_nb(dev, d.X, fault)
    assert a["per_bit_eps"] == pytest.approx(0.1)
    assert a["same_rate"] == pytest.approx(analytic_protected_nb(dev, d.X, BSC(0.1))["same_rate"])
    res = run_campaign(dev, d.X, fault, n_trials=2000, random_state=2, confidence=0.999)
    lo, hi = res.points[0].same_ci
    assert lo <= a["same_rate"] <= hi
    both = analytic_protected_nb(dev, d.X, Compose([BSC(0.05), StuckAt(rate=0.1)]))
    assert both["per_bit_eps"] == pytest.approx(0.9 * 0.05 + 0.05)


def test_burst_has_no_closed_form_and_says_so(house_votes_device):
    d, dev, _ = house_votes_device
    ge = GilbertElliott.from_flip_rate(0.1, 4.0)
    a = analytic_protected_nb(dev, d.X, ge)
    assert not a["available"] and "no closed form" in a["reason"]
    assert a["bsc_same_rate_at_mean_flip_rate"] == pytest.approx(
        analytic_protected_nb(dev, d.X, BSC(0.1))["same_rate"])
    # parameter upsets: the single-upset table (exact for one upset per image)
    up = analytic_protected_nb(dev, d.X, ParameterUpset(count=1, arrays=["weights"]))
    assert up["available"] and up["targeted_bits"] == 512
    assert not analytic_protected_nb(dev, d.X, ParameterUpset(count=3))["available"]
    assert not analytic_protected_nb(dev, d.X, Compose([ParameterUpset(count=1),
                                                        BSC(0.1)]))["available"]


def test_cli_upsets_lists_critical_bits_and_matches_a_campaign(tmp_path, capsys):
    from export.cli import main
    art = tmp_path / "hv.edgc"
    main(["plan", "house_votes", "--R", "1", "--eps", "0.1", "--out", str(art)])
    capsys.readouterr()
    main(["upsets", str(art), "--arrays", "weights,bias", "--top", "3",
          "--json", str(tmp_path / "u.json")])
    text = capsys.readouterr().out
    assert "weights" in text and "bias" in text and "most critical bits" in text
    rep = json.loads((tmp_path / "u.json").read_text())
    assert rep["bits"] == 16 * 32 + 32 and len(rep["critical_bits"]) == 3
    assert len(rep["change_rate_per_bit"]) == rep["bits"]
    # the campaign's analytic column for one upset is the table's figure
    main(["campaign", str(art), "--fault", "seu", "--set", "arrays=weights,bias",
          "--trials", "300"])
    out = capsys.readouterr().out
    assert f"{rep['single_upset']['same_rate']:.5f}" in out
    assert main(["upsets", str(art), "--max-bits", "10"]) == 2
    assert "exceed max_bits=10" in capsys.readouterr().err


def test_interleaving_restores_the_independent_prediction(house_votes_device):
    # bursts of mean length 2 on a copy-major wire rarely hit two copies of a feature
    d, dev, _ = house_votes_device
    ge = GilbertElliott.from_flip_rate(0.1, 4.0)
    grouped = run_campaign(dev, d.X, ge, n_trials=1500, random_state=1).points[0]
    spread = run_campaign(dev, d.X, Interleave(ge, copy_major_order(dev.copies)),
                          n_trials=1500, random_state=1).points[0]
    assert grouped.same_ci[1] < spread.same_ci[0]


# ---------------------------------------------------------------- seeds and protocol
def test_same_seed_same_report_and_grid_points_are_independent():
    dev, X = _small_device(), _X()
    a = run_campaign(dev, X, BSC(0.1), "eps", [0.1, 0.3], 300, random_state=9)
    b = run_campaign(dev, X, BSC(0.1), "eps", [0.1, 0.3], 300, random_state=9)
    assert [p.same_per_point for p in a.points] == [p.same_per_point for p in b.points]
    one = run_campaign(dev, X, BSC(0.1), "eps", [0.1], 300, random_state=9)
    assert one.points[0].same_per_point == a.points[0].same_per_point
    c = run_campaign(dev, X, BSC(0.1), "eps", [0.1, 0.3], 300, random_state=10)
    assert c.points[1].same_per_point != a.points[1].same_per_point


@pytest.mark.parametrize("fault", [BSC(0.2), GilbertElliott(0.1, 0.3),
                                   Compose([StuckAt(stuck1=[2]), BSC(0.05)])])
def test_generic_protocol_equals_fast_path(fault):
    dev, X = _small_device(), _X()
    fast = run_campaign(dev, X, fault, n_trials=200, random_state=4)
    slow = run_campaign(DuckDevice(dev), X, fault, n_trials=200, random_state=4)
    assert fast.points[0].same_per_point == slow.points[0].same_per_point


@pytest.mark.parametrize("fault", [BSC(0.02), BSC(0.2), GilbertElliott(0.1, 0.3),
                                   Interleave(GilbertElliott(0.1, 0.3), np.arange(11)[::-1]),
                                   Compose([BSC(0.05), GilbertElliott(0.02, 0.5)])])
def test_ecoc_fast_paths_equal_the_device_decoder(fault, ecoc_digits):
    # binary (packed XOR + popcount) and N-ary (per-event distance updates)
    # fast paths against the generic path: noisy rows through the device
    X, y, _, dev, dev3 = ecoc_digits
    for d in (dev, dev3):
        f = fault
        if isinstance(fault, Interleave) and d.n_columns != 11:
            f = Interleave(fault.fault, np.arange(d.n_columns)[::-1])
        fast = run_campaign(d, X[:120], f, n_trials=150, random_state=3, y=y[:120])
        slow = run_campaign(DuckDevice(d), X[:120], f, n_trials=150, random_state=3,
                            y=y[:120])
        assert fast.points[0].same_per_point == slow.points[0].same_per_point
        assert fast.points[0].accuracy == slow.points[0].accuracy
        assert fast.points[0].same_rate < 1.0


@pytest.mark.parametrize("fault", [BSC(0.03), BSC(0.15), GilbertElliott(0.05, 0.3),
                                   "interleaved"])
def test_nb_fast_path_on_multiword_frames(fault):
    # 30 features x up to 7 copies = 122 wire bits: two words, features whose
    # copies straddle a word boundary (several (word, mask) pairs per feature)
    rng = np.random.default_rng(8)
    reps = rng.integers(0, 4, 30)
    dev = ProtectedNBDevice.from_arrays(rng.integers(-9, 10, 30), 3, reps, 1)
    assert dev.total_bits > 64
    if fault == "interleaved":
        fault = Interleave(BSC(0.1), copy_major_order(dev.copies))
    X = _X(25, 30, seed=2)
    fast = run_campaign(dev, X, fault, n_trials=200, random_state=5, y=X[:, 0])
    slow = run_campaign(DuckDevice(dev), X, fault, n_trials=200, random_state=5, y=X[:, 0])
    assert fast.points[0].same_per_point == slow.points[0].same_per_point
    assert fast.points[0].accuracy == slow.points[0].accuracy
    assert fast.points[0].same_rate < 1.0


def test_image_faults_reload_the_device():
    dev, X = _small_device(), _X()
    y = dev.predict(X)
    none = run_campaign(dev, X, ParameterUpset(count=0), n_trials=20, random_state=0, y=y)
    assert none.points[0].same_rate == 1.0 and none.points[0].accuracy == 1.0
    checked = run_campaign(dev, X, ParameterUpset(count=1, checked=True), n_trials=30, random_state=0)
    assert checked.points[0].refused == 30 and checked.points[0].same_rate == 0.0
    # upsets only in the weights: never refused for low bits, the label can change
    res = run_campaign(dev, X, ParameterUpset(count=1, arrays=["weights"]), "count", [1, 4],
                       100, random_state=1)
    assert all(p.ci_trials == 100 for p in res.points)
    assert res.points[0].same_rate < 1.0
    assert res.points[1].same_rate <= res.points[0].same_rate + 0.05
    duck = run_campaign(DuckDevice(dev), X, ParameterUpset(count=1, arrays=["weights"]),
                        n_trials=50, random_state=1)
    base = run_campaign(dev, X, ParameterUpset(count=1, arrays=["weights"]), n_trials=50,
                        random_state=1)
    assert duck.points[0].same_per_point == base.points[0].same_per_point
    mixed = run_campaign(dev, X, Compose([ParameterUpset(count=0), BSC(0.0)]), n_trials=5)
    assert mixed.points[0].same_rate == 1.0


def test_campaign_input_errors():
    dev, X = _small_device(), _X()
    with pytest.raises(TypeError, match="must be a firmware_sim Device"):
        run_campaign(object(), X, BSC(0.1))
    with pytest.raises(TypeError, match="must be a firmware_sim.faults.Fault"):
        run_campaign(dev, X, 0.1)
    with pytest.raises(ValueError, match="n_trials must be >= 1"):
        run_campaign(dev, X, BSC(0.1), n_trials=0)
    with pytest.raises(ValueError, match="give param and grid together"):
        run_campaign(dev, X, BSC(0.1), "eps")
    with pytest.raises(ValueError, match="has no parameter"):
        run_campaign(dev, X, BSC(0.1), "p", [0.1])
    with pytest.raises(ValueError, match="y must have shape"):
        run_campaign(dev, X, BSC(0.1), y=[0, 1])


# ---------------------------------------------------------------- reports
def test_json_report_round_trip(tmp_path):
    dev, X = _small_device(), _X()
    res = run_campaign(dev, X, GilbertElliott(0.1, 0.3), "p", [0.05, 0.1], 100, random_state=1,
                       y=dev.predict(X))
    add_analytic(res, dev, X, GilbertElliott(0.1, 0.3), "p")
    path = tmp_path / "report.json"
    text = res.to_json(path)
    back = CampaignResult.from_json(path)
    assert back.to_dict() == res.to_dict() == json.loads(text)
    assert CampaignResult.from_json(text).points[1].same_per_point == \
        res.points[1].same_per_point
    assert back.device["kind"] == "protected_nb" and "resources" in back.device
    bad = json.loads(text)
    bad["version"] = 99
    with pytest.raises(ValueError, match="report version 99"):
        CampaignResult.from_dict(bad)


def test_wilson_matches_edgecode_helper():
    from edgecode._stats import wilson_interval as ref
    for k, n in ((0, 10), (3, 10), (500, 1000), (1000, 1000)):
        lo, hi = ref(k, n, 0.99)
        assert wilson_interval(k, n, 0.99) == pytest.approx((float(lo), float(hi)))


def test_cli_campaign_writes_reports(tmp_path, house_votes_device):
    _, dev, _ = house_votes_device
    art = tmp_path / "hv.edgc"
    art.write_bytes(dev.container.tobytes())
    parser = argparse.ArgumentParser()
    cli_campaign.register(parser.add_subparsers(dest="command"))
    out = tmp_path / "c.json"
    args = parser.parse_args(["campaign", str(art), "--fault", "burst", "--set",
                              "mean_burst=3", "--param", "flip_rate", "--grid", "0.05,0.1",
                              "--trials", "50", "--json", str(out), "--profile", "cortex-m0",
                              "--max-points", "100"])
    args.func(args)
    rep = CampaignResult.from_json(out)
    assert rep.param == "flip_rate" and rep.grid == [0.05, 0.1] and rep.n_points == 100
    assert rep.device["profile"]["estimate"]["cycles"] > 0
    tiny = tmp_path / "tiny.json"
    tiny.write_text(json.dumps({"name": "tiny", "flash_bytes": 64}))
    with pytest.raises(ValueError, match="does not fit profile 'tiny'"):
        cli_campaign.run_campaign_cli(str(art), "bsc", {"eps": 0.1}, trials=10,
                                      profile=str(tiny))


def test_cli_campaign_plot_without_matplotlib_fails_before_any_work(tmp_path, monkeypatch,
                                                                    capsys, house_votes_device):
    """One error line naming the package and its install command, exit 2, and
    nothing run: the artifact is not even read (a missing file would say so)."""
    from export.cli import main
    _, dev, _ = house_votes_device
    art = tmp_path / "hv.edgc"
    art.write_bytes(dev.container.tobytes())
    monkeypatch.setitem(sys.modules, "matplotlib", None)       # import matplotlib fails
    monkeypatch.setattr("firmware_sim.campaign.run_campaign",
                        lambda *a, **k: pytest.fail("the campaign ran"))
    for artifact in (art, tmp_path / "missing.edgc"):
        assert main(["campaign", str(artifact), "--fault", "bsc", "--set", "eps=0.1",
                     "--trials", "100000", "--plot", str(tmp_path / "c.png")]) == 2
        cap = capsys.readouterr()
        assert cap.out == ""
        assert cap.err.count("\n") == 1 and cap.err.startswith("error: --plot ")
        assert "matplotlib" in cap.err and "pip install 'edgecode[plot]'" in cap.err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hv.edgc"]


def test_cli_campaign_and_upsets_show_progress_unless_quiet(tmp_path, capsys,
                                                            house_votes_device):
    from export.cli import main
    _, dev, _ = house_votes_device
    art = tmp_path / "hv.edgc"
    art.write_bytes(dev.container.tobytes())
    base = ["campaign", str(art), "--fault", "bsc", "--param", "eps", "--grid", "0.05,0.1",
            "--trials", "200", "--json", str(tmp_path / "c.json")]
    assert main(base) == 0
    err = capsys.readouterr().err
    assert "campaign: 174,000/174,000 (100%) eps=0.1 (2/2)" in err and "ETA" in err
    assert main(base + ["--quiet"]) == 0
    assert capsys.readouterr().err == ""
    assert main(["upsets", str(art), "--arrays", "bias", "--json", str(tmp_path / "u.json")]) \
        == 0
    err = capsys.readouterr().err
    assert "upsets: 32/32 (100%) bits" in err
    assert main(["upsets", str(art), "--arrays", "bias", "--quiet"]) == 0
    assert capsys.readouterr().err == ""
    # the reports were renamed into place: no temporaries left beside them
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.json", "hv.edgc", "u.json"]


def test_plot_campaign(tmp_path):
    pytest.importorskip("matplotlib")
    from export.report import plot_campaign
    dev, X = _small_device(), _X()
    res = run_campaign(dev, X, BSC(0.1), "eps", [0.05, 0.2], 100, random_state=0)
    add_analytic(res, dev, X, BSC(0.1), "eps")
    path = plot_campaign(res, tmp_path / "c.png")
    assert (tmp_path / "c.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path


def test_compare_channels_rows():
    """The rows of the demo's campaign stage (and of benchmarks/burst_vs_independent.py)."""
    d, devices = house_votes_devices()
    rows = compare_channels(d, devices, flip_rates=(0.1,), trials=60, interleave=False)
    assert {(r["channel"], r["plan"]) for r in rows} == {
        (c, p) for c in ("independent", "burst") for p in ("none", "uniform", "greedy")}
    assert all((r["analytic"] is None) == (r["channel"] == "burst") for r in rows)


# ---------------------------------------------------------------- Hamming decoding (ECOC)
def _mc_hamming(code, eps, trials, seed, ties="first"):
    rng = np.random.default_rng(seed)
    code = np.asarray(code, np.uint8)
    out = []
    for i in range(code.shape[0]):
        rx = code[i] ^ (rng.random((trials, code.shape[1])) < eps)
        dist = (rx[:, None, :] != code[None]).sum(axis=2)
        out.append((dist.argmin(axis=1) == i).sum())
    return np.array(out)


def test_hamming_exact_matches_monte_carlo_and_beats_the_bound():
    from export.analytics import hamming_decoding_exact, hamming_guarantee
    code = np.array([[0, 0, 0, 0, 0, 0, 0], [1, 1, 1, 0, 0, 0, 1], [0, 1, 1, 1, 1, 0, 0],
                     [1, 0, 0, 1, 1, 1, 1], [1, 1, 0, 1, 0, 1, 0]])
    eps, trials = 0.15, 20000
    exact = hamming_decoding_exact(code, eps)
    hits = _mc_hamming(code, eps, trials, 0)
    for i, h in enumerate(hits):
        lo, hi = wilson_interval(h, trials, 0.999)
        assert lo <= exact[i] <= hi
    g = hamming_guarantee(code, eps)
    assert g["d_r"] == 3 and g["t"] == 1
    assert np.all(exact >= g["p_guaranteed"] - 1e-12)
    split = hamming_decoding_exact(code, eps, ties="split")
    assert split.mean() <= exact.max() + 1e-12 and np.all(split > 0)
    # a repetition code: exact equals the binomial tail, and the bound is tight
    rep = hamming_decoding_exact([[0] * 5, [1] * 5], 0.2)
    tail = sum(math.comb(5, k) * 0.2**k * 0.8 ** (5 - k) for k in range(3))
    assert rep == pytest.approx([tail, tail])
    assert hamming_guarantee([[0] * 5, [1] * 5], 0.2)["p_guaranteed"] == pytest.approx(tail)
    with pytest.raises(ValueError, match="exact enumeration"):
        hamming_decoding_exact(np.zeros((2, 25), int), 0.1)
    with pytest.raises(ValueError, match="must be binary"):
        hamming_guarantee([[0, 2], [1, 1]], 0.1)


# ---------------------------------------------------------------- ECOC devices in campaigns
@pytest.fixture(scope="module")
def ecoc_digits():
    from sklearn.datasets import load_digits
    from sklearn.linear_model import LogisticRegression

    from edgecode.ecoc.classifier import ECOCClassifier
    from export.ecoc import export_ecoc

    X, y = load_digits(return_X_y=True)
    X = X / 16.0                                      # dyadic: exact fixed-point inputs
    code = np.random.default_rng(197).integers(0, 2, (10, 11))   # d_r = 4
    clf = ECOCClassifier(LogisticRegression(max_iter=300), code=code).fit(X[:600], y[:600])
    dev = export_ecoc(clf, X[:600], meta={"dataset": "digits"}).device
    code3 = np.random.default_rng(3).integers(0, 3, (10, 6))
    clf3 = ECOCClassifier(LogisticRegression(max_iter=300), code=code3).fit(X[:600], y[:600])
    dev3 = export_ecoc(clf3, X[:600]).device
    return X[600:900], y[600:900], code, dev, dev3


def test_ecoc_intermediate_site_and_bsc_is_corrupt(ecoc_digits):
    X, y, code, dev, _ = ecoc_digits
    a = dev
    q = dev.quantize(X)
    assert_eq = np.testing.assert_array_equal
    assert_eq(a.encode(X), q)
    assert_eq(a.stage(a.encode(X)), dev.learner_outputs(q))
    assert_eq(a.finish(a.stage(q)), dev.predict(q))
    assert a.default_site == "intermediate"
    res = run_campaign(a, X, BSC(0.0), "eps", [0.0, 1.0], 3, random_state=0, y=y)
    assert res.points[0].same_rate == 1.0
    assert res.points[1].same_rate == pytest.approx(
        np.mean(dev.decode(1 - dev.learner_outputs(q)) == dev.predict(q)))
    assert res.device["kind"] == "ecoc" and "resources" in res.device
    # parameter upsets on the stored code: code_bits is derived from code, so a
    # flipped bit there is an inconsistent image, refused by the loader
    up = run_campaign(a, X, ParameterUpset(count=1, arrays=["code_bits"]), n_trials=20,
                      random_state=0)
    assert up.points[0].refused == 20


def test_ecoc_nary_outputs_are_replaced_by_other_symbols(ecoc_digits):
    X, y, _, _, dev3 = ecoc_digits
    a = dev3
    assert a.stage_symbols == 3
    seen = []

    class Spy(DuckDevice):
        def finish(self, symbols):
            seen.append(np.array(symbols))
            return super().finish(symbols)

    clean = a.stage(a.encode(X[:50]))
    run_campaign(Spy(dev3), X[:50], BSC(1.0), n_trials=4, random_state=0)
    got = np.concatenate(seen)
    ref = np.repeat(clean, 4, axis=0)
    assert got.shape == ref.shape and np.all(got != ref) and got.max() <= 2
    # each replacement uniform over the two other symbols
    up = ((got.astype(int) - ref) % 3 == 1).mean()
    assert 0.45 < up < 0.55
    res = run_campaign(a, X, BSC(0.1), n_trials=200, random_state=1, y=y)
    sim = dev3.simulate(X, 0.1, 200, random_state=2, y=y)
    lo, hi = res.points[0].accuracy_ci
    assert lo - 0.01 <= sim.accuracy <= hi + 0.01
    with pytest.raises(ValueError, match="symbol meaning"):
        run_campaign(a, X, StuckAt(stuck1=[0]))
    # N-ary: exact rates (3^6 received words), and the radius bound holds for
    # symbol replacements
    add_analytic(res, a, X, BSC(0.1), None, y)
    an = res.points[0].analytic
    assert an["available"] and "3^6 received words" in an["method"]
    lo, hi = res.points[0].same_ci
    assert lo <= an["same_rate"] <= hi and an["same_rate"] >= an["same_rate_lower_bound"]
    alo, ahi = res.points[0].accuracy_ci
    assert alo <= an["accuracy"] <= ahi
    assert res.notes["analytic_inside_ci"] == [True]
    assert res.points[0].same_ci[1] >= an["same_rate_lower_bound"]
    assert res.notes["lower_bound_respected"] == [True]
    assert ">=" in format_campaign(res)


def test_ecoc_analytic_hamming_matches_simulation(ecoc_digits):
    from export.analytics import (analytic_ecoc, ecoc_exact_tables, ecoc_flip_radius,
                                  hamming_decoding_exact, hamming_guarantee)
    X, y, code, dev, _ = ecoc_digits
    a = dev
    grid = [0.03, 0.1]
    res = run_campaign(a, X, BSC(0.1), "eps", grid, 1000, random_state=0, y=y)
    add_analytic(res, a, X, BSC(0.1), "eps", y)
    g = hamming_guarantee(code, 0.1)
    assert g["d_r"] == 4 and g["t"] == 1
    out = dev.learner_outputs(dev.quantize(X))
    rad = ecoc_flip_radius(dev, out)
    at_codeword = (out[:, None, :] == code[None]).all(axis=2).any(axis=1)
    assert at_codeword.sum() > 50 and np.all(rad[at_codeword] >= g["t"])
    for p in res.points:
        an = p.analytic
        assert an["available"] and an["code_guarantee"]["t"] == 1
        lo, hi = p.same_ci                         # 99% Wilson interval of the same rate
        # change rate within the radius bound, exact rate inside the simulated interval
        assert 1.0 - hi <= 1.0 - an["same_rate_lower_bound"]
        assert lo <= an["same_rate"] <= hi
        assert an["same_rate"] >= an["same_rate_lower_bound"]
        alo, ahi = p.accuracy_ci
        assert alo <= an["accuracy"] <= ahi
        # codeword points: the code-level guarantee bounds their change rate
        m = at_codeword
        sim_change = 1.0 - np.sum(np.asarray(p.same_per_point)[m]) / (m.sum() * res.n_trials)
        assert sim_change <= an["code_guarantee"]["p_error_bound"]
    assert res.notes["analytic_inside_ci"] == [True, True]
    assert res.notes["lower_bound_respected"] == [True, True]
    # at the codewords the device enumeration equals hamming_decoding_exact (ties: lowest)
    tab = ecoc_exact_tables(dev, code)
    k = np.arange(code.shape[1] + 1)
    w = 0.1 ** k * 0.9 ** (code.shape[1] - k)
    assert 1.0 - tab["change"] @ w == pytest.approx(hamming_decoding_exact(code, 0.1))
    # the received-word labelling (default) equals the device-decoder enumeration
    tables = ecoc_exact_tables(dev, out, y)
    for eps in grid:
        new = analytic_ecoc(a, X, BSC(eps), y)
        old = analytic_ecoc(a, X, BSC(eps), y, tables)
        assert new["method"] != old["method"]
        assert new["same_rate"] == pytest.approx(old["same_rate"], abs=1e-12)
        assert new["accuracy"] == pytest.approx(old["accuracy"], abs=1e-12)


# ---------------------------------------------------------------- SSBC devices in campaigns
def test_ssbc_stored_code_flips_in_a_campaign():
    from sklearn.datasets import load_digits

    from edgecode.hashing import SSBC
    from export.ssbc import export_ssbc
    from firmware_sim import load
    from firmware_sim.ssbc import SSBCDevice, load_ssbc

    X, y = load_digits(return_X_y=True)
    h = SSBC(16, 64, 32, center=True, random_state=0).fit(X[:400])
    ex = export_ssbc(h, X_table=X[:400], y_table=y[:400], knn_k=3)
    dev = load_ssbc(ex.container)
    a = load(dev.container)
    assert isinstance(a, SSBCDevice)
    Xt, yt = X[1200:1400], y[1200:1400]
    np.testing.assert_array_equal(a.stage(a.encode(Xt)), dev.bits(Xt))
    np.testing.assert_array_equal(a.finish(a.stage(a.encode(Xt))), dev.predict(Xt))
    eps, trials = 0.05, 40
    # stored-table upsets: one faulty image per trial, every point through it
    res = run_campaign(a, Xt, ParameterUpset(rate=eps, arrays=["table_codes"]), n_trials=trials,
                       random_state=0, y=yt)
    p = res.points[0]
    assert p.refused == 0 and p.ci_trials == trials and p.same_rate < 1.0
    ref = np.mean([np.mean(dev.predict_noisy(Xt, eps_table=eps, random_state=s) ==
                           dev.predict(Xt)) for s in range(trials)])
    assert p.same_ci[0] - 0.02 <= ref <= p.same_ci[1] + 0.02
    # computed-code flips: a BSC on the wire is predict_noisy(eps_bits=...)
    bits = run_campaign(a, Xt, BSC(eps), n_trials=trials, random_state=1).points[0]
    ref = np.mean([np.mean(dev.predict_noisy(Xt, eps_bits=eps, random_state=s) ==
                           dev.predict(Xt)) for s in range(trials)])
    assert bits.same_ci[0] - 0.01 <= ref <= bits.same_ci[1] + 0.01
    assert format_campaign(add_analytic(res, a, Xt, ParameterUpset(rate=eps))).count("\n") >= 1


def test_cli_campaign_on_ecoc_and_ssbc_artifacts(tmp_path, ecoc_digits):
    from sklearn.datasets import load_digits

    from sklearn.tree import DecisionTreeClassifier

    from edgecode.ecoc.classifier import ECOCClassifier
    from edgecode.hashing import SSBC
    from export.ecoc import export_ecoc
    from export.ssbc import export_ssbc
    X, y = load_digits(return_X_y=True)             # what '--data digits' reads
    code = np.random.default_rng(197).integers(0, 2, (10, 11))
    clf = ECOCClassifier(DecisionTreeClassifier(max_depth=6, random_state=0),
                         code=code).fit(X[:600], y[:600])
    art = tmp_path / "dg.edgc"
    export_ecoc(clf, X[:600], container_path=art, meta={"dataset": "sklearn digits"})
    parser = argparse.ArgumentParser()
    cli_campaign.register(parser.add_subparsers(dest="command"))
    out = tmp_path / "e.json"
    args = parser.parse_args(["campaign", str(art), "--fault", "bsc",
                              "--param", "eps", "--grid", "0.05,0.1", "--trials", "40",
                              "--max-points", "200", "--json", str(out)])
    args.func(args)
    rep = CampaignResult.from_json(out)
    assert rep.device["kind"] == "ecoc" and rep.n_points == 200
    assert all(p.analytic["available"] and p.accuracy > 0.5 for p in rep.points)
    h = SSBC(16, 64, 32, center=True, random_state=0).fit(X[:300])
    ssbc_art = tmp_path / "hs.edgc"
    export_ssbc(h, X_table=X[:300], y_table=y[:300], knn_k=3, container_path=ssbc_art,
                meta={"dataset": "digits"})
    res = cli_campaign.run_campaign_cli(str(ssbc_art), "seu", {"arrays": ["table_codes"]},
                                        "rate", [0.02], trials=10, max_points=100,
                                        stream=open(tmp_path / "log.txt", "w"))
    assert res.device["kind"] == "ssbc" and res.points[0].refused == 0
    assert res.points[0].accuracy is not None and res.points[0].same_rate < 1.0


@pytest.mark.parametrize("fault", [BSC(0.1), GilbertElliott.from_flip_rate(0.1, 4)],
                         ids=["bsc", "burst"])
def test_ecoc_fast_path_equals_generic_protocol(ecoc_digits, fault):
    """The sparse ECOC path decodes trial for trial what the device would."""
    X, y, _, dev, _ = ecoc_digits
    fast = run_campaign(dev, X, fault, n_trials=150, random_state=7, y=y)
    slow = run_campaign(DuckDevice(dev), X, fault, n_trials=150, random_state=7, y=y)
    assert fast.points[0].same_per_point == slow.points[0].same_per_point
    assert fast.points[0].accuracy == slow.points[0].accuracy


def test_ecoc_fast_path_multiword_and_ternary_codes():
    from sklearn.datasets import load_digits
    from sklearn.tree import DecisionTreeClassifier

    from edgecode.ecoc import make_code
    from edgecode.ecoc.classifier import ECOCClassifier
    from export.ecoc import export_ecoc

    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    for code in (np.random.default_rng(5).integers(0, 2, (10, 70)),   # two uint64 words
                 make_code("one_vs_one", 10)):                        # ternary (-1 entries)
        clf = ECOCClassifier(DecisionTreeClassifier(max_depth=4, random_state=0),
                             code=code).fit(X[:500], y[:500])
        a = export_ecoc(clf, X[:500]).device
        fast = run_campaign(a, X[500:620], BSC(0.15), n_trials=60, random_state=3, y=y[500:620])
        slow = run_campaign(DuckDevice(a), X[500:620], BSC(0.15), n_trials=60, random_state=3,
                            y=y[500:620])
        assert fast.points[0].same_per_point == slow.points[0].same_per_point
        assert fast.points[0].accuracy == slow.points[0].accuracy
