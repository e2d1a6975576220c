"""The flat-array container: round trips, the byte layout of the spec, writer
validation, fuzzing, and one hand-crafted corruption per structural check."""

import json
import struct

import numpy as np
import pytest

from firmware_sim.artifact import (
    DTYPES,
    KINDS,
    MAGIC,
    Container,
    ContainerError,
    read_container,
    write_container,
)
from naive_firmware import (
    fix_crc,
    naive_read,
    pack_entry,
    pack_header,
    parse_entry,
    parse_header,
    spec_crc,
)

ALL_DTYPES = [np.uint8, np.int8, np.uint16, np.int16, np.uint32, np.int32,
              np.int64, np.uint64, np.float32, np.float64]
SHAPES = [(), (0,), (1,), (7,), (2, 3), (0, 4), (3, 0, 2), (2, 3, 4, 5)]


def _random_array(rng, dtype, shape):
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return rng.standard_normal(shape).astype(dt)
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, size=shape, dtype=dt, endpoint=True)


def _sample_arrays():
    rng = np.random.default_rng(7)
    return {
        "weights": _random_array(rng, np.int32, (5,)),
        "scalar": np.array(2.5, dtype=np.float64),
        "empty": np.zeros((0, 3), dtype=np.uint16),
        "code": _random_array(rng, np.uint8, (3, 7)),
        "proj": _random_array(rng, np.float32, (2, 3, 2)),
    }


SAMPLE_META = {"feature_names": ["a", "b"], "planner": {"scp": 0.93, "budget": 48}}


@pytest.fixture(scope="module")
def sample():
    return write_container(None, "ecoc", _sample_arrays(), meta=SAMPLE_META)


def _assert_same(arrays, expected):
    assert list(arrays) == list(expected)
    for name, exp in expected.items():
        got = arrays[name]
        assert got.dtype == np.dtype(exp.dtype).newbyteorder("="), name
        assert got.shape == exp.shape, name
        np.testing.assert_array_equal(got, exp)


# ---------------------------------------------------------------- round trips
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_roundtrip_every_dtype_and_shape(dtype, shape):
    rng = np.random.default_rng(0)
    a = _random_array(rng, dtype, shape)
    c = read_container(write_container(None, "ssbc", {"a": a}))
    _assert_same(c.arrays, {"a": a})
    got = c.arrays["a"]
    assert got.flags.c_contiguous and not got.flags.writeable


def test_roundtrip_many_arrays_meta_and_path(tmp_path, sample):
    path = tmp_path / "model.ecf"
    raw = write_container(path, "ecoc", _sample_arrays(), meta=SAMPLE_META)
    assert raw == sample == path.read_bytes()                     # deterministic
    for source in (raw, bytearray(raw), memoryview(raw), path, str(path)):
        c = read_container(source)
        assert isinstance(c, Container)
        assert (c.kind, c.version, c.nbytes) == ("ecoc", 1, len(raw))
        assert c.meta == SAMPLE_META
        _assert_same(c.arrays, _sample_arrays())
        assert c.tobytes() == raw
    assert "__meta__" not in c.arrays
    assert "ecoc" in repr(c)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_kind_and_empty_container(kind):
    c = read_container(write_container(None, kind, {}))
    assert c.kind == kind and dict(c.arrays) == {} and c.meta == {} and c.nbytes == 32


def test_inputs_are_converted_to_little_endian_c_order():
    base = np.arange(24, dtype=np.int64).reshape(4, 6)
    arrays = {"fortran": np.asfortranarray(base), "strided": base[:, ::2],
              "big": base.astype(">i4"), "listed": [[1.5, 2.0], [3.0, 4.0]]}
    c = read_container(write_container(None, "ecoc", arrays))
    for name, a in arrays.items():
        np.testing.assert_array_equal(c.arrays[name], np.asarray(a))
    assert c.arrays["big"].dtype == np.int32 and c.arrays["listed"].dtype == np.float64


def test_arrays_are_readonly_views(sample):
    arr = read_container(bytearray(sample)).arrays["weights"]
    with pytest.raises(ValueError):
        arr[0] = 1


# ---------------------------------------------------------------- byte layout (spec)
def test_layout_matches_the_spec(sample):
    """Read the container with struct, as docs/container_format.md describes it."""
    h = parse_header(sample)
    assert h["magic"] == MAGIC == b"\x89ECF\r\n\x1a\n"
    assert (h["version"], h["kind"], h["header_size"], h["entry_size"], h["reserved"]) == (
        1, KINDS["ecoc"], 32, 64, 0)
    assert h["n_arrays"] == len(_sample_arrays()) + 1            # + __meta__
    assert h["total_size"] == len(sample)
    assert h["crc32"] == spec_crc(sample)
    data_start = 32 + 64 * h["n_arrays"]
    expected = {**_sample_arrays(),
                "__meta__": np.frombuffer(json.dumps(SAMPLE_META, sort_keys=True,
                                                     separators=(",", ":")).encode(), np.uint8)}
    covered = np.zeros(len(sample), bool)
    covered[:data_start] = True
    prev_end = data_start
    for i, (name, a) in enumerate(expected.items()):
        e = parse_entry(sample, i)
        assert e["name"] == name.encode().ljust(32, b"\0")
        assert DTYPES[e["dtype"]] == np.dtype(a.dtype).newbyteorder("<")
        assert e["ndim"] == a.ndim and e["shape"] == list(a.shape) + [0] * (4 - a.ndim)
        assert e["offset"] % 16 == 0 and e["offset"] == -(-prev_end // 16) * 16
        assert e["nbytes"] == a.nbytes and e["reserved0"] == e["reserved1"] == 0
        assert sample[e["offset"]:e["offset"] + e["nbytes"]] == np.ascontiguousarray(a).tobytes()
        covered[e["offset"]:e["offset"] + e["nbytes"]] = True
        prev_end = e["offset"] + e["nbytes"]
    assert prev_end == len(sample)
    assert not any(np.frombuffer(sample, np.uint8)[~covered])     # padding is zero
    for name, a in naive_read(sample).items():
        if name != "__meta__":
            np.testing.assert_array_equal(a, _sample_arrays()[name])


# ---------------------------------------------------------------- writer validation
@pytest.mark.parametrize("kind, arrays, meta, exc, match", [
    ("cnn", {}, None, ContainerError, "unknown kind 'cnn'"),
    (1, {}, None, ContainerError, "unknown kind 1"),
    ("ecoc", [("a", 1)], None, TypeError, "arrays must be a mapping"),
    ("ecoc", {1: np.zeros(2)}, None, TypeError, "array names must be str"),
    ("ecoc", {"9lives": np.zeros(2)}, None, ContainerError, "bad array name '9lives'"),
    ("ecoc", {"a b": np.zeros(2)}, None, ContainerError, "ASCII identifier"),
    ("ecoc", {"poids_é": np.zeros(2)}, None, ContainerError, "bad array name"),
    ("ecoc", {"x" * 32: np.zeros(2)}, None, ContainerError, "at most 31 fit"),
    ("ecoc", {"__meta__": np.zeros(2, np.uint8)}, None, ContainerError, "reserved"),
    ("ecoc", {"a": np.zeros(2, bool)}, None, ContainerError, r"arrays\['a'\] has dtype bool"),
    ("ecoc", {"a": np.zeros(2, np.float16)}, None, ContainerError, "dtype float16"),
    ("ecoc", {"a": np.zeros(2, complex)}, None, ContainerError, "dtype complex128"),
    ("ecoc", {"a": np.array(["x"])}, None, ContainerError, "has dtype <U1"),
    ("ecoc", {"a": np.zeros((1,) * 5)}, None, ContainerError, "5 dimensions; at most 4"),
    ("ecoc", {}, ["a"], TypeError, "meta must be a dict"),
    ("ecoc", {}, {1: "a"}, TypeError, "meta keys must be str"),
    ("ecoc", {}, {"x": float("nan")}, ContainerError, "meta is not JSON"),
    ("ecoc", {}, {"x": object()}, ContainerError, "meta is not JSON"),
])
def test_writer_rejects(kind, arrays, meta, exc, match):
    with pytest.raises(exc, match=match):
        write_container(None, kind, arrays, meta)


def test_reader_rejects_bad_source(tmp_path):
    with pytest.raises(TypeError, match="source must be a path or bytes"):
        read_container(12)
    with pytest.raises(ContainerError, match="cannot read container file"):
        read_container(tmp_path / "missing.ecf")


# ---------------------------------------------------------------- require()
def test_require(sample):
    c = read_container(sample)
    assert c.require("code", np.uint8, (3, None)).shape == (3, 7)
    assert c.require("scalar", "float64", ()).shape == ()
    with pytest.raises(ContainerError, match="required array 'nope' is missing"):
        c.require("nope", np.uint8)
    with pytest.raises(ContainerError, match="array 'code' must have dtype int8; got uint8"):
        c.require("code", np.int8)
    with pytest.raises(ContainerError, match="array 'code' must be 1-dimensional"):
        c.require("code", np.uint8, (21,))
    with pytest.raises(ContainerError, match=r"array 'code' must have shape \(3, 8\).*axis 1"):
        c.require("code", np.uint8, (3, 8))


# ---------------------------------------------------------------- fuzzing
def _mutate(rng, raw):
    raw = bytearray(raw)
    op = rng.integers(4)
    if op == 0:                                     # flip 1..4 random bytes
        for _ in range(rng.integers(1, 5)):
            raw[rng.integers(len(raw))] ^= int(rng.integers(1, 256))
    elif op == 1:                                   # truncate
        del raw[rng.integers(len(raw)):]
    elif op == 2:                                   # insert 1..8 random bytes
        pos = int(rng.integers(len(raw) + 1))
        raw[pos:pos] = rng.integers(0, 256, rng.integers(1, 9), dtype=np.uint8).tobytes()
    else:                                           # delete a random span
        pos = int(rng.integers(len(raw)))
        del raw[pos:pos + int(rng.integers(1, 9))]
    return bytes(raw)


def test_fuzz_mutations_always_raise_container_error(sample):
    """Flips, truncations, insertions, deletions: ContainerError, nothing else.

    A mutated file could only load if it equalled the original; since the
    checksum covers every byte (padding too), none does.
    """
    rng = np.random.default_rng(2024)
    loaded = 0
    for _ in range(3000):
        bad = _mutate(rng, sample)
        if bad == sample:
            continue
        try:
            c = read_container(bad)
        except ContainerError:
            continue
        _assert_same(c.arrays, _sample_arrays())   # only acceptable success
        loaded += 1
    assert loaded == 0


def test_fuzz_structure_past_the_checksum(sample):
    """Corrupt the header/table/meta and recompute the CRC: every structural
    check must answer with ContainerError, never IndexError, MemoryError, a
    numpy or JSON error; what loads is self-consistent."""
    rng = np.random.default_rng(99)
    n_meta_end = parse_entry(sample, 5)["offset"] + parse_entry(sample, 5)["nbytes"]
    outcomes = {"error": 0, "loaded": 0}
    for it in range(3000):
        raw = bytearray(sample)
        for _ in range(rng.integers(1, 4)):
            # mostly header + table (bytes 0..415), sometimes anywhere
            hi = 32 + 64 * 6 if it % 4 else n_meta_end
            pos = int(rng.integers(hi))
            raw[pos] = int(rng.integers(256)) if rng.random() < 0.5 else raw[pos] ^ (1 << int(rng.integers(8)))
        if it % 7 == 0:
            raw = bytearray(_mutate(rng, raw))
        if len(raw) >= 24:
            fix_crc(raw)
        try:
            c = read_container(bytes(raw))
        except ContainerError:
            outcomes["error"] += 1
            continue
        outcomes["loaded"] += 1
        assert c.nbytes == len(raw)
        for a in c.arrays.values():
            assert a.dtype in [np.dtype(t) for t in ALL_DTYPES] and not a.flags.writeable
        assert isinstance(c.meta, dict)
    assert outcomes["error"] > 1000 and outcomes["loaded"] > 10


# ---------------------------------------------------------------- hand-crafted corruptions
def _entry_index(raw, name):
    for i in range(parse_header(raw)["n_arrays"]):
        if parse_entry(raw, i)["name"].rstrip(b"\0") == name.encode():
            return i
    raise KeyError(name)


def _set_meta_bytes(text):
    """Container whose __meta__ array holds ``text`` (built by hand)."""
    def corrupt(raw):
        payload = text.encode("utf-8") if isinstance(text, str) else text
        base = bytearray(write_container(None, "ecoc", {"a": np.zeros(2, np.int32)},
                                         meta={"k": "v" * len(payload)}))
        i = _entry_index(base, "__meta__")
        e = parse_entry(base, i)
        del base[e["offset"]:]
        base += payload
        pack_entry(base, i, shape=[len(payload), 0, 0, 0], nbytes=len(payload))
        pack_header(base, total_size=len(base))
        raw[:] = base
    return corrupt


def _overlap(raw):
    a, b = _entry_index(raw, "weights"), _entry_index(raw, "code")
    pack_entry(raw, b, offset=parse_entry(raw, a)["offset"])


def _swap_dtype_keep_size(raw):            # int32 (5,) -> uint8 (5,): nbytes inconsistent
    pack_entry(raw, _entry_index(raw, "weights"), dtype=1)


CORRUPTIONS = {
    "magic": (lambda r: r.__setitem__(slice(0, 8), b"EDGECODE"), "bad magic"),
    "version": (lambda r: pack_header(r, version=7), "unsupported format version 7"),
    "kind": (lambda r: pack_header(r, kind=42), "unknown kind code 42"),
    "header_size": (lambda r: pack_header(r, header_size=48), "header field header_size is 48"),
    "entry_size": (lambda r: pack_header(r, entry_size=72), "header field entry_size is 72"),
    "reserved": (lambda r: pack_header(r, reserved=1), "header field reserved is 1"),
    "total_size_small": (lambda r: pack_header(r, total_size=len(r) - 16), "trailing bytes"),
    "total_size_large": (lambda r: pack_header(r, total_size=len(r) + 16), "truncated at byte"),
    "n_arrays_huge": (lambda r: pack_header(r, n_arrays=2**32 - 1),
                      r"n_arrays 4294967295 needs a table ending at byte \d+; truncated"),
    "name_not_ascii": (lambda r: pack_entry(r, 0, name=b"w\xe9ights".ljust(32, b"\0")),
                       r"array #0: bad name .*not ASCII"),
    "name_not_identifier": (lambda r: pack_entry(r, 0, name=b"1weights".ljust(32, b"\0")),
                            "array #0: bad name '1weights'"),
    "name_empty": (lambda r: pack_entry(r, 0, name=b"\0" * 32), "array #0: bad name ''"),
    "name_unterminated": (lambda r: pack_entry(r, 0, name=b"w" * 32), "not NUL-terminated"),
    "name_garbage_after_nul": (lambda r: pack_entry(r, 0, name=b"weights\0x".ljust(32, b"\0")),
                               "non-NUL bytes after the terminating NUL"),
    "name_duplicate": (lambda r: pack_entry(r, 1, name=b"weights".ljust(32, b"\0")),
                       "array 'weights': duplicate name"),
    "name_reserved": (lambda r: pack_entry(r, 0, name=b"__weights".ljust(32, b"\0")),
                      "array '__weights': unknown reserved name"),
    "dtype_code_zero": (lambda r: pack_entry(r, 0, dtype=0), "array 'weights': unknown dtype code 0"),
    "dtype_code_big": (lambda r: pack_entry(r, 0, dtype=99), "array 'weights': unknown dtype code 99"),
    "ndim": (lambda r: pack_entry(r, 0, ndim=5), "array 'weights': ndim 5 exceeds 4"),
    "unused_shape_slot": (lambda r: pack_entry(r, 0, shape=[5, 1, 0, 0]),
                          "array 'weights': unused shape slots"),
    "reserved0": (lambda r: pack_entry(r, 0, reserved0=3), "array 'weights': reserved entry"),
    "reserved1": (lambda r: pack_entry(r, 0, reserved1=3), "array 'weights': reserved entry"),
    "shape_vs_nbytes": (lambda r: pack_entry(r, 0, shape=[6, 0, 0, 0]),
                        r"array 'weights': nbytes 20 inconsistent with shape \(6,\)"),
    "dtype_vs_nbytes": (_swap_dtype_keep_size, "array 'weights': nbytes 20 inconsistent"),
    "huge_shape": (lambda r: pack_entry(r, 0, ndim=4, shape=[2**32 - 1] * 4),
                   r"array 'weights': shape \(4294967295, .*\) is too large"),
    "offset_misaligned": (lambda r: pack_entry(r, 0, offset=parse_entry(r, 0)["offset"] + 4),
                          "array 'weights': offset \\d+ is not a multiple of 16"),
    "offset_in_table": (lambda r: pack_entry(r, 0, offset=32),
                        "array 'weights': offset 32 lies inside the header/table"),
    "offset_past_end": (lambda r: pack_entry(r, 0, offset=len(r) // 16 * 16),
                        "array 'weights': offset \\d+ \\+ nbytes 20 runs past the end"),
    "overlap": (_overlap, "overlapping arrays 'weights' and 'code'"),
    "padding": (lambda r: r.__setitem__(parse_entry(r, 0)["offset"] + 20, 1),
                r"nonzero padding byte at byte \d+"),
    "meta_bad_json": (_set_meta_bytes("{not json"), "'__meta__' is not valid JSON"),
    "meta_not_object": (_set_meta_bytes("[1, 2]"), "'__meta__' must hold a JSON object; got list"),
    "meta_not_utf8": (_set_meta_bytes(b'{"a": "\xff"}'), "'__meta__' is not valid UTF-8"),
    "meta_nan": (_set_meta_bytes('{"a": NaN}'), "'__meta__' is not valid JSON: non-finite"),
    "meta_overflow": (_set_meta_bytes('{"a": 1e999}'), "'__meta__' is not valid JSON: number"),
    "meta_deep": (_set_meta_bytes("[" * 100000 + "]" * 100000), "'__meta__' is not valid JSON"),
    "meta_dtype": (lambda r: pack_entry(r, _entry_index(r, "__meta__"), dtype=2),
                   "'__meta__' must be 1-dimensional uint8"),
}


@pytest.mark.parametrize("field", sorted(CORRUPTIONS))
def test_structural_corruption_is_named(sample, field):
    corrupt, match = CORRUPTIONS[field]
    raw = bytearray(sample)
    corrupt(raw)
    fix_crc(raw)                    # get past the checksum: the structural check must fire
    with pytest.raises(ContainerError, match=match):
        read_container(bytes(raw))


def test_checksum_truncation_and_trailing_bytes(sample):
    raw = bytearray(sample)
    raw[-1] ^= 0xFF
    with pytest.raises(ContainerError, match="checksum mismatch: header crc32 0x[0-9a-f]{8}, "
                                             "computed 0x[0-9a-f]{8}"):
        read_container(bytes(raw))
    with pytest.raises(ContainerError, match=f"truncated at byte 100: header declares total_size "
                                             f"{len(sample)}"):
        read_container(sample[:100])
    with pytest.raises(ContainerError, match="truncated at byte 20: the header needs 32 bytes"):
        read_container(sample[:20])
    with pytest.raises(ContainerError, match="bad magic"):
        read_container(b"PK\x03\x04")
    with pytest.raises(ContainerError, match="3 trailing bytes after the declared total_size"):
        read_container(sample + b"\0\0\0")
    with pytest.raises(ContainerError, match="empty input"):
        read_container(b"")


def test_unaccounted_bytes_at_the_end():
    raw = bytearray(write_container(None, "ecoc", {"a": np.ones(3, np.uint8)}))
    raw += b"\0" * 16
    pack_header(raw, total_size=len(raw))
    fix_crc(raw)
    with pytest.raises(ContainerError, match="16 unaccounted bytes at the end"):
        read_container(bytes(raw))


def test_entries_in_any_order_are_accepted():
    """The spec allows any table order and gaps (zero padding); only the checks matter."""
    raw = bytearray(write_container(None, "ecoc", {"a": np.arange(4, dtype=np.int32),
                                                   "b": np.arange(3, dtype=np.float64)}))
    ea, eb = parse_entry(raw, 0), parse_entry(raw, 1)
    pack_entry(raw, 0, **{k: eb[k] for k in ("name", "dtype", "ndim", "shape", "offset", "nbytes")})
    pack_entry(raw, 1, **{k: ea[k] for k in ("name", "dtype", "ndim", "shape", "offset", "nbytes")})
    fix_crc(raw)
    c = read_container(bytes(raw))
    assert list(c.arrays) == ["b", "a"]
    np.testing.assert_array_equal(c.arrays["a"], np.arange(4))
    assert struct.unpack_from("<I", raw, 20)[0] == spec_crc(raw)
