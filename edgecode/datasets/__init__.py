"""Small real datasets bundled with edgecode (no download, no pickle).

``load_house_votes`` -- UCI Congressional Voting Records (1984), 435 x 16.
``load_nltcs`` -- National Long Term Care Survey binary variables, 21574 x 16.
``load_dna`` -- Statlog DNA splice junctions, 3186 x 180 binary indicators.

This module provides the bundled sets only, so that the offline package
(which never imports ``export``) has real data for its examples, tests and
benchmarks. CSV files are read by one loader, :func:`export.data.load_table`
(numeric features) and :func:`export.data.load_binary` (0/1 features, two
classes: a :class:`BinaryDataset`), the reader of every command.

Provenance: both files are copied unchanged from the project's offline dataset
collection; house votes from the UCI house-votes-84.data (Congressional
Quarterly Almanac 1984, donor J. Schlimmer), NLTCS from the density-estimation
suite of Lowd & Davis (ICDM 2010) with its train/valid/test split; DNA from
the R package mlbench 2.1-8 (``data/DNA.rda``: the UCI StatLog "DNA" primate
splice-junction data of Towell, Noordewier & Shavlik), as
``dna_statlog.csv.gz`` of the project's dataset collection.
"""

import csv
import gzip
from dataclasses import dataclass, field
from importlib import resources

import numpy as np

__all__ = ["BinaryDataset", "load_house_votes", "load_nltcs", "load_dna", "load", "NAMES"]


@dataclass(frozen=True)
class BinaryDataset:
    """A binary-feature, two-class dataset.

    Attributes
    ----------
    X : ndarray of shape (n_samples, n_features), uint8 in {0, 1}
    y : ndarray of shape (n_samples,), int64 in {0, 1}
    feature_names : list of str
    target_names : list of str
        ``target_names[k]`` is what label ``k`` means.
    split : ndarray of str or None
        ``"train"``/``"valid"``/``"test"`` per row where the source defines one.
    description : str
    class_labels : ndarray of shape (2,) or None
        The labels a model trained on these rows should predict for class 0
        and class 1, typed as in the source (``export.data.load_binary``
        sets them for a CSV: ``["democrat", "republican"]``, ``[3, 7]``);
        None for the bundled sets, whose labels are the documented 0 and 1.
    """

    X: np.ndarray
    y: np.ndarray
    feature_names: list
    target_names: list
    split: object = None
    description: str = ""
    name: str = field(default="")
    class_labels: object = None

    def labels(self, y=None):
        """The labels to train on: ``class_labels[y]``, or ``y`` itself (0/1) without them."""
        y = self.y if y is None else np.asarray(y)
        return y if self.class_labels is None else np.asarray(self.class_labels)[y]

    def subset(self, part):
        """Rows of one split (``"train"``, ``"valid"`` or ``"test"``)."""
        if self.split is None:
            raise ValueError(f"dataset {self.name!r} has no split column")
        mask = self.split == part
        if not mask.any():
            raise ValueError(f"dataset {self.name!r} has no rows in split {part!r}")
        return BinaryDataset(self.X[mask], self.y[mask], self.feature_names,
                             self.target_names, self.split[mask], self.description, self.name,
                             self.class_labels)


def _open_text(name):
    ref = resources.files(__package__).joinpath("data", name)
    raw = ref.read_bytes()
    if name.endswith(".gz"):
        raw = gzip.decompress(raw)
    return raw.decode("utf-8").splitlines()


def load_house_votes():
    """UCI house-votes-84 as binary features.

    Encoding: ``y`` (yea) -> 1; ``n`` (nay) and ``?`` (not voted) -> 0.  The
    seed paper uses the 16 votes as binary features; a ``?`` is an absent yea,
    so it shares the 0 symbol with ``n`` rather than being imputed.  Class:
    republican -> 1, democrat -> 0.

    Returns
    -------
    BinaryDataset with X of shape (435, 16).

    Examples
    --------
    >>> from edgecode.datasets import load_house_votes
    >>> d = load_house_votes()
    >>> d.X.shape, int(d.y.sum())
    ((435, 16), 168)
    """
    rows = list(csv.reader(_open_text("house_votes_84.csv")))
    header, body = rows[0], rows[1:]
    votes = np.array([[1 if v == "y" else 0 for v in r[:-1]] for r in body], dtype=np.uint8)
    labels = np.array([1 if r[-1] == "republican" else 0 for r in body], dtype=np.int64)
    return BinaryDataset(votes, labels, header[:-1], ["democrat", "republican"], None,
                         "UCI Congressional Voting Records 1984; y->1, n/?->0; republican=1",
                         "house_votes")


#: NLTCS has no label column; we use v0 as the class and v1..v15 as features
#: (the seed paper's setup: n = 15 features, t = 3236 test points).
NLTCS_CLASS_VARIABLE = "v0"


def load_nltcs():
    """NLTCS binary survey variables: ``v0`` as the class, ``v1..v15`` as features.

    The density-estimation release has no label; the seed paper uses 15
    features, so one of the 16 variables becomes the class.  We take ``v0``
    (the first variable; documented choice, the paper does not name it).  The
    official train/valid/test split is kept in ``split`` (test: 3236 rows).

    Examples
    --------
    >>> from edgecode.datasets import load_nltcs
    >>> d = load_nltcs()
    >>> d.X.shape, int((d.split == "test").sum())
    ((21574, 15), 3236)
    """
    rows = list(csv.reader(_open_text("nltcs.csv.gz")))
    header, body = rows[0], rows[1:]
    data = np.array([[int(v) for v in r[:16]] for r in body], dtype=np.uint8)
    split = np.array([r[16] for r in body])
    ci = header.index(NLTCS_CLASS_VARIABLE)
    feats = [j for j in range(16) if j != ci]
    return BinaryDataset(np.ascontiguousarray(data[:, feats]), data[:, ci].astype(np.int64),
                         [header[j] for j in feats], ["v0=0", "v0=1"], split,
                         "NLTCS (Lowd & Davis 2010); class v0, features v1..v15", "nltcs")


def load_dna():
    """Statlog DNA: 180 binary nucleotide indicators, splice junction or not.

    3186 primate DNA windows of 60 nucleotides, each coded by three binary
    indicators (mlbench's ``DNA`` data, UCI StatLog).  The source has three
    classes, exon/intron boundary ``ei`` (767), intron/exon ``ie`` (765) and
    neither ``n`` (1654); here class 1 is a junction (``ei`` or ``ie``) and
    class 0 is ``n``.  No split: the planning examples fit and plan on all
    rows.  The same file, with its three labels, is what ``edgecode plan
    dna_statlog.csv.gz --positive n`` reads (that labels ``n`` as 1, which
    flips every margin's sign and leaves every SCP unchanged).

    Examples
    --------
    >>> from edgecode.datasets import load_dna
    >>> d = load_dna()
    >>> d.X.shape, int(d.y.sum())
    ((3186, 180), 1532)
    """
    rows = list(csv.reader(_open_text("dna_statlog.csv.gz")))
    header, body = rows[0], rows[1:]
    X = np.array([[int(v) for v in r[:-1]] for r in body], dtype=np.uint8)
    y = np.array([0 if r[-1] == "n" else 1 for r in body], dtype=np.int64)
    return BinaryDataset(X, y, header[:-1], ["n", "ei or ie"], None,
                         "Statlog DNA splice junctions (mlbench DNA); class 1 = ei or ie",
                         "dna")


_LOADERS = {"house_votes": load_house_votes, "nltcs": load_nltcs, "dna": load_dna}
NAMES = tuple(_LOADERS)


def load(name):
    """Load a bundled dataset by name (see ``NAMES``).

    Examples
    --------
    >>> from edgecode.datasets import load
    >>> load("house_votes").X.shape
    (435, 16)
    """
    if name in _LOADERS:
        return _LOADERS[name]()
    hint = (" (CSV files are read by export.data.load_binary, or load_table for numeric "
            "features)") if str(name).endswith((".csv", ".gz")) else ""
    raise ValueError(f"unknown dataset {name!r}: the bundled sets are {list(NAMES)}{hint}")
