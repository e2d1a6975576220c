"""``edgecode firmware``: write (and build, and check) the C99 firmware of an artifact.

Example::

    edgecode plan house_votes --eps 0.2 --budget 32 --out hv.edgc
    edgecode firmware hv.edgc --out fw --target host --build --check
    edgecode firmware hv.edgc --out fw_m4 --target cortex-m4 --build --check

``--build`` compiles with ``gcc`` (host) or ``arm-none-eabi-gcc`` (Cortex-M)
and prints the real flash and RAM of the smallest firmware that opens the
image and runs one inference, beside ``firmware_sim``'s profile estimate.
``--check`` runs the built runner (on the host, or under ``qemu-system-arm``
for cortex-m3/cortex-m4) on frames of the artifact's dataset and compares
labels and decision integers with ``firmware_sim``, frame for frame.
"""

import sys
from pathlib import Path

import numpy as np

from ._args import positive_int

__all__ = ["run_firmware_cli", "run_demo_stage", "register"]


def run_firmware_cli(artifact, out_dir, target="host", build=False, check=False,
                     dataset=None, split="test", max_points=500, stream=None):
    """Write the firmware; optionally build it, measure it and check it against
    ``firmware_sim``. Returns a dict with what was done and measured."""
    from export.firmware import build_firmware, decision_integers, run_firmware, \
        toolchain_missing, write_firmware
    from firmware_sim import load
    from firmware_sim.profiles import get_profile

    out = stream or sys.stdout
    info = write_firmware(artifact, out_dir, target)
    device = load(Path(artifact) if isinstance(artifact, str) else artifact)
    print(f"wrote {len(info['files'])} files to {info['dir']} ({info['kind']}, target "
          f"{info['target']}): frames of {info['frame_width']} int16 values, "
          f"{info['decision_len']} decision integers per frame", file=out)
    result = {"write": info}
    if not (build or check):
        return result
    missing = toolchain_missing(target)
    if missing:
        raise ValueError(f"cannot build for {target}: {missing}")
    b = build_firmware(info["dir"], target)
    result["build"] = b
    res = device.resources()
    from export.firmware import TARGETS
    prof_name = TARGETS[target].profile
    est = ""
    if prof_name is not None:
        prof = get_profile(prof_name)
        rt_flash, rt_ram = prof.runtime_bytes(device.container.kind)
        est = (f"; firmware_sim profile {prof.name} estimate: flash "
               f"{res['flash_bytes'] + rt_flash} B (image {res['flash_bytes']} + runtime "
               f"{rt_flash}), RAM {res['ram_bytes'] + rt_ram} B (model {res['ram_bytes']} + "
               f"runtime stack {rt_ram})")
    print(f"built {Path(b.runner).name} in {b.compile_s:.2f}s; size probe (open + one "
          f"inference): flash {b.flash_bytes} B (text + rodata + data, image "
          f"{device.container.nbytes} B included), RAM {b.ram_bytes} B (data + bss "
          f"{b.ram_bytes - b.stack_bytes} B, worst-case stack {b.stack_bytes} B){est}",
          file=out)
    if check:
        why = toolchain_missing(target, run=True)
        if why:
            raise ValueError(f"cannot run {target}: {why}")
        frames = _check_frames(device, artifact, dataset, split, max_points)
        labels, dec = run_firmware(info["dir"], frames, target)
        ref_l, ref_d = decision_integers(device, frames)
        same = bool(np.array_equal(labels, ref_l) and np.array_equal(dec, ref_d))
        bad = int(np.sum((labels != ref_l) | np.any(dec != ref_d, axis=1)))
        print(f"checked {len(frames)} frames on {target}: labels and decision integers "
              f"{'equal' if same else 'DIFFER on ' + str(bad)} firmware_sim's", file=out)
        result["check"] = {"frames": len(frames), "equal": same, "mismatches": bad}
        if not same:
            raise ValueError(f"firmware and firmware_sim disagree on {bad} of {len(frames)} "
                             "frames")
    return result


def _check_frames(device, artifact, dataset, split, max_points):
    """Frames to check: the artifact's dataset rows through ``encode`` when the
    data is at hand, plus random frames (noisy bits or extreme int16 values)."""
    from export.registry import kind_rows

    rng = np.random.default_rng(0)
    parts = []
    data = dataset or (device.container.meta or {}).get("dataset")
    if data is not None:
        try:
            X, _, _ = kind_rows(device.container.kind)(device.container, data, split)
            parts.append(device.encode(np.asarray(X)[:max_points]))
        except (ValueError, FileNotFoundError, KeyError):
            pass
    w = device.frame_width
    if device.frame_dtype == np.uint8:
        parts.append(rng.integers(0, 2, (100, w)).astype(np.uint8))
    else:
        rand = rng.integers(-32768, 32768, (100, w)).astype(np.int16)
        rand[0], rand[1] = -32768, 32767
        parts.append(rand)
    # frames of the device's own dtype (uint8 bits or int16 features): the
    # device refuses any other, int64 included
    return np.vstack([np.asarray(p, device.frame_dtype) for p in parts])


def run_demo_stage(out_dir, trials=2000, stream=None):
    """Demo stage: build the host firmware of the planned house-votes model and
    check it against the simulator (a one-line note where there is no compiler)."""
    from export.firmware import toolchain_missing

    out = stream or sys.stdout
    print("\n== 6/6 Firmware: the planned naive Bayes model as C99, built and checked ==",
          file=out)
    art = Path(out_dir) / "house_votes.edgc"
    missing = toolchain_missing("host")
    if missing or not art.exists():
        print(f"skipped: {missing or 'no house_votes.edgc from the first stage'}", file=out)
        return {"skipped": True}
    return run_firmware_cli(str(art), Path(out_dir) / "firmware_host", "host", build=True,
                            check=True, dataset="house_votes", split="all", stream=out)


def register(sub):
    """Add the ``firmware`` sub-command to ``sub`` (argparse subparsers)."""
    from ._names import TARGETS

    f = sub.add_parser("firmware", help="write the C99 firmware of an artifact (and build, "
                       "measure and check it)")
    f.add_argument("artifact", help="device container (any kind)")
    f.add_argument("--out", required=True, help="directory to write (created inside an "
                   "existing one)")
    f.add_argument("--target", default="host", choices=sorted(TARGETS),
                   help="host (gcc) or a Cortex-M (arm-none-eabi-gcc; cortex-m3 and "
                        "cortex-m4 run under qemu-system-arm)")
    f.add_argument("--build", action="store_true", help="compile and print real flash/RAM")
    f.add_argument("--check", action="store_true", help="build, run and compare with "
                   "firmware_sim frame for frame")
    f.add_argument("--data", default=None, help="frames for --check: a dataset as the other "
                   "commands take it (default: the one recorded in the artifact)")
    f.add_argument("--split", default="test", help="rows for --check when the data has a "
                   "split")
    f.add_argument("--max-points", type=positive_int, default=500,
                   help="dataset rows checked (plus 100 random frames)")
    f.set_defaults(out_is_dir=True, func=lambda a: run_firmware_cli(a.artifact, a.out, a.target,
                                                   build=a.build or a.check, check=a.check,
                                                   dataset=a.data, split=a.split,
                                                   max_points=a.max_points))
