"""The batch engine's entry: rigid parallel jobs space-shared on a homogeneous
cluster, no preemption (FCFS, EASY backfilling, the priority heuristics of
``schedlab.engines.batch.policies.priority``). The simulator is
``schedlab.engines.batch.sim.engine``; compiled kernels for every built-in are in
``schedlab.engines.batch.sim.fast``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from schedlab.engines.base import Engine, LazyPolicies, RunResult, StartedRun
from schedlab.engines.batch.columns import JOBS_OUT, METRICS, UNITS
from schedlab.engines.batch.sim.system import BATCH
from schedlab.sim.system.jobs import BATCH_JOBS

if TYPE_CHECKING:
    from pathlib import Path

    import polars as pl


def run(
    jobs: pl.DataFrame,
    cls: type,
    params: Mapping[str, Any] | None = None,
    system: Mapping[str, Any] | None = None,
    path: str = "fast",
    recorder: Any = None,
) -> RunResult:
    """Run one batch policy over a rigid-job table: job_id, submit, runtime,
    procs[, requested_time] (SWF traces, Lublin). System: model ("procs" or
    "nodes"), procs (model procs; 0 = the trace's machine size from a
    ``machine_procs`` column if the table carries one), nodes (model nodes),
    tasks_per_node, oversize ("error" or "drop"), cpu_need (when the table
    has no such column), bound (the DFRS view: underutilization and Theorem
    1's max-stretch lower bound, see ``schedlab.engines.batch.sim.engine``),
    estimates ("requested" or "exact": the runtimes EASY plans with) and
    easy_backfill ("canonical" or "vcsim": EASY's backfilling rule, the DFRS
    authors' simulator's with "vcsim", ``schedlab.engines.batch.policies.easy``; EASY
    then runs on the reference engine).

    ``path="fast"``: the built-ins themselves (by identity, never a subclass)
    without params run on their compiled kernels (``schedlab.engines.batch.sim.fast``,
    the same start and end times to the bit); everything else, and whatever
    the kernels decline, runs on the reference engine. ``recorder``: the
    schedule recorder of ``simulate_batch`` (the reference path runs)."""
    sys_params = {**ENGINE.system_defaults, **(system or {})}
    per_job, summary = run_table(jobs, cls, **sys_params, path=path, recorder=recorder, **(params or {}))
    return RunResult(per_job, summary)


def start(
    jobs: pl.DataFrame,
    cls: type,
    params: Mapping[str, Any] | None = None,
    system: Mapping[str, Any] | None = None,
    *,
    recorder: Any = None,
    hidden: Any = None,
    watch: Any = None,
) -> StartedRun:
    """The reference run of ``cls`` with ``params`` over a rigid-job table
    under ``system`` (the engine's defaults fill the rest), not yet stepped:
    the inputs and the run :func:`run`'s reference path builds
    (``schedlab.engines.batch.sim.engine``: ``table_inputs``, ``reference_run``).
    ``recorder`` and ``hidden``: ``simulate_batch``'s; ``watch(policy, machine)``:
    what the engine calls instead of the policy. The batch engine has no
    consistency checks of its own (no ``check``)."""
    import time

    from schedlab.engines.batch.sim.engine import reference_run, table_inputs, table_outcome

    kw = dict(params or {})
    t = table_inputs(jobs, **{**ENGINE.system_defaults, **(system or {})})
    started = time.perf_counter()
    run = reference_run(t, cls, kw, recorder=recorder, hidden=hidden, watch=watch)
    return StartedRun(run, lambda res, t0: RunResult(*table_outcome(t, res, time.perf_counter() - t0)), started)


def run_table(
    jobs: pl.DataFrame, cls: type, *, path: str = "reference", **kwargs: Any
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``schedlab.engines.batch.sim.engine.run_table`` with the kernel of ``cls`` on
    the fast path: FCFS and EASY themselves (:func:`kernel_id`)."""
    from schedlab.engines.batch.sim.engine import run_table as simulate_table

    kernel = kernel_id(cls) if path == "fast" else None
    return simulate_table(jobs, cls, path=path, kernel=kernel, **kwargs)


def read_swf_file(path: Path, procs: int | None) -> tuple[pl.DataFrame, dict[str, Any], str]:
    """``schedlab simulate --workload-file``: an SWF log on ``procs``
    processors (default: its header's MaxProcs / MaxNodes)."""
    from schedlab.errors import UserError
    from schedlab.workloads.traces.swf import read as read_swf

    trace = read_swf(path)
    machine = procs if procs is not None else trace.meta.get("machine_procs")
    if machine is None:
        raise UserError(
            f"--workload-file {path}: the SWF header has no MaxProcs or MaxNodes; give the machine size with --procs"
        )
    return trace.jobs, {"model": "procs", "procs": int(machine)}, f"SWF {path} on {machine} processors"


def compiled_unit(cls: type, params: Mapping[str, Any] | None) -> tuple[str, Any, Any] | None:
    """(name, cached, warm) of the kernel ``cls`` runs on with ``params`` (None: the reference)."""
    if params:
        return None
    from schedlab.engines.batch.sim import fast

    bk = kernel_id(cls)
    name = fast.unit(bk)
    return None if name is None else (name, lambda: fast.cached(bk), lambda: fast.warm(bk))


def kernel_id(cls: type) -> str | tuple[str, int, bool] | None:
    """The id of ``cls``'s compiled kernel in ``schedlab.engines.batch.sim.fast``, if
    it *is* a built-in batch policy class (identity, never a subclass): FCFS
    and EASY by name, a priority policy as ("priority", its key code, its
    backfilling); else None (the reference engine runs it)."""
    name = ENGINE.builtin_name(cls)
    if name is None:
        return None
    from schedlab.engines.batch.policies.priority import PriorityPolicy

    if issubclass(cls, PriorityPolicy):
        return ("priority", int(cls.kind), bool(cls.backfill))
    return name


ENGINE = Engine(
    name="batch",
    summary=(
        "rigid parallel jobs space-shared on a homogeneous cluster, no preemption (FCFS, EASY backfilling; "
        "SJF, WFP3, UNICEP, F1-F4 without or with EASY)"
    ),
    policies=LazyPolicies("schedlab.engines.batch.policies", "BATCH_POLICIES"),
    adapter=run,
    seam="schedlab.engines.batch.policies.base.BatchPolicy",
    sources=(
        "engines/base.py",
        "engines/batch/__init__.py",
        "params.py",
        "errors.py",
        "sim/system",
        "engines/batch/sim/engine.py",
        "engines/batch/sim/fast.py",
        "sim/common/jit.py",
        "sim/bound/stretch_bound.py",
        "sim/bound/underutilization.py",
        "engines/batch/policies",
    ),
    workload_kinds=("trace", "lublin"),
    system=BATCH,
    jobs=BATCH_JOBS,
    metrics=METRICS,
    headline=("stretch_max", "wait_mean"),
    units=UNITS,
    checks="schedlab.engines.batch.checks:Check",
    recorder="schedlab.views.record:BatchRecorder",
    start=start,
    decision_point="schedlab.engines.batch.gym:BatchEnv",
    vector_decision_point="schedlab.engines.batch.gym:BatchVectorEnv",
    needs_workload_file=True,
    compiled_unit="schedlab.engines.batch:compiled_unit",
    read_workload_file="schedlab.engines.batch:read_swf_file",
    summary_lines="schedlab.engines.batch.columns:summary_lines",
    jobs_out=JOBS_OUT,
    batsim=True,
    fast_path=True,
)
