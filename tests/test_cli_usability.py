"""The command line as a new user meets it (issue 13): help, exit status,
early checks of outputs and options, data recorded in artifacts, output text."""

import argparse
import io
from pathlib import Path

import pytest

import export.cli as cli
from export.cli import _build_parser, main, run_demo


def _subparsers():
    parser = _build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return parser, action.choices


def test_every_option_has_help_and_shows_its_default():
    parser, subs = _subparsers()
    assert "``" not in parser.format_help()
    for name, sp in subs.items():
        text = sp.format_help()
        assert "``" not in text, name                       # no reStructuredText markup
        assert sp.description, f"{name} has no description"
        for action in sp._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            opt = action.option_strings[0] if action.option_strings else action.dest
            assert action.help, f"edgecode {name} {opt} has no help text"
            default = action.default
            if default is None or default is False or action.required:
                continue
            shown = str(default)
            assert (f"(default: {shown})" in " ".join(text.split())
                    or "default" in action.help.lower()), f"edgecode {name} {opt}: default " \
                                                          f"{shown!r} not shown"


def test_one_name_per_meaning():
    """`--R` is the planner's budget rate only; the code length is `--n-columns`
    everywhere (`--columns` is accepted as an alias)."""
    _, subs = _subparsers()
    rs = [n for n, sp in subs.items() if "--R" in sp._option_string_actions]
    assert rs == ["plan"]
    for name in ("codes", "ecoc"):
        opts = subs[name]._option_string_actions
        assert "--n-columns" in opts and opts["--n-columns"] is opts["--columns"]


@pytest.mark.parametrize("argv, msg", [
    (["plan", "house_votes", "--eps", "0.7", "--R", "1"], "--eps must be in [0, 0.5)"),
    (["plan", "house_votes", "--eps", "nan", "--R", "1"], "--eps must be in [0, 0.5)"),
    (["plan", "house_votes", "--eps", "0.2", "--budget", "7"], "--budget must be even"),
    (["plan", "house_votes", "--eps", "0.1,0.2", "--R", "1"], "--eps has 2 values but the "
                                                               "data has 16 features"),
    (["plan", "house_votes", "--eps", "0.2", "--R", "1", "--alpha", "0"], "--alpha must be"),
    (["plan", "house_votes", "--eps", "0.2", "--R", "1", "--resolution", "1000"],
     "power of two"),
    (["simulate", "nosuch.edgc", "--eps", "0.2", "--data", "house_votes"], "nosuch.edgc"),
    (["ecoc", "iris", "--decoding", "loss", "--out", "x.edgc"], "cannot be exported"),
    (["hash", "digits", "--method", "lsh", "--out", "x.edgc"], "no device export"),
    (["hash", "digits", "--sigma", "-1"], "--sigma must be"),
    (["hash", "digits", "--bits", "64", "--sketch", "32"], "must be larger than --bits"),
    (["codes", "nary", "--classes", "5", "--out", "code.txt"], "--out must end in"),
])
def test_usage_errors_exit_2_with_one_error_line(argv, msg, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and msg in err and err.count("\n") == 1, err


@pytest.mark.parametrize("argv", [
    ["demo", "--trials", "0"],
    ["simulate", "a.edgc", "--eps", "0.1", "--trials", "-3"],
    ["campaign", "a.edgc", "--fault", "bsc", "--confidence", "1.5"],
    ["upsets", "a.edgc", "--top", "-1"],
    ["ecoc", "iris", "--test-size", "2"],
    ["plan", "house_votes", "--eps", "0.2"],               # neither --budget nor --R
])
def test_argument_errors_also_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert "error:" in capsys.readouterr().err


@pytest.mark.parametrize("option, target, msg", [
    ("--out", "missing_dir/hv.edgc", "no directory missing_dir"),
    ("--onnx", ".", "is a directory"),
    ("--plan-out", "missing_dir/plan.json", "no directory"),
])
def test_output_paths_are_checked_before_any_work(option, target, msg, tmp_path, monkeypatch,
                                                   capsys):
    import export.cli.naive_bayes as nb

    def boom(*a, **k):
        raise AssertionError("the plan ran before the output path was checked")

    monkeypatch.setattr(nb, "run_plan", boom)
    monkeypatch.chdir(tmp_path)
    assert main(["plan", "house_votes", "--eps", "0.2", "--R", "1", option, target]) == 2
    assert msg in capsys.readouterr().err


def test_campaign_json_path_checked_before_the_campaign(tmp_path, monkeypatch, capsys):
    import export.cli.campaign as camp

    monkeypatch.setattr(camp, "run_campaign_cli", lambda *a, **k: pytest.fail("ran"))
    assert main(["campaign", str(tmp_path / "a.edgc"), "--fault", "bsc",
                 "--json", str(tmp_path / "no" / "r.json")]) == 2
    assert "no directory" in capsys.readouterr().err


def test_a_csv_planned_artifact_runs_everywhere_without_data(tmp_path, monkeypatch, capsys):
    """The artifact records the CSV's path and options (--positive, --ignore), so
    simulate, campaign, upsets and firmware --check find the rows from any folder."""
    from edgecode import datasets
    d = datasets.load("house_votes")
    csv = tmp_path / "votes.csv"
    rows = ["id," + ",".join(f"v{j}" for j in range(4)) + ",party"]
    rows += [f"r{i}," + ",".join(str(int(v)) for v in x[:4]) + (",rep" if t else ",dem")
             for i, (x, t) in enumerate(zip(d.X, d.y))]
    csv.write_text("\n".join(rows) + "\n")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    assert main(["plan", "../votes.csv", "--eps", "0.1", "--budget", "4", "--target", "party",
                 "--positive", "rep", "--ignore", "id", "--out", "v.edgc"]) == 0
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    art = str(work / "v.edgc")
    capsys.readouterr()
    assert main(["simulate", art, "--eps", "0.1", "--trials", "20"]) == 0
    assert main(["campaign", art, "--fault", "bsc", "--trials", "20"]) == 2
    assert "bsc needs eps (a value, e.g. --set eps=..." in capsys.readouterr().err
    assert main(["campaign", art, "--fault", "bsc", "--set", "eps=0.1", "--trials", "20"]) == 0
    assert main(["upsets", art, "--top", "2"]) == 0
    out = capsys.readouterr().out
    assert "votes" in out and "error" not in out


def test_plan_output_has_plain_numbers(tmp_path, capsys):
    assert main(["plan", "house_votes", "--eps", ",".join(["0.1"] * 15 + ["0.3"]),
                 "--budget", "4"]) == 0
    out = capsys.readouterr().out
    assert "np.float64" not in out and "infx" not in out
    assert "channel eps = [0.1, 0.1," in out


def test_ecoc_binary_designs_work_with_the_default_alphabet(capsys):
    for design in ("one_vs_all", "dense_random"):
        assert main(["ecoc", "iris", "--code", design, "--trials", "1", "--eps", "0"]) == 0
        assert f"code '{design}' N=2" in capsys.readouterr().out


def test_default_demo_removes_its_temporary_folder(monkeypatch):
    import types

    seen = []

    def run_demo_stage(out_dir, trials, stream):
        (Path(out_dir) / "x.edgc").write_bytes(b"x")
        seen.append(Path(out_dir))
        return {"ok": True}

    stage = types.SimpleNamespace(__name__="export.cli.naive_bayes",
                                  run_demo_stage=run_demo_stage)
    monkeypatch.setattr(cli, "COMMAND_MODULES", (stage,))
    buf = io.StringIO()
    run_demo(None, trials=1, stream=buf)
    assert seen and not seen[0].exists()
    assert "now removed (--out DIR keeps them)" in buf.getvalue()


def test_demo_out_is_created_only_inside_an_existing_folder(tmp_path, capsys):
    assert main(["demo", "--out", str(tmp_path / "a" / "b"), "--trials", "5"]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert not (tmp_path / "a").exists()


def _imported_after(code, modules):
    """Which of ``modules`` a fresh interpreter has imported after running ``code``."""
    import subprocess
    import sys
    probe = (code + "\nimport sys\nprint(','.join(m for m in " + repr(tuple(modules))
             + " if m in sys.modules))\n")
    res = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parent.parent)
    assert res.returncode == 0, res.stderr
    return res.stdout.strip()


def test_help_and_argument_errors_import_no_heavy_library():
    """`edgecode --help` and argparse errors answer without scikit-learn, numba,
    onnx or onnxruntime (they are imported by the commands that use them)."""
    code = ("import export.cli as c\np = c._build_parser()\np.format_help()\n"
            "[s.format_help() for s in p._subparsers._group_actions[0].choices.values()]")
    heavy = _imported_after(code, ("sklearn", "numba", "onnx", "onnxruntime", "scipy"))
    assert heavy == "", f"imported for --help: {heavy}"


def test_warmup_list_resolves_without_the_heavy_libraries():
    """The background warm-up of a cold demo resolves every listed kernel and
    signature importing only numpy, numba and kernel modules."""
    code = ("from export.cli._warmup import kernel_signatures\n"
            "rows = kernel_signatures(bare_packages=True)\nassert len(rows) > 20, len(rows)")
    heavy = _imported_after(code, ("sklearn", "scipy.stats", "onnx", "onnxruntime"))
    assert heavy == "", f"imported by the warm-up: {heavy}"


def test_warmup_rows_are_checked():
    from export.cli._warmup import _signature_source, kernel_signatures, warm_up
    from firmware_sim._kernels.bits import _pack_bits
    from numba.core import types
    sig = "(Array(uint8, 2, 'C', False), Array(uint64, 2, 'C', False), )"
    (disp, args), = kernel_signatures([("firmware_sim._kernels.bits", "_pack_bits", sig, True),
                                        ("firmware_sim._kernels.bits", "_pack_bits",
                                         "(Literal[int](0), )", False)])
    assert disp is _pack_bits and args == (types.Array(types.uint8, 2, "C"),
                                           types.Array(types.uint64, 2, "C"))
    assert _signature_source(args) == sig
    with pytest.raises(LookupError, match="_gone.*--record"):
        kernel_signatures([("firmware_sim._kernels.bits", "_gone", sig, True)])
    # a signature the kernel cannot take is skipped and counted, not fatal
    assert warm_up(entries=[("firmware_sim._kernels.bits", "_pack_bits", "(float64, float64, )",
                             True)]) == 1
    with pytest.raises(NameError):          # no builtins in the signature namespace
        kernel_signatures([("firmware_sim._kernels.bits", "_pack_bits", "(open, )", True)])


def test_static_choice_names_match_their_registries():
    from edgecode import datasets
    from edgecode.ecoc import DESIGNS
    from export.cli import _names
    from export.firmware import TARGETS
    from firmware_sim.faults import FAULTS
    assert _names._generated()["DESIGNS"] == _names.DESIGNS == tuple(DESIGNS)
    # the fault models firmware_sim registers itself (tests register more at run time)
    builtin = {n for n, cls in FAULTS.items() if cls.__module__.startswith("firmware_sim.")}
    assert _names.FAULTS.names == tuple(sorted(builtin))
    assert _names.TARGETS == tuple(sorted(TARGETS))
    assert _names.BINARY_DATASETS == tuple(datasets.NAMES)


def test_fault_choices_follow_the_registry_without_importing_it():
    """`--fault` lists the built-in models while firmware_sim is not imported (fast
    --help) and accepts any fault model registered at run time."""
    code = ("from export.cli import _names\nassert list(_names.FAULTS) == "
            "list(_names.FAULTS.names)\nassert 'bsc' in _names.FAULTS")
    assert _imported_after(code, ("numba", "firmware_sim")) == ""
    code = ("from export.cli import _names\nassert 'no_such_fault' not in _names.FAULTS")
    assert "firmware_sim" in _imported_after(code, ("firmware_sim",))


def test_budget_kind_options_come_from_the_kind_specs():
    """`budget --kinds` and each kind's list options (--nb-rates, --designs, ...) are
    the registered specs' (export/kinds/), with their defaults."""
    from export._budget_space import search_kinds
    from export.registry import kind_spec
    _, subs = _subparsers()
    opts = subs["budget"]._option_string_actions
    specs = [kind_spec(k) for k in search_kinds()]
    assert opts["--kinds"].default == ",".join(s.cli_name for s in specs)
    flags = [o for s in specs for o in s.space_options if o.cli]
    assert {o.cli for o in flags} >= {"--nb-rates", "--designs", "--nary-N", "--learners",
                                      "--depths", "--ssbc-bits"}
    for o in flags:
        assert opts[o.cli].default == o.cli_default() and opts[o.cli].help == o.help
