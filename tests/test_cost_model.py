"""The calibrated cost model against exact cycles (issue 26 item 4).

``firmware_sim.profiles.estimate(profile, device, frames=...)`` prices the
counts of ``device.cost_counts(frames)`` with the profile's stored prices
(``firmware_sim/profile_prices.json``, fitted by
``benchmarks/calibrate_profiles.py`` on its own models). Here models of every
cost family that the calibration did NOT see (other sizes, seeds and
features) are built for the AVR targets and run under simavr: the estimate
of every frame, and of the open, must be within 10% of the exact cycles.
The counts themselves are checked against a slow reference (a plain Python
walk of the trees, the k-NN insertion by brute force). Outside CI a missing
toolchain skips; with ``EDGECODE_CI`` set it fails.
"""

import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import calibrate_profiles as cal  # noqa: E402

from export.firmware import toolchain_missing  # noqa: E402
from firmware_sim.profiles import BUILTIN_PROFILES, estimate, get_profile  # noqa: E402

CI = bool(os.environ.get("EDGECODE_CI"))

#: Held-out models, one or two per cost family (none is in cal.CALIBRATION).
HELD_OUT = cal.HELD_OUT
TARGETS = ("atmega328p", "atmega2560")


def _need(target):
    why = toolchain_missing(target, run=True)
    if why:
        if CI:
            pytest.fail(f"CI must have the {target} toolchain: {why}")
        pytest.skip(f"{target} toolchain: {why}")


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    """{(model, target): (device, frames, open_cycles, infer_cycles)}."""
    root = tmp_path_factory.mktemp("cost")
    models = {name: make() for name, make in HELD_OUT.items()}
    pairs = [(m, t) for t in TARGETS if toolchain_missing(t, run=True) is None
             for m in HELD_OUT]

    def one(pair):
        m, t = pair
        dev, X = models[m]
        fr = cal.frames_for(dev, X, n_rows=5, n_random=2, seed=99)
        o, inf = cal.measure(dev, fr, t, root / f"{m}-{t}")
        return pair, (dev, fr, o, inf)

    with ThreadPoolExecutor(2) as ex:
        return dict(ex.map(one, pairs))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", sorted(HELD_OUT))
def test_estimate_within_10_percent_of_exact_avr_cycles(name, target, measured):
    _need(target)
    dev, frames, open_cycles, infer_cycles = measured[(name, target)]
    e = estimate(target, dev, frames=frames)
    assert e["method"] == "calibrated", e
    est = np.asarray(e["cycles_per_frame"])
    rel = np.abs(est - infer_cycles) / infer_cycles
    assert rel.max() <= 0.10, (name, target, est.tolist(), infer_cycles.tolist())
    assert abs(e["cycles"] - infer_cycles.mean()) <= 0.10 * infer_cycles.mean()
    assert abs(e["open_cycles"] - open_cycles) <= 0.10 * open_cycles, \
        (name, target, e["open_cycles"], open_cycles)
    # without frames: the worst case of the data-dependent counts bounds the frames
    worst = estimate(target, dev)["cycles"]
    assert worst >= 0.9 * infer_cycles.max()


def test_energy_is_cycles_times_the_datasheet_power():
    p = get_profile("atmega328p")
    assert (p.supply_v, p.active_current_a, p.clock_hz) == (5.0, 10.4e-3, 16e6)
    dev, X = cal._nb(8, 8, 3)
    e = estimate(p, dev, frames=dev.encode(X[:3]))
    assert e["energy_pj"] == pytest.approx(e["cycles"] / 16e6 * 5.0 * 10.4e-3 * 1e12)
    assert e["open_energy_pj"] == pytest.approx(e["open_cycles"] * 5.0 * 10.4e-3 / 16e6 * 1e12)
    assert "8161D" in p.source and "DC Characteristics" in p.source


def test_every_avr_and_rv32_profile_prices_every_family():
    for name in ("atmega328p", "atmega2560"):
        prices = BUILTIN_PROFILES[name].prices
        assert prices is not None and set(prices) >= {"protected_nb", "ecoc_linear",
                                                      "ecoc_trees", "ssbc", "forest"}, name
    # a resources() report (no device) keeps the operation-class estimate
    dev, _ = cal._nb(6, 0, 1)
    assert estimate("atmega328p", dev.resources())["method"] == "operation classes"
    with pytest.raises(ValueError, match="frames need a device"):
        estimate("atmega328p", dev.resources(), frames=np.zeros((1, 6), np.uint8))


def _walk_visits(dev, q):
    """Slow reference: nodes visited per frame, one tree and one frame at a time, on
    the compact node format both tree kinds share (a reference below the leaf count
    is a leaf, else the next node is ``parent + 1 + (reference - leaves)``)."""
    if dev.container.kind == "forest":
        L, roots = dev.n_leaves, dev._root
        feature, threshold, left, right = dev._feature, dev._threshold, dev._left, dev._right
    else:                                     # ECOC tree learners: leaves are symbols
        L, roots = dev.n_symbols, dev._root
        feature, threshold, left, right = dev._tf, dev._tt, dev._tl, dev._tr
    out = []
    for row in q:
        n = 0
        for r in roots.tolist():
            if r < L:
                continue
            node, depth = r - L, 0
            while True:
                n += 1
                depth += 1                    # a bad walk fails here, never loops
                assert depth <= feature.size, "the tree walk does not end"
                f = int(feature[node])
                nxt = int(left[node] if row[f] <= threshold[node] else right[node])
                if nxt < L:
                    break
                node += 1 + nxt - L
        out.append(n)
    return np.array(out, float)


@pytest.mark.parametrize("make", [lambda: cal._trees(5, 3, 4, 21),
                                  lambda: cal._forest(4, 5, "proba", 22)])
def test_node_visits_equal_a_slow_walk(make):
    dev, X = make()
    q = dev.encode(X[:20])
    got = dev.cost_counts(q)["infer"]["nodes_visited"]
    assert got.tolist() == _walk_visits(dev, q).tolist()
    assert got.max() <= dev.cost_counts()["infer"]["nodes_visited"]


def test_knn_insertions_equal_brute_force():
    dev, X = cal._ssbc(12, 16, 50, 32)
    q = dev.encode(X[:6])
    got = dev.cost_counts(q)["infer"]["insertions"]
    bits = dev.stage(q)
    table = dev.table_bits()
    K = dev.knn_k
    for i in range(len(q)):
        dist = (bits[i] != table).sum(axis=1)
        n, best = 0, []
        for t, dd in enumerate(dist):            # a row enters when it beats the K-th
            if len(best) < K or dd < sorted(best)[K - 1]:
                best = sorted(best + [dd])[:K]
                n += 1
        assert got[i] == n


# ------------------------------------------------------------------ Cortex-M traces
def test_trm_pricing_of_instructions_and_a_synthetic_trace():
    from export.cortex_cycles import CORTEX_M0PLUS_CYCLES as M0, CORTEX_M4_CYCLES as M4, \
        _price_log, instruction_cycles

    assert instruction_cycles("adds", "r0, r1", M4) == 1
    assert instruction_cycles("ldr.w", "r3, [r2, #4]", M4) == 2
    assert instruction_cycles("push", "{r4, r5, r6, lr}", M4) == 5          # 1 + N
    assert instruction_cycles("pop", "{r4, pc}", M4) == 1 + 2 + 2          # 1 + N + P
    assert instruction_cycles("bne.n", "#0x10", M4, taken=False) == 1
    assert instruction_cycles("bne.n", "#0x10", M4, taken=True) == 3
    assert instruction_cycles("bl", "#0x400", M0) == 3
    assert instruction_cycles("umull", "r0, r1, r2, r3", M4) == 1
    # a trace: mark (0x100), then a block of 2 ALU + a taken branch, run twice
    # (the second time the branch falls through); marks 2 and 3; the block; mark 4
    log = "\n".join([
        "IN: ec_trace_mark", "0x00000100:  4770       bx       lr",
        "IN: f", "0x00000200:  1c40       adds     r0, r0, #1",
        "0x00000202:  1c49       adds     r1, r1, #1",
        "0x00000204:  d1fc       bne.n    #0x200",
        "Trace 0: 0x1 [00000000/00000100/00000000/00000000] ec_trace_mark",
        "Trace 0: 0x2 [00000000/00000200/00000000/00000000] f",
        "Trace 0: 0x2 [00000000/00000200/00000000/00000000] f",
        "Trace 0: 0x3 [00000000/00000206/00000000/00000000] g",
        "Trace 0: 0x1 [00000000/00000100/00000000/00000000] ec_trace_mark",
        "Trace 0: 0x1 [00000000/00000100/00000000/00000000] ec_trace_mark",
        "Trace 0: 0x2 [00000000/00000200/00000000/00000000] f",
        "Trace 0: 0x1 [00000000/00000100/00000000/00000000] ec_trace_mark"])
    open_c, infer = _price_log(log, 0x100, M4, 1)
    assert open_c == (1 + 1 + 3) + (1 + 1 + 1)           # taken, then not taken
    assert infer.tolist() == [1 + 1 + 3]                 # next block 0x100 != 0x206: taken


def test_cortex_m4_estimate_within_10_percent_of_the_priced_trace(tmp_path):
    """The cortex-m4 prices were fitted to TRM-priced traces of the calibration
    models; a held-out forest is within 10% of its own priced trace."""
    from export.cortex_cycles import trace_cycles

    why = toolchain_missing("cortex-m4", run=True)
    if why:
        if CI:
            pytest.fail(f"CI must have the cortex-m4 toolchain: {why}")
        pytest.skip(why)
    dev, X = HELD_OUT["forest_proba"]()
    fr = cal.frames_for(dev, X, n_rows=3, n_random=1, seed=5)
    o, inf = trace_cycles(dev, fr, "cortex-m4", tmp_path)
    e = estimate("cortex-m4", dev, frames=fr)
    assert e["method"] == "calibrated"
    rel = np.abs(np.asarray(e["cycles_per_frame"]) - inf) / inf
    assert rel.max() <= 0.10 and abs(e["open_cycles"] - o) <= 0.10 * o
