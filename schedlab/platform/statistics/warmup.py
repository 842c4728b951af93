"""Warm-up deletion for queue-engine sweeps (``[outputs] warmup = "mser5"``).

A synthetic instance starts empty, so its first jobs see a lighter system
than in steady state and a run's mean sojourn time is biased low. With
``warmup = "mser5"`` every run of a workload point drops the same number d of
leading jobs *in arrival order* (``submit``, table order for ties), and its
steady-state metrics are computed on the rest:

* **Reference series: pilot instances.** d is the largest MSER-5 cut (White
  1997; `stats.mser5`) over ``PILOTS`` pilot instances of the workload point,
  drawn from their own seeds (``SeedSequence([sweep seed, point id,
  PILOT_TAG, k])``, never used for a replication), each cut computed on the
  unfinished work that each arriving job finds (Lindley's recursion on the
  pilot's arrivals and sizes). Every queue policy is work conserving, so that
  series is the same for all of them. Hence d is the same for every policy
  *and every replication* of the point -- pairs stay pairs, and the cut does
  not depend on which configurations a task runs (a resumed sweep, or
  select-best running only its survivors). Why pilots and not each run's own
  series: a cut chosen on the data it truncates is biased -- MSER-5 tends to
  cut the upward excursions of strongly autocorrelated output, and on M/M/1
  at load 0.9 such own-series cuts made runs of 2,000+ jobs *more* biased
  than no cut; a cut independent of the run removes the initial transient
  without that selection bias (benchmarks/steady_state.py). A trace window
  without random arrivals is deterministic, so its pilots are the window
  itself and that independence is lost.
* **Affected columns.** ``mst``, ``slowdown_mean``, ``slowdown_p50``,
  ``slowdown_p99``, ``slowdown_max``, ``mst_class_<c>`` and the spec's extra
  ``[[metrics]]`` are computed on the jobs kept; ``n_jobs`` stays the number
  of jobs run; ``makespan``, ``events`` and ``sim_seconds`` describe the
  whole run. New columns: ``warmup_jobs`` (d) and ``mst_obm_ci95``: the 95 %
  overlapping-batch-means half-width (`stats.obm`) of the kept jobs' mean
  sojourn, a confidence interval from that one run (its jobs in arrival
  order), e.g. for a single 1M-job run at load 0.99.
* Per-job rows (``per_job = true``) keep every job; drop the first
  ``warmup_jobs`` (in ``submit`` order) to see what the metrics saw.

The task (`tasks.run_instances`) asks `point_cut` once per instance (memoised
per point in the worker process) and calls `apply` after each configuration
ran.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from schedlab.platform.statistics.stats import mser5, obm

if TYPE_CHECKING:
    import polars as pl

    from schedlab.engines.base import RunResult
    from schedlab.platform.planning.plan import MetricSpec

METHODS = ("mser5",)


def arrival_order(submit: np.ndarray) -> np.ndarray:
    return np.argsort(np.asarray(submit, dtype=float), kind="stable")


def work_found(submit: np.ndarray, size: np.ndarray) -> np.ndarray:
    """Unfinished work in a work-conserving single server just before each
    arrival (jobs in arrival order; Lindley: V_0 = 0, V_{n+1} = max(0, V_n +
    S_n - (a_{n+1} - a_n))), vectorised as U - cummin(U) with U the running
    sum of S_n - (a_{n+1} - a_n)."""
    a = np.asarray(submit, dtype=float)
    s = np.asarray(size, dtype=float)
    if a.size == 0:
        return a
    steps = s[:-1] - np.diff(a)
    u = np.concatenate(([0.0], np.cumsum(steps)))
    return u - np.minimum.accumulate(np.minimum(u, 0.0))


#: Pilot instances per workload point; the cut is the largest of their cuts.
PILOTS = 5
#: Third seed word of a pilot (instances use three words; a pilot four).
PILOT_TAG = 0x57524D55


def table_cut(method: str, jobs: pl.DataFrame) -> int:
    """The MSER-5 cut of one job table (polars, ``submit`` and ``size``) on
    the unfinished work its arriving jobs find."""
    if method not in METHODS:
        raise ValueError(f"unknown warm-up method {method!r}; choose from: {', '.join(METHODS)}")
    submit = jobs["submit"].to_numpy()
    size = jobs["size"].to_numpy()
    order = arrival_order(submit)
    return mser5(work_found(submit[order], size[order]))


def cut(method: str, pilots: Iterable[pl.DataFrame]) -> int:
    """How many leading jobs (arrival order) to delete from every run of a
    workload point: the largest cut over its pilot job tables."""
    return max(table_cut(method, jobs) for jobs in pilots)


def pilot_seeds(seed: int, point_id: str) -> list[np.random.SeedSequence]:
    return [np.random.SeedSequence([seed, int(point_id, 16), PILOT_TAG, k]) for k in range(PILOTS)]


_CUTS: dict[tuple[int, str, str], int] = {}


def point_cut(method: str, seed: int, point_id: str, build: Callable[[np.random.Generator], pl.DataFrame]) -> int:
    """`cut` over the point's pilots, ``build(rng)`` drawing one instance;
    memoised per (seed, point, method) in this process."""
    key = (seed, point_id, method)
    if key not in _CUTS:
        if len(_CUTS) > 256:
            _CUTS.clear()
        _CUTS[key] = cut(method, (build(np.random.default_rng(ss)) for ss in pilot_seeds(seed, point_id)))
    return _CUTS[key]


def apply(
    result: RunResult,
    d: int,
    weight_class: npt.ArrayLike | None = None,
    metric_fns: Sequence[tuple[MetricSpec, Callable[..., Any]]] = (),
) -> dict[str, Any]:
    """The columns of one queue-engine run that change with the cut: steady-
    state metrics of the jobs after the first ``d`` (arrival order),
    ``warmup_jobs`` and ``mst_obm_ci95``. ``weight_class``: the job table's
    column (same order as the run's per-job arrays), if it has one."""
    from schedlab.sim.common.metrics import queue_summary

    jobs = result.jobs
    keep = arrival_order(jobs["submit"])[d:]
    sojourn = np.asarray(jobs["sojourn"], dtype=float)[keep]
    size = np.asarray(jobs["size"], dtype=float)[keep]
    classes = np.asarray(weight_class)[keep] if weight_class is not None else None
    out: dict[str, Any] = {k: float(v) for k, v in queue_summary(size, sojourn, classes).items() if k != "n_jobs"}
    out["warmup_jobs"] = float(d)
    out["mst_obm_ci95"] = obm(sojourn).halfwidth
    if metric_fns:
        import polars as pl

        table = pl.DataFrame(jobs)[keep]
        for m, fn in metric_fns:
            out[m.name] = float(fn(table, **m.params))
    return out
