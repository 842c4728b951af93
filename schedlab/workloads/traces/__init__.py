"""Trace readers: raw trace files -> `Trace` (a canonical job table + metadata).

Each reader module exposes ``read(path, *, on_bad_line="error", **options) ->
Trace`` and registers itself in `READERS` (see `registry.py` beside it)."""
