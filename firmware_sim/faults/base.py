"""The base class of every fault model, and the protocol a new one follows.

A new fault model is one :class:`Fault` subclass plus
:func:`~firmware_sim.faults.register_fault`. It **must** define:

``name`` (class attribute)
    its registry name (:data:`~firmware_sim.faults.FAULTS`, the CLI's ``--fault``);
``target`` (class attribute)
    ``"bits"`` (it acts on a stream of 0/1 bits: the wire or a device's
    intermediate results) or ``"image"`` (it acts on the stored container);
``params(self) -> dict``
    its parameters, the constructor's keyword arguments;
``apply_inplace(self, bits, rng)`` (bit faults)
    change ``bits`` (C-contiguous uint8 0/1, 2-D, rows are frames) in place,
    drawing randomness from the numpy Generator ``rng`` only;
``apply_container(self, container, rng) -> Container`` (image faults)
    the faulty image, parsed.

Everything else has a default that follows from those:

* ``additive = False``: set it True when the fault XORs the bits with an
  error pattern that does not depend on them (BSC, bursts); the engine's fast
  paths then draw the pattern alone through :meth:`Fault.error_masks`
  (default: ``apply_inplace`` on zero rows, then packed; override it for
  speed, with the same random draws);
* :meth:`Fault.check_width` (no-op): refuse a stream width the parameters
  do not fit (per-position probabilities, line indices);
* :meth:`Fault.from_params`, :meth:`Fault.accepted_params` (the
  constructor's signature), :meth:`Fault.default_params` (what a sweep may
  leave out), :meth:`Fault.param_aliases` and :meth:`Fault.rebuild`
  (alternative names of a parameter in sweeps, e.g. BSC's ``flip_rate``);
* :meth:`Fault.with_params`, :meth:`Fault.to_dict`, ``repr``, ``==``,
  :meth:`Fault.apply` (the checked form of ``apply_inplace``),
  :meth:`Fault.error_positions`, :meth:`Fault.apply_symbols` (events on an
  N-ary symbol stream) and :attr:`Fault.acts_on_symbols`.

Imports numpy, the device's kernels, channel checks and errors only.
"""

import inspect
from typing import Any, ClassVar

import numpy as np

from .._kernels.bits import _pack_bits
from .._kernels.faults import _replace_symbols, _xor_masks
from ..channel import check_bits, check_random_state
from ..errors import DeviceError
from ._common import check_masks, draw_seed, n_words

__all__ = ["Fault"]


class Fault:
    """Base class of the fault models (see the module docstring for the protocol).

    Attributes
    ----------
    target : {"bits", "image", "mixed"}
        What the fault acts on.
    name : str
        Registry name (:data:`~firmware_sim.faults.FAULTS`).
    additive : bool
        The fault XORs the bits with an error pattern independent of them.
    """

    target: ClassVar[str] = "bits"
    name: ClassVar[str] = "fault"
    #: True when the fault XORs the bits with an error pattern that does not
    #: depend on them (BSC, burst channels): campaigns may then draw the
    #: error pattern alone (same random draws, same result).
    additive: bool = False

    # -- what a new fault defines -----------------------------------------------
    def params(self) -> dict:
        """The model's parameters as a dict (the constructor's arguments)."""
        raise NotImplementedError

    def apply_inplace(self, bits: np.ndarray, rng: np.random.Generator) -> None:
        """Apply to ``bits`` in place (no validation: C-contiguous uint8 of 0/1, 2-D).

        The fast path campaigns use; :meth:`apply` is the checked one.
        """
        raise TypeError(f"{self.name} acts on container images, not on bits; use "
                        "apply_container(container, rng)")

    def apply_container(self, container, rng: np.random.Generator):
        """Faulty copy of a container (image faults); bit faults return it unchanged."""
        if self.target == "bits":
            return container
        raise NotImplementedError

    # -- construction and sweeps (defaults from the constructor) ---------------------
    @classmethod
    def accepted_params(cls) -> list:
        """Keyword parameters :meth:`from_params` accepts."""
        return [q for q in inspect.signature(cls).parameters if q != "self"]

    @classmethod
    def from_params(cls, **params: Any) -> "Fault":
        """Build from keyword parameters, refusing unknown ones by name."""
        accepted = cls.accepted_params()
        unknown = sorted(set(params) - set(accepted))
        if unknown:
            raise DeviceError(f"{cls.name}: unknown parameter(s) {unknown}; accepted: "
                              f"{accepted}")
        try:
            return cls(**params)
        except TypeError as exc:
            need = [n for n, prm in inspect.signature(cls).parameters.items()
                    if prm.default is inspect.Parameter.empty
                    and prm.kind in (prm.POSITIONAL_OR_KEYWORD, prm.KEYWORD_ONLY)
                    and n not in params]
            if need:
                raise DeviceError(f"{cls.name} needs {', '.join(need)} (a value, e.g. "
                                  f"--set {need[0]}=..., or a sweep, --param {need[0]} --grid "
                                  f"...); accepted parameters: {accepted}") from None
            raise DeviceError(f"{cls.name}: {exc}") from None

    @classmethod
    def default_params(cls, params: dict) -> dict:
        """``params`` with what a sweep may leave out filled in (a copy)."""
        return dict(params)

    def with_params(self, **changes: Any) -> "Fault":
        """A copy with some parameters changed (for sweeps).

        Raises
        ------
        DeviceError
            Unknown parameter name (the message lists the known ones).
        """
        current = self.params()
        unknown = sorted(set(changes) - set(current) - set(self.param_aliases()))
        if unknown:
            raise DeviceError(f"{self.name} has no parameter(s) {unknown}; known: "
                              f"{sorted(set(current) | set(self.param_aliases()))}")
        return self.rebuild(current, changes)

    def param_aliases(self) -> tuple:
        """Other names :meth:`with_params` takes (e.g. ``flip_rate``); :meth:`rebuild`
        translates them."""
        return ()

    def rebuild(self, current: dict, changes: dict) -> "Fault":
        """The fault with ``changes`` (names of :meth:`params` or
        :meth:`param_aliases`) applied to the ``current`` parameters."""
        return type(self)(**{**current, **changes})

    # -- description ---------------------------------------------------------------
    def to_dict(self) -> dict:
        """JSON-friendly description: ``{"model": name, **params}``."""
        def clean(v):
            if isinstance(v, np.ndarray):
                return v.tolist()
            if isinstance(v, (tuple, list)):
                return [clean(x) for x in v]
            if isinstance(v, np.generic):
                return v.item()
            return v
        return {"model": self.name, **{k: clean(v) for k, v in self.params().items()}}

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.to_dict().items() if k != "model")
        return f"{type(self).__name__}({args})"

    def __eq__(self, other):
        return type(self) is type(other) and self.to_dict() == other.to_dict()

    def __hash__(self):
        return hash(repr(self))

    # -- bit faults: derived forms -------------------------------------------------
    def check_width(self, width: int) -> None:
        """Refuse (``DeviceError``) a stream of ``width`` bits per row that the
        parameters do not fit; the engine calls it before any trial."""

    @property
    def acts_on_symbols(self) -> bool:
        """Whether the fault means something on an N-ary symbol stream (an event
        replaces the symbol by a uniformly random other one, :meth:`apply_symbols`):
        additive bit faults; image faults leave the stream alone."""
        return self.target == "image" or bool(self.additive)

    def error_masks(self, nrows: int, width: int, rng: np.random.Generator) -> np.ndarray:
        """Error masks of an additive fault on ``nrows`` rows of ``width`` bits.

        Returns a uint64 array ``(nrows, ceil(width / 64))``: bit ``b`` of
        word ``w`` of row ``i`` is set when wire position ``64 w + b`` of row
        ``i`` arrives flipped. The same random draws as :meth:`apply_inplace`
        on such rows (which XORs exactly these masks into the bits), so a
        campaign can consume the errors without building the noisy rows.
        """
        if not self.additive:
            raise TypeError(f"{self.name} is not additive noise: its effect depends on the bits")
        check_masks(nrows, width)
        buf = np.zeros((nrows, width), np.uint8)
        self.apply_inplace(buf, rng)
        masks = np.empty((nrows, n_words(width)), np.uint64)
        _pack_bits(buf, masks)
        return masks

    def error_positions(self, nrows: int, width: int, rng: np.random.Generator,
                        scratch=None) -> np.ndarray:
        """Sorted flat positions (``row * width + bit``) of the errors an additive
        fault puts on ``nrows`` rows of ``width`` bits: the same random draws as
        :meth:`apply_inplace` and :meth:`error_masks` on such rows. (``scratch``
        is accepted for compatibility and unused.)"""
        check_masks(nrows, 8 * width)          # the rows unpacked and their positions
        masks = self.error_masks(nrows, width, rng)
        bits = np.zeros((nrows, width), np.uint8)
        _xor_masks(bits, masks)
        return np.flatnonzero(bits).astype(np.int64)

    def apply_symbols(self, symbols: np.ndarray, rng: np.random.Generator,
                      n_symbols: int) -> None:
        """The fault on an N-ary symbol stream, in place: every event of
        :meth:`error_masks` replaces that symbol by one of the other
        ``n_symbols - 1`` chosen uniformly (the masks, then one seed for the
        replacement symbols). ``n_symbols == 2`` is :meth:`apply_inplace`."""
        if n_symbols == 2:
            self.apply_inplace(symbols, rng)
            return
        masks = self.error_masks(symbols.shape[0], symbols.shape[1], rng)
        _replace_symbols(symbols, masks, n_symbols, draw_seed(rng))

    def apply(self, bits, random_state=None) -> np.ndarray:
        """Faulty copy of ``bits`` (array-like of 0/1; rows are transmissions,
        the last axis is the bit order on the wire).

        Returns
        -------
        ndarray of uint8, same shape as ``bits``
        """
        arr = check_bits(bits, name="bits")
        rng = check_random_state(random_state)
        shape = arr.shape
        out = arr.reshape(-1, shape[-1] if arr.ndim else 1).copy()
        self.check_width(out.shape[1])
        self.apply_inplace(out, rng)
        return out.reshape(shape)
