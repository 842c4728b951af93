"""PSBS Fig. 5 (psbs_shape.toml): the claims no plain comparison states,
judged on intervals (`common.judge`): PSBS's MST / optimal on its 95 %
interval, "A outperforms PS" on the paired interval of A / PS."""

from __future__ import annotations

from schedlab import load
from schedlab.pipelines.common import OPS, every, interval_text, judge, paired_estimate, paired_ratios, values, xs


def near_optimal(data, claim):
    r, shapes = values(data.table), xs(data.table, "shape")
    bound = 1 + claim.tolerance
    worst = max(shapes, key=lambda s: r("PSBS", shape=s))
    return claim.verdict(
        every(judge(r("PSBS", shape=s), "<=", bound) for s in shapes),
        f"PSBS MST/optimal ranges {min(r('PSBS', shape=s) for s in shapes):.3f}–"
        f"{r('PSBS', shape=worst):.3f} (worst at shape {worst:g}: {interval_text(r('PSBS', shape=worst))})",
        bound=bound,
    )


def beats_ps(data, claim):
    """``quantity`` "A / PS" < 1 at every shape of ``where``, judged on the paired 95 % interval of A / PS."""
    r = values(data.table)
    a, _, b = claim.quantity.partition(" / ")
    shapes = [s for s in xs(data.table, "shape") if all(OPS[op](s, v) for op, v in claim.where["shape"].items())]
    if not shapes:
        return None
    paired = paired_ratios(load(data.results_dir), "mst", a, b, ["shape"], ["replication"])
    ratio = {s: paired_estimate(paired, shape=s) for s in shapes}
    return claim.verdict(
        every(judge(ratio[s], "<", 1.0) for s in shapes),
        "; ".join(
            f"shape {s:g}: {a} {r(a, shape=s):.3f} vs {b} {r(b, shape=s):.3f} "
            f"[paired 95 % CI {a}/{b} {interval_text(ratio[s])}]"
            for s in shapes
        ),
    )
