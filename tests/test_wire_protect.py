"""Wire protection of int16 features (issue 27 items 1, 3, 4): the device layer
(``firmware_sim.wire``), the planner (``export.protect_wire``), ``protect`` and
``edgecode protect``, checked against slow references (brute force over every
error pattern, naive loops, Monte Carlo with 99% bounds) and the C runtime."""

import itertools
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

import firmware_sim  # noqa: E402
from edgecode.ecoc import ECOCClassifier  # noqa: E402
from export.ecoc import export_ecoc  # noqa: E402
from export.protect import protect  # noqa: E402
from export.protect_wire import (check_wire, plan_wire, predict_wire,  # noqa: E402
                                 single_flip_changes)
from firmware_sim.artifact import write_container  # noqa: E402
from firmware_sim.errors import ContainerError, DeviceError, FrameError  # noqa: E402
from firmware_sim.faults import BSC, Interleave, StuckAt  # noqa: E402
from firmware_sim.kinds.ecoc import make_ecoc_arrays  # noqa: E402
from firmware_sim.wire import (WIRE_COPIES, WireProtectedDevice, failure_probability,  # noqa: E402
                               with_wire_copies)


def _table(name):
    import csv
    with open(HERE / "data" / name, newline="") as fh:
        rows = list(csv.reader(fh))
    ci = rows[0].index("class")
    X = np.array([[float(v) for j, v in enumerate(r) if j != ci] for r in rows[1:]])
    return X, np.array([r[ci] for r in rows[1:]])


_CACHE = {}


def _glass_linear():
    """A linear ECOC of glass (labels 1, 2, 3, 5, 6, 7: non-contiguous integers)."""
    if "glass" not in _CACHE:
        X, y = _table("glass.csv")
        y = y.astype(np.int64)
        code = np.random.default_rng(0).integers(0, 2, (6, 10))
        clf = make_pipeline(StandardScaler(), ECOCClassifier(LogisticRegression(max_iter=500),
                                                             code=code)).fit(X, y)
        _CACHE["glass"] = (export_ecoc(clf, X).device, X, y)
    return _CACHE["glass"]


def _ecoli_tree():
    """A tree ECOC of ecoli (string labels)."""
    if "ecoli" not in _CACHE:
        X, y = _table("ecoli.csv")
        clf = ECOCClassifier(DecisionTreeClassifier(max_depth=3, random_state=0),
                             code="one_vs_all").fit(X, y)
        _CACHE["ecoli"] = (export_ecoc(clf, X).device, X, y)
    return _CACHE["ecoli"]


def _tiny(weights=((3,), (-2,)), bias=(0, 5), shift=0):
    """A one-feature linear ECOC (2 learners, 3 classes) small enough to enumerate."""
    w = np.array(weights, np.int64).T          # (1, 2)
    arrays = make_ecoc_arrays([[0, 0], [1, 0], [1, 1]], [0, 1, 0, 1], [2, 2], [0.0], [shift],
                              linear=dict(weights=w, bias=np.array(bias), n_out=[1, 1]))
    return firmware_sim.load(write_container(None, "ecoc", arrays))


def _forest_and_ssbc():
    """A forest of glass and an SSBC k-NN table of glass: the other int16 kinds."""
    if "others" not in _CACHE:
        from sklearn.ensemble import RandomForestClassifier

        from edgecode.hashing import SSBC
        from export.forest import export_forest
        from export.ssbc import export_ssbc
        X, y = _table("glass.csv")
        rf = RandomForestClassifier(5, max_depth=4, random_state=0).fit(X, y.astype(np.int64))
        h = SSBC(12, 24, 16, center=True, random_state=0).fit(X)
        _CACHE["others"] = [(export_forest(rf).device, X, y),
                            (firmware_sim.load(export_ssbc(h, X_table=X[::3], y_table=y[::3],
                                                           knn_k=3).container), X, y)]
    return _CACHE["others"]


# ---------------------------------------------------------------- the device layer
def test_majority_decoding_equals_a_naive_loop():
    rng = np.random.default_rng(0)
    base = _tiny()
    for _ in range(5):
        copies = rng.choice([1, 3, 5, 7], size=(1, 16))
        dev = firmware_sim.load(with_wire_copies(base, copies))
        assert isinstance(dev, WireProtectedDevice) and dev.total_bits == copies.sum()
        bits = rng.integers(0, 2, (40, dev.total_bits)).astype(np.uint8)
        got = dev.decode(bits)
        for t in range(len(bits)):
            pos, v = 0, 0
            for b in range(16):
                c = int(copies[0, b])
                if sum(bits[t, pos:pos + c]) * 2 > c:
                    v |= 1 << b
                pos += c
            assert got[t, 0] == (v - 65536 if v >= 32768 else v)
        X = rng.normal(0, 3000, (30, 1))
        assert np.array_equal(dev.decode(dev.encode(X)), base.encode(X))
        assert np.array_equal(dev.infer(bits).labels, base.infer(got).labels)
        assert np.array_equal(dev.labels(dev.encode(X)), base.labels(base.encode(X)))


def test_layer_over_real_kinds_keeps_clean_labels_and_hooks():
    for dev0, X, _ in [_glass_linear(), _ecoli_tree()] + _forest_and_ssbc():
        copies = np.where(np.arange(16) >= 12, 5, 1) * np.ones((dev0.frame_width, 1), np.int64)
        dev = firmware_sim.load(with_wire_copies(dev0, copies))
        assert dev.kind == dev0.kind and dev.default_site == "wire"
        assert np.array_equal(dev.labels(dev.encode(X)), dev0.labels(dev0.encode(X)))
        assert dev.decision_layout() == dev0.decision_layout()
        assert dev.workspace_bytes() >= dev0.workspace_bytes() + 2 * dev0.frame_width
        assert dev.container.class_names == dev0.container.class_names
        assert dev.n_classes == dev0.n_classes      # the kind's attributes, through the layer
        order = dev.wire_order()
        assert np.array_equal(np.sort(order), np.arange(dev.total_bits))
        # a stuck wire bit seen through the interleaver hits the position order[k]
        f = Interleave(StuckAt(stuck1=[0]), order)
        bits = f.apply(np.zeros((1, dev.total_bits), np.uint8))
        assert np.flatnonzero(bits[0]).tolist() == [int(order[0])]


def test_loader_rejects_inconsistent_wire_copies():
    base = _tiny()
    arrays = dict(base.container.arrays)
    good = np.ones((1, 16), np.uint8)
    for bad, what in ((np.ones((2, 16), np.uint8), "shape"), (np.ones((1, 15), np.uint8), "shape"),
                      (np.full((1, 16), 2, np.uint8), "odd"), (np.zeros((1, 16), np.uint8), "odd"),
                      (np.ones((1, 16), np.uint16), "dtype"), (np.ones(16, np.uint8), "shape")):
        raw = write_container(None, "ecoc", {**arrays, WIRE_COPIES: bad})
        with pytest.raises(ContainerError, match=what):
            firmware_sim.load(raw)
    firmware_sim.load(write_container(None, "ecoc", {**arrays, WIRE_COPIES: good}))
    # a bit-frame kind has its own repetition: the layer refuses it
    nb = firmware_sim.ProtectedNBDevice.from_arrays([2, -1], 0, [0, 0])
    raw = write_container(None, "protected_nb", {**nb.container.arrays, WIRE_COPIES: good[:, :16]
                                                 .repeat(2, axis=0)})
    with pytest.raises(ContainerError, match="int16 features"):
        firmware_sim.load(raw)
    with pytest.raises(ContainerError, match="reserved"):
        write_container(None, "ecoc", {**arrays, "__other__": good})
    with pytest.raises(DeviceError, match="odd"):
        with_wire_copies(base, np.full((1, 16), 4))
    dev = firmware_sim.load(with_wire_copies(base, good))
    with pytest.raises(FrameError):
        dev.infer(np.full((1, 16), 2))


def test_failure_probability_is_the_binomial_tail_by_enumeration():
    for c in (1, 3, 5, 7):
        for eps in (0.01, 0.2, 0.49):
            brute = sum(eps ** sum(e) * (1 - eps) ** (c - sum(e))
                        for e in itertools.product((0, 1), repeat=c) if 2 * sum(e) > c)
            assert failure_probability(c, eps) == pytest.approx(brute, rel=1e-12)


# ---------------------------------------------------------------- the planner
def test_single_flip_changes_equals_a_naive_loop():
    dev, X, _ = _glass_linear()
    X = X[::7]
    got = single_flip_changes(dev, X)
    q = dev.encode(X)
    clean = dev.labels(q)
    for f in range(q.shape[1]):
        for b in range(16):
            flipped = (q.view(np.uint16) ^ np.uint16(1 << b)).view(np.int16).copy()
            flipped[:, np.arange(q.shape[1]) != f] = q[:, np.arange(q.shape[1]) != f]
            assert np.array_equal(got[:, f, b], dev.labels(flipped) != clean)


def test_greedy_allocation_is_optimal_for_its_objective():
    """Exhaustive search over every allocation of the budget on small cases."""
    rng = np.random.default_rng(3)
    for trial in range(6):
        s = np.zeros((1, 16))
        live = rng.choice(16, 3, replace=False)
        s[0, live] = rng.random(3)
        budget = int(rng.integers(1, 7)) * 2
        eps = [0.01, 0.1, 0.3][trial % 3]
        plan = plan_wire(s, eps, budget)

        def cost(c):
            return float((s[0, live] * failure_probability(np.asarray(c), eps)).sum())
        best = min(cost([1 + 2 * u for u in units])
                   for units in itertools.product(range(budget // 2 + 1), repeat=3)
                   if sum(units) <= budget // 2)
        assert cost(plan.copies[0, live]) == pytest.approx(best, rel=1e-9, abs=1e-15)
        assert plan.extra_bits <= budget


def test_plan_schemes_and_errors():
    s = np.full((2, 16), 0.1)
    assert (plan_wire(s, 0.01, 64, "uniform").copies == 3).all()
    assert (plan_wire(s, 0.01, 63, "uniform").copies == 1).all()
    assert (plan_wire(s, 0.01, 0, "none").copies == 1).all()
    assert (plan_wire(s, 0.01, 64, "tmr").copies == 3).all()
    with pytest.raises(ValueError, match="tmr"):
        plan_wire(s, 0.01, 10, "tmr")
    with pytest.raises(ValueError, match="stored"):
        plan_wire(s, 0.01, 10, "secded")
    with pytest.raises(ValueError, match="eps"):
        plan_wire(s, 0.5, 10)
    with pytest.raises(ValueError, match="budget_bits"):
        plan_wire(s, 0.1, -2)
    with pytest.raises(ValueError, match="shape"):
        plan_wire(np.zeros((2, 8)), 0.1, 2)


@pytest.mark.parametrize("x, copies", [(5.0, (1,) * 15 + (3,)), (-700.0, (1,) * 12 + (3,) * 4)])
def test_prediction_against_brute_force_over_every_error_pattern(x, copies):
    """Exact label-change probability by enumerating all 2^16 decoded error patterns;
    the bounded prediction holds it, the simulated one and the campaign agree."""
    dev = _tiny()
    X = np.array([[x], [-x / 2], [x * 3]])
    copies = np.array(copies).reshape(1, 16)
    q = dev.encode(X)
    clean = dev.labels(q)
    for eps in (0.01, 0.05):
        p = failure_probability(copies[0], eps)
        pats = np.array(list(itertools.product((0, 1), repeat=16)), np.uint8)   # (65536, 16)
        prob = np.prod(np.where(pats == 1, p, 1 - p), axis=1)
        masks = (pats.astype(np.uint32) << np.arange(16)).sum(axis=1).astype(np.uint16)
        exact = 0.0
        for t in range(len(X)):
            noisy = (q[t].view(np.uint16) ^ masks).view(np.int16).reshape(-1, 1)
            exact += prob[dev.labels(noisy) != clean[t]].sum() / len(X)
        from export.kinds.ecoc import wire_bound_linear
        kb = wire_bound_linear(dev, X, copies, eps)       # the linear kind's certified bound
        assert kb[0] - 1e-12 <= exact <= kb[1] + 1e-12
        kb2 = wire_bound_linear(dev, X, copies, eps, gamma=0.9, max_open=0, max_triple=0)
        assert kb2[0] - 1e-12 <= exact <= kb2[1] + 1e-12
        pr = predict_wire(dev, X, copies, eps, n_trials=4000, random_state=1, tol=1.0)
        assert pr["method"] == "bounded"
        lo, hi = pr["first_order"]
        assert lo - 1e-12 <= exact <= hi + 1e-12
        sim = predict_wire(dev, X, copies, eps, n_trials=4000, random_state=2, tol=-1.0,
                           rel_tol=-1.0)
        assert sim["method"] == "simulated" and sim["lower"] <= exact <= sim["upper"]
        prot = firmware_sim.load(with_wire_copies(dev, copies))
        chk = check_wire(prot, X, BSC(eps), n_trials=4000, random_state=3)
        assert chk["ci"][0] <= exact <= chk["ci"][1]


# ---------------------------------------------------------------- protect()
def test_protect_glass_planned_beats_uniform_and_none_predictions_inside():
    dev, X, y = _glass_linear()
    base = 16 * dev.frame_width
    rates = {}
    for scheme in ("none", "uniform", "auto"):
        r = protect(dev.container, (X[::2], None), eps=0.01, max_overhead=2.0, scheme=scheme,
                    n_trials=500, random_state=0)
        d = r.details
        assert d["simulated"]["inside"], (scheme, d["predicted_label_change"], d["simulated"])
        assert r.label_mismatches == 0
        assert d["wire_bits"] <= 3 * base
        rates[scheme] = d["simulated"]["simulated_label_change"]
        if scheme != "none":
            assert d["allocation"]["extra_bits"] <= 2 * base
        if scheme != "none":
            lo, hi = d["prediction"]["kind_bound"]    # the linear kind's certified bound
            assert lo <= d["simulated"]["ci"][1] and d["simulated"]["ci"][0] <= hi
    assert rates["auto"] <= rates["uniform"] / 2 < rates["none"]


def test_protect_string_labels_tree_kind_and_outputs(tmp_path):
    dev, X, y = _ecoli_tree()
    out, js = tmp_path / "p.edgc", tmp_path / "p.json"
    r = protect(dev.container, (X[::3], None), eps=0.02, budget_bits=40, out=out,
                json_path=js, n_trials=100)
    rep = json.loads(js.read_text())
    assert rep["predicted_label_change"] == r.details["predicted_label_change"]
    assert rep["allocation"]["extra_bits"] <= 40 and rep["simulated"]["inside"]
    dev2 = firmware_sim.load(out.read_bytes())
    assert dev2.container.class_names == dev.container.class_names
    assert np.array_equal(dev2.labels(dev2.encode(X)), dev.labels(dev.encode(X)))
    # re-planning a protected artifact starts from its kind
    r2 = protect(out, (X[::3], None), eps=0.02, scheme="none", n_trials=20)
    assert r2.details["wire_bits"] == 16 * dev.frame_width


def test_protect_forest_and_ssbc_kinds():
    for dev, X, _ in _forest_and_ssbc():
        r = protect(dev.container, (X[::4], None), eps=0.01, max_overhead=1.0, n_trials=100)
        d = r.details
        assert d["kind"] == dev.kind and d["simulated"]["inside"] and r.label_mismatches == 0
        assert d["allocation"]["extra_bits"] <= 16 * dev.frame_width


def test_protect_burst_is_simulated_and_interleaved():
    dev, X, _ = _glass_linear()
    r = protect(dev.container, (X[::4], None), eps=0.01, fault="burst", max_overhead=2,
                n_trials=60)
    d = r.details
    assert d["method"] == "simulated" and d["interleaved"] and d["simulated"]["inside"]
    assert d["fault"]["model"] == "interleave"


def test_protect_bad_inputs():
    dev, X, _ = _glass_linear()
    c = dev.container
    for kw, msg in ((dict(eps=0.7), "eps"), (dict(eps=0.01), "budget"),
                    (dict(eps=0.01, scheme="secded", budget_bits=8), "stored image"),
                    (dict(eps=0.01, fault="seu", budget_bits=8), "seu"),
                    (dict(eps=0.01, site="radio"), "site"),
                    (dict(eps=0.01, scheme="best"), "scheme"),
                    (dict(eps=0.01, budget_bits=-1), "budget_bits"),
                    (dict(eps=0.01, max_overhead=-1.0), "max_overhead")):
        with pytest.raises(ValueError, match=msg):
            protect(c, (X, None), n_trials=5, **kw)
    with pytest.raises(ValueError, match="features"):
        protect(c, (X[:, :3], None), eps=0.01, budget_bits=8, n_trials=5)
    nb = firmware_sim.ProtectedNBDevice.from_arrays([2, -1], 0, [0, 0])
    with pytest.raises(ValueError, match="int16"):
        protect(nb.container, (np.zeros((2, 2)), None), eps=0.01, budget_bits=8)
    import importlib.util
    if importlib.util.find_spec("export.protect_image") is None:
        with pytest.raises(ValueError, match="not available in this build"):
            protect(c, (X, None), eps=0.01, site="image")


def test_cli_protect(tmp_path, capsys):
    from export.cli import main
    dev, X, _ = _glass_linear()
    art = tmp_path / "g.edgc"
    art.write_bytes(dev.container.tobytes())
    out, js = tmp_path / "gp.edgc", tmp_path / "gp.json"
    assert main(["protect", str(art), "--data", str(HERE / "data" / "glass.csv"), "--eps", "0.01",
                 "--max-overhead", "2", "--trials", "50", "--out", str(out), "--json", str(js),
                 "--quiet"]) == 0
    text = capsys.readouterr().out
    assert "predicted label-change rate" in text and "prediction inside:" in text
    assert json.loads(js.read_text())["method"] in ("bounded", "simulated")
    assert main(["protect", str(art), "--data", str(HERE / "data" / "glass.csv"), "--eps", "0.6",
                 "--out", str(out)]) == 2
    assert "error: --eps" in capsys.readouterr().err
    assert main(["protect", str(art), "--data", str(HERE / "data" / "glass.csv"), "--eps", "0.01",
                 "--scheme", "parity", "--budget-bits", "8", "--out", str(out)]) == 2
    assert "error:" in capsys.readouterr().err


# ---------------------------------------------------------------- the C runtime
def test_c_runtime_decodes_the_wire_bit_for_bit(tmp_path):
    from toolchains import need_toolchain
    from export.firmware import build_firmware, check_images, run_firmware, write_firmware
    need_toolchain("host")
    dev0, X, _ = _glass_linear()
    rng = np.random.default_rng(5)
    copies = rng.choice([1, 3, 5], size=(dev0.frame_width, 16))
    dev = firmware_sim.load(with_wire_copies(dev0, copies))
    write_firmware(dev.container, tmp_path, "host")
    build_firmware(tmp_path, "host", opt="-O0", sanitize=True, probe=False)
    clean = dev.encode(X[:60])
    noisy = clean ^ (rng.random(clean.shape) < 0.1)
    frames = np.vstack([clean, noisy, rng.integers(0, 2, (40, dev.total_bits))]).astype(np.int64)
    labels, dec = run_firmware(tmp_path, frames, "host")
    ref_l, ref_d = dev.decision_rows(frames.astype(np.uint8))
    assert np.array_equal(labels, ref_l) and np.array_equal(dec, ref_d)
    # the C loader's verdicts on wire layers equal the Python loader's
    arrays = dict(dev0.container.arrays)
    images = [with_wire_copies(dev0, copies)]
    for bad in (np.full((dev0.frame_width, 16), 2, np.uint8), np.ones((1, 16), np.uint8),
                np.ones((dev0.frame_width, 16), np.uint16)):
        images.append(write_container(None, "ecoc", {**arrays, WIRE_COPIES: bad}))
    verdicts = check_images(tmp_path / "runner", images)
    assert [v[0] for v in verdicts] == [True, False, False, False]


@pytest.mark.parametrize("target", ["cortex-m4", "atmega328p"])
def test_c_runtime_on_targets_equals_firmware_sim(target, tmp_path):
    """One run per target: QEMU Cortex-M4, simavr ATmega328P."""
    from toolchains import need_toolchain
    from export.firmware import build_firmware, run_firmware, write_firmware
    need_toolchain(target, run=True)
    dev0, X, _ = _glass_linear()
    rng = np.random.default_rng(7)
    copies = rng.choice([1, 3, 5], size=(dev0.frame_width, 16))
    dev = firmware_sim.load(with_wire_copies(dev0, copies))
    write_firmware(dev.container, tmp_path, target)
    build_firmware(tmp_path, target, probe=False)
    clean = dev.encode(X[:6])
    frames = np.vstack([clean, clean ^ (rng.random(clean.shape) < 0.1)]).astype(np.int64)
    labels, dec = run_firmware(tmp_path, frames, target)
    ref_l, ref_d = dev.decision_rows(frames.astype(np.uint8))
    assert np.array_equal(labels, ref_l) and np.array_equal(dec, ref_d)
