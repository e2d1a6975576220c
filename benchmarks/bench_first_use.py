"""First use: `edgecode demo` on an empty numba cache against a warm one (issue 14),
with and without the background warm-up of the later stages' kernels, and the
compile seconds per kernel (numba's compile events) of a cold in-process demo.

Run:  python benchmarks/bench_first_use.py [--pairs N] [--no-baseline] [--profile]
Each cold run uses a fresh NUMBA_CACHE_DIR in a temporary folder; each warm run
follows its cold run on the same cache. ``--pairs N`` repeats the cold/warm
pair with the warm-up N times and prints the median ratio (the machine is
shared and noisy: one pair is not a measurement).
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine, print_table  # noqa: E402

_PROFILE = """
import collections, io, time
from numba.core import event as ev
rec = collections.defaultdict(float)
cnt = collections.Counter()
class L(ev.Listener):
    def __init__(self): self.t = {}
    def on_start(self, e): self.t[id(e.data["dispatcher"]), str(e.data["args"])] = time.perf_counter()
    def on_end(self, e):
        d = e.data["dispatcher"]
        k = (id(d), str(e.data["args"]))
        name = f"{d.py_func.__module__}.{d.py_func.__qualname__}"
        rec[name] += time.perf_counter() - self.t.pop(k, time.perf_counter())
        cnt[name] += 1
ev.register("numba:compile", L())
t0 = time.perf_counter()
from export.cli import run_demo
run_demo(None, trials=2000, stream=io.StringIO())
print(f"# cold demo in process {time.perf_counter() - t0:.1f} s (no warm-up process)")
print("kernel;compile_s;specialisations")
for k, v in sorted(rec.items(), key=lambda kv: -kv[1])[:25]:
    print(f"{k};{v:.2f};{cnt[k]}")
"""


def demo_seconds(cache, warmup=True):
    env = {**os.environ, "NUMBA_CACHE_DIR": cache}
    if not warmup:
        env["EDGECODE_NO_WARMUP"] = "1"
    t0 = time.perf_counter()
    subprocess.run(["edgecode", "demo"], env=env, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--profile", action="store_true", help="also the compile table")
    ap.add_argument("--pairs", type=int, default=1, help="cold/warm pairs with the warm-up")
    ap.add_argument("--no-baseline", action="store_true",
                    help="skip the pair without the warm-up process")
    a = ap.parse_args()
    print(f"# {machine()}")
    rows = []
    for warm in [True] * a.pairs + ([] if a.no_baseline else [False]):
        with tempfile.TemporaryDirectory() as cache:
            cold = demo_seconds(cache, warm)
            hot = demo_seconds(cache, warm)
        rows.append(["with warm-up" if warm else "without warm-up", cold, hot, cold / hot])
    print_table(["edgecode demo", "cold_s", "warm_s", "cold/warm"], rows)
    ratios = sorted(r[3] for r in rows if r[0] == "with warm-up")
    if len(ratios) > 1:
        print(f"# with warm-up: median cold/warm {statistics.median(ratios):.3f} over "
              f"{len(ratios)} pairs (range {ratios[0]:.3f}-{ratios[-1]:.3f})")
    if a.profile:
        with tempfile.TemporaryDirectory() as cache:
            env = {**os.environ, "NUMBA_CACHE_DIR": cache, "EDGECODE_NO_WARMUP": "1"}
            subprocess.run([sys.executable, "-c", _PROFILE], env=env, check=True)


if __name__ == "__main__":
    main()
