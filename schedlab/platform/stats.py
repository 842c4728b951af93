"""Replication statistics: mean, 95 % confidence half-width (Student t), n.

Used by `schedlab results`, by MLflow tracking and by adaptive replications,
so all three report the same numbers.
"""

from __future__ import annotations

import polars as pl
from scipy import stats

CONFIDENCE = 0.95


def t_quantile(n: int) -> float:
    """Two-sided Student-t quantile for n samples (nan for n < 2)."""
    return float(stats.t.ppf(0.5 + CONFIDENCE / 2, n - 1)) if n >= 2 else float("nan")


def summarize(frame: pl.DataFrame | pl.LazyFrame, by: list[str], metrics: list[str]) -> pl.DataFrame:
    """One row per group of ``by``: ``n`` and, for each metric m, ``m_mean`` and
    ``m_ci95`` (half-width of the 95 % CI of the mean; null when n < 2).
    Sorted by ``by`` so the output is deterministic."""
    lf = frame.lazy() if isinstance(frame, pl.DataFrame) else frame
    aggs = [pl.len().alias("n")]
    for m in metrics:
        aggs += [pl.col(m).mean().alias(f"{m}_mean"), pl.col(m).std(ddof=1).alias(f"{m}_std")]
    out = lf.group_by(by).agg(aggs).sort(by).collect()
    tq = pl.Series("tq", [t_quantile(n) for n in out["n"].to_list()], dtype=pl.Float64)
    out = out.with_columns(tq)
    out = out.with_columns(
        [(pl.col("tq") * pl.col(f"{m}_std") / pl.col("n").cast(pl.Float64).sqrt()).alias(f"{m}_ci95") for m in metrics]
    )
    return out.drop(["tq"] + [f"{m}_std" for m in metrics])
