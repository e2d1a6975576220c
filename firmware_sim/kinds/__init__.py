"""The built-in model kinds, one module each: importing this package registers them.

* :mod:`.naive_bayes`: protected naive Bayes (``protected_nb``, code 1);
* :mod:`.ecoc`: ECOC ensembles (``ecoc``, code 2);
* :mod:`.ssbc`: streaming spectral binary codes (``ssbc``, code 3).

A kind module holds its :class:`~firmware_sim.device.Device` subclass with
everything shared code asks of a kind (the hooks of
:class:`~firmware_sim.contract.BaseDevice`), its container schema
(``make_<kind>_arrays``) and ``register_kind(cls)``; its numba kernels are
in ``_kernels/<kind>.py``. Adding a kind is one such module, its kernels,
and one import line here (see ``docs/architecture.md``).
"""

from . import naive_bayes  # noqa: I001  (registration order: kind codes 1, 2, 3)
from . import ecoc
from . import ssbc
from . import forest  # noqa: F401  (tree forests, kind code 4)

__all__ = ["naive_bayes", "ecoc", "ssbc"]
