"""Replications needed for a 5 % relative half-width, paired vs unpaired.

At the PSBS paper's default workload (10,000 jobs, Weibull shape 0.25, load
0.9, sigma 0.5) each replication r is one instance shared by every policy
(common random numbers, as in a sweep). For PSBS vs FSPE+PS and PSBS vs PS:

* paired: the 95 % t interval of the mean difference d_r = MST_PSBS -
  MST_other (`stats.paired`, what `schedlab compare` and the paired adaptive
  target use);
* unpaired: Welch's 95 % interval of the difference of the two means
  (scipy.stats.ttest_ind(equal_var=False)), i.e. what one gets from the two
  policies' own means and spreads (each policy's marginal distribution is the
  same whether or not instances are shared, so the expected width is that of
  independent draws).

The stopping rule is the adaptive one: the smallest n >= N_MIN at which the
half-width is <= 5 % of |the other policy's mean| (checked at every n). Also
printed: the variance-reduction factor (s_A^2 + s_B^2) / s_d^2 over all runs,
and each design's n predicted from the variances, (t s / (0.05 mean))^2, for
when the sequential rule does not stop within N_MAX.

    python benchmarks/paired_efficiency.py            # 200 replications (~2-3 min on 2 cores)
    python benchmarks/paired_efficiency.py --reps 400 --beta 1   # weighted jobs too
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from scipy import stats

from schedlab.engines import get_engine
from schedlab.platform.statistics.stats import paired
from schedlab.workloads.registry import workload_kind

SEED = 2014
N_MIN = 5
REL = 0.05


def first_n(hw, target, n_max):
    for n in range(N_MIN, n_max + 1):
        h = hw(n)
        if h == h and h <= target:
            return n
    return None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--njobs", type=int, default=10_000)
    ap.add_argument("--beta", type=float, default=0.0, help="weight classes (0: equal weights, the default)")
    args = ap.parse_args()
    engine = get_engine("queue")
    kind = workload_kind("synthetic")
    params = kind.complete(
        {"njobs": args.njobs, "shape": 0.25, "load": 0.9, "sigma": 0.5, "beta": args.beta}, "workload"
    )
    policies = ["PSBS", "FSPE+PS", "PS"]
    mst = {p: [] for p in policies}
    started = time.perf_counter()
    for r in range(args.reps):
        jobs = kind.instance(np.random.default_rng(np.random.SeedSequence([SEED, r])), params, None)
        for p in policies:
            mst[p].append(engine.run(jobs, p).summary["mst"])
    x = {p: np.asarray(v) for p, v in mst.items()}
    print(f"workload: {params}; {args.reps} replications in {time.perf_counter() - started:.0f} s")
    print(f"target: 95 % half-width of the difference <= {REL:.0%} of the other policy's mean; n >= {N_MIN}")
    print(
        f"{'comparison':18s} {'mean diff':>10s} {'other mean':>10s} {'s_d':>9s} {'sqrt(sA2+sB2)':>13s} "
        f"{'VRF':>8s} {'n paired':>9s} {'n unpaired':>11s} {'pred paired':>11s} {'pred unpaired':>13s}"
    )
    for other in ("FSPE+PS", "PS"):
        a, b = x["PSBS"], x[other]
        d = a - b
        target = REL * abs(b.mean())
        n_pair = first_n(lambda n, d=d: paired(d[:n]).halfwidth, target, args.reps)
        n_unpair = first_n(
            lambda n, a=a, b=b: (lambda ci: (ci.high - ci.low) / 2)(
                stats.ttest_ind(a[:n], b[:n], equal_var=False).confidence_interval(0.95)
            ),
            target,
            args.reps,
        )
        s_d = d.std(ddof=1)
        s_u = math.sqrt(a.var(ddof=1) + b.var(ddof=1))
        vrf = (s_u / s_d) ** 2 if s_d > 0 else math.inf

        def pred(s: float, target: float = target) -> int:  # normal approximation, large n
            return math.ceil((1.96 * s / target) ** 2)

        print(
            f"PSBS vs {other:10s} {d.mean():10.4f} {b.mean():10.4f} {s_d:9.4f} {s_u:13.4f} "
            f"{vrf:8.3g} {str(n_pair or f'>{args.reps}'):>9s} {str(n_unpair or f'>{args.reps}'):>11s} "
            f"{max(N_MIN, pred(s_d)):>11d} {pred(s_u):>13d}"
        )
        # the same on the ratio scale (the paired target with ratio = true): paired t on log(A/B) vs the
        # delta-method interval of log(mean A / mean B) from independent means; target log(1.05)
        lr = np.log(a / b)
        tgt = math.log1p(REL)
        n_pr = first_n(lambda n, lr=lr: paired(lr[:n]).halfwidth, tgt, args.reps)
        n_ur = first_n(
            lambda n, a=a, b=b: (
                stats.t.ppf(0.975, n - 1)
                * math.sqrt(a[:n].var(ddof=1) / (n * a[:n].mean() ** 2) + b[:n].var(ddof=1) / (n * b[:n].mean() ** 2))
            ),
            tgt,
            args.reps,
        )
        s_lr = lr.std(ddof=1)
        s_ul = math.sqrt(a.var(ddof=1) / a.mean() ** 2 + b.var(ddof=1) / b.mean() ** 2)
        vrf_r = (s_ul / s_lr) ** 2 if s_lr > 0 else math.inf
        print(
            f"  ratio scale: VRF {vrf_r:.3g}, n paired {n_pr or f'>{args.reps}'}, "
            f"n unpaired {n_ur or f'>{args.reps}'} (predicted {max(N_MIN, math.ceil((1.96 * s_lr / tgt) ** 2))} "
            f"vs {math.ceil((1.96 * s_ul / tgt) ** 2)})"
        )
        if s_d == 0:
            print(
                f"  (PSBS and {other} made the same schedule on every instance: with equal weights PSBS is "
                f"FSPE+PS, so the paired difference is exactly 0)"
            )


if __name__ == "__main__":
    main()
