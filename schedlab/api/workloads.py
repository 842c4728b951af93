"""The workload seams: generators (a workload kind of your own) and trace
readers, both producing the canonical job table of an engine.

Generator -- ``fn(rng: numpy.random.Generator, *, param=default, ...) ->
polars.DataFrame``, named with ``[workload] use = "gen.py:fn"``; the other
``[workload]`` fields are its parameters (typed keyword arguments, checked by
``validate``; a list is a grid axis). Draw every random number from ``rng``
(no global random state): replication r of a workload point gets the
generator of ``SeedSequence([seed, point, r])``, and every policy of the
replication sees the same table (common random numbers).

Reader -- ``fn(path: str, *, option=default, ...) -> polars.DataFrame`` (or
a :class:`Trace`), named with ``[workload] kind = "trace"`` and ``reader =
"mine.py:fn"``; ``reader_<option>`` fields are its options, and the trace
kind's windows, load and traffic scaling and estimate errors apply to its
table as to the built-in readers'. It runs once, on the driver; declare
``on_bad_line: str = "error"`` to honour the spec's choice of failing or
skipping (and counting) malformed lines -- and name ``file:line`` in your
errors.

The job table each engine reads (``COLUMNS``: required, then optional):

* queue: job_id, submit, size; estimate (default size), weight (default 1)
* packing: job_id, submit, duration (or runtime), demand (or cpu and mem);
  group, estimate
* batch: job_id, submit, runtime, procs; requested_time, cpu_need, memory
* dfrs: job_id, submit, runtime, procs; cpu_need, memory

Rows must be sorted by submit. :func:`check_job_table` is what the platform
applies to a generator's output; the engines check values further.
"""

from __future__ import annotations

import polars as pl

from schedlab.errors import UserError
from schedlab.workloads.traces.base import Trace

COLUMNS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "queue": (("job_id", "submit", "size"), ("estimate", "weight", "weight_class")),
    "packing": (("job_id", "submit"), ("duration", "runtime", "demand", "cpu", "mem", "group", "estimate")),
    "batch": (("job_id", "submit", "runtime", "procs"), ("requested_time", "cpu_need", "memory", "machine_procs")),
    "dfrs": (("job_id", "submit", "runtime", "procs"), ("cpu_need", "memory")),
}
#: Alternatives of which the packing engine needs one each.
_ONE_OF = {"packing": (("duration", "runtime"), ("demand", "cpu"))}


def check_job_table(jobs: object, engine: str, source: str) -> pl.DataFrame:
    """``jobs`` as a job table ``engine`` can run, or a UserError naming
    ``source`` (the generator) and what is wrong. The queue engine's table
    is completed (estimate = size, weight = 1) and fully validated."""
    if not isinstance(jobs, pl.DataFrame):
        raise UserError(f"{source}: returned {type(jobs).__name__}, not a polars DataFrame")
    required, _ = COLUMNS[engine]
    missing = [c for c in required if c not in jobs.columns]
    for group in _ONE_OF.get(engine, ()):
        if not any(c in jobs.columns for c in group):
            missing.append(" or ".join(group))
    if missing:
        raise UserError(
            f"{source}: the job table has no {', '.join(missing)} column for the {engine} engine "
            f"(columns: {', '.join(jobs.columns)})"
        )
    if engine == "queue":
        from schedlab.workloads.schema import validate_queue_table

        extra = jobs.select("weight_class") if "weight_class" in jobs.columns else None
        table = validate_queue_table(jobs, source, None)
        return table.with_columns(extra) if extra is not None else table
    submit = jobs["submit"]
    if submit.null_count() or not submit.cast(pl.Float64).is_sorted():
        raise UserError(f"{source}: the job table must be sorted by submit, with no missing values")
    return jobs


__all__ = ["COLUMNS", "Trace", "check_job_table"]
