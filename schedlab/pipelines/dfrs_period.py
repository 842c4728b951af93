"""DFRS Figs. 2 and 3 (dfrs_period.toml): per trace set, the DFRS algorithm
by period and EASY as a level; the panel figure, its table and the claims
over sets and periods."""

from __future__ import annotations

import math
from pathlib import Path

from schedlab.pipelines import dfrs_common as dc
from schedlab.pipelines.common import (
    RATIO_FLOOR,
    Estimate,
    cell,
    ci_or_zero,
    emax,
    estimate,
    every,
    judge,
    md,
    paired_mean_ratio,
)
from schedlab.plotting import save

DOC = dc.read(__name__)
SETS: list[str] = DOC["sets"]
specs = dc.specs


def tables(results_dirs: dict[str, Path]):
    """{set: (DFRS summary by period, EASY summary)} of underutilization and degradation."""
    import polars as pl

    from schedlab.platform.statistics.stats import summarize

    metrics = ["underutilization", "degradation"]
    out = {}
    for trace_set in SETS:
        rows = dc.rows(results_dirs, "dfrs-period", trace_set)
        dfrs = summarize(rows.filter(pl.col("policy") == dc.BEST), ["policy", "policy_period"], metrics)
        easy = summarize(rows.filter(pl.col("policy") == "EASY"), ["policy"], metrics)
        out[trace_set] = (dfrs, easy)
    return out


def plot(data, path: Path) -> list[str]:
    """One panel per trace set: the DFRS algorithm vs period (dots), EASY as a
    level line. On the log axis (the degradation from a lower bound, >= 1)
    the bars are the log-transformed interval above `RATIO_FLOOR`; on the
    linear one the symmetric t interval."""
    import matplotlib.pyplot as plt

    from schedlab.plotting import errorbar

    col, log = data.fig["column"], data.fig.get("log", False)
    fig, axes = plt.subplots(1, len(SETS), figsize=(14, 3.8))
    for ax, trace_set in zip(axes, SETS):
        dfrs, easy = data.table[trace_set]
        x, y = dfrs["policy_period"].to_list(), dfrs[f"{col}_mean"].to_list()
        ci = ci_or_zero(dfrs[f"{col}_ci95"].to_list())
        errorbar(ax, x, y, ci, RATIO_FLOOR if log else None, fmt="o:", capsize=2, label=dc.BEST)
        ax.axhline(float(easy[f"{col}_mean"][0]), color="k", linewidth=1.2, label="EASY")
        ax.set_xlabel("period (s)")
        ax.set_title(dc.TITLES[trace_set])
        if log:
            ax.set_yscale("log")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel(data.fig["ylabel"])
    axes[0].legend(fontsize=7)
    save(fig, path)
    return [dc.BEST, "EASY"]


def measured(data) -> str:
    """Coverage, then the figure's column: EASY and every period, one row per set."""
    tabs, col = data.table, data.fig["column"]
    periods = sorted({p for s in SETS for p in tabs[s][0]["policy_period"].to_list()})
    rows = [
        [dc.TITLES[s], cell(tabs[s][1], "EASY", col)]
        + [cell(tabs[s][0], dc.BEST, col, policy_period=p) for p in periods]
        for s in SETS
    ]
    return (
        f"{dc.coverage(data.dirs, 'dfrs-period', SETS)}\n\n{data.fig['caption']}:\n\n"
        + md(["trace set", "EASY"] + [f"period {p:g} s" for p in periods], rows)
        + f"\n\nInstances per point: {dc.counts({s: tabs[s][0] for s in SETS})}; "
        + "± is the 95 % CI half-width (Student t).\n\n**How the verdicts read these numbers.** "
        + dc.exactness_note(SETS, [s for s in SETS if _exact(data, s)])
    )


def _exact(data, trace_set: str) -> bool:
    """Whether a set's averages are exact (`dfrs_common.exact_set`: every HPC2N week of the paper's set ran)."""
    dfrs, easy = data.table[trace_set]
    return dc.exact_set(trace_set, dfrs["n"].to_list() + easy["n"].to_list())


def _at(data, col: str) -> tuple[dict[str, dict[float, Estimate]], dict[str, Estimate]]:
    """({set: {period: mean}}, {set: EASY's mean}) of ``col``, each an `Estimate` with its 95 % interval
    (exact on a whole fixed set: `dfrs_common.exact_set`)."""
    tabs = data.table

    def est(row, s: str) -> Estimate:
        e = estimate(row, col)
        return dc.exact(float(e), s) if _exact(data, s) else e

    by = {s: {r["policy_period"]: est(r, s) for r in tabs[s][0].iter_rows(named=True)} for s in SETS}
    return by, {s: est(tabs[s][1].row(0, named=True), s) for s in SETS}


def _paired(data, col: str):
    """``ratio(a, b, set)`` of two terms' averages (EASY, first, last,
    worst: `per_set`'s) with the paired interval over the set's instances
    (every period and EASY ran the same ones: `paired_mean_ratio`), exact on
    a whole fixed set; NaN with no rows at hand (a table checked alone),
    when the claim reads the quotient of the two averages' own intervals."""
    if not data.dirs:
        return lambda a, b, s: Estimate(math.nan)
    import polars as pl

    by, _ = _at(data, col)
    per = {}
    for s in SETS:
        rows = dc.rows(data.dirs, "dfrs-period", s)
        per[s] = dc.per_instance(rows.filter(pl.col("policy") == dc.BEST), s, "policy_period", col)
        per[s]["EASY"] = dc.per_instance(rows.filter(pl.col("policy") == "EASY"), s, "policy", col)["EASY"]

    def key(name: str, s: str):
        periods = by[s]
        return {
            "EASY": "EASY",
            "first": min(periods),
            "last": max(periods),
            "worst": max(periods, key=lambda p: float(periods[p])),
        }.get(name)

    def ratio(a: str, b: str, s: str) -> Estimate:
        ka, kb = key(a, s), key(b, s)
        if ka is None or kb is None or ka not in per[s] or kb not in per[s]:
            return Estimate(math.nan)
        r = paired_mean_ratio(per[s][ka], per[s][kb])
        return dc.exact(float(r), s) if _exact(data, s) and r == r else r

    return ratio


def per_set(data, claim):
    """`Claim.at_points` on every set, of the figure's ``column``. Terms:
    EASY (its mean), first and last (the means at the smallest and the largest
    period), first period and last period, worst (the largest mean over the
    periods), growth (last / first) and limit (the set's bound in the figure's
    ``growth``, listed by ``{factors}`` in ``says``). A ratio of two of the
    averages, and the growth, are judged on their paired interval (`_paired`)."""
    col = data.fig["column"]
    by, easy = _at(data, col)
    limit = data.fig.get("growth", {})
    ratio = _paired(data, col)

    def term(name: str, s: str) -> float:
        lo, hi = min(by[s]), max(by[s])
        if name == "growth":  # (only asked of a degradation, >= 1: never a division by 0)
            paired = ratio("last", "first", s)
            return paired if paired == paired else by[s][hi] / by[s][lo]
        named = {"first": by[s][lo], "last": by[s][hi], "first period": lo, "last period": hi}
        return {**named, "EASY": easy[s], "worst": emax(by[s].values()), "limit": limit.get(s, math.nan)}[name]

    factors = ", ".join(f"{limit[s]:g} ({s})" for s in SETS if s in limit)

    def on(sets: list[str]):
        return claim.at_points(sets, term, ratio=ratio, factors=factors)

    return dc.reads_undecided(on(SETS), SETS, "dfrs-period", on)


def below_easy_beyond(data, claim):
    u, easy = _at(data, "underutilization")
    beyond = claim.where["policy_period"][">"]
    synth = [(s, p) for s in ("unscaled", "scaled") for p in u[s] if p > beyond]
    return claim.verdict(
        every(judge(u[s][p], "<", easy[s]) for s, p in synth) if synth else "fails",
        ", ".join(f"{s} {p:g} s: {u[s][p]:.3f} vs EASY {easy[s]:.3f}" for s, p in synth),
        beyond=beyond,
    )


def above_easy(data, claim):
    u, easy = _at(data, "underutilization")
    return claim.verdict(
        every(judge(u["hpc2n"][p], ">", easy["hpc2n"]) for p in u["hpc2n"]),
        f"EASY {easy['hpc2n']:.3f}; DFRS " + ", ".join(f"{p:g} s: {v:.3f}" for p, v in sorted(u["hpc2n"].items())),
    )


def report(declared, dirs: dict[str, Path], out_dir: Path):
    """The figure reports, each with its finished instances per point (`dfrs_common.report`)."""
    return dc.report(declared, dirs, out_dir, "dfrs-period", SETS)
