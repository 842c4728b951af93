"""The queue engine's entry: one shared server, preemptive fluid sharing (the
PSBS paper). The simulator is ``schedlab.engines.queue.sim.engine`` (readable reference, the
seam user policies run on) with compiled kernels for the built-in policies in
``schedlab.engines.queue.sim.fast``."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from schedlab.engines.base import Engine, LazyPolicies, RunResult, StartedRun, run_to_end_rows
from schedlab.engines.queue.columns import METRICS, UNITS
from schedlab.engines.queue.sim.system import QUEUE
from schedlab.errors import UserError
from schedlab.sim.system.jobs import QUEUE_JOBS
from schedlab.workloads.arrays import column

if TYPE_CHECKING:
    import polars as pl


def run(
    jobs: pl.DataFrame,
    cls: type,
    params: Mapping[str, Any] | None = None,
    system: Mapping[str, Any] | None = None,
    path: str = "fast",
    recorder: Any = None,
) -> RunResult:
    """Run one queue policy over a canonical job table (see workloads.schema).

    ``path="fast"``: a built-in policy class (by identity, never a subclass)
    runs on its compiled kernel (``schedlab.engines.queue.sim.fast``, the same
    completion times to the bit); everything else, whatever the kernels
    decline, and a kernel another process is compiling right now
    (``schedlab.sim.common.compiling``) run on the reference engine
    (``schedlab.engines.queue.sim.engine``).
    ``recorder``: the schedule recorder of ``simulate`` (the reference runs)."""
    if system:
        raise UserError(f"the queue engine takes no system parameters (got {', '.join(sorted(system))})")
    submit = column(jobs, "submit")
    size = column(jobs, "size")
    estimate = column(jobs, "estimate")
    weight = column(jobs, "weight")
    out = None
    kernel = kernel_id(cls) if path == "fast" and not params and recorder is None else None
    if kernel is not None:  # numba is imported only here
        from schedlab.engines.queue.sim import fast
        from schedlab.sim.common import compiling

        if compiling.ready(fast.unit(kernel)):  # else compiled beside this process now: the reference runs
            fast.warm(kernel)  # compile or load the kernel outside the timed run
            # the kernel's and the summary's one writable copy (a JobArrays column is read-only)
            submit, size = (fast.writable(a) if a.dtype == np.float64 else a for a in (submit, size))
            started = time.perf_counter()
            out = fast.simulate(kernel, submit, size, estimate, weight)
    if out is None:  # the reference path (or the kernel declined)
        return run_to_end_rows(start(jobs, cls, params, recorder=recorder))
    completion, events = out
    wall = time.perf_counter() - started
    summed = fast.outcome.summarise(
        submit, size, completion, column(jobs, "weight_class") if "weight_class" in jobs.columns else None
    )
    if summed is None:  # outside the summary kernel's remit: numpy's route (the same numbers)
        return outcome(jobs, completion, events, wall)
    sojourn, slowdowns, summary = summed
    summary.update(events=float(events), sim_seconds=wall)
    return RunResult(_per_job(jobs, submit, size, completion, sojourn, slowdowns), summary)


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
    """The reference run of ``cls`` with ``params`` over a canonical job table,
    not yet stepped (:func:`run`'s reference path;
    ``schedlab.engines.instance.start_instance``). ``recorder`` and ``hidden``:
    ``schedlab.engines.queue.sim.engine.simulate``'s; ``watch(policy, server)``:
    what the engine calls instead of the policy (check mode's counters,
    ``schedlab.engines.queue.checks``). The queue engine has no consistency
    checks of its own (no ``check``)."""
    from schedlab.engines.queue.sim.engine import QueueRun

    if system:
        raise UserError(f"the queue engine takes no system parameters (got {', '.join(sorted(system))})")
    kw = dict(params or {})
    if watch is not None:
        factory: Any = lambda server: watch(cls(server, **kw), server)  # noqa: E731
    else:
        factory = (lambda server: cls(server, **kw)) if kw else cls  # noqa: E731
    started = time.perf_counter()
    run = QueueRun(
        column(jobs, "submit"),
        column(jobs, "size"),
        column(jobs, "estimate"),
        column(jobs, "weight"),
        factory,
        hidden=hidden,
        recorder=recorder,
    )
    return StartedRun(run, lambda res, t0: outcome(jobs, res[0], res[1], time.perf_counter() - t0), started)


def outcome(jobs: pl.DataFrame, completion: Any, events: int, wall: float) -> RunResult:
    """The :class:`RunResult` of a run's completion times and event count
    (``wall``: its seconds): :func:`run`'s, and that of a run stepped by
    another driver (``schedlab.engines.queue.gym``)."""
    from schedlab.sim.common.metrics import queue_summary, slowdown

    submit = column(jobs, "submit")
    size = column(jobs, "size")
    sojourn = completion - submit
    classes = column(jobs, "weight_class") if "weight_class" in jobs.columns else None
    slowdowns = slowdown(sojourn, size)
    summary = queue_summary(size, sojourn, classes, slowdowns)
    summary.update(makespan=float(completion.max()), events=float(events), sim_seconds=wall)
    return RunResult(_per_job(jobs, submit, size, completion, sojourn, slowdowns), summary)


def _per_job(jobs: Any, submit: Any, size: Any, completion: Any, sojourn: Any, slowdowns: Any) -> dict[str, Any]:
    """A run's per-job columns (``RunResult.jobs``)."""
    return {
        "job_id": column(jobs, "job_id"),
        "submit": submit,
        "size": size,
        "estimate": column(jobs, "estimate"),
        "weight": column(jobs, "weight"),
        "completion": completion,
        "sojourn": sojourn,
        "slowdown": slowdowns,
    }


def complete_jobs(jobs: pl.DataFrame, source: str) -> pl.DataFrame:
    """A generator's table in the queue's canonical form (estimate = size and
    weight = 1 where absent, every value checked: ``schedlab.workloads.schema``),
    its ``weight_class`` column kept."""
    from schedlab.workloads.schema import validate_queue_table

    extra = jobs.select("weight_class") if "weight_class" in jobs.columns else None
    table = validate_queue_table(jobs, source, None)
    return table.with_columns(extra) if extra is not None else table


def compiled_unit(cls: type, params: Mapping[str, Any] | None) -> tuple[str, Any, Any] | None:
    """(name, cached, warm) of the kernel ``cls`` runs on with ``params`` (None: the reference)."""
    if params:
        return None
    from schedlab.engines.queue.sim import fast

    qk = kernel_id(cls)
    name = fast.unit(qk)
    return None if name is None else (name, lambda: fast.cached(qk), lambda: fast.warm(qk))


def kernel_id(cls: type) -> str | None:
    """The id of ``cls``'s compiled kernel in ``schedlab.engines.queue.sim.fast``: its
    registry name if it *is* a built-in queue policy class (identity, never a
    subclass), else None (the reference engine runs it)."""
    if not _BUILTINS:  # every run asks: the lazily imported policy table is read once
        for name, c in ENGINE.policies.items():
            _BUILTINS.setdefault(id(c), (c, name))  # the first name, as ENGINE.builtin_name
    hit = _BUILTINS.get(id(cls))
    return hit[1] if hit is not None and hit[0] is cls else None


#: id(class) -> (class, name) of every built-in queue policy (`kernel_id`: the
#: identity is checked, so a class that reuses a dead one's id is never taken for it).
_BUILTINS: dict[int, tuple[type, str]] = {}


ENGINE = Engine(
    name="queue",
    summary="one shared server, preemptive fluid sharing (PSBS paper)",
    policies=LazyPolicies("schedlab.engines.queue.policies", "QUEUE_POLICIES"),
    adapter=run,
    seam="schedlab.engines.queue.policies.base.QueuePolicy",
    sources=(
        "engines/base.py",
        "engines/queue/__init__.py",
        "params.py",
        "errors.py",
        "engines/queue/sim/engine.py",
        "engines/queue/sim/fast",
        "sim/common/jit.py",
        "sim/common/metrics.py",
        "engines/queue/policies",
    ),
    workload_kinds=("synthetic", "file", "trace"),
    system=QUEUE,
    jobs=QUEUE_JOBS,
    metrics=METRICS,
    headline=("mst", "slowdown_mean"),
    units=UNITS,
    complete_jobs="schedlab.engines.queue:complete_jobs",
    checks="schedlab.engines.queue.checks:Check",
    recorder="schedlab.views.record:QueueRecorder",
    start=start,
    decision_point="schedlab.engines.queue.gym:QueueEnv",
    warmup=True,
    compiled_unit="schedlab.engines.queue:compiled_unit",
    unstable_load=1.0,
    summary_lines="schedlab.engines.queue.columns:summary_lines",
    fast_path=True,
    job_arrays=True,
)
