"""SSBC on the device: container, fixed-point codes, ONNX equality, k-NN, bit flips."""

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from numpy.testing import assert_array_equal
from sklearn.datasets import load_digits

import naive_hashing as naive
from edgecode.hashing import SSBC
from export.ssbc import export_ssbc, ssbc_arrays
from firmware_sim.artifact import ContainerError, read_container, write_container
from firmware_sim.ssbc import SSBCDevice, exp_lut, load_ssbc, make_ssbc_arrays


@pytest.fixture(scope="module")
def fitted():
    d = load_digits()
    X, y = d.data, d.target
    h = SSBC(32, 128, 48, center=True, random_state=0).fit(X[:1200])
    ex = export_ssbc(h, X_table=X[:1200], y_table=y[:1200], knn_k=5, X_check=X[1200:])
    return h, ex, X, y


def _session(model):
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


def test_onnx_bits_and_labels_equal_the_device(fitted, tmp_path):
    h, ex, X, y = fitted
    dev = load_ssbc(ex.container)
    rng = np.random.default_rng(0)
    extra = np.vstack([rng.uniform(-40, 60, (50, 64)), np.full((2, 64), 1e6),
                       X[1200:1210] + 0.5])     # out-of-range inputs clip; half steps round
    Xq = np.vstack([X[1200:], extra]).astype(np.float32)
    # by name: the same with either output layout (digits' labels are their indices)
    bits, label = _session(ex.onnx_model).run(["bits", "label"], {"X": Xq})
    assert bits.dtype == np.uint8 and label.dtype == np.int64
    assert_array_equal(bits, dev.bits(Xq))
    assert_array_equal(label, dev.predict(Xq))
    onnx.checker.check_model(ex.onnx_model, full_check=True)
    assert ex.onnx_model.opset_import[0].version == 17


def test_device_bits_agree_with_float_bits(fitted):
    h, ex, X, y = fitted
    assert ex.bit_agreement > 0.995
    dev = load_ssbc(ex.container)
    Xt = X[1200:]
    emb = h.embed(Xt)
    clear = np.abs(emb) > 1e-3 * np.abs(emb).max()
    assert_array_equal(dev.bits(Xt)[clear], h.transform(Xt)[clear])


def test_device_pipeline_equals_python_integers(fitted):
    h, ex, X, y = fitted
    arrays = ssbc_arrays(h)[0]
    dev = SSBCDevice.from_arrays(arrays)
    pts = X[1200:1204]
    assert_array_equal(dev.bits(pts), naive.device_bits(arrays, pts))


def test_q15_affinity_tracks_exp(fitted):
    h, ex, X, y = fitted
    dev = load_ssbc(ex.container)
    wq = dev.affinity_q15(X[1300:1320]) / 2.0**15
    # float affinity on the dequantized input and anchors
    s = dev.input_shift
    xq = dev.quantize(X[1300:1320]) / 2.0**s
    aq = dev.container.arrays["anchors"] / 2.0**s
    ref = naive.affinity(xq, aq, dev.sigma)
    assert np.abs(wq - ref).max() < 1e-4


def test_knn_equals_brute_force_vote(fitted):
    h, ex, X, y = fitted
    dev = load_ssbc(ex.container)
    q = dev.bits(X[1200:1300])
    want = naive.knn_vote(q, dev.table_bits(), dev._labels, dev.knn_k, dev.n_classes)
    assert_array_equal(dev.knn_bits(q)[0], want)
    acc = (ex.classes[dev.predict(X[1200:])] == y[1200:]).mean()
    assert acc > 0.85


def test_bit_flip_channel(fitted):
    h, ex, X, y = fitted
    dev = load_ssbc(ex.container)
    Xt, yt = X[1200:], y[1200:]
    clean = dev.predict(Xt)
    assert_array_equal(dev.predict_noisy(Xt, 0.0, 0.0, random_state=0), clean)
    a = dev.predict_noisy(Xt, 0.05, 0.05, random_state=1)
    assert_array_equal(a, dev.predict_noisy(Xt, 0.05, 0.05, random_state=1))
    acc = lambda p: (ex.classes[p] == yt).mean()  # noqa: E731
    assert acc(dev.predict_noisy(Xt, 0.5, 0.5, random_state=2)) < 0.3
    assert acc(clean) - acc(a) < 0.2


def test_resources(fitted):
    h, ex, X, y = fitted
    r = load_ssbc(ex.container).resources()
    assert r["flash_bytes"] == len(ex.container)
    assert r["ops_per_inference"]["projection_multiply_adds"] == 128 * 32
    assert r["ram_bytes"] < 2048
    assert "flash" in ex.report()


def _arrays():
    return make_ssbc_arrays(np.eye(3), 1.0, np.ones((3, 2)), np.zeros(2),
                            table_bits=[[0, 1], [1, 1]], table_labels=[0, 1], knn_k=1)


@pytest.mark.parametrize("mutate, match", [
    (lambda a: a.pop("anchors"), "'anchors' is missing"),
    (lambda a: a.update(projection=a["projection"].astype(np.int32)), "'projection' must have "
     "dtype int16"),
    (lambda a: a.update(exp_lut=a["exp_lut"][::-1].copy()), "'exp_lut'"),
    (lambda a: a.update(thresholds=np.zeros(3, np.int64)), "'thresholds' must have shape"),
    (lambda a: a.update(knn_k=np.array([5], np.int32)), "'knn_k' must be in"),
    (lambda a: a.update(table_codes=np.array([[4], [3]], np.uint8)), "padding bits"),
    (lambda a: a.update(table_labels=np.array([0, 7], np.int32)), "'table_labels' must be"),
    (lambda a: a.update(exp_mult=np.array([1], np.int64)), "dist_clamp"),
    (lambda a: a.pop("table_codes"), "without 'table_codes'"),
    (lambda a: a.update(sigma=np.array([-1.0])), "'sigma'"),
])
def test_container_validation_names_the_field(mutate, match):
    a = _arrays()
    mutate(a)
    with pytest.raises(ContainerError, match=match):
        load_ssbc(write_container(None, "ssbc", a))


def test_container_round_trip_and_kind(fitted, tmp_path):
    h, ex, X, y = fitted
    path = tmp_path / "m.edgc"
    path.write_bytes(ex.container)
    c = read_container(path)
    assert c.kind == "ssbc" and c.meta["bit_order"] == "lsb_first"
    assert_array_equal(c.arrays["exp_lut"], exp_lut())
    with pytest.raises(ContainerError, match="expected 'ssbc'"):
        SSBCDevice(read_container(write_container(None, "ecoc", {"x": np.zeros(1, np.uint8)})))
