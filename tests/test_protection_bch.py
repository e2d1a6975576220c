"""BCH image protection (issue 27): the code against slow independent references,
the container entry and its loader rules, protected real models under t upsets
per block, the planner's exact block tail and its prediction against a campaign."""

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from firmware_sim import ContainerError, load
from firmware_sim._bch import (
    PRIMITIVE,
    bch_decode,
    bch_encode_bits,
    bch_layout,
    bch_params_error,
    generator,
)
from firmware_sim.artifact import read_container, write_container
from firmware_sim.engine.campaign import run_campaign
from firmware_sim.errors import DeviceError
from firmware_sim.faults import ParameterUpset
from firmware_sim.protection import (
    bch_check_bytes,
    decode_arrays,
    plan_of,
    protect_container,
    protection_bytes,
)

HERE = Path(__file__).resolve().parent


# ------------------------------------------------------------ slow references
def _ref_generator(m, t):
    """The host's construction (edgecode.ecoc.bch, search + cosets), as an int."""
    from edgecode.ecoc.bch import bch_generator
    return bch_generator(2 ** m - 1, t)


def _ref_checks(data_bits, g):
    """x^r d(x) mod g(x) by long division on Python ints (bit i = x^i)."""
    r = g.bit_length() - 1
    v = sum(int(b) << (r + j) for j, b in enumerate(data_bits))
    for i in range(v.bit_length() - 1, r - 1, -1):
        if v >> i & 1:
            v ^= g << (i - r)
    return [(v >> i) & 1 for i in range(r)]


def test_primitive_table_and_generators_match_the_host_construction():
    from edgecode.ecoc.bch import primitive_polynomial
    for m, p in PRIMITIVE.items():
        assert primitive_polynomial(m) == p
    for m in range(3, 11):
        for t in range(1, min(8, 2 ** (m - 1) - 1) + 1):
            g = generator(m, t)
            assert sum(int(c) << i for i, c in enumerate(g)) == _ref_generator(m, t)
            assert g.size - 1 <= m * t


def test_parameter_rules():
    assert bch_params_error(12, 14) is None and bch_params_error(4, 7) is None
    assert "m = 2" in bch_params_error(2, 1) and "m = 14" in bch_params_error(14, 1)
    assert "t = 0" in bch_params_error(8, 0) and "t = 33" in bch_params_error(13, 33)
    assert "t = 8" in bch_params_error(4, 8)


@settings(max_examples=40, deadline=None)
@given(st.sampled_from([(4, 2), (5, 3), (6, 2), (8, 4), (10, 3)]), st.integers(1, 2500),
       st.integers(0, 2 ** 32 - 1))
def test_encoder_matches_long_division(mt, nbits, seed):
    m, t = mt
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 2, nbits).astype(np.uint8)
    chk = bch_encode_bits(bits, m, t)
    r, k, nb = bch_layout(m, t, nbits)
    g = _ref_generator(m, t)
    assert chk.shape == (nb, r) and r == g.bit_length() - 1
    for b in range(nb):
        assert chk[b].tolist() == _ref_checks(bits[b * k:(b + 1) * k], g)


def test_m4_t2_every_received_word_against_nearest_codeword():
    """Brute force over all 2^15 received words of the (15, 7) code: distance <= 2
    to the nearest codeword: decoded to it; otherwise detected (the decoder is
    bounded-distance: it never moves a word to a codeword farther than t)."""
    m, t = 4, 2
    r, k, _ = bch_layout(m, t, 7)
    data = ((np.arange(128)[:, None] >> np.arange(k)) & 1).astype(np.uint8)
    checks = bch_encode_bits(data.reshape(-1), m, t)
    cw = np.concatenate([checks, data], axis=1)                       # 128 x 15
    cw_int = (cw.astype(np.int64) << np.arange(15)).sum(axis=1)
    rx = np.arange(1 << 15, dtype=np.int64)
    x = rx[:, None] ^ cw_int[None, :]
    dist = np.zeros(x.shape, np.int64)
    for i in range(15):
        dist += (x >> i) & 1
    near, arg = dist.min(axis=1), dist.argmin(axis=1)
    rx_bits = ((rx[:, None] >> np.arange(15)) & 1).astype(np.uint8)
    out, corr, det = bch_decode(rx_bits[:, r:].reshape(-1), rx_bits[:, :r], m, t)
    out = out.reshape(-1, k)
    ok = near <= t
    assert (out[ok] == data[arg[ok]]).all()
    assert not det[ok].any() and det[~ok].all()
    assert (corr == ok & (near > 0)).all()


def _flip(bits, checks, k, r, block, positions):
    b2, c2 = bits.copy(), checks.copy()
    for p in positions:
        if p < r:
            c2[block, p] ^= 1
        else:
            b2[block * k + p - r] ^= 1
    return b2, c2


@settings(max_examples=60, deadline=None)
@given(st.sampled_from([(5, 2), (6, 3), (8, 2), (9, 5), (10, 4), (12, 6), (13, 10)]),
       st.integers(1, 12000), st.integers(0, 2 ** 32 - 1), st.booleans())
def test_every_pattern_up_to_t_is_corrected_and_t_plus_1_never_silently_far(mt, nbits, seed,
                                                                           beyond):
    """Random blocks (the last one shortened), random error patterns of weight
    <= t (corrected exactly) or t + 1 (detected, or moved to a codeword within
    distance t of the received word: checked by syndrome-free re-encoding with
    the long-division reference and the Hamming distance)."""
    m, t = mt
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 2, nbits).astype(np.uint8)
    chk = bch_encode_bits(bits, m, t)
    r, k, nb = bch_layout(m, t, nbits)
    block = int(rng.integers(nb))
    length = r + min(k, nbits - block * k)
    w = min(length, t + 1) if beyond else int(rng.integers(0, t + 1))
    pos = rng.choice(length, w, replace=False)
    b2, c2 = _flip(bits, chk, k, r, block, pos.tolist())
    out, corr, det = bch_decode(b2, c2, m, t)
    others = np.arange(nb) != block
    assert not det[others].any() and not corr[others].any()
    if not beyond or w <= t:
        assert (out == bits).all() and not det.any() and corr[block] == (w > 0)
        return
    if det[block]:
        assert (out == b2).all()                      # a detected block is left as read
        return
    # miscorrected: a codeword (by the reference encoder) within t of what was read
    lo, hi = block * k, block * k + length - r
    d_out = out[lo:hi]
    g = _ref_generator(m, t) if m <= 10 else sum(int(c) << i for i, c in
                                                 enumerate(generator(m, t)))
    c_out = np.array(_ref_checks(d_out, g), np.uint8)
    dist = int((d_out != b2[lo:hi]).sum() + (c_out != c2[block]).sum())
    assert 0 < dist <= t and (d_out != bits[lo:hi]).any()


# ------------------------------------------------------------ the container
def test_container_round_trip_sizes_and_plan():
    arrays = {"a": np.arange(700, dtype=np.int32), "b": np.arange(5, dtype=np.uint8),
              "c": np.zeros(0, np.int16)}
    raw = write_container(None, "ssbc", arrays)
    plan = {"a": ("bch", (12, 6)), "b": ("bch", (5, 2)), "c": ("bch", (6, 1))}
    prot = read_container(protect_container(read_container(raw), plan))
    assert plan_of(prot.protect, arrays=prot.arrays) == plan
    r, k, nb = bch_layout(12, 6, 8 * 2800)
    assert bch_check_bytes(12, 6, 2800) == 3 + -(-nb * r // 8) and r == 72 and nb == 6
    assert prot.protect.size == protection_bytes(plan, arrays) == \
        3 + 36 + bch_check_bytes(12, 6, 2800) + bch_check_bytes(5, 2, 5) + 3
    out, det, stats = decode_arrays(dict(prot.arrays), prot.protect)
    assert not det and stats["corrected_words"] == 0
    assert all((out[n] == arrays[n]).all() for n in arrays)
    for spec, match in ((("bch", (14, 2)), "m = 14"), (("bch", (8, 0)), "t = 0"),
                        (("bch", 8), "bch takes"), (("bch", (8, 2, 4)), "span 4 must be in "
                                                    r"\[1, 3\]")):
        with pytest.raises(ContainerError, match=match):
            protect_container(read_container(raw), {"a": spec})


def _with_entry_byte(prot, byte, value):
    """The protected image with one byte of its (single) table entry set in all
    three copies (what the vote keeps)."""
    p = np.array(prot.protect)
    for copy in range(3):
        p[3 + 4 * copy + byte] = value
    return write_container(None, prot.kind, dict(prot.arrays), prot.meta or None, protect=p)


@pytest.mark.parametrize("byte,value,match", [
    (2, 2, r"entry 0: BCH field size m \(byte 2\): m = 2 must be in \[3, 13\]"),
    (2, 200, r"entry 0: BCH field size m \(byte 2\): m = 200"),
    (3, 0, r"entry 0: BCH correctable errors t \(byte 3\): t = 0 must be in \[1, 32\]"),
    (3, 255, r"correctable errors t \(byte 3\): t = 255"),
    (2, 12, r"'__protect__' has \d+ bytes; its table and the check bits .* need \d+"),
    (3, 7, r"'__protect__' has \d+ bytes; its table and the check bits .* need \d+"),
])
def test_a_corrupt_bch_entry_is_refused_naming_the_field(byte, value, match):
    raw = write_container(None, "ssbc", {"v": np.arange(300, dtype=np.int32)})
    prot = read_container(protect_container(read_container(raw), {"v": ("bch", (11, 4))}))
    with pytest.raises(ContainerError, match=match):
        decode_arrays(dict(prot.arrays), read_container(_with_entry_byte(prot, byte, value))
                      .protect)


def test_a_span_covers_consecutive_arrays_once():
    arrays = {"a": np.arange(40, dtype=np.int16), "b": np.arange(3, dtype=np.uint8),
              "c": np.ones(5), "d": np.arange(4, dtype=np.int32)}
    raw = read_container(write_container(None, "ssbc", arrays))
    plan = {"a": ("bch", (10, 3, 3)), "d": ("tmr", 4)}
    prot = read_container(protect_container(raw, plan))
    assert plan_of(prot.protect, arrays=prot.arrays) == plan
    assert prot.protect.size == protection_bytes(plan, arrays) == \
        3 + 24 + bch_check_bytes(10, 3, 80 + 3 + 40) + 32
    a = {n: np.array(v) for n, v in prot.arrays.items()}
    a["b"][1] ^= 0x41                                     # two upsets in the span's block
    a["c"][4] = -3.0e300                                  # and many more: detected
    for v in a.values():
        v.flags.writeable = False
    out, det, _ = decode_arrays(a, prot.protect)
    assert sorted(det) == ["a", "b", "c"] and det["c"].all()
    out, det, stats = decode_arrays({**a, "c": prot.arrays["c"]}, prot.protect)
    assert not det and stats["corrected_words"] == 1
    assert all((out[n] == arrays[n]).all() for n in arrays)
    with pytest.raises(ContainerError, match="covers 'd', which the plan protects too"):
        protect_container(raw, {"a": ("bch", (10, 3, 4)), "d": ("tmr", 4)})
    with pytest.raises(DeviceError, match="pass the arrays"):
        plan_of(prot.protect, list(prot.arrays))


@pytest.mark.parametrize("span,match", [
    (0, r"entry 0: BCH span s = 0 \(arrays covered, check bytes 0..2\) must be in \[1, 3\]: "
        "from array 0 up to the next entry's array 3"),
    (4, r"BCH span s = 4 .* must be in \[1, 3\]"),
    (1, r"'__protect__' has \d+ bytes; its table and the check bits .* need \d+"),
])
def test_a_corrupt_span_is_refused_naming_the_field(span, match):
    arrays = {"a": np.arange(40, dtype=np.int16), "b": np.arange(3, dtype=np.uint8),
              "c": np.ones(5), "d": np.arange(4, dtype=np.int32)}
    raw = read_container(write_container(None, "ssbc", arrays))
    prot = read_container(protect_container(raw, {"a": ("bch", (6, 3, 3)),
                                                  "d": ("tmr", 4)}))
    p = np.array(prot.protect)
    p[27:30] = span                                       # the span's three copies
    with pytest.raises(ContainerError, match=match):
        decode_arrays(dict(prot.arrays), p)
    p[27:29] = 3                                          # outvoted: read as 3
    decode_arrays(dict(prot.arrays), p)


def test_a_wrong_span_of_the_same_size_is_detected():
    """A span read wrong in two of its three copies but needing the same check
    bytes (one block either way) decodes another stream: detected, not trusted."""
    arrays = {"a": np.arange(40, dtype=np.int16), "b": np.arange(3, dtype=np.uint8),
              "c": np.ones(5)}
    raw = read_container(write_container(None, "ssbc", arrays))
    prot = read_container(protect_container(raw, {"a": ("bch", (10, 3, 3))}))
    p = np.array(prot.protect)
    p[15:17] = 2
    out, det, stats = decode_arrays(dict(prot.arrays), p)
    assert sorted(det) == ["a", "b"] and stats["detected_words"] == 1


def test_protected_bch_images_pass_the_fuzzer(tmp_path):
    import sys
    sys.path.insert(0, str(HERE))
    try:
        from test_container_fuzz import _fuzz
    finally:
        sys.path.remove(str(HERE))
    import firmware_sim
    nb = firmware_sim.ProtectedNBDevice.from_arrays([3, -2, 4, 1], 1, [1, 0, 2, 0])
    path = tmp_path / "nb_bch.edgc"
    path.write_bytes(protect_container(nb.container, {"weights": ("bch", (6, 2)),
                                                      "repetitions": ("bch", (5, 1)),
                                                      "bias": ("tmr", 4)}))
    span = tmp_path / "nb_bch_span.edgc"
    span.write_bytes(protect_container(nb.container, {"repetitions": ("bch", (8, 3, 4))}))
    for im in _fuzz([path, span], "--max-flips", "400", "--per-array", "2"):
        assert im["mutants"] > 300


# ------------------------------------------------------------ real models
@pytest.fixture(scope="module")
def glass():
    d = np.genfromtxt(HERE / "data" / "glass.csv", delimiter=",", skip_header=1)
    return d[:, :-1], d[:, -1].astype(int)         # classes 1, 2, 3, 5, 6, 7


@pytest.fixture(scope="module")
def devices(glass):
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.tree import DecisionTreeClassifier

    from edgecode.ecoc.classifier import ECOCClassifier
    from export.ecoc import export_ecoc
    from export.forest import export_forest
    X, y = glass
    ecoc = ECOCClassifier(DecisionTreeClassifier(max_depth=4, random_state=0),
                          code="dense_random", n_columns=15, random_state=0).fit(X, y)
    forest = RandomForestClassifier(10, max_depth=5, random_state=0).fit(X, y)
    return {"ecoc": export_ecoc(ecoc, X).device, "forest": export_forest(forest, X).device}


def _bit_positions(container):
    """Global upset positions (ParameterUpset's order) of each array's first bit."""
    start, out = 0, {}
    for name, a in container.arrays.items():
        out[name] = start
        start += 8 * a.nbytes
    out["__protect__"] = start
    return out


@pytest.mark.parametrize("kind", ["ecoc", "forest"])
@pytest.mark.parametrize("m,t,span", [(9, 2, False), (13, 5, False), (13, 9, True)])
def test_t_upsets_in_every_block_leave_every_label_unchanged(devices, glass, kind, m, t, span):
    """Every array BCH-protected (one code each, or one span over all of them);
    t upsets in every block (data and check bits alike, the check bits upset in
    ``__protect__``): the device loads and predicts exactly the clean labels,
    every block corrected."""
    dev = devices[kind]
    X, _ = glass
    c = dev.container
    names = list(c.arrays)
    if span:
        plan = {names[0]: ("bch", (m, t, len(names)))}
        streams = [(names, sum(a.nbytes for a in c.arrays.values()))]
    else:
        plan = {n: ("bch", (m, t)) for n in names}
        streams = [([n], c.arrays[n].nbytes) for n in names]
    prot = read_container(protect_container(c, plan))
    assert plan_of(prot.protect, arrays=prot.arrays) == plan
    fault = ParameterUpset(count=1)
    assert fault.targeted_bits(prot) == 8 * (sum(a.nbytes for a in c.arrays.values())
                                             + prot.protect.size)
    start = _bit_positions(prot)
    rng = np.random.default_rng(m * t)
    chk_at = start["__protect__"] + 8 * (3 + 12 * len(plan))
    flips, n_blocks = [], 0
    for covered, nbytes in streams:
        first = start[covered[0]]             # the covered arrays are contiguous bits
        r, k, nb = bch_layout(m, t, 8 * nbytes)
        for b in range(nb):
            length = r + min(k, 8 * nbytes - b * k)
            for p in rng.choice(length, min(t, length), replace=False).tolist():
                flips.append(chk_at + 24 + b * r + p if p < r else first + b * k + p - r)
        n_blocks += nb
        chk_at += 8 * bch_check_bytes(m, t, nbytes)
    faulty = load(fault.apply_positions(prot, flips))
    frames = dev.encode(X)
    assert (faulty.labels(frames) == dev.labels(frames)).all()
    assert faulty.protection["corrected_words"] == n_blocks
    assert faulty.protection["detected_words"] == 0


def test_a_detected_block_erases_its_trees_or_refuses(devices, glass):
    """More than t upsets in a block that the decoder detects: the forest's
    thresholds fall back (their trees leave the vote); the child references
    have no fallback and the image is refused naming the array."""
    dev = devices["forest"]
    X, _ = glass
    c = dev.container
    m, t = 12, 2
    prot = read_container(protect_container(c, {"node_threshold": ("bch", (m, t)),
                                                 "node_left": ("bch", (m, t))}))
    start = _bit_positions(prot)
    rng = np.random.default_rng(3)
    frames = dev.encode(X)
    owners = np.asarray(type(dev).erasure_owners(c)["node_threshold"])
    for name in ("node_threshold", "node_left"):
        a = c.arrays[name]
        bits = np.unpackbits(np.frombuffer(a.tobytes(), np.uint8), bitorder="little")
        chk = bch_encode_bits(bits, m, t)
        for _ in range(50):                  # a pattern of weight 2t + 1 the decoder detects
            pos = rng.choice(bits.size, 2 * t + 1, replace=False)
            b2 = bits.copy()
            b2[pos] ^= 1
            if bch_decode(b2, chk, m, t)[2].all():
                break
        else:
            pytest.fail("no detected pattern found")
        faulty_img = ParameterUpset(count=1).apply_positions(
            prot, (start[name] + pos).tolist())
        if name == "node_left":
            with pytest.raises(ContainerError, match="'node_left' element 0: an upset was "
                                                     "detected"):
                load(faulty_img)
            continue
        faulty = load(faulty_img)
        assert faulty.protection["erased_units"] == sorted(set(owners.tolist()))
        assert faulty.protection["detected_arrays"] == ["node_threshold"]
        assert (faulty.labels(frames) >= 0).all()


# ------------------------------------------------------------ the planner
def test_binomial_tail_is_exact():
    from scipy.stats import binom

    from export.protect_image import binomial_tail
    for n, t, eps in ((4095, 14, 1e-3), (8191, 10, 1e-3), (300, 2, 1e-4), (72, 1, 1e-3),
                      (1000, 0, 0.01)):
        ref = binom.sf(t, n, eps)
        assert binomial_tail(n, t, eps) == pytest.approx(ref, rel=1e-9, abs=1e-300)
    assert binomial_tail(100, 3, 0.0) == 0.0


def test_planner_offers_bch_and_its_prediction_lies_in_a_campaign(devices, glass):
    """The uniform ``bch`` scheme and a plan that may choose BCH: the simulated
    prediction lies in the 99% interval of an independent campaign; the plan
    keeps the budget; the report names (m, t)."""
    from export.protect_image import protect_image
    dev = devices["forest"]
    X, y = glass
    prot, rep = protect_image(dev, X, y, eps=1e-3, scheme="bch", n_trials=120,
                              sample_bits=16, random_state=1)
    assert {a["scheme"] for a in rep["allocation"]} == {"bch"}
    assert all(len(a["bch"]) == 2 for a in rep["allocation"])
    camp = run_campaign(load(prot), X, ParameterUpset(rate=1e-3), n_trials=80,
                        random_state=12345)
    lo, hi = 1 - camp.points[0].same_ci[1], 1 - camp.points[0].same_ci[0]
    assert lo - 1 / 80 <= rep["predicted_label_change"] <= hi
    prot2, rep2 = protect_image(dev, X, y, eps=1e-3, max_overhead=0.125, n_trials=120,
                                ranking=rep["ranking"], random_state=1)
    assert rep2["overhead"] <= 0.125
    assert "bch" in {a["scheme"] for a in rep2["allocation"]}
    camp = run_campaign(load(prot2), X, ParameterUpset(rate=1e-3), n_trials=80,
                        random_state=12345)
    lo, hi = 1 - camp.points[0].same_ci[1], 1 - camp.points[0].same_ci[0]
    assert lo - 1 / 80 <= rep2["predicted_label_change"] <= hi


def test_planner_spans_one_code_over_the_forest_at_4_percent(devices, glass):
    """At <= 4% one table entry and one code over consecutive arrays is what fits
    (the container entry alone is 64 bytes): the plan is a span, the exact size
    keeps the budget, the stored plan is the reported one, and the prediction
    lies in an independent campaign's 99% interval."""
    from export.protect_image import protect_image
    dev = devices["forest"]
    X, y = glass
    prot, rep = protect_image(dev, X, y, eps=1e-3, max_overhead=0.04, n_trials=120,
                              sample_bits=16, random_state=1)
    assert rep["overhead"] <= 0.04
    spans = {a["span_of"] for a in rep["allocation"]} - {None}
    assert len(spans) == 1
    first = spans.pop()
    covered = [a["array"] for a in rep["allocation"] if a["span_of"] == first]
    m, t, n = next(a["bch"] for a in rep["allocation"] if a["array"] == first)
    assert n == len(covered) >= 2
    assert plan_of(prot.protect, arrays=prot.arrays)[first] == ("bch", (m, t, n))
    camp = run_campaign(load(prot), X, ParameterUpset(rate=1e-3), n_trials=80,
                        random_state=12345)
    lo, hi = 1 - camp.points[0].same_ci[1], 1 - camp.points[0].same_ci[0]
    assert lo - 1 / 80 <= rep["predicted_label_change"] <= hi


def test_the_planner_size_arithmetic_equals_the_written_container(devices):
    """The planner sizes a protected image by arithmetic on the layout
    (``stored_size``, ``entry_layout``); every L gives the length that
    ``write_container`` writes, with and without metadata."""
    from firmware_sim.artifact import entry_layout, stored_size
    from export.protect_image import _sizer
    from firmware_sim import ProtectedNBDevice
    nb = ProtectedNBDevice.from_arrays([3, -2, 4], 1, [1, 0, 0]).container
    for c in (devices["ecoc"].container, devices["forest"].container, nb):
        size = _sizer(c)
        assert size(0) == len(c.tobytes())
        for L in list(range(1, 40)) + [97, 1000, 4099]:
            raw = write_container(None, c.kind, dict(c.arrays), c.meta or None,
                                  protect=np.zeros(L, np.uint8))
            assert size(L) == len(raw), (c.kind, L)
            lay = entry_layout(raw)
            assert stored_size([nb_ for _, _, nb_ in lay]) == len(raw)
            assert [n for n, _, _ in lay][:len(c.arrays)] == list(c.arrays)
            assert all(off % 16 == 0 for _, off, _ in lay)
    with pytest.raises(ValueError, match="sizes must be >= 0"):
        stored_size([3, -1])


def test_sampled_single_upset_figures_against_a_slow_recount(devices, glass):
    """The ranking's single-upset figure of each array, recounted by flipping
    each bit by hand in the array's bytes, writing, loading (refused = every
    label; the frames are the clean device's: an upset image does not change
    what the host sends): the exact mean where every bit is tried, the Jeffreys posterior
    mean (K + 1/2) / (N + 1) of a sample, with the planner's draw of bits; the
    same for the erasure of single elements (a forest's leaves)."""
    from export.protect_image import protect_image
    dev = devices["forest"]
    X, y = glass
    X = X[::4]
    sample = 24
    _, rep = protect_image(dev, X, eps=1e-3, max_overhead=0.04, n_trials=2,
                           sample_bits=sample, random_state=3)
    c = dev.container
    frames = dev.encode(X)          # the host encodes with its own parameters
    clean = np.asarray(dev.labels(frames))
    rng = np.random.default_rng(3)
    for name, a in c.arrays.items():
        n = 8 * a.nbytes
        bits = np.arange(n) if n <= sample else rng.choice(n, sample, replace=False)
        changed = 0.0
        for b in bits.tolist():
            arrays = {k: np.array(v) for k, v in c.arrays.items()}
            raw = arrays[name].view(np.uint8).reshape(-1)
            raw[b // 8] ^= np.uint8(1 << (b % 8))
            try:
                d = load(write_container(None, c.kind, arrays, c.meta or None))
                changed += float(np.sum(np.asarray(d.labels(frames)) != clean))
            except ContainerError:
                changed += len(X)
        N = len(bits) * len(X)
        want = changed / N if n <= sample else (changed + 0.5) / (N + 1)
        assert rep["ranking"]["single_upset"][name] == pytest.approx(want, rel=1e-9, abs=1e-15), name
    # erasures per element (a forest's leaves read 0), drawn after the upsets
    owners = type(dev).erasure_owners(c)
    per_element = [n for n, own in owners.items() if np.all(np.asarray(own) < 0)]
    assert rep["ranking"]["erasure_per_element"] == per_element == ["leaf_value"]
    for name, own in owners.items():
        own = np.asarray(own).reshape(-1)
        if name not in per_element:
            continue
        els = np.arange(own.size) if own.size <= 32 else rng.choice(own.size, 32, replace=False)
        changed = 0.0
        for e in els.tolist():
            arrays = {k: np.array(v) for k, v in c.arrays.items()}
            arrays[name].reshape(-1)[e] = 0
            d = load(write_container(None, c.kind, arrays, c.meta or None))
            changed += float(np.sum(np.asarray(d.labels(frames)) != clean))
        N = len(els) * len(X)
        want = changed / N if own.size <= 32 else (changed + 0.5) / (N + 1)
        assert rep["ranking"]["erasure"][name] == pytest.approx(want, rel=1e-9), name


def test_a_span_plan_takes_the_largest_t_that_fits(devices, glass):
    """Brute force over t for the planner's span: its t is the largest whose
    protected image (written by ``protect_container``, exact bytes) keeps the
    budget; one more correctable error would not fit."""
    from export.protect_image import _bch_m, protect_image
    from firmware_sim._bch import T_MAX
    dev = devices["forest"]
    X, y = glass
    prot, rep = protect_image(dev, X[::3], eps=1e-3, max_overhead=0.04, n_trials=2,
                              sample_bits=8, random_state=1)
    c = dev.container
    first = next(a["array"] for a in rep["allocation"] if a["span_of"] == a["array"])
    m, t, s = next(a["bch"] for a in rep["allocation"] if a["array"] == first)
    rest = {a["array"]: (a["scheme"], a["word_bytes"] if a["scheme"] != "bch" else
                         tuple(a["bch"]))
            for a in rep["allocation"] if a["span_of"] is None and a["scheme"] != "none"}
    names = list(c.arrays)
    nbits = 8 * sum(c.arrays[n].nbytes for n in names[names.index(first):][:s])
    budget = 0.04 * len(c.tobytes())

    def fits(tt):
        mm = _bch_m(nbits, tt)
        if mm is None:
            return False
        raw = protect_container(c, dict(rest, **{first: ("bch", (mm, tt, s))}))
        return len(raw) - len(c.tobytes()) <= budget
    assert fits(t) and len(prot.tobytes()) - len(c.tobytes()) <= budget
    assert all(not fits(tt) for tt in range(t + 1, T_MAX + 1))


def test_a_detected_word_of_a_per_element_fallback_counts_its_elements():
    """Parity on 8-byte words of uint8 leaves: a detected word zeroes 8 leaves,
    so the first-order hazard is words x (P(odd upsets) x min(1, 8 e) + P(even
    >= 2) x min(1, 2 c)), with the word's probabilities summed from the exact
    binomial pmf; a per-unit fallback (a tree) keeps e per word."""
    from scipy.stats import binom

    from export.protect_image import _hazard, _word_erasure
    eps, nbytes, c, e = 1e-3, 2652, 5e-6, 3e-5
    n = 65
    k = np.arange(n + 1)
    pmf = binom.pmf(k, n, eps)
    p_odd, p_even = pmf[k % 2 == 1].sum(), pmf[(k % 2 == 0) & (k >= 2)].sum()
    words = -(-nbytes // 8)
    for per_element, det in ((True, min(1.0, 8 * e)), (False, e)):
        got = _hazard("parity", 8, nbytes, eps, c,
                      _word_erasure(e, per_element, ("parity", 8), 1))
        assert got == pytest.approx(words * (p_odd * det + p_even * min(1.0, 2 * c)), rel=1e-9)
    assert _word_erasure(0.4, True, ("secded", 8), 1) == 1.0
    assert _word_erasure(0.4, True, ("bch", (13, 4)), 1) == 0.4
    assert _word_erasure(None, True, ("parity", 8), 1) is None


def test_the_planner_reports_progress_per_array_and_stops_when_it_raises(devices, glass):
    from export.protect_image import protect_image
    dev = devices["forest"]
    X = glass[0][::8]
    calls = []
    protect_image(dev, X, eps=1e-3, n_trials=2, sample_bits=4,
                  progress=lambda *a: calls.append(a))
    names = list(dev.container.arrays)
    ranking = [c for c in calls if "ranking" in str(c[-1])]
    assert [c[:2] for c in ranking] == [(i, len(names)) for i in range(len(names) + 1)]

    def stop(done, total, text):
        if done == 2:
            raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        protect_image(dev, X, eps=1e-3, n_trials=2, sample_bits=4, progress=stop)
