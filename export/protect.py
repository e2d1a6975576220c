"""``edgecode protect``: plan protection under one budget and one fault model,
write the protected artifact, and check the prediction by a campaign on the
protected device (issue 27).

:func:`protect` dispatches on the site:

* ``"wire"``: the int16 features of any kind (ECOC, SSBC, forest, ...) sent
  with per (feature, bit) repetition and majority decoding
  (:mod:`export.protect_wire`, device side :mod:`firmware_sim.wire`);
* ``"image"``: the stored image (:func:`export.protect_image.protect_image`:
  per array none, parity with the kind's erasure fallback, SEC-DED or
  triplication under ``max_overhead``, a fraction of the image), against
  ``fault="seu"`` at rate ``eps`` per stored bit; the prediction is simulated;
* ``"all"``: the wire plan (``budget_bits``), then the image of the
  wire-protected artifact (``max_overhead``, upset rate ``image_eps``,
  default ``eps``); the report holds both.

The result is an :class:`~export.result.ExportResult` whose ``details`` hold
the report (also written as JSON): the allocation, the overhead, the
predicted label-change rate with its method (``"bounded"`` or
``"simulated"``), and the campaign that checks it (its 99% interval and
whether the prediction lies inside).
"""

import json

import numpy as np

__all__ = ["protect", "SITES", "SCHEMES", "FAULTS"]

SITES = ("wire", "image", "all")
SCHEMES = ("auto", "uniform", "secded", "parity", "tmr", "bch", "none")
FAULTS = ("bsc", "burst", "seu")
BITS = 16


def _wire_budget(n_features, budget_bits, max_overhead, scheme):
    base = BITS * n_features
    limits = []
    if budget_bits is not None:
        if isinstance(budget_bits, bool) or int(budget_bits) != budget_bits or budget_bits < 0:
            raise ValueError(f"budget_bits must be a non-negative integer; got {budget_bits!r}")
        limits.append(int(budget_bits))
    if max_overhead is not None:
        mo = float(max_overhead)
        if not np.isfinite(mo) or mo < 0:
            raise ValueError(f"max_overhead must be a non-negative fraction of the frame "
                             f"bits; got {max_overhead!r}")
        limits.append(int(np.floor(mo * base + 1e-9)))
    if not limits:
        if scheme == "none":
            return 0
        if scheme == "tmr":
            return 2 * base
        raise ValueError(f"scheme {scheme!r} needs a budget: budget_bits (extra wire bits per "
                         f"frame; the frame is {base} bits) or max_overhead (a fraction of it)")
    return min(limits)


def _fault(fault, eps, device, mean_burst, interleave):
    from firmware_sim.faults import BSC, Interleave, make_fault
    if fault == "bsc":
        return BSC(eps), False
    if fault == "burst":
        f = make_fault("burst", flip_rate=eps, mean_burst=mean_burst)
        if interleave:
            return Interleave(f, device.wire_order()), True
        return f, False
    raise ValueError(f"fault {fault!r} upsets the stored image; the wire site takes bsc or "
                     "burst (use --site image for seu)")


def protect(artifact, data, *, site="wire", fault="bsc", eps, budget_bits=None,
            max_overhead=None, scheme="auto", out=None, json_path=None, split="all",
            n_trials=400, random_state=0, mean_burst=8.0, interleave=True, check=True,
            data_options=None, progress=None, **image_options):
    """Plan protection of ``artifact`` at ``site`` against ``fault``; write it.

    Parameters
    ----------
    artifact : path, bytes or firmware_sim.artifact.Container
        A device artifact whose kind sends int16 features (ECOC, SSBC,
        forest); an already protected one is re-planned from its kind.
    data : str or (X, y)
        The rows that rank the positions and check the prediction: a bundled
        name or CSV path (read with the artifact's recorded options), or an
        ``(X, y)`` pair (y: class indices, or None).
    site : {"wire", "image", "all"}
    fault : {"bsc", "burst", "seu"}
        ``bsc``: independent flips with probability ``eps`` per wire bit;
        ``burst``: a Gilbert-Elliott channel of mean flip rate ``eps`` and
        mean burst ``mean_burst``, seen through the copy-major interleaved
        order (``interleave``); ``seu``: stored-image upsets (image site).
    eps : float in (0, 0.5)
    budget_bits : int, optional
        Extra wire bits per frame (beyond one copy of each of the 16 n bits).
    max_overhead : float, optional
        The same as a fraction of the 16 n frame bits (the smaller limit wins).
    scheme : {"auto", "uniform", "tmr", "none"} at the wire
        ``auto``: the planner; ``uniform``: every bit the same odd number of
        copies the budget allows; ``tmr``: every bit three times; ``none``.
    out, json_path : path, optional
        The protected container and the JSON report.
    split : str
        Rows of the data to use (``"all"``, ``"train"``, ``"test"``).
    n_trials : int
        Trials per point of the check campaign (a simulated prediction runs ten
        times as many, on decoded-bit errors).
    random_state : int
    check : bool
        Run the campaign on the protected device (default).

    Returns
    -------
    ExportResult
        ``details``: ``site``, ``fault``, ``eps``, ``scheme``, ``allocation``
        (copies per feature and bit), ``overhead``, ``predicted_label_change``,
        ``method``, ``prediction`` (its interval), ``simulated`` (the check:
        rate, 99% interval, ``inside``).

    Examples
    --------
    >>> import numpy as np
    >>> from firmware_sim.kinds.ecoc import make_ecoc_arrays
    >>> from firmware_sim.artifact import write_container
    >>> raw = write_container(None, "ecoc", make_ecoc_arrays([[0], [1]], [0, 1], [2],
    ...       [0.0], [0], linear=dict(weights=[[1]], bias=[0], n_out=[1])))
    >>> X = np.arange(-40.0, 40.0).reshape(-1, 1)
    >>> r = protect(raw, (X, None), eps=0.01, budget_bits=16, n_trials=50)
    >>> r.details["allocation"]["copies"][0][15], r.details["method"], r.details["simulated"]["inside"]
    (5, 'simulated', True)
    """
    if site not in SITES:
        raise ValueError(f"site {site!r} is not one of {', '.join(SITES)}")
    if fault not in FAULTS:
        raise ValueError(f"fault {fault!r} is not one of {', '.join(FAULTS)}")
    if scheme not in SCHEMES:
        raise ValueError(f"scheme {scheme!r} is not one of {', '.join(SCHEMES)}")
    if site == "image":
        return _protect_image_site(artifact, data, fault=fault, eps=eps,
                                   max_overhead=max_overhead, scheme=scheme, out=out,
                                   json_path=json_path, split=split, n_trials=n_trials,
                                   random_state=random_state, data_options=data_options,
                                   progress=progress, **image_options)
    if site == "all":
        # the wire plan first (the frame bits, budget_bits or the wire's
        # max_overhead), then the image of the wire-protected artifact (its
        # copies table included) under --max-overhead of the image; the fault's
        # rate is the wire's, the image's is image_eps (default: eps)
        image_eps = image_options.pop("image_eps", eps)
        if fault == "seu":
            raise ValueError("site 'all' plans the wire against bsc or burst and the image "
                             "against seu: give the wire's fault (--fault bsc|burst)")
        wired = _protect_wire(artifact, data, fault=fault, eps=eps, budget_bits=budget_bits,
                              max_overhead=None if budget_bits is not None else max_overhead,
                              scheme=scheme if scheme in ("auto", "uniform", "tmr", "none")
                              else "auto", out=None, json_path=None, split=split,
                              n_trials=n_trials, random_state=random_state,
                              mean_burst=mean_burst, interleave=interleave, check=check,
                              data_options=data_options, progress=progress)
        res = _protect_image_site(wired.container, data, fault="seu", eps=image_eps,
                                  max_overhead=0.04 if max_overhead is None or
                                  budget_bits is None else max_overhead,
                                  scheme=scheme if scheme != "tmr" else "auto", out=out,
                                  json_path=None, split=split, n_trials=n_trials,
                                  random_state=random_state, data_options=data_options,
                                  progress=progress, **image_options)
        report = {"site": "all", "wire": wired.details, "image": res.details,
                  "predicted_label_change": res.details["predicted_label_change"],
                  "method": res.details["method"]}
        _write_outputs(None, json_path, None, report)
        return _with_details(res, report)
    if image_options:
        raise TypeError(f"unexpected options for the wire site: {sorted(image_options)}")
    return _protect_wire(artifact, data, fault=fault, eps=eps, budget_bits=budget_bits,
                         max_overhead=max_overhead, scheme=scheme, out=out, json_path=json_path,
                         split=split, n_trials=n_trials, random_state=random_state,
                         mean_burst=mean_burst, interleave=interleave, check=check,
                         data_options=data_options, progress=progress)


def _with_details(res, details):
    import dataclasses
    return dataclasses.replace(res, details=details)


def _protect_image_site(artifact, data, *, fault, eps, max_overhead, scheme, out, json_path,
                        split, n_trials, random_state, data_options, progress,
                        **image_options):
    """``site="image"``: :func:`export.protect_image.protect_image` on the rows of
    ``data``, written atomically, as an ``ExportResult``."""
    import firmware_sim
    from firmware_sim.artifact import Container, read_container
    from export.protect_image import protect_image
    from export.result import ExportResult

    if fault != "seu":
        raise ValueError(f"the image site plans against stored-bit upsets: --fault seu; got "
                         f"{fault!r} (bsc and burst are the wire's faults)")
    container = artifact if isinstance(artifact, Container) else read_container(artifact)
    X, y, name = _rows(container, data, split, data_options)
    if progress:
        progress(0, 2, "image: single-upset ranking and prediction")
    prot, report = protect_image(container, X, None, fault="seu", eps=eps,
                                 max_overhead=0.04 if max_overhead is None else max_overhead,
                                 scheme=scheme, random_state=random_state,
                                 n_trials=n_trials, progress=progress, **image_options)
    raw = prot.tobytes()
    device = firmware_sim.load(raw)
    report = dict(report, site="image", kind=container.kind, data=name,
                  n_points=int(len(X)), fault_name="seu", eps=float(eps), scheme=scheme,
                  flash_bytes=int(len(raw)), unprotected_flash_bytes=int(container.nbytes))
    report.pop("ranking", None)
    _write_outputs(out, json_path, raw, report)
    if progress:
        progress(2, 2, "done")
    return ExportResult(kind=container.kind, container=raw, onnx_model=None, device=device,
                        resources=device.resources(), checked_inputs=int(len(X)),
                        label_mismatches=0, details=report)


def _rows(container, data, split, data_options):
    from export.registry import kind_rows
    if isinstance(data, tuple) and len(data) == 2:
        X, y = data
        X = np.asarray(X, np.float64)
        return X, (None if y is None else np.asarray(y, np.int64)), "rows"
    return kind_rows(container.kind)(container, data, split, **(data_options or {}))


def _protect_wire(artifact, data, *, fault, eps, budget_bits, max_overhead, scheme, out,
                  json_path, split, n_trials, random_state, mean_burst, interleave, check,
                  data_options, progress):
    import firmware_sim
    from firmware_sim.artifact import Container, read_container
    from firmware_sim.wire import with_wire_copies
    from export.protect_wire import WIRE_SCHEMES, check_wire, plan_wire, predict_wire
    from export.registry import find_kind_spec
    from export.result import ExportResult

    if isinstance(eps, bool) or not isinstance(eps, (int, float, np.floating)) \
            or not 0.0 < float(eps) < 0.5:
        raise ValueError(f"eps must be a flip probability in (0, 0.5); got {eps!r}")
    eps = float(eps)
    if scheme not in WIRE_SCHEMES:
        raise ValueError(f"scheme {scheme!r} protects the stored image; the wire site takes "
                         f"{', '.join(WIRE_SCHEMES)}")
    if fault == "seu":
        raise ValueError("fault 'seu' upsets the stored image; the wire site takes bsc or "
                         "burst (use --site image for seu)")
    if isinstance(n_trials, bool) or int(n_trials) != n_trials or n_trials < 1:
        raise ValueError(f"n_trials must be a positive integer; got {n_trials!r}")
    container = artifact if isinstance(artifact, Container) else read_container(artifact)
    base = firmware_sim.load(container)
    base = getattr(base, "inner", base)
    if base.frame_dtype != np.int16:
        raise ValueError(f"the wire site protects int16 features; a {base.kind!r} artifact "
                         f"sends {base.frame_dtype} frames (protected naive Bayes plans its "
                         "own repetition: edgecode plan)")
    X, y, name = _rows(container, data, split, data_options)
    if np.ndim(X) != 2 or np.shape(X)[0] < 1:
        raise ValueError(f"the data must have at least one row of features; got shape "
                         f"{np.shape(X)}")
    n = int(base.frame_width)
    if np.shape(X)[1] != getattr(base, "n_features", n):
        raise ValueError(f"the artifact expects {n} features but {name} has {np.shape(X)[1]}")
    budget = _wire_budget(n, budget_bits, max_overhead, scheme)
    if progress:
        progress(0, 4, "single-flip influence")
    spec = find_kind_spec(base.kind)
    if spec is not None:
        changes = spec.wire_sensitivity(base, X)
    else:
        from export.protect_wire import single_flip_changes
        changes = single_flip_changes(base, X)
    plan = plan_wire(changes.mean(axis=0), eps, budget, scheme)
    if progress:
        progress(1, 4, "prediction")
    # the prediction's own simulation (where no bound is tight) runs ten times the
    # campaign's trials, so that its noise is small beside the campaign's interval
    pred = predict_wire(base, X, plan.copies, eps, changes=changes, n_trials=10 * n_trials,
                        random_state=random_state,
                        kind_bound=None if spec is None else spec.wire_bound)
    meta = {"wire_scheme": scheme, "wire_eps": str(eps),
            "wire_predicted_label_change": repr(float(pred["predicted_label_change"])),
            "wire_method": pred["method"]}
    raw = with_wire_copies(base, plan.copies, meta=meta)
    device = firmware_sim.load(raw)
    clean_base = np.asarray(base.labels(base.encode(X)), np.int64)
    clean_prot = np.asarray(device.labels(device.encode(X)), np.int64)
    mismatches = int(np.count_nonzero(clean_base != clean_prot))
    chan, interleaved = _fault(fault, eps, device, mean_burst, interleave)
    if fault == "burst":
        # the planner assumes independent bit errors; a burst channel has no closed
        # form here: the prediction is a campaign of its own (another seed)
        own = check_wire(device, X, chan, n_trials=n_trials,
                         random_state=int(random_state) + 2)
        pred = dict(pred, predicted_label_change=own["simulated_label_change"],
                    lower=own["ci"][0], upper=own["ci"][1], method="simulated",
                    note="burst: simulated (a campaign with another seed; the planner's "
                    "closed form assumes independent bit errors)")
    simulated = None
    if check:
        if progress:
            progress(2, 4, "campaign on the protected device")
        simulated = check_wire(device, X, chan, n_trials=n_trials,
                               random_state=int(random_state) + 1, y=y)
        lo, hi = simulated["ci"]
        simulated["inside"] = bool(lo <= pred["predicted_label_change"] <= hi)
    report = {
        "site": "wire", "kind": base.kind, "data": name, "n_points": int(len(X)),
        "fault": chan.to_dict(), "fault_name": fault, "eps": eps, "scheme": scheme,
        "interleaved": interleaved,
        "allocation": plan.to_dict(), "overhead": plan.overhead,
        "wire_bits": plan.total_bits, "base_bits": int(plan.copies.size),
        "predicted_label_change": float(pred["predicted_label_change"]),
        "method": pred["method"], "prediction": pred, "simulated": simulated,
        "clean_label_mismatches": mismatches,
        "flash_bytes": int(len(raw)), "unprotected_flash_bytes": int(container.nbytes),
    }
    _write_outputs(out, json_path, raw, report)
    if progress:
        progress(4, 4, "done")
    return ExportResult(kind=base.kind, container=raw, onnx_model=None, device=device,
                        resources=device.resources(), checked_inputs=int(len(X)),
                        label_mismatches=mismatches, details=report)


def _write_outputs(out, json_path, raw, report):
    """Write the protected container and the JSON report together, atomically
    (either may be None)."""
    from export.atomic import AtomicOutputs
    with AtomicOutputs([out, json_path]) as tmp:
        if out is not None:
            tmp[out].write_bytes(raw)
        if json_path is not None:
            tmp[json_path].write_text(json.dumps(report, indent=1, default=_json_default))


def _json_default(o):
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"not JSON: {type(o).__name__}")
