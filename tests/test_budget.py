"""edgecode budget (issue 16): the Pareto front across model kinds.

Small search spaces on bundled data (house votes, scikit-learn's digits).
Predictions are checked against simulations, the front against a brute-force
dominance check, the JSON against the issue's schema, and bad inputs
against one-line errors that write nothing.
"""

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from export.budget import ENTRY_KEYS, SearchSpace, dominates, pareto_front
from export.budget import search as _search
from export.cli import main


def search(*args, **kw):
    """The grid of a small space, without baselines (the growing search and the
    baselines are tested in tests/test_budget_grow.py)."""
    kw.setdefault("strategy", "grid")
    kw.setdefault("baselines", False)
    return _search(*args, **kw)

HV_SPACE = SearchSpace(kinds=("protected_nb", "ecoc"), nb_rates=(0, 1, 2),
                       designs=("one_vs_all", "bch"), learners=("linear", "tree"),
                       tree_depths=(3,))
DIGITS_SPACE = SearchSpace(kinds=("ecoc", "ssbc"), designs=("one_vs_all", "nary", "bch"),
                           nary_N=(3, 5), lengths={2: (7,), 3: (6,), 5: (5,)},
                           learners=("linear", "tree"), tree_depths=(3,), ssbc_bits=(16,),
                           ssbc_anchors=64, ssbc_table_rows=300)


@pytest.fixture(scope="module")
def hv():
    return search("house_votes", "cortex-m4", 0.1, space=HV_SPACE, simulate="all",
                  sim_samples=40_000, random_state=0)


@pytest.fixture(scope="module")
def digits():
    return search("digits", "cortex-m4", 0.05, space=DIGITS_SPACE, simulate="all",
                  sim_samples=40_000, max_points=300, random_state=1)


# --------------------------------------------------------------------------
# evidence: predicted accuracy inside the simulated 99% interval
# --------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["hv", "digits"])
def test_predicted_inside_simulated_interval(name, request):
    res = request.getfixturevalue(name)
    predicted = [e for e in res.entries if e["predicted_accuracy"] is not None]
    assert len(predicted) >= 4
    front_pred = [e for e in res.pareto if e["predicted_accuracy"] is not None]
    assert front_pred, "the front has points with an exact prediction"
    for e in predicted:                   # every front point, and every other one too
        lo, hi = e["simulated_ci"]
        assert lo <= e["predicted_accuracy"] <= hi, (e["label"], e["predicted_accuracy"], lo, hi)
        assert e["accuracy_source"] == "predicted"
        assert e["accuracy_under_noise"] == e["predicted_accuracy"]


def test_kinds_and_prediction_methods(hv, digits):
    assert {e["kind"] for e in hv.entries} == {"protected_nb", "ecoc"}
    assert {e["kind"] for e in digits.entries} == {"ecoc", "ssbc"}
    nb = [e for e in hv.entries if e["kind"] == "protected_nb"]
    assert all("SCP" in e["predicted_method"] for e in nb)
    ssbc = [e for e in digits.entries if e["kind"] == "ssbc"]
    assert ssbc and all(e["predicted_accuracy"] is None and e["accuracy_source"] == "simulated"
                        for e in ssbc)
    for e in hv.entries + digits.entries:
        assert 0.0 <= e["clean_accuracy"] <= 1.0 and e["cycles"] > 0 and e["energy_nj"] > 0
        assert e["memory_source"] == "profile"


# --------------------------------------------------------------------------
# the front against brute force
# --------------------------------------------------------------------------
def _brute_front(points, ram=False):
    """Non-dominated indices by exhaustive pairwise comparison of tuples."""
    keep = []
    for i, (a_i, f_i, r_i, c_i) in enumerate(points):
        beaten = False
        for j, (a_j, f_j, r_j, c_j) in enumerate(points):
            if i == j:
                continue
            if ram:
                better_eq = a_j >= a_i and f_j <= f_i and r_j <= r_i
                strict = (a_j, -f_j, -r_j) != (a_i, -f_i, -r_i)
            else:
                better_eq = a_j >= a_i and f_j <= f_i
                strict = (a_j, f_j) != (a_i, f_i) or r_j < r_i
                if (a_j, f_j) == (a_i, f_i) and r_j > r_i:
                    strict = False
            if better_eq and strict:
                beaten = True
            elif (a_j, f_j, r_j) == (a_i, f_i, r_i) and (c_j, j) < (c_i, i):
                beaten = True
        if not beaten:
            keep.append(i)
    return set(keep)


@pytest.mark.parametrize("ram", [False, True])
def test_pareto_front_matches_brute_force_on_random_points(ram):
    rng = np.random.default_rng(3)
    for _ in range(40):
        n = int(rng.integers(1, 25))
        pts = [(float(rng.choice([0.8, 0.85, 0.9, 0.95])), int(rng.choice([100, 200, 300, 400])),
                int(rng.choice([8, 16, 32])), int(rng.integers(1, 4))) for _ in range(n)]
        entries = [{"accuracy_under_noise": a, "flash_bytes": f, "ram_bytes": r, "cycles": c}
                   for a, f, r, c in pts]
        front = pareto_front(entries, ram=ram)
        assert set(front) == _brute_front(pts, ram), pts
        flashes = [entries[i]["flash_bytes"] for i in front]
        assert flashes == sorted(flashes)


@pytest.mark.parametrize("name", ["hv", "digits"])
def test_search_front_is_the_nondominated_set(name, request):
    res = request.getfixturevalue(name)
    pts = [(e["accuracy_under_noise"], e["flash_bytes"], e["ram_bytes"], e["cycles"])
           for e in res.entries]
    assert set(res.front) == _brute_front(pts)
    for i, j in itertools.product(res.front, range(len(res.entries))):
        assert not dominates(res.entries[j], res.entries[i])
    # on the front, more flash buys more accuracy under noise
    acc = [e["accuracy_under_noise"] for e in res.pareto]
    assert acc == sorted(acc) and len(set(acc)) == len(acc)
    best = max(e["accuracy_under_noise"] for e in res.entries)
    assert res.recommended["accuracy_under_noise"] == best
    assert res.recommended is res.pareto[res.recommended_index]


# --------------------------------------------------------------------------
# screening, limits and the JSON report
# --------------------------------------------------------------------------
def test_screening_bounds_are_below_what_is_measured(hv, digits):
    from export._budget_space import load_task, screen
    from firmware_sim.profiles import get_profile
    prof = get_profile("cortex-m4")
    for res, data, mp in ((hv, "house_votes", None), (digits, "digits", 300)):
        task = load_task(data, random_state=res.settings["seed"], max_points=mp)
        for e in res.entries:
            lb = screen(e["config"], task, res.settings["seed"])
            assert lb["flash_bytes"] <= e["image_bytes"], e["label"]
            rt_f, rt_r = prof.runtime_bytes(e["kind"])
            assert lb["flash_bytes"] + rt_f <= e["flash_bytes"]
            assert lb["ram_bytes"] + rt_r <= e["ram_bytes"]
            if e["kind"] == "ecoc" and e["config"]["learner"] == "linear":
                assert e["image_bytes"] - lb["flash_bytes"] < 400    # exact up to the metadata


def test_max_flash_prunes_before_training_and_bounds_the_front(hv):
    cap = sorted(e["flash_bytes"] for e in hv.entries)[3]
    res = search("house_votes", "cortex-m4", 0.1, space=HV_SPACE, max_flash=cap,
                 sim_samples=2000)
    assert all(e["flash_bytes"] <= cap for e in res.entries)
    assert any(p["stage"] == "screening" for p in res.pruned)
    assert res.settings["n_pruned_screening"] >= 1


def test_json_schema(hv, tmp_path):
    path = tmp_path / "front.json"
    text = hv.to_json(path)
    d = json.loads(path.read_text())
    assert d == json.loads(text)
    assert set(d) == {"pareto", "recommended", "search"}
    assert isinstance(d["recommended"], int) and 0 <= d["recommended"] < len(d["pareto"])
    for e in d["pareto"]:
        assert set(ENTRY_KEYS) <= set(e)
        assert isinstance(e["config"], dict) and e["config"]["kind"] in ("protected_nb", "ecoc")
        assert isinstance(e["flash_bytes"], int) and isinstance(e["ram_bytes"], int)
        for k in ("cycles", "energy_nj", "clean_accuracy"):
            assert isinstance(e[k], float)
        assert e["predicted_accuracy"] is None or isinstance(e["predicted_accuracy"], float)
        assert isinstance(e["simulated_accuracy"], float)
        lo, hi = e["simulated_ci"]
        assert 0.0 <= lo <= e["simulated_accuracy"] <= hi <= 1.0
        assert e["memory_source"] in ("build", "profile")
    s = d["search"]
    assert s["profile"] == "cortex-m4" and s["eps"] == 0.1 and s["fault"]["model"] == "bsc"
    assert len(s["evaluated"]) == len(hv.entries)


def test_default_simulation_covers_front_and_unpredicted_only():
    res = search("house_votes", "cortex-m4", 0.1, space=HV_SPACE, sim_samples=5000)
    for i, e in enumerate(res.entries):
        simulated = e["simulated_accuracy"] is not None
        assert simulated == (i in res.front or e["predicted_accuracy"] is None), e["label"]
    assert res.settings["n_simulated"] == sum(e["simulated_accuracy"] is not None
                                              for e in res.entries)


def test_export_writes_container_onnx_and_firmware(hv, tmp_path):
    import onnx
    from firmware_sim import load
    info = hv.export(tmp_path / "best")
    dev = load(Path(info["container"]))
    assert dev.container.kind == hv.recommended["kind"]
    onnx.checker.check_model(onnx.load(info["onnx"]))
    assert (Path(info["firmware"]) / "model_image.c").is_file()
    rep = json.loads(Path(info["report"]).read_text())
    assert rep["recommended"]["label"] == hv.recommended["label"]


def test_min_accuracy_filters_the_front():
    base = search("house_votes", "cortex-m4", 0.1, space=HV_SPACE, sim_samples=2000)
    accs = sorted(e["accuracy_under_noise"] for e in base.entries)
    floor = accs[len(accs) // 2]
    res = search("house_votes", "cortex-m4", 0.1, space=HV_SPACE, sim_samples=2000,
                 min_accuracy=floor)
    assert all(e["accuracy_under_noise"] >= floor for e in res.pareto)
    assert res.recommended["label"] == base.recommended["label"]


# --------------------------------------------------------------------------
# bad input: one-line errors, exit status 2, nothing written
# --------------------------------------------------------------------------
@pytest.mark.parametrize("kw, msg", [
    ({"eps": 0.5}, r"eps must be in \[0, 0.5\)"),
    ({"eps": -0.1}, r"eps must be in \[0, 0.5\)"),
    ({"max_flash": 500}, "no configuration fits: the smallest, nb unprotected, needs at least"),
    ({"min_accuracy": 0.999}, "no configuration reaches min_accuracy 0.999 under noise"),
    ({"budget_s": 1e-9}, "ran out before any configuration was measured"),
    ({"site": "sky"}, "site must be"),
    ({"space": {"kinds": ("ssbc",), "colour": 1}}, "unknown search-space field"),
])
def test_bad_inputs(kw, msg):
    args = {"eps": 0.1, "space": HV_SPACE, "sim_samples": 500, **kw}
    with pytest.raises(ValueError, match=msg):
        search("house_votes", "cortex-m4", **args)


def _tiny_profile(tmp_path):
    p = tmp_path / "tiny.json"
    p.write_text(json.dumps({"base": "cortex-m0", "name": "tiny", "flash_bytes": 2048}))
    return p


def test_profile_the_smallest_model_cannot_fit(tmp_path):
    with pytest.raises(ValueError, match="profile 'tiny' has 2048 B flash"):
        search("house_votes", _tiny_profile(tmp_path), 0.1, space=HV_SPACE)


@pytest.mark.parametrize("extra, msg", [
    (["--eps", "0.5"], "error: --eps must be in [0, 0.5)"),
    (["--eps", "0.1", "--max-flash", "500"], "error: no configuration fits"),
    (["--eps", "0.1", "--min-accuracy", "0.999"], "error: no configuration reaches"),
    (["--eps", "0.1", "--designs", "hamming"], "error: --designs: unknown value(s) ['hamming']"),
    (["--eps", "0.1", "--profile", "TINY"], "error: no configuration fits"),
])
def test_cli_errors_write_nothing(extra, msg, tmp_path, capsys):
    extra = [str(_tiny_profile(tmp_path)) if v == "TINY" else v for v in extra]
    out = tmp_path / "out.json"
    argv = ["budget", "house_votes", "--profile", "cortex-m4", "--kinds", "nb",
            "--nb-rates", "0,1", "--sim-samples", "500", "--quiet", "--json", str(out),
            "--export", str(tmp_path / "best")] + extra
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(msg) and "\n" not in err, err
    assert not out.exists() and not (tmp_path / "best").exists()


def test_cli_smoke(tmp_path, capsys):
    out = tmp_path / "front.json"
    argv = ["budget", "house_votes", "--profile", "cortex-m0", "--eps", "0.1", "--kinds",
            "nb,ecoc", "--designs", "bch", "--learners", "linear", "--nb-rates", "0,1",
            "--sim-samples", "3000", "--no-build", "--json", str(out)]
    assert main(argv) == 0
    cap = capsys.readouterr()
    assert "Pareto front on house_votes" in cap.out and "recommended (*)" in cap.out
    # one line per configuration from export.progress.Progress, the one reporter
    lines = [ln for ln in cap.err.splitlines() if ln.startswith("budget: ")]
    assert any("configurations:" in ln for ln in lines)
    assert sum("ETA" in ln for ln in lines) >= 2, cap.err
    d = json.loads(out.read_text())
    # the growing search of nb and ecoc, and the baselines (a plain forest among them)
    assert d["pareto"][d["recommended"]]["config"]["kind"] in ("protected_nb", "ecoc", "forest")
    assert d["search"]["memory_source"] == "profile" and d["search"]["strategy"] == "grow"
    assert {b["name"] for b in d["search"]["baselines"]} == {"plain forest"}
    assert d["search"]["site"] == "compute"


# --------------------------------------------------------------------------
# the other fault models: predictions where a closed form holds, else simulated
# --------------------------------------------------------------------------
FAULT_SPACE = SearchSpace(kinds=("protected_nb", "ecoc"), nb_rates=(0, 1), nb_plans=("uniform",),
                          designs=("one_vs_all",), learners=("linear",))


@pytest.mark.parametrize("fault, eps, predicted", [
    ("burst", 0.05, False),          # correlated copies: no closed form, simulated
    ("stuck", 0.05, True),           # independent wrong lines: exact
    ("seu", 0.05, False),            # many upsets per image: the bound is too wide
    ("seu", 1e-6, True),             # rare upsets: single-upset table, narrow interval
])
def test_other_faults_predict_where_a_closed_form_holds(fault, eps, predicted):
    # the closed forms of the models themselves (protected variants: tests/test_budget_protect.py)
    res = search("house_votes", "cortex-m4", eps, fault=fault, space=FAULT_SPACE,
                 sim_samples=4000, random_state=0, protection="none")
    assert len(res.entries) == 3 and res.pareto
    for e in res.entries:
        assert (e["predicted_accuracy"] is not None) == predicted, (e["label"],
                                                                   e["predicted_method"])
        if not predicted:
            assert e["simulated_accuracy"] is not None
            assert e["accuracy_under_noise"] == e["simulated_accuracy"]
    for e in res.pareto:
        if e["predicted_accuracy"] is not None and e["simulated_ci"] is not None:
            lo, hi = e["simulated_ci"]
            assert lo - 1e-9 <= e["predicted_accuracy"] <= hi + 1e-9, e["label"]


# --------------------------------------------------------------------------
# the options object, the deprecated seed, the progress callable (issue 25)
# --------------------------------------------------------------------------
NB_SPACE = SearchSpace(kinds=("protected_nb",), nb_rates=(0, 1), nb_plans=("uniform",))


def _figures(res):
    return [(e["label"], e["flash_bytes"], e["predicted_accuracy"], e["simulated_accuracy"])
            for e in res.entries]


def test_options_object_equals_keywords_and_seed_is_a_deprecated_alias():
    from export.budget import SearchOptions
    kw = {"space": NB_SPACE, "sim_samples": 1000}
    ref = search("house_votes", "cortex-m4", 0.1, random_state=3, **kw)
    opts = SearchOptions(profile="cortex-m4", eps=0.1, random_state=3, **kw)
    assert _figures(search("house_votes", options=opts)) == _figures(ref)
    assert _figures(search("house_votes", "cortex-m4", options=opts, random_state=3)) == \
        _figures(ref)
    with pytest.warns(FutureWarning, match="seed=.*deprecated; use random_state"):
        old = search("house_votes", "cortex-m4", 0.1, seed=3, **kw)
    assert _figures(old) == _figures(ref) and old.settings["seed"] == 3
    with pytest.raises(TypeError, match="both seed and random_state"), \
            pytest.warns(FutureWarning):
        search("house_votes", "cortex-m4", 0.1, seed=3, random_state=4, **kw)
    with pytest.raises(TypeError, match=r"unknown option\(s\) \['colour'\]"):
        search("house_votes", "cortex-m4", 0.1, colour=1, **kw)


def test_progress_is_a_callable_and_the_library_prints_nothing(capsys):
    calls = []
    res = search("house_votes", "cortex-m4", 0.1, space=NB_SPACE, sim_samples=1000,
                 progress=lambda done, total, text: calls.append((done, total, text)))
    assert capsys.readouterr().err == ""
    assert [c[:2] for c in calls] == [(i + 1, len(res.entries)) for i in range(len(calls))]
    assert all(c[2].startswith(e["label"] + ": accuracy under noise")
               for c, e in zip(calls, res.entries))


def test_plot_marks_a_kind_the_registry_does_not_know(hv, tmp_path):
    pytest.importorskip("matplotlib")
    import copy
    res = copy.copy(hv)
    res.entries = [dict(e) for e in hv.entries]
    res.entries[0]["kind"] = "some_other_kind"
    assert Path(res.plot(tmp_path / "front.png")).stat().st_size > 0
