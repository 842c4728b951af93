"""FIFO with First-Fit (the baseline of Psychas & Ghaderi §VII-B), single resource.

The head-of-line job goes to the lowest-index server with room for it
(size ≤ free + ``FIT_TOL``); repeat while the head fits. When it fits nowhere
the whole queue waits behind it (head-of-line blocking), even if later jobs
would fit. A max segment tree over free capacity answers First-Fit in
O(log L), so an epoch costs O((placements + 1) log L).
"""

from __future__ import annotations

from collections import deque

from schedlab.engines.packing.policies.best_fit import SingleResourcePolicy
from schedlab.engines.packing.policies.structures import MaxSegmentTree
from schedlab.engines.packing.sim.engine import FIT_TOL


class FIFOFF(SingleResourcePolicy):
    name = "FIFO-FF"
    summary = "first in, first out; the head job to the first server with room; the queue blocks behind it"

    def __init__(self, cluster, **params) -> None:
        super().__init__(cluster, **params)
        self.queue: deque[tuple[int, float]] = deque()
        self.tree = MaxSegmentTree(self.free)

    def arrive(self, job: int) -> None:
        self.queue.append((job, self.size(job)))

    def depart(self, job: int, server: int) -> None:
        self.tree.update(server, self.tree[server] + self.size(job))

    def schedule(self) -> list[tuple[int, int]]:
        out: list[tuple[int, int]] = []
        queue, tree = self.queue, self.tree
        while queue:
            job, r = queue[0]
            s = tree.first_at_least(r - FIT_TOL)
            if s < 0:
                break
            tree.update(s, tree[s] - r)
            queue.popleft()
            out.append((job, s))
        return out
