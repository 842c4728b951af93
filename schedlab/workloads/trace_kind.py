"""The ``trace`` workload kind: replay a real trace inside a sweep.

Parameters (a list value is a grid axis, as everywhere)::

    reader = "swim"            # swf, swim, squid, bu98, google (see traces/registry.py)
    path = "/data/FB-2010_samples_24_times_1hr_0.tsv.gz"
    on_bad_line = "error"      # or "skip" (counted)
    reader_size = "weighted"   # reader_* options go to the reader without the prefix
    window_length = 604800     # seconds; 0 = the whole trace
    window = "all"             # with window_length: every window (one shard each) or an index
    window_origin = "first"    # windows counted from the first submission; "header": from
                               #   the trace's time 0 (SWF: the header's UnixStartTime)
    traffic = 1.0              # multiply arrival times by this (Psychas & Ghaderi)
    load = 0.9                 # rescale work so the offered load is this (PSBS §6.8); 0 = as is
    sigma = 0.5                # estimate = size x LogNormal(0, sigma^2), drawn per replication
    arrival_load = 0.9         # order-only traces (bu98): Poisson arrivals at this load
    group_column = "google_job_id"  # packing engine: this trace column becomes `group`
                                    # (tasks -> multi-task jobs); "" = every row is a job
    max_procs = 120            # drop jobs wider than this (after windowing; 0 = keep all)
    sequence = 1024            # each instance: this many consecutive jobs (submit order) from a
                               #   start drawn uniformly per replication, the log's own submit
                               #   times kept (RLScheduler's episodes); 0 = off
    sequence_within = 10000    # draw the sequences among the first this-many jobs (0 = all)
    sequence_start = 1981      # the sequence's first job (0-based, in submit order), not drawn
                               #   (-1 = drawn); a list of them is a grid axis: RLScheduler's test
                               #   sequences (workloads/rlscheduler_starts.py)
    annotation = "dfrs-hpc2n"  # DFRS annotation (workloads/annotate.py): the paper's
                               #   HPC2N rule (RR-7659 §5.3.1), or "schedlab" (default) with
    cores_per_node = 2         #   these fields: tasks, CPU need and memory per task;
    memory = "trace"           #   0 = none (engine defaults)

Windows (``window_length`` > 0): window k holds the jobs submitted in
[t0 + k L, t0 + (k + 1) L), shifted to start at 0. With ``window_origin =
"first"`` (the default) t0 is the first submission and ``window = "all"``
gives every k from 0 to the last submission's, empty windows included (a
run of an empty one fails). With ``window_origin = "header"`` (SWF only) t0
is 0, the log's own time origin: SWF submit times count from the header's
``UnixStartTime``, so week k = floor(submit / 604,800 s) -- the DFRS paper's
cut, which gives the HPC2N log 182 non-empty weeks (from the first
submission, 181) -- and ``window = "all"`` gives the non-empty windows only
(their indices k, which need not be consecutive).

The parsed trace is loaded once on the driver (and cached as Parquet by the
reader) and shared with every task through Ray's object store; a task cuts
its window and applies the transforms. ``window = "all"`` is expanded at plan
time into one workload point per window, so windows shard into Ray tasks and
each result row carries its ``window`` index (and ``window_length``) as
columns. Replications differ only in the random draws (estimate errors,
attached arrivals): with sigma = 0 on a timed trace, one replication suffices.

Multi-task jobs: ``group_column`` names an integer column of the trace (the
Google reader's ``google_job_id``) that is copied into the ``group`` column
the packing engine reads (task -> job: Tetris's fair shares and SRTF term,
per-job completion times, ``jct_mean``/``jct_p99``). Without it (the
default, "") every row is its own job. It, ``max_procs`` and the
annotation fields came after other trace parameters (``LATE``): a workload
point leaves them out at their defaults, so the configuration ids of sweeps
written before them do not change.
Demands: a reader that gives ``cpu`` and ``mem`` (Google without
``reader_single_resource``) gives the packing engine two resources; with
``demand`` (``reader_single_resource = true``) one.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import polars as pl

from schedlab.errors import UserError
from schedlab.workloads import annotate

READER_PREFIX = "reader_"
SHARED_KEYS = ("reader", "path", "on_bad_line")
DEFAULTS: dict[str, Any] = {
    "reader": None,
    "path": None,
    "on_bad_line": "error",
    "window_length": 0.0,
    "window": 0,
    "window_origin": "first",
    "traffic": 1.0,
    "load": 0.0,
    "sigma": 0.0,
    "arrival_load": 0.0,
    "group_column": "",
    "max_procs": 0,
    "sequence": 0,
    "sequence_within": 0,
    "sequence_start": -1,
    **annotate.DEFAULTS,
}
#: Added after trace sweeps were written: left out of a workload point at
#: their default (``WorkloadKind.late``), so earlier configuration ids hold.
LATE = (
    "group_column",
    "max_procs",
    *annotate.DEFAULTS,
    "window_origin",
    "sequence",
    "sequence_within",
    "sequence_start",
)
WINDOW_ORIGINS = ("first", "header")
#: Readers whose submit times count from a time origin in the file's header.
HEADER_ORIGIN_READERS = ("swf",)


def _reader_options(params: dict[str, Any]) -> dict[str, Any]:
    return {k[len(READER_PREFIX) :]: v for k, v in params.items() if k.startswith(READER_PREFIX)}


#: The largest scaling a trace point may ask (traffic, load, arrival_load): a
#: million times the trace's own rate or load measures no real system, and
#: near a float's range the scaled times and sizes overflow to infinity.
MAX_SCALE = 1e6


def _number(params: dict[str, Any], name: str, ok, rule: str) -> None:
    v = params[name]
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not ok(v):
        raise UserError(f"{name}: must be {rule}; got {v!r}")


def check(params: dict[str, Any]) -> None:
    from schedlab.workloads.traces.base import ON_BAD_LINE
    from schedlab.workloads.traces.registry import reader_module

    reader = reader_module(params["reader"], "reader")
    if hasattr(reader, "check_options"):  # a user's reader declares its options
        reader.check_options(_reader_options(params), "reader")
    if not isinstance(params["path"], str):
        raise UserError(f"path: must be a file path string; got {params['path']!r}")
    if params["on_bad_line"] not in ON_BAD_LINE:
        raise UserError(f"on_bad_line: must be one of {', '.join(ON_BAD_LINE)}; got {params['on_bad_line']!r}")
    _number(params, "window_length", lambda v: v >= 0, "a number of seconds >= 0 (0: whole trace)")
    _number(params, "traffic", lambda v: v > 0, "a number > 0")
    _number(params, "load", lambda v: v >= 0, "a number >= 0 (0: keep the trace's units)")
    _number(params, "sigma", lambda v: v >= 0, "a number >= 0")
    _number(params, "arrival_load", lambda v: v >= 0, "a number >= 0")
    for name in ("traffic", "load", "arrival_load"):  # a factor on times or sizes beyond it overflows them
        _number(params, name, lambda v: v <= MAX_SCALE, f"at most {MAX_SCALE:g}")
    mp = params["max_procs"]
    if isinstance(mp, bool) or not isinstance(mp, int) or mp < 0:
        raise UserError(f"max_procs: must be an integer >= 0 (0: keep every job); got {mp!r}")
    for name in ("sequence", "sequence_within"):
        v = params[name]
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise UserError(f"{name}: must be an integer >= 0 (0: off); got {v!r}")
    if params["sequence"] and params["window_length"]:
        raise UserError("sequence: consecutive-job sequences replace time windows; set window_length = 0")
    k = params["sequence_start"]
    if isinstance(k, bool) or not isinstance(k, int) or k < -1:
        raise UserError(f"sequence_start: must be an integer >= 0 (the first job) or -1 (drawn); got {k!r}")
    if k >= 0 and not params["sequence"]:
        raise UserError("sequence_start: needs sequence > 0 (the number of consecutive jobs from it)")
    annotate.check(params)
    o = params["window_origin"]
    if o not in WINDOW_ORIGINS:
        raise UserError(f"window_origin: must be one of {', '.join(WINDOW_ORIGINS)}; got {o!r}")
    if o == "header" and params["reader"] not in HEADER_ORIGIN_READERS:
        raise UserError(
            f'window_origin: "header" needs a reader whose times count from a header origin '
            f"({', '.join(HEADER_ORIGIN_READERS)}); got reader {params['reader']!r}"
        )
    if o == "header" and params["arrival_load"]:
        raise UserError('window_origin: "header" keeps the log\'s own submit times; not with arrival_load')
    w = params["window"]
    if not (w == "all" or (isinstance(w, int) and not isinstance(w, bool) and w >= 0)):
        raise UserError(f'window: must be "all" or a window index >= 0; got {w!r}')
    g = params["group_column"]
    if not isinstance(g, str):
        raise UserError(f'group_column: must be a column name string ("": no grouping); got {g!r}')
    if g in ("group", "job_id"):
        raise UserError(f"group_column: must name another column of the trace than {g!r}")


def load_shared(params: dict[str, Any]) -> pl.DataFrame:
    """Parse the trace (driver side, once per sweep; the reader caches it)."""
    from schedlab.workloads.traces.registry import read_trace

    trace = read_trace(params["reader"], params["path"], on_bad_line=params["on_bad_line"], **_reader_options(params))
    jobs = trace.jobs
    machine = trace.meta.get("machine_procs")
    if isinstance(machine, int) and "machine_procs" not in jobs.columns:
        jobs = jobs.with_columns(
            pl.lit(machine, dtype=pl.Int64).alias("machine_procs")
        )  # the batch engine's default size
    if trace.meta.get("needs_arrivals") and not params["arrival_load"]:
        raise UserError(f"arrival_load: the {params['reader']} trace has no arrival times; set arrival_load > 0")
    return jobs


def expand(params: dict[str, Any]) -> list[dict[str, Any]]:
    """``window = "all"`` -> one point per window of the trace; a set
    ``group_column`` is checked against the trace's columns (driver side,
    before anything runs)."""
    from schedlab.workloads.transforms import window_count, window_indices

    jobs = None
    if params["group_column"]:
        jobs = load_shared(params)
        _check_group_column(jobs, params["group_column"])
    if params["window"] != "all":
        return [params]
    if not params["window_length"]:
        raise UserError('window: "all" needs window_length > 0')
    if jobs is None:
        jobs = load_shared(params)
    if "submit" not in jobs.columns:
        raise UserError('window: "all" needs a trace with arrival times')
    if params["window_origin"] == "header":
        return [{**params, "window": k} for k in window_indices(jobs, params["window_length"], 0.0)]
    return [{**params, "window": k} for k in range(window_count(jobs, params["window_length"]))]


def _check_group_column(jobs: pl.DataFrame, name: str) -> None:
    if name not in jobs.columns:
        raise UserError(f"group_column: the trace has no column {name!r}; columns: {', '.join(jobs.columns)}")
    if not jobs[name].dtype.is_integer():
        raise UserError(f"group_column: column {name!r} must hold integers (got {jobs[name].dtype})")


def _sequence(jobs: pl.DataFrame, rng: np.random.Generator, n: int, within: int, start: int = -1) -> pl.DataFrame:
    """``n`` consecutive jobs in submit order from ``start``, or (-1) from a
    start drawn uniformly (first the start, from the instance's stream) among
    the first ``within`` jobs (0: all); submit times as in the log."""
    total = min(within, jobs.height) if within else jobs.height
    if n > total:
        raise UserError(f"sequence: {n} jobs asked but the trace has {total} to draw from")
    if start >= 0:
        if start + n > jobs.height:
            raise UserError(f"sequence_start: {start} + {n} jobs is past the trace's {jobs.height}")
    else:
        start = int(rng.integers(0, total - n + 1))
    return jobs.sort("submit", maintain_order=True).slice(start, n)


def build(rng, params: dict[str, Any], shared: pl.DataFrame) -> pl.DataFrame:
    """One instance: window, arrivals, traffic, load, estimates[, group] -> job table."""
    from schedlab.workloads import transforms as tf

    jobs = shared
    group = params["group_column"]
    if group:
        _check_group_column(jobs, group)
        jobs = jobs.with_columns(pl.col(group).cast(pl.Int64).alias("group"))
    if params["arrival_load"]:
        jobs = tf.attach_arrivals(jobs, rng, params["arrival_load"])
    if params["sequence"]:
        jobs = _sequence(jobs, rng, params["sequence"], params["sequence_within"], params["sequence_start"])
    elif params["window_length"]:
        origin = 0.0 if params["window_origin"] == "header" else None
        jobs = tf.window(jobs.sort("submit", maintain_order=True), params["window_length"], params["window"], origin)
    else:
        jobs = tf.shift_to_zero(jobs)
    if params["max_procs"]:
        if "procs" not in jobs.columns:
            raise UserError(f"max_procs: the {params['reader']} trace has no procs column")
        jobs = jobs.filter(pl.col("procs") <= params["max_procs"])
    if params["traffic"] != 1.0:
        jobs = tf.scale_traffic(jobs, params["traffic"])
    if params["load"]:
        jobs = tf.scale_load(jobs, params["load"])
    jobs = tf.add_estimates(jobs, rng, params["sigma"])
    if "weight" not in jobs.columns:
        jobs = jobs.with_columns(pl.lit(1.0).alias("weight"))
    if jobs.is_empty():
        raise UserError(f"window {params['window']}: no jobs in this window")
    if annotate.wanted(params):
        kb = annotate.trace_memory_kb(shared)  # "schedlab" rule, memory = "trace": the whole trace's largest
        jobs = annotate.annotate(jobs, rng, params, float(np.nanmax(kb)) if np.isfinite(kb).any() else None)
    return jobs.with_columns(
        pl.col("job_id").cast(pl.Int64),
        pl.col("submit").cast(pl.Float64),
        pl.col("size").cast(pl.Float64),
        pl.col("weight").cast(pl.Float64),
    )


__all__ = ["DEFAULTS", "LATE", "READER_PREFIX", "SHARED_KEYS", "build", "check", "expand", "load_shared"]
