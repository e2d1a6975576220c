import numpy as np
import onnx
import onnxruntime as ort
import pytest
from numpy.testing import assert_array_equal

from edgecode.datasets import load_house_votes, load_nltcs
from edgecode.naive_bayes import BinaryNaiveBayes
from export.naive_bayes import (export_protected_nb, protected_nb_to_onnx,
                                quantize_naive_bayes)
from firmware_sim.artifact import read_container
from firmware_sim.channel import bsc
from firmware_sim.naive_bayes import load_protected_nb


@pytest.fixture(scope="module")
def house():
    d = load_house_votes()
    return d, BinaryNaiveBayes().fit(d.X, d.y)


def _all_inputs(n):
    i = np.arange(2**n)
    return ((i[:, None] >> np.arange(n)) & 1).astype(np.uint8)


def _session(model):
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


def test_integer_labels_equal_float_labels_on_every_bundled_input(house):
    d, nb = house
    weights, bias, shift, checked = quantize_naive_bayes(nb, d.X)
    assert checked == 2**16 + len(d.X)
    for X in (d.X, _all_inputs(16)):  # every bundled row, and every possible input
        acc = bias + X.astype(np.int64) @ weights.astype(np.int64)
        assert_array_equal(acc > 0, nb.decision_function(X) > 0)
    # NLTCS: 15 features, every row of every split
    nl = load_nltcs()
    nbn = BinaryNaiveBayes().fit(nl.subset("train").X, nl.subset("train").y)
    w, b, s, _ = quantize_naive_bayes(nbn, nl.X)
    assert_array_equal(b + nl.X.astype(np.int64) @ w > 0, nbn.decision_function(nl.X) > 0)


def test_onnx_equals_device_on_clean_and_noisy_bits(house, tmp_path):
    d, nb = house
    rng = np.random.default_rng(0)
    r = rng.integers(0, 4, 16)
    out = export_protected_nb(nb, r, container_path=tmp_path / "m.edgc",
                              onnx_path=tmp_path / "m.onnx", X_check=d.X,
                              meta={"planned_mean_scp": 0.9}, onnx_input="bits")
    onnx.checker.check_model(onnx.load(tmp_path / "m.onnx"), full_check=True)
    device = load_protected_nb(tmp_path / "m.edgc")
    assert read_container(tmp_path / "m.edgc").meta["planned_mean_scp"] == 0.9 or \
        float(read_container(tmp_path / "m.edgc").meta["planned_mean_scp"]) == 0.9
    sess = ort.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"])
    bits = device.transmit(d.X)
    for eps in (0.0, 0.05, 0.3, 0.5):
        rx = bsc(bits, eps, random_state=1)
        label, decision = sess.run(["label", "decision"], {"bits": rx})
        assert_array_equal(label, device.predict_bits(rx))
        assert_array_equal(decision, device.decision(device.majority_decode(rx)))
    # random received words, not only transmissions of real inputs
    rx = rng.integers(0, 2, (500, bits.shape[1]), dtype=np.uint8)
    assert_array_equal(sess.run(["label"], {"bits": rx})[0], device.predict_bits(rx))
    # clean transmission decodes to the float model's labels
    assert_array_equal(device.predict_bits(bits), nb.decision_function(d.X) > 0)
    assert out.flash_bytes == len(out.container) and out.ram_bytes > 0


def test_onnx_graph_by_hand_small_model():
    # 2 features, r = (1, 0): bits = [f0 f0 f0 f1]
    model = protected_nb_to_onnx(np.array([5, -3]), -1, np.array([1, 0]), input="bits")
    sess = _session(model)
    bits = np.array([[1, 1, 0, 0], [1, 0, 0, 1], [0, 0, 0, 0], [1, 1, 1, 1]], np.uint8)
    label, dec = sess.run(None, {"bits": bits})
    assert_array_equal(dec, [4, -4, -1, 1])
    assert_array_equal(label, [1, 0, 0, 1])
    assert model.opset_import[0].version == 17


def test_export_rejects_bad_repetitions(house):
    d, nb = house
    with pytest.raises(ValueError, match="repetitions must be 16 integers"):
        export_protected_nb(nb, [1] * 15)
    with pytest.raises(ValueError, match="repetitions must be 16 integers"):
        export_protected_nb(nb, [-1] + [0] * 15)
