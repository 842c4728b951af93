"""Fair sojourn protocol with exact sizes (FSP) or estimates (FSPE), the
paper's fixes FSPE+PS and FSPE+LAS, and PSBS (Algorithm 1, with weights).

All of them run a *virtual* GPS system on the sizes the scheduler believes and
serve, in the real system, the job that finishes first there. A job is *late*
when it has finished in the virtual system but not in the real one (§3.2); the
policies differ only in how late jobs are served:

=========  ===============================================================
FSPE       one at a time, in the order they became late (schedsim ``FSP``)
FSPE+PS    all late jobs share the server equally
FSPE+LAS   LAS among the late jobs
PSBS       GPS among the late jobs by weight; the virtual system is GPS too
=========  ===============================================================

FSP and FSPE+PS ignore weights; PSBS with equal weights is FSPE+PS, and with
exact sizes it is FSP (the paper's §4.2, checked in the tests).

The virtual system is Algorithm 1's *virtual lag*: job i finishes virtually
when the global lag g reaches g_i = g(arrival) + s_i / w_i, and g grows at
1 / w_v per unit of time (w_v the total weight in the virtual system), so no
per-job update is ever needed -- O(log n) per event.

Deviation from the printed Algorithm 1, on purpose: when a job that has not
finished in the real system finishes virtually (it becomes late, the O branch
of ``VirtualJobCompletion``), we also subtract its weight from w_v. The printed
text omits it, which would keep a late job's weight in the virtual GPS forever
and slow every later virtual completion; a job that finished virtually has
left the virtual system (the authors' simulator removes it from its virtual
queue either way).
"""

from __future__ import annotations

import heapq
from collections import deque

from schedlab.engines.queue.policies.base import QueuePolicy
from schedlab.engines.queue.policies.las import LeastAttained
from schedlab.engines.queue.sim.engine import INF, Server, tie_key


class VirtualLag:
    """The emulated GPS system of Algorithm 1: heaps O and E ordered by g_i.

    O holds jobs running in both systems, E the "early" jobs already finished in
    the real system but still running virtually. Entries are (tie key of g_i,
    job, g_i, w_i): lags equal to ~1e-12 relative tie, and ties go by arrival
    order (O before E); the exact g_i times the virtual completion.
    """

    def __init__(self) -> None:
        self.g = 0.0  # virtual lag
        self.t = 0.0  # time of the last update
        self.w_v = 0.0  # total weight in the virtual system
        self.count = 0  # jobs in the virtual system (resets g and w_v exactly when 0)
        self.O: list[tuple[float, int, float, float]] = []  # (tie key, job, g_i, w_i)
        self.E: list[tuple[float, int, float, float]] = []

    def _update(self, t: float) -> None:
        if self.w_v > 0.0:
            self.g += (t - self.t) / self.w_v
        self.t = t

    def arrive(self, t: float, job: int, size: float, weight: float) -> None:
        self._update(t)
        g_i = self.g + size / weight
        heapq.heappush(self.O, (tie_key(g_i), job, g_i, weight))
        self.w_v += weight
        self.count += 1

    def head(self) -> int | None:
        """The job to serve when nothing is late: the first to finish virtually."""
        return self.O[0][1] if self.O else None

    def _next_from_o(self) -> bool:
        return bool(self.O) and (not self.E or self.O[0][:2] <= self.E[0][:2])

    def next_completion_time(self) -> float:
        if not (self.O or self.E):
            return INF
        g_next = (self.O if self._next_from_o() else self.E)[0][2]
        return self.t + self.w_v * (g_next - self.g)

    def complete_next(self, t: float) -> int | None:
        """Apply the announced virtual completion at ``t``; return the job if it
        became late (it was still running in the real system), else None."""
        from_o = self._next_from_o()
        _, job, g_i, weight = heapq.heappop(self.O if from_o else self.E)
        self.t = t
        if g_i > self.g:  # the lag reached g_i exactly: equal tags finish at this same instant
            self.g = g_i
        self.count -= 1
        if self.count == 0:
            self.w_v = 0.0
            self.g = 0.0
        else:
            self.w_v -= weight
        return job if from_o else None

    def real_completion_of_head(self) -> None:
        """The head of O finished in the real system: it moves to E."""
        heapq.heappush(self.E, heapq.heappop(self.O))


class FSPE(QueuePolicy):
    """FSP on estimates; late jobs are served one at a time, oldest-late first."""

    name = "FSPE"
    summary = "fair sojourn protocol on estimates; late jobs served one at a time"
    use_weights = False

    def __init__(self, server: Server) -> None:
        super().__init__(server)
        self.virtual = VirtualLag()
        self.late: set[int] = set()
        self._init_late()

    # Late-job service, overridden by the variants --------------------------------
    def _init_late(self) -> None:
        self.late_order: deque[int] = deque()

    def _add_late(self, job: int, weight: float) -> None:
        self.late_order.append(job)

    def _remove_late(self, job: int) -> None:
        self.late_order.popleft()  # only the first late job is ever served

    def _serve_late(self) -> None:
        self.server.serve_job(self.late_order[0])

    # The seam ---------------------------------------------------------------------
    def _reschedule(self) -> None:
        if self.late:
            self._serve_late()
        else:
            self.server.serve_job(self.virtual.head())

    def arrive(self, job: int, estimate: float, weight: float) -> None:
        self.virtual.arrive(self.server.now, job, estimate, weight if self.use_weights else 1.0)
        self._reschedule()

    def depart(self, job: int) -> None:
        if job in self.late:
            self.late.discard(job)
            self._remove_late(job)
        else:
            self.virtual.real_completion_of_head()
        self._reschedule()

    def next_event_time(self) -> float:
        return self.virtual.next_completion_time()

    def on_event(self) -> None:
        job = self.virtual.complete_next(self.server.now)
        if job is not None:
            self.late.add(job)
            self._add_late(job, self.weights_of_late(job))
        self._reschedule()

    def weights_of_late(self, job: int) -> float:
        return 1.0


class FSP(FSPE):
    """FSP with exact sizes: no job ever becomes late, and none finishes later than in PS."""

    name = "FSP"
    summary = "fair sojourn protocol with exact sizes (never later than PS)"
    exact_size = True


class PSBS(FSPE):
    """PSBS: FSPE+PS generalised to weights (GPS in the virtual system and
    among late jobs), the O(log n) Algorithm 1."""

    name = "PSBS"
    summary = "practical size-based scheduler: FSPE with GPS among late jobs, weights honoured"
    use_weights = True

    def _init_late(self) -> None:
        self.late_pool = self.server.new_pool()
        self.weight: dict[int, float] = {}

    def arrive(self, job: int, estimate: float, weight: float) -> None:
        self.weight[job] = weight if self.use_weights else 1.0
        super().arrive(job, estimate, weight)

    def weights_of_late(self, job: int) -> float:
        return self.weight[job]

    def _add_late(self, job: int, weight: float) -> None:
        self.server.place(job, self.late_pool, weight)

    def _remove_late(self, job: int) -> None:
        pass  # the engine already removed it from the late pool

    def depart(self, job: int) -> None:
        del self.weight[job]
        super().depart(job)

    def _serve_late(self) -> None:
        self.server.serve(self.late_pool)


class FSPEPlusPS(PSBS):
    """FSPE, with all late jobs sharing the server equally (PSBS without weights)."""

    name = "FSPE+PS"
    summary = "FSPE, but late jobs share the server equally (PS)"
    use_weights = False


class FSPEPlusLAS(FSPE):
    """FSPE, with LAS among the late jobs."""

    name = "FSPE+LAS"
    summary = "FSPE, but late jobs are served least-attained first (LAS)"

    def _init_late(self) -> None:
        self.late_las = LeastAttained(self.server)

    def _add_late(self, job: int, weight: float) -> None:
        self.late_las.add(job)

    def _remove_late(self, job: int) -> None:
        self.late_las.remove(job)

    def _serve_late(self) -> None:
        self.server.serve(self.late_las.pool())

    def next_event_time(self) -> float:
        return min(self.virtual.next_completion_time(), self.late_las.next_event_time())

    def on_event(self) -> None:
        if self.virtual.next_completion_time() <= self.late_las.next_event_time():
            super().on_event()
        else:
            self.late_las.on_event()
            self._reschedule()
