"""The availability profile of a batch machine: free units as a step
function of time, from "now" on.

Used by ``conservative.py`` (a module of the same package: this is why
``mypolicies`` is a package and not a set of single files). Pure Python, no
schedlab import: it can be tested on its own.

Representation: breakpoints ``t[0] < t[1] < ...`` with ``f[i]`` free units
on ``[t[i], t[i+1])``; the last segment runs to infinity. Units are ints, so
the free counts are exact; times are the policy's own sums (start +
requested, see :func:`span_end`), reused verbatim when a reservation is
removed, so a hold is always given back over exactly the interval it took.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right


def span_end(start: float, duration: float) -> float:
    """The end of a hold of ``duration`` from ``start``: ``start + duration``,
    but never ``start`` itself. A duration far below the resolution of a
    double at ``start`` (1e-38 at t = 1) would otherwise give an empty
    interval: the hold would take nothing, and a second job could be given
    the same units at the same instant, while the engine has the first one
    hold them at its start. (``schedlab check-policy`` found this.)"""
    end = start + duration
    return end if end > start else math.nextafter(start, math.inf)


class Profile:
    """Free units over time. ``earliest`` is O(P) (P breakpoints), ``hold``
    and ``release`` O(P) (list inserts); a batch queue keeps P at most
    2 x (running + queued jobs) + 1."""

    def __init__(self, capacity: int, now: float = 0.0) -> None:
        self.capacity = int(capacity)
        self.t: list[float] = [now]
        self.f: list[int] = [self.capacity]

    def __repr__(self) -> str:
        return "Profile(" + ", ".join(f"{t:g}: {f}" for t, f in zip(self.t, self.f)) + ")"

    def free_at(self, x: float) -> int:
        return self.f[max(0, bisect_right(self.t, x) - 1)]

    def advance(self, now: float) -> None:
        """Forget the past: the profile starts at ``now``."""
        i = bisect_right(self.t, now) - 1
        if i > 0:
            del self.t[:i]
            del self.f[:i]
        self.t[0] = now

    def _split(self, x: float) -> int:
        """Index of the breakpoint at ``x`` (inserted if needed; x >= t[0])."""
        t = self.t
        i = bisect_left(t, x)
        if i < len(t) and t[i] == x:
            return i
        t.insert(i, x)
        self.f.insert(i, self.f[i - 1])
        return i

    def _add(self, start: float, end: float, delta: int) -> None:
        start = max(start, self.t[0])
        if not end > start:
            return
        i = self._split(start)
        j = self._split(end)
        f = self.f
        for k in range(i, j):
            f[k] += delta
        # merge equal neighbours around the change (keeps P small)
        for k in (j, i):
            if 0 < k < len(f) and f[k] == f[k - 1]:
                del self.t[k]
                del f[k]

    def hold(self, start: float, end: float, units: int) -> None:
        """``units`` are taken on [start, end)."""
        self._add(start, end, -units)

    def release(self, start: float, end: float, units: int) -> None:
        """``units`` are given back on [start, end)."""
        self._add(start, end, units)

    def earliest(self, units: int, duration: float) -> float:
        """The earliest time x >= now at which ``units`` are free during all
        of [x, x + duration). Always found: the last segment is the whole
        machine, and no job needs more (the engine checks that)."""
        t, f = self.t, self.f
        n = len(t)
        i = 0
        while i < n:
            if f[i] < units:
                i += 1
                continue
            end = span_end(t[i], duration)
            k = i + 1
            while k < n and t[k] < end and f[k] >= units:
                k += 1
            if k == n or not t[k] < end:
                return t[i]
            i = k + 1  # segment k is too full: no start at or before t[k] can work
        return math.inf
