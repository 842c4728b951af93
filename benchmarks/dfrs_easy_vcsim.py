"""EASY's degradation from bound on the dfrs-table pipeline's own instances,
with the canonical backfilling rule and with the DFRS authors' simulator's
(``[system] easy_backfill = "vcsim"``), next to RR-7659's Table 2 (prints a
table; asserts nothing).

The instances and the figure are the pipeline's: the batch sweep spec
``dfrs_common.specs`` builds for each set at paper scale (same seed,
workload, replications, system: whole nodes, ``estimates = "exact"``,
``bound = true``), with EASY alone and the ``easy_backfill`` axis added; its
instances are run in this process by the sweep's own task function
(``run_instances``, fast path), and the rows are summarised by the function
``dfrs_table.stats`` uses (mean, std, 95 % t half-width of the
degradation = max stretch / Theorem 1's bound; max over the instances).
Nothing is written to disk.

``--pipeline dfrs-period --results DIR`` does the same for the dfrs-period
pipeline's instances (its seeds) and its other figure, EASY's average
normalized underutilization (Figs. 2-3), and sets it beside the DFRS
curve of that pipeline's rows in DIR (a `pipelines run dfrs-period --out
DIR`): per period, the DFRS average and whether its interval lies below,
above or across each EASY's -- the claim "periods larger than 900 s give a
lower underutilization than EASY" read under both EASY rules.

Usage::

    python benchmarks/dfrs_easy_vcsim.py [--sets hpc2n,unscaled,scaled] [--subset F]
    python benchmarks/dfrs_easy_vcsim.py --pipeline dfrs-period --results DIR [--sets unscaled,scaled]

``--subset F`` takes the pipeline's seeded subset (``--subset`` of the CLI:
the first ceil(F n) synthetic traces, every load of each, and a seeded
sample of the HPC2N weeks); without it, the full sets (182 weeks, 100
unscaled traces, 900 scaled instances). Pin it to a core on a shared
machine (``taskset -c 0``).

Measured (full sets, 114.6 s wall on one shared core; docs/dfrs.md, "EASY,
measured"): average degradation canonical -> vcsim 1,777.6 -> 2,393.9
(HPC2N), 1,571.3 -> 4,351.6 (unscaled), 1,596.3 -> 4,274.9 (scaled), against
Table 2's 3,041.9, 4,955.4 and 5,262.0.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from schedlab.pipelines import dfrs_common as dc

RULES = ["canonical", "vcsim"]
#: The pipelines' data root (schedlab.pipelines.inputs): the repository's ../shared/data unless $SCHEDLAB_DATA says.
os.environ.setdefault("SCHEDLAB_DATA", str(Path(__file__).resolve().parents[2] / "shared" / "data"))


def batch_spec(trace_set: str, subset: float | None, pipeline: str = "dfrs-table") -> dict:
    """The pipeline's batch sweep of ``trace_set`` (paper scale), EASY only, both rules."""
    import importlib

    module = importlib.import_module(f"schedlab.pipelines.{pipeline.replace('-', '_')}")
    overrides = {} if subset is None else {dc.SUBSET_KEY: subset}
    doc = {**module.DOC, "sets": [trace_set]}
    (spec,) = [s for s in dc.specs(doc, "paper", overrides) if s["engine"] == "batch"]
    spec["policies"] = ["EASY"]
    spec["system"] = {**spec["system"], "easy_backfill": RULES}
    spec["tracking"] = {"enabled": False}
    return spec


def run_set(trace_set: str, subset: float | None, pipeline: str = "dfrs-table"):
    """(summary rows of EASY under both rules on the set's instances, instances, wall seconds)."""
    import polars as pl

    from schedlab.platform.execution.tasks import run_instances
    from schedlab.platform.planning.plan import build_plan
    from schedlab.platform.planning.validate import parse_spec
    from schedlab.workloads.registry import workload_kind

    t0 = time.perf_counter()
    spec = parse_spec(batch_spec(trace_set, subset, pipeline), f"{pipeline} {trace_set} batch")
    plan = build_plan(spec)
    n = spec.replications.n
    instances = list(plan.instances(range(n)))
    kind = workload_kind(instances[0].point.kind)
    shared = kind.load_shared(instances[0].point.params) if kind.load_shared else None  # one trace file per set
    frames = []
    for inst in instances:
        res = run_instances(plan.engine, [(inst, list(inst.point.configs))], shared, False, plan.metrics)
        if res.failures:
            raise RuntimeError(f"{trace_set}: {res.failures[0]}")
        frames.append(pl.DataFrame(res.summary))
    rows = pl.concat(frames, how="diagonal_relaxed")
    return rows, len(instances), time.perf_counter() - t0


def period_main(sets: list[str], subset: float | None, results: str) -> None:
    """EASY's underutilization under both rules beside the dfrs-period run's DFRS curve (module docstring)."""
    from pathlib import Path

    from schedlab.pipelines import dfrs_period
    from schedlab.platform.statistics.stats import summarize

    dirs = {p.name: p for p in Path(results).iterdir() if p.is_dir()}
    dfrs_tables = dfrs_period.tables(dirs)
    col = "underutilization"
    for trace_set in sets:
        rows, count, wall = run_set(trace_set, subset, "dfrs-period")
        easy = {
            r["system_easy_backfill"]: (r[f"{col}_mean"], r[f"{col}_ci95"])
            for r in summarize(rows, ["system_easy_backfill"], [col]).iter_rows(named=True)
        }
        print(
            f"\n{trace_set} ({count} instances, {wall:.1f} s): EASY's average underutilization (± 95 %): "
            + ", ".join(f"{rule} {m:.3f} ± {h:.3f}" for rule, (m, h) in easy.items()),
            flush=True,
        )
        print(f"| period (s) | {dfrs_period.dc.BEST} (± 95 %) | " + " | ".join(f"vs EASY {r}" for r in RULES) + " |")
        print("|---|---|" + "---|" * len(RULES))
        dfrs = dfrs_tables[trace_set][0].sort("policy_period")
        for r in dfrs.iter_rows(named=True):
            m, h = r[f"{col}_mean"], r[f"{col}_ci95"] or 0.0
            sides = []
            for rule in RULES:
                em, eh = easy[rule]
                side = "below" if m + h < em - eh else "above" if m - h > em + eh else "overlap"
                sides.append(f"{side} ({'<' if m < em else '>='} its average)")
            print(f"| {r['policy_period']:g} | {m:.3f} ± {h:.3f} | " + " | ".join(sides) + " |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", default="hpc2n,unscaled,scaled")
    ap.add_argument("--subset", type=float, help="the pipeline's seeded subset fraction F (default: full sets)")
    ap.add_argument("--pipeline", choices=["dfrs-table", "dfrs-period"], default="dfrs-table")
    ap.add_argument("--results", help="dfrs-period: the dir of a `pipelines run dfrs-period --out DIR`")
    args = ap.parse_args()
    if args.pipeline == "dfrs-period":
        if not args.results:
            ap.error("--pipeline dfrs-period needs --results DIR")
        period_main(args.sets.split(","), args.subset, args.results)
        return

    import polars as pl

    from schedlab.pipelines.dfrs_table import METRIC
    from schedlab.platform.statistics.stats import summarize

    doc = dc.read("schedlab.pipelines.dfrs_table")
    (easy,) = [row[1:] for row in doc["published"]["table2"] if row[0] == "EASY"]  # Table 2's EASY row
    print("| set | instances | rule | avg (± 95 %) | std | max | published avg / std / max | ours / published avg |")
    print("|---|---|---|---|---|---|---|---|")
    for trace_set in args.sets.split(","):
        rows, count, wall = run_set(trace_set, args.subset)
        stats = summarize(rows, ["system_easy_backfill"], [METRIC], std=True).join(
            rows.group_by("system_easy_backfill").agg(pl.col(METRIC).max().alias("max")), on="system_easy_backfill"
        )
        k = doc["sets"].index(trace_set)  # Table 2's column order: real-world, unscaled, scaled
        pa, ps, pm = easy[3 * k : 3 * k + 3]
        for rule in RULES:
            r = stats.filter(pl.col("system_easy_backfill") == rule).row(0, named=True)
            m = r[f"{METRIC}_mean"]
            print(
                f"| {trace_set} | {count} | {rule} | {m:,.1f} ± {r[f'{METRIC}_ci95']:,.1f} | "
                f"{r[f'{METRIC}_std']:,.1f} | {r['max']:,.1f} | {pa:,.1f} / {ps:,.1f} / {pm:,.1f} | {m / pa:.2f} |",
                flush=True,
            )
        print(f"<!-- {trace_set}: {count} instances x 2 rules, {wall:.1f} s wall -->", flush=True)


if __name__ == "__main__":
    main()
