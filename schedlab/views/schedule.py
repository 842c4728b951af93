"""What a schedule view draws: a :class:`Schedule` (boxes on panels, step
series, point marks, the per-job rows) and the :class:`Stack` that gives
each job its place on a lane (processor ids, a share of a server's capacity,
a share of a node's CPU).

Boxes are the schedule itself, in data coordinates: a box is one job holding
``[y0, y1)`` of a panel's vertical axis during ``[t0, t1)``. ``held`` is what
it holds there in the resource's own unit (processors, demand, node memory),
so the no-double-booking tests read the boxes, not the picture.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: Box kinds: what the box shows.
RUN, LIFE, RESERVATION, PAUSED, PENALTY = 0, 1, 2, 3, 4
KIND_NAMES = {RUN: "run", LIFE: "in system", RESERVATION: "reservation", PAUSED: "paused", PENALTY: "penalty"}
#: Two stack positions closer than this (in the lane's unit) are the same
#: point: demands such as 0.4 + 0.6 fill a capacity of 1 despite rounding.
STACK_TOL = 1e-9


@dataclass(frozen=True)
class Panel:
    """One subplot: ``lanes`` lanes (processors, servers, nodes, jobs) on y."""

    name: str
    y_title: str
    lanes: float


@dataclass
class Schedule:
    """A recorded run. ``jobs``: the engine's per-job columns (row r is job
    row r of the run); ``boxes``: columns panel, row, kind, t0, t1, y0, y1,
    value (share or fraction drawn), held; ``series``: name -> (t, v), a step
    function (v[i] from t[i] to t[i + 1]); ``marks``: name -> columns t, row,
    y (point events: migrations); ``allocation``: batch, row -> the job's
    processor ranges [(first, last)] (closed, as Batsim writes them)."""

    engine: str
    jobs: dict[str, np.ndarray]
    summary: dict[str, float]
    panels: list[Panel]
    boxes: dict[str, np.ndarray]
    series: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    marks: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    allocation: dict[int, list[tuple[int, int]]] = field(default_factory=dict)
    capacity: float = 0.0
    label: str = ""
    #: The run's unit of time ("" : the engine's own, `docs_columns.time_unit`).
    time_unit: str = ""

    @property
    def n_jobs(self) -> int:
        return len(self.jobs["job_id"])

    def span(self) -> tuple[float, float]:
        """[first submit, last box end]: the time the run covers."""
        t0 = float(np.min(self.jobs["submit"])) if self.n_jobs else 0.0
        ends = self.boxes["t1"]
        t1 = float(np.max(ends)) if len(ends) else t0
        return t0, max(t1, t0)


class BoxList:
    """Boxes appended one at a time (lists), then frozen into arrays."""

    COLUMNS = ("panel", "row", "kind", "t0", "t1", "y0", "y1", "value", "held")

    def __init__(self) -> None:
        self.cols: dict[str, list[Any]] = {c: [] for c in self.COLUMNS}

    def add(
        self, panel: int, row: int, kind: int, t0: float, t1: float, y0: float, y1: float, value: float, held: float
    ) -> None:
        for c, v in zip(self.COLUMNS, (panel, row, kind, t0, t1, y0, y1, value, held)):
            self.cols[c].append(v)

    def arrays(self) -> dict[str, np.ndarray]:
        ints = ("panel", "row", "kind")
        return {c: np.asarray(v, dtype=np.int64 if c in ints else np.float64) for c, v in self.cols.items()}


class Stack:
    """Free space ``[0, size)`` of one lane as sorted free segments; a job
    takes ``amount`` of it contiguous-first (the lowest segment that holds it
    whole, as Batsim's contiguous allocation), else the lowest free pieces.
    Deterministic, and it never hands out a point twice: what a Gantt needs
    when the engine only counts units."""

    def __init__(self, size: float) -> None:
        self.size = float(size)
        self.free: list[list[float]] = [[0.0, float(size)]] if size > 0 else []

    def take(self, amount: float) -> list[tuple[float, float]]:
        if amount <= STACK_TOL:
            return []
        for k, (a, b) in enumerate(self.free):
            if b - a >= amount - STACK_TOL:
                end = min(a + amount, b)
                if b - end <= STACK_TOL:
                    del self.free[k]
                    end = b
                else:
                    self.free[k][0] = end
                return [(a, end)]
        pieces: list[tuple[float, float]] = []
        left = amount
        while left > STACK_TOL and self.free:
            a, b = self.free[0]
            if b - a <= left + STACK_TOL:
                pieces.append((a, b))
                left -= b - a
                del self.free[0]
            else:
                pieces.append((a, a + left))
                self.free[0][0] = a + left
                left = 0.0
        if left > STACK_TOL * max(1.0, self.size):
            raise ValueError(f"stack of size {self.size}: {amount} asked, {amount - left} free")
        return pieces

    def give(self, pieces: list[tuple[float, float]]) -> None:
        for a, b in pieces:
            self.free.append([a, b])
        self.free.sort()
        merged: list[list[float]] = []
        for a, b in self.free:
            if merged and a <= merged[-1][1] + STACK_TOL:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        self.free = merged


def step_count(up: np.ndarray, down: np.ndarray, weight: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """A step function counting (or weighting) intervals [up, down): at each
    distinct instant the value after every change at that instant. NaN
    bounds (a job that never started) are left out."""
    w = np.ones(len(up)) if weight is None else np.asarray(weight, dtype=float)
    ok = ~(np.isnan(up) | np.isnan(down))
    times = np.concatenate([up[ok], down[ok]])
    deltas = np.concatenate([w[ok], -w[ok]])
    if not len(times):
        return np.zeros(0), np.zeros(0)
    order = np.argsort(times, kind="stable")
    times, deltas = times[order], deltas[order]
    level = np.cumsum(deltas)
    last = np.r_[times[1:] != times[:-1], True]  # the value after the last change at each instant
    values = level[last]
    values[np.abs(values) < 1e-9 * max(1.0, float(np.max(np.abs(w))) if len(w) else 1.0)] = 0.0
    return times[last], values


def finite_or_nan(x: float) -> float:
    return x if math.isfinite(x) else math.nan
