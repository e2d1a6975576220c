"""One data interface for every command: bundled sets and CSV files, one set of options.

Every command that reads rows (``plan``, ``ecoc``, ``hash``, ``budget``, and
``simulate``/``campaign``/``upsets``/``firmware --check`` through ``--data``
or the dataset an artifact records) goes through this module, so that the
options and the rules are the same everywhere:

* ``label`` (``--label COL``, default ``class``): the label column of a CSV.
  Labels keep their type: a column whose values all read as integers gives
  int64 labels (``1, 2, 3, 5, 6, 7`` stay those numbers, not 0..k-1), one
  whose values are all integral numbers written as floats (``1.0``) gives
  float64, anything else strings (:func:`typed_labels`).
* ``ignore`` (``--ignore A,B``): columns left out (identifiers, file names).
* ``positive`` (``--positive VALUE``, where two classes are needed): that
  label value becomes class 1, every other value class 0.
* a ``split`` column with ``train`` and ``test`` rows is the split; without
  one, :func:`train_test` holds out ``test_size`` of the rows, stratified by
  label when every class has two rows or more, seeded.

Artifacts record the dataset (``meta["dataset"]``, a bundled name or an
absolute CSV path) and these options (``meta["dataset_options"]``, JSON), so
that later commands find the same rows from any folder without ``--data``
(:func:`load_recorded`).

Examples
--------
>>> import pathlib, tempfile
>>> p = pathlib.Path(tempfile.mkdtemp()) / "t.csv"
>>> _ = p.write_text("a,b,id,kind\\n0.5,1,x,7\\n1.5,0,y,3\\n2.5,1,z,7\\n3.5,0,w,3\\n")
>>> t = load_table(p, label="kind", ignore=["id"])
>>> t.X.tolist(), t.y.tolist(), t.y.dtype.kind, t.feature_names
([[0.5, 1.0], [1.5, 0.0], [2.5, 1.0], [3.5, 0.0]], [7, 3, 7, 3], 'i', ['a', 'b'])
>>> t.options
{'label': 'kind', 'ignore': ['id']}
"""

import csv
import gzip
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = ["Table", "Split", "load_table", "load_binary", "load_recorded", "train_test",
           "typed_labels", "dataset_reference", "recorded_options", "add_data_options",
           "data_options", "binary_rows", "table_rows", "TABLE_SETS", "BINARY_SETS",
           "DEFAULT_LABEL", "MAX_CSV_BYTES"]

#: scikit-learn's bundled multi-class sets (numeric features).
TABLE_SETS = ("digits", "iris", "wine", "breast_cancer")
#: edgecode's bundled binary-feature sets (``edgecode.datasets.NAMES``).
BINARY_SETS = ("house_votes", "nltcs", "dna")
DEFAULT_LABEL = "class"
#: Largest CSV a command reads into memory (bytes of text, before parsing):
#: parsing keeps every field as a Python string, about 60 bytes each.
MAX_CSV_BYTES = 512 * 2 ** 20


@dataclass(frozen=True)
class Table:
    """Rows of a dataset: numeric features, labels as the source has them.

    Attributes
    ----------
    X : ndarray of shape (n_rows, n_features), float64
    y : ndarray of shape (n_rows,) or None
        int64, float64 or str labels (see :func:`typed_labels`); None when
        the data has no label column and none was required.
    split : ndarray of str or None
    feature_names : list of str
    name : str
        For messages (``"glass.csv"``, ``"sklearn digits"``).
    source : str
        What an artifact records as its dataset: a bundled name or the
        CSV's absolute path.
    options : dict
        The non-default data options (``label``, ``ignore``, ``positive``),
        recorded next to ``source``.
    target_names : list or None
        For a binary task made with ``positive``: ``["not V", "V"]``.
    """

    X: np.ndarray
    y: object
    split: object = None
    feature_names: list = field(default_factory=list)
    name: str = ""
    source: str = ""
    options: dict = field(default_factory=dict)
    target_names: object = None

    @property
    def classes(self):
        """Sorted distinct labels (None without labels)."""
        return None if self.y is None else np.unique(self.y)

    def rows(self, part):
        """The rows of one split part (``"train"``, ``"test"``, ...; ``"all"``: every row)."""
        if part == "all" or self.split is None:
            return self
        keep = self.split == part
        if not keep.any():
            raise ValueError(f"dataset {self.name!r} has no rows in split {part!r} (its split "
                             f"column holds {sorted(set(self.split.tolist()))[:6]})")
        return Table(self.X[keep], None if self.y is None else self.y[keep], self.split[keep],
                     self.feature_names, self.name, self.source, self.options,
                     self.target_names)


@dataclass(frozen=True)
class Split:
    """Train and test rows and how they were chosen (``how``, for the report)."""

    X_train: np.ndarray
    y_train: object
    X_test: np.ndarray
    y_test: object
    how: str


def typed_labels(values):
    """Labels read as text, typed: int64 if every value is an integer, float64 if
    every value is an integral number written as a float (``1.0``), else str
    (stripped; ``1.5`` and ``2.5`` are class names, which scikit-learn's
    classifiers would refuse as numbers).

    >>> typed_labels(["1", "2", "7"]).tolist(), typed_labels(["1.0", "2.0"]).dtype.name
    ([1, 2, 7], 'float64')
    >>> typed_labels(["1.5", "2.5"]).tolist()
    ['1.5', '2.5']
    >>> typed_labels(["cp", " im "]).tolist()
    ['cp', 'im']
    """
    vals = [str(v).strip() for v in values]
    try:
        ints = [int(v) for v in vals]
        if all(-2 ** 63 <= v < 2 ** 63 for v in ints):
            return np.array(ints, dtype=np.int64)
    except ValueError:
        pass
    try:
        floats = [float(v) for v in vals]
        # integral floats only: scikit-learn's classifiers refuse others ("continuous"),
        # so 1.5 / 2.5 are names of classes, kept as text
        if all(math.isfinite(v) and v == int(v) for v in floats):
            return np.array(floats, dtype=np.float64)
    except (ValueError, OverflowError):
        pass
    return np.array(vals, dtype=str)


def _columns(option, value):
    if value is None:
        return []
    if isinstance(value, str):
        return [c.strip() for c in value.split(",") if c.strip()]
    return [str(c) for c in value]


def _read_rows(path):
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no such CSV file: {path}")
    if path.is_dir():
        raise ValueError(f"{path} is a directory, not a CSV file")
    size = path.stat().st_size
    limit = MAX_CSV_BYTES // (8 if path.name.endswith(".gz") else 1)
    if size > limit:
        raise ValueError(f"{path}: {size:,} bytes is above the {limit:,} bytes a command reads "
                         "into memory (export.data.MAX_CSV_BYTES); sample the rows first")
    opener = gzip.open if path.name.endswith(".gz") else open
    try:
        with opener(path, "rt", newline="") as fh:
            rows = [r for r in csv.reader(fh) if r]
    except (OSError, UnicodeDecodeError, csv.Error, EOFError) as exc:
        raise ValueError(f"{path}: cannot be read as a CSV file ({exc})") from None
    if len(rows) < 2:
        raise ValueError(f"{path}: needs a header row and at least one data row")
    header, body = [h.strip() for h in rows[0]], rows[1:]
    for i, r in enumerate(body):
        if len(r) != len(header):
            raise ValueError(f"{path}: row {i + 2} has {len(r)} fields, the header has "
                             f"{len(header)}")
    return header, body


def _name_of(path):
    name = Path(path).name
    return name[:-len(".gz")] if name.endswith(".gz") else name


def _make_binary_labels(y, positive, where):
    vals = sorted({str(v) for v in y.tolist()})
    if str(positive) not in vals:
        raise ValueError(f"{where}: positive={positive!r} is not a value of the label column; "
                         f"values are {vals[:10]}{' ...' if len(vals) > 10 else ''}")
    return (np.array([str(v) for v in y.tolist()]) == str(positive)).astype(np.int64), \
        [f"not {positive}", str(positive)]


def _columns_of(path, label, ignore, require_label):
    """The CSV's rows and which column is what: ``(header, body, label index or None,
    split index or None, feature column indices)``; the column rules of every command."""
    header, body = _read_rows(path)
    missing = [c for c in ignore if c not in header]
    if missing:
        raise ValueError(f"{path}: cannot ignore {missing}: no such column (columns: "
                         f"{header[:8]}{' ...' if len(header) > 8 else ''})")
    if label in ignore:
        raise ValueError(f"{path}: the label column {label!r} cannot also be ignored")
    li = header.index(label) if label in header else None
    if li is None and require_label:
        raise ValueError(f"{path}: no label column {label!r} (name it with --label COL; columns: "
                         f"{header[:8]}{' ...' if len(header) > 8 else ''})")
    si = header.index("split") if "split" in header and label != "split" else None
    skip = {li, si, *(header.index(c) for c in ignore)}
    fcols = [j for j in range(len(header)) if j not in skip]
    if not fcols:
        raise ValueError(f"{path}: no feature columns left")
    return header, body, li, si, fcols


def _features(path, header, body, fcols, binary=False):
    """The feature columns as float64 numbers, or (``binary``) as uint8 0/1; an
    unreadable field raises ValueError naming its row, column and the fix."""
    X = np.empty((len(body), len(fcols)), dtype=np.uint8 if binary else np.float64)
    for i, r in enumerate(body):
        for k, j in enumerate(fcols):
            v = r[j].strip()
            if binary:
                if v not in ("0", "1"):
                    raise ValueError(f"{path}: row {i + 2}, column {header[j]!r} must be 0 or 1; "
                                     f"got {v!r} (naive Bayes reads binary features; leave the "
                                     f"column out with --ignore {header[j]})")
                X[i, k] = v == "1"
                continue
            try:
                x = float(v)
            except ValueError:
                x = None
            if x is None or not math.isfinite(x):
                what = "is empty" if not v else f"is {v!r}, not a finite number"
                raise ValueError(f"{path}: row {i + 2}, column {header[j]!r} {what} (features "
                                 f"must be numbers; leave the column out with --ignore "
                                 f"{header[j]}, or fill missing values first)")
            X[i, k] = x
    return X


def _source_path(src):
    """A CSV path from a dataset argument that names no bundled set."""
    if not src.endswith((".csv", ".csv.gz", ".gz")) and not Path(src).exists():
        raise ValueError(f"unknown dataset {src!r}: give a bundled set "
                         f"{list(TABLE_SETS + BINARY_SETS)} or the path of a .csv or .csv.gz "
                         "file")
    return Path(src)


def _options(label, ignore, positive):
    opts = {}
    if label != DEFAULT_LABEL:
        opts["label"] = label
    if ignore:
        opts["ignore"] = list(ignore)
    if positive is not None:
        opts["positive"] = str(positive)
    return opts


def load_table(source, *, label=DEFAULT_LABEL, ignore=(), positive=None, require_label=True):
    """Numeric rows of a bundled set or a CSV file, labels typed as in the file.

    Parameters
    ----------
    source : str or Path
        A bundled set (``digits``, ``iris``, ``wine``, ``breast_cancer``;
        the binary ``house_votes``, ``nltcs``, ``dna`` as 0/1 floats) or a
        ``.csv``/``.csv.gz`` path with a header row.
    label : str
        The label column (``--label``).
    ignore : str or sequence of str
        Columns to leave out (``--ignore``, a comma list on the command line).
    positive : optional
        A label value to make class 1 against all the others (``--positive``).
    require_label : bool
        Refuse a CSV without the label column (``hash`` does not need one).

    Returns
    -------
    Table

    Raises
    ------
    ValueError
        Naming the file, the row and the column of what is wrong (a missing
        label column, a non-numeric or missing feature value, an unknown
        column to ignore).
    """
    ignore = _columns("ignore", ignore)
    label = DEFAULT_LABEL if label is None else str(label)
    src = str(source)
    if src in TABLE_SETS or src in BINARY_SETS:
        if label != DEFAULT_LABEL or ignore:
            raise ValueError(f"{src!r} is a bundled dataset: --label and --ignore apply to CSV "
                             "files only")
        if src in TABLE_SETS:
            from sklearn import datasets as skd
            d = getattr(skd, f"load_{src}")()
            X, y, names, split = d.data.astype(np.float64), d.target.astype(np.int64), \
                [str(n) for n in getattr(d, "feature_names", [])], None
            name = f"sklearn {src}"
        else:
            from edgecode import datasets
            d = datasets.load(src)
            X, y, names, split, name = d.X.astype(np.float64), d.y, list(d.feature_names), \
                d.split, src
        target_names = None
        if positive is not None:
            y, target_names = _make_binary_labels(y, positive, src)
        return Table(X, y, split, names or [f"x{j}" for j in range(X.shape[1])], name, src,
                     _options(label, ignore, positive), target_names)
    path = _source_path(src)
    header, body, li, si, fcols = _columns_of(path, label, ignore,
                                              require_label or positive is not None)
    X = _features(path, header, body, fcols)
    y = typed_labels([r[li] for r in body]) if li is not None else None
    target_names = None
    if positive is not None:
        y, target_names = _make_binary_labels(y, positive, str(path))
    split = np.array([r[si].strip() for r in body]) if si is not None else None
    return Table(X, y, split, [header[j] for j in fcols], _name_of(path),
                 str(path.resolve()), _options(label, ignore, positive), target_names)


def load_binary(source, *, label=DEFAULT_LABEL, ignore=(), positive=None):
    """A binary-feature, two-class dataset for naive Bayes: a bundled set or a CSV.

    The same reader and options as :func:`load_table` (``label``, ``ignore``,
    ``positive``, a ``split`` column), with the rules naive Bayes needs:
    every feature field is ``0`` or ``1``, and the label column has exactly
    two values (label 1 is the larger one, in the typed order of
    :func:`typed_labels`) unless ``positive`` names one value to stand
    against all the others (label 1).

    Parameters
    ----------
    source : str or Path
        A bundled binary set (``house_votes``, ``nltcs``, ``dna``; see
        :mod:`edgecode.datasets`) or a ``.csv``/``.csv.gz`` path.
    label, ignore, positive
        As :func:`load_table`.

    Returns
    -------
    edgecode.datasets.BinaryDataset
        For a CSV, ``class_labels`` holds the labels a model fitted on the
        rows predicts (the file's values, typed: ``[3, 7]``,
        ``["democrat", "republican"]``; with ``positive``, ``["not V",
        "V"]``); ``name`` is the file name without ``.csv``/``.gz``.

    Raises
    ------
    ValueError
        Naming the file, the row and the column (a field that is not 0 or 1,
        a label column without exactly two values, ...).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "d.csv"
    >>> _ = p.write_text("a,b,id,class\\n1,0,x,ei\\n0,1,y,n\\n1,1,z,ie\\n")
    >>> d = load_binary(p, positive="n", ignore=["id"])
    >>> d.X.tolist(), d.y.tolist(), d.target_names, d.class_labels.tolist()
    ([[1, 0], [0, 1], [1, 1]], [0, 1, 0], ['not n', 'n'], ['not n', 'n'])
    """
    from edgecode import datasets

    ignore = _columns("ignore", ignore)
    label = DEFAULT_LABEL if label is None else str(label)
    src = str(source)
    if src in datasets.NAMES:
        if label != DEFAULT_LABEL or ignore or positive is not None:
            raise ValueError(f"{src!r} is a bundled dataset: --label, --ignore and "
                             "--positive apply to CSV files only")
        return datasets.load(src)
    if src in TABLE_SETS:
        raise ValueError(f"{src!r} has numeric features; naive Bayes needs 0/1 features: give "
                         f"a bundled binary set {list(BINARY_SETS)} or a CSV of 0/1 columns")
    path = _source_path(src)
    header, body, li, si, fcols = _columns_of(path, label, ignore, True)
    # the label rule first: a multi-class file gets the --positive hint before any
    # complaint about its feature columns
    y_typed = typed_labels([r[li] for r in body])
    if positive is not None:
        y, target_names = _make_binary_labels(y_typed, positive, str(path))
        class_labels = np.array(target_names, dtype=str)
    else:
        values = np.unique(y_typed)
        if len(values) != 2:
            shown = [str(v) for v in values[:10]]
            raise ValueError(f"{path}: the label column {label!r} must have exactly two values "
                             f"for naive Bayes; got {shown}{' ...' if len(values) > 10 else ''} "
                             "(pick one against the rest with positive=..., '--positive VALUE' "
                             "on the command line)")
        y = (y_typed == values[1]).astype(np.int64)
        target_names, class_labels = [str(v) for v in values], values
    X = _features(path, header, body, fcols, binary=True)
    split = np.array([r[si].strip() for r in body]) if si is not None else None
    name = _name_of(path)
    name = name[:-len(".csv")] if name.endswith(".csv") else name
    return datasets.BinaryDataset(X, y, [header[j] for j in fcols], target_names, split,
                                  f"CSV {path}", name, class_labels)


def dataset_reference(source, options):
    """``(meta["dataset"], meta["dataset_options"] or None)`` to record in an artifact."""
    src = str(source)
    if src not in TABLE_SETS + BINARY_SETS and Path(src).exists():
        src = str(Path(src).resolve())
    return src, (json.dumps(options, sort_keys=True) if options else None)


def recorded_options(container, source):
    """The data options an artifact records for ``source`` ({} if it records none, or
    records another dataset). Older artifacts wrote ``target`` for the label column."""
    meta = getattr(container, "meta", None) or {}
    text = meta.get("dataset_options")
    if not text or str(source) != str(meta.get("dataset")):
        return {}
    try:
        opts = dict(json.loads(text))
    except (TypeError, ValueError):
        raise ValueError("the artifact's meta 'dataset_options' is not a JSON object; pass "
                         "--data") from None
    if "target" in opts:
        opts.setdefault("label", opts.pop("target"))
    unknown = sorted(set(opts) - {"label", "ignore", "positive"})
    if unknown:
        raise ValueError(f"the artifact's meta 'dataset_options' has unknown keys {unknown}")
    return opts


def load_recorded(container, source=None, *, binary=False, **overrides):
    """The rows an artifact was made from: ``source`` (default: its recorded dataset)
    with the options it records, updated by ``overrides`` that are not None."""
    meta = getattr(container, "meta", None) or {}
    if source is None:
        source = meta.get("dataset")
        if source is None:
            raise ValueError("the artifact records no dataset; pass --data")
    if not isinstance(source, str):
        raise ValueError(f"the artifact's meta 'dataset' must be a name or a path; got "
                         f"{source!r}")
    if source.startswith("sklearn ") and source[len("sklearn "):] in TABLE_SETS:
        source = source[len("sklearn "):]       # older ECOC artifacts recorded the label
    opts = recorded_options(container, source)
    opts.update({k: v for k, v in overrides.items() if v is not None})
    if binary:
        return load_binary(source, **opts)
    return load_table(source, **opts)


def train_test(table, *, test_size=0.3, seed=0):
    """Train and test rows: the table's own ``split`` (``train``/``test``) when it has
    both, else ``test_size`` of the rows held out, stratified by label when every
    class has at least two rows, shuffled with ``seed``.

    Returns
    -------
    Split
    """
    X, y, split = table.X, table.y, table.split
    if split is not None and {"train", "test"} <= set(split.tolist()):
        tr, te = split == "train", split == "test"
        return Split(X[tr], None if y is None else y[tr], X[te], None if y is None else y[te],
                     "its train/test split")
    if not 0.0 < float(test_size) < 1.0:
        raise ValueError(f"test_size must be in (0, 1); got {test_size!r}")
    n = len(X)
    n_test = int(math.ceil(float(test_size) * n))
    if n < 2 or n_test < 1 or n_test >= n:
        raise ValueError(f"{table.name or 'data'}: {n} rows cannot be split with "
                         f"test_size={test_size}")
    from sklearn.model_selection import train_test_split

    stratify = None
    if y is not None:
        _, counts = np.unique(y, return_counts=True)
        if counts.min() >= 2 and n_test >= len(counts) and n - n_test >= len(counts):
            stratify = y
    # scikit-learn's shuffled order, as every command used before this module
    if y is None:
        Xtr, Xte = train_test_split(X, test_size=test_size, random_state=seed)
        ytr = yte = None
    else:
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=test_size, random_state=seed,
                                              stratify=stratify)
    how = (f"{'stratified ' if stratify is not None else 'random '}"
           f"{1 - float(test_size):.0%}/{float(test_size):.0%} split (seed {seed})")
    return Split(Xtr, ytr, Xte, yte, how)


def add_data_options(parser, *, positive=True, label_help=None):
    """Add ``--label``, ``--ignore`` (and ``--positive``) to an argparse parser, the
    same on every command."""
    parser.add_argument("--label", default=None, metavar="COL",
                        help=label_help or "label column of a CSV (default: 'class')")
    parser.add_argument("--ignore", default=None, metavar="COLS",
                        help="comma list of CSV columns to leave out (identifiers, file names)")
    if positive:
        parser.add_argument("--positive", default=None, metavar="VALUE",
                            help="make this label value class 1 and every other value class 0 "
                            "(one against the rest, where two classes are needed)")


def data_options(args):
    """``--label``, ``--ignore``, ``--positive`` of parsed arguments as the options of
    :func:`load_table` / :func:`load_binary` / :func:`load_recorded` (only those
    given)."""
    opts = {}
    if getattr(args, "label", None) is not None:
        opts["label"] = args.label
    if getattr(args, "ignore", None):
        opts["ignore"] = _columns("--ignore", args.ignore)
    if getattr(args, "positive", None) is not None:
        opts["positive"] = args.positive
    return opts


def _class_indices(container, y):
    """True labels as the artifact's class indices, through ``meta["classes"]``."""
    classes = (container.meta or {}).get("classes")
    if y is None or classes is None:
        return None
    index = {str(c): i for i, c in enumerate(classes)}
    keys = [str(v) for v in y.tolist()]
    unknown = sorted(set(keys) - set(index))
    if unknown:
        # integer-valued float labels were recorded as "3.0" by a float fit, "3" by an int one
        alt = {}
        for c, i in index.items():
            try:
                alt[repr(float(c))] = i
            except ValueError:
                pass
        try:
            keys2 = [repr(float(k)) for k in keys]
        except ValueError:
            keys2 = None
        if keys2 is not None and set(keys2) <= set(alt):
            return np.array([alt[k] for k in keys2], np.int64)
        raise ValueError(f"labels {unknown[:5]} are not among the artifact's classes "
                         f"{list(classes)[:10]}")
    return np.array([index[k] for k in keys], np.int64)


def binary_rows(container, dataset, split, **options):
    """``(X, y, name)`` for a protected naive Bayes artifact: 0/1 features and the
    true labels as the artifact's class indices (through ``meta["classes"]``; the
    dataset's 0/1 labels for an artifact that records no classes)."""
    if isinstance(dataset, str):
        data = load_recorded(container, dataset, binary=True, **options)
    elif isinstance(dataset, (tuple, list)):
        X, y = dataset[:2]
        return np.asarray(X), None if y is None else np.asarray(y), "array"
    else:
        data = dataset
    rows = data.subset(split) if (data.split is not None and split != "all") else data
    # the artifact's class indices of the true labels (a CSV's labels sort as the
    # model's classes_, which need not be the dataset's 0/1 order: "b" < "not b")
    y = _class_indices(container, rows.labels())
    return rows.X, rows.y if y is None else y, data.name


def table_rows(container, dataset, split, **options):
    """``(X, y as class indices or None, name)`` for an artifact with numeric inputs
    (ECOC, SSBC, ...): a bundled name or CSV path (with the options the artifact
    records, updated by ``options``), or an ``(X, y)`` pair of true labels."""
    if isinstance(dataset, str):
        t = load_recorded(container, dataset, require_label=False, **options).rows(split)
        X, y, name = t.X, t.y, t.name
    else:
        X, y = dataset[:2]
        y = None if y is None else np.asarray(y)
        name = "array"
    return np.asarray(X, np.float64), _class_indices(container, y), name
