"""The bridge spec of ECOC ensembles (seeds 001, 003): kind ``"ecoc"``.

A c x n coding matrix over an alphabet of N symbols, one learner per column,
Hamming decoding on the device (:mod:`export.ecoc` exports a fitted
:class:`edgecode.ecoc.ECOCClassifier`, :class:`firmware_sim.ECOCDevice` runs it).

* **data rows**: numeric features (:func:`export.data.table_rows`);
* **budget** configurations ``{"kind": "ecoc", "design": D, "N": N,
  "n_columns": L, "learner": "linear" | "tree", "max_depth": d}``: the code
  ``edgecode.ecoc.make_code(D, c, L, N=N, random_state=seed)``; linear
  learners are ridge classifiers (closed form, the fastest to fit), trees
  depth-limited CART trees. Screening is exact for linear learners up to the
  metadata; trees count one split per column (the least a trained tree has);
* **closed forms** of learner-output noise (:func:`analytic_ecoc`: the exact
  decoding probability of every received word, and a radius bound), and of
  the code alone (:func:`hamming_guarantee`, :func:`hamming_decoding_exact`).

Examples
--------
>>> from export.budget import SearchSpace
>>> from export._budget_space import config_label, configurations
>>> s = SearchSpace(kinds=("ecoc",), designs=("nary",), nary_N=(3,), learners=("tree",),
...                 tree_depths=(2,))
>>> [config_label(c) for c in configurations(s, n_classes=4, n_features=8)]
['ecoc nary N=3 L=3 tree(d=2)', 'ecoc nary N=3 L=4 tree(d=2)', 'ecoc nary N=3 L=6 tree(d=2)']
"""

import math

import numpy as np

from export._budget_space import Fitted, ints_at_least, one_of
from export.registry import KindSpec, SpaceOption, register_kind_spec

__all__ = ["ECOCSpec", "code_lengths", "learner", "hamming_guarantee", "hamming_decoding_exact",
           "analytic_ecoc", "ecoc_flip_radius", "ecoc_exact_tables", "LEARNERS",
           "DEFAULT_DESIGNS", "EXACT_MAX_WORDS", "sklearn_random_code", "extend_code",
           "tree_cache_clear", "SKLEARN_RANDOM"]

#: ECOC learner kinds of the budget search.
LEARNERS = ("linear", "tree")
#: Designs the default space searches (``N`` applies to ``"nary"`` only).
DEFAULT_DESIGNS = ("one_vs_all", "dense_random", "nary", "bch", "annealed")
#: Designs whose alphabet is chosen by N (every other design is binary).
NARY_DESIGNS = ("nary", "nary_random")
#: Largest ``N ** L`` of an automatic code length: the exact decoding
#: probability (``edgecode.ecoc.decoding_probabilities``) covers up to 2**22
#: received words; 2**20 keeps each prediction under a second.
EXACT_MAX_WORDS = 2 ** 20


#: scikit-learn's random code (``OutputCodeClassifier``'s ``code_book_``: i.i.d.
#: uniform binary entries); a baseline of the search, not in the default designs.
SKLEARN_RANDOM = "sklearn_random"
#: Designs whose grown (longer) codes keep the shorter code as their first
#: columns (random columns appended), so trained learners are reused.
EXTENDABLE = ("dense_random", "nary_random", "nary", "annealed", "sparse_random")
#: Tree depths the growing search steps through.
DEPTH_LADDER = (2, 3, 4, 6, 8, 10, 12, 14, 16, 18, 20)
#: Alphabets the growing search steps through (``nary`` designs; primes).
ALPHABET_LADDER = (2, 3, 5, 7)
#: Longest code the growing search tries.
MAX_GROWN_COLUMNS = 96


def _designs():
    from edgecode.ecoc.codes import DESIGNS
    return tuple(DESIGNS) + (SKLEARN_RANDOM,)


def _primes(value):
    from edgecode.ecoc.sylvester import is_prime

    v = ints_at_least("nary_N", 2)(value)
    bad = [n for n in v if not is_prime(int(n))]
    if bad:
        raise ValueError(f"space.nary_N must hold primes (the N-ary Sylvester construction); "
                         f"got {bad}")
    return v


def _lengths(value):
    if value is None:
        return None
    if not hasattr(value, "items"):
        raise TypeError("space.lengths must be a dict {alphabet size: code lengths} "
                        f"or None; got {type(value).__name__}")
    return {int(k): tuple(int(x) for x in np.atleast_1d(v)) for k, v in value.items()}


class ECOCSpec(KindSpec):
    """ECOC ensembles on the bridge (see the module docstring)."""

    kind = "ecoc"
    protection_sites = ("wire", "image")
    marker = "o"
    site_text = "ECOC learner outputs"
    compute_text = "ECOC learner outputs"
    space_options = (
        SpaceOption("designs", DEFAULT_DESIGNS, one_of("designs", _designs), cli="--designs",
                    help="ECOC designs (comma list; the designs of 'edgecode codes')"),
        SpaceOption("nary_N", (2, 3, 5), _primes, cli="--nary-N", item=int,
                    help="alphabet sizes of the nary design (primes, comma list)"),
        SpaceOption("lengths", None, _lengths),
        SpaceOption("learners", LEARNERS, one_of("learners", LEARNERS), cli="--learners",
                    help="ECOC learners: linear (ridge), tree (comma list)"),
        SpaceOption("tree_depths", (3, 6), ints_at_least("tree_depths", 1), cli="--depths",
                    item=int, help="tree depth limits (comma list)"),
    )
    example_space = {"designs": ("one_vs_all", "nary"), "learners": ("tree",),
                     "tree_depths": (3,), "nary_N": (3,)}
    example_variants = ("tree", "linear")
    analytic_note = ("ECOC: exact same-classification rate and accuracy from every received "
                     "word labelled by the device's rule and the q-ary symmetric channel "
                     "applied per learner (binary, ternary or N-ary outputs, N^n <= 2**22), "
                     "and a lower bound on the same rate from each point's flip radius")

    def configurations(self, space, *, n_classes, n_features, binary):
        learners = []
        for lrn in space.learners:
            if lrn == "tree":
                learners += [("tree", int(d)) for d in space.tree_depths]
            else:
                learners.append(("linear", None))
        out = []
        for design in space.designs:
            alphabets = space.nary_N if design in NARY_DESIGNS else (2,)
            for N in alphabets:
                if space.lengths is not None and design not in ("one_vs_all",):
                    lengths = space.lengths.get(int(N), ())
                    if design == "bch":
                        lengths = tuple(L for L in lengths if (L + 1) & L == 0)
                else:
                    lengths = code_lengths(n_classes, int(N), design)
                for L in lengths:
                    for lrn, depth in learners:
                        cfg = {"kind": self.kind, "design": design, "N": int(N),
                               "n_columns": int(L), "learner": lrn}
                        if depth is not None:
                            cfg["max_depth"] = depth
                        out.append(cfg)
        return out

    def seeds(self, space, *, n_classes, n_features, binary):
        """The cheapest configuration of each design and alphabet: its shortest code,
        a linear learner and the shallowest tree."""
        out, seen = [], set()
        for cfg in self.configurations(space, n_classes=n_classes, n_features=n_features,
                                       binary=binary):
            key = (cfg["design"], cfg["N"], cfg["learner"])
            depth = cfg.get("max_depth")
            if cfg["learner"] == "tree" and depth != min(space.tree_depths):
                continue
            if key in seen:
                continue
            seen.add(key)
            if cfg["design"] in EXTENDABLE:
                cfg["base_columns"] = cfg["n_columns"]
            out.append(cfg)
        return out

    def grow(self, config, space, *, n_classes, n_features, binary):
        """One step each: a deeper tree (:data:`DEPTH_LADDER`), a longer code (about
        1.3 times, the next BCH length; extendable designs keep the shorter code
        as their first columns), the next alphabet of an N-ary design (same length)."""
        out = []
        c = int(n_classes)
        if config["learner"] == "tree":
            d = int(config["max_depth"])
            nxt = [x for x in DEPTH_LADDER if x > d]
            if nxt:
                out.append({**config, "max_depth": nxt[0]})
        design, L, N = config["design"], int(config["n_columns"]), int(config["N"])
        if design == "bch":
            from edgecode.ecoc.bch import bch_lengths
            longer = [x for x in bch_lengths() if x > L and x <= MAX_GROWN_COLUMNS]
            if longer:
                out.append({**config, "n_columns": int(longer[0])})
        elif design not in ("one_vs_all", "one_vs_one", "exhaustive", SKLEARN_RANDOM) and c > 2:
            L2 = min(MAX_GROWN_COLUMNS, max(L + 2, math.ceil(1.3 * L)))
            if L2 > L:
                out.append({**config, "n_columns": int(L2)})
        if design in NARY_DESIGNS:
            bigger = [n for n in ALPHABET_LADDER if n > N]
            if bigger and c > 2:
                out.append({**config, "N": bigger[0]})
        return out

    def baselines(self, space, *, n_classes, n_features, binary):
        """One-vs-all and scikit-learn's random code (``code_size`` 1.5), each with
        trees of growing depth (the flash they take grows with the depth)."""
        c = int(n_classes)
        if c <= 2:
            return []
        ladder = [d for d in DEPTH_LADDER if d >= 2]
        ova = [{"kind": self.kind, "design": "one_vs_all", "N": 2, "n_columns": c,
                "learner": "tree", "max_depth": d} for d in ladder]
        skl = [{"kind": self.kind, "design": SKLEARN_RANDOM, "N": 2,
                "n_columns": int(1.5 * c), "learner": "tree", "max_depth": d} for d in ladder]
        return [("one-vs-all", ova), ("sklearn random code", skl)]

    def label(self, config):
        lrn = f"tree(d={config['max_depth']})" if config["learner"] == "tree" else "linear"
        n = f" N={config['N']}" if config["design"] in NARY_DESIGNS else ""
        L, L0 = int(config["n_columns"]), int(config.get("base_columns", config["n_columns"]))
        ext = f"({L0}+{L - L0})" if L0 < L else ""
        return f"ecoc {config['design']}{n} L={L}{ext} {lrn}"

    def screen(self, config, task, random_state):
        from firmware_sim import make_ecoc_arrays, write_container

        d = task.n_features
        code = _code(config, task.n_classes, random_state)
        c, m = code.shape
        col_classes, n_cls, n_out = [], [], []
        for j in range(m):
            syms = np.unique(code[:, j][code[:, j] >= 0])
            col_classes += syms.tolist()
            n_cls.append(len(syms))
            n_out.append(0 if len(syms) == 1 else 1 if len(syms) == 2 else len(syms))
        kw = {}
        if config["learner"] == "linear":
            k = int(sum(n_out))
            kw["linear"] = {"weights": np.zeros((d, k), np.int32), "bias": np.zeros(k, np.int64),
                            "n_out": n_out}
        else:
            kw["tree"] = _stumps(col_classes, n_cls)
        arrays = make_ecoc_arrays(code, col_classes, n_cls, np.zeros(d), np.zeros(d, np.int8),
                                  **kw)
        size = sum(a.nbytes for a in arrays.values())
        # the container's header, table and alignment: measured on the real writer
        blob = write_container(None, self.kind, arrays)
        res = _resources(blob)
        return {"flash_bytes": int(res.get("flash_bytes", len(blob))),
                "ram_bytes": int(res.get("ram_bytes", 0)),
                "exact": config["learner"] == "linear", "code": code, "array_bytes": int(size)}

    def fit(self, config, task, *, plan_eps, random_state, screened=None):
        import warnings

        from edgecode.ecoc import row_distance
        from edgecode.ecoc.classifier import ECOCClassifier
        from export.ecoc import export_ecoc

        code = (screened or {}).get("code")
        if code is None:
            code = _code(config, task.n_classes, random_state)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")       # constant columns, convergence: measured anyway
            clf = ECOCClassifier(learner(config, random_state), code=code,
                                 random_state=random_state).fit(task.X_train,
                                                                task.labels(task.y_train))
        ex = export_ecoc(clf, task.X_train, meta=task.meta)
        Xd = task.X_test
        acc = float(np.mean(ex.device.predict(ex.device.quantize(Xd)) == task.y_test))
        return Fitted(ex, Xd, task.y_test, acc, {"row_distance": float(row_distance(clf.code_))})

    def wire_bound(self, device, X, copies, eps, *, max_key=160):
        """Certified label-change probability of linear learners under decoded wire
        errors (issue 27): ``(lower, upper)`` averaged over the points, or None
        for tree learners and where a point has more than ``max_key``
        influential positions (the enumeration grows as their square). See
        :func:`wire_bound_linear`."""
        if getattr(device, "learner_kind", None) != "linear":
            return None
        return wire_bound_linear(device, X, copies, eps, max_key=max_key)

    def analytic(self, device, X, fault, y=None, site=None):
        return analytic_ecoc(device, X, fault, y,
                             site=device.default_site if site is None else site)

    def example_fit(self, X, y, *, meta, variant="tree"):
        from sklearn.svm import LinearSVC
        from sklearn.tree import DecisionTreeClassifier

        from edgecode.ecoc.classifier import ECOCClassifier
        from export.ecoc import export_ecoc

        if variant == "tree":
            clf = ECOCClassifier(DecisionTreeClassifier(max_depth=4, random_state=0),
                                 code="nary", N=3, n_columns=6, random_state=0)
        elif variant == "linear":
            clf = ECOCClassifier(LinearSVC(random_state=0), code="dense_random", n_columns=8,
                                 random_state=0)
        else:
            raise ValueError(f"variant must be one of {self.example_variants}; got {variant!r}")
        clf.fit(X, y)
        return export_ecoc(clf, X, meta=dict(meta))


def learner(config, random_state):
    """The scikit-learn learner of a configuration: ridge (``"linear"``) or a
    depth-limited CART tree."""
    if config["learner"] == "linear":
        from sklearn.linear_model import RidgeClassifier
        return RidgeClassifier(alpha=1.0)
    return _reused()(max_depth=int(config["max_depth"]), random_state=random_state)


def _reused():
    cls = globals().get("ReusedTree")
    if cls is None:
        globals()["ReusedTree"] = cls = _reused_tree_class()
    return cls


def _reused_tree_class():
    from sklearn.tree import DecisionTreeClassifier

    class ReusedTree(DecisionTreeClassifier):
        """A CART tree whose fit is looked up first: the same rows, labels and
        parameters give the tree trained before in this process (a deterministic
        fit, so the same tree), which is how a longer code of the growing search
        reuses the learners of the shorter one."""

        def fit(self, X, y, sample_weight=None, check_input=True):
            import hashlib

            if sample_weight is not None:
                return super().fit(X, y, sample_weight=sample_weight, check_input=check_input)
            Xa, ya = np.ascontiguousarray(X), np.ascontiguousarray(y)
            h = hashlib.blake2b(digest_size=16)
            for a in (Xa, ya):
                h.update(str((a.dtype, a.shape)).encode())
                h.update(a.tobytes())
            key = (h.hexdigest(), repr(sorted(self.get_params().items())))
            hit = _TREE_CACHE.get(key)
            if hit is not None:
                self.__dict__.update(hit.__dict__)
                return self
            super().fit(X, y, check_input=check_input)
            _TREE_CACHE[key] = self
            while len(_TREE_CACHE) > TREE_CACHE_SIZE:
                _TREE_CACHE.pop(next(iter(_TREE_CACHE)))
            return self

    ReusedTree.__module__ = __name__
    ReusedTree.__qualname__ = "ReusedTree"
    return ReusedTree


#: Trees :class:`ReusedTree` keeps per process (the oldest are dropped first).
TREE_CACHE_SIZE = 512
_TREE_CACHE = {}


def tree_cache_clear():
    """Forget the trees trained so far (a new search starts afresh)."""
    _TREE_CACHE.clear()


def _code(config, n_classes, random_state):
    """The coding matrix of a configuration: its design's code, scikit-learn's
    random code, or (``base_columns``) the design's code of that length with
    seeded random columns appended up to ``n_columns`` (:func:`extend_code`)."""
    import warnings

    from edgecode.ecoc import make_code
    L = int(config["n_columns"])
    if config["design"] == SKLEARN_RANDOM:
        return sklearn_random_code(n_classes, L, random_state)
    L0 = int(config.get("base_columns", L))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        base = np.asarray(make_code(config["design"], n_classes, min(L0, L), N=config["N"],
                                    random_state=random_state), dtype=np.int16)
    if L <= base.shape[1]:
        return base
    return extend_code(base, L, int(config["N"]), random_state)


def sklearn_random_code(n_classes, n_columns, random_state):
    """scikit-learn's random code: ``OutputCodeClassifier(code_size=n_columns /
    n_classes, random_state=random_state).code_book_`` for a learner with
    ``predict_proba`` (entries 0/1, i.i.d. uniform draws above one half are 1).

    Examples
    --------
    >>> sklearn_random_code(4, 6, 0).tolist()[0]
    [1, 1, 1, 1, 0, 1]
    """
    rs = np.random.RandomState(random_state)
    return (rs.uniform(size=(int(n_classes), int(n_columns))) > 0.5).astype(np.int16)


def extend_code(code, n_columns, N, random_state):
    """``code`` with seeded random columns appended up to ``n_columns``.

    Column ``j`` is drawn from its own seed ``(random_state, j)`` (uniform
    symbols of the alphabet, at least two distinct, not equal to an earlier
    column), so the extension of a code to ``L`` columns is the first ``L``
    columns of its extension to any longer length: the learners of the shorter
    code are the first learners of the longer one.

    Examples
    --------
    >>> base = np.array([[0, 1], [1, 0], [1, 1]])
    >>> long = extend_code(base, 6, 2, 0)
    >>> long.shape, bool((extend_code(base, 4, 2, 0) == long[:, :4]).all())
    ((3, 6), True)
    """
    code = np.asarray(code, np.int16)
    c = code.shape[0]
    cols = [code[:, j] for j in range(code.shape[1])]
    seen = {col.tobytes() for col in cols}
    seed = int(random_state if random_state is not None else 0)
    j = code.shape[1]
    while len(cols) < int(n_columns):
        rng = np.random.default_rng([seed, 28, j])
        for _ in range(64):
            col = rng.integers(0, N, size=c).astype(np.int16)
            if len(np.unique(col)) >= 2 and col.tobytes() not in seen:
                break
        seen.add(col.tobytes())
        cols.append(col)
        j += 1
    return np.stack(cols, axis=1).astype(np.int16)


def _stumps(col_classes, n_cls):
    """Placeholder trees: one split (a stump: 3 nodes) per column with two symbols
    or more, a leaf for a constant column."""
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
    return {"feature": np.array(feat, np.int32), "threshold": np.zeros(total, np.int32),
            "left": np.array(left, np.int32), "right": np.array(right, np.int32),
            "leaf": np.array(leaf, np.int16), "root": np.array(roots, np.int32)}


def _resources(blob):
    """The device's resources; placeholder trees (all leaves) are loaded as they are."""
    from firmware_sim import load
    try:
        return load(blob).resources()
    except ValueError:          # placeholder trees need not pass every tree rule
        return {"flash_bytes": len(blob), "ram_bytes": 0}


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


# ----------------------------------------------------------------------------
# closed forms (export.analytics re-exports them)
# ----------------------------------------------------------------------------
def _row_distance(code):
    c = code.shape[0]
    d = [int((code[i] != code[j]).sum()) for i in range(c) for j in range(i + 1, c)]
    return min(d) if d else code.shape[1]


def _binary_code(code):
    code = np.asarray(code)
    if code.ndim != 2 or code.shape[0] < 2:
        raise ValueError(f"code must be a 2-D array (classes x learners) with >= 2 rows; "
                         f"got shape {code.shape}")
    if not np.isin(code, (0, 1)).all():
        raise ValueError("code must be binary (0/1); ternary 'don't care' codes are not "
                         "covered by these closed forms")
    return code.astype(np.uint8)


def hamming_guarantee(code, eps):
    """P(at most floor((d_r - 1) / 2) of the n learner outputs flip): decoding is
    then guaranteed correct, so this lower-bounds the probability of a correct
    decision for every class (outputs flip independently with probability eps).

    Parameters
    ----------
    code : array-like of 0/1, shape (c, n)
        Codewords (rows).
    eps : float in [0, 1]

    Returns
    -------
    dict
        ``d_r``, ``t`` (correctable flips), ``p_guaranteed`` and
        ``p_error_bound`` (its complement).

    Examples
    --------
    >>> r = hamming_guarantee([[0, 0, 0], [1, 1, 1]], 0.1)
    >>> r["d_r"], r["t"], round(r["p_guaranteed"], 3)
    (3, 1, 0.972)
    """
    from scipy.stats import binom

    code = _binary_code(code)
    n = code.shape[1]
    d_r = _row_distance(code)
    t = (d_r - 1) // 2
    p = float(binom.cdf(t, n, float(eps)))
    return {"d_r": d_r, "t": t, "p_guaranteed": p, "p_error_bound": 1.0 - p}


def hamming_decoding_exact(code, eps, ties="first", max_learners=22):
    """Exact probability that nearest-codeword decoding returns the true class.

    Every one of the n outputs flips independently with probability eps; the
    decoder picks the row nearest in Hamming distance to the received word.
    The ``2^n`` received words are labelled once and the channel is applied
    to each class indicator (:func:`edgecode.ecoc.codeword_decoding_probabilities`,
    ``O(c n 2^n)`` time, ``12 * 2^n`` bytes), so n <= ``max_learners``; for
    N-ary or ternary codes call that function directly.

    Parameters
    ----------
    code : array-like of 0/1, shape (c, n)
    eps : float in [0, 1]
    ties : {"first", "split"}
        "first": a tie goes to the lowest class index (``np.argmin``);
        "split": a tie among k rows including the true one counts 1/k
        (a uniformly random tie-break).

    Returns
    -------
    ndarray of float, shape (c,)
        P(correct | class i).

    Examples
    --------
    >>> hamming_decoding_exact([[0, 0, 0], [1, 1, 1]], 0.1).round(4).tolist()
    [0.972, 0.972]
    """
    code = _binary_code(code)
    n = code.shape[1]
    if n > max_learners:
        raise ValueError(f"{n} learners: exact enumeration of the 2**{n} received words is "
                         f"limited to {max_learners}; use hamming_guarantee for a bound")
    from edgecode.ecoc.decoding_exact import codeword_decoding_probabilities

    return codeword_decoding_probabilities(code, eps, n_symbols=2, ties=ties,
                                           max_words=2 ** max_learners)


def ecoc_flip_radius(ecoc_device, outputs):
    """Per point, the number of learner-output errors that can never change its label.

    Parameters
    ----------
    ecoc_device : firmware_sim.ecoc.ECOCDevice
    outputs : int array (t, n)
        Clean learner outputs (``learner_outputs``).

    Returns
    -------
    int array (t,)
        ``t(x)``: at most ``t(x)`` errors (flips, or symbol replacements)
        keep the decoded label; equals ``floor((d_r - 1) / 2)`` or more when
        the outputs are a codeword of a code without unused entries;
        ``firmware_sim.ecoc.RADIUS_UNBOUNDED`` for a single-class code (the
        device's own :func:`firmware_sim.ecoc.flip_radius`, which the
        campaign's fast path uses too).

    Examples
    --------
    >>> from firmware_sim import ECOCDevice, make_ecoc_arrays, read_container, write_container
    >>> code = [[0, 0, 0], [1, 1, 1]]
    >>> arr = make_ecoc_arrays(code, [0, 1] * 3, [2] * 3, [0.0], [0],
    ...     linear={"weights": [[1, 1, 1]], "bias": [0, 0, 0], "n_out": [1, 1, 1]})
    >>> dev = ECOCDevice(read_container(write_container(None, "ecoc", arr)))
    >>> ecoc_flip_radius(dev, [[0, 0, 0], [0, 0, 1]]).tolist()
    [1, 0]
    """
    from firmware_sim.ecoc import doubled_distances, flip_radius

    sym = np.asarray(outputs, np.int16)
    return flip_radius(doubled_distances(ecoc_device.code, sym), ecoc_device.decode(sym))


def ecoc_exact_tables(ecoc_device, outputs, y=None, max_learners=16):
    """Counts of error patterns by weight that change (and keep correct) each label.

    Every one of the ``2^n`` flip patterns of the ``n`` binary learner outputs
    goes through the device's decoder, once per distinct clean output word
    (and true label). ``P(change | eps) = sum_k change[:, k] eps^k
    (1 - eps)^(n - k)``. A brute-force reference (``O(2^n)`` decodes per
    distinct word, binary only): :func:`analytic_ecoc` uses
    :func:`edgecode.ecoc.decoding_probabilities` unless given these tables.

    Returns
    -------
    dict
        ``change`` (t, n + 1) and, with ``y``, ``correct`` (t, n + 1) counts.

    Raises
    ------
    ValueError
        N-ary outputs, or more than ``max_learners`` columns.
    """
    if ecoc_device.n_symbols != 2:
        raise ValueError("exact enumeration covers binary learner outputs only "
                         f"(this device has N = {ecoc_device.n_symbols})")
    sym = np.asarray(outputs, np.int64)
    t, n = sym.shape
    if n > max_learners:
        raise ValueError(f"{n} learners: exact enumeration of 2**{n} error patterns is "
                         f"limited to {max_learners}; the radius bound still applies")
    pats = ((np.arange(1 << n, dtype=np.int64)[:, None] >> np.arange(n)) & 1)
    weight = pats.sum(axis=1)
    keys = sym if y is None else np.column_stack([sym, np.asarray(y, np.int64)])
    uniq, inv = np.unique(keys, axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    change = np.zeros((uniq.shape[0], n + 1), np.int64)
    correct = np.zeros((uniq.shape[0], n + 1), np.int64)
    for u, row in enumerate(uniq):
        word = row[:n]
        clean = ecoc_device.decode(word[None, :].astype(np.int16))[0]
        labels = ecoc_device.decode((pats ^ word[None, :]).astype(np.int16))
        change[u] = np.bincount(weight[labels != clean], minlength=n + 1)
        if y is not None:
            correct[u] = np.bincount(weight[labels == row[n]], minlength=n + 1)
    out = {"change": change[inv]}
    if y is not None:
        out["correct"] = correct[inv]
    return out


def _weight_probs(n, eps):
    k = np.arange(n + 1)
    return eps ** k * (1.0 - eps) ** (n - k)


def analytic_ecoc(device, X, fault, y=None, tables=None, max_words=None,
                  site="intermediate"):
    """Analytic label-change rate of an ECOC device under independent output noise.

    Parameters
    ----------
    device : firmware_sim.ecoc.ECOCDevice
    X : array-like
        The campaign's inputs (float features, what ``device.encode`` takes).
    fault : firmware_sim.faults.Fault
    y : array-like of int, optional
        True class indices (for the exact accuracy).
    tables : dict, optional
        :func:`ecoc_exact_tables` output (binary devices): if given, the exact
        rates come from these counts instead.
    max_words : int, optional
        Largest ``N^n`` (alphabet size to the number of learners) for which
        the exact rates are computed (:func:`edgecode.ecoc.decoding_probabilities`).
    site : str
        Where the campaign's bit faults acted: the closed form covers the
        learner outputs (``"intermediate"``) only.

    Returns
    -------
    dict
        ``available`` is True when the exact rate was computed (``same_rate``,
        ``accuracy``, ``method``); whenever the noise is independent with one
        per-output rate, ``same_rate_lower_bound`` (the radius bound),
        ``per_output_eps``, ``code_guarantee`` (:func:`hamming_guarantee` of
        the code, binary codes without unused entries) are given too; else
        ``reason``.

    Notes
    -----
    With per-output error probability ``e`` (a flip for binary learners, a
    replacement by a uniformly random other symbol for N-ary ones, as
    ``ECOCDevice.corrupt`` and the campaign's event frames do), the point
    with clean outputs ``w`` keeps its label with probability
    ``(T^{(x) n} f_{r0})(w)``, where ``f_k`` is the indicator of the words the
    device decodes to ``k`` (see :mod:`edgecode.ecoc.decoding_exact`); the
    accuracy uses ``f_y``.
    """
    from export._closed_forms import analytic_upsets, has_stuck_lines, independent_eps
    from firmware_sim import ECOCDevice

    if not isinstance(device, ECOCDevice):
        return {"available": False, "reason": f"no analytic model for {type(device).__name__}"}
    if fault.target in ("image", "mixed"):
        return analytic_upsets(device, X, fault, y)
    if site != "intermediate":
        return {"available": False, "reason": "no closed form for faults on the int16 "
                "features on the wire (the closed form covers the learner outputs)"}
    dev = device
    e = independent_eps(fault)
    if e is not None and dev.n_symbols > 2 and has_stuck_lines(fault):
        e = None   # a stuck line has no symbol meaning (the campaign refuses it too)
    if e is None:
        return {"available": False, "reason": "no closed form for this fault on learner outputs "
                "(needs independent noise with one rate for every output)"}
    outputs = dev.stage(dev.encode(X))
    n = dev.n_columns
    rad = ecoc_flip_radius(dev, outputs)
    from scipy.stats import binom
    out = {"available": False, "per_output_eps": e,
           "same_rate_lower_bound": float(binom.cdf(np.minimum(rad, n), n, e).mean()),
           "radius_min": int(rad.min()), "radius_mean": float(rad.mean())}
    code = dev.code
    if dev.n_symbols == 2 and (code >= 0).all():
        out["code_guarantee"] = hamming_guarantee(code, e)
    if tables is not None:
        w = _weight_probs(n, e)
        out.update(available=True, same_rate=float(1.0 - (tables["change"] @ w).mean()),
                   accuracy=(float((tables["correct"] @ w).mean()) if "correct" in tables
                             else None),
                   method="exact: the 2^n flip patterns through the device decoder "
                          "(ecoc_exact_tables)")
        return out
    from edgecode.ecoc.decoding_exact import DEFAULT_MAX_WORDS, decoding_probabilities

    if max_words is None:
        max_words = DEFAULT_MAX_WORDS
    targets = dev.decode(outputs)[None, :]
    if y is not None:
        targets = np.vstack([targets, np.asarray(y, np.int64).reshape(1, -1)])
    try:
        p = decoding_probabilities(code, e, outputs, targets, n_symbols=dev.n_symbols,
                                   max_words=max_words)
    except ValueError as exc:
        out["reason"] = f"exact rate not computed: {exc}"
        return out
    out.update(available=True, same_rate=float(p[0].mean()),
               accuracy=float(p[1].mean()) if y is not None else None,
               method=f"exact: all {dev.n_symbols}^{n} received words labelled by the device's "
                      "rule, q-ary symmetric channel applied per learner "
                      "(edgecode.ecoc.decoding_probabilities)")
    return out

def __getattr__(name):
    if name == "ReusedTree":
        return _reused()
    raise AttributeError(name)


def _triples(n):
    a, b, c = np.meshgrid(np.arange(n), np.arange(n), np.arange(n), indexing="ij")
    keep = (a < b) & (b < c)
    return a[keep], b[keep], c[keep]


def wire_bound_linear(device, X, copies, eps, *, max_key=None, gamma=0.5, max_open=3,
                      triple_p=1e-3, max_triple=24):
    """Certified ``(lower, upper)`` of the mean probability that a linear ECOC
    device's label changes when bit b of feature f is decoded wrong with
    probability ``p(copies[f, b])`` (independently; majority decoding of a BSC).

    A wrong bit shifts every learner score exactly (``W[f, :] * (+-2^b)``,
    the sign set by the clean bit; flips add), so per point: the *residual*
    positions R (likely and light first, while their summed worst-case
    shift stays below ``gamma`` times every score's magnitude) move a score
    at most ``r`` whatever subset of them is wrong; the *key* positions K
    (the rest, at most ``max_key``) are enumerated exactly up to two wrong
    bits: for each such set S, the scores ``s + d_S +- r`` decide every
    learner's symbol or leave a sign open; with at most ``max_open`` open
    signs every choice of them is decoded as the device decodes (the label
    is then sure to change, sure to stay, or open). Three wrong bits are
    enumerated too among the likely key bits (probability >= ``triple_p``,
    at most ``max_triple`` of them). Lower: the sets that surely change the label;
    upper: those plus the open ones plus P(three or more wrong bits in K).
    Seed 000's subset-sum view, per learner, with the multi-class decoding on
    top.
    """
    from firmware_sim.wire import failure_probability
    q = device.encode(X).astype(np.int64)
    t, n = q.shape
    W = device._w.astype(np.int64)              # (n, k)
    s0 = q @ W + device._b.astype(np.int64)     # (t, k) exact scores
    clean = np.asarray(device.labels(device.encode(X)), np.int64)
    p = failure_probability(np.asarray(copies, np.int64).reshape(-1), eps)    # (16 n,)
    fidx = np.repeat(np.arange(n), 16)
    bidx = np.tile(np.arange(16), n)
    lows, ups = np.zeros(t), np.zeros(t)
    n_out, out_off = device._n_out, device._out_off
    cls_off, classes = device._cls_off, device._classes
    m = n_out.size
    for i in range(t):
        u = q[i].astype(np.uint16)
        bit = ((u[fidx] >> bidx.astype(np.uint16)) & 1).astype(np.int64)
        mag = np.left_shift(np.int64(1), bidx)
        delta = np.where(bidx == 15, (2 * bit - 1) * mag, (1 - 2 * bit) * mag)   # value shift
        D = delta[:, None] * W[fidx]                            # (16 n, k) score shifts
        absD = np.abs(D)
        scale = np.maximum(np.abs(s0[i]), 1)
        # margin a position uses per unit of its error probability: the likely,
        # light positions go to R first
        cost = (absD / scale).max(axis=1) / np.maximum(p, 1e-300)
        order = np.argsort(cost, kind="stable")
        r = np.zeros(W.shape[1], np.int64)
        in_r = np.zeros(16 * n, bool)
        for j in order:
            if np.all(r + absD[j] <= gamma * np.abs(s0[i])):
                r += absD[j]
                in_r[j] = True
        key = np.flatnonzero(~in_r)
        if max_key is not None and key.size > max_key:
            return None
        pk = p[key]
        nk = key.size
        q0 = np.prod(1 - pk)
        ratio = pk / np.maximum(1 - pk, 1e-300)
        ia, ib = np.triu_indices(nk, 1)
        Dk = D[key]
        shift = [np.zeros((1, W.shape[1]), np.int64), Dk, Dk[ia] + Dk[ib]]
        prob = [[1.0], ratio, ratio[ia] * ratio[ib]]
        likely = np.flatnonzero(pk >= triple_p)[:max_triple]   # three wrong likely bits
        if likely.size >= 3:
            ta, tb, tc = (likely[v] for v in _triples(likely.size))
            shift.append(Dk[ta] + Dk[tb] + Dk[tc])
            prob.append(ratio[ta] * ratio[tb] * ratio[tc])
        shift = np.vstack(shift)
        prob = q0 * np.concatenate(prob)
        lo_sc = s0[i] + shift - r
        hi_sc = s0[i] + shift + r
        ns = len(prob)
        sym = np.zeros((ns, m), np.int16)
        hi_sym = np.zeros((ns, m), np.int16)        # the other symbol of an open sign
        open_sign = np.zeros((ns, m), bool)
        known = np.ones(ns, bool)                   # every argmax column decided
        for j in range(m):
            k, c0 = int(n_out[j]), int(cls_off[j])
            if k == 0:
                sym[:, j] = classes[c0]
            elif k == 1:
                o = int(out_off[j])
                pos, neg = lo_sc[:, o] > 0, hi_sc[:, o] <= 0
                sym[:, j] = np.where(pos, classes[c0 + 1], classes[c0])
                hi_sym[:, j] = classes[c0 + 1]
                open_sign[:, j] = ~(pos | neg)
            else:
                o = int(out_off[j])
                lo, hi = lo_sc[:, o:o + k], hi_sc[:, o:o + k]
                best = np.argmax(lo, axis=1)
                others = hi.copy()
                others[np.arange(ns), best] = np.iinfo(np.int64).min
                sure = lo[np.arange(ns), best] > others.max(axis=1)
                sym[:, j] = classes[c0 + best]
                known &= sure
        # an open sign takes either symbol: enumerate them (up to max_open per set)
        n_open = open_sign.sum(axis=1)
        known &= n_open <= max_open
        some = np.zeros(ns, bool)                   # some choice changes the label
        every = np.ones(ns, bool)                   # every choice changes it
        rank = np.cumsum(open_sign, axis=1) - 1
        for c in range(1 << int(min(max_open, n_open.max(initial=0)))):
            rows = np.flatnonzero(known & (c < (1 << np.minimum(n_open, max_open))))
            if rows.size == 0:
                continue
            sy = sym[rows].copy()
            take = open_sign[rows] & (((c >> np.maximum(rank[rows], 0)) & 1) == 1)
            sy[take] = hi_sym[rows][take]
            ch = np.asarray(device.finish(sy), np.int64) != clean[i]
            some[rows] |= ch
            every[rows] &= ch
        changed_sure = known & every
        changed_maybe = ~known | some
        rest = max(0.0, 1.0 - prob.sum())        # every error set not enumerated
        lows[i] = prob[changed_sure].sum()
        ups[i] = prob[changed_maybe].sum() + rest
    return float(lows.mean()), float(min(1.0, ups.mean()))


register_kind_spec(ECOCSpec)
