"""What one Ray task does: build workload instances and run policies on them.

Runs in a worker process; pure apart from the simulation itself. A task never
raises for a failing simulation: the exception becomes a failure record (config,
replication, error text) so the sweep goes on, and Ray only retries *system*
failures (a dead worker or node), for which the driver's sink keeps exactly one
row per key. A simulation that runs past its wall-clock budget
(``[execution] sim_budget_seconds``, `budget`) is such a failure too, so a
runaway policy ends as a record and the other configurations of the task
keep their rows.
"""

from __future__ import annotations

import json
import time
import traceback
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from schedlab.engines.instance import Draws, run_instance
from schedlab.platform.execution.budget import DEFAULT_SIM_BUDGET_SECONDS, BudgetExceeded, sim_budget
from schedlab.platform.execution.instance import warmup_hook
from schedlab.platform.planning.plan import Config, Instance, MetricSpec, WorkloadPoint
from schedlab.sim.common import compiling

if TYPE_CHECKING:
    from schedlab.platform.execution.payload import PackedWork
    from schedlab.platform.storage.part import Part
    from schedlab.usercode import CodeRef


@dataclass
class TaskResult:
    summary: list[dict[str, Any]]
    jobs: list[tuple[str, pa.Table]]  # (policy, per-job rows)
    failures: list[dict[str, Any]]
    sim_seconds: float
    series: list[tuple[str, pa.Table]] = field(default_factory=list)  # (policy, time-series rows)
    #: With ``encode=True``: the rows above as Parquet parts, one per policy
    #: (`part.Part`), and ``summary``/``jobs``/``series`` left empty.
    parts: list[Part] = field(default_factory=list)
    #: Seconds per stage inside the task (`STAGES`), from cheap timers: what
    #: the sweep's breakdown (benchmarks/sweep_breakdown.py) and the task
    #: sizing (`sizing.TaskSizer`) read.
    stages: dict[str, float] = field(default_factory=dict)
    #: Job-runs simulated (jobs x configurations): the sizing's unit of work.
    job_runs: int = 0
    #: The Arrow type of each column only some rows carry (`point_columns`):
    #: a part whose rows all lack it still has it, typed, all null.
    column_types: dict[str, pa.DataType | None] = field(default_factory=dict)
    #: Simulations that ran on the reference loop because their kernel was being compiled
    #: beside this process (`schedlab.sim.common.compiling`): such a task's time is not the
    #: kernels' (the auto rule does not time it).
    reference_runs: int = 0

    def delivered(self) -> list[tuple[str, int]]:
        """(config id, replication) of every row this result carries."""
        return [(r["config_id"], r["replication"]) for r in self.summary] + [k for p in self.parts for k in p.keys]


#: Stages timed inside a task: workload build, first call of a policy's
#: engine in this worker (imports, kernel loading), the engines' own time
#: (``sim_seconds``), the rest of each engine call (adapters, summary
#: metrics), rows (row dicts, keyed tables, extra metrics), Parquet encoding
#: (``encode=True``), and the whole task.
STAGES = ("build", "warmup", "engine", "engine_other", "rows", "encode", "task")
#: (engine, policy, path) already run once in this worker process.
_WARM: set[tuple[str, str, str]] = set()


def _column_value(v: Any, integer: bool = False) -> Any:
    """Parameters as stable column types: a parameter declared integer ->
    int64 (``Config.integers``: njobs, weight_classes, system_procs, ...),
    other numbers -> float64, lists -> JSON text, others as they are (see
    docs/columns.md)."""
    kind = type(v)
    if kind is float or kind is int:  # the usual: no isinstance chain (every parameter of every row)
        return int(v) if integer and float(v).is_integer() else float(v)
    if kind is str:
        return v
    if isinstance(v, list):
        return json.dumps(v)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return v
    if integer and float(v).is_integer():
        return int(v)
    return float(v)


#: Columns only rows of user code carry (null in every other row of the sweep).
CODE_COLUMNS = ("code_sha256", "workload_code_sha256")


def point_columns(point: WorkloadPoint) -> dict[str, pa.DataType | None]:
    """The parameter and code columns of a workload point's summary rows, in
    row order, with their Arrow types: the union over the point's
    configurations (every policy of the sweep), so that a policy without a
    parameter another one has (``policy_k``), or a built-in beside a user
    policy (``code_sha256``), still has the column, null. Every Parquet part
    of a sweep then has the same columns and types, and any reader
    (``pl.read_parquet(DIR/"summary")``, DuckDB's ``read_parquet``) reads
    the directory as it is. A column no configuration gives a value has no
    type (None): it is null, untyped, in every part alike."""
    return _point_params(point)[0]


def _config_values(config: Config) -> dict[str, Any]:
    """A configuration's parameters as their row values (`_column_value`)."""
    return {k: _column_value(v, k in config.integers) for k, v in config.flat_params().items()}


def _point_params(point: WorkloadPoint) -> tuple[dict[str, pa.DataType | None], dict[str, dict[str, Any]]]:
    """`point_columns`, and each configuration's `_config_values` by config
    id: a task makes both once per point, the rows reuse the values."""
    types: dict[str, pa.DataType | None] = {}
    values: dict[str, dict[str, Any]] = {}
    for config in point.configs:
        values[config.config_id] = mine = _config_values(config)
        for k, v in mine.items():
            if types.get(k) is None:
                types[k] = _arrow_type(v)
    if any(c.code is not None for c in point.configs):
        types["code_sha256"] = pa.string()
    if point.code is not None:
        types["workload_code_sha256"] = pa.string()
    return types, values


def _arrow_type(value: Any) -> pa.DataType | None:
    """The Arrow type ``pa.Table.from_pydict`` gives a column of `_column_value`
    values (bool, int64, float64, string; None for None: not known from it)."""
    exact = _ARROW_TYPES.get(type(value))  # the usual: one look-up per value
    if exact is not None:
        return exact
    for kind, arrow in ((bool, pa.bool_()), (int, pa.int64()), (float, pa.float64()), (str, pa.string())):
        if isinstance(value, kind):
            return arrow
    return None if value is None else pa.array([value]).type


#: `_arrow_type` of a value of exactly these types.
_ARROW_TYPES: dict[type, pa.DataType] = {bool: pa.bool_(), int: pa.int64(), float: pa.float64(), str: pa.string()}


def _keyed_table(config: Config, replication: int, columns: dict[str, Any]) -> pa.Table:
    n = len(next(iter(columns.values())))
    return pa.table(
        {
            "config_id": pa.repeat(pa.scalar(config.config_id, pa.string()), n),
            "replication": pa.array(np.full(n, replication, dtype=np.int64)),
            **{k: pa.array(v) for k, v in columns.items()},
        }
    )


def _failure(config: Config, replication: int, error: str, trace: str = "") -> dict[str, Any]:
    return {
        "config_id": config.config_id,
        "replication": replication,
        "policy": config.policy,
        "error": error,
        "traceback": trace,
    }


def _describe(err: BaseException) -> tuple[str, str]:
    """(one line, traceback of the frames outside schedlab: the user's own;
    "" when none is, e.g. an engine refusing what a policy asked)."""
    from schedlab.usercode import user_frames_traceback

    line = "".join(traceback.format_exception_only(type(err), err)).strip().splitlines()[-1]
    return line, user_frames_traceback(err, fallback=False)


def run_instances(
    engine_name: str | CodeRef,
    work: list[tuple[Instance, list[Config]]] | PackedWork,
    shared: Any,
    per_job: bool,
    metrics: tuple[MetricSpec, ...] = (),
    engine_path: str = "fast",
    encode: bool = False,
    sim_budget_seconds: float | None = DEFAULT_SIM_BUDGET_SECONDS,
) -> TaskResult:
    """Run, for each workload instance, the configurations still to do
    (``engine_name``: a built-in's, or your engine's code; ``engine_path``:
    ``Engine.run``'s path, from ``[execution]``).
    ``encode``: return the rows as Parquet parts (`encode_result`), so
    the Parquet encoding runs here, on the worker, and the driver only writes
    bytes (what a sweep does; direct callers get rows). A sweep sends
    ``work`` packed (`payload`: indices into the plan's points, which the
    worker loads once). ``sim_budget_seconds``: each workload build and
    each simulation (with its extra metrics) runs under this wall-clock
    budget (`budget.sim_budget`; None: none)."""
    started = time.perf_counter()
    if not isinstance(work, list):
        from schedlab.platform.execution.payload import unpack

        work = unpack(work)
    clock = dict.fromkeys(STAGES, 0.0)
    from schedlab.engines import get_engine
    from schedlab.usercode import worker_load
    from schedlab.version import __version__

    engine = get_engine(engine_name)  # your own engine: its shipped code, checked against its digest
    engine_name = engine.name
    provenance = {"schedlab_version": __version__, "schedlab_digest": engine.digest()}
    if engine.code_sha256:  # your own engine: its code's digest, in every row (built-in rows unchanged)
        provenance["engine_code_sha256"] = engine.code_sha256
    classes: dict[str, Any] = {}
    metric_fns = [(m, m.function()) for m in metrics]
    out = TaskResult([], [], [], 0.0)
    known: dict[str, tuple[dict[str, pa.DataType | None], dict[str, dict[str, Any]]]] = {}  # `_point_params`
    t0 = time.perf_counter()
    draws = Draws([instance for instance, _ in work], engine.job_arrays)
    clock["build"] += time.perf_counter() - t0
    for at, (instance, configs) in enumerate(work):
        point = instance.point
        try:
            t0 = time.perf_counter()
            with sim_budget(sim_budget_seconds):
                jobs = draws.build(at, engine_name, instance, shared, engine.job_arrays)
                steady = warmup_hook(engine_name, instance, jobs, shared)
            clock["build"] += time.perf_counter() - t0
        except (Exception, BudgetExceeded) as err:  # noqa: BLE001 - becomes a failure record, see module docstring
            line, trace = _describe(err)
            text = f"building the workload failed: {line}"
            out.failures += [_failure(c, instance.replication, text, trace) for c in configs]
            continue
        if point.point_id not in known:  # a task's instances share few points (one per replication each)
            known[point.point_id] = _point_params(point)
        columns, point_values = known[point.point_id]
        out.column_types.update({k: t for k, t in columns.items() if t is not None})
        for config in configs:
            try:
                policy = config.policy
                if config.code is not None:
                    key = f"{config.code.sha256}:{config.code.attr}"
                    if key not in classes:
                        classes[key] = worker_load(config.code)
                    policy = classes[key]
                t0 = time.perf_counter()
                gated = compiling.reference_runs()
                with sim_budget(sim_budget_seconds):
                    run = run_instance(
                        engine,
                        jobs,
                        policy,
                        config.policy_params,
                        config.system,
                        path=engine_path,
                        metrics=metric_fns,
                        after=steady,
                    )
                result, extra = run.result, run.extra
                t1 = t0 + run.engine_wall
                sim = result.summary.get("sim_seconds", 0.0)
                first = (engine_name, config.policy, engine_path)
                clock["engine"] += sim
                clock["warmup" if first not in _WARM else "engine_other"] += max(t1 - t0 - sim, 0.0)
                gated = compiling.reference_runs() - gated
                out.reference_runs += gated
                if not gated:  # a reference run in its kernel's stead leaves the kernel's loading to come
                    _WARM.add(first)
            except (Exception, BudgetExceeded) as err:  # noqa: BLE001
                line, trace = _describe(err)
                out.failures.append(_failure(config, instance.replication, line, trace))
                continue
            out.sim_seconds += sim
            out.job_runs += jobs.height if hasattr(jobs, "height") else len(jobs)
            params = point_values.get(config.config_id)
            if params is None:  # not one of the point's own configurations (e.g. an adaptive round's copy)
                params = _config_values(config)
            row = {
                "config_id": config.config_id,
                "replication": instance.replication,
                "policy": config.policy,
                "engine": engine_name,
                "workload_kind": point.kind,
                "seed": instance.seed_label,
                **{k: params[k] if k in params else None for k in columns},
                **{k: float(v) for k, v in result.summary.items()},
                **extra,
                **provenance,
            }
            for k in CODE_COLUMNS:
                row.pop(k, None)  # after the provenance, as they always were
            if "code_sha256" in columns:
                row["code_sha256"] = config.code.sha256 if config.code is not None else None
            if "workload_code_sha256" in columns:
                row["workload_code_sha256"] = point.code.sha256 if point.code is not None else None
            out.summary.append(row)
            if per_job:
                out.jobs.append((config.policy, _keyed_table(config, instance.replication, result.jobs)))
            if result.series:
                out.series.append((config.policy, _keyed_table(config, instance.replication, result.series)))
            clock["rows"] += time.perf_counter() - t1
    if encode:
        t0 = time.perf_counter()
        encode_result(out)
        clock["encode"] = time.perf_counter() - t0
    clock["task"] = time.perf_counter() - started
    out.stages = clock
    return out


def _typed(table: pa.Table, types: dict[str, pa.DataType | None]) -> pa.Table:
    """``table`` with each all-null column of ``types`` cast to its type (`point_columns`)."""
    for i, f in enumerate(table.schema):
        if pa.types.is_null(f.type) and types.get(f.name) is not None:
            table = table.set_column(i, f.name, table.column(i).cast(types[f.name]))
    return table


def encode_result(result: TaskResult) -> None:
    """Turn a `tasks.TaskResult`'s rows into one `Part` per policy (in place:
    its summary, jobs and series lists are emptied)."""
    from schedlab.platform.storage.part import Part, encode
    from schedlab.platform.storage.store import JOBS, SERIES, SUMMARY, rows_table

    by_policy: dict[str, list[dict[str, Any]]] = {}
    for row in result.summary:
        row = dict(row)
        by_policy.setdefault(row.pop("policy"), []).append(row)
    extra: dict[tuple[str, str], list[pa.Table]] = {}
    for name, pairs in ((JOBS, result.jobs), (SERIES, result.series)):
        for policy, table in pairs:
            extra.setdefault((name, policy), []).append(table)
    for policy, rows in by_policy.items():
        keys = [(r["config_id"], r["replication"]) for r in rows]
        summary = _typed(rows_table(rows), result.column_types)
        if not any(extra.get((name, policy)) for name in (JOBS, SERIES)):
            result.parts.append(Part(policy, keys, {}, 0, summary))
            continue
        files = {SUMMARY: encode(summary)}
        job_rows = 0
        for name in (JOBS, SERIES):
            tables = extra.get((name, policy))
            if tables:
                table = pa.concat_tables(tables)
                job_rows += table.num_rows
                files[name] = encode(table)
        result.parts.append(Part(policy, keys, files, job_rows))
    result.summary, result.jobs, result.series = [], [], []
