"""Old path of the ECOC device: :mod:`firmware_sim.kinds.ecoc` (kept because users
and docs name it)."""

from .kinds.ecoc import LEARNER_KINDS, Q_MAX, RADIUS_UNBOUNDED, ECOCDevice, compact_trees, \
    doubled_distances, flip_radius, load_ecoc, make_ecoc_arrays, quantize_inputs

__all__ = ["ECOCDevice", "load_ecoc", "make_ecoc_arrays", "compact_trees", "doubled_distances",
           "flip_radius",
           "RADIUS_UNBOUNDED", "quantize_inputs", "LEARNER_KINDS", "Q_MAX"]
