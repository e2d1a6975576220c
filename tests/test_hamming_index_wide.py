"""HammingIndex on wide codes (issue 14): the tiled, vectorised scan returns the
brute-force top-k (distances and the lower-index tie order) at every width, for
any thread count."""

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from edgecode.hashing import HammingIndex
from edgecode.hashing._kernels import TILE


def _brute(db, q, k):
    D = (q[:, None, :] != db[None, :, :]).sum(-1)
    order = np.lexsort((np.broadcast_to(np.arange(len(db)), D.shape), D), axis=-1)[:, :k]
    return np.take_along_axis(D, order, 1), order


@pytest.mark.parametrize("bits", [1, 63, 64, 65, 127, 128, 192, 256, 300, 512, 1000])
def test_top_k_equals_brute_force_with_ties(bits):
    rng = np.random.default_rng(bits)
    n = 2 * TILE + 37                          # a partial last tile
    db = rng.integers(0, 2, (n, bits)).astype(np.uint8)
    db[[5, 300, n - 1]] = db[200]               # exact ties across tiles
    near = db[200].copy()
    near[: max(1, bits // 50)] ^= 1
    q = np.vstack([db[200], near, np.zeros(bits, np.uint8),
                   rng.integers(0, 2, (37, bits)).astype(np.uint8)])
    idx = HammingIndex(bits)
    idx.add(db[:100])
    idx.add(db[100:])                           # tiles rebuilt after add
    for k in (1, 10, n):
        d, i = idx.search(q, k)
        bd, bi = _brute(db, q, k)
        assert np.array_equal(d, bd) and np.array_equal(i, bi)


def test_results_do_not_depend_on_the_thread_count():
    rng = np.random.default_rng(0)
    db = rng.integers(0, 2, (3000, 256)).astype(np.uint8)
    q = rng.integers(0, 2, (70, 256)).astype(np.uint8)    # several blocks of 16
    idx = HammingIndex(256)
    idx.add(db)
    old = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = idx.search(q, 7)
        numba.set_num_threads(max(2, old))
        two = idx.search(q, 7)
    finally:
        numba.set_num_threads(old)
    assert np.array_equal(one[0], two[0]) and np.array_equal(one[1], two[1])


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 600), words=st.integers(1, 9), k=st.integers(1, 12),
       seed=st.integers(0, 2**32 - 1), density=st.sampled_from([0.02, 0.5, 0.98]))
def test_random_cases(n, words, k, seed, density):
    rng = np.random.default_rng(seed)
    bits = 64 * words - int(rng.integers(0, 64))
    db = (rng.random((n, bits)) < density).astype(np.uint8)
    q = (rng.random((5, bits)) < density).astype(np.uint8)
    k = min(k, n)
    idx = HammingIndex(bits)
    idx.add(db)
    d, i = idx.search(q, k)
    bd, bi = _brute(db, q, k)
    assert np.array_equal(d, bd) and np.array_equal(i, bi)


def test_ssbc_codes_do_not_depend_on_the_thread_count():
    """SSBC's Gaussian affinities are exponentiated over row chunks on numba's
    threads: elementwise, so the codes are the same for any thread count."""
    from edgecode.hashing import SSBC
    rng = np.random.default_rng(3)
    X = rng.normal(size=(3000, 20))
    model = SSBC(24, 64, 40, random_state=0).fit(X[:1000])
    old = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = model.transform(X)
        numba.set_num_threads(max(2, old))
        two = model.transform(X)
    finally:
        numba.set_num_threads(old)
    assert np.array_equal(one, two)
