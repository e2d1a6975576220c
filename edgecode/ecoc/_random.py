"""``random_state`` handling and plain i.i.d. random matrices shared by the random designs."""

import numpy as np
from sklearn.utils import check_random_state


def as_random_state(random_state):
    """A ``numpy.random.RandomState`` from None, an int, a RandomState or a Generator.

    A Generator is consumed once (one 32-bit draw seeds the RandomState), so
    the same Generator state gives the same matrix.
    """
    if isinstance(random_state, np.random.Generator):
        return np.random.RandomState(int(random_state.integers(0, 2 ** 32)))
    try:
        return check_random_state(random_state)
    except ValueError as exc:
        raise TypeError("random_state must be None, an int, a numpy RandomState or a numpy "
                        f"Generator; got {random_state!r}") from exc


def plain_matrix(rs, c, n, N, p_unused, dtype):
    """One c x n matrix of i.i.d. entries drawn from the RandomState ``rs``.

    Each entry is -1 with probability ``p_unused``, else uniform on
    {0, ..., N-1}.  Nothing is rejected or repaired: rows may be equal,
    columns constant or equal up to a relabelling (the papers' plain random
    codes).  With ``p_unused == 0`` the draw is ``rs.randint(0, N, (c, n))``;
    otherwise one uniform per entry, ``u < p_unused`` giving -1 and the rest
    of [p_unused, 1) split into N equal parts.
    """
    if p_unused == 0:
        return rs.randint(0, N, size=(c, n)).astype(dtype)
    u = rs.random_sample((c, n))
    used = np.minimum(((u - p_unused) / (1.0 - p_unused) * N).astype(np.int64), N - 1)
    return np.where(u < p_unused, -1, used).astype(dtype)
