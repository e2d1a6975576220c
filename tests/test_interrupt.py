"""Long runs are bounded and silent no more (issue 24): Ctrl-C stops every long
command within seconds with exit status 130 and leaves no output file; the
library's long calls run in bounded memory, report progress between
batches and stop when it raises; sizes that cannot fit are refused before
anything is allocated.

The command-line tests run ``edgecode`` as a child process on work far too
long to finish (10**12 trials), send SIGINT once it has shown progress, and
check the exit status, the time to exit (generous: the machine is shared)
and the output folder.
"""

import os
import signal
import subprocess
import sys
import threading
import time
import tracemalloc

import numpy as np
import pytest

import firmware_sim
from edgecode import datasets
from edgecode.naive_bayes import BinaryNaiveBayes
from export.naive_bayes import export_protected_nb
from firmware_sim.engine import batches, executors
from firmware_sim.campaign import run_campaign, simulate
from firmware_sim.errors import SizeLimitError
from firmware_sim.faults import BSC, ParameterUpset, make_fault
from firmware_sim.sensitivity import single_upset_table

#: ``edgecode`` in this interpreter (export.cli is a package without ``__main__``).
EDGECODE = [sys.executable, "-c", "import sys; from export.cli import main; sys.exit(main())"]

#: Seconds allowed from SIGINT to exit (the target is well under one second;
#: this only guards against a run that ignores the signal on a busy machine).
EXIT_WITHIN = 15
HUGE = str(10 ** 12)


@pytest.fixture(scope="module")
def hv():
    """A protected naive Bayes device on house votes (48 wire bits per point)."""
    d = datasets.load("house_votes")
    nb = BinaryNaiveBayes().fit(d.X, d.y)
    reps = np.ones(16, int)
    return firmware_sim.load(export_protected_nb(nb, reps).container), d.X, d.y


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory, hv):
    """hv.edgc (house votes) and dna.edgc (180 features: about 9000 stored bits,
    an upset table far longer than a test)."""
    folder = tmp_path_factory.mktemp("artifacts")
    dev, _, _ = hv
    (folder / "hv.edgc").write_bytes(dev.container.tobytes())
    rng = np.random.default_rng(0)
    dna = firmware_sim.ProtectedNBDevice.from_arrays(rng.integers(-50, 50, 180), 3,
                                                     np.zeros(180, int), 4,
                                                     meta={"dataset": "dna"})
    (folder / "dna.edgc").write_bytes(dna.container.tobytes())
    return folder


def _interrupt(args, cwd, ready, env=None, timeout=120):
    """Run ``edgecode args`` in ``cwd``; SIGINT once a line of stdout or stderr
    satisfies ``ready``; returns (exit status, seconds from SIGINT to exit,
    stdout, stderr)."""
    proc = subprocess.Popen([*EDGECODE, *args], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **(env or {}), "PYTHONUNBUFFERED": "1"})
    seen = threading.Event()
    out = {"stdout": [], "stderr": []}

    def read(name):
        for line in getattr(proc, name):
            out[name].append(line)
            if ready(line):
                seen.set()

    readers = [threading.Thread(target=read, args=(n,), daemon=True) for n in out]
    for r in readers:
        r.start()
    try:
        assert seen.wait(timeout), (f"no progress within {timeout} s: "
                                    f"{''.join(out['stderr'])[-2000:]}")
        time.sleep(0.3)                       # mid-run, past the first report
        assert proc.poll() is None, "the command finished before it could be interrupted"
        proc.send_signal(signal.SIGINT)
        t0 = time.monotonic()
        rc = proc.wait(timeout=EXIT_WITHIN * 4)
        took = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    for r in readers:
        r.join(timeout=5)
    return rc, took, "".join(out["stdout"]), "".join(out["stderr"])


def _progress_line(line):
    return "ETA" in line


def _files(folder):
    return sorted(p.name for p in folder.iterdir())


# ---------------------------------------------------------------- command line
def test_sigint_stops_simulate(artifacts):
    rc, took, _, err = _interrupt(["simulate", "hv.edgc", "--eps", "0.2", "--trials", HUGE,
                                   "--data", "house_votes"], artifacts, _progress_line)
    assert rc == 130 and took < EXIT_WITHIN, err
    assert "simulate: " in err and "ETA" in err and "interrupted" in err


def test_sigint_stops_a_threaded_campaign_and_writes_nothing(artifacts, tmp_path):
    before = _files(artifacts)
    rc, took, _, err = _interrupt(
        ["campaign", str(artifacts / "hv.edgc"), "--data", "house_votes", "--fault", "bsc",
         "--param", "eps", "--grid", "0.1,0.2", "--trials", HUGE, "--jobs", "2",
         "--json", "c.json"], tmp_path, _progress_line)
    assert rc == 130 and took < EXIT_WITHIN, err
    assert "campaign: " in err and "eps=0.1 (1/2)" in err
    assert _files(tmp_path) == [] and _files(artifacts) == before      # no temporaries either
    assert not [t for t in threading.enumerate() if t.name.startswith("firmware_sim")]


def test_sigint_stops_an_image_fault_campaign(artifacts, tmp_path):
    rc, took, _, err = _interrupt(
        ["campaign", str(artifacts / "hv.edgc"), "--data", "house_votes", "--fault", "seu",
         "--set", "count=1", "--trials", str(10 ** 7), "--json", "s.json"], tmp_path,
        _progress_line)
    assert rc == 130 and took < EXIT_WITHIN, err
    assert _files(tmp_path) == []


def test_sigint_stops_upsets_and_writes_nothing(artifacts, tmp_path):
    rc, took, _, err = _interrupt(["upsets", str(artifacts / "dna.edgc"), "--max-bits",
                                   "100000", "--json", "u.json"], tmp_path, _progress_line)
    assert rc == 130 and took < EXIT_WITHIN, err
    assert "upsets: " in err and "bits" in err
    assert _files(tmp_path) == []


def test_sigint_stops_plan_and_writes_nothing(tmp_path):
    rc, took, out, err = _interrupt(
        ["plan", "dna", "--eps", "0.2", "--budget", "60", "--out", "p.edgc", "--onnx",
         "p.onnx", "--plan-out", "p.json"], tmp_path,
        lambda line: line.startswith(("method", "expected", "warning")) or "ETA" in line)
    assert rc == 130 and took < EXIT_WITHIN, err
    assert _files(tmp_path) == []


def test_sigint_stops_the_demo_and_removes_its_folder(tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    rc, took, out, err = _interrupt(["demo", "--trials", HUGE], tmp_path,
                                    lambda line: line.startswith("-- simulate")
                                    or "simulate: " in line, env={"TMPDIR": str(tmp)})
    assert rc == 130 and took < EXIT_WITHIN, err
    assert not [p for p in tmp.iterdir() if p.name.startswith("edgecode-demo-")]


def test_sigint_stops_budget_and_writes_nothing(tmp_path):
    rc, took, out, err = _interrupt(
        ["budget", "digits", "--profile", "cortex-m4", "--eps", "0.05", "--no-build",
         "--json", "f.json", "--export", "best"], tmp_path,
        lambda line: line.startswith("budget: 1/"))
    assert rc == 130 and took < EXIT_WITHIN, err
    assert _files(tmp_path) == []


def test_sigint_stops_an_ecoc_fit_and_writes_nothing(tmp_path):
    """A fit of many slow learners (the users' 65 s logistic fit) shows a line per
    learner and stops between them."""
    rc, took, out, err = _interrupt(
        ["ecoc", "digits", "--learner", "logistic", "--code", "dense_random", "--n-columns",
         "60", "--out", "d.edgc", "--onnx", "d.onnx"], tmp_path,
        lambda line: line.startswith("[ECOCClassifier] fit column 1/60"))
    assert rc == 130 and took < EXIT_WITHIN, err
    assert "ETA" in err and _files(tmp_path) == []


def test_sigint_stops_firmware_check_and_writes_nothing(artifacts, tmp_path):
    import shutil
    if shutil.which("gcc") is None and not os.environ.get("EDGECODE_CI"):
        pytest.skip("no C compiler")
    rc, took, out, err = _interrupt(
        ["firmware", str(artifacts / "dna.edgc"), "--out", "fw", "--check", "--random-frames",
         "100000"], tmp_path, lambda line: line.startswith(("wrote", "built")))
    assert rc == 130 and took < EXIT_WITHIN, err
    assert _files(tmp_path) == []


# ---------------------------------------------------------------- the library
class _StopAfter:
    """A progress callable that raises KeyboardInterrupt at its ``n``-th call."""

    def __init__(self, n=3):
        self.n, self.calls = n, []

    def __call__(self, done, total, text=""):
        self.calls.append((done, total, text))
        if len(self.calls) >= self.n:
            raise KeyboardInterrupt


def _bounded_interrupt(fn, limit_mb=256):
    """Run ``fn()`` (which must raise KeyboardInterrupt); its peak traced memory in MiB."""
    tracemalloc.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            fn()
        peak = tracemalloc.get_traced_memory()[1] / 2 ** 20
    finally:
        tracemalloc.stop()
    assert peak < limit_mb
    return peak


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_simulate_of_1e12_trials_runs_in_bounded_memory_and_stops(hv, n_jobs):
    dev, X, y = hv
    stop = _StopAfter(3)
    _bounded_interrupt(lambda: simulate(dev, X, 0.1, 10 ** 12, random_state=0, y=y,
                                        n_jobs=n_jobs, progress=stop))
    done = [c[0] for c in stop.calls]
    assert done == sorted(done) and 0 < done[-1] < stop.calls[0][1] == len(X) * 10 ** 12
    assert not [t for t in threading.enumerate() if t.name.startswith("firmware_sim")]


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_generic_simulate_of_1e12_trials_stops(hv, n_jobs):
    dev, X, _ = hv          # at the intermediate site: the engine's generic path
    _bounded_interrupt(lambda: simulate(dev, X, 0.1, 10 ** 12, site="intermediate",
                                        n_jobs=n_jobs, progress=_StopAfter(3)))


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_campaign_of_1e12_trials_runs_in_bounded_memory_and_stops(hv, n_jobs):
    dev, X, y = hv
    stop = _StopAfter(4)
    _bounded_interrupt(lambda: run_campaign(dev, X, BSC(0.1), "eps", [0.05, 0.1], 10 ** 12,
                                            y=y, n_jobs=n_jobs, progress=stop))
    assert stop.calls[0][1] == 2 * len(X) * 10 ** 12
    assert all(text == "eps=0.05 (1/2)" for _, _, text in stop.calls)
    assert not [t for t in threading.enumerate() if t.name.startswith("firmware_sim")]


def test_image_fault_campaign_reports_progress_and_stops(hv):
    dev, X, y = hv
    stop = _StopAfter(3)
    _bounded_interrupt(lambda: run_campaign(dev, X, ParameterUpset(count=1), n_trials=10 ** 7,
                                            y=y, progress=stop))
    assert stop.calls[-1][0] % len(X) == 0 and stop.calls[-1][0] > 0


def test_upset_table_reports_progress_and_stops(hv):
    dev, X, _ = hv
    stop = _StopAfter(2)
    with pytest.raises(KeyboardInterrupt):
        single_upset_table(dev, X, progress=stop)
    assert stop.calls[0][2] == "bits"
    assert stop.calls[0][1] == ParameterUpset(count=1).targeted_bits(dev.container)


def test_progress_reaches_the_total_once_and_counts_stay_the_same(hv):
    dev, X, y = hv
    calls = []
    a = simulate(dev, X, 0.1, 2000, random_state=4, y=y, progress=lambda *c: calls.append(c))
    assert calls[-1] == (len(X) * 2000, len(X) * 2000)
    assert [c for c in calls if c[0] == c[1]] == [calls[-1]]
    b = simulate(dev, X, 0.1, 2000, random_state=4, y=y)
    assert np.array_equal(a.same, b.same) and np.array_equal(a.correct, b.correct)
    calls.clear()
    res = run_campaign(dev, X, BSC(0.1), "eps", [0.05, 0.1], 300, progress=lambda *c:
                       calls.append(c))
    total = 2 * len(X) * 300
    assert calls[-1] == (total, total, "eps=0.1 (2/2)") and res.n_trials == 300


def test_narrow_frames_count_in_pieces_with_the_same_result(monkeypatch):
    """One wire bit per point: 4 Mi rows a batch, counted 64 Ki rows at a time;
    the counts do not depend on the piece size, and are those of the code
    before issue 24 (which counted a whole batch at once). Issue 25: simulate
    draws its flips with the engine's one BSC sampler (that of
    ``run_campaign(.., BSC(eps))``), not the channel's: [399499, 399935] before."""
    dev = firmware_sim.ProtectedNBDevice.from_arrays([2], -1, [0])
    X = [[0], [1]]
    assert simulate(dev, X, 0.2, 500_000, random_state=1).same.tolist() == [399868, 399749]
    assert [p.same_per_point for p in run_campaign(dev, X, BSC(0.2), "eps", [0.1, 0.3],
                                                   300_000, random_state=1).points] == \
        [[270270, 270035], [210106, 209997]]
    ref = [run_campaign(dev, X, f, n_trials=3_000_000, random_state=1).points[0].same_per_point
           for f in (BSC(0.2), make_fault("stuck", rate=0.3))]
    sim = simulate(dev, X, 0.2, 3_000_000, random_state=2).same
    monkeypatch.setattr(batches, "SUB_ROWS", 999)
    assert ref == [run_campaign(dev, X, f, n_trials=3_000_000, random_state=1)
                   .points[0].same_per_point for f in (BSC(0.2), make_fault("stuck", rate=0.3))]
    assert np.array_equal(sim, simulate(dev, X, 0.2, 3_000_000, random_state=2).same)


def test_a_seed_sequence_moves_on_as_spawn_moved_it(hv):
    dev, X, _ = hv
    ss = np.random.SeedSequence(5)
    simulate(dev, X, 0.1, 1000, random_state=ss)
    n_batches = len(batches.plan_batches(len(X), 1000, dev.frame_width, 0))
    assert ss.n_children_spawned == n_batches
    ss2 = np.random.SeedSequence(5)
    simulate(dev, X, 0.1, 30, random_state=ss2, site="intermediate")
    assert ss2.n_children_spawned == 1


# ---------------------------------------------------------------- refusals
def test_sizes_that_cannot_fit_are_refused_before_anything_is_allocated(hv):
    import itertools

    dev, X, _ = hv
    with pytest.raises(SizeLimitError, match=r"n_trials=10000000000000000000: 435 points"):
        simulate(dev, X, 0.1, 10 ** 19)
    with pytest.raises(SizeLimitError, match="int64 row index"):
        simulate(dev, X, 0.1, 10 ** 17, site="intermediate")
    with pytest.raises(SizeLimitError, match="int64 row index"):
        run_campaign(dev, X, BSC(0.1), n_trials=10 ** 17)
    with pytest.raises(SizeLimitError, match=r"grid of 1,000,000,000 values: the campaign's "
                                             r"results"):
        run_campaign(dev, X, BSC(0.1), "eps", range(10 ** 9), n_trials=1)
    tracemalloc.start()
    try:
        with pytest.raises(SizeLimitError, match="grid of"):      # an endless iterator
            run_campaign(dev, X, BSC(0.1), "eps", (0.1 for _ in itertools.count()),
                         n_trials=1)
        assert tracemalloc.get_traced_memory()[1] < 64 * 2 ** 20
    finally:
        tracemalloc.stop()
    with pytest.raises(SizeLimitError, match="error masks"):
        BSC(0.1).error_masks(10 ** 10, 48, np.random.default_rng(0))
    with pytest.raises(SizeLimitError, match="shape="):
        make_fault("burst", flip_rate=0.1, mean_burst=4).sample_states((10 ** 6, 10 ** 6))
    wide = firmware_sim.ProtectedNBDevice.from_arrays(np.ones(16, int), 0,
                                                      np.full(16, 65535), 0)
    with pytest.raises(SizeLimitError, match="transmitted bits"):
        wide.encode(np.zeros((2000, 16), np.uint8))


# ---------------------------------------------------------------- Dask
class _FakeFuture:
    def __init__(self, fn, args):
        self.fn, self.args, self.cancelled = fn, args, False

    def result(self):
        return self.fn(*self.args)


class _FakeClient:
    """A Client's scatter/submit/gather/cancel, run in this process: counts what
    is submitted and cancelled."""

    def __init__(self):
        self.submitted, self.cancelled, self.most_pending = [], [], 0

    def scatter(self, data, broadcast=False, hash=True):
        return list(data)

    def submit(self, fn, *args, pure=True):
        f = _FakeFuture(fn, args)
        self.submitted.append(f)
        pending = sum(1 for g in self.submitted if not hasattr(g, "done"))
        self.most_pending = max(self.most_pending, pending)
        return f

    def gather(self, futures):
        out = []
        for f in futures:
            out.append(f.result())
            f.done = True
        return out

    def cancel(self, futures):
        self.cancelled.extend(futures)


def test_cluster_tasks_go_out_a_window_at_a_time_and_are_cancelled(hv, monkeypatch):
    dev, X, y = hv
    monkeypatch.setattr(executors, "CHUNK_BATCHES", 1)
    client = _FakeClient()
    stop = _StopAfter(5)
    with pytest.raises(KeyboardInterrupt):
        run_campaign(dev, X, BSC(0.1), n_trials=10 ** 12, y=y, client=client, progress=stop)
    assert client.most_pending <= executors.MAX_IN_FLIGHT
    assert len(client.cancelled) == executors.MAX_IN_FLIGHT    # the window, refilled
    # and a run that completes gives the local counts
    monkeypatch.setattr(batches, "BATCH_BITS", 4096)
    local = run_campaign(dev, X, BSC(0.1), n_trials=40, random_state=2, y=y, n_jobs=1)
    remote = run_campaign(dev, X, BSC(0.1), n_trials=40, random_state=2, y=y,
                          client=_FakeClient())
    assert local.points[0].same_per_point == remote.points[0].same_per_point


def test_simulate_takes_an_executor_with_the_local_counts(hv, monkeypatch):
    """Issue 25: where the batches run is an executor passed in, for simulate too."""
    dev, X, y = hv
    monkeypatch.setattr(batches, "BATCH_BITS", 4096)
    local = simulate(dev, X, 0.1, 30, random_state=4, y=y, n_jobs=1)
    client = _FakeClient()
    remote = simulate(dev, X, 0.1, 30, random_state=4, y=y,
                      executor=firmware_sim.DaskExecutor(client, chunk_batches=2))
    assert len(client.submitted) > 1
    assert np.array_equal(local.same, remote.same) and local.accuracy == remote.accuracy
    threads = simulate(dev, X, 0.1, 30, random_state=4, y=y,
                       executor=firmware_sim.ThreadExecutor(2))
    assert np.array_equal(local.same, threads.same)


def test_interrupting_a_dask_campaign_cancels_its_tasks(hv):
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        if os.environ.get("EDGECODE_CI"):
            raise
        pytest.skip("dask.distributed is not installed (pip install 'edgecode[distributed]')")
    dev, X, y = hv
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        with pytest.raises(KeyboardInterrupt):
            run_campaign(dev, X, BSC(0.1), n_trials=10 ** 12, y=y, client=client,
                         progress=_StopAfter(3))
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and any(
                k.startswith("_chunk") for k in cluster.scheduler.tasks):
            time.sleep(0.1)
        assert not [k for k in cluster.scheduler.tasks if k.startswith("_chunk")]


def test_run_simulate_reports_progress_unless_quiet(artifacts, capsys):
    from export.cli.naive_bayes import run_simulate
    for quiet in (False, True):
        run_simulate(str(artifacts / "hv.edgc"), 0.2, 100, dataset="house_votes", quiet=quiet)
        err = capsys.readouterr().err
        assert ("simulate: 43,500/43,500 (100%)" in err) != quiet and (err == "") == quiet
