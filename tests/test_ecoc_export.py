import numpy as np
import onnxruntime as ort
import pytest
from numpy.testing import assert_array_equal
from sklearn.datasets import load_digits, load_iris
from sklearn.linear_model import LogisticRegression
from sklearn.naive_bayes import GaussianNB
from sklearn.svm import LinearSVC
from sklearn.tree import DecisionTreeClassifier

from edgecode.ecoc.classifier import ECOCClassifier
from export.ecoc import export_ecoc, fit_input_quantizer
from firmware_sim.artifact import ContainerError, read_container, write_container
from firmware_sim.ecoc import load_ecoc, quantize_inputs

from naive_ecoc_clf import hamming_bruteforce


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    rng = np.random.default_rng(1)
    order = rng.permutation(len(y))
    X, y = X[order] / 16.0, y[order]
    return X[:500], y[:500], X[500:900], y[500:900]


def _codes():
    rng = np.random.default_rng(5)
    ternary = rng.integers(-1, 2, (10, 12))
    ternary[:, 0] = np.arange(10) % 2
    return {"binary": rng.integers(0, 2, (10, 15)), "ternary": ternary,
            "nary3": rng.integers(0, 3, (10, 8)), "long": rng.integers(0, 2, (10, 70))}


def _session(model):
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


_TREE = DecisionTreeClassifier(max_depth=6, random_state=0)


@pytest.mark.parametrize("kind, learner", [
    ("binary", LogisticRegression(max_iter=500)), ("ternary", LogisticRegression(max_iter=500)),
    ("nary3", LogisticRegression(max_iter=500)), ("binary", LinearSVC()),
    ("nary3", LinearSVC()), ("binary", _TREE), ("ternary", _TREE), ("nary3", _TREE),
    ("long", _TREE)])
def test_onnx_device_and_float_model_agree(digits, tmp_path, kind, learner):
    Xtr, ytr, Xte, yte = digits
    code = _codes()[kind]
    clf = ECOCClassifier(learner, code=code).fit(Xtr, ytr)
    out = export_ecoc(clf, Xtr, X_check=Xte, container_path=tmp_path / "m.edgc",
                      onnx_path=tmp_path / "m.onnx")
    # digits / 16 are dyadic: the fixed-point inputs are exact
    assert out.label_mismatches == 0, out.report()
    dev = load_ecoc(tmp_path / "m.edgc")
    q = dev.quantize(Xte)
    labels = dev.predict(q)
    assert_array_equal(clf.classes_[labels], clf.predict(Xte))
    sess = _session(out.onnx_model)
    got_label, got_sym, got_d2 = sess.run(None, {"q": q})
    assert_array_equal(got_label, labels)
    sym = dev.learner_outputs(q)
    assert_array_equal(got_sym, sym)
    assert_array_equal(sym, clf.predict_codewords(Xte))
    ref_labels, ref_d2 = hamming_bruteforce(sym, code)
    assert_array_equal(got_d2, ref_d2)
    assert_array_equal(labels, ref_labels)
    # noisy learner outputs decode identically on host and device
    noisy = dev.corrupt(sym, 0.2, random_state=0)
    assert_array_equal(dev.decode(noisy), np.searchsorted(clf.classes_, clf.decode(noisy)))


def test_resources_and_channel_statistics(digits):
    Xtr, ytr, Xte, yte = digits
    clf = ECOCClassifier(DecisionTreeClassifier(max_depth=5, random_state=0),
                         code=_codes()["nary3"]).fit(Xtr, ytr)
    dev = export_ecoc(clf, Xtr).device
    r = dev.resources()
    assert r["flash_bytes"] == dev.container.nbytes and r["ram_bytes"] > 0
    assert r["ops_per_inference"]["total"] > 0 and r["learner_kind"] == "tree"
    sym = dev.learner_outputs(dev.quantize(Xte))
    noisy = dev.corrupt(sym, 0.3, random_state=1)
    changed = noisy != sym
    assert abs(changed.mean() - 0.3) < 0.03
    assert noisy.min() >= 0 and noisy.max() <= 2
    sim = dev.simulate(dev.quantize(Xte), np.searchsorted(clf.classes_, yte), [0.0, 0.1, 0.3],
                       n_trials=3, random_state=0)
    assert sim.accuracy[0] == sim.clean_accuracy
    assert sim.accuracy[2] < sim.accuracy[0]
    binary = ECOCClassifier(LogisticRegression(max_iter=500),
                            code=_codes()["binary"]).fit(Xtr, ytr)
    bdev = export_ecoc(binary, Xtr).device
    bsym = bdev.learner_outputs(bdev.quantize(Xte))
    flipped = bdev.corrupt(bsym, 0.25, random_state=2)
    assert abs((flipped != bsym).mean() - 0.25) < 0.03
    assert set(np.unique(flipped)) <= {0, 1}


def test_quantizer_is_exact_on_dyadic_grid():
    X = np.array([[0.0, -3.5, 1000.0], [16.0, 2.25, 1001.0], [7.0, 0.0, 1000.5]])
    c, e = fit_input_quantizer(X)
    q = quantize_inputs(X, c, e)
    assert_array_equal(c + q * np.exp2(-e.astype(float)), X)
    assert np.abs(q).max() <= 32767


def test_iris_not_on_grid_still_agrees_with_onnx():
    X, y = load_iris(return_X_y=True)
    clf = ECOCClassifier(LogisticRegression(max_iter=1000),
                         code=[[0, 0, 1, 1], [1, 0, 0, 1], [0, 1, 0, 0]]).fit(X, y)
    out = export_ecoc(clf, X)
    q = out.device.quantize(X)
    assert_array_equal(_session(out.onnx_model).run(["label"], {"q": q})[0],
                       out.device.predict(q))
    assert out.label_mismatches <= 1


def test_export_refuses_other_learners_and_bad_containers(digits):
    Xtr, ytr, _, _ = digits
    clf = ECOCClassifier(GaussianNB(), code=_codes()["binary"]).fit(Xtr, ytr)
    with pytest.raises(ValueError, match="linear learners"):
        export_ecoc(clf, Xtr)
    good = ECOCClassifier(LogisticRegression(max_iter=300), code=_codes()["binary"]).fit(Xtr, ytr)
    c = read_container(export_ecoc(good, Xtr).container)
    arrays = dict(c.arrays)
    del arrays["lin_bias"]
    with pytest.raises(ContainerError, match="'lin_bias' is missing"):
        load_ecoc(write_container(None, "ecoc", arrays))
    arrays = dict(c.arrays)
    arrays["code"] = arrays["code"].astype(np.int32)
    with pytest.raises(ContainerError, match="'code' must have dtype int16"):
        load_ecoc(write_container(None, "ecoc", arrays))
    with pytest.raises(ContainerError, match="kind 'ecoc'"):
        load_ecoc(write_container(None, "ssbc", {"v": np.zeros(2, np.float32)}))
    dev = load_ecoc(c)
    with pytest.raises(TypeError, match="int16"):
        dev.predict(np.zeros((1, 64)))
    with pytest.raises(ValueError, match=r"shape \(n_samples, 64\)"):
        dev.predict(np.zeros((1, 3), np.int16))
    with pytest.raises(ValueError, match="eps must be in"):
        dev.corrupt(np.zeros((1, 15), np.int16), 1.5)


def test_cli_ecoc_subcommand_and_demo_stage(tmp_path, capsys):
    import argparse
    import io

    from export.cli import ecoc as cli_ecoc
    parser = argparse.ArgumentParser()
    cli_ecoc.register(parser.add_subparsers(dest="command"))
    X, y = load_iris(return_X_y=True)
    path = tmp_path / "iris.csv"
    lines = ["a,b,c,d,class"] + [",".join([*map(str, x), f"k{t}"]) for x, t in zip(X, y)]
    path.write_text("\n".join(lines) + "\n")
    args = parser.parse_args(["ecoc", str(path), "--code", "one_vs_all", "--N", "2",
                              "--learner", "logistic", "--eps", "0,0.1", "--trials", "2",
                              "--out", str(tmp_path / "i.edgc"), "--onnx", str(tmp_path / "i.onnx")])
    args.func(args)
    text = capsys.readouterr().out
    assert "test accuracy" in text and "device (fixed point)" in text and "eps;accuracy" in text
    assert (tmp_path / "i.edgc").exists() and (tmp_path / "i.onnx").exists()
    with pytest.raises(ValueError, match="unknown dataset"):
        cli_ecoc.run_ecoc("no_such_set", quiet=True)
    buf = io.StringIO()
    res = cli_ecoc.run_demo_stage(tmp_path, trials=400, stream=buf)
    assert all(r["onnx_agrees"] for r in res.values())
    assert "onnxruntime labels == device labels" in buf.getvalue()
