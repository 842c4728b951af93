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

Cost per pass: O(log r) per start (a sorted list of running jobs by requested
end), O(r) to find the shadow time and O(q) for the backfill scan (q queued
jobs), as in the canonical algorithm.
"""

from __future__ import annotations

from collections.abc import Iterable

from sortedcontainers import SortedList

from schedlab.policies.batch.base import BatchPolicy


class EASY(BatchPolicy):
    name = "EASY"
    summary = "FCFS + EASY backfilling: the head job's reservation (from requested times) is never delayed"

    def __init__(self, machine, *, record_reservations: bool = False) -> None:
        super().__init__(machine)
        self.queue: dict[int, None] = {}  # insertion-ordered: submit order, O(1) removal
        self.running = SortedList()  # (requested end, job)
        self.req_end: dict[int, float] = {}
        self.reservation: dict[int, float] | None = {} if record_reservations else None
        self.head_reservation: tuple[int, float, int] | None = None

    def arrive(self, job: int) -> None:
        self.queue[job] = None

    def complete(self, job: int) -> None:
        self.running.remove((self.req_end.pop(job), job))

    def _start(self, job: int, now: float) -> None:
        e = now + self.machine.requested[job]
        self.req_end[job] = e
        self.running.add((e, job))

    def schedule(self, now: float) -> list[int]:
        out: list[int] = []
        queue, need = self.queue, self.machine.need
        free = self.machine.free
        record = self.reservation
        self.head_reservation = None
        while queue:
            head = next(iter(queue))
            nh = need[head]
            if nh <= free:
                if record is not None and head not in record:
                    record[head] = now
                del queue[head]
                free -= nh
                self._start(head, now)
                out.append(head)
                continue
            shadow, extra = reservation(self.running, need, free, now, nh)
            self.head_reservation = (head, shadow, nh)
            if record is not None and head not in record:
                record[head] = shadow
            if free > 0:
                it = iter(queue)
                next(it)
                started = backfill(it, need, self.machine.requested, free, now, shadow, extra)
                for job in started:
                    del queue[job]
                    self._start(job, now)
                out.extend(started)
            break
        return out


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
