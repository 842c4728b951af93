"""How much work goes into each Ray task, by measurement.

A task costs the driver and Ray a roughly fixed amount (scheduling, one
result to fetch, a few files to write), so tiny tasks waste the cores, and a
task that is too big leaves the other cores idle at the end of a round (a
straggler). `TaskSizer` packs instances into tasks of about `TARGET_SECONDS`
of work each, from the cost per unit of work (job-runs: jobs x
configurations, `WorkloadPoint.work`) measured on the tasks already done,
and near the end of a round shrinks them so that the remaining work still
spreads over every CPU (at least `TAIL_TASKS_PER_CPU` tasks each), never
below `MIN_SECONDS`. Before any measurement the first tasks carry
`FIRST_TASK_WORK` job-runs.

``[execution] task_jobs`` set in the spec turns this off: fixed packing to
about that many job-runs a task (`Plan.tasks`'s rule). Results never depend on
packing: rows are keyed and seeded per instance (`plan`).
"""

from __future__ import annotations

from collections import deque
from typing import Any

from schedlab.platform.planning.plan import Instance, shared_input_key

#: Seconds of work a task aims at once its cost is known.
TARGET_SECONDS = 1.0
#: A task is not made smaller than this (per-task overhead stays small) ...
MIN_SECONDS = 0.1
#: ... except that the last tasks of a round are made small enough that each CPU gets this many.
TAIL_TASKS_PER_CPU = 4
#: Job-runs of a task before any task has been measured.
FIRST_TASK_WORK = 20_000


class TaskSizer:
    """Hands out tasks (lists of instances) from ``work`` ((instance,
    configurations to run) pairs, in plan order), each sized as described in
    the module docstring; ``observe`` feeds back what a finished task cost."""

    def __init__(self, work: list[tuple[Instance, list[Any]]], fixed: int | None = None) -> None:
        def cost(inst: Instance, todo: list[Any]) -> int:
            if fixed is not None:  # exactly `Plan.tasks`'s packing
                return max(1, inst.point.work())
            return max(1, int(inst.point.params.get("njobs", 10_000)) * len(todo))

        self.queue: deque[tuple[Instance, int]] = deque((inst, cost(inst, todo)) for inst, todo in work)
        self.fixed = fixed
        self._keys: dict[str, str | None] = {}  # point id -> shared input key (computed once per point)
        self.remaining = sum(units for _, units in self.queue)
        self.seconds = 0.0
        self.units = 0

    def __bool__(self) -> bool:
        return bool(self.queue)

    def observe(self, units: int, busy_seconds: float) -> None:
        """A finished task: its job-runs and its busy seconds (first-call
        warm-up excluded: a one-off cost of a fresh worker)."""
        if units > 0 and busy_seconds > 0:
            self.units += units
            self.seconds += busy_seconds

    def size(self, cpus: float) -> float:
        """Job-runs the next task should carry."""
        if self.fixed is not None:
            return self.fixed
        want = FIRST_TASK_WORK if not self.units else TARGET_SECONDS * self.units / self.seconds
        tail = self.remaining / max(1.0, TAIL_TASKS_PER_CPU * cpus)
        floor = 0 if not self.units else MIN_SECONDS * self.units / self.seconds
        return max(min(want, tail), floor, 1)

    def next(self, cpus: float) -> tuple[list[Instance], int]:
        """The next task's instances and its job-runs. A task never mixes
        instances that need different shared inputs (e.g. two traces)."""
        target = self.size(cpus)
        task: list[Instance] = []
        units, key = 0, None
        while self.queue:
            inst, cost = self.queue[0]
            pid = inst.point.point_id
            k = self._keys[pid] if pid in self._keys else self._keys.setdefault(pid, shared_input_key(inst.point))
            overshoot = self.fixed is None and units + cost > 1.5 * target
            if task and (units >= target or k != key or overshoot):
                break
            self.queue.popleft()
            task.append(inst)
            units += cost
            key = k
        self.remaining -= units
        return task, units
