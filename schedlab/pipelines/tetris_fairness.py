"""Tetris's fairness knob (tetris_fairness.toml: the setting, and why): job-by-job slowdowns vs f."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from schedlab.pipelines import tetris_packing as tp
from schedlab.pipelines.common import POSITIVE_FLOOR, ci_or_zero, fmt_ci, row_at, save

DOC = tomllib.loads(Path(__file__).with_suffix(".toml").read_text())
FIGURE = DOC["figures"][0]
RECOMMENDED = FIGURE["recommended"]
SLOWED_MAX, SLOWDOWN_MAX = (c["than"] for c in FIGURE["claims"][:2])  # the talk's 6 % and 8 %: claims, and lines
SLOWED_TOL = 1e-9  # relative: a JCT larger than the reference's by more than this is a slowdown (not rounding)
JCT_FLOOR = tp.EPOCH  # JCTs below one decision epoch are compared as one epoch
KEYS = ["window", "group"]


def specs(doc, scale, overrides):
    """The grid of f on tetris-packing's system and two-resource workload."""
    from schedlab.pipelines.declare import sweep_specs

    two = sweep_specs(tp.DOC, scale, {})[0]
    doc = {**doc, "scales": {scale: {**doc["scales"][scale], "system": two["system"], "workload": two["workload"]}}}
    return sweep_specs(doc, scale, overrides)


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

    from schedlab.platform.stats import group_moments

    ok = lambda c: pl.col(c).is_not_null() & pl.col(c).is_not_nan()  # noqa: E731
    ref = base.select(keys + [pl.col("jct").alias("_ref")]).filter(ok("_ref"))
    cols = list(dict.fromkeys(keys + by))
    j = runs.select(cols + ["jct"]).filter(ok("jct")).join(ref, on=keys, how="inner")
    j = j.with_columns(
        (pl.max_horizontal(pl.col("jct"), pl.lit(floor)) / pl.max_horizontal(pl.col("_ref"), pl.lit(floor))).alias(
            "_ratio"
        )
    )
    j = j.with_columns((pl.col("_ratio") > 1.0 + tol).alias("_slowed"))
    j = j.with_columns(pl.when(pl.col("_slowed")).then(pl.col("_ratio") - 1.0).alias("_excess"))
    mean = group_moments(j, by, ["_excess"]).select(by + [pl.col("_excess_mean").alias("slowdown_mean")])
    return (
        j.group_by(by)
        .agg(
            pl.len().alias("jobs"),
            pl.col("_slowed").sum().cast(pl.Int64).alias("slowed"),
            pl.col("_excess").median().alias("slowdown_median"),
        )
        .join(mean, on=by, nulls_equal=True)
        .select(by + ["jobs", "slowed", "slowdown_mean", "slowdown_median"])
        .with_columns((pl.col("slowed") / pl.col("jobs")).alias("frac_slowed"))
        .sort(by)
    )


def load_jct(results_dir: Path):
    """Per job: window, group, policy, f (NaN for Slots-Fair), jct."""
    import polars as pl

    from schedlab import load

    summ = load(results_dir).collect()
    fcol = "policy_fairness"
    cfg = summ.select(
        [
            "config_id",
            "policy",
            (pl.col(fcol) if fcol in summ.columns else pl.lit(None)).cast(pl.Float64).alias("f"),
            pl.col("window").cast(pl.Float64).cast(pl.Int64),
        ]
    ).unique()
    jobs = (
        load(results_dir, "jobs")
        .select(["config_id", "group", "submit", "end"])
        .group_by(["config_id", "group"])
        .agg((pl.col("end").max() - pl.col("submit").min()).alias("jct"))
        .collect()
    )
    return jobs.join(cfg, on="config_id", how="inner").drop("config_id"), summ


def analysis(dirs) -> dict[str, Any]:
    """Pooled and per-window slowdowns vs the smallest f, efficiency vs f."""
    import polars as pl

    (results_dir,) = dirs.values()
    jct, summ = load_jct(results_dir)
    from schedlab.platform.stats import summarize

    tet = jct.filter(pl.col("policy") == tp.TETRIS)
    fs = sorted(set(tet["f"].to_list()))
    f0 = fs[0]
    base = tet.filter(pl.col("f") == f0)
    pooled = job_slowdowns(tet, base, ["f"])
    per_window = job_slowdowns(tet, base, ["window", "f"])
    per_window_s = summarize(per_window, ["f"], ["frac_slowed", "slowdown_mean"])
    slots = jct.filter(pl.col("policy") == tp.BASELINE)
    vs_slots = job_slowdowns(tet, slots, ["f"]) if slots.height else None

    s = summ.filter(pl.col("policy") == tp.TETRIS).select(
        [
            pl.col("policy_fairness").cast(pl.Float64).alias("f"),
            pl.col("window").cast(pl.Float64).cast(pl.Int64),
            "jct_mean",
            "makespan",
        ]
    )
    b = s.filter(pl.col("f") == f0).select(["window", pl.col("jct_mean").alias("_bj"), pl.col("makespan").alias("_bm")])
    eff = s.join(b, on="window").with_columns(
        (pl.col("jct_mean") / pl.col("_bj")).alias("jct_ratio"),
        (pl.col("makespan") / pl.col("_bm")).alias("makespan_ratio"),
    )
    eff_s = summarize(eff, ["f"], ["jct_ratio", "makespan_ratio", "jct_mean", "makespan"])
    return {"fs": fs, "f0": f0, "pooled": pooled, "per_window": per_window_s, "eff": eff_s, "vs_slots": vs_slots}


def _at(table, f: float) -> dict[str, Any]:
    return row_at(table, f=f)


def _ci(r, m) -> float:
    return ci_or_zero([r[f"{m}_ci95"]])[0]


def plot(data, path: Path) -> list[str]:
    """(a) fraction slowed and (b) slowdown of slowed jobs (linear, symmetric t
    bars, y from 0); (c) JCT and makespan ratios to f0: a ratio is > 0, so its
    bars are the log-transformed interval above `POSITIVE_FLOOR`."""
    import matplotlib.pyplot as plt

    from schedlab.plotting import errorbar

    a = data.table
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.8))
    fig.subplots_adjust(wspace=0.3)
    pw, eff = a["per_window"], a["eff"]
    fs = [f for f in a["fs"] if f != a["f0"]]
    series = []
    rows = [_at(pw, f) for f in fs]
    ab = (  # column, marker, label, the talk's bound and its label
        ("frac_slowed", "o", "fraction slowed", SLOWED_MAX, "talk: < 6 %"),
        ("slowdown_mean", "s", "mean slowdown of slowed", SLOWDOWN_MAX, "talk: ≤ 8 %"),
    )
    ylabels = (f"jobs slowed vs f = {a['f0']:g} (%)", "JCT increase of slowed jobs (%)")
    titles = ("(a) fraction of jobs slowed", "(b) mean slowdown of slowed jobs")
    for ax, (m, marker, label, bound, bound_label), ylabel, title in zip(axes, ab, ylabels, titles):
        pts = [(f, r) for f, r in zip(fs, rows) if r[f"{m}_mean"] is not None]
        ax.errorbar(
            [f for f, _ in pts],
            [100 * r[f"{m}_mean"] for _, r in pts],
            yerr=[100 * _ci(r, m) for _, r in pts],
            marker=marker,
            capsize=2,
            label=label,
        )
        ax.axhline(100 * bound, color="red", linestyle=":", linewidth=0.8, label=bound_label)
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        series.append(label)
    for m, label, marker in (("jct_ratio", "mean JCT", "^"), ("makespan_ratio", "makespan", "D")):
        rs = [_at(eff, f) for f in a["fs"]]
        errorbar(
            axes[2],
            a["fs"],
            [r[f"{m}_mean"] for r in rs],
            [r[f"{m}_ci95"] for r in rs],
            POSITIVE_FLOOR,
            marker=marker,
            capsize=2,
            label=label,
        )
        series.append(label)
    axes[2].axhline(1.0, color="grey", linestyle=":", linewidth=0.8)
    axes[2].axvline(RECOMMENDED, color="grey", linestyle="--", linewidth=0.8)
    axes[2].set_ylabel(f"relative to f = {a['f0']:g} (same window)")
    axes[2].set_title("(c) efficiency")
    axes[0].set_ylim(bottom=0)
    axes[1].set_ylim(bottom=0)
    for ax in axes:
        ax.set_xlabel("fairness knob f")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    save(fig, path)
    return series


def measured(data) -> str:
    a = data.table
    lines = [
        f"Reference: Tetris at f = {a['f0']:g} (the most-fair run), same window, job by job. Pooled = all "
        "jobs of all windows; per window = mean ± 95 % CI over windows.",
        "",
        "| f | jobs | slowed (pooled) | mean (median) slowdown of slowed (pooled) | slowed (per window) | "
        "mean JCT / ref | makespan / ref | slowed vs Slots-Fair, by (pooled) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for f in a["fs"]:
        p, w, e = _at(a["pooled"], f), _at(a["per_window"], f), _at(a["eff"], f)
        vs = _at(a["vs_slots"], f) if a["vs_slots"] is not None else None
        sd, med = p["slowdown_mean"], p["slowdown_median"]
        lines.append(
            f"| {f:g} | {p['jobs']} | {p['frac_slowed']:.1%} ({p['slowed']}) | "
            f"{'–' if sd is None else f'{sd:.1%} ({med:.1%})'} | "
            f"{fmt_ci(100 * w['frac_slowed_mean'], 100 * _ci(w, 'frac_slowed'))} % | "
            f"{fmt_ci(e['jct_ratio_mean'], e['jct_ratio_ci95'])} | "
            f"{fmt_ci(e['makespan_ratio_mean'], e['makespan_ratio_ci95'])} | "
            + (
                f"{vs['frac_slowed']:.1%}" + (f", {vs['slowdown_mean']:.1%}" if vs["slowdown_mean"] is not None else "")
                if vs
                else "–"
            )
            + " |"
        )
    n = sorted(set(a["eff"]["n"].to_list()))
    lines += [
        "",
        f"Windows: {', '.join(map(str, n))}. Slowed: JCT above the reference's by more than a relative "
        f"{SLOWED_TOL:g} (JCTs floored at {JCT_FLOOR:g} s). The last column compares each job under Tetris "
        "with the same job under Slots-Fair (informative, not checked).",
    ]
    return "\n".join(lines)


def _recommended(a: dict[str, Any]) -> float:
    return RECOMMENDED if _at(a["pooled"], RECOMMENDED) else a["fs"][-1]


def few_slowed(data, claim):
    a = data.table
    f = _recommended(a)
    p = _at(a["pooled"], f)
    others = "; ".join(
        f"f={r['f']:g}: {r['frac_slowed']:.1%}"
        + (f" by {r['slowdown_mean']:.1%}" if r["slowdown_mean"] is not None else "")
        for r in a["pooled"].iter_rows(named=True)
        if r["f"] != a["f0"]
    )
    return claim.verdict(
        p["frac_slowed"] < claim.than,
        f"{p['frac_slowed']:.1%} of {p['jobs']} jobs slowed at f = {f:g}; all f: {others}",
        f=f,
        f0=a["f0"],
    )


def little_slowdown(data, claim):
    f = _recommended(data.table)
    p = _at(data.table["pooled"], f)
    sd = p["slowdown_mean"]
    return claim.verdict(
        sd is None or sd <= claim.than,
        "no job slowed" if sd is None else f"mean JCT increase of the {p['slowed']} slowed jobs: {sd:.1%}",
        f=f,
    )


def near_best(data, claim):
    a = data.table
    f, eff = _recommended(a), a["eff"]
    best_j = min(r["jct_ratio_mean"] for r in eff.iter_rows(named=True))
    best_m = min(r["makespan_ratio_mean"] for r in eff.iter_rows(named=True))
    e = _at(eff, f)
    gap_j, gap_m = e["jct_ratio_mean"] / best_j - 1, e["makespan_ratio_mean"] / best_m - 1
    return claim.verdict(
        gap_j <= claim.tolerance and gap_m <= claim.tolerance,
        f"mean JCT / ref {e['jct_ratio_mean']:.3f} vs best {best_j:.3f} (+{gap_j:.1%}); makespan / ref "
        f"{e['makespan_ratio_mean']:.3f} vs best {best_m:.3f} (+{gap_m:.1%})",
        f=f,
        f0=a["f0"],
    )


def setting(data) -> dict[str, float]:
    return {"f0": data.table["f0"]}
