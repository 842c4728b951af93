"""Warm-up deletion for queue-engine sweeps (``[outputs] warmup = "mser5"``).

A synthetic instance starts empty, so its first jobs see a lighter system
than in steady state and a run's mean sojourn time is biased low. With
``warmup = "mser5"`` each instance gets one truncation point d, and every
policy's steady-state metrics are computed on the jobs after the first d
*in arrival order* (``submit``, table order for ties):

* **Reference series.** MSER-5 (White 1997; `stats.mser5`) runs on the
  unfinished work each arriving job finds in the system (Lindley's recursion
  on the instance's arrivals and sizes). Every queue policy is work
  conserving, so this series is the same for all of them: it depends only on
  the instance. Hence the *same* leading jobs are dropped for every policy of
  a replication -- the pairs stay pairs -- and the cut does not depend on
  which configurations a task happens to run (a resumed sweep, or
  select-best running only the surviving policies, gets the same d).
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

The task (`tasks.run_instances`) calls `cut` once per instance and `apply`
after each configuration ran.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from schedlab.platform.stats import mser5, obm

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


def cut(method: str, jobs) -> int:
    """How many leading jobs (in arrival order) to delete from every run of
    this instance (a polars job table with ``submit`` and ``size``)."""
    if method not in METHODS:
        raise ValueError(f"unknown warm-up method {method!r}; choose from: {', '.join(METHODS)}")
    submit = jobs["submit"].to_numpy()
    size = jobs["size"].to_numpy()
    order = arrival_order(submit)
    return mser5(work_found(submit[order], size[order]))


def apply(result, d: int, weight_class=None, metric_fns=()) -> dict[str, Any]:
    """The columns of one queue-engine run that change with the cut: steady-
    state metrics of the jobs after the first ``d`` (arrival order),
    ``warmup_jobs`` and ``mst_obm_ci95``. ``weight_class``: the job table's
    column (same order as the run's per-job arrays), if it has one."""
    from schedlab.sim.metrics import queue_summary

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
