"""The flat-array container: the device's contract (reader *and* writer).

One little-endian file holds a fixed 32-byte header, a table of 64-byte
entries (one per named typed array) and the raw array data, each array
aligned to 16 bytes so that a microcontroller can use it in place from flash.
The byte-by-byte specification is ``docs/container_format.md``; this module is
its reference implementation.

Loading never executes code: there is no pickle and no ``np.load``; metadata
is UTF-8 JSON stored as a ``uint8`` array named ``"__meta__"``. Every
malformed input raises :class:`ContainerError` with a message that names what
is wrong (field, array name, byte position).
"""

import json
import math
import os
import re
import zlib
from types import MappingProxyType

import numpy as np

from .errors import ContainerError

__all__ = [
    "ContainerError",
    "Container",
    "write_container",
    "read_container",
    "entry_layout",
    "stored_size",
    "KINDS",
    "DTYPES",
    "MAGIC",
    "FORMAT_VERSION",
    "class_names_array",
    "register_kind_code",
]

#: File signature (8 bytes). Like PNG's, the high byte, CR LF, ^Z and LF catch
#: 7-bit transfers and newline translation.
MAGIC = b"\x89ECF\r\n\x1a\n"

#: Format version this module writes; the reader accepts exactly these.
FORMAT_VERSION = 1
SUPPORTED_VERSIONS = (1,)

#: Model kind name -> uint16 code stored in the header: the registered kinds
#: (:func:`register_kind_code`, called by ``firmware_sim.register_kind``; the
#: built-in kinds register when ``firmware_sim`` is imported, which importing
#: this module does first).
_KINDS = {}
KINDS = MappingProxyType(_KINDS)
_KIND_NAMES = {}

#: dtype code (uint8 in the table) -> little-endian numpy dtype.
DTYPES = MappingProxyType({
    1: np.dtype("<u1"),   # uint8
    2: np.dtype("<i1"),   # int8
    3: np.dtype("<u2"),   # uint16
    4: np.dtype("<i2"),   # int16
    5: np.dtype("<u4"),   # uint32
    6: np.dtype("<i4"),   # int32
    7: np.dtype("<u8"),   # uint64
    8: np.dtype("<i8"),   # int64
    9: np.dtype("<f4"),   # float32
    10: np.dtype("<f8"),  # float64
})
_DTYPE_CODES = {dt.str: code for code, dt in DTYPES.items()}

HEADER_SIZE = 32
ENTRY_SIZE = 64
NAME_WIDTH = 32          # bytes, NUL padded; at most NAME_WIDTH - 1 characters
MAX_NDIM = 4
ALIGNMENT = 16
MAX_TOTAL_SIZE = 2**32 - 1
META_NAME = "__meta__"
#: Reserved array of the class names (written from ``meta["classes"]``).
CLASSES_NAME = "__classes__"
#: Reserved array of the image protection (issue 27: the scheme of each
#: protected array and its check bits; :mod:`firmware_sim.protection`).
PROTECT_NAME = "__protect__"
#: Reserved arrays of protection layers that wrap any kind (kept in
#: ``Container.arrays``; the loader hands the container to the layer:
#: ``firmware_sim.wire`` for ``"__wire_copies__"``, issue 27).
LAYER_NAMES = ("__wire_copies__",)

# Header: magic, version, kind, n_arrays, total_size, crc32, header_size,
# entry_size, reserved.
_HEADER_DTYPE = np.dtype([
    ("magic", "S8"), ("version", "<u2"), ("kind", "<u2"), ("n_arrays", "<u4"),
    ("total_size", "<u4"), ("crc32", "<u4"), ("header_size", "<u2"),
    ("entry_size", "<u2"), ("reserved", "<u4"),
])
_ENTRY_DTYPE = np.dtype([
    ("name", "V32"), ("dtype", "u1"), ("ndim", "u1"), ("reserved0", "<u2"),
    ("shape", "<u4", (MAX_NDIM,)), ("offset", "<u4"), ("nbytes", "<u4"),
    ("reserved1", "<u4"),
])
assert _HEADER_DTYPE.itemsize == HEADER_SIZE and _ENTRY_DTYPE.itemsize == ENTRY_SIZE

_CRC_FIELD = slice(20, 24)
_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")




def register_kind_code(name, code):
    """Let containers of kind ``name`` carry header code ``code`` (a uint16).

    Re-registering the same pair is a no-op; a name or code already taken by
    another kind raises :class:`ContainerError`.
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"a kind name must be a non-empty str; got {name!r}")
    if isinstance(code, bool) or not isinstance(code, int) or not 0 < code < 2**16:
        raise ContainerError(f"kind {name!r}: the header code must be an integer in "
                             f"[1, 65535]; got {code!r}")
    if _KINDS.get(name, code) != code or _KIND_NAMES.get(code, name) != name:
        raise ContainerError(f"kind {name!r} / code {code} clashes with the registered kinds "
                             f"{dict(_KINDS)}")
    _KINDS[name] = code
    _KIND_NAMES[code] = name


def _align(n):
    return (n + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT


def _crc32(buf):
    """CRC-32 (zlib/IEEE 802.3) of the file with the crc field (bytes 20..23) skipped."""
    mv = memoryview(buf)
    return zlib.crc32(mv[_CRC_FIELD.stop:], zlib.crc32(mv[:_CRC_FIELD.start])) & 0xFFFFFFFF


# --------------------------------------------------------------------------
# Container
# --------------------------------------------------------------------------
class Container:
    """A parsed, validated container (returned by :func:`read_container`).

    Attributes
    ----------
    kind : str
        Model kind, a key of :data:`KINDS`.
    version : int
        Format version of the file.
    arrays : mapping of str to ndarray
        The named arrays (read-only, little-endian, C-contiguous), in table
        order, without the ``"__meta__"`` entry.
    meta : dict
        Metadata decoded from ``"__meta__"`` (empty if the file has none).
    class_names : tuple of str or None
        The class names of the reserved array ``"__classes__"``, in class
        index order (None if the file has none): what ``meta["classes"]``
        says, readable by a device without a JSON parser.
    nbytes : int
        Size of the whole container in bytes (what is stored in flash).
    protect : ndarray of uint8 or None
        The reserved array ``"__protect__"`` as stored (None when the image
        is not protected): the schemes and check bits that
        :mod:`firmware_sim.protection` decodes when the device loads it.

    Examples
    --------
    >>> import numpy as np
    >>> raw = write_container(None, "ecoc", {"code": np.eye(3, dtype=np.uint8)})
    >>> c = read_container(raw)
    >>> c.kind, c.arrays["code"].shape, c.nbytes == len(raw)
    ('ecoc', (3, 3), True)
    >>> c.require("code", np.uint8, (None, 3)).sum().item()
    3
    """

    __slots__ = ("kind", "version", "arrays", "meta", "nbytes", "_raw", "class_names",
                 "protect")

    def __init__(self, kind, version, arrays, meta, nbytes, raw, class_names=None,
                 protect=None):
        self.protect = protect
        self.kind = kind
        self.version = version
        self.arrays = MappingProxyType(arrays)
        self.meta = meta
        self.nbytes = nbytes
        self._raw = raw
        self.class_names = class_names

    def tobytes(self):
        """The container exactly as stored (bytes)."""
        return self._raw

    def __repr__(self):
        fields = ", ".join(f"{k}:{a.dtype.name}{list(a.shape)}" for k, a in self.arrays.items())
        return f"Container(kind={self.kind!r}, version={self.version}, nbytes={self.nbytes}, arrays={{{fields}}})"

    def require(self, name, dtype, shape=None):
        """Return array ``name`` after checking its dtype and shape.

        Parameters
        ----------
        name : str
            Array name.
        dtype : dtype-like
            Required dtype (byte order ignored: the container is little-endian).
        shape : tuple of (int or None), optional
            Required shape; ``None`` entries match any length. ``None``
            (default) skips the shape check.

        Returns
        -------
        ndarray
            The read-only array.

        Raises
        ------
        ContainerError
            Naming the field: missing, wrong dtype, wrong ndim or wrong length.

        Examples
        --------
        >>> import numpy as np
        >>> c = read_container(write_container(None, "ssbc", {"v": np.zeros(4, np.float32)}))
        >>> c.require("v", np.float32, (4,)).shape
        (4,)
        >>> c.require("v", np.float64)
        Traceback (most recent call last):
        ...
        firmware_sim.errors.ContainerError: ssbc container: array 'v' must have dtype float64; got float32
        """
        where = f"{self.kind} container"
        if name not in self.arrays:
            raise ContainerError(f"{where}: required array {name!r} is missing "
                                 f"(present: {sorted(self.arrays)})")
        arr = self.arrays[name]
        want = np.dtype(dtype)
        if arr.dtype.newbyteorder("=") != want.newbyteorder("="):
            raise ContainerError(f"{where}: array {name!r} must have dtype {want.name}; "
                                 f"got {arr.dtype.name}")
        if shape is not None:
            shape = tuple(shape)
            if arr.ndim != len(shape):
                raise ContainerError(f"{where}: array {name!r} must be {len(shape)}-dimensional "
                                     f"(shape {_fmt_shape(shape)}); got shape {arr.shape}")
            for axis, (got, exp) in enumerate(zip(arr.shape, shape)):
                if exp is not None and got != exp:
                    raise ContainerError(f"{where}: array {name!r} must have shape "
                                         f"{_fmt_shape(shape)}; got {arr.shape} "
                                         f"(axis {axis}: {got} != {exp})")
        return arr


def _fmt_shape(shape):
    inner = ", ".join("*" if s is None else str(s) for s in shape)
    return f"({inner},)" if len(shape) == 1 else f"({inner})"


# --------------------------------------------------------------------------
# Writer
# --------------------------------------------------------------------------
def _check_name(name, *, reserved_ok=False):
    if not isinstance(name, str):
        raise TypeError(f"array names must be str; got {name!r}")
    if not name.isascii() or not _NAME_RE.match(name):
        raise ContainerError(f"bad array name {name!r}: must be an ASCII identifier "
                             "([A-Za-z_][A-Za-z0-9_]*)")
    if len(name) > NAME_WIDTH - 1:
        raise ContainerError(f"bad array name {name!r}: {len(name)} characters, "
                             f"at most {NAME_WIDTH - 1} fit the table")
    if name.startswith("__") and not reserved_ok:
        raise ContainerError(f"bad array name {name!r}: names starting with '__' are "
                             "reserved by the format")


def _coerce_array(name, a):
    if isinstance(a, np.ndarray):
        arr = a
    else:
        try:
            arr = np.asarray(a)
        except Exception as exc:  # ragged lists and the like
            raise TypeError(f"arrays[{name!r}] must be array-like; got {type(a).__name__}") from exc
    key = arr.dtype.newbyteorder("<").str if arr.dtype.kind in "iuf" else None
    if key not in _DTYPE_CODES:
        allowed = ", ".join(dt.name for dt in DTYPES.values())
        raise ContainerError(f"arrays[{name!r}] has dtype {arr.dtype}; allowed: {allowed}")
    if arr.ndim > MAX_NDIM:
        raise ContainerError(f"arrays[{name!r}] has {arr.ndim} dimensions; at most {MAX_NDIM}")
    for axis, s in enumerate(arr.shape):
        if s > 0xFFFFFFFF:
            raise ContainerError(f"arrays[{name!r}] axis {axis} has length {s}; "
                                 "at most 2**32 - 1")
    span = arr.dtype.itemsize * math.prod(s for s in arr.shape if s)
    if span > MAX_TOTAL_SIZE:
        raise ContainerError(f"arrays[{name!r}] has shape {arr.shape}: {arr.dtype.itemsize} * "
                             f"the product of its non-zero dimensions is {span} bytes, above "
                             f"the {MAX_TOTAL_SIZE} a container holds (empty arrays too)")
    # Little-endian, C order (a logical copy when the input is not).
    arr = np.asarray(arr, dtype=arr.dtype.newbyteorder("<"), order="C")
    return _DTYPE_CODES[arr.dtype.str], arr


def write_container(path, kind, arrays, meta=None, *, protect=None):
    """Validate, then emit a container; optionally write it to ``path``.

    Parameters
    ----------
    path : str, os.PathLike or None
        Destination file, or ``None`` to only return the bytes.
    kind : str
        Model kind, a key of :data:`KINDS` (``"protected_nb"``, ``"ecoc"``,
        ``"ssbc"``).
    arrays : mapping of str to array-like
        Named arrays, stored in the mapping's order. Names are ASCII
        identifiers of at most 31 characters not starting with ``"__"``;
        dtypes among uint8, int8, uint16, int16, uint32, int32, uint64,
        int64, float32, float64 (bool and float16 are refused, not converted);
        at most 4 dimensions. Arrays are stored little-endian in C order.
    meta : dict, optional
        JSON-serialisable metadata with str keys (no NaN/inf), stored as the
        uint8 array ``"__meta__"`` (UTF-8 JSON, sorted keys).
    protect : array-like of uint8, optional
        The reserved array ``"__protect__"`` (written by
        :func:`firmware_sim.protection.protect_container`; stored after the
        model's arrays, its content checked when a device loads the image).

    Returns
    -------
    bytes
        The container.

    Raises
    ------
    ContainerError
        Unknown kind, bad name, disallowed dtype, too many dimensions, file
        larger than 4 GiB, metadata that is not JSON.
    TypeError
        ``arrays`` not a mapping, a name not a str, an entry not array-like.

    Examples
    --------
    >>> import numpy as np
    >>> raw = write_container(None, "protected_nb", {"w": np.arange(3, dtype=np.int32)},
    ...                       meta={"note": "demo"})
    >>> raw[:8] == MAGIC
    True
    >>> read_container(raw).meta
    {'note': 'demo'}
    """
    if not isinstance(kind, str) or kind not in KINDS:
        raise ContainerError(f"unknown kind {kind!r}; expected one of {sorted(KINDS)}")
    if not hasattr(arrays, "items"):
        raise TypeError(f"arrays must be a mapping of name to array; got {type(arrays).__name__}")
    entries = []
    for name, a in arrays.items():
        _check_name(name, reserved_ok=name in LAYER_NAMES)
        code, arr = _coerce_array(name, a)
        entries.append((name, code, arr))
    if protect is not None:
        parr = np.asarray(protect)
        if parr.dtype != np.uint8 or parr.ndim != 1:
            raise ContainerError(f"{PROTECT_NAME!r} must be 1-dimensional uint8; got "
                                 f"{parr.dtype.name} with shape {parr.shape}")
        entries.append((PROTECT_NAME, _DTYPE_CODES["|u1"], np.ascontiguousarray(parr)))
    if meta is not None:
        if not isinstance(meta, dict):
            raise TypeError(f"meta must be a dict; got {type(meta).__name__}")
        for k in meta:
            if not isinstance(k, str):
                raise TypeError(f"meta keys must be str; got {k!r}")
        names = class_names_array(meta.get("classes"))
        if names is not None:
            entries.append((CLASSES_NAME, _DTYPE_CODES["|u1"], names))
        try:
            text = json.dumps(meta, sort_keys=True, ensure_ascii=False, allow_nan=False,
                              separators=(",", ":"))
        except (TypeError, ValueError) as exc:
            raise ContainerError(f"meta is not JSON-serialisable: {exc}") from exc
        entries.append((META_NAME, _DTYPE_CODES["|u1"],
                        np.frombuffer(text.encode("utf-8"), dtype=np.uint8)))

    n = len(entries)
    data_start = HEADER_SIZE + ENTRY_SIZE * n
    table = np.zeros(n, dtype=_ENTRY_DTYPE)
    pos = data_start
    for i, (name, code, arr) in enumerate(entries):
        pos = _align(pos)
        e = table[i]
        e["name"] = name.encode("ascii").ljust(NAME_WIDTH, b"\0")
        e["dtype"] = code
        e["ndim"] = arr.ndim
        e["shape"][:arr.ndim] = arr.shape
        e["offset"] = pos if pos <= MAX_TOTAL_SIZE else 0
        e["nbytes"] = arr.nbytes if arr.nbytes <= MAX_TOTAL_SIZE else 0
        pos += arr.nbytes
        if pos > MAX_TOTAL_SIZE:
            raise ContainerError(f"container would be {pos} bytes; the format "
                                 f"holds at most {MAX_TOTAL_SIZE}")
    total = pos
    buf = bytearray(total)
    header = np.zeros((), dtype=_HEADER_DTYPE)
    header["magic"] = MAGIC
    header["version"] = FORMAT_VERSION
    header["kind"] = KINDS[kind]
    header["n_arrays"] = n
    header["total_size"] = total
    header["header_size"] = HEADER_SIZE
    header["entry_size"] = ENTRY_SIZE
    buf[:HEADER_SIZE] = header.tobytes()
    buf[HEADER_SIZE:data_start] = table.tobytes()
    for e, (_, _, arr) in zip(table, entries):
        off = int(e["offset"])
        buf[off:off + arr.nbytes] = arr.tobytes()
    buf[_CRC_FIELD] = _crc32(buf).to_bytes(4, "little")
    raw = bytes(buf)
    if path is not None:
        with open(path, "wb") as f:
            f.write(raw)
    return raw


def _is_label(v):
    return isinstance(v, str) or (isinstance(v, (int, float)) and not isinstance(v, bool))


def class_names_array(classes):
    """The ``"__classes__"`` array of a ``meta["classes"]`` list: each label as
    text (a string as it is, a number as Python's ``str`` writes it), UTF-8,
    followed by one NUL byte, in class index order; None when ``classes`` is
    not a non-empty list of labels (the kind's metadata rule refuses that).

    >>> bytes(class_names_array(["cp", "im", 3])).split(b"\\0")
    [b'cp', b'im', b'3', b'']
    >>> class_names_array([]) is None, class_names_array("ab") is None
    (True, True)
    """
    if not isinstance(classes, list) or not classes or not all(map(_is_label, classes)):
        return None
    parts = []
    for i, label in enumerate(classes):
        try:
            text = str(label).encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ContainerError(f"meta['classes'][{i}] cannot be written as UTF-8: {exc}") \
                from None
        if b"\0" in text:
            raise ContainerError(f"meta['classes'][{i}] = {label!r} holds a NUL character; "
                                 "class names are NUL-terminated in the image")
        parts.append(text + b"\0")
    return np.frombuffer(b"".join(parts), dtype=np.uint8)


def _parse_class_names(arr):
    """Rule 13 for ``"__classes__"``: 1-d uint8, at least one byte, the last one
    NUL, valid UTF-8; the names are the NUL-terminated strings it holds."""
    if arr.dtype != np.uint8 or arr.ndim != 1:
        raise ContainerError(f"array {CLASSES_NAME!r} must be 1-dimensional uint8 "
                             f"(NUL-terminated UTF-8 names); got {arr.dtype.name} with shape "
                             f"{arr.shape}")
    raw = arr.tobytes()
    if not raw or raw[-1] != 0:
        raise ContainerError(f"array {CLASSES_NAME!r} must end with a NUL byte (each class "
                             f"name is NUL-terminated); got {len(raw)} bytes"
                             + (f" ending with {raw[-1]:#04x}" if raw else ""))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ContainerError(f"array {CLASSES_NAME!r} is not valid UTF-8: {exc}") from None
    return tuple(text[:-1].split("\0"))


# --------------------------------------------------------------------------
# Reader
# --------------------------------------------------------------------------
def _source_bytes(source):
    if isinstance(source, (bytes, bytearray, memoryview)):
        return bytes(source)
    if isinstance(source, (str, os.PathLike)):
        try:
            with open(source, "rb") as f:
                return f.read()
        except OSError as exc:
            raise ContainerError(f"cannot read container file {os.fspath(source)!r}: {exc}") from exc
    raise TypeError(f"source must be a path or bytes; got {type(source).__name__}")


def _decode_name(i, raw_name):
    raw_name = bytes(raw_name)
    stop = raw_name.find(b"\0")
    if stop < 0:
        raise ContainerError(f"array #{i}: name field is not NUL-terminated "
                             f"(at most {NAME_WIDTH - 1} characters)")
    if raw_name[stop:].strip(b"\0"):
        raise ContainerError(f"array #{i}: name field has non-NUL bytes after the "
                             "terminating NUL")
    try:
        name = raw_name[:stop].decode("ascii")
    except UnicodeDecodeError:
        raise ContainerError(f"array #{i}: bad name {raw_name[:stop]!r} (not ASCII)") from None
    if not _NAME_RE.match(name):
        raise ContainerError(f"array #{i}: bad name {name!r} (must be an ASCII identifier)")
    return name


def _parse_meta(arr):
    if arr.dtype != np.uint8 or arr.ndim != 1:
        raise ContainerError(f"array {META_NAME!r} must be 1-dimensional uint8 UTF-8 JSON; "
                             f"got {arr.dtype.name} with shape {arr.shape}")

    def _no_constants(token):
        raise ContainerError(f"non-finite number {token}")

    def _finite_float(token):
        value = float(token)
        if not math.isfinite(value):
            raise ContainerError(f"number {token[:20]} overflows float64")
        return value

    try:
        meta = json.loads(arr.tobytes().decode("utf-8"), parse_constant=_no_constants,
                          parse_float=_finite_float)
    except UnicodeDecodeError as exc:
        raise ContainerError(f"array {META_NAME!r} is not valid UTF-8: {exc}") from None
    except (ValueError, RecursionError) as exc:
        raise ContainerError(f"array {META_NAME!r} is not valid JSON: {exc}") from None
    if not isinstance(meta, dict):
        raise ContainerError(f"array {META_NAME!r} must hold a JSON object; got "
                             f"{type(meta).__name__}")
    return meta


def stored_size(sizes):
    """Bytes of a container whose table entries (in table order, ``"__meta__"``
    and the other reserved arrays included) hold ``sizes`` bytes each: the
    header, the table, every entry's data at the next 16-byte boundary, no
    padding after the last one (what :func:`write_container` writes).

    >>> import numpy as np
    >>> raw = write_container(None, "ecoc", {"a": np.arange(3, dtype=np.int32),
    ...                                      "b": np.zeros(5, np.uint8)})
    >>> stored_size([12, 5]) == len(raw)
    True
    """
    pos = HEADER_SIZE + ENTRY_SIZE * len(sizes)
    for n in sizes:
        n = int(n)
        if n < 0:
            raise ContainerError(f"sizes must be >= 0 bytes each; got {n}")
        pos = _align(pos) + n
    return pos


def entry_layout(source):
    """``[(name, offset, nbytes), ...]`` of a valid container's table, in table
    order (reserved arrays included), after :func:`read_container` checked it.

    >>> import numpy as np
    >>> raw = write_container(None, "ecoc", {"a": np.arange(3, dtype=np.int32)})
    >>> entry_layout(raw)
    [('a', 96, 12)]
    """
    c = source if isinstance(source, Container) else read_container(source)
    raw = c.tobytes()
    n = int(np.frombuffer(raw, _HEADER_DTYPE, count=1)[0]["n_arrays"])
    table = np.frombuffer(raw, _ENTRY_DTYPE, count=n, offset=HEADER_SIZE)
    return [(bytes(e["name"]).rstrip(b"\0").decode("ascii"), int(e["offset"]),
             int(e["nbytes"])) for e in table]


def read_container(source):
    """Parse and validate a container.

    Checks, in order: header length, magic, format version, declared total
    size against the actual length (truncation, trailing bytes), CRC-32,
    kind, fixed header fields, table extent, then every table entry (name,
    dtype code, ndim, unused shape slots, reserved fields, nbytes against
    shape, alignment, bounds), overlaps, zero padding and metadata.

    Parameters
    ----------
    source : str, os.PathLike, bytes, bytearray or memoryview
        Path of a container file, or its bytes.

    Returns
    -------
    Container
        Arrays are read-only views on an immutable copy of the bytes.

    Raises
    ------
    ContainerError
        Anything malformed, with a message naming the field, array or byte.
    TypeError
        ``source`` is neither a path nor bytes.

    Examples
    --------
    >>> import numpy as np
    >>> raw = write_container(None, "ecoc", {"a": np.array([1.5, -2.0])})
    >>> read_container(raw).arrays["a"]
    array([ 1.5, -2. ])
    >>> read_container(raw[:-1])
    Traceback (most recent call last):
    ...
    firmware_sim.errors.ContainerError: truncated at byte 111: header declares total_size 112
    """
    raw = _source_bytes(source)
    size = len(raw)
    if size == 0:
        raise ContainerError("empty input (0 bytes): not an edgecode container")
    if size < HEADER_SIZE:
        if raw[:min(size, len(MAGIC))] != MAGIC[:size]:
            raise ContainerError("bad magic: not an edgecode container")
        raise ContainerError(f"truncated at byte {size}: the header needs {HEADER_SIZE} bytes")
    h = np.frombuffer(raw, dtype=_HEADER_DTYPE, count=1)[0]
    if raw[:8] != MAGIC:
        raise ContainerError(f"bad magic {raw[:8]!r}: not an edgecode container "
                             f"(expected {MAGIC!r})")
    version = int(h["version"])
    if version not in SUPPORTED_VERSIONS:
        raise ContainerError(f"unsupported format version {version} (this reader "
                             f"supports {', '.join(map(str, SUPPORTED_VERSIONS))})")
    total = int(h["total_size"])
    if size < total:
        raise ContainerError(f"truncated at byte {size}: header declares total_size {total}")
    if size > total:
        raise ContainerError(f"{size - total} trailing bytes after the declared "
                             f"total_size {total}")
    crc = int(h["crc32"])
    actual = _crc32(raw)
    if crc != actual:
        raise ContainerError(f"checksum mismatch: header crc32 0x{crc:08x}, "
                             f"computed 0x{actual:08x}")
    kind_code = int(h["kind"])
    if kind_code not in _KIND_NAMES:
        raise ContainerError(f"unknown kind code {kind_code} (known: "
                             f"{dict(sorted(_KIND_NAMES.items()))})")
    for field, expected in (("header_size", HEADER_SIZE), ("entry_size", ENTRY_SIZE),
                            ("reserved", 0)):
        if int(h[field]) != expected:
            raise ContainerError(f"header field {field} is {int(h[field])}; "
                                 f"format version {version} requires {expected}")
    n = int(h["n_arrays"])
    data_start = HEADER_SIZE + ENTRY_SIZE * n
    if data_start > total:
        raise ContainerError(f"n_arrays {n} needs a table ending at byte {data_start}; "
                             f"truncated at byte {total}")
    table = np.frombuffer(raw, dtype=_ENTRY_DTYPE, count=n, offset=HEADER_SIZE)

    arrays = {}
    spans = []
    for i in range(n):
        e = table[i]
        name = _decode_name(i, e["name"])
        label = f"array {name!r}"
        if name in arrays:
            raise ContainerError(f"{label}: duplicate name (entries #{list(arrays).index(name)} "
                                 f"and #{i})")
        code = int(e["dtype"])
        if code not in DTYPES:
            raise ContainerError(f"{label}: unknown dtype code {code} "
                                 f"(known: {sorted(DTYPES)})")
        dtype = DTYPES[code]
        ndim = int(e["ndim"])
        if ndim > MAX_NDIM:
            raise ContainerError(f"{label}: ndim {ndim} exceeds {MAX_NDIM}")
        shape_field = [int(s) for s in e["shape"]]
        if any(shape_field[ndim:]):
            raise ContainerError(f"{label}: unused shape slots beyond ndim {ndim} must be 0; "
                                 f"got shape field {shape_field}")
        if int(e["reserved0"]) or int(e["reserved1"]):
            raise ContainerError(f"{label}: reserved entry fields must be 0")
        shape = tuple(shape_field[:ndim])
        offset, nbytes = int(e["offset"]), int(e["nbytes"])
        span = dtype.itemsize * math.prod(s for s in shape if s)
        if span > MAX_TOTAL_SIZE:
            raise ContainerError(f"{label}: shape {shape} is too large: {dtype.itemsize} * the "
                                 f"product of its non-zero dimensions is {span} bytes, above "
                                 f"the {MAX_TOTAL_SIZE} a container holds (an empty array "
                                 "too: a zero dimension does not make any shape valid)")
        expected = dtype.itemsize * math.prod(shape)
        if nbytes != expected:
            raise ContainerError(f"{label}: nbytes {nbytes} inconsistent with shape {shape} "
                                 f"and dtype {dtype.name} ({expected} bytes)")
        if offset % ALIGNMENT:
            raise ContainerError(f"{label}: offset {offset} is not a multiple of {ALIGNMENT}")
        if offset < data_start:
            raise ContainerError(f"{label}: offset {offset} lies inside the header/table "
                                 f"(data starts at byte {data_start})")
        if offset + nbytes > total:
            raise ContainerError(f"{label}: offset {offset} + nbytes {nbytes} runs past the "
                                 f"end of the container ({total} bytes)")
        arr = np.frombuffer(raw, dtype=dtype, count=nbytes // dtype.itemsize,
                            offset=offset).reshape(shape)
        if not dtype.isnative:
            arr = arr.astype(dtype.newbyteorder("="))
            arr.flags.writeable = False
        arrays[name] = arr
        spans.append((offset, offset + nbytes, name))

    # Overlaps, unaccounted bytes and padding.
    spans.sort()
    prev_end, prev_name = data_start, None
    covered = np.zeros(total - data_start, dtype=bool)
    for start, end, name in spans:
        if start == end:
            continue
        if start < prev_end and prev_name is not None:
            raise ContainerError(f"overlapping arrays {prev_name!r} and {name!r} "
                                 f"(bytes {start}..{prev_end - 1})")
        covered[start - data_start:end - data_start] = True
        prev_end, prev_name = end, name
    last_end = max([data_start] + [end if end > start else start for start, end, _ in spans])
    if total != last_end:
        raise ContainerError(f"{total - last_end} unaccounted bytes at the end: total_size "
                             f"{total} but the last array ends at byte {last_end}")
    data = np.frombuffer(raw, dtype=np.uint8, offset=data_start)
    bad = np.flatnonzero(data[~covered])
    if bad.size:
        byte = int(np.flatnonzero(~covered)[bad[0]]) + data_start
        raise ContainerError(f"nonzero padding byte at byte {byte}")

    meta = {}
    if META_NAME in arrays:
        meta = _parse_meta(arrays.pop(META_NAME))
    names = None
    if CLASSES_NAME in arrays:
        names = _parse_class_names(arrays.pop(CLASSES_NAME))
    protect = None
    if PROTECT_NAME in arrays:
        protect = arrays.pop(PROTECT_NAME)
        if protect.dtype != np.uint8 or protect.ndim != 1:
            raise ContainerError(f"array {PROTECT_NAME!r} must be 1-dimensional uint8 (the "
                                 f"protection table and check bits); got {protect.dtype.name} "
                                 f"with shape {protect.shape}")
    for name in arrays:
        if name.startswith("__") and name not in LAYER_NAMES:
            raise ContainerError(f"array {name!r}: unknown reserved name (names starting "
                                 f"with '__' are reserved; version {version} defines "
                                 f"only {META_NAME!r}, {CLASSES_NAME!r}, {PROTECT_NAME!r} and "
                                 f"{', '.join(repr(n) for n in LAYER_NAMES)})")
    return Container(_KIND_NAMES[kind_code], version, arrays, meta, total, raw, names, protect)
