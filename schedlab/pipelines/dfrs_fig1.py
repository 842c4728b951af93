"""DFRS Fig. 1 (dfrs_fig1.toml): the table of both engines' rows, the best
algorithm next to the text's factors, and the claims no single comparison
states (over loads, against the best of a group, at all loads but one)."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

from schedlab.pipelines import dfrs_common as dc
from schedlab.pipelines.base import FAILS, HOLDS, INCONCLUSIVE
from schedlab.pipelines.common import (
    Estimate,
    emin,
    every,
    interval_text,
    judge,
    lookup,
    md_table,
    paired_mean_ratio,
    values,
    xs,
)

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


def _pairs(data) -> Callable[[str, str, float], Estimate]:
    """``ratio(a, b, load)``: a's average degradation / b's at a load with the
    paired interval of that ratio of means (the same traces scaled to that
    load under both: `paired_mean_ratio`): the figure plots averages. With
    no rows at hand (a table checked alone) the ratio is NaN, and the claim
    reads the quotient of the two means' intervals instead (`Claim.at_points`)."""
    import polars as pl

    if not data.dirs:
        return lambda a, b, load: Estimate(math.nan)
    frame = dc.rows(data.dirs, "dfrs-fig1", "scaled")
    per: dict[tuple[str, float], dict[int, float]] = {}
    for (policy, load), group in frame.group_by(["policy", "load"]):
        per[(str(policy), float(load))] = dict(zip(group["replication"], group[METRIC].cast(pl.Float64), strict=True))

    def ratio(a: str, b: str, load: float) -> Estimate:
        return paired_mean_ratio(per[(a, float(load))], per[(b, float(load))])

    return ratio


def _best_other(deg, policy: str, loads: list[float]) -> dict[float, str]:
    """Per load, the DFRS algorithm other than ``policy`` with the lowest mean:
    ``policy`` is within a factor of the best DFRS mean exactly when it is
    within it of this one's (it is the best, or this one is), and the two
    make a paired ratio with an interval (``policy`` against itself has none)."""
    return {x: min((p for p in DFRS if p != policy), key=lambda p: float(deg(p, x))) for x in loads}


def good_low_poor_high(data, claim):
    """Within ``than`` of the best DFRS at the ``where`` loads, at or above the
    median DFRS above them: each on the ratio of GreedyPM*/OPT=MIN's average
    degradation to one other algorithm's at the load, with that ratio's paired
    interval (`_pairs`) -- the best other one's below (`_best_other`), the
    median one's above (the k-th lowest mean, k = half the DFRS algorithms;
    at a load where that is GreedyPM*/OPT=MIN itself, it is at the median)."""
    loads, deg, best = _loads_and_deg(data.table)
    pm, low_load = claim.quantity.split(" / ")[0], claim.where["load"]["<="]
    low = [x for x in loads if x <= low_load + 1e-9]
    high = [x for x in loads if x > low_load + 1e-9]
    if not (low and high):
        return None
    pairs, other = _pairs(data), _best_other(deg, pm, low)
    median = {x: sorted(DFRS, key=lambda p: float(deg(p, x)))[len(DFRS) // 2] for x in high}

    def ratio(b: str, x: float) -> Estimate:
        """pm / b at load x: the paired interval, else (no rows at hand) the quotient of the means' intervals."""
        r = pairs(pm, b, x)
        return deg(pm, x) / deg(b, x) if math.isnan(r) else r

    good_low = [judge(ratio(other[x], x), "<=", claim.than) for x in low]
    poor_high = [HOLDS if median[x] == pm else judge(ratio(median[x], x), ">=", 1.0) for x in high]
    return claim.verdict(
        every(good_low + poor_high),
        ", ".join(
            [f"load {x:g}: {deg(pm, x):.3g} / best other {interval_text(ratio(other[x], x))}" for x in low]
            + [
                f"load {x:g}: {deg(pm, x):.3g}, the median algorithm"
                if median[x] == pm
                else f"load {x:g}: {deg(pm, x):.3g} / median {interval_text(ratio(median[x], x))}"
                for x in high
            ]
        ),
        low=low_load,
    )


def best_everywhere(data, claim):
    """Within ``than`` of the best DFRS mean at every load: the paired ratio to
    the best other DFRS algorithm there (`_best_other`)."""
    loads, deg, _ = _loads_and_deg(data.table)
    policy = claim.quantity.split(" / ")[0]
    ratio, other = _pairs(data), _best_other(deg, policy, loads)
    return claim.at_points(
        loads,
        lambda term, x: deg(other[x], x) if term == "best other DFRS" else deg(term, x),
        lambda a, b, x: ratio(a, other[x], x),
    )


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
