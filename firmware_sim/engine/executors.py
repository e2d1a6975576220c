"""Where the batches of a bit-fault run execute: this process's threads or a Dask
cluster, behind one interface (:class:`Executor`).

The engine describes a run once (a :class:`BitJob`: the device, its clean
labels and stream) and asks the executor for the per-point counts of each
grid value (``count(job, fault, seed, progress)``). Every batch of (point,
trial) rows has its own seed (:func:`~firmware_sim.engine.batches.plan_batches`),
never one per thread or worker, so every executor gives the same counts.

* :class:`ThreadExecutor`: threads of this process over contiguous ranges
  of batches (``n_jobs``; :func:`~firmware_sim.engine.batches.run_seeded_batches`).
* :class:`DaskExecutor`: a ``dask.distributed.Client`` (never imported here:
  firmware_sim imports numpy and numba only; the caller connects,
  ``Client("tcp://host:8786")``, or the CLI's ``--scheduler`` does). The
  container bytes and the points are scattered to every worker once per run
  (:meth:`DaskExecutor.start`); a worker loads the device and computes the
  clean stream once (:func:`prepare_payload`), then runs its tasks' batches
  (:data:`CHUNK_BATCHES` per task) and returns two int64 count vectors.
  At most :data:`MAX_IN_FLIGHT` tasks (or twice the cluster's threads, if
  more) are submitted at a time; Ctrl-C (or an exception from ``progress``)
  cancels the submitted futures (``client.cancel``) and is raised.
  ``tests/test_parallel_campaign.py`` checks a ``LocalCluster`` of two
  worker processes against a local run, count for count.

A new executor implements :meth:`Executor.count` (and :meth:`Executor.start`
when it ships the job somewhere first). Imports numpy and the engine only.
"""

from collections import deque
from dataclasses import dataclass

import numpy as np

from ..contract import load
from .batches import n_threads, plan_batches, run_seeded_batches
from .runner import batch_runner
from .streams import clean_labels, stream

__all__ = ["BitJob", "Executor", "ThreadExecutor", "DaskExecutor", "executor_for",
           "check_client", "prepare_payload", "CHUNK_BATCHES", "MAX_IN_FLIGHT"]

#: Batches per task: 16 x 4 Mi wire bits, about 1-4 s of work on one core for
#: the fast paths (naive Bayes, ECOC) and more on the plain path.
CHUNK_BATCHES = 16

#: Tasks submitted and not yet gathered, at most (or twice the cluster's
#: threads when that is more): the client holds a bounded number of futures.
MAX_IN_FLIGHT = 32


@dataclass(frozen=True)
class BitJob:
    """The clean side of a bit-fault run, computed once: the device, the points
    ``X`` it encodes (what a remote worker re-encodes), the true labels ``y``
    (int64 or None), trials per point, the site, the clean stream at the site
    (rows are points), its alphabet size and the clean labels."""

    device: object
    X: object
    y: object
    n_trials: int
    site: str
    stream: np.ndarray
    n_sym: int
    clean: np.ndarray

    @property
    def t(self):
        """Points."""
        return self.stream.shape[0]

    @property
    def width(self):
        """Positions per stream row."""
        return self.stream.shape[1]

    def runner(self, fault):
        """The batch runner of ``fault`` on this job (fast path or plain path)."""
        return batch_runner(self.device, self.site, fault, self.stream, self.clean, self.y,
                            self.n_trials, self.n_sym)


class Executor:
    """Runs the seeded batches of a :class:`BitJob` (see the module docstring)."""

    def start(self, job):
        """Called once per run before any :meth:`count` (ship the job, if needed)."""

    def count(self, job, fault, seed, progress=None):
        """``(same, correct)``: int64 counts per point of every batch of
        ``plan_batches(job.t, job.n_trials, job.width, seed)`` under ``fault``;
        ``progress(rows_done)`` between batches, in the calling thread."""
        raise NotImplementedError


class ThreadExecutor(Executor):
    """Threads of this process (``n_jobs``: None -> numba's thread count, -1 ->
    every CPU, k >= 1 -> k); the counts do not depend on it."""

    def __init__(self, n_jobs=None):
        n_threads(n_jobs)                     # refuse a bad n_jobs before any work
        self.n_jobs = n_jobs

    def count(self, job, fault, seed, progress=None):
        plan = plan_batches(job.t, job.n_trials, job.width, seed)
        return run_seeded_batches(job.runner(fault), plan, job.t, self.n_jobs, progress)


def check_client(client):
    """``client`` if it looks like a ``dask.distributed.Client`` (``scatter``,
    ``submit``, ``gather``). firmware_sim imports numpy and numba only
    (``docs/architecture.md``): it never imports dask; the caller connects
    (``Client("tcp://host:8786")``; the CLI's ``--scheduler`` does)."""
    if isinstance(client, str):
        raise TypeError("client must be a dask.distributed.Client, not an address: connect "
                        f"first, Client({client!r}) (the CLI's --scheduler does)")
    if not all(callable(getattr(client, m, None)) for m in ("scatter", "submit", "gather")):
        raise TypeError("client must be a dask.distributed.Client (scatter, submit, gather); "
                        f"got {type(client).__name__}")
    return client


#: The last payload a worker prepared and what it prepared from it: the tasks
#: of one run share the scattered payload object, so a worker loads the
#: device, encodes the points and computes the clean stream once.
_PREPARED = [None, None]


def prepare_payload(payload):
    """The :class:`BitJob` of a scattered payload (worker side; computed once per
    payload and worker)."""
    if _PREPARED[0] is not payload:
        device = load(payload["image"])
        frames = device.encode(payload["X"])
        clean = clean_labels(device, frames)
        rows, n_sym = stream(device, frames, payload["site"])
        job = BitJob(device, payload["X"], payload["y"], payload["n_trials"], payload["site"],
                     rows, n_sym, clean)
        _PREPARED[:] = [payload, job]
    return _PREPARED[1]


def _chunk(payload, fault, entropy, spawn_key, first, stop):
    """Counts of batches [first, stop) of one grid value (a Dask task)."""
    job = prepare_payload(payload)
    plan = plan_batches(job.t, job.n_trials, job.width,
                        np.random.SeedSequence(entropy, spawn_key=spawn_key))
    return run_seeded_batches(job.runner(fault), plan, job.t, n_jobs=1, first=first, stop=stop)


class DaskExecutor(Executor):
    """A Dask cluster through a connected ``dask.distributed.Client`` (see the
    module docstring); ``chunk_batches`` batches per task (default
    :data:`CHUNK_BATCHES`)."""

    def __init__(self, client, chunk_batches=None):
        self.client = check_client(client)
        self.chunk_batches = chunk_batches
        self._remote = None

    def start(self, job):
        """Send the container, the points and the labels to every worker once."""
        payload = {"image": job.device.container.tobytes(), "X": np.asarray(job.X),
                   "y": job.y, "n_trials": int(job.n_trials), "site": job.site}
        [self._remote] = self.client.scatter([payload], broadcast=True,
                                             hash=False)    # a fresh key per run

    def _in_flight(self):
        """Tasks to keep submitted: :data:`MAX_IN_FLIGHT`, or twice the cluster's
        threads when a ``Client`` tells them and that is more."""
        try:
            threads = sum(dict(self.client.nthreads()).values())
        except Exception:                # not a dask Client (a test double), or no answer
            threads = 0
        return max(MAX_IN_FLIGHT, 2 * int(threads))

    def count(self, job, fault, seed, progress=None):
        """Tasks of ``chunk_batches`` batches go out a window at a time and are
        gathered in order; ``progress(rows_done)`` after each. On any exception
        (Ctrl-C, an error in a task or in ``progress``) the outstanding futures
        are cancelled before it is raised."""
        if self._remote is None:
            self.start(job)
        client = self.client
        plan = plan_batches(job.t, job.n_trials, job.width, seed)
        n_batches = len(plan)
        step = max(1, int(CHUNK_BATCHES if self.chunk_batches is None else self.chunk_batches))
        window = self._in_flight()
        starts = iter(range(0, n_batches, step))
        pending = deque()
        same = np.zeros(job.t, np.int64)
        correct = np.zeros(job.t, np.int64)

        def submit():
            a = next(starts, None)
            if a is not None:
                b = min(a + step, n_batches)
                pending.append((b, client.submit(_chunk, self._remote, fault, seed.entropy,
                                                 tuple(seed.spawn_key), a, b, pure=False)))

        try:
            for _ in range(window):
                submit()
            while pending:
                b, future = pending.popleft()
                [(s, k)] = client.gather([future])
                same += s
                correct += k
                start, nrows = plan.bounds(b - 1)
                submit()
                if progress is not None:
                    progress(start + nrows)
        except BaseException:
            futures = [f for _, f in pending]
            if futures:
                try:
                    client.cancel(futures)
                except Exception:          # the client is gone: nothing left to cancel
                    pass
            raise
        return same, correct


def executor_for(n_jobs=None, client=None):
    """The executor of the classic arguments: a :class:`DaskExecutor` for a
    ``client``, else a :class:`ThreadExecutor` of ``n_jobs`` threads."""
    if client is not None:
        return DaskExecutor(client)
    return ThreadExecutor(n_jobs)
