"""Reading a results dir lazily (issue #42) gives what reading it whole gave:
`results`, `compare`, `plot` and ``schedlab.load`` project the columns they
need and filter in the scan, and every row, number and error is the one the
eager reads made -- compared here, bit for bit, with those reads written out
as they were (the whole summary collected, then filtered and grouped). That
the lazy reads stay small on 10^7 rows is measured by
benchmarks/big_results.py, not asserted here. Also: `results` and `compare`
default to the engine's headline metric, and rows of engines with different
headlines need ``--metric``."""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner
from polars.testing import assert_frame_equal

import schedlab
from schedlab.cli import main
from schedlab.cli.analysis import pooled_means, results_columns
from schedlab.errors import UserError
from schedlab.platform.execution.runner import run_sweep
from schedlab.platform.planning.validate import parse_spec
from schedlab.platform.statistics.compare import paired_stats
from schedlab.platform.statistics.stats import dominated, summarize
from schedlab.platform.storage.part import Part, encode
from schedlab.platform.storage.query import (
    distinct_counts,
    filter_where,
    scan_rows,
    stored_rows,
    stored_scan,
    where_lazy,
)
from schedlab.platform.storage.store import SUMMARY, ResultStore, publish


@pytest.fixture(scope="module")
def grid(tmp_path_factory) -> Path:
    """3 policies x 2 loads x 2 shapes x 2 sigmas, 5 replications: pooling, pairs and selections to read."""
    folder = tmp_path_factory.mktemp("lazy")
    spec = {
        "name": "lazy",
        "engine": "queue",
        "seed": 5,
        "policies": ["FIFO", "PS", "SRPT"],
        "workload": {"kind": "synthetic", "njobs": 60, "load": [0.6, 0.9], "shape": [0.5, 2.0], "sigma": [0.1, 1.0]},
        "replications": {"n": 5},
        "outputs": {"dir": str(folder / "results")},
        "tracking": {"enabled": False},
        "execution": {"backend": "local"},
    }
    report = run_sweep(parse_spec(spec, "lazy.toml", folder))
    assert not report.failures
    return Path(report.results_dir)


def eager_results_csv(root: Path, by: list[str], metrics: list[str], where: dict[str, str]) -> str:
    """`schedlab results --csv` as it read before #42: every row collected, then
    filtered (`filter_where`) and pooled by an eager group_by."""
    from schedlab.plotting import swept

    _, manifest, lf = stored_scan(root)
    cols = results_columns(lf.collect_schema().names(), manifest, by, metrics, list(where), False)
    frame = filter_where(lf.select(cols).collect(), where, root)
    varying = ["policy"] + swept(frame, manifest)
    keys = by or varying
    pooled = [c for c in varying if c not in keys and frame[c].n_unique() > 1]
    if pooled:
        flags = [f for f in (dominated(frame, m) for m in metrics) if f is not None]
        frame = frame.with_columns(flags)
        per = keys + ["replication"]
        cells = frame.group_by(keys).agg(pl.struct(pooled).n_unique().alias("_cells"))
        reps = frame.group_by(per).agg(
            [pl.col(m).cast(pl.Float64).mean() for m in metrics]
            + [pl.col(f.name).any() for f in flags]
            + [pl.struct(pooled).n_unique().alias("_have")]
        )
        reps = reps.join(cells, on=keys, how="left", nulls_equal=True)
        frame = reps.filter(pl.col("_have") == pl.col("_cells")).drop("_have", "_cells")
    return summarize(frame, keys, metrics).write_csv()


@pytest.mark.parametrize(
    "by, metrics, where",
    [
        ([], ["mst"], {}),
        (["policy", "load"], ["mst"], {}),
        (["load"], ["mst", "slowdown_mean"], {}),
        (["policy"], ["slowdown_p99"], {"sigma": "1"}),
        (["policy", "shape"], ["mst"], {"load": "0.9", "sigma": "0.1"}),
    ],
)
def test_results_prints_what_the_eager_read_printed(grid, by, metrics, where):
    args = ["results", str(grid), "--csv"]
    args += ["--by", ",".join(by)] if by else []
    args += [a for m in metrics for a in ("--metric", m)]
    args += [a for k, v in where.items() for a in ("--where", f"{k}={v}")]
    out = CliRunner().invoke(main, args)
    assert out.exit_code == 0, out.output
    assert out.stdout == eager_results_csv(grid, by, metrics, where)


def test_pooled_means_of_a_scan_are_those_of_the_collected_rows(grid):
    _, _, lf = stored_scan(grid)
    lazy, dropped = pooled_means(lf, ["policy", "load"], ["shape", "sigma"], ["mst", "slowdown_mean"])
    eager, dropped_eager = pooled_means(lf.collect(), ["policy", "load"], ["shape", "sigma"], ["mst", "slowdown_mean"])
    order = ["policy", "load", "replication"]
    assert dropped == dropped_eager == 0
    assert_frame_equal(lazy.sort(order), eager.sort(order), check_exact=True)


@pytest.mark.parametrize(
    "where",
    [
        {},
        {"load": "0.9"},
        {"load": "0.9", "policy": "PS"},
        {"sigma": "1.0", "shape": "0.5"},
        {"load": "0.7"},  # no such value: the error names the values load takes
        {"load": "0.7", "nope": "1"},  # the first bad --where is the one reported, as filter_where does
        {"nope": "1", "load": "0.7"},
        {"load": "high"},
        {"sigma": "1.0", "shape": "3"},  # empty only after the first filter: values among the kept rows
    ],
)
def test_where_lazy_keeps_the_rows_and_raises_the_errors_of_filter_where(grid, where):
    _, _, lf = stored_scan(grid)
    try:
        want = filter_where(lf.collect(), where, grid)
    except UserError as err:
        with pytest.raises(UserError) as got:
            where_lazy(lf, where, grid).collect()
        assert str(got.value) == str(err)
    else:
        assert_frame_equal(where_lazy(lf, where, grid).collect(), want, check_exact=True)


def test_distinct_counts_of_a_scan(grid):
    _, _, lf = stored_scan(grid)
    frame = lf.collect()
    cols = ["policy", "load", "shape", "sigma", "njobs", "alpha"]
    assert distinct_counts(lf, cols) == {c: frame[c].n_unique() for c in cols} == distinct_counts(frame, cols)


@pytest.mark.parametrize("by", [None, "load", "shape,sigma"])
@pytest.mark.parametrize("ratio", [False, True])
def test_compare_pairs_as_the_whole_frame_did(grid, by, ratio):
    """`compare` reads a few columns and pairs on the instance parameters that
    vary: the intervals are those of pairing on every instance parameter."""
    _, manifest, lf = stored_scan(grid)
    frame = lf.collect()
    params = [c for c in manifest["param_columns"] if c in frame.columns and not c.startswith("policy_")]
    by_cols = by.split(",") if by else [c for c in params if frame[c].n_unique() > 1]
    pair = [c for c in params if c not in by_cols] + ["replication"]
    data = frame.select(by_cols + pair + [pl.col("policy").alias("_arm"), pl.col("mst").cast(pl.Float64)])
    want = paired_stats(data, by_cols, pair, "_arm", "mst", "FIFO", ratio)
    got = schedlab.compare(grid, "FIFO", "mst", by=by, ratio=ratio)
    est = "ratio" if ratio else "diff"
    got = got.select(by_cols + ["policy", "n", "mst_mean", "baseline_mean", est] + want.columns[len(by_cols) + 5 :])
    assert_frame_equal(got, want.rename({"_arm": "policy", "mean": "mst_mean", "estimate": est}), check_exact=True)


def test_plot_reads_only_its_columns_and_the_same_rows(grid):
    root, _, lf = stored_scan(grid)
    where = {"shape": "0.5", "sigma": "1"}
    _, _, whole = stored_rows(grid, where)
    some = scan_rows(root, lf, where, columns=["policy", "load", "mst"])
    assert some.columns == [c for c in whole.columns if c in {"policy", "load", "mst", "shape", "sigma"}]
    assert_frame_equal(some, whole.select(some.columns), check_exact=True)


def test_load_projects_and_filters_in_the_scan(grid):
    got = schedlab.load(grid, columns=["policy", "load", "mst"], where={"shape": 0.5, "sigma": "1"}).collect()
    whole = filter_where(schedlab.load(grid).collect(), {"shape": 0.5, "sigma": "1"}, grid)
    assert_frame_equal(got, whole.select("policy", "load", "mst"), check_exact=True)
    assert got.height == 3 * 2 * 5
    with pytest.raises(UserError, match="'nope' not in"):
        schedlab.load(grid, columns=["nope"])
    with pytest.raises(UserError, match="where load=high: load is numeric"):
        schedlab.load(grid, where={"load": "high"})
    with pytest.raises(UserError, match="where: 'nope' is not a column"):
        schedlab.load(grid, where={"nope": 1})


def test_the_default_metric_is_the_engines_headline(grid):
    for command in (["results", str(grid), "--csv"], ["compare", str(grid), "--baseline", "FIFO", "--csv"]):
        default = CliRunner().invoke(main, command)
        named = CliRunner().invoke(main, [*command, "--metric", "mst"])  # the queue engine's headline
        assert default.exit_code == 0 and default.stdout == named.stdout, default.output
    assert_frame_equal(schedlab.compare(grid, "FIFO"), schedlab.compare(grid, "FIFO", "mst"), check_exact=True)


def test_rows_of_engines_with_different_headlines_need_a_metric(grid, tmp_path):
    mixed = tmp_path / "mixed"
    shutil.copytree(grid, mixed)
    rows = schedlab.load(mixed).filter(pl.col("policy") == "PS").collect()
    other = rows.with_columns(
        pl.lit("packing").alias("engine"), pl.col("replication") + 100
    )  # packing: headline queue_jobs_mean
    publish(ResultStore(mixed), [Part("PS", [], {SUMMARY: encode(other.drop("policy").to_arrow())})])
    for command in (["results", str(mixed)], ["compare", str(mixed), "--baseline", "FIFO"]):
        out = CliRunner().invoke(main, command)
        lines = out.output.strip().splitlines()
        assert out.exit_code == 2 and len(lines) == 1, out.output
        assert "packing (queue_jobs_mean)" in lines[0] and "queue (mst)" in lines[0] and "--metric" in lines[0]
    named = CliRunner().invoke(main, ["results", str(mixed), "--metric", "mst", "--by", "policy"])
    assert named.exit_code == 0, named.output
