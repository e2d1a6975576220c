"""``edgecode forest`` and the commands every artifact takes, on the forest kind.

As ``tests/test_kind_matrix.py`` does for the other kinds: forests trained from
the command line on real data whose labels are strings (ecoli, with an id
column to ignore), integers that are not 0..k-1 and integral floats (glass),
in a label column not called ``class``; the ONNX graph returns the true labels
typed as the data's; ``simulate``, ``campaign`` (every site), ``upsets`` and
``firmware --check`` run from the dataset the artifact records. Bad options
are one ``error:`` line and exit 2; Ctrl-C during the fit exits 130 and
writes nothing.
"""

import shutil
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

import firmware_sim
from export.cli import main
from export.data import load_table

sys.path.insert(0, str(Path(__file__).parent))
from kind_matrix import cli_options  # noqa: E402

DATA = Path(__file__).parent / "data"


def _csv(folder, labels):
    """glass (labels as ints or floats, column 'kind') or ecoli (strings, an id column):
    (path, data options)."""
    from kind_matrix import multiclass_csv
    return multiclass_csv(folder, labels)


CASES = [("str", "rf", "proba"), ("int", "extra", "class"), ("float", "tree", "proba")]


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory):
    root = tmp_path_factory.mktemp("forest_cli")
    out = {}
    for labels, kind, leaf in CASES:
        folder = root / labels
        folder.mkdir()
        path, options = _csv(folder, labels)
        art, onx = folder / "f.edgc", folder / "f.onnx"
        argv = ["forest", str(path), "--kind", kind, "--leaf", leaf,
                "--max-depth", "5", "--quiet", "--out", str(art), "--onnx", str(onx)]
        if kind != "tree":
            argv += ["--n-trees", "8"]
        assert main(argv + cli_options(options)) == 0
        out[labels] = (art, onx, path, options)
    return out


@pytest.mark.parametrize("labels", [c[0] for c in CASES])
def test_onnx_returns_the_true_labels_and_device_classes_map_them(artifacts, labels):
    art, onx, path, options = artifacts[labels]
    t = load_table(path, **options)
    sess = ort.InferenceSession(str(onx), providers=["CPUExecutionProvider"])
    got = sess.run(["label"], {"X": t.X.astype(np.float32)})[0]
    assert (got.dtype.kind in "iuf") == (t.y.dtype.kind in "iuf"), (got.dtype, t.y.dtype)
    dev = firmware_sim.load(art)
    classes = dev.container.meta["classes"]
    idx = dev.infer(dev.encode(t.X.astype(np.float32).astype(np.float64))).labels
    assert [str(v) for v in got.tolist()] == [classes[i] for i in idx] or \
        np.array_equal(np.array([float(classes[i]) for i in idx]), got.astype(float))
    acc = float(np.mean(got.astype(str) == t.y.astype(str)))
    chance = np.max(np.unique(t.y, return_counts=True)[1]) / len(t.y)
    assert acc > chance, (acc, chance)


@pytest.mark.parametrize("labels", [c[0] for c in CASES])
def test_simulate_campaign_upsets_run_from_the_recorded_data(artifacts, labels, capsys):
    art = str(artifacts[labels][0])
    assert main(["simulate", art, "--eps", "0.05", "--trials", "20", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "forest" in out and "accuracy under noise" in out
    for site in ("wire", "intermediate"):
        assert main(["campaign", art, "--fault", "bsc", "--param", "eps", "--grid",
                     "0.02,0.1", "--trials", "10", "--max-points", "40", "--site", site,
                     "--quiet"]) == 0
        assert "0.02" in capsys.readouterr().out
    assert main(["campaign", art, "--fault", "seu", "--set", "arrays=node_threshold",
                 "--param", "count", "--grid", "1,4", "--trials", "10", "--max-points", "30",
                 "--quiet"]) == 0
    assert "refused" in capsys.readouterr().out
    assert main(["upsets", art, "--max-points", "10", "--top", "2", "--arrays",
                 "node_threshold,node_right", "--quiet"]) == 0
    assert "single-bit upsets" in capsys.readouterr().out


def test_firmware_check_on_the_host(artifacts, tmp_path, capsys):
    if shutil.which("gcc") is None and not __import__("os").environ.get("EDGECODE_CI"):
        pytest.skip("no C compiler")
    art = artifacts["str"][0]
    assert main(["firmware", str(art), "--out", str(tmp_path / "fw"), "--check",
                 "--max-points", "40"]) == 0
    out = capsys.readouterr().out
    assert "equal" in out or "match" in out or "agree" in out, out


def test_the_report_and_its_options(tmp_path, capsys):
    art = tmp_path / "d.edgc"
    assert main(["forest", "digits", "--n-trees", "6", "--max-depth", "4", "--leaf", "proba",
                 "--leaf-bits", "8", "--random-state", "3", "--eps", "0,0.1", "--trials", "2",
                 "--out", str(art)]) == 0
    out = capsys.readouterr().out
    assert "RandomForestClassifier: 6 trees" in out and "test accuracy" in out
    assert "8 bits" in out and "labels that differ from the float model: " in out
    assert "eps;accuracy;same_rate" in out and f"wrote container {art}" in out
    first = art.read_bytes()
    assert main(["forest", "digits", "--n-trees", "6", "--max-depth", "4", "--leaf-bits", "8",
                 "--seed", "3", "--eps", "0", "--trials", "1", "--out", str(art),
                 "--quiet"]) == 0
    assert art.read_bytes() == first                   # --seed is --random-state
    dev = firmware_sim.load(art)
    assert dev.n_trees == 6 and dev.container.arrays["leaf_value"].dtype == np.uint8
    assert dev.meta["dataset"] == "digits" and dev.meta["estimator"] == "RandomForestClassifier"
    # one class against the rest
    assert main(["forest", "digits", "--positive", "3", "--kind", "tree", "--leaf", "class",
                 "--max-depth", "3", "--quiet", "--out", str(art)]) == 0
    assert firmware_sim.load(art).n_classes == 2


@pytest.mark.parametrize("argv, message", [
    (["--kind", "tree", "--n-trees", "5"], "--kind tree fits one decision tree"),
    (["--max-depth", "65"], "--max-depth 65: the forest format stores at most 64"),
    (["--eps", "0,2"], "--eps values must be probabilities"),
    (["--label", "nope"], "nope"),
    (["--out", "x.onnx"], "an ONNX name"),
])
def test_bad_options_are_one_error_line(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["forest", str(DATA / "glass.csv"), "--quiet", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and err.count("\n") == 1, err
    assert list(tmp_path.iterdir()) == []


def test_unknown_leaf_and_kind_are_argparse_errors(capsys):
    for argv in (["--leaf", "mean"], ["--kind", "boost"], ["--leaf-bits", "12"]):
        with pytest.raises(SystemExit) as exc:
            main(["forest", "digits", *argv])
        assert exc.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def test_sigint_stops_the_fit_and_writes_nothing(tmp_path):
    from test_interrupt import EXIT_WITHIN, _interrupt

    rc, took, out, err = _interrupt(
        ["forest", "digits", "--n-trees", "5000", "--out", "d.edgc", "--onnx", "d.onnx"],
        tmp_path, lambda line: line.startswith("forest") and "trees" in line and "ETA" in line)
    assert rc == 130 and took < EXIT_WITHIN, err
    assert list(tmp_path.iterdir()) == []
