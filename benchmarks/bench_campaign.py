"""Campaign throughput: firmware_sim.campaign versus a plain numpy campaign.

Protected naive Bayes on house votes (bundled data, 435 points, 16 features),
greedy plan with a 32-bit redundancy budget planned at eps = 0.1 (48 channel
bits per inference). Each task runs the same campaign twice in one process:

* peer: plain numpy, vectorised over a batch of trials (uniforms compared with
  eps for the flips, ``np.add.reduceat`` for the majority votes, a matrix
  product for the integer log-odds; for the burst channel the two-state chain
  is stepped bit position by bit position, vectorised over rows); one more
  row times the per-trial numpy loop of ``benchmarks/sim_vs_planner.py``;
* edgecode: ``firmware_sim.campaign.run_campaign`` (geometric skipping for the
  BSC, the numba Gilbert-Elliott kernel, the numba decode-and-accumulate loop).

ECOC on pendigits (read from ``../shared/datasets/pendigits.csv.gz`` as
``benchmarks/ecoc_robustness.py`` does; override the folder with
EDGECODE_SHARED_DATA; official split, the 3498 test points are campaigned):
decision trees (scikit-learn defaults, random_state 0) on a 20-column binary
``dense_random`` code and a 20-column N = 3 ``nary`` code, exported to the
device runtime and campaigned at ``site="intermediate"``; a BSC of
eps = 0.1 on the learner outputs (N = 3: an event replaces the symbol by a
uniformly random other one). The peer computes the clean learner outputs once
with the same device, then per batch of trials draws the output errors with
numpy (uniforms compared with eps; N-ary: plus uniform shifts 1..N-1) and
decodes with numpy broadcasting (doubled Hamming distances to every row,
``argmin``: ties to the lowest class index, as the device). Both time the
learner outputs once plus ``--ecoc-trials`` noisy decodes of every point.

Times are medians of ``--repeats`` runs after a warm-up (JIT excluded); ``n``
is the number of (point, trial) inferences per run. edgecode runs with one
thread (``n_jobs=1``) and with two (``n_jobs=2``: batches of (point, trial)
rows on two threads, the same counts); ``ratio`` is peer / edgecode with two
threads, ``threads`` the speedup of two threads over one.

``--dask`` also runs the house-votes BSC campaign on a ``dask.distributed``
``LocalCluster`` of two single-threaded worker processes (``client=``) and
prints trials per second per worker next to the local run (the counts are
checked equal).

Run:  python benchmarks/bench_campaign.py [--trials 2000] [--ecoc-trials 200] [--repeats 3]
                                          [--full] [--only nb|ecoc] [--dask]
      python benchmarks/bench_campaign.py --compile    # first-call (numba compile) times
"""

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine, median_time, print_table  # noqa: E402

from edgecode.datasets import load_house_votes  # noqa: E402
from edgecode.naive_bayes import BinaryNaiveBayes  # noqa: E402
from edgecode.redundancy import allocate_greedy  # noqa: E402
from export.naive_bayes import quantize_naive_bayes  # noqa: E402
from firmware_sim.campaign import run_campaign  # noqa: E402
from firmware_sim.faults import BSC, GilbertElliott  # noqa: E402
from firmware_sim.naive_bayes import ProtectedNBDevice  # noqa: E402

BATCH_CELLS = 1 << 22


def _numpy_setup(device, X):
    r = device.repetitions.astype(np.int64)
    copies = 2 * r + 1
    starts = np.concatenate([[0], np.cumsum(copies)[:-1]])
    w = device.weights.astype(np.int64)
    clean = device.bias + X.astype(np.int64) @ w > 0
    bits = np.repeat(X, copies, axis=1).astype(np.uint8)
    return r, starts, w, clean, bits


def _numpy_decide(device, rx, r, starts, w, clean):
    ones = np.add.reduceat(rx, starts, axis=-1, dtype=np.int64)
    acc = device.bias + (ones > r).astype(np.int64) @ w
    return ((acc > 0) == clean).sum(axis=0)


def numpy_campaign_bsc(device, X, eps, trials, seed):
    """Plain numpy BSC campaign: same counts as run_campaign (other random draws)."""
    rng = np.random.default_rng(seed)
    r, starts, w, clean, bits = _numpy_setup(device, X)
    same = np.zeros(len(X), np.int64)
    per = max(1, BATCH_CELLS // bits.size)
    for t0 in range(0, trials, per):
        b = min(per, trials - t0)
        rx = bits[None] ^ (rng.random((b,) + bits.shape) < eps)
        same += _numpy_decide(device, rx, r, starts, w, clean)
    return same


def numpy_campaign_per_trial(device, X, eps, trials, seed):
    """The per-trial numpy loop of ``benchmarks/sim_vs_planner.py`` (one trial of
    every point per iteration, ``np.add.at`` for the votes)."""
    rng = np.random.default_rng(seed)
    r, _, w, clean, bits = _numpy_setup(device, X)
    owner = np.repeat(np.arange(X.shape[1]), 2 * r + 1)
    same = np.zeros(len(X), np.int64)
    for _ in range(trials):
        rx = bits ^ (rng.random(bits.shape) < eps)
        ones = np.zeros(X.shape, np.int64)
        np.add.at(ones.T, owner, rx.T)
        same += (device.bias + (ones > r).astype(np.int64) @ w > 0) == clean
    return same


def numpy_campaign_burst(device, X, ge, trials, seed):
    """Plain numpy Gilbert-Elliott campaign (each transmission starts stationary)."""
    rng = np.random.default_rng(seed)
    r, starts, w, clean, bits = _numpy_setup(device, X)
    t, width = bits.shape
    same = np.zeros(t, np.int64)
    per = max(1, BATCH_CELLS // bits.size)
    for t0 in range(0, trials, per):
        b = min(per, trials - t0)
        rows = b * t
        flips = np.empty((rows, width), bool)
        bad = rng.random(rows) < ge.stationary_bad
        for k in range(width):
            if k:
                u = rng.random(rows)
                bad = np.where(bad, u >= ge.r, u < ge.p)
            e = np.where(bad, ge.eps_bad, ge.eps_good)
            flips[:, k] = rng.random(rows) < e
        rx = bits[None] ^ flips.reshape(b, t, width)
        same += _numpy_decide(device, rx, r, starts, w, clean)
    return same


def numpy_campaign_ecoc(device, q, eps, trials, seed):
    """Plain numpy campaign of an ECOC device under independent output noise."""
    rng = np.random.default_rng(seed)
    out = device.learner_outputs(q).astype(np.int64)
    code = device.code.astype(np.int64)
    used = code >= 0
    unused = (~used).sum(axis=1)
    N = device.n_symbols

    def decode(sym):
        neq = (sym[..., None, :] != code) & used
        return (2 * neq.sum(axis=-1) + unused).argmin(axis=-1)

    clean = decode(out)
    t, m = out.shape
    same = np.zeros(t, np.int64)
    per = max(1, BATCH_CELLS // (out.size * code.shape[0]))
    for t0 in range(0, trials, per):
        b = min(per, trials - t0)
        hit = rng.random((b, t, m)) < eps
        if N == 2:
            rx = out[None] ^ hit
        else:
            rx = np.where(hit, (out[None] + rng.integers(1, N, (b, t, m))) % N, out[None])
        same += (decode(rx) == clean).sum(axis=0)
    return same


def _ecoc_devices():
    from ecoc_robustness import load_pendigits
    from sklearn.tree import DecisionTreeClassifier

    from edgecode.ecoc import make_code
    from edgecode.ecoc.classifier import ECOCClassifier
    from export.ecoc import export_ecoc

    Xtr, ytr, Xte, yte = load_pendigits()
    devs = {}
    for name, M in (("binary20", make_code("dense_random", 10, 20, random_state=0)),
                    ("nary3_20", make_code("nary", 10, 20, N=3, random_state=0))):
        clf = ECOCClassifier(DecisionTreeClassifier(random_state=0), code=M).fit(Xtr, ytr)
        devs[name] = export_ecoc(clf, Xtr).device
    return devs, Xte


def _device():
    d = load_house_votes()
    nb = BinaryNaiveBayes().fit(d.X, d.y)
    plan = allocate_greedy(nb.decision_function(d.X), nb.flip_deltas(d.X), 0.1, 32,
                           method="exact")
    w, b, s, _ = quantize_naive_bayes(nb, d.X)
    return d, ProtectedNBDevice.from_arrays(w, b, plan.repetitions, s)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--ecoc-trials", type=int, default=200)
    ap.add_argument("--full", action="store_true", help="20000 (ECOC 2000) trials, 5 repeats")
    ap.add_argument("--only", choices=["nb", "ecoc"], help="run one family of tasks")
    ap.add_argument("--compile", action="store_true",
                    help="only time each fast path's first call on an empty numba cache")
    ap.add_argument("--dask", action="store_true", help="also a two-worker LocalCluster run")
    args = ap.parse_args(argv)
    if args.compile:
        return compile_times()
    if args.full:
        args.trials, args.ecoc_trials, args.repeats = 20000, 2000, 5
    print(f"# machine: {machine()}")
    rows = []
    if args.only != "ecoc":
        rows += _nb_rows(args)
    if args.only != "nb":
        rows += _ecoc_rows(args)
    print_table(["task", "n", "peer_s", "edgecode_1thread_s", "edgecode_2threads_s", "ratio",
                 "threads"], rows)
    if args.dask:
        dask_rows(args)


def _ours(fn, repeats):
    """(1-thread, 2-thread) median seconds of fn(n_jobs)."""
    return (median_time(lambda: fn(1), repeats=repeats, warmup=1),
            median_time(lambda: fn(2), repeats=repeats, warmup=1))


def dask_rows(args):
    """The house-votes BSC campaign locally and on a two-worker LocalCluster."""
    import time

    from dask.distributed import Client, LocalCluster

    d, dev = _device()
    X = d.X
    T = args.trials * 50                       # a job of seconds: tasks of ~16 batches
    n = len(X) * T
    t0 = time.perf_counter()
    local = run_campaign(dev, X, BSC(0.1), n_trials=T, random_state=0, n_jobs=1)
    t_local = time.perf_counter() - t0
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        run_campaign(dev, X, BSC(0.1), n_trials=args.trials, random_state=1, client=client)
        times = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            remote = run_campaign(dev, X, BSC(0.1), n_trials=T, random_state=0, client=client)
            times.append(time.perf_counter() - t0)
    t_remote = sorted(times)[len(times) // 2]
    same = local.points[0].same_per_point == remote.points[0].same_per_point
    print(f"\n# dask: house votes BSC eps 0.1, {n} (point, trial) inferences; counts equal to "
          f"the local run: {same}")
    print_table(["run", "seconds", "trials_per_s", "trials_per_s_per_worker"],
                [["local, 1 thread", t_local, n / t_local, n / t_local],
                 ["LocalCluster, 2 workers x 1 thread", t_remote, n / t_remote,
                  n / t_remote / 2]])


def _ecoc_rows(args):
    devs, Xte = _ecoc_devices()
    T = args.ecoc_trials
    print(f"# pendigits ECOC: {len(Xte)} test points, decision trees, 20 learners, "
          f"BSC eps 0.1 on the learner outputs, {T} trials, median of {args.repeats}")
    rows = []
    for name, dev in devs.items():
        q = dev.quantize(Xte)
        a = dev
        ours = run_campaign(a, Xte, BSC(0.1), n_trials=T, random_state=0,
                            site="intermediate").points[0].same_rate
        peer = numpy_campaign_ecoc(dev, q, 0.1, T, 1).sum() / (len(q) * T)
        print(f"# {name} (N={dev.n_symbols}): same-classification rate at eps 0.1: "
              f"edgecode {ours:.5f}, numpy {peer:.5f}")
        t_peer = median_time(lambda: numpy_campaign_ecoc(dev, q, 0.1, T, 0),
                             repeats=args.repeats, warmup=1)
        t1, t2 = _ours(lambda j: run_campaign(a, Xte, BSC(0.1), n_trials=T, random_state=0,
                                              site="intermediate", n_jobs=j), args.repeats)
        rows.append([f"ecoc_pendigits_{name}_trees_bsc_eps0.1", len(q) * T, t_peer, t1, t2,
                     t_peer / t2, t1 / t2])
    return rows


def _nb_rows(args):
    d, dev = _device()
    X = d.X
    print(f"# house votes: {len(X)} points, {dev.total_bits} channel bits per inference, "
          f"median of {args.repeats}; n = points x trials")
    T = args.trials
    tasks = []
    for eps in (0.01, 0.1):
        tasks.append((f"protected_nb_house_votes_bsc_eps{eps:g}", T,
                      lambda e=eps: numpy_campaign_bsc(dev, X, e, T, 0),
                      lambda j, e=eps: run_campaign(dev, X, BSC(e), n_trials=T, random_state=0,
                                                    n_jobs=j)))
    ge = GilbertElliott.from_flip_rate(0.1, 4.0)
    tasks.append(("protected_nb_house_votes_burst_rate0.1_len4", T,
                  lambda: numpy_campaign_burst(dev, X, ge, T, 0),
                  lambda j: run_campaign(dev, X, ge, n_trials=T, random_state=0, n_jobs=j)))
    small = max(50, T // 10)
    tasks.append(("protected_nb_house_votes_bsc_eps0.1_vs_per_trial_loop", small,
                  lambda: numpy_campaign_per_trial(dev, X, 0.1, small, 0),
                  lambda j: run_campaign(dev, X, BSC(0.1), n_trials=small, random_state=0,
                                         n_jobs=j)))
    # agreement of the implementations (different draws, same law)
    n = len(X) * T
    ours = run_campaign(dev, X, BSC(0.1), n_trials=T, random_state=0).points[0].same_rate
    peer = numpy_campaign_bsc(dev, X, 0.1, T, 1).sum() / n
    print(f"# same-classification rate at eps 0.1: edgecode {ours:.5f}, numpy {peer:.5f}")
    rows = []
    for name, trials, peer_fn, ours_fn in tasks:
        t_peer = median_time(peer_fn, repeats=args.repeats, warmup=1)
        t1, t2 = _ours(ours_fn, args.repeats)
        rows.append([name, len(X) * trials, t_peer, t1, t2, t_peer / t2, t1 / t2])
    return rows


_FIRST_CALLS = """
import time
import numpy as np
t0 = time.perf_counter()
from firmware_sim.campaign import run_campaign
from firmware_sim.ecoc import ECOCDevice, make_ecoc_arrays
from firmware_sim.artifact import read_container, write_container
from firmware_sim.faults import BSC, GilbertElliott
from firmware_sim.naive_bayes import ProtectedNBDevice
print(f"import;{time.perf_counter() - t0:.2f}")
nb = ProtectedNBDevice.from_arrays([2, -1, 1], -1, [1, 0, 2])
X = np.array([[0, 1, 1], [1, 0, 1]], np.uint8)
def ecoc(code):
    code = np.asarray(code)
    c, m = code.shape
    n = int(code.max()) + 1
    k = 1 if n == 2 else n                       # scores per learner
    cls = [s for j in range(m) for s in range(n)]
    arr = make_ecoc_arrays(code, cls, [n] * m, [0.0], [0],
                           linear={"weights": np.arange(1, k * m + 1)[None, :],
                                   "bias": np.zeros(k * m, int), "n_out": [k] * m})
    return ECOCDevice(read_container(write_container(None, "ecoc", arr)))
q = np.array([[1.0], [2.0]])
cases = [("nb_bsc_eps0.1", nb, X, BSC(0.1)), ("nb_bsc_eps0.01", nb, X, BSC(0.01)),
         ("nb_burst", nb, X, GilbertElliott(0.1, 0.3)),
         ("ecoc_binary_bsc", ecoc([[0, 0, 1], [1, 1, 0]]), q, BSC(0.1)),
         ("ecoc_3ary_bsc", ecoc([[0, 1, 2], [2, 0, 1]]), q, BSC(0.1))]
for name, dev, x, f in cases:
    t0 = time.perf_counter()
    run_campaign(dev, x, f, n_trials=10)
    print(f"{name};{time.perf_counter() - t0:.2f}")
"""


def compile_times():
    """First-call seconds of each campaign path in a fresh process with an empty
    numba cache (compile), then again with the cache filled (load)."""
    import os
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache}
        runs = [subprocess.run([sys.executable, "-c", _FIRST_CALLS], env=env, check=True,
                               capture_output=True, text=True).stdout for _ in range(2)]
    cold = dict(line.split(";") for line in runs[0].split())
    warm = dict(line.split(";") for line in runs[1].split())
    print(f"# machine: {machine()}; first call of each path in a fresh process, seconds")
    print_table(["path", "empty_cache_s", "filled_cache_s"],
                [[k, float(cold[k]), float(warm[k])] for k in cold])


if __name__ == "__main__":
    main()
