"""Exact Hamming-decoding probabilities (edgecode.ecoc.decoding_exact).

Checked against an independent brute force (every error pattern with its
probability, a plain numpy argmin), against Monte Carlo campaigns of real
devices (binary with 20 learners, 3-ary), and against ``ecoc_exact_tables``.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from edgecode._stats import wilson_interval
from edgecode.ecoc import codeword_decoding_probabilities, decoding_probabilities
from naive_ecoc import codeword_probability_bruteforce, decoding_probability_bruteforce

# (N, largest L) pairs small enough for the N^L brute force
SHAPES = {2: 8, 3: 5, 5: 3}


@st.composite
def problems(draw):
    N = draw(st.sampled_from(sorted(SHAPES)))
    L = draw(st.integers(1, SHAPES[N]))
    c = draw(st.integers(2, 5))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    code = rng.integers(0, N, (c, L))
    if draw(st.booleans()):                      # ternary: -1 entries
        code[rng.random((c, L)) < 0.3] = -1
    if draw(st.booleans()):                      # force ties: a repeated row
        code[-1] = code[0]
    eps = draw(st.one_of(st.sampled_from([0.0, 1.0, 0.5]), st.floats(0.0, 1.0)))
    t = draw(st.integers(1, 4))
    words = rng.integers(0, N, (t, L))
    targets = rng.integers(0, c, (2, t))
    return code, N, eps, words, targets


@settings(max_examples=60, deadline=None)
@given(problems(), st.sampled_from(["first", "split"]))
def test_any_word_any_target_equals_brute_force(prob, ties):
    code, N, eps, words, targets = prob
    got = decoding_probabilities(code, eps, words, targets, n_symbols=N, ties=ties)
    ref = [[decoding_probability_bruteforce(code, eps, w, k, N, ties)
            for w, k in zip(words, row)] for row in targets]
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12)
    # default target: the word's own (lowest-index nearest) label
    used = code >= 0
    d = 2 * ((words[:, None, :] != code[None]) & used[None]).sum(axis=2) + (~used).sum(axis=1)
    own = decoding_probabilities(code, eps, words, n_symbols=N, ties=ties)
    np.testing.assert_allclose(
        own, [decoding_probability_bruteforce(code, eps, w, k, N, ties)
              for w, k in zip(words, d.argmin(axis=1))], rtol=0, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(problems(), st.sampled_from(["first", "split"]))
def test_codewords_equal_brute_force(prob, ties):
    code, N, eps = prob[:3]
    got = codeword_decoding_probabilities(code, eps, n_symbols=N, ties=ties)
    ref = [codeword_probability_bruteforce(code, eps, i, N, ties) for i in range(len(code))]
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12)


def test_probabilities_over_all_classes_sum_to_one_and_eps_zero_is_the_label():
    rng = np.random.default_rng(0)
    code = rng.integers(-1, 3, (6, 7))
    words = rng.integers(0, 3, (50, 7))
    every = np.repeat(np.arange(6)[:, None], 50, axis=1)
    for ties in ("first", "split"):
        p = decoding_probabilities(code, 0.3, words, every, n_symbols=3, ties=ties)
        np.testing.assert_allclose(p.sum(axis=0), 1.0, atol=1e-12)
    np.testing.assert_array_equal(decoding_probabilities(code, 0.0, words, n_symbols=3), 1.0)
    # binary, eps = 1: every output flips, the label is that of the complement
    code2 = rng.integers(0, 2, (5, 9))
    w = rng.integers(0, 2, (20, 9))
    to = decoding_probabilities(code2, 0.0, 1 - w, np.arange(5).repeat(20).reshape(5, 20))
    np.testing.assert_array_equal(
        decoding_probabilities(code2, 1.0, w, np.arange(5).repeat(20).reshape(5, 20)), to)


def test_repetition_code_is_the_binomial_tail_and_matches_hamming_decoding_exact():
    from math import comb

    from export.analytics import hamming_decoding_exact
    tail = sum(comb(7, k) * 0.2**k * 0.8 ** (7 - k) for k in range(4))
    np.testing.assert_allclose(codeword_decoding_probabilities([[0] * 7, [1] * 7], 0.2),
                               [tail, tail], atol=1e-14)
    code = np.random.default_rng(1).integers(0, 2, (6, 10))
    for ties in ("first", "split"):
        np.testing.assert_allclose(hamming_decoding_exact(code, 0.13, ties=ties),
                                   [codeword_probability_bruteforce(code, 0.13, i, 2, ties)
                                    for i in range(6)], atol=1e-12)


# ---------------------------------------------------------------- devices
@pytest.fixture(scope="module")
def digits():
    from sklearn.datasets import load_digits
    X, y = load_digits(return_X_y=True)
    return X / 16.0, y                      # dyadic: exact fixed-point inputs


def _device(digits, estimator, **kw):
    from edgecode.ecoc.classifier import ECOCClassifier
    from export.ecoc import export_ecoc
    X, y = digits
    clf = ECOCClassifier(estimator, **kw).fit(X[:600], y[:600])
    return export_ecoc(clf, X[:600]).device


def _check_campaign(dev, digits, eps, trials):
    from export.analytics import add_analytic
    from firmware_sim.campaign import run_campaign
    from firmware_sim.faults import BSC
    X, y = digits[0][600:900], digits[1][600:900]
    a = dev
    res = run_campaign(a, X, BSC(eps), "eps", [eps], trials, random_state=0, y=y)
    add_analytic(res, a, X, BSC(eps), "eps", y)
    p = res.points[0]
    an = p.analytic
    assert an["available"] and an["method"].startswith("exact")
    assert p.same_ci[0] <= an["same_rate"] <= p.same_ci[1]          # 99% Wilson
    assert p.accuracy_ci[0] <= an["accuracy"] <= p.accuracy_ci[1]
    assert an["same_rate"] >= an["same_rate_lower_bound"]
    # the per-point probabilities too, one Wilson interval per point (99.99%)
    out = dev.learner_outputs(dev.quantize(X))
    per = decoding_probabilities(dev.code, eps, out, n_symbols=dev.n_symbols)
    lo, hi = wilson_interval(np.asarray(p.same_per_point), trials, 0.9999)
    assert np.mean((lo <= per) & (per <= hi)) >= 0.99
    return out


def test_binary_device_with_20_learners_matches_monte_carlo(digits):
    from sklearn.linear_model import LogisticRegression
    code = np.random.default_rng(20).integers(0, 2, (10, 20))
    dev = _device(digits, LogisticRegression(tol=1e-2), code=code)
    assert dev.n_columns == 20 and dev.n_symbols == 2
    out = _check_campaign(dev, digits, 0.12, 400)
    # the labels behind the probabilities are the device's: at eps = 0 the
    # device's own label of any word has probability 1
    rng = np.random.default_rng(0)
    words = np.vstack([out, rng.integers(0, 2, (500, 20))])
    np.testing.assert_array_equal(
        decoding_probabilities(dev.code, 0.0, words, dev.decode(words), n_symbols=2), 1.0)


def test_nary_device_matches_monte_carlo(digits):
    from sklearn.linear_model import LogisticRegression
    dev = _device(digits, LogisticRegression(tol=1e-2), code="nary", N=3, n_columns=10,
                  random_state=0)
    assert dev.n_symbols == 3 and dev.n_columns == 10
    _check_campaign(dev, digits, 0.1, 300)
    words = np.random.default_rng(1).integers(0, 3, (500, 10))
    np.testing.assert_array_equal(
        decoding_probabilities(dev.code, 0.0, words, dev.decode(words), n_symbols=3), 1.0)


def test_ternary_device_equals_ecoc_exact_tables(digits):
    from sklearn.tree import DecisionTreeClassifier

    from export.analytics import analytic_ecoc, ecoc_exact_tables
    from firmware_sim.faults import BSC
    rng = np.random.default_rng(7)
    code = rng.integers(0, 2, (10, 12))
    code[rng.random(code.shape) < 0.2] = -1
    dev = _device(digits, DecisionTreeClassifier(max_depth=4, random_state=0), code=code)
    assert (dev.code < 0).any() and dev.n_symbols == 2
    X, y = digits[0][600:900], digits[1][600:900]
    a = dev
    tables = ecoc_exact_tables(dev, dev.learner_outputs(dev.quantize(X)), y)
    for eps in (0.05, 0.3, 0.9):
        new = analytic_ecoc(a, X, BSC(eps), y)
        old = analytic_ecoc(a, X, BSC(eps), y, tables)
        assert new["available"] and old["available"]
        assert new["same_rate"] == pytest.approx(old["same_rate"], abs=1e-12)
        assert new["accuracy"] == pytest.approx(old["accuracy"], abs=1e-12)
    # beyond the word limit: no exact rate, the reason says why, the bound stays
    an = analytic_ecoc(a, X, BSC(0.1), y, max_words=1000)
    assert not an["available"] and "2^12 = 4096 received words" in an["reason"]
    assert 0.0 < an["same_rate_lower_bound"] < 1.0


# ---------------------------------------------------------------- errors
@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(eps=1.5), ValueError, r"eps must be in \[0, 1\].*got 1.5"),
    (dict(eps=-0.1), ValueError, r"eps must be in \[0, 1\]"),
    (dict(eps=float("nan")), ValueError, r"eps must be in \[0, 1\].*nan"),
    (dict(eps="0.1"), TypeError, "eps must be a real number"),
    (dict(eps=[0.1, 0.2]), TypeError, "eps must be a real number"),
    (dict(code=[[0, 1, 1]]), ValueError, r"code must have >= 2 rows"),
    (dict(code=[0, 1, 1]), ValueError, "code must be 2-dimensional"),
    (dict(code=[[0, 1, 0.5], [1, 0, 0]]), ValueError, r"code\[0, 2\] must be a whole number"),
    (dict(code=[[0, 1, np.nan], [1, 0, 0]]), ValueError, r"code\[0, 2\] must be a whole"),
    (dict(code=[["a", "b", "c"], ["a", "b", "c"]]), TypeError, "code must hold integers"),
    (dict(code=[[0, 1, -2], [1, 0, 0]]), ValueError, r"code\[0, 2\] must be -1 \(unused\)"),
    (dict(n_symbols=2, code=[[0, 1, 2], [1, 0, 0]]), ValueError,
     r"code\[0, 2\] must be .* 0\.\.1 \(n_symbols = 2\); got 2"),
    (dict(n_symbols=1), ValueError, "n_symbols must be >= 2"),
    (dict(words=[[0, 1]]), ValueError, r"words must have L = 3 columns.*\(1, 2\)"),
    (dict(words=[0, 1, 1]), ValueError, "words must be 2-dimensional"),
    (dict(words=[[0, 1, 3]]), ValueError, r"words\[0, 2\] must be a symbol in 0\.\.2"),
    (dict(targets=[5]), ValueError, r"targets\[0\] must be a class index in 0\.\.1"),
    (dict(targets=[0, 1]), ValueError, r"targets must have shape \(1,\) or \(m, 1\)"),
    (dict(ties="random"), ValueError, "ties must be one of"),
    (dict(max_words=8), ValueError,
     r"exact enumeration of N\^L = 3\^3 = 27 received words exceeds max_words = 8.*radius"),
])
def test_bad_inputs_are_named(kwargs, exc, match):
    args = dict(code=[[0, 1, 2], [2, 1, 0]], eps=0.1, words=[[0, 1, 2]])
    args.update(kwargs)
    with pytest.raises(exc, match=match):
        decoding_probabilities(args.pop("code"), args.pop("eps"), args.pop("words"), **args)


def test_too_many_words_points_to_the_bound():
    with pytest.raises(ValueError, match=r"2\^23 = 8388608 .* max_words = 4194304"):
        codeword_decoding_probabilities(np.zeros((2, 23), int), 0.1)
    with pytest.raises(ValueError, match=r"5\^10"):
        codeword_decoding_probabilities(np.tile(np.arange(5), (2, 2)), 0.1)
    with pytest.raises(ValueError, match="ties must be one of"):
        codeword_decoding_probabilities([[0, 1], [1, 0]], 0.1, ties="last")
