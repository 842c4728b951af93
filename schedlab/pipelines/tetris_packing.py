"""Tetris vs Slots-Fair (tetris_packing.toml: the setting, and why): window-paired ratios, bars, claims."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from schedlab.pipelines.common import (
    POSITIVE_FLOOR,
    estimate,
    every,
    fmt_ci,
    judge,
    lookup,
    md,
    paired_estimate,
    paired_ratios,
    ratios_to,
    row_at,
)
from schedlab.plotting import save

DOC = tomllib.loads(Path(__file__).with_suffix(".toml").read_text())
TRACE = DOC["every_sweep"]["workload"]["path"]  # "{data}/...": below the data root (`inputs`), as pg-fig5
EPOCH = DOC["every_sweep"]["system"]["epoch"]
BASELINE, TETRIS = "Slots-Fair", "Tetris"
POLICIES = [TETRIS, "FIFO-FF", "BF-J/S", BASELINE]  # plotting / table order
METRICS = {"jct_mean": "mean JCT", "makespan": "makespan"}  # column: label


def load_table(results_dirs: dict[str, Path]):
    """The summary rows of both sweeps (one per window and policy), each metric
    also / Slots-Fair's on the same window (``<m>_ratio``, `ratios_to`), and
    per policy the mean, 95 % CI and n over windows of metrics and ratios."""
    import polars as pl

    from schedlab import load
    from schedlab.platform.statistics.stats import summarize

    cols = ["policy", "window", "window_length", "system_servers", "system_epoch", *METRICS]
    frame = pl.concat([load(d).select(cols).collect() for d in results_dirs.values()], how="vertical_relaxed")
    frame = ratios_to(frame.with_columns(pl.col("window").cast(pl.Int64)), [*METRICS], BASELINE, ["window"])
    return frame, summarize(frame, ["policy"], [f"{m}_ratio" for m in METRICS] + [*METRICS])


def offered_loads(rows: list[dict[str, Any]], results_dir: Path) -> dict[int, float] | None:
    """Per window of ``rows``: max over cpu, mem of Σ demand x runtime / (servers x window length),
    from the trace the sweep in ``results_dir`` read (its spec's path; None if it cannot be read here)."""
    try:
        from schedlab.platform.storage.seam import require_manifest
        from schedlab.workloads import trace_kind
        from schedlab.workloads import transforms as tf

        trace = require_manifest(results_dir)["spec"]["workload"]["path"]
        jobs = trace_kind.load_shared(
            {"reader": "google", "path": trace, "on_bad_line": "error", "arrival_load": 0.0}
        ).sort("submit", maintain_order=True)
        out = {}
        for r in rows:
            w = tf.window(jobs, r["window_length"], r["window"])
            work = max(float((w[c] * w["runtime"]).sum()) for c in ("cpu", "mem"))
            out[r["window"]] = work / (r["system_servers"] * r["window_length"])
        return out
    except Exception:  # noqa: BLE001 - informative only
        return None


def plot(data, path: Path) -> list[str]:
    """Bars: makespan and mean JCT / Slots-Fair's (mean over windows, 95 % CI)."""
    import matplotlib.pyplot as plt
    import numpy as np

    from schedlab.plotting import floor_interval

    rows = [r for p in POLICIES if (r := lookup(data.table[1], p))]
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    x, width = np.arange(len(rows)), 0.8 / len(METRICS)
    for i, (m, label) in enumerate(METRICS.items()):
        means = [r[f"{m}_ratio_mean"] for r in rows]
        # a ratio is > 0: the log-transformed interval (schedlab.plotting.floor_interval), never below 0
        bounds = [floor_interval(r[f"{m}_ratio_mean"], r[f"{m}_ratio_ci95"], POSITIVE_FLOOR) for r in rows]
        yerr = [[mu - lo for mu, (lo, _) in zip(means, bounds)], [hi - mu for mu, (_, hi) in zip(means, bounds)]]
        ax.bar(x + (i - (len(METRICS) - 1) / 2) * width, means, width, yerr=yerr, capsize=3, label=label)
    ax.axhline(1.0, color="grey", linewidth=0.8, linestyle=":")
    ax.set_ylim(bottom=0)
    ax.set_xticks(x, [r["policy"] for r in rows])
    ax.set(ylabel=f"relative to {BASELINE} (same window)", title="Google prefix, cpu + mem, tasks grouped into jobs")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    save(fig, path)
    return [r["policy"] for r in rows]


def measured(data) -> str:
    frame, table = data.table
    tetris = frame.filter(frame["policy"] == TETRIS).sort("window").rows(named=True)
    loads = offered_loads(tetris, next(iter(data.dirs.values())))
    cols = ["makespan_ratio", "jct_mean_ratio", "makespan", "jct_mean"]
    head = ["policy", "makespan / Slots-Fair", "mean JCT / Slots-Fair", "makespan (s)", "mean JCT (s)", "windows"]
    rows = [
        [p, *(fmt_ci(r[f"{c}_mean"], r[f"{c}_ci95"]) for c in cols), str(r["n"])]
        for p in POLICIES
        if (r := lookup(table, p))
    ]
    per_window = "; ".join(
        f"w{r['window']}: {r['makespan_ratio']:.2f}, {r['jct_mean_ratio']:.2f}"
        + (f", load {loads[r['window']]:.2g}" if loads and r["window"] in loads else "")
        for r in tetris
    )
    lines = [
        "Per window, metric / Slots-Fair's on the same window; mean ± 95 % CI over windows (reduction = 1 − ratio):",
        "",
        md(head, rows),
        "",
        "Per window (Tetris / Slots-Fair: makespan, mean JCT" + ("; offered load" if loads else "") + "):",
        "",
        per_window + ".",
    ]
    if loads:
        lines += [
            "",
            "Offered load of a window = max over cpu, mem of Σ demand × duration / (servers × window "
            "length): above 1 the window's work cannot be done within the window and a backlog builds. "
            "A makespan ratio of 1.00 marks a window whose makespan is set by one long task (its "
            "arrival plus its duration), which no policy can shorten.",
        ]
    return "\n".join(lines)


def reduces(data, claim):
    """Tetris / Slots-Fair of ``quantity``: judged by the paired interval over windows (the same
    window is a pair), or the t interval of the mean per-window ratio; ``than``: the talk's
    reduction, matched within a factor 1 + ``tolerance``."""
    frame, table = data.table
    m, tet = claim.quantity, row_at(table, TETRIS)
    mean, ci, n = tet[f"{m}_ratio_mean"], tet[f"{m}_ratio_ci95"], tet["n"]
    pr = paired_ratios(frame, m, TETRIS, BASELINE, [], ["window"]).row(0, named=True)
    has_ci = pr["ci_high"] is not None and pr["ci_high"] == pr["ci_high"]
    ratio = paired_estimate(paired_ratios(frame, m, TETRIS, BASELINE, [], ["window"]))
    if not has_ci:  # the t interval of the mean per-window ratio, when the paired one is missing
        ratio = estimate(tet, f"{m}_ratio")
    upper = ratio.high
    red, factor = 1.0 - ratio, 1 + claim.tolerance
    lo, hi = claim.than / factor, min(1.0, claim.than * factor)
    below = judge(ratio, "<", 1.0)
    same = every([judge(red, ">=", lo), judge(red, "<=", hi)])
    return claim.verdict(
        every([below, same]),
        f"Tetris / Slots-Fair = {fmt_ci(mean, ci)} over {n} windows"
        + (f", paired geometric mean {pr['estimate']:.3f} [{pr['ci_low']:.3f}, {pr['ci_high']:.3f}]" if has_ci else "")
        + f" (CI upper end {upper:.3f}): reduction {red:.1%} [{red.low:.1%}, {red.high:.1%}] "
        + f"vs the talk's {claim.than:.0%}"
        + ("" if below == "holds" else "; not significantly below 1")
        + ("" if same == "holds" else "; not shown to be of the same order"),
        factor=factor,
        lo=lo,
        hi=hi,
    )


def setting(data) -> dict[str, Any]:
    """The rows' window_length, system_servers and system_epoch, for paper_says."""
    return data.table[0].row(0, named=True)
