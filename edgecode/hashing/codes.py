"""Packed binary codes: the one bit layout used everywhere in edgecode.

Bit ``i`` of a code lives in byte ``i // 8`` at bit position ``i % 8``
counting from the least significant bit (``np.packbits(..., bitorder="little")``).
The last byte is padded with zero bits.  Because the bytes are little-endian,
the same memory read as uint64 words puts bit ``i`` in word ``i // 64`` at
position ``i % 64``: :func:`pack_bits` with ``dtype=np.uint64`` is exactly the
uint8 packing padded to a multiple of 8 bytes and viewed as ``<u8``.
The estimators, :class:`~edgecode.hashing.HammingIndex`, the ``ssbc``
container, the device runtime and the ONNX graph all use this layout.
"""

import numpy as np

__all__ = ["pack_bits", "unpack_bits", "n_words", "as_words"]


def n_words(n_bits, dtype=np.uint8):
    """Number of ``dtype`` words holding ``n_bits`` bits.

    >>> n_words(33), n_words(33, np.uint64)
    (5, 1)
    """
    per = np.dtype(dtype).itemsize * 8
    return (int(n_bits) + per - 1) // per


def pack_bits(bits, dtype=np.uint8):
    """Pack {0,1} codes of shape (N, n_bits) into (N, n_words) uint8 or uint64.

    >>> pack_bits([[1, 0, 0, 0, 0, 0, 0, 0, 1]]).tolist()
    [[1, 1]]
    >>> pack_bits([[0, 1, 1]], np.uint64).tolist()
    [[6]]
    """
    bits = np.asarray(bits)
    if bits.ndim != 2:
        raise ValueError(f"bits must be 2-dimensional (n_codes, n_bits); got shape {bits.shape}")
    if bits.dtype != np.bool_:
        bad = (bits != 0) & (bits != 1)
        if bad.any():
            i, j = np.argwhere(bad)[0]
            raise ValueError(f"bits[{i}, {j}] must be 0 or 1; got {bits[i, j]}")
    dtype = np.dtype(dtype)
    packed = np.packbits(bits.astype(np.uint8), axis=1, bitorder="little")
    if dtype == np.uint8:
        return np.ascontiguousarray(packed)
    if dtype != np.uint64:
        raise TypeError(f"dtype must be uint8 or uint64; got {dtype}")
    nb = packed.shape[1]
    pad = (-nb) % 8
    if pad or nb == 0:
        packed = np.concatenate([packed, np.zeros((packed.shape[0], pad or 8 * (nb == 0)),
                                                  np.uint8)], axis=1)
    return np.ascontiguousarray(packed).view("<u8").astype(np.uint64)


def unpack_bits(packed, n_bits):
    """Inverse of :func:`pack_bits`: (N, n_words) uint8/uint64 -> (N, n_bits) uint8 {0,1}.

    >>> unpack_bits(pack_bits([[1, 1, 0]], np.uint64), 3).tolist()
    [[1, 1, 0]]
    """
    packed = np.asarray(packed)
    if packed.ndim != 2 or packed.dtype not in (np.uint8, np.uint64):
        raise ValueError("packed must be a 2-d uint8 or uint64 array; got "
                         f"{packed.dtype} of shape {packed.shape}")
    if packed.dtype == np.uint64:
        packed = np.ascontiguousarray(packed.astype("<u8")).view(np.uint8)
    if packed.shape[1] * 8 < n_bits:
        raise ValueError(f"packed has {packed.shape[1]} bytes per code; {n_bits} bits need "
                         f"{n_words(n_bits)}")
    return np.unpackbits(packed, axis=1, count=n_bits, bitorder="little")


def as_words(codes, n_bits, name="codes"):
    """Codes as C-contiguous uint64 words (N, ceil(n_bits / 64)).

    Accepts {0,1} bits (N, n_bits) of any integer/bool dtype, packed uint8
    (N, ceil(n_bits / 8)) or packed uint64 (N, ceil(n_bits / 64)).  A uint8
    array with ``n_bits`` columns is read as bits (for ``n_bits = 1`` the two
    readings coincide).
    """
    arr = np.asarray(codes)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-dimensional (n_codes, ...); got shape {arr.shape}")
    if arr.dtype == np.uint64:
        if arr.shape[1] != n_words(n_bits, np.uint64):
            raise ValueError(f"{name} as uint64 words must have {n_words(n_bits, np.uint64)} "
                             f"columns for {n_bits} bits; got shape {arr.shape}")
        return np.ascontiguousarray(arr)
    if arr.dtype == np.uint8 and arr.shape[1] == n_words(n_bits) and arr.shape[1] != n_bits:
        return pack_bits(unpack_bits(arr, n_bits), np.uint64)
    if arr.shape[1] != n_bits or not (np.issubdtype(arr.dtype, np.integer)
                                      or arr.dtype == np.bool_):
        raise ValueError(f"{name} must be {{0,1}} bits of shape (N, {n_bits}), packed uint8 "
                         f"(N, {n_words(n_bits)}) or packed uint64 "
                         f"(N, {n_words(n_bits, np.uint64)}); got {arr.dtype} {arr.shape}")
    return pack_bits(arr, np.uint64)
