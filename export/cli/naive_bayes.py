"""``edgecode plan`` and ``edgecode simulate``: protected naive Bayes on the command line."""

import json
import sys
import time
from pathlib import Path

import numpy as np

__all__ = ["run_plan", "run_simulate", "run_demo_stage", "register"]


class _Progress:
    """A one-line progress bar on stderr for long plans (silent when not a TTY)."""

    def __init__(self, label, stream=None, force=False):
        self.label, self.stream = label, stream or sys.stderr
        self.enabled = force or self.stream.isatty()
        self.t0 = time.perf_counter()

    def __call__(self, step, total, feature, value):
        if not self.enabled:
            return
        width = 30
        done = int(width * step / max(total, 1))
        self.stream.write(f"\r{self.label} [{'#' * done}{'.' * (width - done)}] {step}/{total} "
                          f"feature {feature} 1-SCP {1 - value:.3e} "
                          f"{time.perf_counter() - self.t0:.1f}s")
        if step == total:
            self.stream.write("\n")
        self.stream.flush()


def _parse_eps(text, n=None):
    parts = [p for p in str(text).split(",") if p.strip()]
    try:
        vals = [float(p) for p in parts]
    except ValueError:
        raise SystemExit(f"error: --eps must be a number or a comma list of numbers; got {text!r}")
    if len(vals) == 1:
        return vals[0]
    if n is not None and len(vals) != n:
        raise SystemExit(f"error: --eps has {len(vals)} values but the data has {n} features")
    return np.array(vals)


def _split_data(data, fit_split, plan_split):
    """(fit rows, plan rows): train/test where the data has a split, else all/all."""
    if data.split is None:
        return data, data
    fit = data.subset(fit_split) if fit_split != "all" else data
    plan = data.subset(plan_split) if plan_split != "all" else data
    return fit, plan


def _fmt_r(r):
    return " ".join(str(2 * int(v) + 1) for v in r)


def run_plan(dataset, eps, budget_bits, method="auto", alpha=1.0, out=None, onnx_out=None,
             fit_split="train", plan_split="test", max_points=None, stream=None, quiet=False):
    """Fit, plan uniform vs greedy, print the table, optionally write artifacts.

    Returns a dict with the fitted model, the data, both plans and the export.
    """
    from edgecode import datasets
    from edgecode.naive_bayes import BinaryNaiveBayes
    from edgecode.redundancy import allocate_greedy, allocate_uniform, mean_scp

    out_stream = stream or sys.stdout

    def say(msg=""):
        if not quiet:
            print(msg, file=out_stream)

    data = datasets.load(dataset) if isinstance(dataset, str) else dataset
    fit_rows, plan_rows = _split_data(data, fit_split, plan_split)
    nb = BinaryNaiveBayes(alpha=alpha).fit(fit_rows.X, fit_rows.y)
    Xp = plan_rows.X if max_points is None else plan_rows.X[:max_points]
    margin, deltas = nb.decision_function(Xp), nb.flip_deltas(Xp)
    n = deltas.shape[1]
    eps_arr = eps if np.ndim(eps) else float(eps)
    say(f"plan on {data.name}: n = {n} features, t = {len(Xp)} planning points, "
        f"fit on {len(fit_rows.X)} rows (accuracy {nb.score(plan_rows.X, plan_rows.y):.3f} "
        f"on the planning split)")
    say(f"channel eps = {eps if np.ndim(eps) == 0 else list(np.round(eps, 4))}, "
        f"redundancy budget {budget_bits} bits ({budget_bits // 2} units)")
    t0 = time.perf_counter()
    none = mean_scp(margin, deltas, eps_arr, None, method)
    rows = [("none", 1 - none, np.zeros(n, int))]
    uniform = None
    if budget_bits >= 2 * n:
        ru = allocate_uniform(n, budget_bits)
        uniform = mean_scp(margin, deltas, eps_arr, ru, method)
        rows.append(("uniform", 1 - uniform, ru))
    plan = allocate_greedy(margin, deltas, eps_arr, budget_bits, method=method,
                           progress=None if quiet else _Progress("greedy plan"))
    rows.append(("greedy", 1 - plan.mean_scp, plan.repetitions))
    elapsed = time.perf_counter() - t0
    say(f"{'allocation':<10} {'1-SCP':>11}  bits per feature")
    for name, change, r in rows:
        say(f"{name:<10} {change:11.4e}  {_fmt_r(r)}")
    ref_name, ref = ("uniform", 1 - uniform) if uniform is not None else ("none", 1 - none)
    ratio = ref / (1 - plan.mean_scp) if plan.mean_scp < 1 else float("inf")
    say(f"ratio {ref_name}/greedy 1-SCP: {ratio:.2f}x   (SCP method {plan.method}, "
        f"{elapsed:.2f}s)")
    result = {"model": nb, "data": data, "plan_rows": plan_rows, "X_plan": Xp, "plan": plan,
              "uniform_scp": uniform, "none_scp": none, "ratio": ratio}
    if out is not None or onnx_out is not None:
        from export.naive_bayes import export_protected_nb
        meta = {"dataset": data.name, "planned_eps": json.dumps(np.atleast_1d(eps).tolist()),
                "planned_mean_scp": repr(plan.mean_scp), "planning_points": str(len(Xp)),
                "scp_method": plan.method, "budget_bits": str(budget_bits)}
        exp = export_protected_nb(nb, plan.repetitions, container_path=out, onnx_path=onnx_out,
                                  X_check=data.X, meta=meta)
        result["export"] = exp
        if out is not None:
            say(f"wrote container {out} ({len(exp.container)} bytes)")
        if onnx_out is not None:
            say(f"wrote ONNX {onnx_out}")
        say("size: " + exp.report())
    return result


def run_simulate(artifact, eps, trials, dataset="house_votes", split="test", seed=0,
                 confidence=0.99, max_points=None, stream=None):
    """Monte Carlo campaign on the device runtime next to the SCP predicted for it."""
    from edgecode import datasets
    from edgecode.redundancy import repetition_error
    from edgecode.scp import scp_bounds, scp_exact
    from firmware_sim.artifact import read_container
    from firmware_sim.naive_bayes import load_protected_nb, simulate
    from edgecode._stats import wilson_interval

    out = stream or sys.stdout
    container = read_container(artifact) if not isinstance(artifact, bytes) else \
        read_container(artifact)
    device = load_protected_nb(container)
    data = datasets.load(dataset) if isinstance(dataset, str) else dataset
    rows = data.subset(split) if (data.split is not None and split != "all") else data
    X = rows.X if max_points is None else rows.X[:max_points]
    if X.shape[1] != device.n_features:
        raise SystemExit(f"error: the artifact expects {device.n_features} features but "
                         f"{data.name} has {X.shape[1]}")
    eps_v = eps if np.ndim(eps) else float(eps)
    t0 = time.perf_counter()
    same, clean = simulate(device, X, eps_v, trials, random_state=seed)
    sim_s = time.perf_counter() - t0
    # pooled over points: points with different rates only shrink the variance,
    # so the Wilson interval of the pooled count is conservative
    total = X.shape[0] * trials
    p = int(np.sum(same)) / total
    lo_ci, hi_ci = (float(v) for v in wilson_interval(int(np.sum(same)), total, confidence))
    # the device's own classifier as a linear model: predicted SCP of what it runs
    scale = 2.0 ** device.scale_shift
    acc = device.decision(X).astype(np.float64)
    w = device.weights.astype(np.float64)
    margin = acc / scale
    deltas = (1.0 - 2.0 * X) * w / scale
    eff = repetition_error(np.broadcast_to(eps_v, (device.n_features,)), device.repetitions)
    if device.n_features <= 24:
        pred = scp_exact(margin, deltas, eff)
        pred_txt = f"{pred.mean():.6f} (exact)"
    else:
        lo, hi = scp_bounds(margin, deltas, eff)
        pred = (lo + hi) / 2
        pred_txt = f"in [{lo.mean():.6f}, {hi.mean():.6f}] (certified bounds)"
    inside = lo_ci <= pred.mean() <= hi_ci
    print(f"simulate {artifact if not isinstance(artifact, bytes) else '<bytes>'} on "
          f"{data.name} ({len(X)} points x {trials} trials, eps = {eps}, seed {seed}, "
          f"{device.total_bits} bits per inference)", file=out)
    print(f"simulated same-classification rate: {p:.6f}  "
          f"{100 * confidence:g}% CI [{lo_ci:.6f}, {hi_ci:.6f}]  ({sim_s:.2f}s)",
          file=out)
    print(f"predicted mean SCP of the device model: {pred_txt}  -> "
          f"{'inside' if inside else 'OUTSIDE'} the interval", file=out)
    planned = container.meta.get("planned_mean_scp")
    if planned is not None:
        print(f"planner's prediction stored in the artifact: {float(planned):.6f} at eps "
              f"{container.meta.get('planned_eps')} on {container.meta.get('planning_points')} "
              f"planning points", file=out)
    return {"rate": p, "ci": (lo_ci, hi_ci), "predicted": float(pred.mean()),
            "inside": inside, "same": same, "clean": clean}


def run_demo_stage(out_dir, trials=2000, stream=None):
    """Demo stage: plan -> export -> device -> simulate on house votes, then NLTCS."""
    import onnxruntime as ort
    from firmware_sim.channel import bsc
    from firmware_sim.naive_bayes import load_protected_nb

    out = stream or sys.stdout
    out_dir = Path(out_dir)
    print("== 1. plan: house votes, naive Bayes, eps = 0.2, 32 redundancy bits ==", file=out)
    res = run_plan("house_votes", 0.2, 32, out=out_dir / "house_votes.edgc",
                   onnx_out=out_dir / "house_votes.onnx", stream=out)
    print("\n== 2. device: load the container, compare with onnxruntime ==", file=out)
    device = load_protected_nb(out_dir / "house_votes.edgc")
    X = res["data"].X
    bits = device.transmit(X)
    noisy = bsc(bits, 0.2, random_state=0)
    sess = ort.InferenceSession(str(out_dir / "house_votes.onnx"),
                                providers=["CPUExecutionProvider"])
    agree = all(np.array_equal(sess.run(["label"], {"bits": b})[0], device.predict_bits(b))
                for b in (bits, noisy))
    float_labels = res["model"].decision_function(X) > 0
    print(f"device labels == float model labels on all {len(X)} clean inputs: "
          f"{np.array_equal(device.predict(X).astype(bool), float_labels)}", file=out)
    print(f"onnxruntime labels == device labels on clean and noisy received bits: {agree}",
          file=out)
    r = device.resources()
    print(f"resources: {r}", file=out)
    print(f"\n== 3. simulate: {trials} noisy transmissions per point ==", file=out)
    sim = run_simulate(out_dir / "house_votes.edgc", 0.2, trials, dataset="house_votes",
                       stream=out)
    print("\n== 4. NLTCS: 15 features, 3236 test points, 15 redundancy units ==", file=out)
    run_plan("nltcs", 0.2, 30, stream=out)
    return {"plan": res, "simulate": sim, "onnx_agrees": agree}


def register(sub):
    """Add the ``plan`` and ``simulate`` sub-commands to ``sub`` (argparse subparsers)."""
    pl = sub.add_parser("plan", help="fit naive Bayes and plan a repetition-code allocation")
    pl.add_argument("data", help="bundled dataset name (house_votes, nltcs) or a CSV path "
                    "(binary 0/1 columns and a 'class' column, optional 'split')")
    pl.add_argument("--eps", required=True, help="channel flip probability: one number or "
                    "a comma list, one per feature")
    g = pl.add_mutually_exclusive_group(required=True)
    g.add_argument("--budget", type=int, help="redundancy bits to spend (even)")
    g.add_argument("--R", type=int, help="budget as 2 n R bits (R units per feature on average)")
    pl.add_argument("--method", default="auto", choices=["auto", "exact", "approx", "bounds"])
    pl.add_argument("--alpha", type=float, default=1.0, help="Laplace smoothing")
    pl.add_argument("--fit-split", default="train", help="rows to fit on when the data has "
                    "a split (train/valid/test/all)")
    pl.add_argument("--plan-split", default="test", help="rows to plan on when the data has "
                    "a split")
    pl.add_argument("--max-points", type=int, help="plan on at most this many points")
    pl.add_argument("--out", help="write the device container here")
    pl.add_argument("--onnx", help="write the ONNX graph here")
    pl.set_defaults(func=_cmd_plan)

    s = sub.add_parser("simulate", help="Monte Carlo campaign of a protected NB artifact")
    s.add_argument("artifact", help="container written by 'edgecode plan --out'")
    s.add_argument("--eps", required=True, help="channel flip probability (one or per feature)")
    s.add_argument("--trials", type=int, default=10000)
    s.add_argument("--data", default=None, help="inputs: bundled name or CSV (default: the "
                   "dataset recorded in the artifact)")
    s.add_argument("--split", default="test", help="rows to use when the data has a split")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--confidence", type=float, default=0.99)
    s.add_argument("--max-points", type=int)
    s.set_defaults(func=_cmd_simulate)


def _cmd_plan(args):
    from edgecode import datasets
    data = datasets.load(args.data)
    n = data.X.shape[1]
    budget = args.budget if args.budget is not None else 2 * n * args.R
    run_plan(data, _parse_eps(args.eps, n), budget, method=args.method, alpha=args.alpha,
             out=args.out, onnx_out=args.onnx, fit_split=args.fit_split,
             plan_split=args.plan_split, max_points=args.max_points)


def _cmd_simulate(args):
    from firmware_sim.artifact import read_container
    data = args.data
    if data is None:
        data = read_container(args.artifact).meta.get("dataset")
        if data is None:
            raise SystemExit("error: the artifact records no dataset; pass --data")
    if args.trials <= 0:
        raise SystemExit("error: --trials must be positive")
    run_simulate(args.artifact, _parse_eps(args.eps), args.trials, dataset=data,
                 split=args.split, seed=args.seed, confidence=args.confidence,
                 max_points=args.max_points)
