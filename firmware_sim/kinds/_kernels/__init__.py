"""Numba kernels of the model kinds of :mod:`firmware_sim.kinds`, one module per kind."""
