"""Psychas & Ghaderi Fig. 4 (pg_fig4.toml): claims across both panels."""

from __future__ import annotations

from schedlab.pipelines.common import every, judge, values, xs

METRIC = "queue_jobs_mean"


def _at(data):
    q = {tag: values(t, METRIC) for tag, t in data.tables.items()}
    return (lambda tag, p, a: q[tag](p, intensity=a)), {tag: xs(t, "intensity") for tag, t in data.tables.items()}


def vqs_worse(data, claim):
    q, alphas = _at(data)
    outcome = {
        (tag, a): every(judge(q(tag, "VQS", a), ">", q(tag, other, a)) for other in ("BF-J/S", "VQS-BF"))
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
    q, alphas = _at(data)
    low = [a for a in alphas["a"] if a <= claim.where["intensity"]["<="]]
    if not low:
        return None
    rel = {a: q("a", "VQS-BF", a) / q("a", "BF-J/S", a) for a in low}
    return claim.verdict(
        every(every([judge(v, "<=", 1 + claim.tolerance), judge(v, ">=", 1 - claim.tolerance)]) for v in rel.values()),
        ", ".join(f"α={a:g}: VQS-BF/BF-J/S {v:.2f}" for a, v in rel.items()),
    )


def bfjs_ahead(data, claim):
    q, alphas = _at(data)
    high = [("a", a) for a in alphas["a"] if a > 0.95] + [("b", a) for a in alphas["b"]]
    if not high:
        return None
    return claim.verdict(
        every(judge(q(tag, "BF-J/S", a), "<", q(tag, "VQS-BF", a)) for tag, a in high),
        ", ".join(
            f"({tag}) α={a:g}: BF-J/S {q(tag, 'BF-J/S', a):.3g} vs VQS-BF {q(tag, 'VQS-BF', a):.3g}" for tag, a in high
        ),
    )
