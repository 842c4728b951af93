"""Reading a results dir: `results` (means and CIs), `compare` (paired
intervals to a baseline) and `plot` (figures); polars, the statistics and
matplotlib are imported inside the commands."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from schedlab.cli.group import main
from schedlab.errors import UserError


def _open_store(results_dir: Path):
    """The results dir's store; a dir without results is one line saying so
    (and, when every simulation failed, how many and where to look)."""
    from schedlab.platform.storage.seam import open_store
    from schedlab.platform.storage.store import SUMMARY

    if not results_dir.is_dir():
        raise UserError(f"{results_dir}: no such directory")
    store = open_store(results_dir)
    if not store.has(SUMMARY):
        failed = _failures_note(store)
        raise UserError(f"{results_dir}: no results" + (f": {failed}" if failed else " yet"))
    return store


def _failures_note(store) -> str | None:
    from schedlab.platform.storage.store import failures_note

    return failures_note(store)


def parse_where(items: tuple[str, ...]) -> dict[str, str]:
    """``--where COL=VALUE`` options as a dict (the selector of `plot` and `view`)."""
    where: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UserError(f"--where {item!r}: expected COL=VALUE (e.g. --where sigma=0.5)")
        where[key.strip()] = value.strip()
    return where


#: Significant digits of a 95 % half-width in `format_estimate` (the mean is
#: rounded to the same decimal place: more digits than the interval's would be noise).
HALFWIDTH_DIGITS = 2
#: Significant digits of a value without an interval (n = 1, identical replications).
VALUE_DIGITS = 6
#: Magnitudes shown in fixed notation; outside, scientific with one exponent for mean and half-width.
FIXED_RANGE = (1e-3, 1e6)


def _fixed(x: float) -> bool:
    return x == 0.0 or FIXED_RANGE[0] <= abs(x) < FIXED_RANGE[1]


def format_value(x: float | None) -> str:
    """A number without an interval: `VALUE_DIGITS` significant digits, fixed
    notation inside `FIXED_RANGE`, scientific outside; "–" for none / NaN."""
    import math

    if x is None or x != x:
        return "–"
    if math.isinf(x) or not _fixed(x):
        return f"{x:.{VALUE_DIGITS - 1}e}"
    decimals = max(VALUE_DIGITS - 1 - math.floor(math.log10(abs(x))), 0) if x else VALUE_DIGITS - 1
    return f"{x:.{decimals}f}"


def format_estimate(mean: float | None, halfwidth: float | None) -> str:
    """``mean ± halfwidth`` in one notation, both to the same decimal place:
    the half-width's `HALFWIDTH_DIGITS` significant digits (9.4 ± 1.4,
    2600 ± 1900, 0.0123 ± 0.0045). Fixed notation when both magnitudes are
    inside `FIXED_RANGE`, otherwise one shared exponent, "(2.62 ± 0.19)e+07",
    never a fixed mean beside an e-notation half-width. No interval (None,
    NaN, 0): `format_value`."""
    import math

    if mean is None or mean != mean or math.isinf(mean):
        return format_value(mean)
    if halfwidth is None or halfwidth != halfwidth or halfwidth <= 0 or math.isinf(halfwidth):
        return format_value(mean)
    place = math.floor(math.log10(halfwidth)) - (HALFWIDTH_DIGITS - 1)  # 10**place: the last digit shown
    if _fixed(mean) and _fixed(halfwidth):
        decimals = max(-place, 0)
        return f"{round(mean, -place):.{decimals}f} ± {round(halfwidth, -place):.{decimals}f}"
    exponent = math.floor(math.log10(max(abs(mean), halfwidth)))
    scale = 10.0**exponent
    decimals = max(exponent - place, 0)
    return f"({mean / scale:.{decimals}f} ± {halfwidth / scale:.{decimals}f})e{exponent:+03d}"


def _cell(value) -> str:
    """A group key in the table: a float as %g (0.25, 4), none as "–" (a
    parameter this row's policy does not take), anything else as text."""
    if value is None:
        return "–"
    return f"{value:g}" if isinstance(value, float) else str(value)


#: Values a note lists in full; a longer list is shown by its ends and its length.
LISTED_VALUES = 12


def _listed(values: list) -> str:
    """``0.25, 1, 4``, or for more than `LISTED_VALUES` values ``0, 1, 2, ..., 1976: 1,977 values``."""
    if len(values) <= LISTED_VALUES:
        return ", ".join(map(_cell, values))
    return f"{', '.join(map(_cell, values[:3]))}, ..., {_cell(values[-1])}: {len(values):,} values"


def results_columns(
    columns: list[str], manifest: dict[str, Any], keys: list[str], metrics: list[str], where: list[str], by_config: bool
) -> list[str]:
    """The summary columns `results` reads (in the file's order): the
    replication, the policy, the sweep's parameters (what `swept` looks at),
    the groups, the ``--where`` columns, the metrics asked for and the
    columns their dominance rule reads (`stats.DOMINANCE`); the config id
    only for ``--config`` (or as a group)."""
    from schedlab.platform.statistics.stats import DOMINANCE

    wanted = {"replication", "policy", *keys, *metrics, *where, *(["config_id"] if by_config else [])}
    wanted |= set(manifest.get("param_columns") or [])
    wanted |= {c for m in metrics for c in DOMINANCE.get(m, ())}
    return [c for c in columns if c in wanted]


def pooled_means(frame, keys: list[str], pooled: list[str], metrics: list[str]):
    """One row per group of ``keys`` and replication: each metric's mean over
    the grid cells of ``pooled`` (the parameters the user left out of
    ``--by``), and whether any of them was dominated (`stats.dominated`).
    A replication is one independent sample of that mean only when it has a
    row in every cell its group has: incomplete replications are left out.
    ``frame`` may be a scan (a LazyFrame): the groups are formed in polars'
    streaming engine, the rows never held. The means are correctly rounded
    sums over n (`statistics.exact`: ``math.fsum`` / n, bit for bit, in any
    order the rows come). Returns (frame, how many replications were left out)."""
    import polars as pl

    from schedlab.platform.statistics.exact import ENGINE, group_means
    from schedlab.platform.statistics.stats import dominated_expr
    from schedlab.platform.storage.query import repeats

    lf = frame.lazy()
    names = lf.collect_schema().names()
    flags = [f for f in (dominated_expr(names, m) for m in dict.fromkeys(metrics)) if f is not None]
    lf = lf.with_columns(flags)
    per = keys + (["replication"] if "replication" not in keys else [])
    # the grid cells of each group, and whether a cell holds a replication twice (then a replication's
    # cells are counted as distinct values; else they are its rows): one row a cell, not a row a row
    grid, twice = repeats(lf, keys + pooled, "replication")
    cells = grid.group_by(keys).agg(pl.len().alias("_cells"))
    have = pl.struct(pooled).n_unique() if twice else pl.len()
    flagged = [pl.col(f.meta.output_name()).any() for f in flags]
    reps = lf.group_by(per).agg(flagged + [have.cast(pl.Int64).alias("_have")]).collect(engine=ENGINE)
    means = [group_means(lf, per, m) for m in dict.fromkeys(metrics)]
    joined = means[0]
    for more in means[1:]:
        joined = joined.join(more, on=per, how="left", nulls_equal=True)
    joined = joined.join(reps, on=per, how="left", nulls_equal=True)
    joined = joined.join(cells.with_columns(pl.col("_cells").cast(pl.Int64)), on=keys, how="left", nulls_equal=True)
    complete = joined.filter(pl.col("_have") == pl.col("_cells"))
    return complete.drop("_have", "_cells"), joined.height - complete.height


@main.command()
@click.argument("results_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--by",
    default=None,
    help="Comma-separated columns to group by (default: the policy and every parameter the sweep varies, one row "
    "per configuration); what you leave out is pooled: each replication's mean over it, and the header says so.",
)
@click.option(
    "--metric",
    "metrics",
    multiple=True,
    help="Metric column (repeatable; default: the engine's headline metric, e.g. mst for the queue engine).",
)
@click.option("--policy", help="Only this policy's rows.")
@click.option(
    "--where",
    "where_items",
    multiple=True,
    metavar="COL=VALUE",
    help="Only the rows where a parameter takes this value (repeatable), as for `plot` and `view`.",
)
@click.option("--config", "config_id", help="Only this configuration id's rows.")
@click.option("--csv", "as_csv", is_flag=True, help="Print CSV instead of a table.")
def results(
    results_dir: Path,
    by: str | None,
    metrics: tuple[str, ...],
    policy: str | None,
    where_items: tuple[str, ...],
    config_id: str | None,
    as_csv: bool,
) -> None:
    """Mean, 95% CI half-width and n replications of metrics, per configuration.

    Nothing is averaged that you did not ask for: by default one row per
    policy and combination of the parameters the sweep varies (what `plot`
    draws as a point). --by chooses the groups; the parameters it leaves out
    are pooled (each replication's mean over their values, then the interval
    over replications: n counts replications), and the header says which.
    Replications that all gave the same value are one sample: no interval
    (marked "identical"). Failed simulations are counted, with where to look."""
    import polars as pl

    from schedlab.platform.statistics.stats import DOMINANCE, DOMINATED_NOTE, IDENTICAL_NOTE, summarize
    from schedlab.platform.storage.query import (
        COUNT_ENGINE,
        headline_metric,
        pl_unique,
        row_count,
        varying_of,
        where_lazy,
        where_pushdown,
    )
    from schedlab.platform.storage.store import explain_read_error, mixed_digests
    from schedlab.plotting import parameter_columns

    store = _open_store(results_dir)
    failed = _failures_note(store)
    lf = store.scan()  # a damaged part file: UserError naming it
    warning = mixed_digests(lf)
    if warning:
        click.echo(f"schedlab: warning: {warning}", err=True)
    columns = lf.collect_schema().names()
    keys = [k.strip() for k in (by or "").split(",") if k.strip()]
    manifest = store.read_manifest(lean=True) or {}  # configurations not parsed: 10^5 are 27 MB of JSON
    if not metrics:
        try:
            metrics = (headline_metric(results_dir, manifest, lf),)
        except (pl.exceptions.PolarsError, OSError) as err:
            raise explain_read_error(store.files(), err) from None
    for name in keys + list(metrics):
        if name not in columns:
            raise UserError(f"{name!r} is not a column of {results_dir}; columns: {', '.join(columns)}")
    where = parse_where(where_items)
    # Only the columns the table reads, --config, --policy and --where applied in the scan, and the
    # groups formed by polars: 10^7 rows of a 30-column summary are never held in memory (issue #42).
    lf = lf.select(results_columns(columns, manifest, keys, list(metrics), list(where), config_id is not None))
    if config_id is not None:
        lf = lf.filter(pl.col("config_id") == config_id)
    kept = lf.filter(pl.col("policy") == policy) if policy is not None else lf
    pushed = where_pushdown(lf.collect_schema(), where)
    notes = []
    try:
        params = parameter_columns(kept, manifest)
        counted = list(dict.fromkeys(["policy", *params]))
        rows = kept.filter(*pushed) if pushed else kept
        n, several = varying_of(rows, counted)  # one pass: the rows kept and which parameters vary
        if n == 0 and pushed:  # let where_lazy say which --where keeps no row
            rows = kept
            n, several = varying_of(rows, counted)
        if n == 0 and config_id is not None and row_count(lf) == 0:
            raise UserError(f"--config {config_id}: no such configuration in {results_dir}")
        if n == 0 and policy is not None:
            policies = lf.select("policy").unique().collect()["policy"]
            raise UserError(f"--policy {policy}: no rows; policies: {', '.join(sorted(policies))}")
        if len(pushed) < len(where) or rows is kept and where:  # a --where the scan could not apply: says why
            rows = where_lazy(rows, where, results_dir)
            n, several = varying_of(rows, counted)
        varying = ["policy"] + [c for c in params if several[c]]
        if not keys:
            keys = varying
        pooled = [c for c in varying if c not in keys and several[c]]
        if pooled:
            taken = rows.select([pl_unique(c).implode() for c in pooled]).collect(engine=COUNT_ENGINE)
            values = "; ".join(f"{c} ({_listed(sorted(taken[c][0].to_list()))})" for c in pooled)
            frame, dropped = pooled_means(rows, keys, pooled, list(metrics))
            notes.append(
                f"pooled over {values}: each replication's mean over them, then the interval over replications (n)"
            )
            if dropped:
                notes.append(f"{dropped} replication(s) without a row in every pooled cell left out")
        else:  # every row its own sample: only the groups, the metrics and what their dominance rule reads
            wanted = {*keys, *metrics, *(c for m in metrics for c in DOMINANCE.get(m, ()))}
            frame = rows.select([c for c in rows.collect_schema().names() if c in wanted]).collect()
    except (pl.exceptions.PolarsError, OSError) as err:
        raise explain_read_error(store.files(), err) from None
    table = summarize(frame, keys, list(metrics))
    if as_csv:
        click.echo(table.write_csv(), nl=False)
        for line in notes + ([failed] if failed else []):
            click.echo(f"schedlab: warning: {line}", err=True)
        return
    for line in notes:
        click.echo(line)
    header = keys + [f"{m} (mean ± 95% CI)" for m in metrics] + ["n"]
    rows = []
    for rec in table.iter_rows(named=True):
        cells = [_cell(rec[k]) for k in keys]
        for m in metrics:
            ci, mean = rec[f"{m}_ci95"], rec[f"{m}_mean"]
            if mean is None:
                cells.append("–")
            elif rec[f"{m}_dominated"]:
                cells.append("dominated")
            elif rec[f"{m}_identical"]:
                cells.append(f"{format_value(mean)} (identical)")
            else:
                cells.append(format_estimate(mean, ci))
        cells.append(str(rec["n"]))
        rows.append(cells)
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    click.echo("  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip())
    for r in rows:
        click.echo("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    if any(table[f"{m}_identical"].any() for m in metrics):
        click.echo(IDENTICAL_NOTE)
    if any(table[f"{m}_dominated"].any() for m in metrics):
        click.echo(DOMINATED_NOTE + " (the values: --csv)")
    if failed:
        click.echo(f"failed: {failed}")
    from schedlab.platform.statistics.selection import describe, read

    selection = read(results_dir)
    if selection is not None:  # a select-best sweep: what KN selected, and when each policy left
        click.echo("")
        for line in describe(selection):
            click.echo(line)


@main.command()
@click.argument("results_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--baseline", required=True, help="The policy every other policy is compared with.")
@click.option("--metric", help="Metric column (default: the engine's headline metric, e.g. mst for the queue engine).")
@click.option(
    "--by",
    default=None,
    help="Comma-separated workload-point columns (default: every varying parameter but the policies').",
)
@click.option("--ratio", is_flag=True, help="Geometric mean ratio policy / baseline (interval on the log scale).")
@click.option("--csv", "as_csv", is_flag=True, help="Print CSV instead of a table.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (method and rows).")
def compare(
    results_dir: Path, baseline: str, metric: str | None, by: str | None, ratio: bool, as_csv: bool, as_json: bool
) -> None:
    """Paired comparison with a baseline: mean difference (or ratio), 95% CI, n pairs, Holm-adjusted p.

    When a policy's n paired differences are all the same they are one sample
    (n_effective = 1): no interval, no p value, marked "identical"."""
    from schedlab.platform.statistics.compare import compare as paired_compare
    from schedlab.platform.statistics.compare import method_text
    from schedlab.platform.statistics.stats import DOMINATED_NOTE, IDENTICAL_NOTE

    if as_csv and as_json:
        raise UserError("--csv and --json: choose one")
    store = _open_store(results_dir)
    failed = _failures_note(store)
    manifest = store.read_manifest(lean=True) or {}  # configurations not parsed: 10^5 are 27 MB of JSON
    if metric is None:
        import polars as pl

        from schedlab.platform.storage.query import headline_metric
        from schedlab.platform.storage.store import explain_read_error

        try:
            metric = headline_metric(results_dir, manifest, store.scan())
        except (pl.exceptions.PolarsError, OSError) as err:
            raise explain_read_error(store.files(), err) from None
    table = paired_compare(results_dir, baseline, metric, by, ratio, manifest=manifest)
    k = table.filter(~table["identical"])["policy"].n_unique()  # identical: no p value, not in Holm's family
    method = method_text(baseline, k, ratio)
    if as_json:
        click.echo(
            json.dumps(
                {
                    "metric": metric,
                    "baseline": baseline,
                    "estimate": "ratio" if ratio else "diff",
                    "confidence": 0.95,
                    "correction": "holm",
                    "method": method,
                    "identical": IDENTICAL_NOTE,
                    "dominated": DOMINATED_NOTE,
                    "failed": failed,
                    "rows": [
                        {k: (None if isinstance(v, float) and v != v else v) for k, v in r.items()}
                        for r in table.to_dicts()
                    ],
                },
                default=str,
                allow_nan=False,
            )
        )
        return
    if as_csv:
        click.echo(table.write_csv(), nl=False)
        if failed:
            click.echo(f"schedlab: warning: {failed}", err=True)
        return
    est = "ratio" if ratio else "diff"
    keys = [
        c
        for c in table.columns
        if c
        not in (
            "policy",
            "baseline",
            "n",
            f"{metric}_mean",
            "baseline_mean",
            est,
            "ci_low",
            "ci_high",
            "halfwidth",
            "p_value",
            "p_holm",
            "significant",
            "identical",
            "n_effective",
            "dominated",
        )
    ]
    header = keys + [
        "policy",
        f"{metric} mean",
        f"{baseline} mean",
        f"{'ratio' if ratio else 'difference'} [95% CI]",
        "n",
        "p (Holm)",
        "",
    ]
    rows = []
    for rec in table.iter_rows(named=True):
        if rec["dominated"]:
            interval = "dominated"
        elif rec["identical"]:
            interval = f"{rec[est]:.4g} (identical)"
        elif rec["ci_low"] is not None and rec["ci_low"] == rec["ci_low"]:
            interval = f"{rec[est]:.4g} [{rec['ci_low']:.4g}, {rec['ci_high']:.4g}]"
        else:
            interval = f"{rec[est]:.4g}"
        p = rec["p_holm"]
        rows.append(
            [str(rec[c]) for c in keys]
            + [
                rec["policy"],
                "dominated" if rec["dominated"] else f"{rec[f'{metric}_mean']:.6g}",
                "dominated" if rec["dominated"] else f"{rec['baseline_mean']:.6g}",
                interval,
                f"{rec['n']} (1 sample)" if rec["identical"] else str(rec["n"]),
                "–" if p is None or p != p or rec["dominated"] else f"{p:.3g}",
                "*" if rec["significant"] and not rec["dominated"] else "",
            ]
        )
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    click.echo(f"{metric}: {method}")
    click.echo("  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip())
    for r in rows:
        click.echo("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    if table["identical"].any():
        click.echo(IDENTICAL_NOTE)
    if table["dominated"].any():
        click.echo(DOMINATED_NOTE + " (the values: --csv)")
    if not rows:
        click.echo(f"no policy has rows paired with {baseline}'s (same workload point and replication)")
    if failed:
        click.echo(f"failed: {failed}")


@main.command("plot")
@click.argument("results_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--x", "x", required=True, help="Column on the x axis (a swept parameter).")
@click.option("--y", "y", required=True, help="Metric on the y axis (e.g. mst).")
@click.option("--by", default="policy", show_default=True, help="One line per value of this column.")
@click.option("--ratio-to", help="Plot the paired geometric-mean ratio to this policy (interval on the log ratios).")
@click.option("--facet", help="One panel per value of this column.")
@click.option(
    "--where",
    "where_items",
    multiple=True,
    metavar="COL=VALUE",
    help="Hold a parameter that varies in the sweep at one value (repeatable).",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Figure file in any format matplotlib writes (.pdf, .svg, .eps, .png, .jpg, .tiff, ...; default: "
    "DIR/plots/<y>-vs-<x>.pdf); a 300-dpi PNG goes beside a vector file, a PDF beside a bitmap, and a CSV "
    "of the drawn points beside both.",
)
@click.option(
    "--logx",
    type=click.Choice(["auto", "on", "off"]),
    default="auto",
    show_default=True,
    help="Log x axis; auto: when the swept values are positive and span a decade or more.",
)
@click.option(
    "--logy",
    type=click.Choice(["auto", "on", "off"]),
    default="auto",
    show_default=True,
    help="Log y axis (intervals then computed on the log scale); auto as for --logx.",
)
def plot_cmd(
    results_dir: Path,
    x: str,
    y: str,
    by: str,
    ratio_to: str | None,
    facet: str | None,
    where_items: tuple[str, ...],
    out: Path | None,
    logx: str,
    logy: str,
) -> None:
    """A figure of a sweep: means (or paired ratios) with 95% CIs, PDF + 300-dpi PNG.

    Every parameter other than --x, --by and --facet must be fixed within a
    plotted point: one that varies is an error (hold it with --where, or make
    it --facet or --by), never silently averaged over.
    """
    from schedlab.plotting import plot as draw

    where = parse_where(where_items)
    result = draw(
        results_dir, x=x, y=y, by=by, ratio_to=ratio_to, facet=facet, out=out, logx=logx, logy=logy, where=where
    )
    scales = f"log x: {'yes' if result.logx else 'no'}, log y: {'yes' if result.logy else 'no'}"
    click.echo(f"{result.vector} ({scales})")
    click.echo(f"{result.png} ({result.png.stat().st_size} bytes, 300 dpi)")
    click.echo(f"{result.csv} (the {result.table.height} points drawn)")
    click.echo(f"caption: {result.caption}")
