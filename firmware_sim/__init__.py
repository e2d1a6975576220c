"""Device-side simulator of edgecode artifacts.

Reads flat-array containers (:mod:`firmware_sim.artifact`), simulates noisy
channels (:mod:`firmware_sim.channel`) and runs models as a microcontroller
would, with integer arithmetic and resource accounting
(:mod:`firmware_sim.naive_bayes`). Imports numpy and numba only.
"""

from .artifact import KINDS, Container, ContainerError, read_container, write_container
from .channel import bsc
from .naive_bayes import (
    ProtectedNBDevice,
    SimulationResult,
    load_protected_nb,
    make_protected_nb_arrays,
    simulate,
)

__all__ = [
    "KINDS",
    "Container",
    "ContainerError",
    "read_container",
    "write_container",
    "bsc",
    "ProtectedNBDevice",
    "SimulationResult",
    "load_protected_nb",
    "make_protected_nb_arrays",
    "simulate",
]
