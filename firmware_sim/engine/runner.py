"""Batch runners: one batch of (point, trial) rows of a stream through a bit fault and
the rest of the device, counted.

A runner is ``run(start, nrows, rng, same, correct)``: rows ``[start, start +
nrows)`` of the (point, trial) stream (row ``r`` is trial ``r % n_trials`` of
point ``r // n_trials``), faults drawn from the Generator ``rng``, and per
point the trials whose label equals the clean label added to ``same`` (and
those equal to ``y`` to ``correct``).

:func:`plain_runner` builds every noisy row and labels it with the device's
:meth:`~firmware_sim.contract.BaseDevice.stream_labeler`.
:func:`batch_runner` first asks the device for a fast path
(:meth:`~firmware_sim.contract.BaseDevice.bit_fault_runner`, which returns
``None`` when it does not apply; a fast path makes the same draws and the same
counts, and is tested equal to the plain path).

Symbols. On an N-ary stream (``n_sym > 2``) a bit fault acts on an all-zero
*event* frame of the same shape, and every position it sets is an event: that
symbol is replaced by one of the other ``N - 1`` symbols chosen uniformly
(:meth:`~firmware_sim.faults.Fault.apply_symbols`). Only faults with
:attr:`~firmware_sim.faults.Fault.acts_on_symbols` have this meaning.

Imports numpy and the engine's batches only.
"""

import numpy as np

from . import batches
from .batches import count_labels, repeat_rows

__all__ = ["plain_runner", "batch_runner"]


def plain_runner(device, site, fault, stream, clean, y, n_trials, n_sym=2):
    """The plain path: build every noisy row of the stream and run the rest of the
    device on it (:meth:`~firmware_sim.contract.BaseDevice.stream_labeler`)."""
    predict = device.stream_labeler(site)

    def run(start, nrows, rng, same, correct):
        rows = repeat_rows(stream, start, nrows, n_trials)
        fault.apply_symbols(rows, rng, n_sym)
        sub = batches.SUB_ROWS
        for a in range(0, nrows, sub):        # bounded temporaries for narrow rows
            labels = np.asarray(predict(rows[a:a + sub]))
            count_labels(labels, start + a, n_trials, clean, y, same, correct)
    return run


def batch_runner(device, site, fault, stream, clean, y, n_trials, n_sym=2):
    """The device's fast path for this fault and site when it has one
    (:meth:`~firmware_sim.contract.BaseDevice.bit_fault_runner`), else
    :func:`plain_runner`: the same counts either way."""
    run = device.bit_fault_runner(site, fault, stream, clean, y, n_trials)
    if run is not None:
        return run
    return plain_runner(device, site, fault, stream, clean, y, n_trials, n_sym)
