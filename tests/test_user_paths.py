"""Regression tests of what new users hit first (issue 24): one data interface,
true labels in every export, outputs that appear whole or not at all, and the
client defects found by scikit-learn's, onnx's and skl2onnx's own tests."""

import csv
import warnings
from pathlib import Path

import numpy as np
import pytest

from edgecode.datasets import load_house_votes
from export.cli import main
from export.data import load_binary, load_table, train_test, typed_labels

DATA = Path(__file__).parent / "data"


def _copy_with(path, dest, label_map=None, rename=None, extra=None):
    with open(path) as fh:
        rows = list(csv.reader(fh))
    header = rows[0]
    if rename:
        header = [rename.get(h, h) for h in header]
    body = rows[1:]
    if label_map:
        body = [r[:-1] + [label_map(r[-1])] for r in body]
    if extra:
        header = header + [extra[0]]
        body = [r + [extra[1](i)] for i, r in enumerate(body)]
    with open(dest, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(body)
    return dest


# --------------------------------------------------------------------- the loader
def test_labels_keep_their_type():
    glass = load_table(DATA / "glass.csv")
    assert glass.y.dtype == np.int64 and sorted(set(glass.y.tolist())) == [1, 2, 3, 5, 6, 7]
    ecoli = load_table(DATA / "ecoli.csv")
    assert ecoli.y.dtype.kind == "U" and "imU" in set(ecoli.y.tolist())
    assert typed_labels(["1.0", "3.0"]).dtype == np.float64
    assert typed_labels(["1.5", "3"]).dtype.kind == "U"      # not integral: class names
    assert typed_labels(["1e400", "1"]).dtype.kind == "U"


def test_label_ignore_positive_and_the_errors_name_the_column(tmp_path):
    p = _copy_with(DATA / "glass.csv", tmp_path / "g.csv", rename={"class": "kind"},
                   extra=("id", lambda i: f"row{i}"))
    with pytest.raises(ValueError, match=r"no label column 'class' \(name it with --label"):
        load_table(p)
    with pytest.raises(ValueError, match=r"row 2, column 'id' is 'row0', not a finite number.*"
                                         r"--ignore id"):
        load_table(p, label="kind")
    t = load_table(p, label="kind", ignore="id")
    assert t.X.shape == (214, 9) and t.options == {"label": "kind", "ignore": ["id"]}
    b = load_table(p, label="kind", ignore=["id"], positive=7)
    assert sorted(set(b.y.tolist())) == [0, 1] and int(b.y.sum()) == 29
    with pytest.raises(ValueError, match="positive=4 is not a value of the label column"):
        load_table(p, label="kind", ignore=["id"], positive=4)
    with pytest.raises(ValueError, match=r"cannot ignore \['nope'\]"):
        load_table(p, label="kind", ignore="nope")
    empty = _copy_with(DATA / "glass.csv", tmp_path / "e.csv",
                       label_map=lambda v: v)
    text = empty.read_text().splitlines()
    text[3] = "," + text[3].split(",", 1)[1]
    empty.write_text("\n".join(text) + "\n")
    with pytest.raises(ValueError, match=r"row 4, column 'RI' is empty"):
        load_table(empty)


def test_one_split_rule_stratified_and_seeded():
    t = load_table(DATA / "ecoli.csv")
    a, b = train_test(t, test_size=0.3, seed=3), train_test(t, test_size=0.3, seed=3)
    assert np.array_equal(a.X_test, b.X_test) and "stratified" in a.how
    # every class with 2 rows or more is in both parts (ecoli is sorted by class: the
    # first-80% split of the old hash command held whole classes out)
    big = [c for c, n in zip(*np.unique(t.y, return_counts=True)) if n >= 10]
    assert set(big) <= set(a.y_test.tolist()) and set(big) <= set(a.y_train.tolist())


def test_binary_csv_labels_are_the_files_values(tmp_path):
    d = load_house_votes()
    p = tmp_path / "v.csv"
    with open(p, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(list(d.feature_names) + ["party"])
        w.writerows([list(map(int, x)) + [7 if t else 3] for x, t in zip(d.X, d.y)])
    b = load_binary(p, label="party")
    assert b.class_labels.tolist() == [3, 7] and b.labels()[:5].tolist() == \
        [7 if t else 3 for t in d.y[:5]]
    assert load_binary("house_votes").class_labels is None     # bundled: documented 0/1


def _votes_csv(path, label_of):
    d = load_house_votes()
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["id"] + list(d.feature_names) + ["party"])
        w.writerows([[f"r{i}"] + list(map(int, x)) + [label_of(t)]
                     for i, (x, t) in enumerate(zip(d.X, d.y))])
    return path


def test_binary_csv_reader_is_the_table_reader(tmp_path):
    """load_binary reads CSVs with load_table's reader: the same column rules and
    messages, plus 0/1 features and two classes (issue 25: one loader)."""
    p = _votes_csv(tmp_path / "v.csv", lambda t: 10 if t else 3)
    b = load_binary(p, label="party", ignore="id")
    t = load_table(p, label="party", ignore="id")
    assert np.array_equal(b.X, t.X) and b.X.dtype == np.uint8 and b.feature_names == \
        t.feature_names
    # labels in their typed order (3 < 10, not the text order "10" < "3"), as the
    # model's classes_
    assert b.class_labels.tolist() == [3, 10] and b.target_names == ["3", "10"]
    assert np.array_equal(b.labels(), t.y)
    with pytest.raises(ValueError, match=r"row 2, column 'id' must be 0 or 1; got 'r0' "
                       r"\(naive Bayes reads binary features; leave the column out with "
                       r"--ignore id\)"):
        load_binary(p, label="party")
    with pytest.raises(ValueError, match=r"cannot ignore \['nope'\]"):
        load_binary(p, label="party", ignore="nope")
    three = _votes_csv(tmp_path / "three.csv", lambda t: "ab"[t])
    rows = three.read_text().splitlines()
    three.write_text("\n".join(rows[:2] + [rows[2].rsplit(",", 1)[0] + ",c"] + rows[3:]) + "\n")
    with pytest.raises(ValueError, match=r"must have exactly two values for naive Bayes; "
                       r"got \['a', 'b', 'c'\] .*'--positive VALUE'"):
        load_binary(three, label="party", ignore="id")
    with pytest.raises(ValueError, match="numeric features; naive Bayes needs 0/1"):
        load_binary("digits")
    with pytest.raises(ValueError, match="bundled sets are"):
        __import__("edgecode.datasets").datasets.load(str(p))


@pytest.mark.parametrize("label_of, positive", [
    (lambda t: "b" if t else "z", "b"),      # "b" sorts before "not b": class order 1, 0
    (lambda t: 10 if t else 3, None),        # 3 < 10, but "10" < "3" as text
])
def test_nb_campaign_rows_are_the_artifacts_class_indices(tmp_path, label_of, positive):
    """The true labels of a naive Bayes artifact's rows are its class indices (via
    meta classes), so campaigns count accuracy against the right class; with
    --positive b the model's classes are ["b", "not b"], the dataset's 0/1 the
    other way round (issue 25 fix: campaign accuracy was inverted there)."""
    from export.data import binary_rows
    from firmware_sim import load
    p = _votes_csv(tmp_path / "v.csv", label_of)
    art = tmp_path / "v.edgc"
    extra = ["--positive", positive] if positive else []
    assert main(["plan", str(p), "--label", "party", "--ignore", "id", *extra, "--eps", "0.1",
                 "--budget", "4", "--out", str(art)]) == 0
    dev = load(art)
    X, y, _ = binary_rows(dev.container, str(p), "all")
    classes = dev.container.meta["classes"]
    truth = [label_of(t) for t in load_house_votes().y]
    truth = [str(v) if positive is None else (v if v == positive else f"not {positive}")
             for v in truth]
    assert [classes[i] for i in y] == truth
    assert np.mean(dev.predict(X) == y) > 0.85         # the model's own accuracy, not 1 - it


# ---------------------------------------------------------------- commands
def test_hash_split_holds_every_class_in_the_database(capsys):
    """ecoli is sorted by class: the old first-80% split gave 5-NN accuracy 0.044."""
    assert main(["hash", str(DATA / "ecoli.csv"), "--bits", "16", "--anchors", "64",
                 "--sketch", "32"]) == 0
    out = capsys.readouterr().out
    acc = float(out.split("5-NN classification accuracy from the codes: ")[1].split()[0])
    assert acc > 0.7


def test_budget_tries_naive_bayes_above_20_features(tmp_path, capsys):
    """Every NB configuration was 'not buildable' (X_check is required) above 20 features."""
    d = load_house_votes()
    X = np.hstack([d.X, d.X[:, :6]])                           # 22 features
    p = tmp_path / "wide.csv"
    with open(p, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow([f"f{j}" for j in range(22)] + ["class"])
        w.writerows([list(map(int, x)) + [int(t)] for x, t in zip(X, d.y)])
    assert main(["budget", str(p), "--profile", "cortex-m4", "--eps", "0.05", "--kinds", "nb",
                 "--nb-rates", "0,1", "--no-build", "--sim-samples", "2000"]) == 0
    captured = capsys.readouterr()
    assert "not buildable:" not in captured.err
    assert "recommended (*): nb" in captured.out and "0 not buildable" in captured.out


def test_plan_label_option_and_deprecated_target(tmp_path, capsys):
    d = load_house_votes()
    p = tmp_path / "v.csv"
    with open(p, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(list(d.feature_names) + ["party"])
        w.writerows([list(map(int, x)) + ["R" if t else "D"] for x, t in zip(d.X, d.y)])
    assert main(["plan", str(p), "--label", "party", "--eps", "0.2", "--R", "1",
                 "--out", str(tmp_path / "a.edgc")]) == 0
    assert main(["plan", str(p), "--target", "party", "--eps", "0.2", "--R", "1"]) == 0
    assert "plan --target is deprecated" in capsys.readouterr().err
    assert main(["plan", str(p), "--target", "party", "--label", "class", "--eps", "0.2",
                 "--R", "1"]) == 2


@pytest.mark.parametrize("argv, message", [
    (["plan", "house_votes", "--eps", "0.2", "--R", "1", "--out", "x.onnx"], "an ONNX name"),
    (["ecoc", "iris", "--onnx", "x.edgc"], "a container name"),
    (["hash", "digits", "--out", "h.ONNX"], "an ONNX name"),
])
def test_output_names_of_the_wrong_format_are_refused(argv, message, tmp_path, monkeypatch,
                                                      capsys):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    assert message in capsys.readouterr().err and not list(tmp_path.iterdir())


def test_interrupted_ecoc_writes_nothing(tmp_path, monkeypatch, capsys):
    from firmware_sim.ecoc import ECOCDevice

    def interrupted(*a, **k):
        raise KeyboardInterrupt
    monkeypatch.setattr(ECOCDevice, "simulate", interrupted)
    out, onx = tmp_path / "g.edgc", tmp_path / "g.onnx"
    assert main(["ecoc", str(DATA / "glass.csv"), "--max-depth", "3", "--n-columns", "4",
                 "--out", str(out), "--onnx", str(onx), "--quiet"]) == 130
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("existing", [False, True])
def test_failed_demo_leaves_nothing_it_wrote(tmp_path, monkeypatch, existing):
    import export.cli as cli

    class Boom:
        __name__ = "export.cli.boom"

        @staticmethod
        def run_demo_stage(out_dir, trials, stream):
            (Path(out_dir) / "half.edgc").write_bytes(b"EDGC")
            raise KeyboardInterrupt

    monkeypatch.setattr(cli, "COMMAND_MODULES", (Boom,))
    monkeypatch.setenv("EDGECODE_NO_WARMUP", "1")
    out = tmp_path / "demo"
    if existing:
        out.mkdir()
        (out / "mine.txt").write_text("keep")
    with pytest.raises(KeyboardInterrupt):
        cli.run_demo(out, trials=10)
    assert (sorted(p.name for p in out.iterdir()) == ["mine.txt"]) if existing else \
        not out.exists()


def test_ecoc_max_depth_bounds_the_model_and_oversize_is_said(tmp_path, capsys):
    from firmware_sim import load as load_device
    sizes = {}
    for depth in (None, 2):
        argv = ["ecoc", str(DATA / "glass.csv"), "--n-columns", "6", "--trials", "1",
                "--quiet", "--out", str(tmp_path / f"d{depth}.edgc")]
        if depth:
            argv += ["--max-depth", str(depth)]
        assert main(argv) == 0
        sizes[depth] = load_device(tmp_path / f"d{depth}.edgc").container.arrays[
            "node_feature"].size                 # decision nodes of the compact trees
    assert sizes[2] <= 6 * 3 and sizes[2] < sizes[None] / 2
    capsys.readouterr()
    import firmware_sim
    from export.ecoc import export_ecoc
    from edgecode.ecoc.classifier import ECOCClassifier
    from sklearn.tree import DecisionTreeClassifier
    from firmware_sim.profiles import DeviceProfile, CORTEX_M0
    import dataclasses
    t = load_table(DATA / "glass.csv")
    clf = ECOCClassifier(DecisionTreeClassifier(random_state=0), code="one_vs_all",
                         random_state=0).fit(t.X, t.y)
    ex = export_ecoc(clf, t.X)
    assert ex.fit_warning() is None
    tiny = dataclasses.replace(CORTEX_M0, name="tiny", flash_bytes=4096)
    w = ex.fit_warning(tiny)
    assert w.startswith("warning: this ecoc model") and "profile 'tiny'" in w
    assert isinstance(firmware_sim.load(ex.container), firmware_sim.device.Device)
    assert isinstance(tiny, DeviceProfile)


# ------------------------------------------------------------- client defects
def test_skl2onnx_converter_returns_numbers_for_float_classes():
    pytest.importorskip("skl2onnx")
    import onnxruntime as ort
    from skl2onnx import to_onnx
    from sklearn.linear_model import LogisticRegression

    from edgecode.ecoc.classifier import ECOCClassifier
    from export.skl2onnx_converters import register

    register()
    t = load_table(DATA / "glass.csv")
    y = t.y.astype(np.float64)                     # 1.0, 2.0, 3.0, 5.0, 6.0, 7.0
    clf = ECOCClassifier(LogisticRegression(max_iter=500), code="one_vs_all",
                         random_state=0).fit(t.X, y)
    onx = to_onnx(clf, t.X[:1].astype(np.float32), target_opset=17)
    sess = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
    got = sess.run(["label"], {"X": t.X.astype(np.float32)})[0]
    assert got.dtype == np.int64
    assert np.mean(got == clf.predict(t.X.astype(np.float32))) > 0.99


def test_ecoc_passes_the_pairwise_tag_on_precomputed_kernel():
    from sklearn.svm import SVC
    from sklearn.utils import get_tags

    from edgecode.ecoc.classifier import ECOCClassifier

    t = load_table(DATA / "glass.csv")
    X = (t.X - t.X.mean(0)) / t.X.std(0)
    K = X @ X.T
    for code in ("one_vs_one", "one_vs_all", "dense_random"):      # ternary and binary
        a = ECOCClassifier(SVC(kernel="precomputed"), code=code, random_state=0).fit(K, t.y)
        b = ECOCClassifier(SVC(kernel="linear"), code=code, random_state=0).fit(X, t.y)
        assert np.mean(a.predict(K) == b.predict(X)) > 0.99
    assert get_tags(a).input_tags.pairwise
    with pytest.raises(ValueError, match="square n_samples x n_samples kernel"):
        ECOCClassifier(SVC(kernel="precomputed"), code="one_vs_all").fit(X, t.y)
    with pytest.raises(ValueError, match="feature_selection cannot be combined"):
        ECOCClassifier(SVC(kernel="precomputed"), code="one_vs_all",
                       feature_selection=("delta", 3)).fit(K, t.y)


def test_ecoc_fit_progress_is_one_line_per_column(capsys):
    from sklearn.tree import DecisionTreeClassifier

    from edgecode.ecoc.classifier import ECOCClassifier

    t = load_table(DATA / "glass.csv")
    ECOCClassifier(DecisionTreeClassifier(max_depth=2), code="one_vs_all", verbose=1,
                   random_state=0).fit(t.X, t.y)
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 6 and lines[-1].startswith("[ECOCClassifier] fit column 6/6") and \
        "ETA" in lines[0]


def test_uncentred_ssbc_export_warns_when_device_bits_drift():
    from edgecode.hashing import SSBC
    from export.ssbc import ExportPrecisionWarning, export_ssbc

    t = load_table(DATA / "glass.csv")
    for center, warns in ((False, True), (True, False)):
        h = SSBC(16, 100, 32, center=center, random_state=0).fit(t.X)
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            ex = export_ssbc(h, X_check=t.X)
        got = [w for w in rec if issubclass(w.category, ExportPrecisionWarning)]
        assert bool(got) == warns, (center, ex.bit_agreement)
        assert (ex.bit_agreement < 0.99) == warns
