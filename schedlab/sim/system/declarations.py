"""The four engines' ``[system]`` declarations (QUEUE, PACKING, BATCH,
DFRS; each engine's registry entry names its own, ``Engine.system``): their parameters, the rules that tie
fields to each other or to the job table, and each engine's oversize rule
(``SystemSchema.fits``). Split from the machinery (``schema``) because this
is what an engine's author edits."""

from __future__ import annotations

import numpy as np

from schedlab.sim.system.jobs import BATCH_JOBS, DFRS_JOBS
from schedlab.sim.system.schema import (
    Columns,
    Rule,
    SystemSchema,
    _is_number,
    choice,
    flag,
    integer,
    number,
    numbers_per_resource,
)

#: The largest machine a [system] table may describe (servers, nodes,
#: processors, tasks per node): beyond it an engine's per-unit arrays alone
#: outgrow a machine's memory, so the value is a mistake.
MAX_UNITS = 10**7
#: The longest span of simulated seconds a [system] duration may be (about
#: 32 years): a penalty or an epoch beyond it dwarfs any trace, and near a
#: float's range adding it to the clock loses the clock (the run never ends).
MAX_SECONDS = 1e9

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
        integer("servers", 1, ge=1, most=MAX_UNITS, doc="L identical servers"),
        numbers_per_resource(
            "capacity", 1.0, gt=0, doc="each server's capacity: one number (every resource) or one per resource"
        ),
        number(
            "epoch",
            1.0,
            ge=0,
            most=MAX_SECONDS,
            zero="a decision at every event",
            doc="decision epoch length (slotted model: 1)",
        ),
        number(
            "sample_every",
            0.0,
            ge=0,
            most=MAX_SECONDS,
            zero="no time series",
            doc="sampling interval of the queue time series",
        ),
    ),
    rules=(
        Rule(
            "capacity",
            "a capacity list has one entry per resource of the job table (or one for all)",
            _capacity_length,
            reads_table=True,
        ),
    ),
)

#: The batch engine's machine models (``schedlab.engines.batch.sim.engine``).
BATCH_MODELS = ("procs", "nodes")


def units_needed(procs: np.ndarray, model: str, tasks_per_node: int) -> np.ndarray:
    """Units a job holds: procs (model procs) or ceil(procs / tasks_per_node) nodes
    (the batch engine's machine, ``schedlab.engines.batch.sim.engine``, and its oversize rule here)."""
    procs = np.asarray(procs, dtype=np.int64)
    if model == "procs":
        return procs.copy()
    return -(-procs // tasks_per_node)


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
    return (
        "an integer >= 1 with model 'procs': the job table has no machine_procs column "
        "(an SWF header's MaxProcs) to take the machine size from"
    )


def _bound_fits(point, columns: Columns) -> str | None:
    tpn, cpu = point["tasks_per_node"], point["cpu_need"]
    if not (point["bound"] and point["model"] == "nodes" and tpn * cpu > 1.0 + BOUND_TOL):
        return None
    cols = columns()
    if cols is None or "cpu_need" in cols:  # per-job needs: the engine checks the drawn rows
        return None
    return (
        f"false with model 'nodes' and tasks_per_node x cpu_need = {tpn} x {cpu:g} > 1 "
        f"(the bound needs the tasks of a node to fit its CPU)"
    )


#: What ``SystemSchema.fits`` returns for a job that does not fit: (the
#: field holding the machine size, the machine in words, the job's id, what
#: it needs in words); field "" for a job table the engine cannot read.
Misfit = tuple[str, str, "int | None", str]


def _missing(jobs, engine: str, columns: tuple[str, ...]) -> Misfit | None:
    gone = [c for c in columns if c not in jobs.columns]
    if gone:
        return (
            "",
            (
                f"the {engine} engine needs a {gone[0]!r} column; this workload's job table has "
                f"{', '.join(jobs.columns)}"
            ),
            None,
            "",
        )
    return None


def _batch_fits(jobs, point) -> Misfit | None:
    """The batch engine's oversize rule (``schedlab.engines.batch.sim.engine.run_table``)."""
    missing = _missing(jobs, "batch", BATCH_JOBS.required)
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
    """The DFRS engine's oversize rule (``schedlab.engines.dfrs.sim.run_table``)."""
    import polars as pl

    from schedlab.engines.dfrs.sim.state import tasks_per_node

    missing = _missing(jobs, "dfrs", DFRS_JOBS.required)
    if missing or not jobs.height:
        return missing
    mem = (
        jobs["memory"].cast(pl.Float64).to_numpy()
        if "memory" in jobs.columns
        else np.full(jobs.height, float(point["memory"]))
    )
    if not np.all((mem > 0) & (mem <= 1)):
        return None  # the engine names the bad row itself
    holds = int(point["nodes"]) * tasks_per_node(mem)
    procs = jobs["procs"].to_numpy()
    k = int(np.argmax(procs - holds))
    if procs[k] <= holds[k]:
        return None
    return (
        "nodes",
        f"{point['nodes']} nodes hold at most {holds[k]} tasks of memory {mem[k]:g}",
        int(jobs["job_id"][k]),
        f"{procs[k]} such tasks",
    )


BATCH = SystemSchema(
    "batch",
    params=(
        choice("model", "procs", BATCH_MODELS, doc="machine in processors or in whole nodes held per task"),
        integer(
            "procs",
            0,
            ge=0,
            most=MAX_UNITS,
            zero="the trace's machine size, its machine_procs column",
            doc="machine size in processors (model procs)",
        ),
        integer(
            "nodes",
            0,
            ge=0,
            most=MAX_UNITS,
            zero="not set; model 'nodes' needs it",
            doc="machine size in nodes (model nodes)",
        ),
        integer("tasks_per_node", 1, ge=1, most=MAX_UNITS, doc="tasks sharing one node (model nodes)"),
        choice(
            "oversize",
            "error",
            ("error", "drop"),
            doc="a job larger than the machine: an error, or dropped and counted",
        ),
        number("cpu_need", 1.0, gt=0, le=1, doc="each task's CPU need when the table has no cpu_need column"),
        flag("bound", False, doc="also compute the LP max-stretch lower bound"),
        choice(
            "estimates",
            "requested",
            ("requested", "exact"),
            doc="the runtime the scheduler sees: the table's requested_time, or the actual runtime (exact)",
        ),
        choice(
            "easy_backfill",
            "canonical",
            ("canonical", "vcsim"),
            doc="EASY's backfilling: canonical (a job backfills if it ends by the head's reservation or fits the "
            "units the reservation leaves), or, as the DFRS authors' simulator does, only onto free units outside "
            "the reservation, which is pinned when made (docs/dfrs.md); other policies ignore it",
        ),
    ),
    rules=(
        Rule("nodes", "model 'nodes' needs nodes >= 1", _nodes_for_model),
        Rule(
            "procs",
            "model 'procs' with procs = 0 needs a machine_procs column in the job table",
            _procs_from_table,
            reads_table=True,
        ),
        Rule(
            "bound",
            "bound in model 'nodes' needs tasks_per_node x cpu_need <= 1 (the system cpu_need "
            "when the table has no cpu_need column)",
            _bound_fits,
            reads_table=True,
        ),
    ),
    fits=_batch_fits,
)

DFRS = SystemSchema(
    "dfrs",
    params=(
        integer("nodes", 128, ge=1, most=MAX_UNITS, doc="cluster size"),
        number("penalty", 300.0, ge=0, most=MAX_SECONDS, doc="seconds without progress after a pause or migration"),
        number("cpu_need", 1.0, gt=0, le=1, doc="each task's CPU need when the table has no cpu_need column"),
        number("memory", 0.1, gt=0, le=1, doc="each task's memory when the table has no memory column"),
        flag("bound", False, doc="also compute the LP max-stretch lower bound and the degradation"),
        choice("oversize", "error", ("error", "drop"), doc="a job that cannot fit the empty cluster"),
        choice(
            "star_pass",
            "completion",
            ("completion", "instant-end", "vcsim"),
            doc="when the Greedy '*' pass runs: right after completions (default) or, as the authors' "
            "simulator does, at the end of every instant, after arrivals and the periodic remap; "
            "'vcsim' also leaves the jobs paused as GreedyP / GreedyPM victims in that instant for the "
            "next one, as that simulator does (docs/dfrs.md)",
        ),
        choice(
            "victims",
            "prefix",
            ("prefix", "put-back"),
            doc="GreedyP / GreedyPM's victims: the lowest-priority prefix of the lower-priority running jobs "
            "that makes room (default) or, as the authors' simulator does, any mapped job one at a time until "
            "the new job fits, then put back every victim whose nodes still have the memory (docs/dfrs.md)",
        ),
        choice(
            "stretch_realloc",
            "mapping-change",
            ("mapping-change", "every-instant"),
            doc="when a policy with its own allocation (/stretch-per) re-allocates: when the mapping "
            "changes (default) or, as the authors' simulator does, at every instant, the horizon "
            "shrinking to the next period (docs/dfrs.md)",
        ),
        choice(
            "mcb8_rules",
            "schedlab",
            ("schedlab", "vcsim"),
            doc="the MCB8 remap's packing and yield search: schedlab's (default) or the authors' simulator's "
            "(integer percent, ties to the later job, bisection midpoints; docs/dfrs.md)",
        ),
        choice(
            "relabel",
            "memory",
            ("memory", "none"),
            doc="after an MCB8 remap, renumber its nodes to keep the most running memory in place (default) "
            "or, as the authors' simulator does, take its node numbers as they are (docs/dfrs.md)",
        ),
        choice(
            "cpu_units",
            "real",
            ("real", "percent"),
            doc="the OPT=MIN / OPT=AVG allocation in real numbers (default) or, as the authors' simulator "
            "gives it, floored to whole percents of a node, at least 1 % (docs/dfrs.md)",
        ),
        choice(
            "penalties",
            "each-change",
            ("each-change", "instant-net"),
            doc="penalties charged at each pause or migration (default) or, as the authors' simulator does, by "
            "an instant's net change: a job back on its nodes, or first started, at the instant's end pays "
            "nothing new (docs/dfrs.md)",
        ),
        choice(
            "period_origin",
            "first-release",
            ("first-release", "zero"),
            doc="the periodic instants (/per, /stretch-per): first release + k x period, k >= 1 (default), or, "
            "as the authors' simulator places them, k x period from the job table's time 0 (docs/dfrs.md)",
        ),
        choice(
            "time_units",
            "real",
            ("real", "seconds"),
            doc="completion times in real numbers (default) or, as the authors' simulator keeps time, rounded "
            "up to the next whole second, the job holding its resources until then (docs/dfrs.md)",
        ),
        choice(
            "priority_units",
            "real",
            ("real", "ms"),
            doc="the priority flow time / virtual time^2 in floats (default) or, as the authors' simulator "
            "ranks jobs, virtual time^2 / flow time in whole milliseconds, ties to the earlier job (docs/dfrs.md)",
        ),
        choice(
            "arrival_at_period",
            "placed",
            ("placed", "remap"),
            doc="a job released at a periodic instant: placed by the policy's submission rule, then remapped "
            "(default), or, as the authors' simulator does, left to that instant's remap (docs/dfrs.md)",
        ),
        choice(
            "victims_settle",
            "arrival",
            ("arrival", "instant-end"),
            doc="GreedyP / GreedyPM's victims paused or moved at each arrival (default) or, as the authors' "
            "simulator does, held until the end of the instant, after its other arrivals (docs/dfrs.md)",
        ),
        choice(
            "mcb8_remaps",
            "each-event",
            ("each-event", "instant-end"),
            doc="MCB8* and MCB8/per remap at each arrival, at the completions and at the periodic instant "
            "(default) or, as the authors' simulator does, once at the end of the instant (docs/dfrs.md)",
        ),
    ),
    fits=_dfrs_fits,
)
