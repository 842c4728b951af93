"""Speed of the batch and DFRS engines (prints figures; no pass/fail).

* FCFS and EASY on the full HPC2N log (202,871 jobs): jobs per second, with
  processors counted (240, the Parallel Workloads Archive convention) and with
  whole nodes per task (120 dual-core nodes, processors packed two per node).
* DFRS algorithms on one 1000-job Lublin trace (the DFRS paper's synthetic
  setting: 512 processors packed four per node onto 128 quad-core nodes,
  memory per task uniform in [0.05, 0.5], offered load 0.7): wall time per
  policy, and the lower bound on the optimal max stretch (max flow, the
  default, and the LP reference, with the ratio of their times).

Usage: python benchmarks/batch_dfrs.py [--repeat 3] [--skip-slow] [--skip-hpc2n]
(--skip-slow leaves out MCB8*/per and /stretch-per, the slowest: MCB8 packs
from scratch at every submission and completion, and MCB8-stretch
binary-searches a packing every period). The DFRS wall times include the
first call's load of the compiled MCB8 kernels (numba, cached on disk).

DFRS on this trace, first speed-up (branch dfrsspeed; schedules bit-identical,
tests/test_dfrs_speed.py), 2 shared cores, load average ~2:
GreedyPM*/per/OPT=MIN/MINVT=600 20.6 s -> 3.9 s, MCB8*/per/OPT=MIN/MINVT=600
~100 s -> 4.4 s, GreedyPM*/stretch-per/OPT=MAX/MINVT=600 > 10 min -> 13.0 s.
Second speed-up (branch dfrs-speed: compiled max-min filling through numpy's
own BLAS, placement bookkeeping, Greedy, allocation input, event look-ahead;
schedules bit-identical), base then branch back to back with --skip-hpc2n,
load average 8 (wall s / CPU s of this process):
GreedyPM*/per 11.1 / 3.01 -> 1.99 / 1.31, MCB8*/per 10.2 / 4.31 -> 6.40 /
3.08, /stretch-per 35.8 / 14.9 -> 25.2 / 12.2 (the bound's code is unchanged
by it). Wall times on a shared machine are inflated by its load: compare CPU
times, or run it on a quiet machine.
Best of ``--repeat`` runs for the batch policies (one run for DFRS).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from schedlab.engines import get_engine
from schedlab.sim.bound.stretch_bound import _BOUND_MEMO, max_stretch_lower_bound
from schedlab.workloads.registry import workload_kind

HPC2N = Path(__file__).resolve().parents[2] / "shared" / "data" / "pwa-swf" / "HPC2N-2002-2.2-cln.swf.gz"
DFRS_POLICIES = [
    "Greedy*/OPT=MIN",
    "GreedyPM*/OPT=MIN",
    "GreedyPM*/per/OPT=MIN/MINVT=600",
    "GreedyPM*/stretch-per/OPT=MAX/MINVT=600",
    "MCB8*/per/OPT=MIN/MINVT=600",
]


def build(kind_name: str, params: dict, seed: int = 1):
    kind = workload_kind(kind_name)
    p = kind.complete(params, "benchmark")
    kind.check(p)
    shared = kind.load_shared(p) if kind.load_shared else None
    return kind.build(np.random.default_rng(np.random.SeedSequence(seed)), p, shared)


def best_of(repeat: int, fn) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip-slow", action="store_true", help="leave out MCB8*/per and /stretch-per")
    ap.add_argument("--skip-hpc2n", action="store_true", help="leave out FCFS and EASY on the full HPC2N log")
    args = ap.parse_args()
    batch = get_engine("batch")

    if not args.skip_hpc2n:
        print(f"HPC2N, full log ({HPC2N.name})")
        procs = build("trace", {"reader": "swf", "path": str(HPC2N)})
        nodes = build("trace", {"reader": "swf", "path": str(HPC2N), "cores_per_node": 2})
        for label, jobs, system in (
            ("240 processors", procs, {"model": "procs", "procs": 240}),
            ("120 nodes, a node per task", nodes, {"model": "nodes", "nodes": 120}),
        ):
            for policy in ("FCFS", "EASY"):
                wall, res = best_of(
                    args.repeat, lambda jobs=jobs, policy=policy, system=system: batch.run(jobs, policy, None, system)
                )
                s = res.summary
                print(
                    f"  {policy:5s} {label:28s} {jobs.height:7d} jobs  {wall:6.2f} s  {jobs.height / wall:9.0f} jobs/s"
                    f"  (utilisation {s['utilisation']:.3f}, underutilization {s['underutilization']:.3f})",
                    flush=True,
                )

    print("\nLublin, 1000 jobs, 128 quad-core nodes, load 0.7, memory U[0.05, 0.5]")
    jobs = build(
        "lublin",
        {
            "njobs": 1000,
            "nodes": 512,
            "load": 0.7,
            "cores_per_node": 4,
            "memory": "uniform",
            "memory_lo": 0.05,
            "memory_hi": 0.5,
        },
    )
    dfrs = get_engine("dfrs")
    policies = [p for p in DFRS_POLICIES if not (args.skip_slow and (p.startswith("MCB8") or "stretch" in p))]
    print(
        f"  (load average at start: {os.getloadavg()[0]:.1f}; cpu = this process's CPU time, steadier than the wall "
        "time on a shared machine)"
    )
    for policy in policies:
        t, c = time.perf_counter(), time.process_time()
        s = dfrs.run(jobs, policy, None, {"nodes": 128}).summary
        wall, cpu = time.perf_counter() - t, time.process_time() - c
        print(
            f"  {policy:42s} {wall:7.2f} s  cpu {cpu:6.2f} s  max stretch {s['stretch_max']:8.3g}  migrations "
            f"{s['migrations']:7.0f}  underutilization {s['underutilization']:.3f}",
            flush=True,
        )
    for policy in ("FCFS", "EASY"):
        t = time.perf_counter()
        s = batch.run(jobs, policy, None, {"model": "nodes", "nodes": 128}).summary
        print(f"  {policy:42s} {time.perf_counter() - t:7.2f} s  max stretch {s['stretch_max']:8.3g}")
    arrays = (
        jobs["submit"].to_numpy(),
        jobs["runtime"].to_numpy(),
        jobs["procs"].to_numpy(),
        jobs["cpu_need"].to_numpy(),
        128.0,
    )
    walls = {}
    for method, label in (
        ("flow", "lower bound (Theorem 1), max flow"),
        ("lp", "lower bound (Theorem 1), LP reference"),
    ):
        _BOUND_MEMO.clear()
        t, c = time.perf_counter(), time.process_time()
        lb = max_stretch_lower_bound(*arrays, method=method)
        walls[method] = time.perf_counter() - t
        print(f"  {label:42s} {walls[method]:7.2f} s  cpu {time.process_time() - c:6.2f} s  bound {lb!r}", flush=True)
    print(
        f"  {'bound speed-up (LP / max flow)':42s} x{walls['lp'] / walls['flow']:.0f}"
        " (the max flow's first call of a process includes loading numba: see benchmarks/stretch_bound.py)"
    )


if __name__ == "__main__":
    main()
