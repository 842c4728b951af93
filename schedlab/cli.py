"""`schedlab` command line.

Start-up stays light: ray, mlflow, polars and the simulators are imported inside
the commands that need them, never at module level. Every user mistake is a
`UserError`: one line on stderr naming the place, exit code 2, no traceback
(a spec with several mistakes, `UserErrors`: one such line per mistake).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import click

from schedlab import __version__
from schedlab.errors import UserError, messages

#: Exit codes of `run` and `track` (README, "Exit codes").
EXIT_FAILURES = 1  # some simulations raised (recorded in failures/)
EXIT_TRACKING = 3  # results are complete in Parquet but MLflow does not match them
EXIT_INTERRUPTED = 130  # Ctrl-C: what arrived is committed; run again to resume


def _seconds(x: float) -> str:
    x = int(round(x))
    return f"{x // 3600}h{x % 3600 // 60:02d}m" if x >= 3600 else f"{x // 60}m{x % 60:02d}s" if x >= 60 else f"{x}s"


class ProgressLine:
    """One status line on stderr for a running sweep: simulations done /
    total, failed, elapsed, ETA and the round (``runner.Progress``). On a
    terminal it is redrawn in place (at most 10 times a second); otherwise a
    line is printed at each round's end and every 30 s."""

    def __init__(self, enabled: bool = True, stream=None) -> None:
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.tty = self.stream.isatty()
        self.last, self.width, self.open = 0.0, 0, False

    @staticmethod
    def text(p) -> str:
        if hasattr(p, "line"):  # tracking catching up at the run's end (tracking.TrackProgress)
            return p.line()
        eta = p.eta
        return (
            f"{p.sweep}: round {p.round}, {p.done}/{p.total} simulations, {p.failed} failed, "
            f"{_seconds(p.elapsed)} elapsed, ETA {_seconds(eta) if eta is not None else '?'}"
        )

    def update(self, p) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        end_of_round = p.done >= p.total and not hasattr(p, "line")  # tracking: every 30 s off a terminal
        if self.tty:
            if now - self.last < 0.1 and not end_of_round:
                return
            text = self.text(p)
            self.stream.write("\r" + text.ljust(self.width))
            self.width, self.open = len(text), True
        elif end_of_round or now - self.last >= 30.0:
            self.stream.write(self.text(p) + "\n")
        self.stream.flush()
        self.last = now

    def run(self, work):
        """``work(progress)`` with this line as its progress callback; Ctrl-C
        (or the runner's `Interrupted`) ends the command with one line and
        exit 130 -- what arrived is committed, running again resumes."""
        from schedlab.platform.runner import Interrupted

        try:
            return work(self.update)
        except (Interrupted, KeyboardInterrupt) as err:
            self.close()
            click.echo(f"\nschedlab: {str(err) or 'interrupted; run again to resume'}", err=True)
            sys.exit(EXIT_INTERRUPTED)
        finally:
            self.close()

    def close(self) -> None:
        if self.open:
            self.stream.write("\n")
            self.stream.flush()
            self.open = False


SYNTHETIC_OPTIONS = ("shape", "timeshape", "load", "sigma", "njobs", "size_dist", "alpha", "beta", "load_mode")


class _Group(click.Group):
    """Turns a UserError anywhere below into one clean line and exit code 2."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except UserError as err:  # several independent mistakes (UserErrors): one line each
            for line in messages(err):
                click.echo(f"schedlab: error: {line}", err=True)
            ctx.exit(UserError.exit_code)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="schedlab")
def main() -> None:
    """Scheduling-policy simulations and sweeps (queue engine: the PSBS paper)."""


@main.command()
def policies() -> None:
    """List the engines and their policies, one line each."""
    from schedlab.engines import ENGINES
    from schedlab.params import describe

    for engine in ENGINES.values():
        click.echo(f"{engine.name}: {engine.summary}")
        for name, cls in engine.policies.items():
            params = describe(cls, engine.handle_args)
            click.echo(f"  {engine.name:6s} {name:10s} {cls.summary}" + (f" [params: {params}]" if params else ""))
    click.echo(
        'your own: subclass schedlab.api.<engine>.Policy; in a spec, {name = "Mine", use = "file.py:Mine"} '
        "(docs/extending.md)"
    )


@main.command()
@click.option("--engine", default="queue", show_default=True, help="Simulator engine.")
@click.option("--policy", required=True, help="Policy name (see `schedlab policies`), or your own class: file.py:Name.")
@click.option(
    "--workload-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Job table (.csv or .parquet) with job_id, submit, size[, estimate, weight]; "
    "with --engine batch an SWF log (.swf or .swf.gz).",
)
@click.option(
    "--procs",
    type=int,
    default=None,
    help="--engine batch: machine size in processors (default: the SWF header's MaxProcs).",
)
@click.option("--shape", type=float, default=0.25, show_default=True, help="Weibull shape of job sizes (mean 1).")
@click.option("--timeshape", type=float, default=1.0, show_default=True, help="Weibull shape of inter-arrival times.")
@click.option("--load", type=float, default=0.9, show_default=True, help="Offered load.")
@click.option("--sigma", type=float, default=0.5, show_default=True, help="Log-normal estimate error sigma.")
@click.option("--njobs", type=int, default=10_000, show_default=True, help="Number of jobs.")
@click.option("--size-dist", default="weibull", show_default=True, help="weibull or pareto.")
@click.option("--alpha", type=float, default=2.0, show_default=True, help="Pareto shape (with --size-dist pareto).")
@click.option(
    "--beta", type=float, default=0.0, show_default=True, help="Weight classes: w = 1/c^beta, c uniform in 1..5."
)
@click.option(
    "--load-mode",
    default="realized",
    show_default=True,
    help=(
        "realized: stretch arrivals so the drawn load is exact (the authors' generator); "
        "nominal: by distribution means."
    ),
)
@click.option("--seed", type=int, default=1, show_default=True, help="Seed of the workload draw.")
@click.option(
    "--jobs-out", type=click.Path(dir_okay=False, path_type=Path), help="Write per-job rows here (.parquet or .csv)."
)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option(
    "--engine-path",
    type=click.Choice(["fast", "reference"]),
    default="fast",
    show_default=True,
    help="fast: compiled kernels for the built-in queue policies, packing's FIFO-FF, BF-J, BF-S, "
    "BF-J/S and batch's FCFS, EASY (the same numbers); "
    "reference: the Python engine.",
)
@click.pass_context
def simulate(
    ctx: click.Context,
    engine: str,
    policy: str,
    workload_file: Path | None,
    procs: int | None,
    seed: int,
    jobs_out: Path | None,
    as_json: bool,
    engine_path: str,
    **synthetic,
) -> None:
    """Run one policy on one workload and print a summary."""
    from schedlab.engines import get_engine
    from schedlab.usercode import is_reference, resolve

    eng = get_engine(engine)
    if is_reference(policy):  # your own class: "file.py:Name" (relative to the current folder) or "module:Name"
        policy_obj = eng.check_policy_class(resolve(policy, Path.cwd(), "--policy").load(), "--policy")
    else:
        policy_obj = eng.policy(policy)  # fail fast on an unknown name, before any work
    if jobs_out is not None and jobs_out.suffix not in (".parquet", ".csv"):
        raise UserError(f"--jobs-out {jobs_out}: the file name must end in .parquet or .csv")
    if engine == "batch" and workload_file is None:
        raise UserError("--engine batch needs --workload-file (an SWF log)")
    if procs is not None and engine != "batch":
        raise UserError("--procs is only for --engine batch")
    system = None
    if workload_file is not None:
        clash = [o for o in SYNTHETIC_OPTIONS if ctx.get_parameter_source(o) is not click.core.ParameterSource.DEFAULT]
        if clash:
            raise UserError(f"--workload-file cannot be combined with --{clash[0].replace('_', '-')}")
        if engine == "batch":
            from schedlab.workloads.traces.swf import read as read_swf

            trace = read_swf(workload_file)
            jobs = trace.jobs
            machine = procs if procs is not None else trace.meta.get("machine_procs")
            if machine is None:
                raise UserError(
                    f"--workload-file {workload_file}: the SWF header has no MaxProcs or MaxNodes; "
                    f"give the machine size with --procs"
                )
            system = {"model": "procs", "procs": int(machine)}
            described = f"SWF {workload_file} on {machine} processors"
        else:
            from schedlab.workloads.files import read_job_table

            jobs = read_job_table(workload_file)
            described = f"file {workload_file}"
    else:
        import numpy as np

        from schedlab.workloads.synthetic import queue_workload

        jobs = queue_workload(np.random.default_rng(seed), **synthetic)
        described = " ".join(f"{k}={v}" for k, v in synthetic.items()) + f" seed={seed}"

    started = time.perf_counter()
    result = eng.run(jobs, policy_obj, system=system, path=engine_path)
    wall = time.perf_counter() - started
    if jobs_out is not None:
        columns = result.jobs
        if engine == "batch":
            columns = {k: columns[k] for k in ("job_id", "submit", "start", "end", "procs", "wait", "stretch")}
        _write_jobs(columns, jobs_out)
    summary = {"engine": engine, "policy": policy, "workload": described, **result.summary, "wall_seconds": wall}
    if as_json:
        click.echo(json.dumps(summary))
        return
    s = result.summary
    click.echo(f"{engine} / {policy} on {described}")
    if engine == "batch":
        rows = [
            ("jobs", f"{int(s['n_jobs'])}"),
            ("bounded stretch mean", f"{s['stretch_mean']:.6g}"),
            ("bounded stretch max", f"{s['stretch_max']:.6g}"),
            ("wait mean (s)", f"{s['wait_mean']:.6g}"),
            ("wait max (s)", f"{s['wait_max']:.6g}"),
            ("utilisation", f"{s['utilisation']:.6g}"),
            ("makespan (s)", f"{s['makespan']:.6g}"),
            ("events", f"{int(s['events'])}"),
            ("wall time", f"{wall:.3f} s"),
        ]
        for label, value in rows:
            click.echo(f"  {label:22s} {value}")
        if jobs_out is not None:
            click.echo(f"  per-job rows written to {jobs_out}")
        return
    rows = [
        ("jobs", f"{int(s['n_jobs'])}"),
        ("mean sojourn time", f"{s['mst']:.6g}"),
        ("slowdown mean", f"{s['slowdown_mean']:.6g}"),
        ("slowdown p50", f"{s['slowdown_p50']:.6g}"),
        ("slowdown p99", f"{s['slowdown_p99']:.6g}"),
        ("slowdown max", f"{s['slowdown_max']:.6g}"),
    ]
    rows += [
        (f"MST weight class {k.rsplit('_', 1)[1]}", f"{v:.6g}") for k, v in s.items() if k.startswith("mst_class_")
    ]
    rows += [("events", f"{int(s['events'])}"), ("wall time", f"{wall:.3f} s")]
    for label, value in rows:
        click.echo(f"  {label:22s} {value}")
    if jobs_out is not None:
        click.echo(f"  per-job rows written to {jobs_out}")


@main.command()
@click.argument("spec_file", type=click.Path(dir_okay=False, path_type=Path))
def validate(spec_file: Path) -> None:
    """Check a sweep spec completely; errors name the field (exit 2)."""
    from schedlab.platform.plan import build_plan
    from schedlab.platform.spec import load_spec

    spec = load_spec(spec_file)
    plan = build_plan(spec, str(spec_file))
    click.echo(f"{spec_file}: ok ({len(plan.configs)} configurations, {len(plan.points)} workload points)")


@main.command()
@click.argument("spec_file", type=click.Path(dir_okay=False, path_type=Path))
def plan(spec_file: Path) -> None:
    """Show what a sweep will run: configurations, replications, tasks."""
    from schedlab.platform.plan import Plan, build_plan
    from schedlab.platform.spec import load_spec

    spec = load_spec(spec_file)
    p = build_plan(spec, str(spec_file))
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
        click.echo("  Ray tasks         sized by measurement, ~1 s of work each (set execution.task_jobs to fix them)")
    else:
        click.echo(f"  Ray tasks         {len(tasks)}" + (" (first round)" if reps.adaptive else ""))
    varying = [k for k in p.param_columns if len({repr(c.flat_params().get(k)) for c in p.configs.values()}) > 1]
    click.echo(f"  grid axes         {', '.join(varying) or '(none)'}")
    if spec.outputs.warmup:
        click.echo(
            f"  warm-up deletion  {spec.outputs.warmup}: one cut per workload point (from pilot instances), "
            f"the same for every policy and replication"
        )


@main.command()
@click.argument("spec_file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--address", help="Ray cluster address (default: local Ray started in-process; RAY_ADDRESS is honoured).")
@click.option("--fresh", is_flag=True, help="Discard existing results of this sweep first.")
@click.option("--tracking-uri", help="MLflow tracking URI (overrides the spec).")
@click.option("--no-tracking", is_flag=True, help="Do not log to MLflow (Parquet only).")
@click.option(
    "--no-progress", is_flag=True, help="No progress line (round, simulations done/total, failed, elapsed, ETA)."
)
def run(
    spec_file: Path, address: str | None, fresh: bool, tracking_uri: str | None, no_tracking: bool, no_progress: bool
) -> None:
    """Run (or resume) a sweep: Ray tasks -> Parquet -> MLflow."""
    from schedlab.platform.runner import run_sweep
    from schedlab.platform.spec import load_spec

    spec = load_spec(spec_file)
    if tracking_uri:
        spec = spec.model_copy(update={"tracking": spec.tracking.model_copy(update={"uri": tracking_uri})})
    report = ProgressLine(enabled=not no_progress).run(
        lambda progress: run_sweep(
            spec, address=address, fresh=fresh, tracking=False if no_tracking else None, progress=progress
        )
    )
    if report.grew:
        click.echo(report.grew)
    click.echo(
        f"{spec.name}: {report.rows_written} rows written, {report.rows_skipped} already on disk, "
        f"{report.configs} configurations, {report.rounds} round(s), {report.tasks} tasks, "
        f"{report.wall_seconds:.1f} s wall, {report.sim_seconds:.1f} s simulating -> {report.results_dir}"
    )
    if report.compaction is not None and report.compaction.groups:
        click.echo(report.compaction.line())
    if report.compaction_error:
        click.echo(
            f"schedlab: warning: compaction of {report.results_dir} stopped ({report.compaction_error}); "
            f"every row is in place: `schedlab compact {report.results_dir}` finishes it",
            err=True,
        )
    tr = report.tracking
    if tr is not None and not tr.failed:
        from schedlab.platform.tracking_store import resolve_uri

        click.echo(
            f"MLflow: {tr.logged} configuration runs match {report.results_dir} in "
            f"{resolve_uri(spec.tracking.uri)} (experiment {spec.experiment()})"
        )
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
        trace = report.failures[0].get("traceback")
        if trace:
            click.echo("first failure's traceback (your code's frames):\n  " + trace.replace("\n", "\n  "), err=True)
        sys.exit(EXIT_FAILURES)
    if tr is not None and tr.failed:
        sys.exit(EXIT_TRACKING)


@main.command()
@click.argument("results_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--by", default="policy", show_default=True, help="Comma-separated columns to group by.")
@click.option(
    "--metric", "metrics", multiple=True, default=["mst"], show_default=True, help="Metric column (repeatable)."
)
@click.option("--csv", "as_csv", is_flag=True, help="Print CSV instead of a table.")
def results(results_dir: Path, by: str, metrics: tuple[str, ...], as_csv: bool) -> None:
    """Mean, 95% CI half-width and n of metrics over replications."""
    import polars as pl

    from schedlab.platform.stats import summarize
    from schedlab.platform.store import ResultStore, explain_read_error

    if not results_dir.exists():
        raise UserError(f"{results_dir}: no such directory")
    store = ResultStore(results_dir)
    lf = store.scan()  # a damaged part file: UserError naming it
    from schedlab.platform.store import mixed_digests

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
        return
    header = keys + [f"{m} (mean ± 95% CI)" for m in metrics] + ["n"]
    rows = []
    for rec in table.iter_rows(named=True):
        cells = [str(rec[k]) for k in keys]
        for m in metrics:
            ci = rec[f"{m}_ci95"]
            cells.append(f"{rec[f'{m}_mean']:.6g} ± {ci:.3g}" if ci is not None else f"{rec[f'{m}_mean']:.6g}")
        cells.append(str(rec["n"]))
        rows.append(cells)
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    click.echo("  ".join(h.ljust(w) for h, w in zip(header, widths)))
    for r in rows:
        click.echo("  ".join(c.ljust(w) for c, w in zip(r, widths)))
    from schedlab.platform.selection import describe, read

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
    """Paired comparison with a baseline: mean difference (or ratio), 95% CI, n pairs, Holm-adjusted p."""
    from schedlab.platform.compare import compare as paired_compare
    from schedlab.platform.compare import method_text

    if as_csv and as_json:
        raise UserError("--csv and --json: choose one")
    table = paired_compare(results_dir, baseline, metric, by, ratio)
    k = table["policy"].n_unique()
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
        interval = (
            f"{rec[est]:.4g} [{rec['ci_low']:.4g}, {rec['ci_high']:.4g}]"
            if rec["ci_low"] == rec["ci_low"] and rec["ci_low"] is not None
            else f"{rec[est]:.4g}"
        )
        p = rec["p_holm"]
        rows.append(
            [str(rec[c]) for c in keys]
            + [
                rec["policy"],
                f"{rec[f'{metric}_mean']:.6g}",
                f"{rec['baseline_mean']:.6g}",
                interval,
                str(rec["n"]),
                "–" if p is None or p != p else f"{p:.3g}",
                "*" if rec["significant"] else "",
            ]
        )
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    click.echo(f"{metric}: {method}")
    click.echo("  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip())
    for r in rows:
        click.echo("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())


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
    help="Figure file, .pdf or .svg (default: DIR/plots/<y>-vs-<x>.pdf); a 300-dpi PNG and a CSV of "
    "the drawn points go beside it.",
)
@click.option(
    "--logx",
    type=click.Choice(["auto", "on", "off"]),
    default="auto",
    show_default=True,
    help="Log x axis; auto: when the values are positive and span 2 decades or more.",
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

    where: dict[str, str] = {}
    for item in where_items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UserError(f"--where {item!r}: expected COL=VALUE (e.g. --where sigma=0.5)")
        where[key.strip()] = value.strip()
    result = draw(
        results_dir, x=x, y=y, by=by, ratio_to=ratio_to, facet=facet, out=out, logx=logx, logy=logy, where=where
    )
    scales = f"log x: {'yes' if result.logx else 'no'}, log y: {'yes' if result.logy else 'no'}"
    click.echo(f"{result.vector} ({scales})")
    click.echo(f"{result.png} ({result.png.stat().st_size} bytes, 300 dpi)")
    click.echo(f"{result.csv} (the {result.table.height} points drawn)")


@main.command()
@click.argument("results_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--uri", help="MLflow tracking URI (default: $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db).")
@click.option("--experiment", help="MLflow experiment (default: the sweep's).")
def track(results_dir: Path, uri: str | None, experiment: str | None) -> None:
    """(Re)log a results dir into MLflow and check it matches (exit 3 if not)."""
    from schedlab.platform.store import ResultStore
    from schedlab.platform.tracking import track_results

    store = ResultStore(results_dir)
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


@main.command()
@click.argument("results_dir", type=click.Path(file_okay=False, path_type=Path))
def compact(results_dir: Path) -> None:
    """Merge a results dir's small part files (a run does it at its end); prints files before -> after."""
    from schedlab.platform.compact import compact as compact_dir

    report = compact_dir(results_dir)  # not while a run writes it: the lock's one-line error, exit 2
    click.echo(report.line())


@main.group()
def pipelines() -> None:
    """Paper-reproduction pipelines: sweeps -> figures -> report.md (with the paper's claims checked)."""


@pipelines.command("list")
def pipelines_list() -> None:
    """List the pipelines: name, paper, figure, one line each."""
    from schedlab.pipelines.registry import PIPELINES

    for p in PIPELINES.values():
        click.echo(f"{p.name:12s} {p.figure:8s} {p.paper}")


@pipelines.command("run")
@click.argument("name")
@click.option(
    "--scale",
    default="quick",
    show_default=True,
    metavar="quick|paper",
    help="quick: minutes on a laptop; paper: the paper's settings.",
)
@click.option("--address", help="Ray cluster address (default: local Ray started in-process).")
@click.option(
    "--out", type=click.Path(file_okay=False, path_type=Path), help="Output dir (default: results/pipelines/NAME)."
)
@click.option("--fresh", is_flag=True, help="Discard existing results of the pipeline's sweeps first.")
@click.option("--no-tracking", is_flag=True, help="Do not log to MLflow (Parquet, figures and report.md only).")
@click.option(
    "--subset",
    type=float,
    metavar="FRACTION",
    help="DFRS pipelines: a seeded fraction of each trace set's traces (own sweep names; the report "
    "says so and gives 95 % intervals).",
)
def pipelines_run(
    name: str, scale: str, address: str | None, out: Path | None, fresh: bool, no_tracking: bool, subset: float | None
) -> None:
    """Run a pipeline's sweeps (resuming), then write its figures and report.md."""
    from schedlab.pipelines.base import check_scale
    from schedlab.pipelines.registry import get_pipeline
    from schedlab.pipelines.run import run_pipeline

    check_scale(scale)
    get_pipeline(name)  # unknown name: UserError listing the names, before Ray starts
    overrides = None
    if subset is not None:
        from schedlab.pipelines import dfrs_common

        if name not in dfrs_common.SUBSET_PIPELINES:
            raise UserError(f"--subset: only for {', '.join(dfrs_common.SUBSET_PIPELINES)}; not {name!r}")
        dfrs_common.split_subset({dfrs_common.SUBSET_KEY: subset})  # a bad fraction: one line, before Ray starts
        overrides = {dfrs_common.SUBSET_KEY: subset}
    result = ProgressLine().run(
        lambda progress: run_pipeline(
            name,
            scale,
            address=address,
            out=out,
            fresh=fresh,
            tracking=not no_tracking,
            progress=progress,
            overrides=overrides,
        )
    )
    for f in result.figures:
        held = sum(c.holds for c in f.checks)
        click.echo(f"{f.pdf} (+ .png): {f.title} -- {held} of {len(f.checks)} claims hold")
        for c in f.checks:
            caveat = (
                f"; n = {c.n if c.n is not None else f.replications}: too few replications"
                if c.too_few(f.replications)
                else ""
            )
            click.echo(f"  [{'holds' if c.holds else 'does not hold'}{caveat}] {c.claim}")
    click.echo(f"{result.report_md} ({result.wall_seconds:.1f} s wall)")
    if result.failures:
        click.echo(f"{result.failures} simulations failed (see the sweeps' failures/ dirs)", err=True)
        sys.exit(1)


@main.group()
def workloads() -> None:
    """Trace workloads: inspect what a trace holds."""


@workloads.command("inspect")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--reader", help="swf, swim, squid, bu98 or google (default: guessed from the name).")
@click.option("--on-bad-line", type=click.Choice(["error", "skip"]), default="error", show_default=True)
@click.option("--option", "options", multiple=True, metavar="KEY=VALUE", help="A reader option (repeatable).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def inspect_cmd(path: Path, reader: str | None, on_bad_line: str, options: tuple[str, ...], fmt: str) -> None:
    """Jobs, time span, offered load, size and resource statistics, cleaning counts."""
    from schedlab.workloads.inspect import describe, guess_reader, render
    from schedlab.workloads.traces.registry import read_trace

    if not path.exists():
        raise UserError(f"{path}: no such file")
    reader = reader or guess_reader(path)
    parsed: dict[str, object] = {}
    for item in options:
        key, sep, value = item.partition("=")
        if not sep:
            raise UserError(f"--option {item!r}: expected KEY=VALUE")
        try:
            parsed[key] = json.loads(value)  # numbers, true/false
        except ValueError:
            parsed[key] = value  # a plain string
    info = describe(read_trace(reader, str(path), on_bad_line=on_bad_line, **parsed))
    if fmt == "json":
        click.echo(json.dumps(info, default=str))
    else:
        click.echo(render(info, str(path), reader))


@main.command("check-policy")
@click.argument("ref")
@click.option("--engine", help="queue, packing, batch or dfrs (required).")
@click.option(
    "--param",
    "param_items",
    multiple=True,
    metavar="KEY=VALUE",
    help="A policy parameter as a TOML value (repeatable): --param alpha=0.5 --param mode='\"fast\"'.",
)
@click.option("--examples", type=int, default=200, show_default=True, help="Random workloads to try.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the workload search.")
def check_policy_cmd(ref: str, engine: str | None, param_items: tuple[str, ...], examples: int, seed: int) -> None:
    """Check a policy against its engine's invariants on seeded random workloads.

    REF is your class ("mypolicies.py:AgedSRPT", "mylab.policies:AgedSRPT")
    or a built-in policy name. Prints "ok (N workloads)" (exit 0) or the
    violated invariant and the smallest failing workload found (exit 1).
    """
    from schedlab.checks import check_policy
    from schedlab.engines import ENGINES

    if engine is None:
        raise UserError(f"check-policy: --engine is required (one of {', '.join(ENGINES)})")
    report = check_policy(engine, ref, _toml_params(param_items), examples, seed, base_dir=Path.cwd())
    click.echo(report.render())
    sys.exit(0 if report.ok else 1)


def _toml_params(items: tuple[str, ...]) -> dict[str, object]:
    """``--param KEY=VALUE`` items -> {key: value}, each value a TOML scalar
    (0.5, 3, true, "text"); one-line UserError naming the item otherwise."""
    import tomllib

    out: dict[str, object] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key.isidentifier():
            raise UserError(f"--param {item!r}: expected NAME=VALUE (e.g. --param alpha=0.5)")
        if key in out:
            raise UserError(f"--param {key}: given twice")
        try:
            parsed = tomllib.loads(f"x = {value}")["x"]
        except tomllib.TOMLDecodeError:
            raise UserError(
                f"--param {item!r}: {value!r} is not a TOML value (numbers as 0.5, booleans as true, "
                f"strings in quotes: {key}='\"{value}\"')"
            ) from None
        if isinstance(parsed, (dict, list)):
            raise UserError(
                f"--param {item!r}: give one value (a TOML number, boolean or string), not "
                f"{'an array' if isinstance(parsed, list) else 'a table'}"
            )
        out[key] = parsed
    return out


def _write_jobs(columns: dict, path: Path) -> None:
    import polars as pl

    frame = pl.DataFrame(columns)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    if path.suffix == ".csv":
        frame.write_csv(tmp)
    else:
        frame.write_parquet(tmp)
    tmp.replace(path)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
