"""Fault models for the device simulator: seeded, composable, vectorised or numba.

Two kinds of target:

* **bit faults** (``target == "bits"``) act on a stream of bits: a uint8
  array of 0/1 whose rows are frames (one per point and trial) and whose
  last axis is the bit order. Campaigns apply them at a *site* of the device
  contract (:mod:`firmware_sim.device`): the wire (the frames' bits, int16
  features 16 bits each) or the device's intermediate results.
  :class:`BSC` (independent flips, :mod:`.bsc`), :class:`GilbertElliott`
  (bursts, :mod:`.burst`), :class:`StuckAt` (lines stuck at 0 or 1,
  :mod:`.stuck`) and :class:`Interleave` (a bit fault through an interleaved
  wire order, :mod:`.interleave`).
* **image faults** (``target == "image"``) act on the artifact the device
  holds: :class:`ParameterUpset` (:mod:`.upset`) flips bits of the stored
  parameters (single-event upsets in the flash/RAM image; the byte helpers
  are in :mod:`.image`).

:class:`Compose` (:mod:`.compose`) chains faults of either kind. Every model
takes its randomness from a numpy ``Generator`` passed in (same seed, same
faults) and can be re-parameterised for a sweep (:meth:`Fault.with_params`),
which is how :func:`firmware_sim.run_campaign` drives it.

A new fault model is one :class:`Fault` subclass plus :func:`register_fault`
(:mod:`.registry`), in a module of its own here that registers it at its
bottom, as the built-in ones do (and one import line below). The minimal
protocol (``name``, ``target``, ``params``, and ``apply_inplace`` or
``apply_container``) and the defaults of everything else are in
:mod:`firmware_sim.faults.base`::

    class MyFault(Fault):
        target = "bits"
        name = "my_fault"
        def params(self): ...                    # dict of the constructor's arguments
        def apply_inplace(self, bits, rng): ...  # bits: C-contiguous uint8, 2-D

    register_fault(MyFault)

Imports numpy and the device's own modules only.
"""

from ._common import draw_seed
from .base import Fault
from .bsc import BSC
from .burst import GilbertElliott
from .compose import Compose
from .image import upset_bytes
from .interleave import Interleave, copy_major_order
from .registry import FAULTS, make_fault, register_fault
from .stuck import StuckAt, feature_lines
from .upset import ParameterUpset  # registration order: bsc, burst, stuck, seu

__all__ = [
    "register_fault",
    "Fault",
    "BSC",
    "GilbertElliott",
    "StuckAt",
    "ParameterUpset",
    "Compose",
    "Interleave",
    "copy_major_order",
    "FAULTS",
    "make_fault",
    "feature_lines",
    "upset_bytes",
    "draw_seed",
]
