"""PSBS paper (Dell'Amico, Carra, Michiardi 2014), Figs. 7 and 8, default
parameters (Weibull shape 0.25, sigma 0.5, load 0.9, timeshape 1): mean
conditional slowdown (jobs of all replications pooled, sorted by size, 100
equal-count bins) and the CDF of per-job slowdown, from per-job rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from schedlab.pipelines.base import Check, FigureReport, Pipeline, deep_merge
from schedlab.pipelines.common import MARKERS, save

POLICIES = ["FIFO", "PS", "LAS", "SRPTE", "FSPE", "PSBS"]
SCALES: dict[str, dict[str, Any]] = {
    "smoke": {"njobs": 400, "replications": {"n": 2}},
    "quick": {"njobs": 10000, "replications": {"n": 3}},
    "paper": {"njobs": 10000, "replications": {"n": 121}},  # footnote 5: 121 runs, 1,210,000 jobs
}
SMALL_BINS = 10  # "small jobs": the 10 smallest of the 100 size classes
NEAR_OPTIMAL = 1.5  # PSBS / LAS mean slowdown of small jobs at most this
FLAT = 2.0  # PS: small-job and large-job mean slowdowns within a factor 2
HIGH = 100.0  # the paper's "slowdown larger than 100"


def specs(scale: str, overrides: dict[str, Any]) -> list[dict[str, Any]]:
    s = SCALES[scale]
    spec = {
        "name": f"psbs-slowdown-{scale}",
        "engine": "queue",
        "seed": 18,
        "policies": list(POLICIES),
        "workload": {"kind": "synthetic", "njobs": s["njobs"], "shape": 0.25, "sigma": 0.5, "load": 0.9,
                     "timeshape": 1.0},
        "replications": dict(s["replications"]),
        "outputs": {"per_job": True},
    }
    return [deep_merge(spec, overrides)]


def per_job(results_dir: Path) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """policy -> (size, slowdown) over every job of every replication."""
    import polars as pl

    from schedlab import load

    df = load(results_dir, "jobs").select(["policy", "size", "slowdown"]).collect()
    out = {}
    for p in POLICIES:
        sub = df.filter(pl.col("policy") == p)
        if sub.height:
            out[p] = (sub["size"].to_numpy().astype(float), sub["slowdown"].to_numpy().astype(float))
    return out


def curves(jobs) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    from schedlab.sim.metrics import conditional_slowdown

    return {p: conditional_slowdown(size, sd) for p, (size, sd) in jobs.items()}


def plot_fig7(cond, path: Path) -> list[str]:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    series = []
    for p in POLICIES:
        if p not in cond:
            continue
        x, y = cond[p]
        ax.plot(x, y, label=p, marker=MARKERS.get(p, "o"), markersize=3, linewidth=1.0, markevery=5)
        series.append(p)
    ax.axhline(1.0, color="grey", linewidth=0.8, linestyle=":")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("job size")
    ax.set_ylabel("mean conditional slowdown")
    ax.set_title("Mean conditional slowdown (100 size classes)")
    ax.legend(fontsize=8, ncol=2)
    ax.grid(True, which="major", alpha=0.3)
    save(fig, path)
    return series


def plot_fig8(jobs, path: Path) -> list[str]:
    """Per-job slowdown CDF: full (top) and zoom on the 10 % most critical jobs (bottom)."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 1, figsize=(6, 6.5), sharex=True)
    series = []
    for p in POLICIES:
        if p not in jobs:
            continue
        sd = np.sort(jobs[p][1][~np.isnan(jobs[p][1])])
        cdf = np.arange(1, sd.size + 1) / sd.size
        for ax in axes:
            ax.step(sd, cdf, where="post", label=p, linewidth=1.1)
        series.append(p)
    axes[1].set_ylim(0.9, 1.0005)
    for ax in axes:
        ax.set_xscale("log")
        ax.grid(True, which="major", alpha=0.3)
        ax.set_ylabel("CDF")
    axes[0].set_title("Per-job slowdown: full CDF (top), top 10 % (bottom)")
    axes[1].set_xlabel("slowdown")
    axes[0].legend(fontsize=8, ncol=2)
    save(fig, path)
    return series


def small_large(cond) -> dict[str, tuple[float, float]]:
    return {p: (float(np.mean(y[:SMALL_BINS])), float(np.mean(y[-SMALL_BINS:]))) for p, (_, y) in cond.items()}


def fig7_checks(cond) -> list[Check]:
    sl = small_large(cond)
    out = []
    s, l = sl["PS"]
    out.append(Check(
        f"the expected slowdown of PS is constant irrespective of size (smallest vs largest {SMALL_BINS} size "
        f"classes within a factor {FLAT:g})",
        1 / FLAT <= s / l <= FLAT,
        f"PS mean slowdown: small {s:.2f}, large {l:.2f} (ratio {s / l:.2f})"))
    out.append(Check(
        f"PSBS and LAS have close to optimal slowdown for small jobs (mean over the {SMALL_BINS} smallest "
        f"classes ≤ {NEAR_OPTIMAL:g})",
        all(sl[p][0] <= NEAR_OPTIMAL for p in ("PSBS", "LAS")),
        f"PSBS {sl['PSBS'][0]:.3f}, LAS {sl['LAS'][0]:.3f} (PS {sl['PS'][0]:.2f})"))
    out.append(Check(
        "PSBS outperforms PS in conditional slowdown for small jobs",
        sl["PSBS"][0] < sl["PS"][0],
        f"small jobs: PSBS {sl['PSBS'][0]:.2f} vs PS {sl['PS'][0]:.2f}"))
    out.append(Check(
        "FIFO, SRPTE and FSPE are unfair to small jobs (small-job slowdown above PSBS's and above their own "
        "large-job slowdown)",
        all(sl[p][0] > sl["PSBS"][0] and sl[p][0] > sl[p][1] for p in ("FIFO", "SRPTE", "FSPE")),
        ", ".join(f"{p}: small {sl[p][0]:.3g}, large {sl[p][1]:.3g}" for p in ("FIFO", "SRPTE", "FSPE"))))
    out.append(Check(
        "the better MST of PSBS over LAS comes from larger jobs, more penalised in LAS (large-job slowdown "
        "PSBS < LAS)",
        sl["PSBS"][1] < sl["LAS"][1],
        f"largest {SMALL_BINS} classes: PSBS {sl['PSBS'][1]:.2f} vs LAS {sl['LAS'][1]:.2f}"))
    return out


def fig8_checks(jobs) -> list[Check]:
    at1 = {p: float(np.mean(sd[~np.isnan(sd)] <= 1.0 + 1e-9)) for p, (_, sd) in jobs.items()}
    high = {p: float(np.mean(sd[~np.isnan(sd)] > HIGH)) for p, (_, sd) in jobs.items()}
    out = [Check(
        "all size-based policies and LAS give the optimal slowdown of 1 to the majority of jobs",
        all(at1[p] > 0.5 for p in ("SRPTE", "FSPE", "PSBS", "LAS")),
        "share of jobs with slowdown 1: " + ", ".join(f"{p} {at1[p]:.1%}" for p in POLICIES))]
    out.append(Check(
        f"some jobs get very high slowdowns in SRPTE and FSPE, more in SRPTE (share > {HIGH:g}: "
        f"SRPTE > FSPE > 0; paper ≈ 8 % and 1 %)",
        high["SRPTE"] > high["FSPE"] > 0,
        ", ".join(f"{p} {high[p]:.2%}" for p in ("SRPTE", "FSPE"))))
    out.append(Check(
        f"PS, LAS and PSBS: no job has slowdown above {HIGH:g}",
        all(high[p] == 0 for p in ("PS", "LAS", "PSBS")),
        ", ".join(f"{p} {high[p]:.2%}" for p in ("PS", "LAS", "PSBS"))))
    return out


def table7(cond) -> str:
    sl = small_large(cond)
    lines = ["| policy | smallest 10 classes | largest 10 classes | all 100 classes (min–max) |", "|---|---|---|---|"]
    for p in POLICIES:
        if p in cond:
            y = cond[p][1]
            lines.append(f"| {p} | {sl[p][0]:.3g} | {sl[p][1]:.3g} | {y.min():.3g}–{y.max():.3g} |")
    return "\n".join(lines)


def table8(jobs) -> str:
    lines = ["| policy | jobs | slowdown = 1 | p50 | p90 | p99 | max | > 100 |", "|---|---|---|---|---|---|---|---|"]
    for p in POLICIES:
        if p in jobs:
            sd = jobs[p][1][~np.isnan(jobs[p][1])]
            q = np.percentile(sd, [50, 90, 99])
            lines.append(f"| {p} | {sd.size} | {np.mean(sd <= 1 + 1e-9):.1%} | {q[0]:.3g} | {q[1]:.3g} | "
                         f"{q[2]:.3g} | {sd.max():.3g} | {np.mean(sd > HIGH):.2%} |")
    return "\n".join(lines)


def report(results_dirs: dict[str, Path], out_dir: Path) -> list[FigureReport]:
    (results_dir,) = results_dirs.values()
    jobs = per_job(results_dir)
    cond = curves(jobs)
    nrep = len(set(__import__("schedlab").load(results_dir).select("replication").collect()["replication"].to_list()))
    png7 = out_dir / "psbs-slowdown-fig7.png"
    png8 = out_dir / "psbs-slowdown-fig8.png"
    s7 = plot_fig7(cond, png7)
    s8 = plot_fig8(jobs, png8)
    pooled = f"Jobs of all {nrep} replications pooled (Replications per point: {nrep}); no CI: one curve per policy."
    return [
        FigureReport(
            key="fig7", title="Fig. 7 — Mean conditional slowdown", png=png7, series=s7,
            paper_says=(
                "§6.5, Fig. 7 (default parameters; jobs sorted by size in 100 equal classes): \"The almost "
                "parallel lines of FIFO, SRPTE and FSPE for smaller jobs [...] We confirm experimentally the fact "
                "that the expected slowdown in PS is constant, irrespectively of job size; PSBS and LAS, on the "
                "other hand, have close to optimal slowdown for small jobs. The better MST of PSBS is instead due "
                "to better performance for larger jobs, which are more penalized in LAS.\" Caption: \"PSBS "
                "outperforms PS\"."),
            measured="Mean slowdown per size class:\n\n" + table7(cond) + "\n\n" + pooled,
            checks=fig7_checks(cond)),
        FigureReport(
            key="fig8", title="Fig. 8 — Per-job slowdown CDF", png=png8, series=s8,
            paper_says=(
                "§6.5, Fig. 8: \"all size-based scheduling techniques and LAS manage to obtain an optimal slowdown "
                "of 1 for the majority of jobs. However, some jobs experience very high slowdown values: jobs with "
                "a slowdown larger than 100 are around 1% for FSPE and around 8% for SRPTE. PS, LAS, and PSBS "
                "perform well in terms of fairness, with no jobs experiencing slowdown higher than 100\" (121 runs "
                "of 10,000 jobs)."),
            measured="Per-job slowdown distribution:\n\n" + table8(jobs) + "\n\n" + pooled,
            checks=fig8_checks(jobs)),
    ]


PIPELINE = Pipeline(
    name="psbs-slowdown",
    paper="Dell'Amico, Carra & Michiardi, PSBS: Practical Size-Based Scheduling (2014)",
    figure="Figs. 7–8",
    description="Mean conditional slowdown (100 size classes) and per-job slowdown CDF of FIFO, PS, LAS, SRPTE, "
                "FSPE and PSBS at the default parameters (shape 0.25, sigma 0.5, load 0.9), from per-job rows.",
    specs=specs,
    report=report,
)
