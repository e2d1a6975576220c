"""Exhaustive Hamming search over packed binary codes."""

import numpy as np

from .._parallel import n_workers, run_chunks, split
from .._validation import check_int
from ._kernels import _TQBLOCK, TILE, _hamming_topk_tiled
from .codes import as_words, n_words

__all__ = ["HammingIndex"]


class HammingIndex:
    """Flat index of binary codes with exact top-k Hamming search.

    Codes are stored as uint64 words (bit i in word ``i // 64`` at position
    ``i % 64``, LSB first; :mod:`edgecode.hashing.codes`), and also as
    transposed tiles of 1024 codes (word w of a tile's codes contiguous: twice
    the memory of the codes). A search scans each tile for a block of 32
    queries while it is in cache, XOR and popcount two words at a time in
    loops the compiler vectorises (AVX2), counting the codes at or below each
    query's current threshold; tiles without one are skipped, the others
    offer their codes, in index order, to bounded buckets per distance
    (``n_bits + 1`` of them): O(n) per query, no sort. Queries are split over
    numba's thread count (``numba.set_num_threads``); results do not depend
    on it. Memory of a search: ``32 (n_bits + 1) k`` int64 bucket slots per
    thread (fewer queries per block when that passes 64 MB).

    Parameters
    ----------
    n_bits : int
        Code length.

    Examples
    --------
    >>> import numpy as np
    >>> idx = HammingIndex(4)
    >>> idx.add([[0, 0, 0, 0], [1, 1, 0, 0], [1, 0, 0, 0]])
    >>> dist, ind = idx.search([[1, 0, 0, 0]], k=2)
    >>> dist.tolist(), ind.tolist()
    ([[0, 1]], [[2, 0]])
    """

    def __init__(self, n_bits):
        self.n_bits = check_int(n_bits, name="n_bits", low=1)
        self._words = np.empty((0, n_words(self.n_bits, np.uint64)), dtype=np.uint64)
        self._tiles = None

    @property
    def ntotal(self):
        """Number of stored codes."""
        return self._words.shape[0]

    @property
    def codes(self):
        """The stored codes as uint64 words (read-only view)."""
        v = self._words.view()
        v.flags.writeable = False
        return v

    def add(self, codes):
        """Append codes: {0,1} bits (N, n_bits), packed uint8 or packed uint64."""
        w = as_words(codes, self.n_bits)
        self._words = np.ascontiguousarray(np.vstack([self._words, w]))
        self._tiles = None                           # rebuilt at the next search

    def _tiled(self):
        """The codes as transposed tiles ``(n_tiles, n_words, TILE)`` (zero padded)."""
        if self._tiles is None:
            n, W = self._words.shape
            nt = -(-n // TILE)
            padded = np.zeros((nt * TILE, W), np.uint64)
            padded[:n] = self._words
            self._tiles = np.ascontiguousarray(padded.reshape(nt, TILE, W).transpose(0, 2, 1))
        return self._tiles

    def search(self, queries, k):
        """The k stored codes nearest to each query in Hamming distance.

        Parameters
        ----------
        queries : array-like
            {0,1} bits (Q, n_bits), packed uint8 or packed uint64.
        k : int
            1 <= k <= ntotal.

        Returns
        -------
        distances : ndarray of int32, shape (Q, k)
        indices : ndarray of int64, shape (Q, k)
            Sorted by distance, ties by the lower index (insertion order).
        """
        q = as_words(queries, self.n_bits, name="queries")
        k = check_int(k, name="k", low=1, high=max(self.ntotal, 1))
        if self.ntotal == 0:
            raise ValueError("the index is empty; add codes before searching")
        q = np.ascontiguousarray(q)
        nq = q.shape[0]
        dist = np.empty((nq, k), dtype=np.int32)
        ind = np.empty((nq, k), dtype=np.int64)
        # query ranges per thread, whole blocks of _TQBLOCK queries where possible
        ranges = [(_TQBLOCK * a, min(_TQBLOCK * b, nq))
                  for a, b in split(-(-nq // _TQBLOCK), n_workers())]
        run_chunks(_search_chunk, ranges, self._tiled(), self.ntotal, q, k, dist, ind)
        return dist, ind


def _search_chunk(tiles, n, queries, k, out_dist, out_idx, q_start, q_stop):
    """One thread's queries: its scratch buffers, then the scan (which releases the GIL).

    Queries per block: ``_TQBLOCK``, fewer when k is large (the buckets stay
    under 64 MB).
    """
    _, W, T = tiles.shape
    B = 64 * W
    qb = max(1, min(_TQBLOCK, (1 << 23) // ((B + 1) * k)))
    _hamming_topk_tiled(tiles, n, queries, k, out_dist, out_idx, np.empty(qb, np.int64),
                        np.empty(qb, np.int64), np.empty((qb, B + 1), np.int64),
                        np.empty((qb, B + 1, k), np.int64), _aligned_int64(T),
                        q_start, q_stop)


def _aligned_int64(n):
    """``n`` int64 slots starting on a 64-byte boundary: the tile distances are
    read and written with vector instructions, 3-6 % slower at 256 and 512
    bits when they straddle cache lines (numpy aligns to 16 bytes only)."""
    buf = np.empty(n + 8, np.int64)
    off = (-buf.ctypes.data % 64) // 8
    return buf[off:off + n]
