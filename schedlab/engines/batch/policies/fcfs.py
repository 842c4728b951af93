"""FCFS: first come, first served, no backfilling (the DFRS paper's first
batch baseline).

Jobs start in submit order (ties: job order): while the head of the queue
fits in the free units it starts; when it does not, the whole queue waits
behind it (head-of-line blocking) even if later jobs would fit. O(1) per start.
"""

from __future__ import annotations

from collections import deque

from schedlab.engines.batch.policies.base import BatchPolicy


class FCFS(BatchPolicy):
    name = "FCFS"
    summary = "first come, first served; the head job blocks the queue (no backfilling)"

    def __init__(self, machine, **params) -> None:
        super().__init__(machine, **params)
        self.queue: deque[int] = deque()

    def arrive(self, job: int) -> None:
        self.queue.append(job)

    def complete(self, job: int) -> None:
        pass

    def schedule(self, now: float) -> list[int]:
        out: list[int] = []
        queue, need = self.queue, self.machine.need
        free = self.machine.free
        while queue and need[queue[0]] <= free:
            job = queue.popleft()
            free -= need[job]
            out.append(job)
        return out
