"""Slow, obvious references for edgecode.hashing and the SSBC device (tests only).

Full SVD in place of Frequent Directions, loops for affinities and Hamming
distances, stable sorts for top-k and rankings, Python integers for the
device's fixed-point pipeline.
"""

import math

import numpy as np


def top_right_singular_vectors(A, k):
    """Top-k right singular vectors (columns, (n_features, k)) by a full SVD."""
    _, _, Vt = np.linalg.svd(np.asarray(A, float), full_matrices=False)
    return Vt[:k].T


def affinity(X, anchors, sigma):
    X, A = np.asarray(X, float), np.asarray(anchors, float)
    out = np.empty((X.shape[0], A.shape[0]))
    for i in range(X.shape[0]):
        for j in range(A.shape[0]):
            out[i, j] = math.exp(-float(((X[i] - A[j]) ** 2).sum()) / sigma)
    return out


def hamming(db_bits, q_bits):
    """(Q, N) Hamming distances of {0,1} codes."""
    db, q = np.asarray(db_bits, int), np.asarray(q_bits, int)
    return (q[:, None, :] != db[None, :, :]).sum(axis=2)


def topk(dist, k):
    """(distances, indices) of the k smallest per row, ties by lower index."""
    idx = np.argsort(dist, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(dist, idx, axis=1), idx


def knn_euclidean(X_db, X_q, k):
    D = ((np.asarray(X_q, float)[:, None, :] - np.asarray(X_db, float)[None]) ** 2).sum(-1)
    return np.argsort(D, axis=1, kind="stable")[:, :k]


def rank_metrics(db_bits, q_bits, true_nn, R):
    dist = hamming(db_bits, q_bits)
    recall, precision, ap = [], [], []
    for qi in range(dist.shape[0]):
        order = np.argsort(dist[qi], kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        r = np.sort(rank[true_nn[qi]])
        hits = int((r < R).sum())
        recall.append(hits / len(r))
        precision.append(hits / R)
        ap.append(np.mean([(t + 1) / (r[t] + 1) for t in range(len(r))]))
    return np.array(recall), np.array(precision), np.array(ap)


def device_bits(arrays, X):
    """The ssbc container's fixed-point pipeline with Python integers."""
    s = int(arrays["input_shift"][0])
    A = arrays["anchors"].astype(int).tolist()
    P = arrays["projection"].astype(int).tolist()
    thr = arrays["thresholds"].astype(int).tolist()
    lut = arrays["exp_lut"].astype(int).tolist()
    mult, clamp = int(arrays["exp_mult"][0]), int(arrays["dist_clamp"][0])
    X32 = np.asarray(X, np.float32)
    out = []
    for x in X32:
        xq = [int(np.rint(np.clip(v * np.float32(2.0**s), -32767, 32767))) for v in x]
        acc = [0] * len(thr)
        for j, a in enumerate(A):
            D = min(sum((xi - ai) ** 2 for xi, ai in zip(xq, a)), clamp)
            t = (D * mult) >> 40
            n, f = t >> 16, t & 0xFFFF
            i, r = f >> 8, f & 0xFF
            w = ((lut[i] * (256 - r) + lut[i + 1] * r) >> 8) >> min(n, 16)
            for b in range(len(acc)):
                acc[b] += w * P[j][b]
        out.append([int(acc[b] > thr[b]) for b in range(len(acc))])
    return np.array(out, dtype=np.uint8)


def knn_vote(q_bits, table_bits, labels, k, n_classes):
    d = hamming(table_bits, q_bits)
    _, idx = topk(d, k)
    out = []
    for row in idx:
        votes = np.bincount(np.asarray(labels)[row], minlength=n_classes)
        out.append(int(np.argmax(votes)))     # first maximum = lowest class index
    return np.array(out)
