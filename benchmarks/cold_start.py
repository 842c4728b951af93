"""A first run on a machine: sweeps on an empty kernel cache against a warm
one (issue 41, part 4; a benchmark: prints figures against the targets,
asserts nothing).

Every figure is a whole `schedlab run` of this checkout (`checkout_env`) as a
subprocess from a fresh folder, timed from outside (wall seconds: what the
user waits), with the summary line's own wall and simulating seconds beside
it. *Cold*: ``NUMBA_CACHE_DIR`` (`schedlab.sim.common.jit`) points at a new
empty folder, as on a fresh install; *warm*: at a folder whose kernels were
compiled once, untimed, before the runs. Cold and warm runs alternate (the
machine is shared: its load moves), each ``--repeat`` times (default 3); the
minimum and the median of each are printed, with the load average before and
after.

Sweeps: the README's first (`sweeps/psbs-shape.toml`, tracking on, as the
README runs it) and one small sweep per engine (queue, packing, batch, dfrs;
tracking off). Targets: the README sweep cold <= 3 s of wall; a small sweep
cold <= 2 s + its simulating seconds (warm); the README sweep warm <= 1.5 x
its simulating seconds + 2 s.

    python benchmarks/cold_start.py [--repeat N] [--only NAME ...] [--baseline CHECKOUT]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.processes import checkout_env  # noqa: E402

SCHEDLAB = [sys.executable, "-m", "schedlab.cli"]
#: Targets (seconds of wall).
README_COLD = 3.0
SMALL_COLD_PLUS = 2.0
WARM_FACTOR, WARM_PLUS = 1.5, 2.0

SMALL = {
    "queue": """\
        name = "cold-queue"
        engine = "queue"
        seed = 3
        policies = ["FIFO", "PS", "SRPT", "PSBS"]
        [workload]
        kind = "synthetic"
        njobs = 500
        load = [0.5, 0.9]
        [replications]
        n = 2
        [tracking]
        enabled = false
        """,
    "packing": """\
        name = "cold-packing"
        engine = "packing"
        seed = 5
        policies = ["FIFO-FF", "BF-J/S", "VQS"]
        [system]
        servers = 5
        capacity = 1.0
        epoch = 1.0
        [workload]
        kind = "packing"
        slots = 2000
        uniform_lo = 0.01
        uniform_hi = 0.19
        service = "geometric"
        mean_service = 100
        intensity = [0.85, 0.95]
        intensity_servers = 5
        [replications]
        n = 2
        [tracking]
        enabled = false
        """,
    "batch": """\
        name = "cold-batch"
        engine = "batch"
        seed = 8
        policies = ["FCFS", "EASY"]
        [system]
        model = "nodes"
        nodes = 128
        tasks_per_node = 1
        [workload]
        kind = "lublin"
        njobs = 300
        nodes = 128
        load = [0.5, 0.9]
        [replications]
        n = 2
        [tracking]
        enabled = false
        """,
    "dfrs": """\
        name = "cold-dfrs"
        engine = "dfrs"
        seed = 8
        policies = ["Greedy*/OPT=MIN", "GreedyPM*/OPT=MIN"]
        [system]
        nodes = 64
        penalty = 300.0
        [workload]
        kind = "lublin"
        njobs = 200
        nodes = 64
        load = [0.5, 0.9]
        annotation = "dfrs-synthetic"
        [replications]
        n = 2
        [tracking]
        enabled = false
        """,
}


def summary_figures(text: str) -> tuple[float, float, str]:
    """(wall, simulating, kernels note) from a run's summary line."""
    m = re.search(r"([\d.]+) s wall, ([\d.]+) s simulating(.*?) -> ", text)
    if m is None:
        raise SystemExit(f"no summary line in:\n{text[-2000:]}")
    kernels = re.search(r"; (kernels: .*)$", m.group(3))
    return float(m.group(1)), float(m.group(2)), kernels.group(1) if kernels else "kernels from the cache"


def run(spec: str, folder: Path, cache: Path, checkout: Path | None = None) -> tuple[float, float, float, str]:
    """(wall outside, wall of its line, simulating, kernels note) of one fresh
    run of this checkout's schedlab (or ``checkout``'s: no bytecode written there)."""
    env = checkout_env({k: v for k, v in os.environ.items() if not k.startswith("RAY_ADDRESS")})
    env["NUMBA_CACHE_DIR"] = str(cache)
    if checkout is not None:
        env["PYTHONPATH"] = str(checkout)
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    for stale in folder.glob("mlflow.db*"):
        stale.unlink()
    shutil.rmtree(folder / "results", ignore_errors=True)
    started = time.perf_counter()
    out = subprocess.run(
        [*SCHEDLAB, "run", spec, "--no-progress", "--fresh"], cwd=folder, capture_output=True, text=True, env=env
    )
    wall = time.perf_counter() - started
    if out.returncode != 0:
        raise SystemExit(f"schedlab run {spec} exited {out.returncode}:\n{out.stdout[-2000:]}{out.stderr[-2000:]}")
    own, sim, note = summary_figures(out.stdout)
    return wall, own, sim, note


def warm_cache(cache: Path) -> None:
    """Every kernel compiled into ``cache`` once (untimed)."""
    code = (
        "from schedlab.engines.queue.sim import fast as q; q.compile_all(); "
        "from schedlab.engines.batch.sim import fast as b; b.compile_all()"
    )
    env = checkout_env({**os.environ, "NUMBA_CACHE_DIR": str(cache)})
    subprocess.run([sys.executable, "-c", code], check=True, env=env)
    for engine, policies in (("packing", ["FIFO-FF", "Tetris"]),):
        cmd = [sys.executable, "-m", "schedlab.platform.execution.precompile", engine, *policies]
        subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL)


def figures(name: str, runs: list[tuple[float, float, float, str]]) -> str:
    walls = [r[0] for r in runs]
    return f"min {min(walls):5.2f} s, median {statistics.median(walls):5.2f} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", nargs="*", help="readme, queue, packing, batch, dfrs")
    parser.add_argument(
        "--baseline",
        type=Path,
        help="another checkout (e.g. `git archive` of the commit before): its cold runs alternate with these",
    )
    args = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    folder = Path(tempfile.mkdtemp(prefix="schedlab-cold-"))
    try:
        specs = {"readme": "psbs-shape.toml"}
        shutil.copy(REPO / "sweeps" / "psbs-shape.toml", folder / "psbs-shape.toml")
        for engine, text in SMALL.items():
            (folder / f"{engine}.toml").write_text(textwrap.dedent(text))
            specs[engine] = f"{engine}.toml"
        if args.only:
            specs = {k: v for k, v in specs.items() if k in args.only}
        warm = folder / "warm-cache"
        warm_cache(warm)
        for spec in specs.values():  # untimed: this machine's MLflow template store, the rest of the warm cache
            run(spec, folder, warm)
        print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; {args.repeat} runs each")
        for name, spec in specs.items():
            cold, hot, base = [], [], []
            for k in range(args.repeat):  # alternating
                cold.append(run(spec, folder, folder / f"cold-{name}-{k}"))
                hot.append(run(spec, folder, warm))
                if args.baseline is not None:
                    base.append(run(spec, folder, folder / f"base-{name}-{k}", args.baseline))
            warm_sim = statistics.median(r[2] for r in hot)
            print(f"{name} ({spec}):")
            print(f"  cold: {figures(name, cold)} wall; its lines: {', '.join(f'{r[1]:.1f}' for r in cold)} s")
            print(f"        last: {cold[-1][3]}")
            print(f"  warm: {figures(name, hot)} wall; simulating (median) {warm_sim:.2f} s")
            if base:
                ratio = statistics.median(r[0] for r in cold) / statistics.median(r[0] for r in base)
                print(f"  cold, baseline checkout: {figures(name, base)} wall; new / baseline median {ratio:.2f}")
            cold_min = min(r[0] for r in cold)
            cold_med = statistics.median(r[0] for r in cold)
            if name == "readme":
                target = README_COLD
                warm_target = WARM_FACTOR * warm_sim + WARM_PLUS
                warm_med = statistics.median(r[0] for r in hot)
                print(f"  warm target <= {warm_target:.2f} s: median {'met' if warm_med <= warm_target else 'NOT met'}")
            else:
                target = SMALL_COLD_PLUS + warm_sim
            print(
                f"  cold target <= {target:.2f} s: min {'met' if cold_min <= target else 'NOT met'}, "
                f"median {'met' if cold_med <= target else 'NOT met'}; cold / warm median "
                f"{cold_med / statistics.median(r[0] for r in hot):.2f}"
            )
        print(f"load average after: {os.getloadavg()[0]:.1f}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
