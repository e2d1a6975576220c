"""Malformed images are refused (issue 11): fuzzing and the consistency rules one by one.

Every loader (``load_protected_nb``, ``load_ecoc``, ``load_ssbc``) must refuse
an inconsistent image with ``ContainerError`` naming the array or field and
the rule, before anything big is allocated: no hang, no crash, no raw numpy
error. The rules are each kind's ``check_container`` (``firmware_sim/kinds``) and the sections
"Consistency rules" of ``docs/container_format.md``.

* Fuzzing: a small real image per kind, mutated bit by bit and value by value
  with the CRC re-stamped (``container_fuzz_driver.py``, run in a subprocess
  with a timeout so that a hang or a segfault fails the test with the mutant's
  name instead of killing pytest).
* Rules: a hand-made violating image per rule, refused with a message that
  names the field.
* CLI: ``simulate``, ``upsets`` and ``campaign`` on a bad image print one
  ``error: ...`` line and exit non-zero.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from firmware_sim.artifact import ContainerError, read_container, write_container
from firmware_sim.ecoc import load_ecoc, make_ecoc_arrays
from firmware_sim.naive_bayes import load_protected_nb, make_protected_nb_arrays
from firmware_sim.ssbc import load_ssbc, make_ssbc_arrays

HERE = Path(__file__).resolve().parent
DRIVER = HERE / "container_fuzz_driver.py"
#: Generous: only a hang gets near it (the drivers take seconds).
FUZZ_TIMEOUT_S = 300


# ----------------------------------------------------------------- fuzzing
def _fuzz(paths, *extra):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(HERE.parent), env.get("PYTHONPATH", "")])
    cmd = [sys.executable, str(DRIVER), *map(str, paths), *extra]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=FUZZ_TIMEOUT_S,
                              env=env, cwd=str(HERE))
    except subprocess.TimeoutExpired as exc:
        err = exc.stderr.decode() if isinstance(exc.stderr, bytes) else (exc.stderr or "")
        last = err.strip().splitlines()[-1:] or ["<no mutant started>"]
        pytest.fail(f"fuzz driver hung (> {FUZZ_TIMEOUT_S} s); last mutant: {last[0]}")
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines()
        last = [ln for ln in lines if ": " in ln and not ln.startswith(" ")][-1:] or ["?"]
        pytest.fail(f"fuzz driver died with return code {proc.returncode} (negative: killed "
                    f"by a signal, e.g. -11 segfault); last mutant: {last[0]}\n"
                    + "\n".join(lines[-15:]))
    report = json.loads(proc.stdout.strip().splitlines()[-1])["images"]
    for im in report:
        print(f"{Path(im['image']).name}: {im['mutants']} mutants, {im['refused']} refused, "
              f"{im['ran']} loaded and ran, {len(im['failures'])} failures")
        assert not im["failures"], "\n".join(im["failures"][:30])
        assert im["refused"] > 0 and im["ran"] > 0
    return report


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    """Small real images, written through the exporters."""
    from sklearn.datasets import load_iris
    from sklearn.linear_model import LogisticRegression
    from sklearn.tree import DecisionTreeClassifier

    from edgecode.datasets import load_house_votes
    from edgecode.ecoc.classifier import ECOCClassifier
    from edgecode.hashing import SSBC
    from edgecode.naive_bayes import BinaryNaiveBayes
    from export.ecoc import export_ecoc
    from export.naive_bayes import export_protected_nb
    from export.ssbc import export_ssbc

    out = tmp_path_factory.mktemp("fuzz")
    X, y = load_iris(return_X_y=True)
    hv = load_house_votes()
    nb = BinaryNaiveBayes().fit(hv.X, hv.y)
    blobs = {"protected_nb": export_protected_nb(nb, np.array([0, 1, 2, 3] * 4),
                                                 meta={"dataset": "house_votes"}).container}
    logistic = LogisticRegression(max_iter=300)
    ternary = [[0, 1, -1, 1, 1], [1, -1, 0, 1, 0], [-1, 0, 1, 0, 0]]   # N = 2 with unused
    blobs["ecoc_linear"] = export_ecoc(ECOCClassifier(logistic, code=ternary).fit(X, y), X,
                                       meta={"dataset": "iris"}).container
    binary = [[0, 1, 1, 0], [1, 0, 1, 1], [1, 1, 0, 0]]
    tree = DecisionTreeClassifier(max_depth=3, random_state=0)
    blobs["ecoc_tree"] = export_ecoc(ECOCClassifier(tree, code=binary).fit(X, y), X).container
    nary = [[0, 1, 2], [1, 2, 0], [2, 0, 1]]                           # N = 3, argmax learners
    blobs["ecoc_nary"] = export_ecoc(ECOCClassifier(logistic, code=nary).fit(X, y),
                                     X).container
    h = SSBC(6, 12, 8, center=True, random_state=0).fit(X)
    blobs["ssbc"] = export_ssbc(h, X_table=X[::5], y_table=y[::5], knn_k=3,
                                meta={"dataset": "iris"}).container
    paths = {}
    for name, blob in blobs.items():
        paths[name] = out / f"{name}.edgc"
        paths[name].write_bytes(blob)
    return paths


def test_fuzz_protected_nb(images):
    (im,) = _fuzz([images["protected_nb"]])
    assert im["kind"] == "protected_nb" and im["mutants"] > 2000


@pytest.mark.parametrize("image", ["ecoc_linear", "ecoc_tree", "ecoc_nary"])
def test_fuzz_ecoc(images, image):
    (im,) = _fuzz([images[image]], "--max-flips", "3000", "--per-array", "10")   # ~20 s in all
    assert im["kind"] == "ecoc" and im["mutants"] > 4000


def test_fuzz_ssbc(images):
    (im,) = _fuzz([images["ssbc"]])
    assert im["kind"] == "ssbc" and im["mutants"] > 4000


def test_driver_restamps_the_checksum(images):
    sys.path.insert(0, str(HERE))
    try:
        from container_fuzz_driver import restamp, table
    finally:
        sys.path.remove(str(HERE))
    raw = images["protected_nb"].read_bytes()
    assert restamp(raw) == raw
    (offset,) = [off for name, _, _, off in table(raw) if name == "weights"]
    buf = bytearray(raw)
    buf[offset:offset + 4] = np.array([2**31 - 1], np.int32).tobytes()
    with pytest.raises(ContainerError, match="checksum mismatch"):
        read_container(bytes(buf))
    # re-stamped, the image passes the CRC and reaches the device's rules
    with pytest.raises(ContainerError, match="int32 accumulator"):
        load_protected_nb(restamp(buf))


def _huge_empty(shape=(2**32 - 1, 2**32 - 1, 0)):
    """A valid container whose empty array ``e`` declares ``shape`` (CRC re-stamped)."""
    sys.path.insert(0, str(HERE))
    try:
        from container_fuzz_driver import with_shape
    finally:
        sys.path.remove(str(HERE))
    raw = write_container(None, "ecoc", {"e": np.zeros((1, 1, 0), np.int16),
                                         "v": np.arange(3, dtype=np.int32)})
    return with_shape(raw, "e", shape)


@pytest.mark.parametrize("shape", [(2**32 - 1, 2**32 - 1, 0), (2**16, 0, 2**15),
                                   (0, 2**32 - 1, 2)])
def test_an_empty_array_whose_other_dimensions_overflow_is_refused(shape):
    """Found by fuzzing: read_container raised numpy's ValueError ("cannot reshape
    array of size 0") instead of ContainerError, and the C loader accepted it."""
    with pytest.raises(ContainerError, match=r"array 'e': shape .* is too large: 2 \* the "
                                             r"product of its non-zero dimensions"):
        read_container(_huge_empty(shape))


def test_the_largest_empty_shape_a_file_could_hold_is_accepted_and_written():
    raw = _huge_empty((2**31 - 1, 0, 1))          # 2 * (2**31 - 1) <= 2**32 - 1
    assert read_container(raw).arrays["e"].shape == (2**31 - 1, 0, 1)
    # the writer refuses what the reader refuses (numpy can make this one)
    with pytest.raises(ContainerError, match="non-zero dimensions is 4294967296 bytes"):
        write_container(None, "ecoc", {"e": np.zeros((2**16, 2**15, 0), np.int16)})


# ------------------------------------------------------- helpers for rules
def _refused(loader, kind, arrays, match, meta=None):
    raw = write_container(None, kind, arrays, meta)
    with pytest.raises(ContainerError, match=match):
        loader(raw)


def _with(arrays, **changes):
    out = dict(arrays)
    for name, value in changes.items():
        if value is None:
            out.pop(name, None)
        else:
            out[name] = np.asarray(value, dtype=out[name].dtype if name in out else None)
    return out


def _set(arrays, name, index, value):
    a = np.array(arrays[name])
    a[index] = value
    return {**arrays, name: a}


# ------------------------------------------------------- protected_nb rules
def _nb():
    return make_protected_nb_arrays([7, -3, 2], -4, [2, 0, 1], 5)


def test_nb_clean_image_loads():
    dev = load_protected_nb(write_container(None, "protected_nb", _nb(),
                                            {"classes": ["a", "b"], "feature_names": ["x"] * 3,
                                             "planned_mean_scp": "0.9", "dataset": "d"}))
    assert dev.total_bits == 9


@pytest.mark.parametrize("mutate, match", [
    (lambda a: _with(a, repetitions=np.zeros(0, np.uint16), weights=np.zeros(0, np.int32)),
     "'repetitions' must have at least one feature"),
    (lambda a: _with(a, weights=[7, -3]), r"'weights' must have shape \(3,\)"),
    (lambda a: _with(a, bias=[-4, 0]), r"'bias' must have shape \(1,\)"),
    (lambda a: _with(a, scale_shift=[63]), r"'scale_shift' must be in \[0, 62\]; got 63"),
    (lambda a: _with(a, scale_shift=[-1]), r"'scale_shift' must be in \[0, 62\]"),
    (lambda a: _with(a, bias=[-2**31]), r"'weights' and 'bias': sum\(\|weights\|\) \+ \|bias\|"),
    (lambda a: _with(a, weights=[2**31 - 1, -3, 2]), "int32 accumulator"),
], ids=["no feature", "weights length", "bias shape", "scale_shift high", "scale_shift low",
        "bias overflow", "weights overflow"])
def test_nb_rules(mutate, match):
    _refused(load_protected_nb, "protected_nb", mutate(_nb()), match)


def test_nb_total_bits_fit_a_uint32_bit_index():
    n = 2**15 + 1                        # (2 * 65535 + 1) * n >= 2**32
    arrays = make_protected_nb_arrays(np.zeros(n, np.int64), 1, np.full(n, 65535), 0)
    _refused(load_protected_nb, "protected_nb", arrays,
             r"'repetitions': sum\(2 \* repetitions \+ 1\) = \d+ must be < 2\*\*32")


@pytest.mark.parametrize("meta, match", [
    ({"dataset": 5}, "metadata key 'dataset' must be a string; got int 5"),
    ({"classes": "ab"}, "metadata key 'classes' must be a list of class labels"),
    ({"classes": ["a", "b", "c"]}, "metadata key 'classes' must have 2 entries; got 3"),
    ({"feature_names": ["a"]}, "metadata key 'feature_names' must have 0 or 3 entries"),
    ({"feature_names": [1, 2, 3]}, "metadata key 'feature_names' must be a list of strings"),
    ({"planned_mean_scp": "high"}, "metadata key 'planned_mean_scp' must be a number or a "
                                   "string holding a finite number"),
    ({"planned_mean_scp": [0.9]}, "'planned_mean_scp' must be a number"),
    ({"planned_eps": {"a": 1}}, "'planned_eps' must be a list of numbers or a string"),
    ({"planning_points": "many"}, "'planning_points' must be an integer"),
], ids=lambda v: str(v)[:30])
def test_nb_meta_types(meta, match):
    _refused(load_protected_nb, "protected_nb", _nb(), match, meta=meta)


# --------------------------------------------------------------- ecoc rules
_CODE = np.array([[0, 1, 1, -1, 0], [1, 0, 1, 0, 0], [1, 1, 0, 1, 0]])   # column 4: constant


def _ecoc_linear():
    n_cls = [2, 2, 2, 2, 1]
    classes = [0, 1] * 4 + [0]
    w = np.arange(8, dtype=np.int32).reshape(2, 4) - 3
    return make_ecoc_arrays(_CODE, classes, n_cls, [0.5, -1.0], [4, 3],
                            linear={"weights": w, "bias": [1, -2, 3, 0],
                                    "n_out": [1, 1, 1, 1, 0]})


def _ecoc_nary():
    code = np.array([[0, 1, 2], [1, 2, 0], [2, 0, 1]])
    w = (np.arange(18, dtype=np.int32).reshape(2, 9) % 5) - 2
    return make_ecoc_arrays(code, [0, 1, 2] * 3, [3, 3, 3], [0.0, 0.0], [0, 0],
                            linear={"weights": w, "bias": np.zeros(9, np.int64),
                                    "n_out": [3, 3, 3]})


# three trees: column 0 nodes 0-2, column 1 node 3 (constant learner, symbol 1),
# column 2 nodes 4-6
_TREE = {"feature": [0, -1, -1, -1, 1, -1, -1], "threshold": [10, 0, 0, 0, -5, 0, 0],
         "left": [1, -1, -1, -1, 5, -1, -1], "right": [2, -1, -1, -1, 6, -1, -1],
         "leaf": [0, 0, 1, 1, 0, 0, 1], "root": [0, 3, 4]}
_TREE_CODE = np.array([[0, 1, 0], [0, 1, 1], [1, 1, 0], [1, 1, 1]])


def _ecoc_tree():
    return make_ecoc_arrays(_TREE_CODE, [0, 1, 1, 0, 1], [2, 1, 2], [0.0, 0.0], [0, 0],
                            tree=_TREE)


def _ecoc_tree_node_col1():
    """_ecoc_tree with a decision node in column 1 (constant learner, symbol 1) whose
    both leaves are symbol 1."""
    return {**_ecoc_tree(), "tree_root": np.array([2, 3, 4], np.uint8),
            "node_feature": np.array([0, 1, 1], np.uint8),
            "node_threshold": np.array([10, 3, -5], np.int16),
            "node_left": np.array([0, 1, 0], np.uint8),
            "node_right": np.array([1, 1, 1], np.uint8)}


def test_ecoc_trees_are_compacted_to_the_forest_node_format():
    """make_ecoc_arrays turns scikit-learn's global node arrays into the compact
    format (issue 26): decision nodes only, the symbols as leaves, narrow dtypes; a
    node whose threshold is outside int16 becomes the child every input takes."""
    a = _ecoc_tree()
    assert {k: a[k].tolist() for k in ("tree_root", "node_feature", "node_threshold",
                                       "node_left", "node_right")} == {
        "tree_root": [2, 1, 3], "node_feature": [0, 1], "node_threshold": [10, -5],
        "node_left": [0, 0], "node_right": [1, 1]}
    assert a["node_left"].dtype == np.uint8 and a["node_threshold"].dtype == np.int16
    assert not any(k.startswith("tree_") and k != "tree_root" for k in a)
    load_ecoc(write_container(None, "ecoc", _ecoc_tree_node_col1()))
    # thresholds beyond int16: 40000 (every input goes left), -40000 (right)
    wide = make_ecoc_arrays(_TREE_CODE, [0, 1, 1, 0, 1], [2, 1, 2], [0.0, 0.0], [0, 0],
                            tree={**_TREE, "threshold": [40000, 0, 0, 0, -40000, 0, 0]})
    assert wide["tree_root"].tolist() == [0, 1, 1] and wide["node_feature"].size == 0
    dev = load_ecoc(write_container(None, "ecoc", wide))
    q = np.array([[-32768, -32768], [32767, 32767]], np.int16)
    assert dev.learner_outputs(q).tolist() == [[0, 1, 1], [0, 1, 1]]


def test_ecoc_clean_images_load_and_run():
    q = np.array([[0, 0], [32767, -32768], [-32768, 32767], [11, -5]], np.int16)
    for arrays in (_ecoc_linear(), _ecoc_nary(), _ecoc_tree()):
        dev = load_ecoc(write_container(None, "ecoc", arrays,
                                        {"classes": [str(i) for i in range(len(arrays["code"]))],
                                         "dataset": "d"}))
        labels = dev.predict(q)
        assert labels.min() >= 0 and labels.max() < dev.n_classes
        dev.resources()
    assert load_ecoc(write_container(None, "ecoc", _ecoc_tree()))._depths().tolist() == [1, 0, 1]


ECOC_RULES = {
    # the code and the alphabet
    "code one row": (_ecoc_linear, lambda a: {**a, "code": a["code"][:1],
                                              "unused_count": a["unused_count"][:1],
                                              "code_bits": a["code_bits"][:1],
                                              "code_used": a["code_used"][:1]},
                     "'code' must have >= 2 rows"),
    "code below -1": (_ecoc_linear, lambda a: _set(a, "code", (0, 0), -2),
                      "'code' must hold symbols >= 0 or -1"),
    "n_symbols": (_ecoc_linear, lambda a: _with(a, n_symbols=[3]),
                  r"'n_symbols' must equal max\(2, max\(code\) \+ 1\) = 2"),
    "n_symbols huge": (_ecoc_nary, lambda a: _with(a, n_symbols=[2**31 - 1]), "'n_symbols'"),
    "unused_count": (_ecoc_linear, lambda a: _set(a, "unused_count", 0, -1),
                     "'unused_count' must equal the number of -1 entries"),
    # the learners' symbols
    "col_n_cls zero": (_ecoc_linear, lambda a: _set(a, "col_n_cls", 4, 0),
                       "'col_n_cls' must count 1..n_symbols"),
    "col_n_cls huge": (_ecoc_linear, lambda a: _set(a, "col_n_cls", 0, 2**31 - 1),
                       "'col_n_cls' must count"),
    "col_classes length": (_ecoc_linear, lambda a: {**a, "col_classes": a["col_classes"][:-1]},
                           r"'col_classes' must have shape \(9,\)"),
    "col_cls_offset": (_ecoc_linear, lambda a: _set(a, "col_cls_offset", 1, 2**30),
                       "'col_cls_offset' must equal the running sum of 'col_n_cls'"),
    "col_classes symbol": (_ecoc_linear, lambda a: _set(a, "col_classes", 1, 7),
                           r"'col_classes' must hold symbols in \[0, n_symbols = 2\)"),
    "col_classes negative": (_ecoc_linear, lambda a: _set(a, "col_classes", 1, -1),
                             "'col_classes' must hold symbols"),
    "col_classes order": (_ecoc_linear, lambda a: _set(a, "col_classes", 1, 0),
                          "'col_classes' must be strictly increasing within a column"),
    # input quantizer
    "in_center nan": (_ecoc_linear, lambda a: _set(a, "in_center", 1, np.nan),
                      "'in_center' must be finite; got in_center"),
    "in_center inf": (_ecoc_linear, lambda a: _set(a, "in_center", 0, -np.inf),
                      "'in_center' must be finite"),
    "in_shift shape": (_ecoc_linear, lambda a: {**a, "in_shift": a["in_shift"][:1]},
                       r"'in_shift' must have shape \(2,\)"),
    # packed binary code
    "code_bits": (_ecoc_linear, lambda a: _set(a, "code_bits", (0, 0), 0),
                  r"'code_bits' must equal 'code' == 1 packed"),
    "code_used": (_ecoc_linear, lambda a: _set(a, "code_used", (2, 0), 2**40),
                  r"'code_used' must equal 'code' >= 0 packed"),
    "code_bits missing": (_ecoc_linear, lambda a: _with(a, code_bits=None),
                          "'code_bits' is missing"),
    "code_bits with N=3": (_ecoc_nary, lambda a: {**a, "code_bits": np.zeros((3, 1), np.uint64)},
                           "'code_bits' is only for binary codes"),
    "learner_kind": (_ecoc_linear, lambda a: _with(a, learner_kind=[3]),
                     "'learner_kind' must be one of"),
    "arrays of the other learner": (_ecoc_linear,
                                    lambda a: {**a, "tree_root": np.zeros(5, np.int32)},
                                    r"\['tree_root'\] do not belong to linear learners"),
    # linear learners
    "col_n_out constant": (_ecoc_linear, lambda a: _set(_set(a, "col_n_out", 4, 1),
                                                        "col_n_out", 3, 0),
                           "'col_n_out' must be 0 for a constant learner"),
    "col_n_out huge": (_ecoc_linear, lambda a: _set(a, "col_n_out", 0, 2**31 - 1),
                       r"col_n_out\[0\] = 2147483647"),
    "col_n_out sum": (_ecoc_nary, lambda a: {**a, "lin_weights": a["lin_weights"][:, :8],
                                             "lin_bias": a["lin_bias"][:8]},
                      "'col_n_out' must sum to the 8 columns of 'lin_weights'"),
    "col_out_offset": (_ecoc_linear, lambda a: _set(a, "col_out_offset", 1, 2**30),
                       "'col_out_offset' must equal the running sum of 'col_n_out'"),
    "col_out_offset negative": (_ecoc_linear, lambda a: _set(a, "col_out_offset", 3, -1),
                                "'col_out_offset' must equal"),
    "lin_bias overflow": (_ecoc_linear, lambda a: _set(a, "lin_bias", 2, 2**63 - 100),
                          "int64 accumulator overflow"),
    "lin_weights overflow": (_ecoc_linear,
                             lambda a: {**a, "lin_weights": np.full((2, 4), 2**31 - 1, np.int32),
                                        "lin_bias": np.full(4, 2**63 - 2**40, np.int64)},
                             r"'lin_weights' and 'lin_bias': score 0"),
    "lin_bias missing": (_ecoc_linear, lambda a: _with(a, lin_bias=None), "'lin_bias' is missing"),
    # trees: the compact node format of kind forest (issue 26); _TREE compacts to
    # tree_root [2, 1, 3], node_feature [0, 1], node_threshold [10, -5],
    # node_left [0, 0], node_right [1, 1] (N = 2 symbols: references 0, 1 are leaves)
    "tree_root beyond the nodes": (_ecoc_tree, lambda a: _set(a, "tree_root", 2, 9),
                                   r"'tree_root' must name a leaf or the next unused node .* "
                                   r"tree_root\[2\] = 9"),
    "tree_root skips a node": (_ecoc_tree, lambda a: _set(a, "tree_root", 0, 3),
                               r"tree_root\[0\] = 3"),
    "shared node": (_ecoc_tree, lambda a: _set(a, "tree_root", 2, 2), r"tree_root\[2\] = 2"),
    "orphan node": (_ecoc_tree, lambda a: _set(a, "tree_root", 2, 1),
                    r"'node_feature' must hold only the trees' nodes"),
    "tree_root per column": (_ecoc_tree, lambda a: {**a, "tree_root": a["tree_root"][:2]},
                             "'tree_root'"),
    "node_feature range": (_ecoc_tree, lambda a: _set(a, "node_feature", 0, 2),
                           r"'node_feature' must be a feature in \[0, n_features = 2\)"),
    "node_left not the next node": (_ecoc_tree, lambda a: _set(a, "node_left", 0, 3),
                                    r"'node_left' must name a leaf \(< 2\) or the next node"),
    "node_right past the nodes": (_ecoc_tree, lambda a: _set(a, "node_right", 1, 2),
                                  "must reference nodes inside the 2 nodes"),
    "reference dtypes differ": (_ecoc_tree,
                                lambda a: {**a, "node_right": a["node_right"].astype(np.uint16)},
                                "'node_left' and 'node_right' must have one dtype"),
    "signed feature ids": (_ecoc_tree,
                           lambda a: {**a, "node_feature": a["node_feature"].astype(np.int16)},
                           "'node_feature' must have dtype uint8 or uint16 or uint32"),
    "int32 thresholds": (_ecoc_tree,
                         lambda a: {**a, "node_threshold": a["node_threshold"].astype(np.int32)},
                         "'node_threshold'"),
    "leaf not the column's": (_ecoc_tree, lambda a: _set(a, "tree_root", 1, 0),
                              r"'tree_root' must reach only symbols of its column's learner; "
                              r"got tree_root\[1\] = 0 .* column 1 \(symbols \[1\]\)"),
    "node leaf not the column's": (_ecoc_tree_node_col1, lambda a: _set(a, "node_left", 1, 0),
                                   r"'node_left' must reach only symbols of its column's "
                                   r"learner; got node_left\[1\] = 0"),
}


@pytest.mark.parametrize("case", list(ECOC_RULES))
def test_ecoc_rules(case):
    build, mutate, match = ECOC_RULES[case]
    _refused(load_ecoc, "ecoc", mutate(build()), match)


@pytest.mark.parametrize("meta, match", [
    ({"dataset": 5}, "metadata key 'dataset' must be a string"),
    ({"classes": ["a", "b"]}, "metadata key 'classes' must have 3 entries; got 2"),
    ({"classes": [["a"], "b", "c"]}, "'classes' must be a list of class labels"),
    ({"learner_kind": "tree"}, "metadata key 'learner_kind' must be 'linear'"),
    ({"n_symbols": "2"}, "metadata key 'n_symbols' must be an integer"),
    ({"weight_shifts": [1, 2]}, "metadata key 'weight_shifts' must have 5 entries"),
    ({"weight_shifts": [1.5] * 5}, "'weight_shifts' must be a list of integers"),
], ids=lambda v: str(v)[:30])
def test_ecoc_meta_types(meta, match):
    _refused(load_ecoc, "ecoc", _ecoc_linear(), match, meta=meta)


# --------------------------------------------------------------- ssbc rules
def _ssbc():
    return make_ssbc_arrays(np.eye(3), 1.0, np.ones((3, 2)), np.zeros(2),
                            table_bits=[[0, 1], [1, 1], [1, 0]], table_labels=[0, 1, 1],
                            knn_k=2)


SSBC_RULES = {
    "anchors -32768": (lambda a: _set(a, "anchors", (1, 2), -32768),
                       r"'anchors' must be in \[-32767, 32767\]; got anchors\[1, 2\] = -32768"),
    "anchors empty": (lambda a: {**a, "anchors": np.zeros((0, 3), np.int16),
                                 "projection": np.zeros((0, 2), np.int16)},
                      "'anchors' must have shape"),
    "input_shift": (lambda a: _with(a, input_shift=[31]), r"'input_shift' must be in \[-30, 30\]"),
    "sigma nan": (lambda a: _with(a, sigma=[np.nan]), "'sigma' must be positive and finite"),
    "sigma zero": (lambda a: _with(a, sigma=[0.0]), "'sigma' must be positive"),
    "exp_mult range": (lambda a: _with(a, exp_mult=[0]), r"'exp_mult' must be in \[1, "),
    "clamp product": (lambda a: _with(a, dist_clamp=[1]), "dist_clamp \\* exp_mult must lie"),
    "exp_mult vs sigma": (lambda a: _with(a, sigma=[1.5]),
                          r"'exp_mult' must be round\(2\*\*56 log2\(e\) / \(sigma \* "
                          r"4\*\*input_shift\)\)"),
    "exp_mult vs input_shift": (lambda a: _with(a, input_shift=[13]), "'exp_mult' must be round"),
    "exp_mult off by one": (lambda a: _with(a, exp_mult=a["exp_mult"] + 1),
                            "'exp_mult' must be round"),
    "dist_clamp": (lambda a: _with(a, dist_clamp=a["dist_clamp"] + 1),
                   r"'dist_clamp' must be ceil\(17 \* 2\*\*56 / exp_mult\)"),
    "exp_lut": (lambda a: _set(a, "exp_lut", 3, 0), "'exp_lut' must be the Q15 table"),
    "projection no bit": (lambda a: {**a, "projection": np.zeros((3, 0), np.int16),
                                     "thresholds": np.zeros(0, np.int64)},
                          "'projection' must have at least one column"),
    "projection rows": (lambda a: {**a, "projection": a["projection"][:2]},
                        r"'projection' must have shape \(3, \*\)"),
    "projection_shift": (lambda a: _with(a, projection_shift=[-31]), "'projection_shift' must"),
    "thresholds": (lambda a: _set(a, "thresholds", 1, 2**62), r"'thresholds' must have "
                                                                r"\|value\| < 2\*\*62"),
    "table empty": (lambda a: {**a, "table_codes": np.zeros((0, 1), np.uint8),
                               "table_labels": np.zeros(0, np.int32)},
                    "'table_codes' is empty"),
    "table padding": (lambda a: _set(a, "table_codes", 2, 0x81),
                      r"'table_codes' has nonzero padding bits beyond bit 1 \(row 2\)"),
    "table_labels length": (lambda a: {**a, "table_labels": a["table_labels"][:2]},
                            r"'table_labels' must have shape \(3,\)"),
    "table_labels range": (lambda a: _set(a, "table_labels", 1, 2),
                           r"'table_labels' must be in \[0, 2\); got table_labels\[1\] = 2"),
    "table_labels negative": (lambda a: _set(a, "table_labels", 0, -1), "'table_labels'"),
    "n_classes zero": (lambda a: _with(a, n_classes=[0]), r"'n_classes' must be in \[1, 3\]"),
    "n_classes huge": (lambda a: _with(a, n_classes=[2**31 - 1]),
                       r"'n_classes' must be in \[1, 3\]; got 2147483647"),
    "knn_k": (lambda a: _with(a, knn_k=[4]), r"'knn_k' must be in \[1, 3\]"),
    "knn_k zero": (lambda a: _with(a, knn_k=[0]), "'knn_k'"),
    "table arrays without table": (lambda a: _with(a, table_codes=None),
                                   "'table_labels' given without 'table_codes'"),
}


def test_ssbc_exp_lut_rule_is_the_device_table():
    from firmware_sim.ssbc import exp_lut
    i = np.arange(257)
    np.testing.assert_array_equal(exp_lut(), [round(2.0 ** 15 * 2.0 ** (-k / 256)) for k in i])


def test_ssbc_clean_image_loads_and_runs():
    dev = load_ssbc(write_container(None, "ssbc", _ssbc(),
                                    {"classes": ["a", "b"], "n_bits": 2, "n_anchors": 3,
                                     "bit_order": "lsb_first", "sigma": 1.0}))
    labels = dev.predict(np.vstack([np.eye(3), np.full((1, 3), 1e6)]))
    assert labels.min() >= 0 and labels.max() < dev.n_classes == 2
    assert load_ssbc(dev.container).n_bits == 2      # load_ssbc takes a Container too


@pytest.mark.parametrize("case", list(SSBC_RULES))
def test_ssbc_rules(case):
    mutate, match = SSBC_RULES[case]
    _refused(load_ssbc, "ssbc", mutate(_ssbc()), match)


@pytest.mark.parametrize("meta, match", [
    ({"dataset": 5}, "metadata key 'dataset' must be a string; got int 5"),
    ({"classes": ["a"]}, "metadata key 'classes' must have 2 entries; got 1"),
    ({"classes": {"0": "a"}}, "'classes' must be a list of class labels"),
    ({"n_bits": 3}, "metadata key 'n_bits' must be 2"),
    ({"n_bits": "2"}, "metadata key 'n_bits' must be an integer"),
    ({"n_anchors": 4}, "metadata key 'n_anchors' must be 3"),
    ({"bit_order": "msb_first"}, "metadata key 'bit_order' must be 'lsb_first'"),
    ({"sigma": "1"}, "metadata key 'sigma' must be a number"),
    ({"mode": 1}, "metadata key 'mode' must be a string"),
], ids=lambda v: str(v)[:30])
def test_ssbc_meta_types(meta, match):
    _refused(load_ssbc, "ssbc", _ssbc(), match, meta=meta)


# --------------------------------------------------------------------- CLI
def _cli(argv, capsys):
    from export.cli import main
    code = main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    return code, err


def test_cli_bad_images_are_one_line_errors(tmp_path, images, capsys):
    nb = read_container(images["protected_nb"])
    bad_meta = tmp_path / "bad_meta.edgc"
    write_container(bad_meta, "protected_nb", dict(nb.arrays), {**nb.meta, "dataset": 5})
    lin = read_container(images["ecoc_linear"])
    bad_offset = tmp_path / "bad_offset.edgc"           # used to segfault
    write_container(bad_offset, "ecoc", _set(dict(lin.arrays), "col_out_offset", 1, 2**30),
                    lin.meta)
    tree = read_container(images["ecoc_tree"])
    cycle = tmp_path / "cycle.edgc"                     # used to hang (a cycle, int32 nodes)
    write_container(cycle, "ecoc", _set(dict(tree.arrays), "node_left", 0,
                                        int(tree.arrays["n_symbols"][0]) + 3), tree.meta)
    garbage = tmp_path / "garbage.edgc"
    garbage.write_bytes(b"not a container")
    runs = [
        (["simulate", str(bad_meta), "--eps", "0.1", "--trials", "5"], "'dataset'"),
        (["upsets", str(bad_meta)], "'dataset'"),
        (["campaign", str(bad_meta), "--fault", "bsc", "--set", "eps=0.1", "--trials", "5"],
         "'dataset'"),
        (["campaign", str(bad_offset), "--fault", "bsc", "--set", "eps=0.1", "--trials", "5",
          "--data", "iris"], "'col_out_offset'"),
        (["simulate", str(bad_offset), "--eps", "0.1", "--data", "house_votes"],
         "'col_out_offset'"),
        (["simulate", str(cycle), "--eps", "0.1", "--data", "iris"], "'node_left'"),
        (["upsets", str(garbage)], "bad magic"),
    ]
    for argv, match in runs:
        code, err = _cli(argv, capsys)
        assert code != 0, argv
        assert len(err) == 1 and err[0].startswith("error: ") and match in err[0], (argv, err)
    # the two that used to crash the process (segfault, exit -11) and hang: as the
    # console script runs them, in a subprocess with a timeout
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(HERE.parent), env.get("PYTHONPATH", "")])
    script = "import sys; from export.cli import main; sys.exit(main(sys.argv[1:]))"
    for argv, match in [(["upsets", str(bad_offset), "--data", "iris"], "'col_out_offset'"),
                        (["campaign", str(cycle), "--fault", "bsc", "--set", "eps=0.1",
                          "--trials", "5", "--data", "iris"], "'node_left'")]:
        proc = subprocess.run([sys.executable, "-c", script, *argv], capture_output=True,
                              text=True, timeout=120, env=env)
        err = proc.stderr.strip().splitlines()
        assert proc.returncode == 2, (argv, proc.returncode, err[-5:])
        assert len(err) == 1 and err[0].startswith("error: ") and match in err[0], (argv, err)
