"""`schedlab policies`, `schedlab simulate` and `schedlab workloads inspect`:
one policy, one workload, no sweep -- what the engines offer, a single run
with its summary, and what a trace holds."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import click

from schedlab.cli.group import main
from schedlab.errors import UserError

SYNTHETIC_OPTIONS = ("shape", "timeshape", "load", "sigma", "njobs", "size_dist", "alpha", "beta", "load_mode")


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
@click.option(
    "--engine", default="queue", show_default=True, help='Simulator engine (or your own: "my_engine.py:MyEngine").'
)
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
@click.option(
    "--budget",
    type=click.FloatRange(min=0.0, min_open=True),
    default=None,
    help="Wall-clock seconds the simulation may take before it is stopped (exit 1) "
    "[default: 3600, as [execution] sim_budget_seconds].",
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
    budget: float | None,
    **synthetic,
) -> None:
    """Run one policy on one workload and print a summary."""
    from schedlab.engines import spec_engine
    from schedlab.platform.execution.budget import DEFAULT_SIM_BUDGET_SECONDS
    from schedlab.usercode import is_reference, resolve

    eng = spec_engine(engine, Path.cwd(), "--engine")[0]  # a built-in or your "my_engine.py:MyEngine"
    if is_reference(policy):  # your own class: "file.py:Name" (relative to the current folder) or "module:Name"
        policy_obj = eng.check_policy_class(resolve(policy, Path.cwd(), "--policy").load(), "--policy")
    else:
        policy_obj = eng.policy(policy)  # fail fast on an unknown name, before any work
    if jobs_out is not None and jobs_out.suffix not in (".parquet", ".csv"):
        raise UserError(f"--jobs-out {jobs_out}: the file name must end in .parquet or .csv")
    read_file = eng.declared("read_workload_file")
    if eng.needs_workload_file and workload_file is None:
        raise UserError(f"--engine {engine} needs --workload-file (an SWF log)")
    if procs is not None and read_file is None:
        raise UserError("--procs is only for --engine batch")
    system = None
    if workload_file is not None:
        clash = [o for o in SYNTHETIC_OPTIONS if ctx.get_parameter_source(o) is not click.core.ParameterSource.DEFAULT]
        if clash:
            raise UserError(f"--workload-file cannot be combined with --{clash[0].replace('_', '-')}")
        if read_file is not None:
            jobs, system, described = read_file(workload_file, procs)
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
    result = _run_guarded(
        eng, jobs, policy_obj, system, engine_path, budget or DEFAULT_SIM_BUDGET_SECONDS, is_reference(policy)
    )
    wall = time.perf_counter() - started
    if jobs_out is not None:
        columns = result.jobs
        if eng.jobs_out:
            columns = {k: columns[k] for k in eng.jobs_out}
        _write_jobs(columns, jobs_out)
    summary = {"engine": engine, "policy": policy, "workload": described, **result.summary, "wall_seconds": wall}
    if as_json:
        click.echo(json.dumps(summary))
        return
    s = result.summary
    click.echo(f"{engine} / {policy} on {described}")
    lines = eng.declared("summary_lines")
    rows = lines(s) if lines is not None else [(k, f"{v:.6g}") for k, v in s.items() if k != "sim_seconds"]
    rows += [("wall time", f"{wall:.3f} s")]
    for label, value in rows:
        click.echo(f"  {label:22s} {value}")
    if jobs_out is not None:
        click.echo(f"  per-job rows written to {jobs_out}")


def _run_guarded(eng, jobs, policy_obj, system, engine_path: str, budget: float, user_code: bool):
    """The run (``run_instance``) under a wall-clock budget. A failing user policy ends the
    command as ``run`` reports it: one line, the user's own frames (none
    when the engine refused what the policy did: its message says it all),
    exit 1; so does a run past the budget. A built-in policy's exception is
    a bug of schedlab's and keeps its whole traceback."""
    from schedlab.cli.group import EXIT_FAILURES
    from schedlab.engines.instance import run_instance
    from schedlab.platform.execution.budget import BudgetExceeded, sim_budget
    from schedlab.usercode import user_frames_traceback

    try:
        with sim_budget(budget, "--budget"):
            return run_instance(eng, jobs, policy_obj, system=system, path=engine_path).result
    except UserError:
        raise
    except (Exception, BudgetExceeded) as err:  # noqa: BLE001 - reported below, the command ends
        if not (user_code or isinstance(err, BudgetExceeded)):
            raise
        line = (str(err).strip().splitlines() or [""])[-1]
        click.echo(f"schedlab: the simulation failed: {type(err).__name__}: {line}", err=True)
        frames = user_frames_traceback(err, fallback=False) if user_code else ""
        if frames:
            click.echo("your code's frames:\n  " + frames.replace("\n", "\n  "), err=True)
        sys.exit(EXIT_FAILURES)


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
