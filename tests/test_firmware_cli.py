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
import os
from pathlib import Path

import numpy as np
import pytest

from export.cli import main
from export.firmware import TARGETS, toolchain_missing

CI = bool(os.environ.get("EDGECODE_CI"))
DATA = Path(__file__).resolve().parent / "data"
DNA = Path(__file__).resolve().parents[1] / "edgecode" / "datasets" / "data" / "dna_statlog.csv.gz"

#: Cortex-M targets that run under QEMU (every one this machine's TARGETS has).
QEMU_TARGETS = sorted(t for t, spec in TARGETS.items() if spec.qemu is not None)
BUILD_ONLY = sorted(t for t, spec in TARGETS.items() if spec.arm and spec.qemu is None)


def _need(target, run=False):
    why = toolchain_missing(target, run=run)
    if why:
        if CI:
            pytest.fail(f"CI must have the {target} toolchain: {why}")
        pytest.skip(f"{target} toolchain: {why}")


def _cli(argv, capsys):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory):
    """One small artifact per kind, each recording the dataset it was made on."""
    import contextlib
    import io

    from edgecode.datasets import load
    from edgecode.naive_bayes import BinaryNaiveBayes
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
    data = load(str(DNA), positive="ei")
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
    _need(target, run=True)
    code, out, err = _cli(["firmware", artifacts[kind], "--out", tmp_path / "fw", "--target",
                           target, "--check", "--max-points", "40"], capsys)
    assert code == 0, err
    assert "labels and decision integers equal firmware_sim's" in out, out


@pytest.mark.parametrize("target", BUILD_ONLY)
@pytest.mark.parametrize("kind", KINDS)
def test_firmware_build_from_the_cli_on_build_only_targets(kind, target, artifacts, tmp_path,
                                                            capsys):
    _need(target)
    code, out, err = _cli(["firmware", artifacts[kind], "--out", tmp_path / "fw", "--target",
                           target, "--build"], capsys)
    assert code == 0, err
    assert "size probe" in out and (tmp_path / "fw" / "runner.elf").exists()
