"""Job-table transforms used to replay traces the way the papers do.

All are pure functions of a polars job table (plus a seeded generator where
randomness is involved) and never modify their input.

* `shift_to_zero` -- time origin at the first submission.
* `scale_load` -- choose the service speed so the offered load is rho: the
  PSBS paper (§6.8) sets "the processing speed of the simulated system ... to
  obtain a load (total size of the submitted jobs divided by total length of
  the submission schedule) of 0.9". We divide sizes (and estimates) by that
  speed, so a server of rate 1 sees load rho.
* `scale_rigid_load` -- stretch or compress arrival times so that a rigid-job
  trace offers load rho to a machine of P processors (sum of runtime x procs
  over P x span), as the DFRS paper's "scaled synthetic traces" (§5).
* `scale_traffic` -- multiply arrival times by beta (Psychas & Ghaderi's
  traffic scaling: beta < 1 compresses time and raises the load).
* `window_count` / `window_indices` / `window` -- cut a trace into consecutive
  windows of a fixed length from an origin (the first submission, or a given
  time such as 0 = an SWF log's UnixStartTime: the DFRS paper's 182 week-long
  HPC2N traces are the weeks floor(submit / 604,800 s) from UnixStartTime),
  each shifted to start at 0.
* `add_estimates` -- estimate = size x LogNormal(0, sigma^2), the PSBS paper's
  error model (§5.3), for trace replays with estimation errors (Figs. 14-15).
* `attach_arrivals` -- for order-only traces (the BU98 `seq id size` trace):
  Poisson arrivals at the rate giving offered load rho.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import polars as pl

from schedlab.errors import UserError


def shift_to_zero(jobs: pl.DataFrame) -> pl.DataFrame:
    if jobs.is_empty():
        return jobs
    return jobs.with_columns(pl.col("submit") - pl.col("submit").min())


def scalar(value: Any) -> float:
    """A polars aggregate (min, max, sum, mean) of a numeric column as a
    float: polars types an aggregate as any Python literal."""
    return float(value)


def submit_span(jobs: pl.DataFrame) -> float:
    """Last minus first submission time (0 for an empty table)."""
    if jobs.height == 0:
        return 0.0
    return scalar(jobs["submit"].max()) - scalar(jobs["submit"].min())


def offered_load(jobs: pl.DataFrame, work: str = "size") -> float:
    """Total work / length of the submission schedule (the PSBS definition)."""
    if jobs.height < 2:
        return float("nan")
    span = submit_span(jobs)
    return scalar(jobs[work].sum()) / span if span > 0 else float("inf")


def scale_load(jobs: pl.DataFrame, load: float, work: str = "size") -> pl.DataFrame:
    """Rescale work so the offered load is exactly ``load`` on a rate-1 server."""
    if not (isinstance(load, (int, float)) and math.isfinite(load) and load > 0):
        raise UserError(f"load: must be a number > 0; got {load!r}")
    current = offered_load(jobs, work)
    if not (math.isfinite(current) and current > 0):
        raise UserError("load: the trace (window) needs at least two distinct submit times and positive work to scale its load")
    factor = load / current
    cols = [pl.col(work) * factor]
    if "estimate" in jobs.columns and work == "size":
        cols.append(pl.col("estimate") * factor)
    return jobs.with_columns(cols)


def rigid_offered_load(jobs: pl.DataFrame, machine: int) -> float:
    """Processor-seconds asked for / processor-seconds available over the
    submission span."""
    span = submit_span(jobs)
    if span <= 0:
        return float("inf")
    return float((jobs["runtime"] * jobs["procs"]).sum()) / (machine * span)


def scale_rigid_load(jobs: pl.DataFrame, load: float, machine: int) -> pl.DataFrame:
    """Multiply arrival times (from the first submission) so the offered load
    on ``machine`` processors is exactly ``load``; run times are unchanged."""
    if not (isinstance(load, (int, float)) and math.isfinite(load) and load > 0):
        raise UserError(f"load: must be a number > 0; got {load!r}")
    current = rigid_offered_load(jobs, machine)
    if not (math.isfinite(current) and current > 0):
        raise UserError("load: the trace needs at least two distinct submit times to scale its load")
    t0 = jobs["submit"].min()
    return jobs.with_columns((t0 + (pl.col("submit") - t0) * (current / load)).alias("submit"))


def scale_traffic(jobs: pl.DataFrame, beta: float) -> pl.DataFrame:
    if not (isinstance(beta, (int, float)) and math.isfinite(beta) and beta > 0):
        raise UserError(f"traffic: must be a number > 0; got {beta!r}")
    return jobs.with_columns(pl.col("submit") * float(beta))


def window_count(jobs: pl.DataFrame, length: float, origin: float | None = None) -> int:
    """Number of windows of ``length`` seconds from ``origin`` (None: the
    first submission) to the last submission, empty ones included."""
    if jobs.is_empty():
        return 0
    t0 = _origin(jobs, origin)
    span = scalar(jobs["submit"].max()) - t0
    return int(span // length) + 1


def window_indices(jobs: pl.DataFrame, length: float, origin: float | None = None) -> list[int]:
    """The indices k of the non-empty windows, k = floor((submit - origin) /
    length), ascending (origin None: the first submission)."""
    if jobs.is_empty():
        return []
    t0 = _origin(jobs, origin)
    return sorted({int(k) for k in np.floor((jobs["submit"].to_numpy() - t0) / length)})


def _origin(jobs: pl.DataFrame, origin: float | None) -> float:
    first = scalar(jobs["submit"].min())
    if origin is None:
        return first
    if first < origin:
        raise UserError(f"window_origin: a job is submitted at {first:g} s, before the origin {origin:g} s")
    return float(origin)


def window(jobs: pl.DataFrame, length: float, index: int, origin: float | None = None) -> pl.DataFrame:
    """Jobs submitted in [t0 + index*length, t0 + (index+1)*length), t0 =
    ``origin`` (None: the first submission); the window is shifted to start
    at 0 (its own origin)."""
    if not (isinstance(length, (int, float)) and length > 0):
        raise UserError(f"window_length: must be a number of seconds > 0; got {length!r}")
    count = window_count(jobs, length, origin)
    if not (isinstance(index, int) and 0 <= index < count):
        raise UserError(f"window: must be an integer in 0..{count - 1} for this trace; got {index!r}")
    t0 = _origin(jobs, origin)
    lo, hi = t0 + index * length, t0 + (index + 1) * length
    part = jobs.filter((pl.col("submit") >= lo) & (pl.col("submit") < hi))
    return part.with_columns(pl.col("submit") - lo)


def add_estimates(jobs: pl.DataFrame, rng: np.random.Generator, sigma: float) -> pl.DataFrame:
    """estimate = size x X, X ~ LogNormal(0, sigma^2); sigma = 0 gives exact sizes."""
    if not (isinstance(sigma, (int, float)) and sigma >= 0):
        raise UserError(f"sigma: must be a number >= 0; got {sigma!r}")
    if sigma == 0:
        return jobs.with_columns(pl.col("size").alias("estimate"))
    factor = rng.lognormal(0.0, float(sigma), jobs.height)
    return jobs.with_columns((pl.col("size") * pl.Series(factor)).alias("estimate"))


def attach_arrivals(jobs: pl.DataFrame, rng: np.random.Generator, load: float) -> pl.DataFrame:
    """Poisson arrivals, in the trace's order, at the rate giving offered load
    ``load`` for the mean size (first arrival at 0)."""
    if not (isinstance(load, (int, float)) and load > 0):
        raise UserError(f"load: must be a number > 0 to attach arrivals; got {load!r}")
    mean = scalar(jobs["size"].mean())
    gaps = rng.exponential(mean / load, jobs.height)
    gaps[0] = 0.0
    return jobs.with_columns(pl.Series("submit", np.cumsum(gaps)))
