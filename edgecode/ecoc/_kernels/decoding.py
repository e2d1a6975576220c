"""Numba kernels of :mod:`edgecode.ecoc.decoding_exact` (njit only; the wrappers validate).

Received words ``v`` in ``{0, ..., N-1}^L`` are numbered in mixed radix with
digit 0 fastest: ``index(v) = sum_l v_l N^l``.  Two kernels, one job each:

* ``_label_words`` -- the nearest row of every word (doubled Hamming distance
  ``D_r(v) = sum_l (1 if M[r, l] == -1 else 2 [v_l != M[r, l]])``), lowest row
  index on ties, or one class's share of the nearest set (split ties);
* ``_symmetric_channel`` -- apply the q-ary symmetric channel to a function
  of the words, one axis at a time, in place (``_channel_axes`` is its inner
  loop over a run of entries, not called from Python).
"""

import numpy as np
from numba import njit

from ..._config import NJIT


@njit(**NJIT)
def _label_words(code, n_symbols, target, labels, share):
    """Label all ``N^L`` words (``N = n_symbols``, ``L = code.shape[1]``).

    ``target < 0``: ``labels[i]`` = lowest r of smallest ``D_r(v_i)``.
    ``target >= 0``: ``share[i] = [target in argmin_r D_r(v_i)] / |argmin|``
    (``labels`` is not touched).  The distances are updated incrementally as
    the digits change (about ``N / (N - 1)`` digit changes per word), so a word
    costs O(c) on average.  ``code`` is int64 (c, L), entries -1 or 0..N-1.
    """
    c, L = code.shape
    D = np.zeros(c, np.int64)           # doubled distances of the current word
    for r in range(c):
        d = 0
        for l in range(L):
            m = code[r, l]
            if m < 0:
                d += 1
            elif m != 0:          # every digit of word 0 is 0
                d += 2
        D[r] = d
    digits = np.zeros(L, np.int64)      # the current word, digit 0 fastest
    n_words = 1
    for l in range(L):
        n_words *= n_symbols
    top = n_symbols - 1
    for i in range(n_words):
        best = 0
        bestd = D[0]
        for r in range(1, c):
            if D[r] < bestd:
                bestd = D[r]
                best = r
        if target < 0:
            labels[i] = best
        else:
            n_best = 0
            hit = 0.0
            for r in range(c):
                if D[r] == bestd:
                    n_best += 1
                    if r == target:
                        hit = 1.0
            share[i] = hit / n_best
        # next word: add one in mixed radix, updating D for every changed digit
        l = 0
        while l < L:
            a = digits[l]
            b = a + 1 if a < top else 0
            digits[l] = b
            for r in range(c):
                m = code[r, l]
                if m >= 0:
                    if a == m:
                        D[r] += 2
                    elif b == m:
                        D[r] -= 2
            if b != 0:
                break
            l += 1


@njit(**NJIT)
def _symmetric_channel(f, n_symbols, n_axes, eps, block):
    """``f <- T^{(x) L} f`` in place (``f`` float64 of size ``N^L``, index as above).

    Along every axis, ``(T g)(a) = (1 - eps - eps / (N - 1)) g(a) + eps / (N - 1)
    sum_b g(b)``: each output keeps its symbol with probability ``1 - eps``
    and becomes each other symbol with probability ``eps / (N - 1)``.  The
    low axes, whose fibers lie inside runs of at most ``block`` entries, are
    applied run by run (the run stays in cache); each other axis is one pass.
    """
    N = n_symbols
    beta = eps / (N - 1)
    alpha = 1.0 - eps - beta
    n = f.shape[0]
    low = 0
    span = 1
    while low < n_axes and span * N <= block:
        span *= N
        low += 1
    if low > 0:
        for lo in range(0, n, span):
            _channel_axes(f, lo, span, 1, low, N, alpha, beta)
    _channel_axes(f, 0, n, span, n_axes - low, N, alpha, beta)


@njit(**NJIT)
def _channel_axes(f, lo, size, stride, n_axes, N, alpha, beta):
    """Apply T along ``n_axes`` consecutive axes, the first of stride ``stride``, to
    ``f[lo:lo + size]`` (helper of ``_symmetric_channel``).

    N = 2 is written out, ``(g(0), g(1)) <- ((1 - eps) g(0) + eps g(1),
    eps g(0) + (1 - eps) g(1))`` (3.5x faster than the general loop).
    """
    keep = alpha + beta
    for _ in range(n_axes):
        step = stride * N
        for start in range(lo, lo + size, step):
            if N == 2:
                for j in range(start, start + stride):
                    x = f[j]
                    y = f[j + stride]
                    f[j] = keep * x + beta * y
                    f[j + stride] = beta * x + keep * y
            else:
                for j in range(start, start + stride):
                    t = 0.0
                    for a in range(N):
                        t += f[j + a * stride]
                    t *= beta
                    for a in range(N):
                        f[j + a * stride] = alpha * f[j + a * stride] + t
        stride = step
