"""The DFRS engine: dynamic fractional resource scheduling of parallel jobs on
a homogeneous cluster with VM time-sharing (Stillwell, Vivien, Casanova,
"Dynamic Fractional Resource Scheduling vs. Batch Scheduling", TPDS 2012,
../shared/papers/dfrs-vs-batch-scheduling.md, §2, §4, §5).

Model (§2)
----------
``nodes`` identical nodes, each with CPU 1 and memory 1. Job j has
``tasks[j]`` tasks (= procs), a CPU need c_j in (0, 1] and a memory
requirement m_j in (0, 1] per task, a release r_j and a processing time p_j
(time on a dedicated system). Each task of a placed job sits on one node (a
node may hold several tasks of the same job); the memory of a node never
exceeds 1 (checked at every placement: :class:`DfrsCapacityError`); CPU may be
overloaded. A placed job gets a yield y_j in [0, 1]: each task is allocated
c_j y_j of its node's CPU, and the job progresses at rate y_j.

Virtual time = progress = integral of the job's *effective* rate, which is
y_j while the job is placed and not in a penalty, 0 otherwise. The job
completes when its virtual time reaches p_j.

Penalty (§5 intro): after a job is resumed (placed again after a pause) or
migrated (at least one task changes node), its rate is 0 for ``penalty``
seconds (default 300). A first start costs nothing. A job in its penalty
still holds its memory and is still given CPU by the resource allocation,
but that CPU does no work: the usage profile's u(t) counts only the CPU of
jobs making progress, so penalties show as underutilization -- the paper's
own reading (§5.3.2: DFRS's "lower efficiency is caused by time spent doing
preemption and migration", which a longer period should reduce). It can be
paused or migrated again (which restarts the penalty).

Events and tie rule
-------------------
Event-driven: next arrival, next completion (predicted from the current
yields), next penalty expiry. At an instant t: all completions (in job
order), then -- if any job completed -- ONE ``policy.on_completion(state)``,
then the arrivals at t one by one (submission order), each followed by
``policy.on_arrival(state, job)``; then, at the periodic instants
r_min + k x ``policy.period`` (policies with a period, the paper's /per:
k = 1, 2, ...), ONE ``policy.on_period(state)``; then, if the mapping
changed, the resource allocation (``policy.opt``: "MIN" or "AVG")
recomputes the yields -- or, when the policy has an ``allocate`` method,
``policy.allocate(state, next_period)`` does (it sets ``state.y`` for the
running jobs and returns the number of solver failures to add to
``lp_failures``; ``next_period`` is the next periodic instant, > now, or inf
without a period). The /stretch-per policies use this hook
(``schedlab.engines.dfrs.policies.stretch``).
A penalty expiry changes no mapping and no yield. (While nothing is running
or pending, periodic instants are skipped.)

Resource allocation (§4.6)
--------------------------
Only nodes whose CPU load Lambda_k (sum of the needs of the tasks on k)
exceeds 1 constrain anything; a job with no task on an overloaded node gets
yield 1. Lambda = max_k Lambda_k.

* ``OPT=MIN``: iterative max-min (progressive filling): all unfrozen jobs
  share a common level L, raised until a node saturates
  (sum of c_j y_j over its tasks = 1) or L = 1; the jobs on saturated nodes
  are frozen; repeat. The first level is 1/max(1, Lambda) (the paper's first
  step) and every job ends with y_j >= 1/max(1, max load over its nodes).
  The result is the max-min fair allocation.
* ``OPT=AVG``: maximise sum_j y_j (the average yield over placed jobs) with
  an LP (scipy ``linprog``, HiGHS): rows = overloaded nodes,
  sum c_j n_jk y_j <= 1, bounds 1/max(1, Lambda) <= y_j <= 1 -- the paper's
  "no job is given a yield lower than the maximized minimum" (the global
  max-min value, not each job's own max-min fair share: that per-job floor
  would make OPT=AVG equal to OPT=MIN on most small cases). If HiGHS fails,
  the OPT=MIN yields are kept and ``lp_failures`` counts it.

Priority (§4.1)
---------------
priority = flow time / virtual time^2 with flow time = now - r_j. A job with
zero virtual time (never run, or only run in penalty) has infinite priority,
and so has one whose virtual time is so small (~1e-154 s) that its square
underflows.
Ties (including among infinite priorities) go to the earlier submission
(release, then job index). :meth:`DfrsState.priority_key` sorts highest
priority first.

Metrics
-------
Per job: start (first placement), end, bounded stretch
(``stretch_bound.bounded_stretch``, 10 s threshold: max(C-r, 10)/max(p, 10)),
pauses, migrations (events moving at least one task), migrated_tasks and
mem_moved = m_j x (tasks moved): a pause moves all T_j tasks (the VM images
saved; the restore at resume is not counted again), a migration moves the
tasks whose node changed (multiset difference of old and new nodes).
Summary: n_jobs, stretch_mean, stretch_max, pauses, migrations, mem_moved,
underutilization (normalised, §5.3.1, from the engine's own piecewise-
constant demand D(t) = sum of c_j T_j over released unfinished jobs and
utilization u(t) = sum of c_j T_j y_j over placed jobs out of their penalty),
makespan, events,
lp_failures, sim_seconds (the simulation and metrics, not the bound), nodes,
penalty, dropped_oversize; with ``bound=True`` also stretch_lower_bound
(``max_stretch_lower_bound``: Theorem 1, solved by max flow), degradation =
stretch_max / stretch_lower_bound and bound_seconds.

Determinism: no random numbers; ties by job order / node index.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.optimize import linprog

from schedlab.errors import PolicyError, UserError
from schedlab.engines.dfrs.sim.system import DFRS as DFRS_SYSTEM
from schedlab.sim.bound.stretch_bound import (
    UsageProfile,
    bounded_stretch,
    max_stretch_lower_bound,
    normalized_underutilization,
)

DEFAULT_PENALTY = 300.0
MEM_EPS = 1e-9  # memory tolerance (node-memory units)
CPU_CHECK_TOL = 1e-6  # tolerance of the check flag on node CPU and yields
_LOAD_EPS = 1e-12

# job status
FUTURE, WAITING, RUNNING, PAUSED, DONE = 0, 1, 2, 3, 4


class DfrsCapacityError(PolicyError):
    """A placement would exceed a node's memory (a policy bug)."""


class DfrsCheckError(RuntimeError):
    """An invariant checked with ``check=True`` failed."""


def task_slots(free_mem: np.ndarray, m: float) -> np.ndarray:
    """How many more tasks of memory ``m`` each node can hold."""
    return np.floor((free_mem + MEM_EPS) / m).astype(np.int64)


class DfrsState:
    """The handle a mapping policy acts on. Read: ``free_mem``, ``load``
    (numpy, per node; do not modify), ``where[j]`` (node array of a placed
    job, else None), ``status``, ``tasks``, ``cpu``, ``mem`` (lists),
    ``running`` / ``pending`` (sets: placed jobs / waiting-or-paused jobs),
    ``now``. Act: :meth:`apply` (the only way to change the mapping)."""

    def __init__(self, nodes: int, release, processing, tasks, cpu, mem, penalty: float) -> None:
        self.nodes = int(nodes)
        self.release = [float(x) for x in release]
        self.processing = np.asarray(processing, dtype=float)
        self.tasks = [int(x) for x in tasks]
        self.cpu = [float(x) for x in cpu]
        self.mem = [float(x) for x in mem]
        self.penalty = float(penalty)
        n = len(self.tasks)
        self.n = n
        self.free_mem = np.ones(self.nodes)
        self.load = np.zeros(self.nodes)
        self.where: list[np.ndarray | None] = [None] * n
        self.status = [FUTURE] * n
        self.vt = np.zeros(n)
        self.pen_until = np.full(n, -math.inf)
        self.y = np.zeros(n)
        self.now = 0.0
        self.running: set[int] = set()
        self.pending: set[int] = set()
        self.start = np.full(n, math.nan)
        self.end = np.full(n, math.nan)
        self.pauses = np.zeros(n, dtype=np.int64)
        self.migrations = np.zeros(n, dtype=np.int64)
        self.migrated_tasks = np.zeros(n, dtype=np.int64)
        self.mem_moved = np.zeros(n)
        self.dirty = False

    # -- priority ------------------------------------------------------------
    def priority(self, j: int) -> float:
        """Flow time / virtual time^2; infinite for a job with zero virtual
        time or one so small that its square underflows (the limit as the
        virtual time goes to 0+)."""
        v = float(self.vt[j])
        v2 = v * v
        if v2 <= 0.0:
            return math.inf
        return (self.now - self.release[j]) / v2

    def priority_key(self, j: int) -> tuple:
        """Sort key, highest priority first; ties by submission (release, job).
        Every infinite priority (see :meth:`priority`) ranks first."""
        v = float(self.vt[j])
        v2 = v * v
        if v2 > 0.0:
            p = (self.now - self.release[j]) / v2
            if p < math.inf:
                return (1, -p, self.release[j], j)
        return (0, 0.0, self.release[j], j)

    def by_priority(self, jobs) -> list[int]:
        return sorted(jobs, key=self.priority_key)

    # -- mapping changes -----------------------------------------------------
    def _release(self, j: int) -> None:
        nodes = self.where[j]
        np.add.at(self.free_mem, nodes, self.mem[j])
        np.add.at(self.load, nodes, -self.cpu[j])
        self.where[j] = None

    def _acquire(self, j: int, nodes: np.ndarray) -> None:
        if len(nodes) != self.tasks[j]:
            raise DfrsCapacityError(f"t={self.now}: job {j} has {self.tasks[j]} tasks, placement has {len(nodes)}")
        if len(nodes) and (nodes.min() < 0 or nodes.max() >= self.nodes):
            raise DfrsCapacityError(f"t={self.now}: job {j} placed on a node outside 0..{self.nodes - 1}")
        np.add.at(self.free_mem, nodes, -self.mem[j])
        np.add.at(self.load, nodes, self.cpu[j])
        if len(nodes) and self.free_mem[nodes].min() < -MEM_EPS:
            k = int(nodes[np.argmin(self.free_mem[nodes])])
            raise DfrsCapacityError(f"t={self.now}: placing job {j} overfills the memory of node {k} "
                                    f"({1.0 - self.free_mem[k]:.6g} > 1)")
        self.where[j] = nodes

    def apply(self, *, pauses=(), moves=None, places=None) -> None:
        """Change the mapping atomically: first pause ``pauses`` (running jobs)
        and take the running jobs of ``moves`` ({job: nodes}) off their nodes,
        then place ``places`` ({job: nodes}; waiting or paused jobs) and put
        the moved jobs on their new nodes, in dict order. A move to the same
        multiset of nodes is no migration (no penalty, nothing counted)."""
        moves = moves or {}
        places = places or {}
        for j in pauses:
            if self.status[j] != RUNNING:
                raise DfrsCapacityError(f"t={self.now}: pause of job {j}, which is not running")
            self._release(j)
            self.status[j] = PAUSED
            self.running.discard(j)
            self.pending.add(j)
            self.pauses[j] += 1
            self.mem_moved[j] += self.mem[j] * self.tasks[j]
            self.y[j] = 0.0
        old = {}
        for j in moves:
            if self.status[j] != RUNNING:
                raise DfrsCapacityError(f"t={self.now}: move of job {j}, which is not running")
            old[j] = self.where[j]
            self._release(j)
        for j, nodes in places.items():
            if self.status[j] not in (WAITING, PAUSED):
                raise DfrsCapacityError(f"t={self.now}: placement of job {j}, which is neither waiting nor paused")
            self._acquire(j, np.asarray(nodes, dtype=np.int64))
            if self.status[j] == PAUSED:
                self.pen_until[j] = self.now + self.penalty
            else:
                self.start[j] = self.now
            self.status[j] = RUNNING
            self.pending.discard(j)
            self.running.add(j)
        for j, nodes in moves.items():
            nodes = np.asarray(nodes, dtype=np.int64)
            self._acquire(j, nodes)
            moved = self.tasks[j] - sum((Counter(old[j].tolist()) & Counter(nodes.tolist())).values())
            if moved:
                self.migrations[j] += 1
                self.migrated_tasks[j] += moved
                self.mem_moved[j] += self.mem[j] * moved
                self.pen_until[j] = self.now + self.penalty
        if pauses or moves or places:
            self.dirty = True

    def _finish(self, j: int) -> None:
        self._release(j)
        self.status[j] = DONE
        self.running.discard(j)
        self.y[j] = 0.0
        self.end[j] = self.now
        self.dirty = True


# -- resource allocation (§4.6) ------------------------------------------------

def _incidence(state: DfrsState, jobs: list[int], rows: np.ndarray) -> np.ndarray:
    """A[r, i] = c_j x (tasks of job jobs[i] on node rows[r])."""
    row_of = np.full(state.nodes, -1, dtype=np.int64)
    row_of[rows] = np.arange(len(rows))
    A = np.zeros((len(rows), len(jobs)))
    for i, j in enumerate(jobs):
        r = row_of[state.where[j]]
        r = r[r >= 0]
        if len(r):
            np.add.at(A[:, i], r, state.cpu[j])
    return A


def max_min_yields(A: np.ndarray) -> np.ndarray:
    """Progressive filling: the max-min fair y in [0, 1] with A y <= 1."""
    K, J = A.shape
    y = np.zeros(J)
    active = np.ones(J, dtype=bool)
    while active.any():
        act_load = A[:, active].sum(axis=1)
        used = A[:, ~active] @ y[~active]
        with np.errstate(divide="ignore", invalid="ignore"):
            lev = np.where(act_load > _LOAD_EPS, (1.0 - used) / act_load, np.inf)
        level = min(float(lev.min()) if K else np.inf, 1.0)
        level = max(level, 0.0)
        y[active] = level
        if level >= 1.0:
            break
        sat = lev <= level * (1.0 + 1e-12) + 1e-15
        freeze = active & (A[sat].sum(axis=0) > 0)
        active &= ~freeze
    return y


def allocate(state: DfrsState, opt: str) -> int:
    """Set ``state.y`` for the running jobs; returns 1 if the LP failed (AVG)."""
    jobs = sorted(state.running)
    if not jobs:
        return 0
    over = np.flatnonzero(state.load > 1.0 + _LOAD_EPS)
    jarr = np.asarray(jobs)
    if not len(over):
        state.y[jarr] = 1.0
        return 0
    overset = np.zeros(state.nodes, dtype=bool)
    overset[over] = True
    hit = [j for j in jobs if overset[state.where[j]].any()]
    state.y[jarr] = 1.0
    A = _incidence(state, hit, over)
    y = max_min_yields(A)
    failed = 0
    if opt == "AVG":
        floor = 1.0 / max(1.0, float(state.load.max()))
        floor = min(floor, float(y.min()))  # guard: never above the proven-feasible max-min values
        res = linprog(-np.ones(len(hit)), A_ub=A, b_ub=np.ones(len(over)), bounds=(floor, 1.0), method="highs")
        if res.status == 0 and res.x is not None:
            y = np.clip(res.x, 0.0, 1.0)
        else:
            failed = 1
    state.y[np.asarray(hit)] = y
    return failed


def check_state(state: DfrsState) -> None:
    """Invariants (``check=True``): memory <= 1 per node, yields in [0, 1],
    CPU allocated per node <= 1, only running jobs are placed."""
    mem = np.zeros(state.nodes)
    cpu = np.zeros(state.nodes)
    load = np.zeros(state.nodes)
    for j in range(state.n):
        w = state.where[j]
        if state.status[j] == RUNNING:
            if w is None:
                raise DfrsCheckError(f"t={state.now}: running job {j} has no placement")
            np.add.at(mem, w, state.mem[j])
            np.add.at(load, w, state.cpu[j])
            np.add.at(cpu, w, state.cpu[j] * state.y[j])
        elif w is not None:
            raise DfrsCheckError(f"t={state.now}: job {j} (status {state.status[j]}) holds nodes")
        elif state.y[j] != 0.0:
            raise DfrsCheckError(f"t={state.now}: job {j} is not placed but has yield {state.y[j]}")
    if mem.max(initial=0.0) > 1.0 + MEM_EPS * 10:
        raise DfrsCheckError(f"t={state.now}: node {int(mem.argmax())} memory {mem.max()} > 1")
    if np.abs(mem - (1.0 - state.free_mem)).max(initial=0.0) > 1e-7 or np.abs(load - state.load).max(initial=0.0) > 1e-7:
        raise DfrsCheckError(f"t={state.now}: node bookkeeping drifted")
    if state.y.min() < -CPU_CHECK_TOL or state.y.max() > 1.0 + CPU_CHECK_TOL:
        raise DfrsCheckError(f"t={state.now}: yield outside [0, 1]")
    if cpu.max(initial=0.0) > 1.0 + CPU_CHECK_TOL:
        raise DfrsCheckError(f"t={state.now}: node {int(cpu.argmax())} CPU allocated {cpu.max()} > 1")


# -- the event loop ------------------------------------------------------------

@dataclass
class DfrsResult:
    state: DfrsState
    events: int
    profile: UsageProfile
    lp_failures: int
    snapshots: list = field(default_factory=list)


def simulate_dfrs(release, processing, tasks, cpu, mem, nodes: int, policy, *, penalty: float = DEFAULT_PENALTY,
                  check: bool = False, snapshots: bool = False, hidden=None) -> DfrsResult:
    """Replay jobs (arrays in job order) under ``policy`` (an instance with
    ``opt``, ``on_arrival(state, j)``, ``on_completion(state)``). Every job
    must fit on the empty cluster (checked by :func:`run_table`).

    ``snapshots=True`` records, after each instant, (t, vt copy, status
    copy, pen_until copy, y copy) for tests. ``hidden`` (check mode,
    ``schedlab.checks``): a function applied once to the processing-time
    array, returning what ``state.processing`` then holds and the engine
    reads -- a guard that refuses reads from outside this module (None, the
    normal path, adds nothing per event)."""
    st = DfrsState(nodes, release, processing, tasks, cpu, mem, penalty)
    if hidden is not None:
        st.processing = hidden(st.processing)
    n = st.n
    rel = np.asarray(st.release)
    p = st.processing
    order = np.argsort(rel, kind="stable").tolist()
    demand_j = np.asarray(st.cpu) * np.asarray(st.tasks, dtype=float)
    times: list[float] = []
    dem: list[float] = []
    alloc: list[float] = []
    demand = 0.0
    snaps: list = []
    i = 0
    events = 0
    lp_failures = 0
    t = float(rel[order[0]]) if n else 0.0
    st.now = t
    period = getattr(policy, "period", None)
    own_allocate = getattr(policy, "allocate", None)  # optional hook (see the module docstring)
    t0 = t
    k_per = 1
    t_per = t0 + period if period else math.inf
    inf = math.inf
    while i < n or st.running or st.pending:
        t_arr = float(rel[order[i]]) if i < n else inf
        t_next = t_arr
        run = np.fromiter(st.running, dtype=np.int64, count=len(st.running)) if st.running else None
        if run is not None:
            pen = st.pen_until[run]
            active = pen <= t
            yr = st.y[run]
            rate = np.where(active, yr, 0.0)
            with np.errstate(divide="ignore"):
                t_c = np.where(rate > 0, t + (p[run] - st.vt[run]) / np.where(rate > 0, rate, 1.0), inf)
            t_next = min(t_next, float(t_c.min()))
            waiting_pen = pen[~active]
            if len(waiting_pen):
                t_next = min(t_next, float(waiting_pen.min()))
        if period and (st.running or st.pending):
            t_next = min(t_next, t_per)
        if t_next == inf:
            if not st.pending:  # placed jobs that never progress (a policy's own allocate gave them yield 0)
                raise PolicyError(f"t={t}: job {min(st.running)}: {len(st.running)} placed jobs make no progress "
                                  "and nothing arrives (every running job has yield 0)")
            raise PolicyError(f"t={t}: job {min(st.pending)}: {len(st.pending)} jobs pending but nothing runs and nothing arrives "
                               "(the policy left an idle cluster with jobs it never places)")
        dt = t_next - t
        if dt > 0:
            times.append(t)
            dem.append(demand)
            alloc.append(float(np.dot(demand_j[run], rate)) if run is not None else 0.0)  # working CPU only
        if run is not None:
            if dt > 0:
                st.vt[run] += rate * dt
            done = run[t_c <= t_next]
        else:
            done = np.zeros(0, dtype=np.int64)
        t = t_next
        st.now = t
        events += 1
        for j in sorted(done.tolist()):
            st.vt[j] = p[j]
            st._finish(j)
            demand -= demand_j[j]
        if len(done):
            policy.on_completion(st)
        while i < n and rel[order[i]] <= t:
            j = order[i]
            i += 1
            st.status[j] = WAITING
            st.pending.add(j)
            demand += demand_j[j]
            policy.on_arrival(st, j)
        if t_per <= t:
            while t_per < t:  # instants passed while idle are skipped
                k_per += 1
                t_per = t0 + k_per * period
            if t_per == t:
                if st.running or st.pending:
                    policy.on_period(st)
                k_per += 1
                t_per = t0 + k_per * period
        if not st.running and not st.pending:
            demand = 0.0  # drop round-off
        if st.dirty:
            if own_allocate is not None:
                lp_failures += int(own_allocate(st, t_per))
            else:
                lp_failures += allocate(st, policy.opt)
            st.dirty = False
        if check:
            check_state(st)
        if snapshots:
            snaps.append((t, st.vt.copy(), list(st.status), st.pen_until.copy(), st.y.copy()))
    times.append(t)
    if len(times) == 1:
        times.append(t + 1.0)
        dem.append(0.0)
        alloc.append(0.0)
    prof = UsageProfile(np.asarray(times), np.maximum(np.asarray(dem), 0.0), np.asarray(alloc))
    return DfrsResult(st, events, prof, lp_failures, snaps)


def _num_column(jobs, name: str, default: float | None) -> np.ndarray | None:
    if name in jobs.columns:
        return jobs[name].to_numpy().astype(float)
    if default is None:
        return None
    return np.full(jobs.height, float(default))


def tasks_per_node(memory: np.ndarray) -> np.ndarray:
    """Tasks of memory ``memory`` (fraction of a node) that fit one node: a
    job of p tasks fits the empty cluster iff p <= nodes x this (the oversize
    rule of :func:`run_table`; also checked at plan time, schedlab.sim.system)."""
    return np.floor((1.0 + MEM_EPS) / np.asarray(memory, dtype=float)).astype(np.int64)


def run_table(jobs, policy_cls, *, nodes: int, penalty: float = DEFAULT_PENALTY, cpu_need: float = 1.0,
              memory: float = 0.1, bound: bool = False, check: bool = False, oversize: str = "error",
              **params: Any) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Run ``policy_cls`` over a job table: job_id, submit, runtime, procs and
    optional per-job ``cpu_need`` / ``memory`` columns (the annotation; when
    absent every task gets ``cpu_need`` / ``memory``). ``nodes``: cluster
    size; ``penalty``: seconds per pause/migration; ``bound``: also compute
    the LP max-stretch lower bound and the degradation; ``check``: verify the
    invariants at every event; ``oversize``: "error" or "drop" for jobs that
    do not fit on the empty cluster (procs > nodes x floor(1/memory)). The
    system parameters are checked against the engine's declaration
    (``schedlab.engines.dfrs.sim.system.DFRS``), the same one a sweep's plan checks."""
    DFRS_SYSTEM.check_call({"nodes": nodes, "penalty": penalty, "cpu_need": cpu_need, "memory": memory,
                            "bound": bound, "oversize": oversize}, "dfrs engine", jobs.columns)
    for col in ("job_id", "submit", "runtime", "procs"):
        if col not in jobs.columns:
            raise UserError(f"dfrs engine: the job table needs a {col!r} column")
    job_id = jobs["job_id"].to_numpy()
    submit = jobs["submit"].to_numpy().astype(float)
    runtime = jobs["runtime"].to_numpy().astype(float)
    procs = jobs["procs"].to_numpy().astype(np.int64)
    cpu = _num_column(jobs, "cpu_need", cpu_need)
    mem = _num_column(jobs, "memory", memory)
    checks = (("submit", ~np.isfinite(submit), "is not finite"), ("runtime", ~(runtime >= 0) | ~np.isfinite(runtime), "must be finite and >= 0"),
              ("procs", procs < 1, "must be >= 1"), ("cpu_need", ~((cpu > 0) & (cpu <= 1)), "must be in (0, 1]"),
              ("memory", ~((mem > 0) & (mem <= 1)), "must be in (0, 1]"))
    for name, mask, what in checks:
        bad = np.flatnonzero(mask)
        if bad.size:
            raise UserError(f"dfrs engine: job {job_id[bad[0]]}: {name} {what}")
    per_node = tasks_per_node(mem)
    big = procs > int(nodes) * per_node
    dropped = int(big.sum())
    if dropped:
        if oversize == "error":
            k = int(np.flatnonzero(big)[0])
            raise UserError(f"dfrs engine: job {job_id[k]} has {procs[k]} tasks of memory {mem[k]} but the cluster "
                            f"holds at most {int(nodes) * per_node[k]} (use oversize='drop' to drop and count such jobs)")
        keep = ~big
        job_id, submit, runtime, procs, cpu, mem = (a[keep] for a in (job_id, submit, runtime, procs, cpu, mem))
    try:
        policy = policy_cls(**params)
    except TypeError as exc:
        raise UserError(f"dfrs engine: policy {policy_cls.name!r}: {exc}") from None
    started = time.perf_counter()
    res = simulate_dfrs(submit, runtime, procs, cpu, mem, int(nodes), policy, penalty=float(penalty), check=check)
    st = res.state
    n = len(submit)
    stretch = bounded_stretch(submit, runtime, st.end)
    summary: dict[str, Any] = {"n_jobs": float(n)}
    if n:
        total_work = float(np.sum(cpu * procs * runtime))
        underutil = (normalized_underutilization(float(nodes), profile=res.profile, total_work=total_work)
                     if total_work > 0 else math.nan)
        summary.update(stretch_mean=float(stretch.mean()), stretch_max=float(stretch.max()),
                       makespan=float(st.end.max() - submit.min()), underutilization=underutil)
    else:
        summary.update(stretch_mean=math.nan, stretch_max=math.nan, makespan=math.nan, underutilization=math.nan)
    summary.update(pauses=float(st.pauses.sum()), migrations=float(st.migrations.sum()),
                   migrated_tasks=float(st.migrated_tasks.sum()), mem_moved=float(st.mem_moved.sum()))
    wall = time.perf_counter() - started
    if bound and n:
        b0 = time.perf_counter()
        lb = max_stretch_lower_bound(submit, runtime, procs, cpu, float(nodes))
        summary.update(stretch_lower_bound=lb, degradation=summary["stretch_max"] / lb,
                       bound_seconds=time.perf_counter() - b0)
    summary.update(events=float(res.events), lp_failures=float(res.lp_failures), sim_seconds=wall,
                   nodes=float(nodes), penalty=float(penalty), dropped_oversize=float(dropped))
    per_job = {
        "job_id": job_id, "submit": submit, "start": st.start, "end": st.end, "procs": procs,
        "runtime": runtime, "cpu_need": cpu, "memory": mem, "stretch": stretch,
        "pauses": st.pauses, "migrations": st.migrations, "migrated_tasks": st.migrated_tasks,
        "mem_moved": st.mem_moved,
    }
    return per_job, summary
