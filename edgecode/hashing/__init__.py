"""Binary codes for retrieval and k-NN on small devices (seed 002).

* :class:`FrequentDirections` -- deterministic streaming matrix sketch.
* :class:`SSBC` -- streaming spectral binary codes (streaming and online).
* :class:`SignRandomProjection`, :class:`PCASign`, :class:`ITQ`,
  :class:`SpectralHashing` -- baselines.
* :class:`HammingIndex` -- exact top-k Hamming search (numba popcount).
* :mod:`~edgecode.hashing.metrics` -- recall@R, precision@R, mAP.
* :mod:`~edgecode.hashing.codes` -- the packed bit layout (LSB first).
"""

from .baselines import ITQ, PCASign, SignRandomProjection
from .codes import pack_bits, unpack_bits
from .index import HammingIndex
from .metrics import (mean_average_precision, precision_at, recall_at, retrieval_metrics,
                      true_neighbors)
from .sketch import FrequentDirections
from .spectral import SpectralHashing, spectral_modes
from .ssbc import SSBC, auto_sigma, gaussian_affinity

__all__ = ["FrequentDirections", "SSBC", "SignRandomProjection", "PCASign", "ITQ",
           "SpectralHashing", "spectral_modes",
           "HammingIndex", "pack_bits", "unpack_bits", "true_neighbors", "retrieval_metrics",
           "recall_at", "precision_at", "mean_average_precision", "gaussian_affinity",
           "auto_sigma"]
