"""Numba kernels of the model kinds, one module per kind (njit only).

Shared bit kernels: :mod:`firmware_sim._kernels.bits`.
"""
