"""Campaign analytics: what the theory predicts for a campaign, per model kind.

:func:`firmware_sim.campaign.run_campaign` simulates; this module (the bridge,
allowed to import ``edgecode``) adds what the theory predicts for the same
campaign wherever a closed form exists:

* protected naive Bayes under independent per-bit noise (:class:`BSC`, a
  :class:`StuckAt` with only random lines of random value, and compositions
  of those): each copy is wrong independently with a per-bit ``e``, a
  feature decodes wrong with ``repetition_error(e, r_j)`` and the planner's
  exact SCP (``edgecode.scp.scp_exact``; certified bounds above 24
  features) gives the expected same-classification rate and accuracy;
* burst (Gilbert-Elliott) noise: no closed form (the copies of a feature
  are adjacent on the wire, so their errors are correlated and the majority
  vote's failure is no longer a binomial tail); the report says so and gives
  the BSC prediction at the same mean flip rate for reference;
* parameter upsets (any device): :func:`analytic_upsets`, from the table of
  every single-bit upset of the targeted arrays
  (:func:`firmware_sim.sensitivity.single_upset_table`): exact for one upset
  per image, a certified interval for a per-bit rate; none for two or more
  upsets per image or upsets composed with wire noise;
* Hamming decoding of a binary code whose learner outputs flip
  independently (ECOC): :func:`hamming_guarantee`, the probability that at
  most ``floor((d_r - 1) / 2)`` outputs flip (decoding is then guaranteed
  correct: a lower bound), and :func:`hamming_decoding_exact`, the exact
  probability of decoding each class correctly
  (:func:`edgecode.ecoc.codeword_decoding_probabilities`: every received
  word labelled once, the channel applied one learner axis at a time; up to
  22 learners);
* ECOC devices in campaigns (independent noise on the learner outputs, the
  ``"intermediate"`` site): :func:`analytic_ecoc`. A
  device's clean outputs need not be a codeword, so the code-level
  guarantee is refined per point: with doubled distances ``D_r`` of the
  clean outputs and clean label ``r0``, k output errors move every ``D_r``
  by at most ``2 k``, so the label cannot change while ``4 k < D_r - D_r0``
  (``<=`` for ``r > r0``, ties going to the lowest index) for every rival
  ``r``: the point's radius ``t(x)`` (``floor((d_r - 1) / 2)`` or more at a
  codeword). ``P(Binomial(n, eps) > t(x))`` averaged over the points bounds
  the label-change rate (any N: a replaced symbol also moves a distance by
  at most 2). The exact rates (same classification and accuracy) come from
  :func:`edgecode.ecoc.decoding_probabilities` with the device's code and
  alphabet, for binary, ternary and N-ary learners alike, whenever the
  ``N^n`` received words fit its limit (``2**22``: binary n <= 22, 3-ary
  n <= 13, 5-ary n <= 9): it labels every received word with the device's
  rule (doubled distances, ties to the lowest index) and applies the q-ary
  symmetric channel to each class indicator, which is exact for any clean
  output word. :func:`ecoc_exact_tables` (the ``2^n`` flip patterns of a
  binary device through its own decoder, n <= 16) stays as a brute-force
  reference.

:func:`add_analytic` attaches these predictions to a
:class:`~firmware_sim.campaign.CampaignResult`; :mod:`export.report` prints
and plots it. :func:`device_scp` (the exact SCP of a protected NB device's
integer model) is also what ``edgecode simulate`` prints next to its
simulation.
"""

import numpy as np

from edgecode.ecoc.decoding_exact import DEFAULT_MAX_WORDS, codeword_decoding_probabilities, \
    decoding_probabilities
from firmware_sim.device import load
from firmware_sim.ecoc import ECOCDevice, doubled_distances, flip_radius
from firmware_sim.faults import BSC, Compose, GilbertElliott, Interleave, ParameterUpset, \
    StuckAt
from firmware_sim.naive_bayes import ProtectedNBDevice
from firmware_sim.sensitivity import single_upset_table

__all__ = ["analytic_protected_nb", "add_analytic", "hamming_guarantee",
           "hamming_decoding_exact", "analytic_ecoc", "ecoc_flip_radius",
           "ecoc_exact_tables", "analytic_upsets", "device_scp", "UPSET_ANALYTIC_BITS"]

def _row_distance(code):
    c = code.shape[0]
    d = [int((code[i] != code[j]).sum()) for i in range(c) for j in range(i + 1, c)]
    return min(d) if d else code.shape[1]


def _binary_code(code):
    code = np.asarray(code)
    if code.ndim != 2 or code.shape[0] < 2:
        raise ValueError(f"code must be a 2-D array (classes x learners) with >= 2 rows; "
                         f"got shape {code.shape}")
    if not np.isin(code, (0, 1)).all():
        raise ValueError("code must be binary (0/1); ternary 'don't care' codes are not "
                         "covered by these closed forms")
    return code.astype(np.uint8)


def hamming_guarantee(code, eps):
    """P(at most floor((d_r - 1) / 2) of the n learner outputs flip): decoding is
    then guaranteed correct, so this lower-bounds the probability of a correct
    decision for every class (outputs flip independently with probability eps).

    Parameters
    ----------
    code : array-like of 0/1, shape (c, n)
        Codewords (rows).
    eps : float in [0, 1]

    Returns
    -------
    dict
        ``d_r``, ``t`` (correctable flips), ``p_guaranteed`` and
        ``p_error_bound`` (its complement).

    Examples
    --------
    >>> r = hamming_guarantee([[0, 0, 0], [1, 1, 1]], 0.1)
    >>> r["d_r"], r["t"], round(r["p_guaranteed"], 3)
    (3, 1, 0.972)
    """
    from scipy.stats import binom

    code = _binary_code(code)
    n = code.shape[1]
    d_r = _row_distance(code)
    t = (d_r - 1) // 2
    p = float(binom.cdf(t, n, float(eps)))
    return {"d_r": d_r, "t": t, "p_guaranteed": p, "p_error_bound": 1.0 - p}


def hamming_decoding_exact(code, eps, ties="first", max_learners=22):
    """Exact probability that nearest-codeword decoding returns the true class.

    Every one of the n outputs flips independently with probability eps; the
    decoder picks the row nearest in Hamming distance to the received word.
    The ``2^n`` received words are labelled once and the channel is applied
    to each class indicator (:func:`edgecode.ecoc.codeword_decoding_probabilities`,
    ``O(c n 2^n)`` time, ``12 * 2^n`` bytes), so n <= ``max_learners``; for
    N-ary or ternary codes call that function directly.

    Parameters
    ----------
    code : array-like of 0/1, shape (c, n)
    eps : float in [0, 1]
    ties : {"first", "split"}
        "first": a tie goes to the lowest class index (``np.argmin``);
        "split": a tie among k rows including the true one counts 1/k
        (a uniformly random tie-break).

    Returns
    -------
    ndarray of float, shape (c,)
        P(correct | class i).

    Examples
    --------
    >>> hamming_decoding_exact([[0, 0, 0], [1, 1, 1]], 0.1).round(4).tolist()
    [0.972, 0.972]
    """
    code = _binary_code(code)
    n = code.shape[1]
    if n > max_learners:
        raise ValueError(f"{n} learners: exact enumeration of the 2**{n} received words is "
                         f"limited to {max_learners}; use hamming_guarantee for a bound")
    return codeword_decoding_probabilities(code, eps, n_symbols=2, ties=ties,
                                           max_words=2 ** max_learners)


# ----------------------------------------------------------------------------
# ECOC devices: Hamming decoding of noisy learner outputs
# ----------------------------------------------------------------------------
def ecoc_flip_radius(ecoc_device, outputs):
    """Per point, the number of learner-output errors that can never change its label.

    Parameters
    ----------
    ecoc_device : firmware_sim.ecoc.ECOCDevice
    outputs : int array (t, n)
        Clean learner outputs (``learner_outputs``).

    Returns
    -------
    int array (t,)
        ``t(x)``: at most ``t(x)`` errors (flips, or symbol replacements)
        keep the decoded label; equals ``floor((d_r - 1) / 2)`` or more when
        the outputs are a codeword of a code without unused entries;
        ``firmware_sim.ecoc.RADIUS_UNBOUNDED`` for a single-class code (the
        device's own :func:`firmware_sim.ecoc.flip_radius`, which the
        campaign's fast path uses too).

    Examples
    --------
    >>> from firmware_sim.ecoc import ECOCDevice, make_ecoc_arrays
    >>> from firmware_sim.artifact import read_container, write_container
    >>> code = [[0, 0, 0], [1, 1, 1]]
    >>> arr = make_ecoc_arrays(code, [0, 1] * 3, [2] * 3, [0.0], [0],
    ...     linear={"weights": [[1, 1, 1]], "bias": [0, 0, 0], "n_out": [1, 1, 1]})
    >>> dev = ECOCDevice(read_container(write_container(None, "ecoc", arr)))
    >>> ecoc_flip_radius(dev, [[0, 0, 0], [0, 0, 1]]).tolist()
    [1, 0]
    """
    sym = np.asarray(outputs, np.int16)
    return flip_radius(doubled_distances(ecoc_device.code, sym), ecoc_device.decode(sym))


def ecoc_exact_tables(ecoc_device, outputs, y=None, max_learners=16):
    """Counts of error patterns by weight that change (and keep correct) each label.

    Every one of the ``2^n`` flip patterns of the ``n`` binary learner outputs
    goes through the device's decoder, once per distinct clean output word
    (and true label). ``P(change | eps) = sum_k change[:, k] eps^k
    (1 - eps)^(n - k)``. A brute-force reference (``O(2^n)`` decodes per
    distinct word, binary only): :func:`analytic_ecoc` uses
    :func:`edgecode.ecoc.decoding_probabilities` unless given these tables.

    Returns
    -------
    dict
        ``change`` (t, n + 1) and, with ``y``, ``correct`` (t, n + 1) counts.

    Raises
    ------
    ValueError
        N-ary outputs, or more than ``max_learners`` columns.
    """
    if ecoc_device.n_symbols != 2:
        raise ValueError("exact enumeration covers binary learner outputs only "
                         f"(this device has N = {ecoc_device.n_symbols})")
    sym = np.asarray(outputs, np.int64)
    t, n = sym.shape
    if n > max_learners:
        raise ValueError(f"{n} learners: exact enumeration of 2**{n} error patterns is "
                         f"limited to {max_learners}; the radius bound still applies")
    pats = ((np.arange(1 << n, dtype=np.int64)[:, None] >> np.arange(n)) & 1)
    weight = pats.sum(axis=1)
    keys = sym if y is None else np.column_stack([sym, np.asarray(y, np.int64)])
    uniq, inv = np.unique(keys, axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    change = np.zeros((uniq.shape[0], n + 1), np.int64)
    correct = np.zeros((uniq.shape[0], n + 1), np.int64)
    for u, row in enumerate(uniq):
        word = row[:n]
        clean = ecoc_device.decode(word[None, :].astype(np.int16))[0]
        labels = ecoc_device.decode((pats ^ word[None, :]).astype(np.int16))
        change[u] = np.bincount(weight[labels != clean], minlength=n + 1)
        if y is not None:
            correct[u] = np.bincount(weight[labels == row[n]], minlength=n + 1)
    out = {"change": change[inv]}
    if y is not None:
        out["correct"] = correct[inv]
    return out


def _weight_probs(n, eps):
    k = np.arange(n + 1)
    return eps ** k * (1.0 - eps) ** (n - k)


def analytic_ecoc(device, X, fault, y=None, tables=None, max_words=DEFAULT_MAX_WORDS,
                  site="intermediate"):
    """Analytic label-change rate of an ECOC device under independent output noise.

    Parameters
    ----------
    device : firmware_sim.ecoc.ECOCDevice
    X : array-like
        The campaign's inputs (float features, what ``device.encode`` takes).
    fault : firmware_sim.faults.Fault
    y : array-like of int, optional
        True class indices (for the exact accuracy).
    tables : dict, optional
        :func:`ecoc_exact_tables` output (binary devices): if given, the exact
        rates come from these counts instead.
    max_words : int
        Largest ``N^n`` (alphabet size to the number of learners) for which
        the exact rates are computed (:func:`edgecode.ecoc.decoding_probabilities`).
    site : str
        Where the campaign's bit faults acted: the closed form covers the
        learner outputs (``"intermediate"``) only.

    Returns
    -------
    dict
        ``available`` is True when the exact rate was computed (``same_rate``,
        ``accuracy``, ``method``); whenever the noise is independent with one
        per-output rate, ``same_rate_lower_bound`` (the radius bound),
        ``per_output_eps``, ``code_guarantee`` (:func:`hamming_guarantee` of
        the code, binary codes without unused entries) are given too; else
        ``reason``.

    Notes
    -----
    With per-output error probability ``e`` (a flip for binary learners, a
    replacement by a uniformly random other symbol for N-ary ones, as
    ``ECOCDevice.corrupt`` and the campaign's event frames do), the point
    with clean outputs ``w`` keeps its label with probability
    ``(T^{(x) n} f_{r0})(w)``, where ``f_k`` is the indicator of the words the
    device decodes to ``k`` (see :mod:`edgecode.ecoc.decoding_exact`); the
    accuracy uses ``f_y``.
    """
    if not isinstance(device, ECOCDevice):
        return {"available": False, "reason": f"no analytic model for {type(device).__name__}"}
    if fault.target in ("image", "mixed"):
        return analytic_upsets(device, X, fault, y)
    if site != "intermediate":
        return {"available": False, "reason": "no closed form for faults on the int16 "
                "features on the wire (the closed form covers the learner outputs)"}
    dev = device
    e = _independent_eps(fault)
    if e is not None and dev.n_symbols > 2 and _has_stuck_lines(fault):
        e = None   # a stuck line has no symbol meaning (the campaign refuses it too)
    if e is None:
        return {"available": False, "reason": "no closed form for this fault on learner outputs "
                "(needs independent noise with one rate for every output)"}
    outputs = dev.stage(dev.encode(X))
    n = dev.n_columns
    rad = ecoc_flip_radius(dev, outputs)
    from scipy.stats import binom
    out = {"available": False, "per_output_eps": e,
           "same_rate_lower_bound": float(binom.cdf(np.minimum(rad, n), n, e).mean()),
           "radius_min": int(rad.min()), "radius_mean": float(rad.mean())}
    code = dev.code
    if dev.n_symbols == 2 and (code >= 0).all():
        out["code_guarantee"] = hamming_guarantee(code, e)
    if tables is not None:
        w = _weight_probs(n, e)
        out.update(available=True, same_rate=float(1.0 - (tables["change"] @ w).mean()),
                   accuracy=(float((tables["correct"] @ w).mean()) if "correct" in tables
                             else None),
                   method="exact: the 2^n flip patterns through the device decoder "
                          "(ecoc_exact_tables)")
        return out
    targets = dev.decode(outputs)[None, :]
    if y is not None:
        targets = np.vstack([targets, np.asarray(y, np.int64).reshape(1, -1)])
    try:
        p = decoding_probabilities(code, e, outputs, targets, n_symbols=dev.n_symbols,
                                   max_words=max_words)
    except ValueError as exc:
        out["reason"] = f"exact rate not computed: {exc}"
        return out
    out.update(available=True, same_rate=float(p[0].mean()),
               accuracy=float(p[1].mean()) if y is not None else None,
               method=f"exact: all {dev.n_symbols}^{n} received words labelled by the device's "
                      "rule, q-ary symmetric channel applied per learner "
                      "(edgecode.ecoc.decoding_probabilities)")
    return out


def _has_stuck_lines(fault):
    if isinstance(fault, StuckAt):
        return True
    if isinstance(fault, Interleave):
        return _has_stuck_lines(fault.fault)
    if isinstance(fault, Compose):
        return any(_has_stuck_lines(f) for f in fault.faults)
    return False


def _independent_eps(fault):
    """Per-bit wrong-bit probability if ``fault`` is independent symmetric noise
    with one rate for every bit, else None."""
    if isinstance(fault, BSC):
        return float(fault.eps) if np.ndim(fault.eps) == 0 else None
    if isinstance(fault, StuckAt):
        if fault.stuck0.size or fault.stuck1.size or fault.value is not None:
            return None
        return fault.rate / 2.0
    if isinstance(fault, Interleave):  # independent noise does not care about order
        return _independent_eps(fault.fault)
    if isinstance(fault, Compose):
        if fault.image_faults:
            return None
        e = 0.0
        for f in fault.faults:
            if isinstance(f, StuckAt):
                q = _independent_eps(f)
                if q is None:
                    return None
                e = (1.0 - f.rate) * e + f.rate / 2.0  # stuck lines forget what came before
            else:
                e2 = _independent_eps(f)
                if e2 is None:
                    return None
                e = e + e2 - 2.0 * e * e2
        return e
    return None


def _mean_flip_rate(fault):
    rate = getattr(fault, "mean_flip_rate", None)
    if rate is not None:
        return float(rate)
    if isinstance(fault, Compose) and len(fault.faults) == 1:
        return _mean_flip_rate(fault.faults[0])
    return None


#: :func:`device_scp` is exact (``edgecode.scp.scp_exact``) up to this many
#: features, the midpoint of certified bounds (``scp_bounds``) above.
DEVICE_SCP_EXACT_MAX = 24


def device_scp(device, X, eps):
    """Per point, the same-classification probability of a protected NB device
    whose wire bits flip independently with probability ``eps``.

    Feature j decodes wrong with ``repetition_error(eps_j, r_j)``; margins and
    flip effects are the device's own integer weights over
    ``2**scale_shift``, so this is the SCP of what the device runs (not of the
    float model it was quantized from).

    Parameters
    ----------
    device : ProtectedNBDevice
    X : array-like of 0/1, shape (t, n)
    eps : float or array-like of shape (n,)
        Per-bit flip probability, one or one per feature, in [0, 1/2).

    Returns
    -------
    scp : ndarray of float, shape (t,)
        Exact up to :data:`DEVICE_SCP_EXACT_MAX` features, else the midpoint
        of the certified bounds.
    lo, hi : ndarray of float, shape (t,)
        Certified bounds (both ``scp`` when exact).
    method : {"exact", "bounds-midpoint"}

    Examples
    --------
    Weights 3 and 2, bias -4, feature 0 sent three times (wrong after
    majority with probability ``3 eps^2 (1 - eps) + eps^3 = 0.028``):

    >>> from firmware_sim.naive_bayes import ProtectedNBDevice
    >>> dev = ProtectedNBDevice.from_arrays([3, 2], -4, [1, 0], 0)
    >>> scp, lo, hi, method = device_scp(dev, [[1, 1], [1, 0]], 0.1)
    >>> scp.round(4).tolist(), method     # (1 - 0.028) (1 - 0.1), 1 - (1 - 0.028) 0.1
    ([0.8748, 0.9028], 'exact')
    """
    from edgecode.redundancy import repetition_error
    from edgecode.scp import scp_bounds, scp_exact

    scale = 2.0 ** device.scale_shift
    margin = device.decision(X).astype(np.float64) / scale
    deltas = (1.0 - 2.0 * np.asarray(X, np.float64)) * device.weights.astype(np.float64) / scale
    eff = repetition_error(np.broadcast_to(eps, (device.n_features,)),
                           device.repetitions.astype(np.int64))
    if device.n_features <= DEVICE_SCP_EXACT_MAX:
        scp = scp_exact(margin, deltas, eff)
        return scp, scp, scp, "exact"
    lo, hi = scp_bounds(margin, deltas, eff)
    return (lo + hi) / 2.0, lo, hi, "bounds-midpoint"


def analytic_protected_nb(device, X, fault, y=None, site="wire"):
    """Expected same-classification rate (and accuracy) of a protected NB device.

    Parameters
    ----------
    device : ProtectedNBDevice
    X : array-like of 0/1, shape (t, n)
    fault : firmware_sim.faults.Fault
    y : array-like of 0/1, optional

    Returns
    -------
    dict
        ``available`` (bool); if True ``same_rate``, ``accuracy`` (or None),
        ``per_bit_eps``, ``method``; else ``reason`` and, for burst noise,
        ``bsc_same_rate_at_mean_flip_rate`` (a reference, not a prediction).

    Notes
    -----
    With per-bit error ``e`` independent across bits, feature j decodes wrong
    with ``e^(r_j) = P(Binomial(2 r_j + 1, e) > r_j)`` independently of the
    others, so the label stays with probability ``SCP(x, e^(r))`` (DESIGN.md)
    and is correct with ``SCP`` when the clean label is right, ``1 - SCP``
    otherwise. The margins and flip effects are the device's own integer
    weights over ``2**scale_shift``, so this predicts what the device runs.
    """
    if not isinstance(device, ProtectedNBDevice):
        return {"available": False, "reason": f"no analytic model for {type(device).__name__}"}
    X = device._check_X(X)
    if site != "wire" and fault.target == "bits":
        return {"available": False, "reason": "the closed form covers channel bits on the wire "
                "(site 'wire')"}
    e = _independent_eps(fault)
    if e is None:
        out = {"available": False}
        inner = fault.fault if isinstance(fault, Interleave) else fault
        if isinstance(inner, GilbertElliott) or (
                isinstance(inner, Compose) and any(isinstance(f, GilbertElliott)
                                                   for f in inner.faults)):
            out["reason"] = ("no closed form for burst (Gilbert-Elliott) noise: the copies of a "
                             "feature are adjacent on the wire, so their errors are correlated "
                             "and majority failure is not a binomial tail")
        elif fault.target in ("image", "mixed"):
            return analytic_upsets(device, X, fault, y)
        else:
            out["reason"] = ("no closed form implemented for this fault (needs independent "
                             "noise with one rate for every bit)")
        rate = _mean_flip_rate(fault)
        if rate is not None and rate < 0.5:
            scp = device_scp(device, X, rate)[0]
            out["bsc_same_rate_at_mean_flip_rate"] = float(scp.mean())
            out["mean_flip_rate"] = rate
        return out
    if not e < 0.5:
        return {"available": False, "reason": f"per-bit error {e} >= 1/2 (planner range is "
                                              "[0, 1/2))"}
    scp, _, _, method = device_scp(device, X, e)
    acc = None
    if y is not None:
        y = np.asarray(y).astype(np.int64).reshape(-1)
        right = device.predict(X) == y
        acc = float(np.where(right, scp, 1.0 - scp).mean())
    return {"available": True, "same_rate": float(scp.mean()), "accuracy": acc,
            "per_bit_eps": e, "method": method}


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


def add_analytic(result, device, X, fault, param=None, y=None):
    """Attach the analytic prediction at every grid value of ``result`` (in place):
    :func:`analytic_upsets` for parameter upsets (any device),
    :func:`analytic_protected_nb` for protected naive Bayes, :func:`analytic_ecoc`
    for ECOC devices (other devices: "not available" with the reason). The
    site is ``result.site``. ``result.notes["analytic_inside_ci"]`` records
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
    elif isinstance(device, ECOCDevice):
        def analytic(f):
            return analytic_ecoc(device, X, f, y, site=site)
        note = ("ECOC: exact same-classification rate and accuracy from every received word "
                "labelled by the device's rule and the q-ary symmetric channel applied per "
                "learner (binary, ternary or N-ary outputs, N^n <= 2**22), and a lower bound "
                "on the same rate from each point's flip radius")
    else:
        def analytic(f):
            return analytic_protected_nb(device, X, f, y, site=site)
        note = ("protected NB: exact SCP of the device's integer model with "
                "repetition_error per feature (independent noise only)")
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
    result.notes["analytic"] = note
    return result
