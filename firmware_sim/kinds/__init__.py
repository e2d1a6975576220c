"""The model kinds of the device side, one module per kind (issue 25).

Each module holds its :class:`~firmware_sim.device.Device` subclass (with
everything shared code asks of a kind) and registers it; its numba kernels
live in ``firmware_sim/kinds/_kernels/<kind>.py``. Importing this package
registers the kinds it holds.
"""

from . import forest  # noqa: F401  (registers kind "forest")
