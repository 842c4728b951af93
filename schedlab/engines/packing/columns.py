"""The packing engine's result declarations: the metrics of its summary
rows (``Engine.metrics``; docs/columns.md is written from them and
tests/test_columns_doc.py checks every run's row against them) and the
units its figures and views speak in (``Engine.units``)."""

from __future__ import annotations

from schedlab.engines.declare import Column, EngineUnits

#: Summary metrics (``Engine.run(...).summary``; every value is Float64).
METRICS = (
    Column("queue_jobs_mean", "Float64", "jobs", "time-average number of queued jobs"),
    Column("running_jobs_mean", "Float64", "jobs", "time-average number of running jobs"),
    Column("wait_mean", "Float64", "slots / s", "mean wait, start - submit"),
    Column("wait_p99", "Float64", "slots / s", "99th percentile of wait"),
    Column("jct_mean", "Float64", "slots / s", "mean job completion time of multi-task jobs (only with group_column)"),
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
)

UNITS = EngineUnits("slots", "slots", "fraction of the servers' capacity", "demand", "job demand")
