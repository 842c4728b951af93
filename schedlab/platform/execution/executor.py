"""The executor seam (`backends`): what the runner hands a backend (`Task`,
`TaskCall`) and gets back (`TaskResult` or `Lost`), and the interface every
backend implements (`Executor`). Its own module so that the backends
(`local_backend`, `ray_backend`) and the rule that picks one (`backends`)
import it, not each other."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from schedlab.platform.execution.tasks import TaskResult
    from schedlab.platform.planning.plan import Config, Instance, MetricSpec
    from schedlab.usercode import CodeRef


@dataclass
class Task:
    """One task: workload instances, the configurations each still needs, and
    its job-runs (the sizing's unit of work)."""

    work: list[tuple[Instance, list[Config]]]
    units: int


@dataclass(frozen=True)
class TaskCall:
    """What every task of a sweep is called with besides its work."""

    engine: str | CodeRef  # a built-in's name or your engine's code (`Plan.engine_ref`)
    per_job: bool
    metrics: tuple[MetricSpec, ...]
    engine_path: str
    sim_budget_seconds: float | None = None  # `budget.sim_budget` of each simulation (None: none)


@dataclass(frozen=True)
class Lost:
    """A task that could not finish (its worker died, retries exhausted):
    the text of every failure record it becomes."""

    text: str


Finished = tuple[Task, "TaskResult | Lost"]


def busy_seconds(result: TaskResult) -> float:
    """A finished task's busy seconds, first-call warm-up (imports, kernel
    loading: a one-off cost of a fresh process) and the task's own total excluded."""
    return sum(v for k, v in result.stages.items() if k not in ("task", "warmup"))


class Executor(ABC):
    """Runs tasks; see the module docstring. ``start_seconds``: time spent
    starting the backend (Ray, a pool), for the run's stages."""

    name: str = ""
    start_seconds: float = 0.0

    @abstractmethod
    def slots(self) -> float:
        """Tasks that run at once."""

    @abstractmethod
    def max_in_flight(self) -> int:
        """Tasks to keep submitted."""

    @property
    @abstractmethod
    def in_flight(self) -> int:
        """Tasks submitted and not yet returned by `wait`."""

    @abstractmethod
    def submit(self, task: Task) -> None:
        """Start ``task`` (or queue it)."""

    @abstractmethod
    def wait(self, timeout: float) -> list[Finished]:
        """Tasks finished within ``timeout`` seconds (possibly none)."""

    @abstractmethod
    def cancel(self) -> None:
        """Ctrl-C: drop every task in flight."""

    def begin_round(self, units: int) -> None:  # noqa: B027 - optional hook: only auto's choice uses it
        """A round of ``units`` job-runs is about to be submitted."""
