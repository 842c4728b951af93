"""Psychas & Ghaderi Fig. 5 (pg_fig5.toml): the claims at the highest scalings."""

from __future__ import annotations

from schedlab.pipelines.common import emin, every, judge, values, xs

POLICIES = ["BF-J/S", "VQS-BF", "VQS", "FIFO-FF"]


def clear_advantage(data, claim):
    q, scalings = values(data.table, "queue_jobs_mean"), xs(data.table, "scaling")
    top = scalings[-1]
    worse = emin([q("VQS", scaling=top), q("FIFO-FF", scaling=top)])
    return claim.verdict(
        every(judge(q(p, scaling=top), "<=", claim.than * worse) for p in ("BF-J/S", "VQS-BF")),
        "; ".join(f"1/β={x:g}: " + ", ".join(f"{p} {q(p, scaling=x):.3g}" for p in POLICIES) for x in scalings),
        top=top,
        clear=claim.than,
    )


def small_improvement(data, claim):
    q, scalings = values(data.table, "queue_jobs_mean"), xs(data.table, "scaling")
    high = [x for x in scalings if x > claim.where["scaling"][">"]] or [scalings[-1]]
    return claim.verdict(
        every(judge(q("VQS-BF", scaling=x), "<", q("BF-J/S", scaling=x)) for x in high),
        "VQS-BF / BF-J/S: "
        + ", ".join(
            f"{x:g}: {q('VQS-BF', scaling=x) / q('BF-J/S', scaling=x):.3f}"
            if q("BF-J/S", scaling=x) > 0
            else f"{x:g}: BF-J/S 0"
            for x in scalings
        ),
    )
