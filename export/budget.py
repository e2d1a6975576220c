"""Redundancy budgeting across model kinds: which model to ship for a device and a noise.

:func:`search` answers "given this device profile and this noise, which
model should I ship?". It tries every registered model kind's
configurations (:class:`~export._budget_space.SearchSpace`; the built-in
kinds in ``export/kinds/``: naive Bayes with uniform and greedy repetition
plans on binary features, ECOC ensembles over designs x code lengths x
linear or depth-limited tree learners, SSBC k-NN codes), and for each
configuration that can fit:

1. **screens** it before training: a lower bound of its flash and RAM from
   the container it would become (placeholder arrays of the right shapes)
   plus the C runtime of its kind; over the profile or ``max_flash``, it is
   pruned untrained;
2. trains it on the training rows, exports it (container and ONNX) and
   measures **flash and RAM** (a real firmware build with ``build=True``,
   else the device's resources plus the profile's runtime bytes: the
   ``memory_source`` says which), **cycles and energy** per inference (the
   profile's cost model), the **clean accuracy** of the device (fixed point)
   on the test rows, and the **predicted accuracy** under the fault where a
   closed form exists (the kind's :meth:`~export.registry.KindSpec.analytic`,
   :mod:`export.analytics`: exact SCP of protected naive Bayes, certified
   bounds above 24 features; exact decoding probabilities of ECOC learner
   outputs up to ``N^L <= 2^22``; the single-upset table for ``seu``);
3. **simulates** a short campaign (:func:`firmware_sim.campaign.run_campaign`,
   99% Wilson interval): every configuration without a prediction, and the
   points of the front (``simulate="front"``, the default: the analytics
   screen the rest, which are not simulated) or every configuration
   (``simulate="all"``).

The search is a pipeline of short stages over one :class:`SearchOptions`:
check the options, load the task, list the configurations, screen them,
train and measure what survives, then the front.

A configuration's **accuracy under noise** is its predicted accuracy when
one exists, else its simulated accuracy. The **Pareto front** is made of
the configurations that fit the profile and the limits and that no other
one dominates, where ``a`` dominates ``b`` when ``a`` is at least as
accurate under noise and needs no more flash, and is strictly better in one
of the two, or ties on both and needs less RAM (:func:`dominates`;
``ram_objective=True`` makes RAM a third objective instead); points equal
in all three keep the one with fewer cycles (then the earlier in search
order). The
**recommended** point is the most accurate under noise among them (ties: less
flash, then less RAM, then fewer cycles).

Noise: ``eps`` is the fault's per-bit rate at each kind's own site
(``site="default"``, the device's ``default_site``): the repeated feature
bits on the wire for naive Bayes, the learner outputs for ECOC (an N-ary
output is replaced by a uniformly random other symbol), the code bits for
SSBC; ``site="wire"`` puts every kind's noise on its wire frames (int16
features for ECOC and SSBC, where no closed form exists).
"""

import json
import math
import os
import tempfile
import time
import warnings
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Optional

import numpy as np

from ._budget_space import (SearchSpace, Task, config_label, configurations, fit_config,
                            load_task, screen)
from .registry import KindSpec, find_kind_spec, kind_specs

__all__ = ["search", "SearchOptions", "BudgetResult", "SearchSpace", "dominates",
           "pareto_front", "make_budget_fault", "FAULT_RATE_PARAM", "DEFAULT_SIM_SAMPLES",
           "AUTO_BUILD_MAX", "PROFILE_TARGETS", "ENTRY_KEYS"]

#: (point, trial) pairs of a bit-fault campaign (trials = this / test rows).
DEFAULT_SIM_SAMPLES = 100_000
#: ``build="auto"`` builds real firmware when a toolchain is present and at
#: most this many configurations survive screening (about 1 s per build).
AUTO_BUILD_MAX = 8
#: Fault model -> how ``eps`` sets it: (parameter, factor).
FAULT_RATE_PARAM = {"bsc": ("eps", 1.0), "burst": ("flip_rate", 1.0), "stuck": ("rate", 2.0),
                    "seu": ("rate", 1.0)}
#: Built-in profile -> firmware target of :mod:`export.firmware`.
PROFILE_TARGETS = {"cortex-m0": "cortex-m0plus", "cortex-m4": "cortex-m4"}
#: Keys of every front entry (the issue's schema, then what the search adds).
ENTRY_KEYS = ("config", "flash_bytes", "ram_bytes", "cycles", "energy_nj", "clean_accuracy",
              "predicted_accuracy", "simulated_accuracy", "simulated_ci")


# --------------------------------------------------------------------------
# faults
# --------------------------------------------------------------------------
#: Widest certified accuracy interval of the single-upset table (``seu``)
#: taken as a prediction (its midpoint); wider, the entry is simulated only.
UPSET_MAX_WIDTH = 0.01


def make_budget_fault(name, eps, params=None):
    """The fault model a search uses: ``name`` at rate ``eps``.

    ``bsc``: every bit flips with ``eps``; ``burst``: Gilbert-Elliott bursts
    of mean flip rate ``eps`` (mean burst 4 unless ``params`` say
    ``mean_burst``); ``stuck``: each line stuck at a random value with
    probability ``2 eps`` (so ``eps`` of the bits are wrong); ``seu``: each
    stored bit of the image upset with probability ``eps``.

    Examples
    --------
    >>> make_budget_fault("bsc", 0.05).eps
    0.05
    >>> round(make_budget_fault("burst", 0.05).mean_flip_rate, 6)
    0.05
    """
    from firmware_sim.faults import FAULTS, make_fault

    if name not in FAULT_RATE_PARAM:
        raise ValueError(f"fault must be one of {sorted(FAULT_RATE_PARAM)}; got {name!r}")
    _check_eps(eps)
    key, factor = FAULT_RATE_PARAM[name]
    p = dict(params or {})
    if key in p:
        raise ValueError(f"fault parameter {key!r} is set by eps; leave it out of the fault "
                         "parameters")
    p[key] = float(eps) * factor
    return make_fault(name, **FAULTS[name].default_params(p))


def _check_eps(eps):
    try:
        e = float(eps)
    except (TypeError, ValueError):
        raise ValueError(f"eps must be a number in [0, 0.5); got {eps!r}") from None
    if not (math.isfinite(e) and 0.0 <= e < 0.5):
        raise ValueError(f"eps must be in [0, 0.5) (a flip probability; 0.5 carries no "
                         f"information); got {eps!r}")
    return e


def _wire_eps(fault, eps):
    """Per-bit wire error the greedy plan is made for."""
    from export._closed_forms import independent_eps, mean_flip_rate
    e = independent_eps(fault)
    if e is None:
        e = mean_flip_rate(fault)
    return float(eps if e is None or not e < 0.5 else e)


# --------------------------------------------------------------------------
# the front
# --------------------------------------------------------------------------
def dominates(a, b, ram=False):
    """True when entry ``a`` dominates entry ``b``.

    Two objectives by default: ``a`` is at least as accurate under noise and
    needs no more flash, and is strictly better in one of them, or equal in
    both and needs less RAM (RAM breaks ties). With ``ram=True`` RAM is a
    third objective: at least as good in all three, strictly better in one.

    Entries are dicts with ``accuracy_under_noise``, ``flash_bytes`` and
    ``ram_bytes``.

    Examples
    --------
    >>> a = {"accuracy_under_noise": 0.9, "flash_bytes": 100, "ram_bytes": 10}
    >>> b = {"accuracy_under_noise": 0.9, "flash_bytes": 120, "ram_bytes": 8}
    >>> dominates(a, b), dominates(b, a), dominates(a, a), dominates(a, b, ram=True)
    (True, False, False, False)
    """
    acc_a, acc_b = a["accuracy_under_noise"], b["accuracy_under_noise"]
    fa, fb, ra, rb = a["flash_bytes"], b["flash_bytes"], a["ram_bytes"], b["ram_bytes"]
    if ram:
        return bool(acc_a >= acc_b and fa <= fb and ra <= rb
                    and (acc_a > acc_b or fa < fb or ra < rb))
    if acc_a >= acc_b and fa <= fb and (acc_a > acc_b or fa < fb):
        return True
    return bool(acc_a == acc_b and fa == fb and ra < rb)


def pareto_front(entries, ram=False):
    """Indices of the non-dominated entries (:func:`dominates`), by flash, then RAM,
    then accuracy (descending).

    Entries equal in accuracy, flash and RAM keep the one with fewer
    ``cycles`` (then the first).

    Examples
    --------
    >>> pts = [(0.80, 100, 10), (0.90, 200, 10), (0.85, 300, 10), (0.90, 200, 8),
    ...        (0.95, 400, 50), (0.95, 500, 5)]
    >>> e = [{"accuracy_under_noise": a, "flash_bytes": f, "ram_bytes": r, "cycles": 1}
    ...      for a, f, r in pts]
    >>> pareto_front(e), pareto_front(e, ram=True)
    ([0, 3, 4], [0, 3, 4, 5])
    """
    front = []
    for i, b in enumerate(entries):
        beaten = False
        for j, a in enumerate(entries):
            if j == i:
                continue
            if dominates(a, b, ram):
                beaten = True
                break
            same = (a["accuracy_under_noise"] == b["accuracy_under_noise"]
                    and a["flash_bytes"] == b["flash_bytes"] and a["ram_bytes"] == b["ram_bytes"])
            if same and (a.get("cycles", 0), j) < (b.get("cycles", 0), i):
                beaten = True
                break
        if not beaten:
            front.append(i)
    return sorted(front, key=lambda i: (entries[i]["flash_bytes"], entries[i]["ram_bytes"],
                                        -entries[i]["accuracy_under_noise"]))


def _recommend(entries, front):
    """Position in ``front`` of the most accurate point (ties: flash, RAM, cycles)."""
    return min(range(len(front)), key=lambda k: (-entries[front[k]]["accuracy_under_noise"],
                                                 entries[front[k]]["flash_bytes"],
                                                 entries[front[k]]["ram_bytes"],
                                                 entries[front[k]].get("cycles", 0)))


# --------------------------------------------------------------------------
# the result
# --------------------------------------------------------------------------
@dataclass
class BudgetResult:
    """What :func:`search` found.

    Attributes
    ----------
    entries : list of dict
        Every configuration trained and measured (keys :data:`ENTRY_KEYS`
        plus ``label``, ``kind``, ``memory_source``, ``predicted_method``,
        ``accuracy_under_noise``, ``accuracy_source``, ``meets_limits``).
    front : list of int
        Indices into ``entries`` of the Pareto front, by flash.
    recommended_index : int
        Position in :attr:`pareto` of the recommended point.
    pruned : list of dict
        Configurations left out for size (``stage`` ``"screening"``: before
        training, from a lower bound; ``"measured"``: after training) with
        the reason.
    skipped : list of dict
        Configurations that cannot be built (the reason).
    settings : dict
        Data, profile, noise, limits, memory source, time spent, and whether
        the time limit stopped the search (``stopped_early``,
        ``not_evaluated``).
    """

    entries: list
    front: list
    recommended_index: int
    pruned: list = field(default_factory=list)
    skipped: list = field(default_factory=list)
    settings: dict = field(default_factory=dict)
    _fitted: dict = field(default_factory=dict, repr=False)

    @property
    def pareto(self):
        """The front's entries, by flash."""
        return [self.entries[i] for i in self.front]

    @property
    def recommended(self):
        """The recommended entry (most accurate under noise within the limits)."""
        return self.entries[self.front[self.recommended_index]]

    def to_dict(self):
        """``{"pareto": [...], "recommended": index, "search": {...}}`` (JSON-ready).

        ``pareto`` entries carry the issue's keys (:data:`ENTRY_KEYS`) plus
        ``label``, ``memory_source``, ``predicted_method``,
        ``accuracy_under_noise`` and ``accuracy_source``; ``search`` holds
        the settings, every evaluated entry, the pruned and skipped
        configurations.
        """
        return _jsonable({"pareto": self.pareto, "recommended": self.recommended_index,
                          "search": {**self.settings, "evaluated": self.entries,
                                     "pruned": self.pruned, "skipped": self.skipped}})

    def to_json(self, path=None, *, indent=1):
        """The report as JSON text; written to ``path`` too when given."""
        text = json.dumps(self.to_dict(), indent=indent, allow_nan=False)
        if path is not None:
            Path(path).write_text(text + "\n", encoding="utf-8")
        return text

    def table(self):
        """The front as text, one line per point, the recommended one marked ``*``."""
        s = self.settings
        lines = [f"Pareto front on {s['data']} ({s['n_train']} train / {s['n_test']} test rows),"
                 f" profile {s['profile']}, {s['fault_label']} at {s['site_label']}; memory "
                 f"from {s['memory_source']}"]
        head = (f"  {'configuration':<34} {'flash B':>8} {'RAM B':>6} {'cycles':>8} "
                f"{'nJ':>8} {'clean':>6} {'predicted':>9} {'simulated [99% CI]':>24}")
        lines.append(head)
        for k, e in enumerate(self.pareto):
            mark = "*" if k == self.recommended_index else " "
            pred = "-" if e["predicted_accuracy"] is None else f"{e['predicted_accuracy']:.4f}"
            if e["simulated_accuracy"] is None:
                sim = "not simulated"
            else:
                lo, hi = e["simulated_ci"]
                sim = f"{e['simulated_accuracy']:.4f} [{lo:.4f}, {hi:.4f}]"
            lines.append(f"{mark} {e['label']:<34} {e['flash_bytes']:>8} {e['ram_bytes']:>6} "
                         f"{e['cycles']:>8.0f} {e['energy_nj']:>8.1f} {e['clean_accuracy']:>6.4f} "
                         f"{pred:>9} {sim:>24}")
        r = self.recommended
        why = (f"recommended (*): {r['label']}, accuracy under noise "
               f"{r['accuracy_under_noise']:.4f} ({r['accuracy_source']}), {r['flash_bytes']} B "
               f"flash, {r['ram_bytes']} B RAM")
        lines.append(why)
        lines.append(f"searched {len(self.entries)} configurations in {s['elapsed_s']:.1f}s "
                     f"({s['n_pruned_screening']} pruned before training, "
                     f"{s['n_pruned_measured']} too large once trained, {len(self.skipped)} "
                     f"not buildable, {s['n_simulated']} simulated"
                     + (f"; time limit reached, {s['not_evaluated']} not evaluated"
                        if s["stopped_early"] else "") + ")")
        return "\n".join(lines)

    def export(self, out_dir, *, target=None, build=False):
        """Write the recommended model: ``model.edgc`` (container), ``model.onnx``,
        ``firmware/`` (C99 sources for ``target``, by default the profile's, and
        with ``build`` and a toolchain, compiled) and ``recommended.json``.

        Returns
        -------
        dict
            The paths written (and ``build``: real flash and RAM when built).
        """
        from export.firmware import build_firmware, toolchain_missing, write_firmware
        from export.onnx_utils import save_model

        fitted = self._fitted.get(self.front[self.recommended_index])
        if fitted is None:
            raise ValueError("the recommended model is not held by this result (a result read "
                             "back from JSON cannot export; run the search again)")
        out = Path(out_dir)
        out.mkdir(exist_ok=True)
        target = target or self.settings.get("target") or "host"
        paths = {"container": out / "model.edgc", "onnx": out / "model.onnx",
                 "firmware": out / "firmware", "report": out / "recommended.json"}
        paths["container"].write_bytes(fitted.export.container)
        save_model(fitted.export.onnx_model, str(paths["onnx"]))
        write_firmware(fitted.export.container, paths["firmware"], target)
        info = {k: str(v) for k, v in paths.items()}
        if build and not toolchain_missing(target):
            b = build_firmware(paths["firmware"], target, jobs=1)
            info["build"] = {"target": target, "flash_bytes": b.flash_bytes,
                             "ram_bytes": b.ram_bytes}
        paths["report"].write_text(json.dumps(_jsonable({"recommended": self.recommended,
                                                         "settings": self.settings,
                                                         "firmware_target": target, **(
                                                             {"build": info["build"]}
                                                             if "build" in info else {})}),
                                              indent=1) + "\n", encoding="utf-8")
        return info

    def plot(self, path, *, title=None):
        """PNG of accuracy under noise against flash: every evaluated configuration
        (by kind), the front (line, simulated 99% intervals as error bars) and the
        recommended point (star). Needs matplotlib (the ``plot`` extra)."""
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError as exc:
            raise ImportError("plots need matplotlib: pip install 'edgecode[plot]'") from exc
        fig, ax = plt.subplots(figsize=(7, 4.5))
        kinds = dict.fromkeys([s.kind for s in kind_specs()] + [e["kind"] for e in self.entries])
        for kind in kinds:
            pts = [e for e in self.entries if e["kind"] == kind]
            if pts:
                spec = find_kind_spec(kind)
                ax.scatter([e["flash_bytes"] for e in pts],
                           [e["accuracy_under_noise"] for e in pts], s=14, alpha=0.45,
                           marker=KindSpec.marker if spec is None else spec.marker, label=kind)
        fr = self.pareto
        ax.step([e["flash_bytes"] for e in fr], [e["accuracy_under_noise"] for e in fr],
                where="post", color="k", lw=1, label="Pareto front")
        for e in fr:
            if e["simulated_ci"] is not None:
                lo, hi = e["simulated_ci"]
                ax.errorbar([e["flash_bytes"]], [e["simulated_accuracy"]],
                            yerr=[[e["simulated_accuracy"] - lo], [hi - e["simulated_accuracy"]]],
                            color="C3", capsize=2, lw=1)
        r = self.recommended
        ax.scatter([r["flash_bytes"]], [r["accuracy_under_noise"]], marker="*", s=180,
                   color="C3", zorder=5, label=f"recommended: {r['label']}")
        s = self.settings
        ax.set_xscale("log")
        ax.set_xlabel(f"flash (bytes, {s['memory_source']}; profile {s['profile']})")
        ax.set_ylabel("accuracy under noise")
        ax.set_title(title or f"{s['data']}: {s['fault_label']}", fontsize=10)
        ax.legend(fontsize=7, loc="lower right")
        ax.grid(alpha=0.3)
        fig.tight_layout()
        fig.savefig(path, dpi=120)
        plt.close(fig)
        return path


def _jsonable(obj):
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _jsonable(obj.tolist())
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating,)):
        return float(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


# --------------------------------------------------------------------------
# measuring
# --------------------------------------------------------------------------
def _target_for(profile, profile_arg):
    if profile.name in PROFILE_TARGETS:
        return PROFILE_TARGETS[profile.name]
    if isinstance(profile_arg, (str, os.PathLike)) and str(profile_arg).endswith(".json"):
        try:
            base = json.loads(Path(profile_arg).read_text(encoding="utf-8")).get("base",
                                                                                  "cortex-m0")
            return PROFILE_TARGETS.get(base)
        except (OSError, ValueError, AttributeError):
            return None
    return None


def _memory(export_result, profile, build_target):
    """(flash, RAM, source) of the whole firmware: built, or image + runtime."""
    res = export_result.resources
    if build_target is not None:
        from export.firmware import build_firmware, write_firmware
        with tempfile.TemporaryDirectory(prefix="edgecode-budget-") as d:
            write_firmware(export_result.container, d, build_target)
            b = build_firmware(d, build_target, jobs=1)
        return int(b.flash_bytes), int(b.ram_bytes), "build"
    rt_flash, rt_ram = profile.runtime_bytes(res.get("kind"))
    return int(res["flash_bytes"]) + rt_flash, int(res["ram_bytes"]) + rt_ram, "profile"


def _wide_arrays(profile, container):
    """Names of the integer arrays wider than the profile's native widths."""
    return sorted(name for name, a in container.arrays.items()
                  if a.dtype.kind in "iu" and a.dtype.itemsize * 8 not in profile.int_widths)


def _predict(device, X, y, fault, site):
    """(accuracy or None, method or reason) from the closed forms: the single-upset
    table for image faults, else the kind's own (:meth:`KindSpec.analytic`)."""
    from export._closed_forms import analytic_upsets

    site = device.default_site if site is None else site
    spec = None
    if fault.target in ("image", "mixed"):
        a = analytic_upsets(device, X, fault, y)
        lo_hi = a.get("accuracy_interval")
        if a.get("available") and lo_hi is not None and lo_hi[1] - lo_hi[0] > UPSET_MAX_WIDTH:
            return None, (f"upsets: two or more per image with probability "
                          f"{a.get('p_more_than_one_upset', lo_hi[1] - lo_hi[0]):.3g}, so the "
                          f"certified interval [{lo_hi[0]:.4f}, {lo_hi[1]:.4f}] is wider than "
                          f"{UPSET_MAX_WIDTH} (simulated only)")
    else:
        spec = find_kind_spec(device.kind)
        if spec is None:
            return None, f"no closed form: the bridge knows no kind {device.kind!r}"
        a = spec.analytic(device, X, fault, y, site=site)
    if a.get("available") and a.get("accuracy") is not None:
        method = a.get("method", "exact")
        return float(a["accuracy"]), method if spec is None else spec.describe_method(method)
    return None, a.get("reason", "no closed form")


def _simulate(fitted, fault, site, samples, confidence, random_state):
    from firmware_sim.campaign import run_campaign
    n = len(fitted.X_device)
    trials = max(10, math.ceil(samples / n))
    if fault.target in ("image", "mixed"):
        trials = max(20, min(1000, trials))
    res = run_campaign(fitted.export.device, fitted.X_device, fault, n_trials=trials,
                       random_state=random_state, y=fitted.y_device, site=site, confidence=confidence)
    p = res.points[0]
    return float(p.accuracy), [float(p.accuracy_ci[0]), float(p.accuracy_ci[1])], trials


# --------------------------------------------------------------------------
# the options
# --------------------------------------------------------------------------
@dataclass
class SearchOptions:
    """Every setting of :func:`search` but the data (its keyword arguments).

    Attributes
    ----------
    profile : str, path or DeviceProfile
        ``"cortex-m0"``, ``"cortex-m4"`` or a JSON/TOML profile file
        (:func:`firmware_sim.profiles.load_profile`).
    eps : float in [0, 1/2)
        The fault's rate (:func:`make_budget_fault`).
    fault : {"bsc", "burst", "stuck", "seu"}
    fault_params : dict, optional
        More parameters of the fault (e.g. ``{"mean_burst": 8}``).
    site : {"default", "wire", "intermediate"}
        Where bit faults act: each kind's own site, or the same for all.
    max_flash : int, optional
        Flash limit in bytes (besides the profile's).
    min_accuracy : float in [0, 1], optional
        Configurations less accurate under noise are left out of the front.
    space : SearchSpace or dict, optional
        What to try (default :class:`SearchSpace`).
    budget_s : float, optional
        Stop training new configurations after this many seconds (the
        front's simulations run after).
    build : bool or "auto"
        Real firmware builds for flash and RAM (``True``; about 1 s per
        configuration; needs the target's toolchain), the profile estimate
        (``False``), or builds when a toolchain is present and at most
        :data:`AUTO_BUILD_MAX` configurations survive screening.
    simulate : {"front", "all"}
        Which predicted configurations are simulated too.
    sim_samples : int
        (point, trial) pairs per bit-fault campaign.
    confidence : float
        Level of the simulated intervals.
    random_state : int
        Split, codes, learners, plans and campaigns.
    test_size : float
        Held-out fraction when the data has no train/test split.
    max_points : int, optional
        At most this many test rows.
    enforce_int_widths : bool, default=True
        Refuse containers with integer arrays of a width the profile's
        ``int_widths`` lacks (:func:`firmware_sim.profiles.check_fits` with
        the container). The built-in Cortex-M profiles take 8 to 64 bits (64
        as two-word operations); False only lists such arrays under
        ``wide_integer_arrays``.
    ram_objective : bool
        RAM as a third objective of the front (default: it only breaks ties
        of accuracy and flash; :func:`dominates`).
    progress : callable, True, a text stream or None
        ``progress(done, total, text)`` after each configuration (an
        :class:`export.progress.Progress`; its ``note`` gets the screening
        summary). True or a stream: a :class:`~export.progress.Progress`
        writing one line per configuration there (True: stderr).
    data_options : dict, optional
        ``label``, ``ignore``, ``positive`` of a CSV (the command line's
        ``--label``, ``--ignore``, ``--positive``; :func:`export.data.load_table`).
    """

    profile: Any = "cortex-m0"
    eps: float = 0.05
    fault: str = "bsc"
    fault_params: Optional[dict] = None
    site: str = "default"
    max_flash: Optional[int] = None
    min_accuracy: Optional[float] = None
    space: Any = None
    budget_s: Optional[float] = None
    build: Any = False
    simulate: str = "front"
    sim_samples: int = DEFAULT_SIM_SAMPLES
    confidence: float = 0.99
    random_state: int = 0
    test_size: float = 0.3
    max_points: Optional[int] = None
    enforce_int_widths: bool = True
    ram_objective: bool = False
    progress: Any = None
    data_options: Optional[dict] = None

    def checked(self):
        """A copy with ``eps`` as a float and ``space`` as a :class:`SearchSpace`;
        ``ValueError``/``TypeError`` naming the first bad option."""
        eps = _check_eps(self.eps)
        if self.site not in ("default", "wire", "intermediate"):
            raise ValueError(f"site must be 'default', 'wire' or 'intermediate'; got "
                             f"{self.site!r}")
        mf = self.max_flash
        if mf is not None and (isinstance(mf, bool) or int(mf) != mf or mf < 1):
            raise ValueError(f"max_flash must be a positive number of bytes; got {mf!r}")
        if self.min_accuracy is not None and not 0.0 <= float(self.min_accuracy) <= 1.0:
            raise ValueError(f"min_accuracy must be in [0, 1]; got {self.min_accuracy!r}")
        if self.budget_s is not None and not float(self.budget_s) > 0:
            raise ValueError(f"budget_s must be > 0 seconds; got {self.budget_s!r}")
        if self.simulate not in ("front", "all"):
            raise ValueError(f"simulate must be 'front' or 'all'; got {self.simulate!r}")
        if self.build not in (True, False, "auto"):
            raise ValueError(f"build must be True, False or 'auto'; got {self.build!r}")
        if int(self.sim_samples) < 1:
            raise ValueError(f"sim_samples must be >= 1; got {self.sim_samples!r}")
        space = self.space
        if space is None:
            space = SearchSpace()
        elif isinstance(space, dict):
            space = SearchSpace.from_dict(space)
        elif not isinstance(space, SearchSpace):
            raise TypeError(f"space must be a SearchSpace or a dict; got {type(space).__name__}")
        return replace(self, eps=eps, space=space)


def _options(profile, eps, options, kwargs):
    """One SearchOptions from ``search``'s arguments (``seed`` is the deprecated
    name of ``random_state``)."""
    if "seed" in kwargs:
        seed = kwargs.pop("seed")
        warnings.warn("search(seed=...) is deprecated; use random_state= (the project's name "
                      "for a seed)", FutureWarning, stacklevel=3)
        if "random_state" in kwargs and kwargs["random_state"] != seed:
            raise TypeError("search got both seed and random_state; use random_state")
        kwargs["random_state"] = seed
    known = {f.name for f in fields(SearchOptions)}
    unknown = sorted(set(kwargs) - known)
    if unknown:
        raise TypeError(f"search got unknown option(s) {unknown}; known: {sorted(known)}")
    base = options if options is not None else SearchOptions()
    if not isinstance(base, SearchOptions):
        raise TypeError(f"options must be a SearchOptions; got {type(base).__name__}")
    if profile is not None:
        kwargs["profile"] = profile
    if eps is not None:
        kwargs["eps"] = eps
    return replace(base, **kwargs).checked()


def _reporter(progress):
    """The ``progress(done, total, text)`` callable of a search (None: silent)."""
    if progress is None or progress is False:
        return lambda *a: None
    if callable(progress):
        return progress
    from export.progress import Progress
    import sys
    return Progress("budget", stream=sys.stderr if progress is True else progress, every=0.0)


def _note(progress, text):
    note = getattr(progress, "note", None)
    if note is not None:
        note(text)


# --------------------------------------------------------------------------
# the stages of a search
# --------------------------------------------------------------------------
@dataclass
class _Run:
    """A search in progress: its options, what they resolve to, and what each stage found."""

    opts: SearchOptions
    profile: Any
    fault: Any
    target: Optional[str]
    build_target: Optional[str]
    progress: Any
    t_start: float
    task: Optional[Task] = None
    configs: list = field(default_factory=list)
    skipped: list = field(default_factory=list)
    pruned: list = field(default_factory=list)
    entries: list = field(default_factory=list)
    fitted: dict = field(default_factory=dict)
    n_simulated: int = 0
    stopped: bool = False
    not_evaluated: int = 0

    @property
    def flash_limit(self):
        mf = self.opts.max_flash
        return self.profile.flash_bytes if mf is None else min(self.profile.flash_bytes, int(mf))

    def elapsed(self):
        return time.perf_counter() - self.t_start


def _start(opts):
    """Resolve the profile, the fault, the firmware target and the reporter."""
    from firmware_sim.profiles import get_profile

    t_start = time.perf_counter()
    prof = get_profile(opts.profile)
    flt = make_budget_fault(opts.fault, opts.eps, opts.fault_params)
    target = _target_for(prof, opts.profile)
    build_target = None
    if opts.build is True:
        from export.firmware import toolchain_missing
        if target is None:
            raise ValueError(f"build: no firmware target for profile {prof.name!r} (built-in "
                             f"profiles {sorted(PROFILE_TARGETS)}, or a JSON file with a "
                             "'base')")
        missing = toolchain_missing(target)
        if missing:
            raise ValueError(f"build: cannot build for {target}: {missing}")
        build_target = target
    return _Run(opts, prof, flt, target, build_target, _reporter(opts.progress), t_start)


def _load(run, data):
    """The task's rows and every configuration of the space for them."""
    o = run.opts
    run.task = task = load_task(data, test_size=o.test_size, random_state=o.random_state,
                                max_points=o.max_points, data_options=o.data_options)
    run.configs = configurations(o.space, n_classes=task.n_classes,
                                 n_features=task.n_features, binary=task.binary)
    if not run.configs:
        reasons = [s.unsupported(task) for s in kind_specs() if s.kind in o.space.kinds]
        why = f" ({'; '.join(reasons)})" if reasons and all(reasons) else ""
        raise ValueError(f"the search space has no configuration for this data{why}")


def _screen_one(run, cfg):
    """Screen one configuration: (lower bound, runtime flash) if it may fit, else None
    (recorded as skipped or pruned)."""
    label = config_label(cfg)
    prof, mf = run.profile, run.opts.max_flash
    try:
        lb = screen(cfg, run.task, run.opts.random_state)
    except (ValueError, TypeError) as exc:
        run.skipped.append({"config": cfg, "label": label, "reason": " ".join(str(exc).split()),
                            "stage": "screening"})
        return None
    rt_flash, rt_ram = prof.runtime_bytes(cfg["kind"])
    need_f, need_r = lb["flash_bytes"] + rt_flash, lb["ram_bytes"] + rt_ram
    over = []
    if need_f > prof.flash_bytes:
        over.append(f"flash >= {need_f} B > profile {prof.flash_bytes} B")
    if mf is not None and need_f > int(mf):
        over.append(f"flash >= {need_f} B > max_flash {int(mf)} B")
    if need_r > prof.ram_bytes:
        over.append(f"RAM >= {need_r} B > profile {prof.ram_bytes} B")
    if over:
        run.pruned.append({"config": cfg, "label": label, "stage": "screening",
                           "flash_lower_bound": need_f, "ram_lower_bound": need_r,
                           "reason": "; ".join(over)})
    return lb, need_f, need_r, rt_flash, not over


def _screen_all(run):
    """Screen every configuration before training; the survivors by flash bound
    (``ValueError`` naming the smallest when none fits)."""
    keep, smallest = [], None
    for cfg in run.configs:
        out = _screen_one(run, cfg)
        if out is None:
            continue
        lb, need_f, need_r, rt_flash, fits = out
        if smallest is None or (need_f, need_r) < smallest[:2]:
            smallest = (need_f, need_r, config_label(cfg), lb["flash_bytes"], rt_flash)
        if fits:
            keep.append((need_f, len(keep), cfg, lb))
    if not keep:
        _nothing_fits(run, smallest)
    keep.sort(key=lambda t: (t[0], t[1]))
    return [(cfg, lb) for _, _, cfg, lb in keep]


def _nothing_fits(run, smallest):
    prof, mf = run.profile, run.opts.max_flash
    if smallest is None:
        raise ValueError("no configuration of the search space can be built for this data: "
                         + "; ".join(f"{s['label']}: {s['reason']}" for s in run.skipped[:3]))
    limit = f"profile {prof.name!r} has {prof.flash_bytes} B flash, {prof.ram_bytes} B RAM"
    if mf is not None:
        limit += f", max_flash {int(mf)} B"
    raise ValueError(f"no configuration fits: the smallest, {smallest[2]}, needs at least "
                     f"{smallest[0]} B flash (image {smallest[3]} + runtime {smallest[4]}) "
                     f"and {smallest[1]} B RAM; {limit}")


def _choose_memory_source(run, n_keep):
    """``build="auto"``: real builds when a toolchain is present and few survive."""
    if run.opts.build == "auto" and run.target is not None and n_keep <= AUTO_BUILD_MAX:
        from export.firmware import toolchain_missing
        if not toolchain_missing(run.target):
            run.build_target = run.target
    return "build" if run.build_target else "profile"


def _oversize(run, fitted, flash, ram, source):
    """Why a trained configuration does not fit (empty: it fits), and its wide arrays."""
    from firmware_sim.profiles import DoesNotFitError, check_fits

    prof, mf, over = run.profile, run.opts.max_flash, []
    try:
        check_fits(prof, fitted.export.resources)
    except DoesNotFitError as exc:
        over.append(str(exc))
    wide = _wide_arrays(prof, fitted.export.device.container)
    if wide and run.opts.enforce_int_widths:
        over.append(f"integer arrays wider than the profile's {list(prof.int_widths)}: "
                    f"{', '.join(wide)}")
    if source == "build" and (flash > prof.flash_bytes or ram > prof.ram_bytes):
        over.append(f"built firmware needs {flash} B flash, {ram} B RAM; profile has "
                    f"{prof.flash_bytes} B, {prof.ram_bytes} B")
    if mf is not None and flash > int(mf):
        over.append(f"flash {flash} B > max_flash {int(mf)} B")
    return over, wide


def _entry(run, cfg, label, fitted, flash, ram, source, wide):
    """The measured entry of a configuration that fits (simulated when it has no
    prediction, or with ``simulate="all"``)."""
    from firmware_sim.profiles import estimate

    o, res = run.opts, fitted.export.resources
    site = None if o.site == "default" else o.site
    est = estimate(run.profile, fitted.export.device)   # calibrated prices (issue 26)
    pred, method = _predict(fitted.export.device, fitted.X_device, fitted.y_device, run.fault,
                            site)
    entry = {"config": cfg, "label": label, "kind": cfg["kind"], "flash_bytes": flash,
             "ram_bytes": ram, "cycles": float(est["cycles"]),
             "energy_nj": float(est["energy_pj"]) / 1000.0,
             "clean_accuracy": fitted.clean_accuracy, "predicted_accuracy": pred,
             "simulated_accuracy": None, "simulated_ci": None, "memory_source": source,
             "image_bytes": int(res["flash_bytes"]), "predicted_method": method,
             "simulated_trials": None, "wide_integer_arrays": wide}
    if pred is None or o.simulate == "all":
        _simulate_entry(run, entry, fitted)
    entry["accuracy_under_noise"] = pred if pred is not None else entry["simulated_accuracy"]
    entry["accuracy_source"] = "predicted" if pred is not None else "simulated"
    entry["meets_limits"] = o.min_accuracy is None or \
        entry["accuracy_under_noise"] >= float(o.min_accuracy)
    return entry


def _simulate_entry(run, entry, fitted):
    o = run.opts
    site = None if o.site == "default" else o.site
    entry["simulated_accuracy"], entry["simulated_ci"], entry["simulated_trials"] = \
        _simulate(fitted, run.fault, site, o.sim_samples, o.confidence, o.random_state)
    run.n_simulated += 1


def _measure_one(run, cfg, lb, plan_eps, done, total):
    """Train, export and measure one configuration (recorded as an entry, or as
    skipped or pruned)."""
    label = config_label(cfg)
    try:
        fitted = fit_config(cfg, run.task, plan_eps=plan_eps, random_state=run.opts.random_state,
                            screened=lb)
    except (ValueError, TypeError) as exc:
        reason = " ".join(str(exc).split())
        run.skipped.append({"config": cfg, "label": label, "reason": reason, "stage": "training"})
        run.progress(done, total, f"{label}: not buildable: {reason[:160]}")
        return
    flash, ram, source = _memory(fitted.export, run.profile, run.build_target)
    over, wide = _oversize(run, fitted, flash, ram, source)
    if over:
        run.pruned.append({"config": cfg, "label": label, "stage": "measured",
                           "flash_bytes": flash, "ram_bytes": ram, "reason": "; ".join(over)})
        run.progress(done, total, f"{label}: does not fit once trained ({flash} B flash)")
        return
    entry = _entry(run, cfg, label, fitted, flash, ram, source, wide)
    run.fitted[len(run.entries)] = fitted
    run.entries.append(entry)
    run.progress(done, total, f"{label}: accuracy under noise "
                 f"{entry['accuracy_under_noise']:.4f} ({entry['accuracy_source']}), clean "
                 f"{fitted.clean_accuracy:.4f}, {flash} B flash, {ram} B RAM")


def _measure_all(run, keep):
    """Train and measure the survivors in order of their flash bound, until the
    time budget runs out."""
    o = run.opts
    plan_eps = _wire_eps(run.fault, o.eps)
    total = len(keep)
    for done, (cfg, lb) in enumerate(keep):
        if o.budget_s is not None and run.elapsed() >= float(o.budget_s):
            run.stopped, run.not_evaluated = True, total - done
            break
        _measure_one(run, cfg, lb, plan_eps, done + 1, total)
    if not run.entries:
        if run.stopped:
            raise ValueError(f"budget_s={o.budget_s} s ran out before any configuration was "
                             "measured; give more time")
        why = [f"{p['label']}: too large ({p['reason']})" for p in run.pruned
               if p["stage"] == "measured"]
        why += [f"{s['label']}: not buildable ({s['reason']})" for s in run.skipped
                if s.get("stage") == "training"]
        raise ValueError(f"none of the {total} trained configurations fits or builds: "
                         + "; ".join(why)[:600])


def _front(run):
    """The front among what meets the limits (its points simulated) and the
    recommended point's position on it."""
    o, entries = run.opts, run.entries
    eligible = [i for i, e in enumerate(entries) if e["meets_limits"]]
    if not eligible:
        best = max(entries, key=lambda e: e["accuracy_under_noise"])
        raise ValueError(f"no configuration reaches min_accuracy {float(o.min_accuracy):g} under "
                         f"noise: the best, {best['label']}, reaches "
                         f"{best['accuracy_under_noise']:.4f}")
    front = [eligible[k] for k in pareto_front([entries[i] for i in eligible],
                                               ram=o.ram_objective)]
    for i in front:
        if entries[i]["simulated_accuracy"] is None:
            _simulate_entry(run, entries[i], run.fitted[i])
    for i, e in enumerate(entries):
        e["on_front"] = i in front
    return front, _recommend(entries, front)


def _settings(run, memory_source):
    """What the report states about the search."""
    o, task, pruned = run.opts, run.task, run.pruned
    own = ", ".join(s.site_text for s in kind_specs() if s.site_text)
    fault_dict = run.fault.to_dict() if hasattr(run.fault, "to_dict") else {"model": o.fault}
    return {
        "data": task.name, "split": task.how, "n_train": len(task.X_train),
        "n_test": len(task.X_test), "n_classes": task.n_classes, "n_features": task.n_features,
        "profile": run.profile.name, "target": run.target, "eps": o.eps, "fault": fault_dict,
        "fault_label": f"{o.fault} eps={o.eps:g}", "site": o.site,
        "site_label": f"each kind's own site ({own})" if o.site == "default"
        else f"the {o.site} site",
        "max_flash": None if o.max_flash is None else int(o.max_flash),
        "min_accuracy": None if o.min_accuracy is None else float(o.min_accuracy),
        "memory_source": memory_source, "enforce_int_widths": bool(o.enforce_int_widths),
        "front_objectives": ["accuracy_under_noise", "flash_bytes"] + (
            ["ram_bytes"] if o.ram_objective else []),
        "confidence": o.confidence, "seed": o.random_state,
        "simulate": o.simulate, "sim_samples": int(o.sim_samples), "space": o.space.to_dict(),
        "n_configurations": len(run.configs), "n_pruned_screening": sum(
            1 for p in pruned if p["stage"] == "screening"),
        "n_pruned_measured": sum(1 for p in pruned if p["stage"] == "measured"),
        "n_simulated": run.n_simulated, "stopped_early": run.stopped,
        "not_evaluated": run.not_evaluated, "budget_s": o.budget_s,
        "elapsed_s": run.elapsed(),
    }


# --------------------------------------------------------------------------
# the search
# --------------------------------------------------------------------------
def search(data, profile=None, eps=None, *, options=None, **kwargs):
    """Search model kinds and sizes for the most accurate model under noise that fits.

    Parameters
    ----------
    data : str or tuple
        A bundled dataset (``house_votes``, ``nltcs``, ``dna``, ``digits``,
        ``iris``, ``wine``, ``breast_cancer``), a CSV path (numeric features,
        a ``class`` column, optional ``split``), ``(X, y)`` or ``(X, y,
        split)``.
    profile : str, path or DeviceProfile, optional
        ``"cortex-m0"``, ``"cortex-m4"`` or a JSON/TOML profile file
        (default: ``options.profile``, ``"cortex-m0"``).
    eps : float in [0, 1/2), optional
        The fault's rate (:func:`make_budget_fault`; default: ``options.eps``,
        0.05).
    options : SearchOptions, optional
        The other settings; keyword arguments (the fields of
        :class:`SearchOptions`: ``fault``, ``space``, ``max_flash``,
        ``sim_samples``, ``random_state``, ``progress``, ...) override them.
        ``seed`` is a deprecated name of ``random_state`` (FutureWarning).

    Returns
    -------
    BudgetResult

    Raises
    ------
    ValueError
        eps outside [0, 1/2), a bad profile, option or dataset, no
        configuration that fits the profile and ``max_flash`` (the message
        names the smallest and what it needs), or none that reaches
        ``min_accuracy``.
    TypeError
        An unknown option.

    Examples
    --------
    Naive Bayes on house votes, 16 wire bits flipping with probability 0.2:
    every plan stores one repetition count per feature (same flash), so the
    front is one point, the most accurate under noise:

    >>> r = search("house_votes", "cortex-m0", 0.2, space=SearchSpace(
    ...     kinds=("protected_nb",), nb_rates=(0, 1, 2)), sim_samples=2000)
    >>> [(e["label"], round(e["predicted_accuracy"], 4)) for e in r.entries]
    ... # doctest: +NORMALIZE_WHITESPACE
    [('nb unprotected', 0.8643), ('nb uniform 32 bits', 0.8957), ('nb greedy 32 bits', 0.9042),
     ('nb uniform 64 bits', 0.8991), ('nb greedy 64 bits', 0.8997)]
    >>> [e["label"] for e in r.pareto], r.to_dict()["recommended"]
    (['nb greedy 32 bits'], 0)
    """
    run = _start(_options(profile, eps, options, kwargs))
    _load(run, data)
    keep = _screen_all(run)
    memory_source = _choose_memory_source(run, len(keep))
    task = run.task
    _note(run.progress, f"{len(run.configs)} configurations: {len(run.skipped)} not buildable at "
          f"screening, {len(run.pruned)} pruned before training, {len(keep)} to train on "
          f"{task.name} ({len(task.X_train)} train / {len(task.X_test)} test rows)")
    _measure_all(run, keep)
    front, rec = _front(run)
    return BudgetResult(run.entries, front, rec, run.pruned, run.skipped,
                        _settings(run, memory_source), run.fitted)
