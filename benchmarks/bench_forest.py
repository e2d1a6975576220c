"""Tree forests on Cortex-M4 and the ATmega328P (issue 25 item 6, issue 26 item 2):
flash and time per inference of the forest kind's three firmware forms against
emlearn 0.23's loadable and inline forms, on one fitted model.

Usage::

    python benchmarks/bench_forest.py [--targets cortex-m4,atmega328p] [--opt -Os]
                                      [--no-counts] [--ecoc] [--keep DIR]

The model: ``RandomForestClassifier(15, max_depth=4, random_state=0)`` fitted
on scikit-learn's digits (the first 1200 rows train, the other 597 test), on
the features times 16 (emlearn truncates thresholds to int16 and compares with
``<``: on multiples of 16 that splits as scikit-learn's ``<=``; ours is exact
either way). The same fitted object goes to both:

* ours: ``export.forest.export_forest(rf, leaf=...)`` with class leaves (hard
  vote) and 8-bit probability leaves, written by ``write_firmware(..,
  trees=...)``: ``table`` (the container image, verified at open and walked
  by the runtime), ``inline`` (the trees as generated C: nested int16
  tests), ``arrays`` (the node arrays compiled in, one walk loop); flash from
  ``build_firmware``'s size probe (open + one inference);
* emlearn: ``emlearn.convert(rf, method="loadable"|"inline", leaf_bits=0|8)``
  (0: hard vote, 8: soft vote with 8-bit proportions), a probe ``main`` that
  calls ``peer_predict`` once.

Both with the same compiler and flags per target: ``arm-none-eabi-gcc
-mcpu=cortex-m4 -mthumb -mfloat-abi=soft`` with the same bare start and
``-nostdlib -lgcc``, or ``avr-gcc -mmcu=atmega328p -std=gnu99`` with
avr-libc's start; the same optimisation, ``-ffunction-sections
-fdata-sections -Wl,--gc-sections``. Flash = text + rodata + data (+
vectors); on AVR text + data (emlearn's constant arrays are ``.data``:
copied into RAM at start, so they count twice: flash and RAM).

Time per inference (``--no-counts`` skips it): a loop program that calls the
inference on R test frames (R = 16 on Cortex-M4, 4 on AVR: the ATmega328P
has 2 KB of RAM) and checks every label against the host's (ours:
``firmware_sim``; emlearn: its own ``predict``; a wrong label stops the run),
built with R and with 0 repetitions; the difference over R. Cortex-M4:
instructions executed under QEMU (mps2-an386, one instruction per
translation block); ATmega328P: cycles under simavr (exact: the datasheet's
cycles per instruction) through ``firmware_sim/c/avr/ec_simavr.c --probe``.
Ours are measured with the decision integers written (``ec_infer`` with a
buffer: every tree's leaf id and the votes as int64) and, for ``inline`` and
``arrays``, with ``decision`` NULL too (the label alone, as emlearn's
``predict`` returns). Ratios: flash against emlearn's smaller form and time
against its faster form, for the same leaves (class: ``leaf_bits=0``;
proba8: ``leaf_bits=8``).
"""

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_firmware as bf  # noqa: E402
from _common import machine, print_table  # noqa: E402

from export.firmware import (INLINE_SOURCE, TARGETS, _C_DIR, _sections,  # noqa: E402
                             build_firmware, runtime_sources, toolchain_missing,
                             write_firmware)

#: Builds whose loop ran on the ATmega2560 (RAM over the 328P's).
NOTES = set()
#: Test frames per loop program.
REPS = {"cortex-m4": 16, "atmega328p": 4}
LEAVES = (("class", None, 0), ("proba", 8, 8))


def fit():
    from sklearn.datasets import load_digits
    from sklearn.ensemble import RandomForestClassifier

    X, y = load_digits(return_X_y=True)
    Xi = X * 16
    rf = RandomForestClassifier(15, max_depth=4, random_state=0).fit(Xi[:1200], y[:1200])
    return rf, Xi[1200:], y[1200:]


# ---------------------------------------------------------------------- loop programs
_LOOP = """#include <stdint.h>
{include}
#ifdef __AVR__
#define SPIN() __asm__ volatile("sei")   /* simavr's harness ends at a loop with I clear */
#else
#define SPIN() __asm__ volatile("")
#endif
static const int16_t frames[{n}][{w}] = {{ {rows} }};
static const int16_t expect[{n}] = {{ {expect} }};
volatile int32_t probe_label;
volatile uint16_t probe_reps = REPS;   /* the same code for every REPS */
{state}
int main(void)
{{
    uint16_t i;
{setup}
    for (i = 0; i < probe_reps; i++) {{
        int32_t label = {call};
        if (label != expect[i])
            for (;;) {{ SPIN(); }}   /* a wrong label: the run never ends */
        probe_label = label;
    }}
    return 0;
}}
"""

_OURS_STATE = """static uint64_t workspace[(EC_WORKSPACE_BYTES + 7) / 8];
static int64_t decision[EC_DECISION_LEN];
static ec_model model;
static int32_t infer(const int16_t *frame)
{{
    int32_t label = -1;
    if (ec_infer(&model, frame, &label, {decision}, workspace, sizeof workspace) != EC_OK)
        return -2;
    return label;
}}"""


def _loop_source(frames, expect, include, call, state="", setup=""):
    rows = ", ".join("{" + ", ".join(str(int(v)) for v in r) + "}" for r in frames)
    return _LOOP.format(n=len(frames), w=frames.shape[1], rows=rows,
                        expect=", ".join(str(int(v)) for v in expect), include=include,
                        call=call, state=state, setup=setup)


def _avr_flags(t, opt):
    return [t.cc, "-std=gnu99", opt, *t.cpu_flags, "-ffunction-sections", "-fdata-sections"]


def _harness(work):
    exe = work / "ec_simavr"
    if not exe.is_file():
        bf._run(["gcc", "-std=c99", "-O2", "-I/usr/include/simavr",
                 str(_C_DIR / "avr" / "ec_simavr.c"), "-lsimavr", "-o", str(exe)], work)
    return exe


def _count(target, d, source, objs, opt, cflags, work):
    """Per-inference count of a loop program: (count at R - count at 0) / R."""
    t = TARGETS[target]
    n = REPS[target]
    counts = {}
    for reps in (0, n):
        (d / f"loop{reps}.c").write_text(source)
        if t.family == "arm":
            flags = bf._cflags(t, opt) + cflags + [f"-DREPS={reps}u"]
            (d / "loop_start.c").write_text(bf._LOOP_START)
            bf._run(flags + ["-c", f"loop{reps}.c", "-o", f"loop{reps}.o"], d)
            bf._run(flags + ["-c", "loop_start.c", "-o", "loop_start.o"], d)
            bf._link(t, [str(o) for o in objs] + [f"loop{reps}.o", "loop_start.o"],
                     f"loop{reps}.elf", d)
            counts[reps] = bf._count_insns(d / f"loop{reps}.elf", d)
        else:
            flags = _avr_flags(t, opt) + cflags + [f"-DREPS={reps}u"]
            link = ["-Wl,--gc-sections", f"loop{reps}.c", *map(str, objs), "-o",
                    f"loop{reps}.elf"]
            try:
                bf._run(flags + link, d)
            except RuntimeError as exc:
                if "not within region `data'" not in str(exc) or objs:
                    raise
                # emlearn's constant arrays are .data (RAM): over the 328P's 2 KB, the
                # same AVR core with 8 KB (3-byte PC: calls and returns 1 cycle more)
                t = TARGETS["atmega2560"]
                NOTES.add(d.parent.name)
                bf._run(_avr_flags(t, opt) + cflags + [f"-DREPS={reps}u"] + link, d)
            report = d / f"loop{reps}.report"
            subprocess.run([str(_harness(work)), "--probe", t.simavr, str(t.clock_hz),
                            str(d / f"loop{reps}.elf"), str(report)], check=True, timeout=120,
                           capture_output=True)
            counts[reps] = int(next(ln.split()[1] for ln in report.read_text().splitlines()
                                    if ln.startswith("cycles ")))
    return (counts[n] - counts[0]) / n


# ---------------------------------------------------------------------- ours
def ours(rf, Xt, yt, target, opt, work, counts):
    from export.forest import export_forest

    rows = []
    for leaf, bits, _ in LEAVES:
        dev = export_forest(rf, Xt, leaf=leaf, leaf_bits=bits or 16).device
        tag = leaf if bits is None else f"{leaf}{bits}"
        rows += measure_device(dev, dev.encode(Xt), yt, tag, "ours", target, opt, work, counts)
    return rows


def ecoc_model():
    """ECOC of 15 depth-4 trees (N = 3 code) on digits / 16: bench_firmware's
    ``ecoc_tree15_3ary`` (issue 26's AVR table), with its test rows."""
    from sklearn.datasets import load_digits
    from sklearn.tree import DecisionTreeClassifier

    from edgecode.ecoc import make_code
    from edgecode.ecoc.classifier import ECOCClassifier
    from export.ecoc import export_ecoc

    X, y = load_digits(return_X_y=True)
    Xs = X / 16.0
    clf = ECOCClassifier(DecisionTreeClassifier(max_depth=4, random_state=0),
                         code=make_code("nary", 10, 15, N=3)).fit(Xs[:1200], y[:1200])
    dev = export_ecoc(clf, Xs[:1200]).device
    return dev, dev.quantize(Xs[1200:]), np.searchsorted(np.unique(y[:1200]), y[1200:])


def measure_device(dev, frames_all, yt, tag, who, target, opt, work, counts):
    """Rows of one device in the three forms on ``target``."""
    rows = []
    R = REPS[target]
    acc = float(np.mean(dev.labels(frames_all) == yt))
    frames = frames_all[:R]
    expect = dev.labels(frames)
    for trees in ("table", "inline", "arrays"):
        d = work / f"{who}_{target}_{tag}_{trees}"
        write_firmware(dev.container, d, target, trees=trees)
        b = build_firmware(d, target, opt=opt)
        model = dev.container.nbytes if trees == "table" else 8
        row = dict(target=target, leaves=tag, form=f"{who} {trees}", flash=b.flash_bytes,
                   model=model, ram=b.ram_bytes, acc=acc, count=None, label_only=None)
        if counts:
            objs = [d / "build" / f"{Path(s).stem}.o"
                    for s in runtime_sources() + [INLINE_SOURCE, TARGETS[target].image_source]
                    if (d / "build" / f"{Path(s).stem}.o").is_file()]
            cflags = ["-I", str(d), "-include", "model_config.h"]
            setup = ("    if (ec_model_open(ec_model_image, ec_model_image_size, &model) "
                     "!= EC_OK)\n        return 1;")
            for key, dec in (("count", "decision"), ("label_only", "NULL")):
                if key == "label_only" and trees == "table":
                    continue
                src = _loop_source(frames, expect, '#include "edgecode_rt.h"\n'
                                   '#include "model_image.h"',
                                   "infer(frames[i])", _OURS_STATE.format(decision=dec), setup)
                sub = d / f"loop_{key}"
                sub.mkdir(exist_ok=True)
                row[key] = _count(target, sub, src, objs, opt, cflags, work)
        rows.append(row)
    return rows


# ---------------------------------------------------------------------- emlearn
_EM_PROBE = """#include <stdint.h>
#include "model.h"
int16_t eml_probe_features[64];
volatile int32_t eml_probe_label;
int main(void)
{
    eml_probe_label = peer_predict(eml_probe_features, 64);
    return 0;
}
"""


def emlearn_rows(rf, Xt, yt, target, opt, work, counts):
    import emlearn

    t = TARGETS[target]
    R = REPS[target]
    rows = []
    cwd = os.getcwd()
    os.chdir(work)                     # convert's host build writes ./tmp
    try:
        for leaf, bits, em_bits in LEAVES:
            tag = leaf if bits is None else f"{leaf}{bits}"
            for method in ("loadable", "inline"):
                m = emlearn.convert(rf, method=method, leaf_bits=em_bits)
                acc = float(np.mean(m.predict(Xt) == yt))
                nodes, roots, leaves = m.forest_
                leaf_bytes = len(leaves) * (rf.n_classes_ if em_bits else 1)
                model = (8 * len(nodes) + 4 * len(roots) + leaf_bytes) if method == "loadable" \
                    else leaf_bytes * (em_bits > 0)
                d = work / f"emlearn_{target}_{method}_{em_bits}"
                if t.family == "arm":
                    flash, ram, _, _ = bf.build_emlearn(m, "int16_t", 64, (), target, opt, d,
                                                        emlearn.includedir)
                else:
                    d.mkdir(parents=True, exist_ok=True)
                    m.save(file=str(d / "model.h"), name="peer")
                    (d / "probe.c").write_text(_EM_PROBE)
                    # the data region lifted: a probe over the 2 KB of RAM links, and its
                    # RAM is reported (emlearn's arrays are .data)
                    bf._run(_avr_flags(t, opt) + ["-I", emlearn.includedir, "-Wl,--gc-sections",
                                                  "-Wl,--defsym=__DATA_REGION_LENGTH__=0x10000",
                                                  "probe.c", "-o", "probe.elf"], d)
                    sec = _sections(t.size_tool, d / "probe.elf")
                    flash, ram = t.flash_sections(sec), t.ram_sections(sec)
                if target == "atmega328p" and ram > TARGETS[target].part.ram_bytes:
                    NOTES.add(d.name)
                row = dict(target=target, leaves=tag, form=f"emlearn {method}", flash=flash,
                           model=model, ram=ram, acc=acc, count=None, label_only=None,
                           dir=d.name)
                if counts:
                    Xr = Xt[:R].astype(np.int16)
                    src = _loop_source(Xr, m.predict(Xt[:R]), '#include "model.h"',
                                       "peer_predict(frames[i], 64)")
                    sub = d / "loop"
                    sub.mkdir(exist_ok=True)
                    row["count"] = _count(target, sub, src, [], opt,
                                          ["-I", str(d), "-I", emlearn.includedir], work)
                rows.append(row)
    finally:
        os.chdir(cwd)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--targets", default="cortex-m4,atmega328p",
                    help="comma list of cortex-m4, atmega328p")
    ap.add_argument("--opt", default="-Os", help="optimisation of every build")
    ap.add_argument("--no-counts", action="store_true", help="flash only (no QEMU/simavr runs)")
    ap.add_argument("--keep", default=None, help="build here and keep the files")
    ap.add_argument("--ecoc", action="store_true", help="also an ECOC of 15 depth-4 trees "
                    "(N = 3) in the three forms (no emlearn counterpart)")
    a = ap.parse_args()
    targets = [s for s in a.targets.split(",") if s]
    for target in targets:
        if target not in REPS:
            raise SystemExit(f"--targets: {target!r} is not one of {sorted(REPS)}")
        why = toolchain_missing(target, run=not a.no_counts)
        if why:
            raise SystemExit(f"toolchain for {target}: {why}")
    import emlearn
    work = Path(a.keep or tempfile.mkdtemp(prefix="bench_forest_")).resolve()
    work.mkdir(parents=True, exist_ok=True)
    print(f"# machine: {machine()}")
    print(f"# RandomForestClassifier(15, max_depth=4) on digits x 16; {a.opt}; emlearn "
          f"{getattr(emlearn, '__version__', '?')}; counts: cortex-m4 instructions (QEMU), "
          "atmega328p cycles (simavr, exact)")
    rf, Xt, yt = fit()
    out = []
    ecoc = ecoc_model() if a.ecoc else None
    for target in targets:
        rows = ours(rf, Xt, yt, target, a.opt, work, not a.no_counts) + \
            emlearn_rows(rf, Xt, yt, target, a.opt, work, not a.no_counts)
        for r in rows:
            em = [e for e in rows if e["form"].startswith("emlearn") and
                  e["leaves"] == r["leaves"]]
            small = min(e["flash"] for e in em)
            fast = min(e["count"] for e in em) if not a.no_counts else None

            def ratio(v):
                return "-" if v is None or fast is None else f"{v / fast:.2f}"
            out.append([r["target"], r["leaves"], r["form"], r["flash"], r["model"], r["ram"],
                        f"{r['flash'] / small:.2f}",
                        "-" if r["count"] is None else f"{r['count']:.0f}", ratio(r["count"]),
                        "-" if r["label_only"] is None else f"{r['label_only']:.0f}",
                        ratio(r["label_only"]), f"{r['acc']:.3f}",
                        "RAM over 2 KB: cycles on atmega2560" if r.get("dir") in NOTES else ""])
        if ecoc is not None:
            for r in measure_device(ecoc[0], ecoc[1], ecoc[2], "ecoc_tree15_3ary", "ours",
                                    target, a.opt, work, not a.no_counts):
                out.append([r["target"], r["leaves"], r["form"], r["flash"], r["model"],
                            r["ram"], "-", "-" if r["count"] is None else f"{r['count']:.0f}",
                            "-", "-" if r["label_only"] is None else f"{r['label_only']:.0f}",
                            "-", f"{r['acc']:.3f}", "ECOC: no emlearn counterpart"])
    print_table(["target", "leaves", "form", "flash_B", "model_B", "ram_B",
                 "flash_vs_emlearn_smaller", "per_inference", "vs_emlearn_faster",
                 "label_only", "label_only_vs_emlearn_faster", "accuracy", "note"], out)
    if not a.keep:
        import shutil
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
