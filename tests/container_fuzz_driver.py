"""Fuzz driver of ``tests/test_container_fuzz.py`` (not collected by pytest).

Run as ``python container_fuzz_driver.py IMAGE [IMAGE ...]`` in a subprocess,
so that a hang (the caller's timeout) or a crash (a negative return code)
fails the test with a message instead of killing pytest. Imports numpy and
firmware_sim only.

For every image it builds mutants whose CRC-32 is recomputed, so that they
pass the checksum and reach the consistency rules:

* ``flip``: every bit of the arrays' data (or a deterministic sample of
  ``--max-flips`` of them), plus a sample of a quarter as many of the other
  bits after the magic (header, table, padding, metadata; not the checksum
  field);
* ``set``: one element of an array set to a special value (-1, 0, 1, its own
  index and neighbours, the lengths of the arrays, the dtype's extremes,
  another element's value -- a shared tree node --, NaN and infinities for
  floats), written into the raw bytes;
* ``meta``: a metadata key set to a value of the wrong type;
* ``drop`` / ``shorten`` / ``extend`` / ``cast``: an array removed, one entry
  shorter or longer, or another dtype (the container is rewritten).

Every registered kind is fuzzed (``firmware_sim.device_kinds()``: a mutant is
loaded by the image's own kind's device class). Each mutant must either be
refused with ``ContainerError`` when loaded, or load and run: the device
contract on a few frames (``infer`` on random frames with the extreme values,
``stage`` then ``finish``, ``finish`` of random intermediate results,
``decision_rows``, the wire round trip) must finish with outputs in range
(labels in [0, n_classes), intermediate results in [0, stage_symbols)),
so must the kind's own entry points where it has more (``EXTRAS``:
``predict``, ``decode``, ...), and ``resources()`` must return. Anything
else is a failure. One line per mutant goes to stderr *before* it runs (the last line
names the culprit of a crash or hang); the summary is one JSON line on stdout:
``{"images": [{"image", "kind", "mutants", "refused", "ran", "failures"}]}``.
"""

import argparse
import json
import sys
import traceback
import zlib

import numpy as np

from firmware_sim.artifact import (
    DTYPES,
    HEADER_SIZE,
    ContainerError,
    read_container,
    write_container,
)
from firmware_sim.contract import device_kinds
from firmware_sim.protection import open_protected


def loader(kind):
    """The device class of ``kind`` opening raw bytes (a mutant of another kind is
    refused by its ``check_container``)."""
    cls = device_kinds()[kind]

    def open_image(raw):
        c = read_container(raw)
        if c.protect is not None:          # a protected image: decoded as load() does
            return open_protected(c, cls)
        return cls(c)
    return open_image

_ENTRY = np.dtype([("name", "V32"), ("dtype", "u1"), ("ndim", "u1"), ("reserved0", "<u2"),
                   ("shape", "<u4", (4,)), ("offset", "<u4"), ("nbytes", "<u4"),
                   ("reserved1", "<u4")])


def restamp(buf):
    """The CRC-32 of ``buf`` (bytes 0..19 and 24..end) written into bytes 20..23."""
    buf = bytearray(buf)
    crc = zlib.crc32(bytes(buf[24:]), zlib.crc32(bytes(buf[:20]))) & 0xFFFFFFFF
    buf[20:24] = crc.to_bytes(4, "little")
    return bytes(buf)


def table(raw):
    """(name, dtype, shape, offset) of every entry of a (valid) container."""
    n = int.from_bytes(raw[12:16], "little")
    out = []
    for e in np.frombuffer(raw, _ENTRY, count=n, offset=HEADER_SIZE):
        name = bytes(e["name"]).split(b"\0", 1)[0].decode("ascii")
        shape = tuple(int(s) for s in e["shape"][:int(e["ndim"])])
        out.append((name, DTYPES[int(e["dtype"])], shape, int(e["offset"])))
    return out


# ------------------------------------------------------------------ mutants
def flip_mutants(raw, max_flips, rng):
    """Every bit of the arrays' data (all of it, or ``max_flips`` of it), then a
    sample of ``max_flips // 4`` of the other bits after the magic (header,
    table, padding, metadata), the checksum field excepted."""
    in_arrays = np.zeros(8 * len(raw), bool)
    for name, dt, shape, offset in table(raw):
        if not name.startswith("__"):
            size = dt.itemsize * int(np.prod(shape))
            in_arrays[8 * offset:8 * (offset + size)] = True
    rest = np.ones(8 * len(raw), bool)
    rest[:8 * 8] = False
    rest[8 * 20:8 * 24] = False
    rest &= ~in_arrays
    picked = []
    for pool, limit in ((np.flatnonzero(in_arrays), max_flips),
                        (np.flatnonzero(rest), max_flips // 4)):
        if pool.size > limit:
            pool = np.sort(rng.choice(pool, limit, replace=False))
        picked.extend(pool.tolist())
    for b in picked:
        buf = bytearray(raw)
        buf[b // 8] ^= 1 << (b % 8)
        yield f"flip byte {b // 8} bit {b % 8}", restamp(buf)


def _special_values(arr, i, lengths, cross=()):
    dt = arr.dtype
    flat = arr.reshape(-1)
    if dt.kind == "f":
        vals = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 1e308, -1e308, 5e-324]
        vals += [float(flat[0]), float(flat[-1])]
        return vals
    info = np.iinfo(dt)
    cand = {-2, -1, 0, 1, 2, i - 1, i, i + 1, info.max, info.min, info.max // 2 + 1,
            info.max // 2, -(info.max // 2)}
    for n in lengths:
        cand.update((n - 1, n, n + 1, 2 * n))
    cand.update(int(v) for v in (flat[0], flat[-1], flat[max(i - 1, 0)],
                                 flat[min(i + 1, flat.size - 1)], *cross))
    cand.discard(int(flat[i]))
    return sorted(v for v in cand if info.min <= v <= info.max)


def set_mutants(raw, per_array):
    c = read_container(raw)
    lengths = sorted({s for _, _, shape, _ in table(raw) for s in shape if s})
    for name, dt, shape, offset in table(raw):
        if name.startswith("__"):
            continue
        arr = c.arrays[name]
        if arr.size == 0:
            continue
        idx = np.unique(np.linspace(0, arr.size - 1, min(arr.size, per_array)).astype(np.int64))
        # the same element of the other integer arrays of this shape (tree_right[i]
        # := tree_left[i] shares a node)
        twins = [b.reshape(-1) for other, b in c.arrays.items()
                 if other != name and b.shape == arr.shape and b.dtype.kind in "iu"]
        for i in idx.tolist():
            cross = [int(b[i]) for b in twins] if arr.dtype.kind in "iu" else []
            for v in _special_values(arr, i, lengths, cross):
                buf = bytearray(raw)
                pos = offset + i * dt.itemsize
                buf[pos:pos + dt.itemsize] = np.array([v], dt).tobytes()
                yield f"set {name}[{i}] = {v!r}", restamp(buf)


_WRONG = [5, -1, 1.5, True, None, "x", "", [], [1, 2], ["a"], [[1]], {"a": 1}]


def protect_mutants(raw):
    """A protected image's ``__protect__``: special bytes at every table byte and
    a sample of check bytes, the table's entry count, a shortened and a longer
    array (issue 27)."""
    c = read_container(raw)
    if c.protect is None:
        return
    p = np.array(c.protect)
    meta = c.meta or None
    spots = sorted(set(range(min(p.size, 40))) | set(np.linspace(0, p.size - 1, 16)
                                                     .astype(int).tolist()))
    for i in spots:
        for v in (0, 1, 2, 3, 4, 0x7F, 0xFF):
            q = p.copy()
            q[i] = v
            yield f"set __protect__[{i}] = {v}", write_container(None, c.kind, dict(c.arrays),
                                                                  meta, protect=q)
    for i in (0, 1, 2):          # the entry count in two copies of three: outvoted
        q = p.copy()
        q[[i, (i + 1) % 3]] = 0xFF
        yield f"__protect__ count {i}", write_container(None, c.kind, dict(c.arrays), meta,
                                                        protect=q)
    yield "shorten __protect__", write_container(None, c.kind, dict(c.arrays), meta,
                                                 protect=p[:-1])
    yield "extend __protect__", write_container(None, c.kind, dict(c.arrays), meta,
                                                protect=np.concatenate([p, [0]]).astype(np.uint8))
    yield "empty __protect__", write_container(None, c.kind, dict(c.arrays), meta,
                                               protect=np.zeros(0, np.uint8))


def meta_mutants(raw):
    c = read_container(raw)
    keys = sorted(set(c.meta) | {"dataset", "classes"})
    for key in keys:
        for v in _WRONG:
            if c.meta.get(key, object()) == v:
                continue
            yield f"meta {key} = {v!r}", write_container(None, c.kind, dict(c.arrays),
                                                         {**c.meta, key: v})


def shape_mutants(raw):
    c = read_container(raw)
    meta = c.meta or None
    for name, a in c.arrays.items():
        arrays = dict(c.arrays)
        del arrays[name]
        yield f"drop {name}", write_container(None, c.kind, arrays, meta)
        if a.ndim:
            yield f"shorten {name}", write_container(None, c.kind,
                                                     {**c.arrays, name: a[:-1]}, meta)
            longer = np.concatenate([a, a[-1:] if a.shape[0] else np.zeros((1,) + a.shape[1:],
                                                                             a.dtype)])
            yield f"extend {name}", write_container(None, c.kind, {**c.arrays, name: longer},
                                                    meta)
        other = np.int64 if a.dtype != np.int64 else np.int32
        yield f"cast {name} {np.dtype(other).name}", write_container(
            None, c.kind, {**c.arrays, name: a.astype(other)}, meta)
    # an extra empty array whose other dimensions multiply past int64 (numpy
    # cannot even make the view; both loaders refuse the shape)
    for dims in ((2**32 - 1, 2**32 - 1), (2**16, 2**16)):
        extra = write_container(None, c.kind, {**c.arrays, "zz_empty": np.zeros((1, 1, 0),
                                                                              np.int8)}, meta)
        yield f"empty zz_empty shape {dims + (0,)}", with_shape(extra, "zz_empty", dims + (0,))


def with_shape(raw, name, shape):
    """``raw`` with the table shape of array ``name`` replaced (same ndim; nbytes
    and offset kept), the CRC re-stamped."""
    buf = bytearray(raw)
    n = int.from_bytes(raw[12:16], "little")
    for i, e in enumerate(np.frombuffer(raw, _ENTRY, count=n, offset=HEADER_SIZE)):
        if bytes(e["name"]).split(b"\0", 1)[0].decode("ascii") == name:
            at = HEADER_SIZE + _ENTRY.itemsize * i + 36
            for k, dim in enumerate(shape):
                buf[at + 4 * k:at + 4 * k + 4] = int(dim).to_bytes(4, "little")
            return restamp(buf)
    raise KeyError(name)


# ------------------------------------------------------------------- running
def _check_labels(labels, t, n_classes, what):
    labels = np.asarray(labels)
    if labels.shape != (t,):
        raise AssertionError(f"{what}: labels of shape {labels.shape}, expected ({t},)")
    if labels.size and (labels.min() < 0 or labels.max() >= n_classes):
        raise AssertionError(f"{what}: labels {labels.tolist()} outside [0, {n_classes})")


def _int16_frames(rng, t, d):
    q = rng.integers(-32768, 32768, (t, d)).astype(np.int16)
    q[0] = 32767
    q[1] = -32768
    q[2] = 0
    return q


def _frames(dev, rng, t):
    """Random frames the device reads, with the extreme values."""
    if dev.frame_dtype == np.uint8:
        bits = rng.integers(0, 2, (t, dev.frame_width)).astype(np.uint8)
        bits[0] = 1
        bits[1] = 0
        return bits
    return _int16_frames(rng, t, dev.frame_width)


def exercise_contract(dev, rng, t=6):
    """The device contract on a few frames (every kind)."""
    n_classes = getattr(dev, "n_classes", None)

    def labels_ok(labels, what):
        if labels is None:
            return
        if n_classes is not None:
            _check_labels(labels, t, n_classes, what)
        elif np.asarray(labels).shape != (t,) or (np.size(labels) and np.min(labels) < 0):
            raise AssertionError(f"{what}: labels {np.asarray(labels).tolist()}")

    frames = _frames(dev, rng, t)
    inf = dev.infer(frames)
    labels_ok(inf.labels, "infer")
    mid = np.asarray(dev.stage(frames))
    symbols = int(dev.stage_symbols)
    if mid.shape[0] != t or (mid.size and (mid.min() < 0 or mid.max() >= symbols)):
        raise AssertionError(f"stage: shape {mid.shape}, values outside [0, {symbols})")
    if inf.labels is not None:
        got = np.asarray(dev.finish(mid))
        if not np.array_equal(got, inf.labels):
            raise AssertionError(f"finish(stage) {got.tolist()} != infer "
                                 f"{np.asarray(inf.labels).tolist()}")
        noisy = rng.integers(0, symbols, mid.shape).astype(mid.dtype)
        labels_ok(dev.finish(noisy), "finish(noisy intermediate)")
    lab, rows = dev.decision_rows(frames)
    width = sum(int(w) for _, w in dev.decision_layout())
    if np.asarray(lab).shape != (t,) or np.asarray(rows).shape != (t, width):
        raise AssertionError(f"decision_rows: shapes {np.shape(lab)}, {np.shape(rows)}; "
                             f"layout width {width}")
    back = dev.frames_from_wire(dev.wire_bits(frames))
    if not np.array_equal(back, frames):
        raise AssertionError("frames_from_wire(wire_bits(frames)) != frames")


def _extra_protected_nb(dev, rng, t):
    X = rng.integers(0, 2, (t, dev.n_features)).astype(np.uint8)
    X[0] = 1
    X[1] = 0
    _check_labels(dev.predict(X), t, 2, "predict")
    bits = rng.integers(0, 2, (t, dev.total_bits)).astype(np.uint8)
    _check_labels(dev.predict_bits(bits), t, 2, "predict_bits")


def _extra_ecoc(dev, rng, t):
    q = _int16_frames(rng, t, dev.n_features)
    sym = dev.learner_outputs(q)
    if sym.min() < 0 or sym.max() >= dev.n_symbols:
        raise AssertionError(f"learner outputs {sym.tolist()} outside [0, {dev.n_symbols})")
    _check_labels(dev.predict(q), t, dev.n_classes, "predict")
    _check_labels(dev.decode(dev.corrupt(sym, 0.5, random_state=0)), t, dev.n_classes,
                  "decode(corrupt)")
    Xf = rng.normal(0, 1e3, (t, dev.n_features))
    _check_labels(dev.predict(dev.quantize(Xf)), t, dev.n_classes, "predict(quantize)")


def _extra_ssbc(dev, rng, t):
    X = rng.normal(0, 4, (t, dev.n_features))
    X[0] = 1e6
    X[1] = -1e6
    b = dev.bits(X)
    if b.shape != (t, dev.n_bits) or (b.size and b.max() > 1):
        raise AssertionError(f"bits of shape {b.shape} / values {np.unique(b).tolist()}")
    if dev.has_table:
        _check_labels(dev.predict(X), t, dev.n_classes, "predict")
        _check_labels(dev.predict_noisy(X, 0.3, 0.3, random_state=0), t, dev.n_classes,
                      "predict_noisy")


#: Entry points some kinds have beyond the contract (by kind).
EXTRAS = {"protected_nb": _extra_protected_nb, "ecoc": _extra_ecoc, "ssbc": _extra_ssbc}


def exercise(dev, kind, rng, t=6):
    """Run the loaded device on a few inputs; raise AssertionError on out-of-range output."""
    exercise_contract(dev, rng, t)
    if kind in EXTRAS:
        EXTRAS[kind](dev, rng, t)
    dev.resources()


def fuzz_image(path, max_flips, per_array, seed=0):
    raw = open(path, "rb").read()
    kind = read_container(raw).kind
    load = loader(kind)
    rng = np.random.default_rng(seed)
    exercise(load(raw), kind, rng)          # the clean image loads and runs
    stats = {"image": str(path), "kind": kind, "mutants": 0, "refused": 0, "ran": 0,
             "failures": []}
    sources = (flip_mutants(raw, max_flips, rng), set_mutants(raw, per_array),
               protect_mutants(raw), meta_mutants(raw), shape_mutants(raw))
    for source in sources:
        for desc, mutant in source:
            stats["mutants"] += 1
            print(f"{path}: {desc}", file=sys.stderr, flush=True)
            try:
                dev = load(mutant)
            except ContainerError:
                stats["refused"] += 1
                continue
            except Exception as exc:  # noqa: BLE001 -- what the fuzzer looks for
                stats["failures"].append(f"{desc}: load raised {type(exc).__name__}: {exc}")
                continue
            try:
                exercise(dev, kind, np.random.default_rng(stats["mutants"]))
                stats["ran"] += 1
            except Exception as exc:  # noqa: BLE001
                where = traceback.extract_tb(exc.__traceback__)[-1]
                stats["failures"].append(f"{desc}: loaded, then {type(exc).__name__}: {exc} "
                                         f"({where.filename}:{where.lineno})")
    return stats


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("images", nargs="+")
    p.add_argument("--max-flips", type=int, default=5000,
                   help="bit flips of array data per image (a deterministic sample beyond)")
    p.add_argument("--per-array", type=int, default=12,
                   help="elements per array that get special values")
    args = p.parse_args(argv)
    try:  # a runaway allocation fails as MemoryError instead of swapping
        import resource
        limit = 6 * 2**30
        resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
    except (ImportError, ValueError, OSError):
        pass
    out = [fuzz_image(path, args.max_flips, args.per_array) for path in args.images]
    print(json.dumps({"images": out}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
