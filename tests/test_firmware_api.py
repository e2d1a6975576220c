"""The C API integrators call (issue 24): class names in the image, ``ec_quantize``,
and the ``main.c`` of ``docs/firmware.md``, compiled and run on the host.

Each test compiles a small C program against a generated firmware folder
(``write_firmware``) with ``gcc -std=c99 -Wall -Wextra -Werror -pedantic``
and compares what it prints with ``firmware_sim``. Outside CI a missing
compiler skips; with ``EDGECODE_CI`` set it fails.
"""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import firmware_sim
from export.firmware import build_firmware, check_images, runtime_sources, toolchain_missing, \
    write_firmware
from firmware_sim.artifact import ContainerError, read_container, write_container

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
CI = bool(os.environ.get("EDGECODE_CI"))
WARN = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"]


def _need_host():
    why = toolchain_missing("host")
    if why:
        if CI:
            pytest.fail(f"CI must have the host toolchain: {why}")
        pytest.skip(f"host toolchain: {why}")


def _compile(fw_dir, program, name="prog", flags=(), sanitize=True):
    """Compile ``program`` (C source text) with the runtime and image of ``fw_dir``."""
    fw_dir = Path(fw_dir)
    src = fw_dir / f"{name}.c"
    src.write_text(program)
    sources = [str(fw_dir / n) for n in runtime_sources() if (fw_dir / n).is_file()]
    exe = fw_dir / name
    cmd = ["gcc", *WARN, "-O1", "-I", str(fw_dir), *flags, *sources,
           str(fw_dir / "model_image.c"), str(src), "-o", str(exe)]
    if sanitize:
        cmd[1:1] = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-g"]
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    return exe


def _run(exe, stdin=""):
    res = subprocess.run([str(exe)], input=stdin, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, (res.returncode, res.stdout[-2000:], res.stderr[-2000:])
    return res.stdout


# ------------------------------------------------------------------ models
def _models():
    """(name, container bytes) of small models of every kind, class labels not 0..k-1."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.tree import DecisionTreeClassifier

    from edgecode.ecoc.classifier import ECOCClassifier
    from edgecode.hashing import SSBC
    from edgecode.naive_bayes import BinaryNaiveBayes
    from export.ecoc import export_ecoc
    from export.naive_bayes import export_protected_nb
    from export.ssbc import export_ssbc

    X, y = _glass()
    Xe, ye = _ecoli()
    rng = np.random.default_rng(0)
    bits = (Xe > np.median(Xe, axis=0)).astype(np.uint8)
    nb = BinaryNaiveBayes().fit(bits, ye == "cp")
    out = {"nb": export_protected_nb(nb, rng.integers(0, 3, bits.shape[1]), X_check=bits,
                                     meta={"classes": ["other", "cp (cytoplasm)"]}).container}
    tree = ECOCClassifier(DecisionTreeClassifier(max_depth=4, random_state=0),
                          code="one_vs_all").fit(X, y)
    out["ecoc_tree"] = export_ecoc(tree, X).container
    lin = ECOCClassifier(LogisticRegression(max_iter=500), code="dense_random", n_columns=8,
                         random_state=0).fit(Xe, ye)
    out["ecoc_linear"] = export_ecoc(lin, Xe).container
    h = SSBC(12, 24, 16, center=True, random_state=0).fit(X)
    out["ssbc"] = export_ssbc(h, X_table=X[::3], y_table=y[::3], knn_k=3).container
    out["ssbc_codes"] = export_ssbc(h).container
    return {k: bytes(v) for k, v in out.items()}


def _table(name):
    import csv
    with open(HERE / "data" / name, newline="") as fh:
        rows = list(csv.reader(fh))
    ci = rows[0].index("class")
    X = np.array([[float(v) for j, v in enumerate(r) if j != ci] for r in rows[1:]])
    return X, np.array([r[ci] for r in rows[1:]])


def _glass():
    X, y = _table("glass.csv")
    return X, y.astype(np.int64)             # labels 1, 2, 3, 5, 6, 7


def _ecoli():
    return _table("ecoli.csv")               # string labels


_CACHE = {}


def _model(name):
    if not _CACHE:
        _CACHE.update(_models())
    return _CACHE[name]


# ------------------------------------------------------------------ class names
_NAMES_C = r"""
#include <stdio.h>
#include "edgecode_rt.h"
extern const uint8_t ec_model_image[];
extern const uint32_t ec_model_image_size;
int main(void)
{
    ec_model model;
    uint32_t i, n;
    ec_status s = ec_model_open(ec_model_image, ec_model_image_size, &model);
    if (s != EC_OK) { printf("error %d %s\n", (int)s, ec_status_name(s)); return 2; }
    n = ec_class_count(&model);
    printf("%lu\n", (unsigned long)n);
    for (i = 0; i < n; i++) printf("%s\n", ec_class_name(&model, (int32_t)i));
    printf("%s %s\n", ec_class_name(&model, -1) == NULL ? "null" : "name",
           ec_class_name(&model, (int32_t)n) == NULL ? "null" : "name");
    return 0;
}
"""


@pytest.mark.parametrize("name", ["nb", "ecoc_tree", "ecoc_linear", "ssbc", "ssbc_codes"])
def test_class_names_are_in_the_image_and_readable_in_c(name, tmp_path):
    """Class names used to live in the JSON metadata only; the container writer now
    stores them as the reserved array __classes__ for every kind."""
    _need_host()
    raw = _model(name)
    c = read_container(raw)
    dev = firmware_sim.load(raw)
    expected = None if "classes" not in c.meta else [str(v) for v in c.meta["classes"]]
    assert c.class_names == (None if expected is None else tuple(expected))
    if name != "ssbc_codes":
        assert len(c.class_names) == (2 if name == "nb" else dev.n_classes)
    write_firmware(raw, tmp_path, "host")
    lines = _run(_compile(tmp_path, _NAMES_C)).splitlines()
    assert lines == [str(len(expected or []))] + (expected or []) + ["null null"]


def _names_entry(raw):
    from container_fuzz_driver import table
    (entry,) = [(dt, shape, off) for n, dt, shape, off in table(raw) if n == "__classes__"]
    return entry


def _patched(raw, at, value):
    from container_fuzz_driver import restamp
    dt, shape, off = _names_entry(raw)
    buf = bytearray(raw)
    pos = off + (at if at >= 0 else shape[0] + at)
    buf[pos:pos + len(value)] = value
    return restamp(buf)


def test_both_loaders_refuse_malformed_class_names_by_the_same_rule(tmp_path):
    """docs/container_format.md, rule 13 (the array) and the kinds' class-count rule."""
    from test_firmware import _python_accepts

    _need_host()
    nb = read_container(_model("nb"))
    arrays = dict(nb.arrays)
    good = write_container(None, "protected_nb", arrays, {"classes": ["démocrate", "rép"]})
    ssbc = read_container(_model("ssbc_codes"))
    cases = {
        "utf-8 names": (good, True),
        "no final NUL": (_patched(good, -1, b"x"), False),
        "invalid byte": (_patched(good, 0, b"\xff"), False),
        "overlong": (_patched(good, 0, b"\xc0\x80"), False),
        "surrogate": (_patched(good, 0, b"\xed\xa0\x80"), False),
        "above U+10FFFF": (_patched(good, 0, b"\xf4\x90\x80\x80"), False),
        "truncated sequence": (_patched(good, 2, b"x"), False),       # C3 then x
        "an extra NUL": (_patched(good, 0, b"\x00"), False),
        "three names for two classes": (write_container(None, "protected_nb", arrays,
                                                        {"classes": ["a", "b", "c"]}), False),
        "a letter changed (metadata aside)": (_patched(good, 0, b"D"), True),
        "codes-only SSBC: any number": (write_container(None, "ssbc", dict(ssbc.arrays),
                                                        {"classes": ["x", "y", "z"]}), True),
    }
    write_firmware(good, tmp_path, "host", kinds="all")
    b = build_firmware(tmp_path, "host", opt="-O1", sanitize=True, probe=False)
    verdicts = check_images(b.runner, [raw for raw, _ in cases.values()])
    for (label, (raw, ok)), (c_ok, msg) in zip(cases.items(), verdicts):
        assert _python_accepts(raw) == ok, label
        assert c_ok == ok, (label, msg)
        if not ok:
            counted = label in ("an extra NUL", "three names for two classes")
            assert msg == ("error -11 rule" if counted else "error -8 table"), (label, msg)
            if not counted:                   # the array itself (read_container's rule 13)
                with pytest.raises(ContainerError, match="__classes__"):
                    read_container(raw)
    with pytest.raises(ContainerError, match="array '__classes__' must hold 2 class names"):
        firmware_sim.load(_patched(good, 0, b"\x00"))
    with pytest.raises(ContainerError, match="metadata key 'classes' must name the classes"):
        firmware_sim.load(_patched(good, 0, b"D"))
    with pytest.raises(ContainerError, match="holds a NUL character"):
        write_container(None, "protected_nb", arrays, {"classes": ["a\0b", "c"]})


# ------------------------------------------------------------------ ec_quantize
_QUANTIZE_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "edgecode_rt.h"
#include "model_config.h"
extern const uint8_t ec_model_image[];
extern const uint32_t ec_model_image_size;
/* one example per line: "i v..." (int32), "f h..." / "d h..." (float / double as
   hex bit patterns); prints "ok q..." (the frame) or "error <code>" */
int main(void)
{
    static char line[4096];
    static int32_t xi[EC_INPUT_WIDTH];
    static float xf[EC_INPUT_WIDTH];
    static double xd[EC_INPUT_WIDTH];
    static int16_t frame[EC_FRAME_WIDTH];
    ec_model model;
    FILE *in = stdin;
    ec_status s = ec_model_open(ec_model_image, ec_model_image_size, &model);
    if (s != EC_OK || ec_input_width(&model) != EC_INPUT_WIDTH) return 2;
#ifdef INPUT_FILE
    in = fopen(INPUT_FILE, "r");      /* under QEMU: semihosting, no stdin */
    if (in == NULL) return 3;
#endif
    while (fgets(line, (int)sizeof line, in) != NULL) {
        char *p = line + 1, *end;
        int j;
        if (line[0] == '\n') continue;
        for (j = 0; j < EC_INPUT_WIDTH; j++) {
            if (line[0] == 'i') xi[j] = (int32_t)strtol(p, &end, 10);
            else if (line[0] == 'f') {
                uint32_t u = (uint32_t)strtoul(p, &end, 16);
                memcpy(&xf[j], &u, 4);
            } else {
                uint64_t u = (uint64_t)strtoull(p, &end, 16);
                memcpy(&xd[j], &u, 8);
            }
            p = end;
        }
        memset(frame, 0x55, sizeof frame);
        s = line[0] == 'i' ? ec_quantize(&model, xi, frame)
          : line[0] == 'f' ? ec_quantize_float(&model, xf, frame)
          : ec_quantize_double(&model, xd, frame);
        if (s != EC_OK) { printf("error %d\n", (int)s); continue; }
        printf("ok");
        for (j = 0; j < EC_FRAME_WIDTH; j++) printf(" %d", (int)frame[j]);
        printf("\n");
    }
    return 0;
}
"""


def _line(row):
    row = np.asarray(row)
    if row.dtype == np.float32:
        return "f " + " ".join(f"{v:x}" for v in row.view(np.uint32))
    if row.dtype == np.float64:
        return "d " + " ".join(f"{v:x}" for v in row.view(np.uint64))
    return "i " + " ".join(str(int(v)) for v in row.astype(np.int32))


def _expected(dev, row):
    """What device.encode gives for this one row (int32 rows as the same integers)."""
    row = np.asarray(row)
    try:
        return "ok " + " ".join(str(int(v)) for v in dev.encode(row[None, :])[0])
    except ValueError:
        return "error -14"


def _run_on(target, fw_dir, program, text, flags=()):
    """Compile ``program`` for a QEMU Cortex-M target and run it on ``text``
    (read from ``frames.txt`` through semihosting)."""
    from export.firmware import TARGETS

    t = TARGETS[target]
    d = Path(fw_dir)
    (d / "prog.c").write_text(program)
    sources = [str(d / n) for n in runtime_sources() if (d / n).is_file()]
    cmd = [t.cc, *t.cpu_flags, *WARN, "-O2", "-I", str(d), "--specs=rdimon.specs",
           "-DINPUT_FILE=\"frames.txt\"", *flags, "-T", str(d / "link.ld"), "-nostartfiles",
           *sources, str(d / "model_image.c"), str(d / "startup.c"), str(d / "prog.c"),
           "-o", str(d / "prog.elf")]
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    (d / "frames.txt").write_text(text)
    system, machine, cpu = t.qemu
    res = subprocess.run([system, "-M", machine, "-cpu", cpu, "-nographic",
                          "-monitor", "none", "-semihosting-config", "enable=on,target=native",
                          "-kernel", "prog.elf"], cwd=d, capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, (res.returncode, res.stdout[-2000:], res.stderr[-2000:])
    return res.stdout


def _check_quantize(raw, rows, tmp_path, target="host"):
    dev = firmware_sim.load(raw)
    write_firmware(raw, tmp_path, target)
    text = "".join(_line(r) + "\n" for r in rows)
    if target == "host":
        exe = _compile(tmp_path, _QUANTIZE_C, "quantize", flags=["-DEC_WITH_FLOAT=1"])
        got = _run(exe, text).splitlines()
    else:
        got = _run_on(target, tmp_path, _QUANTIZE_C, text, ["-DEC_WITH_FLOAT=1"]).splitlines()
    want = [_expected(dev, r) for r in rows]
    assert len(got) == len(want)
    bad = [i for i, (g, w) in enumerate(zip(got, want)) if g != w]
    assert not bad, (f"{len(bad)} of {len(rows)} rows differ; first {bad[0]}: "
                     f"{_line(rows[bad[0]])}\n C {got[bad[0]]}\n py {want[bad[0]]}")
    return want


def _real_rows(X, rng):
    """The dataset's rows as float64, float32 and int32 (scaled), plus some noise."""
    X = np.asarray(X, np.float64)
    noisy = X + rng.normal(0, X.std(axis=0) + 1e-9, X.shape)
    ints = np.rint(np.vstack([X, noisy]) * rng.choice([1, 10, 1000], X.shape[1]))
    return (list(X) + list(noisy) + list(X.astype(np.float32)) + list(noisy.astype(np.float32))
            + list(np.clip(ints, -2**31, 2**31 - 1).astype(np.int32)))


@pytest.mark.parametrize("name", ["ecoc_tree", "ecoc_linear", "ssbc"])
def test_ec_quantize_equals_device_encode_on_real_rows(name, tmp_path):
    _need_host()
    X = (_glass() if name != "ecoc_linear" else _ecoli())[0]
    want = _check_quantize(_model(name), _real_rows(X, np.random.default_rng(1)), tmp_path)
    assert sum(w.startswith("ok") for w in want) == len(want)


def _specials(d, rng):
    """Rows of special values for int32, float32 and float64 inputs."""
    f32 = np.array([0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5, 32766.5, 32767.5, -32767.5, 1e-45,
                    -1e-45, 1.17549435e-38, 3.4028235e38, -3.4028235e38, 16777217.0,
                    np.float32(2**-20), 7e-39], np.float32)
    f64 = np.array([0.0, -0.0, 0.5, 2.5, -3.5, 1e300, -1e300, 5e-324, 2.2250738585072014e-308,
                    1.7976931348623157e308, -1.7976931348623157e308, 3.5e38, 3.4028235e38,
                    3.40282356e38, 0.1, 1 / 3, 2**53 + 1.0, 32767.49999999999,
                    0.5000000000000001, 2**-30 * 0.5, 2**24 + 1.0, 2**25 + 2.0])
    i32 = np.array([0, 1, -1, 2, 3, 4, 5, 12, -12, 32767, -32768, 65535, 2**24 + 1, 2**25 + 1,
                    2**25 + 2, 3 * 2**29, 5 * 2**29, 2**31 - 1, -2**31, -2**31 + 1, 2**30 + 1],
                   np.int64)
    rows = []
    for pool, dt in ((f32, np.float32), (f64, np.float64), (i32, np.int32)):
        for _ in range(40):
            rows.append(rng.choice(pool, d).astype(dt))
        for v in pool:                                    # every value in every column
            rows.append(np.full(d, v, dt))
    for bad, dt in ((np.nan, np.float32), (np.inf, np.float64), (-np.inf, np.float32)):
        row = rng.choice(f64, d).astype(dt)
        row[rng.integers(d)] = bad
        rows.append(row)
    return rows


def test_ec_quantize_rounds_and_clips_as_device_encode_on_any_quantizer(tmp_path):
    """ECOC: centers off the 2^-e grid (the double subtraction's rounding
    matters), shifts -128..127, subnormal and huge centers; halves (ties to
    even) and the int16 clip; NaN and infinities refused as encode does."""
    _need_host()
    c = read_container(_model("ecoc_linear"))
    d = c.arrays["in_center"].shape[0]
    rng = np.random.default_rng(5)
    centers = np.array([0.5, 1 / 3, -2.75, 1e300, 5e-324, -1e-310, 2**52 + 0.5, 0.1, 1e15 + 0.5,
                        0.0, -0.0, 32767.5, 2**-1074 * 3, 1.7976931348623157e308])
    shifts = np.array([0, -1, 1, -2, 14, -128, 127, 3, -30, 30, 52, -52, 1, 0], np.int8)
    # centers a few dozen binary places below the inputs: x - c rounds back to x
    # or not, which moves a tie (3.5 - 2^-45 -> 3, not 4)
    tiny = np.array([2.0**-45, -2.0**-50, 1e-13, 2.0**-52, -2.0**-54, 3 * 2.0**-53, 1e-15])
    for trial in range(6):
        pick = rng.integers(0, len(centers), d)
        arrays = {**c.arrays, "in_center": centers[pick] if trial else centers[:d],
                  "in_shift": shifts[pick] if trial else shifts[:d]}
        if trial >= 4:
            arrays["in_center"] = tiny[rng.integers(0, len(tiny), d)]
            arrays["in_shift"] = rng.choice(np.array([0, 1, -1, 2], np.int8), d)
        raw = write_container(None, "ecoc", arrays, c.meta)
        want = _check_quantize(raw, _specials(d, rng), tmp_path / str(trial))
        assert {w.split()[0] for w in want} == {"ok", "error"}
        if trial == 0:       # halves met, clips met
            frames = np.array([[int(v) for v in w.split()[1:]] for w in want if w[0] == "o"])
            assert (frames == 32767).any() and (frames == -32767).any()


@pytest.mark.parametrize("shift", [-30, -26, -3, 0, 14, 30])
def test_ec_quantize_ssbc_rounds_to_float32_first(shift, tmp_path):
    """SSBC quantizes float32(x) * 2^s: an int32 or a double is rounded to float32
    first (2^25 + 1 becomes 2^25), a double beyond FLT_MAX is refused."""
    from firmware_sim.ssbc import make_ssbc_arrays

    _need_host()
    rng = np.random.default_rng(7)
    d = 5
    anchors = rng.normal(0, 1, (6, d)) * 2.0**(-min(shift, 12))
    sigma = float(d) * 4.0**(-min(shift, 12))
    arrays = make_ssbc_arrays(anchors, sigma, rng.normal(0, 1, (6, 4)), np.zeros(4),
                              input_shift=shift)
    raw = write_container(None, "ssbc", arrays)
    want = _check_quantize(raw, _specials(d, rng), tmp_path)
    assert "error -14" in want


def test_ec_quantize_naive_bayes_repeats_0_1_features(tmp_path):
    _need_host()
    dev = firmware_sim.load(_model("nb"))
    n = dev.n_features
    rng = np.random.default_rng(3)
    rows = [rng.integers(0, 2, n).astype(dt) for dt in (np.int32, np.float32, np.float64)
            for _ in range(20)]
    rows += [np.where(rng.random(n) < 0.5, -0.0, 1.0).astype(np.float64)]
    for bad in (2, -1, 0.5, np.nan):
        row = rng.integers(0, 2, n).astype(np.float64)
        row[rng.integers(n)] = bad
        rows.append(row if bad in (0.5, np.nan) else row.astype(np.int32))
    want = _check_quantize(_model("nb"), rows, tmp_path)
    assert want[-4:] == ["error -14"] * 4 and all(w.startswith("ok") for w in want[:-4])


@pytest.mark.parametrize("target", ["cortex-m3", "cortex-m4"])
def test_ec_quantize_on_cortex_m_under_qemu(target, tmp_path):
    """The same integers on a 32-bit core (64-bit arithmetic through libgcc)."""
    why = toolchain_missing(target, run=True)
    if why:
        if CI:
            pytest.fail(f"CI must have the {target} toolchain: {why}")
        pytest.skip(f"{target} toolchain: {why}")
    rng = np.random.default_rng(11)
    c = read_container(_model("ecoc_linear"))
    d = c.arrays["in_center"].shape[0]
    arrays = {**c.arrays, "in_center": np.array([2.0**-45, 0.5, 1 / 3, -2.75, 1e300, 5e-324,
                                                 1e15 + 0.5][:d]),
              "in_shift": np.array([0, -1, 1, 14, -128, 127, 2][:d], np.int8)}
    raw = write_container(None, "ecoc", arrays, c.meta)
    rows = _specials(d, rng)[::2] + _real_rows(_ecoli()[0][:40], rng)
    _check_quantize(raw, rows, tmp_path / "ecoc", target)
    X = _glass()[0][:40]
    _check_quantize(_model("ssbc"), _specials(X.shape[1], rng)[::2] + _real_rows(X, rng),
                    tmp_path / "ssbc", target)


# ------------------------------------------------------------------ docs/firmware.md
DOC = HERE.parent / "docs" / "firmware.md"


def _doc_blocks():
    """The user's main.c of docs/firmware.md ("The C API") and the shell block after it."""
    import re
    text = DOC.read_text()
    blocks = re.findall(r"```(\w+)\n(.*?)```", text, re.S)
    i = next(k for k, (lang, body) in enumerate(blocks)
             if lang == "c" and body.startswith("/* main.c"))
    assert blocks[i + 1][0] == "bash"
    return blocks[i][1], [ln for ln in blocks[i + 1][1].splitlines() if ln.strip()]


def _names_of(dev, frames):
    names = dev.container.class_names
    labels = dev.infer(frames).labels
    if labels is None:
        return ["(unnamed)"] * len(frames)
    return [names[int(k)] if names is not None else "(unnamed)" for k in labels]


def test_the_main_c_of_the_docs_builds_and_names_the_classes(tmp_path, monkeypatch):
    """docs/firmware.md's own main.c and commands, run as written (the `edgecode`
    lines through export.cli.main), then on many rows of every kind against
    firmware_sim."""
    import shlex
    import shutil

    from export.cli import main

    _need_host()
    program, commands = _doc_blocks()
    shutil.copyfile(HERE / "data" / "glass.csv", tmp_path / "glass.csv")
    (tmp_path / "main.c").write_text(program)
    monkeypatch.chdir(tmp_path)
    for cmd in commands:
        if cmd.startswith("edgecode "):
            assert main(shlex.split(cmd)[1:]) == 0, cmd
        else:
            res = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True)
            assert res.returncode == 0, (cmd, res.stdout, res.stderr)
            last = res.stdout
    dev = firmware_sim.load("glass.edgc")
    row = np.array([[1.51761, 13.89, 3.6, 1.36, 72.73, 0.48, 7.83, 0.0, 0.0]])
    assert last == _names_of(dev, dev.encode(row))[0] + "\n"
    gcc = next(c for c in commands if c.startswith("gcc "))
    X, _ = _glass()
    Xe, _ = _ecoli()
    bits = (Xe > np.median(Xe, axis=0)).astype(np.uint8)
    for name, rows in (("glass", X), ("ecoc_tree", X), ("ecoc_linear", Xe), ("ssbc", X),
                       ("ssbc_codes", X), ("nb", bits)):
        raw = Path("glass.edgc").read_bytes() if name == "glass" else _model(name)
        dev = firmware_sim.load(raw)
        shutil.rmtree("fw", ignore_errors=True)
        write_firmware(raw, "fw", "host")
        for flags in ("", " -Werror -fsanitize=address,undefined -fno-sanitize-recover=all"):
            res = subprocess.run(["bash", "-c", gcc + flags], capture_output=True, text=True)
            assert res.returncode == 0, (name, res.stderr)
            text = "".join(" ".join(repr(float(v)) for v in r) + "\n" for r in rows)
            out = _run(tmp_path / "classify", text).splitlines()
            assert out == _names_of(dev, dev.encode(rows)), name
    assert _run(tmp_path / "classify", "0 1 nan 1\n").startswith("error: input")


def test_a_kind_whose_c_files_the_runtime_lacks_is_left_out_and_refused_by_name(tmp_path):
    """The firmware writer asks the registered device classes (issue 25): a kind
    registered elsewhere whose ``c_sources`` ``firmware_sim/c`` does not hold is
    not among every kind's sources, and its images are refused by name."""
    from export.firmware import runtime_sources
    from firmware_sim.device import Device, register_kind

    class _NoCFiles(Device):
        kind, kind_code = "toy_no_c_files", 243
        c_sources, c_switch = ("ec_toy_no_c_files.c",), "EC_WITH_TOY_NO_C_FILES"

        def __init__(self, container):
            self.check_container(container)
            self.container = container

    register_kind(_NoCFiles)
    every = runtime_sources()
    assert "ec_toy_no_c_files.c" not in every and {"ec_nb.c", "ec_forest.c"} <= set(every)
    raw = write_container(None, "toy_no_c_files", {"x": np.zeros(1, np.uint8)})
    with pytest.raises(ValueError, match="names \\['ec_toy_no_c_files.c'\\], which"):
        write_firmware(raw, tmp_path / "fw", "host")
    assert not (tmp_path / "fw").exists()
