"""The DFRS engine's entry: the jobs of the batch engine as VMs with fractional
CPU, pausing and migration (Stillwell, Vivien, Casanova). The simulator is
``schedlab.engines.dfrs.sim``; its policies are in ``schedlab.engines.dfrs.policies``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from schedlab.engines.base import Engine, LazyPolicies, RunResult, StartedRun, run_to_end_rows
from schedlab.engines.dfrs.columns import METRICS, UNITS
from schedlab.engines.dfrs.sim.system import DFRS
from schedlab.sim.system.jobs import DFRS_JOBS

if TYPE_CHECKING:
    import polars as pl


def run(
    jobs: pl.DataFrame,
    cls: type,
    params: Mapping[str, Any] | None = None,
    system: Mapping[str, Any] | None = None,
    recorder: Any = None,
) -> RunResult:
    """Run one DFRS policy over a rigid-job table: job_id, submit, runtime,
    procs[, cpu_need, memory] (Lublin, SWF traces; the annotation fields of
    those workload kinds add the last two, by default with the paper's own
    rules). System: nodes, penalty (s per pause or migration), cpu_need and
    memory (the per-task values used when the table has no such columns),
    bound (also compute the max-stretch lower bound and the degradation),
    oversize ("error" or "drop"). Policy params: period (/per). ``recorder``:
    the schedule recorder of ``simulate_dfrs``."""
    return run_to_end_rows(start(jobs, cls, params, system, recorder=recorder))


def start(
    jobs: pl.DataFrame,
    cls: type,
    params: Mapping[str, Any] | None = None,
    system: Mapping[str, Any] | None = None,
    *,
    recorder: Any = None,
    hidden: Any = None,
    check: bool = False,
    watch: Any = None,
) -> StartedRun:
    """The run of ``cls`` with ``params`` over a rigid-job table under
    ``system`` (the engine's defaults fill the rest), not yet stepped: the
    inputs and the run :func:`run` builds (``schedlab.engines.dfrs.sim.table``:
    ``table_inputs``, ``reference_run``). ``recorder``, ``hidden`` and
    ``check``: ``simulate_dfrs``'s; ``watch(policy, None)``: what the engine
    calls instead of the policy (a DFRS policy has no handle)."""
    import time

    from schedlab.engines.dfrs.sim.table import make_policy, reference_run, table_inputs, table_outcome

    t = table_inputs(jobs, **{**ENGINE.system_defaults, **(system or {})})
    policy = make_policy(cls, dict(params or {}))
    if watch is not None:
        policy = watch(policy, None)
    started = time.perf_counter()
    run = reference_run(t, policy, check=check, hidden=hidden, recorder=recorder)
    return StartedRun(run, lambda res, t0: RunResult(*table_outcome(t, res, t0)), started)


ENGINE = Engine(
    name="dfrs",
    summary=(
        "DFRS: VM time-sharing of parallel jobs with pausing/migration "
        "(Greedy*, GreedyP*, GreedyPM*, /per; OPT=MIN/AVG)"
    ),
    policies=LazyPolicies("schedlab.engines.dfrs.policies", "DFRS_POLICIES"),
    adapter=run,
    seam="schedlab.engines.dfrs.policies.base.DfrsPolicy",
    sources=(
        "engines/base.py",
        "engines/dfrs/__init__.py",
        "params.py",
        "errors.py",
        "sim/system",
        "engines/dfrs/sim",
        "sim/bound/stretch_bound.py",
        "sim/bound/underutilization.py",
        "engines/dfrs/policies",
    ),
    handle_args=0,
    workload_kinds=("trace", "lublin"),
    system=DFRS,
    jobs=DFRS_JOBS,
    metrics=METRICS,
    headline=("stretch_max", "degradation"),
    units=UNITS,
    checks="schedlab.engines.dfrs.checks:Check",
    recorder="schedlab.views.record:DfrsRecorder",
    start=start,
)
