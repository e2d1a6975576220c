"""Slow, obvious references for edgecode.ecoc (loops, recursion, brute force)."""

import itertools

import numpy as np


def distance(a, b):
    """Hamming distance with the -1 rule: both used and unequal 1, either -1 1/2."""
    d = 0.0
    for x, y in zip(a, b):
        if x == -1 or y == -1:
            d += 0.5
        elif x != y:
            d += 1.0
    return d


def pairwise(M, axis=0):
    M = np.asarray(M)
    V = M if axis == 0 else M.T
    r = V.shape[0]
    D = np.zeros((r, r))
    for i in range(r):
        for j in range(r):
            if i != j:
                D[i, j] = distance(V[i], V[j])
    return D


def min_distance(M, axis=0):
    D = pairwise(M, axis)
    r = D.shape[0]
    return min(D[i, j] for i in range(r) for j in range(i + 1, r))


def equivalent(a, b):
    """Columns equal up to a bijective relabelling of used symbols (-1 fixed)."""
    fwd, bwd = {}, {}
    for x, y in zip(a, b):
        if (x == -1) != (y == -1):
            return False
        if x == -1:
            continue
        if fwd.setdefault(x, y) != y or bwd.setdefault(y, x) != x:
            return False
    return True


def properties(M):
    """(equal row pairs, constant columns, equivalent column pairs) by brute force."""
    M = np.asarray(M)
    c, n = M.shape
    eq_rows = [(i, j) for i in range(c) for j in range(i + 1, c) if list(M[i]) == list(M[j])]
    const = [k for k in range(n) if len({int(v) for v in M[:, k] if v != -1}) < 2]
    equiv = [(i, j) for i in range(n) for j in range(i + 1, n) if equivalent(M[:, i], M[:, j])]
    return eq_rows, const, equiv


def sylvester_recursive(N, k):
    """M_k(N) materialised by the seed's block recursion:
    M_k = [ (M_1[a, b] + M_{k-1}) mod N ]_{a, b}, base from its formula."""
    if N == 2:
        base = [[(i * j) % 2 for j in range(2)] for i in range(2)]
    else:
        inv2 = pow(2, -1, N)
        base = [[(inv2 * (i + j - (i - j) ** 2)) % N for j in range(N)] for i in range(N)]
    M = np.array([[0]])
    for _ in range(k):
        M = np.block([[(base[a][b] + M) % N for b in range(N)] for a in range(N)])
    return M


def gf_mul_bruteforce(a, b, poly, m):
    """Product in GF(2)[x]/poly by schoolbook shifts and reduction."""
    r = 0
    for i in range(m):
        if (b >> i) & 1:
            r ^= a << i
    for d in range(2 * m - 2, m - 1, -1):
        if (r >> d) & 1:
            r ^= poly << (d - m)
    return r


def is_irreducible(poly):
    """No factor of degree 1..deg/2 (trial division over GF(2))."""
    deg = poly.bit_length() - 1
    for f in range(2, 1 << (deg // 2 + 1)):
        r = poly
        df = f.bit_length() - 1
        while r.bit_length() - 1 >= df:
            r ^= f << (r.bit_length() - 1 - df)
        if r == 0:
            return False
    return True


def code_min_distance(G):
    """Minimum weight of the non-zero codewords spanned by G's rows (all 2^k)."""
    G = np.asarray(G, dtype=np.int64)
    k = G.shape[0]
    best = G.shape[1]
    for msg in itertools.product((0, 1), repeat=k):
        if any(msg):
            w = int((np.array(msg) @ G % 2).sum())
            best = min(best, w)
    return best


def exhaustive_code(c):
    """All binary columns with first entry 1, except all ones, as a set of tuples."""
    cols = set()
    for bits in itertools.product((0, 1), repeat=c - 1):
        col = (1,) + bits
        if any(b == 0 for b in bits):
            cols.add(col)
    return cols


def energy(M):
    M = np.asarray(M)
    c = M.shape[0]
    e = 0.0
    for i in range(c):
        for j in range(i + 1, c):
            d = int((M[i] != M[j]).sum())
            e += 4.0 if d == 0 else 1.0 / d ** 2
    return e


def decoding_probability_bruteforce(code, eps, word, target, N, ties="first"):
    """P(decode(word + e) == target) summed over all N^L error patterns e.

    Each error symbol is 0 with probability 1 - eps, else one of 1..N-1 with
    eps / (N - 1); received symbol (word + e) mod N; nearest row by doubled
    distance (plain numpy argmin: lowest index on ties), or a 1/|argmin|
    share of a tie (ties="split").
    """
    code = np.asarray(code, np.int64)
    word = np.asarray(word, np.int64)
    L = code.shape[1]
    e = np.array(list(itertools.product(range(N), repeat=L)), np.int64).reshape(-1, L)
    prob = np.where(e == 0, 1.0 - eps, eps / (N - 1)).prod(axis=1)
    v = (word[None, :] + e) % N
    used = code >= 0
    dist = 2 * ((v[:, None, :] != code[None]) & used[None]).sum(axis=2) + (~used).sum(axis=1)
    if ties == "first":
        hit = (dist.argmin(axis=1) == target).astype(float)
    else:
        best = dist.min(axis=1, keepdims=True)
        hit = (dist[:, target] == best[:, 0]) / (dist == best).sum(axis=1)
    return float((prob * hit).sum())


def codeword_probability_bruteforce(code, eps, i, N, ties="first"):
    """P(correct | class i): row i's codeword, its -1 entries uniform random symbols."""
    code = np.asarray(code, np.int64)
    free = np.flatnonzero(code[i] < 0)
    total = 0.0
    for fill in itertools.product(range(N), repeat=free.size):
        word = code[i].copy()
        word[free] = fill
        total += decoding_probability_bruteforce(code, eps, word, i, N, ties)
    return total / N ** free.size
