"""The DFRS engine's ``[system]`` declaration: nodes, memory, penalty, period,
the options that read the authors' simulator; the oversize rule (more tasks of
a memory than the nodes hold)."""

from __future__ import annotations

import numpy as np

from schedlab.engines.dfrs.sim.state import tasks_per_node
from schedlab.sim.system.declarations import MAX_SECONDS, MAX_UNITS, Misfit, missing_columns
from schedlab.sim.system.jobs import DFRS_JOBS
from schedlab.sim.system.schema import (
    SystemSchema,
    choice,
    flag,
    integer,
    number,
)


def _dfrs_fits(jobs, point) -> Misfit | None:
    """The DFRS engine's oversize rule (``schedlab.engines.dfrs.sim.run_table``)."""
    import polars as pl

    missing = missing_columns(jobs, "dfrs", DFRS_JOBS.required)
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
        choice(
            "minvt_units",
            "real",
            ("real", "ms"),
            doc="MINVT's test 'virtual time < bound' in floats (default) or, as the authors' simulator makes "
            "it, in whole milliseconds: a job whose float virtual time is a residue below the bound is not "
            "pinned (docs/dfrs.md)",
        ),
    ),
    fits=_dfrs_fits,
)
