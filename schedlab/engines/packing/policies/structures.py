"""Sorted structures for single-resource packing policies.

Each answers one question a policy asks at every decision epoch without a scan
over all servers or all queued jobs:

* :class:`MaxSegmentTree` -- the lowest-index server (at or after ``lo``) whose
  free capacity is ≥ r: First-Fit. O(log L) per query and per update, O(L)
  memory and build.
* :class:`ServersByFree` -- the tightest server: least free capacity ≥ r, ties
  to the lowest index. A ``SortedList`` of (free, server): O(log L) per query
  and per update.
* :class:`JobsBySize` -- a sorted multiset of queued jobs: the largest job of
  size ≤ r, ties (equal sizes) to the earliest arrival; smallest size in O(1).
  A ``SortedList`` of (size, -job): O(log Q) per add / remove / query.

Thresholds are passed by the caller already adjusted for the engine's fit
tolerance (``schedlab.engines.packing.sim.engine.FIT_TOL``): ask for free ≥ r - tol, or for a
job of size ≤ free + tol.
"""

from __future__ import annotations

from collections.abc import Sequence

from sortedcontainers import SortedList

INF = float("inf")


class MaxSegmentTree:
    """Max over an array of L values, with the First-Fit query."""

    __slots__ = ("n", "size", "t")

    def __init__(self, values: Sequence[float]) -> None:
        self.n = n = len(values)
        size = 1
        while size < max(n, 1):
            size *= 2
        self.size = size
        t = [-INF] * (2 * size)
        t[size : size + n] = [float(v) for v in values]
        for i in range(size - 1, 0, -1):
            a, b = t[2 * i], t[2 * i + 1]
            t[i] = a if a >= b else b
        self.t = t

    def __getitem__(self, i: int) -> float:
        return self.t[self.size + i]

    def __len__(self) -> int:
        return self.n

    def max(self) -> float:
        return self.t[1]

    def update(self, i: int, value: float) -> None:
        t = self.t
        i += self.size
        t[i] = value
        i >>= 1
        while i:
            a, b = t[2 * i], t[2 * i + 1]
            m = a if a >= b else b
            if t[i] == m:
                break  # ancestors unchanged
            t[i] = m
            i >>= 1

    def first_at_least(self, r: float, lo: int = 0) -> int:
        """Lowest index i ≥ lo with value[i] ≥ r, or -1. O(log L)."""
        if lo >= self.n or self.t[1] < r:
            return -1
        t = self.t
        i = lo + self.size
        # climb: from leaf lo, move right over whole subtrees until one holds a value >= r
        while t[i] < r:
            while i & 1:
                i >>= 1
            if i == 0:
                return -1
            i += 1
        # descend to the leftmost leaf >= r inside that subtree
        size = self.size
        while i < size:
            i <<= 1
            if t[i] < r:
                i += 1
        return i - size


class ServersByFree:
    """Servers sorted by free capacity; the tightest server that fits."""

    __slots__ = ("free", "sl")

    def __init__(self, free: Sequence[float]) -> None:
        self.free = [float(v) for v in free]
        self.sl = SortedList((v, s) for s, v in enumerate(self.free))

    def update(self, s: int, value: float) -> None:
        self.sl.remove((self.free[s], s))
        self.free[s] = value
        self.sl.add((value, s))

    def max_free(self) -> float:
        return float(self.sl[-1][0])

    def tightest(self, r: float) -> int:
        """Server with the least free capacity ≥ r (lowest index on ties), or -1."""
        sl = self.sl
        k = sl.bisect_left((r, -1))
        return sl[k][1] if k < len(sl) else -1


class JobsBySize:
    """Queued jobs sorted by size (ties: arrival order)."""

    __slots__ = ("sl",)

    def __init__(self) -> None:
        self.sl = SortedList()

    def __len__(self) -> int:
        return len(self.sl)

    def __bool__(self) -> bool:
        return bool(self.sl)

    def add(self, job: int, size: float) -> None:
        self.sl.add((size, -job))

    def remove(self, job: int, size: float) -> None:
        self.sl.remove((size, -job))

    def min_size(self) -> float:
        return self.sl[0][0] if self.sl else INF

    def largest_at_most(self, r: float) -> tuple[int, float] | None:
        """(job, size) of the largest job of size ≤ r, earliest arrival on ties; None if none."""
        sl = self.sl
        k = sl.bisect_right((r, INF)) - 1
        if k < 0:
            return None
        size, neg = sl[k]
        return -neg, size
