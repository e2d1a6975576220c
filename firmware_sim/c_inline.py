"""Code-generated firmware for tree models: the trees as C code (issue 26 item 2).

``edgecode firmware --trees inline`` writes, instead of the image and the
runtime that verifies and walks it, one C file (:data:`INLINE_SOURCE`) that
implements the C API of ``edgecode_rt.h`` (``ec_model_open``, ``ec_infer``,
``ec_quantize``, the sizes, the class names) for one model: every tree is a
function of nested ``if (q[f] <= t)`` tests on the int16 frame whose
branches return leaf ids as constants, and the rest of the inference (the
vote, the decision integers) is the kind's, written by its device class
(the ``c_inline`` hook; :meth:`ForestDevice.c_inline
<firmware_sim.kinds.forest.ForestDevice.c_inline>`).

What is left of the image is an 8-byte *stamp* (:func:`stamp`): ``"ECIL"``
and the CRC-32 of the container the code was generated from.
``ec_model_open`` compares the buffer it is given with it (``EC_ERR_MAGIC``
for any other, ``EC_ERR_TRUNCATED`` below 8 bytes), so a firmware holding
one model's code refuses to pretend another image is open. There is nothing
else to verify: the generator checked the model (``firmware_sim.load``), and
the code cannot reach a node or leaf that does not exist.

This module holds what does not depend on a kind: :func:`tree_function`
(one tree, from preorder arrays in the forest format) and
:func:`api_source` (the API around a kind's ``infer`` body).

Examples
--------
>>> import numpy as np
>>> print(tree_function("t0", np.array([2]), np.array([-5]), np.array([0]),
...                     np.array([1]), 2, 2, "uint_fast8_t"))
static EC_INLINE_TREE uint_fast8_t t0(const int16_t *q)
{
    if (q[2] <= -5)
        return 0;
    return 1;
}
<BLANKLINE>
"""

import zlib

import numpy as np

from .errors import DeviceError

__all__ = ["INLINE_SOURCE", "STAMP_BYTES", "stamp", "tree_function", "trees_c", "quantizer_c",
           "api_source",
           "fast_uint", "least_uint", "c_bytes"]

#: The generated file: the whole model and the API, in place of ``ec_model.c``
#: and the kind's runtime file.
INLINE_SOURCE = "ec_inline.c"
#: Bytes of the stamp that stands for the image.
STAMP_BYTES = 8


def stamp(raw):
    """The 8 bytes ``ec_model_open`` of an inline build accepts: ``b"ECIL"`` and
    the CRC-32 (zlib) of the container ``raw``, little-endian.

    >>> stamp(b"").hex()
    '4543494c00000000'
    """
    return b"ECIL" + (zlib.crc32(bytes(raw)) & 0xFFFFFFFF).to_bytes(4, "little")


def fast_uint(max_value):
    """The fastest C unsigned type that holds ``0 .. max_value`` (``uint_fast8_t``:
    a byte on AVR, a register elsewhere)."""
    for bits in (8, 16, 32):
        if max_value < 2 ** bits:
            return f"uint_fast{bits}_t"
    raise DeviceError(f"{max_value} does not fit 32 bits (no C type for it)")


def least_uint(max_value):
    """The narrowest C unsigned type that holds ``0 .. max_value``."""
    for bits in (8, 16, 32):
        if max_value < 2 ** bits:
            return f"uint{bits}_t"
    raise DeviceError(f"{max_value} does not fit 32 bits (no C type for it)")


def c_bytes(data):
    """``0x..`` initializer rows of ``data`` (bytes), 16 per line."""
    data = bytes(data)
    return ",\n".join("    " + ", ".join(f"0x{b:02x}" for b in data[i:i + 16])
                      for i in range(0, len(data), 16))


def tree_function(name, feature, threshold, left, right, root, n_leaves, leaf_type):
    """C text of ``static leaf_type name(const int16_t *q)``: one tree of the
    forest format (preorder decision nodes; a reference ``r`` is leaf ``r`` when
    ``r < n_leaves``, else node ``i + 1 + (r - n_leaves)`` after node ``i``; a
    root ``r`` is leaf ``r`` or node ``r - n_leaves``) as nested tests, going
    left iff ``q[feature] <= threshold``, returning the leaf id reached.

    The arrays are the whole forest's (int64-able); ``root`` is this tree's
    root reference. No recursion (a tree may be 64 levels deep).
    """
    L = int(n_leaves)
    lines = [f"static EC_INLINE_TREE {leaf_type} {name}(const int16_t *q)", "{"]
    # (reference, the node it is relative to (None: the root), indent) or
    # (None, None, indent): the closing brace of a left subtree
    if int(root) < L:                                   # a one-leaf tree
        lines.append("    (void)q;")
    stack = [(int(root), None, 1)]
    while stack:
        ref, at, depth = stack.pop()
        pad = "    " * depth
        if ref is None:
            lines.append(pad + "}")
        elif ref < L:
            lines.append(f"{pad}return {ref};")
        else:
            node = ref - L if at is None else at + 1 + (ref - L)
            cond = f"{pad}if (q[{int(feature[node])}] <= {int(threshold[node])})"
            stack.append((int(right[node]), node, depth))   # after the if: the left returns
            if int(left[node]) >= L:
                lines.append(cond + " {")
                stack.append((None, None, depth))
            else:
                lines.append(cond)
            stack.append((int(left[node]), node, depth + 1))
    lines += ["}", ""]
    return "\n".join(lines)


def quantizer_c(in_center, in_shift):
    """``(constants, body)``: the C constants of the ECOC/forest input quantizer
    (float64 centers as bit patterns, int8 exponents) and the body of
    ``ec_inline_quantize`` (``device.encode``: ``q_f = clip(rint((x_f -
    center_f) 2^shift_f), +-32767)``, the subtraction rounded as IEEE double
    does, with the exact integer arithmetic of ``ec_quantize.c``)."""
    center = np.ascontiguousarray(in_center, np.float64).view(np.uint64)
    shift = np.asarray(in_shift)
    d = center.shape[0]
    rows = [center[i:i + 4] for i in range(0, d, 4)]
    consts = ("/* the input quantizer (device.encode): float64 centers as bit patterns and "
              "exponents */\n"
              f"static const EC_ROM uint64_t ec_inline_center[{d}] = {{\n"
              + ",\n".join("    " + ", ".join(f"UINT64_C(0x{int(v):016x})" for v in r)
                           for r in rows) + "\n};\n"
              f"static const EC_ROM int8_t ec_inline_shift[{d}] = {{\n"
              + ",\n".join("    " + ", ".join(str(int(v)) for v in shift[i:i + 12])
                           for i in range(0, d, 12)) + "\n};\n")
    body = ("    uint32_t f;\n"
            "    ec_exact v = {0u, 0, 0}, c = {0u, 0, 0};\n"
            f"    for (f = 0u; f < {d}u; f++)\n"
            "        if (!ec_q_input(x, type, f, &v))\n"
            "            return EC_ERR_INPUT;\n"
            f"    for (f = 0u; f < {d}u; f++) {{\n"
            "        (void)ec_q_input(x, type, f, &v);\n"
            "        (void)ec_q_from_binary64(ec_inline_center[f], &c);\n"
            "        c.neg = !c.neg; /* x + (-center), rounded as IEEE double */\n"
            "        v = ec_q_add53(v, c);\n"
            "        v.exp += ec_inline_shift[f]; /* * 2^in_shift */\n"
            "        frame[f] = ec_q_rint_clip(v);\n"
            "    }\n"
            "    return EC_OK;\n")
    return consts, body


def trees_c(arrays, n_leaves, form):
    """``(text, call)``: the trees of the compact node arrays (``tree_root``,
    ``node_*``; leaf ids below ``n_leaves``) as C, and the expression of the leaf
    id tree ``k`` reaches on ``frame``. ``form`` ``"code"``: one function per
    tree (:func:`tree_function`) called through a table in ROM; ``"arrays"``:
    the node arrays as constants and one walk loop. The text uses the type
    ``ec_inline_leaf`` (the caller defines it)."""
    root = arrays["tree_root"].astype(np.int64)
    if form == "code":
        feat = arrays["node_feature"].astype(np.int64)
        thr = arrays["node_threshold"].astype(np.int64)
        left = arrays["node_left"].astype(np.int64)
        right = arrays["node_right"].astype(np.int64)
        T = root.shape[0]
        parts = ["/* the trees: go left iff q[feature] <= threshold; each returns the leaf "
                 "id it reaches */"]
        for k in range(T):
            parts.append(tree_function(f"ec_tree_{k}", feat, thr, left, right, int(root[k]),
                                       n_leaves, "ec_inline_leaf"))
        parts.append("typedef ec_inline_leaf ec_inline_tree(const int16_t *q);\n"
                     f"static ec_inline_tree *const EC_ROM ec_inline_trees[{T}] = {{\n"
                     + ",\n".join(f"    ec_tree_{k}" for k in range(T)) + "\n};\n")
        return "\n".join(parts), "ec_inline_trees[k](frame)"
    if form == "arrays":
        return _c_node_arrays(arrays, n_leaves), "ec_walk(frame, ec_tree_root[k])"
    raise DeviceError(f"form must be 'code' or 'arrays'; got {form!r}")


def _c_node_arrays(arrays, n_leaves):
    """C text of the forest's node arrays as constants (their image dtypes) and of
    ``ec_walk(q, r)``: the leaf id reached from root reference ``r`` (the walk of
    ``ec_forest.c`` without its checks: the generator validated the model)."""
    def const(name, a):
        ctype = f"{'u' if a.dtype.kind == 'u' else ''}int{8 * a.dtype.itemsize}_t"
        rows = [a[i:i + 16] for i in range(0, a.shape[0], 16)]
        body = ",\n".join("    " + ", ".join(str(int(v)) for v in r) for r in rows)
        return f"static const EC_ROM {ctype} ec_{name}[{a.shape[0]}] = {{\n{body}\n}};\n"

    n = arrays["node_feature"].shape[0]
    L = int(n_leaves)
    ref_t = fast_uint(max(n + L, int(arrays["tree_root"].max(initial=0))))
    out = ["/* the decision nodes in preorder, the image's arrays compiled in: a "
           "reference r is leaf r\n   when r < L, else the node i + 1 + (r - L) after "
           "node i (a root: node r - L) */",
           f"#define EC_INLINE_LEAVES {L}u", f"typedef {ref_t} ec_inline_ref;",
           const("tree_root", arrays["tree_root"])]
    if n == 0:
        out.append("static ec_inline_leaf ec_walk(const int16_t *q, ec_inline_ref r)\n{\n"
                   "    (void)q;\n    return (ec_inline_leaf)r; /* every tree is a leaf */\n}\n")
        return "\n".join(out)
    for name in ("node_feature", "node_threshold", "node_left", "node_right"):
        out.append(const(name, arrays[name]))
    out.append("""static ec_inline_leaf ec_walk(const int16_t *q, ec_inline_ref r)
{
    ec_inline_ref node;
    if (r < EC_INLINE_LEAVES)
        return (ec_inline_leaf)r;
    node = (ec_inline_ref)(r - EC_INLINE_LEAVES);
    for (;;) {
        r = q[ec_node_feature[node]] <= ec_node_threshold[node] ? ec_node_left[node]
                                                                : ec_node_right[node];
        if (r < EC_INLINE_LEAVES)
            return (ec_inline_leaf)r;
        node = (ec_inline_ref)(node + 1u + (r - EC_INLINE_LEAVES));
    }
}
""")
    return "\n".join(out)


def api_source(*, kind_code, header, stamp_bytes, n_features, frame_width, decision_len,
               workspace_bytes, body, infer, class_names=None, quantize=None):
    """The generated file: ``header`` (a comment), ``body`` (the model's code and
    constants), then the API: ``ec_model_open`` (the stamp), the sizes,
    ``ec_infer`` (``infer``: the statements after the argument checks, which
    may use ``frame``, ``label``, ``decision``; ``decision`` may be NULL in
    this form, for the label alone), ``ec_quantize`` (``quantize``:
    a function body of ``ec_inline_quantize(const void *x, int type, int16_t
    *frame)``, or None: ``EC_ERR_ARG``), the class names (a list of str or
    None) and ``ec_kind_find`` (no kind table: NULL)."""
    names = ""
    if class_names:
        raw = b"".join(str(n).encode("utf-8") + b"\0" for n in class_names)
        names = (f"static const EC_ROM uint8_t ec_inline_names[{len(raw)}] = {{\n"
                 f"{c_bytes(raw)}\n}};\n")
    n_names = len(class_names) if class_names else 0
    q_body = quantize if quantize is not None else \
        "    (void)x;\n    (void)type;\n    (void)frame;\n    return EC_ERR_ARG;\n"
    return f"""{header}
#include "ec_kind.h"

#define EC_INLINE_KIND {int(kind_code)}u
#define EC_INLINE_CLASS_NAMES {n_names}u
/* a tree is a function of its own (GCC would inline every one into ec_infer,
   more flash and, on AVR, more cycles) */
#if defined(__GNUC__)
#define EC_INLINE_TREE __attribute__((noinline))
#else
#define EC_INLINE_TREE
#endif

{body}
/* ---- the API (edgecode_rt.h) for this model alone ------------------------ */

/* The stamp of the container this code was generated from: "ECIL", CRC-32. */
static const EC_ROM uint8_t ec_inline_stamp[{len(stamp_bytes)}] = {{
{c_bytes(stamp_bytes)}
}};
{names}
/* No kind table: the model is code (ec_container.c's opener is not used). */
const EC_ROM ec_kind_ops *ec_kind_find(uint32_t kind)
{{
    (void)kind;
    return NULL;
}}

ec_status ec_model_open(const EC_ROM uint8_t *buf, uint32_t size, ec_model *model)
{{
    uint_fast8_t i;
    if (buf == NULL || model == NULL)
        return EC_ERR_ARG;
    model->kind = 0u;
    model->ops = NULL;
    model->n_class_names = 0u;
    if (size < {len(stamp_bytes)}u)
        return EC_ERR_TRUNCATED;
    for (i = 0u; i < {len(stamp_bytes)}u; i++)
        if (buf[i] != ec_inline_stamp[i])
            return EC_ERR_MAGIC; /* another model's image, or no stamp */
    /* the image is the stamp: no arrays, no class names table (they are code) */
    model->image.base = buf;
    model->image.size = {len(stamp_bytes)}u;
    model->image.kind = EC_INLINE_KIND;
    model->image.n_arrays = 0u;
    model->image.class_names = NULL;
    model->image.class_names_bytes = 0u;
    model->n_class_names = EC_INLINE_CLASS_NAMES;
    model->kind = EC_INLINE_KIND;
    return EC_OK;
}}

static int ec_inline_opened(const ec_model *model)
{{
    return model != NULL && model->kind == EC_INLINE_KIND;
}}

uint32_t ec_input_width(const ec_model *model)
{{
    return ec_inline_opened(model) ? {int(n_features)}u : 0u;
}}

uint32_t ec_frame_width(const ec_model *model)
{{
    return ec_inline_opened(model) ? {int(frame_width)}u : 0u;
}}

uint32_t ec_decision_len(const ec_model *model)
{{
    return ec_inline_opened(model) ? {int(decision_len)}u : 0u;
}}

uint32_t ec_workspace_bytes(const ec_model *model)
{{
    return ec_inline_opened(model) ? {int(workspace_bytes)}u : 0u;
}}

uint32_t ec_class_count(const ec_model *model)
{{
    return ec_inline_opened(model) ? EC_INLINE_CLASS_NAMES : 0u;
}}

const EC_ROM char *ec_class_name(const ec_model *model, int32_t label)
{{
#if EC_INLINE_CLASS_NAMES
    const EC_ROM uint8_t *p = ec_inline_names;
    int32_t k;
    if (!ec_inline_opened(model) || label < 0 || (uint32_t)label >= EC_INLINE_CLASS_NAMES)
        return NULL;
    for (k = 0; k < label; k++) {{ /* skip `label` NUL-terminated names */
        while (*p != 0u)
            p++;
        p++;
    }}
    return (const EC_ROM char *)(const EC_ROM void *)p;
#else
    (void)model;
    (void)label;
    return NULL;
#endif
}}

static ec_status ec_inline_quantize(const void *x, int type, int16_t *frame)
{{
{q_body}}}

static ec_status ec_inline_quantize_any(const ec_model *model, const void *x, int type,
                                        int16_t *frame)
{{
    if (!ec_inline_opened(model) || x == NULL || frame == NULL)
        return EC_ERR_ARG;
    return ec_inline_quantize(x, type, frame);
}}

ec_status ec_quantize(const ec_model *model, const int32_t *x, int16_t *frame)
{{
    return ec_inline_quantize_any(model, x, EC_IN_I32, frame);
}}

#if EC_WITH_FLOAT
ec_status ec_quantize_float(const ec_model *model, const float *x, int16_t *frame)
{{
    return ec_inline_quantize_any(model, x, EC_IN_F32, frame);
}}

ec_status ec_quantize_double(const ec_model *model, const double *x, int16_t *frame)
{{
    return ec_inline_quantize_any(model, x, EC_IN_F64, frame);
}}
#endif

ec_status ec_infer(const ec_model *model, const int16_t *frame, int32_t *label,
                   int64_t *decision, void *workspace, uint32_t workspace_bytes)
{{
    (void)workspace;
    (void)workspace_bytes;
    /* decision may be NULL (this form only): the label alone */
    if (!ec_inline_opened(model) || frame == NULL || label == NULL)
        return EC_ERR_ARG;
{infer}}}
"""
