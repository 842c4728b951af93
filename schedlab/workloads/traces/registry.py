"""Trace readers by name. Each reader module has ``NAME``, ``VERSION`` (bump it
when parsing changes: it keys the cache) and ``read(path, *, on_bad_line,
use_cache, **options) -> Trace``."""

from __future__ import annotations

import importlib
from typing import Any

from schedlab.errors import UserError
from schedlab.workloads.traces.base import Trace

#: reader name -> module (imported on first use)
READERS = {
    "swf": "schedlab.workloads.traces.swf",
    "swim": "schedlab.workloads.traces.swim",
    "squid": "schedlab.workloads.traces.squid",
    "bu98": "schedlab.workloads.traces.bu98",
    "google": "schedlab.workloads.traces.google",
}


def reader_module(name: str, where: str = "reader"):
    try:
        return importlib.import_module(READERS[name])
    except KeyError:
        raise UserError(f"{where}: unknown trace reader {name!r}; choose from: {', '.join(READERS)}") from None


def read_trace(reader: str, path: str, **options: Any) -> Trace:
    """Parse (or fetch from the cache) a trace file with the named reader."""
    return reader_module(reader).read(path, **options)
