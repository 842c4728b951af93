"""PSBS Fig. 4 (psbs_ecdf.toml): per-job slowdown ECDFs, their table and claims."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from schedlab.pipelines.common import (
    emax,
    emin,
    every,
    interval_text,
    judge,
    md,
    over_replications,
    per_replication,
    pooled_note,
)
from schedlab.pipelines.psbs_slowdown import OPTIMAL, distribution
from schedlab.plotting import save

POLICIES = ["PS", "SRPTE", "FSPE", "SRPTE+PS", "SRPTE+LAS", "FSPE+PS", "FSPE+LAS"]
FSPE_BASED = ["FSPE+PS", "FSPE+LAS"]
SRPTE_BASED = ["SRPTE+PS", "SRPTE+LAS"]


def per_job(results_dir: Path) -> dict[float, dict[str, np.ndarray]]:
    """shape -> policy -> sorted per-job slowdowns (every job of every replication, NaN dropped)."""
    import polars as pl

    from schedlab import load

    shapes = load(results_dir).select(["config_id", "shape"]).unique().collect()
    df = (
        load(results_dir, "jobs")
        .select(["config_id", "policy", "slowdown"])
        .collect()
        .join(shapes, on="config_id", how="inner")
    )
    out: dict[float, dict[str, np.ndarray]] = {}
    for shape in sorted(set(df["shape"].to_list())):
        out[float(shape)] = {}
        for p in POLICIES:
            sd = df.filter((pl.col("shape") == shape) & (pl.col("policy") == p))["slowdown"].to_numpy()
            sd = np.sort(sd[~np.isnan(sd.astype(float))].astype(float))
            if sd.size:
                out[float(shape)][p] = sd
    return out


def per_job_table(dirs):
    (d,) = dirs.values()
    return per_job(d)


def ecdf_distance(a: np.ndarray, b: np.ndarray) -> float:
    """Max vertical distance between the ECDFs of two sorted samples (Kolmogorov–Smirnov)."""
    grid = np.union1d(a, b)
    fa = np.searchsorted(a, grid, side="right") / a.size
    fb = np.searchsorted(b, grid, side="right") / b.size
    return float(np.max(np.abs(fa - fb)))


def at_one(sd: np.ndarray) -> float:
    return float(np.mean(sd <= OPTIMAL))


def plot(data, path: Path) -> list[str]:
    import matplotlib.pyplot as plt

    jobs = data.table
    shapes = sorted(jobs)
    fig, axes = plt.subplots(1, len(shapes), figsize=(4.0 * len(shapes) + 1, 3.8), sharey=True, squeeze=False)
    series: list[str] = []
    for ax, shape in zip(axes[0], shapes):
        for p in [p for p in POLICIES if p in jobs[shape]]:
            sd = jobs[shape][p]
            ax.step(
                sd,
                np.arange(1, sd.size + 1) / sd.size,
                where="post",
                label=p,
                linewidth=1.1,
                linestyle="--" if p == "PS" else "-",
            )
            if p not in series:
                series.append(p)
        ax.set_xscale("log")
        ax.set_xlabel("slowdown")
        ax.set_title(f"shape = {shape:g}")
        ax.grid(True, which="major", alpha=0.3)
    axes[0][0].set_ylabel("ECDF")
    axes[0][0].legend(fontsize=7)
    save(fig, path)
    return series


def measured(data) -> str:
    head = ["shape", "policy", "jobs", "slowdown = 1", "p50", "p90", "p99"]
    rows = [
        [f"{s:g}", *distribution(p, data.table[s][p])]
        for s in sorted(data.table)
        for p in POLICIES
        if p in data.table[s]
    ]
    return md(head, rows) + "\n\n" + pooled_note(data.results_dir, "ECDF")


def _sorted_by_replication(data) -> dict[tuple[float, str], dict[int, np.ndarray]]:
    """(shape, policy) -> {replication: its jobs' sorted slowdowns (NaN dropped)}."""
    return per_replication(data.results_dir, lambda size, sd: np.sort(sd[~np.isnan(sd)]), ("shape",))


def analogous(data, claim):
    """The ECDF distance of FSPE+PS and FSPE+LAS, taken per replication (the same instance), then
    its mean and 95 % interval over replications, below ``tolerance`` at every shape."""
    runs = _sorted_by_replication(data)
    dist = {
        s: over_replications(
            ecdf_distance(runs[(s, "FSPE+PS")][r], runs[(s, "FSPE+LAS")][r])
            for r in sorted(set(runs[(s, "FSPE+PS")]) & set(runs[(s, "FSPE+LAS")]))
        )
        for s in sorted(data.table)
    }
    return claim.verdict(
        every(judge(d, "<", claim.tolerance) for d in dist.values()),
        ", ".join(f"shape {s:g}: {interval_text(d)}" for s, d in dist.items()),
    )


def more_optimal_with_fspe(data, claim):
    shapes = sorted(data.table)
    runs = _sorted_by_replication(data)
    one = {
        s: {p: over_replications(at_one(sd) for sd in runs[(s, p)].values()) for p in FSPE_BASED + SRPTE_BASED}
        for s in shapes
    }
    return claim.verdict(
        every(judge(emin(one[s][p] for p in FSPE_BASED), ">", emax(one[s][p] for p in SRPTE_BASED)) for s in shapes),
        "; ".join(
            f"shape {s:g}: " + ", ".join(f"{p} {interval_text(one[s][p])}" for p in FSPE_BASED + SRPTE_BASED)
            for s in shapes
        ),
    )
