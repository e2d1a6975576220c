"""Every command on every built-in model kind, on labels users have: strings, floats
and integers that are not 0..k-1 (issues 24, 25).

The matrix is :class:`kind_matrix.KindMatrix`, parametrized over the kinds
the ``export`` package registers (their bridge specs' example fits); a test
file that registers a kind runs the same matrix on it
(``tests/test_toy_kind.py``). Firmware on the cross targets is
``tests/test_firmware.py``'s.
"""

from kind_matrix import KindMatrix


class TestKindMatrix(KindMatrix):
    """The built-in kinds (naive Bayes, ECOC with tree and linear learners, SSBC)."""
