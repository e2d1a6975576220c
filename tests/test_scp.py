"""edgecode.scp against slow references (tests/naive.py)."""

from contextlib import contextmanager

import numba
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from numpy.testing import assert_allclose, assert_array_equal
from scipy.stats import binom

from edgecode._config import SCP_EXACT_MAX_FEATURES
from edgecode.datasets import load_house_votes
from edgecode.scp import (MonteCarloSCP, scp_approx, scp_bounds, scp_exact,
                          scp_monte_carlo)

from naive import scp_approx_bruteforce, scp_bruteforce


# ---------------------------------------------------------------- fixtures

def nb_margins_deltas(X, y, alpha=1.0):
    """Laplace-smoothed (alpha=1) Bernoulli naive Bayes, written out here.

    w_j(v) = log P(X_j=v|C=1)/P(X_j=v|C=0), b = log P(C=1)/P(C=0),
    S = b + sum_j w_j(x_j), D_j = w_j(1 - x_j) - w_j(x_j).
    """
    X = X.astype(float)
    p1 = (X[y == 1].sum(0) + alpha) / ((y == 1).sum() + 2 * alpha)
    p0 = (X[y == 0].sum(0) + alpha) / ((y == 0).sum() + 2 * alpha)
    w = np.stack([np.log((1 - p1) / (1 - p0)), np.log(p1 / p0)])   # w[v, j]
    b = np.log((y == 1).mean() / (y == 0).mean())
    cols = np.arange(X.shape[1])
    xi = X.astype(int)
    S = b + w[xi, cols].sum(1)
    D = w[1 - xi, cols] - w[xi, cols]
    return S, D


@pytest.fixture(scope="module")
def house():
    d = load_house_votes()
    return nb_margins_deltas(d.X, d.y)


def random_case(seed, n, t=4):
    """Random margins/deltas with the awkward cases mixed in."""
    rng = np.random.default_rng(seed)
    kind = seed % 4
    if kind == 0:                         # continuous
        m = rng.normal(size=t) * 2
        d = rng.normal(size=(t, n))
    elif kind == 1:                       # small integers: exact ties
        m = rng.integers(-3, 4, t).astype(float)
        d = rng.integers(-3, 4, (t, n)).astype(float)
    elif kind == 2:                       # dyadic with zero deltas and S = 0
        m = rng.integers(-8, 9, t) / 4.0
        d = rng.integers(-8, 9, (t, n)) / 8.0
        d[:, ::3] = 0.0
        m[0] = 0.0
    else:                                 # wide dynamic range
        m = rng.normal(size=t) * 10
        d = rng.normal(size=(t, n)) * 10.0 ** rng.integers(-3, 2, (t, n))
    if seed % 5 == 0:
        eps = float(rng.uniform(0, 0.5))
    else:
        eps = rng.uniform(0, 0.5, n)
        eps[rng.random(n) < 0.2] = 0.0    # features that never flip
    return m, d, eps


CASES = [(seed, n) for n in range(0, 17) for seed in range(4 if n < 13 else 2)]


@contextmanager
def numba_threads(k):
    """Run the block with numba's thread count set to k (restored after)."""
    old = numba.get_num_threads()
    numba.set_num_threads(k)
    try:
        yield
    finally:
        numba.set_num_threads(old)


needs_two_threads = pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2,
                                       reason="numba has a single thread here")


def nb_like_case(n, t, seed, eps_scale=1.0):
    """Naive-Bayes-like margins and flip effects at large n: D_j = +-c_j with
    c_j of a few tenths, margins spread around the class boundary."""
    rng = np.random.default_rng(seed)
    c = np.abs(rng.normal(0.0, 0.3, n)) + 0.01
    d = c * np.where(rng.random((t, n)) < 0.5, 1.0, -1.0)
    m = rng.normal(0.0, 2.0, t) - 0.2 * d.sum(1) * eps_scale
    return m, d


# ---------------------------------------------------------------- scp_exact

@pytest.mark.parametrize("seed, n", CASES)
def test_exact_matches_bruteforce(seed, n):
    m, d, eps = random_case(seed + 100 * n, n)
    assert_allclose(scp_exact(m, d, eps), scp_bruteforce(m, d, eps), rtol=1e-12, atol=0)
    assert_allclose(scp_exact(m, d, eps, return_change=True),
                    scp_bruteforce(m, d, eps, return_change=True), rtol=1e-12, atol=1e-300)


@given(st.lists(st.integers(-4, 4), min_size=0, max_size=10), st.integers(-4, 4),
       st.sampled_from([0.0, 0.01, 0.25, 0.4999]))
@settings(max_examples=150, deadline=None)
def test_exact_ties_decided_as_defined(ds, s, eps):
    """Integer data: S + sum == 0 happens and must be class 0 on both sides."""
    m = np.array([float(s)])
    d = np.array([ds], float).reshape(1, -1)
    assert_allclose(scp_exact(m, d, eps, return_change=True),
                    scp_bruteforce(m, d, eps, return_change=True), rtol=1e-12, atol=1e-300)


def test_exact_literal_cases():
    # S = 1, D = (-1): the flip gives exactly 0 -> class 0 -> changed
    assert_allclose(scp_exact([1.0], [[-1.0]], 0.1), [0.9])
    # S = 0 is class 0; D = (+1) makes it 1 -> changed; D = (-1) keeps it
    assert_allclose(scp_exact([0.0, 0.0], [[1.0], [-1.0]], 0.3), [0.7, 1.0])
    # n = 0, eps = 0, zero deltas: nothing can change
    assert_array_equal(scp_exact([0.5, -2.0], np.empty((2, 0)), 0.2), [1.0, 1.0])
    assert_array_equal(scp_exact([0.5], [[-3.0, -4.0]], 0.0), [1.0])
    assert_array_equal(scp_exact([0.5], [[0.0, 0.0]], 0.4), [1.0])
    # t = 0
    assert scp_exact(np.empty(0), np.empty((0, 3)), 0.1).shape == (0,)
    # per-feature eps, the paper's n = 3 example: only {1, 2} and {1, 2, 3} change
    e = np.array([0.1, 0.2, 0.3])
    got = scp_exact([1.0], [[-0.75, -0.5, 0.125]], e, return_change=True)
    assert_allclose(got, [0.1 * 0.2 * 0.7 + 0.1 * 0.2 * 0.3], rtol=1e-14)


@pytest.mark.parametrize("eps", [1e-2, 0.2])
def test_exact_house_votes(house, eps):
    S, D = house
    ex = scp_exact(S, D, eps)
    sel = np.r_[0:435:11]                      # 40 points against 2**16 brute force
    assert_allclose(ex[sel], scp_bruteforce(S[sel], D[sel], eps), rtol=1e-12)
    assert_allclose(scp_exact(S[sel], D[sel], eps, return_change=True),
                    scp_bruteforce(S[sel], D[sel], eps, return_change=True), rtol=1e-11)
    assert np.all((ex > 0) & (ex <= 1))


def test_exact_per_feature_eps_house_votes(house):
    S, D = house
    eps = np.linspace(0.0, 0.45, 16)
    sel = np.r_[3:435:29]
    assert_allclose(scp_exact(S[sel], D[sel], eps), scp_bruteforce(S[sel], D[sel], eps),
                    rtol=1e-12)


def test_exact_refuses_too_many_features():
    n = SCP_EXACT_MAX_FEATURES + 1
    with pytest.raises(ValueError, match=r"n=49 features.*GiB.*scp_bounds"):
        scp_exact([1.0], np.ones((1, n)), 0.1)


@needs_two_threads
def test_exact_same_for_any_thread_count(house):
    """Points run in parallel chunks; each result depends on its point alone."""
    S, D = house
    rng = np.random.default_rng(11)
    m, d = rng.normal(size=131) * 3, rng.normal(size=(131, 17))    # uneven chunks
    eps = rng.uniform(0, 0.45, 17)
    out = {}
    for k in (1, 2):
        with numba_threads(k):
            out[k] = (scp_exact(S, D, 0.2, return_change=True),
                      scp_exact(m, d, eps, return_change=True), scp_exact(S[:3], D[:3], 0.1))
    for a, b in zip(out[1], out[2]):
        assert_array_equal(a, b)
    assert_allclose(out[1][1][:4], scp_bruteforce(m[:4], d[:4], eps, return_change=True),
                    rtol=1e-12)
    # one point per call runs on the calling thread: same bits as in the batch
    for p in range(0, 435, 37):
        assert scp_exact(S[p:p + 1], D[p:p + 1], 0.2, return_change=True)[0] == out[1][0][p]


def test_exact_repeated_halves_and_points_share_work_exactly():
    """Points with an identical half (after the sign of S is folded in) reuse
    its sorted subset sums, identical points reuse the result: every value must
    equal, bit for bit, the point computed alone, and brute force."""
    rng = np.random.default_rng(12)
    n = 12
    base = rng.normal(size=(6, n))
    rows, margins = [], []
    for _ in range(60):
        a, b = rng.integers(0, 6, 2)
        d = np.r_[base[a, :n // 2], base[b, n // 2:]]
        s = float(rng.choice([-1.5, -0.5, 0.0, 0.5, 1.5]))
        if rng.random() < 0.5:                 # -D with -S: same half after folding
            d, s = -d, -s
        rows.append(d)
        margins.append(s)
    m, D = np.array(margins), np.array(rows)
    D[rng.random(D.shape) < 0.05] = 0.0        # inactive features shift the halves
    for eps in (0.2, np.r_[rng.uniform(0, 0.5, n - 2), 0.0, 0.3]):
        batch = scp_exact(m, D, eps, return_change=True)
        alone = np.array([scp_exact(m[i:i + 1], D[i:i + 1], eps, return_change=True)[0]
                          for i in range(len(m))])
        assert_array_equal(batch, alone)
        assert_allclose(batch, scp_bruteforce(m, D, eps, return_change=True), rtol=1e-12,
                        atol=1e-300)
        perm = rng.permutation(len(m))
        assert_array_equal(scp_exact(m[perm], D[perm], eps, return_change=True), batch[perm])


def test_exact_at_the_feature_limit():
    """n = 48 (2**24 subset sums per half) against a larger-n cross-check: the
    bounds, which never enumerate."""
    rng = np.random.default_rng(48)
    d = rng.normal(size=(1, 48)) * rng.uniform(0.2, 1.0, 48)
    m = np.array([0.7])
    ex = scp_exact(m, d, 0.2)
    for rounding in ("directed", "nearest", "auto"):
        lo, up = scp_bounds(m, d, 0.2, rounding=rounding)
        assert lo[0] <= ex[0] <= up[0]
        assert up[0] - lo[0] < 5e-3


# ---------------------------------------------------------------- scp_bounds

@pytest.mark.parametrize("seed, n", CASES[::2])
def test_bounds_contain_exact(seed, n):
    case = seed + 7 + 100 * n
    m, d, eps = random_case(case, n)
    lo, up = scp_bounds(m, d, eps)
    ex = scp_bruteforce(m, d, eps)
    assert np.all(lo <= ex) and np.all(ex <= up)
    assert np.all((0 <= lo) & (up <= 1))
    if case % 4 in (1, 2):     # grid multiples: exact up to the certified float margin
        assert_allclose(lo, ex, rtol=0, atol=1e-10)
        assert_allclose(up, ex, rtol=0, atol=1e-10)


@pytest.mark.parametrize("resolution", [1, 3, 64])
def test_bounds_contain_exact_at_coarse_resolution(house, resolution):
    S, D = house
    ex = scp_exact(S, D, 0.2)
    lo, up = scp_bounds(S, D, 0.2, resolution=resolution)
    assert np.all(lo <= ex) and np.all(ex <= up)


@pytest.mark.parametrize("eps", [1e-2, 0.2])
def test_bounds_house_votes_tight(house, eps):
    S, D = house
    ex = scp_exact(S, D, eps)
    lo, up = scp_bounds(S, D, eps)
    assert np.all(lo <= ex) and np.all(ex <= up)
    assert (up - lo).max() < 1e-3


def test_bounds_contain_exact_n40():
    """Larger n, where the Bernstein retirement and trimming are active."""
    rng = np.random.default_rng(5)
    d = rng.normal(size=(4, 40)) * rng.uniform(0.1, 2, 40)
    m = np.array([0.3, -2.0, 8.0, -15.0])
    for eps in (0.01, rng.uniform(0, 0.49, 40)):
        ex = scp_exact(m, d, eps)
        lo, up = scp_bounds(m, d, eps)
        assert np.all(lo <= ex) and np.all(ex <= up)
        assert (up - lo).max() < 1e-2


def test_bounds_large_n_runs_and_is_consistent():
    rng = np.random.default_rng(6)
    d = rng.normal(size=(2, 1000))
    m = np.array([1.0, 60.0])
    lo, up = scp_bounds(m, d, 0.01)
    assert np.all(lo <= up) and np.all(up - lo < 0.05)
    mc = scp_monte_carlo(m, d, 0.01, n_trials=4000, random_state=0, confidence=0.999)
    assert np.all(mc.upper >= lo) and np.all(mc.lower <= up)


def test_bounds_nothing_can_change():
    for rounding in ("auto", "directed", "nearest"):
        lo, up = scp_bounds([1.0, 0.0], [[0.0, 5.0], [0.0, 0.0]], [0.3, 0.0], rounding=rounding)
        assert_array_equal(lo, [1.0, 1.0])
        assert_array_equal(up, [1.0, 1.0])


ROUNDINGS = ["auto", "directed", "nearest"]


def _bounds_case(rng, n, kind, eps_kind, t=3):
    """Margins, deltas and eps for the bounds property tests."""
    if kind == "int":                     # integers: S + sum == 0 happens (ties)
        m = rng.integers(-4, 5, t).astype(float)
        d = rng.integers(-4, 5, (t, n)).astype(float)
    elif kind == "half":                  # half-integers: q_j = k + 1/2 on a unit grid
        m = rng.integers(-6, 7, t) / 2.0
        d = (2 * rng.integers(-3, 3, (t, n)) + 1) / 2.0
    elif kind == "dyadic":                # fine binary grid, zeros and S = 0 mixed in
        m = rng.integers(-64, 65, t) / 32.0
        d = rng.integers(-64, 65, (t, n)) / 64.0
        d[:, ::4] = 0.0
        m[0] = 0.0
    elif kind == "continuous":
        m = rng.normal(size=t) * 2
        d = rng.normal(size=(t, n))
    else:                                 # wide dynamic range
        m = rng.normal(size=t) * 5
        d = rng.normal(size=(t, n)) * 10.0 ** rng.integers(-6, 3, (t, n))
    if eps_kind == "tiny":
        eps = 10.0 ** rng.uniform(-12, -3, n)
    elif eps_kind == "near_half":
        eps = 0.5 - 10.0 ** rng.uniform(-12, -2, n)
    elif eps_kind == "mixed":
        eps = rng.uniform(0, 0.5, n)
        eps[rng.random(n) < 0.2] = 0.0
    else:
        eps = float(rng.uniform(0, 0.5))
    return m, d, eps


@given(seed=st.integers(0, 2 ** 32 - 1), n=st.integers(0, 12),
       kind=st.sampled_from(["int", "half", "dyadic", "continuous", "wide"]),
       eps_kind=st.sampled_from(["tiny", "near_half", "mixed", "scalar"]),
       rounding=st.sampled_from(ROUNDINGS), resolution=st.sampled_from([1, 2, 5, 64, 2 ** 15]))
@settings(max_examples=300, deadline=None)
def test_bounds_contain_bruteforce_property(seed, n, kind, eps_kind, rounding, resolution):
    """Every rounding, every grid: lower <= SCP <= upper against 2**n enumeration,
    with ties (integer and half-integer data), eps near 0 and near 1/2."""
    m, d, eps = _bounds_case(np.random.default_rng(seed), n, kind, eps_kind)
    lo, up = scp_bounds(m, d, eps, resolution, rounding=rounding)
    ex = scp_bruteforce(m, d, eps)
    # the bounds hold for the real-arithmetic SCP; the float reference is off by
    # a few ulps (seen: 3.5e-16 against exact rational arithmetic when a bound
    # is tight), so it gets 1e-14 of slack
    assert np.all(lo <= ex + 1e-14) and np.all(ex <= up + 1e-14)
    assert np.all((0 <= lo) & (lo <= up) & (up <= 1))


@pytest.mark.parametrize("n", [20, 30, 38, 44])
def test_bounds_contain_exact_up_to_44(n):
    """Meet-in-the-middle references at n where nearest rounding matters
    (n = 48 is in test_exact_at_the_feature_limit)."""
    rng = np.random.default_rng(n)
    m, d = nb_like_case(n, 3, seed=n)
    for eps in (0.2, 1e-3, 0.4999, rng.uniform(0, 0.5, n)):
        ex = scp_exact(m, d, eps)
        for rounding in ROUNDINGS:
            for res in (16, 2 ** 15):
                lo, up = scp_bounds(m, d, eps, res, rounding=rounding)
                assert np.all(lo <= ex) and np.all(ex <= up), (eps, res, rounding)


def test_bounds_nearest_on_grid_aligned_ties():
    """Half-integer deltas on a coarse grid: every residual is +-1/2 and
    S + sum D == 0 happens; integer deltas: all residuals 0 (directed is used)."""
    rng = np.random.default_rng(7)
    for _ in range(20):
        n = int(rng.integers(1, 16))
        m = rng.integers(-6, 7, 4) / 2.0
        d = (2 * rng.integers(-3, 3, (4, n)) + 1) / 2.0
        eps = float(rng.choice([1e-6, 0.1, 0.3, 0.49]))
        ex = scp_exact(m, d, eps)
        for res in (1, 2, 4, 2 ** 15):
            lo, up = scp_bounds(m, d, eps, res, rounding="nearest")
            assert np.all(lo <= ex) and np.all(ex <= up)
        mi, di = 2 * m, 2 * d                       # integers: exact ties
        exi = scp_exact(mi, di, eps)
        lo, up = scp_bounds(mi, di, eps, rounding="nearest")
        assert_allclose(lo, exi, rtol=0, atol=1e-10)
        assert_allclose(up, exi, rtol=0, atol=1e-10)


def _two_value_case(n, seed, zs=(-1.0, -0.3, 0.0, 0.4, 1.2, 3.0)):
    """n features with D_j in {a, -b} (irrational-looking a, b, so no grid step
    makes them integers): the flip sum is k1 a - k2 b and the SCP is a double
    sum of binomial probabilities, exact at any n.  S is put in the bulk of
    the flip-sum law and far (> 1e-6) from every reachable k1 a - k2 b, so the
    float evaluation order cannot matter."""
    rng = np.random.default_rng(seed)
    a, b = 0.3 + rng.uniform(0, 0.01) * np.sqrt(2), 0.7 + rng.uniform(0, 0.01) * np.sqrt(3)
    n1 = n // 3
    d = np.r_[np.full(n1, a), np.full(n - n1, -b)]
    eps = 0.2
    k1, k2 = np.arange(n1 + 1), np.arange(n - n1 + 1)
    sums = k1[:, None] * a - k2[None, :] * b
    prob = binom.pmf(k1, n1, eps)[:, None] * binom.pmf(k2, n - n1, eps)[None, :]
    mean = eps * (n1 * a - (n - n1) * b)
    sd = np.sqrt(eps * (1 - eps) * (n1 * a * a + (n - n1) * b * b))
    margins, scps = [], []
    for z in zs:
        s = -(mean + z * sd)
        while np.abs(s + sums).min() < 1e-6:
            s += 1e-4
        for sign in (1.0, -1.0):          # both classes (S > 0 and S < 0)
            ss = s if sign > 0 else -s
            dd = d if sign > 0 else -d
            keep = (ss + (sums if sign > 0 else -sums) > 0) == (ss > 0)
            margins.append((ss, dd))
            scps.append(prob[keep].sum())
    m = np.array([x[0] for x in margins])
    D = np.stack([x[1] for x in margins])
    return m, D, eps, np.array(scps)


@pytest.mark.parametrize("n", [300, 1000, 4096])
def test_bounds_contain_exact_counting_reference_large_n(n):
    m, d, eps, ref = _two_value_case(n, seed=n, zs=(-0.3, 0.4, 3.0) if n > 1000 else
                                     (-1.0, -0.3, 0.0, 0.4, 1.2, 3.0))
    for rounding in ROUNDINGS:
        lo, up = scp_bounds(m, d, eps, rounding=rounding)
        assert np.all(lo <= ref + 1e-12) and np.all(ref <= up + 1e-12), rounding
        # directed rounding errs by up to one grid step per flipped feature
        assert np.all(up - lo < (0.25 if rounding == "directed" else 0.03)), rounding


def test_bounds_large_n_monte_carlo():
    m, d = nb_like_case(4096, 3, seed=4096)
    lo, up = scp_bounds(m, d, 0.2)
    assert np.all(lo <= up) and np.all(up - lo < 0.05)
    mc = scp_monte_carlo(m, d, 0.2, n_trials=4000, random_state=0, confidence=0.999)
    assert np.all(mc.upper >= lo) and np.all(mc.lower <= up)


def test_bounds_nearest_tighter_at_large_n():
    """The directed gap grows like the number of flips, the nearest one like
    its square root: at n = 1024, eps = 0.2, auto is several times tighter."""
    m, d = nb_like_case(1024, 4, seed=1)
    lo_d, up_d = scp_bounds(m, d, 0.2, rounding="directed")
    lo_a, up_a = scp_bounds(m, d, 0.2)
    assert (up_a - lo_a).mean() < 0.5 * (up_d - lo_d).mean()
    # both certified: their intersection is non-empty
    assert np.all(np.maximum(lo_a, lo_d) <= np.minimum(up_a, up_d))


@needs_two_threads
def test_bounds_same_for_any_thread_count(house):
    S, D = house
    m, d = nb_like_case(300, 70, seed=3)
    out = {}
    for k in (1, 2):
        with numba_threads(k):
            out[k] = scp_bounds(S, D, 0.2) + scp_bounds(m, d, 0.2, 4096)
    for a, b in zip(out[1], out[2]):
        assert_array_equal(a, b)
    for p in (0, 17, 69):                       # one point: the calling thread's path
        lo, up = scp_bounds(m[p:p + 1], d[p:p + 1], 0.2, 4096)
        assert lo[0] == out[1][2][p] and up[0] == out[1][3][p]


# ---------------------------------------------------------------- scp_approx

@pytest.mark.parametrize("seed, n", [(s, n) for n in (0, 1, 2, 3, 5, 8) for s in range(4)])
@pytest.mark.parametrize("k, shift, hybrid", [(1, False, 0), (2, True, 0), (3, False, 1),
                                              (3, True, 0), (7, True, 2), (50, False, 0),
                                              (50, True, 1)])
def test_approx_matches_algorithm1_by_enumeration(seed, n, k, shift, hybrid):
    m, d, eps = random_case(seed + 1000 * n, n, t=3)
    assert_allclose(scp_approx(m, d, eps, k=k, shift=shift, hybrid=hybrid),
                    scp_approx_bruteforce(m, d, eps, k, shift, hybrid), rtol=1e-12, atol=1e-15)


def test_approx_worked_example():
    # S = 2, D = (-3, -1, 2), k = 3: width 2.5, centres -3, -0.5, 2.  Without
    # the shift the set {1, 2, 3} (true sum 0 -> class 0, changed) is judged
    # 2 - 1.5 = 0.5 > 0 (kept): change = e(1-e)^2 + e^2(1-e) = 0.09 at e = 0.1.
    m, d = [2.0], [[-3.0, -1.0, 2.0]]
    assert_allclose(scp_approx(m, d, 0.1, k=3, shift=False, return_change=True), [0.09])
    assert_allclose(scp_exact(m, d, 0.1, return_change=True), [0.091])
    # shifted: T = -2 is an edge, centres -3.25, -0.75, 1.75; all sets right
    assert_allclose(scp_approx(m, d, 0.1, k=3, shift=True, return_change=True), [0.091])
    # hybrid = 3 = n: exact
    assert_allclose(scp_approx(m, d, 0.1, k=3, shift=False, hybrid=3), [0.909])


def test_approx_degenerate_buckets():
    # D_I == 0: quantisation is exact whatever k
    m, d = [1.0, -0.5], [[-0.75, -0.75, -0.75], [0.25, 0.25, 0.25]]
    for k in (1, 2, 50):
        assert_allclose(scp_approx(m, d, 0.2, k=k), scp_exact(m, d, 0.2), rtol=1e-14)
    # k == 1: every D_j becomes the midpoint (D_min + D_max) / 2 = -0.5
    m, d = [0.75], [[-1.0, 0.0]]
    # flips: one -> 0.25 kept, two -> -0.25 changed: change = e^2
    assert_allclose(scp_approx(m, d, 0.1, k=1, return_change=True), [0.01])
    # n = 1
    assert_allclose(scp_approx([0.5], [[-1.0]], 0.25), [0.75])
    assert_array_equal(scp_approx([0.5], np.empty((1, 0)), 0.25), [1.0])


def test_approx_large_k_close_to_exact(house):
    S, D = house
    for eps in (1e-2, 0.2):
        ex = scp_exact(S, D, eps)
        assert np.abs(scp_approx(S, D, eps, k=50) - ex).max() < 0.05
        assert np.abs(scp_approx(S, D, eps, k=2000) - ex).max() < 2e-3


def test_approx_shift_makes_single_flips_exact(house):
    """Improvement 1: error O(eps^2) instead of O(eps)."""
    S, D = house
    eps = 1e-5
    ex = scp_exact(S, D, eps)
    err_shift = np.abs(scp_approx(S, D, eps, k=5, shift=True) - ex).max()
    err_plain = np.abs(scp_approx(S, D, eps, k=5, shift=False) - ex).max()
    assert err_shift < 50 * eps ** 2          # 120 pairs, each eps^2
    assert err_plain > 1e-2 * eps             # a single flip misjudged somewhere


def test_approx_hybrid_n_is_exact(house):
    S, D = house
    sel = np.r_[0:435:37]
    for eps in (1e-2, 0.2):
        assert_allclose(scp_approx(S[sel], D[sel], eps, k=3, hybrid=16),
                        scp_exact(S[sel], D[sel], eps), rtol=1e-12)
        # hybrid = 2: sets of size <= 2 exact, error O(eps^3)
    err = np.abs(scp_approx(S, D, 1e-4, k=3, hybrid=2) - scp_exact(S, D, 1e-4)).max()
    assert err < 1000 * 1e-4 ** 3


def test_approx_runs_at_large_n():
    rng = np.random.default_rng(3)
    d = rng.normal(size=(1, 400))
    lo, up = scp_bounds([2.0], d, 0.01)
    ap = scp_approx([2.0], d, 0.01)
    assert lo[0] - 0.05 <= ap[0] <= up[0] + 0.05


def test_approx_refuses_huge_coefficient_array():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="SCP_APPROX_MAX_CELLS"):
        scp_approx([1.0], rng.normal(size=(1, 300)), 0.3, k=10 ** 6)


# ---------------------------------------------------------------- Monte Carlo

def test_monte_carlo_covers_exact(house):
    """Exact SCP inside the 99.9% Wilson interval for nearly all points.

    Per point the miss probability is ~1e-3, so ~0.4 misses are expected over
    435 points; we allow 5 (the seed is fixed, so the test is deterministic).
    """
    S, D = house
    for eps in (1e-2, 0.2):
        ex = scp_exact(S, D, eps)
        r = scp_monte_carlo(S, D, eps, n_trials=20000, random_state=1, confidence=0.999)
        assert isinstance(r, MonteCarloSCP)
        miss = (ex < r.lower) | (ex > r.upper)
        assert miss.sum() <= 5
        assert np.all((r.lower <= r.estimate) & (r.estimate <= r.upper))
        assert np.abs(r.estimate - ex).max() < 0.02


def test_monte_carlo_reproducible_and_chunked():
    rng = np.random.default_rng(0)
    m, d = rng.normal(size=3), rng.normal(size=(3, 6))
    a = scp_monte_carlo(m, d, 0.2, n_trials=3000, random_state=42)
    b = scp_monte_carlo(m, d, 0.2, n_trials=3000, random_state=42)
    c = scp_monte_carlo(m, d, 0.2, n_trials=3000, random_state=43)
    for x, y in zip(a, b):
        assert_array_equal(x, y)
    assert not np.array_equal(a.estimate, c.estimate)
    g = scp_monte_carlo(m, d, 0.2, n_trials=300, random_state=np.random.default_rng(1))
    assert g.estimate.shape == (3,)
    # eps = 0: nothing flips, estimate exactly 1
    z = scp_monte_carlo(m, d, 0.0, n_trials=50, random_state=0)
    assert_array_equal(z.estimate, 1.0)


def test_monte_carlo_wilson_formula():
    # S = 1, D = (-2): keeps the class iff feature 0 does not flip
    r = scp_monte_carlo([1.0], [[-2.0]], 0.3, n_trials=1000, random_state=0, confidence=0.95)
    p, n, z = r.estimate[0], 1000, 1.959963984540054
    c = (p + z * z / (2 * n)) / (1 + z * z / n)
    h = z / (1 + z * z / n) * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    assert_allclose([r.lower[0], r.upper[0]], [c - h, c + h], rtol=1e-12)


# ---------------------------------------------------------------- bad input

GOOD_M, GOOD_D = np.array([0.5, -0.5]), np.array([[1.0, -2.0], [0.5, 0.5]])
ALL = [scp_exact, scp_approx, scp_bounds, scp_monte_carlo]


@pytest.mark.parametrize("fn", ALL)
@pytest.mark.parametrize("margin, deltas, eps, exc, match", [
    ([np.nan, 0.5], GOOD_D, 0.1, ValueError, r"margin\[0\] must be finite"),
    (GOOD_M, [[1.0, np.inf], [0.5, 0.5]], 0.1, ValueError, r"deltas\[0, 1\] must be finite"),
    (GOOD_M, [1.0, 2.0], 0.1, ValueError, "deltas must be 2-dimensional"),
    ([[0.5]], GOOD_D, 0.1, ValueError, "margin must be 1-dimensional"),
    ([0.5], GOOD_D, 0.1, ValueError, "one row per margin entry"),
    (GOOD_M, GOOD_D, 0.5, ValueError, r"eps must be in \[0, 0.5\)"),
    (GOOD_M, GOOD_D, -0.1, ValueError, r"eps must be in \[0, 0.5\)"),
    (GOOD_M, GOOD_D, [0.1, 0.7], ValueError, r"eps\[1\] must be in \[0, 0.5\)"),
    (GOOD_M, GOOD_D, [0.1, 0.2, 0.3], ValueError, r"eps must be a scalar or have shape \(2,\)"),
    (GOOD_M, GOOD_D, np.nan, ValueError, "eps"),
    (GOOD_M, [["a", "b"], ["c", "d"]], 0.1, TypeError, "deltas must hold numbers"),
])
def test_bad_inputs(fn, margin, deltas, eps, exc, match):
    with pytest.raises(exc, match=match):
        fn(margin, deltas, eps)


def test_bad_parameters():
    with pytest.raises(ValueError, match="k must be >= 1"):
        scp_approx(GOOD_M, GOOD_D, 0.1, k=0)
    with pytest.raises(TypeError, match="k must be an integer"):
        scp_approx(GOOD_M, GOOD_D, 0.1, k=2.5)
    with pytest.raises(ValueError, match="hybrid must be >= 0"):
        scp_approx(GOOD_M, GOOD_D, 0.1, hybrid=-1)
    with pytest.raises(TypeError, match="shift must be True or False"):
        scp_approx(GOOD_M, GOOD_D, 0.1, shift="yes")
    with pytest.raises(ValueError, match="resolution must be >= 1"):
        scp_bounds(GOOD_M, GOOD_D, 0.1, resolution=0)
    with pytest.raises(ValueError, match=r"rounding must be one of \['auto', 'directed', "
                                         r"'nearest'\]; got 'floor'"):
        scp_bounds(GOOD_M, GOOD_D, 0.1, rounding="floor")
    with pytest.raises(ValueError, match="n_trials must be >= 1"):
        scp_monte_carlo(GOOD_M, GOOD_D, 0.1, n_trials=0)
    with pytest.raises(ValueError, match=r"confidence must be a number in \(0, 1\)"):
        scp_monte_carlo(GOOD_M, GOOD_D, 0.1, confidence=1.5)
    with pytest.raises(TypeError, match="return_change must be True or False"):
        scp_exact(GOOD_M, GOOD_D, 0.1, return_change=None)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-5, 5), min_size=0, max_size=300))
def test_order_by_decreasing_magnitude_equals_numpy_stable_argsort(values):
    """The written-out merge sort of the bounds kernel (no numba argsort to compile)."""
    from edgecode.scp._kernels import _order_abs_desc
    v = np.array(values, dtype=np.int64)
    assert np.array_equal(_order_abs_desc(v), np.argsort(-np.abs(v), kind="mergesort"))
