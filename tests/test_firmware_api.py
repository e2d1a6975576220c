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
from export.firmware import RUNTIME_SOURCES, build_firmware, check_images, toolchain_missing, \
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
    sources = [str(fw_dir / n) for n in RUNTIME_SOURCES if (fw_dir / n).is_file()]
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
