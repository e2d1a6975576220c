"""Small statistics helpers shared by Monte Carlo code paths."""

from statistics import NormalDist

import numpy as np


def wilson_interval(successes, trials, confidence=0.99):
    """Wilson score interval for a binomial proportion, clipped to [0, 1].

    ``successes`` and ``trials`` are numbers or arrays (broadcast together: one
    interval per entry); ``trials <= 0`` gives the uninformative ``(0, 1)``.
    Returns ``(lower, upper)``: floats for scalar input, float64 arrays
    otherwise. The device side has its own copy
    (``firmware_sim.engine.report.wilson_interval``: the packages may not
    import each other) with the same semantics, pinned by
    ``tests/test_kernel_copies.py``.
    """
    s = np.asarray(successes, np.float64)
    n = np.asarray(trials, np.float64)
    ok = n > 0
    safe = np.where(ok, n, 1.0)
    p_hat = s / safe
    z = NormalDist().inv_cdf(0.5 + 0.5 * float(confidence))
    z2n = z * z / safe
    centre = (p_hat + z2n / 2) / (1 + z2n)
    half = z / (1 + z2n) * np.sqrt(np.maximum(p_hat * (1 - p_hat), 0.0) / safe
                                   + z2n / (4 * safe))
    lo = np.where(ok, np.clip(centre - half, 0.0, 1.0), 0.0)
    hi = np.where(ok, np.clip(centre + half, 0.0, 1.0), 1.0)
    if s.ndim == 0 and n.ndim == 0:
        return float(lo), float(hi)
    return lo, hi
