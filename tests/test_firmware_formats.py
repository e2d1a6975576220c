"""``edgecode firmware --format arduino|cmake`` (issue 26 item 5).

* arduino: the library is compiled offline by ``arduino-builder`` against the
  Debian ``arduino-core-avr`` (Arduino Uno, ATmega328P), and the example
  sketch's ELF runs under simavr (``ec_simavr --uart``): frames go in over
  the UART as text, the printed labels must equal ``firmware_sim``'s;
* cmake: the project is configured and built with the host compiler, and the
  example's labels on stdin frames equal ``firmware_sim``'s.

Outside CI a missing tool skips; with ``EDGECODE_CI`` set it fails.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))

from test_firmware import _model  # noqa: E402

from export.cli import main  # noqa: E402
from export.firmware import toolchain_missing  # noqa: E402
from export.formats import write_arduino, write_cmake  # noqa: E402

CI = bool(os.environ.get("EDGECODE_CI"))
C_DIR = Path(__file__).resolve().parents[1] / "firmware_sim" / "c"
ARDUINO = Path("/usr/share/arduino/hardware")
BUILDER_DIR = Path("/usr/share/arduino-builder")


def _need(*tools, arduino=False):
    missing = [t for t in tools if shutil.which(t) is None]
    if arduino and not (ARDUINO / "arduino" / "avr" / "platform.txt").is_file():
        missing.append("arduino-core-avr (/usr/share/arduino/hardware)")
    why = toolchain_missing("atmega328p", run=True) if arduino else None
    if missing or why:
        msg = f"missing: {', '.join(missing) or why}"
        if CI:
            pytest.fail(f"CI must have {msg}")
        pytest.skip(msg)


def _text(frames):
    return "".join(" ".join(str(int(v)) for v in row) + "\n" for row in frames)


def _arduino_build(lib, sketch_dir, build):
    """arduino-builder, offline, for the Uno (DECIMAL_DIG: Debian's
    arduino-core-avr 1.8 expects a newer avr-gcc's <float.h> in C++)."""
    build.mkdir()
    cmd = ["arduino-builder", "-compile", "-hardware", str(ARDUINO), "-hardware",
           str(BUILDER_DIR), "-tools", str(BUILDER_DIR), "-libraries", str(lib.parent),
           "-fqbn", "arduino:avr:uno", "-build-path", str(build),
           "-prefs=compiler.cpp.extra_flags=-DDECIMAL_DIG=__DECIMAL_DIG__", str(sketch_dir)]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return res.stdout


@pytest.mark.parametrize("name", ["nb_greedy", "ecoc_tree_3ary"])
def test_arduino_library_builds_offline_and_its_sketch_prints_firmware_sim_labels(name,
                                                                                  tmp_path):
    _need("arduino-builder", "gcc", arduino=True)
    dev, X = _model(name)
    libs = tmp_path / "libraries"
    info = write_arduino(dev.container, libs / f"m_{name}")
    lib = libs / info["name"]
    props = (lib / "library.properties").read_text()
    assert f"name={info['name']}" in props and "architectures=*" in props
    sketch = lib / "examples" / info["sketch"]
    out = _arduino_build(lib, sketch / f"{info['sketch']}.ino", tmp_path / "build")
    assert "Sketch uses" in out
    elf = tmp_path / "build" / f"{info['sketch']}.ino.elf"
    harness = tmp_path / "ec_simavr"
    subprocess.run(["gcc", "-std=c99", "-O2", "-I/usr/include/simavr",
                    str(C_DIR / "avr" / "ec_simavr.c"), "-lsimavr", "-o", str(harness)],
                   check=True, timeout=120)
    frames = dev.encode(X[:4])
    res = subprocess.run([str(harness), "--uart", str(1 + len(frames)), "atmega328p",
                          "16000000", str(elf)], input=_text(frames), capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0] == "ready", lines
    got = [int(line.split()[1]) for line in lines[1:]]
    assert got == dev.infer(frames).labels.tolist()
    names = dev.container.class_names
    if names:
        assert [line.split(None, 2)[2] for line in lines[1:]] == [names[i] for i in got]


def test_cmake_library_target_builds_and_its_example_agrees(tmp_path):
    _need("cmake", "gcc")
    dev, X = _model("ssbc_table")
    d = tmp_path / "model"
    info = write_cmake(dev.container, d)
    text = (d / "CMakeLists.txt").read_text()
    assert "add_library(edgecode_model STATIC" in text and info["target"] == "edgecode_model"
    # a user's project that adds the folder and links the target
    app = tmp_path / "app"
    app.mkdir()
    (app / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.13)\nproject(app C)\n"
        f"add_subdirectory({d.as_posix()} edgecode)\n"
        "set(EDGECODE_BUILD_EXAMPLE ON)\n"
        "add_executable(app main.c)\ntarget_link_libraries(app PRIVATE edgecode_model)\n")
    (app / "main.c").write_text(
        '#include "edgecode_rt.h"\n#include "model_image.h"\n'
        "int main(void){ec_model m; return ec_model_open(ec_model_image, "
        "ec_model_image_size, &m) == EC_OK ? 0 : 1;}\n")
    for src, build in ((d, tmp_path / "b1"), (app, tmp_path / "b2")):
        for cmd in (["cmake", "-S", str(src), "-B", str(build)],
                    ["cmake", "--build", str(build), "-j", "2"]):
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
            assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert subprocess.run([str(tmp_path / "b2" / "app")]).returncode == 0
    frames = dev.encode(X[:30])
    res = subprocess.run([str(tmp_path / "b1" / "edgecode_example")], input=_text(frames),
                         capture_output=True, text=True, timeout=60)
    got = [int(line.split()[1]) for line in res.stdout.splitlines()]
    assert got == dev.infer(frames).labels.tolist()


def test_cli_format_writes_the_layouts_and_refuses_build(tmp_path, capsys):
    dev, _ = _model("nb_greedy")
    art = tmp_path / "m.edgc"
    art.write_bytes(dev.container.tobytes())
    assert main(["firmware", str(art), "--format", "arduino", "--out",
                 str(tmp_path / "votes")]) in (0, None)
    out = capsys.readouterr().out
    assert "Arduino library 'votes'" in out
    assert (tmp_path / "votes" / "examples" / "votes_serial" / "votes_serial.ino").is_file()
    assert main(["firmware", str(art), "--format", "cmake", "--out",
                 str(tmp_path / "cm")]) in (0, None)
    assert (tmp_path / "cm" / "CMakeLists.txt").is_file()
    assert np.any([p.name == "model_image.c" for p in (tmp_path / "cm" / "src").iterdir()])
    code = main(["firmware", str(art), "--format", "cmake", "--build", "--out",
                 str(tmp_path / "x")])
    err = capsys.readouterr().err
    assert code == 2 and "--format cmake writes the library only" in err
    assert not (tmp_path / "x").exists()
