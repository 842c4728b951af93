"""The growth table of issue 42: what one driver costs per configuration, and
how much memory it holds, from 10^3 to 10^7 configurations (a benchmark:
prints figures; it also checks that every configuration landed once).

Each size is one sweep of FIFO on ``synthetic`` workloads of 50 jobs, one
replication, no tracking, over a grid of five workload parameters (load,
sigma, shape, timeshape, alpha) whose sizes multiply to the configuration
count. Each runs in a fresh driver process (``--backend``, default
``local`` with ``--cpus 1``: the simulations run in the driver's own
process, so ``wall - simulating`` is exactly the platform's cost), then that
sweep is run again on its complete results dir (the resume skips every
configuration: ``resume``), in a second fresh process. Columns:

* ``plan``: `parse_spec` (which builds and checks the plan) in seconds;
* ``wall``: `run_sweep`'s own wall (results dir, rounds, commits, compaction);
* ``sim``: seconds inside the engine (``SweepReport.sim_seconds``);
* ``platform ms/config``: (plan + wall - sim) / configurations;
* ``cpu ms/config``: the driver process's CPU seconds (start-up, plan and the simulations
  included) / configurations: what load on a shared machine inflates least (``sim`` is wall:
  under load it grows with the wait for a core, so CPU - sim would understate the platform);
* ``peak RSS``: the driver process's peak resident memory (ru_maxrss);
* ``resume``: wall of the second `run_sweep` (plan included: its ``plan`` column
  is the second process's), and its peak RSS.

Each row is printed as soon as its size is done and appended to ``--table``
(JSON lines); run again with the same ``--table`` and the sizes already there
are not run again (a long run killed at 10^7 keeps its rows). The load
average before and after each size is printed with it: the machine is
shared, so read ratios of rows measured at similar load.

The plan is streamed (made from the grid on every pass, never held; its
ids kept, 8 bytes a configuration); what else grows with the sweep is the
done set (8 bytes a key) and, on a resume that grows the manifest, the old
manifest's index (16 bytes a configuration, `manifest.read_lean`). ``benchmarks/plan_scale.py``
measures the driver's own part without simulating (and the resume's skip alone).

    python benchmarks/sweep_scale.py [--max 1e6] [--min 1e3] [--table FILE] [--backend local] [--cpus 1]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: The five workload parameters of the grid and the range each spans.
AXES = {"load": (0.1, 0.8), "sigma": (0.1, 2.0), "shape": (0.2, 0.5), "timeshape": (0.5, 1.0), "alpha": (1.5, 1.0)}


def axis_sizes(n: int) -> list[int]:
    """Five axis lengths whose product is ``n``: its prime factors, largest
    first, each to the shortest axis so far."""
    sizes = [1] * len(AXES)
    factors = []
    rest = n
    for p in (2, 3, 5, 7):
        while rest % p == 0:
            factors.append(p)
            rest //= p
    if rest > 1:
        factors.append(rest)
    for f in sorted(factors, reverse=True):
        sizes[sizes.index(min(sizes))] *= f
    return sizes


def spec_for(n: int, out: Path, backend: str, cpus: int) -> dict:
    workload: dict = {"kind": "synthetic", "njobs": 50}
    for (name, (low, span)), m in zip(AXES.items(), axis_sizes(n), strict=True):
        values = [round(low + span * i / m, 9) for i in range(m)]
        workload[name] = values if m > 1 else values[0]
    return {
        "name": f"scale-{n}",
        "engine": "queue",
        "seed": 1,
        "policies": ["FIFO"],
        "workload": workload,
        "replications": {"n": 1},
        "outputs": {"dir": str(out)},
        "tracking": {"enabled": False},
        "execution": {"backend": backend, "num_cpus": cpus},
    }


def child(config: dict) -> None:
    """One driver: plan, run (or resume), figures as one JSON line."""
    from schedlab.platform.execution.runner import run_sweep
    from schedlab.platform.planning.validate import parse_spec

    t = time.perf_counter()
    spec = parse_spec(config["spec"], "benchmark")
    plan = time.perf_counter() - t
    report = run_sweep(spec, tracking=False)
    usage = resource.getrusage(resource.RUSAGE_SELF)  # before the check reads the rows back
    peak = usage.ru_maxrss / 1024
    cpu = usage.ru_utime + usage.ru_stime  # plan included: the process's CPU, steadier than wall on a shared machine
    import schedlab

    keys = schedlab.load(report.results_dir).select("config_id", "replication").collect()
    print(
        json.dumps(
            {
                "plan": plan,
                "wall": report.wall_seconds,
                "sim": report.sim_seconds,
                "configs": report.configs,
                "written": report.rows_written,
                "skipped": report.rows_skipped,
                "failures": len(report.failures),
                "backend": report.backend,
                "on_disk": keys.height,
                "dup_keys": int(keys.is_duplicated().sum()),
                "peak_mib": peak,
                "cpu": cpu,
                "stages": {k: round(v, 3) for k, v in report.stages.items()},
            }
        )
    )


def run_child(config: dict, timeout: float) -> dict:
    proc = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--child", json.dumps(config)],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if proc.returncode != 0:
        raise SystemExit(f"driver child failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def load() -> str:
    return ", ".join(f"{x:.1f}" for x in os.getloadavg())


HEADER = (
    f"{'configs':>11} {'plan s':>8} {'wall s':>9} {'sim s':>8} {'platform ms/cfg':>16} {'cpu ms/cfg':>11} "
    f"{'peak RSS':>9} "
    f"{'resume s':>9} {'resume RSS':>10} {'backend':>11}  load before / after"
)


def line(row: dict) -> str:
    run, resume = row["run"], row["resume"]
    platform = (run["plan"] + run["wall"] - run["sim"]) / row["configs"] * 1e3
    cpu = f"{run['cpu'] / row['configs'] * 1e3:>11.3f}" if "cpu" in run else f"{'-':>11}"
    return (
        f"{row['configs']:>11,} {run['plan']:>8.1f} {run['wall']:>9.1f} {run['sim']:>8.1f} {platform:>16.3f} {cpu} "
        f"{run['peak_mib'] / 1024:>7.2f}GB {resume['plan'] + resume['wall']:>9.1f} "
        f"{resume['peak_mib'] / 1024:>8.2f}GB {run['backend']:>11}  {row['load_before']} / {row['load_after']}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--min", type=float, default=1e3, help="smallest configuration count (a power of ten)")
    parser.add_argument("--max", type=float, default=1e6, help="largest configuration count (a power of ten)")
    parser.add_argument("--table", type=Path, help="JSON-lines file of finished rows (kept; sizes in it are skipped)")
    parser.add_argument("--backend", default="local", choices=("auto", "local", "ray"))
    parser.add_argument("--cpus", type=int, default=1, help="execution.num_cpus (1: in the driver's process)")
    parser.add_argument("--timeout", type=float, default=6 * 3600, help="seconds a driver may take")
    parser.add_argument("--keep", action="store_true", help="keep the results dirs (under the temp dir printed)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(json.loads(args.child))
        return
    done: dict[int, dict] = {}
    if args.table is not None and args.table.exists():
        for text in args.table.read_text().splitlines():
            if text.strip():
                row = json.loads(text)
                done[row["configs"]] = row
    work = Path(tempfile.mkdtemp(prefix="slscale-"))
    print(
        f"machine: {os.cpu_count()} CPUs, load average {load()}; backend {args.backend}, num_cpus {args.cpus}; "
        f"FIFO, synthetic 50 jobs, 1 replication, no tracking; results under {work}"
    )
    print(HEADER)
    sizes = [10**k for k in range(round(math.log10(args.min)), round(math.log10(args.max)) + 1)]
    try:
        for n in sizes:
            if n in done:
                print(line(done[n]), "(from --table)")
                continue
            out = work / f"n{n}"
            spec = spec_for(n, out, args.backend, args.cpus)
            before = load()
            run = run_child({"spec": spec}, args.timeout)
            resume = run_child({"spec": spec}, args.timeout)
            ok = run["on_disk"] == n and not run["dup_keys"] and not run["failures"] and resume["written"] == 0
            row = {"configs": n, "run": run, "resume": resume, "load_before": before, "load_after": load(), "ok": ok}
            print(line(row), "" if ok else "  CHECK FAILED: rows on disk or resume wrote rows", flush=True)
            if args.table is not None:
                with args.table.open("a") as fh:
                    fh.write(json.dumps(row) + "\n")
            if not args.keep:
                shutil.rmtree(out, ignore_errors=True)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
