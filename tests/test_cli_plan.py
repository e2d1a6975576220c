"""``edgecode plan`` at scale: method choice shown, progress, compact output, plan files,
multi-class CSVs, clean interrupts."""

import csv
import gzip
import io
import json

import numpy as np
import pytest

import edgecode.redundancy
from export.cli import main
from export.cli import naive_bayes as cli_nb


@pytest.fixture
def wide_csv(tmp_path):
    """60 binary features, a 3-valued label, a split and a non-feature 'file' column (gzip)."""
    rng = np.random.default_rng(0)
    n, rows = 60, 300
    y = rng.integers(0, 3, rows)
    p = rng.beta(1, 3, (3, n))
    X = (rng.random((rows, n)) < p[y]).astype(int)
    path = tmp_path / "wide.csv.gz"
    with gzip.open(path, "wt", newline="") as fh:
        w = csv.writer(fh)
        w.writerow([f"f{j}" for j in range(n)] + ["class", "split", "file"])
        for i in range(rows):
            w.writerow([*X[i], "abc"[y[i]], "train" if i < 200 else "test", f"doc{i}.txt"])
    return path


def test_wide_plan_is_summarised_certified_and_written(wide_csv, tmp_path, capsys):
    js, cs = tmp_path / "plan.json", tmp_path / "plan.csv"
    assert main(["plan", str(wide_csv), "--positive", "b", "--ignore", "file", "--eps", "0.2",
                 "--budget", "40", "--plan-out", str(js)]) == 0
    out = capsys.readouterr()
    text = out.out
    assert "n = 60 features, t = 100 planning points" in text
    assert "method auto -> grid: n = 60 > 20 features" in text
    assert "copies per feature:" in text and "most protected (copies):" in text
    assert "certified" in text and "[" in text
    last = [line for line in out.err.splitlines() if line.startswith("greedy plan: 20/20")]
    assert len(last) == 1 and " 1-SCP " in last[0]     # not a TTY: plain lines, the feature
    doc = json.loads(js.read_text())
    assert doc["certified_by"] == "bounds" and doc["scp_method"] == "grid"
    assert doc["planned_scp_lower"] <= doc["planned_mean_scp"] <= doc["planned_scp_upper"]
    feats = doc["features"]
    assert len(feats) == 60 and feats[0]["name"] == "f0"
    assert sum(f["copies"] for f in feats) == 60 + 40
    assert main(["plan", str(wide_csv), "--positive", "b", "--ignore", "file", "--eps", "0.2",
                 "--budget", "40", "--plan-out", str(cs), "--method", "grid"]) == 0
    with open(cs) as fh:
        rows = list(csv.DictReader(fh))
    assert [r["copies"] for r in rows] == [str(f["copies"]) for f in feats]


def test_small_plan_lists_every_feature(capsys):
    assert main(["plan", "house_votes", "--eps", "0.2", "--R", "1"]) == 0
    text = capsys.readouterr().out
    assert "method auto -> exact: n = 16 <= 20 features" in text
    assert "greedy      3.1093e-02  1 1 5 7 5 1 3 5 3 1 1 5 3 3 3 1" in text


@pytest.mark.parametrize("extra, msg", [
    ([], "--positive VALUE"),
    (["--positive", "b"], "--ignore file"),
    (["--positive", "z", "--ignore", "file"], "positive='z' is not a value"),
    (["--positive", "b", "--ignore", "nosuch"], "cannot ignore ['nosuch']"),
])
def test_csv_errors_say_what_to_do(wide_csv, extra, msg, capsys):
    assert main(["plan", str(wide_csv), "--eps", "0.2", "--budget", "4", *extra]) == 2
    err = capsys.readouterr().err
    assert msg in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_long_run_warns_with_the_expected_time(monkeypatch, capsys):
    monkeypatch.setattr(edgecode.redundancy, "estimate_plan_seconds", lambda *a, **k: 5000.0)
    assert main(["plan", "house_votes", "--eps", "0.2", "--budget", "2"]) == 0
    assert "warning: expected to take about 1 h 23 min" in capsys.readouterr().out


def test_ctrl_c_leaves_nothing_half_written(tmp_path, monkeypatch, capsys):
    import export.naive_bayes as exp_nb
    real = exp_nb.export_protected_nb
    art, onx, pl = tmp_path / "a.edgc", tmp_path / "a.onnx", tmp_path / "a.json"
    art.write_bytes(b"previous artifact")

    def interrupted(*args, **kwargs):
        real(*args, **kwargs)          # the temporary files are complete on disk ...
        raise KeyboardInterrupt        # ... and then the user presses Ctrl-C

    monkeypatch.setattr(exp_nb, "export_protected_nb", interrupted)
    code = main(["plan", "house_votes", "--eps", "0.2", "--budget", "4", "--out", str(art),
                 "--onnx", str(onx), "--plan-out", str(pl)])
    assert code == 130
    assert "interrupted" in capsys.readouterr().err
    assert art.read_bytes() == b"previous artifact"       # not replaced
    assert not onx.exists() and not pl.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.edgc"]   # no partial files


def test_progress_on_a_terminal_has_an_eta():
    """The plan's progress is export.progress.Progress: step, feature, running 1-SCP, ETA."""
    buf = io.StringIO()
    reporter, prog = cli_nb._plan_progress(["a", "b"], stream=buf, tty=True)
    with reporter:
        prog(1, 2, 1, 0.9)
        prog(2, 2, 0, 0.95)
    text = buf.getvalue()
    assert text.startswith("\rgreedy plan [") and "ETA" in text and " b 1-SCP 1.000e-01" in text
    assert "2/2 a 1-SCP 5.000e-02" in text
    assert text.endswith("\n")
    buf = io.StringIO()
    reporter, prog = cli_nb._plan_progress(None, stream=buf, tty=False, every=1e9)
    for s in range(1, 6):
        prog(s, 5, 0, 0.5)
    lines = buf.getvalue().splitlines()
    assert len(lines) == 2 and lines[0].startswith("greedy plan: 1/5 (20%)")
    assert " 0 1-SCP 5.000e-01" in lines[0] and "ETA" in lines[0]
    assert lines[1].startswith("greedy plan: 5/5 (100%)")     # first and last within `every`
    buf = io.StringIO()
    reporter, prog = cli_nb._plan_progress(["a"], stream=buf, quiet=True)
    prog(1, 1, 0, 0.5)
    assert buf.getvalue() == ""


def test_a_budget_beyond_any_useful_plan_stops_early_and_says_so(tmp_path, capsys):
    """The issue's case: 10**9 bits on house votes used to announce ~24,576,000 s and
    run on although 1-SCP reaches 0 after about a thousand steps."""
    js = tmp_path / "plan.json"
    assert main(["plan", "house_votes", "--eps", "0.2", "--budget", "1000000000",
                 "--plan-out", str(js)]) == 0
    out = capsys.readouterr().out
    assert "warning" not in out
    stop = [line for line in out.splitlines() if "stopped early" in line]
    assert len(stop) == 1
    assert stop[0].startswith("greedy plan stopped early at step ")
    assert " of 500,000,000: " in stop[0] and "bits unused" in stop[0]
    assert "representable" in stop[0] or "1-SCP is 0" in stop[0]
    doc = json.loads(js.read_text())
    spent = sum(f["repetitions"] for f in doc["features"])
    assert 0 < spent < 2000 and doc["unused_bits"] == 10 ** 9 - 2 * spent
    assert doc["stop_reason"] and doc["budget_bits"] == 10 ** 9
    assert f"at step {spent:,} of" in stop[0]


def test_ctrl_c_during_a_long_plan_exits_130_and_writes_nothing(tmp_path):
    """A real SIGINT in a child running ``edgecode plan`` (eps = 0.45: minutes of useful
    steps): status 130, the interrupt message, no output file, no partial file."""
    import sys

    from interrupt import run_and_interrupt
    argv = [sys.executable, "-u", "-c", "import sys; from export.cli import main; "
            "sys.exit(main(sys.argv[1:]))", "plan", "house_votes", "--eps", "0.45", "--budget", "1000000000",
            "--plan-out", str(tmp_path / "plan.json"), "--out", str(tmp_path / "hv.edgc")]
    # the last line before planning starts is the expected-time warning
    code, err = run_and_interrupt(argv=argv, wait=1.5, marker="expected to take about")
    assert code == 130, err
    assert "interrupted" in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []
