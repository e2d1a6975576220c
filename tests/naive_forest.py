"""Slow, obvious references for the forest kind (loops and recursion, no numba).

* :func:`quantize` -- the ECOC quantizer element by element;
* :func:`layout_ok` -- the container's structural rules, recursively (every
  tree in preorder after the previous one, every node used once, features
  in range, at most 64 levels);
* :func:`device_infer` -- the device's walk and vote, node by node, from the
  container's arrays (the documented reference encoding, nothing shared with
  the numba kernels);
* :func:`sklearn_leaf` -- a scikit-learn tree walked by hand on float32
  features (what ``tree.apply`` does);
* :func:`near_threshold` -- brute force: per row, does some tree reach a
  leaf of another value on the device than in the float model, and which
  feature lies within one quantizer step of which threshold there.
"""

import math

import numpy as np

MAX_DEPTH = 64


def quantize(X, center, shift):
    """``clip(rint((x - c) * 2**e), -32767, 32767)`` one value at a time (rint: half to even)."""
    X = np.asarray(X, np.float64)
    out = np.empty(X.shape, np.int64)
    for i in range(X.shape[0]):
        for f in range(X.shape[1]):
            v = (X[i, f] - float(center[f])) * 2.0 ** int(shift[f])
            r = round(v) if math.isfinite(v) else v        # Python's round: half to even
            out[i, f] = int(max(-32767, min(32767, r)))
    return out


def _arrays(container_or_arrays):
    a = getattr(container_or_arrays, "arrays", container_or_arrays)
    return {k: np.asarray(v) for k, v in a.items()}


def n_leaves(a):
    return int(a["leaf_value"].shape[0]) if "leaf_value" in a else int(a["n_classes"][0])


def layout_ok(container_or_arrays):
    """True when the node arrays follow the rules of docs/container_format.md
    (kind forest, rules 6-8), checked recursively."""
    a = _arrays(container_or_arrays)
    L = n_leaves(a)
    d = a["in_center"].shape[0]
    feat = [int(v) for v in a["node_feature"]]
    left = [int(v) for v in a["node_left"]]
    right = [int(v) for v in a["node_right"]]
    n = len(feat)
    seen = []

    def subtree(i, level):
        """Visit node i at `level`; return the index after its subtree, or None."""
        if i >= n or level > MAX_DEPTH or feat[i] >= d or i != len(seen):
            return None
        seen.append(i)
        nxt = i + 1
        if left[i] >= L:
            if left[i] != L:
                return None
            nxt = subtree(i + 1, level + 1)
            if nxt is None:
                return None
        if right[i] >= L:
            if i + 1 + (right[i] - L) != nxt:
                return None
            nxt = subtree(nxt, level + 1)
        return nxt

    import sys
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 4 * MAX_DEPTH + 100))
    try:
        for r in (int(v) for v in a["tree_root"]):
            if r < L:
                continue
            if r - L != len(seen) or subtree(r - L, 1) is None:
                return False
    finally:
        sys.setrecursionlimit(old)
    return len(seen) == n


def device_leaf(a, q_row, k):
    """Leaf id tree k reaches on one frame (the reference encoding, node by node)."""
    L = n_leaves(a)
    r = int(a["tree_root"][k])
    if r < L:
        return r
    node = r - L
    while True:
        go_left = int(q_row[int(a["node_feature"][node])]) <= int(a["node_threshold"][node])
        r = int(a["node_left"][node] if go_left else a["node_right"][node])
        if r < L:
            return r
        node = node + 1 + (r - L)


def device_infer(container_or_arrays, q):
    """(labels, leaves, votes) of int16 frames, loops only (ties: lowest class)."""
    a = _arrays(container_or_arrays)
    C = int(a["n_classes"][0])
    T = a["tree_root"].shape[0]
    q = np.asarray(q)
    leaves = np.zeros((q.shape[0], T), np.int64)
    votes = np.zeros((q.shape[0], C), np.int64)
    labels = np.zeros(q.shape[0], np.int64)
    for i in range(q.shape[0]):
        for k in range(T):
            lf = device_leaf(a, q[i], k)
            leaves[i, k] = lf
            if "leaf_value" in a:
                for c in range(C):
                    votes[i, c] += int(a["leaf_value"][lf, c])
            else:
                votes[i, lf] += 1
        best = 0
        for c in range(1, C):
            if votes[i, c] > votes[i, best]:
                best = c
        labels[i] = best
    return labels, leaves, votes


def sklearn_leaf(tree, x32):
    """Node id of the leaf a scikit-learn tree reaches on one float32 row (by hand)."""
    t = tree.tree_ if hasattr(tree, "tree_") else tree
    nd = 0
    while t.children_left[nd] >= 0:
        nd = t.children_left[nd] if x32[t.feature[nd]] <= t.threshold[nd] \
            else t.children_right[nd]
    return int(nd)


def soft_vote_label(model_trees, X32):
    """Index of the first largest mean probability over the trees (float64), by hand."""
    out = []
    for x in X32:
        total = None
        for tr in model_trees:
            v = np.asarray(tr.tree_.value[sklearn_leaf(tr, x), 0, :], np.float64)
            p = v / v.sum()
            total = p if total is None else total + p
        out.append(int(np.argmax(total)))
    return np.array(out, np.int64)


def near_threshold(model_trees, leaf_of, X, q, a, shift):
    """Brute force on a forest fitted on raw features (no pipeline): rows where some
    tree reaches another device leaf id than the float model's (``leaf_of(k,
    node)``: the device's id of scikit-learn leaf ``node`` of tree k; ``q`` the
    frames, ``a`` the container arrays). Returns ``(rows, witnesses)``: for each
    such row, a ``(tree, feature, threshold)`` on the float path where the
    feature lies within one quantizer step ``2**-shift[f]`` of the threshold, or
    None when there is none."""
    X = np.asarray(X, np.float64)
    X32 = X.astype(np.float32)
    rows, witnesses = [], []
    for i in range(X.shape[0]):
        if all(device_leaf(a, q[i], k) == leaf_of(k, sklearn_leaf(tr, X32[i]))
               for k, tr in enumerate(model_trees)):
            continue
        rows.append(i)
        wit = None
        for k, tr in enumerate(model_trees):
            t = tr.tree_
            nd = 0
            while t.children_left[nd] >= 0:
                f, th = int(t.feature[nd]), float(t.threshold[nd])
                if abs(X[i, f] - th) <= 2.0 ** -int(shift[f]):
                    wit = (k, f, th)
                nd = t.children_left[nd] if X32[i, f] <= th else t.children_right[nd]
        witnesses.append(wit)
    return rows, witnesses
