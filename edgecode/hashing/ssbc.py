"""Streaming spectral binary codes (SSBC; seed 002, DESIGN.md notation).

A point q gets the code ``y_q = [w_q V_k > t]`` where ``w_q`` is its vector
of Gaussian affinities ``exp(-||q - a_j||^2 / sigma)`` to m anchors and V_k
holds the top-k right singular vectors of a Frequent Directions sketch of the
affinity rows of the stream (t = 0 in the paper; see ``center``).
"""

from numbers import Integral, Real

import numpy as np
from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from .._config import HASHING_BLOCK_ROWS, SSBC_SIGMA_NEIGHBOR
from .._parallel import run_chunks
from .._validation import check_int
from ._base import (OUTPUTS, BinaryHasher, _one_blas_thread, check_state_bytes, format_codes,
                    generator, itq_rotation)
from ._kernels import _affinity_from_gram
from .baselines import _reservoir_update
from .sketch import FrequentDirections, _RowSketch, _shrink

__all__ = ["SSBC", "gaussian_affinity", "auto_sigma"]


def gaussian_affinity(X, anchors, sigma, out=None):
    """``W[i, j] = exp(-||X_i - anchors_j||^2 / sigma)``, shape (n, m), float64.

    The squared distance is expanded as ``|x|^2 + |a|^2 - 2 x.a`` (one BLAS
    product per block of rows), clamped at 0, and exponentiated in place by a
    numba kernel over chunks of rows on numba's threads (elementwise: the same
    result for any thread count).

    >>> import numpy as np
    >>> gaussian_affinity([[0.0, 0.0]], [[0.0, 0.0], [1.0, 1.0]], 2.0).round(4).tolist()
    [[1.0, 0.3679]]
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    A = np.ascontiguousarray(anchors, dtype=np.float64)
    if not (np.isfinite(sigma) and sigma > 0):
        raise ValueError(f"sigma must be a positive finite number; got {sigma}")
    a_sq = np.einsum("ij,ij->i", A, A)
    x_sq = np.einsum("ij,ij->i", X, X)
    if out is None:
        out = np.empty((X.shape[0], A.shape[0]))
    for s in range(0, X.shape[0], HASHING_BLOCK_ROWS):
        blk = out[s:s + HASHING_BLOCK_ROWS]
        np.matmul(X[s:s + HASHING_BLOCK_ROWS], A.T, out=blk)
        run_chunks(_affinity_from_gram, blk.shape[0], blk, x_sq[s:s + HASHING_BLOCK_ROWS], a_sq,
                   1.0 / sigma)
    return out


def auto_sigma(anchors, neighbor=SSBC_SIGMA_NEIGHBOR):
    """Mean over anchors of the squared distance to their ``neighbor``-th nearest
    other anchor (clipped to the available count); 1.0 if that is 0."""
    neighbor = check_int(neighbor, name="neighbor", low=1)
    A = np.asarray(anchors, dtype=np.float64)
    m = A.shape[0]
    if m < 2:
        return 1.0
    sq = np.einsum("ij,ij->i", A, A)
    D = np.maximum(sq[:, None] + sq[None, :] - 2 * A @ A.T, 0.0)
    np.fill_diagonal(D, np.inf)
    kth = min(neighbor, m - 1) - 1
    val = float(np.partition(D, kth, axis=1)[:, kth].mean())
    return val if val > 0 else 1.0


def _align_signs(V, ref):
    """Flip columns of V whose inner product with the same column of ref is negative."""
    if ref is None:
        # deterministic convention: largest-magnitude entry of each column positive
        idx = np.abs(V).argmax(axis=0)
        s = np.sign(V[idx, np.arange(V.shape[1])])
    else:
        s = np.sign(np.einsum("ij,ij->j", V, ref))
    s[s == 0] = 1.0
    return V * s


def _procrustes(M):
    """The orthogonal Q nearest to M (``U Wt`` of ``M = U S Wt``).

    LAPACK's divide-and-conquer SVD (numpy's) can fail to converge on nearly
    orthogonal M, which consecutive bases of a slowly moving subspace give;
    then the QR-iteration driver (gesvd) is used.
    """
    try:
        U, _, Wt = np.linalg.svd(M)
    except np.linalg.LinAlgError:
        import scipy.linalg
        U, _, Wt = scipy.linalg.svd(M, lapack_driver="gesvd")
    return U @ Wt


class SSBC(BinaryHasher):
    """Streaming spectral binary codes.

    Parameters
    ----------
    n_bits : int, default=32
        Code length k (at most ``sketch_size - 1`` and ``n_anchors``).
    n_anchors : int, default=256
        m, the number of anchor points.
    sketch_size : int, default=64
        ell, the rows of the Frequent Directions sketch of the affinity rows.
    sigma : "auto" or float, default="auto"
        Affinity scale in ``exp(-||p - q||^2 / sigma)`` (squared-distance units).
        ``"auto"``: ``sigma_scale`` times the mean squared distance of an
        anchor to its 10th nearest other anchor (``auto_sigma``).
    sigma_scale : float, default=1.0
        Multiplier of the automatic sigma (ignored for a numeric sigma).
    mode : {"streaming", "online"}, default="streaming"
        "streaming": codes come from the final V_k (``transform`` after the
        stream).  "online": ``partial_fit_transform`` (and ``fit_transform``)
        code each arriving point with the V_k current at its arrival; V_k is
        refreshed at every sketch compaction and rotated within its span onto
        the previous V_k (orthogonal Procrustes), so a bit keeps its meaning
        as V_k moves.
    landmarks : {"reservoir", "uniform"}, default="reservoir"
        How the m anchors (the paper's S_train) are chosen.
        "reservoir" (ours, a single pass): a uniform sample of the first
        ``n_warmup`` points of the stream, drawn by reservoir sampling; the
        stream needs no data up front.
        "uniform" (the paper: "S_train is a small training set sampled
        uniformly at random"): a uniform sample without replacement of the
        *first batch* -- with :meth:`fit`, of the whole training set X; with
        :meth:`partial_fit`, of the first call's rows, which must number at
        least ``n_anchors`` (later batches cannot change the anchors: a stream
        cannot sample what it has not seen).  As in the paper's Algorithm 1,
        the anchors' own affinity rows enter the sketch first, then the other
        rows of the batch in their order, then the later batches.
    update : {"compaction", "every_point"}, default="compaction"
        How the sketch is kept and how often V_k is recomputed.
        "compaction" (ours): a Frequent Directions buffer of ``2 sketch_size``
        rows, one SVD per about ``sketch_size`` points; in online mode V_k is
        refreshed at each compaction and Procrustes-aligned to the previous
        V_k.  "every_point" (the paper, Algorithm 1): a sketch of
        ``sketch_size`` rows with one SVD per arriving point; in online mode
        each point is coded with the V_k of the SVD that includes it (the
        "current iteration's V"), the singular vectors themselves with their
        signs kept consistent (each column's sign chosen to agree with the
        previous V_k).  O(ell^2 m) per point instead of O(ell m).
    alignment : {"auto", "procrustes", "sign"}, default="auto"
        Online mode: how a new V_k is matched to the previous one so that bits
        keep their meaning.  "procrustes" rotates the new top-k subspace onto
        the old V_k; "sign" keeps the singular vectors and flips each column's
        sign to agree with the old one (all the paper's "current V" allows);
        "auto": "procrustes" with ``update="compaction"``, "sign" with
        ``update="every_point"``.
    store_affinities : bool, default=False
        The paper's streaming setting (``stream_codes``): keep the affinity
        row of every point fed (O(n m) memory, as the paper states) so that
        :meth:`stream_codes` can code all of them with the final V_k at the
        end of the stream without reading the data again.
    n_warmup : int or None, default=None
        ``landmarks="reservoir"`` only: the anchors are a uniform sample of
        the first ``n_warmup`` points of the stream (default
        ``2 * n_anchors``).  These points are buffered until the anchors are
        fixed, then their affinity rows enter the sketch.  If fewer points
        were seen, the anchors are a uniform sample of all of them
        (provisional until the warm-up ends).
    center : bool, default=False
        Threshold bit b at the stream's mean projection ``mean(w) V_k`` (the
        running mean of the affinity rows) instead of 0.  The paper's codes
        are ``center=False``; sign-thresholded affinity projections are
        unbalanced (the top singular vector of positive rows has one sign).
        On a device the uncentred codes are fragile: many projections lie
        near 0, so fixed-point rounding flips bits (on UCI glass, 16 bits:
        96.1% of the device's bits equal the float model's with
        ``center=False``, 99.9% with ``center=True``), and
        ``export.ssbc.export_ssbc`` warns below 99%. ``edgecode hash``
        defaults to the centred codes (``--method ssbc-center``).
    rotation : None or "itq", default=None
        Our extension: centre the k-dim embedding, scale each dimension to
        unit variance, then rotate it with ITQ, both learned on the
        embeddings of a uniform reservoir sample of ``n_anchors`` stream points (kept only when rotation is asked;
        O(m d) memory; streaming mode only).
    n_iter : int, default=50
        ITQ iterations.
    output : {"bits", "uint8", "uint64"}, default="bits"
        What :meth:`transform` returns.
    random_state : None, int or Generator

    Attributes
    ----------
    anchors_ : ndarray (m, n_features)
    sigma_ : float
    sketch_ : ndarray (sketch_size, m)
        The FD sketch B of the affinity rows.
    components_ : ndarray (n_bits, m)
        V_k^T: in streaming mode the top-k right singular vectors of the
        sketch (signs fixed); in online mode an orthonormal basis of the same
        subspace, Procrustes-aligned to the previous V_k.
    projection_ : ndarray (m, n_bits)
        What codes use: V_k, or V_k diag(1/s) R with the ITQ rotation R
        (s: per-dimension standard deviations of the embedding).
    thresholds_ : ndarray (n_bits,)
    affinity_mean_ : ndarray (m,)
        Running mean of the affinity rows (for ``center``).
    n_samples_seen_ : int
    warmup_done_ : bool

    Notes
    -----
    Seed 002 (the SSBC section, Algorithm 1 and the paragraphs after it):
    S_train is "sampled uniformly at random" (``landmarks="uniform"``); the
    sketch is Frequent Directions with one SVD per row (``update=
    "every_point"``); in the online setting each point is coded "using
    current iteration's matrix V" (``mode="online", update="every_point"``);
    in the streaming setting SSBC "needs to store all w vectors and uses
    final matrix V" (``store_affinities=True`` and :meth:`stream_codes`).
    The defaults are our single-pass, faster choices; the differences are
    measured in ``benchmarks/results_seed002.md``.

    Memory is O(ell m + m d) whatever the stream length: anchors (m d),
    sketch buffer (2 ell m), projection (m k), affinity mean (m), plus the
    warm-up buffer (n_warmup d, released when the warm-up ends) and per-batch
    temporaries (batch x m); see :meth:`state_nbytes`.  Update time per point
    is O(m d) for the affinities plus O(ell m) amortised for the sketch.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(300, 4))
    >>> h = SSBC(n_bits=8, n_anchors=32, sketch_size=16, random_state=0).fit(X)
    >>> h.transform(X[:2]).shape, h.encode(X[:2], "uint8").shape
    ((2, 8), (2, 1))
    """

    _parameter_constraints = {
        "n_bits": [Interval(Integral, 1, None, closed="left")],
        "n_anchors": [Interval(Integral, 2, None, closed="left")],
        "sketch_size": [Interval(Integral, 2, None, closed="left")],
        "sigma": [StrOptions({"auto"}), Interval(Real, 0, None, closed="neither")],
        "sigma_scale": [Interval(Real, 0, None, closed="neither")],
        "mode": [StrOptions({"streaming", "online"})],
        "landmarks": [StrOptions({"reservoir", "uniform"})],
        "update": [StrOptions({"compaction", "every_point"})],
        "alignment": [StrOptions({"auto", "procrustes", "sign"})],
        "store_affinities": ["boolean"],
        "n_warmup": [None, Interval(Integral, 1, None, closed="left")],
        "center": ["boolean"],
        "rotation": [None, StrOptions({"itq"})],
        "n_iter": [Interval(Integral, 0, None, closed="left")],
        "output": [StrOptions({"bits", "uint8", "uint64"})],
        "random_state": ["random_state"],
    }

    def __init__(self, n_bits=32, n_anchors=256, sketch_size=64, *, sigma="auto",
                 sigma_scale=1.0, mode="streaming", landmarks="reservoir",
                 update="compaction", alignment="auto", store_affinities=False,
                 n_warmup=None, center=False,
                 rotation=None, n_iter=50, output="bits", random_state=None):
        self.n_bits = n_bits
        self.n_anchors = n_anchors
        self.sketch_size = sketch_size
        self.sigma = sigma
        self.sigma_scale = sigma_scale
        self.mode = mode
        self.landmarks = landmarks
        self.update = update
        self.alignment = alignment
        self.store_affinities = store_affinities
        self.n_warmup = n_warmup
        self.center = center
        self.rotation = rotation
        self.n_iter = n_iter
        self.output = output
        self.random_state = random_state

    # ------------------------------------------------------------------ state
    def _check_params(self):
        if self.n_bits >= self.sketch_size:
            raise ValueError(f"n_bits={self.n_bits} must be < sketch_size={self.sketch_size} "
                             "(a sketch of ell rows keeps ell - 1 directions between "
                             "compactions)")
        if self.n_bits > self.n_anchors:
            raise ValueError(f"n_bits={self.n_bits} must be <= n_anchors={self.n_anchors}")
        if self.rotation is not None and self.mode == "online":
            raise ValueError("rotation='itq' is available in mode='streaming' only (an online "
                             "rotation would change the meaning of bits already emitted)")
        if self.landmarks == "uniform":
            if self.n_warmup is not None:
                raise ValueError(f"n_warmup={self.n_warmup} applies to landmarks='reservoir' "
                                 "only; landmarks='uniform' samples the anchors from the first "
                                 "batch")
            return self.n_anchors
        n_warm = 2 * self.n_anchors if self.n_warmup is None else self.n_warmup
        if n_warm < self.n_anchors:
            raise ValueError(f"n_warmup={self.n_warmup} must be >= n_anchors={self.n_anchors}")
        return n_warm

    def _start(self, d):
        self._n_warm = self._check_params()
        self._check_memory(d, self._n_warm)
        self._rng = generator(self.random_state)
        self._warm = np.empty((0, d))
        self._res = np.empty(0, dtype=np.int64)      # reservoir: indices into _warm
        self._fd = None
        self._V = None                               # current V_k (m, k), sign-aligned
        self._wsum = None
        self._sample = np.empty((0, d))               # uniform sample of the stream (ITQ)
        self._sample_rng = generator(int(self._rng.integers(2**31)))
        self._stored, self._stored_pos = [], []        # store_affinities: rows, positions
        self.n_samples_seen_ = 0
        self.warmup_done_ = False

    def _check_memory(self, d, n_warm):
        """Refuse parameters whose state would exceed MAX_STATE_BYTES (before allocating)."""
        m, ell, k = int(self.n_anchors), int(self.sketch_size), int(self.n_bits)
        floats = (2 * m * d                              # anchors (+ ITQ sample)
                  + 2 * n_warm * d                       # warm-up buffer (and its copy)
                  + 2 * ell * m                          # sketch buffer (2 ell x m)
                  + 8 * ell * ell                        # Gram matrix and eigenvectors
                  + max(HASHING_BLOCK_ROWS, n_warm) * m  # affinity rows of a block
                  + 2 * m * k)                           # V_k and projection
        check_state_bytes(
            "SSBC", f"sketch_size={ell}, n_anchors={m}, n_warmup={n_warm} on {d} features "
            f"(a {2 * ell} x {m} sketch buffer, {m} x {d} anchors, {n_warm} x {d} warm-up "
            "buffer)", 8 * floats)

    def _forget(self):
        for a in ("_warm", "_fd", "_V", "_rng", "_res", "_wsum", "_sample", "_sample_rng",
                  "_stored", "_stored_pos"):
            if hasattr(self, a):
                delattr(self, a)

    def state_nbytes(self):
        """Bytes of the streaming state (anchors, sketch buffer, V_k, means,
        warm-up buffer); independent of the stream length once warmed up,
        unless ``store_affinities`` (then n m floats more)."""
        check_is_fitted(self)
        total = self.anchors_.nbytes + self._V.nbytes + self.projection_.nbytes
        total += sum(w.nbytes for w in self._stored) + sum(p.nbytes for p in self._stored_pos)
        total += self._warm.nbytes + self._res.nbytes + self._sample.nbytes
        if self._fd is not None:
            total += self._fd._buf.nbytes + self._wsum.nbytes
        return int(total)

    def _sigma_for(self, anchors):
        if self.sigma == "auto":
            return float(self.sigma_scale) * auto_sigma(anchors)
        return float(self.sigma)

    def _reservoir(self, X):
        """Add rows to the warm-up buffer and the anchor reservoir (Algorithm R)."""
        m = self.n_anchors
        base = self._warm.shape[0]
        self._warm = np.vstack([self._warm, X])
        n = X.shape[0]
        fill = min(max(m - self._res.shape[0], 0), n)
        if fill:
            self._res = np.concatenate([self._res, base + np.arange(fill)])
        if fill < n:
            pos = base + np.arange(fill, n)
            j = np.floor(self._rng.random(n - fill) * (pos + 1)).astype(np.int64)
            for p, jj in zip(pos, j):
                if jj < m:
                    self._res[jj] = p

    def _refresh(self, Vt):
        """Replace the current V_k by :meth:`_aligned` ``(Vt)``."""
        self._V = self._aligned(Vt)

    def _aligned(self, Vt):
        """New V_k from right singular vectors Vt (rows), aligned to the old one.

        Online mode rotates the new top-k subspace onto the old V_k as closely
        as possible (orthogonal Procrustes: ``V_new Q`` with Q orthogonal
        minimising ``||V_new Q - V_old||_F``), so each bit keeps its meaning
        while the subspace tracks the stream; the codes then use this basis of
        the top-k subspace rather than the singular vectors themselves.
        Streaming mode, and online mode with sign ``alignment`` (default
        with the paper's ``update="every_point"``), keep the singular-value
        order and fix signs only
        (each column agrees in sign with the previous V_k; the first V_k:
        largest-magnitude entry of each column positive).
        """
        k = self.n_bits
        V = np.ascontiguousarray(Vt[:k].T)
        if V.shape[1] < k:                         # rank-deficient: pad with zeros
            V = np.hstack([V, np.zeros((V.shape[0], k - V.shape[1]))])
        procrustes = (self.alignment == "procrustes"
                      or (self.alignment == "auto" and self.update == "compaction"))
        if self.mode == "online" and self._V is not None and procrustes:
            return np.ascontiguousarray(V @ _procrustes(V.T @ self._V))
        return _align_signs(V, self._V)

    def _thresholds(self, V):
        if self.center or self.rotation is not None:
            return (self._wsum / max(self.n_samples_seen_, 1)) @ V
        return np.zeros(V.shape[1])

    def _new_sketch(self, m):
        fd = (FrequentDirections(self.sketch_size) if self.update == "compaction"
              else _RowSketch(self.sketch_size))
        fd._reset(m)
        return fd

    def _store(self, W, positions):
        """store_affinities: keep affinity rows W of the stream positions given."""
        if not self.store_affinities:
            return
        n = sum(w.shape[0] for w in self._stored) + W.shape[0]
        check_state_bytes("SSBC", f"store_affinities=True: the affinity rows of {n:,} points "
                          f"to {W.shape[1]} anchors", 8 * n * W.shape[1])
        self._stored.append(W)
        self._stored_pos.append(np.asarray(positions, dtype=np.int64))

    def _end_warmup(self, positions):
        """Fix the anchors and sigma, sketch the warm-up rows (stream positions
        ``positions``), return their affinities."""
        self.anchors_ = np.ascontiguousarray(self._warm[np.sort(self._res)])
        self.sigma_ = self._sigma_for(self.anchors_)
        m = self.anchors_.shape[0]
        self._fd = self._new_sketch(m)
        W = gaussian_affinity(self._warm, self.anchors_, self.sigma_)
        self._store(W, positions)
        self._wsum = W.sum(axis=0)
        self._fd._insert(W)
        self._V = None
        self._refresh(_shrink(self._fd._buf[:self._fd._filled], self.sketch_size)[2])
        self._warm = np.empty((0, self.anchors_.shape[1]))
        self._res = np.empty(0, dtype=np.int64)
        self.warmup_done_ = True
        return W

    def _stream(self, X, want_codes):
        """Feed X; return the online codes (bool) of its rows if asked."""
        n = X.shape[0]
        codes = np.empty((n, self.n_bits), dtype=bool) if want_codes else None
        base = self.n_samples_seen_          # stream position of X[0]
        rows = None                          # rows of X still to stream, in order (None: X[i:])
        i = 0
        if not self.warmup_done_ and self.landmarks == "uniform":
            m = self.n_anchors
            if n < m:
                raise ValueError(
                    f"landmarks='uniform' samples the n_anchors={m} anchors from the first "
                    f"batch (fit: all of X), which has n_samples={n} rows; pass at least {m} "
                    "rows first, or use landmarks='reservoir'")
            idx = np.sort(self._rng.choice(n, m, replace=False))
            self._warm = X[idx]
            self._res = np.arange(m)
            self.n_samples_seen_ += m
            W = self._end_warmup(base + idx)       # S_train's rows enter the sketch first
            if want_codes:
                codes[idx] = (W @ self._V) > self._thresholds(self._V)
            rows = np.delete(np.arange(n), idx)
        elif not self.warmup_done_:
            take = min(self._n_warm - self.n_samples_seen_, n)
            self._reservoir(X[:take])
            self.n_samples_seen_ += take
            i = take
            if self.n_samples_seen_ < self._n_warm:
                return codes, i          # warm-up rows are coded at the end of the call
            W = self._end_warmup(np.arange(self._n_warm))
            if want_codes:
                nw = W.shape[0]
                first = nw - take        # warm-up rows from earlier calls are not re-emitted
                codes[:take] = (W[first:] @ self._V) > self._thresholds(self._V)
            i = take
        if rows is None:
            rows = np.arange(i, n)
            Xs = X[i:]                   # a view; uniform landmarks take rows per block
        else:
            Xs = None
        cs = None
        if want_codes:
            cs = codes[i:] if Xs is not None else np.empty((rows.shape[0], self.n_bits), bool)
        self._stream_rows(X if Xs is None else Xs, base + rows, cs,
                          None if Xs is not None else rows)
        if rows is not None and want_codes:
            codes[rows] = cs
        return codes, 0

    def _stream_rows(self, X, pos, codes, rows=None):
        """Sketch the rows of X (or X[rows], gathered block by block; warm-up
        over; stream positions ``pos``); fill ``codes`` (or None) with their
        online codes."""
        n = X.shape[0] if rows is None else rows.shape[0]
        want_codes = codes is not None
        pending = [0]                    # rows of X from pending[0] on are not yet coded
        online = want_codes or self.mode == "online"
        every = self.update == "every_point"
        for s in range(0, n, HASHING_BLOCK_ROWS):
            blk = (X[s:s + HASHING_BLOCK_ROWS] if rows is None
                   else X[rows[s:s + HASHING_BLOCK_ROWS]])
            W = gaussian_affinity(blk, self.anchors_, self.sigma_)
            self._store(W, pos[s:s + HASHING_BLOCK_ROWS])
            if not online:
                self._wsum += W.sum(axis=0)
                self.n_samples_seen_ += W.shape[0]
                self._fd._insert(W)
                continue

            def segment(r, W=W, s=s):
                """Account rows pending..s+r of X and code them with the current V_k."""
                a = pending[0]
                if a >= s + r:
                    return
                seg = W[a - s:r]
                self._wsum += seg.sum(axis=0)
                self.n_samples_seen_ += seg.shape[0]
                if want_codes:
                    codes[a:s + r] = seg @ self._V > self._thresholds(self._V)
                pending[0] = s + r

            def on_compact(r, Vt):
                if every:                # the paper: the point is coded with the V
                    segment(r - 1)       # of the SVD that includes it
                    self._refresh(Vt)
                    segment(r)
                else:                    # ours: V_k changes at compactions only
                    segment(r)
                    self._refresh(Vt)

            self._fd._insert(W, on_compact)
            segment(W.shape[0])
    def _finalize(self, X_warm_codes=None):
        if self.warmup_done_:
            fd = self._fd
            fd._finalize()
            self.sketch_ = fd.sketch_
            V = self._aligned(fd.components_)     # the online chain (self._V) is kept
        else:
            # provisional model from the warm-up seen so far
            self.anchors_ = np.ascontiguousarray(self._warm[np.sort(self._res)])
            self.sigma_ = self._sigma_for(self.anchors_)
            fd = self._new_sketch(self.anchors_.shape[0])
            W = gaussian_affinity(self._warm, self.anchors_, self.sigma_)
            fd._insert(W)
            fd._finalize()
            self.sketch_ = fd.sketch_
            self._V = None
            self._refresh(fd.components_)
            V = self._V
            self._wsum = W.sum(axis=0)
            self.n_samples_seen_ = W.shape[0]
        self.components_ = V.T.copy()
        self.affinity_mean_ = self._wsum / max(self.n_samples_seen_, 1)
        if self.rotation == "itq":
            Z = gaussian_affinity(self._sample, self.anchors_, self.sigma_) @ V
            Z -= self.affinity_mean_ @ V
            scale = Z.std(axis=0)
            scale[scale == 0] = 1.0
            Z /= scale
            R = itq_rotation(Z, self.n_iter, generator(int(self._rng.integers(2**31))))
            self.rotation_ = R
            self.projection_ = (V / scale) @ R
            self.thresholds_ = (self.affinity_mean_ @ V / scale) @ R
        else:
            self.projection_ = V.copy()
            self.thresholds_ = self._thresholds(V)
        if not self.warmup_done_:
            self._wsum = None

    def _partial(self, X, want_codes):
        first = not hasattr(self, "_rng")
        X = validate_data(self, X, reset=first, dtype=np.float64)
        if first:
            self._start(X.shape[1])
        if self.rotation is not None:
            self._sample = _reservoir_update(self._sample, X, self.n_samples_seen_,
                                             self.n_anchors, self._sample_rng)
        if X.shape[0] == 0:
            raise ValueError("partial_fit needs at least one sample")
        with _one_blas_thread():
            codes, _ = self._stream(X, want_codes)
        if self.n_samples_seen_ < 2 and not self.warmup_done_:
            raise ValueError("SSBC needs at least 2 samples to place anchors; got "
                             f"n_samples={self.n_samples_seen_}")
        with _one_blas_thread():
            self._finalize()
        if want_codes and not self.warmup_done_:
            # still warming up: code this call's rows with the provisional model
            codes = (gaussian_affinity(X, self.anchors_, self.sigma_) @ self.projection_
                     > self.thresholds_)
        return codes

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y=None):
        """Feed a batch (any size) of the stream; the model is usable after each call."""
        self._partial(X, want_codes=False)
        return self

    def fit(self, X, y=None):
        """Fit on X as one stream (forgets earlier batches)."""
        self._forget()
        return self.partial_fit(X)

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit_transform(self, X, y=None):
        """Feed a batch and return its online codes, in the batch's row order.

        Each row is coded with the V_k current when it arrived (with
        ``update="every_point"``: the V_k of the SVD that includes it).  Rows
        arriving during the reservoir warm-up are coded with the V_k at the
        end of the warm-up (or, if it goes on, with this call's provisional
        model); with ``landmarks="uniform"`` the anchors' own rows (S_train)
        are coded with the V_k after they are sketched, before the other rows
        of the first batch are streamed.
        """
        return format_codes(self._partial(X, want_codes=True), self.output)

    def fit_transform(self, X, y=None, **fit_params):
        """Streaming mode: ``fit(X).transform(X)``.  Online mode: the online
        codes of X fed as one stream."""
        if self.mode == "online":
            self._forget()
            return self.partial_fit_transform(X)
        return self.fit(X).transform(X)

    def _bits(self, X):
        W = gaussian_affinity(X, self.anchors_, self.sigma_)
        return W @ self.projection_ > self.thresholds_

    def embed(self, X):
        """The real-valued embedding ``w(X) @ projection_ - thresholds_`` (N, n_bits)."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return gaussian_affinity(X, self.anchors_, self.sigma_) @ self.projection_ \
            - self.thresholds_

    def stream_codes(self, output=None):
        """Codes of every point fed so far, in arrival order, from the stored
        affinity rows and the current (final) model.

        The paper's streaming setting (seed 002, after Algorithm 1: SSBC
        "needs to store all w vectors and uses final matrix V to construct
        codewords"): the data are not read again.  Needs
        ``store_affinities=True``.  The codes equal ``transform`` of the
        stream's points (same anchors, same ``projection_``); while the
        warm-up is still going on they come from the buffered warm-up points
        and the provisional model.

        Parameters
        ----------
        output : {"bits", "uint8", "uint64"} or None, default=None
            None: the estimator's ``output``.

        Returns
        -------
        ndarray (n_samples_seen_, n_bits) {0,1} uint8, or packed codes.

        Raises
        ------
        ValueError
            If ``store_affinities`` is False, or ``output`` is unknown.

        Examples
        --------
        >>> import numpy as np
        >>> X = np.random.default_rng(0).normal(size=(300, 4))
        >>> h = SSBC(8, 32, 16, store_affinities=True, random_state=0)
        >>> for batch in np.array_split(X, 3):
        ...     _ = h.partial_fit(batch)
        >>> codes = h.stream_codes()
        >>> codes.shape, bool((codes == h.transform(X)).all())
        ((300, 8), True)
        """
        check_is_fitted(self)
        if not self.store_affinities:
            raise ValueError("stream_codes needs store_affinities=True (the paper's streaming "
                             "setting keeps every point's affinity row, O(n m) memory); "
                             "otherwise call transform on the points")
        output = self.output if output is None else output
        if output not in OUTPUTS:
            raise ValueError(f"output must be one of {OUTPUTS}; got {output!r}")
        if not self.warmup_done_:
            W = gaussian_affinity(self._warm, self.anchors_, self.sigma_)
            return format_codes(W @ self.projection_ > self.thresholds_, output)
        bits = np.empty((self.n_samples_seen_, self.projection_.shape[1]), dtype=bool)
        for W, pos in zip(self._stored, self._stored_pos):
            bits[pos] = W @ self.projection_ > self.thresholds_
        return format_codes(bits, output)
