"""`schedlab` command line.

Start-up stays light: ray, mlflow, polars and the simulators are imported inside
the commands that need them, never at module level. Every user mistake is a
`UserError`: one line on stderr naming the place, exit code 2, no traceback.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import click

from schedlab import __version__
from schedlab.errors import UserError

SYNTHETIC_OPTIONS = ("shape", "timeshape", "load", "sigma", "njobs", "size_dist", "alpha", "beta", "load_mode")


class _Group(click.Group):
    """Turns a UserError anywhere below into one clean line and exit code 2."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except UserError as err:
            click.echo(f"schedlab: error: {err}", err=True)
            ctx.exit(UserError.exit_code)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="schedlab")
def main() -> None:
    """Scheduling-policy simulations and sweeps (queue engine: the PSBS paper)."""


@main.command()
def policies() -> None:
    """List the engines and their policies, one line each."""
    from schedlab.engines import ENGINES

    for engine in ENGINES.values():
        click.echo(f"{engine.name}: {engine.summary}")
        for name, cls in engine.policies.items():
            click.echo(f"  {engine.name:6s} {name:10s} {cls.summary}")


@main.command()
@click.option("--engine", default="queue", show_default=True, help="Simulator engine.")
@click.option("--policy", required=True, help="Policy name (see `schedlab policies`).")
@click.option("--workload-file", type=click.Path(dir_okay=False, path_type=Path),
              help="Job table (.csv or .parquet) with job_id, submit, size[, estimate, weight].")
@click.option("--shape", type=float, default=0.25, show_default=True, help="Weibull shape of job sizes (mean 1).")
@click.option("--timeshape", type=float, default=1.0, show_default=True, help="Weibull shape of inter-arrival times.")
@click.option("--load", type=float, default=0.9, show_default=True, help="Offered load.")
@click.option("--sigma", type=float, default=0.5, show_default=True, help="Log-normal estimate error sigma.")
@click.option("--njobs", type=int, default=10_000, show_default=True, help="Number of jobs.")
@click.option("--size-dist", default="weibull", show_default=True, help="weibull or pareto.")
@click.option("--alpha", type=float, default=2.0, show_default=True, help="Pareto shape (with --size-dist pareto).")
@click.option("--beta", type=float, default=0.0, show_default=True, help="Weight classes: w = 1/c^beta, c uniform in 1..5.")
@click.option("--load-mode", default="realized", show_default=True,
              help="realized: stretch arrivals so the drawn load is exact (the authors' generator); nominal: by distribution means.")
@click.option("--seed", type=int, default=1, show_default=True, help="Seed of the workload draw.")
@click.option("--jobs-out", type=click.Path(dir_okay=False, path_type=Path),
              help="Write per-job rows here (.parquet or .csv).")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.pass_context
def simulate(ctx: click.Context, engine: str, policy: str, workload_file: Path | None, seed: int,
             jobs_out: Path | None, as_json: bool, **synthetic) -> None:
    """Run one policy on one workload and print a summary."""
    from schedlab.engines import get_engine

    eng = get_engine(engine)
    eng.policy(policy)  # fail fast on an unknown name, before any work
    if jobs_out is not None and jobs_out.suffix not in (".parquet", ".csv"):
        raise UserError(f"--jobs-out {jobs_out}: the file name must end in .parquet or .csv")
    if workload_file is not None:
        clash = [o for o in SYNTHETIC_OPTIONS
                 if ctx.get_parameter_source(o) is not click.core.ParameterSource.DEFAULT]
        if clash:
            raise UserError(f"--workload-file cannot be combined with --{clash[0].replace('_', '-')}")
        from schedlab.workloads.files import read_job_table

        jobs = read_job_table(workload_file)
        described = f"file {workload_file}"
    else:
        import numpy as np

        from schedlab.workloads.synthetic import queue_workload

        jobs = queue_workload(np.random.default_rng(seed), **synthetic)
        described = " ".join(f"{k}={v}" for k, v in synthetic.items()) + f" seed={seed}"

    started = time.perf_counter()
    result = eng.run(jobs, policy)
    wall = time.perf_counter() - started
    if jobs_out is not None:
        _write_jobs(result.jobs, jobs_out)
    summary = {"engine": engine, "policy": policy, "workload": described, **result.summary, "wall_seconds": wall}
    if as_json:
        click.echo(json.dumps(summary))
        return
    s = result.summary
    click.echo(f"{engine} / {policy} on {described}")
    rows = [
        ("jobs", f"{int(s['n_jobs'])}"),
        ("mean sojourn time", f"{s['mst']:.6g}"),
        ("slowdown mean", f"{s['slowdown_mean']:.6g}"),
        ("slowdown p50", f"{s['slowdown_p50']:.6g}"),
        ("slowdown p99", f"{s['slowdown_p99']:.6g}"),
        ("slowdown max", f"{s['slowdown_max']:.6g}"),
    ]
    rows += [(f"MST weight class {k.rsplit('_', 1)[1]}", f"{v:.6g}") for k, v in s.items() if k.startswith("mst_class_")]
    rows += [("events", f"{int(s['events'])}"), ("wall time", f"{wall:.3f} s")]
    for label, value in rows:
        click.echo(f"  {label:22s} {value}")
    if jobs_out is not None:
        click.echo(f"  per-job rows written to {jobs_out}")


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
