"""What a pipeline run cost, and where it ran: one JSON line per invocation.

A paper-scale pipeline may run for hours across sessions and machines,
resuming each time (rows on disk are never recomputed), so its cost is the
sum over invocations, not the wall of the last one. `run_pipeline` appends
one record per invocation to ``OUT/runs.jsonl``: when it started, its wall
and CPU seconds (the driver's own and its waited-for children's; Ray's
workers are not children, so the simulations' own time is summed from the
rows' ``sim_seconds`` when a page is drawn), rows new and resumed, failures,
the scale and overrides, the command line, the commit and the machine. The
reproduction pages (`pages`) read it back.
"""

from __future__ import annotations

import json
import os
import platform
import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RUNS_FILE = "runs.jsonl"


def cpu_seconds() -> float:
    """CPU seconds (user + system) of this process and its waited-for children."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def commit_of(where: Path) -> str | None:
    """The git commit of the checkout holding ``where`` (with ``+dirty`` when it
    has uncommitted changes to tracked files), or None outside a checkout."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=where, capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=where,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return head + ("+dirty" if dirty else "")


def _is_cli(argv0: str) -> bool:
    """Whether this process is the ``schedlab`` command (the script, or ``python -m schedlab.cli``)."""
    path = Path(argv0)
    return path.name == "schedlab" or path.parts[-3:] == ("schedlab", "cli", "__main__.py")


def machine() -> dict[str, Any]:
    """Cores, memory, processor model, OS and Python of this machine."""
    model = None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = None
    try:
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        pass
    return {
        "cores": os.cpu_count(),
        "memory_bytes": mem,
        "processor": model or platform.processor() or None,
        "system": f"{platform.system()} {platform.machine()}",
        "python": platform.python_version(),
    }


@dataclass
class Invocation:
    """One `run_pipeline` call, started now: `finish` appends its record."""

    out_dir: Path
    scale: str
    overrides: dict[str, Any]
    started_wall: float
    started_mono: float
    started_cpu: float

    @classmethod
    def start(cls, out_dir: Path, scale: str, overrides: dict[str, Any] | None) -> Invocation:
        return cls(Path(out_dir), scale, dict(overrides or {}), time.time(), time.monotonic(), cpu_seconds())

    def finish(self, rows_new: int, rows_resumed: int, failures: int, interrupted: bool = False) -> dict[str, Any]:
        """Append this invocation's record to ``OUT/runs.jsonl`` and return it
        (``interrupted``: a run cut short by Ctrl-C or an error, whose rows
        so far are committed: its cost counts too)."""
        import schedlab

        record = {
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.started_wall)),
            "wall_seconds": round(time.monotonic() - self.started_mono, 3),
            "driver_cpu_seconds": round(cpu_seconds() - self.started_cpu, 3),
            "rows_new": rows_new,
            "rows_resumed": rows_resumed,
            "failures": failures,
            **({"interrupted": True} if interrupted else {}),
            "scale": self.scale,
            "overrides": self.overrides,
            "command": " ".join(["schedlab", *sys.argv[1:]]) if _is_cli(sys.argv[0]) else None,
            "cwd": os.getcwd(),
            "schedlab_version": schedlab.__version__,
            "commit": commit_of(Path(schedlab.__file__).parent),
            "machine": machine(),
        }
        with open(self.out_dir / RUNS_FILE, "a") as fh:
            fh.write(json.dumps(record, sort_keys=True) + "\n")
        return record


def read_runs(out_dir: Path) -> list[dict[str, Any]]:
    """The invocations recorded in ``OUT/runs.jsonl``, oldest first ([] if none)."""
    path = Path(out_dir) / RUNS_FILE
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
