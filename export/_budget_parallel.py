"""Where the configurations of a budget search are trained and measured: this
process, a pool of ``jobs`` worker processes, or a Dask cluster.

:func:`export.budget.search` hands a list of work items (a picklable function
and its arguments, the task's rows shared) to an :class:`Evaluator`, whose
:meth:`~Evaluator.map` returns the results **in the order given**, whatever
ran where. Every work item is seeded by its configuration and the search's
``random_state`` only (never by a worker or the order), so the search gives
the same entries, bit for bit, on one process, on ``jobs`` processes and on a
cluster.

* :class:`LocalEvaluator`: in this process, one item after the other.
* :class:`PoolEvaluator`: ``jobs`` processes (``spawn``: no state inherited
  from this process's threads); the task's rows are sent once per process
  (the pool's initializer), each item then names only its configuration.
* :class:`DaskEvaluator`: a ``dask.distributed.Client`` (or a scheduler
  address, connected here; dask is imported only then); the task is scattered
  to every worker once per search.

Imports nothing from dask at module level.
"""

import concurrent.futures as cf
import multiprocessing as mp
import os

__all__ = ["Evaluator", "LocalEvaluator", "PoolEvaluator", "DaskEvaluator", "evaluator_for",
           "connect", "shippable"]

#: The task a pool worker received (its initializer), looked up by each item.
_WORKER_TASK = [None]


def _rebuild(cls, kwargs):
    return cls(**kwargs)


def _reduce_dataclass(obj):
    """Pickle a dataclass whose fields hold read-only mappings (a device profile)
    by its constructor arguments, the mappings as dicts."""
    import dataclasses
    import types

    def plain(v):                      # nested read-only mappings (a profile's prices)
        if isinstance(v, types.MappingProxyType):
            return {k: plain(x) for k, x in v.items()}
        return v

    kw = {f.name: plain(getattr(obj, f.name)) for f in dataclasses.fields(obj) if f.init}
    return _rebuild, (type(obj), kw)


def shippable(cls):
    """Register ``cls`` (a dataclass) to pickle by :func:`_reduce_dataclass`, for
    worker processes and Dask workers."""
    import copyreg
    copyreg.pickle(cls, _reduce_dataclass)
    return cls


def _set_task(task):
    # one campaign thread per process: the pool is the parallelism
    os.environ.setdefault("NUMBA_NUM_THREADS", "1")
    from firmware_sim.profiles import DeviceProfile
    shippable(DeviceProfile)
    _WORKER_TASK[0] = task
    _warm_imports()


def _warm_imports():
    """Import what every work item needs (numpy, scikit-learn, numba, the kinds'
    kernels: seconds per process), so that a worker pays for it while the main
    process screens the first round, not inside its first item (issue 28)."""
    import importlib

    from export.registry import kind_specs
    for spec in kind_specs():           # the kinds and their kernels
        importlib.import_module(type(spec).__module__)
    # what export.budget (imported by the first item's unpickling) stands on
    for name in ("export._budget_space", "export._budget_front", "firmware_sim.campaign",
                 "sklearn.ensemble", "sklearn.tree",
                 "sklearn.naive_bayes", "sklearn.linear_model"):
        try:
            importlib.import_module(name)
        except ImportError:
            pass


def _ready():
    """A no-op work item: submitting one per worker spawns the pool at once."""
    return os.getpid()


def _call_with_task(fn, args):
    return fn(*args[:1], _WORKER_TASK[0], *args[1:])


def _call_with_scattered(fn, task, args):
    return fn(*args[:1], task, *args[1:])


class Evaluator:
    """Runs ``fn(item, task, *rest)`` for a list of ``(item, *rest)`` argument
    tuples and returns the results in order."""

    #: The results stay in this process (no pickling of what they hold).
    local = False

    #: Work items that run at once (chunks of this many keep a time limit).
    width = 1
    #: Campaign threads a work item may use (None: every core; 1 in workers).
    campaign_jobs = None

    def start(self, task):
        """Ship the task's rows where the items run (once per search)."""
        self.task = task

    def map(self, fn, items):
        raise NotImplementedError

    def close(self):
        """Release what :meth:`start` opened."""


class LocalEvaluator(Evaluator):
    """This process, one item after the other."""

    local = True

    def map(self, fn, items):
        for args in items:
            yield fn(args[0], self.task, *args[1:])


class PoolEvaluator(Evaluator):
    """``jobs`` worker processes (``spawn``)."""

    campaign_jobs = 1

    def __init__(self, jobs):
        self.width = int(jobs)
        self.pool = None

    def start(self, task):
        self.task = task
        self.pool = cf.ProcessPoolExecutor(max_workers=self.width,
                                           mp_context=mp.get_context("spawn"),
                                           initializer=_set_task, initargs=(task,))
        # the executor spawns a process per submission while none is idle: one
        # no-op per worker starts them all now (spawn, imports, the task's rows),
        # overlapped with this process's screening of the first round
        for _ in range(self.width):
            self.pool.submit(_ready)

    def map(self, fn, items):
        futs = [self.pool.submit(_call_with_task, fn, tuple(args)) for args in items]
        try:
            for f in futs:
                yield f.result()
        finally:
            for f in futs:
                f.cancel()

    def close(self):
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None


class DaskEvaluator(Evaluator):
    """A Dask cluster (a connected ``Client``; one opened from an address is
    closed by :meth:`close`)."""

    campaign_jobs = 1

    def __init__(self, client, own=False):
        self.client, self.own = client, own
        try:
            n = sum(self.client.nthreads().values())
        except Exception:          # a client-like object without nthreads
            n = 2
        self.width = max(1, int(n))

    def start(self, task):
        self.task = self.client.scatter(task, broadcast=True)

    def map(self, fn, items):
        futs = [self.client.submit(_call_with_scattered, fn, self.task, tuple(args), pure=False)
                for args in items]
        try:
            for f in futs:
                yield f.result()
        finally:
            self.client.cancel(futs)

    def close(self):
        if self.own:
            self.client.close()


def connect(scheduler):
    """``(client, opened_here)`` of a scheduler address or a connected client."""
    if not isinstance(scheduler, str):
        for m in ("scatter", "submit", "gather"):
            if not callable(getattr(scheduler, m, None)):
                raise TypeError("scheduler must be an address ('tcp://host:8786') or a "
                                f"dask.distributed.Client; got {type(scheduler).__name__}")
        return scheduler, False
    try:
        from dask.distributed import Client
    except ImportError:
        raise ValueError("scheduler needs dask.distributed: pip install "
                         "'edgecode[distributed]'") from None
    try:
        return Client(scheduler, timeout=30), True
    except (OSError, TimeoutError) as exc:
        raise ValueError(f"cannot reach the Dask scheduler at {scheduler}: {exc}") from None


def evaluator_for(jobs=1, scheduler=None):
    """The evaluator of ``jobs`` processes or of a Dask ``scheduler``."""
    from firmware_sim.profiles import DeviceProfile
    shippable(DeviceProfile)
    if scheduler is not None:
        return DaskEvaluator(*connect(scheduler))
    if int(jobs) == 1:
        return LocalEvaluator()
    n = (os.cpu_count() or 1) if int(jobs) == -1 else int(jobs)
    return PoolEvaluator(n) if n > 1 else LocalEvaluator()
