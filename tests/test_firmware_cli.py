"""``edgecode firmware`` as users run it, on every model kind (issue 24).

Artifacts are made the way a user makes them (``edgecode ecoc`` / ``edgecode
hash`` on a CSV; naive Bayes through the Python API on the bundled DNA CSV)
from data whose class labels are not ``0..k-1`` (``tests/data/glass.csv``:
1, 2, 3, 5, 6, 7; ``tests/data/ecoli.csv``: strings; DNA: ``--positive ei``),
then ``edgecode firmware ART --check`` builds the C runtime and compares it
with ``firmware_sim`` frame for frame, on the host and on every Cortex-M
target QEMU runs (``--build`` only on cortex-m0plus). Outside CI a missing
tool skips with the reason; with ``EDGECODE_CI`` set it fails.
"""

import json
from pathlib import Path

import numpy as np
import pytest

from export.cli import main
from export.firmware import TARGETS
from toolchains import need_toolchain

DATA = Path(__file__).resolve().parent / "data"
DNA = Path(__file__).resolve().parents[1] / "edgecode" / "datasets" / "data" / "dna_statlog.csv.gz"

#: Cortex-M targets that run under QEMU (every one TARGETS has; the AVR and
#: RISC-V targets: tests/test_firmware_targets.py).
QEMU_TARGETS = sorted(t for t, spec in TARGETS.items() if spec.arm and spec.qemu is not None)
BUILD_ONLY = sorted(t for t, spec in TARGETS.items() if spec.arm and spec.qemu is None)


def _cli(argv, capsys):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory):
    """One small artifact per kind, each recording the dataset it was made on."""
    import contextlib
    import io

    from edgecode.naive_bayes import BinaryNaiveBayes
    from export.data import load_binary
    from export.naive_bayes import export_protected_nb

    d = tmp_path_factory.mktemp("artifacts")
    quiet = io.StringIO()
    runs = {
        "ecoc_tree": ["ecoc", DATA / "glass.csv", "--code", "one_vs_all", "--learner", "tree",
                      "--trials", "1", "--eps", "0"],
        "ecoc_linear": ["ecoc", DATA / "ecoli.csv", "--code", "dense_random", "--n-columns", "8",
                        "--learner", "logistic", "--trials", "1", "--eps", "0"],
        "ssbc": ["hash", DATA / "glass.csv", "--bits", "16", "--anchors", "24", "--sketch", "20",
                 "--knn", "3"],
    }
    out = {}
    for name, argv in runs.items():
        out[name] = d / f"{name}.edgc"
        with contextlib.redirect_stdout(quiet):
            assert main([str(a) for a in argv] + ["--out", str(out[name])]) == 0, name
    data = load_binary(str(DNA), positive="ei")
    out["nb"] = d / "nb.edgc"
    nb = BinaryNaiveBayes().fit(data.X, data.y)          # 180 features, repetitions 0..2
    export_protected_nb(nb, np.arange(180) % 3, container_path=out["nb"], X_check=data.X,
                        meta={"dataset": str(DNA), "dataset_options": json.dumps({"positive": "ei"}),
                              "classes": list(data.target_names)})
    return out


KINDS = ("nb", "ecoc_tree", "ecoc_linear", "ssbc")


@pytest.mark.parametrize("target", ["host"] + QEMU_TARGETS)
@pytest.mark.parametrize("kind", KINDS)
def test_firmware_check_from_the_cli_on_every_kind(kind, target, artifacts, tmp_path, capsys):
    """`edgecode firmware ART --check` used to fail on every ECOC and SSBC artifact
    (frames stacked as int64: "ecoc frames must be int16")."""
    need_toolchain(target, run=True)
    code, out, err = _cli(["firmware", artifacts[kind], "--out", tmp_path / "fw", "--target",
                           target, "--check", "--max-points", "40"], capsys)
    assert code == 0, err
    assert "labels and decision integers equal firmware_sim's" in out, out
    assert "(40 rows of " in out and "+ 100 random frames" in out, out     # the data's rows


@pytest.mark.parametrize("target", BUILD_ONLY)
@pytest.mark.parametrize("kind", KINDS)
def test_firmware_build_from_the_cli_on_build_only_targets(kind, target, artifacts, tmp_path,
                                                            capsys):
    need_toolchain(target)
    code, out, err = _cli(["firmware", artifacts[kind], "--out", tmp_path / "fw", "--target",
                           target, "--build"], capsys)
    assert code == 0, err
    assert "size probe" in out and (tmp_path / "fw" / "runner.elf").exists()


# ------------------------------------------------------------ --check needs its data
def test_check_with_a_missing_dataset_is_an_error_naming_it(artifacts, tmp_path, monkeypatch,
                                                           capsys):
    """It used to check 100 random frames quietly and exit 0."""
    import shutil

    from firmware_sim.artifact import read_container, write_container

    c = read_container(artifacts["ecoc_tree"])
    moved = tmp_path / "m.edgc"          # records a CSV that is not there any more
    write_container(moved, "ecoc", dict(c.arrays), {**c.meta, "dataset": "gone/glass.csv"})
    monkeypatch.chdir(tmp_path)
    code, out, err = _cli(["firmware", moved, "--out", "fw", "--check"], capsys)
    assert code == 2 and "gone/glass.csv" in err and "--data" in err, err
    assert err.count("\n") == 1 and not (tmp_path / "fw").exists()   # nothing written
    # no dataset recorded at all: the same error
    bare = tmp_path / "bare.edgc"
    write_container(bare, "ecoc", dict(c.arrays), {k: v for k, v in c.meta.items()
                                                   if k != "dataset"})
    code, out, err = _cli(["firmware", bare, "--out", "fw", "--check"], capsys)
    assert code == 2 and "records no dataset" in err and "--data" in err, err
    # --data that does not exist is an error even with --random-frames
    code, out, err = _cli(["firmware", moved, "--out", "fw", "--check", "--data", "nope.csv",
                           "--random-frames", "10"], capsys)
    assert code == 2 and "nope.csv" in err
    need_toolchain("host", run=True)
    # asked for explicitly: random frames only, and the output says so
    code, out, err = _cli(["firmware", moved, "--out", "fw", "--check", "--random-frames",
                           "30"], capsys)
    assert code == 0, err
    assert "checked 30 frames on host (30 random frames" in out
    assert "gone/glass.csv" in err and "random frames only" in err
    # --data finds the rows: they are checked and counted
    shutil.rmtree(tmp_path / "fw")
    code, out, err = _cli(["firmware", moved, "--out", "fw", "--check", "--data",
                           DATA / "glass.csv", "--max-points", "25", "--random-frames", "0"],
                          capsys)
    assert code == 0, err
    assert "checked 25 frames on host (25 rows of " in out


def test_random_frames_are_priced_before_they_are_made(artifacts, tmp_path, capsys):
    need_toolchain("host", run=True)
    code, out, err = _cli(["firmware", artifacts["ecoc_tree"], "--out", tmp_path / "fw",
                           "--check", "--random-frames", str(10**9)], capsys)
    assert code == 2 and "--random-frames 1000000000: the random frames" in err
    assert "above the limit" in err and not (tmp_path / "fw").exists()


def test_check_counts_the_dataset_rows_it_compares(artifacts, tmp_path, capsys):
    need_toolchain("host", run=True)
    code, out, err = _cli(["firmware", artifacts["ssbc"], "--out", tmp_path / "fw", "--check",
                           "--max-points", "30"], capsys)
    assert code == 0, err
    assert "checked 130 frames on host (30 rows of " in out and "100 random frames" in out


# ------------------------------------------------------------ all or nothing
def _tree(path):
    return sorted((str(p.relative_to(path)), p.read_bytes() if p.is_file() else None)
                  for p in path.rglob("*"))


@pytest.mark.parametrize("step", ["copy", "build", "run"])
def test_ctrl_c_during_firmware_leaves_nothing_half_written(step, artifacts, tmp_path,
                                                            monkeypatch, capsys):
    """Ctrl-C used to leave 7 of 13 files behind while main() printed "no output
    file was written"; now the output folder appears whole or not at all."""
    import export.firmware as fw

    need_toolchain("host", run=True)
    calls = []

    def interrupt(*a, **k):
        calls.append(1)
        if step != "copy" or len(calls) == 4:        # the 4th file copied
            raise KeyboardInterrupt
        return real_copy(*a, **k)

    real_copy = fw.shutil.copyfile
    target = {"copy": (fw.shutil, "copyfile"), "build": (fw, "build_firmware"),
              "run": (fw, "run_firmware_measured")}[step]
    monkeypatch.setattr(*target, interrupt)
    root = tmp_path / "proj"
    root.mkdir()
    code, out, err = _cli(["firmware", artifacts["ecoc_tree"], "--out", root / "fw", "--check",
                           "--max-points", "10"], capsys)
    assert code == 130 and calls, (code, err)
    assert "no output file was written" in err
    assert list(root.iterdir()) == []             # no fw, no temporary folder
    # an existing output folder is left exactly as it was
    monkeypatch.undo()
    assert main(["firmware", str(artifacts["nb"]), "--out", str(root / "fw")]) == 0
    (root / "fw" / "notes.txt").write_text("mine")
    before = _tree(root / "fw")
    calls.clear()
    monkeypatch.setattr(*target, interrupt)
    code, out, err = _cli(["firmware", artifacts["ecoc_tree"], "--out", root / "fw", "--check",
                           "--max-points", "10"], capsys)
    assert code == 130
    assert _tree(root / "fw") == before and sorted(p.name for p in root.iterdir()) == ["fw"]


def test_an_error_leaves_nothing_and_a_rewrite_replaces_the_files(artifacts, tmp_path,
                                                                 monkeypatch, capsys):
    import export.firmware as fw

    need_toolchain("host", run=True)

    def broken(*a, **k):
        raise RuntimeError("build failed: cc exited 1")

    monkeypatch.setattr(fw, "build_firmware", broken)
    code, out, err = _cli(["firmware", artifacts["ssbc"], "--out", tmp_path / "fw", "--build"],
                          capsys)
    assert code == 2 and "build failed" in err
    assert list(tmp_path.iterdir()) == []
    monkeypatch.undo()
    # a rewrite for another kind replaces the generated files and drops the old
    # kind's source; files of the user's stay
    assert main(["firmware", str(artifacts["ssbc"]), "--out", str(tmp_path / "fw"),
                 "--build"]) == 0
    (tmp_path / "fw" / "notes.txt").write_text("mine")
    code, out, err = _cli(["firmware", artifacts["nb"], "--out", tmp_path / "fw", "--check",
                           "--max-points", "10"], capsys)
    assert code == 0, err
    names = {p.name for p in (tmp_path / "fw").iterdir()}
    assert "ec_nb.c" in names and "ec_ssbc.c" not in names and "notes.txt" in names
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fw"]
    assert out.rstrip().endswith(f"files to {tmp_path / 'fw'}") and "(protected_nb," in out


# ------------------------------------------------------------ the part's limits
@pytest.fixture(scope="module")
def big_nb(tmp_path_factory):
    """A naive Bayes image of about 60 KB: twice a cortex-m0 part's 32 KB flash."""
    from firmware_sim.naive_bayes import ProtectedNBDevice

    n = 10_000
    dev = ProtectedNBDevice.from_arrays(np.where(np.arange(n) % 2, 3, -3), 1, np.ones(n, int))
    path = tmp_path_factory.mktemp("big") / "big.edgc"
    path.write_bytes(dev.container.tobytes())
    return path


def test_an_oversize_build_is_an_error_unless_allowed(big_nb, tmp_path, capsys):
    """`--target cortex-m0plus --build` used to build a 713 KB image for a 32 KB part
    without a word."""
    need_toolchain("cortex-m0plus")
    code, out, err = _cli(["firmware", big_nb, "--out", tmp_path / "fw", "--target",
                           "cortex-m0plus", "--build"], capsys)
    assert code == 2, err
    assert "does not fit the part: flash" in err and "x the 32.0 KB" in err
    assert "of profile cortex-m0 (Cortex-M0 class microcontroller" in err
    assert "--allow-oversize" in err and not (tmp_path / "fw").exists()
    code, out, err = _cli(["firmware", big_nb, "--out", tmp_path / "fw", "--target",
                           "cortex-m0plus", "--build", "--allow-oversize"], capsys)
    assert code == 0 and err.startswith("warning: cortex-m0plus: the built firmware does not "
                                        "fit the part: flash"), err
    assert (tmp_path / "fw" / "runner.elf").exists()
    # writing the sources only: a warning from the profile's estimate
    code, out, err = _cli(["firmware", big_nb, "--out", tmp_path / "src", "--target",
                           "cortex-m0plus"], capsys)
    assert code == 0 and err.startswith("warning: cortex-m0plus: this model does not fit the "
                                        "part") and "(estimate" in err
    # a part with room for it (--profile FILE): no word
    part = tmp_path / "big_part.json"
    part.write_text(json.dumps({"base": "cortex-m0", "flash_bytes": 256 * 1024,
                                "ram_bytes": 128 * 1024}))
    code, out, err = _cli(["firmware", big_nb, "--out", tmp_path / "fw2", "--target",
                           "cortex-m0plus", "--build", "--profile", part], capsys)
    assert code == 0 and err == "", err


def test_host_builds_have_no_part_to_exceed(big_nb, tmp_path, capsys):
    need_toolchain("host")
    code, out, err = _cli(["firmware", big_nb, "--out", tmp_path / "fw", "--build"], capsys)
    assert code == 0 and err == ""
