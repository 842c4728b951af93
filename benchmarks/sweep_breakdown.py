"""Where a sweep's time goes, per simulation, before and after (a benchmark:
prints figures, asserts nothing).

Two sweeps, each on local Ray with ``--cpus`` CPUs started by the benchmark,
tracking off:

* ``default``: sweeps/psbs-shape.toml (6 policies x 6 shapes x 5
  replications = 180 simulations of 10k jobs), on the compiled engines
  (``engine_path = "fast"``) and on the Python reference (``"reference"``);
* ``small``: 600 small configurations -- FIFO and PS over 300 grid points of
  load x shape x sigma, 200 jobs, 1 replication.

Each runs twice in one fresh process: *cold* (the first sweep after
``ray.init``: workers import schedlab and load the compiled kernels) and
*warm* (the same sweep again into a new results dir: Ray and its workers
already started -- the issue's "Ray already started"). The stages come from the
cheap timers the platform keeps anyway (`SweepReport.stages`,
`TaskResult.stages`, ``sim_seconds``), in core-milliseconds per simulation:

    plan              build_plan + manifest + done keys (driver)
    workload build    drawing / reading instances (workers)
    worker warm-up    a policy's first call in a worker: imports, kernel loading
    engine            inside the engines (sum of sim_seconds)
    metrics           the rest of each engine call (adapter, summary metrics)
    rows + encoding   row dicts, keyed tables, Parquet encoding (workers)
    Ray + idle        wall x CPUs minus every timed stage: scheduling, transfer,
                      worker dispatch, cores idle (e.g. a straggler at the end)
    Parquet commit    writing and renaming the parts + end-of-run compaction (driver)
    driver other      submit, fetch, sink (driver)
    tracking          MLflow hand-off (0 here: tracking off)

``platform`` = everything but the engine = (wall x CPUs - engine) / simulations.
``--rev REV`` runs the same sweeps on another commit too (a temporary git
worktree; an older commit has no stage timers, so only its totals show). Its
*cold* column may include compiling the kernels (numba's cache is per source
location): compare the *warm* columns.

    python benchmarks/sweep_breakdown.py [--rev main] [--cpus 2] [--only default-fast,small]
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

REPO = Path(__file__).resolve().parents[1]

SMALL = {
    "name": "small-600",
    "engine": "queue",
    "seed": 1,
    "policies": ["FIFO", "PS"],
    "workload": {
        "kind": "synthetic",
        "njobs": 200,
        "load": [0.5, 0.6, 0.7, 0.8, 0.9],
        "shape": [0.25, 0.5, 1.0, 2.0, 4.0, 8.0],
        "sigma": [0.1, 0.2, 0.3, 0.5, 0.7, 1.0, 1.5, 2.0, 3.0, 4.0],
    },  # 5 x 6 x 10 = 300 points
    "replications": {"n": 1},
}
SWEEPS = {
    "default-fast": ("default", "fast"),
    "default-reference": ("default", "reference"),
    "small": ("small", "fast"),
}
ROWS = [
    ("plan", ("plan", "prepare")),
    ("workload build", ("task_build",)),
    ("worker warm-up", ("task_warmup",)),
    ("engine", ("task_engine",)),
    ("metrics", ("task_engine_other",)),
    ("rows + encoding", ("task_rows", "task_encode")),
    ("Parquet commit", ("commit", "compact")),
    ("driver other", ("submit", "sink")),
    ("tracking", ("tracking",)),
]


# ---- child: one sweep, cold then warm, in this process -------------------------------
def child(config: dict) -> None:
    import resource

    import ray

    from schedlab.platform.execution.runner import run_sweep
    from schedlab.platform.planning.validate import load_spec, parse_spec

    out = Path(config["out"])
    if config["sweep"] == "small":
        spec = parse_spec({**SMALL, "outputs": {"dir": str(out / "cold")}, "tracking": {"enabled": False}}, "bench")
    else:
        spec = load_spec(REPO / "sweeps" / "psbs-shape.toml")
    spec = spec.model_copy(
        update={
            "execution": spec.execution.model_copy(update={"engine_path": config["path"]}),
            "tracking": spec.tracking.model_copy(update={"enabled": False}),
        }
    )
    ray.init(
        num_cpus=config["cpus"], include_dashboard=False, log_to_driver=False, address="local", logging_level="ERROR"
    )
    runs = {}
    for label in ("cold", "warm"):
        run_spec = spec.model_copy(update={"outputs": spec.outputs.model_copy(update={"dir": str(out / label)})})
        started = time.perf_counter()
        report = run_sweep(run_spec, tracking=False)
        wall = time.perf_counter() - started
        runs[label] = {
            "wall": wall,
            "sims": report.rows_written,
            "engine": report.sim_seconds,
            "tasks": report.tasks,
            "failures": len(report.failures),
            "stages": dict(getattr(report, "stages", {}) or {}),
        }
    runs["maxrss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(runs))


def run_child(root: Path, sweep: str, path: str, cpus: int, timeout: float = 1800) -> dict:
    """The sweep in a fresh process importing schedlab from ``root`` (this
    checkout or the --rev worktree), private RAY_TMPDIR, own session."""
    sys.path.append(str(REPO))  # tests.processes (parent only: a child must import schedlab from ``root``)
    from tests.processes import kill_session

    ray_tmp = tempfile.mkdtemp(prefix="slbreak-", dir="/tmp")
    out = tempfile.mkdtemp(prefix="slbreak-out-")
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_ADDRESS")}
    env.update(RAY_TMPDIR=ray_tmp, RAY_USAGE_STATS_ENABLED="0", PYTHONPATH=str(root))
    config = {"sweep": sweep, "path": path, "cpus": cpus, "out": out}
    proc = subprocess.Popen(
        [sys.executable, __file__, "--child", json.dumps(config)],
        env=env,
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    finally:
        kill_session(proc)
        shutil.rmtree(ray_tmp, ignore_errors=True)
        shutil.rmtree(out, ignore_errors=True)
    if proc.returncode != 0:
        raise SystemExit(f"benchmark child ({sweep}, {path}, {root}) failed ({proc.returncode}):\n{stderr[-3000:]}")
    return json.loads(stdout.strip().splitlines()[-1])


def breakdown(run: dict, cpus: int) -> dict[str, float]:
    """Core-ms per simulation by stage (empty stages when the commit has no timers)."""
    sims = max(run["sims"], 1)
    core = run["wall"] * cpus
    st = run["stages"]
    out = {
        "wall (s)": run["wall"],
        "tasks": run["tasks"],
        "engine share": run["engine"] / core,
        "platform (ms/sim)": (core - run["engine"]) * 1000 / sims,
    }
    if st:
        timed = 0.0
        for name, keys in ROWS:
            v = sum(st.get(k, 0.0) for k in keys)
            timed += v
            out[name] = v * 1000 / sims
        out["Ray + idle"] = (core - timed) * 1000 / sims
    else:
        out["engine"] = run["engine"] * 1000 / sims
    return out


def show(title: str, columns: dict[str, dict[str, float]]) -> None:
    names = list(columns)
    print(f"\n{title}  (core-ms per simulation unless said)")
    print(f"  {'stage':20s}" + "".join(f"{n:>16s}" for n in names))
    keys = ["wall (s)", "tasks", "engine share", "platform (ms/sim)", *[n for n, _ in ROWS], "Ray + idle"]
    for k in keys:
        cells = []
        for n in names:
            v = columns[n].get(k)
            if v is None:
                cells.append(f"{'-':>16s}")
            elif k == "engine share":
                cells.append(f"{v:>15.1%} ")
            elif k == "tasks":
                cells.append(f"{v:>16.0f}")
            else:
                cells.append(f"{v:>16.2f}")
        print(f"  {k:20s}" + "".join(cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rev", help="also run on this commit (before), e.g. main")
    parser.add_argument("--cpus", type=int, default=2)
    parser.add_argument("--only", default=",".join(SWEEPS), help=f"comma-separated subset of {', '.join(SWEEPS)}")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(json.loads(args.child))
        return
    roots = {"after": REPO}
    scratch = None
    if args.rev:
        scratch = Path(tempfile.mkdtemp(prefix="slbreak-rev-")) / "tree"
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "add", "--detach", str(scratch), args.rev],
            check=True,
            capture_output=True,
        )
        roots = {f"before ({args.rev})": scratch, "after": REPO}
    print(
        f"machine: {os.cpu_count()} CPUs (sweeps use {args.cpus}), load average "
        f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}; cache {os.environ.get('SCHEDLAB_CACHE_DIR', '(default)')}"
    )
    try:
        for name in args.only.split(","):
            sweep, path = SWEEPS[name]
            columns = {}
            rss = {}
            for label, root in roots.items():  # before and after, one right after the other
                runs = run_child(root, sweep, path, args.cpus)
                for when in ("cold", "warm"):
                    columns[f"{label.split(' ')[0]} {when}"] = breakdown(runs[when], args.cpus)
                rss[label] = runs["maxrss_mib"]
                sims = runs["warm"]["sims"]
            show(f"{name}: {sims} simulations, engine_path = {path!r}", columns)
            print("  driver peak RSS: " + ", ".join(f"{k} {v:.0f} MiB" for k, v in rss.items()))
    finally:
        if scratch is not None:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(scratch)], capture_output=True)
            shutil.rmtree(scratch.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
