"""The device contract on the forest kind: campaigns, upset tables and ``simulate`` at
every site, against independent end-to-end runs (issue 25 item 6).

* ``infer == finish(stage)``; the wire round trip; frames of the wrong kind
  are refused;
* the wire: a BSC on the int16 frames' bits (checked against flipping the
  16-bit words by hand and running the naive device);
* the intermediate results (every tree's leaf id): N-ary events replace the
  leaf by a uniformly random other one, checked against a hand-made noisy
  vote; with two classes and class leaves they are bits;
* the image: every single-bit upset of the node and leaf arrays equals an
  end-to-end run of the faulty image (edited bytes, a new container, the
  naive loader's layout check and walk); a campaign with one upset per image
  equals the upset table's prediction exactly;
* the counts do not depend on the threads.
"""

import numpy as np
import pytest
from sklearn.datasets import load_digits, load_iris
from sklearn.ensemble import ExtraTreesClassifier, RandomForestClassifier

import firmware_sim
import naive_forest as naive
from export.forest import export_forest
from firmware_sim import FrameError
from firmware_sim.artifact import read_container, write_container
from firmware_sim.campaign import run_campaign, wilson_interval
from firmware_sim.faults import BSC, Compose, GilbertElliott, ParameterUpset, StuckAt
from firmware_sim.sensitivity import single_upset_table


@pytest.fixture(scope="module")
def digits_rf():
    X, y = load_digits(return_X_y=True)
    rf = RandomForestClassifier(6, max_depth=4, random_state=0).fit(X[:1200], y[:1200])
    return export_forest(rf).device, X[1200:1260], y[1200:1260]


@pytest.fixture(scope="module")
def iris_binary_class():
    """Two classes and class leaves: the trees' outputs are bits."""
    X, y = load_iris(return_X_y=True)
    yb = np.where(y == 2, "virginica", "other")
    et = ExtraTreesClassifier(7, max_depth=3, random_state=0).fit(X[::2], yb[::2])
    dev = export_forest(et, leaf="class").device
    return dev, X[1::2], (yb[1::2] == "virginica").astype(np.int64)


def test_the_contract(digits_rf, iris_binary_class):
    for dev, X, _ in (digits_rf, iris_binary_class):
        again = firmware_sim.load(dev.container.tobytes())
        frames = again.encode(X)
        assert frames.dtype == np.int16 and frames.shape == (len(X), again.frame_width)
        inf = again.infer(frames)
        assert inf.labels.dtype == np.int64 and set(inf.decision) == {"leaves", "votes"}
        np.testing.assert_array_equal(again.finish(again.stage(frames)), inf.labels)
        np.testing.assert_array_equal(again.labels(frames), inf.labels)
        np.testing.assert_array_equal(np.argmax(inf.decision["votes"], axis=1), inf.labels)
        np.testing.assert_array_equal(again.frames_from_wire(again.wire_bits(frames)), frames)
        labels, rows = again.decision_rows(frames)
        assert rows.shape == (len(X), again.n_trees + again.n_classes)
        assert [w for _, w in again.decision_layout()] == [again.n_trees, again.n_classes]
        with pytest.raises(FrameError, match="int16 fixed-point features"):
            again.infer(np.asarray(X, np.float64))
        with pytest.raises(FrameError, match="shape"):
            again.infer(frames[:, :-1])
        with pytest.raises(FrameError, match="leaf ids"):
            again.finish(np.full((2, again.n_trees), again.n_leaves))
    dev, _, _ = iris_binary_class
    assert dev.stage_symbols == 2 and dev.default_site == "intermediate"


# ---------------------------------------------------------------- the wire
def test_wire_faults_hit_the_int16_features(digits_rf):
    dev, X, _ = digits_rf
    trials = 150
    res = firmware_sim.simulate(dev, X, 0.02, trials, random_state=3, site="wire")
    frames = dev.encode(X)
    clean = naive.device_infer(dev.container, frames)[0]
    rng = np.random.default_rng(7)
    same = []
    for _ in range(trials // 3):
        words = frames.view(np.uint16).copy()
        flips = rng.random((words.shape[0], words.shape[1], 16)) < 0.02
        words ^= (flips * (1 << np.arange(16))).sum(axis=2).astype(np.uint16)
        same.append(np.mean(naive.device_infer(dev.container, words.view(np.int16))[0] == clean))
    ref = float(np.mean(same))
    n = res.same.size * trials
    lo, hi = wilson_interval(res.mean_same_rate * n, n, 0.999)
    assert 0.0 < res.mean_same_rate < 1.0
    assert lo - 0.03 <= ref <= hi + 0.03, (res.mean_same_rate, ref)


# ---------------------------------------------------------------- the tree outputs
def test_noisy_tree_outputs_equal_a_hand_made_noisy_vote(digits_rf):
    """An event replaces a tree's leaf by one of the other L - 1 leaves, uniformly."""
    dev, X, y = digits_rf
    eps, trials = 0.2, 120
    res = firmware_sim.simulate(dev, X, eps, trials, random_state=0, y=y)
    assert res.eps_bits.shape == (dev.n_trees,)
    leaves = dev.stage(dev.encode(X)).astype(np.int64)
    clean = dev.finish(leaves)
    rng = np.random.default_rng(11)
    same = []
    for _ in range(trials // 2):
        hit = rng.random(leaves.shape) < eps
        other = (leaves + rng.integers(1, dev.n_leaves, leaves.shape)) % dev.n_leaves
        noisy = np.where(hit, other, leaves)
        labels = np.array([_vote(dev, row) for row in noisy])
        same.append(np.mean(labels == clean))
    ref = float(np.mean(same))
    n = res.same.size * trials
    lo, hi = wilson_interval(res.mean_same_rate * n, n, 0.999)
    assert lo - 0.03 <= ref <= hi + 0.03, (res.mean_same_rate, ref)
    assert res.accuracy < float(np.mean(clean == y)) + 0.02


def _vote(dev, leaves_row):
    """The vote by hand from the container's leaf table."""
    a = dev.container.arrays
    C = dev.n_classes
    votes = np.zeros(C, np.int64)
    for lf in leaves_row:
        if "leaf_value" in a:
            votes += a["leaf_value"][lf].astype(np.int64)
        else:
            votes[lf] += 1
    return int(np.argmax(votes))


def test_binary_tree_outputs_are_bits(iris_binary_class):
    dev, X, y = iris_binary_class
    res = run_campaign(dev, X, BSC(0.0), "eps", [0.0, 0.1, 0.5], 200, random_state=2, y=y)
    rates = [p.same_rate for p in res.points]
    assert rates[0] == 1.0 and rates[0] > rates[1] > rates[2]
    burst = run_campaign(dev, X, GilbertElliott.from_flip_rate(0.1, 3.0), n_trials=100,
                         random_state=0)
    assert 0.0 < burst.points[0].same_rate < 1.0
    # stuck lines on bits are defined for binary outputs ...
    stuck = run_campaign(dev, X, StuckAt(stuck1=[0, 1, 2, 3, 4, 5, 6]), n_trials=5,
                         random_state=0)
    assert stuck.points[0].same_rate < 1.0


def test_stuck_lines_have_no_meaning_on_leaf_ids(digits_rf):
    dev, X, _ = digits_rf
    with pytest.raises(ValueError, match="only additive bit faults"):
        run_campaign(dev, X, StuckAt(stuck1=[0]), n_trials=5, random_state=0)
    # at the wire they are bits of the frames: the sign bit of the first root's feature
    f = int(dev.container.arrays["node_feature"][0])
    res = run_campaign(dev, X, StuckAt(stuck1=[16 * f + 15]), n_trials=5, random_state=0,
                       site="wire")
    assert res.points[0].same_rate < 1.0


def test_threads_do_not_change_the_counts(digits_rf):
    dev, X, y = digits_rf
    a = run_campaign(dev, X, BSC(0.1), n_trials=300, random_state=5, n_jobs=1, y=y)
    b = run_campaign(dev, X, BSC(0.1), n_trials=300, random_state=5, n_jobs=2, y=y)
    assert a.points[0].same_per_point == b.points[0].same_per_point
    s1 = dev.simulate(X, 0.05, 100, random_state=1, site="wire", n_jobs=1)
    s2 = dev.simulate(X, 0.05, 100, random_state=1, site="wire", n_jobs=2)
    assert np.array_equal(s1.same, s2.same)


def test_simulate_is_a_campaign_with_a_bsc(digits_rf):
    """One engine, one BSC sampler (issue 25): ``simulate`` counts what a one-value
    ``run_campaign(.., BSC(eps))`` counts when seeded with its grid value's seed."""
    dev, X, y = digits_rf
    y = np.asarray(y, np.int64)
    camp = run_campaign(dev, X, BSC(0.1), n_trials=40, random_state=4, y=y)
    sim = firmware_sim.simulate(dev, X, 0.1, 40,
                                random_state=np.random.SeedSequence(4).spawn(1)[0], y=y)
    assert camp.site == "intermediate" and 0 < camp.points[0].same_rate < 1
    assert sim.same.tolist() == camp.points[0].same_per_point
    assert sim.accuracy == camp.points[0].accuracy


# ---------------------------------------------------------------- the closed form
def _brute_radius(dev, leaves):
    """Every leaf vector of the forest: the radius is one less than the nearest
    (in trees changed) whose vote changes the label."""
    import itertools

    every = np.array(list(itertools.product(range(dev.n_leaves), repeat=dev.n_trees)))
    labels = dev.vote(every)[0]
    out = []
    for row in np.asarray(leaves):
        clean = dev.vote(row[None])[0][0]
        changed = (every != row).sum(axis=1)[labels != clean]
        out.append(dev.n_trees if changed.size == 0 else int(changed.min()) - 1)
    return out


@pytest.mark.parametrize("leaf", ["class", "proba"])
def test_the_radius_equals_a_brute_force_search(leaf):
    from export.kinds.forest import forest_radius

    X, y = load_iris(return_X_y=True)
    trees = 5 if leaf == "class" else 3
    rf = RandomForestClassifier(trees, max_depth=2, random_state=1).fit(X[::3], y[::3])
    dev = export_forest(rf, leaf=leaf, leaf_bits=8).device
    assert dev.n_leaves ** dev.n_trees <= 50_000
    leaves = dev.stage(dev.encode(X[::2]))
    rng = np.random.default_rng(0)
    noisy = rng.integers(0, dev.n_leaves, (40, dev.n_trees))   # close calls too
    for rows in (leaves, noisy):
        assert forest_radius(dev, rows).tolist() == _brute_radius(dev, rows)


def test_the_lower_bound_holds_for_tree_output_noise(digits_rf):
    from export.analytics import add_analytic

    dev, X, y = digits_rf
    res = run_campaign(dev, X, BSC(0.02), param="eps", grid=[0.02, 0.1], n_trials=200,
                       random_state=2, y=y)
    add_analytic(res, dev, X, BSC(0.02), y=y, param="eps")
    assert res.notes["lower_bound_respected"] == [True, True]
    for p in res.points:
        assert not p.analytic["available"] and 0 < p.analytic["same_rate_lower_bound"] <= 1
    wire = run_campaign(dev, X, BSC(0.01), n_trials=5, random_state=2, site="wire")
    add_analytic(wire, dev, X, BSC(0.01))
    assert "on the wire" in wire.points[0].analytic["reason"]


# ---------------------------------------------------------------- the image
def _flip_bit_image(container, array, bit):
    """The arrays of the image with one bit flipped (test_device_contract's helper)."""
    from test_device_contract import _flip_bit_image as flipped
    return {k: np.asarray(v)
            for k, v in read_container(flipped(container, array, bit)).arrays.items()}


@pytest.mark.parametrize("array, stride", [("node_threshold", 3), ("node_feature", 2),
                                           ("node_left", 1), ("node_right", 1),
                                           ("tree_root", 1), ("leaf_value", 17)])
def test_upset_table_equals_end_to_end_runs_of_each_faulty_image(digits_rf, array, stride):
    dev, X, _ = digits_rf
    tab = single_upset_table(dev, X, arrays=[array], max_bits=1 << 15)
    frames = dev.encode(X)
    clean = naive.device_infer(dev.container, frames)[0]
    for bit in range(0, tab.n_bits, stride):
        a = _flip_bit_image(dev.container, array, bit)
        if not naive.layout_ok(a):
            assert tab.refused[bit], (array, bit)
            continue
        assert not tab.refused[bit], (array, bit)
        labels = naive.device_infer(a, frames)[0]
        assert tab.same[bit] == int((labels == clean).sum()), (array, bit)
    if array in ("tree_root", "node_left"):
        assert tab.refused.mean() > 0.5            # the strict layout catches most upsets


def test_one_upset_campaign_equals_the_tables_prediction(digits_rf):
    dev, X, y = digits_rf
    arrays = ["node_threshold", "node_feature"]
    tab = single_upset_table(dev, X, arrays=arrays, y=y)
    fault = ParameterUpset(count=1, arrays=arrays)
    pred = tab.predict(fault)
    res = run_campaign(dev, X, fault, n_trials=400, random_state=3, y=y)
    p = res.points[0]
    assert pred["available"] and p.same_ci[0] <= pred["same_rate"] <= p.same_ci[1]


def test_composed_image_and_bit_faults_at_both_sites(digits_rf):
    dev, X, _ = digits_rf
    f = Compose([ParameterUpset(count=2, arrays=["node_threshold"]), BSC(0.05)])
    for site in ("wire", "intermediate"):
        res = run_campaign(dev, X, f, n_trials=30, random_state=1, site=site)
        assert res.site == site and 0.0 < res.points[0].same_rate < 1.0


def test_checked_upsets_are_all_refused(digits_rf):
    dev, X, _ = digits_rf
    res = run_campaign(dev, X, ParameterUpset(count=1, checked=True), n_trials=20,
                       random_state=0)
    assert res.points[0].refused == 20
    rebuilt = write_container(None, "forest", dict(dev.container.arrays), dev.container.meta)
    assert rebuilt == dev.container.tobytes()
