"""Seed 001's grid: N-ary Sylvester codes (top-left and adaptive truncation) vs random.

Usage::

    python benchmarks/codes_grid.py [--fast | --full] [--classes 4,8,10]

For every c in {4, 8, 10, 11, 16, 26, 52, 100, 1000}, n in {c/2, c, 2c} and
N in {2, 3, 5, 7, 11, 13} prints d_r and d_T of

* ``tl``   -- ``nary(c, n, N, truncation="top_left")`` (the seed's rule),
* ``ad``   -- ``nary(c, n, N)`` (adaptive truncation, deterministic),
* ``r1``   -- one random valid N-ary matrix (``nary_random(..., n_draws=1)``),
* ``rK``   -- best of K random valid matrices by d_T (``nary_random``, the
  seed's baseline; K = 1000, or fewer for c = 1000, see the header),

then lists every cell where ``ad`` is below ``rK`` on d_T.  A leading ``*``
marks a matrix that breaks P3/P4 or has equal rows (top-left only; the
others are valid by construction).  Cells where no valid matrix exists
(binary, n > 2^(c-1) - 1) are ``n/a``.  Random seeds: 0.  No data is read.

Profiles: ``--fast`` c <= 26 and K = 100; ``--full`` (default) the whole
grid, K = 1000 for c <= 100 and K = 10 for c = 1000 (a 1000 x 2000 draw
costs about half a second to score).
"""

import argparse
import sys
import time

from _common import machine

from edgecode.ecoc import check_properties, nary, nary_random

GRID_C = [4, 8, 10, 11, 16, 26, 52, 100, 1000]
GRID_N = [2, 3, 5, 7, 11, 13]


def _measure(fn):
    t0 = time.perf_counter()
    try:
        M = fn()
    except ValueError as exc:
        return None, str(exc), time.perf_counter() - t0
    p = check_properties(M)
    return p, None, time.perf_counter() - t0


def _fmt(p):
    if p is None:
        return "n/a"
    star = "" if p.valid else "*"
    return f"{star}{p.d_r:g}/{p.d_T:g}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--fast", action="store_true")
    g.add_argument("--full", action="store_true")
    ap.add_argument("--classes", help="comma list of c (default: the profile's)")
    args = ap.parse_args()
    fast = args.fast
    cs = [c for c in GRID_C if not fast or c <= 26]
    if args.classes:
        cs = [int(x) for x in args.classes.split(",")]
    print(f"# machine: {machine()}")
    print(f"# profile: {'fast' if fast else 'full'}; cells show d_r/d_T; "
          "'*' = invalid (P3/P4/equal rows)")
    print("c;n;N;top_left;adaptive;random_1;random_K;K;adaptive_s;random_K_s")
    losses, wins, ties, cells = [], 0, 0, 0
    t_start = time.perf_counter()
    for c in cs:
        K = (100 if fast else 1000) if c <= 100 else 10
        for n in (max(c // 2, 1), c, 2 * c):
            for N in GRID_N:
                tl, _, _ = _measure(lambda: nary(c, n, N=N, truncation="top_left"))
                ad, _, t_ad = _measure(lambda: nary(c, n, N=N))
                r1, _, _ = _measure(lambda: nary_random(c, n, N=N, n_draws=1, random_state=0))
                rk, _, t_rk = _measure(lambda: nary_random(c, n, N=N, n_draws=K,
                                                           random_state=0))
                print(f"{c};{n};{N};{_fmt(tl)};{_fmt(ad)};{_fmt(r1)};{_fmt(rk)};{K};"
                      f"{t_ad:.3f};{t_rk:.3f}", flush=True)
                if rk is None:
                    continue
                cells += 1
                if ad.d_T < rk.d_T:
                    losses.append((c, n, N, ad.d_T, rk.d_T))
                elif ad.d_T > rk.d_T:
                    wins += 1
                else:
                    ties += 1
    print(f"# {cells} comparable cells: adaptive > best-of-K random on d_T in {wins}, equal in "
          f"{ties}, below in {len(losses)}; {time.perf_counter() - t_start:.0f}s")
    for c, n, N, a, r in losses:
        print(f"# below: c={c} n={n} N={N}: adaptive d_T={a:g} < random d_T={r:g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
