"""Conservative backfilling (Mu'alem & Feitelson, IEEE TPDS 2001), for the
batch engine.

EASY protects only the head of the queue: a backfilled job may delay the
second queued job indefinitely. Conservative backfilling protects everyone:
every queued job holds a *reservation* in the availability profile (free
units over time, computed from the users' requested times), made when it
arrives at the earliest time it fits around the running jobs and the
reservations of the jobs before it. A job starts when its reservation comes;
"backfilling" is simply that a newcomer's earliest fit may be now, in a hole
before earlier jobs' reservations, which it then cannot disturb.

Jobs usually end before their requested time. The profile then has a new
hole, and the schedule is *compressed*: each queued job, in arrival order,
gives back its reservation and takes the earliest fit again -- which is never
later, since its old slot is still free and no other job can take it (the
jobs after it keep their reservations while it moves). A job therefore never
starts later than the reservation it got on arrival, as long as no running
job outlives its requested time (``promised`` keeps those first
reservations; the tests check the guarantee).

Compression is repeated until no reservation moves (one pass usually
suffices). A single pass is not enough here: a job moved early in the pass
may be left reserved at the end of a later job's old reservation, a time at
which nothing happens if that later job then moves too -- and the batch
engine calls a policy only at arrivals and completions (it has no timer a
policy could set), so the job would start at the next event instead.

Overruns. A running job that is still running at its requested end has
broken every promise that counted on its units. It is then assumed to end
at any moment (held until the next representable instant, as EASY assumes it
ends now) and all reservations are rebuilt in arrival order; the guarantee
no longer holds for that stretch of the schedule.

Order at an instant (the engine calls ``complete`` for the jobs ending now,
``arrive`` for the jobs submitted now, then ``schedule(now)``): early ends
are released and the schedule compressed, then the newcomers reserve in
arrival order, then every job reserved at ``now`` starts. ``complete`` and
``arrive`` only record the event: the engine updates ``machine.now`` after
them, so the time is only known in ``schedule``.

Cost. The profile has P <= 2 (running + queued) + 1 breakpoints; an arrival
costs O(P), a start O(log Q), a compression O(Q P) per pass. That is the
price of conservative backfilling (every queued job is re-placed); EASY, which
keeps a single reservation, is cheaper.
"""

from __future__ import annotations

import math

from sortedcontainers import SortedList

from mypolicies.profile import Profile, span_end
from schedlab.api import batch


class ConservativeBackfilling(batch.Policy):
    """Every queued job keeps a reservation from the requested times; no
    backfilled job may delay any of them (see the module docstring)."""

    name = "Conservative"
    summary = "conservative backfilling: every queued job has a reservation; backfilling never delays one"

    def __init__(self, machine: batch.Machine) -> None:
        super().__init__(machine)
        self.profile = Profile(machine.capacity, machine.now)
        self.queue: dict[int, float] = {}  # queued job -> reserved start; insertion order = arrival order
        self.reserved = SortedList()  # (reserved start, arrival number, job)
        self.arrival: dict[int, int] = {}
        self.planned_end: dict[int, float] = {}  # running job -> start + requested
        self.by_end = SortedList()  # (planned end, job) of the running jobs
        self.promised: dict[int, float] = {}  # job -> the reservation it got on arrival
        self.rebuilds = 0  # overruns (or a missed reservation) that forced a rebuild
        self._arrived: list[int] = []
        self._ended: list[int] = []
        self._count = 0

    # -- the seam: record, decide in schedule ----------------------------------
    def arrive(self, job: int) -> None:
        self._arrived.append(job)

    def complete(self, job: int) -> None:
        self._ended.append(job)

    def schedule(self, now: float) -> list[int]:
        prof, need = self.profile, self.machine.need
        prof.advance(now)
        early = False
        for job in self._ended:
            end = self.planned_end.pop(job)
            self.by_end.remove((end, job))
            if end > now:  # ended before its requested time: a new hole
                prof.release(now, end, need[job])
                early = True
        self._ended.clear()
        overrun = [job for _, job in self.by_end.irange(maximum=(now, math.inf))]
        if overrun or (self.reserved and self.reserved[0][0] < now):
            for job in overrun:  # assume it ends at any moment
                self.by_end.remove((self.planned_end[job], job))
                end = math.nextafter(now, math.inf)
                self.planned_end[job] = end
                self.by_end.add((end, job))
                prof.hold(now, end, need[job])
            self._rebuild()
        elif early:
            self._compress()
        for job in self._arrived:
            self.arrival[job] = self._count
            self._count += 1
            start = self._reserve(job)
            self.promised[job] = start
        self._arrived.clear()
        out: list[int] = []
        while self.reserved and self.reserved[0][0] <= now:
            start, _, job = self.reserved.pop(0)
            del self.queue[job]
            del self.arrival[job]
            end = span_end(start, self.machine.requested[job])  # the reservation's own interval: the hold is unchanged
            self.planned_end[job] = end
            self.by_end.add((end, job))
            out.append(job)
        return out

    # -- reservations ------------------------------------------------------------
    def reservation(self, job: int) -> float | None:
        """The current reserved start of a queued job (None if not queued)."""
        return self.queue.get(job)

    def _reserve(self, job: int) -> float:
        units, length = self.machine.need[job], self.machine.requested[job]
        start = self.profile.earliest(units, length)
        self.profile.hold(start, span_end(start, length), units)
        self.queue[job] = start
        self.reserved.add((start, self.arrival[job], job))
        return start

    def _unreserve(self, job: int) -> None:
        start = self.queue[job]
        self.profile.release(start, span_end(start, self.machine.requested[job]), self.machine.need[job])
        self.reserved.remove((start, self.arrival[job], job))

    def _compress(self) -> None:
        """Each queued job, in arrival order, to its earliest fit; again
        until nothing moves. A job only ever moves earlier."""
        moved = True
        while moved:
            moved = False
            for job in list(self.queue):
                before = self.queue[job]
                self._unreserve(job)
                if self._reserve(job) < before:
                    moved = True

    def _rebuild(self) -> None:
        """All reservations again, in arrival order (after an overrun)."""
        self.rebuilds += 1
        for job in self.queue:
            self._unreserve(job)
        for job in list(self.queue):
            self._reserve(job)
