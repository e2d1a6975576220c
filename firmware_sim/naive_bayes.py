"""Old path of the protected naive Bayes device: :mod:`firmware_sim.kinds.naive_bayes`
(kept because users and docs name it). ``simulate`` is the one engine's
(:func:`firmware_sim.simulate`: a BSC at the device's default site, the wire)."""

from .engine.campaign import simulate
from .engine.report import SimulationResult
from .kinds.naive_bayes import ProtectedNBDevice, load_protected_nb, make_protected_nb_arrays

__all__ = ["ProtectedNBDevice", "load_protected_nb", "make_protected_nb_arrays", "simulate",
           "SimulationResult"]
