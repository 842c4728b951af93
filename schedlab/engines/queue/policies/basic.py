"""Size-oblivious policies: FIFO, PS and GPS."""

from __future__ import annotations

from collections import deque

from schedlab.engines.queue.policies.base import QueuePolicy
from schedlab.engines.queue.sim.engine import Server


class FIFO(QueuePolicy):
    """First in, first out: the oldest job holds the whole server."""

    name = "FIFO"
    summary = "first in, first out; the oldest job gets the whole server"

    def __init__(self, server: Server) -> None:
        super().__init__(server)
        self.queue: deque[int] = deque()

    def arrive(self, job: int, estimate: float, weight: float) -> None:
        self.queue.append(job)
        if len(self.queue) == 1:
            self.server.serve_job(job)

    def depart(self, job: int) -> None:
        self.queue.popleft()
        self.server.serve_job(self.queue[0] if self.queue else None)


class GPS(QueuePolicy):
    """Generalized processor sharing: every job in one pool, shares by weight.

    All jobs live in a single engine pool whose virtual clock makes each event
    O(log n): no per-job update when the number of jobs changes.
    """

    name = "GPS"
    summary = "generalized processor sharing: all jobs share the server in proportion to their weights"
    use_weights = True

    def __init__(self, server: Server) -> None:
        super().__init__(server)
        self.pool = server.new_pool()
        server.serve(self.pool)

    def arrive(self, job: int, estimate: float, weight: float) -> None:
        self.server.place(job, self.pool, weight if self.use_weights else 1.0)

    def depart(self, job: int) -> None:
        pass  # the engine already removed the job from the pool; the pool keeps the server


class PS(GPS):
    """Processor sharing: all jobs share the server equally (GPS, weights ignored)."""

    name = "PS"
    summary = "processor sharing: all jobs share the server equally"
    use_weights = False
