"""edgecode.hashing: Frequent Directions, SSBC, baselines, Hamming index, metrics."""

import tracemalloc

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.datasets import load_digits
from sklearn.utils.estimator_checks import parametrize_with_checks

import naive_hashing as naive
from edgecode.hashing import (ITQ, SSBC, FrequentDirections, HammingIndex, PCASign,
                              SignRandomProjection, gaussian_affinity, pack_bits,
                              retrieval_metrics, true_neighbors, unpack_bits)
from edgecode.hashing.codes import as_words


@pytest.fixture(scope="module")
def digits():
    d = load_digits()
    return d.data, d.target


# ----------------------------------------------------------- sklearn checks
@parametrize_with_checks([
    FrequentDirections(ell=4),
    SSBC(n_bits=2, n_anchors=5, sketch_size=4, random_state=0),
    SSBC(n_bits=2, n_anchors=5, sketch_size=4, center=True, output="uint64", random_state=0),
    SSBC(n_bits=2, n_anchors=5, sketch_size=4, rotation="itq", random_state=0),
    SignRandomProjection(4, random_state=0),
    PCASign(1),
    ITQ(1, random_state=0),
])
def test_sklearn_compatible(estimator, check):
    check(estimator)


# ----------------------------------------------------------- packed layout
def test_bit_layout_is_lsb_first_and_uint64_is_the_same_memory():
    bits = np.zeros((1, 70), np.uint8)
    bits[0, [0, 9, 65]] = 1
    p8 = pack_bits(bits)
    assert p8.shape == (1, 9) and p8[0, 0] == 1 and p8[0, 1] == 2 and p8[0, 8] == 2
    p64 = pack_bits(bits, np.uint64)
    assert p64.shape == (1, 2)
    assert p64[0, 0] == 1 + 2**9 and p64[0, 1] == 2
    padded = np.zeros((1, 16), np.uint8)
    padded[:, :9] = p8
    assert_array_equal(padded.view("<u8"), p64)
    assert_array_equal(unpack_bits(p8, 70), bits)
    assert_array_equal(unpack_bits(p64, 70), bits)
    for form in (bits, p8, p64):
        assert_array_equal(as_words(form, 70), p64)


# ----------------------------------------------------------- Frequent Directions
@pytest.mark.parametrize("ell", [4, 8, 16, 24])
def test_fd_covariance_bound_on_digits(digits, ell):
    A = digits[0]
    fd = FrequentDirections(ell).fit(A)
    B = fd.sketch_
    err = np.linalg.norm(A.T @ A - B.T @ B, 2)
    s = np.linalg.svd(A, compute_uv=False)
    for k in range(ell):
        tail = float((s[k:] ** 2).sum())
        assert err <= tail / (ell - k) * (1 + 1e-9) + 1e-6, (ell, k)
    assert err <= fd.shrinkage_ * (1 + 1e-9) + 1e-6
    # B^T B never exceeds A^T A (FD only shrinks)
    assert np.linalg.eigvalsh(A.T @ A - B.T @ B).min() > -1e-6 * s[0] ** 2


def test_fd_batches_of_any_size_give_the_same_sketch(digits):
    A = digits[0][:700]
    ref = FrequentDirections(10).fit(A)
    fd = FrequentDirections(10)
    rng = np.random.default_rng(1)
    pos = 0
    while pos < len(A):
        step = int(rng.integers(1, 60))
        fd.partial_fit(A[pos:pos + step])
        pos += step
    assert fd.n_rows_seen_ == 700 and fd.n_compactions_ == ref.n_compactions_
    assert_allclose(fd.sketch_.T @ fd.sketch_, ref.sketch_.T @ ref.sketch_, rtol=1e-8,
                    atol=1e-6)


def test_fd_is_exact_when_rank_fits():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(300, 3)) @ rng.normal(size=(3, 12))
    fd = FrequentDirections(8).fit(A)
    assert_allclose(fd.sketch_.T @ fd.sketch_, A.T @ A, rtol=1e-7, atol=1e-7)
    V = naive.top_right_singular_vectors(A, 3)
    assert_allclose(np.abs(fd.components_[:3] @ V), np.eye(3), atol=1e-7)


# ----------------------------------------------------------- SSBC
def test_gaussian_affinity_matches_loops(digits):
    X = digits[0]
    assert_allclose(gaussian_affinity(X[:20], X[20:35], 300.0),
                    naive.affinity(X[:20], X[20:35], 300.0), rtol=1e-10, atol=1e-14)


def test_ssbc_codes_are_signs_of_affinity_projections(digits):
    X = digits[0]
    h = SSBC(16, 64, 24, random_state=0).fit(X[:600])
    assert h.anchors_.shape == (64, 64) and h.projection_.shape == (64, 16)
    # anchors come from the stream's start (warm-up of 2 m points)
    rows = {tuple(r) for r in X[:128]}
    assert all(tuple(a) in rows for a in h.anchors_)
    W = naive.affinity(X[600:650], h.anchors_, h.sigma_)
    margin = W @ h.projection_
    ref = (margin > 0).astype(np.uint8)
    got = h.transform(X[600:650])
    clear = np.abs(margin) > 1e-9
    assert_array_equal(got[clear], ref[clear])
    assert_array_equal(h.encode(X[600:650], "uint8"), pack_bits(got))
    assert_array_equal(h.encode(X[600:650], "uint64"), pack_bits(got, np.uint64))


def test_ssbc_projection_tracks_the_full_svd_with_a_large_sketch(digits):
    X = digits[0][:500]
    h = SSBC(4, 40, 39, n_warmup=40, random_state=0).fit(X)
    W = naive.affinity(X, h.anchors_, h.sigma_)
    V = naive.top_right_singular_vectors(W, 4)
    # sketch of 39 rows over 40 columns: nearly exact subspace
    cos = np.abs(np.sum(V * h.components_.T, axis=0))
    assert cos.min() > 0.999


def test_ssbc_stream_in_batches_equals_one_fit(digits):
    X = digits[0][:900]
    ref = SSBC(8, 48, 16, random_state=3).fit(X)
    h = SSBC(8, 48, 16, random_state=3)
    for chunk in np.array_split(X, [7, 10, 200, 201, 555]):
        h.partial_fit(chunk)
    assert_array_equal(h.anchors_, ref.anchors_)
    assert h.sigma_ == ref.sigma_
    agree = (h.transform(X) == ref.transform(X)).mean()
    assert agree > 0.999


def test_ssbc_provisional_model_before_the_warmup_ends(digits):
    X = digits[0]
    h = SSBC(4, 32, 8, random_state=0).partial_fit(X[:10])
    assert not h.warmup_done_ and h.anchors_.shape == (10, 64)
    assert h.transform(X[:3]).shape == (3, 4)
    h.partial_fit(X[10:100])
    assert h.warmup_done_ and h.anchors_.shape == (32, 64)


def test_ssbc_memory_is_independent_of_stream_length():
    rng = np.random.default_rng(0)
    centers = rng.normal(size=(8, 16)) * 4
    h = SSBC(8, 64, 16, random_state=0)
    sizes, peaks = [], []
    for b in range(60):
        X = centers[rng.integers(0, 8, 1000)] + rng.normal(size=(1000, 16))
        tracemalloc.start()
        h.partial_fit(X)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        sizes.append(h.state_nbytes())
    assert h.n_samples_seen_ == 60000
    assert sizes[2] == sizes[-1]
    # O(ell m + m d) state: anchors 64x16, buffer 32x64, V and projection 64x8, mean 64
    assert sizes[-1] == 8 * (64 * 16 + 32 * 64 + 2 * 64 * 8 + 64)
    assert max(peaks[10:]) < 1.5 * max(peaks[2:10])


def test_ssbc_online_codes_and_sign_consistency(digits):
    X = digits[0]
    h = SSBC(8, 64, 16, mode="online", random_state=0)
    codes = [h.partial_fit_transform(X[i:i + 100]) for i in range(0, 1000, 100)]
    codes = np.vstack(codes)
    assert codes.shape == (1000, 8)
    # after the stream, the last rows were coded with (almost) the final V_k
    agree_last = (codes[-50:] == h.transform(X[950:1000])).mean()
    assert agree_last > 0.9
    assert_allclose(h.components_ @ h.components_.T, np.eye(8), atol=1e-8)
    # Procrustes alignment keeps the bits' meaning: most online codes of the
    # whole stream equal the final codes
    assert (codes == h.transform(X[:1000])).mean() > 0.8
    # the online codes do not depend on the batching once the warm-up (128
    # points) is over; rows of a call that ends inside the warm-up are coded
    # with the provisional model
    again = SSBC(8, 64, 16, mode="online", random_state=0).fit_transform(X[:1000])
    assert (again[200:] == codes[200:]).mean() > 0.99


def test_ssbc_rotation_variant_is_balanced(digits):
    X = digits[0]
    plain = SSBC(16, 128, 32, random_state=0).fit(X)
    rot = SSBC(16, 128, 32, rotation="itq", random_state=0).fit(X)
    R = rot.rotation_
    assert_allclose(R @ R.T, np.eye(16), atol=1e-10)
    bal = lambda c: np.abs(c.mean(axis=0) - 0.5).mean()  # noqa: E731
    assert bal(rot.transform(X)) < bal(plain.transform(X))


@pytest.mark.parametrize("kwargs, match", [
    (dict(n_bits=16, sketch_size=16), "must be < sketch_size"),
    (dict(n_bits=8, n_anchors=4, sketch_size=16), "must be <= n_anchors"),
    (dict(mode="online", rotation="itq"), "streaming"),
    (dict(n_warmup=10, n_anchors=20, n_bits=4, sketch_size=8), "n_warmup"),
    (dict(sigma=-1.0), "sigma"),
])
def test_ssbc_bad_parameters_are_named(kwargs, match):
    X = np.random.default_rng(0).normal(size=(50, 3))
    with pytest.raises(ValueError, match=match):
        SSBC(**kwargs).fit(X)


# ----------------------------------------------------------- baselines
def test_pca_sign_and_itq(digits):
    X = digits[0]
    p = PCASign(8).fit(X)
    V = naive.top_right_singular_vectors(X - X.mean(0), 8)
    assert_allclose(np.abs(p.components_ @ V), np.eye(8), atol=1e-6)
    it = ITQ(8, random_state=0).fit(X)
    Z = (X - X.mean(0)) @ p.components_.T
    loss = lambda R: np.linalg.norm(np.where(Z @ R >= 0, 1, -1) - Z @ R)  # noqa: E731
    assert loss(it.rotation_) < loss(np.eye(8))
    with pytest.raises(ValueError, match="exceeds n_features"):
        PCASign(65).fit(X)


def test_lsh_partial_fit_equals_fit(digits):
    X = digits[0]
    a = SignRandomProjection(16, random_state=0).fit(X)
    b = SignRandomProjection(16, random_state=0)
    for c in np.array_split(X, 5):
        b.partial_fit(c)
    assert_allclose(a.mean_, b.mean_)
    assert_array_equal(a.transform(X), b.transform(X))


# ----------------------------------------------------------- index and metrics
@pytest.mark.parametrize("n_bits", [5, 64, 100])
def test_hamming_index_equals_brute_force(n_bits):
    rng = np.random.default_rng(n_bits)
    db = rng.integers(0, 2, (500, n_bits)).astype(np.uint8)
    q = rng.integers(0, 2, (30, n_bits)).astype(np.uint8)
    idx = HammingIndex(n_bits)
    idx.add(db[:200])
    idx.add(pack_bits(db[200:350]))
    idx.add(pack_bits(db[350:], np.uint64))
    for k in (1, 7, 500):
        dist, ind = idx.search(q, k)
        rd, ri = naive.topk(naive.hamming(db, q), k)
        assert_array_equal(dist, rd)
        assert_array_equal(ind, ri)


def test_hamming_index_errors():
    idx = HammingIndex(8)
    with pytest.raises(ValueError, match="empty"):
        idx.search(np.zeros((1, 8), np.uint8), 1)
    idx.add(np.zeros((3, 8), np.uint8))
    with pytest.raises(ValueError, match="k must be <= 3"):
        idx.search(np.zeros((1, 8), np.uint8), 4)
    with pytest.raises(ValueError, match="0 or 1"):
        idx.add(np.full((1, 8), 2, np.int64))


def test_metrics_equal_brute_force(digits):
    X = digits[0]
    db, q = X[:400], X[400:440]
    nn = true_neighbors(db, q, 10)
    assert_array_equal(nn, naive.knn_euclidean(db, q, 10))
    h = SSBC(12, 64, 16, random_state=0).fit(db)
    cdb, cq = h.transform(db), h.transform(q)
    got = retrieval_metrics(cdb, cq, nn, 12, R=25)
    rr, rp, rap = naive.rank_metrics(cdb, cq, nn, 25)
    assert_allclose(got["recall"], rr)
    assert_allclose(got["precision"], rp)
    assert_allclose(got["ap"], rap)


def test_ssbc_beats_lsh_on_digits(digits):
    X = digits[0]
    db, q = X[:1400], X[1400:]
    nn = true_neighbors(db, q, 10)
    s = SSBC(32, 256, 64, center=True, random_state=0).fit(db)
    lsh = SignRandomProjection(32, random_state=0).fit(db)
    ap_s = retrieval_metrics(s.transform(db), s.transform(q), nn, 32)["ap"].mean()
    ap_l = retrieval_metrics(lsh.transform(db), lsh.transform(q), nn, 32)["ap"].mean()
    assert ap_s > ap_l


@pytest.mark.parametrize("n_bits, n", [(6, 3000), (64, 5000), (33, 1025)])
def test_hamming_index_chunked_scan_keeps_ties_by_index(n_bits, n):
    """64-bit words take the chunked 1-D scan: many chunks, heavy ties."""
    rng = np.random.default_rng(n)
    db = rng.integers(0, 2, (n, n_bits)).astype(np.uint8)
    q = rng.integers(0, 2, (9, n_bits)).astype(np.uint8)
    idx = HammingIndex(n_bits)
    idx.add(db)
    for k in (1, 40, n):
        dist, ind = idx.search(q, k)
        rd, ri = naive.topk(naive.hamming(db, q), k)
        assert_array_equal(dist, rd)
        assert_array_equal(ind, ri)
