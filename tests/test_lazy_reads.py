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
from schedlab.platform.statistics.stats import dominated, exact_sum, group_moments, summarize
from schedlab.platform.storage.part import Part, encode
from schedlab.platform.storage.query import (
    distinct_counts,
    filter_where,
    repeats,
    scan_rows,
    stored_rows,
    stored_scan,
    varying_of,
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
    filtered (`filter_where`) and pooled by an eager group_by -- each pooled mean
    a correctly rounded sum over n (`stats.group_moments`), as `pooled_means` sums
    them (polars' own mean, summed in its threads' order, is within
    `POLARS_MEAN_REL_TOL`: test_pooled_means_are_correctly_rounded)."""
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
            [pl.col(f.name).any() for f in flags] + [pl.struct(pooled).n_unique().alias("_have")]
        )
        means = group_moments(frame, per, metrics).select(per + [pl.col(f"{m}_mean").alias(m) for m in metrics])
        reps = reps.join(means, on=per, how="left", nulls_equal=True).join(cells, on=keys, how="left", nulls_equal=True)
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


#: How far polars' own group mean (what `results` pooled with before it summed exactly: its float
#: additions in its threads' order) may be from the correctly rounded mean: a few ulps of a sum of tens of values.
POLARS_MEAN_REL_TOL = 1e-14


def polars_pooled_means(frame, keys, pooled, metrics):
    """`pooled_means` as it was before the exact sums: polars' in-memory ``mean()`` per replication."""
    lf = frame.lazy()
    per = keys + ["replication"]
    cells = lf.group_by(keys).agg(pl.struct(pooled).n_unique().alias("_cells"))
    reps = lf.group_by(per).agg(
        [pl.col(m).cast(pl.Float64).mean() for m in metrics] + [pl.struct(pooled).n_unique().alias("_have")]
    )
    joined = reps.join(cells, on=keys, how="left", nulls_equal=True).collect(engine="in-memory")
    complete = joined.filter(pl.col("_have") == pl.col("_cells"))
    return complete.drop("_have", "_cells"), joined.height - complete.height


def test_pooled_means_are_correctly_rounded(grid, monkeypatch):
    """Each pooled mean is fsum / n of the replication's values (exactly), polars'
    own mean is within `POLARS_MEAN_REL_TOL` of it, and the printed table is the
    one the polars means printed."""
    _, _, lf = stored_scan(grid)
    keys, pooled, metrics = ["policy", "load"], ["shape", "sigma"], ["mst", "slowdown_p99"]
    got, _ = pooled_means(lf, keys, pooled, metrics)
    frame = lf.collect()
    old, _ = polars_pooled_means(frame, keys, pooled, metrics)
    old = old.sort(keys + ["replication"])
    got = got.sort(keys + ["replication"])
    for m in metrics:
        for (key, sub), mean, before in zip(
            frame.sort(keys + ["replication"]).group_by(keys + ["replication"], maintain_order=True),
            got[m].to_list(),
            old[m].to_list(),
        ):
            values = sub[m].to_list()
            assert mean == exact_sum(values) / len(values), key
            assert abs(before - mean) <= POLARS_MEAN_REL_TOL * abs(mean), key
    args = ["results", str(grid), "--by", "policy,load", "--metric", "mst", "--metric", "slowdown_p99"]
    new = CliRunner().invoke(main, args)
    monkeypatch.setattr("schedlab.cli.analysis.pooled_means", polars_pooled_means)
    before = CliRunner().invoke(main, args)
    assert new.exit_code == before.exit_code == 0, new.output
    assert new.stdout == before.stdout


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


def test_varying_of_says_what_distinct_counts_say(grid):
    """`varying_of` (min, max, null and NaN counts) answers "more than one value?" as `distinct_counts`
    does, null and NaN each a value, -0.0 and 0.0 one value, on the grid and on hand-made columns."""
    _, _, lf = stored_scan(grid)
    cols = ["policy", "load", "shape", "sigma", "njobs", "alpha", "size_dist"]
    counts = distinct_counts(lf, cols)
    assert varying_of(lf, cols) == (lf.collect().height, {c: counts[c] > 1 for c in cols})
    nan = float("nan")
    frame = pl.DataFrame(
        {
            "one": [1.0, 1.0, 1.0],
            "zeros": [-0.0, 0.0, 0.0],
            "null_and_value": [1.0, None, 1.0],
            "nan_and_value": [nan, 2.0, 2.0],
            "nan_and_null": [nan, None, nan],
            "all_nan": [nan, nan, nan],
            "all_null": pl.Series([None, None, None], dtype=pl.Float64),
            "text": ["a", "a", "b"],
            "text_null": ["a", None, "a"],
            "flag": [True, True, True],
            "ints": [3, 3, 4],
            "nested": [[1], [1], [2]],
        }
    )
    counts = distinct_counts(frame, frame.columns)
    assert varying_of(frame.lazy(), frame.columns) == (3, {c: counts[c] > 1 for c in frame.columns})


@pytest.mark.parametrize(
    "replications, twice",
    [
        ([0, 1, 2, 3], False),
        ([0, 1, 1, 3], True),
        (list(range(100)), False),
        ([*range(100), 63], True),  # in the second block of REPEAT_BITS, with a carry past it
        ([31, 63, 95, 127], False),
        ([5, 5], True),
        ([-1, 0, 1], False),  # negative: counted
        ([-1, -1], True),
        ([None, 0], False),  # null: counted, one value
        ([None, None, 0], True),
    ],
)
def test_repeats_finds_a_value_twice_as_a_distinct_count_does(replications, twice):
    frame = pl.DataFrame({"g": ["a"] * len(replications), "r": replications}, schema={"g": pl.String, "r": pl.Int64})
    other = pl.DataFrame({"g": ["b"] * 40, "r": list(range(40))}, schema={"g": pl.String, "r": pl.Int64})
    both = pl.concat([frame, other])
    groups, found = repeats(both.lazy(), ["g"], "r")
    counted = both.group_by("g").agg(pl.len(), pl.col("r").n_unique().alias("u"))
    assert found == twice == bool((counted["len"] > counted["u"]).any())
    assert sorted(groups["g"].to_list()) == ["a", "b"]


@pytest.fixture()
def uneven(grid, tmp_path) -> Path:
    """The grid with rows a real store may hold after a hand-made publish: a 6th replication of PS in
    one cell only (incomplete: left out of pooled means, unpaired in comparisons) and SRPT's
    replication 0 at one workload point twice (under another config id)."""
    root = tmp_path / "uneven"
    shutil.copytree(grid, root)
    rows = schedlab.load(root).collect()
    cell = (pl.col("load") == 0.6) & (pl.col("shape") == 0.5) & (pl.col("sigma") == 0.1)
    extra = rows.filter((pl.col("policy") == "PS") & cell & (pl.col("replication") == 0))
    extra = extra.with_columns(pl.lit(5, pl.Int64).alias("replication"), pl.col("mst") * 1.5)
    again = rows.filter((pl.col("policy") == "SRPT") & cell & (pl.col("replication") == 0))
    again = again.with_columns(pl.lit("f" * 16).alias("config_id"), pl.col("mst") * 0.5)
    store = ResultStore(root)
    publish(store, [Part("PS", [], {SUMMARY: encode(extra.drop("policy").to_arrow())})])
    publish(store, [Part("SRPT", [], {SUMMARY: encode(again.drop("policy").to_arrow())})])
    return root


def test_pooled_means_leave_out_incomplete_replications_and_count_cells_held_twice(uneven):
    """A replication without a row in every pooled cell is left out (and counted); a cell holding
    a replication twice counts once among the replication's cells: as the eager read had it."""
    for by in (["policy", "load"], ["policy"], ["load", "shape"]):
        args = ["results", str(uneven), "--csv", "--by", ",".join(by)]
        out = CliRunner().invoke(main, args)
        assert out.exit_code == 0, out.output
        assert out.stdout == eager_results_csv(uneven, by, ["mst"], {})
        assert "replication(s) without a row in every pooled cell left out" in out.stderr


def test_compare_of_a_scan_pairs_as_the_collected_frame_and_names_a_shared_pair_key(uneven, grid, tmp_path):
    """Unpaired rows are left out, flagged rows flag their comparison, and two rows of one policy at
    one pair key are the collected frame's error, exit 2, one line."""
    _, manifest, lf = stored_scan(uneven)
    pair = ["load", "shape", "sigma", "replication"]
    data = lf.select(pair + [pl.col("policy").alias("_arm"), pl.col("mst").cast(pl.Float64)])
    for ratio in (False, True):
        with pytest.raises(UserError) as lazy:
            paired_stats(data, [], pair, "_arm", "mst", "FIFO", ratio)
        with pytest.raises(UserError) as eager:
            paired_stats(data.collect(), [], pair, "_arm", "mst", "FIFO", ratio)
        assert str(lazy.value) == str(eager.value)
        assert str(lazy.value).startswith("2 rows share one pair key (load=0.6, shape=0.5, sigma=0.1, replication=0, ")
    out = CliRunner().invoke(main, ["compare", str(uneven), "--baseline", "FIFO", "--by", "load"])
    assert out.exit_code == 2 and len(out.output.strip().splitlines()) == 1, out.output
    # without SRPT's second row: PS's 6th replication has no FIFO row to pair with
    root = tmp_path / "unpaired"
    shutil.copytree(grid, root)
    rows = schedlab.load(root).collect()
    extra = rows.filter((pl.col("policy") == "PS") & (pl.col("replication") == 0) & (pl.col("load") == 0.9))
    extra = extra.with_columns(pl.lit(7, pl.Int64).alias("replication"))
    publish(ResultStore(root), [Part("PS", [], {SUMMARY: encode(extra.drop("policy").to_arrow())})])
    _, _, lf = stored_scan(root)
    data = lf.select(pair + [pl.col("policy").alias("_arm"), pl.col("slowdown_mean").cast(pl.Float64)])
    for ratio in (False, True):
        for cells in ([], ["load"]):
            lazy_t = paired_stats(
                data, cells, [c for c in pair if c not in cells], "_arm", "slowdown_mean", "FIFO", ratio
            )
            eager_t = paired_stats(
                data.collect(), cells, [c for c in pair if c not in cells], "_arm", "slowdown_mean", "FIFO", ratio
            )
            assert_frame_equal(lazy_t, eager_t, check_exact=True)
            assert lazy_t["n"].to_list() == [2 * 2 * 2 * 5 // (2 if cells else 1)] * lazy_t.height  # unpaired: out
