"""Psychas & Ghaderi Fig. 4 (pg_fig4.toml): claims across both panels."""

from __future__ import annotations

import math

from schedlab.pipelines.common import every, interval_text, judge, paired_estimate, paired_ratios, values, xs

METRIC = "queue_jobs_mean"


def _at(data):
    q = {tag: values(t, METRIC) for tag, t in data.tables.items()}
    return (lambda tag, p, a: q[tag](p, intensity=a)), {tag: xs(t, "intensity") for tag, t in data.tables.items()}


def _ratio(data):
    """``r(tag, a, b, alpha)``: a / b in panel ``tag`` at ``alpha``, judged on the
    paired interval over replications (the same arrivals and demands for both
    policies: common random numbers), else -- no pairs, or a queue of 0 -- on the
    quotient of the two means' intervals."""
    from schedlab import load

    q, _ = _at(data)
    cache: dict = {}

    def r(tag, a, b, alpha):
        if (tag, a, b) not in cache:
            (d,) = [d for n, d in data.dirs.items() if n.startswith(f"pg-fig4{tag}-")]
            cache[(tag, a, b)] = paired_ratios(load(d).collect(), METRIC, a, b, ["intensity"], ["replication"])
        paired = paired_estimate(cache[(tag, a, b)], intensity=alpha)
        return paired if math.isfinite(paired) and math.isfinite(paired.low) else q(tag, a, alpha) / q(tag, b, alpha)

    return r


def vqs_worse(data, claim):
    (q, alphas), r = _at(data), _ratio(data)
    outcome = {
        (tag, a): every(judge(r(tag, "VQS", other, a), ">", 1.0) for other in ("BF-J/S", "VQS-BF"))
        for tag in alphas
        for a in alphas[tag]
    }
    bad = [cell for cell, o in outcome.items() if o != "holds"]
    return claim.verdict(
        every(outcome.values()),
        "; ".join(
            f"({tag}) α={a:g}: VQS {q(tag, 'VQS', a):.3g}, BF-J/S {q(tag, 'BF-J/S', a):.3g}, "
            f"VQS-BF {q(tag, 'VQS-BF', a):.3g}"
            for tag in alphas
            for a in alphas[tag][-1:]
        )
        + (f"; not shown by the intervals at {bad}" if bad else ""),
    )


def comparable(data, claim):
    (_, alphas), r = _at(data), _ratio(data)
    low = [a for a in alphas["a"] if a <= claim.where["intensity"]["<="]]
    if not low:
        return None
    rel = {a: r("a", "VQS-BF", "BF-J/S", a) for a in low}
    return claim.verdict(
        every(every([judge(v, "<=", 1 + claim.tolerance), judge(v, ">=", 1 - claim.tolerance)]) for v in rel.values()),
        ", ".join(f"α={a:g}: VQS-BF/BF-J/S {interval_text(v, '.2f')}" for a, v in rel.items()),
    )


def bfjs_ahead(data, claim):
    (q, alphas), r = _at(data), _ratio(data)
    high = [("a", a) for a in alphas["a"] if a > 0.95] + [("b", a) for a in alphas["b"]]
    if not high:
        return None
    return claim.verdict(
        every(judge(r(tag, "BF-J/S", "VQS-BF", a), "<", 1.0) for tag, a in high),
        ", ".join(
            f"({tag}) α={a:g}: BF-J/S {q(tag, 'BF-J/S', a):.3g} vs VQS-BF {q(tag, 'VQS-BF', a):.3g} "
            f"(BF-J/S / VQS-BF {interval_text(r(tag, 'BF-J/S', 'VQS-BF', a), '.2f')})"
            for tag, a in high
        ),
    )
