"""Each engine's ``[system]`` parameters, declared once: type, range, allowed
values, default and what a sentinel 0 means, plus the rules that tie fields
to each other or to the workload's job table.

Why one declaration checked in two places: ``build_plan`` (so ``validate``,
``plan`` and ``run``) checks every grid point of a spec's ``[system]`` table
before Ray starts or anything is written, and each engine's ``run_table``
checks its arguments again, because the engines are also called directly
from Python and by ``schedlab simulate``, which never build a plan. Both read
the :class:`SystemSchema` below, so what ``validate`` accepts and what an
engine accepts cannot drift apart.

Why a small checker rather than a pydantic model: the values are checked,
never converted. A configuration id is a hash of the ``[system]`` values as
the spec wrote them, so a coercion (``true`` -> 1, ``"3"`` -> 3, 2.0 -> 2)
would hash one value and run another; every rule here is strict (no bool
where a number goes, no float where an integer goes, no NaN or infinity).
And each error must read ``system.servers[1]: must be an integer >= 1; got
-5`` -- the rule as the declaration states it, the grid index, the value --
which is one format string here rather than a translation of pydantic's
error types and union branches.

Rules that need the job table (``Rule.reads_table``) are checked at plan time
against the columns the workload point's table will have, when those are
known without drawing an instance (:func:`job_columns`), and at run time
against the real table.

Jobs wider than the machine (``SystemSchema.fits``, the engines' own
``oversize = "error"`` rule) are checked at plan time on what is known of a
workload point's jobs without drawing its instances (:func:`probe_jobs`):

* ``trace``: the point's instance itself -- the window, ``max_procs`` and the
  ``cores_per_node`` annotation do not depend on the seed, so the widths are
  exact (and building it also reports what the build would reject at run
  time: an empty window, a load that cannot be scaled, a missing column).
  ``memory = "uniform"`` is taken at ``memory_hi``, the largest it draws.
  Not checked with ``arrival_load`` (arrivals drawn per replication move jobs
  between windows).
* ``lublin``: the model's bound. Every width from 1 to ``nodes`` processors
  has a positive probability in every draw (``schedlab.workloads.lublin``),
  so a machine narrower than the widest job the model can draw fails some
  replication as soon as it draws one: rejected, with ``oversize = "drop"``
  as the way to run it anyway. Memory: the number, or ``memory_hi``.
* other kinds (synthetic, file, packing, your own generator) have no widths
  for these rules; their instances are checked at run time.
"""

from __future__ import annotations

import itertools
import json
import math
import numbers
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping

import numpy as np

from schedlab.errors import UserError

Columns = Callable[[], "frozenset[str] | None"]  # the job table's columns, None if unknown (lazy)


def _show(value: Any) -> str:
    """A value as the user wrote it in TOML (true, not True)."""
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    return repr(value)


def _is_int(v: Any) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    """A finite real (int or float, numpy ones too), never a bool."""
    return isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(v)


@dataclass(frozen=True)
class Param:
    """One system parameter: ``rule`` is the text after "must be" in an error
    and states exactly what ``accepts`` accepts. ``zero`` says what 0 means
    when 0 is a sentinel ("" if it is not); Python callers of ``run_table``
    may spell that sentinel ``None``."""

    name: str
    default: Any
    rule: str
    accepts: Callable[[Any], bool]
    zero: str = ""
    doc: str = ""
    #: Declared integer: its result column (system_<name>) is Int64.
    integer: bool = False

    def check(self, value: Any, path: str) -> None:
        if not self.accepts(value):
            raise UserError(f"{path}: must be {self.rule}; got {_show(value)}")


def _bounds(ge=None, gt=None, le=None) -> tuple[str, Callable[[float], bool]]:
    if gt is not None and le is not None:
        return f"in ({gt:g}, {le:g}]", lambda v: gt < v <= le
    if gt is not None:
        return f"> {gt:g}", lambda v: v > gt
    if ge is not None:
        return f">= {ge:g}", lambda v: v >= ge
    return "", lambda v: True


def integer(name: str, default: int, *, ge: int, zero: str = "", doc: str = "") -> Param:
    text, ok = _bounds(ge=ge)
    rule = f"an integer {text}" + (f" (0: {zero})" if zero else "")
    return Param(name, default, rule, lambda v: _is_int(v) and ok(v), zero, doc, integer=True)


def number(name: str, default: float, *, ge=None, gt=None, le=None, zero: str = "", doc: str = "") -> Param:
    text, ok = _bounds(ge, gt, le)
    rule = f"a number {text}" + (f" (0: {zero})" if zero else "")
    return Param(name, default, rule, lambda v: _is_number(v) and ok(v), zero, doc)


def numbers_per_resource(name: str, default: float, *, gt: float, doc: str = "") -> Param:
    """A number, or a non-empty list of numbers (one per resource), each
    checked as ``number`` would."""
    text, ok = _bounds(gt=gt)

    def accepts(v):
        if _is_number(v):
            return ok(v)
        if isinstance(v, (list, tuple)) or (isinstance(v, np.ndarray) and v.ndim == 1):
            return len(v) > 0 and all(_is_number(x) and ok(x) for x in v)
        return False

    return Param(name, default, f"a number {text} or a list of numbers {text} (one per resource)", accepts, doc=doc)


def choice(name: str, default: str, options: tuple[str, ...], doc: str = "") -> Param:
    return Param(name, default, "one of " + ", ".join(repr(o) for o in options),
                 lambda v: isinstance(v, str) and v in options, doc=doc)


def flag(name: str, default: bool, doc: str = "") -> Param:
    return Param(name, default, "true or false", lambda v: isinstance(v, (bool, np.bool_)), doc=doc)


@dataclass(frozen=True)
class Rule:
    """A rule across fields (or fields and the job table). ``broken(point,
    columns)`` gets one grid point with defaults filled in (sentinel ``None``
    read as 0) and returns what ``field`` must be, or None if the rule holds.
    ``reads_table``: the rule calls ``columns()``; it is checked at plan time
    per workload point, and must return None when ``columns()`` is None."""

    field: str
    text: str  # the rule in words, for documentation and reports
    broken: Callable[[Mapping[str, Any], Columns], str | None]
    reads_table: bool = False


def _no_table() -> None:
    """The columns argument of rules checked without a job table."""
    return None


@dataclass(frozen=True)
class SystemSchema:
    """An engine's ``[system]`` table: its parameters and rules."""

    engine: str
    params: tuple[Param, ...] = ()
    rules: tuple[Rule, ...] = ()
    #: ``fits(jobs, point)``: for one grid point with defaults filled in whose
    #: ``oversize`` is "error", a ``Misfit`` when a job of the table cannot
    #: fit the empty machine, else None -- the engine's own rule (the
    #: engines call the same helpers: units_needed, tasks_per_node).
    fits: Callable[[Any, Mapping[str, Any]], Any] | None = None
    _index: dict[str, Param] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_index", {p.name: p for p in self.params})

    def defaults(self) -> dict[str, Any]:
        return {p.name: p.default for p in self.params}

    def describe(self) -> list[str]:
        """One line per parameter and rule, as declared (docs, reports)."""
        lines = [f"{p.name}: {p.rule} (default {_show(p.default)}) -- {p.doc}" for p in self.params]
        return lines + [f"rule: {r.text}{' (reads the job table)' if r.reads_table else ''}" for r in self.rules]

    def __getitem__(self, name: str) -> Param:
        return self._index[name]

    # ---- plan time: a spec's [system] table, list values being grid axes ----

    def check_spec(self, table: Mapping[str, Any], where: str) -> None:
        """Unknown names, every value of every grid axis, then the rules that
        need no job table at every grid point. ``where``: e.g. ``spec.toml:
        system``; errors name ``where.field`` or ``where.field[i]``."""
        unknown = sorted(set(table) - set(self._index))
        if unknown:
            allowed = ", ".join(self._index) or "none"
            raise UserError(f"{where}.{unknown[0]}: unknown system parameter for engine {self.engine!r}; "
                            f"allowed: {allowed}")
        for name, value in table.items():
            values = value if isinstance(value, list) else [value]
            for i, v in enumerate(values):
                self[name].check(v, f"{where}.{name}[{i}]" if isinstance(value, list) else f"{where}.{name}")
        own = [r for r in self.rules if not r.reads_table]
        for point, path in self._grid(table, where):
            self._apply(own, point, path, _no_table)

    def check_workload(self, table: Mapping[str, Any], columns: Columns, where: str) -> None:
        """The rules that read the job table, at every grid point of a
        checked ``table``, for one workload point whose table has ``columns``."""
        rules = [r for r in self.rules if r.reads_table]
        if rules:
            for point, path in self._grid(table, where):
                self._apply(rules, point, path, columns)

    def _grid(self, table: Mapping[str, Any], where: str) -> Iterator[tuple[dict[str, Any], Callable]]:
        axes = [(name, value) for name, value in table.items() if isinstance(value, list)]
        for idx in itertools.product(*(range(len(v)) for _, v in axes)):
            point = {**self.defaults(), **table}
            at = dict(zip((n for n, _ in axes), idx))
            point.update({n: table[n][i] for n, i in at.items()})

            def path(name: str, at=at) -> tuple[str, bool]:
                return (f"{where}.{name}[{at[name]}]" if name in at else f"{where}.{name}"), name in table

            yield point, path

    def _apply(self, rules, point: Mapping[str, Any], path, columns: Columns) -> None:
        for rule in rules:
            need = rule.broken(point, columns)
            if need is not None:
                where, given = path(rule.field)
                raise UserError(f"{where}: must be {need}; got {_show(point[rule.field])}"
                                f"{'' if given else ' (the default)'}")

    # ---- run time: one call's keyword arguments ----

    def check_call(self, values: Mapping[str, Any], where: str, columns=None) -> dict[str, Any]:
        """Check one engine call's system arguments (``where``: e.g. ``packing
        engine``) and every rule, the table rules against ``columns`` (the job
        table's). ``None`` is accepted for a parameter whose 0 is a sentinel
        and comes back as 0; returns the values."""
        out = dict(values)
        for name, value in values.items():
            p = self[name]
            if value is None and p.zero:
                out[name] = 0
            else:
                p.check(value, f"{where}: {name}")
        point = {**self.defaults(), **out}
        cols = frozenset(columns) if columns is not None else None
        self._apply(self.rules, point, lambda name: (f"{where}: {name}", True), lambda: cols)
        return out


# ---- the engines' declarations -----------------------------------------------------------------

#: Columns a packing job table may give its resources in (see ``resources``).
RESOURCE_COLUMNS = ("cpu", "mem")


def resources(columns) -> list[str]:
    """The resources of a packing job table, in order: ``demand`` (one,
    unnamed: [""]) or whichever of cpu, mem it has ([] if none)."""
    if "demand" in columns:
        return [""]
    return [c for c in RESOURCE_COLUMNS if c in columns]


def _capacity_length(point, columns: Columns) -> str | None:
    cap = point["capacity"]
    if _is_number(cap) or len(cap) == 1:
        return None
    cols = columns()
    names = resources(cols) if cols is not None else []
    if not names or len(cap) == len(names):  # unknown, or no resources at all (the engine says so)
        return None
    if names == [""]:
        return "a single number (the job table has one resource, 'demand')"
    return f"one number or a list of {len(names)} (the job table has {len(names)} resources: {', '.join(names)})"


QUEUE = SystemSchema("queue")

PACKING = SystemSchema(
    "packing",
    params=(
        integer("servers", 1, ge=1, doc="L identical servers"),
        numbers_per_resource("capacity", 1.0, gt=0,
                             doc="each server's capacity: one number (every resource) or one per resource"),
        number("epoch", 1.0, ge=0, zero="a decision at every event", doc="decision epoch length (slotted model: 1)"),
        number("sample_every", 0.0, ge=0, zero="no time series", doc="sampling interval of the queue time series"),
    ),
    rules=(
        Rule("capacity", "a capacity list has one entry per resource of the job table (or one for all)",
             _capacity_length, reads_table=True),
    ),
)

#: The batch engine's machine models (``schedlab.sim.batch``).
BATCH_MODELS = ("procs", "nodes")
#: The job-table column a trace gives its machine size in (SWF MaxProcs).
MACHINE_PROCS = "machine_procs"
#: Slack of the batch bound rule's tasks_per_node x cpu_need <= 1.
BOUND_TOL = 1e-9


def _nodes_for_model(point, columns) -> str | None:
    if point["model"] == "nodes" and not point["nodes"]:
        return "an integer >= 1 with model 'nodes' (it needs the number of nodes)"
    return None


def _procs_from_table(point, columns: Columns) -> str | None:
    if point["model"] != "procs" or point["procs"]:
        return None
    cols = columns()
    if cols is None or MACHINE_PROCS in cols:
        return None
    return ("an integer >= 1 with model 'procs': the job table has no machine_procs column "
            "(an SWF header's MaxProcs) to take the machine size from")


def _bound_fits(point, columns: Columns) -> str | None:
    tpn, cpu = point["tasks_per_node"], point["cpu_need"]
    if not (point["bound"] and point["model"] == "nodes" and tpn * cpu > 1.0 + BOUND_TOL):
        return None
    cols = columns()
    if cols is None or "cpu_need" in cols:  # per-job needs: the engine checks the drawn rows
        return None
    return (f"false with model 'nodes' and tasks_per_node x cpu_need = {tpn} x {cpu:g} > 1 "
            f"(the bound needs the tasks of a node to fit its CPU)")


#: What ``SystemSchema.fits`` returns for a job that does not fit: (the
#: field holding the machine size, the machine in words, the job's id, what
#: it needs in words); field "" for a job table the engine cannot read.
Misfit = tuple[str, str, "int | None", str]


def _missing(jobs, engine: str, columns: tuple[str, ...]) -> Misfit | None:
    gone = [c for c in columns if c not in jobs.columns]
    if gone:
        return "", (f"the {engine} engine needs a {gone[0]!r} column; this workload's job table has "
                    f"{', '.join(jobs.columns)}"), None, ""
    return None


def _batch_fits(jobs, point) -> Misfit | None:
    """The batch engine's oversize rule (``schedlab.sim.batch.run_table``)."""
    from schedlab.sim.batch import units_needed

    missing = _missing(jobs, "batch", ("job_id", "submit", "runtime", "procs"))
    if missing or not jobs.height:
        return missing
    model, tpn = point["model"], int(point["tasks_per_node"])
    capacity = int(point["procs"] if model == "procs" else point["nodes"])
    field_, unit = ("procs", "processors") if model == "procs" else ("nodes", "nodes")
    size = f"{capacity} {unit}"
    if model == "procs" and not capacity:
        if MACHINE_PROCS not in jobs.columns:
            return None  # the rule of procs = 0 says so
        capacity = int(jobs[MACHINE_PROCS][0])
        size = f"{capacity} processors (procs = 0: the trace's machine size)"
    need = units_needed(jobs["procs"].to_numpy(), model, tpn)
    k = int(np.argmax(need))
    if need[k] <= capacity:
        return None
    return field_, f"the machine has {size}", int(jobs["job_id"][k]), f"{int(need[k])} {unit}"


def _dfrs_fits(jobs, point) -> Misfit | None:
    """The DFRS engine's oversize rule (``schedlab.sim.dfrs.run_table``)."""
    from schedlab.sim.dfrs import tasks_per_node

    import polars as pl

    missing = _missing(jobs, "dfrs", ("job_id", "submit", "runtime", "procs"))
    if missing or not jobs.height:
        return missing
    mem = (jobs["memory"].cast(pl.Float64).to_numpy() if "memory" in jobs.columns
           else np.full(jobs.height, float(point["memory"])))
    if not np.all((mem > 0) & (mem <= 1)):
        return None  # the engine names the bad row itself
    holds = int(point["nodes"]) * tasks_per_node(mem)
    procs = jobs["procs"].to_numpy()
    k = int(np.argmax(procs - holds))
    if procs[k] <= holds[k]:
        return None
    return ("nodes", f"{point['nodes']} nodes hold at most {holds[k]} tasks of memory {mem[k]:g}",
            int(jobs["job_id"][k]), f"{procs[k]} such tasks")


BATCH = SystemSchema(
    "batch",
    params=(
        choice("model", "procs", BATCH_MODELS, doc="machine in processors or in whole nodes held per task"),
        integer("procs", 0, ge=0, zero="the trace's machine size, its machine_procs column",
                doc="machine size in processors (model procs)"),
        integer("nodes", 0, ge=0, zero="not set; model 'nodes' needs it", doc="machine size in nodes (model nodes)"),
        integer("tasks_per_node", 1, ge=1, doc="tasks sharing one node (model nodes)"),
        choice("oversize", "error", ("error", "drop"), doc="a job larger than the machine: an error, or dropped and counted"),
        number("cpu_need", 1.0, gt=0, le=1, doc="each task's CPU need when the table has no cpu_need column"),
        flag("bound", False, doc="also compute the LP max-stretch lower bound"),
    ),
    rules=(
        Rule("nodes", "model 'nodes' needs nodes >= 1", _nodes_for_model),
        Rule("procs", "model 'procs' with procs = 0 needs a machine_procs column in the job table",
             _procs_from_table, reads_table=True),
        Rule("bound", "bound in model 'nodes' needs tasks_per_node x cpu_need <= 1 (the system cpu_need "
             "when the table has no cpu_need column)", _bound_fits, reads_table=True),
    ),    fits=_batch_fits,
)

DFRS = SystemSchema(
    "dfrs",
    params=(
        integer("nodes", 128, ge=1, doc="cluster size"),
        number("penalty", 300.0, ge=0, doc="seconds without progress after a pause or migration"),
        number("cpu_need", 1.0, gt=0, le=1, doc="each task's CPU need when the table has no cpu_need column"),
        number("memory", 0.1, gt=0, le=1, doc="each task's memory when the table has no memory column"),
        flag("bound", False, doc="also compute the LP max-stretch lower bound and the degradation"),
        choice("oversize", "error", ("error", "drop"), doc="a job that cannot fit the empty cluster"),
    ),    fits=_dfrs_fits,
)


# ---- plan time: what a workload point's job table will look like ----------------------------------

#: Generated kinds: the parameters that make an instance tiny without
#: changing its columns (the packing kind's own check draws slots = 0 too;
#: a lublin load only moves submit times, and one job cannot be rescaled).
_TINY_DRAW: dict[str, dict[str, Any]] = {"packing": {"slots": 0}, "lublin": {"njobs": 1, "load": 0.0}}
#: Columns a shared-input kind's instance may add to the parsed input
#: (trace_kind.build: grouping, estimates, weights; the annotation).
_ADDED_BY_BUILD = frozenset({"group", "estimate", "weight"})
_ADDED_BY_ANNOTATION = frozenset({"procs", "procs_trace", "cpu_need", "memory"})


def job_columns(kind, params: Mapping[str, Any], shared_cache: dict) -> frozenset[str] | None:
    """The columns a workload point's job table will have, as far as they are
    known without drawing its instances; None if they are not.

    Generated kinds (packing, lublin): the columns of a tiny draw from a fixed
    generator -- columns never depend on the draw. Shared-input kinds (trace,
    file): the parsed input's columns (read once per input, through the
    reader's cache; ``shared_cache`` memoises them across workload points),
    plus every column building an instance may add -- an over-approximation,
    so a rule that needs a column to be absent never fires wrongly."""
    full = {**{k: kind.defaults[k] for k in kind.late}, **params}
    if kind.load_shared is not None:
        key = json.dumps({k: v for k, v in full.items()
                          if k in kind.shared_keys or (kind.open_prefix and k.startswith(kind.open_prefix))},
                         sort_keys=True, default=str)
        if key not in shared_cache:
            shared_cache[key] = frozenset(kind.load_shared(full).columns)
        cols = shared_cache[key]
        from schedlab.workloads import annotate

        annotated = all(k in full for k in annotate.DEFAULTS) and annotate.wanted(full)
        return cols | _ADDED_BY_BUILD | (_ADDED_BY_ANNOTATION if annotated else frozenset())
    tiny = _TINY_DRAW.get(kind.name)
    if tiny is None:
        return None
    try:
        return frozenset(kind.instance(np.random.default_rng(0), {**full, **tiny}, None).columns)
    except (UserError, ValueError):  # the tiny draw itself is not a valid instance: say unknown
        return None


def check_workload_points(schema: SystemSchema, table: Mapping[str, Any], kind, points, where: str,
                          workload_where: str) -> None:
    """Plan time: the table-reading rules of ``schema`` for every workload
    point (``points``: their params). The columns of a point are looked up
    only when a rule asks (e.g. only for a capacity list), so specs that give
    no such value never read a trace here."""
    if not any(r.reads_table for r in schema.rules):
        return
    shared_cache: dict = {}
    for params in points:
        memo: list = []

        def columns(params=params, memo=memo):
            if not memo:
                try:
                    memo.append(job_columns(kind, params, shared_cache))
                except UserError as err:  # reading the input failed: run would fail the same way
                    raise UserError(f"{workload_where}: {err}") from None
            return memo[0]

        schema.check_workload(table, columns, where)


@dataclass(frozen=True)
class Probe:
    """What plan time knows of a workload point's jobs: ``jobs`` holds every
    job a run could be given (``exact``: the instance's own rows) or the
    widest the model can draw; ``what`` says which, for messages."""

    jobs: Any  # polars.DataFrame
    what: str
    exact: bool


def probe_jobs(kind, params: Mapping[str, Any], shared_cache: dict) -> Probe | None:
    """The jobs of a workload point as far as they are known without a seed
    (module docstring); None for kinds without widths. A build that fails
    raises its UserError (run would fail the same way)."""
    import polars as pl

    from schedlab.workloads import annotate

    full = {**{k: kind.defaults[k] for k in kind.late}, **params}
    if kind.name == "lublin":
        nodes = int(full["nodes"])
        jobs = pl.DataFrame({"job_id": [0], "submit": [0.0], "runtime": [1.0], "procs": [nodes]},
                            schema={"job_id": pl.Int64, "submit": pl.Float64, "runtime": pl.Float64, "procs": pl.Int64})
        if annotate.wanted(full):
            jobs = annotate.annotate(jobs, np.random.default_rng(0), full)
        if full["memory"] == "uniform":
            jobs = jobs.with_columns(pl.lit(float(full["memory_hi"])).alias("memory"))
        tasks = int(jobs["procs"][0])
        wide = f"{nodes} processors" + (f" ({tasks} tasks)" if tasks != nodes else "")
        mem = f" with memory up to {float(full['memory_hi']):g}" if full["memory"] == "uniform" else ""
        return Probe(jobs, f"Lublin jobs drawn for workload.nodes = {nodes} can be {wide} wide{mem} "
                           f"(every width up to nodes can be drawn)", exact=False)
    if kind.name == "trace" and not full["arrival_load"]:
        key = json.dumps({k: v for k, v in full.items() if k in kind.shared_keys or k.startswith(kind.open_prefix)},
                         sort_keys=True, default=str)
        if key not in shared_cache:
            shared = kind.load_shared(full)
            # sorted once here (stable, as build sorts each window): build's own sort is then a no-op
            shared_cache[key] = shared.sort("submit", maintain_order=True) if "submit" in shared.columns else shared
        jobs = kind.instance(np.random.default_rng(0), params, shared_cache[key])
        if full["memory"] == "uniform" and "memory" in jobs.columns:
            jobs = jobs.with_columns(pl.lit(float(full["memory_hi"])).alias("memory"))
        where = f"window {full['window']} of " if full["window_length"] else ""
        return Probe(jobs, f"{where}{full['path']}", exact=True)
    return None


def check_jobs_fit(schema: SystemSchema, table: Mapping[str, Any], kind, points, where: str,
                   workload_where: str) -> None:
    """Plan time: the engine's oversize rule (``schema.fits``) for every
    workload point and every grid point of ``table`` with oversize "error",
    on :func:`probe_jobs`; a point whose build fails is reported as a
    workload error. Errors are collected: one line per system grid point
    (naming the first workload point that does not fit and how many more do
    not), plus one per failed build."""
    from schedlab.errors import Collector

    errors = Collector()
    needed = schema.fits is not None or kind.name == "trace"  # a trace's build can fail whatever the engine
    if not needed:
        return
    shared_cache: dict = {}
    probes = []
    for params in points:
        with errors.check(f"{workload_where}: "):
            probe = probe_jobs(kind, params, shared_cache)
            if probe is not None:
                probes.append(probe)
    if schema.fits is not None:
        for point, path in schema._grid(table, where):
            if point.get("oversize", "error") != "error":
                continue
            bad = [(probe, found) for probe in probes if (found := schema.fits(probe.jobs, point)) is not None]
            if not bad:
                continue
            probe, (field_, machine, job, need) = bad[0]
            more = f" (and {len(bad) - 1} more workload points)" if len(bad) > 1 else ""
            if not field_:  # a job table the engine cannot read: the workload's mistake
                errors.add(f"{workload_where}: {machine} ({probe.what}){more}")
                continue
            at, _ = path(field_)
            if probe.exact:
                text, how = f"{machine} but job {job} of {probe.what}{more} needs {need}", "every run of it fails"
            else:
                text, how = f"{machine} but {probe.what}{more}", "a run fails as soon as it draws such a job"
            errors.add(f"{at}: {text}; with oversize = \"error\" (the default) {how} -- give a larger machine, "
                       f"narrower jobs, or oversize = \"drop\" (such jobs dropped and counted)")
    errors.raise_any()


SYSTEMS: dict[str, SystemSchema] = {s.engine: s for s in (QUEUE, PACKING, BATCH, DFRS)}
