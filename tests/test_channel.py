"""Binary symmetric channel: flip rates against the binomial law, independence,
per-bit eps (grouped and banded paths), seeding and input validation."""

import math

import numpy as np
import pytest

from firmware_sim.channel import MAX_EPS_GROUPS, bsc, check_random_state
from naive_firmware import binomial_ok, naive_bsc


@pytest.mark.parametrize("eps", [1e-4, 0.01, 0.2, 0.5, 0.9])
def test_flip_rate_matches_binomial(eps):
    x = np.zeros((400, 1000), dtype=np.uint8)
    y = bsc(x, eps, random_state=1)
    assert binomial_ok(int(y.sum()), x.size, eps)


def test_flips_are_xor_on_ones_and_zeros():
    rng = np.random.default_rng(3)
    x = rng.integers(0, 2, size=(300, 200), dtype=np.uint8)
    y = bsc(x, 0.1, random_state=4)
    flips = x ^ y
    assert binomial_ok(int(flips[x == 1].sum()), int((x == 1).sum()), 0.1)
    assert binomial_ok(int(flips[x == 0].sum()), int((x == 0).sum()), 0.1)


def test_eps_zero_never_flips_and_one_always_flips():
    x = np.random.default_rng(0).integers(0, 2, (50, 64), dtype=np.uint8)
    np.testing.assert_array_equal(bsc(x, 0.0, random_state=0), x)
    np.testing.assert_array_equal(bsc(x, 1.0, random_state=0), 1 - x)
    np.testing.assert_array_equal(bsc(x, np.zeros(64), random_state=0), x)


@pytest.mark.parametrize("per_bit", [False, True])
def test_independence(monkeypatch, per_bit):
    """Flip counts per row are Binomial(L, eps) (mean and variance); adjacent bits,
    rows and blocks (small blocks forced here) are uncorrelated."""
    monkeypatch.setattr("firmware_sim.channel.BLOCK_BITS", 1000)
    eps, rows, length = 0.05, 20000, 64
    e = np.full(length, eps) if per_bit else eps
    flips = bsc(np.zeros((rows, length), np.uint8), e, random_state=11).astype(np.float64)
    per_row = flips.sum(axis=1)
    var = length * eps * (1 - eps)
    assert abs(per_row.mean() - length * eps) < 5 * math.sqrt(var / rows)
    assert abs(per_row.var() / var - 1) < 0.05                   # ~ 5 sd of the variance ratio
    both = int((flips[:, :-1] * flips[:, 1:]).sum())            # adjacent pairs
    assert binomial_ok(both, rows * (length - 1), eps * eps)
    both_rows = int((flips[:-1] * flips[1:]).sum())              # same column, next row
    assert binomial_ok(both_rows, (rows - 1) * length, eps * eps)
    # histogram of per-row counts against the binomial pmf (coarse chi-square)
    counts = np.bincount(per_row.astype(int), minlength=length + 1)
    pmf = np.array([math.comb(length, k) * eps**k * (1 - eps) ** (length - k)
                    for k in range(length + 1)])
    keep = pmf * rows >= 20
    chi2 = (((counts[keep] - rows * pmf[keep]) ** 2) / (rows * pmf[keep])).sum()
    assert chi2 < 3 * keep.sum() + 30


def test_matches_naive_reference_in_distribution():
    eps = np.array([0.0, 0.02, 0.3, 0.3, 0.02, 0.7])
    x = np.zeros((50000, eps.size), np.uint8)
    fast = bsc(x, eps, random_state=0).mean(axis=0)
    slow = naive_bsc(x, eps, np.random.default_rng(0)).mean(axis=0)
    np.testing.assert_allclose(fast, slow, atol=5 * math.sqrt(0.25 * 2 / x.shape[0]))


@pytest.mark.parametrize("n_distinct", [3, MAX_EPS_GROUPS + 9])
def test_per_bit_eps_is_respected(n_distinct):
    """Few distinct values (exact groups) and many (bands with thinning)."""
    rng = np.random.default_rng(5)
    values = np.concatenate([[0.0], np.linspace(0.001, 0.45, n_distinct - 1)])
    eps = rng.permutation(np.resize(values, 40))
    rows = 30000
    flips = bsc(np.zeros((rows, eps.size), np.uint8), eps, random_state=6)
    per_col = flips.sum(axis=0)
    for j, p in enumerate(eps):
        assert binomial_ok(int(per_col[j]), rows, p), (j, p, per_col[j])
    assert per_col[eps == 0].sum() == 0


def test_per_bit_eps_on_last_axis_of_3d_bits():
    eps = np.array([0.0, 0.5, 0.1])
    flips = bsc(np.zeros((200, 100, 3), np.uint8), eps, random_state=2)
    assert flips.shape == (200, 100, 3) and flips[..., 0].sum() == 0
    assert binomial_ok(int(flips[..., 1].sum()), 20000, 0.5)
    assert binomial_ok(int(flips[..., 2].sum()), 20000, 0.1)


def test_reproducible_under_seed_and_generator():
    x = np.zeros((100, 50), np.uint8)
    eps = np.linspace(0, 0.3, 50)
    for e in (0.1, eps):
        a, b = bsc(x, e, random_state=42), bsc(x, e, random_state=42)
        np.testing.assert_array_equal(a, b)
        assert not np.array_equal(a, bsc(x, e, random_state=43))
        g1, g2 = np.random.default_rng(7), np.random.default_rng(7)
        np.testing.assert_array_equal(bsc(x, e, g1), bsc(x, e, g2))
        assert not np.array_equal(bsc(x, e, g1), bsc(x, e, np.random.default_rng(7)))


def test_input_untouched_output_new_uint8():
    x = np.array([[True, False, True]])
    y = bsc(x, 1.0)
    assert y.dtype == np.uint8 and y.tolist() == [[0, 1, 0]] and x.tolist() == [[True, False, True]]
    z = np.array([1, 0, 1], dtype=np.uint8)
    bsc(z, 0.5, random_state=0)
    assert z.tolist() == [1, 0, 1]
    assert bsc(np.array(1), 1.0).tolist() == 0                  # 0-d
    assert bsc(np.zeros((0, 4)), 0.3, random_state=0).shape == (0, 4)


@pytest.mark.parametrize("bits, eps, exc, match", [
    ([0, 2, 1], 0.1, ValueError, r"bits\[1\] must be 0 or 1"),
    ([0.5], 0.1, ValueError, r"bits\[0\] must be 0 or 1"),
    (["a"], 0.1, TypeError, "bits must hold 0/1 numbers"),
    ([0, 1], -0.1, ValueError, r"eps must be in \[0, 1\]; got -0.1"),
    ([0, 1], 1.5, ValueError, r"eps must be in \[0, 1\]"),
    ([0, 1], float("nan"), ValueError, r"eps must be in \[0, 1\]"),
    ([0, 1], [0.1, 1.2], ValueError, r"eps\[1\] must be in \[0, 1\]; got 1.2"),
    ([0, 1], [0.1, 0.2, 0.3], ValueError, r"shape \(2,\), one per bit"),
    ([0, 1], np.full((2, 2), 0.1), ValueError, r"shape \(2,\)"),
    ([0, 1], True, TypeError, "eps must be a number"),
    ([0, 1], ["x", "y"], TypeError, "eps must hold real numbers"),
])
def test_validation(bits, eps, exc, match):
    with pytest.raises(exc, match=match):
        bsc(bits, eps, random_state=0)


def test_random_state_validation():
    with pytest.raises(TypeError, match="random_state must be"):
        bsc([0, 1], 0.1, random_state="seed")
    with pytest.raises(ValueError, match="non-negative"):
        check_random_state(-1)
    assert isinstance(check_random_state(None), np.random.Generator)
