"""The DFRS engine's result declarations: the metrics of its summary
rows (``Engine.metrics``; docs/columns.md is written from them and
tests/test_columns_doc.py checks every run's row against them) and the
units its figures and views speak in (``Engine.units``)."""

from __future__ import annotations

from schedlab.engines.declare import Column, EngineUnits

#: Summary metrics (``Engine.run(...).summary``; every value is Float64).
METRICS = (
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
)

UNITS = EngineUnits("s", "s", "fraction of the machine", "procs", "job width (processors)")
