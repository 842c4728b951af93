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

The job table each engine reads (``get_engine(name).jobs``: required, then optional):

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


def check_job_table(jobs: object, engine: str, source: str) -> pl.DataFrame:
    """``jobs`` as a job table ``engine`` can run, or a UserError naming
    ``source`` (the generator) and what is wrong: the columns the engine
    declares (``Engine.jobs``), then its own completion and validation
    (``Engine.complete_jobs``: the queue's table gets estimate = size,
    weight = 1) or, without one, rows sorted by submit."""
    from schedlab.engines import get_engine

    if not isinstance(jobs, pl.DataFrame):
        raise UserError(f"{source}: returned {type(jobs).__name__}, not a polars DataFrame")
    declared = get_engine(engine)
    missing = declared.jobs.missing(jobs.columns)
    if missing:
        raise UserError(
            f"{source}: the job table has no {', '.join(missing)} column for the {engine} engine "
            f"(columns: {', '.join(jobs.columns)})"
        )
    complete = declared.declared("complete_jobs")
    if complete is not None:
        table: pl.DataFrame = complete(jobs, source)
        return table
    submit = jobs["submit"]
    if submit.null_count() or not submit.cast(pl.Float64).is_sorted():
        raise UserError(f"{source}: the job table must be sorted by submit, with no missing values")
    return jobs


__all__ = ["Trace", "check_job_table"]
