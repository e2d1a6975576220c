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


def faiss_topk(bits, db, q, k):
    """faiss IndexBinaryFlat (exact) on the same codes, or None without faiss-cpu."""
    try:
        import faiss
    except ImportError:
        return None
    faiss.omp_set_num_threads(1)
    W = db.shape[1]
    index = faiss.IndexBinaryFlat(bits)
    index.add(np.ascontiguousarray(db).view(np.uint8).reshape(len(db), 8 * W))
    qq = np.ascontiguousarray(q).view(np.uint8).reshape(len(q), 8 * W)
    index.search(qq[:1], k)
    return lambda: index.search(qq, k)


def main(argv=None):
    import numba

    ap = argparse.ArgumentParser()
    ap.add_argument("--fast", action="store_true")
    args = ap.parse_args(argv)
    n = 200_000 if args.fast else 1_000_000
    Q = 16 if args.fast else 64
    k = 10
    rng = np.random.default_rng(0)
    threads = numba.get_num_threads()
    print(f"# {machine()}; n={n} codes, Q={Q} queries, k={k}; faiss-cpu (benchmark-only peer, "
          "IndexBinaryFlat, omp 1 thread) if installed")
    rows, frows = [], []
    for bits in (64, 128, 256, 512):
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
        numba.set_num_threads(1)
        idx.search(q[:1], k)
        t_ours = median_time(lambda: idx.search(q, k), repeats=5)
        numba.set_num_threads(threads)
        t_ours2 = median_time(lambda: idx.search(q, k), repeats=5)
        d_ours, i_ours = idx.search(q, k)
        if bits <= 128:
            t_peer = median_time(lambda: numpy_topk(db, q, k), repeats=3)
            peer = numpy_topk(db, q, k)
            d_peer = np.bitwise_count(db[peer] ^ q[:, None, :]).sum(axis=2)
            assert np.array_equal(d_ours, d_peer), "distances of the top-k differ"
            rows.append((f"top{k}_{bits}bit", n, t_peer, t_ours, t_peer / t_ours))
        fs = faiss_topk(bits, db, q, k)
        if fs is not None:
            fd, fi = fs()
            assert np.array_equal(fd, d_ours), "faiss and edgecode distances differ"
            t_f = median_time(fs, repeats=5)
            frows.append((f"top{k}_{bits}bit", n, t_f, t_ours, t_f / t_ours, t_ours2,
                          t_ours / t_ours2, n * Q / t_ours, n * Q / t_f))
        print(f"# {bits}-bit: edgecode {n * Q / t_ours:.3g} codes/s on one thread, "
              f"{n * Q / t_ours2:.3g} on {threads}" + (
                  f", bare numba scan {n * Q / t_bare:.3g} codes/s" if bits == 64 else ""))
    print("\n# numpy peer (one query at a time); ratio = peer / edgecode, one thread each")
    print_table(["task", "n", "peer_s", "edgecode_s", "ratio"], rows)
    if frows:
        print(f"\n# faiss peer; ratio = faiss / edgecode, one thread each; then edgecode on "
              f"{threads} threads and its speedup")
        print_table(["task", "n", "faiss_s", "edgecode_1t_s", "ratio", f"edgecode_{threads}t_s",
                     "thread_speedup", "edgecode_codes_per_s", "faiss_codes_per_s"], frows)
    else:
        print("\n# faiss-cpu not installed (pip install faiss-cpu): no faiss rows")


if __name__ == "__main__":
    main()
