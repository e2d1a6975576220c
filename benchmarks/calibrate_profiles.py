"""Calibrate the cost model of the device profiles against measured cycles (issue 26).

For each target it builds small models of every kind (naive Bayes, ECOC
linear, ECOC trees, SSBC, forest; several sizes each), runs them on real and
random frames, and fits each kind's per-operation prices (cycles per unit of
every count of ``Device.cost_counts``: bits scanned, multiply-accumulates,
nodes visited, bytes CRC'd ...) by non-negative least squares on the relative
error. The figures measured:

* ``atmega328p``, ``atmega2560``: exact cycles from simavr (the harness
  ``firmware_sim/c/avr/ec_simavr.c``);
* ``rv32imac``: instructions under ``qemu-system-riscv32 -icount shift=0``
  (the profile prices them as cycles of a single-issue core at one cycle per
  instruction: approximate);
* ``cortex-m0``, ``cortex-m4``: cycles of the QEMU instruction trace of the
  M3/M4 build priced by the Arm TRM tables (:mod:`export.cortex_cycles`:
  approximate, no wait states, no stalls beyond the tables).

Run (about 2 minutes per AVR target on 2 cores)::

    python benchmarks/calibrate_profiles.py atmega328p atmega2560 rv32imac
    python benchmarks/calibrate_profiles.py atmega328p --write   # store the prices

``--write`` rewrites ``firmware_sim/profile_prices.json`` (data the profiles
read, not code) for the targets calibrated; without it, the prices and the
fit's worst relative errors are printed. Re-run it after any change of the C
runtime's arithmetic or formats: ``tests/test_cost_model.py`` checks the
stored prices on models other than these (within 10% on AVR).
"""

import argparse
import json
import shutil
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PRICES_FILE = ROOT / "firmware_sim" / "profile_prices.json"
#: Target -> the profile whose prices it calibrates.
TARGET_PROFILE = {"atmega328p": "atmega328p", "atmega2560": "atmega2560",
                  "rv32imac": "rv32imac", "cortex-m4": "cortex-m4", "cortex-m0plus": "cortex-m0"}


# ----------------------------------------------------------------------------- models
def _digits():
    from sklearn.datasets import load_digits
    X, y = load_digits(return_X_y=True)
    return X / 16.0, y


def _nb(n_features, budget, seed):
    from edgecode import datasets
    from edgecode.naive_bayes import BinaryNaiveBayes
    from edgecode.redundancy import allocate_greedy
    from export.naive_bayes import export_protected_nb

    d = datasets.load("house_votes")
    cols = np.random.default_rng(seed).permutation(d.X.shape[1])[:n_features]
    X = d.X[:, cols]
    nb = BinaryNaiveBayes().fit(X, d.y)
    plan = allocate_greedy(nb.decision_function(X), nb.flip_deltas(X), 0.2, budget)
    return export_protected_nb(nb, plan.repetitions).device, X


def _ecoc(learner, code, n_features, n_train=400):
    from edgecode.ecoc.classifier import ECOCClassifier
    from export.ecoc import export_ecoc

    X, y = _digits()
    X = X[:, :n_features]
    clf = ECOCClassifier(learner, code=code).fit(X[:n_train], y[:n_train])
    return export_ecoc(clf, X[:n_train]).device, X[1000:1100]


def _linear(n_cols, n_sym, n_features, seed):
    from sklearn.linear_model import LogisticRegression
    code = np.random.default_rng(seed).integers(0, n_sym, (10, n_cols))
    return _ecoc(LogisticRegression(max_iter=200), code, n_features)


def _trees(n_cols, n_sym, depth, seed):
    from sklearn.tree import DecisionTreeClassifier
    code = np.random.default_rng(seed).integers(0, n_sym, (10, n_cols))
    return _ecoc(DecisionTreeClassifier(max_depth=depth, random_state=seed), code, 64)


def _ssbc(n_bits, n_anchors, table, n_features=64):
    import firmware_sim
    from sklearn.datasets import load_digits
    from edgecode.hashing import SSBC
    from export.ssbc import export_ssbc

    X, y = load_digits(return_X_y=True)
    X = X[:, :n_features]
    h = SSBC(n_bits, n_anchors, n_bits + 4, center=True, random_state=0).fit(X[:300])
    kw = {"X_table": X[:table], "y_table": y[:table], "knn_k": 3} if table else {}
    return firmware_sim.load(export_ssbc(h, **kw).container), X[1200:1300]


def _forest(n_trees, depth, leaf, seed):
    from sklearn.ensemble import RandomForestClassifier
    from export.forest import export_forest

    X, y = _digits()
    rf = RandomForestClassifier(n_trees, max_depth=depth, random_state=seed).fit(X[::2], y[::2])
    kw = {"leaf": "class"} if leaf == "class" else {"leaf_bits": 8}
    return export_forest(rf, **kw).device, X[1::2]


#: Calibration models per kind: small enough for the ATmega328P (32 KB flash,
#: 2 KB RAM); tests/test_cost_model.py checks the prices on other ones.
CALIBRATION = {
    "protected_nb": [lambda: _nb(6, 0, 1), lambda: _nb(16, 16, 2), lambda: _nb(10, 60, 3),
                     lambda: _nb(16, 120, 4), lambda: _nb(12, 30, 5)],
    "ecoc_linear": [lambda: _linear(4, 2, 16, 1), lambda: _linear(8, 2, 32, 2),
                    lambda: _linear(6, 3, 24, 3), lambda: _linear(10, 2, 8, 4),
                    lambda: _linear(5, 3, 40, 5)],
    "ecoc_trees": [lambda: _trees(6, 2, 3, 1), lambda: _trees(12, 2, 4, 2),
                   lambda: _trees(8, 3, 5, 3), lambda: _trees(20, 2, 2, 4),
                   lambda: _trees(5, 3, 3, 5)],
    "ssbc": [lambda: _ssbc(8, 8, 0, 32), lambda: _ssbc(16, 16, 40, 48),
             lambda: _ssbc(24, 24, 100, 64), lambda: _ssbc(12, 20, 0, 16),
             lambda: _ssbc(32, 32, 60, 24)],
    "forest": [lambda: _forest(3, 3, "class", 1), lambda: _forest(8, 4, "class", 2),
               lambda: _forest(5, 5, "proba", 3), lambda: _forest(12, 3, "proba", 4),
               lambda: _forest(6, 2, "class", 5)],
}


#: Models the calibration does not see (other sizes, seeds, features):
#: ``--check`` and tests/test_cost_model.py price them with the stored prices.
HELD_OUT = {
    "protected_nb": lambda: _nb(14, 40, 11),
    "ecoc_linear": lambda: _linear(7, 2, 20, 12),
    "ecoc_linear_3ary": lambda: _linear(6, 3, 12, 13),
    "ecoc_trees": lambda: _trees(9, 2, 4, 14),
    "ecoc_trees_3ary": lambda: _trees(7, 3, 3, 15),
    "ssbc_table": lambda: _ssbc(20, 20, 70, 40),
    "ssbc_codes": lambda: _ssbc(10, 14, 0, 28),
    "forest_class": lambda: _forest(10, 4, "class", 16),
    "forest_proba": lambda: _forest(7, 3, "proba", 17),
}


def check(target, names=None):
    """Rows ``(model, measured open, estimated open, measured mean inference,
    estimated, worst per-frame |relative error|)`` of the held-out models on
    ``target`` priced with the stored prices of its profile."""
    from firmware_sim.profiles import estimate

    prof = TARGET_PROFILE[target]
    names = names or list(HELD_OUT)
    models = {n: HELD_OUT[n]() for n in names}
    root = Path(tempfile.mkdtemp(prefix="edgecode-check-"))

    def one(n):
        dev, X = models[n]
        fr = frames_for(dev, X, n_rows=5, n_random=2, seed=99)
        o, inf = measure(dev, fr, target, root / n)
        e = estimate(prof, dev, frames=fr)
        rel = np.abs(np.asarray(e["cycles_per_frame"]) - inf) / inf
        return (n, o, e["open_cycles"], float(inf.mean()), e["cycles"], float(rel.max()))

    try:
        with ThreadPoolExecutor(2) as ex:
            return list(ex.map(one, names))
    finally:
        shutil.rmtree(root, ignore_errors=True)


def cost_family(device):
    """The price table a device uses: its kind, ECOC split by learner family."""
    kind = device.container.kind
    if kind == "ecoc":
        return f"ecoc_{device.learner_kind}"
    return kind


def frames_for(device, X, n_rows=6, n_random=2, seed=0):
    """Real rows and a few random frames (random int16 values, random bits)."""
    rng = np.random.default_rng(seed)
    clean = np.asarray(device.encode(X[:n_rows]), np.int64)
    w = device.frame_width
    if device.frame_dtype == np.uint8:
        rand = rng.integers(0, 2, (n_random, w))
    else:
        lo, hi = int(clean.min()), int(clean.max()) + 1
        rand = rng.integers(lo, hi, (n_random, w))
    return np.vstack([clean, rand]).astype(device.frame_dtype)


# ----------------------------------------------------------------------------- measuring
def measure(device, frames, target, workdir):
    """``(open_count, infer_counts)`` measured on ``target`` (cycles on AVR,
    instructions on rv32imac, TRM-priced cycles of the trace on Cortex-M)."""
    from export.firmware import build_firmware, run_firmware_measured, write_firmware

    if target in ("cortex-m4", "cortex-m0plus"):
        from export.cortex_cycles import trace_cycles
        return trace_cycles(device, frames, target, workdir)
    write_firmware(device.container, workdir, target)
    build_firmware(workdir, target, probe=False, jobs=1)
    run = run_firmware_measured(workdir, frames, target)
    return float(run.open_count), np.asarray(run.infer_counts, float)


def samples(target, kinds=None, models=CALIBRATION, jobs=2):
    """``{family: [(counts, open_count, infer_counts)]}`` of every model measured."""
    kinds = kinds or list(models)
    todo = [(k, i) for k in kinds for i in range(len(models[k]))]
    built = {}
    for k, i in todo:                                  # fit before the threads start
        built[(k, i)] = models[k][i]()
    root = Path(tempfile.mkdtemp(prefix="edgecode-calibrate-"))

    def one(item):
        k, i = item
        dev, X = built[item]
        fr = frames_for(dev, X, seed=i)
        o, inf = measure(dev, fr, target, root / f"{k}-{i}")
        return k, (dev.cost_counts(fr), o, inf)

    out = {}
    try:
        with ThreadPoolExecutor(jobs) as ex:
            for k, s in ex.map(one, todo):
                out.setdefault(k, []).append(s)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return out


# ----------------------------------------------------------------------------- fitting
def fit_prices(rows, stage):
    """Non-negative prices of the counts of ``stage`` ("infer" or "open") that
    minimise the squared relative error over every frame (every open):
    ``(prices, max |relative error|)``."""
    from scipy.optimize import nnls

    keys = sorted({k for counts, _, _ in rows for k in counts[stage]})
    A, b = [], []
    for counts, o, inf in rows:
        c = counts[stage]
        if stage == "open":
            A.append([float(c.get(k, 0)) for k in keys])
            b.append(o)
        else:
            n = len(inf)
            A.extend(np.column_stack([np.broadcast_to(np.asarray(c.get(k, 0), float), (n,))
                                      for k in keys]).tolist())
            b.extend(inf.tolist())
    A, b = np.asarray(A), np.asarray(b)
    w = 1.0 / b
    x, _ = nnls(A * w[:, None], b * w)
    rel = (A @ x - b) / b
    return {k: round(float(v), 3) for k, v in zip(keys, x)}, float(np.max(np.abs(rel)))


def fit_open(got):
    """The open's prices, fitted over every family at once (one open per model
    is few samples): the image's counts (``profiles.image_counts``: the
    CRC-32 of every byte, the table) share one price, the rest are the
    family's own. ``{family: (prices, max |relative error| of its models)}``."""
    from firmware_sim.profiles import IMAGE_COUNT_KEYS

    rows = []
    for fam, rs in got.items():
        for counts, o, inf in rs:
            c = {(k if k in IMAGE_COUNT_KEYS else f"{fam}:{k}"): v
                 for k, v in counts["open"].items()}
            rows.append(({"open": c}, o, inf))
    prices, _ = fit_prices(rows, "open")
    out = {}
    for fam, rs in got.items():
        own = {k.split(":", 1)[-1]: v for k, v in prices.items()
               if k in IMAGE_COUNT_KEYS or k.startswith(fam + ":")}
        err = max(abs(sum(own.get(k, 0) * float(v) for k, v in counts["open"].items()) - o) / o
                  for counts, o, _ in rs)
        out[fam] = (own, err)
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("targets", nargs="+", choices=sorted(TARGET_PROFILE))
    p.add_argument("--kinds", nargs="*", default=None, choices=sorted(CALIBRATION))
    p.add_argument("--write", action="store_true", help=f"store the prices in {PRICES_FILE}")
    p.add_argument("--check", action="store_true", help="price the held-out models with the "
                   "stored prices and print estimate / measured (no fitting)")
    a = p.parse_args(argv)
    if a.check:
        for target in a.targets:
            print(f"\n{target} (profile {TARGET_PROFILE[target]}): held-out models, stored "
                  "prices\n| model | open measured | open est. | ratio | inference measured "
                  "(mean) | est. | ratio | worst frame |rel. err.| |\n|---|---:|---:|---:|---:|"
                  "---:|---:|---:|")
            for n, o, eo, i, ei, r in check(target):
                print(f"| {n} | {o:,.0f} | {eo:,.0f} | {eo / o:.3f} | {i:,.0f} | {ei:,.0f} | "
                      f"{ei / i:.3f} | {r:.3f} |")
        return
    stored = json.loads(PRICES_FILE.read_text()) if PRICES_FILE.exists() else {}
    for target in a.targets:
        prof = TARGET_PROFILE[target]
        got = samples(target, a.kinds)
        table = stored.setdefault(prof, {})
        opens = fit_open(got)
        for fam, rows in sorted(got.items()):
            infer, e_inf = fit_prices(rows, "infer")
            opened, e_open = opens[fam]
            table[fam] = {"infer": infer, "open": opened,
                          "fit_max_rel_error": {"infer": round(e_inf, 4),
                                                "open": round(e_open, 4)}}
            print(f"{target} {fam}: infer max |rel err| {e_inf:.3f}, open {e_open:.3f}")
            print(f"  infer {infer}\n  open  {opened}")
    if a.write:
        PRICES_FILE.write_text(json.dumps(stored, indent=1, sort_keys=True) + "\n")
        print(f"wrote {PRICES_FILE}")


if __name__ == "__main__":
    main()
