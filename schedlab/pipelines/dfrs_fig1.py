"""DFRS Fig. 1 (dfrs_fig1.toml): the table of both engines' rows, the best
algorithm next to the text's factors, and the claims no single comparison
states (over loads, against the best of a group, at all loads but one)."""

from __future__ import annotations

from pathlib import Path

from schedlab.pipelines import dfrs_common as dc
from schedlab.pipelines.base import FAILS, HOLDS, INCONCLUSIVE
from schedlab.pipelines.common import emin, erank, every, judge, lookup, md_table, values, xs

DOC = dc.read(__name__)
POLICIES: list[str] = DOC["figures"][0]["plot"]["series"]
DFRS = [p for p in POLICIES if p not in dc.BATCH]
METRIC = "degradation"
specs = dc.specs


def table_of(results_dirs: dict[str, Path]):
    """Both sweeps' rows (DFRS and batch), averaged per load."""
    from schedlab.platform.statistics.stats import summarize

    return summarize(dc.rows(results_dirs, "dfrs-fig1", "scaled"), ["load", "policy"], [METRIC])


def _loads_and_deg(table):
    """The loads, ``deg(policy, load)``: a mean degradation (every algorithm ran
    at every load), and the lowest DFRS mean per load."""
    r, loads = values(table, METRIC), xs(table, "load")
    return loads, lambda p, x: r(p, load=x), {x: emin(r(p, load=x) for p in DFRS) for x in loads}


def batch_outperformed(data, claim):
    loads, deg, best = _loads_and_deg(data.table)
    batch_best = {x: emin(deg(p, x) for p in dc.BATCH) for x in loads}
    beaten = [judge(batch_best[x], ">=", claim.than * best[x]) for x in loads]  # at all loads but one
    sure, ruled_out = beaten.count(HOLDS), beaten.count(FAILS)
    return claim.verdict(
        HOLDS if sure >= len(loads) - 1 else FAILS if ruled_out > 1 else INCONCLUSIVE,
        ", ".join(f"load {x:g}: EASY/FCFS {batch_best[x]:.3g} vs best DFRS {best[x]:.3g}" for x in loads),
    )


def only_poor(data, claim):
    loads, deg, _ = _loads_and_deg(data.table)
    avg = {p: sum(deg(p, x) for x in loads) / len(loads) for p in DFRS}
    g = claim.quantity.split(",")[0]
    return claim.verdict(
        every(judge(avg[g], ">", v) for p, v in avg.items() if p != g),
        ", ".join(f"{p} {v:.3g}" for p, v in sorted(avg.items(), key=lambda kv: -kv[1])),
    )


def good_low_poor_high(data, claim):
    """Within ``than`` of the best DFRS at the ``where`` loads, at or above the median DFRS above them."""
    loads, deg, best = _loads_and_deg(data.table)
    pm, low_load = claim.quantity.split(" / ")[0], claim.where["load"]["<="]
    low = [x for x in loads if x <= low_load + 1e-9]
    high = [x for x in loads if x > low_load + 1e-9]
    if not (low and high):
        return None
    good_low = [judge(deg(pm, x), "<=", claim.than * best[x]) for x in low]
    median = {x: erank((deg(p, x) for p in DFRS), len(DFRS) // 2) for x in high}
    poor_high = [judge(deg(pm, x), ">=", median[x]) for x in high]
    return claim.verdict(
        every(good_low + poor_high),
        ", ".join(f"load {x:g}: {deg(pm, x):.3g} (best {best[x]:.3g})" for x in loads),
        low=low_load,
    )


def best_everywhere(data, claim):
    loads, deg, best = _loads_and_deg(data.table)
    return claim.at_points(loads, lambda term, x: best[x] if term == "min DFRS" else deg(term, x))


def measured(data) -> str:
    """Coverage, the best algorithm's averages next to the text's factors, and the table."""
    parts = []
    for x, paper in DOC["published_best"]:
        got = (lookup(data.table, dc.BEST, load=x) or {}).get(f"{METRIC}_mean")
        parts.append(f"load {x:g}: published about {paper:g}, ours " + ("not run" if got is None else f"{got:.3g}"))
    (panel,) = data.fig["panels"]
    return (
        dc.coverage(data.dirs, "dfrs-fig1", ["scaled"])
        + f"\n\n{dc.BEST} ({DOC['published_best_says']}): "
        + "; ".join(parts)
        + f".\n\n{panel['caption']}:\n\n"
        + md_table(data.table, "load", POLICIES, METRIC, panel["x_label"])
    )


def report(declared, dirs: dict[str, Path], out_dir: Path):
    """The figure reports, each with its finished instances per point (`dfrs_common.report`)."""
    return dc.report(declared, dirs, out_dir, "dfrs-fig1", ["scaled"], per_load=True)
