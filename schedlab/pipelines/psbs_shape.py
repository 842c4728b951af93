"""PSBS Fig. 5 (psbs_shape.toml): the claims no plain comparison states."""

from __future__ import annotations

from schedlab import load
from schedlab.pipelines.common import OPS, paired_note, paired_ratios, values, xs


def near_optimal(data, claim):
    r, shapes = values(data.table), xs(data.table, "shape")
    worst = max(shapes, key=lambda s: r("PSBS", shape=s))
    return claim.verdict(
        all(r("PSBS", shape=s) <= 1 + claim.tolerance for s in shapes),
        f"PSBS MST/optimal ranges {min(r('PSBS', shape=s) for s in shapes):.3f}–"
        f"{r('PSBS', shape=worst):.3f} (worst at shape {worst:g})",
        bound=1 + claim.tolerance,
    )


def beats_ps(data, claim):
    """``quantity`` "A / PS" < 1 at every shape of ``where``, with the paired 95 % CI of A / PS."""
    r = values(data.table)
    a, _, b = claim.quantity.partition(" / ")
    shapes = [s for s in xs(data.table, "shape") if all(OPS[op](s, v) for op, v in claim.where["shape"].items())]
    if not shapes:
        return None
    paired = paired_ratios(load(data.results_dir), "mst", a, b, ["shape"], ["replication"])

    def note(s: float) -> str:
        text = paired_note(paired, a, b, shape=s)
        return f" [paired 95 % CI {text}]" if text else ""

    return claim.verdict(
        all(r(a, shape=s) < r(b, shape=s) for s in shapes),
        "; ".join(f"shape {s:g}: {a} {r(a, shape=s):.3f} vs {b} {r(b, shape=s):.3f}{note(s)}" for s in shapes),
    )
