"""Workload generators of the example project, one per engine used by the
example specs. A single file, not a package: a spec names a generator with
``[workload] use = "mygenerators.py:bursty"`` and its other ``[workload]``
fields are the generator's parameters (typed keyword arguments; a list in
the spec is a grid axis).

Rules every generator here follows (docs/extending.md, "Generators"):

* every random number comes from the ``rng`` argument (replication r of a
  workload point gets its own seeded generator, and every policy of the
  replication sees the same table: common random numbers);
* independent parts of the workload (arrivals, sizes, estimate errors) draw
  from independent child streams (``rng.spawn``), so changing, say, ``sigma``
  leaves arrivals and sizes exactly as they were;
* the result is a polars DataFrame sorted by ``submit`` with the columns the
  engine reads (``schedlab.api.workloads.COLUMNS``).
"""

from __future__ import annotations

import math
from typing import Annotated

import numpy as np
import polars as pl
from pydantic import Field
from scipy.special import ndtr

Positive = Annotated[float, Field(gt=0)]


def _weibull_mean_one(rng: np.random.Generator, shape: float, n: int) -> np.ndarray:
    return rng.weibull(shape, n) / math.gamma(1.0 + 1.0 / shape)


def on_off_arrivals(
    rng: np.random.Generator, n: int, rate: float, burstiness: float, on_fraction: float, cycle: float
) -> np.ndarray:
    """n arrival times of an on/off (two-state Markov-modulated) Poisson
    process: exponential ON and OFF periods of means ``on_fraction * cycle``
    and ``(1 - on_fraction) * cycle``; Poisson arrivals at rate r_on while
    ON and r_off = r_on / burstiness while OFF, with r_on, r_off chosen so
    that the long-run rate is ``rate``. burstiness = 1 is a Poisson process."""
    r_off = rate / (burstiness * on_fraction + (1.0 - on_fraction))
    r_on = burstiness * r_off
    means = (on_fraction * cycle, (1.0 - on_fraction) * cycle)
    out: list[np.ndarray] = []
    count = 0
    t = 0.0
    on = rng.random() < on_fraction  # start in the stationary state distribution
    while count < n:
        length = rng.exponential(means[0] if on else means[1])
        k = rng.poisson((r_on if on else r_off) * length)
        if k:
            out.append(t + np.sort(rng.uniform(0.0, length, k)))
            count += k
        t += length
        on = not on
    return np.concatenate(out)[:n] if out else np.zeros(0)


def bursty(
    rng: np.random.Generator,
    *,
    njobs: Annotated[int, Field(ge=1)] = 2000,
    load: Positive = 0.9,
    shape: Positive = 0.5,
    sigma: Annotated[float, Field(ge=0)] = 0.5,
    burstiness: Annotated[float, Field(ge=1)] = 10.0,
    on_fraction: Annotated[float, Field(gt=0, lt=1)] = 0.2,
    cycle: Positive = 200.0,
) -> pl.DataFrame:
    """Queue engine: bursty on/off Poisson arrivals, Weibull sizes of mean 1
    (``shape`` < 1: heavy-tailed), estimates = size x LogNormal(0, sigma^2).

    The long-run arrival rate is ``load`` (sizes have mean 1), so ``load`` is
    the offered load; ``burstiness`` (ON rate / OFF rate), ``on_fraction``
    (share of time ON) and ``cycle`` (mean ON + OFF length, in mean job
    sizes) shape the bursts: with burstiness 10 and on_fraction 0.2 the
    server is overloaded while ON (rate 3.1 x load) and drains while OFF."""
    arrivals_rng, sizes_rng, errors_rng = rng.spawn(3)
    submit = on_off_arrivals(arrivals_rng, njobs, load, burstiness, on_fraction, cycle)
    size = _weibull_mean_one(sizes_rng, shape, njobs)
    estimate = size * errors_rng.lognormal(0.0, sigma, njobs) if sigma > 0 else size.copy()
    return pl.DataFrame({"job_id": np.arange(njobs), "submit": submit, "size": size, "estimate": estimate})


def two_resource(
    rng: np.random.Generator,
    *,
    njobs: Annotated[int, Field(ge=1)] = 1000,
    servers: Annotated[int, Field(ge=1)] = 20,
    load: Positive = 0.9,
    mean_duration: Positive = 10.0,
    correlation: Annotated[float, Field(ge=-1, le=1)] = -0.5,
) -> pl.DataFrame:
    """Packing engine, two resources (``cpu``, ``mem``, as fractions of a
    server of capacity 1): Poisson arrivals, exponential durations,
    demands uniform in [0.05, 0.6] per resource, with the given correlation
    between the two (a Gaussian copula; negative: CPU-heavy jobs are light on
    memory, which is where alignment-based packing pays). The arrival rate
    makes the mean of the larger demand x duration offered to ``servers``
    servers equal ``load``."""
    arrivals_rng, demand_rng, duration_rng = rng.spawn(3)
    z = demand_rng.multivariate_normal([0.0, 0.0], [[1.0, correlation], [correlation, 1.0]], njobs)
    u = ndtr(z)  # the standard normal CDF: uniform marginals, correlated
    cpu, mem = (0.05 + 0.55 * u[:, 0]), (0.05 + 0.55 * u[:, 1])
    duration = duration_rng.exponential(mean_duration, njobs)
    rate = load * servers / (mean_duration * float(np.maximum(cpu, mem).mean()))
    submit = np.cumsum(arrivals_rng.exponential(1.0 / rate, njobs))
    return pl.DataFrame({"job_id": np.arange(njobs), "submit": submit, "duration": duration, "cpu": cpu, "mem": mem})


def rigid_jobs(
    rng: np.random.Generator,
    *,
    njobs: Annotated[int, Field(ge=1)] = 500,
    procs: Annotated[int, Field(ge=1)] = 64,
    load: Positive = 0.85,
    overestimate: Annotated[float, Field(ge=1)] = 1.0,
) -> pl.DataFrame:
    """Batch (and DFRS) engines: rigid parallel jobs on a machine of
    ``procs`` processors. Widths: powers of two up to procs (half the jobs
    serial or 2-wide, as in real logs); runtimes log-uniform in [10 s, 10 h];
    Poisson arrivals at the rate that offers ``load`` of the machine. The
    requested time is runtime x U(1, overestimate), rounded up to a whole
    minute (users over-estimate, never under: overestimate = 1 gives the
    exact runtime, the case where a backfilling reservation is a promise)."""
    arrivals_rng, width_rng, runtime_rng, request_rng = rng.spawn(4)
    top = int(math.log2(procs))
    p = np.array([2.0 ** -(k + 1) for k in range(top + 1)])
    width = 2 ** width_rng.choice(top + 1, njobs, p=p / p.sum())
    runtime = np.exp(runtime_rng.uniform(math.log(10.0), math.log(36_000.0), njobs))
    rate = load * procs / float(np.mean(width * runtime))
    submit = np.cumsum(arrivals_rng.exponential(1.0 / rate, njobs))
    if overestimate > 1.0:
        requested = np.ceil(runtime * request_rng.uniform(1.0, overestimate, njobs) / 60.0) * 60.0
    else:
        requested = runtime.copy()
    return pl.DataFrame(
        {
            "job_id": np.arange(njobs),
            "submit": submit,
            "runtime": runtime,
            "procs": width.astype(np.int64),
            "requested_time": requested,
        }
    )
