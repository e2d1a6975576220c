"""Campaign reports: the text table and the PNG of a campaign, the table of noise-study rows.

:func:`format_campaign` and :func:`plot_campaign` show a
:class:`~firmware_sim.campaign.CampaignResult` with the analytic predictions
that :func:`export.analytics.add_analytic` attached (matplotlib, the ``plot``
extra, is imported only by :func:`plot_campaign`). :func:`format_rows`
prints the rows of :func:`export.demo_campaign.compare_channels` (the demo's
campaign stage and ``benchmarks/burst_vs_independent.py``).
"""

import numpy as np

from firmware_sim.campaign import CampaignResult

__all__ = ["format_campaign", "plot_campaign", "format_rows", "require_matplotlib",
           "PLOT_INSTALL"]

#: How to install what :func:`plot_campaign` needs.
PLOT_INSTALL = "pip install 'edgecode[plot]'"


def require_matplotlib():
    """``matplotlib`` with the non-interactive Agg backend, or an ``ImportError``
    that names the package and how to install it (the CLI checks this before
    a campaign runs, so ``--plot`` cannot fail after the work is done)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot  # noqa: F401  (the part plot_campaign draws with)
    except ImportError:
        raise ImportError(f"plots need matplotlib, which is not installed: {PLOT_INSTALL}") \
            from None
    return matplotlib


def format_campaign(result):
    """A text table of a campaign (one line per grid value)."""
    head = (f"{'value':>10} {'same':>9} {'CI':>21} {'accuracy':>9} {'analytic':>9} "
            f"{'refused':>7} {'trials/s':>10}")
    lines = [head]
    for p in result.points:
        an = p.analytic or {}
        a_txt = f"{an['same_rate']:.5f}" if an.get("available") else \
            f">={an['same_rate_lower_bound']:.4f}" if "same_rate_lower_bound" in an else "-"
        acc = f"{p.accuracy:.5f}" if p.accuracy is not None else "-"
        val = "-" if p.value is None else f"{p.value:g}" if isinstance(p.value, (int, float)) \
            else str(p.value)
        lines.append(f"{val:>10} {p.same_rate:9.5f} [{p.same_ci[0]:.5f}, {p.same_ci[1]:.5f}] "
                     f"{acc:>9} {a_txt:>9} {p.refused:7d} {p.trials_per_s:10.3g}")
    reasons = {p.analytic.get("reason") for p in result.points
               if p.analytic and not p.analytic.get("available")}
    for r in sorted(x for x in reasons if x):
        lines.append(f"analytic: {r}")
    if any("same_rate_interval" in (p.analytic or {}) and
           p.analytic["same_rate_interval"][0] < p.analytic["same_rate_interval"][1]
           for p in result.points):
        lines.append("analytic for an upset rate: midpoint of a certified interval "
                     "(two or more upsets per image bounded)")
    if any("same_rate_lower_bound" in (p.analytic or {}) for p in result.points):
        lines.append("analytic '>=': lower bound from each point's learner-output flip radius")
    return "\n".join(lines)


def plot_campaign(results, path, *, labels=None, title=None, metric="same_rate"):
    """PNG of one or more campaigns: the simulated rate with its interval per grid
    value, and the analytic prediction where one exists (needs matplotlib).

    Parameters
    ----------
    results : CampaignResult or list of them
    path : str or Path
    labels : list of str, optional
    metric : {"same_rate", "accuracy"}
    """
    require_matplotlib()
    import matplotlib.pyplot as plt

    if isinstance(results, CampaignResult):
        results = [results]
    labels = labels or [f"{r.fault.get('model', 'fault')}" for r in results]
    fig, ax = plt.subplots(figsize=(6, 4))
    for res, label in zip(results, labels):
        x = np.array([p.value if p.value is not None else 0 for p in res.points], float)
        ci_key = "same_ci" if metric == "same_rate" else "accuracy_ci"
        yv = np.array([getattr(p, metric) for p in res.points], float)
        ci = np.array([getattr(p, ci_key) for p in res.points], float)
        line = ax.errorbar(x, yv, yerr=[yv - ci[:, 0], ci[:, 1] - yv], marker="o", ms=4,
                           capsize=3, label=f"{label} (simulated)")
        an = [p.analytic for p in res.points]
        key = "same_rate" if metric == "same_rate" else "accuracy"
        ok = [i for i, a in enumerate(an) if a and a.get("available") and a.get(key) is not None]
        if ok:
            ax.plot(x[ok], [an[i][key] for i in ok], "--", color=line[0].get_color(),
                    label=f"{label} (analytic)")
    ax.set_xlabel(results[0].param or "fault parameter")
    ax.set_ylabel("same-classification rate" if metric == "same_rate" else "accuracy")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(title or f"{results[0].n_trials} trials per point, "
                 f"{int(100 * results[0].confidence)}% Wilson intervals", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def format_rows(rows):
    """Text table of :func:`export.demo_campaign.compare_channels` rows (1 - same rate,
    lower is better)."""
    out = [f"{'channel':<18} {'plan':<8} {'bits':>4} {'flip':>5} {'1-same':>9} "
           f"{'99% CI of 1-same':>21} {'analytic':>9} {'accuracy':>8}"]
    for r in rows:
        an = f"{1 - r['analytic']:.5f}" if r["analytic"] is not None else "-"
        out.append(f"{r['channel']:<18} {r['plan']:<8} {r['bits']:>4} {r['flip_rate']:>5g} "
                   f"{1 - r['same_rate']:9.5f} [{1 - r['ci'][1]:.5f}, {1 - r['ci'][0]:.5f}] "
                   f"{an:>9} {r['accuracy']:8.4f}")
    return "\n".join(out)

