"""Firmware in the layout of a user's project (issue 26 item 5):
``edgecode firmware ART --format sources|arduino|cmake --out DIR``.

* ``sources`` (:func:`export.firmware.write_firmware`): the runtime, the
  image, a runner and a Makefile in one folder, for a target.
* ``arduino`` (:func:`write_arduino`): an Arduino library, ``library.properties``,
  ``src/`` (the runtime, the image, and a C glue file: the runtime reads the
  image through ``__flash`` on AVR, which C++ has not, so the sketch calls
  three plain C functions declared in ``src/<name>.h``) and an example sketch
  ``examples/<name>_serial/<name>_serial.ino`` that reads a frame of integers
  over Serial (115200 baud, whitespace-separated, one frame per line) and
  prints the label (and its class name). Copy the folder into
  ``~/Arduino/libraries/`` (or ``arduino-cli lib install --zip-path``);
  it builds for AVR boards (the image in flash, ``model_image.S``) and any
  other core (``model_image.c``), each file guarding itself.
* ``cmake`` (:func:`write_cmake`): a ``CMakeLists.txt`` with a static library
  target ``edgecode_model`` (the runtime and the image; its include directory
  is public) and an example program ``edgecode_example`` that reads frames on
  stdin and prints the labels; ``add_subdirectory(DIR)`` and
  ``target_link_libraries(app PRIVATE edgecode_model)`` in a user's project.

All three are written under a temporary name and moved into place at the end.
"""

import re
import shutil
import tempfile
from pathlib import Path

__all__ = ["FORMATS", "write_format", "write_arduino", "write_cmake"]

#: ``--format`` choices.
FORMATS = ("sources", "arduino", "cmake")

_RUNTIME_GLOBS = ("ec_*.c", "ec_*.h", "edgecode_rt.h")
#: Files of the sources layout that are the test runner's, not the runtime's.
_NOT_RUNTIME = {"ec_simavr.c", "ec_counter.h"}


def _library_name(name):
    name = re.sub(r"[^A-Za-z0-9_]", "_", str(name)).strip("_") or "edgecode_model"
    return name if not name[0].isdigit() else "m_" + name


def _runtime_into(artifact, dest, target):
    """Write the ``sources`` firmware for ``target`` in a scratch folder and copy
    the runtime (sources, headers, config) and the image files into ``dest``;
    returns write_firmware's info."""
    from export.firmware import write_firmware

    with tempfile.TemporaryDirectory(prefix="edgecode-format-") as tmp:
        info = write_firmware(artifact, tmp, target, atomic=False)
        src = Path(tmp)
        copied = []
        for pattern in _RUNTIME_GLOBS + ("model_image.*", "model_config.h"):
            for f in sorted(src.glob(pattern)):
                if f.name in _NOT_RUNTIME:
                    continue
                shutil.copyfile(f, dest / f.name)
                copied.append(f.name)
        info["copied"] = copied
        return info


def write_format(artifact, out_dir, fmt="sources", target="host", *, name=None):
    """Write the firmware of ``artifact`` in layout ``fmt`` (:data:`FORMATS`)
    into ``out_dir``; returns a dict with ``format``, ``dir``, ``files`` and
    what the writer reports. ``target`` is the ``sources`` target; the Arduino
    library is for AVR boards (and others), the CMake library for the host
    compiler (or the toolchain file CMake is given)."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; known: {list(FORMATS)}")
    if fmt == "sources":
        from export.firmware import write_firmware
        info = write_firmware(artifact, out_dir, target)
        info["format"] = "sources"
        return info
    writer = write_arduino if fmt == "arduino" else write_cmake
    return writer(artifact, out_dir, name=name)


def _atomic(out_dir, fill):
    from export.atomic import AtomicOutputs

    out = Path(out_dir)
    out.absolute().parent.mkdir(parents=True, exist_ok=True)
    with AtomicOutputs(dirs=[out]) as tmp:
        d = tmp[out]
        if d.exists():
            shutil.rmtree(d)
        d.mkdir(parents=True)
        info = fill(d)
    info["dir"] = str(out)
    info["files"] = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    return info


# ------------------------------------------------------------------------------ Arduino
def write_arduino(artifact, out_dir, *, name=None, version="1.0.0"):
    """Write an Arduino library of ``artifact`` into ``out_dir``.

    The library is named ``name`` (default: the folder's name, made a C
    identifier). Its sketch API (``src/<name>.h``, C linkage)::

        int edgecode_begin(void);            /* open the image: 0, or an ec_status */
        int32_t edgecode_classify(const int16_t *frame);   /* label, or < 0 */
        const char *edgecode_class_name(int32_t label);     /* or "" */

    with ``EDGECODE_FRAME_WIDTH`` int16 values per frame (naive Bayes: the
    received bits, 0 or 1; the other kinds: the quantized features, as
    ``firmware_sim``'s ``encode`` makes them).

    Examples
    --------
    >>> import tempfile, os
    >>> from firmware_sim.naive_bayes import ProtectedNBDevice
    >>> dev = ProtectedNBDevice.from_arrays([2, -1], -1, [1, 0])
    >>> d = os.path.join(tempfile.mkdtemp(), "votes")
    >>> info = write_arduino(dev.container, d)
    >>> info["name"], "library.properties" in info["files"]
    ('votes', True)
    >>> "examples/votes_serial/votes_serial.ino" in info["files"]
    True
    """
    lib = _library_name(name or Path(out_dir).name)

    def fill(d):
        src = d / "src"
        src.mkdir()
        info = _runtime_into(artifact, src, "atmega328p")
        # the image for every core: assembler (in flash) on AVR, C elsewhere
        from export.firmware import _image_bytes, _image_file
        from export.targets import TARGETS

        raw = _image_bytes(artifact)
        asm = (src / "model_image.S").read_text()
        (src / "model_image.S").write_text(
            "/* AVR: the image in flash (__flash); other cores use model_image.c */\n"
            "#if defined(__AVR__)\n" + asm + "#endif\n")
        c = _image_file(raw, TARGETS["host"])
        (src / "model_image.c").write_text(
            "/* The image as a C array on cores other than AVR (model_image.S there). */\n"
            "#if !defined(__AVR__)\n" + c + "#endif\n")
        (src / f"{lib}.h").write_text(_ARDUINO_H.format(
            name=lib, guard=lib.upper(), width=info["frame_width"], kind=info["kind"]))
        (src / "edgecode_glue.c").write_text(_ARDUINO_GLUE.format(name=lib))
        (d / "library.properties").write_text(_LIBRARY_PROPERTIES.format(
            name=lib, version=version, kind=info["kind"]))
        ex = d / "examples" / f"{lib}_serial"
        ex.mkdir(parents=True)
        (ex / f"{lib}_serial.ino").write_text(_ARDUINO_INO.format(name=lib))
        (d / "README.md").write_text(_ARDUINO_README.format(name=lib, kind=info["kind"],
                                                            width=info["frame_width"]))
        return {"format": "arduino", "name": lib, "kind": info["kind"],
                "frame_width": info["frame_width"], "sketch": f"{lib}_serial"}

    return _atomic(out_dir, fill)


_LIBRARY_PROPERTIES = """\
name={name}
version={version}
author=edgecode
maintainer=edgecode
sentence=An edgecode {kind} model and its C99 runtime (generated by edgecode firmware --format arduino).
paragraph=edgecode_begin() opens the model image (in flash on AVR); edgecode_classify(frame) returns the label of one frame of int16 values.
category=Data Processing
url=https://example.invalid/edgecode
architectures=*
"""

_ARDUINO_H = """\
/* {name}.h - the sketch's view of the edgecode model (generated by `edgecode
   firmware --format arduino`): plain C functions, callable from C++ (the
   runtime itself reads the image through __flash on AVR, which C++ lacks;
   edgecode_glue.c is the bridge). Model kind: {kind}. */
#ifndef {guard}_H
#define {guard}_H
#include <stdint.h>

/* int16 values per frame */
#define EDGECODE_FRAME_WIDTH {width}

#ifdef __cplusplus
extern "C" {{
#endif
/* Open the model image: 0, or the runtime's (negative) ec_status. */
int edgecode_begin(void);
/* Label (class index) of one frame of EDGECODE_FRAME_WIDTH values, or the
   runtime's (negative) ec_status when the frame is refused. */
int32_t edgecode_classify(const int16_t *frame);
/* The name of class `label` (copied out of the image), or "" when the image
   names no classes. */
const char *edgecode_class_name(int32_t label);
#ifdef __cplusplus
}}
#endif
#endif
"""

_ARDUINO_GLUE = """\
/* edgecode_glue.c - C glue between the sketch (C++) and the edgecode runtime
   (generated by `edgecode firmware --format arduino`). C, because on AVR the
   runtime's image pointers carry __flash (EC_ROM), a GNU C address space that
   C++ does not have. */
#include "edgecode_rt.h"
#include "model_config.h"
#include "model_image.h"
#include "{name}.h"

static ec_model model;
static uint64_t workspace[(EC_WORKSPACE_BYTES + 7) / 8 + 1];
static int64_t decision[EC_DECISION_LEN > 0 ? EC_DECISION_LEN : 1];
static char name_buf[32];

int edgecode_begin(void)
{{
    ec_status s = ec_model_open(ec_model_image, ec_model_image_size, &model);
    return (int)s;
}}

int32_t edgecode_classify(const int16_t *frame)
{{
    int32_t label = -1;
    ec_status s = ec_infer(&model, frame, &label, decision, workspace,
                           (uint32_t)sizeof workspace);
    return s == EC_OK ? label : (int32_t)s;
}}

const char *edgecode_class_name(int32_t label)
{{
    const EC_ROM char *p = ec_class_name(&model, label);
    unsigned i = 0;
    if (p == 0) return "";
    while (i + 1 < sizeof name_buf && p[i] != 0) {{
        name_buf[i] = p[i];
        i++;
    }}
    name_buf[i] = 0;
    return name_buf;
}}
"""

_ARDUINO_INO = """\
/* {name}_serial - classify frames read over Serial (generated by `edgecode
   firmware --format arduino`). Send one frame per line: EDGECODE_FRAME_WIDTH
   integers separated by spaces, at 115200 baud; the sketch answers
   "label <index> <class name>" (or "error <code>"). */
#include <{name}.h>

static int16_t frame[EDGECODE_FRAME_WIDTH];

void setup()
{{
  Serial.begin(115200);
  int s = edgecode_begin();
  if (s != 0) {{
    Serial.print("error ");
    Serial.println(s);
  }} else {{
    Serial.println("ready");
  }}
}}

/* the next integer on Serial (waits for it; skips anything but digits and '-') */
static long read_int()
{{
  long v = 0;
  bool neg = false, any = false;
  for (;;) {{
    while (!Serial.available()) {{}}
    int c = Serial.read();
    if (c == '-' && !any) {{
      neg = true;
    }} else if (c >= '0' && c <= '9') {{
      v = 10 * v + (c - '0');
      any = true;
    }} else if (any) {{
      return neg ? -v : v;
    }} else {{
      neg = false;
    }}
  }}
}}

void loop()
{{
  for (int i = 0; i < EDGECODE_FRAME_WIDTH; i++) frame[i] = (int16_t)read_int();
  int32_t label = edgecode_classify(frame);
  if (label < 0) {{
    Serial.print("error ");
    Serial.println(label);
    return;
  }}
  Serial.print("label ");
  Serial.print(label);
  Serial.print(' ');
  Serial.println(edgecode_class_name(label));
}}
"""

_ARDUINO_README = """\
# {name}

An edgecode {kind} model as an Arduino library (generated by `edgecode firmware
--format arduino`). Copy this folder into your sketchbook's `libraries/` folder,
then open *File > Examples > {name} > {name}_serial*.

    #include <{name}.h>
    edgecode_begin();                       // once: opens the image (0 = ok)
    int32_t label = edgecode_classify(frame);   // frame: {width} int16 values

The runtime is C99 (GNU C on AVR, where the image stays in flash); see
edgecode's docs/firmware.md, "Arduino".
"""


# ------------------------------------------------------------------------------ CMake
def write_cmake(artifact, out_dir, *, name=None):
    """Write a CMake project of ``artifact`` into ``out_dir``: the library
    target ``edgecode_model`` (runtime + image, public include directory
    ``src/``) and the example ``edgecode_example`` (frames on stdin, one per
    line; prints ``label <index>`` per frame).

    Examples
    --------
    >>> import tempfile, os
    >>> from firmware_sim.naive_bayes import ProtectedNBDevice
    >>> dev = ProtectedNBDevice.from_arrays([2, -1], -1, [1, 0])
    >>> info = write_cmake(dev.container, os.path.join(tempfile.mkdtemp(), "m"))
    >>> sorted(f for f in info["files"] if not f.startswith("src/"))
    ['CMakeLists.txt', 'example/main.c']
    """
    project = _library_name(name or Path(out_dir).name)

    def fill(d):
        src = d / "src"
        src.mkdir()
        info = _runtime_into(artifact, src, "host")
        sources = " ".join(f"src/{s}" for s in info["sources"] + ["model_image.c"])
        (d / "CMakeLists.txt").write_text(_CMAKELISTS.format(project=project,
                                                             sources=sources))
        (d / "example").mkdir()
        (d / "example" / "main.c").write_text(_CMAKE_MAIN)
        return {"format": "cmake", "name": project, "kind": info["kind"],
                "frame_width": info["frame_width"], "target": "edgecode_model"}

    return _atomic(out_dir, fill)


_CMAKELISTS = """\
# Generated by `edgecode firmware --format cmake`: the edgecode C99 runtime and
# this model's image as the library target edgecode_model.
#   add_subdirectory(path/to/this)   then
#   target_link_libraries(your_app PRIVATE edgecode_model)
cmake_minimum_required(VERSION 3.13)
project({project} C)

add_library(edgecode_model STATIC {sources})
target_include_directories(edgecode_model PUBLIC ${{CMAKE_CURRENT_SOURCE_DIR}}/src)
# model_config.h: this model's frame width, decision length and workspace
target_compile_features(edgecode_model PUBLIC c_std_99)
if(CMAKE_C_COMPILER_ID MATCHES "GNU|Clang")
  target_compile_options(edgecode_model PRIVATE -Wall -Wextra)
endif()
if(CMAKE_SYSTEM_PROCESSOR MATCHES "avr" OR CMAKE_C_COMPILER MATCHES "avr-gcc")
  # __flash (EC_ROM) is GNU C
  set_property(TARGET edgecode_model PROPERTY C_EXTENSIONS ON)
endif()

option(EDGECODE_BUILD_EXAMPLE "build edgecode_example (frames on stdin)" ${{PROJECT_IS_TOP_LEVEL}})
if(EDGECODE_BUILD_EXAMPLE)
  add_executable(edgecode_example example/main.c)
  target_link_libraries(edgecode_example PRIVATE edgecode_model)
endif()
"""

_CMAKE_MAIN = """\
/* edgecode_example: classify frames read on stdin, one per line of
   EC_FRAME_WIDTH integers; prints "label <index>" (or "error <code>") per
   frame. Generated by `edgecode firmware --format cmake`. */
#include <stdio.h>

#include "edgecode_rt.h"
#include "model_config.h"
#include "model_image.h"

static ec_model model;
static uint64_t workspace[(EC_WORKSPACE_BYTES + 7) / 8 + 1];
static int64_t decision[EC_DECISION_LEN > 0 ? EC_DECISION_LEN : 1];
static int16_t frame[EC_FRAME_WIDTH > 0 ? EC_FRAME_WIDTH : 1];

int main(void)
{
    long v;
    uint32_t i;
    ec_status s = ec_model_open(ec_model_image, ec_model_image_size, &model);
    if (s != EC_OK) {
        printf("error %d\\n", (int)s);
        return 1;
    }
    for (;;) {
        int32_t label = -1;
        for (i = 0; i < EC_FRAME_WIDTH; i++) {
            if (scanf("%ld", &v) != 1) return 0;
            frame[i] = (int16_t)v;
        }
        s = ec_infer(&model, frame, &label, decision, workspace, (uint32_t)sizeof workspace);
        if (s != EC_OK)
            printf("error %d\\n", (int)s);
        else
            printf("label %ld\\n", (long)label);
    }
}
"""
