"""Numba kernels for ``edgecode.scp`` (njit only; the wrappers validate).

Three kernels, one job each, all batched over the t points of a call:

* ``_exact_chunk``        -- meet in the middle, fills the change probability.
* ``_scp_approx_change``  -- the seed's Algorithm 1 (buckets, G(y, z), shift,
  hybrid), fills the approximate change probability.
* ``_bounds_chunk``       -- certified integer-grid dynamic programme, fills the
  lower and upper SCP bounds.

The exact and the bounds kernels work on a range of points, allocate their
own buffers and release the GIL (``NJIT_NOGIL``): the wrappers cut the points
into a fixed number of chunks and run them on threads
(``edgecode._parallel.run_chunks``), or call the kernel once for small
problems.  The exact
kernel visits the points in the order of ``_exact_keys`` (equal halves side
by side) and reuses a half's sorted subset sums after an exact comparison of
its inputs.  A point's result depends on that point alone, so every output is
identical for any thread count, chunking and order.

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

from .._config import NJIT, NJIT_NOGIL
from .._kernels import _sorted_subset_sums  # shared with edgecode.redundancy

_U = 2.0 ** -53  # unit roundoff of float64


# --------------------------------------------------------------------------
# exact: meet in the middle
# --------------------------------------------------------------------------

# Index arithmetic in the exact kernels is unsigned (``np.uint64``): numba
# adds a wraparound check (``a[-1]`` is the last element) to every access
# with a signed index, which cost 30% of the meet in the middle's time.  Every
# constant mixed with these indices is a ``np.uint64`` too (uint64 with int64
# would be float64 in numba).

@njit(**NJIT)
def _last_level(sums, masses, m, d, e, out_sums, out_masses):
    """Last doubling level of a half, merged forward into separate buffers.

    Merges the sorted list ``sums[1:m+1]`` (as left by
    :func:`_sorted_subset_sums`) with the same list shifted by ``d`` (the
    half's last feature, flip probability ``e``) into ``out_sums[0:2m]``
    (ascending) and ``out_masses[0:2m]``.  ``sums[m+1]`` is overwritten by a
    +inf sentinel.  Returns 2m (uint64).
    """
    one = np.uint64(1)
    keep = 1.0 - e
    sums[m + one] = np.inf
    i = one
    k = one
    w = np.uint64(0)
    m2 = m + m
    while w < m2:
        u = sums[i]
        v = sums[k] + d          # inf + d == inf once k reaches the sentinel
        if u <= v:
            out_sums[w] = u
            out_masses[w] = masses[i] * keep
            i += one
        else:
            out_sums[w] = v
            out_masses[w] = masses[k] * e
            k += one
        w += one
    return m2


@njit(**NJIT)
def _mix(h, x):
    """One step of a 64-bit hash (uint64 in, uint64 out; wraps on overflow)."""
    h ^= x
    h *= np.uint64(0x9E3779B97F4A7C15)
    h ^= h >> np.uint64(31)
    h *= np.uint64(0xBF58476D1CE4E5B9)
    h ^= h >> np.uint64(29)
    return h


@njit(**NJIT)
def _exact_keys(margin, dbits, eps, keys):
    """Sort keys for the order in which ``_exact_chunk`` visits the points: a
    hash of their first half in the high 32 bits, of their second half in the
    low ones (``dbits`` is ``deltas`` viewed as uint64), so that sorting puts
    points with identical halves next to each other and they share their
    sorted subset sums.  Only the speed depends on the order: a half is
    reused only after an exact comparison of its inputs."""
    t, n = dbits.shape
    sign_bit = np.uint64(1) << np.uint64(63)
    for p in range(t):
        flip = np.uint64(0) if margin[p] > 0.0 else sign_bit
        na = 0
        for j in range(n):
            if eps[j] > 0.0 and dbits[p, j] << np.uint64(1) != np.uint64(0):   # D_j != 0
                na += 1
        h1 = na // 2
        ha = _mix(np.uint64(1), np.uint64(h1))
        hb = _mix(np.uint64(2), np.uint64(na - h1))
        c = 0
        for j in range(n):
            if eps[j] > 0.0 and dbits[p, j] << np.uint64(1) != np.uint64(0):
                b = dbits[p, j] ^ flip
                if c < h1:
                    ha = _mix(_mix(ha, np.uint64(j)), b)
                else:
                    hb = _mix(_mix(hb, np.uint64(j)), b)
                c += 1
        keys[p] = (ha & np.uint64(0xFFFFFFFF00000000)) | (hb >> np.uint64(32))


@njit(**NJIT)
def _same_half(idx, vals, lo, hi, saved_idx, saved_vals, saved_len):
    """Whether features idx[lo:hi] with values vals[idx] are the saved half."""
    if hi - lo != saved_len:
        return False
    for q in range(lo, hi):
        j = idx[q]
        if j != saved_idx[q - lo] or vals[j] != saved_vals[q - lo]:
            return False
    return True


@njit(**NJIT)
def _save_half(idx, vals, lo, hi, saved_idx, saved_vals):
    for q in range(lo, hi):
        saved_idx[q - lo] = idx[q]
        saved_vals[q - lo] = vals[idx[q]]
    return hi - lo


@njit(**NJIT_NOGIL)
def _exact_chunk(margin, deltas, eps, order, out, lo, hi):
    """Meet in the middle for the points order[lo:hi] (one chunk, its own
    buffers).

    Per point: the active features (``eps_j > 0``, ``D_j != 0``) are split in
    halves A (first ``na // 2``) and B, each listed as sorted subset sums with
    their masses (:func:`_sorted_subset_sums`; B's last level by
    :func:`_last_level`).  A half whose features and values (after the sign
    normalisation) equal those of the previous point's same half is not
    listed again, and a point equal to the previous one in both halves and in
    S copies its result: the lists and the sweep are deterministic functions
    of those inputs, so the result is the same, bit for bit.

    With ``x = S' + A`` (float), the float sum ``x + B`` has the sign of the
    exact one (it rounds to zero only when it is zero), so ``x + B <= 0`` iff
    ``B <= -x``: comparing B with ``-x`` decides exactly as ``(S' + A) + B``
    would.  The B that change the class form a prefix of the sorted B list
    that grows as A decreases, so one sweep from the largest A down, with the
    running mass of that prefix (accumulated in ascending order, no
    cancellation), adds ``mass(A) * P(prefix)``; two alternating accumulators
    keep the additions off one dependency chain.
    """
    n = deltas.shape[1]
    h_max = (n + 1) // 2
    cap = 1 << h_max
    sa = np.empty(cap + 1)               # A, behind a sentinel
    pa = np.empty(cap + 1)
    sb = np.empty(cap // 2 + 2)          # B without its last feature, two sentinels
    pb = np.empty(cap // 2 + 2)
    sb2 = np.empty(cap)                  # B
    pb2 = np.empty(cap)
    idx = np.empty(n, np.int64)
    vals = np.empty(n)
    no_masks = np.empty(1, np.int64)     # (_sorted_subset_sums without masks)
    a_idx = np.empty(n, np.int64)        # the halves now listed, and the point
    a_val = np.empty(n)
    b_idx = np.empty(n, np.int64)
    b_val = np.empty(n)
    a_len = np.int64(-1)                 # np.int64 (not literals) everywhere below:
    b_len = np.int64(-1)                 # one compiled version of each helper
    prev_s = -1.0                        # s >= 0 after normalisation: never matches
    prev_strict = False
    prev_out = 0.0
    masks_off = np.bool_(False)
    ma = np.uint64(0)
    mb = np.uint64(0)
    one = np.uint64(1)
    zero = np.uint64(0)
    for q in range(lo, hi):
        p = order[q]
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
        h1 = na // 2                          # B has na - h1 >= 1 features
        first = np.int64(0)
        same_a = _same_half(idx, vals, first, h1, a_idx, a_val, a_len)
        end = np.int64(na)
        same_b = _same_half(idx, vals, h1, end, b_idx, b_val, b_len)
        if same_a and same_b and s == prev_s and strict == prev_strict:
            out[p] = prev_out
            continue
        if not same_a:
            ma = _sorted_subset_sums(vals, eps, idx, first, h1, sa, pa, no_masks, masks_off)
            a_len = _save_half(idx, vals, first, h1, a_idx, a_val)
        if not same_b:
            mb = _sorted_subset_sums(vals, eps, idx, h1, na - 1, sb, pb, no_masks, masks_off)
            jl = idx[na - 1]
            mb = _last_level(sb, pb, mb, vals[jl], eps[jl], sb2, pb2)
            b_len = _save_half(idx, vals, h1, end, b_idx, b_val)
        a = ma
        ptr = zero
        cur = 0.0                             # mass of sb2[0:ptr]
        c0 = 0.0
        c1 = 0.0
        if strict:                            # change iff (S' + A) + B < 0
            while a != zero and not (sb2[0] < -(s + sa[a])):
                a -= one                      # no B changes the class
            while a != zero:
                nx = -(s + sa[a])
                while ptr < mb and sb2[ptr] < nx:
                    cur += pb2[ptr]
                    ptr += one
                if a & one:
                    c1 += pa[a] * cur
                else:
                    c0 += pa[a] * cur
                a -= one
        else:                                 # change iff (S' + A) + B <= 0
            while a != zero and not (sb2[0] <= -(s + sa[a])):
                a -= one
            while a != zero:
                nx = -(s + sa[a])
                while ptr < mb and sb2[ptr] <= nx:
                    cur += pb2[ptr]
                    ptr += one
                if a & one:
                    c1 += pa[a] * cur
                else:
                    c0 += pa[a] * cur
                a -= one
        prev_out = c0 + c1
        prev_s = s
        prev_strict = strict
        out[p] = prev_out


# --------------------------------------------------------------------------
# approximate: the seed's Algorithm 1
# --------------------------------------------------------------------------

@njit(**NJIT)
def _scp_approx_change(margin, deltas, eps, k, shift, hybrid, tail, max_cells, out,
                       cells_used, ist, fst, act, bkt, pl, st_idx, st_sum, st_prob, rlo, rhi, g,
                       budget):
    """Algorithm 1 of seed 000 (k buckets, G(y, z), Improvements 1 and 2),
    resumable: it runs until about ``budget`` elementary steps are done and
    returns, with everything needed to go on in its state arrays, so that the
    wrapper gets control back between calls (Ctrl-C) even within one point.

    ``out[p]`` receives the approximate change probability of point p and
    ``cells_used[p]`` the size of its (l, m) coefficient array.  A point whose
    array would exceed ``max_cells`` gets ``cells_used[p] = -needed`` and is
    left unfilled (the wrapper raises).

    State: ``ist`` (int64) = [point, phase, na, mode, rmin, bmax, lcap, rr,
    top, q, width, cells, need], ``fst`` (float64) = [w, cval, dmin, change];
    ``act``, ``bkt``, ``pl`` (flip-count law), the DFS stack ``st_*`` and the
    row extents ``rlo``, ``rhi`` carry the point in progress; ``g`` holds its
    coefficient array (flat, row length ``width``).  Start with ist = 0.
    Returns 0 when every point is done, 1 when the budget ran out (call again),
    2 when ``g`` is smaller than ``ist[12]`` cells (call again with a larger
    one).  The arithmetic and its order are those of one uninterrupted pass,
    so the result does not depend on the budget.

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
    work = 0
    p = ist[0]
    phase = ist[1]
    na = ist[2]
    mode = ist[3]
    rmin = ist[4]
    bmax = ist[5]
    lcap = ist[6]
    rr = ist[7]
    top = ist[8]
    q0 = ist[9]
    width = ist[10]
    cells = ist[11]
    w = fst[0]
    cval = fst[1]
    dmin = fst[2]
    change = fst[3]
    status = 0
    while p < t:
        s = margin[p]
        pos = s > 0.0
        tthr = -s
        if phase == 0:
            # --- active features (eps > 0); D_min / D_max over all n deltas
            na = 0
            for j in range(n):
                if eps[j] > 0.0:
                    act[na] = j
                    na += 1
            work += n
            if na == 0 or n == 0:
                out[p] = 0.0
                cells_used[p] = 0
                p += 1
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
            # --- flip-count distribution (Poisson binomial), feature by feature
            pl[0] = 1.0
            for l in range(1, na + 1):
                pl[l] = 0.0
            q0 = 0
            phase = 1
        if phase == 1:
            while q0 < na:
                if work >= budget:
                    status = 1
                    break
                e = eps[act[q0]]
                for l in range(q0 + 1, 0, -1):
                    pl[l] = pl[l] * (1.0 - e) + pl[l - 1] * e
                pl[0] *= 1.0 - e
                work += q0 + 1
                q0 += 1
            if status:
                break
            # --- row cap L
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
            phase = 2
        if phase == 2:
            if rr > 0:
                while top >= 0:
                    if work >= budget:
                        status = 1
                        break
                    work += 1
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
                if status:
                    break
            if lcap <= rr:
                out[p] = change
                cells_used[p] = 0
                p += 1
                phase = 0
                continue
            # --- the (l, m) array: rows 0..lcap, row l spans m in [0, bmax l]
            cells_f = (lcap + 1.0) * (float(bmax) * lcap + 1.0)
            if cells_f > max_cells:
                cells_used[p] = -np.int64(min(cells_f, 2.0 ** 62))
                p += 1
                phase = 0
                continue
            width = bmax * lcap + 1
            cells = (lcap + 1) * width
            if cells > g.shape[0]:
                ist[12] = cells
                status = 2
                break
            cells_used[p] = cells
            for c in range(cells):
                g[c] = 0.0
            work += cells
            for l in range(lcap + 1):
                rlo[l] = width
                rhi[l] = -1
            g[0] = 1.0
            rlo[0] = 0
            rhi[0] = 0
            q0 = 0
            phase = 3
        if phase == 3:
            # --- expand G(y, z) feature by feature
            while q0 < na:
                if work >= budget:
                    status = 1
                    break
                e = eps[act[q0]]
                keep = 1.0 - e
                b = bkt[q0]
                for l in range(min(q0 + 1, lcap), 0, -1):
                    row = l * width
                    prev = (l - 1) * width
                    for m in range(rlo[l], rhi[l] + 1):
                        g[row + m] *= keep
                    if rhi[l - 1] >= 0:
                        for m in range(rlo[l - 1], rhi[l - 1] + 1):
                            g[row + m + b] += e * g[prev + m]
                        if rlo[l - 1] + b < rlo[l]:
                            rlo[l] = rlo[l - 1] + b
                        if rhi[l - 1] + b > rhi[l]:
                            rhi[l] = rhi[l - 1] + b
                    work += rhi[l] - rlo[l] + 2
                g[0] *= keep
                work += 1
                q0 += 1
            if status:
                break
            # --- add the coefficients (l > hybrid) whose quantised sum changes the class
            for l in range(rr + 1, lcap + 1):
                row = l * width
                for m in range(rlo[l], rhi[l] + 1):
                    c = g[row + m]
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
            work += cells
            out[p] = change
            p += 1
            phase = 0
    ist[0] = p
    ist[1] = phase
    ist[2] = na
    ist[3] = mode
    ist[4] = rmin
    ist[5] = bmax
    ist[6] = lcap
    ist[7] = rr
    ist[8] = top
    ist[9] = q0
    ist[10] = width
    ist[11] = cells
    fst[0] = w
    fst[1] = cval
    fst[2] = dmin
    fst[3] = change
    return status


# --------------------------------------------------------------------------
# certified bounds: integer grid dynamic programme
# --------------------------------------------------------------------------

@njit(**NJIT)
def _convolve_up(buf, off, width, av, keep, ej):
    """In place: the masses ``buf[off:off+width]`` of partial sums s..s+width-1
    become those of s..s+width+av-1 after a feature that adds ``av > 0`` with
    probability ``ej`` (``keep = 1 - ej``).  Backward, so every read sees an
    old value; unsigned indices (no wraparound checks, so LLVM vectorises)."""
    one = np.uint64(1)
    need = width + av
    r = width
    while r < need:
        buf[off + r] = 0.0
        r += one
    r = need
    while r > av:
        r -= one
        buf[off + r] = keep * buf[off + r] + ej * buf[off + r - av]
    while r > np.uint64(0):
        r -= one
        buf[off + r] = keep * buf[off + r]


@njit(**NJIT)
def _convolve_down(buf, off, width, av, keep, ej):
    """As :func:`_convolve_up` for a feature that subtracts ``av``: the window,
    already moved down to start at ``off``, holds the old masses at
    ``buf[off+av:off+av+width]``; forward, so every read sees an old value."""
    one = np.uint64(1)
    r = np.uint64(0)
    while r < av:
        buf[off + r] = 0.0
        r += one
    r = np.uint64(0)
    while r < width:
        buf[off + r] = keep * buf[off + r] + ej * buf[off + r + av]
        r += one
    need = width + av
    while r < need:
        buf[off + r] = keep * buf[off + r]
        r += one


@njit(**NJIT)
def _order_abs_desc(v):
    """Indices of ``v`` by decreasing ``|v|``, ties by increasing index: what
    ``np.argsort(-np.abs(v), kind="mergesort")`` returns, by a bottom-up merge
    sort written out (numba's argsort costs seconds of first-use compile)."""
    n = v.shape[0]
    a = np.empty(n, np.int64)
    b = np.empty(n, np.int64)
    for i in range(n):
        a[i] = i
    width = 1
    while width < n:
        lo = 0
        while lo < n:                       # merge a[lo:mid] and a[mid:hi] into b
            mid = lo + width if lo + width < n else n
            hi = mid + width if mid + width < n else n
            i = lo
            j = mid
            for k in range(lo, hi):
                if j < hi and (i == mid or abs(v[a[j]]) > abs(v[a[i]])):  # ties: the left
                    b[k] = a[j]
                    j += 1
                else:
                    b[k] = a[i]
                    i += 1
            lo = hi
        a, b = b, a
        width *= 2
    return a


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
    order = _order_abs_desc(v)
    pos_rem = 0                  # sums of the positive and negative v of features i..n-1
    neg_rem = 0
    mean_rem = np.empty(n + 1)   # mean and variance of their flip sum (added from the back)
    var_rem = np.empty(n + 1)
    mean_rem[n] = 0.0
    var_rem[n] = 0.0
    for i in range(n - 1, -1, -1):
        j = order[i]
        vj = v[j]
        if vj > 0:
            pos_rem += vj
        else:
            neg_rem += vj
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
        hi_exact = tau - neg_rem             # s >= hi_exact: surely >= tau
        lo_exact = tau - pos_rem             # s <  lo_exact: surely <  tau
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
        av = vj if vj > 0 else -vj
        need = width + av
        if need + 2 > cap or (vj > 0 and off + need > cap) or (vj < 0 and off < av):
            nbuf = buf                       # recentre the window, in a larger buffer if needed
            if need + 2 > cap:
                cap = 2 * (need + 2)
                nbuf = np.empty(cap)
            noff = (cap - need) // 2 + (av if vj < 0 else 0)
            if noff <= off:                  # overlap-safe when nbuf is buf
                for r in range(width):
                    nbuf[noff + r] = buf[off + r]
            else:
                for r in range(width - 1, -1, -1):
                    nbuf[noff + r] = buf[off + r]
            buf = nbuf
            off = noff
        keep = 1.0 - ej
        if vj > 0:
            pos_rem -= vj
            _convolve_up(buf, np.uint64(off), np.uint64(width), np.uint64(av), keep, ej)
        else:
            neg_rem -= vj
            off -= av
            lo_s -= av
            _convolve_down(buf, np.uint64(off), np.uint64(width), np.uint64(av), keep, ej)
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


@njit(**NJIT_NOGIL)
def _bounds_chunk(margin, deltas, eps, resolution, beta, trim, gamma, rounding, lower, upper,
                  states, method, lo, hi):
    """Certified bounds lower <= SCP <= upper for the points lo..hi-1.

    Grid: h is the largest power of two <= span / resolution, with span the
    smaller of sum |D_j| and the Bernstein width 2 t* of the flip sum (beyond
    which no mass worth counting lives).  Dividing by a power of two is exact,
    so q_j = D_j / h is exact and floor(q_j) <= q_j <= ceil(q_j) hold exactly.

    With E an upper bound on the float rounding of any evaluation order of
    S + sum_E D_j (E = 0 when every value is an exact grid multiple, so that
    every float sum is exact), x_up >= (-S + E) / h >= (-S - E) / h >= x_dn,
    and Z = sum_E D_j, class 1 is certain when Z / h > x_up and class 0 when
    Z / h <= x_dn.  Two certified ways to bound these probabilities:

    * directed rounding (method 1):
        P1 = P(sum floor(q) >= floor(x_up) + 1)   certifies  Z / h >  x_up
        P2 = P(sum ceil(q)  <= floor(x_dn))       certifies  Z / h <= x_dn
      loose by about the number of flipped features with q_j not an integer;
    * nearest rounding (method 2): n_j = round(q_j), r_j = q_j - n_j in
      [-1/2, 1/2], N = sum n_j and R = sum r_j over the flipped features, so
      Z / h = N + R.  Bernstein (|r_j (F_j - e_j)| <= M = max |r_j| (1 - e_j),
      V = sum e_j (1 - e_j) r_j^2, L = ln(1 / gamma)) gives
      P(R <= mu - delta) <= gamma and P(R >= mu + delta) <= gamma with
      mu = sum e_j r_j and delta = M L / 3 + sqrt((M L / 3)^2 + 2 V L), so
        P1 = P(N >= ceil(x_up - mu + delta)) - gamma     (then N + R > x_up)
        P2 = P(N <= floor(x_dn - mu - delta)) - gamma    (then N + R <= x_dn)
      loose by about 2 delta + 1 grid steps, i.e. O(sqrt(n)) instead of O(n).

    ``rounding`` 0 picks, per point, nearest when 2 delta + 1 is below the
    expected number of flipped non-integer q_j, else directed; 1 and 2 force
    one.  mu, V and delta are inflated by bounds on their float error and
    delta by 2**-30 (so that it is > 0); a point whose q_j are all integers
    (R == 0) always uses directed rounding (then both are the same, uncharged).
    For S > 0 the SCP is in [P1, 1 - P2]; for S <= 0 in [P2, 1 - P1].
    ``states[p]`` gets the largest DP window used for the point and
    ``method[p]`` the rounding used (1 or 2; 0 when nothing can flip).
    """
    n = deltas.shape[1]
    buf = np.empty(4 * resolution + 64)
    f_v = np.empty(n, np.int64)          # nonzero floor(q_j) and their eps (class 1)
    f_e = np.empty(n)
    c_v = np.empty(n, np.int64)          # nonzero -ceil(q_j) (class 0)
    c_e = np.empty(n)
    r_v = np.empty(n, np.int64)          # nonzero round(q_j)
    r_e = np.empty(n)
    log_term = math.log(2.0 / beta)
    log_g = math.log(1.0 / gamma)
    for p in range(lo, hi):
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
            method[p] = 0
            continue
        a3 = log_term * mx / 3.0
        span = 2.0 * (a3 + math.sqrt(a3 * a3 + 2.0 * log_term * var))
        if tot < span:
            span = tot
        target = span / resolution
        if not target < math.inf:
            raise OverflowError("scp_bounds: the flip effects' range overflows float64")
        if not target >= 2.0 ** -1000:
            # the smallest step used (also when span / resolution underflows to 0 on
            # subnormal flip effects: the search below would never end at h = 0)
            h = 2.0 ** -1000
        else:
            h = math.ldexp(1.0, math.floor(math.log2(target)))  # exact power of two
            while h > target:
                h *= 0.5
            while 2.0 * h <= target:
                h *= 2.0
        # integer grid values, directed and nearest
        nf = 0
        nc = 0
        nr = 0
        exact = True
        reach = 0
        slack = 0.0          # expected number of flipped features with q_j not integer
        mu = 0.0
        var_r = 0.0
        m_r = 0.0
        abs_r = 0.0
        for j in range(n):
            d = deltas[p, j]
            ej = eps[j]
            if ej > 0.0 and d != 0.0:
                q = d / h
                fq = np.floor(q)
                cq = np.ceil(q)
                if q == 0.0:                 # d / h underflowed: keep 0 < |q| < 1
                    if d > 0.0:
                        cq = 1.0
                    else:
                        fq = -1.0
                if fq != cq:
                    exact = False
                    slack += ej
                ifq = np.int64(fq)
                icq = np.int64(cq)
                if ifq != 0:
                    f_v[nf] = ifq
                    f_e[nf] = ej
                    nf += 1
                if icq != 0:
                    c_v[nc] = -icq
                    c_e[nc] = ej
                    nc += 1
                reach += abs(icq) if abs(icq) > abs(ifq) else abs(ifq)
                rq = fq if q - fq <= 0.5 else cq     # q - fq is exact
                r = q - rq                           # exact, in [-1/2, 1/2]
                if rq != 0.0:
                    r_v[nr] = np.int64(rq)
                    r_e[nr] = ej
                    nr += 1
                ar = abs(r)
                mu += ej * r
                var_r += ej * (1.0 - ej) * r * r
                abs_r += ej * ar
                if ar * (1.0 - ej) > m_r:
                    m_r = ar * (1.0 - ej)
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
        x_up = -lim if -lim > x_up else (lim if lim < x_up else x_up)
        x_dn = -lim if -lim > x_dn else (lim if lim < x_dn else x_dn)
        # Bernstein radius of the residual sum, with its float error covered
        use_near = False
        delta = 0.0
        if m_r > 0.0 and rounding != 1:
            fl_rel = (na + 8) * 2.0 * _U
            m3 = m_r * (1.0 + fl_rel) * log_g / 3.0
            delta = m3 + math.sqrt(m3 * m3 + 2.0 * var_r * (1.0 + fl_rel) * log_g)
            delta = delta * (1.0 + 1e-9) + fl_rel * abs_r * 1.01 + 2.0 ** -30
            use_near = rounding == 2 or 2.0 * delta + 1.0 < slack
        if use_near:
            c1 = x_up - mu + delta
            c1 += 4.0 * _U * (abs(x_up) + abs(mu) + delta)
            c0 = x_dn - mu - delta
            c0 -= 4.0 * _U * (abs(x_dn) + abs(mu) + delta)
            a1 = np.int64(math.ceil(c1))             # N >= a1: class 1 unless R is low
            a2 = np.int64(math.floor(c0))            # N <= a2: class 0 unless R is high
            for i in range(nr):                      # round(q) for class 1, -round(q) for 0
                f_v[i] = r_v[i]
                c_v[i] = -r_v[i]
                f_e[i] = r_e[i]
                c_e[i] = r_e[i]
            nf = nr
            nc = nr
            method[p] = 2
        else:
            a1 = np.int64(math.floor(x_up)) + 1      # sum floor(q) >= a1: class 1
            a2 = np.int64(math.floor(x_dn))          # sum ceil(q) <= a2: class 0
            method[p] = 1
        p1, buf, w1 = _mass_at_least(f_v[:nf], f_e[:nf], a1, beta, trim, buf)
        p2, buf, w2 = _mass_at_least(c_v[:nc], c_e[:nc], -a2, beta, trim, buf)
        if use_near and gamma > 0.0:                 # charge gamma: R outside mu +- delta
            p1 = np.nextafter(p1 - gamma, -np.inf)
            p1 = p1 if p1 > 0.0 else 0.0
            p2 = np.nextafter(p2 - gamma, -np.inf)
            p2 = p2 if p2 > 0.0 else 0.0
        states[p] = w2 if w2 > w1 else w1
        if s > 0.0:
            lo_b, up_c = p1, p2
        else:
            lo_b, up_c = p2, p1
        lo_b = np.nextafter(lo_b, -np.inf) if lo_b > 0.0 else 0.0
        lower[p] = lo_b if lo_b > 0.0 else 0.0
        up_c = np.nextafter(1.0 - up_c, np.inf)
        upper[p] = up_c if up_c < 1.0 else 1.0
