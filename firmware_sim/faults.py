"""Fault models for the device simulator: seeded, composable, vectorised or numba.

Two kinds of target:

* **bit faults** (``target == "bits"``) act on a stream of bits: a uint8
  array of 0/1 whose rows are frames (one per point and trial) and whose
  last axis is the bit order. Campaigns apply them at a *site* of the device
  contract (:mod:`firmware_sim.device`): the wire (for protected naive Bayes
  feature-major copies, ``ProtectedNBDevice.encode``; for ECOC and SSBC the
  int16 features, 16 bits each) or the intermediate results (decoded
  features, ECOC learner outputs, SSBC code bits).
  :class:`BSC` (independent flips), :class:`GilbertElliott` (bursts) and
  :class:`StuckAt` (lines stuck at 0 or 1).
* **image faults** (``target == "image"``) act on the artifact the device
  holds: :class:`ParameterUpset` flips bits of the stored parameters
  (single-event upsets in the flash/RAM image). Flipping bits of an SSBC
  device's stored code table is ``ParameterUpset(arrays=["table_codes"])`` (the
  array name its container uses).

:class:`Compose` chains faults of either kind. Every model takes its
randomness from a numpy ``Generator`` passed in (same seed, same faults) and
can be re-parameterised for a sweep (:meth:`Fault.with_params`), which is how
:func:`firmware_sim.campaign.run_campaign` drives it.

The interface (all a new model needs, plus :func:`register_fault`)::

    class MyFault(Fault):
        target = "bits"
        name = "my_fault"
        def params(self): ...                  # dict of the constructor's arguments
        def apply_inplace(self, bits, rng): ...  # bits: C-contiguous uint8, 2-D

or, for ``target = "image"``, ``apply_container(container, rng) -> Container``.
"""

import inspect
import math
from numbers import Integral, Real

import numpy as np

from ._kernels.bits import _pack_bits
from ._limits import check_allocation
from ._kernels.faults import MAX_DIGITS, TABLE_BITS, _cut_rows, _gilbert_elliott_masks, \
    _xor_masks
from .artifact import Container, read_container, write_container
from .channel import _bernoulli_positions, _flip_inplace, check_bits, check_channel_eps, \
    check_random_state

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
]


_NO_STATES = np.empty(0, np.uint8)


def _draw_seed(rng):
    """Integer seed of a kernel's splitmix64 stream, drawn from the Generator."""
    return int(rng.integers(0, 2**63 - 1))


def _check_masks(nrows, width):
    """Price the error masks of ``nrows`` rows of ``width`` bits (and the unpacked
    rows some faults draw them through) before allocating them."""
    nrows, width = int(nrows), int(width)
    check_allocation(f"nrows={nrows:,}, width={width:,}", nrows * (width + 8 * _n_words(width)),
                     what="the error masks", hint="draw them in batches of fewer rows (a "
                     "campaign's batches hold about 4 Mi bits)")


def _n_words(width):
    """uint64 words per row of error masks."""
    return max(1, (int(width) + 63) >> 6)


def _gilbert_elliott(nrows, width, p, r, eps_good, eps_bad, continuous, seed, masks,
                     states=_NO_STATES):
    """Run ``_gilbert_elliott_masks`` into ``masks`` (zeros) with the splitmix64
    state of ``seed`` and the kernel's scratch (allocated here: an allocation
    inside a kernel costs compile time)."""
    _gilbert_elliott_masks(nrows, width, np.array([p, r, eps_good, eps_bad], np.float64),
                           bool(continuous), np.array([seed], np.uint64), masks, states,
                           np.empty(4), np.empty((4, 1 << TABLE_BITS), np.int32),
                           np.empty((4, MAX_DIGITS), np.uint64), np.empty(4, np.int64))


def _prob(value, name, *, low=0.0, high=1.0):
    if isinstance(value, bool) or not isinstance(value, (Real, np.floating, np.integer)):
        raise TypeError(f"{name} must be a number in [{low}, {high}]; got {value!r}")
    v = float(value)
    if not (low <= v <= high):  # also refuses NaN
        raise ValueError(f"{name} must be in [{low}, {high}]; got {value!r}")
    return v


def _count(value, name):
    if isinstance(value, bool) or not isinstance(value, (Integral, np.integer)):
        if isinstance(value, (Real, np.floating)) and float(value).is_integer():
            value = int(value)
        else:
            raise TypeError(f"{name} must be a non-negative integer; got {value!r}")
    if value < 0:
        raise ValueError(f"{name} must be >= 0; got {value}")
    return int(value)


class Fault:
    """Base class of the fault models (see the module docstring for the protocol).

    Attributes
    ----------
    target : {"bits", "image", "mixed"}
        What the fault acts on.
    name : str
        Registry name (:data:`FAULTS`).
    """

    target = "bits"
    name = "fault"
    #: True when the fault XORs the bits with an error pattern that does not
    #: depend on them (BSC, burst channels): campaigns may then draw the
    #: error pattern alone (same random draws, same result).
    additive = False

    def params(self):
        """The model's parameters as a dict (the constructor's arguments)."""
        raise NotImplementedError

    @classmethod
    def accepted_params(cls):
        """Keyword parameters :meth:`from_params` accepts."""
        return [q for q in inspect.signature(cls).parameters if q != "self"]

    @classmethod
    def from_params(cls, **params):
        """Build from keyword parameters, refusing unknown ones by name."""
        accepted = cls.accepted_params()
        unknown = sorted(set(params) - set(accepted))
        if unknown:
            raise ValueError(f"{cls.name}: unknown parameter(s) {unknown}; accepted: {accepted}")
        try:
            return cls(**params)
        except TypeError as exc:
            import inspect
            need = [n for n, prm in inspect.signature(cls).parameters.items()
                    if prm.default is inspect.Parameter.empty
                    and prm.kind in (prm.POSITIONAL_OR_KEYWORD, prm.KEYWORD_ONLY)
                    and n not in params]
            if need:
                raise ValueError(f"{cls.name} needs {', '.join(need)} (a value, e.g. "
                                 f"--set {need[0]}=..., or a sweep, --param {need[0]} --grid "
                                 f"...); accepted parameters: {accepted}") from None
            raise ValueError(f"{cls.name}: {exc}") from None

    @classmethod
    def default_params(cls, params):
        """``params`` with what a sweep may leave out filled in (a copy)."""
        return dict(params)

    def with_params(self, **changes):
        """A copy with some parameters changed (for sweeps).

        Raises
        ------
        ValueError
            Unknown parameter name (the message lists the known ones).
        """
        current = self.params()
        unknown = sorted(set(changes) - set(current) - set(self._aliases()))
        if unknown:
            raise ValueError(f"{self.name} has no parameter(s) {unknown}; known: "
                             f"{sorted(set(current) | set(self._aliases()))}")
        return self._rebuild(current, changes)

    def _aliases(self):
        return ()

    def _rebuild(self, current, changes):
        return type(self)(**{**current, **changes})

    def to_dict(self):
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

    # -- bit faults ----------------------------------------------------------
    def apply_inplace(self, bits, rng):
        """Apply to ``bits`` in place (no validation: C-contiguous uint8 of 0/1, 2-D).

        The fast path campaigns use; :meth:`apply` is the checked one.
        """
        raise TypeError(f"{self.name} acts on container images, not on bits; use "
                        "apply_container(container, rng)")

    def error_masks(self, nrows, width, rng):
        """Error masks of an additive fault on ``nrows`` rows of ``width`` bits.

        Returns a uint64 array ``(nrows, ceil(width / 64))``: bit ``b`` of
        word ``w`` of row ``i`` is set when wire position ``64 w + b`` of row
        ``i`` arrives flipped. The same random draws as :meth:`apply_inplace`
        on such rows (which XORs exactly these masks into the bits), so a
        campaign can consume the errors without building the noisy rows.
        """
        if not self.additive:
            raise TypeError(f"{self.name} is not additive noise: its effect depends on the bits")
        _check_masks(nrows, width)
        buf = np.zeros((nrows, width), np.uint8)
        self.apply_inplace(buf, rng)
        masks = np.empty((nrows, _n_words(width)), np.uint64)
        _pack_bits(buf, masks)
        return masks

    def error_positions(self, nrows, width, rng, scratch=None):
        """Sorted flat positions (``row * width + bit``) of the errors an additive
        fault puts on ``nrows`` rows of ``width`` bits: the same random draws as
        :meth:`apply_inplace` and :meth:`error_masks` on such rows. (``scratch``
        is accepted for compatibility and unused.)"""
        _check_masks(nrows, 8 * width)          # the rows unpacked and their positions
        masks = self.error_masks(nrows, width, rng)
        bits = np.zeros((nrows, width), np.uint8)
        _xor_masks(bits, masks)
        return np.flatnonzero(bits).astype(np.int64)

    def apply(self, bits, random_state=None):
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
        self._check_width(out.shape[1])
        self.apply_inplace(out, rng)
        return out.reshape(shape)

    def _check_width(self, width):
        pass

    # -- image faults --------------------------------------------------------
    def apply_container(self, container, rng):
        """Faulty copy of a container (image faults); bit faults return it unchanged."""
        if self.target == "bits":
            return container
        raise NotImplementedError


# ----------------------------------------------------------------------------
# Bit faults
# ----------------------------------------------------------------------------
class BSC(Fault):
    """Binary symmetric channel: every bit flips independently with probability eps.

    Parameters
    ----------
    eps : float or array-like of shape (L,)
        Flip probability in [0, 1]: one for every bit or one per position on
        the wire. ``flip_rate`` is accepted as an alias in :meth:`with_params`.

    Notes
    -----
    For one eps a numba kernel (``_gilbert_elliott_masks`` with the chain
    always good, then ``_cut_rows``) draws the errors of the
    whole row-major bit stream from a splitmix64 stream, as error masks
    (:meth:`error_masks`): below eps = 1/32 by geometric skipping (the gaps
    between errors, through an exact inversion table; cost per error), from
    1/32 up 64 bits at a time by comparing 64 uniforms digit by digit with
    the exact binary expansion of eps (about log2(64) + 2 random words per 64
    bits, whatever eps). Per-bit eps uses :func:`firmware_sim.channel.bsc`'s
    sampler. The random stream therefore differs from ``channel.bsc`` for the
    same seed (same law). Closed form: each bit is wrong with probability
    eps, independently.

    Examples
    --------
    >>> import numpy as np
    >>> out = BSC(0.25).apply(np.zeros((1000, 40), np.uint8), random_state=0)
    >>> round(float(out.mean()), 2)
    0.25
    """

    name = "bsc"
    additive = True

    def __init__(self, eps):
        if np.ndim(eps) == 0:
            self.eps = _prob(eps, "eps")
        else:
            self.eps = check_channel_eps(eps, len(eps), name="eps")
            self.eps.flags.writeable = False

    def params(self):
        return {"eps": self.eps}

    def _aliases(self):
        return ("flip_rate",)

    @classmethod
    def from_params(cls, **params):
        if "flip_rate" in params:
            params = dict(params)
            params["eps"] = params.pop("flip_rate")
        return super().from_params(**params)

    def _rebuild(self, current, changes):
        changes = dict(changes)
        if "flip_rate" in changes:
            changes["eps"] = changes.pop("flip_rate")
        return BSC(**{**current, **changes})

    @property
    def mean_flip_rate(self):
        """Average probability that a bit is flipped."""
        return float(np.mean(self.eps))

    def _check_width(self, width):
        if not isinstance(self.eps, float) and self.eps.shape != (width,):
            raise ValueError(f"eps has {self.eps.shape[0]} entries but rows have {width} bits")

    def apply_inplace(self, bits, rng):
        if isinstance(self.eps, float):
            _xor_masks(bits, self.error_masks(bits.shape[0], bits.shape[1], rng))
        else:
            _flip_inplace(bits.reshape(-1), bits.shape[-1], self.eps, rng)

    def error_masks(self, nrows, width, rng):
        if not isinstance(self.eps, float):
            return super().error_masks(nrows, width, rng)
        _check_masks(nrows, width)
        # the row-major stream as one always-good Gilbert-Elliott row, then cut
        nbits = nrows * width
        flat = np.zeros((1, (nbits + 63) >> 6), np.uint64)
        _gilbert_elliott(1, nbits, 0.0, 1.0, self.eps, 0.0, False, _draw_seed(rng), flat)
        masks = np.empty((nrows, _n_words(width)), np.uint64)
        _cut_rows(flat[0], nrows, width, masks)
        return masks


class GilbertElliott(Fault):
    """Gilbert-Elliott burst channel: a two-state Markov chain picks the flip rate.

    Along the bits of a row the channel is Good or Bad; after each bit it
    moves Good -> Bad with probability ``p`` and Bad -> Good with probability
    ``r``. A bit is flipped with probability ``eps_good`` in Good and
    ``eps_bad`` in Bad.

    Parameters
    ----------
    p : float in [0, 1]
        Good -> Bad transition probability per bit.
    r : float in [0, 1]
        Bad -> Good transition probability per bit (mean burst length 1/r).
    eps_good : float in [0, 1], default 0
    eps_bad : float in [0, 1], default 0.5
    continuous : bool, default False
        False: each row (transmission) starts in the stationary distribution,
        independently of the others. True: the chain runs on from one row to
        the next (back-to-back transmissions).

    Notes
    -----
    Closed forms: stationary ``pi_B = p / (p + r)``; a bad sojourn (burst)
    lasts ``k`` bits with probability ``(1 - r)^(k-1) r`` (mean ``1/r``), a
    good one with ``(1 - p)^(k-1) p``; the mean flip rate is
    ``(1 - pi_B) eps_good + pi_B eps_bad``. :meth:`with_params` also takes
    ``flip_rate`` (solve ``p`` for that mean rate at fixed ``r``, ``eps_good``,
    ``eps_bad``; see :meth:`from_flip_rate`). The numba kernel draws whole
    sojourns (geometric lengths) and each sojourn's errors as :class:`BSC`
    does (skipping for a small rate, 64 bits per few random words for a
    large one): cost O(state changes + errors), not O(bits).

    Examples
    --------
    >>> ge = GilbertElliott.from_flip_rate(0.05, mean_burst=8.0)
    >>> round(ge.stationary_bad, 3), ge.mean_burst_length, round(ge.mean_flip_rate, 3)
    (0.1, 8.0, 0.05)
    >>> import numpy as np
    >>> out = ge.apply(np.zeros((2000, 100), np.uint8), random_state=0)
    >>> abs(float(out.mean()) - 0.05) < 0.005
    True
    """

    name = "burst"
    additive = True

    def __init__(self, p, r, eps_good=0.0, eps_bad=0.5, continuous=False):
        self.p = _prob(p, "p")
        self.r = _prob(r, "r")
        self.eps_good = _prob(eps_good, "eps_good")
        self.eps_bad = _prob(eps_bad, "eps_bad")
        if not isinstance(continuous, (bool, np.bool_)):
            raise TypeError(f"continuous must be a bool; got {continuous!r}")
        self.continuous = bool(continuous)
        if self.p + self.r == 0.0:
            raise ValueError("p and r cannot both be 0 (the chain would never move: "
                             "no stationary distribution)")

    @classmethod
    def accepted_params(cls):
        return super().accepted_params() + ["flip_rate", "mean_burst"]

    @classmethod
    def from_params(cls, **params):
        """Also from ``flip_rate`` and ``mean_burst`` (:meth:`from_flip_rate`)."""
        if "flip_rate" not in params and "mean_burst" not in params:
            return super().from_params(**params)
        params = dict(params)
        rate = params.pop("flip_rate", None)
        mb = params.pop("mean_burst", None)
        if rate is None or mb is None:
            if "r" in params and rate is not None:
                mb = 1.0 / float(params.pop("r"))
            else:
                raise ValueError("burst: give flip_rate and mean_burst together, or p and r")
        unknown = sorted(set(params) - {"eps_good", "eps_bad", "continuous"})
        if unknown:
            raise ValueError(f"burst: unknown parameter(s) {unknown}; accepted: "
                             f"{cls.accepted_params()}")
        return cls.from_flip_rate(rate, mb, **params)

    @classmethod
    def default_params(cls, params):
        """A mean burst length of 4 when only ``flip_rate`` is given."""
        params = dict(params)
        if "flip_rate" in params and "mean_burst" not in params and "r" not in params:
            params["mean_burst"] = 4.0
        return params

    @classmethod
    def from_flip_rate(cls, flip_rate, mean_burst, eps_good=0.0, eps_bad=0.5,
                       continuous=False):
        """The chain with mean burst length ``mean_burst`` (r = 1 / mean_burst) and
        the given mean flip rate: ``pi_B = (flip_rate - eps_good) / (eps_bad - eps_good)``,
        ``p = r pi_B / (1 - pi_B)``.

        Raises
        ------
        ValueError
            If the rate is not between ``eps_good`` and ``eps_bad`` (exclusive of
            ``eps_bad`` unless r could be 0).
        """
        mean_burst = float(mean_burst)
        if not mean_burst >= 1.0:
            raise ValueError(f"mean_burst must be >= 1 bit; got {mean_burst}")
        r = 1.0 / mean_burst
        return cls(cls._p_for_rate(flip_rate, r, eps_good, eps_bad), r, eps_good, eps_bad,
                   continuous)

    @staticmethod
    def _p_for_rate(flip_rate, r, eps_good, eps_bad):
        f = _prob(flip_rate, "flip_rate")
        eg, eb = _prob(eps_good, "eps_good"), _prob(eps_bad, "eps_bad")
        if not (min(eg, eb) <= f < max(eg, eb)) and f != eg:
            raise ValueError(f"flip_rate must be in [eps_good, eps_bad) = [{eg}, {eb}) for a "
                             f"Gilbert-Elliott channel with those rates; got {f}")
        pi_b = (f - eg) / (eb - eg) if eb != eg else 0.0
        p = r * pi_b / (1.0 - pi_b)
        if p > 1.0:
            raise ValueError(f"flip_rate {f} with mean burst {1 / r:g} needs p = {p:.3g} > 1; "
                             "use longer bursts or a larger eps_bad")
        return p

    def params(self):
        return {"p": self.p, "r": self.r, "eps_good": self.eps_good, "eps_bad": self.eps_bad,
                "continuous": self.continuous}

    def _aliases(self):
        return ("flip_rate", "mean_burst")

    def _rebuild(self, current, changes):
        changes = dict(changes)
        new = {**current, **{k: v for k, v in changes.items()
                             if k not in ("flip_rate", "mean_burst")}}
        if "mean_burst" in changes:
            mb = float(changes["mean_burst"])
            if not mb >= 1.0:
                raise ValueError(f"mean_burst must be >= 1 bit; got {mb}")
            rate = self.mean_flip_rate if "flip_rate" not in changes else None
            new["r"] = 1.0 / mb
            if rate is not None:
                new["p"] = self._p_for_rate(rate, new["r"], new["eps_good"], new["eps_bad"])
        if "flip_rate" in changes:
            new["p"] = self._p_for_rate(changes["flip_rate"], new["r"], new["eps_good"],
                                        new["eps_bad"])
        return GilbertElliott(**new)

    @property
    def stationary_bad(self):
        """pi_B = p / (p + r): long-run fraction of bits sent in the Bad state."""
        return self.p / (self.p + self.r)

    @property
    def mean_burst_length(self):
        """Mean Bad sojourn (bits): 1 / r (inf if r = 0)."""
        return 1.0 / self.r if self.r > 0 else math.inf

    @property
    def mean_flip_rate(self):
        """(1 - pi_B) eps_good + pi_B eps_bad."""
        pb = self.stationary_bad
        return (1.0 - pb) * self.eps_good + pb * self.eps_bad

    def _seed(self, rng):
        return _draw_seed(rng)

    def apply_inplace(self, bits, rng):
        _xor_masks(bits, self.error_masks(bits.shape[0], bits.shape[1], rng))

    def error_masks(self, nrows, width, rng):
        _check_masks(nrows, width)
        masks = np.zeros((nrows, _n_words(width)), np.uint64)
        _gilbert_elliott(nrows, width, self.p, self.r, self.eps_good, self.eps_bad,
                         self.continuous, self._seed(rng), masks)
        return masks

    def sample_states(self, shape, random_state=None):
        """States (1 = Bad) the chain visits for rows of bits of ``shape``: for
        checking the closed forms. Same draws as :meth:`apply` with the same seed."""
        rng = check_random_state(random_state)
        shape = tuple(shape)
        n = math.prod(shape)
        width = shape[-1] if shape else 1
        check_allocation(f"shape={shape}", n + 8 * (n // width if width else 0) *
                         _n_words(width), what="the states and masks of every bit",
                         hint="sample fewer bits at a time")
        states = np.empty(n, np.uint8)
        masks = np.zeros((n // width if width else 0, _n_words(width)), np.uint64)
        _gilbert_elliott(masks.shape[0], width, self.p, self.r, self.eps_good, self.eps_bad,
                         self.continuous, self._seed(rng), masks, states)
        return states.reshape(shape)


class StuckAt(Fault):
    """Sensor lines stuck at 0 or 1.

    A line is a position on the wire (the last axis of the bits): for
    protected naive Bayes one transmitted copy of a feature. A stuck sensor
    (every copy of feature j) is ``StuckAt(stuck1=feature_lines(copies, [j]))``.

    Parameters
    ----------
    stuck0, stuck1 : sequence of int, optional
        Lines always stuck at 0 / at 1 (fixed defects, every row).
    rate : float in [0, 1], default 0
        Besides the fixed ones, each line of each row is stuck with this
        probability, independently (a population of devices with random
        defects, one inference each).
    value : {0, 1, None}, default None
        Value of the random stuck lines; None: 0 or 1 with probability 1/2.

    Notes
    -----
    Closed form: a fixed stuck line reads its stuck value whatever was sent
    (its error rate is the fraction of rows that sent the other value). A
    random stuck line is wrong with probability ``rate * P(sent != value)``;
    with ``value=None`` that is ``rate / 2`` for every bit, independently:
    a BSC with eps = rate / 2.

    Examples
    --------
    >>> import numpy as np
    >>> StuckAt(stuck0=[0], stuck1=[2]).apply([[1, 1, 0, 0]]).tolist()
    [[0, 1, 1, 0]]
    """

    name = "stuck"

    def __init__(self, stuck0=(), stuck1=(), rate=0.0, value=None):
        self.stuck0 = self._lines(stuck0, "stuck0")
        self.stuck1 = self._lines(stuck1, "stuck1")
        both = np.intersect1d(self.stuck0, self.stuck1)
        if both.size:
            raise ValueError(f"line {int(both[0])} cannot be stuck at 0 and at 1")
        self.rate = _prob(rate, "rate")
        if value not in (None, 0, 1) or isinstance(value, bool):
            raise ValueError(f"value must be 0, 1 or None (random); got {value!r}")
        self.value = value

    @staticmethod
    def _lines(lines, name):
        arr = np.asarray(lines, dtype=np.int64).reshape(-1) if len(np.atleast_1d(lines)) \
            else np.empty(0, np.int64)
        if arr.size and arr.min() < 0:
            raise ValueError(f"{name} must hold line indices >= 0; got {int(arr.min())}")
        return np.unique(arr)

    def params(self):
        return {"stuck0": tuple(int(i) for i in self.stuck0),
                "stuck1": tuple(int(i) for i in self.stuck1),
                "rate": self.rate, "value": self.value}

    def _check_width(self, width):
        hi = max([-1] + [int(a.max()) for a in (self.stuck0, self.stuck1) if a.size])
        if hi >= width:
            raise ValueError(f"stuck line {hi} is out of range: rows have {width} bits")

    def apply_inplace(self, bits, rng):
        if self.stuck0.size:
            bits[:, self.stuck0] = 0
        if self.stuck1.size:
            bits[:, self.stuck1] = 1
        if self.rate > 0.0:
            flat = bits.reshape(-1)
            pos = _bernoulli_positions(flat.size, self.rate, rng)
            if self.value is None:
                flat[pos] = rng.integers(0, 2, pos.size, dtype=np.uint8)
            else:
                flat[pos] = self.value


def feature_lines(copies, features):
    """Wire positions of every copy of ``features`` in a feature-major frame.

    Parameters
    ----------
    copies : array-like of int, shape (n,)
        Copies per feature (``ProtectedNBDevice.copies``, ``2 r + 1``).
    features : sequence of int

    Examples
    --------
    >>> feature_lines([3, 1, 5], [0, 2]).tolist()
    [0, 1, 2, 4, 5, 6, 7, 8]
    """
    copies = np.asarray(copies, dtype=np.int64)
    start = np.concatenate([[0], np.cumsum(copies)[:-1]])
    feats = np.asarray(features, dtype=np.int64).reshape(-1)
    if feats.size and (feats.min() < 0 or feats.max() >= copies.size):
        raise ValueError(f"features must be in [0, {copies.size}); got {feats.tolist()}")
    parts = [np.arange(start[j], start[j] + copies[j]) for j in feats]
    return np.concatenate(parts) if parts else np.empty(0, np.int64)


class Interleave(Fault):
    """A bit fault seen through an interleaved wire order.

    The transmitter sends frame position ``order[k]`` as the k-th bit on the
    wire and the receiver puts it back, so ``fault`` acts on the wire order:
    ``out[:, order] = fault(bits[:, order])``. With :func:`copy_major_order`
    the copies of a feature are spread out, so a burst shorter than the
    spacing hits at most one of them.

    Parameters
    ----------
    fault : Fault
        A bit fault.
    order : array-like of int, shape (L,)
        A permutation of the frame positions.

    Examples
    --------
    >>> f = Interleave(StuckAt(stuck1=[0]), [2, 0, 1])   # wire bit 0 = frame bit 2
    >>> f.apply([[0, 0, 0]]).tolist()
    [[0, 0, 1]]
    """

    name = "interleave"

    def __init__(self, fault, order):
        if not isinstance(fault, Fault) or fault.target != "bits":
            raise TypeError("Interleave wraps a bit fault (target 'bits')")
        order = np.asarray(order, dtype=np.int64).reshape(-1)
        if not np.array_equal(np.sort(order), np.arange(order.size)):
            raise ValueError("order must be a permutation of 0 .. L-1")
        self.fault = fault
        self.order = order
        self.additive = fault.additive

    def params(self):
        return {**self.fault.params(), "order": tuple(int(i) for i in self.order)}

    def _aliases(self):
        return self.fault._aliases()

    def _rebuild(self, current, changes):
        inner = {k: v for k, v in changes.items() if k != "order"}
        order = changes.get("order", self.order)
        return Interleave(self.fault.with_params(**inner) if inner else self.fault, order)

    def to_dict(self):
        return {"model": self.name, "fault": self.fault.to_dict(),
                "order": self.order.tolist()}

    def _check_width(self, width):
        if self.order.size != width:
            raise ValueError(f"order has {self.order.size} positions but rows have {width} bits")
        self.fault._check_width(width)

    def apply_inplace(self, bits, rng):
        wire = np.ascontiguousarray(bits[:, self.order])
        self.fault.apply_inplace(wire, rng)
        bits[:, self.order] = wire

    def error_masks(self, nrows, width, rng):
        # the wrapped fault's masks (its draws for apply_inplace), bits moved to
        # frame order; frame position order[k] is wire bit k
        if not self.additive:
            return super().error_masks(nrows, width, rng)      # raises TypeError
        _check_masks(nrows, 2 * width)                          # wire order and frame order
        inner = self.fault.error_masks(nrows, width, rng)
        wire = np.unpackbits(inner.astype("<u8", copy=False).view(np.uint8), axis=1,
                             count=width, bitorder="little")
        bits = np.empty_like(wire)
        bits[:, self.order] = wire
        masks = np.empty((nrows, _n_words(width)), np.uint64)
        _pack_bits(bits, masks)
        return masks

    @property
    def mean_flip_rate(self):
        return self.fault.mean_flip_rate


def copy_major_order(copies):
    """Wire order sending copy 0 of every feature, then copy 1 of those with two
    or more copies, and so on (frame positions, feature-major frame).

    Examples
    --------
    >>> copy_major_order([3, 1, 2]).tolist()
    [0, 3, 4, 1, 5, 2]
    """
    copies = np.asarray(copies, dtype=np.int64)
    start = np.concatenate([[0], np.cumsum(copies)[:-1]])
    return np.concatenate([start[copies > c] + c for c in range(int(copies.max(initial=0)))]
                          ).astype(np.int64) if copies.size else np.empty(0, np.int64)


# ----------------------------------------------------------------------------
# Image faults
# ----------------------------------------------------------------------------
def _flip_positions(nbits, rng, rate, count):
    if count is not None:
        if count > nbits:
            raise ValueError(f"count {count} exceeds the {nbits} bits that can be upset")
        return np.sort(rng.choice(nbits, size=count, replace=False)).astype(np.int64)
    return _bernoulli_positions(nbits, rate, rng)


def _flip_bits_of_bytes(buf, positions):
    """XOR bit ``positions`` (bit k = byte k // 8, bit k % 8, LSB first) of a uint8 array."""
    np.bitwise_xor.at(buf, positions >> 3, (1 << (positions & 7)).astype(np.uint8))


def upset_bytes(raw, random_state=None, rate=None, count=None, start=0, stop=None):
    """Single-event upsets in raw bytes: flip bits of ``raw[start:stop]``.

    Parameters
    ----------
    raw : bytes-like
    random_state : None, int, SeedSequence or Generator
    rate : float in [0, 1], optional
        Flip each bit independently with this probability.
    count : int, optional
        Flip exactly this many distinct bits, chosen uniformly. Give exactly
        one of ``rate`` and ``count``.
    start, stop : int
        Byte range to upset (default: everything).

    Returns
    -------
    bytes

    Examples
    --------
    >>> out = upset_bytes(bytes(16), 0, count=3)
    >>> sum(bin(b).count("1") for b in out)
    3
    """
    rate, count = _rate_count(rate, count)
    buf = np.frombuffer(bytes(raw), np.uint8).copy()
    stop = buf.size if stop is None else stop
    if not 0 <= start <= stop <= buf.size:
        raise ValueError(f"byte range [{start}, {stop}) is outside [0, {buf.size}]")
    rng = check_random_state(random_state)
    pos = _flip_positions(8 * (stop - start), rng, rate, count) + 8 * start
    _flip_bits_of_bytes(buf, pos)
    return buf.tobytes()


def _rate_count(rate, count):
    if (rate is None) == (count is None):
        raise ValueError("give exactly one of rate (per-bit upset probability) and count "
                         f"(number of upset bits); got rate={rate!r}, count={count!r}")
    return (None if rate is None else _prob(rate, "rate"),
            None if count is None else _count(count, "count"))


class ParameterUpset(Fault):
    """Single-event upsets in the stored parameters of an artifact.

    Parameters
    ----------
    rate : float in [0, 1], optional
        Per-bit upset probability.
    count : int, optional
        Exact number of upset bits (uniform over the targeted bits). Give
        exactly one of ``rate`` and ``count``.
    arrays : sequence of str, optional
        Container arrays to upset (default: every array; ``"__meta__"`` is
        never touched). E.g. ``["table_codes"]`` for an SSBC k-NN code table.
    checked : bool, default False
        False: the upsets hit the arrays' bytes in the image the device holds
        and the device uses them as they are (it does not verify the CRC, or
        the upset happened after its boot-time check): the container is
        re-emitted with the flipped data and a matching CRC, byte for byte
        the original layout. True: the upsets hit any byte of the raw image
        (header, table, data, CRC) and the loader verifies it, so any upset
        is refused with :class:`~firmware_sim.artifact.ContainerError`
        (the CRC-32 detects every error pattern of up to 3 bits in images
        this small, and most others).

    Notes
    -----
    A loader may still refuse an unchecked image whose values break its
    schema (e.g. protected naive Bayes refuses weights whose absolute sum
    overflows int32); :func:`firmware_sim.campaign.run_campaign` counts such
    trials as ``refused``.

    Examples
    --------
    >>> import numpy as np
    >>> from firmware_sim.artifact import read_container, write_container
    >>> c = read_container(write_container(None, "ssbc", {"codes": np.zeros(8, np.uint8)}))
    >>> rng = np.random.default_rng(0)
    >>> int(np.unpackbits(ParameterUpset(count=5).apply_container(c, rng).arrays["codes"]).sum())
    5
    """

    target = "image"
    name = "seu"

    @classmethod
    def default_params(cls, params):
        """One upset (``count=1``) when neither rate nor count is given."""
        params = dict(params)
        if "rate" not in params and "count" not in params:
            params["count"] = 1
        return params

    def __init__(self, rate=None, count=None, arrays=None, checked=False):
        self.rate, self.count = _rate_count(rate, count)
        if arrays is not None:
            if isinstance(arrays, str):
                arrays = [arrays]
            arrays = tuple(str(a) for a in arrays)
        self.arrays = arrays
        if not isinstance(checked, (bool, np.bool_)):
            raise TypeError(f"checked must be a bool; got {checked!r}")
        self.checked = bool(checked)

    def params(self):
        return {"rate": self.rate, "count": self.count, "arrays": self.arrays,
                "checked": self.checked}

    def _rebuild(self, current, changes):
        if "rate" in changes and "count" not in changes:
            current = {**current, "count": None}
        if "count" in changes and "rate" not in changes:
            current = {**current, "rate": None}
        return ParameterUpset(**{**current, **changes})

    def targeted_bits(self, container):
        """Number of bits this model may upset in ``container``."""
        if self.checked:
            return 8 * container.nbytes
        return 8 * sum(a.nbytes for a in self._targets(container).values())

    def _targets(self, container):
        names = list(container.arrays) if self.arrays is None else list(self.arrays)
        missing = [n for n in names if n not in container.arrays]
        if missing:
            raise ValueError(f"arrays {missing} are not in the {container.kind} container "
                             f"(present: {sorted(container.arrays)})")
        return {n: container.arrays[n] for n in names}

    def apply_container(self, container, rng):
        """The upset image, parsed (raises ContainerError when the loader refuses it)."""
        if not isinstance(container, Container):
            raise TypeError(f"container must be a firmware_sim Container; got "
                            f"{type(container).__name__}")
        if self.checked:
            return read_container(upset_bytes(container.tobytes(), rng, self.rate, self.count))
        pos = _flip_positions(self.targeted_bits(container), rng, self.rate, self.count)
        return self.apply_positions(container, pos)

    def apply_positions(self, container, positions):
        """The image with the given targeted bits flipped, parsed.

        ``positions`` index the bits :meth:`targeted_bits` counts: bit ``k`` is
        bit ``k % 8`` (LSB first) of byte ``k // 8`` of the targeted arrays'
        bytes, concatenated in the order of ``arrays`` (default: the
        container's order); with ``checked`` the raw image's bytes. Raises
        ContainerError when the loader refuses the image (always, for a
        checked upset).
        """
        positions = np.asarray(positions, np.int64).reshape(-1)
        n = self.targeted_bits(container)
        if positions.size and (positions.min() < 0 or positions.max() >= n):
            raise ValueError(f"bit positions must be in [0, {n}); got "
                             f"[{positions.min()}, {positions.max()}]")
        if self.checked:
            buf = np.frombuffer(container.tobytes(), np.uint8).copy()
            _flip_bits_of_bytes(buf, positions)
            return read_container(buf.tobytes())
        targets = self._targets(container)
        sizes = [a.nbytes for a in targets.values()]
        blob = np.concatenate([np.frombuffer(a.tobytes(), np.uint8) for a in targets.values()]) \
            if targets else np.empty(0, np.uint8)
        if positions.size == 0:
            return container
        _flip_bits_of_bytes(blob, positions)
        arrays = dict(container.arrays)
        offset = 0
        for (name, a), size in zip(targets.items(), sizes):
            arrays[name] = np.frombuffer(blob[offset:offset + size].tobytes(),
                                         dtype=a.dtype).reshape(a.shape)
            offset += size
        return read_container(write_container(None, container.kind, arrays,
                                              container.meta or None))


# ----------------------------------------------------------------------------
# Composition
# ----------------------------------------------------------------------------
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
                    raise ValueError(f"no fault #{i} in this Compose of {len(self.faults)}")
                per[int(i)][name] = value
                continue
            owners = [i for i, f in enumerate(self.faults)
                      if key in f.params() or key in f._aliases()]
            if len(owners) != 1:
                raise ValueError(f"parameter {key!r} names {len(owners)} member faults; "
                                 f"use 'i.{key}' (known: {sorted(self.params())})")
            per[owners[0]][key] = value
        return Compose([f.with_params(**c) if c else f for f, c in zip(self.faults, per)])

    def _check_width(self, width):
        for f in self.bit_faults:
            f._check_width(width)

    def apply_inplace(self, bits, rng):
        for f in self.bit_faults:
            f.apply_inplace(bits, rng)

    def apply_container(self, container, rng):
        for f in self.image_faults:
            container = f.apply_container(container, rng)
        return container


#: Registry name -> fault class (the CLI's ``--fault`` choices come from it).
FAULTS = {}


def register_fault(cls):
    """Register a fault model class under its ``name`` (usable as a decorator).

    A new fault model is one :class:`Fault` subclass plus this call: the
    campaign engine, :func:`make_fault` and the CLI's ``--fault`` then know
    it. ``from_params`` builds it from keyword parameters (override it for
    aliases) and ``default_params`` fills what a sweep may leave out.
    """
    if not (isinstance(cls, type) and issubclass(cls, Fault)):
        raise TypeError(f"register_fault takes a Fault subclass; got {cls!r}")
    name = cls.name
    if not isinstance(name, str) or not name or name == Fault.name:
        raise ValueError(f"{cls.__name__} needs a class attribute name (its registry name)")
    if FAULTS.get(name, cls) is not cls:
        raise ValueError(f"fault name {name!r} is already registered to "
                         f"{FAULTS[name].__name__}")
    FAULTS[name] = cls
    return cls


for _cls in (BSC, GilbertElliott, StuckAt, ParameterUpset):
    register_fault(_cls)


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
        raise ValueError(f"unknown fault model {name!r}; known: {sorted(FAULTS)}")
    return FAULTS[name].from_params(**params)
