"""The result columns of a sweep, declared once, and docs/columns.md made from them.

``python -m schedlab.docs_columns > docs/columns.md`` writes the table; a test
(tests/test_columns_doc.py) checks that the file equals this output and that
every engine's summary row has exactly the metric columns declared here, so
the document cannot drift from the code. Parameter columns take their dtype
from the declarations the result rows are built from
(``WorkloadKind.integers``, the ``[system]`` schema's integer parameters and
a policy constructor's ``int`` annotations: Int64; other numbers: Float64;
lists: JSON text; see ``schedlab.platform.execution.tasks._column_value``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Column:
    name: str  # "<c>" / "<r>" stand for a weight class / resource name
    dtype: str
    unit: str
    meaning: str


#: Columns of every summary row, whatever the engine.
KEYS = (
    Column(
        "config_id",
        "String",
        "-",
        "configuration id: hash of engine, policy (+ params), workload point and [system] point",
    ),
    Column("replication", "Int64", "-", "replication index r (0, 1, ...) of the workload point"),
    Column("policy", "String", "-", "policy name"),
    Column("engine", "String", "-", "engine name"),
    Column("workload_kind", "String", "-", "workload kind (or your generator's label)"),
    Column(
        "seed",
        "String",
        "-",
        'the instance\'s seed words "<sweep seed>/<point id>/<replication>": the point id is '
        "the 16-hex-digit workload point hash (SeedSequence word int(point id, 16)), so it is text by design",
    ),
    Column("schedlab_version", "String", "-", "schedlab version that computed the row"),
    Column("schedlab_digest", "String", "-", "digest of the engine's and its policies' source"),
    Column("code_sha256", "String", "-", "your policy's source digest (only with a user policy)"),
    Column("workload_code_sha256", "String", "-", "your generator's / reader's digest (only with user code)"),
)

#: Summary metrics per engine (``Engine.run(...).summary``; every value is Float64).
METRICS: dict[str, tuple[Column, ...]] = {
    "queue": (
        Column("n_jobs", "Float64", "jobs", "jobs simulated"),
        Column("mst", "Float64", "time units of the workload (s for traces)", "mean sojourn time"),
        Column("slowdown_mean", "Float64", "ratio", "mean slowdown, sojourn / size"),
        Column("slowdown_p50", "Float64", "ratio", "median slowdown"),
        Column("slowdown_p99", "Float64", "ratio", "99th percentile of slowdown"),
        Column("slowdown_max", "Float64", "ratio", "largest slowdown"),
        Column(
            "mst_class_<c>",
            "Float64",
            "time units",
            "mean sojourn time of weight class c (only with a weight_class column)",
        ),
        Column("makespan", "Float64", "time units", "last completion time"),
        Column("events", "Float64", "events", "events the simulation processed"),
        Column("sim_seconds", "Float64", "s (wall)", "wall-clock time of the simulation"),
    ),
    "packing": (
        Column("queue_jobs_mean", "Float64", "jobs", "time-average number of queued jobs"),
        Column("running_jobs_mean", "Float64", "jobs", "time-average number of running jobs"),
        Column("wait_mean", "Float64", "slots / s", "mean wait, start - submit"),
        Column("wait_p99", "Float64", "slots / s", "99th percentile of wait"),
        Column(
            "jct_mean", "Float64", "slots / s", "mean job completion time of multi-task jobs (only with group_column)"
        ),
        Column("jct_p99", "Float64", "slots / s", "99th percentile of job completion time (only with group_column)"),
        Column("throughput", "Float64", "jobs per time unit", "completed jobs / horizon"),
        Column("makespan", "Float64", "slots / s", "last completion time"),
        Column("completed", "Float64", "jobs", "jobs completed"),
        Column("started", "Float64", "jobs", "jobs started"),
        Column("epochs", "Float64", "decisions", "decision epochs"),
        Column("queue_resource_mean", "Float64", "capacity units", "time-average queued demand (one resource)"),
        Column(
            "queue_resource_mean_<r>",
            "Float64",
            "capacity units",
            "time-average queued demand of resource r (cpu, mem)",
        ),
        Column("utilisation", "Float64", "fraction", "used / total capacity over the horizon (one resource)"),
        Column("utilisation_<r>", "Float64", "fraction", "utilisation of resource r (cpu, mem)"),
        Column("sim_seconds", "Float64", "s (wall)", "wall-clock time of the simulation"),
    ),
    "batch": (
        Column("n_jobs", "Float64", "jobs", 'jobs simulated (after oversize = "drop")'),
        Column("stretch_mean", "Float64", "ratio", "mean bounded stretch"),
        Column("stretch_max", "Float64", "ratio", "largest bounded stretch"),
        Column("wait_mean", "Float64", "s", "mean wait, start - submit"),
        Column("wait_max", "Float64", "s", "largest wait"),
        Column("utilisation", "Float64", "fraction", "held units x run time / (capacity x horizon)"),
        Column("makespan", "Float64", "s", "last end time"),
        Column("underutilization", "Float64", "fraction", "normalised underutilization (the DFRS paper's)"),
        Column("events", "Float64", "events", "events the simulation processed"),
        Column("sim_seconds", "Float64", "s (wall)", "wall-clock time of the simulation"),
        Column("model_nodes", "Float64", "0 / 1", '1 for model "nodes", 0 for "procs"'),
        Column("capacity", "Float64", "processors or nodes", "machine size the run used"),
        Column("tasks_per_node", "Float64", "tasks", "tasks per node the run used"),
        Column("dropped_oversize", "Float64", "jobs", "jobs dropped as wider than the machine"),
        Column("stretch_lower_bound", "Float64", "ratio", "LP lower bound on the optimal max stretch (bound = true)"),
        Column("degradation", "Float64", "ratio", "stretch_max / stretch_lower_bound (bound = true)"),
        Column("bound_seconds", "Float64", "s (wall)", "time spent on the bound (bound = true)"),
    ),
    "dfrs": (
        Column("n_jobs", "Float64", "jobs", 'jobs simulated (after oversize = "drop")'),
        Column("stretch_mean", "Float64", "ratio", "mean bounded stretch"),
        Column("stretch_max", "Float64", "ratio", "largest bounded stretch"),
        Column("makespan", "Float64", "s", "last end time"),
        Column("underutilization", "Float64", "fraction", "normalised underutilization"),
        Column("pauses", "Float64", "events", "task pauses"),
        Column("migrations", "Float64", "events", "job migrations"),
        Column("migrated_tasks", "Float64", "tasks", "tasks moved by migrations"),
        Column("mem_moved", "Float64", "node memories", "memory moved by migrations"),
        Column("stretch_lower_bound", "Float64", "ratio", "LP lower bound on the optimal max stretch (bound = true)"),
        Column("degradation", "Float64", "ratio", "stretch_max / stretch_lower_bound (bound = true)"),
        Column("bound_seconds", "Float64", "s (wall)", "time spent on the bound (bound = true)"),
        Column("events", "Float64", "events", "events the simulation processed"),
        Column("lp_failures", "Float64", "count", "allocation LPs that failed"),
        Column("sim_seconds", "Float64", "s (wall)", "wall-clock time of the simulation"),
        Column("nodes", "Float64", "nodes", "cluster size the run used"),
        Column("penalty", "Float64", "s", "pause / migration penalty the run used"),
        Column("dropped_oversize", "Float64", "jobs", "jobs dropped as not fitting the empty cluster"),
    ),
}

#: How a metric's unit is spelled when it is "the engine's unit of time" (docs/columns.md
#: keeps the general spelling; a figure of one sweep says which one it is: `figure_unit`).
TIME_UNITS = ("time units of the workload (s for traces)", "time units", "slots / s")


@dataclass(frozen=True)
class EngineUnits:
    """What an engine's figures and schedule views call its time and its load, declared
    with its columns: a figure labels an axis in these, never in another engine's units."""

    time: str  # the unit of time under a generated workload
    trace_time: str  # the unit of time under a trace (the trace's own clock)
    load: str  # what an offered load (``load``, ``arrival_load``) is a fraction of
    color_by: str  # the job column a schedule view colours by unless told (``--color-by``)
    color_meaning: str  # what that colour says, for the view's legend title


UNITS: dict[str, EngineUnits] = {
    "queue": EngineUnits("time units of the workload", "s", "fraction of the server", "size", "job size"),
    "packing": EngineUnits("slots", "slots", "fraction of the servers' capacity", "demand", "job demand"),
    "batch": EngineUnits("s", "s", "fraction of the machine", "procs", "job width (processors)"),
    "dfrs": EngineUnits("s", "s", "fraction of the machine", "procs", "job width (processors)"),
}


def time_unit(engine: str | None, workload_kind: str | None = None) -> str:
    """The unit of time of a run of ``engine`` on ``workload_kind`` (s for traces
    where the engine runs on the trace's clock; slots for packing)."""
    units = UNITS.get(engine or "")
    if units is None:
        return TIME_UNITS[0]
    return units.trace_time if workload_kind == "trace" else units.time


def figure_unit(column: Column, engine: str | None, workload_kind: str | None = None) -> str:
    """``column``'s unit in a figure of one sweep: the engine's time unit for a time, the
    engine's load for an offered load, the declared unit otherwise."""
    if engine not in UNITS:
        return column.unit
    if column.unit in TIME_UNITS:
        return time_unit(engine, workload_kind)
    if column.unit == "jobs per time unit":
        unit = time_unit(engine, workload_kind)
        return f"jobs per {'slot' if unit == 'slots' else unit}"
    if column.unit.startswith("fraction of") and column.name in ("load", "arrival_load"):
        return UNITS[engine].load
    return column.unit


#: Workload parameter columns per kind: (unit, meaning); dtype from the kind's declaration.
WORKLOAD: dict[str, dict[str, tuple[str, str]]] = {
    "synthetic": {
        "njobs": ("jobs", "jobs per instance"),
        "shape": ("-", "Weibull shape of job sizes (mean 1)"),
        "timeshape": ("-", "Weibull shape of inter-arrival gaps"),
        "load": ("fraction of one server", "offered load (> 1: overloaded)"),
        "sigma": ("-", "log-normal estimate error: estimate = size x LogNormal(0, sigma^2)"),
        "size_dist": ("-", '"weibull" or "pareto"'),
        "alpha": ("-", "Pareto shape (size_dist pareto)"),
        "beta": ("-", "weight exponent of the weight classes"),
        "weight_classes": ("classes", "number of weight classes"),
        "load_mode": ("-", '"realized" (exact load) or "nominal"'),
    },
    "file": {"path": ("-", "job table file (relative to the current directory)")},
    "trace": {
        "reader": ("-", "trace reader (swf, swim, squid, bu98, google, or yours)"),
        "path": ("-", "trace file or folder (relative to the current directory)"),
        "on_bad_line": ("-", '"error" or "skip"'),
        "window_length": ("s", "window length (0: the whole trace)"),
        "window": ("-", "window index"),
        "window_origin": ("-", 'windows from "first" submission or the "header" time origin (SWF UnixStartTime)'),
        "traffic": ("factor", "arrival times multiplied by this"),
        "load": ("fraction of one server", "work rescaled to this offered load (0: as is)"),
        "sigma": ("-", "log-normal estimate error"),
        "arrival_load": ("fraction of one server", "order-only traces: Poisson arrivals at this load"),
        "group_column": ("-", 'trace column that groups tasks into jobs ("": none)'),
        "max_procs": ("processors", "jobs wider than this dropped (0: keep all)"),
        "sequence": ("jobs", "consecutive jobs per instance from a start drawn per replication (0: off)"),
        "sequence_within": ("jobs", "sequences drawn among the first this-many jobs (0: all)"),
        "reader_<option>": ("-", "a reader option, as given"),
    },
    "lublin": {
        "njobs": ("jobs", "jobs per instance"),
        "nodes": ("processors", "machine the model draws jobs for (widths 1..nodes)"),
        "load": ("fraction of the machine", "arrivals rescaled to this offered load on nodes (0: the model's own)"),
        "same_trace": ("-", "every load rescales the same drawn trace (the DFRS paper's scaled set)"),
    },
    "packing": {
        "slots": ("slots", "horizon in time slots"),
        "rate": ("jobs per slot", "Poisson arrival rate"),
        "intensity": ("-", "traffic intensity alpha (sets rate with intensity_servers)"),
        "intensity_servers": ("servers", "L in rate = alpha x L x mu / mean size"),
        "sizes": ("capacity units", "discrete demands (JSON list)"),
        "probs": ("-", "their probabilities (JSON list)"),
        "uniform_lo": ("capacity units", "uniform demands: lower end"),
        "uniform_hi": ("capacity units", "uniform demands: upper end"),
        "service": ("-", '"geometric" or "fixed"'),
        "mean_service": ("slots", "mean service time"),
    },
}
#: The DFRS annotation (``schedlab.workloads.annotate``), on the trace and lublin kinds.
ANNOTATION = {
    "annotation": ("-", '"schedlab" (the fields below), "dfrs-hpc2n" or "dfrs-synthetic" (RR-7659 §5.3)'),
    "cores_per_node": ("cores", "processors packed per node into tasks (0: a task per processor)"),
    "cpu_need": ("fraction of a core", "every task's CPU need (0: no column)"),
    "memory": ("fraction of a node", 'a number, "uniform" or "trace" (0: no column)'),
    "node_memory_kb": ("KB", 'node memory for memory = "trace" (0: from the trace)'),
    "memory_lo": ("fraction of a node", "lower end of memory"),
    "memory_hi": ("fraction of a node", "upper end of memory"),
}
for _kind in ("trace", "lublin"):
    WORKLOAD[_kind].update(ANNOTATION)


def _dtype(kind, name: str) -> str:
    """The result column's dtype, from the kind's declarations (``integers``,
    ``strings``) and its default's type; tests/test_columns_doc.py checks it
    against the Parquet schema of real runs."""
    if name in kind.integers:
        return "Int64"
    if name in kind.strings:
        return "String"
    default = kind.defaults.get(name)
    if isinstance(default, bool):
        return "Boolean"
    if isinstance(default, str):
        return "String (Float64 where a number is given)" if name == "memory" else "String"
    if isinstance(default, list):
        return "String (JSON)"
    return "Float64"


def workload_columns(kind_name: str) -> list[Column]:
    from schedlab.workloads.registry import workload_kind

    kind = workload_kind(kind_name)
    out = []
    for name, (unit, meaning) in WORKLOAD[kind_name].items():
        dtype = "String" if name.startswith("reader_") else _dtype(kind, name)
        out.append(Column(name, dtype, unit, meaning))
    return out


def system_columns(engine: str) -> list[Column]:
    from schedlab.sim.system import SYSTEMS

    out = []
    for p in SYSTEMS[engine].params:
        dtype = (
            "Int64"
            if p.integer
            else ("Boolean" if isinstance(p.default, bool) else "String" if isinstance(p.default, str) else "Float64")
        )
        if p.name == "capacity":
            dtype = "Float64 (String JSON for a list)"
        out.append(Column(f"system_{p.name}", dtype, "-", p.doc + (f" (0: {p.zero})" if p.zero else "")))
    return out


def _table(rows) -> list[str]:
    lines = ["| column | dtype | unit | meaning |", "|---|---|---|---|"]
    lines += [f"| `{c.name}` | {c.dtype} | {c.unit} | {c.meaning} |" for c in rows]
    return lines + [""]


def render() -> str:
    from schedlab.engines import ENGINES

    out = [
        "# Result columns",
        "",
        "Generated by `python -m schedlab.docs_columns > docs/columns.md` from the declarations in",
        "`schedlab/docs_columns.py`, the workload kinds (`schedlab/workloads/registry.py`) and the",
        "`[system]` schemas (`schedlab/sim/system/`); tests/test_columns_doc.py fails when this file",
        "and the code disagree. A summary row (`schedlab.load(dir)`) has the key columns, the",
        "parameter columns of its configuration and the engine's metrics. Parameters declared",
        "integer are Int64, other numbers Float64 (a value the spec wrote as `1` in a Float64",
        "parameter is 1.0), lists JSON text. Policy parameters are `policy_<name>` columns typed",
        "by the constructor's annotation (`int`: Int64). Your `[[metrics]]` add Float64 columns.",
        "",
        "## Every row",
        "",
    ] + _table(KEYS)
    for name, engine in ENGINES.items():
        out += [f"## Engine `{name}`", "", f"{engine.summary}.", "", "Metrics:", ""] + _table(METRICS[name])
        system = system_columns(name)
        if system:
            out += ["System parameters:", ""] + _table(system)
        for kind in engine.workload_kinds:
            out += [f"Workload kind `{kind}`:", ""] + _table(workload_columns(kind))
    return "\n".join(out).rstrip() + "\n"


if __name__ == "__main__":
    import sys

    sys.stdout.write(render())
