"""EASY backfilling (Lifka 1995; Mu'alem & Feitelson 2001): the DFRS paper's
standard batch baseline.

Algorithm (one pass at each event instant ``now``; ``free`` = free units):

1. While the head of the queue (submit order, ties by job order) fits in
   ``free``, start it; the next job becomes the head.
2. Otherwise the head gets a *reservation*: walking the running jobs in order
   of their *requested* ends (start + requested_time, ties by job), the
   shadow time is the first requested end at which ``free`` plus the units of
   the jobs ending by then covers the head's need; ``extra`` = the units free
   at the shadow time (every job with requested end <= shadow counted) minus
   the head's need.
3. Backfilling: each later queued job, in queue order, that fits in the
   currently free units starts now if either (a) it ends, by its requested
   time, no later than the shadow time (``now + requested <= shadow``), or
   (b) its need is <= ``extra``; in case (b) -- it runs past the shadow time --
   ``extra`` is reduced by its need. Both rules keep the head's reservation:
   at the shadow time the head's need is free whatever the backfilled jobs do
   (as long as running jobs keep their requested times). The scan stops early
   when no unit is free.

Jobs end at their actual runtimes, usually before their requested ends, so
the reservation is recomputed from scratch at every pass (it can only move
earlier when estimates are never exceeded). A running job that has outlived
its requested time is assumed to end now (its requested end is taken as
``max(start + requested, now)``): the shadow time is never in the past.

With ``record_reservations=True`` the policy keeps, for each job, the
reservation computed when it first became the head (``now`` if it started
right away) in ``self.reservation`` -- tests check that with exact estimates
no head starts later than that.

After every pass ``self.head_reservation`` is (head, shadow time, head's
need) when the head could not start, else None: what a schedule view draws
(one attribute store per pass).

The authors' simulator's rule (``[system] easy_backfill = "vcsim"``, read
from ``machine.easy_backfill``; docs/dfrs.md): vcsim (github
marklee77/vcsim, ``easy_sched`` in ``results/scripts/sim.py``) pins the
head's reservation to *hosts* when it is made and keeps it until it starts:

2'. The reservation's units are the head's need taken from the running jobs
    ending (requested end) by the shadow time, latest end first (ties: the
    later job first), the rest from the free units; it is made once and kept
    (its shadow time too) until the head starts, at the first pass where it
    fits: with exact estimates that is its shadow time, when vcsim starts it
    (before then fewer than its need are free: the units free by any earlier
    time number fewer than its need); with requested times (vcsim has
    none) jobs ending early may let it start sooner, and it never waits for
    an instant with no event.
3'. While it is held, a later job starts now only if its need is <= the free
    units *outside* the reservation (the free units minus the reserved units
    already free), whatever its length: vcsim's test for rule (a),
    ``time + job.runtime <= resalloc.starttime``, compares with the
    reservation's start time, which is ``None`` until it starts, and in
    Python 2 a number is never ``<= None``; so rule (a) never applies, and
    every backfilled job takes units outside the reservation, as rule (b)
    does, without being counted against ``extra`` (the reservation's units
    are known individually).

With exact estimates, the shadow time is the same as the canonical rule's
and the head starts then in both; only the backfilled jobs differ (a short
job that fits in the free units but not outside the reservation waits).

RLScheduler's rule (``backfill = "rlscheduler"``, a parameter; with
``passes = "event"`` a pass per arrival and per completion as it makes them):
its backfilling around the oldest job, run by
``schedlab.engines.batch.policies.rlscheduler`` (its module docstring: a
shadow time computed once and kept, strict ``<``, no extra-units rule).

Cost per pass: O(log r) per start (a sorted list of running jobs by requested
end), O(r) to find the shadow time and O(q) for the backfill scan (q queued
jobs), as in the canonical algorithm.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Literal

from sortedcontainers import SortedList

from schedlab.engines.batch.policies.base import BatchPolicy
from schedlab.engines.batch.policies.rlscheduler import EVENT, RLSCHEDULER, RLSchedulerLoop
from schedlab.errors import UserError

#: ``[system] easy_backfill`` values (``schedlab.engines.batch.sim.system.BATCH``): the canonical rule,
#: or the DFRS authors'.
CANONICAL, VCSIM = "canonical", "vcsim"


class EASY(BatchPolicy):
    name = "EASY"
    summary = "FCFS + EASY backfilling: the head job's reservation (from requested times) is never delayed"

    def __init__(
        self,
        machine,
        *,
        record_reservations: bool = False,
        backfill: Literal["easy", "rlscheduler"] = "easy",
        passes: Literal["instant", "event"] = "instant",
    ) -> None:
        super().__init__(machine)
        try:
            self.check_params(backfill=backfill, passes=passes)
        except ValueError as err:
            raise TypeError(str(err)) from None
        self.vcsim = getattr(machine, "easy_backfill", CANONICAL) == VCSIM
        #: RLScheduler's backfilling (``backfill = "rlscheduler"``): its loop with the oldest job as the head.
        self.loop: RLSchedulerLoop | None = None
        if backfill == RLSCHEDULER:
            if self.vcsim:
                raise UserError(
                    'batch engine: EASY\'s backfill = "rlscheduler" is not [system] easy_backfill = "vcsim"\'s rule: '
                    'leave easy_backfill at "canonical"'
                )
            submit = machine.submit
            self.loop = RLSchedulerLoop(
                machine, lambda j, now: submit[j], commit=True, backfill=True, event_passes=passes == EVENT
            )
        #: vcsim's rule: the held reservation (head, shadow time) or None, the reserved units of each
        #: running job (job -> units) and the reserved units already free.
        self.held: tuple[int, float] | None = None
        self.reserved_busy: dict[int, int] = {}
        self.reserved_free = 0
        self.queue: dict[int, None] = {}  # insertion-ordered: submit order, O(1) removal
        self.running = SortedList()  # (requested end, job)
        self.req_end: dict[int, float] = {}
        self.reservation: dict[int, float] | None = {} if record_reservations else None
        self.head_reservation: tuple[int, float, int] | None = None

    @classmethod
    def check_params(
        cls, *, record_reservations: bool = False, backfill: str = "easy", passes: str = "instant"
    ) -> None:
        """The rules between the parameters (ValueError: the user's message)."""
        if passes == EVENT and backfill != RLSCHEDULER:
            raise ValueError('passes = "event" needs backfill = "rlscheduler" (EASY\'s pass is per instant)')
        if record_reservations and backfill == RLSCHEDULER:
            raise ValueError("record_reservations records EASY's reservations, not backfill = \"rlscheduler\"'s")

    def arrive(self, job: int) -> None:
        if self.loop is not None:
            self.loop.arrive(job)
            return
        self.queue[job] = None

    def complete(self, job: int) -> None:
        if self.loop is not None:
            self.loop.complete(job)
            return
        self.running.remove((self.req_end.pop(job), job))
        if self.held is not None:
            self.reserved_free += self.reserved_busy.pop(job, 0)

    def _start(self, job: int, now: float) -> None:
        e = now + self.machine.requested[job]
        self.req_end[job] = e
        self.running.add((e, job))

    def _note(self, job: int, when: float) -> None:
        """Record ``job``'s first reservation (its start, or the shadow time), when recording."""
        if self.reservation is not None and job not in self.reservation:
            self.reservation[job] = when

    def _launch(self, jobs: list[int], now: float, out: list[int]) -> None:
        """Start the queued ``jobs`` now, in order, and add them to ``out``."""
        for job in jobs:
            del self.queue[job]
            self._start(job, now)
        out.extend(jobs)

    def schedule(self, now: float) -> list[int]:
        if self.loop is not None:
            return self.loop.schedule(now)
        if self.vcsim:
            return self._schedule_vcsim(now)
        out: list[int] = []
        queue, need = self.queue, self.machine.need
        free = self.machine.free
        self.head_reservation = None
        while queue:
            head = next(iter(queue))
            nh = need[head]
            if nh <= free:
                self._note(head, now)
                self._launch([head], now, out)
                free -= nh
                continue
            shadow, extra = reservation(self.running, need, free, now, nh)
            self.head_reservation = (head, shadow, nh)
            self._note(head, shadow)
            if free > 0:
                it = iter(queue)
                next(it)
                self._launch(backfill(it, need, self.machine.requested, free, now, shadow, extra), now, out)
            break
        return out

    def _schedule_vcsim(self, now: float) -> list[int]:
        """One pass under vcsim's rule (2' and 3' of the module docstring)."""
        out: list[int] = []
        queue, need = self.queue, self.machine.need
        free = self.machine.free
        self.head_reservation = None
        while queue:
            head = next(iter(queue))
            nh = need[head]
            held = self.held
            if nh <= free:
                self._note(head, now)
                self.held = None
                self.reserved_busy = {}
                self.reserved_free = 0
                self._launch([head], now, out)
                free -= nh
                continue
            if held is None:
                shadow, _extra = reservation(self.running, need, free, now, nh)
                self.held = held = (head, shadow)
                self.reserved_busy, self.reserved_free = reserve(self.running, need, shadow, nh)
                self._note(head, shadow)
            self.head_reservation = (head, held[1], nh)
            outside = free - self.reserved_free
            if outside > 0:
                it = iter(queue)
                next(it)
                started = []
                for job in it:
                    nj = need[job]
                    if nj <= outside:
                        outside -= nj
                        started.append(job)
                        if outside == 0:
                            break
                self._launch(started, now, out)
            break
        return out


def reserve(running: SortedList, need: list[int], shadow: float, nh: int) -> tuple[dict[int, int], int]:
    """vcsim's reserved units for a head of need ``nh`` and its shadow time
    (rule 2'): (units of each running job, units taken from the free ones).
    vcsim sorts the hosts by (available time, host) and takes the ``nh``
    latest-available hosts among those available by the shadow time: the
    running jobs ending by then, latest first (ties: the later job first;
    with exact estimates tied jobs end together, so the choice does not
    matter; a job past its requested end counts as running), then free
    hosts."""
    busy: dict[int, int] = {}
    left = nh
    k = running.bisect_right((shadow, math.inf)) - 1
    while left > 0 and k >= 0:
        j = running[k][1]
        take = min(left, need[j])
        busy[j] = take
        left -= take
        k -= 1
    return busy, left


def reservation(running: SortedList, need: list[int], free: int, now: float, nh: int) -> tuple[float, int]:
    """The head's reservation (steps 2 of the module docstring): (shadow time,
    extra units), from the running jobs as (requested end, job) in order."""
    avail = free
    shadow = now
    k, r = 0, len(running)
    while k < r:
        e, j = running[k]
        avail += need[j]
        k += 1
        if avail >= nh:
            shadow = e if e > now else now
            break
    while k < r:  # every job ending by the shadow time frees its units then
        e, j = running[k]
        if e > shadow:
            break
        avail += need[j]
        k += 1
    return shadow, avail - nh


def backfill(
    candidates: Iterable[int],
    need: list[int],
    requested: list[float],
    free: int,
    now: float,
    shadow: float,
    extra: int,
) -> list[int]:
    """The jobs of ``candidates`` (in order) that start now without delaying
    the head's reservation (step 3 of the module docstring); ``free`` > 0."""
    started = []
    for job in candidates:
        nj = need[job]
        if nj > free:
            continue
        if now + requested[job] <= shadow:
            pass
        elif nj <= extra:
            extra -= nj
        else:
            continue
        free -= nj
        started.append(job)
        if free == 0:
            break
    return started
