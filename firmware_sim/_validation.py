"""Consistency rules of device images: the helpers every kind's rules use.

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

Each kind's rules are its device class's ``check_container(container)``
(``firmware_sim/kinds/<kind>.py``), which returns a dict of the validated
arrays and scalars the device keeps; this module holds what they share.
Imports numpy only.
"""

import math

import numpy as np

from .errors import ContainerError

__all__ = ["fail", "check_meta", "check_class_names", "check_range",
           "check_index", "check_finite", "check_equal", "check_scalar", "exclusive_cumsum",
           "META_TYPES", "COMMON_META", "Q_ABS_MAX", "INT64_MAX"]

#: Largest |q| of an int16 frame (a frame that crossed a noisy wire may hold -32768).
Q_ABS_MAX = 32768
INT64_MAX = 2**63 - 1


# --------------------------------------------------------------------------
# Shared helpers
# --------------------------------------------------------------------------
def fail(kind, msg):
    """Raise ContainerError("<kind> container: <msg>")."""
    raise ContainerError(f"{kind} container: {msg}")


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
        fail(kind, f"array {name!r} {rule}; got {_element(name, arr, i)}")


def check_index(kind, name, arr, length, target):
    """``arr`` indexes ``target`` of ``length`` entries: every entry in ``[0, length)``."""
    check_range(kind, name, arr, 0, length - 1,
                rule=f"must index {target!r} (values in [0, {length}))")


def check_finite(kind, name, arr):
    """Every entry of a float array finite (no NaN or infinity)."""
    ok = np.isfinite(arr)
    if not ok.all():
        i = int(np.flatnonzero(~ok.reshape(-1))[0])
        fail(kind, f"array {name!r} must be finite; got {_element(name, arr, i)}")


def check_equal(kind, name, arr, expected, rule):
    """A derived array equals what it is derived from (``rule`` says how)."""
    expected = np.asarray(expected)
    if arr.shape != expected.shape:
        fail(kind, f"array {name!r} must have shape {expected.shape} ({rule}); "
                    f"got {arr.shape}")
    bad = arr != expected
    if bad.any():
        i = int(np.flatnonzero(bad.reshape(-1))[0])
        fail(kind, f"array {name!r} must equal {rule}; got {_element(name, arr, i)}, "
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
        fail(container.kind, f"array {name!r} must be {rule}; got {v}")
    return v


def exclusive_cumsum(counts):
    """Running sum before each entry (int64), the rule of offset arrays."""
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
        fail(kind, f"metadata key 'classes' must have {n_classes} entries; got {len(names)} "
                    f"(and array '__classes__', written from it, as many names)")
    fail(kind, f"array '__classes__' must hold {n_classes} class names (one per class); got "
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
            fail(kind, f"metadata key {key!r} must be {desc}; got {type(v).__name__} {shown}")
    for key, n in (lengths or {}).items():
        allowed = n if isinstance(n, tuple) else (n,)
        if key in meta and len(meta[key]) not in allowed:
            want = " or ".join(map(str, allowed))
            fail(kind, f"metadata key {key!r} must have {want} entries; got {len(meta[key])}")
    for key, want in (values or {}).items():
        if key in meta and meta[key] != want:
            fail(kind, f"metadata key {key!r} must be {want!r} (as the arrays say); "
                        f"got {meta[key]!r}")
    names = getattr(container, "class_names", None)
    if names is not None and "classes" in meta:
        text = [str(v) for v in meta["classes"]]
        if text != list(names):
            bad = next(i for i, (a, b) in enumerate(zip(text + [None] * len(names),
                                                        list(names) + [None] * len(text)))
                       if a != b)
            fail(kind, f"metadata key 'classes' must name the classes of array '__classes__' "
                        f"(as text); they differ at class {bad}")
