"""Feature influences: how fast each feature's flip probability moves the SCP.

For a point with log-odds S and flip effects D_j, the change probability
``1 - SCP`` is multilinear in the flip probabilities, so its derivative in
eps_j,

    I_j = P(S + D_j + Z_{-j} changes the class) - P(S + Z_{-j} changes it),

(``Z_{-j}`` the flip sum of the other features) does not depend on eps_j, and
moving eps_j from e to e' changes ``1 - SCP`` by exactly ``(e' - e) I_j``.
The greedy planner (:func:`edgecode.redundancy.allocate_greedy`) ranks its
candidates by these influences; :func:`influences` returns them.

Two engines compute all n influences of a point in one pass:

* ``exact`` -- meet in the middle over subset sums that carry their subset's
  bit mask; O(2**(n/2) n) per point, exact (n <= ``PLAN_EXACT_MAX_FEATURES``).
* ``grid`` -- the flip sum's law on a grid of ``resolution`` cells per point
  (values rounded to whole cells), kept as its characteristic function and
  turned into a CDF by an inverse FFT; each feature removed on the fly by an
  alternating deconvolution series; O(n * resolution) per point to build,
  O(resolution log resolution) to update after one feature's eps changes, a
  few dozen CDF reads per influence.  An approximation without a certificate: plans are
  certified afterwards by :func:`edgecode.scp.scp_bounds`.
"""

from typing import NamedTuple

import numpy as np

from .._parallel import bounded_ranges, n_workers, run_batched
from .._config import (BATCH_WORK, PLAN_EXACT_LIMIT, PLAN_EXACT_MAX_FEATURES,
                       PLAN_GRID_RESOLUTION, PLAN_GRID_TAIL, PLAN_RESYNC_AMPLIFICATION,
                       PLAN_SERIES_RTOL, PLAN_SERIES_TOL)
from .._validation import check_allocation, check_eps, check_int, check_margin_deltas
from ._kernels import (_column_sums, _exact_influences, _grid_cdf, _grid_influences,
                       _grid_setup, _grid_spectrum, _grid_step)

__all__ = ["influences", "Influences", "INFLUENCE_METHODS"]

#: engines that compute influences (``auto`` picks exact up to
#: ``PLAN_EXACT_MAX_FEATURES`` features, grid above).
INFLUENCE_METHODS = ("auto", "exact", "grid")


#: the grid engine evaluates influences in blocks of features of at most this many
#: bytes of (points x features) values
_COLUMN_BLOCK_BYTES = 2 ** 26


class Influences(NamedTuple):
    """Per-point influences and change probabilities (see :func:`influences`)."""

    influence: np.ndarray
    change: np.ndarray
    method: str


class ExactEngine:
    """Exact influences by meet in the middle; a refresh recomputes all n at once."""

    name = "exact"
    refresh_all = True

    def __init__(self, margin, deltas, eps):
        self.margin, self.deltas = margin, deltas
        self.eps = np.array(eps, dtype=np.float64)
        self.t, self.n = deltas.shape
        check_allocation(f"t={self.t} planning points", 16 * self.t * self.n,
                         what=f"the exact engine's influences ({self.t:,} x {self.n} float64, "
                         "twice)", hint="plan on fewer points")
        self.change = np.zeros(self.t)
        self.n_active = self.t
        self._infl = None
        self._all()

    def _all(self):
        infl = np.empty((self.t, self.n))
        # batches of bounded work: Ctrl-C is answered between them
        item = 2 * (1 << ((self.n + 1) // 2)) * (self.n + 4)
        run_batched(_exact_influences, bounded_ranges(self.t, item, min_chunks=n_workers()),
                    self.margin, self.deltas, self.eps, infl, self.change)
        self._infl = infl
        self._own = infl.copy()

    def columns(self, feats):
        """Influences of ``feats`` at every point, shape (t, len(feats))."""
        if self._infl is None:
            self._all()
        return self._infl[:, feats]

    def evaluate(self, feats):
        """Sums over the points of the influences of ``feats``: (total, positive, negative)."""
        return _summaries(np.ascontiguousarray(self.columns(feats)))

    def step(self, j, e_new):
        """eps_j becomes ``e_new``: change moves by (e_new - e_j) times j's influence,
        which does not depend on e_j (its column from the last full pass is current)."""
        self.change += (e_new - self.eps[j]) * self._own[:, j]
        np.clip(self.change, 0.0, 1.0, out=self.change)
        self.eps[j] = e_new
        self._infl = None


def _summaries(values):
    """(sum, sum of positive parts, sum of negated negative parts) of each column."""
    nf = values.shape[1]
    total, pos, neg = np.empty(nf), np.empty(nf), np.empty(nf)
    _column_sums(values, total, pos, neg)
    return total, pos, neg


def _irfft_rows(phi, n_cells, out):
    """Inverse real FFT of every row of ``phi`` into ``out`` (numpy >= 2 writes in place)."""
    try:
        np.fft.irfft(phi, n=n_cells, axis=1, out=out)
    except TypeError:  # numpy < 2: no out=
        out[...] = np.fft.irfft(phi, n=n_cells, axis=1)


class GridEngine:
    """Influences from a per-point discretised flip-sum law, updated step by step.

    State per planned point: the characteristic function of its rounded flip
    sum (``resolution // 2 + 1`` complex values, updated exactly at every
    step) and its CDF on ``resolution`` cells, updated in place by
    deconvolution and convolution (O(cells), parallel over points) and
    rebuilt from the spectra by a batched inverse real FFT whenever the
    worst-case amplification of the in-place updates' rounding errors since
    the last rebuild would exceed ``PLAN_RESYNC_AMPLIFICATION``.  Points whose class can (almost) never change, or always changes,
    are left out: their influences are below ``PLAN_GRID_TAIL``.
    """

    name = "grid"
    refresh_all = False

    def __init__(self, margin, deltas, eps, resolution=PLAN_GRID_RESOLUTION,
                 tail=PLAN_GRID_TAIL):
        self.margin, self.deltas = margin, deltas
        self.eps = np.array(eps, dtype=np.float64)
        self.t, self.n = deltas.shape
        t = self.t
        self.n_cells = n_cells = int(resolution)
        if n_cells & (n_cells - 1) or n_cells < 16:
            raise ValueError(f"resolution must be a power of two >= 16; got {resolution}")
        self.h = np.empty(t)
        self.lo = np.empty(t, np.int64)
        self.xtau = np.empty(t)
        state = np.empty(t, np.int8)
        log_term = float(np.log(2.0 / tail))
        if t:
            _grid_setup(margin, deltas, self.eps, n_cells, log_term, self.h, self.lo,
                        self.xtau, state)
        self.rows = np.flatnonzero(state == 1).astype(np.int64)
        self.n_active = int(self.rows.size)
        # the state: a spectrum (N/2 + 1 complex) and a CDF (N float64) per planned point
        check_allocation(f"resolution={n_cells} with t={t} planning points",
                         self.n_active * (16 * (n_cells // 2 + 1) + 8 * n_cells),
                         what=f"the grid engine's state of {self.n_active:,} planned points "
                         f"({24 * n_cells:,} bytes each)",
                         hint="plan on fewer points (--max-points), or a smaller resolution")
        self.change = np.where(state == 2, 1.0, 0.0)
        self.roots = np.exp(-2j * np.pi * np.arange(n_cells) / n_cells)
        self.phi = np.empty((self.n_active, n_cells // 2 + 1), np.complex128)
        item = 4 * max(1, self.n) * (n_cells // 2 + 1)
        for a in range(0, self.n_active, 256):   # bounded temporaries: 256 points at a time
            rows = self.rows[a:a + 256]
            keys, levels = self._group_keys(rows)
            run_batched(_grid_spectrum, bounded_ranges(len(rows), item, min_chunks=n_workers()),
                        self.lo, rows, keys, levels, len(levels), self.roots, self.phi[a:a + 256])
        self._rebuild()

    def _group_keys(self, rows):
        """Sorted codes ``(q mod N) * L + level`` of the features that move each point's sum.

        ``q = floor(d' / h + 1/2)`` exactly as the kernels' ``_cell`` computes
        it (the same float operations); -1 marks features that cannot move it.
        """
        levels, level = np.unique(self.eps, return_inverse=True)
        sgn = np.where(self.margin[rows] > 0, 1.0, -1.0)
        d = sgn[:, None] * self.deltas[rows]
        q = np.floor(d / self.h[rows, None] + 0.5).astype(np.int64) % self.n_cells
        live = (d != 0) & (self.eps > 0)[None, :] & (q != 0)
        keys = np.where(live, q * len(levels) + level[None, :], np.int64(2) ** 62)
        keys.sort(axis=1)
        keys[keys == 2 ** 62] = -1
        return np.ascontiguousarray(keys), levels

    @property
    def cells(self):
        """Grid cells per planned point times the planned points."""
        return self.n_cells * self.n_active

    def _rebuild(self):
        """CDFs from the spectra: inverse real FFT (pocketfft), running sums."""
        if not hasattr(self, "cdf"):
            self.cdf = np.empty((self.n_active, self.n_cells))
            self.pmax = np.empty(self.n_active)
        self._amplification = 1.0
        self.resyncs = getattr(self, "resyncs", -1) + 1
        if not self.n_active:
            return
        # in blocks of rows of bounded work (each row's transform is its own)
        block = max(1, BATCH_WORK // (4 * self.n_cells * int(np.log2(self.n_cells))))
        for a in range(0, self.n_active, block):
            b = min(a + block, self.n_active)
            _irfft_rows(self.phi[a:b], self.n_cells, self.cdf[a:b])
            _grid_cdf(self.cdf[a:b], self.rows[a:b], self.xtau, self.change, self.pmax[a:b])

    def columns(self, feats):
        """Influences of ``feats`` at every point, shape (t, len(feats))."""
        vals = self._planned_columns(feats)
        out = np.zeros((self.t, vals.shape[1]))
        out[self.rows] = vals
        return out

    def _planned_columns(self, feats):
        feats = np.ascontiguousarray(feats, dtype=np.int64)
        out = np.empty((self.n_active, feats.shape[0]))
        if self.n_active:
            ranges = bounded_ranges(self.n_active, 40 * max(1, feats.shape[0]),
                                    min_chunks=n_workers())
            run_batched(_grid_influences, ranges, self.margin, self.deltas, self.eps, feats,
                        self.rows, self.h, self.xtau, self.cdf, self.pmax, PLAN_SERIES_TOL,
                        PLAN_SERIES_RTOL, out)
        return out

    def evaluate(self, feats):
        """Sums over the points of the influences of ``feats``: (total, positive, negative).

        In blocks of features whose (points x features) influences take at most
        ``_COLUMN_BLOCK_BYTES`` (each column's sum is its own: the same sums).
        """
        feats = np.asarray(feats, dtype=np.int64)
        block = max(1, _COLUMN_BLOCK_BYTES // (8 * max(1, self.n_active)))
        if feats.shape[0] <= block:
            return _summaries(self._planned_columns(feats))
        parts = [_summaries(self._planned_columns(feats[a:a + block]))
                 for a in range(0, feats.shape[0], block)]
        return tuple(np.concatenate([p[i] for p in parts]) for i in range(3))

    def step(self, j, e_new):
        e_old = float(self.eps[j])
        if self.n_active:
            # worst-case error amplification of an in-place update of the CDFs
            kappa = 1.0 if e_old == 0.0 else \
                e_new / e_old + (1.0 - e_new / e_old) / (1.0 - 2.0 * e_old)
            in_place = self._amplification * kappa <= PLAN_RESYNC_AMPLIFICATION
            ratio = ((1.0 - e_new) + e_new * self.roots) / ((1.0 - e_old) + e_old * self.roots)
            ranges = bounded_ranges(self.n_active, 3 * self.n_cells, min_chunks=n_workers())
            run_batched(_grid_step, ranges, self.margin, self.deltas, int(j), e_old,
                        float(e_new), self.rows, self.h, self.xtau, ratio, self.phi, self.cdf,
                        self.change, self.pmax, in_place)
            self.eps[j] = e_new
            if in_place:
                self._amplification *= kappa
            else:
                self._rebuild()
        self.eps[j] = e_new


def resolve_influence_method(method, n):
    """``auto`` -> exact up to PLAN_EXACT_MAX_FEATURES features, else grid."""
    if method == "auto":
        return "exact" if n <= PLAN_EXACT_MAX_FEATURES else "grid"
    if method not in INFLUENCE_METHODS:
        raise ValueError(f"method must be one of {list(INFLUENCE_METHODS)}; got {method!r}")
    if method == "exact" and n > PLAN_EXACT_LIMIT:
        raise ValueError(
            f"method='exact' needs 2**(n/2) work and memory per point; n = {n} features is "
            f"more than PLAN_EXACT_LIMIT = {PLAN_EXACT_LIMIT}. Use method='grid' (any n).")
    return method


def make_engine(method, margin, deltas, eps, resolution=PLAN_GRID_RESOLUTION):
    """The influence engine for a resolved method name."""
    if method == "exact":
        return ExactEngine(margin, deltas, eps)
    return GridEngine(margin, deltas, eps, resolution)


def influences(margin, deltas, eps, method="auto", resolution=PLAN_GRID_RESOLUTION):
    """Influence of every feature's flip probability on every point's change probability.

    Parameters
    ----------
    margin : array-like of shape (t,)
        Log-odds ``S(x)`` of each point; class 1 iff ``S > 0``.
    deltas : array-like of shape (t, n)
        Flip effects ``D_j(x)``.
    eps : float or array-like of shape (n,)
        Flip probabilities in [0, 0.5).
    method : {"auto", "exact", "grid"}, default="auto"
        ``exact`` (meet in the middle, n <= PLAN_EXACT_LIMIT = 30),
        ``grid`` (discretised, any n); ``auto`` is exact up to
        ``PLAN_EXACT_MAX_FEATURES`` (20) features, grid above.
    resolution : int, default=PLAN_GRID_RESOLUTION (2048)
        Grid cells per point across the range where the flip sum can carry
        probability (grid method only).

    Returns
    -------
    Influences
        ``influence`` of shape (t, n): ``d (1 - SCP) / d eps_j`` at each point
        (positive where more noise on feature j makes a class change more
        likely); ``change`` of shape (t,): ``1 - SCP`` at ``eps``; ``method``.

    Notes
    -----
    ``1 - SCP`` is multilinear in the eps, so for any e, e' in [0, 1/2),
    ``change(eps with eps_j = e') = change(eps) + (e' - eps_j) * influence[:, j]``
    exactly (grid: up to its discretisation).  An influence can be negative:
    flipping feature j can pull a point back across the threshold that other
    flips pushed it over, and then lowering eps_j *lowers* the SCP (the seed
    paper's observation that SCP is not monotone in eps).

    Examples
    --------
    >>> from edgecode.redundancy import influences
    >>> # S = 1; flipping feature 0 alone changes the class, flipping both does not
    >>> r = influences([1.0], [[-2.0, 2.0]], [0.1, 0.2], method="exact")
    >>> r.influence.round(6)        # change = eps0 (1 - eps1): d/d eps0 = 0.8, d/d eps1 = -0.1
    array([[ 0.8, -0.1]])
    >>> r.change
    array([0.08])
    """
    margin, deltas = check_margin_deltas(margin, deltas)
    t, n = deltas.shape
    eps = check_eps(eps, n)
    resolution = check_int(resolution, name="resolution", low=16, high=2 ** 24)
    name = resolve_influence_method(method, n)
    eng = make_engine(name, margin, deltas, eps, resolution)
    infl = np.array(eng.columns(np.arange(n))) if n else np.zeros((t, 0))
    if name == "exact":
        # the meet in the middle leaves out features that never flip; their
        # derivative is a secant (exact: the change probability is linear in eps_j)
        for j in np.flatnonzero((eps == 0.0) & (deltas != 0).any(axis=0)):
            moved = eps.copy()
            moved[j] = 0.25
            infl[:, j] = (ExactEngine(margin, deltas, moved).change - eng.change) / 0.25
    return Influences(np.ascontiguousarray(infl), eng.change.copy(), name)
