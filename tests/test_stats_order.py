"""Replication statistics depend on the rows' values, not on their order.

polars' ``group_by().agg(mean(), std())`` sums floats in an order set by its
threads: the same frame gave means differing in the last bits from call to
call. `stats.group_moments` (behind `summarize`), `stats.paired` and
`compare.paired_stats` must give bit-identical figures for any order of the
same rows -- the mean ``fsum(x) / n`` and the deviation ``sqrt(fsum((x -
mean)^2) / (n - 1))`` from correctly rounded sums, exactly -- and keep
polars' null/NaN semantics.
"""

from __future__ import annotations

import math
import struct

import numpy as np
import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.platform.statistics.compare import paired_stats
from schedlab.platform.statistics.stats import group_moments, mean_sd, paired, summarize


def _frame(seed: int, n: int = 20_000, groups: int = 500) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    return pl.DataFrame(
        {
            "k": rng.integers(0, groups, n),
            "j": rng.integers(0, 3, n),
            "x": rng.lognormal(0.0, 2.0, n),
            "y": rng.normal(0.0, 1e6, n),
        }
    )


def _bits(frame: pl.DataFrame) -> bytes:
    return b"".join(frame[c].to_numpy().tobytes() for c in frame.columns)


def test_group_moments_are_the_same_bits_for_any_row_order():
    df = _frame(1)
    first = group_moments(df, ["k", "j"], ["x", "y"])
    for seed in range(4):
        shuffled = df.sample(fraction=1.0, shuffle=True, seed=seed)
        assert _bits(group_moments(shuffled, ["k", "j"], ["x", "y"])) == _bits(first)
        assert _bits(summarize(shuffled.lazy(), ["k", "j"], ["x", "y"])) == _bits(summarize(df, ["k", "j"], ["x", "y"]))


def test_group_moments_keep_polars_null_and_nan_semantics():
    e = pl.DataFrame(
        {
            "k": [1, 1, 2, 3, 3, None, None],
            "x": [1.0, None, 2.0, float("nan"), 1.0, 5.0, 7.0],
            "y": [None] * 7,
        },
        schema={"k": pl.Int64, "x": pl.Float64, "y": pl.Float64},
    )
    ours = group_moments(e, ["k"], ["x", "y"])
    theirs = (
        e.group_by("k")
        .agg(
            pl.len().alias("n"),
            pl.col("x").mean().alias("x_mean"),
            pl.col("x").std(ddof=1).alias("x_std"),
            pl.col("y").mean().alias("y_mean"),
            pl.col("y").std(ddof=1).alias("y_std"),
        )
        .sort("k")
    )
    assert ours.schema == theirs.schema
    assert ours.equals(theirs)  # nulls where polars has nulls, NaN where it has NaN


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 4), st.floats(-1e9, 1e9, allow_nan=False, allow_infinity=False)),
        min_size=1,
        max_size=200,
    )
)
def test_group_moments_are_exactly_rounded_sums(rows):
    df = pl.DataFrame({"k": [k for k, _ in rows], "x": [x for _, x in rows]}, schema={"k": pl.Int64, "x": pl.Float64})
    out = group_moments(df, ["k"], ["x"])
    for rec in out.iter_rows(named=True):
        xs = [x for k, x in rows if k == rec["k"]]
        assert rec["n"] == len(xs)
        mean = math.fsum(xs) / len(xs)
        assert rec["x_mean"] == mean
        if len(xs) < 2:
            assert rec["x_std"] is None
        else:
            # (x - mean) * (x - mean), as the definition: Python's ** 2 is C's pow, which can differ in the last bit
            assert rec["x_std"] == math.sqrt(math.fsum((x - mean) * (x - mean) for x in xs) / (len(xs) - 1))


def test_paired_is_the_same_bits_for_any_order_of_the_pairs():
    d = np.random.default_rng(3).lognormal(0.0, 2.0, 301) - 5.0
    first = paired(d)
    for seed in range(4):
        again = paired(np.random.default_rng(seed).permutation(d))
        assert (again.mean, again.sd, again.halfwidth, again.p_value) == (
            first.mean,
            first.sd,
            first.halfwidth,
            first.p_value,
        )


def test_paired_stats_is_the_same_bits_for_any_row_order():
    rng = np.random.default_rng(4)
    cells, reps, arms = 40, 30, ["A", "B", "C"]
    frame = pl.DataFrame(
        {
            "load": np.repeat(np.arange(cells) / cells, reps * len(arms)),
            "replication": np.tile(np.repeat(np.arange(reps), len(arms)), cells),
            "policy": arms * (cells * reps),
            "mst": rng.lognormal(0.0, 1.5, cells * reps * len(arms)),
        }
    )
    # rows come sorted by cell, then by each arm's first appearance in the frame: compare them by (cell, arm)
    first = paired_stats(frame, ["load"], ["replication"], "policy", "mst", "A", ratio=True).sort(["load", "policy"])
    for seed in range(3):
        shuffled = frame.sample(fraction=1.0, shuffle=True, seed=seed)
        out = paired_stats(shuffled, ["load"], ["replication"], "policy", "mst", "A", ratio=True)
        out = out.sort(["load", "policy"])
        assert out.equals(first)
        assert _bits(out.select(pl.selectors.float())) == _bits(first.select(pl.selectors.float()))


def _same(a: float | None, b: float | None) -> bool:
    """Equal bits, NaN equal to NaN (None: polars' null)."""
    if a is None or b is None:
        return a is b
    return struct.pack("<d", a) == struct.pack("<d", b) or (math.isnan(a) and math.isnan(b))


@settings(max_examples=300)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 60),  # many keys for few rows: mostly groups of one or two (group_moments' vector path)
            st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([1e308, -1e308, 0.0, -0.0])),
        ),
        min_size=1,
        max_size=80,
    )
)
def test_group_moments_of_one_or_two_values_are_mean_sd_bits(rows):
    """Groups of one or two values are computed for all at once; each must be
    `mean_sd`'s result to the bit, infinities, NaN, overflow and -0.0 included."""
    df = pl.DataFrame({"k": [k for k, _ in rows], "x": [x for _, x in rows]}, schema={"k": pl.Int64, "x": pl.Float64})
    out = group_moments(df, ["k"], ["x"])
    for rec in out.iter_rows(named=True):
        mean, sd = mean_sd([x for k, x in rows if k == rec["k"]])
        assert _same(rec["x_mean"], mean), (rec, mean)
        assert _same(rec["x_std"], sd if rec["n"] >= 2 else None), (rec, sd)


@settings(max_examples=300, deadline=None)
@given(
    st.integers(2, 100_000),
    st.floats(0.5, 0.9999),
    st.lists(st.floats(-1e3, 1e3, allow_nan=False), min_size=2, max_size=40),
    st.integers(200, 2_000),
)
def test_student_t_is_scipy_stats_bit_for_bit(n: int, confidence: float, d: list[float], m: int) -> None:
    """stats computes Student's t with scipy.special (no scipy.stats import at start-up): the
    quantile, the paired test's p value and the batch-means interval (fractional degrees of
    freedom) must be exactly what scipy.stats.t gives."""
    from scipy import special
    from scipy import stats as scipy_stats

    from schedlab.platform.statistics.stats import t_quantile

    assert t_quantile(n, confidence) == float(scipy_stats.t.ppf(0.5 + confidence / 2, n - 1))
    got = paired(d)
    if math.isfinite(got.p_value):
        se = got.sd / math.sqrt(got.n)
        assert got.p_value == float(2.0 * scipy_stats.t.sf(abs(got.mean) / se, got.n - 1))
    dof = 1.5 * (m / 7 - 1)  # obm's fractional degrees of freedom: it calls stdtrit directly
    assert float(special.stdtrit(dof, 0.5 + confidence / 2)) == float(scipy_stats.t.ppf(0.5 + confidence / 2, dof))
