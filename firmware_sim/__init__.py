"""Device-side simulator of edgecode artifacts.

Every model kind follows one contract (:mod:`firmware_sim.device`):
``load(source)`` opens any container and returns the device for its kind,
``device.encode(X)`` is the host side (the frames on the wire),
``device.infer(frames)`` the device side (labels plus the kind's decision
integers). Faults hit the wire, the stored image or the intermediate results
(:mod:`firmware_sim.faults`); :func:`simulate`, campaigns
(:mod:`firmware_sim.campaign`) and upset tables
(:mod:`firmware_sim.sensitivity`) are one engine over the contract.
Containers: :mod:`firmware_sim.artifact`; errors: :mod:`firmware_sim.errors`.
Imports numpy and numba only.

Examples
--------
>>> import firmware_sim
>>> dev = firmware_sim.ProtectedNBDevice.from_arrays([2], -1, [1])
>>> dev = firmware_sim.load(dev.container.tobytes())
>>> dev.infer(dev.encode([[0], [1]])).labels.tolist()
[0, 1]
"""

from .artifact import KINDS, Container, read_container, write_container
from .channel import bsc
from .device import SITES, Device, Inference, SimulationResult, device_kinds, load, register_kind
from .errors import ContainerError, DeviceError, FrameError
from .naive_bayes import ProtectedNBDevice, load_protected_nb, make_protected_nb_arrays
from .ecoc import ECOCDevice, load_ecoc, make_ecoc_arrays
from .ssbc import SSBCDevice, load_ssbc, make_ssbc_arrays
from .kinds.forest import ForestDevice, load_forest, make_forest_arrays
from .campaign import run_campaign, simulate
from .faults import FAULTS, make_fault, register_fault

__all__ = [
    "KINDS", "Container", "ContainerError", "DeviceError", "FrameError", "read_container",
    "write_container", "bsc",
    "SITES", "Device", "Inference", "SimulationResult", "device_kinds", "load", "register_kind",
    "ProtectedNBDevice", "load_protected_nb", "make_protected_nb_arrays",
    "ECOCDevice", "load_ecoc", "make_ecoc_arrays",
    "SSBCDevice", "load_ssbc", "make_ssbc_arrays",
    "ForestDevice", "load_forest", "make_forest_arrays",
    "run_campaign", "simulate", "FAULTS", "make_fault", "register_fault",
]
