"""PSBS Fig. 4 (psbs_ecdf.toml): per-job slowdown ECDFs, their table and claims."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from schedlab.pipelines.common import md, pooled_note
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


def analogous(data, claim):
    dist = {s: ecdf_distance(jobs["FSPE+PS"], jobs["FSPE+LAS"]) for s, jobs in sorted(data.table.items())}
    return claim.verdict(
        all(d < claim.tolerance for d in dist.values()), ", ".join(f"shape {s:g}: {d:.3f}" for s, d in dist.items())
    )


def more_optimal_with_fspe(data, claim):
    shapes = sorted(data.table)
    one = {s: {p: at_one(sd) for p, sd in data.table[s].items()} for s in shapes}
    return claim.verdict(
        all(min(one[s][p] for p in FSPE_BASED) > max(one[s][p] for p in SRPTE_BASED) for s in shapes),
        "; ".join(
            f"shape {s:g}: " + ", ".join(f"{p} {one[s][p]:.1%}" for p in FSPE_BASED + SRPTE_BASED) for s in shapes
        ),
    )
