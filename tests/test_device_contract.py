"""One device contract for every model kind (issue 11).

``firmware_sim.load`` / ``encode`` / ``infer`` on every kind; faults reach
what they would reach on a device (parameter upsets reach the learners of
ECOC and the projection of SSBC); the upset table and campaigns agree with an
independent end-to-end run of each faulty image (built here by editing the
array bytes and writing a new container, then running the kind's own
``predict``); the fast paths equal the plain path; a new kind and a new
fault model are one class plus one registration each.
"""

import numpy as np
import pytest
from sklearn.datasets import load_digits, load_iris
from sklearn.linear_model import LogisticRegression
from sklearn.tree import DecisionTreeClassifier

import firmware_sim
from edgecode import datasets
from edgecode.ecoc.classifier import ECOCClassifier
from edgecode.hashing import SSBC
from edgecode.naive_bayes import BinaryNaiveBayes
from export.ecoc import export_ecoc
from export.naive_bayes import export_protected_nb
from export.ssbc import export_ssbc
from firmware_sim import FrameError, load
from firmware_sim.artifact import read_container, write_container
from firmware_sim.campaign import run_campaign, wilson_interval
from firmware_sim.device import Device, Inference, register_kind
from firmware_sim.engine.batches import plan_batches, run_seeded_batches
from firmware_sim.engine.executors import BitJob, ThreadExecutor
from firmware_sim.engine.runner import plain_runner
from firmware_sim.engine.streams import clean_labels, stream
from firmware_sim.faults import BSC, Compose, Fault, GilbertElliott, ParameterUpset, \
    register_fault
from firmware_sim.sensitivity import single_upset_table


# ------------------------------------------------------------------ fixtures: real images
@pytest.fixture(scope="module")
def iris_linear():
    X, y = load_iris(return_X_y=True)
    rng = np.random.default_rng(0)
    order = rng.permutation(len(y))
    X, y = X[order], y[order]
    clf = ECOCClassifier(LogisticRegression(max_iter=500), code="one_vs_all").fit(X[:100], y[:100])
    dev = export_ecoc(clf, X[:100]).device
    return dev, X[100:], np.searchsorted(clf.classes_, y[100:])


@pytest.fixture(scope="module")
def digits_tree_nary():
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    code = np.random.default_rng(3).integers(0, 3, (10, 8))
    clf = ECOCClassifier(DecisionTreeClassifier(max_depth=4, random_state=0),
                         code=code).fit(X[:400], y[:400])
    dev = export_ecoc(clf, X[:400]).device
    return dev, X[1200:1260], y[1200:1260]


@pytest.fixture(scope="module")
def ssbc_table():
    X, y = load_digits(return_X_y=True)
    h = SSBC(8, 24, 16, center=True, random_state=0).fit(X[:300])
    dev = load(export_ssbc(h, X_table=X[:300], y_table=y[:300], knn_k=3).container)
    return dev, X[1200:1240], y[1200:1240]


@pytest.fixture(scope="module")
def hv_nb():
    d = datasets.load("house_votes")
    model = BinaryNaiveBayes().fit(d.X[:300], d.y[:300])
    dev = export_protected_nb(model, np.ones(d.X.shape[1], int)).device
    return dev, d.X[300:360], d.y[300:360]


KINDS = ["hv_nb", "iris_linear", "digits_tree_nary", "ssbc_table"]


def _get(request, name):
    return request.getfixturevalue(name)


# ------------------------------------------------------------------ the contract itself
@pytest.mark.parametrize("name", KINDS)
def test_load_encode_infer_on_every_kind(request, name):
    dev, X, y = _get(request, name)
    again = load(dev.container.tobytes())                 # bytes, path-free
    assert type(again) is type(dev) and isinstance(again, Device)
    assert load(dev.container).container is dev.container
    frames = again.encode(X)
    assert frames.dtype == again.frame_dtype and frames.shape == (len(X), again.frame_width)
    inf = again.infer(frames)
    assert isinstance(inf, Inference) and inf.labels.dtype == np.int64
    # the kind's own predict path gives the same labels
    own = dev.predict(X) if name == "hv_nb" else \
        dev.predict(dev.quantize(X)) if name != "ssbc_table" else dev.predict(X)
    np.testing.assert_array_equal(inf.labels, own)
    # infer == finish(stage), and the wire round trip is exact
    np.testing.assert_array_equal(again.finish(again.stage(frames)), inf.labels)
    np.testing.assert_array_equal(again.frames_from_wire(again.wire_bits(frames)), frames)
    assert again.wire_bits(frames).shape[1] == again.wire_width
    assert set(inf.decision) >= {"hv_nb": {"accumulator"},
                                 "iris_linear": {"symbols", "distances"},
                                 "digits_tree_nary": {"symbols", "distances"},
                                 "ssbc_table": {"code_bits", "nearest_distance"}}[name]


def test_ecoc_distances_pick_the_label(iris_linear, digits_tree_nary):
    for dev, X, _ in (iris_linear, digits_tree_nary):
        inf = dev.infer(dev.encode(X))
        np.testing.assert_array_equal(np.argmin(inf.decision["distances"], axis=1), inf.labels)


@pytest.mark.parametrize("name", ["iris_linear", "ssbc_table"])
def test_frames_of_the_wrong_kind_are_refused(request, name):
    dev, X, _ = _get(request, name)
    with pytest.raises(FrameError, match="int16 fixed-point features"):
        dev.infer(np.asarray(X, np.float64))           # floats, not encode(X)
    with pytest.raises(FrameError, match="shape"):
        dev.infer(dev.encode(X)[:, :-1])


def test_nb_frames_must_be_bits(hv_nb):
    dev, X, _ = hv_nb
    frames = dev.encode(X)
    with pytest.raises(FrameError, match="0/1"):
        dev.infer(frames * 2)
    with pytest.raises(FrameError, match="0/1"):
        dev.infer(frames.astype(np.int64) + 256)          # not wrapped to 0/1 by a cast


def test_unknown_kind_and_non_device_are_clear_errors(tmp_path):
    with pytest.raises(TypeError, match="firmware_sim Device"):
        run_campaign(object(), [[0]], BSC(0.1))
    with pytest.raises(ValueError, match="site must be"):
        run_campaign(firmware_sim.ProtectedNBDevice.from_arrays([2], -1, [1]), [[0]], BSC(0.1),
                     site="ether")


# ------------------------------------------------------------------ upsets reach the learners
def _flip_bit_image(container, array, bit):
    """Independent faulty image: flip bit ``bit`` of ``array``'s bytes, write anew."""
    a = container.arrays[array]
    raw = bytearray(a.tobytes())
    raw[bit // 8] ^= 1 << (bit % 8)
    arrays = dict(container.arrays)
    arrays[array] = np.frombuffer(bytes(raw), a.dtype).reshape(a.shape)
    return write_container(None, container.kind, arrays, container.meta or None)


def _end_to_end_labels(kind, raw, X):
    """Labels of a faulty image through the kind's own loader and predict (no contract)."""
    if kind == "ecoc":
        dev = firmware_sim.load_ecoc(raw)
        return dev.predict(dev.quantize(X))
    dev = firmware_sim.load_ssbc(raw)
    return dev.knn_bits(dev.bits(X))[0]


@pytest.mark.parametrize("name, array, stride", [
    ("iris_linear", "lin_weights", 1), ("iris_linear", "lin_bias", 7),
    ("digits_tree_nary", "node_threshold", 5), ("digits_tree_nary", "node_left", 3),
    ("ssbc_table", "projection", 11), ("ssbc_table", "table_codes", 13)])
def test_upset_table_equals_end_to_end_runs_of_each_faulty_image(request, name, array, stride):
    dev, X, _ = _get(request, name)
    tab = single_upset_table(dev, X, arrays=[array])
    clean = dev.labels(dev.encode(X))
    for bit in range(0, tab.n_bits, stride):
        raw = _flip_bit_image(dev.container, array, bit)
        try:
            labels = _end_to_end_labels(dev.container.kind, raw, X)
        except firmware_sim.ContainerError:
            assert tab.refused[bit], (array, bit)
            continue
        assert not tab.refused[bit], (array, bit)
        assert tab.same[bit] == int((labels == clean).sum()), (array, bit)


def test_lin_weights_sign_bits_change_labels(iris_linear):
    """The issue's measurement: every bit reported 0.000 before; sign bits matter."""
    dev, X, _ = iris_linear
    tab = single_upset_table(dev, X, arrays=["lin_weights"])
    sign_bits = np.arange(31, tab.n_bits, 32)          # int32, little-endian: bit 31
    assert tab.change_rate[sign_bits].mean() > 0.05
    assert tab.change_rate.max() > 0.3


def test_lin_weights_campaign_inside_the_end_to_end_interval(iris_linear):
    dev, X, _ = iris_linear
    count, trials = 8, 300
    res = run_campaign(dev, X, ParameterUpset(count=count, arrays=["lin_weights"]),
                       n_trials=trials, random_state=4)
    p = res.points[0]
    assert p.refused == 0
    # independent: draw faulty images ourselves, run each end to end
    rng = np.random.default_rng(99)
    clean = dev.predict(dev.quantize(X))
    w = dev.container.arrays["lin_weights"]
    rates = []
    for _ in range(trials):
        raw = bytearray(w.tobytes())
        for b in rng.choice(8 * len(raw), count, replace=False):
            raw[b // 8] ^= 1 << (b % 8)
        arrays = dict(dev.container.arrays)
        arrays["lin_weights"] = np.frombuffer(bytes(raw), w.dtype).reshape(w.shape)
        d = firmware_sim.load_ecoc(write_container(None, "ecoc", arrays, dev.container.meta))
        rates.append(np.mean(d.predict(d.quantize(X)) == clean))
    ref = float(np.mean(rates))
    lo, hi = wilson_interval(ref * trials, trials, 0.99)
    assert p.same_rate < 0.99
    # both are estimates of the same mean: the two 99% intervals overlap
    assert p.same_ci[0] <= hi and lo <= p.same_ci[1], (p.same_rate, ref)


def test_image_faults_rerun_the_whole_device_for_every_kind(iris_linear, ssbc_table):
    for dev, X, _ in (iris_linear, ssbc_table):
        arrays = {"ecoc": ["lin_weights"], "ssbc": ["projection"]}[dev.container.kind]
        res = run_campaign(dev, X, ParameterUpset(rate=0.05, arrays=arrays), n_trials=30,
                           random_state=0)
        assert res.points[0].same_rate < 1.0


def test_composed_image_and_wire_faults(iris_linear):
    dev, X, _ = iris_linear
    f = Compose([ParameterUpset(count=1, arrays=["lin_bias"]), BSC(0.02)])
    a = run_campaign(dev, X, f, n_trials=40, random_state=1, site="wire")
    b = run_campaign(dev, X, f, n_trials=40, random_state=1, site="intermediate")
    assert a.site == "wire" and b.site == "intermediate"
    assert 0.0 < a.points[0].same_rate < 1.0 and 0.0 < b.points[0].same_rate < 1.0


# ------------------------------------------------------------------ fast paths == plain path
@pytest.mark.parametrize("name, site, fault", [
    ("hv_nb", "wire", BSC(0.1)),
    ("hv_nb", "wire", GilbertElliott.from_flip_rate(0.1, 4.0)),
    ("iris_linear", "intermediate", BSC(0.2)),
    ("iris_linear", "intermediate", GilbertElliott.from_flip_rate(0.15, 3.0)),
    ("digits_tree_nary", "intermediate", BSC(0.15))])
def test_fast_paths_equal_the_plain_path(request, name, site, fault):
    dev, X, y = _get(request, name)
    frames = dev.encode(X)
    clean = clean_labels(dev, frames)
    rows, n_sym = stream(dev, frames, site)
    y = np.asarray(y, np.int64)
    # the kind has a fast path here (the test would compare the plain path with itself)
    assert dev.bit_fault_runner(site, fault, rows, clean, y, 50) is not None
    job = BitJob(dev, X, y, 50, site, rows, n_sym, clean)
    fast = ThreadExecutor(1).count(job, fault, np.random.default_rng(5))
    plain = run_seeded_batches(plain_runner(dev, site, fault, rows, clean, y, 50, n_sym),
                               plan_batches(len(X), 50, rows.shape[1], np.random.default_rng(5)),
                               len(X), 1)
    np.testing.assert_array_equal(fast[0], plain[0])
    np.testing.assert_array_equal(fast[1], plain[1])


def test_wire_faults_on_int16_frames_hit_the_features(iris_linear):
    """At the wire an ECOC device receives int16 features: a BSC there is a BSC on
    their 16-bit words (checked against flipping the words by hand)."""
    dev, X, _ = iris_linear
    res = firmware_sim.simulate(dev, X, 0.05, 200, random_state=3, site="wire")
    frames = dev.encode(X)
    rng = np.random.default_rng(7)
    same = []
    for _ in range(200):
        words = frames.view(np.uint16).copy()
        flips = rng.random((words.shape[0], words.shape[1], 16)) < 0.05
        words ^= (flips * (1 << np.arange(16))).sum(axis=2).astype(np.uint16)
        same.append(np.mean(dev.labels(words.view(np.int16)) == dev.labels(frames)))
    ref = float(np.mean(same))
    lo, hi = wilson_interval(res.mean_same_rate * res.same.size * 200, res.same.size * 200,
                             0.999)
    assert lo - 0.02 <= ref <= hi + 0.02


def test_simulate_one_signature_for_every_kind(hv_nb, iris_linear, ssbc_table):
    for dev, X, y in (hv_nb, iris_linear, ssbc_table):
        res = dev.simulate(X, 0.0, 3, random_state=0, y=y)
        assert res.mean_same_rate == 1.0 and res.same.shape == (len(X),)
        noisy = firmware_sim.simulate(dev, X, 0.3, 20, random_state=0)
        assert noisy.mean_same_rate < 1.0
        # threads and progress through the method too, the same counts
        calls = []
        threaded = dev.simulate(X, 0.3, 20, random_state=0, n_jobs=2,
                                progress=lambda *c: calls.append(c))
        assert np.array_equal(threaded.same, noisy.same)
        assert calls[-1] == (20 * len(X), 20 * len(X))


@pytest.mark.parametrize("name", KINDS)
def test_simulate_is_a_campaign_with_a_bsc(request, name):
    """Issue 25: one engine, one BSC sampler. ``simulate`` seeded with the seed a
    one-value campaign gives its grid value (child 0 of ``SeedSequence(random_state)``)
    counts exactly what ``run_campaign(.., BSC(eps))`` counts, for every kind (naive
    Bayes at the wire had its own sampler before)."""
    dev, X, y = _get(request, name)
    y = np.asarray(y, np.int64)
    camp = run_campaign(dev, X, BSC(0.1), n_trials=40, random_state=4, y=y)
    sim = firmware_sim.simulate(dev, X, 0.1, 40, random_state=np.random.SeedSequence(4).spawn(1)[0],
                                y=y)
    assert camp.site == dev.default_site and 0 < camp.points[0].same_rate < 1
    assert sim.same.tolist() == camp.points[0].same_per_point
    assert sim.accuracy == camp.points[0].accuracy


# ------------------------------------------------------------------ registries
class _ThresholdDevice(Device):
    """A toy kind: label = (sum of int16 features > stored threshold). Registered with
    the old form, register_kind(name, code, cls), and the contract's defaults only."""

    frame_dtype = np.dtype(np.int16)

    def __init__(self, container):
        self.container = container
        self.meta = container.meta
        self.threshold = container.require("threshold", np.int32, (1,))
        self.n = int(container.require("n_features", np.int32, (1,))[0])

    @property
    def frame_width(self):
        return self.n

    def encode(self, X):
        return np.asarray(X, np.int16)

    def stage(self, frames):
        return self.check_frames(frames).astype(np.int64).sum(axis=1, keepdims=True)

    def finish(self, intermediate):
        return (np.asarray(intermediate)[:, 0] > self.threshold[0]).astype(np.int64)

    def infer(self, frames):
        s = self.stage(frames)
        return Inference(self.finish(s), {"sum": s[:, 0]})

    def resources(self):
        return {"flash_bytes": self.container.nbytes}


class _FlipFirstColumn(Fault):
    """A toy fault model: flips the first bit of every row with probability p."""

    name = "first_column"

    def __init__(self, p):
        self.p = float(p)

    def params(self):
        return {"p": self.p}

    def apply_inplace(self, bits, rng):
        bits[:, 0] ^= (rng.random(bits.shape[0]) < self.p).astype(np.uint8)


def test_a_new_kind_and_a_new_fault_are_one_registration_each():
    register_kind("toy_threshold", 200, _ThresholdDevice)
    register_fault(_FlipFirstColumn)
    raw = write_container(None, "toy_threshold", {"threshold": np.array([3], np.int32),
                                                  "n_features": np.array([2], np.int32)})
    dev = load(raw)
    assert isinstance(dev, _ThresholdDevice) and dev.kind_code == 200
    X = [[1, 1], [3, 3]]
    np.testing.assert_array_equal(dev.infer(dev.encode(X)).labels, [0, 1])
    f = firmware_sim.make_fault("first_column", p=1.0)
    res = run_campaign(dev, X, f, n_trials=10, random_state=0, site="wire")
    # bit 0 of the first feature flips: 1 -> 0 and 3 -> 2; sums 1 and 5: labels stay
    assert res.points[0].same_rate == 1.0
    up = run_campaign(dev, X, ParameterUpset(count=1, arrays=["threshold"]), n_trials=50,
                      random_state=0)
    assert up.points[0].same_rate < 1.0
    with pytest.raises(ValueError, match="clashes"):
        register_kind("toy_other", 200, _ThresholdDevice)
    assert read_container(raw).kind == "toy_threshold"


# ---------------------------------------------------------------- a toy kind with every hook
class _ParityDevice(Device):
    """A toy kind written the new way (issue 25): label = parity of the frame's bits
    XOR a stored bit. Class attributes name it, ``check_container`` holds its
    rules, and it answers every hook the shared code asks: decision layout,
    workspace, C sources, runtime bytes per profile, a wire eps per feature, and
    a fast path for additive wire faults (a label flips with the parity of the
    errors)."""

    kind = "toy_parity"
    kind_code = 201
    default_site = "wire"
    c_sources = ("ec_toy_parity.c",)
    c_switch = "EC_WITH_TOY_PARITY"
    runtime_bytes = {"cortex-m0": (111, 22)}

    @classmethod
    def check_container(cls, container):
        super().check_container(container)
        flip = container.require("flip", np.uint8, (1,))
        n = container.require("n_bits", np.int32, (1,))
        if flip[0] > 1 or n[0] < 1:
            raise firmware_sim.ContainerError("toy_parity container: 'flip' must be 0 or 1 "
                                              "and 'n_bits' >= 1")
        return {"flip": int(flip[0]), "n": int(n[0])}

    def __init__(self, container):
        v = self.check_container(container)
        self.container, self.meta = container, container.meta
        self.flip, self.n = v["flip"], v["n"]

    @property
    def frame_width(self):
        return self.n

    def encode(self, X):
        return np.ascontiguousarray(np.asarray(X, np.uint8))

    def stage(self, frames):
        return self.check_frames(frames)

    def finish(self, intermediate):
        return ((np.asarray(intermediate).sum(axis=1) + self.flip) % 2).astype(np.int64)

    def infer(self, frames):
        bits = self.stage(frames)
        return Inference(self.finish(bits), {"ones": bits.sum(axis=1)})

    def decision_layout(self):
        return (("ones", 1),)

    def workspace_bytes(self):
        return 8

    def resources(self):
        return {"kind": self.kind, "flash_bytes": self.container.nbytes, "ram_bytes": 4}

    def bit_fault_runner(self, site, fault, stream, clean, y, n_trials):
        if site != "wire" or not fault.additive:
            return None
        width = stream.shape[1]

        def run(start, nrows, rng, same, correct):
            masks = fault.error_masks(nrows, width, rng)
            odd = np.zeros(nrows, np.int64)
            for w in range(masks.shape[1]):
                odd += np.array([bin(int(m)).count("1") for m in masks[:, w]])
            rows = np.arange(start, start + nrows) // n_trials
            labels = (clean[rows] + odd) % 2
            np.add.at(same, rows, labels == clean[rows])
            if y is not None:
                np.add.at(correct, rows, labels == y[rows])
        return run


@pytest.fixture(scope="module")
def parity():
    register_kind(_ParityDevice)
    register_kind(_ParityDevice)                      # again: a no-op
    raw = write_container(None, "toy_parity", {"flip": np.array([1], np.uint8),
                                               "n_bits": np.array([5], np.int32)})
    X = np.random.default_rng(0).integers(0, 2, (30, 5))
    return load(raw), X, ((X.sum(axis=1) + 1) % 2)


def test_a_toy_kind_gets_loading_decisions_profiles_and_errors(parity):
    dev, X, y = parity
    assert firmware_sim.device_kinds()["toy_parity"] is _ParityDevice
    assert firmware_sim.KINDS["toy_parity"] == 201
    labels, rows = dev.decision_rows(dev.encode(X))
    np.testing.assert_array_equal(labels, y)
    np.testing.assert_array_equal(rows[:, 0], X.sum(axis=1))
    assert dev.workspace_bytes() == 8 and dev.c_sources == ("ec_toy_parity.c",)
    from firmware_sim.profiles import check_fits, get_profile
    assert get_profile("cortex-m0").runtime_bytes("toy_parity") == (111, 22)
    assert get_profile("cortex-m4").runtime_bytes("toy_parity")[0] == \
        max(get_profile("cortex-m4").runtime_table()["flash"].values())   # not measured there
    assert check_fits("cortex-m0", dev.resources())["ram_free_bytes"] == 4096 - 4 - 22
    bad = write_container(None, "toy_parity", {"flip": np.array([2], np.uint8),
                                               "n_bits": np.array([5], np.int32)})
    with pytest.raises(firmware_sim.ContainerError, match="'flip' must be 0 or 1"):
        load(bad)
    with pytest.raises(FrameError, match="0/1 bits"):
        dev.infer(np.full((1, 5), 2))
    with pytest.raises(firmware_sim.DeviceError, match="clashes"):
        register_kind("toy_parity", 202, _ParityDevice)


def test_a_toy_kind_gets_campaigns_simulate_and_upsets(parity):
    dev, X, y = parity
    # every fault at every site through the plain path, the fast path where it applies
    for site in ("wire", "intermediate"):
        res = run_campaign(dev, X, BSC(0.1), "eps", [0.0, 0.2], n_trials=200, random_state=1,
                           y=y, site=site)
        assert res.points[0].same_rate == 1.0 and 0.4 < res.points[1].same_rate < 0.9
    burst = run_campaign(dev, X, firmware_sim.make_fault("burst", flip_rate=0.1, mean_burst=3),
                         n_trials=100, random_state=2)
    assert burst.site == "wire" and burst.points[0].same_rate < 1.0
    stuck = run_campaign(dev, X, firmware_sim.make_fault("stuck", stuck1=[0]), n_trials=5,
                         random_state=2)
    assert stuck.points[0].same_rate == float(np.mean(X[:, 0] == 1))
    # simulate: a function and a method, one per-position eps too
    sim = firmware_sim.simulate(dev, X, 0.2, 300, random_state=3, y=y)
    assert sim.accuracy == sim.mean_same_rate and 0.4 < sim.mean_same_rate < 0.9
    assert np.array_equal(dev.simulate(X, 0.2, 300, random_state=3).same, sim.same)
    per_bit = firmware_sim.simulate(dev, X, [0.2] * 5, 300, random_state=3)
    assert per_bit.eps_bits.tolist() == [0.2] * 5
    # upsets: bit 0 of 'flip' flips every label, the other bits make it > 1 (refused)
    tab = single_upset_table(dev, X, arrays=["flip"])
    assert tab.change_rate.tolist() == [1.0] * 8
    assert tab.refused.tolist() == [False] + [True] * 7
    assert run_campaign(dev, X, ParameterUpset(count=1, arrays=["n_bits"]), n_trials=20,
                        random_state=0).points[0].refused > 0


def test_a_toy_kind_fast_path_equals_the_plain_path(parity):
    dev, X, y = parity
    frames = dev.encode(X)
    clean = clean_labels(dev, frames)
    rows, n_sym = stream(dev, frames, "wire")
    job = BitJob(dev, X, y, 64, "wire", rows, n_sym, clean)
    for fault in (BSC(0.15), GilbertElliott.from_flip_rate(0.1, 3.0)):
        assert dev.bit_fault_runner("wire", fault, rows, clean, y, 64) is not None
        fast = ThreadExecutor(2).count(job, fault, np.random.SeedSequence(9))
        plain = run_seeded_batches(plain_runner(dev, "wire", fault, rows, clean, y, 64),
                                   plan_batches(len(X), 64, 5, np.random.SeedSequence(9)),
                                   len(X), 1)
        np.testing.assert_array_equal(fast[0], plain[0])
        np.testing.assert_array_equal(fast[1], plain[1])


class _Erasure(Fault):
    """A toy fault written the minimal way: name, target, params, apply_inplace;
    additive=False, so no fast path uses it."""

    name = "toy_erasure"
    target = "bits"

    def __init__(self, rate=0.5):
        self.rate = float(rate)

    def params(self):
        return {"rate": self.rate}

    def apply_inplace(self, bits, rng):
        bits[rng.random(bits.shape) < self.rate] = 0


def test_a_toy_fault_gets_the_registry_sweeps_and_campaigns(parity):
    dev, X, _ = parity
    register_fault(_Erasure)
    assert firmware_sim.FAULTS["toy_erasure"] is _Erasure     # what the CLI's --fault lists
    f = firmware_sim.make_fault("toy_erasure")
    assert f == _Erasure(0.5) and f.to_dict() == {"model": "toy_erasure", "rate": 0.5}
    res = run_campaign(dev, X, f, "rate", [0.0, 1.0], n_trials=20, random_state=0)
    ones = X.sum(axis=1)
    assert res.points[0].same_rate == 1.0
    assert res.points[1].same_rate == float(np.mean(ones % 2 == 0))    # all bits erased
    with pytest.raises(ValueError, match="unknown parameter"):
        firmware_sim.make_fault("toy_erasure", p=1)
    with pytest.raises(firmware_sim.DeviceError, match="already registered"):
        register_fault(type("Other", (_Erasure,), {}))
