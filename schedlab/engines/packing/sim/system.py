"""The packing engine's ``[system]`` declaration: L servers of a capacity, the
decision epoch, the sampling interval; the capacity list's rule against the job
table's resources."""

from __future__ import annotations

from schedlab.sim.system.declarations import MAX_SECONDS, MAX_UNITS
from schedlab.sim.system.schema import (
    Columns,
    Rule,
    SystemSchema,
    integer,
    is_number,
    number,
    numbers_per_resource,
)

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
    if is_number(cap) or len(cap) == 1:
        return None
    cols = columns()
    names = resources(cols) if cols is not None else []
    if not names or len(cap) == len(names):  # unknown, or no resources at all (the engine says so)
        return None
    if names == [""]:
        return "a single number (the job table has one resource, 'demand')"
    return f"one number or a list of {len(names)} (the job table has {len(names)} resources: {', '.join(names)})"


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
