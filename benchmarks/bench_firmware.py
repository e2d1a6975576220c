"""Real firmware (issue 12): flash, RAM and cycles of the C99 runtime against
firmware_sim's profile estimates and against emlearn.

Usage::

    python benchmarks/bench_firmware.py [--fast | --full] [--jobs N] [--keep DIR]

Models (bundled data only; nothing is read from ../shared):

* ``nb_greedy``: protected naive Bayes on house votes, greedy plan of 32
  redundancy bits at eps 0.2 (16 features, 48 received bits; what ``edgecode
  plan`` writes);
* ``ecoc_tree15_3ary``: ECOC of 15 decision trees of depth 4 on digits with a
  3-ary code (``make_code("nary", 10, 15, N=3)``);
* ``ecoc_linsvm15_bin``: ECOC of 15 binary linear SVMs on digits (dense random code);
* ``ssbc16_knn``: SSBC, 16 bits, 64 anchors, a k-NN table (k = 5) of the 1200
  training digits;
* ``ecoc_tree80_wide``: a wide ECOC, 80 binary columns of depth-3 trees (> 64
  columns: two code words per class); not in ``--fast``.

Digits: the first 1200 rows train, the other 597 test; house votes: all 435
rows (as the planner does).

emlearn peers (``emlearn.convert(model, method=..).save(file=.., name=..)``,
a probe ``main`` that calls ``peer_predict`` once on a global input array):
``RandomForestClassifier(15, max_depth=4)`` on digits (features x 16, see
``emlearn_models``), generated ``inline`` (trees as C code) and ``loadable``
(node arrays + ``eml_trees.h``), against ``ecoc_tree15_3ary``;
``GaussianNB`` on house votes against ``nb_greedy``; an MLP 64-15-10 (relu,
softmax; emlearn has no plain linear model) against ``ecoc_linsvm15_bin``:
it calls ``expf``/``logf``/``tanhf``, so it links newlib's ``-lm -lc``.

Tables (``;``-separated):

1. ``size``: per model, target (cortex-m0plus, cortex-m4) and optimisation
   (-Os, -O2): the real flash (text + rodata + data, the image included) and
   RAM (data + bss + worst-case stack) of ``build_firmware``'s size probe (the
   smallest firmware that opens the image and runs one inference), the image
   size, and firmware_sim's estimate for the same artifact
   (``device.resources()`` flash_bytes / ram_bytes, ``annotate(.., profile)``
   cycles with the target's profile: cortex-m0plus -> ``cortex-m0``,
   cortex-m4 -> ``cortex-m4``); ratios real / estimate. ``fits_est`` /
   ``fits_real``: whether the estimate / the real build fits the profile's
   flash and RAM. ``all_kinds_*``: the same probe with every kind compiled
   in (``write_firmware(.., kinds="all")``; the default build compiles in the
   model's kind only).
2. ``calibration``: per target and optimisation, the runtime code (flash -
   image) and stack per kind, beside the profile's ``runtime_bytes(kind)``
   (the constants ``check_fits`` adds), and RAM - estimate over the models.
3. ``estimate``: the profiles' cycle estimates per inference, the
   operation-count keys they leave unpriced (no known suffix: counted as 0
   cycles) and the estimate with those keys priced as ``PROPOSED_CLASSES``
   says (a calibration proposal; ``firmware_sim/profiles.py`` is unchanged).
4. ``peer``: ours against emlearn (PyPI; optional: a note and no peer rows
   when it is not installed) for comparable models, compiled with the same
   flags, bare start and ``--gc-sections`` as our probe; ratios ours /
   emlearn, and test accuracies (ours: firmware_sim's device, bit-exact with
   the C runtime; emlearn: its own host build of the generated C).
5. ``timing``: host compile of the runner per model (``build_firmware(..,
   "host").compile_s``, median of repeats; wall and CPU seconds), and a
   QEMU Cortex-M4 run of 2,000 frames (``run_firmware``), checked frame for
   frame against firmware_sim.
6. ``insns`` (not with ``--fast``): instructions per inference on Cortex-M4
   under QEMU (one instruction per translation block, every executed block
   logged; an R-frame loop minus an empty loop, divided by R) next to the
   cortex-m4 profile's cycle estimate.

Stack figures are ``-fstack-usage`` frames along ``-fcallgraph-info`` edges
from ``main``; calls into libgcc (and, for emlearn's MLP, newlib's libm/libc)
count 0.

Per kind and target (issue 26), ``--targets T[,T..]|all`` instead prints
only this table::

    python benchmarks/bench_firmware.py --targets all [--kinds K,..] [--no-emlearn]

7. ``targets``: for NB (``nb_greedy``), ECOC linear (``ecoc_linsvm15_bin``
   as exported by default, 31-bit weights and int64 sums, and
   ``ecoc_linear_i32``: the same fitted model with
   ``export_ecoc(.., accumulator="int32")``), ECOC trees
   (``ecoc_tree15_3ary``), SSBC (16 bits, 64 anchors, a k-NN table of the
   first 300 training digits: it fits the ATmega328P) and the forest kind
   (``RandomForestClassifier(15, max_depth=4)`` on digits x 16, class
   leaves), on host, cortex-m0plus, cortex-m4, atmega328p, atmega2560 and
   rv32imac with the target's default optimisation: flash, RAM and stack of
   ``build_firmware``'s size probe (AVR stack: simavr's peak), the image
   size, the open's and the median inference's count over 8 test frames --
   exact cycles on AVR (simavr), instructions on RV32 (QEMU ``-icount``) and
   Cortex-M4 (QEMU, one instruction per block; the open: a program that
   opens minus one that does not), none on the host and M0+ (no emulator) --,
   the labels and decision integers against firmware_sim, and
   ``firmware_sim.profiles.estimate`` with the target's profile (``-`` where
   no profile models the target);
8. ``emlearn`` on the same targets: GaussianNB, the random forest (inline
   and loadable) and the MLP (emlearn has no plain linear model), flash,
   RAM and stack of a probe calling ``peer_predict`` once, and on AVR its
   cycles (simavr: a program with the call minus one without; the input is
   all zeros).

``EC_BENCH_C_DIR=DIR`` writes the firmware from another copy of
``firmware_sim/c`` (an older runtime: the "before" columns of
``benchmarks/README.md``).
"""

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from _common import machine, print_table

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import firmware_sim  # noqa: E402
from export.firmware import (TARGETS, _C_DIR, _PROBE_START, _sections,  # noqa: E402
                             _worst_stack, build_firmware, decision_integers,
                             run_firmware, run_firmware_measured, runtime_sources,
                             toolchain_missing, write_firmware)
from firmware_sim.profiles import annotate, get_profile  # noqa: E402

ARM_TARGETS = ("cortex-m0plus", "cortex-m4")
PROFILES = {
    "fast": dict(opts=("-Os",), wide=False, host_repeats=1, insns=False, insn_frames=0),
    "default": dict(opts=("-Os", "-O2"), wide=True, host_repeats=3, insns=True, insn_frames=4),
    "full": dict(opts=("-Os", "-O2"), wide=True, host_repeats=5, insns=True, insn_frames=16),
}
KINDS = {"protected_nb": "nb", "ecoc": "ecoc", "ssbc": "ssbc"}
QEMU_FRAMES = 2000


# ---------------------------------------------------------------------- models
def build_models(wide):
    """{name: (device, X_test_rows, y_test, classes)}: the artifacts measured."""
    from sklearn.datasets import load_digits
    from sklearn.svm import LinearSVC
    from sklearn.tree import DecisionTreeClassifier

    from edgecode import datasets
    from edgecode.ecoc import make_code
    from edgecode.ecoc.classifier import ECOCClassifier
    from edgecode.hashing import SSBC
    from edgecode.naive_bayes import BinaryNaiveBayes
    from edgecode.redundancy import allocate_greedy
    from export.ecoc import export_ecoc
    from export.naive_bayes import export_protected_nb
    from export.ssbc import export_ssbc

    out = {}
    d = datasets.load("house_votes")
    nb = BinaryNaiveBayes().fit(d.X, d.y)
    plan = allocate_greedy(nb.decision_function(d.X), nb.flip_deltas(d.X), 0.2, 32)
    out["nb_greedy"] = (export_protected_nb(nb, plan.repetitions).device, d.X, d.y,
                        np.unique(d.y))
    X, y = load_digits(return_X_y=True)
    Xs = X / 16.0
    tr, te = slice(0, 1200), slice(1200, None)
    classes = np.unique(y[tr])

    def ecoc(learner, code):
        clf = ECOCClassifier(learner, code=code).fit(Xs[tr], y[tr])
        return export_ecoc(clf, Xs[tr]).device

    out["ecoc_tree15_3ary"] = (ecoc(DecisionTreeClassifier(max_depth=4, random_state=0),
                                    make_code("nary", 10, 15, N=3)), Xs[te], y[te], classes)
    out["ecoc_linsvm15_bin"] = (ecoc(LinearSVC(random_state=0),
                                     make_code("dense_random", 10, 15, random_state=0)),
                                Xs[te], y[te], classes)
    h = SSBC(16, 64, 32, center=True, random_state=0).fit(X[tr])
    sdev = firmware_sim.load(export_ssbc(h, X_table=X[tr], y_table=y[tr], knn_k=5).container)
    out["ssbc16_knn"] = (sdev, X[te], y[te], classes)
    if wide:
        out["ecoc_tree80_wide"] = (ecoc(DecisionTreeClassifier(max_depth=3, random_state=0),
                                        make_code("dense_random", 10, 80, random_state=0)),
                                   Xs[te], y[te], classes)
    return out


def device_accuracy(dev, Xt, yt, classes):
    inf = dev.infer(dev.encode(Xt))
    if inf.labels is None:
        return float("nan")
    return float(np.mean(classes[np.asarray(inf.labels)] == yt))


# ---------------------------------------------------------------------- estimates
# The composite operation keys of ECOC and SSBC, priced as weighted sums: first
# proposed here, now applied by the profiles themselves (issue 12), so the
# "repriced" column equals the profile's estimate.
from firmware_sim.profiles import _COMPOSITE_CLASSES as PROPOSED_CLASSES  # noqa: E402


def estimates(resources, profile):
    """(cycles as the profile prices them, unpriced keys, their share of the
    counted operations, cycles with the unpriced keys priced by PROPOSED_CLASSES)."""
    from firmware_sim.profiles import estimate

    base = estimate(profile, resources)
    ops = dict(resources.get("ops_per_inference", {}))
    total = sum(v for k, v in ops.items() if k != "total") or 1
    extra = {}
    for key in base["unpriced"]:
        n = ops.pop(key)
        for suffix, classes in PROPOSED_CLASSES:
            if key.endswith(suffix):
                for cls, w in classes.items():
                    extra[cls] = extra.get(cls, 0) + int(round(w * n))
                break
    rep = estimate(profile, dict(resources, ops_per_inference=ops), extra_ops=extra)
    share = sum(resources["ops_per_inference"][k] for k in base["unpriced"]) / total
    return base["cycles"], base["unpriced"], share, rep["cycles"]


# ---------------------------------------------------------------------- our builds
def _run(cmd, cwd):
    res = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))}\n{res.stdout}{res.stderr}"[:3000])
    return res


def _flash_ram(t, elf, build_dir):
    sec = _sections(t.size_tool, elf)
    flash = sum(v for k, v in sec.items()
                if k in (".text", ".rodata", ".data", ".ARM.exidx", ".vectors"))
    stack = _worst_stack(build_dir, "main")
    return int(flash), int(sec.get(".data", 0) + sec.get(".bss", 0) + stack), int(stack), sec


def _cflags(t, opt):
    return [t.cc, "-std=c99", opt, *t.cpu_flags, "-ffunction-sections", "-fdata-sections",
            "-fstack-usage", "-fcallgraph-info=su", "-fno-tree-loop-distribute-patterns"]


def _link(t, objs, out, cwd, libs=()):
    _run([t.cc, *t.cpu_flags, "-Wl,--gc-sections", "-T", str(_C_DIR / "arm" / "link.ld"),
          "-nostartfiles", "-nostdlib", *objs, *libs, "-lgcc", "-o", out], cwd)


def all_kinds(dev, fw_dir, target, opt):
    """The size probe of a firmware with every kind compiled in
    (``write_firmware(.., kinds="all")``, what a firmware that opens images of
    any kind weighs): (flash, ram, stack)."""
    write_firmware(dev.container, fw_dir, target, kinds="all")
    b = build_firmware(fw_dir, target, opt=opt)
    return b.flash_bytes, b.ram_bytes, b.stack_bytes


def build_one(dev, fw_dir, target, opt):
    write_firmware(dev.container, fw_dir, target)
    b = build_firmware(fw_dir, target, opt=opt)
    return b, all_kinds(dev, str(fw_dir) + "_all", target, opt)


# ---------------------------------------------------------------------- instructions
_EXIT = """    (void)main();
    {   /* semihosting SYS_EXIT, ADP_Stopped_ApplicationExit: QEMU stops */
        register uint32_t r0 __asm__("r0") = 0x18u;
        register uint32_t r1 __asm__("r1") = 0x20026u;
        __asm__ volatile("bkpt 0xab" : : "r"(r0), "r"(r1) : "memory");
    }
    for (;;) {}"""
_LOOP_START = _PROBE_START.replace("    (void)main();\n    for (;;) {}", _EXIT)

_LOOP_MAIN = """#include "edgecode_rt.h"
extern const uint8_t ec_model_image[];
extern const uint32_t ec_model_image_size;
static uint64_t workspace[(EC_WORKSPACE_BYTES + 7) / 8];
static const int16_t frames[{n}][EC_FRAME_WIDTH] = {{ {rows} }};
static int64_t decision[EC_DECISION_LEN];
volatile int32_t ec_probe_label;
volatile uint32_t ec_probe_reps = REPS;   /* the same code for every REPS */
int main(void)
{{
    ec_model model;
    int32_t label = -1;
    uint32_t i;
    if (ec_model_open(ec_model_image, ec_model_image_size, &model) != EC_OK) return 1;
    for (i = 0; i < ec_probe_reps; i++)
        if (ec_infer(&model, frames[i], &label, decision, workspace, sizeof workspace) != EC_OK)
            return 2;
    ec_probe_label = label;
    return 0;
}}
"""


def _count_insns(elf, cwd):
    """Instructions executed from reset to the semihosting exit under QEMU
    (-singlestep: one instruction per block; -d exec,nochain: every block logged)."""
    log = Path(cwd) / (Path(elf).stem + ".log")
    cmd = ["qemu-system-arm", "-M", "mps2-an386", "-cpu", "cortex-m4", "-nographic",
           "-monitor", "none", "-semihosting-config", "enable=on,target=native",
           "-singlestep", "-d", "exec,nochain", "-D", str(log), "-kernel", str(elf)]
    try:
        subprocess.run(cmd, cwd=cwd, capture_output=True, timeout=60, check=True)
        n = 0
        with open(log, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 22), b""):
                n += chunk.count(b"Trace ")
    finally:
        log.unlink(missing_ok=True)
    return n


def insns_per_inference(fw_dir, frames):
    """(instructions per inference, frames) on the cortex-m4 -O2 objects of fw_dir."""
    if _EXIT not in _LOOP_START:
        raise RuntimeError("export.firmware's probe start changed: no exit to patch in")
    t = TARGETS["cortex-m4"]
    src = Path(fw_dir) / "build"
    d = Path(fw_dir) / "insns"
    d.mkdir(exist_ok=True)
    rows = ", ".join("{" + ", ".join(str(int(v)) for v in r) + "}" for r in frames)
    n = len(frames)
    (d / "loop_start.c").write_text(_LOOP_START)
    objs = [src / f"{Path(s).stem}.o" for s in runtime_sources() + ["model_image.c"]
            if (src / f"{Path(s).stem}.o").is_file()]
    counts = {}
    for reps in (0, n):
        (d / f"loop{reps}.c").write_text(_LOOP_MAIN.format(n=n, rows=rows))
        flags = [t.cc, "-std=c99", "-O2", *t.cpu_flags, "-ffunction-sections",
                 "-fdata-sections", "-fno-tree-loop-distribute-patterns", "-I", str(fw_dir),
                 "-include", "model_config.h", f"-DREPS={reps}u"]
        _run(flags + ["-c", f"loop{reps}.c", "-o", f"loop{reps}.o"], d)
        _run(flags + ["-c", "loop_start.c", "-o", "loop_start.o"], d)
        _link(t, [str(o) for o in objs] + [f"loop{reps}.o", "loop_start.o"], f"loop{reps}.elf", d)
        counts[reps] = _count_insns(d / f"loop{reps}.elf", d)
    return (counts[n] - counts[0]) / n


# ---------------------------------------------------------------------- emlearn
def emlearn_models(work):
    """({pair: [(variant, emlearn model, ctype, n_features, libs, accuracy)]},
    include dir, version), or None without emlearn. ``convert`` compiles a host
    build for ``predict`` in ``./tmp``: it runs inside ``work``."""
    try:
        import emlearn  # noqa: F401
    except ImportError:
        return None
    cwd = os.getcwd()
    os.chdir(work)
    try:
        return _emlearn_models()
    finally:
        os.chdir(cwd)


def _emlearn_models():
    import emlearn
    import warnings

    from sklearn.datasets import load_digits
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.naive_bayes import GaussianNB
    from sklearn.neural_network import MLPClassifier

    from edgecode import datasets

    X, y = load_digits(return_X_y=True)
    tr, te = slice(0, 1200), slice(1200, None)
    out = {}
    # features x 16: emlearn's int16 thresholds are truncated and compared with
    # "<"; on multiples of 16 that splits exactly as scikit-learn's "<= t"
    Xi = X * 16
    rf = RandomForestClassifier(15, max_depth=4, random_state=0).fit(Xi[tr], y[tr])
    rows = []
    for method in ("inline", "loadable"):
        m = emlearn.convert(rf, method=method)
        acc = float(np.mean(m.predict(Xi[te]) == y[te]))
        rows.append((f"RandomForest15_d4_{method}", m, "int16_t", 64, (), acc))
    out["ecoc_tree15_3ary"] = rows
    d = datasets.load("house_votes")
    g = GaussianNB().fit(d.X, d.y)
    m = emlearn.convert(g)
    out["nb_greedy"] = [("GaussianNB", m, "float", d.X.shape[1], (),
                         float(np.mean(m.predict(d.X.astype(float)) == d.y)))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        mlp = MLPClassifier((15,), max_iter=300, random_state=0).fit(X[tr] / 16, y[tr])
    m = emlearn.convert(mlp)
    out["ecoc_linsvm15_bin"] = [("MLP64-15-10_loadable", m, "float", 64, ("-lm", "-lc"),
                                 float(np.mean(m.predict(X[te] / 16) == y[te])))]
    return out, emlearn.includedir, getattr(emlearn, "__version__", "?")


def build_emlearn(model, ctype, n_features, libs, target, opt, d, includedir):
    t = TARGETS[target]
    d = Path(d)
    d.mkdir(parents=True, exist_ok=True)
    model.save(file=str(d / "model.h"), name="peer")
    (d / "probe_start.c").write_text(_PROBE_START)
    (d / "probe.c").write_text(
        "#include <stdint.h>\n#include \"model.h\"\n"
        f"{ctype} eml_probe_features[{n_features}];\n"
        "volatile int32_t eml_probe_label;\n"
        "int main(void)\n{\n"
        f"    eml_probe_label = peer_predict(eml_probe_features, {n_features});\n"
        "    return 0;\n}\n")
    for s in ("probe.c", "probe_start.c"):
        _run(_cflags(t, opt) + ["-I", includedir, "-c", s, "-o", s[:-2] + ".o"], d)
    _link(t, ["probe.o", "probe_start.o"], "probe.elf", d, libs)
    return _flash_ram(t, d / "probe.elf", d)


# ---------------------------------------------------------------------- main
def cpu_children():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--fast", action="store_true", help="-Os only, no wide model, no "
                   "instruction counts")
    g.add_argument("--full", action="store_true", help="more host-compile repeats and "
                   "frames per instruction count")
    ap.add_argument("--jobs", type=int, default=2, help="parallel Cortex-M builds (sizes only)")
    ap.add_argument("--keep", default=None, help="build here and keep the files")
    ap.add_argument("--targets", default=None, metavar="T[,T..]|all",
                    help="only the per-kind x per-target table (issue 26) on these targets "
                         f"(all: {','.join(TABLE_TARGETS)})")
    ap.add_argument("--kinds", default=None, metavar="K[,K..]",
                    help="with --targets: only these rows (nb, ecoc_linear, ecoc_linear_i32, "
                         "ecoc_trees, ssbc, forest)")
    ap.add_argument("--no-emlearn", action="store_true", help="with --targets: no peer rows")
    a = ap.parse_args()
    if a.targets:
        tg = TABLE_TARGETS if a.targets == "all" else tuple(a.targets.split(","))
        print(f"# machine: {machine()}")
        print("# load average at start: " + " ".join(f"{v:.1f}" for v in os.getloadavg()))
        work = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix="bench_fw_"))
        work.mkdir(parents=True, exist_ok=True)
        try:
            run_targets(work, tg, a.kinds.split(",") if a.kinds else None, not a.no_emlearn)
        finally:
            if not a.keep:
                shutil.rmtree(work, ignore_errors=True)
        return
    prof = PROFILES["fast" if a.fast else "full" if a.full else "default"]
    print(f"# machine: {machine()}")
    print("# load average at start: " + " ".join(f"{v:.1f}" for v in os.getloadavg()))
    for tgt in ("host",) + ARM_TARGETS:
        why = toolchain_missing(tgt, run=(tgt == "cortex-m4"))
        if why:
            raise SystemExit(f"toolchain for {tgt}: {why}")
    def first_line(*cmd):
        out = subprocess.run(cmd, capture_output=True, text=True).stdout
        return (out.splitlines() or ["?"])[0].strip()

    print(f"# arm-none-eabi-gcc {first_line('arm-none-eabi-gcc', '-dumpversion')}, gcc "
          f"{first_line('gcc', '-dumpversion')}, {first_line('qemu-system-arm', '--version')}")
    t_all = time.perf_counter()
    work = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix="bench_fw_"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        run(prof, a.jobs, work)
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(f"# total wall {time.perf_counter() - t_all:.0f} s; load average at end: "
          + " ".join(f"{v:.1f}" for v in os.getloadavg()))


def run(prof, jobs, work):
    t0 = time.perf_counter()
    models = build_models(prof["wide"])
    print(f"# models trained and exported in {time.perf_counter() - t0:.1f} s")
    acc = {}
    for name, (dev, Xt, yt, classes) in models.items():
        acc[name] = device_accuracy(dev, Xt, yt, classes)
        print(f"# {name}: kind {dev.container.kind}, image {dev.container.nbytes} B, frame "
              f"{dev.frame_width} values, test accuracy (firmware_sim) {acc[name]:.3f}")

    # 1. sizes --------------------------------------------------------------
    jobs_list = [(n, tgt, opt) for n in models for tgt in ARM_TARGETS for opt in prof["opts"]]
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max(1, jobs)) as ex:
        futs = {key: ex.submit(build_one, models[key[0]][0],
                               work / f"{key[0]}_{key[1]}{key[2]}", key[1], key[2])
                for key in jobs_list}
        built = {k: f.result() for k, f in futs.items()}
    print(f"# {len(jobs_list)} Cortex-M builds in {time.perf_counter() - t0:.0f} s "
          f"({jobs} in parallel)")
    rows = []
    calib = {}
    for (name, tgt, opt), (b, ko) in built.items():
        dev = models[name][0]
        p = get_profile(TARGETS[tgt].profile)
        r = annotate(dev.resources(), p)
        est_f, est_r, est_c = r["flash_bytes"], r["ram_bytes"], r["estimate"]["cycles"]
        img = dev.container.nbytes
        fits_real = b.flash_bytes <= p.flash_bytes and b.ram_bytes <= p.ram_bytes
        rows.append([name, tgt, opt, img, b.flash_bytes, est_f, b.flash_bytes / est_f,
                     b.flash_bytes - img, b.ram_bytes, b.stack_bytes, est_r,
                     b.ram_bytes / est_r, f"{est_c:.0f}", p.name,
                     "yes" if r["fits"]["ok"] else "no", "yes" if fits_real else "no",
                     ko[0], ko[1]])
        c = calib.setdefault((tgt, opt), {"code": [], "ram_over": [], "stack": [],
                                          "kind_code": {}, "kind_stack": {}, "all_code": []})
        c["code"].append(b.flash_bytes - img)
        c["ram_over"].append(b.ram_bytes - est_r)
        c["stack"].append(b.stack_bytes)
        c["all_code"].append(ko[0] - img)
        c["kind_code"].setdefault(dev.container.kind, set()).add(b.flash_bytes - img)
        c["kind_stack"].setdefault(dev.container.kind, set()).add(b.stack_bytes)
    print("\n# size: real = build_firmware size probe; est = firmware_sim resources() "
          "(image only; RAM of the inference's own variables)")
    print_table(["model", "target", "opt", "image_B", "flash_B", "est_flash_B", "flash_ratio",
                 "runtime_code_B", "ram_B", "stack_B", "est_ram_B", "ram_ratio",
                 "est_cycles", "profile", "fits_est", "fits_real", "all_kinds_flash_B",
                 "all_kinds_ram_B"], rows)

    # 2. calibration ----------------------------------------------------------
    crow = []
    for (tgt, opt), c in sorted(calib.items()):
        def span(v):
            return f"{min(v)}" if min(v) == max(v) else f"{min(v)}-{max(v)}"
        dprof = get_profile(TARGETS[tgt].profile)
        crow.append([tgt, opt, " ".join(f"{k}:{span(v)}" for k, v in sorted(c["kind_code"].items())),
                     " ".join(f"{k}:{span(v)}" for k, v in sorted(c["kind_stack"].items())),
                     " ".join(f"{k}:{v[0]}/{v[1]}" for k, v in sorted(
                         (k, dprof.runtime_bytes(k)) for k in c["kind_code"])),
                     span(c["all_code"]) if c["all_code"] else "-",
                     min(c["ram_over"]), max(c["ram_over"])])
    print("\n# calibration: runtime code = flash - image, per kind (the firmware compiles in "
          "its model's kind); profile = the profile's runtime flash/stack for the kind; "
          "all_kinds = every kind compiled in; ram_over = real RAM - est RAM")
    print_table(["target", "opt", "code_B", "stack_B", "profile_flash/stack_B",
                 "all_kinds_code_B", "ram_over_min_B", "ram_over_max_B"], crow)

    erow = []
    for name, (dev, *_rest) in models.items():
        res = dev.resources()
        c0, unpriced, share, r0 = estimates(res, "cortex-m0")
        c4, _, _, r4 = estimates(res, "cortex-m4")
        erow.append([name, f"{c0:.0f}", f"{c4:.0f}", f"{share:.0%}", " ".join(unpriced) or "-",
                     f"{r0:.0f}", f"{r4:.0f}"])
    print("\n# estimate: profile cycles per inference; unpriced = operation-count keys the "
          "profiles do not price (no known suffix; their share of the counted operations); "
          "repriced = the same with them priced as proposed (PROPOSED_CLASSES)")
    print_table(["model", "est_cycles_m0", "est_cycles_m4", "unpriced_share", "unpriced_keys",
                 "repriced_m0", "repriced_m4"], erow)

    # 4. emlearn --------------------------------------------------------------
    em = emlearn_models(work)
    if em is None:
        print("\n# peer: emlearn is not installed (pip install emlearn; a benchmark-only "
              "peer, not a project dependency): peer rows skipped")
    else:
        peers, incdir, ver = em
        print(f"\n# peer: emlearn {ver}; same flags, bare start and --gc-sections as our "
              "probe; ratio = ours / emlearn; ours_all_kinds = our probe with every kind compiled in")
        prow = []
        for name, variants in peers.items():
            if name not in models:
                continue
            for variant, m, ctype, nf, libs, pacc in variants:
                for tgt in ARM_TARGETS:
                    for opt in prof["opts"]:
                        b, ko = built[(name, tgt, opt)]
                        try:
                            ef, er, es, _ = build_emlearn(
                                m, ctype, nf, libs, tgt, opt,
                                work / "emlearn" / f"{variant}_{tgt}{opt}", incdir)
                        except RuntimeError as exc:
                            print(f"# emlearn {variant} {tgt} {opt} failed: "
                                  f"{str(exc).splitlines()[0][:200]}")
                            continue
                        prow.append([name, variant, tgt, opt, b.flash_bytes, ef,
                                     b.flash_bytes / ef,
                                     ko[0], ko[0] / ef,
                                     b.ram_bytes, er, b.ram_bytes / er, b.stack_bytes, es,
                                     f"{acc[name]:.3f}", f"{pacc:.3f}",
                                     " ".join(libs) or "-"])
        print_table(["ours", "emlearn", "target", "opt", "ours_flash_B", "emlearn_flash_B",
                     "flash_ratio", "ours_all_kinds_flash_B", "all_kinds_ratio", "ours_ram_B",
                     "emlearn_ram_B", "ram_ratio", "ours_stack_B", "emlearn_stack_B",
                     "ours_acc", "emlearn_acc", "extra_libs"], prow)

    # 5. host compile and QEMU ------------------------------------------------
    trow = []
    rng = np.random.default_rng(0)
    for name, (dev, Xt, yt, classes) in models.items():
        hd = work / f"{name}_host"
        write_firmware(dev.container, hd, "host")
        walls, cpus = [], []
        for _ in range(prof["host_repeats"]):
            c0 = cpu_children()
            walls.append(build_firmware(hd, "host", probe=False).compile_s)
            cpus.append(cpu_children() - c0)
        m4 = work / f"{name}_cortex-m4{'-O2' if '-O2' in prof['opts'] else '-Os'}"
        frames = dev.encode(Xt[rng.integers(0, len(Xt), QEMU_FRAMES)])
        t0 = time.perf_counter()
        labels, dec = run_firmware(m4, frames, "cortex-m4")
        q = time.perf_counter() - t0
        ref_l, ref_d = decision_integers(dev, frames)
        same = np.array_equal(labels, ref_l) and np.array_equal(dec, ref_d)
        trow.append([name, statistics.median(walls), statistics.median(cpus), len(frames),
                     q, "equal" if same else "DIFFER"])
    print(f"\n# timing: host compile of the runner (gcc -O2, median of {prof['host_repeats']}; "
          "cpu = user + sys of the compiler processes); QEMU Cortex-M4 run of the "
          f"{'-O2' if '-O2' in prof['opts'] else '-Os'} runner, frames through semihosting, "
          "checked against firmware_sim")
    print_table(["model", "host_compile_wall_s", "host_compile_cpu_s", "qemu_frames",
                 "qemu_m4_s", "vs_firmware_sim"], trow)

    # 6. instructions ---------------------------------------------------------
    if prof["insns"]:
        irow = []
        p4 = get_profile("cortex-m4")
        for name, (dev, Xt, yt, classes) in models.items():
            fw = work / f"{name}_cortex-m4-O2"
            frames = dev.encode(Xt[:prof["insn_frames"]]).astype(np.int64)
            t0 = time.perf_counter()
            try:
                n = insns_per_inference(fw, frames)
            except (RuntimeError, subprocess.SubprocessError, OSError) as exc:
                print(f"# instruction count of {name} failed: {str(exc)[:200]}")
                continue
            est, _, _, rep = estimates(dev.resources(), p4)
            irow.append([name, len(frames), f"{n:.0f}", f"{est:.0f}", n / est, f"{rep:.0f}",
                         n / rep, f"{time.perf_counter() - t0:.1f}"])
        print("\n# insns: Cortex-M4 -O2 under QEMU, instructions per inference (mean over the "
              "first test rows) vs the cortex-m4 profile's cycle estimate (a cycle count; "
              "loads and taken branches cost 2+ cycles on the core)")
        print_table(["model", "frames", "insns_per_inference", "est_cycles_m4", "ratio",
                     "repriced_m4", "ratio_repriced", "count_s"], irow)



# ---------------------------------------------------------------------- per kind x target (issue 26)
#: The targets of the per-kind table (issue 26, "Done when").
TABLE_TARGETS = ("host", "cortex-m0plus", "cortex-m4", "atmega328p", "atmega2560", "rv32imac")
#: Frames per measured run (counts: median over them).
TABLE_FRAMES = 8

_OPEN_MAIN = """#include "edgecode_rt.h"
extern const uint8_t ec_model_image[];
extern const uint32_t ec_model_image_size;
volatile int32_t ec_probe_label;
volatile uint32_t ec_probe_open = OPEN;
int main(void)
{
    ec_model model;
    if (ec_probe_open && ec_model_open(ec_model_image, ec_model_image_size, &model) != EC_OK)
        return 1;
    ec_probe_label = 0;
    return 0;
}
"""


def table_models():
    """{kind row: (device, X_test, y_test, classes)} of the per-target table:
    NB, ECOC linear (exported for 64-bit sums, the default, and for 32-bit
    ones), ECOC trees, SSBC (a table of 300 rows: it fits the ATmega328P),
    forest."""
    from sklearn.datasets import load_digits
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.svm import LinearSVC

    from edgecode.ecoc import make_code
    from edgecode.ecoc.classifier import ECOCClassifier
    from edgecode.hashing import SSBC
    from export.ecoc import export_ecoc
    from export.forest import export_forest
    from export.ssbc import export_ssbc

    base = build_models(False)
    X, y = load_digits(return_X_y=True)
    tr, te = slice(0, 1200), slice(1200, None)
    Xs = X / 16.0
    svm = ECOCClassifier(LinearSVC(random_state=0),
                         code=make_code("dense_random", 10, 15, random_state=0)).fit(Xs[tr], y[tr])
    h = SSBC(16, 64, 32, center=True, random_state=0).fit(X[tr])
    sdev = firmware_sim.load(export_ssbc(h, X_table=X[:300], y_table=y[:300], knn_k=5).container)
    out = {"nb": base["nb_greedy"], "ecoc_linear": base["ecoc_linsvm15_bin"],
           "ecoc_linear_i32": (export_ecoc(svm, Xs[tr], accumulator="int32").device, Xs[te],
                               y[te], np.unique(y[tr])),
           "ecoc_trees": base["ecoc_tree15_3ary"],
           "ssbc": (sdev, X[te], y[te], np.unique(y[tr]))}
    Xi = X * 16
    rf = RandomForestClassifier(15, max_depth=4, random_state=0).fit(Xi[tr], y[tr])
    fdev = firmware_sim.load(export_forest(rf, leaf="class").container)
    out["forest"] = (fdev, Xi[te], y[te], np.unique(y[tr]))
    return out


def _estimate_cell(dev, target, frames):
    """The profile's cycle estimate per inference (the calibrated model on the
    device and the measured frames, their median as the measured column; the
    operation classes where the profile has no prices for the kind) and flash
    estimate for the target, or ("-", "-") when no profile models it."""
    from firmware_sim.profiles import estimate

    name = TARGETS[target].profile or target
    try:
        p = get_profile(name)
    except (KeyError, ValueError):
        return "-", "-"
    res = dev.resources()
    try:
        est = estimate(p, dev, frames=frames)
        per = est.get("cycles_per_frame")
        cyc = float(np.median(per)) if per is not None else est["cycles"]
    except Exception as exc:  # a profile under construction: say so, do not stop
        return f"error: {str(exc)[:40]}", "-"
    r = annotate(res, p)
    return f"{cyc:.0f}", f"{r['flash_bytes']}"


def m4_counts(fw_dir, frames):
    """(open instructions, instructions per inference) on Cortex-M4 under QEMU,
    the objects of fw_dir/build: open = a program that opens minus one that
    does not; inference = ``insns_per_inference``."""
    t = TARGETS["cortex-m4"]
    src = Path(fw_dir) / "build"
    d = Path(fw_dir) / "insns"
    d.mkdir(exist_ok=True)
    (d / "loop_start.c").write_text(_LOOP_START)
    objs = [src / f"{Path(s).stem}.o" for s in runtime_sources() + ["model_image.c"]
            if (src / f"{Path(s).stem}.o").is_file()]
    counts = {}
    for op in (0, 1):
        (d / f"open{op}.c").write_text(_OPEN_MAIN)
        flags = [t.cc, "-std=c99", "-O2", *t.cpu_flags, "-ffunction-sections",
                 "-fdata-sections", "-fno-tree-loop-distribute-patterns", "-I", str(fw_dir),
                 "-include", "model_config.h", f"-DOPEN={op}u"]
        _run(flags + ["-c", f"open{op}.c", "-o", f"open{op}.o"], d)
        _run(flags + ["-c", "loop_start.c", "-o", "loop_start.o"], d)
        _link(t, [str(o) for o in objs] + [f"open{op}.o", "loop_start.o"], f"open{op}.elf", d)
        counts[op] = _count_insns(d / f"open{op}.elf", d)
    return counts[1] - counts[0], insns_per_inference(fw_dir, frames)


def _avr_probe_cycles(t, work, elf):
    """Cycles and peak stack of a program that returns from main, under simavr
    (the --probe mode of the harness one of our firmware folders in ``work``
    built); None without libsimavr."""
    from export.firmware import _measure
    if toolchain_missing(t.name, run=True):
        return None
    harness = sorted(Path(work).glob(f"tab_*_{t.name}/build/ec_simavr"))
    if not harness:
        return None
    return _measure(t, harness[0].parent.parent, ["--probe"], elf, Path(elf).parent)


def our_row(kind, dev, frames, target, work):
    """[flash, RAM, stack, image, open count, inference count, unit, labels vs
    firmware_sim] of our firmware for one model on one target."""
    t = TARGETS[target]
    fw = work / f"tab_{kind}_{target}"
    write_firmware(dev.container, fw, target)
    b = build_firmware(fw, target, jobs=1)
    img = dev.container.nbytes
    row = [b.flash_bytes, b.ram_bytes, b.stack_bytes, img]
    if t.part is not None and b.flash_bytes > t.part.flash_bytes:
        return row + ["-", "-", "does not fit", "-"]
    if target == "cortex-m4":
        o, i = m4_counts(fw, frames[:4].astype(np.int64))
        return row + [f"{o:.0f}", f"{i:.0f}", "insns (QEMU)", "-"]
    if t.counts is None:
        return row + ["-", "-", "-", "-"]
    try:
        r = run_firmware_measured(fw, frames, target)
    except RuntimeError as exc:
        return row + ["-", "-", f"run failed: {str(exc).splitlines()[0][:60]}", "-"]
    ref_l, ref_d = decision_integers(dev, frames)
    same = np.array_equal(r.labels, ref_l) and np.array_equal(r.decisions, ref_d)
    unit = "cycles (simavr)" if r.unit == "cycles" else "insns (QEMU)"
    return row + [f"{r.open_count}", f"{int(np.median(r.infer_counts))}", unit,
                  "equal" if same else "DIFFER"]


def emlearn_avr_rv(model, ctype, n_features, libs, target, d, includedir):
    """emlearn's probe on AVR (flash, RAM, stack, cycles of one peer_predict
    under simavr: a program that calls it minus one that does not) or RV32
    (flash, RAM; no count)."""
    t = TARGETS[target]
    d = Path(d)
    d.mkdir(parents=True, exist_ok=True)
    model.save(file=str(d / "model.h"), name="peer")
    src = ("#include <stdint.h>\n#include \"model.h\"\n"
           f"{ctype} eml_probe_features[{n_features}];\n"
           "volatile int32_t eml_probe_label;\nvolatile uint8_t eml_probe_call = CALL;\n"
           "int main(void)\n{\n"
           f"    if (eml_probe_call) eml_probe_label = peer_predict(eml_probe_features, "
           f"{n_features});\n    return 0;\n}}\n")
    out = {}
    for call in (0, 1):
        (d / f"probe{call}.c").write_text(src)
        cmd = [t.cc, "-std=gnu99", t.opt, *t.cpu_flags, "-ffunction-sections", "-fdata-sections",
               f"-DCALL={call}", "-I", includedir, f"probe{call}.c", "-Wl,--gc-sections",
               *libs, "-o", f"probe{call}.elf"]
        if t.family == "riscv":
            cmd[-2:-2] = ["--specs=picolibc.specs", "--crt0=minimal",   # as our probe
                          "-T", str(_C_DIR / "riscv" / "link.ld")]
        _run(cmd, d)
        out[call] = d / f"probe{call}.elf"
    sec = _sections(t.size_tool, out[1])
    flash = t.flash_sections(sec)
    ram = t.ram_sections(sec)
    if t.family != "avr":
        return flash, ram, "-", "-"
    m1 = _avr_probe_cycles(t, d.parent.parent, out[1])
    m0 = _avr_probe_cycles(t, d.parent.parent, out[0])
    if m1 is None:
        return flash, ram, "-", "-"
    return flash, ram + m1["stack_peak"], m1["stack_peak"], m1["cycles"] - m0["cycles"]


def run_targets(work, targets, kinds=None, emlearn_rows=True):
    """The per-kind x per-target table (issue 26): ours, then emlearn. With
    the environment variable EC_BENCH_C_DIR, the firmware is written from that
    copy of ``firmware_sim/c`` (an older runtime: the "before" columns)."""
    import export.firmware as ef
    if os.environ.get("EC_BENCH_C_DIR"):
        ef._C_DIR = Path(os.environ["EC_BENCH_C_DIR"]).resolve()
        print(f"# C runtime from {ef._C_DIR}")
    t0 = time.perf_counter()
    models = table_models()
    if kinds:
        models = {k: v for k, v in models.items() if k in kinds}
    print(f"# models trained and exported in {time.perf_counter() - t0:.1f} s")
    rows = []
    rng = np.random.default_rng(0)
    for kind, (dev, Xt, yt, classes) in models.items():
        frames = dev.encode(Xt[rng.integers(0, len(Xt), TABLE_FRAMES)])
        print(f"# {kind}: kind {dev.container.kind}, image {dev.container.nbytes} B, "
              f"test accuracy (firmware_sim) {device_accuracy(dev, Xt, yt, classes):.3f}")
        for target in targets:
            if toolchain_missing(target):
                rows.append([kind, target] + ["-"] * 9 + ["toolchain missing", "-"])
                continue
            t1 = time.perf_counter()
            try:
                r = our_row(kind, dev, frames, target, work)
            except RuntimeError as exc:
                rows.append([kind, target] + ["-"] * 9 + [str(exc).splitlines()[0][:80], "-"])
                continue
            est_c, est_f = _estimate_cell(dev, target, frames)
            rows.append([kind, target, *r[:6], est_c, est_f, r[6], r[7],
                         f"{time.perf_counter() - t1:.0f}"])
    print("\n# targets: ours per kind and target; flash/RAM/stack of build_firmware's size "
          "probe (AVR stack: simavr peak; others: call graph), open/infer: exact cycles on "
          "AVR (simavr), instructions on Cortex-M4 (QEMU, one per block) and RV32 (QEMU "
          "-icount), median over the frames; est_*: firmware_sim.profiles.estimate with the "
          "target's profile on the device and the same frames (calibrated cost model where the "
          "profile prices the kind; '-': no profile)")
    print_table(["kind", "target", "flash_B", "ram_B", "stack_B", "image_B", "open",
                 "infer", "est_infer_cycles", "est_flash_B", "unit", "vs_firmware_sim",
                 "wall_s"], rows)

    if not emlearn_rows:
        return
    em = emlearn_models(work)
    if em is None:
        print("\n# emlearn: not installed, no peer rows")
        return
    peers, incdir, ver = em
    pair = {"ecoc_tree15_3ary": "forest", "nb_greedy": "nb", "ecoc_linsvm15_bin": "ecoc_linear"}
    prow = []
    for key, variants in peers.items():
        for variant, m, ctype, nf, libs, pacc in variants:
            for target in targets:
                t = TARGETS[target]
                if t.family == "host" or toolchain_missing(target):
                    continue
                dd = work / "emlearn" / f"{variant}_{target}"
                try:
                    if t.family == "arm":
                        f, r, s, _ = build_emlearn(m, ctype, nf, libs, target, t.opt, dd, incdir)
                        c = "-"
                    else:
                        f, r, s, c = emlearn_avr_rv(m, ctype, nf, libs, target, dd, incdir)
                except RuntimeError as exc:
                    prow.append([pair.get(key, key), variant, target, "-", "-", "-", "-",
                                 f"{pacc:.3f}", str(exc).splitlines()[-1][:80]])
                    continue
                prow.append([pair.get(key, key), variant, target, f, r, s, c, f"{pacc:.3f}", ""])
    print(f"\n# emlearn {ver}: the same flags (target default opt), probe calling "
          "peer_predict once; infer_cycles: simavr, a program with the call minus one without")
    print_table(["vs_kind", "emlearn", "target", "flash_B", "ram_B", "stack_B", "infer_cycles",
                 "accuracy", "note"], prow)

if __name__ == "__main__":
    main()
