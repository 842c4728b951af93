"""DotProductPacker: multi-resource packing by alignment, for the packing engine.

At each decision epoch, repeatedly place the (queued job, server) pair with
the largest alignment

    a(j, s) = sum_r (demand_r(j) / cap_r(s)) * (free_r(s) / cap_r(s))

among the pairs where the job fits (demand <= free + ``packing.FIT_TOL`` in
every resource), until no queued job fits anywhere. This is the packing
score of Tetris (Grandl et al., SIGCOMM 2014) alone: the dot product of the
demand and the free capacity, both normalised by the server's capacity (with
capacities of 1 it is the plain dot product). Large, well-aligned jobs go
first, onto the servers with the most room in the dimensions they use.
There is no fairness knob and no remaining-work term: with single-task jobs
it makes the same placements as the built-in ``Tetris`` with ``fairness =
1.0, epsilon = 0.0`` (the tests check it), from a simpler structure.

Ties: the largest alignment, then the lowest server index, then the earliest
job.

Cost. Scoring every queued job against every server for each placement would
be O(Q x L). Instead the policy groups the queued jobs by demand vector
("shape"; jobs of one shape are interchangeable, FIFO among themselves) and
keeps, per shape, its fitting servers sorted by alignment; a global sorted
list holds each shape's best pair, so the next placement is read in O(log K)
(K = distinct shapes queued). A server's free capacity changes only when a
job is placed on it or leaves it; its alignment with every shape is then
recomputed: O(K (d + log L)) for that one server. A new shape costs
O(L (d + log L)). So a placement costs O(K (d + log L)), never O(Q x L);
but with continuous, all-distinct demands K is the queue length, and each
placement is O(Q log L) -- bound the queue, or round demands to a grid, if
that matters.
"""

from __future__ import annotations

from collections import deque

import numpy as np
from sortedcontainers import SortedList

from schedlab.api import packing


class _Shape:
    __slots__ = ("vec", "jobs", "align", "order", "best")

    def __init__(self, vec: np.ndarray) -> None:
        self.vec = vec
        self.jobs: deque[int] = deque()  # queued jobs of this demand vector, arrival order
        self.align: dict[int, float] = {}  # server -> alignment, fitting servers only
        self.order = SortedList()  # (-alignment, server): best first, lowest index on ties
        self.best: tuple | None = None  # this shape's entry in the policy's global list


class DotProductPacker(packing.Policy):
    """Place the fitting (job, server) pair of largest demand . free / cap^2,
    repeatedly (see the module docstring)."""

    name = "DotProduct"
    summary = "multi-resource packing: the fitting (job, server) pair with the largest demand . free alignment first"

    def __init__(self, cluster: packing.Cluster) -> None:
        super().__init__(cluster)
        L, d = cluster.servers, cluster.resources
        cap = np.array([cluster.capacity(s) for s in range(L)], dtype=float).reshape(L, d)
        self.weight = 1.0 / (cap * cap)  # the 1 / cap_r(s)^2 of the alignment
        self.free = np.array([cluster.free(s) for s in range(L)], dtype=float).reshape(L, d)
        self.shapes: dict[tuple, _Shape] = {}
        self.pairs = SortedList()  # per shape with a fitting server: (-alignment, server, first job, shape key)

    # -- the best pair of each shape -----------------------------------------
    def _relist(self, key: tuple, sh: _Shape) -> None:
        """Re-enter the shape's best (server, first job) in the global list."""
        if sh.best is not None:
            self.pairs.remove(sh.best)
        sh.best = None
        if sh.order and sh.jobs:
            neg, s = sh.order[0]
            sh.best = (neg, s, sh.jobs[0], key)
            self.pairs.add(sh.best)

    def _new_shape(self, key: tuple) -> _Shape:
        sh = _Shape(np.array(key, dtype=float))
        fit = np.flatnonzero(np.all(sh.vec <= self.free + packing.FIT_TOL, axis=1))
        if len(fit):
            a = ((self.free[fit] * self.weight[fit]) * sh.vec).sum(axis=1)
            sh.align = dict(zip(fit.tolist(), a.tolist()))
            sh.order = SortedList(zip((-a).tolist(), fit.tolist()))
        return sh

    def _rescore(self, s: int) -> None:
        """Server s's free capacity changed: its alignment with every shape."""
        free = self.free[s]
        room = (free + packing.FIT_TOL).tolist()
        scaled = (free * self.weight[s]).tolist()
        for key, sh in self.shapes.items():
            top = sh.order[0] if sh.order else None
            old = sh.align.pop(s, None)
            if old is not None:
                sh.order.remove((-old, s))
            if all(k <= r for k, r in zip(key, room)):
                a = sum(k * w for k, w in zip(key, scaled))
                sh.align[s] = a
                sh.order.add((-a, s))
            if (sh.order[0] if sh.order else None) != top:
                self._relist(key, sh)

    # -- the seam --------------------------------------------------------------
    def arrive(self, job: int) -> None:
        key = tuple(self.cluster.demand(job).tolist())
        sh = self.shapes.get(key)
        if sh is None:
            sh = self.shapes[key] = self._new_shape(key)
        sh.jobs.append(job)
        if len(sh.jobs) == 1:
            self._relist(key, sh)

    def depart(self, job: int, server: int) -> None:
        self.free[server] = self.cluster.free(server)  # the engine has already added the demand back
        self._rescore(server)

    def schedule(self) -> list[tuple[int, int]]:
        out: list[tuple[int, int]] = []
        while self.pairs:
            _, s, job, key = self.pairs[0]
            sh = self.shapes[key]
            sh.jobs.popleft()
            if sh.jobs:
                self._relist(key, sh)
            else:
                self.pairs.remove(sh.best)
                del self.shapes[key]
            self.free[s] -= sh.vec  # the engine's own arithmetic: our copy stays bit-identical to it
            self._rescore(s)
            out.append((job, s))
        return out
