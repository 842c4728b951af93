"""PSBS paper (Dell'Amico, Carra, Michiardi 2014), Fig. 9: MST per weight class
for PSBS and GPS, weights w = 1/c^beta (c uniform in 1..5), beta = 0, 1, 2, one
panel per Weibull shape (0.25, 1, 4). Absolute MST (mean job size is 1, so 1 is
the best obtainable)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from schedlab.pipelines.base import Check, FigureReport, Pipeline, deep_merge
from schedlab.pipelines.common import POSITIVE_FLOOR, fmt_ci, lookup, save

POLICIES = ["PSBS", "GPS"]
SHAPES = [0.25, 1.0, 4.0]
BETAS = [0.0, 1.0, 2.0]
CLASSES = [1, 2, 3, 4, 5]
METRICS = [f"mst_class_{c}" for c in CLASSES]
SCALES: dict[str, dict[str, Any]] = {
    "smoke": {"njobs": 400, "shape": [0.25, 4.0], "replications": {"n": 2}},
    "quick": {"njobs": 5000, "shape": SHAPES, "replications": {"n": 10}},
    "paper": {"njobs": 10000, "shape": SHAPES,
              "replications": {"metric": "mst", "rel_halfwidth": 0.05, "min": 30, "max": 300, "batch": 10}},
}
UNIFORM = 0.25  # beta = 0: per-class MSTs of PSBS within 25 % of each other


def specs(scale: str, overrides: dict[str, Any]) -> list[dict[str, Any]]:
    s = SCALES[scale]
    spec = {
        "name": f"psbs-weights-{scale}",
        "engine": "queue",
        "seed": 13,
        "policies": list(POLICIES),
        "workload": {"kind": "synthetic", "njobs": s["njobs"], "load": 0.9, "sigma": 0.5, "timeshape": 1.0,
                     "shape": list(s["shape"]), "beta": list(BETAS), "weight_classes": len(CLASSES)},
        "replications": dict(s["replications"]),
    }
    return [deep_merge(spec, overrides)]


def table_of(results_dir: Path):
    from schedlab import load
    from schedlab.platform.stats import summarize

    return summarize(load(results_dir), ["shape", "beta", "policy"], ["mst"] + METRICS)


def plot(table, path: Path) -> list[str]:
    """Fig. 9 (a)–(c): MST (log) per weight class, PSBS solid / GPS dashed, one colour per beta."""
    import matplotlib.pyplot as plt

    from schedlab.plotting import errorbar

    shapes = sorted(set(table["shape"].to_list()))
    betas = sorted(set(table["beta"].to_list()))
    fig, axes = plt.subplots(1, len(shapes), figsize=(4 * len(shapes), 3.8), squeeze=False)
    series: list[str] = []
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, shape, tag in zip(axes[0], shapes, "abc"):
        for i, beta in enumerate(betas):
            for p, style in zip(POLICIES, ("-", "--")):
                row = lookup(table, p, shape=shape, beta=beta)
                if row is None:
                    continue
                ys = [row[f"{m}_mean"] for m in METRICS]
                ci = [row[f"{m}_ci95"] for m in METRICS]
                # MST on a log axis: the log-transformed interval, never at or below 0
                errorbar(ax, CLASSES, ys, ci, POSITIVE_FLOOR, linestyle=style, color=colours[i % len(colours)],
                            marker="*" if p == "PSBS" else "o", capsize=2, label=f"{p}, β={beta:g}")
                if p not in series:
                    series.append(p)
        ax.set_yscale("log")
        ax.set_xticks(CLASSES)
        ax.set_xlabel("weight class")
        ax.set_title(f"({tag}) shape = {shape:g}")
        ax.grid(True, which="major", alpha=0.3)
    axes[0][0].set_ylabel("MST")
    axes[0][0].legend(fontsize=7, ncol=2)
    save(fig, path)
    return series


def measured(table) -> str:
    head = "| shape | β | policy | MST | " + " | ".join(f"class {c}" for c in CLASSES) + " |"
    lines = [head, "|" + "---|" * (4 + len(CLASSES))]
    for row in table.sort(["shape", "beta", "policy"]).iter_rows(named=True):
        cells = [fmt_ci(row[f"{m}_mean"], row[f"{m}_ci95"]) for m in ["mst"] + METRICS]
        lines.append(f"| {row['shape']:g} | {row['beta']:g} | {row['policy']} | " + " | ".join(cells) + " |")
    lines += ["", f"Replications per point: {', '.join(map(str, sorted(set(table['n'].to_list()))))}; "
                  "± is the 95 % CI half-width (Student t)."]
    return "\n".join(lines)


def checks(table) -> list[Check]:
    shapes = sorted(set(table["shape"].to_list()))
    betas = sorted(set(table["beta"].to_list()))
    v = lambda p, sh, b, m: lookup(table, p, shape=sh, beta=b)[f"{m}_mean"]  # noqa: E731
    out = []
    bad = [(sh, b, c) for sh in shapes for b in betas for c in CLASSES
           if not v("PSBS", sh, b, f"mst_class_{c}") < v("GPS", sh, b, f"mst_class_{c}")]
    n = len(shapes) * len(betas) * len(CLASSES)
    out.append(Check(
        "PSBS outperforms GPS (lower MST in every weight class, for every shape and beta)",
        not bad,
        f"PSBS lower in {n - len(bad)} of {n} (shape, beta, class) cells; overall MST PSBS/GPS "
        + ", ".join(f"shape {sh:g} β {b:g}: {v('PSBS', sh, b, 'mst') / v('GPS', sh, b, 'mst'):.2f}"
                    for sh in shapes for b in betas)
        + (f"; not lower at {bad}" if bad else "")))
    if 0.0 in betas:
        spreads = {sh: max(v("PSBS", sh, 0.0, m) for m in METRICS) / min(v("PSBS", sh, 0.0, m) for m in METRICS) - 1
                   for sh in shapes}
        out.append(Check(
            f"beta = 0 leads to uniform MST between weight classes (PSBS, within {UNIFORM:.0%})",
            all(s <= UNIFORM for s in spreads.values()),
            ", ".join(f"shape {sh:g}: spread {s:.1%}" for sh, s in spreads.items())))
    ok = all(v("PSBS", sh, b1, "mst_class_1") < v("PSBS", sh, b0, "mst_class_1")
             and v("PSBS", sh, b1, "mst_class_5") > v("PSBS", sh, b0, "mst_class_5")
             for sh in shapes for b0, b1 in zip(betas, betas[1:]))
    out.append(Check(
        "raising beta improves high-weight jobs (class 1) to the detriment of low-weight ones (class 5), PSBS",
        ok,
        "; ".join(f"shape {sh:g}: class 1 " + " → ".join(f"{v('PSBS', sh, b, 'mst_class_1'):.2f}" for b in betas)
                  + ", class 5 " + " → ".join(f"{v('PSBS', sh, b, 'mst_class_5'):.2f}" for b in betas)
                  for sh in shapes)))
    if 0.25 in shapes and 4.0 in shapes and 0.0 in betas and 2.0 in betas:
        def gain_loss(sh):
            return (v("PSBS", sh, 0.0, "mst_class_1") - v("PSBS", sh, 2.0, "mst_class_1"),
                    v("PSBS", sh, 2.0, "mst_class_5") - v("PSBS", sh, 0.0, "mst_class_5"))
        g25, l25 = gain_loss(0.25)
        g4, l4 = gain_loss(4.0)
        out.append(Check(
            "the beta trade-off is uneven with skew: at shape 0.25 the class-1 gain is smaller than the class-5 "
            "loss, relatively more so than at shape 4 (gain/loss ratio lower at 0.25)",
            g25 < l25 and g25 / l25 < g4 / l4,
            f"beta 0 → 2, PSBS: shape 0.25 gain {g25:.3f} vs loss {l25:.3f} (ratio {g25 / l25:.2f}); "
            f"shape 4 gain {g4:.3f} vs loss {l4:.3f} (ratio {g4 / l4:.2f})"))
    return out


def report(results_dirs: dict[str, Path], out_dir: Path) -> list[FigureReport]:
    (results_dir,) = results_dirs.values()
    table = table_of(results_dir)
    png = out_dir / "psbs-weights-fig9.png"
    series = plot(table, png)
    return [FigureReport(
        key="fig9", title="Fig. 9 — Using weights to differentiate jobs (MST per weight class, PSBS vs GPS)",
        png=png, series=series,
        paper_says=(
            "§6.6, Fig. 9 (a) shape 0.25, (b) 1, (c) 4; weights w = 1/c^beta, class c uniform in 1..5: \"For "
            "workloads ranging between heavily skewed (shape = 0.25) to close to uniform (shape = 4), PSBS "
            "outperforms GPS. Obviously, beta = 0 leads to uniform MST between weight classes; raising the values "
            "of beta improves the performance of high-weight jobs to the detriment of low-weight ones. [...] with "
            "heavily skewed workloads (shape = 0.25) sojourn time improvements for high-weight jobs are smaller "
            "than losses for low-weight ones.\" Other parameters at the Table 1 defaults (sigma 0.5, load 0.9)."),
        measured="Absolute MST overall and per weight class (class 1 has the highest weight):\n\n" + measured(table),
        checks=checks(table))]


PIPELINE = Pipeline(
    name="psbs-weights",
    paper="Dell'Amico, Carra & Michiardi, PSBS: Practical Size-Based Scheduling (2014)",
    figure="Fig. 9",
    description="MST per weight class (w = 1/c^beta, c uniform in 1..5, beta = 0, 1, 2) of PSBS and GPS for "
                "Weibull shapes 0.25, 1 and 4, sigma = 0.5, load 0.9.",
    specs=specs,
    report=report,
)
