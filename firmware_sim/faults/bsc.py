"""The binary symmetric channel: every bit flips independently (:class:`BSC`).

The one BSC sampler of the device side's engine: campaigns and
:func:`firmware_sim.simulate` draw their independent flips here.
"""

import numpy as np

from .._kernels.faults import _cut_rows, _xor_masks
from ..channel import _flip_inplace, check_channel_eps
from ..errors import DeviceError
from ._common import check_masks, check_prob, draw_seed, gilbert_elliott_masks, n_words
from .base import Fault
from .registry import register_fault

__all__ = ["BSC"]


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
            self.eps = check_prob(eps, "eps")
        else:
            self.eps = check_channel_eps(eps, len(eps), name="eps")
            self.eps.flags.writeable = False

    def params(self):
        return {"eps": self.eps}

    def param_aliases(self):
        return ("flip_rate",)

    @classmethod
    def from_params(cls, **params):
        if "flip_rate" in params:
            params = dict(params)
            params["eps"] = params.pop("flip_rate")
        return super().from_params(**params)

    def rebuild(self, current, changes):
        changes = dict(changes)
        if "flip_rate" in changes:
            changes["eps"] = changes.pop("flip_rate")
        return BSC(**{**current, **changes})

    @property
    def mean_flip_rate(self):
        """Average probability that a bit is flipped."""
        return float(np.mean(self.eps))

    def check_width(self, width):
        if not isinstance(self.eps, float) and self.eps.shape != (width,):
            raise DeviceError(f"eps has {self.eps.shape[0]} entries but rows have {width} bits")

    def apply_inplace(self, bits, rng):
        if isinstance(self.eps, float):
            _xor_masks(bits, self.error_masks(bits.shape[0], bits.shape[1], rng))
        else:
            _flip_inplace(bits.reshape(-1), bits.shape[-1], self.eps, rng)

    def error_masks(self, nrows, width, rng):
        if not isinstance(self.eps, float):
            return super().error_masks(nrows, width, rng)
        check_masks(nrows, width)
        # the row-major stream as one always-good Gilbert-Elliott row, then cut
        nbits = nrows * width
        flat = np.zeros((1, (nbits + 63) >> 6), np.uint64)
        gilbert_elliott_masks(1, nbits, 0.0, 1.0, self.eps, 0.0, False, draw_seed(rng), flat)
        masks = np.empty((nrows, n_words(width)), np.uint64)
        _cut_rows(flat[0], nrows, width, masks)
        return masks


register_fault(BSC)
