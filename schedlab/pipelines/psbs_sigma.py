"""PSBS Fig. 6 (psbs_sigma.toml): the claims over all three panels, with paired intervals."""

from __future__ import annotations

from schedlab import load
from schedlab.pipelines.common import OPS, every, judge, paired_estimate, paired_ratios, values, xs


def shapes(data) -> list[float]:
    return [p["where"]["shape"] for p in data.fig["panels"]]


def beats_in_every_panel(data, claim):
    """``quantity`` "A / B" ``comparison`` 1 at every (shape, sigma of ``where``), judged on the
    paired 95 % interval of A / B at each; the detail quotes the range of the ratio (B / A for "<="),
    the cells where the interval is wholly on the wrong side or straddles 1, and the extreme intervals."""
    r = values(data.table)
    a, b = claim.quantity.split(" / ")
    sigmas = [
        sg for sg in xs(data.table, "sigma") if all(OPS[op](sg, v) for op, v in claim.where.get("sigma", {}).items())
    ]
    cells = [(sh, sg) for sh in shapes(data) for sg in sigmas]
    paired = paired_ratios(load(data.results_dir), "mst", a, b, ["shape", "sigma"], ["replication"])
    outcome = {(sh, sg): judge(paired_estimate(paired, shape=sh, sigma=sg), claim.comparison, 1.0) for sh, sg in cells}
    bad = [cell for cell, o in outcome.items() if o == "fails"]
    unsure = [cell for cell, o in outcome.items() if o == "inconclusive"]
    if claim.comparison == "<":
        ratios, what, digits = (
            [r(a, shape=sh, sigma=sg) / r(b, shape=sh, sigma=sg) for sh, sg in cells],
            f"{a}/{b} ratio over shapes and sigma < 2",
            3,
        )
    else:
        ratios, what, digits = (
            [r(b, shape=sh, sigma=sg) / r(a, shape=sh, sigma=sg) for sh, sg in cells],
            f"{b}/{a} ratio",
            2,
        )
    sub = paired.filter(paired["sigma"].is_in(sigmas))
    note = (
        ""
        if sub.height == 0 or sub["ci_high"].null_count() == sub.height
        else (
            f" [paired 95 % CIs of {a}/{b} over these points: upper ends {sub['ci_high'].min():.3f}–"
            f"{sub['ci_high'].max():.3f}, n = {sub['n'].min()}–{sub['n'].max()}]"
        )
    )
    return claim.verdict(
        every(outcome.values()),
        f"{what}: {min(ratios):.{digits}f}–{max(ratios):.{digits}f}"
        + (f"; fails at (shape, sigma) {bad}" if bad else "")
        + (f"; the interval straddles 1 at (shape, sigma) {unsure}" if unsure else "")
        + note,
    )
