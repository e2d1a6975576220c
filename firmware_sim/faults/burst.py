"""The Gilbert-Elliott burst channel (:class:`GilbertElliott`, registry name ``burst``)."""

import math

import numpy as np

from .._limits import check_allocation
from .._kernels.faults import _xor_masks
from ..channel import check_random_state
from ..errors import DeviceError
from ._common import check_masks, check_prob, draw_seed, gilbert_elliott_masks, n_words
from .base import Fault
from .registry import register_fault

__all__ = ["GilbertElliott"]


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
        self.p = check_prob(p, "p")
        self.r = check_prob(r, "r")
        self.eps_good = check_prob(eps_good, "eps_good")
        self.eps_bad = check_prob(eps_bad, "eps_bad")
        if not isinstance(continuous, (bool, np.bool_)):
            raise TypeError(f"continuous must be a bool; got {continuous!r}")
        self.continuous = bool(continuous)
        if self.p + self.r == 0.0:
            raise DeviceError("p and r cannot both be 0 (the chain would never move: "
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
                raise DeviceError("burst: give flip_rate and mean_burst together, or p and r")
        unknown = sorted(set(params) - {"eps_good", "eps_bad", "continuous"})
        if unknown:
            raise DeviceError(f"burst: unknown parameter(s) {unknown}; accepted: "
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
        DeviceError
            If the rate is not between ``eps_good`` and ``eps_bad`` (exclusive of
            ``eps_bad`` unless r could be 0).
        """
        mean_burst = float(mean_burst)
        if not mean_burst >= 1.0:
            raise DeviceError(f"mean_burst must be >= 1 bit; got {mean_burst}")
        r = 1.0 / mean_burst
        return cls(cls._p_for_rate(flip_rate, r, eps_good, eps_bad), r, eps_good, eps_bad,
                   continuous)

    @staticmethod
    def _p_for_rate(flip_rate, r, eps_good, eps_bad):
        f = check_prob(flip_rate, "flip_rate")
        eg, eb = check_prob(eps_good, "eps_good"), check_prob(eps_bad, "eps_bad")
        if not (min(eg, eb) <= f < max(eg, eb)) and f != eg:
            raise DeviceError(f"flip_rate must be in [eps_good, eps_bad) = [{eg}, {eb}) for a "
                              f"Gilbert-Elliott channel with those rates; got {f}")
        pi_b = (f - eg) / (eb - eg) if eb != eg else 0.0
        p = r * pi_b / (1.0 - pi_b)
        if p > 1.0:
            raise DeviceError(f"flip_rate {f} with mean burst {1 / r:g} needs p = {p:.3g} > 1; "
                              "use longer bursts or a larger eps_bad")
        return p

    def params(self):
        return {"p": self.p, "r": self.r, "eps_good": self.eps_good, "eps_bad": self.eps_bad,
                "continuous": self.continuous}

    def param_aliases(self):
        return ("flip_rate", "mean_burst")

    def rebuild(self, current, changes):
        changes = dict(changes)
        new = {**current, **{k: v for k, v in changes.items()
                             if k not in ("flip_rate", "mean_burst")}}
        if "mean_burst" in changes:
            mb = float(changes["mean_burst"])
            if not mb >= 1.0:
                raise DeviceError(f"mean_burst must be >= 1 bit; got {mb}")
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
        return draw_seed(rng)

    def apply_inplace(self, bits, rng):
        _xor_masks(bits, self.error_masks(bits.shape[0], bits.shape[1], rng))

    def error_masks(self, nrows, width, rng):
        check_masks(nrows, width)
        masks = np.zeros((nrows, n_words(width)), np.uint64)
        gilbert_elliott_masks(nrows, width, self.p, self.r, self.eps_good, self.eps_bad,
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
                         n_words(width), what="the states and masks of every bit",
                         hint="sample fewer bits at a time")
        states = np.empty(n, np.uint8)
        masks = np.zeros((n // width if width else 0, n_words(width)), np.uint64)
        gilbert_elliott_masks(masks.shape[0], width, self.p, self.r, self.eps_good, self.eps_bad,
                         self.continuous, self._seed(rng), masks, states)
        return states.reshape(shape)


register_fault(GilbertElliott)
