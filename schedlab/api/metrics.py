"""The metric seam: an extra number for every summary row, computed from a
run's per-job table.

A metric is a function ``fn(jobs: polars.DataFrame, *, param=default, ...)
-> float``. ``jobs`` holds the engine's per-job columns (queue: job_id,
submit, size, estimate, weight, completion, sojourn, slowdown; packing:
job_id, submit, start, end, wait, ...; batch and DFRS: job_id, submit,
start, end, procs, wait/stretch, ...; see docs/extending.md). Name it in a
spec::

    [[metrics]]
    name = "sojourn_p999"                  # the summary column
    use = "quantile"                       # a built-in below, or "file.py:fn"
    params = {column = "sojourn", q = 0.999}

The value lands in every summary row (and in MLflow, with its mean and CI),
next to the engine's own metrics. NaN is allowed (e.g. no job qualified).
The built-ins below are ordinary metrics registered under a name: your own
function is written exactly like them.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import polars as pl

from schedlab.sim.common.portable import dot


def _values(jobs: pl.DataFrame, column: str) -> np.ndarray:
    if column not in jobs.columns:
        raise ValueError(f"the per-job table has no column {column!r}; columns: {', '.join(jobs.columns)}")
    v: np.ndarray = jobs[column].cast(pl.Float64).to_numpy()
    kept: np.ndarray = v[~np.isnan(v)]
    return kept


def mean(jobs: pl.DataFrame, *, column: str) -> float:
    """Mean of a per-job column (NaN values left out)."""
    v = _values(jobs, column)
    return float(v.mean()) if v.size else math.nan


def quantile(jobs: pl.DataFrame, *, column: str, q: float = 0.99) -> float:
    """The q-quantile of a per-job column (numpy's linear interpolation)."""
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"q must be in [0, 1]; got {q!r}")
    v = _values(jobs, column)
    return float(np.quantile(v, q)) if v.size else math.nan


def fraction_above(jobs: pl.DataFrame, *, column: str, threshold: float) -> float:
    """Fraction of jobs whose column value exceeds ``threshold`` (e.g. the
    share of jobs with slowdown above 10)."""
    v = _values(jobs, column)
    return float(np.mean(v > threshold)) if v.size else math.nan


def jain(jobs: pl.DataFrame, *, column: str) -> float:
    """Jain's fairness index (sum x)^2 / (n sum x^2) of a per-job column: 1
    when every job gets the same value, 1/n when one job gets everything."""
    v = _values(jobs, column)
    denom = v.size * dot(v, v)
    return float(v.sum() ** 2 / denom) if denom > 0 else math.nan


#: Metrics a spec can name without code (``use = "quantile"``).
BUILTIN_METRICS: dict[str, Callable[..., float]] = {
    "mean": mean,
    "quantile": quantile,
    "fraction_above": fraction_above,
    "jain": jain,
}

__all__ = ["BUILTIN_METRICS", "fraction_above", "jain", "mean", "quantile"]
