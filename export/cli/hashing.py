"""``edgecode hash``: binary codes (SSBC or a baseline) on the command line, and the
SSBC stage of ``edgecode demo``."""

import csv
import gzip
import sys
import time
from pathlib import Path

import numpy as np

from ._args import UsageError, positive_int

__all__ = ["run_hash", "run_demo_stage", "register", "load_points"]

METHODS = ("ssbc", "ssbc-center", "ssbc-itq", "lsh", "pca-sign", "itq", "sh")


def load_points(source):
    """(X, y, split) of ``"digits"`` (scikit-learn's bundled 8x8 digits, no split)
    or a CSV/CSV.gz with numeric feature columns and optional ``class`` and
    ``split`` columns (header row required)."""
    if source == "digits":
        from sklearn.datasets import load_digits
        d = load_digits()
        return d.data.astype(np.float64), d.target, None
    path = Path(source)
    if not path.exists():
        raise FileNotFoundError(f"data {source!r} is neither 'digits' nor an existing CSV file")
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", newline="") as fh:
        rows = list(csv.reader(fh))
    if len(rows) < 3:
        raise ValueError(f"{source}: needs a header row and at least 2 data rows")
    header, rows = rows[0], rows[1:]
    ci = header.index("class") if "class" in header else None
    si = header.index("split") if "split" in header else None
    feats = [i for i in range(len(header)) if i not in (ci, si)]
    try:
        X = np.array([[float(r[i]) for i in feats] for r in rows])
    except ValueError as exc:
        raise ValueError(f"{source}: feature columns must be numeric ({exc})") from None
    y = np.array([r[ci] for r in rows]) if ci is not None else None
    split = np.array([r[si] for r in rows]) if si is not None else None
    return X, y, split


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
             stream=None, quiet=False):
    """Fit codes on the database rows, report retrieval metrics on the queries,
    optionally export (SSBC only).  Database/queries: the ``train``/``test``
    split when the data has one, else the first 80 % / the rest.

    Returns a dict with the model, metrics and the export (if any).
    """
    from edgecode.hashing import SignRandomProjection, retrieval_metrics, true_neighbors
    say = (lambda *a: None) if quiet else (lambda *a: print(*a, file=stream or sys.stdout))
    X, y, split = load_points(data) if isinstance(data, str) else data
    if split is not None:
        db_mask, q_mask = split == "train", split == "test"
        if not db_mask.any() or not q_mask.any():
            raise ValueError("the split column needs both 'train' and 'test' rows")
    else:
        cut = int(0.8 * len(X))
        db_mask = np.arange(len(X)) < cut
        q_mask = ~db_mask
    Xdb, Xq = X[db_mask], X[q_mask]
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
    if y is not None:
        res["knn_accuracy"] = _knn_accuracy(cdb, y[db_mask], cq, y[q_mask], knn)
        say(f"  {knn}-NN classification accuracy from the codes: {res['knn_accuracy']:.4f}")
    if out is not None or onnx_out is not None:
        if not method.startswith("ssbc"):
            raise ValueError(f"export is for SSBC models; method {method!r} cannot be exported")
        from export.ssbc import export_ssbc
        from firmware_sim.ssbc import load_ssbc
        ex = export_ssbc(model, container_path=out, onnx_path=onnx_out,
                         X_table=Xdb if y is not None else None,
                         y_table=y[db_mask] if y is not None else None, knn_k=knn, X_check=Xq,
                         meta={"dataset": str(data) if isinstance(data, str) else "array"})
        res["export"] = ex
        say(f"  export: {ex.report()}")
        if y is not None:
            dev = load_ssbc(ex.container)
            acc = float((ex.classes[dev.predict(Xq)] == y[q_mask]).mean())
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
    X, y, _ = load_points("digits")
    Xq = X[int(0.8 * len(X)):]
    dev = load_ssbc(out_dir / "digits_ssbc.edgc")
    sess = ort.InferenceSession(str(out_dir / "digits_ssbc.onnx"),
                                providers=["CPUExecutionProvider"])
    label, bits = sess.run(["label", "bits"], {"X": Xq.astype(np.float32)})
    classes = res["export"].classes
    agree = bool(np.array_equal(bits, dev.bits(Xq))
                 and np.array_equal(label, classes[dev.predict(Xq)]))
    print(f"onnxruntime bits and labels == device runtime's on all {len(Xq)} queries: {agree}",
          file=out)
    yq = y[int(0.8 * len(X)):]
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
    p.add_argument("data", help="'digits' (scikit-learn's bundled digits) or a CSV path "
                   "(numeric features, optional 'class' and 'split' train/test columns)")
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
             knn=args.knn, R=args.recall_at, out=args.out, onnx_out=args.onnx, seed=args.seed)
