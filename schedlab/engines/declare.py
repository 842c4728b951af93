"""The small declaration objects an :class:`~schedlab.engines.base.Engine`
is made of, beside its ``[system]`` schema (``schedlab.sim.system``) and its
job table (``schedlab.sim.system.jobs.JobColumns``): the columns of its
summary rows (``Column``, written into docs/columns.md by
``schedlab.docs_columns``) and the units its figures and views speak in
(``EngineUnits``). Every engine -- the four built-in ones and a
researcher's own (``engine = "my_engine.py:MyEngine"``) -- declares them the
same way, so nothing outside an engine keeps a table keyed by its name.

``lazy`` resolves the declarations an engine names by a string
(``"module:attr"``) to keep the registry light to import: its checks, its
schedule recorder and its Gymnasium environment are imported only when used.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Column:
    """One result column: ``name`` ("<c>" / "<r>" stand for a weight class / resource name)."""

    name: str
    dtype: str
    unit: str
    meaning: str


@dataclass(frozen=True)
class EngineUnits:
    """What an engine's figures and schedule views call its time and its load, declared
    with its columns: a figure labels an axis in these, never in another engine's units."""

    time: str  # the unit of time under a generated workload
    trace_time: str  # the unit of time under a trace (the trace's own clock)
    load: str  # what an offered load (``load``, ``arrival_load``) is a fraction of
    color_by: str  # the job column a schedule view colours by unless told (``--color-by``)
    color_meaning: str  # what that colour says, for the view's legend title


def lazy(ref: Any) -> Any:
    """``ref`` itself, or, for a string ``"module:attr"``, that attribute
    imported now (None for "" or None: the engine declares nothing there)."""
    if ref is None or ref == "":
        return None
    if not isinstance(ref, str):
        return ref
    module, _, attr = ref.partition(":")
    obj: Any = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


__all__ = ["Column", "EngineUnits", "lazy"]
