"""The queue engine's canonical job table's columns, declared once and
light to import (no polars): ``schedlab.workloads.schema`` validates tables
against them and the queue engine's registry entry declares them
(``schedlab.sim.system.jobs.QUEUE_JOBS``)."""

from __future__ import annotations

QUEUE_COLUMNS = ("job_id", "submit", "size", "estimate", "weight")
REQUIRED_COLUMNS = ("job_id", "submit", "size")
OPTIONAL_COLUMNS = ("estimate", "weight")

__all__ = ["OPTIONAL_COLUMNS", "QUEUE_COLUMNS", "REQUIRED_COLUMNS"]
