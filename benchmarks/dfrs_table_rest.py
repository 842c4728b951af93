"""What is left of a dfrs-table run in progress, in simulation time, by load
(prints a table; no pass/fail; runs nothing).

A paper-scale dfrs-table run finishes the scaled set load by load (all
replications at load 0.1, then 0.2, ...), so when it is cut short the loads
above the last one it reached have no finished instance, and the report's
extrapolation (`dfrs_common.extrapolate`) can only count them at the cost of
the highest finished load -- a lower bound, since a trace's cost grows with
its load. This script gives the other estimate: the per-load cost profile of
another run of the same traces' model (``--profile``: a dfrs-fig1 seeded
subset, whose scaled set covers every load), scaled to the table's own cost
at the loads it finished:

    rest(L) = (instances left at L) x c_table(L0) x c_profile(L) / c_profile(L0)

for every unfinished load L, where c is the mean simulation seconds per
instance (every algorithm of the run summed) and L0 the table's finished
loads (their mean). The profile run has other algorithms (dfrs-fig1's 10 of
the table's 22), so the ratio is an assumption, said as such; the
per-load means and counts are printed so the reader can judge it.

Usage: python benchmarks/dfrs_table_rest.py --table DIR --profile DIR
(DIR: a pipeline's output dir, e.g. results/pipelines/dfrs-table and
results/pipelines/dfrs-fig1-sub).
"""

from __future__ import annotations

import argparse
from pathlib import Path


def per_instance(out_dir: Path, prefix: str):
    """Mean simulation seconds per finished scaled instance, by load, and the instances finished and planned."""
    import polars as pl

    from schedlab.pipelines import dfrs_common as dc

    dirs = {d.name: d for d in Path(out_dir).iterdir() if (d / "manifest.json").exists() and "-scaled-" in d.name}
    subs = {dc.subset_of({n: d}) for n, d in dirs.items()}
    if len(subs) > 1:  # a dir holding several fractions: the largest one's sweeps
        f = max(s or 1.0 for s in subs)
        dirs = {n: d for n, d in dirs.items() if (dc.subset_of({n: d}) or 1.0) == f}
    rows = dc.rows(dirs, prefix, "scaled")
    per = rows.group_by("replication", "load").agg(pl.col("sim_seconds").sum().alias("s"))
    return per.group_by("load").agg(pl.col("s").mean().alias("mean"), pl.len().alias("n")).sort("load"), dirs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--table", type=Path, required=True)
    ap.add_argument("--profile", type=Path, required=True)
    args = ap.parse_args()

    from schedlab.pipelines import dfrs_common as dc

    table, dirs = per_instance(args.table, "dfrs-table")
    profile, _ = per_instance(args.profile, "dfrs-fig1")
    cost = dc.extrapolate(dirs, "dfrs-table", "scaled")
    per_load = cost.planned // len(dc.LOADS)
    done = dict(zip(table["load"].to_list(), table["n"].to_list()))
    c_table = dict(zip(table["load"].to_list(), table["mean"].to_list()))
    c_prof = dict(zip(profile["load"].to_list(), profile["mean"].to_list()))
    base_loads = [x for x in c_table if x in c_prof]
    ratio = sum(c_table[x] for x in base_loads) / sum(c_prof[x] for x in base_loads)
    print(f"table: scaled instances finished {cost.finished} of {cost.planned}; simulation so far {cost.spent:.0f} s")
    print(
        f"profile ({args.profile}): per-instance seconds scaled by {ratio:.3f} (table / profile at loads {base_loads})"
    )
    print(f"{'load':>5} {'profile s/inst':>15} {'n':>4} {'table s/inst':>13} {'n':>4} {'left':>5} {'rest (s)':>10}")
    rest = 0.0
    for x in dc.LOADS:
        left = per_load - done.get(x, 0)
        each = c_table[x] if x in c_table else ratio * c_prof[x]
        rest += left * each
        tab = f"{c_table[x]:13.1f} {done[x]:4d}" if x in c_table else f"{'-':>13} {'-':>4}"
        print(
            f"{x:5.1f} {c_prof.get(x, float('nan')):15.1f} {profile.filter(profile['load'] == x)['n'].sum():4d} "
            f"{tab} {left:5d} {left * each:10.0f}"
        )
    already = cost.spent - float(table["mean"].dot(table["n"]))  # rows of instances not finished yet
    rest = max(0.0, rest - already)
    print(
        f"rest of the scaled set: about {rest:.0f} s = {rest / 3600:.2f} h of simulation (extrapolated by the "
        f"profile; {already:.0f} s already spent on unfinished instances deducted); the report's lower bound: "
        f"{cost.estimate or 0.0:.0f} s"
    )


if __name__ == "__main__":
    main()
