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

Each set is two sweeps on the same instances (same seed and workload): DFRS
algorithms (engine ``dfrs``, 5-minute penalty) and batch scheduling (engine
``batch``, a whole node per task, the comparison the paper makes;
``estimates = "exact"``: RR-7659 §5.2, "we conservatively assume that EASY
has perfect knowledge of job processing times" -- the HPC2N log's requested
times are not used). Both compute Theorem 1's lower bound on the optimal max
stretch for every instance (memoised per instance: several policies cost one
bound), so every row has its ``degradation`` = max stretch / bound and its
normalised ``underutilization``.

The unscaled and scaled sets share their traces, as in the paper ("we
multiplied the job inter-arrival times in each generated trace by 9 computed
constants"): both draw with ``same_trace`` from one seed (the pipeline's
``seeds``), so replication r of the unscaled set is the trace that
replication r of the scaled set rescales to every load.

Differences from the paper: ``quick`` and ``smoke`` use fewer and shorter
traces (``smoke`` also a 16-node synthetic cluster).

Seeded subsets (``subset`` in the overrides, the CLI's ``--subset F``): a
fraction F of each set's traces -- the first ceil(F n) replications of the
synthetic sets (independent draws, so a prefix is a random sample; the
scaled set keeps all 9 loads of each) and a seeded sample of ceil(F W) of
the W HPC2N windows (``SUBSET_SEED``; a smaller F's sample is contained in a
larger one's), under their own sweep names (suffix ``-subF``): a subset's
results never mix with the full run's; the reports say which they show
(``coverage``).

A DFRS pipeline's TOML file names its trace ``sets``, their ``seeds``, its
``policies`` (default: the first figure's series; the batch ones run on
engine ``batch``) and, where it sweeps them, the remapping ``periods`` per
scale: `specs` turns these into sweep specs.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from schedlab.errors import UserError
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
#: Instances behind the paper's averages per set (RR-7659 §5.3: 182 weeks, 100 traces, 100 x 9 loads).
PAPER_INSTANCES = {"hpc2n": 182, "unscaled": 100, "scaled": 900}
#: Seed of the HPC2N window sample of a subset run (fixed: the same F always picks the same weeks).
SUBSET_SEED = 7659
SUBSET_KEY = "subset"  # the overrides key the CLI's --subset sets (consumed here, never reaches a spec)
#: The pipelines that take a subset (their specs are `specs`).
SUBSET_PIPELINES = ("dfrs-fig1", "dfrs-table", "dfrs-period")
_SUB_RE = re.compile(r"-sub([0-9.e-]+)$")

#: Trace counts and sizes per scale. HPC2N windows (from UnixStartTime): "all"
#: 182 weeks at paper scale (about 1,100 jobs each); four spread-out two-day
#: windows at quick scale (118 to 492 jobs, like the quick Lublin traces); one
#: day (141 jobs) at smoke scale.
#: Smoke scale also shrinks the synthetic cluster (16 nodes) so that 60 jobs contend.
SCALES: dict[str, dict[str, Any]] = {
    "smoke": {"njobs": 60, "loads": [0.3, 0.9], "n": 1, "window_length": DAY, "windows": [400], "synthetic_nodes": 16},
    "quick": {
        "njobs": 300,
        "loads": [0.1, 0.3, 0.5, 0.7, 0.9],
        "n": 3,
        "window_length": 2 * DAY,
        "windows": [100, 250, 403, 550],
    },
    "paper": {"njobs": 1000, "loads": LOADS, "n": 100, "window_length": WEEK, "windows": "all"},
}


def nodes(trace_set: str, scale: str) -> int:
    """Cluster size of a set at a scale (the paper's, except the smoke synthetic cluster)."""
    return SCALES[scale].get("synthetic_nodes", NODES[trace_set]) if trace_set != "hpc2n" else NODES[trace_set]


def split_subset(overrides: dict[str, Any] | None) -> tuple[float | None, dict[str, Any]]:
    """(subset fraction or None, the other overrides). A fraction of 1 is the full run."""
    rest = dict(overrides or {})
    f = rest.pop(SUBSET_KEY, None)
    if f is None:
        return None, rest
    if isinstance(f, bool) or not isinstance(f, (int, float)) or not (0 < f <= 1):
        raise UserError(f"subset: must be a fraction in (0, 1]; got {f!r}")
    return (None if f == 1 else float(f)), rest


def subset_count(total: int, fraction: float | None) -> int:
    return total if fraction is None else max(1, math.ceil(fraction * total))


def hpc2n_windows(scale: str) -> list[int]:
    """The HPC2N window indices a scale replays (at paper scale: the 182
    non-empty weeks counted from UnixStartTime, read from the trace)."""
    windows = SCALES[scale]["windows"]
    if windows != "all":
        return list(windows)
    from schedlab.workloads.trace_kind import DEFAULTS, load_shared
    from schedlab.workloads.transforms import window_indices

    jobs = load_shared({**DEFAULTS, "reader": "swf", "path": HPC2N})
    return window_indices(jobs, SCALES[scale]["window_length"], 0.0)


def subset_windows(windows: list[int], fraction: float | None) -> list[int]:
    """A seeded sample of ceil(F W) windows, ascending (nested: the first k of one fixed permutation)."""
    import numpy as np

    if fraction is None:
        return list(windows)
    perm = np.random.default_rng(SUBSET_SEED).permutation(len(windows))
    return sorted(windows[i] for i in perm[: subset_count(len(windows), fraction)])


def workload(trace_set: str, scale: str, subset: float | None = None) -> dict[str, Any]:
    s = SCALES[scale]
    if trace_set == "hpc2n":
        windows = s["windows"] if subset is None else subset_windows(hpc2n_windows(scale), subset)
        return {
            "kind": "trace",
            "reader": "swf",
            "path": HPC2N,
            "window_length": s["window_length"],
            "window": windows,
            "window_origin": "header",
            "annotation": "dfrs-hpc2n",
        }
    # Both synthetic sets draw with same_trace: replication r is one trace, unscaled (load 0: the
    # model's own arrivals) or rescaled to each load (§5.3.2).
    load = list(s["loads"]) if trace_set == "scaled" else 0.0
    return {
        "kind": "lublin",
        "njobs": s["njobs"],
        "nodes": nodes(trace_set, scale),
        "load": load,
        "same_trace": True,
        "annotation": "dfrs-synthetic",
    }


def specs(doc: dict[str, Any], scale: str, overrides: dict[str, Any]) -> list[dict[str, Any]]:
    """The sweeps of a DFRS pipeline's TOML ``doc`` (module docstring): per
    trace set, a DFRS sweep and a batch sweep (same seed and workload, hence
    the same instances), named ``{name}-{set}-dfrs-{scale}`` and
    ``{name}-{set}-batch-{scale}`` (+ ``-subF`` for a subset, ``subset`` in
    ``overrides``); a DFRS policy takes the scale's ``periods`` as its
    ``period`` parameter when the doc has them."""
    subset, overrides = split_subset(overrides)
    policies = doc.get("policies") or doc["figures"][0]["plot"]["series"]
    params = {"period": list(doc["periods"][scale])} if "periods" in doc else None
    # The batch baselines first: seconds per set, so a DFRS sweep cut short (hours) still has
    # them on every instance it finished (`complete`).
    by_engine = {
        "batch": [p for p in policies if p in BATCH],
        "dfrs": [p if params is None else {"name": p, "params": params} for p in policies if p not in BATCH],
    }
    suffix = "" if subset is None else f"-sub{subset:g}"
    out = []
    for trace_set in doc["sets"]:
        n = nodes(trace_set, scale)
        systems = {
            "dfrs": {"nodes": n, "penalty": PENALTY, "bound": True},
            "batch": {"model": "nodes", "nodes": n, "tasks_per_node": 1, "bound": True, "estimates": "exact"},
        }
        # One instance per Ray task: a DFRS job-run costs far more than the queue
        # engine's, which the default packing (execution.task_jobs) is sized for.
        common = {
            "seed": doc["seeds"][trace_set],
            "workload": workload(trace_set, scale, subset),
            "replications": {"n": 1 if trace_set == "hpc2n" else subset_count(SCALES[scale]["n"], subset)},
            "execution": {"task_jobs": 1},
        }
        out += [
            deep_merge(
                {
                    "name": f"{doc['name']}-{trace_set}-{engine}-{scale}{suffix}",
                    "engine": engine,
                    "policies": list(ps),
                    "system": systems[engine],
                    **common,
                },
                overrides,
            )
            for engine, ps in by_engine.items()
            if ps
        ]
    return out


def read(module: str) -> dict[str, Any]:
    """The TOML doc of a DFRS pipeline (``module``: its module's ``__name__``), for the module's own use."""
    from schedlab.pipelines.declare import Declared

    return Declared(Path(__file__).parent / f"{module.rsplit('.', 1)[-1]}.toml").doc


def rows(results_dirs: dict[str, Path], prefix: str, trace_set: str):
    """Summary rows of a set's DFRS and batch sweeps in one polars frame
    (columns: policy, replication, load or window, degradation,
    underutilization, stretch_max, policy_period where present), of its
    complete instances only (`complete`)."""
    import polars as pl

    from schedlab import load

    dirs = [d for name, d in sorted(results_dirs.items()) if name.startswith(f"{prefix}-{trace_set}-")]
    if not dirs:
        raise ValueError(f"no results for trace set {trace_set!r} of {prefix}")
    started = [d for d in dirs if (Path(d) / "manifest.json").exists()]
    frame = complete(pl.concat([load(d).collect() for d in started], how="diagonal_relaxed"), started, trace_set)
    if len(started) < len(dirs) or frame.height == 0:
        raise UserError(
            f"{prefix}: no instance of the {TITLES[trace_set]} set is finished by every algorithm yet "
            f"(results in {Path(dirs[0]).parent}): run the pipeline longer"
        )
    return frame


def complete(frame, dirs: list[Path], trace_set: str):
    """The rows of the instances (a replication at a window or load) that
    every configuration planned for them has finished -- a row or a failure
    record. A run cut short (hours of DFRS traces, resumed across sessions)
    then reports the instances it finished, every algorithm on the same
    ones, so every comparison stays paired; a finished run loses nothing.
    The synthetic traces are independent draws, run in replication order:
    the finished ones are a random sample, and `coverage` says how many."""
    import polars as pl

    from schedlab import load

    key = instance_key(trace_set)[0]
    planned: dict[Any, int] = {}
    done = []
    for d in dirs:
        manifest = json.loads((Path(d) / "manifest.json").read_text())
        for config in manifest["configs"].values():
            point = config["params"].get(key)
            planned[point] = planned.get(point, 0) + 1
        try:
            failed = load(d, "failures").collect()
        except Exception:  # noqa: BLE001 - no failures table: nothing failed
            failed = None
        if failed is not None and failed.height:
            done.append(failed.select("config_id", "replication", key))
    if frame.height == 0:
        return frame
    done.append(frame.select("config_id", "replication", key))
    finished = (
        pl.concat(done, how="diagonal_relaxed")
        .unique(["config_id", "replication"])
        .group_by("replication", key)
        .agg(pl.len().alias("finished"))
    )
    want = pl.DataFrame({key: list(planned), "planned": list(planned.values())}, strict=False)
    whole = finished.join(want.cast({key: finished.schema[key]}), on=key).filter(
        pl.col("finished") == pl.col("planned")
    )
    return frame.join(whole.select("replication", key), on=["replication", key], how="semi")


def subset_of(results_dirs: dict[str, Path]) -> float | None:
    """The subset fraction a pipeline's sweeps ran with (from their names), None for full sets."""
    found = {m.group(1) for name in results_dirs if (m := _SUB_RE.search(name))}
    return float(found.pop()) if len(found) == 1 else None


def coverage(results_dirs: dict[str, Path], prefix: str, sets: list[str]) -> str:
    """One line saying whether a report shows full trace sets or a seeded
    subset, and how many instances of the paper's each set holds."""
    counts = []
    for trace_set in sets:
        frame = rows(results_dirs, prefix, trace_set)
        k = frame.select(["replication", *instance_key(trace_set)]).unique().height
        counts.append(f"{TITLES[trace_set]} {k} of the paper's {PAPER_INSTANCES[trace_set]}")
    f = subset_of(results_dirs)
    kind = (
        f"**Seeded subset** (fraction {f:g} of each set's traces; averages with 95 % t intervals)"
        if f is not None
        else "Full trace sets of this scale"
    )
    return f"{kind}: instances " + ", ".join(counts) + "."


def counts(ns: dict[str, Any]) -> str:
    """ "HPC2N weeks (real-world) 4, unscaled synthetic 3": the distinct ``n`` of each set's table."""
    return ", ".join(f"{TITLES[s]} {', '.join(map(str, sorted(set(t['n'].to_list()))))}" for s, t in ns.items())


def instance_key(trace_set: str) -> list[str]:
    """The columns naming one instance within a set (with ``replication``)."""
    return ["window"] if trace_set == "hpc2n" else ["load"]
