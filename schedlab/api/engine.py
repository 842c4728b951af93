"""The engine seam: what a researcher's own engine declares, the same
declaration the four built-in engines make (``schedlab.engines.<name>``).

A spec names your engine the way it names a policy,
``engine = "my_engine.py:MyEngine"``, where ``MyEngine`` is an
:class:`Engine`::

    MyEngine = Engine(
        name="mmc",                       # the rows' ``engine`` column; not a built-in's name
        summary="c servers, one queue",
        policies={"FCFS": FCFS, "SJF": SJF},
        seam=Policy,                      # the base class a spec's own policies (use = ...) subclass
        handle_args=0,                    # policies are built as cls(**params)
        adapter=run,                      # run(jobs, cls, params, system, recorder=None) -> RunResult
        workload_kinds=("synthetic",),    # built-in workload kinds it takes (your generator always)
        system=SystemSchema("mmc", params=(integer("servers", 1, ge=1, doc="c"),)),
        jobs=JobColumns(("job_id", "submit", "size")),
        metrics=(Column("wait_mean", "Float64", "time units", "mean wait"), ...),
        headline=("wait_mean",),
    )

Optional declarations: ``checks`` (an ``EngineCheck`` subclass of
``schedlab.checks.common``: ``schedlab check-policy``), ``recorder`` (a
class whose instances the adapter calls while it runs and whose
``finish(per_job, summary, jobs, system)`` returns a
``schedlab.views.schedule.Schedule``: ``schedlab view``), ``start`` (``start(jobs,
cls, params, system) -> StartedRun``: the adapter's run built and not yet
stepped, which ``schedlab.api.start_instance`` hands out), ``decision_point``
(a Gymnasium environment class: ``schedlab.gym.register``), ``units``,
``warmup``, ``unstable_load``. docs/guide/your-own-engine.md builds one.

Everything else -- validation of ``[system]`` and the workload, common
random numbers, Ray / pool / in-process execution, Parquet rows with your
code's digest (``schedlab_digest``; the configuration ids include it),
MLflow, ``results``, ``compare``, ``plot`` and ``[search]`` -- comes with
the platform. Importing this module loads no simulator.
"""

from __future__ import annotations

from schedlab.engines.base import Engine, RunResult, StartedRun
from schedlab.engines.declare import Column, EngineUnits
from schedlab.sim.system.jobs import JobColumns
from schedlab.sim.system.schema import Param, Rule, SystemSchema, choice, flag, integer, number

__all__ = [
    "Column",
    "Engine",
    "EngineUnits",
    "JobColumns",
    "Param",
    "Rule",
    "RunResult",
    "StartedRun",
    "SystemSchema",
    "choice",
    "flag",
    "integer",
    "number",
]
