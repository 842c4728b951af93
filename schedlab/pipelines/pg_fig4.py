"""Psychas & Ghaderi (2021), High-Throughput Bin Packing, §VII-A.3, Fig. 4: average
queue size vs traffic intensity alpha, 5 servers of capacity 1, resource demands
uniform in (a) [0.01, 0.19] and (b) [0.1, 0.9], geometric service of mean 100 slots."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from schedlab.pipelines.base import Check, FigureReport, Pipeline, deep_merge
from schedlab.pipelines.common import POSITIVE_FLOOR, absolute, lookup, md_table, plot_lines, save

POLICIES = ["BF-J/S", "VQS", "VQS-BF", "FIFO-FF"]
PANELS = [("a", 0.01, 0.19), ("b", 0.1, 0.9)]
METRIC = "queue_jobs_mean"
COMPARABLE = 0.25  # "comparable": within 25 % of each other
SCALES: dict[str, dict[str, Any]] = {
    "smoke": {"slots": 3000, "intensity": [0.85, 0.95], "n": 1},
    "quick": {"slots": 30000, "intensity": [0.85, 0.9, 0.95, 0.97, 0.99], "n": 2},
    "paper": {"slots": 1_000_000, "intensity": [0.85, 0.87, 0.89, 0.91, 0.93, 0.95, 0.97, 0.99], "n": 5},
}


def specs(scale: str, overrides: dict[str, Any]) -> list[dict[str, Any]]:
    s = SCALES[scale]
    out = []
    for tag, lo, hi in PANELS:
        spec = {
            "name": f"pg-fig4{tag}-{scale}",
            "engine": "packing",
            "seed": 40 + ord(tag),
            "policies": list(POLICIES),
            "system": {"servers": 5, "capacity": 1.0, "epoch": 1.0, "sample_every": max(1000.0, s["slots"] / 100)},
            "workload": {"kind": "packing", "slots": s["slots"], "uniform_lo": lo, "uniform_hi": hi,
                         "service": "geometric", "mean_service": 100, "intensity": list(s["intensity"]),
                         "intensity_servers": 5},
            "replications": {"n": s["n"]},
        }
        out.append(deep_merge(spec, overrides))
    return out


def plot(tables: dict[str, Any], path: Path) -> list[str]:
    """Fig. 4 (a), (b): average queue size vs traffic intensity; returns the series plotted."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    series: list[str] = []
    for ax, (tag, lo, hi) in zip(axes, PANELS):
        for name in plot_lines(ax, tables[tag], "intensity", METRIC, POLICIES, POSITIVE_FLOOR):  # log axis
            if name not in series:
                series.append(name)
        ax.set_yscale("log")
        ax.set_xlabel("traffic intensity α")
        ax.set_ylabel("average queue size (jobs)")
        ax.set_title(f"({tag}) R ~ U[{lo:g}, {hi:g}], L = 5")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=8)
    save(fig, path)
    return series


def checks(tables: dict[str, Any]) -> list[Check]:
    q = lambda tag, p, a: lookup(tables[tag], p, intensity=a)[f"{METRIC}_mean"]  # noqa: E731
    alphas = {tag: sorted(set(t["intensity"].to_list())) for tag, t in tables.items()}
    out = []
    bad = [(tag, a) for tag in tables for a in alphas[tag]
           if not (q(tag, "VQS", a) > q(tag, "BF-J/S", a) and q(tag, "VQS", a) > q(tag, "VQS-BF", a))]
    out.append(Check(
        "VQS has a larger average queue than BF-J/S and VQS-BF (both panels, every α)",
        not bad,
        "; ".join(f"({tag}) α={a:g}: VQS {q(tag, 'VQS', a):.3g}, BF-J/S {q(tag, 'BF-J/S', a):.3g}, "
                  f"VQS-BF {q(tag, 'VQS-BF', a):.3g}" for tag in tables for a in alphas[tag][-1:])
        + (f"; fails at {bad}" if bad else "")))
    low = [a for a in alphas["a"] if a <= 0.95]
    if low:
        rel = {a: q("a", "VQS-BF", a) / q("a", "BF-J/S", a) for a in low}
        out.append(Check(
            f"in (a), BF-J/S and VQS-BF are comparable for α ≤ 0.95 (queues within {COMPARABLE:.0%})",
            all(abs(v - 1) <= COMPARABLE for v in rel.values()),
            ", ".join(f"α={a:g}: VQS-BF/BF-J/S {v:.2f}" for a, v in rel.items())))
    high = [("a", a) for a in alphas["a"] if a > 0.95] + [("b", a) for a in alphas["b"]]
    if high:
        out.append(Check(
            "otherwise (α > 0.95 in (a), every α in (b)) BF-J/S has a clear advantage over VQS-BF",
            all(q(tag, "BF-J/S", a) < q(tag, "VQS-BF", a) for tag, a in high),
            ", ".join(f"({tag}) α={a:g}: BF-J/S {q(tag, 'BF-J/S', a):.3g} vs VQS-BF {q(tag, 'VQS-BF', a):.3g}"
                      for tag, a in high)))
    return out


def report(results_dirs: dict[str, Path], out_dir: Path) -> list[FigureReport]:
    tables = {}
    for name, d in results_dirs.items():
        tag = name.removeprefix("pg-fig4")[0]
        tables[tag] = absolute(d, METRIC, ["intensity"])
    png = out_dir / "pg-fig4.png"
    series = plot(tables, png)
    measured = "\n\n".join(
        f"({tag}) demands U[{lo:g}, {hi:g}], average queue size (jobs):\n\n"
        + md_table(tables[tag], "intensity", POLICIES, METRIC, "α") for tag, lo, hi in PANELS)
    return [FigureReport(
        key="fig4", title="Fig. 4 — Average queue size vs traffic intensity (5 servers, uniform demands)",
        png=png, series=series,
        paper_says=(
            "§VII-A.3, Fig. 4: L = 5 servers of capacity 1, demands uniform in (a) [0.01, 0.19] and "
            "(b) [0.1, 0.9], geometric service of mean 100 slots, Poisson arrivals at rate αμL/R̄, "
            "α ∈ [0.85, 0.99]. \"Overall we can see that VQS is worse than other two algorithms in terms of "
            "average queue size. Algorithms BF-J/S and VQS-BF look comparable in the first experiment for "
            "traffic intensities up to 0.95, otherwise BF-J/S has a clear advantage.\" The paper states no "
            "horizon; the plot's y axis here is logarithmic for readability. FIFO-FF is drawn as the baseline "
            "the paper uses in §VII-B; §VII-A.3 makes no claim about it."),
        measured=measured,
        checks=checks(tables))]


PIPELINE = Pipeline(
    name="pg-fig4",
    paper="Psychas & Ghaderi, High-Throughput Bin Packing (2021)",
    figure="Fig. 4",
    description="Average queue size of BF-J/S, VQS, VQS-BF and FIFO-FF vs traffic intensity α, 5 servers of "
                "capacity 1, demands uniform in [0.01, 0.19] (a) and [0.1, 0.9] (b).",
    specs=specs,
    report=report,
)
