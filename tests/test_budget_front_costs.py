"""Real costs of the budget front (issue 28, item 3): every point of the front
built for the profile's firmware target, its cycles counted exactly under
simavr on the AVR parts, labelled; profile estimates with ``--no-build``; a
point whose real build exceeds the part dropped from the front.

Glass (labels 1, 2, 3, 5, 6, 7: not 0..k-1) on the ATmega328P, a grid of three
ECOC configurations, no baselines: each search takes seconds. The cycles the
search reports are compared with an independent run of the exported model by
the firmware check (``export.cli.firmware.run_firmware_cli``, what ``edgecode
firmware --check`` runs) on the same test rows. Outside CI a missing AVR
toolchain or simavr skips the tests that need them; with ``EDGECODE_CI`` set
they fail.
"""

import csv
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import export.budget as budget
from export._budget_front import FRONT_CYCLE_FRAMES
from export._budget_space import load_task
from export.budget import SearchSpace, search
from export.cli import main
from export.firmware import toolchain_missing

GLASS = Path(__file__).parent / "data" / "glass.csv"
CI = bool(os.environ.get("EDGECODE_CI"))
#: Two BCH codes of depth-3 trees (both on the front) and one-vs-all ridge (dominated).
SPACE = SearchSpace(kinds=("ecoc",), designs=("one_vs_all", "bch"), learners=("linear", "tree"),
                    tree_depths=(3,))
FAST = {"strategy": "grid", "baselines": False, "sim_samples": 3000, "space": SPACE}
CLI_SPACE = ["--strategy", "grid", "--no-baselines", "--kinds", "ecoc", "--designs",
             "one_vs_all,bch", "--learners", "linear,tree", "--depths", "3",
             "--sim-samples", "3000"]
EDGECODE = [sys.executable, "-c", "import sys; from export.cli import main; sys.exit(main())"]


@pytest.fixture(scope="module")
def avr():
    missing = toolchain_missing("atmega328p", run=True)
    if missing:
        if CI:
            pytest.fail(f"EDGECODE_CI: {missing}")
        pytest.skip(missing)


@pytest.fixture(scope="module")
def cli_run(avr, tmp_path_factory):
    """``edgecode budget glass.csv --profile atmega328p`` (real builds by default),
    its JSON, table and exported model."""
    d = tmp_path_factory.mktemp("front")
    argv = ["budget", str(GLASS), "--profile", "atmega328p", "--eps", "0.05", *CLI_SPACE,
            "--quiet", "--json", str(d / "f.json"), "--export", str(d / "best")]
    import contextlib
    import io
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(argv) == 0
    return json.loads((d / "f.json").read_text()), out.getvalue(), d


def test_front_points_are_built_and_counted_under_simavr(cli_run):
    doc, table, _ = cli_run
    front = doc["pareto"]
    assert len(front) >= 2
    for e in front:
        assert e["memory_source"] == "build" and e["cycles_source"] == "simavr", e["label"]
        assert e["cycles_frames"] == FRONT_CYCLE_FRAMES and e["firmware_agrees"] is True
        assert e["front_measured"] and e["open_cycles"] > e["cycles"] > 0
        # energy: the exact cycles at the ATmega328P's datasheet power (5 V, 10.4 mA, 16 MHz)
        assert e["energy_nj"] == pytest.approx(e["cycles"] * 5.0 * 10.4e-3 / 16e6 * 1e9)
    rest = [e for e in doc["search"]["evaluated"] if not e["on_front"]]
    assert rest and all(e["cycles_source"] == "estimate" and e["cycles_frames"] is None
                        and not e["front_measured"] for e in rest)
    fc = doc["search"]["front_costs"]
    assert fc["target"] == "atmega328p" and fc["measured"] == len(front) and not fc["dropped"]
    assert (fc["memory_source"], fc["cycles_source"], fc["frames"]) == \
        ("build", "simavr", FRONT_CYCLE_FRAMES)
    assert "costs from" in table and table.count("build/simavr") == len(front)
    assert f"exact cycles under simavr (mean of {FRONT_CYCLE_FRAMES} test frames)" in table


def test_reported_cycles_are_what_the_firmware_check_measures(cli_run, tmp_path):
    """The recommended point's cycles and open cycles equal an independent
    ``edgecode firmware --check`` of the exported model on the same test rows
    (the budget's split of glass, rebuilt here, written as a CSV)."""
    from export.cli.firmware import run_firmware_cli

    doc, _, d = cli_run
    rec = doc["pareto"][doc["recommended"]]
    task = load_task(str(GLASS))          # the budget's split: test_size 0.3, seed 0
    rows = tmp_path / "rows.csv"
    with rows.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow([f"f{j}" for j in range(task.n_features)] + ["class"])
        for x, y in zip(task.X_test[:FRONT_CYCLE_FRAMES], task.labels(task.y_test)):
            w.writerow([repr(float(v)) for v in x] + [int(y)])
    import io
    res = run_firmware_cli(str(d / "best" / "model.edgc"), tmp_path / "fw", "atmega328p",
                           check=True, dataset=str(rows), max_points=FRONT_CYCLE_FRAMES,
                           random_frames=0, stream=io.StringIO(), err_stream=io.StringIO())
    run = res["check"]["run"]
    assert res["check"]["equal"] and len(run.infer_counts) == FRONT_CYCLE_FRAMES
    assert rec["cycles"] == float(np.mean(run.infer_counts))
    assert rec["open_cycles"] == float(run.open_count)
    assert (rec["flash_bytes"], rec["ram_bytes"]) == (res["build"].flash_bytes,
                                                      res["build"].ram_bytes)
    md = (d / "best" / "report.md").read_text()
    assert "| memory from | cycles from |" in md
    assert f"| build | simavr ({FRONT_CYCLE_FRAMES} frames) |" in md


def test_no_build_keeps_the_profile_estimates():
    res = search(str(GLASS), "atmega328p", 0.05, build=False, **FAST)
    for e in res.entries:
        assert (e["memory_source"], e["cycles_source"]) == ("profile", "estimate")
        assert not e["front_measured"] and e["cycles_frames"] is None
    fc = res.settings["front_costs"]
    assert fc["measured"] == 0 and fc["memory_source"] == "profile" and "build=False" in fc["note"]
    assert "profile/estimate" in res.table() and "front not built" in res.table()


def test_a_front_point_over_the_part_once_built_is_dropped(cli_run, tmp_path, monkeypatch):
    """A part whose profile counts no runtime bytes screens every configuration
    in (the image alone fits) and the search measures them on that estimate;
    the builds of the front then add the runtime: the largest point of the
    built front (``cli_run``: the same search on the real part) no longer fits
    and leaves the front, the front is recomputed (a point that joins it is
    built in turn, and dropped too if it does not fit), and the next point is
    recommended."""
    built = cli_run[0]["pareto"]
    sizes = [e["flash_bytes"] for e in built]
    assert len(sizes) >= 2 and sizes == sorted(sizes) and sizes[-1] > sizes[-2]
    limit = (sizes[-1] + sizes[-2]) // 2
    prof = tmp_path / "lean.json"
    prof.write_text(json.dumps({"base": "atmega328p", "name": "lean", "flash_bytes": limit,
                                "runtime_flash_bytes": 0, "runtime_ram_bytes": 0}))
    monkeypatch.setattr(budget, "AUTO_BUILD_MAX", 0)      # search on the estimates
    res = search(str(GLASS), str(prof), 0.05, build="auto", **FAST)
    assert res.settings["memory_source"] == "profile" and res.settings["target"] == "atmega328p"
    big = built[-1]["label"]
    dropped = [p for p in res.pruned if p["stage"] == "built"]
    assert big in [p["label"] for p in dropped]
    for p in dropped:
        assert p["flash_bytes"] > limit and f"> profile {limit} B" in p["reason"]
        assert p["estimated_flash_bytes"] <= limit
        assert p["label"] not in [e["label"] for e in res.entries]
    assert res.settings["n_pruned_built"] == len(dropped)
    assert [d["label"] for d in res.settings["front_costs"]["dropped"]] == \
        [p["label"] for p in dropped]
    assert all(e["memory_source"] == "build" and e["flash_bytes"] <= limit for e in res.pareto)
    assert res.recommended["label"] == built[-2]["label"]
    assert f"dropped from the front once built: {big}" in res.table()


def test_ctrl_c_while_the_front_is_built_writes_nothing(avr, tmp_path):
    """SIGINT during the front's builds: exit status 130 within seconds, no output,
    no temporary build folder left."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    proc = subprocess.Popen([*EDGECODE, "budget", str(GLASS), "--profile", "atmega328p",
                             "--eps", "0.05", *CLI_SPACE[:-1], "10000000", "--json", "f.json",
                             "--export", "best"], cwd=work, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1", "TMPDIR": str(tmp)})
    seen, err = threading.Event(), []

    def read():
        for line in proc.stderr:
            err.append(line)
            if line.startswith("budget: front: building"):
                seen.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert seen.wait(120), "".join(err)[-2000:]
        time.sleep(0.2)
        assert proc.poll() is None, "the search ended before it could be interrupted"
        proc.send_signal(signal.SIGINT)
        t0 = time.monotonic()
        rc = proc.wait(timeout=60)
        took = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    reader.join(timeout=5)
    assert rc == 130 and took < 15, "".join(err)[-2000:]
    assert list(work.iterdir()) == []
    assert not [p for p in tmp.iterdir() if p.name.startswith(("edgecode-front-",
                                                               "edgecode-budget-"))]


def test_worker_processes_give_the_same_built_front(cli_run):
    """The front is built in the main process after the workers close: with
    ``jobs=2`` the entries and the front's real costs are those of one process
    (``cli_run``, the same search from the command line)."""
    doc = cli_run[0]
    assert doc["search"]["space"] == json.loads(json.dumps(SPACE.to_dict()))
    res = search(str(GLASS), "atmega328p", 0.05, build="auto", jobs=2, **FAST)
    keys = ("label", "flash_bytes", "ram_bytes", "cycles", "open_cycles", "energy_nj",
            "memory_source", "cycles_source", "accuracy_under_noise", "simulated_ci")
    got = json.loads(res.to_json())
    for mine, theirs in ((got["pareto"], doc["pareto"]),
                         (got["search"]["evaluated"], doc["search"]["evaluated"])):
        assert [[e[k] for k in keys] for e in mine] == [[e[k] for k in keys] for e in theirs]
    assert got["recommended"] == doc["recommended"]


@pytest.mark.parametrize("suffix", [".json", ".toml"])
def test_a_profile_file_builds_for_the_target_of_its_base(tmp_path, suffix):
    """A profile file over an AVR part is built and counted for that part, whether
    it is written in JSON or TOML (the base used to be read from .json files only)."""
    if suffix == ".toml" and sys.version_info < (3, 11):
        pytest.skip("TOML profiles need tomllib (Python >= 3.11)")
    from firmware_sim.profiles import load_profile
    path = tmp_path / f"my-uno{suffix}"
    path.write_text('{"base": "atmega328p", "ram_bytes": 2048}' if suffix == ".json"
                    else 'base = "atmega328p"\nram_bytes = 2048\n', encoding="utf-8")
    prof = load_profile(str(path))
    assert prof.name == "my-uno"
    assert budget._target_for(prof) == "atmega328p"
    assert budget._target_for(load_profile("cortex-m4")) == "cortex-m4"
    plain = tmp_path / f"plain{suffix}"             # no base: cortex-m0's target
    plain.write_text('{"ram_bytes": 4096}' if suffix == ".json" else "ram_bytes = 4096\n",
                     encoding="utf-8")
    assert budget._target_for(load_profile(str(plain))) == "cortex-m0plus"
