"""Wire protection of fixed-point features (issue 27, the wire goal): planned
versus uniform versus none, predicted versus simulated, overhead, device cost.

Usage::

    python benchmarks/bench_protect.py [--trials 2000] [--no-device] [--keep DIR]

The model: a linear ECOC of the 6-class glass set (``tests/data/glass.csv``,
a copy of ``../shared/datasets/glass.csv``: 214 rows, 9 features, labels
1, 2, 3, 5, 6, 7), ``StandardScaler`` + ``ECOCClassifier(LogisticRegression,
code="dense_random", n_columns=15)`` folded into the device (int16 features,
int32 weights), fitted on a stratified 70% split (seed 0), exported with
``export_ecoc``. The wire: every int16 feature as 16 bits (144 per frame),
BSC eps 0.01 per bit.

Schemes at the same budget, two extra copies per frame bit on average
(``max_overhead=2``: 288 extra bits): ``none`` (one copy: 144 bits),
``uniform`` (every bit three times: 432 bits) and ``auto`` (the planner:
influence = exact single-flip label changes on the training rows, greedy
copies). Each is planned with :func:`export.protect.protect` on the training
rows and then evaluated on the held-out rows: the prediction
(:func:`export.protect_wire.predict_wire` with the linear kind's certified
bound; where it is not tight, a simulation of decoded-bit errors with ten
times the campaign's trials) and a campaign on the protected
device (:func:`export.protect_wire.check_wire`, the wire bits through the BSC,
majority-decoded as the device does) with its 99% Wilson interval. A burst
row (Gilbert-Elliott, mean flip rate 0.01, mean burst 8, interleaved
copy-major) shows the same plan on a bursty link (simulated).

Device cost (``--no-device`` skips it): ``write_firmware`` +
``build_firmware`` (the model's kind only, -O2 on Cortex-M4, -Os on
ATmega328P) of the unprotected and the protected images: flash and RAM of
the size probe; time per inference on ATmega328P (simavr, exact cycles, 16
MHz) and instructions per inference on Cortex-M4 (QEMU mps2-an386, one
instruction per block, ``bench_firmware.insns_per_inference``) over 16
held-out frames; the wire decode is the difference.
"""

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from _common import machine, print_table  # noqa: E402


def fit():
    import csv

    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from edgecode.ecoc import ECOCClassifier
    from export.ecoc import export_ecoc
    with open(ROOT / "tests" / "data" / "glass.csv", newline="") as fh:
        rows = list(csv.reader(fh))
    X = np.array([[float(v) for v in r[:-1]] for r in rows[1:]])
    y = np.array([int(r[-1]) for r in rows[1:]])
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)
    clf = make_pipeline(StandardScaler(), ECOCClassifier(
        LogisticRegression(max_iter=2000), code="dense_random", n_columns=15, random_state=0))
    clf.fit(Xtr, ytr)
    ex = export_ecoc(clf, Xtr, X_check=Xte)
    classes = list(clf.classes_)
    return ex.device, Xtr, Xte, np.array([classes.index(v) for v in yte]), \
        float(np.mean(clf.predict(Xte) == yte))


def wire_rows(dev, Xtr, Xte, yte, trials, eps=0.01):
    from export.protect import protect
    from export.protect_wire import check_wire, predict_wire
    from export.registry import find_kind_spec
    from firmware_sim import load
    from firmware_sim.faults import BSC, Interleave, make_fault
    rows, devices = [], {}
    for scheme in ("none", "uniform", "auto"):
        r = protect(dev.container, (Xtr, None), eps=eps, max_overhead=2.0, scheme=scheme,
                    n_trials=50, check=False)
        prot = load(r.container)
        devices[scheme] = prot
        copies = np.asarray(r.details["allocation"]["copies"])
        pred = predict_wire(dev, Xte, copies, eps, n_trials=10 * trials, random_state=11,
                            kind_bound=find_kind_spec(dev.kind).wire_bound)
        sim = check_wire(prot, Xte, BSC(eps), n_trials=trials, random_state=12, y=yte)
        lo, hi = sim["ci"]
        rows.append(dict(scheme=scheme, fault="bsc", wire_bits=prot.total_bits,
                         overhead=prot.overhead, predicted=pred["predicted_label_change"],
                         method=pred["method"], simulated=sim["simulated_label_change"],
                         lo=lo, hi=hi, inside=lo <= pred["predicted_label_change"] <= hi,
                         accuracy=sim["accuracy"]))
    for scheme in ("uniform", "auto"):
        prot = devices[scheme]
        burst = Interleave(make_fault("burst", flip_rate=eps, mean_burst=8.0), prot.wire_order())
        pred = check_wire(prot, Xte, burst, n_trials=trials, random_state=21)
        sim = check_wire(prot, Xte, burst, n_trials=trials, random_state=22, y=yte)
        lo, hi = sim["ci"]
        rows.append(dict(scheme=scheme, fault="burst8-interleaved", wire_bits=prot.total_bits,
                         overhead=prot.overhead, predicted=pred["simulated_label_change"],
                         method="simulated", simulated=sim["simulated_label_change"], lo=lo,
                         hi=hi, inside=lo <= pred["simulated_label_change"] <= hi,
                         accuracy=sim["accuracy"]))
    return rows, devices


def device_rows(dev, devices, Xte, work):
    import bench_firmware as bf
    from export.firmware import build_firmware, run_firmware_measured, toolchain_missing, \
        write_firmware
    out = []
    for target in ("cortex-m4", "atmega328p"):
        why = toolchain_missing(target, run=True)
        if why:
            print(f"# {target}: skipped ({why})")
            continue
        for name, d in (("unprotected", dev), ("uniform", devices["uniform"]),
                        ("auto", devices["auto"])):
            fw = Path(work) / f"{target}_{name}"
            write_firmware(d.container, fw, target)
            b = build_firmware(fw, target)
            frames = d.encode(Xte[:16]).astype(np.int64)
            if target == "cortex-m4":
                per = bf.insns_per_inference(fw, frames)
                unit = "instructions"
            else:
                run = run_firmware_measured(fw, frames, target)
                per = float(np.median(run.infer_counts))
                unit = "cycles"
            out.append(dict(target=target, image=name, frame=d.frame_width,
                            flash=b.flash_bytes, ram=b.ram_bytes, unit=unit, per=per))
    for r in out:
        base = next(x for x in out if x["target"] == r["target"] and x["image"] == "unprotected")
        r["decode"] = r["per"] - base["per"]
        r["ratio"] = r["per"] / base["per"]
        r["flash_extra"] = r["flash"] - base["flash"]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=2000, help="trials per held-out point")
    ap.add_argument("--no-device", action="store_true", help="skip the firmware builds")
    ap.add_argument("--keep", help="keep the firmware folders here")
    a = ap.parse_args()
    print(f"# machine: {machine()}")
    dev, Xtr, Xte, yte, acc = fit()
    print(f"# glass (6 classes), linear ECOC (15 columns); {len(Xtr)} training rows plan, "
          f"{len(Xte)} held-out rows x {a.trials} trials evaluate; clean device accuracy "
          f"{np.mean(dev.labels(dev.encode(Xte)) == yte):.4f} (float model {acc:.4f})")
    rows, devices = wire_rows(dev, Xtr, Xte, yte, a.trials)
    uni = next(r["simulated"] for r in rows if r["scheme"] == "uniform" and r["fault"] == "bsc")
    print_table(["scheme", "fault", "wire_bits", "overhead", "predicted_label_change", "method",
                 "simulated", "ci99_low", "ci99_high", "inside", "vs_uniform", "accuracy"],
                [[r["scheme"], r["fault"], r["wire_bits"], round(r["overhead"], 3),
                  f"{r['predicted']:.6f}", r["method"], f"{r['simulated']:.6f}",
                  f"{r['lo']:.6f}", f"{r['hi']:.6f}", r["inside"],
                  f"{r['simulated'] / uni:.3f}" if r["fault"] == "bsc" else "-",
                  f"{r['accuracy']:.4f}"] for r in rows])
    if a.no_device:
        return
    work = a.keep or tempfile.mkdtemp(prefix="bench-protect-")
    Path(work).mkdir(parents=True, exist_ok=True)
    dr = device_rows(dev, devices, Xte, work)
    print()
    print_table(["target", "image", "frame_entries", "flash_B", "flash_extra_B", "ram_B", "unit",
                 "per_inference", "wire_decode", "ratio_vs_unprotected"],
                [[r["target"], r["image"], r["frame"], r["flash"], r["flash_extra"], r["ram"],
                  r["unit"], f"{r['per']:.0f}", f"{r['decode']:.0f}", f"{r['ratio']:.2f}"]
                 for r in dr])


if __name__ == "__main__":
    main()
