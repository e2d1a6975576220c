"""The ONNX ``TreeEnsembleRegressor`` of the compact tree node format (issue 26),
shared by the forest graph (:mod:`export.forest`: one target per tree, its
leaf id) and the ECOC tree learners (:mod:`export.ecoc`: the leaf is the
symbol)."""

import numpy as np
from onnx import TensorProto, helper


def _node(nodes, op, inputs, outputs, **attrs):
    nodes.append(helper.make_node(op, inputs, outputs, **attrs))
    return outputs[0]


def _tree_ensemble(arrays, qf, nodes):
    """``TreeEnsembleRegressor``: one target per tree whose value is the leaf id."""
    feat = arrays["node_feature"].astype(np.int64)
    thr = arrays["node_threshold"].astype(np.int64)
    left = arrays["node_left"].astype(np.int64)
    right = arrays["node_right"].astype(np.int64)
    root = arrays["tree_root"].astype(np.int64)
    L = int(arrays["leaf_value"].shape[0]) if "leaf_value" in arrays else \
        int(arrays["n_classes"][0])
    if L >= 2**24:
        raise ValueError(f"{L} leaves: the ONNX graph carries leaf ids as float32 tree "
                         "outputs, exact below 2**24")
    a = {k: [] for k in ("tree", "node", "feat", "value", "mode", "true", "false")}
    tg = {k: [] for k in ("tree", "node", "id", "w")}

    def add(k, nid, mode, f=0, v=0.0, tr=0, fa=0):
        a["tree"].append(k)
        a["node"].append(nid)
        a["feat"].append(f)
        a["value"].append(v)
        a["mode"].append(mode)
        a["true"].append(tr)
        a["false"].append(fa)

    for k, r in enumerate(root.tolist()):
        if r < L:
            add(k, 0, "LEAF")
            tg["tree"].append(k), tg["node"].append(0), tg["id"].append(k)
            tg["w"].append(float(r))
            continue
        s = r - L
        # the tree's nodes: [s, e) (preorder); local id = global - s, leaves after them
        stack, e = [s], s
        while stack:
            i = stack.pop()
            e = max(e, i + 1)
            for ref in (right[i], left[i]):
                if ref >= L:
                    stack.append(i + 1 + int(ref - L))
        nxt = e - s
        for i in range(s, e):          # the root first: runtimes take it as the tree's root
            kids, leaf_kids = [], []
            for ref in (left[i], right[i]):
                if ref >= L:
                    kids.append(i + 1 + int(ref - L) - s)
                else:
                    leaf_kids.append((nxt, float(ref)))
                    kids.append(nxt)
                    nxt += 1
            add(k, i - s, "BRANCH_LEQ", int(feat[i]), float(thr[i]), kids[0], kids[1])
            for nid, w in leaf_kids:
                add(k, nid, "LEAF")
                tg["tree"].append(k), tg["node"].append(nid), tg["id"].append(k)
                tg["w"].append(w)
    nodes.append(helper.make_node(
        "TreeEnsembleRegressor", [qf], ["leaf_f"], domain="ai.onnx.ml",
        n_targets=int(root.shape[0]), aggregate_function="SUM", post_transform="NONE",
        nodes_treeids=a["tree"], nodes_nodeids=a["node"], nodes_featureids=a["feat"],
        nodes_values=a["value"], nodes_modes=a["mode"], nodes_truenodeids=a["true"],
        nodes_falsenodeids=a["false"],
        nodes_missing_value_tracks_true=[0] * len(a["mode"]),
        target_treeids=tg["tree"], target_nodeids=tg["node"], target_ids=tg["id"],
        target_weights=tg["w"]))
    return _node(nodes, "Cast", ["leaf_f"], ["leaves"], to=TensorProto.INT64)
