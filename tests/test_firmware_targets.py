"""The C runtime on AVR and RISC-V against firmware_sim, every kind (issue 26).

Targets ``atmega328p`` and ``atmega2560`` (``avr-gcc`` + avr-libc, the image
in flash through ``EC_ROM``, run under simavr by the harness
``firmware_sim/c/avr/ec_simavr.c`` linked against libsimavr) and
``rv32imac`` (``riscv64-unknown-elf-gcc`` + picolibc, bare metal under
``qemu-system-riscv32 -M virt -icount shift=0``). Each (model, target) is
built once for the module (``build_firmware``, compilers in parallel) and run
on a few frames: clean rows, channel-noised rows, random and extreme int16
values (``tests/test_firmware.py``'s ``_frames``). Labels and decision
integers must equal ``device.infer``'s; the cycle counts (AVR, exact) and
instruction counts (RV32) must be there for the open and every inference,
and simavr's cycle counts must repeat exactly. Outside CI a missing tool
skips with the reason; with ``EDGECODE_CI`` set (``.ci/run``) it fails.
"""

import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))

from test_firmware import _assert_parity, _frames  # noqa: E402
from test_firmware import _model as _builtin_model  # noqa: E402
from test_forest_firmware import _model as _forest_model  # noqa: E402

from export.firmware import TARGETS, build_firmware, run_firmware_measured, \
    toolchain_missing, write_firmware  # noqa: E402

CI = bool(os.environ.get("EDGECODE_CI"))
NEW_TARGETS = ("atmega328p", "atmega2560", "rv32imac")
#: Every kind, small enough for the ATmega328P's 32 KB of flash and 2 KB of RAM
#: (forests: class leaves with uint8 references, 8-bit probabilities on glass).
MODELS = ("nb_greedy", "ecoc_linear_binary", "ecoc_tree_3ary", "ssbc_table", "ssbc_codes_only",
          "forest_rf_class", "forest_extra_glass_u8")


def _model(name):
    """(device, rows) of a test model: tests/test_firmware.py's, or with the prefix
    ``forest_`` tests/test_forest_firmware.py's."""
    if name.startswith("forest_"):
        return _forest_model(name[len("forest_"):])
    return _builtin_model(name)


def _need(target):
    why = toolchain_missing(target, run=True)
    if why:
        if CI:
            pytest.fail(f"CI must have the {target} toolchain: {why}")
        pytest.skip(f"{target} toolchain: {why}")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """{(model, target): (device, rows, folder, FirmwareBuild)}, every pair built
    once (two builds at a time, each compiling in parallel); pairs whose
    toolchain is missing are left out (their tests skip or fail in _need)."""
    root = tmp_path_factory.mktemp("targets")
    pairs = [(m, t) for t in NEW_TARGETS if toolchain_missing(t, run=True) is None
             for m in MODELS]
    for m in MODELS:
        _model(m)                                  # fit before the threads start

    def one(pair):
        m, t = pair
        dev, X = _model(m)
        d = root / f"{m}-{t}"
        write_firmware(dev.container, d, t)
        return pair, (dev, X, d, build_firmware(d, t, jobs=1))

    with ThreadPoolExecutor(2) as ex:
        return dict(ex.map(one, pairs))


@pytest.mark.parametrize("target", NEW_TARGETS)
@pytest.mark.parametrize("name", MODELS)
def test_every_kind_on_every_new_target_equals_firmware_sim(name, target, built):
    _need(target)
    dev, X, d, b = built[(name, target)]
    assert b.flash_bytes > dev.container.nbytes and b.stack_bytes > 0, b
    t = TARGETS[target]
    if t.part is not None:                         # the test models fit the part
        assert b.flash_bytes <= t.part.flash_bytes and b.ram_bytes <= t.part.ram_bytes, b
    frames = _frames(dev, X[:8], np.random.default_rng(5), n_random=4)
    run = run_firmware_measured(d, frames, target)
    _assert_parity(dev, frames, run.labels, run.decisions)
    assert run.unit == t.counts and run.open_count > 0
    assert run.infer_counts.shape == (len(frames),) and (run.infer_counts > 0).all()
    if t.simavr is not None:
        assert run.infer_stack.shape == (len(frames),) and run.open_stack > 0
        assert run.stack_peak >= max(run.open_stack, int(run.infer_stack.max()))
        assert "simavr, exact, 16 MHz" in run.summary() and "stack: open" in run.summary()
    else:
        assert run.summary().startswith("instructions on rv32imac")


@pytest.mark.parametrize("name", ["ecoc_linear_binary", "ecoc_tree_3ary"])
def test_ecoc_runtime_code_fits_8_kb_on_the_atmega328p(name, built):
    """Issue 26 item 3: the ECOC runtime (the size probe's flash minus the
    image: start-up, vectors, container checks, the kind's rules and
    inference) is at most 8 KB on the ATmega328P as `edgecode firmware`
    builds it, and its ec_config.h compiles in the model's forms only."""
    _need("atmega328p")
    dev, X, d, b = built[(name, "atmega328p")]
    assert b.flash_bytes - dev.container.nbytes <= 8192, b
    config = (d / "ec_config.h").read_text()
    for key, value in dev.c_defines().items():
        assert f"#define {key} {value}" in config


@pytest.mark.parametrize("target", ["atmega328p", "rv32imac"])
def test_counts_repeat_exactly_and_follow_the_work(target, built):
    """simavr counts cycles from the instruction set's timings and QEMU's -icount
    counts instructions: the same frames give the same counts, and an NB frame
    whose features all decode to 0 costs the same as itself, not random noise."""
    _need(target)
    dev, X, d, _ = built[("nb_greedy", target)]
    frames = dev.encode(X[:3])
    a = run_firmware_measured(d, frames, target)
    b = run_firmware_measured(d, frames[::-1], target)
    assert a.open_count == b.open_count
    assert a.infer_counts.tolist() == b.infer_counts[::-1].tolist()


def test_an_avr_image_over_32767_bytes_runs_from_flash_on_the_2560(tmp_path):
    """One C array cannot exceed 32,767 bytes on AVR: the image is model_image.S
    (.byte lines in a .progmem section), read in place through __flash."""
    from firmware_sim.artifact import write_container
    from firmware_sim.ssbc import make_ssbc_arrays

    _need("atmega2560")
    rng = np.random.default_rng(0)
    m, d, k = 1100, 8, 8
    arrays = make_ssbc_arrays(rng.normal(0, 1, (m, d)), 4.0, rng.normal(0, 1, (m, k)),
                              rng.normal(0, 1, k))
    raw = write_container(None, "ssbc", arrays)
    assert 32767 < len(raw) < 65536 - 256
    import firmware_sim
    dev = firmware_sim.load(raw)
    info = write_firmware(raw, tmp_path, "atmega2560")
    assert "model_image.S" in info["files"] and not (tmp_path / "model_image.c").exists()
    b = build_firmware(tmp_path, "atmega2560")
    assert b.flash_bytes > len(raw)
    frames = np.vstack([dev.encode(rng.normal(0, 1, (2, d))),
                        np.array([[32767] * d, [-32768] * d], np.int16)])
    run = run_firmware_measured(tmp_path, frames, "atmega2560")
    _assert_parity(dev, frames, run.labels, run.decisions)


def test_an_avr_image_beyond_the_first_64_kb_is_refused(tmp_path):
    """__flash reads the first 64 KB of flash: a larger image is refused when the
    firmware is written, one that fits but leaves the runtime's tables beyond
    64 KB when it is built (never read wrong)."""
    from firmware_sim.artifact import write_container
    from firmware_sim.ssbc import make_ssbc_arrays

    rng = np.random.default_rng(1)

    def image(m):
        return write_container(None, "ssbc", make_ssbc_arrays(
            rng.normal(0, 1, (m, 8)), 4.0, rng.normal(0, 1, (m, 8)), rng.normal(0, 1, 8)))

    with pytest.raises(ValueError, match=r"too large for atmega2560: the AVR runtime reads it "
                                         r"from the first 64 KB of flash"):
        write_firmware(image(2100), tmp_path / "big", "atmega2560")
    _need("atmega2560")
    m = next(m for m in range(1990, 2001) if 65536 - 256 - 40 < len(image(m)) <= 65536 - 256)
    write_firmware(image(m), tmp_path / "edge", "atmega2560")
    with pytest.raises(RuntimeError, match="beyond the first 64 KB that __flash reads"):
        build_firmware(tmp_path / "edge", "atmega2560", probe=False)


@pytest.mark.parametrize("target", NEW_TARGETS)
def test_the_runtime_compiles_cleanly_for_the_target_with_every_kind_and_floats(target,
                                                                              tmp_path):
    """-Wall -Wextra -Werror -pedantic, every kind and EC_WITH_FLOAT; on AVR at
    -O1 to -O3 and -Os (avr-gcc 5.4 crashed on the __flash loops of
    ec_image_open, ec_image_find and ecoc_open before the workarounds)."""
    from export.firmware import _C_DIR, runtime_sources

    _need(target)
    t = TARGETS[target]
    opts = ("-O1", "-O2", "-O3", "-Os") if t.family == "avr" else ("-Os",)

    def compile_one(job):
        opt, src = job
        res = subprocess.run([t.cc, *t.compile_flags(), opt, "-Wall", "-Wextra", "-Werror",
                              "-pedantic", "-DEC_WITH_FLOAT=1", "-I", str(_C_DIR), "-c",
                              str(_C_DIR / src), "-o", str(tmp_path / f"{opt}{src}.o")],
                             capture_output=True, text=True)
        return opt, src, res.returncode, res.stderr[-2000:]

    with ThreadPoolExecutor(2) as ex:
        for opt, src, code, err in ex.map(compile_one, [(o, s) for o in opts
                                                        for s in runtime_sources()]):
            assert code == 0, (opt, src, err)


def test_strict_c99_on_avr_says_to_use_gnu99(tmp_path):
    from export.firmware import _C_DIR

    _need("atmega328p")
    res = subprocess.run(["avr-gcc", "-mmcu=atmega328p", "-std=c99", "-I", str(_C_DIR), "-c",
                          str(_C_DIR / "ec_nb.c"), "-o", str(tmp_path / "x.o")],
                         capture_output=True, text=True)
    assert res.returncode != 0 and "compile with -std=gnu99" in res.stderr


def test_the_generated_makefile_builds_and_runs_under_simavr(built, tmp_path):
    """What a user runs by hand in the folder: `make -j2 all probe` and `make run`."""
    _need("atmega328p")
    if shutil.which("make") is None:
        pytest.skip("make is not installed (Debian package make)")
    dev, X, _, _ = built[("nb_greedy", "atmega328p")]
    write_firmware(dev.container, tmp_path, "atmega328p")
    res = subprocess.run(["make", "-j2", "all", "probe"], cwd=tmp_path, capture_output=True,
                         text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    frames = dev.encode(X[:5])
    (tmp_path / "frames.txt").write_text(
        "".join(" ".join(str(int(v)) for v in r) + "\n" for r in frames))
    res = subprocess.run(["make", "-s", "run"], cwd=tmp_path, capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    rows = np.array([ln.split() for ln in res.stdout.splitlines()], np.int64)
    _assert_parity(dev, frames, rows[:, 0], rows[:, 1:])
    assert "open_cycles" in (tmp_path / "counts.txt").read_text()


@pytest.mark.parametrize("target, says", [
    ("atmega328p", "cycles on atmega328p (simavr, exact, 16 MHz): open "),
    ("rv32imac", "instructions on rv32imac (qemu-system-riscv32 -icount, instructions "
                 "executed): open ")])
def test_cli_check_prints_the_counts(target, says, tmp_path, capsys):
    from export.cli import main

    _need(target)
    dev, _ = _model("nb_greedy")
    (tmp_path / "m.edgc").write_bytes(dev.container.tobytes())
    code = main(["firmware", str(tmp_path / "m.edgc"), "--out", str(tmp_path / "fw"),
                 "--target", target, "--check", "--data", "house_votes", "--split", "all",
                 "--max-points", "6", "--random-frames", "4"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "labels and decision integers equal firmware_sim's" in out, out
    assert says in out and "inference median" in out and "over 10 frames" in out, out
    if target == "atmega328p":
        assert "stack: open" in out and "stack" in out.split("size probe")[1], out


def test_cli_refuses_an_avr_build_over_the_part(tmp_path, capsys):
    """The 328P's 2 KB of RAM: a model whose buffers do not fit is refused
    (exit 2, nothing written), as a build over a profile is."""
    from export.cli import main

    from sklearn.tree import DecisionTreeClassifier

    from test_firmware import _ecoc

    _need("atmega328p")
    # 90 columns: 800 bytes of decision integers, over 2 KB of RAM with the
    # frame, the model and the stack (ecoc_tree_wide's 70 now fit: 1,991 B)
    dev, _ = _ecoc(DecisionTreeClassifier(max_depth=3, random_state=0),
                   np.random.default_rng(4).integers(0, 2, (10, 90)))
    (tmp_path / "w.edgc").write_bytes(dev.container.tobytes())
    code = main(["firmware", str(tmp_path / "w.edgc"), "--out", str(tmp_path / "fw"),
                 "--target", "atmega328p", "--build"])
    out, err = capsys.readouterr()
    assert code == 2 and "does not fit the part" in err and "of part atmega328p" in err, err
    assert not (tmp_path / "fw").exists()


def test_ci_installs_the_packages_of_every_target():
    """.ci/run installs what export/targets.py says each target needs."""
    from export.targets import debian_packages

    text = (Path(__file__).resolve().parents[1] / ".ci" / "run").read_text()
    for name in TARGETS:
        for pkg in debian_packages(name):
            assert f"need+=({pkg})" in text, (name, pkg)
