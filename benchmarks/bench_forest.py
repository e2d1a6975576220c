"""Tree forests on Cortex-M4 (issue 25 item 6, issue 26 item 2): flash of the forest
kind's compact format against emlearn 0.23's loadable and inline forms, on one
fitted model.

Usage::

    python benchmarks/bench_forest.py [--opt -Os] [--insns] [--keep DIR]

The model: ``RandomForestClassifier(15, max_depth=4, random_state=0)`` fitted
on scikit-learn's digits (the first 1200 rows train, the other 597 test), on
the features times 16 (emlearn truncates thresholds to int16 and compares with
``<``: on multiples of 16 that splits as scikit-learn's ``<=``; ours is exact
either way). The same fitted object goes to both:

* ours: ``export.forest.export_forest(rf, leaf=...)`` with class leaves (hard
  vote), 8-bit and 16-bit probability leaves, written by ``write_firmware``
  (the model's kind and node widths only) and measured by ``build_firmware``'s
  size probe (open the image, checks included, and one inference);
  ``nometa`` rows: the same arrays in a container without the host's
  metadata (``__meta__``, ``__classes__``), which the device never reads;
* emlearn: ``emlearn.convert(rf, method="loadable"|"inline", leaf_bits=0|8)``
  (0: hard vote, 8: soft vote with 8-bit proportions), a probe ``main`` that
  calls ``peer_predict`` once (``bench_firmware.build_emlearn``).

Both with ``arm-none-eabi-gcc -mcpu=cortex-m4 -mthumb -mfloat-abi=soft``, the
same optimisation, ``-ffunction-sections -fdata-sections -Wl,--gc-sections``,
the same bare start (``export.firmware``'s probe start) and ``-nostdlib
-lgcc``. Flash = text + rodata + data (+ vectors); ``model_B``: the model's
data (ours: the container image; emlearn: nodes, roots and leaves);
``code_B`` = flash - model_B; ``walk_B``: the arrays a walk reads (ours: node
arrays, roots, leaf table; emlearn: the same three). ``--insns`` adds
instructions per inference under QEMU (mps2-an386, one instruction per
translation block: an R-frame loop minus an empty one, over 16 test frames).
Accuracies: ours from firmware_sim (bit-exact with the C runtime), emlearn
from its own host build.
"""

import argparse
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_firmware as bf  # noqa: E402
from _common import machine, print_table  # noqa: E402

from export.firmware import TARGETS, build_firmware, toolchain_missing, write_firmware  # noqa: E402
from firmware_sim.artifact import write_container  # noqa: E402

TARGET = "cortex-m4"


def fit():
    from sklearn.datasets import load_digits
    from sklearn.ensemble import RandomForestClassifier

    X, y = load_digits(return_X_y=True)
    Xi = X * 16
    rf = RandomForestClassifier(15, max_depth=4, random_state=0).fit(Xi[:1200], y[:1200])
    return rf, Xi[1200:], y[1200:]


def ours(rf, Xt, yt, opt, work, insns):
    from export.forest import export_forest

    rows = []
    for leaf, bits in (("class", None), ("proba", 8), ("proba", 16)):
        out = export_forest(rf, Xt, leaf=leaf, leaf_bits=bits or 16)
        dev = out.device
        acc = float(np.mean(dev.labels(dev.encode(Xt)) == yt))
        c = dev.container
        walk = sum(a.nbytes for k, a in c.arrays.items()
                   if k.startswith("node_") or k in ("tree_root", "leaf_value"))
        tag = leaf if bits is None else f"{leaf}{bits}"
        for variant, image in ((tag, c.tobytes()),
                               (f"{tag}_nometa", write_container(None, "forest",
                                                                 dict(c.arrays)))):
            d = work / f"ours_{variant}"
            write_firmware(image, d, TARGET)
            b = build_firmware(d, TARGET, opt=opt)
            n_ins = bf.insns_per_inference(d, dev.encode(Xt[:16])) if insns else None
            rows.append(dict(form=f"ours {variant}", flash=b.flash_bytes, model=len(image),
                             walk=walk, ram=b.ram_bytes, stack=b.stack_bytes, acc=acc,
                             nodes=dev.n_nodes, bpn=dev.resources()["bytes_per_node"],
                             insns=n_ins))
    return rows


def emlearn_rows(rf, Xt, yt, opt, work, insns):
    import emlearn

    rows = []
    cwd = os.getcwd()
    os.chdir(work)                     # convert's host build writes ./tmp
    try:
        for bits in (0, 8):
            for method in ("loadable", "inline"):
                m = emlearn.convert(rf, method=method, leaf_bits=bits)
                acc = float(np.mean(m.predict(Xt) == yt))
                nodes, roots, leaves = m.forest_
                leaf_bytes = len(leaves) * (rf.n_classes_ if bits else 1)
                walk = (8 * len(nodes) + 4 * len(roots) + leaf_bytes) if method == "loadable" \
                    else leaf_bytes * (bits > 0)
                d = work / f"emlearn_{method}_{bits}"
                flash, ram, stack, _ = bf.build_emlearn(m, "int16_t", 64, (), TARGET, opt, d,
                                                        emlearn.includedir)
                n_ins = _emlearn_insns(d, Xt[:16].astype(np.int16), opt) if insns else None
                rows.append(dict(form=f"emlearn {method} leaf_bits={bits}", flash=flash,
                                 model=walk, walk=walk, ram=ram, stack=stack, acc=acc,
                                 nodes=len(nodes), bpn=8.0 if method == "loadable" else 0.0,
                                 insns=n_ins))
    finally:
        os.chdir(cwd)
    return rows


_EM_LOOP = """#include <stdint.h>
#include "model.h"
static const int16_t frames[{n}][64] = {{ {rows} }};
volatile int32_t eml_probe_label;
volatile uint32_t eml_probe_reps = REPS;
int main(void)
{{
    uint32_t i;
    for (i = 0; i < eml_probe_reps; i++)
        eml_probe_label = peer_predict(frames[i], 64);
    return 0;
}}
"""


def _emlearn_insns(d, frames, opt):
    import emlearn

    t = TARGETS[TARGET]
    rows = ", ".join("{" + ", ".join(str(int(v)) for v in r) + "}" for r in frames)
    (d / "loop_start.c").write_text(bf._LOOP_START)
    counts = {}
    for reps in (0, len(frames)):
        (d / f"loop{reps}.c").write_text(_EM_LOOP.format(n=len(frames), rows=rows))
        flags = bf._cflags(t, opt) + ["-I", emlearn.includedir, f"-DREPS={reps}u"]
        bf._run(flags + ["-c", f"loop{reps}.c", "-o", f"loop{reps}.o"], d)
        bf._run(flags + ["-c", "loop_start.c", "-o", "loop_start.o"], d)
        bf._link(t, [f"loop{reps}.o", "loop_start.o"], f"loop{reps}.elf", d)
        counts[reps] = bf._count_insns(d / f"loop{reps}.elf", d)
    return (counts[len(frames)] - counts[0]) / len(frames)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--opt", default="-Os", help="optimisation of every build")
    ap.add_argument("--insns", action="store_true", help="instructions per inference under "
                    "QEMU (slower)")
    ap.add_argument("--keep", default=None, help="build here and keep the files")
    a = ap.parse_args()
    why = toolchain_missing(TARGET, run=a.insns)
    if why:
        raise SystemExit(f"toolchain for {TARGET}: {why}")
    import emlearn
    work = Path(a.keep or tempfile.mkdtemp(prefix="bench_forest_")).resolve()
    work.mkdir(parents=True, exist_ok=True)
    print(f"# machine: {machine()}")
    print(f"# RandomForestClassifier(15, max_depth=4) on digits x 16; {TARGET} {a.opt}; "
          f"emlearn {getattr(emlearn, '__version__', '?')}")
    rf, Xt, yt = fit()
    rows = ours(rf, Xt, yt, a.opt, work, a.insns) + emlearn_rows(rf, Xt, yt, a.opt, work,
                                                                  a.insns)
    ref = {r["form"]: r["flash"] for r in rows}
    small = min(ref[f] for f in ref if f.startswith("emlearn") and "bits=0" in f)
    out = []
    for r in rows:
        out.append([r["form"], r["flash"], r["model"], r["flash"] - r["model"], r["walk"],
                    r["nodes"], f"{r['bpn']:.1f}", r["ram"], r["stack"],
                    f"{r['flash'] / small:.2f}", f"{r['acc']:.3f}",
                    "-" if r["insns"] is None else f"{r['insns']:.0f}"])
    print_table(["form", "flash_B", "model_B", "code_B", "walk_B", "nodes", "B_per_node",
                 "ram_B", "stack_B", "flash_vs_emlearn_smallest", "accuracy", "insns"], out)
    if not a.keep:
        import shutil
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
