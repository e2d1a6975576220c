"""Same classification probability (SCP) of a linear log-odds classifier.

A point has log-odds ``S`` (``margin``) and flip effects ``D_j`` (``deltas``):
flipping the feature set E moves the log-odds to ``S + sum_{j in E} D_j``.
Feature j flips independently with probability ``eps_j`` in [0, 1/2).  The
class is ``S > 0`` (so ``S == 0`` is class 0), and

    SCP = sum over E with (S + sum_E D_j > 0) == (S > 0)
          of prod_{j in E} eps_j prod_{j not in E} (1 - eps_j).

Four ways to get it, all returning per-point arrays of shape (t,):

* :func:`scp_exact` -- exact, meet in the middle, n <= SCP_EXACT_MAX_FEATURES.
* :func:`scp_approx` -- the seed paper's Algorithm 1 (k buckets, Improvement 1
  shift, Improvement 2 hybrid).
* :func:`scp_bounds` -- certified ``lower <= SCP <= upper`` for any n.
* :func:`scp_monte_carlo` -- sampled estimate with a Wilson interval.

Every kernel accumulates the *change* probability ``1 - SCP`` (a sum of
small positive terms, accurate to a few ulps relative) and the wrappers return
``SCP = 1 - change``; pass ``return_change=True`` to :func:`scp_exact` or
:func:`scp_approx` to get the change probability itself at full relative
precision (useful below 1e-12 and for ratios of change probabilities).

References
----------
Seed 000, "Don't Fear the Bit Flips: Optimized Coding Strategies for Binary
Classification": SCP definition, Algorithm 1 and Improvements 1 and 2.
"""

from numbers import Real
from typing import NamedTuple

import numpy as np
from sklearn.utils import check_random_state

from .._config import (BATCH_WORK, SCP_APPROX_MAX_CELLS, SCP_APPROX_MAX_SUBSETS,
                       SCP_APPROX_TAIL, SCP_BOUNDS_BERNSTEIN, SCP_MC_CHUNK_WORK,
                       SCP_BOUNDS_GAMMA, SCP_BOUNDS_RESOLUTION, SCP_BOUNDS_TRIM,
                       SCP_EXACT_MAX_FEATURES, SCP_MC_CHUNK_CELLS, SCP_PARALLEL_CHUNKS,
                       SCP_PARALLEL_MAX_BYTES, SCP_PARALLEL_MIN_WORK)
from .._stats import wilson_interval
from .._validation import check_allocation, check_eps, check_int, check_margin_deltas
from .._parallel import bounded_ranges, run_batched
from ._kernels import _bounds_chunk, _exact_chunk, _exact_keys, _scp_approx_change

__all__ = ["scp_exact", "scp_approx", "scp_bounds", "scp_monte_carlo", "MonteCarloSCP"]


def _check_inputs(margin, deltas, eps):
    margin, deltas = check_margin_deltas(margin, deltas)
    eps = check_eps(eps, deltas.shape[1])
    return margin, deltas, np.ascontiguousarray(eps, dtype=np.float64)


def _check_bool(value, name):
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False; got {value!r}")
    return bool(value)


def _n_chunks(t, chunk_bytes, work):
    """Fewest point chunks for the threads (``bounded_ranges`` cuts more when a
    chunk would exceed ``BATCH_WORK``).

    Fixed by the problem alone (never by the thread count): each chunk gets
    about SCP_PARALLEL_MIN_WORK estimated steps or more (so 1 chunk, run on
    the calling thread, below twice that), at most
    SCP_PARALLEL_CHUNKS chunks, and few enough that all chunks' buffers fit in
    about SCP_PARALLEL_MAX_BYTES.
    """
    return int(max(1, min(t, SCP_PARALLEL_CHUNKS, work // SCP_PARALLEL_MIN_WORK,
                          SCP_PARALLEL_MAX_BYTES // max(1, int(chunk_bytes)))))


def _concurrent(chunk_bytes):
    """Chunks run at once: each allocates its own buffers, together at most about
    SCP_PARALLEL_MAX_BYTES (never fewer than one)."""
    return max(1, SCP_PARALLEL_MAX_BYTES // max(1, int(chunk_bytes)))


_ROUNDING = {"auto": 0, "directed": 1, "nearest": 2}


def scp_exact(margin, deltas, eps, *, return_change=False):
    """Exact same classification probability, by meet in the middle.

    Parameters
    ----------
    margin : array-like of shape (t,)
        Log-odds ``S(x)`` of each point; class 1 iff ``S > 0``.
    deltas : array-like of shape (t, n)
        ``D_j(x)``, the change of ``S`` when feature j flips.
    eps : float or array-like of shape (n,)
        Flip probability of each feature, in [0, 0.5).
    return_change : bool, default=False
        Return the change probability ``1 - SCP`` (computed directly, accurate
        relative to its own size) instead of the SCP.

    Returns
    -------
    scp : ndarray of shape (t,)
        SCP of each point (or ``1 - SCP`` if ``return_change``).

    Raises
    ------
    ValueError
        On NaN/inf, mismatched shapes, ``eps`` outside [0, 0.5), or more than
        ``SCP_EXACT_MAX_FEATURES`` features (the message gives the memory it
        would need and points to :func:`scp_bounds`).

    See Also
    --------
    scp_bounds : certified bounds for any number of features.
    scp_approx : the seed's bucket approximation.

    Notes
    -----
    Features with ``eps_j == 0`` (never flip) or ``D_j == 0`` (cannot move the
    sum) are dropped.  The remaining n' features are split in two halves; each
    half's ``2**(n'/2)`` subset sums are generated already sorted (doubling:
    the list for one more feature is the merge of the list and the list
    shifted by that feature's D_j), with their probabilities.  For the sorted
    sums A of one half, the sums B of the other half that change the class
    form a prefix of the sorted B list that grows as A decreases, so one sweep
    from the largest A down, carrying the probability of that prefix (added
    in ascending order: no cancellation), adds up the change mass:
    O(2**(n'/2) n') per point, memory ``5 * 2**ceil(n/2)`` floats per chunk
    of points.  Points are visited in an order that puts equal halves next to
    each other (a hash of each half); a half whose features and values (with
    the sign of S folded in) equal the previous point's is not listed again,
    and a point equal to the previous one copies its result.  Binary naive
    Bayes data repeats halves a lot (``D_j = +-c_j``): the 435 house-votes
    points have 72 distinct first halves and 114 distinct second halves.
    Reuse follows an exact comparison of the inputs, so it changes no bit of
    the output.

    Points are processed in parallel (threads running the GIL-free kernel;
    the thread count is numba's, see ``numba.set_num_threads``): they are cut
    into a fixed number of contiguous chunks, each with its own buffers: up
    to ``SCP_PARALLEL_CHUNKS``, each with at least ``SCP_PARALLEL_MIN_WORK``
    estimated steps (smaller calls run on the calling thread), and more when
    a chunk would exceed ``BATCH_WORK`` (~0.07 s): at most a thread count of
    chunks runs at a time (fewer when their buffers would exceed
    ``SCP_PARALLEL_MAX_BYTES``: one at n = 48), so Ctrl-C raises
    ``KeyboardInterrupt`` as soon as the running chunks end (a chunk is at
    least one point: ~1 s at n = 48).  A point's result depends on that point
    alone, so the output is identical, bit for bit, for any thread count and
    chunking.

    The class after flipping is decided as the definition says, on the float
    value ``(S + A) + B`` (``> 0`` is class 1; ``S == 0`` and a sum exactly 0
    are class 0); the sweep compares B with ``-(S + A)`` instead, which has
    the same outcome (a float sum has the sign of the exact sum of its two
    operands).  When S and the D_j are on a common binary grid (integers,
    dyadic fractions) every sum is exact, ties included, and the result equals
    brute-force enumeration bit for bit in the classification.

    Examples
    --------
    >>> from edgecode.scp import scp_exact
    >>> # S = 1; flipping feature 0 gives 1 - 2 = -1 (changes), feature 1 gives 1.5
    >>> scp_exact([1.0], [[-2.0, 0.5]], 0.1)
    array([0.9])
    >>> scp_exact([1.0], [[-2.0, -1.0]], 0.1, return_change=True)  # ties: 1 - 1 = 0 changes
    array([0.19])
    """
    margin, deltas, eps = _check_inputs(margin, deltas, eps)
    return_change = _check_bool(return_change, "return_change")
    n = deltas.shape[1]
    if n > SCP_EXACT_MAX_FEATURES:
        half = 2 ** ((n + 1) // 2)
        need = 4 * half * 8 + half * 8
        raise ValueError(
            f"scp_exact: deltas has n={n} features, more than SCP_EXACT_MAX_FEATURES="
            f"{SCP_EXACT_MAX_FEATURES}; meet in the middle would need about "
            f"{need / 2**30:.3g} GiB of buffers and 2**{(n + 1) // 2} work per point. "
            "Use scp_bounds (certified lower/upper bounds, any n) or scp_approx instead.")
    t = margin.shape[0]
    out = np.empty(t)
    if t:
        half = 2 ** ((n + 1) // 2)
        chunk_bytes = 8 * (5 * half + 4) + 48 * n
        item = half * (n + 4)
        ranges = bounded_ranges(t, item, min_chunks=_n_chunks(t, chunk_bytes, t * item))
        keys = np.empty(t, np.uint64)
        _exact_keys(margin, deltas.view(np.uint64), eps, keys)
        order = np.argsort(keys, kind="stable")        # equal halves side by side
        run_batched(_exact_chunk, ranges, margin, deltas, eps, order, out,
                    concurrent=_concurrent(chunk_bytes))
    np.clip(out, 0.0, 1.0, out=out)
    return out if return_change else 1.0 - out


def scp_approx(margin, deltas, eps, k=50, shift=True, hybrid=0, *, return_change=False):
    """Approximate SCP by the seed paper's Algorithm 1 (k buckets).

    Parameters
    ----------
    margin : array-like of shape (t,)
        Log-odds ``S(x)`` of each point.
    deltas : array-like of shape (t, n)
        Flip effects ``D_j(x)``.
    eps : float or array-like of shape (n,)
        Flip probabilities in [0, 0.5).
    k : int, default=50
        Number of buckets (``>= 1``); the paper uses 50.
    shift : bool, default=True
        Improvement 1: move the buckets (by at most half a width) so that the
        threshold ``T = -S`` is a bucket edge when it lies in
        ``[D_min, D_max]``; single flips are then never misjudged and the
        error is O(eps^2).
    hybrid : int, default=0
        Improvement 2: flip sets of size ``<= hybrid`` are evaluated with the
        exact ``D_j`` (O(n^hybrid) work), the buckets are used only for larger
        sets.  ``hybrid >= n`` is exact enumeration (2^n).
    return_change : bool, default=False
        Return the approximate change probability ``1 - SCP_app`` instead.

    Returns
    -------
    scp : ndarray of shape (t,)

    Raises
    ------
    ValueError
        On bad inputs, ``k < 1``, ``hybrid < 0``, when the coefficient
        array of one point would exceed ``SCP_APPROX_MAX_CELLS``, or when
        the exact enumeration of ``hybrid`` would visit more than
        ``SCP_APPROX_MAX_SUBSETS`` (2**44) flip sets in all (the message
        gives the largest ``hybrid`` that fits).
    KeyboardInterrupt
        On Ctrl-C: the kernel returns every ``BATCH_WORK`` steps, even
        inside one point, and resumes where it stopped.

    See Also
    --------
    scp_exact, scp_bounds

    Notes
    -----
    Per point, with ``D_min``, ``D_max`` over all n deltas and
    ``D_I = D_max - D_min``: the k buckets have width ``w = D_I / (k - 1)``
    and centres ``D_min + (i - 1) w``, i = 1..k, so ``D_min`` and ``D_max`` are
    represented by their own values; ``D_j`` is replaced by the nearest centre
    (ties half up).  ``G(y, z) = prod_j ((1 - eps_j) + eps_j y z^{b_j})``: a
    coefficient ``[y^l z^m]`` is the probability of the flip sets with l flips
    and bucket-index sum m, whose quantised sum is ``l D_min + m w``; the
    coefficients whose quantised sum changes the class are added.

    With ``shift=True`` and ``T = -S`` in ``[D_min, D_max]`` the bucket edges
    are ``T + i w`` (a move of at most ``w / 2``), intervals are closed on the
    right so that ``D_j == T`` (``S + D_j == 0``, class 0) falls below the
    edge as the definition requires, and the bucket of ``D_j`` has centre
    ``T + (ceil((D_j - T) / w) - 1/2) w``; this can use k + 1 buckets to cover
    ``[D_min, D_max]``.

    Degenerate cases: ``D_I == 0`` (all deltas equal, e.g. n = 1) makes the
    quantisation exact (every value is ``D_min``); ``k == 1`` uses a single
    bucket whose centre is the midpoint ``(D_min + D_max) / 2`` (no shift).
    Features with ``eps_j == 0`` never flip (factor 1 in G) but do count in
    ``D_min`` and ``D_max``, as in the paper.

    Memory: G is expanded feature by feature (two-term updates) into rows
    l = 0..L, row l spanning m in ``[0, (k or k + 1) l]``, with L the smallest
    flip count whose Poisson-binomial tail is below ``SCP_APPROX_TAIL``
    (2**-100, computed exactly first): the rows dropped hold less probability
    than that, so the result differs from the full expansion by at most
    ``SCP_APPROX_TAIL``.  This bounds the array at ``(L + 1)(k L + 1)`` cells
    instead of ``(n + 1)(k n + 1)``: for n = 1000, k = 50, eps = 0.01 that is
    L ~ 70 (2 MiB) instead of 400 MB; at eps = 0.2 L ~ 300 (36 MiB).  Time is
    O(n k L^2) per point.

    Examples
    --------
    >>> from edgecode.scp import scp_approx, scp_exact
    >>> m, d = [2.0], [[-3.0, -1.0, 2.0]]
    >>> # k = 3 buckets, centres -3, -0.5, 2: {all three} is misjudged as "same"
    >>> round(float(scp_approx(m, d, 0.1, k=3, shift=False)[0]), 12)
    0.91
    >>> round(float(scp_exact(m, d, 0.1)[0]), 12)
    0.909
    >>> # shifted: T = -2 is an edge, centres -3.25, -0.75, 1.75: all sets right
    >>> round(float(scp_approx(m, d, 0.1, k=3, shift=True)[0]), 12)
    0.909
    """
    margin, deltas, eps = _check_inputs(margin, deltas, eps)
    k = check_int(k, name="k", low=1)
    hybrid = check_int(hybrid, name="hybrid", low=0)
    shift = _check_bool(shift, "shift")
    return_change = _check_bool(return_change, "return_change")
    t, n = deltas.shape
    rr = min(hybrid, n)
    if t and rr:
        _check_hybrid_work(t, int(np.count_nonzero(eps > 0)), hybrid)
    out = np.zeros(t)
    cells = np.zeros(t, np.int64)
    if t:
        # resumable kernel: at most about BATCH_WORK steps per call (Ctrl-C between calls)
        ist = np.zeros(13, np.int64)
        fst = np.zeros(4)
        act, bkt = np.empty(n, np.int64), np.empty(n, np.int64)
        pl = np.empty(n + 2)
        st_idx, st_sum, st_prob = np.empty(rr + 1, np.int64), np.empty(rr + 1), np.empty(rr + 1)
        rlo, rhi = np.empty(n + 1, np.int64), np.empty(n + 1, np.int64)
        g = np.empty(0)
        while True:
            status = _scp_approx_change(margin, deltas, eps, k, shift, rr, SCP_APPROX_TAIL,
                                        SCP_APPROX_MAX_CELLS, out, cells, ist, fst, act, bkt,
                                        pl, st_idx, st_sum, st_prob, rlo, rhi, g, BATCH_WORK)
            if status == 0:
                break
            if status == 2:   # the point in progress needs a larger coefficient array
                g = np.empty(min(max(int(ist[12]), 2 * g.shape[0]), SCP_APPROX_MAX_CELLS))
    if (cells < 0).any():
        p = int(np.argmax(cells < 0))
        need = -int(cells[p])
        raise ValueError(
            f"scp_approx: point {p} needs a {need}-cell coefficient array "
            f"({need * 8 / 2**30:.3g} GiB), more than SCP_APPROX_MAX_CELLS="
            f"{SCP_APPROX_MAX_CELLS}; use fewer buckets k, or scp_bounds")
    np.clip(out, 0.0, 1.0, out=out)
    return out if return_change else 1.0 - out


def _subsets_up_to(m, r):
    """sum_{l=1}^{r} C(m, l), exact (Python ints)."""
    total, c = 0, 1
    for l in range(1, min(r, m) + 1):
        c = c * (m - l + 1) // l
        total += c
    return total


def _check_hybrid_work(t, n_active, hybrid):
    """Refuse an Improvement-2 enumeration above SCP_APPROX_MAX_SUBSETS flip sets."""
    per_point = _subsets_up_to(n_active, hybrid)
    if t * per_point <= SCP_APPROX_MAX_SUBSETS:
        return
    fits = 0
    while fits < min(hybrid, n_active) and t * _subsets_up_to(n_active, fits + 1) \
            <= SCP_APPROX_MAX_SUBSETS:
        fits += 1
    raise ValueError(
        f"scp_approx: hybrid={hybrid} enumerates every flip set of up to "
        f"{min(hybrid, n_active)} of the {n_active} features that can flip, "
        f"{float(per_point):.3g} sets per point and {float(t * per_point):.3g} for the "
        f"{t} points, more than SCP_APPROX_MAX_SUBSETS = 2**{SCP_APPROX_MAX_SUBSETS.bit_length() - 1}"
        f" (about half a day); use hybrid <= {fits} here, or scp_exact (n <= "
        f"{SCP_EXACT_MAX_FEATURES}) / scp_bounds for certified values")


def scp_bounds(margin, deltas, eps, resolution=SCP_BOUNDS_RESOLUTION, *, rounding="auto"):
    """Certified bounds ``lower <= SCP <= upper`` for any number of features.

    Parameters
    ----------
    margin : array-like of shape (t,)
        Log-odds ``S(x)`` of each point.
    deltas : array-like of shape (t, n)
        Flip effects ``D_j(x)``.
    eps : float or array-like of shape (n,)
        Flip probabilities in [0, 0.5).
    resolution : int, default=SCP_BOUNDS_RESOLUTION (2**15)
        Grid steps across the range of flip sums that can carry probability;
        larger is tighter and slower (cost O(n * resolution) per point,
        memory O(resolution)).
    rounding : {"auto", "directed", "nearest"}, default="auto"
        How the ``D_j`` are put on the integer grid (see Notes): "directed"
        (floor and ceil, exact on grid-aligned data, gap growing like the
        number of flips), "nearest" (round to nearest and bound the residual
        sum, gap growing like its square root), or "auto": per point,
        whichever is predicted tighter.  All three are certified.

    Returns
    -------
    lower, upper : ndarray of shape (t,)
        ``lower <= SCP <= upper`` always.

    Raises
    ------
    ValueError
        On bad inputs, ``resolution`` outside [1, 2**26], an unknown
        ``rounding``, or flip effects so large that their spread overflows
        float64.

    See Also
    --------
    scp_exact : exact, for n up to SCP_EXACT_MAX_FEATURES.

    Notes
    -----
    Our improvement over the seed's approximation, which has no error
    guarantee.  Per point, a grid step h (a power of two, so ``q_j = D_j / h``
    is exact) is the largest with ``span / h >= resolution``, span being the
    smaller of ``sum |D_j|`` and the Bernstein width of the flip sum.  With
    ``Z = sum_E D_j`` the flip sum and ``x = -S / h`` (moved outward by a
    bound on the floating-point error of ``S + sum D``; zero when every value
    is a grid multiple, and then ties are decided exactly), class 1 is certain
    when ``Z / h > x`` and class 0 when ``Z / h <= x``.

    *Directed rounding.*  Rounding every ``q_j`` down gives integer sums that
    never exceed ``Z / h``, rounding up sums that are never below, so

    * ``P(sum floor(q_j) > x)`` is a lower bound on ``P(class 1)``,
    * ``P(sum ceil(q_j) <= x)`` is a lower bound on ``P(class 0)``;

    the slack is the number of flipped features with ``q_j`` not an integer,
    about ``sum eps_j`` grid steps: it grows linearly with n.

    *Nearest rounding.*  With ``n_j`` the nearest integer to ``q_j`` and
    ``r_j = q_j - n_j`` in [-1/2, 1/2], ``Z / h = N + R`` (N, R the sums of
    ``n_j``, ``r_j`` over the flipped features).  Bernstein's inequality
    (``|r_j (F_j - eps_j)| <= M = max_j |r_j| (1 - eps_j) <= 1/2``,
    ``V = sum eps_j (1 - eps_j) r_j^2``, ``L = ln(1 / gamma)``) puts R within
    ``mu +- delta`` (``mu = sum eps_j r_j``,
    ``delta = M L / 3 + sqrt((M L / 3)^2 + 2 V L)``) except with probability
    ``gamma = SCP_BOUNDS_GAMMA`` (2**-40) on each side, so

    * ``P(N >= ceil(x - mu + delta)) - gamma`` is a lower bound on ``P(class 1)``,
    * ``P(N <= floor(x - mu - delta)) - gamma`` is a lower bound on ``P(class 0)``;

    the slack is about ``2 delta + 1`` grid steps, O(sqrt(n)).  "auto" uses
    nearest rounding when ``2 delta + 1 < sum_{q_j not integer} eps_j``.

    For ``S > 0`` the class-1 bound is a lower bound on the SCP and one minus
    the class-0 bound an upper bound, for ``S <= 0`` the other way round.
    Each is a 1-D dynamic programme over integer partial sums (feature by
    feature, largest ``|v_j|`` first), which retires states early: exactly,
    when the remaining features cannot carry them across the threshold; by
    Bernstein's inequality, when they do so with probability below 2**-71
    (charged in the bound); and by dropping negligible masses at the window
    ends (dropping only loosens a lower bound).  The DP's own rounding is
    removed by a relative margin, mu and delta are inflated by bounds on their
    float error, and the final ``1 - x`` is rounded outward, so the bounds
    hold for the real-arithmetic SCP and for any float evaluation of it.

    Points are processed in parallel (threads), cut into a fixed number of
    chunks as in :func:`scp_exact` (small calls run on the calling thread):
    the bounds are identical, bit for bit, for any thread count.

    Examples
    --------
    >>> from edgecode.scp import scp_bounds, scp_exact
    >>> m, d = [0.375, -1.25], [[-0.5, 0.25, -0.125], [2.0, 0.75, 0.5]]
    >>> lo, up = scp_bounds(m, d, 0.1)
    >>> ex = scp_exact(m, d, 0.1)
    >>> bool(((lo <= ex) & (ex <= up)).all())
    True
    >>> float((up - lo).max()) < 1e-10  # binary-grid data: exact up to the float margin
    True
    >>> lo, up = scp_bounds([0.3], [[-0.1, -0.2, 0.7]], [0.2, 0.3, 0.1])
    >>> bool(lo[0] <= scp_exact([0.3], [[-0.1, -0.2, 0.7]], [0.2, 0.3, 0.1])[0] <= up[0])
    True
    >>> lo, up = scp_bounds([0.3], [[-0.1, -0.2, 0.7]], 0.2, rounding="nearest")
    >>> bool(lo[0] <= scp_exact([0.3], [[-0.1, -0.2, 0.7]], 0.2)[0] <= up[0])
    True
    """
    margin, deltas, eps = _check_inputs(margin, deltas, eps)
    resolution = check_int(resolution, name="resolution", low=1, high=2 ** 26)
    if not isinstance(rounding, str) or rounding not in _ROUNDING:
        raise ValueError(f"rounding must be one of {sorted(_ROUNDING)}; got {rounding!r}")
    check_allocation(f"resolution={resolution}", 32 * resolution,
                     what="scp_bounds' dynamic programme (32 bytes per grid step and thread)",
                     hint="use a smaller resolution (the default is 2**15)")
    t, n = deltas.shape
    lower = np.empty(t)
    upper = np.empty(t)
    states = np.zeros(t, np.int64)
    method = np.zeros(t, np.int8)
    if t:
        chunk_bytes = 8 * (4 * resolution + 64) + 48 * n
        item = n * min(resolution, 2 ** min(n, 40))
        ranges = bounded_ranges(t, item, min_chunks=_n_chunks(t, chunk_bytes, t * item))
        args = (margin, deltas, eps, resolution, SCP_BOUNDS_BERNSTEIN, SCP_BOUNDS_TRIM,
                SCP_BOUNDS_GAMMA, _ROUNDING[rounding])
        try:
            run_batched(_bounds_chunk, ranges, *args, lower, upper, states, method,
                        concurrent=_concurrent(chunk_bytes))
        except OverflowError as exc:     # finite flip effects whose spread overflows float64
            raise ValueError(f"deltas: {exc} (rescale margin and deltas by one positive "
                             "factor: the SCP does not change)") from None
    return lower, upper


class MonteCarloSCP(NamedTuple):
    """Monte Carlo SCP estimate with a Wilson score interval (arrays of shape (t,))."""

    estimate: np.ndarray
    lower: np.ndarray
    upper: np.ndarray


def scp_monte_carlo(margin, deltas, eps, n_trials=10000, random_state=None, confidence=0.99, *,
                    progress=None):
    """Monte Carlo estimate of the SCP with a Wilson score interval.

    Parameters
    ----------
    margin : array-like of shape (t,)
        Log-odds ``S(x)`` of each point.
    deltas : array-like of shape (t, n)
        Flip effects ``D_j(x)``.
    eps : float or array-like of shape (n,)
        Flip probabilities in [0, 0.5).
    n_trials : int, default=10000
        Number of sampled flip patterns (shared by all points; each point's
        estimate uses all of them).
    random_state : None, int, numpy.random.RandomState or Generator
        Seed or generator; same seed, same result.
    confidence : float, default=0.99
        Coverage of the Wilson interval, in (0, 1).
    progress : callable, optional
        Called as ``progress(done, n_trials)`` after each chunk of trials.

    Returns
    -------
    MonteCarloSCP
        ``(estimate, lower, upper)``, each of shape (t,).

    Raises
    ------
    ValueError
        On bad inputs, ``n_trials < 1`` or ``confidence`` outside (0, 1).

    Notes
    -----
    Flip patterns are drawn in chunks of at most ``SCP_MC_CHUNK_CELLS`` cells
    (bounded memory) and ``SCP_MC_CHUNK_WORK`` multiply-adds (bounded time:
    a chunk takes a few hundredths of a second, so any ``n_trials``, 10**15
    included, runs in constant memory and stops on Ctrl-C, with
    ``KeyboardInterrupt``, between two chunks).  The draws are the same
    stream whatever the chunking; a pattern keeps the class of a point iff
    ``(S + F @ D > 0) == (S > 0)``.  With p the fraction kept out of N trials
    and ``z = Phi^{-1}((1 + confidence) / 2)``, the Wilson interval is
    ``(p + z^2/2N -+ z sqrt(p(1-p)/N + z^2/4N^2)) / (1 + z^2/N)``.

    Examples
    --------
    >>> from edgecode.scp import scp_monte_carlo
    >>> r = scp_monte_carlo([1.0], [[-2.0, 0.5]], 0.1, n_trials=2000, random_state=0)
    >>> bool(r.lower[0] <= 0.9 <= r.upper[0])
    True
    """
    margin, deltas, eps = _check_inputs(margin, deltas, eps)
    n_trials = check_int(n_trials, name="n_trials", low=1)
    if (isinstance(confidence, bool) or not isinstance(confidence, Real)
            or not 0.0 < float(confidence) < 1.0):
        raise ValueError(f"confidence must be a number in (0, 1); got {confidence!r}")
    rng = random_state if isinstance(random_state, np.random.Generator) \
        else check_random_state(random_state)
    t, n = deltas.shape
    kept = np.zeros(t, np.int64)
    pos = margin > 0
    chunk = max(1, min(SCP_MC_CHUNK_CELLS // max(n, t, 1), SCP_MC_CHUNK_WORK // max(n * t, 1)))
    dt = np.ascontiguousarray(deltas.T)
    done = 0
    while done < n_trials:
        c = min(chunk, n_trials - done)
        flips = (rng.random((c, n)) < eps).astype(np.float64)
        sums = margin + flips @ dt                      # (c, t)
        kept += ((sums > 0) == pos).sum(axis=0)
        done += c
        if progress is not None:
            progress(done, n_trials)
    lower, upper = wilson_interval(kept, n_trials, confidence)
    return MonteCarloSCP(kept / n_trials, lower, upper)
