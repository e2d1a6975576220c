"""The search space of :func:`export.budget.search`: data, configurations,
screening before training, and fitting one configuration.

A configuration is a plain dict (what the JSON report prints under
``"config"``), one of three kinds:

* ``{"kind": "protected_nb", "plan": "uniform" | "greedy", "budget_bits": B}``:
  binary naive Bayes whose feature j is sent ``2 r_j + 1`` times, the ``r``
  spread evenly (uniform) or by seed 000's Algorithm 2 (greedy, planned on
  training rows at the fault's per-bit wire error); ``B = 0`` is the
  unprotected model (plan ``"none"``). Binary features and two classes only.
* ``{"kind": "ecoc", "design": D, "N": N, "n_columns": L, "learner": "linear"
  | "tree", "max_depth": d}``: an ECOC ensemble (Hamming decoding) whose code
  is ``edgecode.ecoc.make_code(D, c, L, N=N, random_state=seed)``; linear
  learners are ridge classifiers (closed form, the fastest to fit), trees
  are depth-limited CART trees.
* ``{"kind": "ssbc", "n_bits": k, "n_anchors": m, "sketch_size": ell,
  "table_rows": T, "knn_k": K}``: SSBC codes (a Frequent Directions sketch
  of ``ell = max(k + 1, min(2 k, m))`` rows) with a labelled k-NN table of
  ``T`` training rows (stratified).

:func:`screen` gives a lower bound of a configuration's image flash and
model RAM **before anything is trained**, from the container the device
would read, built with placeholder values of the right shapes (exact for
naive Bayes, linear ECOC and SSBC up to the metadata; trees are counted at
one split per column, the least a trained tree can have). A configuration
whose lower bound exceeds the profile or ``max_flash`` is never trained.
"""

import math
from dataclasses import dataclass, field, fields

import numpy as np

__all__ = ["Task", "SearchSpace", "load_task", "configurations", "config_label", "screen",
           "fit_config", "Fitted", "KINDS", "LEARNERS", "EXACT_MAX_WORDS"]

#: Model kinds the search covers, in the order configurations are listed.
KINDS = ("protected_nb", "ecoc", "ssbc")
#: ECOC learner kinds.
LEARNERS = ("linear", "tree")
#: Designs the default space searches (``N`` applies to ``"nary"`` only).
DEFAULT_DESIGNS = ("one_vs_all", "dense_random", "nary", "bch", "annealed")
#: Largest ``N ** L`` of an automatic code length: the exact decoding
#: probability (``edgecode.ecoc.decoding_probabilities``) covers up to 2**22
#: received words; 2**20 keeps each prediction under a second.
EXACT_MAX_WORDS = 2 ** 20


@dataclass
class Task:
    """The rows a search trains on and measures on.

    Attributes
    ----------
    name : str
    X_train, X_test : ndarray of float64
    y_train, y_test : ndarray of int64
        Class indices ``0 .. c-1`` (``classes[k]`` names class k).
    classes : ndarray
    binary : bool
        Every feature is 0/1 and there are two classes (naive Bayes applies).
    how : str
        How train and test rows were chosen.
    """

    name: str
    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    classes: np.ndarray
    binary: bool
    how: str
    source: str = ""
    options: dict = field(default_factory=dict)

    @property
    def n_classes(self):
        return int(len(self.classes))

    @property
    def n_features(self):
        return int(self.X_train.shape[1])

    @property
    def meta(self):
        """What an artifact trained on this task records, so that ``simulate``,
        ``campaign`` and ``upsets`` find the same rows without ``--data``."""
        from export.data import dataset_reference

        src, opts = dataset_reference(self.source or self.name, self.options)
        return {"dataset": src, **({"dataset_options": opts} if opts else {})}

    def labels(self, indices):
        """The true class labels of class indices."""
        return self.classes[np.asarray(indices, np.int64)]


def _raw(data, data_options=None):
    """(X, y, split or None, name, source, options) of a dataset name, a CSV path or a tuple."""
    if isinstance(data, (str, bytes)) or hasattr(data, "__fspath__"):
        from export.data import BINARY_SETS, TABLE_SETS, load_table
        t = load_table(str(data), **(data_options or {}))
        name = t.source if t.source in TABLE_SETS + BINARY_SETS else t.name
        return t.X, t.y, t.split, name, t.source, t.options
    if isinstance(data, (tuple, list)) and len(data) in (2, 3):
        X, y = data[0], data[1]
        split = data[2] if len(data) == 3 else None
        return X, y, split, "array", "", {}
    raise TypeError("data must be a dataset name (house_votes, nltcs, dna, digits, iris, wine, "
                    "breast_cancer), a CSV path, or a tuple (X, y) or (X, y, split); got "
                    f"{type(data).__name__}")


def load_task(data, *, test_size=0.3, seed=0, max_points=None, data_options=None):
    """Train and test rows of ``data`` (its own train/test split when it has one,
    else a stratified split), labels as class indices.

    Parameters
    ----------
    data : str or tuple
        A bundled name, a CSV path, ``(X, y)`` or ``(X, y, split)`` (split
        values ``"train"``/``"test"``).
    test_size : float in (0, 1)
    seed : int
    max_points : int, optional
        Keep at most this many test rows (a seeded stratified subset).
    data_options : dict, optional
        ``label``, ``ignore``, ``positive`` of a CSV (:func:`export.data.load_table`).

    Returns
    -------
    Task

    Examples
    --------
    >>> t = load_task("house_votes")
    >>> t.binary, t.n_classes, t.X_train.shape[1], len(t.X_test)
    (True, 2, 16, 131)
    """
    from sklearn.model_selection import train_test_split

    X, y, split, name, source, options = _raw(data, data_options)
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y)
    if X.ndim != 2 or X.shape[0] < 4 or X.shape[1] < 1:
        raise ValueError(f"data: X must be a 2-D array with at least 4 rows and 1 feature; got "
                         f"shape {X.shape}")
    if y.shape != (X.shape[0],):
        raise ValueError(f"data: y must have one label per row of X ({X.shape[0]}); got shape "
                         f"{y.shape}")
    if not np.isfinite(X).all():
        bad = np.argwhere(~np.isfinite(X))[0]
        raise ValueError(f"data: X[{bad[0]}, {bad[1]}] is {X[bad[0], bad[1]]}; features must "
                         "be finite")
    classes, yi = np.unique(y, return_inverse=True)
    yi = yi.reshape(-1).astype(np.int64)
    if len(classes) < 2:
        raise ValueError(f"data: needs at least 2 classes; got {len(classes)}")
    if not 0.0 < float(test_size) < 1.0:
        raise ValueError(f"test_size must be in (0, 1); got {test_size!r}")
    split = None if split is None else np.asarray(split).astype(str)
    if split is not None and {"train", "test"} <= set(split.tolist()):
        tr, te = split == "train", split == "test"
        Xtr, ytr, Xte, yte = X[tr], yi[tr], X[te], yi[te]
        how = "the data's train/test split"
    else:
        counts = np.bincount(yi)
        strat = yi if counts.min() >= 2 else None
        Xtr, Xte, ytr, yte = train_test_split(X, yi, test_size=float(test_size),
                                              random_state=seed, stratify=strat)
        how = f"{'stratified ' if strat is not None else ''}{1 - test_size:.0%}/" \
              f"{test_size:.0%} split (seed {seed})"
    if len(np.unique(ytr)) < len(classes):
        raise ValueError("data: every class needs training rows; the train split lacks "
                         f"{sorted(set(range(len(classes))) - set(np.unique(ytr).tolist()))}")
    if max_points is not None and len(Xte) > int(max_points):
        k = int(max_points)
        if k < 1:
            raise ValueError(f"max_points must be >= 1; got {max_points!r}")
        counts = np.bincount(yte, minlength=len(classes))
        strat = yte if counts[counts > 0].min() >= 2 and k >= len(classes) else None
        _, Xte, _, yte = train_test_split(Xte, yte, test_size=k, random_state=seed,
                                          stratify=strat)
        how += f", {k} test rows kept"
    binary = bool(len(classes) == 2 and np.isin(X, (0.0, 1.0)).all())
    return Task(name, Xtr, ytr, Xte, yte, classes, binary, how, source, options)


@dataclass
class SearchSpace:
    """What :func:`export.budget.search` tries.

    Parameters
    ----------
    kinds : tuple of str
        Subset of ``("protected_nb", "ecoc", "ssbc")``; naive Bayes is tried
        only on binary two-class data.
    nb_plans : tuple of str
        ``"uniform"``, ``"greedy"`` (the unprotected model is always tried).
    nb_rates : tuple of int
        Budgets ``2 n R`` bits for each ``R`` (R repetition units per feature
        on average); ``0`` gives the unprotected model.
    designs : tuple of str
        ECOC designs (``edgecode.ecoc.DESIGNS``).
    nary_N : tuple of int
        Alphabet sizes of the ``"nary"`` design (primes).
    lengths : dict or None
        Code lengths per alphabet size, e.g. ``{2: (10, 15), 3: (8,)}``;
        None: automatic (:func:`code_lengths`).
    learners : tuple of str
        ``"linear"`` (ridge classifier) and/or ``"tree"``.
    tree_depths : tuple of int
        ``max_depth`` of the tree learners.
    ssbc_bits : tuple of int
        SSBC code lengths.
    ssbc_anchors, ssbc_table_rows, knn_k : int
        SSBC anchors, k-NN table rows (stratified from the training rows, at
        most all of them) and k.

    Examples
    --------
    >>> s = SearchSpace(kinds=("ecoc",), designs=("nary",), nary_N=(3,), learners=("tree",),
    ...                 tree_depths=(2,))
    >>> [config_label(c) for c in configurations(s, n_classes=4, n_features=8)]
    ['ecoc nary N=3 L=3 tree(d=2)', 'ecoc nary N=3 L=4 tree(d=2)', 'ecoc nary N=3 L=6 tree(d=2)']
    """

    kinds: tuple = KINDS
    nb_plans: tuple = ("uniform", "greedy")
    nb_rates: tuple = (0, 1, 2, 3)
    designs: tuple = DEFAULT_DESIGNS
    nary_N: tuple = (2, 3, 5)
    lengths: object = None
    learners: tuple = LEARNERS
    tree_depths: tuple = (3, 6)
    ssbc_bits: tuple = (16, 32, 64)
    ssbc_anchors: int = 128
    ssbc_table_rows: int = 512
    knn_k: int = 5

    def __post_init__(self):
        from edgecode.ecoc.codes import DESIGNS
        from edgecode.ecoc.sylvester import is_prime

        for name in ("kinds", "nb_plans", "nb_rates", "designs", "nary_N", "learners",
                     "tree_depths", "ssbc_bits"):
            v = getattr(self, name)
            if isinstance(v, (str, int)):
                v = (v,)
            object.__setattr__(self, name, tuple(v))
        _choices("kinds", self.kinds, KINDS)
        _choices("nb_plans", self.nb_plans, ("uniform", "greedy"))
        _choices("designs", self.designs, tuple(DESIGNS))
        _choices("learners", self.learners, LEARNERS)
        for name, low in (("nb_rates", 0), ("tree_depths", 1), ("ssbc_bits", 1), ("nary_N", 2)):
            for v in getattr(self, name):
                if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < low:
                    raise ValueError(f"space.{name} must hold integers >= {low}; got {v!r}")
        bad = [n for n in self.nary_N if not is_prime(int(n))]
        if bad:
            raise ValueError(f"space.nary_N must hold primes (the N-ary Sylvester construction); "
                             f"got {bad}")
        for name, low in (("ssbc_anchors", 1), ("ssbc_table_rows", 1), ("knn_k", 1)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < low:
                raise ValueError(f"space.{name} must be an integer >= {low}; got {v!r}")
        if self.lengths is not None:
            if not hasattr(self.lengths, "items"):
                raise TypeError("space.lengths must be a dict {alphabet size: code lengths} "
                                f"or None; got {type(self.lengths).__name__}")
            self.lengths = {int(k): tuple(int(x) for x in np.atleast_1d(v))
                            for k, v in self.lengths.items()}

    @classmethod
    def from_dict(cls, d):
        """A space from a dict of its fields (unknown keys are refused by name)."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"unknown search-space field(s) {unknown}; known: {sorted(known)}")
        return cls(**d)

    def to_dict(self):
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out = {k: (list(v) if isinstance(v, tuple) else v) for k, v in out.items()}
        if self.lengths is not None:
            out["lengths"] = {str(k): list(v) for k, v in self.lengths.items()}
        return out


def _choices(name, values, allowed):
    bad = [v for v in values if v not in allowed]
    if bad:
        raise ValueError(f"space.{name}: unknown value(s) {bad}; choose from {list(allowed)}")


def code_lengths(n_classes, N, design="dense_random"):
    """Automatic code lengths of a design for ``n_classes`` classes and alphabet ``N``.

    Binary codes: ``c, 1.5 c, 2 c``; ternary: ``0.6 c, c, 1.3 c``; 5-ary and up:
    ``0.5 c, 0.7 c, 0.9 c`` (rounded up, at least 3, ``N ** L <=``
    :data:`EXACT_MAX_WORDS` so every prediction is exact); BCH: its lengths
    ``2^m - 1`` in that range; one-vs-all: ``c``.

    Examples
    --------
    Two classes have one distinct learner (``L = 1``, no code) except for BCH
    (a repetition of it):

    >>> code_lengths(10, 2), code_lengths(10, 3, "nary"), code_lengths(10, 2, "bch")
    ((10, 15, 20), (6, 10, 12), (7, 15))
    >>> code_lengths(2, 2), code_lengths(4, 2)
    ((1,), (4, 6, 7))
    """
    from edgecode.ecoc.codes import _stirling2_sum

    c = int(n_classes)
    if design == "one_vs_all":
        return (c,)
    cap = int(math.floor(math.log(EXACT_MAX_WORDS) / math.log(N) + 1e-9))
    if design == "bch":
        from edgecode.ecoc.bch import bch_lengths
        return tuple(L for L in bch_lengths() if L <= cap)
    # a code has at most this many distinct learners (1 for two classes: one learner)
    cap = min(cap, _stirling2_sum(c, N) if c < 24 else cap)
    factors = (1.0, 1.5, 2.0) if N == 2 else (0.6, 1.0, 1.3) if N == 3 else (0.5, 0.7, 0.9)
    out = sorted({min(cap, max(3, math.ceil(f * c))) for f in factors})
    return tuple(out)


def configurations(space, *, n_classes, n_features, binary=False):
    """Every configuration of ``space`` for data of this shape (dicts, search order:
    naive Bayes, then ECOC by design, alphabet, length and learner, then SSBC)."""
    out = []
    if "protected_nb" in space.kinds and binary:
        if 0 in space.nb_rates:
            out.append({"kind": "protected_nb", "plan": "none", "budget_bits": 0})
        for R in space.nb_rates:
            if R == 0:
                continue
            for plan in space.nb_plans:
                out.append({"kind": "protected_nb", "plan": plan,
                            "budget_bits": int(2 * n_features * R)})
    if "ecoc" in space.kinds:
        learners = []
        for lrn in space.learners:
            if lrn == "tree":
                learners += [("tree", int(d)) for d in space.tree_depths]
            else:
                learners.append(("linear", None))
        for design in space.designs:
            alphabets = space.nary_N if design in ("nary", "nary_random") else (2,)
            for N in alphabets:
                if space.lengths is not None and design not in ("one_vs_all",):
                    lengths = space.lengths.get(int(N), ())
                    if design == "bch":
                        lengths = tuple(L for L in lengths if (L + 1) & L == 0)
                else:
                    lengths = code_lengths(n_classes, int(N), design)
                for L in lengths:
                    for lrn, depth in learners:
                        cfg = {"kind": "ecoc", "design": design, "N": int(N),
                               "n_columns": int(L), "learner": lrn}
                        if depth is not None:
                            cfg["max_depth"] = depth
                        out.append(cfg)
    if "ssbc" in space.kinds:
        m = int(space.ssbc_anchors)
        for k in space.ssbc_bits:
            out.append({"kind": "ssbc", "n_bits": int(k), "n_anchors": m,
                        "sketch_size": max(int(k) + 1, min(2 * int(k), m)),
                        "table_rows": int(space.ssbc_table_rows), "knn_k": int(space.knn_k)})
    return out


def config_label(cfg):
    """A short readable name of a configuration.

    Examples
    --------
    >>> config_label({"kind": "protected_nb", "plan": "greedy", "budget_bits": 32})
    'nb greedy 32 bits'
    >>> config_label({"kind": "ssbc", "n_bits": 32, "n_anchors": 128, "table_rows": 512,
    ...               "knn_k": 5})
    'ssbc 32 bits m=128 T=512 k=5'
    """
    kind = cfg["kind"]
    if kind == "protected_nb":
        return "nb unprotected" if cfg["plan"] == "none" else \
            f"nb {cfg['plan']} {cfg['budget_bits']} bits"
    if kind == "ecoc":
        lrn = f"tree(d={cfg['max_depth']})" if cfg["learner"] == "tree" else "linear"
        n = f" N={cfg['N']}" if cfg["design"] in ("nary", "nary_random") else ""
        return f"ecoc {cfg['design']}{n} L={cfg['n_columns']} {lrn}"
    return (f"ssbc {cfg['n_bits']} bits m={cfg['n_anchors']} T={cfg['table_rows']} "
            f"k={cfg['knn_k']}")


# --------------------------------------------------------------------------
# screening: image flash and model RAM before training
# --------------------------------------------------------------------------
def _code(cfg, n_classes, seed):
    from edgecode.ecoc import make_code
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.asarray(make_code(cfg["design"], n_classes, cfg["n_columns"], N=cfg["N"],
                                    random_state=seed), dtype=np.int16)


def _table_rows(cfg, task):
    return int(min(cfg["table_rows"], len(task.X_train)))


def screen(cfg, task, seed=0):
    """Lower bounds of the image flash and model RAM of ``cfg`` on ``task``,
    from a container of placeholder arrays (before training).

    Returns
    -------
    dict
        ``flash_bytes`` and ``ram_bytes`` (the device's own ``resources()``,
        the C runtime not included), ``exact`` (False for trees) and, for
        ECOC, ``code`` (the coding matrix, reused by :func:`fit_config`).

    Raises
    ------
    ValueError
        The configuration cannot be built (e.g. a code design that has no
        code of that length for this many classes).
    """
    from firmware_sim import load
    from firmware_sim.artifact import write_container

    kind = cfg["kind"]
    d = task.n_features
    if kind == "protected_nb":
        from edgecode.redundancy import allocate_uniform
        from firmware_sim.naive_bayes import make_protected_nb_arrays
        r = np.zeros(d, np.int64)
        if cfg["budget_bits"]:
            r = np.asarray(allocate_uniform(d, cfg["budget_bits"]), np.int64) \
                if cfg["plan"] == "uniform" else _greedy_shape(d, cfg["budget_bits"])
        arrays = make_protected_nb_arrays(np.ones(d, np.int64), 0, r, 0)
        dev = load(write_container(None, "protected_nb", arrays))
        res = dev.resources()
        return {"flash_bytes": int(res["flash_bytes"]), "ram_bytes": int(res["ram_bytes"]),
                "exact": cfg["plan"] != "greedy"}
    if kind == "ecoc":
        from firmware_sim.ecoc import make_ecoc_arrays
        code = _code(cfg, task.n_classes, seed)
        c, m = code.shape
        col_classes, n_cls, n_out = [], [], []
        for j in range(m):
            syms = np.unique(code[:, j][code[:, j] >= 0])
            col_classes += syms.tolist()
            n_cls.append(len(syms))
            n_out.append(0 if len(syms) == 1 else 1 if len(syms) == 2 else len(syms))
        kw = {}
        if cfg["learner"] == "linear":
            k = int(sum(n_out))
            kw["linear"] = {"weights": np.zeros((d, k), np.int32), "bias": np.zeros(k, np.int64),
                            "n_out": n_out}
        else:
            # at least one split (a stump: 3 nodes) per column with two symbols or more
            feat, left, right, leaf, roots = [], [], [], [], []
            for j, n in enumerate(n_cls):
                base = len(feat)
                roots.append(base)
                first = col_classes[sum(n_cls[:j])]
                if n == 1:
                    feat += [-1]
                    left += [-1]
                    right += [-1]
                    leaf += [first]
                else:
                    second = col_classes[sum(n_cls[:j]) + 1]
                    feat += [0, -1, -1]
                    left += [base + 1, -1, -1]
                    right += [base + 2, -1, -1]
                    leaf += [0, first, second]
            total = len(feat)
            kw["tree"] = {"feature": np.array(feat, np.int32),
                          "threshold": np.zeros(total, np.int32),
                          "left": np.array(left, np.int32), "right": np.array(right, np.int32),
                          "leaf": np.array(leaf, np.int16), "root": np.array(roots, np.int32)}
        arrays = make_ecoc_arrays(code, col_classes, n_cls, np.zeros(d), np.zeros(d, np.int8),
                                  **kw)
        size = sum(a.nbytes for a in arrays.values())
        # the container's header, table and alignment: measured on the real writer
        blob = write_container(None, "ecoc", arrays)
        res = _ecoc_resources(blob, arrays, cfg["learner"])
        return {"flash_bytes": int(res.get("flash_bytes", len(blob))),
                "ram_bytes": int(res.get("ram_bytes", 0)), "exact": cfg["learner"] == "linear",
                "code": code, "array_bytes": int(size)}
    if kind == "ssbc":
        from firmware_sim.ssbc import make_ssbc_arrays
        m, k, T = cfg["n_anchors"], cfg["n_bits"], _table_rows(cfg, task)
        if k > min(m, len(task.X_train)):
            raise ValueError(f"n_bits={k} must be <= n_anchors={min(m, len(task.X_train))} (the "
                             "code is the sign of m affinities times k projection vectors)")
        arrays = make_ssbc_arrays(np.ones((m, d)), 1.0, np.ones((m, k)), np.zeros(k),
                                  table_bits=np.zeros((T, k), np.uint8),
                                  table_labels=np.arange(T) % task.n_classes,
                                  n_classes=task.n_classes, knn_k=cfg["knn_k"])
        dev = load(write_container(None, "ssbc", arrays))
        res = dev.resources()
        return {"flash_bytes": int(res["flash_bytes"]), "ram_bytes": int(res["ram_bytes"]),
                "exact": True}
    raise ValueError(f"unknown configuration kind {kind!r}; known: {list(KINDS)}")


def _greedy_shape(d, budget_bits):
    """A repetition vector with the greedy plan's total (its frame length is what
    sizes the RAM; the image holds one count per feature whatever the plan)."""
    r = np.zeros(d, np.int64)
    r[0] = budget_bits // 2
    return r


def _ecoc_resources(blob, arrays, learner):
    """The device's resources; placeholder trees (all leaves) are loaded as they are."""
    from firmware_sim import load
    try:
        return load(blob).resources()
    except ValueError:          # placeholder trees need not pass every tree rule
        return {"flash_bytes": len(blob), "ram_bytes": 0}


# --------------------------------------------------------------------------
# fitting one configuration
# --------------------------------------------------------------------------
@dataclass
class Fitted:
    """A trained and exported configuration.

    Attributes
    ----------
    export : export.result.ExportResult
    X_device : ndarray
        The test rows as the device's ``encode`` takes them.
    y_device : ndarray of int64
        The test labels as the device's class indices (SSBC: the k-NN table's
        classes; a class missing from the table gets an index it never outputs).
    clean_accuracy : float
        The device's (fixed-point) accuracy on the test rows, no faults.
    info : dict
        Kind-specific facts (the plan's repetitions, the code's row distance).
    """

    export: object
    X_device: np.ndarray
    y_device: np.ndarray
    clean_accuracy: float
    info: dict = field(default_factory=dict)


def _learner(cfg, seed):
    if cfg["learner"] == "linear":
        from sklearn.linear_model import RidgeClassifier
        return RidgeClassifier(alpha=1.0)
    from sklearn.tree import DecisionTreeClassifier
    return DecisionTreeClassifier(max_depth=int(cfg["max_depth"]), random_state=seed)


def fit_config(cfg, task, *, plan_eps=0.0, seed=0, code=None, plan_points=200):
    """Train ``cfg`` on the task's training rows and export it.

    Parameters
    ----------
    cfg : dict
        A configuration (:func:`configurations`).
    task : Task
    plan_eps : float
        Per-bit wire error the greedy repetition plan is made for.
    seed : int
    code : ndarray, optional
        The ECOC coding matrix (:func:`screen` made it already).
    plan_points : int
        Training rows (a seeded subset) the greedy plan maximises the mean SCP over.

    Returns
    -------
    Fitted
    """
    import warnings

    kind = cfg["kind"]
    dataset = task.meta
    # models are trained on the true labels, so that their exports (container,
    # ONNX, firmware) carry them; accuracies compare class indices
    y_fit = task.labels(task.y_train)
    if kind == "protected_nb":
        from edgecode.naive_bayes import BinaryNaiveBayes
        from edgecode.redundancy import PlanningCostWarning, allocate_greedy, allocate_uniform
        from export.naive_bayes import export_protected_nb

        Xtr = task.X_train.astype(np.uint8)
        nb = BinaryNaiveBayes().fit(Xtr, y_fit)
        d, B = task.n_features, int(cfg["budget_bits"])
        info = {}
        if B == 0:
            r = np.zeros(d, np.int64)
        elif cfg["plan"] == "uniform":
            r = np.asarray(allocate_uniform(d, B), np.int64)
        else:
            rng = np.random.default_rng(seed)
            rows = Xtr if len(Xtr) <= plan_points else \
                Xtr[np.sort(rng.choice(len(Xtr), plan_points, replace=False))]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", PlanningCostWarning)
                plan = allocate_greedy(nb.decision_function(rows), nb.flip_deltas(rows),
                                       float(plan_eps), B)
            r = np.asarray(plan.repetitions, np.int64)
            info = {"planned_mean_scp": float(plan.mean_scp), "plan_method": plan.method}
        info["repetitions"] = r.tolist()
        Xd = task.X_test.astype(np.uint8)
        # above 20 features the integer model is verified on rows, not on every input
        ex = export_protected_nb(nb, r, meta=dataset, X_check=np.vstack([Xtr, Xd]))
        acc = float(np.mean(ex.device.predict(Xd) == task.y_test))
        return Fitted(ex, Xd, task.y_test, acc, info)
    if kind == "ecoc":
        from edgecode.ecoc import row_distance
        from edgecode.ecoc.classifier import ECOCClassifier
        from export.ecoc import export_ecoc

        if code is None:
            code = _code(cfg, task.n_classes, seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")       # constant columns, convergence: measured anyway
            clf = ECOCClassifier(_learner(cfg, seed), code=code,
                                 random_state=seed).fit(task.X_train, y_fit)
        ex = export_ecoc(clf, task.X_train, meta=dataset)
        Xd = task.X_test
        acc = float(np.mean(ex.device.predict(ex.device.quantize(Xd)) == task.y_test))
        return Fitted(ex, Xd, task.y_test, acc, {"row_distance": float(row_distance(clf.code_))})
    if kind == "ssbc":
        from sklearn.model_selection import train_test_split
        from edgecode.hashing import SSBC
        from export.ssbc import export_ssbc

        m = int(min(cfg["n_anchors"], len(task.X_train)))
        if cfg["n_bits"] > m:
            raise ValueError(f"n_bits={cfg['n_bits']} must be <= n_anchors={m} (the code is the "
                             "sign of m affinities times k projection vectors)")
        ell = int(cfg.get("sketch_size", max(cfg["n_bits"] + 1, min(2 * cfg["n_bits"], m))))
        h = SSBC(int(cfg["n_bits"]), m, ell, random_state=seed).fit(task.X_train)
        T = _table_rows(cfg, task)
        if T < len(task.X_train):
            counts = np.bincount(task.y_train)
            strat = task.y_train if counts.min() >= 2 and T >= task.n_classes else None
            Xt, _, yt, _ = train_test_split(task.X_train, task.y_train, train_size=T,
                                            random_state=seed, stratify=strat)
        else:
            Xt, yt = task.X_train, task.y_train
        ex = export_ssbc(h, X_table=Xt, y_table=task.labels(yt), knn_k=int(cfg["knn_k"]),
                         meta=dataset)
        # the table's classes (true labels) as indices of the task's classes
        table_idx = np.searchsorted(task.classes, np.asarray(ex.details["classes"]))
        Xd = task.X_test
        where = {int(v): i for i, v in enumerate(table_idx.tolist())}
        y_dev = np.array([where.get(int(v), len(table_idx)) for v in task.y_test], np.int64)
        classes = table_idx
        labels = np.asarray(ex.device.infer(ex.device.encode(Xd)).labels, np.int64)
        acc = float(np.mean(labels == y_dev))
        return Fitted(ex, Xd, y_dev, acc, {"table_classes": classes.tolist()})
    raise ValueError(f"unknown configuration kind {kind!r}; known: {list(KINDS)}")
