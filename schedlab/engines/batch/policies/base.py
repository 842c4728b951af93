"""The batch policy seam (engine: ``schedlab.engines.batch.sim.engine``).

Model: rigid parallel jobs on a homogeneous machine of ``machine.capacity``
units (processors or whole nodes, see the engine); a job holds
``machine.need[job]`` units from its start to its actual end, without
preemption. A policy sees what a real batch scheduler sees: submit times,
needs, the users' requested times (``machine.requested[job]``), arrivals,
completions and the free units -- never actual runtimes.

The engine calls, at each event instant t: ``complete(job)`` for every job
ending at t, then ``arrive(job)`` for every job submitted at t (job order),
then ONE ``schedule(t)``, which returns the jobs to start at t, in order. Each
start must fit in ``machine.free`` minus the earlier starts of the same list
(the engine checks and raises otherwise: a policy bug). Jobs are ints (row
index in the job table).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from schedlab.engines.batch.sim.engine import Machine


class BatchPolicy(ABC):
    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""

    def __init__(self, machine: Machine, **params: Any) -> None:
        if params:
            raise TypeError(f"{type(self).__name__} takes no parameters (got {', '.join(sorted(params))})")
        self.machine = machine

    @abstractmethod
    def arrive(self, job: int) -> None:
        """``job`` was submitted at ``machine.now`` and joins the queue."""

    @abstractmethod
    def complete(self, job: int) -> None:
        """``job`` ended; its units are free again."""

    @abstractmethod
    def schedule(self, now: float) -> list[int]:
        """Jobs to start at ``now``, in order."""


def run_pass(decisions: Generator[None, int, list[int]], choose: Callable[[], int]) -> list[int]:
    """Drive a scheduling pass written as a coroutine (it yields whenever a head must be
    chosen): send it ``choose()`` each time; returns the jobs it started."""
    try:
        next(decisions)
        while True:
            decisions.send(choose())
    except StopIteration as stop:
        started: list[int] = stop.value
        return started
