"""RLScheduler's scheduling loop (Zhang et al., SC'20; DIR-LAB/deep-batch-scheduler,
``HPCSimPickJobs.py``) as options of the batch policies, so that its heuristic
columns can be run beside ours on the same jobs. schedlab's own loop stays the
default; these options select, one rule each (docs/gym.md, "How they differ"):

* ``commit = true`` (``schedlab.engines.batch.policies.priority``): the head is
  chosen as soon as the queue is not empty, even with nothing fitting, and kept
  until it starts;
* ``passes = "event"``: each arrival and each completion is a pass of its own,
  even at one instant, arrivals first (RLScheduler adds a job that arrives at
  the instant a job ends before it releases the ending job), completions in
  (end, job) order; the default ``"instant"`` applies every event of an
  instant, then makes one pass. With a committed head this changes schedules:
  two jobs arriving at one instant to an empty queue commit to the first, not
  to the better of the two; and a backfilling scan runs between a completion
  and the next at the same instant;
* ``backfill = "rlscheduler"`` (EASY and the ``+EASY`` policies): its
  backfilling, not EASY's. When the head blocks, its shadow time is computed
  once -- walking the running jobs by requested end (start + requested
  time), the requested end at which the free units plus theirs first cover
  the head's need -- and kept until the head starts, even as jobs end early;
  at that pass and at every later one while the head waits, the queued jobs,
  scanned in submit order, start if they fit the free units and end, by their
  requested time, strictly before the shadow time (``now + requested <
  shadow``); there is no "extra units" rule for jobs running past it. A
  running job past its requested end keeps its requested end (the shadow
  time may be in the past: then nothing backfills). It needs a committed head
  (``commit = true``; EASY's head, the oldest job, always is);
* ``wait = "rlscheduler"`` (WFP3 and UNICEP, their keys only,
  ``schedlab.engines.batch.policies.priority``).

The queue is kept as RLScheduler keeps it, a list in arrival order that is
sorted in place, stably: by the policy's key when a head is chosen (the first
job after the sort is the head; ties keep the list's order, so jobs of equal
key come in the order the previous sorts left them), and by submit time before
each backfilling scan. Keeping its list, not a re-derived order, is what makes
its ties -- jobs of one submit time scanned in key order, not job order --
come out the same.

The pass is a coroutine (:meth:`RLSchedulerLoop.decisions`), as
:meth:`schedlab.engines.batch.policies.priority.PriorityPolicy.decisions` is:
it yields when a head must be chosen and is sent the choice (the policy's
:meth:`RLSchedulerLoop.choose`, or an agent's). Such runs take the Python
reference path (the engine's compiled kernels implement schedlab's loop only;
Batch-v0's kernel has this loop with an agent choosing every head:
``schedlab.engines.batch.gym_kernel._rl_run``, checked against this class).

Cost per pass: a sort of the queue per head chosen and per scan
(O(q log q), nearly sorted lists), O(r log r) once per blocked head for
the shadow time.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

from schedlab.engines.batch.policies.base import run_pass

#: The options' values that select RLScheduler's rules (``backfill``, ``wait``; ``passes``).
RLSCHEDULER = "rlscheduler"
EVENT = "event"


class RLSchedulerLoop:
    """The queue, the committed head, its shadow time and the running jobs of
    one run under RLScheduler's loop. ``key(job, now)``: the head's order (the
    lowest first, ties by the list's order); ``commit``: keep the head until it
    starts; ``backfill``: RLScheduler's backfilling (needs ``commit``);
    ``event_passes``: one pass per event; ``chooser``: who picks the head (default: :meth:`choose`)."""

    def __init__(
        self,
        machine: Any,
        key: Callable[[int, float], Any],
        *,
        commit: bool,
        backfill: bool,
        event_passes: bool,
        chooser: Callable[[float], int] | None = None,
    ) -> None:
        if backfill and not commit:
            raise ValueError('backfill = "rlscheduler" needs commit = true (the shadow time is the committed head\'s)')
        self.machine = machine
        self.key = key
        #: Who picks a head (``chooser(now)``, reading :attr:`jobs` and :attr:`free`): a policy's own
        #: ``choose`` (a learned agent's), or by default RLScheduler's sort by ``key`` (:meth:`choose`).
        self.chooser = chooser or self.choose
        self.commit = commit
        self.backfill = backfill
        self.event_passes = event_passes
        self.jobs: list[int] = []  # the queue, as RLScheduler keeps it (module docstring)
        self.head: int | None = None  # the committed head
        self.shadow: float | None = None  # its shadow time, once it has blocked (backfill)
        #: Each blocked head's shadow time (backfill; one store per head): tests check that with
        #: exact estimates no head starts later (its backfilled jobs end strictly before).
        self.reservation: dict[int, float] = {}
        self.req_end: dict[int, float] = {}  # running jobs -> requested end (backfill)
        #: The running jobs as RLScheduler lists them (backfill): in start order, sorted stably by
        #: requested end at each shadow time; jobs ending at one instant are released in this order.
        self.running: list[int] = []
        self.arrived: list[int] = []  # this instant's events, in the engine's order
        self.ended: list[int] = []
        self.free = machine.free  # free units at the current decision (read by an environment)
        #: Every job started, in start order (an environment reads its new entries for step rewards).
        self.launched: list[int] = []

    def arrive(self, job: int) -> None:
        self.arrived.append(job)

    def complete(self, job: int) -> None:
        self.ended.append(job)

    def choose(self, now: float) -> int:
        """RLScheduler's pick: the list sorted stably by key, its first job."""
        key = self.key
        self.jobs.sort(key=lambda j: key(j, now))
        return self.jobs[0]

    def schedule(self, now: float) -> list[int]:
        return run_pass(self.decisions(now), lambda: self.chooser(now))

    def decisions(self, now: float) -> Generator[None, int, list[int]]:
        """This instant's passes (one, or one per event): yields when a head
        must be chosen (``self.free``: the free units then; ``self.jobs``: the
        queue) and is sent the chosen job; returns the jobs started, in order."""
        out: list[int] = []
        need = self.machine.need
        arrived, ended = self.arrived, self.ended
        self.arrived, self.ended = [], []
        if not self.event_passes:
            self.jobs.extend(arrived)
            for j in ended:
                self._release(j)
            yield from self._pass(now, self.machine.free, out)
            return out
        # The engine has freed the units of every job ending now: take back those not yet released.
        free = self.machine.free - sum(need[j] for j in ended)
        for j in arrived:
            self.jobs.append(j)
            free = yield from self._pass(now, free, out)
        if self.backfill and len(ended) > 1:
            ending = set(ended)
            ended = [j for j in self.running if j in ending]
        for j in ended:
            self._release(j)
            free += need[j]
            free = yield from self._pass(now, free, out)
        return out

    def _release(self, job: int) -> None:
        if self.backfill:
            del self.req_end[job]
            self.running.remove(job)

    def _start(self, job: int, now: float, out: list[int]) -> None:
        self.jobs.remove(job)
        if self.backfill:
            self.req_end[job] = now + self.machine.requested[job]
            self.running.append(job)
        out.append(job)
        self.launched.append(job)

    def _pass(self, now: float, free: int, out: list[int]) -> Generator[None, int, int]:
        """One pass with ``free`` units free: heads start while they fit; a
        blocked head gets its shadow time once and the queue a backfilling scan.
        Returns the units still free."""
        need, jobs = self.machine.need, self.jobs
        while jobs:
            head = self.head
            if head is None:
                if not self.commit and min(need[j] for j in jobs) > free:
                    break  # nothing fits: no choice could change this pass
                self.free = free
                head = yield
                if self.commit:
                    self.head = head
            nh = need[head]
            if nh <= free:
                free -= nh
                self._start(head, now, out)
                self.head = None
                self.shadow = None
                continue
            if self.backfill:
                if self.shadow is None:
                    self.shadow = shadow_time(self.running, self.req_end, need, free, nh, now)
                    self.reservation[head] = self.shadow
                free = self._scan(now, free, out)
            break
        self.free = free
        return free

    def _scan(self, now: float, free: int, out: list[int]) -> int:
        """Start the queued jobs (submit order) that fit and end strictly before the shadow time."""
        shadow, need, requested, submit = self.shadow, self.machine.need, self.machine.requested, self.machine.submit
        assert shadow is not None
        self.jobs.sort(key=submit.__getitem__)
        for j in list(self.jobs):
            nj = need[j]
            if nj <= free and now + requested[j] < shadow:
                free -= nj
                self._start(j, now, out)
        return free


def shadow_time(
    running: list[int], req_end: dict[int, float], need: list[int], free: int, nh: int, now: float
) -> float:
    """RLScheduler's shadow time for a head of need ``nh``: ``running`` sorted
    (in place, stably) by requested end, the first requested end at which
    ``free`` plus their units covers ``nh`` (``now`` if none is running:
    never, a blocked head waits for a running job)."""
    running.sort(key=req_end.__getitem__)
    avail = free
    shadow = now
    for j in running:
        avail += need[j]
        shadow = req_end[j]
        if avail >= nh:
            break
    return shadow
