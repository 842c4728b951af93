"""Where a sweep's tasks run: the rule that picks a backend, and the backends.

The runner hands tasks (`executor.Task`: instances x the configurations still
to do) to an `executor.Executor` and takes finished ones back; everything else -- task
sizing, the sink and its exactly-once commits, failure records, progress,
adaptive rounds, tracking -- is the runner's, the same whatever runs the
tasks, and every backend runs the same function (`tasks.run_instances`), so
rows do not depend on the backend (rows are keyed and seeded per instance).

* `ray_backend.RayExecutor`: Ray tasks, on a local Ray started in-process or
  on a cluster (``--address``); Ray retries a dead worker's task.
* `local_backend.InProcess`: the driver's own process, one task at a time
  (no start-up at all: imports and compiled kernels are already loaded by
  the first task, and stay loaded for the next sweep of a session).
* `local_backend.Pool`: a pool of ``num_cpus`` local processes (forkserver),
  kept warm for later sweeps of the same process; a dead worker's tasks are
  retried ``retries`` times, as on Ray.

``[execution] backend`` (or ``--backend``) is "auto" (the default), "local"
or "ray". The **auto rule**:

1. an address (``--address``, ``[execution] address``, ``$RAY_ADDRESS``): Ray;
2. Ray already running in this process (an earlier sweep, a notebook): Ray;
3. otherwise tasks start in the driver's process, and the first one there
   that is not the process's very first (that one pays one-off imports) is
   timed; the round's work is estimated as its job-runs (jobs x
   configurations, the sizing's unit) x the seconds per job-run measured on
   that task (kernel loading excluded; a task that ran simulations on the
   reference loop while their kernels compiled, `precompile`, is not timed).
   An estimate up to `COLD_POOL_SECONDS`
   (`IN_PROCESS_SECONDS` when a local pool is already warm in this process)
   stays in-process; up to `RAY_SECONDS` goes to a local pool of
   ``num_cpus`` processes (in-process when that is one CPU); beyond, to Ray.
   Each later round (adaptive replications) is estimated again at its start
   and may move up a tier, never down.

"local" is the same rule without Ray. The run's summary line says which
backend ran and why (`Choice.why`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from schedlab.errors import UserError
from schedlab.platform.execution.executor import Executor, Finished, Task, TaskCall, busy_seconds

if TYPE_CHECKING:
    from schedlab.platform.planning.plan import Plan
    from schedlab.platform.planning.spec import SweepSpec

__all__ = ["Auto", "Choice", "Executor", "Task", "TaskCall", "busy_seconds", "choose", "make_executor"]

#: Estimated seconds of a round's work (on one core) up to which auto stays in the driver's process
#: when a local pool is already warm in it ...
IN_PROCESS_SECONDS = 3.0
#: ... and when it is not: a new pool's processes first pay imports and kernel loading (1-2 s of
#: CPU each, measured by benchmarks/instant_sweeps.py), which a few seconds of work does not repay.
COLD_POOL_SECONDS = 10.0
#: ... up to which it uses a local pool of num_cpus processes; beyond, Ray.
RAY_SECONDS = 120.0

Backend = Literal["auto", "local", "ray"]
Tier = Literal["in-process", "pool", "ray"]
TIERS: tuple[Tier, ...] = ("in-process", "pool", "ray")


@dataclass(frozen=True)
class Choice:
    """The backend a run starts with (``tier`` None: auto's timed first
    task decides) and why."""

    backend: Backend
    tier: Tier | None
    why: str


def choose(spec: SweepSpec, address: str | None, backend: str | None) -> Choice:
    """Rules 1 and 2 of the module docstring; ``backend``/``address``: the
    command line's, which override the spec."""
    chosen = backend or spec.execution.backend
    source = f"--backend {chosen}" if backend else f'backend = "{chosen}"'
    given = (
        ("--address", address)
        if address
        else ("[execution] address", spec.execution.address)
        if spec.execution.address
        else ("$RAY_ADDRESS", os.environ.get("RAY_ADDRESS"))
    )
    if chosen not in ("auto", "local", "ray"):
        raise UserError(f"--backend: must be auto, local or ray; got {chosen!r}")
    if chosen == "ray":
        return Choice("ray", "ray", source)
    if chosen == "local":
        if address or spec.execution.address:
            raise UserError(f"{source}: runs without Ray, but {given[0]} names a Ray cluster ({given[1]})")
        return Choice("local", None, source)
    if given[1]:
        return Choice("auto", "ray", f"auto: {given[0]} names a Ray cluster")
    if _ray_running_here():
        return Choice("auto", "ray", "auto: Ray is already running in this process")
    return Choice("auto", None, "auto")


def _ray_running_here() -> bool:
    ray = sys.modules.get("ray")  # never imported: certainly not running (and ray stays unimported)
    return bool(ray is not None and ray.is_initialized())


def local_cpus(spec: SweepSpec) -> int:
    """CPUs a local pool uses: ``[execution] num_cpus``, else this process's CPUs."""
    if spec.execution.num_cpus:
        return spec.execution.num_cpus
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def make_executor(spec: SweepSpec, plan: Plan, choice: Choice, address: str | None, call: TaskCall) -> Executor:
    """The executor for ``choice`` (started: Ray or a pool is up when this returns)."""
    from schedlab.platform.execution import local_backend

    cpus = local_cpus(spec)

    def make(tier: Tier) -> Executor:
        if tier == "ray":
            from schedlab.platform.execution.ray_backend import RayExecutor

            return RayExecutor(spec, plan, address, call)
        if tier == "pool" and cpus > 1:
            return local_backend.Pool(call, cpus, spec.execution.retries, spec.execution.max_in_flight)
        return local_backend.InProcess(call)

    if choice.tier is not None:
        executor = make(choice.tier)
        executor.name, why = _name(executor, choice.tier, cpus), choice.why
        return _Fixed(executor, why)
    return Auto(
        make,
        allow_ray=choice.backend == "auto",
        cpus=cpus,
        why=choice.why,
        pool_warm=lambda: local_backend.pool_is_warm(cpus),
    )


def _name(executor: Executor, tier: Tier, cpus: int) -> str:
    if tier == "ray":
        return "on Ray"
    if isinstance(executor, _local_pool_type()):
        return f"in a local pool of {cpus} processes"
    return "in-process"


def _local_pool_type() -> type:
    from schedlab.platform.execution.local_backend import Pool

    return Pool


class _Fixed(Executor):
    """An executor chosen up front (``why`` says why), passed through."""

    def __init__(self, inner: Executor, why: str) -> None:
        self.inner, self.why, self.name = inner, why, inner.name

    @property
    def start_seconds(self) -> float:  # type: ignore[override]
        return self.inner.start_seconds

    def slots(self) -> float:
        return self.inner.slots()

    def max_in_flight(self) -> int:
        return self.inner.max_in_flight()

    @property
    def in_flight(self) -> int:
        return self.inner.in_flight

    def submit(self, task: Task) -> None:
        self.inner.submit(task)

    def wait(self, timeout: float) -> list[Finished]:
        return self.inner.wait(timeout)

    def cancel(self) -> None:
        self.inner.cancel()


class Auto(_Fixed):
    """Rule 3 of the module docstring: in-process until a task is timed, then
    the tier its estimate asks for (moving up only when nothing
    is in flight: at a round's start, or after an in-process task)."""

    def __init__(
        self,
        make: Callable[[Tier], Executor],
        allow_ray: bool,
        cpus: int,
        why: str,
        pool_warm: Callable[[], bool] = lambda: False,
    ) -> None:
        self.make, self.allow_ray, self.cpus, self.label, self.pool_warm = make, allow_ray, cpus, why, pool_warm
        self.tier: Tier = "in-process"
        self.rate: float | None = None  # seconds per job-run, from the first timed task
        self.remaining = 0
        self.started = 0.0
        super().__init__(make("in-process"), f"{why}: every task ran in-process before one could be timed")
        self.name = "in-process"

    @property
    def start_seconds(self) -> float:  # type: ignore[override]
        return self.started + self.inner.start_seconds

    def begin_round(self, units: int) -> None:
        self.remaining = units
        if self.rate is not None:
            self._decide()

    def submit(self, task: Task) -> None:
        self.remaining -= task.units
        self.inner.submit(task)

    def wait(self, timeout: float) -> list[Finished]:
        got = self.inner.wait(timeout)
        if self.rate is None and not getattr(self.inner, "cold", False):
            from schedlab.platform.execution.tasks import TaskResult

            for task, result in got:
                if isinstance(result, TaskResult) and result.reference_runs:
                    continue  # its kernels were being compiled: not their speed (`precompile`)
                busy = busy_seconds(result) if isinstance(result, TaskResult) else 0.0
                if task.units > 0 and busy > 0:
                    self.rate = busy / task.units
                    self.remaining += task.units  # the estimate covers the round, the timed task included
                    self._decide()
                    self.remaining -= task.units
                    break
        return got

    def want(self, seconds: float) -> tuple[Tier, str]:
        """The tier an estimate of ``seconds`` asks for, and the comparison
        that says why (the module docstring's rule)."""
        warm = self.cpus > 1 and self.pool_warm()
        bound = IN_PROCESS_SECONDS if warm else COLD_POOL_SECONDS
        pool = "a warm pool" if warm else "a new pool"
        if seconds <= bound:
            return "in-process", f"<= {bound:g} s ({pool})" if self.cpus > 1 else f"<= {bound:g} s"
        if self.allow_ray and seconds > RAY_SECONDS:
            return "ray", f"> {RAY_SECONDS:g} s"
        upper = f" and <= {RAY_SECONDS:g} s" if self.allow_ray else ""
        if self.cpus <= 1:
            return "in-process", f"> {bound:g} s{upper}, but one CPU"
        return "pool", f"> {bound:g} s{upper} ({pool})"

    def _decide(self) -> None:
        if self.rate is None or self.inner.in_flight:
            return
        seconds = self.remaining * self.rate
        tier, reason = self.want(seconds)
        if TIERS.index(tier) <= TIERS.index(self.tier) and self.tier != "in-process":
            return  # never down; the reason that moved it up stands
        if TIERS.index(tier) > TIERS.index(self.tier):
            self.started += self.inner.start_seconds
            self.inner = self.make(tier)
            self.tier = tier
            self.name = _name(self.inner, tier, self.cpus)
        self.why = (
            f"{self.label}: ~{seconds:.2g} s of work estimated ({self.remaining} job-runs x "
            f"{self.rate * 1e6:.2g} us, timed in-process) {reason}"
        )
