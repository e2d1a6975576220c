"""``edgecode hash`` and the SSBC demo stage (parser built here, so the test does
not depend on the command being listed in export.cli.COMMAND_MODULES)."""

import argparse
import io

import numpy as np
import pytest

from export.cli import hashing


def _run(argv):
    p = argparse.ArgumentParser(prog="edgecode")
    sub = p.add_subparsers(dest="command", required=True)
    hashing.register(sub)
    args = p.parse_args(argv)
    args.func(args)


def test_hash_digits_exports_and_reports(tmp_path, capsys):
    art, onx = tmp_path / "d.edgc", tmp_path / "d.onnx"
    _run(["hash", "digits", "--bits", "16", "--anchors", "64", "--sketch", "24",
          "--out", str(art), "--onnx", str(onx)])
    text = capsys.readouterr().out
    assert "mAP" in text and "LSH mAP" in text and "device (fixed-point)" in text
    assert art.exists() and onx.exists()


def test_hash_csv_with_split_and_baseline(tmp_path, capsys):
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(c, 1.0, (60, 4)) for c in (0, 5)])
    y = np.repeat(["a", "b"], 60)
    split = np.where(np.arange(120) % 4 == 0, "test", "train")
    path = tmp_path / "p.csv"
    lines = ["f0,f1,f2,f3,class,split"] + [
        ",".join([*map(str, x), c, s]) for x, c, s in zip(X, y, split)]
    path.write_text("\n".join(lines) + "\n")
    _run(["hash", str(path), "--method", "itq", "--bits", "4"])
    text = capsys.readouterr().out
    assert "itq 4 bits on 90 database / 30 query" in text
    _run(["hash", str(path), "--method", "sh", "--bits", "6"])      # spectral hashing
    assert "sh 6 bits on 90 database / 30 query" in capsys.readouterr().out
    with pytest.raises(ValueError, match="no device export"):
        _run(["hash", str(path), "--method", "lsh", "--bits", "4", "--out",
              str(tmp_path / "x.edgc")])


def test_demo_stage(tmp_path):
    buf = io.StringIO()
    res = hashing.run_demo_stage(tmp_path, trials=200, stream=buf)
    assert res["onnx_agrees"] and res["map"] > res["lsh_map"]
    assert res["bit_agreement"] > 0.99
    assert "device k-NN accuracy" in buf.getvalue()
