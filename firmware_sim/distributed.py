"""Campaign batches on a Dask cluster, with the counts of a local run.

``run_campaign(.., client=...)`` sends the bit-fault batches of each grid
value to a ``dask.distributed`` cluster. A campaign's work is already cut
into batches of about 4 Mi wire bits (``campaign.BATCH_BITS``), each with its
own seed (``SeedSequence(random_state).spawn(grid)[k].spawn(n_batches)[b]``):
a task is a contiguous range of batches (:data:`CHUNK_BATCHES`, a few seconds
of work) and the grid value's fault; the container bytes and the points are
scattered to every worker once per campaign, and a worker loads the device
and computes the clean stream once (:func:`_prepare`), then runs its tasks'
batches and returns two int64 count vectors. The sums are the local run's, bit for bit, whatever the
cluster (``tests/test_parallel_campaign.py`` checks it on a ``LocalCluster``
of two worker processes).

Bounded and interruptible: at most :data:`MAX_IN_FLIGHT` tasks (or twice the
cluster's threads, if more) are submitted at a time, the next ones as
results come back, so a campaign of 10**12 trials holds a few dozen futures,
not millions; a batch's seed is computed from its index
(:class:`firmware_sim._parallel.SeededBatches`), never by spawning every
seed. Ctrl-C (or an exception from ``progress``) cancels the submitted
futures (``client.cancel``) and is raised.

Needs ``dask[distributed]`` (``pip install 'edgecode[distributed]'``) on
the client and the workers; this module never imports it (firmware_sim
imports numpy and numba only): the caller passes a connected ``Client``.
"""

import numpy as np

__all__ = ["bits_point_on_cluster", "scatter_payload", "CHUNK_BATCHES", "MAX_IN_FLIGHT",
           "check_client"]

#: Batches per task: 16 x 4 Mi wire bits, about 1-4 s of work on one core for
#: the fast paths (naive Bayes, ECOC) and more on the plain path.
CHUNK_BATCHES = 16

#: Tasks submitted and not yet gathered, at most (or twice the cluster's
#: threads when that is more): the client holds a bounded number of futures.
MAX_IN_FLIGHT = 32


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
#: of one campaign share the scattered payload object, so a worker loads the
#: device, encodes the points and computes the clean stream once.
_PREPARED = [None, None]


def _prepare(payload):
    """(device, clean labels, clean stream, alphabet size) of a scattered payload
    (worker side; computed once per payload and worker)."""
    from . import campaign as c
    from .device import load

    if _PREPARED[0] is not payload:
        device = load(payload["image"])
        frames = device.encode(payload["X"])
        clean = c._clean_labels(device, frames)
        stream, n_sym = c._stream(device, frames, payload["site"])
        _PREPARED[:] = [payload, (device, clean, stream, n_sym)]
    return _PREPARED[1]


def _chunk(payload, fault, entropy, spawn_key, first, stop):
    """Counts of batches [first, stop) of one grid value (a Dask task)."""
    from . import campaign as c
    from ._parallel import run_seeded_batches

    device, clean, stream, n_sym = _prepare(payload)
    run = c._batch_runner(device, stream, clean, payload["y"], fault, payload["n_trials"],
                          n_sym, payload["site"])
    t, width = stream.shape
    plan = c._plan(t, payload["n_trials"], width,
                   np.random.SeedSequence(entropy, spawn_key=spawn_key))
    return run_seeded_batches(run, plan, t, n_jobs=1, first=first, stop=stop)


def scatter_payload(client, device, X, y, n_trials, site):
    """Send the container, the points and the labels to every worker once per
    campaign; returns the future the tasks take."""
    payload = {"image": device.container.tobytes(), "X": np.asarray(X), "y": y,
               "n_trials": int(n_trials), "site": site}
    [remote] = check_client(client).scatter([payload], broadcast=True,
                                            hash=False)    # a fresh key per campaign
    return remote


def _in_flight(client):
    """Tasks to keep submitted: :data:`MAX_IN_FLIGHT`, or twice the cluster's
    threads when a ``Client`` tells them and that is more."""
    try:
        threads = sum(dict(client.nthreads()).values())
    except Exception:                # not a dask Client (a test double), or no answer
        threads = 0
    return max(MAX_IN_FLIGHT, 2 * int(threads))


def bits_point_on_cluster(client, remote, fault, seed, t, width, n_trials, has_y,
                          chunk_batches=None, progress=None):
    """``(same, correct or None)`` of one grid value, computed on a cluster from
    the payload :func:`scatter_payload` sent (``t`` points, ``width`` positions
    per stream row): equal to ``campaign._bits_point(.., seed, ..)`` on this
    machine.

    Tasks of ``chunk_batches`` batches go out a window at a time and are
    gathered in order; ``progress(rows_done)`` after each. On any exception
    (Ctrl-C, an error in a task or in ``progress``) the outstanding futures
    are cancelled before it is raised.
    """
    from collections import deque

    from . import campaign as c

    plan = c._plan(t, n_trials, width, seed)
    n_batches = len(plan)
    step = max(1, int(CHUNK_BATCHES if chunk_batches is None else chunk_batches))
    window = _in_flight(client)
    starts = iter(range(0, n_batches, step))
    pending = deque()
    same = np.zeros(t, np.int64)
    correct = np.zeros(t, np.int64)
    rows_done = 0

    def submit():
        a = next(starts, None)
        if a is not None:
            b = min(a + step, n_batches)
            pending.append((b, client.submit(_chunk, remote, fault, seed.entropy,
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
            rows_done = start + nrows
            submit()
            if progress is not None:
                progress(rows_done)
    except BaseException:
        futures = [f for _, f in pending]
        if futures:
            try:
                client.cancel(futures)
            except Exception:          # the client is gone: nothing left to cancel
                pass
        raise
    return same, (correct if has_y else None)
