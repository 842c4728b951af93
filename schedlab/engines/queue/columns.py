"""The queue engine's result declarations: the metrics of its summary
rows (``Engine.metrics``; docs/columns.md is written from them and
tests/test_columns_doc.py checks every run's row against them) and the
units its figures and views speak in (``Engine.units``)."""

from __future__ import annotations

from schedlab.engines.declare import Column, EngineUnits

#: Summary metrics (``Engine.run(...).summary``; every value is Float64).
METRICS = (
    Column("n_jobs", "Float64", "jobs", "jobs simulated"),
    Column("mst", "Float64", "time units of the workload (s for traces)", "mean sojourn time"),
    Column("slowdown_mean", "Float64", "ratio", "mean slowdown, sojourn / size"),
    Column("slowdown_p50", "Float64", "ratio", "median slowdown"),
    Column("slowdown_p99", "Float64", "ratio", "99th percentile of slowdown"),
    Column("slowdown_max", "Float64", "ratio", "largest slowdown"),
    Column(
        "mst_class_<c>",
        "Float64",
        "time units",
        "mean sojourn time of weight class c (only with a weight_class column)",
    ),
    Column("makespan", "Float64", "time units", "last completion time"),
    Column("events", "Float64", "events", "events the simulation processed"),
    Column("sim_seconds", "Float64", "s (wall)", "wall-clock time of the simulation"),
)

UNITS = EngineUnits("time units of the workload", "s", "fraction of the server", "size", "job size")


def summary_lines(s: dict[str, float]) -> list[tuple[str, str]]:
    """``schedlab simulate``'s summary of one run (label, value), before the wall time."""
    rows = [
        ("jobs", f"{int(s['n_jobs'])}"),
        ("mean sojourn time", f"{s['mst']:.6g}"),
        ("slowdown mean", f"{s['slowdown_mean']:.6g}"),
        ("slowdown p50", f"{s['slowdown_p50']:.6g}"),
        ("slowdown p99", f"{s['slowdown_p99']:.6g}"),
        ("slowdown max", f"{s['slowdown_max']:.6g}"),
    ]
    rows += [
        (f"MST weight class {k.rsplit('_', 1)[1]}", f"{v:.6g}") for k, v in s.items() if k.startswith("mst_class_")
    ]
    return rows + [("events", f"{int(s['events'])}")]
