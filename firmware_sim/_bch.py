"""Binary BCH codes for the image protection (issue 27): encode, decode, sizes.

A narrow-sense primitive binary BCH code over GF(2^m) of length
n = 2^m - 1 corrects t errors; its generator g(x) is the product of the
distinct minimal polynomials of alpha^1, ..., alpha^2t (one per cyclotomic
coset of an odd exponent below 2t), of degree r <= m t; a block carries
k = n - r data bits. Blocks are systematic: the codeword polynomial is
``c(x) = x^r d(x) + (x^r d(x) mod g(x))``, so coefficient i < r is check bit
i and coefficient r + j is data bit j. A block with fewer data bits (the
last block of an array) is the same code shortened: the missing high data
positions are zero and are not stored.

Decoding (:func:`bch_decode`) is the textbook one: syndromes S_j = c(alpha^j),
j = 1..2t; the error locator by Berlekamp-Massey; its roots by a Chien
search over the block's (shortened) positions. A block is **detected**
(left as read, reported) when the locator's degree exceeds t, differs from
the number of its roots found among the stored positions, or the syndromes
do not vanish after the correction; a block with at most t upsets is always
corrected. With more than t upsets a block is either detected or (rarely)
miscorrected to another codeword, as with any bounded-distance decoder.

Plain numpy: syndromes and the Chien search are vectorised, and the
Berlekamp-Massey loop (2t steps) runs only for a block whose syndromes are
not all zero, so decoding a clean image costs one vectorised pass.

Why not :mod:`edgecode.ecoc.bch`: that module builds ECOC coding matrices on
the host; ``firmware_sim`` is the device side and imports numpy only
(``DESIGN.md``), so it cannot import ``edgecode``. The device needs only the
generator and the field tables of m = 3..13, built here from a fixed table
of primitive polynomials (the same smallest primitive polynomials that
``edgecode.ecoc.bch.primitive_polynomial`` finds by search; a test pins the
two together).
"""

from functools import lru_cache

import numpy as np

from .errors import DeviceError

__all__ = ["M_RANGE", "T_MAX", "PRIMITIVE", "bch_params_error", "bch_layout",
           "bch_encode_bits", "bch_decode", "generator"]

#: Field sizes m accepted (blocks of up to 2^m - 1 bits).
M_RANGE = (3, 13)
#: Largest t accepted (also t <= 2^(m-1) - 1: the designed distance fits a block).
T_MAX = 32
#: Primitive polynomial of GF(2^m), bit i = coefficient of x^i.
PRIMITIVE = {3: 0xB, 4: 0x13, 5: 0x25, 6: 0x43, 7: 0x83, 8: 0x11D, 9: 0x211, 10: 0x409,
             11: 0x805, 12: 0x1053, 13: 0x201B}


def bch_params_error(m, t):
    """None when (m, t) names a code this module builds, else why not (text)."""
    if not M_RANGE[0] <= m <= M_RANGE[1]:
        return f"m = {m} must be in [{M_RANGE[0]}, {M_RANGE[1]}]"
    hi = min(T_MAX, (1 << (m - 1)) - 1)
    if not 1 <= t <= hi:
        return f"t = {t} must be in [1, {hi}] for m = {m}"
    return None


@lru_cache(maxsize=None)
def _field(m):
    """exp (length 2 n, wrapped) and log tables of GF(2^m)."""
    n = (1 << m) - 1
    exp = np.zeros(2 * n, np.int64)
    log = np.full(n + 1, -1, np.int64)
    x = 1
    for i in range(n):
        exp[i] = x
        if log[x] >= 0:                      # pragma: no cover - the table is fixed
            raise AssertionError(f"polynomial {PRIMITIVE[m]:#x} is not primitive")
        log[x] = i
        x <<= 1
        if x >> m:
            x ^= PRIMITIVE[m]
    exp[n:] = exp[:n]
    return exp, log


@lru_cache(maxsize=None)
def _field_lists(m):
    """The tables of :func:`_field` as Python lists (fast scalar lookups)."""
    exp, log = _field(m)
    return exp.tolist(), log.tolist()


def _gf_poly_mul(a, b, m):
    """Product of two polynomials over GF(2^m) (coefficient lists, low first)."""
    exp, log = _field(m)
    n = (1 << m) - 1
    out = [0] * (len(a) + len(b) - 1)
    for i, x in enumerate(a):
        if x == 0:
            continue
        for j, y in enumerate(b):
            if y:
                out[i + j] ^= int(exp[(log[x] + log[y]) % n])
    return out


@lru_cache(maxsize=None)
def generator(m, t):
    """Generator of the (2^m - 1, k) t-error-correcting code: uint8 coefficients
    (low first; degree r = ``len - 1``)."""
    err = bch_params_error(m, t)
    if err:
        raise DeviceError(err)
    exp, _ = _field(m)
    n = (1 << m) - 1
    seen = set()
    g = np.ones(1, np.uint8)
    for i in range(1, 2 * t + 1):
        if i in seen:
            continue
        coset, j = [], i
        while j not in coset:
            coset.append(j)
            j = 2 * j % n
        seen.update(coset)
        poly = [1]
        for j in coset:                        # prod (x - alpha^j): coefficients in GF(2)
            poly = _gf_poly_mul(poly, [int(exp[j]), 1], m)
        if any(c > 1 for c in poly):           # pragma: no cover - a minimal polynomial
            raise AssertionError("minimal polynomial with a coefficient outside GF(2)")
        g = (np.convolve(g, np.asarray(poly, np.int64)) & 1).astype(np.uint8)
    return g


@lru_cache(maxsize=None)
def _remainders(m, t):
    """R[j] = x^(r + j) mod g(x) as r bits, for the data positions j < k."""
    g = generator(m, t)
    r = g.size - 1
    k = (1 << m) - 1 - r
    out = np.zeros((k, r), np.uint8)
    cur = np.zeros(r, np.uint8)                # x^r mod g = g - x^r
    cur[:] = g[:r]
    for j in range(k):
        out[j] = cur
        top = cur[r - 1]
        cur[1:] = cur[:-1]
        cur[0] = 0
        if top:
            cur ^= g[:r]
    return out


def bch_layout(m, t, nbits):
    """(r, k, n_blocks) of ``nbits`` data bits: check bits and data bits per block."""
    r = generator(m, t).size - 1
    k = (1 << m) - 1 - r
    return r, k, -(-nbits // k)


def _blocks(bits, k, n_blocks):
    pad = np.zeros(n_blocks * k, np.uint8)
    pad[:bits.size] = bits
    return pad.reshape(n_blocks, k)


def bch_encode_bits(bits, m, t):
    """Check bits (n_blocks, r) of the data ``bits`` (0/1 uint8, stream order)."""
    r, k, nb = bch_layout(m, t, bits.size)
    if nb == 0:
        return np.zeros((0, r), np.uint8)
    return _checks(_blocks(bits, k, nb), m, t)


@lru_cache(maxsize=None)
def _remainders_packed(m, t):
    """:func:`_remainders` packed: row j is x^(r + j) mod g(x) as uint64 words."""
    R = _remainders(m, t)
    w = -(-R.shape[1] // 64)
    pad = np.zeros((R.shape[0], 64 * w), np.uint8)
    pad[:, :R.shape[1]] = R
    return np.packbits(pad, axis=1, bitorder="little").view("<u8")


def _checks(d, m, t):
    """Check bits (n_blocks, r) of data blocks ``d`` (n_blocks, k): per block,
    the XOR of the packed remainders of its set data bits (the code is linear)."""
    R = _remainders_packed(m, t)
    r = generator(m, t).size - 1
    acc = np.zeros((d.shape[0], R.shape[1]), np.uint64)
    for b in range(d.shape[0]):
        idx = np.flatnonzero(d[b])
        if idx.size:
            acc[b] = np.bitwise_xor.reduce(R[idx], axis=0)
    bits = np.unpackbits(acc.view(np.uint8), axis=1, bitorder="little")
    return np.ascontiguousarray(bits[:, :r])


def _berlekamp_massey(S, m):
    """Error locator (coefficients, low first) of syndromes ``S`` (S[0] = S_1)."""
    exp, log = _field_lists(m)
    n = (1 << m) - 1

    def mul(a, b):
        return 0 if a == 0 or b == 0 else exp[(log[a] + log[b]) % n]

    C, B = [1], [1]
    L, shift, b = 0, 1, 1
    for i in range(len(S)):
        d = S[i]
        for j in range(1, L + 1):
            if j < len(C):
                d ^= mul(C[j], S[i - j])
        if d == 0:
            shift += 1
            continue
        coef = exp[(log[d] - log[b]) % n]
        T = list(C)
        need = len(B) + shift
        if len(C) < need:
            C = C + [0] * (need - len(C))
        for j, x in enumerate(B):
            C[j + shift] ^= mul(coef, x)
        if 2 * L <= i:
            L, B, b, shift = i + 1 - L, T, d, 1
        else:
            shift += 1
    while len(C) > 1 and C[-1] == 0:
        C.pop()
    return C, L


def bch_decode(bits, checks, m, t):
    """Correct data ``bits`` (stream order) with their stored ``checks`` (n_blocks, r).

    Returns ``(bits, corrected, detected)``: the corrected data bits and, per
    block, whether an upset was corrected (in its data or check bits) and
    whether it was detected and not corrected (the block is left as read).
    """
    exp, log = _field(m)
    n = (1 << m) - 1
    r, k, nb = bch_layout(m, t, bits.size)
    corrected = np.zeros(nb, bool)
    detected = np.zeros(nb, bool)
    if nb == 0:
        return bits.copy(), corrected, detected
    d = _blocks(bits, k, nb)
    kb = np.full(nb, k, np.int64)
    kb[-1] = bits.size - (nb - 1) * k
    # the received word and its remainder mod g(x) have the same syndromes:
    # the remainder is the stored checks XOR the checks of the received data
    # (r bits instead of r + k per block; zero for a block without upsets)
    rem = checks.astype(np.uint8) ^ _checks(d, m, t)
    cw = np.concatenate([checks.astype(np.uint8), d], axis=1)      # (nb, r + k)
    js = np.arange(1, 2 * t + 1, dtype=np.int64)
    out = d.copy()
    for b in np.flatnonzero(rem.any(axis=1)).tolist():
        length = r + int(kb[b])
        pos = np.flatnonzero(rem[b])
        S = np.bitwise_xor.reduce(exp[(pos[:, None] * js[None, :]) % n], axis=0)
        if not S.any():                        # pragma: no cover - rem != 0 has a syndrome
            continue
        C, L = _berlekamp_massey([int(s) for s in S], m)
        deg = len(C) - 1
        if deg != L or L > t:
            detected[b] = True
            continue
        # Chien search: position i is in error iff C(alpha^-i) = 0
        i = np.arange(length, dtype=np.int64)
        val = np.zeros(length, np.int64)
        for l, c in enumerate(C):
            if c:
                val ^= exp[(log[c] - i * l) % n]
        roots = np.flatnonzero(val == 0)
        if roots.size != deg:
            detected[b] = True
            continue
        fixed = cw[b, :length].copy()
        fixed[roots] ^= 1
        p2 = np.flatnonzero(fixed)
        if p2.size and np.bitwise_xor.reduce(exp[(p2[:, None] * js[None, :]) % n],
                                             axis=0).any():
            detected[b] = True                 # pragma: no cover - BM + Chien are exact
            continue
        out[b, :length - r] = fixed[r:]
        corrected[b] = True
    return out.reshape(-1)[:bits.size].copy(), corrected, detected
