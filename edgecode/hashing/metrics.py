"""Retrieval quality of binary codes against true Euclidean neighbours.

A query's relevant items are its ``k`` true Euclidean nearest neighbours in the
database.  The database is ranked by Hamming distance to the query's code, ties
broken by the lower database index (a fixed, reproducible order).  For a query:

* ``recall@R``    = |relevant within the top R| / k
* ``precision@R`` = |relevant within the top R| / R
* ``AP``          = (1/k) sum_t t / rank_t over the relevant items sorted by
  their (1-based) rank; ``mAP`` is its mean over queries.
"""

import numpy as np

from .._config import HASHING_BLOCK_ROWS
from .._validation import check_finite_float, check_int
from ._kernels import _rank_metrics
from .codes import as_words

__all__ = ["true_neighbors", "retrieval_metrics", "recall_at", "precision_at",
           "mean_average_precision"]


def true_neighbors(X_db, X_query, k):
    """Indices (Q, k) of the k nearest database rows of each query (Euclidean,
    ties by lower index), computed exactly in blocks of queries."""
    X_db = check_finite_float(X_db, name="X_db", ndim=2)
    X_query = check_finite_float(X_query, name="X_query", ndim=2)
    k = check_int(k, name="k", low=1, high=X_db.shape[0])
    db_sq = np.einsum("ij,ij->i", X_db, X_db)
    out = np.empty((X_query.shape[0], k), dtype=np.int64)
    for s in range(0, X_query.shape[0], HASHING_BLOCK_ROWS // 4):
        Q = X_query[s:s + HASHING_BLOCK_ROWS // 4]
        D = db_sq[None, :] - 2.0 * Q @ X_db.T
        part = np.argpartition(D, k - 1, axis=1)[:, :k] if k < D.shape[1] else \
            np.tile(np.arange(D.shape[1]), (D.shape[0], 1))
        for r in range(Q.shape[0]):
            cand = part[r]
            order = np.lexsort((cand, D[r, cand]))
            out[s + r] = cand[order]
    return out


def retrieval_metrics(db_codes, query_codes, true_nn, n_bits, R=100):
    """Per-query recall@R, precision@R and AP of the Hamming ranking.

    Parameters
    ----------
    db_codes, query_codes : {0,1} bits, packed uint8 or packed uint64 codes
    true_nn : int array (Q, k), the relevant database indices of each query
    n_bits : int
    R : int, default=100

    Returns
    -------
    dict of ndarray (Q,): ``recall``, ``precision``, ``ap``
    """
    db = as_words(db_codes, n_bits, name="db_codes")
    q = as_words(query_codes, n_bits, name="query_codes")
    true_nn = np.ascontiguousarray(true_nn, dtype=np.int64)
    if true_nn.ndim != 2 or true_nn.shape[0] != q.shape[0]:
        raise ValueError(f"true_nn must have shape ({q.shape[0]}, k); got {true_nn.shape}")
    if true_nn.size and (true_nn.min() < 0 or true_nn.max() >= db.shape[0]):
        raise ValueError(f"true_nn entries must index the {db.shape[0]} database codes")
    R = check_int(R, name="R", low=1)
    recall = np.empty(q.shape[0])
    precision = np.empty(q.shape[0])
    ap = np.empty(q.shape[0])
    _rank_metrics(db, q, true_nn, R, recall, precision, ap, np.empty(db.shape[0], np.int32),
                  np.empty(64 * db.shape[1] + 1, np.int64), np.zeros(db.shape[0], np.bool_),
                  np.empty(true_nn.shape[1], np.int64))
    return {"recall": recall, "precision": precision, "ap": ap}


def recall_at(db_codes, query_codes, true_nn, n_bits, R=100):
    """Mean recall@R of the true neighbours (see module docstring)."""
    return float(retrieval_metrics(db_codes, query_codes, true_nn, n_bits, R)["recall"].mean())


def precision_at(db_codes, query_codes, true_nn, n_bits, R=100):
    """Mean precision@R (see module docstring)."""
    return float(retrieval_metrics(db_codes, query_codes, true_nn, n_bits, R)["precision"].mean())


def mean_average_precision(db_codes, query_codes, true_nn, n_bits):
    """mAP of the Hamming ranking with the true neighbours as relevant items."""
    return float(retrieval_metrics(db_codes, query_codes, true_nn, n_bits, 1)["ap"].mean())
