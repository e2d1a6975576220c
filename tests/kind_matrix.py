"""The kind matrix (issues 24, 25): every command on every model kind, on labels users
have (strings, floats and integers that are not 0..k-1).

Digits hid the label bugs users found (its labels equal the class indices),
so every artifact here is fitted on real data whose labels are not 0..k-1,
with the label in a column not called ``class``:

* kinds that take binary two-class data (naive Bayes): UCI house votes as
  0/1 features, the party as ``"democrat"`` / ``"republican"``, as the
  integers 3 / 7 and as the floats 1.5 / 2.5;
* every other kind: UCI glass (labels 1, 2, 3, 5, 6, 7; the same as floats
  ``1.0 ...``) and UCI ecoli (8 string labels, an identifier column).

Each kind's model comes from its bridge spec's example fit
(:meth:`export.registry.KindSpec.example_fit`, one per ``example_variants``),
exported with the dataset and options it was read with. For each artifact:
the ONNX graph (when the kind has one) returns the true labels, typed as the
data's; the device's ``classes`` map its label indices to them; ``simulate``,
``campaign``, ``upsets`` and (kinds with a C runtime) ``firmware --check``
run on it from what it records, without ``--data``; ``budget --export`` on
the kind's small search space, then ``simulate`` on the export.

:class:`KindMatrix` holds the tests; ``tests/test_kind_matrix.py`` runs it on
the built-in kinds, and a test file that registers a kind runs it on its own
with ``class TestMine(KindMatrix): kinds = ("my_kind",)``.
"""

import csv
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

import firmware_sim
from edgecode.datasets import load_house_votes
from export.cli import main
from export.data import dataset_reference, load_table
from export.registry import KindSpec, kind_spec, kind_specs

DATA = Path(__file__).parent / "data"

#: label type -> (value of class 0, value of class 1) for the binary set
NB_LABELS = {"str": ("democrat", "republican"), "int": ("3", "7"), "float": ("1.5", "2.5")}
LABEL_TYPES = ("str", "int", "float")


def _write(path, header, rows):
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    return path


def multiclass_csv(folder, labels):
    """glass with labels as ints (column 'kind') or floats, or ecoli (strings, an id
    column); returns (path, options)."""
    if labels == "str":
        with open(DATA / "ecoli.csv") as fh:
            rows = list(csv.reader(fh))
        header = ["seq"] + rows[0][:-1] + ["kind"]
        body = [[f"s{i}"] + r[:-1] + [r[-1]] for i, r in enumerate(rows[1:])]
        return _write(folder / "ecoli_kind.csv", header, body), {"label": "kind",
                                                                  "ignore": ["seq"]}
    with open(DATA / "glass.csv") as fh:
        rows = list(csv.reader(fh))
    fmt = (lambda v: v) if labels == "int" else (lambda v: f"{float(v):.1f}")
    body = [r[:-1] + [fmt(r[-1])] for r in rows[1:]]
    return _write(folder / f"glass_{labels}.csv", rows[0][:-1] + ["kind"], body), \
        {"label": "kind"}


def binary_csv(folder, labels):
    """house votes, the party as ``labels``; returns (path, options)."""
    d = load_house_votes()
    zero, one = NB_LABELS[labels]
    body = [[int(v) for v in x] + [one if t else zero] for x, t in zip(d.X, d.y)]
    return _write(folder / f"votes_{labels}.csv", list(d.feature_names) + ["party"], body), \
        {"label": "party"}


def data_for(spec, folder, labels):
    """The CSV a kind's example is fitted on: multi-class unless the kind takes only
    binary two-class data. Returns (path, options)."""
    if spec.accepts(6, False):
        return multiclass_csv(folder, labels)
    return binary_csv(folder, labels)


def cli_options(options):
    """Data options as the command line's ``--label`` and ``--ignore``."""
    argv = ["--label", options["label"]]
    if options.get("ignore"):
        argv += ["--ignore", ",".join(options["ignore"])]
    return argv


def has_example(spec):
    return type(spec).example_fit is not KindSpec.example_fit


def has_c_runtime(kind):
    """The device kind ships C sources (``c_sources`` of its device class)."""
    return bool(firmware_sim.device_kinds()[kind].c_sources)


def fit_example(spec, variant, labels, folder):
    """Fit, export and write a kind's example on data with ``labels``; returns
    (artifact path, ONNX path or None, CSV path, data options)."""
    path, options = data_for(spec, folder, labels)
    table = load_table(path, **options)
    src, opts = dataset_reference(table.source, table.options)
    meta = {"dataset": src, **({"dataset_options": opts} if opts else {})}
    ex = spec.example_fit(table.X, table.y, meta=meta, variant=variant)
    art = folder / f"{spec.kind}_{variant}.edgc"
    art.write_bytes(ex.container)
    onx = None
    if ex.onnx_model is not None:
        from export.onnx_utils import save_model
        onx = folder / f"{spec.kind}_{variant}.onnx"
        save_model(ex.onnx_model, str(onx))
    return art, onx, path, options


def smallest_array(device):
    """The smallest non-empty array of the image (an upset table of it is quick)."""
    arrays = device.container.arrays
    return min((k for k, v in arrays.items() if v.size), key=lambda k: (arrays[k].nbytes, k))


class KindMatrix:
    """Every command on each kind of :attr:`kinds` x label type (subclass it as a
    ``Test...`` class).

    ``kinds``: kind names or :class:`~export.registry.KindSpec` classes (a spec a
    test module registers while its tests run); None: the kinds the ``export``
    package registers. The tests look the spec up in the registry when they run.
    """

    kinds = None

    @classmethod
    def selected(cls):
        if cls.kinds is None:
            return [s for s in kind_specs() if type(s).__module__.startswith("export.")]
        return [k() if isinstance(k, type) else k if isinstance(k, KindSpec) else kind_spec(k)
                for k in cls.kinds]

    def pytest_generate_tests(self, metafunc):
        specs = type(self).selected()
        if "case" in metafunc.fixturenames:
            labels = ("str",) if metafunc.function.__name__.startswith("test_firmware") \
                else LABEL_TYPES
            cases = [(s.kind, v, t) for s in specs if has_example(s)
                     for v in s.example_variants for t in labels]
            metafunc.parametrize("case", cases, ids=["-".join(c) for c in cases])
        elif "budget_case" in metafunc.fixturenames:
            cases = [(s.kind, t) for s in specs if s.example_space is not None
                     for t in LABEL_TYPES]
            metafunc.parametrize("budget_case", cases, ids=["-".join(c) for c in cases])

    @pytest.fixture(scope="class")
    @classmethod
    def artifacts(cls, tmp_path_factory):
        """Example artifacts, fitted once per (kind, variant, labels) on first use."""
        root, cache = tmp_path_factory.mktemp("matrix"), {}

        def get(case):
            if case not in cache:
                folder = root / "-".join(case)
                folder.mkdir()
                cache[case] = fit_example(kind_spec(case[0]), case[1], case[2], folder)
            return cache[case]
        return get

    def test_onnx_returns_the_true_labels_and_device_classes_map_them(self, artifacts, case):
        art, onx, path, options = artifacts(case)
        t = load_table(path, **options)
        dev = firmware_sim.load(art)
        classes = dev.container.meta["classes"]
        idx = np.asarray(dev.infer(dev.encode(t.X)).labels, np.int64)
        dev_labels = np.array([classes[i] for i in idx])
        acc = float(np.mean(dev_labels.astype(str) == t.y.astype(str)))
        chance = np.max(np.unique(t.y, return_counts=True)[1]) / len(t.y)
        assert acc > chance, (acc, chance)      # right labels, not indices mistaken for labels
        if onx is None:
            return
        import onnxruntime as ort
        sess = ort.InferenceSession(str(onx), providers=["CPUExecutionProvider"])
        got = sess.run(["label"], {sess.get_inputs()[0].name: t.X.astype(np.float32)})[0]
        # typed as the data's labels: numbers stay numbers
        assert (got.dtype.kind in "iuf") == (t.y.dtype.kind in "iuf"), (got.dtype, t.y.dtype)
        assert set(np.unique(got).tolist()) <= set(np.unique(t.y).tolist())
        assert np.array_equal(dev_labels, np.array([str(v) for v in got.tolist()])) or \
            np.array_equal(np.array([float(v) for v in dev_labels]), got.astype(float))

    def test_simulate_campaign_upsets_run_from_the_recorded_data(self, artifacts, case, capsys):
        art = artifacts(case)[0]
        assert main(["simulate", str(art), "--eps", "0.05", "--trials", "20"]) == 0
        out = capsys.readouterr().out
        assert "simulated same-classification rate" in out
        assert "accuracy under noise" in out or case[0] == "protected_nb"
        assert main(["campaign", str(art), "--fault", "bsc", "--param", "eps", "--grid",
                     "0.02", "--trials", "10", "--max-points", "40"]) == 0
        assert "0.02" in capsys.readouterr().out
        array = smallest_array(firmware_sim.load(art))
        assert main(["upsets", str(art), "--max-points", "10", "--top", "2", "--arrays",
                     array]) == 0
        assert "single-bit upsets" in capsys.readouterr().out

    def test_firmware_check_on_the_host(self, artifacts, case, tmp_path, capsys):
        if not has_c_runtime(case[0]):
            pytest.skip(f"{case[0]} has no C runtime")
        if shutil.which("gcc") is None and not os.environ.get("EDGECODE_CI"):
            pytest.skip("no C compiler")
        art = artifacts(case)[0]
        assert main(["firmware", str(art), "--out", str(tmp_path / "fw"), "--check",
                     "--max-points", "40"]) == 0
        out = capsys.readouterr().out
        assert "equal" in out or "match" in out or "agree" in out, out

    def test_budget_export_ships_true_labels_and_simulates(self, budget_case, tmp_path,
                                                           capsys):
        kind, labels = budget_case
        spec = kind_spec(kind)
        if not has_c_runtime(kind):
            pytest.skip(f"{kind} has no C runtime: budget --export writes firmware")
        path, options = data_for(spec, tmp_path, labels)
        space = ["--kinds", spec.cli_name]
        for opt in spec.space_options:
            if opt.cli is not None and opt.name in spec.example_space:
                space += [opt.cli, ",".join(str(v) for v in spec.example_space[opt.name])]
        best = tmp_path / "best"
        assert main(["budget", str(path), "--profile", "cortex-m4", "--eps", "0.05", "--quiet",
                     "--no-build", "--sim-samples", "2000", "--strategy", "grid",
                     "--no-baselines", "--export", str(best)]
                    + space + cli_options(options)) == 0
        capsys.readouterr()
        t = load_table(path, **options)
        meta = firmware_sim.load(best / "model.edgc").container.meta
        assert meta["classes"] and set(map(str, meta["classes"])) <= set(t.y.astype(str))
        assert json.loads(meta.get("dataset_options", "{}")).get("label") == options["label"]
        if (best / "model.onnx").exists():
            import onnxruntime as ort
            sess = ort.InferenceSession(str(best / "model.onnx"),
                                        providers=["CPUExecutionProvider"])
            got = sess.run(["label"], {sess.get_inputs()[0].name: t.X.astype(np.float32)})[0]
            assert set(np.unique(got).astype(str).tolist()) <= \
                set(np.unique(t.y).astype(str).tolist())
            acc = float(np.mean(got.astype(str) == t.y.astype(str)))
            chance = np.max(np.unique(t.y, return_counts=True)[1]) / len(t.y)
            assert acc > chance
        assert main(["simulate", str(best / "model.edgc"), "--eps", "0.05", "--trials",
                     "10"]) == 0
        assert "simulated same-classification rate" in capsys.readouterr().out
