"""Issue 24, the sweep of the rest of ``edgecode``: public calls whose size
arguments could ask for tens of GiB are refused before allocating, naming the
argument, the need and the limit."""

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from edgecode.ecoc import bch, make_code
from edgecode.ecoc._random import as_random_state
from edgecode.ecoc.bch import bch_generator, bch_generator_matrix
from edgecode.ecoc.codes import _distinct_messages
from edgecode.ecoc.sylvester import sylvester_entries, truncate
from edgecode.hashing import spectral_modes


def test_bch_with_many_classes_is_priced_and_one_draw_works():
    """make_code("bch", 10**5) tried to allocate 74.5 GiB to compare its 20 draws."""
    with pytest.raises(ValueError, match=r"n_classes=100000 with n_draws=20: .*100000 x 100000 "
                                         r"table .* needs 80,[\d,]+ bytes .*pass n_draws=1"):
        make_code("bch", 10 ** 5)
    M = make_code("bch", 3000, n_draws=1, random_state=0)
    assert M.shape == (3000, 127) and len(np.unique(M, axis=0)) == 3000


def _default_t(c, n):
    t = 0
    for tt in range(1, (n - 1) // 2 + 1):
        if 2 ** (n - (bch_generator(n, tt).bit_length() - 1)) - 1 >= c:
            t = tt
    return t


@pytest.mark.parametrize("c, n, t", [(10, 15, 3), (40, 63, None), (200, 255, 20)])
def test_bch_draw_is_the_gf2_product(c, n, t):
    """The codewords come from a float product now (exact: sums of at most 1023
    ones); they are the int64 product of before, so every draw is unchanged."""
    M = bch(c, n, t=t, n_draws=1, random_state=7)
    G = bch_generator_matrix(n, t if t is not None else _default_t(c, n))
    msgs = _distinct_messages(as_random_state(7), c, G.shape[0])
    assert_array_equal(M, ((msgs.astype(np.int64) @ G.astype(np.int64)) % 2).astype(np.int8))


@pytest.mark.parametrize("call, match", [
    (lambda: spectral_modes(np.ones(10), 10 ** 9),
     r"n_bits=1000000000: .* needs 400,000,000,000 bytes"),
    (lambda: sylvester_entries(np.arange(10 ** 5), np.arange(10 ** 5), 3, 12),
     r"len\(rows\)=100000, len\(cols\)=100000: .* needs 10,000,000,000 bytes"),
    (lambda: truncate(10 ** 5, 10 ** 5, 3),
     r"n_classes=100000, n_columns=100000: .* needs [\d,]+ bytes"),
])
def test_other_size_parameters_are_priced(call, match):
    with pytest.raises(ValueError, match=match + r" .*above the limit of 2,147,483,648 bytes"):
        call()


def test_priced_calls_still_work_at_ordinary_sizes():
    modes, freq = spectral_modes([4.0, 1.0], 4)
    assert modes.tolist() == [[0, 1], [0, 2], [0, 3], [1, 1]]
    assert sylvester_entries([0, 1], [0, 1], 2, 1).tolist() == [[0, 0], [0, 1]]
    rows, cols, k = truncate(5, 3, 2)
    assert len(rows) == 5 and len(cols) == 3
