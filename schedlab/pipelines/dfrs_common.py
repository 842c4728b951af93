"""The DFRS paper's experimental setting (dfrs-vs-batch-scheduling §5), shared by
its pipelines (dfrs-fig1, dfrs-table, dfrs-period).

Three trace sets, each annotated by schedlab's stated rule
(``schedlab/workloads/annotate.py``; the paper's is in its unavailable web
supplement):

* ``hpc2n`` -- the HPC2N log (120 dual-core nodes) cut into week-long windows
  (the paper's 182 weeks; our cut from the first submission gives 181),
  processors packed two per node (``cores_per_node = 2``), memory from the
  log's per-processor memory.
* ``unscaled`` -- Lublin-Feitelson traces of ``njobs`` jobs (the paper: 100
  traces of 1000 jobs) drawn for 512 processors and packed four per node onto
  128 quad-core nodes, memory per task uniform in [0.05, 0.5] of a node.
* ``scaled`` -- the same model scaled to offered loads 0.1 .. 0.9.

Each set is two sweeps on the same instances: DFRS algorithms (engine
``dfrs``, 5-minute penalty) and batch scheduling (engine ``batch``, a whole
node per task, the comparison the paper makes). Both compute Theorem 1's
lower bound on the optimal max stretch for every instance (memoised per
instance, so several policies cost one bound), so every row has its
``degradation`` = max stretch / bound and its normalised ``underutilization``.
The two sweeps share seed and workload, hence identical instances.

Differences from the paper, by necessity: the annotation rule (above); a
``scaled`` instance at load x is drawn with its own seed (the paper scales the
same 100 traces to each load), so loads are compared across independent
traces; ``quick`` uses fewer and shorter traces.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from schedlab.pipelines.base import deep_merge

HPC2N = "../shared/data/pwa-swf/HPC2N-2002-2.2-cln.swf.gz"  # relative to the repository root
PENALTY = 300.0  # s per pause or migration (§5: "a five-minute penalty")
DAY = 86400.0
WEEK = 7 * DAY
NODES = {"hpc2n": 120, "unscaled": 128, "scaled": 128}
TITLES = {"hpc2n": "HPC2N weeks (real-world)", "unscaled": "unscaled synthetic", "scaled": "scaled synthetic"}
LOADS = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
BATCH = ["FCFS", "EASY"]
BEST = "GreedyPM*/per/OPT=MIN/MINVT=600"  # §5.1: "the best DFRS algorithm regardless of the load level"
MEMORY = {"memory": "uniform", "memory_lo": 0.05, "memory_hi": 0.5}

#: Trace counts and sizes per scale. HPC2N windows: "all" weeks at paper scale
#: (about 1,100 jobs each); four spread-out two-day windows at quick scale (a
#: few hundred jobs each, like the quick Lublin traces); one day at smoke scale.
#: Smoke scale also shrinks the synthetic cluster (16 nodes) so that 60 jobs contend.
SCALES: dict[str, dict[str, Any]] = {
    "smoke": {"njobs": 60, "loads": [0.3, 0.9], "n": 1, "window_length": DAY, "windows": [400],
              "synthetic_nodes": 16},
    "quick": {"njobs": 300, "loads": [0.1, 0.3, 0.5, 0.7, 0.9], "n": 3, "window_length": 2 * DAY,
              "windows": [100, 250, 400, 550]},
    "paper": {"njobs": 1000, "loads": LOADS, "n": 100, "window_length": WEEK, "windows": "all"},
}


def nodes(trace_set: str, scale: str) -> int:
    """Cluster size of a set at a scale (the paper's, except the smoke synthetic cluster)."""
    return SCALES[scale].get("synthetic_nodes", NODES[trace_set]) if trace_set != "hpc2n" else NODES[trace_set]


def workload(trace_set: str, scale: str) -> dict[str, Any]:
    s = SCALES[scale]
    if trace_set == "hpc2n":
        return {"kind": "trace", "reader": "swf", "path": HPC2N, "window_length": s["window_length"],
                "window": s["windows"], "cores_per_node": 2, "memory": "trace"}
    load = list(s["loads"]) if trace_set == "scaled" else 0.0
    return {"kind": "lublin", "njobs": s["njobs"], "nodes": 4 * nodes(trace_set, scale), "load": load,
            "cores_per_node": 4, **MEMORY}


def set_specs(prefix: str, trace_set: str, scale: str, dfrs_policies: list[Any], batch_policies: list[str],
              seed: int, overrides: dict[str, Any]) -> list[dict[str, Any]]:
    """The DFRS sweep and the batch sweep of one trace set (same seed and
    workload, hence the same instances); names ``{prefix}-{set}-dfrs-{scale}``
    and ``{prefix}-{set}-batch-{scale}``."""
    n = 1 if trace_set == "hpc2n" else SCALES[scale]["n"]
    # One instance per Ray task: a DFRS job-run costs far more than the queue
    # engine's the default packing (execution.task_jobs) is sized for.
    common = {"seed": seed, "workload": workload(trace_set, scale), "replications": {"n": n},
              "execution": {"task_jobs": 1}}
    out = []
    if dfrs_policies:
        out.append({"name": f"{prefix}-{trace_set}-dfrs-{scale}", "engine": "dfrs", "policies": list(dfrs_policies),
                    "system": {"nodes": nodes(trace_set, scale), "penalty": PENALTY, "bound": True}, **common})
    if batch_policies:
        out.append({"name": f"{prefix}-{trace_set}-batch-{scale}", "engine": "batch", "policies": list(batch_policies),
                    "system": {"model": "nodes", "nodes": nodes(trace_set, scale), "tasks_per_node": 1,
                               "bound": True},
                    **common})
    return [deep_merge(spec, overrides) for spec in out]


def rows(results_dirs: dict[str, Path], prefix: str, trace_set: str):
    """Summary rows of a set's DFRS and batch sweeps in one polars frame
    (columns: policy, replication, load or window, degradation,
    underutilization, stretch_max, policy_period where present)."""
    import polars as pl

    from schedlab import load

    frames = [load(d).collect() for name, d in sorted(results_dirs.items())
              if name.startswith(f"{prefix}-{trace_set}-")]
    if not frames:
        raise ValueError(f"no results for trace set {trace_set!r} of {prefix}")
    return pl.concat(frames, how="diagonal_relaxed")


def instance_key(trace_set: str) -> list[str]:
    """The columns naming one instance within a set (with ``replication``)."""
    return ["window"] if trace_set == "hpc2n" else ["load"]


__all__ = ["BATCH", "BEST", "HPC2N", "LOADS", "NODES", "PENALTY", "SCALES", "TITLES", "instance_key", "nodes",
           "rows", "set_specs", "workload"]
