"""Real costs of the budget front (issue 28, "real costs"): one front point
built and run for the profile's firmware target.

:func:`measure_point` writes the firmware of one trained configuration for
the target (:func:`export.firmware.write_firmware`), builds it
(:func:`export.firmware.build_firmware`: flash and RAM of the size probe)
and, on a target the runner runs on cycle-exact (the AVR parts under
simavr), runs it on a few of the configuration's test frames for the exact
cycles of the open and of each inference (their mean is the entry's
``cycles``); elsewhere the cycles are the profile's calibrated estimate
(:func:`firmware_sim.profiles.estimate`) counted on the same frames. The
budget search (:func:`export.budget.search`) calls it for every point of
the front, in its own process, after the configurations were measured.
Everything is built in a temporary folder that is removed on return, on an
error and on Ctrl-C.
"""

import tempfile
import time

import numpy as np

__all__ = ["FRONT_CYCLE_FRAMES", "measure_point", "front_capability", "energy_nj"]

#: Test frames a front point runs on for its cycles (the mean is reported).
FRONT_CYCLE_FRAMES = 8


def front_capability(target):
    """``(can_build, can_count, why)`` for ``target``: whether its firmware can be
    built here, whether its runner counts exact cycles here (simavr), and why
    not (None when both hold, or a sentence)."""
    from export.firmware import toolchain_missing
    from export.targets import get_target

    if target is None:
        return False, False, "the profile has no firmware target"
    missing = toolchain_missing(target)
    if missing:
        return False, False, f"cannot build for {target}: {missing}"
    t = get_target(target)
    if t.simavr is None:
        return True, False, None
    missing = toolchain_missing(target, run=True)
    if missing:
        return True, False, f"cannot run {target} under simavr: {missing}"
    return True, True, None


def energy_nj(profile, est, cycles):
    """Energy of one inference of ``cycles`` on ``profile`` in nJ: the datasheet's
    supply power per cycle where the profile has it (the AVR parts), else the
    estimate's datapath energy plus the profile's per-cycle overhead at these
    cycles (as :func:`firmware_sim.profiles.estimate` prices it)."""
    jpc = profile.joules_per_cycle
    if jpc is not None:
        return float(cycles) * jpc * 1e9
    over = float(profile.overhead_pj_per_cycle)
    return (float(est["energy_pj"]) - over * float(est["cycles"]) + over * float(cycles)) / 1e3


def measure_point(fitted, profile, target, *, count_cycles, n_frames=FRONT_CYCLE_FRAMES,
                  jobs=None):
    """Build ``fitted`` (a trained configuration) for ``target`` and measure it.

    Parameters
    ----------
    fitted : export._budget_space.Fitted
    profile : firmware_sim.profiles.DeviceProfile
        Prices the cycles where they are not counted, and the energy.
    target : str
        An :data:`export.targets.TARGETS` name.
    count_cycles : bool
        Run the runner under simavr for exact cycles (AVR targets only).
    n_frames : int
        The first this many test frames of the configuration.

    Returns
    -------
    dict
        ``flash_bytes``, ``ram_bytes`` (the size probe), ``cycles`` (mean
        over the frames), ``open_cycles``, ``energy_nj``, ``cycles_source``
        (``"simavr"`` or ``"estimate"``), ``cycles_frames``, ``cycles_note``
        (why an AVR point fell back to the estimate, else None),
        ``firmware_agrees`` (the runner's labels and decision integers equal
        ``firmware_sim``'s on the frames; None when not run), ``seconds``.

    Raises
    ------
    RuntimeError
        The firmware cannot be built for the target (the compiler's message;
        on AVR an image past the first 64 KB of flash).
    """
    from export.firmware import (build_firmware, decision_integers, run_firmware_measured,
                                 write_firmware)
    from firmware_sim.profiles import estimate

    t0 = time.perf_counter()
    device = fitted.export.device
    frames = np.asarray(device.encode(fitted.X_device[:int(n_frames)]), device.frame_dtype)
    est = estimate(profile, device, frames=frames)
    out = {"cycles": float(est["cycles"]), "open_cycles": est.get("open_cycles"),
           "cycles_source": "estimate", "cycles_frames": int(len(frames)),
           "cycles_note": None, "firmware_agrees": None}
    with tempfile.TemporaryDirectory(prefix="edgecode-front-") as d:
        write_firmware(fitted.export.container, d, target, atomic=False)
        b = build_firmware(d, target, jobs=jobs)
        out["flash_bytes"], out["ram_bytes"] = int(b.flash_bytes), int(b.ram_bytes)
        if count_cycles:
            try:
                run = run_firmware_measured(d, frames, target)
            except RuntimeError as exc:      # the runner alone over the part
                out["cycles_note"] = " ".join(str(exc).split())[:300]
            else:
                ref_l, ref_d = decision_integers(device, frames)
                out["firmware_agrees"] = bool(np.array_equal(run.labels, ref_l)
                                              and np.array_equal(run.decisions, ref_d))
                if run.infer_counts is not None and len(run.infer_counts):
                    out["cycles"] = float(np.mean(run.infer_counts))
                    out["open_cycles"] = (None if run.open_count is None
                                          else float(run.open_count))
                    out["cycles_source"] = "simavr"
    out["open_cycles"] = None if out["open_cycles"] is None else float(out["open_cycles"])
    out["energy_nj"] = energy_nj(profile, est, out["cycles"])
    out["seconds"] = time.perf_counter() - t0
    return out
