"""``edgecode budget``: which model to ship for a device and a noise (the Pareto front).

Example::

    edgecode budget digits --profile cortex-m0 --eps 0.05 --json front.json \\
        --plot front.png --export best
    edgecode budget house_votes --profile cortex-m4 --eps 0.1 --max-flash 12000 --build

Searches every registered model kind's configurations (:mod:`export.budget`;
each kind's options, such as ``--nb-rates`` or ``--designs``, come from its
bridge spec in ``export/kinds/``), prints the front of accuracy under noise
against flash (with RAM, cycles, energy, clean, predicted and simulated
accuracy, and where the costs come from: ``build/simavr`` for the front's
points built for the profile's target and run under simavr, ``profile/estimate``
for the rest) and the recommended point. Not a stage of ``edgecode demo``.
"""

import sys

from ._args import UsageError, check_output_dir, nonnegative_int, open_unit, positive_int

__all__ = ["register", "run_budget"]

def _csv(text, what, conv=str):
    items = [t.strip() for t in str(text).split(",") if t.strip()]
    if not items:
        raise UsageError(f"{what} must be a comma list; got {text!r}")
    try:
        return tuple(conv(t) for t in items)
    except ValueError:
        raise UsageError(f"{what} must be a comma list of {conv.__name__} values; got "
                         f"{text!r}") from None


def _nonneg_number(text):
    import argparse
    import math
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number > 0; got {text!r}") from None
    if not (math.isfinite(v) and v > 0):
        raise argparse.ArgumentTypeError(f"must be a number > 0; got {text!r}")
    return v


def _jobs(text):
    import argparse
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be -1 or an integer >= 1; got {text!r}") from None
    if v == 0 or v < -1:
        raise argparse.ArgumentTypeError(f"must be -1 or an integer >= 1; got {text!r}")
    return v


def run_budget(data, profile, eps, *, stream=None, json_path=None, plot_path=None,
               export_dir=None, progress=True, **options):
    """Run :func:`export.budget.search`, print the front, write the outputs.

    Every output is written only after the search succeeded (an error
    writes nothing). Returns the :class:`~export.budget.BudgetResult`.
    """
    from export.atomic import AtomicOutputs
    from export.budget import search
    from export.progress import Progress

    out = stream or sys.stdout
    with Progress("budget", every=0.0, enabled=bool(progress)) as report:
        result = search(data, profile, eps, progress=report, **options)
    print(result.table(), file=out)
    info = None
    with AtomicOutputs([json_path, plot_path], dirs=[export_dir]) as tmp:
        if json_path is not None:
            result.to_json(tmp[json_path])
        if plot_path is not None:
            result.plot(tmp[plot_path])
        if export_dir is not None:
            info = result.export(tmp[export_dir], build=bool(options.get("build")))
    for path in (json_path, plot_path):
        if path is not None:
            print(f"wrote {path}", file=out)
    if export_dir is not None:
        built = ""
        if "build" in info:
            b = info["build"]
            built = f"; built for {b['target']}: flash {b['flash_bytes']} B, RAM {b['ram_bytes']} B"
        fw = "firmware/, " if "firmware" in info else ""
        print(f"wrote the recommended model to {export_dir}: model.edgc, model.onnx, {fw}"
              f"recommended.json, report.md{built}", file=out)
        for note in info.get("notes", ()):
            print(f"note: {note}", file=out)
    return result


def _searched_specs():
    """The bridge specs of the kinds ``budget`` searches, in registration order."""
    from export._budget_space import search_kinds
    from export.registry import kind_spec
    return [kind_spec(k) for k in search_kinds()]


def _dest(opt):
    return f"space_{opt.name}"


def register(sub):
    """Add the ``budget`` sub-command to ``sub`` (argparse subparsers)."""
    from export._budget_front import FRONT_CYCLE_FRAMES
    from export.data import add_data_options

    from ._names import FAULTS

    specs = _searched_specs()
    p = sub.add_parser(
        "budget", help="search model kinds and sizes: the Pareto front of accuracy under noise "
        "against flash, and the model to ship",
        description="Search every model kind's configurations (naive Bayes repetition plans "
        "on binary data, ECOC designs x code lengths x learners, SSBC k-NN codes); prune what "
        "cannot fit the profile before training; for each, estimate flash, RAM, cycles and "
        "energy (the front's points built for the profile's target, cycle-exact under "
        "simavr on the AVR parts, unless --no-build), the clean accuracy, the accuracy "
        "predicted under the fault (exact or certified analytics where they exist) and a short simulation with its 99% interval; "
        "print the Pareto front (accuracy under noise against flash) and the recommended "
        "point (the most accurate under noise that fits).")
    p.add_argument("data", help="bundled set (house_votes, nltcs, dna, digits, iris, wine, "
                   "breast_cancer) or a CSV path (numeric features, a label column, optional "
                   "'split' train/test)")
    add_data_options(p)
    p.add_argument("--profile", required=True, help="device profile: cortex-m0, cortex-m4, "
                   "atmega328p, atmega2560, rv32imac or a .json/.toml profile file")
    own = ", ".join(s.compute_text for s in specs if s.compute_text)
    p.add_argument("--eps", required=True, help="fault rate in [0, 0.5): the per-bit flip "
                   "probability at the --site, the same for every kind")
    p.add_argument("--fault", default="bsc", choices=FAULTS,
                   help="fault model: bsc (independent flips), burst (Gilbert-Elliott, mean "
                   "flip rate eps), stuck (lines stuck at random values, eps wrong bits), seu "
                   "(stored image bits upset with probability eps)")
    p.add_argument("--set", action="append", metavar="NAME=VALUE", dest="fault_sets",
                   help="another fault parameter (repeatable), e.g. --set mean_burst=8")
    p.add_argument("--site", default=None, choices=["compute", "wire", "image"],
                   help="where the fault acts, the same for every kind: compute (default; "
                   f"the results the device computes and combines: {own}), wire (the input "
                   "frames' bits), image (the stored model bits; the default with --fault seu)")
    p.add_argument("--protection", default="auto", metavar="auto|none|LEVELS",
                   help="protection as part of each configuration at the wire and image "
                   "sites (issue 27): auto (default: at --site wire the int16-feature kinds "
                   "also come with a planned repetition of 1 and 2 extra copies per frame bit "
                   "on average; at --site image every kind with a planned image protection "
                   "of at most 4%% and 12.5%% flash overhead), none, or a comma list of "
                   "levels (extra copies at the wire, overhead fractions at the image)")
    p.add_argument("--strategy", default="grow", choices=["grow", "grid"],
                   help="grow (default): start from each kind's cheapest configurations and "
                   "grow the front until it stops improving or the next step no longer fits "
                   "the part; grid: every configuration of the lists below")
    p.add_argument("--no-baselines", dest="baselines", action="store_false",
                   help="skip the baselines (one-vs-all, scikit-learn's random code, a plain "
                   "forest, up to the recommendation's flash)")
    p.add_argument("--jobs", type=_jobs, default=1, help="worker processes that train and "
                   "measure configurations (-1: every CPU; the result does not depend on it)")
    p.add_argument("--scheduler", metavar="ADDRESS", default=None,
                   help="run the configurations on the Dask cluster at this scheduler address "
                   "(tcp://host:8786; needs the 'distributed' extra): the same result as one "
                   "process")
    p.add_argument("--max-flash", type=positive_int, default=None,
                   help="flash limit in bytes (besides the profile's)")
    p.add_argument("--min-accuracy", type=float, default=None,
                   help="leave out configurations less accurate than this under noise")
    p.add_argument("--budget-s", type=_nonneg_number, default=None,
                   help="stop training new configurations after this many seconds and report "
                   "what was done")
    build = p.add_mutually_exclusive_group()
    build.add_argument("--build", dest="build", action="store_const", const=True,
                       default="auto", help="measure flash and RAM of every configuration by "
                       "a real firmware build (about 1 s each). By default, when the "
                       "profile's target toolchain is present, every point of the front is "
                       "built (flash, RAM) and, on atmega328p/atmega2560, run under simavr on "
                       f"{FRONT_CYCLE_FRAMES} test frames (exact cycles, their mean; elsewhere "
                       "the calibrated estimate on those frames); a front point over the part once built is "
                       "dropped; all configurations are built when at most 8 survive "
                       "screening; the rest are profile estimates. The table's 'costs from' "
                       "column says which (build/simavr, profile/estimate)")
    build.add_argument("--no-build", dest="build", action="store_const", const=False,
                       help="no builds: profile estimates of flash, RAM and cycles for every "
                       "point")
    names = [s.cli_name for s in specs]
    p.add_argument("--kinds", default=",".join(names), help=f"model kinds to search: "
                   f"{', '.join(names)} (comma list)")
    for spec in specs:                       # each kind's own lists (its space_options)
        for opt in spec.space_options:
            if opt.cli is not None:
                p.add_argument(opt.cli, dest=_dest(opt), default=opt.cli_default(),
                               help=opt.help)
    p.add_argument("--ram-objective", action="store_true", help="RAM as a third objective of "
                   "the front (by default it breaks ties of accuracy and flash)")
    p.add_argument("--ignore-int-widths", action="store_true", help="keep images with "
                   "integer arrays of a width the profile's int_widths lacks (listed, not "
                   "refused)")
    p.add_argument("--simulate-all", action="store_true", help="simulate every configuration "
                   "(default: those without a prediction and the front's points)")
    p.add_argument("--sim-samples", type=positive_int, default=100_000,
                   help="(point, trial) pairs per simulation campaign")
    p.add_argument("--test-size", type=open_unit, default=0.3,
                   help="held-out fraction when the data has no train/test split")
    p.add_argument("--max-points", type=positive_int, default=None,
                   help="at most this many test rows (default: all)")
    p.add_argument("--seed", type=nonnegative_int, default=0, help="seed of the split, codes, "
                   "learners, plans and campaigns")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    p.add_argument("--json", dest="json_path", help="write the front as JSON here")
    p.add_argument("--plot", dest="plot_path", help="write a PNG of the front here (needs "
                   "matplotlib, the 'plot' extra)")
    p.add_argument("--export", dest="export_dir", help="write the recommended model here: "
                   "container, ONNX, firmware (a directory, created inside an existing one)")
    p.set_defaults(func=_cmd_budget)


def _space(args):
    """The SearchSpace the options name (``UsageError`` naming the option)."""
    from export.budget import SearchSpace
    from export.registry import find_kind_spec

    specs = _searched_specs()
    kinds = []
    for k in _csv(args.kinds, "--kinds"):
        spec = find_kind_spec(k)
        if spec not in specs:
            raise UsageError(f"--kinds: unknown kind {k!r}; choose from "
                             f"{', '.join(s.cli_name for s in specs)}")
        kinds.append(spec.kind)
    values, flags = {}, {}
    for spec in specs:
        for opt in spec.space_options:
            if opt.cli is not None:
                values[opt.name] = _csv(getattr(args, _dest(opt)), opt.cli, opt.item)
                flags[f"space.{opt.name}"] = opt.cli
    try:
        return SearchSpace(kinds=tuple(kinds), **values)
    except ValueError as exc:
        msg = str(exc)
        for name in sorted(flags, key=len, reverse=True):
            msg = msg.replace(name, flags[name])
        raise UsageError(msg.replace("space.", "--")) from None


def _cmd_budget(args):
    from ._args import flip_probability
    from ._args import parse_sets
    from export.data import data_options

    eps = flip_probability(_first_number(args.eps), "--eps")
    if args.min_accuracy is not None and not 0.0 <= args.min_accuracy <= 1.0:
        raise UsageError(f"--min-accuracy must be in [0, 1]; got {args.min_accuracy:g}")
    if args.export_dir is not None:
        check_output_dir(args.export_dir, "--export")
    if args.plot_path is not None:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise UsageError("--plot needs matplotlib: pip install 'edgecode[plot]'") from None
    try:
        fault_params = parse_sets(args.fault_sets)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    space = _space(args)
    protection = args.protection
    if protection not in ("auto", "none"):
        protection = tuple(_csv(protection, "--protection", float))
    run_budget(args.data, args.profile, eps, json_path=args.json_path,
               plot_path=args.plot_path, export_dir=args.export_dir, progress=not args.quiet,
               fault=args.fault, fault_params=fault_params, site=args.site,
               max_flash=args.max_flash, min_accuracy=args.min_accuracy, space=space,
               budget_s=args.budget_s, build=args.build, strategy=args.strategy,
               baselines=args.baselines, jobs=args.jobs, scheduler=args.scheduler,
               simulate="all" if args.simulate_all else "front",
               sim_samples=args.sim_samples, random_state=args.seed, test_size=args.test_size,
               max_points=args.max_points, enforce_int_widths=not args.ignore_int_widths,
               ram_objective=args.ram_objective, data_options=data_options(args),
               protection=protection)


def _first_number(text):
    try:
        return float(text)
    except ValueError:
        raise UsageError(f"--eps must be one number in [0, 0.5); got {text!r}") from None
