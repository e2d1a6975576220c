"""The fault registry: name -> fault class (:data:`FAULTS`), :func:`register_fault`,
:func:`make_fault`. The CLI's ``--fault`` choices are read from :data:`FAULTS`, so a
fault registered at run time appears there."""

from ..errors import DeviceError
from .base import Fault

__all__ = ["FAULTS", "register_fault", "make_fault"]

#: Registry name -> fault class (the CLI's ``--fault`` choices come from it).
FAULTS = {}


def register_fault(cls):
    """Register a fault model class under its ``name`` (usable as a decorator).

    A new fault model is one :class:`~firmware_sim.faults.Fault` subclass
    (the protocol: :mod:`firmware_sim.faults.base`) plus this call: the
    campaign engine, :func:`make_fault` and the CLI's ``--fault`` then know
    it. Re-registering the same class is a no-op; another class under a
    taken name raises :class:`~firmware_sim.errors.DeviceError`.
    """
    if not (isinstance(cls, type) and issubclass(cls, Fault)):
        raise TypeError(f"register_fault takes a Fault subclass; got {cls!r}")
    name = cls.name
    if not isinstance(name, str) or not name or name == Fault.name:
        raise DeviceError(f"{cls.__name__} needs a class attribute name (its registry name)")
    if FAULTS.get(name, cls) is not cls:
        raise DeviceError(f"fault name {name!r} is already registered to "
                          f"{FAULTS[name].__name__}")
    FAULTS[name] = cls
    return cls


def make_fault(name, **params):
    """A fault from its registry name and parameters (``FAULTS[name].from_params``).

    ``make_fault("burst", flip_rate=0.05, mean_burst=8)`` builds the
    Gilbert-Elliott channel from its mean flip rate and burst length.

    Examples
    --------
    >>> make_fault("bsc", eps=0.1)
    BSC(eps=0.1)
    """
    if name not in FAULTS:
        raise DeviceError(f"unknown fault model {name!r}; known: {sorted(FAULTS)}")
    return FAULTS[name].from_params(**params)
