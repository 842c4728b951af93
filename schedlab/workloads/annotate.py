"""Annotate rigid-job tables with a CPU need and a memory requirement per task
(the DFRS model, dfrs-vs-batch-scheduling §2 and §5).

The DFRS paper annotates its traces "with CPU needs and memory requirements
as described in Section 4 of the web supplement". That supplement is not
available to us, so the rules below are schedlab's own, stated explicitly
and chosen per spec; each result row carries the annotation parameters as
workload columns, so no result hides its assumption.

Tasks from processors (``cores_per_node = C``)
----------------------------------------------
The paper's clusters have multi-core nodes (HPC2N: 120 dual-core nodes; the
synthetic set: 128 quad-core nodes) while the logs count processors. With
``cores_per_node = C`` a job of p processors becomes ceil(p / C) tasks -- its
processes packed onto as few nodes as possible, one task per node -- each of
CPU need p / (C x ceil(p / C)): a full node for every task of an even-sized
job, 50 % for a serial job on a dual-core node. Batch scheduling in the
nodes model (a task holds a whole node) then wastes exactly the unused
cores of the partly filled nodes -- "a task of CPU need 50 % still occupies a
whole node" -- and nothing else. The ``procs`` column becomes the number of
tasks; the log's processor count is kept as ``procs_trace``. Why this rule
and not one task per processor: with one task of need 1/C per processor,
batch scheduling would leave half of every HPC2N node idle and EASY's
normalised underutilization would be far above the 6.4 % the paper reports
for HPC2N (§5.3.2); packing the processes gives numbers of that order.
Without ``cores_per_node`` every processor is a task and ``cpu_need`` (a
number) is its need.

Parameters (workload fields, on the ``trace`` and ``lublin`` kinds)::

    cores_per_node = 2      # tasks and CPU needs from processors (above); 0 = off
    cpu_need = 0.5          # or: every task this need (not with cores_per_node);
                            #   0 = no cpu_need column (the engine's default)
    memory = 0.1            # every task, fraction of a node's memory
    memory = "uniform"      # per job, U[memory_lo, memory_hi], from the instance's seed
    memory = "trace"        # per processor: SWF used memory (KB; else requested
                            #   memory) / node_memory_kb, times the processors per
                            #   task, clipped to [memory_lo, memory_hi]
    node_memory_kb = 0      # "trace": node memory in KB; 0 = max(1, C) x the trace's
                            #   largest per-processor value (the smallest node that
                            #   holds C processes of every job)
    memory_lo = 0.01        # "uniform" / "trace" range (and the "trace" value
    memory_hi = 1.0         #   of jobs that record no memory)

A job whose memory cannot be read from the trace (-1 in both SWF fields)
gets ``memory_lo`` (HPC2N: 2,137 of 202,871 jobs record neither). Random draws
(``"uniform"``) use their own child stream of the instance generator, so
annotating never changes the jobs themselves.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import polars as pl

from schedlab.errors import UserError

DEFAULTS: dict[str, Any] = {
    "cores_per_node": 0,
    "cpu_need": 0.0,
    "memory": 0.0,
    "node_memory_kb": 0.0,
    "memory_lo": 0.01,
    "memory_hi": 1.0,
}
MEMORY_RULES = ("uniform", "trace")
#: SWF memory fields, in order of preference, for ``memory = "trace"``.
TRACE_MEMORY_FIELDS = ("used_mem", "req_mem")


def _fraction(params: dict[str, Any], name: str, allow_zero: bool) -> float:
    v = params[name]
    low = "[0, 1] (0: not annotated)" if allow_zero else "(0, 1]"
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) \
            or not (0 <= v <= 1) or (v == 0 and not allow_zero):
        raise UserError(f"{name}: must be a number in {low}; got {v!r}")
    return float(v)


def check(params: dict[str, Any]) -> None:
    """Raise a UserError naming the field if the annotation parameters are bad."""
    cpu = _fraction(params, "cpu_need", allow_zero=True)
    c = params["cores_per_node"]
    if isinstance(c, bool) or not isinstance(c, int) or c < 0:
        raise UserError(f"cores_per_node: must be an integer >= 0 (0: a task per processor); got {c!r}")
    if c and cpu:
        raise UserError("cpu_need: give either cpu_need or cores_per_node (which sets each task's need)")
    lo = _fraction(params, "memory_lo", allow_zero=False)
    hi = _fraction(params, "memory_hi", allow_zero=False)
    if lo > hi:
        raise UserError(f"memory_lo: must be <= memory_hi ({hi}); got {lo}")
    m = params["memory"]
    if isinstance(m, str):
        if m not in MEMORY_RULES:
            raise UserError(f"memory: must be a fraction in (0, 1], 0 or one of {', '.join(MEMORY_RULES)}; "
                            f"got {m!r}")
    else:
        _fraction(params, "memory", allow_zero=True)
    nm = params["node_memory_kb"]
    if isinstance(nm, bool) or not isinstance(nm, (int, float)) or not math.isfinite(nm) or nm < 0:
        raise UserError(f"node_memory_kb: must be a number >= 0 (0: the trace's largest value); got {nm!r}")


def trace_memory_kb(jobs: pl.DataFrame) -> np.ndarray:
    """Per-processor memory in KB from the SWF fields (NaN where neither is known)."""
    out = np.full(jobs.height, np.nan)
    for name in reversed(TRACE_MEMORY_FIELDS):  # preferred field last, so it wins
        if name in jobs.columns:
            col = jobs[name].cast(pl.Float64).to_numpy()
            out = np.where(col > 0, col, out)
    return out


def annotate(jobs: pl.DataFrame, rng: np.random.Generator, params: dict[str, Any],
             shared_max_kb: float | None = None) -> pl.DataFrame:
    """Tasks, ``cpu_need`` and ``memory`` columns as ``params`` ask (module docstring).

    ``shared_max_kb``: the largest per-processor memory of the whole trace
    (not only this window), the default node memory of ``memory = "trace"``,
    so every window of a trace is annotated on the same node size."""
    cores = int(params["cores_per_node"])
    procs = jobs["procs"].cast(pl.Int64).to_numpy() if "procs" in jobs.columns else np.ones(jobs.height, np.int64)
    per_task = np.ones(jobs.height)  # processors per task
    cols: list[Any] = []
    if cores:
        tasks = -(-procs // cores)
        per_task = procs / tasks
        cols += [pl.Series("procs", tasks, dtype=pl.Int64), pl.Series("procs_trace", procs, dtype=pl.Int64),
                 pl.Series("cpu_need", per_task / cores)]
    elif params["cpu_need"]:
        cols.append(pl.lit(float(params["cpu_need"])).alias("cpu_need"))
    m = params["memory"]
    lo, hi = float(params["memory_lo"]), float(params["memory_hi"])
    if m == "uniform":
        child = rng.spawn(1)[0]
        cols.append(pl.Series("memory", child.uniform(lo, hi, jobs.height)))
    elif m == "trace":
        kb = trace_memory_kb(jobs)
        largest = shared_max_kb or (float(np.nanmax(kb)) if np.isfinite(kb).any() else math.nan)
        node = float(params["node_memory_kb"]) or max(1, cores) * largest
        if not (isinstance(node, float) and math.isfinite(node) and node > 0):
            raise UserError('memory: "trace" needs SWF memory fields (used_mem / req_mem) or node_memory_kb > 0')
        frac = np.where(np.isfinite(kb), kb * per_task / node, lo)
        cols.append(pl.Series("memory", np.clip(frac, lo, hi)))
    elif m:
        cols.append(pl.lit(float(m)).alias("memory"))
    return jobs.with_columns(cols) if cols else jobs


def wanted(params: dict[str, Any]) -> bool:
    return bool(params["cores_per_node"] or params["cpu_need"] or params["memory"])


__all__ = ["DEFAULTS", "MEMORY_RULES", "annotate", "check", "trace_memory_kb", "wanted"]
