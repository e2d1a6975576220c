"""``edgecode forest``: train a random forest (or extra trees, or one tree), export it,
run it on the device simulator.

Example::

    edgecode forest glass.csv --n-trees 15 --max-depth 4 --out glass.edgc --onnx glass.onnx
    edgecode forest ecoli.csv --kind tree --leaf class --out ecoli.edgc
    edgecode simulate glass.edgc --eps 0.05          # noisy tree outputs
    edgecode firmware glass.edgc --out fw --check    # the C runtime, frame for frame
"""

import sys

from ._args import UsageError, open_unit, positive_int

__all__ = ["run_forest", "register"]

KINDS = ("rf", "extra", "tree")
BUNDLED = ("digits", "iris", "wine", "breast_cancer")


def run_forest(data, *, kind="rf", n_trees=None, max_depth=None, min_samples_leaf=1,
               leaf="proba", leaf_bits=16, test_size=0.3, random_state=0,
               eps=(0.0, 0.05, 0.1, 0.2), trials=5, out=None, onnx_out=None, stream=None,
               quiet=False, data_options=None, progress_stream=None):
    """Train, report accuracy, export (container and ONNX), simulate noisy tree outputs.

    ``data``: a bundled set or CSV path (read by :func:`export.data.load_table`
    with ``data_options``: ``label``, ``ignore``, ``positive``), or a
    :class:`export.data.Table`. Progress (trees grown) goes to
    ``progress_stream`` (default stderr) unless ``quiet``; the outputs are
    written under temporary names and renamed when everything succeeded
    (Ctrl-C leaves nothing). Returns a dict (``model``, ``accuracy``,
    ``export``, ``device_accuracy``, ``simulation``).
    """
    import numpy as np

    from export.atomic import AtomicOutputs
    from export.data import Table, dataset_reference, load_table, train_test
    from export.forest import KINDS as ESTIMATOR_OF, export_forest, fit_forest
    from export.progress import Progress

    stream = stream or sys.stdout

    def say(msg=""):
        if not quiet:
            print(msg, file=stream, flush=True)

    if n_trees is None:
        n_trees = 1 if kind == "tree" else 100
    elif kind == "tree" and n_trees != 1:
        raise UsageError(f"--kind tree fits one decision tree; got --n-trees {n_trees}")
    table = data if isinstance(data, Table) else load_table(data, **(data_options or {}))
    parts = train_test(table, test_size=test_size, seed=random_state)
    Xtr, ytr, Xte, yte = parts.X_train, parts.y_train, parts.X_test, parts.y_test
    with Progress("forest", stream=progress_stream, enabled=not quiet) as progress:
        model = fit_forest(Xtr, ytr, kind=kind, n_trees=n_trees, max_depth=max_depth,
                           min_samples_leaf=min_samples_leaf, random_state=random_state,
                           progress=progress)
    acc = float(model.score(Xte, yte))
    say(f"forest on {table.name}: {len(Xtr)} train / {len(Xte)} test rows ({parts.how}), "
        f"{len(model.classes_)} classes, {table.X.shape[1]} features")
    depth = max(e.get_depth() for e in getattr(model, "estimators_", [model]))
    say(f"{ESTIMATOR_OF[kind]}: {n_trees} tree{'s' * (n_trees > 1)}, depth <= {depth}; "
        f"test accuracy {acc:.4f}")
    src, opts = dataset_reference(table.source or table.name, table.options)
    meta = {"dataset": src, **({"dataset_options": opts} if opts else {})}
    with AtomicOutputs([out, onnx_out]) as tmp:       # nothing is written unless all succeeds
        exp = export_forest(model, Xte, container_path=tmp[out], onnx_path=tmp[onnx_out],
                            leaf=leaf, leaf_bits=leaf_bits, meta=meta)
        dev = exp.device
        y_idx = np.searchsorted(model.classes_, yte)
        dev_acc = float(np.mean(dev.labels(dev.encode(Xte)) == y_idx))
        rng = np.random.default_rng(random_state)
        sim = [dev.simulate(Xte, float(e), trials, random_state=rng, y=y_idx) for e in eps]
    d = exp.details
    bits = f", {d['leaf_bits']} bits" if d["leaf_bits"] else ""
    say(f"device ({leaf} leaves{bits}): "
        f"accuracy {dev_acc:.4f}; {d['n_nodes']} decision nodes of "
        f"{d['bytes_per_node']:.0f} B, {d['n_leaves']} leaves; " + exp.report())
    say(f"labels that differ from the float model: {exp.label_mismatches} of "
        f"{exp.checked_inputs} test rows ({d['near_threshold']} with a feature within one "
        f"quantizer step of a threshold, {d['vote_differences']} where the integer vote "
        "differs)")
    warning = exp.fit_warning()
    if warning:
        say(warning + " (fewer trees, a smaller --max-depth, or --leaf class)")
    if out is not None:
        say(f"wrote container {out} ({len(exp.container)} bytes)")
    if onnx_out is not None:
        say(f"wrote ONNX {onnx_out}")
    say("accuracy under noisy tree outputs (eps per tree: its leaf replaced by a random "
        "other one, the intermediate site):")
    say("eps;accuracy;same_rate")
    for e, r in zip(eps, sim):
        say(f"{float(e):g};{r.accuracy:.4f};{r.mean_same_rate:.4f}")
    return {"model": model, "accuracy": acc, "export": exp, "device_accuracy": dev_acc,
            "simulation": sim, "X_test": Xte, "y_test": yte}


def register(sub):
    """Add the ``forest`` sub-command to ``sub`` (argparse subparsers)."""
    p = sub.add_parser("forest", help="train a random forest / extra trees / a decision tree, "
                       "export it, simulate noisy trees")
    p.add_argument("data", help=f"bundled set ({', '.join(BUNDLED)}) or a CSV path (numeric "
                   "features, a label column, optional 'split' train/test)")
    from export.data import add_data_options
    add_data_options(p)
    p.add_argument("--kind", default="rf", choices=KINDS,
                   help="rf: RandomForestClassifier; extra: ExtraTreesClassifier; tree: one "
                   "DecisionTreeClassifier")
    p.add_argument("--n-trees", type=positive_int, default=None,
                   help="trees of the forest (default 100; 1 for --kind tree)")
    p.add_argument("--max-depth", type=positive_int, default=None,
                   help="depth limit of every tree (default: none, at most 64 exports; the "
                   "command says when the model is too large for the built-in device "
                   "profiles)")
    p.add_argument("--min-samples-leaf", type=positive_int, default=1,
                   help="fewest training rows in a leaf")
    p.add_argument("--leaf", default="proba", choices=("proba", "class"),
                   help="proba: per-class probabilities in a shared leaf table (the soft vote "
                   "of predict); class: the leaf's majority class (a hard vote, no table, the "
                   "smallest image)")
    p.add_argument("--leaf-bits", type=int, default=16, choices=(8, 16),
                   help="bits per stored probability (--leaf proba)")
    p.add_argument("--test-size", type=open_unit, default=0.3,
                   help="fraction of rows held out (when the data has no split)")
    p.add_argument("--random-state", "--seed", dest="random_state", type=int, default=0,
                   help="seed of the split and the trees")
    p.add_argument("--eps", default="0,0.05,0.1,0.2",
                   help="comma list of tree-output corruption probabilities")
    p.add_argument("--trials", type=positive_int, default=5, help="noisy passes per eps")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    p.add_argument("--out", help="write the device container here (.edgc)")
    p.add_argument("--onnx", help="write the ONNX graph here (.onnx)")
    p.set_defaults(func=_cmd_forest)


def _cmd_forest(args):
    try:
        eps = [float(v) for v in args.eps.split(",") if v.strip()]
    except ValueError:
        raise UsageError(f"--eps must be a comma list of numbers; got {args.eps!r}") from None
    for e in eps:
        if not 0.0 <= e <= 1.0:
            raise UsageError(f"--eps values must be probabilities in [0, 1]; got {e:g}")
    if args.max_depth is not None and args.max_depth > 64:
        raise UsageError(f"--max-depth {args.max_depth}: the forest format stores at most 64 "
                         "levels")
    from export.data import data_options
    run_forest(args.data, kind=args.kind, n_trees=args.n_trees, max_depth=args.max_depth,
               min_samples_leaf=args.min_samples_leaf, leaf=args.leaf,
               leaf_bits=args.leaf_bits, test_size=args.test_size,
               random_state=args.random_state, eps=eps, trials=args.trials, out=args.out,
               onnx_out=args.onnx, quiet=args.quiet, data_options=data_options(args))
