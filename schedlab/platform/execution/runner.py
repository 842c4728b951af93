"""Run a sweep: plan -> tasks -> Parquet commits -> MLflow.

The driver is the only writer. It hands tasks, sized by measurement
(`sizing`), to an executor (`backends`: in the driver's process, a local
pool, or Ray; chosen by ``[execution] backend``, auto by default), takes
results back as they finish, buffers them and commits them to Parquet in
atomic batches (``store``; a task's rows arrive already encoded as Parquet
parts, `parts`), and after each commit hands the touched configurations to
the MLflow tracker's background thread. Re-running the same spec resumes:
keys on disk are skipped. Adaptive rounds are `adaptive`'s loops around
`_Sweep.run_round`.

A task that cannot finish (its worker died and retries are exhausted) and
any exception inside a simulation become failure records, the sweep goes
on, and the report says so (the CLI then exits non-zero).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from schedlab.errors import UserError
from schedlab.platform.execution.backends import Choice, choose
from schedlab.platform.execution.executor import Executor, Lost, Task, busy_seconds
from schedlab.platform.execution.interrupts import held_back
from schedlab.platform.execution.parts import keep_only
from schedlab.platform.execution.ray_backend import forget_ray
from schedlab.platform.execution.report import Interrupted, Progress, SweepReport
from schedlab.platform.execution.sizing import TaskSizer
from schedlab.platform.execution.tasks import STAGES, TaskResult
from schedlab.platform.planning.ids_file import KeptIds
from schedlab.platform.planning.plan import Config, Instance, Instances, Plan, PlanIds, PlanPoints, plan_of
from schedlab.platform.planning.spec import SweepSpec
from schedlab.platform.storage.keyset import KeySet
from schedlab.platform.storage.manifest import manifest_for
from schedlab.platform.storage.seam import ResultsStore, compact_store, open_store
from schedlab.sim.common.compiling import compiling as compiling_now

if TYPE_CHECKING:
    import pyarrow as pa

    from schedlab.platform.execution.parts import Part
    from schedlab.platform.execution.precompile import Background
    from schedlab.platform.tracking.process import TrackingProcess
    from schedlab.platform.tracking.sync import TrackReport
    from schedlab.platform.tracking.tracker import TrackProgress

__all__ = [
    "Interrupted",
    "Progress",
    "SweepReport",
    "forget_ray",
    "manifest_for",
    "run_sweep",
]

#: The driver's stages (`SweepReport.stages`), each timed from zero per run.
DRIVER_STAGES = (
    "prepare",
    "backend_start",
    "submit",
    "wait",
    "sink",
    "commit",
    "tracking",
    "compact",
    "driver_cpu",
    "precompile",
)
#: What the progress line says while kernels are compiled beside the sweep (`precompile`).
COMPILING_NOTE = "compiling kernels beside the sweep (the reference loop runs meanwhile)"
#: ... and while the first task compiles them in-process (the reference would take longer) ...
INLINE_NOTE = "compiling kernels (numba, cached for later runs)"
#: ... and while the sweep waits for them (`_Sweep.await_kernels`).
WAITING_NOTE = "waiting for the kernels compiled beside the sweep (the reference loop would take longer)"
#: Commit when this many per-job rows are buffered (bounds driver memory).
FLUSH_JOB_ROWS = 200_000
#: ... or this many summary rows ...
FLUSH_SUMMARY_ROWS = 5_000
#: ... or this many bytes of encoded parts ...
FLUSH_BYTES = 64 << 20
#: ... or when the oldest buffered row is this old (seconds).
FLUSH_SECONDS = 2.0
#: Instances a round checks against the keys on disk at once (vectorised, `KeySet.contains_many`).
UNWRITTEN_BLOCK = 4096


class _Sink:
    """Buffers task results and commits them in atomic batches."""

    def __init__(self, store: ResultsStore, on_commit: Callable[[set[str]], None]) -> None:
        self.store = store
        self.on_commit = on_commit
        self.written = KeySet()  # 8 bytes a key: a resume of ten million rows (`keyset`)
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
            keys = list(dict.fromkeys(part.keys))
            done = self.written.contains_many([c for c, _ in keys], [r for _, r in keys]).tolist()
            fresh = {k for k, d in zip(keys, done, strict=True) if not d}  # a retried task's rows: kept once
            self.written.add_absent(fresh)
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
        """Commit the buffer. The buffer is taken before writing, and Ctrl-C (or
        a SIGTERM handled as one) is held back while the batch is written
        (delivered right after, `interrupts.held_back`), so an interrupt can
        never commit the same rows twice nor half a batch."""
        if not (self.summary or self.failures or self.parts):
            return 0
        summary, jobs, failures, series, parts = self.summary, self.jobs, self.failures, self.series, self.parts
        self._reset()
        with held_back():
            self.store.commit(summary, jobs, failures, series, parts=parts)
        touched = (
            {r["config_id"] for r in summary}
            | {f["config_id"] for f in failures}
            | {k[0] for p in parts for k in p.keys}
        )
        if touched:
            self.on_commit(touched)
        return len(summary) + sum(len(p.keys) for p in parts)


def run_sweep(
    spec: SweepSpec,
    *,
    address: str | None = None,
    backend: str | None = None,
    fresh: bool = False,
    tracking: bool | None = None,
    progress: Callable[[Progress | TrackProgress], None] | None = None,
    store: ResultsStore | None = None,
    figures: Callable[[Path], list[Path]] | None = None,
    notify: Callable[[str], None] | None = None,
) -> SweepReport:
    """Run (or resume) a sweep; returns what happened. Failures do not raise.
    ``backend`` ("auto", "local", "ray"; default the spec's) and ``address``
    choose where tasks run (`backends`). ``progress`` is called with a
    `Progress` at each round's start and after each finished task. A spec
    with ``[search]`` comes here only from its search (`schedlab.platform.search`,
    started by `schedlab.platform.sweep.run_sweep`), with ``store``: the results dir,
    whose lock the search holds. ``figures`` (with tracking on) draws the
    sweep's figures from its results dir once every round is done, while
    tracking catches up; the tracker adds them to the sweep's parent run.
    ``notify`` gets, before any work starts, the line saying what re-runs
    because user code changed (`ResultStore.prepare`; also ``report.reruns``)."""
    if spec.search is not None and store is None:
        raise ValueError(
            "a spec with [search] runs through schedlab.platform.sweep.run_sweep (the search drives this runner)"
        )
    started = time.monotonic()
    plan = plan_of(spec)  # the one parse_spec built, when the spec is unchanged since
    planned = time.monotonic() - started
    choice = choose(spec, address, backend)  # a contradiction (local + an address) stops here, before any lock
    held = store is not None
    store = store if store is not None else open_store(spec.results_dir())
    store.lock()  # one writer per results dir, for this driver's life (released on return or death)
    try:
        report = _run_locked(
            _Sweep(spec, plan, store, started, choice, address, progress, notify), fresh, tracking, figures
        )
        report.stages["plan"] = planned
        return report
    finally:
        store.tidy_tmp()
        if not held:
            store.unlock()


def _run_locked(
    sweep: _Sweep, fresh: bool, tracking: bool | None, figures: Callable[[Path], list[Path]] | None
) -> SweepReport:
    """Prepare the results dir, run the rounds, draw the figures and wait for
    tracking, compact."""
    try:
        return _run_rounds(sweep, fresh, tracking, figures)
    finally:
        sweep.stop_compiler()


def _run_rounds(
    sweep: _Sweep, fresh: bool, tracking: bool | None, figures: Callable[[Path], list[Path]] | None
) -> SweepReport:
    spec, store, report = sweep.spec, sweep.store, sweep.report
    sweep.prepare(fresh)
    if spec.tracking.enabled if tracking is None else tracking:
        from schedlab.platform.tracking.process import TrackingProcess

        sweep.tracker = TrackingProcess(spec.tracking.uri, spec.experiment(), store.root)
        # returns at once: its process creates store, experiment and parent run, re-logs runs behind Parquet
        sweep.tracker.start()
    drawn: tuple[list[str], str | None] = ([], None)
    try:
        if not spec.replications.adaptive:
            first = spec.replications.first
            sweep.run_round(sweep.plan.each_instance(range(first, first + spec.replications.first_round)))
            report.rounds = 1
        else:
            from schedlab.platform.execution.adaptive import run_adaptive

            run_adaptive(spec, sweep.plan, store, sweep.run_round, report)
        if sweep.tracker is not None and figures is not None:
            drawn = _draw(figures, store.root)
    finally:
        sweep.finish_backend()
        if sweep.tracker is not None:
            report.tracking = _wait_for_tracking(sweep.tracker, store, sweep.progress, drawn[0])
            report.tracking.figures_error = report.tracking.figures_error or drawn[1]
    t = time.perf_counter()
    _compact_at_end(store, report)
    report.stages["compact"] = time.perf_counter() - t
    report.wall_seconds = time.monotonic() - sweep.started
    return report


class _Sweep:
    """One run's state: the report, the sink, the executor (made by the
    first round with work: a finished sweep resumes without starting any
    backend) and the counts behind `Progress`."""

    def __init__(
        self,
        spec: SweepSpec,
        plan: Plan,
        store: ResultsStore,
        started: float,
        choice: Choice,
        address: str | None,
        progress: Callable[[Progress | TrackProgress], None] | None,
        notify: Callable[[str], None] | None = None,
    ) -> None:
        self.spec, self.plan, self.store, self.started = spec, plan, store, started
        self.notify = notify
        self.choice, self.address, self.progress = choice, address, progress
        self.report = SweepReport(str(store.root), configs=len(plan.configs))
        self.tracker: TrackingProcess | None = None
        self.executor: Executor | None = None
        self.compiler: Background | None = None  # kernels compiled beside the sweep (`precompile`)
        #: Job-runs and busy seconds of the tasks run on the reference while kernels compiled.
        self.reference: tuple[int, float] = (0, 0.0)
        self.waiting = False  # `await_kernels` is waiting for the compile
        #: Wall and CPU seconds of this process's in-process tasks while kernels compiled.
        self.reference_clock: tuple[float, float] = (0.0, 0.0)
        self.first_round = False  # the next round is the first in this process: `compile_beside` decides
        self.inline = 0  # kernels the cache lacked that compile in this process on first use
        self.sink = _Sink(store, self.settled)
        self.counts = {"round": 1, "done": 0, "total": 0, "failed": 0, "running": 0}
        #: config id -> replications of the current round not yet received (row or failure): a
        #: configuration goes to tracking once settled, so its run is logged once per round, not per commit.
        #: Kept only with tracking on (nothing else reads it).
        self.unsettled: dict[str, set[int]] = {}

    def prepare(self, fresh: bool) -> None:
        """The results dir checked against the spec (or grown, or discarded
        with ``fresh``), the user code saved, the keys already on disk read."""
        t0 = time.monotonic()
        store, report = self.store, self.report
        previous = None
        try:  # only its inputs are read here: none without a point that reads a file (`input_files`)
            previous = store.read_manifest(lean=True) if "path" in self.plan.param_columns else None
        except UserError:
            pass  # prepare() says what is wrong with it (or --fresh discards it)
        if previous is not None:  # only its input files' fingerprints: not its configs held meanwhile
            previous = {"inputs": previous.get("inputs") or {}}
        plan, key = self.plan, self.plan.ids_key
        report.grew = store.prepare(manifest_for(self.spec, plan, previous), fresh, self.announce, key)
        ids = plan.points.ids if isinstance(plan.points, PlanPoints) else None
        if key is not None and ids is not None:  # for the next resume: its plan read, not hashed
            kept = KeptIds(ids.points, ids.configs, ids.draws, ids.drawn, plan.param_columns)
            store.keep_ids(key, kept, again=not plan.ids_read)
        store.save_code(self.plan.code.values())
        self.sink.written |= store.done_key_set()  # a damaged part file stops here, before any work
        report.stages.update(dict.fromkeys(DRIVER_STAGES, 0.0), **{f"task_{k}": 0.0 for k in STAGES})
        report.stages["prepare"] = time.monotonic() - t0

    def announce(self, line: str) -> None:
        """What re-runs because user code changed, said before it starts."""
        self.report.reruns = line
        if self.notify is not None:
            self.notify(line)

    @contextlib.contextmanager
    def timed(self, stage: str) -> Iterator[None]:
        t = time.perf_counter()
        try:
            yield
        finally:
            self.report.stages[stage] += time.perf_counter() - t

    def settled(self, ids: set[str]) -> None:
        """After a commit: configurations with nothing left this round go to tracking."""
        ready = sorted(cid for cid in ids if not self.unsettled.get(cid))
        if self.tracker is not None and ready:
            with self.timed("tracking"):
                self.tracker.submit(ready)

    def tell(self) -> None:
        if self.progress:
            c = self.counts
            elapsed = time.monotonic() - self.started
            if self.inline and not c["done"]:
                note = INLINE_NOTE
            elif self.compiler is None or not compiling_now():
                note = ""
            else:
                note = WAITING_NOTE if self.waiting else COMPILING_NOTE
            self.progress(
                Progress(self.spec.name, c["round"], c["done"], c["total"], c["failed"], elapsed, c["running"], note)
            )

    def start_backend(self) -> Executor:
        if self.executor is None:
            from schedlab.platform.execution.backends import TaskCall, make_executor

            spec = self.spec
            execution = spec.execution
            call = TaskCall(
                self.plan.engine_ref,
                spec.outputs.per_job,
                self.plan.metrics,
                execution.engine_path,
                execution.sim_budget_seconds,
            )
            self.executor = make_executor(spec, self.plan, self.choice, self.address, call)
            self.first_round = self.choice.tier is None and execution.engine_path == "fast"  # tasks start here
        return self.executor

    def compile_beside(self, work_units: int) -> None:
        """The kernels this sweep's built-in policies run on that the cache
        lacks, compiled by a child meanwhile (`precompile`) -- unless the
        round's ``work_units`` (job-runs) on the reference loop would outlast
        their compile at the priors (`precompile.worth_a_child`): then they
        compile here on first use, as without a child (no reference runs,
        no second process's start-up and numba set-up)."""
        from schedlab.platform.execution.precompile import Background, cold_units, worth_a_child
        from schedlab.sim.common import compiling

        self.first_round = False
        compiling.reset()
        # the plan's policy configurations (every point crosses the same ones), not its configurations
        policies = self.plan.policies
        builtin = {(name, json.dumps(params, sort_keys=True)) for name, params, code in policies if code is None}
        with self.timed("precompile"):
            cold = cold_units(self.plan.engine, [(p, json.loads(params)) for p, params in sorted(builtin)])
            if cold and worth_a_child(list(cold), work_units):
                self.compiler = Background(self.plan.engine, cold)
            elif cold:
                self.inline = len(cold)

    def finish_backend(self) -> None:
        """What ran the tasks, and why, into the report."""
        if self.executor is not None:
            self.report.backend, self.report.backend_why = self.executor.name, getattr(self.executor, "why", "")
            self.report.stages["backend_start"] = self.executor.start_seconds

    def stop_compiler(self) -> None:
        """At the run's very end (after tracking's wait and the compaction,
        which the compile overlaps): the child stopped if it still compiles,
        and what it did into the report."""
        if self.compiler is not None:
            self.compiler.stop()
            self.report.kernels = self.compiler.line(self.counts["done"])
            self.compiler = None
        elif self.inline:
            seconds = self.report.stages.get("task_warmup", 0.0)
            self.report.kernels = (
                f"kernels: {self.inline} compiled in-process before the simulations on them, in {seconds:.1f} s "
                f"with the first calls' imports (the reference loop would have taken longer)"
            )

    def unwritten(
        self, instances: Iterable[Instance], planned: list[int] | None = None
    ) -> Iterator[tuple[Instance, Sequence[Config]]]:
        """The (instance, configurations not on disk) pairs of ``instances``,
        made as they are drawn, `UNWRITTEN_BLOCK` instances checked at once; an
        instance with nothing on disk keeps its point's own tuple of
        configurations (no list per instance). ``planned[0]`` counts every
        configuration looked at, written or not. A round of the plan's own
        instances (`plan.Instances`) whose ids the plan kept (`plan.PlanIds`)
        is checked by those numbers, and a point is made only when one of its
        configurations is not on disk (`_unwritten_by_ids`): skipping what a
        killed sweep finished makes no point."""
        written = self.sink.written
        known = self.plan.points.ids if isinstance(self.plan.points, PlanPoints) else None
        if isinstance(instances, Instances) and instances.plan is self.plan and known is not None:
            yield from self._unwritten_by_ids(instances, known, planned)
            return
        for block in _batched(instances):
            ids = [c.config_id for inst in block for c in inst.point.configs]
            if planned is not None:
                planned[0] += len(ids)
            reps = [inst.replication for inst in block for _ in inst.point.configs]
            done = written.contains_many(ids, reps).tolist()
            at = 0
            for inst in block:
                configs = inst.point.configs
                flags = done[at : at + len(configs)]
                at += len(configs)
                if not any(flags):
                    yield inst, configs
                elif not all(flags):
                    yield inst, [c for c, d in zip(configs, flags, strict=True) if not d]

    def _unwritten_by_ids(
        self, instances: Instances, ids: PlanIds, planned: list[int] | None
    ) -> Iterator[tuple[Instance, Sequence[Config]]]:
        """`unwritten` of the plan's own instances, in their order (point by
        point, each replication in turn): `UNWRITTEN_BLOCK` points' ids
        checked against the keys on disk at once, per replication, as numbers
        (`KeySet.contains_numbers`); only the points with a configuration to
        run are made (`PlanPoints.some`). The same pairs as the generic path,
        checked as lazily (a block when the round reaches it)."""
        plan, reps = self.plan, instances.replications
        points = plan.points
        assert isinstance(points, PlanPoints)  # `unwritten` sends only a streamed plan's instances here
        written, per, seed = self.sink.written, ids.per_point, plan.seed
        if not reps:
            return
        for start in range(0, len(points), UNWRITTEN_BLOCK):
            stop = min(start + UNWRITTEN_BLOCK, len(points))
            numbers = ids.configs_of(start, stop)
            if planned is not None:
                planned[0] += len(numbers) * len(reps)
            done: list[np.ndarray] = [written.contains_numbers(numbers, r).reshape(stop - start, per) for r in reps]
            finished = [d.all(axis=1) for d in done]  # per replication: the points with every configuration on disk
            every: list[Any] = [f.tolist() for f in finished]
            none: list[Any] = [(~d.any(axis=1)).tolist() for d in done]  # ... with none
            # the points of the block with a configuration not on disk in some replication
            left = np.flatnonzero(~np.logical_and.reduce(finished))
            for j, point in points.some((start + left).tolist()):
                words = int(point.seed_id, 16)
                for i, r in enumerate(reps):
                    if none[i][j - start]:
                        yield Instance(point, r, (seed, words, r), j), point.configs
                    elif not every[i][j - start]:
                        flags = done[i][j - start].tolist()
                        todo = [c for c, d in zip(point.configs, flags, strict=True) if not d]
                        yield Instance(point, r, (seed, words, r), j), todo

    def _count_by_ids(self, instances: Instances, ids: PlanIds, sizer: TaskSizer) -> tuple[int, int, int]:
        """`round_work`'s counting pass over the plan's own instances without
        making a point: (configurations to run, their job-runs, configurations
        looked at), from the plan's kept ids checked against the keys on disk
        as `_unwritten_by_ids` checks them, and each point's parameters
        (`PlanPoints.some_params`, `TaskSizer.units_of`) -- or, when every
        point has the same ``njobs`` (`PlanPoints.same_value`), no point's:
        a point's cost is then a function of how many of its configurations
        are left (a resume of ten million counts them by the number)."""
        points, reps = self.plan.points, instances.replications
        assert isinstance(points, PlanPoints)  # `round_work` sends only a streamed plan's instances here
        written, per = self.sink.written, ids.per_point
        total = units = looked = 0
        if not reps:
            return 0, 0, 0
        same, njobs = points.same_value("njobs")  # every point's cost alike: counted, not read point by point
        for start in range(0, len(points), UNWRITTEN_BLOCK):
            stop = min(start + UNWRITTEN_BLOCK, len(points))
            numbers = ids.configs_of(start, stop)
            looked += len(numbers) * len(reps)
            # per replication: each point's configurations not on disk
            todo = [per - written.contains_numbers(numbers, r).reshape(stop - start, per).sum(axis=1) for r in reps]
            total += sum(int(t.sum()) for t in todo)
            if same:
                params = {} if njobs is None else {"njobs": njobs}
                for t in todo:
                    lefts, times = np.unique(t[t > 0], return_counts=True)
                    units += sum(
                        sizer.units_of(params, int(c), per) * int(n) for c, n in zip(lefts, times, strict=True)
                    )
                continue
            left = np.flatnonzero(np.logical_or.reduce([t > 0 for t in todo]))
            counts: list[Any] = [t.tolist() for t in todo]
            for k, params in points.some_params((start + left).tolist()):
                for count in counts:
                    if count[k - start]:
                        units += sizer.units_of(params, count[k - start], per)
        return total, units, looked

    def round_work(self, instances: Iterable[Instance]) -> TaskSizer:
        """The round's work, streamed from ``instances`` (iterated twice: once
        here to count what is not on disk, once as tasks are handed out), as
        a `TaskSizer`; counts it."""
        pending = TaskSizer(self.unwritten(instances), self.spec.execution.task_jobs, remaining=0)
        total = units = 0
        planned = [0]
        tracked = self.tracker is not None
        self.unsettled.clear()
        known = self.plan.points.ids if isinstance(self.plan.points, PlanPoints) else None
        if not tracked and isinstance(instances, Instances) and instances.plan is self.plan and known is not None:
            total, units, planned[0] = self._count_by_ids(instances, known, pending)
        else:
            for inst, todo in self.unwritten(instances, planned):
                total += len(todo)
                units += pending.cost(inst, todo)
                if tracked:
                    for c in todo:
                        self.unsettled.setdefault(c.config_id, set()).add(inst.replication)
        pending.remaining = units
        self.report.rows_skipped += planned[0] - total
        self.counts["total"] += total
        self.counts["round"] = self.report.rounds + 1
        return pending

    def run_round(self, instances: Iterable[Instance]) -> None:
        """One round: its tasks through the executor, results into the sink,
        committed in batches. Ctrl-C commits what arrived and raises `Interrupted`."""
        pending = self.round_work(instances)
        executor = self.start_backend() if pending.remaining else None
        if executor is not None and self.first_round:
            self.compile_beside(pending.remaining)
        self.tell()
        if executor is None:
            return
        executor.begin_round(pending.remaining)
        cpu = time.process_time()
        try:
            while pending or executor.in_flight:
                self.await_kernels(executor, pending)
                self.submit_more(executor, pending)
                wall, cpu = time.perf_counter(), time.process_time()
                with self.timed("wait"):
                    finished = executor.wait(FLUSH_SECONDS)
                if self.compiler is not None and executor.name == "in-process" and finished:
                    clock = self.reference_clock  # an in-process task: its wall per CPU second
                    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
                    self.reference_clock = (clock[0] + wall, clock[1] + cpu)
                for task, result in finished:
                    self.receive(task, result, pending)
                if self.sink.due():
                    with self.timed("commit"):
                        self.report.rows_written += self.sink.flush()
            with self.timed("commit"):
                self.report.rows_written += self.sink.flush()
            self.report.stages["driver_cpu"] += time.process_time() - cpu
        except KeyboardInterrupt:
            executor.cancel()
            self.report.rows_written += self.sink.flush()
            raise Interrupted(
                f"interrupted: {self.report.rows_written} rows committed to {self.store.root}; run again to resume"
            ) from None

    def await_kernels(self, executor: Executor, pending: TaskSizer) -> None:
        """While kernels compile beside an in-process sweep: wait for them
        when the round's remaining work on the reference loop, at the rate
        its tasks so far ran, would outlast the compile (`precompile`)."""
        if self.compiler is None or not self.reference[0] or executor.in_flight or not compiling_now():
            return
        if executor.name != "in-process":
            return
        units, seconds = self.reference
        wall, cpu = self.reference_clock
        slowdown = max(wall / cpu, 1.0) if cpu > 0 else 1.0  # a loaded machine: the compile is slower too
        if pending.remaining * seconds / units > self.compiler.seconds_left(slowdown):
            self.waiting = True
            try:
                self.tell()
                self.compiler.wait()
            finally:
                self.waiting = False

    def submit_more(self, executor: Executor, pending: TaskSizer) -> None:
        """Keep ``max_in_flight`` tasks submitted; progress says what runs now."""
        limit = executor.max_in_flight()
        submitted = self.report.tasks
        while pending and executor.in_flight < limit:
            with self.timed("submit"):
                drawn, units = pending.next_work(executor.slots())
                work = [(i, list(todo)) for i, todo in drawn]
                executor.submit(Task(work, units))
                self.report.tasks += 1
                self.counts["running"] += sum(len(todo) for _, todo in work)
        if self.report.tasks > submitted:
            self.tell()  # what is running now (the heartbeat repeats the last record)

    def receive(self, task: Task, got: TaskResult | Lost, pending: TaskSizer) -> None:
        """A finished task (or a lost one: failure records) into the sink and the counts."""
        if isinstance(got, Lost):
            failures = [
                {"config_id": c.config_id, "replication": i.replication, "policy": c.policy, "error": got.text}
                for i, todo in task.work
                for c in todo
            ]
            got = TaskResult([], [], failures, 0.0)
        report, stages = self.report, self.report.stages
        report.sim_seconds += got.sim_seconds
        report.failures += got.failures
        for k, v in got.stages.items():
            stages[f"task_{k}"] = stages.get(f"task_{k}", 0.0) + v
        if not got.reference_runs:  # a task run on the reference while kernels compiled: not their cost
            pending.observe(task.units, busy_seconds(got))
        elif task.units > 0:  # the reference's cost, which `await_kernels` weighs against the compile's
            self.reference = (self.reference[0] + task.units, self.reference[1] + busy_seconds(got))
        with self.timed("sink"):
            for cid, rep in got.delivered():
                self.unsettled.get(cid, set()).discard(rep)
            for failure in got.failures:
                self.unsettled.get(failure["config_id"], set()).discard(failure["replication"])
            self.sink.add(got)
        finished = sum(len(todo) for _, todo in task.work)
        self.counts["done"] += finished
        self.counts["running"] -= finished
        self.counts["failed"] += len(got.failures)
        self.tell()


def _batched(items: Iterable[Instance]) -> Iterator[tuple[Instance, ...]]:
    """Tuples of `UNWRITTEN_BLOCK` items (``itertools.batched`` is Python 3.12's)."""
    it = iter(items)
    while block := tuple(itertools.islice(it, UNWRITTEN_BLOCK)):
        yield block


def _draw(figures: Callable[[Path], list[Path]], root: Path) -> tuple[list[str], str | None]:
    """The sweep's figures (files), or why not: a picture never fails a sweep."""
    try:
        return [str(p) for p in figures(root)], None
    except Exception as err:  # noqa: BLE001 - reported as a warning
        return [], f"{type(err).__name__}: {err}"


def _wait_for_tracking(
    tracker: TrackingProcess,
    store: ResultsStore,
    progress: Callable[[Progress | TrackProgress], None] | None,
    figures: list[str],
) -> TrackReport:
    """The sweep's one wait on MLflow, at its end: as long as tracking makes
    progress (shown through ``progress``); it adds ``figures`` to the parent
    run. Ctrl-C stops waiting: every row is in Parquet, and ``schedlab track
    DIR`` brings MLflow up to date."""
    try:
        return tracker.close(progress=progress, figures=figures)
    except KeyboardInterrupt:
        raise Interrupted(
            f"interrupted while MLflow caught up: rows are committed to {store.root}; "
            f"`schedlab track {store.root}` finishes MLflow (a run that was cut short resumes "
            f"with `schedlab run`)"
        ) from None


def _compact_at_end(store: ResultsStore, report: SweepReport) -> None:
    """Merge the run's small part files (`compact`), after the last commit
    and after tracking's final check: the tracker's thread reads the part
    files until `Tracker.close` returns, and compaction changes no row, so
    that check still holds. Not after an interrupt or an error (those
    propagate before this point). A failure here (disk full, ...) or a
    Ctrl-C leaves every row in place and is reported, not raised: the sweep
    itself is complete (a Ctrl-C also sets ``report.interrupted``, on which a
    pipeline or a search stops instead of starting its next sweep)."""
    try:
        report.compaction = compact_store(store)
    except UserError as err:
        report.compaction_error = str(err)
    except KeyboardInterrupt:
        report.compaction_error = "interrupted"
        report.interrupted = True  # a pipeline or a search stops here (`SweepReport.interrupted`)
