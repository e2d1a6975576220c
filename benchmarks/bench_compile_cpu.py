"""Compile CPU of the demo's numba kernels (issue 14), per top-level kernel.

    python benchmarks/bench_compile_cpu.py PREFIX[,PREFIX...] [--repeats R] [--repo DIR] [--list FILE]

--list FILE: a private kernel list (same format as export/cli/_warmup_kernels.py), e.g.
recorded after changing kernel signatures with
    NUMBA_CACHE_DIR=$(mktemp -d) EDGECODE_NO_WARMUP=1 python -m export.cli._warmup --record-here FILE
(records from a cold in-process demo, ~40 s). --repo DIR: run the code of another checkout
(e.g. a pristine copy made with `git archive HEAD | tar -x -C DIR`).

Compiles, in a fresh NUMBA_CACHE_DIR per repeat and a fresh process, every kernel
of export/cli/_warmup_kernels.py called from Python whose module starts with
one of the prefixes (e.g. edgecode.scp,edgecode.redundancy), in the demo's
first-call order, and prints the process CPU seconds (time.process_time) of
each compile (inclusive of nested kernels compiled for it) and the total;
medians over the repeats. numba's one-time initialisation is paid before
timing. CPU time, not wall: robust to other processes on the machine.
"""
import json, os, statistics, subprocess, sys, tempfile

CHILD = r'''
import json, sys, time
import numba, numpy as np
@numba.njit
def _triv(a):
    return np.empty(3)[0] + a.sum()
_triv(np.zeros(2))
from export.cli._warmup import kernel_signatures
prefixes = tuple(sys.argv[1].split(","))
if len(sys.argv) > 2:
    ns = {}
    exec(open(sys.argv[2]).read(), ns)
    KERNELS = ns["KERNELS"]
else:
    from export.cli._warmup_kernels import KERNELS
rows = [r for r in KERNELS if r[0].startswith(prefixes)]
out = []
for (mod, name, src, top), (d, sig) in zip([r for r in rows if r[3]], kernel_signatures(rows, bare_packages=True)):
    t0 = time.process_time(); d.compile(sig); out.append([f"{mod}.{name}", time.process_time() - t0])
print(json.dumps(out))
'''

def main():
    import argparse
    ap = argparse.ArgumentParser(description="Compile CPU of the demo's numba kernels, per kernel.")
    ap.add_argument("prefixes", help="comma-separated module prefixes, e.g. edgecode.,firmware_sim.")
    ap.add_argument("--repeats", type=int, default=3, help="fresh-cache runs (median); default 3")
    ap.add_argument("--repo", default=os.getcwd(), help="checkout whose code is compiled")
    ap.add_argument("--list", help="a private kernel list file (format of _warmup_kernels.py)")
    a = ap.parse_args()
    prefixes, reps, repo = a.prefixes, a.repeats, os.path.abspath(a.repo)
    lst = [os.path.abspath(a.list)] if a.list else []
    runs = []
    for _ in range(reps):
        with tempfile.TemporaryDirectory() as cache:
            env = {**os.environ, "NUMBA_CACHE_DIR": cache, "PYTHONPATH": repo}
            r = subprocess.run([sys.executable, "-c", CHILD, prefixes, *lst], env=env, cwd=repo,
                               capture_output=True, text=True)
            if r.returncode:
                sys.exit(r.stderr)
            runs.append(json.loads(r.stdout.strip().splitlines()[-1]))
    names = [n for n, _ in runs[0]]
    print("kernel;compile_cpu_s (median of %d)" % reps)
    for i, n in enumerate(names):
        print(f"{n};{statistics.median(r[i][1] for r in runs):.3f}")
    print(f"TOTAL;{statistics.median(sum(t for _, t in r) for r in runs):.3f}  (runs: "
          + ", ".join(f"{sum(t for _, t in r):.2f}" for r in runs) + ")")

if __name__ == "__main__":
    main()
