"""A summary metric of the example project: ``fn(jobs, **params) -> float``
on a run's per-job table (docs/extending.md, "Metrics"). Named in a spec::

    [[metrics]]
    name = "big_job_slowdown"
    use = "mymetrics.py:top_mean"
    params = {by = "size", column = "slowdown", top = 0.01}
"""

from __future__ import annotations

import math
from typing import Annotated

import numpy as np
import polars as pl
from pydantic import Field


def top_mean(
    jobs: pl.DataFrame, *, by: str = "size", column: str = "slowdown", top: Annotated[float, Field(gt=0, le=1)] = 0.01
) -> float:
    """Mean of ``column`` over the jobs in the largest ``top`` fraction by
    ``by`` (at least one job; equal ``by`` values at the cut all count).

    Why: size-based policies win on the mean by making the largest jobs
    wait; the mean slowdown of the top 1 % by size is what aging
    (``AgedSRPT``) is meant to improve. Works for every engine given the
    right columns: queue ``by = "size", column = "slowdown"``; batch and
    DFRS ``by = "runtime", column = "stretch"``; packing ``by =
    "duration", column = "wait"``. NaN when no job has both values."""
    for name in (by, column):
        if name not in jobs.columns:
            raise ValueError(f"top_mean: the per-job table has no column {name!r} (columns: {', '.join(jobs.columns)})")
    pairs = jobs.select(pl.col(by).cast(pl.Float64), pl.col(column).cast(pl.Float64)).drop_nulls().drop_nans()
    if pairs.height == 0:
        return math.nan
    keys = pairs[by].to_numpy()
    k = max(1, math.ceil(top * len(keys) - 1e-9))
    cut = np.partition(keys, len(keys) - k)[len(keys) - k]  # the k-th largest value
    return float(pairs.filter(pl.col(by) >= cut)[column].mean())
