"""What a small sweep costs before and after its simulations (a benchmark:
prints figures, asserts nothing).

Each line is a whole `schedlab` process, timed from outside (median of
--repeat runs, each in a fresh folder so nothing is reused unless the line
says so): the CLI alone, a 2-policy x 100-job sweep without tracking, the
same with a new SQLite MLflow store (its creation included), and that sweep
run again when it is complete (resume: nothing to simulate, MLflow checked).
The sweep's own simulations take about a millisecond: everything else is
start-up (Python and schedlab imports, Ray, MLflow).

    python benchmarks/startup.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root: tests.processes
from tests.processes import checkout_env  # noqa: E402

SCHEDLAB = [sys.executable, "-m", "schedlab.cli"]
SPEC = """\
    name = "startup"
    engine = "queue"
    seed = 1
    policies = ["FIFO", "PS"]
    [workload]
    kind = "synthetic"
    njobs = 100
    [replications]
    n = 1
    [tracking]
    uri = "sqlite:///mlflow.db"
    """


def timed(args: list[str], cwd: Path) -> float:
    started = time.perf_counter()
    out = subprocess.run(
        [*SCHEDLAB, *args], cwd=cwd, capture_output=True, text=True, env=checkout_env({**os.environ, "RAY_ADDRESS": ""})
    )
    wall = time.perf_counter() - started
    if out.returncode != 0:
        raise SystemExit(f"schedlab {' '.join(args)} exited {out.returncode}:\n{out.stderr[-2000:]}")
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    lines = {
        "schedlab --help": [],
        "run, tracking off": [],
        "run, new SQLite MLflow store": [],
        "run again (complete: resume, MLflow checked)": [],
    }
    for _ in range(args.repeat):
        folder = Path(tempfile.mkdtemp(prefix="schedlab-startup-"))
        try:
            (folder / "a.toml").write_text(textwrap.dedent(SPEC))
            lines["schedlab --help"].append(timed(["--help"], folder))
            lines["run, tracking off"].append(
                timed(["run", "a.toml", "--no-tracking", "--no-progress", "--fresh"], folder)
            )
            shutil.rmtree(folder / "results")
            lines["run, new SQLite MLflow store"].append(timed(["run", "a.toml", "--no-progress"], folder))
            lines["run again (complete: resume, MLflow checked)"].append(
                timed(["run", "a.toml", "--no-progress"], folder)
            )
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    print(f"2 policies x 100 jobs, 1 replication (median of {args.repeat}; load average {os.getloadavg()[0]:.1f})")
    for name, values in lines.items():
        print(f"  {name:46s} {statistics.median(values):6.2f} s  (min {min(values):.2f}, max {max(values):.2f})")


if __name__ == "__main__":
    main()
