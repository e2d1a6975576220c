"""Slow, obvious references for firmware_sim (plain Python loops, no numba).

Each function here restates one piece of the device contract the simple way:
the container layout read with ``struct`` straight from
``docs/container_format.md``, repetition-code transmission and majority vote,
float log-odds, closed-form majority failure, exact same-label probability
by enumeration, and a one-uniform-per-bit channel.
"""

import itertools
import math
import struct
import zlib

import numpy as np

# ---------------------------------------------------------------- container
HEADER = struct.Struct("<8sHHIIIHHI")      # 32 bytes
ENTRY = struct.Struct("<32sBBH4IIII")      # 64 bytes
DTYPE_CODES = {1: "<u1", 2: "<i1", 3: "<u2", 4: "<i2", 5: "<u4", 6: "<i4",
               7: "<u8", 8: "<i8", 9: "<f4", 10: "<f8"}


def spec_crc(raw):
    """CRC-32 (zlib) of bytes 0..19 followed by bytes 24..end (crc field skipped)."""
    return zlib.crc32(bytes(raw[:20]) + bytes(raw[24:])) & 0xFFFFFFFF


def parse_header(raw):
    names = ("magic", "version", "kind", "n_arrays", "total_size", "crc32",
             "header_size", "entry_size", "reserved")
    return dict(zip(names, HEADER.unpack_from(raw, 0)))


def parse_entry(raw, i):
    name, dtype, ndim, res0, s0, s1, s2, s3, offset, nbytes, res1 = ENTRY.unpack_from(
        raw, HEADER.size + ENTRY.size * i)
    return {"name": name, "dtype": dtype, "ndim": ndim, "reserved0": res0,
            "shape": [s0, s1, s2, s3], "offset": offset, "nbytes": nbytes, "reserved1": res1}


def pack_header(raw, **fields):
    """Overwrite header fields in a bytearray (struct layout of the spec)."""
    h = parse_header(raw)
    h.update(fields)
    HEADER.pack_into(raw, 0, *h.values())


def pack_entry(raw, i, **fields):
    """Overwrite fields of table entry ``i`` in a bytearray."""
    e = parse_entry(raw, i)
    e.update(fields)
    ENTRY.pack_into(raw, HEADER.size + ENTRY.size * i, e["name"], e["dtype"], e["ndim"],
                    e["reserved0"], *e["shape"], e["offset"], e["nbytes"], e["reserved1"])


def fix_crc(raw):
    """Recompute the checksum after a deliberate corruption (bytearray in place)."""
    raw[20:24] = struct.pack("<I", spec_crc(raw))
    return raw


def naive_read(raw):
    """Arrays of a well-formed container, by the spec only (no validation)."""
    h = parse_header(raw)
    out = {}
    for i in range(h["n_arrays"]):
        e = parse_entry(raw, i)
        name = e["name"].rstrip(b"\0").decode("ascii")
        shape = tuple(e["shape"][:e["ndim"]])
        data = bytes(raw[e["offset"]:e["offset"] + e["nbytes"]])
        out[name] = np.frombuffer(data, dtype=DTYPE_CODES[e["dtype"]]).reshape(shape)
    return out


# ---------------------------------------------------------------- protected NB
def naive_transmit(X, reps):
    rows = []
    for x in X:
        row = []
        for xj, r in zip(x, reps):
            row.extend([int(xj)] * (2 * int(r) + 1))
        rows.append(row)
    return np.array(rows, dtype=np.uint8).reshape(len(rows), -1)


def naive_majority_decode(bits, reps):
    out = []
    for row in bits:
        pos, dec = 0, []
        for r in reps:
            m = 2 * int(r) + 1
            ones = sum(int(b) for b in row[pos:pos + m])
            dec.append(1 if ones >= int(r) + 1 else 0)
            pos += m
        out.append(dec)
    return np.array(out, dtype=np.uint8).reshape(len(out), len(reps))


def naive_log_odds(X, weights, bias, scale_shift):
    """Float log-odds (bias + sum_j x_j w_j) / 2**s, one Python float per row."""
    return [(float(bias) + sum(float(w) for xj, w in zip(x, weights) if xj))
            / 2.0 ** int(scale_shift) for x in X]


def naive_predict(X, weights, bias, scale_shift=0):
    return np.array([1 if s > 0 else 0 for s in naive_log_odds(X, weights, bias, scale_shift)])


def majority_failure(eps, r):
    """P(majority of 2r+1 copies wrong) = sum_{i=r+1}^{2r+1} C(2r+1,i) eps^i (1-eps)^(2r+1-i)."""
    m = 2 * r + 1
    return sum(math.comb(m, i) * eps**i * (1 - eps) ** (m - i) for i in range(r + 1, m + 1))


def exact_same_probability(x, weights, bias, reps, eps_feature):
    """P(device label == clean label) for one point, enumerating decoded outcomes."""
    n = len(x)
    clean = 1 if bias + sum(w for xj, w in zip(x, weights) if xj) > 0 else 0
    fail = [majority_failure(e, int(r)) for e, r in zip(eps_feature, reps)]
    total = 0.0
    for flips in itertools.product((0, 1), repeat=n):
        prob = 1.0
        for f, q in zip(flips, fail):
            prob *= q if f else 1 - q
        xd = [xj ^ f for xj, f in zip(x, flips)]
        label = 1 if bias + sum(w for xj, w in zip(xd, weights) if xj) > 0 else 0
        total += prob * (label == clean)
    return total


def naive_bsc(bits, eps, rng):
    """One uniform per bit: flip where u < eps."""
    bits = np.asarray(bits, dtype=np.uint8)
    return bits ^ (rng.random(bits.shape) < eps).astype(np.uint8)


def binomial_ok(count, n, p, z=5.0):
    """|count - n p| within z standard deviations (plus 1 for discreteness)."""
    sd = math.sqrt(n * p * (1 - p))
    return abs(count - n * p) <= z * sd + 1
