"""Schedule recorders, one per engine: the callables the engines' reference
loops take as ``recorder`` (``schedlab.sim.<engine>``), and what turns what
they saw, with the run's per-job rows, into a :class:`Schedule`.

The engines record as little as they can (the order of starts, placements,
the served shares, the DFRS mapping after each instant); everything else is
derived here from the per-job rows, so the views cannot disagree with them:

* queue: after each event, the shares of the jobs in the pool holding the
  server (``Server.served_shares``); a job's served intervals and the server
  stack follow.
* batch: the jobs started at each pass, in order, and the EASY head's
  reservation. The engine counts units and assigns none: processor ids are
  given here, replaying the passes in the engine's own order (ends at or
  before the pass first, then the starts in list order) with a
  :class:`Stack`, contiguous-first and lowest ids first -- deterministic,
  and the schedule (start and end times) is the engine's, untouched.
* packing: each placement and departure (server, time); a job's place in
  its server's capacity is stacked the same way, per resource.
* dfrs: each job's nodes, yield and penalty after every instant.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np

from schedlab.views.schedule import (
    LIFE,
    PAUSED,
    PENALTY,
    RESERVATION,
    RUN,
    BoxList,
    Panel,
    Schedule,
    Stack,
    step_count,
)

RESERVED = " (dotted: each queue head's first reservation, at the processors it got)"
#: Queue bars: a served interval is drawn ``BAR`` high at share 1 (lanes are 1 apart).
BAR = 0.8


class QueueRecorder:
    """``simulate``'s recorder: the served shares after every event, kept
    only when they change (epochs)."""

    def __init__(self) -> None:
        self.epochs: list[tuple[float, tuple[tuple[int, float], ...]]] = []

    def __call__(self, now: float, server: Any) -> None:
        shares = tuple(server.served_shares())
        if self.epochs and self.epochs[-1][1] == shares:
            return
        if self.epochs and self.epochs[-1][0] == now:
            self.epochs[-1] = (now, shares)  # several events at one instant: the last state holds
            if len(self.epochs) > 1 and self.epochs[-2][1] == shares:
                self.epochs.pop()
            return
        self.epochs.append((now, shares))

    def segments(self) -> list[tuple[int, float, float, float, float, float]]:
        """(job, t0, t1, share, stack bottom, stack top): a job served at a
        constant share and stack place from t0 to t1."""
        out = []
        open_: dict[int, tuple[float, float, float, float]] = {}  # job -> (t0, share, y0, y1)
        for k, (t, shares) in enumerate(self.epochs):
            now_ = {}
            y = 0.0
            for job, share in shares:
                now_[job] = (share, y, y + share)
                y += share
            for job in list(open_):
                t0, share, y0, y1 = open_[job]
                if now_.get(job) != (share, y0, y1):
                    if t > t0:
                        out.append((job, t0, t, share, y0, y1))
                    del open_[job]
            for job, (share, y0, y1) in now_.items():
                if job not in open_:
                    open_[job] = (t, share, y0, y1)
            if k == len(self.epochs) - 1 and open_:
                raise AssertionError(f"queue recorder: jobs {sorted(open_)} still served at the end")
        return out

    def finish(self, jobs: dict[str, np.ndarray], summary: dict[str, float], table: Any, system: dict[str, Any]):
        """What ``schedlab view`` calls after the run (``Engine.recorder``)."""
        return self.schedule(jobs, summary)

    def schedule(self, jobs: dict[str, np.ndarray], summary: dict[str, float]) -> Schedule:
        n = len(jobs["job_id"])
        boxes = BoxList()
        for r in range(n):
            boxes.add(0, r, LIFE, float(jobs["submit"][r]), float(jobs["completion"][r]), r - 0.06, r + 0.06, 0.0, 0.0)
        for job, t0, t1, share, y0, y1 in self.segments():
            boxes.add(0, job, RUN, t0, t1, job - BAR / 2, job - BAR / 2 + BAR * share, share, share)
            boxes.add(1, job, RUN, t0, t1, y0, y1, share, share)
        present = step_count(jobs["submit"], jobs["completion"])
        return Schedule(
            engine="queue",
            jobs=jobs,
            summary=summary,
            panels=[Panel("jobs: served intervals (bar height = share)", "job", n), Panel("server", "share", 1.0)],
            boxes=boxes.arrays(),
            series={"jobs present": present},
            capacity=1.0,
        )


class BatchRecorder:
    """``simulate_batch``'s recorder: each pass's starts, in order, and the
    reservation of the head (the first one computed for each head: EASY's
    promise, which with exact estimates it never starts later than)."""

    def __init__(self) -> None:
        self.passes: list[tuple[float, list[int]]] = []
        self.reservation: dict[int, float] = {}
        self.capacity = 0
        self.need: list[int] = []

    def __call__(self, t: float, started: list[int], policy: Any) -> None:
        if not self.need:
            self.capacity = int(policy.machine.capacity)
            self.need = policy.machine.need
        if started:
            self.passes.append((t, started))
        res = getattr(policy, "head_reservation", None)
        if res is not None and res[0] not in self.reservation:
            self.reservation[res[0]] = float(res[1])

    def allocate(self, end: np.ndarray) -> dict[int, list[tuple[int, int]]]:
        """Processor ranges of every started job (closed intervals of ids)."""
        import heapq

        stack = Stack(self.capacity)
        held: dict[int, list[tuple[float, float]]] = {}
        heap: list[tuple[float, int]] = []
        out: dict[int, list[tuple[int, int]]] = {}
        for t, started in self.passes:
            while heap and heap[0][0] <= t:  # ends at or before the pass first, as the engine frees them
                _, j = heapq.heappop(heap)
                stack.give(held.pop(j))
            for j in started:
                pieces = stack.take(float(self.need[j]))
                held[j] = pieces
                out[j] = [(int(round(a)), int(round(b)) - 1) for a, b in pieces]
                heapq.heappush(heap, (float(end[j]), j))
        return out

    def finish(self, jobs: dict[str, np.ndarray], summary: dict[str, float], table: Any, system: dict[str, Any]):
        """What ``schedlab view`` calls after the run (``Engine.recorder``): units
        are processors under model "procs", nodes otherwise."""
        return self.schedule(jobs, summary, "processor" if system.get("model") == "procs" else "node")

    def schedule(self, jobs: dict[str, np.ndarray], summary: dict[str, float], unit: str) -> Schedule:
        n = len(jobs["job_id"])
        alloc = self.allocate(jobs["end"])
        boxes = BoxList()
        requested = jobs["requested_time"]
        for r in range(n):
            for a, b in alloc.get(r, []):
                boxes.add(0, r, RUN, float(jobs["start"][r]), float(jobs["end"][r]), a, b + 1, 1.0, b + 1 - a)
        for r, shadow in self.reservation.items():
            for a, b in alloc.get(r, []):
                boxes.add(0, r, RESERVATION, shadow, shadow + float(requested[r]), a, b + 1, 0.0, 0.0)
        need = np.asarray(self.need, dtype=float) if self.need else np.zeros(n)
        busy_t, busy = step_count(jobs["start"], jobs["end"], need)
        return Schedule(
            engine="batch",
            jobs={**jobs, "need": need},
            summary=summary,
            panels=[Panel(f"{unit}s x time" + (RESERVED if self.reservation else ""), unit, self.capacity)],
            boxes=boxes.arrays(),
            series={
                "queue length": step_count(jobs["submit"], jobs["start"]),
                "utilisation": (busy_t, busy / max(self.capacity, 1)),
            },
            allocation=alloc,
            capacity=float(self.capacity),
        )


class PackingRecorder:
    """``simulate_packing``'s recorder: placements and departures in order."""

    def __init__(self) -> None:
        self.events: list[tuple[float, str, int, int]] = []

    def __call__(self, now: float, kind: str, job: int, server: int) -> None:
        self.events.append((now, kind, job, server))

    def finish(self, jobs: dict[str, np.ndarray], summary: dict[str, float], table: Any, system: dict[str, Any]):
        """What ``schedlab view`` calls after the run (``Engine.recorder``): the
        job table's demands and the servers' capacities, per resource."""
        from schedlab.engines.packing.sim.system import resources

        names = resources(table.columns)
        if names == [""]:
            demand = table["demand"].to_numpy().astype(float)[:, None]
        else:
            demand = np.column_stack([table[c].to_numpy().astype(float) for c in names])
        cap = np.broadcast_to(np.atleast_1d(np.asarray(system["capacity"], dtype=float)), (demand.shape[1],))
        capacity = np.tile(cap, (int(system["servers"]), 1))
        return self.schedule(jobs, summary, demand, capacity, names)

    def schedule(
        self,
        jobs: dict[str, np.ndarray],
        summary: dict[str, float],
        demand: np.ndarray,
        capacity: np.ndarray,
        resources: list[str],
    ) -> Schedule:
        """``demand``: n x d; ``capacity``: L x d; one panel per resource,
        server s drawn on [s, s + 1) scaled by its capacity."""
        n, d = demand.shape
        servers = capacity.shape[0]
        stacks = [[Stack(float(capacity[s, k])) for k in range(d)] for s in range(servers)]
        held: dict[int, tuple[float, list[list[tuple[float, float]]]]] = {}
        boxes = BoxList()
        hold_end = np.full(n, math.nan)
        for now, kind, j, s in self.events:
            if kind == "place":
                held[j] = (now, [stacks[s][k].take(float(demand[j, k])) for k in range(d)])
                continue
            t0, pieces = held.pop(j)
            hold_end[j] = now
            for k in range(d):
                stacks[s][k].give(pieces[k])
                cap = float(capacity[s, k])
                for a, b in pieces[k]:
                    boxes.add(k, j, RUN, t0, now, s + a / cap, s + b / cap, float(demand[j, k]) / cap, b - a)
        for j, (t0, pieces) in held.items():  # still running when the run stopped (``until``)
            s = int(jobs["server"][j])
            for k in range(d):
                cap = float(capacity[s, k])
                for a, b in pieces[k]:
                    boxes.add(k, j, RUN, t0, float(jobs["end"][j]), s + a / cap, s + b / cap, 0.0, b - a)
        series: dict[str, tuple[np.ndarray, np.ndarray]] = {
            "queue length": step_count(jobs["submit"], np.where(np.isnan(jobs["start"]), np.inf, jobs["start"]))
        }
        total = capacity.sum(axis=0)
        for k, name in enumerate(resources):
            t, v = step_count(jobs["start"], hold_end, demand[:, k])
            series[f"utilisation {name or 'demand'}"] = (t, v / total[k])
        names = [r or "demand" for r in resources]
        return Schedule(
            engine="packing",
            jobs={
                **jobs,
                "hold_end": hold_end,
                **{f"demand_{r}" if r else "demand": demand[:, k] for k, r in enumerate(resources)},
            },
            summary=summary,
            panels=[Panel(f"servers x time: {r}", "server", servers) for r in names],
            boxes=boxes.arrays(),
            series=series,
            capacity=float(servers),
        )


class DfrsRecorder:
    """``simulate_dfrs``'s recorder: after every instant, each running
    job's nodes, yield and whether it is in a penalty; from the changes, its
    pieces on the nodes' CPU, its paused intervals and its migrations."""

    def __init__(self) -> None:
        self.node_boxes = BoxList()
        self.job_boxes: list[tuple[int, int, float, float]] = []  # (row, kind, t0, t1)
        self.migrations: list[tuple[float, int]] = []
        self.open_nodes: dict[tuple[int, int], tuple[float, float, float, int, float, float]] = {}
        self.prev_where: dict[int, tuple[int, ...]] = {}
        self.open_job: dict[int, tuple[int, float]] = {}  # row -> (kind, since)
        self.util_t: list[float] = []
        self.util_v: list[float] = []
        self.nodes = 0

    def __call__(self, t: float, st: Any) -> None:
        from schedlab.engines.dfrs.sim.state import PAUSED as ST_PAUSED

        self.nodes = st.nodes
        now_nodes: dict[tuple[int, int], tuple[float, float, float, int, float]] = {}
        per_node: dict[int, list[tuple[int, int]]] = {}
        where_now: dict[int, tuple[int, ...]] = {}
        used = 0.0
        for j in sorted(st.running):
            nodes = tuple(int(k) for k in st.nodes_of(j))
            where_now[j] = nodes
            for k, count in sorted(Counter(nodes).items()):
                per_node.setdefault(k, []).append((j, count))
            if st.pen_until[j] <= t:
                used += st.cpu[j] * st.tasks[j] * float(st.y[j])
        for k, members in per_node.items():
            y = float(k)
            for j, count in members:
                cpu = count * st.cpu[j] * float(st.y[j])
                kind = PENALTY if st.pen_until[j] > t else RUN
                now_nodes[(j, k)] = (y, y + cpu, float(st.y[j]), kind, count * st.mem[j])
                y += cpu
        for key in list(self.open_nodes):
            t0, y0, y1, kind, yld, mem = self.open_nodes[key]
            if now_nodes.get(key) != (y0, y1, yld, kind, mem):
                if t > t0:
                    self.node_boxes.add(0, key[0], kind, t0, t, y0, y1, yld, mem)
                del self.open_nodes[key]
        for key, (y0, y1, yld, kind, mem) in now_nodes.items():
            if key not in self.open_nodes:
                self.open_nodes[key] = (t, y0, y1, kind, yld, mem)
        for j, nodes in where_now.items():
            old = self.prev_where.get(j)
            if old is not None and Counter(old) != Counter(nodes):
                self.migrations.append((t, j))
        # per-job state: running (or in penalty) or paused
        state: dict[int, int] = {j: (PENALTY if st.pen_until[j] > t else RUN) for j in where_now}
        for j in st.pending:
            if st.status[j] == ST_PAUSED:
                state[j] = PAUSED
        for j in list(self.open_job):
            kind, since = self.open_job[j]
            if state.get(j) != kind:
                if t > since:
                    self.job_boxes.append((j, kind, since, t))
                del self.open_job[j]
        for j, kind in state.items():
            if j not in self.open_job:
                self.open_job[j] = (kind, t)
        self.prev_where = where_now
        if not self.util_t or self.util_v[-1] != used / st.nodes:
            self.util_t.append(t)
            self.util_v.append(used / st.nodes)

    def finish(self, jobs: dict[str, np.ndarray], summary: dict[str, float], table: Any, system: dict[str, Any]):
        """What ``schedlab view`` calls after the run (``Engine.recorder``)."""
        return self.schedule(jobs, summary)

    def schedule(self, jobs: dict[str, np.ndarray], summary: dict[str, float]) -> Schedule:
        if self.open_nodes or self.open_job:
            raise AssertionError("dfrs recorder: jobs still placed at the end of the run")
        n = len(jobs["job_id"])
        boxes = self.node_boxes
        for r in range(n):
            boxes.add(1, r, LIFE, float(jobs["submit"][r]), float(jobs["end"][r]), r - 0.06, r + 0.06, 0.0, 0.0)
        for r, kind, t0, t1 in self.job_boxes:
            boxes.add(1, r, kind, t0, t1, r - BAR / 2, r + BAR / 2, 1.0, 0.0)
        mig_t = np.array([t for t, _ in self.migrations], dtype=float)
        mig_r = np.array([r for _, r in self.migrations], dtype=np.int64)
        waiting = step_count(jobs["submit"], jobs["end"])
        return Schedule(
            engine="dfrs",
            jobs=jobs,
            summary=summary,
            panels=[
                Panel("nodes x time: CPU share of each task (hatched: penalty)", "node", self.nodes),
                Panel("jobs: running, penalty, paused (x: migration)", "job", n),
            ],
            boxes=boxes.arrays(),
            series={
                "jobs in system": waiting,
                "CPU utilisation": (np.asarray(self.util_t), np.asarray(self.util_v)),
            },
            marks={"migration": {"t": mig_t, "row": mig_r, "panel": np.ones(len(mig_t), dtype=np.int64)}},
            capacity=float(self.nodes),
        )
