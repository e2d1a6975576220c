"""Every command on every model kind, on labels users have: strings, floats and
integers that are not 0..k-1 (issue 24).

Digits hid the label bugs users found (its labels equal the class indices),
so every artifact here is trained from the command line on real data whose
labels are not 0..k-1, with the label in a column not called ``class``:

* naive Bayes: UCI house votes as 0/1 features, the party as ``"democrat"``
  / ``"republican"``, as the integers 3 / 7 and as the floats 1.5 / 2.5;
* ECOC (trees and linear learners) and SSBC: UCI glass (labels 1, 2, 3, 5,
  6, 7; the same as floats ``1.0 ...``) and UCI ecoli (8 string labels).

For each artifact: the ONNX graph returns the true labels (typed as the
data's), the device's ``classes`` map its label indices to them, and
``simulate``, ``campaign``, ``upsets`` and ``firmware --check`` (host) run
on it from the dataset and options the artifact records, without
``--data``. ``budget --export`` then ``simulate`` on the export, per label
type. Firmware on the cross targets is ``tests/test_firmware.py``'s.
"""

import csv
import json
import shutil
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

import firmware_sim
from edgecode.datasets import load_house_votes
from export.cli import main
from export.data import load_table

DATA = Path(__file__).parent / "data"

#: label type -> (value of class 0, value of class 1) for the binary set
NB_LABELS = {"str": ("democrat", "republican"), "int": ("3", "7"), "float": ("1.5", "2.5")}


def _write(path, header, rows):
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    return path


def _multiclass_csv(folder, labels):
    """glass with labels as ints (column 'kind') or floats, or ecoli (strings, an id column)."""
    if labels == "str":
        with open(DATA / "ecoli.csv") as fh:
            rows = list(csv.reader(fh))
        header = ["seq"] + rows[0][:-1] + ["kind"]
        body = [[f"s{i}"] + r[:-1] + [r[-1]] for i, r in enumerate(rows[1:])]
        return _write(folder / "ecoli_kind.csv", header, body), ["--ignore", "seq"]
    with open(DATA / "glass.csv") as fh:
        rows = list(csv.reader(fh))
    fmt = (lambda v: v) if labels == "int" else (lambda v: f"{float(v):.1f}")
    body = [r[:-1] + [fmt(r[-1])] for r in rows[1:]]
    return _write(folder / f"glass_{labels}.csv", rows[0][:-1] + ["kind"], body), []


def _binary_csv(folder, labels):
    d = load_house_votes()
    zero, one = NB_LABELS[labels]
    body = [[int(v) for v in x] + [one if t else zero] for x, t in zip(d.X, d.y)]
    return _write(folder / f"votes_{labels}.csv", list(d.feature_names) + ["party"], body), []


KINDS = ("nb", "ecoc_tree", "ecoc_linear", "ssbc")
LABEL_TYPES = ("str", "int", "float")
CASES = [(k, t) for k in KINDS for t in LABEL_TYPES]


def _train(kind, labels, folder):
    """Train one artifact from the command line; returns (artifact, onnx, csv, options)."""
    art, onx = folder / f"{kind}.edgc", folder / f"{kind}.onnx"
    if kind == "nb":
        path, extra = _binary_csv(folder, labels)
        argv = ["plan", str(path), "--label", "party", "--eps", "0.1", "--R", "1"]
    else:
        path, extra = _multiclass_csv(folder, labels)
        if kind == "ecoc_tree":
            argv = ["ecoc", str(path), "--label", "kind", "--learner", "tree", "--max-depth", "4",
                    "--n-columns", "6", "--trials", "1", "--eps", "0.05", "--quiet"]
        elif kind == "ecoc_linear":
            argv = ["ecoc", str(path), "--label", "kind", "--learner", "linear_svm", "--code",
                    "dense_random", "--n-columns", "8", "--trials", "1", "--eps", "0.05",
                    "--quiet"]
        else:
            argv = ["hash", str(path), "--label", "kind", "--bits", "16", "--anchors", "64",
                    "--sketch", "32"]
    assert main(argv + extra + ["--out", str(art), "--onnx", str(onx)]) == 0
    return art, onx, path, extra


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory):
    root = tmp_path_factory.mktemp("matrix")
    out = {}
    for kind, labels in CASES:
        folder = root / f"{kind}_{labels}"
        folder.mkdir()
        out[kind, labels] = _train(kind, labels, folder)
    return out


def _truth(kind, path, extra):
    if kind == "nb":
        t = load_table(path, label="party")
    else:
        t = load_table(path, label="kind", ignore=extra[1:] if extra else ())
    return t


@pytest.mark.parametrize("kind,labels", CASES)
def test_onnx_returns_the_true_labels_and_device_classes_map_them(artifacts, kind, labels):
    art, onx, path, extra = artifacts[kind, labels]
    t = _truth(kind, path, extra)
    sess = ort.InferenceSession(str(onx), providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    got = sess.run(["label"], {name: t.X.astype(np.float32)})[0]
    # typed as the data's labels: numbers stay numbers
    assert (got.dtype.kind in "iuf") == (t.y.dtype.kind in "iuf"), (got.dtype, t.y.dtype)
    assert set(np.unique(got).tolist()) <= set(np.unique(t.y).tolist())
    dev = firmware_sim.load(art)
    classes = dev.container.meta["classes"]
    idx = np.asarray(dev.infer(dev.encode(t.X)).labels, np.int64)
    dev_labels = np.array([classes[i] for i in idx])
    assert np.array_equal(dev_labels, np.array([str(v) for v in got.tolist()])) or \
        np.array_equal(np.array([float(v) for v in dev_labels]), got.astype(float))
    acc = float(np.mean(np.asarray(got).astype(str) == t.y.astype(str)))
    chance = np.max(np.unique(t.y, return_counts=True)[1]) / len(t.y)
    assert acc > chance, (acc, chance)      # right labels, not indices mistaken for labels


@pytest.mark.parametrize("kind,labels", CASES)
def test_simulate_campaign_upsets_run_from_the_recorded_data(artifacts, kind, labels, capsys):
    art = artifacts[kind, labels][0]
    assert main(["simulate", str(art), "--eps", "0.05", "--trials", "20"]) == 0
    assert "accuracy under noise" in capsys.readouterr().out or kind == "nb"
    assert main(["campaign", str(art), "--fault", "bsc", "--param", "eps", "--grid", "0.02",
                 "--trials", "10", "--max-points", "40"]) == 0
    out = capsys.readouterr().out
    assert "0.02" in out
    arrays = {"nb": "weights", "ecoc_tree": "tree_threshold", "ecoc_linear": "lin_weights",
              "ssbc": "thresholds"}[kind]
    assert main(["upsets", str(art), "--max-points", "10", "--top", "2", "--arrays",
                 arrays]) == 0
    assert "single-bit upsets" in capsys.readouterr().out


@pytest.mark.parametrize("kind", KINDS)
def test_firmware_check_on_the_host_for_every_kind(artifacts, kind, tmp_path, capsys):
    if shutil.which("gcc") is None and not __import__("os").environ.get("EDGECODE_CI"):
        pytest.skip("no C compiler")
    art = artifacts[kind, "str"][0]
    assert main(["firmware", str(art), "--out", str(tmp_path / "fw"), "--check",
                 "--max-points", "40"]) == 0
    out = capsys.readouterr().out
    assert "equal" in out or "match" in out or "agree" in out, out


BUDGET_CASES = [("ecoc", t) for t in LABEL_TYPES] + [("nb", t) for t in LABEL_TYPES]


@pytest.mark.parametrize("kind,labels", BUDGET_CASES)
def test_budget_export_ships_true_labels_and_simulates(kind, labels, tmp_path, capsys):
    if kind == "nb":
        path, extra = _binary_csv(tmp_path, labels)
        space = ["--label", "party", "--kinds", "nb", "--nb-rates", "0,1"]
    else:
        path, extra = _multiclass_csv(tmp_path, labels)
        space = ["--label", "kind", "--kinds", "ecoc", "--designs", "one_vs_all,nary",
                 "--learners", "tree", "--depths", "3", "--nary-N", "3"]
    best = tmp_path / "best"
    assert main(["budget", str(path), "--profile", "cortex-m4", "--eps", "0.05", "--quiet",
                 "--no-build", "--sim-samples", "2000", "--export", str(best)] + space
                + extra) == 0
    capsys.readouterr()
    t = _truth("nb" if kind == "nb" else "ecoc", path, extra)
    sess = ort.InferenceSession(str(best / "model.onnx"), providers=["CPUExecutionProvider"])
    got = sess.run(["label"], {sess.get_inputs()[0].name: t.X.astype(np.float32)})[0]
    assert set(np.unique(got).astype(str).tolist()) <= set(np.unique(t.y).astype(str).tolist())
    acc = float(np.mean(got.astype(str) == t.y.astype(str)))
    chance = np.max(np.unique(t.y, return_counts=True)[1]) / len(t.y)
    assert acc > chance
    meta = firmware_sim.load(best / "model.edgc").container.meta
    assert sorted(meta["classes"]) == sorted(np.unique(t.y).astype(str).tolist())
    assert json.loads(meta.get("dataset_options", "{}")).get("label") in ("party", "kind")
    assert main(["simulate", str(best / "model.edgc"), "--eps", "0.05", "--trials", "10"]) == 0
    assert "simulated same-classification rate" in capsys.readouterr().out
