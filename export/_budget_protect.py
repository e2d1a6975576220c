"""Protection as part of a budget configuration (issue 27 item 3, issue 28 item 1).

At the wire and image sites a configuration of a kind that takes protection
there (:attr:`export.registry.KindSpec.protection_sites`) has variants
(:meth:`~export.registry.KindSpec.protected_variants`): the model itself and
one per protection level, ``{"layer", "level"}`` under the configuration's
``"protection"`` key:

* ``"wire"``: ``level`` extra copies per frame bit on average, planned per
  (feature, bit) by :func:`export.protect.protect` (site ``"wire"``, scheme
  ``"auto"``, budget ``16 n level`` extra bits per frame of n int16 features);
* ``"image"``: a planned image protection of at most ``level`` flash
  overhead (:func:`export.protect_image.protect_image`, scheme ``"auto"``).

The growing search takes the next level as a growth step of a point it grows
(:func:`export.budget.search`); the grid tries every level. The model is
fitted once (a step of more protection gets the fitted model of its entry;
a model proposed with its variants is one work item); each protection is
planned on the fitted device
(:func:`protect_fitted`) on at most :data:`PLAN_ROWS` training rows (the
test rows stay for the measurement), for the search's per-bit rate. The
protected device is then measured like any configuration: its container's
flash and RAM, a campaign at the search's fault on the protected device
(wire bits repeated and majority-decoded; stored image upset, re-loaded and
decoded). The planner's own prediction (a label-change rate, ``bounded`` or
``simulated``) is kept in the entry's ``protection`` record.
"""

import numpy as np

__all__ = ["DEFAULT_LEVELS", "PLAN_ROWS", "check_levels", "plan_rows", "protect_fitted",
           "is_image_protected"]

#: Protection levels the search offers by default per site (``protection="auto"``):
#: extra copies per frame bit at the wire, flash overheads at the image.
DEFAULT_LEVELS = {"wire": (1, 2), "image": (0.04, 0.125)}
#: Training rows the protection is planned on (a seeded subset when more).
PLAN_ROWS = 200
#: The protection planner's prediction trials per point (wire, when simulated).
PLAN_TRIALS = 40
BITS = 16


def check_levels(protection, site, eps):
    """The protection levels of a search: ``"auto"`` (:data:`DEFAULT_LEVELS` at
    the site), ``"none"``/None/False (none), or a sequence of levels (positive
    extra copies per bit at the wire, overheads in (0, 4] at the image).
    At the compute site and at ``eps == 0`` there is nothing to protect."""
    if protection is None or protection is False or protection == "none":
        return ()
    if isinstance(protection, str):
        if protection != "auto":
            raise ValueError(f"protection must be 'auto', 'none' or a list of levels; got "
                             f"{protection!r}")
        return tuple(DEFAULT_LEVELS.get(site, ())) if eps > 0 else ()
    try:
        levels = tuple(protection)
    except TypeError:
        raise ValueError(f"protection must be 'auto', 'none' or a list of levels; got "
                         f"{protection!r}") from None
    if site not in DEFAULT_LEVELS:
        if levels:
            raise ValueError(f"protection levels apply at the wire and image sites; the "
                             f"{site} site has none (got {list(levels)})")
        return ()
    out = []
    for v in levels:
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) \
                or not np.isfinite(v):
            raise ValueError(f"protection levels must be numbers; got {v!r}")
        if site == "wire" and not 0 < v <= 127:
            raise ValueError(f"protection levels at the wire are extra copies per frame bit "
                             f"on average, in (0, 127]; got {v!r}")
        if site == "image" and not 0 < v <= 4:
            raise ValueError(f"protection levels at the image are flash overheads (fractions "
                             f"of the image) in (0, 4]; got {v!r}")
        v = int(v) if float(v).is_integer() and site == "wire" else float(v)
        if v not in out:
            out.append(v)
    return tuple(sorted(out)) if eps > 0 else ()


def plan_rows(task, random_state):
    """The training rows protection is planned on (at most :data:`PLAN_ROWS`,
    a seeded subset)."""
    n = len(task.X_train)
    if n <= PLAN_ROWS:
        return task.X_train
    rng = np.random.default_rng([int(random_state), 27])
    return task.X_train[np.sort(rng.choice(n, PLAN_ROWS, replace=False))]


def _summary_wire(copies):
    values, counts = np.unique(copies, return_counts=True)
    return {"bits_by_copies": {str(int(v)): int(c) for v, c in zip(values, counts)},
            "most_copies_per_feature": copies.max(axis=1).astype(int).tolist()}


def _summary_image(alloc):
    """Per protected array its scheme (a BCH span: on its first array, with the
    number of arrays it covers)."""
    out = {}
    span = {}
    for a in alloc:
        if a.get("span_of"):
            span[a["span_of"]] = span.get(a["span_of"], 0) + 1
    for a in alloc:
        if a["scheme"] == "none" or (a.get("span_of") and a["span_of"] != a["array"]):
            continue
        s = a["scheme"]
        if a.get("bch"):
            s += "(m={}, t={})".format(*a["bch"][:2])
        elif a.get("word_bytes"):
            s += f"/{a['word_bytes']} B"
        if span.get(a["array"], 0) > 1:
            s += f" over {span[a['array']]} arrays from here"
        out[a["array"]] = s
    return out


def protect_fitted(fitted, protection, X_plan, *, eps, random_state, cache):
    """``fitted`` (a :class:`export._budget_space.Fitted`) with ``protection``
    planned on its device: ``(Fitted, record)``. The record (the entry's
    ``protection``) says the site, level, scheme, overhead, allocation summary
    and the planner's prediction. ``cache`` (a dict per fitted model) keeps the
    image ranking between levels.

    Raises
    ------
    ValueError
        No protection fits the level (an image too small for the
        ``__protect__`` entry at that overhead), or the planner refuses.
    """
    from firmware_sim import load
    from firmware_sim.artifact import read_container

    from ._budget_space import Fitted
    from .result import ExportResult

    site, level = protection["layer"], protection["level"]
    base = fitted.export
    base_bytes = len(base.container)
    if site == "wire":
        from .protect import protect

        n = int(getattr(base.device, "frame_width", np.shape(X_plan)[1]))
        budget = int(np.floor(BITS * n * float(level) + 1e-9))
        res = protect(base.container, (X_plan, None), site="wire", fault="bsc", eps=eps,
                      budget_bits=budget, scheme="auto", check=False, n_trials=PLAN_TRIALS,
                      random_state=random_state)
        d = res.details
        copies = np.asarray(d["allocation"]["copies"], np.int64)
        pred = d["prediction"]
        record = {"layer": "wire", "level": level,
                  "scheme": "planned repetition per (feature, bit), majority decoding",
                  "overhead": float(d["overhead"]), "wire_bits": int(d["wire_bits"]),
                  "unprotected_wire_bits": int(d["base_bits"]),
                  "allocation": _summary_wire(copies),
                  "predicted_label_change": float(d["predicted_label_change"]),
                  "prediction_method": d["method"],
                  "prediction_interval": [float(pred["lower"]), float(pred["upper"])],
                  "planned_for_eps": float(eps), "plan_rows": int(len(X_plan))}
        raw, device = res.container, res.device
    elif site == "image":
        from .protect_image import protect_image

        prot, rep = protect_image(read_container(base.container), X_plan, eps=eps,
                                  max_overhead=float(level), scheme="auto",
                                  random_state=random_state, n_trials=1,
                                  ranking=cache.get("image_ranking"))
        cache["image_ranking"] = rep["ranking"]
        if rep["protected_bytes"] <= rep["base_bytes"]:
            raise ValueError(f"no image protection fits {100 * float(level):g}% of the "
                             f"{rep['base_bytes']}-byte image (the '__protect__' entry "
                             "alone needs more)")
        raw = prot.tobytes()
        device = load(raw)
        record = {"layer": "image", "level": level,
                  "scheme": "planned per array (parity, SEC-DED, BCH, copies)",
                  "overhead": float(rep["overhead"]),
                  "allocation": _summary_image(rep["allocation"]),
                  "first_order_label_change": float(rep["first_order_label_change"]),
                  "prediction_method": "simulated: the campaign on the protected device "
                                       "(no closed form for interacting upsets)",
                  "planned_for_eps": float(eps), "plan_rows": int(len(X_plan))}
    else:
        raise ValueError(f"protection site must be 'wire' or 'image'; got {site!r}")
    record.update(protected_image_bytes=int(len(raw)), unprotected_image_bytes=int(base_bytes))
    labels = np.asarray(device.labels(device.encode(fitted.X_device)), np.int64)
    acc = float(np.mean(labels == np.asarray(fitted.y_device, np.int64)))
    ex = ExportResult(base.kind, bytes(raw), base.onnx_model, device, device.resources(),
                      base.checked_inputs, base.label_mismatches,
                      {**dict(base.details or {}), "protection": record})
    return Fitted(ex, fitted.X_device, fitted.y_device, acc,
                  {**dict(fitted.info), "protection": record}), record


def is_image_protected(fitted):
    """Whether a fitted configuration's container holds image protection."""
    from firmware_sim.artifact import read_container
    return read_container(fitted.export.container).protect is not None

