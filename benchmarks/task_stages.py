"""Where a sweep task's CPU goes, per configuration (a benchmark: prints
figures, asserts nothing).

The configurations are `sweep_scale.py`'s (FIFO on 50-job ``synthetic``
workloads, one replication, a grid of five workload parameters), planned
once; ``--configs`` of them are run by `run_instances` (rows encoded as
Parquet parts, as a sweep's task does) in tasks of ``--task`` instances,
after a warm-up task. Printed per configuration: the process's CPU over
those calls (``time.process_time``: steadier than wall on a shared machine),
and the task's own stage timers (wall; `tasks.STAGES`).

``--before REV`` runs the same measurement on git revision REV too (a
temporary detached worktree, first on PYTHONPATH), the two codes
alternated ``--repeat`` times in fresh processes, so both see the same
machine load; the ratio of CPU a configuration is printed.

    python benchmarks/task_stages.py [--configs 20000] [--task 500] [--before REV] [--repeat 2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))


def child(configs: int, task: int) -> None:
    from sweep_scale import spec_for

    from schedlab.platform.execution.tasks import run_instances
    from schedlab.platform.planning.plan import plan_of
    from schedlab.platform.planning.validate import parse_spec

    plan = plan_of(parse_spec(spec_for(configs, Path(tempfile.gettempdir()) / "unused", "local", 1), "benchmark"))
    work = [(instance, list(instance.point.configs)) for instance in plan.each_instance([0])]
    run_instances("queue", work[:task], None, False, encode=True)  # imports, kernels loaded
    stages: dict[str, float] = {}
    started = time.process_time()
    for at in range(0, len(work), task):
        result = run_instances("queue", work[at : at + task], None, False, encode=True)
        for name, seconds in result.stages.items():
            stages[name] = stages.get(name, 0.0) + seconds
    cpu = time.process_time() - started
    print(json.dumps({"cpu_us": cpu / len(work) * 1e6, **{k: v / len(work) * 1e6 for k, v in stages.items()}}))


def measure(root: Path, configs: int, task: int) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--child", str(configs), str(task)],
        env={**os.environ, "PYTHONPATH": str(root)},
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    figures: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return figures


def line(label: str, figures: dict[str, float]) -> str:
    stages = "  ".join(f"{k} {v:6.1f}" for k, v in figures.items() if k != "cpu_us")
    return f"{label:>8}  CPU {figures['cpu_us']:6.1f} us/config   stages (wall, us/config): {stages}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--configs", type=int, default=20_000)
    parser.add_argument("--task", type=int, default=500, help="instances per run_instances call")
    parser.add_argument("--before", help="also measure this git revision, alternated")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--child", nargs=2, type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    print(f"load average {os.getloadavg()[0]:.1f}; {args.configs:,} configurations, tasks of {args.task}")
    before = None
    if args.before:
        before = Path(tempfile.mkdtemp(prefix="slstages-")) / "before"
        subprocess.run(["git", "worktree", "add", "-q", "--detach", str(before), args.before], cwd=REPO, check=True)
    try:
        ratios = []
        for _ in range(args.repeat):
            now = measure(REPO, args.configs, args.task)
            if before is not None:
                then = measure(before, args.configs, args.task)
                print(line("before", then))
                ratios.append(then["cpu_us"] / now["cpu_us"])
            print(line("now", now))
        if ratios:
            print("CPU a configuration, before / now: " + ", ".join(f"{r:.2f}x" for r in ratios))
        print(f"load average {os.getloadavg()[0]:.1f}")
    finally:
        if before is not None:
            subprocess.run(["git", "worktree", "remove", "--force", str(before)], cwd=REPO, check=False)


if __name__ == "__main__":
    main()
