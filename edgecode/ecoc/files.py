"""Coding matrices in files: ``.npy``, ``.csv`` and ``.json`` (``edgecode codes --out``).

A coding matrix alone is not a model (it has no learners), so it is saved in
a plain matrix format, never as a device container (``.edgc``, which holds
device images that ``firmware_sim.load`` runs). To use a saved matrix, give it
to :class:`~edgecode.ecoc.ECOCClassifier` as ``code=load_code(path)``.

Formats:

* ``.npy`` -- the integer matrix (``numpy.save``, no pickle);
* ``.csv`` -- one row per class, integers separated by commas, no header;
* ``.json`` -- an object with ``"code"`` (the matrix as a list of rows) and
  the design's metadata beside it (``design``, ``n_symbols``, ``seed``,
  ``options``, ``d_r``, ``d_c``, as ``edgecode codes`` writes them).

Entries are ``-1`` (the class is not used by the column) or symbols
``0 .. N-1``.
"""

import json
from pathlib import Path

import numpy as np

__all__ = ["save_code", "load_code", "CODE_SUFFIXES"]

#: The file formats of a coding matrix.
CODE_SUFFIXES = (".npy", ".csv", ".json")


def _suffix(path):
    suffix = Path(path).suffix.lower()
    if suffix == ".edgc":
        raise ValueError(f"{Path(path).name}: a coding matrix is not a device model (it has no "
                         "learners), so it is not written as a container (.edgc); save it as "
                         f"{', '.join(CODE_SUFFIXES)} and train with it "
                         "(ECOCClassifier(code=load_code(path)), or 'edgecode ecoc DATA "
                         "--code DESIGN --out model.edgc' for a device container)")
    if suffix not in CODE_SUFFIXES:
        raise ValueError(f"a coding matrix file must end in one of {', '.join(CODE_SUFFIXES)}; "
                         f"got {Path(path).name!r}")
    return suffix


def save_code(M, path, meta=None):
    """Write the coding matrix ``M`` to ``path`` (format by suffix, see the module).

    Parameters
    ----------
    M : array-like of int, shape (n_classes, n_columns)
    path : str or Path
        Ending in ``.npy``, ``.csv`` or ``.json``.
    meta : dict, optional
        Stored next to the matrix in ``.json`` (JSON values); ignored by the
        other formats.

    Returns
    -------
    Path

    Raises
    ------
    ValueError
        Another suffix (``.edgc`` with the reason), or a matrix that is not
        integer and 2-D.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from edgecode.ecoc import nary
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> M = nary(4, 6, N=3)
    >>> p = save_code(M, d / "c.json", meta={"design": "nary", "n_symbols": 3})
    >>> bool((load_code(p) == M).all()), load_code(d / "c.json").dtype
    (True, dtype('int16'))
    """
    suffix = _suffix(path)
    M = np.asarray(M)
    if M.ndim != 2 or not (np.issubdtype(M.dtype, np.integer) or M.dtype == bool):
        raise ValueError(f"a coding matrix is a 2-D integer array; got dtype {M.dtype} and "
                         f"shape {M.shape}")
    path = Path(path)
    if suffix == ".npy":
        np.save(path, M, allow_pickle=False)
    elif suffix == ".csv":
        np.savetxt(path, M, fmt="%d", delimiter=",")
    else:
        doc = {"code": M.astype(np.int64).tolist(), **(meta or {})}
        path.write_text(json.dumps(doc) + "\n")
    return path


def load_code(path):
    """Read a coding matrix saved by :func:`save_code` (or any file of those formats).

    Returns
    -------
    ndarray of int16, shape (n_classes, n_columns)
        Checked as ``ECOCClassifier`` checks an explicit ``code``.

    Raises
    ------
    ValueError
        An unknown suffix, an unreadable file, or entries that are not a
        coding matrix (the message says which rule).
    """
    from .classifier import check_code_matrix

    suffix = _suffix(path)
    path = Path(path)
    try:
        if suffix == ".npy":
            M = np.load(path, allow_pickle=False)
        elif suffix == ".csv":
            M = np.loadtxt(path, delimiter=",", dtype=np.float64, ndmin=2)
        else:
            doc = json.loads(path.read_text())
            if not isinstance(doc, dict) or "code" not in doc:
                raise ValueError("a JSON coding matrix is an object with a 'code' list of rows")
            M = np.array(doc["code"], dtype=np.float64)
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: cannot be read as a coding matrix ({exc})") from None
    except ValueError as exc:
        raise ValueError(f"{path}: not a coding matrix ({exc})") from None
    return check_code_matrix(M, name=path.name, warn=False)[0]
