"""Shared helpers for the benchmark scripts: timing, tables, the shared datasets.

Benchmarks may read the larger sets from ``../shared/datasets/`` (relative to
the repository root; override with ``EDGECODE_SHARED_DATA``). Tests never do.
"""

import gzip
import csv
import os
import statistics
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("EDGECODE_SHARED_DATA", ROOT.parent / "shared" / "datasets"))
FIGURES = ROOT / "benchmarks" / "figures"


def shared_csv(name):
    """(header, rows) of a CSV (or .csv.gz) from the shared datasets folder."""
    path = SHARED / name
    if not path.exists():
        raise SystemExit(f"benchmark data {path} not found; set EDGECODE_SHARED_DATA")
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", newline="") as fh:
        rows = list(csv.reader(fh))
    return rows[0], rows[1:]


#: The text corpora of ``../shared/datasets`` (one or several gzip CSVs each).
TEXT_SETS = {"reuters_r8": ["reuters_r8.csv.gz"],
             "20newsgroups": ["20newsgroups_train.csv.gz", "20newsgroups_test.csv.gz"]}


def shared_text(name, max_docs=None):
    """(documents as an object array, class indices) of a text corpus
    (:data:`TEXT_SETS`); with ``max_docs``, a stratified subsample of that many
    documents (seed 0)."""
    csv.field_size_limit(2**31 - 1)
    text, label = [], []
    for part in TEXT_SETS[name]:
        path = SHARED / part
        if not path.exists():
            raise SystemExit(f"benchmark data {path} not found; set EDGECODE_SHARED_DATA")
        with gzip.open(path, "rt", newline="") as fh:
            r = csv.reader(fh)
            header = next(r)
            ti, ci = header.index("text"), header.index("class")
            for row in r:
                text.append(row[ti])
                label.append(row[ci])
    _, y = np.unique(label, return_inverse=True)
    text = np.array(text, dtype=object)
    if max_docs and len(y) > max_docs:
        from sklearn.model_selection import train_test_split
        keep, _ = train_test_split(np.arange(len(y)), train_size=max_docs, stratify=y,
                                   random_state=0)
        text, y = text[keep], y[keep]
    return text, y


def median_time(fn, repeats=5, warmup=1):
    """Median wall time of ``fn()`` over ``repeats`` runs after ``warmup`` runs."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def first_call_time(fn):
    """Wall time of one call (use on a fresh process to include JIT compile/cache load)."""
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def print_table(header, rows):
    """Semicolon-separated, parseable table."""
    print(";".join(header))
    for r in rows:
        print(";".join(_fmt(v) for v in r))


def _fmt(v):
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def machine():
    import platform
    return f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, " \
           f"Python {platform.python_version()}, numpy {np.__version__}"


def synthetic_nb(n, t, seed=0, n_fit=2000):
    """Margins and flip effects of a naive Bayes model on synthetic binary data.

    n features with class-conditional probabilities p0 ~ Beta(1, 3) and
    p1 = p0 + N(0, 0.08) (clipped to [0.01, 0.99]); the model is fitted on
    ``n_fit`` generated rows and evaluated on the next t (the planning points).
    """
    from edgecode.naive_bayes import BinaryNaiveBayes
    rng = np.random.default_rng(seed)
    p0 = rng.beta(1, 3, n)
    p1 = np.clip(p0 + rng.normal(0, 0.08, n), 0.01, 0.99)
    y = rng.integers(0, 2, n_fit + t)
    X = (rng.random((len(y), n)) < np.where(y[:, None] == 1, p1, p0)).astype(np.uint8)
    nb = BinaryNaiveBayes().fit(X[:n_fit], y[:n_fit])
    return nb.decision_function(X[n_fit:]), nb.flip_deltas(X[n_fit:])
