"""The four engines' reference (pure Python) loops, this checkout against
another one (a benchmark: prints figures; it asserts only that both
checkouts compute the same results, to the bit).

Why: issue #37 turned each engine's single-function loop into a steppable
run (``QueueRun``, ``PackingRun``, ``DfrsRun``, ``BatchRun``) and asks that
the loops keep their speed. This times ``simulate`` / ``simulate_packing`` /
``simulate_dfrs`` / ``simulate_batch`` per policy on fixed seeded workloads
(drawn here with numpy, so both checkouts see the same arrays) in two
long-lived worker processes, one importing schedlab from each checkout.

On a loaded, shared machine wall time says little, so each measure is the
worker's process CPU time of one call; the two checkouts are alternated
(before, after, after, before, ...: each goes first half of the time), every
case is run once untimed first (imports, numba's cache), and each case is
repeated ``--repeat`` times. Per policy it prints the median of the paired
ratios after/before, their spread (min..max) and the ratio of the two
checkouts' fastest runs; a ratio whose spread straddles 1 is within noise.
Each pair's results are hashed in the workers and must agree.

    git worktree add --detach ../old <commit>
    python benchmarks/reference_loops.py --before ../old [--after .] [--repeat 7] [--engines queue,packing] [--scale 1]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

QUEUE = ("FIFO", "PS", "GPS", "LAS", "SRPT", "SRPTE", "SRPTE+PS", "SRPTE+LAS", "FSP", "FSPE+LAS", "PSBS")
PACKING = ("FIFO-FF", "BF-J", "BF-S", "BF-J/S", "VQS", "VQS-BF", "Tetris", "Slots-Fair")
DFRS = ("Greedy*/OPT=MIN", "GreedyP*/OPT=AVG", "GreedyPM*/per/OPT=MIN", "MCB8*/OPT=MIN")
BATCH = ("FCFS", "EASY", "SJF+EASY", "F1")
ENGINES = {"queue": QUEUE, "packing": PACKING, "dfrs": DFRS, "batch": BATCH}
#: Jobs per engine at --scale 1: about 0.05-1 s of CPU per reference run.
JOBS = {"queue": 100_000, "packing": 20_000, "dfrs": 300, "batch": 10_000}


def queue_case(name: str, n: int):
    """Load 0.9, Weibull sizes (shape 0.5, mean 1), estimates off by a log-normal factor (sigma 0.5)."""
    rng = np.random.default_rng(1)
    size = rng.weibull(0.5, n) / 2.0  # the mean of Weibull(0.5) is Gamma(3) = 2
    submit = np.cumsum(rng.exponential(1 / 0.9, n))
    estimate = size * rng.lognormal(0.0, 0.5, n)
    from schedlab.engines.queue.policies import QUEUE_POLICIES
    from schedlab.engines.queue.sim.engine import simulate

    def run():
        completion, events = simulate(submit, size, estimate, np.ones(n), QUEUE_POLICIES[name])
        return [completion, np.array([events])]

    return run


def packing_case(name: str, n: int):
    """20 servers at load ~0.9; two resources for Tetris and Slots-Fair, one for the others."""
    rng = np.random.default_rng(2)
    d = 2 if name in ("Tetris", "Slots-Fair") else 1
    servers = 20
    demand = rng.uniform(0.05, 0.6, (n, d))
    duration = np.ceil(rng.exponential(20.0, n))
    rate = 0.9 * servers / (20.5 * 0.325 * (1.5 if d == 2 else 1.0))
    submit = np.floor(np.cumsum(rng.exponential(1 / rate, n)))
    from schedlab.engines.packing.policies import PACKING_POLICIES
    from schedlab.engines.packing.sim.engine import simulate_packing

    def run():
        res = simulate_packing(submit, duration, demand, np.ones((servers, d)), PACKING_POLICIES[name])
        return [res.start, res.server, np.array(sorted(res.summary().items()), dtype=object).astype(str)]

    return run


def dfrs_case(name: str, n: int):
    """A 16-node cluster, parallel jobs of 1-8 tasks, about 1.2x oversubscribed in memory-free CPU terms."""
    rng = np.random.default_rng(3)
    nodes = 16
    release = np.floor(np.cumsum(rng.exponential(60.0, n)))
    processing = np.ceil(rng.exponential(1800.0, n))
    tasks = rng.integers(1, 9, n)
    cpu = rng.choice([0.25, 0.5, 0.75, 1.0], n)
    mem = rng.uniform(0.05, 0.5, n)
    from schedlab.engines.dfrs.policies import DFRS_POLICIES
    from schedlab.engines.dfrs.sim.events import simulate_dfrs

    def run():
        res = simulate_dfrs(release, processing, tasks, cpu, mem, nodes, DFRS_POLICIES[name](), penalty=30.0)
        state = res.state
        return [state.start, state.end, state.vt, np.array([res.events, res.lp_failures])]

    return run


def batch_case(name: str, n: int):
    """A 128-unit machine at load ~0.95, requested times 1-5x the runtimes."""
    rng = np.random.default_rng(4)
    capacity = 128
    need = np.minimum(capacity, np.ceil(2.0 ** rng.uniform(0, 7, n))).astype(np.int64)
    runtime = np.ceil(rng.exponential(3600.0, n))
    requested = runtime * rng.uniform(1.0, 5.0, n)
    mean_work = float(np.mean(need * runtime))
    submit = np.floor(np.cumsum(rng.exponential(mean_work / (0.95 * capacity), n)))
    from schedlab.engines.batch.policies import BATCH_POLICIES
    from schedlab.engines.batch.sim.engine import simulate_batch

    def run():
        res = simulate_batch(submit, runtime, requested, need, capacity, BATCH_POLICIES[name])
        return [res.start, res.end]

    return run


CASES = {"queue": queue_case, "packing": packing_case, "dfrs": dfrs_case, "batch": batch_case}


def digest(arrays) -> str:
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:16]


def worker() -> None:
    """Read "engine<TAB>policy<TAB>jobs" lines, answer "cpu_seconds digest" per line."""
    made: dict[str, object] = {}
    for line in sys.stdin:
        engine, name, jobs = line.rstrip("\n").split("\t")
        key = line
        if key not in made:
            made[key] = CASES[engine](name, int(jobs))
        run = made[key]
        started = time.process_time()
        out = run()  # type: ignore[operator]
        cpu = time.process_time() - started
        print(f"{cpu!r} {digest(out)}", flush=True)


class Worker:
    """A worker process importing schedlab from ``checkout``."""

    def __init__(self, checkout: Path) -> None:
        env = {**os.environ, "PYTHONPATH": str(checkout)}
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            cwd=checkout,
        )

    def time(self, engine: str, name: str, jobs: int) -> tuple[float, str]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"{engine}\t{name}\t{jobs}\n")
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline().split()
        if not answer:
            raise SystemExit(f"the worker for {engine} {name} died (its error is above)")
        return float(answer[0]), answer[1]

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--before", type=Path, help="the checkout to compare with (a git worktree)")
    parser.add_argument("--after", type=Path, help="the checkout measured against it (default: this one)")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies every engine's job count")
    parser.add_argument("--engines", default=",".join(ENGINES))
    parser.add_argument("--policies", default="", help="comma-separated policy names (default: each engine's list)")
    args = parser.parse_args()
    if args.worker:
        worker()
        return
    if args.before is None:
        parser.error("--before is required (a checkout of the commit to compare with)")
    after_dir = args.after.resolve() if args.after else Path(__file__).resolve().parents[1]
    before, after = Worker(args.before.resolve()), Worker(after_dir)
    wanted = set(filter(None, args.policies.split(",")))
    load = os.getloadavg()
    print(f"before {args.before}, after {after_dir}; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    head = ("engine", "policy", "jobs", "before s", "after s", "median", "spread", "min/min")
    print("{:8} {:24} {:>6} {:>9} {:>9} {:>7} {:>13} {:>8}".format(*head))
    try:
        for engine in args.engines.split(","):
            jobs = max(1, round(JOBS[engine] * args.scale))
            for name in ENGINES[engine]:
                if wanted and name not in wanted:
                    continue
                first_b, first_a = before.time(engine, name, jobs), after.time(engine, name, jobs)  # untimed warm-up
                if first_b[1] != first_a[1]:
                    raise SystemExit(f"{engine} {name}: the checkouts' results differ ({first_b[1]} != {first_a[1]})")
                tb: list[float] = []
                ta: list[float] = []
                for r in range(args.repeat):
                    pair = (before, after) if r % 2 == 0 else (after, before)
                    for w in pair:
                        cpu, h = w.time(engine, name, jobs)
                        assert h == first_b[1], (engine, name)
                        (tb if w is before else ta).append(cpu)
                ratios = [a / b for a, b in zip(ta, tb)]
                print(
                    f"{engine:8} {name:24} {jobs:>6} {statistics.median(tb):>9.3f} {statistics.median(ta):>9.3f} "
                    f"{statistics.median(ratios):>7.3f} {min(ratios):>6.3f}..{max(ratios):<6.3f} "
                    f"{min(ta) / min(tb):>8.3f}",
                    flush=True,
                )
    finally:
        before.close()
        after.close()
    load = os.getloadavg()
    print(f"load average at the end {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")


if __name__ == "__main__":
    main()
