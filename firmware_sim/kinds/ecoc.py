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

*Trees.* The compact node format of kind ``forest`` (issue 26): decision
nodes only (``node_feature``, ``node_threshold`` int16 in the inputs' fixed
point: go left iff ``q_f <= threshold``, ``node_left``/``node_right``),
each tree in preorder, narrow unsigned dtypes; a reference ``r < N`` is the
leaf of symbol ``r`` (the N symbols are the leaves: no leaf is stored), else
a node after the current one; column j's tree starts at ``tree_root[j]``
(:func:`compact_trees` makes them from scikit-learn's arrays).

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


from types import MappingProxyType

import numpy as np

from .. import accounting
from .._validation import INT64_MAX, Q_ABS_MAX, check_equal, check_finite, \
    check_meta, check_range, check_scalar, exclusive_cumsum, fail
from ..artifact import Container, read_container
from ..channel import bsc, check_random_state
from ..device import Device, Inference, register_kind
from ..errors import ContainerError, DeviceError
from ..faults import draw_seed
from ._kernels.ecoc import (
    _decode_packed,
    _decode_symbols,
    _ecoc_binary_outcomes,
    _ecoc_symbol_outcomes,
    _linear_scores,
    _pack,
    _scores_to_symbols,
)
from ._kernels.forest import _forest_leaves
from ._trees import (MAX_DEPTH, check_node_arrays, check_node_layout, count_visits,
                     narrowest_unsigned)

__all__ = ["ECOCDevice", "load_ecoc", "make_ecoc_arrays", "compact_trees", "doubled_distances",
           "flip_radius",
           "RADIUS_UNBOUNDED", "quantize_inputs", "LEARNER_KINDS", "Q_MAX"]

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
        raise DeviceError(f"X must be 2-dimensional (n_samples, n_features); got shape {X.shape}")
    center = np.asarray(center, dtype=np.float64)
    shift = np.asarray(shift, dtype=np.int64)
    if X.shape[1] != center.shape[0]:
        raise DeviceError(f"X has {X.shape[1]} features; the quantizer expects {center.shape[0]}")
    if not np.isfinite(X).all():
        raise DeviceError("X must be finite (no NaN or inf)")
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
        g = {key: _int_array(tree[key], "tree_" + key, np.int64, 1)
             for key in ("feature", "threshold", "left", "right", "leaf", "root")}
        if g["root"].shape != (m,):
            raise ContainerError(f"ecoc arrays: tree root must have one entry per column ({m})")
        arrays.update(compact_trees(g["feature"], g["threshold"], g["left"], g["right"],
                                    g["leaf"], g["root"], n_sym))
    return arrays


def _tree_owners(roots, n, n_symbols):
    """Column owning each of the ``n`` decision nodes of the compact tree arrays
    (column j's tree starts at node ``roots[j] - N`` when ``roots[j] >= N``; the
    exporter stores the trees one after the other in preorder), else None."""
    roots = np.asarray(roots, np.int64).reshape(-1)
    starts = roots - int(n_symbols)
    cols = np.flatnonzero(starts >= 0)
    if n == 0 or cols.size == 0:
        return None
    s = starts[cols]
    order = np.argsort(s, kind="stable")
    ss = s[order]
    if ss[0] != 0 or np.any(np.diff(ss) <= 0) or ss[-1] >= n:
        return None
    owner = np.empty(n, np.int64)
    for k, j in enumerate(cols[order].tolist()):
        owner[ss[k]:(ss[k + 1] if k + 1 < ss.size else n)] = j
    return owner


def compact_trees(feature, threshold, left, right, leaf, root, n_symbols):
    """Trees as scikit-learn stores them (global node arrays: ``feature`` -1 at a
    leaf, ``left``/``right`` node indices, ``leaf`` the symbol at a leaf,
    ``root`` one per column) -> the compact node arrays of kind ``forest``
    (``docs/container_format.md``, "Model kind forest", rules 3-8), which ECOC
    tree learners share: decision nodes only, each tree in preorder, a
    reference ``r < N`` (``n_symbols``) the leaf of symbol ``r``, thresholds
    int16. A node whose threshold lies outside int16 sends every int16 input
    the same way (``q <= t`` always for ``t >= 32767``, never for ``t <
    -32768``): it is replaced by that child. Feature ids and references take
    the narrowest unsigned dtype.

    Returns
    -------
    dict
        ``tree_root``, ``node_feature``, ``node_threshold``, ``node_left``,
        ``node_right``.

    Examples
    --------
    One column: ``x0 <= 5`` -> symbol 0, else ``x1 <= 40000`` (always true) -> 1.

    >>> a = compact_trees([0, -1, 1, -1, -1], [5, 0, 40000, 0, 0], [1, -1, 3, -1, -1],
    ...                   [2, -1, 4, -1, -1], [0, 0, 0, 1, 0], [0], 2)
    >>> {k: v.tolist() for k, v in a.items()}  # doctest: +NORMALIZE_WHITESPACE
    {'tree_root': [2], 'node_feature': [0], 'node_threshold': [5], 'node_left': [0],
     'node_right': [1]}
    """
    feature, threshold = np.asarray(feature, np.int64), np.asarray(threshold, np.int64)
    left, right = np.asarray(left, np.int64), np.asarray(right, np.int64)
    leaf = np.asarray(leaf, np.int64)
    L, nn = int(n_symbols), feature.shape[0]

    def resolve(g):
        for _ in range(nn + 1):                    # a cycle cannot keep it going
            if not 0 <= g < nn:
                raise ContainerError(f"ecoc arrays: tree node index {g} outside the {nn} "
                                     "nodes")
            if feature[g] < 0:
                return g
            t = threshold[g]
            if -32768 <= t < 32767:
                return g
            g = int(left[g] if t >= 32767 else right[g])
        raise ContainerError("ecoc arrays: the tree nodes form a cycle")

    feat, thr, lref, rref, roots = [], [], [], [], []
    for r in root.tolist() if hasattr(root, "tolist") else root:
        g = resolve(int(r))
        if feature[g] < 0:
            roots.append(int(leaf[g]))
            continue
        roots.append(L + len(feat))
        stack = [(g, -1, 0, 1)]                   # (node, parent's slot, side, level)
        while stack:
            g, parent, side, level = stack.pop()
            g = resolve(g)
            if feature[g] < 0:
                ref = int(leaf[g])
            else:
                if level > MAX_DEPTH:
                    raise ContainerError(f"ecoc arrays: a tree deeper than {MAX_DEPTH} "
                                         "decision levels (limit max_depth)")
                i = len(feat)
                feat.append(int(feature[g]))
                thr.append(int(threshold[g]))
                lref.append(0)
                rref.append(0)
                ref = L + (i - parent - 1) if parent >= 0 else None
                stack.append((int(right[g]), i, 1, level + 1))
                stack.append((int(left[g]), i, 0, level + 1))
            if parent >= 0:
                (lref if side == 0 else rref)[parent] = ref
    if any(v < 0 for v in leaf[feature < 0].tolist()):
        raise ContainerError("ecoc arrays: tree leaves must hold symbols >= 0")
    refs = np.array(lref + rref + [0], np.int64)
    ref_dt = narrowest_unsigned(int(refs.max()))
    return {
        "tree_root": np.array(roots, narrowest_unsigned(max(roots, default=0))),
        "node_feature": np.array(feat, narrowest_unsigned(max(feat, default=0))),
        "node_threshold": np.array(thr, np.int16),
        "node_left": np.array(lref, ref_dt),
        "node_right": np.array(rref, ref_dt),
    }


class ECOCDevice(Device):
    """An ECOC ensemble as a microcontroller runs it (read from a container).

    Use :func:`load_ecoc`. Inputs of :meth:`predict` are the int16 fixed-point
    features (:meth:`quantize` makes them from floats). Labels are class
    indices ``0 .. c-1`` (``meta["classes"]`` names them).
    """

    # -- the kind's spec (firmware_sim.contract.BaseDevice) -------------------
    kind = KIND
    kind_code = 2
    frame_dtype = np.dtype(np.int16)
    default_site = "intermediate"
    c_sources = ("ec_ecoc.c",)
    c_switch = "EC_WITH_ECOC"
    #: The C runtime built at -O2 with this kind only (benchmarks/README.md,
    #: "Firmware"): cortex-m0plus for ``cortex-m0``, cortex-m4 for ``cortex-m4``;
    #: on AVR (-Os) and RV32 the probe's flash minus the image and the peak stack
    #: (``python benchmarks/bench_firmware.py --targets atmega328p,atmega2560,rv32imac
    #: --no-emlearn``; ECOC: the larger of one-learner linear and tree builds).
    runtime_bytes = MappingProxyType({"cortex-m0": (6034, 736), "cortex-m4": (5027, 736),
                                      "atmega328p": (8026, 505), "atmega2560": (8162, 510),
                                      "rv32imac": (5837, 704)})

    @classmethod
    def erasure_owners(cls, container):
        """Image protection's fallback: a detected upset of a learner's parameters
        (``lin_weights``, ``lin_bias`` scores; a tree's ``node_threshold``) erases
        the learner: its output is left out of the Hamming distance (a code of
        row distance d then survives d - 1 erased learners). A detected upset of
        a tree's structure (``node_feature``, ``node_left``, ``node_right``,
        ``tree_root``) has no fallback: the walk itself would be unsafe, so the
        image is refused, as an ECC double-error trap would."""
        a = container.arrays
        out = {}
        try:
            if "lin_weights" in a and "col_n_out" in a:
                n_out = a["col_n_out"].astype(np.int64)
                k = a["lin_bias"].size if "lin_bias" in a else int(n_out.sum())
                if n_out.min(initial=0) >= 0 and n_out.sum() == k:
                    score = np.repeat(np.arange(n_out.size), n_out)
                    out["lin_bias"] = score
                    out["lin_weights"] = np.tile(score, a["lin_weights"].size // max(k, 1))
            if "node_threshold" in a and "tree_root" in a and "n_symbols" in a:
                owner = _tree_owners(a["tree_root"], a["node_threshold"].size,
                                     int(np.asarray(a["n_symbols"]).reshape(-1)[0]))
                if owner is not None:
                    out["node_threshold"] = owner
        except (KeyError, ValueError, IndexError):   # an inconsistent image: no fallback
            return {}
        return out

    def erase(self, units):
        """Leave the erased learners (columns) out of the Hamming distance: every
        codeword then counts 1/2 for each (the unused symbol's weight), which
        ranks the classes as leaving them out does."""
        cols = np.asarray(units, np.int64)
        code = np.array(self.code)
        self.unused = self.unused + (code[:, cols] >= 0).sum(axis=1)
        code[:, cols] = -1
        code.flags.writeable = False
        self.code = code
        if self.n_symbols == 2:
            used = np.array(self._code_used)
            for j in cols.tolist():
                used[:, j // 64] &= ~np.uint64(1 << (j % 64))
            self._code_used = used

    @classmethod
    def check_container(cls, container):
        """Rules of kind ``ecoc`` (``docs/container_format.md``); returns the
        validated arrays by name plus ``n_symbols``, ``learner_kind``
        (``"linear"`` or ``"tree"``) and the shapes ``c, m, d``."""
        super().check_container(container)
        return _check_rules(container)

    def __init__(self, container):
        if not isinstance(container, Container):
            raise TypeError(f"container must be a Container; got {type(container).__name__}")
        if container.kind != KIND:
            raise ContainerError(f"expected a container of kind {KIND!r}; got {container.kind!r}")
        v = self.check_container(container)  # every rule of docs/container_format.md
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
            # the forest format's node arrays, widened once for the kernel
            self._tf = v["node_feature"].astype(np.int64)
            self._tt = v["node_threshold"].astype(np.int32)
            self._tl = v["node_left"].astype(np.int64)
            self._tr = v["node_right"].astype(np.int64)
            self._root = v["tree_root"].astype(np.int64)
            self._depth_cache = v["tree_depth"]
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
            raise DeviceError(f"q must have shape (n_samples, {self.n_features}); got {arr.shape}")
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
            leaves = np.empty((n, m), np.int32)
            _forest_leaves(q, self._tf, self._tt, self._tl, self._tr, self._root,
                           int(self.n_symbols), leaves)
            sym[:] = leaves                          # a leaf id is its symbol
        return sym

    def decode(self, symbols):
        """Hamming-nearest class index of learner outputs (ties: lowest index)."""
        sym = np.asarray(symbols)
        if sym.ndim != 2 or sym.shape[1] != self.n_columns:
            raise DeviceError(f"symbols must have shape (n_samples, {self.n_columns}); got "
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
            raise DeviceError(f"eps must be in [0, 1]; got {eps!r}")
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

    def cost_counts(self, frames=None):
        """The C runtime's work (``ec_ecoc.c``) for the cost model (family
        ``ecoc_linear`` or ``ecoc_trees``: each has its own prices). Inference:
        the learners (linear: ``scores`` dot products of ``macs`` int16 x
        int32 products and ``argmax_steps``; trees: ``nodes_visited``, counted
        on the frames or, without, the deepest path of every tree), then the
        decoding (``symbol_compares`` along the code's int16 rows, for every
        alphabet) and the ``classes`` scanned for the nearest. Open: the image
        (``profiles.image_counts``) and the arrays its rules walk."""
        from ..profiles import image_counts

        c, n, d = self.n_classes, self.n_columns, self.n_features
        infer = {"call": 1, "columns": n, "classes": c}
        opened = {**image_counts(self.container), "code_entries": c * n, "columns": n,
                  "classes": c}
        if self.learner_kind == "linear":
            k = self._n_out
            infer.update(scores=int(k.sum()), macs=int(k.sum()) * d,
                         argmax_steps=int(np.maximum(k - 1, 0).sum()))
            opened["weights"] = int(self._w.size)
        else:
            infer["nodes_visited"] = int(np.asarray(self._depths()).sum())
            # the compact format stores decision nodes only; the leaves are the
            # references below N: decision nodes + 1 per tree
            n_dec = int(self._tf.shape[0])
            opened.update(nodes=n_dec,
                          leaves=n_dec + int(self._root.size))
        infer["symbol_compares"] = c * n
        family = "ecoc_linear" if self.learner_kind == "linear" else "ecoc_trees"
        if frames is None:
            return {"family": family, "open": opened, "infer": infer}
        q = self._check_q(self.check_frames(frames))
        t = q.shape[0]
        out = {key: np.full(t, float(v)) for key, v in infer.items()}
        if self.learner_kind != "linear":
            visits = count_visits(q, self._root, self._tf, self._tt, self._tl, self._tr,
                                  self.n_symbols)
            out["nodes_visited"] = visits
        return {"family": family, "open": opened, "infer": out}

    def decision_layout(self):
        """The learner outputs (one per column), then the doubled distances (one per
        class)."""
        return (("symbols", self.n_columns), ("distances", self.n_classes))

    def score_arithmetic(self):
        """The narrowest exact arithmetic of the linear scores, as the C runtime
        derives it at open (``docs/firmware.md``, "Narrow arithmetic"):
        ``"int32"`` (every weight in int16 and every output's ``|B| + 32768
        sum_f |W|`` below 2**31: 16x16->32-bit products, 32-bit sums),
        ``"w16"`` (every weight in int16: the same products, 64-bit sums in two
        32-bit words) or ``"int64"``; None for tree learners."""
        if self.learner_kind != "linear":
            return None
        return score_arithmetic(self._w, self._b)

    def c_defines(self):
        """``ec_config.h`` settings of a firmware written for this model alone: only
        its learner kind's code (open checks and inference, ``ec_ecoc.c``) is
        compiled in, for linear learners only the score arithmetic its image
        needs (:meth:`score_arithmetic`), for trees only its node widths; an
        image of the other learner kind, one whose scores need a wider
        arithmetic or one of other node widths is then refused with
        ``EC_ERR_KIND`` (issue 26)."""
        linear = self.learner_kind == "linear"
        out = {"EC_ECOC_LINEAR": int(linear), "EC_ECOC_TREES": int(not linear)}
        if linear:
            arith = self.score_arithmetic()
            out.update(EC_ECOC_ACC32=int(arith == "int32"), EC_ECOC_W16=int(arith == "w16"),
                       EC_ECOC_I64=int(arith == "int64"))
        else:
            a = self.container.arrays
            out.update(EC_ECOC_ROOT_BYTES=a["tree_root"].dtype.itemsize,
                       EC_ECOC_FEATURE_BYTES=a["node_feature"].dtype.itemsize,
                       EC_ECOC_REF_BYTES=a["node_left"].dtype.itemsize)
        return out

    def c_inline(self, stamp, form="code"):
        """Tree learners as C code (``edgecode firmware --trees inline``, form
        ``"code"``, or ``--trees arrays``: :mod:`firmware_sim.c_inline`, the
        forest's generators with the N symbols as the leaves): every column's
        symbol, then the doubled Hamming distance to every codeword
        (``2 #{j used, code[r, j] != sym[j]} + unused[r]``) and the first
        class with the smallest, the decision integers of the table form.
        None for linear learners (no inline form)."""
        from ..c_inline import api_source, fast_uint, least_uint, quantizer_c, trees_c

        if self.learner_kind != "tree":
            return None
        if form not in ("code", "arrays"):
            raise DeviceError(f"form must be 'code' or 'arrays'; got {form!r}")
        a = self.container.arrays
        c, m = self.code.shape
        N, d = int(self.n_symbols), self.n_features
        q_consts, quantize = quantizer_c(a["in_center"], a["in_shift"])
        trees, call = trees_c(a, N, form)
        max_d = int(2 * m + self.unused.max(initial=0))
        dist_t = fast_uint(max_d)
        code_rows = ",\n".join("    {" + ", ".join(str(int(v)) for v in row) + "}"
                               for row in self.code)
        body = "\n".join([
            f"#define EC_INLINE_COLUMNS {m}u\n#define EC_INLINE_CLASSES {c}u\n",
            f"typedef {fast_uint(max(N - 1, 0))} ec_inline_leaf; /* a leaf is a symbol */\n",
            q_consts,
            "/* the code: codeword r in row r, -1 unused; unused entries per row */",
            f"static const EC_ROM int16_t ec_inline_code[{c}][{m}] = {{\n{code_rows}\n}};",
            f"static const EC_ROM {least_uint(max(int(self.unused.max(initial=0)), 0))} "
            f"ec_inline_unused[{c}] = {{"
            + ", ".join(str(int(v)) for v in self.unused) + "};\n",
            trees])
        infer = (f"    {least_uint(max(N - 1, 0))} sym[EC_INLINE_COLUMNS];\n"
                 f"    {fast_uint(max(m, c))} k, r, best = 0u;\n"
                 f"    {dist_t} best_d = 0u;\n"
                 "    for (k = 0u; k < EC_INLINE_COLUMNS; k++) {\n"
                 f"        sym[k] = (ec_inline_leaf){call};\n"
                 "        if (decision != NULL)\n"
                 "            decision[k] = (int64_t)sym[k];\n"
                 "    }\n"
                 "    for (r = 0u; r < EC_INLINE_CLASSES; r++) {\n"
                 f"        {dist_t} d2 = ec_inline_unused[r];\n"
                 "        for (k = 0u; k < EC_INLINE_COLUMNS; k++) {\n"
                 "            const int16_t e = ec_inline_code[r][k];\n"
                 "            if (e >= 0 && e != (int16_t)sym[k])\n"
                 "                d2 += 2u;\n"
                 "        }\n"
                 "        if (decision != NULL)\n"
                 "            decision[EC_INLINE_COLUMNS + r] = (int64_t)d2;\n"
                 "        if (r == 0u || d2 < best_d) { /* ties: the lowest class index */\n"
                 "            best_d = d2;\n"
                 "            best = r;\n"
                 "        }\n"
                 "    }\n"
                 "    *label = (int32_t)best;\n"
                 "    return EC_OK;\n")
        header = ("/*\n * ec_inline.c - ECOC tree learners as code (generated by `edgecode "
                  f"firmware --trees {'inline' if form == 'code' else 'arrays'}`;\n"
                  " * firmware_sim/kinds/ecoc.py, ECOCDevice.c_inline): "
                  f"{m} columns, {N} symbols, {c} classes,\n * {d} features. The C API of "
                  "edgecode_rt.h for this model alone, bit for bit as\n * firmware_sim's "
                  "device.infer; ec_model_open accepts this model's 8-byte stamp\n"
                  " * (model_image.c) only.\n */")
        return api_source(kind_code=self.kind_code, header=header, stamp_bytes=stamp,
                          n_features=d, frame_width=d, decision_len=m + c, workspace_bytes=0,
                          body=body, infer=infer, class_names=self.container.class_names,
                          quantize=quantize)

    def workspace_bytes(self):
        """The runtime's symbols and distances (8 bytes each) plus fixed scalars."""
        return 8 * (self.n_columns + self.n_classes) + 64

    # ------------------------------------------ the campaign fast paths
    def bit_fault_runner(self, site, fault, stream, clean, y, n_trials):
        """Additive faults on the learner outputs: binary codes XOR each batch's
        error masks into the packed clean outputs and decode Hamming-nearest
        (``_ecoc_binary_outcomes``); N-ary codes replace a symbol per event and
        update the clean doubled distances (``_ecoc_symbol_outcomes``). Same
        draws and counts as the plain path, trial for trial."""
        if site != "intermediate" or not fault.additive:
            return None
        if self.n_symbols == 2:
            return self._binary_runner(fault, stream, clean, y, n_trials)
        return self._symbol_runner(fault, stream, clean, y, n_trials)

    def _binary_runner(self, fault, tx, clean, y, n_trials):
        t, width = tx.shape
        clean_words = np.empty((t, self._code_bits.shape[1]), np.uint64)
        _pack((tx != 0).view(np.uint8), clean_words)
        radius = flip_radius(doubled_distances(self.code, tx), clean)
        y_arr = np.empty(0, np.int64) if y is None else y
        code_bits, code_used, unused = self._code_bits, self._code_used, self.unused

        def run(start, nrows, rng, same, correct):
            masks = fault.error_masks(nrows, width, rng)
            _ecoc_binary_outcomes(masks, start, n_trials, clean_words, code_bits, code_used,
                                  unused, radius, clean, y_arr, same, correct)
        return run

    def _symbol_runner(self, fault, tx, clean, y, n_trials):
        """Each event of the fault's masks replaces a symbol by a uniformly random
        other one; only the rows with events are re-decoded, by updating the
        clean doubled distances per event."""
        n_sym = self.n_symbols
        t, width = tx.shape
        code = np.asarray(self.code, dtype=np.int64)
        used = code >= 0
        clean_dist = doubled_distances(code, tx)
        radius = flip_radius(clean_dist, clean)
        # step[j, a, b, r]: change of the doubled distance to row r when symbol a of
        # column j is received as b
        s = np.arange(n_sym)
        neq = (s[None, :, None] != code.T[:, None, :]) & used.T[:, None, :]     # (L, N, c)
        step = np.ascontiguousarray(2 * (neq[:, None, :, :].astype(np.int32)
                                         - neq[:, :, None, :]))                # (L, a, b, c)
        y_arr = np.empty(0, np.int64) if y is None else y
        clean_dist = clean_dist.astype(np.int32)

        def run(start, nrows, rng, same, correct):
            masks = fault.error_masks(nrows, width, rng)
            dist = np.empty(code.shape[0], np.int32)          # scratch: one per batch (threads)
            _ecoc_symbol_outcomes(masks, start, n_trials, tx, step, clean_dist, n_sym,
                                  draw_seed(rng), radius, clean, y_arr, same, correct, dist)
        return run

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
            names += list(ECOC_TREE_ARRAYS)
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
        """Decision levels (internal nodes on the longest root-leaf path) of each
        column's tree (from the loader's one-pass layout check)."""
        return self._depth_cache


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


# --------------------------------------------------------------------------
# The kind's consistency rules (docs/container_format.md; the C loader checks
# the same ones)
# --------------------------------------------------------------------------
ECOC_LEARNER_KINDS = {code: name for name, code in LEARNER_KINDS.items()}
ECOC_LINEAR_ARRAYS = ("lin_weights", "lin_bias", "col_out_offset", "col_n_out")
#: ECOC tree learners: the node arrays of kind forest (rules 3, 4, 6-8 there)
ECOC_TREE_ARRAYS = ("tree_root", "node_feature", "node_threshold", "node_left", "node_right")
ECOC_META = {"learner_kind": "str", "n_symbols": "int", "tie_rule": "str",
             "weight_shifts": "int_list", "code": "str"}


def pack_rows(bits):
    """0/1 rows (c, m) as uint64 words (c, ceil(m / 64)): bit j % 64 of word j // 64."""
    c, m = bits.shape
    words = (m + 63) // 64
    padded = np.zeros((c, words * 64), np.uint8)
    padded[:, :m] = bits != 0
    packed = np.packbits(padded.reshape(c, words, 64), axis=2, bitorder="little")
    return np.ascontiguousarray(packed).view("<u8").reshape(c, words).astype(np.uint64)


def _check_rules(container):
    """Rules of kind ``ecoc`` (the kind is checked); returns the validated arrays by
    name plus ``n_symbols``, ``learner_kind`` (``"linear"`` or ``"tree"``) and the
    shapes ``c, m, d``."""
    kind = "ecoc"
    req = container.require
    names = set(container.arrays)
    out = {}

    # -- the code and the alphabet
    code = req("code", np.int16, (None, None))
    c, m = code.shape
    if c < 2 or m < 1:
        fail(kind, f"array 'code' must have >= 2 rows (classes) and >= 1 column "
                    f"(learners); got shape {code.shape}")
    check_range(kind, "code", code, -1, np.iinfo(np.int16).max,
                rule="must hold symbols >= 0 or -1 (unused)")
    n_sym = check_scalar(container, "n_symbols", np.int32)
    want_n = max(2, int(code.max()) + 1)
    if n_sym != want_n:
        fail(kind, f"array 'n_symbols' must equal max(2, max(code) + 1) = {want_n}; "
                    f"got {n_sym}")
    unused = req("unused_count", np.int32, (c,))
    check_equal(kind, "unused_count", unused, (code < 0).sum(axis=1),
                "the number of -1 entries in each row of 'code'")

    # -- the learners' symbols
    n_cls = req("col_n_cls", np.int32, (m,))
    check_range(kind, "col_n_cls", n_cls, 1, n_sym,
                rule=f"must count 1..n_symbols = {n_sym} learner symbols")
    total = int(n_cls.astype(np.int64).sum())
    classes = req("col_classes", np.int16, (total,))
    cls_off = req("col_cls_offset", np.int32, (m,))
    check_equal(kind, "col_cls_offset", cls_off, exclusive_cumsum(n_cls.astype(np.int64)),
                "the running sum of 'col_n_cls' (exclusive)")
    check_range(kind, "col_classes", classes, 0, n_sym - 1,
                rule=f"must hold symbols in [0, n_symbols = {n_sym})")
    if total > 1:
        first = np.zeros(total, bool)
        first[cls_off.astype(np.int64)] = True
        bad = ~first[1:] & (np.diff(classes.astype(np.int64)) <= 0)
        if bad.any():
            i = int(np.flatnonzero(bad)[0]) + 1
            col = int(np.searchsorted(cls_off, i, side="right")) - 1
            fail(kind, f"array 'col_classes' must be strictly increasing within a column; "
                        f"got col_classes[{i - 1}] = {classes[i - 1]}, col_classes[{i}] = "
                        f"{classes[i]} (column {col})")

    # -- input quantizer
    center = req("in_center", np.float64, (None,))
    d = center.shape[0]
    if d < 1:
        fail(kind, "array 'in_center' must have at least one feature; got shape (0,)")
    check_finite(kind, "in_center", center)
    shift = req("in_shift", np.int8, (d,))

    # -- packed binary code
    if n_sym == 2:
        words = (m + 63) // 64
        bits = req("code_bits", np.uint64, (c, words))
        used = req("code_used", np.uint64, (c, words))
        check_equal(kind, "code_bits", bits, pack_rows(code == 1),
                    "'code' == 1 packed (bit j % 64 of word j // 64)")
        check_equal(kind, "code_used", used, pack_rows(code >= 0),
                    "'code' >= 0 packed (bit j % 64 of word j // 64)")
        out.update(code_bits=bits, code_used=used)
    else:
        for name in ("code_bits", "code_used"):
            if name in names:
                fail(kind, f"array {name!r} is only for binary codes (n_symbols = 2); "
                            f"n_symbols is {n_sym}")

    learner = check_scalar(container, "learner_kind", np.uint8)
    if learner not in ECOC_LEARNER_KINDS:
        fail(kind, f"array 'learner_kind' must be one of {sorted(ECOC_LEARNER_KINDS)} "
                    f"(1 = linear, 2 = tree); got {learner}")
    learner = ECOC_LEARNER_KINDS[learner]
    other = ECOC_TREE_ARRAYS if learner == "linear" else ECOC_LINEAR_ARRAYS
    extra = sorted(names.intersection(other))
    if extra:
        fail(kind, f"arrays {extra} do not belong to {learner} learners (learner_kind)")
    if learner == "linear":
        out.update(_check_linear(container, m, d, n_cls))
    else:
        out.update(_check_trees(container, m, d, n_cls, cls_off, classes, n_sym))

    meta_values = {"learner_kind": learner}
    lengths = {"classes": c}
    if learner == "linear":
        lengths["weight_shifts"] = m
    check_meta(container, ECOC_META, lengths=lengths, values=meta_values)
    out.update(code=code, unused_count=unused, n_symbols=n_sym, col_n_cls=n_cls,
               col_classes=classes, col_cls_offset=cls_off, in_center=center, in_shift=shift,
               learner_kind=learner, c=c, m=m, d=d)
    return out


def _check_linear(container, m, d, n_cls):
    kind, req = "ecoc", container.require
    w = req("lin_weights", np.int32, (d, None))
    k = w.shape[1]
    b = req("lin_bias", np.int64, (k,))
    n_out = req("col_n_out", np.int32, (m,))
    out_off = req("col_out_offset", np.int32, (m,))
    n_out64, n_cls64 = n_out.astype(np.int64), n_cls.astype(np.int64)
    # 0 scores: constant learner (one symbol); 1: sign of one score (two symbols);
    # else one score per symbol (argmax)
    ok = np.where(n_cls64 == 1, n_out64 == 0,
                  (n_out64 == n_cls64) | ((n_cls64 == 2) & (n_out64 == 1)))
    if not ok.all():
        j = int(np.flatnonzero(~ok)[0])
        fail(kind, f"array 'col_n_out' must be 0 for a constant learner (col_n_cls 1), 1 or 2 "
                    f"for two symbols, col_n_cls otherwise; got col_n_out[{j}] = {n_out[j]} "
                    f"with col_n_cls[{j}] = {n_cls[j]}")
    if int(n_out64.sum()) != k:
        fail(kind, f"array 'col_n_out' must sum to the {k} columns of 'lin_weights'; got "
                    f"{int(n_out64.sum())}")
    check_equal(kind, "col_out_offset", out_off, exclusive_cumsum(n_out64),
                "the running sum of 'col_n_out' (exclusive)")
    # |score| <= |bias| + 32768 * sum_f |w[f, o]| must fit the int64 accumulator
    if k:
        col_abs = np.abs(w.astype(np.int64)).sum(axis=0).tolist()
        for o, (s, bo) in enumerate(zip(col_abs, b.tolist())):
            bound = abs(bo) + Q_ABS_MAX * s
            if bound > INT64_MAX:
                fail(kind, f"arrays 'lin_weights' and 'lin_bias': score {o} can reach "
                            f"|lin_bias| + 32768 * sum_f |lin_weights[f, {o}]| = {bound} > "
                            "2**63 - 1 (int64 accumulator overflow)")
    return {"lin_weights": w, "lin_bias": b, "col_n_out": n_out, "col_out_offset": out_off}


def score_arithmetic(lin_weights, lin_bias):
    """``"int32"``, ``"w16"`` or ``"int64"``: the narrowest exact arithmetic of
    linear scores ``B[o] + sum_f q_f W[f, o]`` over every int16 frame
    (:meth:`ECOCDevice.score_arithmetic`; the C runtime's choice at open).

    >>> score_arithmetic(np.array([[3], [-2]], np.int32), np.array([7], np.int64))
    'int32'
    >>> score_arithmetic(np.array([[40000]], np.int32), np.array([0], np.int64))
    'int64'
    """
    W = np.asarray(lin_weights, np.int64)
    if W.size and (W.min() < -32768 or W.max() > 32767):
        return "int64"
    bound = (np.abs(np.asarray(lin_bias, np.int64)).astype(object)
             + Q_ABS_MAX * np.abs(W).sum(axis=0).astype(object))
    return "int32" if all(int(v) <= 2**31 - 1 for v in bound) else "w16"


def _check_trees(container, m, d, n_cls, cls_off, classes, n_sym):
    """Tree learners: the node arrays of kind ``forest`` (its rules 3, 4 and 6-8:
    narrow dtypes, every tree in preorder right after the previous one, every
    node referenced once and forward, at most 64 levels, features below ``d``)
    with one tree per column and the N symbols as the leaves (a reference ``r <
    N`` is symbol ``r``), plus: every leaf a tree can reach is a symbol of its
    column's learner."""
    kind = "ecoc"
    root, feat, thr, left, right = check_node_arrays(container, kind, m)
    depth = check_node_layout(kind, root, feat, left, right, n_sym, d)
    # the symbols each tree reaches: its root if a leaf, else the leaf references of
    # its nodes [start, next tree's start) (the layout is checked: trees are consecutive)
    root64 = root.astype(np.int64)
    n = feat.shape[0]
    inner = np.flatnonzero(root64 >= n_sym)
    starts = root64[inner] - n_sym
    owner = np.full(n, -1, np.int64)
    if inner.size:
        tree_of = np.searchsorted(starts, np.arange(n), side="right") - 1
        owner = inner[tree_of]
    cols = np.concatenate([np.flatnonzero(root64 < n_sym), owner, owner])
    refs = np.concatenate([root64[root64 < n_sym], left.astype(np.int64),
                           right.astype(np.int64)])
    where = ["tree_root"] * int((root64 < n_sym).sum()) + ["node_left"] * n + ["node_right"] * n
    index = np.concatenate([np.flatnonzero(root64 < n_sym), np.arange(n), np.arange(n)])
    is_leaf = refs < n_sym
    col_owner = np.repeat(np.arange(m, dtype=np.int64), n_cls.astype(np.int64))
    valid = col_owner * n_sym + classes.astype(np.int64)
    ok = ~is_leaf | np.isin(cols * n_sym + refs, valid)
    if not ok.all():
        k = int(np.flatnonzero(~ok)[0])
        j = int(cols[k])
        syms = classes[cls_off[j]:cls_off[j] + n_cls[j]].tolist()
        fail(kind, f"array {where[k]!r} must reach only symbols of its column's learner; got "
                    f"{where[k]}[{int(index[k])}] = {int(refs[k])} (symbol {int(refs[k])}) in "
                    f"the tree of column {j} (symbols {syms})")
    return {"tree_root": root, "node_feature": feat, "node_threshold": thr,
            "node_left": left, "node_right": right, "tree_depth": depth}


def load_ecoc(source):
    """Read and validate an ``ecoc`` container (path, bytes or Container) -> ECOCDevice."""
    container = source if isinstance(source, Container) else read_container(source)
    return ECOCDevice(container)


register_kind(ECOCDevice)
