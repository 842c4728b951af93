"""A sweep's life: `validate` and `plan` a spec, `run` it (tasks in-process,
in a local pool or on Ray -> Parquet -> MLflow), then `track` (re-log into MLflow) and `compact` its results dir."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from schedlab.cli.group import EXIT_FAILURES, EXIT_TRACKING, main
from schedlab.cli.progress import ProgressLine
from schedlab.errors import UserError


@main.command()
@click.argument("spec_file", type=click.Path(dir_okay=False, path_type=Path))
def validate(spec_file: Path) -> None:
    """Check a sweep spec completely; errors name the field (exit 2), every one
    of them; what is legal but usually a mistake (an open queue at load >= 1,
    no [replications]) is a "warning:" line (exit 0)."""
    from schedlab.platform.planning.plan import build_plan
    from schedlab.platform.planning.validate import load_spec

    spec = load_spec(spec_file)
    plan = build_plan(spec, str(spec_file))
    _warn(spec, spec_file)
    click.echo(f"{spec_file}: ok ({len(plan.configs)} configurations, {len(plan.points)} workload points)")


def _warm_tracking(spec_file: str | Path) -> None:
    """Start the tracking process (`tracking.process.warm`) before the run's
    imports and the spec's validation, about 0.25 s earlier than `run_sweep`
    would: its import of MLflow is the longest thing a small tracked sweep
    waits for. Only when the file asks for tracking (``[tracking] enabled``,
    default `TrackingSpec`'s); a file that does not parse is left to
    `load_spec` to report."""
    import tomllib

    from schedlab.platform.planning.spec import TrackingSpec

    try:
        with open(spec_file, "rb") as fh:
            tracking = tomllib.load(fh).get("tracking", {})
        enabled = tracking.get("enabled", TrackingSpec.model_fields["enabled"].default)
    except (OSError, tomllib.TOMLDecodeError, AttributeError):
        return
    if enabled is True:
        from schedlab.platform.tracking.process import warm

        warm()


def _warn(spec, spec_file: Path) -> None:
    """The spec's `lint.warnings`, one "warning:" line each on stderr."""
    from schedlab.platform.planning.lint import warnings

    for line in warnings(spec, str(spec_file)):
        click.echo(f"schedlab: warning: {line}", err=True)


@main.command()
@click.argument("spec_file", type=click.Path(dir_okay=False, path_type=Path))
def plan(spec_file: Path) -> None:
    """Show what a sweep will run: configurations, replications, tasks."""
    from schedlab.platform.planning.plan import Plan, build_plan
    from schedlab.platform.planning.validate import load_spec

    spec = load_spec(spec_file)
    p = build_plan(spec, str(spec_file))
    _warn(spec, spec_file)
    if spec.search is not None:
        from schedlab.platform.search.loop import describe_plan

        click.echo(f"sweep {spec.name}: engine {spec.engine}, seed {spec.seed}, results in {spec.results_dir()}")
        for line in describe_plan(spec):
            click.echo(line)
        return
    reps = spec.replications
    first = reps.first_round
    task_jobs = spec.execution.task_jobs
    tasks = Plan.tasks(p.instances(range(first)), task_jobs) if task_jobs is not None else None
    click.echo(f"sweep {spec.name}: engine {spec.engine}, seed {spec.seed}, results in {spec.results_dir()}")
    click.echo(f"  workload points   {len(p.points)} ({spec.workload.kind})")
    click.echo(f"  policies          {', '.join(e.name for e in spec.policy_entries())}")
    click.echo(f"  configurations    {len(p.configs)}")
    if reps.select_best:
        click.echo(
            f"  replications      select-best (KN, Kim & Nelson 2001) on {reps.metric}: delta {reps.delta:g}, "
            f"confidence {reps.confidence or 0.95:g}, n0 {reps.min}, then {reps.step} per round per surviving "
            f"policy, at most {reps.max}"
        )
    elif reps.adaptive and reps.target == "paired":
        what = "ratio" if reps.ratio else "difference"
        click.echo(
            f"  replications      adaptive: {reps.min}..{reps.max} in steps of {reps.batch}, until every policy's "
            f"paired 95% CI of the {what} of {reps.metric} to {reps.baseline} is within {reps.rel_halfwidth:.0%}"
        )
    elif reps.adaptive:
        click.echo(
            f"  replications      adaptive: {reps.min}..{reps.max} in steps of {reps.batch}, until the 95% CI of "
            f"{reps.metric} is within {reps.rel_halfwidth:.0%} of its mean"
        )
    else:
        click.echo(f"  replications      {reps.n}")
    click.echo(f"  simulations       {len(p.configs) * first}" + (" (first round)" if reps.adaptive else ""))
    if tasks is None:
        click.echo("  tasks             sized by measurement, ~1 s of work each (set execution.task_jobs to fix them)")
    else:
        click.echo(f"  tasks             {len(tasks)}" + (" (first round)" if reps.adaptive else ""))
    click.echo(f"  backend           {spec.execution.backend} (`schedlab run` prints which ran and why)")
    varying = [k for k in p.param_columns if len({repr(c.flat_params().get(k)) for c in p.configs.values()}) > 1]
    click.echo(f"  grid axes         {', '.join(varying) or '(none)'}")
    if spec.outputs.warmup:
        click.echo(
            f"  warm-up deletion  {spec.outputs.warmup}: one cut per workload point (from pilot instances), "
            f"the same for every policy and replication"
        )


@main.command()
@click.argument("spec_file", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--backend",
    type=click.Choice(["auto", "local", "ray"]),
    help="Where tasks run (default: the spec's [execution] backend, auto: in-process or a local pool when the "
    "estimated work is small, else Ray; the summary line says which ran and why).",
)
@click.option(
    "--address",
    help="Ray cluster address, or 'auto' for a Ray started with `ray start` (RAY_ADDRESS is honoured); implies Ray.",
)
@click.option("--fresh", is_flag=True, help="Discard existing results of this sweep first.")
@click.option("--tracking-uri", help="MLflow tracking URI (overrides the spec).")
@click.option("--no-tracking", is_flag=True, help="Do not log to MLflow (Parquet only).")
@click.option(
    "--no-progress", is_flag=True, help="No progress line (round, simulations done/total, failed, elapsed, ETA)."
)
def run(
    spec_file: Path,
    backend: str | None,
    address: str | None,
    fresh: bool,
    tracking_uri: str | None,
    no_tracking: bool,
    no_progress: bool,
) -> None:
    """Run (or resume) a sweep: tasks (in-process, a local pool or Ray) -> Parquet -> MLflow."""
    if not no_tracking:
        _warm_tracking(spec_file)
    from schedlab.platform.planning.validate import load_spec
    from schedlab.platform.sweep import run_sweep
    from schedlab.search_figure import convergence
    from schedlab.views.tracking import headline_figure

    spec = load_spec(spec_file)
    _warn(spec, spec_file)
    if tracking_uri:
        spec = spec.model_copy(update={"tracking": spec.tracking.model_copy(update={"uri": tracking_uri})})
    report = ProgressLine(enabled=not no_progress).run(
        lambda progress: run_sweep(
            spec,
            address=address,
            backend=backend,
            fresh=fresh,
            tracking=False if no_tracking else None,
            progress=progress,
            figures=headline_figure,
            notify=click.echo,
            draw=convergence,
        )
    )
    if report.grew:
        click.echo(report.grew)
    click.echo(
        f"{spec.name}: {report.rows_written} rows written, {report.rows_skipped} already on disk, "
        f"{report.configs} configurations, {report.rounds} round(s), {report.tasks} tasks, "
        f"{report.wall_seconds:.1f} s wall, {report.sim_seconds:.1f} s simulating{report.backend_line()} "
        f"-> {report.results_dir}"
    )
    if report.compaction is not None and report.compaction.groups:
        click.echo(report.compaction.line())
    selection = getattr(report, "selection", None)  # a search's (`schedlab.platform.search`)
    if selection is not None:
        from schedlab.platform.statistics.selection import describe_search

        for line in describe_search(selection):
            click.echo(line)
        click.echo(f"selection: {report.results_dir}/selection.json; convergence figure: {report.figure}")
    if report.compaction_error:
        click.echo(
            f"schedlab: warning: compaction of {report.results_dir} stopped ({report.compaction_error}); "
            f"every row is in place: `schedlab compact {report.results_dir}` finishes it",
            err=True,
        )
    tr = report.tracking
    if tr is not None and not tr.failed:
        from schedlab.platform.tracking.store import resolve_uri

        click.echo(
            f"MLflow: {tr.logged} configuration runs match {report.results_dir} in "
            f"{resolve_uri(spec.tracking.uri)} (experiment {spec.experiment()})"
        )
        if tr.browse:
            click.echo(f"MLflow: browse the runs: {tr.browse}")
        if tr.figures:
            click.echo(
                f"MLflow: headline figure {Path(tr.figures[0]).name} on the sweep's parent run (artifacts/figures)"
            )
        elif tr.figures_error:
            click.echo(f"schedlab: warning: headline figure not logged to MLflow: {tr.figures_error}", err=True)
        elif spec.search is not None:
            _log_headline(spec, report.results_dir)
    if tr is not None and tr.failed:
        click.echo(
            f"schedlab: MLflow is not up to date ({tr.error}); results are complete in Parquet: "
            f"`schedlab track {report.results_dir}` finishes it",
            err=True,
        )
    if report.at_max:
        reps = spec.replications
        click.echo(
            f"{len(report.at_max)} workload point(s) stopped at max = {reps.max} replications with an "
            f"interval of {reps.metric} still wider than the target:",
            err=True,
        )
        for where in report.at_max[:10]:
            click.echo("  " + (" ".join(f"{k}={v}" for k, v in where.items()) or "(the one workload point)"), err=True)
        if len(report.at_max) > 10:
            click.echo(f"  ... and {len(report.at_max) - 10} more", err=True)
    if report.failures:
        click.echo(
            f"{len(report.failures)} simulations failed (recorded in {report.results_dir}/failures); first:", err=True
        )
        for f in report.failures[:5]:
            click.echo(
                f"  config {f['config_id']} ({f['policy']}) replication {f['replication']}: {f['error']}", err=True
            )
        traced = next((f for f in report.failures if f.get("traceback")), None)
        if traced is not None:
            click.echo(
                f"traceback of the first failure in your code ({traced['policy']}, your frames only):\n  "
                + traced["traceback"].replace("\n", "\n  "),
                err=True,
            )
        sys.exit(EXIT_FAILURES)
    if tr is not None and tr.failed:
        sys.exit(EXIT_TRACKING)


def _log_headline(spec: Any, results_dir: Path) -> None:
    """The sweep's headline figure (`schedlab plot` of its first metric) on
    its MLflow parent run; only with tracking on, and a failure is a warning."""
    from schedlab.views.tracking import log_headline

    try:
        figure = log_headline(results_dir, spec.tracking.uri, spec.experiment(), spec.name)
    except Exception as err:  # noqa: BLE001 - a picture never fails a sweep
        click.echo(f"schedlab: warning: headline figure not logged to MLflow: {err}", err=True)
        return
    if figure is not None:
        click.echo(f"MLflow: headline figure {figure.name} on the sweep's parent run (artifacts/figures)")


@main.command()
@click.argument("results_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--uri", help="MLflow tracking URI (default: $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db).")
@click.option("--experiment", help="MLflow experiment (default: the sweep's).")
def track(results_dir: Path, uri: str | None, experiment: str | None) -> None:
    """(Re)log a results dir into MLflow and check it matches (exit 3 if not)."""
    from schedlab.platform.storage.seam import open_store
    from schedlab.platform.tracking.tracker import track_results

    store = open_store(results_dir)
    if not results_dir.is_dir() or store.read_manifest() is None:
        raise UserError(f"{results_dir}: not a schedlab results dir (no manifest.json)")
    store.lock("schedlab track", required=False)  # not while a run writes it (its tracker finishes the job)
    try:
        report = track_results(results_dir, uri=uri, experiment=experiment)
    finally:
        store.unlock()
    if report.failed:
        click.echo(f"schedlab: MLflow is not up to date: {report.error}", err=True)
        sys.exit(EXIT_TRACKING)
    click.echo(f"{report.logged} configuration runs match {results_dir}")
    if report.browse:
        click.echo(f"MLflow: browse the runs: {report.browse}")


@main.command()
@click.argument("results_dir", type=click.Path(file_okay=False, path_type=Path))
def compact(results_dir: Path) -> None:
    """Merge a results dir's small part files (a run does it at its end); prints files before -> after."""
    from schedlab.platform.storage.compact import compact as compact_dir

    report = compact_dir(results_dir)  # not while a run writes it: the lock's one-line error, exit 2
    click.echo(report.line())
