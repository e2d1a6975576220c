"""Real firmware: the portable C99 runtime, generated, built and run.

:func:`write_firmware` writes a directory that a microcontroller project can
use as it is: the runtime (``firmware_sim/c/*.c``, ``edgecode_rt.h``: no
malloc, no floating point on the inference path, only ``<stdint.h>`` and
``<stddef.h>``), the artifact as a 16-byte-aligned constant array
(``model_image.c``; on AVR ``model_image.S``, in flash) declared by
``model_image.h``, a ``model_config.h`` with the sizes the model needs, a
test runner (``runner.c``), a size probe (``probe.c``) and a Makefile.
:func:`build_firmware` compiles it for a target of :mod:`export.targets`
(the host, Cortex-M, AVR, RV32) and measures the real flash (text + rodata
+ data) and RAM (data + bss + the stack) of the probe, the smallest
firmware that opens the image and runs one inference: the worst-case stack
of the call graph from ``-fstack-usage``/``-fcallgraph-info``, or on AVR
(whose GCC has no call graph output) the stack simavr measures on one
frame. :func:`run_firmware` feeds frames (rows of ``device.encode(X)``) to
the runner, on the host, under QEMU (Cortex-M3/M4, RV32) or under simavr
(AVR), and parses one line per frame: the label, then the decision
integers ``device.infer`` returns; :func:`run_firmware_measured` also
returns the exact cycles (AVR) or instructions (RV32) of the open and of
each inference, and on AVR their stack.

The C runtime implements the device contract of ``firmware_sim`` bit for
bit (``tests/test_firmware.py``, ``tests/test_firmware_targets.py``);
``docs/firmware.md`` says how to drop the files into an MCU project.
"""

import re
import shutil
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import firmware_sim
from export.targets import TARGETS, get_target, toolchain_missing
from firmware_sim._parallel import n_threads
from firmware_sim.artifact import Container, read_container
from firmware_sim.c_inline import INLINE_SOURCE, stamp

__all__ = ["TARGETS", "write_firmware", "build_firmware", "run_firmware", "run_firmware_measured",
           "toolchain_missing", "FirmwareBuild", "FirmwareRun", "decision_integers",
           "runtime_sources", "CORE_SOURCES", "RUNTIME_HEADERS",
           "remove_stale_sources", "target_profile", "target_limits", "oversize",
           "TREE_FORMS", "INLINE_SOURCE"]

#: The runtime's own C sources (``firmware_sim/c``), in link order; each kind
#: adds its ``c_sources`` (a hook of its device class) after them.
CORE_SOURCES = ("ec_container.c", "ec_model.c", "ec_quantize.c", "ec_wire.c")   # ec_wire.c: issue 27
#: Its headers: the API, what a kind implements, the kind table.
RUNTIME_HEADERS = ("edgecode_rt.h", "ec_kind.h", "ec_kinds.h", "ec_trees.h")

_C_DIR = Path(firmware_sim.__file__).resolve().parent / "c"

_WARN = ["-Wall", "-Wextra", "-Werror", "-pedantic"]

#: Files a firmware folder may hold that another target's write does not
#: (removed when the folder is rewritten for another target).
_TARGET_FILES = ("model_image.c", "model_image.S", "startup.c", "link.ld", "probe_start.c",
                 "ec_simavr.c", "ec_counter.h", INLINE_SOURCE)

#: ``trees`` of :func:`write_firmware`: the image read by the runtime, or the
#: model as generated code (:mod:`firmware_sim.c_inline`).
TREE_FORMS = ("table", "inline", "arrays")
#: The runtime files an inline build keeps: ``ec_status_name`` (the runner's
#: messages; the image checks beside it are dropped by --gc-sections) and the
#: quantizer's exact arithmetic.
INLINE_CORE_SOURCES = ("ec_container.c", "ec_quantize.c")


def _target(name):
    return get_target(name)


def _image_bytes(artifact):
    if isinstance(artifact, Container):
        return artifact.tobytes()
    if isinstance(artifact, (bytes, bytearray)):
        return bytes(artifact)
    with open(artifact, "rb") as fh:
        return fh.read()


def decision_integers(device, frames):
    """The runner's expected output for ``frames``: ``device.decision_rows(frames)``,
    int64 labels (-1 where the device computes none) and the decision integers
    in the C runtime's order (the kind's ``decision_layout``)."""
    return device.decision_rows(frames)


def runtime_sources(kind=None):
    """The runtime's C files in link order: :data:`CORE_SOURCES`, then the
    ``c_sources`` of the registered kind ``kind`` (a name or a device class),
    or (None) of every registered kind whose files ``firmware_sim/c`` ships
    (a kind registered elsewhere that names files the folder lacks has no C
    runtime here: it is left out, and :func:`write_firmware` refuses its
    images by name).

    >>> runtime_sources("protected_nb")
    ['ec_container.c', 'ec_model.c', 'ec_quantize.c', 'ec_wire.c', 'ec_nb.c']
    """
    if kind is None:
        classes = [c for c in firmware_sim.device_kinds().values()
                   if c.c_sources and not _missing_sources(c)]
    elif isinstance(kind, type):
        classes = [kind]
    else:
        cls = firmware_sim.device_kinds().get(kind)
        if cls is None:
            raise ValueError(f"no device kind {kind!r} is registered; known: "
                             f"{sorted(firmware_sim.device_kinds())}")
        classes = [cls]
    out = list(CORE_SOURCES)
    for cls in classes:
        out += [name for name in cls.c_sources if name not in out]
    return out


def _missing_sources(cls):
    """The ``c_sources`` of a device class that ``firmware_sim/c`` does not hold."""
    return [name for name in cls.c_sources if not (_C_DIR / name).is_file()]


def __getattr__(name):
    """``RUNTIME_SOURCES``: every registered kind's :func:`runtime_sources`, as a
    tuple (computed when asked, so a kind registered later is in it)."""
    if name == "RUNTIME_SOURCES":
        return tuple(runtime_sources())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _c_runtime(device):
    """The device's class, refused when its kind has no C runtime (a protection
    layer's device, issue 27: the class of the kind it wraps)."""
    cls = type(getattr(device, "inner", device))
    if not cls.c_sources or not cls.c_switch:
        raise ValueError(f"kind {device.container.kind!r} has no C runtime (its device class "
                         f"{cls.__name__} names no c_sources / c_switch): no firmware")
    missing = _missing_sources(cls)
    if missing:
        raise ValueError(f"kind {device.container.kind!r} has no C runtime here: its device "
                         f"class {cls.__name__} names {missing}, which {_C_DIR} does not hold")
    return cls


_MAKEFILE = """\
# Generated by `edgecode firmware` ({target}). `make` (or `make -j`) builds
# {runner}; `make probe` the size probe (the smallest firmware that opens the
# image and runs one inference); `make size` prints its sections.{run_note}
CC = {cc}
SIZE = {size}
CFLAGS = {std} -Wall -Wextra -pedantic {opt} -ffunction-sections -fdata-sections {cpu} -include model_config.h
RUNTIME = {runtime}
OBJS = $(RUNTIME:.c=.o) {image_obj}
HEADERS = {headers} ec_config.h model_config.h model_image.h

all: {runner}

%.o: %.c $(HEADERS)
\t$(CC) $(CFLAGS) -c $< -o $@

%.o: %.S
\t$(CC) $(CFLAGS) -c $< -o $@
{runner_objs}
{runner}: $(OBJS) {runner_deps}
\t$(CC) $(CFLAGS) {runner_link} $^ -o $@

probe{ext}: $(OBJS) {probe_deps}
\t$(CC) $(CFLAGS) {probe_link} $^ -o $@ {probe_libs}

{probe_alias}size: probe{ext}
\t$(SIZE) -A probe{ext}
{extra}
clean:
\trm -f {runner} probe{ext} *.o *.su *.ci {extra_clean}

.PHONY: all probe size clean
"""

_PROBE = """\
/* Size probe: open the image in place and run one inference (what a device
   firmware needs at least). Generated by `edgecode firmware`. */
#include "edgecode_rt.h"
#include "model_config.h"
#include "model_image.h"

static uint64_t workspace[(EC_WORKSPACE_BYTES + 7) / 8];
static int16_t frame[EC_FRAME_WIDTH];
static int64_t decision[EC_DECISION_LEN];
volatile int32_t ec_probe_label;

int main(void)
{
    ec_model model;
    int32_t label = -1;
    if (ec_model_open(ec_model_image, ec_model_image_size, &model) != EC_OK) return 1;
    if (ec_infer(&model, frame, &label, decision, workspace, sizeof workspace) != EC_OK) return 2;
    ec_probe_label = label;
    return 0;
}
"""

_PROBE_START = """\
/* Bare start for the size probe: vector table, .data copy, .bss zero, main. */
#include <stdint.h>
extern uint32_t __stack_top, __data_load, __data_start, __data_end, __bss_start__, __bss_end__;
extern int main(void);
void Reset_Handler(void);
void Reset_Handler(void)
{
    uint32_t *src = &__data_load, *dst = &__data_start;
    while (dst < &__data_end) *dst++ = *src++;
    for (dst = &__bss_start__; dst < &__bss_end__;) *dst++ = 0u;
    (void)main();
    for (;;) {}
}
__attribute__((section(".vectors"), used))
static void (*const vectors[2])(void) = {
    (void (*)(void))(uintptr_t)&__stack_top, Reset_Handler,
};
/* GCC may emit calls to memcpy/memset in freestanding code (it requires them
   of the environment); a device's C library has them, the probe brings small
   ones so that its size counts them. */
#include <stddef.h>
void *memcpy(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
void *memcpy(void *dst, const void *src, size_t n)
{
    unsigned char *d = dst;
    const unsigned char *s = src;
    while (n--) *d++ = *s++;
    return dst;
}
void *memset(void *dst, int c, size_t n)
{
    unsigned char *d = dst;
    while (n--) *d++ = (unsigned char)c;
    return dst;
}
"""


def write_firmware(artifact, out_dir, target="host", *, kinds="model", atomic=True,
                   trees="table"):
    """Write the C99 firmware of an artifact into ``out_dir``.

    Parameters
    ----------
    artifact : path, bytes or Container
        Any edgecode container; it is validated with ``firmware_sim.load``
        first (a malformed image raises ``ContainerError``).
    out_dir : path
        Created if needed; existing generated files are overwritten.
    target : str
        A key of :data:`TARGETS` (``host``, ``cortex-m0plus``, ``cortex-m3``,
        ``cortex-m4``, ``atmega328p``, ``atmega2560``, ``rv32imac``;
        :mod:`export.targets`).
    kinds : {"model", "all"}
        ``"model"`` (default): only the artifact's kind is compiled in
        (``ec_config.h`` names it; the other kinds' sources are not written,
        and stale copies are removed): the smallest and fastest build. An
        image of another kind is then refused with ``EC_ERR_KIND``.
        ``"all"``: every kind, for a firmware that opens images of any kind
        (the runner's ``--check`` of arbitrary images).
    atomic : bool
        True (default): the files are written into a temporary folder next to
        ``out_dir`` and moved into place at the end
        (:class:`export.atomic.AtomicOutputs`), so an error or Ctrl-C leaves
        ``out_dir`` as it was; then the other kinds' sources an earlier
        firmware left there are removed. False: written in place (for a
        folder that is itself a temporary one).
    trees : {"table", "inline"}
        ``"table"`` (default): the image, verified and read in place by the
        runtime. ``"inline"``: the model as C code (a tree model only: its
        device class's ``c_inline`` hook; :mod:`firmware_sim.c_inline`), the
        fastest and smallest build: ``ec_inline.c`` implements the same API
        (``ec_model_open``, ``ec_infer``, ``ec_quantize``, ...) with the same
        labels and decision integers; the image is replaced by an 8-byte
        stamp (``"ECIL"`` and the container's CRC-32) that ``ec_model_open``
        checks, so nothing is verified at run time and no other image can be
        opened (``kinds`` must be ``"model"``). ``"arrays"``: the same, with
        the image's node arrays compiled in as constants and walked by one
        loop (the smallest form; slower than ``"inline"``).

    Returns
    -------
    dict
        ``dir``, ``target``, ``files`` (names written), ``kind``, ``sources``
        (the runtime's C files for this build), ``frame_width``,
        ``decision_len``, ``workspace_bytes``, ``trees``.

    Examples
    --------
    >>> import tempfile
    >>> from firmware_sim.naive_bayes import ProtectedNBDevice
    >>> dev = ProtectedNBDevice.from_arrays([2], -1, [1])
    >>> out = write_firmware(dev.container, tempfile.mkdtemp())
    >>> out["sources"], out["frame_width"], out["decision_len"]
    (['ec_container.c', 'ec_model.c', 'ec_quantize.c', 'ec_wire.c', 'ec_nb.c'], 3, 1)
    """
    t = _target(target)
    if kinds not in ("model", "all"):
        raise ValueError(f"kinds must be 'model' or 'all'; got {kinds!r}")
    if trees not in TREE_FORMS:
        raise ValueError(f"trees must be one of {TREE_FORMS}; got {trees!r}")
    if trees != "table" and kinds != "model":
        raise ValueError(f"trees={trees!r} builds one model's code: kinds must be 'model'")
    raw = _image_bytes(artifact)
    parsed = read_container(raw)
    if parsed.protect is not None:
        raise ValueError("the image is protected ('__protect__', issue 27) and the C runtime "
                         "does not decode image protection yet: write the firmware of the "
                         "unprotected image (docs/protection.md, 'Not done yet')")
    device = firmware_sim.load(parsed)
    inline = None
    if trees != "table":
        inline = device.c_inline(stamp(raw), "code" if trees == "inline" else "arrays")
        if inline is None:
            raise ValueError(f"kind {device.container.kind!r} has no inline form (its device "
                             f"class {type(device).__name__} has no c_inline code generator): "
                             "use trees='table'")
    if len(raw) > t.max_image_bytes:
        raise ValueError(f"the image ({len(raw):,} B) is too large for {t.name}: the AVR runtime "
                         f"reads it from the first 64 KB of flash (__flash, EC_ROM), at most "
                         f"{t.max_image_bytes:,} B with the vector table; see docs/firmware.md, "
                         "'AVR'")
    out = Path(out_dir)
    if atomic:
        from export.atomic import AtomicOutputs

        out.absolute().parent.mkdir(parents=True, exist_ok=True)
        with AtomicOutputs(dirs=[out]) as tmp:
            info = _write_files(raw, device, tmp[out], t, kinds, inline, trees)
        remove_stale_sources(out, info["sources"], info["files"])
        info["dir"] = str(out)
        return info
    out.mkdir(parents=True, exist_ok=True)
    return _write_files(raw, device, out, t, kinds, inline, trees)


def _write_files(raw, device, out, t, kinds, inline=None, trees="table"):
    kind = device.container.kind
    cls = _c_runtime(device)
    sources = runtime_sources(cls if kinds == "model" else None)
    if inline is not None:
        sources = list(INLINE_CORE_SOURCES)
    glue = t.glue()
    keep = {name for _, name in glue} | {t.image_source}
    for name in runtime_sources() + list(_TARGET_FILES):
        if name not in sources and name not in keep:
            (out / name).unlink(missing_ok=True)
    files = []
    for name in sources + list(RUNTIME_HEADERS):
        shutil.copyfile(_C_DIR / name, out / name)
        files.append(name)
    for src, name in glue:
        shutil.copyfile(_C_DIR / src, out / name)
        files.append(name)
    if inline is not None:
        (out / INLINE_SOURCE).write_text(inline)
        files.append(INLINE_SOURCE)
        (out / "ec_config.h").write_text(
            f"/* ec_config.h - generated by `edgecode firmware --trees {trees}`: the model is\n"
            f"   code ({INLINE_SOURCE}, {kind}); no kind of the runtime is compiled in (see\n"
            "   firmware_sim/c/ec_config.h). */\n"
            "#ifndef EC_CONFIG_H\n#define EC_CONFIG_H\n"
            "#ifndef EC_ALL_KINDS\n#define EC_ALL_KINDS 0\n#endif\n"
            "#define EC_INLINE_MODEL 1\n"
            "/* #define EC_WITH_FLOAT 1   (ec_quantize_float / ec_quantize_double) */\n"
            "#endif /* EC_CONFIG_H */\n")
    elif kinds == "model":
        macro = cls.c_switch
        own = "".join(f"#ifndef {k}\n#define {k} {int(v)}   /* this model's */\n#endif\n"
                      for k, v in device.c_defines().items())
        (out / "ec_config.h").write_text(
            "/* ec_config.h - the model kinds compiled in (generated by `edgecode firmware`:\n"
            f"   this firmware runs {kind} images only; see firmware_sim/c/ec_config.h). */\n"
            "#ifndef EC_CONFIG_H\n#define EC_CONFIG_H\n"
            "#ifndef EC_ALL_KINDS\n#define EC_ALL_KINDS 0\n#endif\n"
            f"#ifndef {macro}\n#define {macro} 1\n#endif\n"
            + own +
            "/* #define EC_WITH_FLOAT 1   (ec_quantize_float / ec_quantize_double) */\n"
            "#endif /* EC_CONFIG_H */\n")
    else:
        shutil.copyfile(_C_DIR / "ec_config.h", out / "ec_config.h")
    files.append("ec_config.h")
    if t.arm:
        (out / "probe_start.c").write_text(_PROBE_START)
        files.append("probe_start.c")
    image = raw if inline is None else stamp(raw)
    (out / t.image_source).write_text(_image_file(image, t))
    (out / "model_image.h").write_text(_MODEL_IMAGE_H.format(source=t.image_source))
    frame_width = int(device.frame_width)
    dlen = sum(int(width) for _, width in device.decision_layout())
    ws = int(device.workspace_bytes())
    (out / "model_config.h").write_text(
        "/* Sizes of this model (generated by `edgecode firmware`). */\n"
        "#ifndef EC_MODEL_CONFIG_H\n#define EC_MODEL_CONFIG_H\n"
        f"#define EC_MODEL_KIND {read_container(raw).kind.upper()}\n"
        f"#define EC_INPUT_WIDTH {int(device.n_features)}\n"
        f"#define EC_FRAME_WIDTH {frame_width}\n"
        f"#define EC_DECISION_LEN {dlen}\n"
        f"#define EC_WORKSPACE_BYTES {ws}\n"
        f"#define EC_IMAGE_BYTES {len(image)}\n"
        + ("#define EC_TREES_INLINE 1   /* the model is code: ec_inline.c */\n"
           if inline is not None else "") +
        "#endif\n")
    (out / "probe.c").write_text(_PROBE)
    files += [t.image_source, "model_image.h", "model_config.h", "probe.c"]
    (out / "Makefile").write_text(_makefile(t, sources + ([INLINE_SOURCE] if inline else [])))
    files.append("Makefile")
    return {"dir": str(out), "target": t.name, "files": files, "kind": kind,
            "sources": sources + ([INLINE_SOURCE] if inline is not None else []),
            "frame_width": frame_width, "decision_len": dlen, "workspace_bytes": ws,
            "trees": trees}


_MODEL_IMAGE_H = """\
/* model_image.h - the model image of this firmware (generated by `edgecode
   firmware`; defined in {source}): an edgecode container, 16-byte aligned,
   read in place (EC_ROM: in flash on AVR). Pass both to ec_model_open. */
#ifndef EC_MODEL_IMAGE_H
#define EC_MODEL_IMAGE_H
#include "edgecode_rt.h"
#ifdef __cplusplus
extern "C" {{
#endif
extern const EC_ROM uint8_t ec_model_image[];
extern const EC_ROM uint32_t ec_model_image_size;
#ifdef __cplusplus
}}
#endif
#endif /* EC_MODEL_IMAGE_H */
"""


def _image_file(raw, t):
    """The image as C (``const uint8_t`` array in ``.rodata``) or, on AVR, as
    assembler: ``.byte`` lines in a ``.progmem`` section (in flash below
    64 KB, where ``__flash`` reads it), with no limit on its size (one C
    array cannot exceed 32,767 bytes on AVR)."""
    n = len(raw)
    rows = [raw[i:i + 16] for i in range(0, n, 16)]
    if t.image_source.endswith(".c"):
        body = ",\n".join(", ".join(f"0x{b:02x}" for b in r) for r in rows)
        return ("/* The edgecode container, in place (generated by `edgecode firmware`). */\n"
                '#include "model_image.h"\n'
                f"__attribute__((aligned(16))) const EC_ROM uint8_t ec_model_image[{n}] = {{\n"
                f"{body}\n}};\n"
                f"const EC_ROM uint32_t ec_model_image_size = {n}u;\n")
    body = "\n".join("    .byte " + ",".join(f"0x{b:02x}" for b in r) for r in rows)
    return ("/* The edgecode container in flash (generated by `edgecode firmware`), read in\n"
            "   place through __flash pointers (EC_ROM); model_image.h declares it. */\n"
            '    .section .progmem.data.ec_model_image,"a",@progbits\n'
            "    .balign 16\n    .global ec_model_image\n    .type ec_model_image, @object\n"
            f"ec_model_image:\n{body}\n    .size ec_model_image, {n}\n"
            '    .section .progmem.data.ec_model_image_size,"a",@progbits\n'
            "    .balign 4\n    .global ec_model_image_size\n"
            "    .type ec_model_image_size, @object\n"
            f"ec_model_image_size:\n    .long {n}\n    .size ec_model_image_size, 4\n")


def _makefile(t, sources):
    """The folder's Makefile for ``t`` (what ``build_firmware`` does, by hand)."""
    import shlex

    here = Path(".")
    runner = "runner" + t.ext
    units = t.runner_units()
    runner_objs = "".join(f"\n{Path(src).stem}.o: CFLAGS += {' '.join(map(shlex.quote, fl))}\n"
                          for src, fl in units if fl)
    probe_units = t.probe_units()
    extra, extra_clean, run_note = "", "", ""
    harness = t.harness_command(here)
    if harness is not None:
        cmd = " ".join(harness[:-1]) + " build/ec_simavr"
        extra = (f"\nbuild/ec_simavr: ec_simavr.c\n\tmkdir -p build\n\t{cmd}\n\n"
                 f"run: {runner} build/ec_simavr\n"
                 f"\tbuild/ec_simavr {t.simavr} {t.clock_hz} {runner} counts.txt < frames.txt\n")
        extra_clean = "build/ec_simavr counts.txt"
        run_note = ("\n# `make run` runs the runner under simavr on frames.txt (counts.txt: "
                    "cycles, stack).")
    return _MAKEFILE.format(
        target=t.name, cc=t.cc, size=t.size_tool, std=t.std, opt=t.opt,
        cpu=" ".join(t.cpu_flags + tuple(f for f in t.compile_flags()
                                         if f not in t.cpu_flags and f != t.std)),
        runtime=" ".join(sources), image_obj=Path(t.image_source).stem + ".o",
        headers=" ".join(RUNTIME_HEADERS), runner=runner, ext=t.ext,
        runner_objs=runner_objs,
        runner_deps=" ".join(f"{Path(src).stem}.o" for src, _ in units),
        runner_link=" ".join(t.runner_link(here)),
        probe_deps=" ".join(["probe.o"] + [f"{Path(u).stem}.o" for u in probe_units]),
        probe_link=" ".join(t.probe_link(here)), probe_libs=" ".join(t.probe_libs()),
        probe_alias="probe: probe.elf\n\n" if t.ext else "", extra=extra,
        extra_clean=extra_clean, run_note=run_note)


def remove_stale_sources(out_dir, sources, files=None):
    """Remove from ``out_dir`` the runtime sources a rewrite no longer has (the
    other kinds' files: :func:`build_firmware` compiles every runtime source it
    finds) and, given the rewrite's ``files``, another target's generated
    files (``model_image.c`` after an AVR rewrite, ``startup.c``, ...).
    Returns the names removed."""
    gone = []
    stale = [n for n in runtime_sources() if n not in sources]
    if files is not None:
        stale += [n for n in _TARGET_FILES if n not in files]
    for name in stale:
        if (Path(out_dir) / name).is_file():
            (Path(out_dir) / name).unlink()
            gone.append(name)
    return gone


# --------------------------------------------------------------------------- part limits
def target_profile(target, profile=None):
    """The device profile a firmware for ``target`` is checked against: ``profile``
    (a name, a file or a :class:`~firmware_sim.profiles.DeviceProfile`) when
    given, else the target's built-in one (None for ``host`` and the targets
    no profile models yet: see :func:`target_limits`)."""
    from firmware_sim.profiles import get_profile

    if profile is not None:
        return get_profile(profile)
    name = _target(target).profile
    return None if name is None else get_profile(name)


def target_limits(target, profile=None):
    """What a build for ``target`` must fit: :func:`target_profile`, else the
    target's part (:class:`export.targets.Part`, the AVR parts), else None."""
    prof = target_profile(target, profile)
    return prof if prof is not None else _target(target).part


def _kb(n):
    return f"{n:,} B" if n < 10 * 1024 else f"{n / 1024:,.1f} KB"


def oversize(profile, flash_bytes, ram_bytes, *, measured=True):
    """None when ``flash_bytes`` and ``ram_bytes`` fit ``profile``'s part (a
    device profile or a target's :class:`~export.targets.Part`), else one
    sentence naming each limit exceeded and by what factor.

    >>> from firmware_sim.profiles import get_profile
    >>> oversize(get_profile("cortex-m0"), 729_600, 2_000)
    'flash 712.5 KB is 22.3x the 32.0 KB of profile cortex-m0 (Cortex-M0 class microcontroller, 48 MHz, 32 KB flash, 4 KB RAM, no FPU)'
    >>> oversize(get_profile("cortex-m0"), 1_000, 2_000) is None
    True
    >>> oversize(TARGETS["atmega328p"].part, 30_000, 2_500)
    'RAM 2,500 B is 1.2x the 2,048 B of part atmega328p (ATmega328P, the Arduino Uno: 32 KB flash, 2 KB RAM, 16 MHz)'
    """
    from export.targets import Part

    if profile is None:
        return None
    over = []
    for what, need, have in (("flash", int(flash_bytes), profile.flash_bytes),
                             ("RAM", int(ram_bytes), profile.ram_bytes)):
        if need > have:
            over.append(f"{what} {_kb(need)} is {need / have:.1f}x the {_kb(have)}")
    if not over:
        return None
    if isinstance(profile, Part):
        return " and ".join(over) + f" of part {profile.name} ({profile.description})"
    from firmware_sim.profiles import BUILTIN_PROFILES

    est = "" if measured else " (estimate: image + the runtime's measured code and stack)"
    desc = f" ({profile.description})" if BUILTIN_PROFILES.get(profile.name) is profile else ""
    return " and ".join(over) + f" of profile {profile.name}{desc}" + est


@dataclass
class FirmwareBuild:
    """What :func:`build_firmware` built and measured.

    Attributes
    ----------
    dir, target : str
    runner : str
        Path of the runner (``runner`` or ``runner.elf``).
    probe : str or None
        Path of the size probe (None for a sanitizer build).
    flash_bytes : int
        Probe's text + rodata + data (code, constants, the image, initial data).
    ram_bytes : int
        Probe's data + bss (workspace, frame, decision buffers) plus
        ``stack_bytes``.
    stack_bytes : int
        The probe's stack: the worst case of the call graph from ``main``
        (``-fstack-usage`` frames along ``-fcallgraph-info`` edges; calls
        into libgcc count 0); on AVR, whose GCC has no call graph output,
        the peak simavr measures running the probe on one all-zero frame (0
        when libsimavr is missing: ``stack_note`` says so).
    stack_note : str
        How ``stack_bytes`` was obtained.
    sections : dict
        Section sizes of the probe.
    compile_s : float
        Wall time of the parallel compile of every object (the probe's
        too when ``probe``) and the runner's link.
    """

    dir: str
    target: str
    runner: str
    probe: object
    flash_bytes: int = 0
    ram_bytes: int = 0
    stack_bytes: int = 0
    stack_note: str = "worst case of the call graph"
    sections: dict = field(default_factory=dict)
    compile_s: float = 0.0


def _run(cmd, cwd):
    res = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(f"build failed: {' '.join(cmd)}\n{res.stdout}{res.stderr}")
    return res


def build_firmware(out_dir, target="host", *, opt=None, sanitize=False, probe=True, jobs=None):
    """Compile the firmware written by :func:`write_firmware` and measure it.

    Every C file is compiled to its own object, ``jobs`` compilers at a time,
    in ``out_dir/build``; the runner and the size probe link the same
    runtime objects. On AVR the simavr harness (``build/ec_simavr``) is
    compiled with the host's ``gcc`` too when libsimavr is there.

    Parameters
    ----------
    out_dir : path
    target : str
        Must match the ``write_firmware`` target.
    opt : str, optional
        Optimisation flag (``-O0``, ``-O2``, ``-Os``); default the target's
        (``-Os`` on AVR, ``-O2`` elsewhere).
    sanitize : bool
        Host only: ``-fsanitize=address,undefined`` (no size probe then).
    probe : bool
        Also build the size probe and measure flash, RAM and stack.
    jobs : int, optional
        Compilers run at once (default: the CPUs this process may use).

    Returns
    -------
    FirmwareBuild

    Raises
    ------
    RuntimeError
        The toolchain is missing (the message names the Debian packages), the
        compiler failed (its output is in the message), or on AVR the image
        and the runtime's tables do not lie in the first 64 KB of flash.
    """
    t = _target(target)
    missing = toolchain_missing(target)
    if missing:
        raise RuntimeError(f"cannot build for {t.name}: {missing}")
    if sanitize and t.family != "host":
        raise ValueError("sanitizers run on the host target only")
    d = Path(out_dir).resolve()
    if not (d / "model_config.h").is_file():
        raise RuntimeError(f"{d} has no model_config.h: run write_firmware (or `edgecode "
                           "firmware ARTIFACT --out DIR`) first")
    if not (d / t.image_source).is_file():
        raise RuntimeError(f"{d} has no {t.image_source}: it was written for another target; "
                           f"run write_firmware for {t.name} first")
    probe = probe and not sanitize
    opt = t.opt if opt is None else opt
    sources = [n for n in runtime_sources() + [INLINE_SOURCE] if (d / n).is_file()] \
        + [t.image_source]
    cflags = _WARN + [opt] + t.compile_flags() + ["-include", "model_config.h", "-I", str(d),
                                                  "-ffunction-sections", "-fdata-sections"]
    if sanitize:
        cflags += ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-g"]
    callgraph = probe and t.family != "avr"          # avr-gcc 5.4 has no -fcallgraph-info
    if callgraph:
        cflags += ["-fstack-usage", "-fcallgraph-info=su"]
    bdir = d / "build"
    bdir.mkdir(exist_ok=True)
    for stale in bdir.glob("*"):
        if stale.suffix in (".o", ".su", ".ci"):
            stale.unlink()
    runner_units = t.runner_units()
    units = [(s, []) for s in sources] + runner_units
    if probe:
        units += [("probe.c", [])] + [(u, []) for u in t.probe_units()]

    def compile_one(unit):
        src, extra = unit
        obj = Path(src).stem + ".o"
        _run([t.cc] + cflags + extra + ["-c", str(d / src), "-o", obj], bdir)
        return obj

    runtime_objs = [Path(s).stem + ".o" for s in sources]
    runner = d / ("runner" + t.ext)
    harness = t.harness_command(d)
    if harness is not None and toolchain_missing(target, run=True) is not None:
        harness = None                                  # builds; runs need libsimavr
    t0 = time.perf_counter()
    workers = max(1, min(len(units) + (harness is not None), jobs or n_threads(-1)))
    with ThreadPoolExecutor(workers) as ex:
        compiled = [ex.submit(compile_one, u) for u in units]
        if harness is not None:
            compiled.append(ex.submit(_run, harness, bdir))
        for job in compiled:
            job.result()
    san = ["-fsanitize=address,undefined"] if sanitize else []
    _run([t.cc] + list(t.cpu_flags) + san + t.runner_link(d) + t.measure_link()
         + runtime_objs + [Path(src).stem + ".o" for src, _ in runner_units]
         + ["-o", str(runner)], bdir)
    compile_s = time.perf_counter() - t0
    out = FirmwareBuild(str(d), t.name, str(runner), None, compile_s=compile_s)
    if t.family == "avr":
        _check_low_flash(t, runner)
    if not probe:
        return out
    pname = bdir / ("probe" + t.ext)
    pobjs = runtime_objs + ["probe.o"] + [Path(u).stem + ".o" for u in t.probe_units()]
    _run([t.cc] + list(t.cpu_flags) + t.probe_link(d) + t.measure_link() + pobjs
         + t.probe_libs() + ["-o", str(pname)], bdir)
    sections = _sections(t.size_tool, pname)
    flash = int(t.flash_sections(sections))
    if t.family == "avr":
        _check_low_flash(t, pname)
        if flash > t.part.flash_bytes:
            stack = 0
            out.stack_note = "not measured: the probe does not fit the part's flash"
        elif harness is not None:
            stack = _measure(t, d, ["--probe"], "probe.elf", bdir)["stack_peak"]
            out.stack_note = "peak under simavr, one all-zero frame"
        else:
            stack = 0
            out.stack_note = ("not measured: " + toolchain_missing(target, run=True)
                              + " (simavr measures it)")
    else:
        stack = _worst_stack([bdir / (Path(o).stem + ".ci") for o in pobjs], "main")
    ram = (sections.get(".data", 0) + sections.get(".bss", 0)
           if t.family in ("host", "arm") else t.ram_sections(sections)) + stack
    out.probe = str(pname)
    out.flash_bytes = flash
    out.ram_bytes, out.stack_bytes = int(ram), int(stack)
    out.sections = sections
    return out


def _check_low_flash(t, elf):
    """AVR: __flash reads the first 64 KB of flash; the linker puts every
    ``.progmem`` section (the image, the runtime's tables) before
    ``__ctors_start``, which must not pass 64 KB (a larger image, on the
    ATmega2560, would be read wrong: refuse it)."""
    res = _run(["avr-nm", str(elf)], Path(elf).parent)
    for line in res.stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2] == "__ctors_start":
            end = int(parts[0], 16)
            if end > 0x10000:
                raise RuntimeError(
                    f"{t.name}: the image and the runtime's tables end at byte {end:,} of "
                    "flash, beyond the first 64 KB that __flash reads (EC_ROM): this image "
                    "is too large for the AVR runtime (docs/firmware.md, 'AVR')")
            return


def _measure(t, d, flags, elf, cwd, stdin=""):
    """Run the simavr harness with a report file; the report as a dict."""
    report = Path(cwd) / (Path(elf).stem + ".report")
    cmd = [str(d / "build" / "ec_simavr")] + flags + [t.simavr, str(t.clock_hz), str(elf),
                                                      str(report)]
    res = subprocess.run(cmd, cwd=cwd, input=stdin, capture_output=True, text=True, timeout=600)
    if res.returncode != 0:
        raise RuntimeError(f"simavr run failed (exit {res.returncode}): "
                           f"{(res.stdout + res.stderr).strip()[:2000]}")
    return _parse_counts(report.read_text())


def _parse_counts(text):
    """``key value...`` lines (the harness's report, the RV32 runner's
    counts.txt): ints, lists of ints (``infer_*``) or strings."""
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        key, vals = parts[0], parts[1:]
        if key.startswith("infer_"):
            out[key] = np.array([int(v) for v in vals], np.int64)
        elif len(vals) == 1 and vals[0].lstrip("-").isdigit():
            out[key] = int(vals[0])
        else:
            out[key] = " ".join(vals)
    return out


def _sections(size_tool, path):
    res = _run([size_tool, "-A", str(path)], Path(path).parent)
    out = {}
    for line in res.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0].startswith(".") and parts[1].isdigit():
            out[parts[0]] = out.get(parts[0], 0) + int(parts[1])
    return out


_NODE = re.compile(r'node:\s*\{\s*title:\s*"([^"]+)"\s*label:\s*"([^"]*)"')
_EDGE = re.compile(r'edge:\s*\{\s*sourcename:\s*"([^"]+)"\s*targetname:\s*"([^"]+)"')
_BYTES = re.compile(r"(\d+) bytes \((static|dynamic|bounded)")


_INDIRECT = "__indirect_call"


def _worst_stack(callgraphs, root):
    """Largest sum of stack frames along a call path from ``root`` (the
    ``.ci`` call graphs of ``-fcallgraph-info=su``: a directory's, or a list of
    files; no recursion in the runtime).

    A call through a pointer (the runtime dispatches through each kind's
    operations table) is GCC's edge to ``__indirect_call``; it counts as the
    deepest of the functions that may be its target: every function no
    function calls directly and that makes no indirect call itself (the
    table's operations, and unused API functions: an over-estimate at worst).
    """
    frame, edges = {}, {}
    files = (sorted(Path(callgraphs).glob("*.ci")) if isinstance(callgraphs, (str, Path))
             else [Path(c) for c in callgraphs])
    for ci in files:
        text = ci.read_text(errors="replace")
        for title, label in _NODE.findall(text):
            m = _BYTES.search(label)
            if m:
                frame[title] = max(frame.get(title, 0), int(m.group(1)))
        for a, b in _EDGE.findall(text):
            edges.setdefault(a, set()).add(b)
    called = {b for targets in edges.values() for b in targets}
    reach = {}

    def indirect(f, seen=()):
        """Does f reach an indirect call (through direct calls)?"""
        if f not in reach:
            reach[f] = any(g == _INDIRECT or (g not in seen and indirect(g, seen + (f,)))
                           for g in edges.get(f, ()))
        return reach[f]

    targets = [f for f in frame if f != root and f not in called and not indirect(f)]
    memo, busy = {}, set()

    def depth(f):
        if f in memo:
            return memo[f]
        if f in busy:
            raise RuntimeError(f"recursion through {f}: no worst-case stack")
        busy.add(f)
        callees = targets if f == _INDIRECT else edges.get(f, ())
        best = max((depth(g) for g in callees), default=0)
        busy.discard(f)
        memo[f] = frame.get(f, 0) + best
        return memo[f]

    return depth(root) if root in frame or root in edges else 0


def _frames_text(frames):
    a = np.asarray(frames)
    if a.ndim != 2:
        raise ValueError(f"frames must be 2-dimensional; got shape {a.shape}")
    return "".join(" ".join(str(int(v)) for v in row) + "\n" for row in a)


@dataclass
class FirmwareRun:
    """What :func:`run_firmware_measured` got from the runner.

    Attributes
    ----------
    labels, decisions : ndarray
        int64, shapes (t,) and (t, decision_len): the runner's lines.
    target : str
    unit : str or None
        ``"cycles"`` (AVR under simavr: exact, the datasheet's cycles per
        instruction), ``"instructions"`` (RV32 under QEMU ``-icount``:
        instructions executed) or None (no counts on this target).
    open_count : int or None
        ``unit`` of the ``ec_model_open`` call.
    infer_counts : ndarray or None
        ``unit`` of each ``ec_infer`` call, one per frame.
    open_stack, stack_peak : int or None
        AVR: bytes of stack the open used (its return address included) and
        the whole run's peak (the runner's ``main`` and start-up included).
    infer_stack : ndarray or None
        AVR: bytes of stack of each inference.
    clock_hz : int or None
        The clock that turns cycles into time (AVR: 16 MHz).
    """

    labels: np.ndarray
    decisions: np.ndarray
    target: str
    unit: str = None
    open_count: int = None
    infer_counts: np.ndarray = None
    open_stack: int = None
    infer_stack: np.ndarray = None
    stack_peak: int = None
    clock_hz: int = None

    def summary(self):
        """One line: the open's and the inferences' counts (and the stack), or
        None when the target counts nothing.

        >>> r = FirmwareRun(np.zeros(3), np.zeros((3, 1)), "atmega328p", "cycles", 122271,
        ...                 np.array([5229, 5177, 5189]), 135, np.array([62, 62, 62]), 156,
        ...                 16_000_000)
        >>> print(r.summary())
        cycles on atmega328p (simavr, exact, 16 MHz): open 122,271 (7.642 ms); inference median 5,189 (0.324 ms), min 5,177, max 5,229 over 3 frames; stack: open 135 B, inference 62 B, whole run 156 B
        """
        if self.unit is None or self.infer_counts is None:
            return None
        c = np.asarray(self.infer_counts)
        if self.unit == "cycles":
            how = f"simavr, exact, {self.clock_hz / 1e6:g} MHz"
        else:
            how = "qemu-system-riscv32 -icount, instructions executed"

        def ms(n):
            return f" ({1000 * n / self.clock_hz:.3f} ms)" if self.clock_hz else ""
        line = (f"{self.unit} on {self.target} ({how}): open {self.open_count:,}"
                f"{ms(self.open_count)}")
        if c.size:
            med = int(np.median(c))
            line += (f"; inference median {med:,}{ms(med)}, min {int(c.min()):,}, "
                     f"max {int(c.max()):,} over {c.size} frames")
        if self.stack_peak is not None:
            inf = f", inference {int(np.max(self.infer_stack))} B" if c.size else ""
            line += (f"; stack: open {self.open_stack} B{inf}, whole run {self.stack_peak} B")
        return line


def run_firmware(out_dir, frames, target="host", timeout=600):
    """Run the built runner on frames; return ``(labels, decisions)`` as int64
    arrays, shapes (t,) and (t, decision_len).

    The host runner reads the frames on stdin. Under QEMU (Cortex-M3/M4,
    RV32) the runner reads ``frames.txt`` from the directory through
    semihosting (QEMU 7's semihosting console gives the guest no stdin) and
    prints on the semihosting console; on AVR the simavr harness feeds them
    (``build/ec_simavr``). :func:`run_firmware_measured` also returns the
    counts.
    """
    r = run_firmware_measured(out_dir, frames, target, timeout=timeout)
    return r.labels, r.decisions


def run_firmware_measured(out_dir, frames, target="host", timeout=600):
    """Run the built runner on frames: a :class:`FirmwareRun` with the labels,
    the decision integers and, where the target counts them, the cycles (AVR,
    exact) or instructions (RV32) of the open and of every inference, and on
    AVR their stack."""
    t = _target(target)
    d = Path(out_dir).resolve()
    text = _frames_text(frames)
    n = len(np.asarray(frames))
    cmd = t.run_command(d)
    if cmd is None:
        res = subprocess.run([str(d / "runner")], cwd=d, input=text, capture_output=True,
                             text=True, timeout=timeout)
        labels, dec = _parse_runner(res, n)
        return FirmwareRun(labels, dec, t.name)
    if not t.runs:
        raise ValueError(f"no emulator for {t.name}: build only")
    missing = toolchain_missing(target, run=True)
    if missing:
        raise RuntimeError(f"cannot run {t.name}: {missing}")
    if t.simavr is not None:
        if not Path(cmd[0]).is_file():
            raise RuntimeError(f"{d} has no simavr harness build/ec_simavr: run "
                               f"build_firmware for {t.name} first")
        flash = t.flash_sections(_sections(t.size_tool, d / "runner.elf"))
        if flash > t.part.flash_bytes:
            raise RuntimeError(
                f"{t.name}: the runner ({flash:,} B of flash: the size probe plus the code "
                f"that talks to the simavr harness) does not fit the part's "
                f"{t.part.flash_bytes:,} B, so simavr cannot run it; check a smaller model, "
                "or this one on a larger part (atmega2560)")
    counts = d / "counts.txt"
    counts.unlink(missing_ok=True)
    if t.simavr is None:
        (d / "frames.txt").write_text(text)
        res = subprocess.run(cmd, cwd=d, capture_output=True, text=True, timeout=timeout)
    else:
        res = subprocess.run(cmd, cwd=d, input=text, capture_output=True, text=True,
                             timeout=timeout)
    labels, dec = _parse_runner(res, n)
    run = FirmwareRun(labels, dec, t.name, t.counts, clock_hz=t.clock_hz)
    if t.counts is not None and counts.is_file():
        c = _parse_counts(counts.read_text())
        key = "cycles" if t.counts == "cycles" else "instructions"
        run.open_count = c.get(f"open_{key}")
        run.infer_counts = c.get(f"infer_{key}")
        if t.simavr is not None:
            run.open_stack, run.infer_stack = c.get("open_stack"), c.get("infer_stack")
            run.stack_peak = c.get("stack_peak")
    return run


def _parse_runner(res, t):
    lines = [ln for ln in res.stdout.splitlines() if ln.strip()]
    if res.returncode != 0 or any(ln.startswith("error") for ln in lines):
        raise RuntimeError(f"runner failed (exit {res.returncode}): "
                           f"{(res.stdout + res.stderr).strip()[:2000]}")
    if len(lines) != t:
        raise RuntimeError(f"runner printed {len(lines)} lines for {t} frames: "
                           f"{res.stdout[:500]}{res.stderr[:500]}")
    rows = [np.array(ln.split(), dtype=np.int64) for ln in lines]
    width = {r.size for r in rows}
    if len(width) != 1:
        raise RuntimeError(f"runner lines of different lengths: {sorted(width)}")
    arr = np.vstack(rows)
    return arr[:, 0], arr[:, 1:]


def check_images(runner, images):
    """Run ``runner --check-list`` (host) over many images in one process:
    a list of (accepted, message), one per image."""
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for i, img in enumerate(images):
            p = Path(tmp) / f"m{i}.edgc"
            p.write_bytes(bytes(img))
            paths.append(str(p))
        (Path(tmp) / "list.txt").write_text("\n".join(paths) + "\n")
        res = subprocess.run([str(runner), "--check-list", str(Path(tmp) / "list.txt")],
                             capture_output=True, text=True, timeout=600)
    lines = [ln.strip() for ln in res.stdout.splitlines() if ln.strip()]
    if res.returncode != 0 or len(lines) != len(paths):
        raise RuntimeError(f"runner --check-list failed (exit {res.returncode}, "
                           f"{len(lines)} verdicts for {len(paths)} images): "
                           f"{(res.stdout[-300:] + res.stderr[-1500:]).strip()}")
    return [(ln == "ok", ln) for ln in lines]
