"""Old path of the SSBC device: :mod:`firmware_sim.kinds.ssbc` (kept because users
and docs name it)."""

from .kinds.ssbc import EXP_SHIFT, INPUT_LIMIT, LUT_SEGMENTS, T_MAX, SSBCDevice, exp_lut, \
    load_ssbc, make_ssbc_arrays, quantize_input

__all__ = ["SSBCDevice", "load_ssbc", "make_ssbc_arrays", "exp_lut", "quantize_input",
           "EXP_SHIFT", "INPUT_LIMIT", "LUT_SEGMENTS", "T_MAX"]
