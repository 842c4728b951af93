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

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from schedlab.errors import UserError
from schedlab.pipelines.base import deep_merge
from schedlab.pipelines.common import Estimate
from schedlab.pipelines.common import exact as exact_value
from schedlab.pipelines.inputs import data_path
from schedlab.pipelines.runlog import rows_on_disk
from schedlab.platform.storage.seam import is_results_dir, require_manifest

#: The HPC2N log, below the data root (`inputs.data_path`: ``--data``, ``$SCHEDLAB_DATA``).
HPC2N = "pwa-swf/HPC2N-2002-2.2-cln.swf.gz"
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
#: The sets whose instances are fixed, not drawn: HPC2N's weeks are the trace replayed as it is,
#: annotated by a rule (`workloads.annotate.dfrs_hpc2n`); the synthetic sets are random draws.
FIXED_SETS = frozenset({"hpc2n"})
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

    jobs = load_shared({**DEFAULTS, "reader": "swf", "path": data_path(HPC2N)})
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
            "path": data_path(HPC2N),
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


def _set_rows(results_dirs: dict[str, Path], prefix: str, trace_set: str):
    """(the set's sweep dirs, those started, every row of the started ones, finished instance or not)."""
    import polars as pl

    from schedlab import load

    dirs = [d for name, d in sorted(results_dirs.items()) if name.startswith(f"{prefix}-{trace_set}-")]
    if not dirs:
        raise ValueError(f"no results for trace set {trace_set!r} of {prefix}")
    started = [d for d in dirs if is_results_dir(d)]
    every_row = pl.concat([load(d).collect() for d in started], how="diagonal_relaxed") if started else pl.DataFrame()
    return dirs, started, every_row


def rows(results_dirs: dict[str, Path], prefix: str, trace_set: str):
    """Summary rows of a set's DFRS and batch sweeps in one polars frame
    (columns: policy, replication, load or window, degradation,
    underutilization, stretch_max, policy_period where present), of its
    complete instances only (`complete`)."""
    dirs, started, every_row = _set_rows(results_dirs, prefix, trace_set)
    frame = complete(every_row, started, trace_set)
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
        manifest = require_manifest(d)
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


def instances_per_point(results_dirs: dict[str, Path], prefix: str, sets: list[str], per_load: bool = False) -> int:
    """Fewest finished instances (`complete`) behind a point of a DFRS
    report: a set's count (its averages pool the set's instances), or with
    ``per_load`` the fewest at one load of the scaled set (a figure by load).
    The report's verdicts are marked "too few" below `MIN_REPLICATIONS` by
    this count, not by the rows on disk: a run in progress has a few rows of
    its next instances on disk, which no average uses."""
    counts = []
    for trace_set in sets:
        frame = rows(results_dirs, prefix, trace_set).select(["replication", *instance_key(trace_set)]).unique()
        if per_load and trace_set == "scaled":
            counts.append(int(frame.group_by("load").len()["len"].min()))
        else:
            counts.append(frame.height)
    return min(counts)


def report(declared, dirs: dict[str, Path], out_dir: Path, prefix: str, sets: list[str], per_load: bool = False):
    """A DFRS pipeline's figure reports (`Declared.figure_report`), each with
    its finished instances per point (`instances_per_point`)."""
    figures = [declared.figure_report(fig, dirs, out_dir) for fig in declared.doc["figures"]]
    n = instances_per_point(dirs, prefix, sets, per_load)
    for f in figures:
        f.replications = n
    return figures


def subset_of(results_dirs: dict[str, Path]) -> float | None:
    """The subset fraction a pipeline's sweeps ran with (from their names), None for full sets."""
    found = {m.group(1) for name in results_dirs if (m := _SUB_RE.search(name))}
    return float(found.pop()) if len(found) == 1 else None


def coverage(results_dirs: dict[str, Path], prefix: str, sets: list[str]) -> str:
    """Whether a report shows full trace sets, a seeded subset or a run in
    progress, how many instances of the paper's each set holds (of the
    scale's, when not all), and what its simulations cost: measured so far,
    and extrapolated (`extrapolate`) to the full sets (a subset) or to the
    instances not yet finished (a run in progress)."""
    counts, costs = [], []
    for trace_set in sets:
        frame = rows(results_dirs, prefix, trace_set)
        k = frame.select(["replication", *instance_key(trace_set)]).unique().height
        est = extrapolate(results_dirs, prefix, trace_set)
        counts.append(
            f"{TITLES[trace_set]} {k} of the paper's {PAPER_INSTANCES[trace_set]}"
            + (f" ({k} of the {est.planned} this run plans{est.loads_note})" if k < est.planned else "")
        )
        costs.append(est)
    f = subset_of(results_dirs)
    in_progress = f is None and any(c.finished < c.planned for c in costs)
    kind = (
        f"**Seeded subset** (fraction {f:g} of each set's traces; averages with 95 % t intervals)"
        if f is not None
        else "**Run in progress** (not every instance of this scale is finished yet; the averages, intervals "
        "and verdicts below are over the finished instances only)"
        if in_progress
        else "Full trace sets of this scale"
    )
    line = f"{kind}: instances " + ", ".join(counts) + ".\n\n" + cost_line(costs, subset=f is not None)
    return line + (subset_wall(results_dirs, f, costs) if f is not None else "")


def subset_wall(results_dirs: dict[str, Path], fraction: float, costs: list[Cost]) -> str:
    """The subset's wall time per engine second, from its logged invocations
    (`runlog`; only when they computed every row on disk), and the full
    sets' extrapolated engine time at that ratio: what the full run would
    take on the same machine with the same parallelism ("" otherwise)."""
    from schedlab.pipelines.runlog import read_runs

    out_dir = Path(next(iter(results_dirs.values()))).parent
    runs = [r for r in read_runs(out_dir) if (r.get("overrides") or {}).get(SUBSET_KEY) == fraction]
    wall = sum(float(r.get("wall_seconds", 0.0)) for r in runs)
    rows_logged = sum(int(r.get("rows_new", 0)) for r in runs)
    spent = sum(c.spent for c in costs)
    on_disk = sum(rows_on_disk(d) for d in results_dirs.values())
    if not (wall > 0 and spent > 0 and rows_logged == on_disk) or any(c.estimate is None for c in costs):
        return ""
    r = wall / spent
    est, lo, hi = (r * sum(getattr(c, a) or 0.0 for c in costs) for a in ("estimate", "low", "high"))
    return (
        f" The subset's invocations took {_d(wall)} of wall for {_d(spent)} of engine time (x{r:.2f}): at that "
        f"ratio the full sets would take about {_d(est)} [{_d(lo)}, {_d(hi)}] of wall on the same machine "
        "(extrapolated)."
    )


def _d(s: float) -> str:
    """Seconds as hours, minutes or seconds (the cost lines)."""
    return f"{s / 3600:.2f} h" if s >= 7200 else f"{s / 60:.1f} min" if s >= 120 else f"{s:.0f} s"


#: Confidence of the extrapolated costs' intervals.
COST_CONFIDENCE = 0.95


@dataclass
class Cost:
    """The simulation cost of one trace set (engine seconds, `sim_seconds` summed over rows)."""

    trace_set: str
    spent: float  # every row on disk, finished instance or not
    finished: int  # instances every algorithm finished
    planned: int  # instances this run plans (a subset's, or the scale's)
    full: int  # instances of the full set at this scale
    #: Extrapolated seconds of the full set (a subset) or of what is left (a run in progress), with the
    #: 95 % interval; None where no stratum has a finished instance.
    estimate: float | None = None
    low: float | None = None
    high: float | None = None
    #: strata (loads) with no finished instance: counted at the highest finished load's cost (a lower bound
    #: where the cost grows with the load), so the estimate is "at least"
    unmeasured: list[Any] = field(default_factory=list)
    loads_note: str = ""


def extrapolate(results_dirs: dict[str, Path], prefix: str, trace_set: str) -> Cost:
    """The set's simulation cost: seconds spent (every row) and, from the
    finished instances (each one's seconds summed over every algorithm), the
    cost of the full set -- for a subset -- or of the planned instances not
    yet finished -- for a run in progress (minus what their rows already
    spent). Stratified by load on the scaled set (a trace's cost grows with
    its load; each load is its own stratum), one stratum elsewhere; each
    stratum's total is N x its mean per instance with a Student t interval
    (finite-population corrected), and the strata's intervals are added
    (a conservative union). The subset's instances are a random sample of
    the set (`subset_windows`, independent synthetic draws), so its mean is
    unbiased; a run in progress finishes replications in order within a load."""
    import polars as pl

    dirs, started, every_row = _set_rows(results_dirs, prefix, trace_set)
    key = instance_key(trace_set)[0]
    planned: set[tuple[int, Any]] = set()
    for d in started:
        manifest = require_manifest(d)
        n = int(manifest["spec"]["replications"]["n"])
        planned |= {(r, c["params"].get(key)) for c in manifest["configs"].values() for r in range(n)}
    scale = _scale_of(dirs[0])
    full = full_instances(trace_set, scale)
    spent = float(every_row["sim_seconds"].cast(pl.Float64).fill_null(0.0).sum()) if every_row.height else 0.0
    done = complete(every_row, started, trace_set)
    cost = Cost(trace_set, spent, done.select("replication", key).unique().height, len(planned), full)
    if done.height == 0:
        return cost
    per = done.group_by("replication", key).agg(pl.col("sim_seconds").cast(pl.Float64).fill_null(0.0).sum().alias("s"))
    stratified = trace_set == "scaled"
    strata = sorted({k for _, k in planned}) if stratified else [None]
    subset = cost.planned < full
    est = low = high = 0.0
    measured = [x for x in strata if x is None or per.filter(pl.col(key) == x).height]
    for x in strata:
        sample = per if x is None else per.filter(pl.col(key) == x)
        # the stratum's population: the full set's share for a subset, else the instances this run plans
        n = (full // len(strata)) if subset else sum(1 for _, k in planned if x is None or k == x)
        own = sample.height > 0
        if not own:
            cost.unmeasured.append(x)
            sample = per.filter(pl.col(key) == measured[-1])
        total, hw = stratum_total(sample["s"].to_list(), n, own, left=not subset)
        est, low, high = est + total, low + max(0.0, total - hw), high + total + hw
    if not subset and cost.finished < cost.planned:  # what the unfinished instances' rows already spent
        already = cost.spent - float(per["s"].sum())
        est, low, high = (max(0.0, v - already) for v in (est, low, high))
    cost.estimate, cost.low, cost.high = est, low, high
    if stratified and cost.finished < cost.planned:
        loads = sorted({float(v) for v in per[key].to_list()})
        cost.loads_note = (
            "; finished at load " + ", ".join(f"{v:g}" for v in loads) + " only" if (len(loads) < len(strata)) else ""
        )
    return cost


def stratum_total(values: list[float], n: int, own: bool, left: bool) -> tuple[float, float]:
    """(total, 95 % half-width) of a stratum of ``n`` instances from the
    per-instance seconds ``values`` of ``k`` of them: n x mean, with the
    Student t interval n t s / sqrt(k) sqrt(1 - k / n) (finite population:
    the sample is part of the stratum -- ``own``; otherwise it is another
    stratum's sample, borrowed, and no correction applies); ``left``: minus
    the sample's own sum (the instances still to run). No interval below
    two values."""
    from schedlab.platform.statistics.stats import mean_sd, t_quantile

    k = len(values)
    m, sd = mean_sd(values)
    fpc = max(0.0, 1 - k / n) ** 0.5 if own else 1.0
    hw = n * t_quantile(k, COST_CONFIDENCE) * sd / k**0.5 * fpc if k >= 2 else 0.0
    return n * m - (math.fsum(values) if own and left else 0.0), hw


def cost_line(costs: list[Cost], subset: bool) -> str:
    """The measured and the extrapolated simulation cost of a report's sets, in one paragraph."""
    d = _d

    spent = sum(c.spent for c in costs)
    parts = []
    for c in costs:
        if not subset and c.finished == c.planned:
            parts.append(f"{TITLES[c.trace_set]} finished")
            continue
        if c.estimate is None:
            parts.append(f"{TITLES[c.trace_set]}: no finished instance to extrapolate from")
            continue
        at_least = "at least " if c.unmeasured else ""
        lower = (
            f" (loads {', '.join(f'{x:g}' for x in c.unmeasured)} have no finished instance: counted at the "
            "highest finished load's cost, a lower bound where the cost grows with the load)"
            if c.unmeasured
            else ""
        )
        parts.append(f"{TITLES[c.trace_set]} {at_least}{d(c.estimate)} [{d(c.low or 0.0)}, {d(c.high or 0.0)}]{lower}")
    what = (
        "extrapolated to the full sets of this scale (each set's mean per finished instance times its full count)"
        if subset
        else "extrapolated for the instances not finished yet (each set's mean per finished instance times the "
        "instances left, minus what their rows already spent)"
    )
    done = all(c.finished == c.planned for c in costs)
    if done and not subset:
        return f"Simulation cost: {d(spent)} (`sim_seconds` summed over every row: the engines' own wall time)."
    return (
        f"Simulation cost: {d(spent)} measured (`sim_seconds` summed over every row on disk: the engines' own wall "
        f"time); **{what}, an extrapolation, not a measurement** ({COST_CONFIDENCE * 100:g} % intervals): "
        + "; ".join(parts)
        + "."
    )


def _scale_of(results_dir: Path) -> str:
    """The scale a DFRS sweep ran at, from its name (``{prefix}-{set}-{engine}-{scale}[-subF]``)."""
    name = _SUB_RE.sub("", Path(results_dir).name)
    return name.rsplit("-", 1)[-1]


def full_instances(trace_set: str, scale: str) -> int:
    """Instances of a full set at a scale (the paper's at paper scale)."""
    if scale == "paper":
        return PAPER_INSTANCES[trace_set]
    s = SCALES[scale]
    if trace_set == "hpc2n":
        return len(hpc2n_windows(scale))
    return s["n"] * (len(s["loads"]) if trace_set == "scaled" else 1)


def counts(ns: dict[str, Any]) -> str:
    """ "HPC2N weeks (real-world) 4, unscaled synthetic 3": the distinct ``n`` of each set's table."""
    return ", ".join(f"{TITLES[s]} {', '.join(map(str, sorted(set(t['n'].to_list()))))}" for s, t in ns.items())


def instance_key(trace_set: str) -> list[str]:
    """The columns naming one instance within a set (with ``replication``)."""
    return ["window"] if trace_set == "hpc2n" else ["load"]


def exact_set(trace_set: str, ns: Any) -> bool:
    """Whether a set's averages are exact rather than estimated: a fixed set
    (`FIXED_SETS`: HPC2N's weeks, the trace replayed as it is, its
    annotation a rule, the engines deterministic) of which every instance of
    the paper's set finished (``ns``: the instance counts behind its
    averages, every one the paper's). Such an average is the very quantity
    the paper reports for that set, not a sample estimate of it: the
    interval of a mean over a whole finite population is the point (the
    finite-population correction at n = N). The synthetic sets are draws
    from the Lublin model, other draws than the paper's: their averages are
    estimates, with 95 % intervals."""
    ns = list(ns)
    return trace_set in FIXED_SETS and bool(ns) and all(n == PAPER_INSTANCES[trace_set] for n in ns)


def exact(v: float, trace_set: str) -> Estimate:
    """An average (or a ratio of averages) of a whole fixed set (`exact_set`): its interval is the point, saying
    why (`common.exact`)."""
    return exact_value(v, PAPER_INSTANCES[trace_set], "weeks")


def per_instance(frame, trace_set: str, by: str, metric: str) -> dict[Any, dict[tuple[Any, ...], float]]:
    """{value of ``by``: {instance: metric}} of a set's rows (`rows`): what a paired comparison reads."""
    import polars as pl

    keys = ["replication", *instance_key(trace_set)]
    out: dict[Any, dict[tuple[Any, ...], float]] = {}
    for (value,), group in frame.group_by([by]):
        instances = zip(*(group[k].to_list() for k in keys), strict=True)
        out[value] = dict(zip(instances, group[metric].cast(pl.Float64).to_list(), strict=True))
    return out


def exactness_note(sets: list[str], whole: list[str]) -> str:
    """The page's sentence on which averages are exact (`exact_set`) and which are estimates."""
    parts = [
        f"The {TITLES[s]} averages are over every instance of the paper's set ({PAPER_INSTANCES[s]} of "
        f"{PAPER_INSTANCES[s]}), each replayed once by deterministic engines from the trace as it is, annotated "
        "by a rule: they are that set's own averages, the quantity the paper reports, not estimates of it, so "
        'their intervals are points ("exact"). '
        for s in whole
    ]
    drawn = [TITLES[s] for s in sets if s not in FIXED_SETS]
    if drawn:
        parts.append(
            f"The {' and '.join(drawn)} sets are draws from the Lublin model (other draws than the paper's): "
            "their averages are estimates with 95 % intervals. "
        )
    return "".join(parts) + (
        "A ratio of two averages over the same instances is judged on its paired interval (the ratio of "
        "means' delta-method interval, `paired_mean_ratio`), not on the quotient of the two averages' own "
        "intervals."
    )


def reads_undecided(check: Any, sets: list[str], prefix: str, on: Any) -> Any:
    """A claim over several sets, inconclusive on some only: it reads (`base.Check.reads`) the sweeps
    of those sets alone, so that ``--decide`` grows them and not the decided ones (a set's
    instances are independent draws: more of one set's do not move another's verdict). ``on(sets)``
    checks the claim on a list of sets."""
    from schedlab.pipelines.base import INCONCLUSIVE

    if check.outcome == INCONCLUSIVE:
        undecided = [s for s in sets if on([s]).outcome == INCONCLUSIVE]
        if undecided and len(undecided) < len(sets):
            check.reads = tuple(f"{prefix}-{s}-" for s in undecided)
    return check
