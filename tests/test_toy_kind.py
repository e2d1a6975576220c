"""A model kind and a fault model registered from this file alone (issue 25).

The toy kind ("thermometer codes"): the host sends int16 features; the
device compares each with three stored thresholds (a thermometer code of
bits, its intermediate result) and outputs the class whose stored code is
nearest in Hamming distance. Device side: a minimal ``Device`` subclass and
its registration; bridge side: a :class:`export.registry.KindSpec` (example
fit, budget configurations, screening, fitting) registered for the module's
tests. Nothing shared is touched, and the toy gets:

* campaigns (every site) and the upset table;
* ``edgecode simulate``, ``campaign`` and ``upsets`` on its artifacts, from
  the dataset they record;
* the command line's choices: ``--fault`` takes the toy fault model,
  ``budget --kinds`` the toy kind with its own list option;
* the kind matrix of ``tests/kind_matrix.py`` (labels that are strings and
  integers not 0..k-1; its firmware and budget-export rows are skipped: it
  has no C runtime);
* ``budget``: its configurations searched, predicted by simulation.
"""

import json
from pathlib import Path

import numpy as np
import pytest

import firmware_sim
from export import registry
from export.budget import SearchSpace, search
from export.cli import main
from export.result import ExportResult
from firmware_sim import Device, Inference, register_fault, register_kind, write_container
from firmware_sim.faults import Fault
from kind_matrix import KindMatrix, multiclass_csv

KIND = "toy_thermo"


class ThermoDevice(Device):
    """Thresholds (d, L) int16 and class codes (c, d L) uint8; int16 frames."""

    kind = KIND
    kind_code = 241
    frame_dtype = np.dtype(np.int16)
    default_site = "intermediate"

    def __init__(self, container):
        self.container = container
        self.meta = container.meta
        self.center = container.require("center", np.float64, (None,))
        d = len(self.center)
        self.scale = container.require("scale", np.float64, (d,))
        self.thresholds = container.require("thresholds", np.int16, (d, None))
        self.codes = container.require("codes", np.uint8, (None, self.thresholds.size))

    @property
    def frame_width(self):
        return len(self.center)

    def encode(self, X):
        q = np.round((np.asarray(X, np.float64) - self.center) / self.scale * 256.0)
        return np.clip(q, -32768, 32767).astype(np.int16)

    def stage(self, frames):
        f = self.check_frames(frames)
        return (f[:, :, None] > self.thresholds[None]).reshape(len(f), -1).astype(np.uint8)

    def finish(self, bits):
        dist = (np.asarray(bits, np.uint8)[:, None, :] != self.codes[None]).sum(axis=2)
        return np.argmin(dist, axis=1).astype(np.int64)

    def infer(self, frames):
        bits = self.stage(frames)
        return Inference(self.finish(bits), {"code_bits": bits})

    def resources(self):
        n = int(self.thresholds.size)
        return {"kind": KIND, "flash_bytes": int(self.container.nbytes),
                "ram_bytes": 2 * self.frame_width + n,
                "ops_per_inference": {"threshold_comparisons": n,
                                      "distance_xors": n * len(self.codes),
                                      "total": n * (1 + len(self.codes))}}


def _arrays(center, scale, thresholds, codes):
    return {"center": np.asarray(center, np.float64), "scale": np.asarray(scale, np.float64),
            "thresholds": np.asarray(thresholds, np.int16), "codes": np.asarray(codes, np.uint8)}


def fit_thermo(X, y, levels=3, meta=None):
    """The toy model of (X, true labels y) as an ExportResult."""
    X = np.asarray(X, np.float64)
    classes = np.unique(y)
    center, scale = X.mean(axis=0), X.std(axis=0) + 1e-9
    q = np.round((X - center) / scale * 256.0)
    qs = np.linspace(0, 1, levels + 2)[1:-1]
    thresholds = np.quantile(q, qs, axis=0).T
    bits = (q[:, :, None] > thresholds[None]).reshape(len(X), -1)
    codes = np.array([bits[np.asarray(y) == c].mean(axis=0) >= 0.5 for c in classes])
    meta = {**(meta or {}), "classes": [c.item() if hasattr(c, "item") else c for c in classes]}
    blob = write_container(None, KIND, _arrays(center, scale, thresholds, codes), meta=meta)
    dev = firmware_sim.load(blob)
    return ExportResult(KIND, blob, None, dev, dev.resources(), len(X), None,
                        {"classes": classes})


class ThermoSpec(registry.KindSpec):
    """The toy's bridge spec: example fit, and one budget list option."""

    kind = KIND
    name = "toy"
    site_text = "toy code bits"
    space_options = (registry.SpaceOption("toy_levels", (1, 3), None, cli="--toy-levels",
                                          item=int, help="thresholds per feature (comma list)"),)
    example_space = {"toy_levels": (1,)}

    def configurations(self, space, *, n_classes, n_features, binary):
        return [{"kind": KIND, "levels": int(v)} for v in space.toy_levels]

    def label(self, config):
        return f"toy {config['levels']} levels"

    def screen(self, config, task, random_state):
        d, c, n = task.n_features, task.n_classes, task.n_features * config["levels"]
        blob = write_container(None, KIND, _arrays(np.zeros(d), np.ones(d),
                                                   np.zeros((d, config["levels"])),
                                                   np.zeros((c, n))))
        res = firmware_sim.load(blob).resources()
        return {"flash_bytes": res["flash_bytes"], "ram_bytes": res["ram_bytes"], "exact": True}

    def fit(self, config, task, *, plan_eps, random_state, screened=None):
        from export._budget_space import Fitted
        ex = fit_thermo(task.X_train, task.labels(task.y_train), config["levels"], task.meta)
        acc = float(np.mean(ex.device.labels(ex.device.encode(task.X_test)) == task.y_test))
        return Fitted(ex, task.X_test, task.y_test, acc)

    def example_fit(self, X, y, *, meta, variant="default"):
        return fit_thermo(X, y, meta=meta)


class _FlipLastBit(Fault):
    """A toy fault model: flips the last bit of every row with probability p."""

    name = "toy_last_bit"

    def __init__(self, p):
        self.p = float(p)

    def params(self):
        return {"p": self.p}

    def apply_inplace(self, bits, rng):
        bits[:, -1] ^= (rng.random(bits.shape[0]) < self.p).astype(np.uint8)


def _register_device(cls):
    """``register_kind(cls)`` (the kind and code on the class), or the older
    ``register_kind(name, code, cls)``."""
    try:
        return register_kind(cls)
    except TypeError:
        return register_kind(cls.kind, cls.kind_code, cls)


_register_device(ThermoDevice)
register_fault(_FlipLastBit)


@pytest.fixture(autouse=True)
def thermo_spec(monkeypatch):
    """The toy's bridge spec, registered for each test of this module only (so the
    default search space of other tests does not grow)."""
    monkeypatch.setattr(registry, "_SPECS", dict(registry._SPECS))
    return registry.register_kind_spec(ThermoSpec)


@pytest.fixture(scope="module")
def artifact(tmp_path_factory):
    folder = tmp_path_factory.mktemp("toy")
    path, options = multiclass_csv(folder, "int")
    from export.data import dataset_reference, load_table
    t = load_table(path, **options)
    src, opts = dataset_reference(t.source, t.options)
    art = folder / "toy.edgc"
    art.write_bytes(fit_thermo(t.X, t.y, meta={"dataset": src, "dataset_options": opts})
                    .container)
    return art, t


def test_campaigns_at_every_site_and_the_upset_table(artifact):
    from firmware_sim.campaign import run_campaign
    from firmware_sim.faults import BSC, ParameterUpset
    from firmware_sim.sensitivity import single_upset_table

    art, t = artifact
    dev = firmware_sim.load(art)
    y = np.searchsorted(np.unique(t.y), t.y)
    clean = float(np.mean(dev.labels(dev.encode(t.X)) == y))
    assert clean > np.bincount(y).max() / len(y)
    for site in ("wire", "intermediate"):
        res = run_campaign(dev, t.X, BSC(0.05), n_trials=20, random_state=0, y=y, site=site)
        assert 0.3 < res.points[0].same_rate < 1.0, site
    res = run_campaign(dev, t.X[:20], ParameterUpset(count=1, arrays=["thresholds"]),
                       n_trials=10, random_state=0)
    assert res.points[0].same_rate <= 1.0
    tab = single_upset_table(dev, t.X[:10], arrays=["codes"])
    assert tab.n_bits == 8 * dev.codes.nbytes


def test_simulate_campaign_upsets_and_the_fault_choice_on_the_command_line(artifact, capsys):
    art = str(artifact[0])
    assert main(["simulate", art, "--eps", "0.05", "--trials", "10"]) == 0
    out = capsys.readouterr().out
    assert f"{KIND} on glass_int.csv" in out and "accuracy under noise" in out
    # the toy fault model, registered at run time, is a --fault choice
    assert main(["campaign", art, "--fault", "toy_last_bit", "--set", "p=0.5", "--trials", "10",
                 "--site", "wire", "--max-points", "30"]) == 0
    out = capsys.readouterr().out
    assert "toy_last_bit" in out or "_FlipLastBit" in out
    assert "no closed form for toy_thermo devices" in out
    assert main(["upsets", art, "--arrays", "codes", "--max-points", "10", "--top", "1"]) == 0
    assert "single-bit upsets" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["campaign", art, "--fault", "no_such_fault"])
    assert "invalid choice: 'no_such_fault'" in capsys.readouterr().err


def test_budget_searches_the_toy_kind(artifact, tmp_path, capsys):
    path = artifact[1].source
    res = search(path, "cortex-m4", 0.05, space=SearchSpace(kinds=(KIND,), toy_levels=(1, 3)),
                 data_options={"label": "kind"}, sim_samples=2000, strategy="grid",
                 baselines=False)
    assert [e["label"] for e in res.entries] == ["toy 1 levels", "toy 3 levels"]
    assert all(e["accuracy_source"] == "simulated" for e in res.entries)
    assert "no closed form for toy_thermo" in res.entries[0]["predicted_method"]
    assert "the compute site" in res.settings["site_label"]   # one site for every kind
    if _has_matplotlib():                    # its points get the default marker
        assert Path(res.plot(tmp_path / "front.png")).stat().st_size > 0
    # the command line: --kinds takes its short name, --toy-levels is its list option
    out = tmp_path / "front.json"
    assert main(["budget", path, "--label", "kind", "--profile", "cortex-m4", "--eps", "0.05",
                 "--kinds", "toy", "--toy-levels", "2", "--quiet", "--no-build",
                 "--strategy", "grid", "--no-baselines",
                 "--sim-samples", "1000", "--json", str(out)]) == 0
    d = json.loads(out.read_text())
    assert [e["label"] for e in d["search"]["evaluated"]] == ["toy 2 levels"]
    assert main(["budget", path, "--label", "kind", "--profile", "cortex-m4", "--eps", "0.05",
                 "--kinds", "toy", "--toy-levels", "x"]) == 2
    assert "--toy-levels must be a comma list of int values" in capsys.readouterr().err


def _has_matplotlib():
    import importlib.util
    return importlib.util.find_spec("matplotlib") is not None


class TestToyKindMatrix(KindMatrix):
    """The kind matrix of every built-in kind, on the toy."""

    kinds = (ThermoSpec,)


def test_a_kind_with_rows_only_and_registry_errors(monkeypatch):
    """``register_rows`` is the shortcut for a kind whose only bridge need is the
    command line's rows; clashes and unknown kinds are refused by name."""
    def rows(container, dataset, split, **options):
        return np.zeros((1, 1)), None, "rows"

    assert registry.register_rows("toy_rows_only", rows)(None, "x", "all")[2] == "rows"
    assert registry.kind_rows("toy_rows_only")(None, "x", "all")[2] == "rows"
    assert "toy_rows_only" not in SearchSpace().kinds        # yields no configurations
    with pytest.raises(ValueError, match="already has the bridge spec"):
        registry.register_rows(KIND, rows)
    with pytest.raises(ValueError, match="short name 'toy' of kind 'other' clashes"):
        registry.register_kind_spec(type("Other", (registry.KindSpec,),
                                         {"kind": "other", "name": "toy"}))
    assert registry.register_kind_spec(ThermoSpec) is registry.kind_spec("toy")   # no-op
    with pytest.raises(ValueError, match="no data rows for 'nowhere' artifacts"):
        registry.kind_rows("nowhere")
