"""Burst versus independent noise on house votes: what a 32-bit plan buys under each.

House votes (bundled, 435 points, 16 features), naive Bayes fitted on all
rows, integer device model; three devices: no redundancy (16 bits), the
uniform plan (every feature 3 times, 48 bits) and the greedy plan (seed 000,
Algorithm 2, planned at eps = 0.1 with exact SCP, 48 bits). Each runs a
campaign at mean flip rates 0.02, 0.05, 0.1, 0.2 under

* independent noise: BSC with eps = the flip rate;
* burst noise: Gilbert-Elliott, flip probability 1/2 in the bad state, 0 in
  the good one, mean burst 4 bits, p chosen for the same mean flip rate;
* the same bursts on an interleaved (copy-major) wire order.

Prints 1 - same-classification rate (the label changes because of noise;
lower is better) with its 99% Wilson interval, the analytic value where a
closed form exists (BSC: exact SCP of the device's model), and the accuracy.
Numbers are quoted in docs/noise_example.md.

The study is defined here (:func:`burst_vs_independent`); it runs on the
pieces the demo's campaign stage uses (``export.demo_campaign``:
``house_votes_devices``, ``compare_channels``), so the demo shows one flip
rate of exactly this study.

Run:  python benchmarks/burst_vs_independent.py [--trials 5000] [--seed 0] [--json out.json]
"""

import argparse
import json
import time

from export.demo_campaign import compare_channels, house_votes_devices
from export.report import format_rows


def burst_vs_independent(flip_rates=(0.02, 0.05, 0.1, 0.2), mean_burst=4.0, budget_bits=32,
                         plan_eps=0.1, trials=2000, seed=0, interleave=True, progress=None):
    """House votes, naive Bayes, a 32-bit redundancy budget: no plan, uniform and
    greedy plans under independent (BSC) and burst (Gilbert-Elliott, bad-state
    flip probability 1/2, mean burst ``mean_burst`` bits) noise at the same
    mean flip rates, and, if ``interleave``, burst noise on a copy-major wire
    order. Returns the rows of :func:`export.demo_campaign.compare_channels`
    (one per channel, plan and flip rate).
    """
    data, devices = house_votes_devices(budget_bits, plan_eps)
    return compare_channels(data, devices, flip_rates, mean_burst=mean_burst, trials=trials,
                            seed=seed, interleave=interleave, progress=progress)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--mean-burst", type=float, default=4.0)
    ap.add_argument("--json", help="also write the rows as JSON here")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    rows = burst_vs_independent(flip_rates=(0.02, 0.05, 0.1, 0.2), mean_burst=args.mean_burst,
                                trials=args.trials, seed=args.seed)
    print(f"# house votes, 435 points x {args.trials} trials per value, seed {args.seed}, "
          f"burst: eps_bad 0.5, mean length {args.mean_burst:g} bits")
    print(format_rows(rows))
    print("# ratios of 1 - same (lower is better): uniform/greedy and none/greedy per channel")
    key = {(r["channel"], r["plan"], r["flip_rate"]): 1 - r["same_rate"] for r in rows}
    for ch in ("independent", "burst", "burst-interleaved"):
        for f in (0.02, 0.05, 0.1, 0.2):
            g = key.get((ch, "greedy", f))
            u = key.get((ch, "uniform", f))
            nn = key.get((ch, "none", f))
            if g:
                print(f"{ch:<18} flip {f:<5g} uniform/greedy {u / g:5.2f}x"
                      + (f"  none/greedy {nn / g:6.2f}x" if nn else ""))
    print(f"# {time.perf_counter() - t0:.1f}s")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
