"""Psychas & Ghaderi Fig. 5 (pg_fig5.toml): the claims at the highest scalings."""

from __future__ import annotations

from schedlab.pipelines.common import Estimate, emin, every, judge, values, xs

POLICIES = ["BF-J/S", "VQS-BF", "VQS", "FIFO-FF"]
METRIC = "queue_jobs_mean"


def queues(data):
    """``(q(policy, **point), note)``: the average queue at a point. The trace
    replay has no randomness of its own; when every point's replications
    (two or more) gave identical queues, the replay is shown to be
    deterministic and each value is exact (an interval of width 0), else
    the 95 % interval of its replications (none at one replication)."""
    import polars as pl

    from schedlab import load
    from schedlab.platform.statistics.stats import identical

    q = values(data.table, METRIC)
    rows = load(data.results_dir).select("policy", "traffic", METRIC).collect()
    runs = rows.group_by(["policy", "traffic"]).agg(pl.col(METRIC))[METRIC].to_list()
    if not runs or not all(identical(r) for r in runs):
        return q, ""
    n = min(len(r) for r in runs)

    def exact(policy, **point):
        m = float(q(policy, **point))
        return Estimate(m, m, m)

    return exact, f" (a deterministic replay: every point identical in its {n} replications, so each value is exact)"


def clear_advantage(data, claim):
    (q, note), scalings = queues(data), xs(data.table, "scaling")
    top = scalings[-1]
    worse = emin([q("VQS", scaling=top), q("FIFO-FF", scaling=top)])
    return claim.verdict(
        every(judge(q(p, scaling=top), "<=", claim.than * worse) for p in ("BF-J/S", "VQS-BF")),
        "; ".join(f"1/β={x:g}: " + ", ".join(f"{p} {q(p, scaling=x):.3g}" for p in POLICIES) for x in scalings) + note,
        top=top,
        clear=claim.than,
    )


def small_improvement(data, claim):
    (q, note), scalings = queues(data), xs(data.table, "scaling")
    high = [x for x in scalings if x > claim.where["scaling"][">"]] or [scalings[-1]]
    return claim.verdict(
        every(judge(q("VQS-BF", scaling=x), "<", q("BF-J/S", scaling=x)) for x in high),
        "VQS-BF / BF-J/S: "
        + ", ".join(
            f"{x:g}: {q('VQS-BF', scaling=x) / q('BF-J/S', scaling=x):.3f}"
            if q("BF-J/S", scaling=x) > 0
            else f"{x:g}: BF-J/S 0"
            for x in scalings
        )
        + note,
    )
