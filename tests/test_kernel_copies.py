"""The kernels that exist twice on purpose, pinned together.

``edgecode`` (the host model: float inputs, scikit-learn conventions) and
``firmware_sim`` (the device runtime: fixed-point inputs, numpy and numba
only, the reference for the C runtime) may not import each other
(``docs/architecture.md``, "One copy of each kernel"). The few kernels both
sides need therefore exist once per package, and each pair is pinned here:
both copies get the same inputs where their arithmetic coincides (integer
values, exact in float32 and float64) and must return the same outputs,
ties included. Within a package there is one copy of each: popcount in
``edgecode/_kernels.py`` and ``firmware_sim/_kernels/bits.py``.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

from edgecode._kernels import _popcount64 as host_popcount
from edgecode.ecoc._kernels.predict import _hamming_packed, _hamming_symbols, _linear_symbols
from edgecode.ecoc._kernels.predict import _pack_bits as host_pack
from edgecode.ecoc._kernels.predict import _tree_symbols as host_tree
from edgecode.hashing import HammingIndex
from edgecode.hashing.codes import pack_bits
from firmware_sim._kernels.bits import _pack_bits as device_pack
from firmware_sim._kernels.bits import _popcount64 as device_popcount
from firmware_sim.kinds._kernels.ecoc import _decode_packed, _decode_symbols, _linear_scores, \
    _scores_to_symbols
from firmware_sim.kinds._kernels.forest import _forest_leaves as device_leaves
from firmware_sim.kinds.ecoc import compact_trees
from firmware_sim.kinds._kernels.ssbc import _hamming_knn
from firmware_sim.kinds.ssbc import _POPCNT8

U64_MAX = 2 ** 64 - 1


# ---------------------------------------------------------------- popcount
@njit
def _host_counts(xs, out):
    for i in range(xs.shape[0]):
        out[i] = np.int64(host_popcount(xs[i]))


@njit
def _device_counts(xs, out):
    for i in range(xs.shape[0]):
        out[i] = np.int64(device_popcount(xs[i]))


def _both_counts(values):
    xs = np.asarray(values, dtype=np.uint64)
    host = np.empty(xs.shape[0], np.int64)
    dev = np.empty(xs.shape[0], np.int64)
    _host_counts(xs, host)
    _device_counts(xs, dev)
    return host, dev, [int(v).bit_count() for v in xs.tolist()]


def test_popcount_copies_agree_on_edge_values():
    edges = [0, 1, 2, 3, 2 ** 63, 2 ** 63 - 1, 2 ** 63 + 1, U64_MAX, U64_MAX - 1,
             0x5555555555555555, 0xAAAAAAAAAAAAAAAA, 0x0F0F0F0F0F0F0F0F, 0x0101010101010101,
             0xFF00FF00FF00FF00, 0xFFFFFFFF, 0xFFFFFFFF00000000]
    edges += [1 << k for k in range(64)] + [U64_MAX ^ (1 << k) for k in range(64)]
    host, dev, want = _both_counts(edges)
    assert host.tolist() == want
    assert dev.tolist() == want


def test_popcount_copies_agree_on_random_words():
    rng = np.random.default_rng(11)
    dense = rng.integers(0, U64_MAX, size=4000, dtype=np.uint64, endpoint=True)
    sparse = dense & rng.integers(0, U64_MAX, size=4000, dtype=np.uint64, endpoint=True) \
        & rng.integers(0, U64_MAX, size=4000, dtype=np.uint64, endpoint=True)
    host, dev, want = _both_counts(np.concatenate([dense, sparse, ~sparse]))
    np.testing.assert_array_equal(host, want)
    np.testing.assert_array_equal(dev, want)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(0, U64_MAX), min_size=1, max_size=64))
def test_popcount_copies_agree_hypothesis(values):
    host, dev, want = _both_counts(values)
    assert host.tolist() == want == dev.tolist()


def test_device_byte_table_is_the_popcount():
    """The SSBC device counts bits with a byte table (what the C runtime does)."""
    host, _, want = _both_counts(np.arange(256))
    assert _POPCNT8.tolist() == host.tolist() == want


# ---------------------------------------------------------------- bit packing
@pytest.mark.parametrize("width", [1, 5, 63, 64, 65, 130])
def test_pack_bits_copies_agree(width):
    rng = np.random.default_rng(width)
    rows = (rng.random((40, width)) < rng.random((40, 1))).astype(np.int16)
    w = (width + 63) // 64
    host = np.full((40, w), 7, np.uint64)       # both kernels must clear the words
    dev = np.full((40, w), 7, np.uint64)
    host_pack(rows, host)
    device_pack(rows, dev)
    np.testing.assert_array_equal(host, dev)
    np.testing.assert_array_equal(host, pack_bits(rows, np.uint64))   # the container layout


# ---------------------------------------------------------------- tree walk
def _random_forest(rng, n_trees, n_features, n_symbols):
    """Flattened trees: feature (-1 at leaves), integer thresholds, children, leaf symbols."""
    feature, threshold, left, right, leaf, root = [], [], [], [], [], []

    def grow(depth):
        node = len(feature)
        feature.append(-1), threshold.append(0), left.append(-1), right.append(-1)
        leaf.append(int(rng.integers(0, n_symbols)))
        if depth < 6 and rng.random() < 0.8:
            feature[node] = int(rng.integers(0, n_features))
            threshold[node] = int(rng.integers(-20, 21))
            left[node] = grow(depth + 1)
            right[node] = grow(depth + 1)
        return node

    for _ in range(n_trees):
        root.append(grow(0))
    return [np.array(a) for a in (feature, threshold, left, right, leaf, root)]


@pytest.mark.parametrize("seed", range(6))
def test_tree_walk_copies_agree(seed):
    """Same trees, same integer inputs: the host walks float32 inputs against float64
    thresholds, the device int16 inputs against the compact node format's int16
    thresholds (``compact_trees``, then the forest walk every tree model shares:
    issue 26; left iff <=; inputs drawn near the thresholds so that equality is
    hit often)."""
    rng = np.random.default_rng(seed)
    n_features, n_trees = 7, 9
    f, t, lft, rgt, leaf, root = _random_forest(rng, n_trees, n_features, 3)
    q = rng.integers(-22, 23, size=(300, n_features)).astype(np.int16)
    host = np.empty((300, n_trees), np.int16)
    host_tree(np.ascontiguousarray(q, np.float32), f.astype(np.int64), t.astype(np.float64),
              lft.astype(np.int64), rgt.astype(np.int64), leaf.astype(np.int16),
              root.astype(np.int64), host)
    a = compact_trees(f, t, lft, rgt, leaf, root, 3)
    leaves = np.empty((300, n_trees), np.int32)
    device_leaves(q, a["node_feature"].astype(np.int64), a["node_threshold"].astype(np.int32),
                  a["node_left"].astype(np.int64), a["node_right"].astype(np.int64),
                  a["tree_root"].astype(np.int64), 3, leaves)
    dev = leaves.astype(np.int16)                  # a leaf id is its symbol
    np.testing.assert_array_equal(host, dev)
    assert (q[:, None, :] == t[None, :, None]).any()      # ties exercised


# ---------------------------------------------------------------- linear learners
def _linear_layout(rng, n_cols):
    """Per column 0 (constant), 1 (sign of one score) or >= 2 (argmax) scores."""
    n_out = rng.choice([0, 1, 1, 2, 3, 4], size=n_cols).astype(np.int64)
    n_cls = np.where(n_out == 0, 1, np.where(n_out == 1, 2, n_out)).astype(np.int64)
    out_off = np.concatenate([[0], np.cumsum(n_out)[:-1]]).astype(np.int64)
    cls_off = np.concatenate([[0], np.cumsum(n_cls)[:-1]]).astype(np.int64)
    classes = np.concatenate([np.sort(rng.choice(5, size=k, replace=False))
                              for k in n_cls]).astype(np.int16)
    return out_off, n_out, cls_off, n_cls, classes


@pytest.mark.parametrize("seed", range(6))
def test_linear_scoring_copies_agree(seed):
    """The device's int64 scores equal the host's float64 ``X @ W + b`` on integer
    values (exact in float64), and both turn equal scores into the same symbols
    (sign: > 0 is the second class; argmax: first on ties)."""
    rng = np.random.default_rng(100 + seed)
    n, d, n_cols = 400, 6, 8
    out_off, n_out, cls_off, n_cls, classes = _linear_layout(rng, n_cols)
    k = int(n_out.sum())
    q = rng.integers(-3, 4, size=(n, d)).astype(np.int16)       # small: ties and zeros
    W = rng.integers(-2, 3, size=(d, k)).astype(np.int32)
    b = rng.integers(-2, 3, size=k).astype(np.int64)
    dev_scores = np.empty((n, k), np.int64)
    _linear_scores(q, W, b, dev_scores)
    host_scores = np.ascontiguousarray(q.astype(np.float64) @ W.astype(np.float64) + b)
    np.testing.assert_array_equal(dev_scores, host_scores)
    host = np.empty((n, n_cols), np.int16)
    dev = np.empty((n, n_cols), np.int16)
    _linear_symbols(host_scores, out_off, n_out, cls_off, n_cls, classes, host)
    _scores_to_symbols(dev_scores, out_off, n_out, cls_off, n_cls, classes, dev)
    np.testing.assert_array_equal(host, dev)
    assert (dev_scores == 0).any()                                 # sign ties exercised


# ---------------------------------------------------------------- Hamming-nearest decoding
def _doubled(code, sym):
    used = code >= 0
    return 2 * ((sym[:, None, :] != code[None]) & used[None]).sum(axis=2) \
        + (~used).sum(axis=1)[None, :]


@pytest.mark.parametrize("n_symbols,m", [(2, 5), (2, 64), (2, 65), (2, 130), (3, 7), (5, 4)])
def test_hamming_decoding_copies_agree(n_symbols, m):
    """Doubled distance ``2 #(used and unequal) + #unused``, first minimum, on codes with
    "don't care" (-1) entries; received words include the codewords (ties)."""
    rng = np.random.default_rng(1000 * n_symbols + m)
    c = 6
    code = rng.integers(0, n_symbols, size=(c, m))
    code[rng.random((c, m)) < 0.2] = -1
    code[1] = code[0]                                      # identical rows: a sure tie
    code = code.astype(np.int16)
    sym = rng.integers(0, n_symbols, size=(500, m)).astype(np.int16)
    sym[:c] = np.where(code >= 0, code, 0)
    unused = (code < 0).sum(axis=1).astype(np.int64)
    want = _doubled(code.astype(np.int64), sym.astype(np.int64))

    host = np.empty(len(sym), np.int64)
    dist2 = np.empty((len(sym), c), np.int64)
    dev = np.empty(len(sym), np.int64)
    _hamming_symbols(sym, code, unused, host, dist2)
    _decode_symbols(sym, code, unused, dev)
    np.testing.assert_array_equal(dist2, want)
    np.testing.assert_array_equal(host, dev)
    np.testing.assert_array_equal(host, want.argmin(axis=1))
    if n_symbols == 2:
        w = (m + 63) // 64
        bits, used = np.empty((c, w), np.uint64), np.empty((c, w), np.uint64)
        device_pack((code == 1).astype(np.int16), bits)
        device_pack((code >= 0).astype(np.int16), used)
        words = np.empty((len(sym), w), np.uint64)
        device_pack(sym, words)
        _hamming_packed(words, bits, used, unused, host, dist2)
        _decode_packed(words, bits, used, unused, dev)
        np.testing.assert_array_equal(dist2, want)
        np.testing.assert_array_equal(host, dev)
        np.testing.assert_array_equal(host, want.argmin(axis=1))


# ---------------------------------------------------------------- SSBC k-nearest codes
@pytest.mark.parametrize("n_bits,k", [(12, 1), (12, 5), (70, 3)])
def test_hamming_knn_copies_agree(n_bits, k):
    """The device's k-NN over its byte-packed code table takes the same neighbours as
    the host's HammingIndex (distance, then lower row): same nearest distance, and
    its vote (ties to the lower class) is the vote over the host's neighbours."""
    rng = np.random.default_rng(n_bits + k)
    T, n, n_classes = 60, 300, 4
    table = (rng.random((T, n_bits)) < 0.5).astype(np.uint8)
    table[1] = table[0]                                    # equal rows: ties at distance 0
    queries = (rng.random((n, n_bits)) < 0.5).astype(np.uint8)
    queries[:T] = table
    labels = rng.integers(0, n_classes, size=T).astype(np.int64)

    idx = HammingIndex(n_bits)
    idx.add(table)
    dist, ind = idx.search(queries, k)
    votes = np.zeros((n, n_classes), np.int64)
    np.add.at(votes, (np.repeat(np.arange(n), k), labels[ind].reshape(-1)), 1)
    want_label = votes.argmax(axis=1)

    lab = np.empty(n, np.int64)
    near = np.empty(n, np.int64)
    _hamming_knn(pack_bits(queries, np.uint8), pack_bits(table, np.uint8), labels, k,
                 n_classes, _POPCNT8, lab, near)
    np.testing.assert_array_equal(near, dist[:, 0])
    np.testing.assert_array_equal(lab, want_label)


# ---------------------------------------------------------------- Wilson interval
def test_wilson_interval_copies_agree():
    """edgecode._stats and firmware_sim.engine.report each hold wilson_interval (the
    packages may not import each other): same numbers, same shapes, same answer
    (0, 1) for trials <= 0."""
    from edgecode._stats import wilson_interval as host
    from firmware_sim.engine.report import wilson_interval as device

    rng = np.random.default_rng(0)
    n = rng.integers(0, 500, 200)
    k = np.minimum(rng.integers(0, 500, 200), n)
    n[:5] = [0, 0, -3, 1, 1]
    k[:5] = [0, 4, 0, 0, 1]
    for conf in (0.9, 0.99, 0.9999):
        h_lo, h_hi = host(k, n, conf)
        d_lo, d_hi = device(k, n, conf)
        np.testing.assert_array_equal(h_lo, d_lo)
        np.testing.assert_array_equal(h_hi, d_hi)
        assert h_lo.dtype == d_lo.dtype == np.float64 and h_lo.shape == (200,)
        for kk, nn, lo, hi in zip(k.tolist(), n.tolist(), d_lo, d_hi):
            scalar_h, scalar_d = host(kk, nn, conf), device(kk, nn, conf)
            assert scalar_h == scalar_d == (lo, hi)
            assert all(type(v) is float for v in scalar_h + scalar_d)
    assert host(0, 0) == device(0, 0) == device(3, -1) == (0.0, 1.0)
    # one trials for every entry (the host's old signature) broadcasts
    np.testing.assert_array_equal(host(k[5:], 600)[0], device(k[5:], 600)[0])
    # the textbook value: 50 of 100 at 95%
    assert [round(v, 4) for v in device(50, 100, 0.95)] == [0.4038, 0.5962]
