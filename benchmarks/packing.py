"""Packing-engine speed: tasks/s per policy (a benchmark: prints figures,
asserts nothing).

* the Google clusterdata-2011 prefix (292k completed tasks, max(cpu, mem) as
  one resource), 1000 servers of capacity 1, decisions every 100 ms, at
  traffic scaling 1 and 1.6 (arrival times x 1 and x 0.625);
* the Fig. 4 setting: 5 servers, demands uniform in [0.01, 0.19] and
  [0.1, 0.9], geometric service of mean 100 slots, intensity 0.95.

For the policies with a compiled fast path (``schedlab.engines.packing.sim.fast``:
FIFO-FF, BF-J, BF-S, BF-J/S, VQS, VQS-BF) it prints reference vs fast tasks/s, the ratio,
``Engine.run``'s wall time beside the summary's ``sim_seconds`` (the work
around the kernel) and whether the two paths gave the same numbers; and the
kernel's first-call compile time (a subprocess with a fresh
``NUMBA_CACHE_DIR``) and its load time from that cache.

The multi-resource policies with a kernel (``schedlab.engines.packing.sim.multi_fast``:
Tetris, Slots-Fair) run on the same prefix as the Tetris pipelines see it:
cpu and mem, tasks grouped into jobs (``group_column = "google_job_id"``),
the same 1000 servers and Δ; ``--multi-tasks N`` keeps the first N tasks
(the reference packs a few thousand tasks/s there).

    python benchmarks/packing.py [--data ../shared/data] [--slots 200000] [--no-reference]
                                 [--policies VQS,VQS-BF,Tetris] [--no-compile-time] [--multi-tasks 60000]
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from schedlab.engines import ENGINE_PATHS, get_engine
from schedlab.workloads.registry import workload_kind

POLICIES = ("BF-J/S", "VQS-BF", "FIFO-FF", "VQS")
#: Policies with a compiled fast path.
FAST = ("BF-J/S", "FIFO-FF", "BF-J", "BF-S", "VQS", "VQS-BF")
#: Multi-resource policies with a compiled fast path (run on cpu, mem and groups).
MULTI = ("Tetris", "Slots-Fair")


def bench(jobs, system, label, policies=POLICIES):
    engine = get_engine("packing")
    for policy in policies:
        started = time.perf_counter()
        result = engine.run(jobs, policy, {}, system)
        wall = time.perf_counter() - started
        print(
            f"{label:34s} {policy:8s} {jobs.height:9d} tasks {wall:7.2f} s {jobs.height / wall:10.0f} tasks/s"
            f"   mean queue {result.summary['queue_jobs_mean']:10.2f}"
        )


def _same(a, b) -> bool:
    for k in a.jobs:
        if np.asarray(a.jobs[k]).tobytes() != np.asarray(b.jobs[k]).tobytes():
            return False
    key = lambda v: "nan" if isinstance(v, float) and math.isnan(v) else v  # noqa: E731
    sa = {k: key(v) for k, v in a.summary.items() if k != "sim_seconds"}
    sb = {k: key(v) for k, v in b.summary.items() if k != "sim_seconds"}
    series = a.series is None or all(a.series[k].tobytes() == b.series[k].tobytes() for k in a.series)
    return sa == sb and series


def compare(jobs, system, label, reference=True, policies=FAST):
    """Reference vs fast path, per policy with a kernel (one run each)."""
    engine = get_engine("packing")
    for policy in policies:
        engine.run(jobs.head(10), policy, {}, system, path="fast")  # compile or load the kernels first
    for policy in policies:
        runs, walls = {}, {}
        for path in ENGINE_PATHS if reference else ("fast",):
            started = time.perf_counter()
            runs[path] = engine.run(jobs, policy, {}, system, path=path)
            walls[path] = time.perf_counter() - started
        fast = runs["fast"]
        line = (
            f"{label:34s} {policy:8s} {jobs.height:9d} tasks  fast {jobs.height / walls['fast']:10.0f} tasks/s "
            f"(run {walls['fast']:6.3f} s, sim {fast.summary['sim_seconds']:6.3f} s)"
        )
        if reference:
            same = "same numbers" if _same(runs["reference"], fast) else "DIFFERENT NUMBERS"
            line += (
                f"  reference {jobs.height / walls['reference']:9.0f} tasks/s"
                f"  x{walls['reference'] / walls['fast']:6.1f}  {same}"
            )
        print(line)


def compile_time() -> None:
    """First call in a fresh process with an empty NUMBA_CACHE_DIR, then a
    second process loading from that cache."""
    for module in ("packing_fast", "packing_multi_fast"):
        code = (
            "import time; t = time.perf_counter()\n"
            f"from schedlab.sim import {module}\n"
            f"t1 = time.perf_counter(); {module}.warm(); t2 = time.perf_counter()\n"
            "print(f'{t1 - t:.2f} {t2 - t1:.2f}')\n"
        )
        with tempfile.TemporaryDirectory() as cache:
            env = {**os.environ, "NUMBA_CACHE_DIR": cache}
            for label in ("first call, empty cache", "next process, from cache"):
                out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
                imp, warm = out.stdout.split()
                print(f"{module:18s} {label:26s}: import {imp} s, compile/load {warm} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    parser.add_argument("--slots", type=int, default=200_000)
    parser.add_argument("--no-reference", action="store_true", help="fast path only (the reference takes minutes)")
    parser.add_argument(
        "--policies",
        default=None,
        help="comma-separated policies to time (default: all; those without a kernel are only timed)",
    )
    parser.add_argument("--no-compile-time", action="store_true", help="skip the compile/load timing subprocesses")
    parser.add_argument(
        "--multi-tasks",
        type=int,
        default=0,
        help="Tetris / Slots-Fair: the first N tasks of the prefix (default 0: all)",
    )
    args = parser.parse_args()
    chosen = None if args.policies is None else [p.strip() for p in args.policies.split(",") if p.strip()]
    fast = FAST if chosen is None else tuple(p for p in chosen if p in FAST)
    multi = MULTI if chosen is None else tuple(p for p in chosen if p in MULTI)
    timed = POLICIES if chosen is None else tuple(p for p in chosen if p not in FAST + MULTI)

    if not args.no_compile_time:
        compile_time()

    google = Path(args.data) / "google-clusterdata-2011"
    if google.exists():
        kind = workload_kind("trace")
        for beta, label in ((1.0, "Google prefix, traffic x1.0"), (0.625, "Google prefix, traffic x1.6")):
            params = kind.complete(
                {"reader": "google", "path": str(google), "reader_single_resource": True, "traffic": beta}, "workload"
            )
            jobs = kind.build(np.random.default_rng(0), params, kind.load_shared(params))
            system = {"servers": 1000, "capacity": 1.0, "epoch": 0.1, "sample_every": 0.0}
            compare(jobs, system, label, reference=not args.no_reference, policies=fast)
            bench(jobs, system, label, timed)
            if multi:
                params = kind.complete(
                    {"reader": "google", "path": str(google), "group_column": "google_job_id", "traffic": beta},
                    "workload",
                )
                jobs = kind.build(np.random.default_rng(0), params, kind.load_shared(params))
                if args.multi_tasks:
                    jobs = jobs.head(args.multi_tasks)
                compare(jobs, system, label + ", cpu+mem, jobs", reference=not args.no_reference, policies=multi)
    kind = workload_kind("packing")
    for lo, hi in ((0.01, 0.19), (0.1, 0.9)):
        params = kind.complete(
            {"slots": args.slots, "uniform_lo": lo, "uniform_hi": hi, "intensity": 0.95, "intensity_servers": 5},
            "workload",
        )
        jobs = kind.build(np.random.default_rng(1), params, None)
        system = {"servers": 5, "capacity": 1.0, "epoch": 1.0, "sample_every": 0.0}
        compare(jobs, system, f"Fig. 4, U[{lo}, {hi}], alpha 0.95", reference=not args.no_reference, policies=fast)
        bench(jobs, system, f"Fig. 4, U[{lo}, {hi}], alpha 0.95", timed)


if __name__ == "__main__":
    main()
