"""Speed of the batch engine's fast path (schedlab.engines.batch.sim.fast) against the
reference (prints figures; no pass/fail).

FCFS and EASY on the full HPC2N log (202,871 jobs) at 240 processors (model
procs) and on 120 nodes, a node per task (model nodes, processors packed two
per node), each on both engine paths:

* ``sim``: the simulation alone (the summary's ``sim_seconds``: the reference
  event loop with the Python policy, or the compiled kernel), and jobs/s;
* ``run``: the whole ``Engine.run`` (checks, the simulation, every metric);
* the ratio reference / fast of both;
* the first-call compile time of the kernels in a fresh numba cache directory
  (a subprocess with ``NUMBA_CACHE_DIR`` set to a temporary directory), and
  the load time from that cache in a second process.

Every number of both paths' summaries (but the timings) is checked equal
before anything is printed for a configuration.

Usage: python benchmarks/batch_fast.py [--repeat 3]  (best of ``--repeat``)
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

from schedlab.engines import get_engine
from schedlab.workloads.registry import workload_kind

HPC2N = Path(__file__).resolve().parents[2] / "shared" / "data" / "pwa-swf" / "HPC2N-2002-2.2-cln.swf.gz"
ROOT = Path(__file__).resolve().parents[1]


def build(kind_name: str, params: dict, seed: int = 1):
    kind = workload_kind(kind_name)
    p = kind.complete(params, "benchmark")
    kind.check(p)
    shared = kind.load_shared(p) if kind.load_shared else None
    return kind.build(np.random.default_rng(np.random.SeedSequence(seed)), p, shared)


def best_of(repeat: int, fn):
    """(best wall time of fn, best sim_seconds, last result)."""
    wall, sim, out = math.inf, math.inf, None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        wall = min(wall, time.perf_counter() - t)
        sim = min(sim, out.summary["sim_seconds"])
    return wall, sim, out


def same(a, b) -> bool:
    keys = [k for k in a.summary if k not in ("sim_seconds", "bound_seconds")]
    return (
        a.summary.keys() == b.summary.keys()
        and all(
            a.summary[k] == b.summary[k] or (a.summary[k] != a.summary[k] and b.summary[k] != b.summary[k])
            for k in keys
        )
        and all(np.asarray(a.jobs[c]).tolist() == np.asarray(b.jobs[c]).tolist() for c in a.jobs)
    )


def compile_time() -> tuple[float, float]:
    """Seconds to compile every batch kernel in a fresh cache, then to load them from it."""
    code = (
        "import time; t = time.perf_counter(); from schedlab.engines.batch.sim import fast as batch_fast; "
        "batch_fast.compile_all(); "
        "print(time.perf_counter() - t)"
    )
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache, "PYTHONPATH": str(ROOT)}
        out = []
        for _ in range(2):
            res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
            out.append(float(res.stdout.strip()))
    return out[0], out[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    batch = get_engine("batch")

    first, cached = compile_time()
    print(
        f"batch_fast kernels (FCFS, EASY): first-call compile {first:.2f} s in a fresh cache "
        f"(numba import included), load from the cache {cached:.2f} s\n"
    )

    print(f"HPC2N, full log ({HPC2N.name})")
    procs = build("trace", {"reader": "swf", "path": str(HPC2N)})
    nodes = build("trace", {"reader": "swf", "path": str(HPC2N), "cores_per_node": 2})
    print(
        f"  {'':5s} {'machine':28s} {'path':9s} {'sim s':>7s} {'sim jobs/s':>11s} {'run s':>7s} {'run jobs/s':>11s}"
        f" {'non-sim s':>9s}"
    )
    for label, jobs, system in (
        ("240 processors", procs, {"model": "procs", "procs": 240}),
        ("120 nodes, a node per task", nodes, {"model": "nodes", "nodes": 120}),
    ):
        n = jobs.height
        for policy in ("FCFS", "EASY"):
            batch.run(jobs, policy, None, system, path="fast")  # compile or load the kernel
            res = {}
            for path in ("reference", "fast"):
                wall, sim, out = best_of(
                    args.repeat,
                    lambda jobs=jobs, system=system, policy=policy, path=path: batch.run(
                        jobs, policy, None, system, path=path
                    ),
                )
                res[path] = (wall, sim, out)
                print(
                    f"  {policy:5s} {label:28s} {path:9s} {sim:7.3f} {n / sim:11,.0f} {wall:7.3f} {n / wall:11,.0f}"
                    f" {wall - sim:9.3f}",
                    flush=True,
                )
            (rw, rs, ro), (fw, fs, fo) = res["reference"], res["fast"]
            print(
                f"  {policy:5s} {label:28s} {'ratio':9s} {rs / fs:7.1f}x {'':11s} {rw / fw:7.1f}x"
                f"   identical: {same(ro, fo)}",
                flush=True,
            )


if __name__ == "__main__":
    main()
