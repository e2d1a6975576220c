"""Numba kernels for ``edgecode.redundancy`` (njit only; the wrappers validate).

The greedy planner needs, at every step, the *influence* of each feature on
each planning point::

    I_j(x) = d change(x) / d eps_j = P(S + D_j + Z_{-j} changes) - P(S + Z_{-j} changes)

where ``change(x) = 1 - SCP(x)`` and ``Z_{-j}`` is the flip sum of the other
features.  ``change`` is multilinear in the eps, so moving eps_j from e to e'
changes it by exactly ``(e' - e) I_j``: one influence per feature replaces the
n SCP evaluations per step of a naive greedy.  Two ways to get all n of them:

* ``_exact_influences`` -- meet in the middle (n up to ~30): the subset sums of
  each half are generated sorted, with the bit mask of each subset
  (``edgecode._kernels._sorted_subset_sums``, shared with ``edgecode.scp``); one sweep
  gives every subset's partner mass, and summing it over the subsets that
  contain feature j gives P(change and j flipped).
* ``_grid_*`` -- a discretised flip-sum law per point (any n): each flip
  effect rounded to a whole number of cells of a per-point grid of N cells;
  the law kept as its characteristic function at the N/2 + 1 real-FFT
  frequencies (``_grid_spectrum``, O(n N) per point once), multiplied by
  the ratio of a feature's new and old factors after a step
  (``_grid_step``), and as its CDF, moved in place by the same step
  (deconvolution and convolution, O(N)) and rebuilt from the spectrum by a
  batched inverse FFT (the wrapper) and ``_grid_cdf`` before the in-place
  updates' rounding errors can grow: each noise reduction sharpens the law,
  which multiplies the errors of its high-frequency part, while products of
  characteristic functions keep every frequency to relative precision.
  ``_grid_influences`` removes one feature on the fly with an alternating
  deconvolution series (about ten CDF reads per influence).

The kernels that do per-point work at every step or refresh (and the exact
engine) take a range of points and release the GIL (``NJIT_NOGIL``): the
wrappers run them on threads (``edgecode._parallel.run_chunks``).  Each
point's values depend on that point alone and sums over points are added in
point order, so results are identical for any thread count.  Threads rather
than ``prange``: a parallel kernel took numba 1.5x the compile time of the
same serial one (17.8 s against 12.1 s for these kernels on an empty cache).

Orientation (as in ``edgecode.scp``): with ``sgn = +1`` if ``S > 0`` else -1,
``S' = sgn S >= 0`` and ``d'_j = sgn D_j``, the class changes iff
``S' + sum_E d'_j <= 0`` (S > 0) or ``< 0`` (S <= 0, "strict").
"""

import math

import numpy as np
from numba import njit

from .._config import NJIT, NJIT_NOGIL
from .._kernels import _sorted_subset_sums  # shared with edgecode.scp

# --------------------------------------------------------------------------
# exact influences: meet in the middle with subset masks
# --------------------------------------------------------------------------

@njit(**NJIT)
def _partner_mass(s, strict, outer, m_out, inner, p_in, m_in, x_outer, cum, out):
    """``out[a]`` = mass (``p_in``) of the inner subsets that change the class
    together with outer subset a (the lists of ``_sorted_subset_sums``, at
    ``[1:m+1]``: subset a is at a + 1); ``cum`` is scratch of ``m_in + 1`` slots.

    The class changes iff ``(s + x) + y <= 0`` (``< 0`` if strict), x the sum
    of the first half's subset (the outer one if ``x_outer``, else the inner
    one) and y the second half's; for increasing outer sums the changing inner
    subsets form a shrinking prefix of the sorted inner list.  Both sweeps of
    a point (x outer, then y outer) use this one expression, so they agree on
    every pair.
    """
    cum[0] = 0.0
    for b in range(m_in):
        cum[b + 1] = cum[b] + p_in[b + 1]
    ptr = m_in
    for a in range(m_out):
        u = outer[a + 1]
        while ptr > 0:
            w = inner[ptr]
            xa = u if x_outer else w          # the x-half's sum, then the y-half's
            xb = w if x_outer else u
            x = (s + xa) + xb
            if x < 0.0 or (x == 0.0 and not strict):
                break
            ptr -= 1
        out[a] = cum[ptr]


@njit(**NJIT_NOGIL)
def _exact_influences(margin, deltas, eps, infl, change, start, stop):
    """Exact influences ``infl[p, j]`` and change probabilities ``change[p]``
    for the points ``start <= p < stop``.

    ``infl[p, j] = P(change | j flipped) - P(change | j kept)``, obtained as
    ``W_j / e_j - (change - W_j) / (1 - e_j)`` with ``W_j = P(change and j
    flipped)``.  Features with ``eps_j == 0`` or ``D_j == 0`` get 0 (the
    planner never steps them).  O(2**(n/2) n) per point; the buffers are
    allocated once per call, each point's values depend on that point alone.
    """
    n = deltas.shape[1]
    cap = 1 << ((n + 1) // 2)
    vals = np.empty(n)
    idx = np.empty(n, np.int64)
    sa = np.empty(cap + 1)               # the lists at [1:m+1], behind a sentinel
    pa = np.empty(cap + 1)
    ka = np.empty(cap + 1, np.int64)
    sb = np.empty(cap + 1)
    pb = np.empty(cap + 1)
    kb = np.empty(cap + 1, np.int64)
    cum = np.empty(cap + 1)
    ga = np.empty(cap)
    gb = np.empty(cap)
    w1 = np.empty(n)
    x_outer = np.bool_(True)             # not literals: one compiled version of each helper
    y_outer = np.bool_(False)
    for p in range(start, stop):
        s = margin[p]
        strict = not (s > 0.0)
        sgn = 1.0 if s > 0.0 else -1.0
        s = sgn * s
        na = 0
        for j in range(n):
            infl[p, j] = 0.0
            vals[j] = sgn * deltas[p, j]
            if eps[j] > 0.0 and deltas[p, j] != 0.0:
                idx[na] = j
                na += 1
        if na == 0:
            change[p] = 0.0
            continue
        h1 = na // 2
        ma = np.int64(_sorted_subset_sums(vals, eps, idx, np.int64(0), h1, sa, pa, ka, x_outer))
        mb = np.int64(_sorted_subset_sums(vals, eps, idx, h1, np.int64(na), sb, pb, kb, x_outer))
        _partner_mass(s, strict, sa, ma, sb, pb, mb, x_outer, cum, ga)
        _partner_mass(s, strict, sb, mb, sa, pa, ma, y_outer, cum, gb)
        c = 0.0
        for a in range(ma):
            c += pa[a + 1] * ga[a]
        change[p] = c
        # P(change and feature j flipped): the first half's subsets, then the second's
        for q in range(na):
            w1[q] = 0.0
        for a in range(ma + mb):
            if a < ma:
                v = pa[a + 1] * ga[a]
                mk = ka[a + 1]
                q = 0
            else:
                v = pb[a - ma + 1] * gb[a - ma]
                mk = kb[a - ma + 1]
                q = h1
            if v == 0.0:
                continue
            while mk:
                if mk & 1:
                    w1[q] += v
                mk >>= 1
                q += 1
        for q in range(na):
            j = idx[q]
            e = eps[j]
            infl[p, j] = w1[q] / e - (c - w1[q]) / (1.0 - e)


# --------------------------------------------------------------------------
# grid: a discretised flip-sum CDF per point
# --------------------------------------------------------------------------

@njit(**NJIT)
def _cell(d, h):
    """Grid value of a flip effect: ``d / h`` rounded to the nearest integer (half up)."""
    return np.int64(math.floor(d / h + 0.5))


@njit(**NJIT)
def _tail_width(var, mx, log_term):
    """t with P(Z - EZ >= t) <= exp(-log_term) (and the same below) for a sum of
    independent terms within ``mx`` of their means, of total variance ``var``.

    Bennett's inequality, ``P >= t) <= exp(-(var / mx^2) h(mx t / var))`` with
    ``h(u) = (1 + u) log(1 + u) - u``, solved for t by Newton's method from
    Bernstein's (looser) width, which it never exceeds.  At small eps, where
    the sum is a few large jumps, Bennett's width is several times narrower,
    so the grid's cells are finer where the mass is.
    """
    if var <= 0.0 or mx <= 0.0:
        return 0.0
    a3 = log_term * mx / 3.0
    bern = a3 + math.sqrt(a3 * a3 + 2.0 * log_term * var)
    c = log_term * mx * mx / var            # solve h(u) = c, then t = u var / mx
    u = bern * mx / var
    for _ in range(60):
        f = (1.0 + u) * math.log1p(u) - u - c
        step = f / math.log1p(u)            # h'(u) = log(1 + u)
        u_new = u - step
        if u_new <= 0.0:
            u_new = 0.5 * u
        if abs(u_new - u) <= 1e-12 * u:
            u = u_new
            break
        u = u_new
    # Newton on the convex h approaches from above; guard the last rounding
    width = u * var / mx * (1.0 + 1e-9)
    return bern if bern < width else width


@njit(**NJIT)
def _cdf_at(F, x):
    """CDF of the grid law at cell coordinate x (each cell's mass spread
    uniformly over [c - 1/2, c + 1/2]; linear between the half-integers)."""
    w = F.shape[0]
    y = x + 0.5
    if y <= 0.0:
        return 0.0
    c0 = np.int64(math.floor(y))
    if c0 >= w:
        return F[w - 1]
    below = F[c0 - 1] if c0 >= 1 else 0.0
    return below + (F[c0] - below) * (y - c0)


@njit(**NJIT)
def _moments(deltas, eps, p, sgn, h):
    """Range and moments of point p's flip sum over the features that can flip.

    ``h > 0``: of the grid values ``_cell(d, h)``; ``h == 0``: of the real
    flip effects.  Returns (count, sum of the negative values, of the positive
    ones, mean of the negative part, of the positive part, variance, largest
    absolute value).
    """
    n = deltas.shape[1]
    na = 0
    s_neg = 0.0
    s_pos = 0.0
    mu_neg = 0.0
    mu_pos = 0.0
    var = 0.0
    mx = 0.0
    for j in range(n):
        d = sgn * deltas[p, j]
        e = eps[j]
        if e > 0.0 and d != 0.0:
            v = float(_cell(d, h)) if h > 0.0 else d
            na += 1
            if v > 0.0:
                s_pos += v
                mu_pos += e * v
            else:
                s_neg += v
                mu_neg += e * v
            var += e * (1.0 - e) * v * v
            if abs(v) > mx:
                mx = abs(v)
    return na, s_neg, s_pos, mu_neg, mu_pos, var, mx


@njit(**NJIT)
def _grid_setup(margin, deltas, eps, n_cells, log_term, h_out, lo_out, xtau_out, state_out):
    """Per point: grid step h, window start and threshold position (in cells).

    ``state_out[p]``: 0 = the class never changes (change < 2 exp(-log_term)
    for any eps' <= eps, componentwise), 2 = it always changes, 1 = planned
    on the grid.  h is chosen so that the point's window fills at most
    ``n_cells`` cells; flip effects are rounded to whole cells.

    The window ``[lo, hi]`` (in cells) of the rounded flip sum at grid step h
    holds its exact extremes, narrowed to where Bennett's inequality leaves
    more than ``2 exp(-log_term)`` of mass for any eps' <= eps: the mean moves
    only between ``sum_{q<0} e q`` and ``sum_{q>0} e q`` as eps decreases and
    the variance only shrinks.
    """
    t = deltas.shape[0]
    for p in range(t):
        s = margin[p]
        sgn = 1.0 if s > 0.0 else -1.0
        tau = -(sgn * s)
        h_out[p] = 1.0
        lo_out[p] = 0
        xtau_out[p] = 0.0
        state_out[p] = 0
        na, s_neg, s_pos, mu_neg, mu_pos, var, mx = _moments(deltas, eps, p, sgn, 0.0)
        if na == 0:
            continue
        wdt = _tail_width(var, mx, log_term)
        lo_r = mu_neg - wdt
        lo_r = lo_r if lo_r > s_neg else s_neg      # max(s_neg, mu_neg - wdt)
        hi_r = mu_pos + wdt
        hi_r = hi_r if hi_r < s_pos else s_pos      # min(s_pos, mu_pos + wdt)
        if tau < lo_r:
            continue
        if tau >= hi_r:
            state_out[p] = 2
            continue
        h = (hi_r - lo_r) / (n_cells - 4)
        while True:                              # the window at step h; widen h until it fits
            _, s_neg, s_pos, mu_neg, mu_pos, var, mx = _moments(deltas, eps, p, sgn, h)
            wq = _tail_width(var, mx, log_term)
            lo_c = np.int64(math.floor(mu_neg - wq))   # max(sum of negatives, mean - wq) - 1,
            lo_c = (lo_c if lo_c > np.int64(s_neg) else np.int64(s_neg)) - 1   # at most -1
            lo_c = lo_c if lo_c < -1 else -1
            hi_c = np.int64(math.ceil(mu_pos + wq))    # min(sum of positives, mean + wq) + 1,
            hi_c = (hi_c if hi_c < np.int64(s_pos) else np.int64(s_pos)) + 1   # at least 1
            hi_c = hi_c if hi_c > 1 else 1
            if hi_c - lo_c + 1 <= n_cells:
                break
            h *= 1.01 * (hi_c - lo_c + 1) / n_cells
        x = tau / h - lo_c
        h_out[p] = h
        lo_out[p] = lo_c
        xtau_out[p] = x
        if x < -0.5:
            state_out[p] = 0
        elif x >= hi_c - lo_c + 0.5:
            state_out[p] = 2
        else:
            state_out[p] = 1


@njit(**NJIT)
def _cpow(z, c):
    """z ** c for a complex z and an integer c >= 1 (binary exponentiation)."""
    out = 1.0 + 0.0j
    while c:
        if c & 1:
            out *= z
        z *= z
        c >>= 1
    return out


@njit(**NJIT_NOGIL)
def _grid_spectrum(lo, rows, keys, levels, n_levels, roots, phi, start, stop):
    """Characteristic function of each planned point's rounded flip sum.

    ``phi[r, k] = roots[(k z0) mod N] prod_j ((1 - e_j) + e_j roots[(k q_j) mod N])``
    for k = 0..N/2, with ``roots[m] = exp(-2 pi i m / N)`` and z0 = -lo the
    cell of a zero sum: the real FFT of the law on the N cells (the window
    holds all but a negligible mass, so the circular wrap is negligible).
    ``keys[r]`` lists point ``rows[r]``'s features as sorted codes
    ``(q_j mod N) * n_levels + level`` (``levels[level]`` = e_j; -1 pads the
    end), so features with the same (q_j, e_j) come together and share one
    factor raised to their count.  Products keep relative precision in every
    component, which a transform of the law itself would not: a noise
    reduction later multiplies the small high-frequency components by large
    factors.
    """
    nk = phi.shape[1]
    big_n = roots.shape[0]
    width = keys.shape[1]
    for r in range(start, stop):
        z0 = -lo[rows[r]]
        m = 0
        for k in range(nk):
            phi[r, k] = roots[m]
            m += z0
            if m >= big_n:
                m -= big_n
        a = 0
        while a < width and keys[r, a] >= 0:
            key = keys[r, a]
            b = a + 1
            while b < width and keys[r, b] == key:
                b += 1
            count = b - a
            q = key // n_levels
            e = levels[key % n_levels]
            keep = 1.0 - e
            m = 0
            for k in range(nk):
                f = keep + e * roots[m]
                phi[r, k] *= f if count == 1 else _cpow(f, count)
                m += q
                if m >= big_n:
                    m -= big_n
            a = b


@njit(**NJIT)
def _shift_cdf(F, q, e_old, e_new):
    """Move one CDF from ``(1 - e_old) + e_old S^q`` to ``(1 - e_new) + e_new S^q``.

    Convolution with ``(1 - e) delta_0 + e delta_q`` acts on a CDF as on a
    law, ``F <- (1 - e) F + e F(. - q)`` (beyond the grid: 0 below, the total
    above).  Its inverse runs ``F_Q(z) = (F(z) - e F_Q(z - q)) / (1 - e)`` away
    from the end where F_Q is known (ascending for q > 0, descending for
    q < 0), multiplying earlier errors by ``e / (1 - e) < 1`` per term.
    """
    w = F.shape[0]
    total = F[w - 1]
    if q > 0:
        if e_old > 0.0:
            inv = 1.0 / (1.0 - e_old)
            for z in range(q):
                F[z] = F[z] * inv
            for z in range(q, w):
                F[z] = (F[z] - e_old * F[z - q]) * inv
        keep = 1.0 - e_new
        for z in range(w - 1, q - 1, -1):
            F[z] = keep * F[z] + e_new * F[z - q]
        for z in range(q - 1, -1, -1):
            F[z] = keep * F[z]
    else:
        aq = -q
        if e_old > 0.0:
            inv = 1.0 / (1.0 - e_old)
            for z in range(w - 1, w - aq - 1, -1):
                F[z] = (F[z] - e_old * total) * inv
            for z in range(w - aq - 1, -1, -1):
                F[z] = (F[z] - e_old * F[z + aq]) * inv
        keep = 1.0 - e_new
        for z in range(0, w - aq):
            F[z] = keep * F[z] + e_new * F[z + aq]
        for z in range(w - aq, w):
            F[z] = keep * F[z] + e_new * total


@njit(**NJIT_NOGIL)
def _grid_step(margin, deltas, j, e_old, e_new, rows, h, xtau, ratio, phi, cdf, change, pmax,
               in_place, start, stop):
    """Feature j's flip probability moves from e_old to e_new, at the planned
    points ``rows[start:stop]``.

    The spectrum is multiplied by the ratio of the feature's new and old
    factors, tabulated by root of unity in ``ratio`` (exact: it keeps relative
    precision in every frequency).  With ``in_place`` the CDF is moved too
    (``_shift_cdf``, which amplifies earlier rounding errors by at most
    ``e'/e + (1 - e'/e) / (1 - 2 e)``); otherwise the caller rebuilds the CDFs
    from the spectra.
    """
    nk = phi.shape[1]
    big_n = ratio.shape[0]
    for r in range(start, stop):
        p = rows[r]
        sgn = 1.0 if margin[p] > 0.0 else -1.0
        d = sgn * deltas[p, j]
        if d == 0.0:
            continue
        q = _cell(d, h[p])
        qm = q % big_n
        if qm == 0:
            continue
        m = 0
        for k in range(nk):
            phi[r, k] *= ratio[m]
            m += qm
            if m >= big_n:
                m -= big_n
        if in_place and abs(q) < cdf.shape[1]:
            F = cdf[r]
            _shift_cdf(F, q, e_old, e_new)
            best = F[0]                   # the largest cell mass (CDF increment)
            for z in range(1, F.shape[0]):
                v = F[z] - F[z - 1]
                if v > best:
                    best = v
            pmax[r] = best
            change[p] = _cdf_at(F, xtau[p])


@njit(**NJIT)
def _grid_cdf(pmf, rows, xtau, change, pmax):
    """Turn each row's law (from the inverse FFT) into its CDF, in place, and
    read the change probability at the threshold and the largest cell mass."""
    nr = rows.shape[0]
    for r in range(nr):
        acc = 0.0
        best = 0.0
        row = pmf[r]
        for z in range(row.shape[0]):
            v = row[z]
            if v > best:
                best = v
            acc += v
            row[z] = acc
        pmax[r] = best
        change[rows[r]] = _cdf_at(row, xtau[rows[r]])


@njit(**NJIT)
def _cdf_cell(F, c, f):
    """``_cdf_at`` at a point given as cell c (= floor(x + 1/2)) and fraction f."""
    w = F.shape[0]
    if c <= 0:
        return F[0] * f if c == 0 else 0.0
    if c >= w:
        return F[w - 1]
    return F[c - 1] + (F[c] - F[c - 1]) * f


@njit(**NJIT)
def _grid_point_influence(F, x, dl, q, e, pmax, tol, rtol):
    """Influence of one feature at one point from the CDF F of the full flip sum.

    With Q the sum without the feature (grid value q, real value dl cells) and
    rho = e / (1 - e), inverting ``F = (1 - e) F_Q + e F_Q(. - q)`` gives
    ``F_Q(y) = sum_k (-rho)^k F(y - k q) / (1 - e)``, so
    ``I = F_Q(x - dl) - F_Q(x) = sum_k (-rho)^k [F(x - dl - k q) - F(x - k q)] / (1 - e)``.
    Each bracket is the mass of a window of width |dl|, at most |dl| times the
    largest cell mass ``pmax`` (the interpolated CDF's steepest slope), and
    the windows march away from x by q cells per term, so every later bracket
    is also at most the mass below the current window's top (q > 0) or above
    its bottom (q < 0).  The series stops when the remaining weights
    ``|coef| / (1 - rho)`` times that bound is below ``tol`` or below ``rtol``
    times the sum so far.  The read positions move by whole cells, so their
    cells and fractions are computed once.
    """
    w = F.shape[0]
    ya = x + 0.5
    yb = x - dl + 0.5
    ca = np.int64(math.floor(ya))
    cb = np.int64(math.floor(yb))
    fa = ya - ca
    fb = yb - cb
    gb = _cdf_cell(F, cb, fb)
    ga = _cdf_cell(F, ca, fa)
    if e == 0.0 or q == 0:
        return gb - ga
    rho = e / (1.0 - e)
    coef = 1.0 / (1.0 - e)
    tail = 1.0 / (1.0 - rho)
    total = F[w - 1]
    window = abs(dl) * pmax
    acc = 0.0
    while True:
        acc += coef * (gb - ga)
        coef = -coef * rho
        if q > 0:
            beyond = gb if gb > ga else ga                # max(ga, gb)
        else:
            beyond = total - (gb if gb < ga else ga)      # total - min(ga, gb)
        bound = window if window < beyond else beyond
        rest = abs(coef) * tail * (bound if bound > 0.0 else 0.0)
        if rest < tol or rest < rtol * abs(acc) or abs(coef) < tol:
            break
        ca -= q
        cb -= q
        gb = _cdf_cell(F, cb, fb)
        ga = _cdf_cell(F, ca, fa)
    return acc


@njit(**NJIT_NOGIL)
def _grid_influences(margin, deltas, eps, feats, rows, h, xtau, cdf, pmax, tol, rtol, out, start,
                     stop):
    """``out[r, k]`` = grid influence of feature ``feats[k]`` at point ``rows[r]``
    for ``start <= r < stop`` (``cdf[r]`` is that point's CDF, ``pmax[r]`` its
    largest cell mass)."""
    nf = feats.shape[0]
    for r in range(start, stop):
        p = rows[r]
        sgn = 1.0 if margin[p] > 0.0 else -1.0
        F = cdf[r]
        hp = h[p]
        x = xtau[p]
        pm = pmax[r]
        for k in range(nf):
            j = feats[k]
            d = sgn * deltas[p, j]
            if d == 0.0:
                out[r, k] = 0.0
            else:
                out[r, k] = _grid_point_influence(F, x, d / hp, _cell(d, hp), eps[j], pm, tol,
                                                  rtol)


@njit(**NJIT)
def _column_sums(values, total, pos, neg):
    """Per column of ``values`` (points x features): the sum, the sum of the
    positive entries and of the negated negative ones (from the sum and the
    sum of absolute values), each added in point order: the same result for
    any thread count.  Blocks of columns read the rows contiguously.""" 
    t, nf = values.shape
    block = 64
    acc = np.empty(block)
    acc_abs = np.empty(block)
    for k0 in range(0, nf, block):
        width = nf - k0 if nf - k0 < block else block
        for k in range(width):
            acc[k] = 0.0
            acc_abs[k] = 0.0
        for r in range(t):
            row = values[r, k0:k0 + width]    # a row slice: the loop vectorises
            for k in range(width):
                v = row[k]
                acc[k] += v
                acc_abs[k] += abs(v)
        for k in range(width):
            total[k0 + k] = acc[k]
            pos[k0 + k] = 0.5 * (acc_abs[k] + acc[k])
            neg[k0 + k] = 0.5 * (acc_abs[k] - acc[k])
