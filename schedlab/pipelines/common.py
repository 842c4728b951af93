"""Small aggregation, table and plotting helpers shared by the pipelines (headless, Agg):
the generic line figure of a declared pipeline (`line_figure`) and the markdown
tables of its report (`md_table`, `md_grid`) live here.

Figures go through `schedlab.plotting` (one style; PDF + 300-dpi PNG; error
bars that respect a floor). The floors the pipelines use:

* `RATIO_FLOOR` = 1 for MST / optimal (SRPT minimises the mean sojourn time
  of every arrival sequence on one server, Schrage 1968, so each
  replication's ratio is >= 1) and for a degradation from a lower bound;
* `POSITIVE_FLOOR` = 0 for a positive metric drawn on a log axis.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from schedlab.pipelines.base import FAILS, HOLDS, INCONCLUSIVE

#: MST / optimal, or a value over a proven lower bound: never below 1.
RATIO_FLOOR = 1.0
#: A positive metric (MST, queue length) on a log axis: never below 0.
POSITIVE_FLOOR = 0.0


def look(policy: str) -> dict[str, Any]:
    """A policy's colour and marker in every pipeline figure: its place among
    the registered policies (`schedlab.plotting.line_style`), the same in
    every figure whichever policies a figure shows."""
    from schedlab.plotting import line_style, registered_policies

    return line_style(policy, registered_policies())


def relative_to(results_dir: str | Path, metric: str, baseline: str, keys: list[str]):
    """Per replication, metric / metric of the baseline policy in the same
    configuration and replication (common random numbers), then mean, 95 % CI
    and n over replications via `stats.summarize`. Columns: keys, policy,
    n, ratio_mean, ratio_ci95, <metric>_mean, <metric>_ci95."""
    import polars as pl

    from schedlab import load
    from schedlab.platform.statistics.stats import summarize

    lf = load(results_dir).select(keys + ["policy", "replication", metric])
    joined = ratios_to(lf, [metric], baseline, keys + ["replication"]).filter(pl.col("policy") != baseline)
    return summarize(joined.rename({f"{metric}_ratio": "ratio"}), keys + ["policy"], ["ratio", metric])


def ratios_to(frame, metrics: list[str], baseline: str, on: list[str]):
    """Each row's metrics divided by the baseline policy's on the same ``on``
    key (the same instance: common random numbers, or the same trace window):
    adds ``<m>_ratio`` columns; rows without a baseline row are dropped."""
    import polars as pl

    base = frame.filter(pl.col("policy") == baseline).select(on + [pl.col(m).alias(f"_b_{m}") for m in metrics])
    out = frame.join(base, on=on, how="inner")
    return out.with_columns([(pl.col(m) / pl.col(f"_b_{m}")).alias(f"{m}_ratio") for m in metrics]).drop(
        [f"_b_{m}" for m in metrics]
    )


def paired_ratios(frame, metric: str, policy: str, other: str, keys: list[str], pair: list[str]):
    """Paired 95 % intervals of ``policy`` / ``other`` (geometric mean ratio,
    t interval of the mean log ratio, `compare.paired_stats`) per ``keys``,
    from rows that share ``pair`` (the replication, or a trace window): the
    interval a claim "policy beats other" is judged by. Columns: keys,
    n, estimate, ci_low, ci_high, identical, and ``paths_vary``: whether
    ``other``'s value differs between the pairs (`paired_row` reads an
    identical ratio of exactly 1 as the two policies being equal on every
    one of those instances)."""
    import polars as pl

    from schedlab.platform.statistics.compare import paired_stats

    if hasattr(frame, "collect"):
        frame = frame.collect()
    rows = frame.filter(pl.col("policy").is_in([policy, other])).select(
        keys + [c for c in pair if c not in keys] + ["policy", pl.col(metric).cast(pl.Float64)]
    )
    out = paired_stats(rows, keys, [c for c in pair if c not in keys], "policy", metric, other, ratio=True)
    base = rows.filter((pl.col("policy") == other) & pl.col(metric).is_not_nan())
    if not keys:
        return out.with_columns(paths_vary=pl.lit(base[metric].n_unique() > 1))
    vary = base.group_by(keys).agg((pl.col(metric).n_unique() > 1).alias("paths_vary"))
    return out.join(vary, on=keys, how="left", nulls_equal=True, maintain_order="left")


def absolute(results_dir: str | Path, metric: str | list[str], keys: list[str]):
    """Mean, 95 % CI and n of a metric (or several) per keys + policy."""
    from schedlab import load
    from schedlab.platform.statistics.stats import summarize

    return summarize(load(results_dir), keys + ["policy"], [metric] if isinstance(metric, str) else list(metric))


def lookup(table, policy: str | None = None, **where: Any) -> dict[str, Any] | None:
    """The row of a summarized table for a policy (None: any) and key values (floats matched approximately)."""
    for row in table.iter_rows(named=True):
        if policy is not None and row["policy"] != policy:
            continue
        if all(abs(float(row[k]) - float(v)) < 1e-9 for k, v in where.items()):
            return row
    return None


def row_at(table, policy: str | None = None, **where: Any) -> dict[str, Any]:
    """Like ``lookup``, for a row that must exist (KeyError naming it otherwise)."""
    found = lookup(table, policy, **where)
    if found is None:
        raise KeyError(f"no row for policy {policy!r} at {where}")
    return found


def fmt_ci(mean: float | None, ci: float | None) -> str:
    if mean is None:
        return "–"
    return f"{mean:.3g} ± {ci:.2g}" if ci is not None and ci == ci else f"{mean:.3g}"


def fmt_row(row: dict[str, Any], col: str) -> str:
    """'mean ± 95 % CI' of ``col`` at a row of a summarized table; 'mean
    (identical)' when its replications are one sample, 'dominated' for a mean
    dominated by one job (`stats.IDENTICAL_NOTE`, `stats.DOMINATED_NOTE`)."""
    if row.get(f"{col}_dominated"):
        return "dominated"
    if row.get(f"{col}_identical") and row[f"{col}_mean"] is not None:
        return f"{row[f'{col}_mean']:.3g} (identical)"
    return fmt_ci(row[f"{col}_mean"], row.get(f"{col}_ci95"))


def md_table(table, x: str, policies: list[str], col: str, x_label: str | None = None) -> str:
    """Markdown: one row per x value, one column per policy, 'mean ± 95 % CI'."""
    return md_grid(table, [x], policies, col, [x_label or x])


def cell(table, policy: str, col: str, **where: Any) -> str:
    """'mean ± 95 % CI' of ``col`` for a policy at a point ('–' if absent)."""
    row = lookup(table, policy, **where)
    return fmt_row(row, col) if row else "–"


def md_grid(table, keys: list[str], policies: list[str], col: str, labels: list[str] | None = None) -> str:
    """Markdown: one row per combination of the ``keys`` values, one column per policy, 'mean ± 95 % CI'."""
    import itertools

    points = itertools.product(*(sorted(set(table[k].to_list())) for k in keys))
    return md_rows(
        (labels or keys) + policies,
        [
            [f"{v:g}" for v in point] + [cell(table, p, col, **dict(zip(keys, point))) for p in policies]
            for point in points
        ],
        table,
    )


def md_sorted(table, keys: list[str], columns: list[str], labels: list[str]) -> str:
    """Markdown: a row per row of a summarized table, sorted by ``keys`` (numbers as ``:g``),
    then 'mean ± 95 % CI' of each of ``columns``; ``labels``: the header (a declared ``measured`` table)."""
    return md_rows(
        labels,
        [
            [r[k] if isinstance(r[k], str) else f"{r[k]:g}" for k in keys] + [fmt_row(r, c) for c in columns]
            for r in table.sort(keys).iter_rows(named=True)
        ],
        table,
    )


def md(head: list[str], rows: list[list[str]]) -> str:
    """A markdown table: the header, the rule, a line per row of cells."""
    return "\n".join(
        ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] + ["| " + " | ".join(r) + " |" for r in rows]
    )


def md_rows(head: list[str], rows: list[list[str]], table) -> str:
    """A markdown table, then the replications per point of ``table`` (its ``n``), and the notes
    on identical replications and dominated means when a cell says so."""
    from schedlab.platform.statistics.stats import DOMINATED_NOTE, IDENTICAL_NOTE

    n = ", ".join(map(str, sorted(set(table["n"].to_list()))))
    cells = [c for r in rows for c in r]
    notes = [
        note
        for word, note in (("(identical)", IDENTICAL_NOTE), ("dominated", DOMINATED_NOTE))
        if any(word in c for c in cells)
    ]
    tail = "".join(f"\n\n{note}." for note in notes)
    return f"{md(head, rows)}\n\nReplications per point: {n}; ± is the 95 % CI half-width (Student t).{tail}"


def ci_or_zero(values) -> list[float]:
    """95 % CI half-widths for error bars: 0 where there is none (n < 2: null or NaN)."""
    return [c if c is not None and c == c else 0.0 for c in values]


def plot_lines(
    ax,
    table,
    x: str,
    col: str,
    policies: list[str],
    floor: float | None = None,
    dropped: dict[str, int] | None = None,
    logy: bool = False,
) -> list[str]:
    """One line per policy (mean, with 95 % CI error bars); returns the series
    names plotted. ``floor``: the value the quantity cannot go below
    (`RATIO_FLOOR`, `POSITIVE_FLOOR`); the bars are then the log-transformed
    interval of (mean - floor) (`schedlab.plotting.floor_interval`), which
    never crosses it; None: the symmetric t interval (a linear axis). A bar
    that would swamp the figure (n < 3, or wider than the means' range on
    the ``logy`` or linear scale) is left out, its point hollow, and counted
    in ``dropped`` for the caption (`schedlab.plotting.readable_errorbar`)."""
    from schedlab.plotting import floor_interval, plotted_range, readable_errorbar

    dropped = {} if dropped is None else dropped
    shown = table.filter(table["policy"].is_in(policies))
    plotted = plotted_range(shown[f"{col}_mean"].to_list(), logy)
    plotted_ = [p for p in policies if p in set(shown["policy"].to_list())]
    for p in plotted_:
        sub = table.filter(table["policy"] == p).sort(x)
        mean = sub[f"{col}_mean"].to_list()
        bounds = [floor_interval(m, h, floor) for m, h in zip(mean, sub[f"{col}_ci95"].to_list())]
        n = sub["n"].to_list() if "n" in sub.columns else [None] * sub.height
        readable_errorbar(
            ax,
            sub[x].to_list(),
            mean,
            [b[0] for b in bounds],
            [b[1] for b in bounds],
            n,
            plotted,
            logy,
            dropped,
            label=p,
            **look(p),
            markersize=5,
            capsize=2,
            linewidth=1.2,
        )
    return plotted_


def line_figure(panels: list[tuple[Any, Any, dict[str, Any]]], plot: dict[str, Any], path: Path) -> list[str]:
    """The line figure of a pipeline's ``plot`` table (`schedlab.pipelines.declare`):
    one panel per (source table, rows drawn, panel) in a row, ``plot["y"]``
    against the panel's x (``panel["x"]``, else ``plot["x"]``), one line per
    policy of ``plot["series"]`` with 95 % CI bars that respect
    ``plot["floor"]`` (`plot_lines`), a dotted ``reference`` line, a log x
    axis (``logx``: ticks at the swept values of the source table) and
    ``yscale`` ("log", or "symlog" with ``linthresh``). Layout: panel_width,
    height, sharey, grid ("major" or "both"), xlabel, ylabel (first panel, or
    every panel with ylabel_every), legend (kwargs, first panel). Returns the
    series plotted (policy names, in order)."""
    import matplotlib.pyplot as plt

    from schedlab.plotting import add_caption, bar_caption, save

    fig, axes = plt.subplots(
        1,
        len(panels),
        figsize=(plot.get("panel_width", 4.0) * len(panels) + 1, plot.get("height", 3.8)),
        sharey=plot.get("sharey", True),
        squeeze=False,
    )
    series: list[str] = []
    dropped: dict[str, int] = {}
    for ax, (source, table, panel) in zip(axes[0], panels):
        x = panel["x"] if "x" in panel else plot["x"]
        logy = plot.get("yscale") == "log"
        for name in plot_lines(ax, table, x, plot["y"], plot["series"], plot.get("floor"), dropped, logy):
            if name not in series:
                series.append(name)
        if "reference" in plot:
            ax.axhline(plot["reference"], color="grey", linewidth=0.8, linestyle=":")
        logx = panel.get("logx", plot.get("logx", False))
        if logx:
            ax.set_xscale("log")
        if plot.get("yscale") == "symlog":
            ax.set_yscale("symlog", linthresh=plot["linthresh"])
        elif "yscale" in plot:
            ax.set_yscale(plot["yscale"])
        if logx:
            xs = sorted(set(source[x].to_list()))
            ax.set_xticks(xs, [f"{v:g}" for v in xs])
            ax.minorticks_off()
        ax.set_xlabel(panel.get("xlabel", plot.get("xlabel", x)))
        if plot.get("ylabel_every"):
            ax.set_ylabel(plot["ylabel"])
        if "title" in panel:
            ax.set_title(panel["title"])
        ax.grid(True, which=plot.get("grid", "major"), alpha=0.3)
    axes[0][0].set_ylabel(plot["ylabel"])
    axes[0][0].legend(**plot.get("legend", {"fontsize": 8}))
    if bar_caption(dropped):
        add_caption(fig, bar_caption(dropped))
    save(fig, path)
    return series


def where(table, conditions: dict[str, float]):
    """The rows of a table where each column equals its value (floats matched approximately)."""
    for col, value in conditions.items():
        table = table.filter((table[col] - value).abs() < 1e-9)
    return table


#: the comparisons a claim may state (`schedlab.pipelines.declare.Claim`)
OPS: dict[str, Any] = {
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}


def values(table, col: str = "ratio"):
    """``r(policy, **point)``: the mean of ``col`` of a summarized table at a
    point, as an `Estimate` carrying its 95 % interval."""
    return lambda policy, **point: estimate(row_at(table, policy, **point), col)


class Estimate(float):
    """A mean with its 95 % interval [low, high]: a float (formats, sorts and
    compares as the mean) that verdicts read through `judge`. Without an
    interval (n = 1, identical replications, a dominated mean) the interval
    is (-inf, inf): nothing can be concluded from it.

    Arithmetic between estimates (and numbers) is interval arithmetic on the
    bounds (a ratio needs positive bounds, else the whole line): the result's
    interval contains every value the operands' intervals allow, so a claim
    judged on it holds only if it holds at every such value. It is wide, not
    a calibrated 95 % interval; a ratio of two policies is judged on the
    paired interval instead wherever the rows are at hand
    (`paired_ratios`, `Claim.compare`)."""

    low: float
    high: float
    #: What an exact estimate rests on, when it is a measurement and not a constant ("equal in all 600 replications")
    basis: str

    def __new__(cls, mean: float, low: float = -math.inf, high: float = math.inf, basis: str = "") -> Estimate:
        obj = super().__new__(cls, mean)
        obj.low, obj.high, obj.basis = float(low), float(high), basis
        return obj

    @property
    def exact(self) -> bool:
        return self.low == self.high

    def _corners(self, other: Any, op) -> Estimate:
        o = bounds(other)
        with_nan = [op(a, b) for a in (self.low, self.high) for b in o]
        corners = [c for c in with_nan if not math.isnan(c)]
        if len(corners) < len(with_nan):
            return Estimate(op(float(self), float(other)))
        return Estimate(op(float(self), float(other)), min(corners), max(corners))

    def __add__(self, other: Any) -> Estimate:
        return self._corners(other, lambda a, b: a + b)

    __radd__ = __add__

    def __sub__(self, other: Any) -> Estimate:
        return self._corners(other, lambda a, b: a - b)

    def __rsub__(self, other: Any) -> Estimate:
        return Estimate(float(other), *bounds(other))._corners(self, lambda a, b: a - b)

    def __mul__(self, other: Any) -> Estimate:
        return self._corners(other, lambda a, b: a * b)

    __rmul__ = __mul__

    def __truediv__(self, other: Any) -> Estimate:
        lo, _ = bounds(other)
        if lo <= 0:  # the divisor's interval reaches 0: any value
            return Estimate(float(self) / float(other))
        return self._corners(other, lambda a, b: a / b)

    def __rtruediv__(self, other: Any) -> Estimate:
        return Estimate(float(other), *bounds(other)) / self


def exact(value: float, n: int, members: str) -> Estimate:
    """A quantity of a whole finite population of ``n`` ``members`` ("weeks", "held-out sequences"),
    every one of which ran once, replayed by deterministic engines: the quantity itself, not a sample
    estimate of it, so its interval is the point (the finite-population correction at n = N), and its
    basis says so ("all 182 weeks: exact"). `judge` then decides a claim on the value's side of the
    bound: a strict claim fails at the bound itself."""
    return Estimate(value, value, value, basis=f"all {n:,} {members}: exact")


def bounds(x: Any) -> tuple[float, float]:
    """An `Estimate`'s interval; a plain number is exact (a constant of the claim)."""
    if isinstance(x, Estimate):
        return x.low, x.high
    return float(x), float(x)


def estimate(row: dict[str, Any] | None, col: str) -> Estimate:
    """``col``'s mean at a row of a summarized table with its 95 % interval
    (`Estimate`; no interval when ``col_ci95`` is null or NaN, when the
    replications are identical or the mean dominated by one job)."""
    if row is None:
        return Estimate(math.nan)
    mean, ci = row[f"{col}_mean"], row.get(f"{col}_ci95")
    if mean is None:
        return Estimate(math.nan)
    if ci is None or ci != ci or row.get(f"{col}_dominated"):
        return Estimate(mean)
    return Estimate(mean, mean - ci, mean + ci)


def emax(items) -> Estimate:
    """The largest of some estimates, with the interval every max of values in their intervals lies in."""
    items = list(items)
    return Estimate(max(map(float, items)), max(bounds(i)[0] for i in items), max(bounds(i)[1] for i in items))


def erank(items, k: int) -> Estimate:
    """The k-th smallest of some estimates (0-based), with the interval the
    k-th smallest of any values in their intervals lies in (k-th of the lows,
    k-th of the highs)."""
    items = list(items)
    return Estimate(
        sorted(map(float, items))[k], sorted(bounds(i)[0] for i in items)[k], sorted(bounds(i)[1] for i in items)[k]
    )


def emin(items) -> Estimate:
    """The smallest of some estimates (as `emax`)."""
    items = list(items)
    return Estimate(min(map(float, items)), min(bounds(i)[0] for i in items), min(bounds(i)[1] for i in items))


def spread(items) -> Estimate:
    """max / min - 1 of some positive estimates, with an interval: the quotient of `emax` and
    `emin`, its lower end clipped at 0 (the largest of several values is never below the smallest)."""
    items = list(items)
    gap = emax(items) / emin(items) - 1
    return Estimate(float(gap), max(gap.low, 0.0), gap.high)


def judge(a: Any, op: str, b: Any) -> str:
    """``a op b`` read from the intervals (`OPS`): `HOLDS` when it is true for
    every pair of values the two intervals allow, `FAILS` when it is false
    for every such pair, else `INCONCLUSIVE` (the intervals overlap across
    the bound, or one has no interval). A plain number is exact."""
    (alo, ahi), (blo, bhi) = bounds(a), bounds(b)
    if any(math.isnan(v) for v in (alo, ahi, blo, bhi)):
        outcome = INCONCLUSIVE
    else:
        true_everywhere = {"<": ahi < blo, "<=": ahi <= blo, ">": alo > bhi, ">=": alo >= bhi}[op]
        false_everywhere = {"<": alo >= bhi, "<=": alo > bhi, ">": ahi <= blo, ">=": ahi < blo}[op]
        outcome = HOLDS if true_everywhere else FAILS if false_everywhere else INCONCLUSIVE
    judged = _JUDGED.get()
    if judged is not None:
        judged.append((a, op, b, outcome))
    return outcome


#: The comparisons `judge` read while a claim was checked (`judgments`): ``(a, op, b, outcome)``.
_JUDGED: contextvars.ContextVar[list[tuple[Any, str, Any, str]] | None] = contextvars.ContextVar("judged", default=None)


@contextlib.contextmanager
def judgments() -> Iterator[list[tuple[Any, str, Any, str]]]:
    """Every comparison `judge` reads inside the block, in order: what a claim's
    verdict rests on, whichever check function made it, so that an
    inconclusive one can say how close its interval came to the bound
    (`base.Straddle`) without each check function reporting it."""
    found: list[tuple[Any, str, Any, str]] = []
    token = _JUDGED.set(found)
    try:
        yield found
    finally:
        _JUDGED.reset(token)


def share(k: int, n: int) -> Estimate:
    """The share k / n of sample paths on which a claim holds, with its exact
    (Clopper-Pearson) 95 % interval: a claim the paper draws from one sample
    path is judged on the share of many that satisfy it."""
    from scipy.stats import binomtest

    if n == 0:
        return Estimate(math.nan)
    ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    return Estimate(k / n, float(ci.low), float(ci.high))


def every(outcomes) -> str:
    """Several conditions that must all hold: `FAILS` if one fails, `HOLDS` if all hold, else `INCONCLUSIVE`."""
    outcomes = list(outcomes)
    if FAILS in outcomes:
        return FAILS
    return HOLDS if all(o == HOLDS for o in outcomes) else INCONCLUSIVE


def some(outcomes) -> str:
    """At least one condition must hold: `HOLDS` if one holds, `FAILS` if all fail, else `INCONCLUSIVE`."""
    outcomes = list(outcomes)
    if HOLDS in outcomes:
        return HOLDS
    return FAILS if outcomes and all(o == FAILS for o in outcomes) else INCONCLUSIVE


def interval_text(x: Any, fmt: str = ".3f") -> str:
    """'0.830 [0.587, 1.173]', '0.830 (no interval)', or '1.000 (equal in all 600 replications)'."""
    lo, hi = bounds(x)
    if math.isinf(lo) or math.isinf(hi) or math.isnan(lo):
        return f"{float(x):{fmt}} (no interval)"
    if lo == hi:
        basis = getattr(x, "basis", "")
        return f"{float(x):{fmt}}" + (f" ({basis})" if basis else "")
    return f"{float(x):{fmt}} [{lo:{fmt}}, {hi:{fmt}}]"


def over_replications(values) -> Estimate:
    """The mean of one statistic per replication (or trace window) with its
    95 % t interval (`stats.mean_sd`, `stats.t_quantile`); no interval below
    two values or when they are identical (`stats.identical`: one sample)."""
    import numpy as np

    from schedlab.platform.statistics.stats import identical, mean_sd, t_quantile

    v = np.asarray(list(values), dtype=float)
    v = v[~np.isnan(v)]
    if v.size == 0:
        return Estimate(math.nan)
    mean, sd = mean_sd(v)
    if v.size < 2 or identical(v):
        return Estimate(mean)
    half = t_quantile(v.size) * sd / math.sqrt(v.size)
    return Estimate(mean, mean - half, mean + half)


def paired_difference(a: dict[Any, float], b: dict[Any, float]) -> Estimate:
    """Mean of a[r] - b[r] over the replications both have (the same instance:
    common random numbers), with its paired 95 % t interval (`over_replications`)."""
    return over_replications(a[r] - b[r] for r in sorted(set(a) & set(b)))


def paired_log_ratio(a: dict[Any, float], b: dict[Any, float]) -> Estimate:
    """The geometric mean of a[r] / b[r] over the replications both have (the
    same instance), with its paired 95 % t interval computed on log(a[r] / b[r])
    and transformed back (as `schedlab compare` does for ratios). For heavy-
    tailed statistics (a mean slowdown that one job of size 1e-20 drives to
    1e23) whose differences have no usable interval: the direction of a / b
    is read on the scale where the replications are comparable."""
    logs = over_replications(math.log(a[r] / b[r]) for r in sorted(set(a) & set(b)) if a[r] > 0 and b[r] > 0)
    lo, hi = bounds(logs)
    if math.isnan(float(logs)):
        return logs
    if math.isinf(lo) or math.isinf(hi) or math.isnan(lo):
        return Estimate(math.exp(float(logs)))
    return Estimate(math.exp(float(logs)), math.exp(lo), math.exp(hi))


def paired_mean_ratio(a: dict[Any, float], b: dict[Any, float]) -> Estimate:
    """mean(a) / mean(b) over the replications both have (the same instance),
    with its paired 95 % interval by linearisation (the ratio estimator's
    delta method: the t interval of the mean of a[r] - R b[r], divided by
    mean(b)). For a claim about a ratio of two *averages* (a figure's
    plotted means), where `paired_log_ratio` would read the geometric mean
    of per-instance ratios, a different statistic when a few instances
    dominate the averages. No interval below two pairs, when mean(b) is not
    positive or when the linearised differences are identical. The interval
    is symmetric and, on heavy tails, can reach below 0; where no value is
    negative the ratio cannot be, and its lower end is clipped at 0."""
    import numpy as np

    keys = sorted(set(a) & set(b))
    x = np.array([a[r] for r in keys], dtype=float)
    y = np.array([b[r] for r in keys], dtype=float)
    if x.size == 0 or not y.mean() > 0:
        return Estimate(math.nan)
    r = float(x.mean() / y.mean())
    d = over_replications(x - r * y)
    lo, hi = bounds(d)
    if math.isinf(lo) or math.isinf(hi) or math.isnan(lo):
        return Estimate(r)
    low = r + lo / y.mean()
    if (x >= 0).all() and (y >= 0).all():
        low = max(low, 0.0)
    return Estimate(r, low, r + hi / y.mean())


def per_replication(results_dir: str | Path, stat, keys: tuple[str, ...] = ()) -> dict[tuple[Any, ...], dict[int, Any]]:
    """``stat(size, slowdown)`` of each run's per-job rows (the ``jobs``
    table): {(key values..., policy): {replication: value}}, ``keys`` being
    summary columns (e.g. "shape") that tell the workload points apart.

    One (keys, policy) group is read at a time (a filter pushed down to the
    Parquet scan) and cut into replications by numpy slices, so memory is one
    group's jobs, not every job of the run: at 484 replications of 10,000 jobs
    the whole table is 29 million rows."""
    import numpy as np
    import polars as pl

    from schedlab import load

    jobs = load(results_dir, "jobs")
    if keys:
        points = load(results_dir).select(["config_id", *keys]).unique()
        jobs = jobs.join(points, on="config_id", how="inner")
    names = [*keys, "policy"]
    out: dict[tuple[Any, ...], dict[int, Any]] = {}
    for group in jobs.select(names).unique().collect().sort(names).iter_rows():
        sub = (
            jobs.filter(*(pl.col(c) == v for c, v in zip(names, group)))
            .select(["replication", "size", "slowdown"])
            .collect()
            .sort("replication", maintain_order=True)
        )
        rep = sub["replication"].to_numpy()
        size, sd = sub["size"].to_numpy().astype(float), sub["slowdown"].to_numpy().astype(float)
        del sub
        cuts = np.flatnonzero(np.diff(rep)) + 1
        per = out.setdefault(tuple(group), {})
        for r, s, d in zip(np.split(rep, cuts), np.split(size, cuts), np.split(sd, cuts)):
            per[int(r[0])] = stat(s, d)
    return out


def paired_estimate(table, **where: Any) -> Estimate:
    """A `paired_ratios` row at a point as an `Estimate` (no interval when the
    pairs are identical or too few)."""
    row = lookup(table, None, **where) if where else (table.row(0, named=True) if table.height else None)
    return paired_row(row)


def paired_row(row: dict[str, Any] | None) -> Estimate:
    """A `compare.paired_stats` row as an `Estimate` (no interval when the pairs are identical or too few).

    One identical case is a measurement, not one sample: a ratio of exactly 1
    in every pair while the baseline's value differs between the pairs
    (``paths_vary``, `paired_ratios`) -- the two policies made the same
    value on each of n different instances (e.g. PSBS and FSPE when size
    estimates are good enough that they never order two jobs differently).
    Then the ratio is exactly 1 (an `Estimate` whose interval is [1, 1],
    saying so): a claim "A <= B" or "A within 5 % of B" holds on every
    instance drawn, and one "A < B" fails on every one. Identical pairs of a
    fixed instance replayed (the baseline never varies) stay one sample."""
    if row is None:
        return Estimate(math.nan)
    if row.get("identical") and row.get("paths_vary") and row["estimate"] == 1.0:
        return Estimate(1.0, 1.0, 1.0, basis=f"equal in all {row['n']} replications")
    lo, hi = row["ci_low"], row["ci_high"]
    if lo is None or lo != lo or row.get("identical"):
        return Estimate(row["estimate"])
    return Estimate(row["estimate"], lo, hi)


def xs(table, col: str) -> list:
    """The sorted distinct values of a column."""
    return sorted(set(table[col].to_list()))


def pooled_note(results_dir: str | Path, what: str) -> str:
    """The note of a figure drawn from the jobs of every replication pooled (no interval)."""
    from schedlab import load

    nrep = len(set(load(results_dir).select("replication").collect()["replication"].to_list()))
    return f"Jobs of all {nrep} replications pooled (Replications per point: {nrep}); no CI: one {what} per policy."
