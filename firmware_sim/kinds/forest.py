"""Tree forests on the device: compact preorder trees, a shared leaf table, a vote.

A forest (scikit-learn's ``RandomForestClassifier``, ``ExtraTreesClassifier``
or a single ``DecisionTreeClassifier``, exported by :mod:`export.forest`) is
stored as structure-of-arrays in narrow typed arrays chosen from the image
(``docs/container_format.md``, "Model kind forest"):

* **decision nodes only** (``node_feature``, ``node_threshold``,
  ``node_left``, ``node_right``): trees one after the other, each in
  preorder. A child reference ``r`` names leaf ``r`` when ``r < L`` (the
  number of leaves) and otherwise the decision node ``i + 1 + (r - L)`` after
  node ``i``: references only point forward, a left child that is a node is
  always the next node (``r == L``) and relative jumps stay small, so the
  references fit ``uint8`` for most small forests. Feature ids are
  ``uint8``/``uint16``/``uint32``, thresholds ``int16``: a decision node costs
  1 + 2 + 2 x 1 = 5 bytes for a small forest, 8 at most below 65,536 features
  and leaves (emlearn 0.23's node is 8 bytes);
* **leaves in a shared table**: with probability leaves (``leaf="proba"``, the
  soft vote of ``RandomForestClassifier.predict``) ``leaf_value`` holds each
  distinct leaf once, as per-class probabilities quantized to ``uint8`` or
  ``uint16`` (``round(p * (2**bits - 1))``); with class leaves
  (``leaf="class"``, the hard vote, the smallest form) there is no table: the
  leaf id is the class.

Inference: every tree is walked on the int16 frame (go left iff ``q[feature]
<= threshold``; :func:`_forest_leaves`), the leaves vote (``votes[c] = sum_k
leaf_value[leaf_k, c]``, or one vote per tree for its class) and the label is
the first class with the most votes. ``device.infer`` returns the leaf id of
every tree (``decision["leaves"]``, the intermediate results) and the votes
(``decision["votes"]``).

Frames are int16 fixed-point features with the ECOC quantizer
(:func:`firmware_sim.ecoc.quantize_inputs`: ``q = clip(rint((x - center)
2**shift), -32767, 32767)``): the exporter fits it on the thresholds, so a
device comparison equals the float comparison except where a feature lies
within one quantizer step of a threshold.

Imports numpy and numba only.
"""

from types import MappingProxyType

import numpy as np

from .. import accounting
from .._validation import check_finite, check_meta, check_scalar, fail
from ..artifact import Container, read_container
from ..device import Device, Inference, register_kind
from ..errors import ContainerError, DeviceError, FrameError
from .ecoc import quantize_inputs
from ._kernels.forest import _forest_leaves, _forest_votes
from ._trees import (MAX_DEPTH, _require_unsigned, check_node_arrays,  # noqa: F401
                     check_node_layout, count_visits, narrowest_unsigned)

__all__ = ["ForestDevice", "load_forest", "make_forest_arrays", "check_forest",
           "check_node_arrays", "check_node_layout",
           "MAX_DEPTH", "MAX_CLASSES", "LEAF_KINDS", "narrowest_unsigned"]

KIND = "forest"
#: Classes a forest may have (``n_classes``).
MAX_CLASSES = 65535
#: ``meta["leaf"]`` values: class leaves (hard vote) or probability leaves (soft vote).
LEAF_KINDS = ("class", "proba")
_LEAF_DTYPES = (np.dtype(np.uint8), np.dtype(np.uint16))
NODE_ARRAYS = ("node_feature", "node_threshold", "node_left", "node_right")
FOREST_META = {"leaf": "str", "estimator": "str", "n_estimators": "int", "leaf_bits": "int",
               "tie_rule": "str", "max_depth": "int"}
def _as_ints(a, name, ndim):
    arr = np.asarray(a)
    if arr.ndim != ndim:
        raise ContainerError(f"forest arrays: {name} must be {ndim}-dimensional; got shape "
                             f"{arr.shape}")
    if arr.size and not (np.issubdtype(arr.dtype, np.integer) or arr.dtype == bool):
        raise ContainerError(f"forest arrays: {name} must hold integers; got dtype {arr.dtype}")
    return arr.astype(np.int64)


def make_forest_arrays(feature, threshold, left, right, root, n_classes, in_center, in_shift,
                       leaf_value=None):
    """The named arrays of a ``forest`` container, each in its narrowest dtype.

    Parameters
    ----------
    feature, threshold, left, right : int array-likes (n,)
        The decision nodes in the container's preorder layout (module
        docstring): feature ids, int16 thresholds, child references.
    root : int array-like (T,)
        Root reference of every tree.
    n_classes : int
    in_center : float array (d,), in_shift : int array (d,)
        Input quantizer (:func:`firmware_sim.ecoc.quantize_inputs`).
    leaf_value : int array (L, n_classes) or None
        Quantized per-class probabilities of the leaves (uint8 values when
        they all fit, else uint16); None: class leaves (the leaf id is the
        class).

    Returns
    -------
    dict of str to ndarray
        Checked by :meth:`ForestDevice.check_container` when a container holds
        them.

    Examples
    --------
    >>> a = make_forest_arrays([0], [3], [0], [1], [2], 2, [0.0], [0])
    >>> {k: v.dtype.name for k, v in a.items() if k.startswith("node")}
    {'node_feature': 'uint8', 'node_threshold': 'int16', 'node_left': 'uint8', 'node_right': 'uint8'}
    """
    feature, left, right = (_as_ints(v, k, 1) for v, k in ((feature, "feature"),
                                                              (left, "left"), (right, "right")))
    threshold = _as_ints(threshold, "threshold", 1)
    root = _as_ints(root, "root", 1)
    n = feature.shape[0]
    if threshold.shape != (n,) or left.shape != (n,) or right.shape != (n,):
        raise ContainerError("forest arrays: feature, threshold, left and right must have one "
                             "entry per decision node")
    if threshold.size and (threshold.min() < -32768 or threshold.max() > 32767):
        raise ContainerError("forest arrays: thresholds must fit int16")
    for name, arr in (("feature", feature), ("left", left), ("right", right), ("root", root)):
        if arr.size and arr.min() < 0:
            raise ContainerError(f"forest arrays: {name} must hold values >= 0")
    refs = np.concatenate([left, right])
    arrays = {
        "n_classes": np.array([int(n_classes)], np.int32),
        "in_center": np.ascontiguousarray(in_center, dtype=np.float64),
        "in_shift": np.ascontiguousarray(_as_ints(in_shift, "in_shift", 1), dtype=np.int8),
        "tree_root": root.astype(narrowest_unsigned(root.max(initial=0))),
        "node_feature": feature.astype(narrowest_unsigned(feature.max(initial=0))),
        "node_threshold": threshold.astype(np.int16),
    }
    ref_dt = narrowest_unsigned(refs.max(initial=0))
    arrays["node_left"] = left.astype(ref_dt)
    arrays["node_right"] = right.astype(ref_dt)
    if leaf_value is not None:
        lv = _as_ints(leaf_value, "leaf_value", 2)
        if lv.size and (lv.min() < 0 or lv.max() > 65535):
            raise ContainerError("forest arrays: leaf values must be in [0, 65535]")
        arrays["leaf_value"] = lv.astype(np.uint8 if lv.max(initial=0) <= 255 else np.uint16)
    return arrays


def check_forest(container):
    """The rules of kind ``forest`` (``docs/container_format.md``); returns the
    validated arrays by name plus ``d``, ``n_classes``, ``n_leaves``, ``leaf``
    (``"class"`` or ``"proba"``) and ``depth`` (decision levels per tree)."""
    if container.kind != KIND:
        raise ContainerError(f"container kind is {container.kind!r}; expected {KIND!r}")
    req = container.require
    # rule 1: classes
    n_classes = check_scalar(container, "n_classes", np.int32, 1, MAX_CLASSES)
    # rule 2: the input quantizer (host side)
    center = req("in_center", np.float64, (None,))
    d = center.shape[0]
    if d < 1:
        fail(KIND, "array 'in_center' must have at least one feature; got shape (0,)")
    check_finite(KIND, "in_center", center)
    shift = req("in_shift", np.int8, (d,))
    # rule 3: trees; rule 4: the decision nodes
    root, feat, thr, left, right = check_node_arrays(container, KIND)
    n_trees = root.shape[0]
    if n_trees < 1:
        fail(KIND, "array 'tree_root' must have at least one tree; got shape (0,)")
    # rule 5: the leaves
    if "leaf_value" in container.arrays:
        lv = _require_unsigned(container, "leaf_value", _LEAF_DTYPES, (None, n_classes))
        n_leaves = lv.shape[0]
        if n_leaves < 1:
            fail(KIND, "array 'leaf_value' must have at least one leaf; got shape "
                        f"{lv.shape}")
        leaf = "proba"
    else:
        lv, n_leaves, leaf = None, n_classes, "class"
    # rules 6-8: features, references and the preorder layout, in one pass
    depth = check_node_layout(KIND, root, feat, left, right, n_leaves, d)
    check_meta(container, FOREST_META, lengths={"classes": n_classes},
               values={"leaf": leaf})
    if lv is not None and "leaf_bits" in container.meta and \
            container.meta["leaf_bits"] != 8 * lv.dtype.itemsize:
        fail(KIND, f"metadata key 'leaf_bits' must be {8 * lv.dtype.itemsize} (the dtype of "
                    f"'leaf_value'); got {container.meta['leaf_bits']!r}")
    return {"n_classes": n_classes, "in_center": center, "in_shift": shift, "tree_root": root,
            "node_feature": feat, "node_threshold": thr, "node_left": left,
            "node_right": right, "leaf_value": lv, "d": d, "n_leaves": int(n_leaves),
            "leaf": leaf, "depth": depth}


class ForestDevice(Device):
    """A tree forest as a microcontroller runs it (read from a ``forest`` container).

    Open one with :func:`firmware_sim.load`. ``encode(X)`` quantizes float
    features to int16 frames; ``infer(frames)`` walks every tree, votes and
    returns the first class with the most votes (class indices ``0 .. C-1``;
    ``meta["classes"]`` names them), with ``decision["leaves"]`` (the leaf id
    each tree reached, (t, T)) and ``decision["votes"]`` ((t, C), int64).

    Attributes
    ----------
    n_trees, n_classes, n_features, n_nodes, n_leaves : int
    leaf : {"class", "proba"}
        Class leaves (hard vote) or probability leaves (soft vote).
    depth : ndarray of int64 (n_trees,)
        Decision levels of every tree.
    """

    kind = KIND
    kind_code = 4
    frame_dtype = np.dtype(np.int16)
    #: Noisy compute at the tree outputs: each tree's leaf is replaced by a
    #: uniformly random other leaf (another class, with class leaves).
    default_site = "intermediate"
    #: C runtime files in ``firmware_sim/c`` and the ``ec_config.h`` switch.
    c_sources = ("ec_forest.c",)
    c_switch = "EC_WITH_FOREST"
    #: (flash, RAM) bytes the C runtime adds beside the image and the model's
    #: buffers (code and constants; worst-case stack of open + one inference),
    #: measured with ``edgecode firmware --build`` at -O2, this kind only:
    #: cortex-m0plus for ``cortex-m0``, cortex-m4 for ``cortex-m4``; the
    #: largest over node widths (the walk compiled in differs by up to 19 B)
    #: (``benchmarks/README.md``, "Tree forests"); on AVR (-Os) and RV32 the probe's
    #: flash minus the image and the peak stack (``python benchmarks/bench_firmware.py
    #: --targets atmega328p,atmega2560,rv32imac --no-emlearn``).
    runtime_bytes = MappingProxyType({"cortex-m0": (4502, 744), "cortex-m4": (3846, 744),
                                      "atmega328p": (6963, 508), "atmega2560": (7099, 466),
                                      "rv32imac": (4781, 752)})

    def __init__(self, container):
        if not isinstance(container, Container):
            raise TypeError(f"container must be a Container; got {type(container).__name__}")
        v = self.check_container(container)
        self.container = container
        self.meta = container.meta
        self.n_classes = int(v["n_classes"])
        self.n_features = int(v["d"])
        self.in_center, self.in_shift = v["in_center"], v["in_shift"]
        self.n_leaves = v["n_leaves"]
        self.leaf = v["leaf"]
        self.depth = v["depth"]
        # widened once for the kernels (the image keeps its narrow dtypes)
        self._feature = v["node_feature"].astype(np.int64)
        self._threshold = v["node_threshold"].astype(np.int32)
        self._left = v["node_left"].astype(np.int64)
        self._right = v["node_right"].astype(np.int64)
        self._root = v["tree_root"].astype(np.int64)
        self._values = (np.zeros((0, 0), np.int64) if v["leaf_value"] is None
                        else v["leaf_value"].astype(np.int64))
        self._stage_dtype = np.dtype(np.int16 if self.n_leaves <= 32767 else np.int32)
        self._keep = None          # trees erased by a detected upset leave the vote

    @classmethod
    def erasure_owners(cls, container):
        """Image protection's fallback: a detected upset of ``node_threshold`` erases
        the tree that holds the node (it leaves the vote: the forest votes with
        the other trees); one of ``leaf_value`` reads as 0 (that leaf adds nothing
        to any class)."""
        out = {}
        a = container.arrays
        if "leaf_value" in a:
            out["leaf_value"] = np.full(a["leaf_value"].size, -1, np.int64)
        if "node_threshold" in a and "tree_root" in a:
            n = a["node_threshold"].size
            n_leaves = a["leaf_value"].shape[0] if "leaf_value" in a and \
                a["leaf_value"].ndim == 2 else int(a["n_classes"].reshape(-1)[0]) \
                if "n_classes" in a and a["n_classes"].size else 0
            roots = a["tree_root"].astype(np.int64).reshape(-1)
            starts = np.where(roots >= n_leaves, roots - n_leaves, -1)
            firsts = [(int(s), k) for k, s in enumerate(starts) if 0 <= s < n]
            owner = np.full(n, -1, np.int64)
            # preorder: tree k's nodes run from its first node to the next tree's first
            firsts.sort()
            for (s0, k), nxt in zip(firsts, firsts[1:] + [(n, -1)]):
                owner[s0:nxt[0]] = k
            out["node_threshold"] = owner
        return out

    def erase(self, units):
        """Drop the erased trees from the vote."""
        keep = np.ones(self.n_trees, bool)
        keep[np.asarray(units, np.int64)] = False
        self._keep = keep

    @classmethod
    def check_container(cls, container):
        """Rules of kind ``forest`` (:func:`check_forest`, ``docs/container_format.md``),
        raising :class:`~firmware_sim.errors.ContainerError`; returns the validated
        arrays."""
        super().check_container(container)
        return check_forest(container)

    @property
    def n_trees(self):
        return int(self._root.shape[0])

    @property
    def n_nodes(self):
        return int(self._feature.shape[0])

    def __repr__(self):
        return (f"ForestDevice({self.leaf} leaves, trees={self.n_trees}, "
                f"nodes={self.n_nodes}, classes={self.n_classes}, "
                f"features={self.n_features})")

    # ------------------------------------------------------------ the contract
    @property
    def stage_symbols(self):
        """Alphabet of the intermediate results: the leaf ids (the classes with
        class leaves)."""
        return self.n_leaves

    @property
    def frame_width(self):
        """int16 features per frame."""
        return self.n_features

    def encode(self, X):
        """Host side: float features -> int16 frames (the ECOC quantizer)."""
        return quantize_inputs(X, self.in_center, self.in_shift)

    def stage(self, frames):
        """Intermediate results: the leaf id every tree reaches, (t, T) (int16, or
        int32 above 32,767 leaves)."""
        q = self.check_frames(frames)
        out = np.empty((q.shape[0], self.n_trees), np.int32)
        _forest_leaves(q, self._feature, self._threshold, self._left, self._right, self._root,
                       self.n_leaves, out)
        return out.astype(self._stage_dtype, copy=False)

    def vote(self, leaves):
        """``(labels, votes)`` of the trees' leaf ids (t, T): the device's vote."""
        leaves = np.asarray(leaves)
        if leaves.ndim != 2 or leaves.shape[1] != self.n_trees:
            raise FrameError(f"forest leaves must have shape (n_samples, {self.n_trees}); got "
                             f"{leaves.shape}")
        if leaves.size and (leaves.min() < 0 or leaves.max() >= self.n_leaves):
            raise FrameError(f"forest leaves must be leaf ids in [0, {self.n_leaves})")
        if self._keep is not None:
            leaves = leaves[:, self._keep]
        leaves = np.ascontiguousarray(leaves, dtype=np.int32)
        votes = np.empty((leaves.shape[0], self.n_classes), np.int64)
        labels = np.empty(leaves.shape[0], np.int64)
        _forest_votes(leaves, self._values, self.leaf == "class", votes, labels)
        return labels, votes

    def finish(self, intermediate):
        """Labels of the trees' leaf ids (the vote)."""
        return self.vote(intermediate)[0]

    def infer(self, frames):
        """Device side: walk every tree on int16 frames, vote, take the first best class.

        Returns an :class:`~firmware_sim.device.Inference`: class indices,
        ``decision["leaves"]`` (leaf ids (t, T)) and ``decision["votes"]``
        (int64 (t, C): number of trees, or summed quantized probabilities).
        """
        leaves = self.stage(frames)
        labels, votes = self.vote(leaves)
        return Inference(labels, {"leaves": leaves, "votes": votes})

    def labels(self, frames):
        return self.vote(self.stage(frames))[0]

    # ---------------------------------------------- what shared code asks of a kind
    def cost_counts(self, frames=None):
        """The C runtime's work (``ec_forest.c``) for the cost model. Inference:
        ``trees`` walked, ``nodes_visited`` (counted on the frames or, without,
        every tree's depth), the vote (``vote_adds``: one per tree with class
        leaves, one per class and tree with probability leaves) and the
        ``classes`` cleared and scanned. Open: the image
        (``profiles.image_counts``) and its ``nodes`` and ``leaf_values`` (the
        one-pass layout check)."""
        from ..profiles import image_counts

        T, C = self.n_trees, self.n_classes
        votes = T if self.leaf == "class" else T * C
        infer = {"call": 1, "trees": T, "nodes_visited": int(np.asarray(self.depth).sum()),
                 "vote_adds": votes, "classes": C}
        opened = {**image_counts(self.container), "trees": T, "nodes": self.n_nodes,
                  "leaf_values": int(self._values.size)}
        if frames is None:
            return {"open": opened, "infer": infer}
        q = self.check_frames(frames)
        t = q.shape[0]
        out = {key: np.full(t, float(v)) for key, v in infer.items()}
        visits = count_visits(q, self._root, self._feature, self._threshold, self._left,
                              self._right, self.n_leaves)
        out["nodes_visited"] = visits
        return {"open": opened, "infer": out}

    def decision_layout(self):
        """The leaf id every tree reached, then the votes of the classes."""
        return (("leaves", self.n_trees), ("votes", self.n_classes))

    def c_defines(self):
        """``ec_config.h`` settings of a firmware written for this model alone: the
        one walk its node widths need (``ec_forest.c``; an image of other widths
        is then refused with ``EC_ERR_KIND``)."""
        a = self.container.arrays
        return {"EC_FOREST_FEATURE_BYTES": a["node_feature"].dtype.itemsize,
                "EC_FOREST_REF_BYTES": a["node_left"].dtype.itemsize}

    def c_inline(self, stamp, form="code"):
        """The forest as C code (``edgecode firmware --trees inline``, form
        ``"code"``; :mod:`firmware_sim.c_inline`): one function per tree
        (nested ``if (q[f] <= t)``, leaf ids returned as constants, the
        narrowest fast type that holds them), called through a table in ROM;
        or (``--trees arrays``, form ``"arrays"``) the node arrays of the image
        compiled in as constants and walked by one loop, the smallest form; the votes in the
        narrowest type that holds the largest sum (``uint8_t`` for up to 255
        trees with class leaves), the probability table (if any) as a constant
        array, the quantizer's constants for ``ec_quantize``. ``ec_infer``
        writes the same decision integers as the table form (every tree's
        leaf id, then the votes) and the first class with the most votes."""
        from ..c_inline import api_source, fast_uint, least_uint, quantizer_c, trees_c

        if form not in ("code", "arrays"):
            raise DeviceError(f"form must be 'code' or 'arrays'; got {form!r}")
        T, C, L, d = self.n_trees, self.n_classes, self.n_leaves, self.n_features
        leaf_t = fast_uint(max(L - 1, 0))
        idx_t = fast_uint(max(T, C))
        if self.leaf == "class":
            vote_t = least_uint(T)
        else:
            vote_t = least_uint(T * int(self._values.max(initial=0)))
        a = self.container.arrays
        q_body, quantize = quantizer_c(a["in_center"], a["in_shift"])
        parts = [f"#define EC_INLINE_TREES {T}u\n#define EC_INLINE_CLASSES {C}u\n",
                 f"typedef {leaf_t} ec_inline_leaf;\n", q_body]
        if self.leaf == "proba":
            lv = a["leaf_value"]
            lt = "uint8_t" if lv.dtype.itemsize == 1 else "uint16_t"
            parts.append(f"/* the shared leaf table: quantized probabilities, one row per "
                         f"distinct leaf */\nstatic const EC_ROM {lt} ec_inline_leaf_value"
                         f"[{L}][{C}] = {{")
            parts.append(",\n".join("    {" + ", ".join(str(int(v)) for v in row) + "}"
                                    for row in lv) + "\n};\n")
        trees, call = trees_c(a, L, form)
        parts.append(trees)
        if self.leaf == "class":
            vote = "        votes[leaf]++;\n"
        else:
            vote = ("        for (c = 0u; c < EC_INLINE_CLASSES; c++)\n"
                    "            votes[c] += ec_inline_leaf_value[leaf][c];\n")
        # decision NULL: the label only (no T + C int64 to write: on AVR a fifth of
        # the inference); two loops, so that neither tests it per tree
        vote_leaf = vote.replace("leaf", call) \
            if self.leaf == "class" else None
        label_only = ("        for (k = 0u; k < EC_INLINE_TREES; k++)\n"
                      "    " + vote_leaf) if vote_leaf else \
            ("        for (k = 0u; k < EC_INLINE_TREES; k++) {\n"
             f"            const ec_inline_leaf leaf = {call};\n"
             "    " + vote.replace("\n        ", "\n            ") + "        }\n")
        infer = (f"    {vote_t} votes[EC_INLINE_CLASSES];\n"
                 f"    {idx_t} k, c, best = 0u;\n"
                 "    for (c = 0u; c < EC_INLINE_CLASSES; c++)\n"
                 "        votes[c] = 0u;\n"
                 "    if (decision == NULL) {\n" + label_only +
                 "        for (c = 1u; c < EC_INLINE_CLASSES; c++)\n"
                 "            if (votes[c] > votes[best])\n"
                 "                best = c;\n"
                 "        *label = (int32_t)best;\n"
                 "        return EC_OK;\n"
                 "    }\n"
                 "    {\n"
                 "        for (k = 0u; k < EC_INLINE_TREES; k++) {\n"
                 f"            const ec_inline_leaf leaf = {call};\n"
                 "            decision[k] = (int64_t)leaf;\n"
                 "    " + vote.replace("\n        ", "\n            ") +
                 "        }\n"
                 "    }\n"
                 "    for (c = 0u; c < EC_INLINE_CLASSES; c++) {\n"
                 "        decision[EC_INLINE_TREES + c] = (int64_t)votes[c];\n"
                 "        if (votes[c] > votes[best])\n"
                 "            best = c;\n"
                 "    }\n"
                 "    *label = (int32_t)best;\n"
                 "    return EC_OK;\n")
        header = ("/*\n * ec_inline.c - a tree forest as code (generated by `edgecode firmware "
                  f"--trees {'inline' if form == 'code' else 'arrays'}`;\n * firmware_sim/kinds/forest.py, ForestDevice.c_inline): "
                  f"{T} trees, {self.n_nodes} decision\n * nodes, {L} leaves ({self.leaf}), "
                  f"{C} classes, {d} features. The C API of edgecode_rt.h for\n * this model "
                  "alone, bit for bit as firmware_sim's device.infer; ec_model_open\n"
                  " * accepts this model's 8-byte stamp (model_image.c) only.\n */")
        return api_source(kind_code=self.kind_code, header=header, stamp_bytes=stamp,
                          n_features=d, frame_width=d, decision_len=T + C,
                          workspace_bytes=0, body="\n".join(parts), infer=infer,
                          class_names=self.container.class_names, quantize=quantize)

    def workspace_bytes(self):
        """Upper bound of the C ``ec_workspace_bytes`` (the runtime needs none:
        leaves and votes go straight into the decision buffer)."""
        return 8

    # ---------------------------------------------------------------- resources
    def resources(self, X=None, y=None):
        """Flash, RAM and operations of one inference.

        Returns
        -------
        dict
            ``flash_bytes`` (the container), ``parameter_bytes`` (the arrays the
            inference reads), ``bytes_per_node`` (of the node arrays),
            ``ram_bytes`` (votes, a node index, a reference, the best class:
            frames are read in place), ``ops_per_inference``
            (``node_comparisons_worst``: the trees' depths summed,
            ``vote_additions``, ``vote_comparisons``).
        """
        c = self.container
        names = ["tree_root", *NODE_ARRAYS] + (["leaf_value"] if self.leaf == "proba" else [])
        node_bytes = accounting.array_bytes(c, NODE_ARRAYS)
        per_vote = 1 if self.leaf == "class" else self.n_classes
        ops = {"node_comparisons_worst": int(self.depth.sum()),
               "vote_additions": self.n_trees * per_vote,
               "vote_comparisons": max(self.n_classes - 1, 0)}
        ops["total"] = sum(ops.values())
        ram = accounting.ram_model(0, scalars={"votes_int64": 8 * self.n_classes,
                                               "node_index": 4, "reference": 4,
                                               "best_class": 2})
        return {
            "kind": KIND,
            "leaf": self.leaf,
            "n_trees": self.n_trees,
            "n_nodes": self.n_nodes,
            "n_leaves": self.n_leaves,
            "n_classes": self.n_classes,
            "max_depth": int(self.depth.max(initial=0)),
            "flash_bytes": c.nbytes,
            "parameter_bytes": accounting.array_bytes(c, names),
            "bytes_per_node": node_bytes / self.n_nodes if self.n_nodes else 0.0,
            **ram,
            "ops_per_inference": ops,
        }


def load_forest(source):
    """Read and validate a ``forest`` container (path, bytes or Container) -> ForestDevice."""
    container = source if isinstance(source, Container) else read_container(source)
    return ForestDevice(container)


register_kind(ForestDevice)
