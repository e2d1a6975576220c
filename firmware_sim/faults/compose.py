"""Several faults in order (:class:`Compose`): bit faults on the bits, image faults
on the image."""

from ..errors import DeviceError
from .base import Fault

__all__ = ["Compose"]


class Compose(Fault):
    """Apply several faults in order (bit faults to the bits, image faults to the image).

    Parameters
    ----------
    faults : sequence of Fault

    Notes
    -----
    :meth:`with_params` takes ``"i.name"`` (parameter ``name`` of the i-th
    fault) or a bare ``name`` when exactly one member has it.

    Examples
    --------
    >>> from firmware_sim.faults import BSC, StuckAt
    >>> f = Compose([StuckAt(stuck1=[0]), BSC(0.0)])
    >>> f.apply([[0, 0, 0]]).tolist()
    [[1, 0, 0]]
    >>> f.with_params(eps=1.0).apply([[0, 0, 0]]).tolist()
    [[0, 1, 1]]
    """

    name = "compose"

    def __init__(self, faults):
        faults = tuple(faults)
        if not faults or not all(isinstance(f, Fault) for f in faults):
            raise TypeError("Compose takes a non-empty sequence of Fault objects")
        self.faults = faults
        kinds = {f.target for f in faults}
        self.target = kinds.pop() if len(kinds) == 1 else "mixed"
        self.additive = self.target == "bits" and all(f.additive for f in faults)

    @property
    def bit_faults(self):
        return tuple(f for f in self.faults if f.target in ("bits", "mixed"))

    @property
    def image_faults(self):
        return tuple(f for f in self.faults if f.target in ("image", "mixed"))

    def params(self):
        return {f"{i}.{k}": v for i, f in enumerate(self.faults) for k, v in f.params().items()}

    def to_dict(self):
        return {"model": self.name, "faults": [f.to_dict() for f in self.faults]}

    def with_params(self, **changes):
        per = [dict() for _ in self.faults]
        for key, value in changes.items():
            if "." in key:
                i, _, name = key.partition(".")
                if not i.isdigit() or int(i) >= len(self.faults):
                    raise DeviceError(f"no fault #{i} in this Compose of {len(self.faults)}")
                per[int(i)][name] = value
                continue
            owners = [i for i, f in enumerate(self.faults)
                      if key in f.params() or key in f.param_aliases()]
            if len(owners) != 1:
                raise DeviceError(f"parameter {key!r} names {len(owners)} member faults; "
                                  f"use 'i.{key}' (known: {sorted(self.params())})")
            per[owners[0]][key] = value
        return Compose([f.with_params(**c) if c else f for f, c in zip(self.faults, per)])

    @property
    def acts_on_symbols(self):
        """Every member bit fault is additive (image faults leave the stream alone)."""
        return all(f.additive for f in self.bit_faults)

    def check_width(self, width):
        for f in self.bit_faults:
            f.check_width(width)

    def apply_inplace(self, bits, rng):
        for f in self.bit_faults:
            f.apply_inplace(bits, rng)

    def apply_container(self, container, rng):
        for f in self.image_faults:
            container = f.apply_container(container, rng)
        return container
