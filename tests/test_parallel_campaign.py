"""Campaigns on every core and on a Dask cluster give the counts of a serial run
(issue 14): a seed per fixed batch of (point, trial) rows, never per thread
or worker."""

import os

import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.tree import DecisionTreeClassifier

import firmware_sim
from edgecode import datasets
from edgecode.ecoc.classifier import ECOCClassifier
from edgecode.hashing import SSBC
from edgecode.naive_bayes import BinaryNaiveBayes
from export.ecoc import export_ecoc
from export.naive_bayes import export_protected_nb
from export.ssbc import export_ssbc
from firmware_sim.engine import batches, executors
from firmware_sim.campaign import run_campaign, simulate
from firmware_sim.engine.batches import run_seeded_batches
from firmware_sim.engine.executors import BitJob, ThreadExecutor
from firmware_sim.engine.runner import plain_runner
from firmware_sim.engine.streams import clean_labels, stream
from firmware_sim.faults import BSC, StuckAt, make_fault


def _nb():
    d = datasets.load("house_votes")
    nb = BinaryNaiveBayes().fit(d.X, d.y)
    reps = np.zeros(16, int)
    reps[[2, 3, 4]] = [1, 2, 1]
    return firmware_sim.load(export_protected_nb(nb, reps).container), d.X, d.y


def _digits():
    X, y = load_digits(return_X_y=True)
    return X[:300], y[:300]


def _ecoc(learner, code, N=2):
    X, y = _digits()
    clf = ECOCClassifier(learner, code=code, N=N, n_columns=12, random_state=0).fit(X, y)
    return firmware_sim.load(export_ecoc(clf, X).container), X, y


def _ssbc():
    X, y = _digits()
    m = SSBC(n_bits=16, random_state=0).fit(X.astype(float))
    return firmware_sim.load(export_ssbc(m, X_table=X, y_table=y).container), X, y


CASES = {
    "nb_wire_fast": (_nb, BSC(0.1), None),
    "nb_burst": (_nb, make_fault("burst", flip_rate=0.1, mean_burst=4), None),
    "nb_stuck_plain": (_nb, StuckAt(rate=0.05), None),
    "ecoc_binary_fast": (lambda: _ecoc(LogisticRegression(max_iter=500), "dense_random"),
                         BSC(0.1), None),
    "ecoc_nary_symbols": (lambda: _ecoc(DecisionTreeClassifier(max_depth=4), "nary", 3),
                          BSC(0.1), None),
    "ecoc_wire_plain": (lambda: _ecoc(DecisionTreeClassifier(max_depth=4), "nary", 3),
                        BSC(0.001), "wire"),
    "ssbc_bits": (_ssbc, BSC(0.05), None),
}


@pytest.fixture
def small_batches(monkeypatch):
    """Many batches from few trials: the thread split is exercised."""
    monkeypatch.setattr(batches, "BATCH_BITS", 4096)


@pytest.mark.parametrize("name", sorted(CASES))
def test_counts_do_not_depend_on_the_thread_count(name, small_batches):
    make, fault, site = CASES[name]
    dev, X, y = make()
    y_idx = np.unique(y, return_inverse=True)[1]
    runs = [run_campaign(dev, X, fault, n_trials=40, random_state=7, y=y_idx, site=site,
                         n_jobs=n) for n in (1, 2, 3)]
    ref = runs[0].points[0]
    assert 0 < ref.same_rate < 1 or name == "nb_stuck_plain"
    for r in runs[1:]:
        p = r.points[0]
        assert p.same_per_point == ref.same_per_point
        assert p.accuracy == ref.accuracy


def test_simulate_does_not_depend_on_the_thread_count(small_batches):
    dev, X, y = _ecoc(LogisticRegression(max_iter=500), "dense_random")
    a = simulate(dev, X, 0.1, 30, random_state=5, n_jobs=1)
    b = simulate(dev, X, 0.1, 30, random_state=5, n_jobs=2)
    assert np.array_equal(a.same, b.same) and 0 < a.mean_same_rate < 1


def test_nb_wire_simulate_does_not_depend_on_the_thread_count(monkeypatch):
    """The protected-NB wire simulation (``edgecode simulate``): a seed per fixed
    batch, so 1, 2 and 3 threads give the same counts; per-feature eps too."""
    monkeypatch.setattr(batches, "BATCH_BITS", 4000)   # many batches
    dev, X, y = _nb()
    eps = np.linspace(0.05, 0.3, 16)
    runs = [simulate(dev, X, eps, 25, random_state=3, y=y, n_jobs=n) for n in (1, 2, 3)]
    assert 0 < runs[0].mean_same_rate < 1 and runs[0].correct is not None
    for r in runs[1:]:
        assert np.array_equal(r.same, runs[0].same)
        assert np.array_equal(r.correct, runs[0].correct)
    gen = simulate(dev, X, eps, 25, random_state=np.random.default_rng(3), n_jobs=2)
    assert gen.same.sum() > 0
    with pytest.raises(TypeError, match="random_state"):
        simulate(dev, X, eps, 25, random_state=1.5)


def test_threads_split_the_same_seeds_as_the_plain_path(small_batches):
    """Fast path with threads == plain path serially, trial for trial."""
    dev, X, y = _nb()
    frames = dev.encode(X)
    clean = clean_labels(dev, frames)
    rows, n_sym = stream(dev, frames, "wire")
    job = BitJob(dev, X, y, 20, "wire", rows, n_sym, clean)
    fast = ThreadExecutor(2).count(job, BSC(0.2), np.random.SeedSequence(11))
    plain = run_seeded_batches(plain_runner(dev, "wire", BSC(0.2), rows, clean, y, 20, n_sym),
                               batches.plan_batches(len(X), 20, rows.shape[1],
                                                    np.random.SeedSequence(11)), len(X), 1)
    assert np.array_equal(fast[0], plain[0]) and np.array_equal(fast[1], plain[1])


@pytest.mark.parametrize("n_jobs", [0, -2, 1.5, True])
def test_bad_n_jobs_is_refused(n_jobs):
    dev, X, _ = _nb()
    with pytest.raises(ValueError, match="n_jobs must be None, -1"):
        run_campaign(dev, X[:5], BSC(0.1), n_trials=2, n_jobs=n_jobs)


# ------------------------------------------------------------------ Dask
def _dask():
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        if os.environ.get("EDGECODE_CI"):
            raise
        pytest.skip("dask.distributed is not installed (pip install 'edgecode[distributed]')")
    return Client, LocalCluster


def _cli_campaign(tmp_path, dev, *extra):
    """same_per_point of `edgecode campaign` on house votes with ``extra`` options."""
    import json

    from export.cli import main
    art = tmp_path / "hv.edgc"
    art.write_bytes(dev.container.tobytes())
    out = tmp_path / f"r{len(list(tmp_path.iterdir()))}.json"
    assert main(["campaign", str(art), "--data", "house_votes", "--split", "all", "--fault",
                 "bsc", "--set", "eps=0.1", "--trials", "3000", "--json", str(out),
                 *extra]) == 0
    return json.loads(out.read_text())["points"][0]["same_per_point"]


def test_cli_jobs_give_the_same_counts(tmp_path, small_batches):
    dev, _, _ = _nb()
    assert _cli_campaign(tmp_path, dev, "--jobs", "2") == _cli_campaign(tmp_path, dev,
                                                                         "--jobs", "1")


def test_a_local_cluster_of_two_processes_gives_the_local_counts(monkeypatch, tmp_path):
    Client, LocalCluster = _dask()
    monkeypatch.setattr(executors, "CHUNK_BATCHES", 3)      # several tasks per value
    dev, X, y = _nb()
    grid = [0.05, 0.2]
    local = run_campaign(dev, X, BSC(0.1), "eps", grid, n_trials=3000, random_state=3, y=y,
                         n_jobs=1)
    n_batches = len(batches.plan_batches(len(X), 3000, dev.frame_width, 0))
    assert n_batches >= 6                                      # >= 2 tasks per value
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster:
        with Client(cluster) as client:
            remote = run_campaign(dev, X, BSC(0.1), "eps", grid, n_trials=3000, random_state=3,
                                  y=y, client=client)
            with Client(cluster.scheduler_address) as by_address_client:
                by_address = run_campaign(dev, X, BSC(0.1), "eps", [0.2], n_trials=3000,
                                          random_state=3, y=y, client=by_address_client)
            cli_remote = _cli_campaign(tmp_path, dev, "--scheduler", cluster.scheduler_address)
    assert cli_remote == _cli_campaign(tmp_path, dev, "--jobs", "1")
    for a, b in zip(local.points, remote.points):
        assert a.same_per_point == b.same_per_point and a.accuracy == b.accuracy
    # a one-value grid is child 0 of SeedSequence(3): the first value's counts
    single = run_campaign(dev, X, BSC(0.1), "eps", [0.2], n_trials=3000, random_state=3, y=y,
                          n_jobs=2)
    assert by_address.points[0].same_per_point == single.points[0].same_per_point


def test_a_bad_client_is_refused():
    _dask()
    dev, X, _ = _nb()
    with pytest.raises(TypeError, match="must be a dask.distributed.Client"):
        run_campaign(dev, X[:5], BSC(0.1), n_trials=2, client=42)
    with pytest.raises(TypeError, match="not an address: connect first"):
        run_campaign(dev, X[:5], BSC(0.1), n_trials=2, client="tcp://127.0.0.1:8786")


def test_threads_stop_at_their_next_batch_on_interrupt_or_error():
    """A shared cancel flag: after Ctrl-C (here: progress raising) or an error in
    one thread's batch, each thread finishes at most the batch it is in."""
    import threading
    import time

    from firmware_sim.engine.batches import SeededBatches

    ran, stopped_at = [], []

    def run(start, nrows, rng, same, correct):
        ran.append(start)
        time.sleep(0.005)

    def progress(rows):
        if len(ran) >= 6:
            stopped_at.append(len(ran))
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_seeded_batches(run, SeededBatches(10 ** 12, 1, 0), 1, n_jobs=2, progress=progress)
    assert len(ran) <= stopped_at[0] + 2

    def failing(start, nrows, rng, same, correct):
        ran.append(start)
        if start == 3:
            raise RuntimeError("batch 3 failed")
        time.sleep(0.005)

    ran.clear()
    with pytest.raises(RuntimeError, match="batch 3 failed"):
        run_seeded_batches(failing, SeededBatches(10 ** 12, 1, 0), 1, n_jobs=2)
    assert len(ran) < 1000
    assert not [t for t in threading.enumerate() if t.name.startswith("firmware_sim")]
