"""``random_state`` handling shared by the random designs."""

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
