"""The batch engine's ``[system]`` declaration: the machine model and its size,
the bound, EASY's rule; the oversize rule (a job wider than the machine)."""

from __future__ import annotations

import numpy as np

from schedlab.sim.system.declarations import MAX_UNITS, Misfit, missing_columns
from schedlab.sim.system.jobs import BATCH_JOBS
from schedlab.sim.system.schema import (
    Columns,
    Rule,
    SystemSchema,
    choice,
    flag,
    integer,
    number,
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


def _batch_fits(jobs, point) -> Misfit | None:
    """The batch engine's oversize rule (``schedlab.engines.batch.sim.engine.run_table``)."""
    missing = missing_columns(jobs, "batch", BATCH_JOBS.required)
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
