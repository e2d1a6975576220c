"""``edgecode firmware``: write (and build, and check) the C99 firmware of an artifact.

Example::

    edgecode plan house_votes --eps 0.2 --budget 32 --out hv.edgc
    edgecode firmware hv.edgc --out fw --target host --build --check
    edgecode firmware hv.edgc --out fw_m4 --target cortex-m4 --build --check
    edgecode firmware hv.edgc --out fw_uno --target atmega328p --check

``--build`` compiles for the target (``export.targets``: ``gcc`` on the host,
``arm-none-eabi-gcc`` for Cortex-M, ``avr-gcc`` for the ATmega328P/2560,
``riscv64-unknown-elf-gcc`` for rv32imac) and prints the real flash and RAM
of the smallest firmware that opens the image and runs one inference,
beside ``firmware_sim``'s profile estimate. ``--check`` runs the built
runner (on the host, under ``qemu-system-arm`` for cortex-m3/cortex-m4,
under simavr for the AVR parts, under ``qemu-system-riscv32`` for rv32imac)
on frames of the artifact's dataset and compares labels and decision
integers with ``firmware_sim``, frame for frame; on AVR it also prints the
exact cycles of the open and of the inferences and their stack, on rv32imac
their instruction counts. The
output folder is written under a temporary name and renamed at the end
(an error or Ctrl-C leaves it as it was); a build over the target's part
(``--profile``) is an error unless ``--allow-oversize``. ``docs/firmware.md``
has the details.
"""

import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from ._args import UsageError, nonnegative_int, positive_int

__all__ = ["run_firmware_cli", "run_demo_stage", "register"]


def run_firmware_cli(artifact, out_dir, target="host", build=False, check=False,
                     dataset=None, split="test", max_points=500, random_frames=None,
                     allow_oversize=False, profile=None, stream=None, err_stream=None,
                     data_options=None, trees="table"):
    """Write the firmware; optionally build it, measure it and check it against
    ``firmware_sim``. Returns a dict with what was done and measured.

    Everything is written under a temporary folder next to ``out_dir`` and
    moved into place at the end (:class:`export.atomic.AtomicOutputs`): an
    error, a mismatch, an oversize build or Ctrl-C leaves ``out_dir`` as it
    was. Up front, before anything is
    written: the artifact is validated, the toolchain looked for and (with
    ``check``) the frames made from the dataset (``dataset``, else the one
    the artifact records; a dataset that cannot be read is an error unless
    ``random_frames`` is given, then only random frames are checked, and the
    output says so). A build whose flash or RAM exceeds the target's part
    (``profile``, default the target's built-in profile) is an error unless
    ``allow_oversize`` (then a warning line on ``err_stream``); without a
    build, the profile's estimate over the part is a warning line.
    """
    from export.atomic import AtomicOutputs
    from export.firmware import build_firmware, decision_integers, oversize, \
        remove_stale_sources, run_firmware_measured, target_limits, target_profile, \
        toolchain_missing, write_firmware
    from firmware_sim import load

    out = stream or sys.stdout
    err = err_stream or sys.stderr
    build = build or check
    device = load(Path(artifact) if isinstance(artifact, str) else artifact)
    kind = device.container.kind
    prof = target_profile(target, profile)
    limits = target_limits(target, profile)          # the profile, or the target's part
    if build:
        missing = toolchain_missing(target, run=check)
        if missing:
            raise UsageError(f"cannot {'run' if check else 'build'} for {target}: {missing}")
    frames = None
    if check:
        frames, what = _check_frames(device, dataset, split, max_points, random_frames, err,
                                     data_options)
    dest = Path(out_dir)
    result = {}
    res = device.resources()
    with AtomicOutputs(dirs=[dest]) as outputs:
        tmp = outputs[dest]
        try:
            info = write_firmware(artifact, tmp, target, atomic=False, trees=trees)
        except ValueError as exc:                  # --trees inline of a model with no code form
            if trees == "table":
                raise
            raise UsageError(str(exc)) from None
        info["dir"] = str(dest)
        result["write"] = info
        print(f"firmware for {dest} ({kind}, target {info['target']}): {len(info['files'])} "
              f"files, frames of {info['frame_width']} int16 values, {info['decision_len']} "
              "decision integers per frame", file=out)
        est = ""
        if prof is not None:
            rt_flash, rt_ram = prof.runtime_bytes(kind)
            est_flash, est_ram = res["flash_bytes"] + rt_flash, res["ram_bytes"] + rt_ram
            est = (f"; firmware_sim profile {prof.name} estimate: flash {est_flash} B (image "
                   f"{res['flash_bytes']} + runtime {rt_flash}), RAM {est_ram} B (model "
                   f"{res['ram_bytes']} + runtime stack {rt_ram})")
        if not build:
            if prof is not None:
                big = oversize(prof, est_flash, est_ram, measured=False)
            else:                    # a part without a profile: the image and buffers alone
                big = oversize(limits, res["flash_bytes"], res["ram_bytes"])
                big = big and big + " (the image and the model's buffers alone)"
            if big:
                result["oversize"] = big
                print(f"warning: {target}: this model does not fit the part: {big}; "
                      "--build measures it (and refuses it unless --allow-oversize)", file=err)
        else:
            b = build_firmware(tmp, target)
            result["build"] = b
            stack = (f"worst-case stack {b.stack_bytes} B"
                     if b.stack_note == "worst case of the call graph"
                     else f"stack {b.stack_bytes} B: {b.stack_note}")
            print(f"built {Path(b.runner).name} in {b.compile_s:.2f}s; size probe (open + one "
                  f"inference): flash {b.flash_bytes} B (text + rodata + data, "
                  + (f"image {device.container.nbytes} B included" if trees == "table" else
                     f"trees {trees}: no image, an 8-byte stamp")
                  + f"), RAM {b.ram_bytes} B (data + bss "
                  f"{b.ram_bytes - b.stack_bytes} B, {stack}){est}", file=out)
            big = oversize(limits, b.flash_bytes, b.ram_bytes)
            if big:
                result["oversize"] = big
                if not allow_oversize:
                    raise UsageError(
                        f"{target}: the built firmware does not fit the part: {big}; nothing "
                        f"was written to {dest}. Shrink the model, name your part with "
                        "--profile NAME|FILE, or pass --allow-oversize to keep it anyway")
                print(f"warning: {target}: the built firmware does not fit the part: {big} "
                      "(kept: --allow-oversize)", file=err)
        if check:
            run = run_firmware_measured(tmp, frames, target)
            labels, dec = run.labels, run.decisions
            ref_l, ref_d = decision_integers(device, frames)
            same = bool(np.array_equal(labels, ref_l) and np.array_equal(dec, ref_d))
            bad = int(np.sum((labels != ref_l) | np.any(dec != ref_d, axis=1)))
            print(f"checked {len(frames)} frames on {target} ({what}): labels and decision "
                  f"integers {'equal' if same else 'DIFFER on ' + str(bad)} firmware_sim's",
                  file=out)
            result["check"] = {"frames": len(frames), "equal": same, "mismatches": bad,
                               "what": what, "run": run}
            if run.summary() is not None:
                print(run.summary(), file=out)
            line = _estimate_line(device, frames, target, run, result["check"])
            if line:
                print(line, file=out)
            if not same:
                raise ValueError(f"firmware and firmware_sim disagree on {bad} of "
                                 f"{len(frames)} frames; nothing was written to {dest}")
    remove_stale_sources(dest, info["sources"], info["files"])
    print(f"wrote {len(info['files'])} files to {dest}", file=out)
    return result


#: ``--target`` -> the built-in profile whose calibrated prices price it.
_ESTIMATE_PROFILE = {"atmega328p": "atmega328p", "atmega2560": "atmega2560",
                     "rv32imac": "rv32imac", "cortex-m4": "cortex-m4",
                     "cortex-m0plus": "cortex-m0"}


def _estimate_line(device, frames, target, run, check):
    """The calibrated estimate (``firmware_sim.profiles.estimate`` on the checked
    frames) beside the measured counts, or None (no calibrated profile)."""
    from firmware_sim.profiles import estimate

    name = _ESTIMATE_PROFILE.get(target)
    if name is None:
        return None
    e = estimate(name, device, frames=frames)
    if e["method"] != "calibrated":
        return None
    check["estimate"] = {k: e[k] for k in ("cycles", "open_cycles", "energy_pj", "profile")}
    unit = run.unit or "cycles"
    text = (f"estimate (profile {name}, calibrated cost model): open {e['open_cycles']:,.0f} "
            f"{unit}, inference {e['cycles']:,.0f} {unit} (mean of the frames)")
    counts = getattr(run, "infer_counts", None)
    if counts is not None and len(counts):
        measured = float(np.mean(counts))
        text += f", {e['cycles'] / measured:.3f}x the {measured:,.0f} measured"
    if "open_energy_pj" in e:
        text += (f"; energy per inference {e['energy_pj'] / 1e6:.3f} uJ (datasheet current at "
                 f"{e['time_s'] * 1e3:.3f} ms)")
    return text


def _random_frames(device, n, rng):
    from firmware_sim._limits import check_allocation

    w = device.frame_width
    # priced before it is made: every frame also travels as a line of text
    check_allocation(f"--random-frames {n}", 8 * n * w, what="the random frames (as int64)",
                     hint="check fewer random frames")
    if device.frame_dtype == np.uint8:
        return rng.integers(0, 2, (n, w)).astype(np.uint8)
    rand = rng.integers(-32768, 32768, (n, w)).astype(np.int16)
    rand[:2] = np.array([-32768, 32767], np.int16)[:n, None]     # the extremes
    return rand


def _check_frames(device, dataset, split, max_points, random_frames, err, data_options=None):
    """``(frames, what)`` to check: the dataset's rows through ``encode`` (``dataset``,
    else the one the artifact records), then random frames (noisy bits, or int16
    values with the extremes): 100 unless ``random_frames`` says how many. Data
    that cannot be read is a usage error naming it, unless ``random_frames`` was
    given for an artifact whose recorded data is missing: then only random
    frames are checked, and a line on ``err`` says so."""
    from export.registry import kind_rows

    rng = np.random.default_rng(0)
    recorded = (device.container.meta or {}).get("dataset")
    data = dataset if dataset is not None else recorded
    parts, what = [], []
    hint = ("pass --data DATA with the rows to check (a bundled dataset name or a CSV path, "
            "as the other commands take them), or --random-frames N to check N random "
            "frames only")
    if data is None:
        if random_frames is None:
            raise UsageError(f"--check needs frames to compare: the artifact records no "
                             f"dataset; {hint}")
        print("note: the artifact records no dataset: checking random frames only "
              "(--random-frames)", file=err)
    else:
        source = "--data" if dataset is not None else "the dataset the artifact records,"
        # the frames need the features only: the rows are read without the
        # artifact's class names, so rows whose labels the model never saw (an
        # SSBC table without some class) are checked too
        c = device.container
        unlabelled = SimpleNamespace(kind=c.kind, arrays=c.arrays, nbytes=c.nbytes,
                                     meta={k: v for k, v in (c.meta or {}).items()
                                           if k != "classes"})
        try:
            X, _, name = kind_rows(c.kind)(unlabelled, data, split, **(data_options or {}))
            X = np.asarray(X)
            if X.shape[0] == 0:
                raise ValueError(f"no rows in split {split!r}")
            rows = device.encode(X[:max_points])
        except (ValueError, TypeError, FileNotFoundError, KeyError, OSError) as exc:
            why = " ".join(str(exc).splitlines()) or type(exc).__name__
            if dataset is not None or random_frames is None:
                raise UsageError(f"--check cannot use {source} {str(data)!r}: {why}; "
                                 f"{hint}") from None
            print(f"note: {source} {str(data)!r}, cannot be used ({why}): checking random "
                  "frames only (--random-frames)", file=err)
        else:
            parts.append(rows)
            what.append(f"{len(rows)} rows of {name}")
    n_random = 100 if random_frames is None else int(random_frames)
    if n_random:
        parts.append(_random_frames(device, n_random, rng))
        what.append(f"{n_random} random frames" + ("" if device.frame_dtype == np.uint8
                                                   else ", int16 extremes included"))
    if not parts:
        raise UsageError(f"--check has nothing to compare: no dataset rows and "
                         f"--random-frames 0; {hint}")
    # frames of the device's own dtype (uint8 bits or int16 features): the
    # device refuses any other, int64 included
    return np.vstack([np.asarray(p, device.frame_dtype) for p in parts]), " + ".join(what)


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
                   help="host (gcc), a Cortex-M (arm-none-eabi-gcc; cortex-m3 and cortex-m4 "
                        "run under qemu-system-arm), an AVR (avr-gcc; atmega328p and "
                        "atmega2560 run under simavr, cycle-exact) or rv32imac "
                        "(riscv64-unknown-elf-gcc + picolibc; runs under "
                        "qemu-system-riscv32)")
    f.add_argument("--format", default="sources", choices=("sources", "arduino", "cmake"),
                   help="layout of --out: sources (the runtime, image, runner and Makefile "
                   "for --target), arduino (an Arduino library: library.properties, src/, "
                   "an example sketch reading frames over Serial) or cmake (a CMakeLists.txt "
                   "with the library target edgecode_model and an example); arduino and "
                   "cmake are written only (no --build/--check)")
    f.add_argument("--build", action="store_true", help="compile and print real flash/RAM")
    f.add_argument("--check", action="store_true", help="build, run and compare with "
                   "firmware_sim frame for frame")
    f.add_argument("--data", default=None, help="frames for --check: a dataset as the other "
                   "commands take it (default: the one recorded in the artifact)")
    f.add_argument("--split", default="test", help="rows for --check when the data has a "
                   "split")
    from export.data import add_data_options
    add_data_options(f, label_help="label column of a --data CSV (default: the one the "
                     "artifact records, else 'class')")
    f.add_argument("--max-points", type=positive_int, default=500,
                   help="dataset rows checked")
    f.add_argument("--random-frames", type=nonnegative_int, default=None, metavar="N",
                   help="random frames checked after the dataset rows (int16 extremes "
                   "included; default 100). Given explicitly, it also lets --check run on "
                   "random frames only when the artifact's recorded dataset cannot be found "
                   "(without it, that is an error asking for --data)")
    f.add_argument("--profile", default=None, metavar="NAME|FILE",
                   help="the part to fit: a built-in profile or a JSON/TOML profile file "
                   "(default: the target's profile: cortex-m0 for cortex-m0plus and "
                   "cortex-m3, cortex-m4 for cortex-m4; the part's flash and RAM for the AVR "
                   "targets; none for host and rv32imac)")
    f.add_argument("--allow-oversize", action="store_true",
                   help="keep a build whose flash or RAM exceeds the part (a warning instead "
                   "of an error)")
    # issue 26 item 2: the tree forms
    f.add_argument("--trees", default="table", choices=("table", "inline", "arrays"),
                   help="tree models: table (default: the image, verified at open and walked "
                   "by the runtime), inline (the trees as generated C code, the fastest form) "
                   "or arrays (the node arrays compiled in and walked by one loop, the "
                   "smallest form); inline and arrays have no image to verify: an 8-byte "
                   "stamp names the model")
    f.set_defaults(out_is_dir=True, func=lambda a: run_firmware_cli(
        a.artifact, a.out, a.target, build=a.build or a.check, check=a.check, dataset=a.data,
        split=a.split, max_points=a.max_points, random_frames=a.random_frames,
        allow_oversize=a.allow_oversize, profile=a.profile, data_options=_data_options(a),
        trees=a.trees)
        if a.format == "sources" else run_format_cli(a.artifact, a.out, a.format, a))


def run_format_cli(artifact, out_dir, fmt, args=None, stream=None):
    """``edgecode firmware --format arduino|cmake``: write the library (issue 26)."""
    from export.formats import write_format

    out = stream or sys.stdout
    if args is not None and (args.build or args.check):
        raise UsageError(f"--format {fmt} writes the library only; --build and --check "
                         "build and run the sources layout (--format sources)")
    info = write_format(artifact, out_dir, fmt)
    if fmt == "arduino":
        how = (f"an Arduino library '{info['name']}' (copy it into your sketchbook's "
               f"libraries/ folder; example sketch {info['sketch']})")
    else:
        how = "a CMake library target edgecode_model (add_subdirectory it) and edgecode_example"
    print(f"wrote {len(info['files'])} files to {out_dir}: {how}; {info['kind']} model, frames "
          f"of {info['frame_width']} int16 values", file=out)
    return info


def _data_options(args):
    from export.data import data_options
    return data_options(args)
