"""Cortex-M cycles from a QEMU instruction trace, priced with the Arm TRM
timings (issue 26 item 4): what ``benchmarks/calibrate_profiles.py`` fits the
``cortex-m0`` and ``cortex-m4`` profiles' prices against.

QEMU counts instructions, not cycles. Here a firmware (the runtime, the image
and a small ``trace_main.c`` holding the frames as a C array) is built for the
core and run under ``qemu-system-arm -d in_asm,exec,nochain``: the log lists
every translated block's instructions and every execution of a block, so the
executed instructions are known one by one; each is priced with the
instruction timing table of the core's Technical Reference Manual
(:data:`CORTEX_M4_CYCLES`: Cortex-M4 TRM, r0p1, "Instruction set summary",
table 3-1; :data:`CORTEX_M0PLUS_CYCLES`: Cortex-M0+ TRM, r0p1, "Instruction
set summary", table 3-1). A call to ``ec_trace_mark`` between the calls
splits the trace into the open and each inference.

**Approximate**: no flash wait states (the TRM's figures are for zero-wait
memory; a part at 48-80 MHz adds 1-3 per flash access unless its cache
hits), no pipeline stalls beyond the table (the load-use and back-to-back
load pipelining of the M4 are left out: every load is 2 cycles), taken
branches at 1 + P with P = 2 on the M4 (the TRM gives 1-3) and P = 1 on the
M0+ (2-stage pipeline), division at its middle figure (M4 UDIV/SDIV 2-12:
7). The M0+ firmware (ARMv6-M code) runs on QEMU's Cortex-M3 (mps2-an385),
which executes the same instructions; its multiply is priced as the
single-cycle multiplier option (32 cycles with the small one).
"""

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np

__all__ = ["CORTEX_M4_CYCLES", "CORTEX_M0PLUS_CYCLES", "instruction_cycles", "trace_cycles"]

#: Cortex-M4 cycles per instruction class (TRM table 3-1); P = 2.
CORTEX_M4_CYCLES = {"alu": 1, "mul": 1, "mul_long": 1, "div": 7, "load": 2, "store": 2,
                    "load_double": 3, "branch_taken": 3, "branch_not_taken": 1, "call": 3,
                    "table_branch": 4, "it": 0, "multiple_base": 1, "pc_load_extra": 2,
                    "nop": 1}
#: Cortex-M0+ cycles per instruction class (TRM table 3-1; single-cycle
#: multiplier option); P = 1.
CORTEX_M0PLUS_CYCLES = {"alu": 1, "mul": 1, "mul_long": 1, "div": 1, "load": 2, "store": 2,
                        "load_double": 4, "branch_taken": 2, "branch_not_taken": 1, "call": 3,
                        "table_branch": 3, "it": 0, "multiple_base": 1, "pc_load_extra": 2,
                        "nop": 1}

_TABLES = {"cortex-m4": ("cortex-m4", "mps2-an386", "cortex-m4", CORTEX_M4_CYCLES),
           "cortex-m0plus": ("cortex-m0plus", "mps2-an385", "cortex-m3", CORTEX_M0PLUS_CYCLES)}
_CONDS = ("eq", "ne", "cs", "cc", "hs", "lo", "mi", "pl", "vs", "vc", "hi", "ls", "ge", "lt",
          "gt", "le", "al")
_INSN = re.compile(r"^0x([0-9a-f]+):\s+([0-9a-f]{4,8}(?: [0-9a-f]{4})?)\s+(\S+)\s*(.*)$")
_EXEC = re.compile(r"^Trace \d+: \S+ \[[0-9a-f]+/([0-9a-f]+)/")


def _base(mnemonic):
    m = mnemonic.lower().split(".")[0]
    return m


def instruction_cycles(mnemonic, operands, table, taken=None):
    """Cycles of one instruction (``mnemonic`` as QEMU disassembles it) by
    ``table``; ``taken``: whether a branch was taken (None: not a branch, or
    unknown -> taken)."""
    m = _base(mnemonic)
    ops = operands.lower()
    regs = len(re.findall(r"\b(?:r\d+|sp|lr|pc|ip|fp|sl|sb)\b", ops.split("{", 1)[1])) \
        if "{" in ops else 0
    if m in ("push", "pop", "ldm", "stm", "ldmia", "stmia", "ldmdb", "stmdb", "ldmfd",
             "stmfd"):
        c = table["multiple_base"] + regs
        if "pc" in ops and m in ("pop", "ldm", "ldmia", "ldmfd"):
            c += table["pc_load_extra"]
        return c
    if m in ("tbb", "tbh"):
        return table["table_branch"]
    if m in ("bl", "blx"):
        return table["call"]
    if m in ("cbz", "cbnz") or m == "bx" or re.fullmatch(r"b(" + "|".join(_CONDS) + ")?", m):
        return table["branch_taken"] if taken in (None, True) else table["branch_not_taken"]
    if m.startswith("it"):
        return table["it"]
    if m in ("nop", "yield", "wfi", "wfe", "sev", "dmb", "dsb", "isb"):
        return table["nop"]
    if m in ("udiv", "sdiv"):
        return table["div"]
    if m in ("umull", "smull", "umlal", "smlal"):
        return table["mul_long"]
    if m.startswith(("mul", "mla", "mls", "smul", "smla")):
        return table["mul"]
    if m.startswith(("ldrd", "strd")):
        return table["load_double"]
    if m.startswith("ldr") or m.startswith("ldrex"):
        c = table["load"]
        if re.match(r"pc\b", ops):
            c += table["pc_load_extra"]
        return c
    if m.startswith("str"):
        return table["store"]
    return table["alu"]


def _is_branch(mnemonic, operands):
    m = _base(mnemonic)
    if m in ("cbz", "cbnz", "bx", "tbb", "tbh") or re.fullmatch(r"b(" + "|".join(_CONDS) + ")?", m):
        return True
    return (m in ("pop", "ldm", "ldmia") and "pc" in operands.lower())


_TRACE_MAIN = """\
/* trace_main.c - open the model and run the frames, with a call to
   ec_trace_mark around each call (export.cortex_cycles splits the QEMU trace
   there). Generated; not part of the runtime. */
#include "edgecode_rt.h"
#include "model_image.h"

volatile int ec_trace_sink;
__attribute__((noinline)) void ec_trace_mark(int m)
{{
    ec_trace_sink = m;
    __asm__ volatile("" ::: "memory");
}}

static const int16_t frames[{n}][{w}] = {{
{rows}
}};
static uint64_t workspace[(EC_WORKSPACE_BYTES + 7) / 8 + 1];
static int64_t decision[EC_DECISION_LEN > 0 ? EC_DECISION_LEN : 1];
static ec_model model;

int main(void)
{{
    int i;
    int32_t label;
    ec_status s;
    ec_trace_mark(1);
#ifdef EC_MODEL_IMAGE_RW
    s = ec_model_open_rw(ec_model_image, ec_model_image_size, &model);  /* protected: scrubbed */
#else
    s = ec_model_open(ec_model_image, ec_model_image_size, &model);
#endif
    ec_trace_mark(2);
    if (s != EC_OK) return 4;
    for (i = 0; i < {n}; i++) {{
        ec_trace_mark(3);
        s = ec_infer(&model, frames[i], &label, decision, workspace,
                     (uint32_t)sizeof workspace);
        ec_trace_mark(4);
        if (s != EC_OK) return 5;
    }}
    return 0;
}}
"""


def _run(cmd, cwd, timeout=600):
    res = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    if res.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd[:3]))} ... failed ({res.returncode}):\n"
                           + res.stdout[-2000:] + res.stderr[-2000:])
    return res


def trace_cycles(device, frames, target, workdir):
    """``(open_cycles, infer_cycles)`` of ``device`` on ``frames`` for
    ``target`` (``cortex-m4``, or ``cortex-m0plus``: see the module's
    notes), from a QEMU trace priced by the TRM. ``cortex-m3`` prices the M0+
    table too (the ``cortex-m0`` profile's target)."""
    from export.firmware import write_firmware
    from export.targets import TARGETS

    key = "cortex-m0plus" if target in ("cortex-m0plus", "cortex-m3") else target
    if key not in _TABLES:
        raise ValueError(f"trace_cycles: no TRM table for {target!r}; known: {sorted(_TABLES)}")
    build_target, machine, cpu, table = _TABLES[key]
    for tool in ("arm-none-eabi-gcc", "qemu-system-arm"):
        if shutil.which(tool) is None:
            raise RuntimeError(f"trace_cycles needs {tool}")
    d = Path(workdir)
    info = write_firmware(device.container, d, build_target, atomic=False)
    frames = np.asarray(frames)
    rows = ",\n".join("{" + ", ".join(str(int(v)) for v in r) + "}" for r in frames)
    (d / "trace_main.c").write_text(_TRACE_MAIN.format(n=len(frames), w=frames.shape[1],
                                                       rows=rows))
    t = TARGETS[build_target]
    srcs = [str(d / s) for s in info["sources"]] + [str(d / "model_image.c"),
                                                    str(d / "trace_main.c"),
                                                    str(d / "startup.c")]
    elf = d / "trace.elf"
    _run([t.cc, *t.compile_flags(), "-O2", "-include", "model_config.h", "-I", str(d), *srcs,
          "-T", str(d / "link.ld"), "-nostartfiles", "--specs=rdimon.specs", "-o", str(elf)], d)
    nm = _run(["arm-none-eabi-nm", str(elf)], d).stdout
    mark = next(int(line.split()[0], 16) & ~1 for line in nm.splitlines()
                if line.endswith(" ec_trace_mark"))
    log = d / "trace.log"
    _run(["qemu-system-arm", "-M", machine, "-cpu", cpu, "-nographic", "-monitor", "none",
          "-semihosting-config", "enable=on,target=native", "-d", "in_asm,exec,nochain",
          "-D", str(log), "-kernel", str(elf)], d)
    text = log.read_text(errors="replace")
    log.unlink()                       # tens of MB for a large model: priced, then dropped
    return _price_log(text, mark, table, len(frames))


def _price_log(text, mark, table, n_frames):
    blocks = {}          # pc -> [(addr, size, mnemonic, operands)]
    cur = None
    execs = []
    for line in text.splitlines():
        if line.startswith("IN:"):
            cur = []
            continue
        m = _INSN.match(line)
        if m and cur is not None:
            addr = int(m.group(1), 16)
            size = len(m.group(2).replace(" ", "")) // 2
            cur.append((addr, size, m.group(3), m.group(4)))
            if len(cur) == 1:
                blocks[addr] = cur
            continue
        e = _EXEC.match(line)
        if e:
            cur = None
            execs.append(int(e.group(1), 16))
    segments = []
    state, acc = None, 0.0
    for i, pc in enumerate(execs):
        if pc == mark:
            if state is not None:
                segments.append(acc)
            state, acc = True, 0.0
            continue
        insns = blocks.get(pc)
        if insns is None or state is None:
            continue
        last = insns[-1]
        nxt = execs[i + 1] if i + 1 < len(execs) else None
        for a, size, mn, ops in insns[:-1]:
            acc += instruction_cycles(mn, ops, table)
        taken = None
        if _is_branch(last[2], last[3]) and nxt is not None:
            taken = nxt != last[0] + last[1]
        acc += instruction_cycles(last[2], last[3], table, taken)
    # segments: [open, between(2->3), infer, between(4->3), infer, ..., tail]
    # marks: 1 open 2 (3 infer 4)*; the segment after mark 1 is the open,
    # after each mark 3 an inference
    if len(segments) < 1 + 2 * n_frames:
        raise RuntimeError(f"trace_cycles: {len(segments)} segments in the trace for "
                           f"{n_frames} frames (did the run end early?)")
    open_cycles = segments[0]
    infer = [segments[2 + 2 * k] for k in range(n_frames)]
    # the call of ec_trace_mark's caller side is counted in each segment: a
    # constant few cycles, left in (as the AVR markers' OUT instruction is)
    return float(open_cycles), np.asarray(infer, float)
