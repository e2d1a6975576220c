"""Wire protection of fixed-point features, planned and checked (issue 27 item 1).

Every int16 feature travels as 16 bits; a flip of bit b moves the value by
2^b (the sign bit by 32768). The planner sends bit b of feature f
``copies[f, b]`` times (odd; majority-decoded on the device:
:mod:`firmware_sim.wire`), spending a budget of extra wire bits where a flip
changes labels:

1. **Influence** (:func:`single_flip_changes`): for every point x of the
   planning rows and every position (f, b), whether the device's label
   changes when that one bit is wrong (exact: the kind's own integer
   inference on the flipped frame, so it holds for linear learners, trees
   and k-NN alike; a kind may override it with
   :meth:`export.registry.KindSpec.wire_sensitivity`). ``s[f, b]`` is the
   fraction of points whose label that flip changes.
2. **Allocation** (:func:`plan_wire`): a decoded bit with c copies is wrong
   with probability ``p(c) = P(Binomial(c, eps) > c / 2)``
   (:func:`firmware_sim.wire.failure_probability`). Greedy, two bits at a
   time, to the position with the largest drop of ``s[f, b] p(c)`` (optimal
   for this separable convex objective); budget left when every influential
   position is saturated goes to the others, most significant bit first.
   ``scheme="uniform"``: every bit ``1 + 2 floor(B / 32 n)`` copies;
   ``"tmr"``: every bit three copies; ``"none"``: one copy.
3. **Prediction** (:func:`predict_wire`): per point, the exactly-one-wrong-bit
   events are exact (``P0 sum_i s_i p_i / (1 - p_i)``), two or more wrong
   bits are bounded by their probability: a certified interval ``[lower,
   upper]``. When it is narrow (``upper - lower <= tol``) the prediction is
   its midpoint, method ``"bounded"``; else it is simulated: decoded-bit
   errors drawn with the closed-form ``p(c)`` and run through the kind's
   integer inference (method ``"simulated"``, with its Wilson interval).
4. **Check** (:func:`check_wire`): a campaign on the protected device (the
   wire bits through the fault, majority decoding and all), whose 99% Wilson
   interval must hold the prediction.
"""

import heapq
from dataclasses import dataclass, field

import numpy as np

__all__ = ["WirePlan", "WIRE_SCHEMES", "single_flip_changes", "plan_wire", "predict_wire",
           "check_wire", "flip_frames"]

BITS = 16
#: Schemes of the wire site (``--scheme``).
WIRE_SCHEMES = ("auto", "uniform", "tmr", "none")


def _inner(device):
    return getattr(device, "inner", device)


def flip_frames(frames16, f, b):
    """Copy of int16 frames with bit ``b`` of feature ``f`` flipped (f, b arrays or ints)."""
    out = np.array(frames16, dtype=np.int16, copy=True)
    u = out.view(np.uint16)
    u[:, f] ^= np.uint16(1 << int(b))
    return out


def single_flip_changes(device, X, *, chunk_rows=1 << 16):
    """Exact single-flip sensitivity: bool ``(t, n, 16)``, True where a wrong bit b of
    feature f alone changes the device's label of point t.

    ``device`` is a device whose frames are int16 features (or a
    :class:`~firmware_sim.wire.WireProtectedDevice`: its kind's device is
    used). Each point's frame is flipped at every position and run through
    the kind's ``labels`` (integer inference, as the device runs it).

    >>> import numpy as np
    >>> from firmware_sim.kinds.ecoc import make_ecoc_arrays
    >>> from firmware_sim.artifact import write_container
    >>> from firmware_sim import load
    >>> dev = load(write_container(None, "ecoc", make_ecoc_arrays([[0], [1]], [0, 1], [2],
    ...            [0.0], [0], linear=dict(weights=[[1]], bias=[0], n_out=[1]))))
    >>> s = single_flip_changes(dev, [[5.0]])      # q = 5: only the sign bit matters
    >>> np.flatnonzero(s[0, 0]).tolist()
    [15]
    """
    dev = _inner(device)
    if dev.frame_dtype != np.int16:
        raise ValueError(f"wire protection needs int16 features; kind {dev.kind!r} sends "
                         f"{dev.frame_dtype} frames")
    frames = dev.encode(X)
    t, n = frames.shape
    clean = np.asarray(dev.labels(frames), np.int64)
    out = np.zeros((t, n, BITS), bool)
    masks = (np.uint16(1) << np.arange(BITS, dtype=np.uint16))
    per = max(1, chunk_rows // max(1, n * BITS))
    for s in range(0, t, per):
        e = min(t, s + per)
        block = np.repeat(frames[s:e], n * BITS, axis=0).reshape(e - s, n, BITS, n)
        u = block.view(np.uint16)
        idx = np.arange(n)
        u[:, idx, :, idx] ^= masks[None, :]
        lab = np.asarray(dev.labels(block.reshape(-1, n)), np.int64).reshape(e - s, n, BITS)
        out[s:e] = lab != clean[s:e, None, None]
    return out


@dataclass
class WirePlan:
    """A wire allocation and what it costs.

    Attributes
    ----------
    copies : ndarray of int64, shape (n, 16)
    scheme : str
    eps : float
    budget_bits : int
        Extra wire bits allowed (beyond one copy of every bit).
    extra_bits : int
        Extra wire bits used.
    influence : ndarray of float64, shape (n, 16)
        Fraction of planning points whose label one wrong bit (f, b) changes.
    """

    copies: np.ndarray
    scheme: str
    eps: float
    budget_bits: int
    extra_bits: int
    influence: np.ndarray = field(repr=False)

    @property
    def total_bits(self):
        return int(self.copies.sum())

    @property
    def overhead(self):
        return self.extra_bits / self.copies.size

    def to_dict(self):
        return {"scheme": self.scheme, "eps": self.eps, "budget_bits": self.budget_bits,
                "extra_bits": self.extra_bits, "total_bits": self.total_bits,
                "base_bits": int(self.copies.size), "overhead": self.overhead,
                "copies": self.copies.tolist(),
                "influence": np.round(self.influence, 6).tolist()}


def plan_wire(influence, eps, budget_bits, scheme="auto", max_copies=255):
    """Copies per (feature, bit) under ``budget_bits`` extra wire bits.

    Parameters
    ----------
    influence : array-like (n, 16)
        ``s[f, b]``: the fraction of points whose label one wrong bit changes
        (the mean over points of :func:`single_flip_changes`).
    eps : float in (0, 0.5)
        Flip probability of a wire bit.
    budget_bits : int >= 0
        Extra wire bits per frame (beyond one copy of each of the 16 n bits).
    scheme : {"auto", "uniform", "tmr", "none"}

    Returns
    -------
    WirePlan

    Examples
    --------
    >>> s = np.zeros((1, 16)); s[0, 15] = 0.5; s[0, 14] = 0.1
    >>> p = plan_wire(s, 0.01, 6)
    >>> p.copies[0, 13:].tolist(), p.extra_bits
    ([1, 3, 5], 6)
    """
    s = np.asarray(influence, np.float64)
    if s.ndim != 2 or s.shape[1] != BITS:
        raise ValueError(f"influence must have shape (n_features, {BITS}); got {s.shape}")
    if not 0.0 < float(eps) < 0.5:
        raise ValueError(f"eps must be in (0, 0.5); got {eps}")
    if isinstance(budget_bits, bool) or int(budget_bits) != budget_bits or budget_bits < 0:
        raise ValueError(f"budget_bits must be a non-negative integer; got {budget_bits!r}")
    if scheme not in WIRE_SCHEMES:
        raise ValueError(f"scheme {scheme!r} is not a wire scheme; choose one of "
                         f"{', '.join(WIRE_SCHEMES)} (secded and parity protect the stored "
                         "image: --site image)")
    from firmware_sim.wire import failure_probability
    budget_bits = int(budget_bits)
    n = s.shape[0]
    L = n * BITS
    copies = np.ones((n, BITS), np.int64)
    if scheme == "none":
        pass
    elif scheme == "tmr":
        if budget_bits < 2 * L:
            raise ValueError(f"scheme 'tmr' sends every bit three times: {2 * L} extra bits; "
                             f"the budget is {budget_bits}")
        copies[:] = 3
    elif scheme == "uniform":
        r = min(budget_bits // (2 * L), (max_copies - 1) // 2)
        copies[:] = 1 + 2 * r
    else:
        units = budget_bits // 2
        flat = copies.reshape(-1)
        sf = s.reshape(-1)
        cmax = max_copies
        # p(c) for every odd c up to max_copies (table)
        pt = failure_probability(np.arange(1, cmax + 1, 2), eps)

        def gain(i):
            k = (flat[i] - 1) // 2
            return sf[i] * (pt[k] - pt[k + 1]) if flat[i] + 2 <= cmax else 0.0

        heap = [(-gain(i), i) for i in range(L) if sf[i] > 0]
        heapq.heapify(heap)
        while units and heap:
            g, i = heapq.heappop(heap)
            if -g <= 0:
                break
            flat[i] += 2
            units -= 1
            ng = gain(i)
            if ng > 0:
                heapq.heappush(heap, (-ng, i))
        if units:
            # every influential bit saturated: the rest, most significant bits first
            order = sorted(range(L), key=lambda i: (-(i % BITS), i // BITS))
            while units:
                moved = False
                for i in order:
                    if units and flat[i] + 2 <= cmax and sf[i] == 0:
                        flat[i] += 2
                        units -= 1
                        moved = True
                if not moved:
                    break
    extra = int(copies.sum()) - L
    return WirePlan(copies, scheme, float(eps), budget_bits, extra, s)


def _first_order(changes, p):
    """Per point: (exactly-one-error label changes, probability of >= 2 errors)."""
    q = np.clip(1.0 - p, 1e-300, 1.0)
    log_p0 = np.log(q).sum()
    p0 = np.exp(log_p0)
    ratio = p / q
    one = p0 * (changes.reshape(changes.shape[0], -1).astype(np.float64) @ ratio)
    more = max(0.0, 1.0 - p0 - p0 * ratio.sum())
    return one, more


def predict_wire(device, X, copies, eps, *, changes=None, n_trials=400, random_state=0,
                 tol=1e-5, rel_tol=0.1, confidence=0.99, bound_below=0.02, kind_bound=None):
    """Predicted label-change rate of ``device`` (an int16-feature kind) when every
    bit (f, b) is sent ``copies[f, b]`` times over a BSC of flip probability
    ``eps`` and majority-decoded.

    Returns a dict: ``predicted_label_change``, ``lower``, ``upper``,
    ``method`` (``"bounded"``: a certified interval no wider than ``tol`` or
    ``rel_tol`` times its upper end: single wrong bits exact and two or more
    bounded, intersected with the kind's own certified bound
    ``kind_bound(device, X, copies, eps)``, e.g.
    :meth:`export.registry.KindSpec.wire_bound`: linear ECOC enumerates the
    influential bits exactly; asked only when the single-flip lower bound is
    below ``bound_below``); ``"simulated"``: decoded-bit errors
    drawn with the closed-form majority failure, conditioned on at least one
    (the rest changes nothing), and run through the kind's integer inference,
    ``lower``/``upper`` the Wilson interval at ``confidence``; kept inside
    the certified bound when there is one), ``first_order`` (the certified ``[lower, upper]``) and
    ``n_points``.
    """
    from firmware_sim.wire import failure_probability
    from firmware_sim.campaign import wilson_interval
    dev = _inner(device)
    copies = np.asarray(copies, np.int64)
    if changes is None:
        changes = single_flip_changes(dev, X)
    p = failure_probability(copies.reshape(-1), eps)
    one, more = _first_order(changes, p)
    lo, hi = float(one.mean()), float(one.mean() + more)
    out = {"first_order": [lo, hi], "n_points": int(changes.shape[0])}
    # the kind's bound serves low rates (a high one is simulated precisely and cheaply)
    kb = None if kind_bound is None or lo > bound_below else kind_bound(dev, X, copies, eps)
    if kb is not None:
        out["kind_bound"] = [float(kb[0]), float(kb[1])]
        lo, hi = max(lo, float(kb[0])), min(hi, float(kb[1]))
    if hi - lo <= max(tol, rel_tol * hi):
        out.update(predicted_label_change=(lo + hi) / 2, lower=lo, upper=hi, method="bounded")
        return out
    rng = np.random.default_rng(random_state)
    frames = dev.encode(X)
    t, n = frames.shape
    clean = np.asarray(dev.labels(frames), np.int64)
    weights = (np.uint16(1) << np.arange(BITS, dtype=np.uint16))
    # every trial has at least one wrong bit (the error-free mass P0 is exact and
    # changes nothing): the first wrong position i is drawn with probability
    # p_i prod_{j<i} (1 - p_j) / (1 - P0), the later ones independently
    q = 1.0 - p
    before = np.concatenate([[1.0], np.cumprod(q)[:-1]])
    first = p * before
    p_any = float(1.0 - np.prod(q))
    if p_any <= 0.0:
        out.update(predicted_label_change=0.0, lower=0.0, upper=0.0, method="bounded")
        return out
    cdf = np.cumsum(first) / first.sum()
    changed = 0
    L = n * BITS
    per = max(1, (1 << 18) // max(1, L))        # points x trials per block
    rows = np.repeat(np.arange(t), n_trials)
    cols = np.arange(L)
    for s in range(0, rows.size, per):
        r = rows[s:s + per]
        i0 = np.minimum(np.searchsorted(cdf, rng.random(r.size), side="right"), L - 1)
        err = rng.random((r.size, L)) < p
        err &= cols[None, :] > i0[:, None]
        err[np.arange(r.size), i0] = True
        mask = (err.reshape(r.size, n, BITS) * weights).sum(axis=2).astype(np.uint16)
        noisy = (frames[r].view(np.uint16) ^ mask).view(np.int16)
        changed += int(np.count_nonzero(np.asarray(dev.labels(noisy), np.int64) != clean[r]))
    total = rows.size
    wlo, whi = (float(v) for v in wilson_interval(total - changed, total, confidence))
    out.update(predicted_label_change=p_any * changed / total, lower=p_any * (1.0 - whi),
               upper=p_any * (1.0 - wlo), method="simulated", trials=int(n_trials),
               p_any_error=p_any)
    if kb is not None:      # a certified bound holds the simulated rate
        v = min(max(out["predicted_label_change"], lo), hi)
        out["predicted_label_change"] = v
    return out


def check_wire(protected, X, fault, *, n_trials=400, random_state=1, y=None, confidence=0.99,
               progress=None):
    """Campaign on the protected device: the wire bits through ``fault`` (a
    :class:`firmware_sim.faults.Fault`), majority-decoded, labelled. Returns
    ``{"simulated_label_change", "ci": [lo, hi], "n_trials", "n_points",
    "accuracy"}``."""
    from firmware_sim import run_campaign
    res = run_campaign(protected, X, fault, n_trials=n_trials, random_state=random_state, y=y,
                       site="wire", confidence=confidence, progress=progress)
    pt = res.points[0]
    lo, hi = pt.same_ci
    return {"simulated_label_change": 1.0 - pt.same_rate, "ci": [1.0 - hi, 1.0 - lo],
            "n_trials": int(n_trials), "n_points": int(len(X)), "accuracy": pt.accuracy,
            "confidence": confidence}
