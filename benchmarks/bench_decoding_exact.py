"""Exact ECOC decoding probability: edgecode versus per-word enumeration in numpy.

``edgecode.ecoc.decoding_probabilities`` labels every one of the ``2^L``
received words once and applies the channel one learner axis at a time, for
all asked words together. The peer is what one writes first (and what
``export.analytics.ecoc_exact_tables`` did): per distinct clean word, XOR all
``2^L`` flip patterns into it, Hamming distances to every row by
``np.bitwise_count`` on packed integers, ``argmin`` (lowest index on ties),
and sum the pattern probabilities ``eps^k (1 - eps)^(L - k)`` where the label
is kept. Both on the same random binary code (10 classes) and random words;
the script checks they agree to 1e-12.

Also times the N-ary cases (no peer: ``3^13`` patterns per word) and reports
the numba compile time of the first call.

Run:  python benchmarks/bench_decoding_exact.py [--repeats 3]
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine, median_time, print_table  # noqa: E402

from edgecode.ecoc import decoding_probabilities  # noqa: E402


def peer_same_probability(code, eps, words):
    """Per-word enumeration of the 2^L flip patterns (binary code, no -1)."""
    c, L = code.shape
    pack = 1 << np.arange(L, dtype=np.int64)
    rows = code.astype(np.int64) @ pack
    pat = np.arange(1 << L, dtype=np.int64)
    k = np.bitwise_count(pat).astype(np.int64)
    prob = eps ** k * (1.0 - eps) ** (L - k)
    out = np.empty(len(words))
    for i, w in enumerate(words.astype(np.int64) @ pack):
        rx = w ^ pat
        dist = np.bitwise_count(rx[:, None] ^ rows[None, :])
        label = dist.argmin(axis=1)
        clean = np.bitwise_count(w ^ rows).argmin()
        out[i] = prob[label == clean].sum()
    return out


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    print(f"# machine: {machine()}")
    t0 = time.perf_counter()
    decoding_probabilities(rng.integers(0, 2, (3, 4)), 0.1, rng.integers(0, 2, (2, 4)))
    print(f"# first call (numba compile or cache load): {time.perf_counter() - t0:.2f} s")
    rows = []
    for L, n_words in ((12, 500), (16, 500), (20, 100)):
        code = rng.integers(0, 2, (10, L))
        words = rng.integers(0, 2, (n_words, L))
        ours = decoding_probabilities(code, 0.1, words)
        peer = peer_same_probability(code, 0.1, words)
        assert np.allclose(ours, peer, rtol=0, atol=1e-12), np.abs(ours - peer).max()
        t_peer = median_time(lambda: peer_same_probability(code, 0.1, words),
                             repeats=args.repeats, warmup=0)
        t_ours = median_time(lambda: decoding_probabilities(code, 0.1, words),
                             repeats=args.repeats, warmup=1)
        rows.append([f"binary_c10_L{L}_{n_words}words", t_peer, t_ours, t_peer / t_ours])
    print_table(["task", "peer_s", "edgecode_s", "ratio"], rows)
    rows = []
    for N, L in ((2, 22), (3, 13), (5, 9)):
        code = rng.integers(0, N, (10, L))
        words = rng.integers(0, N, (1000, L))
        targets = np.stack([np.zeros(1000, np.int64) + k for k in (0, 1)])  # two classes
        t = median_time(lambda: decoding_probabilities(code, 0.1, words, targets),
                        repeats=args.repeats, warmup=1)
        rows.append([f"N{N}_c10_L{L}_2classes", N ** L, t])
    print_table(["task", "received_words", "edgecode_s"], rows)


if __name__ == "__main__":
    main()
