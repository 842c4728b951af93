"""PSBS paper (Dell'Amico, Carra, Michiardi 2014), Fig. 6: MST / optimal vs sigma
on three heavy-tailed workloads (shapes 0.25, 0.177, 0.125), one panel each."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from schedlab.pipelines.base import Check, FigureReport, Pipeline, deep_merge
from schedlab import load
from schedlab.pipelines.common import lookup, panel_tables, ratio_panels, relative_to, paired_ratios

POLICIES = ["PS", "LAS", "SRPTE", "FSPE", "PSBS"]
SHAPES = [0.25, 0.177, 0.125]
SIGMAS = [0.125, 0.25, 0.5, 1.0, 2.0, 4.0]
SCALES: dict[str, dict[str, Any]] = {
    "smoke": {"njobs": 400, "sigma": [0.25, 1.0, 4.0], "replications": {"n": 2}},
    "quick": {"njobs": 3000, "sigma": SIGMAS, "replications": {"n": 3}},
    "paper": {"njobs": 10000, "sigma": SIGMAS,
              "replications": {"metric": "mst", "rel_halfwidth": 0.05, "min": 30, "max": 300, "batch": 10}},
}


def specs(scale: str, overrides: dict[str, Any]) -> list[dict[str, Any]]:
    s = SCALES[scale]
    spec = {
        "name": f"psbs-sigma-{scale}",
        "engine": "queue",
        "seed": 12,
        "policies": POLICIES + ["SRPT"],
        "workload": {"kind": "synthetic", "njobs": s["njobs"], "load": 0.9, "timeshape": 1.0,
                     "shape": list(SHAPES), "sigma": list(s["sigma"])},
        "replications": dict(s["replications"]),
    }
    return [deep_merge(spec, overrides)]


#: one panel per shape: (column, value, title), shared by the figure and the report
PANELS = [("shape", shape, f"({tag}) shape = {shape:g}") for shape, tag in zip(SHAPES, "abc")]


def plot(table, path: Path) -> list[str]:
    """Fig. 6 (a)–(c): MST / optimal (log) vs sigma (log), one panel per shape; returns series plotted."""
    return ratio_panels(table, path, "sigma", POLICIES, PANELS)



def checks(table, paired: dict[str, Any] | None = None) -> list[Check]:
    """``paired``: {"PSBS/PS": table, "PSBS/SRPTE": table} of
    `common.paired_ratios` (same replications): the claims comparing two
    policies quote the extreme paired 95 % intervals."""
    paired = paired or {}

    def note(pair: str, sigmas_: list[float]) -> str:
        t = paired.get(pair)
        if t is None or t.height == 0:
            return ""
        sub = t.filter(t["sigma"].is_in(sigmas_))
        if sub.height == 0 or sub["ci_high"].null_count() == sub.height:
            return ""
        return (f" [paired 95 % CIs of {pair} over these points: upper ends {sub['ci_high'].min():.3f}–"
                f"{sub['ci_high'].max():.3f}, n = {sub['n'].min()}–{sub['n'].max()}]")

    sigmas = sorted(set(table["sigma"].to_list()))
    r = lambda p, sh, sg: lookup(table, p, shape=sh, sigma=sg)["ratio_mean"]  # noqa: E731
    out = []
    low = [sg for sg in sigmas if sg < 2]
    bad = [(sh, sg) for sh in SHAPES for sg in low if not r("PSBS", sh, sg) < r("PS", sh, sg)]
    out.append(Check(
        "in all three panels PSBS beats PS as long as sigma < 2",
        not bad,
        "PSBS/PS ratio over shapes and sigma < 2: "
        + f"{min(r('PSBS', sh, sg) / r('PS', sh, sg) for sh in SHAPES for sg in low):.3f}–"
        + f"{max(r('PSBS', sh, sg) / r('PS', sh, sg) for sh in SHAPES for sg in low):.3f}"
        + (f"; fails at (shape, sigma) {bad}" if bad else "") + note("PSBS/PS", low)))
    bad = [(sh, sg) for sh in SHAPES for sg in sigmas if not r("PSBS", sh, sg) <= r("SRPTE", sh, sg)]
    out.append(Check(
        "in all three panels PSBS performs better than SRPTE (every sigma)",
        not bad,
        "SRPTE/PSBS ratio: "
        + f"{min(r('SRPTE', sh, sg) / r('PSBS', sh, sg) for sh in SHAPES for sg in sigmas):.2f}–"
        + f"{max(r('SRPTE', sh, sg) / r('PSBS', sh, sg) for sh in SHAPES for sg in sigmas):.2f}"
        + (f"; fails at (shape, sigma) {bad}" if bad else "") + note("PSBS/SRPTE", sigmas)))
    gap = {sh: max(r("FSPE", sh, sg) / r("PSBS", sh, sg) for sg in sigmas) for sh in SHAPES}
    out.append(Check(
        "the FSPE–PSBS gap grows with skew (largest FSPE/PSBS at shape 0.125 exceeds that at shape 0.25)",
        gap[0.125] > gap[0.25],
        ", ".join(f"shape {sh:g}: max FSPE/PSBS {g:.2f}" for sh, g in gap.items())))
    return out


def report(results_dirs: dict[str, Path], out_dir: Path) -> list[FigureReport]:
    (results_dir,) = results_dirs.values()
    table = relative_to(results_dir, "mst", "SRPT", ["shape", "sigma"])
    png = out_dir / "psbs-sigma-fig6.png"
    series = plot(table, png)
    measured = panel_tables(table, "sigma", POLICIES, PANELS)
    return [FigureReport(
        key="fig6", title="Fig. 6 — Impact of error on heavy-tailed workloads (MST / optimal vs sigma)",
        png=png, series=series,
        paper_says=(
            "§6.4, Fig. 6 (a) shape 0.25, (b) 0.177, (c) 0.125: \"PSBS is robust with respect to errors in all "
            "the three cases we consider, while SRPTE and FSPE suffer as the skew between job sizes grows. In all "
            "three cases, PSBS performs better than PS as long as sigma is lower than 2 [...] In all three plots, "
            "PSBS performs better than SRPTE; the difference between PSBS and FSPE, instead, becomes discernible "
            "only for shape < 0.25 [...] reaching differences of even around one order of magnitude.\" "
            "(FIFO falls outside the plots and is not drawn.)"),
        measured="\n\n".join(measured),
        checks=checks(table, {pair: paired_ratios(load(results_dir), "mst", *pair.split("/"), ["shape", "sigma"],
                                                  ["replication"]) for pair in ("PSBS/PS", "PSBS/SRPTE")}))]


PIPELINE = Pipeline(
    name="psbs-sigma",
    paper="Dell'Amico, Carra & Michiardi, PSBS: Practical Size-Based Scheduling (2014)",
    figure="Fig. 6",
    description="MST / optimal (SRPT) of PS, LAS, SRPTE, FSPE and PSBS as the log-normal estimation error sigma "
                "grows, for Weibull shapes 0.25, 0.177 and 0.125, load 0.9.",
    specs=specs,
    report=report,
)
