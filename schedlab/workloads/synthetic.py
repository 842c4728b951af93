"""The synthetic workload generator of the PSBS paper (Dell'Amico et al. 2014).

Defaults are the paper's Table 1: 10,000 jobs, Weibull sizes with shape 0.25
and mean 1, exponential inter-arrivals (Weibull timeshape 1), load 0.9 and
log-normal estimation errors with sigma 0.5 (§5.3). §6.6 adds weight classes
and §6.7 Pareto sizes.
"""

from __future__ import annotations

import inspect
import math
from numbers import Integral, Real
from typing import Any

import numpy as np
import polars as pl

from schedlab.errors import UserError
from schedlab.workloads.schema import QUEUE_COLUMNS, QUEUE_SCHEMA

WORKLOAD_COLUMNS = QUEUE_COLUMNS + ("weight_class",)
WORKLOAD_SCHEMA = {**QUEUE_SCHEMA, "weight_class": pl.Int64()}

#: The largest offered load a point may ask: a queue offered more than a
#: thousand times its capacity measures nothing (the lint warns from 1), and
#: near a float's range the arrival times' scaling overflows.
MAX_LOAD = 1e3
SIZE_DISTS = ("weibull", "pareto")
LOAD_MODES = ("realized", "nominal")

# Sizes are clipped from below at this value: the engine needs size > 0.
_TINY = float(np.nextafter(0.0, 1.0))


def queue_workload(rng: np.random.Generator, **params: Any) -> pl.DataFrame:
    """Generate one workload as a job table. Its parameters are
    `queue_columns`' (its signature is this function's too: `help` and
    `inspect.signature` show them; one list of names and defaults, which the
    ``synthetic`` kind reads).

    Columns: `QUEUE_COLUMNS` (job_id 0..njobs-1, submit, size, estimate,
    weight) followed by `weight_class` (Int64, 1..weight_classes), which
    per-class metrics group on.

    Common random numbers: `rng` is split with `rng.spawn(4)` into four
    independent streams, always in this order: sizes, inter-arrivals,
    estimate errors, weight classes. Each quantity is drawn from its own
    stream, so for the same seed, changing `sigma` or `beta` (or
    `weight_classes`) leaves the size and submit columns bit-identical, and
    changing `beta` also leaves the estimates identical. Comparing grid
    points on the same jobs removes most of the sampling noise from the
    differences between them. Spawning advances `rng`'s seed sequence, so
    reproduce a workload by building a fresh generator from the same seed,
    not by calling this twice with one generator.

    Sizes (`size_dist`):
      * "weibull": Weibull(`shape`) scaled to mean 1, as in the paper.
      * "pareto": the authors' Pareto with x_m = 0, i.e. Lomax(`alpha`) with
        scale 1 (scipy's `lomax(alpha)` = `pareto(alpha, loc=-1)`), support
        [0, inf). Its mean is 1/(alpha-1) for alpha > 1 and infinite for
        alpha <= 1.
      Both are positive with probability 1, but floating point can underflow
      to 0.0 (very small `shape`); such sizes are clipped to the smallest
      positive float rather than redrawn, to keep the streams aligned.

    Arrivals: the first job arrives at t = 0, the others after Weibull
    (`timeshape`) gaps. With `load_mode="realized"` (the default, and what
    the authors' generator did) all submit times are stretched by a single
    factor so that sum(size) / last submit == `load` exactly; this is the
    only way to target a load when the mean size is infinite (Pareto,
    alpha <= 1) and it removes load noise from heavy-tailed samples. With
    "nominal", gaps have mean E[size] / `load`, so the realized load is
    random around `load`.

    Estimates: estimate = size * X with X ~ LogNormal(0, sigma^2); sigma = 0
    gives perfect estimates (estimate == size exactly).

    Weights (§6.6): a job's class c is uniform on 1..`weight_classes`, and
    its weight is 1 / c**`beta` (beta = 0: every weight is exactly 1.0).
    """
    return pl.DataFrame(queue_columns(rng, **params), schema=WORKLOAD_SCHEMA)


def queue_columns(
    rng: np.random.Generator,
    *,
    njobs: int = 10_000,
    shape: float = 0.25,
    timeshape: float = 1.0,
    load: float = 0.9,
    sigma: float = 0.5,
    size_dist: str = "weibull",
    alpha: float = 2.0,
    beta: float = 0.0,
    weight_classes: int = 5,
    load_mode: str = "realized",
) -> dict[str, np.ndarray]:
    """`queue_workload`'s draw as numpy columns (`WORKLOAD_COLUMNS`, the
    dtypes of `WORKLOAD_SCHEMA`), before the polars frame: what the
    ``synthetic`` kind hands an engine that reads arrays
    (``schedlab.workloads.arrays.JobArrays``), the same values to the bit."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    check_params(njobs, shape, timeshape, load, sigma, size_dist, alpha, beta, weight_classes, load_mode)
    return _columns(
        rng.spawn(STREAMS),
        njobs=njobs,
        shape=shape,
        timeshape=timeshape,
        load=load,
        sigma=sigma,
        size_dist=size_dist,
        alpha=alpha,
        beta=beta,
        weight_classes=weight_classes,
        load_mode=load_mode,
    )


#: The children of its generator a draw reads (sizes, gaps, errors, classes).
STREAMS = 4


def queue_columns_of(children: list[np.random.Generator], **params: Any) -> dict[str, np.ndarray]:
    """`queue_columns` given the `STREAMS` children of its generator
    (``rng.spawn(STREAMS)``), made by the caller: a sweep's task makes those of
    all its instances at once (``schedlab.workloads.streams``). ``params``:
    `queue_columns`' own, with its defaults, already checked (`check_params`):
    a sweep's plan checks every point before any task draws it, so this
    draw does not check them again for each instance."""
    return _columns(children, **{**_DEFAULTS, **params})


def _columns(
    children, *, njobs, shape, timeshape, load, sigma, size_dist, alpha, beta, weight_classes, load_mode
) -> dict[str, np.ndarray]:
    njobs = int(njobs)
    size_rng, gap_rng, error_rng, class_rng = children

    size = _draw_sizes(size_rng, njobs, size_dist, shape, alpha)
    submit = _draw_submits(gap_rng, size, timeshape, load, size_dist, alpha, load_mode)
    if sigma == 0:
        estimate = size.copy()
    else:
        estimate = size * error_rng.lognormal(0.0, float(sigma), njobs)
    weight_class = class_rng.integers(1, int(weight_classes) + 1, size=njobs, dtype=np.int64)
    # each class's weight once, by the C library's pow (numpy's float64 power takes SIMD code of its own on
    # AVX-512 CPUs: other last bits there), then looked up: the same values as 1 / np.power elsewhere
    weights = np.array([1.0 / math.pow(float(c), float(beta)) for c in range(1, int(weight_classes) + 1)])
    weight = weights[weight_class - 1]
    return {
        "job_id": np.arange(njobs, dtype=np.int64),
        "submit": submit,
        "size": size,
        "estimate": estimate,
        "weight": weight,
        "weight_class": weight_class,
    }


#: `queue_columns`' parameters and their defaults (`queue_columns_of`'s too).
_DEFAULTS = {
    name: p.default for name, p in inspect.signature(queue_columns).parameters.items() if p.kind is p.KEYWORD_ONLY
}

#: `queue_workload` takes `queue_columns`' parameters: its signature says so (`help`, `inspect`).
queue_workload.__signature__ = inspect.signature(queue_columns).replace(  # type: ignore[attr-defined]
    return_annotation="pl.DataFrame"
)


def _unit_mean_weibull_scale(k: float) -> float:
    """Scale making Weibull(k) have mean 1: 1 / Gamma(1 + 1/k), via log-gamma so
    small k cannot overflow (math.lgamma: no scipy import in every Ray worker)."""
    return math.exp(-math.lgamma(1.0 + 1.0 / k))


def _draw_sizes(rng: np.random.Generator, njobs: int, size_dist: str, shape: float, alpha: float) -> np.ndarray:
    if size_dist == "weibull":
        size = rng.weibull(float(shape), njobs) * _unit_mean_weibull_scale(float(shape))
        culprit = f"shape={shape}"
    else:
        size = rng.pareto(float(alpha), njobs)
        culprit = f"alpha={alpha}"
    if not np.isfinite(size).all():  # the method: no np.all wrapper (every instance of a sweep, issue 42)
        raise UserError(f"{culprit} is too extreme: some job sizes overflow to infinity")
    return np.maximum(size, _TINY)


def _draw_submits(
    rng: np.random.Generator,
    size: np.ndarray,
    timeshape: float,
    load: float,
    size_dist: str,
    alpha: float,
    load_mode: str,
) -> np.ndarray:
    """Submit times: 0, then the cumulative sum of njobs-1 unit-mean Weibull gaps, then scaled."""
    gaps = rng.weibull(float(timeshape), size.size - 1) * _unit_mean_weibull_scale(float(timeshape))
    submit = np.concatenate(([0.0], np.cumsum(gaps)))
    if not np.isfinite(submit[-1]):
        raise UserError(f"timeshape={timeshape} is too extreme: arrival times overflow to infinity")
    if load_mode == "nominal":
        mean_size = 1.0 if size_dist == "weibull" else 1.0 / (float(alpha) - 1.0)
        return submit * (mean_size / float(load))
    if size.size == 1:
        return submit
    total_work = float(np.add.reduce(size))  # np.sum's very reduction, without its wrapper
    if not np.isfinite(total_work):
        raise UserError("the total job size overflows to infinity; use a lighter-tailed size distribution")
    if submit[-1] == 0.0:
        raise UserError(f"timeshape={timeshape} is too extreme: every inter-arrival gap underflows to 0")
    return submit * (total_work / (float(load) * submit[-1]))


def check_params(njobs, shape, timeshape, load, sigma, size_dist, alpha, beta, weight_classes, load_mode) -> None:
    _check_int("njobs", njobs, "an integer >= 1")
    _check_real("shape", shape, lambda v: v > 0, "a number > 0")
    _check_real("timeshape", timeshape, lambda v: v > 0, "a number > 0")
    _check_real("load", load, lambda v: v > 0, "a number > 0")
    _check_real("load", load, lambda v: v <= MAX_LOAD, f"at most {MAX_LOAD:g} (times the server's capacity)")
    _check_real("sigma", sigma, lambda v: v >= 0, "a number >= 0")
    _check_real("alpha", alpha, lambda v: v > 0, "a number > 0")
    _check_real("beta", beta, lambda v: v >= 0, "a number >= 0")
    _check_int("weight_classes", weight_classes, "an integer >= 1")
    if size_dist not in SIZE_DISTS:
        raise UserError(f"size_dist: must be one of {', '.join(SIZE_DISTS)}; got {size_dist!r}")
    if load_mode not in LOAD_MODES:
        raise UserError(f"load_mode: must be one of {', '.join(LOAD_MODES)}; got {load_mode!r}")
    if load_mode == "nominal" and size_dist == "pareto" and alpha <= 1:
        raise UserError(
            f"alpha: must be > 1 with load_mode='nominal' (a Pareto with alpha={alpha} has infinite "
            "mean size, so no arrival rate gives that load); use load_mode='realized'"
        )


def _check_int(name: str, value, rule: str) -> None:
    if type(value) is int and value >= 1:  # the usual: no abstract-class lookup
        return
    if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
        raise UserError(f"{name}: must be {rule}; got {value!r}")


def _check_real(name: str, value, ok, rule: str) -> None:
    if type(value) is float or type(value) is int:  # the usual: no abstract-class lookup (every instance checks)
        if math.isfinite(value) and ok(value):
            return
    elif not isinstance(value, bool) and isinstance(value, Real) and math.isfinite(value) and ok(value):
        return
    raise UserError(f"{name}: must be {rule}; got {value!r}")
