"""Numerical flags and tolerances shared by every edgecode kernel.

Kernels take their numba flags from here (``NJIT``) so that a single place
decides caching and fastmath; no kernel hardcodes them.
"""

#: Keyword arguments for every ``numba.njit`` in edgecode.  ``fastmath`` stays
#: off: SCP kernels compare sums against thresholds and must round the same way
#: as their slow references.
NJIT = {"cache": True, "fastmath": False}

#: Largest feature count ``scp_exact`` accepts: meet in the middle keeps two
#: half-enumerations of ``2**ceil(n/2)`` float64 sums and probabilities each,
#: i.e. 2**(24+1) * 16 bytes = 512 MiB at n = 48.
SCP_EXACT_MAX_FEATURES = 48

#: Smallest Laplace smoothing accepted without a warning (as scikit-learn).
ALPHA_MIN = 1e-10
