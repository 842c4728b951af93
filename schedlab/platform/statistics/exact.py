"""Correctly rounded sums and means of a scan's float column per group,
computed by polars' streaming engine in bounded memory (issue #42: a
pooled mean over 10^7 summary rows).

A float sum depends on the order of its additions, and a streaming
group_by adds in whatever order its threads meet the rows: its last bits
differ from one run to the next. `stats.exact_sum` (``math.fsum``) gives the
correctly rounded sum, a function of the values alone, but needs them in
memory. Here each finite value is split, in the scan, into integers: its
IEEE bits give x = s * m * 2^(e - 1075), m < 2^53, and m = hi * 2^26 + lo;
the rows are grouped by the group's keys *and* the biased exponent e, and
s * hi and s * lo are summed as Int64 (exact below `MAX_ROWS` rows a
group: integer sums do not depend on the order). The few (group, e) rows
that come back are added as Python integers -- the exact sum -- and
rounded once: the float `math.fsum` gives, bit for bit (tests/test_exact_sums.py).

Non-finite values follow `stats.exact_sum`: NaN gives NaN, +inf and -inf
together NaN, one infinity that infinity. A group holding a value of
magnitude `HUGE_EXPONENT` or more (where ``math.fsum`` may overflow on the
way and `stats.exact_sum` falls back to numpy's sum) is summed from its
values, read for it alone, by `stats.exact_sum` itself.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, Final

import polars as pl

from schedlab.platform.statistics.stats import exact_sum, rounded_sum

#: The polars engine of the scans here: streaming (the sums are integers: exact in any order).
ENGINE: Final = "streaming"
#: Split of a 53-bit significand into two Int64-summable halves: m = hi * 2^HALF_BITS + lo.
HALF_BITS = 26
#: Rows a group may have for its Int64 sums of halves (< 2^27 each) to be exact.
MAX_ROWS = 2**35
#: A biased exponent from which a value (>= 2^(HUGE_EXPONENT - 1023)) is summed by `stats.exact_sum`.
HUGE_EXPONENT = 2020
_NONFINITE = 0x7FF
_BIAS_SHIFT = 1075  # x = m * 2^(max(e, 1) - _BIAS_SHIFT)


def _parts(value: str) -> tuple[pl.Expr, list[pl.Expr]]:
    """The exponent key and the aggregations of one float column (see the module docstring)."""
    x = pl.col(value).cast(pl.Float64)
    bits = x.reinterpret(dtype=pl.Int64)
    biased = (bits // (1 << 52)) & _NONFINITE  # arithmetic shift: the exponent field, whatever the sign
    finite = (biased != _NONFINITE).cast(pl.Int64)
    mant = ((bits & ((1 << 52) - 1)) + (biased > 0).cast(pl.Int64) * (1 << 52)) * finite
    sign = 1 - 2 * (bits < 0).cast(pl.Int64)
    aggs = [
        ((mant // (1 << HALF_BITS)) * sign).sum().alias("_hi"),
        ((mant & ((1 << HALF_BITS) - 1)) * sign).sum().alias("_lo"),
        x.count().alias("_n"),
        x.is_nan().sum().alias("_nan"),
        (x == math.inf).sum().alias("_pinf"),
        (x == -math.inf).sum().alias("_ninf"),
    ]
    return biased.alias("_e"), aggs


def group_sums(lf: pl.LazyFrame, by: list[str], value: str) -> pl.DataFrame:
    """One row per group of ``by`` (the groups with a row in ``lf``, in no
    particular order): ``by``, ``n`` (the non-null values of ``value``) and
    ``sum``, their correctly rounded sum (`stats.exact_sum`'s float; 0.0
    for none), read in one streaming pass."""
    exponent, aggs = _parts(value)
    parts = lf.group_by([*by, exponent]).agg(aggs).collect(engine=ENGINE)
    totals: dict[tuple[Any, ...], list[Any]] = {}  # key -> [exact integer terms, n, nan, +inf, -inf, huge]
    for row in parts.iter_rows():
        key, (e, hi, lo, n, nan, pinf, ninf) = tuple(row[: len(by)]), row[len(by) :]
        acc = totals.setdefault(key, [[], 0, 0, 0, 0, False])
        acc[1] += n
        acc[2] += nan
        acc[3] += pinf
        acc[4] += ninf
        if e is None or e == _NONFINITE:
            continue
        acc[5] = acc[5] or e >= HUGE_EXPONENT
        acc[0].append((((hi << HALF_BITS) + lo), max(e, 1) - _BIAS_SHIFT))
    keys, counts, sums = [], [], []
    for key, (terms, n, nan, pinf, ninf, huge) in totals.items():
        if n >= MAX_ROWS:
            raise OverflowError(f"{n} rows in one group: more than exact Int64 sums allow ({MAX_ROWS})")
        if nan or (pinf and ninf):
            total = math.nan
        elif pinf or ninf:
            total = math.inf if pinf else -math.inf
        elif huge:
            total = _summed_alone(lf, by, key, value)
        else:
            try:
                total = rounded_sum(terms)
            except OverflowError:  # past the largest float: as math.fsum would, exact_sum says what
                total = _summed_alone(lf, by, key, value)
        keys.append(key)
        counts.append(n)
        sums.append(total)
    schema = lf.collect_schema()
    frame = pl.DataFrame([list(k) for k in keys], schema={c: schema[c] for c in by}, orient="row")
    return frame.with_columns(pl.Series("n", counts, dtype=pl.Int64), pl.Series("sum", sums, dtype=pl.Float64))


def group_means(lf: pl.LazyFrame, by: list[str], value: str) -> pl.DataFrame:
    """`group_sums` as means: ``by`` and ``value`` (sum / n, as `stats.mean_sd`
    has it; null for a group without a value, as polars' ``mean``)."""
    sums = group_sums(lf, by, value)
    mean = pl.when(pl.col("n") > 0).then(pl.col("sum") / pl.col("n").cast(pl.Float64)).alias(value)
    return sums.select([*by, mean])


def _summed_alone(lf: pl.LazyFrame, by: list[str], key: tuple[Any, ...], value: str) -> float:
    """`stats.exact_sum` of one group's values, read for it alone (a group with huge values)."""
    where = [pl.col(c).eq_missing(v) for c, v in zip(by, key)]
    values = lf.filter(*where).select(pl.col(value).cast(pl.Float64)).collect(engine=ENGINE).to_series()
    return exact_sum(values.drop_nulls().to_list())


def group_moments(
    frame: pl.DataFrame, by: list[str], metrics: list[str], means_only: Iterable[str] = ()
) -> pl.DataFrame:
    """`stats.group_moments` (``n`` rows, each metric's ``m_mean`` and
    ``m_std``: `stats.mean_sd` of its non-null values, bit for bit; ``m_std``
    NaN for the ``means_only`` metrics) from `group_sums` of the values and of
    their squared deviations from the group's mean, not from the rows sorted
    by group: a comparison's 10^7 pairs in seconds."""
    lf = frame.lazy()
    out = frame.group_by(by).agg(pl.len().alias("n"))
    skip = set(means_only)
    for m in dict.fromkeys(metrics):
        sums = group_sums(lf, by, m)
        means = sums.select([*by, pl.when(pl.col("n") > 0).then(pl.col("sum") / pl.col("n")).alias("_mean"), "n"])
        if m in skip:
            std = means.select([*by, pl.lit(math.nan).alias("_std")])
        else:
            dev = lf.join(means.lazy().select([*by, "_mean"]), on=by, how="left", nulls_equal=True)
            dev = dev.with_columns((pl.col(m).cast(pl.Float64) - pl.col("_mean")).alias("_dev"))
            squares = group_sums(dev.select([*by, (pl.col("_dev") * pl.col("_dev")).alias("_sq")]), by, "_sq")
            std = squares.join(means.select([*by, pl.col("n").alias("_k")]), on=by, how="left", nulls_equal=True)
            std = std.select(
                [*by, pl.when(pl.col("_k") > 1).then((pl.col("sum") / (pl.col("_k") - 1)).sqrt()).alias("_std")]
            )
        moments = means.join(std, on=by, how="left", nulls_equal=True).select(
            [*by, pl.col("_mean").alias(f"{m}_mean"), pl.col("_std").alias(f"{m}_std")]
        )
        out = out.join(moments, on=by, how="left", nulls_equal=True)
    return out.sort(by)


__all__ = ["ENGINE", "HALF_BITS", "HUGE_EXPONENT", "MAX_ROWS", "group_means", "group_moments", "group_sums"]
