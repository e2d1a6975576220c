"""The compact tree node format shared by kind ``forest`` and the tree learners of
kind ``ecoc`` (issue 26): narrow dtypes, the schema (rules 3 and 4 of
``docs/container_format.md``, "Model kind forest") and the one-pass preorder
layout check (rules 6-8), with their messages. Imports numpy and numba only.
"""

import numpy as np

from .._validation import fail
from ..errors import ContainerError
from ._kernels.forest import (LAYOUT_DEPTH, LAYOUT_FEATURE, LAYOUT_LEFT, LAYOUT_RANGE,
                              LAYOUT_RIGHT, LAYOUT_ROOT, LAYOUT_UNUSED, _forest_layout)

__all__ = ["MAX_DEPTH", "narrowest_unsigned", "check_node_arrays", "check_node_layout"]

#: Decision levels a tree may have (the C loader checks the preorder layout
#: with a stack of this many entries).
MAX_DEPTH = 64
_REF_DTYPES = (np.dtype(np.uint8), np.dtype(np.uint16), np.dtype(np.uint32))
_LAYOUT_RULE = {
    LAYOUT_ROOT: ("tree_root", "must name a leaf or the next unused node (trees one after "
                  "the other, in preorder)"),
    LAYOUT_FEATURE: ("node_feature", "must be a feature in [0, n_features = {d})"),
    LAYOUT_RANGE: ("node_left", "and 'node_right' must reference nodes inside the {n} "
                   "nodes"),
    LAYOUT_LEFT: ("node_left", "must name a leaf (< {L}) or the next node ({L}: preorder, "
                  "a left child that is a node comes right after its parent)"),
    LAYOUT_RIGHT: ("node_right", "must name a leaf (< {L}) or the node right after the "
                   "left subtree (preorder: every node referenced exactly once, forward)"),
    LAYOUT_DEPTH: ("node_left", "and 'node_right' must build trees of at most "
                   f"{MAX_DEPTH} decision levels"),
    LAYOUT_UNUSED: ("node_feature", "must hold only the trees' nodes (no node after the last "
                    "tree)"),
}


def narrowest_unsigned(max_value):
    """The narrowest of uint8, uint16, uint32 holding ``max_value`` (>= 0).

    >>> [narrowest_unsigned(v).name for v in (0, 255, 256, 70000)]
    ['uint8', 'uint8', 'uint16', 'uint32']
    """
    for dt in _REF_DTYPES:
        if int(max_value) <= np.iinfo(dt).max:
            return dt
    raise ContainerError(f"tree arrays: a value {max_value} needs more than 32 bits")


def _require_unsigned(container, name, dtypes, shape, kind="forest"):
    """Array ``name`` of one of ``dtypes`` (the narrow integer choices) and ``shape``."""
    if name not in container.arrays:
        container.require(name, dtypes[0], shape)          # the standard "missing" error
    arr = container.arrays[name]
    if arr.dtype.newbyteorder("=") not in dtypes:
        names = " or ".join(dt.name for dt in dtypes)
        fail(kind, f"array {name!r} must have dtype {names}; got {arr.dtype.name}")
    return container.require(name, arr.dtype, shape)


def check_node_arrays(container, kind, n_trees=None):
    """The node arrays' schema (rules 3 and 4 of kind ``forest``, shared with the
    tree learners of kind ``ecoc``): ``tree_root`` (``n_trees`` entries, or any
    number), ``node_feature``, ``node_left``, ``node_right`` uint8/16/32 (one
    dtype for both children), ``node_threshold`` int16, one entry per node.
    Returns ``(root, feature, threshold, left, right)``."""
    req = container.require
    root = _require_unsigned(container, "tree_root", _REF_DTYPES, (n_trees,), kind)
    feat = _require_unsigned(container, "node_feature", _REF_DTYPES, (None,), kind)
    n = feat.shape[0]
    thr = req("node_threshold", np.int16, (n,))
    left = _require_unsigned(container, "node_left", _REF_DTYPES, (n,), kind)
    right = _require_unsigned(container, "node_right", _REF_DTYPES, (n,), kind)
    if left.dtype != right.dtype:
        fail(kind, f"arrays 'node_left' and 'node_right' must have one dtype; got "
                    f"{left.dtype.name} and {right.dtype.name}")
    return root, feat, thr, left, right


def check_node_layout(kind, root, feat, left, right, n_leaves, d):
    """Rules 6-8 of kind ``forest`` (shared with ``ecoc`` trees): every feature id
    below ``d``, every tree in preorder right after the previous one, every node
    referenced exactly once and forward, at most :data:`MAX_DEPTH` levels.
    Returns the decision levels of every tree (int64)."""
    n = feat.shape[0]
    depth = np.zeros(root.shape[0], np.int64)
    code, at = _forest_layout(feat.astype(np.int64), left.astype(np.int64),
                              right.astype(np.int64), root.astype(np.int64), int(n_leaves),
                              int(d), MAX_DEPTH, depth)
    if code:
        name, rule = _LAYOUT_RULE[code]
        rule = rule.format(d=d, n=n, L=n_leaves)
        if code == LAYOUT_ROOT:
            got = f"tree_root[{at}] = {root[at]}"
        elif code == LAYOUT_UNUSED:
            got = f"{n - at} nodes after the last tree (from node {at})"
        elif code == LAYOUT_FEATURE:
            got = f"node_feature[{at}] = {feat[at]}"
        elif code == LAYOUT_RIGHT:
            got = f"node_right[{at}] = {right[at]}"
        elif code == LAYOUT_LEFT:
            got = f"node_left[{at}] = {left[at]}"
        else:
            got = f"a walk reaching node {at}"
        fail(kind, f"array {name!r} {rule}; got {got}")
    return depth


def count_visits(q, roots, feature, threshold, left, right, n_leaves):
    """Decision nodes each frame of ``q`` (t, d) visits over every tree of the
    compact node format: a reference ``r < n_leaves`` is a leaf, else the next
    node is ``parent + 1 + (r - n_leaves)``; a root below ``n_leaves`` is a
    one-leaf tree. The cost model's ``nodes_visited`` (forest, ECOC trees)."""
    t = q.shape[0]
    visits = np.zeros(t)
    rows = np.arange(t)
    L = int(n_leaves)
    for r in np.asarray(roots).tolist():
        if r < L:
            continue
        node = np.full(t, r - L, np.int64)
        active = np.ones(t, bool)
        while active.any():
            visits += active
            go = q[rows, feature[node]] <= threshold[node]
            nxt = np.where(go, left[node], right[node])
            active &= nxt >= L
            node = np.where(active, node + 1 + (nxt - L), node)
    return visits
