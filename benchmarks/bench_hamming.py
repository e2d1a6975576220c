"""HammingIndex top-k scan rate vs a plain numpy popcount peer, in one process.

Usage::

    python benchmarks/bench_hamming.py [--fast]

Random codes (seeded), nothing read from ../shared.  Tasks: top-10 search of
Q queries over n stored codes of 64 and 128 bits.  Peer: numpy
``np.bitwise_count(db ^ q).sum(axis=1)`` then ``argpartition`` + a stable
sort of the k candidates (one query at a time).  Also a bare numba scan (XOR +
popcount + store the distance, no selection; 2-D indexed, so scalar) for scale.

Prints the first-call time (JIT compile or cache load), then
``task;n;peer_s;edgecode_s;ratio`` (median seconds per query batch; ratio =
peer / edgecode) and the scan rate in codes per second per thread.
"""

import argparse
import sys
from pathlib import Path

import numpy as np
from numba import njit

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import first_call_time, machine, median_time, print_table  # noqa: E402

from edgecode._config import NJIT  # noqa: E402
from edgecode.hashing import HammingIndex  # noqa: E402
from edgecode.hashing._kernels import _ctpop  # noqa: E402


@njit(**NJIT)
def bare_scan(db, q, out):
    """XOR + popcount + store, one word per code (2-D indexed: scalar popcount)."""
    for qi in range(q.shape[0]):
        x = q[qi, 0]
        for i in range(db.shape[0]):
            out[i] = _ctpop(db[i, 0] ^ x)


def numpy_topk(db, q, k):
    out = np.empty((q.shape[0], k), np.int64)
    for i in range(q.shape[0]):
        d = np.bitwise_count(db ^ q[i]).sum(axis=1, dtype=np.int64)
        cand = np.argpartition(d, k - 1)[:k]
        # stable (distance, index) order of the k found; exact ties at the
        # boundary may pick other indices than the index (peer is looser)
        out[i] = cand[np.lexsort((cand, d[cand]))]
    return out


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--fast", action="store_true")
    args = ap.parse_args(argv)
    n = 200_000 if args.fast else 1_000_000
    Q = 8 if args.fast else 32
    k = 10
    rng = np.random.default_rng(0)
    print(f"# {machine()}; n={n} codes, Q={Q} queries, k={k}")
    rows = []
    for bits in (64, 128):
        W = bits // 64
        db = rng.integers(0, 2**63, (n, W), dtype=np.uint64) * 2 + rng.integers(0, 2, (n, W),
                                                                              dtype=np.uint64)
        q = db[rng.integers(0, n, Q)] ^ np.uint64(1)
        idx = HammingIndex(bits)
        idx.add(db)
        if bits == 64:
            out = np.empty(n, np.int64)
            print(f"first call (compile/cache load): search "
                  f"{first_call_time(lambda: idx.search(q[:1], k)):.2f}s, bare scan "
                  f"{first_call_time(lambda: bare_scan(db, q[:1], out)):.2f}s")
            t_bare = median_time(lambda: bare_scan(db, q, out), repeats=5)
        t_ours = median_time(lambda: idx.search(q, k), repeats=5)
        t_peer = median_time(lambda: numpy_topk(db, q, k), repeats=3)
        d_ours, _ = idx.search(q, k)
        peer = numpy_topk(db, q, k)
        d_peer = np.bitwise_count(db[peer] ^ q[:, None, :]).sum(axis=2)
        assert np.array_equal(d_ours, d_peer), "distances of the top-k differ"
        rows.append((f"top{k}_{bits}bit", n, t_peer, t_ours, t_peer / t_ours))
        print(f"# {bits}-bit: edgecode {n * Q / t_ours:.3g} codes/s per thread, numpy peer "
              f"{n * Q / t_peer:.3g} codes/s" + (f", bare numba scan {n * Q / t_bare:.3g} codes/s"
                                                 if bits == 64 else ""))
    print_table(["task", "n", "peer_s", "edgecode_s", "ratio"], rows)


if __name__ == "__main__":
    main()
