"""Squid native access.log reader (the IRCache/NLANR format), plain or gzip.

Format: one request per line, whitespace-separated::

    time elapsed client action/code bytes method URL ident hierarchy/from type
    1583861755.583   2415 192.168.206.1 TCP_MISS/200 171600 GET https://... - PINNED/... text/html

``time`` is the Unix epoch in seconds with milliseconds, ``elapsed`` the
service time in ms, ``bytes`` the bytes sent to the client (headers
included). A line needs at least 10 fields; only fields 1, 2, 4, 5 and 6 are
read, at fixed positions (so a URL containing spaces, which the native format
does not produce, does not shift them; a line with fewer than 10 fields is
bad). Every request is one job.

Output columns (rows sorted by submit, stable -- the file need not be sorted;
ties keep file order):

===========  =======  ====================================================
job_id       Int64    the request's line number in the file (unique)
submit       Float64  ``time``: Unix epoch seconds
size         Float64  ``bytes``: the job's work for the queue engine
elapsed      Int64    ``elapsed``: Squid's service time in ms
http_status  Int64    the code after ``/`` in field 4 (200, 304, 0 for NONE/000)
action       String   the result code before ``/`` (TCP_MISS, TCP_HIT, ...)
method       String   the request method (GET, POST, CONNECT, ...)
===========  =======  ====================================================

Dropped from the table: client address, URL, ident, hierarchy/peer and
content type (not needed to replay the queue; the client addresses of the
IRCache logs are anonymised anyway).

Cleaning rule (count in ``Trace.counts``): ``dropped_small`` -- requests with
``bytes < min_bytes`` (option, default 1) are dropped: a zero-size job is
meaningless for the queue engine (it would complete the instant it arrives
and only inflate the job count). ``min_bytes=0`` keeps every request.

Other counts: ``lines`` (physical lines), ``blank_lines``,
``skipped_bad_lines``, ``jobs``, ``out_of_order`` (lines whose time is
earlier than an earlier line's; they are moved by the sort). Always
``lines == blank_lines + skipped_bad_lines + jobs + dropped_small``.

Bad lines (``on_bad_line``): fewer than 10 fields; time not a finite
number; elapsed or bytes not an integer; field 4 without an integer
``/code``; a negative byte count. All bad lines are reported in line order
(with ``on_bad_line="error"``: the first one).

Speed: Python only splits each line and keeps a compact row of the five
fields used; the numbers are converted column by column by polars (Rust)
at the end -- several times faster than ``float()``/``int()`` per field.
A number is what polars' strict cast accepts: ASCII decimal (times also
with a fraction/exponent), optional sign; no ``_`` separators, no non-ASCII
digits.
"""

from __future__ import annotations

from array import array
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from schedlab.errors import UserError
from schedlab.workloads.traces.base import BadLines, Trace, min_bytes_options, open_lines, read_file_trace, short

NAME = "squid"
VERSION = 1

MIN_FIELDS = 10
LAYOUT = "time elapsed client action/code bytes method URL ident hierarchy/from type"


def read(path: str | Path, *, on_bad_line: str = "error", use_cache: bool = True, **options: Any) -> Trace:
    """Parse a Squid native access.log (plain or gzip); see the module docstring."""
    return read_file_trace(NAME, VERSION, path, on_bad_line, use_cache, min_bytes_options(NAME, options), _parse)


def _parse(p: Path, on_bad_line: str, opts: dict[str, Any], all_opts: dict[str, Any]) -> Trace:
    bad = BadLines(p, on_bad_line)
    # Python does the line splitting; numbers are converted afterwards, column
    # by column, by polars (Rust), which is much faster than float()/int() per
    # field. Each row keeps the five fields we use: "time elapsed code bytes method".
    rows: list[str] = []
    job_ids = array("q")
    add_row, add_id = rows.append, job_ids.append
    problems: dict[int, str] = {}  # line number -> message, reported in line order at the end
    blank_lines = 0
    lineno = 0
    for lineno, line in open_lines(p):
        f = line.split()
        if len(f) >= MIN_FIELDS:
            add_row(f"{f[0]} {f[1]} {f[3]} {f[4]} {f[5]}")
            add_id(lineno)
        elif f:
            problems[lineno] = f"expected >= {MIN_FIELDS} fields ({LAYOUT}), got {len(f)}"
        else:
            blank_lines += 1

    cols = _columns(rows)
    ids = np.array(job_ids, dtype=np.int64)
    for row, message in _bad_rows(rows, cols).items():
        problems[int(ids[row])] = message
    del rows
    bad.report(problems)  # with on_bad_line="error": raises at the first
    ok = (
        ~np.isin(ids, np.fromiter(problems, dtype=np.int64, count=len(problems)))
        if problems
        else np.ones(len(ids), dtype=bool)
    )
    if not ok.any():
        raise bad.nothing_valid("request")

    submit = cols["submit"].to_numpy()
    size = cols["bytes"].to_numpy()
    keep = ok & (size >= opts["min_bytes"])
    counts = {
        "lines": lineno,
        "blank_lines": blank_lines,
        "skipped_bad_lines": bad.skipped,
        "dropped_small": int(np.count_nonzero(ok & ~keep)),
        "jobs": int(np.count_nonzero(keep)),
    }
    valid = submit[ok]
    counts["out_of_order"] = int(np.count_nonzero(valid[1:] < np.maximum.accumulate(valid)[:-1]))
    if counts["jobs"] == 0:
        raise UserError(
            f"{p}: every request was dropped by min_bytes={opts['min_bytes']} ({counts['dropped_small']} requests)"
        )
    jobs = pl.DataFrame(
        [
            pl.Series("job_id", ids, dtype=pl.Int64),
            cols["submit"],
            cols["bytes"].cast(pl.Float64).alias("size"),
            cols["elapsed"],
            cols["http_status"],
            cols["action"],
            cols["method"],
        ]
    )
    if not keep.all():
        jobs = jobs.filter(pl.Series(keep))
    submit = submit[keep]
    if np.any(submit[1:] < submit[:-1]):
        jobs = jobs[np.argsort(submit, kind="stable")]

    meta: dict[str, Any] = {
        "reader": NAME,
        "version": VERSION,
        "source": str(p),
        "options": all_opts,
        "format": f"Squid native access.log ({LAYOUT})",
        "time_origin": "Unix epoch (s)",
        "size_unit": "bytes",
    }
    if bad.first_skipped:
        meta["first_skipped"] = bad.first_skipped
    return Trace(jobs, meta, counts)


def _columns(rows: list[str]) -> dict[str, pl.Series]:
    """Typed columns from the "time elapsed code bytes method" rows; a field
    that is not a number (or a code without "/status") becomes null."""
    raw = pl.Series("row", rows, dtype=pl.String).str.split_exact(" ", 4).struct.unnest()
    code = raw["field_2"].str.split_exact("/", 1).struct.unnest()
    return {
        "submit": raw["field_0"].cast(pl.Float64, strict=False).alias("submit"),
        "elapsed": raw["field_1"].cast(pl.Int64, strict=False).alias("elapsed"),
        "http_status": code["field_1"].cast(pl.Int64, strict=False).alias("http_status"),
        "bytes": raw["field_3"].cast(pl.Int64, strict=False).alias("bytes"),
        "action": code["field_0"].alias("action"),
        "method": raw["field_4"].alias("method"),
    }


def _bad_rows(rows: list[str], cols: dict[str, pl.Series]) -> dict[int, str]:
    """{row: message} for rows whose time, elapsed, code or bytes is unusable
    (the first failing field, in file order, is named)."""
    checks = [  # (failed mask, token index in the row, file field, what it must be)
        (~np.isfinite(cols["submit"].to_numpy()), 0, "field 1 (time)", "a finite number"),
        (cols["elapsed"].is_null().to_numpy(), 1, "field 2 (elapsed)", "an integer (ms)"),
        (
            cols["http_status"].is_null().to_numpy(),
            2,
            "field 4 (action/code)",
            "an action/status code like TCP_MISS/200",
        ),
        ((cols["bytes"] < 0).fill_null(True).to_numpy(), 3, "field 5 (bytes)", "an integer >= 0"),
    ]
    failed = np.zeros(len(rows), dtype=bool)
    for mask, *_ in checks:
        failed |= mask
    messages: dict[int, str] = {}
    for row in np.flatnonzero(failed):
        tokens = rows[row].split(" ")
        for mask, k, field, what in checks:
            if mask[row]:
                messages[int(row)] = f"{field} must be {what}, got {short(tokens[k])}"
                break
    return messages
