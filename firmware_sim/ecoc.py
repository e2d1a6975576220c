"""ECOC ensemble on the device: integer learners, noisy outputs, Hamming-nearest decoding.

Fixed point
-----------
*Inputs.* Feature f is sent as the int16 ``q_f = clip(rint((x_f - center_f) *
2**shift_f), -32767, 32767)`` (:func:`quantize_inputs`); the container holds
``in_center`` (float64) and ``in_shift`` (int8) so the host side can produce
``q``. A power-of-two scale keeps dyadic values (integers, halves, ...) exact.

*Linear learners.* ``score_o = lin_bias[o] + sum_f q_f lin_weights[f, o]``
with int16 inputs, int32 weights and an int64 accumulator (as a Q15 dot
product with a 64-bit accumulator, e.g. CMSIS-DSP ``arm_dot_prod_q15``).
A two-class learner owns one score: its second symbol iff score > 0; a
learner with k >= 3 classes owns k scores: the first largest wins.

*Trees.* Node arrays ``tree_feature`` (-1 at a leaf), ``tree_threshold``
(int32, same fixed point as the inputs: go left iff ``q_f <= threshold``),
``tree_left``/``tree_right`` (global node indices), ``tree_leaf`` (the
symbol at a leaf); column j starts at ``tree_root[j]``.

Decoding
--------
Column j outputs a symbol in ``0 .. N-1``. For a binary code (N = 2) the n
output bits are packed into uint64 words (column j = bit j % 64 of word
j // 64) and the doubled distance to class r is ``2 popcount((w ^ code_bits_r)
& code_used_r) + unused_count_r``; for N > 2 the symbols are compared
directly (``2 #{j used and unequal} + unused_count_r``). An unused (-1)
entry counts 1/2. The smallest distance wins, **ties to the lowest class
index**.

Noisy compute
-------------
:meth:`ECOCDevice.simulate` corrupts each learner output independently with
probability eps: a binary output bit is flipped (binary symmetric channel),
an N-ary symbol is replaced by one of the other N - 1 symbols chosen
uniformly.
"""


import numpy as np

from . import accounting
from ._kernels.ecoc import (
    _decode_packed,
    _decode_symbols,
    _linear_scores,
    _pack,
    _scores_to_symbols,
    _tree_symbols,
)
from ._validation import check_ecoc
from .device import Device, Inference, register_kind
from .artifact import Container, ContainerError, read_container
from .channel import bsc, check_random_state

__all__ = ["ECOCDevice", "load_ecoc", "make_ecoc_arrays",
           "quantize_inputs", "LEARNER_KINDS", "Q_MAX"]

KIND = "ecoc"
#: learner kind code stored in ``learner_kind``
LEARNER_KINDS = {"linear": 1, "tree": 2}
#: fixed-point inputs lie in [-Q_MAX, Q_MAX]
Q_MAX = 32767


def quantize_inputs(X, center, shift):
    """Fixed-point inputs ``clip(rint((X - center) * 2**shift), -32767, 32767)`` as int16.

    Examples
    --------
    >>> quantize_inputs([[0.0, 16.0], [3.0, 8.5]], [8.0, 8.0], [11, 11]).tolist()
    [[-16384, 16384], [-10240, 1024]]
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-dimensional (n_samples, n_features); got shape {X.shape}")
    center = np.asarray(center, dtype=np.float64)
    shift = np.asarray(shift, dtype=np.int64)
    if X.shape[1] != center.shape[0]:
        raise ValueError(f"X has {X.shape[1]} features; the quantizer expects {center.shape[0]}")
    if not np.isfinite(X).all():
        raise ValueError("X must be finite (no NaN or inf)")
    q = np.rint((X - center) * np.exp2(shift.astype(np.float64)))
    return np.clip(q, -Q_MAX, Q_MAX).astype(np.int16)


def _int_array(a, name, dtype, ndim):
    arr = np.asarray(a)
    if arr.ndim != ndim:
        raise ContainerError(f"ecoc arrays: {name} must be {ndim}-dimensional; got shape "
                             f"{arr.shape}")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise ContainerError(f"ecoc arrays: {name} must hold integers; got dtype {arr.dtype}")
    info = np.iinfo(dtype)
    if arr.size and (arr.min() < info.min or arr.max() > info.max):
        raise ContainerError(f"ecoc arrays: {name} must fit {np.dtype(dtype).name}; got range "
                             f"[{arr.min()}, {arr.max()}]")
    return np.ascontiguousarray(arr, dtype=dtype)


def _pack_rows(bits):
    n, m = bits.shape
    out = np.zeros((n, (m + 63) // 64), np.uint64)
    _pack((np.asarray(bits).astype(np.int16) != 0).view(np.uint8), out)   # uint8: one kernel
    return out


def make_ecoc_arrays(code, col_classes, col_n_classes, in_center, in_shift, *, linear=None,
                     tree=None):
    """The named arrays of an ``ecoc`` container (validated), shared by exporter and device.

    Parameters
    ----------
    code : int array (c, m)
        Symbols ``0 .. N-1``, -1 = unused.
    col_classes : int array (total,)
        Learner symbols of every column, concatenated (sorted within a column).
    col_n_classes : int array (m,)
        How many symbols each column's learner has (1 = constant learner).
    in_center : float array (d,), in_shift : int array (d,)
        Input quantization (see :func:`quantize_inputs`).
    linear : dict, optional
        ``weights`` int32 (d, k), ``bias`` int64 (k,), ``n_out`` (m,) scores
        per column (0 constant, 1 two-class, else = its class count).
    tree : dict, optional
        ``feature``, ``threshold``, ``left``, ``right``, ``leaf`` (nodes,) and
        ``root`` (m,).

    Returns
    -------
    dict of str to ndarray
    """
    if (linear is None) == (tree is None):
        raise ContainerError("ecoc arrays: give exactly one of linear= or tree=")
    code = _int_array(code, "code", np.int16, 2)
    c, m = code.shape
    if c < 2 or m < 1:
        raise ContainerError(f"ecoc arrays: code must have >= 2 rows and >= 1 column; got "
                             f"shape {code.shape}")
    if code.min() < -1:
        raise ContainerError("ecoc arrays: code entries must be -1 or symbols >= 0")
    n_sym = max(2, int(code.max()) + 1)
    n_cls = _int_array(col_n_classes, "col_n_classes", np.int32, 1)
    classes = _int_array(col_classes, "col_classes", np.int16, 1)
    if n_cls.shape != (m,) or n_cls.min() < 1 or int(n_cls.sum()) != classes.shape[0]:
        raise ContainerError("ecoc arrays: col_n_classes must have one entry >= 1 per column "
                             "summing to len(col_classes)")
    if classes.min() < 0 or classes.max() >= n_sym:
        raise ContainerError(f"ecoc arrays: col_classes must be symbols in 0..{n_sym - 1}")
    center = np.ascontiguousarray(in_center, dtype=np.float64)
    shift = _int_array(in_shift, "in_shift", np.int8, 1)
    d = center.shape[0]
    if center.ndim != 1 or shift.shape != (d,) or not np.isfinite(center).all():
        raise ContainerError("ecoc arrays: in_center (finite) and in_shift must have shape "
                             "(n_features,)")
    cls_off = np.concatenate([[0], np.cumsum(n_cls)[:-1]]).astype(np.int32)
    arrays = {
        "code": code,
        "unused_count": (code < 0).sum(axis=1).astype(np.int32),
        "n_symbols": np.array([n_sym], np.int32),
        "col_cls_offset": cls_off,
        "col_n_cls": n_cls,
        "col_classes": classes,
        "in_center": center,
        "in_shift": shift,
    }
    if n_sym == 2:
        arrays["code_bits"] = _pack_rows(code == 1)
        arrays["code_used"] = _pack_rows(code >= 0)
    if linear is not None:
        w = _int_array(linear["weights"], "lin_weights", np.int32, 2)
        b = _int_array(linear["bias"], "lin_bias", np.int64, 1)
        n_out = _int_array(linear["n_out"], "col_n_out", np.int32, 1)
        if w.shape[0] != d or b.shape != (w.shape[1],) or n_out.shape != (m,) \
                or int(n_out.sum()) != w.shape[1]:
            raise ContainerError("ecoc arrays: lin_weights (d, k), lin_bias (k,) and "
                                 "col_n_out (m,) summing to k are required")
        arrays["learner_kind"] = np.array([LEARNER_KINDS["linear"]], np.uint8)
        arrays["lin_weights"] = w
        arrays["lin_bias"] = b
        arrays["col_out_offset"] = np.concatenate([[0], np.cumsum(n_out)[:-1]]).astype(np.int32)
        arrays["col_n_out"] = n_out
    else:
        arrays["learner_kind"] = np.array([LEARNER_KINDS["tree"]], np.uint8)
        for key, dt in (("feature", np.int32), ("threshold", np.int32), ("left", np.int32),
                        ("right", np.int32), ("leaf", np.int16)):
            arrays["tree_" + key] = _int_array(tree[key], "tree_" + key, dt, 1)
        arrays["tree_root"] = _int_array(tree["root"], "tree_root", np.int32, 1)
    return arrays


class ECOCDevice(Device):
    """An ECOC ensemble as a microcontroller runs it (read from a container).

    Use :func:`load_ecoc`. Inputs of :meth:`predict` are the int16 fixed-point
    features (:meth:`quantize` makes them from floats). Labels are class
    indices ``0 .. c-1`` (``meta["classes"]`` names them).
    """

    def __init__(self, container):
        if not isinstance(container, Container):
            raise TypeError(f"container must be a Container; got {type(container).__name__}")
        if container.kind != KIND:
            raise ContainerError(f"expected a container of kind {KIND!r}; got {container.kind!r}")
        v = check_ecoc(container)  # every rule of docs/container_format.md
        self.container = container
        self.code = v["code"]
        self.unused = v["unused_count"].astype(np.int64)
        self.n_symbols = v["n_symbols"]
        self._cls_off = v["col_cls_offset"].astype(np.int64)
        self._n_cls = v["col_n_cls"].astype(np.int64)
        self._classes = v["col_classes"]
        self.in_center = v["in_center"]
        self.n_features = v["d"]
        self.in_shift = v["in_shift"]
        self.learner_kind = v["learner_kind"]
        if self.n_symbols == 2:
            self._code_bits, self._code_used = v["code_bits"], v["code_used"]
        if self.learner_kind == "linear":
            self._w, self._b = v["lin_weights"], v["lin_bias"]
            self._out_off = v["col_out_offset"].astype(np.int64)
            self._n_out = v["col_n_out"].astype(np.int64)
        else:
            self._tf, self._tt = v["tree_feature"], v["tree_threshold"]
            self._tl, self._tr = v["tree_left"], v["tree_right"]
            self._leaf, self._root = v["tree_leaf"], v["tree_root"]
        self.meta = container.meta

    @property
    def n_classes(self):
        return self.code.shape[0]

    @property
    def n_columns(self):
        return self.code.shape[1]

    def __repr__(self):
        return (f"ECOCDevice({self.learner_kind}, classes={self.n_classes}, "
                f"columns={self.n_columns}, N={self.n_symbols}, features={self.n_features})")

    # ------------------------------------------------------------ inputs
    def quantize(self, X):
        """Float features -> int16 fixed point with the container's quantizer."""
        return quantize_inputs(X, self.in_center, self.in_shift)

    def _check_q(self, q):
        arr = np.asarray(q)
        if arr.ndim != 2 or arr.shape[1] != self.n_features:
            raise ValueError(f"q must have shape (n_samples, {self.n_features}); got {arr.shape}")
        if arr.dtype != np.int16:
            raise TypeError(f"q must be int16 fixed-point features (see quantize); got dtype "
                            f"{arr.dtype}")
        return np.ascontiguousarray(arr)

    # --------------------------------------------------------- inference
    def learner_outputs(self, q):
        """Symbols of every learner on fixed-point inputs ``q``, shape (n, m), int16."""
        q = self._check_q(q)
        n, m = q.shape[0], self.n_columns
        sym = np.empty((n, m), np.int16)
        if self.learner_kind == "linear":
            scores = np.empty((n, self._w.shape[1]), np.int64)
            _linear_scores(q, self._w, self._b, scores)
            _scores_to_symbols(scores, self._out_off, self._n_out, self._cls_off, self._n_cls,
                               self._classes, sym)
        else:
            _tree_symbols(q, self._tf, self._tt, self._tl, self._tr, self._leaf, self._root,
                          sym)
        return sym

    def decode(self, symbols):
        """Hamming-nearest class index of learner outputs (ties: lowest index)."""
        sym = np.asarray(symbols)
        if sym.ndim != 2 or sym.shape[1] != self.n_columns:
            raise ValueError(f"symbols must have shape (n_samples, {self.n_columns}); got "
                             f"{sym.shape}")
        sym = np.ascontiguousarray(sym, dtype=np.int16)
        labels = np.empty(sym.shape[0], np.int64)
        if self.n_symbols == 2:
            words = np.empty((sym.shape[0], self._code_bits.shape[1]), np.uint64)
            _pack((sym != 0).view(np.uint8), words)     # the one (uint8) specialisation
            _decode_packed(words, self._code_bits, self._code_used, self.unused, labels)
        else:
            _decode_symbols(sym, self.code, self.unused, labels)
        return labels

    def predict(self, q):
        """Class indices of fixed-point inputs ``q`` (int16, shape (n, n_features))."""
        return self.decode(self.learner_outputs(q))

    def corrupt(self, symbols, eps, random_state=None):
        """Noisy compute: each output flipped (binary) or replaced by a uniformly random
        other symbol (N-ary) with probability ``eps``."""
        if isinstance(eps, bool) or not (0.0 <= float(eps) <= 1.0):
            raise ValueError(f"eps must be in [0, 1]; got {eps!r}")
        rng = check_random_state(random_state)
        sym = np.asarray(symbols, dtype=np.int16)
        if self.n_symbols == 2:
            return bsc(sym, float(eps), random_state=rng).astype(np.int16)
        hit = rng.random(sym.shape) < float(eps)
        shift = rng.integers(1, self.n_symbols, size=sym.shape)
        out = sym.copy()
        out[hit] = ((sym[hit].astype(np.int64) + shift[hit]) % self.n_symbols).astype(np.int16)
        return out

    # ------------------------------------------ the device contract
    frame_dtype = np.dtype(np.int16)
    default_site = "intermediate"

    @property
    def stage_symbols(self):
        """Alphabet of the learner outputs (``n_symbols``)."""
        return self.n_symbols

    @property
    def frame_width(self):
        """int16 features per frame."""
        return self.n_features

    def encode(self, X):
        """Host side: float features -> int16 fixed-point frames (:meth:`quantize`)."""
        return self.quantize(X)

    def infer(self, frames):
        """Device side: run the learners on int16 frames and decode Hamming-nearest.

        Returns an :class:`~firmware_sim.device.Inference`: the class indices,
        ``decision["symbols"]`` (learner outputs, int16 (t, m)) and
        ``decision["distances"]`` (doubled Hamming distances to every
        codeword, int64 (t, c): ``2 #(used and unequal) + #unused``; the
        label is the first minimum).
        """
        sym = self.stage(frames)
        return Inference(self.decode(sym), {"symbols": sym,
                                            "distances": doubled_distances(self.code, sym)})

    def labels(self, frames):
        return self.decode(self.stage(frames))

    def stage(self, frames):
        """Intermediate results: the learner outputs of int16 frames (t, m) int16."""
        return self.learner_outputs(self.check_frames(frames))

    def finish(self, intermediate):
        """Labels of learner outputs (:meth:`decode`)."""
        return self.decode(intermediate)

    # -------------------------------------------------------- resources
    def resources(self, X=None, y=None):
        """Flash, RAM and operations of one inference.

        Returns
        -------
        dict
            ``flash_bytes`` (the container), ``parameter_bytes`` (arrays the
            inference reads), ``ram_bytes`` (int16 inputs are read in place;
            RAM holds the learner outputs -- packed bits for N = 2, one byte
            per symbol otherwise -- the int64 scores of one learner at a time
            for linear models, a node index, a distance and the best class),
            ``ops_per_inference`` (multiply-accumulates, comparisons, node
            visits (worst case: tree depth), XOR/AND/popcount words or symbol
            compares, distance comparisons).
        """
        c, m = self.code.shape
        names = ["code", "unused_count", "col_cls_offset", "col_n_cls", "col_classes"]
        ops = {}
        if self.n_symbols == 2:
            names += ["code_bits", "code_used"]
            w = self._code_bits.shape[1]
            ops["decode_word_ops"] = 3 * c * w          # xor, and, popcount per word
            out_bits = m
        else:
            ops["decode_symbol_compares"] = c * m
            out_bits = 8 * m
        if self.learner_kind == "linear":
            names += ["lin_weights", "lin_bias", "col_out_offset", "col_n_out"]
            k = self._w.shape[1]
            ops["multiply_accumulates"] = self.n_features * k
            ops["score_comparisons"] = int(sum(max(int(v), 1) for v in self._n_out))
            scalars = {"scores_int64": 8 * int(self._n_out.max(initial=1)), "distance": 4,
                       "best_class": 2}
        else:
            names += ["tree_feature", "tree_threshold", "tree_left", "tree_right", "tree_leaf",
                      "tree_root"]
            depth = self._depths()
            ops["node_comparisons_worst"] = int(depth.sum())
            scalars = {"node_index": 4, "distance": 4, "best_class": 2}
        ops["distance_comparisons"] = c
        ops["total"] = sum(ops.values())
        ram = accounting.ram_model(out_bits, scalars=scalars)
        return {
            "kind": KIND,
            "learner_kind": self.learner_kind,
            "n_classes": c,
            "n_columns": m,
            "n_symbols": self.n_symbols,
            "flash_bytes": self.container.nbytes,
            "parameter_bytes": accounting.array_bytes(self.container, names),
            **ram,
            "ops_per_inference": ops,
        }

    def _depths(self):
        """Depth (internal nodes on the longest root-leaf path) of each column's tree
        (computed once: the trees of a loaded device do not change)."""
        cached = getattr(self, "_depth_cache", None)
        if cached is None:
            cached = self._depth_cache = self._tree_depths()
        return cached

    def _tree_depths(self):
        # one pass in node order, O(nodes): the loader guarantees that children come
        # after their parent and that every node has one parent (check_ecoc), so a
        # node's depth and column are final when it is reached; no recursion, no walk
        f, left, right = self._tf, self._tl.tolist(), self._tr.tolist()
        nn = f.shape[0]
        depth = [0] * nn
        col = [-1] * nn
        for j, r in enumerate(self._root.tolist()):
            col[r] = j
        for i in np.flatnonzero(f >= 0).tolist():
            a, b = left[i], right[i]
            if not i < a < nn or not i < b < nn:
                raise ContainerError(f"ecoc container: node {i}'s children must come after it")
            depth[a] = depth[b] = depth[i] + 1
            col[a] = col[b] = col[i]
        out = np.zeros(self.n_columns, np.int64)
        leaves = np.flatnonzero(f < 0)
        np.maximum.at(out, np.asarray(col, np.int64)[leaves], np.asarray(depth, np.int64)[leaves])
        return out


def doubled_distances(code, sym):
    """(t, c) doubled Hamming distances of received symbols to every codeword, the
    device's rule (``2 #(used and unequal) + #unused``), in chunks of points."""
    code = np.asarray(code, np.int64)
    used = code >= 0
    sym = np.asarray(sym)
    t = sym.shape[0]
    out = np.empty((t, code.shape[0]), np.int64)
    step = max(1, (1 << 22) // max(1, code.size))
    for a in range(0, t, step):
        s = np.asarray(sym[a:a + step], np.int64)
        out[a:a + step] = 2 * ((s[:, None, :] != code[None]) & used[None]).sum(axis=2)
    return out + (~used).sum(axis=1)[None, :]


#: :func:`flip_radius` of a point whose label no change of outputs can move
#: (a single class).
RADIUS_UNBOUNDED = np.iinfo(np.int64).max // 2


def flip_radius(dist, label):
    """Per point, how many learner outputs may change without any chance of
    changing its label.

    Each change moves every doubled distance by at most 2, so the first
    minimum ``label`` stays while ``4 k < D_r - D_label`` for rows before it
    and ``4 k <= D_r - D_label`` after it (ties go to the lowest index).
    ``dist`` is :func:`doubled_distances`; a single-class code gives
    :data:`RADIUS_UNBOUNDED`.
    """
    dist = np.asarray(dist, np.int64)
    label = np.asarray(label, np.int64)
    t, c = dist.shape
    if c < 2:
        return np.full(t, RADIUS_UNBOUNDED, np.int64)
    gap = dist - dist[np.arange(t), label][:, None]
    rad = np.where(np.arange(c)[None, :] > label[:, None], gap // 4, (gap - 1) // 4)
    rad[np.arange(t), label] = RADIUS_UNBOUNDED
    return rad.min(axis=1)


def load_ecoc(source):
    """Read and validate an ``ecoc`` container (path, bytes or Container) -> ECOCDevice."""
    container = source if isinstance(source, Container) else read_container(source)
    return ECOCDevice(container)


register_kind("ecoc", 2, ECOCDevice)
