"""Seeded batches of (point, trial) rows, and threads over contiguous ranges of them.

A campaign's bit-fault work is cut into batches of about :data:`BATCH_BITS`
stream bits (:func:`plan_batches`), each with its own seed, whatever runs
them (this process's threads, :func:`run_seeded_batches`, or a Dask cluster,
:mod:`firmware_sim.engine.executors`): a seed gives the same counts on
every machine and path.

The batch kernels are ``@njit(nogil=True)``: threads run them side by side.
Each range's result depends on its units alone (a seed per unit, counters
per range), and integer counts add up in any order, so results are
identical for any thread count. ``n_jobs``: None -> numba's thread count
(``NUMBA_NUM_THREADS``, ``numba.set_num_threads``), -1 -> every CPU this
process may use, k >= 1 -> k threads.

Long runs are bounded and interruptible by construction:

* :class:`SeededBatches` describes a run's batches (bounds and seeds)
  without listing them, so a run of 10**12 trials costs no memory up front;
  batch ``i``'s seed is ``SeedSequence.spawn``'s child ``i``, computed when
  the batch runs.
* :func:`run_seeded_batches` returns to Python between batches: the caller's
  ``progress`` runs there (in the calling thread), and Ctrl-C
  (``KeyboardInterrupt``) or an exception from ``progress`` stops the run:
  worker threads see a shared cancel flag at their next batch boundary.
"""

import os
import threading
import time
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from numbers import Integral

import numpy as np

from ..channel import BLOCK_BITS
from ..errors import DeviceError

__all__ = ["n_threads", "run_ranges", "run_seeded_batches", "seed_sequence", "SeededBatches",
           "Ticker", "repeat_rows", "count_labels", "plan_batches", "SUB_ROWS", "MAX_ROWS",
           "BATCH_BITS", "PROGRESS_EVERY"]

#: Stream bits per batch of the bit-fault path (bounds memory; fixed, so a seed
#: gives the same result on every machine). At most the channel's block size,
#: so a batch's errors of a per-position BSC are one draw whichever path
#: consumes them.
BATCH_BITS = min(1 << 22, BLOCK_BITS)

#: Rows of a batch handled at once after its faults are drawn (labels and
#: counts): bounds the per-row temporaries (~50 bytes a row) of narrow frames,
#: whose batches have many rows. Results do not depend on it.
SUB_ROWS = 1 << 16

#: Largest number of (point, trial) rows of one run: row indices are int64.
MAX_ROWS = 2 ** 63 - 1

#: Seconds between two calls of a run's ``progress`` (and the first call comes
#: after the first batch).
PROGRESS_EVERY = 0.1


def _cpus():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:          # not Linux
        return os.cpu_count() or 1


def n_threads(n_jobs=None):
    """Threads for ``n_jobs`` (see the module docstring).

    >>> n_threads(1), n_threads(3)
    (1, 3)
    """
    if n_jobs is None:
        import numba
        return max(1, int(numba.get_num_threads()))
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, Integral) or n_jobs == 0 \
            or n_jobs < -1:
        raise DeviceError(f"n_jobs must be None, -1 (every CPU) or an integer >= 1; "
                          f"got {n_jobs!r}")
    return _cpus() if n_jobs == -1 else int(n_jobs)


def seed_sequence(seed):
    """A ``SeedSequence`` from a SeedSequence, an int, None or a numpy Generator
    (which gives one draw): the root that ``spawn`` cuts into a seed per work
    unit.

    >>> seed_sequence(3).entropy
    3
    """
    if isinstance(seed, np.random.SeedSequence):
        return seed
    if isinstance(seed, np.random.Generator):
        return np.random.SeedSequence(int(seed.integers(0, 2**63 - 1)))
    if seed is None:
        return np.random.SeedSequence(int(np.random.default_rng().integers(0, 2**63 - 1)))
    if isinstance(seed, np.random.RandomState):
        return np.random.SeedSequence(int(seed.randint(0, 2**63 - 1, dtype=np.int64)))
    if isinstance(seed, bool) or not isinstance(seed, Integral):
        raise TypeError(f"random_state must be None, an int, a SeedSequence or a numpy "
                        f"Generator; got {seed!r}")
    return np.random.SeedSequence(int(seed))


class SeededBatches:
    """The batches of ``rows_total`` (point, trial) rows, ``step`` rows each (the
    last one shorter), and their seeds, described rather than listed.

    Batch ``i`` covers rows ``[i * step, min((i + 1) * step, rows_total))`` and
    draws from ``seed(i)``, equal to ``root.spawn(len(self))[i]`` (the seeds of
    the listed batches before issue 24, so counts are unchanged) without
    spawning them all (``root`` is not advanced; :meth:`advance_root` does
    what ``spawn`` did to it, for a caller's SeedSequence once a run completes).

    >>> import numpy as np
    >>> b = SeededBatches(10, 4, 7)
    >>> len(b), [b.bounds(i) for i in range(len(b))]
    (3, [(0, 4), (4, 4), (8, 2)])
    >>> ref = np.random.SeedSequence(7).spawn(3)[2]
    >>> b.seed(2).generate_state(2).tolist() == ref.generate_state(2).tolist()
    True
    """

    def __init__(self, rows_total, step, seed):
        self.rows_total = int(rows_total)
        self.step = max(1, int(step))
        self.root = seed_sequence(seed)
        self._base = int(self.root.n_children_spawned)
        self.n = -(-self.rows_total // self.step)

    def __len__(self):
        return self.n

    def bounds(self, i):
        """(first row, rows) of batch ``i``."""
        start = i * self.step
        return start, min(self.step, self.rows_total - start)

    def seed(self, i):
        """The ``SeedSequence`` of batch ``i``."""
        r = self.root
        return np.random.SeedSequence(r.entropy, spawn_key=tuple(r.spawn_key) + (self._base + i,),
                                      pool_size=r.pool_size)

    def advance_root(self):
        """Advance the root as ``root.spawn(len(self))`` does (a caller's SeedSequence
        reused for a second run then gives fresh draws, as before), in pieces
        of bounded memory."""
        left = self.n - (self.root.n_children_spawned - self._base)
        while left > 0:
            k = min(left, 1 << 16)
            self.root.spawn(k)
            left -= k


class Ticker:
    """Calls ``progress(done, total[, text])`` at most every ``every`` seconds (the
    first time at the first call) and always when ``done`` reaches ``total``
    (once); no-op when ``progress`` is None. Called between batches, in the
    thread that runs the loop."""

    def __init__(self, progress, total, every=None):
        self.progress = progress
        self.total = int(total)
        self.every = PROGRESS_EVERY if every is None else float(every)
        self.last = None
        self.done = None

    def __call__(self, done, text=""):
        if self.progress is None or done == self.done:       # nothing new to report
            return
        now = time.monotonic()
        if done >= self.total or self.last is None or now - self.last >= self.every:
            self.last, self.done = now, done
            if text:
                self.progress(int(done), self.total, text)
            else:
                self.progress(int(done), self.total)


def plan_batches(t, n_trials, width, seed):
    """The batches of ``t * n_trials`` (point, trial) rows of a stream of ``width``
    positions per row, ``BATCH_BITS // width`` rows each (fixed, so a seed gives
    the same result on every machine and path), and their seeds: a
    :class:`SeededBatches` (described, not listed)."""
    return SeededBatches(t * n_trials, max(1, BATCH_BITS // max(width, 1)), seed)


def repeat_rows(tx, start, nrows, n_trials):
    """Rows ``[start, start + nrows)`` of the (point, trial) stream: row ``r`` is
    ``tx[r // n_trials]`` (a new C-contiguous array; no per-row index array)."""
    p0, p1 = start // n_trials, (start + nrows - 1) // n_trials
    if p0 == p1:
        return np.repeat(tx[p0:p0 + 1], nrows, axis=0)
    counts = np.full(p1 - p0 + 1, n_trials, np.int64)
    counts[0] = n_trials - start % n_trials
    counts[-1] = (start + nrows - 1) % n_trials + 1
    return np.ascontiguousarray(np.repeat(tx[p0:p1 + 1], counts, axis=0))


def count_labels(labels, start, n_trials, clean, y, same, correct):
    """Add the rows ``[start, start + len(labels))`` whose label equals the clean
    label (and ``y``) to the per-point counts."""
    m = labels.shape[0]
    if m == 0:
        return
    p0 = start // n_trials
    point = np.arange(start, start + m, dtype=np.int64) // n_trials
    seg = point[-1] - p0 + 1
    same[p0:p0 + seg] += np.bincount(point[labels == clean[point]] - p0, minlength=seg)
    if y is not None:
        correct[p0:p0 + seg] += np.bincount(point[labels == y[point]] - p0, minlength=seg)


def run_ranges(work, first, stop, threads):
    """``[work(a, b) for the (a, b) ranges]``: ``[first, stop)`` cut into at most
    ``threads`` contiguous ranges, run on that many threads (in this thread
    when one is enough). An exception in a range is raised here."""
    n = stop - first
    if n <= 0:
        return []
    k = max(1, min(int(threads), n))
    ranges = [(first + i * n // k, first + (i + 1) * n // k) for i in range(k)]
    if k == 1:
        return [work(*ranges[0])]
    with ThreadPoolExecutor(max_workers=k, thread_name_prefix="firmware_sim") as pool:
        futures = [pool.submit(work, a, b) for a, b in ranges]
        return [f.result() for f in futures]


def run_seeded_batches(run, batches, t, n_jobs=None, progress=None, first=0, stop=None):
    """Run ``run(start, nrows, default_rng(batches.seed(i)), same, correct)`` for
    the batches ``i`` in ``[first, stop)`` of ``batches`` (a
    :class:`SeededBatches`); the sums of the per-point int64 counts ``(same,
    correct)``, each of length ``t``. Threads (``n_jobs``) take contiguous
    ranges of batches, each with its own counters: integer sums, so the
    result does not depend on them.

    ``progress(rows_done)``, if given, is called in this thread between
    batches (about every :data:`PROGRESS_EVERY` seconds with threads). An
    exception there, Ctrl-C or an error in a batch stops every thread at its
    next batch boundary and is raised here.
    """
    stop = len(batches) if stop is None else int(stop)
    n = stop - first
    k = max(1, min(n_threads(n_jobs), n))
    cancel = threading.Event()
    rows_done = [0] * k

    def work(w, a, b, tick=None):
        same = np.zeros(t, np.int64)
        correct = np.zeros(t, np.int64)
        for i in range(a, b):
            if cancel.is_set():
                break
            start, nrows = batches.bounds(i)
            run(start, nrows, np.random.default_rng(batches.seed(i)), same, correct)
            rows_done[w] += nrows
            if tick is not None:
                tick(rows_done[w])
        return same, correct

    same = np.zeros(t, np.int64)
    correct = np.zeros(t, np.int64)
    if n <= 0:
        return same, correct
    if k == 1:
        s, c = work(0, first, stop, progress)
        return same + s, correct + c
    ranges = [(first + i * n // k, first + (i + 1) * n // k) for i in range(k)]
    pool = ThreadPoolExecutor(max_workers=k, thread_name_prefix="firmware_sim")
    try:
        futures = [pool.submit(work, w, a, b) for w, (a, b) in enumerate(ranges)]
        pending = set(futures)
        while pending:
            finished, pending = wait(pending, timeout=PROGRESS_EVERY,
                                     return_when=FIRST_EXCEPTION)
            for f in finished:
                f.result()                      # a batch's error, raised here
            if progress is not None:
                progress(sum(rows_done))
        for f in futures:
            s, c = f.result()
            same += s
            correct += c
    except BaseException:
        cancel.set()                            # the threads stop at their next batch
        raise
    finally:
        pool.shutdown(wait=True)
    return same, correct
