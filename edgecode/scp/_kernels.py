"""Numba kernels for ``edgecode.scp`` (njit only; the wrappers validate).

Three kernels, one job each, all batched over the t points of a call:

* ``_scp_exact_change``   -- meet in the middle, fills the change probability.
* ``_scp_approx_change``  -- the seed's Algorithm 1 (buckets, G(y, z), shift,
  hybrid), fills the approximate change probability.
* ``_scp_bounds``         -- certified integer-grid dynamic programme, fills the
  lower and upper SCP bounds.

Conventions shared by all of them (see DESIGN.md): a point with log-odds S and
flip effects D_j keeps its class under the flip set E iff
``(S + sum_E D_j > 0) == (S > 0)``.  Features with ``eps_j == 0`` never flip and
are dropped; features with ``D_j == 0`` cannot move the sum (``x + 0.0 == x``
exactly) and are dropped by the exact and the bounds kernels (the approximate
kernel keeps them, as Algorithm 1 does).

Writing ``(S', D') = (S, D)`` when ``S > 0`` and ``(-S, -D)`` when ``S <= 0``
(negation is exact in floating point), the change event is always a *lower*
set: ``S' + sum_E D' <= 0`` (S > 0) or ``< 0`` (S <= 0, "strict").
"""

import math

import numpy as np
from numba import njit

from .._config import NJIT

_U = 2.0 ** -53  # unit roundoff of float64


# --------------------------------------------------------------------------
# exact: meet in the middle
# --------------------------------------------------------------------------

@njit(**NJIT)
def _sorted_subset_sums(vals, probs, idx, start, stop, sums, masses):
    """Sorted subset sums of ``vals[idx[start:stop]]`` with their probabilities.

    Doubling: the list for features f_1..f_i is the merge of the (sorted) list
    for f_1..f_{i-1} and the same list shifted by D_{f_i}; the merge is done in
    place from the back, so ``sums``/``masses`` need only 2**(stop-start) slots.
    Returns the list length.
    """
    m = 1
    sums[0] = 0.0
    masses[0] = 1.0
    for q in range(start, stop):
        j = idx[q]
        d = vals[j]
        e = probs[j]
        keep = 1.0 - e
        i = m - 1          # last unread element of the unshifted list
        k = m - 1          # last unread element of the shifted list
        w = 2 * m - 1      # write position
        while k >= 0:
            shifted = sums[k] + d
            if i >= 0 and sums[i] > shifted:
                sums[w] = sums[i]
                masses[w] = masses[i] * keep
                i -= 1
            else:
                pm = masses[k] * e
                sums[w] = shifted
                masses[w] = pm
                k -= 1
            w -= 1
        # the remaining unshifted elements 0..i are already in place (w == i)
        for r in range(i + 1):
            masses[r] *= keep
        m *= 2
    return m


@njit(**NJIT)
def _scp_exact_change(margin, deltas, eps, out):
    """Exact change probability 1 - SCP of every point, by meet in the middle.

    ``out[p]`` receives the probability mass of the flip sets that change the
    class of point p.  O(2**(n/2) n) per point; the buffers are allocated once
    for the widest half and reused for every point.
    """
    t, n = deltas.shape
    h_max = (n + 1) // 2
    cap = 1 << h_max
    sa = np.empty(cap)
    pa = np.empty(cap)
    sb = np.empty(cap)
    pb = np.empty(cap)
    cum = np.empty(cap + 1)
    idx = np.empty(n, np.int64)
    vals = np.empty(n)
    for p in range(t):
        s = margin[p]
        strict = not (s > 0.0)
        sgn = 1.0 if s > 0.0 else -1.0
        s = sgn * s
        na = 0
        for j in range(n):
            vals[j] = sgn * deltas[p, j]
            if eps[j] > 0.0 and deltas[p, j] != 0.0:
                idx[na] = j
                na += 1
        if na == 0:
            out[p] = 0.0
            continue
        h1 = na // 2
        ma = _sorted_subset_sums(vals, eps, idx, 0, h1, sa, pa)
        mb = _sorted_subset_sums(vals, eps, idx, h1, na, sb, pb)
        cum[0] = 0.0
        for b in range(mb):
            cum[b + 1] = cum[b] + pb[b]
        # for increasing A the set of B with S' + A + B in the change region
        # is a shrinking prefix of the sorted B list (float + is monotone)
        ptr = mb
        change = 0.0
        for a in range(ma):
            x0 = s + sa[a]
            while ptr > 0:
                x = x0 + sb[ptr - 1]
                if x < 0.0 or (x == 0.0 and not strict):
                    break
                ptr -= 1
            if ptr == 0:
                break
            change += pa[a] * cum[ptr]
        out[p] = change


# --------------------------------------------------------------------------
# approximate: the seed's Algorithm 1
# --------------------------------------------------------------------------

@njit(**NJIT)
def _scp_approx_change(margin, deltas, eps, k, shift, hybrid, tail, max_cells, out,
                       cells_used):
    """Algorithm 1 of seed 000 (k buckets, G(y, z), Improvements 1 and 2).

    ``out[p]`` receives the approximate change probability of point p and
    ``cells_used[p]`` the size of its (l, m) coefficient array.  A point whose
    array would exceed ``max_cells`` gets ``cells_used[p] = -needed`` and is
    left unfilled (the wrapper raises).

    Quantisation (b_j is the bucket of feature j, l the number of flips, m the
    sum of the b_j over the flipped set):

    * mode 0 (D_I == 0 or k == 1): one value c for every feature (D_min when
      all are equal, else the midpoint of [D_min, D_max]); quantised sum l c.
    * mode 1 (no shift): w = D_I / (k - 1), b_j = round((D_j - D_min) / w)
      (half up), value D_min + b_j w; quantised sum l D_min + m w.
    * mode 2 (shift, T = -S in [D_min, D_max]): the bucket edges are moved by
      at most w / 2 so that T is an edge; the bucket of D_j is
      r_j = ceil((D_j - T) / w) (right-closed intervals, so D_j == T lies in
      the bucket below T, as the definition requires: S + D_j == 0 is class
      0), centre T + (r_j - 1/2) w.  The quantised margin is
      ``(1 - l) S + (m_r - l / 2) w`` with m_r = sum r_j, so a single flip is
      judged by the sign of (r_j - 1/2) alone: never wrong.

    G(y, z) = prod_j ((1 - eps_j) + eps_j y z^{b_j}) is expanded feature by
    feature into rows l = 0..L (row l holds the z-polynomial of the l-flip
    subsets), keeping only rows l <= L where P(#flips > L) <= ``tail``
    (Poisson-binomial tail, computed exactly first): the dropped rows carry at
    most ``tail`` probability.  Rows l <= hybrid are replaced by an exact
    enumeration of the subsets of size 1..hybrid with the true D_j.
    """
    t, n = deltas.shape
    act = np.empty(n, np.int64)
    bkt = np.empty(n, np.int64)
    pl = np.empty(n + 2)
    # DFS state for the hybrid part
    r_cap = min(hybrid, n)
    st_idx = np.empty(r_cap + 1, np.int64)
    st_sum = np.empty(r_cap + 1)
    st_prob = np.empty(r_cap + 1)
    for p in range(t):
        s = margin[p]
        pos = s > 0.0
        tthr = -s
        # --- active features (eps > 0); D_min / D_max over all n deltas
        na = 0
        for j in range(n):
            if eps[j] > 0.0:
                act[na] = j
                na += 1
        if na == 0 or n == 0:
            out[p] = 0.0
            cells_used[p] = 0
            continue
        dmin = deltas[p, 0]
        dmax = deltas[p, 0]
        for j in range(1, n):
            v = deltas[p, j]
            if v < dmin:
                dmin = v
            if v > dmax:
                dmax = v
        di = dmax - dmin
        w = 0.0
        mode = 0
        cval = dmin
        rmin = 0
        if di == 0.0 or k == 1:
            mode = 0
            cval = dmin if di == 0.0 else 0.5 * dmin + 0.5 * dmax
            for q in range(na):
                bkt[q] = 0
        else:
            w = di / (k - 1)
            if w == 0.0:  # D_I underflows when divided: one value is the best we can do
                mode = 0
                cval = 0.5 * dmin + 0.5 * dmax
                for q in range(na):
                    bkt[q] = 0
            elif shift and dmin <= tthr <= dmax:
                mode = 2
                rmin = 1 << 62
                for q in range(na):
                    d = deltas[p, act[q]]
                    r = math.ceil((d - tthr) / w)
                    if d > tthr and r < 1:
                        r = 1
                    if d <= tthr and r > 0:
                        r = 0
                    bkt[q] = r
                    if r < rmin:
                        rmin = r
                for q in range(na):
                    bkt[q] -= rmin
            else:
                mode = 1
                for q in range(na):
                    d = deltas[p, act[q]]
                    b = math.floor((d - dmin) / w + 0.5)
                    if b < 0:
                        b = 0
                    if b > k - 1:
                        b = k - 1
                    bkt[q] = b
        bmax = 0
        for q in range(na):
            if bkt[q] > bmax:
                bmax = bkt[q]
        # --- flip-count distribution (Poisson binomial) -> row cap L
        pl[0] = 1.0
        for l in range(1, na + 1):
            pl[l] = 0.0
        for q in range(na):
            e = eps[act[q]]
            for l in range(q + 1, 0, -1):
                pl[l] = pl[l] * (1.0 - e) + pl[l - 1] * e
            pl[0] *= 1.0 - e
        lcap = na
        acc = 0.0
        while lcap > 0 and acc + pl[lcap] <= tail:
            acc += pl[lcap]
            lcap -= 1
        change = 0.0
        # --- hybrid: subsets of size 1..hybrid with the exact D_j
        rr = min(hybrid, na)
        if rr > 0:
            p0 = 1.0
            for q in range(na):
                p0 *= 1.0 - eps[act[q]]
            top = 0
            st_idx[0] = -1
            st_sum[0] = s
            st_prob[0] = p0
            while top >= 0:
                st_idx[top] += 1
                q = st_idx[top]
                if q >= na:
                    top -= 1
                    continue
                j = act[q]
                x = st_sum[top] + deltas[p, j]
                pr = st_prob[top] * (eps[j] / (1.0 - eps[j]))
                same = (x > 0.0) == pos
                if not same:
                    change += pr
                if top + 1 < rr:
                    st_sum[top + 1] = x
                    st_prob[top + 1] = pr
                    st_idx[top + 1] = q
                    top += 1
        if lcap <= rr:
            out[p] = change
            cells_used[p] = 0
            continue
        # --- expand G(y, z) row by row (rows 0..lcap, row l spans m in [0, bmax l])
        width = bmax * lcap + 1
        cells = (lcap + 1) * width
        if cells > max_cells:
            cells_used[p] = -cells
            continue
        cells_used[p] = cells
        g = np.zeros((lcap + 1, width))
        lo = np.empty(lcap + 1, np.int64)
        hi = np.empty(lcap + 1, np.int64)
        for l in range(lcap + 1):
            lo[l] = width
            hi[l] = -1
        g[0, 0] = 1.0
        lo[0] = 0
        hi[0] = 0
        for q in range(na):
            e = eps[act[q]]
            keep = 1.0 - e
            b = bkt[q]
            for l in range(min(q + 1, lcap), 0, -1):
                row = g[l]
                prev = g[l - 1]
                for m in range(lo[l], hi[l] + 1):
                    row[m] *= keep
                if hi[l - 1] >= 0:
                    for m in range(lo[l - 1], hi[l - 1] + 1):
                        row[m + b] += e * prev[m]
                    if lo[l - 1] + b < lo[l]:
                        lo[l] = lo[l - 1] + b
                    if hi[l - 1] + b > hi[l]:
                        hi[l] = hi[l - 1] + b
            g[0, 0] *= keep
        # --- add the coefficients (l > hybrid) whose quantised sum changes the class
        for l in range(rr + 1, lcap + 1):
            row = g[l]
            for m in range(lo[l], hi[l] + 1):
                c = row[m]
                if c == 0.0:
                    continue
                if mode == 0:
                    x = s + l * cval
                elif mode == 1:
                    x = s + l * dmin + m * w
                else:
                    x = (1 - l) * s + ((m + l * rmin) - 0.5 * l) * w
                if (x > 0.0) != pos:
                    change += c
        out[p] = change


# --------------------------------------------------------------------------
# certified bounds: integer grid dynamic programme
# --------------------------------------------------------------------------

@njit(**NJIT)
def _move_window(buf, off, width, new_off):
    """Move ``buf[off:off+width]`` to ``new_off`` (overlap-safe)."""
    if new_off < off:
        for i in range(width):
            buf[new_off + i] = buf[off + i]
    elif new_off > off:
        for i in range(width - 1, -1, -1):
            buf[new_off + i] = buf[off + i]


@njit(**NJIT)
def _mass_at_least(v, e, tau, beta, trim, buf):
    """Certified lower bound on P(sum_{flipped j} v_j >= tau); v integer, nonzero.

    Feature j is flipped with probability e_j in (0, 1/2).  A dense DP over the
    integer partial sums, with three ways of retiring states early:

    * exact absorption: a state s with s + (sum of the remaining negative v)
      >= tau reaches tau whatever happens next (counted); one with s + (sum of
      the remaining positive v) < tau never will (dropped);
    * Bernstein: if P(the remaining flips move s across tau) <= beta / 2 the
      state is counted (above tau, charged beta * mass) or dropped (below);
    * trimming: the smallest masses at the two ends of the window are dropped
      (at most ``trim`` in all).

    Dropping only lowers the result, counting is charged, and the float error
    of the DP (sums and products of nonnegative numbers) is removed by a
    relative margin, so the return value never exceeds the true probability.
    Features are processed by decreasing |v| so the remaining reach shrinks
    fast.  Returns (bound, buf, max_window).
    """
    n = v.shape[0]
    order = np.argsort(-np.abs(v), kind="mergesort")
    pos_rem = np.zeros(n + 1, np.int64)
    neg_rem = np.zeros(n + 1, np.int64)
    mean_rem = np.zeros(n + 1)
    var_rem = np.zeros(n + 1)
    for i in range(n - 1, -1, -1):
        j = order[i]
        vj = v[j]
        pos_rem[i] = pos_rem[i + 1] + (vj if vj > 0 else 0)
        neg_rem[i] = neg_rem[i + 1] + (vj if vj < 0 else 0)
        mean_rem[i] = mean_rem[i + 1] + e[j] * vj
        var_rem[i] = var_rem[i + 1] + e[j] * (1.0 - e[j]) * float(vj) * float(vj)
    log_term = math.log(2.0 / beta)
    step_trim = trim / (2.0 * (n + 1))
    cap = buf.shape[0]
    off = cap // 2
    width = 1
    lo_s = 0                     # partial sum held at buf[off]
    buf[off] = 1.0
    same_exact = 0.0
    same_bern = 0.0
    max_width = 1
    for i in range(n + 1):
        # ---- retire states that the remaining features i..n-1 cannot (or
        # almost surely do not) carry across tau
        hi_exact = tau - neg_rem[i]          # s >= hi_exact: surely >= tau
        lo_exact = tau - pos_rem[i]          # s <  lo_exact: surely <  tau
        cut_hi = hi_exact
        cut_lo = lo_exact
        if i < n:
            mx = float(abs(v[order[i]]))
            a3 = log_term * mx / 3.0
            tstar = (a3 + math.sqrt(a3 * a3 + 2.0 * log_term * var_rem[i])) * (1.0 + 1e-9) + 2.0
            centre = float(tau) - mean_rem[i]
            hb = centre + tstar
            lb = centre - tstar
            if hb < float(cut_hi):
                cut_hi = np.int64(math.ceil(hb))
            if lb > float(cut_lo):
                cut_lo = np.int64(math.floor(lb)) + 1
        hi_s = lo_s + width                  # one past the last held sum
        # top: counted as reaching tau
        if cut_hi < hi_s:
            acc_e = 0.0
            acc_b = 0.0
            start = cut_hi if cut_hi > lo_s else lo_s
            for s_ in range(start, hi_s):
                mval = buf[off + s_ - lo_s]
                if s_ >= hi_exact:
                    acc_e += mval
                else:
                    acc_b += mval
            same_exact += acc_e
            same_bern += acc_b
            hi_s = start
        # bottom: dropped
        if cut_lo > lo_s:
            new_lo = cut_lo if cut_lo < hi_s else hi_s
            off += new_lo - lo_s
            lo_s = new_lo
        width = hi_s - lo_s
        if i == n or width <= 0:
            break
        # ---- trim negligible ends
        acc = 0.0
        while width > 0 and acc + buf[off] <= step_trim:
            acc += buf[off]
            off += 1
            lo_s += 1
            width -= 1
        acc = 0.0
        while width > 0 and acc + buf[off + width - 1] <= step_trim:
            acc += buf[off + width - 1]
            width -= 1
        if width <= 0:
            break
        # ---- convolve with the two-point law of feature order[i]
        j = order[i]
        vj = v[j]
        ej = e[j]
        keep = 1.0 - ej
        av = vj if vj > 0 else -vj
        need = width + av
        if need + 2 > cap:
            ncap = 2 * (need + 2)
            nbuf = np.empty(ncap)
            noff = (ncap - need) // 2 + (av if vj < 0 else 0)
            for r in range(width):
                nbuf[noff + r] = buf[off + r]
            buf = nbuf
            cap = ncap
            off = noff
        elif (vj > 0 and off + need > cap) or (vj < 0 and off - av < 0):
            noff = (cap - need) // 2 + (av if vj < 0 else 0)
            _move_window(buf, off, width, noff)
            off = noff
        if vj > 0:
            for r in range(width, need):
                buf[off + r] = 0.0
            for r in range(need - 1, av - 1, -1):
                buf[off + r] = keep * buf[off + r] + ej * buf[off + r - av]
            for r in range(av - 1, -1, -1):
                buf[off + r] = keep * buf[off + r]
        else:
            off -= av
            lo_s -= av
            for r in range(av):
                buf[off + r] = 0.0
            for r in range(width):
                buf[off + r] = keep * buf[off + r] + ej * buf[off + r + av]
            for r in range(width, need):
                buf[off + r] = keep * buf[off + r]
        width = need
        if width > max_width:
            max_width = width
    # float error of the DP: each step adds <= 4u relative to every mass, the
    # accumulators sum at most (width + steps) terms each
    delta = (6.0 * n + 2.0 * max_width + 64.0) * _U
    total = same_exact + same_bern
    res = total * (1.0 - delta) - same_bern * beta - 1e-300
    if res < 0.0:
        res = 0.0
    return res, buf, max_width


@njit(**NJIT)
def _scp_bounds(margin, deltas, eps, resolution, beta, trim, lower, upper, states):
    """Certified bounds lower <= SCP <= upper for every point.

    Grid: h is the largest power of two <= span / resolution, with span the
    smaller of sum |D_j| and the Bernstein width 2 t* of the flip sum (beyond
    which no mass worth counting lives).  Dividing by a power of two is exact,
    so q_j = D_j / h is exact and floor(q_j) <= q_j <= ceil(q_j) hold exactly.

    With E an upper bound on the float rounding of any evaluation order of
    S + sum_E D_j (E = 0 when every value is an exact grid multiple, so that
    every float sum is exact):
      P1 = P(sum floor(q) >= floor(x_up) + 1)   certifies  sum D >  -S + E
      P2 = P(sum ceil(q)  <= floor(x_dn))       certifies  sum D <= -S - E
    with x_up >= (-S + E) / h >= (-S - E) / h >= x_dn.  For S > 0 the SCP is
    in [P1, 1 - P2]; for S <= 0 in [P2, 1 - P1].  ``states[p]`` gets the
    largest DP window used for the point.
    """
    t, n = deltas.shape
    buf = np.empty(4 * resolution + 64)
    lo_v = np.empty(n, np.int64)
    hi_v = np.empty(n, np.int64)
    e_a = np.empty(n)
    for p in range(t):
        s = margin[p]
        na = 0
        tot = 0.0
        mx = 0.0
        var = 0.0
        for j in range(n):
            d = deltas[p, j]
            if eps[j] > 0.0 and d != 0.0:
                ad = abs(d)
                tot += ad
                if ad > mx:
                    mx = ad
                var += eps[j] * (1.0 - eps[j]) * d * d
                na += 1
        if na == 0:
            lower[p] = 1.0
            upper[p] = 1.0
            states[p] = 0
            continue
        log_term = math.log(2.0 / beta)
        a3 = log_term * mx / 3.0
        span = 2.0 * (a3 + math.sqrt(a3 * a3 + 2.0 * log_term * var))
        if tot < span:
            span = tot
        target = span / resolution
        h = 2.0 ** math.floor(math.log2(target))
        while h > target:
            h *= 0.5
        while 2.0 * h <= target:
            h *= 2.0
        if h < 2.0 ** -1000:
            h = 2.0 ** -1000
        # integer grid values
        na = 0
        exact = True
        reach = 0
        for j in range(n):
            d = deltas[p, j]
            if eps[j] > 0.0 and d != 0.0:
                q = d / h
                fq = math.floor(q)
                cq = math.ceil(q)
                if fq != cq:
                    exact = False
                lo_v[na] = np.int64(fq)
                hi_v[na] = np.int64(cq)
                e_a[na] = eps[j]
                reach += max(abs(lo_v[na]), abs(hi_v[na]))
                na += 1
        x = -s / h
        if not (np.floor(x) == x) or abs(x) + reach >= 2.0 ** 52:
            exact = False
        if exact:
            x_up = x
            x_dn = x
        else:
            err = (n + 4) * 2.0 * _U * (abs(s) + tot) * 1.01 / h
            x_up = np.nextafter(x + err, np.inf)
            x_dn = np.nextafter(x - err, -np.inf)
        lim = float(reach + 2)
        x_up = min(max(x_up, -lim), lim)
        x_dn = min(max(x_dn, -lim), lim)
        a1 = np.int64(math.floor(x_up)) + 1
        a2 = np.int64(math.floor(x_dn))
        p1, buf, w1 = _mass_at_least(lo_v[:na], e_a[:na], a1, beta, trim, buf)
        neg = -hi_v[:na]
        p2, buf, w2 = _mass_at_least(neg, e_a[:na], -a2, beta, trim, buf)
        states[p] = max(w1, w2)
        if s > 0.0:
            lo_b, up_c = p1, p2
        else:
            lo_b, up_c = p2, p1
        lower[p] = max(0.0, np.nextafter(lo_b, -np.inf)) if lo_b > 0.0 else 0.0
        upper[p] = min(1.0, np.nextafter(1.0 - up_c, np.inf))
