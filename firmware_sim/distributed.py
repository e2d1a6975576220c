"""Campaign batches on a Dask cluster, with the counts of a local run.

``run_campaign(.., client=...)`` sends the bit-fault batches of each grid
value to a ``dask.distributed`` cluster. A campaign's work is already cut
into batches of about 4 Mi wire bits (``campaign.BATCH_BITS``), each with its
own seed (``SeedSequence(random_state).spawn(grid)[k].spawn(n_batches)[b]``):
a task is a contiguous range of batches (:data:`CHUNK_BATCHES`, a few seconds
of work), the worker rebuilds the device from the container bytes and the
points (scattered once to every worker), runs its batches and returns two
int64 count vectors. The sums are the local run's, bit for bit, whatever the
cluster (``tests/test_distributed.py`` checks it on a ``LocalCluster`` of two
worker processes).

Needs ``dask[distributed]`` (``pip install 'edgecode[distributed]'``) on
the client and the workers; this module never imports it (firmware_sim
imports numpy and numba only): the caller passes a connected ``Client``.
"""

import numpy as np

__all__ = ["bits_point_on_cluster", "CHUNK_BATCHES", "check_client"]

#: Batches per task: 16 x 4 Mi wire bits, about 1-4 s of work on one core for
#: the fast paths (naive Bayes, ECOC) and more on the plain path.
CHUNK_BATCHES = 16


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


def _prepare(payload):
    """Device, clean stream and batch runner of a scattered payload (worker side)."""
    from . import campaign as c
    from .device import load

    device = load(payload["image"])
    frames = device.encode(payload["X"])
    clean = c._clean_labels(device, frames)
    stream, n_sym = c._stream(device, frames, payload["site"])
    run = c._batch_runner(device, stream, clean, payload["y"], payload["fault"],
                          payload["n_trials"], n_sym, payload["site"])
    return stream, run


def _chunk(payload, entropy, spawn_key, first, stop):
    """Counts of batches [first, stop) of one grid value (a Dask task)."""
    from . import campaign as c

    stream, run = _prepare(payload)
    t, width = stream.shape
    batches = list(c._batches(t, payload["n_trials"], width))
    seeds = np.random.SeedSequence(entropy, spawn_key=spawn_key).spawn(len(batches))
    return c._run_batches(run, batches[first:stop], seeds[first:stop], t, n_jobs=1)


def bits_point_on_cluster(client, device, X, y, fault, seed, n_trials, site,
                          chunk_batches=None):
    """``(same, correct or None)`` of one grid value, computed on a cluster:
    equal to ``campaign._bits_point(.., seed, ..)`` on this machine."""
    from . import campaign as c

    client = check_client(client)
    frames = device.encode(X)
    t = frames.shape[0]
    stream, _ = c._stream(device, frames, site)
    n_batches = len(list(c._batches(t, n_trials, stream.shape[1])))
    payload = {"image": device.container.tobytes(), "X": np.asarray(X), "y": y,
               "fault": fault, "n_trials": int(n_trials), "site": site}
    [remote] = client.scatter([payload], broadcast=True, hash=False)   # a fresh key per run
    step = max(1, int(CHUNK_BATCHES if chunk_batches is None else chunk_batches))
    futures = [client.submit(_chunk, remote, seed.entropy, tuple(seed.spawn_key), a,
                             min(a + step, n_batches), pure=False)
               for a in range(0, n_batches, step)]
    same = np.zeros(t, np.int64)
    correct = np.zeros(t, np.int64)
    for s, k in client.gather(futures):
        same += s
        correct += k
    return same, (None if y is None else correct)
