"""edgecode.ecoc coding matrices against slow references (tests/naive_ecoc.py)."""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from numpy.testing import assert_array_equal

from edgecode.ecoc import (DESIGNS, annealed, bch, check_properties, code_energy,
                           column_distance, dense_random, distance_stats, exhaustive, hadamard,
                           make_code, nary, nary_random, one_vs_all, one_vs_one,
                           pairwise_distances, row_distance, sparse_random, total_distance)
from edgecode.ecoc.bch import (GF2m, bch_generator, bch_generator_matrix, cyclotomic_coset,
                               primitive_polynomial)
from edgecode.ecoc.sylvester import is_prime, sylvester_base, sylvester_entries

import naive_ecoc as naive

# ---------------------------------------------------------------- distances


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 7), st.integers(1, 9), st.integers(2, 5), st.booleans(), st.data())
def test_distances_match_bruteforce(c, n, N, ternary, data):
    low = -1 if ternary else 0
    M = np.array(data.draw(st.lists(st.lists(st.integers(low, N - 1), min_size=n, max_size=n),
                                    min_size=c, max_size=c)))
    assert np.allclose(pairwise_distances(M), naive.pairwise(M))
    assert np.allclose(pairwise_distances(M, axis=1), naive.pairwise(M, axis=1))
    if c > 1:
        assert row_distance(M) == naive.min_distance(M)
    if n > 1:
        assert column_distance(M) == naive.min_distance(M, axis=1)
    p = check_properties(M)
    eq_rows, const, equiv = naive.properties(M)
    assert (p.equal_rows, p.constant_columns, p.equivalent_columns) == (eq_rows, const, equiv)
    assert p.valid == (not eq_rows and not const and not equiv)


def test_minus_one_counts_half():
    assert pairwise_distances([[0, -1, -1], [1, 0, -1]])[0, 1] == 2.0
    assert row_distance([[-1], [-1]]) == 0.5
    assert math.isnan(row_distance([[0, 1, 1]]))
    assert total_distance([[0, 1, 1]]) == 0.0 + 0.0   # one row: d_c only, all columns one entry


def test_distance_stats_and_report():
    M = [[0, 0, 0], [0, 1, 1], [1, 1, 1]]
    mn, mean, std, mx = distance_stats(M)
    v = np.array([2, 3, 1], float)
    assert (mn, mx) == (1.0, 3.0) and np.isclose(mean, v.mean()) and np.isclose(std, v.std())
    text = check_properties(M).report()
    assert "d_r = 1" in text and "P3 no equivalent columns: NO: (1, 2)" in text


def test_ternary_equivalence_respects_unused_positions():
    M = np.array([[0, 1, 0], [1, 0, -1], [-1, -1, 1]])
    p = check_properties(M)
    assert p.equivalent_columns == [(0, 1)]          # complement with the same -1 slots
    assert p.constant_columns == []


@pytest.mark.parametrize("bad, exc, msg", [
    ([[0, 1], [2, -2]], ValueError, "entries must be >= -1"),
    ([0, 1, 1], ValueError, "2-dimensional"),
    ([[0.5, 1]], TypeError, "whole numbers"),
    ([["a", "b"]], TypeError, "integer matrix"),
    (np.zeros((0, 3)), ValueError, "at least one row"),
])
def test_bad_matrices(bad, exc, msg):
    with pytest.raises(exc, match=msg):
        row_distance(bad)


# ---------------------------------------------------------------- Sylvester / N-ary


@pytest.mark.parametrize("N, ks", [(2, (1, 2, 3, 4, 5)), (3, (1, 2, 3)), (5, (1, 2)),
                                   (7, (1, 2)), (11, (1, 2)), (13, (1, 2))])
def test_sylvester_matches_recursion_and_theorem(N, ks):
    for k in ks:
        K = N ** k
        full = sylvester_entries(np.arange(K), np.arange(K), N, k)
        ref = naive.sylvester_recursive(N, k)
        assert_array_equal(full, ref)
        assert_array_equal(full, full.T)                       # symmetric
        want = (N - 1) * N ** (k - 1)
        Dr = naive.pairwise(full) if K <= 27 else pairwise_distances(full)
        off = ~np.eye(K, dtype=bool)
        assert np.all(Dr[off] == want)                         # every pair of rows
        assert np.all(pairwise_distances(full, axis=1)[off] == want)
        assert total_distance(full) == 2 * (N - 1) * N ** (k - 1)
        p = check_properties(full)
        assert p.p3 and p.equal_rows == []
        assert p.p4 == (N != 2)                                # Walsh: column 0 is constant


@pytest.mark.parametrize("N", [3, 5, 7, 11, 13])
def test_base_matrix(N):
    B = sylvester_base(N)
    assert_array_equal(B, B.T)
    assert row_distance(B) == N - 1 and column_distance(B) == N - 1
    assert check_properties(B).p4


def test_submatrix_is_computed_entrywise():
    rows, cols = np.array([5, 77, 3000, 28560]), np.array([0, 13, 2196, 28000])
    sub = sylvester_entries(rows, cols, 13, 4)
    full = naive.sylvester_recursive(13, 2)                    # check digits 0..1 via k = 2
    small = sylvester_entries([5, 77, 100], [0, 13, 168], 13, 2)
    assert_array_equal(small, full[np.ix_([5, 77, 100], [0, 13, 168])])
    assert sub.shape == (4, 4) and sub.dtype == np.int8 and sub.max() < 13


@pytest.mark.parametrize("N", [2, 3, 5, 7])
def test_nary_top_left_is_seed_rule(N):
    c, n = N ** 2 - 1, N + 1
    M = nary(c, n, N=N, truncation="top_left")
    ref = naive.sylvester_recursive(N, 2)[:c, :n]
    # equal to the top-left block except where the seed's equal-row repair changed entry 0
    assert_array_equal(M[:, 1:], ref[:, 1:])
    assert not check_properties(M).equal_rows


@pytest.mark.parametrize("c, n, N", [(4, 2, 2), (10, 5, 2), (10, 10, 3), (11, 22, 5),
                                     (16, 8, 7), (26, 13, 13), (8, 16, 3), (5, 3, 11)])
def test_nary_adaptive_valid_and_not_worse_than_top_left(c, n, N):
    M = nary(c, n, N=N)
    assert M.shape == (c, n) and M.dtype == np.int8
    assert M.min() >= 0 and M.max() < N
    p = check_properties(M)
    assert p.valid, p.report()
    tl = check_properties(nary(c, n, N=N, truncation="top_left"))
    assert (not tl.valid) or p.d_T >= tl.d_T
    assert_array_equal(M, nary(c, n, N=N))                      # deterministic


def test_hadamard():
    for k in (2, 3, 4):
        K = 2 ** k
        M = hadamard(K, K, truncation="top_left")
        assert row_distance(M) == K / 2 and column_distance(M) == K / 2
    M = hadamard(12, 12)
    assert check_properties(M).valid and set(np.unique(M)) == {0, 1}


@pytest.mark.parametrize("N", [4, 6, 9, 1])
def test_nary_needs_prime(N):
    with pytest.raises(ValueError if N > 1 else ValueError, match="N must be"):
        nary(5, 5, N=N)


def test_is_prime():
    assert [p for p in range(40) if is_prime(p)] == [
        p for p in range(2, 40) if all(p % q for q in range(2, p))]


# ---------------------------------------------------------------- fixed designs


@pytest.mark.parametrize("c", [2, 3, 5])
def test_one_vs_all_and_one_vs_one(c):
    assert_array_equal(one_vs_all(c), np.eye(c, dtype=np.int8))
    M = one_vs_one(c)
    assert M.shape == (c, c * (c - 1) // 2)
    col = 0
    for i in range(c):
        for j in range(i + 1, c):
            expect = np.full(c, -1)
            expect[i], expect[j] = 0, 1
            assert_array_equal(M[:, col], expect)
            col += 1
    assert check_properties(M).valid


@pytest.mark.parametrize("c", [2, 3, 4, 5, 8])
def test_exhaustive(c):
    M = exhaustive(c)
    assert M.shape == (c, 2 ** (c - 1) - 1)
    assert {tuple(col) for col in M.T} == naive.exhaustive_code(c)
    if c > 2:
        assert row_distance(M) == 2 ** (c - 2)
    assert check_properties(M).valid


def test_exhaustive_limits():
    with pytest.raises(ValueError, match="ECOC_EXHAUSTIVE_MAX_CLASSES=16"):
        exhaustive(17)
    with pytest.raises(ValueError, match="at most 7 columns"):
        exhaustive(4, 8)


# ---------------------------------------------------------------- random designs


@pytest.mark.parametrize("fn, kw", [(dense_random, {}), (sparse_random, {}),
                                    (nary_random, {"N": 3}), (nary_random, {"N": 4}),
                                    (dense_random, {"criterion": "total"})])
@pytest.mark.parametrize("c", [2, 3, 7, 12])
def test_random_designs_valid_and_reproducible(fn, kw, c):
    if fn is dense_random and c == 2:
        M = fn(c, 1, n_draws=5, random_state=1, **kw)
    elif c == 2 and fn is nary_random:
        M = fn(c, 1, n_draws=5, random_state=1, **kw)
    else:
        M = fn(c, n_draws=20, random_state=1, **kw)
    p = check_properties(M)
    assert p.valid, p.report()
    again = fn(c, M.shape[1], n_draws=20 if c > 2 else 5, random_state=1, **kw)
    assert_array_equal(M, again)
    assert M.dtype == np.int8


def test_best_of_more_draws_is_not_worse():
    one = nary_random(10, 10, N=3, n_draws=1, random_state=3)
    many = nary_random(10, 10, N=3, n_draws=200, random_state=3)
    assert total_distance(many) >= total_distance(one)   # the first draw is among the 200


def test_sparse_limit():
    assert sparse_random(3, random_state=0, n_draws=3).shape == (3, 6)
    with pytest.raises(ValueError, match="at most 6 columns"):
        sparse_random(3, 7)


def test_sparse_has_unused_symbol():
    M = sparse_random(8, random_state=0, n_draws=10)
    assert set(np.unique(M)) == {-1, 0, 1}


@pytest.mark.parametrize("call, msg", [
    (lambda: dense_random(3, 4), "at most 3 columns"),
    (lambda: dense_random(9, 3), "too small: 9 distinct binary rows"),
    (lambda: nary_random(4, 20, N=2), "at most 7 columns"),
    (lambda: dense_random(5, criterion="mean"), "criterion must be"),
    (lambda: dense_random(1), "n_classes must be >= 2"),
    (lambda: dense_random(5, 0), "n_columns must be >= 1"),
    (lambda: sparse_random(5, p_unused=1.0), "p_unused must be in"),
    (lambda: nary_random(4, 3, N=1), "N must be >= 2"),
])
def test_random_design_errors(call, msg):
    with pytest.raises(ValueError, match=msg):
        call()


def test_type_errors_name_argument():
    with pytest.raises(TypeError, match="n_classes must be an integer"):
        dense_random(4.0)
    with pytest.raises(TypeError, match="n_columns must be an integer"):
        nary(4, "8")


# ---------------------------------------------------------------- BCH


@pytest.mark.parametrize("m", [3, 4, 5, 6, 7, 8])
def test_gf2m_against_bruteforce(m):
    F = GF2m(m)
    p = primitive_polynomial(m)
    assert p.bit_length() - 1 == m and naive.is_irreducible(p)
    rng = np.random.default_rng(m)
    for a, b in rng.integers(0, 2 ** m, (200, 2)):
        assert F.mul(int(a), int(b)) == naive.gf_mul_bruteforce(int(a), int(b), p, m)
    assert len(set(F.exp[:F.order].tolist())) == F.order          # alpha is primitive


@pytest.mark.parametrize("n, t", [(7, 1), (15, 1), (15, 2), (15, 3), (31, 2), (31, 3),
                                  (31, 5), (63, 6)])
def test_bch_generator_roots_and_distance(n, t):
    g = bch_generator(n, t)
    F = GF2m(n.bit_length())
    for i in range(1, 2 * t + 1):                 # alpha^i is a root of g for i <= 2t
        val, x = 0, int(F.exp[i % n])
        for d in range(g.bit_length() - 1, -1, -1):   # Horner over GF(2^m)
            val = F.mul(val, x) ^ ((g >> d) & 1)
        assert val == 0
    r, rem = g, (1 << n) | 1                      # g divides x^n - 1: a cyclic code
    while rem.bit_length() >= r.bit_length():
        rem ^= r << (rem.bit_length() - r.bit_length())
    assert rem == 0
    G = bch_generator_matrix(n, t)
    if G.shape[0] <= 16:
        assert naive.code_min_distance(G) >= 2 * t + 1


def test_bch_known_dimensions():
    dims = {(15, 1): 11, (15, 2): 7, (15, 3): 5, (31, 3): 16, (63, 6): 30, (127, 10): 64}
    for (n, t), k in dims.items():
        assert n - (bch_generator(n, t).bit_length() - 1) == k
    assert cyclotomic_coset(1, 15) == [1, 2, 4, 8]


@pytest.mark.parametrize("c, n, t", [(10, 15, 3), (40, 31, 5), (100, 63, 6), (3, 7, 1)])
def test_bch_code_reaches_designed_distance(c, n, t):
    M = bch(c, n, t=t, random_state=0, n_draws=3)
    assert M.shape == (c, n)
    assert row_distance(M) >= 2 * t + 1
    p = check_properties(M)
    assert not p.equal_rows
    if n <= 2 ** (c - 1) - 1:             # else P3 cannot hold: too few distinct learners
        assert p.valid


def test_bch_errors():
    with pytest.raises(ValueError, match=r"BCH length 2\^m - 1"):
        bch(10, 20)
    with pytest.raises(ValueError, match="too many for the BCH"):
        bch(40, 15, t=3)
    with pytest.raises(ValueError, match="t must be"):
        bch(4, 15, t=8)


# ---------------------------------------------------------------- annealing


def test_annealing_lowers_energy_and_spread():
    rng = np.random.default_rng(0)
    start = rng.integers(0, 2, (30, 40)).astype(np.int8)
    start[0] = 1 - start[1]                        # no constant column
    M = annealed(30, start=start, random_state=0, n_temps=30)
    assert M.shape == start.shape
    assert code_energy(M) < code_energy(start)
    assert np.isclose(code_energy(M), naive.energy(M))
    assert distance_stats(M)[2] < distance_stats(start)[2]
    assert check_properties(M).p4
    assert_array_equal(M, annealed(30, start=start, random_state=0, n_temps=30))


def test_annealing_width_moves_and_progress():
    seen = []
    M = annealed(12, 10, random_state=2, n_temps=20, min_columns=8, max_columns=14,
                 p_flip=0.5, p_add=0.25, progress=lambda d, t, e: seen.append((d, t, e)))
    assert 8 <= M.shape[1] <= 14 and check_properties(M).p4
    assert seen[-1][0] == 20 and len(seen) >= 2


def test_annealing_errors():
    with pytest.raises(ValueError, match="t_min must be <= t0"):
        annealed(5, t0=0.01, t_min=0.1)
    with pytest.raises(ValueError, match="p_flip \\+ p_add"):
        annealed(5, p_flip=0.8, p_add=0.5)
    with pytest.raises(ValueError, match="no constant column"):
        annealed(3, start=[[0, 1], [0, 0], [0, 1]])


# ---------------------------------------------------------------- entry point


@pytest.mark.parametrize("design", sorted(DESIGNS))
def test_make_code_every_design(design):
    N = 3 if design in ("nary", "nary_random") else 2
    opts = {"n_draws": 5} if design in ("dense_random", "sparse_random", "nary_random",
                                        "bch") else {}
    if design == "annealed":
        opts = {"n_temps": 5}
    M = make_code(design, 8, N=N, random_state=0, **opts)
    assert M.ndim == 2 and M.shape[0] == 8 and M.dtype == np.int8
    assert M.min() >= -1 and M.max() < N
    assert check_properties(M).valid


def test_make_code_defaults():
    assert make_code("one_vs_all", 5).shape == (5, 5)
    assert make_code("dense_random", 10, random_state=0, n_draws=2).shape == (10, 34)
    assert make_code("sparse_random", 10, random_state=0, n_draws=2).shape == (10, 50)
    assert make_code("nary", 10, N=5).shape == (10, 10)
    assert make_code("bch", 10, random_state=0, n_draws=1).shape == (10, 63)


def test_make_code_errors():
    with pytest.raises(ValueError, match="valid designs: one_vs_all, one_vs_one"):
        make_code("random", 4)
    with pytest.raises(ValueError, match="is binary; N must be 2"):
        make_code("dense_random", 4, N=3)
    with pytest.raises(TypeError, match="takes no option 'truncation'"):
        make_code("dense_random", 4, truncation="top_left")
    with pytest.raises(ValueError, match="n_columns must be n_classes=4"):
        make_code("one_vs_all", 4, 5)


@pytest.mark.parametrize("call, shape", [
    (lambda: nary(2, N=2), (2, 1)), (lambda: hadamard(3), (3, 3)),
    (lambda: nary(3, 1, N=3), (3, 1)),
    (lambda: nary(2, 1, truncation="top_left"), (2, 1)), (lambda: dense_random(2), (2, 1)),
    (lambda: dense_random(3), (3, 3)), (lambda: annealed(2), (2, 1)),
    (lambda: nary_random(2, 1, N=5), (2, 1)), (lambda: exhaustive(2), (2, 1)),
    (lambda: one_vs_one(2), (2, 1)), (lambda: sparse_random(2), (2, 1)),
])
def test_tiny_codes(call, shape):
    M = call()
    assert M.shape == shape
    assert check_properties(M).valid


def test_nary_column_limits():
    with pytest.raises(ValueError, match="at most 3 columns"):
        hadamard(3, 4)
    with pytest.raises(ValueError, match="too small: 1000 distinct 2-ary rows need >= 10"):
        nary(1000, 1, N=2)
    with pytest.raises(ValueError, match="k=2 gives a 4 x 4 matrix"):
        nary(5, 5, N=2, k=2)


def test_nary_chooses_prime():
    M = nary(10, 5, N=[3, 2, 5])
    keys = {N: total_distance(nary(10, 5, N=N)) for N in (2, 3, 5)}
    assert total_distance(M) == max(keys.values())
    assert_array_equal(make_code("nary", 10, 5, N=(2, 3, 5)), M)
    with pytest.raises(ValueError, match="N must be a prime"):
        nary(10, 5, N=[3, 4])


def test_large_n_uses_int16():
    M = nary(4, 4, N=131)
    assert M.dtype == np.int16 and M.max() < 131


# ---------------------------------------------------------------- CLI


def _cli(argv):
    import argparse

    from export.cli import codes
    p = argparse.ArgumentParser()
    codes.register(p.add_subparsers(dest="command", required=True))
    args = p.parse_args(argv)
    args.func(args)


@pytest.mark.parametrize("suffix", [".npy", ".csv", ".json"])
def test_cli_codes_builds_reports_and_saves(tmp_path, capsys, suffix):
    from edgecode.ecoc import load_code
    out = tmp_path / f"code{suffix}"
    _cli(["codes", "nary", "--classes", "10", "--columns", "20", "--N", "3",
          "-o", "truncation=top_left", "--out", str(out)])
    text = capsys.readouterr().out
    assert "P1 row distance" in text and "P4 no constant columns" in text and "wrote" in text
    want = nary(10, 20, N=3, truncation="top_left")
    if suffix == ".npy":
        got = np.load(out, allow_pickle=False)
    elif suffix == ".csv":
        got = np.loadtxt(out, delimiter=",", dtype=int)
    else:
        import json
        doc = json.loads(out.read_text())
        got = np.array(doc["code"])
        assert doc["design"] == "nary" and doc["n_symbols"] == 3 and doc["seed"] is None
        assert doc["options"] == {"truncation": "top_left"} and doc["d_r"] > 0
    assert_array_equal(got, want)
    assert_array_equal(load_code(out), want)          # what ECOCClassifier(code=...) takes


def test_a_coding_matrix_is_not_written_as_a_container(tmp_path):
    """A coding matrix has no learners: not a device model, so `codes --out x.edgc`
    (which wrote a container firmware_sim.load refused) is refused with the way out."""
    from edgecode.ecoc import save_code
    with pytest.raises(ValueError, match=r"not a device model .* \.npy, \.csv, \.json.*"
                       r"edgecode ecoc DATA --code nary --out model\.edgc"):
        _cli(["codes", "nary", "--classes", "4", "--out", str(tmp_path / "x.edgc")])
    with pytest.raises(ValueError, match="not a device model"):
        save_code(nary(4, 6, N=3), tmp_path / "x.edgc")
    assert not list(tmp_path.iterdir())


def test_load_code_refuses_what_is_not_a_coding_matrix(tmp_path):
    from edgecode.ecoc import load_code
    (tmp_path / "a.json").write_text('{"rows": [[0, 1]]}')
    with pytest.raises(ValueError, match="'code' list of rows"):
        load_code(tmp_path / "a.json")
    (tmp_path / "b.csv").write_text("0,1\n1,-2\n")
    with pytest.raises(ValueError, match=r"b\.csv\[1, 1\] must be -1"):
        load_code(tmp_path / "b.csv")
    (tmp_path / "c.csv").write_text("0,1\n1,x\n")
    with pytest.raises(ValueError, match="c.csv: not a coding matrix"):
        load_code(tmp_path / "c.csv")


def test_cli_codes_errors(tmp_path):
    with pytest.raises(ValueError, match="--out must end in"):
        _cli(["codes", "hadamard", "--classes", "8", "--out", str(tmp_path / "x.txt")])
    with pytest.raises(ValueError, match="N must be a prime"):
        _cli(["codes", "nary", "--classes", "8", "--N", "4"])
    with pytest.raises(ValueError, match="key=value"):
        _cli(["codes", "nary", "--classes", "8", "-o", "truncation"])


def test_demo_stage(tmp_path):
    import io

    from export.cli.codes import run_demo_stage
    buf = io.StringIO()
    res = run_demo_stage(tmp_path, stream=buf)
    text = buf.getvalue()
    assert "nary_random" in text and "annealed" in text
    assert all(r["valid"] for r in res["designs"] if r["options"].get("truncation") is None)


def test_random_state_kinds():
    a = dense_random(6, random_state=np.random.default_rng(5), n_draws=5)
    b = dense_random(6, random_state=np.random.default_rng(5), n_draws=5)
    assert_array_equal(a, b)
    assert_array_equal(annealed(6, 8, random_state=np.random.RandomState(2), n_temps=3),
                       annealed(6, 8, random_state=2, n_temps=3))
    with pytest.raises(TypeError, match="random_state must be"):
        dense_random(6, random_state="x")


# ---------------------------------------------------------------- plain random (screen=False)


def test_screened_draws_unchanged():
    # literal outputs of the screened designs before the screen option existed
    assert dense_random(5, 6, n_draws=7, random_state=3).tolist() == [
        [1, 0, 0, 0, 0, 0], [0, 1, 1, 1, 1, 0], [1, 0, 1, 1, 0, 0], [1, 1, 0, 0, 1, 1],
        [0, 1, 0, 1, 0, 1]]
    assert sparse_random(4, 5, n_draws=7, random_state=3, screen=True).tolist() == [
        [1, 1, 1, -1, 1], [-1, -1, 0, -1, 1], [-1, 0, -1, 1, -1], [0, 1, 0, 0, 0]]
    assert nary_random(5, 4, N=3, n_draws=9, random_state=3).tolist() == [
        [1, 0, 2, 2], [2, 1, 0, 1], [1, 2, 0, 0], [2, 1, 1, 2], [0, 1, 0, 2]]
    assert make_code("nary_random", 4, 4, N=5, n_draws=9, random_state=3).tolist() == [
        [1, 0, 4, 1], [2, 1, 0, 1], [1, 1, 4, 0], [2, 4, 3, 0]]


@pytest.mark.parametrize("fn, kw, probs", [
    (dense_random, {}, {0: 0.5, 1: 0.5}),
    (nary_random, {"N": 5}, {s: 0.2 for s in range(5)}),
    (nary_random, {"N": 4}, {s: 0.25 for s in range(4)}),
    (sparse_random, {}, {-1: 0.5, 0: 0.25, 1: 0.25}),
    (sparse_random, {"p_unused": 0.2}, {-1: 0.2, 0: 0.4, 1: 0.4}),
])
def test_plain_random_entries_iid(fn, kw, probs):
    from scipy.stats import chisquare
    M = fn(40, 200, screen=False, random_state=11, **kw)      # 8000 entries
    assert M.shape == (40, 200) and M.dtype == np.int8
    sym = sorted(probs)
    counts = np.array([(M == s).sum() for s in sym])
    assert counts.sum() == M.size                             # no other symbol
    assert chisquare(counts, M.size * np.array([probs[s] for s in sym])).pvalue > 1e-3
    # independence: the 2 x 2 table of (entry, right neighbour) for the first symbol
    a, b = M[:, :-1] == sym[0], M[:, 1:] == sym[0]
    p0 = probs[sym[0]]
    table = np.array([(a & b).sum(), (a & ~b).sum(), (~a & b).sum(), (~a & ~b).sum()])
    expect = a.size * np.array([p0 * p0, p0 * (1 - p0), (1 - p0) * p0, (1 - p0) ** 2])
    assert chisquare(table, expect).pvalue > 1e-3


def test_plain_random_is_the_random_states_draw():
    rs = np.random.RandomState(4)
    assert_array_equal(nary_random(6, 7, N=3, screen=False, random_state=4),
                       rs.randint(0, 3, size=(6, 7)))
    assert_array_equal(dense_random(6, 7, screen=False, random_state=np.random.RandomState(4)),
                       np.random.RandomState(4).randint(0, 2, size=(6, 7)))
    a = dense_random(6, 7, screen=False, random_state=np.random.default_rng(2))
    b = dense_random(6, 7, screen=False, random_state=np.random.default_rng(2))
    assert_array_equal(a, b)
    assert_array_equal(make_code("sparse_random", 5, 9, screen=False, random_state=8),
                       sparse_random(5, 9, screen=False, random_state=8))


def test_plain_random_keeps_defects_and_has_no_cap():
    # tiny codes: defects are common and kept (no rejection)
    seen = {"equal": False, "const": False, "equiv": False}
    for s in range(40):
        p = check_properties(dense_random(4, 3, screen=False, random_state=s))
        seen["equal"] |= bool(p.equal_rows)
        seen["const"] |= bool(p.constant_columns)
        seen["equiv"] |= bool(p.equivalent_columns)
    assert all(seen.values())
    assert dense_random(3, 10, screen=False, random_state=0).shape == (3, 10)   # cap is 3
    assert dense_random(9, 2, screen=False, random_state=0).shape == (9, 2)     # rows repeat
    assert nary_random(4, 20, N=2, screen=False, random_state=0).shape == (4, 20)
    assert dense_random(10, screen=False, random_state=0).shape == (10, 34)     # ceil(10 log2 c)
    assert sparse_random(3, screen=False, random_state=0).shape == (3, 24)      # ceil(15 log2 c)


def _plain_best_reference(c, n, N, K, seed, total):
    """Best of K draws of randint(0, N) by (d_r [+ d_c], fewest pairs at the minima)."""
    rs = np.random.RandomState(seed)
    best, key = None, None
    for _ in range(K):
        M = rs.randint(0, N, size=(c, n))
        D = naive.pairwise(M)
        v = D[np.triu_indices(c, 1)]
        score, cnt = v.min(), (v == v.min()).sum()
        if total:
            E = naive.pairwise(M, axis=1)
            w = E[np.triu_indices(n, 1)]
            score, cnt = score + w.min(), cnt + (w == w.min()).sum()
        if key is None or (score, -cnt) > key:
            best, key = M, (score, -cnt)
    return best


@pytest.mark.parametrize("criterion", ["total", "row"])
def test_plain_best_of_k_matches_reference(criterion):
    M = nary_random(6, 5, N=3, screen=False, n_draws=30, criterion=criterion, random_state=5)
    ref = _plain_best_reference(6, 5, 3, 30, 5, criterion == "total")
    assert_array_equal(M, ref)
    first = nary_random(6, 5, N=3, screen=False, n_draws=1, random_state=5)
    assert_array_equal(first, np.random.RandomState(5).randint(0, 3, size=(6, 5)))


def test_plain_random_errors():
    with pytest.raises(TypeError, match="screen must be True or False"):
        dense_random(4, 3, screen="no")
    with pytest.raises(ValueError, match="n_draws must be >= 1"):
        nary_random(4, 3, screen=False, n_draws=0)
    with pytest.raises(ValueError, match="criterion must be"):
        nary_random(4, 3, screen=False, n_draws=3, criterion="mean")
    with pytest.raises(ValueError, match="p_unused must be in"):
        sparse_random(4, 3, screen=False, p_unused=1.5)


def test_make_code_returns_a_matrix_only():
    with pytest.raises(TypeError, match="return_info=True"):
        make_code("annealed", 10, 12, random_state=0, return_info=True)
    assert make_code("annealed", 10, 12, random_state=0, return_info=False).shape == (10, 12)
