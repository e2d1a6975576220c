"""Golden outputs: record what the demo and a fixed set of runs produce, and check
that a change left them identical (issue 25: a redesign must not move a number).

Recorded, with their seeds:

* every file ``edgecode demo --out DIR`` writes (containers, ONNX graphs, plans,
  JSON reports, firmware sources; build products left out), as SHA-256, and the
  demo's printed lines with timings masked;
* for every demo artifact (every kind), campaigns at every site with every
  built-in fault, ``simulate`` and a single-upset table: the per-point counts;
* the artifacts, ONNX graphs and firmware sources the command line makes from
  real data whose labels are not 0..k-1 (``tests/data``), and their campaigns;
* a small ``edgecode budget`` search: every configuration's measured figures.

Usage (from the repository root)::

    python benchmarks/golden.py record /tmp/golden.json
    python benchmarks/golden.py check benchmarks/golden/before_issue25.json

``check`` prints every entry that differs (or is missing) and exits 1 if any.
A documented fix that changes a number is listed in the JSON's ``"changed"``
note of the next recording, not hidden here.
"""

import argparse
import hashlib
import io
import json
import re
import sys
import tempfile
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
#: build products and machine-specific files of a firmware folder
_SKIP = re.compile(r"(^|/)(build/|runner$|probe$|.*\.(o|su|ci|elf|bin|map)$)")
#: timings in printed lines ("0.42s", "1.2 s", "3.0s elapsed")
_TIME = re.compile(r"\d+(\.\d+)?\s?(s|ms)\b")


def _sha(data):
    return hashlib.sha256(data).hexdigest()


def _arr(a):
    a = np.ascontiguousarray(np.asarray(a))
    return {"dtype": str(a.dtype), "shape": list(a.shape), "sum": float(a.astype(float).sum()),
            "sha256": _sha(a.tobytes())}


#: keys of JSON reports that hold timings or machine facts, not results
_TIMING_KEYS = {"elapsed_s", "trials_per_s", "seconds", "plan_s", "wall_s"}


def _untimed(obj):
    if isinstance(obj, dict):
        return {k: _untimed(v) for k, v in obj.items() if k not in _TIMING_KEYS}
    if isinstance(obj, list):
        return [_untimed(v) for v in obj]
    return obj


def _files(folder):
    out = {}
    for p in sorted(Path(folder).rglob("*")):
        rel = p.relative_to(folder).as_posix()
        if p.is_file() and not _SKIP.search(rel):
            data = p.read_bytes()
            if p.suffix == ".json":       # results without their timings
                data = json.dumps(_untimed(json.loads(data)), sort_keys=True).encode()
            out[rel] = _sha(data)
    return out


def _lines(text, root=None):
    keep = []
    if root is not None:
        text = text.replace(str(root), "<tmp>")
    for line in text.splitlines():
        if "took" in line or "elapsed" in line or "ETA" in line:
            continue
        keep.append(_TIME.sub("<t>", line))
    return keep


def _campaigns(device, X, y, tag):
    """Counts of campaigns at every site with every fault, simulate and upsets."""
    from firmware_sim import simulate
    from firmware_sim.campaign import run_campaign
    from firmware_sim.faults import BSC, GilbertElliott, ParameterUpset, StuckAt
    from firmware_sim.sensitivity import single_upset_table

    out = {}
    X = X[:60]
    y = None if y is None else y[:60]
    runs = {"bsc_wire": (BSC(0.02), "wire"),
            "bsc_intermediate": (BSC(0.05), "intermediate"),
            "burst_wire": (GilbertElliott.from_params(flip_rate=0.02, mean_burst=4), "wire"),
            "stuck_wire": (StuckAt(stuck0=[0], stuck1=[2], rate=0.02), "wire"),
            "seu_image": (ParameterUpset(count=1), None)}
    for name, (fault, site) in runs.items():
        kw = {} if site is None else {"site": site}
        res = run_campaign(device, X, fault, n_trials=64 if site else 16, random_state=3, y=y,
                           **kw)
        out[f"{tag}/campaign/{name}"] = [
            {"same_per_point": _arr(p.same_per_point), "same_rate": p.same_rate,
             "accuracy": p.accuracy, "refused": int(p.refused), "ci": p.same_ci}
            for p in res.points]
    sim = simulate(device, X, 0.03, 50, random_state=5, y=y)
    out[f"{tag}/simulate"] = {"same": _arr(sim.same), "clean": _arr(sim.clean_labels)}
    # the three smallest non-empty arrays: every kind's counts, offsets and shifts
    arrays = sorted((k for k, v in device.container.arrays.items() if v.size),
                    key=lambda k: (device.container.arrays[k].nbytes, k))[:3]
    tab = single_upset_table(device, X[:10], arrays=arrays, y=None if y is None else y[:10],
                             max_bits=1 << 16)
    out[f"{tag}/upsets"] = {"arrays": arrays, "change_rate": _arr(tab.change_rate)}
    return out


def record():
    """Every golden entry, as a dict name -> value."""
    import firmware_sim
    from export.cli import main, run_demo
    from export.firmware import write_firmware

    golden = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        demo = tmp / "demo"
        buf = io.StringIO()
        with redirect_stdout(buf), redirect_stderr(io.StringIO()):
            run_demo(demo, trials=400)
        golden["demo/files"] = _files(demo)
        golden["demo/printed"] = _lines(buf.getvalue(), tmp)
        from edgecode.datasets import load_house_votes
        from sklearn.datasets import load_digits
        hv, dg = load_house_votes(), load_digits()
        for name in sorted(p.name for p in demo.glob("*.edgc")):
            try:
                dev = firmware_sim.load(demo / name)
            except firmware_sim.ContainerError:
                continue          # 'codes --out': a coding matrix, not a device image
            if dev.kind == "protected_nb":
                X, y = hv.X, hv.y
            else:
                X = dg.data / 16.0 if "tree" in name or "svm" in name else dg.data
                y = dg.target
            if dev.kind == "ssbc" and dev.container.meta.get("classes") is None:
                y = None
            golden.update(_campaigns(dev, X, y, f"demo/{name}"))
            fw = tmp / f"fw_{name}"
            write_firmware(demo / name, fw, "host")
            golden[f"demo/{name}/firmware"] = _files(fw)
        # the command line on labels that are not 0..k-1
        cli = tmp / "cli"
        cli.mkdir()
        runs = {
            "ecoc_tree_glass": ["ecoc", str(DATA / "glass.csv"), "--max-depth", "4",
                                "--n-columns", "6", "--trials", "2", "--quiet"],
            "ecoc_linear_ecoli": ["ecoc", str(DATA / "ecoli.csv"), "--learner", "linear_svm",
                                  "--code", "dense_random", "--n-columns", "8", "--trials", "2",
                                  "--quiet"],
            "ssbc_ecoli": ["hash", str(DATA / "ecoli.csv"), "--bits", "16", "--anchors", "64",
                           "--sketch", "32"],
            "nb_house_votes": ["plan", "house_votes", "--eps", "0.1", "--budget", "20"],
        }
        for tag, argv in runs.items():
            art, onx = cli / f"{tag}.edgc", cli / f"{tag}.onnx"
            buf = io.StringIO()
            with redirect_stdout(buf), redirect_stderr(io.StringIO()):
                status = main(argv + ["--out", str(art), "--onnx", str(onx)])
            if status != 0:
                raise SystemExit(f"{tag}: edgecode {' '.join(argv)} exited {status}")
            golden[f"cli/{tag}/printed"] = _lines(buf.getvalue(), tmp)
            golden[f"cli/{tag}/container"] = _sha(art.read_bytes())
            golden[f"cli/{tag}/onnx"] = _sha(onx.read_bytes())
            dev = firmware_sim.load(art)
            from export.data import load_recorded
            from export.registry import kind_rows
            X, y, _ = kind_rows(dev.kind)(dev.container, dev.container.meta["dataset"], "all")
            golden.update(_campaigns(dev, X, y, f"cli/{tag}"))
            fw = cli / f"fw_{tag}"
            write_firmware(art, fw, "host")
            golden[f"cli/{tag}/firmware"] = _files(fw)
            del load_recorded
        # a small budget search
        from export.budget import SearchSpace, search
        space = SearchSpace(kinds=("ecoc", "ssbc"), designs=("one_vs_all", "nary"),
                            nary_N=(3,), learners=("linear", "tree"), tree_depths=(3,),
                            ssbc_bits=(16,))
        with redirect_stderr(io.StringIO()):
            res = search(str(DATA / "glass.csv"), "cortex-m4", 0.05, space=space, build=False,
                         sim_samples=4000, seed=0)
        golden["budget/glass"] = [
            {k: e[k] for k in ("label", "flash_bytes", "ram_bytes", "cycles", "clean_accuracy",
                               "predicted_accuracy", "simulated_accuracy", "on_front")}
            for e in res.entries]
        golden["budget/glass/recommended"] = res.recommended["label"]
    return json.loads(json.dumps(golden, default=float))


def _diff(a, b, path=""):
    if type(a) is not type(b):
        return [f"{path}: {a!r} -> {b!r}"]
    if isinstance(a, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            if k not in b:
                out.append(f"{path}/{k}: missing now")
            elif k not in a:
                out.append(f"{path}/{k}: new")
            else:
                out.extend(_diff(a[k], b[k], f"{path}/{k}"))
        return out
    if isinstance(a, list):
        if len(a) != len(b):
            return [f"{path}: {len(a)} entries -> {len(b)}"]
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            out.extend(_diff(x, y, f"{path}[{i}]"))
        return out
    return [] if a == b else [f"{path}: {a!r} -> {b!r}"]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("action", choices=["record", "check"])
    p.add_argument("path", help="the golden JSON file")
    args = p.parse_args(argv)
    now = record()
    if args.action == "record":
        Path(args.path).parent.mkdir(parents=True, exist_ok=True)
        Path(args.path).write_text(json.dumps(now, indent=1, sort_keys=True) + "\n")
        print(f"recorded {len(now)} entries to {args.path}")
        return 0
    before = json.loads(Path(args.path).read_text())
    diffs = _diff(before, now)
    for d in diffs:
        print(d)
    print(f"{len(before)} entries checked: {'identical' if not diffs else f'{len(diffs)} differ'}")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
