"""How many rows one driver absorbs, on a real multi-raylet cluster (a
benchmark: prints figures; it also checks that every key landed exactly once).

Starts its own local cluster -- `ray start --head` plus `ray start --address`
on 127.0.0.1, one CPU each, token auth, private temp dir (as
tests/test_platform_cluster.py does) -- and runs, through `schedlab run
--address` semantics (`run_sweep(address=...)` in a driver subprocess),
sweeps of tiny FIFO simulations, so the rows come as fast as the workers can
make them:

* ``summary``: 200-job FIFO runs, summary rows only;
* ``per-job``: 5,000-job FIFO runs with ``per_job = true``.

On this 2-core machine the workers share the cores with the driver, so the
*observed* rate (rows / sweep wall) is bounded by the simulations, not by the
driver. What one driver can absorb is therefore given from the driver's own
cost: its busy time (``SweepReport.stages``: submit, fetch, sink, Parquet
commit -- everything but waiting for results; joining Ray with the first
submission and the end-of-run compaction are one-off costs, shown apart) and
its process CPU time while the rounds ran (``driver_cpu``: its own work and
Ray's threads in it). ``capacity = rows / busy seconds`` is the rate the
driver would sustain if the cluster delivered rows faster than that; it must
be >= 20,000 summary rows/s and >= 2 M per-job rows/s. On a machine that
other work loads, busy *wall* seconds include waiting for a core;
``rows / driver CPU seconds`` is the same capacity for a driver with a core of
its own (a commit without the ``driver_cpu`` timer shows "-").

``--rev REV`` runs the same two sweeps on another commit too (a temporary git
worktree), each right before this checkout's, on the same cluster: read the
ratios, not the absolute figures of a loaded machine. Only the driver's
code differs: the raylets (so the workers) import this checkout.

Driver memory: the peak RSS of the driver process, and (``--plan-configs``)
the RSS of a driver that only builds a plan of that many configurations and
the structures the sweep keeps for it (the keys set, the task sizer).

    python benchmarks/driver_throughput.py [--sims 20000] [--job-sims 600] [--plan-configs 260000] [--rev main]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RAY = str(Path(sys.executable).with_name("ray"))
START_TIMEOUT = 120.0


# ---- the cluster ------------------------------------------------------------------------
def free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _start(args: list[str], env: dict[str, str], log: Path, started: list) -> None:
    with open(log, "w") as fh:
        proc = subprocess.Popen(
            [RAY, "start", *args, "--block"], env=env, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True
        )
    started.append(proc)
    deadline = time.monotonic() + START_TIMEOUT
    while "Ray runtime started" not in log.read_text():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"`ray start {' '.join(args[:2])}` did not come up:\n{log.read_text()[-3000:]}")
        time.sleep(0.25)


@contextlib.contextmanager
def cluster(work: Path):
    """(address, env) of a head raylet and a second raylet on 127.0.0.1."""
    sys.path.append(str(REPO))
    from tests.processes import kill_session

    temp_dir = tempfile.mkdtemp(prefix="sldrv-", dir="/tmp")  # short: Unix socket paths < 108 bytes
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_ADDRESS", "RAY_AUTH_"))}
    env.update(
        RAY_TMPDIR=temp_dir,
        RAY_AUTH_MODE="token",
        RAY_AUTH_TOKEN=secrets.token_hex(32),
        RAY_USAGE_STATS_ENABLED="0",
        PYTHONPATH=str(REPO),
    )
    gcs, client = free_ports(2)
    common = [
        "--num-cpus",
        "1",
        "--temp-dir",
        temp_dir,
        "--object-store-memory",
        str(512 * 2**20),
        "--disable-usage-stats",
    ]
    started: list[subprocess.Popen] = []
    try:
        _start(
            [
                "--head",
                "--port",
                str(gcs),
                "--include-dashboard",
                "false",
                "--ray-client-server-port",
                str(client),
                "--node-ip-address",
                "127.0.0.1",
                *common,
            ],
            env,
            work / "ray-head.log",
            started,
        )
        _start(
            ["--address", f"127.0.0.1:{gcs}", "--node-ip-address", "127.0.0.1", *common],
            env,
            work / "ray-worker2.log",
            started,
        )
        yield f"127.0.0.1:{gcs}", env
    finally:
        for proc in reversed(started):
            kill_session(proc)
        shutil.rmtree(temp_dir, ignore_errors=True)


# ---- the driver (a child process) -------------------------------------------------------
def spec_for(kind: str, sims: int, out: Path) -> dict:
    """FIFO over a load x sigma grid of about ``sims`` points, 1 replication."""
    njobs, per_job = (200, False) if kind == "summary" else (5000, True)
    side = max(1, int(round(sims**0.5)))
    return {
        "name": f"driver-{kind}",
        "engine": "queue",
        "seed": 1,
        "policies": ["FIFO"],
        "workload": {
            "kind": "synthetic",
            "njobs": njobs,
            "load": [round(0.3 + 0.6 * i / side, 6) for i in range(side)],
            "sigma": [round(0.1 + 2.0 * i / side, 6) for i in range(-(-sims // side))],
        },
        "replications": {"n": 1},
        "outputs": {"dir": str(out), "per_job": per_job},
        "tracking": {"enabled": False},
    }


def child(config: dict) -> None:
    import resource

    import schedlab
    from schedlab.platform.execution.runner import run_sweep
    from schedlab.platform.planning.validate import parse_spec

    spec = parse_spec(config["spec"], "benchmark")
    report = run_sweep(spec, address=config["address"], tracking=False)
    usage = resource.getrusage(resource.RUSAGE_SELF)  # before the check below reads every row back
    keys = schedlab.load(report.results_dir).select("config_id", "replication").collect()
    job_rows = dup_jobs = 0
    if spec.outputs.per_job:
        jobs = schedlab.load(report.results_dir, "jobs").select("config_id", "replication", "job_id").collect()
        job_rows, dup_jobs = jobs.height, int(jobs.is_duplicated().sum())
    print(
        json.dumps(
            {
                "wall": report.wall_seconds,
                "rows": report.rows_written,
                "tasks": report.tasks,
                "failures": len(report.failures),
                "stages": report.stages,
                "cpu": usage.ru_utime + usage.ru_stime,
                "maxrss_mib": usage.ru_maxrss / 1024,
                "on_disk": keys.height,
                "dup_keys": int(keys.is_duplicated().sum()),
                "job_rows": job_rows,
                "dup_jobs": dup_jobs,
                "configs": report.configs,
            }
        )
    )


def plan_child(config: dict) -> None:
    """Peak RSS of a driver holding an N-configuration plan and what a sweep keeps for it."""
    import resource

    from schedlab.platform.execution.sizing import TaskSizer
    from schedlab.platform.planning.plan import build_plan
    from schedlab.platform.planning.validate import parse_spec

    spec = parse_spec(config["spec"], "benchmark")
    started = time.perf_counter()
    plan = build_plan(spec)
    instances = plan.instances(range(1))
    work = [(i, list(i.point.configs)) for i in instances]
    sizer = TaskSizer(work)
    keys = {(c.config_id, 0) for c in plan.configs.values()}
    print(
        json.dumps(
            {
                "configs": len(plan.configs),
                "keys": len(keys),
                "queued": len(sizer.queue),
                "seconds": time.perf_counter() - started,
                "maxrss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            }
        )
    )


def run_child(mode: str, config: dict, env: dict[str, str], root: Path = REPO, timeout: float = 3600) -> dict:
    """The driver in a fresh process importing schedlab from ``root``."""
    proc = subprocess.run(
        [sys.executable, str(root / "benchmarks" / "driver_throughput.py"), f"--{mode}", json.dumps(config)],
        env={**env, "PYTHONPATH": str(root)},
        cwd=root,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if proc.returncode != 0:
        raise SystemExit(f"driver child failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def show(kind: str, label: str, r: dict) -> dict[str, float]:
    """Print one sweep's figures; returns its capacities (rows/s of busy wall, of driver CPU)."""
    st = r["stages"]
    busy = sum(st.get(k, 0.0) for k in ("submit", "get", "sink", "commit"))
    rows, job_rows = r["rows"], r["job_rows"]
    ok = (
        r["on_disk"] == r["configs"]
        and not r["dup_keys"]
        and not r["dup_jobs"]
        and not r["failures"]
        and (kind == "summary" or job_rows == 5000 * r["configs"])
    )
    count, what = (rows, "summary rows") if kind == "summary" else (job_rows, "per-job rows")
    cpu = st.get("driver_cpu")
    print(
        f"\n{kind} [{label}]: {rows:,} summary rows, {job_rows:,} per-job rows in {r['tasks']} tasks, "
        f"sweep wall {r['wall']:.1f} s; exactly once: {'yes' if ok else 'NO'} "
        f"({r['on_disk']:,} keys on disk, {r['dup_keys']} duplicated)"
    )
    print(f"  observed (bounded by the 2 cores' simulations): {count / r['wall']:>12,.0f} {what}/s")
    print(
        f"  driver busy {busy:.2f} s (submit {st['submit']:.2f}, fetch {st['get']:.2f}, sink "
        f"{st['sink']:.2f}, commit {st['commit']:.2f}); driver CPU while rounds ran "
        f"{'-' if cpu is None else f'{cpu:.2f} s'}; not counted: joining Ray and the first submission "
        f"{st['backend_start']:.2f} s, end-of-run compaction {st['compact']:.2f} s, "
        f"driver process CPU {r['cpu']:.1f} s"
    )
    by_cpu = count / max(cpu, 1e-9) if cpu is not None else None
    print(
        f"  capacity of one driver: {count / max(busy, 1e-9):>12,.0f} {what}/s of busy time; "
        f"{'-' if by_cpu is None else f'{by_cpu:,.0f}'} {what}/s of driver CPU; "
        f"{r['tasks'] / max(busy, 1e-9):,.0f} tasks/s"
    )
    print(f"  driver peak RSS {r['maxrss_mib']:.0f} MiB")
    return {"busy": count / max(busy, 1e-9), "cpu": by_cpu or float("nan"), "compact": st["compact"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sims", type=int, default=20_000, help="simulations of the summary sweep")
    parser.add_argument("--job-sims", type=int, default=600, help="simulations of the per-job sweep (x 5,000 rows)")
    parser.add_argument("--plan-configs", type=int, default=0, help="also: RSS of a plan of this many configs")
    parser.add_argument("--rev", help="also run on this commit (before), e.g. main")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--plan-child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(json.loads(args.child))
        return
    if args.plan_child:
        plan_child(json.loads(args.plan_child))
        return
    print(f"machine: {os.cpu_count()} CPUs, load average {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    work = Path(tempfile.mkdtemp(prefix="sldrv-work-"))
    roots = {"after": REPO}
    if args.rev:
        scratch = work / "rev"
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "add", "--detach", str(scratch), args.rev],
            check=True,
            capture_output=True,
        )
        roots = {f"before ({args.rev})": scratch, "after": REPO}
    try:
        with cluster(work) as (address, env):
            print(f"cluster: 2 raylets (1 CPU each) at {address}")
            for kind, sims in (("summary", args.sims), ("per-job", args.job_sims)):
                got = {}
                for label, root in roots.items():  # before and after, one right after the other
                    out = work / f"{kind}-{len(got)}"
                    r = run_child("child", {"spec": spec_for(kind, sims, out), "address": address}, env, root)
                    got[label] = show(kind, label, r)
                if len(got) == 2:
                    (b, a) = got.values()
                    print(
                        f"  after / before: capacity x{a['busy'] / b['busy']:.2f} (busy wall), "
                        f"end-of-run compaction {a['compact']:.2f} s vs {b['compact']:.2f} s"
                    )
        if args.plan_configs:
            side = int(round((args.plan_configs / 2) ** 0.5))
            spec = {
                "name": "plan-rss",
                "engine": "queue",
                "seed": 1,
                "policies": ["FIFO", "PS"],
                "workload": {
                    "kind": "synthetic",
                    "njobs": 100,
                    "load": [round(0.1 + 0.8 * i / side, 6) for i in range(side)],
                    "sigma": [round(0.1 + 3.0 * i / side, 6) for i in range(side)],
                },
                "outputs": {"dir": str(work / "plan")},
                "tracking": {"enabled": False},
            }
            r = run_child("plan-child", {"spec": spec}, dict(os.environ))
            print(
                f"\nplan of {r['configs']:,} configurations (+ its keys set and task queue): driver peak RSS "
                f"{r['maxrss_mib']:.0f} MiB, built in {r['seconds']:.1f} s"
            )
    finally:
        if args.rev:
            subprocess.run(
                ["git", "-C", str(REPO), "worktree", "remove", "--force", str(work / "rev")], capture_output=True
            )
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
