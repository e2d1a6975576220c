"""Narrow arithmetic of the C runtime (issue 26 item 3) against the wide path,
firmware_sim and plain Python integers, at the edges of the bounds.

The runtime picks, at open, the narrowest exact arithmetic an image allows
(``docs/firmware.md``, "Narrow arithmetic"): ECOC linear scores in 32-bit
sums when every weight is int16 and ``|B| + 32768 sum_f |W| < 2**31``, in two
32-bit words when the weights are int16 only, int64 otherwise; SSBC
affinities from 16-bit products when ``exp_mult < 2**32``. One host runner
is built twice, with ``EC_NARROW`` 1 (the default) and 0 (every 64-bit path
forced), and both run random images whose bounds sit exactly at, just below
and just above each limit, on frames that drive the partial sums to those
bounds (int16 extremes with the weights' signs) and random frames. The slow
reference is Python's unbounded integers.
"""

import os

import numpy as np
import pytest

import firmware_sim
from export.ecoc import linear_accumulator
from export.firmware import build_firmware, decision_integers, toolchain_missing, write_firmware
from firmware_sim.artifact import write_container
from firmware_sim.kinds.ecoc import make_ecoc_arrays
from firmware_sim.kinds.ssbc import make_ssbc_arrays

CI = bool(os.environ.get("EDGECODE_CI"))


def _need_host():
    why = toolchain_missing("host")
    if why:
        if CI:
            pytest.fail(f"CI must have the host toolchain: {why}")
        pytest.skip(f"host toolchain: {why}")


@pytest.fixture(scope="module")
def runners(tmp_path_factory):
    """{narrow flag: runner path}: one all-kinds host runner per EC_NARROW."""
    _need_host()
    seed = _linear_image(np.random.default_rng(0), "int32")
    out = {}
    for flag in (1, 0):
        d = tmp_path_factory.mktemp(f"narrow{flag}")
        write_firmware(seed, d, "host", kinds="all")
        cfg = d / "model_config.h"
        cfg.write_text(cfg.read_text() + f"\n#define EC_NARROW {flag}\n")
        out[flag] = build_firmware(d, "host", probe=False).runner
    return out


def _run(runner, image, frames, tmp_path):
    import subprocess
    p = tmp_path / "m.edgc"
    p.write_bytes(bytes(image))
    text = "\n".join(" ".join(str(int(v)) for v in r) for r in frames) + "\n"
    res = subprocess.run([runner, "--image", str(p)], input=text, capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stdout[-500:] + res.stderr[-500:]
    rows = np.array([ln.split() for ln in res.stdout.splitlines() if ln.strip()], np.int64)
    return rows[:, 0], rows[:, 1:]


# ---------------------------------------------------------------------- ECOC linear
def _edge_weights(rng, d, k, regime):
    """(W (d, k) int64, B (k,) int64) whose bound |B| + 32768 sum|W| sits at a
    limit: ``int32`` exactly 2**31 - 1, ``w16`` 2**31 (int16 weights),
    ``int64`` weights beyond int16 up to rule 10's 2**63 - 1."""
    W = np.zeros((d, k), np.int64)
    B = np.zeros(k, np.int64)
    for o in range(k):
        if regime == "int64":
            w = rng.integers(-2**31 + 1, 2**31, d)
            w[0] = rng.choice([-2**31 + 1, 2**31 - 1, 32768, -32769])
            room = 2**63 - 1 - 32768 * int(np.abs(w).sum())
            b = int(rng.integers(0, min(room, 2**62) + 1)) * int(rng.choice([-1, 1]))
            if rng.random() < 0.5:
                b = room * int(rng.choice([-1, 1]))        # the rule's edge
        else:
            target = 2**31 - 1 if regime == "int32" else 2**31
            w = rng.integers(-32768, 32768, d)
            while 32768 * int(np.abs(w).sum()) > target:
                w //= 2
            room = target - 32768 * int(np.abs(w).sum())
            b = room * int(rng.choice([-1, 1]))
        W[:, o], B[o] = w, b
    return W, B


def _linear_image(rng, regime, d=None, m=None):
    d = d or int(rng.integers(1, 7))
    m = m or int(rng.integers(1, 6))
    c = int(rng.integers(2, 5))
    code = rng.integers(0, 2, (c, m))
    code[0, 0], code[1, 0] = 0, 1
    W, B = _edge_weights(rng, d, m, regime)
    arrays = make_ecoc_arrays(code, np.tile([0, 1], m), np.full(m, 2), np.zeros(d),
                              np.zeros(d, np.int8),
                              linear={"weights": W.astype(np.int32), "bias": B,
                                      "n_out": np.ones(m, np.int64)})
    return write_container(None, "ecoc", arrays, {})


def _edge_frames(W, rng, n_random=6):
    """Frames that push output o's partial sums to +-bound: q_f of W[f, o]'s
    sign (or the opposite) at the int16 extremes, then random ones."""
    d, k = W.shape
    rows = []
    for o in range(k):
        s = np.sign(W[:, o])
        rows.append(np.where(s < 0, -32768, 32767))
        rows.append(np.where(s < 0, 32767, -32768))
        rows.append(np.where(s >= 0, 32767, -32768)[::-1] if d > 1 else np.array([-32768]))
    rows += list(rng.integers(-32768, 32768, (n_random, d)))
    return np.array(rows, np.int64)


@pytest.mark.parametrize("regime", ["int32", "w16", "int64"])
def test_linear_scores_narrow_equal_wide_equal_python(regime, runners, tmp_path):
    rng = np.random.default_rng({"int32": 1, "w16": 2, "int64": 3}[regime])
    for trial in range(12):
        raw = _linear_image(rng, regime)
        dev = firmware_sim.load(raw)
        arrays = dev.container.arrays
        assert linear_accumulator(arrays) == regime
        W = arrays["lin_weights"].astype(object)
        B = arrays["lin_bias"].astype(object)
        frames = _edge_frames(arrays["lin_weights"].astype(np.int64), rng)
        ref_l, ref_d = decision_integers(dev, frames.astype(np.int16))
        m = W.shape[1]
        # Python integers: the symbols are score > 0 (two-class learners)
        py = np.array([[int(sum(int(q) * w for q, w in zip(fr, W[:, o])) + B[o] > 0)
                        for o in range(m)] for fr in frames])
        assert np.array_equal(ref_d[:, :m], py)
        for flag, runner in runners.items():
            labels, dec = _run(runner, raw, frames, tmp_path)
            assert np.array_equal(labels, ref_l), (regime, trial, flag)
            assert np.array_equal(dec, ref_d), (regime, trial, flag)


def test_export_int32_accumulator_keeps_labels_and_bounds(runners, tmp_path):
    """export_ecoc(accumulator="int32") writes an image the runtime sums in 32
    bits, labels equal to firmware_sim's (and on these data to the 64-bit
    export's), and string labels survive."""
    from sklearn.datasets import load_iris
    from sklearn.linear_model import LogisticRegression

    from edgecode.ecoc.classifier import ECOCClassifier
    from export.ecoc import export_ecoc

    X, y = load_iris(return_X_y=True)
    ys = np.array(["setosa", "versicolor", "virginica"])[y]
    clf = ECOCClassifier(LogisticRegression(max_iter=500),
                         code=[[0, 1, 1], [1, 0, 1], [1, 1, 0]]).fit(X, ys)
    wide = export_ecoc(clf, X, accumulator="int64")
    narrow = export_ecoc(clf, X, accumulator="int32")
    assert wide.details["accumulator"] == "int64"
    assert narrow.details["accumulator"] == "int32"
    arrays = narrow.device.container.arrays
    W = np.abs(arrays["lin_weights"].astype(np.int64))
    assert W.max() <= 32767
    assert (np.abs(arrays["lin_bias"]) + 32768 * W.sum(axis=0)).max() <= 2**31 - 1
    dn, dw = narrow.device, wide.device
    ln = dn.infer(dn.encode(X)).labels
    assert np.array_equal(ln, dw.infer(dw.encode(X)).labels)
    frames = dn.encode(X)
    for runner in runners.values():
        labels, dec = _run(runner, narrow.container, frames, tmp_path)
        ref_l, ref_d = decision_integers(dn, frames)
        assert np.array_equal(labels, ref_l) and np.array_equal(dec, ref_d)
    with pytest.raises(ValueError, match="accumulator"):
        export_ecoc(clf, X, accumulator="int16")


def test_export_auto_accumulator_takes_int32_only_when_no_learner_output_changes(monkeypatch):
    """``accumulator="auto"``: the 16-bit weights when every learner
    output on the calibration rows equals the 31-bit weights' (non-contiguous
    integer labels here), checked by recomputing the learner outputs of both
    explicit exports; and the 31-bit weights when the coarse ones change one
    (forced by zeroing the int32 weights of the first learner)."""
    from sklearn.datasets import load_wine
    from sklearn.linear_model import LogisticRegression

    import export.ecoc as ex
    from edgecode.ecoc.classifier import ECOCClassifier

    X, y = load_wine(return_X_y=True)
    y = np.array([3, 10, 42])[y]
    clf = ECOCClassifier(LogisticRegression(max_iter=3000), code="dense_random",
                         n_columns=3, random_state=0).fit(X, y)
    auto, narrow, wide = (ex.export_ecoc(clf, X, accumulator=a)
                          for a in ("auto", "int32", "int64"))
    q = wide.device.encode(X)
    same = np.array_equal(narrow.device.learner_outputs(q), wide.device.learner_outputs(q))
    assert same            # on wine the 16-bit weights change no learner output
    expect = narrow if same else wide
    assert auto.container == expect.container
    assert auto.details["accumulator"] == linear_accumulator(expect.device.container.arrays)
    assert ex.export_ecoc(clf, X).container == wide.container      # the default: 31 bits

    real = ex._quantize_linear

    def coarse(la, center, shift, col_n_out, accumulator="int64"):
        Wq, Bq, shifts = real(la, center, shift, col_n_out, accumulator)
        if accumulator == "int32":
            Wq = Wq.copy()
            Wq[:, 0] = 0
            Bq = Bq.copy()
            Bq[0] = 1
        return Wq, Bq, shifts

    monkeypatch.setattr(ex, "_quantize_linear", coarse)
    arrays, info = ex.quantize_ecoc(clf, X, accumulator="auto")
    assert info["accumulator"] == "int64"
    assert np.array_equal(arrays["lin_weights"], wide.device.container.arrays["lin_weights"])
    with pytest.raises(ValueError, match="accumulator"):
        ex.quantize_ecoc(clf, X, accumulator="int8")


# ---------------------------------------------------------------------- SSBC
@pytest.mark.parametrize("sigma_scale", [1e-7, 1.0, 1e3])
def test_ssbc_affinities_narrow_equal_wide(sigma_scale, runners, tmp_path):
    """exp_mult below and above 2**32 (sigma large / tiny); frames at the
    anchors (distance 0: affinity 32768), near the zero threshold, at the
    int16 extremes and random."""
    rng = np.random.default_rng(int(sigma_scale * 10) + 7)
    for trial in range(4):
        m, d, k = int(rng.integers(1, 6)), int(rng.integers(1, 5)), int(rng.integers(1, 12))
        anchors = rng.uniform(-100, 100, (m, d))
        sigma = float(sigma_scale * rng.uniform(1e3, 1e5))
        arrays = make_ssbc_arrays(anchors, sigma, rng.normal(size=(m, k)), rng.normal(size=k),
                                  table_bits=rng.integers(0, 2, (9, k)),
                                  table_labels=rng.integers(0, 3, 9), n_classes=3, knn_k=3)
        raw = write_container(None, "ssbc", arrays, {})
        dev = firmware_sim.load(raw)
        A = arrays["anchors"].astype(np.int64)
        step = max(1, int(np.sqrt(2**60 // int(arrays["exp_mult"][0]) / max(d, 1))))
        frames = [A[0], A[-1], np.clip(A[0] + step, -32768, 32767),
                  np.clip(A[0] - step + 1, -32768, 32767), np.full(d, -32768),
                  np.full(d, 32767)]
        frames += list(rng.integers(-32768, 32768, (6, d)))
        frames = np.array(frames, np.int64)
        ref_l, ref_d = decision_integers(dev, frames.astype(np.int16))
        for flag, runner in runners.items():
            labels, dec = _run(runner, raw, frames, tmp_path)
            assert np.array_equal(labels, ref_l), (sigma_scale, trial, flag)
            assert np.array_equal(dec, ref_d), (sigma_scale, trial, flag)


def test_avr_multiply_accumulate_at_the_int32_edge(tmp_path):
    """The AVR build sums the 32-bit scores with its own multiply-accumulate
    (inline assembly): under simavr, an image whose bounds are exactly
    2**31 - 1, on frames that reach them, equals firmware_sim."""
    why = toolchain_missing("atmega328p", run=True)
    if why:
        if CI:
            pytest.fail(f"CI must have the AVR toolchain and simavr: {why}")
        pytest.skip(f"atmega328p: {why}")
    from export.firmware import run_firmware
    rng = np.random.default_rng(11)
    raw = _linear_image(rng, "int32", d=8, m=4)
    dev = firmware_sim.load(raw)
    arrays = dev.container.arrays
    assert linear_accumulator(arrays) == "int32"
    frames = np.vstack([_edge_frames(arrays["lin_weights"].astype(np.int64), rng, 24),
                        np.full((1, 8), -32768), np.full((1, 8), 32767)])
    write_firmware(raw, tmp_path, "atmega328p")
    build_firmware(tmp_path, "atmega328p", probe=False)
    labels, dec = run_firmware(tmp_path, frames, "atmega328p")
    ref_l, ref_d = decision_integers(dev, frames.astype(np.int16))
    assert np.array_equal(labels, ref_l) and np.array_equal(dec, ref_d)


# ---------------------------------------------------------------------- one-pass open
def _relayout(raw, order, shift=None):
    """The container with its non-empty arrays' data placed in ``order`` (table
    indices), 16-aligned, offsets rewritten and the CRC restamped; ``shift``
    = (i, delta) then moves entry i's offset by delta (an overlap)."""
    import zlib
    n = int.from_bytes(raw[12:16], "little")
    ent = [(32 + 64 * i, int.from_bytes(raw[32 + 64 * i + 52:32 + 64 * i + 56], "little"),
            int.from_bytes(raw[32 + 64 * i + 56:32 + 64 * i + 60], "little")) for i in range(n)]
    buf = bytearray(raw[:32 + 64 * n])
    pos = len(buf)
    for i in order:
        at, off, nb = ent[i]
        pos = (pos + 15) // 16 * 16
        buf.extend(b"\0" * (pos - len(buf)))
        buf[at + 52:at + 56] = pos.to_bytes(4, "little")
        buf.extend(raw[off:off + nb])
        pos += nb
    for i, (at, off, nb) in enumerate(ent):
        if nb == 0:
            buf[at + 52:at + 56] = (32 + 64 * n).to_bytes(4, "little")
    if shift is not None:
        at = ent[shift[0]][0]
        cur = int.from_bytes(buf[at + 52:at + 56], "little")
        buf[at + 52:at + 56] = (cur + shift[1]).to_bytes(4, "little")
    buf[16:20] = len(buf).to_bytes(4, "little")
    crc = zlib.crc32(bytes(buf[24:]), zlib.crc32(bytes(buf[:20]))) & 0xFFFFFFFF
    buf[20:24] = crc.to_bytes(4, "little")
    return bytes(buf)


def test_open_checks_any_layout_as_firmware_sim(runners, tmp_path):
    """The open's one pass over the table (arrays in table order = address
    order, the writer's layout) and its fallback walk (any other order) accept
    and refuse what firmware_sim's reader does: reversed and shuffled layouts,
    an array moved inside its neighbour, two arrays at one offset."""
    from export.firmware import check_images
    from firmware_sim.artifact import ContainerError, read_container

    raw = _linear_image(np.random.default_rng(5), "int32")
    n = int.from_bytes(raw[12:16], "little")
    sizes = [int.from_bytes(raw[32 + 64 * i + 56:32 + 64 * i + 60], "little") for i in range(n)]
    full = [i for i in range(n) if sizes[i]]
    rng = np.random.default_rng(6)
    images = [_relayout(raw, full), _relayout(raw, full[::-1]),
              _relayout(raw, list(rng.permutation(full)))]
    images.append(_relayout(raw, full, shift=(full[1], -16)))       # into its neighbour
    a, b = full[0], full[1]
    same = bytearray(_relayout(raw, full))
    same[32 + 64 * b + 52:32 + 64 * b + 56] = same[32 + 64 * a + 52:32 + 64 * a + 56]
    images.append(bytes(same))
    import zlib
    fixed = []
    for im in images:
        im = bytearray(im)
        crc = zlib.crc32(bytes(im[24:]), zlib.crc32(bytes(im[:20]))) & 0xFFFFFFFF
        im[20:24] = crc.to_bytes(4, "little")
        fixed.append(bytes(im))
    want = []
    for im in fixed:
        try:
            read_container(im)
            want.append(True)
        except ContainerError:
            want.append(False)
    assert want[:3] == [True, True, True] and want[3:] == [False, False]
    for runner in runners.values():
        got = [ok for ok, _ in check_images(runner, fixed)]
        assert got == want


def test_cli_ecoc_accumulator_int32(tmp_path, capsys):
    """``edgecode ecoc ... --accumulator int32 --out`` writes an image the
    runtime sums in 32 bits; a bad choice is one ``error:`` line."""
    from export.cli import main
    out = tmp_path / "m.edgc"
    assert main(["ecoc", "iris", "--learner", "logistic", "--code", "dense_random",
                 "--n-columns", "3", "--eps", "0", "--trials", "1", "--quiet",
                 "--accumulator", "int32", "--out", str(out)]) == 0
    arrays = firmware_sim.load(out.read_bytes()).container.arrays
    assert linear_accumulator(arrays) == "int32"
    capsys.readouterr()
    with pytest.raises(SystemExit):
        main(["ecoc", "iris", "--accumulator", "int16"])
    assert "int16" in capsys.readouterr().err
