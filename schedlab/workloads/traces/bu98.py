"""BU 1998 proxy trace reader (webcachesim ``seq id size`` form), plain or gzip.

The Boston University CS 1998 proxy trace as converted by webcachesim's
``rewrite_trace_http.cc`` (see ../shared/data/web-proxy/bu98-proxy-trace/
PROVENANCE.md): one request per line, three whitespace-separated integers::

    seq object_id size_bytes        e.g.  2 1 7454

``seq`` is a running request counter (1, 2, 3, ...), **not a time**: the real
request times were lost in the conversion; only the order, the object
identity and the response size are known.

Output columns (rows in ``seq`` order, stable):

=========  =======  ======================================================
job_id     Int64    ``seq`` (must be unique)
order      Int64    0, 1, 2, ...: the request's position in the output
object_id  Int64    the requested object (dense ids from first appearance)
size       Float64  response bytes: the job's work for the queue engine
=========  =======  ======================================================

There is deliberately **no submit column**: a sequence number is not an
arrival time, and using it as one would silently fix the offered load. A
sweep must attach an arrival process (``transforms.attach_arrivals``: Poisson
arrivals, in this row order, at the rate giving the wanted load) before the
queue engine can replay the trace; ``meta["needs_arrivals"]`` is True to say
so.

Cleaning rule (count in ``Trace.counts``): ``dropped_small`` -- requests with
``size < min_bytes`` (option, default 1) are dropped: a zero-size job is
meaningless for the queue engine. (This file has none: its smallest size is
1 byte.) ``order`` is numbered after dropping.

Other counts: ``lines``, ``blank_lines``, ``skipped_bad_lines``, ``jobs``,
``out_of_order`` (lines whose seq is smaller than an earlier line's; moved
by the sort). Always ``lines == blank_lines + skipped_bad_lines + jobs +
dropped_small``. ``meta["objects"]`` is the number of distinct objects kept.

Bad lines (``on_bad_line``): not exactly 3 fields; a field that is not an
(ASCII) integer; a negative size; a seq that repeats an earlier line's. All
are reported in line order (with ``on_bad_line="error"``: the first one).
Numbers are converted in bulk by polars at the end, not by int() per line.
"""

from __future__ import annotations

from array import array
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from schedlab.errors import UserError
from schedlab.workloads.traces.base import BadLines, Trace, min_bytes_options, open_lines, read_file_trace, short

NAME = "bu98"
VERSION = 1

FIELDS = ("seq", "object_id", "size")
LAYOUT = "seq object_id size"


def read(path: str | Path, *, on_bad_line: str = "error", use_cache: bool = True, **options: Any) -> Trace:
    """Parse a webcachesim ``seq id size`` trace; see the module docstring."""
    return read_file_trace(NAME, VERSION, path, on_bad_line, use_cache, min_bytes_options(NAME, options), _parse)


def _parse(p: Path, on_bad_line: str, opts: dict[str, Any], all_opts: dict[str, Any]) -> Trace:
    bad = BadLines(p, on_bad_line)
    rows: list[str] = []
    linenos = array("q")
    add_row, add_line = rows.append, linenos.append
    problems: dict[int, str] = {}  # line number -> message, reported in line order at the end
    blank_lines = 0
    lineno = 0
    for lineno, line in open_lines(p):
        f = line.split()
        if len(f) == 3:
            add_row(" ".join(f))
            add_line(lineno)
        elif f:
            problems[lineno] = f"expected 3 integer fields ({LAYOUT}), got {len(f)}"
        else:
            blank_lines += 1

    lines = np.array(linenos, dtype=np.int64)
    raw = pl.Series("row", rows, dtype=pl.String).str.split_exact(" ", 2).struct.unnest()
    cols = [raw[c].cast(pl.Int64, strict=False) for c in raw.columns]
    nulls = np.column_stack([c.is_null().to_numpy() for c in cols]) if rows else np.zeros((0, 3), dtype=bool)
    for i in np.flatnonzero(nulls.any(axis=1)):
        k = int(np.argmax(nulls[i]))
        problems[int(lines[i])] = f"field {k + 1} ({FIELDS[k]}) must be an integer, got {short(rows[i].split(' ')[k])}"
    ok = np.logical_not(nulls.any(axis=1))
    seq = cols[0].fill_null(0).to_numpy() if rows else np.zeros(0, dtype=np.int64)
    size = cols[2].fill_null(0).to_numpy() if rows else np.zeros(0, dtype=np.int64)
    for i in np.flatnonzero(ok & (size < 0)):
        problems[int(lines[i])] = f"field 3 (size) must be >= 0, got {int(size[i])}"
        ok[i] = False
    # a repeated seq: the later line is bad
    cand = np.flatnonzero(ok)
    by_seq = cand[np.argsort(seq[cand], kind="stable")]
    repeat = np.flatnonzero(seq[by_seq][1:] == seq[by_seq][:-1]) + 1
    if len(repeat):
        first_pos = np.searchsorted(seq[by_seq], seq[by_seq][repeat], side="left")
        for pos, fp in zip(repeat, first_pos):
            i = by_seq[pos]
            problems[int(lines[i])] = f"seq {int(seq[i])} repeats the request on line {int(lines[by_seq[fp]])}"
            ok[i] = False
    del rows
    bad.report(problems)  # with on_bad_line="error": raises at the first
    if not ok.any():
        raise bad.nothing_valid("request")

    keep = ok & (size >= opts["min_bytes"])
    valid = seq[ok]
    counts = {
        "lines": lineno,
        "blank_lines": blank_lines,
        "skipped_bad_lines": bad.skipped,
        "dropped_small": int(np.count_nonzero(ok & ~keep)),
        "jobs": int(np.count_nonzero(keep)),
        "out_of_order": int(np.count_nonzero(valid[1:] < np.maximum.accumulate(valid)[:-1])),
    }
    if counts["jobs"] == 0:
        raise UserError(
            f"{p}: every request was dropped by min_bytes={opts['min_bytes']} ({counts['dropped_small']} requests)"
        )
    idx = np.flatnonzero(keep)
    if np.any(seq[idx][1:] < seq[idx][:-1]):
        idx = idx[np.argsort(seq[idx], kind="stable")]
    object_id = cols[1].fill_null(0).to_numpy()[idx]
    jobs = pl.DataFrame(
        [
            pl.Series("job_id", seq[idx], dtype=pl.Int64),
            pl.Series("order", np.arange(len(idx), dtype=np.int64), dtype=pl.Int64),
            pl.Series("object_id", object_id, dtype=pl.Int64),
            pl.Series("size", size[idx].astype(np.float64), dtype=pl.Float64),
        ]
    )
    meta: dict[str, Any] = {
        "reader": NAME,
        "version": VERSION,
        "source": str(p),
        "options": all_opts,
        "format": f"webcachesim request trace ({LAYOUT}); order only, no times",
        "needs_arrivals": True,
        "size_unit": "bytes",
        "objects": int(len(np.unique(object_id))),
    }
    if bad.first_skipped:
        meta["first_skipped"] = bad.first_skipped
    return Trace(jobs, meta, counts)
