"""Slow, obvious references for the tests (never used by the package)."""

import itertools

import numpy as np


def scp_bruteforce(margin, deltas, eps, *, return_change=False):
    """SCP by enumerating all 2**n flip sets.

    Row ``i`` of the pattern matrix is the flip set with bits ``i``; the
    flipped log-odds is accumulated as ``S + D_{j1} + D_{j2} + ...`` in
    increasing feature order (adding 0.0 for an unflipped feature changes
    nothing), and a set keeps the class iff ``(S + sum > 0) == (S > 0)``.
    Vectorised over the 2**n sets only, so keep n <= ~20.
    """
    margin = np.asarray(margin, dtype=float)
    deltas = np.asarray(deltas, dtype=float)
    t, n = deltas.shape
    eps = np.broadcast_to(np.asarray(eps, dtype=float), (n,))
    bits = (np.arange(2 ** n)[:, None] >> np.arange(n)[None, :]) & 1      # (2^n, n)
    prob = np.prod(np.where(bits == 1, eps, 1.0 - eps), axis=1)
    out = np.empty(t)
    for p in range(t):
        s = np.full(2 ** n, margin[p])
        for j in range(n):
            s = s + bits[:, j] * deltas[p, j]
        keeps = (s > 0) == (margin[p] > 0)
        change = prob[~keeps].sum()
        out[p] = change if return_change else 1.0 - change
    return out


def scp_approx_bruteforce(margin, deltas, eps, k, shift=True, hybrid=0):
    """Algorithm 1 by enumeration: quantise each D_j as the seed says, then add
    the probability of every flip set whose (quantised, or exact when its size
    is <= hybrid) sum keeps the class."""
    margin = np.asarray(margin, dtype=float)
    deltas = np.asarray(deltas, dtype=float)
    t, n = deltas.shape
    eps = np.broadcast_to(np.asarray(eps, dtype=float), (n,))
    out = np.empty(t)
    for p in range(t):
        S, D = margin[p], deltas[p]
        if n == 0:
            out[p] = 1.0
            continue
        dmin, dmax = D.min(), D.max()
        T = -S
        if dmax == dmin:
            value = lambda E: S + len(E) * dmin  # noqa: E731
        elif k == 1:
            mid = (dmin + dmax) / 2
            value = lambda E: S + len(E) * mid  # noqa: E731
        else:
            w = (dmax - dmin) / (k - 1)
            if shift and dmin <= T <= dmax:
                r = [int(np.ceil((d - T) / w)) for d in D]     # centre T + (r - 1/2) w
                value = lambda E: (1 - len(E)) * S + (sum(r[j] for j in E) - len(E) / 2) * w  # noqa
            else:
                b = [min(k - 1, max(0, int(np.floor((d - dmin) / w + 0.5)))) for d in D]
                value = lambda E: S + len(E) * dmin + sum(b[j] for j in E) * w  # noqa: E731
        change = 0.0
        for bits in itertools.product((0, 1), repeat=n):
            E = [j for j in range(n) if bits[j]]
            prob = 1.0
            for j in range(n):
                prob *= eps[j] if bits[j] else 1.0 - eps[j]
            if prob == 0.0 or not E:
                continue
            if len(E) <= hybrid:
                s = S
                for j in E:
                    s += D[j]
            else:
                s = value(E)
            if (s > 0) != (S > 0):
                change += prob
        out[p] = 1.0 - change
    return out
