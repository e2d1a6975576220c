"""Image protection: per-array parity, SEC-DED, BCH or triplication, decoded on read.

An upset of the stored image (a single-event upset in flash or SRAM, after
the boot-time CRC check) is what :class:`~firmware_sim.faults.ParameterUpset`
models. This module is the device's answer (issue 27 item 2): each protected
array carries a scheme, stored in the reserved container array
``"__protect__"`` (``docs/container_format.md``, "Image protection"), and
the loader (:func:`firmware_sim.load`) decodes it before the kind's rules
run:

==========  ====================================  =============================
scheme      check bits                            on read
==========  ====================================  =============================
``parity``  1 per word (even parity)              an odd number of upsets in a
                                                  word is *detected*: the word's
                                                  elements are erased
``secded``  Hamming + overall parity per word:    one upset per word corrected,
            5/6/7/8 bits per 8/16/32/64-bit word  two detected (erased); three
                                                  or more may be miscorrected
``bch``     r <= m t per block of up to 2^m - 1   up to t upsets per block
            bits (a binary BCH code over GF(2^m)  corrected (data or check
            correcting t errors; the last block   bits); more are detected
            shortened), plus 3 bytes (the span)   (erased) or, rarely,
                                                  miscorrected
``tmr``     two more copies of the array          bitwise majority of the three
==========  ====================================  =============================

A *detected* word is not a malformed image: its elements are set to 0 and
the kind's fallback runs (:meth:`~firmware_sim.contract.BaseDevice.erasure_owners`:
an ECOC learner becomes an erasure, left out of the Hamming distance; a
forest tree leaves the vote; a naive Bayes weight counts 0). A detected word
in an array the kind has no fallback for refuses the image
(``ContainerError``), as an ECC double error traps on a microcontroller.

Words: the array's bytes (C order, little-endian) cut into words of
``word_bytes`` in {1, 2, 4, 8}, the last one padded with zero bytes that are
not stored; data bit j of a word is bit ``j % 8`` of its byte ``j // 8``.
BCH blocks: the same bit stream (bit j of the array is bit ``j % 8`` of
byte ``j // 8``) cut into blocks of k = 2^m - 1 - r data bits, the last one
shorter (the code shortened); the parameters are ``(m, t)`` instead of a
word size (:mod:`firmware_sim._bch`). One BCH entry may cover a *span* of s
consecutive arrays, ``(m, t, s)``: their bytes concatenated in table order
form one stream, so a model pays one table entry and one code for all of
them (the entry's check bytes start with s, three copies, voted).

Imports numpy only.

Examples
--------
>>> import numpy as np
>>> from firmware_sim.artifact import read_container, write_container
>>> raw = write_container(None, "ssbc", {"v": np.arange(4, dtype=np.int32)})
>>> prot = protect_container(read_container(raw), {"v": ("secded", 8)})
>>> c = read_container(prot)
>>> a = np.array(c.arrays["v"]); a[2] ^= 1 << 9           # one upset
>>> arrays, detected, stats = decode_arrays({"v": a}, c.protect)
>>> arrays["v"].tolist(), stats["corrected_words"], detected
([0, 1, 2, 3], 1, {})
"""

import numpy as np

from ._bch import bch_decode, bch_encode_bits, bch_layout, bch_params_error
from .artifact import Container, read_container, write_container
from .errors import ContainerError, DeviceError

__all__ = ["SCHEMES", "SCHEME_CODES", "protect_container", "decode_arrays", "plan_of",
           "check_bits_per_word", "protection_bytes", "secded_encode", "secded_decode",
           "open_protected", "bch_check_bytes", "DECODER_CODE_BYTES"]

#: Scheme name -> code stored in ``"__protect__"``.
SCHEME_CODES = {"parity": 1, "secded": 2, "tmr": 3, "bch": 4}
_SCHEME_NAMES = {v: k for k, v in SCHEME_CODES.items()}
#: Code the C runtime's image-protection decoder (``ec_protect.c`` with the
#: kinds' erasure hooks) adds to a firmware, in bytes, per built-in profile:
#: ``(without BCH, with BCH)``; the code size of the protected firmware minus
#: the unprotected one, the larger of the models measured on that core
#: (``python benchmarks/bench_protect_device.py``, benchmarks/README.md,
#: "image protection on the device"; the ATmega328P takes the ATmega2560's
#: forest figures). What a profile estimate adds for a protected image.
DECODER_CODE_BYTES = {"cortex-m0": (3252, 7012), "cortex-m4": (3124, 6452),
                      "atmega328p": (6480, 14184), "atmega2560": (6480, 14184),
                      "rv32imac": (3024, 6696)}
#: Every scheme a plan may name ("none" = not protected: no entry).
SCHEMES = ("none", "parity", "secded", "tmr", "bch")
WORD_BYTES = (1, 2, 4, 8)
_ENTRY = 4


def _hamming_r(k):
    r = 1
    while (1 << r) < k + r + 1:
        r += 1
    return r


def _positions(k):
    """Hamming positions (1-based, not powers of two) of the k data bits."""
    r = _hamming_r(k)
    pos = [p for p in range(1, k + r + 1) if p & (p - 1)]
    return np.array(pos[:k], np.int64), r


_POS = {8 * wb: _positions(8 * wb) for wb in WORD_BYTES}


def check_bits_per_word(scheme, word_bytes):
    """Check bits one word costs: parity 1; SEC-DED r + 1 (5, 6, 7, 8 for words of
    1, 2, 4, 8 bytes: the (13,8), (22,16), (39,32) and (72,64) codes); TMR twice
    the word."""
    if scheme == "parity":
        return 1
    if scheme == "secded":
        return _POS[8 * word_bytes][1] + 1
    if scheme == "tmr":
        return 16 * word_bytes
    if scheme == "none":
        return 0
    if scheme == "bch":
        raise DeviceError("bch has check bits per block, not per word: use bch_check_bytes")
    raise DeviceError(f"unknown scheme {scheme!r}; expected one of {SCHEMES}")


def bch_check_bytes(m, t, nbytes):
    """Check bytes of BCH (m, t) on a stream of ``nbytes`` bytes: 3 (the span,
    three copies) + ceil(blocks r / 8), r the generator's degree (<= m t),
    blocks = ceil(8 nbytes / k)."""
    r, _, nb = bch_layout(m, t, 8 * nbytes)
    return 3 + -(-nb * r // 8)


def _n_words(nbytes, word_bytes):
    return -(-nbytes // word_bytes)


def _check_nbytes(scheme, nbytes, word_bytes):
    if scheme == "tmr":
        return 2 * nbytes
    if scheme == "bch":
        return bch_check_bytes(word_bytes[0], word_bytes[1], nbytes)
    return -(-_n_words(nbytes, word_bytes) * check_bits_per_word(scheme, word_bytes) // 8)


def protection_bytes(plan, arrays):
    """Bytes of ``"__protect__"`` for ``plan`` ({name: (scheme, word_bytes or (m, t))}) over
    ``arrays`` ({name: ndarray}): 3 + 12 per entry (the triplicated table) plus
    the check bytes (0 when no array is protected: no ``"__protect__"``)."""
    entries = [(n, s, w) for n, (s, w) in plan.items() if s != "none"]
    if not entries:
        return 0
    names = list(arrays)

    def nbytes(n, s, w):
        if s == "bch" and len(w) == 3:
            i = names.index(n)
            return sum(np.asarray(arrays[x]).nbytes for x in names[i:i + w[2]])
        return np.asarray(arrays[n]).nbytes
    return 3 + 3 * _ENTRY * len(entries) + sum(
        _check_nbytes(s, nbytes(n, s, w), w) for n, s, w in entries)


def _words(raw, word_bytes):
    """uint64 words (zero-padded) of bytes ``raw``."""
    n = _n_words(raw.size, word_bytes)
    buf = np.zeros(n * 8, np.uint8).reshape(n, 8)
    pad = np.zeros(n * word_bytes, np.uint8)
    pad[:raw.size] = raw
    buf[:, :word_bytes] = pad.reshape(n, word_bytes)
    return buf.reshape(-1).view("<u8").astype(np.uint64)


def _unwords(words, word_bytes, nbytes):
    b = np.ascontiguousarray(words.astype("<u8")).view(np.uint8).reshape(-1, 8)[:, :word_bytes]
    return b.reshape(-1)[:nbytes].copy()


def _parity64(w):
    w = w.copy()
    for s in (32, 16, 8, 4, 2, 1):
        w ^= w >> np.uint64(s)
    return (w & np.uint64(1)).astype(np.uint8)


def _syndrome(words, k):
    pos, r = _POS[k]
    h = np.zeros(words.shape, np.int64)
    for j in range(k):
        bit = ((words >> np.uint64(j)) & np.uint64(1)).astype(np.int64)
        h ^= bit * pos[j]
    return h


def secded_encode(words, word_bytes):
    """Check bits (int64, r Hamming bits then the overall parity at bit r) of
    uint64 ``words`` of ``word_bytes`` bytes."""
    k = 8 * word_bytes
    r = _POS[k][1]
    h = _syndrome(words, k)
    hp = _parity64(h.astype(np.uint64)).astype(np.int64)
    overall = _parity64(words).astype(np.int64) ^ hp
    return h | (overall << r)


def secded_decode(words, checks, word_bytes):
    """Correct ``words`` with their stored ``checks``; returns (words, corrected
    bool, detected bool) per word. One upset anywhere in the data, the Hamming
    bits or the parity bit is corrected; two are detected."""
    k = 8 * word_bytes
    pos, r = _POS[k]
    checks = checks.astype(np.int64)
    stored_h = checks & ((1 << r) - 1)
    stored_p = (checks >> r) & 1
    s = _syndrome(words, k) ^ stored_h
    overall = (_parity64(words).astype(np.int64)
               ^ _parity64(stored_h.astype(np.uint64)).astype(np.int64) ^ stored_p)
    lookup = np.full(k + r + 2, -1, np.int64)
    lookup[pos] = np.arange(k)
    inrange = (s >= 0) & (s < lookup.size)
    data_bit = np.where(inrange, lookup[np.clip(s, 0, lookup.size - 1)], -1)
    is_check = (s > 0) & ((s & (s - 1)) == 0) & inrange
    single = overall == 1
    fix = single & (data_bit >= 0)
    out = words.copy()
    out[fix] ^= np.uint64(1) << data_bit[fix].astype(np.uint64)
    ok_single = single & ((s == 0) | is_check | (data_bit >= 0))
    detected = ((~single) & (s != 0)) | (single & ~ok_single)
    corrected = ok_single & (s != 0) | (single & (s == 0))
    return out, corrected & ~detected, detected


def _pack_bits(values, width):
    """Pack ``width`` low bits of each value into an LSB-first bit stream."""
    n = values.size
    bits = ((values[:, None] >> np.arange(width)) & 1).astype(np.uint8).reshape(-1)
    out = np.zeros(-(-n * width // 8) * 8, np.uint8)
    out[:bits.size] = bits
    return np.packbits(out, bitorder="little")


def _unpack_bits(raw, n, width):
    bits = np.unpackbits(raw, bitorder="little")[:n * width].reshape(n, width).astype(np.int64)
    return (bits << np.arange(width)).sum(axis=1)


def plan_of(protect, names=None, arrays=None):
    """The plan stored in ``"__protect__"``: {array: (scheme, word_bytes)}, ``(m, t)``
    in place of word_bytes for ``bch`` (``(m, t, s)`` for a span of s > 1
    arrays), after the vote of the three table copies. ``names`` (the
    container's array names, in table order) map the stored indices to
    names; without it the keys are indices. A table with a BCH entry needs
    ``arrays`` (the container's arrays: the spans are found after the check
    bytes of the entries before them); ``names`` then defaults to its keys."""
    p = np.asarray(protect, np.uint8)
    if arrays is not None and names is None:
        names = list(arrays)
    entries = _parse_table(p, names)
    if any(s == "bch" for _, s, _, _ in entries):
        if arrays is None:
            raise DeviceError("plan_of: the table has a BCH entry; pass the arrays "
                              "(its span follows the check bytes before it)")
        layout = _layout(p, entries, names, arrays)
        return {names[idx]: ("bch", w[:2] if w[2] == 1 else w) if s == "bch" else (s, w)
                for idx, s, w, _, _ in layout}
    return {((names[i] if names is not None else i)): (s, w) for i, s, w, _ in entries}


def _vote(a, b, c):
    return (a & b) | (a & c) | (b & c)


def _parse_table(p, names):
    if p.size < 3:
        raise ContainerError(f"array '__protect__' has {p.size} bytes; its table needs at "
                             "least 3")
    n = int(_vote(p[0], p[1], p[2]))
    if n == 0:
        raise ContainerError("array '__protect__': the table holds no entry (0 protected "
                             "arrays; an image without protection has no '__protect__')")
    need = 3 + 3 * _ENTRY * n
    if p.size < need:
        raise ContainerError(f"array '__protect__' has {p.size} bytes; its table of {n} "
                             f"entries needs {need}")
    e = _ENTRY * n
    table = _vote(p[3:3 + e], p[3 + e:3 + 2 * e], p[3 + 2 * e:3 + 3 * e]).reshape(n, _ENTRY)
    out, last = [], -1
    for row, (idx, code, lw, res) in enumerate(table.tolist()):
        where = f"array '__protect__' entry {row}"
        if names is not None and idx >= len(names):
            raise ContainerError(f"{where}: array index {idx} must index the image's "
                                 f"{len(names)} arrays")
        if idx <= last:
            raise ContainerError(f"{where}: array indices must be strictly increasing "
                                 f"(each array protected once); got {idx} after {last}")
        last = idx
        if code not in _SCHEME_NAMES:
            raise ContainerError(f"{where}: unknown scheme code {code} (known: "
                                 f"{dict(sorted(_SCHEME_NAMES.items()))})")
        if _SCHEME_NAMES[code] == "bch":
            err = bch_params_error(lw, res)
            if err:
                field = "field size m (byte 2)" if err.startswith("m") else \
                    "correctable errors t (byte 3)"
                raise ContainerError(f"{where}: BCH {field}: {err}")
            out.append((idx, "bch", (lw, res), need))
            continue
        if lw > 3:
            raise ContainerError(f"{where}: word size code {lw} must be in [0, 3] "
                                 "(words of 1, 2, 4, 8 bytes)")
        if res:
            raise ContainerError(f"{where}: reserved byte must be 0; got {res}")
        out.append((idx, _SCHEME_NAMES[code], 1 << lw, need))
    return out


def protect_container(container, plan):
    """Write ``container`` again with the arrays of ``plan`` protected.

    Parameters
    ----------
    container : Container or bytes
        An image without protection (its arrays are the data protected).
    plan : dict of str -> (str, int) or (str, (int, int))
        Array name -> (scheme, word_bytes): scheme in ``"none"``, ``"parity"``,
        ``"secded"``, ``"tmr"``; word_bytes in 1, 2, 4, 8 (ignored by
        ``tmr``, stored as given); or ``("bch", (m, t))``: blocks of up to
        2^m - 1 bits (m in 3..13) correcting t errors (1 <= t <= min(32,
        2^(m-1) - 1)).

    Returns
    -------
    bytes
        The protected container (``"__protect__"`` after the model's arrays).

    Raises
    ------
    ContainerError
        The image is already protected, an unknown array, scheme, word size or
        BCH parameters out of range.
    """
    if not isinstance(container, Container):
        container = read_container(container)
    if container.protect is not None:
        raise ContainerError("the image is already protected (it has '__protect__'); "
                             "protect the unprotected image")
    names = list(container.arrays)
    entries = []
    for name, spec in plan.items():
        if name not in container.arrays:
            raise ContainerError(f"plan names array {name!r}, not in the {container.kind} "
                                 f"image (arrays: {names})")
        try:
            scheme, wb = spec
        except (TypeError, ValueError):
            raise ContainerError(f"plan[{name!r}] must be (scheme, word_bytes); got "
                                 f"{spec!r}") from None
        if scheme not in SCHEMES:
            raise ContainerError(f"plan[{name!r}]: unknown scheme {scheme!r}; expected one "
                                 f"of {SCHEMES}")
        if scheme == "bch":
            try:
                vals = [int(v) for v in wb]
            except (TypeError, ValueError):
                vals = []
            if len(vals) not in (2, 3):
                raise ContainerError(f"plan[{name!r}]: bch takes (m, t) or (m, t, span); got "
                                     f"{wb!r}")
            m, t, span = vals + [1] * (3 - len(vals))
            err = bch_params_error(m, t)
            if err:
                raise ContainerError(f"plan[{name!r}]: bch {err}")
            i = names.index(name)
            if not 1 <= span <= min(255, len(names) - i):
                raise ContainerError(f"plan[{name!r}]: bch span {span} must be in [1, "
                                     f"{min(255, len(names) - i)}] (the arrays from {name!r} "
                                     "to the last)")
            entries.append((i, name, scheme, (m, t, span)))
            continue
        if wb not in WORD_BYTES:
            raise ContainerError(f"plan[{name!r}]: word_bytes must be one of {WORD_BYTES}; "
                                 f"got {wb!r}")
        if scheme != "none":
            entries.append((names.index(name), name, scheme, int(wb)))
    if len(entries) > 255:
        raise ContainerError(f"{len(entries)} protected arrays; the table holds at most 255")
    if not entries:
        return container.tobytes()
    entries.sort()
    for (i, name, scheme, wb), nxt in zip(entries, entries[1:] + [(len(names),)]):
        if scheme == "bch" and i + wb[2] > nxt[0]:
            raise ContainerError(f"plan[{name!r}]: its bch span of {wb[2]} arrays covers "
                                 f"{names[nxt[0]]!r}, which the plan protects too")
    table = np.zeros((len(entries), _ENTRY), np.uint8)
    checks = []
    for row, (idx, name, scheme, wb) in enumerate(entries):
        if idx > 255:
            raise ContainerError(f"array {name!r} is the image's array #{idx}; the table "
                                 "indexes the first 256 arrays")
        raw = np.frombuffer(container.arrays[name].tobytes(), np.uint8)
        if scheme == "bch":
            m, t, span = wb
            table[row] = (idx, SCHEME_CODES[scheme], m, t)
            raw = np.frombuffer(b"".join(container.arrays[n].tobytes()
                                         for n in names[idx:idx + span]), np.uint8)
            chk = bch_encode_bits(np.unpackbits(raw, bitorder="little"), m, t)
            checks.append(np.full(3, span, np.uint8))
            checks.append(np.packbits(chk.reshape(-1), bitorder="little"))
            continue
        table[row] = (idx, SCHEME_CODES[scheme], wb.bit_length() - 1, 0)
        if scheme == "tmr":
            checks.append(np.concatenate([raw, raw]))
            continue
        words = _words(raw, wb)
        if scheme == "parity":
            checks.append(_pack_bits(_parity64(words).astype(np.int64), 1))
        else:
            checks.append(_pack_bits(secded_encode(words, wb), check_bits_per_word("secded", wb)))
    n = np.full(3, len(entries), np.uint8)
    t = table.reshape(-1)
    protect = np.concatenate([n, t, t, t] + checks).astype(np.uint8)
    return write_container(None, container.kind, dict(container.arrays),
                           container.meta or None, protect=protect)


def decode_arrays(arrays, protect):
    """What the device reads: the arrays corrected by their schemes.

    Parameters
    ----------
    arrays : dict of str -> ndarray
        The stored (possibly upset) arrays, in table order.
    protect : ndarray of uint8
        The stored ``"__protect__"``.

    Returns
    -------
    (dict, dict, dict)
        The corrected arrays (same order); per array with a detected,
        uncorrected word (or BCH block), the bool mask of its elements that
        such a word covers; counts ``corrected_words``, ``detected_words``
        (BCH: blocks),
        ``voted_bits`` (TMR bits where the copies disagreed).

    Raises
    ------
    ContainerError
        The table is malformed after the vote of its three copies (unknown
        scheme, index out of range, length not the one the entries need).
    """
    names = list(arrays)
    p = np.asarray(protect, np.uint8)
    entries = _parse_table(p, names)
    out = dict(arrays)
    detected = {}
    stats = {"corrected_words": 0, "detected_words": 0, "voted_bits": 0}
    layout = _layout(p, entries, names, arrays)
    for idx, scheme, wb, start, size in layout:
        name = names[idx]
        a = np.asarray(arrays[name])
        raw = np.frombuffer(a.tobytes(), np.uint8)
        chk = p[start:start + size]
        if scheme == "bch":
            _decode_bch_span(arrays, names, idx, wb, chk, out, detected, stats)
            continue
        if scheme == "tmr":
            c1, c2 = chk[:raw.size], chk[raw.size:]
            fixed = _vote(raw, c1, c2)
            stats["voted_bits"] += int(np.unpackbits((raw ^ c1) | (raw ^ c2)).sum())
            bad_bytes = None
        else:
            words = _words(raw, wb)
            if scheme == "parity":
                stored = _unpack_bits(chk, words.size, 1)
                bad = _parity64(words).astype(np.int64) != stored
                fixed_words = words
            else:
                width = check_bits_per_word("secded", wb)
                stored = _unpack_bits(chk, words.size, width)
                fixed_words, corr, bad = secded_decode(words, stored, wb)
                stats["corrected_words"] += int(corr.sum())
            stats["detected_words"] += int(bad.sum())
            fixed = _unwords(fixed_words, wb, raw.size)
            bad_bytes = np.repeat(bad, wb)[:raw.size] if bad.any() else None
        out[name] = np.frombuffer(fixed.tobytes(), a.dtype).reshape(a.shape)
        if bad_bytes is not None:
            detected[name] = bad_bytes.reshape(-1, a.dtype.itemsize).any(axis=1) \
                if a.size else np.zeros(0, bool)
    return out, detected, stats


def _layout(p, entries, names, arrays):
    """(index, scheme, params, start, size) of each entry's check bytes; a BCH
    entry's params are (m, t, span), its span read (voted) from its first three
    check bytes and checked before its size is computed."""
    pos = entries[0][3] if entries else 3
    layout = []
    for row, (idx, scheme, wb, _) in enumerate(entries):
        if scheme == "bch":
            where = f"array '__protect__' entry {row}"
            if pos + 3 > p.size:
                raise ContainerError(f"array '__protect__' has {p.size} bytes; {where} (BCH) "
                                     f"needs its span at bytes {pos}..{pos + 2}")
            span = int(_vote(p[pos], p[pos + 1], p[pos + 2]))
            nxt = entries[row + 1][0] if row + 1 < len(entries) else len(names)
            if not 1 <= span <= nxt - idx:
                raise ContainerError(
                    f"{where}: BCH span s = {span} (arrays covered, check bytes 0..2) must "
                    f"be in [1, {nxt - idx}]: from array {idx} up to "
                    + (f"the next entry's array {nxt}" if nxt < len(names) else
                       f"the last of the image's {len(names)} arrays"))
            wb = (wb[0], wb[1], span)
            nbytes = sum(np.asarray(arrays[n]).nbytes for n in names[idx:idx + span])
        else:
            nbytes = np.asarray(arrays[names[idx]]).nbytes
        size = _check_nbytes(scheme, nbytes, wb)
        layout.append((idx, scheme, wb, pos, size))
        pos += size
    if pos != p.size:
        raise ContainerError(f"array '__protect__' has {p.size} bytes; its table and the "
                             f"check bits of its {len(entries)} entries need {pos}")
    return layout


def _decode_bch_span(arrays, names, idx, wb, chk, out, detected, stats):
    """Decode one BCH entry's stream (its span of arrays) into ``out``; detected
    blocks mark the elements they cover in ``detected``."""
    m, t, span = wb
    covered = [np.asarray(arrays[n]) for n in names[idx:idx + span]]
    raw = np.frombuffer(b"".join(a.tobytes() for a in covered), np.uint8)
    r, k, nb = bch_layout(m, t, 8 * raw.size)
    stored = np.unpackbits(chk[3:], bitorder="little")[:nb * r].reshape(nb, r)
    bits, corr, bad = bch_decode(np.unpackbits(raw, bitorder="little"), stored, m, t)
    stats["corrected_words"] += int(corr.sum())
    stats["detected_words"] += int(bad.sum())
    fixed = np.packbits(bits, bitorder="little")
    bad_bytes = np.zeros(raw.size, bool)
    for b in np.flatnonzero(bad).tolist():
        bad_bytes[b * k // 8:min(raw.size, -(-(b + 1) * k // 8))] = True
    start = 0
    for name, a in zip(names[idx:idx + span], covered):
        seg = slice(start, start + a.nbytes)
        start += a.nbytes
        out[name] = np.frombuffer(fixed[seg].tobytes(), a.dtype).reshape(a.shape)
        if bad_bytes[seg].any():
            detected[name] = bad_bytes[seg].reshape(-1, a.dtype.itemsize).any(axis=1)


def open_protected(container, cls):
    """The device of a protected image: decode, erase what the kind can, build.

    Called by :func:`firmware_sim.load` when ``container.protect`` is set.
    Detected elements are set to 0 and the kind's fallback erases their
    owners (:meth:`~firmware_sim.contract.BaseDevice.erasure_owners`,
    :meth:`~firmware_sim.contract.BaseDevice.erase`); a detected element of
    an array without a fallback refuses the image. The device's
    ``container`` is the stored image (what a campaign upsets again) and
    ``protection`` holds the decoding counts and the erased units.
    """
    arrays, detected, stats = decode_arrays(dict(container.arrays), container.protect)

    def view(arrs):
        return Container(container.kind, container.version, arrs, container.meta,
                         container.nbytes, container.tobytes(), container.class_names,
                         container.protect)

    units = set()
    if detected:
        owners = cls.erasure_owners(view(arrays))
        for name, mask in detected.items():
            if name not in owners:
                first = int(np.flatnonzero(mask)[0])
                raise ContainerError(
                    f"{container.kind} image: array {name!r} element {first}: an upset was "
                    "detected and not corrected, and the kind has no fallback for this array "
                    f"(fallbacks: {sorted(owners) or 'none'})")
            a = np.array(arrays[name])
            a.reshape(-1)[mask] = 0
            a.flags.writeable = False
            arrays[name] = a
            own = np.asarray(owners[name]).reshape(-1)[mask]
            units.update(int(u) for u in own if u >= 0)
    units = sorted(units)
    if units:
        arrays = cls.repair(arrays, np.asarray(units, np.int64))
    dev = cls(view(arrays))
    if units:
        dev.erase(np.asarray(units, np.int64))
    dev.container = container
    dev.protection = dict(stats, erased_units=units,
                          detected_arrays=sorted(detected))
    return dev
