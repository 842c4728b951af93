"""Google cluster trace clusterdata-2011(-2): ``task_events`` shards -> one row
per task that ran to completion without interruption.

``path`` is the dataset folder (holding ``task_events/``), the
``task_events`` folder itself, or one shard file. Shards are the files
``*.csv.gz`` / ``*.csv`` of that folder, read in name order
(``part-00000-of-00500.csv.gz``, ...); numbered ``part-NNNNN`` shards must be
consecutive (a missing shard would split task lifecycles). ``job_events`` is
not read: every field used below (times, event types, requests) is in
``task_events``.

Schema (``shared/data/google-clusterdata-2011/PROVENANCE.md`` and Google's
clusterdata-2011-2 schema): 13 comma-separated fields, no header::

    1 timestamp (us)  2 missing info  3 job ID  4 task index  5 machine ID
    6 event type  7 user  8 scheduling class  9 priority  10 CPU request
    11 memory request  12 disk request  13 different-machine constraint

Event types: 0 SUBMIT, 1 SCHEDULE, 2 EVICT, 3 FAIL, 4 FINISH, 5 KILL, 6 LOST,
7 UPDATE_PENDING, 8 UPDATE_RUNNING. Timestamp 0 marks events of work already
present when the trace began; 2^63 - 1 marks events after its end.

Filtering follows Psychas & Ghaderi ("High-Throughput Bin Packing", sec.
"Google Trace Simulations"): "We filtered the tasks and kept those that were
completed without interruptions/errors", and for a single resource "we used
the maximum of the two requirements which were already normalized in [0, 1]
scale". A task (job ID, task index) is kept when it has a FINISH and *no*
EVICT, FAIL, KILL or LOST event anywhere in the window, its first event is a
SUBMIT after time 0, and a SCHEDULE precedes its FINISH. For a kept task:

* ``submit`` = its first SUBMIT time, in seconds from the trace start (the
  trace's own origin: real activity starts at 600 s);
* ``runtime`` = first FINISH - the last SCHEDULE before it, in seconds;
  ``size`` = ``runtime`` (the queue engine's view);
* ``cpu``, ``mem`` = the requests in force at that FINISH (the latest
  non-empty values on the task's events up to it; normalised to the largest
  machine, 0-1, as in the trace); ``single_resource=True`` adds ``demand`` =
  max(cpu, mem);
* a task resubmitted after it finished yields its first run only (the later
  runs are counted in ``counts['reruns_after_finish']``); an interruption in a
  later run still drops the task.

Other columns: ``job_id`` (Int64 running index 0, 1, ... in output order),
``google_job_id`` and ``task_index`` (Int64, the trace's key). Rows are sorted
by submit, ties in event order.

``counts``: ``lines``, ``events`` (lines parsed), ``skipped_bad_lines``,
``tasks`` (distinct tasks), ``jobs`` (kept) and one count per dropping rule,
which together add up to ``tasks``: ``dropped_started_before_trace`` (first
event at time 0 or not a SUBMIT: its submit time is unknown),
``dropped_evicted`` / ``_failed`` / ``_killed`` / ``_lost`` (by the first such
event), ``dropped_finish_without_schedule``, ``dropped_missing_request``,
``dropped_unfinished`` (still pending or running at the end of the window);
plus ``events_after_trace_end`` (ignored) and ``reruns_after_finish``.

Streaming: the shards are read line by line; memory holds one small record
per open task, one small int per closed task (so that later events of a
finished or dropped task are recognised) and the output columns -- never the
events.
"""

from __future__ import annotations

import re
from array import array
from pathlib import Path
from typing import Any

import polars as pl

from schedlab.errors import UserError
from schedlab.workloads.traces.base import ON_BAD_LINE, BadLines, Trace, cached, open_lines

NAME = "google"
VERSION = 1

FIELDS = 13
EVENT_NAMES = ("SUBMIT", "SCHEDULE", "EVICT", "FAIL", "FINISH", "KILL", "LOST",
               "UPDATE_PENDING", "UPDATE_RUNNING")
SUBMIT, SCHEDULE, EVICT, FAIL, FINISH, KILL, LOST, UPDATE_PENDING, UPDATE_RUNNING = range(9)
INTERRUPTIONS = (EVICT, FAIL, KILL, LOST)
TRACE_END = (1 << 63) - 1  # timestamp of events after the end of the trace
US = 1e6

_OPTIONS = ("single_resource",)
_EVENT = {str(code): code for code in range(9)}
_SHARD = re.compile(r"part-(\d+)-of-(\d+)\.csv(?:\.gz)?\Z")

# Closed-task codes kept in the state table (kept tasks hold their row index >= 0).
_BEFORE = -1
_NO_SCHEDULE = -10
_NO_REQUEST = -11
_DROP_NAMES = {
    _BEFORE: "dropped_started_before_trace",
    -EVICT: "dropped_evicted",
    -FAIL: "dropped_failed",
    -KILL: "dropped_killed",
    -LOST: "dropped_lost",
    _NO_SCHEDULE: "dropped_finish_without_schedule",
    _NO_REQUEST: "dropped_missing_request",
}


def _check_options(on_bad_line: str, options: dict[str, Any]) -> dict[str, Any]:
    if on_bad_line not in ON_BAD_LINE:
        raise UserError(f"on_bad_line: must be one of {', '.join(ON_BAD_LINE)}; got {on_bad_line!r}")
    unknown = sorted(set(options) - set(_OPTIONS))
    if unknown:
        raise UserError(f"{unknown[0]}: unknown option of the {NAME} reader; known: {', '.join(_OPTIONS)}")
    single = options.get("single_resource", False)
    if not isinstance(single, bool):
        raise UserError(f"single_resource: must be true or false; got {single!r}")
    return {"single_resource": single, "on_bad_line": on_bad_line}


def shard_paths(path: str | Path) -> list[Path]:
    """The task_events shard files ``path`` designates, in reading order."""
    path = Path(path)
    if not path.exists():
        raise UserError(f"{path}: no such file or folder")
    if path.is_file():
        return [path]
    if path.name == "job_events":
        raise UserError(f"{path}: this reader needs task_events; pass the dataset folder or its task_events folder")
    folder = path / "task_events" if (path / "task_events").is_dir() else path
    shards = sorted(p for p in folder.iterdir()
                    if p.is_file() and not p.name.startswith(".") and p.name.endswith((".csv", ".csv.gz")))
    if not shards:
        raise UserError(f"{folder}: no task_events shards (*.csv.gz or *.csv) in this folder")
    numbered = [(int(m.group(1)), p) for p in shards if (m := _SHARD.match(p.name))]
    for (a, pa), (b, pb) in zip(numbered, numbered[1:]):
        if b != a + 1:
            raise UserError(f"{folder}: shards between {pa.name} and {pb.name} are missing "
                            "(shards must be consecutive: a gap would split task lifecycles)")
    return shards


_BAD = object()  # marks an unusable request field


def _request(text: str):
    """A normalised resource request: None if empty, else a float in [0, 1],
    or _BAD."""
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        return _BAD
    return value if 0.0 <= value <= 1.0 else _BAD


def read(path: str | Path, *, on_bad_line: str = "error", use_cache: bool = True, **options: Any) -> Trace:
    """Read clusterdata-2011 task_events shards (see the module docstring)."""
    opts = _check_options(on_bad_line, options)
    shards = shard_paths(path)

    def parse() -> Trace:
        return _parse(Path(path), shards, opts)

    trace = cached(NAME, VERSION, shards, opts, parse, use_cache)
    trace.meta["source"] = str(path)  # the cache is keyed by content: it may hold another path
    return trace


def _parse(source: Path, shards: list[Path], opts: dict[str, Any]) -> Trace:
    # Output columns, appended at each clean FINISH; `valid` is cleared when a
    # kept task is interrupted in a later run.
    out_job, out_index, out_submit, out_run, out_seq = array("q"), array("q"), array("q"), array("q"), array("q")
    out_cpu, out_mem = array("d"), array("d")
    valid = bytearray()
    reruns: set[int] = set()  # rows of kept tasks that were submitted again
    # key (job << 32 | index) -> open task [first submit us, last schedule us or -1, cpu, mem, event seq]
    # or a closed task: row index >= 0 (kept) or a negative _DROP_NAMES code.
    state: dict[int, Any] = {}
    event_counts = [0] * 9
    after_end = 0
    lines = 0
    seq = 0
    skipped = 0
    first_skipped = None
    prev_ts = -1
    first_ts = last_ts = None
    event_of = _EVENT.get

    for shard in shards:
        bad = BadLines(shard, opts["on_bad_line"])
        shard_lines = 0
        for lineno, line in open_lines(shard):
            shard_lines = lineno
            parts = line.split(",")
            if len(parts) != FIELDS:
                bad(lineno, f"expected {FIELDS} comma-separated fields, got {len(parts)}")
                continue
            try:
                ts = int(parts[0])
            except ValueError:
                bad(lineno, f"field 1 (timestamp): not an integer: {parts[0]!r}")
                continue
            if ts < 0 or ts > TRACE_END:
                bad(lineno, f"field 1 (timestamp): out of range: {ts}")
                continue
            if ts < prev_ts:
                bad(lineno, f"field 1 (timestamp): {ts} is before the previous event's {prev_ts} "
                            "(events must be in time order across shards)")
                continue
            ev = event_of(parts[5])
            if ev is None:
                bad(lineno, f"field 6 (event type): must be an integer 0-8; got {parts[5]!r}")
                continue
            try:
                job = int(parts[2])
                index = int(parts[3])
            except ValueError:
                bad(lineno, f"fields 3-4 (job ID, task index): not integers: {parts[2]!r}, {parts[3]!r}")
                continue
            if not (0 <= job < 1 << 63 and 0 <= index < 1 << 32):
                bad(lineno, f"fields 3-4 (job ID, task index): out of range: {job}, {index}")
                continue
            cpu, mem = _request(parts[9]), _request(parts[10])
            if cpu is _BAD or mem is _BAD:
                field = "field 10 (CPU request)" if cpu is _BAD else "field 11 (memory request)"
                bad(lineno, f"{field}: must be a number in [0, 1]; got {parts[9 if cpu is _BAD else 10]!r}")
                continue

            # A valid event.
            prev_ts = ts
            if first_ts is None:
                first_ts = ts
            last_ts = ts
            seq += 1
            event_counts[ev] += 1
            if ts == TRACE_END:
                after_end += 1
                continue
            key = job << 32 | index
            st = state.get(key)
            if st is None:  # first event of this task
                if ev != SUBMIT or ts == 0:
                    state[key] = _BEFORE
                else:
                    state[key] = [ts, -1, cpu, mem, seq]
            elif type(st) is list:  # open task
                if cpu is not None:
                    st[2] = cpu
                if mem is not None:
                    st[3] = mem
                if ev == SCHEDULE:
                    st[1] = ts
                elif ev == FINISH:
                    if st[1] < 0:
                        state[key] = _NO_SCHEDULE
                    elif st[2] is None or st[3] is None:
                        state[key] = _NO_REQUEST
                    else:
                        state[key] = len(valid)
                        out_job.append(job)
                        out_index.append(index)
                        out_submit.append(st[0])
                        out_run.append(ts - st[1])
                        out_cpu.append(st[2])
                        out_mem.append(st[3])
                        out_seq.append(st[4])
                        valid.append(1)
                elif ev in INTERRUPTIONS:
                    state[key] = -ev
            elif st >= 0:  # kept task: a later run
                if ev in INTERRUPTIONS:
                    valid[st] = 0
                    state[key] = -ev
                elif ev == SUBMIT:
                    reruns.add(st)
            # else: a dropped task; later events change nothing
        if shard_lines == 0:
            raise UserError(f"{shard}: empty file (no events)")
        lines += shard_lines
        skipped += bad.skipped
        if first_skipped is None:
            first_skipped = bad.first_skipped

    tally = dict.fromkeys(_DROP_NAMES.values(), 0)
    unfinished = 0
    kept = 0
    for st in state.values():
        if type(st) is list:
            unfinished += 1
        elif st >= 0:
            kept += 1
        else:
            tally[_DROP_NAMES[st]] += 1
    tally["dropped_unfinished"] = unfinished
    if kept == 0:
        detail = ", ".join(f"{k} {v}" for k, v in tally.items() if v)
        raise UserError(f"{source}: no task completed without interruption in the window "
                        f"({len(state)} tasks: {detail or 'none'}; {skipped} bad lines skipped)")

    df = pl.DataFrame({
        "google_job_id": pl.Series(out_job, dtype=pl.Int64),
        "task_index": pl.Series(out_index, dtype=pl.Int64),
        "submit_us": pl.Series(out_submit, dtype=pl.Int64),
        "runtime_us": pl.Series(out_run, dtype=pl.Int64),
        "cpu": pl.Series(out_cpu, dtype=pl.Float64),
        "mem": pl.Series(out_mem, dtype=pl.Float64),
        "seq": pl.Series(out_seq, dtype=pl.Int64),
        "valid": pl.Series(valid, dtype=pl.UInt8),
    })
    df = df.filter(pl.col("valid") == 1).sort("submit_us", "seq")
    runtime = (pl.col("runtime_us") / US).alias("runtime")
    columns: list[str | pl.Expr] = [
        pl.int_range(pl.len(), dtype=pl.Int64).alias("job_id"),
        (pl.col("submit_us") / US).alias("submit"),
        runtime.alias("size"),
        runtime,
        "cpu",
        "mem",
    ]
    if opts["single_resource"]:
        columns.append(pl.max_horizontal("cpu", "mem").alias("demand"))
    df = df.select(*columns, "google_job_id", "task_index")

    counts = {
        "lines": lines,
        "events": seq,
        "skipped_bad_lines": skipped,
        "tasks": len(state),
        "jobs": df.height,
        **tally,
        "events_after_trace_end": after_end,
        "reruns_after_finish": sum(1 for row in reruns if valid[row]),
    }
    meta = {
        "reader": NAME,
        "source": str(source),
        "shards": [p.name for p in shards],
        "options": opts,
        "event_counts": dict(zip(EVENT_NAMES, event_counts)),
        "first_event_s": None if first_ts is None else first_ts / US,
        "last_event_s": None if last_ts is None else last_ts / US,
        "time_unit": "seconds from the trace start (timestamps / 1e6)",
        "resource_unit": "normalised to the largest machine (0-1)",
        "first_skipped_bad_line": first_skipped,
    }
    return Trace(df, meta, counts)
