"""Reading a results dir: `results` (means and CIs), `compare` (paired
intervals to a baseline) and `plot` (figures); polars, the statistics and
matplotlib are imported inside the commands."""

from __future__ import annotations

import json
from pathlib import Path

import click

from schedlab.cli.group import main
from schedlab.errors import UserError


def _open_store(results_dir: Path):
    """The results dir's store; a dir without results is one line saying so
    (and, when every simulation failed, how many and where to look)."""
    from schedlab.platform.storage.store import SUMMARY, ResultStore

    if not results_dir.is_dir():
        raise UserError(f"{results_dir}: no such directory")
    store = ResultStore(results_dir)
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


@main.command()
@click.argument("results_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--by", default="policy", show_default=True, help="Comma-separated columns to group by.")
@click.option(
    "--metric", "metrics", multiple=True, default=["mst"], show_default=True, help="Metric column (repeatable)."
)
@click.option("--csv", "as_csv", is_flag=True, help="Print CSV instead of a table.")
def results(results_dir: Path, by: str, metrics: tuple[str, ...], as_csv: bool) -> None:
    """Mean, 95% CI half-width and n of metrics over replications.

    Replications that all gave the same value are one sample: no interval
    (marked "identical"). Failed simulations are counted, with where to look."""
    import polars as pl

    from schedlab.platform.statistics.stats import DOMINATED_NOTE, IDENTICAL_NOTE, summarize
    from schedlab.platform.storage.store import explain_read_error

    store = _open_store(results_dir)
    failed = _failures_note(store)
    lf = store.scan()  # a damaged part file: UserError naming it
    from schedlab.platform.storage.store import mixed_digests

    warning = mixed_digests(lf)
    if warning:
        click.echo(f"schedlab: warning: {warning}", err=True)
    columns = lf.collect_schema().names()
    keys = [k.strip() for k in by.split(",") if k.strip()]
    for name in keys + list(metrics):
        if name not in columns:
            raise UserError(f"{name!r} is not a column of {results_dir}; columns: {', '.join(columns)}")
    try:
        table = summarize(lf, keys, list(metrics))
    except (pl.exceptions.PolarsError, OSError) as err:
        raise explain_read_error(store.files(), err) from None
    if as_csv:
        click.echo(table.write_csv(), nl=False)
        if failed:
            click.echo(f"schedlab: warning: {failed}", err=True)
        return
    header = keys + [f"{m} (mean ± 95% CI)" for m in metrics] + ["n"]
    rows = []
    for rec in table.iter_rows(named=True):
        cells = [str(rec[k]) for k in keys]
        for m in metrics:
            ci, mean = rec[f"{m}_ci95"], rec[f"{m}_mean"]
            if mean is None:
                cells.append("–")
            elif rec[f"{m}_dominated"]:
                cells.append("dominated")
            elif rec[f"{m}_identical"]:
                cells.append(f"{mean:.6g} (identical)")
            else:
                cells.append(f"{mean:.6g} ± {ci:.3g}" if ci is not None and ci == ci else f"{mean:.6g}")
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
@click.option("--metric", default="mst", show_default=True, help="Metric column.")
@click.option(
    "--by",
    default=None,
    help="Comma-separated workload-point columns (default: every varying parameter but the policies').",
)
@click.option("--ratio", is_flag=True, help="Geometric mean ratio policy / baseline (interval on the log scale).")
@click.option("--csv", "as_csv", is_flag=True, help="Print CSV instead of a table.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (method and rows).")
def compare(
    results_dir: Path, baseline: str, metric: str, by: str | None, ratio: bool, as_csv: bool, as_json: bool
) -> None:
    """Paired comparison with a baseline: mean difference (or ratio), 95% CI, n pairs, Holm-adjusted p.

    When a policy's n paired differences are all the same they are one sample
    (n_effective = 1): no interval, no p value, marked "identical"."""
    from schedlab.platform.statistics.compare import compare as paired_compare
    from schedlab.platform.statistics.compare import method_text
    from schedlab.platform.statistics.stats import DOMINATED_NOTE, IDENTICAL_NOTE

    if as_csv and as_json:
        raise UserError("--csv and --json: choose one")
    failed = _failures_note(_open_store(results_dir))
    table = paired_compare(results_dir, baseline, metric, by, ratio)
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
