"""PSBS Fig. 10 (psbs_pareto.toml): claims over both alphas and the mean over sigma."""

from __future__ import annotations

from schedlab.pipelines.common import emin, every, judge, values, xs

ALPHAS = [2.0, 1.0]  # the panels' order: growing skew


def closer_to_optimal(data, claim):
    r, sigmas = values(data.table), xs(data.table, "sigma")
    near = [
        judge(
            r("PSBS", alpha=1.0, sigma=sg),
            "<=",
            (1 + claim.tolerance) * emin([r("SRPTE", alpha=1.0, sigma=sg), r("FSPE", alpha=1.0, sigma=sg)]),
        )
        for sg in sigmas
    ]
    mean = {p: sum(r(p, alpha=1.0, sigma=sg) for sg in sigmas) / len(sigmas) for p in ("PSBS", "SRPTE", "FSPE")}
    return claim.verdict(
        every([*near, judge(mean["PSBS"], "<", emin([mean["SRPTE"], mean["FSPE"]]))]),
        "mean over sigma: "
        + ", ".join(f"{p} {v:.2f}" for p, v in mean.items())
        + "; "
        + "; ".join(
            f"sigma {sg:g}: PSBS {r('PSBS', alpha=1.0, sigma=sg):.2f}, SRPTE {r('SRPTE', alpha=1.0, sigma=sg):.2f}, "
            f"FSPE {r('FSPE', alpha=1.0, sigma=sg):.2f}"
            for sg in sigmas
        ),
    )


def beats_ps(data, claim):
    r = values(data.table)
    low = [sg for sg in xs(data.table, "sigma") if sg < claim.where["sigma"]["<"]]
    q = lambda a, sg: r("PSBS", alpha=a, sigma=sg) / r("PS", alpha=a, sigma=sg)  # noqa: E731
    outcome = {
        (a, sg): judge(r("PSBS", alpha=a, sigma=sg), "<", r("PS", alpha=a, sigma=sg)) for a in ALPHAS for sg in low
    }
    bad = [cell for cell, o in outcome.items() if o != "holds"]
    return claim.verdict(
        every(outcome.values()),
        "PSBS/PS: "
        + ", ".join(f"alpha {a:g}: {min(q(a, sg) for sg in low):.2f}–{max(q(a, sg) for sg in low):.2f}" for a in ALPHAS)
        + (f"; not shown by the intervals at (alpha, sigma) {bad}" if bad else ""),
    )
