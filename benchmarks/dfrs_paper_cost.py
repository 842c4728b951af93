"""Cost of `schedlab pipelines run dfrs-table --scale paper` on this machine
(prints a table; no pass/fail).

Runs every dfrs-table algorithm (Table 2's 20 rows and the OPT=AVG / MINFT
variants) and the Theorem 1 bound once on a small sample of each trace set,
built exactly as the pipeline builds them (``dfrs_common.workload``: HPC2N
weeks of the seeded subset order, Lublin traces of the pipeline's seed rule),
and extrapolates: full cost = sum over sets and algorithms of (mean seconds
per instance on the sample) x (the paper's instances: 182 weeks, 100
unscaled, 900 scaled traces). The scaled set's cost grows with the load, so
its sample covers ``--loads`` and the mean over them stands for the nine
loads. The wall time of the whole run is that CPU time divided by the
workers (``--workers``, default 2: this machine; and 64), assuming the
instances spread evenly (one instance per Ray task; the longest single run
bounds it from below).

Usage: python benchmarks/dfrs_paper_cost.py [--sample 1] [--loads 0.1,0.5,0.9]
[--policies NAME,...] [--sets hpc2n,unscaled,scaled] [--workers 2]
or: python benchmarks/dfrs_paper_cost.py --from-results DIR -- the same table
from a finished dfrs-table run's rows (``sim_seconds`` per row, the bound's
``bound_seconds`` where an instance computed it: a seeded ``--subset`` run is
such a sample), without running anything.

Before timing a set, every algorithm runs once, untimed, on its first
instance's first jobs (``warm_up``), so that numba's one-off kernel load or
compile is not charged to the first algorithm timed.

The measurement is one run per (instance, algorithm), on a shared machine:
the table counts this process's CPU seconds (``time.process_time``), which
other work on the machine does not inflate as it does wall time (printed
beside it per run); read the figures as an estimate (the load average is
printed with them). Set ``OMP_NUM_THREADS=1`` / ``OPENBLAS_NUM_THREADS=1``
so that the allocation's BLAS calls run on this one thread, as on a Ray worker.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from schedlab.engines import get_engine
from schedlab.pipelines import dfrs_common as dc
from schedlab.pipelines import dfrs_table
from schedlab.sim.bound.stretch_bound import _BOUND_MEMO, max_stretch_lower_bound
from schedlab.workloads.registry import workload_kind

BOUND = "LP bound (Theorem 1)"
#: The pipelines' data root (schedlab.pipelines.inputs): the repository's ../shared/data unless $SCHEDLAB_DATA says.
os.environ.setdefault("SCHEDLAB_DATA", str(Path(__file__).resolve().parents[2] / "shared" / "data"))
WARM_JOBS = 60  # jobs of the untimed warm-up run per policy (``warm_up``)


def build(kind_name: str, params: dict, seed: int):
    kind = workload_kind(kind_name)
    p = kind.complete(params, "benchmark")
    kind.check(p)
    shared = kind.load_shared(p) if kind.load_shared else None
    return kind.build(np.random.default_rng(np.random.SeedSequence(seed)), p, shared)


def sample(trace_set: str, k: int, loads: list[float]) -> list[tuple[str, object]]:
    """(label, job table) of k instances of a set at paper scale."""
    wl = {k: v for k, v in dc.workload(trace_set, "paper").items() if k != "kind"}
    if trace_set == "hpc2n":
        weeks = dc.subset_windows(dc.hpc2n_windows("paper"), 1.0 / 182 * k)[:k]
        return [(f"week {w}", build("trace", {**wl, "window": w}, seed=0)) for w in weeks]
    if trace_set == "unscaled":
        return [(f"trace {r}", build("lublin", wl, seed=r)) for r in range(k)]
    return [(f"trace {r} load {x:g}", build("lublin", {**wl, "load": x}, seed=r)) for r in range(k) for x in loads]


def warm_up(jobs, policies: list[str], n: int) -> None:
    """Run every policy once on the instance's first jobs, untimed: the first
    call of a numba kernel in a process loads it from the disk cache, or
    compiles it (tens of seconds) when the cache is cold -- a one-off cost per
    machine in a real run, which would otherwise be charged to the first
    policy timed (a best effort: a kernel that only a longer run reaches is
    still loaded while timed, for about a second)."""
    dfrs, batch = get_engine("dfrs"), get_engine("batch")
    head = jobs.head(WARM_JOBS)
    for policy in policies:
        if policy in dc.BATCH:
            batch.run(head, policy, None, {"model": "nodes", "nodes": n, "tasks_per_node": 1})
        else:
            dfrs.run(head, policy, None, {"nodes": n, "penalty": dc.PENALTY})


def measured(results: str) -> dict[tuple[str, str], list[float]]:
    """{(set, algorithm): seconds per instance} from a dfrs-table run's output dir."""
    from pathlib import Path

    import polars as pl

    dirs = {d.name: d for d in Path(results).iterdir() if (d / "manifest.json").exists()}
    cost: dict[tuple[str, str], list[float]] = {}
    for trace_set in dfrs_table.SETS:
        rows = dc.rows(dirs, "dfrs-table", trace_set)
        for (policy,), grp in rows.group_by(["policy"]):
            cost[(trace_set, policy)] = grp["sim_seconds"].to_list()
        bound = rows.group_by(["replication", *dc.instance_key(trace_set)]).agg(pl.col("bound_seconds").max())
        cost[(trace_set, BOUND)] = bound["bound_seconds"].to_list()  # the memo: one row per instance paid it
    return cost


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sample", type=int, default=1, help="instances per set (scaled: traces, each at --loads)")
    ap.add_argument("--loads", default="0.1,0.5,0.9", help="loads of the scaled set's sample")
    ap.add_argument("--policies", default=",".join(dfrs_table.POLICIES))
    ap.add_argument("--sets", default="hpc2n,unscaled,scaled")
    ap.add_argument("--workers", type=int, default=2, help="workers of this machine (the other column: 64)")
    ap.add_argument("--from-results", help="a finished dfrs-table output dir: its rows' times, nothing run")
    args = ap.parse_args()
    policies = [p for p in args.policies.split(",") if p]
    sets = [s for s in args.sets.split(",") if s]
    loads = [float(x) for x in args.loads.split(",")]
    dfrs, batch = get_engine("dfrs"), get_engine("batch")
    cost: dict[tuple[str, str], list[float]] = measured(args.from_results) if args.from_results else {}
    for trace_set in [] if args.from_results else sets:
        n = dc.nodes(trace_set, "paper")
        instances = sample(trace_set, args.sample, loads)
        warm_up(instances[0][1], policies, n)
        for label, jobs in instances:
            print(f"{dc.TITLES[trace_set]}, {label}: {jobs.height} jobs", flush=True)
            _BOUND_MEMO.clear()
            t = time.process_time()
            max_stretch_lower_bound(
                jobs["submit"].to_numpy(),
                jobs["runtime"].to_numpy(),
                jobs["procs"].to_numpy(),
                jobs["cpu_need"].to_numpy(),
                float(n),
            )
            cost.setdefault((trace_set, BOUND), []).append(time.process_time() - t)
            for policy in policies:
                t, c = time.perf_counter(), time.process_time()
                if policy in dc.BATCH:
                    batch.run(jobs, policy, None, {"model": "nodes", "nodes": n, "tasks_per_node": 1})
                else:
                    dfrs.run(jobs, policy, None, {"nodes": n, "penalty": dc.PENALTY})
                wall, cpu = time.perf_counter() - t, time.process_time() - c
                cost.setdefault((trace_set, policy), []).append(cpu)
                print(f"  {policy:40s} {cpu:8.2f} s CPU {wall:8.2f} s wall", flush=True)

    rows = [BOUND] + policies
    counts = ", ".join(f"{dc.TITLES[s]} {len(cost[(s, BOUND)])}" for s in sets)
    print(
        f"\nMean seconds per instance on the sample ({counts} instances; load average now "
        f"{os.getloadavg()[0]:.1f}); paper-scale CPU hours = mean x the paper's instances:\n"
    )
    print("| algorithm | " + " | ".join(f"{dc.TITLES[s]} s/instance" for s in sets) + " | paper-scale CPU h |")
    print("|---|" + "---|" * (len(sets) + 1))
    total = 0.0
    worst = 0.0
    for row in rows:
        means = {s: float(np.mean(cost[(s, row)])) for s in sets}
        hours = sum(means[s] * dc.PAPER_INSTANCES[s] for s in sets) / 3600
        total += hours
        worst = max(worst, max(max(cost[(s, row)]) for s in sets))
        print(f"| {row} | " + " | ".join(f"{means[s]:.2f}" for s in sets) + f" | {hours:.2f} |")
    print("| **total** | " + " | ".join("" for _ in sets) + f" | {total:.2f} |")
    instances = sum(dc.PAPER_INSTANCES[s] for s in sets)
    for workers in (args.workers, 64):
        wall = max(total / workers, worst / 3600)
        print(
            f"\nwhole run on {workers} workers: about {wall:.2f} h ({wall * 60:.0f} min) for {instances} instances x "
            f"{len(policies)} algorithms (+ one bound per instance)"
            f"{'' if wall > worst / 3600 else ' (bounded by the longest run)'}"
        )


if __name__ == "__main__":
    main()
