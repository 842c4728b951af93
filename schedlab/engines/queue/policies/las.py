"""Least attained service: the jobs that have received the least service share
the server equally (LAS, a.k.a. foreground-background).

:class:`LeastAttained` is the reusable piece: LAS over any dynamic set of jobs.
LAS uses it for all jobs, FSPE+LAS for the late jobs, SRPTE+LAS for the late
jobs beside the head non-late job.

Jobs with equal attained service form a *group*, which is one engine pool. Only
the lowest group is served; its level rises until it meets the next group's
level, and then the two merge (the smaller group's members move into the larger
one's pool: O(k log n) for k moved jobs, and each job moves O(log n) times
overall). A newcomer below the served level pauses the whole served group in
O(1): the engine stops that pool's clock, no member is touched.
"""

from __future__ import annotations

import heapq
import itertools

from schedlab.engines.queue.policies.base import QueuePolicy
from schedlab.engines.queue.sim.engine import INF, Pool, Server, tie_key


class _Group:
    __slots__ = ("pool", "members", "level", "clock")

    def __init__(self, pool: Pool, level: float, clock: float) -> None:
        self.pool = pool
        self.members: set[int] = set()
        # The group's attained service is level + (pool clock - clock): members
        # all have weight 1, so each receives exactly the pool clock's advance.
        self.level = level
        self.clock = clock


class LeastAttained:
    """LAS over a dynamic set of jobs (see the module docstring)."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.active: _Group | None = None
        # paused groups: heap of (tie key of level, creation order, level, group);
        # levels equal as tie keys are one level (see schedlab.engines.queue.sim.engine.TIE_BITS)
        self.paused: list[tuple[float, int, float, _Group]] = []
        self.paused_at: dict[float, _Group] = {}  # tie key of level -> paused group
        self.group_of: dict[int, _Group] = {}
        self._order = itertools.count()

    def __len__(self) -> int:
        return len(self.group_of)

    def __contains__(self, job: int) -> bool:
        return job in self.group_of

    def level(self, group: _Group) -> float:
        return group.level + (self.server.pool_clock(group.pool) - group.clock)

    def pool(self) -> Pool | None:
        """The pool that LAS wants to hold the server (None if the set is empty)."""
        return self.active.pool if self.active is not None else None

    def add(self, job: int) -> None:
        """Add ``job`` with the service it has attained so far."""
        attained = self.server.attained(job)
        active = self.active
        if active is None:
            self.active = self._new_group(attained)
            self._enter(job, self.active)
            return
        current = self.level(active)
        if tie_key(attained) == tie_key(current):
            self._enter(job, active)
        elif attained < current:
            self._pause(active, current)
            self.active = self._new_group(attained)
            self._enter(job, self.active)
        else:
            group = self.paused_at.get(tie_key(attained))
            if group is None:
                group = self._new_group(attained)
                self._push(group, attained)
            self._enter(job, group)

    def remove(self, job: int) -> None:
        """Forget ``job`` (it completed, or left the set). Its pool membership is
        the caller's business: a completed job has already left its pool."""
        group = self.group_of.pop(job)
        group.members.discard(job)
        if group is self.active and not group.members:
            self.active = self._pop_paused()

    def next_event_time(self) -> float:
        """When the served group's level meets the next paused group's level."""
        active = self.active
        if active is None:
            return INF
        self._drop_empty_paused()
        if not self.paused:
            return INF
        gap = self.paused[0][2] - self.level(active)
        return self.server.now + self.server.time_to_advance(active.pool, gap)

    def on_event(self) -> None:
        """The served group met the next group: merge them."""
        self._drop_empty_paused()
        key, _, level, other = heapq.heappop(self.paused)
        del self.paused_at[key]
        active = self.active
        if active is None:
            raise RuntimeError("LAS: a merge event with no served group")
        small, large = (active, other) if len(active.members) <= len(other.members) else (other, active)
        for job in small.members:
            self._enter(job, large)
        small.members.clear()
        large.level = level
        large.clock = self.server.pool_clock(large.pool)
        self.active = large

    # ---- internals ------------------------------------------------------------
    def _new_group(self, level: float) -> _Group:
        pool = self.server.new_pool()
        return _Group(pool, level, self.server.pool_clock(pool))

    def _enter(self, job: int, group: _Group) -> None:
        self.server.place(job, group.pool, 1.0)
        group.members.add(job)
        self.group_of[job] = group

    def _push(self, group: _Group, level: float) -> None:
        heapq.heappush(self.paused, (tie_key(level), next(self._order), level, group))
        self.paused_at[tie_key(level)] = group

    def _pause(self, group: _Group, level: float) -> None:
        group.level = level
        group.clock = self.server.pool_clock(group.pool)
        existing = self.paused_at.get(tie_key(level))
        if existing is None:
            self._push(group, level)
        else:  # a paused group already sits at exactly this level: join it
            for job in list(group.members):
                self._enter(job, existing)
            group.members.clear()

    def _drop_empty_paused(self) -> None:
        paused = self.paused
        while paused and not paused[0][3].members:
            key, _, _, _ = heapq.heappop(paused)
            self.paused_at.pop(key, None)

    def _pop_paused(self) -> _Group | None:
        self._drop_empty_paused()
        if not self.paused:
            return None
        key, _, _, group = heapq.heappop(self.paused)
        del self.paused_at[key]
        return group


class LAS(QueuePolicy):
    """Least attained service over all jobs."""

    name = "LAS"
    summary = "least attained service: the jobs served least so far share the server equally"

    def __init__(self, server: Server) -> None:
        super().__init__(server)
        self.las = LeastAttained(server)

    def arrive(self, job: int, estimate: float, weight: float) -> None:
        self.las.add(job)
        self.server.serve(self.las.pool())

    def depart(self, job: int) -> None:
        self.las.remove(job)
        self.server.serve(self.las.pool())

    def next_event_time(self) -> float:
        return self.las.next_event_time()

    def on_event(self) -> None:
        self.las.on_event()
        self.server.serve(self.las.pool())
