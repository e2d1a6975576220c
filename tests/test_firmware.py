"""The C99 runtime (firmware_sim/c) against firmware_sim, frame for frame (issue 12).

Real toolchains: ``gcc`` on the host (``-std=c99 -Wall -Wextra -Werror
-pedantic`` at -O2, and -O0 under ``-fsanitize=address,undefined``),
``arm-none-eabi-gcc`` + ``qemu-system-arm`` for Cortex-M4 (mps2-an386) and
Cortex-M3 (mps2-an385). Outside CI a missing tool skips with the reason; in
CI (``EDGECODE_CI=1``, set by ``.ci/run``, which installs them) it fails.

Parity means labels **and** decision integers equal ``device.infer``'s on
clean frames (``device.encode(X)`` of real rows), channel-noised frames,
random frames and extreme int16 values, for the naive Bayes greedy plan,
ECOC (linear, tree, ternary, 3-ary, > 64 columns) and SSBC with and without
a table. The container fuzz corpus of ``tests/container_fuzz_driver.py``
goes through the C loader (``runner --image F --check``): it accepts and
refuses exactly what ``firmware_sim.load`` does, metadata aside (the C
runtime does not parse the JSON metadata; the device never reads it).
"""

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_digits, load_iris
from sklearn.linear_model import LogisticRegression
from sklearn.svm import LinearSVC
from sklearn.tree import DecisionTreeClassifier

import firmware_sim
from edgecode import datasets
from edgecode.ecoc import make_code
from edgecode.ecoc.classifier import ECOCClassifier
from edgecode.hashing import SSBC
from edgecode.naive_bayes import BinaryNaiveBayes
from edgecode.redundancy import allocate_greedy
from export.ecoc import export_ecoc
from export.firmware import build_firmware, check_images, decision_integers, run_firmware, \
    write_firmware
from export.naive_bayes import export_protected_nb
from export.ssbc import export_ssbc
from toolchains import need_toolchain


# ---------------------------------------------------------------------- models
def _nb():
    d = datasets.load("house_votes")
    nb = BinaryNaiveBayes().fit(d.X, d.y)
    plan = allocate_greedy(nb.decision_function(d.X), nb.flip_deltas(d.X), 0.2, 32)
    dev = export_protected_nb(nb, plan.repetitions).device
    return dev, d.X


def _digits():
    X, y = load_digits(return_X_y=True)
    return X / 16.0, y


def _ecoc(learner, code):
    X, y = _digits()
    clf = ECOCClassifier(learner, code=code).fit(X[:500], y[:500])
    return export_ecoc(clf, X[:500]).device, X[500:700]


def _ssbc(table):
    X, y = load_digits(return_X_y=True)
    h = SSBC(12, 32, 16, center=True, random_state=0).fit(X[:300])
    kw = {"X_table": X[:300], "y_table": y[:300], "knn_k": 3} if table else {}
    return firmware_sim.load(export_ssbc(h, **kw).container), X[1200:1400]


MODELS = {
    "nb_greedy": _nb,
    "ecoc_linear_binary": lambda: _ecoc(LogisticRegression(max_iter=300),
                                        np.random.default_rng(1).integers(0, 2, (10, 12))),
    "ecoc_svm_3ary": lambda: _ecoc(LinearSVC(), np.random.default_rng(2).integers(0, 3, (10, 8))),
    "ecoc_tree_ternary": lambda: _ecoc(DecisionTreeClassifier(max_depth=5, random_state=0),
                                       make_code("one_vs_one", 10)),
    "ecoc_tree_3ary": lambda: _ecoc(DecisionTreeClassifier(max_depth=4, random_state=0),
                                    np.random.default_rng(3).integers(0, 3, (10, 9))),
    "ecoc_tree_wide": lambda: _ecoc(DecisionTreeClassifier(max_depth=3, random_state=0),
                                    np.random.default_rng(4).integers(0, 2, (10, 70))),
    "ssbc_table": lambda: _ssbc(True),
    "ssbc_codes_only": lambda: _ssbc(False),
}

_CACHE = {}


def _model(name):
    if name not in _CACHE:
        _CACHE[name] = MODELS[name]()
    return _CACHE[name]


def _frames(dev, X, rng, n_random=150):
    """Clean frames, noisy frames, random frames and extreme values."""
    clean = dev.encode(X).astype(np.int64)
    w = dev.frame_width
    if dev.frame_dtype == np.uint8:
        noisy = clean ^ (rng.random(clean.shape) < 0.2)
        rand = rng.integers(0, 2, (n_random, w))
        extreme = np.vstack([np.zeros(w, np.int64), np.ones(w, np.int64)])
    else:
        noisy = np.asarray(dev.frames_from_wire(
            dev.wire_bits(clean.astype(np.int16)) ^ (rng.random((len(clean), 16 * w)) < 0.05)
            .astype(np.uint8)), np.int64)
        rand = rng.integers(-32768, 32768, (n_random, w))
        extreme = np.array([np.full(w, -32768), np.full(w, 32767), np.zeros(w),
                            np.where(np.arange(w) % 2, -32768, 32767)], np.int64)
    return np.vstack([clean, noisy, rand, extreme])


def _assert_parity(dev, frames, labels, dec):
    ref_l, ref_d = decision_integers(dev, frames.astype(dev.frame_dtype))
    assert labels.shape == ref_l.shape and dec.shape == ref_d.shape, (dec.shape, ref_d.shape)
    bad = np.flatnonzero((labels != ref_l) | np.any(dec != ref_d, axis=1))
    assert bad.size == 0, (f"{bad.size} of {len(frames)} frames differ; first {bad[0]}: "
                           f"C {labels[bad[0]]} {dec[bad[0]].tolist()[:12]} vs "
                           f"firmware_sim {ref_l[bad[0]]} {ref_d[bad[0]].tolist()[:12]}")


# ---------------------------------------------------------------------- host parity
@pytest.mark.parametrize("name", sorted(MODELS))
def test_host_runtime_equals_firmware_sim(name, tmp_path):
    need_toolchain("host")
    dev, X = _model(name)
    write_firmware(dev.container, tmp_path, "host")
    frames = _frames(dev, X, np.random.default_rng(len(name)))
    for opt, sanitize in (("-O2", False), ("-O0", True)):
        build_firmware(tmp_path, "host", opt=opt, sanitize=sanitize, probe=False)
        labels, dec = run_firmware(tmp_path, frames, "host")
        _assert_parity(dev, frames, labels, dec)


def test_host_build_measures_flash_ram_and_stack(tmp_path):
    need_toolchain("host")
    dev, _ = _model("nb_greedy")
    info = write_firmware(dev.container, tmp_path, "host")
    b = build_firmware(tmp_path, "host")
    assert b.flash_bytes > dev.container.nbytes          # the image is in flash
    assert b.stack_bytes > 0 and b.ram_bytes > b.stack_bytes
    assert info["decision_len"] == 1 and info["frame_width"] == dev.total_bits


def test_one_kind_build_refuses_other_kinds_and_all_kinds_opens_every_kind(tmp_path):
    """The default firmware compiles in its model's kind only (ec_config.h):
    another kind's image is refused with EC_ERR_KIND; kinds="all" opens it."""
    need_toolchain("host")
    nb, _ = _model("nb_greedy")
    ecoc, _ = _model("ecoc_linear_binary")
    images = [nb.container.tobytes(), ecoc.container.tobytes()]
    info = write_firmware(images[0], tmp_path / "one", "host")
    assert info["sources"] == ["ec_container.c", "ec_model.c", "ec_quantize.c", "ec_wire.c",
                               "ec_nb.c"]
    assert not (tmp_path / "one" / "ec_ecoc.c").exists()
    b = build_firmware(tmp_path / "one", "host", probe=False)
    assert check_images(b.runner, images) == [(True, "ok"), (False, "error -9 kind")]
    # rewriting the directory for all kinds (and back) leaves no stale sources behind
    write_firmware(images[0], tmp_path / "one", "host", kinds="all")
    b = build_firmware(tmp_path / "one", "host", probe=False)
    assert check_images(b.runner, images) == [(True, "ok"), (True, "ok")]
    write_firmware(images[1], tmp_path / "one", "host")
    assert not (tmp_path / "one" / "ec_nb.c").exists()
    with pytest.raises(ValueError, match="kinds must be 'model' or 'all'"):
        write_firmware(images[0], tmp_path / "x", "host", kinds="nb")


def test_one_learner_build_refuses_the_other_learner_kind(tmp_path):
    """An ECOC firmware compiles in its model's learner kind only (ec_config.h:
    EC_ECOC_LINEAR / EC_ECOC_TREES, issue 26): an image of the other learner
    kind is refused with EC_ERR_KIND, not misread; kinds="all" opens both."""
    need_toolchain("host")
    lin, _ = _model("ecoc_linear_binary")
    tree, _ = _model("ecoc_tree_3ary")
    images = [lin.container.tobytes(), tree.container.tobytes()]
    for i, want in ((0, "#define EC_ECOC_TREES 0"), (1, "#define EC_ECOC_LINEAR 0")):
        d = tmp_path / str(i)
        write_firmware(images[i], d, "host")
        assert want in (d / "ec_config.h").read_text()
        b = build_firmware(d, "host", probe=False)
        verdicts = check_images(b.runner, images)
        assert verdicts[i] == (True, "ok") and verdicts[1 - i] == (False, "error -9 kind")
    write_firmware(images[0], tmp_path / "all", "host", kinds="all")
    b = build_firmware(tmp_path / "all", "host", probe=False)
    assert check_images(b.runner, images) == [(True, "ok"), (True, "ok")]


def test_one_form_build_refuses_images_of_other_score_arithmetic_or_node_widths(tmp_path):
    """An ECOC firmware compiles in the score arithmetic its linear image needs
    (EC_ECOC_ACC32 / _W16 / _I64) or its trees' node widths (EC_ECOC_*_BYTES,
    issue 26): an image needing a wider arithmetic, or of other widths, is
    refused with EC_ERR_KIND; the int64 build runs every linear image, and an
    all-kinds build opens them all. The refused images are valid: firmware_sim
    loads them."""
    from firmware_sim.artifact import read_container, write_container

    need_toolchain("host")
    X, y = _digits()
    clf = ECOCClassifier(LogisticRegression(max_iter=300),
                         code=np.random.default_rng(1).integers(0, 2, (10, 12))).fit(X[:300],
                                                                                      y[:300])
    wide = export_ecoc(clf, X[:300]).device
    narrow = export_ecoc(clf, X[:300], accumulator="int32").device
    assert (wide.score_arithmetic(), narrow.score_arithmetic()) == ("int64", "int32")
    tree, _ = _model("ecoc_tree_3ary")
    c = read_container(tree.container.tobytes())
    assert c.arrays["node_left"].dtype == np.uint8
    arrays = {k: (v.astype(np.uint16) if k in ("node_left", "node_right") else v)
              for k, v in c.arrays.items()}
    tree16 = write_container(None, c.kind, arrays, c.meta)
    assert firmware_sim.load(tree16).c_defines()["EC_ECOC_REF_BYTES"] == 2
    images = [narrow.container.tobytes(), wide.container.tobytes(), tree.container.tobytes(),
              bytes(tree16)]
    want = {0: [(True, "ok"), (False, "error -9 kind")] + [(False, "error -9 kind")] * 2,
            1: [(True, "ok"), (True, "ok")] + [(False, "error -9 kind")] * 2,
            2: [(False, "error -9 kind")] * 2 + [(True, "ok"), (False, "error -9 kind")]}
    for i, verdicts in want.items():
        d = tmp_path / str(i)
        write_firmware(images[i], d, "host")
        b = build_firmware(d, "host", probe=False)
        assert check_images(b.runner, images) == verdicts, i
    write_firmware(images[0], tmp_path / "all", "host", kinds="all")
    b = build_firmware(tmp_path / "all", "host", probe=False)
    assert check_images(b.runner, images) == [(True, "ok")] * 4


def test_generated_makefile_builds_a_runner_that_agrees(tmp_path):
    """What a user runs by hand: `make -j2` in the generated directory."""
    need_toolchain("host")
    if shutil.which("make") is None:
        pytest.skip("make is not installed (Debian package make)")
    dev, X = _model("ssbc_table")
    write_firmware(dev.container, tmp_path, "host")
    res = subprocess.run(["make", "-j2", "all", "probe"], cwd=tmp_path, capture_output=True,
                         text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    assert (tmp_path / "probe").exists()
    frames = _frames(dev, X[:30], np.random.default_rng(3), n_random=10)
    labels, dec = run_firmware(tmp_path, frames, "host")
    _assert_parity(dev, frames, labels, dec)


# ---------------------------------------------------------------------- Cortex-M
@pytest.mark.parametrize("target, name", [
    ("cortex-m4", "nb_greedy"), ("cortex-m4", "ecoc_tree_wide"), ("cortex-m4", "ssbc_table"),
    ("cortex-m4", "ecoc_svm_3ary"), ("cortex-m3", "ecoc_linear_binary")])
def test_cortex_m_under_qemu_equals_firmware_sim(target, name, tmp_path):
    need_toolchain(target, run=True)
    dev, X = _model(name)
    write_firmware(dev.container, tmp_path, target)
    b = build_firmware(tmp_path, target)
    assert b.flash_bytes > dev.container.nbytes and b.stack_bytes > 0
    frames = _frames(dev, X[:80], np.random.default_rng(7), n_random=40)
    labels, dec = run_firmware(tmp_path, frames, target)
    _assert_parity(dev, frames, labels, dec)


def test_cli_firmware_with_a_relative_out_dir(tmp_path, monkeypatch):
    from export.cli import main
    need_toolchain("host")
    dev, _ = _model("nb_greedy")
    (tmp_path / "m.edgc").write_bytes(dev.container.tobytes())
    monkeypatch.chdir(tmp_path)
    assert main(["firmware", "m.edgc", "--out", "fw", "--target", "host", "--check",
                 "--data", "house_votes", "--split", "all"]) == 0
    assert (tmp_path / "fw" / "runner").exists()


def test_cortex_m0plus_builds_and_measures(tmp_path):
    need_toolchain("cortex-m0plus")
    dev, _ = _model("ecoc_tree_3ary")
    write_firmware(dev.container, tmp_path, "cortex-m0plus")
    b = build_firmware(tmp_path, "cortex-m0plus")
    assert b.flash_bytes > dev.container.nbytes and b.ram_bytes > 0


# ---------------------------------------------------------------------- loader parity
sys.path.insert(0, str(Path(__file__).parent))


def _meta_range(raw):
    from container_fuzz_driver import table
    for name, dt, shape, offset in table(raw):
        if name == "__meta__":
            return offset, offset + dt.itemsize * int(np.prod(shape))
    return 0, 0


def _python_accepts(raw):
    """firmware_sim's verdict on the arrays and class names: a refusal for a
    metadata rule (host side only; the C runtime never reads the JSON) is
    re-judged without the metadata, the image's class names kept (the
    container writer writes them from meta["classes"])."""
    from firmware_sim.artifact import read_container, write_container
    try:
        firmware_sim.load(raw)
        return True
    except firmware_sim.ContainerError as exc:
        if "metadata" not in str(exc):
            return False
    c = read_container(raw)
    names = None if c.class_names is None else {"classes": list(c.class_names)}
    try:
        firmware_sim.load(write_container(None, c.kind, dict(c.arrays), names))
        return True
    except firmware_sim.ContainerError:
        return False


@pytest.mark.parametrize("name", ["nb_greedy", "ecoc_linear_binary", "ecoc_tree_ternary",
                                  "ssbc_table"])
def test_c_loader_accepts_and_refuses_what_firmware_sim_does(name, tmp_path):
    """The fuzz corpus (bit flips, special values, structural edits; CRC
    recomputed) through an address- and UB-sanitized runner."""
    import container_fuzz_driver as fz

    need_toolchain("host")
    dev, _ = _model(name)
    raw = dev.container.tobytes()
    write_firmware(raw, tmp_path, "host", kinds="all")
    b = build_firmware(tmp_path, "host", opt="-O1", sanitize=True, probe=False)
    rng = np.random.default_rng(11)
    lo, hi = _meta_range(raw)
    mutants = []
    for label, m in fz.flip_mutants(raw, 150, rng):
        byte = int(label.split()[2])
        if not lo <= byte < hi:                  # metadata: host-side rules only
            mutants.append((label, m))
    mutants += list(fz.set_mutants(raw, 3)) + list(fz.shape_mutants(raw))
    disagree, accepted = [], 0
    verdicts = check_images(b.runner, [m for _, m in mutants])
    for (label, m), (c_ok, msg) in zip(mutants, verdicts):
        py_ok = _python_accepts(m)
        accepted += c_ok
        if c_ok != py_ok:
            disagree.append(f"{label}: python {'accepts' if py_ok else 'refuses'}, C {msg}")
    assert not disagree, f"{len(disagree)} of {len(mutants)} mutants:\n" + "\n".join(disagree[:15])
    assert 0 < accepted < len(mutants)


def test_c_loader_refuses_an_empty_array_whose_dimensions_overflow(tmp_path):
    """Found by the fuzz corpus: an empty array declaring shape (2**32-1, 2**32-1, 0)
    (numpy's ValueError in read_container, accepted by the C loader). Both now
    refuse it by one rule (docs/container_format.md, rule 9): itemsize times the
    product of the non-zero dimensions fits a container, empty arrays too."""
    from container_fuzz_driver import with_shape
    from firmware_sim.artifact import write_container

    need_toolchain("host")
    dev, _ = _model("nb_greedy")
    c = dev.container
    raw = write_container(None, c.kind, {**c.arrays, "zz_empty": np.zeros((1, 1, 0), np.int16)},
                          c.meta)
    write_firmware(raw, tmp_path, "host", kinds="all")
    b = build_firmware(tmp_path, "host", opt="-O1", sanitize=True, probe=False)
    shapes = [(2**32 - 1, 2**32 - 1, 0), (2**16, 0, 2**15), (0, 2**31, 1),
              (2**31 - 1, 0, 1), (0, 0, 0)]
    images = [with_shape(raw, "zz_empty", s) for s in shapes]
    verdicts = check_images(b.runner, images)
    assert verdicts == [(False, "error -8 table")] * 3 + [(True, "ok")] * 2, verdicts
    assert [_python_accepts(m) for m in images] == [False] * 3 + [True] * 2
