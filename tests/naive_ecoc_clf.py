"""Slow, obvious references for the ECOC classifier tests (never used by the package)."""

import numpy as np


def codewords_loop(clf, X):
    """Learner outputs by a per-sample Python loop over the fitted estimators."""
    X = np.asarray(X, dtype=np.float64)
    out = np.empty((X.shape[0], len(clf.estimators_)), dtype=np.int64)
    for i in range(X.shape[0]):
        for j, (est, idx) in enumerate(zip(clf.estimators_, clf.feature_indices_)):
            row = X[i:i + 1] if idx is None else X[i:i + 1][:, idx]
            out[i, j] = int(est.predict(row)[0])
    return out


def hamming_bruteforce(words, code):
    """All-pairs doubled Hamming distance with the 1/2 rule for unused entries.

    ``dist2[i, r] = sum_j (2 if code[r, j] >= 0 and words[i, j] != code[r, j]
    else 1 if code[r, j] == -1 else 0)``; the label is the first r of minimum
    distance, found by scanning r upwards and keeping strict improvements.
    """
    words = np.asarray(words)
    code = np.asarray(code)
    n, c = words.shape[0], code.shape[0]
    dist2 = np.zeros((n, c), dtype=np.int64)
    labels = np.zeros(n, dtype=np.int64)
    for i in range(n):
        best = None
        for r in range(c):
            d = 0
            for j in range(code.shape[1]):
                if code[r, j] == -1:
                    d += 1
                elif words[i, j] != code[r, j]:
                    d += 2
            dist2[i, r] = d
            if best is None or d < best:
                best = d
                labels[i] = r
    return labels, dist2


def delta_scores(X, target):
    """|#(t, pos)/|pos| - #(t, neg)/|neg|| for a 0/1 target, term by term."""
    X = np.asarray(X) != 0
    pos, neg = target == 1, target == 0
    out = np.empty(X.shape[1])
    for t in range(X.shape[1]):
        out[t] = abs(X[pos, t].sum() / pos.sum() - X[neg, t].sum() / neg.sum())
    return out
