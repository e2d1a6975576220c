"""Plan the protection of a stored image under a flash-overhead budget (issue 27).

:func:`protect_image` ranks every array of an image by what its upsets cost
(sampled single upsets, re-loaded as the device loads them; the kind's
erasure fallback measured unit by unit), chooses per array one scheme of
:mod:`firmware_sim.protection` (none, parity with the kind's fallback,
SEC-DED, a BCH block code, triplication) greedily by label changes saved per byte under
``max_overhead``, writes the protected image and predicts its label-change
rate under independent upsets at rate ``eps`` by simulating the protected
device (the faulty image re-loaded and decoded as the device does).

The per-array model used for ranking (the ``first_order`` figures of the
report) is a first-order estimate: an upset of array a changes a fraction
c_a of the labels (refused images count 1); a word whose upset is detected
erases its owner (fraction e_a) or, without a fallback, refuses the image;
per-word (per BCH block) event probabilities are exact binomials. Interactions between
upsets have no closed form here, so the reported ``predicted_label_change``
is **simulated** (``method`` says so, with its 99% interval).

Examples
--------
>>> import numpy as np
>>> from firmware_sim import ProtectedNBDevice
>>> dev = ProtectedNBDevice.from_arrays([3, -2, 4], 1, [1, 0, 0])
>>> X = np.array([[0, 0, 1], [1, 1, 0], [1, 0, 1], [0, 1, 0]])
>>> prot, rep = protect_image(dev, X, eps=1e-3, max_overhead=2.0, n_trials=20)
>>> rep["overhead"] <= 2.0, sorted(rep)[:3]
(True, ['allocation', 'base_bytes', 'eps'])
"""

import math
from functools import lru_cache

import numpy as np

from firmware_sim import load
from firmware_sim.artifact import PROTECT_NAME, Container, entry_layout, read_container, \
    stored_size, write_container
from firmware_sim.contract import BaseDevice
from firmware_sim.engine.campaign import run_campaign
from firmware_sim.errors import ContainerError, FrameError
from firmware_sim.faults import ParameterUpset
from firmware_sim._bch import T_MAX, bch_layout, bch_params_error
from firmware_sim.protection import WORD_BYTES, bch_check_bytes, check_bits_per_word, \
    protect_container

__all__ = ["protect_image", "IMAGE_SCHEMES"]

#: ``scheme`` values: ``auto`` plans; the others protect every array alike
#: (``uniform`` is ``secded``: every stored word the same code; ``bch``: every
#: array one BCH code, t the smallest whose block fails with probability
#: <= ``BCH_TARGET`` at ``eps``).
IMAGE_SCHEMES = ("auto", "uniform", "secded", "parity", "tmr", "bch", "none")
#: t offered to the planner per array (m: the smallest field whose block holds
#: the array, at most 13: longer arrays are cut into blocks of 8191 bits).
BCH_T = (1, 2, 3, 4, 5, 6, 8, 10, 12, 14, 16, 20, 24, 28, 32)
#: t tried for a span of arrays under one code (its two largest that fit):
#: every t, so that the budget is spent to the byte.
_SPAN_T = tuple(range(1, T_MAX + 1))
#: Block failure probability the uniform ``bch`` scheme aims at.
BCH_TARGET = 1e-4


def _as_container(source):
    if hasattr(source, "device") and isinstance(getattr(source, "device"), BaseDevice):
        source = source.device
    if isinstance(source, BaseDevice):
        return source.container
    if isinstance(source, Container):
        return source
    return read_container(source)


def _labels_of(dev, frames):
    return np.asarray(dev.labels(frames), np.int64)


def _change(container, frames, clean):
    """Fraction of labels changed by the image ``container`` (1 when refused)."""
    try:
        return float(np.mean(_labels_of(load(container), frames) != clean))
    except (ContainerError, FrameError):
        return 1.0


def _label_indices(container, y):
    if y is None:
        return None
    y = np.asarray(y).reshape(-1)
    names = container.class_names or tuple(str(c) for c in container.meta.get("classes", ()))
    if names:
        lookup = {n: i for i, n in enumerate(names)}
        out = []
        for v in y.tolist():
            key = str(v)
            if key not in lookup:
                raise ValueError(f"label {v!r} is not a class of the image (classes: "
                                 f"{list(names)})")
            out.append(lookup[key])
        return np.asarray(out, np.int64)
    return y.astype(np.int64)


def _sensitivity(container, frames, clean, sample_bits, rng, progress=None):
    """Per array: mean label change of one upset (refused = 1). Every bit of an
    array of at most ``sample_bits`` bits is upset (the figure is exact on
    these points); of a larger one, a sample of ``sample_bits`` bits, and the
    figure is the posterior mean under a Jeffreys prior, ``(K + 1/2) / (N +
    1)`` with K labels changed in N = bits x points trials: a sample in which
    no upset changed a label is not evidence that none does (a large array of
    thresholds), and the planner can still rank it by its size."""
    out = {}
    n_pts = max(1, len(clean))
    for i, (name, a) in enumerate(container.arrays.items()):
        if progress:
            progress(i, len(container.arrays), f"image ranking: single upsets of {name!r}")
        n = 8 * a.nbytes
        if n == 0:
            out[name] = 0.0
            continue
        fault = ParameterUpset(count=1, arrays=[name])
        bits = np.arange(n) if n <= sample_bits else rng.choice(n, sample_bits, replace=False)
        ch = [_change(fault.apply_positions(container, [int(b)]), frames, clean)
              for b in bits]
        if n <= sample_bits:
            out[name] = float(np.mean(ch))
        else:
            trials = len(ch) * n_pts
            out[name] = float((np.sum(ch) * n_pts + 0.5) / (trials + 1))
    return out


def _erasure_damage(container, frames, clean, rng, sample=32):
    """Per array with a fallback: mean label change of one erasure, and the
    names whose fallback is per element (a detected word then zeroes every
    element it holds) rather than per unit (a learner, a tree). Units are
    erased one at a time, every one; elements too when there are at most
    ``sample``, else a sample of them, whose figure is the Jeffreys posterior
    mean (as for single upsets: never 0 from a sample)."""
    cls = type(load(container))
    owners = cls.erasure_owners(container)
    out, per_element = {}, []
    n_pts = max(1, len(clean))
    for name, own in owners.items():
        own = np.asarray(own).reshape(-1)
        if own.size == 0:
            continue
        units = np.unique(own[own >= 0])
        if units.size:
            ch = []
            for u in units.tolist():
                dev = load(container)
                dev.erase(np.asarray([u], np.int64))
                ch.append(float(np.mean(_labels_of(dev, frames) != clean)))
            out[name] = float(np.mean(ch))
        else:
            per_element.append(name)
            els = np.arange(own.size) if own.size <= sample else \
                rng.choice(own.size, sample, replace=False)
            ch = []
            for e in els.tolist():
                arrays = {k: np.array(v) for k, v in container.arrays.items()}
                arrays[name].reshape(-1)[e] = 0
                ch.append(_change(write_container(None, container.kind, arrays,
                                                  container.meta or None), frames, clean))
            out[name] = float(np.mean(ch)) if own.size <= sample else \
                float((np.sum(ch) * n_pts + 0.5) / (len(ch) * n_pts + 1))
    return out, per_element


def _word_erasure(e, per_element, opt, itemsize):
    """Label change of one detected word of ``opt`` = (scheme, word_bytes): the
    unit figure ``e``, or for a per-element fallback ``e`` times the elements a
    word holds (at most 1); None without a fallback."""
    if e is None or not per_element or opt[0] not in ("parity", "secded"):
        return e
    return min(1.0, e * max(1, opt[1] // max(1, itemsize)))


def _options(a, itemsize):
    """Candidate (scheme, word_bytes) of an array."""
    opts = [("none", 8)]
    for wb in WORD_BYTES:
        if wb >= itemsize:
            opts.append(("parity", wb))
            opts.append(("secded", wb))
    opts.append(("tmr", max(itemsize, 1)))
    opts.extend(_bch_options(a.nbytes))
    return opts


def _bch_m(nbits, t):
    """The smallest m (5..13) whose block holds ``nbits`` data bits with t
    corrected; 13 (several blocks) when none does; None when t is too large."""
    for m in range(5, 14):
        if bch_params_error(m, t):
            continue
        r, k, _ = bch_layout(m, t, nbits)
        if k >= nbits:
            return m
    return None if bch_params_error(13, t) else 13


def _bch_options(nbytes, ts=BCH_T):
    out = []
    for t in ts:
        m = _bch_m(8 * nbytes, t)
        if m is not None:
            out.append(("bch", (m, t)))
    return out


@lru_cache(maxsize=65536)
def binomial_tail(n, t, eps):
    """P(more than t of n independent bits are upset at rate eps), exact
    (scipy's binomial survival function, cached: the planner asks for the same
    block lengths many times)."""
    from scipy.stats import binom

    if eps <= 0.0 or t >= n:
        return 0.0
    return min(1.0, float(binom.sf(t, n, eps)))


def _bch_blocks(m, t, nbytes):
    """Bits (data + check) of each block: (full blocks, their length, last length)."""
    r, k, nb = bch_layout(m, t, 8 * nbytes)
    last = 8 * nbytes - (nb - 1) * k
    return nb - 1, k + r, last + r


def _cost(scheme, wb, nbytes):
    if scheme == "none":
        return 0
    if scheme == "tmr":
        return 2 * nbytes + 12
    if scheme == "bch":
        return bch_check_bytes(*wb, nbytes) + 12
    words = -(-nbytes // wb)
    return -(-words * check_bits_per_word(scheme, wb) // 8) + 12


def _hazard(scheme, wb, nbytes, eps, c, e):
    """Expected label-change contribution of one array (first order)."""
    if nbytes == 0:
        return 0.0
    if scheme == "none":
        return eps * 8 * nbytes * c
    if scheme == "tmr":
        return 8 * nbytes * (3 * eps ** 2 * (1 - eps) + eps ** 3) * c
    if scheme == "bch":
        # a block with more than t upsets is detected (rarely miscorrected); its
        # elements are erased, counted as a whole loss (1): a block covers many
        # units, and the first-order model has no per-block erasure figure
        m, t = wb
        full, n_full, n_last = _bch_blocks(m, t, nbytes)
        return full * binomial_tail(n_full, t, eps) + binomial_tail(n_last, t, eps)
    words = -(-nbytes // wb)
    det = 1.0 if e is None else e
    n = 8 * wb + check_bits_per_word(scheme, wb)
    p0 = (1 - eps) ** n
    p1 = n * eps * (1 - eps) ** (n - 1)
    if scheme == "parity":
        p_odd = (1 - (1 - 2 * eps) ** n) / 2
        p_even = max(0.0, 1 - p0 - p_odd)
        return words * (p_odd * det + p_even * min(1.0, 2 * c))
    p2 = max(0.0, 1 - p0 - p1)
    return words * p2 * det


def _sizer(container):
    """Exact size of ``container`` written with a ``"__protect__"`` of L bytes
    (the table entry, the alignment before it and before the arrays after it),
    by arithmetic on the layout (:func:`firmware_sim.artifact.stored_size`)
    of one write: the planner asks for thousands of L on a large image."""
    base = len(container.tobytes())
    raw = write_container(None, container.kind, dict(container.arrays),
                          container.meta or None, protect=np.zeros(3, np.uint8))
    sizes = [nb for _, _, nb in entry_layout(raw)]
    names = [n for n, _, _ in entry_layout(raw)]
    at = names.index(PROTECT_NAME)
    cache = {0: base}

    def size(L):
        if L not in cache:
            sizes[at] = int(L)
            cache[L] = stored_size(sizes)
        return cache[L]
    return size


def _greedy(names, table, budget, size, base, spent, choice):
    """Greedy upgrades of the arrays ``names`` (``table[name]``: (option, cost,
    hazard) rows, the first one "none") while the exact protected size stays
    within ``budget`` bytes over ``base``; ``spent``: bytes of ``"__protect__"``
    already planned (0: none yet, its 3-byte count and the container entry
    are then charged with the first upgrade)."""
    cur = {n: 0 for n in names}
    fixed = size(3) - base
    while True:
        best = None
        for name in names:
            _, c0, h0 = table[name][cur[name]]
            for row, (opt, c, h) in enumerate(table[name]):
                dc, dh = c - c0, h0 - h
                if dc <= 0 or dh <= 0:
                    continue
                L = (spent or 3) + dc
                if size(L) - base > budget:
                    continue
                ratio = dh / (dc + (fixed if spent == 0 else 0))
                if best is None or ratio > best[0]:
                    best = (ratio, name, row, dc)
        if best is None:
            break
        _, name, row, dc = best
        spent = (spent or 3) + dc
        cur[name] = row
    for name in names:
        choice[name] = table[name][cur[name]][0]
    return sum(table[n][cur[n]][2] for n in names)


def _plan(container, eps, budget, sens, erase, per_element=()):
    """Per-array greedy, and per span of consecutive arrays under one BCH code
    (the largest t's that fit, the rest greedy): the plan of least first-order
    hazard. Returns ({array: spec}, {array: first array of its span})."""
    arrays = container.arrays
    names = list(arrays)
    size = _sizer(container)
    base = size(0)
    table = {}
    for name, a in arrays.items():
        rows = []
        for opt in _options(a, a.dtype.itemsize):
            if opt[0] == "parity" and name not in erase:
                continue     # a detection without a fallback only refuses
            rows.append((opt, _cost(*opt, a.nbytes),
                         _hazard(*opt, a.nbytes, eps, sens[name],
                                 _word_erasure(erase.get(name), name in per_element, opt,
                                               a.dtype.itemsize))))
        table[name] = rows
    choice = {}
    best_h = _greedy(names, table, budget, size, base, 0, choice)
    best = (dict(choice), {})
    for i in range(len(names)):
        for j in range(i + 1, len(names)):
            cov = names[i:j + 1]
            nbytes = sum(arrays[n].nbytes for n in cov)
            fits = [o for o in _bch_options(nbytes, _SPAN_T)
                    if size(3 + _cost(*o, nbytes)) - base <= budget]
            for opt in fits[-2:]:
                m, t = opt[1]
                h = _hazard(*opt, nbytes, eps, 1.0, None)
                rest = names[:i] + names[j + 1:]
                choice = {}
                h += _greedy(rest, table, budget, size, base, 3 + _cost(*opt, nbytes), choice)
                if h < best_h:
                    choice[cov[0]] = ("bch", (m, t, len(cov)))
                    best_h, best = h, (choice, {n: cov[0] for n in cov})
    return best


def _uniform_bch(nbytes, eps):
    """(m, t) of the uniform ``bch`` scheme: the smallest t of ``BCH_T`` whose
    blocks fail with probability <= ``BCH_TARGET`` each (the largest if none)."""
    opts = _bch_options(nbytes)
    for _, (m, t) in opts:
        full, n_full, n_last = _bch_blocks(m, t, nbytes)
        if max(binomial_tail(n_full, t, eps) if full else 0.0,
               binomial_tail(n_last, t, eps)) <= BCH_TARGET:
            return m, t
    return opts[-1][1]


def _uniform(container, scheme, eps=0.0):
    if scheme == "bch":
        return {n: ("bch", _uniform_bch(a.nbytes, eps)) for n, a in container.arrays.items()}
    if scheme == "none":
        return {n: ("none", 8) for n in container.arrays}
    if scheme == "tmr":
        return {n: ("tmr", 1) for n in container.arrays}
    if scheme == "parity":
        return {n: ("parity", a.dtype.itemsize) for n, a in container.arrays.items()}
    return {n: ("secded", 8) for n in container.arrays}       # (72,64) on every word


def protect_image(artifact_or_device, X, y=None, *, fault="seu", eps=1e-3, max_overhead=0.04,
                  scheme="auto", random_state=0, n_trials=400, sample_bits=256,
                  ranking=None, progress=None):
    """Protect a stored image against upsets under a flash budget and predict the result.

    Parameters
    ----------
    artifact_or_device : Device, ExportResult, Container, path or bytes
        An image without protection.
    X : array-like
        Points (what the device's ``encode`` takes) for the ranking and the
        prediction.
    y : array-like, optional
        True labels (the class labels the image's ``classes`` name, strings or
        numbers; without classes, label indices), for the accuracy.
    fault : {"seu"}
        Independent upsets of every stored bit at rate ``eps`` (the model's
        arrays and ``"__protect__"``; the metadata JSON is not read by the
        device and is not upset).
    eps : float in [0, 1)
        Upset probability per stored bit.
    max_overhead : float >= 0
        Flash budget: the protected image is at most ``(1 + max_overhead)``
        times the unprotected one (``auto`` only; the uniform schemes cost
        what they cost).
    scheme : {"auto", "uniform", "secded", "parity", "tmr", "bch", "none"}
        ``auto`` plans per array; ``secded`` (= ``uniform``) protects every
        word with the (72,64) code, ``parity`` every element with a parity
        bit, ``tmr`` every array with two copies, ``bch`` every array with
        one BCH code (blocks of up to 8191 bits, t the smallest of
        ``BCH_T`` whose block fails with probability <= ``BCH_TARGET`` at
        ``eps``), ``none`` nothing.
    random_state : int
        Seed of the sampled ranking and of the simulated prediction.
    n_trials : int
        Faulty images simulated for the prediction.
    sample_bits : int
        Bits upset one at a time per array for the ranking (every bit of a
        smaller array, an exact figure on ``X``; a sampled array's figure is
        the Jeffreys posterior mean ``(K + 1/2) / (N + 1)`` of K labels
        changed in N = sample_bits x points trials, never 0).
    ranking : dict, optional
        ``report["ranking"]`` of an earlier call on the same image and points:
        reuses its per-array single-upset and erasure figures (the sampled
        ranking is the slow part).
    progress : callable, optional
        ``progress(done, total, text)``: once per array of the ranking (an
        exception it raises, ``KeyboardInterrupt`` included, stops the
        planner there), then passed to the prediction's campaign.

    Returns
    -------
    (Container, dict)
        The protected image and the report: ``allocation`` (per array: scheme,
        word_bytes, bch (``[m, t]``, ``[m, t, s]`` for a span of s arrays, or
        None), span_of (the first array of its BCH span, or None), bytes,
        check_bytes (a span's on its first array),
        single_upset_change, erasure_change, first_order_change), ``base_bytes``, ``protected_bytes``,
        ``overhead``, ``predicted_label_change`` with
        ``predicted_interval`` (99%), ``method``, ``refused_rate``,
        ``first_order_label_change``, ``accuracy`` (given ``y``),
        ``ranking`` (the per-array figures, for ``ranking=``).

    Raises
    ------
    ValueError
        An unknown fault or scheme, eps outside [0, 1), a negative budget, an
        image already protected, labels not among the image's classes.
    """
    if fault not in ("seu",):
        raise ValueError(f"image protection plans against fault 'seu' (upsets of stored "
                         f"bits); got {fault!r}")
    if scheme not in IMAGE_SCHEMES:
        raise ValueError(f"scheme must be one of {IMAGE_SCHEMES}; got {scheme!r}")
    if isinstance(eps, bool) or not 0.0 <= float(eps) < 1.0:
        raise ValueError(f"eps must be in [0, 1); got {eps!r}")
    if isinstance(max_overhead, bool) or not float(max_overhead) >= 0.0:
        raise ValueError(f"max_overhead must be >= 0 (a fraction of the image); got "
                         f"{max_overhead!r}")
    if isinstance(n_trials, bool) or int(n_trials) < 1:
        raise ValueError(f"n_trials must be >= 1; got {n_trials!r}")
    eps = float(eps)
    container = _as_container(artifact_or_device)
    if container.protect is not None:
        raise ValueError("the image is already protected; plan from the unprotected image")
    dev = load(container)
    frames = dev.encode(X)
    clean = _labels_of(dev, frames)
    y_idx = _label_indices(container, y)
    rng = np.random.default_rng(random_state)
    base = container.nbytes
    if ranking is None:
        sens = _sensitivity(container, frames, clean, int(sample_bits), rng, progress)
        if progress:
            progress(len(container.arrays), len(container.arrays), "image ranking: erasures")
        erase, per_element = _erasure_damage(container, frames, clean, rng)
    else:
        sens, erase = dict(ranking["single_upset"]), dict(ranking["erasure"])
        per_element = list(ranking.get("erasure_per_element", ()))
    spans = {}
    if scheme == "auto":
        plan, spans = _plan(container, eps, float(max_overhead) * base, sens, erase,
                            per_element)
    else:
        plan = _uniform(container, "secded" if scheme == "uniform" else scheme, eps)
    raw = protect_container(container, {n: v for n, v in plan.items() if n not in spans
                                        or spans[n] == n})
    prot = read_container(raw)
    alloc, total_h = [], 0.0
    for name, a in container.arrays.items():
        first = spans.get(name)
        if first is not None:
            s, wb = plan[first]
            span = [n for n in spans if spans[n] == first]
            nbytes = sum(container.arrays[n].nbytes for n in span)
            h = _hazard(s, wb[:2], nbytes, eps, 1.0, None) if first == name else 0.0
            check = _cost(s, wb[:2], nbytes) - 12 if first == name else 0
        else:
            s, wb = plan[name]
            h = _hazard(s, wb, a.nbytes, eps, sens[name],
                        _word_erasure(erase.get(name), name in per_element, (s, wb),
                                      a.dtype.itemsize))
            check = max(0, _cost(s, wb, a.nbytes) - 12)
        total_h += h
        alloc.append({"array": name, "scheme": s, "word_bytes": None if s in ("none", "tmr",
                                                                              "bch")
                      else wb, "bch": list(wb) if s == "bch" else None,
                      "span_of": first, "bytes": int(a.nbytes), "check_bytes": int(check),
                      "single_upset_change": sens[name],
                      "erasure_change": erase.get(name), "first_order_change": h})
    report = {"site": "image", "fault": "seu", "eps": eps, "scheme": scheme,
              "max_overhead": float(max_overhead), "allocation": alloc,
              "base_bytes": int(base), "protected_bytes": int(prot.nbytes),
              "overhead": (prot.nbytes - base) / base,
              "first_order_label_change": 1.0 - math.exp(-total_h),
              "ranking": {"single_upset": sens, "erasure": erase,
                          "erasure_per_element": list(per_element)}}
    if eps == 0.0:
        report.update(predicted_label_change=0.0, predicted_interval=[0.0, 0.0],
                      refused_rate=0.0, method="exact: no upset at eps = 0")
    else:
        res = run_campaign(load(prot), X, ParameterUpset(rate=eps), n_trials=int(n_trials),
                           random_state=random_state, y=y_idx, progress=progress)
        pt = res.points[0]
        report.update(predicted_label_change=1.0 - pt.same_rate,
                      predicted_interval=[1.0 - pt.same_ci[1], 1.0 - pt.same_ci[0]],
                      refused_rate=pt.refused / int(n_trials),
                      method=f"simulated: {int(n_trials)} faulty images of the protected "
                             "device (re-loaded, decoded, run on every point), 99% Wilson "
                             "interval over images; no closed form for interacting upsets")
        if pt.accuracy is not None:
            report["accuracy"] = pt.accuracy
    return prot, report
