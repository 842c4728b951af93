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

Layout: ``schema`` (Param, Rule, SystemSchema and the parameter builders),
``declarations`` (what the engines' declarations share; each engine declares its own
``[system]`` in ``schedlab.engines.<engine>.sim.system``),
``workload_checks`` (plan time: job_columns, probe_jobs, check_workload_points,
check_jobs_fit -- where jobs wider than the machine are checked before a
run; tiny_jobs, the table plan time constructs policies on). Every name is
re-exported here: import them from ``schedlab.sim.system``.
"""

from schedlab.sim.system.declarations import MAX_SECONDS, MAX_UNITS, Misfit, missing_columns
from schedlab.sim.system.schema import (
    Columns,
    Param,
    Rule,
    SystemSchema,
    choice,
    flag,
    integer,
    number,
    numbers_per_resource,
)
from schedlab.sim.system.workload_checks import (
    Probe,
    check_jobs_fit,
    check_workload_points,
    job_columns,
    probe_jobs,
    tiny_jobs,
)

__all__ = [
    "MAX_SECONDS",
    "MAX_UNITS",
    "missing_columns",
    "Columns",
    "Misfit",
    "Param",
    "Probe",
    "Rule",
    "SystemSchema",
    "check_jobs_fit",
    "check_workload_points",
    "choice",
    "flag",
    "integer",
    "job_columns",
    "number",
    "numbers_per_resource",
    "probe_jobs",
    "tiny_jobs",
]
