"""Synthetic slotted workloads for the packing engine (Psychas & Ghaderi §VII-A).

Time is slotted: A(t) ~ Poisson(rate) jobs arrive at the start of slot t
(submit = t, an integer), t = 0..slots-1, numbered in slot order. Each job's
demand (one resource) is drawn i.i.d. from a discrete distribution (``sizes``
with ``probs``, uniform over ``sizes`` when ``probs`` is omitted) or uniformly
from ``uniform = (lo, hi)``. Durations are integers: geometric with mean
``mean_service`` (support ≥ 1, success probability 1/mean_service), or fixed
(= ``mean_service``, which must then be an integer). Everything is drawn from
the given ``numpy.random.Generator``, in the order counts, demands, durations.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from schedlab.errors import UserError

PACKING_SCHEMA = {"job_id": pl.Int64(), "submit": pl.Float64(), "duration": pl.Float64(), "demand": pl.Float64()}
#: Most jobs a workload may expect (rate x slots): beyond it the table alone
#: outgrows a machine's memory (32 bytes a job), so the rate is a mistake.
MAX_EXPECTED_JOBS = 1e8


def finite(v) -> bool:
    """A finite real number, never a bool."""
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) and bool(np.isfinite(v))


def check_expected_jobs(rate: float, slots: int) -> None:
    """The rate's rule that needs the slots: at most `MAX_EXPECTED_JOBS` jobs expected."""
    if rate * slots > MAX_EXPECTED_JOBS:
        raise UserError(
            f"rate: {rate:g} jobs a slot over {slots} slots is {rate * slots:.3g} jobs; "
            f"at most {MAX_EXPECTED_JOBS:g} in one workload"
        )


def packing_workload(
    rng: np.random.Generator,
    *,
    slots: int,
    rate: float,
    sizes=None,
    probs=None,
    uniform: tuple[float, float] | None = None,
    service: str = "geometric",
    mean_service: float = 100,
) -> pl.DataFrame:
    """A job table with columns job_id, submit, duration, demand (see module docstring)."""
    if not (isinstance(slots, (int, np.integer)) and slots >= 0):
        raise UserError(f"slots: must be an integer >= 0; got {slots!r}")
    if not (finite(rate) and rate >= 0):
        raise UserError(f"rate: must be a finite number >= 0; got {rate!r}")
    check_expected_jobs(rate, slots)
    if (sizes is None) == (uniform is None):
        raise UserError("sizes: give exactly one of sizes (with optional probs) or uniform_lo/uniform_hi")
    if service not in ("geometric", "fixed"):
        raise UserError(f"service: must be 'geometric' or 'fixed'; got {service!r}")
    if not (finite(mean_service) and mean_service >= 1):
        raise UserError(f"mean_service: must be a finite number >= 1; got {mean_service!r}")
    if service == "fixed" and mean_service != int(mean_service):
        raise UserError(f"mean_service: fixed service needs an integer; got {mean_service!r}")

    counts = rng.poisson(rate, size=slots)
    submit = np.repeat(np.arange(slots, dtype=float), counts)
    n = len(submit)
    if sizes is not None:
        try:
            sizes = np.asarray(sizes, dtype=float)
        except (TypeError, ValueError):
            raise UserError(f"sizes: must be a list of numbers; got {sizes!r}") from None
        if sizes.ndim != 1 or len(sizes) == 0 or np.any(sizes <= 0):
            raise UserError(
                "sizes: must be a non-empty list of positive values "
                "(in a sweep spec write a list value as [[0.4, 0.6]]: a plain list is a grid axis)"
            )
        if probs is not None:
            probs = np.asarray(probs, dtype=float)
            if probs.shape != sizes.shape or np.any(probs < 0) or not np.isclose(probs.sum(), 1.0):
                raise UserError("probs: must be non-negative, one per size, summing to 1")
            probs = probs / probs.sum()
        demand = rng.choice(sizes, size=n, p=probs)
    else:
        assert uniform is not None  # exactly one of sizes / uniform, checked above
        lo, hi = map(float, uniform)
        if not 0 < lo < np.inf:
            raise UserError(f"uniform_lo: uniform needs 0 < lo <= hi (finite); got {uniform!r}")
        if not lo <= hi < np.inf:
            raise UserError(f"uniform_hi: uniform needs 0 < lo <= hi (finite); got {uniform!r}")
        demand = rng.uniform(lo, hi, size=n)
    if service == "geometric":
        duration = rng.geometric(1.0 / mean_service, size=n).astype(float)
    else:
        duration = np.full(n, float(mean_service))
    return pl.DataFrame(
        {"job_id": np.arange(n, dtype=np.int64), "submit": submit, "duration": duration, "demand": demand},
        schema=PACKING_SCHEMA,
    )
