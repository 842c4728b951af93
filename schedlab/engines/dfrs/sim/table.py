"""The DFRS engine's table adapter (:func:`run_table`): a job table in,
the per-job columns and the summary out -- the [system] arguments checked
against the engine's declaration, the oversize rule (:func:`tasks_per_node`,
which plan time checks too), the run, the metrics and the optional
max-stretch lower bound. Split from the event loop, which works on arrays
and knows nothing of tables or metrics."""

from __future__ import annotations

import inspect
import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from schedlab.engines.dfrs.sim.events import DfrsRun
from schedlab.engines.dfrs.sim.state import DEFAULT_PENALTY, tasks_per_node
from schedlab.engines.dfrs.sim.system import DFRS as DFRS_SYSTEM
from schedlab.errors import UserError
from schedlab.sim.bound.underutilization import normalized_underutilization
from schedlab.sim.common.stepping import run_to_end
from schedlab.sim.system.jobs import DFRS_JOBS


def _num_column(jobs, name: str, default: float | None) -> np.ndarray:
    if name in jobs.columns:
        column: np.ndarray = jobs[name].to_numpy().astype(float)
        return column
    if default is None:  # the [system] declaration's rule requires one of the two; a direct call may omit both
        raise UserError(f"dfrs engine: the job table has no {name!r} column and no {name} value was given")
    return np.full(jobs.height, float(default))


def run_table(
    jobs,
    policy_cls,
    *,
    nodes: int,
    check: bool = False,
    recorder=None,
    **kwargs: Any,
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Run ``policy_cls`` over a job table: job_id, submit, runtime, procs and
    optional per-job ``cpu_need`` / ``memory`` columns (the annotation; when
    absent every task gets ``cpu_need`` / ``memory``). ``nodes``: cluster
    size; ``penalty``: seconds per pause/migration; ``check``: verify the
    invariants at every event; ``recorder``: the view's schedule recorder.
    ``kwargs``: the [system] settings :func:`table_inputs` takes (its keyword
    arguments, their defaults there), the rest the policy's parameters.
    The settings: ``bound``: also compute the LP max-stretch lower bound and
    the degradation; ``oversize``: "error" or "drop" for jobs that
    do not fit on the empty cluster (procs > nodes x floor(1/memory));
    ``star_pass``: when the Greedy '*' pass runs (module docstring);
    ``victims``: GreedyP / GreedyPM's victim rule (``schedlab.engines.dfrs.policies.greedy``);
    ``stretch_realloc``: when a policy's own allocation runs (``simulate_dfrs``); ``mcb8_rules`` /
    ``relabel``: the MCB8 remap's rules and node numbering (``schedlab.engines.dfrs.policies.greedy.mcb8_remap``);
    ``cpu_units``: "percent" floors the yields to whole percents (``allocation.percent_yields``);
    ``penalties``: "instant-net" charges penalties by an instant's net change (``DfrsState.settle_instant``);
    ``period_origin``: the periodic grid from the first release or from time 0; ``time_units``: "seconds"
    rounds completions up to whole seconds (``simulate_dfrs``); ``priority_units``: "ms" ranks jobs in whole
    milliseconds (``DfrsState._vcsim_value``); ``arrival_at_period``: "remap" leaves an arrival at a periodic
    instant to that instant's remap; ``victims_settle``: "instant-end" settles GreedyP / GreedyPM's victims at
    the end of the instant (``schedlab.engines.dfrs.policies.greedy.hold_victims``); ``mcb8_remaps``: "instant-end" runs
    MCB8* / MCB8/per's remap once at the end of the instant (``MCB8Star.end_instant``); ``minvt_units``: "ms"
    makes MINVT's test in whole milliseconds (``DfrsState.below_minvt``). The
    system parameters are checked against the engine's declaration
    (``schedlab.engines.dfrs.sim.system.DFRS``), the same one a sweep's plan checks."""
    settings = {k: kwargs.pop(k) for k in list(kwargs) if k in TABLE_SETTINGS}
    t = table_inputs(jobs, nodes=nodes, **settings)
    params = kwargs
    policy = make_policy(policy_cls, params)
    started = time.perf_counter()
    res = run_to_end(reference_run(t, policy, check=check, recorder=recorder))
    return table_outcome(t, res, started)


def make_policy(policy_cls: Any, params: dict[str, Any]) -> Any:
    """``policy_cls(**params)``, a parameter it does not take a `UserError`
    naming the policy: how :func:`run_table` and the engine's ``start`` build
    a DFRS policy (it has no handle; its parameters are all it takes)."""
    try:
        return policy_cls(**params)
    except TypeError as exc:
        raise UserError(f"dfrs engine: policy {getattr(policy_cls, 'name', policy_cls.__name__)!r}: {exc}") from None


@dataclass
class TableInputs:
    """A job table and ``[system]`` as the engine runs them (:func:`table_inputs`):
    the job arrays after the oversize rule and the settings."""

    job_id: np.ndarray
    submit: np.ndarray
    runtime: np.ndarray
    procs: np.ndarray
    cpu: np.ndarray
    mem: np.ndarray
    nodes: int
    penalty: float
    bound: bool
    dropped: int
    #: The loop's rule settings (``simulate_dfrs``'s keyword arguments from star_pass on).
    settings: dict[str, Any]


def table_inputs(
    jobs,
    *,
    nodes: int,
    penalty: float = DEFAULT_PENALTY,
    cpu_need: float = 1.0,
    memory: float = 0.1,
    bound: bool = False,
    oversize: str = "error",
    star_pass: str = "completion",
    victims: str = "prefix",
    stretch_realloc: str = "mapping-change",
    mcb8_rules: str = "schedlab",
    relabel: str = "memory",
    cpu_units: str = "real",
    penalties: str = "each-change",
    period_origin: str = "first-release",
    time_units: str = "real",
    priority_units: str = "real",
    arrival_at_period: str = "placed",
    victims_settle: str = "arrival",
    mcb8_remaps: str = "each-event",
    minvt_units: str = "real",
) -> TableInputs:
    """Read and check a job table and the ``[system]`` arguments of
    :func:`run_table` (against the engine's declaration) and apply the
    oversize rule: the instance :func:`reference_run` builds its run from."""
    DFRS_SYSTEM.check_call(
        {
            "nodes": nodes,
            "penalty": penalty,
            "cpu_need": cpu_need,
            "memory": memory,
            "bound": bound,
            "oversize": oversize,
            "star_pass": star_pass,
            "victims": victims,
            "stretch_realloc": stretch_realloc,
            "mcb8_rules": mcb8_rules,
            "relabel": relabel,
            "cpu_units": cpu_units,
            "penalties": penalties,
            "period_origin": period_origin,
            "time_units": time_units,
            "priority_units": priority_units,
            "arrival_at_period": arrival_at_period,
            "victims_settle": victims_settle,
            "mcb8_remaps": mcb8_remaps,
            "minvt_units": minvt_units,
        },
        "dfrs engine",
        jobs.columns,
    )
    for col in DFRS_JOBS.required:
        if col not in jobs.columns:
            raise UserError(f"dfrs engine: the job table needs a {col!r} column")
    job_id = jobs["job_id"].to_numpy()
    submit = jobs["submit"].to_numpy().astype(float)
    runtime = jobs["runtime"].to_numpy().astype(float)
    procs = jobs["procs"].to_numpy().astype(np.int64)
    cpu = _num_column(jobs, "cpu_need", cpu_need)
    mem = _num_column(jobs, "memory", memory)
    checks = (
        ("submit", ~np.isfinite(submit), "is not finite"),
        ("runtime", ~(runtime >= 0) | ~np.isfinite(runtime), "must be finite and >= 0"),
        ("procs", procs < 1, "must be >= 1"),
        ("cpu_need", ~((cpu > 0) & (cpu <= 1)), "must be in (0, 1]"),
        ("memory", ~((mem > 0) & (mem <= 1)), "must be in (0, 1]"),
    )
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
            raise UserError(
                f"dfrs engine: job {job_id[k]} has {procs[k]} tasks of memory {mem[k]} but the cluster "
                f"holds at most {int(nodes) * per_node[k]} (use oversize='drop' to drop and count such jobs)"
            )
        keep = ~big
        job_id, submit, runtime, procs, cpu, mem = (a[keep] for a in (job_id, submit, runtime, procs, cpu, mem))
    settings = {
        "star_pass": star_pass,
        "victims": victims,
        "stretch_realloc": stretch_realloc,
        "mcb8_rules": mcb8_rules,
        "relabel": relabel,
        "cpu_units": cpu_units,
        "penalties": penalties,
        "period_origin": period_origin,
        "time_units": time_units,
        "priority_units": priority_units,
        "arrival_at_period": arrival_at_period,
        "victims_settle": victims_settle,
        "mcb8_remaps": mcb8_remaps,
        "minvt_units": minvt_units,
    }
    return TableInputs(
        job_id, submit, runtime, procs, cpu, mem, int(nodes), float(penalty), bool(bound), dropped, settings
    )


#: The [system] settings :func:`run_table` hands to :func:`table_inputs` (its
#: keyword arguments, read once): a ``run_table`` keyword outside them is a
#: policy parameter. One list of the settings and their defaults, not two.
TABLE_SETTINGS = frozenset(inspect.signature(table_inputs).parameters) - {"jobs", "nodes"}


def reference_run(t: TableInputs, policy, *, check: bool = False, hidden=None, recorder=None) -> DfrsRun:
    """The engine's run of ``policy`` (an instance) over ``t``, not yet
    stepped (:func:`run_table`'s; ``schedlab.engines.dfrs.start``). ``check`` and
    ``hidden``: :func:`simulate_dfrs`'s check mode and hidden-truth guard."""
    return DfrsRun(
        t.submit,
        t.runtime,
        t.procs,
        t.cpu,
        t.mem,
        t.nodes,
        policy,
        penalty=t.penalty,
        check=check,
        hidden=hidden,
        recorder=recorder,
        **t.settings,
    )


def table_outcome(t: TableInputs, res, started: float) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """:func:`run_table`'s return value for a run's result ``res`` (``started``:
    when the run began, by ``time.perf_counter``: ``sim_seconds`` counts the metrics too, as it always has)."""
    job_id, submit, runtime, procs, cpu, mem = t.job_id, t.submit, t.runtime, t.procs, t.cpu, t.mem
    nodes, penalty, bound, dropped = t.nodes, t.penalty, t.bound, t.dropped
    # the bound's module imports scipy: loaded by a run, not by the registry that declares the engine
    from schedlab.sim.bound.stretch_bound import bounded_stretch, max_stretch_lower_bound

    st = res.state
    n = len(submit)
    stretch = bounded_stretch(submit, runtime, st.end)
    summary: dict[str, Any] = {"n_jobs": float(n)}
    if n:
        total_work = float(np.sum(cpu * procs * runtime))
        underutil = (
            normalized_underutilization(float(nodes), profile=res.profile, total_work=total_work)
            if total_work > 0
            else math.nan
        )
        summary.update(
            stretch_mean=float(stretch.mean()),
            stretch_max=float(stretch.max()),
            makespan=float(st.end.max() - submit.min()),
            underutilization=underutil,
        )
    else:
        summary.update(stretch_mean=math.nan, stretch_max=math.nan, makespan=math.nan, underutilization=math.nan)
    summary.update(
        pauses=float(st.pauses.sum()),
        migrations=float(st.migrations.sum()),
        migrated_tasks=float(st.migrated_tasks.sum()),
        mem_moved=float(st.mem_moved.sum()),
    )
    wall = time.perf_counter() - started
    if bound and n:
        b0 = time.perf_counter()
        lb = max_stretch_lower_bound(submit, runtime, procs, cpu, float(nodes))
        summary.update(
            stretch_lower_bound=lb, degradation=summary["stretch_max"] / lb, bound_seconds=time.perf_counter() - b0
        )
    summary.update(
        events=float(res.events),
        lp_failures=float(res.lp_failures),
        sim_seconds=wall,
        nodes=float(nodes),
        penalty=float(penalty),
        dropped_oversize=float(dropped),
    )
    per_job = {
        "job_id": job_id,
        "submit": submit,
        "start": st.start,
        "end": st.end,
        "procs": procs,
        "runtime": runtime,
        "cpu_need": cpu,
        "memory": mem,
        "stretch": stretch,
        "pauses": st.pauses,
        "migrations": st.migrations,
        "migrated_tasks": st.migrated_tasks,
        "mem_moved": st.mem_moved,
    }
    return per_job, summary
