"""A job table as numpy columns: what a built-in workload kind hands an engine
that reads arrays, without building a polars frame per instance.

Why: a sweep of small instances (issue 42: 50-job queue workloads) spent most
of its time per configuration building a polars DataFrame from a generator's
numpy arrays and reading the same arrays back out of it (the engine, the
warm-up cut and the per-job rows all want numpy). `JobArrays` holds the
generator's arrays as they are (read-only, as polars' ``to_numpy`` gives
them), answers the few questions the task asks of a job table (``columns``,
``height``, a column by name) and builds the polars frame only when something
asks for one (`to_polars`: the very frame the kind built before, with its
schema). The values an engine reads are the same arrays either way, so the
rows are the same to the bit (tests/test_rows_golden.py).

Who gets one: only an engine that declares it reads arrays
(``Engine.job_arrays``: the queue engine) from a built-in kind that can draw
them (``WorkloadKind.build_arrays``: ``synthetic``), through
``schedlab.engines.instance.build_workload(..., arrays=True)`` -- a sweep's
task. Everyone else (a user's generator, engine or view, ``schedlab
simulate``, ``run_planned``) still gets the polars frame; `column` and
`frame` read either.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import polars as pl


class JobArrays:
    """A job table's columns as numpy arrays of equal length, in table order
    (see the module docstring). ``schema``: the polars dtypes `to_polars`
    builds the frame with (the kind's own schema)."""

    __slots__ = ("_columns", "_frame", "_schema", "height")

    def __init__(self, columns: Mapping[str, np.ndarray], schema: Mapping[str, Any] | None = None) -> None:
        for a in columns.values():
            a.flags.writeable = False  # as polars' to_numpy gives them: nobody writes into a workload
        self._columns = dict(columns)
        self._schema = schema
        self._frame: pl.DataFrame | None = None
        #: The number of jobs (rows), as ``pl.DataFrame.height``.
        self.height = len(next(iter(self._columns.values()))) if self._columns else 0

    def __len__(self) -> int:
        """The number of jobs, as ``len`` of a polars frame."""
        return self.height

    @property
    def columns(self) -> list[str]:
        """Column names in table order (as ``pl.DataFrame.columns``)."""
        return list(self._columns)

    def column(self, name: str) -> np.ndarray:
        """Column ``name`` (read-only); a missing name is a `KeyError`."""
        return self._columns[name]

    def to_polars(self) -> pl.DataFrame:
        """The polars job table of these columns, built once: what the kind's
        frame path returns for the same draw."""
        if self._frame is None:
            import polars as pl

            self._frame = pl.DataFrame(self._columns, schema=self._schema)
        return self._frame


def column(jobs: Any, name: str) -> np.ndarray:
    """Column ``name`` of a job table (`JobArrays` or polars DataFrame) as numpy."""
    if isinstance(jobs, JobArrays):
        return jobs.column(name)
    out: np.ndarray = jobs[name].to_numpy()
    return out


def frame(jobs: Any) -> pl.DataFrame:
    """A job table (`JobArrays` or polars DataFrame) as a polars DataFrame."""
    if isinstance(jobs, JobArrays):
        return jobs.to_polars()
    result: pl.DataFrame = jobs
    return result


__all__ = ["JobArrays", "column", "frame"]
