"""The DFRS pipelines (dfrs-fig1, dfrs-table, dfrs-period): a smoke-scale run of
dfrs-fig1 (default run; the other two run with `-m full`), one bound per
instance across the DFRS and batch sweeps, and each pipeline's claim checks on
hand-made tables where the paper's statements hold and where they fail."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from schedlab.errors import UserError
from schedlab.pipelines import dfrs_common as dc
from schedlab.pipelines import dfrs_fig1, dfrs_period, dfrs_table
from schedlab.pipelines import dfrs_table as pub
from schedlab.pipelines.registry import get_pipeline
from tests.pipeline_outputs import check_outputs, run_smoke


def _run(tmp_path_factory, name):
    return run_smoke([name], tmp_path_factory.mktemp(name))[name]


@pytest.fixture(scope="module")
def fig1(tmp_path_factory):
    return _run(tmp_path_factory, "dfrs-fig1")


def test_fig1_outputs(fig1):
    check_outputs(fig1, [dfrs_fig1.POLICIES])


def test_fig1_one_bound_per_instance_across_engines(fig1):
    """The DFRS and batch sweeps share seed and workload: the same instances,
    so every policy of both engines reports the same LP bound per instance."""
    rows = dc.rows(fig1.results_dirs, "dfrs-fig1", "scaled")
    assert set(rows["policy"].to_list()) == set(dfrs_fig1.POLICIES)
    per_instance = rows.group_by("load", "replication").agg(
        pl.col("stretch_lower_bound").n_unique().alias("bounds"), pl.len().alias("policies")
    )
    assert (per_instance["bounds"] == 1).all() and (per_instance["policies"] == len(dfrs_fig1.POLICIES)).all()
    assert (rows["stretch_lower_bound"] <= rows["stretch_max"]).all()
    assert (rows["degradation"] >= 1.0).all()


def test_fig1_rerun_resumes(fig1):
    """Running a finished pipeline again computes nothing: every sweep resumes
    per key (a paper-scale run stopped part-way continues where it stopped),
    and the report's numbers and verdicts are the same."""
    again = run_smoke(["dfrs-fig1"], fig1.out_dir.parent)["dfrs-fig1"]
    assert sum(r.rows_written for r in again.sweeps) == 0
    assert sum(r.rows_skipped for r in again.sweeps) == sum(r.rows_written + r.rows_skipped for r in fig1.sweeps) > 0
    assert [(c.holds, c.detail) for f in again.figures for c in f.checks] == [
        (c.holds, c.detail) for f in fig1.figures for c in f.checks
    ]
    assert "Full trace sets of this scale" in again.report_md.read_text()


def test_a_run_cut_short_reports_the_instances_every_algorithm_finished(fig1, tmp_path):
    """A DFRS run stopped part-way (rows of one part file of its DFRS sweep never written):
    `--report-only` writes the report from what is on disk, running nothing and logging no
    run; every algorithm is shown on the same instances -- the finished ones -- and the
    coverage line says how many."""
    import shutil

    from schedlab.pipelines.run import run_pipeline
    from schedlab.pipelines.runlog import read_runs

    out = tmp_path / "cut"
    shutil.copytree(fig1.out_dir, out)
    dirs = {name: out / Path(d).name for name, d in fig1.results_dirs.items()}
    full = dc.rows(dirs, "dfrs-fig1", "scaled")
    dfrs_sweep = next(d for name, d in dirs.items() if "-dfrs-" in name)
    part = sorted((dfrs_sweep / "summary").rglob("*.parquet"))[0]  # one policy's rows (hive-partitioned)
    rows = pl.read_parquet(part, hive_partitioning=False)
    lost = rows.select("replication", "load").unique().sort("replication", "load").head(1)
    rows.join(lost, on=["replication", "load"], how="anti").write_parquet(part)  # never committed, as if cut short
    cut = dc.rows(dirs, "dfrs-fig1", "scaled")
    kept = cut.select("replication", "load").unique()
    assert kept.height == full.select("replication", "load").unique().height - lost.height > 0
    assert kept.join(lost, on=["replication", "load"], how="semi").height == 0
    per = cut.group_by("policy").agg(pl.len().alias("n"))
    assert set(per["policy"]) == set(dfrs_fig1.POLICIES) and per["n"].n_unique() == 1  # paired: same instances
    runs = len(read_runs(out))
    again = run_pipeline("dfrs-fig1", "smoke", out=out, tracking=False, report_only=True)
    assert again.sweeps == [] and len(read_runs(out)) == runs
    md = again.report_md.read_text()
    assert "written from the rows on disk, without running" in md
    assert f"scaled synthetic {kept.height} of the paper's" in md
    # a run in progress, said as such, with its cost: measured (every row on disk) and the rest extrapolated
    assert "**Run in progress**" in md and "Full trace sets" not in md
    every_row = pl.concat(
        [
            pl.read_parquet(f, hive_partitioning=False).select("sim_seconds")
            for d in dirs.values()
            for f in (d / "summary").rglob("*.parquet")
        ]
    )
    cost = dc.extrapolate(dirs, "dfrs-fig1", "scaled")
    assert cost.spent == pytest.approx(every_row["sim_seconds"].sum())
    assert (cost.finished, cost.planned, cost.full) == (
        kept.height,
        full.select("replication", "load").unique().height,
        2,
    )
    # hand-worked: smoke has one trace at loads 0.3 and 0.9; the instance lost is at the first load, which
    # then has no finished instance: counted at the other load's cost (a lower bound), minus what the
    # lost instance's remaining rows already spent
    assert lost["load"][0] == 0.3 and cost.unmeasured == [0.3]
    other = cut.filter(pl.col("load") == 0.9)["sim_seconds"].sum()
    spent_on_lost = cost.spent - cut["sim_seconds"].sum()
    assert cost.estimate == pytest.approx(max(0.0, other - spent_on_lost))
    assert "scaled synthetic at least" in md and "an extrapolation, not a measurement" in md
    # "too few" is read from the finished instances per point, not from the rows on disk
    assert dc.instances_per_point(dirs, "dfrs-fig1", ["scaled"], per_load=True) == 1
    assert all(f.replications == 1 for f in again.figures)


def test_finished_run_cost_is_measured_not_extrapolated(fig1):
    cost = dc.extrapolate(fig1.results_dirs, "dfrs-fig1", "scaled")
    rows = dc.rows(fig1.results_dirs, "dfrs-fig1", "scaled")
    assert cost.finished == cost.planned == cost.full == 2 and cost.estimate == pytest.approx(0.0)
    assert cost.spent == pytest.approx(rows["sim_seconds"].sum()) and cost.unmeasured == []
    line = dc.coverage(fig1.results_dirs, "dfrs-fig1", ["scaled"])
    assert "Full trace sets of this scale" in line and "extrapolat" not in line


def test_stratum_total_by_hand():
    """n x mean, with the t interval n t_{0.975, k-1} s / sqrt(k) sqrt(1 - k / n): per-instance seconds 1, 2, 3
    (mean 2, s 1) of a stratum of 10 -> 20 ± 10 x 4.3027 / sqrt(3) x sqrt(0.7); what is left: 20 - 6."""
    hw = 10 * 4.302652729911275 / 3**0.5 * 0.7**0.5
    assert dc.stratum_total([1.0, 2.0, 3.0], 10, own=True, left=False) == pytest.approx((20.0, hw))
    assert dc.stratum_total([1.0, 2.0, 3.0], 10, own=True, left=True) == pytest.approx((14.0, hw))
    # another stratum's sample, borrowed: no finite-population correction, nothing subtracted
    assert dc.stratum_total([1.0, 2.0, 3.0], 10, own=False, left=True) == pytest.approx((20.0, hw / 0.7**0.5))
    assert dc.stratum_total([5.0], 4, own=True, left=False) == (20.0, 0.0)  # one value: no interval
    assert dc.stratum_total([2.0, 4.0], 2, own=True, left=True) == pytest.approx((0.0, 0.0))  # all run


@pytest.mark.full
@pytest.mark.parametrize(
    "name, series",
    [
        ("dfrs-table", [dfrs_table.POLICIES]),
        ("dfrs-period", [[dc.BEST, "EASY"], [dc.BEST, "EASY"]]),
    ],
)
def test_other_dfrs_pipelines_outputs(tmp_path_factory, name, series):
    check_outputs(_run(tmp_path_factory, name), series)


# ---- claim checks on hand-made tables ----------------------------------------------------------


def claims(name: str, key: str, table):
    """The claims table of figure ``key`` of pipeline ``name`` (its TOML) checked on ``table``."""
    from schedlab.pipelines.declare import FigureData
    from schedlab.pipelines.registry import PIPELINES

    d = PIPELINES[name]
    fig = next(f for f in d.doc["figures"] if f["key"] == key)
    return d.checks(fig, FigureData(table, {}, {}, fig))


def fig1_table(deg: dict[str, list[float]], loads=(0.1, 0.3, 0.5, 0.9)):
    rows = [
        {"load": x, "policy": p, "n": 3, "degradation_mean": v[i], "degradation_ci95": 0.0}
        for p, v in deg.items()
        for i, x in enumerate(loads)
    ]
    return pl.DataFrame(rows)


def paper_like_fig1() -> dict[str, list[float]]:
    """Fig. 1's shape: batch 1e3-1e4, Greedy*/OPT=MIN worst DFRS, GreedyPM*/OPT=MIN good at
    low load and bad above 0.3, the best algorithm best everywhere."""
    deg = {p: [3.0, 4.0, 6.0, 9.0] for p in dfrs_fig1.DFRS}
    deg["FCFS"], deg["EASY"] = [5e3, 8e3, 1e4, 3e4], [2e3, 5e3, 8e3, 1e4]
    deg["Greedy*/OPT=MIN"] = [50.0, 80.0, 150.0, 300.0]
    deg["GreedyPM*/OPT=MIN"] = [2.0, 3.0, 20.0, 40.0]
    deg[dc.BEST] = [2.0, 3.0, 5.0, 8.0]
    return deg


def test_fig1_checks_hold_on_the_papers_shape():
    checks = claims("dfrs-fig1", "fig1", fig1_table(paper_like_fig1()))
    assert len(checks) == 4 and all(c.holds for c in checks), [c.detail for c in checks if not c.holds]


def test_fig1_checks_fail_when_the_claims_fail():
    deg = paper_like_fig1()
    deg["EASY"] = [5.0, 8.0, 10.0, 20.0]  # batch only a few times worse
    deg["MCB8*/per/OPT=MIN/MINVT=600"] = [500.0] * 4  # a worse DFRS algorithm than Greedy*
    deg[dc.BEST] = [20.0, 30.0, 50.0, 80.0]  # no longer the best
    deg["GreedyPM*/OPT=MIN"] = [2.0, 3.0, 4.0, 5.0]  # good at every load
    assert [c.holds for c in claims("dfrs-fig1", "fig1", fig1_table(deg))] == [False, False, False, False]


def table_stats(mean: dict[str, float]):
    rows = [
        {"set": s, "policy": p, "n": 5, "mean": v * (1 + 0.1 * i), "std": 0.1, "max": 2 * v, "ci95": 0.0}
        for i, s in enumerate(dfrs_table.SETS)
        for p, v in mean.items()
    ]
    return pl.DataFrame(rows)


def test_table_checks():
    mean = {p: 3.0 + i for i, p in enumerate(dfrs_table.DFRS)}
    mean |= {"FCFS": 1e4, "EASY": 5e3, dc.BEST: 2.0, dfrs_table.AVG_VARIANT: 2.5, dfrs_table.MINFT_VARIANT: 2.2}
    assert all(c.holds for c in claims("dfrs-table", "table", table_stats(mean))[:5])
    mean |= {"EASY": 20.0, dc.BEST: 9.0, dfrs_table.AVG_VARIANT: 8.0, dfrs_table.MINFT_VARIANT: 8.5}
    holds = [c.holds for c in claims("dfrs-table", "table", table_stats(mean))[:5]]
    # batch no longer 100x worse; best DFRS still 2.2..3 (other algorithms) <= 7; OPT=AVG and
    # MINFT now beat the named algorithm; the per-set scaling keeps the ranks identical
    assert holds == [False, True, False, False, True]


def period_tabs(u: dict[str, list[float]], d: dict[str, list[float]], easy_u, easy_d, periods=(600.0, 3600.0, 12000.0)):
    out = {}
    for s in dfrs_period.SETS:
        dfrs = pl.DataFrame(
            {
                "policy_period": list(periods),
                "n": [3] * len(periods),
                "underutilization_mean": u[s],
                "underutilization_ci95": [0.0] * len(periods),
                "degradation_mean": d[s],
                "degradation_ci95": [0.0] * len(periods),
            }
        )
        easy = pl.DataFrame(
            {
                "policy": ["EASY"],
                "n": [3],
                "underutilization_mean": [easy_u[s]],
                "underutilization_ci95": [0.0],
                "degradation_mean": [easy_d[s]],
                "degradation_ci95": [0.0],
            }
        )
        out[s] = (dfrs, easy)
    return out


def test_period_checks():
    u = {"hpc2n": [0.34, 0.2, 0.12], "unscaled": [0.5, 0.3, 0.2], "scaled": [0.6, 0.35, 0.25]}
    d = {"hpc2n": [2.0, 2.5, 3.0], "unscaled": [2.0, 2.2, 2.4], "scaled": [3.0, 5.0, 7.0]}
    easy_u = {"hpc2n": 0.064, "unscaled": 0.349, "scaled": 0.384}
    easy_d = {"hpc2n": 1e3, "unscaled": 1e3, "scaled": 1e3}
    tabs = period_tabs(u, d, easy_u, easy_d)
    assert all(c.holds for c in claims("dfrs-period", "fig2", tabs) + claims("dfrs-period", "fig3", tabs))
    u["scaled"] = [0.6, 0.65, 0.7]  # underutilization grows with the period, above EASY
    d["unscaled"] = [2.0, 3.0, 4.0]  # degradation doubles (> 1.5x)
    tabs = period_tabs(u, d, easy_u, {**easy_d, "hpc2n": 100.0})
    assert [c.holds for c in claims("dfrs-period", "fig2", tabs)] == [False, False, True]
    assert [c.holds for c in claims("dfrs-period", "fig3", tabs)] == [False, False]


def test_period_details_are_the_points_terms():
    """dfrs-period's per-set claims state their TOML ``point`` over
    dfrs_period.per_set's terms: the first and last period, the growth
    (last / first), the worst period, each set's growth bound in ``says``."""
    u = {"hpc2n": [0.34, 0.2, 0.12], "unscaled": [0.5, 0.3, 0.2], "scaled": [0.6, 0.35, 0.25]}
    d = {"hpc2n": [2.0, 2.5, 3.0], "unscaled": [2.0, 2.2, 2.4], "scaled": [3.0, 5.0, 7.0]}
    tabs = period_tabs(u, d, {s: 0.5 for s in u}, {s: 1e3 for s in u})
    decreases = claims("dfrs-period", "fig2", tabs)[0]
    growth, easy = claims("dfrs-period", "fig3", tabs)
    # each point, then the quantity compared with its interval (exact here: zero-width intervals)
    assert decreases.detail.startswith(
        "hpc2n: 0.340 at 600 s -> 0.120 at 12000 s (last / first 0.353), unscaled: 0.500 at 600 s"
    )
    assert growth.claim.endswith("by less than a factor 2 (hpc2n), 1.5 (unscaled), 3 (scaled)")
    assert growth.detail == (
        "hpc2n: x1.50 from 600 s to 12000 s (growth / limit 0.750), "
        "unscaled: x1.20 from 600 s to 12000 s (growth / limit 0.800), "
        "scaled: x2.33 from 600 s to 12000 s (growth / limit 0.778)"
    )
    assert easy.detail == (
        "hpc2n: EASY 1e+03 vs worst period 3 (EASY / worst 333.333), "
        "unscaled: EASY 1e+03 vs worst period 2.4 (EASY / worst 416.667), "
        "scaled: EASY 1e+03 vs worst period 7 (EASY / worst 142.857)"
    )


def test_table_best_claim_names_the_lowest_table2_row():
    """On Table 2's own numbers, GreedyP* and GreedyPM*/per/OPT=MIN/MINVT=600 tie on
    HPC2N (6.9): the lowest row is the first in the paper's order; unscaled: GreedyPM*."""
    best = claims("dfrs-table", "table", exact(published_stats()))[6]
    assert best.holds and best.detail.startswith(
        "hpc2n: 6.9 vs lowest GreedyP*/per/OPT=MIN/MINVT=600 6.9 "
        "(GreedyPM*/per/OPT=MIN/MINVT=600 / min Table 2 DFRS 1.000), "
        "unscaled: 4.8 vs lowest GreedyPM*/per/OPT=MIN/MINVT=600 4.8"
    )


# ---- the paper's published numbers side by side (dfrs_table.toml's [published]) ---------------


def test_published_table2_transcription():
    """20 rows x 3 sets, every name a registered policy, and the statements the
    text makes about Table 2 hold on the transcribed numbers (an independent
    check of the transcription)."""
    from schedlab.engines import get_engine

    t = pub.TABLE2
    assert len(t) == 20 and list(t)[:2] == ["FCFS", "EASY"] and all(set(v) == set(pub.SETS) for v in t.values())
    assert set(dfrs_table.DFRS) <= set(get_engine("dfrs").policies)
    assert dfrs_table.DFRS[:18] == dfrs_table.TABLE2_ROWS[2:] and dfrs_table.TABLE2_ROWS == list(t)
    best = dc.BEST
    for s in pub.SETS:
        assert t["EASY"][s].avg < t["FCFS"][s].avg  # "Expectedly, EASY outperforms FCFS"
        assert t[best][s].avg <= 7.0  # "our best algorithms are on average at most a factor 7 away"
        assert t["/per/OPT=MIN/MINVT=600"][s].avg > 6 * t[best][s].avg  # "outperformed ... more than 6-fold"
        assert t[best][s].avg == min(v[s].avg for v in t.values())  # best (ties allowed)
        assert all(v[s].avg <= v[s].max for v in t.values())
    assert pub.TABLE4["EASY"]["hpc2n"] < 0.07 < 0.34 < pub.TABLE4[best]["hpc2n"]  # "under 7% ... above 34%"


def test_fig1_algorithms_are_the_papers_legend():
    """Fig. 1's legend (RR-7659: FCFS, EASY, Greedy*, GreedyPM*, Greedy*/per, GreedyPM*/per,
    GreedyPM*/per/minvt, MCB8*/per/minvt, /per/minvt, /stretch-per/minvt): the plotted series are
    the sweeps' policies, every one registered with its engine."""
    from schedlab.engines import get_engine

    legend = ["FCFS", "EASY", "Greedy*", "GreedyPM*", "Greedy*/per", "GreedyPM*/per", "GreedyPM*/per/MINVT=600"]
    legend += ["MCB8*/per/MINVT=600", "/per/MINVT=600", "/stretch-per/MINVT=600"]
    assert [p.replace("/OPT=MIN", "").replace("/OPT=MAX", "") for p in dfrs_fig1.POLICIES] == legend
    assert [p for p in dfrs_fig1.POLICIES if "OPT=MAX" in p] == ["/stretch-per/OPT=MAX/MINVT=600"]  # the caption
    by_engine = {d["engine"]: d["policies"] for d in get_pipeline("dfrs-fig1").specs("smoke", {})}
    assert by_engine == {"dfrs": dfrs_fig1.DFRS, "batch": dc.BATCH}
    assert set(dfrs_fig1.DFRS) <= set(get_engine("dfrs").policies) and set(dc.BATCH) <= set(
        get_engine("batch").policies
    )


def published_stats(mean=lambda p, avg: avg, easy_underutil: float | None = None):
    """A stats table whose averages are ``mean(policy, Table 2's average)``
    (variants not in Table 2: the best algorithm's), underutilization Table 4's
    (or ``easy_underutil`` for EASY), 10 instances per set."""
    rows = []
    for s in dfrs_table.SETS:
        for p in dfrs_table.POLICIES:
            st = pub.TABLE2.get(p, {}).get(s) or pub.TABLE2[dc.BEST][s]
            m = mean(p, st.avg)
            u = pub.TABLE4.get(p, {}).get(s, 0.5)
            rows.append(
                {
                    "set": s,
                    "policy": p,
                    "n": 10,
                    "mean": m,
                    "std": st.std,
                    "max": st.max * m / st.avg,
                    "ci95": 2.26 * st.std / 10**0.5,
                    "underutilization": easy_underutil if p == "EASY" and easy_underutil is not None else u,
                }
            )
    return pl.DataFrame(rows)


def exact(table):
    """The table's averages as exact numbers (zero-width intervals): the claims' logic on the published
    averages themselves, as the text states it (a transcription check, not a statistical one)."""
    return table.with_columns(pl.lit(0.0).alias("ci95"), pl.lit(0.0).alias("underutilization_ci95"))


def test_table_report_puts_every_table2_row_next_to_ours():
    md = dfrs_table.markdown(published_stats(lambda p, avg: avg * (0.5 if p == "EASY" else 1.0)))
    for s in dfrs_table.SETS:
        assert f"**{dc.TITLES[s]}** (Table 2: {dc.PAPER_INSTANCES[s]} instances)" in md
    body = [line for line in md.splitlines() if line.startswith("| ") and not line.startswith("| algorithm")]
    assert len(body) == 3 * len(dfrs_table.POLICIES)
    for p in pub.TABLE2:  # every Table 2 row, once per set, with its ratio to the published average
        mine = [line for line in body if line.startswith(f"| {p} |")]
        assert len(mine) == 3 and all(line.endswith(" | 0.5 |" if p == "EASY" else " | 1 |") for line in mine), mine
    assert md.count("(not in Table 2)") == 3 * 2
    u = dfrs_table.underutil_markdown(published_stats())
    assert "| EASY | 0.064 / 0.064 | 0.349 / 0.349 | 0.384 / 0.384 |" in u


def test_table_paper_checks_are_computed_from_the_numbers():
    checks = claims("dfrs-table", "table", exact(published_stats()))[5:]
    assert len(checks) == 4 and all(c.holds for c in checks), [c.detail for c in checks if not c.holds]
    # the ranking reversed (so the best algorithm is the worst and EASY only a few times above it) and
    # EASY's underutilization above the DFRS algorithms': every verdict flips
    bad = published_stats(lambda p, avg: 1e4 / avg, easy_underutil=0.9)
    assert [c.outcome for c in claims("dfrs-table", "table", exact(bad))[5:]] == ["fails"] * 4
    # only EASY moved to 50x the best algorithm: just the 100x claim fails
    near = published_stats(lambda p, avg: avg if p != "EASY" else 50 * pub.TABLE2[dc.BEST]["hpc2n"].avg)
    assert [c.outcome for c in claims("dfrs-table", "table", exact(near))[5:]] == ["holds", "holds", "fails", "holds"]


def test_subset_option():
    specs = get_pipeline("dfrs-table").specs
    full = specs("paper", {})
    sub = specs("paper", {dc.SUBSET_KEY: 0.1})
    assert [d["name"] + "-sub0.1" for d in full] == [d["name"] for d in sub]
    by = {d["name"].split("-")[2] + d["engine"]: d for d in sub}
    weeks = by["hpc2ndfrs"]["workload"]["window"]
    assert len(weeks) == 19 and weeks == sorted(weeks) and set(weeks) <= set(dc.hpc2n_windows("paper"))
    assert set(dc.subset_windows(dc.hpc2n_windows("paper"), 0.05)) <= set(weeks)  # nested
    assert by["unscaleddfrs"]["replications"] == {"n": 10} and by["scaleddfrs"]["replications"] == {"n": 10}
    assert by["scaleddfrs"]["workload"]["load"] == dc.LOADS
    assert dc.subset_of({d["name"]: None for d in sub}) == 0.1 and dc.subset_of({d["name"]: None for d in full}) is None
    assert specs("paper", {dc.SUBSET_KEY: 1}) == full
    for bad in (0, 1.5, True, "0.1"):
        with pytest.raises(UserError, match="subset"):
            specs("smoke", {dc.SUBSET_KEY: bad})


def test_synthetic_sets_share_their_traces():
    """RR-7659 §5.3.2: the scaled traces are the unscaled ones with rescaled
    inter-arrival times -- replication r of both sets seeds one trace."""
    from schedlab.platform.planning.plan import build_plan
    from schedlab.platform.planning.validate import parse_spec

    specs = {d["name"].split("-")[2]: d for d in get_pipeline("dfrs-table").specs("smoke", {}) if d["engine"] == "dfrs"}
    plans = {s: build_plan(parse_spec(specs[s], s)) for s in ("unscaled", "scaled")}
    seeds = {s: {i.seed_words for i in p.instances(range(2))} for s, p in plans.items()}
    assert len(plans["scaled"].points) == 2 and seeds["scaled"] == seeds["unscaled"]
    assert specs["hpc2n"]["seed"] != specs["unscaled"]["seed"]


def test_cli_subset_is_for_the_dfrs_pipelines_only():
    from click.testing import CliRunner

    from schedlab.cli import main

    for args, msg in (
        (["psbs-load", "--subset", "0.1"], "--subset: only for"),
        (["dfrs-table", "--subset", "0"], "subset: must be a fraction"),
    ):
        r = CliRunner().invoke(main, ["pipelines", "run", *args, "--no-tracking"])
        assert r.exit_code == 2 and msg in r.output, r.output


@pytest.mark.full
def test_table_smoke_subset_report(tmp_path):
    """A smoke-scale run of dfrs-table as a seeded subset: the report says so,
    holds one comparison row per Table 2 row and set, and one verdict line per check."""
    import ray

    from schedlab.pipelines.run import run_pipeline

    if ray.is_initialized():
        ray.shutdown()
    try:
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
        res = run_pipeline("dfrs-table", "smoke", out=tmp_path, tracking=False, overrides={dc.SUBSET_KEY: 0.5})
    finally:
        ray.shutdown()
    assert res.failures == 0 and all(n.endswith("-sub0.5") for n in res.results_dirs)
    md = res.report_md.read_text()
    assert "**Seeded subset** (fraction 0.5" in md
    for p in pub.TABLE2:
        assert md.count(f"| {p} | ") == 3 + (1 if p in pub.TABLE4 else 0)
    checks = res.figures[0].checks
    assert len(checks) == 9 and sum(line.startswith("- ") and " — " in line for line in md.splitlines()) >= 9


def test_an_interrupted_pipeline_run_is_logged_with_what_it_committed(tmp_path):
    """Ctrl-C part-way: the invocation's record says so, with the rows it committed and its cost,
    so a long paper run stopped and resumed across sessions still adds up."""
    from schedlab import load
    from schedlab.pipelines.run import run_pipeline
    from schedlab.pipelines.runlog import read_runs
    from schedlab.platform.execution.runner import Interrupted

    calls = []

    def ctrl_c(progress) -> None:
        calls.append(progress)
        if len(calls) == 4:
            raise KeyboardInterrupt

    with pytest.raises((KeyboardInterrupt, Interrupted)):
        run_pipeline("dfrs-fig1", "smoke", out=tmp_path, tracking=False, backend="local", progress=ctrl_c)
    (record,) = read_runs(tmp_path)
    on_disk = sum(
        load(d).select(pl.len()).collect().item() for d in tmp_path.iterdir() if (d / "manifest.json").exists()
    )
    assert record["interrupted"] is True and record["rows_new"] == on_disk and record["wall_seconds"] > 0
