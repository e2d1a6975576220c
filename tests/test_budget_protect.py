"""Protection as part of each budget configuration (issue 27 item 3, issue 28 items 1
and 5): at the wire and image sites the search offers planned protection of the
fitted model, measures the protected device and exports what it measured.

Glass (labels 1, 2, 3, 5, 6, 7) as a CSV and with string labels; tiny spaces
(one or two forests, few trials) keep every search to seconds.
"""

import json
from pathlib import Path

import numpy as np
import pytest

from export.budget import SearchSpace, make_budget_fault, search

GLASS = str(Path(__file__).parent / "data" / "glass.csv")
SPACE = SearchSpace(kinds=("forest",), forest_trees=(2, 3), forest_depths=(3,),
                    forest_leaves=("class",))
FAST = {"strategy": "grid", "baselines": False, "sim_samples": 3000}


def _glass_strings():
    from export.data import load_table
    t = load_table(GLASS)
    return t.X, np.array([f"type-{v}" for v in np.asarray(t.y).tolist()])


def _figures(res):
    return [(e["label"], e["flash_bytes"], e["ram_bytes"], e["clean_accuracy"],
             e["accuracy_under_noise"], e["simulated_ci"], json.dumps(e["protection"]))
            for e in res.entries]


def _independent_campaign(res, i, site):
    """The entry's campaign again, from its container's bytes alone (same fault,
    trials and seed)."""
    from firmware_sim import load, run_campaign
    e, f = res.entries[i], res._fitted[i]
    dev = load(bytes(f.export.container))
    fault = make_budget_fault(res.settings["fault"]["model"], res.settings["eps"])
    out = run_campaign(dev, f.X_device, fault, n_trials=e["simulated_trials"], random_state=0,
                       y=f.y_device, site=site, confidence=0.99)
    return out.points[0].accuracy, dev


@pytest.fixture(scope="module")
def wire():
    return search(GLASS, "cortex-m4", 0.01, site="wire", space=SPACE, **FAST)


def test_wire_variants_carry_their_protection(wire):
    from firmware_sim.artifact import read_container
    from firmware_sim.profiles import get_profile
    from firmware_sim.wire import WIRE_COPIES

    rt_flash, _ = get_profile("cortex-m4").runtime_bytes("forest")
    base = {e["label"]: e for e in wire.entries if e["protection"] is None}
    prot = [(i, e) for i, e in enumerate(wire.entries) if e["protection"] is not None]
    assert {e["protection"]["level"] for _, e in prot} == {1, 2}
    n_bits = 16 * wire.settings["n_features"]
    for i, e in prot:
        p = e["protection"]
        assert p["layer"] == "wire" and e["label"].endswith(f"+wire {p['level']}x")
        raw = wire._fitted[i].export.container
        copies = read_container(raw).arrays[WIRE_COPIES].astype(np.int64)
        # the plan's extra bits stay within the level's budget and are what it reports
        assert (copies - 1).sum() <= n_bits * p["level"]
        assert int(copies.sum()) == p["wire_bits"] and p["unprotected_wire_bits"] == n_bits
        # flash is the protected container plus the runtime, more than the model alone
        unprot = base[e["label"].rsplit(" +", 1)[0]]
        assert e["image_bytes"] == len(raw) == p["protected_image_bytes"]
        assert e["flash_bytes"] == len(raw) + rt_flash > unprot["flash_bytes"]
        # one fit: the same model under the protection (clean labels unchanged)
        assert e["clean_accuracy"] == unprot["clean_accuracy"]
        # the accuracy under noise is a campaign on the protected device
        acc, dev = _independent_campaign(wire, i, "wire")
        assert type(dev).__name__ == "WireProtectedDevice"
        assert e["accuracy_source"] == "simulated" and e["simulated_accuracy"] == acc
    # repetition pays at the wire for the same model
    for _, e in prot:
        assert e["accuracy_under_noise"] >= base[e["label"].rsplit(" +", 1)[0]][
            "accuracy_under_noise"] - 0.02


GROW = {"baselines": False, "sim_samples": 2000, "patience": 1, "grow_width": 2}
SMALL = SearchSpace(kinds=("forest",), forest_trees=(2,), forest_depths=(2,),
                    forest_leaves=("class",))


@pytest.fixture(scope="module")
def grown_wire():
    return search(GLASS, "cortex-m4", 0.01, site="wire", space=SMALL, **GROW)


def test_growth_steps_to_more_protection(grown_wire):
    entries = grown_wire.entries
    assert all(e["protection"] is None for e in entries if e["round"] == 0)  # the models
    when = {json.dumps(e["config"], sort_keys=True): e["round"] for e in entries}
    two = [e for e in entries if (e["protection"] or {}).get("level") == 2]
    assert two, [e["label"] for e in entries]
    for e in two:      # one step of more protection from the same model at level 1
        one = {**e["config"], "protection": {"layer": "wire", "level": 1}}
        assert when[json.dumps(one, sort_keys=True)] < e["round"]
        model = {k: v for k, v in e["config"].items() if k != "protection"}
        base = next(b for b in entries if b["config"] == model)
        assert e["clean_accuracy"] == base["clean_accuracy"]


def test_wire_jobs_give_the_same_result(grown_wire):
    # the growing search: steps of more protection reuse the fitted model, packed
    # for the worker processes
    res = search(GLASS, "cortex-m4", 0.01, site="wire", space=SMALL, jobs=2, **GROW)
    assert _figures(res) == _figures(grown_wire)


def test_wire_export_writes_the_protected_container(wire, tmp_path):
    from firmware_sim import load
    rec = wire.recommended
    info = wire.export(tmp_path / "best")
    dev = load(Path(info["container"]))
    assert dev.container.kind == "forest"
    if rec["protection"] is not None:
        assert type(dev).__name__ == "WireProtectedDevice"
        assert "Its protection: wire" in Path(info["report_md"]).read_text()
        assert (Path(info["firmware"]) / "model_image.c").is_file()   # C decodes the wire
    assert json.loads(Path(info["report"]).read_text())["recommended"]["protection"] == \
        rec["protection"]


def test_image_site_string_labels_protected_and_exported(tmp_path):
    from firmware_sim import load
    space = SearchSpace(kinds=("forest",), forest_trees=(3,), forest_depths=(3,),
                        forest_leaves=("class",))
    res = search(_glass_strings(), "cortex-m4", 1e-3, site="image", space=space,
                 protection=(0.04, 0.125), **FAST)
    prot = [(i, e) for i, e in enumerate(res.entries) if e["protection"] is not None]
    assert prot, res.skipped
    base = next(e for e in res.entries if e["protection"] is None)
    # 4% of this small image does not hold the protection entry: said so, not measured
    assert any(s["stage"] == "protection" and "4%" in s["label"] for s in res.skipped) or \
        any(e["protection"]["level"] == 0.04 for _, e in prot)
    for i, e in prot:
        p = e["protection"]
        raw = res._fitted[i].export.container
        dev_container = load(bytes(raw)).container
        assert dev_container.protect is not None
        assert e["image_bytes"] == len(raw) > base["image_bytes"]
        # the runtime part grows by the decoder's measured code (BCH or not), and
        # the image is in RAM too (the C runtime corrects a writable copy)
        from firmware_sim.protection import DECODER_CODE_BYTES, plan_of
        plan = plan_of(dev_container.protect, arrays=dev_container.arrays)
        bch = any(sch == "bch" for sch, _ in plan.values())
        assert e["flash_bytes"] - e["image_bytes"] == \
            base["flash_bytes"] - base["image_bytes"] + DECODER_CODE_BYTES["cortex-m4"][bch]
        assert e["ram_bytes"] >= base["ram_bytes"] + len(raw)
        assert 0 < p["overhead"] <= p["level"] + 1e-9 and p["allocation"]
        acc, _ = _independent_campaign(res, i, None)
        assert e["simulated_accuracy"] == acc
        assert e["clean_accuracy"] == base["clean_accuracy"]
    best = max((e for _, e in prot), key=lambda e: e["accuracy_under_noise"])
    assert best["accuracy_under_noise"] > base["accuracy_under_noise"]
    assert res.settings["protection"]["levels"] == [0.04, 0.125]
    if res.recommended["protection"] is not None:
        info = res.export(tmp_path / "best")
        dev = load(Path(info["container"]))
        assert dev.container.protect is not None
        md = Path(info["report_md"]).read_text()
        assert "Its protection: image" in md
        # the C runtime may not decode image protection: firmware written or said why
        assert "firmware" in info or "firmware/ not written" in md
        import onnxruntime as ort
        sess = ort.InferenceSession(str(info["onnx"]))
        X, _ = _glass_strings()
        out = sess.run(None, {sess.get_inputs()[0].name: X[:5].astype(np.float32)})[0]
        assert set(np.asarray(out).astype(str).tolist()) <= {f"type-{v}" for v in
                                                             (1, 2, 3, 5, 6, 7)}


def test_protection_levels_are_checked():
    from export._budget_protect import check_levels
    assert check_levels("auto", "compute", 0.05) == ()
    assert check_levels("auto", "wire", 0.0) == ()
    assert check_levels("auto", "image", 1e-3) == (0.04, 0.125)
    assert check_levels([2.0, 1], "wire", 0.01) == (1, 2)
    with pytest.raises(ValueError, match="apply at the wire and image sites"):
        check_levels((1,), "compute", 0.05)
    with pytest.raises(ValueError, match="overheads .* in \\(0, 4\\]"):
        check_levels((5,), "image", 1e-3)
    with pytest.raises(ValueError, match="protection must be 'auto', 'none'"):
        check_levels("lots", "wire", 0.01)
    with pytest.raises(ValueError, match="apply at the wire and image sites"):
        search(GLASS, "cortex-m4", 0.05, space=SPACE, protection=(1,), **FAST)


def test_no_protection_at_the_compute_site_or_when_off():
    res = search(GLASS, "cortex-m4", 0.05, space=SPACE, **FAST)
    assert all(e["protection"] is None for e in res.entries)
    off = search(GLASS, "cortex-m4", 0.01, site="wire", space=SPACE, protection="none", **FAST)
    assert all(e["protection"] is None for e in off.entries)
    assert off.settings["protection"]["levels"] == []


def test_wire_dask_local_cluster_gives_the_same_result(grown_wire):
    distributed = pytest.importorskip("dask.distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        res = search(GLASS, "cortex-m4", 0.01, site="wire", space=SMALL, scheduler=client,
                     **GROW)
    assert _figures(res) == _figures(grown_wire)


def test_growth_passes_a_level_that_holds_nothing_on_to_the_next():
    # 4% of a small forest's image is less than the protection entry: the step
    # goes on to 12.5% of the same model in the next round
    res = search(_glass_strings(), "cortex-m4", 1e-3, site="image", space=SMALL, **GROW)
    skipped = [s for s in res.skipped if s["stage"] == "protection"]
    assert skipped and all("+image 4%" in s["label"] for s in skipped)
    when = {json.dumps(e["config"], sort_keys=True): e["round"] for e in res.entries}
    for s in skipped:
        nxt = {**s["config"], "protection": {"layer": "image", "level": 0.125}}
        assert json.dumps(nxt, sort_keys=True) in when, s["label"]
    assert max(e["accuracy_under_noise"] for e in res.entries if e["protection"]) > \
        max(e["accuracy_under_noise"] for e in res.entries if not e["protection"])


def test_image_protected_front_points_keep_profile_figures_when_not_built():
    from export.firmware import toolchain_missing
    if toolchain_missing("cortex-m4"):
        pytest.skip("no arm-none-eabi toolchain")
    space = SearchSpace(kinds=("forest",), forest_trees=(3,), forest_depths=(3,),
                        forest_leaves=("class",))
    res = search(GLASS, "cortex-m4", 1e-3, site="image", space=space, protection=(0.125,),
                 build=True, **FAST)
    fc = res.settings["front_costs"]
    for e in res.pareto:
        if (e["protection"] or {}).get("layer") == "image" and \
                e["memory_source"] == "profile":
            # the C runtime does not decode __protect__ yet: said, not built
            assert e["label"] in fc["not_built"] and "not built" in e["cycles_note"]
            assert "not built" in res.table().splitlines()[0]
        else:
            assert e["memory_source"] == "build"
