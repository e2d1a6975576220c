"""Build targets of ``edgecode firmware``: compiler, flags, startup, memory map,
how the runner runs, and which Debian packages provide the tools.

:data:`TARGETS` maps ``--target`` names to :class:`Target` definitions;
:mod:`export.firmware` writes, builds and runs the firmware from them and
names no target itself. Five families:

* ``host``: ``gcc``; the runner reads frames on stdin.
* ``arm`` (Cortex-M0+/M3/M4): ``arm-none-eabi-gcc`` with newlib; M3 and M4
  run under ``qemu-system-arm`` (mps2 boards, ``arm/startup.c`` and
  ``arm/link.ld``), reading ``frames.txt`` through semihosting; M0+ builds
  only.
* ``avr`` (ATmega328P, the Arduino Uno; ATmega2560, the Mega): ``avr-gcc``
  with avr-libc, GNU C (the image is read from flash through ``__flash``,
  ``EC_ROM`` in ``edgecode_rt.h``), the image as an assembler file
  (``model_image.S``: one C array cannot exceed 32,767 bytes on AVR). The
  runner (``avr/runner.c``) runs under simavr inside a host harness
  (``avr/ec_simavr.c``, linked against libsimavr) that counts cycles exactly
  and watches the stack pointer.
* ``riscv`` (``rv32imac``): ``riscv64-unknown-elf-gcc -march=rv32imac
  -mabi=ilp32`` with picolibc, bare metal on ``qemu-system-riscv32 -M virt``
  (``riscv/link.ld``: the memory map; picolibc's start-up and semihosting);
  with ``-icount shift=0`` QEMU's ``minstret`` counts executed instructions,
  which the runner reads around each call (``riscv/ec_counter.h``).

Everything here is data plus the commands derived from it; nothing is run
at import.
"""

import os
import shutil
import subprocess
from dataclasses import dataclass

__all__ = ["Target", "Part", "TARGETS", "get_target", "toolchain_missing", "debian_packages"]


@dataclass(frozen=True)
class Part:
    """The flash and RAM of a part no ``firmware_sim`` profile models yet (the
    AVR targets): :func:`export.firmware.oversize` checks a build against it
    as against a profile."""

    name: str
    flash_bytes: int
    ram_bytes: int
    description: str


@dataclass(frozen=True)
class Target:
    """One ``--target``: how to compile, link and run the firmware for it.

    Attributes
    ----------
    name, family : str
        ``family`` is ``host``, ``arm``, ``avr`` or ``riscv``.
    cc : str
        The C compiler (it also assembles and links).
    cpu_flags : tuple of str
        CPU flags passed to every compile and link.
    std : str
        The C dialect of the runtime (``-std=gnu99`` on AVR for ``__flash``).
    opt : str
        The default optimisation flag (``-Os`` on AVR, as Arduino builds;
        ``-O2`` elsewhere).
    qemu : tuple or None
        ``(system emulator, machine, cpu)`` when the runner runs under QEMU.
    simavr : str or None
        The simavr MCU name when the runner runs under the simavr harness.
    clock_hz : int or None
        The core clock the cycle counts are converted to time with.
    profile : str or None
        The ``firmware_sim`` profile whose estimate is printed beside a build.
    part : Part or None
        The part's flash and RAM when no profile models it (the AVR parts): a
        build above them is refused as over a profile is.
    build_packages, run_packages : tuple of (tool, Debian package)
        What building and running need; ``toolchain_missing`` checks them.
    """

    name: str
    family: str
    cc: str
    cpu_flags: tuple = ()
    std: str = "-std=c99"
    opt: str = "-O2"
    qemu: tuple = None
    simavr: str = None
    clock_hz: int = None
    profile: str = None
    part: tuple = None
    build_packages: tuple = ()
    run_packages: tuple = ()

    @property
    def arm(self):
        """A Cortex-M target (newlib, semihosting through ``rdimon``)."""
        return self.family == "arm"

    @property
    def runs(self):
        """The runner can run here (natively, under QEMU or under simavr)."""
        return self.family == "host" or self.qemu is not None or self.simavr is not None

    @property
    def size_tool(self):
        return {"host": "size", "arm": "arm-none-eabi-size", "avr": "avr-size",
                "riscv": "riscv64-unknown-elf-size"}[self.family]

    @property
    def ext(self):
        """File name suffix of the linked programs (``.elf`` off the host)."""
        return "" if self.family == "host" else ".elf"

    @property
    def max_image_bytes(self):
        """The largest image the target's runtime can read: on AVR, __flash
        reads the first 64 KB of flash, which also holds the vector table (the
        build checks the exact layout); elsewhere the container's own limit."""
        return 0x10000 - 0x100 if self.family == "avr" else 0xFFFFFFFF

    @property
    def image_source(self):
        """The generated file holding the image: ``model_image.S`` on AVR (a C
        array cannot exceed 32,767 bytes there), ``model_image.c`` elsewhere."""
        return "model_image.S" if self.family == "avr" else "model_image.c"

    @property
    def counts(self):
        """What the runner measures per call: ``"cycles"`` (simavr, exact),
        ``"instructions"`` (QEMU with ``-icount``) or None."""
        return "cycles" if self.simavr else ("instructions" if self.family == "riscv" else None)

    # ------------------------------------------------------------ files and flags
    def glue(self):
        """``(file in firmware_sim/c, name in the firmware folder)`` of the
        target's own files: the runner's start-up, memory map and harness."""
        return {
            "host": (("runner.c", "runner.c"),),
            "arm": (("runner.c", "runner.c"), ("arm/startup.c", "startup.c"),
                    ("arm/link.ld", "link.ld")),
            "avr": (("avr/runner.c", "runner.c"), ("avr/ec_simavr.c", "ec_simavr.c")),
            "riscv": (("runner.c", "runner.c"), ("riscv/link.ld", "link.ld"),
                      ("riscv/ec_counter.h", "ec_counter.h")),
        }[self.family]

    def compile_flags(self):
        """Flags of every compile besides warnings and ``-O``."""
        flags = [self.std] + list(self.cpu_flags)
        if self.family == "arm":
            flags.append("-fno-tree-loop-distribute-patterns")   # no memset from memset
        if self.family == "riscv":
            flags.append("--specs=picolibc.specs")               # its <stdint.h>
        return flags

    def runner_units(self):
        """``(source, extra compile flags)`` of the runner's own objects."""
        frames = ['-DEC_NO_ARGS', '-DEC_FRAMES_FILE="frames.txt"']
        return {
            "host": [("runner.c", [])],
            "arm": [("runner.c", ["--specs=rdimon.specs"] + frames),
                    ("startup.c", ["--specs=rdimon.specs"])],
            "avr": [("runner.c", [])],
            "riscv": [("runner.c", frames
                       + ['-DEC_COUNTER_HEADER="ec_counter.h"',
                          '-DEC_COUNTS_FILE="counts.txt"'])],
        }[self.family]

    def measure_link(self):
        """Link flags of :func:`export.firmware.build_firmware` only (not the
        Makefile's): on AVR the part's flash limit is lifted, so that a model
        too large for it links and its size is reported against the part (an
        error naming the factor) rather than as a linker error."""
        return ["-Wl,--defsym=__TEXT_REGION_LENGTH__=0x800000"] if self.family == "avr" else []

    def runner_link(self, d):
        """Link flags of the runner (``d``: the firmware folder)."""
        return {
            "host": [],
            "arm": ["-T", str(d / "link.ld"), "-nostartfiles", "--specs=rdimon.specs"],
            "avr": ["-Wl,--gc-sections"],
            "riscv": ["-T", str(d / "link.ld"), "--specs=picolibc.specs", "--oslib=semihost",
                      "--crt0=semihost"],
        }[self.family]

    def probe_units(self):
        """Extra objects of the size probe besides ``probe.c``."""
        return ["probe_start.c"] if self.family == "arm" else []

    def probe_link(self, d):
        """Link flags of the size probe: its start-up and nothing else (no C
        library beyond what the runtime needs)."""
        return {
            "host": ["-Wl,--gc-sections"],
            "arm": ["-Wl,--gc-sections", "-T", str(d / "link.ld"), "-nostartfiles",
                    "-nostdlib"],
            "avr": ["-Wl,--gc-sections"],
            "riscv": ["-Wl,--gc-sections", "-T", str(d / "link.ld"), "--specs=picolibc.specs",
                      "--crt0=minimal"],
        }[self.family]

    def probe_libs(self):
        """Libraries after the probe's objects (libgcc's 64-bit helpers on Cortex-M)."""
        return ["-lgcc"] if self.family == "arm" else []

    def flash_sections(self, sections):
        """Flash bytes of a linked program from its section sizes."""
        if self.family == "host":
            return sum(v for k, v in sections.items()
                       if k.startswith((".text", ".rodata", ".data")))
        if self.family == "avr":                  # .text holds the vectors and __flash data
            return sections.get(".text", 0) + sections.get(".data", 0)
        return sum(v for k, v in sections.items()
                   if k in (".text", ".rodata", ".data", ".ARM.exidx", ".vectors", ".init",
                            ".srodata", ".sdata", ".init_array", ".fini_array"))

    def ram_sections(self, sections):
        """Static RAM bytes (initialised and zeroed data) of a linked program."""
        return sum(v for k, v in sections.items()
                   if k in (".data", ".bss", ".sdata", ".sbss", ".noinit", ".tdata", ".tbss"))

    def run_command(self, d):
        """The command that runs the built runner in folder ``d`` (None on the
        host, where the runner itself is run with the frames on stdin)."""
        if self.family == "host":
            return None
        if self.simavr is not None:
            return [str(d / "build" / "ec_simavr"), self.simavr, str(self.clock_hz),
                    "runner.elf", "counts.txt"]
        system, machine, cpu = self.qemu
        if self.family == "riscv":
            # picolibc writes stdout as semihosting console output, which QEMU
            # sends to stderr unless given a chardev; firmware at 0x80000000
            # (no BIOS); -icount shift=0: minstret counts instructions
            return [system, "-M", machine, "-cpu", cpu, "-display", "none", "-serial", "none",
                    "-monitor", "none", "-chardev", "stdio,id=semihosting",
                    "-semihosting-config", "enable=on,target=native,chardev=semihosting",
                    "-bios", "none", "-icount", "shift=0", "-kernel", "runner.elf"]
        return [system, "-M", machine, "-cpu", cpu, "-nographic", "-monitor", "none",
                "-semihosting-config", "enable=on,target=native", "-kernel", "runner.elf"]

    def harness_command(self, d):
        """The host compile of the simavr harness (AVR), else None."""
        if self.simavr is None:
            return None
        return ["gcc", "-std=c99", "-O2", "-I/usr/include/simavr", str(d / "ec_simavr.c"),
                "-lsimavr", "-o", str(d / "build" / "ec_simavr")]


_HOST = (("gcc", "gcc"), ("size", "binutils"))
_ARM = (("arm-none-eabi-gcc", "gcc-arm-none-eabi"),
        ("arm-none-eabi-size", "binutils-arm-none-eabi"))
_AVR = (("avr-gcc", "gcc-avr"), ("avr-size", "binutils-avr"))
#: avr-gcc's size options of the AVR targets (issue 26): -mrelax lets the
#: linker shorten calls and jumps that reach (rcall/rjmp); -mcall-prologues
#: saves and restores registers through two shared libgcc routines instead
#: of inline push/pop sequences (a few cycles per call of such a function).
_AVR_SIZE = ("-mrelax", "-mcall-prologues")
_RV = (("riscv64-unknown-elf-gcc", "gcc-riscv64-unknown-elf"),
       ("riscv64-unknown-elf-size", "binutils-riscv64-unknown-elf"))
_SIMAVR = (("gcc", "gcc"),)      # the harness, compiled on the host against libsimavr

#: Build targets of ``edgecode firmware --target``.
TARGETS = {
    "host": Target("host", "host", "gcc", build_packages=_HOST),
    "cortex-m0plus": Target("cortex-m0plus", "arm", "arm-none-eabi-gcc",
                            ("-mcpu=cortex-m0plus", "-mthumb"), profile="cortex-m0",
                            build_packages=_ARM),
    "cortex-m3": Target("cortex-m3", "arm", "arm-none-eabi-gcc", ("-mcpu=cortex-m3", "-mthumb"),
                        qemu=("qemu-system-arm", "mps2-an385", "cortex-m3"),
                        profile="cortex-m0", build_packages=_ARM,
                        run_packages=(("qemu-system-arm", "qemu-system-arm"),)),
    "cortex-m4": Target("cortex-m4", "arm", "arm-none-eabi-gcc",
                        ("-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=soft"),
                        qemu=("qemu-system-arm", "mps2-an386", "cortex-m4"),
                        profile="cortex-m4", build_packages=_ARM,
                        run_packages=(("qemu-system-arm", "qemu-system-arm"),)),
    "atmega328p": Target("atmega328p", "avr", "avr-gcc", ("-mmcu=atmega328p",) + _AVR_SIZE,
                         "-std=gnu99", "-Os",
                         simavr="atmega328p", clock_hz=16_000_000,
                         part=Part("atmega328p", 32768, 2048,
                                   "ATmega328P, the Arduino Uno: 32 KB flash, 2 KB RAM, 16 MHz"),
                         build_packages=_AVR, run_packages=_SIMAVR),
    "atmega2560": Target("atmega2560", "avr", "avr-gcc", ("-mmcu=atmega2560",) + _AVR_SIZE,
                         "-std=gnu99", "-Os",
                         simavr="atmega2560", clock_hz=16_000_000,
                         part=Part("atmega2560", 262144, 8192,
                                   "ATmega2560, the Arduino Mega: 256 KB flash, 8 KB RAM, "
                                   "16 MHz"),
                         build_packages=_AVR, run_packages=_SIMAVR),
    "rv32imac": Target("rv32imac", "riscv", "riscv64-unknown-elf-gcc",
                       ("-march=rv32imac", "-mabi=ilp32"),
                       qemu=("qemu-system-riscv32", "virt", "rv32"), build_packages=_RV,
                       run_packages=(("qemu-system-riscv32", "qemu-system-misc"),)),
}


def get_target(name):
    """The :class:`Target` called ``name``; ``ValueError`` naming the known ones."""
    if isinstance(name, Target):
        return name
    if name not in TARGETS:
        raise ValueError(f"unknown target {name!r}; known: {sorted(TARGETS)}")
    return TARGETS[name]


def _compiles(cmd, source):
    try:
        res = subprocess.run(cmd + ["-x", "c", "-", "-o", os.devnull], input=source,
                             capture_output=True, text=True, timeout=60)
    except OSError:
        return False
    return res.returncode == 0


def _libraries_missing(t, run):
    """The C libraries and headers a family needs beyond the tools on PATH."""
    missing = []
    if t.family == "arm":
        probe = subprocess.run([t.cc, "-print-file-name=librdimon.a"], capture_output=True,
                               text=True)
        if probe.returncode != 0 or not os.path.isabs(probe.stdout.strip()):
            missing.append("newlib's librdimon (Debian package libnewlib-arm-none-eabi)")
    elif t.family == "avr":
        if not _compiles([t.cc, *t.cpu_flags, "-E"], "#include <avr/io.h>\n"):
            missing.append("avr-libc (Debian package avr-libc)")
    elif t.family == "riscv":
        if not _compiles([t.cc, *t.cpu_flags, "--specs=picolibc.specs", "-E"],
                         "#include <stdio.h>\n"):
            missing.append("picolibc (Debian package picolibc-riscv64-unknown-elf)")
    if run and t.simavr is not None and shutil.which("gcc") is not None:
        if not _compiles(["gcc", "-E", "-I/usr/include/simavr"], '#include "sim_avr.h"\n'):
            missing.append("libsimavr's headers (Debian package libsimavr-dev)")
    return missing


def toolchain_missing(target="host", run=False):
    """None when the tools to build (and, with ``run``, to run) ``target`` are
    there, else a sentence naming what is missing and its Debian package."""
    t = get_target(target)
    if run and not t.runs:
        return f"no emulator for {t.name} (build only)"
    need = list(t.build_packages) + (list(t.run_packages) if run else [])
    missing = [f"{tool} (Debian package {pkg})" for tool, pkg in need
               if shutil.which(tool) is None]
    if not missing:
        missing = _libraries_missing(t, run)
    return ("missing: " + ", ".join(missing)) if missing else None


#: Debian packages beyond the tools on PATH (libraries, headers).
_LIBRARY_PACKAGES = {"arm": ("libnewlib-arm-none-eabi",), "avr": ("avr-libc",),
                     "riscv": ("picolibc-riscv64-unknown-elf",)}


def debian_packages(target, run=True):
    """The Debian packages that building (and running) ``target`` needs."""
    t = get_target(target)
    pkgs = [pkg for _, pkg in t.build_packages + (t.run_packages if run else ())]
    pkgs += _LIBRARY_PACKAGES.get(t.family, ())
    if run and t.simavr is not None:
        pkgs += ["simavr", "libsimavr-dev"]
    return tuple(dict.fromkeys(pkgs))
