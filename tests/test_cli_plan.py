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
    assert "greedy plan: step 20/20 (100%)" in out.err          # not a TTY: plain lines
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
    assert "warning: expected to take about 5000 s" in capsys.readouterr().out


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
    buf = io.StringIO()
    prog = cli_nb._Progress("greedy plan", ["a", "b"], stream=buf, tty=True)
    prog(1, 2, 1, 0.9)
    prog(2, 2, 0, 0.95)
    text = buf.getvalue()
    assert text.startswith("\rgreedy plan [") and "ETA" in text and " b 1-SCP 1.000e-01" in text
    assert text.endswith("\n")
    buf = io.StringIO()
    prog = cli_nb._Progress("greedy plan", None, stream=buf, tty=False, every=1e9)
    for s in range(1, 6):
        prog(s, 5, 0, 0.5)
    assert buf.getvalue().count("\n") == 1            # only the last line, within `every`
