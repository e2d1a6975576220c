"""The search space of :func:`export.budget.search`: data, configurations,
screening before training, and fitting one configuration.

Every model kind contributes through its bridge spec
(:class:`export.registry.KindSpec`, one module per kind in ``export/kinds/``):
its fields of :class:`SearchSpace` (:attr:`~export.registry.KindSpec.space_options`),
its configurations, screening bounds, fitting and labels. This module loops
over the registry and names no kind.

A configuration is a plain dict (what the JSON report prints under
``"config"``) whose ``"kind"`` names the spec that made it; each kind module
documents its keys.

:func:`screen` gives a lower bound of a configuration's image flash and
model RAM **before anything is trained**, from the container the device
would read, built with placeholder values of the right shapes (each kind
says whether its bound is exact). A configuration whose lower bound exceeds
the profile or ``max_flash`` is never trained.
"""

from dataclasses import dataclass, field

import numpy as np

from export.registry import KindSpec, kind_spec, kind_specs

__all__ = ["Task", "SearchSpace", "load_task", "configurations", "config_label", "screen",
           "fit_config", "Fitted", "search_kinds", "tuple_of", "ints_at_least", "one_of",
           "int_at_least", "base_config", "protection_text"]


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


def load_task(data, *, test_size=0.3, random_state=0, max_points=None, data_options=None):
    """Train and test rows of ``data`` (its own train/test split when it has one,
    else a stratified split), labels as class indices.

    Parameters
    ----------
    data : str or tuple
        A bundled name, a CSV path, ``(X, y)`` or ``(X, y, split)`` (split
        values ``"train"``/``"test"``).
    test_size : float in (0, 1)
    random_state : int
        Seed of the split and of the test-row subset.
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
                                              random_state=random_state, stratify=strat)
        how = f"{'stratified ' if strat is not None else ''}{1 - test_size:.0%}/" \
              f"{test_size:.0%} split (seed {random_state})"
    if len(np.unique(ytr)) < len(classes):
        raise ValueError("data: every class needs training rows; the train split lacks "
                         f"{sorted(set(range(len(classes))) - set(np.unique(ytr).tolist()))}")
    if max_points is not None and len(Xte) > int(max_points):
        k = int(max_points)
        if k < 1:
            raise ValueError(f"max_points must be >= 1; got {max_points!r}")
        counts = np.bincount(yte, minlength=len(classes))
        strat = yte if counts[counts > 0].min() >= 2 and k >= len(classes) else None
        _, Xte, _, yte = train_test_split(Xte, yte, test_size=k, random_state=random_state,
                                          stratify=strat)
        how += f", {k} test rows kept"
    binary = bool(len(classes) == 2 and np.isin(X, (0.0, 1.0)).all())
    return Task(name, Xtr, ytr, Xte, yte, classes, binary, how, source, options)


def search_kinds():
    """Kinds ``budget`` can search (their spec yields configurations), in
    registration order."""
    return tuple(s.kind for s in kind_specs()
                 if type(s).configurations is not KindSpec.configurations)


# --------------------------------------------------------------------------
# checks of search-space fields (the kinds' SpaceOption.check)
# --------------------------------------------------------------------------
def tuple_of(value):
    """A field's value as a tuple (one string or integer becomes a 1-tuple)."""
    if isinstance(value, (str, int)):
        return (value,)
    return tuple(value)


def one_of(name, allowed):
    """Check: a tuple of values among ``allowed`` (a tuple, or a callable giving it)."""
    def check(value):
        v = tuple_of(value)
        ok = allowed() if callable(allowed) else allowed
        bad = [x for x in v if x not in ok]
        if bad:
            raise ValueError(f"space.{name}: unknown value(s) {bad}; choose from {list(ok)}")
        return v
    return check


def ints_at_least(name, low):
    """Check: a tuple of integers >= ``low``."""
    def check(value):
        v = tuple_of(value)
        for x in v:
            if isinstance(x, bool) or not isinstance(x, (int, np.integer)) or x < low:
                raise ValueError(f"space.{name} must hold integers >= {low}; got {x!r}")
        return v
    return check


def int_at_least(name, low):
    """Check: one integer >= ``low``."""
    def check(value):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise ValueError(f"space.{name} must be an integer >= {low}; got {value!r}")
        return value
    return check


def _jsonable(v):
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (tuple, list)):
        return [_jsonable(x) for x in v]
    return v


class SearchSpace:
    """What :func:`export.budget.search` tries.

    Parameters
    ----------
    kinds : tuple of str, optional
        Kinds to search (default: every kind whose spec yields
        configurations, :func:`search_kinds`); a kind is tried only on data
        it supports (naive Bayes: binary features, two classes).
    **options
        Each kind's fields: its spec's ``space_options``
        (``export/kinds/<kind>.py`` lists and documents them; those with a
        ``cli`` option are the command line's lists, e.g. ``nb_rates``,
        ``designs``, ``tree_depths``, ``ssbc_bits``). Unknown names are
        refused by name; each value is checked by its kind.

    Examples
    --------
    >>> s = SearchSpace()
    >>> s.kinds == search_kinds(), list(s.to_dict())[0]
    (True, 'kinds')
    >>> SearchSpace(colour=1)
    Traceback (most recent call last):
    ...
    ValueError: unknown search-space field(s) ['colour']; known: [...]
    """

    def __init__(self, kinds=None, **options):
        fields = self._options()
        unknown = sorted(set(options) - set(fields))
        if unknown:
            raise ValueError(f"unknown search-space field(s) {unknown}; known: "
                             f"{sorted(['kinds', *fields])}")
        self.kinds = one_of("kinds", search_kinds)(search_kinds() if kinds is None else kinds)
        for name, opt in fields.items():
            value = options.get(name, opt.default)
            setattr(self, name, value if opt.check is None else opt.check(value))

    @staticmethod
    def _options():
        """Field name -> SpaceOption of every registered kind, in registration order."""
        out = {}
        for spec in kind_specs():
            for opt in spec.space_options:
                if opt.name in out or opt.name == "kinds":
                    raise ValueError(f"search-space field {opt.name!r} of kind {spec.kind!r} "
                                     "is already defined by another kind")
                out[opt.name] = opt
        return out

    @classmethod
    def from_dict(cls, d):
        """A space from a dict of its fields (unknown keys are refused by name)."""
        return cls(**d)

    def to_dict(self):
        """The fields as JSON-ready values (tuples as lists, dict keys as strings)."""
        names = ["kinds", *self._options()]
        return {n: _jsonable(getattr(self, n, None)) for n in names}

    def __eq__(self, other):
        return isinstance(other, SearchSpace) and self.to_dict() == other.to_dict()

    def __repr__(self):
        args = ", ".join(f"{k}={getattr(self, k, None)!r}" for k in ["kinds", *self._options()])
        return f"SearchSpace({args})"


def configurations(space, *, n_classes, n_features, binary=False):
    """Every configuration of ``space`` for data of this shape (dicts, search order:
    the kinds in registration order, each kind's own order within)."""
    out = []
    for spec in kind_specs():
        if spec.kind in space.kinds:
            out += spec.configurations(space, n_classes=int(n_classes),
                                       n_features=int(n_features), binary=bool(binary))
    return out


def base_config(cfg):
    """``cfg`` without its protection (the model the kind fits; issue 27)."""
    return {k: v for k, v in cfg.items() if k != "protection"}


def protection_text(protection):
    """A protection of a configuration in words: ``"+wire 2x"`` (two extra copies
    per frame bit on average), ``"+image 12.5%"`` (flash overhead at most);
    ``""`` for none.

    >>> protection_text({"layer": "wire", "level": 1}), protection_text({"layer": "image",
    ...                                                                  "level": 0.125})
    ('+wire 1x', '+image 12.5%')
    """
    if not protection:
        return ""
    if protection["layer"] == "wire":
        return f"+wire {protection['level']:g}x"
    return f"+image {100 * float(protection['level']):g}%"


def config_label(cfg):
    """A short readable name of a configuration (its kind's :meth:`~KindSpec.label`,
    then its protection)."""
    text = kind_spec(cfg["kind"]).label(base_config(cfg))
    extra = protection_text(cfg.get("protection"))
    return f"{text} {extra}" if extra else text


def screen(cfg, task, random_state=0):
    """Lower bounds of the image flash and model RAM of ``cfg`` on ``task``,
    from a container of placeholder arrays (before training).

    Returns
    -------
    dict
        ``flash_bytes`` and ``ram_bytes`` (the device's own ``resources()``,
        the C runtime not included), ``exact`` (False where the bound is
        not exact, e.g. trees) and whatever the kind's fitting reuses (an
        ECOC ``code``).

    Raises
    ------
    ValueError
        The configuration cannot be built (e.g. a code design that has no
        code of that length for this many classes).
    """
    return kind_spec(cfg["kind"]).screen(base_config(cfg), task, random_state)


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


def fit_config(cfg, task, *, plan_eps=0.0, random_state=0, screened=None):
    """Train ``cfg`` on the task's training rows and export it (its kind's
    :meth:`~export.registry.KindSpec.fit`).

    Parameters
    ----------
    cfg : dict
        A configuration (:func:`configurations`).
    task : Task
    plan_eps : float
        Per-bit wire error a redundancy plan is made for.
    random_state : int
    screened : dict, optional
        What :func:`screen` returned for ``cfg`` (reused, e.g. an ECOC code).

    Returns
    -------
    Fitted
    """
    return kind_spec(cfg["kind"]).fit(base_config(cfg), task, plan_eps=plan_eps,
                                      random_state=random_state, screened=screened)
