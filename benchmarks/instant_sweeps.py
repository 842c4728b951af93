"""How long a user waits for small sweeps, end to end (issue 27; a benchmark:
prints figures against the targets, asserts nothing).

Every figure is a whole `schedlab` command run as a subprocess from a fresh
folder, timed from outside: wall seconds (what the user waits) and the CPU
seconds of the process and its children (what the work costs; on a loaded
machine the wall can be many times the CPU). The kernel cache is warmed
first by an untimed run of each command, so the figures are those of a
machine where schedlab has run before. One run each by default (--repeat N:
the median).

1. CLI start-up (`schedlab --help`), and the first kernel call (a 10-job
   `schedlab simulate`, minus start-up: imports and loading the compiled
   kernel from numba's cache).
2. `schedlab simulate --policy PSBS --njobs 10000`: target <= 1 s.
3. The 600-configuration sweep (FIFO and PS over 300 grid points, 200 jobs,
   1 replication, --no-tracking): target <= 2 s.
4. `sweeps/psbs-shape.toml --fresh` with tracking on (the README's first
   command): target <= 1.5 x its simulation time + 2 s.
5. The warm paths: the 600-configuration sweep on a local Ray left running
   (`ray start --head` on 127.0.0.1, joined with its address), and
   `schedlab.run` twice in one Python process (the second call).

    python benchmarks/instant_sweeps.py [--repeat N] [--skip-ray]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.processes import checkout_env, kill_session  # noqa: E402

SCHEDLAB = [sys.executable, "-m", "schedlab.cli"]
LOADS = [round(0.3 + 0.03 * i, 2) for i in range(20)]
SHAPES = [round(0.25 * (i + 1), 2) for i in range(15)]  # 20 x 15 = 300 grid points
SMALL = f"""\
    name = "small600"
    engine = "queue"
    seed = 3
    policies = ["FIFO", "PS"]

    [workload]
    kind = "synthetic"
    njobs = 200
    load = {LOADS}
    shape = {SHAPES}

    [replications]
    n = 1

    [tracking]
    enabled = false
    """
SMALL_RUN = ["run", "small.toml", "--no-tracking", "--no-progress", "--fresh"]
SIMULATE = ["simulate", "--policy", "PSBS", "--njobs", "10000"]
#: Targets of issue 27 (seconds of wall).
TARGET_SIMULATE = 1.0
TARGET_SMALL = 2.0
PSBS_FACTOR, PSBS_PLUS = 1.5, 2.0


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[float, float, str]:
    """(wall, CPU, output) of one command."""
    cpu = children_cpu()
    started = time.perf_counter()
    out = subprocess.run(args, cwd=cwd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - started
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(args)} exited {out.returncode}:\n{out.stdout[-2000:]}{out.stderr[-2000:]}")
    return wall, children_cpu() - cpu, out.stdout + out.stderr


def median_of(repeat: int, run) -> tuple[float, float, str]:
    results = [run() for _ in range(repeat)]
    walls = [r[0] for r in results]
    k = walls.index(sorted(walls)[len(walls) // 2])
    return results[k]


def local_env() -> dict[str, str]:
    """No inherited Ray address: each command decides for itself (auto); this
    checkout's schedlab (`checkout_env`)."""
    return checkout_env({k: v for k, v in os.environ.items() if not k.startswith("RAY_ADDRESS")})


def line(name: str, wall: float, cpu: float, note: str = "") -> None:
    print(f"  {name:58s} {wall:6.2f} s wall {cpu:6.2f} s CPU  {note}")


def verdict(wall: float, target: float) -> str:
    return f"target <= {target:.2f} s: {'met' if wall <= target else 'NOT met'}"


def summary_figures(text: str) -> tuple[float, float, str]:
    """(wall, simulating, backend) from a run's summary line."""
    m = re.search(r"([\d.]+) s wall, ([\d.]+) s simulating(?:, ran (.*?)) -> ", text)
    if m is None:
        raise SystemExit(f"no summary line in:\n{text[-2000:]}")
    return float(m.group(1)), float(m.group(2)), m.group(3) or "nothing ran"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def warm_ray(folder: Path, env: dict[str, str], repeat: int) -> None:
    """A local Ray left running (its own temp dir and token), then the sweep
    joining it with --address auto; the Ray is stopped by killing its session."""
    ray_env = {
        **env,
        "RAY_TMPDIR": tempfile.mkdtemp(prefix="slray-", dir="/tmp"),
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN": secrets.token_hex(32),
        "RAY_USAGE_STATS_ENABLED": "0",
        "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",  # the head listens on 127.0.0.1 only
    }
    start = [sys.executable, "-m", "ray.scripts.scripts", "start", "--head", "--node-ip-address", "127.0.0.1"]
    port = free_port()
    start += ["--port", str(port), "--num-cpus", "2", "--include-dashboard", "false", "--block"]
    head = subprocess.Popen(
        start, env=ray_env, cwd=folder, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        started = time.perf_counter()
        # the head's own address: on a shared machine `--address auto` may find another user's Ray first
        address = f"127.0.0.1:{port}"
        args = [*SCHEDLAB, "run", "small.toml", "--no-tracking", "--no-progress", "--fresh", "--address", address]
        for _ in range(60):  # until the head answers
            probe = subprocess.run(args, cwd=folder, capture_output=True, text=True, env=ray_env)
            if probe.returncode == 0:
                break
            time.sleep(1.0)
        else:
            raise SystemExit(f"the local Ray did not come up:\n{probe.stderr[-2000:]}")
        print(f"  (ray start --head took ~{time.perf_counter() - started:.1f} s until a sweep could join it)")
        wall, cpu, text = median_of(repeat, lambda: timed(args, folder, ray_env))
        own, sim, backend = summary_figures(text)
        note = f"(its line: {own:.1f} s wall, {backend})"
        line("600 configurations on a warm local Ray (--address)", wall, cpu, note)
    finally:
        kill_session(head)
        shutil.rmtree(ray_env["RAY_TMPDIR"], ignore_errors=True)


WARM_SESSION = """\
import time, schedlab
walls = []
for _ in range(2):
    t = time.perf_counter()
    report = schedlab.run("small.toml", fresh=True, tracking=False)
    walls.append(time.perf_counter() - t)
print(f"{walls[0]:.3f} {walls[1]:.3f} {report.backend}")
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--skip-ray", action="store_true", help="skip the warm-Ray figure (starts a Ray head)")
    args = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    env = local_env()
    folder = Path(tempfile.mkdtemp(prefix="schedlab-instant-"))
    try:
        (folder / "small.toml").write_text(textwrap.dedent(SMALL))
        shutil.copy(REPO / "sweeps" / "psbs-shape.toml", folder / "psbs-shape.toml")
        # warms the kernel cache and this machine's template MLflow store (untimed): what a machine
        # where schedlab has run before has
        for warm in (SIMULATE, SMALL_RUN, ["run", "psbs-shape.toml", "--fresh", "--no-progress"]):
            timed([*SCHEDLAB, *warm], folder, env)
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; median of {args.repeat} run(s)")

        print("1. start-up")
        help_wall, help_cpu, _ = median_of(args.repeat, lambda: timed([*SCHEDLAB, "--help"], folder, env))
        line("schedlab --help (CLI start-up)", help_wall, help_cpu)
        tiny = [*SCHEDLAB, "simulate", "--policy", "PSBS", "--njobs", "10"]
        wall, cpu, _ = median_of(args.repeat, lambda: timed(tiny, folder, env))
        line("schedlab simulate --njobs 10 (start-up + first kernel call)", wall, cpu)
        line("  first kernel call (the above minus --help)", wall - help_wall, cpu - help_cpu)

        print("2. one simulation")
        wall, cpu, _ = median_of(args.repeat, lambda: timed([*SCHEDLAB, *SIMULATE], folder, env))
        line("schedlab simulate --policy PSBS --njobs 10000", wall, cpu, verdict(wall, TARGET_SIMULATE))

        print("3. the 600-configuration sweep")
        wall, cpu, text = median_of(args.repeat, lambda: timed([*SCHEDLAB, *SMALL_RUN], folder, env))
        own, sim, backend = summary_figures(text)
        line("schedlab run small.toml --no-tracking --fresh", wall, cpu, verdict(wall, TARGET_SMALL))
        print(f"  {'':58s} its line: {own:.1f} s wall, {sim:.2f} s simulating, ran {backend}")

        print("4. the README's first sweep (tracking on, a fresh MLflow store)")

        def readme() -> tuple[float, float, str]:
            for suffix in ("", "-wal", "-shm"):
                (folder / f"mlflow.db{suffix}").unlink(missing_ok=True)
            shutil.rmtree(folder / "mlruns", ignore_errors=True)
            return timed([*SCHEDLAB, "run", "psbs-shape.toml", "--fresh", "--no-progress"], folder, env)

        wall, cpu, text = median_of(args.repeat, readme)
        own, sim, backend = summary_figures(text)
        target = PSBS_FACTOR * sim + PSBS_PLUS
        line("schedlab run sweeps/psbs-shape.toml --fresh", wall, cpu, verdict(wall, target))
        print(f"  {'':58s} its line: {own:.1f} s wall, {sim:.2f} s simulating, ran {backend}")
        untracked = [*SCHEDLAB, "run", "psbs-shape.toml", "--fresh", "--no-progress", "--no-tracking"]
        wall0, cpu0, text0 = median_of(args.repeat, lambda: timed(untracked, folder, env))
        own0, sim0, _ = summary_figures(text0)
        line("  the same with --no-tracking", wall0, cpu0, f"tracking adds {wall - wall0:+.2f} s of wall")
        print(
            f"  {'':58s} its line: {own0:.1f} s wall, {sim0:.2f} s simulating "
            f"(the target from this figure: {PSBS_FACTOR * sim0 + PSBS_PLUS:.2f} s)"
        )
        print(
            f"  {'':58s} (a new store is a copy of this machine's template; the first store on a machine is "
            f"built by MLflow's migrations, about 1 s once)"
        )

        print("5. warm paths")
        code = [sys.executable, "-c", WARM_SESSION]
        _, _, out = timed(code, folder, env)
        first, second, backend = out.split()[0], out.split()[1], " ".join(out.split()[2:])
        print(
            f"  schedlab.run(small.toml) twice in one process: first {float(first):.2f} s, "
            f"second {float(second):.2f} s ({backend})"
        )
        if not args.skip_ray:
            warm_ray(folder, env, args.repeat)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
