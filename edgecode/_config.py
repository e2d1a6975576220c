"""Numerical flags and tolerances shared by every edgecode kernel.

Kernels take their numba flags from here (``NJIT``) so that a single place
decides caching and fastmath; no kernel hardcodes them.
"""

#: Keyword arguments for every ``numba.njit`` in edgecode.  ``fastmath`` stays
#: off: SCP kernels compare sums against thresholds and must round the same way
#: as their slow references.
NJIT = {"cache": True, "fastmath": False}

#: Flags of the kernels that ``edgecode._parallel.run_chunks`` runs on several
#: threads at once: serial code over a range of items, releasing the GIL.
NJIT_NOGIL = {**NJIT, "nogil": True}

#: Largest allocation a code design (``edgecode.ecoc``) or a hasher's state
#: (``edgecode.hashing``) may ask for; above it the call is refused before
#: allocating, naming the shape and the bytes (2 GiB).
MAX_ALLOCATION_BYTES = 2 * 2 ** 30

#: Largest feature count ``scp_exact`` accepts: meet in the middle keeps five
#: float64 buffers of ``2**ceil(n/2)`` entries (sums, probabilities, merge
#: scratch, prefix masses), i.e. 5 * 2**24 * 8 bytes = 640 MiB at n = 48.
SCP_EXACT_MAX_FEATURES = 48

#: Redundancy planner (``edgecode.redundancy.allocate_greedy``), method
#: ``auto``: exact feature influences (meet in the middle, O(2**(n/2) n) per
#: point and step) up to this many features, the grid engine above.  At
#: n = 20 an exact step costs ~2 * 10**4 operations per point, about what one
#: grid step costs at the default resolution; above it the exact cost doubles
#: every two features while the grid's stays flat.
PLAN_EXACT_MAX_FEATURES = 20

#: Largest n for which ``method="exact"`` is accepted (2**15 subset sums and
#: masks per half and per point).
PLAN_EXACT_LIMIT = 30

#: Grid engine: cells per point across the range where the flip sum can carry
#: probability (a power of two, the FFT length); memory is 16 bytes per cell
#: and planned point (the CDF and half a complex spectrum).  Plan quality
#: stops improving at 2048 on the DNA set at eps = 0.01 (1 - SCP 6.7e-4 at
#: 512, 5.9e-4 at 1024, 5.7e-4 at 2048 and 4096) and within 0.2% on the
#: movie reviews; dense synthetic data is already there at 1024.
PLAN_GRID_RESOLUTION = 2048

#: Grid engine: a point is planned on the grid unless Bennett's inequality
#: shows its class changes with probability below this (or above one minus
#: this) for every plan; the grid window leaves out at most this much mass.
PLAN_GRID_TAIL = 2.0 ** -70

#: Grid engine: the deconvolution series for one influence stops when its
#: weights (e / (1 - e))**k / (1 - e) fall below this (each term is at most
#: the weight times a window mass, so the truncation error is below it).
PLAN_SERIES_TOL = 2.0 ** -40

#: ... or below this fraction of the influence summed so far: the grid's own
#: discretisation error is ~1e-3, so 1e-6 of the value is ample for ranking
#: candidates; the lazy greedy's bounds carry 4 times this as slack.
PLAN_SERIES_RTOL = 2.0 ** -20

#: Grid engine: the CDFs are updated in place (deconvolution, convolution)
#: and rebuilt from the exactly maintained spectra (inverse FFT) before the
#: product of the in-place updates' worst-case error amplifications,
#: ``e'/e + (1 - e'/e) / (1 - 2 e)`` each, would pass this: rounding errors
#: stay below ~1e-12 of the CDF.  (Updated in place forever, the CDFs of
#: n = 1024 features diverged after ~280 steps.)
PLAN_RESYNC_AMPLIFICATION = 1e4

#: Lazy greedy: a step first re-evaluates the stale candidates with the best
#: upper bounds, this many, then in one more pass every stale candidate whose
#: bound still beats the best fresh gain (a pass over the points costs about
#: the same for a few features or for many: it streams every point's CDF).
PLAN_REFRESH_BATCH = 16

#: A returned plan is certified by ``scp_exact`` when at most this many
#: features can flip, by ``scp_bounds`` otherwise.
PLAN_CERTIFY_EXACT_MAX = 24

#: ``allocate_greedy`` warns (``PlanningCostWarning``) before a run expected
#: to take longer than this many seconds.
PLAN_WARN_SECONDS = 60.0

#: Smallest Laplace smoothing accepted without a warning (as scikit-learn).
ALPHA_MIN = 1e-10

#: ``scp_bounds`` default grid resolution: the grid step is the largest power
#: of two <= span / resolution (span: the width of the flip-sum range that can
#: carry probability).  Cost O(n * resolution) per point, memory O(resolution).
SCP_BOUNDS_RESOLUTION = 2 ** 15

#: ``scp_bounds``: a DP state is retired early when Bernstein's inequality says
#: the remaining flips move it across the threshold with probability <= half
#: this; a retired "same" state is charged this much per unit of mass, so the
#: bounds stay certified and loosen by at most this amount.
SCP_BOUNDS_BERNSTEIN = 2.0 ** -70

#: ``scp_bounds``: total probability mass the DP may drop at the two ends of
#: its window (negligible masses); loosens the bounds by at most this.
SCP_BOUNDS_TRIM = 2.0 ** -70

#: ``scp_approx``: the (l, m) coefficient rows of G(y, z) are kept for
#: l <= L only, with L the smallest flip count whose Poisson-binomial tail
#: P(#flips > L) is <= this.  The dropped rows change the result by at most
#: this much (absolute), far below the 1e-12 users read.
SCP_APPROX_TAIL = 2.0 ** -100

#: ``scp_approx``: largest (l, m) coefficient array per point (float64 cells;
#: 2**26 cells = 512 MiB).  Larger problems are refused with advice.
SCP_APPROX_MAX_CELLS = 2 ** 26

#: ``scp_monte_carlo``: trials are drawn in chunks of at most this many
#: (trial, feature) cells, bounding memory.
SCP_MC_CHUNK_CELLS = 2 ** 22

#: ``edgecode.hashing.SSBC``: with ``sigma="auto"`` the affinity scale is
#: ``sigma_scale`` times the mean, over anchors, of the squared Euclidean
#: distance to the anchor's ``SSBC_SIGMA_NEIGHBOR``-th nearest other anchor.
SSBC_SIGMA_NEIGHBOR = 10

#: ``edgecode.hashing``: rows per block when affinities or exact neighbours
#: are computed in batches (bounds the temporary (block, m) float64 matrices).
HASHING_BLOCK_ROWS = 4096

#: ``edgecode.ecoc``: largest N**k Sylvester matrix the truncation rules draw
#: rows and columns from (entries are computed from the indices, never
#: materialised; this only bounds the index range searched).
ECOC_MAX_SYLVESTER = 2 ** 24

#: ``edgecode.ecoc`` adaptive truncation: distance-operation budget (about
#: c^2 n + n^2 c per evaluated candidate) for the candidate windows and the
#: hill climb; ~1e9 is about a second on one core.
ECOC_ADAPTIVE_BUDGET = 2 * 10 ** 9

#: ``edgecode.ecoc.exhaustive``: most classes for Dietterich's exhaustive code
#: (2**(c-1) - 1 columns: 32767 at c = 16).
ECOC_EXHAUSTIVE_MAX_CLASSES = 16

#: ``edgecode.ecoc.decoding_probabilities``: largest number ``N^L`` of received
#: words labelled and transformed (a 4-byte label and an 8-byte class value
#: per word: 48 MiB at 2**22; binary L <= 22, 3-ary L <= 13, 5-ary L <= 9).
ECOC_DECODING_MAX_WORDS = 2 ** 22

#: ``edgecode.ecoc.decoding_probabilities``: the channel is applied along the
#: low learner axes run by run, each run of at most this many float64 entries
#: (256 KiB) staying in cache (measured: 20% faster than one pass per axis
#: for binary L = 20, 5% for 3-ary L = 13).
ECOC_DECODING_CACHE_BLOCK = 2 ** 15

#: ``edgecode.scp``: ``scp_exact`` and ``scp_bounds`` cut the points of a call
#: into up to this many fixed, contiguous chunks (more when a chunk would
#: exceed ``BATCH_WORK``) and run the chunks on as many threads as numba's
#: thread count (``edgecode._parallel.run_batched``); each chunk allocates its
#: own buffers.  A point's result depends on that point alone, so the output
#: is identical for any thread count.
SCP_PARALLEL_CHUNKS = 64

#: ``edgecode.scp``: the chunks running at once are capped so that their
#: buffers together stay below about this many bytes (never below one chunk):
#: with large buffers fewer chunks run at a time.  ``scp_exact`` needs about
#: ``5 * 8 * 2**ceil(n/2)`` bytes per chunk (640 MiB at n = 48: one chunk),
#: ``scp_bounds`` about ``32 * resolution`` (1 MiB at the default).
SCP_PARALLEL_MAX_BYTES = 2 ** 30

#: ``scp_bounds``, nearest rounding: the rounding residuals' sum is bounded by
#: Bernstein's inequality with this failure probability on each side, and the
#: bound is charged this much (both bounds loosen by at most this amount).
SCP_BOUNDS_GAMMA = 2.0 ** -40

#: ``edgecode.scp``: each chunk of points gets at least about this many
#: estimated elementary steps (about 1 ns each: ``t * 2**ceil(n/2) * (n + 4)``
#: for ``scp_exact``, ``t * n * min(resolution, 2**n)`` for ``scp_bounds``),
#: about a millisecond, so that handing a chunk to a thread (tens of
#: microseconds) stays a small share; smaller calls run on the calling thread.
SCP_PARALLEL_MIN_WORK = 2 ** 20

#: Issue 24, "bounded by construction": every long computation in edgecode
#: runs as a sequence of kernel calls of at most about this many estimated
#: elementary steps each (~1 ns: ~0.07 s), so that Python gets control back
#: between calls: Ctrl-C (a ``KeyboardInterrupt`` cannot stop a running numba
#: kernel) and ``progress`` callables are answered within a fraction of a
#: second.  A single point whose own work is larger is the one exception where
#: a kernel cannot stop mid-point (``scp_exact`` at n = 48: ~1 s per point;
#: ``scp_bounds``: O(n * resolution) per point); ``scp_approx`` resumes mid-point.
BATCH_WORK = 2 ** 26

#: ``scp_monte_carlo``: a chunk of trials also does at most this many
#: multiply-adds (trials x features x points, one BLAS product: ~0.05 s).
SCP_MC_CHUNK_WORK = 2 ** 28

#: ``scp_approx``: most flip sets one call may enumerate exactly for
#: Improvement 2 (``hybrid``: ``t * sum_{l <= hybrid} C(n', l)``, n' the
#: features that can flip; ~2**44 visits is about half a day).  Larger
#: requests (``hybrid=64`` at n = 180 is 10**49 sets per point) are refused
#: with the largest ``hybrid`` that fits; accepted ones run in resumable
#: batches of ``BATCH_WORK`` and stop on Ctrl-C.
SCP_APPROX_MAX_SUBSETS = 2 ** 44
