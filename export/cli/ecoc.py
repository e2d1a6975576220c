"""``edgecode ecoc``: train an ECOC ensemble, report, export, run it on the device simulator."""

import sys
import time
from pathlib import Path

import numpy as np

__all__ = ["run_ecoc", "run_demo_stage", "register"]

from ._args import UsageError, open_unit, positive_int

LEARNERS = ("tree", "logistic", "linear_svm")
#: Designs whose alphabet is chosen by N (every other design is binary or ternary).
NARY_DESIGNS = ("nary", "nary_random")
BUNDLED = ("digits", "iris", "wine", "breast_cancer")


def _learner(name, seed, max_depth=None, min_samples_leaf=1):
    from sklearn.linear_model import LogisticRegression
    from sklearn.svm import LinearSVC
    from sklearn.tree import DecisionTreeClassifier
    if name == "tree":
        return DecisionTreeClassifier(random_state=seed, max_depth=max_depth,
                                      min_samples_leaf=min_samples_leaf)
    if max_depth is not None or min_samples_leaf != 1:
        raise UsageError(f"--max-depth and --min-samples-leaf apply to --learner tree; got "
                         f"--learner {name}")
    if name == "logistic":
        return LogisticRegression(max_iter=2000)
    if name == "linear_svm":
        return LinearSVC(random_state=seed)
    raise ValueError(f"learner must be one of {LEARNERS}; got {name!r}")


def run_ecoc(data, *, code="nary", N=3, n_columns=None, learner="tree", decoding="hamming",
             test_size=0.3, eps=(0.0, 0.05, 0.1, 0.2), trials=5, out=None, onnx_out=None,
             seed=0, stream=None, quiet=False, max_depth=None, min_samples_leaf=1,
             data_options=None, progress=False, accumulator="int64"):
    """Train, report accuracy and code distances, export, compare runtimes, simulate noise.

    ``data``: a bundled set or CSV path (read by :func:`export.data.load_table`
    with ``data_options``: ``label``, ``ignore``, ``positive``), or a
    :class:`export.data.Table`. ``progress``: a line per trained learner on
    stderr (with the elapsed and remaining time).
    """
    from edgecode.ecoc import row_distance
    from edgecode.ecoc.classifier import ECOCClassifier
    from export.data import Table, load_table, train_test
    from export.ecoc import export_ecoc

    stream = stream or sys.stdout

    def say(msg=""):
        if not quiet:
            print(msg, file=stream, flush=True)

    table = data if isinstance(data, Table) else load_table(data, **(data_options or {}))
    parts = train_test(table, test_size=test_size, seed=seed)
    Xtr, ytr, Xte, yte, how = parts.X_train, parts.y_train, parts.X_test, parts.y_test, parts.how
    X, label = table.X, table.name
    est = _learner(learner, seed, max_depth, min_samples_leaf)
    t0 = time.perf_counter()
    clf = ECOCClassifier(est, code=code, N=N, n_columns=n_columns, decoding=decoding,
                         random_state=seed, verbose=10 if progress else 0).fit(Xtr, ytr)
    fit_s = time.perf_counter() - t0
    acc = clf.score(Xte, yte)
    c, m = clf.code_.shape
    say(f"ecoc on {label}: {len(Xtr)} train / {len(Xte)} test rows ({how}), {c} classes, "
        f"{X.shape[1]} features")
    say(f"code {code!r} N={clf.n_symbols_}: {c} x {m}, row distance d_r = "
        f"{row_distance(clf.code_):g}; learner {learner}, decoding {decoding}, "
        f"fast path {clf.fast_path_}; fit {fit_s:.2f}s")
    say(f"test accuracy {acc:.4f}")
    result = {"model": clf, "accuracy": acc, "X_test": Xte, "y_test": yte}
    if clf.fast_path_ == "generic":
        say("learners are neither linear nor trees: no device export")
        return result
    if decoding != "hamming":
        say(f"decoding {decoding}: not exported (the device decodes hard learner outputs by "
            "Hamming distance; --decoding hamming exports)")
        return result
    from export.atomic import AtomicOutputs
    from export.data import dataset_reference
    src, opts = dataset_reference(table.source or label, table.options)
    meta = {"dataset": src, "code": str(code), **({"dataset_options": opts} if opts else {})}
    with AtomicOutputs([out, onnx_out]) as tmp:      # nothing is written unless all succeeds
        exp = export_ecoc(clf, Xtr, X_check=Xte, container_path=tmp[out],
                          onnx_path=tmp[onnx_out], meta=meta, accumulator=accumulator)
        result["export"] = exp
        dev = exp.device
        q = dev.quantize(Xte)
        y_idx = np.searchsorted(clf.classes_, yte)
        dev_acc = float(np.mean(dev.predict(q) == y_idx))
        say(f"device (fixed point): accuracy {dev_acc:.4f}; " + exp.report())
        warning = exp.fit_warning()
        if warning:
            say(warning + (" (limit the trees with --max-depth)" if learner == "tree" else ""))
        rng = np.random.default_rng(seed)
        sim = [dev.simulate(Xte, float(e), trials, random_state=rng, y=y_idx) for e in eps]
    if out is not None:
        say(f"wrote container {out} ({len(exp.container)} bytes)")
    if onnx_out is not None:
        say(f"wrote ONNX {onnx_out}")
    say("accuracy under noisy learner outputs (eps per learner, the intermediate site):")
    say("eps;accuracy;same_rate")
    for e, r in zip(eps, sim):
        say(f"{float(e):g};{r.accuracy:.4f};{r.mean_same_rate:.4f}")
    result.update(device_accuracy=dev_acc, simulation=sim)
    return result


def run_demo_stage(out_dir, trials=2000, stream=None):
    """Demo stage: ECOC on scikit-learn's digits, trees and a linear SVM, N = 3 and binary."""
    import onnxruntime as ort

    out = stream or sys.stdout
    out_dir = Path(out_dir)
    print("\n== 3/6 ECOC ensembles: digits, N-ary (N = 3) decision trees and a binary linear "
          "SVM code ==",
          file=out)
    results = {}
    from export.data import Table, load_table

    digits = load_table("digits")
    scaled = Table(digits.X / 16.0, digits.y, None, digits.feature_names, "sklearn digits / 16")
    n_trials = max(1, int(trials) // 400)
    for tag, learner, code, N in (("tree_nary3", "tree", "nary", 3),
                                  ("svm_binary", "linear_svm", "dense_random", 2)):
        res = run_ecoc(scaled, code=code, N=N,
                       n_columns=15, learner=learner, trials=n_trials,
                       out=out_dir / f"digits_{tag}.edgc", onnx_out=out_dir / f"digits_{tag}.onnx",
                       stream=out)
        dev = res["export"].device
        q = dev.quantize(res["X_test"])
        sess = ort.InferenceSession(str(out_dir / f"digits_{tag}.onnx"),
                                    providers=["CPUExecutionProvider"])
        onnx_labels = sess.run(["label"], {"X": res["X_test"].astype(np.float32)})[0]
        agree = bool(np.array_equal(onnx_labels, res["model"].classes_[dev.predict(q)]))
        print(f"onnxruntime labels (from the raw features) == device labels on all {len(q)} "
              f"test inputs: {agree}", file=out)
        res["onnx_agrees"] = agree
        # parameter upsets reach the learners: each trial re-loads a faulty image
        # and re-runs the whole device (firmware_sim's device contract)
        from firmware_sim.campaign import run_campaign
        from firmware_sim.faults import ParameterUpset
        arrays = ["lin_weights"] if dev.learner_kind == "linear" else ["node_threshold"]
        up = run_campaign(dev, res["X_test"], ParameterUpset(count=4, arrays=arrays),
                          n_trials=max(20, int(trials) // 40), random_state=0).points[0]
        print(f"4 upset bits in {arrays[0]} per image ({up.ci_trials} images, every test "
              f"input): same label {up.same_rate:.4f} [{up.same_ci[0]:.4f}, "
              f"{up.same_ci[1]:.4f}], refused {up.refused}", file=out)
        res["upsets"] = up
        results[tag] = res
    return results


def register(sub):
    """Add the ``ecoc`` sub-command to ``sub`` (argparse subparsers)."""
    from ._names import DESIGNS

    p = sub.add_parser("ecoc", help="train an ECOC ensemble, export it, simulate noisy learners")
    p.add_argument("data", help=f"bundled set ({', '.join(BUNDLED)}) or a CSV path (numeric "
                   "features, a label column, optional 'split' train/test)")
    from export.data import add_data_options
    add_data_options(p)
    p.add_argument("--code", default="nary", choices=list(DESIGNS), metavar="DESIGN",
                   help=f"coding design: {', '.join(DESIGNS)}")
    p.add_argument("--N", type=positive_int, default=None,
                   help=f"alphabet size (default: 3 for {' and '.join(NARY_DESIGNS)}, "
                   "2 for every other design, which is binary or ternary)")
    p.add_argument("--n-columns", "--columns", dest="n_columns", type=positive_int,
                   default=None, help="code length (learners); default depends on the design")
    p.add_argument("--learner", default="tree", choices=LEARNERS, help="base learner of "
                   "every column")
    p.add_argument("--decoding", default="hamming", choices=["hamming", "loss", "euclidean"],
                   help="how the classifier decodes; the device (and so --out / --onnx) "
                   "decodes by Hamming distance only")
    p.add_argument("--max-depth", type=positive_int, default=None,
                   help="depth limit of every tree learner (default: none; the size of an "
                   "unlimited tree grows with the data: the command says when the model is "
                   "too large for the built-in device profiles)")
    p.add_argument("--min-samples-leaf", type=positive_int, default=1,
                   help="fewest training rows in a tree leaf")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    p.add_argument("--test-size", type=open_unit, default=0.3,
                   help="fraction of rows held out (when the data has no split)")
    p.add_argument("--eps", default="0,0.05,0.1,0.2",
                   help="comma list of learner-output corruption probabilities")
    p.add_argument("--trials", type=positive_int, default=5, help="noisy passes per eps")
    p.add_argument("--seed", type=int, default=0, help="seed of the split, the code and the "
                   "learners")
    p.add_argument("--out", help="write the device container here (.edgc)")
    p.add_argument("--onnx", help="write the ONNX graph here (.onnx)")
    p.add_argument("--accumulator", default="int64", choices=["int64", "auto", "int32"],
                   help="linear learners: scale the weights for 64-bit score sums (31-bit "
                        "weights) or for 32-bit ones (16-bit weights: the firmware's narrow "
                        "arithmetic, about 4x fewer cycles on AVR; coarser weights, so the "
                        "labels may differ; default int64, the float model's outputs); auto: "
                        "int32 when it changes no learner output on the training rows, else "
                        "int64. The firmware "
                        "compiles in only the arithmetic the image needs")
    p.set_defaults(func=_cmd_ecoc)


def _cmd_ecoc(args):
    try:
        eps = [float(v) for v in args.eps.split(",") if v.strip()]
    except ValueError:
        raise UsageError(f"--eps must be a comma list of numbers; got {args.eps!r}") from None
    for e in eps:
        if not 0.0 <= e <= 1.0:
            raise UsageError(f"--eps values must be probabilities in [0, 1]; got {e:g}")
    if args.decoding != "hamming" and (args.out or args.onnx):
        raise UsageError(f"--decoding {args.decoding} cannot be exported: the device decodes "
                         "hard learner outputs by Hamming distance; use --decoding hamming "
                         "with --out / --onnx")
    N = args.N if args.N is not None else (3 if args.code in NARY_DESIGNS else 2)
    from export.data import data_options
    run_ecoc(args.data, code=args.code, N=N, n_columns=args.n_columns,
             learner=args.learner, decoding=args.decoding, test_size=args.test_size, eps=eps,
             trials=args.trials, out=args.out, onnx_out=args.onnx, seed=args.seed,
             max_depth=args.max_depth, min_samples_leaf=args.min_samples_leaf,
             data_options=data_options(args), progress=not args.quiet,
             accumulator=args.accumulator)
