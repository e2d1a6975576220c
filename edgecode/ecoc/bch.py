"""Binary BCH codes: GF(2^m) arithmetic, generator polynomials, codewords.

A narrow-sense primitive binary BCH code of length n = 2^m - 1 and designed
distance delta = 2t + 1 has the generator polynomial
``g(x) = lcm(m_1(x), ..., m_2t(x))``, the product of the distinct minimal
polynomials of alpha^1, ..., alpha^2t, alpha a primitive element of GF(2^m).
Everything here is computed: the primitive polynomial of GF(2^m) (the
smallest one, by search), the field tables, the cyclotomic cosets and the
minimal polynomials (products of (x - alpha^j) over a coset, evaluated in
GF(2^m)).  Polynomials over GF(2) are Python ints, bit i = coefficient of x^i.
"""

from functools import lru_cache

import numpy as np

__all__ = ["GF2m", "primitive_polynomial", "bch_generator", "bch_generator_matrix",
           "bch_lengths"]

#: Field degrees supported (code lengths 7 .. 1023).
_M_RANGE = range(3, 11)


def bch_lengths():
    """Code lengths n = 2^m - 1 available (m = 3 .. 10).

    Examples
    --------
    >>> from edgecode.ecoc.bch import bch_lengths
    >>> bch_lengths()[:4]
    [7, 15, 31, 63]
    """
    return [2 ** m - 1 for m in _M_RANGE]


def _pmod(a, p):
    """a mod p for GF(2) polynomials (ints)."""
    dp = p.bit_length() - 1
    while a.bit_length() - 1 >= dp:
        a ^= p << (a.bit_length() - 1 - dp)
    return a


def _pmul(a, b):
    """Carry-less product of GF(2) polynomials."""
    out = 0
    while b:
        if b & 1:
            out ^= a
        a <<= 1
        b >>= 1
    return out


@lru_cache(maxsize=None)
def primitive_polynomial(m):
    """The smallest primitive polynomial of degree m over GF(2), as an int.

    Found by search: p is primitive iff the powers x^1, x^2, ... mod p first
    return to 1 at x^(2^m - 1).

    Examples
    --------
    >>> from edgecode.ecoc.bch import primitive_polynomial
    >>> bin(primitive_polynomial(4))      # x^4 + x + 1
    '0b10011'
    """
    order = 2 ** m - 1
    for p in range((1 << m) | 1, 1 << (m + 1), 2):
        x, e = 2, 1
        while x != 1 and e <= order:
            x = _pmod(x << 1, p)
            e += 1
        if x == 1 and e == order:
            return p
    raise ValueError(f"no primitive polynomial of degree {m}")  # pragma: no cover


class GF2m:
    """The field GF(2^m) by exp/log tables over ``primitive_polynomial(m)``.

    Elements are ints in [0, 2^m); alpha = 2 (the class x) is primitive.

    Examples
    --------
    >>> from edgecode.ecoc.bch import GF2m
    >>> F = GF2m(3)
    >>> F.mul(int(F.exp[5]), int(F.exp[4])) == int(F.exp[(5 + 4) % 7])
    True
    """

    def __init__(self, m):
        self.m = m
        self.order = 2 ** m - 1
        self.poly = primitive_polynomial(m)
        self.exp = np.zeros(2 * self.order, dtype=np.int64)
        self.log = np.full(2 ** m, -1, dtype=np.int64)
        x = 1
        for i in range(self.order):
            self.exp[i] = x
            self.log[x] = i
            x = _pmod(x << 1, self.poly)
        self.exp[self.order:] = self.exp[:self.order]

    def mul(self, a, b):
        """Product of two field elements."""
        if a == 0 or b == 0:
            return 0
        return int(self.exp[self.log[a] + self.log[b]])

    def minimal_polynomial(self, i):
        """Minimal polynomial over GF(2) of alpha^i, as a GF(2) polynomial int."""
        coset = cyclotomic_coset(i, self.order)
        poly = [1]                                 # coefficients in GF(2^m), low first
        for j in coset:
            root = int(self.exp[j % self.order])
            new = [0] * (len(poly) + 1)
            for d, a in enumerate(poly):           # (x + root) * poly
                new[d + 1] ^= a
                new[d] ^= self.mul(a, root)
            poly = new
        if any(a not in (0, 1) for a in poly):     # pragma: no cover - theory says never
            raise ArithmeticError("minimal polynomial has coefficients outside GF(2)")
        return sum(a << d for d, a in enumerate(poly))


def cyclotomic_coset(i, n):
    """Sorted cyclotomic coset {i 2^j mod n} of i modulo n.

    Examples
    --------
    >>> from edgecode.ecoc.bch import cyclotomic_coset
    >>> cyclotomic_coset(3, 15)
    [3, 6, 9, 12]
    """
    out, x = set(), i % n
    while x not in out:
        out.add(x)
        x = (2 * x) % n
    return sorted(out)


@lru_cache(maxsize=None)
def bch_generator(n, t):
    """Generator polynomial (int) of the binary BCH code of length n = 2^m - 1, t errors.

    Returns
    -------
    g : int
        GF(2) polynomial, bit i = coefficient of x^i; the code dimension is
        ``n - (g.bit_length() - 1)``.

    Raises
    ------
    ValueError
        n not of the form 2^m - 1 with 3 <= m <= 10, or t outside [1, (n-1)/2].

    Examples
    --------
    >>> from edgecode.ecoc.bch import bch_generator
    >>> bin(bch_generator(15, 2))        # the (15, 7) code: x^8 + x^7 + x^6 + x^4 + 1
    '0b111010001'
    """
    if n not in bch_lengths():
        raise ValueError(f"n_columns must be a BCH length 2^m - 1, one of {bch_lengths()}; got {n}")
    if not 1 <= t <= (n - 1) // 2:
        raise ValueError(f"t must be in [1, {(n - 1) // 2}] for length {n}; got {t}")
    F = GF2m(n.bit_length())
    g, done = 1, set()
    for i in range(1, 2 * t + 1):
        rep = cyclotomic_coset(i, n)[0]
        if rep not in done:
            done.add(rep)
            g = _pmul(g, F.minimal_polynomial(rep))
    return g


def bch_generator_matrix(n, t):
    """k x n generator matrix (uint8) of the BCH code: row i holds x^i g(x).

    Examples
    --------
    >>> from edgecode.ecoc.bch import bch_generator_matrix
    >>> bch_generator_matrix(7, 1)       # Hamming (7, 4), g = x^3 + x + 1
    array([[1, 1, 0, 1, 0, 0, 0],
           [0, 1, 1, 0, 1, 0, 0],
           [0, 0, 1, 1, 0, 1, 0],
           [0, 0, 0, 1, 1, 0, 1]], dtype=uint8)
    """
    g = bch_generator(n, t)
    r = g.bit_length() - 1
    k = n - r
    G = np.zeros((k, n), dtype=np.uint8)
    bits = np.array([(g >> d) & 1 for d in range(r + 1)], dtype=np.uint8)
    for i in range(k):
        G[i, i:i + r + 1] = bits
    return G
