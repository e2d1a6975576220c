"""``edgecode campaign``: sweep a fault model over a grid on a device artifact.

Example::

    edgecode plan house_votes --eps 0.1 --budget 32 --out hv.edgc
    edgecode campaign hv.edgc --fault bsc --param eps --grid 0.02,0.05,0.1,0.2 \\
        --trials 5000 --json hv_bsc.json --plot hv_bsc.png
    edgecode campaign hv.edgc --fault burst --set mean_burst=4 --param flip_rate \\
        --grid 0.02,0.05,0.1,0.2 --trials 5000
    edgecode campaign hv.edgc --fault seu --set arrays=weights --param count --grid 1,2,4

ECOC and SSBC artifacts (``edgecode ecoc --out``, ``edgecode hash --out``)
run the same way: ``firmware_sim.load`` picks the device for the container's
kind. Bit faults act at ``--site``: ``wire`` (the frames the host sends:
repeated feature bits, or int16 features as 16 bits each) or
``intermediate`` (decoded feature bits; ECOC learner outputs, where an N-ary
event replaces the symbol by a uniformly random other one, bsc and burst
only; SSBC code bits). The default is the kind's own (wire for naive Bayes,
intermediate for ECOC and SSBC). ``--fault seu`` upsets the stored image and
re-runs the faulty device end to end (``--set arrays=lin_weights`` reaches
the ECOC learners, ``arrays=table_codes`` the SSBC code table)::

    edgecode ecoc digits --learner logistic --code dense_random --N 2 --out dg.edgc
    edgecode campaign dg.edgc --data digits --fault bsc --param eps --grid 0.02,0.05,0.1
    edgecode hash digits --bits 16 --out hs.edgc
    edgecode campaign hs.edgc --data digits --fault seu --set arrays=table_codes \\
        --param rate --grid 0.01,0.05

``edgecode upsets`` flips every stored bit in turn (or those of ``--arrays``)
and lists the arrays and bits whose upset changes labels: what to protect
first, and what a one-upset campaign will measure, exactly::

    edgecode upsets hv.edgc --top 5

Both show their progress on stderr (a redrawn line with an ETA on a
terminal, a line per stage otherwise; ``--quiet`` turns it off), stop on
Ctrl-C within a second with exit status 130, and write ``--json`` and
``--plot`` to temporary names renamed at the end: an interrupted or failed
run leaves no output file, nor replaces one.
"""

import sys

from ._args import UsageError
from ._args import jobs as _jobs
from ._args import nonnegative_int, open_unit, parse_grid, parse_sets, positive_int

__all__ = ["run_campaign_cli", "run_upsets_cli", "run_demo_stage", "register"]


def _default_params(param, grid, params):
    """Fill the swept parameter with the grid's first value so the base model builds
    (each fault model fills the rest: ``Fault.default_params``)."""
    params = dict(params)
    if param is not None and "." not in param:
        params.setdefault(param, grid[0])
    return params


def _check_plot_dependency(plot_path):
    """``--plot`` needs matplotlib: refuse before any work, naming how to install it."""
    if plot_path is None:
        return
    from export.report import require_matplotlib
    try:
        require_matplotlib()
    except ImportError as exc:
        raise UsageError(f"--plot {plot_path}: {exc}") from None


def run_campaign_cli(artifact, fault, params=None, param=None, grid=None, trials=1000, seed=0,
                     dataset=None, split="test", max_points=None, confidence=0.99,
                     profile=None, json_path=None, plot_path=None, stream=None, site=None,
                     n_jobs=None, scheduler=None, quiet=False, progress_stream=None,
                     data_options=None):
    """Load an artifact, run a campaign on dataset rows, print the table, write reports.

    ``n_jobs`` threads, or the batches on the Dask cluster at ``scheduler`` (a
    scheduler address or a ``Client``): the same counts either way. Progress
    goes to ``progress_stream`` (default stderr) unless ``quiet``; the JSON
    and PNG are written to temporary names and renamed at the end (nothing
    is written when the run is interrupted or fails).

    Returns the :class:`~firmware_sim.campaign.CampaignResult` (with analytic
    predictions attached where a closed form exists).
    """
    from export.progress import Progress
    from export.report import format_campaign, plot_campaign
    from firmware_sim.campaign import run_campaign
    from firmware_sim.faults import FAULTS, make_fault
    from firmware_sim.profiles import annotate, check_fits, get_profile

    from export.atomic import AtomicOutputs as _AtomicOutputs

    out = stream or sys.stdout
    _check_plot_dependency(plot_path)
    container, device, X, y, data_name = _device_and_rows(artifact, dataset, split, max_points,
                                                          data_options)
    if profile is not None:
        prof = get_profile(profile)
        check_fits(prof, device.resources(), container)
    if fault not in FAULTS:
        raise ValueError(f"unknown fault model {fault!r}; known: {sorted(FAULTS)}")
    base = make_fault(fault, **FAULTS[fault].default_params(
        _default_params(param, grid or [None], params or {})))
    client, own = _dask_client(scheduler)
    try:
        with Progress("campaign", stream=progress_stream, enabled=not quiet) as progress:
            res = run_campaign(device, X, base, param, grid, trials, random_state=seed, y=y,
                               site=site, confidence=confidence, n_jobs=n_jobs, client=client,
                               progress=progress)
    finally:
        if own:
            client.close()
    # imported after the run: export.analytics brings scikit-learn, whose import and
    # teardown would delay the start and an interrupted campaign's exit
    from export.analytics import add_analytic
    add_analytic(res, device, X, base, param, y)
    if profile is not None:
        res.device["profile"] = annotate(device.resources(), prof)
    print(f"campaign on {artifact if isinstance(artifact, str) else '<artifact>'}: "
          f"{container.kind}, {data_name} ({len(X)} points x {trials} trials per value), "
          f"fault {base!r} at {res.site if base.target != 'image' else 'the image'}, "
          f"seed {seed}" + (f", on the Dask cluster {scheduler}" if isinstance(scheduler, str)
                             else ""), file=out)
    if profile is not None:
        est = res.device["profile"]["estimate"]
        print(f"profile {prof.name}: {est['cycles']:.0f} cycles, "
              f"{est['time_s'] * 1e6:.1f} us, {est['energy_pj']:.0f} pJ per inference "
              f"(operation energy only unless the profile sets an overhead)", file=out)
    print(format_campaign(res), file=out)
    with _AtomicOutputs([json_path, plot_path]) as tmp:
        if json_path is not None:
            res.to_json(tmp[json_path])
        if plot_path is not None:
            plot_campaign(res, tmp[plot_path], labels=[fault])
    for path in (json_path, plot_path):
        if path is not None:
            print(f"wrote {path}", file=out)
    return res


def _dask_client(scheduler):
    """(client, opened here): None, a connected Client as given, or a Client
    connected to the scheduler address (dask imported only then)."""
    if scheduler is None or not isinstance(scheduler, str):
        return scheduler, False
    try:
        from dask.distributed import Client
    except ImportError:
        raise ValueError("--scheduler needs dask.distributed: pip install "
                         "'edgecode[distributed]'") from None
    try:
        return Client(scheduler, timeout=30), True
    except (OSError, TimeoutError) as exc:
        raise ValueError(f"cannot reach the Dask scheduler at {scheduler}: {exc}") from None


def _device_and_rows(artifact, dataset, split, max_points, data_options=None):
    """(container, campaign device, X, y, data name) of an artifact and its data rows
    (``data_options``: ``--label``, ``--ignore``, ``--positive`` over what the
    artifact records)."""
    from export.registry import kind_rows
    from firmware_sim import load

    device = load(artifact)
    container = device.container
    dataset = dataset or (container.meta or {}).get("dataset")
    if dataset is None:
        raise ValueError("the artifact records no dataset; pass --data")
    if not isinstance(dataset, (str, tuple, list)) and not hasattr(dataset, "X"):
        raise ValueError(f"the artifact's meta 'dataset' must be a name or path; got "
                         f"{dataset!r}")
    X, y, data_name = kind_rows(container.kind)(container, dataset, split,
                                                **(data_options or {}))
    if max_points is not None:
        X, y = X[:max_points], (None if y is None else y[:max_points])
    return container, device, X, y, data_name


def run_upsets_cli(artifact, dataset=None, split="test", max_points=None, arrays=None,
                   checked=False, top=10, max_bits=1 << 14, json_path=None, stream=None,
                   quiet=False, progress_stream=None, data_options=None):
    """Flip every targeted bit of an artifact in turn; print which arrays and bits matter.

    Progress goes to ``progress_stream`` (default stderr) unless ``quiet``;
    the JSON is written to a temporary name and renamed at the end.

    Returns the :class:`~firmware_sim.sensitivity.UpsetTable`.
    """
    import json

    from export.progress import Progress
    from firmware_sim.sensitivity import single_upset_table

    from export.atomic import AtomicOutputs as _AtomicOutputs

    out = stream or sys.stdout
    container, device, X, y, data_name = _device_and_rows(artifact, dataset, split, max_points,
                                                          data_options)
    with Progress("upsets", stream=progress_stream, enabled=not quiet) as progress:
        tab = single_upset_table(device, X, arrays=arrays, checked=checked, y=y,
                                 max_bits=max_bits, progress=progress)
    name = artifact if isinstance(artifact, str) else "<artifact>"
    print(f"single-bit upsets of {name}: {container.kind}, {data_name} ({len(X)} points), "
          f"{tab.n_bits} bits{' of the checked image' if checked else ''}", file=out)
    print(f"{'array':<16} {'dtype':>7} {'bits':>7} {'refused':>8} {'mean change':>12} "
          f"{'max change':>11}", file=out)
    for r in tab.per_array():
        print(f"{r['array']:<16} {r['dtype']:>7} {r['bits']:7d} {r['refused']:8.3f} "
              f"{r['mean_change_rate']:12.5f} {r['max_change_rate']:11.5f}", file=out)
    one = tab.single_upset()
    acc = f", accuracy {one['accuracy']:.5f}" if "accuracy" in one else ""
    print(f"one upset per image (what 'campaign --fault seu --set count=1' measures): same "
          f"rate {one['same_rate']:.5f}{acc}, refused {one['refused_rate']:.4f}", file=out)
    if top > 0:
        print("most critical bits (label-change rate; refused counts as changed):", file=out)
        for b in tab.critical_bits(top):
            flag = " (refused)" if b["refused"] else ""
            print(f"  {b['array']}[{b['element']}] bit {b['bit']}: {b['change_rate']:.4f}"
                  f"{flag}", file=out)
    if json_path is not None:
        report = {"artifact": name, "kind": container.kind, "data": data_name,
                  "points": len(X), "checked": bool(checked), "bits": tab.n_bits,
                  "arrays": tab.per_array(), "single_upset": one,
                  "critical_bits": tab.critical_bits(top),
                  "change_rate_per_bit": tab.change_rate.tolist()}
        with _AtomicOutputs([json_path]) as tmp:
            with open(tmp[json_path], "w") as fh:
                json.dump(report, fh, indent=1)
        print(f"wrote {json_path}", file=out)
    return tab


def run_demo_stage(out_dir, trials=2000, stream=None):
    """Demo stage (see :func:`export.demo_campaign.run_demo_stage`)."""
    from export.demo_campaign import run_demo_stage as _stage
    return _stage(out_dir, trials=trials, stream=stream)


def register(sub):
    """Add the ``campaign`` sub-command to ``sub`` (argparse subparsers)."""
    c = sub.add_parser("campaign", help="sweep a fault model over a grid on a device artifact")
    c.add_argument("artifact", help="device container of any registered kind (what "
                   "'edgecode plan', 'ecoc' and 'hash' write with --out)")
    from ._names import FAULTS

    c.add_argument("--fault", required=True, choices=FAULTS,
                   help="a registered fault model (firmware_sim.faults.FAULTS): bsc: "
                        "independent flips (eps); burst: Gilbert-Elliott (p, r, eps_good, "
                        "eps_bad, or flip_rate and mean_burst); stuck: stuck lines (stuck0, "
                        "stuck1, rate, value); seu: parameter upsets (rate or count, arrays, "
                        "checked)")
    c.add_argument("--set", action="append", metavar="NAME=VALUE",
                   help="a fault parameter (repeatable); lists comma separated")
    c.add_argument("--param", help="parameter to sweep (e.g. eps, flip_rate, rate, count; "
                   "default: none, one point at the --set values)")
    c.add_argument("--grid", help="comma list of values of --param")
    c.add_argument("--site", choices=["wire", "intermediate"], default=None,
                   help="where bit faults act: the frames on the wire or the device's "
                        "intermediate results (default: the kind's own site, the device's "
                        "default_site: wire for naive Bayes, intermediate for ECOC learner "
                        "outputs and SSBC code bits)")
    c.add_argument("--trials", type=positive_int, default=1000, help="trials per point and "
                   "value")
    c.add_argument("--seed", type=int, default=0, help="random seed of the faults")
    c.add_argument("--jobs", type=_jobs, default=None, help="threads (-1: every CPU; default: "
                   "numba's thread count); the counts do not depend on it")
    c.add_argument("--scheduler", metavar="ADDRESS", default=None,
                   help="run the trials on a Dask cluster (e.g. tcp://host:8786; needs "
                   "pip install 'edgecode[distributed]'); same counts as a local run")
    c.add_argument("--data", default=None, help="inputs: bundled name or CSV (default: the "
                   "dataset recorded in the artifact); ecoc/ssbc: as 'edgecode ecoc' / "
                   "'edgecode hash' take it, e.g. digits")
    c.add_argument("--split", default="test", help="rows to use when the data has a split")
    add_data_options(c, label_help=_LABEL_HELP)
    c.add_argument("--max-points", type=positive_int, help="use at most this many points "
                   "(default: all)")
    c.add_argument("--confidence", type=open_unit, default=0.99,
                   help="level of the intervals")
    c.add_argument("--profile", help="device profile (cortex-m0, cortex-m4 or a JSON/TOML "
                   "file): refuse an artifact that does not fit, report cycles and energy")
    c.add_argument("--json", dest="json_path", help="write the JSON report here")
    c.add_argument("--plot", dest="plot_path", help="write a PNG plot here (needs matplotlib: "
                   "pip install 'edgecode[plot]')")
    c.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    c.set_defaults(func=_cmd_campaign)

    u = sub.add_parser("upsets", help="flip every stored bit of an artifact in turn: which "
                       "arrays and bits change labels")
    u.add_argument("artifact", help="device container of any registered kind")
    u.add_argument("--data", default=None, help="inputs, as for 'edgecode campaign'")
    u.add_argument("--split", default="test", help="rows to use when the data has a split")
    add_data_options(u, label_help=_LABEL_HELP)
    u.add_argument("--max-points", type=positive_int, help="use at most this many points "
                   "(default: all)")
    u.add_argument("--arrays", help="comma list of container arrays (default: all)")
    u.add_argument("--checked", action="store_true", help="upsets anywhere in the image, "
                   "CRC verified by the loader (every one is then refused)")
    u.add_argument("--top", type=nonnegative_int, default=10, help="critical bits to list")
    u.add_argument("--max-bits", type=positive_int, default=1 << 14,
                   help="refuse more targeted bits than this (one re-load per bit)")
    u.add_argument("--json", dest="json_path", help="write the JSON report here")
    u.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    u.set_defaults(func=_cmd_upsets)


#: --label on the commands that read an artifact's rows
_LABEL_HELP = ("label column of a --data CSV (default: the one the artifact records, else "
               "'class')")


def data_options(args):
    from export.data import data_options as _opts
    return _opts(args)


def add_data_options(parser, **kw):
    from export.data import add_data_options as _add
    _add(parser, **kw)


def _cmd_campaign(args):
    if (args.param is None) != (args.grid is None):
        raise ValueError("--param and --grid go together")
    run_campaign_cli(args.artifact, args.fault, parse_sets(args.set), args.param,
                     None if args.grid is None else parse_grid(args.grid), args.trials,
                     seed=args.seed, dataset=args.data, split=args.split,
                     max_points=args.max_points, confidence=args.confidence,
                     profile=args.profile, json_path=args.json_path, plot_path=args.plot_path,
                     site=args.site, n_jobs=args.jobs, scheduler=args.scheduler,
                     quiet=args.quiet, data_options=data_options(args))


def _cmd_upsets(args):
    if args.top < 0:
        raise ValueError(f"--top must be >= 0; got {args.top}")
    arrays = None if args.arrays is None else [a.strip() for a in args.arrays.split(",")
                                                if a.strip()]
    run_upsets_cli(args.artifact, dataset=args.data, split=args.split,
                   max_points=args.max_points, arrays=arrays, checked=args.checked,
                   top=args.top, max_bits=args.max_bits, json_path=args.json_path,
                   quiet=args.quiet, data_options=data_options(args))
