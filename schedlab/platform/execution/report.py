"""What a sweep run tells its caller: the `SweepReport` at the end, `Progress`
while it runs, and `Interrupted` on Ctrl-C. Its own module so that the round
loops (`adaptive`), the backends and the runner share them without importing
each other."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


class Interrupted(Exception):
    """Ctrl-C: what was received is committed; running again resumes."""


@dataclass
class SweepReport:
    results_dir: str
    configs: int
    rows_written: int = 0
    rows_skipped: int = 0
    failures: list[dict[str, Any]] = field(default_factory=list)
    tasks: int = 0
    wall_seconds: float = 0.0
    sim_seconds: float = 0.0
    rounds: int = 0
    tracking: Any = None
    #: One line when this run grew the results dir (the spec gained policies, points or replications).
    grew: str | None = None
    #: One line when user code changed since the rows on disk: what re-runs, why, where the old rows went.
    reruns: str | None = None
    #: Adaptive sweeps: the workload points (their distinguishing values) that
    #: reached ``max`` replications with some interval still above the target.
    at_max: list[dict[str, Any]] = field(default_factory=list)
    #: The compaction at the end of the run (`compact.CompactReport`), and why it
    #: stopped if it did (the rows are intact either way; `schedlab compact` retries).
    compaction: Any = None
    compaction_error: str | None = None
    #: Ctrl-C arrived while compacting, after the last commit: this sweep is
    #: complete, but a caller that runs several sweeps (a pipeline, a search)
    #: must stop there rather than go on to the next one.
    interrupted: bool = False
    #: Where the tasks ran ("in-process", "local pool of 2 processes", "ray") and why
    #: (`backends`); empty when nothing needed to run (a complete sweep resumed).
    backend: str = ""
    backend_why: str = ""
    #: Seconds per stage (cheap timers, for benchmarks/sweep_breakdown.py): the driver's
    #: ("plan", "prepare", "backend_start", "submit", "wait", "get", "sink", "commit", "tracking",
    #: "compact"), the driver process's CPU seconds while rounds ran ("driver_cpu": its own
    #: work and the backend's threads in it, whatever else the machine runs) and, summed over
    #: tasks, the workers' ("task_" + `tasks.STAGES`).
    stages: dict[str, float] = field(default_factory=dict)
    #: Kernels compiled beside the sweep (`precompile`): what was compiled, in how long, and how many
    #: simulations ran on the reference loop meanwhile; empty when the cache had every kernel.
    kernels: str = ""

    def backend_line(self) -> str:
        """ ", ran in-process (auto: ...)" for the summary line (and, after it,
        `kernels`); empty if nothing ran."""
        line = f", ran {self.backend} ({self.backend_why})" if self.backend else ""
        return f"{line}; {self.kernels}" if self.kernels else line


@dataclass(frozen=True)
class Progress:
    """Where a running sweep stands, for a progress display. A simulation is
    one configuration x replication; ``total`` counts those planned so far
    (an adaptive sweep adds each round's), ``done`` those finished (failed
    ones included), ``failed`` those that raised, ``round`` is 1-based,
    ``elapsed`` the seconds since the sweep started and ``running`` the
    simulations of the tasks submitted and not yet back."""

    sweep: str
    round: int
    done: int
    total: int
    failed: int
    elapsed: float
    running: int = 0
    #: What else the sweep is doing now (kernels compiled beside it, `precompile`), or empty.
    note: str = ""

    @property
    def eta(self) -> float | None:
        """Seconds left at the rate so far (None before the first result)."""
        if self.done <= 0 or self.elapsed <= 0:
            return None
        return max(self.total - self.done, 0) * self.elapsed / self.done
