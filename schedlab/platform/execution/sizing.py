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

import itertools
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
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


#: Instances `TaskSizer` draws from its work at a time (a streamed round keeps no more queued).
LOOKAHEAD = 4096


class TaskSizer:
    """Hands out tasks (lists of instances) from ``work`` ((instance,
    configurations to run) pairs, in plan order), each sized as described in
    the module docstring; ``observe`` feeds back what a finished task cost.

    With ``remaining`` (the job-runs of all of ``work``, counted by the
    caller) ``work`` is drawn lazily, `LOOKAHEAD` pairs at a time, so a round
    of ten million instances is never a list in memory; without it ``work``
    is read whole first and counted here."""

    def __init__(
        self, work: Iterable[tuple[Instance, Sequence[Any]]], fixed: int | None = None, remaining: int | None = None
    ) -> None:
        self.fixed = fixed
        self.queue: deque[tuple[Instance, Sequence[Any], int]] = deque()
        self._work: Iterator[tuple[Instance, Sequence[Any]]] = iter(work)
        if remaining is None:
            self.queue.extend((inst, todo, self.cost(inst, todo)) for inst, todo in self._work)
            remaining = sum(units for _, _, units in self.queue)
        self._keys: dict[str, str | None] = {}  # point id -> shared input key (the last few points')
        self.remaining = remaining
        self.seconds = 0.0
        self.units = 0

    def cost(self, inst: Instance, todo: Sequence[Any]) -> int:
        """Job-runs of one pair (``fixed``: exactly `Plan.tasks`'s packing)."""
        return self.units_of(inst.point.params, len(todo), len(inst.point.configs))

    def units_of(self, params: dict[str, Any], todo: int, every: int) -> int:
        """`cost` of ``todo`` of a point's ``every`` configurations, from its
        parameters alone (a round's counting pass makes no point, `runner`)."""
        if self.fixed is not None:
            return max(1, int(params.get("njobs", 10_000)) * every)  # `WorkloadPoint.work`
        return max(1, int(params.get("njobs", 10_000)) * todo)

    def _fill(self) -> bool:
        """Queue the next `LOOKAHEAD` pairs of the work; False when none is left."""
        if not self.queue:
            for inst, todo in itertools.islice(self._work, LOOKAHEAD):
                self.queue.append((inst, todo, self.cost(inst, todo)))
            if len(self._keys) > LOOKAHEAD:  # keys of points long handed out
                self._keys.clear()
        return bool(self.queue)

    def __bool__(self) -> bool:
        return self._fill()

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
        work, units = self.next_work(cpus)
        return [inst for inst, _ in work], units

    def next_work(self, cpus: float) -> tuple[list[tuple[Instance, Sequence[Any]]], int]:
        """`next`, with each instance's configurations to run."""
        target = self.size(cpus)
        task: list[tuple[Instance, Sequence[Any]]] = []
        units, key = 0, None
        while self._fill():
            inst, todo, cost = self.queue[0]
            pid = inst.point.point_id
            k = self._keys[pid] if pid in self._keys else self._keys.setdefault(pid, shared_input_key(inst.point))
            overshoot = self.fixed is None and units + cost > 1.5 * target
            if task and (units >= target or k != key or overshoot):
                break
            self.queue.popleft()
            task.append((inst, todo))
            units += cost
            key = k
        self.remaining -= units
        return task, units
