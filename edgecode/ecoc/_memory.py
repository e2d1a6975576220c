"""Memory guard of the code designs: estimate the bytes before allocating.

Sizes of coding matrices are driven by arguments (``one_vs_all(10**6)`` is a
10^6 x 10^6 matrix, ``exhaustive`` has 2^(c-1) - 1 columns), so every design
prices its working arrays first and refuses with a ValueError naming the
shape and the bytes, instead of letting numpy try to allocate terabytes.
"""

from .._config import MAX_ALLOCATION_BYTES

#: Largest working memory (bytes) a code design may allocate (2 GiB:
#: ``edgecode._config.MAX_ALLOCATION_BYTES``).
MAX_CODE_BYTES = MAX_ALLOCATION_BYTES


def _gib(n):
    return f"{n / 2 ** 30:.3g} GiB"


def check_code_bytes(design, n_classes, n_columns, nbytes):
    """Raise ValueError if building a ``n_classes x n_columns`` code needs > MAX_CODE_BYTES.

    Parameters
    ----------
    design : str
        Name used in the message.
    n_classes, n_columns : int
        Shape of the matrix.
    nbytes : int
        Estimated working memory of the design (Python int: no overflow).

    Examples
    --------
    >>> check_code_bytes("one_vs_all", 10, 10, 100)
    >>> check_code_bytes("one_vs_all", 10 ** 6, 10 ** 6, 10 ** 12)
    Traceback (most recent call last):
    ...
    ValueError: one_vs_all: a 1000000 x 1000000 code needs about 1,000,000,000,000 bytes (931 GiB) of working memory, above the limit of 2,147,483,648 bytes (2 GiB, edgecode.ecoc._memory.MAX_CODE_BYTES); use fewer classes or columns
    """
    nbytes = int(nbytes)
    if nbytes > MAX_CODE_BYTES:
        raise ValueError(
            f"{design}: a {int(n_classes)} x {int(n_columns)} code needs about {nbytes:,} bytes "
            f"({_gib(nbytes)}) of working memory, above the limit of {MAX_CODE_BYTES:,} bytes "
            f"({_gib(MAX_CODE_BYTES)}, edgecode.ecoc._memory.MAX_CODE_BYTES); use fewer "
            "classes or columns")
