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
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import firmware_sim
from firmware_sim.artifact import Container, read_container

__all__ = ["TARGETS", "write_firmware", "build_firmware", "run_firmware", "toolchain_missing",
           "FirmwareBuild", "decision_integers", "RUNTIME_SOURCES"]

#: The C sources of the runtime (``firmware_sim/c``), in link order.
RUNTIME_SOURCES = ("ec_container.c", "ec_model.c", "ec_nb.c", "ec_ecoc.c", "ec_ssbc.c")

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
# Generated by `edgecode firmware` ({target}). `make` builds {runner};
# `make probe` the size probe (the smallest firmware that opens the image
# and runs one inference); `make size` prints its sections.
CC = {cc}
SIZE = {size}
CFLAGS = -std=c99 -Wall -Wextra -pedantic -O2 -ffunction-sections -fdata-sections {cpu}
RUNTIME = {runtime}

all: {runner}

{runner}: $(RUNTIME) model_image.c runner.c
\t$(CC) $(CFLAGS) {runner_link} $^ -o $@

probe{ext}: $(RUNTIME) model_image.c probe.c
\t$(CC) $(CFLAGS) {probe_link} $^ -o $@ {probe_libs}

probe: probe{ext}

size: probe{ext}
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


def write_firmware(artifact, out_dir, target="host"):
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

    Returns
    -------
    dict
        ``dir``, ``target``, ``files`` (names written), ``kind``,
        ``frame_width``, ``decision_len``, ``workspace_bytes``.

    Examples
    --------
    >>> import tempfile
    >>> from firmware_sim.naive_bayes import ProtectedNBDevice
    >>> dev = ProtectedNBDevice.from_arrays([2], -1, [1])
    >>> out = write_firmware(dev.container, tempfile.mkdtemp())
    >>> sorted(out["files"])[:3], out["frame_width"], out["decision_len"]
    (['Makefile', 'ec_container.c', 'ec_ecoc.c'], 3, 1)
    """
    t = _target(target)
    raw = _image_bytes(artifact)
    device = firmware_sim.load(read_container(raw))
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = []
    for name in RUNTIME_SOURCES + ("edgecode_rt.h", "runner.c"):
        shutil.copyfile(_C_DIR / name, out / name)
        files.append(name)
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
        runtime=" ".join(RUNTIME_SOURCES), runner=runner, ext=ext,
        runner_link="-include model_config.h" + (
            " -T link.ld -nostartfiles --specs=rdimon.specs -DEC_NO_ARGS"
            " -DEC_FRAMES_FILE='\"frames.txt\"'"
            " startup.c" if t.arm else ""),
        probe_link="-include model_config.h" + (" -T link.ld -nostartfiles -nostdlib probe_start.c"
                                                if t.arm else ""),
        probe_libs="-lgcc" if t.arm else ""))
    files.append("Makefile")
    return {"dir": str(out), "target": t.name, "files": files, "kind": device.container.kind,
            "frame_width": frame_width, "decision_len": dlen, "workspace_bytes": ws}


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
        Wall time of the runner's compile and link.
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


def build_firmware(out_dir, target="host", *, opt="-O2", sanitize=False, probe=True):
    """Compile the firmware written by :func:`write_firmware` and measure it.

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
    cflags = _WARN + [opt] + list(t.cpu_flags) + ["-include", "model_config.h"]
    if sanitize:
        cflags += ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-g"]
    ext = ".elf" if t.arm else ""
    runner = d / ("runner" + ext)
    link = []
    extra = []
    if t.arm:
        link = ["-T", "link.ld", "-nostartfiles", "--specs=rdimon.specs", "-DEC_NO_ARGS",
                "-DEC_FRAMES_FILE=\"frames.txt\""]
        extra = ["startup.c"]
    t0 = time.perf_counter()
    # startup.c uses newlib's headers: no -pedantic/-Werror noise from them matters
    _run([t.cc] + cflags + link + list(RUNTIME_SOURCES) + ["model_image.c", "runner.c"] + extra
         + ["-o", runner.name], d)
    compile_s = time.perf_counter() - t0
    out = FirmwareBuild(str(d), t.name, str(runner), None, compile_s=compile_s)
    if not probe or sanitize:
        return out
    pdir = d / "probe_build"
    pdir.mkdir(exist_ok=True)
    srcs = list(RUNTIME_SOURCES) + ["model_image.c", "probe.c"]
    pflags = [c for c in cflags if c != "-Werror"] + ["-Os" if opt == "-Os" else opt,
                                                       "-ffunction-sections", "-fdata-sections",
                                                       "-fstack-usage", "-fcallgraph-info=su"]
    if t.arm:
        srcs.append("probe_start.c")
        pflags.append("-fno-tree-loop-distribute-patterns")   # no memset from memset
    objs = []
    for s in srcs:
        obj = pdir / (Path(s).stem + ".o")
        _run([t.cc] + pflags + ["-I", str(d), "-c", str(d / s), "-o", str(obj)], pdir)
        objs.append(obj.name)
    pname = "probe" + ext
    lflags = ["-Wl,--gc-sections"]
    if t.arm:
        lflags += ["-T", str(d / "link.ld"), "-nostartfiles", "-nostdlib"]
    _run([t.cc] + list(t.cpu_flags) + lflags + objs + (["-lgcc"] if t.arm else [])
         + ["-o", pname], pdir)
    sections = _sections(t.size_tool, pdir / pname)
    flash = sum(v for k, v in sections.items()
                if k in (".text", ".rodata", ".data", ".ARM.exidx", ".vectors"))
    if not t.arm:
        flash = sum(v for k, v in sections.items() if k.startswith((".text", ".rodata", ".data")))
    stack = _worst_stack(pdir, "main")
    ram = sections.get(".data", 0) + sections.get(".bss", 0) + stack
    out.probe = str(pdir / pname)
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


def _worst_stack(build_dir, root):
    """Largest sum of stack frames along a call path from ``root`` (the
    ``.ci`` call graphs of ``-fcallgraph-info=su``; no recursion in the runtime)."""
    frame, edges = {}, {}
    for ci in Path(build_dir).glob("*.ci"):
        text = ci.read_text(errors="replace")
        for title, label in _NODE.findall(text):
            m = _BYTES.search(label)
            if m:
                frame[title] = max(frame.get(title, 0), int(m.group(1)))
        for a, b in _EDGE.findall(text):
            edges.setdefault(a, set()).add(b)
    memo, busy = {}, set()

    def depth(f):
        if f in memo:
            return memo[f]
        if f in busy:
            raise RuntimeError(f"recursion through {f}: no worst-case stack")
        busy.add(f)
        best = max((depth(g) for g in edges.get(f, ())), default=0)
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
