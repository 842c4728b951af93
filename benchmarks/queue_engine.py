"""Queue-engine speed, per policy (a benchmark: prints figures, asserts nothing).

For each policy:
  * wall time and events/s on the default workload (10k jobs, load 0.9,
    shape 0.25, sigma 0.5);
  * the same at load 0.99 with 100k jobs;
  * the scaling ratio time(100k) / time(10k) at load 0.9. With O(log n) per
    event it stays near 10 (x10 jobs); a per-event loop over the jobs present
    would show up here as a ratio far above 12.

Each figure is the best of --repeat runs (the machine is shared and noisy;
compare ratios from one run, not absolute times across runs).

    python benchmarks/queue_engine.py [--repeat 3] [--seed 1]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from schedlab.policies.queue import QUEUE_POLICIES
from schedlab.sim.queue import simulate
from schedlab.workloads.synthetic import queue_workload


def best_time(policy, jobs, repeat: int) -> tuple[float, int]:
    arrays = [jobs[c].to_numpy() for c in ("submit", "size", "estimate", "weight")]
    best, events = float("inf"), 0
    for _ in range(repeat):
        started = time.perf_counter()
        _, events = simulate(*arrays, policy)
        best = min(best, time.perf_counter() - started)
    return best, events


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    def workload(njobs, load):
        return queue_workload(np.random.default_rng(args.seed), njobs=njobs, load=load)

    small, large, heavy = workload(10_000, 0.9), workload(100_000, 0.9), workload(100_000, 0.99)
    print(f"{'policy':10s} {'10k@0.9 s':>10s} {'events/s':>10s} {'100k@0.99 s':>12s} {'events/s':>10s} {'t(100k)/t(10k)':>15s}")
    worst = 0.0
    for name, policy in QUEUE_POLICIES.items():
        t_small, e_small = best_time(policy, small, args.repeat)
        t_heavy, e_heavy = best_time(policy, heavy, args.repeat)
        t_large, _ = best_time(policy, large, args.repeat)
        ratio = t_large / t_small
        worst = max(worst, ratio)
        print(f"{name:10s} {t_small:10.3f} {e_small / t_small:10.0f} {t_heavy:12.3f} {e_heavy / t_heavy:10.0f} {ratio:15.2f}")
    print(f"worst scaling ratio {worst:.2f} (target <= 12)")


if __name__ == "__main__":
    main()
