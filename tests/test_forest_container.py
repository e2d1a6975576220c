"""The forest container's rules (docs/container_format.md, "Model kind forest"), one by
one and under fuzzing.

* Fuzzing: forest images (probability leaves in uint16 and uint8, class leaves,
  single-leaf trees) through ``tests/container_fuzz_driver.py`` (bit flips,
  special values, dropped, shortened and recast arrays, wrong metadata): every
  mutant is refused with ``ContainerError`` or loads and runs with outputs in
  range.
* Rules: a hand-made violating image per rule, refused with a message naming
  the array and the rule.
* The one-pass layout check (numba, with a stack) agrees with the recursive
  reference ``tests/naive_forest.py::layout_ok`` on random edits of real node
  arrays (hypothesis).
"""

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.datasets import load_digits, load_iris
from sklearn.ensemble import ExtraTreesClassifier, RandomForestClassifier

import firmware_sim
import naive_forest as naive
from export.forest import export_forest
from firmware_sim.artifact import ContainerError, write_container

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    X, y = load_iris(return_X_y=True)
    names = np.array(["setosa", "versicolor", "virginica"])[y]
    out = tmp_path_factory.mktemp("forest_fuzz")
    blobs = {
        "proba16": export_forest(RandomForestClassifier(4, max_depth=3, random_state=0)
                                 .fit(X, names), meta={"dataset": "iris"}).container,
        "proba8_class": export_forest(ExtraTreesClassifier(3, max_depth=4, random_state=0)
                                      .fit(X, y), leaf="class").container,
        "u8_leaves": export_forest(RandomForestClassifier(3, max_depth=2, random_state=1)
                                   .fit(X, y), leaf_bits=8).container,
        "stumps": export_forest(RandomForestClassifier(2, random_state=0)
                                .fit(X, np.full(len(X), 4))).container,
    }
    paths = {}
    for name, blob in blobs.items():
        paths[name] = out / f"{name}.edgc"
        paths[name].write_bytes(blob)
    return paths


@pytest.mark.parametrize("image", ["proba16", "proba8_class", "u8_leaves", "stumps"])
def test_fuzz_forest(images, image):
    from test_container_fuzz import _fuzz

    (im,) = _fuzz([images[image]], "--max-flips", "2500", "--per-array", "8")
    assert im["kind"] == "forest" and im["mutants"] > (300 if image == "stumps" else 2000)


# ---------------------------------------------------------------- rules one by one
@pytest.fixture(scope="module")
def base():
    X, y = load_digits(return_X_y=True)
    dev = export_forest(RandomForestClassifier(3, max_depth=3, random_state=0).fit(X, y)).device
    return {k: np.array(v) for k, v in dev.container.arrays.items()}, dev.container.meta


def _refused(arrays, meta, match):
    raw = write_container(None, "forest", arrays, meta)
    with pytest.raises(ContainerError, match=match):
        firmware_sim.load(raw)


def _with(a, **changes):
    out = dict(a)
    out.update(changes)
    return out


def test_each_rule_is_refused_by_name(base):
    a, meta = base
    L = a["leaf_value"].shape[0]
    firmware_sim.load(write_container(None, "forest", a, meta))          # the base loads
    _refused(_with(a, n_classes=np.array([0], np.int32)), meta, r"'n_classes' must be in \[1")
    _refused(_with(a, n_classes=np.array([9], np.int32)), None, "'leaf_value' must have shape")
    _refused(_with(a, in_center=np.r_[a["in_center"][:-1], np.nan]), meta,
             "'in_center' must be finite")
    _refused(_with(a, in_shift=a["in_shift"][:-1]), meta, "'in_shift' must have shape")
    _refused(_with(a, tree_root=a["tree_root"].astype(np.int32)), meta,
             "'tree_root' must have dtype uint8 or uint16 or uint32")
    _refused(_with(a, tree_root=np.zeros(0, np.uint8)), meta, "at least one tree")
    _refused(_with(a, node_threshold=a["node_threshold"].astype(np.int32)), meta,
             "'node_threshold' must have dtype int16")
    _refused(_with(a, node_right=a["node_right"].astype(np.uint32)), meta, "one dtype")
    _refused(_with(a, node_left=a["node_left"][:-1]), meta, "'node_left' must have shape")
    _refused(_with(a, leaf_value=a["leaf_value"].astype(np.int16)), meta,
             "'leaf_value' must have dtype uint8 or uint16")
    f = a["node_feature"].copy()
    f[2] = 64
    _refused(_with(a, node_feature=f), meta, r"'node_feature' must be a feature in \[0, "
                                             r"n_features = 64\); got node_feature\[2\] = 64")
    left = a["node_left"].copy()
    i = int(np.flatnonzero(left == L)[0])
    left[i] = L + 1
    _refused(_with(a, node_left=left), meta, r"'node_left' must name a leaf .* or the next node")
    right = a["node_right"].copy()
    j = int(np.flatnonzero(right >= L)[0])
    right[j] += 1
    _refused(_with(a, node_right=right), meta, r"'node_right' must name a leaf .* right after")
    root = a["tree_root"].copy()
    root[1] += 1
    _refused(_with(a, tree_root=root), meta, r"'tree_root' must name a leaf or the next unused")
    root = a["tree_root"].copy()
    root[2] = 0                                        # the last tree becomes a leaf
    _refused(_with(a, tree_root=root), meta, "nodes after the last tree")
    # a 65-level chain; 64 levels load
    n = 65
    chain = _with(a, node_feature=np.zeros(n, np.uint8), node_threshold=np.zeros(n, np.int16),
                  node_left=np.full(n, L, np.uint16), node_right=np.zeros(n, np.uint16),
                  tree_root=np.array([L], np.uint16))
    chain["node_left"][-1] = 0
    _refused(chain, meta, "at most 64 decision levels")
    chain = {k: (v[1:] if k.startswith("node_") else v) for k, v in chain.items()}
    assert firmware_sim.load(write_container(None, "forest", chain, meta)).depth.max() == 64
    # a reference past the last node
    cut = {k: (v[:-1] if k.startswith("node_") else v) for k, v in a.items()}
    _refused(cut, meta, "inside the")
    # metadata
    _refused(a, {**meta, "leaf": "class"}, "metadata key 'leaf' must be 'proba'")
    _refused(a, {**meta, "leaf_bits": 8}, "metadata key 'leaf_bits' must be 16")
    _refused(a, {**meta, "classes": meta["classes"][:-1]}, "'classes' must have 10 entries")


def test_class_leaves_use_the_classes_as_leaves(base):
    a, meta = base
    cls = {k: v for k, v in a.items() if k != "leaf_value"}
    # references to rows of the (removed) table now name classes: out of [0, 10) refs
    # become node references, which break the layout
    with pytest.raises(ContainerError):
        firmware_sim.load(write_container(None, "forest", cls, {**meta, "leaf": "class"}))
    X, y = load_digits(return_X_y=True)
    dev = export_forest(RandomForestClassifier(3, max_depth=3, random_state=0).fit(X, y),
                        leaf="class").device
    assert dev.n_leaves == dev.n_classes == 10 and dev.stage_symbols == 10


# ---------------------------------------------------------------- layout vs reference
@pytest.fixture(scope="module")
def forests():
    X, y = load_iris(return_X_y=True)
    return [export_forest(RandomForestClassifier(k, max_depth=d, random_state=k)
                          .fit(X, y), leaf=leaf).device.container
            for k, d, leaf in ((3, 4, "proba"), (2, 6, "class"), (5, 2, "proba"))]


@settings(max_examples=150, deadline=None)
@given(which=st.integers(0, 2), edits=st.lists(
    st.tuples(st.sampled_from(["node_left", "node_right", "tree_root", "node_feature"]),
              st.integers(0, 10**6), st.integers(-3, 3)), min_size=1, max_size=3))
def test_the_layout_check_equals_the_recursive_reference(forests, which, edits):
    c = forests[which]
    a = {k: np.array(v) for k, v in c.arrays.items()}
    for name, at, delta in edits:
        v = a[name].astype(np.int64)
        if v.size == 0:
            continue
        v[at % v.size] = max(0, v[at % v.size] + delta)
        a[name] = v.astype(a[name].dtype) if v.max() <= np.iinfo(a[name].dtype).max else \
            a[name]
    raw = write_container(None, "forest", a, c.meta)
    try:
        firmware_sim.load(raw)
        accepted = True
    except ContainerError:
        accepted = False
    assert accepted == naive.layout_ok(a)
