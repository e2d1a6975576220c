"""Protected naive Bayes device: kernels against slow references, the
container schema, resources counted by hand, and the noise campaign against
closed forms."""

import numpy as np
import pytest

from firmware_sim import (
    ContainerError,
    ProtectedNBDevice,
    load_protected_nb,
    make_protected_nb_arrays,
    read_container,
    simulate,
    write_container,
)
from naive_firmware import (
    binomial_ok,
    exact_same_probability,
    majority_failure,
    naive_log_odds,
    naive_majority_decode,
    naive_predict,
    naive_transmit,
)


def _random_model(rng, n, max_r=3, max_w=1000):
    w = rng.integers(-max_w, max_w + 1, n)
    b = int(rng.integers(-max_w, max_w + 1))
    r = rng.integers(0, max_r + 1, n)
    return w, b, r


def _device(w, b, r, s=0, meta=None):
    return ProtectedNBDevice.from_arrays(w, b, r, s, meta=meta)


# ---------------------------------------------------------------- kernels vs references
@pytest.mark.parametrize("seed", range(6))
def test_majority_decode_matches_loop(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 9))
    w, b, r = _random_model(rng, n, max_r=4)
    dev = _device(w, b, r)
    bits = rng.integers(0, 2, (40, dev.total_bits), dtype=np.uint8)
    np.testing.assert_array_equal(dev.majority_decode(bits), naive_majority_decode(bits, r))


@pytest.mark.parametrize("seed", range(6))
def test_decision_and_predict_match_float_reference(seed):
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(1, 12))
    w, b, r = _random_model(rng, n, max_w=2**20)
    s = int(rng.integers(0, 16))
    dev = _device(w, b, r, s)
    X = rng.integers(0, 2, (60, n), dtype=np.uint8)
    X[0] = 0                                                       # all-zero row: bias alone
    acc = dev.decision(X)
    assert acc.dtype == np.int64
    np.testing.assert_allclose(acc / 2.0**s, naive_log_odds(X, w, b, s), rtol=0, atol=0)
    np.testing.assert_array_equal(dev.predict(X), naive_predict(X, w, b, s))
    assert acc[0] == b


def test_tie_is_label_zero():
    dev = _device([3, -3], 0, [0, 0])
    assert dev.decision([[1, 1], [0, 0]]).tolist() == [0, 0]
    assert dev.predict([[1, 1], [0, 0], [1, 0]]).tolist() == [0, 0, 1]


@pytest.mark.parametrize("seed", range(4))
def test_transmit_layout_and_noiseless_round_trip(seed):
    rng = np.random.default_rng(200 + seed)
    n = int(rng.integers(1, 10))
    w, b, r = _random_model(rng, n)
    dev = _device(w, b, r)
    X = rng.integers(0, 2, (30, n), dtype=np.uint8)
    bits = dev.transmit(X)
    assert bits.shape == (30, int((2 * r + 1).sum())) and bits.dtype == np.uint8
    np.testing.assert_array_equal(bits, naive_transmit(X, r))
    np.testing.assert_array_equal(dev.majority_decode(bits), X)
    np.testing.assert_array_equal(dev.predict_bits(bits), dev.predict(X))
    np.testing.assert_array_equal(dev.decision_bits(bits), dev.decision(X))


@pytest.mark.parametrize("seed", range(4))
def test_predict_bits_is_predict_of_decoded(seed):
    rng = np.random.default_rng(300 + seed)
    w, b, r = _random_model(rng, 7)
    dev = _device(w, b, r)
    bits = rng.integers(0, 2, (80, dev.total_bits), dtype=np.uint8)
    np.testing.assert_array_equal(dev.predict_bits(bits),
                                  naive_predict(naive_majority_decode(bits, r), w, b))


def test_accepts_bool_and_float_binary_input():
    dev = _device([5, -2], -1, [1, 0])
    assert dev.predict(np.array([[True, False]])).tolist() == [1]
    assert dev.predict([[1.0, 1.0]]).tolist() == [1]


@pytest.mark.parametrize("call, arg, match", [
    ("predict", [[1, 0, 1]], r"X must have 2 columns \(features\); got shape \(1, 3\)"),
    ("predict", [1, 0], r"X must be 2-dimensional .*reshape\(1, -1\)"),
    ("decision", [[1, 2]], r"X\[0, 1\] must be 0 or 1"),
    ("transmit", [[0.5, 0]], r"X\[0, 0\] must be 0 or 1"),
    ("majority_decode", [[1, 0, 1]], r"bits must have shape \(n_samples, 4\)"),
    ("predict_bits", [[1, 0, 1, 3]], r"bits\[0, 3\] must be 0 or 1"),
])
def test_input_errors(call, arg, match):
    dev = _device([5, -2], -1, [1, 0])
    with pytest.raises(ValueError, match=match):
        getattr(dev, call)(arg)


# ---------------------------------------------------------------- container schema
def test_load_from_path_bytes_and_container(tmp_path):
    arrays = make_protected_nb_arrays([7, -3, 2], -4, [2, 0, 1], 5)
    path = tmp_path / "nb.ecf"
    raw = write_container(path, "protected_nb", arrays, meta={"feature_names": ["a", "b", "c"]})
    for source in (path, str(path), raw, read_container(raw)):
        dev = load_protected_nb(source)
        assert (dev.n_features, dev.total_bits, dev.bias, dev.scale_shift) == (3, 9, -4, 5)
        assert dev.weights.tolist() == [7, -3, 2] and dev.repetitions.tolist() == [2, 0, 1]
        assert dev.copies.tolist() == [5, 1, 3]
        assert dev.meta == {"feature_names": ["a", "b", "c"]}
    assert list(arrays) == ["repetitions", "weights", "bias", "scale_shift"]
    assert [a.dtype for a in arrays.values()] == [np.uint16, np.int32, np.int32, np.int32]
    assert "total_bits=9" in repr(dev)


def _schema_arrays():
    return dict(make_protected_nb_arrays([7, -3, 2], -4, [2, 0, 1], 5))


def _drop(name):
    def f(a):
        del a[name]
    return f


def _set(name, value):
    def f(a):
        a[name] = value
    return f


LOAD_ERRORS = {
    "missing repetitions": (_drop("repetitions"), "required array 'repetitions' is missing"),
    "missing weights": (_drop("weights"), "required array 'weights' is missing"),
    "missing bias": (_drop("bias"), "required array 'bias' is missing"),
    "missing scale_shift": (_drop("scale_shift"), "required array 'scale_shift' is missing"),
    "repetitions dtype": (_set("repetitions", np.array([2, 0, 1], np.int32)),
                          "array 'repetitions' must have dtype uint16; got int32"),
    "weights dtype": (_set("weights", np.array([7.0, -3, 2])),
                      "array 'weights' must have dtype int32; got float64"),
    "bias dtype": (_set("bias", np.array([-4], np.int64)),
                   "array 'bias' must have dtype int32; got int64"),
    "scale_shift dtype": (_set("scale_shift", np.array([5], np.uint8)),
                          "array 'scale_shift' must have dtype int32; got uint8"),
    "repetitions 2-d": (_set("repetitions", np.zeros((3, 1), np.uint16)),
                        "array 'repetitions' must be 1-dimensional"),
    "repetitions empty": (_set("repetitions", np.zeros(0, np.uint16)),
                          "array 'repetitions' must have at least one feature"),
    "weights length": (_set("weights", np.array([7, -3], np.int32)),
                       r"array 'weights' must have shape \(3,\); got \(2,\)"),
    "bias shape": (_set("bias", np.array(-4, np.int32)),
                   "array 'bias' must be 1-dimensional"),
    "bias length": (_set("bias", np.array([-4, 1], np.int32)),
                    r"array 'bias' must have shape \(1,\)"),
    "scale_shift shape": (_set("scale_shift", np.array([[5]], np.int32)),
                          "array 'scale_shift' must be 1-dimensional"),
    "scale_shift range": (_set("scale_shift", np.array([-1], np.int32)),
                          r"array 'scale_shift' must be in \[0, 62\]; got -1"),
    "accumulator overflow": (_set("weights", np.array([2**30, 2**30, 0], np.int32)),
                             r"'weights' and 'bias': sum\(\|weights\|\) \+ \|bias\| = 2147483652"),
}


@pytest.mark.parametrize("case", sorted(LOAD_ERRORS))
def test_load_errors_name_the_field(case):
    mutate, match = LOAD_ERRORS[case]
    arrays = _schema_arrays()
    mutate(arrays)
    raw = write_container(None, "protected_nb", arrays)
    with pytest.raises(ContainerError, match=match):
        load_protected_nb(raw)


def test_load_rejects_wrong_kind_and_garbage():
    raw = write_container(None, "ecoc", _schema_arrays())
    with pytest.raises(ContainerError, match="container kind is 'ecoc'; expected 'protected_nb'"):
        load_protected_nb(raw)
    with pytest.raises(ContainerError, match="bad magic"):
        load_protected_nb(b"not a container at all, definitely not one")
    with pytest.raises(TypeError, match="takes a Container"):
        ProtectedNBDevice(_schema_arrays())


@pytest.mark.parametrize("args, exc, match", [
    (([1.5, 2], 0, [0, 0], 0), TypeError, "weights must hold integers"),
    (([1, 2], 0.5, [0, 0], 0), TypeError, "bias must be an integer"),
    (([1, 2], 0, [0, 0], True), TypeError, "scale_shift must be an integer"),
    (([], 0, [], 0), ValueError, "at least one feature"),
    (([1, 2], 0, [0], 0), ValueError, r"repetitions must have shape \(2,\)"),
    (([1, 2], 0, [0, -1], 0), ValueError, r"repetitions\[1\] must be in \[0, 65535\]; got -1"),
    (([1, 2], 0, [70000, 0], 0), ValueError, r"repetitions\[0\] must be in \[0, 65535\]"),
    (([2**31, 0], 0, [0, 0], 0), ValueError, r"weights\[0\] must be in"),
    (([1, 2], 2**31, [0, 0], 0), ValueError, "bias must fit int32"),
    (([1, 2], 0, [0, 0], 63), ValueError, r"scale_shift must be in \[0, 62\]"),
    (([2**30, 2**30], 0, [0, 0], 0), ValueError, r"must be < 2\*\*31"),
    (([[1, 2]], 0, [0, 0], 0), ValueError, "weights must be 1-dimensional"),
])
def test_make_arrays_validation(args, exc, match):
    with pytest.raises(exc, match=match):
        make_protected_nb_arrays(*args)


# ---------------------------------------------------------------- resources by hand
def test_resources_counted_by_hand():
    # r = [0, 1, 2]: copies 1 + 3 + 5 = 9 channel bits, n = 3 features.
    raw = write_container(None, "protected_nb",
                          make_protected_nb_arrays([4, -2, 3], -2, [0, 1, 2], 3))
    dev = load_protected_nb(raw)
    res = dev.resources()
    assert res["total_bits"] == 9 and res["n_features"] == 3
    assert res["flash_bytes"] == len(raw)
    assert res["parameter_bytes"] == 2 * 3 + 4 * 3 + 4            # reps + weights + bias
    # 9 bits packed -> 2 bytes; int32 accumulator, uint32 vote counter, uint32 bit index
    assert res["ram_breakdown"] == {"received_bits_packed": 2, "accumulator": 4,
                                    "vote_counter": 4, "bit_index": 4}
    assert res["ram_bytes"] == 14 and res["ram_bytes_unpacked"] == 9 + 12
    ops = res["ops_per_inference"]
    assert ops == {"vote_additions": 9, "vote_comparisons": 3, "accumulate_additions": 3,
                   "sign_comparisons": 1, "total": 16, "packed_bit_extractions": 9}
    assert dev.resources(X=[[1, 0, 1], [0, 0, 0]])["accumulate_additions_mean"] == 1.0


# ---------------------------------------------------------------- campaign
@pytest.mark.parametrize("r", [0, 1, 2, 3])
@pytest.mark.parametrize("eps", [0.05, 0.3])
def test_simulate_one_feature_matches_majority_failure(r, eps):
    dev = _device([2], -1, [r])                                    # label == decoded x
    n_trials = 20000
    res = simulate(dev, [[0], [1]], eps, n_trials, random_state=r)
    assert res.clean_labels.tolist() == [0, 1]
    q = majority_failure(eps, r)
    for count in res.same:
        assert binomial_ok(n_trials - int(count), n_trials, q), (r, eps, count, q)


def test_simulate_matches_exact_enumeration_with_per_feature_eps():
    rng = np.random.default_rng(8)
    w, b, r = _random_model(rng, 5, max_r=2, max_w=50)
    eps = np.array([0.05, 0.3, 0.0, 0.2, 0.12])
    dev = _device(w, b, r)
    X = rng.integers(0, 2, (12, 5), dtype=np.uint8)
    n_trials = 6000
    res = dev.simulate(X, eps, n_trials, random_state=0)
    assert res.eps_bits.tolist() == np.repeat(eps, 2 * r + 1).tolist()
    for x, count in zip(X, res.same):
        p = exact_same_probability(list(map(int, x)), w, b, r, eps)
        assert binomial_ok(int(count), n_trials, p), (x, count, p)
    # the same eps given per channel bit gives the same result for the same seed
    res_bits = simulate(dev, X, res.eps_bits, n_trials, random_state=0)
    np.testing.assert_array_equal(res_bits.same, res.same)


def test_simulate_eps_zero_seed_and_y():
    rng = np.random.default_rng(9)
    w, b, r = _random_model(rng, 6)
    dev = _device(w, b, r)
    X = rng.integers(0, 2, (25, 6), dtype=np.uint8)
    y = rng.integers(0, 2, 25)
    clean = simulate(dev, X, 0.0, 50, random_state=0, y=y)
    assert clean.same.tolist() == [50] * 25 and clean.mean_same_rate == 1.0
    np.testing.assert_array_equal(clean.correct, 50 * (dev.predict(X) == y))
    assert clean.accuracy == float((dev.predict(X) == y).mean())
    a = simulate(dev, X, 0.1, 300, random_state=5)
    b_ = simulate(dev, X, 0.1, 300, random_state=5)
    np.testing.assert_array_equal(a.same, b_.same)
    assert a.correct is None and a.accuracy is None
    np.testing.assert_allclose(a.same_rate, a.same / 300)
    assert not np.array_equal(a.same, simulate(dev, X, 0.1, 300, random_state=6).same)
    same, clean_labels = a                                         # unpacks as a pair
    assert same is a.same and clean_labels is a.clean_labels


@pytest.mark.parametrize("eps", [0.25, [0.25, 0.0]])
def test_simulate_batches_cross_point_boundaries(monkeypatch, eps):
    """Small batches that split points (and a per-feature eps): counts stay per point."""
    monkeypatch.setattr("firmware_sim.engine.batches.BATCH_BITS", 1000)
    dev = _device([2, 0], -1, [1, 0])                 # 4 channel bits -> 250 rows per batch
    n_trials = 20011
    res = simulate(dev, [[0, 0], [1, 1], [0, 1]], eps, n_trials, random_state=1)
    q = majority_failure(0.25, 1)
    for count in res.same:
        assert binomial_ok(n_trials - int(count), n_trials, q)


def test_simulate_house_votes_smoke():
    from edgecode.datasets import load_house_votes

    d = load_house_votes()
    p1 = (d.X[d.y == 1].sum(0) + 1) / ((d.y == 1).sum() + 2)
    p0 = (d.X[d.y == 0].sum(0) + 1) / ((d.y == 0).sum() + 2)
    w = np.log(p1 / p0) - np.log((1 - p1) / (1 - p0))
    b = np.log((d.y == 1).mean() / (d.y == 0).mean()) + np.log((1 - p1) / (1 - p0)).sum()
    dev = _device(np.round(w * 2**10).astype(np.int64), int(round(b * 2**10)), np.ones(16, int), 10)
    res = simulate(dev, d.X, 0.2, 200, random_state=0, y=d.y)
    assert res.same.shape == (435,) and 0.9 < res.mean_same_rate < 1.0
    assert (dev.predict(d.X) == d.y).mean() > 0.85


@pytest.mark.parametrize("kwargs, exc, match", [
    ({"eps": 1.2}, ValueError, r"eps must be in \[0, 1\]"),
    ({"eps": [0.1, 0.2, 0.3]}, ValueError, r"per feature \(shape \(2,\)\) or per channel bit "
                                           r"\(shape \(4,\)\); got shape \(3,\)"),
    ({"eps": [0.1, -0.2]}, ValueError, r"eps\[1\] must be in \[0, 1\]"),
    ({"n_trials": 0}, ValueError, "n_trials must be >= 1"),
    ({"n_trials": 2.5}, TypeError, "n_trials must be an integer"),
    ({"y": [0, 1, 1]}, ValueError, r"y must have shape \(2,\)"),
    ({"random_state": "x"}, TypeError, "random_state must be"),
])
def test_simulate_validation(kwargs, exc, match):
    dev = _device([5, -2], -1, [1, 0])
    args = {"X": [[1, 0], [0, 1]], "eps": 0.1, "n_trials": 10, **kwargs}
    with pytest.raises(exc, match=match):
        simulate(dev, **args)
    with pytest.raises(TypeError, match="device must be a firmware_sim Device"):
        simulate(5, [[1]], 0.1, 10)
