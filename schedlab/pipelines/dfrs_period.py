"""DFRS paper (Stillwell, Vivien, Casanova, TPDS 2012), §5.3.2, Figs. 2 and 3:
average normalised underutilization (Fig. 2) and average max-stretch
degradation from bound (Fig. 3) of GreedyPM*/per/OPT=MIN/MINVT=600 vs the
remapping period (600 s to 12,000 s, the paper's range), on the three
trace sets, with EASY (a whole node per task) as the reference. Setting:
dfrs_common."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from schedlab.pipelines import dfrs_common as dc
from schedlab.pipelines.base import Check, FigureReport, Pipeline
from schedlab.pipelines.common import RATIO_FLOOR, ci_or_zero, fmt_ci, save

SETS = ["hpc2n", "unscaled", "scaled"]
SEEDS = {"hpc2n": 71, "unscaled": 72, "scaled": 72}  # the synthetic sets share their traces (dfrs_common)
PERIODS = {
    "smoke": [600.0, 12000.0],
    "quick": [600.0, 1200.0, 3600.0, 12000.0],
    "paper": [600.0, 900.0, 1200.0, 1800.0, 2400.0, 3600.0, 6000.0, 9000.0, 12000.0],
}
#: §5.3.2: the max-stretch degradation grows by less than this factor from 600 s to 12,000 s.
GROWTH = {"scaled": 3.0, "unscaled": 1.5, "hpc2n": 2.0}
ORDERS = 100.0  # "outperform EASY by at least two orders of magnitude on average"
BEYOND = 900.0  # "as the period becomes larger than 900s, our algorithms achieve better ... than EASY"
#: The paper's average normalised underutilization at the default 600 s period (§5.3.2).
PAPER_UNDERUTIL = {"hpc2n": (0.064, 0.344), "unscaled": (0.349, 0.497), "scaled": (0.384, 0.610)}  # (EASY, DFRS)


def specs(scale: str, overrides: dict[str, Any]) -> list[dict[str, Any]]:
    policy = {"name": dc.BEST, "params": {"period": list(PERIODS[scale])}}
    out = []
    for trace_set in SETS:
        out += dc.set_specs(
            "dfrs-period", trace_set, scale, [policy], ["EASY"], seed=SEEDS[trace_set], overrides=overrides
        )
    return out


def tables(results_dirs: dict[str, Path]):
    """{set: (DFRS summary by period, EASY summary)} of underutilization and degradation."""
    import polars as pl

    from schedlab.platform.stats import summarize

    metrics = ["underutilization", "degradation"]
    out = {}
    for trace_set in SETS:
        rows = dc.rows(results_dirs, "dfrs-period", trace_set)
        dfrs = summarize(rows.filter(pl.col("policy") == dc.BEST), ["policy_period"], metrics)
        easy = summarize(rows.filter(pl.col("policy") == "EASY"), ["policy"], metrics)
        out[trace_set] = (dfrs, easy)
    return out


def _series(t, col: str) -> tuple[list[float], list[float], list[float]]:
    return t["policy_period"].to_list(), t[f"{col}_mean"].to_list(), ci_or_zero(t[f"{col}_ci95"].to_list())


def plot(tabs, col: str, ylabel: str, path: Path, log: bool) -> list[str]:
    """One panel per trace set: the DFRS algorithm vs period (dots), EASY as a
    level line. On the log axis (the degradation from a lower bound, >= 1)
    the bars are the log-transformed interval above `RATIO_FLOOR`; on the
    linear one the symmetric t interval."""
    import matplotlib.pyplot as plt

    from schedlab.plotting import errorbar

    fig, axes = plt.subplots(1, len(SETS), figsize=(14, 3.8))
    for ax, trace_set in zip(axes, SETS):
        dfrs, easy = tabs[trace_set]
        x, y, ci = _series(dfrs, col)
        errorbar(ax, x, y, ci, RATIO_FLOOR if log else None, fmt="o:", capsize=2, label=dc.BEST)
        ax.axhline(float(easy[f"{col}_mean"][0]), color="k", linewidth=1.2, label="EASY")
        ax.set_xlabel("period (s)")
        ax.set_title(dc.TITLES[trace_set])
        if log:
            ax.set_yscale("log")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel(ylabel)
    axes[0].legend(fontsize=7)
    save(fig, path)
    return [dc.BEST, "EASY"]


def markdown(tabs, col: str) -> str:
    periods = sorted({p for s in SETS for p in tabs[s][0]["policy_period"].to_list()})
    lines = [
        "| trace set | EASY | " + " | ".join(f"period {p:g} s" for p in periods) + " |",
        "|" + "---|" * (len(periods) + 2),
    ]
    for s in SETS:
        dfrs, easy = tabs[s]
        by = {r["policy_period"]: r for r in dfrs.iter_rows(named=True)}
        cells = [fmt_ci(by[p][f"{col}_mean"], by[p][f"{col}_ci95"]) if p in by else "–" for p in periods]
        lines.append(
            f"| {dc.TITLES[s]} | {fmt_ci(easy[f'{col}_mean'][0], easy[f'{col}_ci95'][0])} | " + " | ".join(cells) + " |"
        )
    ns = {s: sorted(set(tabs[s][0]["n"].to_list())) for s in SETS}
    lines += [
        "",
        "Instances per point: "
        + ", ".join(f"{dc.TITLES[s]} {', '.join(map(str, ns[s]))}" for s in SETS)
        + "; ± is the 95 % CI half-width (Student t).",
    ]
    return "\n".join(lines)


def _at(t, col: str) -> dict[float, float]:
    return dict(zip(t["policy_period"].to_list(), t[f"{col}_mean"].to_list()))


def checks_fig2(tabs) -> list[Check]:
    out = []
    u = {s: _at(tabs[s][0], "underutilization") for s in SETS}
    easy = {s: float(tabs[s][1]["underutilization_mean"][0]) for s in SETS}
    out.append(
        Check(
            "normalized underutilization decreases as the period grows (largest period below the smallest, every set)",
            all(u[s][max(u[s])] < u[s][min(u[s])] for s in SETS),
            ", ".join(
                f"{s}: {u[s][min(u[s])]:.3f} at {min(u[s]):g} s -> {u[s][max(u[s])]:.3f} at {max(u[s]):g} s"
                for s in SETS
            ),
        )
    )
    synth = [(s, p) for s in ("unscaled", "scaled") for p in u[s] if p > BEYOND]
    out.append(
        Check(
            f"on the synthetic sets, periods larger than {BEYOND:g} s give a lower average normalized "
            f"underutilization than EASY",
            bool(synth) and all(u[s][p] < easy[s] for s, p in synth),
            ", ".join(f"{s} {p:g} s: {u[s][p]:.3f} vs EASY {easy[s]:.3f}" for s, p in synth),
        )
    )
    out.append(
        Check(
            "on the real-world trace, EASY's underutilization is lower regardless of the period",
            all(u["hpc2n"][p] > easy["hpc2n"] for p in u["hpc2n"]),
            f"EASY {easy['hpc2n']:.3f}; DFRS " + ", ".join(f"{p:g} s: {v:.3f}" for p, v in sorted(u["hpc2n"].items())),
        )
    )
    return out


def checks_fig3(tabs) -> list[Check]:
    d = {s: _at(tabs[s][0], "degradation") for s in SETS}
    easy = {s: float(tabs[s][1]["degradation_mean"][0]) for s in SETS}
    growth = {s: d[s][max(d[s])] / d[s][min(d[s])] for s in SETS}
    return [
        Check(
            "a 20-fold increase of the period increases the max-stretch degradation by less than a factor "
            + ", ".join(f"{GROWTH[s]:g} ({s})" for s in SETS),
            all(growth[s] < GROWTH[s] for s in SETS),
            ", ".join(f"{s}: x{growth[s]:.2f} from {min(d[s]):g} s to {max(d[s]):g} s" for s in SETS),
        ),
        Check(
            f"at every period the algorithm still outperforms EASY by at least two orders of magnitude on average "
            f"(EASY's average degradation >= {ORDERS:g}x)",
            all(easy[s] >= ORDERS * v for s in SETS for v in d[s].values()),
            ", ".join(f"{s}: EASY {easy[s]:.3g} vs worst period {max(d[s].values()):.3g}" for s in SETS),
        ),
    ]


def report(results_dirs: dict[str, Path], out_dir: Path) -> list[FigureReport]:
    tabs = tables(results_dirs)
    fig2, fig3 = out_dir / "dfrs-fig2.png", out_dir / "dfrs-fig3.png"
    s2 = plot(tabs, "underutilization", "avg. normalized underutilization", fig2, log=False)
    s3 = plot(tabs, "degradation", "max stretch degradation from bound", fig3, log=True)
    paper_u = "; ".join(f"{dc.TITLES[s]}: EASY {e:.1%}, DFRS {d:.1%}" for s, (e, d) in PAPER_UNDERUTIL.items())
    return [
        FigureReport(
            key="fig2",
            title="Fig. 2 — Average normalized underutilization vs period",
            png=fig2,
            series=s2,
            paper_says=(
                "§5.3.2, Fig. 2 (GreedyPM*/per/OPT=MIN/MINVT=600, periods 600 .. 12,000 s, EASY for reference): "
                f'at the default 600 s period, {paper_u}. "In all graphs normalized underutilization is shown to '
                'decrease steadily"; "For the two sets of synthetic traces, as the period becomes larger than '
                "900s ..., our algorithms achieve better average normalized underutilization than EASY. For the "
                'real-world trace, our algorithms achieve higher values than EASY regardless of the period" '
                "(plateau around 11.8 %). Traces here are annotated by the paper's rules (RR-7659 §5.3, dfrs_common)."
            ),
            measured=dc.coverage(results_dirs, "dfrs-period", SETS)
            + "\n\nAverage normalized underutilization:\n\n"
            + markdown(tabs, "underutilization"),
            checks=checks_fig2(tabs),
        ),
        FigureReport(
            key="fig3",
            title="Fig. 3 — Max stretch degradation from bound vs period",
            png=fig3,
            series=s3,
            paper_says=(
                '§5.3.2, Fig. 3: "the average maximum stretch degradation increases slowly as the period '
                "increases. ... for the scaled synthetic traces ... a 20-fold increase of the period leads to an "
                "increase of the maximum stretch degradation by less than a factor of 3. Results for the unscaled "
                "synthetic traces and the real-world trace show much smaller increases (by less than a factor 1.5 "
                "and a factor 2, respectively). ... still allows our algorithms to outperform EASY by at least two "
                'orders of magnitude on average."'
            ),
            measured=dc.coverage(results_dirs, "dfrs-period", SETS)
            + "\n\nAverage max-stretch degradation from bound:\n\n"
            + markdown(tabs, "degradation"),
            checks=checks_fig3(tabs),
        ),
    ]


PIPELINE = Pipeline(
    name="dfrs-period",
    paper="Stillwell, Vivien, Casanova, DFRS vs. Batch Scheduling (TPDS 2012)",
    figure="Figs. 2-3",
    description="Normalized underutilization and max-stretch degradation of GreedyPM*/per/OPT=MIN/MINVT=600 vs the "
    "remapping period on HPC2N weeks and unscaled and scaled Lublin traces, EASY as the reference.",
    specs=specs,
    report=report,
)
