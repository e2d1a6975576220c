"""``edgecode codes``: build an ECOC coding matrix, print its quality report, save it."""

import sys
import time
from pathlib import Path

from ._args import UsageError, positive_int

__all__ = ["run_codes", "run_demo_stage", "register"]

#: What the columns of the quality tables mean (printed under them).
LEGEND = ("d_r: minimum Hamming distance between rows (codewords: errors corrected = "
          "floor((d_r - 1) / 2)); d_c: minimum distance between columns and their "
          "complements (learner independence); d_T = d_r + d_c; row mean / std: mean and "
          "std of the row distances; valid: no equal or complementary columns, no constant "
          "column, distinct rows")


def _parse_option(text):
    """``key=value`` -> (key, value) with value read as int, float, bool or str."""
    if "=" not in text:
        raise ValueError(f"--option must look like key=value; got {text!r}")
    key, raw = text.split("=", 1)
    for conv in (int, float):
        try:
            return key.strip(), conv(raw)
        except ValueError:
            pass
    if raw.lower() in ("true", "false"):
        return key.strip(), raw.lower() == "true"
    return key.strip(), raw


def run_codes(design, n_classes, n_columns=None, N=2, seed=None, options=None, out=None,
              stream=None):
    """Build a design, print ``check_properties(M).report()`` and optionally save it
    (:func:`edgecode.ecoc.save_code`: ``.npy``, ``.csv`` or ``.json``)."""
    from edgecode.ecoc import check_properties, make_code, save_code

    stream = stream or sys.stdout
    options = dict(options or {})
    if design == "annealed" and "progress" not in options and stream is sys.stdout:
        options["progress"] = True
    t0 = time.perf_counter()
    M = make_code(design, n_classes, n_columns, N=N, random_state=seed, **options)
    elapsed = time.perf_counter() - t0
    props = check_properties(M)
    opts = ", ".join(f"{k}={v}" for k, v in options.items() if k != "progress") or "none"
    print(f"design {design} (N = {N}, seed {seed}, options: {opts}) built in "
          f"{elapsed:.3f}s", file=stream)
    print(props.report(), file=stream)
    if out is not None:
        meta = {"design": design, "n_symbols": int(N), "seed": seed,
                "options": {k: v for k, v in options.items() if k != "progress"},
                "d_r": float(props.d_r), "d_c": float(props.d_c)}
        path = save_code(M, out, meta=meta)
        print(f"wrote {path} ({M.shape[0]} x {M.shape[1]} {M.dtype})", file=stream)
    return {"code": M, "properties": props, "seconds": elapsed}


def run_demo_stage(out_dir, trials=2000, stream=None):
    """Demo stage: a quality comparison of a few designs for 10 classes (a few seconds)."""
    from edgecode.ecoc import check_properties, make_code, save_code

    out = stream or sys.stdout
    out_dir = Path(out_dir)
    print("\n== 2/6 Coding matrices: quality of a few designs for 10 classes ==", file=out)
    designs = [
        ("one_vs_all", {}, 2, None),
        ("dense_random", {"n_draws": 100}, 2, None),
        ("hadamard", {"truncation": "top_left"}, 2, 16),
        ("hadamard", {}, 2, 16),
        ("nary", {"truncation": "top_left"}, 3, 20),
        ("nary", {}, 3, 20),
        ("nary_random", {"n_draws": 1000}, 3, 20),
        ("bch", {"n_draws": 5}, 2, 31),
        ("annealed", {"n_temps": 30}, 2, 34),
    ]
    print(f"{'design':<12} {'options':<22} {'N':>2} {'n':>3} {'d_r':>5} {'d_c':>5} {'d_T':>5} "
          f"{'row mean':>8} {'row std':>7} {'valid':>5} {'time':>7}", file=out)
    rows = []
    for design, opts, N, n in designs:
        t0 = time.perf_counter()
        M = make_code(design, 10, n, N=N, random_state=0, **opts)
        dt = time.perf_counter() - t0
        p = check_properties(M)
        label = ",".join(f"{k}={v}" for k, v in opts.items())
        print(f"{design:<12} {label:<22} {N:>2} {M.shape[1]:>3} {p.d_r:>5g} {p.d_c:>5g} "
              f"{p.d_T:>5g} {p.row_mean:>8.2f} {p.row_std:>7.2f} {str(p.valid):>5} "
              f"{dt:>6.2f}s", file=out)
        rows.append({"design": design, "options": opts, "N": N, "shape": M.shape,
                     "d_r": p.d_r, "d_c": p.d_c, "d_T": p.d_T, "valid": p.valid})
    print(LEGEND, file=out)
    M = make_code("nary", 10, 20, N=3)
    path = save_code(M, out_dir / "codes_nary3_10x20.json", meta={"design": "nary",
                                                                  "n_symbols": 3})
    print(f"saved the 3-ary Sylvester code (adaptive truncation) to {path}", file=out)
    return {"designs": rows, "path": str(path)}


def register(sub):
    """Add the ``codes`` sub-command to ``sub`` (argparse subparsers)."""
    from ._names import DESIGNS

    p = sub.add_parser("codes", help="build an ECOC coding matrix, report its quality, save it")
    p.add_argument("design", choices=list(DESIGNS), help="coding design")
    p.add_argument("--classes", type=positive_int, required=True,
                   help="number of classes (rows)")
    p.add_argument("--n-columns", "--columns", dest="columns", type=positive_int, default=None,
                   help="number of learners (columns); default depends on the design")
    p.add_argument("--N", type=positive_int, default=None,
                   help="alphabet size (default: 3 for nary and nary_random, 2 for every other "
                   "design; nary needs a prime)")
    p.add_argument("--seed", type=int, default=None, help="random_state for random designs "
                   "(default: fresh randomness)")
    p.add_argument("--option", "-o", action="append", default=[], metavar="KEY=VALUE",
                   help="design option, e.g. -o truncation=top_left -o orientation=paper (nary: the "
                   "seed's i j mod N) -o screen=false (plain random) -o n_draws=1000 -o t=6")
    p.add_argument("--out", help="save the matrix to .npy, .csv or .json (with the design's "
                   "metadata); a matrix is not a device model, so not a .edgc container "
                   "(train one with 'edgecode ecoc')")
    p.set_defaults(func=_cmd_codes)


def _cmd_codes(args):
    if args.out is not None:
        from edgecode.ecoc.files import CODE_SUFFIXES
        if args.out.lower().endswith(".edgc"):
            raise UsageError(f"--out {args.out}: a coding matrix is not a device model (it has "
                             "no learners), so it is not written as a container; save it as "
                             f"{', '.join(CODE_SUFFIXES)}, or train a model on the design "
                             f"with 'edgecode ecoc DATA --code {args.design} --out model.edgc'")
        if not args.out.lower().endswith(CODE_SUFFIXES):
            raise UsageError(f"--out must end in one of {', '.join(CODE_SUFFIXES)}; got "
                             f"{args.out!r}")
    options = dict(_parse_option(o) for o in args.option)
    N = args.N if args.N is not None else (3 if args.design in ("nary", "nary_random") else 2)
    run_codes(args.design, args.classes, args.columns, N=N, seed=args.seed,
              options=options, out=args.out)
