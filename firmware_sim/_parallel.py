"""Threads over contiguous ranges of work units (campaign batches).

The batch kernels are ``@njit(nogil=True)``: threads run them side by side.
Each range's result depends on its units alone (a seed per unit, counters
per range), and integer counts add up in any order, so results are
identical for any thread count. ``n_jobs``: None -> numba's thread count
(``NUMBA_NUM_THREADS``, ``numba.set_num_threads``), -1 -> every CPU this
process may use, k >= 1 -> k threads.
"""

import os
from concurrent.futures import ThreadPoolExecutor
from numbers import Integral

__all__ = ["n_threads", "run_ranges", "run_seeded_batches", "seed_sequence"]


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
        raise ValueError(f"n_jobs must be None, -1 (every CPU) or an integer >= 1; "
                         f"got {n_jobs!r}")
    return _cpus() if n_jobs == -1 else int(n_jobs)


def seed_sequence(seed):
    """A ``SeedSequence`` from a SeedSequence, an int, None or a numpy Generator
    (which gives one draw): the root that ``spawn`` cuts into a seed per work
    unit.

    >>> seed_sequence(3).entropy
    3
    """
    import numpy as np
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


def run_seeded_batches(run, batches, seeds, t, n_jobs=None):
    """Run ``run(start, nrows, default_rng(seeds[i]), same, correct)`` for every
    ``batches[i] = (start, nrows)``; the sums of the per-point int64 counts
    ``(same, correct)``, each of length ``t``. Threads (``n_jobs``) take
    contiguous ranges of batches, each with its own counters: integer sums,
    so the result does not depend on them."""
    import numpy as np

    def work(a, b):
        same = np.zeros(t, np.int64)
        correct = np.zeros(t, np.int64)
        for i in range(a, b):
            start, nrows = batches[i]
            run(start, nrows, np.random.default_rng(seeds[i]), same, correct)
        return same, correct

    same = np.zeros(t, np.int64)
    correct = np.zeros(t, np.int64)
    for s, c in run_ranges(work, 0, len(batches), n_threads(n_jobs)):
        same += s
        correct += c
    return same, correct
