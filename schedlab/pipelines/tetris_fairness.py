"""Tetris's fairness knob (tetris_fairness.toml: the setting, and why): job-by-job slowdowns vs f."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from schedlab.pipelines import tetris_packing as tp
from schedlab.pipelines.common import (
    POSITIVE_FLOOR,
    Estimate,
    ci_or_zero,
    emin,
    estimate,
    every,
    fmt_ci,
    interval_text,
    judge,
    lookup,
    md,
    ratios_to,
)
from schedlab.plotting import save

SLOWED_TOL = 1e-9  # relative: a JCT larger than the reference's by more than this is a slowdown (not rounding)
JCT_FLOOR = tp.EPOCH  # JCTs below one decision epoch are compared as one epoch
KEYS = ["window", "group"]
#: the plotted series: column of `analysis` (its mean over windows): label, marker
SERIES = {
    "frac_slowed": ("fraction slowed", "o"),
    "slowdown_mean": ("mean slowdown of slowed", "s"),
    "jct_mean_ratio": ("mean JCT", "^"),
    "makespan_ratio": ("makespan", "D"),
}


def specs(doc, scale, overrides):
    """The grid of f on tetris-packing's cluster and two-resource workload (its [every_sweep] and scales)."""
    from schedlab.pipelines.declare import sweep_specs

    env = {**tp.DOC["scales"][scale], **doc["scales"][scale]}
    return sweep_specs({**doc, "every_sweep": tp.DOC["every_sweep"], "scales": {scale: env}}, scale, overrides)


def job_slowdowns(runs, base, by: list[str], keys: list[str] = KEYS, floor: float = JCT_FLOOR, tol: float = SLOWED_TOL):
    """Job-by-job comparison with a reference run.

    ``runs``: columns ``keys`` (which job) + ``by`` (which run, e.g. f) +
    ``jct``; ``base``: ``keys`` + ``jct`` (the reference). Jobs are matched on
    ``keys``; unfinished jobs (null / NaN JCT) on either side are left out.
    Returns, per ``by`` group (sorted): ``jobs``, ``slowed`` (JCT >
    reference x (1 + tol), both floored at ``floor``), ``frac_slowed`` and
    ``slowdown_mean`` / ``slowdown_median`` (mean / median of JCT /
    reference - 1 over the slowed jobs; null when none is slowed)."""
    import polars as pl

    from schedlab.platform.statistics.stats import group_moments

    ref = base.select(keys + [pl.col("jct").alias("_ref")])
    j = runs.select(list(dict.fromkeys(keys + by)) + ["jct"]).join(ref, on=keys, how="inner")
    j = j.filter(pl.col("jct").is_not_nan() & pl.col("_ref").is_not_nan())  # a null predicate drops the row too
    ratio = pl.max_horizontal("jct", pl.lit(floor)) / pl.max_horizontal("_ref", pl.lit(floor))
    j = j.with_columns(_excess=pl.when(ratio > 1.0 + tol).then(ratio - 1.0))  # null: not slowed
    slowed = j.group_by(by).agg(
        slowed=pl.col("_excess").count().cast(pl.Int64), slowdown_median=pl.col("_excess").median()
    )
    return (
        group_moments(j, by, ["_excess"])  # n: the jobs; _excess_mean: the mean over the slowed ones
        .select(by + [pl.col("n").alias("jobs"), pl.col("_excess_mean").alias("slowdown_mean")])
        .join(slowed, on=by, nulls_equal=True)
        .with_columns(frac_slowed=pl.col("slowed") / pl.col("jobs"))
        .sort(by)
    )


def load_jct(results_dir: Path):
    """Per job: window, group, policy, f (NaN for Slots-Fair), jct; and the summary
    rows, with f (policy_fairness as a float) and window (an integer)."""
    import polars as pl

    from schedlab import load

    summ = load(results_dir).collect()
    summ = summ.with_columns(pl.col("policy_fairness").cast(pl.Float64).alias("f"), pl.col("window").cast(pl.Int64))
    jobs = (
        load(results_dir, "jobs")
        .group_by(["config_id", "group"])
        .agg((pl.col("end").max() - pl.col("submit").min()).alias("jct"))
        .collect()
    )
    cfg = summ.select("config_id", "policy", "f", "window").unique()
    return jobs.join(cfg, on="config_id", how="inner").drop("config_id"), summ


def analysis(dirs):
    """One row per f (sorted), Tetris against Tetris at the smallest f of the grid (f0)
    job by job: pooled over all jobs of all windows (jobs, slowed, frac_slowed,
    slowdown_mean, slowdown_median); against Slots-Fair (frac_slowed_slots,
    slowdown_mean_slots); and mean, 95 % CI and n over windows of the per-window
    frac_slowed and slowdown_mean and of mean JCT and makespan / f0's (jct_mean_ratio,
    makespan_ratio): the `SERIES`; and f0."""
    import polars as pl

    from schedlab.platform.statistics.stats import summarize

    jct, summ = load_jct(*dirs.values())
    tet = jct.filter(pl.col("policy") == tp.TETRIS)
    f0 = tet["f"].min()
    base = tet.filter(pl.col("f") == f0)
    runs = summ.filter(pl.col("policy") == tp.TETRIS).select(pl.col("f").alias("policy"), "window", *tp.METRICS)
    per_window = (  # `ratios_to` divides by the run of the policy named: here the run at f0
        ratios_to(runs, [*tp.METRICS], f0, ["window"])
        .rename({"policy": "f"})
        .join(job_slowdowns(tet, base, ["window", "f"]), on=["window", "f"], how="left")
    )
    slots = job_slowdowns(tet, jct.filter(pl.col("policy") == tp.BASELINE), ["f"])
    return (
        job_slowdowns(tet, base, ["f"])
        .join(summarize(per_window, ["f"], [*SERIES]), on="f", how="left")
        .join(slots.select("f", "frac_slowed", "slowdown_mean"), on="f", how="left", suffix="_slots")
        .with_columns(f0=pl.lit(f0))
        .sort("f")
    )


def plot(data, path: Path) -> list[str]:
    """(a) fraction slowed and (b) mean slowdown of the slowed jobs, in per cent
    (symmetric t bars, y from 0; f0, the reference itself, left out), with the
    talk's bound (its claim's ``than``) dotted; (c) mean JCT and makespan / f0's:
    a ratio is > 0, so its bars are the log-transformed interval above `POSITIVE_FLOOR`."""
    import matplotlib.pyplot as plt

    from schedlab.plotting import errorbar

    t, f0 = data.table, data.table["f"][0]
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.8))
    fig.subplots_adjust(wspace=0.3)
    for (m, (label, marker)), ax in zip(SERIES.items(), [*axes, axes[2]]):  # (c) holds the last two
        r = t.filter(t[f"{m}_mean"].is_not_null() & ((t["f"] != f0) | (ax is axes[2])))
        k, floor = (1.0, POSITIVE_FLOOR) if ax is axes[2] else (100.0, None)
        mean, ci = [k * v for v in r[f"{m}_mean"]], [k * c for c in ci_or_zero(r[f"{m}_ci95"])]
        errorbar(ax, r["f"].to_list(), mean, ci, floor, marker=marker, capsize=2, label=label)
    for ax, claim, bound in zip(axes, data.fig["claims"], ("talk: < 6 %", "talk: ≤ 8 %")):
        ax.axhline(100 * claim["than"], color="red", linestyle=":", linewidth=0.8, label=bound)
        ax.set_ylim(bottom=0)
    axes[2].axhline(1.0, color="grey", linestyle=":", linewidth=0.8)
    axes[2].axvline(data.fig["recommended"], color="grey", linestyle="--", linewidth=0.8)
    ylabels = (
        f"jobs slowed vs f = {f0:g} (%)",
        "JCT increase of slowed jobs (%)",
        f"relative to f = {f0:g} (same window)",
    )
    titles = ("(a) fraction of jobs slowed", "(b) mean slowdown of slowed jobs", "(c) efficiency")
    for ax, ylabel, title in zip(axes, ylabels, titles):
        ax.set(ylabel=ylabel, title=title, xlabel="fairness knob f")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    save(fig, path)
    return [label for label, _ in SERIES.values()]


def measured(data) -> str:
    t = data.table
    head = ["f", "jobs", "slowed (pooled)", "mean (median) slowdown of slowed (pooled)", "slowed (per window)"]
    head += ["mean JCT / ref", "makespan / ref", "slowed vs Slots-Fair, by (pooled)"]
    rows = [
        [
            f"{r['f']:g}",
            str(r["jobs"]),
            f"{r['frac_slowed']:.1%} ({r['slowed']})",
            "–" if r["slowdown_mean"] is None else f"{r['slowdown_mean']:.1%} ({r['slowdown_median']:.1%})",
            fmt_ci(100 * r["frac_slowed_mean"], 100 * ci_or_zero([r["frac_slowed_ci95"]])[0]) + " %",
            fmt_ci(r["jct_mean_ratio_mean"], r["jct_mean_ratio_ci95"]),
            fmt_ci(r["makespan_ratio_mean"], r["makespan_ratio_ci95"]),
            "–"
            if r["frac_slowed_slots"] is None
            else f"{r['frac_slowed_slots']:.1%}" + by(r["slowdown_mean_slots"], ", "),
        ]
        for r in t.iter_rows(named=True)
    ]
    return "\n".join(
        [
            f"Reference: Tetris at f = {t['f'][0]:g} (the most-fair run), same window, job by job. Pooled = all "
            "jobs of all windows; per window = mean ± 95 % CI over windows.",
            "",
            md(head, rows),
            "",
            f"Windows: {', '.join(map(str, sorted(set(t['n']))))}. Slowed: JCT above the reference's by more than "
            f"a relative {SLOWED_TOL:g} (JCTs floored at {JCT_FLOOR:g} s). The last column compares each job "
            "under Tetris with the same job under Slots-Fair (informative, not checked).",
        ]
    )


def knob(data) -> dict[str, Any]:
    """The row of the talk's recommended f (``recommended``; the largest f of a grid without it)."""
    return lookup(data.table, f=data.fig["recommended"]) or data.table.row(-1, named=True)


def by(slowdown: float | None, sep: str = " by ") -> str:
    """A mean slowdown after a fraction slowed ('' when no job is slowed)."""
    return "" if slowdown is None else f"{sep}{slowdown:.1%}"


def at_knob(data, claim):
    """The pooled ``quantity`` at the recommended f ``comparison`` ``than``; the detail:
    ``point``, formatted with the row and ``others`` (every f but f0, its fraction
    slowed by its mean slowdown), or ``empty`` when the quantity is null (no job
    slowed: no slowdown to bound)."""
    r, t = knob(data), data.table
    others = "; ".join(f"f={o['f']:g}: {o['frac_slowed']:.1%}" + by(o["slowdown_mean"]) for o in t.rows(named=True)[1:])
    v = r[claim.quantity]
    per_window = estimate(r, claim.quantity)  # the per-window values' mean and 95 % interval over windows
    detail = claim.empty if v is None else claim.point.format(**r, others=others)
    detail += f"; per window: {interval_text(per_window)}" if v is not None else ""
    return claim.verdict("holds" if v is None else judge(per_window, claim.comparison, claim.than), detail, **r)


def near_best(data, claim):
    """Each ratio of ``quantity`` (mean JCT, makespan / f0's) at the recommended f within
    ``tolerance`` of the best f's."""
    r, t = knob(data), data.table
    f0 = setting(data)["f"]

    def ratio(row, m):  # f0's own ratio to itself is exactly 1 (not a value without an interval)
        return Estimate(1.0, 1.0, 1.0) if row["f"] == f0 else estimate(row, m)

    rows = list(t.iter_rows(named=True))
    gaps = {m: (ratio(r, m), emin(ratio(row, m) for row in rows)) for m in claim.quantity.split(", ")}
    return claim.verdict(
        every(judge(v / best - 1, "<=", claim.tolerance) for v, best in gaps.values()),
        "; ".join(
            f"{SERIES[m][0]} / ref {v:.3f} vs best {best:.3f} (+{v / best - 1:.1%})" for m, (v, best) in gaps.items()
        ),
        **r,
    )


def setting(data) -> dict[str, Any]:
    """A row of the analysis (f0, for paper_says)."""
    return data.table.row(0, named=True)
