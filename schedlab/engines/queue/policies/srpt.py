"""Shortest remaining processing time, with exact sizes (SRPT) or estimates
(SRPTE), and the paper's two fixes for late jobs (SRPTE+PS, SRPTE+LAS).

The scheduler's view of a job is its *estimated remaining* work: estimate
minus attained service. A job whose estimated remaining reaches zero is *late*
(§3.2): plain SRPTE keeps serving it (no newcomer, whose estimate is positive,
can preempt it), which is the monopolisation the paper identifies. SRPTE+PS
serves all late jobs and the highest-priority non-late job in PS; SRPTE+LAS
serves the least-attained late jobs together with that non-late job, in equal
shares -- the semantics of the authors' simulator (schedsim ``SRPT_plus_LAS``),
which the paper names as the precise description (§4.1).

Only the head (the highest-priority non-late job) has a changing key, so the
waiting jobs sit in a heap keyed by their estimated remaining work when they
were last preempted: O(log n) per event. Ties: keys are compared as
`tie_key`s (equal to ~1e-12 relative); on equal keys the earlier arrival goes
first, and a newcomer preempts the head only if strictly smaller.
"""

from __future__ import annotations

import heapq
from abc import abstractmethod

from schedlab.engines.queue.policies.base import QueuePolicy
from schedlab.engines.queue.policies.las import LeastAttained
from schedlab.engines.queue.sim.engine import INF, Pool, Server, tie_key


class SRPTE(QueuePolicy):
    """SRPT on estimates: the head job holds the whole server."""

    name = "SRPTE"
    summary = "shortest remaining processing time on estimated sizes; late jobs are never preempted"

    def __init__(self, server: Server) -> None:
        super().__init__(server)
        self.waiting: list[tuple[float, int, float]] = []  # (tie key, job, estimated remaining)
        self.head: int | None = None
        self.head_key = 0.0  # estimated remaining of the head when it became head
        self.head_att = 0.0  # its attained service at that moment

    # ---- the head ---------------------------------------------------------------
    def head_remaining(self) -> float:
        """The head's estimated remaining work (only asked while there is a head)."""
        head = self.head
        if head is None:
            raise RuntimeError("SRPTE: no head job has a remaining work")
        return self.head_key - (self.server.attained(head) - self.head_att)

    def _set_head(self, job: int | None, key: float = 0.0) -> None:
        self.head = job
        if job is not None:
            self.head_key = key
            self.head_att = self.server.attained(job)

    def _next_head(self) -> None:
        if self.waiting:
            _, job, key = heapq.heappop(self.waiting)
            self._set_head(job, key)
        else:
            self.head = None

    def _admit(self, job: int, estimate: float) -> bool:
        """Make ``job`` the head or queue it; True if it displaced a head."""
        if self.head is None:
            self._set_head(job, estimate)
            return False
        remaining = self.head_remaining()
        if tie_key(estimate) < tie_key(remaining):
            heapq.heappush(self.waiting, (tie_key(remaining), self.head, remaining))
            self._set_head(job, estimate)
            return True
        heapq.heappush(self.waiting, (tie_key(estimate), job, estimate))
        return False

    # ---- the seam -----------------------------------------------------------------
    def arrive(self, job: int, estimate: float, weight: float) -> None:
        self._admit(job, estimate)
        self.server.serve_job(self.head)

    def depart(self, job: int) -> None:
        self._next_head()
        self.server.serve_job(self.head)


class SRPT(SRPTE):
    """SRPT with exact sizes: optimal mean sojourn time."""

    name = "SRPT"
    summary = "shortest remaining processing time with exact sizes (optimal mean sojourn time)"
    exact_size = True


class _SRPTELate(SRPTE):
    """Shared part of SRPTE+PS and SRPTE+LAS: the head's lateness is an event."""

    def next_event_time(self) -> float:
        if self.head is None:
            return INF
        return self.server.now + self.server.time_to_attain(self.head, self.head_remaining())

    def _head_becomes_late(self) -> None:
        late = self.head
        if late is None:
            raise RuntimeError(f"{self.name}: a lateness event without a head job")
        self._next_head()
        self._add_late(late)

    @abstractmethod
    def _add_late(self, job: int) -> None:
        """Take ``job``, which just became late, into the late jobs' share."""


class SRPTEPlusPS(_SRPTELate):
    """Late jobs and the head non-late job share the server in PS."""

    name = "SRPTE+PS"
    summary = "SRPTE, but all late jobs and the head non-late job share the server (PS)"

    def __init__(self, server: Server) -> None:
        super().__init__(server)
        self.pool: Pool = server.new_pool()
        server.serve(self.pool)

    def _add_late(self, job: int) -> None:
        pass  # it stays in the eligible pool

    def _sync(self) -> None:
        if self.head is not None:
            self.server.place(self.head, self.pool, 1.0)

    def arrive(self, job: int, estimate: float, weight: float) -> None:
        previous = self.head
        if self._admit(job, estimate) and previous is not None:  # True only when it displaced a head
            self.server.isolate(previous)  # preempted: waits outside, keeps its service
        self._sync()

    def depart(self, job: int) -> None:
        if job == self.head:
            self._next_head()
            self._sync()

    def on_event(self) -> None:
        self._head_becomes_late()
        self._sync()


class SRPTEPlusLAS(_SRPTELate):
    """The least-attained late jobs and the head non-late job share the server."""

    name = "SRPTE+LAS"
    summary = "SRPTE, but the least-attained late jobs share the server with the head non-late job"

    def __init__(self, server: Server) -> None:
        super().__init__(server)
        self.late = LeastAttained(server)

    def _add_late(self, job: int) -> None:
        self.late.add(job)

    def _sync(self) -> None:
        """Put the head beside the served late group and serve that pool."""
        target = self.late.pool()
        head = self.head
        if head is not None:
            if target is None:
                if self.server.pool_of(head).size > 1:
                    self.server.isolate(head)
                target = self.server.pool_of(head)
            else:
                self.server.place(head, target, 1.0)
        self.server.serve(target)

    def arrive(self, job: int, estimate: float, weight: float) -> None:
        previous = self.head
        if self._admit(job, estimate) and previous is not None:  # True only when it displaced a head
            self.server.isolate(previous)
        self._sync()

    def depart(self, job: int) -> None:
        if job in self.late:
            self.late.remove(job)
        else:
            self._next_head()
        self._sync()

    def next_event_time(self) -> float:
        return min(super().next_event_time(), self.late.next_event_time())

    def on_event(self) -> None:
        if super().next_event_time() <= self.late.next_event_time():
            self._head_becomes_late()
        else:
            self.late.on_event()
        self._sync()
