"""Tetris (Grandl et al., "Multi-Resource Packing for Cluster Schedulers",
SIGCOMM 2014) and the slot-based fair scheduler it is compared against.

The rows of the job table are *tasks*; ``cluster.group(task)`` says which
(multi-task) job a task belongs to (without groups every task is a job).
Demands have any number d of resources.

Tetris
------
At each decision epoch Tetris repeatedly picks the feasible (task, server) pair
with the highest score, restricted to the tasks of the ⌈f·J⌉ jobs furthest
below their fair share, places it, and repeats until no such pair remains.

* **alignment** ``a(t, s) = Σ_r (demand_r(t) / cap_r(s)) · (free_r(s) / cap_r(s))``:
  the dot product of the task's demand and the server's free resources, both
  normalised by the server's capacity (the paper's packing score; the talk
  calls it the similarity of the demand and the machine's resource vector).
  A pair is feasible when the demand fits the free capacity in every resource
  (the engine's test, ``FIT_TOL``).
* **remaining work** (the multi-resource SRTF term) of job j:
  ``W_j = Σ over j's queued tasks of estimate(t) · |demand(t)|`` with
  ``|demand| = Σ_r demand_r / c̄_r`` (c̄ = the mean server capacity, so a task
  that fills one average server in every resource has |demand| = d). Only
  queued (unscheduled) tasks count: tasks that have not arrived yet are unknown
  to the scheduler. ``estimate`` is ``cluster.estimate`` -- by default the
  true duration: like the paper (which estimates durations from recurring
  jobs and finished tasks of the same phase), this term assumes known
  durations.
* **score** ``a(t, s) − ε · W_j``: jobs with less remaining work are favoured.
  ε makes the two terms comparable as in the paper, ``ε = m · ā / W̄``, with
  ā the mean, over the queued tasks that fit some server, of their best
  alignment, and W̄ the mean remaining work of the jobs with queued tasks, both
  taken at the start of the epoch; ``m`` is the parameter ``epsilon``
  (default 1: equal weight; 0 = pure packing).
* **fairness** (the knob f ∈ (0, 1] of the talk: f → 0 close to perfect
  fairness, f = 1 most efficient): the fair share is DRF's -- every one of the
  J jobs with queued tasks is entitled to an equal dominant share 1/J, a job's
  dominant share being ``max_r alloc_r / total capacity_r`` over its running
  tasks -- so "furthest below the fair share" is "smallest dominant share"
  (ties: lowest job id). Only the ⌈f·J⌉ first such jobs *that have a task
  fitting some server* are candidates (jobs that cannot use any free capacity
  are skipped, so the policy stays work-conserving); the set is recomputed
  after every placement (the placed job's share grows). With f·J ≤ 1 every
  placement goes to the most-starved job that can run something (DRF-like
  progressive filling); with f = 1 every job is a candidate.
* **ties**: the highest score; then the lowest server index; then the
  earliest task (lowest task index). Tasks of one job with the same demand
  vector are interchangeable, so they are kept FIFO by shape.

The talk's recommended knob value: "0.75 offers nearly the best possible
efficiency with little unfairness" -- the default ``fairness = 0.75``.

Cost. The problem is pairwise (task shapes × servers); the policy bounds it by
caching, for every distinct demand vector ("shape") among the queued tasks, the
alignment with every server that fits it, in a sorted list (best first).
A server's entries are recomputed only when its free capacity changes: at a
departure and after a placement on it, O(K · (d + log L)) with K the number of
distinct queued shapes; a new shape costs O(L · d) (numpy) + O(L log L).
Picking one placement scans the fair-share order until ⌈f·J⌉ candidate jobs
are found and reads the best server of each of their shapes: O(Σ shapes of the
scanned jobs), plus O(log J) to re-rank the placed job. So an epoch with P
placements and D servers freed costs O((D + P) · K · (d + log L) + P · S + J + K)
where S ≤ number of (job, shape) pairs scanned -- never a scan of tasks ×
servers, but with all-distinct continuous demands K is the queue length and the
per-placement refresh is O(Q log L).

Slots-Fair
----------
The slot-based fair scheduler of the talk ("slots allocated purely on
fairness considerations"): each server is cut into ⌊min_r cap_r / slot_r⌋
identical slots of the vector ``slot``; a task occupies
``k = ⌈max_r demand_r / slot_r⌉ ≥ 1`` slots whatever its real demand (a
task bigger than one slot takes several, so k slots always cover it and the
slot accounting never overcommits a server). Free slots go one task at a time
to the job holding the fewest slots (slot fair sharing; with one-slot tasks
this is the job with the fewest running tasks; ties: lowest job id), FIFO
among the tasks of a job, on the lowest-index server with k free slots. A job
whose next task fits nowhere waits (head of line within its job) while the
others are served. Default ``slot`` = the first server's capacity / 18: the
talk's example slot, [1 core, 2 GB] of an [18 cores, 36 GB] machine, which
reproduces its picture (each of the three jobs holds 6 of the 18 slots,
"DRF share = 1/3", 18 cores and 16 GB in use). Cost per placement:
O(log J + log L) plus the jobs skipped because their next task fits nowhere.
"""

from __future__ import annotations

import math
from collections import deque

import numpy as np
from sortedcontainers import SortedList

from schedlab.engines.packing.policies.base import PackingPolicy
from schedlab.engines.packing.policies.structures import MaxSegmentTree
from schedlab.engines.packing.sim.engine import FIT_TOL
from schedlab.errors import UserError

#: The talk's recommended fairness knob ("0.75 offers nearly the best possible efficiency").
DEFAULT_FAIRNESS = 0.75
#: Multiplier m of ε = m · ā / W̄ (1: the two terms weigh the same on average).
DEFAULT_EPSILON = 1.0
#: Slots per server in the talk's example: [18 cores, 36 GB] cut into [1 core, 2 GB] slots.
SLIDES_SLOTS_PER_SERVER = 18


def _real(policy: str, name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise UserError(f"policy {policy!r}: {name} must be a number (got {value!r})")
    value = float(value)
    if not math.isfinite(value):
        raise UserError(f"policy {policy!r}: {name} must be finite (got {value!r})")
    return value


def _no_extra(policy: str, params: dict) -> None:
    if params:
        raise UserError(f"policy {policy!r}: unknown parameter(s) {', '.join(sorted(params))}")


class _Job:
    __slots__ = ("classes", "queued", "work", "alloc", "running", "share")

    def __init__(self, d: int) -> None:
        self.classes: dict[tuple, deque[int]] = {}  # demand shape -> queued tasks, FIFO
        self.queued = 0
        self.work = 0.0  # remaining work W_j of the queued tasks
        self.alloc = [0.0] * d  # demand held by the running tasks
        self.running = 0
        self.share = 0.0  # dominant share of alloc


class _Shape:
    __slots__ = ("count", "size", "align", "order")

    def __init__(self, size: float) -> None:
        self.count = 0  # queued tasks with this demand vector
        self.size = size  # |demand|
        self.align: dict[int, float] = {}  # server -> alignment, servers that fit only
        self.order = SortedList()  # (-alignment, server): best first, lowest index on ties


class Tetris(PackingPolicy):
    name = "Tetris"
    summary = "Tetris: best alignment + ε·SRTF (task, server) pairs among the ⌈f·J⌉ jobs furthest below their DRF share"

    def __init__(self, cluster, fairness: float = DEFAULT_FAIRNESS, epsilon: float = DEFAULT_EPSILON, **params) -> None:
        super().__init__(cluster)
        _no_extra(self.name, params)
        self.fairness = _real(self.name, "fairness", fairness)
        if not 0.0 < self.fairness <= 1.0:
            raise UserError(f"policy {self.name!r}: fairness must be in (0, 1] (got {fairness!r})")
        self.epsilon = _real(self.name, "epsilon", epsilon)
        if self.epsilon < 0:
            raise UserError(f"policy {self.name!r}: epsilon must be >= 0 (got {epsilon!r})")
        L, d = cluster.servers, cluster.resources
        self.d = d
        cap = np.array([cluster.capacity(s) for s in range(L)], dtype=float).reshape(L, d)
        self.w = 1.0 / (cap * cap)  # alignment weights 1 / cap_r(s)^2
        total = cap.sum(axis=0)
        self.inv_total = (1.0 / total).tolist()
        self.inv_mean = (L / total).tolist()
        self.free = np.array([cluster.free(s) for s in range(L)], dtype=float).reshape(L, d)
        self.jobs: dict[int, _Job] = {}
        self.fair = SortedList()  # (dominant share, job id) of the jobs with queued tasks
        self.shapes: dict[tuple, _Shape] = {}
        self.dirty: set[int] = set()

    # -- helpers ---------------------------------------------------------------------------------

    def _share(self, alloc: list[float]) -> float:
        return max(a * w for a, w in zip(alloc, self.inv_total))

    def _new_shape(self, key: tuple) -> _Shape:
        vec = np.array(key, dtype=float)
        sh = _Shape(sum(k * w for k, w in zip(key, self.inv_mean)))
        feas = np.flatnonzero(np.all(vec <= self.free + FIT_TOL, axis=1))
        if len(feas):
            a = ((self.free[feas] * self.w[feas]) * vec).sum(axis=1)
            sh.align = dict(zip(feas.tolist(), a.tolist()))
            sh.order = SortedList(zip((-a).tolist(), feas.tolist()))
        self.shapes[key] = sh
        return sh

    def _refresh(self, s: int) -> None:
        """Recompute server s's alignment with every queued shape (its free capacity changed)."""
        row = self.free[s]
        rw = (row * self.w[s]).tolist()
        rt = (row + FIT_TOL).tolist()
        for key, sh in self.shapes.items():
            old = sh.align.pop(s, None)
            if old is not None:
                sh.order.remove((-old, s))
            if all(k <= t for k, t in zip(key, rt)):
                a = sum(k * w for k, w in zip(key, rw))
                sh.align[s] = a
                sh.order.add((-a, s))

    def _set_share(self, job: _Job, gid: int, was_listed: bool) -> None:
        new = self._share(job.alloc)
        if was_listed:
            self.fair.remove((job.share, gid))
        job.share = new
        if job.queued:
            self.fair.add((new, gid))

    def epoch_epsilon(self) -> float:
        """ε = m · ā / W̄ for the current queue (0 when undefined)."""
        if self.epsilon == 0.0 or not self.fair:
            return 0.0
        num, cnt = 0.0, 0
        for sh in self.shapes.values():
            if sh.order:
                num -= sh.count * sh.order[0][0]
                cnt += sh.count
        wbar = sum(self.jobs[gid].work for _, gid in self.fair) / len(self.fair)
        if cnt == 0 or not wbar > 0:
            return 0.0
        return self.epsilon * (num / cnt) / wbar

    def candidates(self) -> int:
        """⌈f·J⌉ (at least 1), J = jobs with queued tasks."""
        return max(1, math.ceil(self.fairness * len(self.fair) - 1e-9))

    # -- the seam -----------------------------------------------------------------------------------

    def arrive(self, job: int) -> None:
        c = self.cluster
        gid = c.group(job)
        key = tuple(c.demand(job).tolist())
        rec = self.jobs.get(gid)
        if rec is None:
            rec = self.jobs[gid] = _Job(self.d)
        dq = rec.classes.get(key)
        if dq is None:
            dq = rec.classes[key] = deque()
        dq.append(job)
        sh = self.shapes.get(key)
        if sh is None:
            sh = self._new_shape(key)
        sh.count += 1
        rec.work += c.estimate(job) * sh.size
        rec.queued += 1
        if rec.queued == 1:
            self.fair.add((rec.share, gid))

    def depart(self, job: int, server: int) -> None:
        c = self.cluster
        gid = c.group(job)
        rec = self.jobs[gid]
        rec.running -= 1
        if rec.running == 0:
            rec.alloc = [0.0] * self.d  # no drift
        else:
            rec.alloc = [a - r for a, r in zip(rec.alloc, c.demand(job).tolist())]
        self._set_share(rec, gid, rec.queued > 0)
        if rec.running == 0 and rec.queued == 0:
            del self.jobs[gid]
        self.free[server] = c.free(server)
        self.dirty.add(server)

    def _pick(self, eps: float):
        k = self.candidates()
        best = None
        found = 0
        jobs, shapes = self.jobs, self.shapes
        for _, gid in self.fair:
            rec = jobs[gid]
            pen = eps * rec.work
            cand = None
            for key, dq in rec.classes.items():
                order = shapes[key].order
                if order:
                    na, s = order[0]
                    c = (na + pen, s, dq[0], key)
                    if cand is None or c[:3] < cand[:3]:
                        cand = c
            if cand is None:
                continue  # nothing of this job fits anywhere: not a candidate
            if best is None or cand[:3] < best[0][:3]:
                best = (cand, gid)
            found += 1
            if found == k:
                break
        return best

    def schedule(self) -> list[tuple[int, int]]:
        for s in sorted(self.dirty):
            self._refresh(s)
        self.dirty.clear()
        out: list[tuple[int, int]] = []
        if not self.fair:
            return out
        c = self.cluster
        eps = self.epoch_epsilon()
        while True:
            hit = self._pick(eps)
            if hit is None:
                break
            (_, s, task, key), gid = hit
            rec = self.jobs[gid]
            dq = rec.classes[key]
            dq.popleft()
            if not dq:
                del rec.classes[key]
            sh = self.shapes[key]
            sh.count -= 1
            if sh.count == 0:
                del self.shapes[key]
            rec.queued -= 1
            rec.work = rec.work - c.estimate(task) * sh.size if rec.queued else 0.0
            rec.running += 1
            dem = c.demand(task)
            rec.alloc = [a + r for a, r in zip(rec.alloc, dem.tolist())]
            self._set_share(rec, gid, True)
            self.free[s] -= dem  # the engine's own arithmetic: our copy stays bit-identical
            self._refresh(s)
            out.append((task, s))
        return out


class _SlotJob:
    __slots__ = ("queue", "held")

    def __init__(self) -> None:
        self.queue: deque[int] = deque()
        self.held = 0  # slots held by running tasks


class SlotsFair(PackingPolicy):
    name = "Slots-Fair"
    summary = (
        "slot-based fair scheduler: fixed slots per server, free slots to the job holding the fewest "
        "(Tetris's baseline)"
    )

    def __init__(self, cluster, slot=None, **params) -> None:
        super().__init__(cluster)
        _no_extra(self.name, params)
        L, d = cluster.servers, cluster.resources
        cap = np.array([cluster.capacity(s) for s in range(L)], dtype=float).reshape(L, d)
        if slot is None:
            vec = cap[0] / SLIDES_SLOTS_PER_SERVER
        else:
            raw = np.atleast_1d(np.asarray(slot, dtype=object)).ravel()
            vals = [_real(self.name, "slot", v) for v in raw]
            if len(vals) not in (1, d):
                raise UserError(f"policy {self.name!r}: slot must be a number or {d} numbers (got {slot!r})")
            vec = np.broadcast_to(np.array(vals, dtype=float), (d,)).copy()
            if not np.all(vec > 0):
                raise UserError(f"policy {self.name!r}: slot sizes must be > 0 (got {slot!r})")
        self.slot = vec
        self.inv_slot = (1.0 / vec).tolist()
        nslots = np.floor((cap / vec).min(axis=1) * (1 + 1e-12)).astype(int)
        if not np.any(nslots >= 1):
            raise UserError(f"policy {self.name!r}: slot {vec.tolist()} is larger than every server")
        self.slots = nslots.tolist()
        self.tree = MaxSegmentTree([float(n) for n in self.slots])
        self.free = np.array([cluster.free(s) for s in range(L)], dtype=float).reshape(L, d)
        self.jobs: dict[int, _SlotJob] = {}
        self.fair = SortedList()  # (slots held, job id) of the jobs with queued tasks
        self.taken: dict[int, int] = {}  # running task -> slots it occupies

    def slots_of(self, task: int) -> int:
        """Slots a task occupies: ⌈max_r demand_r / slot_r⌉, at least 1."""
        x = max(r * w for r, w in zip(self.cluster.demand(task).tolist(), self.inv_slot))
        return max(1, math.ceil(x * (1 - 1e-12)))

    def arrive(self, job: int) -> None:
        gid = self.cluster.group(job)
        rec = self.jobs.get(gid)
        if rec is None:
            rec = self.jobs[gid] = _SlotJob()
        rec.queue.append(job)
        if len(rec.queue) == 1:
            self.fair.add((rec.held, gid))

    def depart(self, job: int, server: int) -> None:
        k = self.taken.pop(job)
        self.tree.update(server, self.tree[server] + k)
        self.free[server] = self.cluster.free(server)
        gid = self.cluster.group(job)
        rec = self.jobs[gid]
        if rec.queue:
            self.fair.remove((rec.held, gid))
        rec.held -= k
        if rec.queue:
            self.fair.add((rec.held, gid))
        elif rec.held == 0:
            del self.jobs[gid]

    def _server_for(self, task: int, k: int) -> int:
        """Lowest-index server with k free slots (and, as a guard against rounding, real room)."""
        dem = self.cluster.demand(task)
        s = self.tree.first_at_least(k, 0)
        while s >= 0:
            if np.all(dem <= self.free[s] + FIT_TOL):
                return s
            s = self.tree.first_at_least(k, s + 1)
        return -1

    def schedule(self) -> list[tuple[int, int]]:
        out: list[tuple[int, int]] = []
        blocked: set[int] = set()  # jobs whose next task fits nowhere (free slots only shrink in an epoch)
        while self.fair and self.tree.max() >= 1:
            hit = None
            for held, gid in self.fair:
                if gid in blocked:
                    continue
                task = self.jobs[gid].queue[0]
                k = self.slots_of(task)
                s = self._server_for(task, k)
                if s < 0:
                    blocked.add(gid)
                    continue
                hit = (held, gid, task, k, s)
                break
            if hit is None:
                break
            held, gid, task, k, s = hit
            rec = self.jobs[gid]
            rec.queue.popleft()
            self.fair.remove((held, gid))
            rec.held += k
            if rec.queue:
                self.fair.add((rec.held, gid))
            self.tree.update(s, self.tree[s] - k)
            self.free[s] -= self.cluster.demand(task)
            self.taken[task] = k
            out.append((task, s))
        return out
