"""Annotate rigid-job tables with a CPU need and a memory requirement per task
(the DFRS model, dfrs-vs-batch-scheduling §2 and §5).

The TPDS paper annotates its traces "with CPU needs and memory requirements
as described in Section 4 of the web supplement"; the long version of the
paper (INRIA RR-7659, dfrs-rr7659-long-version.txt, §5.3.1 and §5.3.2) gives
those rules. Workload field ``annotation`` picks the rule; every result row
carries the annotation parameters as workload columns, so no result hides
its assumption.

    annotation = "schedlab"        # default: schedlab's own rule, set by the
                                   #   fields below (cores_per_node, cpu_need, memory)
    annotation = "dfrs-hpc2n"      # the paper's HPC2N rule (§5.3.1), below
    annotation = "dfrs-synthetic"  # the paper's synthetic rule (§5.3.2), below

The paper's rules take no parameter: with them, ``cores_per_node``,
``cpu_need``, ``memory``, ``node_memory_kb``, ``memory_lo`` and ``memory_hi``
must stay at their defaults (a UserError names the one that does not).
Either rule sets ``procs`` to the number of tasks and adds ``cpu_need`` and
``memory`` (fraction of a node) per task; the HPC2N rule keeps the log's
processor count as ``procs_trace``.

``"dfrs-hpc2n"`` -- RR-7659 §5.3.1, quoted
------------------------------------------
"First, job per-processor memory requirements were set as the maximum of
either requested or used memory as a fraction of the system memory of 2GB, to
a minimum of 10%. Of the 202,876 jobs in the trace, only 2,142 (~ 1%) did not
give values for either used or requested memory and so were assigned the lower
bound of 10%. Second, the swf file format [1] contains information about the
required number of "processors," but not the number of tasks, and so this
value had to be inferred. For jobs that required an even number of processors
and had a per-processor memory requirement less than 50% of the available node
memory, we assumed that the job used a number of multi-threaded tasks equal to
half the number of processors. In this case, we assume that each task has a
CPU need of 100% (saturating the two cores of a dual-core node) and the memory
requirement was doubled from its initial per-processor value. For jobs
requiring an odd number of processors or more than 50% of the available node
memory per processor, we assumed that the number of tasks was equal to the
number of processors and that each of these tasks had a CPU need of 50%
(saturating one core of a dual-core mode)." (The cluster: "a 120-node
dual-core cluster".)

So, with p = processors (SWF field 5, ``procs``) and, per processor,
``m = max(requested, used) / 2 GB`` (SWF fields 10 ``req_mem`` and 7
``used_mem``, KB per processor), then ``m = max(m, 0.1)``:

* p even and m < 0.5: p / 2 tasks, CPU need 1.0, memory 2 m;
* otherwise (p odd, or m >= 0.5): p tasks, CPU need 0.5, memory m.

Details the paper leaves open, decided here:

* 2 GB = 2 x 1024 x 1024 KB = 2,097,152 KB (``HPC2N_NODE_MEMORY_KB``). The
  log's largest per-processor value, 2,048,000 KB, is then 97.7 % of a node;
  with 2,000,000 KB it would exceed a node.
* Unknown values are -1 in SWF: a field <= 0 is unknown, the maximum is
  taken over the known one(s); a job with neither gets the 10 % floor
  (HPC2N: 2,137 of the 202,871 jobs of the cleaned log -- the paper's 202,876
  and 2,142 count the five jobs <= 10 the cleaning also removed).
* m exactly 0.5 is not "less than 50%": p tasks of 50 % (HPC2N: 16 jobs
  request exactly 1,048,576 KB).
* A per-processor value above the node memory cannot be a task on a node:
  a UserError (never in HPC2N).

``"dfrs-synthetic"`` -- RR-7659 §5.3.2, quoted
----------------------------------------------
"For the synthetic workloads we arbitrarily assume quad-core nodes, meaning
that a sequential task would use at most 25% of a node's CPU resource. [...]
We assume that the task in a one-task job is sequential, but that all other
tasks are multi-threaded. We assume that all tasks are CPU-bound: CPU needs of
sequential tasks are 25% and those of other tasks are 100%. [...] We opt for a
simple model suggested by data in Setia et al. [2]: 55% of the jobs have tasks
with a memory requirement of 10%. The remaining 45% of the jobs have tasks
with memory requirements 10 x x%, where x is an integer value uniformly
distributed over {2,. . . ,10}. We generated 100 distinct traces of 1,000 jobs
assuming a 128-node cluster."

So a Lublin job of p nodes (drawn for the 128-node cluster: ``nodes = 128``)
is p tasks; CPU need 0.25 if p = 1, else 1.0; memory per task, per job: 0.1
with probability 0.55, else x / 10 with x uniform on {2, ..., 10}. "55% of
the jobs" is read as a per-job probability (each job independently), not as
exactly 55 % of every trace. The draws use their own child stream of the
instance generator (``rng.spawn(1)``), so annotating never changes the jobs.

``"schedlab"`` -- schedlab's own rule (the default, kept for earlier sweeps)
---------------------------------------------------------------------------
Written before the long version was at hand; chosen per spec by the fields
below.

Tasks from processors (``cores_per_node = C``): the paper's clusters have
multi-core nodes (HPC2N: 120 dual-core nodes; the synthetic set: 128
quad-core nodes) while the logs count processors. With ``cores_per_node = C``
a job of p processors becomes ceil(p / C) tasks -- its processes packed onto
as few nodes as possible, one task per node -- each of CPU need
p / (C x ceil(p / C)): a full node for every task of an even-sized job, 50 %
for a serial job on a dual-core node. The ``procs`` column becomes the number
of tasks; the log's processor count is kept as ``procs_trace``. Without
``cores_per_node`` every processor is a task and ``cpu_need`` (a number) is
its need.

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
gets ``memory_lo``. Random draws (``"uniform"``) use their own child stream
of the instance generator, so annotating never changes the jobs themselves.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import polars as pl

from schedlab.errors import UserError

DEFAULTS: dict[str, Any] = {
    "annotation": "schedlab",
    "cores_per_node": 0,
    "cpu_need": 0.0,
    "memory": 0.0,
    "node_memory_kb": 0.0,
    "memory_lo": 0.01,
    "memory_hi": 1.0,
}
MEMORY_RULES = ("uniform", "trace")
#: ``annotation`` values: schedlab's rule (the fields) and the paper's two (RR-7659 §5.3.1, §5.3.2).
ANNOTATIONS = ("schedlab", "dfrs-hpc2n", "dfrs-synthetic")
#: The fields of schedlab's rule, which the paper's rules leave at their defaults.
RULE_FIELDS = ("cores_per_node", "cpu_need", "memory", "node_memory_kb", "memory_lo", "memory_hi")
HPC2N_NODE_MEMORY_KB = 2 * 1024 * 1024  # §5.3.1: "the system memory of 2GB" (SWF memory is in KB)
HPC2N_MEMORY_FLOOR = 0.1  # §5.3.1: "to a minimum of 10%"
HPC2N_HALF = 0.5  # §5.3.1: "less than 50% of the available node memory" -> procs / 2 tasks
SYNTHETIC_SMALL_MEMORY_PROB = 0.55  # §5.3.2: "55% of the jobs have tasks with a memory requirement of 10%"
#: SWF memory fields, in order of preference, for ``memory = "trace"``.
TRACE_MEMORY_FIELDS = ("used_mem", "req_mem")


def _fraction(params: dict[str, Any], name: str, allow_zero: bool) -> float:
    v = params[name]
    low = "[0, 1] (0: not annotated)" if allow_zero else "(0, 1]"
    if (
        isinstance(v, bool)
        or not isinstance(v, (int, float))
        or not math.isfinite(v)
        or not (0 <= v <= 1)
        or (v == 0 and not allow_zero)
    ):
        raise UserError(f"{name}: must be a number in {low}; got {v!r}")
    return float(v)


def check(params: dict[str, Any]) -> None:
    """Raise a UserError naming the field if the annotation parameters are bad."""
    rule = params["annotation"]
    if rule not in ANNOTATIONS:
        raise UserError(f"annotation: must be one of {', '.join(ANNOTATIONS)}; got {rule!r}")
    if rule != "schedlab":
        for name in RULE_FIELDS:
            if params[name] != DEFAULTS[name]:
                raise UserError(
                    f"{name}: not with annotation = {rule!r}, which sets tasks, CPU need and memory "
                    f"itself (RR-7659 §5.3); leave it out"
                )
        return
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
            raise UserError(f"memory: must be a fraction in (0, 1], 0 or one of {', '.join(MEMORY_RULES)}; got {m!r}")
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


def dfrs_hpc2n(jobs: pl.DataFrame) -> pl.DataFrame:
    """The paper's HPC2N annotation (RR-7659 §5.3.1; module docstring): tasks
    (``procs``), ``cpu_need`` and ``memory`` from the processors and the SWF
    memory fields; the processors kept as ``procs_trace``."""
    if "procs" not in jobs.columns:
        raise UserError('annotation: "dfrs-hpc2n" needs a trace with a procs column (SWF)')
    if not any(name in jobs.columns for name in TRACE_MEMORY_FIELDS):
        raise UserError('annotation: "dfrs-hpc2n" needs the SWF memory fields (used_mem, req_mem)')
    procs = jobs["procs"].cast(pl.Int64).to_numpy()
    kb = np.full(jobs.height, -1.0)  # max(requested, used); a field <= 0 (SWF -1) is unknown
    for name in TRACE_MEMORY_FIELDS:
        if name in jobs.columns:
            kb = np.maximum(kb, jobs[name].cast(pl.Float64).fill_null(-1.0).to_numpy())
    frac = np.where(kb > 0, kb / HPC2N_NODE_MEMORY_KB, 0.0)
    if (frac > 1.0).any():
        i = int(np.argmax(frac > 1.0))
        raise UserError(
            f'annotation: "dfrs-hpc2n": job {jobs["job_id"][i] if "job_id" in jobs.columns else i} '
            f"needs {kb[i]:g} KB per processor, more than the 2 GB node ({HPC2N_NODE_MEMORY_KB} KB)"
        )
    frac = np.maximum(frac, HPC2N_MEMORY_FLOOR)
    halve = (procs % 2 == 0) & (frac < HPC2N_HALF)
    return jobs.with_columns(
        pl.Series("procs", np.where(halve, procs // 2, procs), dtype=pl.Int64),
        pl.Series("procs_trace", procs, dtype=pl.Int64),
        pl.Series("cpu_need", np.where(halve, 1.0, 0.5)),
        pl.Series("memory", np.where(halve, 2.0 * frac, frac)),
    )


def dfrs_synthetic(jobs: pl.DataFrame, rng: np.random.Generator) -> pl.DataFrame:
    """The paper's synthetic annotation (RR-7659 §5.3.2; module docstring):
    ``procs`` tasks, ``cpu_need`` 0.25 for a one-task job else 1.0, ``memory``
    0.1 for a job with probability 0.55, else x / 10, x uniform on {2..10},
    drawn from a child stream of ``rng``."""
    procs = jobs["procs"].cast(pl.Int64).to_numpy() if "procs" in jobs.columns else np.ones(jobs.height, np.int64)
    child = rng.spawn(1)[0]
    small = child.random(jobs.height) < SYNTHETIC_SMALL_MEMORY_PROB
    x = child.integers(2, 11, jobs.height)  # {2, ..., 10}
    return jobs.with_columns(
        pl.Series("cpu_need", np.where(procs == 1, 0.25, 1.0)), pl.Series("memory", np.where(small, 0.1, x / 10.0))
    )


def annotate(
    jobs: pl.DataFrame, rng: np.random.Generator, params: dict[str, Any], shared_max_kb: float | None = None
) -> pl.DataFrame:
    """Tasks, ``cpu_need`` and ``memory`` columns as ``params`` ask (module docstring).

    ``shared_max_kb``: the largest per-processor memory of the whole trace
    (not only this window), the default node memory of ``memory = "trace"``,
    so every window of a trace is annotated on the same node size."""
    rule = params.get("annotation", "schedlab")
    if rule == "dfrs-hpc2n":
        return dfrs_hpc2n(jobs)
    if rule == "dfrs-synthetic":
        return dfrs_synthetic(jobs, rng)
    cores = int(params["cores_per_node"])
    procs = jobs["procs"].cast(pl.Int64).to_numpy() if "procs" in jobs.columns else np.ones(jobs.height, np.int64)
    per_task = np.ones(jobs.height)  # processors per task
    cols: list[Any] = []
    if cores:
        tasks = -(-procs // cores)
        per_task = procs / tasks
        cols += [
            pl.Series("procs", tasks, dtype=pl.Int64),
            pl.Series("procs_trace", procs, dtype=pl.Int64),
            pl.Series("cpu_need", per_task / cores),
        ]
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
    return bool(
        params.get("annotation", "schedlab") != "schedlab"
        or params["cores_per_node"]
        or params["cpu_need"]
        or params["memory"]
    )


__all__ = [
    "ANNOTATIONS",
    "DEFAULTS",
    "HPC2N_NODE_MEMORY_KB",
    "MEMORY_RULES",
    "annotate",
    "check",
    "dfrs_hpc2n",
    "dfrs_synthetic",
    "trace_memory_kb",
    "wanted",
]
