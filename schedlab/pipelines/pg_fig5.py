"""Psychas & Ghaderi (2021), High-Throughput Bin Packing, §VII-B, Fig. 5: the Google
clusterdata-2011 prefix (one resource = max(CPU, memory) request) replayed on 1000
servers of capacity 1, decisions every 0.1 s, traffic scaling 1/beta from 1 to 1.6
(arrival times multiplied by beta): average queue size per algorithm. Same setting
as sweeps/google-packing.toml; the trace path is relative to the repository root."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from schedlab.pipelines.base import Check, FigureReport, Pipeline, deep_merge
from schedlab.pipelines.common import absolute, lookup, md_table, save

POLICIES = ["BF-J/S", "VQS-BF", "VQS", "FIFO-FF"]
TRACE = "../shared/data/google-clusterdata-2011"
METRIC = "queue_jobs_mean"
TRAFFIC = [1.0, 0.8333333333333334, 0.7142857142857143, 0.625]  # beta; scaling 1/beta = 1, 1.2, 1.4, 1.6
CLEAR = 0.8  # "clear advantage": queue at most 80 % of the better of VQS and FIFO-FF
SCALES: dict[str, dict[str, Any]] = {
    # smoke: the first hour of the trace only, on 100 servers
    "smoke": {"traffic": [1.0, 0.625], "servers": 100, "window": {"window_length": 3600.0, "window": 0}},
    "quick": {"traffic": [1.0, 0.7142857142857143, 0.625], "servers": 1000, "window": {}},
    "paper": {"traffic": TRAFFIC, "servers": 1000, "window": {}},
}


def specs(scale: str, overrides: dict[str, Any]) -> list[dict[str, Any]]:
    s = SCALES[scale]
    spec = {
        "name": f"pg-fig5-{scale}",
        "engine": "packing",
        "seed": 6,
        "policies": list(POLICIES),
        "system": {"servers": s["servers"], "capacity": 1.0, "epoch": 0.1, "sample_every": 600.0},
        "workload": {"kind": "trace", "reader": "google", "path": TRACE, "reader_single_resource": True,
                     "traffic": list(s["traffic"]), **s["window"]},
        "replications": {"n": 1},
    }
    return [deep_merge(spec, overrides)]


def table_of(results_dir: Path):
    """Mean queue per policy and traffic, with the scaling 1/beta as a column."""
    import polars as pl

    t = absolute(results_dir, METRIC, ["traffic"])
    return t.with_columns((1.0 / pl.col("traffic")).round(6).alias("scaling"))


def plot(table, path: Path) -> list[str]:
    """Fig. 5: average queue size vs traffic scaling 1/beta; returns the series plotted."""
    import matplotlib.pyplot as plt

    from schedlab.pipelines.common import POSITIVE_FLOOR, plot_lines

    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    # a queue length (>= 0) on a symlog axis: bars from the log-transformed interval never go below 0
    series = plot_lines(ax, table, "scaling", METRIC, POLICIES, POSITIVE_FLOOR)
    ax.set_yscale("symlog", linthresh=1.0)
    ax.set_xlabel("traffic scaling 1/β")
    ax.set_ylabel("average queue size (jobs)")
    ax.set_title("Google trace prefix, 1000 servers")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    save(fig, path)
    return series


def checks(table) -> list[Check]:
    xs = sorted(set(table["scaling"].to_list()))
    q = lambda p, x: lookup(table, p, scaling=x)[f"{METRIC}_mean"]  # noqa: E731
    top = xs[-1]
    worse = min(q("VQS", top), q("FIFO-FF", top))
    high = [x for x in xs if x > 1.0 + 1e-9] or [top]
    return [
        Check(f"as traffic scaling increases, BF-J/S and VQS-BF have a clear advantage over the other schemes "
              f"(at the highest scaling {top:g}, both queues ≤ {CLEAR:.0%} of the better of VQS and FIFO-FF)",
              q("BF-J/S", top) <= CLEAR * worse and q("VQS-BF", top) <= CLEAR * worse,
              "; ".join(f"1/β={x:g}: " + ", ".join(f"{p} {q(p, x):.3g}" for p in POLICIES) for x in xs)),
        Check("VQS-BF yields a small improvement over BF-J/S at higher traffic (VQS-BF < BF-J/S at every "
              "scaling > 1)",
              all(q("VQS-BF", x) < q("BF-J/S", x) for x in high),
              "VQS-BF / BF-J/S: " + ", ".join(
                  f"{x:g}: {q('VQS-BF', x) / q('BF-J/S', x):.3f}" if q("BF-J/S", x) > 0 else f"{x:g}: BF-J/S 0"
                  for x in xs)),
    ]


def report(results_dirs: dict[str, Path], out_dir: Path) -> list[FigureReport]:
    (results_dir,) = results_dirs.values()
    table = table_of(results_dir)
    png = out_dir / "pg-fig5.png"
    series = plot(table, png)
    return [FigureReport(
        key="fig5", title="Fig. 5 — Average queue size vs traffic scaling (Google trace, 1000 servers)",
        png=png, series=series,
        paper_says=(
            "§VII-B, Fig. 5: the Google cluster trace (approximately 1,000,000 tasks), 1000 servers, traffic "
            "scaling 1/β from 1 to 1.6. \"As traffic scaling increases, BF-J/S and VQS-BF have a clear advantage "
            "over the other schemes\"; \"VQS-BF yields a small improvement over BF-J/S at higher traffic\". "
            "One replay per point (the trace is deterministic; no CI). The y axis here is symlog."),
        measured="Average queue size (jobs) per traffic scaling 1/β:\n\n"
                 + md_table(table, "scaling", POLICIES, METRIC, "1/β"),
        checks=checks(table))]


PIPELINE = Pipeline(
    name="pg-fig5",
    paper="Psychas & Ghaderi, High-Throughput Bin Packing (2021)",
    figure="Fig. 5",
    description="Average queue size of BF-J/S, VQS-BF, VQS and FIFO-FF on the Google clusterdata-2011 prefix "
                "(1000 servers, epoch 0.1 s) as traffic scaling 1/β grows from 1 to 1.6.",
    specs=specs,
    report=report,
)
