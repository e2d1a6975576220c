"""Numba kernels of the tree-forest device (integer arithmetic only).

The wrapper (:mod:`firmware_sim.kinds.forest`) validates the container,
widens the narrow node arrays once to the canonical dtypes these kernels take
(feature and references int64, thresholds int32), allocates the outputs and
draws any random numbers; the kernels only compute.

The node format (``docs/container_format.md``, "Model kind forest"): decision
nodes only, trees one after the other, each in preorder; a child reference
``r`` names leaf ``r`` when ``r < n_leaves`` and otherwise the decision node
``i + 1 + (r - n_leaves)`` after node ``i`` (so a left child that is a node is
always ``r == n_leaves``: the next node). A root reference names a leaf the
same way or the absolute node ``r - n_leaves``. Go left iff
``q[feature] <= threshold``.

:func:`_forest_leaves` is the one tree walk of the device side: ECOC trees
(leaf = the learner's symbol) can run on it unchanged.
"""

import numpy as np
from numba import njit

#: Error codes of :func:`_forest_layout` (the wrapper turns them into messages).
LAYOUT_OK = 0
LAYOUT_ROOT = 1          # a node root does not name the next unused node
LAYOUT_FEATURE = 2       # node_feature >= n_features
LAYOUT_RANGE = 3         # a walk needs a node beyond the last one
LAYOUT_LEFT = 4          # a left child that is a node is not the next node
LAYOUT_RIGHT = 5         # a right child that is a node is not the node after the left subtree
LAYOUT_DEPTH = 6         # a tree deeper than max_depth
LAYOUT_UNUSED = 7        # nodes after the last tree


@njit(cache=True, nogil=True)
def _forest_leaves(q, feature, threshold, left, right, root, n_leaves, out):
    """``out[i, k]``: the leaf tree ``k`` reaches on frame ``q[i]`` (left iff
    ``q[i, feature] <= threshold``); references as in the module docstring."""
    t = q.shape[0]
    n_trees = root.shape[0]
    for i in range(t):
        for k in range(n_trees):
            r = root[k]
            if r >= n_leaves:
                node = r - n_leaves
                while True:
                    if q[i, feature[node]] <= threshold[node]:
                        r = left[node]
                    else:
                        r = right[node]
                    if r < n_leaves:
                        break
                    node = node + 1 + (r - n_leaves)
            out[i, k] = r


@njit(cache=True, nogil=True)
def _forest_votes(leaves, leaf_value, onehot, votes, labels):
    """Per frame, ``votes[i, c] = sum_k leaf_value[leaves[i, k], c]`` (``onehot``:
    one vote for class ``leaves[i, k]``) in int64, and ``labels[i]`` the first
    class with the most votes."""
    t, n_trees = leaves.shape
    n_classes = votes.shape[1]
    for i in range(t):
        for c in range(n_classes):
            votes[i, c] = 0
        for k in range(n_trees):
            row = leaves[i, k]
            if onehot:
                votes[i, row] += 1
            else:
                for c in range(n_classes):
                    votes[i, c] += leaf_value[row, c]
        best = 0
        top = votes[i, 0]
        for c in range(1, n_classes):
            if votes[i, c] > top:
                top = votes[i, c]
                best = c
        labels[i] = best


@njit(cache=True, nogil=True)
def _forest_layout(feature, left, right, root, n_leaves, n_features, max_depth, depth):
    """Check the preorder layout in one pass; fill ``depth[k]`` (decision levels of
    tree k). Returns ``(code, index)``: ``LAYOUT_OK`` or the first violation and
    the node (the tree for ``LAYOUT_ROOT``, the first unused node for
    ``LAYOUT_UNUSED``).

    Trees are read one after the other; each must start at the next unused node
    and be laid out in preorder: a node's left child, when it is a node, is the
    next node; its right child, when it is a node, the node right after the left
    subtree. A stack of the pending right children (one per level, at most
    ``max_depth``) checks it, so every node is referenced exactly once, every
    reference points forward and every walk ends."""
    n = feature.shape[0]
    stack_node = np.empty(max_depth + 1, np.int64)      # nodes whose right child waits
    stack_depth = np.empty(max_depth + 1, np.int64)
    pos = 0
    for k in range(root.shape[0]):
        depth[k] = 0
        r = root[k]
        if r < n_leaves:
            continue
        if r - n_leaves != pos:
            return LAYOUT_ROOT, k
        cur = pos
        level = 1
        sp = 0
        while True:
            if cur >= n:
                return LAYOUT_RANGE, cur
            if level > max_depth:
                return LAYOUT_DEPTH, cur
            if feature[cur] >= n_features:
                return LAYOUT_FEATURE, cur
            if level > depth[k]:
                depth[k] = level
            pos = cur + 1
            lr = left[cur]
            rr = right[cur]
            if rr >= n_leaves:
                stack_node[sp] = cur
                stack_depth[sp] = level + 1
                sp += 1
            if lr >= n_leaves:
                if lr != n_leaves:
                    return LAYOUT_LEFT, cur
                cur = pos
                level += 1
                continue
            if sp == 0:
                break
            sp -= 1
            parent = stack_node[sp]
            if parent + 1 + (right[parent] - n_leaves) != pos:
                return LAYOUT_RIGHT, parent
            cur = pos
            level = stack_depth[sp]
    if pos != n:
        return LAYOUT_UNUSED, pos
    return LAYOUT_OK, 0
