"""The demo's campaign stage: burst versus independent noise on house votes.

House votes (bundled), naive Bayes fitted on all rows, the integer device
model with three redundancy plans (none, uniform and greedy under one bit
budget: :func:`house_votes_devices`), each under independent (BSC) and burst
(Gilbert-Elliott) noise at the same mean flip rates and under the bursts on
a copy-major (interleaved) wire order (:func:`compare_channels`), with the
analytic prediction where a closed form exists
(:func:`export.analytics.add_analytic`). :func:`run_demo_stage` runs it at
one flip rate in a few seconds; ``benchmarks/burst_vs_independent.py`` owns
the full study (four flip rates, 5000 trials, ratios; the numbers of
``docs/noise_example.md``) and runs it on these same pieces.
"""

import sys
import time

import numpy as np

from firmware_sim.campaign import run_campaign
from firmware_sim.faults import BSC, GilbertElliott, Interleave, copy_major_order

from .analytics import add_analytic
from .report import format_rows

__all__ = ["house_votes_devices", "compare_channels", "run_demo_stage"]


def house_votes_devices(budget_bits=32, plan_eps=0.1):
    """House votes and its naive Bayes device under three redundancy plans.

    Returns
    -------
    data : edgecode.datasets.BinaryDataset
        House votes (435 points, 16 binary features).
    devices : dict
        ``"none"``, ``"uniform"`` and ``"greedy"`` (seed 000, Algorithm 2,
        planned at ``plan_eps`` with exact SCP) -> ProtectedNBDevice, one
        integer model, ``budget_bits`` redundancy bits for the two plans.
    """
    from edgecode.datasets import load_house_votes
    from edgecode.naive_bayes import BinaryNaiveBayes
    from edgecode.redundancy import allocate_greedy, allocate_uniform
    from export.naive_bayes import quantize_naive_bayes
    from firmware_sim import ProtectedNBDevice

    d = load_house_votes()
    nb = BinaryNaiveBayes().fit(d.X, d.y)
    w, b, s, _ = quantize_naive_bayes(nb, d.X)
    n = d.X.shape[1]
    plans = {"none": np.zeros(n, np.int64), "uniform": allocate_uniform(n, budget_bits),
             "greedy": allocate_greedy(nb.decision_function(d.X), nb.flip_deltas(d.X),
                                       plan_eps, budget_bits, method="exact").repetitions}
    devices = {k: ProtectedNBDevice.from_arrays(w, b, r, s, meta={"plan": k})
               for k, r in plans.items()}
    return d, devices


def compare_channels(data, devices, flip_rates, mean_burst=4.0, trials=2000, seed=0,
                     interleave=True, progress=None):
    """Campaign of every device under independent (BSC) and burst (Gilbert-Elliott,
    bad-state flip probability 1/2, mean burst ``mean_burst`` bits) noise at the
    same mean flip rates and, if ``interleave``, burst noise on a copy-major
    wire order (devices with one copy per feature, plan ``"none"``, skip it).

    Parameters
    ----------
    data : Dataset
        Inputs ``data.X`` and labels ``data.y`` (:func:`house_votes_devices`).
    devices : dict
        Plan name -> ProtectedNBDevice.
    flip_rates : sequence of float
        Mean flip rates (the campaign's grid).

    Returns
    -------
    list of dict
        One row per (channel, plan, flip rate): ``channel``, ``plan``,
        ``flip_rate``, ``same_rate``, ``ci``, ``accuracy``, ``analytic``
        (None without a closed form), ``seconds``.
    """
    channels = {"independent": BSC(flip_rates[0]),
                "burst": GilbertElliott.from_flip_rate(flip_rates[0], mean_burst)}
    rows = []
    for cname, base in list(channels.items()) + ([("burst-interleaved", None)]
                                                if interleave else []):
        for pname, dev in devices.items():
            fault = base
            if cname == "burst-interleaved":
                if pname == "none":
                    continue  # one copy per feature: nothing to interleave
                fault = Interleave(channels["burst"], copy_major_order(dev.copies))
            res = run_campaign(dev, data.X, fault, "flip_rate", list(flip_rates), trials,
                               random_state=seed, y=data.y)
            add_analytic(res, dev, data.X, fault, "flip_rate", data.y)
            for p in res.points:
                an = p.analytic
                rows.append({"channel": cname, "plan": pname, "flip_rate": p.value,
                             "bits": int(dev.total_bits), "same_rate": p.same_rate,
                             "ci": p.same_ci, "accuracy": p.accuracy,
                             "analytic": an["same_rate"] if an.get("available") else None,
                             "bsc_reference": an.get("bsc_same_rate_at_mean_flip_rate"),
                             "seconds": p.elapsed_s})
            if progress:
                progress(cname, pname)
    return rows


def run_demo_stage(out_dir, trials=2000, stream=None):
    """Demo stage: burst vs independent noise on house votes at one flip rate.

    Runs in a few seconds (at most 500 trials per point whatever ``trials``
    says); writes ``campaign_burst_vs_independent.json`` (and a PNG when
    matplotlib is installed) to ``out_dir``.
    """
    import json
    from pathlib import Path

    out = stream or sys.stdout
    trials = max(50, min(int(trials), 500))
    t0 = time.perf_counter()
    print(f"\n== 5/6 Campaign: house votes, 32 redundancy bits, burst vs independent noise at the "
          f"same mean flip rate 0.1 ({trials} trials per point) ==", file=out)
    d, devices = house_votes_devices()
    rows = compare_channels(d, devices, flip_rates=(0.1,), trials=trials, seed=0)
    print(format_rows(rows), file=out)
    path = Path(out_dir) / "campaign_burst_vs_independent.json"
    path.write_text(json.dumps(rows, indent=1) + "\n")
    print(f"wrote {path} ({time.perf_counter() - t0:.1f}s)", file=out)
    return {"rows": rows, "json": str(path)}
