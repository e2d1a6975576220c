"""The C runtime's forest kind (firmware_sim/c/ec_forest.c) against firmware_sim.

Same machinery and rules as ``tests/test_firmware.py``: labels **and** decision
integers (every tree's leaf id, then the votes) equal ``device.infer``'s on
clean, channel-noised, random and extreme int16 frames, on the host (-O2, and
-O0 under address and undefined-behaviour sanitizers) and on Cortex-M4/M3
under QEMU; the C loader accepts and refuses exactly what ``firmware_sim.load``
does on the fuzz corpus plus forest-specific structural mutants (metadata
aside); a firmware built for one model's node widths refuses other widths.
"""

import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.ensemble import ExtraTreesClassifier, RandomForestClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier

sys.path.insert(0, str(Path(__file__).parent))

from test_firmware import _assert_parity, _frames, _meta_range, _python_accepts  # noqa: E402
from toolchains import need_toolchain  # noqa: E402

import firmware_sim  # noqa: E402
from export.data import load_table  # noqa: E402
from export.firmware import build_firmware, check_images, run_firmware, write_firmware  # noqa: E402
from export.forest import export_forest  # noqa: E402
from firmware_sim.artifact import write_container  # noqa: E402

DATA = Path(__file__).parent / "data"


def _digits():
    return load_digits(return_X_y=True)


def _glass():
    t = load_table(DATA / "glass.csv")
    return t.X, t.y


def _export(make, data, **kw):
    X, y = data()
    model = make().fit(X[::2], y[::2])
    return export_forest(model, **kw).device, X[1::2]


MODELS = {
    # 15 trees of depth 4, probabilities in uint16
    "rf_proba": lambda: _export(lambda: RandomForestClassifier(15, max_depth=4, random_state=0),
                                _digits),
    # hundreds of distinct leaves: uint16 references
    "rf_u16_refs": lambda: _export(lambda: RandomForestClassifier(30, max_depth=6,
                                                                  random_state=0), _digits),
    # the same with class leaves: 5 bytes per node, no leaf table
    "rf_class": lambda: _export(lambda: RandomForestClassifier(15, max_depth=4, random_state=0),
                                _digits, leaf="class"),
    # unlimited extra trees, 8-bit probabilities, integer labels 1..7
    "extra_glass_u8": lambda: _export(lambda: ExtraTreesClassifier(6, random_state=1), _glass,
                                      leaf_bits=8),
    # a tree 64 levels deep (the format's limit): one long chain
    "tree_chain": lambda: _export(lambda: DecisionTreeClassifier(max_depth=64, random_state=0),
                                  lambda: (np.arange(600.0)[:, None], np.arange(600) // 2 % 2)),
    # 320 features (uint16 feature ids) through a folded scaler
    "pipe_wide": lambda: _export(
        lambda: make_pipeline(StandardScaler(), RandomForestClassifier(4, max_depth=6,
                                                                       random_state=0)),
        lambda: (np.hstack([_digits()[0]] * 5), _digits()[1])),
    # one class: every tree is a single leaf (no nodes at all)
    "one_class": lambda: _export(lambda: RandomForestClassifier(3, random_state=0),
                                 lambda: (_digits()[0], np.full(len(_digits()[1]), "only"))),
}

_CACHE = {}


def _model(name):
    if name not in _CACHE:
        _CACHE[name] = MODELS[name]()
    return _CACHE[name]


def test_the_models_cover_every_width():
    widths = {name: tuple(_model(name)[0].container.arrays[a].dtype.itemsize
                          for a in ("node_feature", "node_left"))
              for name in MODELS}
    assert widths["rf_class"] == (1, 1) and widths["rf_u16_refs"] == (1, 2)
    assert widths["pipe_wide"][0] == 2 and widths["tree_chain"] == (1, 1)
    assert _model("tree_chain")[0].depth.max() == 64
    assert _model("one_class")[0].n_nodes == 0


@pytest.mark.parametrize("name", sorted(MODELS))
def test_host_runtime_equals_firmware_sim(name, tmp_path):
    need_toolchain("host")
    dev, X = _model(name)
    write_firmware(dev.container, tmp_path, "host")
    frames = _frames(dev, X[:200], np.random.default_rng(len(name)))
    for opt, sanitize in (("-O2", False), ("-O0", True)):
        build_firmware(tmp_path, "host", opt=opt, sanitize=sanitize, probe=False)
        labels, dec = run_firmware(tmp_path, frames, "host")
        _assert_parity(dev, frames, labels, dec)
    assert dec.shape[1] == dev.n_trees + dev.n_classes


@pytest.mark.parametrize("target, name", [("cortex-m4", "rf_u16_refs"),
                                          ("cortex-m4", "rf_class"),
                                          ("cortex-m4", "pipe_wide"),
                                          ("cortex-m3", "extra_glass_u8")])
def test_cortex_m_under_qemu_equals_firmware_sim(target, name, tmp_path):
    need_toolchain(target, run=True)
    dev, X = _model(name)
    write_firmware(dev.container, tmp_path, target)
    b = build_firmware(tmp_path, target)
    assert b.flash_bytes > dev.container.nbytes and b.stack_bytes > 0
    frames = _frames(dev, X[:80], np.random.default_rng(7), n_random=40)
    labels, dec = run_firmware(tmp_path, frames, target)
    _assert_parity(dev, frames, labels, dec)


def test_a_build_for_one_models_widths_refuses_other_widths(tmp_path):
    """The firmware of one model compiles in the walk of its node widths only
    (EC_FOREST_FEATURE_BYTES/EC_FOREST_REF_BYTES in ec_config.h): an image of other
    widths is refused with EC_ERR_KIND (not compiled in); kinds="all" opens both."""
    need_toolchain("host")
    small, X = _model("rf_class")
    other, _ = _model("rf_u16_refs")             # uint16 references
    images = [small.container.tobytes(), other.container.tobytes()]
    write_firmware(small.container, tmp_path, "host")
    cfg = (tmp_path / "ec_config.h").read_text()
    assert "#define EC_FOREST_FEATURE_BYTES 1" in cfg and "#define EC_FOREST_REF_BYTES 1" in cfg
    b = build_firmware(tmp_path, "host", probe=False)
    assert check_images(b.runner, images) == [(True, "ok"), (False, "error -9 kind")]
    frames = _frames(small, X[:50], np.random.default_rng(1), n_random=20)
    _assert_parity(small, frames, *run_firmware(tmp_path, frames, "host"))
    write_firmware(small.container, tmp_path / "all", "host", kinds="all")
    b = build_firmware(tmp_path / "all", "host", probe=False)
    assert check_images(b.runner, images) == [(True, "ok"), (True, "ok")]


# ---------------------------------------------------------------------- loader parity
def _structural_mutants(dev, L=None):
    """Edits of the node arrays a bit flip rarely makes: every reference moved by
    one, swapped children, a node cut out, a root pointing elsewhere, the
    reference dtypes mixed, a tree 65 levels deep. ``L``: the leaves (a forest's
    ``n_leaves``; an ECOC tree device's ``n_symbols``)."""
    c = dev.container
    a = {k: np.array(v) for k, v in c.arrays.items()}
    L = dev.n_leaves if L is None else L
    n_nodes = a["node_feature"].shape[0]
    out = []

    def emit(label, arrays):
        out.append((label, write_container(None, c.kind, arrays, c.meta or None)))

    for name in ("node_left", "node_right", "tree_root"):
        for i in list(range(min(6, a[name].shape[0]))) + [a[name].shape[0] - 1]:
            for delta in (-1, 1):
                b = dict(a)
                v = b[name].astype(np.int64).copy()
                v[i] = max(0, v[i] + delta)
                if v[i] > np.iinfo(b[name].dtype).max:
                    continue
                b[name] = v.astype(b[name].dtype)
                emit(f"{name}[{i}] {delta:+d}", b)
    if n_nodes:
        b = dict(a)
        b["node_left"], b["node_right"] = a["node_right"], a["node_left"]
        emit("children swapped", b)
        b = {k: (v[:-1] if k.startswith("node_") else v) for k, v in a.items()}
        emit("last node cut", b)
        b = dict(a)
        b["node_right"] = a["node_right"].astype(np.uint32)
        emit("reference dtypes differ", b)
        b = dict(a)
        b["node_feature"] = a["node_feature"].astype(np.int16)
        emit("signed feature ids", b)
        b = dict(a)
        b["node_feature"] = a["node_feature"].astype(np.uint32)
        emit("uint32 feature ids", b)
    # a 65-level chain: the opener's stack bound (the other trees one-leaf ones)
    n = 65
    chain = dict(a)
    roots = np.zeros(a["tree_root"].shape[0], np.uint16)
    roots[0] = L
    chain.update(node_feature=np.zeros(n, np.uint8), node_threshold=np.zeros(n, np.int16),
                 node_left=np.full(n, L, np.uint16), node_right=np.zeros(n, np.uint16),
                 tree_root=roots)
    chain["node_left"][-1] = 0
    emit("chain of 65 levels", chain)
    chain64 = {k: (v[1:] if k.startswith("node_") else v) for k, v in chain.items()}
    emit("chain of 64 levels", chain64)
    return out


@pytest.mark.parametrize("name", ["rf_proba", "rf_class", "extra_glass_u8"])
def test_c_loader_accepts_and_refuses_what_firmware_sim_does(name, tmp_path):
    import container_fuzz_driver as fz

    need_toolchain("host")
    dev, _ = _model(name)
    raw = dev.container.tobytes()
    write_firmware(raw, tmp_path, "host", kinds="all")
    b = build_firmware(tmp_path, "host", opt="-O1", sanitize=True, probe=False)
    rng = np.random.default_rng(12)
    lo, hi = _meta_range(raw)
    mutants = []
    for label, m in fz.flip_mutants(raw, 200, rng):
        if not lo <= int(label.split()[2]) < hi:      # metadata: host-side rules only
            mutants.append((label, m))
    mutants += list(fz.set_mutants(raw, 3)) + list(fz.shape_mutants(raw))
    mutants += _structural_mutants(dev)
    disagree, accepted = [], 0
    for (label, m), (c_ok, msg) in zip(mutants, check_images(b.runner, [m for _, m in mutants])):
        py_ok = _python_accepts(m)
        accepted += c_ok
        if c_ok != py_ok:
            disagree.append(f"{label}: python {'accepts' if py_ok else 'refuses'}, C {msg}")
    assert not disagree, f"{len(disagree)} of {len(mutants)} mutants:\n" + "\n".join(disagree[:15])
    assert 0 < accepted < len(mutants)


@pytest.mark.parametrize("name", ["ecoc_tree_3ary", "ecoc_tree_ternary"])
def test_c_loader_on_ecoc_trees_accepts_and_refuses_what_firmware_sim_does(name, tmp_path):
    """ECOC tree learners share the node format (issue 26): the same structural
    mutants, with the N symbols as the leaves, plus bit flips of the node arrays."""
    import container_fuzz_driver as fz
    from test_firmware import _model as _fw_model

    need_toolchain("host")
    dev, _ = _fw_model(name)
    raw = dev.container.tobytes()
    write_firmware(raw, tmp_path, "host", kinds="all")
    b = build_firmware(tmp_path, "host", opt="-O1", sanitize=True, probe=False)
    lo, hi = _meta_range(raw)
    mutants = [(label, m) for label, m in fz.flip_mutants(raw, 150, np.random.default_rng(3))
               if not lo <= int(label.split()[2]) < hi]
    mutants += _structural_mutants(dev, L=int(dev.n_symbols))
    disagree, accepted = [], 0
    for (label, m), (c_ok, msg) in zip(mutants, check_images(b.runner, [m for _, m in mutants])):
        py_ok = _python_accepts(m)
        accepted += c_ok
        if c_ok != py_ok:
            disagree.append(f"{label}: python {'accepts' if py_ok else 'refuses'}, C {msg}")
    assert not disagree, f"{len(disagree)} of {len(mutants)} mutants:\n" + "\n".join(disagree[:15])
    assert 0 < accepted < len(mutants)


def test_firmware_check_from_the_command_line(tmp_path, capsys):
    from export.cli import main

    need_toolchain("host")
    dev, X = _model("rf_class")
    art = tmp_path / "f.edgc"
    art.write_bytes(dev.container.tobytes())
    assert main(["firmware", str(art), "--out", str(tmp_path / "fw"), "--check", "--data",
                 "digits", "--split", "all", "--max-points", "60"]) == 0
    out = capsys.readouterr().out
    assert "forest" in out and ("equal" in out or "agree" in out or "match" in out), out
    assert firmware_sim.load(art).n_trees == 15


# ---------------------------------------------------------------------- the C API
def _api_models():
    """Forests on glass (labels 1..7, not 0..k-1) and ecoli (strings)."""
    from test_firmware_api import _ecoli, _glass

    if "api" in _CACHE:
        return _CACHE["api"]

    X, y = _glass()
    Xe, ye = _ecoli()
    _CACHE["api"] = {
        "glass": (export_forest(RandomForestClassifier(6, max_depth=5, random_state=0)
                                .fit(X, y)).container, X),
        "ecoli": (export_forest(ExtraTreesClassifier(5, max_depth=6, random_state=0)
                                .fit(Xe, ye), leaf="class").container, Xe),
    }
    return _CACHE["api"]


@pytest.mark.parametrize("name", ["glass", "ecoli"])
def test_class_names_and_ec_quantize_in_c(name, tmp_path):
    """The image's class names read from C, and ec_quantize / _float / _double equal
    device.encode on real rows and special values (the ECOC quantizer, shared)."""
    from test_firmware_api import _NAMES_C, _check_quantize, _compile, _real_rows, _run, \
        _specials

    need_toolchain("host")
    raw, X = _api_models()[name]
    dev = firmware_sim.load(raw)
    write_firmware(raw, tmp_path / "names", "host")
    lines = _run(_compile(tmp_path / "names", _NAMES_C)).splitlines()
    names = [str(v) for v in dev.meta["classes"]]
    assert lines == [str(len(names))] + names + ["null null"]
    rng = np.random.default_rng(4)
    want = _check_quantize(raw, _real_rows(X, rng) + _specials(X.shape[1], rng),
                           tmp_path / "q")
    assert {w.split()[0] for w in want} == {"ok", "error"}


def test_ec_quantize_of_a_forest_on_cortex_m4(tmp_path):
    from test_firmware_api import _check_quantize, _real_rows, _specials

    need_toolchain("cortex-m4", run=True)
    raw, X = _api_models()["glass"]
    rng = np.random.default_rng(8)
    _check_quantize(raw, _specials(X.shape[1], rng)[::3] + _real_rows(X[:30], rng), tmp_path,
                    "cortex-m4")


def test_the_main_c_of_the_docs_names_a_forests_classes(tmp_path, monkeypatch):
    """docs/firmware.md's main.c (raw features in, class name out) on forest images."""
    import shutil
    import subprocess

    from test_firmware_api import _doc_blocks, _names_of, _run

    need_toolchain("host")
    program, commands = _doc_blocks()
    gcc = next(c for c in commands if c.startswith("gcc "))
    (tmp_path / "main.c").write_text(program)
    monkeypatch.chdir(tmp_path)
    for name, (raw, X) in _api_models().items():
        dev = firmware_sim.load(raw)
        shutil.rmtree("fw", ignore_errors=True)
        write_firmware(raw, "fw", "host")
        res = subprocess.run(["bash", "-c", gcc + " -Werror -fsanitize=address,undefined"],
                             capture_output=True, text=True)
        assert res.returncode == 0, (name, res.stderr)
        text = "".join(" ".join(repr(float(v)) for v in r) + "\n" for r in X)
        assert _run(tmp_path / "classify", text).splitlines() == _names_of(dev, dev.encode(X))
