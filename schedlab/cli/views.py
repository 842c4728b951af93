"""`schedlab view`: the schedule of one run of a sweep, as a page (and a
static figure, Batsim's jobs.csv, an MLflow artifact). Plotly, matplotlib,
polars and the engines are imported inside the command."""

from __future__ import annotations

from pathlib import Path

import click

from schedlab.cli.group import main
from schedlab.errors import UserError


@main.command("view")
@click.argument("results_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--policy", help="The policy of the run.")
@click.option(
    "--where", "where_items", multiple=True, metavar="COL=VALUE", help="Fix a parameter of the run (repeatable)."
)
@click.option("--replication", type=int, help="Replication (default: the lowest stored).")
@click.option("--config", "config_id", help="A configuration id (instead of --policy/--where).")
@click.option(
    "--vs", "vs_policy", help="Stack this policy's schedule of the same instance, with each job's difference."
)
@click.option("--window", help="Time window START:END in the run's time unit (either side may be empty).")
@click.option("--color-by", help="Job column the boxes are coloured by (default: the engine's: size, procs or demand).")
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The page (default: DIR/views/<policy>-<config>-r<replication>.html).",
)
@click.option(
    "--static",
    "static_out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also a static figure for a paper: .pdf or .svg (a 300-dpi PNG beside it).",
)
@click.option(
    "--batsim-csv",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also write the run as Batsim's jobs.csv (batch runs; evalys reads it).",
)
@click.option("--log", "log_mlflow", is_flag=True, help="Add the page to the configuration's MLflow run.")
@click.option("--uri", help="MLflow tracking URI for --log (default: $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db).")
@click.option("--experiment", help="MLflow experiment for --log (default: the sweep's name).")
def view_cmd(
    results_dir: Path,
    policy: str | None,
    where_items: tuple[str, ...],
    replication: int | None,
    config_id: str | None,
    vs_policy: str | None,
    window: str | None,
    color_by: str | None,
    out: Path | None,
    static_out: Path | None,
    batsim_csv: Path | None,
    log_mlflow: bool,
    uri: str | None,
    experiment: str | None,
) -> None:
    """See a run's schedule: Gantt, shares, queue and utilisation over time.

    The run is chosen like `results`/`plot` rows (--policy, --where,
    --replication, or --config), re-simulated with recording on, and checked
    against its stored row before anything is drawn. The page is one HTML
    file that opens with no network (zoom, pan, hover a job for its fields).
    """
    from schedlab.cli.analysis import parse_where
    from schedlab.views import replay as rp
    from schedlab.views.page import parse_window, write_page

    sel = rp.select(
        results_dir, policy=policy, where=parse_where(where_items), replication=replication, config_id=config_id
    )
    engine = sel.manifest.get("engine")
    if batsim_csv is not None and not rp.engine_of(sel).batsim:
        raise UserError(f"--batsim-csv: Batsim's jobs.csv describes batch runs; {results_dir} is a {engine} sweep")
    schedules = [rp.replay(sel)]
    if vs_policy is not None:
        other = rp.partner(sel, vs_policy)
        schedules.append(rp.replay(other))
        a, b = (s.jobs["job_id"] for s in schedules)
        if len(a) != len(b) or (a != b).any():
            raise UserError(f"--vs {vs_policy}: the two runs do not have the same jobs (no common random numbers)")
    span = parse_window(window, schedules[0])
    name = sel.manifest.get("name", results_dir.name)
    title = f"{name}: " + " vs ".join(s.label for s in schedules)
    if out is None:
        stem = f"{sel.row['policy']}-{sel.config_id}-r{sel.replication}" + (f"-vs-{vs_policy}" if vs_policy else "")
        out = results_dir / "views" / (stem.replace("/", "_").replace("*", "star").replace("=", "") + ".html")
    command = f"schedlab view {results_dir} --config {sel.config_id} --replication {sel.replication}" + (
        f" --vs {vs_policy}" if vs_policy else ""
    )
    page = write_page(schedules, out, window=span, color_by=color_by, title=title, command=command)
    click.echo(f"{page} ({page.stat().st_size} bytes; {sum(s.n_jobs for s in schedules)} jobs; replay matches the row)")
    if static_out is not None:
        from schedlab.views.static import write_static

        for p in write_static(schedules, static_out, window=span, color_by=color_by, title=title):
            click.echo(str(p))
    if batsim_csv is not None:
        from schedlab.views.batsim import write_jobs_csv

        click.echo(str(write_jobs_csv(schedules[0], batsim_csv, workload_name=name)))
    if log_mlflow:
        from schedlab.views.tracking import log_page

        run_id = log_page(page, uri, experiment or name, name, sel.config_id)
        click.echo(f"MLflow: {page.name} added to run {run_id} (artifacts/views)")
