"""The packing engine: jobs with resource demands packed, without preemption,
onto L servers with capacity vectors (Psychas & Ghaderi §II; several resources
as in Tetris).

Model
-----
Job j arrives at ``submit[j]`` with a demand vector ``demand[j]`` (d resources)
and a duration. It waits in the queue until the policy places it on a server
whose free capacity covers its demand in every dimension; it then holds that
demand for ``duration`` and releases it. The engine owns time, the durations
and the bookkeeping of free capacity; the policy (``schedlab.engines.packing.policies``)
owns its queue structures and decides placements. It never sees a duration.

Decision epochs
---------------
* ``epoch = Δ > 0``: decisions happen at multiples of Δ. A job submitted at x
  joins the queue at the first epoch ≥ x; a job placed at epoch t starts at t,
  ends at ``t + duration`` and its demand is free again from the first epoch
  ≥ its end. The slotted model of the paper is Δ = 1 with integer submit times
  and integer durations: arrivals at slot starts, departures at slot ends (a
  job placed in slot t with duration k runs in slots t..t+k-1 and its capacity
  is free for the epoch at t+k).
* ``epoch = None``: a decision at every event time (arrival or end of a job).

Only epochs at which something changed (an arrival or a departure) are
visited: the engine jumps from one to the next, so empty time costs nothing.
Within an epoch: departures (every running job whose departure epoch is ≤ the
epoch time; a heap of departure times), then arrivals (in job order), then one
``policy.schedule()``, whose placements are applied in list order.

Capacity and tolerance
----------------------
A placement fits when ``demand[k] <= free[k] + FIT_TOL`` in every dimension k
(an absolute tolerance, so that e.g. 0.4 + 0.6 fits a capacity of 1 despite
rounding). A placement that does not fit, or names a job that is not queued,
is a policy bug: the engine raises :class:`CapacityExceeded` /
:class:`PlacementError` and never repairs it. Epoch indices are computed as
``ceil(x / Δ - EPOCH_TOL * max(1, x / Δ))`` so that a time that is a multiple
of Δ up to rounding lands on that multiple.

Every job must fit some empty server (``demand <= capacity + FIT_TOL`` in
every dimension): a job that fits none could never run under any policy, so
the inputs are refused up front (``ValueError``, naming the job; the table
adapter's ``UserError``): that is the workload's problem, not the policy's.

Stalls
------
Every queued job fits an empty server, so a decision epoch that ends with
nothing running and a job queued is a policy bug (its ``schedule()`` forgets
a queue, say): without ``until`` the engine raises :class:`PackingStalled`
at that epoch -- the instant every server went idle with the job waiting --
instead of running on to the end and returning a result whose waits cover
the started jobs only. The reference loop tests it after each epoch's
decisions (O(1): the running and queued counts); the compiled loops, which
run only built-ins, return their schedule and, when a job was never
placed, ``finish_result`` finds the same first such epoch in it, so both
paths raise the same message. (A built-in never leaves the empty cluster
idle with a job it places later -- the hypothesis tests comparing the two
paths would show it -- so a run that placed every job is not scanned.) With
``until`` (a window of a longer run) a queue is normal and nothing is raised.

Metrics
-------
The queue and cluster state is piecewise constant between epochs, so the
time averages are exact integrals over the horizon [first epoch, last epoch]
(or [first epoch, ``until``]): number of jobs in the queue, queued resource
per dimension (the sum of queued demands), utilisation per dimension (held
demand / total capacity; a job holds its demand from its start to its
departure epoch). Waits are ``start - submit`` over started jobs (mean and
p99, linear interpolation); throughput is completed jobs / horizon; makespan
is the last end minus the first submit (NaN if some job never ran). With
``sample_every`` the state at times ``t0 + k·sample_every`` (the state in
force at that instant, after that instant's epoch) is returned as a series.

Multi-task jobs and duration estimates
--------------------------------------
The rows of the tables are *tasks* (the engine's "jobs"). An optional
``group`` array (task -> job id, any ints) bundles tasks into multi-task jobs
as in Tetris; the policy reads it as ``cluster.group(task)`` (without groups
every task is its own job: ``cluster.group(t) == t``). With groups the result
also carries each job's completion time, JCT = end of its last task - the
earliest submit among its tasks (NaN if some task never ran), and the summary
adds ``jct_mean`` (over completed jobs) and ``jct_p99``; ``makespan`` is in
every summary. An optional ``estimate`` array is the scheduler's estimate of
each task's duration, read as ``cluster.estimate(task)``; it defaults to the
true duration (an oracle: Tetris's remaining-work/SRTF term assumes known task
durations, which the paper obtains from recurring jobs and earlier tasks of the
same phase). Policies that do not call ``estimate`` still never see durations.

Determinism
-----------
No random numbers; ties are decided by order (arrivals in job order,
departures by (time, job), placements in the policy's list order). The same
inputs give bit-identical outputs.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from schedlab.errors import PolicyError
from schedlab.sim.common.stepping import run_to_end
from schedlab.sim.common.tolerances import EPOCH_TOL

#: Absolute tolerance per dimension of the fit test (see module docstring).
FIT_TOL = 1e-9

INF = float("inf")

_WAITING, _QUEUED, _RUNNING, _DONE = 0, 1, 2, 3


class CapacityExceeded(PolicyError):
    """A policy placed a job on a server without room for it."""

    def __init__(self, job: int, server: int, free: ArrayLike, demand: ArrayLike, now: float) -> None:
        self.job, self.server, self.now = job, server, now
        self.free = np.array(free, dtype=float)
        self.demand = np.array(demand, dtype=float)
        super().__init__(
            f"t={now}: job {job} (demand {self.demand.tolist()}) does not fit on server {server} "
            f"(free {self.free.tolist()}, tolerance {FIT_TOL})"
        )


class PlacementError(PolicyError):
    """A policy placed a job that is not queued, or on a server that does not exist."""


class PackingStalled(PolicyError):
    """A run without ``until`` reached a decision epoch that left jobs queued
    and nothing running, although each fits an empty server: a policy bug
    (``schedlab check-policy``'s ``completes`` invariant, with this message),
    raised at that epoch (see Stalls in the module docstring)."""


def _stalled(policy: str, t: float, queue: np.ndarray, n: int, demand: np.ndarray) -> PackingStalled:
    """The :class:`PackingStalled` of the epoch at ``t`` that left the jobs
    ``queue`` (ascending) queued on an idle cluster: one text for the
    reference loop and ``finish_result``."""
    j = int(queue[0])
    return PackingStalled(
        f"policy {policy!r}: t={float(t) + 0.0}: {len(queue)} of {n} jobs are still queued when nothing runs, "
        f"first job {j} (demand {demand[j].tolist()}) waits while every server is idle since t={float(t) + 0.0}; "
        f"each of them fits an empty server, so the policy never places them"
    )


def first_stall(
    arrival: np.ndarray, start: np.ndarray, duration: np.ndarray, epoch: float | None
) -> tuple[float, np.ndarray] | None:
    """The first decision epoch of a finished schedule that left jobs queued
    and nothing running, and the jobs queued then; None if there is none.

    The loops' epochs are the arrival epochs and the departure epochs of the
    started jobs; after the last epoch at time t the running jobs are those
    started by t that depart after t (a job departing at its own start epoch
    makes one more epoch at t), and the queued ones arrived by t and not
    started by t. O(n log n), vectorised: run once per compiled run."""
    ok = ~np.isnan(start)
    departs = arrival_epochs(start[ok] + duration[ok], epoch)
    starts = np.sort(start[ok])
    arrived = np.sort(arrival)
    departs.sort()
    times = np.unique(np.concatenate([arrived, departs]))
    started_by = np.searchsorted(starts, times, side="right")
    idle = (started_by == np.searchsorted(departs, times, side="right")) & (
        np.searchsorted(arrived, times, side="right") > started_by
    )
    if not idle.any():
        return None
    t = times[int(np.argmax(idle))]
    waiting = (arrival <= t) & ~(start <= t)  # NaN start: never started
    return float(t), np.flatnonzero(waiting)


def fits(demand: Iterable[float], free: Iterable[float]) -> bool:
    """The engine's fit test, for policies that want to ask it verbatim."""
    return all(r <= f + FIT_TOL for r, f in zip(demand, free))


def misfit(demand: np.ndarray, capacity: np.ndarray, job_ids: Any = None) -> str | None:
    """Why the first job (row of ``demand``, n x d) that fits no empty server
    (a row of ``capacity``, L x d) by the engine's fit test cannot run,
    named by its index or its entry in ``job_ids``; None if every job fits one."""
    if not len(demand) or np.any(np.all(demand.max(axis=0) <= capacity + FIT_TOL, axis=1)):
        return None  # one server holds the largest demand of every resource: the usual case, one reduction
    ok = np.zeros(len(demand), dtype=bool)
    for cap in np.unique(capacity, axis=0):
        ok |= ~np.any(demand > cap + FIT_TOL, axis=1)  # the engine's test (a NaN is refused elsewhere)
    bad = np.flatnonzero(~ok)
    if not len(bad):
        return None
    j = int(bad[0])
    name = f"job {j}" if job_ids is None else f"job_id {job_ids[j]} (row {j})"
    return (
        f"{name} has demand {demand[j].tolist()}, which fits no server even when empty (the largest capacity "
        f"per resource is {capacity.max(axis=0).tolist()}, tolerance {FIT_TOL}): no policy could ever run it"
    )


class Cluster:
    """The handle a policy is built with (see ``schedlab.engines.packing.policies.base``).

    ``capacity(s)``, ``free(s)`` and ``demand(job)`` are read-only numpy views;
    ``jobs_on(s)`` is the live set of jobs running on s (do not modify it).
    """

    __slots__ = (
        "servers",
        "resources",
        "now",
        "_cap",
        "_free",
        "_free_ro",
        "_cap_ro",
        "_dem_ro",
        "_jobs_on",
        "_group",
        "_est",
    )

    def __init__(
        self,
        capacity: np.ndarray,
        demand: np.ndarray,
        group: np.ndarray | None = None,
        estimate: np.ndarray | None = None,
    ) -> None:
        self.servers, self.resources = capacity.shape
        self.now = 0.0
        self._cap = capacity
        self._free = capacity.copy()
        self._cap_ro = capacity.view()
        self._cap_ro.flags.writeable = False
        self._free_ro = self._free.view()
        self._free_ro.flags.writeable = False
        self._dem_ro = demand.view()
        self._dem_ro.flags.writeable = False
        self._jobs_on: list[set[int]] = [set() for _ in range(self.servers)]
        self._group = None if group is None else [int(g) for g in group]
        self._est = None if estimate is None else [float(e) for e in estimate]

    def group(self, job: int) -> int:
        """The multi-task job (group) that task ``job`` belongs to; ``job`` itself without groups."""
        return job if self._group is None else self._group[job]

    def estimate(self, job: int) -> float:
        """The scheduler's estimate of ``job``'s duration (by default the true duration)."""
        if self._est is None:
            raise RuntimeError("this cluster was built without duration estimates")
        return self._est[job]

    def capacity(self, s: int) -> np.ndarray:
        row: np.ndarray = self._cap_ro[s]  # (a row of a 2-D array: numpy's stubs say Any)
        return row

    def free(self, s: int) -> np.ndarray:
        row: np.ndarray = self._free_ro[s]
        return row

    def demand(self, job: int) -> np.ndarray:
        row: np.ndarray = self._dem_ro[job]
        return row

    def jobs_on(self, s: int) -> set[int]:
        return self._jobs_on[s]


@dataclass
class PackingResult:
    """Per-job outcome and exact time-average metrics of one run."""

    start: np.ndarray  # NaN if the job never started
    end: np.ndarray  # start + duration (NaN if never started)
    wait: np.ndarray  # start - submit
    server: np.ndarray  # int64, -1 if never started
    horizon: tuple[float, float]  # [t0, t1] over which averages are taken
    queue_jobs_mean: float
    queue_resource_mean: np.ndarray  # (d,)
    running_jobs_mean: float
    utilisation: np.ndarray  # (d,)
    wait_mean: float
    wait_p99: float
    throughput: float
    makespan: float
    completed: int
    started: int
    epochs: int
    samples: dict[str, np.ndarray] | None = field(default=None)
    # multi-task jobs (only when ``group`` was given): the sorted distinct group
    # ids and, aligned with them, each group's completion time (NaN if unfinished)
    groups: np.ndarray | None = field(default=None)
    jct: np.ndarray | None = field(default=None)
    jct_mean: float = math.nan
    jct_p99: float = math.nan

    def summary(self, resource_names: list[str] | None = None) -> dict[str, float]:
        """Flat float metrics; per-resource ones suffixed by resource name
        (no suffix for a single unnamed resource)."""
        d = len(self.utilisation)
        names = resource_names or ([""] if d == 1 else [f"r{k}" for k in range(d)])
        out = {
            "queue_jobs_mean": self.queue_jobs_mean,
            "running_jobs_mean": self.running_jobs_mean,
            "wait_mean": self.wait_mean,
            "wait_p99": self.wait_p99,
            "throughput": self.throughput,
            "makespan": self.makespan,
            "completed": float(self.completed),
            "started": float(self.started),
            "epochs": float(self.epochs),
        }
        if self.groups is not None:
            out["jct_mean"] = self.jct_mean
            out["jct_p99"] = self.jct_p99
        for k, name in enumerate(names):
            sfx = f"_{name}" if name else ""
            out[f"queue_resource_mean{sfx}"] = float(self.queue_resource_mean[k])
            out[f"utilisation{sfx}"] = float(self.utilisation[k])
        return out


def _epoch_of(x: float, delta: float) -> float:
    q = x / delta
    return math.ceil(q - EPOCH_TOL * max(1.0, abs(q))) * delta


def _as_inputs(
    submit: ArrayLike, duration: ArrayLike, demand: ArrayLike, capacity: ArrayLike
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    submit = np.ascontiguousarray(submit, dtype=float).ravel()
    duration = np.ascontiguousarray(duration, dtype=float).ravel()
    demand = np.array(demand, dtype=float)
    if demand.ndim == 1:
        demand = demand[:, None]
    capacity = np.array(capacity, dtype=float)
    if capacity.ndim == 1:
        if demand.shape[1] != 1:
            raise ValueError("capacity must be an L x d array when demands have d > 1 resources")
        capacity = capacity[:, None]
    n = len(submit)
    if duration.shape != (n,) or demand.shape[0] != n:
        raise ValueError(
            f"submit, duration and demand must have one row per job (got {n}, {len(duration)}, {demand.shape[0]})"
        )
    if capacity.ndim != 2 or capacity.shape[1] != demand.shape[1] or capacity.shape[0] < 1:
        raise ValueError(f"capacity must be L x {demand.shape[1]} with L >= 1 (got shape {capacity.shape})")
    if not (np.all(np.isfinite(submit)) and np.all(np.isfinite(duration)) and np.all(np.isfinite(demand))):
        raise ValueError("submit, duration and demand must be finite")
    if n and np.any(np.diff(submit) < 0):
        raise ValueError("submit must be non-decreasing (jobs are numbered in arrival order)")
    if np.any(duration < 0) or np.any(demand < 0):
        raise ValueError("durations and demands must be >= 0")
    if not np.all(capacity > 0):
        raise ValueError("capacities must be > 0")
    why = misfit(demand, capacity)
    if why is not None:
        raise ValueError(why)
    return submit, duration, demand, capacity


class PackingRun:
    """One run of a packing policy, advanced one decision epoch at a time by
    whoever holds it: :func:`simulate_packing` (:meth:`step_to_end`: the
    epochs of ``while not run.done: run.step()`` in one loop), a Gymnasium
    environment, a test (the shape of SimPy's ``Environment.peek()`` /
    ``step()``). Arguments are those of :func:`simulate_packing`.

    An epoch has two halves: its events (the clock moves to it, the time
    averages are integrated, departures then arrivals reach the policy) and
    its decision (one ``policy.schedule()``, its placements applied and
    checked). :meth:`step` does both; :meth:`advance` does the first half
    only and leaves ``deciding`` set, so that a driver may act through the
    policy before the decision -- the next :meth:`step` then makes it.
    :meth:`peek` is the time of the next epoch (that of the open one while
    ``deciding``; ``INF`` when none is left, or the next is past ``until``).
    The step that finds no epoch left sets :attr:`done`; :meth:`result` is
    then the :class:`PackingResult`. Between steps ``run.cluster`` and
    ``run.policy`` may be read.
    """

    __slots__ = (
        "L",
        "_area_q",
        "_area_qres",
        "_area_run",
        "_area_used",
        "_arr_t",
        "_dem_t",
        "_demand",
        "_dur",
        "_every",
        "_fixed",
        "_heap",
        "_inputs",
        "_k_sample",
        "_next_sample",
        "_policy_name",
        "_qres",
        "_recorder",
        "_samples",
        "_state",
        "_t0",
        "_t1",
        "_t_prev",
        "_used",
        "arrived",
        "check",
        "cluster",
        "completed",
        "d",
        "deciding",
        "done",
        "epoch",
        "epochs",
        "n",
        "now",
        "policy",
        "queued",
        "running",
        "server",
        "start",
        "started",
        "until",
    )

    def __init__(
        self,
        submit: ArrayLike,
        duration: ArrayLike,
        demand: ArrayLike,
        capacity: ArrayLike,
        policy_factory: Callable[[Cluster], Any],
        *,
        epoch: float | None = 1.0,
        sample_every: float | None = None,
        until: float | None = None,
        check: bool = False,
        group: ArrayLike | None = None,
        estimate: ArrayLike | None = None,
        hidden: Callable[[list[float]], Sequence[float]] | None = None,
        recorder: Callable[[float, str, int, int], None] | None = None,
    ) -> None:
        submit, duration, demand, capacity = _as_inputs(submit, duration, demand, capacity)
        group, estimate = _as_groups(group, estimate, duration)
        if epoch is not None and not (epoch > 0 and math.isfinite(epoch)):
            raise ValueError(f"epoch must be > 0 or None (got {epoch})")
        if sample_every is not None and not (sample_every > 0 and math.isfinite(sample_every)):
            raise ValueError(f"sample_every must be > 0 (got {sample_every})")
        self._inputs = (submit, duration, capacity, group, demand)
        self.n, self.d = n, d = demand.shape
        self.L = capacity.shape[0]
        self.epoch, self.until, self.check = epoch, until, check
        self.cluster = cluster = Cluster(capacity, demand, group, estimate)
        self.policy = policy = policy_factory(cluster)
        self._policy_name = getattr(type(policy), "name", "") or type(policy).__name__
        self._recorder = recorder
        self._arr_t = arrival_epochs(submit, epoch).tolist()
        dur = duration.tolist()
        if hidden is not None:
            dur = hidden(dur)
        self._dur = dur
        self._demand = demand
        self._dem_t = [tuple(row) for row in demand.tolist()]
        self._state = bytearray(n)
        self.start = [math.nan] * n
        self.server = [-1] * n
        self._heap: list[tuple[float, int]] = []
        self.arrived = 0  # jobs that have joined the queue (the next is job ``arrived``)
        self.queued = 0
        self.running = 0
        self.completed = 0
        self.started = 0
        self._qres = [0.0] * d
        self._used = [0.0] * d
        self._area_q = 0.0
        self._area_run = 0.0
        self._area_qres = [0.0] * d
        self._area_used = [0.0] * d
        self.epochs = 0
        self._t0: float | None = None
        self._t_prev = 0.0
        self.now = 0.0
        self.deciding = False
        self.done = False
        self._samples: dict[str, list[Any]] | None = None  # per-resource queue: tuples
        self._every = 0.0
        self._next_sample = INF
        if sample_every is not None:
            self._samples = {"t": [], "queue_jobs": [], "queue_resource": [], "running_jobs": []}
            self._every = sample_every
        self._k_sample = 0
        # what never changes during the run, read by every epoch in one load
        self._fixed = (
            policy,
            recorder,
            self._state,
            self._dem_t,
            cluster._free,
            cluster._jobs_on,
            demand,
            self._dur,
            self.start,
            self.server,
            self._heap,
            self._arr_t,
            epoch,
            until,
            n,
            self.L,
            d,
            range(d),
        )

    def _record_until(self, t_lim: float, inclusive: bool, queued: int, qres: list[float], running: int) -> None:
        """The samples due before ``t_lim`` (at it too, ``inclusive``): the
        queue and running counts held since the last epoch."""
        samples, t0 = self._samples, self._t0
        assert samples is not None and t0 is not None  # called only when sampling, from the first event on
        while self._next_sample < t_lim or (inclusive and self._next_sample == t_lim):
            samples["t"].append(self._next_sample)
            samples["queue_jobs"].append(queued)
            samples["queue_resource"].append(tuple(qres))
            samples["running_jobs"].append(running)
            self._k_sample += 1
            self._next_sample = t0 + self._k_sample * self._every

    def peek(self) -> float:
        """The time of the next epoch (the open one while ``deciding``; ``INF``: none left)."""
        if self.deciding:
            return self.now
        if self.done:
            return INF
        i, heap = self.arrived, self._heap
        t_arr = self._arr_t[i] if i < self.n else INF
        t_dep = heap[0][0] if heap else INF
        now = t_arr if t_arr < t_dep else t_dep
        return INF if self.until is not None and now > self.until else now

    def advance(self) -> bool:
        """The first half of the next epoch: move the clock to it, then its
        departures and arrivals; ``deciding`` is then set and the next
        :meth:`step` makes its decision. False (and nothing done): no epoch is left."""
        if self.deciding or self.done:
            raise RuntimeError("advance() on a run that is deciding or done")
        return self._epochs_until(-1, True)

    def step(self) -> None:
        """Process the next epoch (its decision only, when :meth:`advance`
        opened it); with none left, end the run (``done``)."""
        if self.done:
            raise RuntimeError("step() on a finished run")
        self._epochs_until(self.epochs + 1, False)

    def step_to_end(self) -> None:
        """Process every epoch left: what ``while not run.done: run.step()``
        does, in one loop (:func:`simulate_packing`'s)."""
        if self.done:
            raise RuntimeError("step() on a finished run")
        self._epochs_until(-1, False)

    def _epochs_until(self, stop: int, open_only: bool) -> bool:
        """The engine's one epoch loop: process epochs until the one numbered
        ``stop`` (``epochs``) has made its decision (``stop = -1``: to the end
        of the run), or, ``open_only``, until the next epoch is opened (its
        first half: :meth:`advance`); an epoch already open (``deciding``)
        starts with its decision. False: no epoch was left (the run is then
        done, unless ``open_only``). Why one loop rather than a method call per
        epoch: the run's counters live in locals while it turns and are
        written back when it stops (also when a policy error ends it), so a
        run stepped to its end pays what the single-function loop did; they
        are the run's between two steps, not during one (a policy's call)."""
        (
            policy,
            recorder,
            state,
            dem_t,
            free,
            jobs_on,
            demand,
            dur,
            start,
            server,
            heap,
            arr_t,
            epoch,
            until,
            n,
            L,
            d,
            srange,
        ) = self._fixed
        cluster, check, sampling = self.cluster, self.check, self._samples is not None
        i, queued, running, completed, started, epochs = (
            self.arrived,
            self.queued,
            self.running,
            self.completed,
            self.started,
            self.epochs,
        )
        qres, used, area_qres, area_used = self._qres, self._used, self._area_qres, self._area_used
        area_q, area_run, t_prev, now, deciding = self._area_q, self._area_run, self._t_prev, self.now, self.deciding
        opened = True
        try:
            while True:
                if not deciding:
                    t_arr = arr_t[i] if i < n else INF
                    t_dep = heap[0][0] if heap else INF
                    t_next = t_arr if t_arr < t_dep else t_dep
                    if t_next == INF or (until is not None and t_next > until):
                        opened = False
                        break
                    now = t_next
                    if self._t0 is None:
                        self._t0 = now
                        if sampling:
                            self._next_sample = now
                    else:
                        dt = now - t_prev
                        area_q += queued * dt
                        area_run += running * dt
                        for k in srange:
                            area_qres[k] += qres[k] * dt
                            area_used[k] += used[k] * dt
                        if sampling:
                            self._record_until(now, False, queued, qres, running)
                    cluster.now = now

                    # departures
                    while heap and heap[0][0] <= now:
                        _, j = heapq.heappop(heap)
                        s = server[j]
                        free[s] += demand[j]
                        jobs_on[s].discard(j)
                        state[j] = _DONE
                        running -= 1
                        completed += 1
                        dj = dem_t[j]
                        for k in srange:
                            used[k] -= dj[k]
                        policy.depart(j, s)
                        if recorder is not None:
                            recorder(now, "depart", j, s)
                    if running == 0:
                        used = [0.0] * d  # no drift when the cluster is empty

                    # arrivals
                    while i < n and arr_t[i] <= now:
                        state[i] = _QUEUED
                        queued += 1
                        di = dem_t[i]
                        for k in srange:
                            qres[k] += di[k]
                        policy.arrive(i)
                        i += 1
                    if open_only:
                        deciding = True
                        break
                deciding = False

                # the decision
                for j, s in policy.schedule():
                    if not (0 <= j < n) or state[j] != _QUEUED:
                        raise PlacementError(f"t={now}: job {j} is not in the queue (policy {type(policy).__name__})")
                    if not (0 <= s < L):
                        raise PlacementError(f"t={now}: server {s} does not exist (L = {L})")
                    dj = dem_t[j]
                    row = free[s]
                    for k in srange:
                        if dj[k] > row[k] + FIT_TOL:
                            raise CapacityExceeded(j, s, row, dj, now)
                    row -= demand[j]
                    jobs_on[s].add(j)
                    state[j] = _RUNNING
                    server[j] = s
                    start[j] = now
                    queued -= 1
                    running += 1
                    started += 1
                    for k in srange:
                        qres[k] -= dj[k]
                        used[k] += dj[k]
                    end = now + dur[j]
                    heapq.heappush(heap, (end if epoch is None else _epoch_of(end, epoch), j))
                    if recorder is not None:
                        recorder(now, "place", j, s)
                if queued == 0:
                    qres = [0.0] * d
                elif running == 0 and until is None:  # every server idle with jobs waiting: a stall from now on
                    queue = np.array([j for j in range(i) if state[j] == _QUEUED])  # once, on the way out
                    raise _stalled(self._policy_name, now, queue, n, demand)
                epochs += 1
                if check:
                    _check_cluster(cluster, demand, now)
                t_prev = now
                if epochs == stop:
                    break
        finally:
            self.arrived, self.queued, self.running, self.completed, self.started, self.epochs = (
                i,
                queued,
                running,
                completed,
                started,
                epochs,
            )
            self._qres, self._used, self._area_q, self._area_run = qres, used, area_q, area_run
            self._t_prev, self.now, self.deciding = t_prev, now, deciding
        if not opened and not open_only:
            self._finish()
        return opened

    def _finish(self) -> None:
        """Close the time averages at the end of the run (or at ``until``)."""
        until, d = self.until, self.d
        if self._t0 is None:  # no epoch at all
            self._t0 = self._t_prev = 0.0 if until is None else min(0.0, until)
        t1 = self._t_prev
        if until is not None and until > self._t_prev:
            dt = until - self._t_prev
            self._area_q += self.queued * dt
            self._area_run += self.running * dt
            for k in range(d):
                self._area_qres[k] += self._qres[k] * dt
                self._area_used[k] += self._used[k] * dt
            t1 = until
        if self._samples is not None:
            self._record_until(t1, True, self.queued, self._qres, self.running)
        self._t1 = t1
        self.done = True

    def result(self) -> PackingResult:
        """The :class:`PackingResult` of the finished run."""
        if not self.done:
            raise RuntimeError("result() before the run is done")
        submit, duration, capacity, group, demand = self._inputs
        samples, d = self._samples, self.d
        series = None
        if samples is not None:
            series = {
                "t": np.array(samples["t"], dtype=float),
                "queue_jobs": np.array(samples["queue_jobs"], dtype=np.int64),
                "queue_resource": np.array(samples["queue_resource"], dtype=float).reshape(-1, d),
                "running_jobs": np.array(samples["running_jobs"], dtype=np.int64),
            }
        assert self._t0 is not None
        return finish_result(
            submit,
            duration,
            capacity,
            group,
            np.array(self.start, dtype=float),
            np.array(self.server, dtype=np.int64),
            self._t0,
            self._t1,
            self._area_q,
            self._area_run,
            self._area_qres,
            self._area_used,
            self.completed,
            self.started,
            self.epochs,
            series,
            policy=self._policy_name,
            until=self.until,
            demand=demand,
            epoch=self.epoch,
        )


def simulate_packing(
    submit: ArrayLike,
    duration: ArrayLike,
    demand: ArrayLike,
    capacity: ArrayLike,
    policy_factory: Callable[[Cluster], Any],
    *,
    epoch: float | None = 1.0,
    sample_every: float | None = None,
    until: float | None = None,
    check: bool = False,
    group: ArrayLike | None = None,
    estimate: ArrayLike | None = None,
    hidden: Callable[[list[float]], Sequence[float]] | None = None,
    recorder: Callable[[float, str, int, int], None] | None = None,
) -> PackingResult:
    """Run one packing policy (``policy_factory(cluster)``) over the jobs.

    ``demand`` is n x d (a 1-D array means d = 1); ``capacity`` is L x d (1-D:
    L single-resource servers). ``until`` stops the run at that time (jobs not
    started by then have NaN start). ``check`` re-verifies after every epoch,
    from the jobs running on each server, that no capacity is exceeded and the
    free-capacity bookkeeping is exact (debugging aid, O(running jobs) per epoch).
    ``group`` (n ints, task -> job id) makes the rows tasks of multi-task jobs
    and adds job completion times to the result; ``estimate`` (n numbers >= 0)
    is what ``cluster.estimate`` returns, by default the true duration (see the
    module docstring). ``hidden`` (check mode, ``schedlab.checks``): a
    function applied once to the list of true durations, returning the
    sequence the engine then reads -- a guard that refuses reads from outside
    this module (None, the normal path, adds nothing per epoch).
    ``recorder`` (schedule views, ``schedlab.views``): called as
    ``recorder(now, "depart", job, server)`` when a job's demand is freed and
    ``recorder(now, "place", job, server)`` when one is placed, in the order
    the engine applies them (None: one test per departure and placement).
    The loop is :class:`PackingRun` stepped to its end.
    """
    run = PackingRun(
        submit,
        duration,
        demand,
        capacity,
        policy_factory,
        epoch=epoch,
        sample_every=sample_every,
        until=until,
        check=check,
        group=group,
        estimate=estimate,
        hidden=hidden,
        recorder=recorder,
    )
    return run_to_end(run)


def arrival_epochs(submit: np.ndarray, epoch: float | None) -> np.ndarray:
    """Each job's arrival epoch: its submit time (``epoch`` None) or the first
    multiple of Δ at or after it, up to ``EPOCH_TOL`` (see the module docstring)."""
    if epoch is None:
        return submit
    q = submit / epoch
    return np.ceil(q - EPOCH_TOL * np.maximum(1.0, np.abs(q))) * epoch


def finish_result(
    submit: np.ndarray,
    duration: np.ndarray,
    capacity: np.ndarray,
    group: np.ndarray | None,
    start_a: np.ndarray,
    server_a: np.ndarray,
    t0: float,
    t1: float,
    area_q: float,
    area_run: float,
    area_qres: ArrayLike,
    area_used: ArrayLike,
    completed: int,
    started: int,
    epochs: int,
    series: dict[str, np.ndarray] | None,
    *,
    policy: str,
    until: float | None,
    demand: np.ndarray,
    epoch: float | None,
) -> PackingResult:
    """The :class:`PackingResult` of a run from its event loop's outcome:
    per-job starts and servers, the horizon [t0, t1], the time integrals
    (``area_qres``/``area_used``: one per resource), the counters and the
    sampled series. Shared by the reference loop and the compiled ones
    (``schedlab.engines.packing.sim.fast``, ``multi_fast``), so every derived metric
    is computed by the same code from the same numbers, and both raise the
    same :class:`PackingStalled` (``policy``: its name in the message) for a
    run without ``until`` with an epoch that left jobs queued and nothing
    running (:func:`first_stall`; the reference loop raises it at that epoch
    itself, so here it is found in a compiled loop's schedule): each queued
    job fits an empty server (``_as_inputs``)."""
    d = capacity.shape[1]
    n = len(submit)
    if until is None and started < n:  # a job never placed: find where the stall began (a correct run pays nothing)
        stall = first_stall(arrival_epochs(submit, epoch), start_a, duration, epoch)
        assert stall is not None  # the loops' last epoch ends with nothing running, the never-placed job queued
        raise _stalled(policy, stall[0], stall[1], n, demand)
    horizon = t1 - t0
    end_a = start_a + duration
    wait_a = start_a - submit
    ok = ~np.isnan(wait_a)
    nan = math.nan
    total_cap = capacity.sum(axis=0)
    groups_a = jct_a = None
    jct_mean = jct_p99 = nan
    if group is not None:
        groups_a, inv = np.unique(group, return_inverse=True)
        first = np.full(len(groups_a), INF)
        np.minimum.at(first, inv, submit)
        last = np.full(len(groups_a), -INF)
        np.maximum.at(last, inv, np.where(ok, end_a, INF))  # an unstarted task makes its group unfinished
        jct_a = np.where(np.isfinite(last), last - first, nan)
        done = ~np.isnan(jct_a)
        if done.any():
            jct_mean = float(jct_a[done].mean())
            jct_p99 = float(np.percentile(jct_a[done], 99))
    return PackingResult(
        start=start_a,
        end=end_a,
        wait=wait_a,
        server=server_a,
        horizon=(t0, t1),
        queue_jobs_mean=area_q / horizon if horizon > 0 else nan,
        queue_resource_mean=np.array(area_qres) / horizon if horizon > 0 else np.full(d, nan),
        running_jobs_mean=area_run / horizon if horizon > 0 else nan,
        utilisation=np.array(area_used) / (total_cap * horizon) if horizon > 0 else np.full(d, nan),
        wait_mean=float(wait_a[ok].mean()) if ok.any() else nan,
        wait_p99=float(np.percentile(wait_a[ok], 99)) if ok.any() else nan,
        throughput=completed / horizon if horizon > 0 else nan,
        makespan=float(end_a.max() - submit[0]) if n and ok.all() else nan,
        completed=completed,
        started=started,
        epochs=epochs,
        samples=series,
        groups=groups_a,
        jct=jct_a,
        jct_mean=jct_mean,
        jct_p99=jct_p99,
    )


def _as_groups(
    group: ArrayLike | None, estimate: ArrayLike | None, duration: np.ndarray
) -> tuple[np.ndarray | None, np.ndarray]:
    n = len(duration)
    if group is not None:
        g = np.asarray(group)
        if g.shape != (n,):
            raise ValueError(f"group must have one entry per task (got shape {g.shape}, n = {n})")
        if g.dtype.kind == "f":
            if not np.all(np.isfinite(g)) or np.any(g != np.round(g)):
                raise ValueError("group ids must be integers")
        elif g.dtype.kind not in "iub":
            raise ValueError(f"group ids must be integers (got dtype {g.dtype})")
        group = g.astype(np.int64)
    if estimate is None:
        estimate = duration
    else:
        estimate = np.ascontiguousarray(estimate, dtype=float).ravel()
        if estimate.shape != (n,):
            raise ValueError(f"estimate must have one entry per task (got {estimate.shape[0]}, n = {n})")
        if not np.all(np.isfinite(estimate)) or np.any(estimate < 0):
            raise ValueError("estimates must be finite and >= 0")
    return group, estimate


def _check_cluster(cluster: Cluster, demand: np.ndarray, now: float) -> None:
    for s in range(cluster.servers):
        jobs = cluster._jobs_on[s]
        load = demand[sorted(jobs)].sum(axis=0) if jobs else np.zeros(cluster.resources)
        cap = cluster._cap[s]
        if np.any(load > cap + FIT_TOL * max(1, len(jobs))):
            raise AssertionError(f"t={now}: server {s} holds {load.tolist()} > capacity {cap.tolist()}")
        if not np.allclose(cap - load, cluster._free[s], rtol=0, atol=1e-9 * max(1, len(jobs)) + 1e-12):
            raise AssertionError(
                f"t={now}: server {s} free {cluster._free[s].tolist()} != capacity - load {(cap - load).tolist()}"
            )
