"""Device-side simulator of edgecode artifacts.

Every model kind follows one contract (:mod:`firmware_sim.contract`):
``load(source)`` opens any container and returns the device for its kind,
``device.encode(X)`` is the host side (the frames on the wire),
``device.infer(frames)`` the device side (labels plus the kind's decision
integers). The kinds live in :mod:`firmware_sim.kinds`, one module each.
Faults hit the wire, the stored image or the intermediate results
(:mod:`firmware_sim.faults`); :func:`simulate`, campaigns
(:func:`run_campaign`) and upset tables (:mod:`firmware_sim.sensitivity`)
are one engine over the contract (:mod:`firmware_sim.engine`).
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

from . import kinds  # registers the built-in kinds (codes 1, 2, 3, in that order)
from . import wire  # registers the wire protection layer ("__wire_copies__", issue 27)
from .artifact import KINDS, Container, read_container, write_container
from .channel import bsc
from .contract import SITES, BaseDevice, Inference, device_kinds, load, register_kind
from .wire import WireProtectedDevice
from .device import Device
from .engine import CampaignResult, DaskExecutor, Executor, SimulationResult, ThreadExecutor, \
    run_campaign, simulate, wilson_interval
from .errors import ContainerError, DeviceError, FrameError, SizeLimitError
from .faults import FAULTS, Fault, make_fault, register_fault
from .kinds.ecoc import ECOCDevice, load_ecoc, make_ecoc_arrays
from .kinds.naive_bayes import ProtectedNBDevice, load_protected_nb, make_protected_nb_arrays
from .kinds.ssbc import SSBCDevice, load_ssbc, make_ssbc_arrays

__all__ = [
    "kinds", "KINDS", "Container", "ContainerError", "DeviceError", "FrameError", "SizeLimitError",
    "read_container", "write_container", "bsc",
    "SITES", "BaseDevice", "Device", "Inference", "SimulationResult", "device_kinds", "load",
    "register_kind", "WireProtectedDevice",
    "ProtectedNBDevice", "load_protected_nb", "make_protected_nb_arrays",
    "ECOCDevice", "load_ecoc", "make_ecoc_arrays",
    "SSBCDevice", "load_ssbc", "make_ssbc_arrays",
    "run_campaign", "simulate", "CampaignResult", "wilson_interval", "Executor",
    "ThreadExecutor", "DaskExecutor", "Fault", "FAULTS", "make_fault", "register_fault",
]
