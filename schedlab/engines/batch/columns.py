"""The batch engine's result declarations: the metrics of its summary
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
)

UNITS = EngineUnits("s", "s", "fraction of the machine", "procs", "job width (processors)")

#: The per-job columns ``schedlab simulate --jobs-out`` writes.
JOBS_OUT = ("job_id", "submit", "start", "end", "procs", "wait", "stretch")


def summary_lines(s: dict[str, float]) -> list[tuple[str, str]]:
    """``schedlab simulate``'s summary of one run (label, value), before the wall time."""
    return [
        ("jobs", f"{int(s['n_jobs'])}"),
        ("bounded stretch mean", f"{s['stretch_mean']:.6g}"),
        ("bounded stretch max", f"{s['stretch_max']:.6g}"),
        ("wait mean (s)", f"{s['wait_mean']:.6g}"),
        ("wait max (s)", f"{s['wait_max']:.6g}"),
        ("utilisation", f"{s['utilisation']:.6g}"),
        ("makespan (s)", f"{s['makespan']:.6g}"),
        ("events", f"{int(s['events'])}"),
    ]
