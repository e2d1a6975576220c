"""The kind-independent pieces of the closed forms (:mod:`export.analytics`).

* the per-bit rate of a fault model when its bits go wrong independently,
  with one rate for every bit (:func:`independent_eps`), its mean flip
  rate (:func:`mean_flip_rate`), whether it has stuck lines;
* the outcome of a parameter-upset campaign on any device, from the table of
  every single-bit upset (:func:`analytic_upsets`).

Each kind's own closed forms (``export/kinds/<kind>.py``) build on these;
:mod:`export.analytics` attaches them to campaigns and re-exports the public
names.
"""

import numpy as np

from firmware_sim.faults import BSC, Compose, Interleave, ParameterUpset, StuckAt
from firmware_sim.sensitivity import single_upset_table

__all__ = ["independent_eps", "mean_flip_rate", "has_stuck_lines", "analytic_upsets",
           "UPSET_ANALYTIC_BITS"]


def has_stuck_lines(fault):
    if isinstance(fault, StuckAt):
        return True
    if isinstance(fault, Interleave):
        return has_stuck_lines(fault.fault)
    if isinstance(fault, Compose):
        return any(has_stuck_lines(f) for f in fault.faults)
    return False


def independent_eps(fault):
    """Per-bit wrong-bit probability if ``fault`` is independent symmetric noise
    with one rate for every bit, else None."""
    if isinstance(fault, BSC):
        return float(fault.eps) if np.ndim(fault.eps) == 0 else None
    if isinstance(fault, StuckAt):
        if fault.stuck0.size or fault.stuck1.size or fault.value is not None:
            return None
        return fault.rate / 2.0
    if isinstance(fault, Interleave):  # independent noise does not care about order
        return independent_eps(fault.fault)
    if isinstance(fault, Compose):
        if fault.image_faults:
            return None
        e = 0.0
        for f in fault.faults:
            if isinstance(f, StuckAt):
                q = independent_eps(f)
                if q is None:
                    return None
                e = (1.0 - f.rate) * e + f.rate / 2.0  # stuck lines forget what came before
            else:
                e2 = independent_eps(f)
                if e2 is None:
                    return None
                e = e + e2 - 2.0 * e * e2
        return e
    return None


def mean_flip_rate(fault):
    rate = getattr(fault, "mean_flip_rate", None)
    if rate is not None:
        return float(rate)
    if isinstance(fault, Compose) and len(fault.faults) == 1:
        return mean_flip_rate(fault.faults[0])
    return None


#: Targeted bits up to which :func:`add_analytic` makes the single-upset table
#: of a parameter-upset campaign itself (one device re-load per bit, about
#: 0.6 ms each; more: ``edgecode upsets --max-bits`` or ``single_upset_table``).
UPSET_ANALYTIC_BITS = 4096


def analytic_upsets(device, X, fault, y=None, table=None, max_bits=UPSET_ANALYTIC_BITS):
    """Analytic outcome of a parameter-upset campaign from the exhaustive
    single-upset table (:func:`firmware_sim.sensitivity.single_upset_table`):
    exact for ``count`` 0 or 1, a certified interval for a per-bit ``rate``
    (see :meth:`~firmware_sim.sensitivity.UpsetTable.predict`).

    Parameters
    ----------
    device, X, y : as for :func:`firmware_sim.campaign.run_campaign`
    fault : ParameterUpset
    table : UpsetTable, optional
        Reuse a table made for the same arrays, ``checked`` flag, X and y.
    max_bits : int
        Targeted bits above which no table is made (one re-load per bit).

    Returns
    -------
    dict
        ``available``; then ``same_rate``, ``same_rate_interval``, ...;
        else ``reason``.
    """
    if not isinstance(fault, ParameterUpset):
        return {"available": False, "reason": "no closed form for upsets composed with other "
                "faults"}
    if table is None:
        try:
            table = single_upset_table(device, X, arrays=fault.arrays, checked=fault.checked,
                                       y=y, max_bits=max_bits)
        except ValueError as exc:
            return {"available": False, "reason": f"single-upset table not computed: {exc}"}
    return table.predict(fault)
