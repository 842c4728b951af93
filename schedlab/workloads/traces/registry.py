"""Trace readers by name. Each reader module has ``NAME``, ``VERSION`` (bump it
when parsing changes: it keys the cache) and ``read(path, *, on_bad_line,
use_cache, **options) -> Trace``.

A user's reader is the same seam as a function: ``reader = "mine.py:read_log"``
names ``read_log(path, **options) -> polars.DataFrame | Trace`` (see
``schedlab.api.workloads``); it is given ``on_bad_line`` only if it declares
it. The sweep planner resolves the reference against the spec's folder and
passes it here as an absolute ``/path/mine.py:read_log``."""

from __future__ import annotations

import importlib
from typing import Any

from schedlab.errors import UserError, did_you_mean
from schedlab.usercode import is_reference
from schedlab.workloads.traces.base import Trace

#: Columns of a reader's table that must hold finite numbers (times, sizes, widths).
TIMED_COLUMNS = ("submit", "size", "runtime", "duration", "requested_time", "procs")


class _UserReader:
    """A user's reader function behind the reader-module interface."""

    def __init__(self, ref: str, where: str) -> None:
        from schedlab.usercode import resolve

        self.code = resolve(ref, "/", where)
        self.fn = self.code.load()
        self.where = where
        if not callable(self.fn):
            raise UserError(f"{where}: {ref} is not a function (a reader is fn(path, **options) -> job table)")

    def check_options(self, options: dict[str, Any], where: str) -> None:
        from schedlab.params import check_params

        check_params(self.fn, options, where, skip=1, what="reader", sep="_")

    def read(self, path: str, *, on_bad_line: str = "error", use_cache: bool = True, **options: Any) -> Trace:
        import polars as pl

        from schedlab.params import declared

        if "on_bad_line" in declared(self.fn, 1):
            options = {**options, "on_bad_line": on_bad_line}
        try:
            out = self.fn(path, **options)
        except UserError:
            raise
        except Exception as err:  # noqa: BLE001 - the user's reader refused its input: one line, as run would say
            raise UserError(f"{self.where}: {self.code.ref} failed on {path}: {type(err).__name__}: {err}") from None
        trace = out if isinstance(out, Trace) else None
        if trace is None and not isinstance(out, pl.DataFrame):
            raise UserError(f"{self.where}: {self.code.ref} returned {type(out).__name__}, not a polars DataFrame")
        jobs = trace.jobs if trace is not None else out
        for column in TIMED_COLUMNS:  # a time or size out of a float's range (reader options: a unit of 1e308)
            if column in jobs.columns and jobs[column].dtype.is_numeric():
                values = jobs[column].cast(pl.Float64)
                bad = (~values.is_finite()).arg_true()
                if len(bad):
                    raise UserError(
                        f"{self.where}: {self.code.ref} gave {path} a {column} of {values[int(bad[0])]} "
                        f"(row {int(bad[0])}): times and sizes must be finite"
                    )
        return trace if trace is not None else Trace(jobs, {}, {})


#: reader name -> module (imported on first use)
READERS = {
    "swf": "schedlab.workloads.traces.swf",
    "swim": "schedlab.workloads.traces.swim",
    "squid": "schedlab.workloads.traces.squid",
    "bu98": "schedlab.workloads.traces.bu98",
    "google": "schedlab.workloads.traces.google",
    "batsim": "schedlab.workloads.traces.batsim",
}


def reader_module(name: str, where: str = "reader"):
    if is_reference(name):
        return _UserReader(name, where)
    try:
        return importlib.import_module(READERS[name])
    except KeyError:
        raise UserError(
            f"{where}: unknown trace reader {name!r}; choose from: {', '.join(READERS)}{did_you_mean(name, READERS)}"
        ) from None


def read_trace(reader: str, path: str, **options: Any) -> Trace:
    """Parse (or fetch from the cache) a trace file with the named reader."""
    return reader_module(reader).read(path, **options)
