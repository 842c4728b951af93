"""Sweep-platform figures (a benchmark: prints figures, asserts nothing).

(a) Scaling: a 200-configuration sweep (20 workload points x 10 policies x 1
    replication) of ~50 ms simulations -- njobs is calibrated first so that the
    mean simulation of the chosen policies takes ~50 ms -- on local Ray with
    execution.num_cpus = 1 and = 2, each in a fresh process so Ray starts anew.
    Prints the wall time of each and the speedup.
(b) Overhead: the fraction of wall time not spent simulating,
    1 - sum(sim_seconds) / (wall x CPUs), where sum(sim_seconds) is the
    summary's ``sim_seconds`` column (time inside the engine, per simulation)
    and CPUs is execution.num_cpus. Given twice: over the sweep alone (Ray
    already started: the child calls ray.init itself and `run_sweep` reuses it)
    and including Ray's start-up. Python/schedlab import time is in neither.
(c) Driver memory: peak RSS (ru_maxrss of the driver process, which runs in
    its own subprocess; Ray's workers are separate processes) for sweeps that
    write ~250k, ~1M and ~2M per-job rows (outputs.per_job = true). The driver
    commits in batches (runner.FLUSH_JOB_ROWS), so the peak should not grow with
    the number of rows.

MLflow tracking is off throughout (the figures are about Ray + Parquet). Every
child runs with a private RAY_TMPDIR in its own session and is cleaned up by
killing exactly that session's processes. The machine is shared and noisy: the
load average is printed with the figures.

    python benchmarks/sweep_platform.py [--target-ms 50] [--seed 1]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root: tests.processes
from tests.processes import checkout_env, kill_session  # noqa: E402

POLICIES_10 = ["FIFO", "PS", "GPS", "LAS", "SRPT", "SRPTE", "FSP", "FSPE", "FSPE+PS", "PSBS"]
GRID_20 = {"shape": [0.125, 0.25, 0.5, 1.0, 2.0], "sigma": [0.25, 0.5, 1.0, 2.0]}  # 5 x 4 points
MEMORY_POLICIES = ["FIFO", "PS", "SRPT", "SRPTE", "FSPE"]  # cheap ones: (c) is about rows, not simulation


# ---- child: one sweep in this process ----------------------------------------------
def child(config: dict) -> None:
    import resource

    import ray

    from schedlab.platform.execution.runner import run_sweep
    from schedlab.platform.planning.validate import parse_spec

    spec = parse_spec(config["spec"], "benchmark")
    started = time.perf_counter()
    ray.init(
        num_cpus=spec.execution.num_cpus,
        include_dashboard=False,
        log_to_driver=False,
        address="local",
        logging_level="ERROR",
    )
    ray_start = time.perf_counter() - started
    report = run_sweep(spec, tracking=False)
    import polars as pl

    import schedlab

    sim_sum = schedlab.load(report.results_dir).select(pl.col("sim_seconds").sum()).collect().item()
    job_rows = (
        schedlab.load(report.results_dir, "jobs").select(pl.len()).collect().item() if spec.outputs.per_job else 0
    )
    print(
        json.dumps(
            {
                "ray_start": ray_start,
                "wall": report.wall_seconds,
                "rows": report.rows_written,
                "tasks": report.tasks,
                "failures": len(report.failures),
                "sim_sum": sim_sum,
                "job_rows": job_rows,
                "maxrss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            }
        )
    )


# ---- parent -------------------------------------------------------------------------
def run_child(spec: dict, timeout: float = 900) -> dict:
    """One sweep in a fresh Python process (fresh Ray), private RAY_TMPDIR."""
    ray_tmp = tempfile.mkdtemp(prefix="slbench-", dir="/tmp")
    env = checkout_env({k: v for k, v in os.environ.items() if not k.startswith("RAY_ADDRESS")})
    env.update(RAY_TMPDIR=ray_tmp, RAY_USAGE_STATS_ENABLED="0")
    proc = subprocess.Popen(
        [sys.executable, __file__, "--child", json.dumps({"spec": spec})],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        kill_session(proc)
        shutil.rmtree(ray_tmp, ignore_errors=True)
    if proc.returncode != 0:
        raise SystemExit(f"benchmark child failed ({proc.returncode}):\n{err[-3000:]}")
    return json.loads(out.strip().splitlines()[-1])


def sweep_spec(name: str, out_dir: Path, *, policies, workload, n=1, per_job=False, num_cpus=None) -> dict:
    return {
        "name": name,
        "engine": "queue",
        "seed": 1,
        "policies": policies,
        "workload": {"kind": "synthetic", **workload},
        "replications": {"n": n},
        "outputs": {"dir": str(out_dir / name), "per_job": per_job},
        "tracking": {"enabled": False},
        "execution": {"num_cpus": num_cpus} if num_cpus else {},
    }


def calibrate(target: float, seed: int) -> tuple[int, float]:
    """njobs at which the mean simulation of POLICIES_10 over GRID_20's corner
    points takes ``target`` seconds (engine time, as in sim_seconds)."""
    import numpy as np

    from schedlab.engines import get_engine
    from schedlab.workloads.synthetic import queue_workload

    engine = get_engine("queue")

    def mean_sim(njobs: int) -> float:
        times = []
        for shape in (min(GRID_20["shape"]), max(GRID_20["shape"])):
            for sigma in (min(GRID_20["sigma"]), max(GRID_20["sigma"])):
                jobs = queue_workload(np.random.default_rng(seed), njobs=njobs, shape=shape, sigma=sigma)
                times += [engine.run(jobs, p).summary["sim_seconds"] for p in POLICIES_10]
        return sum(times) / len(times)

    mean_sim(2000)  # warm-up (imports, caches)
    njobs = 5000
    for _ in range(3):  # time is about linear in njobs
        t = mean_sim(njobs)
        njobs = max(500, int(round(njobs * target / t, -2)))
    return njobs, mean_sim(njobs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target-ms", type=float, default=50.0, help="mean simulation time to calibrate to")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(json.loads(args.child))
        return

    print(f"machine: {os.cpu_count()} CPUs, load average {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    out = Path(tempfile.mkdtemp(prefix="slbench-results-"))
    try:
        njobs, per_sim = calibrate(args.target_ms / 1000, args.seed)
        print(
            f"calibration: njobs = {njobs} -> mean simulation {per_sim * 1000:.1f} ms over {len(POLICIES_10)} policies"
        )

        # (a) + (b)
        print(
            f"\n(a) 200 configurations = {len(GRID_20['shape']) * len(GRID_20['sigma'])} workload points x "
            f"{len(POLICIES_10)} policies x 1 replication, local Ray, fresh process per run"
        )
        results = {}
        for cpus in (1, 2):
            spec = sweep_spec(
                f"scale-{cpus}cpu", out, policies=POLICIES_10, workload={"njobs": njobs, **GRID_20}, num_cpus=cpus
            )
            r = results[cpus] = run_child(spec)
            if r["rows"] != 200 or r["failures"]:
                print(f"  warning: {r['rows']} rows written, {r['failures']} failures (expected 200, 0)")
            print(
                f"  num_cpus={cpus}: sweep wall {r['wall']:6.2f} s  (+ Ray start-up {r['ray_start']:.2f} s), "
                f"{r['tasks']} tasks, sum(sim_seconds) {r['sim_sum']:.2f} s"
            )
        one, two = results[1], results[2]
        print(
            f"  speedup 1 -> 2 CPUs: {one['wall'] / two['wall']:.2f}x on sweep wall; "
            f"{(one['wall'] + one['ray_start']) / (two['wall'] + two['ray_start']):.2f}x including Ray start-up"
        )

        print("\n(b) fraction of wall time outside simulations = 1 - sum(sim_seconds) / (wall x CPUs)")
        for cpus, r in results.items():
            excl = 1 - r["sim_sum"] / (r["wall"] * cpus)
            incl = 1 - r["sim_sum"] / ((r["wall"] + r["ray_start"]) * cpus)
            print(
                f"  num_cpus={cpus}: {excl:6.1%} of the sweep (Ray already up); "
                f"{incl:6.1%} counting Ray start-up ({r['ray_start']:.2f} s)"
            )

        # (c)
        print("\n(c) driver peak RSS (ru_maxrss of the driver process) vs per-job rows written (per_job = true)")
        for label, reps in (("~250k", 5), ("~1M", 20), ("~2M", 40)):
            spec = sweep_spec(
                f"memory-{reps}", out, policies=MEMORY_POLICIES, workload={"njobs": 10_000}, n=reps, per_job=True
            )
            r = run_child(spec)
            print(
                f"  {label:>5s}: {r['job_rows']:>9,d} per-job rows, {r['rows']:3d} summary rows -> driver peak RSS "
                f"{r['maxrss_mib']:7.1f} MiB (sweep wall {r['wall']:.1f} s)"
            )
    finally:
        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
