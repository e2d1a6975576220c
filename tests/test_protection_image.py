"""Image protection (issue 27 items 2 and 4): the codes against brute force, the
loader's decoding and fallbacks, fuzzing of protected images, the planner and
its prediction against an independent campaign."""

import itertools
import sys
from pathlib import Path

import numpy as np
import pytest

import firmware_sim
from firmware_sim import ContainerError, load
from firmware_sim.artifact import read_container, write_container
from firmware_sim.engine.campaign import run_campaign
from firmware_sim.faults import ParameterUpset
from firmware_sim.protection import (
    _POS,
    _parity64,
    decode_arrays,
    plan_of,
    protect_container,
    protection_bytes,
    secded_decode,
    secded_encode,
)
from firmware_sim.sensitivity import single_upset_table

HERE = Path(__file__).resolve().parent


# ------------------------------------------------------------ the codes
def _codeword_bits(data, wb):
    """Independent construction: the Hamming codeword as a bit vector (positions
    1..n), then the overall parity; data bits at the non-power-of-two positions."""
    k = 8 * wb
    r = 1
    while 2 ** r < k + r + 1:
        r += 1
    n = k + r
    word = [0] * (n + 1)
    data_pos = [p for p in range(1, n + 1) if p & (p - 1)]
    for j, p in enumerate(data_pos):
        word[p] = (data >> j) & 1
    for i in range(r):
        word[1 << i] = sum(word[p] for p in range(1, n + 1) if p >> i & 1 and p != 1 << i) % 2
    word[0] = sum(word[1:]) % 2
    return word, data_pos, r


def _stored(word, r):
    """The stored check value of a codeword (r Hamming bits, then parity)."""
    return sum(word[1 << i] << i for i in range(r)) | (word[0] << r)


@pytest.mark.parametrize("wb", [1, 2, 4, 8])
def test_secded_check_bits_match_an_independent_construction(wb):
    rng = np.random.default_rng(wb)
    data = rng.integers(0, 2 ** min(63, 8 * wb), 200, dtype=np.int64).astype(np.uint64)
    if wb == 8:
        data |= rng.integers(0, 2, 200).astype(np.uint64) << np.uint64(63)
    got = secded_encode(data, wb)
    for d, c in zip(data.tolist(), got.tolist()):
        word, _, r = _codeword_bits(d, wb)
        assert c == _stored(word, r)


def test_secded_1_byte_against_nearest_codeword_decoding_of_every_received_word():
    """Brute force: every one of the 2^13 received (13,8) words, decoded by the
    nearest of the 256 codewords (distance 0 or 1: that codeword; 2: detected)."""
    wb, k = 1, 8
    r = _POS[8][1]
    codes = secded_encode(np.arange(256, dtype=np.uint64), wb)
    cw = (np.arange(256, dtype=np.int64) | (codes << k))          # 13-bit codewords
    rx = np.arange(1 << (k + r + 1), dtype=np.int64)
    dist = np.array([[bin(a ^ b).count("1") for b in cw.tolist()] for a in rx.tolist()])
    near = dist.min(axis=1)
    words, corrected, detected = secded_decode((rx & 0xFF).astype(np.uint64), rx >> k, wb)
    ok = near <= 1
    assert (words[ok].astype(np.int64) == dist[ok].argmin(axis=1)).all()
    assert (detected[near == 2]).all()
    assert not detected[ok].any()
    assert (corrected == (near == 1)).all()


@pytest.mark.parametrize("wb", [2, 4, 8])
def test_secded_corrects_every_single_and_detects_every_double_upset(wb):
    rng = np.random.default_rng(1)
    k = 8 * wb
    c = _POS[k][1] + 1
    data = rng.integers(0, 2 ** min(63, k), 3, dtype=np.int64).astype(np.uint64)
    checks = secded_encode(data, wb)
    n = k + c
    pats = [(i,) for i in range(n)] + list(itertools.combinations(range(n), 2))
    single = np.array([len(p) == 1 for p in pats])
    for d, ch in zip(data.tolist(), checks.tolist()):
        dd = np.full(len(pats), d, np.uint64)
        cc = np.full(len(pats), ch, np.int64)
        for row, flips in enumerate(pats):
            for f in flips:
                if f < k:
                    dd[row] ^= np.uint64(1 << f)
                else:
                    cc[row] ^= 1 << (f - k)
        w, corr, det = secded_decode(dd, cc, wb)
        assert (w[single] == np.uint64(d)).all() and corr[single].all()
        assert not det[single].any()
        assert det[~single].all() and not corr[~single].any()


def test_parity_detects_odd_upsets_only():
    w = np.array([0b1011, 0, 2 ** 63], np.uint64)
    assert _parity64(w).tolist() == [1, 0, 1]
    raw = write_container(None, "ssbc", {"v": np.arange(5, dtype=np.int16)})
    c = read_container(protect_container(read_container(raw), {"v": ("parity", 2)}))
    for flips, expect in (([], []), ([3], [0]), ([20], [1]), ([3, 5], []), ([0, 16, 17], [0])):
        a = np.array(c.arrays["v"]).view(np.uint16)
        for f in flips:
            a[f // 16] ^= np.uint16(1 << (f % 16))
        _, det, stats = decode_arrays({"v": a.view(np.int16)}, c.protect)
        assert (np.flatnonzero(det["v"]).tolist() if det else []) == expect


def test_tmr_votes_bitwise():
    raw = write_container(None, "ssbc", {"v": np.arange(6, dtype=np.uint8)})
    c = read_container(protect_container(read_container(raw), {"v": ("tmr", 1)}))
    p = np.array(c.protect)
    a = np.array(c.arrays["v"])
    a[0] ^= 0xF0                          # the data and one copy disagree at other bits
    start = p.size - 12
    p[start + 1] ^= 0x0F
    out, det, stats = decode_arrays({"v": a}, p)
    assert out["v"].tolist() == list(range(6)) and not det and stats["voted_bits"] == 8


def test_table_and_sizes():
    arrays = {"a": np.zeros(10, np.int32), "b": np.zeros(3, np.uint8), "c": np.ones(4)}
    raw = write_container(None, "ssbc", arrays)
    plan = {"a": ("secded", 8), "c": ("tmr", 8), "b": ("none", 1)}
    prot = read_container(protect_container(read_container(raw), plan))
    assert plan_of(prot.protect, list(prot.arrays)) == {"a": ("secded", 8), "c": ("tmr", 8)}
    # 5 words x 8 bits, 2 x 32 bytes, a triplicated table of 2 entries
    assert prot.protect.size == protection_bytes(plan, arrays) == 3 + 24 + 5 + 64
    assert protect_container(read_container(raw), {"b": ("none", 8)}) == raw
    with pytest.raises(ContainerError, match="already protected"):
        protect_container(prot, plan)
    with pytest.raises(ContainerError, match="not in the ssbc image"):
        protect_container(read_container(raw), {"zz": ("tmr", 1)})
    with pytest.raises(ContainerError, match="word_bytes must be one of"):
        protect_container(read_container(raw), {"a": ("parity", 3)})


# ------------------------------------------------------------ devices
@pytest.fixture(scope="module")
def glass():
    d = np.genfromtxt(HERE / "data" / "glass.csv", delimiter=",", skip_header=1)
    return d[:, :-1], d[:, -1].astype(int)         # classes 1, 2, 3, 5, 6, 7


@pytest.fixture(scope="module")
def ecoc_linear(glass):
    from sklearn.linear_model import RidgeClassifier

    from edgecode.ecoc.classifier import ECOCClassifier
    from export.ecoc import export_ecoc
    X, y = glass
    names = np.array(["a", "b", "c", "e", "f", "g"])[np.searchsorted([1, 2, 3, 5, 6, 7], y)]
    clf = ECOCClassifier(RidgeClassifier(), code="dense_random", n_columns=10,
                         random_state=0).fit(X, names)
    return export_ecoc(clf, X).device, names


@pytest.fixture(scope="module")
def ecoc_tree(glass):
    from sklearn.tree import DecisionTreeClassifier

    from edgecode.ecoc.classifier import ECOCClassifier
    from export.ecoc import export_ecoc
    X, y = glass
    clf = ECOCClassifier(DecisionTreeClassifier(max_depth=2, random_state=0),
                         code="dense_random", n_columns=7, random_state=0).fit(X, y)
    return export_ecoc(clf, X).device


def _hamming_without(code, sym, erased):
    """Reference: nearest codeword with the erased columns left out."""
    keep = np.setdiff1d(np.arange(code.shape[1]), erased)
    c, s = code[:, keep], sym[:, keep]
    d = 2 * ((c[None] >= 0) & (c[None] != s[:, None])).sum(-1) + (c[None] < 0).sum(-1)
    return d.argmin(axis=1)


def test_every_single_upset_of_parity_protected_weights_erases_the_learner(ecoc_linear, glass):
    """Brute force over every bit of lin_weights: the upset is detected, the learner
    owning the weight is erased, and the labels are the Hamming-nearest class
    with that column left out (computed independently)."""
    dev, _ = ecoc_linear
    X, _ = glass
    c = dev.container
    prot = read_container(protect_container(c, {"lin_weights": ("parity", 4),
                                                  "lin_bias": ("secded", 8)}))
    frames = dev.encode(X)
    sym = dev.stage(frames)
    owner = np.repeat(np.arange(dev.n_columns), np.asarray(c.arrays["col_n_out"]))
    k = c.arrays["lin_weights"].shape[1]
    fault = ParameterUpset(count=1, arrays=["lin_weights"])
    rng = np.random.default_rng(0)
    for b in rng.choice(8 * c.arrays["lin_weights"].nbytes, 96, replace=False).tolist():
        faulty = load(fault.apply_positions(prot, [b]))
        col = int(owner[(b // 32) % k])
        assert faulty.protection["erased_units"] == [col]
        ref = _hamming_without(np.asarray(dev.code, np.int64), sym.astype(np.int64), [col])
        assert (faulty.labels(frames) == ref).all()


def test_full_protection_survives_every_single_upset(ecoc_tree, glass):
    """SEC-DED or TMR on every array: every single upset of a small image (its
    ``__protect__`` included; brute force) and a sample of an ECOC tree image's
    bits change no label and are not refused."""
    nb = firmware_sim.ProtectedNBDevice.from_arrays([3, -2, 4], 1, [1, 0, 2])
    plan = {"repetitions": ("tmr", 2), "weights": ("secded", 4), "bias": ("secded", 8),
            "scale_shift": ("tmr", 4)}
    prot = load(protect_container(nb.container, plan))
    Xb = np.array(list(itertools.product([0, 1], repeat=3)))
    tab = single_upset_table(prot, Xb)
    assert tab.arrays[-1][0] == "__protect__"
    assert not tab.refused.any() and (tab.same == tab.n_points).all()
    X, _ = glass
    c = ecoc_tree.container
    plan = {n: ("secded", 8) if a.nbytes > 64 else ("tmr", 1) for n, a in c.arrays.items()}
    prot = load(protect_container(c, plan))
    frames = ecoc_tree.encode(X)
    clean = ecoc_tree.labels(frames)
    fault = ParameterUpset(count=1)
    n = fault.targeted_bits(prot.container)
    for b in np.random.default_rng(0).choice(n, 150, replace=False).tolist():
        assert (load(fault.apply_positions(prot.container, [b])).labels(frames) == clean).all()


def test_a_detected_threshold_upset_erases_its_learner(ecoc_tree, glass):
    """Brute force over a sample of the bits of ``node_threshold`` under parity:
    the learner owning the node is erased and the labels are Hamming-nearest
    without its column. Owners from the compact format by hand: column j's tree
    starts at node ``tree_root[j] - N`` (roots below N are one-leaf trees)."""
    X, _ = glass
    c = ecoc_tree.container
    array = "node_threshold"
    prot = read_container(protect_container(c, {array: ("parity", 1)}))
    frames = ecoc_tree.encode(X)
    sym = ecoc_tree.stage(frames).astype(np.int64)
    N = int(np.asarray(c.arrays["n_symbols"]).reshape(-1)[0])
    starts = np.asarray(c.arrays["tree_root"], np.int64) - N
    owner = [max((s, j) for j, s in enumerate(starts.tolist()) if 0 <= s <= i)[1]
             for i in range(c.arrays[array].size)]
    size = c.arrays[array].dtype.itemsize
    fault = ParameterUpset(count=1, arrays=[array])
    for b in range(0, 8 * c.arrays[array].nbytes, 29):
        faulty = load(fault.apply_positions(prot, [b]))
        col = int(owner[b // (8 * size)])
        assert faulty.protection["erased_units"] == [col]
        ref = _hamming_without(np.asarray(ecoc_tree.code, np.int64), sym, [col])
        assert (faulty.labels(frames) == ref).all()


@pytest.mark.parametrize("array", ["node_left", "node_feature"])
def test_a_detected_structure_upset_of_a_tree_refuses_the_image(ecoc_tree, array):
    """A tree's references have no fallback (a walk over a corrupted reference is
    unsafe): parity detects the upset and the loader refuses the image."""
    c = ecoc_tree.container
    prot = read_container(protect_container(c, {array: ("parity", 1)}))
    fault = ParameterUpset(count=1, arrays=[array])
    with pytest.raises(ContainerError, match=array):
        load(fault.apply_positions(prot, [3]))


def test_forest_and_nb_fallbacks(glass):
    from sklearn.ensemble import RandomForestClassifier

    from export.forest import export_forest
    X, y = glass
    dev = export_forest(RandomForestClassifier(4, max_depth=3, random_state=0).fit(X, y),
                        X).device
    c = dev.container
    prot = read_container(protect_container(c, {"node_threshold": ("parity", 2)}))
    frames = dev.encode(X)
    owners = type(dev).erasure_owners(c)["node_threshold"]
    fault = ParameterUpset(count=1, arrays=["node_threshold"])
    leaves = dev.stage(frames)
    for b in range(0, 16 * c.arrays["node_threshold"].size, 7):
        faulty = load(fault.apply_positions(prot, [b]))
        tree = int(owners[b // 16])
        assert faulty.protection["erased_units"] == [tree]
        keep = [k for k in range(dev.n_trees) if k != tree]
        votes = np.asarray(c.arrays["leaf_value"], np.int64)[leaves[:, keep]].sum(axis=1)
        assert (faulty.labels(frames) == votes.argmax(axis=1)).all()
    nb = firmware_sim.ProtectedNBDevice.from_arrays([3, -2, 4], 1, [1, 0, 0])
    p = read_container(protect_container(nb.container, {"weights": ("parity", 4),
                                                        "repetitions": ("parity", 2)}))
    f = ParameterUpset(count=1, arrays=["weights"])
    faulty = load(f.apply_positions(p, [32 + 5]))          # weight 1 detected: reads 0
    assert faulty.protection["detected_arrays"] == ["weights"]
    frames = nb.encode([[0, 1, 0], [1, 1, 1]])
    ref = firmware_sim.ProtectedNBDevice.from_arrays([3, 0, 4], 1, [1, 0, 0])
    assert (faulty.labels(frames) == ref.labels(frames)).all()
    # no fallback for the repetition counts: a detected upset refuses the image
    with pytest.raises(ContainerError, match="'repetitions' element 0: an upset was detected"):
        load(ParameterUpset(count=1, arrays=["repetitions"]).apply_positions(p, [0]))


def test_protected_images_pass_the_fuzzer(tmp_path, ecoc_tree):
    sys.path.insert(0, str(HERE))
    try:
        from test_container_fuzz import _fuzz
    finally:
        sys.path.remove(str(HERE))
    c = ecoc_tree.container
    plan = {n: ("tmr", 1) for n in ("code", "n_symbols", "tree_root", "learner_kind")}
    plan.update(node_threshold=("parity", 2), node_left=("secded", 1), node_right=("tmr", 1))
    path = tmp_path / "ecoc_tree_protected.edgc"
    path.write_bytes(protect_container(c, plan))
    nb = firmware_sim.ProtectedNBDevice.from_arrays([3, -2, 4, 1], 1, [1, 0, 2, 0])
    nb_path = tmp_path / "nb_protected.edgc"
    nb_path.write_bytes(protect_container(nb.container, {"weights": ("parity", 4),
                                                         "repetitions": ("tmr", 2),
                                                         "bias": ("secded", 4)}))
    for im in _fuzz([path, nb_path], "--max-flips", "500", "--per-array", "2"):
        assert im["mutants"] > 300


# ------------------------------------------------------------ the planner
def test_planner_prediction_inside_an_independent_campaign(ecoc_linear, glass):
    """Predicted = simulated: the planner's simulated prediction (its seed) lies in
    the 99% interval of a campaign on the protected image with another seed; the
    plan keeps the budget; string labels map to the image's classes."""
    from export.protect_image import protect_image
    dev, names = ecoc_linear
    X, _ = glass
    prot, rep = protect_image(dev, X, names, eps=2e-3, max_overhead=0.15, n_trials=160,
                              sample_bits=24, random_state=1)
    assert rep["overhead"] <= 0.15 and rep["protected_bytes"] == prot.nbytes
    assert rep["method"].startswith("simulated")
    assert 0.0 <= rep["accuracy"] <= 1.0
    camp = run_campaign(load(prot), X, ParameterUpset(rate=2e-3), n_trials=80,
                        random_state=12345)
    lo, hi = 1 - camp.points[0].same_ci[1], 1 - camp.points[0].same_ci[0]
    assert lo <= rep["predicted_label_change"] <= hi
    none = protect_image(dev, X, eps=2e-3, scheme="none", n_trials=80, sample_bits=8)[1]
    assert none["overhead"] == 0 and rep["predicted_label_change"] < \
        none["predicted_label_change"]


def test_planner_refuses_bad_arguments(ecoc_linear, glass):
    from export.protect_image import protect_image
    dev, names = ecoc_linear
    X, _ = glass
    with pytest.raises(ValueError, match="fault 'seu'"):
        protect_image(dev, X, fault="bsc")
    with pytest.raises(ValueError, match="scheme must be one of"):
        protect_image(dev, X, scheme="ecc")
    with pytest.raises(ValueError, match=r"eps must be in \[0, 1\)"):
        protect_image(dev, X, eps=1.0)
    with pytest.raises(ValueError, match="label 'zz' is not a class"):
        protect_image(dev, X[:3], ["zz", "a", "b"], eps=0.0, sample_bits=1)
    prot, rep = protect_image(dev, X[:5], eps=0.0, scheme="secded", sample_bits=1)
    assert rep["predicted_label_change"] == 0.0 and rep["method"].startswith("exact")
    assert 0.12 < rep["overhead"] < 0.3
    with pytest.raises(ValueError, match="already protected"):
        protect_image(prot, X[:5], eps=0.0)
