"""Replication statistics, shared by `schedlab results`, `schedlab compare`,
MLflow tracking, adaptive replications, selection and the pipelines, so all
of them report the same numbers.

* ``summarize``: mean, 95 % confidence half-width (Student t), n per group.
* ``paired``: the t interval of a mean of paired differences (or log ratios),
  and the paired t test's two-sided p value.
* Identical replications are one sample (`IDENTICAL_NOTE`): a group whose
  n >= 2 values are all the same (a fixed trace replayed n times under a
  policy that ignores its random part) gets no interval and no p value,
  never the zero-width interval and p = 0 that n copies of one number give.
* Means dominated by one job are flagged (`DOMINANT_SHARE`, `dominated`):
  a replication whose largest per-job value is more than half the sum of all
  of them has a mean that measures that one job, not the policy.
* ``holm``: Holm's (1979) step-down adjustment of p values.
* ``mser5``: White's (1997) MSER-5 warm-up truncation point of one series.
* ``obm``: the overlapping batch-means interval (Meketon & Schmeiser 1984) of
  the mean of one long, autocorrelated series.

Every quantile and tail probability is Student's t from ``scipy.special``
(``stdtrit``, ``stdtr``): the functions ``scipy.stats.t.ppf`` and ``.sf``
evaluate, bit for bit (tests/test_stats_order.py checks it), without
importing ``scipy.stats`` (~0.5 s of every tracked run's start-up).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import polars as pl
from scipy import special

from schedlab.sim.common.portable import dot

CONFIDENCE = 0.95
#: Said wherever a value or a difference is reported without its interval
#: because every replication gave the same number.
IDENTICAL_NOTE = (
    "identical: every replication gave the same value, so the replications are one sample "
    "(e.g. a fixed trace replayed under a policy that ignores the random part): no interval, no p value"
)


#: A per-job mean is *dominated* when one job's value is more than this share
#: of the sum over the run's jobs: max / (mean x n_jobs) > DOMINANT_SHARE.
#: The mean then measures that job alone. The case it was written for: the
#: queue engine's slowdown (sojourn / size) of SRPTE and FSPE at Weibull shape
#: 0.125, whose sizes go down to ~1e-37 -- the sojourn of such a job is set by
#: the clock's resolution (ulp of t ~ 1e-13 at t ~ 1e3), so its slowdown
#: (~1e24 and more) and the mean it dominates (1e26-1e31) are numerically
#: meaningless. The PSBS paper never uses a mean slowdown: it reports the
#: per-job slowdown's distribution and the slowdown conditional on size
#: (§5.2, Figs. 4, 7, 8). n_jobs counts jobs of size 0 too (no slowdown), so
#: the computed share is a lower bound of the true one: the rule never flags
#: more than it should.
DOMINANT_SHARE = 0.5
#: The per-job means the rule reads, with the columns it reads them with: the
#: largest per-job value and the number of jobs.
DOMINANCE = {
    "slowdown_mean": ("slowdown_max", "n_jobs"),
    "stretch_mean": ("stretch_max", "n_jobs"),
}
#: Said wherever a flagged mean is reported (it is shown flagged, not as a result).
DOMINATED_NOTE = (
    f"dominated: in at least one replication a single job's value is more than {DOMINANT_SHARE:.0%} of the sum "
    "over its jobs (max / (mean x n_jobs)), so the mean measures that job, not the policy (a tiny job's "
    "slowdown is set by the clock's resolution); read the percentiles (slowdown_p50, slowdown_p99) instead"
)


def dominated_expr(columns: Iterable[str], metric: str) -> pl.Expr | None:
    """`dominated` as an expression (``<metric>_dominated``) on rows with
    these ``columns``: what a scan computes without the rows in memory; None
    when the metric has no rule or the columns lack what it reads."""
    rule = DOMINANCE.get(metric)
    have = set(columns)
    if rule is None or not all(c in have for c in (metric, *rule)):
        return None
    top, count = rule
    share = pl.col(top).cast(pl.Float64) / (pl.col(metric).cast(pl.Float64) * pl.col(count).cast(pl.Float64))
    flag = (share > DOMINANT_SHARE).fill_null(False) | (pl.col(metric).cast(pl.Float64).is_infinite().fill_null(False))
    return flag.alias(f"{metric}_dominated")


def dominated(frame: pl.DataFrame, metric: str) -> pl.Series | None:
    """Per row, whether ``metric`` (a per-job mean of `DOMINANCE`) is
    dominated by one job (`DOMINANT_SHARE`); None when the metric has no rule
    or the frame lacks its columns. A missing value is not dominated."""
    flag = dominated_expr(frame.columns, metric)
    return None if flag is None else frame.select(flag).to_series()


def identical(x: npt.ArrayLike) -> bool:
    """Whether ``x`` holds two or more values, all equal and finite: replications
    that are one sample. Equality is exact (min == max), not a zero standard
    deviation: the rounded mean of n equal values need not be the value."""
    a = np.asarray(x, dtype=float)
    return bool(a.size >= 2 and np.isfinite(a).all() and a.min() == a.max())


@functools.lru_cache(maxsize=4096)
def t_quantile(n: int, confidence: float = CONFIDENCE) -> float:
    """Two-sided Student-t quantile for n samples (nan for n < 2). Cached: a
    summary asks it once per group (10^5 groups in a large sweep's tracking),
    of a few distinct n, and scipy's ppf costs ~40 us a call."""
    return float(special.stdtrit(n - 1, 0.5 + confidence / 2)) if n >= 2 else float("nan")


def exact_sum(x: Iterable[float]) -> float:
    """The correctly rounded sum (``math.fsum``): the same bits for any order
    of the values. NaN propagates; infinities give what numpy's sum gives."""
    values = list(x)
    try:
        return math.fsum(values)
    except (ValueError, OverflowError):  # inf - inf, or an intermediate overflow: no finite sum to round
        return float(np.sum(values))


def mean_sd(x: npt.ArrayLike) -> tuple[float, float]:
    """Mean and sample standard deviation (ddof = 1; NaN below two values)
    from correctly rounded sums: ``fsum(x) / n`` and ``sqrt(fsum((x -
    mean)^2) / (n - 1))``, so the result depends on the values alone, never
    on their order."""
    a = np.asarray(x, dtype=float)
    n = a.size
    if n == 0:
        return math.nan, math.nan
    mean = exact_sum(a.tolist()) / n
    if n < 2:
        return mean, math.nan
    dev = a - mean
    return mean, math.sqrt(exact_sum((dev * dev).tolist()) / (n - 1))


def group_moments(
    frame: pl.DataFrame | pl.LazyFrame, by: list[str], metrics: list[str], means_only: Iterable[str] = ()
) -> pl.DataFrame:
    """One row per group of ``by``, sorted by ``by``: ``n`` (rows) and, per
    metric m, ``m_mean`` and ``m_std`` (ddof = 1) over its non-null values
    (null without a value, resp. with fewer than two), NaN propagating --
    polars' semantics -- computed by `mean_sd`.

    Why not polars' ``group_by().agg(mean(), std())``: its float sums depend
    on how its threads split the rows, so the same frame gives means that
    differ in the last bits from one call to the next (8 different results
    in 8 calls on 20k rows in 1,500 groups), and a published number must not.
    Correctly rounded sums make the result a function of the values alone."""
    df = frame.collect() if isinstance(frame, pl.LazyFrame) else frame
    out = df.group_by(by).agg(pl.len().alias("n")).sort(by)
    metrics = list(dict.fromkeys(metrics))
    skip = set(means_only)  # their m_std is not computed (NaN): a long run's second pass saved
    ordered = df.select(by + [pl.col(m).cast(pl.Float64) for m in metrics]).sort(by)  # one sort for every metric
    whole: tuple[pl.DataFrame, np.ndarray] | None = None  # the runs of the rows, shared by metrics without nulls
    for m in metrics:
        vals = ordered.select(by + [m]).drop_nulls(m)
        if vals.height == 0:
            out = out.with_columns(
                pl.lit(None, pl.Float64).alias(f"{m}_mean"), pl.lit(None, pl.Float64).alias(f"{m}_std")
            )
            continue
        if vals.height == ordered.height and whole is not None:
            keys, starts = whole
        else:
            keys = vals.select(by)
            run = keys.select(pl.struct(by).rle_id()).to_series().to_numpy()  # one id per group (nulls equal)
            starts = np.flatnonzero(np.diff(run, prepend=-1))
            if vals.height == ordered.height:
                whole = keys, starts
        mean, std = _moments(vals[m].to_numpy(), starts, m not in skip)
        count = pl.Series(np.diff(np.append(starts, vals.height)))
        moments_frame = keys[starts].with_columns(
            pl.Series(f"{m}_mean", mean, dtype=pl.Float64),
            pl.when(count > 1).then(pl.Series(f"{m}_std", std, dtype=pl.Float64)).alias(f"{m}_std"),
        )
        out = out.join(moments_frame, on=by, how="left", nulls_equal=True)
    return out


def _moments(x: np.ndarray, starts: np.ndarray, spread: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """`mean_sd` of each run ``x[starts[i]:starts[i + 1]]``. Runs of one or two
    values (one replication per configuration, or two: what a large sweep's
    tracking summarises, 10^5 groups) are computed for all at once: one IEEE
    addition is already correctly rounded, so ``a + b`` is ``fsum([a, b])``
    (inf - inf and overflow included: NaN and inf, as `exact_sum` falls back
    to; -0.0 aside, which fsum gives as +0.0, hence the ``+ 0.0``) and the
    bits are `mean_sd`'s. Longer runs go through `mean_sd`."""
    size = np.diff(np.append(starts, x.size))
    mean = np.empty(starts.size)
    std = np.full(starts.size, math.nan)
    one = size == 1
    mean[one] = x[starts[one]] + 0.0  # fsum([-0.0]) is +0.0: so is -0.0 + 0.0
    two = size == 2
    a, b = x[starts[two]], x[starts[two] + 1]
    with np.errstate(over="ignore", invalid="ignore"):
        m2 = (a + b + 0.0) / 2  # (+ 0.0: fsum([-0.0, -0.0]) is +0.0, a + b is -0.0)
        da, db = a - m2, b - m2
        mean[two] = m2
        std[two] = np.sqrt(da * da + db * db)
    short = np.flatnonzero((size > 2) & (size < LONG_RUN))
    for i in short:
        mean[i], std[i] = mean_sd(x[starts[i] : starts[i] + size[i]])
    long = np.flatnonzero(size >= LONG_RUN)
    if long.size:  # mean_sd of each, its sums vectorised (run_sums): 10^6 pairs of one comparison
        lo, n = starts[long], size[long]
        idx = np.concatenate([np.arange(a, a + k) for a, k in zip(lo.tolist(), n.tolist())])
        vals = x[idx]
        runs = np.cumsum(np.append(0, n))[:-1]
        total = run_sums(vals, runs)
        m = total / n
        mean[long] = m
        ss = np.zeros(long.size)
        if spread:
            with np.errstate(over="ignore", invalid="ignore"):
                dev = vals - np.repeat(m, n)
                ss = run_sums(dev * dev, runs)
                std[long] = np.sqrt(ss / (n - 1))
        for j in np.flatnonzero(np.isnan(total) | np.isinf(total) | np.isnan(ss) | np.isinf(ss)):
            i = long[j]  # a non-finite or huge value: mean_sd says what, as it does
            mean[i], std[i] = mean_sd(x[starts[i] : starts[i] + size[i]])
    return mean, std


#: Runs of at least this many values have their `mean_sd` computed together (`run_sums`); shorter ones one by one.
LONG_RUN = 256
#: A value of magnitude 2^HUGE_BINADE or more makes `run_sums` leave its run to `exact_sum` (fsum may overflow).
HUGE_BINADE = 1000
#: `run_sums` adds with a bincount when its (run, exponent) slots are at most this many per value ...
BINCOUNT_CELLS = 4
#: ... and the values fewer than 2^BINCOUNT_BITS (float64 sums of 27-bit integers stay exact); else it sorts.
BINCOUNT_BITS = 26


def run_sums(x: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """`exact_sum` of each run ``x[starts[i]:starts[i + 1]]``, bit for bit,
    without a Python float per value: each value is split (``np.frexp``) into
    a 53-bit integer and its exponent, the integers' halves are summed per
    (run, exponent) as int64 (exact), and each run's few (exponent, sum) terms
    are added as Python integers and rounded once (`rounded_sum`). A run with a
    non-finite or huge (`HUGE_BINADE`) value is summed by `exact_sum`."""
    size = np.diff(np.append(starts, x.size))
    out = np.empty(starts.size)
    if x.size == 0:
        out[:] = 0.0
        return out
    run = np.repeat(np.arange(starts.size), size)
    with np.errstate(invalid="ignore"):
        odd = ~np.isfinite(x) | (np.abs(x) >= 2.0**HUGE_BINADE)
    frac, exp = np.frexp(np.where(odd, 0.0, x))
    width = int(exp.max() - exp.min()) + 1
    key = run * width + (exp - exp.min())
    if starts.size * width <= BINCOUNT_CELLS * x.size and x.size < 2**BINCOUNT_BITS:
        # the halves as floats (exact: integers below 2^27); a float64 bincount of them is exact below
        # 2^26 of them (every partial sum < 2^53)
        whole_f = frac * 2.0**53  # x = whole * 2^(exp - 53), exactly
        high_f = np.floor(frac * 2.0**27)
        slots = starts.size * width
        high_all = np.bincount(key, weights=high_f, minlength=slots)
        low_all = np.bincount(key, weights=whole_f - high_f * 2.0**26, minlength=slots)
        used = np.flatnonzero((high_all != 0) | (low_all != 0))
        keys, high, low = used, high_all[used].astype(np.int64), low_all[used].astype(np.int64)
    else:
        whole = (frac * 2.0**53).astype(np.int64)
        order = np.argsort(key, kind="stable")
        sorted_keys = key[order]
        first = np.flatnonzero(np.diff(sorted_keys, prepend=-1))
        keys = sorted_keys[first]
        high = np.add.reduceat(whole[order] >> 26, first)
        low = np.add.reduceat(whole[order] & ((1 << 26) - 1), first)
    terms: list[list[tuple[int, int]]] = [[] for _ in range(starts.size)]
    lowest = int(exp.min()) - 53
    for k, h, lw in zip(keys.tolist(), high.tolist(), low.tolist()):
        terms[k // width].append(((h << 26) + lw, k % width + lowest))
    for i, t in enumerate(terms):
        try:
            out[i] = rounded_sum(t)
        except OverflowError:  # past the largest float: exact_sum says what (as fsum would not)
            odd[starts[i]] = True
    for i in np.unique(run[odd]):
        out[i] = exact_sum(x[starts[i] : starts[i] + size[i]].tolist())
    return out


def rounded_sum(terms: list[tuple[int, int]]) -> float:
    """sum(k * 2^p for (k, p) in terms), exactly, rounded once to the nearest
    float (ties to even: the float ``math.fsum`` gives); OverflowError past
    the largest float."""
    if not terms:
        return 0.0
    low = min(p for _, p in terms)
    total = sum(k << (p - low) for k, p in terms)
    if low >= 0:
        return float(total << low)
    return total / (1 << -low)  # int / int: correctly rounded (subnormals too)


def summarize(frame: pl.DataFrame | pl.LazyFrame, by: list[str], metrics: list[str], std: bool = False) -> pl.DataFrame:
    """One row per group of ``by``: ``n`` and, for each metric m, ``m_mean``,
    ``m_ci95`` (half-width of the 95 % CI of the mean; null when n < 2 or
    when the replications are identical), ``m_identical`` (`identical`:
    n >= 2 equal values, one sample -- `IDENTICAL_NOTE`) and
    ``m_dominated`` (a per-job mean of `DOMINANCE` dominated by one job in
    some replication, `DOMINATED_NOTE`; false when the frame lacks the
    columns the rule reads), and with ``std`` its ``m_std`` (the sample
    standard deviation behind it). Sorted by ``by``; its numbers depend on
    the rows' values alone, not on their order or on polars' threads
    (`group_moments`)."""
    df = frame.collect() if isinstance(frame, pl.LazyFrame) else frame
    flags = [f for f in (dominated(df, m) for m in dict.fromkeys(metrics)) if f is not None]
    df = df.with_columns(flags)
    out = group_moments(df, by, metrics)
    tq = pl.Series("tq", [t_quantile(n) for n in out["n"].to_list()], dtype=pl.Float64)
    out = out.with_columns(tq)
    metrics = list(dict.fromkeys(metrics))
    same = df.group_by(by).agg(
        [
            (
                (pl.col(m).drop_nulls().len() >= 2)
                & (pl.col(m).cast(pl.Float64).min() == pl.col(m).cast(pl.Float64).max())
                & pl.col(m).cast(pl.Float64).drop_nulls().is_finite().all()
            ).alias(f"{m}_identical")
            for m in metrics
        ]
        + [
            (pl.col(f"{m}_dominated").any() if f"{m}_dominated" in df.columns else pl.lit(False)).alias(
                f"{m}_dominated"
            )
            for m in metrics
        ]
    )
    out = out.join(same, on=by, how="left", nulls_equal=True)
    out = out.with_columns(
        [
            pl.when(pl.col(f"{m}_identical"))
            .then(None)
            .otherwise(pl.col("tq") * pl.col(f"{m}_std") / pl.col("n").cast(pl.Float64).sqrt())
            .alias(f"{m}_ci95")
            for m in metrics
        ]
    )
    return out.drop(["tq"] + ([] if std else [f"{m}_std" for m in metrics]))


# --------------------------------------------------------------------------- paired


@dataclass(frozen=True)
class Paired:
    """A t interval from n paired differences d_j (or log ratios)."""

    n: int
    mean: float
    sd: float  # sample standard deviation of the d_j (ddof = 1); nan for n < 2
    halfwidth: float  # t_{n-1, 1-a/2} sd / sqrt(n); nan for n < 2 or identical d_j
    p_value: float  # two-sided paired t test of mean 0; nan for n < 2 or identical d_j
    identical: bool = False  # n >= 2 equal differences: one sample (`IDENTICAL_NOTE`)

    @property
    def n_effective(self) -> int:
        """Independent samples behind the estimate: 1 when the n differences are identical."""
        return 1 if self.identical else self.n

    @property
    def low(self) -> float:
        return self.mean - self.halfwidth

    @property
    def high(self) -> float:
        return self.mean + self.halfwidth


def paired(d: npt.ArrayLike, confidence: float = CONFIDENCE) -> Paired:
    """Mean of the differences ``d`` (one per pair: same workload instance),
    the half-width of its ``confidence`` t interval and the paired t test's
    p value (Student's t). When the n differences are all the same (a
    fixed trace replayed n times, or two policies that made the same
    schedule on every instance) they are one sample (`identical`): no
    interval, no p value (NaN), ``identical`` set -- not a zero-width
    interval with p = 0. Mean and sd come from `mean_sd`, so the figures do
    not depend on the order the pairs come in."""
    d = np.asarray(d, dtype=float)
    n = int(d.size)
    if n == 0:
        return Paired(0, math.nan, math.nan, math.nan, math.nan)
    mean, sd = mean_sd(d)
    return paired_of(n, mean, sd, float(d[0]) if identical(d) else None, confidence)


def paired_of(n: int, mean: float, sd: float, same: float | None, confidence: float = CONFIDENCE) -> Paired:
    """`paired` from the n >= 1 differences' `mean_sd` and, when they are
    `identical`, their value ``same`` (None otherwise): what `paired_stats`
    computes for every comparison at once (`group_moments`)."""
    if n < 2:
        return Paired(1, mean, math.nan, math.nan, math.nan)
    if same is not None:
        return Paired(n, same, 0.0, math.nan, math.nan, identical=True)
    se = sd / math.sqrt(n)
    if se == 0.0 or not math.isfinite(se):
        return Paired(n, mean, sd, math.nan, math.nan)
    half = t_quantile(n, confidence) * se
    p = float(2.0 * special.stdtr(n - 1, -abs(mean) / se))  # t.sf(x) = stdtr(-x)
    return Paired(n, mean, sd, half, p)


def holm(p_values: Iterable[float | None]) -> list[float]:
    """Holm's (1979) step-down adjusted p values: sort ascending, multiply the
    i-th smallest (0-based) by m - i, take the running maximum, cap at 1.
    Rejecting where the adjusted p < alpha controls the family-wise error
    rate at alpha over the m tests, under any dependence between them.
    NaN p values are left out of m and stay NaN."""
    p = [float(x) if x is not None else math.nan for x in p_values]
    idx = [i for i, x in enumerate(p) if not math.isnan(x)]
    m = len(idx)
    out = [math.nan] * len(p)
    running = 0.0
    for rank, i in enumerate(sorted(idx, key=lambda j: (p[j], j))):
        running = max(running, min(1.0, (m - rank) * p[i]))
        out[i] = running
    return out


# --------------------------------------------------------------------------- one long run

#: MSER-5 batches of this many observations (White, Cobb & Spratt 2000).
MSER_BATCH = 5
#: MSER looks for its truncation point in the first half of the batches only:
#: a minimum later than that is the statistic's known failure on a series
#: too short for its transient (White 1997, Hoad, Robinson & Davies 2010).
MSER_MAX_FRACTION = 0.5


def mser5(x: npt.NDArray[Any]) -> int:
    """MSER-5 (White 1997; batch size 5 as in White, Cobb & Spratt 2000):
    how many leading observations of ``x`` to delete.

    The series is cut into m = len(x) // 5 batch means Z_1..Z_m (a trailing
    partial batch is left out of the rule) and the truncation d* (in batches)
    minimises MSER(d) = sum_{j>d} (Z_j - mean(Z_{d+1..m}))^2 / (m - d)^2 over
    d = 0 .. floor(m / 2) (``MSER_MAX_FRACTION``); returns 5 d*. Ties go to
    the smallest d. O(n) with cumulative sums."""
    x = np.asarray(x, dtype=float)
    m = x.size // MSER_BATCH
    if m < 4:  # too short to say anything: delete nothing
        return 0
    z = x[: m * MSER_BATCH].reshape(m, MSER_BATCH).mean(axis=1)
    # tail sums S1(d) = sum_{j >= d} z_j, S2(d) = sum_{j >= d} z_j^2 (0-based d)
    s1 = np.cumsum(z[::-1])[::-1]
    s2 = np.cumsum((z * z)[::-1])[::-1]
    d = np.arange(int(math.floor(m * MSER_MAX_FRACTION)) + 1)
    k = (m - d).astype(float)
    sse = s2[d] - s1[d] ** 2 / k  # sum of squared deviations from the tail mean
    mser = np.maximum(sse, 0.0) / k**2
    return int(np.argmin(mser)) * MSER_BATCH


#: Overlapping batch means: batch size b = n // OBM_BATCHES. Few, long
#: batches: queueing output is strongly autocorrelated near saturation, and
#: too short batches under-estimate the variance. Measured on M/M/1 started
#: empty after the sweep's warm-up cut (benchmarks/steady_state.py): with
#: n/b = 4 the 95 % interval covered E[T] in 95 % of 300 runs of 100k jobs at
#: load 0.9 (n/b = 20: 93 %); at load 0.99 with 1M jobs (about six relaxation
#: times) in 85 % of 80 runs (n/b = 20: 78 %) -- such a run is still short.
OBM_BATCHES = 4


@dataclass(frozen=True)
class BatchMeans:
    n: int
    mean: float
    batch: int  # b
    dof: float  # 1.5 (n/b - 1), Meketon & Schmeiser's approximation
    halfwidth: float


def obm(x: npt.ArrayLike, batches: int = OBM_BATCHES, confidence: float = CONFIDENCE) -> BatchMeans:
    """Overlapping batch-means confidence interval for the mean of one
    stationary (warm-up deleted) series ``x`` (Meketon & Schmeiser 1984).

    With b = n // batches and the n - b + 1 overlapping batch means Y_j(b),
    the variance parameter sigma^2 = lim n Var(mean) is estimated by
    V = n b / ((n - b + 1)(n - b)) * sum_j (Y_j(b) - mean)^2, and the interval
    is mean +- t_{dof} sqrt(V / n) with dof = 1.5 (n / b - 1)."""
    x = np.asarray(x, dtype=float)
    n = int(x.size)
    mean = float(x.mean()) if n else math.nan
    b = n // batches
    if b < 1 or n - b < 1 or batches < 2:
        return BatchMeans(n, mean, b, math.nan, math.nan)
    c = np.concatenate(([0.0], np.cumsum(x - mean)))  # centred: less cancellation
    y = (c[b:] - c[:-b]) / b  # overlapping batch means minus the grand mean
    v = n * b / ((n - b + 1) * (n - b)) * dot(y, y)
    dof = 1.5 * (n / b - 1)
    half = float(special.stdtrit(dof, 0.5 + confidence / 2)) * math.sqrt(v / n)
    return BatchMeans(n, mean, b, dof, half)
