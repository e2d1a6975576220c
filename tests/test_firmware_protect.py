"""Image protection in the C runtime (issue 27): ``ec_protect.c`` against firmware_sim.

A protected image with upsets (some words corrected, some detected and
erased, TMR votes, BCH blocks with t and t + 1 upsets) is opened by the C
runner (``--image F``: the image in RAM, scrubbed in place by
``ec_model_open_rw``) and by ``firmware_sim.load``; both must refuse the
same images, and on the others return the same labels **and** decision
integers on every frame, for every scheme and ECOC (linear and trees, string
labels), forest and naive Bayes (house votes). Corrupt ``__protect__``
tables are refused by both (the fuzz corpus of
``tests/container_fuzz_driver.py``). The same parity runs once under QEMU
(Cortex-M4) and once under simavr (AVR) with the firmware ``edgecode
firmware`` writes for a protected image (the image in RAM).

The upsets are drawn by this file (bits of the stored arrays and of
``__protect__``, CRC re-stamped as the boot check would pass), not by
``ParameterUpset``.
"""

import subprocess
import zlib
from pathlib import Path

import numpy as np
import pytest

import firmware_sim
from firmware_sim import ContainerError
from firmware_sim._bch import bch_layout
from firmware_sim.artifact import read_container
from firmware_sim.protection import protect_container
from export.firmware import build_firmware, check_images, decision_integers, run_firmware, \
    write_firmware
from toolchains import need_toolchain

HERE = Path(__file__).resolve().parent


# ---------------------------------------------------------------------- models
@pytest.fixture(scope="module")
def glass():
    d = np.genfromtxt(HERE / "data" / "glass.csv", delimiter=",", skip_header=1)
    return d[:, :-1], d[:, -1].astype(int)         # classes 1, 2, 3, 5, 6, 7


@pytest.fixture(scope="module")
def models(glass):
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.linear_model import LogisticRegression, RidgeClassifier
    from sklearn.tree import DecisionTreeClassifier

    from edgecode.datasets import load_house_votes
    from edgecode.ecoc import make_code
    from edgecode.ecoc.classifier import ECOCClassifier
    from edgecode.naive_bayes import BinaryNaiveBayes
    from export.ecoc import export_ecoc
    from export.forest import export_forest
    from export.naive_bayes import export_protected_nb
    X, y = glass
    names = np.array(["a", "b", "c", "e", "f", "g"])[np.searchsorted([1, 2, 3, 5, 6, 7], y)]
    lin = ECOCClassifier(RidgeClassifier(), code="dense_random", n_columns=10,
                         random_state=0).fit(X, names)
    tree = ECOCClassifier(DecisionTreeClassifier(max_depth=3, random_state=0),
                          code="dense_random", n_columns=9, random_state=0).fit(X, y)
    forest = RandomForestClassifier(6, max_depth=4, random_state=0).fit(X, y)
    nary = ECOCClassifier(LogisticRegression(max_iter=2000), code=np.random.default_rng(0)
                          .integers(0, 3, (6, 7))).fit(X, y)           # N = 3: argmax learners
    ternary = ECOCClassifier(DecisionTreeClassifier(max_depth=3, random_state=0),
                             code=make_code("one_vs_one", 6)).fit(X, names)   # unused entries
    hv = load_house_votes()
    nb = BinaryNaiveBayes().fit(hv.X, hv.y)
    return {
        "ecoc_linear": (export_ecoc(lin, X).device, X),
        "ecoc_tree": (export_ecoc(tree, X).device, X),
        "forest": (export_forest(forest, X).device, X),
        "ecoc_nary": (export_ecoc(nary, X).device, X),
        "ecoc_ternary_tree": (export_ecoc(ternary, X).device, X),
        "nb": (export_protected_nb(nb, np.array([1, 0, 2, 0] * 4)).device, hv.X),
    }


#: Per kind, the arrays whose detected words have a fallback (erased units or 0).
FALLBACK = {"ecoc_linear": ["lin_weights", "lin_bias"], "ecoc_tree": ["node_threshold"],
            "ecoc_nary": ["lin_weights", "lin_bias"], "ecoc_ternary_tree": ["node_threshold"],
            "forest": ["node_threshold", "leaf_value"], "nb": ["weights", "bias"]}
SCHEMES = {"parity": ("parity", 2), "secded": ("secded", 4), "tmr": ("tmr", 1),
           "bch": ("bch", (8, 3))}


def _plan(c, kind, scheme):
    """Every array protected by ``scheme`` (BCH: one span over all arrays)."""
    if scheme == "bch_span":
        return {next(iter(c.arrays)): ("bch", (9, 2, len(c.arrays)))}
    return {n: SCHEMES[scheme] for n, a in c.arrays.items() if a.nbytes}


# -------------------------------------------------------------------- upsets
def _restamp(buf):
    crc = zlib.crc32(bytes(buf[24:]), zlib.crc32(bytes(buf[:20])))
    buf[20:24] = np.frombuffer(np.uint32(crc).tobytes(), np.uint8)
    return buf


def _spans(raw):
    """{array name: (byte offset, nbytes)} of every stored array, reserved ones too."""
    n = int.from_bytes(raw[12:16], "little")
    out = {}
    for i in range(n):
        e = raw[32 + 64 * i:96 + 64 * i]
        name = e[:32].rstrip(b"\0").decode()
        out[name] = (int.from_bytes(e[52:56], "little"), int.from_bytes(e[56:60], "little"))
    return out


def _flip(raw, bits):
    """``raw`` with the given (array, bit index) upsets, CRC re-stamped."""
    buf = np.frombuffer(raw, np.uint8).copy()
    spans = _spans(raw)
    for name, b in bits:
        off, _ = spans[name]
        buf[off + b // 8] ^= np.uint8(1 << (b % 8))
    return _restamp(buf).tobytes()


def _faulty_images(raw, kind, scheme, rng, n=24):
    """Faulty images of a protected image: single upsets anywhere (corrected, or
    detected by parity), pairs in one word of a fallback array (SEC-DED: detected,
    erased), triples, BCH blocks with t and t + 1 upsets."""
    c = read_container(raw)
    spans = _spans(raw)
    stored = [k for k in c.arrays if spans[k][1]] + ["__protect__"]
    fb = [k for k in FALLBACK[kind] if k in c.arrays and spans[k][1]]
    out = []
    for i in range(n):
        mode = i % 4
        if mode == 0:                                   # one upset anywhere
            name = stored[rng.integers(len(stored))]
            out.append([(name, int(rng.integers(8 * spans[name][1])))])
        elif mode == 1:                                 # two in one word of a fallback array
            name = fb[rng.integers(len(fb))]
            word = int(rng.integers(-(-spans[name][1] // 4)))
            bits = rng.choice(32, 2, replace=False) + 32 * word
            out.append([(name, int(b)) for b in bits if b < 8 * spans[name][1]])
        elif mode == 2:                                 # three in fallback arrays
            out.append([(name, int(rng.integers(8 * spans[name][1])))
                        for name in rng.choice(fb, 3)])
        else:                                           # one in a fallback array + one check
            name = fb[rng.integers(len(fb))]
            out.append([(name, int(rng.integers(8 * spans[name][1]))),
                        ("__protect__", int(rng.integers(8 * spans["__protect__"][1])))])
    if scheme in ("bch", "bch_span"):
        m, t = (8, 3) if scheme == "bch" else (9, 2)
        name = fb[0] if scheme == "bch" else next(iter(c.arrays))
        nbytes = spans[name][1] if scheme == "bch" else sum(spans[k][1] for k in c.arrays)
        r, k, nb = bch_layout(m, t, 8 * nbytes)
        for e in (t, t + 1, t + 2):
            for block in range(min(nb, 3)):
                kb = min(k, 8 * nbytes - block * k)
                pos = block * k + rng.choice(kb, min(e, kb), replace=False)
                out.append([_stream_bit(c, spans, name, scheme, int(p)) for p in pos])
    return [_flip(raw, bits) for bits in out if bits]


def _stream_bit(c, spans, first, scheme, p):
    """(array, bit) of bit ``p`` of a BCH stream (one array, or a span from ``first``)."""
    if scheme == "bch":
        return first, p
    for name in c.arrays:
        nb = 8 * spans[name][1]
        if p < nb:
            return name, p
        p -= nb
    raise AssertionError("bit beyond the span")


# ------------------------------------------------------------- the C runner
@pytest.fixture(scope="module")
def host_runner(tmp_path_factory, models):
    """The all-kinds host runner, -O1 with AddressSanitizer and UBSan."""
    need_toolchain("host")
    d = tmp_path_factory.mktemp("fw_protect")
    dev, _ = models["nb"]
    write_firmware(dev.container.tobytes(), d, "host", kinds="all")
    return build_firmware(d, "host", opt="-O1", sanitize=True, probe=False).runner


def _run_c(runner, raw, frames, tmp_path):
    """``("refused", message)`` or ``(labels, decisions)`` of the C runner on
    the image file ``raw``."""
    img = tmp_path / "faulty.edgc"
    img.write_bytes(raw)
    text = "".join(" ".join(str(int(v)) for v in row) + "\n" for row in frames)
    res = subprocess.run([str(runner), "--image", str(img)], input=text, capture_output=True,
                         text=True, timeout=120)
    lines = [ln for ln in res.stdout.splitlines() if ln.strip()]
    assert "runtime error" not in res.stderr and "Sanitizer" not in res.stderr, res.stderr
    if lines and lines[0].startswith("error"):
        return "refused", lines[0]
    assert res.returncode == 0, res.stdout[-500:] + res.stderr[-2000:]
    arr = np.array([ln.split() for ln in lines], np.int64)
    return arr[:, 0], arr[:, 1:]


def _run_py(raw, frames):
    try:
        dev = firmware_sim.load(raw)
    except ContainerError as exc:
        return "refused", str(exc), None
    labels, dec = decision_integers(dev, frames.astype(dev.frame_dtype))
    return labels, dec, dev.protection


def _compare(runner, raw, frames, tmp_path, stats, X=None):
    try:                    # a miscorrected (or unprotected) count may change the frame width
        dev = firmware_sim.load(raw)
        if dev.frame_width != frames.shape[1] and X is not None:
            frames = dev.encode(X[:40]).astype(np.int64)
    except ContainerError:
        pass
    ref = _run_py(raw, frames)
    got = _run_c(runner, raw, frames, tmp_path)
    if isinstance(ref[0], str):
        assert got[0] == "refused", f"python refuses ({ref[1]}); C opens it"
        stats["refused"] += 1
        return got[1]
    assert not isinstance(got[0], str), f"python opens the image ({ref[2]}); C: {got[1]}"
    assert np.array_equal(got[0], ref[0]), "labels differ"
    assert np.array_equal(got[1], ref[1]), "decision integers differ"
    p = ref[2]
    stats["corrected"] += p["corrected_words"] > 0
    stats["erased"] += bool(p["erased_units"]) or bool(p["detected_arrays"])
    stats["voted"] += p["voted_bits"] > 0
    return "ok"


def _frames(dev, X, rng):
    q = dev.encode(X[:40]).astype(np.int64)
    if dev.frame_dtype == np.uint8:
        return q
    rand = rng.integers(-32768, 32768, (10, q.shape[1]))
    return np.vstack([q, rand])


# ------------------------------------------------------------------ the tests
@pytest.mark.parametrize("scheme", ["parity", "secded", "tmr", "bch", "bch_span"])
@pytest.mark.parametrize("kind", ["ecoc_linear", "ecoc_tree", "forest", "nb"])
def test_c_runtime_decodes_faulty_protected_images_as_firmware_sim(models, host_runner, kind,
                                                                    scheme, tmp_path):
    dev, X = models[kind]
    raw = protect_container(dev.container, _plan(dev.container, kind, scheme))
    rng = np.random.default_rng(zlib.crc32(f"{kind} {scheme}".encode()))
    frames = _frames(dev, X, rng)
    stats = dict(refused=0, corrected=0, erased=0, voted=0)
    _compare(host_runner, raw, frames, tmp_path, stats)             # clean
    verdicts = [_compare(host_runner, f, frames, tmp_path, stats, X)
                for f in _faulty_images(raw, kind, scheme, rng)]
    print(kind, scheme, stats)
    if scheme == "tmr":
        assert stats["voted"] > 0
    else:
        assert stats["corrected"] > 0 or scheme == "parity"
        # a span starts with the structure arrays: its detected blocks often refuse
        assert stats["erased"] > 0 or (scheme == "bch_span" and stats["refused"] > 0)
    # refusals: a detected upset without fallback, or (t + 2 upsets in a BCH block,
    # miscorrected; an unprotected count under parity) a kind's rule on what was read
    assert set(verdicts) <= {"ok", "error -16 upset", "error -11 rule", "error -10 schema"}, \
        sorted(set(verdicts))


@pytest.mark.parametrize("scheme", ["parity", "secded"])
@pytest.mark.parametrize("kind", ["ecoc_nary", "ecoc_ternary_tree"])
def test_erasures_of_nary_and_ternary_codes_in_c(models, host_runner, kind, scheme, tmp_path):
    """Erased learners of a 3-ary code (symbols compared, not packed) and of a
    ternary one-vs-one code (unused entries stay unused) give firmware_sim's
    distances in C."""
    dev, X = models[kind]
    raw = protect_container(dev.container, _plan(dev.container, kind, scheme))
    rng = np.random.default_rng(zlib.crc32(f"{kind} {scheme}".encode()))
    frames = _frames(dev, X, rng)
    stats = dict(refused=0, corrected=0, erased=0, voted=0)
    for f in _faulty_images(raw, kind, scheme, rng, n=16):
        _compare(host_runner, f, frames, tmp_path, stats, X)
    assert stats["erased"] > 0


def test_bch_t_upsets_are_corrected_and_t_plus_1_detected_in_c(models, host_runner, tmp_path):
    """A block with t upsets reads right; with t + 1 the block is detected (its
    trees leave the vote) or miscorrected, in C exactly as in firmware_sim."""
    dev, X = models["forest"]
    c = dev.container
    raw = protect_container(c, {"node_threshold": ("bch", (7, 2)),
                                "leaf_value": ("secded", 1)})
    frames = _frames(dev, X, np.random.default_rng(0))
    clean = decision_integers(dev, frames.astype(np.int16))
    r, k, nb = bch_layout(7, 2, 8 * c.arrays["node_threshold"].nbytes)
    rng = np.random.default_rng(5)
    seen = set()
    for block in range(nb):
        kb = min(k, 8 * c.arrays["node_threshold"].nbytes - block * k)
        for e in (2, 3):
            bits = block * k + rng.choice(kb, e, replace=False)
            f = _flip(raw, [("node_threshold", int(b)) for b in bits])
            stats = dict(refused=0, corrected=0, erased=0, voted=0)
            assert _compare(host_runner, f, frames, tmp_path, stats) == "ok"
            if e == 2:
                got = _run_c(host_runner, f, frames, tmp_path)
                assert np.array_equal(got[0], clean[0]) and np.array_equal(got[1], clean[1])
            seen.add((e, stats["erased"]))
    assert (3, 1) in seen                      # some t + 1 block detected, trees erased


@pytest.mark.parametrize("kind", ["ecoc_tree", "nb"])
def test_c_loader_refuses_corrupt_protect_tables_as_firmware_sim(models, host_runner, kind):
    """The fuzz corpus of ``__protect__`` (every table byte set to special values,
    counts, truncation, extension), of the protected image's arrays (bit flips,
    special values, shapes) and flips of its check bits:
    the C loader accepts and refuses the same mutants as firmware_sim."""
    import container_fuzz_driver as fz

    dev, _ = models[kind]
    c = dev.container
    plan = {n: ("secded", 2) for n in list(c.arrays)[:3]}
    last = list(c.arrays)[-1]
    plan[last] = ("bch", (6, 2))
    raw = protect_container(c, plan)
    mutants = [m for _, m in fz.protect_mutants(raw)]
    rng = np.random.default_rng(3)
    mutants += [m for _, m in fz.flip_mutants(raw, 300, rng)]      # every array, the header
    mutants += [m for _, m in fz.set_mutants(raw, 2)] + [m for _, m in fz.shape_mutants(raw)]
    spans = _spans(raw)
    off, size = spans["__protect__"]
    for _ in range(200):                         # flips of the table and check bits
        mutants.append(_flip(raw, [("__protect__", int(rng.integers(8 * size)))
                                   for _ in range(int(rng.integers(1, 4)))]))
    verdicts = check_images(host_runner, mutants)
    disagree, accepted = [], 0
    for i, (m, (c_ok, msg)) in enumerate(zip(mutants, verdicts)):
        try:
            firmware_sim.load(m)
            py_ok = True
        except ContainerError as exc:
            py_ok = False
            if "metadata" in str(exc) or "__meta__" in str(exc):
                continue                 # host-side rules only (C README, difference 1)
        accepted += c_ok
        if c_ok != py_ok:
            disagree.append(f"mutant {i}: python {'accepts' if py_ok else 'refuses'}, C {msg}")
    assert not disagree, "\n".join(disagree[:15])
    assert 0 < accepted < len(mutants)
    assert any(msg == "error -15 protect" for _, msg in verdicts)


def test_read_only_open_refuses_an_image_that_needs_a_fix(models, tmp_path):
    """ec_model_open (the image in read-only memory) accepts a clean protected image
    and one whose upsets hit only check bits, and refuses one whose data needs a
    correction with EC_ERR_READONLY; ec_model_open_rw corrects it."""
    need_toolchain("host")
    dev, X = models["nb"]
    raw = protect_container(dev.container, {"weights": ("secded", 4)})
    prog = tmp_path / "ro.c"
    prog.write_text(_RO_PROGRAM)
    src = Path(firmware_sim.__file__).resolve().parent / "c"
    exe = tmp_path / "ro"
    cfiles = [str(src / f) for f in ("ec_container.c", "ec_model.c", "ec_quantize.c",
                                     "ec_wire.c", "ec_protect.c", "ec_nb.c", "ec_ecoc.c",
                                     "ec_ssbc.c", "ec_forest.c")]
    subprocess.run(["gcc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-O1",
                    "-I", str(src), str(prog), *cfiles, "-o", str(exe)], check=True)
    spans = _spans(raw)
    data = [_flip(raw, []), _flip(raw, [("__protect__", 8 * spans["__protect__"][1] - 3)]),
            _flip(raw, [("weights", 9)])]
    out = []
    for i, d in enumerate(data):
        p = tmp_path / f"i{i}.edgc"
        p.write_bytes(d)
        out.append(subprocess.run([str(exe), str(p)], capture_output=True, text=True,
                                  check=True).stdout.split())
    assert out == [["0", "0"], ["0", "0"], ["-17", "0"]]


_RO_PROGRAM = r"""
#include <stdio.h>
#include "edgecode_rt.h"
static uint64_t buf[4096];
int main(int argc, char **argv)
{
    ec_model m;
    FILE *f = fopen(argv[1], "rb");
    size_t n;
    (void)argc;
    if (f == NULL) return 2;
    n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    printf("%d ", (int)ec_model_open((const uint8_t *)buf, (uint32_t)n, &m));
    printf("%d\n", (int)ec_model_open_rw((uint8_t *)buf, (uint32_t)n, &m));
    return 0;
}
"""


def test_firmware_of_a_protected_image_sets_the_switch(models, tmp_path):
    """`edgecode firmware` writes ec_protect.c and EC_WITH_PROTECT for a protected
    image only; the image is a writable array opened by ec_model_open_rw."""
    dev, _ = models["forest"]
    plain = write_firmware(dev.container, tmp_path / "plain", "host")
    assert "ec_protect.c" not in plain["sources"]
    assert "EC_WITH_PROTECT" not in (tmp_path / "plain" / "ec_config.h").read_text()
    raw = protect_container(dev.container, {"node_threshold": ("secded", 2)})
    info = write_firmware(raw, tmp_path / "prot", "host")
    assert "ec_protect.c" in info["sources"]
    cfg = (tmp_path / "prot" / "ec_config.h").read_text()
    assert "#define EC_WITH_PROTECT 1" in cfg and f"EC_PROTECT_UNITS {dev.n_trees}" in cfg
    assert "EC_MODEL_IMAGE_RW" in (tmp_path / "prot" / "model_image.h").read_text()
    with pytest.raises(ValueError, match="protected"):
        write_firmware(raw, tmp_path / "inline", "host", trees="inline")


def _target_parity(models, tmp_path, target, kind, plan, detect=True):
    dev, X = models[kind]
    raw = protect_container(dev.container, plan)
    spans = _spans(raw)
    name = FALLBACK[kind][0]
    # one corrected word, one detected (erased) word: 2 upsets in word 0, 1 in the last
    nbits = 8 * spans[name][1]
    bits = [(name, 1), (name, 5), (name, nbits - 2)]
    faulty = _flip(raw, bits)
    ref = firmware_sim.load(faulty)
    assert ref.protection["corrected_words"] >= 1
    assert ref.protection["detected_words"] >= 1 or not detect
    frames = _frames(dev, X, np.random.default_rng(1))[:30]
    write_firmware(faulty, tmp_path, target)
    build_firmware(tmp_path, target, probe=False)
    labels, dec = run_firmware(tmp_path, frames, target)
    ref_l, ref_d = decision_integers(ref, frames.astype(ref.frame_dtype))
    assert np.array_equal(labels, ref_l) and np.array_equal(dec, ref_d)


def test_cortex_m4_decodes_a_faulty_protected_forest(models, tmp_path):
    need_toolchain("cortex-m4", run=True)
    _target_parity(models, tmp_path, "cortex-m4", "forest",
                   {"node_threshold": ("secded", 2), "leaf_value": ("bch", (8, 2))})


def test_avr_decodes_a_faulty_protected_nb(models, tmp_path):
    need_toolchain("atmega328p", run=True)
    _target_parity(models, tmp_path, "atmega328p", "nb",
                   {"weights": ("secded", 4), "repetitions": ("tmr", 1)})


def test_rv32_decodes_a_faulty_protected_ecoc(models, tmp_path):
    need_toolchain("rv32imac", run=True)
    _target_parity(models, tmp_path, "rv32imac", "ecoc_linear",
                   {"lin_weights": ("secded", 4), "lin_bias": ("parity", 8)})


def test_avr_decodes_a_faulty_bch_protected_nb(models, tmp_path):
    """BCH on an 8-bit core (16-bit int: every shift of the 32-bit LFSR words)."""
    need_toolchain("atmega328p", run=True)
    _target_parity(models, tmp_path, "atmega328p", "nb",
                   {"weights": ("bch", (6, 1)), "bias": ("secded", 4)}, detect=False)
