"""DFRS Table 2 (dfrs_table.toml): degradation from bound per trace set and
algorithm, next to the published Table 2 and Table 4 (data in the TOML):
the statistics, the bar figure, the side-by-side tables and the claims that
need a rank correlation or Table 2 itself; `per_set` checks the others."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from schedlab.pipelines import dfrs_common as dc
from schedlab.pipelines.base import FAILS, HOLDS, INCONCLUSIVE
from schedlab.pipelines.common import Estimate, bounds, emin, every, judge, md, paired_mean_ratio
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


def whole_set(table, trace_set: str) -> bool:
    """Whether a set's averages in the table are exact (`dfrs_common.exact_set`)."""
    return "n" in table.columns and dc.exact_set(trace_set, table.filter(table["set"] == trace_set)["n"].to_list())


def estimated(table, trace_set: str, policy: str, col: str = "mean") -> Estimate:
    """`value` with its 95 % interval: the average degradation ("mean") with ``ci95``, another
    column with ``<col>_ci95`` when the table has it (else no interval); exact on a whole
    fixed set (`whole_set`)."""
    v = value(table, trace_set, policy, col)
    if whole_set(table, trace_set) and v == v:
        return dc.exact(v, trace_set)
    ci = value(table, trace_set, policy, "ci95" if col == "mean" else f"{col}_ci95")
    return Estimate(v, v - ci, v + ci) if ci == ci else Estimate(v)


def _term(table, trace_set: str, term: str) -> Estimate | str:
    """A policy's average, the lowest average of a group ("min DFRS") or its algorithm ("argmin DFRS")."""
    kind, _, group = term.partition(" ")
    if kind in ("min", "argmin") and group in GROUPS:
        best = min(GROUPS[group], key=lambda p: value(table, trace_set, p))
        return emin(estimated(table, trace_set, p) for p in GROUPS[group]) if kind == "min" else best
    return estimated(table, trace_set, term)


def _policy(table, trace_set: str, term: str) -> str:
    """The algorithm a term names: itself, or a group's lowest average ("min DFRS")."""
    kind, _, group = term.partition(" ")
    return min(GROUPS[group], key=lambda p: value(table, trace_set, p)) if kind == "min" and group in GROUPS else term


def paired(data) -> Callable[[str, str, str], Estimate]:
    """``ratio(a, b, set)``: a's average degradation / b's on a set, with the
    paired interval of that ratio of means over the set's instances (every
    algorithm ran the same instances: `dfrs_common.complete`;
    `paired_mean_ratio`), a group's lowest ("min DFRS") read as its
    algorithm of lowest average; exact on a whole fixed set (`whole_set`).
    Table 2 compares averages, so the claims on two of its algorithms read
    this, not the quotient of the two averages' own intervals, which ignores
    that both ran the same weeks and traces. With no rows at hand (a table
    checked alone) the ratio is NaN and the claim reads that quotient."""
    if not data.dirs:
        return lambda a, b, s: Estimate(math.nan)
    per = _per_instance(data)

    def ratio(a: str, b: str, s: str) -> Estimate:
        pa, pb = _policy(data.table, s, a), _policy(data.table, s, b)
        if (s, pa) not in per or (s, pb) not in per:
            return Estimate(math.nan)
        r = paired_mean_ratio(per[(s, pa)], per[(s, pb)])
        return dc.exact(float(r), s) if whole_set(data.table, s) and r == r else r

    return ratio


def per_set(data, claim):
    """`Claim.at_points` on every set, a ratio of two algorithms judged on its
    paired interval (`paired`); ``published`` (a format field of ``says``):
    the same ratio on Table 2 when both terms are its rows."""
    a, _, b = claim.quantity.partition(" / ")
    published = (
        ", ".join(f"{s} x{TABLE2[a][s].avg / TABLE2[b][s].avg:.0f}" for s in SETS) if {a, b} <= set(TABLE2) else ""
    )
    ratio = paired(data)

    def on(sets: list[str]):
        return claim.at_points(sets, lambda term, s: _term(data.table, s, term), ratio=ratio, published=published)

    return dc.reads_undecided(on(SETS), SETS, "dfrs-table", on)


def _per_instance(data) -> dict[tuple[str, str], dict[tuple[Any, ...], float]]:
    """{(set, policy): {instance: degradation}} over the sets' finished instances (`dfrs_common.rows`)."""
    return {
        (s, str(policy)): values
        for s in SETS
        for policy, values in dc.per_instance(dc.rows(data.dirs, "dfrs-table", s), s, "policy", METRIC).items()
    }


def rank_ranges(values: list[Any], below: Callable[[int, int], bool | None]) -> list[tuple[float, float]]:
    """Each value's rank (1 = lowest) as the range it can take: ``below(i,
    j)`` is True when i is certainly below j, False when certainly not
    (above, or an exact tie), None when uncertain. A value related with
    certainty to every other gets a point, its mid-rank among exact ties
    (as `scipy.stats.spearmanr` ranks them); otherwise [1 + values certainly
    below, n - values certainly above]."""
    n = len(values)
    out = []
    for i in range(n):
        lower = above = ties = 0
        certain = True
        for j in range(n):
            if i == j:
                continue
            under, over = below(j, i), below(i, j)
            if under is None or over is None:
                certain = False
            elif under:
                lower += 1
            elif over:
                above += 1
            else:
                ties += 1
        out.append((lower + 1 + ties / 2,) * 2 if certain else (lower + 1.0, float(n - above)))
    return out


def rho_range(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> tuple[float, float]:
    """The Spearman rank correlation of two lists whose ranks lie in the
    given ranges (`rank_ranges`): exact (scipy's, ties at mid-ranks) when
    every rank is known; otherwise bounds from 1 - 6 sum(d^2) / (n (n^2 - 1))
    with each |d| at its largest and its smallest over the two ranges, taken
    independently (wider than the joint range of rank vectors, so the
    bounds are conservative; the no-ties formula, where at most a few exact
    ties move rho by less than the bounds' width)."""
    from scipy.stats import spearmanr

    if all(lo == hi for lo, hi in a + b):
        rho = float(spearmanr([lo for lo, _ in a], [lo for lo, _ in b])[0])
        return rho, rho
    n = len(a)
    k = 6.0 / (n * (n * n - 1))
    dmax = sum(max(abs(ah - bl), abs(bh - al)) ** 2 for (al, ah), (bl, bh) in zip(a, b, strict=True))
    dmin = sum(max(0.0, al - bh, bl - ah) ** 2 for (al, ah), (bl, bh) in zip(a, b, strict=True))
    return 1 - k * dmax, 1 - k * dmin


def _below(data, ratio, trace_set: str, policies: list[str]) -> Callable[[int, int], bool | None]:
    """Whether the i-th policy's average is certainly below the j-th's on a
    set: read from the paired interval of the ratio of their averages
    (``ratio``: `paired`, exact on a whole fixed set), else (no rows at
    hand) from the two averages' own intervals."""

    def below(i: int, j: int) -> bool | None:
        r = ratio(policies[i], policies[j], trace_set)
        if r != r:  # no rows: the averages' own intervals
            (alo, ahi), (blo, bhi) = (bounds(estimated(data.table, trace_set, p)) for p in (policies[i], policies[j]))
            return True if ahi < blo else False if alo >= bhi else None
        lo, hi = bounds(r)
        return True if hi < 1 else False if lo >= 1 else None

    return below


def _exact(values: list[float]) -> Callable[[int, int], bool | None]:
    """`rank_ranges`' relation of exact numbers (published averages)."""
    return lambda i, j: values[i] < values[j]


def _rho_at_least(claim, pairs: dict[str, tuple[list[tuple[float, float]], list[tuple[float, float]]]]):
    """The Spearman rank correlation of every pair of rank lists
    (`rank_ranges`) at least ``than``: holds when its lower bound is
    (`rho_range`), fails when its upper bound is below, else inconclusive
    (where in their intervals the averages lie decides it)."""
    rho = {k: rho_range(a, b) for k, (a, b) in pairs.items()}
    outcome = every(
        HOLDS if lo >= claim.than else FAILS if hi < claim.than else INCONCLUSIVE for lo, hi in rho.values()
    )
    return claim.verdict(
        outcome,
        ", ".join(
            f"{k}: rho {lo:.2f}" if lo == hi else f"{k}: rho in [{lo:.2f}, {hi:.2f}]" for k, (lo, hi) in rho.items()
        ),
    )


def consistent(data, claim):
    """Our averages ranked alike on every pair of sets, each set's ranks read
    from the paired comparisons of its averages (`_below`)."""
    ratio = paired(data)
    ranks = {s: rank_ranges(POLICIES, _below(data, ratio, s, POLICIES)) for s in SETS}
    return _rho_at_least(claim, {f"{a}/{b}": (ranks[a], ranks[b]) for a, b in itertools.combinations(SETS, 2)})


def ranking_matches(data, claim):
    """Our averages of Table 2's rows ranked as the published ones, on every set."""
    ratio = paired(data)
    return _rho_at_least(
        claim,
        {
            s: (
                rank_ranges(TABLE2_ROWS, _below(data, ratio, s, TABLE2_ROWS)),
                rank_ranges(TABLE2_ROWS, _exact([TABLE2[p][s].avg for p in TABLE2_ROWS])),
            )
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


def reading(table) -> str:
    """How the verdicts read the averages (`whole_set`, `paired`, `rank_ranges`)."""
    return (
        "**How the verdicts read these numbers.** "
        + dc.exactness_note(SETS, [s for s in SETS if whole_set(table, s)])
        + " A group's lowest average is compared through its algorithm's. A rank correlation is read from "
        "the ranks each average can take: two algorithms whose paired interval does not tell them apart may "
        "take either order, and rho is given as the range those orders allow."
    )


def measured(data) -> str:
    return (
        dc.coverage(data.dirs, "dfrs-table", SETS)
        + "\n\n"
        + reading(data.table)
        + "\n\nDegradation from bound next to RR-7659 Table 2, row by row:\n\n"
        + markdown(data.table)
        + "\n\nAverage normalized underutilization next to RR-7659 Table 4 (§6.4.2):\n\n"
        + underutil_markdown(data.table)
    )


def report(declared, dirs: dict[str, Path], out_dir: Path):
    """The figure reports, each with its finished instances per point (`dfrs_common.report`)."""
    return dc.report(declared, dirs, out_dir, "dfrs-table", SETS)
