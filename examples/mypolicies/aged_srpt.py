"""AgedSRPT: SRPT on estimates with aging, for the queue engine.

SRPTE serves the job with the least *estimated remaining* work R_i (estimate
minus attained service). With heavy-tailed sizes a large job can then wait
behind an endless stream of smaller newcomers. AgedSRPT lowers a job's
priority value by ``alpha`` per unit of time it has spent in the system:

    priority_i(t) = R_i(t) - alpha * (t - a_i)          (a_i: arrival time)

and serves the job of least priority value. ``alpha = 0`` is SRPTE;
``alpha -> inf`` approaches FIFO (the oldest job first).

Why it is O(log n) per event. Subtracting ``alpha * t`` from every job's
priority does not change their order, so the policy can rank jobs by

    key_i = R_i + alpha * a_i

For a waiting job R_i is constant, so its key never changes: waiting jobs sit
in a heap under a static key. Only the served head's R falls (at rate 1),
so only its key moves, and only downwards: a waiting job can never overtake
the head; only a newcomer can preempt it (when its key, ``estimate + alpha *
now``, is strictly smaller). Arrivals and departures are one heap push or pop.

Ties. Keys are compared as ``queue.tie_key`` values (equal to ~1e-12
relative), and ties go to the earlier arrival, exactly as the built-in SRPTE
does -- with ``alpha = 0`` the two policies give bit-identical schedules.
Precision: keys grow like ``alpha * t``, and tie keys resolve ~1e-12 of a
key, so late in a long run (alpha * t = 1e6, say) estimates closer than
~1e-6 compare as equal and go by arrival order.
"""

from __future__ import annotations

import heapq
import math
from typing import Annotated

from pydantic import Field

from schedlab.api import queue


class AgedSRPT(queue.Policy):
    """SRPT on estimates, each job's priority improved by ``alpha`` per unit
    of time it has been in the system (see the module docstring)."""

    name = "AgedSRPT"
    summary = "SRPT on estimates with aging: priority = estimated remaining - alpha x time in system"

    def __init__(self, server: queue.Server, *, alpha: Annotated[float, Field(ge=0)] = 0.5) -> None:
        super().__init__(server)
        if not (math.isfinite(alpha) and alpha >= 0):  # the spec's check covers sweeps; this covers Python callers
            raise ValueError(f"alpha must be a finite number >= 0; got {alpha!r}")
        self.alpha = float(alpha)
        self.waiting: list[tuple[float, int, float]] = []  # (tie key, job, key): arrival order breaks ties
        self.head: int | None = None
        self.head_key = 0.0  # the head's key when it became the head ...
        self.head_att = 0.0  # ... and its attained service at that moment

    def _head_key_now(self) -> float:
        """The head's key falls by exactly the service it received since."""
        return self.head_key - (self.server.attained(self.head) - self.head_att)

    def _make_head(self, job: int | None, key: float = 0.0) -> None:
        self.head = job
        if job is not None:
            self.head_key = key
            self.head_att = self.server.attained(job)
        self.server.serve_job(job)

    def arrive(self, job: int, estimate: float, weight: float) -> None:
        key = estimate + self.alpha * self.server.now
        if self.head is None:
            self._make_head(job, key)
            return
        current = self._head_key_now()
        if queue.tie_key(key) < queue.tie_key(current):  # strictly smaller: the newcomer preempts
            heapq.heappush(self.waiting, (queue.tie_key(current), self.head, current))
            self._make_head(job, key)
        else:
            heapq.heappush(self.waiting, (queue.tie_key(key), job, key))

    def depart(self, job: int) -> None:
        # Only the head is served, so only the head can complete.
        if self.waiting:
            _, nxt, key = heapq.heappop(self.waiting)
            self._make_head(nxt, key)
        else:
            self._make_head(None)
