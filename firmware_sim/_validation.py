"""Consistency rules of device images: one checker per model kind.

:func:`firmware_sim.artifact.read_container` verifies the *bytes* of a
container (header, checksum, table, offsets, shapes). The checkers here verify
what the arrays *mean* to the device that runs them, before the device keeps
a reference to any of them or allocates anything sized by their values:

* every index, offset, count, child pointer, feature id, symbol and class id
  lies inside the array it indexes;
* tree children come strictly after their parent and every node has exactly
  one parent (or is exactly one column's root): no cycle, no shared node, no
  orphan, so a tree walk ends within ``len(tree_feature)`` steps;
* derived arrays equal what they are derived from (running offsets, packed
  codes, unused counts, the alphabet size, the exponential stage's constants);
* integer accumulators cannot overflow for any input frame;
* floats are finite; sizes that drive allocations are bounded by the lengths
  of arrays actually present;
* metadata keys that the tools read have the types the schema says.

Every violation raises :class:`~firmware_sim.errors.ContainerError` whose
message names the array (or metadata key), the element and the rule. The
rules, kind by kind, are written down in ``docs/container_format.md``
("Consistency rules"); the C runtime checks the same ones.

Each ``check_<kind>(container)`` returns a dict of the validated arrays and
scalars the device keeps. Imports numpy only.
"""

import math
from fractions import Fraction

import numpy as np

from .errors import ContainerError

__all__ = ["check_protected_nb", "check_ecoc", "check_ssbc", "check_meta",
           "check_range", "check_index", "check_finite", "check_equal", "check_scalar",
           "Q_ABS_MAX"]

#: Largest |q| of an int16 frame (a frame that crossed a noisy wire may hold -32768).
Q_ABS_MAX = 32768
INT64_MAX = 2**63 - 1


# --------------------------------------------------------------------------
# Shared helpers
# --------------------------------------------------------------------------
def _fail(kind, msg):
    raise ContainerError(f"{kind} container: {msg}")


def _check_kind(container, kind):
    if container.kind != kind:
        raise ContainerError(f"container kind is {container.kind!r}; expected {kind!r}")


def _element(name, arr, flat_index):
    idx = np.unravel_index(int(flat_index), arr.shape)
    idx = ", ".join(str(int(i)) for i in idx)
    return f"{name}[{idx}] = {arr.reshape(-1)[int(flat_index)]}"


def check_range(kind, name, arr, lo, hi, rule=None):
    """Every entry of ``arr`` in ``[lo, hi]`` (NaN fails), else ContainerError naming
    the first offending element. ``rule`` replaces the default wording."""
    if arr.size == 0:
        return
    ok = (arr >= lo) & (arr <= hi)
    if not ok.all():
        i = int(np.flatnonzero(~ok.reshape(-1))[0])
        rule = rule or f"must be in [{lo}, {hi}]"
        _fail(kind, f"array {name!r} {rule}; got {_element(name, arr, i)}")


def check_index(kind, name, arr, length, target):
    """``arr`` indexes ``target`` of ``length`` entries: every entry in ``[0, length)``."""
    check_range(kind, name, arr, 0, length - 1,
                rule=f"must index {target!r} (values in [0, {length}))")


def check_finite(kind, name, arr):
    """Every entry of a float array finite (no NaN or infinity)."""
    ok = np.isfinite(arr)
    if not ok.all():
        i = int(np.flatnonzero(~ok.reshape(-1))[0])
        _fail(kind, f"array {name!r} must be finite; got {_element(name, arr, i)}")


def check_equal(kind, name, arr, expected, rule):
    """A derived array equals what it is derived from (``rule`` says how)."""
    expected = np.asarray(expected)
    if arr.shape != expected.shape:
        _fail(kind, f"array {name!r} must have shape {expected.shape} ({rule}); "
                    f"got {arr.shape}")
    bad = arr != expected
    if bad.any():
        i = int(np.flatnonzero(bad.reshape(-1))[0])
        _fail(kind, f"array {name!r} must equal {rule}; got {_element(name, arr, i)}, "
                    f"expected {expected.reshape(-1)[i]}")


def check_scalar(container, name, dtype, lo=None, hi=None):
    """The one-element array ``name`` (shape (1,)) as a Python scalar, in ``[lo, hi]``."""
    v = container.require(name, dtype, (1,))[0].item()
    if (lo is not None and not v >= lo) or (hi is not None and not v <= hi):
        if hi is None:
            rule = f">= {lo}"
        elif lo is None:
            rule = f"<= {hi}"
        else:
            rule = f"in [{lo}, {hi}]"
        _fail(container.kind, f"array {name!r} must be {rule}; got {v}")
    return v


def _exclusive_cumsum(counts):
    out = np.zeros(counts.shape[0], np.int64)
    if counts.shape[0] > 1:
        np.cumsum(counts[:-1], out=out[1:])
    return out


# -- metadata ---------------------------------------------------------------
def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _is_label(v):
    return isinstance(v, str) or _is_number(v)


def _is_numeric_text(v):
    if _is_number(v):
        return True
    if not isinstance(v, str):
        return False
    try:
        return math.isfinite(float(v))
    except ValueError:
        return False


def _is_int_text(v):
    return _is_int(v) or (isinstance(v, str) and v.strip().lstrip("+-").isdigit())


#: Metadata types: name -> (description, predicate).
META_TYPES = {
    "str": ("a string", lambda v: isinstance(v, str)),
    "int": ("an integer", _is_int),
    "number": ("a number", _is_number),
    "labels": ("a list of class labels (strings or numbers)",
               lambda v: isinstance(v, list) and all(_is_label(x) for x in v)),
    "str_list": ("a list of strings",
                 lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v)),
    "int_list": ("a list of integers", lambda v: isinstance(v, list) and all(map(_is_int, v))),
    "number_text": ("a number or a string holding a finite number", _is_numeric_text),
    "int_text": ("an integer or a string holding one", _is_int_text),
    "numbers_text": ("a list of numbers or a string (JSON list)",
                     lambda v: isinstance(v, str) or (isinstance(v, list)
                                                      and all(map(_is_number, v)))),
}

#: Keys every kind shares.
COMMON_META = {"dataset": "str", "classes": "labels"}


def check_class_names(container, n_classes):
    """The class names (``"__classes__"``): one per class of the model, when the
    kind has classes (``n_classes`` None: SSBC without a table, any number).
    Checked before the metadata, as the C loader does (``ec_model_open``)."""
    names = getattr(container, "class_names", None)
    if names is None or n_classes is None or len(names) == n_classes:
        return
    kind, listed = container.kind, (container.meta or {}).get("classes")
    if isinstance(listed, list) and len(listed) == len(names):
        _fail(kind, f"metadata key 'classes' must have {n_classes} entries; got {len(names)} "
                    f"(and array '__classes__', written from it, as many names)")
    _fail(kind, f"array '__classes__' must hold {n_classes} class names (one per class); got "
                f"{len(names)}")


def check_meta(container, schema, lengths=None, values=None):
    """Metadata keys present in ``schema`` (key -> a :data:`META_TYPES` name) have
    that type; ``lengths`` (key -> n) fixes list lengths (a tuple: any of them);
    ``values`` (key -> v) fixes values. Other keys are free-form.

    First the class names (:func:`check_class_names`, with ``lengths["classes"]``);
    last, ``classes`` equals them as text (``str`` of each label)."""
    kind, meta = container.kind, container.meta
    check_class_names(container, (lengths or {}).get("classes"))
    for key, type_name in {**COMMON_META, **schema}.items():
        if key not in meta:
            continue
        v = meta[key]
        desc, pred = META_TYPES[type_name]
        if not pred(v):
            shown = repr(v)
            shown = shown if len(shown) <= 40 else shown[:37] + "..."
            _fail(kind, f"metadata key {key!r} must be {desc}; got {type(v).__name__} {shown}")
    for key, n in (lengths or {}).items():
        allowed = n if isinstance(n, tuple) else (n,)
        if key in meta and len(meta[key]) not in allowed:
            want = " or ".join(map(str, allowed))
            _fail(kind, f"metadata key {key!r} must have {want} entries; got {len(meta[key])}")
    for key, want in (values or {}).items():
        if key in meta and meta[key] != want:
            _fail(kind, f"metadata key {key!r} must be {want!r} (as the arrays say); "
                        f"got {meta[key]!r}")
    names = getattr(container, "class_names", None)
    if names is not None and "classes" in meta:
        text = [str(v) for v in meta["classes"]]
        if text != list(names):
            bad = next(i for i, (a, b) in enumerate(zip(text + [None] * len(names),
                                                        list(names) + [None] * len(text)))
                       if a != b)
            _fail(kind, f"metadata key 'classes' must name the classes of array '__classes__' "
                        f"(as text); they differ at class {bad}")


# --------------------------------------------------------------------------
# protected_nb
# --------------------------------------------------------------------------
NB_MAX_SCALE_SHIFT = 62
NB_ACC_LIMIT = 2**31
NB_META = {"feature_names": "str_list", "planned_mean_scp": "number_text",
           "planned_scp_lower": "number_text", "planned_scp_upper": "number_text",
           "planned_eps": "numbers_text", "planning_points": "int_text",
           "budget_bits": "int_text", "scp_method": "str"}


def check_protected_nb(container):
    """Rules of kind ``protected_nb``; returns ``repetitions``, ``weights``, ``bias``,
    ``scale_shift``, ``n``, ``total_bits``."""
    kind = "protected_nb"
    _check_kind(container, kind)
    reps = container.require("repetitions", np.uint16, (None,))
    n = reps.shape[0]
    if n < 1:
        _fail(kind, "array 'repetitions' must have at least one feature; got shape (0,)")
    w = container.require("weights", np.int32, (n,))
    bias = check_scalar(container, "bias", np.int32)
    shift = check_scalar(container, "scale_shift", np.int32, 0, NB_MAX_SCALE_SHIFT)
    abs_sum = int(np.abs(w.astype(np.int64)).sum()) + abs(bias)
    if abs_sum >= NB_ACC_LIMIT:
        _fail(kind, f"arrays 'weights' and 'bias': sum(|weights|) + |bias| = {abs_sum} "
                    "must be < 2**31 (int32 accumulator)")
    total_bits = int(reps.astype(np.int64).sum()) * 2 + n
    if total_bits >= 2**32:
        _fail(kind, f"array 'repetitions': sum(2 * repetitions + 1) = {total_bits} must be "
                    "< 2**32 (uint32 bit index)")
    check_meta(container, NB_META,
               lengths={"classes": 2, "feature_names": (0, n)})
    return {"repetitions": reps, "weights": w, "bias": bias, "scale_shift": shift, "n": n,
            "total_bits": total_bits}


# --------------------------------------------------------------------------
# ecoc
# --------------------------------------------------------------------------
ECOC_LEARNER_KINDS = {1: "linear", 2: "tree"}
ECOC_LINEAR_ARRAYS = ("lin_weights", "lin_bias", "col_out_offset", "col_n_out")
ECOC_TREE_ARRAYS = ("tree_feature", "tree_threshold", "tree_left", "tree_right", "tree_leaf",
                    "tree_root")
ECOC_META = {"learner_kind": "str", "n_symbols": "int", "tie_rule": "str",
             "weight_shifts": "int_list", "code": "str"}


def pack_rows(bits):
    """0/1 rows (c, m) as uint64 words (c, ceil(m / 64)): bit j % 64 of word j // 64."""
    c, m = bits.shape
    words = (m + 63) // 64
    padded = np.zeros((c, words * 64), np.uint8)
    padded[:, :m] = bits != 0
    packed = np.packbits(padded.reshape(c, words, 64), axis=2, bitorder="little")
    return np.ascontiguousarray(packed).view("<u8").reshape(c, words).astype(np.uint64)


def check_ecoc(container):
    """Rules of kind ``ecoc``; returns the validated arrays by name plus ``n_symbols``,
    ``learner_kind`` (``"linear"`` or ``"tree"``) and the shapes ``c, m, d``."""
    kind = "ecoc"
    _check_kind(container, kind)
    req = container.require
    names = set(container.arrays)
    out = {}

    # -- the code and the alphabet
    code = req("code", np.int16, (None, None))
    c, m = code.shape
    if c < 2 or m < 1:
        _fail(kind, f"array 'code' must have >= 2 rows (classes) and >= 1 column "
                    f"(learners); got shape {code.shape}")
    check_range(kind, "code", code, -1, np.iinfo(np.int16).max,
                rule="must hold symbols >= 0 or -1 (unused)")
    n_sym = check_scalar(container, "n_symbols", np.int32)
    want_n = max(2, int(code.max()) + 1)
    if n_sym != want_n:
        _fail(kind, f"array 'n_symbols' must equal max(2, max(code) + 1) = {want_n}; "
                    f"got {n_sym}")
    unused = req("unused_count", np.int32, (c,))
    check_equal(kind, "unused_count", unused, (code < 0).sum(axis=1),
                "the number of -1 entries in each row of 'code'")

    # -- the learners' symbols
    n_cls = req("col_n_cls", np.int32, (m,))
    check_range(kind, "col_n_cls", n_cls, 1, n_sym,
                rule=f"must count 1..n_symbols = {n_sym} learner symbols")
    total = int(n_cls.astype(np.int64).sum())
    classes = req("col_classes", np.int16, (total,))
    cls_off = req("col_cls_offset", np.int32, (m,))
    check_equal(kind, "col_cls_offset", cls_off, _exclusive_cumsum(n_cls.astype(np.int64)),
                "the running sum of 'col_n_cls' (exclusive)")
    check_range(kind, "col_classes", classes, 0, n_sym - 1,
                rule=f"must hold symbols in [0, n_symbols = {n_sym})")
    if total > 1:
        first = np.zeros(total, bool)
        first[cls_off.astype(np.int64)] = True
        bad = ~first[1:] & (np.diff(classes.astype(np.int64)) <= 0)
        if bad.any():
            i = int(np.flatnonzero(bad)[0]) + 1
            col = int(np.searchsorted(cls_off, i, side="right")) - 1
            _fail(kind, f"array 'col_classes' must be strictly increasing within a column; "
                        f"got col_classes[{i - 1}] = {classes[i - 1]}, col_classes[{i}] = "
                        f"{classes[i]} (column {col})")

    # -- input quantizer
    center = req("in_center", np.float64, (None,))
    d = center.shape[0]
    if d < 1:
        _fail(kind, "array 'in_center' must have at least one feature; got shape (0,)")
    check_finite(kind, "in_center", center)
    shift = req("in_shift", np.int8, (d,))

    # -- packed binary code
    if n_sym == 2:
        words = (m + 63) // 64
        bits = req("code_bits", np.uint64, (c, words))
        used = req("code_used", np.uint64, (c, words))
        check_equal(kind, "code_bits", bits, pack_rows(code == 1),
                    "'code' == 1 packed (bit j % 64 of word j // 64)")
        check_equal(kind, "code_used", used, pack_rows(code >= 0),
                    "'code' >= 0 packed (bit j % 64 of word j // 64)")
        out.update(code_bits=bits, code_used=used)
    else:
        for name in ("code_bits", "code_used"):
            if name in names:
                _fail(kind, f"array {name!r} is only for binary codes (n_symbols = 2); "
                            f"n_symbols is {n_sym}")

    learner = check_scalar(container, "learner_kind", np.uint8)
    if learner not in ECOC_LEARNER_KINDS:
        _fail(kind, f"array 'learner_kind' must be one of {sorted(ECOC_LEARNER_KINDS)} "
                    f"(1 = linear, 2 = tree); got {learner}")
    learner = ECOC_LEARNER_KINDS[learner]
    other = ECOC_TREE_ARRAYS if learner == "linear" else ECOC_LINEAR_ARRAYS
    extra = sorted(names.intersection(other))
    if extra:
        _fail(kind, f"arrays {extra} do not belong to {learner} learners (learner_kind)")
    if learner == "linear":
        out.update(_check_ecoc_linear(container, m, d, n_cls))
    else:
        out.update(_check_ecoc_trees(container, m, d, n_cls, cls_off, classes, n_sym))

    meta_values = {"learner_kind": learner}
    lengths = {"classes": c}
    if learner == "linear":
        lengths["weight_shifts"] = m
    check_meta(container, ECOC_META, lengths=lengths, values=meta_values)
    out.update(code=code, unused_count=unused, n_symbols=n_sym, col_n_cls=n_cls,
               col_classes=classes, col_cls_offset=cls_off, in_center=center, in_shift=shift,
               learner_kind=learner, c=c, m=m, d=d)
    return out


def _check_ecoc_linear(container, m, d, n_cls):
    kind, req = "ecoc", container.require
    w = req("lin_weights", np.int32, (d, None))
    k = w.shape[1]
    b = req("lin_bias", np.int64, (k,))
    n_out = req("col_n_out", np.int32, (m,))
    out_off = req("col_out_offset", np.int32, (m,))
    n_out64, n_cls64 = n_out.astype(np.int64), n_cls.astype(np.int64)
    # 0 scores: constant learner (one symbol); 1: sign of one score (two symbols);
    # else one score per symbol (argmax)
    ok = np.where(n_cls64 == 1, n_out64 == 0,
                  (n_out64 == n_cls64) | ((n_cls64 == 2) & (n_out64 == 1)))
    if not ok.all():
        j = int(np.flatnonzero(~ok)[0])
        _fail(kind, f"array 'col_n_out' must be 0 for a constant learner (col_n_cls 1), 1 or 2 "
                    f"for two symbols, col_n_cls otherwise; got col_n_out[{j}] = {n_out[j]} "
                    f"with col_n_cls[{j}] = {n_cls[j]}")
    if int(n_out64.sum()) != k:
        _fail(kind, f"array 'col_n_out' must sum to the {k} columns of 'lin_weights'; got "
                    f"{int(n_out64.sum())}")
    check_equal(kind, "col_out_offset", out_off, _exclusive_cumsum(n_out64),
                "the running sum of 'col_n_out' (exclusive)")
    # |score| <= |bias| + 32768 * sum_f |w[f, o]| must fit the int64 accumulator
    if k:
        col_abs = np.abs(w.astype(np.int64)).sum(axis=0).tolist()
        for o, (s, bo) in enumerate(zip(col_abs, b.tolist())):
            bound = abs(bo) + Q_ABS_MAX * s
            if bound > INT64_MAX:
                _fail(kind, f"arrays 'lin_weights' and 'lin_bias': score {o} can reach "
                            f"|lin_bias| + 32768 * sum_f |lin_weights[f, {o}]| = {bound} > "
                            "2**63 - 1 (int64 accumulator overflow)")
    return {"lin_weights": w, "lin_bias": b, "col_n_out": n_out, "col_out_offset": out_off}


def _check_ecoc_trees(container, m, d, n_cls, cls_off, classes, n_sym):
    kind, req = "ecoc", container.require
    feat = req("tree_feature", np.int32, (None,))
    nn = feat.shape[0]
    thr = req("tree_threshold", np.int32, (nn,))
    left = req("tree_left", np.int32, (nn,))
    right = req("tree_right", np.int32, (nn,))
    leaf = req("tree_leaf", np.int16, (nn,))
    root = req("tree_root", np.int32, (m,))
    if nn < m:
        _fail(kind, f"array 'tree_feature' must have at least one node per column ({m}); "
                    f"got {nn}")
    check_index(kind, "tree_root", root, nn, "tree_feature")
    check_range(kind, "tree_feature", feat, -1, d - 1,
                rule=f"must be a feature in [0, {d}) or -1 (leaf)")
    internal = feat >= 0
    node = np.arange(nn, dtype=np.int64)
    for name, child in (("tree_left", left), ("tree_right", right)):
        ch = child.astype(np.int64)
        bad = internal & ((ch <= node) | (ch >= nn))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            _fail(kind, f"array {name!r} must point after its parent and inside the "
                        f"{nn} nodes (children come after their parent); got {name}[{i}] = "
                        f"{child[i]} at internal node {i}")
        bad = ~internal & (ch != -1)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            _fail(kind, f"array {name!r} must be -1 at a leaf (tree_feature -1); got "
                        f"{name}[{i}] = {child[i]}")
    # tree_threshold: any int32 is safe (an int16 input compared with an int32
    # threshold; one outside the int16 range sends every input the same way),
    # so a parameter upset there runs, as it would on a device
    # every node: exactly one parent, or exactly one column's root (no shared node,
    # no orphan; with children after parents, no cycle)
    ins = np.flatnonzero(internal)
    refs = (np.bincount(left[ins], minlength=nn) + np.bincount(right[ins], minlength=nn)
            + np.bincount(root, minlength=nn))
    if (refs != 1).any():
        i = int(np.flatnonzero(refs != 1)[0])
        what = "no parent and is no column's root (orphan)" if refs[i] == 0 else \
            f"{int(refs[i])} references (a shared node)"
        _fail(kind, f"arrays 'tree_left', 'tree_right' and 'tree_root': node {i} has {what}; "
                    "every node must have exactly one parent or be exactly one column's root")
    # the column of every node (pointer jumping to the root), then leaf symbols
    parent = np.full(nn, -1, np.int64)
    parent[left[ins]] = ins
    parent[right[ins]] = ins
    top = np.where(parent < 0, node, parent)
    while True:
        nxt = top[top]
        if np.array_equal(nxt, top):
            break
        top = nxt
    col_of_root = np.full(nn, -1, np.int64)
    col_of_root[root] = np.arange(m)
    col = col_of_root[top]
    leaves = np.flatnonzero(~internal)
    check_range(kind, "tree_leaf", np.where(internal, 0, leaf), 0, n_sym - 1,
                rule=f"must hold a symbol in [0, n_symbols = {n_sym}) at a leaf")
    # the symbols of column j: col_classes[cls_off[j] : cls_off[j] + n_cls[j]]
    owner = np.repeat(np.arange(m, dtype=np.int64), n_cls.astype(np.int64))
    valid = owner * n_sym + classes.astype(np.int64)
    keys = col[leaves] * n_sym + leaf[leaves].astype(np.int64)
    ok = np.isin(keys, valid)
    if not ok.all():
        i = int(leaves[np.flatnonzero(~ok)[0]])
        j = int(col[i])
        syms = classes[cls_off[j]:cls_off[j] + n_cls[j]].tolist()
        _fail(kind, f"array 'tree_leaf' must hold a symbol of its column's learner; got "
                    f"tree_leaf[{i}] = {leaf[i]} in the tree of column {j} (symbols {syms})")
    return {"tree_feature": feat, "tree_threshold": thr, "tree_left": left,
            "tree_right": right, "tree_leaf": leaf, "tree_root": root}


# --------------------------------------------------------------------------
# ssbc
# --------------------------------------------------------------------------
SSBC_EXP_SHIFT = 40
SSBC_T_MAX = 17
SSBC_LUT_SEGMENTS = 256
SSBC_META = {"n_bits": "int", "n_anchors": "int", "sigma": "number", "mode": "str",
             "rotation": "str", "bit_order": "str"}


def ssbc_exp_lut():
    """The 257-entry Q15 table ``round(2**15 * 2**(-i/256))``, i = 0..256 (uint16)."""
    i = np.arange(SSBC_LUT_SEGMENTS + 1, dtype=np.float64)
    return np.round(2.0**15 * np.exp2(-i / SSBC_LUT_SEGMENTS)).astype(np.uint16)


def check_ssbc(container):
    """Rules of kind ``ssbc``; returns the validated arrays by name plus ``m, d, k``,
    ``input_shift``, ``projection_shift``, ``sigma``, ``exp_mult``, ``dist_clamp``,
    ``has_table`` and, with a table, ``n_classes`` and ``knn_k``."""
    kind = "ssbc"
    _check_kind(container, kind)
    c, req = container, container.require
    A = req("anchors", np.int16, (None, None))
    m, d = A.shape
    if m < 1 or d < 1:
        _fail(kind, f"array 'anchors' must have shape (m, d) with m, d >= 1; got {A.shape}")
    # D = sum_i (x_i - a_i)^2 <= d * 65535^2 (an int16 frame may hold -32768) fits int64
    # for every d < 2**31, which a file under 4 GiB guarantees (2 d bytes of anchors)
    check_range(kind, "anchors", A, -32767, 32767)
    input_shift = check_scalar(c, "input_shift", np.int32, -30, 30)
    sigma = check_scalar(c, "sigma", np.float64)
    if not (math.isfinite(sigma) and sigma > 0):
        _fail(kind, f"array 'sigma' must be positive and finite; got {sigma}")
    mult = check_scalar(c, "exp_mult", np.int64, 1, 2**62 - 1)
    clamp = check_scalar(c, "dist_clamp", np.int64, 0)
    if clamp * mult >= 2**63 or clamp * mult < (SSBC_T_MAX << (SSBC_EXP_SHIFT + 16)):
        _fail(kind, "arrays 'dist_clamp' and 'exp_mult': dist_clamp * exp_mult must lie in "
                    f"[17 * 2**56, 2**63); got {clamp * mult}")
    sigma_q = sigma * 4.0**input_shift
    exact = 2.0**(SSBC_EXP_SHIFT + 16) * math.log2(math.e) / sigma_q \
        if math.isfinite(sigma_q) and sigma_q > 0 else math.inf
    if not math.isfinite(exact) or abs(Fraction(mult) - Fraction(exact)) > Fraction(1, 2):
        _fail(kind, f"array 'exp_mult' must be round(2**56 log2(e) / (sigma * 4**input_shift))"
                    f" = round({exact!r}) with sigma = {sigma!r}, input_shift = "
                    f"{input_shift}; got {mult}")
    want_clamp = -(-(SSBC_T_MAX << (SSBC_EXP_SHIFT + 16)) // mult)
    if clamp != want_clamp:
        _fail(kind, f"array 'dist_clamp' must be ceil(17 * 2**56 / exp_mult) = {want_clamp}; "
                    f"got {clamp}")
    lut = req("exp_lut", np.uint16, (SSBC_LUT_SEGMENTS + 1,))
    if not np.array_equal(lut, ssbc_exp_lut()):
        _fail(kind, "array 'exp_lut' must be the Q15 table round(2**15 * 2**(-i/256)), "
                    "i = 0..256")
    P = req("projection", np.int16, (m, None))
    k = P.shape[1]
    if k < 1:
        _fail(kind, "array 'projection' must have at least one column (bit)")
    projection_shift = check_scalar(c, "projection_shift", np.int32, -30, 30)
    thr = req("thresholds", np.int64, (k,))
    check_range(kind, "thresholds", thr, -(2**62) + 1, 2**62 - 1,
                rule="must have |value| < 2**62")
    if m * 32768 * 32768 >= 2**62:
        _fail(kind, f"array 'anchors': {m} anchors could overflow the int64 accumulator")
    out = {"anchors": A, "projection": P, "thresholds": thr, "exp_lut": lut, "m": m, "d": d,
           "k": k, "input_shift": input_shift, "projection_shift": projection_shift,
           "sigma": sigma, "exp_mult": mult, "dist_clamp": clamp,
           "has_table": "table_codes" in c.arrays}
    lengths, values = {}, {"n_bits": k, "n_anchors": m, "bit_order": "lsb_first"}
    if out["has_table"]:
        nb = (k + 7) // 8
        tab = req("table_codes", np.uint8, (None, nb))
        T = tab.shape[0]
        if T < 1:
            _fail(kind, "array 'table_codes' is empty")
        if k % 8 and np.any(tab[:, -1] >> (k % 8)):
            row = int(np.flatnonzero(tab[:, -1] >> (k % 8))[0])
            _fail(kind, f"array 'table_codes' has nonzero padding bits beyond bit {k - 1} "
                        f"(row {row})")
        labels = req("table_labels", np.int32, (T,))
        # a class with no table row never wins the vote: n_classes <= T bounds the
        # vote counters the device allocates
        nc = check_scalar(c, "n_classes", np.int32, 1, T)
        check_range(kind, "table_labels", labels, 0, nc - 1, rule=f"must be in [0, {nc})")
        knn_k = check_scalar(c, "knn_k", np.int32, 1, T)
        out.update(table_codes=tab, table_labels=labels, n_classes=nc, knn_k=knn_k)
        lengths["classes"] = nc
    else:
        for name in ("table_labels", "n_classes", "knn_k"):
            if name in c.arrays:
                _fail(kind, f"array {name!r} given without 'table_codes'")
    check_meta(c, SSBC_META, lengths=lengths, values=values)
    return out
