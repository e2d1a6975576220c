"""The image path: faults on the stored image, one faulty image per trial.

Each trial applies the fault to the device's container
(:meth:`~firmware_sim.faults.Fault.apply_container`), loads the faulty image
with :func:`firmware_sim.load` exactly as a device would boot it, and runs
it on every point's clean frame; with a
:class:`~firmware_sim.faults.Compose`, its bit faults then hit ``site`` of
that faulty device. An image the loader refuses (``ContainerError``), or a
faulty device that cannot read the clean frame (``FrameError``: e.g. an
upset repetition count changes the frame length), is *refused*.

Imports numpy, the contract and the faults only.
"""

import numpy as np

from ..contract import load
from ..errors import ContainerError, FrameError
from ..faults import Compose

__all__ = ["image_point", "faulty_labels"]


def image_point(device, frames, clean, y, fault, rng, n_trials, site="wire", progress=None):
    """``(same, correct or None, refused)`` of ``n_trials`` faulty images, each run
    on every point's clean frame. ``progress(rows_done)`` after each trial
    (``t`` rows each)."""
    t = frames.shape[0]
    bit_faults = fault.bit_faults if isinstance(fault, Compose) else ()
    same = np.zeros(t, np.int64)
    correct = None if y is None else np.zeros(t, np.int64)
    refused = 0
    for trial in range(n_trials):
        if progress is not None and trial:
            progress(trial * t)
        try:
            dev = load(fault.apply_container(device.container, rng))
        except ContainerError:
            refused += 1
            continue
        try:
            labels = faulty_labels(dev, frames, bit_faults, rng, site)
        except FrameError:  # the faulty device expects another frame: desynchronised
            refused += 1
            continue
        same += labels == clean
        if y is not None:
            correct += labels == y
    return same, correct, refused


def faulty_labels(dev, frames, bit_faults, rng, site):
    """Labels of a (faulty) device on the clean frames, after the bit faults at ``site``."""
    if not bit_faults:
        return np.asarray(dev.labels(frames), np.int64)
    if site == "wire":
        bits = dev.wire_bits(frames).copy()
        n_sym = 2
    else:
        bits = np.ascontiguousarray(dev.stage(frames))
        n_sym = int(dev.stage_symbols)
    for bf in bit_faults:
        bf.apply_symbols(bits, rng, n_sym)
    if site == "wire":
        return np.asarray(dev.labels(dev.frames_from_wire(bits)), np.int64)
    return np.asarray(dev.finish(bits), np.int64)
