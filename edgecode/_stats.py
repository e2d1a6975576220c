"""Small statistics helpers shared by Monte Carlo code paths."""

from statistics import NormalDist

import numpy as np


def wilson_interval(successes, trials, confidence=0.99):
    """Wilson score interval for a binomial proportion, clipped to [0, 1].

    ``successes`` may be an array (one interval per entry); ``trials`` is the
    common number of trials.  Returns ``(lower, upper)``.
    """
    p_hat = np.asarray(successes, dtype=np.float64) / trials
    z = NormalDist().inv_cdf(0.5 + 0.5 * float(confidence))
    z2n = z * z / trials
    centre = (p_hat + z2n / 2) / (1 + z2n)
    half = z / (1 + z2n) * np.sqrt(p_hat * (1 - p_hat) / trials + z2n / (4 * trials))
    return np.clip(centre - half, 0.0, 1.0), np.clip(centre + half, 0.0, 1.0)
