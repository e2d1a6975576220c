"""``edgecode plan`` and ``edgecode simulate``: protected naive Bayes on the command line."""

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from ._args import UsageError, flip_probability, jobs, nonnegative_int, open_unit, positive_int

__all__ = ["run_plan", "run_simulate", "run_demo_stage", "register", "load_recorded"]


def load_recorded(spec, container=None):
    """A binary dataset by bundled name or CSV path; when ``spec`` is the
    dataset the artifact records, with the data options it records too
    (``--label``, ``--positive``, ``--ignore``): :func:`export.data.load_recorded`."""
    from export.data import load_recorded as _load

    return _load(container, spec, binary=True)


def _plan_progress(names, stream=None, quiet=False, tty=None, every=10.0):
    """The plan's progress on stderr: an ``export.progress.Progress`` and the
    ``allocate_greedy`` callback that feeds it the step, the feature's name
    and the running 1-SCP (the reporter adds the elapsed time and an ETA)."""
    from export.progress import Progress

    reporter = Progress("greedy plan", stream=stream, every=every, tty=tty, enabled=not quiet)

    def callback(step, total, feature, value):
        name = names[feature] if names is not None and 0 <= feature < len(names) else str(feature)
        reporter(step, total, f"{name} 1-SCP {1 - value:.3e}")

    return reporter, callback


def _parse_eps(text, n=None):
    """``--eps``: one flip probability in [0, 0.5) or a comma list, one per feature."""
    parts = [p for p in str(text).split(",") if p.strip()]
    try:
        vals = [float(p) for p in parts]
    except ValueError:
        raise UsageError(f"--eps must be a number or a comma list of numbers; "
                         f"got {text!r}") from None
    if not vals:
        raise UsageError("--eps is empty: give a flip probability such as 0.1")
    vals = [flip_probability(v) for v in vals]
    if len(vals) == 1:
        return vals[0]
    if n is not None and len(vals) != n:
        raise UsageError(f"--eps has {len(vals)} values but the data has {n} features")
    return np.array(vals)


def _fmt_eps(eps):
    """eps for printing: a number or a short list of plain numbers."""
    if np.ndim(eps) == 0:
        return f"{float(eps):g}"
    vals = [f"{float(v):g}" for v in np.ravel(eps)]
    return "[" + ", ".join(vals[:8]) + (f", ... ({len(vals)} values)" if len(vals) > 8 else "") \
        + "]"


def _fmt_ratio(num, den):
    """``a/b`` as ``1.34x``; a zero denominator as 'unbounded' (no 'infx')."""
    if den <= 0:
        return "unbounded (greedy 1-SCP is 0)" if num > 0 else "1.00x (both 0)"
    return f"{num / den:.2f}x"


def _split_data(data, fit_split, plan_split):
    """(fit rows, plan rows): train/test where the data has a split, else all/all."""
    if data.split is None:
        return data, data
    fit = data.subset(fit_split) if fit_split != "all" else data
    plan = data.subset(plan_split) if plan_split != "all" else data
    return fit, plan


def _fmt_r(r):
    return " ".join(str(2 * int(v) + 1) for v in r)


#: above this many features the allocation rows are summarised, not listed
_LIST_MAX_FEATURES = 40


def _method_reason(requested, used, n, resolution):
    from edgecode._config import PLAN_EXACT_MAX_FEATURES
    if used == "exact":
        why = (f"n = {n} <= {PLAN_EXACT_MAX_FEATURES} features: exact influences by meet in "
               f"the middle (2^{(n + 1) // 2} subset sums per half and point)")
    elif used == "grid":
        why = (f"n = {n} > {PLAN_EXACT_MAX_FEATURES} features: exact influences would cost "
               f"2^{(n + 1) // 2} per point and step; the grid engine ({resolution} cells per "
               "point) costs the same at any n, and the plan is certified afterwards")
    elif used == "approx":
        why = "the seed's Algorithm 1 (k buckets), every candidate evaluated at every step"
    else:
        why = "the certified lower bound, every candidate evaluated at every step"
    head = f"method {requested} -> {used}" if requested == "auto" else f"method {used}"
    return f"{head}: {why}"


def _score(margin, deltas, eff, resolution):
    """(estimate, lower, upper, how) of the mean SCP under effective flip probabilities.

    Exact when at most PLAN_CERTIFY_EXACT_MAX features can flip; otherwise the
    grid engine's estimate and the certified bounds of ``scp_bounds``,
    computed in chunks of points so that Ctrl-C is answered promptly.
    """
    from edgecode._config import PLAN_CERTIFY_EXACT_MAX
    from edgecode.redundancy import certify_plan
    from edgecode.redundancy.influence import GridEngine
    from edgecode.scp import scp_bounds
    live = (eff > 0) & (deltas != 0).any(axis=0)
    if live.sum() <= PLAN_CERTIFY_EXACT_MAX:
        lo, up, how = certify_plan(margin, deltas, eff)
        return lo, lo, up, how
    est = 1.0 - float(GridEngine(margin, deltas, eff, resolution).change.mean())
    lows, ups = [], []
    for a in range(0, len(margin), 256):
        lo, up = scp_bounds(margin[a:a + 256], deltas[a:a + 256], eff)
        lows.append(lo)
        ups.append(up)
    lo, up = float(np.concatenate(lows).mean()), float(np.concatenate(ups).mean())
    return min(max(est, lo), up), lo, up, "bounds"


def _summary_rows(r, names, top=10):
    """Copies-per-feature histogram and the most protected features, for large n."""
    copies = 2 * np.asarray(r) + 1
    vals, counts = np.unique(copies, return_counts=True)
    hist = ", ".join(f"{c} x {v}" for v, c in zip(vals, counts))
    order = np.argsort(-copies, kind="stable")[:top]
    most = ", ".join(f"{names[j]} ({copies[j]})" for j in order if copies[j] > 1)
    return f"copies per feature: {hist}", f"most protected (copies): {most or 'none'}"


def _write_plan(path, plan, names, meta):
    """The full plan as CSV (one row per feature) or JSON, by the file suffix."""
    path = Path(path)
    rows = [{"index": int(j), "name": names[j], "copies": int(2 * plan.repetitions[j] + 1),
             "repetitions": int(plan.repetitions[j]), "eps": float(plan.eps[j]),
             "effective_eps": float(plan.effective_eps[j])} for j in range(len(names))]
    if path.suffix.lower() == ".json":
        doc = {**meta, "features": rows}
        path.write_text(json.dumps(doc, indent=1) + "\n")
    else:
        import csv
        with open(path, "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(rows[0]) if rows else ["index"])
            w.writeheader()
            w.writerows(rows)


from export.atomic import AtomicOutputs as _AtomicOutputs  # noqa: E402  (one copy, export.atomic)


def run_plan(dataset, eps, budget_bits, method="auto", alpha=1.0, out=None, onnx_out=None,
             fit_split="train", plan_split="test", max_points=None, stream=None, quiet=False,
             plan_out=None, resolution=None, progress_stream=None, dataset_ref=None,
             dataset_options=None):
    """Fit, plan uniform vs greedy, print the table, optionally write artifacts.

    ``dataset_ref`` (default: the dataset's name) and ``dataset_options``
    (CSV options: target, positive, ignore) are recorded in the artifact, so
    that ``simulate``, ``campaign``, ``upsets`` and ``firmware --check`` find
    the same rows without ``--data``.

    Returns a dict with the fitted model, the data, both plans and the export, the
    expected time of planning and scoring (``expected_seconds``, the estimate the
    expected-time line prints) and the time they took (``elapsed_seconds``).
    """
    from edgecode import datasets
    from edgecode._config import PLAN_GRID_RESOLUTION
    from edgecode.naive_bayes import BinaryNaiveBayes
    from export.progress import format_seconds
    from edgecode.redundancy import (PlanningCostWarning, allocate_greedy, allocate_uniform,
                                     estimate_plan_seconds, repetition_error)
    from edgecode.redundancy.greedy import _resolve_method

    out_stream = stream or sys.stdout
    resolution = PLAN_GRID_RESOLUTION if resolution is None else resolution

    def say(msg=""):
        if not quiet:
            print(msg, file=out_stream, flush=True)

    data = datasets.load(dataset) if isinstance(dataset, str) else dataset
    fit_rows, plan_rows = _split_data(data, fit_split, plan_split)
    # trained on the true labels (a CSV's values), so that the exports return them
    nb = BinaryNaiveBayes(alpha=alpha).fit(fit_rows.X, fit_rows.labels())
    Xp = plan_rows.X if max_points is None else plan_rows.X[:max_points]
    margin, deltas = nb.decision_function(Xp), nb.flip_deltas(Xp)
    t, n = deltas.shape
    names = list(data.feature_names) if len(data.feature_names) == n else \
        [f"x{j}" for j in range(n)]
    eps_arr = eps if np.ndim(eps) else float(eps)
    eps_vec = np.broadcast_to(np.asarray(eps_arr, dtype=float), (n,)).copy()
    say(f"plan on {data.name}: n = {n} features, t = {t} planning points, "
        f"fit on {len(fit_rows.X)} rows (accuracy {nb.score(plan_rows.X, plan_rows.labels()):.3f} "
        f"on the planning split)")
    say(f"channel eps = {_fmt_eps(eps)}, "
        f"redundancy budget {budget_bits} bits ({budget_bits // 2} units)")
    used = _resolve_method(method, n)
    say(_method_reason(method, used, n, resolution))
    # the plan (at most the steps any plan can use), then the none and uniform rows
    n_rows = 1 + int(budget_bits >= 2 * n)
    expected = estimate_plan_seconds(t, n, budget_bits // 2, used, resolution, eps=eps_vec,
                                     extra_scores=n_rows)
    if expected > 60:
        say(f"warning: expected to take about {format_seconds(expected)} "
            "(progress on stderr; Ctrl-C stops cleanly, nothing is written)")
    elif expected > 5:
        say(f"expected time: about {format_seconds(expected)}")
    t0 = time.perf_counter()
    reporter, progress = _plan_progress(names, stream=progress_stream, quiet=quiet)
    with reporter, warnings.catch_warnings():
        warnings.simplefilter("ignore", PlanningCostWarning)  # said above, with the CLI's estimate
        plan = allocate_greedy(margin, deltas, eps_arr, budget_bits, method=method,
                               progress=progress, resolution=resolution)
    plan_s = time.perf_counter() - t0
    if plan.stopped_early:
        say(f"greedy plan stopped early at step {len(plan.history):,} of {budget_bits // 2:,}: "
            f"{plan.stop_reason} (1-SCP {1 - plan.mean_scp:.3e}); {plan.unused_bits:,} of the "
            f"{budget_bits:,} budget bits unused")
    rows = [("none", _score(margin, deltas, eps_vec, resolution), np.zeros(n, int))]
    uniform = None
    if budget_bits >= 2 * n:
        ru = allocate_uniform(n, budget_bits)
        sc = _score(margin, deltas, repetition_error(eps_vec, ru), resolution)
        uniform = sc[0]
        rows.append(("uniform", sc, ru))
    rows.append(("greedy", (plan.mean_scp, plan.scp_lower, plan.scp_upper, plan.certified_by),
                 plan.repetitions))
    elapsed = time.perf_counter() - t0
    exact = all(r[1][3] == "exact" for r in rows)
    if n <= _LIST_MAX_FEATURES:
        head = "1-SCP" if exact else "1-SCP est  [certified interval]"
        say(f"{'allocation':<10} {head:>11}  bits per feature")
    else:
        say(f"{'allocation':<10} {'1-SCP' if exact else '1-SCP est  [certified interval]'}")
    for name, (est, lo, up, how), r in rows:
        val = f"{1 - est:11.4e}" if how == "exact" else \
            f"{1 - est:11.4e}  [{1 - up:.4e}, {1 - lo:.4e}]"
        say(f"{name:<10} {val}  {_fmt_r(r)}" if n <= _LIST_MAX_FEATURES else f"{name:<10} {val}")
    if n > _LIST_MAX_FEATURES:
        for line in _summary_rows(plan.repetitions, names):
            say(line)
        if plan_out is None:
            say("(the full plan: --plan-out plan.csv or plan.json)")
    ref_name, ref = ("uniform", rows[1][1]) if uniform is not None else ("none", rows[0][1])
    g = rows[-1][1]
    ratio = (1 - ref[0]) / (1 - g[0]) if g[0] < 1 else float("inf")
    cert = ""
    if not exact and g[1] < 1:
        cert = (f", certified {_fmt_ratio(1 - ref[2], 1 - g[1])}-"
                f"{_fmt_ratio(1 - ref[1], 1 - g[2])}")
    say(f"ratio {ref_name}/greedy 1-SCP: {_fmt_ratio(1 - ref[0], 1 - g[0])}{cert}   (method "
        f"{plan.method}, plan {plan_s:.2f}s, all {elapsed:.2f}s)")
    result = {"model": nb, "data": data, "plan_rows": plan_rows, "X_plan": Xp, "plan": plan,
              "uniform_scp": uniform, "none_scp": rows[0][1][0], "ratio": ratio,
              "expected_seconds": expected, "elapsed_seconds": elapsed}
    if out is not None or onnx_out is not None or plan_out is not None:
        if dataset_ref is None:
            dataset_ref = dataset if isinstance(dataset, str) else data.name
        meta = {"dataset": str(dataset_ref),
                "planned_eps": json.dumps(np.atleast_1d(eps).tolist()),
                "planned_mean_scp": repr(plan.mean_scp),
                "planned_scp_lower": repr(plan.scp_lower),
                "planned_scp_upper": repr(plan.scp_upper),
                "planning_points": str(len(Xp)),
                "scp_method": plan.method, "budget_bits": str(budget_bits)}
        if dataset_options:
            meta["dataset_options"] = json.dumps(dataset_options)
        with _AtomicOutputs([out, onnx_out, plan_out]) as tmp:
            if out is not None or onnx_out is not None:
                from export.naive_bayes import export_protected_nb
                exp = export_protected_nb(nb, plan.repetitions, container_path=tmp[out],
                                          onnx_path=tmp[onnx_out], X_check=data.X, meta=meta)
                result["export"] = exp
            if plan_out is not None:
                _write_plan(tmp[plan_out], plan, names,
                            {**meta, "certified_by": plan.certified_by,
                             "planned_eps": np.atleast_1d(eps).tolist(),
                             "planned_mean_scp": plan.mean_scp,
                             "planned_scp_lower": plan.scp_lower,
                             "planned_scp_upper": plan.scp_upper,
                             "planning_points": len(Xp), "budget_bits": budget_bits,
                             "unused_bits": plan.unused_bits, "stop_reason": plan.stop_reason})
        if out is not None:
            say(f"wrote container {out} ({len(result['export'].container)} bytes)")
        if onnx_out is not None:
            say(f"wrote ONNX {onnx_out}")
        if plan_out is not None:
            say(f"wrote plan {plan_out} ({n} features)")
        if "export" in result:
            say("size: " + result["export"].report())
            warning = result["export"].fit_warning()
            if warning:
                say(warning + " (a smaller --budget, or fewer features)")
    return result


def run_simulate(artifact, eps, trials, dataset="house_votes", split="test", seed=0,
                 confidence=0.99, max_points=None, stream=None, n_jobs=None, quiet=False,
                 progress_stream=None, data_options=None):
    """Monte Carlo campaign on the device runtime next to the SCP predicted for it
    (``n_jobs`` threads; the counts do not depend on it). ``data_options``
    (``label``, ``ignore``, ``positive``) override what the artifact records.

    Progress (inferences done, ETA) goes to ``progress_stream`` (default
    stderr) unless ``quiet``; memory does not grow with ``trials`` and Ctrl-C
    stops the run between batches (``KeyboardInterrupt``; the CLI exits 130).
    """
    from export.progress import Progress
    from firmware_sim.artifact import read_container
    from firmware_sim.naive_bayes import load_protected_nb, simulate
    from firmware_sim.campaign import wilson_interval

    out = stream or sys.stdout
    container = read_container(artifact) if not isinstance(artifact, bytes) else \
        read_container(artifact)
    if container.kind != "protected_nb":
        return _simulate_other(container, artifact, eps, trials, dataset, split, seed,
                               confidence, max_points, out, n_jobs, quiet, progress_stream,
                               data_options)
    from export.data import load_recorded as _load_recorded
    device = load_protected_nb(container)
    data = _load_recorded(container, dataset, binary=True, **(data_options or {})) \
        if isinstance(dataset, str) else dataset
    rows = data.subset(split) if (data.split is not None and split != "all") else data
    X = rows.X if max_points is None else rows.X[:max_points]
    if X.shape[1] != device.n_features:
        raise UsageError(f"the artifact expects {device.n_features} features but "
                         f"{data.name} has {X.shape[1]}")
    eps_v = eps if np.ndim(eps) else float(eps)
    t0 = time.perf_counter()
    with Progress("simulate", stream=progress_stream, enabled=not quiet) as progress:
        same, clean = simulate(device, X, eps_v, trials, random_state=seed, n_jobs=n_jobs,
                               progress=progress)
    sim_s = time.perf_counter() - t0
    # pooled over points: points with different rates only shrink the variance,
    # so the Wilson interval of the pooled count is conservative
    total = X.shape[0] * trials
    p = int(np.sum(same)) / total
    lo_ci, hi_ci = (float(v) for v in wilson_interval(int(np.sum(same)), total, confidence))
    # the device's own classifier as a linear model: predicted SCP of what it runs
    # (imported after the run: export.analytics brings scikit-learn, whose import
    # and teardown would delay the start and an interrupted run's exit)
    from export.analytics import device_scp
    pred, lo, hi, method = device_scp(device, X, eps_v)
    if method == "exact":
        pred_txt = f"{pred.mean():.6f} (exact)"
    else:
        pred_txt = f"in [{lo.mean():.6f}, {hi.mean():.6f}] (certified bounds)"
    inside = lo_ci <= pred.mean() <= hi_ci
    print(f"simulate {artifact if not isinstance(artifact, bytes) else '<bytes>'} on "
          f"{data.name} ({len(X)} points x {trials} trials, eps = {_fmt_eps(eps)}, seed {seed}, "
          f"{device.total_bits} bits per inference)", file=out)
    print(f"simulated same-classification rate: {p:.6f}  "
          f"{100 * confidence:g}% CI [{lo_ci:.6f}, {hi_ci:.6f}]  ({sim_s:.2f}s)",
          file=out)
    print(f"predicted mean SCP of the device model: {pred_txt}  -> "
          f"{'inside' if inside else 'OUTSIDE'} the interval", file=out)
    planned = container.meta.get("planned_mean_scp")
    if planned is not None:
        try:
            planned_eps = _fmt_eps(np.asarray(json.loads(container.meta.get("planned_eps"))))
        except (TypeError, ValueError):
            planned_eps = container.meta.get("planned_eps")
        print(f"planner's prediction stored in the artifact: {float(planned):.6f} at eps "
              f"{planned_eps} on {container.meta.get('planning_points')} planning points",
              file=out)
    return {"rate": p, "ci": (lo_ci, hi_ci), "predicted": float(pred.mean()),
            "inside": inside, "same": same, "clean": clean}


def _simulate_other(container, artifact, eps, trials, dataset, split, seed, confidence,
                    max_points, out, n_jobs=None, quiet=False, progress_stream=None,
                    data_options=None):
    """``edgecode simulate`` on an ECOC or SSBC artifact: the device contract's
    ``simulate`` at the kind's default site, rate and accuracy with intervals."""
    from firmware_sim.campaign import wilson_interval
    from export.progress import Progress
    from export.registry import kind_rows
    from firmware_sim import load, simulate

    device = load(container)
    data = dataset if dataset != "house_votes" else (container.meta or {}).get("dataset")
    if data is None:
        raise ValueError("the artifact records no dataset; pass --data")
    X, y, name = kind_rows(container.kind)(container, data, split, **(data_options or {}))
    if max_points is not None:
        X, y = X[:max_points], (None if y is None else y[:max_points])
    eps_v = eps if np.ndim(eps) else float(eps)
    t0 = time.perf_counter()
    with Progress("simulate", stream=progress_stream, enabled=not quiet) as progress:
        res = simulate(device, X, eps_v, trials, random_state=seed, y=y, n_jobs=n_jobs,
                       progress=progress)
    sim_s = time.perf_counter() - t0
    total = len(X) * trials
    p = res.mean_same_rate
    lo, hi = (float(v) for v in wilson_interval(int(res.same.sum()), total, confidence))
    label = artifact if isinstance(artifact, str) else "<artifact>"
    print(f"simulate {label}: {container.kind} on {name} ({len(X)} points x {trials} trials, "
          f"eps = {_fmt_eps(eps)} at the {device.default_site} site, seed {seed})", file=out)
    print(f"simulated same-classification rate: {p:.6f}  {100 * confidence:g}% CI "
          f"[{lo:.6f}, {hi:.6f}]  ({sim_s:.2f}s)", file=out)
    if res.accuracy is not None:
        print(f"accuracy under noise: {res.accuracy:.6f}", file=out)
    return {"rate": p, "ci": (lo, hi), "accuracy": res.accuracy, "same": res.same,
            "clean": res.clean_labels}


def run_demo_stage(out_dir, trials=2000, stream=None):
    """Demo stage: plan -> export -> device -> simulate on house votes, then NLTCS and DNA."""
    import onnxruntime as ort
    from firmware_sim.channel import bsc
    from firmware_sim.naive_bayes import load_protected_nb

    out = stream or sys.stdout
    out_dir = Path(out_dir)
    print("== 1/6 Protected naive Bayes ==", file=out)
    print("-- plan: house votes, eps = 0.2, 32 redundancy bits", file=out)
    res = run_plan("house_votes", 0.2, 32, out=out_dir / "house_votes.edgc",
                   onnx_out=out_dir / "house_votes.onnx", stream=out)
    print("\n-- device: load the container, compare with onnxruntime", file=out)
    device = load_protected_nb(out_dir / "house_votes.edgc")
    X = res["data"].X
    bits = device.transmit(X)
    noisy = bsc(bits, 0.2, random_state=0)
    from export.naive_bayes import protected_nb_to_onnx

    # the .onnx takes the features; the received-bits graph (majority decoding
    # in the graph) checks noisy frames too
    sess = ort.InferenceSession(str(out_dir / "house_votes.onnx"),
                                providers=["CPUExecutionProvider"])
    on_features = np.array_equal(sess.run(["label"], {"X": X.astype(np.float32)})[0],
                                 res["model"].classes_[device.predict(X)])
    bits_graph = protected_nb_to_onnx(device.weights, device.bias, device.repetitions,
                                      input="bits")
    bsess = ort.InferenceSession(bits_graph.SerializeToString(),
                                 providers=["CPUExecutionProvider"])
    agree = on_features and all(
        np.array_equal(bsess.run(["label"], {"bits": b})[0], device.predict_bits(b))
        for b in (bits, noisy))
    float_labels = res["model"].decision_function(X) > 0
    print(f"device labels == float model labels on all {len(X)} clean inputs: "
          f"{np.array_equal(device.predict(X).astype(bool), float_labels)}", file=out)
    print(f"onnxruntime labels == device labels on the features and on clean and noisy "
          f"received bits: {agree}", file=out)
    r = device.resources()
    ops = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in r["ops_per_inference"].items()
                    if k != "total")
    print(f"resources: {r['total_bits']} received bits per inference, flash {r['flash_bytes']} B "
          f"(parameters {r['parameter_bytes']} B), RAM {r['ram_bytes']} B per inference; "
          f"operations per inference {r['ops_per_inference']['total']} ({ops})", file=out)
    print(f"\n-- simulate: {trials} noisy transmissions per point", file=out)
    sim = run_simulate(out_dir / "house_votes.edgc", 0.2, trials, dataset="house_votes",
                       stream=out)
    print("\n-- NLTCS: 15 features, 3236 test points, 15 redundancy units", file=out)
    run_plan("nltcs", 0.2, 30, stream=out)
    print("\n-- at scale: Statlog DNA, 180 features, 3186 points, 60 redundancy bits",
          file=out)
    wide = run_plan("dna", 0.2, 60, stream=out, plan_out=out_dir / "dna_plan.json")
    return {"plan": res, "simulate": sim, "onnx_agrees": agree, "wide_plan": wide}


def register(sub):
    """Add the ``plan`` and ``simulate`` sub-commands to ``sub`` (argparse subparsers)."""
    pl = sub.add_parser(
        "plan", help="fit naive Bayes and plan a repetition-code allocation",
        description="Fit binary naive Bayes, then spend a redundancy budget greedily (seed 000, "
        "Algorithm 2) where it raises the mean same-classification probability (SCP) the most; "
        "print none / uniform / greedy with certified 1-SCP figures.")
    pl.add_argument("data", help="bundled dataset name (house_votes, nltcs, dna) or a CSV path "
                    "(.csv or .csv.gz: binary 0/1 columns, a 'class' column, optional 'split')")
    pl.add_argument("--eps", required=True, help="channel flip probability in [0, 0.5): one "
                    "number or a comma list, one per feature")
    g = pl.add_mutually_exclusive_group(required=True)
    g.add_argument("--budget", type=nonnegative_int, help="redundancy bits to spend (even: one "
                   "repetition unit adds 2 copies of a feature)")
    g.add_argument("--R", type=nonnegative_int, help="budget as 2 n R bits (R repetition units "
                   "per feature on average)")
    pl.add_argument("--method", default="auto", choices=["auto", "exact", "grid", "approx",
                                                         "bounds"],
                    help="how candidate gains are computed. exact: exact feature influences "
                    "(meet in the middle, n <= 30). grid: influences from a discretised "
                    "flip-sum law per point, any n (thousands of features). approx: the seed's "
                    "Algorithm 1, every candidate evaluated (slow beyond a few dozen features). "
                    "bounds: the certified lower bound, every candidate evaluated (slow). "
                    "auto: exact up to 20 features, grid above; the choice is "
                    "printed. Every plan is certified afterwards (exact up to 24 features, "
                    "scp_bounds above). Default: auto")
    pl.add_argument("--resolution", type=positive_int, default=None,
                    help="grid cells per point for --method grid (a power of two; default 2048)")
    pl.add_argument("--alpha", type=float, default=1.0, help="Laplace smoothing (> 0)")
    from export.data import add_data_options
    add_data_options(pl)
    pl.add_argument("--target", dest="deprecated_target", default=None,
                    help=argparse.SUPPRESS)     # the label column before --label (deprecated)
    pl.add_argument("--fit-split", default="train", help="rows to fit on when the data has "
                    "a split (train/valid/test/all)")
    pl.add_argument("--plan-split", default="test", help="rows to plan on when the data has "
                    "a split (train/valid/test/all)")
    pl.add_argument("--max-points", type=positive_int, help="plan on at most this many points "
                    "(default: every row of the planning split)")
    pl.add_argument("--out", help="write the device container here (.edgc)")
    pl.add_argument("--onnx", help="write the ONNX graph here (.onnx)")
    pl.add_argument("--plan-out", help="write the full plan here: .csv (one row per feature) or "
                    ".json (with the certified interval)")
    pl.set_defaults(func=_cmd_plan)

    s = sub.add_parser("simulate", help="Monte Carlo run of a device artifact under a BSC "
                       "(protected NB: next to the SCP predicted for it)")
    s.add_argument("artifact", help="device container ('edgecode plan/ecoc/hash --out'); "
                   "ECOC and SSBC flip their intermediate results (learner outputs, code bits)")
    s.add_argument("--eps", required=True, help="channel flip probability in [0, 0.5) (one, "
                   "or one per feature)")
    s.add_argument("--trials", type=positive_int, default=10000,
                   help="noisy transmissions per point")
    s.add_argument("--data", default=None, help="inputs: bundled name or CSV (default: the "
                   "dataset recorded in the artifact)")
    s.add_argument("--split", default="test", help="rows to use when the data has a split")
    add_data_options(s, label_help="label column of a --data CSV (default: the one the "
                     "artifact records, else 'class')")
    s.add_argument("--seed", type=int, default=0, help="random seed of the channel")
    s.add_argument("--confidence", type=open_unit, default=0.99,
                   help="level of the interval of the simulated rate")
    s.add_argument("--max-points", type=positive_int, help="use at most this many points "
                   "(default: all)")
    s.add_argument("--jobs", type=jobs, default=None, help="threads (-1: every CPU; default: "
                   "numba's thread count); the counts do not depend on it")
    s.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    s.set_defaults(func=_cmd_simulate)


def _cmd_plan(args):
    if args.budget is not None and args.budget % 2:
        raise UsageError(f"--budget must be even: one repetition unit adds 2 copies of a "
                         f"feature; got {args.budget}")
    if not (args.alpha > 0 and np.isfinite(args.alpha)):
        raise UsageError(f"--alpha must be a finite number > 0; got {args.alpha}")
    if args.resolution is not None and args.resolution & (args.resolution - 1):
        raise UsageError(f"--resolution must be a power of two; got {args.resolution}")
    _parse_eps(args.eps)                       # a bad value is refused before any work
    from export.data import dataset_reference, load_binary
    from .budget import data_options
    if args.deprecated_target is not None:
        if args.label is not None and args.label != args.deprecated_target:
            raise UsageError("--target (deprecated) and --label name different columns; give "
                             "--label only")
        print("warning: plan --target is deprecated (--target names the device in "
              "'edgecode firmware'); use --label", file=sys.stderr)
        args.label = args.deprecated_target
    options = data_options(args)
    data = load_binary(args.data, **options)
    n = data.X.shape[1]
    budget = args.budget if args.budget is not None else 2 * n * args.R
    ref = dataset_reference(args.data, options)[0]
    run_plan(data, _parse_eps(args.eps, n), budget, method=args.method, alpha=args.alpha,
             out=args.out, onnx_out=args.onnx, fit_split=args.fit_split,
             plan_split=args.plan_split, max_points=args.max_points, plan_out=args.plan_out,
             resolution=args.resolution, dataset_ref=ref, dataset_options=options)


def _cmd_simulate(args):
    from firmware_sim.artifact import read_container
    eps = _parse_eps(args.eps)
    data = args.data
    if data is None:
        data = read_container(args.artifact).meta.get("dataset")
        if data is None:
            raise UsageError("the artifact records no dataset; pass --data")
    from .budget import data_options
    run_simulate(args.artifact, eps, args.trials, dataset=data,
                 split=args.split, seed=args.seed, confidence=args.confidence,
                 max_points=args.max_points, n_jobs=args.jobs, quiet=args.quiet,
                 data_options=data_options(args))
