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

from collections.abc import Iterator, Mapping
from typing import Any

from schedlab.engines.declare import Column, EngineUnits


class ByEngine(Mapping[str, Any]):
    """One declaration of every engine (``Engine.<what>``), by engine name: the
    built-in engines and the users' engines loaded in this process (an engine
    that declares none is left out). Read from the registry when asked, so
    importing this module stays light."""

    def __init__(self, what: str) -> None:
        self.what = what

    def _table(self) -> dict[str, Any]:
        from schedlab.engines import known_engines

        return {n: getattr(e, self.what) for n, e in known_engines().items() if getattr(e, self.what)}

    def __getitem__(self, name: str) -> Any:
        return self._table()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._table())

    def __len__(self) -> int:
        return len(self._table())


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
    Column("engine_code_sha256", "String", "-", 'your engine\'s source digest (only with engine = "file.py:Name")'),
)

#: Summary metrics per engine (``Engine.metrics``; every value is Float64), by name.
METRICS: Mapping[str, tuple[Column, ...]] = ByEngine("metrics")

#: How a metric's unit is spelled when it is "the engine's unit of time" (docs/columns.md
#: keeps the general spelling; a figure of one sweep says which one it is: `figure_unit`).
TIME_UNITS = ("time units of the workload (s for traces)", "time units", "slots / s")


#: Each engine's units (``Engine.units``), by name: built-in and loaded user engines.
UNITS: Mapping[str, EngineUnits] = ByEngine("units")


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
    if engine is None or engine not in UNITS:
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
        "sequence_start": ("job index", "the sequence's first job, in submit order (-1: drawn)"),
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
    from schedlab.engines import get_engine

    out = []
    for p in get_engine(engine).system.params:
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
        out += [f"## Engine `{name}`", "", f"{engine.summary}.", "", "Metrics:", ""] + _table(engine.metrics)
        system = system_columns(name)
        if system:
            out += ["System parameters:", ""] + _table(system)
        for kind in engine.workload_kinds:
            out += [f"Workload kind `{kind}`:", ""] + _table(workload_columns(kind))
    return "\n".join(out).rstrip() + "\n"


if __name__ == "__main__":
    import sys

    sys.stdout.write(render())
