"""Run a sweep on Ray: plan -> tasks -> Parquet commits -> MLflow.

The driver is the only writer. It submits at most ``max_in_flight`` tasks,
sized by measurement (`sizing`), streams results back as they finish
(``ray.wait`` with ``num_returns > 1``), buffers them and commits them to
Parquet in atomic batches (``store``; a task's rows arrive already encoded as
Parquet parts, `parts`), and after each commit hands the touched
configurations to the MLflow tracker's background thread. Re-running the
same spec resumes: keys on disk are skipped.

Ray retries system failures (``max_retries``); a task that still cannot finish
and any exception inside a simulation become failure records, the sweep goes
on, and the report says so (the CLI then exits non-zero).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any

from schedlab.errors import UserError
from schedlab.platform.execution.connect import init_bounded, loopback_only
from schedlab.platform.execution.parts import keep_only
from schedlab.platform.execution.payload import Packer, ray_put
from schedlab.platform.execution.sizing import TaskSizer
from schedlab.platform.execution.tasks import STAGES, TaskResult, run_instances
from schedlab.platform.planning.plan import Config, Instance, Plan, build_plan, shared_input_key
from schedlab.platform.planning.spec import SweepSpec
from schedlab.platform.storage.manifest import manifest_for
from schedlab.platform.storage.store import ResultStore

if TYPE_CHECKING:
    import pyarrow as pa

    from schedlab.platform.execution.parts import Part
    from schedlab.platform.tracking.sync import TrackReport
    from schedlab.platform.tracking.tracker import Tracker, TrackProgress

#: Commit when this many per-job rows are buffered (bounds driver memory).
FLUSH_JOB_ROWS = 200_000
#: ... or this many summary rows ...
FLUSH_SUMMARY_ROWS = 5_000
#: ... or this many bytes of encoded parts ...
FLUSH_BYTES = 64 << 20
#: ... or when the oldest buffered row is this old (seconds).
FLUSH_SECONDS = 2.0


class Interrupted(Exception):
    """Ctrl-C: what was received is committed; running again resumes."""


@dataclass
class SweepReport:
    results_dir: str
    configs: int
    rows_written: int = 0
    rows_skipped: int = 0
    failures: list[dict[str, Any]] = field(default_factory=list)
    tasks: int = 0
    wall_seconds: float = 0.0
    sim_seconds: float = 0.0
    rounds: int = 0
    tracking: Any = None
    #: One line when this run grew the results dir (the spec gained policies, points or replications).
    grew: str | None = None
    #: Adaptive sweeps: the workload points (their distinguishing values) that
    #: reached ``max`` replications with some interval still above the target.
    at_max: list[dict[str, Any]] = field(default_factory=list)
    #: The compaction at the end of the run (`compact.CompactReport`), and why it
    #: stopped if it did (the rows are intact either way; `schedlab compact` retries).
    compaction: Any = None
    compaction_error: str | None = None
    #: Seconds per stage (cheap timers, for benchmarks/sweep_breakdown.py): the driver's
    #: ("plan", "prepare", "ray_start", "submit", "wait", "get", "sink", "commit", "tracking",
    #: "compact"), the driver process's CPU seconds while rounds ran ("driver_cpu": its own
    #: work and Ray's threads in it, whatever else the machine runs) and, summed over tasks,
    #: the workers' ("task_" + `tasks.STAGES`).
    stages: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Progress:
    """Where a running sweep stands, for a progress display. A simulation is
    one configuration x replication; ``total`` counts those planned so far
    (an adaptive sweep adds each round's), ``done`` those finished (failed
    ones included), ``failed`` those that raised, ``round`` is 1-based,
    ``elapsed`` the seconds since the sweep started and ``running`` the
    simulations of the tasks submitted and not yet back."""

    sweep: str
    round: int
    done: int
    total: int
    failed: int
    elapsed: float
    running: int = 0

    @property
    def eta(self) -> float | None:
        """Seconds left at the rate so far (None before the first result)."""
        if self.done <= 0 or self.elapsed <= 0:
            return None
        return max(self.total - self.done, 0) * self.elapsed / self.done


class _Sink:
    """Buffers task results and commits them in atomic batches."""

    def __init__(self, store: ResultStore, on_commit: Callable[[set[str]], None]) -> None:
        self.store = store
        self.on_commit = on_commit
        self.written: set[tuple[str, int]] = set()
        self._reset()

    def _reset(self) -> None:
        self.summary: list[dict[str, Any]] = []
        self.jobs: list[tuple[str, pa.Table]] = []
        self.series: list[tuple[str, pa.Table]] = []
        self.failures: list[dict[str, Any]] = []
        self.parts: list[Part] = []
        self.job_rows = 0
        self.rows = 0  # summary rows in parts
        self.bytes = 0  # encoded bytes in parts
        self.since = time.monotonic()

    def add(self, result: TaskResult) -> None:
        for part in result.parts:
            fresh = {k for k in part.keys if k not in self.written}
            self.written |= fresh
            kept = keep_only(part, fresh)
            if kept is not None:
                self.parts.append(kept)
                self.rows += len(kept.keys)
                self.job_rows += kept.job_rows
                self.bytes += kept.nbytes()
        accepted: set[tuple[str, int]] = set()
        for row in result.summary:
            key = (row["config_id"], row["replication"])
            if key in self.written:  # a retried task delivered twice: keep one row per key
                continue
            self.written.add(key)
            accepted.add(key)
            self.summary.append(row)
        for target, pairs in ((self.jobs, result.jobs), (self.series, result.series)):
            for policy, table in pairs:
                if table.num_rows and (table["config_id"][0].as_py(), table["replication"][0].as_py()) in accepted:
                    target.append((policy, table))
                    self.job_rows += table.num_rows
        self.failures += result.failures

    def due(self) -> bool:
        return (
            self.job_rows >= FLUSH_JOB_ROWS
            or len(self.summary) + self.rows >= FLUSH_SUMMARY_ROWS
            or self.bytes >= FLUSH_BYTES
            or (bool(self.summary or self.failures or self.parts) and time.monotonic() - self.since >= FLUSH_SECONDS)
        )

    def flush(self) -> int:
        """Commit the buffer. The buffer is taken before writing, and Ctrl-C is
        held back while the batch is written (delivered right after), so an
        interrupt can never commit the same rows twice nor half a batch."""
        if not (self.summary or self.failures or self.parts):
            return 0
        summary, jobs, failures, series, parts = self.summary, self.jobs, self.failures, self.series, self.parts
        self._reset()
        with _sigint_deferred():
            self.store.commit(summary, jobs, failures, series, parts=parts)
        touched = (
            {r["config_id"] for r in summary}
            | {f["config_id"] for f in failures}
            | {k[0] for p in parts for k in p.keys}
        )
        if touched:
            self.on_commit(touched)
        return len(summary) + sum(len(p.keys) for p in parts)


@contextlib.contextmanager
def _sigint_deferred() -> Iterator[None]:
    """Block SIGINT in this thread while the body runs (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


#: Local Ray (no address given) binds every port to this address; token auth stays on.
LOCAL_RAY_HOST = "127.0.0.1"


#: How schedlab itself started Ray in this process: {"env": shipped user code}
#: (empty when Ray was started by someone else, or not at all).
_OWNED: dict[str, Any] = {}


def _init_ray(spec: SweepSpec, address: str | None, shipped: tuple[tuple[str, str], ...] = ()) -> ModuleType:
    """Start (or join) Ray. User code (``shipped``: (path, sha256) pairs)
    goes to every worker through the job's ``runtime_env`` ``py_modules``:
    Ray uploads local files only at the job level, so a Ray that schedlab
    started for other code is restarted with it. A Ray that the caller
    started is used as it is (its workers then import user code from the
    driver's paths: one host only). Local Ray listens on loopback only
    (`connect.loopback_only`); joining a cluster by address ends within
    ``[execution] connect_timeout_seconds`` or at Ctrl-C (`connect.init_bounded`)."""
    import ray

    if ray.is_initialized():
        if not _OWNED or not shipped or _OWNED.get("env") == shipped:
            return ray
        ray.shutdown()
    kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": True}
    address = address or spec.execution.address or os.environ.get("RAY_ADDRESS")
    if address:
        kwargs["address"] = address
    else:  # never join a `ray start` cluster; listen on loopback only
        kwargs.update(
            address="local",
            num_cpus=spec.execution.num_cpus,
            _node_ip_address=LOCAL_RAY_HOST,
            logging_level=logging.WARNING,
        )  # not "Started a local Ray instance"
        # Token auth on a loopback-only Ray is schedlab's choice, not the user's: no warning about it.
        logging.getLogger("ray._private.authentication.authentication_token_setup").setLevel(logging.ERROR)
    if shipped:
        kwargs["runtime_env"] = {"py_modules": [p for p, _ in shipped], "excludes": ["__pycache__", "*.pyc", ".git"]}
    try:
        if address:  # bounded in time, interruptible, loopback kept loopback (`connect`)
            init_bounded(ray, kwargs, address, spec.execution.connect_timeout_seconds)
        else:
            with loopback_only():
                ray.init(**kwargs)
    except (ConnectionError, ray.exceptions.AuthenticationError) as err:
        raise UserError(
            f"cannot connect to Ray at {address}: {err} "
            f"(RAY_AUTH_MODE={os.environ.get('RAY_AUTH_MODE', 'unset')}; see docs/cluster.md)"
        ) from None
    _OWNED.clear()
    _OWNED["env"] = shipped
    return ray


def run_sweep(
    spec: SweepSpec,
    *,
    address: str | None = None,
    fresh: bool = False,
    tracking: bool | None = None,
    progress: Callable[[Progress | TrackProgress], None] | None = None,
    store: ResultStore | None = None,
) -> SweepReport:
    """Run (or resume) a sweep; returns what happened. Failures do not raise.
    ``progress`` is called with a `Progress` at each round's start and after
    each finished task. A spec with ``[search]`` runs its search
    (`schedlab.platform.search`), which runs its trials through here with
    ``store``: the results dir, whose lock the caller holds."""
    if spec.search is not None and store is None:
        from schedlab.platform.search.loop import run_search

        return run_search(spec, address=address, fresh=fresh, tracking=tracking, progress=progress)
    started = time.monotonic()
    plan = build_plan(spec)
    planned = time.monotonic() - started
    held = store is not None
    store = store if store is not None else ResultStore(spec.results_dir())
    store.lock()  # one writer per results dir, for this driver's life (released on return or death)
    try:
        report = _run_locked(
            spec, plan, store, started, address=address, fresh=fresh, tracking=tracking, progress=progress
        )
        report.stages["plan"] = planned
        return report
    finally:
        store.tidy_tmp()
        if not held:
            store.unlock()


def _run_locked(
    spec: SweepSpec,
    plan: Plan,
    store: ResultStore,
    started: float,
    *,
    address: str | None,
    fresh: bool,
    tracking: bool | None,
    progress: Callable[[Progress | TrackProgress], None] | None,
) -> SweepReport:
    t0 = time.monotonic()
    try:
        previous = store.read_manifest()
    except UserError:
        previous = None  # prepare() says what is wrong with it (or --fresh discards it)
    grew = store.prepare(manifest_for(spec, plan, previous), fresh)
    store.save_code(plan.code.values())
    report = SweepReport(str(store.root), configs=len(plan.configs), grew=grew)
    done = store.done_keys()  # a damaged part file stops here, before any work
    stages = report.stages
    stages.update(
        dict.fromkeys(
            ("prepare", "ray_start", "submit", "wait", "get", "sink", "commit", "tracking", "compact", "driver_cpu"),
            0.0,
        ),
        **{f"task_{k}": 0.0 for k in STAGES},
    )
    stages["prepare"] = time.monotonic() - t0

    @contextlib.contextmanager
    def timed(stage: str) -> Iterator[None]:
        t = time.perf_counter()
        try:
            yield
        finally:
            stages[stage] += time.perf_counter() - t

    tracker = None
    if spec.tracking.enabled if tracking is None else tracking:
        from schedlab.platform.tracking.tracker import Tracker

        tracker = Tracker(spec.tracking.uri, spec.experiment(), store.root)
        # returns at once: its thread creates store, experiment and parent run, re-logs runs behind Parquet
        tracker.start()
    #: config id -> replications of the current round not yet received (row or failure): a
    #: configuration goes to tracking once settled, so its run is logged once per round, not per commit.
    unsettled: dict[str, set[int]] = {}

    def settled(ids: set[str]) -> None:
        ready = sorted(cid for cid in ids if not unsettled.get(cid))
        if tracker is not None and ready:
            with timed("tracking"):
                tracker.submit(ready)

    sink = _Sink(store, settled)
    sink.written |= done

    ray: ModuleType | None = None
    remote: Any = None  # ray's options() wrapper of run_instances (Ray leaves it unannotated)
    packer: Packer | None = None  # the plan's points to Ray's object store, a block at a time (`payload`)
    # both started by the first round that has work: a finished sweep resumes without Ray

    def start_ray() -> None:
        nonlocal ray, remote, packer
        if remote is None:
            t = time.perf_counter()
            ray = _init_ray(spec, address, plan.shipped())
            packer = Packer(plan.points, ray_put(ray))
            stages["ray_start"] += time.perf_counter() - t
            remote = ray.remote(run_instances).options(
                num_cpus=spec.execution.cpus_per_task, max_retries=spec.execution.retries, retry_exceptions=False
            )

    limit_cache = [0.0, 0]
    counts = {"round": 1, "done": 0, "total": 0, "failed": 0, "running": 0}  # for `Progress`

    def slots() -> float:
        """Tasks that run at once (the cluster's CPUs / cpus_per_task); re-read
        every 10 s as an autoscaling cluster grows."""
        if time.monotonic() - limit_cache[0] > 10.0:
            if ray is None:  # invariant: only called from run_round's loop, after start_ray()
                raise RuntimeError("slots() before start_ray()")
            cpus = ray.cluster_resources().get("CPU", 1.0)
            limit_cache[:] = [time.monotonic(), max(1.0, cpus / spec.execution.cpus_per_task)]
        return limit_cache[1]

    def max_in_flight() -> int:
        """A few tasks per CPU."""
        if spec.execution.max_in_flight:
            return spec.execution.max_in_flight
        return max(2, int(3 * slots()))

    shared_refs: dict[str, Any] = {}

    def shared_for(instance: Instance) -> Any:
        from schedlab.workloads.registry import workload_kind

        key = shared_input_key(instance.point)
        if key is None:
            return None
        if key not in shared_refs:  # parsed once, shared through the object store
            if ray is None:  # invariant: only called from run_round's loop, after start_ray()
                raise RuntimeError("shared_for() before start_ray()")
            kind = workload_kind(instance.point.kind)
            if kind.load_shared is None:  # invariant: shared_input_key gives a key only to kinds with load_shared
                raise RuntimeError(f"workload kind {kind.name!r} has no shared input")
            shared_refs[key] = ray.put(kind.load_shared(instance.point.params))
        return shared_refs[key]

    def run_round(instances: list[Instance]) -> None:
        work: list[tuple[Instance, list[Config]]] = []
        for inst in instances:
            todo = [c for c in inst.point.configs if (c.config_id, inst.replication) not in sink.written]
            report.rows_skipped += len(inst.point.configs) - len(todo)
            if todo:
                work.append((inst, todo))
        pending = TaskSizer(work, spec.execution.task_jobs)
        todo_of = {(w[0].point.point_id, w[0].replication): w[1] for w in work}
        inflight: dict[Any, tuple[list[Instance], int]] = {}
        counts["total"] += sum(len(w[1]) for w in work)
        unsettled.clear()
        for inst, todo in work:
            for c in todo:
                unsettled.setdefault(c.config_id, set()).add(inst.replication)
        if work:
            start_ray()
        counts["round"] = report.rounds + 1

        def tell() -> None:
            if progress:
                progress(
                    Progress(
                        spec.name,
                        counts["round"],
                        counts["done"],
                        counts["total"],
                        counts["failed"],
                        time.monotonic() - started,
                        counts["running"],
                    )
                )

        tell()
        cpu = time.process_time()
        try:
            while pending or inflight:
                if ray is None or packer is None:  # invariant: there is work, so start_ray() ran above
                    raise RuntimeError("tasks to run but Ray was not started")
                limit = max_in_flight()
                submitted = report.tasks
                while pending and len(inflight) < limit:
                    # the sweep's first submission also registers the task function with Ray: start-up
                    with timed("submit" if report.tasks else "ray_start"):
                        task, units = pending.next(slots())
                        payload = packer.pack([(i, todo_of[(i.point.point_id, i.replication)]) for i in task])
                        ref = remote.remote(
                            plan.engine,
                            payload,
                            shared_for(task[0]),
                            spec.outputs.per_job,
                            plan.metrics,
                            engine_path=spec.execution.engine_path,
                            encode=True,
                            sim_budget_seconds=spec.execution.sim_budget_seconds,
                        )
                        inflight[ref] = (task, units)
                        report.tasks += 1
                        counts["running"] += sum(len(todo_of[(i.point.point_id, i.replication)]) for i in task)
                if report.tasks > submitted:
                    tell()  # what is running now (the heartbeat repeats the last record)
                with timed("wait"):
                    ready, _ = ray.wait(list(inflight), num_returns=1, timeout=FLUSH_SECONDS)
                    if ready:
                        more, _ = ray.wait(list(inflight), num_returns=len(inflight), timeout=0)
                        ready = list(dict.fromkeys(ready + more))
                for ref in ready:
                    task, units = inflight.pop(ref)
                    try:
                        with timed("get"):
                            result: TaskResult = ray.get(ref)
                    except ray.exceptions.RayError as err:  # retries exhausted: a system failure
                        text = f"task failed after {spec.execution.retries} retries: {type(err).__name__}: {err}"
                        result = TaskResult(
                            [],
                            [],
                            [
                                {
                                    "config_id": c.config_id,
                                    "replication": i.replication,
                                    "policy": c.policy,
                                    "error": text,
                                }
                                for i in task
                                for c in todo_of[(i.point.point_id, i.replication)]
                            ],
                            0.0,
                        )
                    report.sim_seconds += result.sim_seconds
                    report.failures += result.failures
                    for k, v in result.stages.items():
                        stages[f"task_{k}"] = stages.get(f"task_{k}", 0.0) + v
                    busy = sum(v for k, v in result.stages.items() if k not in ("task", "warmup"))
                    pending.observe(units, busy)
                    t = time.perf_counter()
                    for cid, rep in result.delivered():
                        unsettled.get(cid, set()).discard(rep)
                    for got in result.failures:
                        unsettled.get(got["config_id"], set()).discard(got["replication"])
                    sink.add(result)
                    stages["sink"] += time.perf_counter() - t
                    finished = sum(len(todo_of[(i.point.point_id, i.replication)]) for i in task)
                    counts["done"] += finished
                    counts["running"] -= finished
                    counts["failed"] += len(result.failures)
                    tell()
                if sink.due():
                    with timed("commit"):
                        report.rows_written += sink.flush()
            with timed("commit"):
                report.rows_written += sink.flush()
            stages["driver_cpu"] += time.process_time() - cpu
        except KeyboardInterrupt:
            for ref in inflight:
                assert ray is not None  # a task in flight means start_ray() ran
                ray.cancel(ref, force=True)
            report.rows_written += sink.flush()
            raise Interrupted(
                f"interrupted: {report.rows_written} rows committed to {store.root}; run again to resume"
            ) from None

    try:
        if not spec.replications.adaptive:
            first = spec.replications.first
            run_round(plan.instances(range(first, first + spec.replications.first_round)))
            report.rounds = 1
        else:
            _adaptive(spec, plan, store, run_round, report)
    finally:
        if tracker is not None:
            report.tracking = _wait_for_tracking(tracker, store, progress)
    t = time.perf_counter()
    _compact_at_end(store, report)
    stages["compact"] = time.perf_counter() - t
    report.wall_seconds = time.monotonic() - started
    return report


def _wait_for_tracking(
    tracker: Tracker, store: ResultStore, progress: Callable[[Progress | TrackProgress], None] | None
) -> TrackReport:
    """The sweep's one wait on MLflow, at its end: as long as tracking makes
    progress (shown through ``progress``). Ctrl-C stops waiting: every row is
    in Parquet, and ``schedlab track DIR`` brings MLflow up to date."""
    try:
        return tracker.close(progress=progress)
    except KeyboardInterrupt:
        raise Interrupted(
            f"interrupted while MLflow caught up: rows are committed to {store.root}; "
            f"`schedlab track {store.root}` finishes MLflow (a run that was cut short resumes "
            f"with `schedlab run`)"
        ) from None


def _compact_at_end(store: ResultStore, report: SweepReport) -> None:
    """Merge the run's small part files (`compact`), after the last commit
    and after tracking's final check: the tracker's thread reads the part
    files until `Tracker.close` returns, and compaction changes no row, so
    that check still holds. Not after an interrupt or an error (those
    propagate before this point). A failure here (disk full, ...) or a
    Ctrl-C leaves every row in place and is reported, not raised: the sweep
    itself is complete."""
    from schedlab.platform.storage.compact import compact_locked

    try:
        report.compaction = compact_locked(store)
    except UserError as err:
        report.compaction_error = str(err)
    except KeyboardInterrupt:
        report.compaction_error = "interrupted"


def _adaptive(
    spec: SweepSpec, plan: Plan, store: ResultStore, run_round: Callable[[list[Instance]], None], report: SweepReport
) -> None:
    """Rounds of replications until every configuration's 95 % CI half-width of
    the metric is within rel_halfwidth of its mean (``target`` unset or
    "each"), or every policy's paired interval to the baseline is
    (``target = "paired"``, `adaptive.paired_satisfied`), or max is reached.
    ``mode = "select-best"`` runs Kim & Nelson's KN instead
    (`adaptive.select_best`)."""
    from schedlab.platform.execution import adaptive

    reps = spec.replications
    if reps.select_best:
        adaptive.select_best(spec, plan, store, run_round, report)
        return
    next_r = {p.point_id: 0 for p in plan.points}
    want = {p.point_id: reps.min for p in plan.points}
    short: set[str] = set()  # points whose target was not met at the last check
    while True:
        instances = [
            inst for p in plan.points for inst in plan.instances(range(next_r[p.point_id], want[p.point_id]), [p])
        ]
        if not instances:
            where = adaptive.point_where(plan)
            report.at_max = [where[p.point_id] for p in plan.points if p.point_id in short]
            return
        for p in plan.points:
            next_r[p.point_id] = want[p.point_id]
        run_round(instances)
        report.rounds += 1
        rows = store.scan().select("config_id", "replication", reps.metric).collect() if store.has("summary") else None
        if rows is None or reps.metric not in rows.columns:
            return
        if reps.target == "paired":
            done = adaptive.paired_satisfied(plan, rows, reps)
        else:
            done = adaptive.each_satisfied(plan, rows, reps)
        short = {p.point_id for p in plan.points if p.point_id not in done}
        for p in plan.points:
            if p.point_id not in done and want[p.point_id] < reps.max:
                want[p.point_id] = min(reps.max, want[p.point_id] + reps.batch)
