"""Campaign analytics: what the theory predicts for a campaign, for every model kind.

:func:`firmware_sim.campaign.run_campaign` simulates; this module (the bridge,
allowed to import ``edgecode``) adds what the theory predicts for the same
campaign wherever a closed form exists. :func:`add_analytic` attaches it to a
:class:`~firmware_sim.campaign.CampaignResult`:

* parameter upsets (any device): :func:`analytic_upsets`, from the table of
  every single-bit upset of the targeted arrays
  (:func:`firmware_sim.sensitivity.single_upset_table`): exact for one upset
  per image, a certified interval for a per-bit rate; none for two or more
  upsets per image or upsets composed with wire noise;
* anything else: the closed form of the device's kind, which its bridge spec
  holds (:meth:`export.registry.KindSpec.analytic`, ``export/kinds/``):

  - protected naive Bayes (``export/kinds/naive_bayes.py``) under
    independent per-bit noise (:class:`BSC`, a :class:`StuckAt` with only
    random lines of random value, and compositions of those): each copy is
    wrong independently with a per-bit ``e``, a feature decodes wrong with
    ``repetition_error(e, r_j)`` and the exact SCP of the device's integer
    model (:func:`device_scp`; certified bounds above 24 features) gives the
    expected same-classification rate and accuracy. Burst (Gilbert-Elliott)
    noise has none (the copies of a feature are adjacent on the wire, so
    their errors are correlated); the report gives the BSC prediction at the
    same mean flip rate for reference;
  - ECOC (``export/kinds/ecoc.py``), independent noise on the learner
    outputs (the ``"intermediate"`` site): :func:`analytic_ecoc`, exact rates
    from every received word labelled by the device's rule
    (:func:`edgecode.ecoc.decoding_probabilities`, up to ``N^n <= 2**22``)
    and a per-point radius bound (:func:`ecoc_flip_radius`); for a code
    alone, :func:`hamming_guarantee` (at most ``floor((d_r - 1) / 2)`` flips)
    and :func:`hamming_decoding_exact`; :func:`ecoc_exact_tables` (the
    ``2^n`` flip patterns through the device's decoder) is the brute-force
    reference;
  - SSBC k-NN: none (simulated only).

:mod:`export.report` prints and plots the result. :func:`device_scp` (the
exact SCP of a protected NB device's integer model) is also what ``edgecode
simulate`` prints next to its simulation. The kinds' closed forms are
re-exported here under the names the documentation and tests use.
"""

from export._closed_forms import UPSET_ANALYTIC_BITS, analytic_upsets
from export.kinds.ecoc import (analytic_ecoc, ecoc_exact_tables, ecoc_flip_radius,
                               hamming_decoding_exact, hamming_guarantee)
from export.kinds.naive_bayes import DEVICE_SCP_EXACT_MAX, analytic_protected_nb, device_scp
from export.registry import find_kind_spec
from firmware_sim.device import load
from firmware_sim.faults import ParameterUpset
from firmware_sim.sensitivity import single_upset_table

__all__ = ["add_analytic", "analytic_upsets", "UPSET_ANALYTIC_BITS",
           # the kinds' closed forms (export/kinds/), under their documented names
           "analytic_protected_nb", "device_scp", "DEVICE_SCP_EXACT_MAX", "analytic_ecoc",
           "hamming_guarantee", "hamming_decoding_exact", "ecoc_flip_radius",
           "ecoc_exact_tables"]


def add_analytic(result, device, X, fault, param=None, y=None):
    """Attach the analytic prediction at every grid value of ``result`` (in place):
    :func:`analytic_upsets` for parameter upsets (any device), else the closed
    form of the device's kind (:meth:`export.registry.KindSpec.analytic`;
    "not available" with the reason where there is none). The site is
    ``result.site``. ``result.notes["analytic_inside_ci"]`` records
    whether each prediction lies inside (an interval prediction: meets) the
    simulated interval and, for
    ECOC, ``notes["lower_bound_respected"]`` whether the interval reaches the
    radius bound. Returns ``result``."""
    inside, bound_ok = [], []
    device = load(device)
    site = result.site or device.default_site
    if fault.target in ("image", "mixed"):
        tables = {}

        def analytic(f):
            if not isinstance(f, ParameterUpset):
                return analytic_upsets(device, X, f, y)
            key = (f.arrays, f.checked)
            if key not in tables:
                try:
                    tables[key] = single_upset_table(device, X, arrays=f.arrays,
                                                     checked=f.checked, y=y,
                                                     max_bits=UPSET_ANALYTIC_BITS)
                except ValueError as exc:
                    tables[key] = exc
            if isinstance(tables[key], ValueError):
                return {"available": False,
                        "reason": f"single-upset table not computed: {tables[key]}"}
            return analytic_upsets(device, X, f, y, tables[key])
        note = ("parameter upsets: every targeted bit flipped in turn (single-upset table); "
                "exact for one upset per image, for a per-bit rate the midpoint of a "
                "certified interval (two or more upsets bounded by their probability)")
    else:
        spec = find_kind_spec(device.kind)

        def analytic(f):
            if spec is None:
                return {"available": False, "reason": f"the bridge knows no kind {device.kind!r}"}
            return spec.analytic(device, X, f, y, site=site)
        note = spec.analytic_note if spec is not None else None
    for pt in result.points:
        f = fault if pt.value is None else fault.with_params(**{param: pt.value})
        pt.analytic = analytic(f)
        lo, hi = pt.same_ci
        if pt.analytic.get("available"):
            a, b = pt.analytic.get("same_rate_interval", [pt.analytic["same_rate"]] * 2)
            inside.append(bool(lo <= b and a <= hi))       # prediction meets the CI
        if "same_rate_lower_bound" in pt.analytic:
            bound_ok.append(bool(hi >= pt.analytic["same_rate_lower_bound"]))
    result.notes["analytic_inside_ci"] = inside
    if bound_ok:
        result.notes["lower_bound_respected"] = bound_ok
    if note is not None:
        result.notes["analytic"] = note
    return result
