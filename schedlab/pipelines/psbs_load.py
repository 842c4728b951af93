"""PSBS Fig. 11 (psbs_load.toml): the claims on how the ratios change along a panel's x."""

from __future__ import annotations

from schedlab.pipelines.common import emax, emin, every, judge, spread, values, xs

SIZE_BASED = ["SRPTE", "FSPE", "PSBS"]
POLICIES = ["PS", "LAS"] + SIZE_BASED


def stable_over_load(data, claim):
    r, loads = values(data.tables["load"]), xs(data.tables["load"], "load")
    var = {p: spread(r(p, load=v) for v in loads) for p in SIZE_BASED}
    return claim.verdict(
        every(judge(v, "<=", claim.tolerance) for v in var.values()),
        ", ".join(f"{p} varies {v:.0%}" for p, v in var.items()),
        lo=loads[0],
        hi=loads[-1],
    )


def oblivious_grow(data, claim):
    r, loads = values(data.tables["load"]), xs(data.tables["load"], "load")
    lo, hi = loads[0], loads[-1]
    grow = {p: r(p, load=hi) / r(p, load=lo) for p in POLICIES}
    return claim.verdict(
        every(
            [judge(grow[p], ">", 1) for p in ("PS", "LAS")]
            + [judge(emin([grow["PS"], grow["LAS"]]), ">", emax(grow[p] for p in SIZE_BASED))]
        ),
        f"MST/optimal at load {hi:g} over load {lo:g}: " + ", ".join(f"{p} ×{g:.2f}" for p, g in grow.items()),
    )


def regular_hurts(data, claim):
    q, ts = values(data.tables["timeshape"]), xs(data.tables["timeshape"], "timeshape")
    return claim.verdict(
        every(judge(q(p, timeshape=ts[-1]), ">", q(p, timeshape=ts[0])) for p in ("SRPTE", "FSPE")),
        ", ".join(f"{p} {q(p, timeshape=ts[0]):.3f} → {q(p, timeshape=ts[-1]):.3f}" for p in ("SRPTE", "FSPE")),
        lo=ts[0],
        hi=ts[-1],
    )
