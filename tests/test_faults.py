"""Fault models against their closed forms, and reproducibility under a seed."""

import numpy as np
import pytest

from firmware_sim import ContainerError, ProtectedNBDevice, read_container, write_container
from firmware_sim.faults import (
    BSC,
    Compose,
    GilbertElliott,
    Interleave,
    ParameterUpset,
    StuckAt,
    copy_major_order,
    feature_lines,
    make_fault,
    upset_bytes,
)


def _within(count, n, p, z=5.0):
    """Binomial count within z standard deviations of n p."""
    sd = np.sqrt(n * p * (1 - p))
    return abs(count - n * p) <= z * sd + 1e-9


def _runs(states):
    """Lengths of the runs of 1 in a 0/1 vector, dropping runs that touch either end."""
    s = np.concatenate([[0], states.astype(np.int64), [0]])
    d = np.diff(s)
    starts, ends = np.flatnonzero(d == 1), np.flatnonzero(d == -1)
    keep = (starts > 0) & (ends < states.size)
    return (ends - starts)[keep]


# ---------------------------------------------------------------- BSC
@pytest.mark.parametrize("eps", [0.0, 0.001, 0.1, 0.5, 1.0])
def test_bsc_flip_rate(eps):
    x = np.zeros((500, 200), np.uint8)
    out = BSC(eps).apply(x, random_state=3)
    assert out.dtype == np.uint8 and out.shape == x.shape
    assert _within(int(out.sum()), x.size, eps)


def test_bsc_per_bit_eps_and_inputs_untouched():
    eps = np.array([0.0, 0.05, 0.3, 1.0])
    x = np.ones((20000, 4), np.uint8)
    out = BSC(eps).apply(x, random_state=0)
    assert x.min() == 1
    for j, e in enumerate(eps):
        assert _within(int((out[:, j] == 0).sum()), x.shape[0], e)
    with pytest.raises(ValueError, match="eps has 4 entries but rows have 5 bits"):
        BSC(eps).apply(np.zeros((2, 5), np.uint8))


def test_bsc_validation_messages():
    with pytest.raises(ValueError, match=r"eps must be in \[0.0, 1.0\]; got 1.5"):
        BSC(1.5)
    with pytest.raises(TypeError, match="eps must be a number"):
        BSC("x")
    with pytest.raises(ValueError, match="must be 0 or 1"):
        BSC(0.1).apply([[0, 2]])
    with pytest.raises(ValueError, match="has no parameter"):
        BSC(0.1).with_params(p=0.2)
    assert BSC(0.1).with_params(flip_rate=0.3) == BSC(0.3)


@pytest.mark.parametrize("eps", [0.004, 1.0 / 32.0 - 1e-9, 1.0 / 32.0, 0.1, 1.0 / 3.0, 0.5,
                                 0.75, 0.999])
@pytest.mark.parametrize("width", [7, 48, 64, 150])
def test_bsc_masks_per_row_counts_are_binomial(eps, width):
    # both samplers (skipping below 1/32, digit comparison from 1/32 up), every
    # row width (one word, exactly one, several, straddling the flat stream)
    from scipy.stats import binom, chisquare
    rows = 4000
    masks = BSC(eps).error_masks(rows, width, np.random.default_rng(11))
    assert masks.shape == (rows, (width + 63) // 64) and masks.dtype == np.uint64
    bits = np.unpackbits(masks.view(np.uint8), axis=1, bitorder="little")[:, :width]
    tail = np.unpackbits(masks.view(np.uint8), axis=1, bitorder="little")[:, width:]
    assert not tail.any()                        # nothing past the row's last bit
    assert _within(int(bits.sum()), bits.size, eps)
    assert all(_within(int(c), rows, eps, z=5.5) for c in bits.sum(axis=0))  # every position
    # errors per row ~ Binomial(width, eps): chi-square over the likely counts
    k = bits.sum(axis=1)
    pmf = binom.pmf(np.arange(width + 1), width, eps)
    keep = pmf * rows >= 5
    obs = np.array([np.sum(k == i) for i in np.flatnonzero(keep)] + [np.sum(~keep[k])])
    exp = np.concatenate([pmf[keep], [pmf[~keep].sum()]]) * rows
    obs, exp = obs[exp > 0], exp[exp > 0]
    assert chisquare(obs, exp * obs.sum() / exp.sum()).pvalue > 1e-4


def test_bsc_masks_positions_and_apply_are_one_draw():
    for f in (BSC(0.01), BSC(0.2), GilbertElliott(0.05, 0.3),
              Compose([BSC(0.1), GilbertElliott(0.05, 0.3, eps_bad=0.7)])):
        masks = f.error_masks(300, 70, np.random.default_rng(5))
        bits = np.zeros((300, 70), np.uint8)
        f.apply_inplace(bits, np.random.default_rng(5))
        ref = np.unpackbits(masks.view(np.uint8), axis=1, bitorder="little")[:, :70]
        np.testing.assert_array_equal(bits, ref)
        pos = f.error_positions(300, 70, np.random.default_rng(5))
        np.testing.assert_array_equal(pos, np.flatnonzero(ref))
    with pytest.raises(TypeError, match="not additive"):
        StuckAt(stuck1=[0]).error_masks(2, 3, np.random.default_rng(0))


def test_bsc_digit_sampler_is_exact_for_dyadic_eps():
    # eps = 1/2: one random word decides all 64 lanes, half of them on average;
    # 3/8 needs three digits; both rates are exact Binomial draws
    for eps in (0.5, 0.375):
        masks = BSC(eps).error_masks(20000, 64, np.random.default_rng(2))
        n = int(sum(bin(int(m)).count("1") for m in masks[:, 0]))
        assert _within(n, masks.size * 64, eps, z=4.0)
    assert not BSC(0.0).error_masks(10, 100, np.random.default_rng(0)).any()
    full = BSC(1.0).error_masks(3, 100, np.random.default_rng(0))
    assert full[:, 0].tolist() == [2**64 - 1] * 3 and full[:, 1].tolist() == [2**36 - 1] * 3


# ---------------------------------------------------------------- Gilbert-Elliott
def test_gilbert_elliott_stationary_bad_probability():
    ge = GilbertElliott(0.02, 0.25)
    states = ge.sample_states((4000, 64), random_state=1)     # each row starts stationary
    pi_b = ge.stationary_bad
    assert pi_b == pytest.approx(0.02 / 0.27)
    # rows are independent: the per-row means give an honest standard error
    row_means = states.mean(axis=1)
    se = row_means.std(ddof=1) / np.sqrt(row_means.size)
    assert abs(states.mean() - pi_b) < 5 * se
    # stationary from the first bit on: the first column has the same law
    assert _within(int(states[:, 0].sum()), states.shape[0], pi_b)


def test_gilbert_elliott_burst_lengths_are_geometric():
    r = 0.2
    ge = GilbertElliott(0.01, r)
    runs = _runs(ge.sample_states((1, 2_000_000), random_state=2)[0])
    assert runs.size > 5000
    # mean 1/r, P(L = k) = (1 - r)^(k - 1) r
    se = np.sqrt((1 - r) / r**2 / runs.size)
    assert abs(runs.mean() - 1 / r) < 5 * se
    for k in (1, 2, 3, 5):
        assert _within(int((runs == k).sum()), runs.size, (1 - r) ** (k - 1) * r)
    good = _runs(1 - ge.sample_states((1, 2_000_000), random_state=3)[0])
    assert abs(good.mean() - 1 / 0.01) < 5 * np.sqrt(0.99 / 0.01**2 / good.size)


def test_gilbert_elliott_flips_follow_the_state():
    ge = GilbertElliott(0.05, 0.3, eps_good=0.01, eps_bad=0.4)
    shape = (3000, 100)
    flips = ge.apply(np.zeros(shape, np.uint8), random_state=7)
    states = ge.sample_states(shape, random_state=7)          # same draws, same seed
    bad = states == 1
    assert _within(int(flips[bad].sum()), int(bad.sum()), 0.4)
    assert _within(int(flips[~bad].sum()), int((~bad).sum()), 0.01)
    rate = flips.mean()
    assert abs(rate - ge.mean_flip_rate) < 0.01


def test_gilbert_elliott_edge_cases():
    x = np.zeros((50, 40), np.uint8)
    assert GilbertElliott(0.0, 0.5, eps_bad=1.0).apply(x, 0).sum() == 0    # never bad
    assert GilbertElliott(1.0, 0.0, eps_bad=1.0).apply(x, 0).sum() == x.size  # always bad
    alt = GilbertElliott(1.0, 1.0, eps_bad=1.0).sample_states((1, 10), 0)[0]
    assert np.all(np.abs(np.diff(alt.astype(int))) == 1)           # alternates every bit
    with pytest.raises(ValueError, match="p and r cannot both be 0"):
        GilbertElliott(0.0, 0.0)
    with pytest.raises(ValueError, match=r"r must be in \[0.0, 1.0\]"):
        GilbertElliott(0.1, 1.2)
    with pytest.raises(ValueError, match="flip_rate must be in"):
        GilbertElliott.from_flip_rate(0.6, 4)


def test_gilbert_elliott_from_flip_rate_and_continuous():
    ge = GilbertElliott.from_flip_rate(0.05, 8.0)
    assert ge.mean_burst_length == 8.0 and ge.mean_flip_rate == pytest.approx(0.05)
    ge2 = ge.with_params(flip_rate=0.1)
    assert ge2.r == ge.r and ge2.mean_flip_rate == pytest.approx(0.1)
    ge3 = ge.with_params(mean_burst=2.0)
    assert ge3.mean_burst_length == 2.0 and ge3.mean_flip_rate == pytest.approx(0.05)
    cont = GilbertElliott(0.02, 0.25, continuous=True)
    states = cont.sample_states((20000, 16), random_state=0)
    assert abs(states.mean() - cont.stationary_bad) < 0.01
    assert make_fault("burst", flip_rate=0.05, mean_burst=8.0) == ge


# ---------------------------------------------------------------- stuck-at
def test_stuck_at_fixed_lines_exact():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 2, (100, 10)).astype(np.uint8)
    out = StuckAt(stuck0=[1, 4], stuck1=[7]).apply(x)
    assert np.all(out[:, [1, 4]] == 0) and np.all(out[:, 7] == 1)
    other = np.setdiff1d(np.arange(10), [1, 4, 7])
    assert np.array_equal(out[:, other], x[:, other])
    with pytest.raises(ValueError, match="stuck line 12 is out of range: rows have 10 bits"):
        StuckAt(stuck1=[12]).apply(x)
    with pytest.raises(ValueError, match="cannot be stuck at 0 and at 1"):
        StuckAt(stuck0=[2], stuck1=[2])


@pytest.mark.parametrize("value, expected", [(1, 0.3), (0, 0.0), (None, 0.15)])
def test_stuck_at_random_lines_rate(value, expected):
    x = np.zeros((400, 250), np.uint8)
    out = StuckAt(rate=0.3, value=value).apply(x, random_state=5)
    assert _within(int(out.sum()), x.size, expected)


def test_stuck_sensor_equals_constant_feature_on_device():
    dev = ProtectedNBDevice.from_arrays([5, -3, 4, 2], -3, [1, 0, 2, 1])
    rng = np.random.default_rng(1)
    X = rng.integers(0, 2, (64, 4)).astype(np.uint8)
    lines = feature_lines(dev.copies, [2])
    assert lines.tolist() == [4, 5, 6, 7, 8]
    got = dev.predict_bits(StuckAt(stuck1=lines).apply(dev.transmit(X)))
    X1 = X.copy()
    X1[:, 2] = 1
    assert np.array_equal(got, dev.predict(X1))
    # one stuck copy out of five never changes the majority on a clean channel
    assert np.array_equal(dev.predict_bits(StuckAt(stuck0=[4]).apply(dev.transmit(X))),
                          dev.predict(X))


# ---------------------------------------------------------------- parameter upsets
def _container():
    arrays = {"w": np.arange(-8, 8, dtype=np.int32), "codes": np.zeros(12, np.uint8)}
    return read_container(write_container(None, "ssbc", arrays, meta={"note": "x"}))


def _bit_diff(a, b):
    return int(np.unpackbits(np.frombuffer(a.tobytes(), np.uint8)
                             ^ np.frombuffer(b.tobytes(), np.uint8)).sum())


@pytest.mark.parametrize("count", [0, 1, 3, 17])
def test_parameter_upset_count_is_exact(count):
    c = _container()
    out = ParameterUpset(count=count).apply_container(c, np.random.default_rng(count))
    flipped = sum(_bit_diff(c.arrays[k], out.arrays[k]) for k in c.arrays)
    assert flipped == count
    assert out.meta == c.meta and out.nbytes == c.nbytes   # same layout, valid CRC


def test_parameter_upset_rate_and_target_arrays():
    c = _container()
    rng = np.random.default_rng(0)
    fault = ParameterUpset(rate=0.05, arrays=["codes"])
    assert fault.targeted_bits(c) == 96
    total = 0
    for _ in range(400):
        out = fault.apply_container(c, rng)
        assert np.array_equal(out.arrays["w"], c.arrays["w"])
        total += _bit_diff(c.arrays["codes"], out.arrays["codes"])
    assert _within(total, 400 * 96, 0.05)
    with pytest.raises(ValueError, match=r"arrays \['nope'\] are not in the ssbc container"):
        ParameterUpset(count=1, arrays=["nope"]).apply_container(c, rng)
    with pytest.raises(ValueError, match="give exactly one of rate"):
        ParameterUpset()


def test_checked_upset_is_refused_by_the_crc():
    c = _container()
    rng = np.random.default_rng(0)
    for _ in range(50):
        with pytest.raises(ContainerError):
            ParameterUpset(count=1, checked=True).apply_container(c, rng)
    assert ParameterUpset(count=0, checked=True).apply_container(c, rng).nbytes == c.nbytes


def test_upset_bytes_range_and_count():
    raw = bytes(64)
    out = upset_bytes(raw, 0, count=10, start=16, stop=32)
    diff = np.frombuffer(out, np.uint8)
    assert np.unpackbits(diff).sum() == 10
    assert not diff[:16].any() and not diff[32:].any()
    with pytest.raises(ValueError, match="outside"):
        upset_bytes(raw, 0, count=1, start=10, stop=100)
    with pytest.raises(ValueError, match="count 200 exceeds the 128 bits"):
        upset_bytes(raw, 0, count=200, start=0, stop=16)


# ---------------------------------------------------------------- composition, order
def test_compose_applies_in_order_and_routes_params():
    f = Compose([BSC(1.0), StuckAt(stuck0=[0])])
    assert f.apply([[0, 0, 0]]).tolist() == [[0, 1, 1]]
    g = Compose([StuckAt(stuck0=[0]), BSC(1.0)])
    assert g.apply([[0, 0, 0]]).tolist() == [[1, 1, 1]]
    assert f.with_params(eps=0.0).apply([[0, 0, 0]]).tolist() == [[0, 0, 0]]
    assert f.with_params(**{"1.rate": 0.5}).faults[1].rate == 0.5
    two = Compose([BSC(0.1), BSC(0.2)])
    with pytest.raises(ValueError, match="names 2 member faults"):
        two.with_params(eps=0.3)
    mixed = Compose([BSC(0.1), ParameterUpset(count=1)])
    assert mixed.target == "mixed" and len(mixed.bit_faults) == 1
    with pytest.raises(TypeError, match="acts on container images"):
        ParameterUpset(count=1).apply([[0, 1]])


def test_compose_of_independent_noise_matches_closed_form():
    f = Compose([BSC(0.1), BSC(0.2)])             # 0.1 + 0.2 - 2 * 0.02 = 0.26
    out = f.apply(np.zeros((500, 200), np.uint8), random_state=0)
    assert _within(int(out.sum()), out.size, 0.26)


def test_interleave_spreads_a_burst_over_features():
    copies = np.array([3, 3, 3, 3])
    order = copy_major_order(copies)
    assert order.tolist() == [0, 3, 6, 9, 1, 4, 7, 10, 2, 5, 8, 11]
    burst = StuckAt(stuck1=[0, 1, 2])                   # three adjacent wire bits
    x = np.zeros((1, 12), np.uint8)
    assert burst.apply(x)[0].tolist()[:3] == [1, 1, 1]  # all copies of feature 0
    inter = Interleave(burst, order).apply(x)[0]
    assert np.flatnonzero(inter).tolist() == [0, 3, 6]   # one copy each of features 0-2
    with pytest.raises(ValueError, match="permutation"):
        Interleave(BSC(0.1), [0, 0, 1])


# ---------------------------------------------------------------- reproducibility
@pytest.mark.parametrize("fault", [
    BSC(0.05), BSC(np.linspace(0, 0.3, 30)), GilbertElliott(0.05, 0.3),
    GilbertElliott(0.05, 0.3, continuous=True), StuckAt(rate=0.1),
    Compose([GilbertElliott(0.02, 0.5), StuckAt(stuck1=[3], rate=0.01, value=0)]),
    Interleave(GilbertElliott(0.05, 0.3), np.arange(30)[::-1]),
])
def test_same_seed_same_faults(fault):
    x = np.random.default_rng(0).integers(0, 2, (300, 30)).astype(np.uint8)
    a = fault.apply(x, random_state=11)
    b = fault.apply(x, random_state=11)
    c = fault.apply(x, random_state=12)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)
    assert np.array_equal(fault.apply(x.astype(bool), np.random.default_rng(11)), a)


def test_upsets_same_seed_same_image():
    c = _container()
    f = ParameterUpset(rate=0.02)
    a = f.apply_container(c, np.random.default_rng(4)).tobytes()
    assert a == f.apply_container(c, np.random.default_rng(4)).tobytes()
    assert upset_bytes(b"abcdef", 1, rate=0.2) == upset_bytes(b"abcdef", 1, rate=0.2)


def test_fault_descriptions_round_trip():
    for f in (BSC(0.1), GilbertElliott(0.01, 0.2), StuckAt(stuck1=[1], rate=0.1, value=1),
              ParameterUpset(count=2, arrays=["w"])):
        d = f.to_dict()
        rebuilt = make_fault(d.pop("model"), **d)
        assert rebuilt == f
    with pytest.raises(ValueError, match="unknown fault model 'laser'"):
        make_fault("laser")


def test_make_fault_names_unknown_parameters_and_what_is_accepted():
    from firmware_sim.faults import make_fault
    with pytest.raises(ValueError, match=r"burst: unknown parameter\(s\) \['rate'\]; "
                                         r"accepted: .*flip_rate"):
        make_fault("burst", rate=0.1)
    with pytest.raises(ValueError, match=r"bsc: unknown parameter\(s\) \['p'\]; accepted: \['eps'\]"):
        make_fault("bsc", p=0.1)
    assert make_fault("bsc", flip_rate=0.2).eps == 0.2
