"""``edgecode firmware --trees inline`` (issue 26 item 2): the forest as generated C
code, bit-exact with firmware_sim (labels and decision integers) on the host
(-O2, and -O0 under sanitizers), on Cortex-M4 under QEMU and on the ATmega328P
under simavr; the 8-byte stamp that stands for the image; decision NULL (the
label alone); the refusals. Firmware tests fail (not skip) with EDGECODE_CI
set when a tool is missing (``need_toolchain``).
"""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))

from test_firmware import _assert_parity, _frames  # noqa: E402
from toolchains import need_toolchain  # noqa: E402
from test_forest_firmware import _model  # noqa: E402

import firmware_sim  # noqa: E402
from export.firmware import (build_firmware, check_images, run_firmware,  # noqa: E402
                             run_firmware_measured, write_firmware)
from firmware_sim.c_inline import INLINE_SOURCE, stamp, tree_function  # noqa: E402


def _walk(feature, threshold, left, right, root, L, q):
    """Slow reference of one tree (the format's rules, one node at a time)."""
    if root < L:
        return root
    node = root - L
    while True:
        r = left[node] if q[feature[node]] <= threshold[node] else right[node]
        if r < L:
            return r
        node = node + 1 + (r - L)


def test_generated_trees_equal_the_walk_on_random_forests(tmp_path):
    """tree_function's C, compiled on the host, against the slow walk: random
    preorder trees (leaf or node children at random, features and thresholds at
    random) on random and extreme frames."""
    need_toolchain("host")
    rng = np.random.default_rng(3)
    L, d = 7, 5
    feature, threshold, left, right, roots, src = [], [], [], [], [], []

    def grow(depth):                        # preorder; returns the node's index
        i = len(feature)
        feature.append(int(rng.integers(d)))
        threshold.append(int(rng.integers(-32768, 32768)))
        left.append(0)
        right.append(0)
        if depth < 6 and rng.random() < 0.6:
            grow(depth + 1)
            left[i] = L                     # the next node
        else:
            left[i] = int(rng.integers(L))
        if depth < 6 and rng.random() < 0.6:
            j = len(feature)
            grow(depth + 1)
            right[i] = L + (j - i - 1)
        else:
            right[i] = int(rng.integers(L))
        return i

    for k in range(12):
        if k % 5 == 4:
            roots.append(int(rng.integers(L)))          # a one-leaf tree
        else:
            roots.append(L + grow(0))
    arrs = [np.array(v) for v in (feature, threshold, left, right)]
    for k, r in enumerate(roots):
        src.append(tree_function(f"t{k}", *arrs, r, L, "uint_fast8_t"))
    frames = rng.integers(-32768, 32768, size=(300, d))
    frames[:20] = rng.choice([-32768, -32767, -1, 0, 1, 32767], size=(20, d))
    calls = "".join(f'        printf(" %u", (unsigned)t{k}(q));\n' for k in range(len(roots)))
    prog = ("#include <stdint.h>\n#include <stdio.h>\n#define EC_INLINE_TREE\n" + "".join(src)
            + "int main(void)\n{\n    int16_t q[%d];\n    int v, i;\n" % d
            + "    for (;;) {\n        for (i = 0; i < %d; i++) {\n" % d
            + "            if (scanf(\"%d\", &v) != 1) return 0;\n            q[i] = (int16_t)v;\n"
            + "        }\n" + calls + "        printf(\"\\n\");\n    }\n}\n")
    (tmp_path / "t.c").write_text(prog)
    subprocess.run(["gcc", "-std=c99", "-O1", "-Wall", "-Werror", "t.c", "-o", "t"],
                   cwd=tmp_path, check=True)
    out = subprocess.run([str(tmp_path / "t")], input="\n".join(" ".join(map(str, r))
                                                                for r in frames),
                         capture_output=True, text=True, check=True).stdout.split("\n")
    for row, line in zip(frames, out):
        want = [_walk(*arrs, r, L, row) for r in roots]
        assert list(map(int, line.split())) == want


@pytest.mark.parametrize("trees", ["inline", "arrays"])
@pytest.mark.parametrize("name", ["rf_class", "rf_proba", "extra_glass_u8", "tree_chain",
                                  "one_class", "pipe_wide"])
def test_inline_host_equals_firmware_sim(name, trees, tmp_path):
    need_toolchain("host")
    dev, X = _model(name)
    info = write_firmware(dev.container, tmp_path, "host", trees=trees)
    assert info["trees"] == trees and INLINE_SOURCE in info["files"]
    assert not (tmp_path / "ec_model.c").exists() and not (tmp_path / "ec_forest.c").exists()
    frames = _frames(dev, X[:120], np.random.default_rng(len(name)), n_random=30)
    for opt, sanitize in (("-O2", False), ("-O0", True)):
        build_firmware(tmp_path, "host", opt=opt, sanitize=sanitize, probe=False)
        labels, dec = run_firmware(tmp_path, frames, "host")
        _assert_parity(dev, frames, labels, dec)
    # back to the table form: the generated file goes, the runtime comes back
    write_firmware(dev.container, tmp_path, "host")
    assert not (tmp_path / INLINE_SOURCE).exists() and (tmp_path / "ec_forest.c").exists()


@pytest.mark.parametrize("name, trees", [("ecoc_tree_3ary", "inline"),
                                         ("ecoc_tree_ternary", "arrays"),
                                         ("ecoc_tree_wide", "inline")])
def test_ecoc_trees_inline_host_equals_firmware_sim(name, trees, tmp_path):
    """ECOC tree learners share the generators (the N symbols are the leaves), then
    the doubled Hamming distances and the first nearest class."""
    from test_firmware import _model as _fw_model

    need_toolchain("host")
    dev, X = _fw_model(name)
    write_firmware(dev.container, tmp_path, "host", trees=trees)
    frames = _frames(dev, X[:100], np.random.default_rng(5), n_random=30)
    for opt, sanitize in (("-O2", False), ("-O0", True)):
        build_firmware(tmp_path, "host", opt=opt, sanitize=sanitize, probe=False)
        _assert_parity(dev, frames, *run_firmware(tmp_path, frames, "host"))


def test_ecoc_trees_inline_on_the_atmega328p(tmp_path):
    from test_firmware import _model as _fw_model

    need_toolchain("atmega328p", run=True)
    dev, X = _fw_model("ecoc_tree_3ary")
    write_firmware(dev.container, tmp_path, "atmega328p", trees="inline")
    b = build_firmware(tmp_path, "atmega328p")
    write_firmware(dev.container, tmp_path / "table", "atmega328p")
    assert b.flash_bytes < build_firmware(tmp_path / "table", "atmega328p").flash_bytes
    frames = _frames(dev, X[:10], np.random.default_rng(6), n_random=4)
    run = run_firmware_measured(tmp_path, frames, "atmega328p")
    _assert_parity(dev, frames, run.labels, run.decisions)


def test_the_stamp_names_the_model(tmp_path):
    """ec_model_open of an inline build accepts its own 8-byte stamp only: another
    model's stamp and any container are refused (EC_ERR_MAGIC), a short buffer is
    EC_ERR_TRUNCATED."""
    need_toolchain("host")
    dev, _ = _model("rf_class")
    other, _ = _model("rf_proba")
    write_firmware(dev.container, tmp_path, "host", trees="inline")
    b = build_firmware(tmp_path, "host", probe=False)
    own = stamp(dev.container.tobytes())
    assert own[:4] == b"ECIL" and len(own) == 8
    got = check_images(b.runner, [own, stamp(other.container.tobytes()),
                                  dev.container.tobytes(), own[:7]])
    assert got == [(True, "ok"), (False, "error -4 magic"), (False, "error -4 magic"),
                   (False, "error -3 truncated")]


_LABEL_ONLY = r"""
#include <stdio.h>
#include "edgecode_rt.h"
#include "model_config.h"
#include "model_image.h"
int main(void)
{
    static int64_t decision[EC_DECISION_LEN];
    int16_t frame[EC_FRAME_WIDTH];
    ec_model model;
    int32_t a = -1, b = -2;
    int v;
    uint32_t i;
    if (ec_model_open(ec_model_image, ec_model_image_size, &model) != EC_OK) return 1;
    if (ec_infer(&model, frame, &a, decision, NULL, 0) != EC_ERR_ARG) {}
    for (;;) {
        for (i = 0; i < EC_FRAME_WIDTH; i++) {
            if (scanf("%d", &v) != 1) return 0;
            frame[i] = (int16_t)v;
        }
        if (ec_infer(&model, frame, &a, decision, NULL, 0) != EC_OK) return 2;
        if (ec_infer(&model, frame, &b, NULL, NULL, 0) != EC_OK) return 3;
        printf("%ld %ld\n", (long)a, (long)b);
    }
}
"""


def test_decision_null_gives_the_label_alone(tmp_path):
    need_toolchain("host")
    for name, trees in (("rf_class", "inline"), ("extra_glass_u8", "inline"),
                        ("rf_proba", "arrays")):
        dev, X = _model(name)
        d = tmp_path / name
        write_firmware(dev.container, d, "host", trees=trees)
        (d / "label_only.c").write_text(_LABEL_ONLY)
        subprocess.run(["gcc", "-std=c99", "-O2", "-Wall", "-Werror",
                        "-fsanitize=address,undefined", "-include", "model_config.h", "-I", ".", "label_only.c", INLINE_SOURCE,
                        "ec_container.c", "ec_quantize.c", "model_image.c", "-o", "lo"],
                       cwd=d, check=True)
        frames = _frames(dev, X[:60], np.random.default_rng(2), n_random=20)
        text = "".join(" ".join(map(str, r)) + "\n" for r in frames)
        res = subprocess.run([str(d / "lo")], input=text, capture_output=True, text=True)
        assert res.returncode == 0, res.stderr
        got = np.array([line.split() for line in res.stdout.split("\n") if line], np.int64)
        want = dev.infer(np.asarray(frames, np.int16)).labels
        assert (got[:, 0] == want).all() and (got[:, 1] == want).all()


@pytest.mark.parametrize("target, name, trees", [("cortex-m4", "rf_class", "inline"),
                                                 ("cortex-m4", "extra_glass_u8", "arrays"),
                                                 ("atmega328p", "rf_class", "inline"),
                                                 ("atmega328p", "extra_glass_u8", "arrays")])
def test_inline_on_the_mcus_equals_firmware_sim(target, name, trees, tmp_path):
    need_toolchain(target, run=True)
    dev, X = _model(name)
    write_firmware(dev.container, tmp_path, target, trees=trees)
    b = build_firmware(tmp_path, target)
    table = tmp_path / "table"
    write_firmware(dev.container, table, target)
    bt = build_firmware(table, target)
    assert b.flash_bytes < bt.flash_bytes, (b.flash_bytes, bt.flash_bytes)
    frames = _frames(dev, X[:40], np.random.default_rng(7), n_random=12)
    run = run_firmware_measured(tmp_path, frames, target)
    _assert_parity(dev, frames, run.labels, run.decisions)
    if run.unit == "cycles":                 # exact, and fewer than the table walk's
        rt = run_firmware_measured(table, frames, target)
        assert (run.infer_counts < rt.infer_counts).all()


def test_refusals():
    from firmware_sim.naive_bayes import ProtectedNBDevice

    dev, _ = _model("rf_class")
    nb = ProtectedNBDevice.from_arrays([2], -1, [1])
    with pytest.raises(ValueError, match="no inline form"):
        write_firmware(nb.container, "/nonexistent/never", "host", trees="inline")
    from test_firmware import _model as _fw_model
    linear, _ = _fw_model("ecoc_linear_binary")
    with pytest.raises(ValueError, match="no inline form"):
        write_firmware(linear.container, "/nonexistent/never", "host", trees="arrays")
    with pytest.raises(ValueError, match="kinds must be"):
        write_firmware(dev.container, "/nonexistent/never", "host", trees="inline", kinds="all")
    with pytest.raises(ValueError, match="trees must be one of"):
        write_firmware(dev.container, "/nonexistent/never", "host", trees="code")
    assert firmware_sim.load(dev.container).c_inline(b"ECIL\0\0\0\0").count("ec_tree_") > 15


def test_trees_inline_from_the_command_line(tmp_path, capsys):
    from export.cli import main

    need_toolchain("host")
    dev, _ = _model("rf_class")
    art = tmp_path / "f.edgc"
    art.write_bytes(dev.container.tobytes())
    assert main(["firmware", str(art), "--out", str(tmp_path / "fw"), "--trees", "inline",
                 "--check", "--data", "digits", "--split", "all", "--max-points", "40",
                 "--random-frames", "10"]) == 0
    out = capsys.readouterr().out
    assert "trees inline: no image" in out and (tmp_path / "fw" / INLINE_SOURCE).is_file()
    nb = tmp_path / "nb.edgc"
    from firmware_sim.naive_bayes import ProtectedNBDevice
    nb.write_bytes(ProtectedNBDevice.from_arrays([2], -1, [1]).container.tobytes())
    assert main(["firmware", str(nb), "--out", str(tmp_path / "nbfw"), "--trees",
                 "inline"]) != 0
    assert "no inline form" in capsys.readouterr().err
