"""Queue-engine speed per policy: the compiled fast path against the Python
reference (a benchmark: prints figures, asserts nothing but bit-identity).

For each policy:
  * the default workload (10k jobs, load 0.9, Weibull shape 0.25, sigma 0.5):
    wall time of the reference and of the fast path, their ratio, and both
    paths' events/s;
  * the same at load 0.99 with 100k jobs;
  * the scaling ratio time(100k@0.9) / time(10k@0.9) of each path: with
    O(log n) per event it stays near 10 (x10 jobs), a per-event loop over the
    jobs present would show up as a ratio far above 12.
Then the kernels' first-call compile time (all kernels, in a fresh process
with an empty numba cache) and their load time from the cache -- what every
later process, a Ray worker say, pays instead.

Each time is the best of --repeat runs, the two paths alternated (fast,
reference, fast, reference, ...) so that both see the same machine load: on a
shared machine compare the ratios of one run, not absolute times across runs.
Every fast run's completion times are checked equal to the reference's.

    python benchmarks/queue_engine.py [--repeat 3] [--seed 1] [--policies PS,PSBS] [--no-compile]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from schedlab.engines.queue.policies import QUEUE_POLICIES
from schedlab.engines.queue.sim import fast as queue_fast
from schedlab.engines.queue.sim.engine import simulate
from schedlab.workloads.synthetic import queue_workload

COMPILE = """
import time
t0, c0 = time.perf_counter(), time.process_time()
import schedlab.engines.queue.sim.fast as q
q.compile_all()
print(time.perf_counter() - t0, time.process_time() - c0)
"""


def timed(policy, arrays, repeat: int) -> tuple[float, float, int]:
    """(best fast time, best reference time, events), alternating the paths."""
    best_fast = best_ref = float("inf")
    events = 0
    for _ in range(repeat):
        started = time.perf_counter()
        fast = queue_fast.simulate(policy.name, *arrays)  # a built-in's name is its kernel's id
        best_fast = min(best_fast, time.perf_counter() - started)
        started = time.perf_counter()
        ref, events = simulate(*arrays, policy)
        best_ref = min(best_ref, time.perf_counter() - started)
        assert fast is not None and fast[0].tolist() == ref.tolist() and fast[1] == events, policy.name
    return best_fast, best_ref, events


def compile_times() -> tuple[tuple[float, float], tuple[float, float]]:
    """((wall, cpu) of compiling every kernel in a fresh process with an empty
    cache, (wall, cpu) of loading them from that cache in another)."""
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache}
        out = []
        for _ in range(2):
            done = subprocess.run([sys.executable, "-c", COMPILE], env=env, capture_output=True, text=True, check=True)
            out.append(tuple(float(x) for x in done.stdout.split()))
        return out[0], out[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--policies", default=",".join(QUEUE_POLICIES), help="comma-separated policy names")
    parser.add_argument("--no-compile", action="store_true", help="skip the compile-time measurement")
    args = parser.parse_args()

    if not args.no_compile:
        (wall, cpu), (load_wall, load_cpu) = compile_times()
        print(
            f"first-call compile of all queue kernels: {wall:.1f} s wall ({cpu:.1f} s CPU), empty cache; "
            f"loading them from the cache: {load_wall:.2f} s"
        )

    def arrays(njobs, load):
        jobs = queue_workload(np.random.default_rng(args.seed), njobs=njobs, load=load)
        return [jobs[c].to_numpy() for c in ("submit", "size", "estimate", "weight")]

    small, large, heavy = arrays(10_000, 0.9), arrays(100_000, 0.9), arrays(100_000, 0.99)
    queue_fast.compile_all()
    print(
        f"\n{'':10s} | {'10k jobs, load 0.9 (the default)':^45s} | {'100k jobs, load 0.99':^45s} | "
        f"{'t(100k)/t(10k)':^15s}"
    )
    print(
        f"{'policy':10s} | {'ref s':>8s} {'fast s':>8s} {'ref/fast':>8s} {'ref ev/s':>9s} {'fast ev/s':>9s} | "
        f"{'ref s':>8s} {'fast s':>8s} {'ref/fast':>8s} {'ref ev/s':>9s} {'fast ev/s':>9s} | "
        f"{'ref':>7s} {'fast':>7s}"
    )
    for name in args.policies.split(","):
        policy = QUEUE_POLICIES[name]
        f_small, r_small, e_small = timed(policy, small, args.repeat)
        f_heavy, r_heavy, e_heavy = timed(policy, heavy, args.repeat)
        f_large, r_large, _ = timed(policy, large, args.repeat)
        print(
            f"{name:10s} | {r_small:8.3f} {f_small:8.4f} {r_small / f_small:8.1f} {e_small / r_small:9.3g} "
            f"{e_small / f_small:9.3g} | {r_heavy:8.3f} {f_heavy:8.4f} {r_heavy / f_heavy:8.1f} "
            f"{e_heavy / r_heavy:9.3g} {e_heavy / f_heavy:9.3g} | {r_large / r_small:7.2f} {f_large / f_small:7.2f}",
            flush=True,
        )
    print("every fast run gave the reference's completion times and event count, to the bit")


if __name__ == "__main__":
    main()
