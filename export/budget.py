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

**Real costs of the front** (unless ``build=False``): once the search has
its front, every point of it is built for the profile's firmware target
(:data:`PROFILE_TARGETS`) when its toolchain is present: flash and RAM of the
build; on the AVR parts the runner runs under simavr on
:data:`FRONT_CYCLE_FRAMES` test frames for the exact cycles (their mean),
elsewhere the calibrated estimate counts them on the same frames; energy
from those cycles. A point whose build exceeds the part is dropped and the
front recomputed (:mod:`export._budget_front`). Each entry says where its
figures come from (``memory_source``: ``"build"`` or ``"profile"``;
``cycles_source``: ``"simavr"`` or ``"estimate"``).

The search is a pipeline of short stages over one :class:`SearchOptions`:
check the options, load the task, list the configurations, screen them,
train and measure what survives, then the baselines and the front.

**Which configurations** (``strategy``): ``"grow"`` (the default) starts
from each kind's cheap corner (:meth:`~export.registry.KindSpec.seeds`) and,
round after round, grows the most accurate points of each kind's own front
one step in each direction the kind has (:meth:`~export.registry.KindSpec.grow`:
tree depth, learners or trees, code length and alphabet, SSBC bits, NB
repetitions), every step screened against the part before training, until
the kind's best accuracy under noise stops improving (``patience`` rounds
without a gain of ``min_gain``) or its next steps no longer fit; a large
round is cut by successive halving on a subsample of the training rows.
``"grid"`` tries every configuration of the space. Then the **baselines**
(:meth:`~export.registry.KindSpec.baselines`: one-vs-all, scikit-learn's
random code, a plain forest) are climbed up to the recommendation's flash
and reported at no more flash than it.

**Protection** (issue 27; ``protection``, :mod:`export._budget_protect`): at
the wire and image sites a configuration may carry a planned protection
(:meth:`~export.registry.KindSpec.protected_variants`: repetition of the
int16 features' bits at the wire, check bits of the stored arrays at the
image). The growing search takes one more protection level as a growth step
of every point it grows (the fitted model reused, not fitted again), the
grid tries every level; the protected device is measured by a campaign at
the search's fault.

**Where** (``jobs``, ``scheduler``): configurations run in this process, on
worker processes or on a Dask cluster (:mod:`export._budget_parallel`), each
seeded by itself, so the result is the same bit for bit.

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

Noise: one fault for every kind. ``eps`` is the fault's per-bit rate at
one ``site``: ``"compute"`` (the default) the results each device computes
and combines (naive Bayes' decoded feature bits, ECOC learner outputs,
forest tree outputs, SSBC code bits; an N-ary result is replaced by a
uniformly random other value), ``"wire"`` the input frames' bits (repeated
feature bits for naive Bayes, int16 features for the others, simulated
only), ``"image"`` the stored bits of the model (``seu``).
"""

import json
import math
import tempfile
import time
import warnings
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Optional

import numpy as np

from ._budget_front import FRONT_CYCLE_FRAMES
from ._budget_space import (SearchSpace, Task, base_config, config_label, configurations,
                            fit_config, load_task, screen)
from .registry import KindSpec, find_kind_spec, kind_specs

__all__ = ["search", "SearchOptions", "BudgetResult", "SearchSpace", "dominates",
           "pareto_front", "make_budget_fault", "FAULT_RATE_PARAM", "DEFAULT_SIM_SAMPLES",
           "AUTO_BUILD_MAX", "PROFILE_TARGETS", "ENTRY_KEYS", "SITE_OF", "DEFAULT_SITE",
           "FRONT_CYCLE_FRAMES"]

#: (point, trial) pairs of a bit-fault campaign (trials = this / test rows).
DEFAULT_SIM_SAMPLES = 100_000
#: ``build="auto"`` builds real firmware when a toolchain is present and at
#: most this many configurations survive screening (about 1 s per build).
AUTO_BUILD_MAX = 8
#: Fault model -> how ``eps`` sets it: (parameter, factor).
FAULT_RATE_PARAM = {"bsc": ("eps", 1.0), "burst": ("flip_rate", 1.0), "stuck": ("rate", 2.0),
                    "seu": ("rate", 1.0)}
#: Built-in profile -> firmware target of :mod:`export.firmware` (the front's
#: points are built for it; on the AVR parts they also run under simavr).
PROFILE_TARGETS = {"cortex-m0": "cortex-m0plus", "cortex-m4": "cortex-m4",
                   "atmega328p": "atmega328p", "atmega2560": "atmega2560",
                   "rv32imac": "rv32imac"}
#: Successive halving applies from this many training rows (below, a full fit
#: costs about what the subsample's score does).
HALVING_MIN_ROWS = 2000
#: Budget site -> the device site (:data:`firmware_sim.SITES`) its campaigns and
#: closed forms use (None: an image fault, the site of its own).
SITE_OF = {"compute": "intermediate", "wire": "wire", "image": None}
#: The site every kind's fault acts at unless ``site`` says otherwise.
DEFAULT_SITE = "compute"
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
        plus ``label``, ``kind``, ``memory_source`` (``"build"`` or
        ``"profile"``), ``cycles_source`` (``"simavr"`` or ``"estimate"``),
        ``cycles_frames`` (the test frames the cycles are the mean of; None:
        the estimate's worst case), ``open_cycles``, ``front_measured``,
        ``predicted_method``, ``accuracy_under_noise``, ``accuracy_source``,
        ``meets_limits``). A point of the front built for the target also
        has ``search_costs`` (its figures before the build), ``firmware_agrees``
        (the runner's outputs equal ``firmware_sim``'s on the frames; None
        where it did not run) and ``cycles_note``.
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
                 f" profile {s['profile']}, {s['fault_label']} at {s['site_label']}; "
                 f"{_costs_text(s)}"]
        w = max([34] + [len(e["label"]) for e in self.pareto])
        head = (f"  {'configuration':<{w}} {'flash B':>8} {'RAM B':>6} {'cycles':>8} "
                f"{'nJ':>8} {'costs from':<16} {'clean':>6} {'predicted':>9} "
                f"{'simulated [99% CI]':>24}")
        lines.append(head)
        for k, e in enumerate(self.pareto):
            mark = "*" if k == self.recommended_index else " "
            pred = "-" if e["predicted_accuracy"] is None else f"{e['predicted_accuracy']:.4f}"
            if e["simulated_accuracy"] is None:
                sim = "not simulated"
            else:
                lo, hi = e["simulated_ci"]
                sim = f"{e['simulated_accuracy']:.4f} [{lo:.4f}, {hi:.4f}]"
            lines.append(f"{mark} {e['label']:<{w}} {e['flash_bytes']:>8} {e['ram_bytes']:>6} "
                         f"{e['cycles']:>8.0f} {e['energy_nj']:>8.1f} {_sources(e):<16} "
                         f"{e['clean_accuracy']:>6.4f} {pred:>9} {sim:>24}")
        r = self.recommended
        why = (f"recommended (*): {r['label']}, accuracy under noise "
               f"{r['accuracy_under_noise']:.4f} ({r['accuracy_source']}), {r['flash_bytes']} B "
               f"flash, {r['ram_bytes']} B RAM")
        lines.append(why)
        for b in s.get("baselines", []):
            if b.get("label") is None:
                lines.append(f"baseline {b['name']}: {b['note']}")
                continue
            lines.append(f"baseline {b['name']}: {b['label']}, {b['accuracy_under_noise']:.4f} "
                         f"under noise at {b['flash_bytes']} B flash ({_from(b, s)}"
                         f"{b['note']}); the "
                         f"recommendation gains {b['gain']:+.4f}")
        if s.get("strategy") == "grow":
            lines.append(f"grown in {len(s['rounds'])} rounds; stopped: {s['stop_reason']}")
        for d in (s.get("front_costs") or {}).get("dropped", []):
            lines.append(f"dropped from the front once built: {d['label']}: {d['reason']}")
        lines.append(f"searched {len(self.entries)} configurations in {s['elapsed_s']:.1f}s "
                     f"({s['n_pruned_screening']} pruned before training, "
                     f"{s['n_pruned_measured']} too large once trained, "
                     + (f"{s['n_pruned_built']} too large once built, "
                        if s.get("n_pruned_built") else "")
                     + f"{len(self.skipped)} not buildable, {s['n_simulated']} simulated"
                     + (f"; time limit reached, {s['not_evaluated']} not evaluated"
                        if s["stopped_early"] else "") + ")")
        return "\n".join(lines)

    def report_md(self, notes=()):
        """A short Markdown report: the search, the front, the baselines and why
        the recommended point (what ``export`` writes as ``report.md``; ``notes``:
        lines on what was written)."""
        s, r = self.settings, self.recommended
        lim = s.get("flash_limit")
        out = [f"# Budget search: {s['data']} on {s['profile']}", "",
               f"- data: {s['n_train']} train / {s['n_test']} test rows, {s['n_classes']} "
               f"classes, {s['n_features']} features ({s['split']})",
               f"- noise: {s['fault_label']} at {s['site_label']}",
               f"- part: {s.get('profile_flash_bytes')} B flash, {s.get('profile_ram_bytes')} B "
               f"RAM" + (f", max_flash {s['max_flash']} B" if s.get("max_flash") else ""),
               f"- search: {s['strategy']}, {len(self.entries)} configurations measured in "
               f"{s['elapsed_s']:.1f} s" + (f", {len(s['rounds'])} rounds; stopped: "
                                          f"{s['stop_reason']}" if s["strategy"] == "grow"
                                          else ""),
               f"- costs: {_costs_text(s)}"]
        for d in (s.get("front_costs") or {}).get("dropped", []):
            out.append(f"- dropped from the front once built: {d['label']}: {d['reason']}")
        out += ["", "## Front", "",
                "| | configuration | flash B | RAM B | cycles | nJ | memory from | cycles from "
                "| clean | under noise | source |",
                "|---|---|---:|---:|---:|---:|---|---|---:|---:|---|"]
        for k, e in enumerate(self.pareto):
            mark = "**recommended**" if k == self.recommended_index else ""
            out.append(f"| {mark} | {e['label']} | {e['flash_bytes']} | {e['ram_bytes']} | "
                       f"{e['cycles']:.0f} | {e['energy_nj']:.1f} | {e['memory_source']} | "
                       f"{_cycles_from(e)} | {e['clean_accuracy']:.4f} | "
                       f"{e['accuracy_under_noise']:.4f} | {e['accuracy_source']} |")
        out += ["", "## Baselines (at no more flash than the recommendation)", ""]
        bl = s.get("baselines") or []
        if not bl:
            out.append("none measured")
        for b in bl:
            if b.get("label") is None:
                out.append(f"- {b['name']}: {b['note']}")
            else:
                out.append(f"- {b['name']}: {b['label']}, {b['accuracy_under_noise']:.4f} under "
                           f"noise at {b['flash_bytes']} B ({_from(b, s)}{b['note']}): the "
                           f"recommendation gains {b['gain']:+.4f}")
        share = f" ({100.0 * r['flash_bytes'] / lim:.0f}% of the {lim} B limit)" if lim else ""
        out += ["", "## Why this point", "",
                f"{r['label']} is the most accurate configuration under noise on the front: "
                f"{r['accuracy_under_noise']:.4f} ({r['accuracy_source']}"
                + (f", simulated {r['simulated_accuracy']:.4f} in [{r['simulated_ci'][0]:.4f}, "
                   f"{r['simulated_ci'][1]:.4f}]" if r.get("simulated_ci") else "")
                + f"), clean {r['clean_accuracy']:.4f}, at {r['flash_bytes']} B flash{share} "
                f"and {r['ram_bytes']} B RAM; no configuration that fits is more accurate "
                "under this noise.", ""]
        if r.get("protection"):
            out += [f"Its protection: {_protection_words(r['protection'])}.", ""]
        if notes:
            out += ["## What was written", ""] + [f"- {n}" for n in notes] + [""]
        return "\n".join(out)

    def export(self, out_dir, *, target=None, build=False):
        """Write the recommended model: ``model.edgc`` (container), ``model.onnx``
        (with the data's true class labels), ``report.md`` (:meth:`report_md`),
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
                 "firmware": out / "firmware", "report": out / "recommended.json",
                 "report_md": out / "report.md"}
        paths["container"].write_bytes(fitted.export.container)
        save_model(fitted.export.onnx_model, str(paths["onnx"]))
        notes = []
        prot = self.recommended.get("protection")
        if prot:
            notes.append(f"model.edgc is the protected container the accuracy under noise was "
                         f"measured on ({_protection_words(prot)}); model.onnx is the "
                         "unprotected model (ONNX has no protection: the same labels on "
                         "error-free inputs)")
        try:
            write_firmware(fitted.export.container, paths["firmware"], target)
        except ValueError as exc:
            if not (prot and prot["layer"] == "image"):
                raise
            # the firmware writer refused the image protection (a form or a
            # build limit of ec_protect.c): said in report.md
            notes.append("firmware/ not written: " + " ".join(str(exc).split()))
            paths.pop("firmware")
        paths["report_md"].write_text(self.report_md(notes), encoding="utf-8")
        info = {k: str(v) for k, v in paths.items()}
        if notes:
            info["notes"] = notes
        if build and "firmware" in paths and not toolchain_missing(target):
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
        lim = s.get("flash_limit")
        xs = [e["flash_bytes"] for e in self.entries]
        lo, hi = min(xs), max(xs + ([lim] if lim else []))
        if lim:
            ax.axvline(lim, color="C1", ls="--", lw=1.2,
                       label=f"flash limit {lim / 1024:.0f} KB ({s['profile']})")
        ax.set_xlim(lo / 1.25, hi * 1.25)
        ticks = _flash_ticks(lo, hi)
        ax.set_xticks(ticks)
        ax.set_xticklabels([_kb(t) for t in ticks], fontsize=8)
        ax.minorticks_off()
        fc = s.get("front_costs") or {}
        src = (f"front built for {fc['target']}, the rest {s['memory_source']}"
               if fc.get("memory_source") == "build" else s["memory_source"])
        ax.set_xlabel(f"flash (KB, {src}; profile {s['profile']})")
        ax.set_ylabel("accuracy under noise")
        ax.set_title(title or f"{s['data']}: {s['fault_label']}", fontsize=10)
        ax.legend(fontsize=7, loc="lower right")
        ax.grid(alpha=0.3)
        fig.tight_layout()
        fig.savefig(path, dpi=120)
        plt.close(fig)
        return path


def _protection_words(p):
    """A protection record (an entry's ``protection``) in words."""
    if p["layer"] == "wire":
        hist = ", ".join(f"{n} bits x{c}" for c, n in
                         sorted(p["allocation"]["bits_by_copies"].items(), key=lambda t: int(t[0])))
        return (f"wire, {p['scheme']}, {p['overhead']:.2f} extra copies per frame bit "
                f"({p['wire_bits']} wire bits per frame instead of "
                f"{p['unprotected_wire_bits']}: {hist}); planner's predicted label-change "
                f"rate {p['predicted_label_change']:.2e} ({p['prediction_method']}) at eps "
                f"{p['planned_for_eps']:g}")
    arrays = ", ".join(f"{a}: {s}" for a, s in p["allocation"].items()) or "none"
    return (f"image, {p['scheme']}, overhead {100 * p['overhead']:.1f}% "
            f"({p['unprotected_image_bytes']} -> {p['protected_image_bytes']} B; {arrays})")


def _cycles_from(e):
    """Where an entry's cycles come from: ``simavr`` / ``estimate``, with the frames."""
    src = e.get("cycles_source", "estimate")
    n = e.get("cycles_frames")
    return src + (f" ({n} frames)" if n else " (worst case)" if src == "estimate" else "")


def _from(b, s):
    """``profile estimate; `` before a baseline's note when the front was built and
    the baseline's flash is not (empty otherwise)."""
    built = (s.get("front_costs") or {}).get("memory_source") == "build"
    return "profile estimate; " if built and b.get("memory_source") == "profile" else ""


def _sources(e):
    """An entry's cost labels for the table: memory / cycles (``build/simavr``)."""
    return f"{e.get('memory_source', 'profile')}/{e.get('cycles_source', 'estimate')}"


def _costs_text(s):
    """What the costs of a search's entries are (the table's and the report's header)."""
    fc = s.get("front_costs") or {}
    rest = (f"memory from {s['memory_source']}, cycles from the profile's estimate")
    if fc.get("memory_source") != "build":
        why = fc.get("note")
        return rest + (f" (front not built: {why})" if why else "")
    cyc = (f"exact cycles under simavr (mean of {fc['frames']} test frames)"
           if fc["cycles_source"] == "simavr" else
           f"cycles from the calibrated estimate on {fc['frames']} test frames"
           + (f" ({fc['note']})" if fc.get("note") else ""))
    nb = fc.get("not_built") or []
    unbuilt = (f"; {len(nb)} image-protected front point{'s' if len(nb) > 1 else ''} not "
               "built (the firmware writer refused their image protection): profile figures"
               if nb else "")
    return (f"front built for {fc['target']} ({fc['measured']} builds, "
            f"{fc['seconds']:.1f} s): flash and RAM of the build, {cyc}{unbuilt}; the rest: "
            f"{rest}")


def _flash_ticks(lo, hi):
    """Readable tick positions (bytes) between ``lo`` and ``hi`` on a log axis."""
    cands = [2 ** k for k in range(6, 31)]
    ticks = [t for t in cands if lo / 1.25 <= t <= hi * 1.25]
    if len(ticks) < 3:
        ticks = sorted(set(ticks) | {int(lo), int(hi)})
    return ticks


def _kb(nbytes):
    return f"{nbytes / 1024:.3g}K" if nbytes >= 1024 else f"{nbytes:.0f} B"


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
def _target_for(profile):
    """The firmware target the profile's points are built for: a built-in
    profile's own, or the built-in one a profile file is based on (its
    ``runtime_profile``, which a .json or .toml file inherits from ``base``);
    None when that has no target."""
    return PROFILE_TARGETS.get(profile.runtime_profile)


def _memory(export_result, profile, build_target):
    """(flash, RAM, source) of the whole firmware: built, or image + runtime; an
    image-protected container adds its decoder's code
    (:data:`firmware_sim.protection.DECODER_CODE_BYTES`) and lies in RAM too
    (the C runtime corrects a writable copy at open, ``ec_model_open_rw``)."""
    res = export_result.resources
    if build_target is not None:
        from export.firmware import build_firmware, write_firmware
        with tempfile.TemporaryDirectory(prefix="edgecode-budget-") as d:
            write_firmware(export_result.container, d, build_target)
            b = build_firmware(d, build_target, jobs=1)
        return int(b.flash_bytes), int(b.ram_bytes), "build"
    rt_flash, rt_ram = profile.runtime_bytes(res.get("kind"))
    flash, ram = int(res["flash_bytes"]) + rt_flash, int(res["ram_bytes"]) + rt_ram
    container = getattr(export_result.device, "container", None)
    if getattr(container, "protect", None) is not None:
        from firmware_sim.protection import DECODER_CODE_BYTES, plan_of
        plan = plan_of(container.protect, arrays=container.arrays)
        bch = any(scheme == "bch" for scheme, _ in plan.values())
        code = DECODER_CODE_BYTES.get(profile.runtime_profile,
                                      max(DECODER_CODE_BYTES.values()))
        flash += code[bch]
        ram += len(export_result.container)
    return flash, ram, "profile"


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
        if not spec.exact_closed_form:
            return None, f"no exact closed form for {device.kind} (simulated)"
        a = spec.analytic(device, X, fault, y, site=site)
    if a.get("available") and a.get("accuracy") is not None:
        method = a.get("method", "exact")
        return float(a["accuracy"]), method if spec is None else spec.describe_method(method)
    return None, a.get("reason", "no closed form")


def _simulate(fitted, fault, site, samples, confidence, random_state, n_jobs=None):
    from firmware_sim.campaign import run_campaign
    n = len(fitted.X_device)
    trials = max(10, math.ceil(samples / n))
    if fault.target in ("image", "mixed"):
        trials = max(20, min(1000, trials))
    res = run_campaign(fitted.export.device, fitted.X_device, fault, n_trials=trials,
                       random_state=random_state, y=fitted.y_device, site=site, confidence=confidence,
                       n_jobs=n_jobs)
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
    site : {"compute", "wire", "image"}, optional
        Where the fault acts, the same for every kind (:data:`SITES`):
        ``"compute"`` (the default; ``"image"`` for ``fault="seu"``) the
        results the device computes and combines (naive Bayes' decoded
        feature bits, ECOC learner outputs, forest tree outputs, SSBC code
        bits: an N-ary result is replaced by a uniformly random other
        value); ``"wire"`` the bits of the input frames (repeated feature
        bits for naive Bayes, int16 features for the others); ``"image"``
        the stored bits of the model (``bsc`` and ``seu`` become upsets of
        each stored bit with probability ``eps``).
    max_flash : int, optional
        Flash limit in bytes (besides the profile's).
    min_accuracy : float in [0, 1], optional
        Configurations less accurate under noise are left out of the front.
    space : SearchSpace or dict, optional
        What to try (default :class:`SearchSpace`).
    budget_s : float, optional
        Stop training new configurations after this many seconds (the
        front's simulations run after).
    strategy : {"grow", "grid"}
        ``"grow"`` (default): start from each kind's cheap corner
        (:meth:`~export.registry.KindSpec.seeds`) and grow the front's most
        accurate points (:meth:`~export.registry.KindSpec.grow`) round after
        round until the front stops improving or the next steps no longer
        fit; ``"grid"``: every configuration of ``space``.
    patience, min_gain : int, float
        Growth stops after ``patience`` rounds in which the best accuracy
        under noise gained less than ``min_gain`` (defaults 2, 0.002).
    grow_width : int
        Front points grown per round, the most accurate first (default 4).
    halving : bool
        Successive halving of a grown round's candidates (not the seeds) when
        there are more than ``2 * grow_width`` and at least
        :data:`HALVING_MIN_ROWS` training rows: each is fitted on a quarter of the training rows
        and scored on another quarter; the better half is trained in full.
    baselines : bool
        Also measure the obvious choices (one-vs-all, scikit-learn's random
        code, a plain forest: :meth:`~export.registry.KindSpec.baselines`) up
        to the recommendation's flash, and report them (default True).
    jobs : int
        Worker processes that train and measure configurations (-1: every
        CPU). Results do not depend on it.
    scheduler : str or dask.distributed.Client, optional
        Run the configurations on a Dask cluster (an address such as
        ``"tcp://host:8786"`` or a connected client): the same result as one
        process, bit for bit.
    build : bool or "auto"
        Real firmware builds for flash and RAM of every configuration
        (``True``; about 1 s per configuration; needs the target's
        toolchain), of the front's points only, or of every configuration
        when at most :data:`AUTO_BUILD_MAX` survive screening (``"auto"``:
        the command line's default; nothing is built where the toolchain is
        missing), or none: profile estimates only (``False``, the default
        here). With ``True`` or ``"auto"`` every point of the final front is
        built for the profile's target, and on the AVR parts run under
        simavr for its exact cycles (:func:`_measure_front`).
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
    protection : "auto", "none" or sequence of numbers
        Protection as part of each configuration (issue 27) at the wire and
        image sites (:mod:`export._budget_protect`): every configuration of a
        kind that takes it there also comes protected at each level, planned
        on the fitted model: at the wire, extra copies per frame bit on
        average (``"auto"``: 1 and 2); at the image, flash overheads
        (``"auto"``: 0.04 and 0.125). ``"none"``: no protection variants.
        Nothing at the compute site or at ``eps == 0``.
    """

    profile: Any = "cortex-m0"
    eps: float = 0.05
    fault: str = "bsc"
    fault_params: Optional[dict] = None
    site: Optional[str] = None
    max_flash: Optional[int] = None
    min_accuracy: Optional[float] = None
    space: Any = None
    budget_s: Optional[float] = None
    strategy: str = "grow"
    patience: int = 2
    min_gain: float = 0.002
    grow_width: int = 4
    halving: bool = True
    baselines: bool = True
    jobs: int = 1
    scheduler: Any = None
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
    protection: Any = "auto"

    def checked(self):
        """A copy with ``eps`` as a float and ``space`` as a :class:`SearchSpace`;
        ``ValueError``/``TypeError`` naming the first bad option."""
        eps = _check_eps(self.eps)
        site = self.site
        if site is None:
            site = "image" if self.fault == "seu" else DEFAULT_SITE
        site = {"intermediate": "compute"}.get(site, site)
        if site == "default":
            raise ValueError("site must be 'compute', 'wire' or 'image' (one site for every "
                             "kind; each kind's own site, 'default', is gone: see "
                             "docs/budget.md)")
        if site not in SITE_OF:
            raise ValueError(f"site must be 'compute', 'wire' or 'image'; got {site!r}")
        fault = self.fault
        if site == "image" and fault == "bsc":
            fault = "seu"
        if (site == "image") != (fault == "seu"):
            raise ValueError(f"fault {fault!r} does not act at the {site} site: the image site "
                             "takes bsc or seu (stored bits upset with probability eps), the "
                             "compute and wire sites take bsc, burst or stuck")
        if self.strategy not in ("grow", "grid"):
            raise ValueError(f"strategy must be 'grow' or 'grid'; got {self.strategy!r}")
        for name, low in (("patience", 1), ("grow_width", 1)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < low:
                raise ValueError(f"{name} must be an integer >= {low}; got {v!r}")
        if not 0.0 <= float(self.min_gain) < 1.0:
            raise ValueError(f"min_gain must be in [0, 1); got {self.min_gain!r}")
        j = self.jobs
        if isinstance(j, bool) or not isinstance(j, (int, np.integer)) or not (j >= 1 or j == -1):
            raise ValueError(f"jobs must be -1 (every CPU) or an integer >= 1; got {j!r}")
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
        from ._budget_protect import check_levels
        protection = check_levels(self.protection, site, eps)
        return replace(self, eps=eps, space=space, site=site, fault=fault, protection=protection)


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
    keys: dict = field(default_factory=dict)
    halved: list = field(default_factory=list)
    rounds: list = field(default_factory=list)
    baselines: list = field(default_factory=list)
    stop_reason: str = ""
    front_costs: dict = field(default_factory=dict)
    evaluator: Any = None
    done: int = 0
    work: list = field(default_factory=lambda: [[]])

    @property
    def flash_limit(self):
        mf = self.opts.max_flash
        return self.profile.flash_bytes if mf is None else min(self.profile.flash_bytes, int(mf))

    @property
    def campaign_site(self):
        """The site the campaigns and closed forms get (None: an image fault)."""
        return SITE_OF[self.opts.site]

    def elapsed(self):
        return time.perf_counter() - self.t_start

    def out_of_time(self):
        return self.opts.budget_s is not None and self.elapsed() >= float(self.opts.budget_s)


def _start(opts):
    """Resolve the profile, the fault, the firmware target and the reporter."""
    from firmware_sim.profiles import get_profile

    t_start = time.perf_counter()
    prof = get_profile(opts.profile)
    flt = make_budget_fault(opts.fault, opts.eps, opts.fault_params)
    target = _target_for(prof)
    build_target = None
    if opts.build is True:
        from export.firmware import toolchain_missing
        if target is None:
            raise ValueError(f"build: no firmware target for profile {prof.name!r} (built-in "
                             f"profiles {sorted(PROFILE_TARGETS)}, or a .json/.toml file with a "
                             "'base')")
        missing = toolchain_missing(target)
        if missing:
            raise ValueError(f"build: cannot build for {target}: {missing}")
        build_target = target
    return _Run(opts, prof, flt, target, build_target, _reporter(opts.progress), t_start)


def _shape(run):
    t = run.task
    return {"n_classes": t.n_classes, "n_features": t.n_features, "binary": t.binary}


def _load(run, data):
    """The task's rows (and, for the grid, every configuration of the space)."""
    o = run.opts
    run.task = task = load_task(data, test_size=o.test_size, random_state=o.random_state,
                                max_points=o.max_points, data_options=o.data_options)
    if o.strategy == "grid":
        run.configs = [v for cfg in configurations(o.space, **_shape(run))
                       for v in _variants(run, cfg)]
    else:
        run.configs = [cfg for spec in kind_specs() if spec.kind in o.space.kinds
                       for cfg in spec.seeds(o.space, **_shape(run))]
    if not run.configs:
        reasons = [s.unsupported(task) for s in kind_specs() if s.kind in o.space.kinds]
        why = f" ({'; '.join(reasons)})" if reasons and all(reasons) else ""
        raise ValueError(f"the search space has no configuration for this data{why}")


def _key(cfg):
    return json.dumps(_jsonable(cfg), sort_keys=True)


def _variants(run, cfg):
    """``cfg`` and its protected variants at the search's site (issue 27)."""
    spec = find_kind_spec(cfg["kind"])
    return list(spec.protected_variants(cfg, run.opts.space, site=run.opts.site,
                                        levels=run.opts.protection))


def _more_protection(run, cfg):
    """The growth step of more protection: ``cfg`` at the next level of its kind's
    protected variants (none past the last, or where the kind has none)."""
    ladder = _variants(run, cfg)
    keys = [_key(v) for v in ladder]
    k = keys.index(_key(cfg)) if _key(cfg) in keys else len(keys)
    return ladder[k + 1:k + 2]


def _groups(keep):
    """``(position, cfg, lb)`` of ``(cfg, lb)`` pairs grouped by the model they
    protect (one fit per group), groups in order of first appearance."""
    groups = {}
    for pos, (cfg, lb) in enumerate(keep):
        groups.setdefault(_key(base_config(cfg)), []).append((pos, cfg, lb))
    return list(groups.values())


def _screen_one(run, cfg):
    """Screen one configuration: (lower bound, flash bound, RAM bound, runtime flash,
    fits) or None when it cannot be built (recorded as skipped; pruned ones too)."""
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


def _screen_all(run, configs, *, refuse_empty=True):
    """Screen configurations before training; the survivors ``(cfg, lb)`` by flash
    bound (``ValueError`` naming the smallest when none fits and ``refuse_empty``)."""
    keep, smallest = [], None
    for cfg in configs:
        out = _screen_one(run, cfg)
        if out is None:
            continue
        lb, need_f, need_r, rt_flash, fits = out
        if smallest is None or (need_f, need_r) < smallest[:2]:
            smallest = (need_f, need_r, config_label(cfg), lb["flash_bytes"], rt_flash)
        if fits:
            keep.append((need_f, len(keep), cfg, lb))
    if not keep and refuse_empty:
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


# --------------------------------------------------------------------------
# one configuration (a work item: runs here, in a worker process or on Dask)
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class _Ctx:
    """What a work item needs besides its configuration and the task (picklable)."""

    profile: Any
    fault: Any
    site: Optional[str]
    plan_eps: float
    random_state: int
    build_target: Optional[str]
    max_flash: Optional[int]
    enforce_int_widths: bool
    simulate_all: bool
    sim_samples: int
    confidence: float
    campaign_jobs: Optional[int] = None


def _ctx(run):
    o = run.opts
    return _Ctx(run.profile, run.fault, run.campaign_site, _wire_eps(run.fault, o.eps),
                o.random_state, run.build_target, o.max_flash, bool(o.enforce_int_widths),
                o.simulate == "all", int(o.sim_samples), float(o.confidence),
                getattr(run.evaluator, "campaign_jobs", None))


def _oversize(ctx, fitted, flash, ram, source):
    """Why a trained configuration does not fit (empty: it fits), and its wide arrays."""
    from firmware_sim.profiles import DoesNotFitError, check_fits

    prof, mf, over = ctx.profile, ctx.max_flash, []
    try:
        check_fits(prof, fitted.export.resources)
    except DoesNotFitError as exc:
        over.append(str(exc))
    wide = _wide_arrays(prof, fitted.export.device.container)
    if wide and ctx.enforce_int_widths:
        over.append(f"integer arrays wider than the profile's {list(prof.int_widths)}: "
                    f"{', '.join(wide)}")
    if source == "build" and (flash > prof.flash_bytes or ram > prof.ram_bytes):
        over.append(f"built firmware needs {flash} B flash, {ram} B RAM; profile has "
                    f"{prof.flash_bytes} B, {prof.ram_bytes} B")
    if mf is not None and flash > int(mf):
        over.append(f"flash {flash} B > max_flash {int(mf)} B")
    return over, wide


def _evaluate(cfgs, task, lbs, ctx, prefitted=None):
    """Train, export and measure one model and its protected variants (``cfgs``:
    configurations of one model, ``lbs`` their screening results; the model is
    fitted once, each protection planned on it): ``{"outcomes": [...],
    "seconds"}``, an outcome per configuration (``{"status": "entry" | "pruned"
    | "skipped", ...}``; an entry carries its :class:`Fitted`). Linear algebra
    runs on one thread, so that the figures do not depend on where the item runs.
    ``prefitted``: the model already fitted by an earlier item (its entry's
    :class:`Fitted`, or packed by :func:`_pack_fitted`), so that a step of more
    protection does not fit it again (a fit is seeded: the same model)."""
    t0 = time.perf_counter()
    with _one_blas_thread():
        outs = _evaluate_group(cfgs, task, lbs, ctx, prefitted)
    return {"outcomes": outs, "seconds": time.perf_counter() - t0}


def _one_blas_thread():
    """A context limiting BLAS/OpenMP pools to one thread (scikit-learn's
    threadpool controller; a no-op where it is missing)."""
    import contextlib
    try:
        from sklearn.utils.parallel import _get_threadpool_controller
        return _get_threadpool_controller().limit(limits=1)
    except (ImportError, AttributeError):
        return contextlib.nullcontext()


def _evaluate_group(cfgs, task, lbs, ctx, prefitted=None):
    from ._budget_protect import plan_rows, protect_fitted

    base = base_config(cfgs[0])
    try:
        if prefitted is not None:
            fitted = _unpack_fitted(prefitted) if isinstance(prefitted, dict) else prefitted
        else:
            fitted = fit_config(base, task, plan_eps=ctx.plan_eps,
                                random_state=ctx.random_state, screened=lbs[0])
    except (ValueError, TypeError) as exc:
        why = " ".join(str(exc).split())
        return [{"status": "skipped", "record": {"config": c, "label": config_label(c),
                                                 "stage": "training", "reason": why}}
                for c in cfgs]
    outs, cache, rows = [], {}, None
    for cfg in cfgs:
        prot = cfg.get("protection")
        if not prot:
            outs.append(_measure(cfg, fitted, ctx))
            continue
        if rows is None:
            rows = plan_rows(task, ctx.random_state)
        try:
            pf, record = protect_fitted(fitted, prot, rows, eps=ctx.plan_eps,
                                        random_state=ctx.random_state, cache=cache)
        except (ValueError, TypeError) as exc:
            outs.append({"status": "skipped", "record": {
                "config": cfg, "label": config_label(cfg), "stage": "protection",
                "reason": " ".join(str(exc).split())}})
            continue
        outs.append(_measure(cfg, pf, ctx, record))
    return outs


def _measure(cfg, fitted, ctx, protection=None):
    """Measure one fitted (and possibly protected) configuration."""
    from firmware_sim.profiles import estimate

    label = config_label(cfg)
    image_protected = protection is not None and protection["layer"] == "image"
    note = None
    try:
        flash, ram, source = _memory(fitted.export, ctx.profile, ctx.build_target)
    except ValueError as exc:
        if not image_protected:
            raise
        # the firmware writer refused the image protection: profile figures
        flash, ram, source = _memory(fitted.export, ctx.profile, None)
        note = "not built: " + " ".join(str(exc).split())[:200]
    over, wide = _oversize(ctx, fitted, flash, ram, source)
    if over:
        return {"status": "pruned", "record": {"config": cfg, "label": label, "stage": "measured",
                                               "flash_bytes": flash, "ram_bytes": ram,
                                               "reason": "; ".join(over)}}
    res = fitted.export.resources
    est = estimate(ctx.profile, fitted.export.device)   # calibrated prices (issue 26)
    if protection is None:
        pred, method = _predict(fitted.export.device, fitted.X_device, fitted.y_device,
                                ctx.fault, ctx.site)
    else:
        pred, method = None, ("simulated on the protected device (the planner predicts "
                              "label changes: see protection)")
        note = (note + "; " if note else "") + (
            "cycles: the kind's inference on the decoded "
            + ("frames (majority decoding not priced)" if protection["layer"] == "wire"
               else "image (the check and correction of the image not priced)"))
    entry = {"config": cfg, "label": label, "kind": cfg["kind"], "flash_bytes": flash,
             "ram_bytes": ram, "cycles": float(est["cycles"]),
             "energy_nj": float(est["energy_pj"]) / 1000.0,
             "clean_accuracy": fitted.clean_accuracy, "predicted_accuracy": pred,
             "simulated_accuracy": None, "simulated_ci": None, "memory_source": source,
             "cycles_source": "estimate", "cycles_frames": None,
             "open_cycles": None if est.get("open_cycles") is None else float(est["open_cycles"]),
             "front_measured": False,
             "image_bytes": int(res["flash_bytes"]), "predicted_method": method,
             "simulated_trials": None, "wide_integer_arrays": wide,
             "protection": protection, "cost_note": note}
    n_sim = 0
    if pred is None or ctx.simulate_all:
        _simulate_into(entry, fitted, ctx)
        n_sim = 1
    entry["accuracy_under_noise"] = pred if pred is not None else entry["simulated_accuracy"]
    entry["accuracy_source"] = "predicted" if pred is not None else "simulated"
    return {"status": "entry", "entry": entry, "fitted": fitted, "n_simulated": n_sim}


def _pack_fitted(f):
    """A :class:`Fitted` as plain data for another process (its container and ONNX
    model as bytes); :func:`_unpack_fitted` rebuilds it."""
    ex = f.export
    onnx_bytes = None if ex.onnx_model is None else ex.onnx_model.SerializeToString()
    return {"kind": ex.kind, "container": bytes(ex.container), "onnx": onnx_bytes,
            "resources": _jsonable(dict(ex.resources)), "checked_inputs": ex.checked_inputs,
            "label_mismatches": ex.label_mismatches,
            "details": _jsonable(dict(ex.details or {})),
            "X_device": f.X_device, "y_device": f.y_device,
            "clean_accuracy": f.clean_accuracy, "info": _jsonable(dict(f.info))}


def _unpack_fitted(p):
    """The :class:`Fitted` of :func:`_pack_fitted`'s data."""
    from firmware_sim import load

    from ._budget_space import Fitted
    from .result import ExportResult
    onnx_model = None
    if p["onnx"] is not None:
        import onnx
        onnx_model = onnx.load_from_string(p["onnx"])
    ex = ExportResult(p["kind"], p["container"], onnx_model, load(p["container"]),
                      p["resources"], p["checked_inputs"], p["label_mismatches"], p["details"])
    return Fitted(ex, p["X_device"], p["y_device"], p["clean_accuracy"], p["info"])


def _evaluate_packed(cfgs, task, lbs, ctx, prefitted=None):
    """:func:`_evaluate` for another process: each fitted model packed
    (:func:`_pack_fitted`), rebuilt here by :func:`_unpack`."""
    out = _evaluate(cfgs, task, lbs, ctx, prefitted)
    for o in out["outcomes"]:
        if o.get("fitted") is not None:
            o["fitted"] = _pack_fitted(o["fitted"])
    return out


def _unpack(out):
    """The outcomes of :func:`_evaluate_packed` with their :class:`Fitted` rebuilt."""
    for o in out["outcomes"]:
        if isinstance(o.get("fitted"), dict):
            o["fitted"] = _unpack_fitted(o["fitted"])
    return out


def _simulate_into(entry, fitted, ctx, campaign_jobs="ctx"):
    jobs = ctx.campaign_jobs if campaign_jobs == "ctx" else campaign_jobs
    entry["simulated_accuracy"], entry["simulated_ci"], entry["simulated_trials"] = \
        _simulate(fitted, ctx.fault, ctx.site, ctx.sim_samples, ctx.confidence,
                  ctx.random_state, jobs)


def _halving_task(task, random_state):
    """A quarter of the training rows to fit on and another quarter to score on
    (successive halving's cheap round; the test rows are never used)."""
    rng = np.random.default_rng([int(random_state), 28])
    idx = rng.permutation(len(task.X_train))
    n = max(len(task.classes) * 2, len(idx) // 4)
    fit_rows, val_rows = idx[:n], idx[n:2 * n]
    if len(val_rows) == 0 or len(np.unique(task.y_train[fit_rows])) < task.n_classes:
        fit_rows, val_rows = idx, idx
    return replace(task, X_train=task.X_train[fit_rows], y_train=task.y_train[fit_rows],
                   X_test=task.X_train[val_rows], y_test=task.y_train[val_rows],
                   how=task.how + " (halving subsample)")


def _score(cfg, task, lb, ctx):
    """Clean validation accuracy of ``cfg`` fitted on a subsample (None: not buildable)."""
    small = _halving_task(task, ctx.random_state)
    try:
        with _one_blas_thread():
            fitted = fit_config(cfg, small, plan_eps=ctx.plan_eps,
                                random_state=ctx.random_state, screened=lb)
    except (ValueError, TypeError):
        return None
    return float(fitted.clean_accuracy)


# --------------------------------------------------------------------------
# the stages of a search
# --------------------------------------------------------------------------
def _record(run, cfg, out, total, baseline=None):
    """Record a work item's outcome; the entry's index (None: not an entry)."""
    run.done += 1
    label = config_label(cfg)
    if out["status"] == "skipped":
        rec = out["record"]
        run.skipped.append(rec)
        run.progress(run.done, total, f"{label}: not buildable: {rec['reason'][:160]}")
        return None
    if out["status"] == "pruned":
        rec = out["record"]
        run.pruned.append(rec)
        run.progress(run.done, total, f"{label}: does not fit once trained "
                                      f"({rec['flash_bytes']} B flash)")
        return None
    entry, o = out["entry"], run.opts
    entry["meets_limits"] = o.min_accuracy is None or \
        entry["accuracy_under_noise"] >= float(o.min_accuracy)
    entry["baseline"] = baseline
    entry["round"] = len(run.rounds)
    i = len(run.entries)
    run.fitted[i] = out["fitted"]
    run.entries.append(entry)
    run.keys[_key(cfg)] = i
    run.n_simulated += out.get("n_simulated", 0)
    run.progress(run.done, total, f"{label}: accuracy under noise "
                 f"{entry['accuracy_under_noise']:.4f} ({entry['accuracy_source']}), clean "
                 f"{entry['clean_accuracy']:.4f}, {entry['flash_bytes']} B flash, "
                 f"{entry['ram_bytes']} B RAM")
    return i


def _run_items(run, keep, total, baseline=None):
    """Evaluate ``(cfg, lb)`` pairs (in chunks the evaluator runs at once, so the time
    limit holds); the entries' indices (None for what is not an entry)."""
    ctx, ev = _ctx(run), run.evaluator
    out = [None] * len(keep)
    groups = _groups(keep)               # a model and its protected variants: one item
    # chunks of twice the width keep a time limit; without one, every item at
    # once (no barrier between chunks, where a worker would wait for a straggler)
    step = max(1, 2 * ev.width) if run.opts.budget_s is not None else max(1, len(groups))
    for k in range(0, len(groups), step):
        if run.out_of_time():
            left = sum(len(g) for g in groups[k:])
            run.stopped, run.not_evaluated = True, run.not_evaluated + left
            run.stop_reason = f"time limit budget_s={run.opts.budget_s} s"
            break
        chunk = groups[k:k + step]
        local = getattr(ev, "local", False)
        items = []
        for g in chunk:
            # a model already measured (a step of more protection): its fit is reused
            i = run.keys.get(_key(base_config(g[0][1])))
            pre = None if i is None else run.fitted.get(i)
            if pre is not None and not local:
                pre = _pack_fitted(pre)
            items.append(([c for _, c, _ in g], [lb for _, _, lb in g], ctx, pre))
        results = ev.map(_evaluate if local else _evaluate_packed, items)
        for g, res in zip(chunk, results):
            res = res if local else _unpack(res)
            run.work[-1].append(round(float(res.get("seconds", 0.0)), 3))
            for (pos, cfg, _), one in zip(g, res["outcomes"]):
                names = baseline(cfg) if callable(baseline) else baseline
                out[pos] = _record(run, cfg, one, total, names)
    return out


def _no_entries(run, total):
    o = run.opts
    if run.stopped:
        raise ValueError(f"budget_s={o.budget_s} s ran out before any configuration was "
                         "measured; give more time")
    why = [f"{p['label']}: too large ({p['reason']})" for p in run.pruned
           if p["stage"] == "measured"]
    why += [f"{s['label']}: not buildable ({s['reason']})" for s in run.skipped
            if s.get("stage") == "training"]
    raise ValueError(f"none of the {total} trained configurations fits or builds: "
                     + "; ".join(why)[:600])


def _grid(run):
    """The whole grid of the space, in order of flash bound."""
    keep = _screen_all(run, run.configs)
    memory_source = _choose_memory_source(run, len(keep))
    task = run.task
    _note(run.progress, f"{len(run.configs)} configurations: {len(run.skipped)} not buildable at "
          f"screening, {len(run.pruned)} pruned before training, {len(keep)} to train on "
          f"{task.name} ({len(task.X_train)} train / {len(task.X_test)} test rows)")
    run.evaluator.start(task)
    _run_items(run, keep, len(keep))
    if not run.entries:
        _no_entries(run, len(keep))
    return memory_source


def _current_front(run):
    """The front (indices, by flash). Which configurations are on it is decided on
    the figures the search measured every configuration with (the same source
    for all: a front point's ``search_costs`` once it was built); when every
    one of them was built (:func:`_measure_front`), the front is what no other
    of them dominates on the built figures."""
    ram = run.opts.ram_objective
    eligible = [i for i, e in enumerate(run.entries) if e["meets_limits"]]
    front = [eligible[k] for k in pareto_front([_as_searched(run.entries[i]) for i in eligible],
                                               ram=ram)]
    if front and all(run.entries[i].get("front_measured") for i in front):
        front = [front[k] for k in pareto_front([run.entries[i] for i in front], ram=ram)]
    return front


def _as_searched(e):
    """An entry with the figures the search measured it with (before a front build)."""
    return {**e, **e["search_costs"]} if e.get("search_costs") else e


def _halve(run, keep):
    """Successive halving: score every candidate on a subsample (fit on a quarter of
    the training rows, clean accuracy on another quarter), keep the better half
    (at least ``grow_width``); the others are recorded as stopped early."""
    o = run.opts
    if not o.halving or not run.rounds or len(_groups(keep)) <= 2 * int(o.grow_width) or \
            len(run.task.X_train) < HALVING_MIN_ROWS:
        return keep
    ctx = _ctx(run)
    # one score per model (its protected variants share its fit and its fate)
    groups = _groups(keep)
    n_keep = max(int(o.grow_width), (len(groups) + 1) // 2)
    scores = list(run.evaluator.map(_score, [(base_config(g[0][1]), g[0][2], ctx)
                                             for g in groups]))
    order = sorted(range(len(groups)), key=lambda k: (-(scores[k] if scores[k] is not None
                                                         else -1.0), k))
    kept = sorted(pos for k in order[:n_keep] for pos, _, _ in groups[k])
    for k in order[n_keep:]:
        for _, cfg, _ in groups[k]:
            run.halved.append({"config": cfg, "label": config_label(cfg),
                               "round": len(run.rounds), "validation_accuracy": scores[k],
                               "reason": f"successive halving: validation accuracy "
                                         f"{'n/a' if scores[k] is None else f'{scores[k]:.4f}'}"
                                         f" below the better {n_keep} of {len(groups)} models"})
    return [keep[k] for k in kept]


def _grow(run):
    """The growing search: from the kinds' seeds, grow each family's own front
    (:meth:`~export.registry.KindSpec.family`: the kind, or a forest's estimator
    and leaf form), its most accurate points first (``grow_width`` per round),
    one step in each direction the kind has (:meth:`~export.registry.KindSpec.grow`),
    round after round. A family stops when its best accuracy under noise gained less than
    ``min_gain`` in ``patience`` rounds, when every point of its front was grown,
    or when its next steps no longer fit the part (pruned by their lower bounds
    before training); the search stops when every kind has."""
    o, task, shape = run.opts, run.task, _shape(run)
    specs = {s.kind: s for s in kind_specs()}
    seen = {_key(c) for c in run.configs}
    pending, expanded = list(run.configs), set()
    best, stale, why = {}, {}, {}
    memory_source = None
    run.evaluator.start(task)
    while pending:
        seen.update(_key(c) for c in pending)
        keep = _screen_all(run, pending, refuse_empty=not run.rounds)
        if memory_source is None:
            # "auto": real builds only for a grid of few configurations (a growing
            # search does not know how many it will train)
            memory_source = _choose_memory_source(run, AUTO_BUILD_MAX + 1)
        keep = _halve(run, keep)
        _note(run.progress, f"round {len(run.rounds) + 1}: {len(pending)} configurations: "
              f"{len(keep)} to train on {task.name} ({len(task.X_train)} train / "
              f"{len(task.X_test)} test rows)")
        if run.work[-1]:
            run.work.append([])
        n_skipped = len(run.skipped)
        new = [i for i in _run_items(run, keep, run.done + len(keep)) if i is not None]
        # a level that holds no protection (a small image at 4%) passes its step on to
        # the next level of the same model
        passed = [c for rec in run.skipped[n_skipped:] if rec.get("stage") == "protection"
                  for c in _more_protection(run, rec["config"]) if _key(c) not in seen]
        fr = _current_front(run)
        top = max((run.entries[i]["accuracy_under_noise"] for i in fr), default=None)
        run.rounds.append({"round": len(run.rounds) + 1, "proposed": len(pending),
                           "trained": len(keep), "entries": len(new),
                           "best_accuracy_under_noise": top,
                           "growing": sorted({c["kind"] for c in pending})})
        if run.stopped:
            break
        pending = []
        fam = [specs[e["kind"]].family(e["config"]) for e in run.entries]
        for kind in dict.fromkeys(fam):
            if kind in why:
                continue
            own = [i for i, e in enumerate(run.entries) if fam[i] == kind and e["meets_limits"]
                   and e["baseline"] is None]
            if not own:
                continue
            front = [own[k] for k in pareto_front([run.entries[i] for i in own],
                                                  ram=o.ram_objective)]
            t = max(run.entries[i]["accuracy_under_noise"] for i in front)
            if kind not in best or t >= best[kind] + float(o.min_gain):
                best[kind], stale[kind] = t, 0
            else:
                stale[kind] += 1
                if stale[kind] >= int(o.patience):
                    why[kind] = (f"its front stopped improving ({o.patience} rounds without a "
                                 f"gain of {o.min_gain:g})")
                    continue
            grow = [i for i in sorted(front, key=lambda i: -run.entries[i]["accuracy_under_noise"])
                    if i not in expanded][:int(o.grow_width)]
            children = []
            for i in grow:
                expanded.add(i)
                cfg = run.entries[i]["config"]
                prot = cfg.get("protection")
                # the model's steps keep its protection; one step of more protection
                # (the kind's protected_variants, the next level) reuses its fit
                steps = [{**base_config(c), **({"protection": prot} if prot else {})}
                         for c in specs[cfg["kind"]].grow(base_config(cfg), o.space, **shape)]
                for child in steps + _more_protection(run, cfg):
                    k = _key(child)
                    if k not in seen and child not in children:
                        children.append(child)
            if not children:
                why[kind] = ("every point of its front was grown" if not grow
                             else "no growth step left that was not tried")
            pending += children
            run.configs += children
        for c in passed:
            if c not in pending:
                pending.append(c)
                run.configs.append(c)
    for kind in dict.fromkeys(specs[e["kind"]].family(e["config"]) for e in run.entries):
        why.setdefault(kind, f"time limit budget_s={o.budget_s} s" if run.stopped
                       else "its next steps no longer fit the part")
    run.stop_reason = "; ".join(f"{k}: {v}" for k, v in why.items())
    if not run.entries:
        _no_entries(run, run.done)
    return memory_source or "profile"


def _baselines(run):
    """The obvious choices every kind offers (:meth:`KindSpec.baselines`), each a
    ladder of growing size climbed until it passes the recommendation's flash or
    the part; per ladder, the best entry at no more flash than the recommendation."""
    shape = _shape(run)
    ladders = []
    for spec in kind_specs():
        if spec.unsupported(run.task) is None:
            ladders += list(spec.baselines(run.opts.space, **shape))
    if not ladders:
        return
    rec = run.entries[_recommended_index(run)]
    limit = rec["flash_bytes"]
    state = [{"name": n, "ladder": list(lad), "step": 0, "done": False, "indices": []}
             for n, lad in ladders]
    _note(run.progress, f"baselines: {', '.join(s['name'] for s in state)} up to "
          f"{limit} B flash")
    while not run.out_of_time():
        batch = []
        for s in state:
            while not s["done"] and s["step"] < len(s["ladder"]):
                cfg = s["ladder"][s["step"]]
                s["step"] += 1
                k = _key(cfg)
                if k in run.keys:
                    i = run.keys[k]
                    s["indices"].append(i)
                    run.entries[i]["baseline"] = run.entries[i]["baseline"] or s["name"]
                    if run.entries[i]["flash_bytes"] > limit:
                        s["done"] = True
                    continue
                out = _screen_one(run, cfg)
                if out is None:
                    continue
                lb, need_f, _, _, fits = out
                if not fits or (need_f > limit and s["indices"]):
                    s["done"] = True
                    break
                batch.append((s, cfg, lb))
                break
            if s["step"] >= len(s["ladder"]):
                s["done"] = s["done"] or not any(b[0] is s for b in batch)
        if not batch:
            break
        if run.work[-1]:
            run.work.append([])
        idx = _run_items(run, [(cfg, lb) for _, cfg, lb in batch], run.done + len(batch),
                         baseline=None)
        for (s, cfg, _), i in zip(batch, idx):
            if i is None:
                s["done"] = True
                continue
            run.entries[i]["baseline"] = s["name"]
            s["indices"].append(i)
            if run.entries[i]["flash_bytes"] > limit:
                s["done"] = True
        if all(s["done"] or s["step"] >= len(s["ladder"]) for s in state):
            break
    run.baselines = state


def _recommended_index(run):
    front = _current_front(run)
    if not front:
        best = max(run.entries, key=lambda e: e["accuracy_under_noise"])
        raise ValueError(f"no configuration reaches min_accuracy {float(run.opts.min_accuracy):g}"
                         f" under noise: the best, {best['label']}, reaches "
                         f"{best['accuracy_under_noise']:.4f}")
    return front[_recommend(run.entries, front)]


def _measure_front(run):
    """Real costs of the front (issue 28): every point of the current front built
    for the profile's firmware target (flash and RAM of the size probe) and, on
    the AVR parts, run under simavr on :data:`FRONT_CYCLE_FRAMES` test frames
    (exact cycles, their mean), elsewhere priced by the calibrated estimate on
    the same frames (:func:`export._budget_front.measure_point`). Which
    configurations are on the front is decided on the search's own figures
    (one source for all, :func:`_current_front`): a point whose build exceeds
    the part or ``max_flash`` (it was screened on estimates) is dropped
    (``pruned``, stage ``"built"``) and the front recomputed, its new points
    built in turn; then the front is what no other built point of it
    dominates on the built figures. So only front points are built (plus one
    per drop), and every point of the final front is. Runs in this process
    after the search (``jobs`` and ``scheduler`` do not change it); off with
    ``build=False``."""
    from ._budget_front import front_capability, measure_point
    from .progress import format_seconds

    o, prof = run.opts, run.profile
    info = run.front_costs
    info.update({"target": run.target, "frames": FRONT_CYCLE_FRAMES, "measured": 0,
                 "dropped": [], "seconds": 0.0, "memory_source": "profile",
                 "cycles_source": "estimate", "note": None})
    if o.build is False:
        info["note"] = "not measured (build=False, --no-build)"
        return
    can_build, can_count, why = front_capability(run.target)
    info["note"] = why
    if not can_build:
        _note(run.progress, f"front: profile estimates only ({why})")
        return
    info["memory_source"] = "build"
    info["cycles_source"] = "simavr" if can_count else "estimate"
    how = (f"exact cycles under simavr on {FRONT_CYCLE_FRAMES} test frames" if can_count else
           f"cycles: the profile's calibrated estimate on {FRONT_CYCLE_FRAMES} test frames")
    t0, per_point = time.perf_counter(), None
    while True:
        if not run.entries:
            raise ValueError("no configuration fits once built for "
                             f"{run.target}: " + "; ".join(
                                 f"{d['label']}: {d['reason']}" for d in info["dropped"])[:600])
        _recommended_index(run)          # refuses when nothing meets min_accuracy
        todo = [i for i in _current_front(run) if not run.entries[i].get("front_measured")]
        if not todo:
            break
        eta = "" if per_point is None else f", about {format_seconds(per_point * len(todo))}"
        _note(run.progress, f"front: building {len(todo)} point{'s' if len(todo) > 1 else ''} "
              f"for {run.target} ({how}{eta})")
        drop = []
        for k, i in enumerate(todo):
            e = run.entries[i]
            try:
                m = measure_point(run.fitted[i], prof, run.target, count_cycles=can_count)
            except RuntimeError as exc:
                m, over = None, [f"cannot be built for {run.target}: "
                                 + " ".join(str(exc).split())[:300]]
            except ValueError as exc:
                if (e.get("protection") or {}).get("layer") != "image":
                    raise
                # the firmware writer refused the image-protected point (a form
                # or a build limit of ec_protect.c): it keeps its profile
                # figures, labelled
                info.setdefault("not_built", []).append(e["label"])
                e["front_measured"] = True
                e["cycles_note"] = ("not built for " + run.target + ": "
                                    + " ".join(str(exc).split())[:200])
                _note(run.progress, f"front {k + 1}/{len(todo)}: {e['label']}: not built "
                      f"(the firmware writer refused its image protection); profile "
                      f"figures kept")
                continue
            else:
                over = _built_oversize(run, m["flash_bytes"], m["ram_bytes"])
            info["measured"] += 1
            done = time.perf_counter() - t0
            per_point = done / info["measured"]
            if over:
                rec = {"config": e["config"], "label": e["label"], "stage": "built",
                       "flash_bytes": None if m is None else m["flash_bytes"],
                       "ram_bytes": None if m is None else m["ram_bytes"],
                       "estimated_flash_bytes": e["flash_bytes"],
                       "estimated_ram_bytes": e["ram_bytes"],
                       "reason": "; ".join(over) + f" (it fit the {e['memory_source']} "
                                 f"estimate: {e['flash_bytes']} B flash, {e['ram_bytes']} B RAM)"}
                run.pruned.append(rec)
                info["dropped"].append({"label": e["label"], "reason": rec["reason"]})
                drop.append(i)
                _note(run.progress, f"front {k + 1}/{len(todo)}: {e['label']}: dropped from "
                      f"the front: {rec['reason']}")
                continue
            e["search_costs"] = {"flash_bytes": e["flash_bytes"], "ram_bytes": e["ram_bytes"],
                                 "cycles": e["cycles"], "memory_source": e["memory_source"],
                                 "cycles_source": e["cycles_source"]}
            e.update({"flash_bytes": m["flash_bytes"], "ram_bytes": m["ram_bytes"],
                      "cycles": m["cycles"], "open_cycles": m["open_cycles"],
                      "energy_nj": m["energy_nj"], "memory_source": "build",
                      "cycles_source": m["cycles_source"], "cycles_frames": m["cycles_frames"],
                      "cycles_note": m["cycles_note"], "firmware_agrees": m["firmware_agrees"],
                      "front_measured": True})
            warn = "" if m["firmware_agrees"] is not False else \
                "; WARNING: the firmware's outputs differ from firmware_sim's on these frames"
            was = e["search_costs"]
            _note(run.progress, f"front {k + 1}/{len(todo)}: {e['label']}: built {e['flash_bytes']}"
                  f" B flash, {e['ram_bytes']} B RAM (searched on {was['memory_source']}: "
                  f"{was['flash_bytes']} B, {was['ram_bytes']} B); {e['cycles']:,.0f} cycles "
                  f"({e['cycles_source']}, mean of {e['cycles_frames']} frames); "
                  f"{format_seconds(m['seconds'])}{warn}")
        if drop:
            _drop_entries(run, drop)
    info["seconds"] = time.perf_counter() - t0


def _built_oversize(run, flash, ram):
    """Why a built front point does not fit the part or ``max_flash`` (empty: it fits)."""
    prof, mf, over = run.profile, run.opts.max_flash, []
    if flash > prof.flash_bytes:
        over.append(f"built firmware for {run.target} needs {flash} B flash > profile "
                    f"{prof.flash_bytes} B")
    if ram > prof.ram_bytes:
        over.append(f"built firmware for {run.target} needs {ram} B RAM > profile "
                    f"{prof.ram_bytes} B")
    if mf is not None and flash > int(mf):
        over.append(f"built firmware for {run.target} needs {flash} B flash > max_flash "
                    f"{int(mf)} B")
    return over


def _drop_entries(run, drop):
    """Remove the entries ``drop`` (indices) and renumber what refers to entries."""
    drop = set(drop)
    keep = [i for i in range(len(run.entries)) if i not in drop]
    new = {old: k for k, old in enumerate(keep)}
    run.entries = [run.entries[i] for i in keep]
    run.fitted = {new[i]: f for i, f in run.fitted.items() if i in new}
    run.keys = {k: new[i] for k, i in run.keys.items() if i in new}
    for s in run.baselines:
        s["indices"] = [new[i] for i in s["indices"] if i in new]


def _front(run):
    """The front among what meets the limits (its points simulated) and the
    recommended point's position on it."""
    entries = run.entries
    _recommended_index(run)              # refuses when nothing meets min_accuracy
    front = _current_front(run)
    ctx = _ctx(run)
    for i in front:
        if entries[i]["simulated_accuracy"] is None:
            _simulate_into(entries[i], run.fitted[i], ctx, campaign_jobs=None)
            run.n_simulated += 1
    for i, e in enumerate(entries):
        e["on_front"] = i in front
    return front, _recommend(entries, front)


def _baseline_report(run, rec):
    """Per baseline, its best entry at no more flash than the recommendation (flash
    compared on the search's figures, the same source for both: a built front
    point's ``search_costs``)."""
    out = []
    limit = _as_searched(rec)["flash_bytes"]

    def flash(e):
        return _as_searched(e)["flash_bytes"]

    for s in run.baselines:
        pts = [run.entries[i] for i in dict.fromkeys(s["indices"])]
        if not pts:
            out.append({"name": s["name"], "label": None, "note": "nothing of it fits the part"})
            continue
        within = [e for e in pts if flash(e) <= limit]
        note = "best at no more flash than the recommendation"
        if not within:
            within = [min(pts, key=flash)]
            note = "its smallest needs more flash than the recommendation"
        b = max(within, key=lambda e: (e["accuracy_under_noise"], -flash(e)))
        out.append({"name": s["name"], "label": b["label"], "flash_bytes": b["flash_bytes"],
                    "memory_source": b["memory_source"],
                    "accuracy_under_noise": b["accuracy_under_noise"],
                    "clean_accuracy": b["clean_accuracy"],
                    "accuracy_source": b["accuracy_source"],
                    "gain": rec["accuracy_under_noise"] - b["accuracy_under_noise"],
                    "note": note, "tried": [e["label"] for e in pts]})
    return out


def _settings(run, memory_source):
    """What the report states about the search."""
    o, task, pruned = run.opts, run.task, run.pruned
    fault_dict = run.fault.to_dict() if hasattr(run.fault, "to_dict") else {"model": o.fault}
    return {
        "data": task.name, "split": task.how, "n_train": len(task.X_train),
        "n_test": len(task.X_test), "n_classes": task.n_classes, "n_features": task.n_features,
        "profile": run.profile.name, "target": run.target,
        "flash_limit": run.flash_limit, "profile_flash_bytes": run.profile.flash_bytes,
        "profile_ram_bytes": run.profile.ram_bytes, "eps": o.eps, "fault": fault_dict,
        "fault_label": f"{o.fault} eps={o.eps:g}", "site": o.site,
        "site_label": _site_label(o.site),
        "max_flash": None if o.max_flash is None else int(o.max_flash),
        "min_accuracy": None if o.min_accuracy is None else float(o.min_accuracy),
        "memory_source": memory_source, "enforce_int_widths": bool(o.enforce_int_widths),
        "front_objectives": ["accuracy_under_noise", "flash_bytes"] + (
            ["ram_bytes"] if o.ram_objective else []),
        "confidence": o.confidence, "seed": o.random_state,
        "simulate": o.simulate, "sim_samples": int(o.sim_samples), "space": o.space.to_dict(),
        "strategy": o.strategy, "grow": {"patience": int(o.patience),
                                         "min_gain": float(o.min_gain),
                                         "grow_width": int(o.grow_width),
                                         "halving": bool(o.halving)},
        "rounds": run.rounds, "stop_reason": run.stop_reason,
        "work_seconds": run.work,
        "halved": run.halved, "n_halved": len(run.halved),
        "jobs": o.jobs, "scheduler": None if o.scheduler is None else (
            o.scheduler if isinstance(o.scheduler, str) else "client"),
        "n_configurations": len(run.configs), "n_pruned_screening": sum(
            1 for p in pruned if p["stage"] == "screening"),
        "n_pruned_measured": sum(1 for p in pruned if p["stage"] == "measured"),
        "n_pruned_built": sum(1 for p in pruned if p["stage"] == "built"),
        "front_costs": run.front_costs,
        "protection": {"levels": list(o.protection),
                       "unit": {"wire": "extra copies per frame bit on average",
                                "image": "flash overhead (fraction of the image)"}.get(o.site),
                       "kinds": [s.kind for s in kind_specs()
                                 if o.protection and o.site in s.protection_sites]},
        "n_simulated": run.n_simulated, "stopped_early": run.stopped,
        "not_evaluated": run.not_evaluated, "budget_s": o.budget_s,
        "elapsed_s": run.elapsed(),
    }


def _site_label(site):
    if site == "compute":
        what = ", ".join(s.compute_text for s in kind_specs() if s.compute_text)
        return f"the compute site ({what})"
    if site == "image":
        return "the image site (stored bits of the model)"
    return "the wire site (the input frames' bits)"


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
    Naive Bayes on house votes, 16 wire bits flipping with probability 0.2
    (the grid of a small space, no baselines): every plan stores one
    repetition count per feature (same flash), so the front is one point, the
    most accurate under noise:

    >>> r = search("house_votes", "cortex-m0", 0.2, site="wire", strategy="grid",
    ...            baselines=False, space=SearchSpace(kinds=("protected_nb",),
    ...                                               nb_rates=(0, 1, 2)), sim_samples=2000)
    >>> [(e["label"], round(e["predicted_accuracy"], 4)) for e in r.entries]
    ... # doctest: +NORMALIZE_WHITESPACE
    [('nb unprotected', 0.8643), ('nb uniform 32 bits', 0.8957), ('nb greedy 32 bits', 0.9042),
     ('nb uniform 64 bits', 0.8991), ('nb greedy 64 bits', 0.8997)]
    >>> [e["label"] for e in r.pareto], r.to_dict()["recommended"]
    (['nb greedy 32 bits'], 0)
    """
    run = _start(_options(profile, eps, options, kwargs))
    _load(run, data)
    from ._budget_parallel import evaluator_for
    run.evaluator = evaluator_for(run.opts.jobs, run.opts.scheduler)
    try:
        memory_source = _grid(run) if run.opts.strategy == "grid" else _grow(run)
        if run.opts.baselines:
            _baselines(run)
    finally:
        run.evaluator.close()
    _measure_front(run)
    front, rec = _front(run)
    result = BudgetResult(run.entries, front, rec, run.pruned, run.skipped,
                          _settings(run, memory_source), run.fitted)
    result.settings["baselines"] = _baseline_report(run, result.recommended)
    return result
