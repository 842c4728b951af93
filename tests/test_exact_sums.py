"""`statistics.exact.group_sums` (the pooled means of `schedlab results` on
a scan) gives, group by group, the float ``math.fsum`` gives: the correctly
rounded sum, whatever order the streaming engine meets the rows in; and
`stats.exact_sum`'s answers for NaN, infinities and huge values."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from schedlab.platform.statistics.exact import HUGE_EXPONENT, group_means, group_sums
from schedlab.platform.statistics.exact import group_moments as exact_moments
from schedlab.platform.statistics.stats import LONG_RUN, exact_sum, group_moments, mean_sd, run_sums


def reference(frame: pl.DataFrame, by: list[str], value: str) -> dict[tuple, tuple[int, float]]:
    out = {}
    for key, sub in frame.group_by(by):
        vals = sub[value].drop_nulls().to_list()
        out[tuple(key)] = (len(vals), exact_sum(vals))
    return out


def got(frame: pl.DataFrame, by: list[str], value: str) -> dict[tuple, tuple[int, float]]:
    sums = group_sums(frame.lazy(), by, value)
    return {tuple(r[: len(by)]): (r[-2], r[-1]) for r in sums.iter_rows()}


def same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))


def check(frame: pl.DataFrame, by: list[str], value: str = "x") -> None:
    want, have = reference(frame, by, value), got(frame, by, value)
    assert want.keys() == have.keys()
    for key, (n, total) in want.items():
        assert have[key][0] == n and same(have[key][1], total), (key, have[key], (n, total))


def test_wide_ranges_cancellation_and_ties_sum_as_fsum():
    rng = np.random.default_rng(7)
    n = 200_000
    x = rng.lognormal(0.0, 4.0, n) * rng.choice([-1.0, 1.0], n)  # ~25 binades, both signs
    x[::7] = 1e16  # big terms that cancel ...
    x[1::7] = -1e16
    x[2::11] = 2.0**-1074 * rng.integers(1, 100, x[2::11].size)  # ... subnormals
    x[3::13] = 0.5 + 2.0**-53  # ties between two floats in the rounded sum
    frame = pl.DataFrame({"g": rng.integers(0, 40, n), "h": rng.choice(["a", "b", None], n), "x": x})
    check(frame, ["g", "h"], "x")
    check(frame, ["g"], "x")


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 3), st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True))),
        min_size=1,
        max_size=60,
    )
)
def test_any_floats_sum_as_exact_sum(rows):
    frame = pl.DataFrame(
        {"g": [g for g, _ in rows], "x": [x for _, x in rows]}, schema={"g": pl.Int64, "x": pl.Float64}
    )
    check(frame, ["g"])


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning", "ignore:invalid value:RuntimeWarning")
def test_huge_values_and_signed_zeros_are_exact_sums_answers():
    big = 2.0 ** (HUGE_EXPONENT - 1023)
    frame = pl.DataFrame(
        {
            "g": [0, 0, 0, 1, 1, 2, 2, 3, 3],
            "x": [1.7e308, 1.7e308, -1.7e308, -0.0, -0.0, big, 1.0, math.inf, -math.inf],
        }
    )
    check(frame, ["g"])
    sums = {r[0]: r[2] for r in group_sums(frame.lazy(), ["g"], "x").iter_rows()}
    assert math.isnan(sums[3]) and sums[2] == big + 1.0


def test_means_are_sums_over_the_values_and_null_without_one():
    frame = pl.DataFrame({"g": [0, 0, 0, 1], "x": [0.1, 0.2, None, None]})
    means = dict(group_means(frame.lazy(), ["g"], "x").iter_rows())
    assert means == {0: math.fsum([0.1, 0.2]) / 2, 1: None}


@pytest.mark.parametrize("rows", [1, 3, 10_000])
def test_a_scan_split_in_many_files_sums_as_one(tmp_path, rows):
    rng = np.random.default_rng(rows)
    frames = [pl.DataFrame({"g": rng.integers(0, 3, rows), "x": rng.normal(0.0, 1e6, rows)}) for _ in range(8)]
    for i, f in enumerate(frames):
        f.write_parquet(tmp_path / f"part-{i}.parquet")
    scanned = group_sums(pl.scan_parquet(tmp_path / "*.parquet"), ["g"], "x")
    assert {(r[0],): (r[1], r[2]) for r in scanned.iter_rows()} == reference(pl.concat(frames), ["g"], "x")


@pytest.mark.parametrize("spread", [1.0, 40.0])  # exponents of a few binades (bincount) or hundreds (sorted)
def test_run_sums_and_long_runs_moments_are_exact_sum_and_mean_sd(spread):
    """`stats.run_sums` is `exact_sum` run by run, and `group_moments` of runs of `LONG_RUN`
    values and more (summed together) is `mean_sd` of each, bit for bit."""
    rng = np.random.default_rng(int(spread))
    sizes = [LONG_RUN, 1, 2, 3, 5000, LONG_RUN + 1, 700]
    x = rng.lognormal(0.0, spread, sum(sizes)) * rng.choice([-1.0, 1.0], sum(sizes))
    x[5] = 2.0**-1074
    x[LONG_RUN + 40] = math.inf  # a run with an infinity: exact_sum's answer
    starts = np.cumsum([0, *sizes[:-1]])
    sums = run_sums(x, starts)
    for i, (a, k) in enumerate(zip(starts, sizes)):
        assert same(sums[i], exact_sum(x[a : a + k].tolist())), i
    frame = pl.DataFrame({"g": np.repeat(np.arange(len(sizes)), sizes), "x": x})
    moments = group_moments(frame, ["g"], ["x"])
    for (g, n, mean, sd), k, a in zip(moments.iter_rows(), sizes, starts):
        want = mean_sd(x[a : a + k])
        assert n == k and same(mean, want[0]) and (sd is None if k < 2 else same(sd, want[1])), g


def test_run_sums_of_many_short_runs_over_wide_exponents_sort_instead():
    rng = np.random.default_rng(3)
    x = rng.lognormal(0.0, 60.0, 300) * rng.choice([-1.0, 1.0], 300)
    x[7], x[8] = 2.0**-1074, -0.0
    starts = np.arange(0, 300, 3)  # (runs x exponents) slots far more than BINCOUNT_CELLS a value
    sums = run_sums(x, starts)
    assert all(same(sums[i], exact_sum(x[a : a + 3].tolist())) for i, a in enumerate(starts))


def test_exact_group_moments_are_stats_group_moments():
    """`exact.group_moments` (the moments of a comparison's pairs, not sorted) is `stats.group_moments`."""
    rng = np.random.default_rng(11)
    n = 30_000
    x = rng.lognormal(0.0, 2.0, n) * rng.choice([-1.0, 1.0], n)
    x[::997] = math.nan
    x[5] = math.inf
    frame = pl.DataFrame({"g": rng.integers(0, 60, n), "h": ["a" if v else None for v in rng.random(n) < 0.5], "x": x})
    frame = frame.with_columns(pl.when(pl.col("g") == 7).then(None).otherwise(pl.col("x")).alias("x"))
    frame = pl.concat([frame, pl.DataFrame({"g": [100, 101, 101], "h": ["z"] * 3, "x": [1.5, 0.1, 0.2]})])
    want = group_moments(frame, ["g", "h"], ["x"])
    got = exact_moments(frame, ["g", "h"], ["x"])
    assert_frame_equal(got.select(want.columns), want, check_exact=True)
