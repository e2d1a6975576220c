"""Device profiles: what a target microcontroller holds and what an operation costs.

A :class:`DeviceProfile` states a device's word size, flash and RAM limits,
native integer widths, and a per-operation cycle and energy table. With it
you can

* refuse an artifact that does not fit (:func:`check_fits`, :func:`load_for_profile`:
  the message says by how many bytes flash or RAM is over), and
* turn the operation counts every device runtime reports (``resources()``)
  into cycle and energy estimates (:func:`estimate`, :func:`annotate`).

Built-in profiles: ``"cortex-m0"``, ``"cortex-m4"``, ``"atmega328p"``,
``"atmega2560"`` and ``"rv32imac"`` (:data:`BUILTIN_PROFILES`); each carries
a cost model calibrated against measured cycles (``prices``, read from
``profile_prices.json``; issue 26): ``estimate(profile, device)`` prices the
device's ``cost_counts``.
Every number can be overridden from a small JSON or TOML file
(:func:`load_profile`; TOML needs Python >= 3.11 for :mod:`tomllib`).
The numbers, their sources and the cost model are documented in
``docs/device_profiles.md``.

Energy defaults (datapath energy per operation, 45 nm, 0.9 V) are from
M. Horowitz, "Computing's energy problem (and what we can do about it)",
ISSCC 2014, pp. 10-14, doi:10.1109/ISSCC.2014.6757323: 8-bit add 0.03 pJ,
32-bit add 0.1 pJ, 8-bit multiply 0.2 pJ, 32-bit multiply 3.1 pJ, 16/32-bit
float add 0.4/0.9 pJ, 16/32-bit float multiply 1.1/3.7 pJ; a 64-bit SRAM read
of 10 pJ (8 KB), 20 pJ (32 KB), 100 pJ (1 MB). They are defaults to be
overridden with a datasheet's numbers: they leave out instruction fetch,
control and leakage, which dominate a real microcontroller's energy (set
``overhead_pj_per_cycle`` for those).

Imports the standard library and the error classes only (the kind registry
for the measured runtime figures is asked at call time), so every device
runtime may use it.
"""

import json
import math
import os
import sys
from dataclasses import dataclass, fields, replace
from numbers import Integral, Real
from pathlib import Path
from types import MappingProxyType

from .errors import DeviceError

__all__ = [
    "DeviceProfile",
    "ProfileError",
    "DoesNotFitError",
    "BUILTIN_PROFILES",
    "OPERATION_CLASSES",
    "HOROWITZ_2014_PJ",
    "get_profile",
    "load_profile",
    "check_fits",
    "estimate",
    "annotate",
    "load_for_profile",
]


class ProfileError(DeviceError):
    """A profile (name, file or field) is malformed; the message names the field."""


class DoesNotFitError(ProfileError):
    """An artifact needs more flash or RAM (or wider integers) than the profile has."""


#: Per-operation datapath energy at 45 nm from Horowitz (ISSCC 2014), in pJ.
#: Memory reads are per 64-bit access.
HOROWITZ_2014_PJ = MappingProxyType({
    "int8_add": 0.03,
    "int32_add": 0.1,
    "int8_mul": 0.2,
    "int32_mul": 3.1,
    "fp16_add": 0.4,
    "fp32_add": 0.9,
    "fp16_mul": 1.1,
    "fp32_mul": 3.7,
    "sram_8kb_read64": 10.0,
    "sram_32kb_read64": 20.0,
    "sram_1mb_read64": 100.0,
    "dram_read64_low": 1300.0,
    "dram_read64_high": 2600.0,
})

#: The operation classes a profile prices (cycles and pJ per operation).
#:
#: ``add`` (integer add/subtract), ``compare`` (a subtraction that sets flags),
#: ``logic`` (and/or/xor/shift-and-mask), ``mul`` (32-bit integer multiply),
#: ``popcount`` (population count of one word), ``fadd``/``fmul`` (float32),
#: ``load_ram``/``load_flash`` (one word read).
OPERATION_CLASSES = ("add", "compare", "logic", "mul", "popcount", "fadd", "fmul",
                     "load_ram", "load_flash")

#: Suffix of an operation-count key (as runtimes name them in
#: ``resources()["ops_per_inference"]``) -> operation class.
_SUFFIX_CLASSES = (
    ("_additions", "add"), ("_subtractions", "add"), ("_increments", "add"),
    ("_comparisons", "compare"),
    ("_extractions", "logic"), ("_xors", "logic"), ("_shifts", "logic"), ("_ands", "logic"),
    ("_multiplications", "mul"),
    ("_popcounts", "popcount"),
    ("_float_additions", "fadd"), ("_float_multiplications", "fmul"),
    ("_flash_loads", "load_flash"), ("_ram_loads", "load_ram"), ("_loads", "load_ram"),
)

#: Operation-count keys that stand for several operations each, priced per
#: unit as the weighted sum (ECOC and SSBC report them). Added when the C
#: runtime was measured under QEMU (issue 12, benchmarks/README.md
#: "Firmware"): before, these were left unpriced and SSBC's estimate was 10x
#: below the instructions executed.
_COMPOSITE_CLASSES = (
    ("multiply_accumulates", {"mul": 1, "add": 1}),
    ("_multiply_adds", {"mul": 1, "add": 1}),
    ("_compares", {"compare": 1}),
    ("_worst", {"compare": 1}),            # node_comparisons_worst, knn_insertions_worst
    ("decode_word_ops", {"logic": 2 / 3, "popcount": 1 / 3}),     # xor, and, popcount
    ("_xor_popcount", {"logic": 1 / 2, "popcount": 1 / 2}),
    ("exp_stage", {"add": 1}),             # shifts, masks, table reads, interpolation
)


def operation_weights(key):
    """Operation classes and weights of an operation-count key
    (``{"add": 1}`` for ``"vote_additions"``, ``{"mul": 1, "add": 1}`` for
    ``"multiply_accumulates"``), or None when the key has no price."""
    cls = operation_class(key)
    if cls is not None:
        return {cls: 1}
    for suffix, weights in _COMPOSITE_CLASSES:
        if key.endswith(suffix):
            return dict(weights)
    return None


_H = HOROWITZ_2014_PJ
#: Energy per operation class (pJ) shared by the built-in profiles: Horowitz's
#: 32-bit integer numbers; compare and logic priced as a 32-bit add (same
#: adder/ALU width; an assumption, Horowitz lists no separate figure);
#: popcount as 12 adds (a SWAR popcount is about 12 ALU operations on cores
#: without a popcount instruction, as Cortex-M0 and M4); a 32-bit word read
#: from RAM at half the 8 KB SRAM 64-bit read; from flash at half the 1 MB
#: SRAM read (Horowitz gives no flash figure: a stand-in to override).
_DEFAULT_ENERGY = {
    "add": _H["int32_add"],
    "compare": _H["int32_add"],
    "logic": _H["int32_add"],
    "mul": _H["int32_mul"],
    "popcount": 12 * _H["int32_add"],
    "fadd": _H["fp32_add"],
    "fmul": _H["fp32_mul"],
    "load_ram": _H["sram_8kb_read64"] / 2,
    "load_flash": _H["sram_1mb_read64"] / 2,
}


def _freeze(mapping):
    return MappingProxyType(dict(mapping))


@dataclass(frozen=True)
class DeviceProfile:
    """A target device: memory limits, integer widths, and an operation cost table.

    Attributes
    ----------
    name : str
    description : str
    word_bits : int
        Native word size (8, 16, 32 or 64); memory is read one word at a time.
    flash_bytes : int
        Flash available to the artifact (the whole container is stored).
    ram_bytes : int
        RAM available to one inference (``resources()["ram_bytes"]``).
    int_widths : tuple of int
        Integer widths (bits) the runtime may use on the core, natively or as
        multi-word operations its compiler emits; a container array of
        another integer width is refused by :func:`check_fits`.
    clock_hz : float
        Core clock, for the time estimate.
    cycles : mapping of str to float
        Cycles per operation, one per :data:`OPERATION_CLASSES`.
    energy_pj : mapping of str to float
        Energy per operation in picojoules, one per :data:`OPERATION_CLASSES`.
    overhead_pj_per_cycle : float
        Energy per cycle not in ``energy_pj`` (instruction fetch, control,
        leakage); 0 by default: set it from a datasheet (current per MHz
        times voltage) for whole-chip estimates.
    has_fpu : bool
    source : str
        Where the numbers come from.
    runtime_flash_bytes : int, mapping of str to int, or None
        Flash the C99 runtime itself takes beside the image (code and
        constants of ``firmware_sim/c``, measured by ``edgecode firmware
        --build``), one number or one per model kind (a firmware compiles in
        its model's kind only); :func:`check_fits` adds it to the image. A
        kind the mapping does not list is charged its largest entry. None
        (the built-in profiles): the figures each registered kind measured on
        ``runtime_profile`` (its device class's ``runtime_bytes``). 0 by
        default (a profile file may set it).
    runtime_ram_bytes : int, mapping of str to int, or None
        RAM the runtime needs beside the model's own buffers: its worst-case
        stack (open, then one inference), likewise per kind;
        :func:`check_fits` adds it.
    runtime_profile : str
        The built-in profile whose measured runtime figures apply where the
        two fields above are None (a profile file inherits its base's).
    prices : mapping or None
        The calibrated cost model (issue 26): cost family (a kind; ECOC split
        into ``ecoc_linear`` and ``ecoc_trees``) -> ``{"infer": {count:
        cycles}, "open": {count: cycles}}``, the cycles of one unit of each
        count of ``Device.cost_counts``, fitted against measured cycles by
        ``benchmarks/calibrate_profiles.py`` (the built-in profiles read them
        from ``firmware_sim/profile_prices.json``). A family it lacks is
        estimated from the operation classes (``cycles``).
    supply_v, active_current_a : float
        The datasheet's supply voltage and active supply current at
        ``clock_hz``: when both are set, the energy of an inference is its
        cycles / ``clock_hz`` x V x I (the whole chip, as the datasheet
        measures it) instead of the ``energy_pj`` table.

    Examples
    --------
    >>> p = get_profile("cortex-m0")
    >>> p.word_bits, p.cycles["mul"], get_profile("cortex-m4").cycles["mul"]
    (32, 32.0, 1.0)
    """

    name: str
    description: str
    word_bits: int
    flash_bytes: int
    ram_bytes: int
    int_widths: tuple
    clock_hz: float
    cycles: object
    energy_pj: object
    overhead_pj_per_cycle: float = 0.0
    has_fpu: bool = False
    source: str = ""
    runtime_flash_bytes: object = 0
    runtime_ram_bytes: object = 0
    runtime_profile: str = ""
    prices: object = None
    supply_v: float = 0.0
    active_current_a: float = 0.0

    def __post_init__(self):
        _validate(self)

    def runtime_bytes(self, kind=None):
        """``(flash, ram)`` the C runtime adds for a model of ``kind``
        (None or a kind not listed: the largest entry).

        >>> get_profile("cortex-m4").runtime_bytes("protected_nb")
        (2720, 360)
        """
        table = self.runtime_table()
        return (_for_kind(table["flash"], kind), _for_kind(table["ram"], kind))

    def runtime_table(self):
        """``{"flash": ..., "ram": ...}``: each a number or a mapping of model kind
        to bytes, the fields resolved (None: the registered kinds' measured
        ``runtime_bytes[runtime_profile]``; no kind measured there: 0)."""
        out = {}
        for key, value, i in (("flash", self.runtime_flash_bytes, 0),
                              ("ram", self.runtime_ram_bytes, 1)):
            if value is None:
                value = {k: v[i] for k, v in _measured_runtime(self.runtime_profile).items()} \
                    or 0
            out[key] = value
        return out

    @property
    def word_bytes(self):
        """Bytes per native word."""
        return self.word_bits // 8

    def to_dict(self):
        """The profile as a JSON-serialisable dict (what :func:`load_profile` reads)."""
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d["cycles"] = dict(self.cycles)
        d["energy_pj"] = dict(self.energy_pj)
        d["int_widths"] = list(self.int_widths)
        for name in ("runtime_flash_bytes", "runtime_ram_bytes"):
            if hasattr(d[name], "items"):
                d[name] = dict(d[name])
        if d["prices"] is not None:
            d["prices"] = {f: {st: dict(t) for st, t in v.items()}
                           for f, v in d["prices"].items()}
        return d

    @property
    def joules_per_cycle(self):
        """Energy of one cycle from the datasheet current (V x I / f), or None."""
        if self.supply_v > 0 and self.active_current_a > 0:
            return self.supply_v * self.active_current_a / self.clock_hz
        return None

    def with_overrides(self, **overrides):
        """A copy with some fields replaced; ``cycles`` / ``energy_pj`` are merged
        entry by entry (give only the operations that change)."""
        return _apply_overrides(self, overrides, where="overrides")


def _check_number(value, where, *, positive=False, integer=False):
    if isinstance(value, bool) or not isinstance(value, (Integral, Real)) or \
            not math.isfinite(float(value)):
        raise ProfileError(f"{where} must be a finite number; got {value!r}")
    if integer and float(value) != int(value):
        raise ProfileError(f"{where} must be an integer; got {value!r}")
    if (positive and value <= 0) or value < 0:
        raise ProfileError(f"{where} must be {'> 0' if positive else '>= 0'}; got {value!r}")


def _validate(p):
    where = f"profile {p.name!r}"
    if not isinstance(p.name, str) or not p.name:
        raise ProfileError(f"profile name must be a non-empty str; got {p.name!r}")
    if p.word_bits not in (8, 16, 32, 64) or isinstance(p.word_bits, bool):
        raise ProfileError(f"{where}: word_bits must be 8, 16, 32 or 64; got {p.word_bits!r}")
    for name in ("flash_bytes", "ram_bytes"):
        _check_number(getattr(p, name), f"{where}: {name}", positive=True, integer=True)
    if not isinstance(p.runtime_profile, str):
        raise ProfileError(f"{where}: runtime_profile must be a profile name (str); got "
                           f"{p.runtime_profile!r}")
    for name in ("runtime_flash_bytes", "runtime_ram_bytes"):
        value = getattr(p, name)
        if value is None:
            continue
        if hasattr(value, "items"):
            if not value:
                raise ProfileError(f"{where}: {name} must be a number or a non-empty "
                                   "mapping of model kind to number")
            for k, v in value.items():
                if not isinstance(k, str):
                    raise ProfileError(f"{where}: {name} keys must be model kinds (str); "
                                       f"got {k!r}")
                _check_number(v, f"{where}: {name}[{k!r}]", integer=True)
            object.__setattr__(p, name, _freeze({k: int(v) for k, v in value.items()}))
        else:
            _check_number(value, f"{where}: {name}", integer=True)
            object.__setattr__(p, name, int(value))
    _check_number(p.clock_hz, f"{where}: clock_hz", positive=True)
    for name in ("supply_v", "active_current_a"):
        _check_number(getattr(p, name), f"{where}: {name}")
        object.__setattr__(p, name, float(getattr(p, name)))
    object.__setattr__(p, "prices", _check_prices(p.prices, where))
    _check_number(p.overhead_pj_per_cycle, f"{where}: overhead_pj_per_cycle")
    widths = tuple(p.int_widths)
    if not widths or any(w not in (8, 16, 32, 64) or isinstance(w, bool) for w in widths):
        raise ProfileError(f"{where}: int_widths must list widths among 8, 16, 32, 64; "
                           f"got {p.int_widths!r}")
    object.__setattr__(p, "int_widths", tuple(sorted(set(int(w) for w in widths))))
    object.__setattr__(p, "flash_bytes", int(p.flash_bytes))
    object.__setattr__(p, "ram_bytes", int(p.ram_bytes))
    object.__setattr__(p, "clock_hz", float(p.clock_hz))
    object.__setattr__(p, "overhead_pj_per_cycle", float(p.overhead_pj_per_cycle))
    for table in ("cycles", "energy_pj"):
        t = getattr(p, table)
        if not hasattr(t, "items"):
            raise ProfileError(f"{where}: {table} must be a mapping of operation class to "
                               f"number; got {type(t).__name__}")
        unknown = sorted(set(t) - set(OPERATION_CLASSES))
        if unknown:
            raise ProfileError(f"{where}: {table} has unknown operation class(es) {unknown}; "
                               f"known: {list(OPERATION_CLASSES)}")
        missing = [k for k in OPERATION_CLASSES if k not in t]
        if missing:
            raise ProfileError(f"{where}: {table} is missing {missing}")
        for k, v in t.items():
            _check_number(v, f"{where}: {table}[{k!r}]")
        object.__setattr__(p, table, _freeze({k: float(t[k]) for k in OPERATION_CLASSES}))


def _check_prices(prices, where):
    """The ``prices`` field frozen: family -> stage ("infer"/"open") -> count -> cycles."""
    if prices is None:
        return None
    if not hasattr(prices, "items"):
        raise ProfileError(f"{where}: prices must be a table of cost family to "
                           f"{{'infer': {{...}}, 'open': {{...}}}}; got {type(prices).__name__}")
    out = {}
    for fam, table in prices.items():
        if not isinstance(fam, str) or not hasattr(table, "items"):
            raise ProfileError(f"{where}: prices[{fam!r}] must be a table of 'infer' and "
                               "'open' prices")
        stages = {}
        for stage, t in table.items():
            if stage not in ("infer", "open"):
                continue                      # notes such as fit_max_rel_error
            if not hasattr(t, "items"):
                raise ProfileError(f"{where}: prices[{fam!r}][{stage!r}] must be a table of "
                                   "count name to cycles")
            for k, v in t.items():
                _check_number(v, f"{where}: prices[{fam!r}][{stage!r}][{k!r}]")
            stages[stage] = _freeze({k: float(v) for k, v in t.items()})
        out[fam] = _freeze(stages)
    return _freeze(out)


def _measured_runtime(profile_name):
    """Registered kind -> ``(flash, ram)`` its C runtime measured on
    ``profile_name`` (the device classes' ``runtime_bytes``)."""
    from .contract import device_kinds       # the registry, at call time: no import cycle

    return {k: tuple(int(v) for v in cls.runtime_bytes[profile_name])
            for k, cls in device_kinds().items() if profile_name in cls.runtime_bytes}


def _for_kind(value, kind):
    if not hasattr(value, "items"):
        return int(value)
    if kind in value:
        return int(value[kind])
    return max(int(v) for v in value.values())


#: Cortex-M0 (ARMv6-M) cycle model: single-cycle ALU, 2-cycle loads (ARM
#: Cortex-M0 TRM, "Instruction set summary"), flash one wait state at 48 MHz
#: (3 cycles per flash word), the small iterative multiplier (32 cycles, the
#: implementation option many low-cost parts use; 1 with the fast one),
#: software popcount (~12 ALU ops), software float (~50/~60 cycles per
#: add/multiply, order of magnitude for a soft-float library).
#: Integer widths of the built-in Cortex-M profiles: 8, 16 and 32 bits
#: natively, and 64 bits as two-word operations the compiler emits (packed
#: code words, wide accumulators): the C99 runtime builds and runs containers
#: holding them on these cores, checked bit for bit under QEMU
#: (tests/test_firmware.py). A profile of a core without 64-bit support in
#: its toolchain sets ``int_widths=(8, 16, 32)``.
_CORTEX_M_INTS = (8, 16, 32, 64)

CORTEX_M0 = DeviceProfile(
    name="cortex-m0",
    description="Cortex-M0 class microcontroller, 48 MHz, 32 KB flash, 4 KB RAM, no FPU",
    word_bits=32, flash_bytes=32 * 1024, ram_bytes=4 * 1024, int_widths=_CORTEX_M_INTS,
    clock_hz=48e6,
    cycles={"add": 1, "compare": 1, "logic": 1, "mul": 32, "popcount": 12, "fadd": 50,
            "fmul": 60, "load_ram": 2, "load_flash": 3},
    energy_pj=_DEFAULT_ENERGY, has_fpu=False,
    source="cycles: ARM Cortex-M0 TRM instruction timings (small multiplier option); "
           "energy: Horowitz ISSCC 2014 45 nm table (defaults, override); runtime "
           "flash/RAM: the C runtime built for cortex-m0plus at -O2, one kind compiled in "
           "(benchmarks/README.md)",
    runtime_flash_bytes=None, runtime_ram_bytes=None, runtime_profile="cortex-m0",
)

#: Cortex-M4F (ARMv7E-M) cycle model: single-cycle ALU and 32-bit multiply,
#: 2-cycle loads, flash reads through a prefetch/cache accelerator counted
#: as 2 cycles, single-precision FPU (1-cycle add and multiply), software
#: popcount (no popcount instruction in ARMv7-M).
CORTEX_M4 = DeviceProfile(
    name="cortex-m4",
    description="Cortex-M4F class microcontroller, 80 MHz, 256 KB flash, 64 KB RAM, FPU",
    word_bits=32, flash_bytes=256 * 1024, ram_bytes=64 * 1024, int_widths=_CORTEX_M_INTS,
    clock_hz=80e6,
    cycles={"add": 1, "compare": 1, "logic": 1, "mul": 1, "popcount": 12, "fadd": 1,
            "fmul": 1, "load_ram": 2, "load_flash": 2},
    energy_pj=_DEFAULT_ENERGY, has_fpu=True,
    source="cycles: ARM Cortex-M4 TRM instruction timings; energy: Horowitz ISSCC 2014 "
           "45 nm table (defaults, override); runtime flash/RAM: the C runtime built for "
           "cortex-m4 at -O2, one kind compiled in (benchmarks/README.md)",
    runtime_flash_bytes=None, runtime_ram_bytes=None, runtime_profile="cortex-m4",
)

_AVR_INTS = (8, 16, 32, 64)
#: Energy per operation class on the 8-bit AVR profiles: unused (their energy
#: is the datasheet's whole-chip current, ``supply_v`` x ``active_current_a``
#: per second of cycles); the Horowitz table stays as the class fallback.
#: Cycles per operation class on the AVR core (the fallback of a family the
#: calibration has no prices for): an 8-bit ALU, so a 32-bit add is 4
#: single-cycle instructions, a 32-bit multiply a libgcc call (about 40
#: cycles with the 2-cycle 8x8 MUL), popcount a table or loop (about 30),
#: soft float (about 100/150), a 32-bit load 4 x LD (2 cycles) or 4 x LPM
#: (3 cycles) from flash (AVR instruction set manual, DS40002198).
_AVR_CYCLES = {"add": 4, "compare": 4, "logic": 4, "mul": 40, "popcount": 30, "fadd": 100,
               "fmul": 150, "load_ram": 8, "load_flash": 12}

ATMEGA328P = DeviceProfile(
    name="atmega328p",
    description="ATmega328P (Arduino Uno), 8-bit AVR, 16 MHz, 32 KB flash, 2 KB RAM, 5 V",
    word_bits=8, flash_bytes=32 * 1024, ram_bytes=2 * 1024, int_widths=_AVR_INTS,
    clock_hz=16e6, cycles=_AVR_CYCLES, energy_pj=_DEFAULT_ENERGY, has_fpu=False,
    supply_v=5.0, active_current_a=10.4e-3,
    source="cycles: the cost model fitted to exact simavr cycles "
           "(benchmarks/calibrate_profiles.py, firmware_sim/profile_prices.json); energy: "
           "datasheet DS40002061 / 8161D section 28.2.4 'ATmega328P DC Characteristics', "
           "active supply current 5.2 mA typical at 8 MHz, 5 V, doubled for 16 MHz (the "
           "current is about linear in the clock there; the typical-characteristics figure "
           "'Active Supply Current vs. Frequency' agrees), whole chip, I/O modules off; "
           "operation-class fallback: Horowitz ISSCC 2014 45 nm (unused for energy)",
    runtime_flash_bytes=None, runtime_ram_bytes=None, runtime_profile="atmega328p",
)

ATMEGA2560 = DeviceProfile(
    name="atmega2560",
    description="ATmega2560 (Arduino Mega), 8-bit AVR, 16 MHz, 256 KB flash, 8 KB RAM, 5 V",
    word_bits=8, flash_bytes=256 * 1024, ram_bytes=8 * 1024, int_widths=_AVR_INTS,
    clock_hz=16e6, cycles=_AVR_CYCLES, energy_pj=_DEFAULT_ENERGY, has_fpu=False,
    supply_v=5.0, active_current_a=20e-3,
    source="cycles: the cost model fitted to exact simavr cycles "
           "(benchmarks/calibrate_profiles.py, firmware_sim/profile_prices.json); energy: "
           "datasheet 2549 (ATmega640/1280/1281/2560/2561) 'DC Characteristics', active "
           "supply current 10 mA typical at 8 MHz, 5 V, doubled for 16 MHz, whole chip; "
           "operation-class fallback: Horowitz ISSCC 2014 45 nm (unused for energy)",
    runtime_flash_bytes=None, runtime_ram_bytes=None, runtime_profile="atmega2560",
)

#: RV32IMAC (e.g. a SiFive E31 class core): single-cycle ALU, a pipelined
#: multiplier, loads of 2 cycles; no popcount (Zbb is not in rv32imac).
RV32IMAC = DeviceProfile(
    name="rv32imac",
    description="RV32IMAC microcontroller, 32 MHz, 256 KB flash, 32 KB RAM, no FPU",
    word_bits=32, flash_bytes=256 * 1024, ram_bytes=32 * 1024, int_widths=_CORTEX_M_INTS,
    clock_hz=32e6,
    cycles={"add": 1, "compare": 1, "logic": 1, "mul": 1, "popcount": 12, "fadd": 50,
            "fmul": 60, "load_ram": 2, "load_flash": 2},
    energy_pj=_DEFAULT_ENERGY, has_fpu=False,
    source="cycles: the cost model fitted to the instructions qemu-system-riscv32 counts "
           "(-icount shift=0), priced one cycle each: approximate (a single-issue core "
           "without wait states; loads, taken branches and multiplies cost more on real "
           "parts); energy: Horowitz ISSCC 2014 45 nm table (defaults, override)",
    runtime_flash_bytes=None, runtime_ram_bytes=None, runtime_profile="rv32imac",
)

#: The calibrated prices of the built-in profiles (data written by
#: ``benchmarks/calibrate_profiles.py --write``).
PRICES_FILE = Path(__file__).with_name("profile_prices.json")


def _with_prices(p):
    try:
        table = json.loads(PRICES_FILE.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return p
    return replace(p, prices=table[p.name]) if p.name in table else p


#: Built-in profiles by name.
BUILTIN_PROFILES = MappingProxyType({p.name: _with_prices(p) for p in (
    CORTEX_M0, CORTEX_M4, ATMEGA328P, ATMEGA2560, RV32IMAC)})

_FIELD_NAMES = {f.name for f in fields(DeviceProfile)}


def _apply_overrides(base, overrides, *, where):
    unknown = sorted(set(overrides) - _FIELD_NAMES)
    if unknown:
        raise ProfileError(f"{where}: unknown profile field(s) {unknown}; "
                           f"known: {sorted(_FIELD_NAMES)} (and 'base')")
    values = {}
    for k, v in overrides.items():
        if k in ("cycles", "energy_pj"):
            if not hasattr(v, "items"):
                raise ProfileError(f"{where}: {k} must be a table of operation class to "
                                   f"number; got {v!r}")
            merged = dict(getattr(base, k))
            bad = sorted(set(v) - set(OPERATION_CLASSES))
            if bad:
                raise ProfileError(f"{where}: {k} has unknown operation class(es) {bad}; "
                                   f"known: {list(OPERATION_CLASSES)}")
            merged.update(v)
            values[k] = merged
        else:
            values[k] = v
    return replace(base, **values)


def get_profile(profile):
    """A :class:`DeviceProfile` from a profile, a built-in name or a file path.

    Examples
    --------
    >>> get_profile("cortex-m4").ram_bytes
    65536
    >>> get_profile("pdp-11")
    Traceback (most recent call last):
    ...
    firmware_sim.profiles.ProfileError: unknown profile 'pdp-11': not a built-in profile (cortex-m0, cortex-m4, atmega328p, atmega2560, rv32imac) nor an existing .json/.toml file
    """
    if isinstance(profile, DeviceProfile):
        return profile
    return load_profile(profile)


def load_profile(path_or_name):
    """Load a profile: a built-in name, or a JSON/TOML file of overrides.

    A file is a table of :class:`DeviceProfile` fields. With ``"base"`` (a
    built-in name, default ``"cortex-m0"``) it only needs the fields that
    change; ``cycles`` and ``energy_pj`` are merged entry by entry::

        {"base": "cortex-m4", "name": "my-board", "ram_bytes": 20480,
         "energy_pj": {"load_flash": 25.0}, "overhead_pj_per_cycle": 120.0}

    Parameters
    ----------
    path_or_name : str or os.PathLike
        ``"cortex-m0"``, ``"cortex-m4"``, or a ``.json`` / ``.toml`` path.

    Returns
    -------
    DeviceProfile

    Raises
    ------
    ProfileError
        Unknown name, unreadable or malformed file, unknown field or
        operation class, a number out of range (the message names the field).
        TOML on Python 3.10 (no :mod:`tomllib`): use JSON there.
    """
    if isinstance(path_or_name, str) and path_or_name in BUILTIN_PROFILES:
        return BUILTIN_PROFILES[path_or_name]
    if not isinstance(path_or_name, (str, os.PathLike)):
        raise TypeError(f"profile must be a DeviceProfile, a built-in name or a path; "
                        f"got {type(path_or_name).__name__}")
    path = Path(path_or_name)
    suffix = path.suffix.lower()
    if suffix not in (".json", ".toml") or not path.is_file():
        raise ProfileError(f"unknown profile {os.fspath(path_or_name)!r}: not a built-in "
                           f"profile ({', '.join(BUILTIN_PROFILES)}) nor an existing "
                           ".json/.toml file")
    try:
        if suffix == ".json":
            data = json.loads(path.read_text(encoding="utf-8"))
        else:
            if sys.version_info < (3, 11):
                raise ProfileError(f"{path}: TOML profiles need Python >= 3.11 (tomllib); "
                                   "write the profile as JSON instead")
            import tomllib
            data = tomllib.loads(path.read_text(encoding="utf-8"))
    except ProfileError:
        raise
    except (OSError, ValueError) as exc:  # JSONDecodeError, TOMLDecodeError are ValueErrors
        raise ProfileError(f"cannot read profile {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise ProfileError(f"{path}: a profile must be a table (JSON object); "
                           f"got {type(data).__name__}")
    data = dict(data)
    base_name = data.pop("base", "cortex-m0")
    if base_name not in BUILTIN_PROFILES:
        raise ProfileError(f"{path}: base {base_name!r} is not a built-in profile "
                           f"({', '.join(BUILTIN_PROFILES)})")
    data.setdefault("name", path.stem)
    data.setdefault("source", f"{path.name} over {base_name}")
    try:
        return _apply_overrides(BUILTIN_PROFILES[base_name], data, where=str(path))
    except TypeError as exc:
        raise ProfileError(f"{path}: {exc}") from exc


# --------------------------------------------------------------------------
# Fit checks
# --------------------------------------------------------------------------
def _over(what, need, have):
    over = need - have
    return (f"{what} needs {need} bytes but the profile has {have} "
            f"(over by {over} bytes, {100.0 * over / have:.1f}%)")


def check_fits(profile, resources, container=None):
    """Refuse an artifact that does not fit a device profile.

    Parameters
    ----------
    profile : DeviceProfile or str
    resources : dict
        A runtime's ``resources()`` report (``flash_bytes``, ``ram_bytes``).
    container : Container, optional
        If given, every integer array must have a width the profile supports
        (``int_widths``).

    Returns
    -------
    dict
        Headroom: ``flash_free_bytes``, ``ram_free_bytes`` (>= 0).

    Raises
    ------
    DoesNotFitError
        Naming every limit exceeded and by how much (bytes and percent).

    Examples
    --------
    The image and the model's buffers (``resources``) plus the C runtime's
    measured code and stack for the report's ``kind`` (``runtime_flash_bytes``,
    ``runtime_ram_bytes``; without a kind, the largest):

    >>> check_fits("cortex-m0", {"flash_bytes": 10000, "ram_bytes": 100, "kind": "protected_nb"})
    {'flash_free_bytes': 19392, 'ram_free_bytes': 3604}
    >>> check_fits("cortex-m0", {"flash_bytes": 40000, "ram_bytes": 5000, "kind": "ecoc"})
    Traceback (most recent call last):
    ...
    firmware_sim.profiles.DoesNotFitError: ecoc artifact does not fit profile 'cortex-m0': flash (model 40000 + runtime 6034) needs 46034 bytes but the profile has 32768 (over by 13266 bytes, 40.5%); RAM (model 5000 + runtime 736) needs 5736 bytes but the profile has 4096 (over by 1640 bytes, 40.0%)
    """
    p = get_profile(profile)
    problems = []
    need_of = {}
    rt_flash, rt_ram = p.runtime_bytes(resources.get("kind"))
    for key, label, have, extra in (("flash_bytes", "flash", p.flash_bytes, rt_flash),
                                    ("ram_bytes", "RAM", p.ram_bytes, rt_ram)):
        if key not in resources:
            raise ProfileError(f"resources report has no {key!r}; got keys {sorted(resources)}")
        need = need_of[key] = int(resources[key]) + int(extra)
        if need > have:
            what = label if not extra else f"{label} (model {int(resources[key])} + runtime {extra})"
            problems.append(_over(what, need, have))
    if container is not None:
        widest = max(p.int_widths)
        for name, arr in container.arrays.items():
            if arr.dtype.kind in "iu" and arr.dtype.itemsize * 8 not in p.int_widths:
                problems.append(f"array {name!r} is {arr.dtype.name} but the profile's "
                                f"integer widths are {list(p.int_widths)} (widest {widest})")
    if problems:
        kind = resources.get("kind")
        what = f"{kind} artifact" if kind else "artifact"
        raise DoesNotFitError(f"{what} does not fit profile {p.name!r}: "
                              + "; ".join(problems))
    return {"flash_free_bytes": p.flash_bytes - need_of["flash_bytes"],
            "ram_free_bytes": p.ram_bytes - need_of["ram_bytes"]}


def load_for_profile(loader, source, profile):
    """Load a device with ``loader(source)`` and refuse it unless it fits ``profile``.

    Works with every runtime whose device has ``resources()`` (and,
    optionally, ``container``): ``load_for_profile(load_protected_nb, path,
    "cortex-m0")``.

    Returns
    -------
    device
        The loaded device, unchanged.

    Raises
    ------
    DoesNotFitError
        Flash, RAM or integer width over the profile's limits (by how much).

    Examples
    --------
    >>> from firmware_sim.naive_bayes import ProtectedNBDevice
    >>> dev = ProtectedNBDevice.from_arrays([4, -2, 3], -2, [1, 0, 2], 3)
    >>> load_for_profile(lambda d: d, dev, "cortex-m0") is dev
    True
    >>> tiny = get_profile("cortex-m0").with_overrides(name="tiny", flash_bytes=64,
    ...                                                runtime_flash_bytes=0)
    >>> load_for_profile(lambda d: d, dev, tiny)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    firmware_sim.profiles.DoesNotFitError: protected_nb artifact does not fit profile 'tiny': flash needs ... bytes but the profile has 64 (over by ... bytes, ...%)
    """
    device = loader(source)
    check_fits(profile, device.resources(), getattr(device, "container", None))
    return device


#: The counts of :func:`image_counts` (the open's work common to every kind).
IMAGE_COUNT_KEYS = ("call", "image_bytes", "arrays", "array_pairs", "name_bytes")


def image_counts(container):
    """What opening any image costs the C runtime, counted for the cost model
    (``ec_image_open`` in ``ec_container.c``): the ``image_bytes`` its CRC-32
    reads, the ``arrays`` of its table (checked pairwise for overlaps) and the
    ``name_bytes`` of its class names, and one ``call``.

    >>> from firmware_sim.naive_bayes import ProtectedNBDevice
    >>> image_counts(ProtectedNBDevice.from_arrays([4, -2, 3], -2, [1, 0, 2], 3).container)
    {'call': 1, 'image_bytes': 340, 'arrays': 4, 'array_pairs': 6, 'name_bytes': 0}
    """
    names = getattr(container, "class_names", None) or ()
    n = len(container.arrays) + (1 if names else 0)
    return {"call": 1, "image_bytes": int(container.nbytes), "arrays": n,
            "array_pairs": n * (n - 1) // 2,
            "name_bytes": sum(len(str(x).encode("utf-8")) + 1 for x in names)}


# --------------------------------------------------------------------------
# Cost estimates
# --------------------------------------------------------------------------
def operation_class(key):
    """Operation class of an operation-count key (``"vote_additions"`` -> ``"add"``), or None."""
    if key in OPERATION_CLASSES:
        return key
    for suffix, cls in _SUFFIX_CLASSES:
        if key.endswith(suffix):
            return cls
    return None


def estimate(profile, resources, *, ops_key="ops_per_inference", extra_ops=None, frames=None):
    """Cycles, time and energy of one inference on a profile.

    Two cost models (``method`` in the result says which priced it):

    * ``"calibrated"``: ``resources`` is a device (anything with
      ``cost_counts``, every built-in kind) and the profile has prices for its
      cost family (``prices``: the built-in AVR, RV32 and Cortex-M profiles,
      fitted by ``benchmarks/calibrate_profiles.py`` against measured cycles):
      the cycles are the counts of ``device.cost_counts(frames)`` times their
      prices; ``open_cycles`` those of ``ec_model_open``. With ``frames`` the
      counts that depend on the data (tree paths, decoded bits, k-NN
      insertions) are counted on them: ``cycles`` is the mean over the
      frames and ``cycles_per_frame`` lists each; without, those counts are
      at their worst case. On the AVR profiles this is within 10% of the
      exact cycles simavr counts, for every kind (``tests/test_cost_model.py``).
    * ``"operation classes"``: a ``resources()`` report (or a device the
      profile has no prices for): every entry of ``resources[ops_key]``
      except ``"total"`` priced by the suffix of its key (``*_additions`` ->
      add, ``*_comparisons`` -> compare, ``*_extractions`` / ``*_xors`` /
      ``*_shifts`` -> logic, ``*_multiplications`` -> mul, ``*_popcounts`` ->
      popcount, ``*_loads`` -> load_ram, ``*_flash_loads`` -> load_flash),
      plus memory traffic: ``parameter_bytes`` read once from flash, one word
      at a time, and the packed received bits
      (``ram_breakdown["received_bits_packed"]``) read once from RAM. An
      order of magnitude: loop control and calls are not counted.

    Energy: with the datasheet's supply current (``supply_v``,
    ``active_current_a``: the AVR profiles) cycles / ``clock_hz`` x V x I;
    else the ``energy_pj`` table over the operation classes (the datapath
    energy, whichever model gives the cycles) plus ``overhead_pj_per_cycle``
    per cycle.

    Parameters
    ----------
    profile : DeviceProfile or str
    resources : dict or device
        A runtime's ``resources()`` report, or the device itself.
    ops_key : str
        Where the operation counts are (operation classes).
    extra_ops : dict of str to int, optional
        More counts by operation class or key (operation classes).
    frames : array, optional
        Frames the calibrated counts are taken on (a device only).

    Returns
    -------
    dict
        ``cycles`` (float), ``time_s``, ``energy_pj``, ``method``,
        ``by_class`` ({class or count: {"count", "cycles", "energy_pj"}}),
        ``unpriced`` (keys with no price: not counted, listed so nothing is
        dropped silently), ``profile``; calibrated, also ``open_cycles``,
        ``open_time_s``, ``family`` (and ``cycles_per_frame`` with frames).

    Examples
    --------
    >>> r = {"ops_per_inference": {"vote_additions": 9, "accumulate_additions": 3,
    ...      "vote_comparisons": 3, "sign_comparisons": 1, "total": 16},
    ...      "parameter_bytes": 22, "ram_breakdown": {"received_bits_packed": 2}}
    >>> e = estimate("cortex-m0", r)
    >>> e["by_class"]["add"]["count"], e["by_class"]["load_flash"]["count"], e["cycles"]
    (12, 6, 36.0)
    >>> from firmware_sim.naive_bayes import ProtectedNBDevice
    >>> dev = ProtectedNBDevice.from_arrays([4, -2, 3], -2, [1, 0, 2], 3)
    >>> e = estimate("atmega328p", dev)
    >>> e["method"], e["cycles"] > 0, round(e["energy_pj"] / e["cycles"], 1)  # pJ per cycle
    ('calibrated', True, 3250.0)
    """
    p = get_profile(profile)
    device = None
    if hasattr(resources, "cost_counts") and hasattr(resources, "resources"):
        device = resources
        resources = device.resources()
    elif frames is not None:
        raise ProfileError("estimate: frames need a device (the counts are taken on them), "
                           "not a resources() report")
    out = _estimate_classes(p, resources, ops_key, extra_ops)
    counts = device.cost_counts(frames) if device is not None else None
    if counts is not None:
        family = counts.get("family", getattr(device.container, "kind", None))
        table = (p.prices or {}).get(family)
        if table is not None and "infer" in table:
            # the datapath energy of the operations stays the operation classes'
            # (it does not depend on how many cycles they take), the per-cycle
            # overhead follows the calibrated cycles
            datapath = out["energy_pj"] - p.overhead_pj_per_cycle * out["cycles"]
            out.update(_estimate_calibrated(p, family, table, counts, frames is not None))
            out["energy_pj"] = datapath + p.overhead_pj_per_cycle * out["cycles"]
    jpc = p.joules_per_cycle
    if jpc is not None:
        out["energy_pj"] = out["cycles"] * jpc * 1e12
        for v in out["by_class"].values():
            v["energy_pj"] = v["cycles"] * jpc * 1e12
        if "open_cycles" in out:
            out["open_energy_pj"] = out["open_cycles"] * jpc * 1e12
    return out


def _price(table, counts):
    """Cycles of ``counts`` at ``table``'s prices, and the counts it has no price for."""
    total, by, unpriced = 0.0, {}, []
    for key, n in counts.items():
        if key not in table:
            unpriced.append(key)
            continue
        c = table[key] * (n.astype(float) if hasattr(n, "astype") else float(n))
        by[key] = (n, c)
        total = total + c
    return total, by, unpriced


def _estimate_calibrated(p, family, table, counts, per_frame):
    import numpy as np

    cycles, by, unpriced = _price(table["infer"], counts["infer"])
    cycles = np.asarray(cycles, float)
    out = {"method": "calibrated", "family": family,
           "cycles": float(cycles.mean()) if cycles.ndim else float(cycles),
           "by_class": {k: {"count": float(np.mean(n)), "cycles": float(np.mean(c)),
                            "energy_pj": 0.0} for k, (n, c) in by.items()},
           "unpriced": sorted(unpriced)}
    if per_frame:
        out["cycles_per_frame"] = np.atleast_1d(cycles).tolist()
    if "open" in table:
        o, _, _ = _price(table["open"], counts["open"])
        out["open_cycles"] = float(o)
        out["open_time_s"] = float(o) / p.clock_hz
    out["time_s"] = out["cycles"] / p.clock_hz
    return out


def _estimate_classes(p, resources, ops_key, extra_ops):
    counts = dict.fromkeys(OPERATION_CLASSES, 0)
    unpriced = []
    ops = dict(resources.get(ops_key, {}))
    ops.update(extra_ops or {})
    for key, n in ops.items():
        if key == "total":
            continue
        weights = operation_weights(key)
        if weights is None:
            unpriced.append(key)
            continue
        for cls, w in weights.items():
            counts[cls] += int(n) * w
    word = p.word_bytes
    if "parameter_bytes" in resources:
        counts["load_flash"] += -(-int(resources["parameter_bytes"]) // word)
    rx = resources.get("ram_breakdown", {}).get("received_bits_packed")
    if rx:
        counts["load_ram"] += -(-int(rx) // word)
    by_class = {}
    cycles = energy = 0.0
    for cls in OPERATION_CLASSES:
        n = counts[cls]
        if not n:
            continue
        c, e = n * p.cycles[cls], n * p.energy_pj[cls]
        by_class[cls] = {"count": n, "cycles": c, "energy_pj": e}
        cycles += c
        energy += e
    energy += p.overhead_pj_per_cycle * cycles
    return {"profile": p.name, "method": "operation classes", "cycles": cycles,
            "time_s": cycles / p.clock_hz, "energy_pj": energy, "by_class": by_class,
            "unpriced": sorted(unpriced)}


def annotate(resources, profile):
    """``resources`` plus ``"estimate"`` (:func:`estimate`) and ``"fits"`` (headroom or
    the reason it does not fit): the cost next to the operation counts.

    Examples
    --------
    >>> from firmware_sim.naive_bayes import ProtectedNBDevice
    >>> dev = ProtectedNBDevice.from_arrays([4, -2, 3], -2, [1, 0, 2], 3)
    >>> r = annotate(dev.resources(), "cortex-m4")
    >>> r["ops_per_inference"]["total"], r["estimate"]["cycles"], r["fits"]["ok"]
    (16, 39.0, True)
    """
    out = dict(resources)
    out["estimate"] = estimate(profile, resources)
    try:
        out["fits"] = {"ok": True, **check_fits(profile, resources)}
    except DoesNotFitError as exc:
        out["fits"] = {"ok": False, "reason": str(exc)}
    return out
