"""Real firmware: the portable C99 runtime, generated, built and run.

:func:`write_firmware` writes a directory that a microcontroller project can
use as it is: the runtime (``firmware_sim/c/*.c``, ``edgecode_rt.h``: no
malloc, no floating point on the inference path, only ``<stdint.h>`` and
``<stddef.h>``), the artifact as a 16-byte-aligned ``const uint8_t`` array
(``model_image.c``), a ``model_config.h`` with the sizes the model needs, a
test runner (``runner.c``), a size probe (``probe.c``) and a Makefile.
:func:`build_firmware` compiles it with ``gcc`` (host) or
``arm-none-eabi-gcc`` (Cortex-M) and measures the real flash (text + rodata
+ data) and RAM (data + bss + the worst-case stack of the call graph from
``-fstack-usage``/``-fcallgraph-info``) of the probe, the smallest firmware
that opens the image and runs one inference. :func:`run_firmware` feeds
frames (rows of ``device.encode(X)``) to the runner, on the host or on
Cortex-M under ``qemu-system-arm``, and parses one line per frame: the
label, then the decision integers ``device.infer`` returns.

The C runtime implements the device contract of ``firmware_sim`` bit for
bit (``tests/test_firmware.py``); ``docs/firmware.md`` says how to drop the
files into an MCU project.
"""

import os
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
from firmware_sim._parallel import n_threads
from firmware_sim.artifact import Container, read_container

__all__ = ["TARGETS", "write_firmware", "build_firmware", "run_firmware", "toolchain_missing",
           "FirmwareBuild", "decision_integers", "RUNTIME_SOURCES", "RUNTIME_HEADERS",
           "remove_stale_sources",
           "target_profile", "oversize"]

#: The C sources of the runtime (``firmware_sim/c``), in link order.
RUNTIME_SOURCES = ("ec_container.c", "ec_model.c", "ec_quantize.c", "ec_nb.c", "ec_ecoc.c",
                   "ec_ssbc.c")
#: Its headers: the API, what a kind implements, the kind table.
RUNTIME_HEADERS = ("edgecode_rt.h", "ec_kind.h", "ec_kinds.h")

#: The source file and ``ec_config.h`` switch of each model kind.
KIND_SOURCES = {"protected_nb": ("ec_nb.c", "EC_WITH_NB"), "ecoc": ("ec_ecoc.c", "EC_WITH_ECOC"),
                "ssbc": ("ec_ssbc.c", "EC_WITH_SSBC")}

_C_DIR = Path(firmware_sim.__file__).resolve().parent / "c"

_WARN = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"]


@dataclass(frozen=True)
class Target:
    """A build target: compiler, CPU flags and (for Cortex-M) a QEMU machine."""

    name: str
    cc: str
    cpu_flags: tuple = ()
    qemu: tuple = None          # (machine, cpu) or None: no emulator for this target
    profile: str = None         # firmware_sim profile whose estimate is printed beside

    @property
    def arm(self):
        return self.cc.startswith("arm-")

    @property
    def size_tool(self):
        return "arm-none-eabi-size" if self.arm else "size"


#: Build targets of ``edgecode firmware --target``.
TARGETS = {
    "host": Target("host", "gcc", (), None, None),
    "cortex-m0plus": Target("cortex-m0plus", "arm-none-eabi-gcc",
                            ("-mcpu=cortex-m0plus", "-mthumb"), None, "cortex-m0"),
    "cortex-m3": Target("cortex-m3", "arm-none-eabi-gcc", ("-mcpu=cortex-m3", "-mthumb"),
                        ("mps2-an385", "cortex-m3"), "cortex-m0"),
    "cortex-m4": Target("cortex-m4", "arm-none-eabi-gcc",
                        ("-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=soft"),
                        ("mps2-an386", "cortex-m4"), "cortex-m4"),
}


def _target(name):
    if name not in TARGETS:
        raise ValueError(f"unknown target {name!r}; known: {sorted(TARGETS)}")
    return TARGETS[name]


def toolchain_missing(target="host", run=False):
    """None when the tools to build (and, with ``run``, to run) ``target`` are on
    PATH, else a sentence naming what is missing and the Debian package."""
    t = _target(target)
    need = [(t.cc, "gcc" if not t.arm else "gcc-arm-none-eabi")]
    if t.arm:
        need.append(("arm-none-eabi-size", "binutils-arm-none-eabi"))
    else:
        need.append(("size", "binutils"))
    if run and t.qemu is not None:
        need.append(("qemu-system-arm", "qemu-system-arm"))
    if run and t.arm and t.qemu is None:
        return f"no emulator for {t.name} (build only)"
    missing = [f"{tool} (Debian package {pkg})" for tool, pkg in need if shutil.which(tool) is None]
    if t.arm and not missing:
        probe = subprocess.run([t.cc, "-print-file-name=librdimon.a"], capture_output=True,
                               text=True)
        if probe.returncode != 0 or not os.path.isabs(probe.stdout.strip()):
            missing.append("newlib's librdimon (Debian package libnewlib-arm-none-eabi)")
    return ("missing: " + ", ".join(missing)) if missing else None


def _image_bytes(artifact):
    if isinstance(artifact, Container):
        return artifact.tobytes()
    if isinstance(artifact, (bytes, bytearray)):
        return bytes(artifact)
    with open(artifact, "rb") as fh:
        return fh.read()


def _workspace_bytes(device):
    """Upper bound of ``ec_workspace_bytes`` for the generated ``model_config.h``
    (the runner refuses to run if the runtime asks for more)."""
    kind = device.container.kind
    if kind == "ssbc":
        extra = 0
        if device.has_table:
            extra = 16 * device.knn_k + 8 * device.n_classes + 16
        return 8 * device.n_bits + extra + 64
    if kind == "ecoc":
        return 8 * (device.n_columns + device.n_classes) + 64
    return 64


def decision_integers(device, frames):
    """The runner's expected output: (labels, decision rows) of ``device.infer``,
    in the C runtime's order (NB: accumulator; ECOC: symbols then doubled
    distances; SSBC: code bits then, with a table, the nearest distance;
    label -1 where the device computes no label)."""
    inf = device.infer(frames)
    t = np.asarray(frames).shape[0]
    labels = np.full(t, -1, np.int64) if inf.labels is None else np.asarray(inf.labels, np.int64)
    kind = device.container.kind
    if kind == "protected_nb":
        parts = [inf.decision["accumulator"][:, None]]
    elif kind == "ecoc":
        parts = [inf.decision["symbols"], inf.decision["distances"]]
    else:
        parts = [inf.decision["code_bits"]]
        if "nearest_distance" in inf.decision:
            parts.append(inf.decision["nearest_distance"][:, None])
    return labels, np.hstack([np.asarray(p, np.int64).reshape(t, -1) for p in parts])


_MAKEFILE = """\
# Generated by `edgecode firmware` ({target}). `make` (or `make -j`) builds
# {runner}; `make probe` the size probe (the smallest firmware that opens the
# image and runs one inference); `make size` prints its sections.
CC = {cc}
SIZE = {size}
CFLAGS = -std=c99 -Wall -Wextra -pedantic -O2 -ffunction-sections -fdata-sections {cpu} -include model_config.h
RUNTIME = {runtime}
OBJS = $(RUNTIME:.c=.o) model_image.o

all: {runner}

%.o: %.c edgecode_rt.h ec_kind.h ec_kinds.h ec_config.h model_config.h
\t$(CC) $(CFLAGS) -c $< -o $@
{runner_objs}
{runner}: $(OBJS) {runner_deps}
\t$(CC) $(CFLAGS) {runner_link} $^ -o $@

probe{ext}: $(OBJS) {probe_deps}
\t$(CC) $(CFLAGS) -Wl,--gc-sections {probe_link} $^ -o $@ {probe_libs}

{probe_alias}size: probe{ext}
\t$(SIZE) -A probe{ext}

clean:
\trm -f {runner} probe{ext} *.o *.su *.ci

.PHONY: all probe size clean
"""

_PROBE = """\
/* Size probe: open the image in place and run one inference (what a device
   firmware needs at least). Generated by `edgecode firmware`. */
#include "edgecode_rt.h"
#include "model_config.h"

extern const uint8_t ec_model_image[];
extern const uint32_t ec_model_image_size;

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


def write_firmware(artifact, out_dir, target="host", *, kinds="model", atomic=True):
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
        ``cortex-m4``).
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

    Returns
    -------
    dict
        ``dir``, ``target``, ``files`` (names written), ``kind``, ``sources``
        (the runtime's C files for this build), ``frame_width``,
        ``decision_len``, ``workspace_bytes``.

    Examples
    --------
    >>> import tempfile
    >>> from firmware_sim.naive_bayes import ProtectedNBDevice
    >>> dev = ProtectedNBDevice.from_arrays([2], -1, [1])
    >>> out = write_firmware(dev.container, tempfile.mkdtemp())
    >>> out["sources"], out["frame_width"], out["decision_len"]
    (['ec_container.c', 'ec_model.c', 'ec_quantize.c', 'ec_nb.c'], 3, 1)
    """
    t = _target(target)
    if kinds not in ("model", "all"):
        raise ValueError(f"kinds must be 'model' or 'all'; got {kinds!r}")
    raw = _image_bytes(artifact)
    device = firmware_sim.load(read_container(raw))
    out = Path(out_dir)
    if atomic:
        from export.atomic import AtomicOutputs

        out.absolute().parent.mkdir(parents=True, exist_ok=True)
        with AtomicOutputs(dirs=[out]) as tmp:
            info = _write_files(raw, device, tmp[out], t, kinds)
        remove_stale_sources(out, info["sources"])
        info["dir"] = str(out)
        return info
    out.mkdir(parents=True, exist_ok=True)
    return _write_files(raw, device, out, t, kinds)


def _write_files(raw, device, out, t, kinds):
    kind = device.container.kind
    sources = _runtime_sources(kind if kinds == "model" else None)
    for name in RUNTIME_SOURCES:
        if name not in sources:
            (out / name).unlink(missing_ok=True)
    files = []
    for name in sources + list(RUNTIME_HEADERS) + ["runner.c"]:
        shutil.copyfile(_C_DIR / name, out / name)
        files.append(name)
    if kinds == "model":
        macro = KIND_SOURCES[kind][1]
        (out / "ec_config.h").write_text(
            "/* ec_config.h - the model kinds compiled in (generated by `edgecode firmware`:\n"
            f"   this firmware runs {kind} images only; see firmware_sim/c/ec_config.h). */\n"
            "#ifndef EC_CONFIG_H\n#define EC_CONFIG_H\n"
            "#ifndef EC_ALL_KINDS\n#define EC_ALL_KINDS 0\n#endif\n"
            f"#ifndef {macro}\n#define {macro} 1\n#endif\n"
            "/* #define EC_WITH_FLOAT 1   (ec_quantize_float / ec_quantize_double) */\n"
            "#endif /* EC_CONFIG_H */\n")
    else:
        shutil.copyfile(_C_DIR / "ec_config.h", out / "ec_config.h")
    files.append("ec_config.h")
    if t.arm:
        for name in ("startup.c", "link.ld"):
            shutil.copyfile(_C_DIR / "arm" / name, out / name)
            files.append(name)
        (out / "probe_start.c").write_text(_PROBE_START)
        files.append("probe_start.c")
    body = ",\n".join(", ".join(f"0x{b:02x}" for b in raw[i:i + 16])
                      for i in range(0, len(raw), 16))
    (out / "model_image.c").write_text(
        "/* The edgecode container, in place (generated by `edgecode firmware`). */\n"
        "#include <stdint.h>\n"
        f"__attribute__((aligned(16))) const uint8_t ec_model_image[{len(raw)}] = {{\n"
        f"{body}\n}};\n"
        f"const uint32_t ec_model_image_size = {len(raw)}u;\n")
    frame_width = int(device.frame_width)
    dlen = _decision_len(device)
    ws = _workspace_bytes(device)
    (out / "model_config.h").write_text(
        "/* Sizes of this model (generated by `edgecode firmware`). */\n"
        "#ifndef EC_MODEL_CONFIG_H\n#define EC_MODEL_CONFIG_H\n"
        f"#define EC_MODEL_KIND {read_container(raw).kind.upper()}\n"
        f"#define EC_INPUT_WIDTH {int(device.n_features)}\n"
        f"#define EC_FRAME_WIDTH {frame_width}\n"
        f"#define EC_DECISION_LEN {dlen}\n"
        f"#define EC_WORKSPACE_BYTES {ws}\n"
        f"#define EC_IMAGE_BYTES {len(raw)}\n"
        "#endif\n")
    (out / "probe.c").write_text(_PROBE)
    files += ["model_image.c", "model_config.h", "probe.c"]
    ext = ".elf" if t.arm else ""
    runner = "runner" + ext
    (out / "Makefile").write_text(_MAKEFILE.format(
        target=t.name, cc=t.cc, size=t.size_tool, cpu=" ".join(t.cpu_flags),
        runtime=" ".join(sources), runner=runner, ext=ext,
        runner_objs=("\nrunner.o: CFLAGS += --specs=rdimon.specs -DEC_NO_ARGS "
                     "-DEC_FRAMES_FILE='\"frames.txt\"'\n" if t.arm else ""),
        runner_deps="runner.o" + (" startup.o" if t.arm else ""),
        runner_link="-T link.ld -nostartfiles --specs=rdimon.specs" if t.arm else "",
        probe_deps="probe.o" + (" probe_start.o" if t.arm else ""),
        probe_link="-T link.ld -nostartfiles -nostdlib" if t.arm else "",
        probe_libs="-lgcc" if t.arm else "",
        probe_alias="probe: probe.elf\n\n" if t.arm else ""))
    files.append("Makefile")
    return {"dir": str(out), "target": t.name, "files": files, "kind": kind,
            "sources": sources, "frame_width": frame_width, "decision_len": dlen,
            "workspace_bytes": ws}


def remove_stale_sources(out_dir, sources):
    """Remove from ``out_dir`` the runtime sources a rewrite no longer has (the
    other kinds' files: :func:`build_firmware` compiles every runtime source it
    finds). Returns the names removed."""
    gone = []
    for name in RUNTIME_SOURCES:
        if name not in sources and (Path(out_dir) / name).is_file():
            (Path(out_dir) / name).unlink()
            gone.append(name)
    return gone


# --------------------------------------------------------------------------- part limits
def target_profile(target, profile=None):
    """The device profile a firmware for ``target`` is checked against: ``profile``
    (a name, a file or a :class:`~firmware_sim.profiles.DeviceProfile`) when
    given, else the target's built-in one (None for ``host``)."""
    from firmware_sim.profiles import get_profile

    if profile is not None:
        return get_profile(profile)
    name = _target(target).profile
    return None if name is None else get_profile(name)


def _kb(n):
    return f"{n:,} B" if n < 10 * 1024 else f"{n / 1024:,.1f} KB"


def oversize(profile, flash_bytes, ram_bytes, *, measured=True):
    """None when ``flash_bytes`` and ``ram_bytes`` fit ``profile``'s part, else one
    sentence naming each limit exceeded and by what factor.

    >>> from firmware_sim.profiles import get_profile
    >>> oversize(get_profile("cortex-m0"), 729_600, 2_000)
    'flash 712.5 KB is 22.3x the 32.0 KB of profile cortex-m0 (Cortex-M0 class microcontroller, 48 MHz, 32 KB flash, 4 KB RAM, no FPU)'
    >>> oversize(get_profile("cortex-m0"), 1_000, 2_000) is None
    True
    """
    if profile is None:
        return None
    over = []
    for what, need, have in (("flash", int(flash_bytes), profile.flash_bytes),
                             ("RAM", int(ram_bytes), profile.ram_bytes)):
        if need > have:
            over.append(f"{what} {_kb(need)} is {need / have:.1f}x the {_kb(have)}")
    if not over:
        return None
    from firmware_sim.profiles import BUILTIN_PROFILES

    est = "" if measured else " (estimate: image + the runtime's measured code and stack)"
    desc = f" ({profile.description})" if BUILTIN_PROFILES.get(profile.name) is profile else ""
    return " and ".join(over) + f" of profile {profile.name}{desc}" + est


def _runtime_sources(kind=None):
    """The runtime's C files for one kind (None: every kind), in link order."""
    if kind is None:
        return list(RUNTIME_SOURCES)
    return ["ec_container.c", "ec_model.c", "ec_quantize.c", KIND_SOURCES[kind][0]]


def _decision_len(device):
    kind = device.container.kind
    if kind == "protected_nb":
        return 1
    if kind == "ecoc":
        return device.n_columns + device.n_classes
    return device.n_bits + (1 if device.has_table else 0)


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
        Worst-case stack of the call graph from ``main`` (``-fstack-usage``
        frames along ``-fcallgraph-info`` edges; calls into libgcc count 0).
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
    sections: dict = field(default_factory=dict)
    compile_s: float = 0.0


def _run(cmd, cwd):
    res = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(f"build failed: {' '.join(cmd)}\n{res.stdout}{res.stderr}")
    return res


def build_firmware(out_dir, target="host", *, opt="-O2", sanitize=False, probe=True, jobs=None):
    """Compile the firmware written by :func:`write_firmware` and measure it.

    Every C file is compiled to its own object, ``jobs`` compilers at a time,
    in ``out_dir/build``; the runner and the size probe link the same
    runtime objects.

    Parameters
    ----------
    out_dir : path
    target : str
        Must match the ``write_firmware`` target.
    opt : str
        Optimisation flag (``-O0``, ``-O2``, ``-Os``).
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
        The toolchain is missing (the message names the Debian packages) or
        the compiler failed (its output is in the message).
    """
    t = _target(target)
    missing = toolchain_missing(target)
    if missing:
        raise RuntimeError(f"cannot build for {t.name}: {missing}")
    if sanitize and t.arm:
        raise ValueError("sanitizers run on the host target only")
    d = Path(out_dir).resolve()
    if not (d / "model_config.h").is_file():
        raise RuntimeError(f"{d} has no model_config.h: run write_firmware (or `edgecode "
                           "firmware ARTIFACT --out DIR`) first")
    probe = probe and not sanitize
    sources = [n for n in RUNTIME_SOURCES if (d / n).is_file()] + ["model_image.c"]
    cflags = _WARN + [opt] + list(t.cpu_flags) + ["-include", "model_config.h", "-I", str(d),
                                                  "-ffunction-sections", "-fdata-sections"]
    if sanitize:
        cflags += ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-g"]
    if probe:
        cflags += ["-fstack-usage", "-fcallgraph-info=su"]
    if t.arm:
        cflags.append("-fno-tree-loop-distribute-patterns")   # no memset from memset
    runner_flags = ["--specs=rdimon.specs", "-DEC_NO_ARGS",
                    "-DEC_FRAMES_FILE=\"frames.txt\""] if t.arm else []
    bdir = d / "build"
    bdir.mkdir(exist_ok=True)
    for stale in bdir.glob("*"):
        if stale.suffix in (".o", ".su", ".ci"):
            stale.unlink()
    units = [(s, []) for s in sources] + [("runner.c", runner_flags)]
    if t.arm:
        units.append(("startup.c", ["--specs=rdimon.specs"]))
    if probe:
        units.append(("probe.c", []))
        if t.arm:
            units.append(("probe_start.c", []))

    def compile_one(unit):
        src, extra = unit
        obj = Path(src).stem + ".o"
        _run([t.cc] + cflags + extra + ["-c", str(d / src), "-o", obj], bdir)
        return obj

    runtime_objs = [Path(s).stem + ".o" for s in sources]
    ext = ".elf" if t.arm else ""
    runner = d / ("runner" + ext)
    t0 = time.perf_counter()
    workers = max(1, min(len(units), jobs or n_threads(-1)))
    with ThreadPoolExecutor(workers) as ex:
        list(ex.map(compile_one, units))
    link = ["-T", str(d / "link.ld"), "-nostartfiles", "--specs=rdimon.specs"] if t.arm else []
    san = ["-fsanitize=address,undefined"] if sanitize else []
    _run([t.cc] + list(t.cpu_flags) + san + link + runtime_objs + ["runner.o"]
         + (["startup.o"] if t.arm else []) + ["-o", str(runner)], bdir)
    compile_s = time.perf_counter() - t0
    out = FirmwareBuild(str(d), t.name, str(runner), None, compile_s=compile_s)
    if not probe:
        return out
    pname = bdir / ("probe" + ext)
    lflags = ["-Wl,--gc-sections"]
    if t.arm:
        lflags += ["-T", str(d / "link.ld"), "-nostartfiles", "-nostdlib"]
    pobjs = runtime_objs + ["probe.o"] + (["probe_start.o"] if t.arm else [])
    _run([t.cc] + list(t.cpu_flags) + lflags + pobjs + (["-lgcc"] if t.arm else [])
         + ["-o", str(pname)], bdir)
    sections = _sections(t.size_tool, pname)
    flash = sum(v for k, v in sections.items()
                if k in (".text", ".rodata", ".data", ".ARM.exidx", ".vectors"))
    if not t.arm:
        flash = sum(v for k, v in sections.items() if k.startswith((".text", ".rodata", ".data")))
    stack = _worst_stack([bdir / (Path(o).stem + ".ci") for o in pobjs], "main")
    ram = sections.get(".data", 0) + sections.get(".bss", 0) + stack
    out.probe = str(pname)
    out.flash_bytes, out.ram_bytes, out.stack_bytes = int(flash), int(ram), int(stack)
    out.sections = sections
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


def run_firmware(out_dir, frames, target="host", timeout=120):
    """Run the built runner on frames; return ``(labels, decisions)`` as int64
    arrays, shapes (t,) and (t, decision_len).

    The host runner reads the frames on stdin. Under QEMU (Cortex-M3/M4) the
    runner reads ``frames.txt`` from the directory through semihosting (QEMU
    7's semihosting console gives the guest no stdin) and prints on the
    semihosting console.
    """
    t = _target(target)
    d = Path(out_dir).resolve()
    text = _frames_text(frames)
    if t.arm:
        if t.qemu is None:
            raise ValueError(f"no emulator for {t.name}: build only")
        missing = toolchain_missing(target, run=True)
        if missing:
            raise RuntimeError(f"cannot run {t.name}: {missing}")
        (d / "frames.txt").write_text(text)
        machine, cpu = t.qemu
        cmd = ["qemu-system-arm", "-M", machine, "-cpu", cpu, "-nographic", "-monitor", "none",
               "-semihosting-config", "enable=on,target=native", "-kernel", "runner.elf"]
        res = subprocess.run(cmd, cwd=d, capture_output=True, text=True, timeout=timeout)
    else:
        res = subprocess.run([str(d / "runner")], cwd=d, input=text, capture_output=True,
                             text=True, timeout=timeout)
    return _parse_runner(res, len(np.asarray(frames)))


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
