"""DFRS Table 2 (dfrs_table.toml): degradation from bound per trace set and
algorithm, next to the published Table 2 and Table 4 (data in the TOML):
the statistics, the bar figure, the side-by-side tables and the claims that
need a rank correlation or Table 2 itself; `per_set` checks the others."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any, NamedTuple

from schedlab.pipelines import dfrs_common as dc
from schedlab.pipelines.base import FAILS, HOLDS, INCONCLUSIVE
from schedlab.pipelines.common import Estimate, bounds, emin, every, judge, md
from schedlab.plotting import save


class Stat(NamedTuple):
    avg: float
    std: float
    max: float


DOC = dc.read(__name__)
SETS: list[str] = DOC["sets"]
#: RR-7659 Table 2: {algorithm: {set: Stat}}, in the paper's row order (FCFS, EASY, the 18 DFRS rows).
TABLE2 = {n: {s: Stat(*v[3 * i : 3 * i + 3]) for i, s in enumerate(SETS)} for n, *v in DOC["published"]["table2"]}
TABLE2_ROWS = list(TABLE2)
#: RR-7659 Table 4: {algorithm: {set: average normalized underutilization}}.
TABLE4 = {p: dict(zip(SETS, v)) for p, v in DOC["published"]["table4"].items()}
AVG_VARIANT, MINFT_VARIANT = DOC["variants"]
#: Table 2's 18 DFRS rows (paper order), then the two variants the text's claims compare.
DFRS = [p for p in TABLE2_ROWS if p not in dc.BATCH] + DOC["variants"]
POLICIES = dc.BATCH + DFRS
METRIC = "degradation"


def specs(doc, scale, overrides):
    return dc.specs({**doc, "policies": POLICIES}, scale, overrides)


def stats(results_dirs: dict[str, Path]):
    """One row per (set, policy): n, mean, std, max, ci95 (95 % t half-width
    of the mean) of the degradation, and the mean underutilization, over the
    set's instances."""
    import polars as pl

    from schedlab.platform.statistics.stats import summarize

    frames = []
    for trace_set in SETS:
        rows = dc.rows(results_dirs, "dfrs-table", trace_set)
        frames.append(
            summarize(rows, ["policy"], [METRIC, "underutilization"], std=True)
            .drop("underutilization_std")
            .join(rows.group_by("policy").agg(pl.col(METRIC).max().alias("max")), on="policy")
            .rename(
                {f"{METRIC}_{k}": k for k in ("mean", "std", "ci95")} | {"underutilization_mean": "underutilization"}
            )
            .with_columns(pl.lit(trace_set).alias("set"))
        )
    return pl.concat(frames).sort("set", "policy")


def value(table, trace_set: str, policy: str, col: str = "mean") -> float:
    if col not in table.columns:
        return float("nan")
    sub = table.filter((table["set"] == trace_set) & (table["policy"] == policy))
    v = sub[col][0] if sub.height else None
    return float(v) if v is not None else float("nan")  # std of one instance: NaN


def plot(data, path: Path) -> list[str]:
    """Average (bar) and worst-trace (marker) degradation per algorithm, one panel per set."""
    import matplotlib.pyplot as plt

    table = data.table
    fig, axes = plt.subplots(1, len(SETS), figsize=(15, 4.6), sharey=True)
    xs = list(range(len(POLICIES)))
    for ax, trace_set in zip(axes, SETS):
        means = [value(table, trace_set, p) for p in POLICIES]
        worst = [value(table, trace_set, p, "max") for p in POLICIES]
        ax.bar(xs, means, color=["#b44" if p in dc.BATCH else "#47a" for p in POLICIES], label="average")
        ax.plot(xs, worst, "k_", markersize=14, label="worst trace")
        ax.set_yscale("log")
        ax.set_xticks(xs, POLICIES, rotation=75, fontsize=6)
        ax.set_title(dc.TITLES[trace_set])
        ax.grid(True, axis="y", which="both", alpha=0.3)
    axes[0].set_ylabel("degradation from bound")
    axes[0].legend(fontsize=8)
    save(fig, path)
    return list(POLICIES)


def _num(x: float, digits: int = 3) -> str:
    """``digits`` significant digits below 100, whole numbers (thousands separated) from 100 on; NaN: a dash."""
    return "–" if x != x else f"{x:.{digits}g}" if abs(x) < 100 else f"{x:,.0f}"


def markdown(table) -> str:
    """Our average (± 95 % t interval) / std / max next to Table 2's, one table
    per trace set, every Table 2 row in the paper's order (then the two
    variants the text compares), with ours / published averages."""
    head = ["algorithm", "published avg", "published std", "published max"]
    head += ["ours avg (± 95 %)", "ours std", "ours max", "ours / published avg"]
    out = []
    for s in SETS:
        rows = []
        for p in POLICIES:
            paper = TABLE2.get(p, {}).get(s)
            m, sd, mx, ci = (value(table, s, p, c) for c in ("mean", "std", "max", "ci95"))
            published = (
                [f"{paper.avg:,.1f}", f"{paper.std:,.1f}", f"{paper.max:,.1f}"]
                if paper
                else ["(not in Table 2)", "", ""]
            )
            ours = [f"{_num(m)} ± {_num(ci, 2)}" if ci == ci else _num(m), _num(sd), _num(mx)]
            rows.append([p, *published, *ours, _num(m / paper.avg, 2) if paper and m == m else "–"])
        title = f"**{dc.TITLES[s]}** (Table 2: {dc.PAPER_INSTANCES[s]} instances)"
        out.append(f"{title}\n\n" + md(head, rows))
    ns = dc.counts({s: table.filter(table["set"] == s) for s in SETS})
    return "\n\n".join(
        out + [f"Our instances per set: {ns}; std is the sample standard deviation over the set's instances."]
    )


def underutil_markdown(table) -> str:
    """Table 4 (average normalized underutilization) side by side."""
    return md(
        ["algorithm"] + [f"{dc.TITLES[s]}: published / ours" for s in SETS],
        [
            [p] + [f"{paper[s]:.3f} / {value(table, s, p, 'underutilization'):.3f}" for s in SETS]
            for p, paper in TABLE4.items()
        ],
    )


#: the groups a claim's term may take the lowest average of ("min DFRS"; "argmin DFRS": its algorithm)
GROUPS = {"DFRS": DFRS, "batch": dc.BATCH, "Table 2 DFRS": TABLE2_ROWS[2:]}


def estimated(table, trace_set: str, policy: str, col: str = "mean") -> Estimate:
    """`value` with its 95 % interval: the average degradation ("mean") with ``ci95``, another
    column with ``<col>_ci95`` when the table has it (else no interval)."""
    ci = value(table, trace_set, policy, "ci95" if col == "mean" else f"{col}_ci95")
    v = value(table, trace_set, policy, col)
    return Estimate(v, v - ci, v + ci) if ci == ci else Estimate(v)


def _term(table, trace_set: str, term: str) -> Estimate | str:
    """A policy's average, the lowest average of a group ("min DFRS") or its algorithm ("argmin DFRS")."""
    kind, _, group = term.partition(" ")
    if kind in ("min", "argmin") and group in GROUPS:
        best = min(GROUPS[group], key=lambda p: value(table, trace_set, p))
        return emin(estimated(table, trace_set, p) for p in GROUPS[group]) if kind == "min" else best
    return estimated(table, trace_set, term)


def per_set(data, claim):
    """`Claim.at_points` on every set; ``published`` (a format field of
    ``says``): the same ratio on Table 2 when both terms are its rows."""
    a, _, b = claim.quantity.partition(" / ")
    published = (
        ", ".join(f"{s} x{TABLE2[a][s].avg / TABLE2[b][s].avg:.0f}" for s in SETS) if {a, b} <= set(TABLE2) else ""
    )
    return claim.at_points(SETS, lambda term, s: _term(data.table, s, term), published=published)


def ranks_certain(values: list[Any]) -> bool:
    """Whether the ranks of ``values`` are the same for every choice of values
    within their 95 % intervals (`Estimate`s; a plain number is exact): no two
    intervals overlap, or they are the same exact number (a tie)."""
    spans = sorted(bounds(v) for v in values)
    return all(a[1] < b[0] or (a[0] == a[1] == b[0] == b[1]) for a, b in zip(spans, spans[1:]))


def _rho_at_least(claim, pairs: dict[str, tuple[list[Any], list[Any]]]):
    """The Spearman rank correlation of every pair of lists at least ``than``,
    read from the ranks: they are certain when no two intervals of a list
    overlap (`ranks_certain`), and the verdict is then rho's; otherwise
    inconclusive (the ranks, hence rho, depend on where in their intervals
    the averages lie)."""
    from scipy.stats import spearmanr

    rho = {k: float(spearmanr([float(x) for x in a], [float(x) for x in b])[0]) for k, (a, b) in pairs.items()}
    certain = {k: ranks_certain(a) and ranks_certain(b) for k, (a, b) in pairs.items()}
    outcome = every((HOLDS if rho[k] >= claim.than else FAILS) if certain[k] else INCONCLUSIVE for k in pairs)
    return claim.verdict(
        outcome,
        ", ".join(
            f"{k}: rho {r:.2f}" + ("" if certain[k] else " (ranks within overlapping intervals)")
            for k, r in rho.items()
        ),
    )


def consistent(data, claim):
    """Our averages ranked alike on every pair of sets."""
    avg = {s: [estimated(data.table, s, p) for p in POLICIES] for s in SETS}
    return _rho_at_least(claim, {f"{a}/{b}": (avg[a], avg[b]) for a, b in itertools.combinations(SETS, 2)})


def ranking_matches(data, claim):
    """Our averages of Table 2's rows ranked as the published ones, on every set."""
    return _rho_at_least(
        claim,
        {
            s: ([estimated(data.table, s, p) for p in TABLE2_ROWS], [TABLE2[p][s].avg for p in TABLE2_ROWS])
            for s in SETS
        },
    )


def underutil_above_easy(data, claim):
    u = {p: {s: estimated(data.table, s, p, "underutilization") for s in SETS} for p in TABLE4}
    dfrs_u = [p for p in TABLE4 if p != "EASY"]
    return claim.verdict(
        every(judge(u[p][s], ">", u["EASY"][s]) for p in dfrs_u for s in SETS),
        ", ".join(f"{s}: EASY {u['EASY'][s]:.3f} vs " + " / ".join(f"{u[p][s]:.3f}" for p in dfrs_u) for s in SETS),
        published=", ".join(f"{s} EASY {TABLE4['EASY'][s]:.3f} vs {TABLE4[dc.BEST][s]:.3f}" for s in SETS),
    )


def measured(data) -> str:
    return (
        dc.coverage(data.dirs, "dfrs-table", SETS)
        + "\n\nDegradation from bound next to RR-7659 Table 2, row by row:\n\n"
        + markdown(data.table)
        + "\n\nAverage normalized underutilization next to RR-7659 Table 4 (§6.4.2):\n\n"
        + underutil_markdown(data.table)
    )


def report(declared, dirs: dict[str, Path], out_dir: Path):
    """The figure reports, each with its finished instances per point (`dfrs_common.report`)."""
    return dc.report(declared, dirs, out_dir, "dfrs-table", SETS)
