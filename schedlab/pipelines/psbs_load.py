"""PSBS paper (Dell'Amico, Carra, Michiardi 2014), Fig. 11: MST / optimal vs
(a) load and (b) timeshape, shape and sigma at their defaults (0.25, 0.5). Two
sweeps, one per panel; optimal is SRPT's MST, ratio per replication."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from schedlab.pipelines.base import Check, FigureReport, Pipeline, deep_merge
from schedlab.pipelines.common import RATIO_FLOOR, lookup, md_table, plot_lines, relative_to, save

POLICIES = ["PS", "LAS", "SRPTE", "FSPE", "PSBS"]
SIZE_BASED = ["SRPTE", "FSPE", "PSBS"]
SCALES: dict[str, dict[str, Any]] = {
    "smoke": {"njobs": 400, "load": [0.5, 0.9, 0.99], "timeshape": [0.25, 1.0, 4.0], "replications": {"n": 2}},
    "quick": {"njobs": 3000, "load": [0.5, 0.7, 0.9, 0.95, 0.99],
              "timeshape": [0.125, 0.25, 0.5, 1.0, 2.0, 4.0], "replications": {"n": 5}},
    "paper": {"njobs": 10000, "load": [0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 0.999],
              "timeshape": [0.125, 0.177, 0.25, 0.35, 0.5, 0.71, 1.0, 1.41, 2.0, 2.83, 4.0],
              "replications": {"metric": "mst", "rel_halfwidth": 0.05, "min": 30, "max": 300, "batch": 10}},
}
STABLE = 0.5  # "roughly constant": size-based MST/optimal varies by at most 50 % over the loads
PSBS_TOLERANCE = 0.20  # "close to optimal": within 20 % of SRPT


def specs(scale: str, overrides: dict[str, Any]) -> list[dict[str, Any]]:
    s = SCALES[scale]
    base = {
        "engine": "queue",
        "policies": POLICIES + ["SRPT"],
        "workload": {"kind": "synthetic", "njobs": s["njobs"], "shape": 0.25, "sigma": 0.5,
                     "load": 0.9, "timeshape": 1.0},
        "replications": dict(s["replications"]),
    }
    by_load = deep_merge(base, {"name": f"psbs-load-{scale}", "seed": 15, "workload": {"load": list(s["load"])}})
    by_time = deep_merge(base, {"name": f"psbs-timeshape-{scale}", "seed": 16,
                                "workload": {"timeshape": list(s["timeshape"])}})
    return [deep_merge(by_load, overrides), deep_merge(by_time, overrides)]


def plot(tables: dict[str, Any], path: Path) -> list[str]:
    """Fig. 11 (a) vs load (linear x), (b) vs timeshape (log x); MST / optimal on a log y axis."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
    series: list[str] = []
    for ax, (x, table), tag in zip(axes, tables.items(), "ab"):
        for name in plot_lines(ax, table, x, "ratio", POLICIES, RATIO_FLOOR):  # MST / optimal >= 1
            if name not in series:
                series.append(name)
        ax.axhline(1.0, color="grey", linewidth=0.8, linestyle=":")
        ax.set_yscale("log")
        xs = sorted(set(table[x].to_list()))
        if x == "timeshape":
            ax.set_xscale("log")
            ax.set_xticks(xs, [f"{v:g}" for v in xs])
            ax.minorticks_off()
        ax.set_xlabel(x)
        ax.set_title(f"({tag}) impact of {x}")
        ax.grid(True, which="major", alpha=0.3)
    axes[0].set_ylabel("MST / optimal")
    axes[0].legend(fontsize=8)
    save(fig, path)
    return series


def checks(tables: dict[str, Any]) -> list[Check]:
    out = []
    lt = tables["load"]
    loads = sorted(set(lt["load"].to_list()))
    r = lambda p, v: lookup(lt, p, load=v)["ratio_mean"]  # noqa: E731
    var = {p: max(r(p, v) for v in loads) / min(r(p, v) for v in loads) - 1 for p in SIZE_BASED}
    out.append(Check(
        f"(a) size-based policies are not heavily impacted by load (MST/optimal varies ≤ {STABLE:.0%} "
        f"over loads {loads[0]:g}–{loads[-1]:g})",
        all(v <= STABLE for v in var.values()),
        ", ".join(f"{p} varies {v:.0%}" for p, v in var.items())))
    lo, hi = loads[0], loads[-1]
    grow = {p: r(p, hi) / r(p, lo) for p in POLICIES}
    out.append(Check(
        "(a) PS and LAS deviate more from optimal as load grows, more than every size-based policy does",
        all(grow[p] > 1 for p in ("PS", "LAS")) and min(grow["PS"], grow["LAS"]) > max(grow[p] for p in SIZE_BASED),
        f"MST/optimal at load {hi:g} over load {lo:g}: " + ", ".join(f"{p} ×{g:.2f}" for p, g in grow.items())))
    tt = tables["timeshape"]
    ts = sorted(set(tt["timeshape"].to_list()))
    q = lambda p, v: lookup(tt, p, timeshape=v)["ratio_mean"]  # noqa: E731
    worst = max(q("PSBS", v) for v in ts)
    out.append(Check(
        f"(b) PSBS remains close to optimal at every timeshape (MST/optimal ≤ {1 + PSBS_TOLERANCE:g})",
        worst <= 1 + PSBS_TOLERANCE,
        "PSBS: " + ", ".join(f"{v:g}: {q('PSBS', v):.3f}" for v in ts)))
    out.append(Check(
        f"(b) as arrivals become regular, SRPTE and FSPE become less performant (MST/optimal higher at "
        f"timeshape {ts[-1]:g} than at {ts[0]:g})",
        all(q(p, ts[-1]) > q(p, ts[0]) for p in ("SRPTE", "FSPE")),
        ", ".join(f"{p} {q(p, ts[0]):.3f} → {q(p, ts[-1]):.3f}" for p in ("SRPTE", "FSPE"))))
    return out


def report(results_dirs: dict[str, Path], out_dir: Path) -> list[FigureReport]:
    by_load = next(d for n, d in results_dirs.items() if n.startswith("psbs-load-"))
    by_time = next(d for n, d in results_dirs.items() if n.startswith("psbs-timeshape-"))
    tables = {"load": relative_to(by_load, "mst", "SRPT", ["load"]),
              "timeshape": relative_to(by_time, "mst", "SRPT", ["timeshape"])}
    png = out_dir / "psbs-load-fig11.png"
    series = plot(tables, png)
    return [FigureReport(
        key="fig11", title="Fig. 11 — Impact of load and timeshape (MST / optimal)", png=png, series=series,
        paper_says=(
            "§6.7, Fig. 11 (shape 0.25, sigma 0.5): \"(a) performance of size-based scheduling protocols is not "
            "heavily impacted by load, as the ratio between the MST obtained and the optimal one remains roughly "
            "constant [...]; conversely, size-oblivious schedulers such as PS and LAS deviate more from optimal as "
            "the load grows. (b) [...] as the intervals between jobs become more regular, SRPTE and FSPE become "
            "slightly less performant; PSBS remains close to optimal.\" Load varies 0.5–0.999, timeshape "
            "0.125–4 (Table 1)."),
        measured="(a) MST / optimal (SRPT) vs load, timeshape 1:\n\n" + md_table(tables["load"], "load", POLICIES, "ratio")
                 + "\n\n(b) MST / optimal (SRPT) vs timeshape, load 0.9:\n\n"
                 + md_table(tables["timeshape"], "timeshape", POLICIES, "ratio"),
        checks=checks(tables))]


PIPELINE = Pipeline(
    name="psbs-load",
    paper="Dell'Amico, Carra & Michiardi, PSBS: Practical Size-Based Scheduling (2014)",
    figure="Fig. 11",
    description="MST / optimal (SRPT) of PS, LAS, SRPTE, FSPE and PSBS as (a) the load and (b) the timeshape of "
                "inter-arrival times vary, Weibull shape 0.25, sigma 0.5.",
    specs=specs,
    report=report,
)
