"""``edgecode plan`` and ``edgecode simulate``: protected naive Bayes on the command line."""

import argparse
import json
import sys
import warnings
from pathlib import Path

import numpy as np

from ._args import UsageError, flip_probability, jobs, nonnegative_int, open_unit, positive_int

__all__ = ["run_plan", "run_simulate", "run_demo_stage", "register"]


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


def _fmt_r(r):
    return " ".join(str(2 * int(v) + 1) for v in r)


#: above this many features the allocation rows are summarised, not listed
_LIST_MAX_FEATURES = 40


def _summary_rows(r, names, top=10):
    """Copies-per-feature histogram and the most protected features, for large n."""
    copies = 2 * np.asarray(r) + 1
    vals, counts = np.unique(copies, return_counts=True)
    hist = ", ".join(f"{c} x {v}" for v, c in zip(vals, counts))
    order = np.argsort(-copies, kind="stable")[:top]
    most = ", ".join(f"{names[j]} ({copies[j]})" for j in order if copies[j] > 1)
    return f"copies per feature: {hist}", f"most protected (copies): {most or 'none'}"


def run_plan(dataset, eps, budget_bits, method="auto", alpha=1.0, out=None, onnx_out=None,
             fit_split="train", plan_split="test", max_points=None, stream=None, quiet=False,
             plan_out=None, resolution=None, progress_stream=None, dataset_ref=None,
             dataset_options=None):
    """``edgecode plan``: plan with :mod:`export.plan`, print the table, write the artifacts.

    ``dataset``: a bundled name or CSV path (:func:`export.data.load_binary`)
    or a :class:`edgecode.datasets.BinaryDataset`. ``dataset_ref`` (default:
    the dataset's name) and ``dataset_options`` (CSV options: label,
    positive, ignore) are recorded in the artifact, so that ``simulate``,
    ``campaign``, ``upsets`` and ``firmware --check`` find the same rows
    without ``--data``.

    Returns a dict with the fitted model, the data, both plans and the export, the
    expected time of planning and scoring (``expected_seconds``, the estimate the
    expected-time line prints) and the time they took (``elapsed_seconds``).
    """
    from edgecode.redundancy import PlanningCostWarning
    from export.data import load_binary
    from export.plan import export_plan, method_reason, prepare_plan, solve_plan
    from export.progress import format_seconds

    out_stream = stream or sys.stdout

    def say(msg=""):
        if not quiet:
            print(msg, file=out_stream, flush=True)

    data = load_binary(dataset) if isinstance(dataset, str) else dataset
    setup = prepare_plan(data, eps, budget_bits, method=method, alpha=alpha,
                         fit_split=fit_split, plan_split=plan_split, max_points=max_points,
                         resolution=resolution)
    n, t, names = setup.n_features, setup.n_points, setup.feature_names
    say(f"plan on {data.name}: n = {n} features, t = {t} planning points, "
        f"fit on {len(setup.fit_rows.X)} rows (accuracy {setup.accuracy:.3f} "
        f"on the planning split)")
    say(f"channel eps = {_fmt_eps(eps)}, "
        f"redundancy budget {budget_bits} bits ({budget_bits // 2} units)")
    say(method_reason(method, setup.method_used, n, setup.resolution))
    expected = setup.expected_seconds
    if expected > 60:
        say(f"warning: expected to take about {format_seconds(expected)} "
            "(progress on stderr; Ctrl-C stops cleanly, nothing is written)")
    elif expected > 5:
        say(f"expected time: about {format_seconds(expected)}")
    reporter, progress = _plan_progress(names, stream=progress_stream, quiet=quiet)
    with reporter, warnings.catch_warnings():
        warnings.simplefilter("ignore", PlanningCostWarning)  # said above, with the CLI's estimate
        outcome = solve_plan(setup, progress=progress)
    plan = outcome.plan
    if plan.stopped_early:
        say(f"greedy plan stopped early at step {len(plan.history):,} of {budget_bits // 2:,}: "
            f"{plan.stop_reason} (1-SCP {1 - plan.mean_scp:.3e}); {plan.unused_bits:,} of the "
            f"{budget_bits:,} budget bits unused")
    exact = outcome.exact
    head = "1-SCP" if exact else "1-SCP est  [certified interval]"
    if n <= _LIST_MAX_FEATURES:
        say(f"{'allocation':<10} {head:>11}  bits per feature")
    else:
        say(f"{'allocation':<10} {head}")
    for a in outcome.allocations:
        val = f"{1 - a.estimate:11.4e}" if a.how == "exact" else \
            f"{1 - a.estimate:11.4e}  [{1 - a.upper:.4e}, {1 - a.lower:.4e}]"
        say(f"{a.name:<10} {val}  {_fmt_r(a.repetitions)}" if n <= _LIST_MAX_FEATURES
            else f"{a.name:<10} {val}")
    if n > _LIST_MAX_FEATURES:
        for line in _summary_rows(plan.repetitions, names):
            say(line)
        if plan_out is None:
            say("(the full plan: --plan-out plan.csv or plan.json)")
    ref, g = outcome.reference, outcome.greedy
    cert = ""
    if not exact and g.lower < 1:
        cert = (f", certified {_fmt_ratio(1 - ref.upper, 1 - g.lower)}-"
                f"{_fmt_ratio(1 - ref.lower, 1 - g.upper)}")
    say(f"ratio {ref.name}/greedy 1-SCP: {_fmt_ratio(1 - ref.estimate, 1 - g.estimate)}{cert}   "
        f"(method {plan.method}, plan {outcome.plan_seconds:.2f}s, all "
        f"{outcome.elapsed_seconds:.2f}s)")
    result = {"model": setup.model, "data": data, "plan_rows": setup.plan_rows,
              "X_plan": setup.X_plan, "plan": plan, "uniform_scp": outcome.uniform_scp,
              "none_scp": outcome.none_scp, "ratio": outcome.ratio,
              "expected_seconds": expected, "elapsed_seconds": outcome.elapsed_seconds,
              "outcome": outcome}
    if out is not None or onnx_out is not None or plan_out is not None:
        if dataset_ref is None:
            dataset_ref = dataset if isinstance(dataset, str) else data.name
        exp = export_plan(outcome, out=out, onnx_out=onnx_out, plan_out=plan_out,
                          dataset_ref=dataset_ref, dataset_options=dataset_options)
        if exp is not None:
            result["export"] = exp
        if out is not None:
            say(f"wrote container {out} ({len(exp.container)} bytes)")
        if onnx_out is not None:
            say(f"wrote ONNX {onnx_out}")
        if plan_out is not None:
            say(f"wrote plan {plan_out} ({n} features)")
        if exp is not None:
            say("size: " + exp.report())
            warning = exp.fit_warning()
            if warning:
                say(warning + " (a smaller --budget, or fewer features)")
    return result


def run_simulate(artifact, eps, trials, dataset=None, split="test", seed=0,
                 confidence=0.99, max_points=None, stream=None, n_jobs=None, quiet=False,
                 progress_stream=None, data_options=None):
    """``edgecode simulate``: :func:`export.simulate.simulate_artifact` (any kind),
    printed; for a kind with a closed form, the predicted rate next to the
    measured one (``n_jobs`` threads; the counts do not depend on it).
    ``dataset`` (default: the one the artifact records) and ``data_options``
    (``label``, ``ignore``, ``positive``, over what the artifact records) name
    the rows.

    Progress (inferences done, ETA) goes to ``progress_stream`` (default
    stderr) unless ``quiet``; memory does not grow with ``trials`` and Ctrl-C
    stops the run between batches (``KeyboardInterrupt``; the CLI exits 130).

    Returns a dict: ``rate``, ``ci``, ``accuracy``, ``predicted`` and
    ``inside`` (None without a closed form), ``same``, ``clean`` and the
    whole ``report``.
    """
    from export.progress import Progress
    from export.simulate import simulate_artifact

    out = stream or sys.stdout
    with Progress("simulate", stream=progress_stream, enabled=not quiet) as progress:
        rep = simulate_artifact(artifact, eps, trials, dataset=dataset, split=split,
                                random_state=seed, confidence=confidence,
                                max_points=max_points, n_jobs=n_jobs, progress=progress,
                                data_options=data_options)
    label = artifact if isinstance(artifact, (str, Path)) else "<artifact>"
    lo, hi = rep.ci
    print(f"simulate {label}: {rep.kind} on {rep.data_name} ({rep.n_points} points x "
          f"{trials} trials, eps = {_fmt_eps(eps)} at the {rep.site} site, seed {seed})",
          file=out)
    print(f"simulated same-classification rate: {rep.rate:.6f}  {100 * confidence:g}% CI "
          f"[{lo:.6f}, {hi:.6f}]  ({rep.seconds:.2f}s)", file=out)
    if rep.accuracy is not None:
        print(f"accuracy under noise: {rep.accuracy:.6f}", file=out)
    pred = rep.prediction
    if pred is not None:
        txt = f"{pred.mean:.6f} (exact)" if pred.exact else \
            f"in [{pred.lower:.6f}, {pred.upper:.6f}] (certified bounds)"
        print(f"predicted mean SCP of the device model: {txt}  -> "
              f"{'inside' if rep.inside else 'OUTSIDE'} the interval", file=out)
    if rep.planned is not None:
        try:
            planned_eps = _fmt_eps(np.asarray(json.loads(rep.planned["planned_eps"])))
        except (TypeError, ValueError):
            planned_eps = rep.planned["planned_eps"]
        print(f"planner's prediction stored in the artifact: "
              f"{float(rep.planned['planned_mean_scp']):.6f} at eps {planned_eps} on "
              f"{rep.planned['planning_points']} planning points", file=out)
    return {"rate": rep.rate, "ci": rep.ci, "accuracy": rep.accuracy,
            "predicted": None if pred is None else pred.mean, "inside": rep.inside,
            "same": rep.result.same, "clean": rep.result.clean_labels, "report": rep}


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
    from export.data import data_options, dataset_reference, load_binary
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
    from export.data import data_options
    run_simulate(args.artifact, _parse_eps(args.eps), args.trials, dataset=args.data,
                 split=args.split, seed=args.seed, confidence=args.confidence,
                 max_points=args.max_points, n_jobs=args.jobs, quiet=args.quiet,
                 data_options=data_options(args))
