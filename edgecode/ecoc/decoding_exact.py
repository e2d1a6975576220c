"""Exact probability of correct Hamming decoding under a q-ary symmetric channel.

An ECOC ensemble with coding matrix ``M`` (c x L, entries -1 or 0..N-1)
decodes a received word ``v`` in ``{0, ..., N-1}^L`` to the row of smallest
doubled distance ``D_r(v) = sum_l (1 if M[r, l] == -1 else 2 [v_l != M[r, l]])``,
the lowest row index on ties (the device's rule, ``firmware_sim.ecoc``, and
``ECOCClassifier``'s).  Noisy learners: each output independently keeps its
symbol with probability ``1 - eps`` and is otherwise replaced by one of the
``N - 1`` other symbols chosen uniformly (for N = 2: flipped).

* :func:`decoding_probabilities`: for given clean output words ``w`` (any
  word, not only codewords) and target classes ``k``, the exact
  ``P(decode(w + noise) == k)``; by default ``k`` is the clean label of ``w``
  (the same-classification probability).
* :func:`codeword_decoding_probabilities`: ``P(correct | class i)`` when the
  clean output is row i's codeword.

Both label every one of the ``N^L`` received words once (``O(c N^L)``) and
then apply the channel to each needed class indicator, one learner axis at
a time (``O(L N^L)`` per class), whatever the number of words asked about,
where a direct enumeration costs ``O(c L N^L)`` per distinct word.  They
are limited to ``N^L <= max_words`` (default ``2**22``: binary L <= 22,
3-ary L <= 13, 5-ary L <= 9).  Beyond that only bounds apply (the decoding
radius: at most ``floor((d_r - 1) / 2)`` errors never change a codeword's
label).
"""

import numpy as np

from .._config import ECOC_DECODING_CACHE_BLOCK, ECOC_DECODING_MAX_WORDS
from .._validation import check_int
from ._kernels.decoding import _label_words, _symmetric_channel
from .quality import warn_degenerate

__all__ = ["decoding_probabilities", "codeword_decoding_probabilities", "DEFAULT_MAX_WORDS"]

#: Largest ``N^L`` enumerated by default: a 4-byte label and an 8-byte class
#: indicator per word, 48 MiB at ``2**22`` words.
DEFAULT_MAX_WORDS = ECOC_DECODING_MAX_WORDS

_TIES = ("first", "split")
_CHUNK = 4096          # words per block in the numpy labelling of the given words


# ---------------------------------------------------------------- validation
def _check_symbols(a, *, name, ndim):
    """``a`` as a C-contiguous int64 array of whole numbers, else a clear error."""
    try:
        arr = np.asarray(a)
    except Exception as exc:  # ragged lists and the like
        raise TypeError(f"{name} must be an integer array; got {type(a).__name__}") from exc
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number)
                                   or arr.dtype == np.bool_) or np.iscomplexobj(arr):
        raise TypeError(f"{name} must hold integers; got dtype {arr.dtype}")
    if arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-dimensional; got shape {arr.shape}")
    if not (np.issubdtype(arr.dtype, np.integer) or arr.dtype == np.bool_):
        bad = ~np.isfinite(arr) | (arr != np.round(arr))
        if bad.any():
            i = np.argwhere(bad)[0]
            raise ValueError(f"{name}[{', '.join(map(str, i))}] must be a whole number; "
                             f"got {arr[tuple(i)]}")
    return np.ascontiguousarray(arr, dtype=np.int64)


def _check_in_range(arr, low, high, *, name, what):
    bad = (arr < low) | (arr > high)
    if bad.any():
        i = np.argwhere(bad)[0]
        raise ValueError(f"{name}[{', '.join(map(str, i))}] must be {what}; "
                         f"got {arr[tuple(i)]}")


def _check_problem(code, eps, n_symbols, ties, max_words):
    """Validated (code int64 (c, L), N, eps) of one decoding problem."""
    code = _check_symbols(code, name="code", ndim=2)
    c, L = code.shape
    if c < 2 or L < 1:
        raise ValueError(f"code must have >= 2 rows (classes) and >= 1 column (learners); "
                         f"got shape {code.shape}")
    if n_symbols is None:
        n_symbols = max(2, int(code.max()) + 1)
    N = check_int(n_symbols, name="n_symbols", low=2)
    _check_in_range(code, -1, N - 1, name="code",
                    what=f"-1 (unused) or a symbol in 0..{N - 1} (n_symbols = {N})")
    # with ties="first" the later of two equal rows is never decoded: say so, by name
    warn_degenerate(code, name="code", columns=False, stacklevel=4)
    if isinstance(eps, (bool, np.bool_)) or np.ndim(eps) != 0 or np.iscomplexobj(eps) \
            or not np.issubdtype(np.asarray(eps).dtype, np.number):
        raise TypeError(f"eps must be a real number in [0, 1]; got {eps!r}")
    eps = float(eps)
    if not 0.0 <= eps <= 1.0:       # NaN fails too
        raise ValueError(f"eps must be in [0, 1] (probability that an output is replaced by "
                         f"another symbol); got {eps}")
    if ties not in _TIES:
        raise ValueError(f"ties must be one of {_TIES}; got {ties!r}")
    max_words = check_int(max_words, name="max_words", low=1)
    n_words = N ** L                 # Python int: no overflow
    if n_words > max_words:
        raise ValueError(
            f"exact enumeration of N^L = {N}^{L} = {n_words} received words exceeds "
            f"max_words = {max_words} (12 bytes per word); raise max_words if memory allows, "
            f"or use the radius lower bound (at most floor((d_r - 1) / 2) errors never change "
            f"a codeword's label: export.analytics.hamming_guarantee, ecoc_flip_radius)")
    return code, N, eps


# ---------------------------------------------------------------- kernels' drivers
def _all_labels(code, N):
    """Lowest-index nearest row of each of the N^L words (int32, index sum_l v_l N^l)."""
    labels = np.empty(N ** code.shape[1], np.int32)
    _label_words(code, N, -1, labels, np.empty(0, np.float64))
    return labels


def _class_function(code, N, k, ties, labels, f):
    """Fill ``f`` with the indicator of class k: ``[label == k]`` (ties="first", from
    ``labels``) or ``[k in argmin] / |argmin|`` (ties="split")."""
    if ties == "first":
        np.equal(labels, k, out=f)
    else:
        _label_words(code, N, k, np.empty(0, np.int32), f)


def _nearest_rows(code, words):
    """Lowest-index nearest row of each given word (numpy, in blocks)."""
    used = code >= 0
    unused = (~used).sum(axis=1)
    out = np.empty(words.shape[0], np.int64)
    for s in range(0, words.shape[0], _CHUNK):
        w = words[s:s + _CHUNK]
        neq = (w[:, None, :] != code[None]) & used[None]
        out[s:s + _CHUNK] = (2 * neq.sum(axis=2) + unused[None]).argmin(axis=1)
    return out


# ---------------------------------------------------------------- public API
def decoding_probabilities(code, eps, words, targets=None, *, n_symbols=None, ties="first",
                           max_words=DEFAULT_MAX_WORDS):
    """Exact ``P(decode(w + noise) == k)`` for clean output words ``w`` and targets ``k``.

    Parameters
    ----------
    code : array-like of int, shape (c, L)
        Coding matrix: symbols ``0 .. N-1``, -1 where the class does not use
        the learner.  ``c >= 2``.
    eps : float in [0, 1]
        Probability that a learner output is replaced by one of the ``N - 1``
        other symbols (uniformly); for N = 2, the flip probability.
    words : array-like of int, shape (t, L)
        Clean learner outputs (any word of ``{0 .. N-1}^L``, codeword or not).
    targets : array-like of int, shape (t,) or (m, t), optional
        Class index (or m class indices) per word.  Default: the clean label
        of each word (lowest-index nearest row), so that the result is the
        same-classification probability.  Pass true labels for the
        probability of a correct decision.
    n_symbols : int, optional
        Alphabet size N (default ``max(2, code.max() + 1)``; give it when the
        code does not use every symbol, e.g. ``ECOCDevice.n_symbols``).
    ties : {"first", "split"}
        "first": the decoder breaks ties to the lowest row index (the device);
        "split": a tie among ``s`` rows including the target counts ``1/s``
        (a uniformly random tie-break).
    max_words : int
        Largest ``N^L`` accepted (see Notes for memory).

    Returns
    -------
    ndarray of float64, shape of ``targets`` (``(t,)`` by default)

    Raises
    ------
    ValueError
        ``N^L > max_words``; a malformed code, word or target (named, with
        its index); ``eps`` outside [0, 1] or NaN; unknown ``ties``.
    TypeError
        Non-numeric input.

    Warns
    -----
    UserWarning
        The code has identical rows (named): with ``ties="first"`` the
        later of them is never decoded.

    See Also
    --------
    codeword_decoding_probabilities : the same at the codewords, per class.

    Notes
    -----
    Let ``f_k(v) = [label(v) == k]`` on all ``N^L`` received words.  The
    channel adds (mod N) an error ``e`` with ``P(e) = prod_l k1(e_l)``,
    ``k1(0) = 1 - eps``, ``k1(a != 0) = eps / (N - 1)``; since ``k1`` is
    symmetric, ``P(label(w + e) = k) = (T^{(x) L} f_k)(w)`` with the one-axis
    operator ``(T g)(a) = (1 - eps - eps / (N - 1)) g(a) + eps / (N - 1) sum_b g(b)``.
    Labelling the words costs ``O(c N^L)`` (distances updated as the digits
    change) and each class that occurs among the targets ``O(L N^L)``; only
    those classes are computed (``ties="split"`` labels the words again for
    each class, ``O(c N^L)`` per class, and stores no labels).  Memory: a
    4-byte label and one 8-byte class array per word (8 bytes x ``N^L`` per
    class array, reused across classes), 48 MiB at the default
    ``max_words = 2**22``.  The result is exact up to float64 rounding
    (about 1e-15).

    Examples
    --------
    A 3-fold repetition code: the word ``[0, 0, 1]`` decodes to class 0 and
    keeps that label unless the noise leaves at least two ones
    (``0.9 * 0.81 + 0.1 * 0.99 = 0.828``).

    >>> p = decoding_probabilities([[0, 0, 0], [1, 1, 1]], 0.1, [[0, 0, 0], [0, 0, 1]])
    >>> p.round(4).tolist()
    [0.972, 0.828]

    A 3-ary code, one word, two targets (stay in class 0; go to class 1):

    >>> code = [[0, 1, 2], [2, 0, 1], [1, 2, 0]]
    >>> decoding_probabilities(code, 0.1, [[0, 1, 2]], targets=[[0], [1]]).round(5).tolist()
    [[0.9855], [0.00725]]
    """
    code, N, eps = _check_problem(code, eps, n_symbols, ties, max_words)
    c, L = code.shape
    words = _check_symbols(words, name="words", ndim=2)
    if words.shape[1] != L:
        raise ValueError(f"words must have L = {L} columns (one symbol per learner); "
                         f"got shape {words.shape}")
    _check_in_range(words, 0, N - 1, name="words", what=f"a symbol in 0..{N - 1}")
    t = words.shape[0]
    if targets is None:
        targets = _nearest_rows(code, words)
    else:
        targets = _check_symbols(targets, name="targets", ndim=np.ndim(targets))
        if targets.ndim not in (1, 2) or targets.shape[-1] != t:
            raise ValueError(f"targets must have shape ({t},) or (m, {t}), one class per "
                             f"word; got shape {targets.shape}")
        _check_in_range(targets, 0, c - 1, name="targets", what=f"a class index in 0..{c - 1}")
    out = np.zeros(targets.shape)
    if t == 0:
        return out
    idx = np.broadcast_to(words @ (N ** np.arange(L, dtype=np.int64)), targets.shape)
    labels = _all_labels(code, N) if ties == "first" else None
    f = np.empty(N ** L, np.float64)
    for k in np.unique(targets):
        _class_function(code, N, int(k), ties, labels, f)
        _symmetric_channel(f, N, L, eps, ECOC_DECODING_CACHE_BLOCK)
        hit = targets == k
        out[hit] = f[idx[hit]]
    return out


def codeword_decoding_probabilities(code, eps, *, n_symbols=None, ties="first",
                                    max_words=DEFAULT_MAX_WORDS):
    """Exact ``P(correct | class i)`` when the clean learner outputs are row i.

    Parameters
    ----------
    code : array-like of int, shape (c, L)
        Coding matrix (symbols ``0 .. N-1``, -1 = class not used by the
        learner).
    eps : float in [0, 1]
        Probability that an output is replaced by another symbol (uniformly
        among the ``N - 1`` others; N = 2: flipped).
    n_symbols : int, optional
        Alphabet size N (default ``max(2, code.max() + 1)``).
    ties : {"first", "split"}
        "first": ties go to the lowest row index; "split": a tie among ``s``
        rows including the true one counts ``1/s``.
    max_words : int
        Largest ``N^L`` accepted.

    Returns
    -------
    ndarray of float64, shape (c,)

    Raises
    ------
    ValueError, TypeError
        As :func:`decoding_probabilities`.

    See Also
    --------
    decoding_probabilities : any clean word, any target.

    Notes
    -----
    A learner that does not use class i (``M[i, l] == -1``) never saw it, so
    its clean output on that class is taken as a uniformly random symbol,
    independent of the others: row i's probability is the mean of
    :func:`decoding_probabilities` over the ``N^u`` completions of its ``u``
    unused positions (without -1 entries, the codeword itself).  Cost
    ``O(c N^L + c L N^L)``, memory as :func:`decoding_probabilities`.

    Examples
    --------
    >>> codeword_decoding_probabilities([[0, 0, 0], [1, 1, 1]], 0.1).round(4).tolist()
    [0.972, 0.972]

    Ties go to the lowest index, so class 0 wins every three-way tie:

    >>> code = [[0, 1, 2], [2, 0, 1], [1, 2, 0]]
    >>> codeword_decoding_probabilities(code, 0.1).round(4).tolist()
    [0.9855, 0.972, 0.972]
    >>> codeword_decoding_probabilities(code, 0.1, ties="split").round(4).tolist()
    [0.9765, 0.9765, 0.9765]
    """
    code, N, eps = _check_problem(code, eps, n_symbols, ties, max_words)
    c, L = code.shape
    labels = _all_labels(code, N) if ties == "first" else None
    f = np.empty(N ** L, np.float64)
    cube = f.reshape((N,) * L)          # axis a is digit L - 1 - a (digit 0 fastest)
    out = np.empty(c)
    for i in range(c):
        _class_function(code, N, i, ties, labels, f)
        _symmetric_channel(f, N, L, eps, ECOC_DECODING_CACHE_BLOCK)
        at = tuple(int(code[i, L - 1 - a]) if code[i, L - 1 - a] >= 0 else slice(None)
                   for a in range(L))
        out[i] = np.mean(cube[at])
    return out
