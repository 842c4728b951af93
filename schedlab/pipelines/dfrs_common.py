"""The DFRS paper's experimental setting (dfrs-vs-batch-scheduling §5), shared by
its pipelines (dfrs-fig1, dfrs-table, dfrs-period).

Three trace sets, each annotated by the paper's own rule (the long version,
INRIA RR-7659 §5.3; ``schedlab/workloads/annotate.py``, workload field
``annotation``):

* ``hpc2n`` -- the HPC2N log (120 dual-core nodes) cut into week-long windows
  from the header's UnixStartTime (``window_origin = "header"``: week k =
  floor(submit / 604,800 s), the paper's 182 weeks; a cut from the first
  submission gives 181), annotated by ``"dfrs-hpc2n"`` (§5.3.1: per-processor
  memory max(requested, used) / 2 GB, at least 10 %; an even job below 50 %
  runs p / 2 tasks of CPU 100 % with the memory doubled, any other p tasks of
  CPU 50 %).
* ``unscaled`` -- Lublin-Feitelson traces of ``njobs`` jobs (the paper: 100
  traces of 1000 jobs) drawn for the 128-node cluster, annotated by
  ``"dfrs-synthetic"`` (§5.3.2: a job of p nodes is p tasks, CPU 25 % for a
  one-task job else 100 %, memory 10 % for 55 % of the jobs, else 10 x %, x
  uniform on {2..10}).
* ``scaled`` -- the same model with ``same_trace``: replication r is one
  trace whose inter-arrival times are multiplied by one constant per offered
  load 0.1 .. 0.9 (§5.3.2, "9 new traces with identical job mixes").

Each set is two sweeps on the same instances: DFRS algorithms (engine
``dfrs``, 5-minute penalty) and batch scheduling (engine ``batch``, a whole
node per task, the comparison the paper makes). Both compute Theorem 1's
lower bound on the optimal max stretch for every instance (memoised per
instance, so several policies cost one bound), so every row has its
``degradation`` = max stretch / bound and its normalised ``underutilization``.
The two sweeps share seed and workload, hence identical instances.

Differences from the paper: ``quick`` and ``smoke`` use fewer and shorter
traces (``smoke`` also a 16-node synthetic cluster); the unscaled and scaled
sets are drawn with different seeds (the paper's scaled traces are its 100
unscaled ones, rescaled).
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

#: Trace counts and sizes per scale. HPC2N windows (from UnixStartTime): "all"
#: 182 weeks at paper scale (about 1,100 jobs each); four spread-out two-day
#: windows at quick scale (118 to 492 jobs, like the quick Lublin traces); one
#: day (141 jobs) at smoke scale.
#: Smoke scale also shrinks the synthetic cluster (16 nodes) so that 60 jobs contend.
SCALES: dict[str, dict[str, Any]] = {
    "smoke": {"njobs": 60, "loads": [0.3, 0.9], "n": 1, "window_length": DAY, "windows": [400],
              "synthetic_nodes": 16},
    "quick": {"njobs": 300, "loads": [0.1, 0.3, 0.5, 0.7, 0.9], "n": 3, "window_length": 2 * DAY,
              "windows": [100, 250, 403, 550]},
    "paper": {"njobs": 1000, "loads": LOADS, "n": 100, "window_length": WEEK, "windows": "all"},
}


def nodes(trace_set: str, scale: str) -> int:
    """Cluster size of a set at a scale (the paper's, except the smoke synthetic cluster)."""
    return SCALES[scale].get("synthetic_nodes", NODES[trace_set]) if trace_set != "hpc2n" else NODES[trace_set]


def workload(trace_set: str, scale: str) -> dict[str, Any]:
    s = SCALES[scale]
    if trace_set == "hpc2n":
        return {"kind": "trace", "reader": "swf", "path": HPC2N, "window_length": s["window_length"],
                "window": s["windows"], "window_origin": "header", "annotation": "dfrs-hpc2n"}
    if trace_set == "scaled":
        return {"kind": "lublin", "njobs": s["njobs"], "nodes": nodes(trace_set, scale), "load": list(s["loads"]),
                "same_trace": True, "annotation": "dfrs-synthetic"}
    return {"kind": "lublin", "njobs": s["njobs"], "nodes": nodes(trace_set, scale), "load": 0.0,
            "annotation": "dfrs-synthetic"}


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
