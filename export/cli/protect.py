"""``edgecode protect``: plan protection at a fault site under a budget, write the
protected artifact, and check the predicted label-change rate by a campaign on
the protected device (issue 27; library: :func:`export.protect.protect`).

Example::

    edgecode ecoc tests/data/glass.csv --learner logistic --code dense_random \\
        --n-columns 15 --out glass.edgc
    edgecode protect glass.edgc --data tests/data/glass.csv --site wire --fault bsc \\
        --eps 0.01 --max-overhead 2 --out glass_wire.edgc --json glass_wire.json
"""

import sys

from ._args import UsageError, positive_int

__all__ = ["register", "run_protect_cli", "run_demo_stage"]

_SITES = ("wire", "image", "all")
_FAULTS = ("bsc", "burst", "seu")
_SCHEMES = ("auto", "uniform", "secded", "parity", "tmr", "bch", "none")


def register(sub):
    """Add the ``protect`` sub-command to ``sub`` (argparse subparsers)."""
    p = sub.add_parser("protect", help="plan protection of an artifact at a fault site under "
                       "a budget, write it, and check the predicted label changes by a "
                       "campaign on the protected device")
    p.add_argument("artifact", help="device container (ecoc, ssbc, forest: int16 features on "
                   "the wire)")
    p.add_argument("--data", required=True, help="rows that rank the positions and check the "
                   "prediction: bundled name or CSV")
    p.add_argument("--split", default="all", help="rows to use when the data has a split")
    from export.data import add_data_options
    add_data_options(p)
    p.add_argument("--site", default="wire", choices=_SITES,
                   help="wire: the features' bits (repetition per feature and bit); image: "
                   "the stored arrays; all: both under one budget")
    p.add_argument("--fault", default="bsc", choices=_FAULTS,
                   help="bsc: independent flips; burst: Gilbert-Elliott bursts of mean "
                   "--mean-burst bits through an interleaved wire order; seu: stored-image "
                   "upsets")
    p.add_argument("--eps", type=float, required=True,
                   help="flip probability per bit (bsc; burst: the mean flip rate)")
    p.add_argument("--budget-bits", type=int, default=None,
                   help="extra wire bits per frame beyond one copy of each bit")
    p.add_argument("--max-overhead", type=float, default=None,
                   help="extra bits as a fraction of the unprotected frame (2: two extra "
                   "copies per bit on average)")
    p.add_argument("--scheme", default="auto", choices=_SCHEMES,
                   help="auto: the planner; uniform: every wire bit the same copies; tmr: "
                   "every bit three times; none; secded, parity, bch: the image site")
    p.add_argument("--mean-burst", type=float, default=8.0, help="mean burst length (burst)")
    p.add_argument("--trials", type=positive_int, default=400,
                   help="campaign trials per point (and of a simulated prediction)")
    p.add_argument("--seed", type=int, default=0, help="random seed")
    p.add_argument("--no-check", action="store_true",
                   help="skip the campaign on the protected device")
    p.add_argument("--out", required=True, help="write the protected container here (.edgc)")
    p.add_argument("--json", dest="json_path", help="write the JSON report here")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    p.set_defaults(func=_cmd_protect)


def _cmd_protect(args):
    if not 0.0 < args.eps < 0.5:
        raise UsageError(f"--eps must be in (0, 0.5); got {args.eps:g}")
    if args.budget_bits is not None and args.budget_bits < 0:
        raise UsageError(f"--budget-bits must be >= 0; got {args.budget_bits}")
    if args.max_overhead is not None and not args.max_overhead >= 0:
        raise UsageError(f"--max-overhead must be >= 0; got {args.max_overhead:g}")
    from export.data import data_options
    run_protect_cli(args.artifact, args.data, site=args.site, fault=args.fault, eps=args.eps,
                    budget_bits=args.budget_bits, max_overhead=args.max_overhead,
                    scheme=args.scheme, out=args.out, json_path=args.json_path,
                    split=args.split, n_trials=args.trials, random_state=args.seed,
                    mean_burst=args.mean_burst, check=not args.no_check,
                    data_options=data_options(args), quiet=args.quiet)


def run_protect_cli(artifact, data, *, quiet=False, stream=None, **options):
    """Run :func:`export.protect.protect` and print its report."""
    from export.protect import protect
    out = stream or sys.stdout
    def progress(done, total, text=""):
        if not quiet:
            print(f"protect: {text}", file=sys.stderr)
    res = protect(artifact, data, progress=progress, **options)
    print_report(res.details, out)
    if options.get("out"):
        print(f"wrote protected container {options['out']} ({len(res.container)} bytes)",
              file=out)
    return res


def print_report(r, out):
    """The report of a wire protection (``ExportResult.details``), a few lines."""
    if r.get("site") == "all":
        print_report(r["wire"], out)
        print_report(r["image"], out)
        return
    if r.get("site") == "image":
        print(f"image protection of a {r['kind']} model on {r['data']} ({r['n_points']} "
              f"points): upsets eps {r['eps']:g} per stored bit, scheme {r['scheme']}",
              file=out)
        for a in r["allocation"]:
            code = ""
            if a.get("bch"):
                code = f" (m {a['bch'][0]}, t {a['bch'][1]}" + (
                    f", span from {a['span_of']})" if a.get("span_of") else ")")
            print(f"  {a['array']:<16} {a['scheme']:<7} {a['bytes']:>7} B + {a['check_bytes']:>5} B "
                  f"of checks{code}", file=out)
        lo, hi = r.get("predicted_interval", (float("nan"), float("nan")))
        print(f"image {r['base_bytes']} -> {r['protected_bytes']} B (overhead "
              f"{r['overhead']:.3f}); predicted label-change rate "
              f"{r['predicted_label_change']:.6f} [{lo:.6f}, {hi:.6f}] ({r['method']})",
              file=out)
        return
    alloc = r["allocation"]
    print(f"wire protection of a {r['kind']} model on {r['data']} ({r['n_points']} points): "
          f"fault {r['fault_name']} eps {r['eps']:g}"
          f"{' (interleaved)' if r['interleaved'] else ''}, scheme {r['scheme']}", file=out)
    print(f"wire bits per frame {alloc['total_bits']} (unprotected {alloc['base_bits']}, "
          f"overhead {alloc['overhead']:.3f}; budget {alloc['budget_bits']} extra bits)",
          file=out)
    copies = alloc["copies"]
    for f, row in enumerate(copies):
        print(f"  feature {f:>3}: copies bit 15..0 {' '.join(str(c) for c in row[::-1])}",
              file=out)
    pred = r["prediction"]
    print(f"predicted label-change rate {r['predicted_label_change']:.6f} "
          f"[{pred['lower']:.6f}, {pred['upper']:.6f}] ({r['method']})", file=out)
    sim = r.get("simulated")
    if sim is not None:
        print(f"simulated on the protected device: {sim['simulated_label_change']:.6f} "
              f"[{sim['ci'][0]:.6f}, {sim['ci'][1]:.6f}] (99%, {sim['n_points']} points x "
              f"{sim['n_trials']} trials); prediction inside: {sim['inside']}", file=out)
    if r.get("clean_label_mismatches"):
        print(f"warning: {r['clean_label_mismatches']} clean labels differ from the "
              "unprotected device", file=out)


def run_demo_stage(out_dir, trials=2000, stream=None):
    """Demo stage: wire protection of the ECOC linear SVM of stage 3 (digits) at BSC
    eps 0.01, none / uniform (every bit three times) / planned at the same budget."""
    from pathlib import Path

    from export.data import load_table
    from export.protect import protect
    out = stream or sys.stdout
    out_dir = Path(out_dir)
    art = out_dir / "digits_svm_binary.edgc"
    print("\n== protection: the wire of the digits linear SVM code (stage 3), BSC eps 0.01, "
          "two extra copies per bit on average ==", file=out)
    digits = load_table("digits")
    X = (digits.X / 16.0)[::24]
    n_trials = max(20, int(trials) // 100)
    results = {}
    print("scheme;wire_bits;predicted_label_change;method;simulated;ci99_low;ci99_high;inside",
          file=out)
    for scheme in ("none", "uniform", "auto"):
        dest = out_dir / f"digits_svm_binary_wire_{scheme}.edgc" if scheme == "auto" else None
        r = protect(art, (X, None), eps=0.01, max_overhead=2.0, scheme=scheme, out=dest,
                    n_trials=n_trials, random_state=0)
        d = r.details
        sim = d["simulated"]
        print(f"{scheme};{d['wire_bits']};{d['predicted_label_change']:.5f};{d['method']};"
              f"{sim['simulated_label_change']:.5f};{sim['ci'][0]:.5f};{sim['ci'][1]:.5f};"
              f"{sim['inside']}", file=out)
        results[scheme] = r
    print(f"wrote the planned protection to {out_dir / 'digits_svm_binary_wire_auto.edgc'} "
          f"({len(results['auto'].container)} bytes; {X.shape[0]} digits x {n_trials} trials "
          "per scheme)", file=out)
    return results
