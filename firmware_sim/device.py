"""The device class every model kind subclasses, and the names of the contract.

:class:`Device` is :class:`~firmware_sim.contract.BaseDevice` (the contract
and the spec of a kind: its hooks and their defaults) plus the engine's
:func:`~firmware_sim.engine.simulate` as a method. The contract itself, the
kind registry (:func:`register_kind`, :func:`load`, :func:`device_kinds`)
and :class:`Inference` live in :mod:`firmware_sim.contract`, which the
engine imports; this module sits above the engine, so neither imports the
other in a cycle.

Adding a model kind: one module in ``firmware_sim/kinds/`` defining a
``Device`` subclass with ``kind``, ``kind_code`` and the hooks it needs, and
``register_kind(cls)`` (see ``docs/architecture.md``).

Imports numpy only.
"""

from .contract import SITES, BaseDevice, BatchRunner, Inference, device_kinds, load, \
    register_kind
from .engine.campaign import simulate as _simulate
from .engine.report import SimulationResult

__all__ = ["Device", "BaseDevice", "Inference", "SimulationResult", "SITES", "BatchRunner",
           "load", "register_kind", "device_kinds"]


class Device(BaseDevice):
    """Base class of every model kind's device: the contract
    (:class:`~firmware_sim.contract.BaseDevice`, whose docstring lists the
    hooks) plus :meth:`simulate`."""

    def simulate(self, X, eps, n_trials, random_state=None, y=None, site=None, n_jobs=None,
                 progress=None, executor=None) -> SimulationResult:
        """Every point ``n_trials`` times through a BSC at ``site``
        (:func:`firmware_sim.simulate`: bounded memory, progress between
        batches, Ctrl-C stops it)."""
        return _simulate(self, X, eps, n_trials, random_state=random_state, y=y, site=site,
                         n_jobs=n_jobs, progress=progress, executor=executor)
