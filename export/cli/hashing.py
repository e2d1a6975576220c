"""``edgecode hash``: binary codes (SSBC or a baseline) on the command line, and the
SSBC stage of ``edgecode demo``."""

import sys
import time
from pathlib import Path

import numpy as np

from ._args import UsageError, open_unit, positive_int

__all__ = ["run_hash", "run_demo_stage", "register"]

METHODS = ("ssbc", "ssbc-center", "ssbc-itq", "lsh", "pca-sign", "itq", "sh")


def _make(method, bits, anchors, sketch, sigma, sigma_scale, mode, seed):
    from edgecode.hashing import ITQ, SSBC, PCASign, SignRandomProjection, SpectralHashing
    if method.startswith("ssbc"):
        return SSBC(bits, anchors, sketch, sigma=sigma, sigma_scale=sigma_scale, mode=mode,
                    center=method == "ssbc-center", rotation="itq" if method == "ssbc-itq"
                    else None, random_state=seed)
    if method == "lsh":
        return SignRandomProjection(bits, random_state=seed)
    if method == "pca-sign":
        return PCASign(bits)
    if method == "itq":
        return ITQ(bits, random_state=seed)
    if method == "sh":
        return SpectralHashing(bits, random_state=seed)
    raise ValueError(f"method must be one of {METHODS}; got {method!r}")


def _knn_accuracy(db_bits, y_db, q_bits, y_q, k):
    from edgecode.hashing import HammingIndex
    classes, yi = np.unique(y_db, return_inverse=True)
    idx = HammingIndex(db_bits.shape[1])
    idx.add(db_bits)
    _, ind = idx.search(q_bits, k)
    pred = np.array([np.bincount(yi[r], minlength=len(classes)).argmax() for r in ind])
    return float((classes[pred] == y_q).mean())


def run_hash(data, method="ssbc-center", bits=32, anchors=256, sketch=64, sigma="auto",
             sigma_scale=1.0, mode="streaming", knn=5, R=100, out=None, onnx_out=None, seed=0,
             stream=None, quiet=False, test_size=0.2, data_options=None):
    """Fit codes on the database rows, report retrieval metrics on the queries,
    optionally export (SSBC only).  Database/queries: the ``train``/``test``
    split when the data has one, else ``test_size`` of the rows held out
    (stratified by label when there is one, seeded): the rules of every
    command (:func:`export.data.train_test`).

    ``data``: a bundled set or CSV path (:func:`export.data.load_table`
    with ``data_options``; the label column is optional here) or a
    :class:`export.data.Table`.

    Returns a dict with the model, metrics, the query rows and the export (if any).
    """
    from edgecode.hashing import SignRandomProjection, retrieval_metrics, true_neighbors
    from export.atomic import AtomicOutputs
    from export.data import Table, dataset_reference, load_table, train_test

    say = (lambda *a: None) if quiet else (lambda *a: print(*a, file=stream or sys.stdout,
                                                            flush=True))
    table = data if isinstance(data, Table) else \
        load_table(data, require_label=False, **(data_options or {}))
    parts = train_test(table, test_size=test_size, seed=seed)
    Xdb, Xq, y_db, y_q = parts.X_train, parts.X_test, parts.y_train, parts.y_test
    y = table.y
    t0 = time.perf_counter()
    model = _make(method, bits, anchors, sketch, sigma, sigma_scale, mode, seed)
    if mode == "online" and method.startswith("ssbc"):
        cdb = model.fit_transform(Xdb)
    else:
        cdb = model.fit(Xdb).transform(Xdb)
    cq = model.transform(Xq)
    fit_s = time.perf_counter() - t0
    nn = true_neighbors(Xdb, Xq, 10)
    met = retrieval_metrics(cdb, cq, nn, bits, R=R)
    lsh = SignRandomProjection(bits, random_state=seed).fit(Xdb)
    lsh_ap = float(retrieval_metrics(lsh.transform(Xdb), lsh.transform(Xq), nn, bits)["ap"].mean())
    res = {"model": model, "recall": float(met["recall"].mean()),
           "precision": float(met["precision"].mean()), "map": float(met["ap"].mean()),
           "lsh_map": lsh_ap, "n_db": len(Xdb), "n_query": len(Xq)}
    say(f"{method} {bits} bits on {len(Xdb)} database / {len(Xq)} query points "
        f"(fit + code {fit_s:.2f}s)")
    if method.startswith("ssbc"):
        say(f"  anchors m={model.anchors_.shape[0]}, sketch ell={model.sketch_size}, "
            f"sigma={model.sigma_:.4g}, mode={model.mode}")
    say(f"  recall@{R} of the true 10-NN {res['recall']:.4f}, precision@{R} "
        f"{res['precision']:.4f}, mAP {res['map']:.4f} (LSH mAP {lsh_ap:.4f})")
    res.update(X_query=Xq, y_query=y_q, split=parts.how)
    if y is not None:
        res["knn_accuracy"] = _knn_accuracy(cdb, y_db, cq, y_q, knn)
        say(f"  {knn}-NN classification accuracy from the codes: {res['knn_accuracy']:.4f}")
    if out is not None or onnx_out is not None:
        if not method.startswith("ssbc"):
            raise ValueError(f"export is for SSBC models; method {method!r} cannot be exported")
        from export.ssbc import export_ssbc
        from firmware_sim.ssbc import load_ssbc
        src, opts = dataset_reference(table.source or table.name, table.options)
        meta = {"dataset": src or "array", **({"dataset_options": opts} if opts else {})}
        with AtomicOutputs([out, onnx_out]) as tmp:
            ex = export_ssbc(model, container_path=tmp[out], onnx_path=tmp[onnx_out],
                             X_table=Xdb if y is not None else None,
                             y_table=y_db if y is not None else None, knn_k=knn, X_check=Xq,
                             meta=meta)
        res["export"] = ex
        say(f"  export: {ex.report()}")
        warning = ex.fit_warning()
        if warning:
            say("  " + warning + " (fewer --anchors or --bits, or a smaller table)")
        if y is not None:
            dev = load_ssbc(ex.container)
            acc = float((ex.classes[dev.predict(Xq)] == y_q).mean())
            res["device_knn_accuracy"] = acc
            say(f"  device (fixed-point) {knn}-NN accuracy: {acc:.4f}")
        for p in (out, onnx_out):
            if p is not None:
                say(f"  wrote {p}")
    return res


def run_demo_stage(out_dir, trials=2000, stream=None):
    """Demo stage: SSBC on scikit-learn's digits -> container + ONNX -> device."""
    import onnxruntime as ort
    from firmware_sim.ssbc import load_ssbc
    out = stream or sys.stdout
    out_dir = Path(out_dir)
    t0 = time.perf_counter()
    print("\n== 4/6 SSBC: streaming spectral binary codes on the 8x8 digits (1437 database, "
          "360 queries) ==", file=out)
    res = run_hash("digits", method="ssbc-center", bits=32, anchors=256, sketch=64,
                   out=out_dir / "digits_ssbc.edgc", onnx_out=out_dir / "digits_ssbc.onnx",
                   stream=out)
    Xq, yq = res["X_query"], res["y_query"]
    dev = load_ssbc(out_dir / "digits_ssbc.edgc")
    sess = ort.InferenceSession(str(out_dir / "digits_ssbc.onnx"),
                                providers=["CPUExecutionProvider"])
    label, bits = sess.run(["label", "bits"], {"X": Xq.astype(np.float32)})
    classes = res["export"].classes
    agree = bool(np.array_equal(bits, dev.bits(Xq))
                 and np.array_equal(label, classes[dev.predict(Xq)]))
    print(f"onnxruntime bits and labels == device runtime's on all {len(Xq)} queries: {agree}",
          file=out)
    reps = max(1, min(int(trials) // 200, 10))
    for eps in (0.01, 0.05, 0.1):
        accs = [float((classes[dev.predict_noisy(Xq, eps, eps, random_state=r)] == yq).mean())
                for r in range(reps)]
        print(f"bit flips eps={eps} on computed and stored bits: device k-NN accuracy "
              f"{np.mean(accs):.4f} (mean of {reps} channel draws)", file=out)
    print(f"SSBC stage took {time.perf_counter() - t0:.1f}s", file=out)
    return {"map": res["map"], "lsh_map": res["lsh_map"], "onnx_agrees": agree,
            "bit_agreement": res["export"].bit_agreement,
            "device_knn_accuracy": res.get("device_knn_accuracy")}


def register(sub):
    """Add the ``hash`` sub-command to ``sub`` (argparse subparsers)."""
    p = sub.add_parser("hash", help="binary codes (SSBC or a baseline): retrieval metrics, "
                       "export")
    p.add_argument("data", help="a bundled set (digits, iris, wine, breast_cancer) or a CSV "
                   "path (numeric features, an optional label column and 'split' train/test "
                   "columns)")
    from export.data import add_data_options
    add_data_options(p, positive=False, label_help="label column of a CSV, optional here "
                     "(default: 'class' if there is one; without labels no k-NN accuracy)")
    p.add_argument("--test-size", type=open_unit, default=0.2,
                   help="fraction of rows held out as queries (when the data has no split)")
    p.add_argument("--method", default="ssbc-center", choices=METHODS,
                   help="ssbc (streaming spectral binary codes), ssbc-center (on centred "
                   "data), ssbc-itq (with an ITQ rotation), or a baseline: lsh (sign random "
                   "projections), pca-sign, itq, sh (spectral hashing, Weiss et al. 2008); only SSBC "
                   "exports")
    p.add_argument("--bits", type=positive_int, default=32, help="code length in bits")
    p.add_argument("--anchors", type=positive_int, default=256, help="SSBC anchors m")
    p.add_argument("--sketch", type=positive_int, default=64,
                   help="SSBC sketch size ell (> bits)")
    p.add_argument("--sigma", default="auto", help="SSBC affinity scale: 'auto' or a number")
    p.add_argument("--sigma-scale", type=float, default=1.0, help="multiplier of sigma='auto'")
    p.add_argument("--mode", default="streaming", choices=["streaming", "online"],
                   help="SSBC: one pass with a Frequent Directions sketch (streaming) or "
                   "codes refreshed as points arrive (online)")
    p.add_argument("--knn", type=positive_int, default=5,
                   help="k of the Hamming k-NN classifier")
    p.add_argument("--recall-at", dest="recall_at", type=positive_int, default=100,
                   help="cut-off R of recall@R / precision@R")
    p.add_argument("--seed", type=int, default=0, help="random seed (split, sketch, baselines)")
    p.add_argument("--out", help="write the SSBC device container here (.edgc)")
    p.add_argument("--onnx", help="write the ONNX graph here (.onnx)")
    p.set_defaults(func=_cmd_hash)


def _cmd_hash(args):
    from export.data import data_options
    sigma = args.sigma
    if sigma != "auto":
        try:
            sigma = float(sigma)
        except ValueError:
            raise UsageError(f"--sigma must be 'auto' or a number; got {args.sigma!r}") from None
        if not (np.isfinite(sigma) and sigma > 0):
            raise UsageError(f"--sigma must be 'auto' or a finite number > 0; got {args.sigma!r}")
    if args.sketch <= args.bits and args.method.startswith("ssbc"):
        raise UsageError(f"--sketch ({args.sketch}) must be larger than --bits ({args.bits})")
    if (args.out or args.onnx) and not args.method.startswith("ssbc"):
        raise UsageError(f"--method {args.method} has no device export; --out / --onnx need "
                         "an SSBC method (ssbc, ssbc-center, ssbc-itq)")
    run_hash(args.data, method=args.method, bits=args.bits, anchors=args.anchors,
             sketch=args.sketch, sigma=sigma, sigma_scale=args.sigma_scale, mode=args.mode,
             knn=args.knn, R=args.recall_at, out=args.out, onnx_out=args.onnx, seed=args.seed,
             test_size=args.test_size, data_options=data_options(args))
