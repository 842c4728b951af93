"""Psychas & Ghaderi (2021), High-Throughput Bin Packing, §VII-A.1-2, Fig. 3: queue
evolution on a single server of capacity 1. (a) sizes {0.4, 0.6} equally likely,
Poisson rate 0.014 per slot, geometric service of mean 100: VQS is unstable (its
reduced configurations only support 2/3 x 0.02), BF-J/S and VQS-BF are stable.
(b) sizes {0.2, 0.5} (2 and 5 on capacity 10) with P(0.2) = 2/3, rate 0.0306,
fixed service 100: VQS is stable, the best-fit variants grow (with positive
probability). Drawn from the packing engine's sampled time series."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from schedlab.pipelines.base import Check, FigureReport, Pipeline, deep_merge
from schedlab.pipelines.common import MARKERS, save

POLICIES = ["VQS", "BF-J/S", "VQS-BF"]
#: panel -> (workload, plotted series column, y label, pinned seed)
PANELS: dict[str, tuple[dict[str, Any], str, str, int]] = {
    "a": ({"rate": 0.014, "sizes": [[0.4, 0.6]], "probs": [[0.5, 0.5]], "service": "geometric",
           "mean_service": 100}, "queue_resource", "total queued resource", 31),
    "b": ({"rate": 0.0306, "sizes": [[0.2, 0.5]], "probs": [[2 / 3, 1 / 3]], "service": "fixed",
           "mean_service": 100}, "queue_jobs", "queue size (jobs)", 32),
}
#: least-squares slope over the second half of the horizon, per slot
GROWS = 2e-4  # "grows": slope above this
FLAT = 5e-5   # "flat / bounded": slope below this
SCALES: dict[str, dict[str, Any]] = {
    "smoke": {"slots": 40_000},
    "quick": {"slots": 300_000},
    "paper": {"slots": 1_000_000},
}


def specs(scale: str, overrides: dict[str, Any]) -> list[dict[str, Any]]:
    slots = SCALES[scale]["slots"]
    out = []
    for tag, (workload, _, _, seed) in PANELS.items():
        spec = {
            "name": f"pg-fig3{tag}-{scale}",
            "engine": "packing",
            "seed": seed,
            "policies": list(POLICIES),
            "system": {"servers": 1, "capacity": 1.0, "epoch": 1.0, "sample_every": float(slots // 400)},
            "workload": {"kind": "packing", "slots": slots, **workload},
            "replications": {"n": 1},
        }
        out.append(deep_merge(spec, overrides))
    return out


def load_series(results_dir: Path, col: str) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """policy -> (t, value) of the first replication's sampled series, while
    jobs still arrive (t < slots; afterwards the queues only drain)."""
    import polars as pl

    from schedlab import load

    slots = float(load(results_dir).select(pl.col("slots").max()).collect().item())
    df = load(results_dir, "series").filter((pl.col("replication") == 0) & (pl.col("t") < slots)).collect()
    out = {}
    for p in POLICIES:
        sub = df.filter(pl.col("policy") == p).sort("t")
        if sub.height:
            out[p] = (sub["t"].to_numpy(), sub[col].to_numpy().astype(float))
    return out


def slope(t: np.ndarray, y: np.ndarray) -> float:
    """Least-squares slope (per slot) over the second half of the horizon."""
    half = t >= t[0] + (t[-1] - t[0]) / 2
    return float(np.polyfit(t[half], y[half], 1)[0])


def plot(series: dict[str, dict[str, tuple[np.ndarray, np.ndarray]]], path: Path) -> list[str]:
    """Fig. 3 (a), (b): queue over time; returns the series plotted."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    names: list[str] = []
    titles = {"a": "(a) sizes 0.4 / 0.6, rate 0.014, geometric service",
              "b": "(b) sizes 0.2 / 0.5, rate 0.0306, fixed service"}
    for ax, (tag, (_, _, ylabel, _)) in zip(axes, PANELS.items()):
        for p in POLICIES:
            if p not in series[tag]:
                continue
            t, y = series[tag][p]
            ax.plot(t, y, label=p, linewidth=1.1, marker=MARKERS.get(p), markevery=max(1, len(t) // 10),
                    markersize=4)
            if p not in names:
                names.append(p)
        ax.set_xlabel("time slot")
        ax.set_ylabel(ylabel)
        ax.set_title(titles[tag], fontsize=9)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    save(fig, path)
    return names


def checks(slopes: dict[str, dict[str, float]], means: dict[str, dict[str, float]],
           seeds: dict[str, int]) -> list[Check]:
    a, b, mb = slopes["a"], slopes["b"], means["b"]
    fmt = lambda d: ", ".join(f"{p} {d[p]:.2e}" for p in POLICIES if p in d)  # noqa: E731
    return [
        Check(f"(a) VQS's total queued resource grows (second-half slope > {GROWS:g} per slot)",
              a["VQS"] > GROWS,
              f"slopes per slot: {fmt(a)}; VQS only supports 2/3 × 0.02 ≈ 0.013 < 0.014 jobs/slot"),
        Check(f"(a) BF-J/S and VQS-BF stay flat (second-half slope < {FLAT:g} per slot)",
              a["BF-J/S"] < FLAT and a["VQS-BF"] < FLAT, f"slopes per slot: {fmt(a)}"),
        Check(f"(b) VQS stays bounded (second-half slope < {FLAT:g} jobs per slot)",
              b["VQS"] < FLAT, f"slopes per slot: {fmt(b)}"),
        Check(f"(b) BF-J/S grows (second-half slope > {GROWS:g} jobs per slot; the paper: with positive "
              f"probability, pinned seed {seeds['b']}, one replication)",
              b["BF-J/S"] > GROWS, f"slopes per slot: {fmt(b)}"),
        Check("(b) (weaker) the best-fit variants hold longer queues than VQS: time-average queue of BF-J/S "
              "and VQS-BF above VQS's over the arrival horizon",
              mb["BF-J/S"] > mb["VQS"] and mb["VQS-BF"] > mb["VQS"],
              "time-average queue (jobs): " + ", ".join(f"{p} {mb[p]:.3g}" for p in POLICIES)),
    ]


def report(results_dirs: dict[str, Path], out_dir: Path) -> list[FigureReport]:
    series, slopes, means, horizon = {}, {}, {}, {}
    for name, d in results_dirs.items():
        tag = name.removeprefix("pg-fig3")[0]
        series[tag] = load_series(d, PANELS[tag][1])
        slopes[tag] = {p: slope(t, y) for p, (t, y) in series[tag].items()}
        means[tag] = {p: float(np.mean(y)) for p, (t, y) in series[tag].items()}
        horizon[tag] = max(float(t[-1]) for t, _ in series[tag].values())
    png = out_dir / "pg-fig3.png"
    names = plot(series, png)
    lines = ["| panel | series | " + " | ".join(POLICIES) + " |", "|" + "---|" * (len(POLICIES) + 2)]
    for tag, (_, col, _, _) in PANELS.items():
        lines.append(f"| ({tag}) | slope over 2nd half (per slot) | "
                     + " | ".join(f"{slopes[tag][p]:.2e}" for p in POLICIES) + " |")
        lines.append(f"| ({tag}) | time-average `{col}` | "
                     + " | ".join(f"{means[tag][p]:.3g}" for p in POLICIES) + " |")
        lines.append(f"| ({tag}) | `{col}` at the end (t ≈ {horizon[tag]:.0f}) | "
                     + " | ".join(f"{series[tag][p][1][-1]:.3g}" for p in POLICIES) + " |")
    lines += ["", "Replications per point: 1 (one sample path per policy, pinned seeds "
              + ", ".join(f"({t}) {PANELS[t][3]}" for t in PANELS) + "; common random numbers across policies)."]
    return [FigureReport(
        key="fig3", title="Fig. 3 — Queue evolution: (a) VQS unstable, (b) BF variants unstable",
        png=png, series=names,
        paper_says=(
            "§VII-A.1 (Fig. 3a): one server, sizes 0.4 and 0.6 equally likely, Poisson rate 0.014, geometric "
            "service of mean 100. \"by using configuration (1, 1) any arrival rate below 0.02 is supportable. "
            "This is not the case though for VQS that schedules based on configurations K_RED, so it can either "
            "schedule two jobs of resource size 0.4 or one job of resource size 0.6. This results in VQS to be "
            "unstable for any arrival rate greater than 2/3 × 0.02 ≈ 0.013. Both of the other proposed "
            "algorithms, BF-J/S and VQS-BF, circumvent this problem.\" §VII-A.2 (Fig. 3b): capacity 10, sizes "
            "2 and 5 (here 0.2 and 0.5 on capacity 1), size 2 twice as likely, rate 0.0306, fixed service 100: "
            "\"an example where VQS is stable, while both BF-J/S and VQS-BF are not\"; \"there is a positive "
            "probability that the queues will never get empty\" (λ = (0.0204, 0.0102) vs μ = (0.02, 0.01) "
            "under configuration (2, 1)). The paper does not state its horizon; growth is judged by the "
            "least-squares slope over the second half of the arrival horizon (samples after the last arrival "
            "slot, when the queues only drain, are not plotted) of one pinned-seed sample path."),
        measured="\n".join(lines),
        checks=checks(slopes, means, {t: PANELS[t][3] for t in PANELS}))]


PIPELINE = Pipeline(
    name="pg-fig3",
    paper="Psychas & Ghaderi, High-Throughput Bin Packing (2021)",
    figure="Fig. 3",
    description="Queue over time on one server for VQS, BF-J/S and VQS-BF: (a) sizes 0.4/0.6 where VQS is "
                "unstable, (b) sizes 0.2/0.5 with fixed service where the best-fit variants are unstable.",
    specs=specs,
    report=report,
)
