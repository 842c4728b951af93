"""The batch engine: rigid parallel jobs, space-shared without preemption on a
homogeneous cluster (the FCFS / EASY baselines of the DFRS paper, §5).

Model
-----
Job j is submitted at ``submit[j]`` and asks for ``procs[j]`` processors (or
tasks) for a user-estimated ``requested_time[j]``; once started it holds its
share of the machine exclusively for its *actual* ``runtime[j]`` and releases it.
The scheduler (the policy) sees submit, procs, requested time and the machine
state, never the actual runtime. The machine is a number of identical *units*;
how a job maps to units is the machine model (``model``):

* ``"procs"`` -- the Parallel Workloads Archive convention: the machine has
  ``procs`` processors, a job needs ``procs[j]`` of them, no topology (units =
  processors);
* ``"nodes"`` -- whole nodes held exclusively: the machine has ``nodes`` nodes
  and a job of p tasks holds ``ceil(p / tasks_per_node)`` nodes (units =
  nodes). ``tasks_per_node = 1`` (the default) is the DFRS comparison: a task
  holds a whole node, whatever its number of cores.

Jobs larger than the machine
----------------------------
A job needing more units than the machine has can never run. ``oversize =
"error"`` (the default) raises a :class:`UserError` naming the first such job
id; ``oversize = "drop"`` removes such jobs before the run, counts them in the
summary (``dropped_oversize``) and leaves them out of the per-job rows.

Events and tie rule
-------------------
Event-driven: the engine jumps from one event instant to the next (the next
submit or the next actual end; a heap of (end, job) for completions, O(log n)
per job). At each instant t it applies *all* events at t -- completions first
(in (end, job) order), then arrivals (in job order) -- and then makes exactly
ONE ``policy.schedule(t)`` call; the jobs it returns start at t, in list order.
A job of runtime 0 ends at its start instant; its completion is handled at a
second pass at the same t (completions, arrivals, one schedule again).

The seam (``schedlab.engines.batch.policies.base``): ``arrive(job)``,
``complete(job)``, ``schedule(now) -> list[job]``. The policy reads the
machine through the :class:`Machine` handle (capacity, free units at the
start of the pass, each job's need in units, requested time, submit). Each
start is checked against the free units left after the earlier starts of the
same list: a job that does not fit, or is not queued, raises
:class:`BatchCapacityExceeded` / :class:`BatchStartError` (a policy bug, never
repaired).

EASY's backfilling rule
-----------------------
``easy_backfill = "canonical"`` (the default) is the textbook rule; ``"vcsim"``
is the DFRS authors' simulator's (docs/dfrs.md row 22): the head's reservation
is pinned to units when made, and a later job backfills only onto the free
units outside it, whatever its length (``schedlab.engines.batch.policies.easy``). The
policy reads it from :class:`Machine`; other policies ignore it. EASY's
compiled kernel implements the canonical rule only, so EASY under ``"vcsim"``
runs on the reference engine (FCFS keeps its kernel).

Metrics
-------
Per job: wait = start - submit; bounded stretch = max(end - submit, tau) /
max(runtime, tau), tau = ``BOUNDED_STRETCH_THRESHOLD`` = 10 s -- the DFRS
paper's bounded stretch, computed by the same function as the DFRS engine
and its LP bound (``stretch_bound.bounded_stretch``), so batch and DFRS
results compare directly. Summary: ``n_jobs``, ``stretch_mean``,
``stretch_max``, ``wait_mean``, ``wait_max``, ``utilisation`` = used
unit-seconds (need x runtime) / (capacity x (last end - first submit)),
``makespan`` = last end - first submit, ``events`` = number of scheduling
passes (event instants visited), ``sim_seconds``; and the machine:
``model_nodes`` (0 = procs model, 1 = nodes model; a number because summary
values are floats), ``capacity`` (units), ``tasks_per_node``,
``dropped_oversize``.

The DFRS view of the same schedule (dfrs-vs-batch-scheduling §3, §5.3.1):
each of a job's ``procs`` tasks has a CPU need c_j (a ``cpu_need`` column,
else the ``cpu_need`` parameter, default 1) on a platform of |P| = nodes
(model nodes) or procs (model procs, a processor being a node of one core).
``underutilization`` is the normalised underutilization of the schedule
(a running batch job uses exactly its need; NaN in the nodes model when
tasks_per_node x c_j > 1, where the tasks of a node would not fit its CPU), and with ``bound=True`` the
summary adds Theorem 1's ``stretch_lower_bound`` (LP relaxation, infinite memory; solved by max flow) and
``degradation`` = stretch_max / stretch_lower_bound -- the same bound the
DFRS engine computes for the same annotated jobs.

Determinism
-----------
No random numbers; ties are decided by order (completions by (end, job),
arrivals in job order, starts in the policy's list order). Same inputs, same
outputs, bit for bit.
"""

from __future__ import annotations

import heapq
import inspect
import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from numpy.typing import ArrayLike

from schedlab.engines.batch.sim.system import BATCH as BATCH_SYSTEM
from schedlab.engines.batch.sim.system import BATCH_MODELS, BOUND_TOL, MACHINE_PROCS, units_needed
from schedlab.errors import PolicyError, UserError
from schedlab.sim.bound.stretch_bound import BOUNDED_STRETCH_THRESHOLD, bounded_stretch, max_stretch_lower_bound
from schedlab.sim.bound.underutilization import normalized_underutilization
from schedlab.sim.common.portable import dot
from schedlab.sim.common.stepping import run_to_end
from schedlab.sim.system.jobs import BATCH_JOBS

if TYPE_CHECKING:
    import polars as pl

MODELS = BATCH_MODELS

_WAITING, _QUEUED, _RUNNING, _DONE = 0, 1, 2, 3


class BatchCapacityExceeded(PolicyError):
    """A policy started a job without enough free units for it."""

    def __init__(self, job: int, need: int, free: int, now: float) -> None:
        self.job, self.need, self.free, self.now = job, need, free, now
        super().__init__(f"t={now}: job {job} needs {need} units but only {free} are free")


class BatchStartError(PolicyError):
    """A policy started a job that is not queued (``job``: what it named,
    ``now``: the pass's time)."""

    def __init__(self, message: str, job: object = None, now: float | None = None) -> None:
        super().__init__(message)
        self.job, self.now = job, now


class BatchPolicy(Protocol):
    """The seam between the engine and a policy (see ``schedlab.engines.batch.policies.base``)."""

    def arrive(self, job: int) -> None: ...
    def complete(self, job: int) -> None: ...
    def schedule(self, now: float) -> list[int]: ...


class BatchStalled(PolicyError):
    """The machine sat idle with jobs queued although each fits the empty
    machine (``schedlab check-policy``'s ``completes`` invariant, with this
    message). :func:`simulate_batch` raises it at the instant it happens: at
    the end of a pass that leaves nothing running and a job queued (O(1) per
    pass: the running and queued counts), not when the workload runs out."""


class Machine:
    """The handle a batch policy is built with. ``free`` is the number of free
    units at the start of the current pass (the engine updates it after the
    pass's starts); ``need``, ``requested`` and ``submit`` are Python lists
    indexed by job (do not modify them). ``easy_backfill`` is the ``[system]``
    option of that name (``"canonical"`` or ``"vcsim"``), read by EASY
    (``schedlab.engines.batch.policies.easy``)."""

    __slots__ = ("capacity", "free", "now", "need", "requested", "submit", "easy_backfill")

    def __init__(
        self,
        capacity: int,
        need: list[int],
        requested: list[float],
        submit: list[float],
        easy_backfill: str = "canonical",
    ) -> None:
        self.easy_backfill = easy_backfill
        self.capacity = int(capacity)
        self.free = int(capacity)
        self.now = 0.0
        self.need = need
        self.requested = requested
        self.submit = submit


@dataclass
class BatchResult:
    start: np.ndarray
    end: np.ndarray
    events: int
    policy: Any  # the policy instance after the run (tests read its reservations)


class BatchRun:
    """The event loop of :func:`simulate_batch`, one instant at a time: the
    engine's machine and queue state, so that a caller other than
    :func:`simulate_batch` (the Gymnasium environment ``schedlab/Batch-v0``,
    a test) can drive it.

    The surface every engine's run has (``schedlab.sim.common.stepping``):
    :meth:`peek` is the next instant (``inf``: none is left), :meth:`step`
    processes it -- its events, the policy's one ``schedule`` pass, the
    starts, the recorder, the stall test -- and the step that finds nothing
    left sets ``done``; :meth:`result` is the :class:`BatchResult` (so far,
    if called before). Its halves, for a driver that makes the pass itself:
    :meth:`advance` applies every event of the next instant (completions in
    (end, job) order, then arrivals in job order, through the policy's
    ``complete`` / ``arrive``), counts one pass and returns the instant (None
    when every job has ended); :meth:`start` applies a pass's starts, checked.
    """

    def __init__(
        self,
        submit: ArrayLike,
        runtime: ArrayLike,
        requested: ArrayLike,
        need: ArrayLike,
        capacity: int,
        policy_factory: Callable[[Machine], Any],
        *,
        hidden: Callable[[list[float]], Sequence[float]] | None = None,
        easy_backfill: str = "canonical",
        recorder: Callable[[float, list[int], Any], None] | None = None,
    ) -> None:
        self.recorder = recorder
        self.done = False
        submit_a = np.asarray(submit, dtype=float)
        self.n = n = len(submit_a)
        self.sub_l = submit_a.tolist()
        run_l: Sequence[float] = np.asarray(runtime, dtype=float).tolist()
        if hidden is not None:
            run_l = hidden(list(run_l))
        self.run_l = run_l
        self.need_l = np.asarray(need, dtype=np.int64).tolist()
        self.machine = Machine(
            capacity,
            list(self.need_l),
            np.asarray(requested, dtype=float).tolist(),
            list(self.sub_l),
            easy_backfill,
        )
        self.policy = policy_factory(self.machine)
        self.order = np.argsort(submit_a, kind="stable").tolist()
        self.start_l = [math.nan] * n
        self.end_l = [math.nan] * n
        self.state = [_WAITING] * n
        self.heap: list[tuple[float, int]] = []
        self.free = int(capacity)
        self.i = 0
        self.passes = 0
        self.started = 0

    def peek(self) -> float:
        """The next instant (``inf``: none is left)."""
        i, heap = self.i, self.heap
        t_arr = self.sub_l[self.order[i]] if i < self.n else math.inf
        return heap[0][0] if heap and heap[0][0] < t_arr else t_arr

    def step(self) -> None:
        """Process the next instant: its events, one ``schedule`` pass and its
        starts (or, with nothing left, end the run: ``done``)."""
        if self.done:
            raise RuntimeError("step() on a finished run")
        self._instants_until(self.passes + 1)

    def step_to_end(self) -> None:
        """Process every instant left: what ``while not run.done: run.step()``
        does, in one loop (:func:`simulate_batch`'s)."""
        if self.done:
            raise RuntimeError("step() on a finished run")
        self._instants_until(-1)

    def _instants_until(self, stop: int) -> None:
        """The engine's one loop: process instants until the pass numbered
        ``stop`` (``passes``) has run or the run is done (``stop = -1``: to
        the end), with the run's fixed references loaded once, not per instant."""
        policy, recorder, advance, start, heap = self.policy, self.recorder, self.advance, self.start, self.heap
        while (t := advance()) is not None:
            starts = policy.schedule(t)
            start(starts, t)
            if recorder is not None:
                recorder(t, list(starts), policy)  # schedule() returns a list (the seam)
            if not heap and self.started < self.i:  # nothing running, a job queued: idle from this instant on
                queued = [j for j in range(self.n) if self.state[j] == _QUEUED]  # once, on the way out
                raise BatchStalled(
                    f"t={t}: job {queued[0]} never starts ({len(queued)} of {self.n} jobs queued) although it fits "
                    f"the empty machine: the policy left it queued with every unit free since t={t}"
                )
            if self.passes == stop:
                return
        self.done = True

    def advance(self) -> float | None:
        """Apply the events of the next instant and return it (None: done)."""
        n, heap, order, sub_l = self.n, self.heap, self.order, self.sub_l
        i = self.i
        if not (i < n or heap):
            return None
        policy, state, need_l = self.policy, self.state, self.need_l
        t_arr = sub_l[order[i]] if i < n else math.inf
        t = heap[0][0] if heap and heap[0][0] < t_arr else t_arr
        free = self.free
        while heap and heap[0][0] <= t:
            _, j = heapq.heappop(heap)
            free += need_l[j]
            state[j] = _DONE
            policy.complete(j)
        while i < n and sub_l[order[i]] <= t:
            j = order[i]
            i += 1
            state[j] = _QUEUED
            policy.arrive(j)
        self.i = i
        self.free = free
        self.machine.now = t
        self.machine.free = free
        self.passes += 1
        return t

    def start(self, jobs: Iterable[int], t: float) -> None:
        """Start ``jobs`` (a pass's list, in order) at ``t``."""
        n, state, need_l, heap = self.n, self.state, self.need_l, self.heap
        free = self.free
        for j in jobs:
            if not (0 <= j < n) or state[j] != _QUEUED:
                raise BatchStartError(f"t={t}: policy started job {j}, which is not queued", j, t)
            nj = need_l[j]
            if nj > free:
                raise BatchCapacityExceeded(j, nj, free, t)
            free -= nj
            state[j] = _RUNNING
            self.started += 1
            self.start_l[j] = t
            e = t + self.run_l[j]
            self.end_l[j] = e
            heapq.heappush(heap, (e, j))
        self.free = free
        self.machine.free = free

    def result(self) -> BatchResult:
        return BatchResult(
            np.array(self.start_l, dtype=float), np.array(self.end_l, dtype=float), self.passes, self.policy
        )


def simulate_batch(
    submit: ArrayLike,
    runtime: ArrayLike,
    requested: ArrayLike,
    need: ArrayLike,
    capacity: int,
    policy_factory: Callable[[Machine], Any],
    *,
    hidden: Callable[[list[float]], Sequence[float]] | None = None,
    recorder: Callable[[float, list[int], Any], None] | None = None,
    easy_backfill: str = "canonical",
) -> BatchResult:
    """Replay jobs (arrays in job order) on a machine of ``capacity`` units.

    ``need`` is in units (see :func:`units_needed`); every need must be in
    1..capacity (checked by the caller). Returns start and end times.
    ``hidden`` (check mode, ``schedlab.checks``): a function applied once to
    the list of actual runtimes, returning the sequence the engine then reads
    -- a guard that refuses reads from outside this module (None, the normal
    path, adds nothing per pass).
    ``recorder`` (schedule views, ``schedlab.views``): called after every pass
    as ``recorder(t, started, policy)`` (the jobs started at t, in order; the
    policy, whose ``head_reservation`` an EASY-like policy exposes). None (the
    normal path) costs one test per pass. ``easy_backfill``: the machine's
    ``easy_backfill`` (:class:`Machine`). The loop is :class:`BatchRun`
    stepped to its end."""
    return run_to_end(
        BatchRun(
            submit,
            runtime,
            requested,
            need,
            capacity,
            policy_factory,
            hidden=hidden,
            easy_backfill=easy_backfill,
            recorder=recorder,
        )
    )


def run_table(
    jobs: pl.DataFrame,
    policy_cls: Any,
    *,
    path: str = "reference",
    kernel: str | tuple[str, int, bool] | None = None,
    recorder: Callable[[float, list[int], Any], None] | None = None,
    **kwargs: Any,
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Run ``policy_cls`` over a job table: columns job_id, submit, runtime,
    procs and requested_time (absent, or ``estimates="exact"``: requested =
    runtime, exact estimates -- what the DFRS authors' simulator gave EASY,
    docs/dfrs.md). ``easy_backfill``: EASY's backfilling rule, ``"canonical"``
    or ``"vcsim"`` (the DFRS authors' simulator's, ``schedlab.engines.batch.policies.easy``);
    other policies ignore it, and EASY under ``"vcsim"`` runs on the reference
    engine (its kernel implements the canonical rule only).
    ``kwargs``: the machine settings :func:`table_inputs` takes (its keyword
    arguments, their defaults there: ``TABLE_SETTINGS``), the rest the
    policy's parameters. Machine: ``model="procs"`` with ``procs`` processors (0 or None: the
    table's ``machine_procs`` column, an SWF header's MaxProcs), or
    ``model="nodes"`` with ``nodes`` nodes and ``tasks_per_node``.
    ``oversize``: "error" or "drop". ``cpu_need`` (a per-job column wins) and
    ``bound``: the DFRS view (module docstring). The machine parameters are
    checked against the engine's declaration (``schedlab.engines.batch.sim.system.BATCH``),
    the same one a sweep's plan checks. Other params go to the policy.
    ``path``: "reference" (the default here: :func:`simulate_batch` with the
    Python policy) or "fast" (what ``Engine.run`` passes by default): with
    ``kernel``, the id of a compiled kernel of ``schedlab.engines.batch.sim.fast``
    (which the engine registry, ``schedlab.engines.batch``, gives for the
    built-in classes themselves -- by identity, never a subclass), and
    no params, the run is the kernel's (the same start and end times to the
    bit, the same pass count); without a kernel, for any input the kernel
    declines, and while another process compiles the kernel
    (``schedlab.sim.common.compiling``), it runs on the reference. Only the simulation
    differs between the paths: the metrics are computed here for both.
    ``recorder``: given to :func:`simulate_batch` (the reference path then
    runs: it is the only one that records).
    Returns (per-job columns, summary)."""
    if path not in ("fast", "reference"):
        raise UserError(f"batch engine: path must be 'fast' or 'reference'; got {path!r}")
    settings = {k: kwargs.pop(k) for k in list(kwargs) if k in TABLE_SETTINGS}
    t = table_inputs(jobs, **settings)
    params = kwargs
    submit, runtime, requested, need, capacity = t.submit, t.runtime, t.requested, t.need, t.capacity
    if params:
        try:
            policy_cls(Machine(capacity, [], [], []), **params)
        except TypeError as exc:
            raise UserError(f"batch engine: policy {policy_cls.name!r}: {exc}") from None
    res = None
    if t.easy_backfill != "canonical" and kernel == "EASY":
        kernel = None  # the kernel implements the canonical rule only: the reference engine runs vcsim's
    if path == "fast" and kernel is not None and not params and recorder is None:  # numba is imported only here
        from schedlab.engines.batch.sim import fast
        from schedlab.sim.common import compiling

        if compiling.ready(fast.unit(kernel)):  # else compiled beside this process now: the reference runs
            fast.warm(kernel)  # compile or load the kernel outside the timed run
            started = time.perf_counter()
            out = fast.simulate(kernel, submit, runtime, requested, need, capacity)
            if out is not None:
                res = BatchResult(out[0], out[1], out[2], None)
    if res is None:  # the reference path (or the kernel declined)
        started = time.perf_counter()
        res = run_to_end(reference_run(t, policy_cls, params, recorder=recorder))
    return table_outcome(t, res, time.perf_counter() - started)


@dataclass
class TableInputs:
    """A job table and the machine as the engine runs them (:func:`table_inputs`):
    the job arrays after the oversize rule, the machine's units and the settings the metrics read."""

    job_id: np.ndarray
    submit: np.ndarray
    runtime: np.ndarray
    jprocs: np.ndarray
    requested: np.ndarray
    need: np.ndarray
    cpu: np.ndarray
    capacity: int
    model: str
    tpn: int
    dropped: int
    dfrs_view: bool
    bound: bool
    easy_backfill: str


def table_inputs(
    jobs: pl.DataFrame,
    *,
    model: str = "procs",
    procs: int | None = None,
    nodes: int | None = None,
    tasks_per_node: int = 1,
    oversize: str = "error",
    cpu_need: float = 1.0,
    bound: bool = False,
    estimates: str = "requested",
    easy_backfill: str = "canonical",
) -> TableInputs:
    """Read and check a job table and the machine parameters of :func:`run_table`
    (against the engine's declaration) and apply the oversize rule: the
    instance :func:`run_table` runs on either path, and :func:`reference_run`
    builds its run from."""
    system = BATCH_SYSTEM.check_call(
        {
            "model": model,
            "procs": procs,
            "nodes": nodes,
            "tasks_per_node": tasks_per_node,
            "oversize": oversize,
            "cpu_need": cpu_need,
            "bound": bound,
            "estimates": estimates,
            "easy_backfill": easy_backfill,
        },
        "batch engine",
        jobs.columns,
    )
    tpn = int(tasks_per_node)
    if model == "procs":
        capacity = int(system["procs"]) or (int(jobs[MACHINE_PROCS][0]) if jobs.height else 0)
        if capacity < 1:  # procs = 0 and the table's machine_procs gives no size either
            raise UserError(
                f"batch engine: procs: the job table's {MACHINE_PROCS} gives no machine size "
                f"({'no rows' if not jobs.height else capacity}); give procs >= 1"
            )
    else:
        capacity = int(system["nodes"])
    for col in BATCH_JOBS.required:
        if col not in jobs.columns:
            raise UserError(f"batch engine: the job table needs a {col!r} column")
    job_id = jobs["job_id"].to_numpy()
    submit = jobs["submit"].to_numpy().astype(float)
    runtime = jobs["runtime"].to_numpy().astype(float)
    jprocs = jobs["procs"].to_numpy().astype(np.int64)
    if "requested_time" in jobs.columns and estimates != "exact":
        requested = jobs["requested_time"].to_numpy().astype(float)
    else:
        requested = runtime.copy()
    for name, arr in (("submit", submit), ("runtime", runtime), ("requested_time", requested)):
        bad = np.flatnonzero(~np.isfinite(arr))
        if bad.size:
            raise UserError(f"batch engine: job {job_id[bad[0]]}: {name} is not finite")
    cpu = (
        jobs["cpu_need"].to_numpy().astype(float)
        if "cpu_need" in jobs.columns
        else np.full(jobs.height, float(cpu_need))
    )
    checks = (
        ("runtime", runtime < 0, "is negative"),
        ("requested_time", requested <= 0, "must be > 0"),
        ("procs", jprocs < 1, "must be >= 1"),
        ("cpu_need", ~((cpu > 0) & (cpu <= 1)), "must be in (0, 1]"),
    )
    for name, mask, what in checks:
        bad = np.flatnonzero(mask)
        if bad.size:
            raise UserError(f"batch engine: job {job_id[bad[0]]}: {name} {what}")
    need = units_needed(jprocs, model, tpn)
    big = need > capacity
    dropped = int(big.sum())
    if dropped:
        if oversize == "error":
            k = int(np.flatnonzero(big)[0])
            unit = "processors" if model == "procs" else "nodes"
            raise UserError(
                f"batch engine: job {job_id[k]} needs {need[k]} {unit} but the machine has {capacity} "
                f"(use oversize='drop' to drop and count such jobs)"
            )
        keep = ~big
        job_id, submit, runtime, jprocs, requested, need, cpu = (
            a[keep] for a in (job_id, submit, runtime, jprocs, requested, need, cpu)
        )
    # The DFRS view needs the tasks sharing a node to fit its CPU (tpn x c <= 1).
    dfrs_view = model == "procs" or not len(cpu) or tpn * float(cpu.max()) <= 1.0 + BOUND_TOL
    if bound and not dfrs_view:
        raise UserError(f"batch engine: bound needs tasks_per_node x cpu_need <= 1 (got {tpn} x {float(cpu.max())})")
    return TableInputs(
        job_id,
        submit,
        runtime,
        jprocs,
        requested,
        need,
        cpu,
        capacity,
        model,
        tpn,
        dropped,
        dfrs_view,
        bound,
        easy_backfill,
    )


#: The machine settings :func:`run_table` hands to :func:`table_inputs` (its
#: keyword arguments, read once): a ``run_table`` keyword outside them is a
#: policy parameter. One list of the settings and their defaults, not two.
TABLE_SETTINGS = frozenset(inspect.signature(table_inputs).parameters) - {"jobs"}


def reference_run(
    t: TableInputs,
    policy_cls: Any,
    params: Mapping[str, Any] | None = None,
    *,
    recorder: Callable[[float, list[int], Any], None] | None = None,
    hidden: Callable[[list[float]], Sequence[float]] | None = None,
    watch: Callable[[Any, Machine], Any] | None = None,
) -> BatchRun:
    """The reference engine's run of ``policy_cls`` with ``params`` over ``t``,
    not yet stepped (:func:`run_table`'s reference path; ``schedlab.engines.batch.start``).
    ``hidden``: :func:`simulate_batch`'s; ``watch(policy, machine)``: what the
    engine calls instead of the policy (check mode's counters, ``schedlab.checks``)."""
    if watch is not None:
        factory: Callable[[Machine], Any] = lambda m: watch(policy_cls(m, **(params or {})), m)  # noqa: E731
    else:
        factory = (lambda m: policy_cls(m, **params)) if params else policy_cls  # noqa: E731
    return BatchRun(
        t.submit,
        t.runtime,
        t.requested,
        t.need,
        t.capacity,
        factory,
        hidden=hidden,
        easy_backfill=t.easy_backfill,
        recorder=recorder,
    )


def table_outcome(t: TableInputs, res: BatchResult, wall: float) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """:func:`run_table`'s return value for a run's result ``res`` (``wall``: its seconds)."""
    submit, runtime, need, capacity, cpu, jprocs = t.submit, t.runtime, t.need, t.capacity, t.cpu, t.jprocs
    model, tpn, dropped, dfrs_view, bound = t.model, t.tpn, t.dropped, t.dfrs_view, t.bound
    job_id, requested = t.job_id, t.requested
    wait = res.start - submit
    stretch = bounded_stretch(submit, runtime, res.end, threshold=BOUNDED_STRETCH_THRESHOLD)
    n = len(submit)
    if n:
        horizon = float(res.end.max() - submit.min())
        used = dot(need, runtime)
        util = used / (capacity * horizon) if horizon > 0 else math.nan
        work = float(np.sum(cpu * jprocs * runtime))
        underutil = (
            normalized_underutilization(
                float(capacity),
                jobs={"submit": submit, "start": res.start, "end": res.end, "tasks": jprocs, "cpu_need": cpu},
            )
            if work > 0 and dfrs_view
            else math.nan
        )
        stats = dict(
            stretch_mean=float(stretch.mean()),
            stretch_max=float(stretch.max()),
            wait_mean=float(wait.mean()),
            wait_max=float(wait.max()),
            utilisation=util,
            makespan=horizon,
            underutilization=underutil,
        )
    else:
        stats = dict(
            stretch_mean=math.nan,
            stretch_max=math.nan,
            wait_mean=math.nan,
            wait_max=math.nan,
            utilisation=math.nan,
            makespan=math.nan,
            underutilization=math.nan,
        )
    summary: dict[str, Any] = {
        "n_jobs": float(n),
        **stats,
        "events": float(res.events),
        "sim_seconds": wall,
        "model_nodes": float(model == "nodes"),
        "capacity": float(capacity),
        "tasks_per_node": float(tpn),
        "dropped_oversize": float(dropped),
    }
    if bound and n:
        b0 = time.perf_counter()
        lb = max_stretch_lower_bound(submit, runtime, jprocs, cpu, float(capacity))
        summary.update(
            stretch_lower_bound=lb, degradation=summary["stretch_max"] / lb, bound_seconds=time.perf_counter() - b0
        )
    per_job = {
        "job_id": job_id,
        "submit": submit,
        "start": res.start,
        "end": res.end,
        "procs": jprocs,
        "runtime": runtime,
        "requested_time": requested,
        "wait": wait,
        "stretch": stretch,
        "cpu_need": cpu,
    }
    return per_job, summary
