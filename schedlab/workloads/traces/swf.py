"""Standard Workload Format (SWF) reader: Parallel Workloads Archive logs and
the Lublin-Feitelson model output files.

Format
------
One job per line, 18 whitespace-separated numeric fields (-1 = unknown);
lines starting with ``;`` are header comments (``; Key: value``), blank lines
are ignored. Output columns, in SWF field order:

====  ===============  =======  ==============================================
 #    column           dtype    SWF field
====  ===============  =======  ==============================================
 1    job_id           Int64    job number (must be unique)
 2    submit           Float64  submit time, s from the header's UnixStartTime
 3    wait             Float64  wait time (s)
 4    runtime          Float64  run time (s)
 5    procs            Int64    allocated processors -- after cleaning, below
 6    avg_cpu          Float64  average CPU time used per processor (s)
 7    used_mem         Float64  average used memory per processor (KB)
 8    req_procs        Int64    requested processors
 9    requested_time   Float64  requested (estimated) time (s) -- cleaned
10    req_mem          Float64  requested memory per processor (KB)
11    status           Int64    1 completed, 0 failed, 5 cancelled, -1 unknown
12    user             Int64    user id
13    group            Int64    group id
14    executable       Int64    executable (application) number
15    queue            Int64    queue number (Lublin files: job type)
16    partition        Int64    partition number
17    preceding_job    Int64    preceding job number
18    think_time       Float64  think time from the preceding job (s)
 -    size             Float64  = runtime: the work the queue engine replays
====  ===============  =======  ==============================================

Unknown values stay -1 (as in the file) except where a cleaning rule fills
them. Rows are sorted by submit (stable). Memory is Float64 because it is an
average; every other non-time field must be an integer, else the line is bad.

Cleaning (each rule has a count in ``Trace.counts``; the drop rules are
applied in this order and a job is counted by the first rule that drops it)
--------------------------------------------------------------------------
1. ``dropped_cancelled`` -- only with option ``drop_cancelled=True``: every
   job with status 5 (cancelled) is dropped. By default cancelled jobs are
   kept when they ran (run time > 0; they used the machine, so they are part
   of the load) and otherwise fall to rule 2.
2. ``dropped_runtime_nonpositive`` -- run time <= 0 (including -1, unknown)
   is dropped: such a job carries no work to replay. Option
   ``keep_nonpositive_runtime=True`` keeps them (size <= 0; the caller then
   owns the consequences).
3. ``dropped_no_procs`` -- no usable processor count: allocated (field 5)
   <= 0 and requested (field 8) <= 0.
4. ``procs_from_requested`` -- kept jobs whose allocated processors are
   unknown (<= 0) get ``procs`` = requested processors (field 8).
5. ``requested_time_from_runtime`` -- kept jobs whose requested time is
   unknown (<= 0, normally -1) get ``requested_time`` = run time, when the
   run time is > 0. EASY backfilling needs a user estimate for every job;
   without one it cannot plan reservations. Using the actual run time is the
   "perfect estimate" convention (Mu'alem & Feitelson 2001), so the counted
   jobs are replayed with exact estimates -- check this count before
   drawing conclusions about estimate accuracy (e.g. the Lublin files have
   no estimates at all: every job is filled).

Informative counts (no cleaning): ``lines`` (physical lines), ``header_lines``
(``;`` lines), ``blank_lines``, ``runtime_unknown`` (job lines with run time
-1) and ``status_cancelled`` (job lines with status 5), both counted over the
well-formed job lines before any rule; ``cancelled_kept``. Always
``lines == header_lines + blank_lines + skipped_bad_lines + jobs +
dropped_cancelled + dropped_runtime_nonpositive + dropped_no_procs``.

Bad lines (``on_bad_line``): a job line without exactly 18 fields, with a
non-numeric or non-finite field, with a fractional value in an integer field,
or repeating an earlier job number. All bad lines are reported in line order
(with ``on_bad_line="error"``: the first one). Numbers: ASCII decimal with
optional sign, fraction and exponent (no ``_`` separators).

Speed: Python only splits the lines; the numbers are converted in bulk at
the end (pyarrow's CSV parser on the space-joined job lines, polars casts
when a token is not a number), not by float() per field.

Header (``Trace.meta``)
-----------------------
``meta["header"]``: every ``; Key: value`` comment as ``{Key: value}``;
other comment lines (indented, or not ``Key: value``) continue the previous
value (``\\n``-joined), or before any key go to ``meta["header_comments"]``;
a key given more than once (``Queue``, ``Information``,
``Note``) maps to the list of its values. ``MaxNodes``, ``MaxProcs``,
``MaxJobs``, ``MaxRecords`` (and ``MaxRuntime``, ``MaxQueues``,
``MaxPartitions``, ``UnixStartTime``, ``TimeZone``) are ints when the value is
an int; otherwise the string is kept (CTC: ``"338 (batch partition; 512
total)"``) and ``meta["header_ints"]`` records its leading int (338).
``meta["machine_procs"]``: MaxProcs, else MaxNodes (leading ints), else None.
"""

from __future__ import annotations

import re
from array import array
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.csv as pa_csv

from schedlab.errors import UserError
from schedlab.workloads.traces.base import BadLines, Trace, merge_options, open_lines, read_file_trace, short

NAME = "swf"
VERSION = 1

OPTIONS: dict[str, bool] = {"keep_nonpositive_runtime": False, "drop_cancelled": False}

FIELDS = ("job_id", "submit", "wait", "runtime", "procs", "avg_cpu", "used_mem", "req_procs",
          "requested_time", "req_mem", "status", "user", "group", "executable", "queue",
          "partition", "preceding_job", "think_time")
NFIELDS = len(FIELDS)
FLOAT_FIELDS = frozenset({"submit", "wait", "runtime", "avg_cpu", "used_mem", "requested_time",
                          "req_mem", "think_time"})
INT_IDX = [i for i, f in enumerate(FIELDS) if f not in FLOAT_FIELDS]
INT_HEADER_KEYS = ("MaxNodes", "MaxProcs", "MaxJobs", "MaxRecords", "MaxRuntime", "MaxQueues",
                   "MaxPartitions", "UnixStartTime", "TimeZone")
DROP_COUNTS = ("dropped_cancelled", "dropped_runtime_nonpositive", "dropped_no_procs")

# "; Key: value" -- an indented comment line (more than 3 spaces after ";") or
# one whose first word is not followed by ": " (e.g. "; http://...") continues
# the previous key
_KEY_LINE = re.compile(r"^\s*;\s{0,3}([A-Za-z][\w-]*)\s*:(?=\s|$)\s*(.*?)\s*$")
_LEADING_INT = re.compile(r"^[+-]?\d+")
_I = {name: i for i, name in enumerate(FIELDS)}


def _check_options(options: dict[str, Any]) -> dict[str, Any]:
    out = merge_options(NAME, OPTIONS, options)
    for key, value in options.items():
        if not isinstance(value, bool):
            raise UserError(f"{key}: must be true or false; got {value!r}")
    return out


def _header_dict(entries: list[tuple[str, list[str]]]) -> tuple[dict[str, Any], dict[str, int]]:
    header: dict[str, Any] = {}
    ints: dict[str, int] = {}
    for key, texts in entries:
        value: Any = "\n".join(t for t in texts if t)
        if key in INT_HEADER_KEYS:
            m = _LEADING_INT.match(value)
            if m:
                ints.setdefault(key, int(m.group()))
                if m.end() == len(value):
                    value = int(value)
        if key in header:
            prev = header[key]
            header[key] = (prev if isinstance(prev, list) else [prev]) + [value]
        else:
            header[key] = value
    return header, ints


def read(path: str | Path, *, on_bad_line: str = "error", use_cache: bool = True,
         **options: Any) -> Trace:
    """Parse an SWF file (plain or gzip); see the module docstring."""
    return read_file_trace(NAME, VERSION, path, on_bad_line, use_cache, _check_options(options), _parse)


def _parse(p: Path, on_bad_line: str, opts: dict[str, Any], all_opts: dict[str, Any]) -> Trace:
    bad = BadLines(p, on_bad_line)
    rows: list[str] = []   # job lines, fields joined by single spaces
    linenos = array("q")
    add_row, add_line = rows.append, linenos.append
    problems: dict[int, str] = {}  # line number -> message, reported in line order at the end
    entries: list[tuple[str, list[str]]] = []
    orphans: list[str] = []
    header_lines = blank_lines = 0
    lineno = 0
    for lineno, line in open_lines(p):
        parts = line.split()
        if not parts:
            blank_lines += 1
            continue
        if parts[0][0] == ";":
            header_lines += 1
            m = _KEY_LINE.match(line)
            if m:
                entries.append((m.group(1), [m.group(2)]))
            else:
                text = line.strip()[1:].strip()
                if text:
                    (entries[-1][1] if entries else orphans).append(text)
            continue
        if len(parts) != NFIELDS:
            problems[lineno] = f"expected {NFIELDS} numeric fields, got {len(parts)}"
            continue
        add_row(" ".join(parts))
        add_line(lineno)

    table, row_problems = _to_floats(rows)
    del rows
    lines = np.array(linenos, dtype=np.int64)
    for row, message in row_problems.items():
        problems[int(lines[row])] = message
    keep = np.ones(len(lines), dtype=bool)
    keep[list(row_problems)] = False
    table, lines = table[keep], lines[keep]
    for row, message in _bad_rows(table, lines).items():
        problems[int(lines[row])] = message
    bad.report(problems)  # with on_bad_line="error": raises at the first
    if problems:
        keep = ~np.isin(lines, np.fromiter(problems, dtype=np.int64, count=len(problems)))
        table, lines = table[keep], lines[keep]
    if len(lines) == 0:
        if bad.skipped:
            raise UserError(f"{p}: no valid job lines; {bad.skipped} bad lines skipped, "
                            f"the first: {bad.first_skipped}")
        what = "only header comments" if header_lines else "empty file"
        raise UserError(f"{p}: no job lines ({what})")

    runtime = table[:, _I["runtime"]]
    alloc = table[:, _I["procs"]]
    req_procs = table[:, _I["req_procs"]]
    req_time = table[:, _I["requested_time"]]
    status = table[:, _I["status"]]

    counts: dict[str, int] = {
        "lines": lineno,
        "header_lines": header_lines,
        "blank_lines": blank_lines,
        "skipped_bad_lines": bad.skipped,
        "runtime_unknown": int(np.count_nonzero(runtime == -1)),
        "status_cancelled": int(np.count_nonzero(status == 5)),
    }
    drop = np.zeros(len(lines), dtype=bool)
    rule = (status == 5) if opts["drop_cancelled"] else np.zeros_like(drop)
    counts["dropped_cancelled"] = int(np.count_nonzero(rule))
    drop |= rule
    rule = ~drop & (runtime <= 0) if not opts["keep_nonpositive_runtime"] else np.zeros_like(drop)
    counts["dropped_runtime_nonpositive"] = int(np.count_nonzero(rule))
    drop |= rule
    procs = np.where(alloc > 0, alloc, req_procs)
    rule = ~drop & (procs <= 0)
    counts["dropped_no_procs"] = int(np.count_nonzero(rule))
    drop |= rule
    keep = ~drop

    fill_procs = keep & (alloc <= 0)
    counts["procs_from_requested"] = int(np.count_nonzero(fill_procs))
    fill_time = keep & (req_time <= 0) & (runtime > 0)
    counts["requested_time_from_runtime"] = int(np.count_nonzero(fill_time))
    counts["cancelled_kept"] = int(np.count_nonzero(keep & (status == 5)))
    table[:, _I["procs"]] = procs
    table[:, _I["requested_time"]] = np.where(fill_time, runtime, req_time)

    table = table[keep]
    counts["jobs"] = len(table)
    if len(table) == 0:
        raise UserError(f"{p}: every job was dropped by the cleaning rules "
                        f"({', '.join(f'{k} {counts[k]}' for k in DROP_COUNTS)})")
    submit = table[:, _I["submit"]]
    if np.any(submit[1:] < submit[:-1]):
        table = table[np.argsort(submit, kind="stable")]

    columns = []
    for i, name in enumerate(FIELDS):
        col = table[:, i]
        if name in FLOAT_FIELDS:
            columns.append(pl.Series(name, np.ascontiguousarray(col), dtype=pl.Float64))
        else:
            columns.append(pl.Series(name, col.astype(np.int64), dtype=pl.Int64))
    columns.append(pl.Series("size", np.ascontiguousarray(table[:, _I["runtime"]]), dtype=pl.Float64))
    jobs = pl.DataFrame(columns)

    header, header_ints = _header_dict(entries)
    machine = header_ints.get("MaxProcs", header_ints.get("MaxNodes"))
    meta: dict[str, Any] = {
        "reader": NAME,
        "version": VERSION,
        "source": str(p),
        "options": all_opts,
        "format": "SWF (Standard Workload Format), 18 fields",
        "header": header,
        "header_ints": header_ints,
        "machine_procs": machine,
        "time_origin": "UnixStartTime (header)",
    }
    if orphans:
        meta["header_comments"] = orphans
    if bad.first_skipped:
        meta["first_skipped"] = bad.first_skipped
    return Trace(jobs, meta, counts)


def _to_floats(rows: list[str]) -> tuple[np.ndarray, dict[int, str]]:
    """(n x 18 float table, {row: message} for rows with a non-numeric field).

    Fast path: pyarrow's C++ CSV parser on the space-joined rows; it fails as
    a whole if any token is not a number. Then polars (Rust) casts each column
    with nulls for bad tokens, which names the row and field. Both accept the
    same numbers: ASCII decimal with optional sign, fraction and exponent
    (plus nan/inf, which `_bad_rows` rejects); no ``_`` separators and no
    non-ASCII digits (Python's float() would take both)."""
    n = len(rows)
    if n == 0:
        return np.empty((0, NFIELDS)), {}
    names = [f"f{i}" for i in range(NFIELDS)]
    try:
        tbl = pa_csv.read_csv(
            pa.py_buffer(("\n".join(rows) + "\n").encode()),
            read_options=pa_csv.ReadOptions(column_names=names),
            parse_options=pa_csv.ParseOptions(delimiter=" ", quote_char=False, double_quote=False,
                                              escape_char=False, newlines_in_values=False,
                                              ignore_empty_lines=False),
            convert_options=pa_csv.ConvertOptions(column_types={c: pa.float64() for c in names},
                                                  null_values=[], strings_can_be_null=False,
                                                  quoted_strings_can_be_null=False))
        if tbl.num_rows == n:
            return np.column_stack([tbl.column(c).to_numpy() for c in names]), {}
    except pa.ArrowException:
        pass
    raw = pl.Series("row", rows, dtype=pl.String).str.split_exact(" ", NFIELDS - 1).struct.unnest()
    cols = [raw[c].cast(pl.Float64, strict=False) for c in raw.columns]
    nulls = np.column_stack([c.is_null().to_numpy() for c in cols])
    table = np.column_stack([c.to_numpy() for c in cols])
    problems: dict[int, str] = {}
    for i in np.flatnonzero(nulls.any(axis=1)):
        k = int(np.argmax(nulls[i]))
        problems[int(i)] = (f"expected {NFIELDS} numeric fields, got non-numeric field {k + 1} "
                            f"({FIELDS[k]}): {short(rows[i].split(' ')[k])}")
    return table, problems


def _bad_rows(table: np.ndarray, lines: np.ndarray) -> dict[int, str]:
    """{row: message} for rows with a non-finite value, a fractional or
    out-of-range value in an integer field, or a repeated job number."""
    messages: dict[int, str] = {}
    finite = np.isfinite(table)
    for row in np.flatnonzero(~finite.all(axis=1)):
        k = int(np.argmin(finite[row]))
        messages[int(row)] = (f"expected {NFIELDS} numeric fields, got non-finite field {k + 1} "
                              f"({FIELDS[k]}): {float(table[row, k])!r}")
    ints = table[:, INT_IDX]
    with np.errstate(invalid="ignore"):
        nonint_cell = (ints != np.floor(ints)) | (np.abs(ints) >= 2.0**53)
    nonint_cell &= np.isfinite(ints)
    for row in np.flatnonzero(nonint_cell.any(axis=1)):
        if int(row) in messages:
            continue
        k = INT_IDX[int(np.argmax(nonint_cell[row]))]
        messages[int(row)] = (f"expected an integer in field {k + 1} ({FIELDS[k]}), "
                              f"got {float(table[row, k])!r}")
    ok_mask = np.ones(len(lines), dtype=bool)
    ok_mask[list(messages)] = False
    ok = np.flatnonzero(ok_mask)
    ids = table[ok, 0]
    order = np.argsort(ids, kind="stable")
    sorted_ids = ids[order]
    repeat = np.flatnonzero(sorted_ids[1:] == sorted_ids[:-1]) + 1
    if len(repeat):
        first = order[np.searchsorted(sorted_ids, sorted_ids[repeat], side="left")]
        for pos, f in zip(repeat, first):
            dup = int(ok[order[pos]])
            messages[dup] = (f"job number {int(table[dup, 0])} repeats the job on line "
                             f"{int(lines[ok[f]])}")
    return messages
