"""`schedlab pipelines list` and `schedlab pipelines run`: the paper-reproduction
pipelines (sweeps -> figures -> report.md)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from schedlab.cli.group import main
from schedlab.cli.progress import ProgressLine
from schedlab.errors import UserError
from schedlab.pipelines.base import HIDDEN_SCALES, SCALES

#: Every scale `pipelines run --scale` accepts, as its help lists them.
ALL_SCALES = SCALES + HIDDEN_SCALES
#: Where `pipelines run` reads the traces and the trained agent unless told (--data / $SCHEDLAB_DATA,
#: --agent / $SCHEDLAB_AGENT): the repository's folders, relative to the working directory (a checkout's
#: root). A path is part of the spec a results dir holds, so these spellings keep earlier runs resumable.
DEFAULT_DATA = "../shared/data"
DEFAULT_AGENT = "sweeps/rl"


@main.group()
def pipelines() -> None:
    """Paper-reproduction pipelines: sweeps -> figures -> report.md (with the paper's claims checked)."""


@pipelines.command("list")
def pipelines_list() -> None:
    """List the pipelines: name, figure, paper, one line each, in aligned columns."""
    from schedlab.pipelines.registry import PIPELINES

    listed = list(PIPELINES.values())
    name_width = max((len(p.name) for p in listed), default=0)
    figure_width = max((len(p.figure) for p in listed), default=0)
    for p in listed:
        click.echo(f"{p.name:<{name_width}}  {p.figure:<{figure_width}}  {p.paper}")


@pipelines.command("run")
@click.argument("name")
@click.option(
    "--scale",
    default="quick",
    show_default=True,
    metavar="|".join(ALL_SCALES),
    help="quick: minutes on a laptop; paper: the paper's settings; smoke: seconds, the smallest run that goes "
    "through every step (the test suite's: its numbers mean nothing).",
)
@click.option(
    "--backend",
    type=click.Choice(["auto", "local", "ray"]),
    help="Where the sweeps' tasks run (default auto: in-process or a local pool for small work, else Ray).",
)
@click.option("--address", help="Ray cluster address (implies Ray; default: none, see --backend).")
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
@click.option(
    "--report-only",
    is_flag=True,
    help="Run nothing: write the figures and report.md from the rows on disk (a long run cut short; the "
    "DFRS reports then use the instances every algorithm has finished, and say how many).",
)
@click.option(
    "--decide",
    is_flag=True,
    help="Then give each inconclusive claim's sweeps more replications (doubling, resumable) until every "
    "claim holds or fails or reaches --budget; report.md says what each claim took.",
)
@click.option(
    "--budget",
    type=click.IntRange(min=1),
    metavar="N",
    help="With --decide: replications per point a claim may take (default 64).",
)
@click.option(
    "--data",
    envvar="SCHEDLAB_DATA",
    show_envvar=True,
    default=DEFAULT_DATA,
    show_default=True,
    metavar="DIR",
    help="The folder of the traces the pipeline reads ({data}/... in its specs), relative to the working "
    "directory or absolute; written into the specs as given (the default's folder keeps the default's spelling).",
)
@click.option(
    "--agent",
    envvar="SCHEDLAB_AGENT",
    show_envvar=True,
    default=DEFAULT_AGENT,
    show_default=True,
    metavar="DIR",
    help="rlsched-tables: the folder of the trained agent (agent.py and its data files, as `schedlab gym "
    "export --out DIR` writes them).",
)
def pipelines_run(
    name: str,
    scale: str,
    backend: str | None,
    address: str | None,
    out: Path | None,
    fresh: bool,
    no_tracking: bool,
    subset: float | None,
    report_only: bool,
    decide: bool,
    budget: int | None,
    data: str,
    agent: str,
) -> None:
    """Run a pipeline's sweeps (resuming), then write its figures and report.md."""
    from schedlab.pipelines.base import check_scale
    from schedlab.pipelines.registry import get_pipeline
    from schedlab.pipelines.run import run_pipeline

    if scale not in ALL_SCALES:
        raise UserError(f"--scale: unknown scale {scale!r}; choose one of: {', '.join(ALL_SCALES)}")
    check_scale(scale)
    get_pipeline(name)  # unknown name: UserError listing the names, before Ray starts
    overrides = None
    if subset is not None:
        from schedlab.pipelines import dfrs_common

        if name not in dfrs_common.SUBSET_PIPELINES:
            raise UserError(f"--subset: only for {', '.join(dfrs_common.SUBSET_PIPELINES)}; not {name!r}")
        dfrs_common.split_subset({dfrs_common.SUBSET_KEY: subset})  # a bad fraction: one line, before Ray starts
        overrides = {dfrs_common.SUBSET_KEY: subset}
    if budget is not None and not decide:
        raise UserError("--budget: only with --decide")
    if decide and report_only:
        raise UserError("--decide: runs replications; not with --report-only")
    if decide:
        from schedlab.pipelines.decide import DEFAULT_BUDGET, decide_pipeline

        def runner(**kw):
            return decide_pipeline(name, scale, budget or DEFAULT_BUDGET, **kw)
    else:

        def runner(**kw):
            return run_pipeline(name, scale, report_only=report_only, **kw)

    result = ProgressLine().run(
        lambda progress: runner(
            address=address,
            backend=backend,
            out=out,
            fresh=fresh,
            tracking=not no_tracking,
            progress=progress,
            overrides=overrides,
            data=_root("data", data, DEFAULT_DATA),
            agent=_root("agent", agent, DEFAULT_AGENT),
        )
    )
    from schedlab.pipelines.base import tally

    for f in result.figures:
        click.echo(f"{f.pdf} (+ .png): {f.title} -- {tally(f.checks).removeprefix('Claims checked: ')}")
        for c in f.checks:
            caveat = (
                f"; n = {c.n if c.n is not None else f.replications}: too few replications"
                if c.too_few(f.replications)
                else ""
            )
            click.echo(f"  [{c.outcome}{caveat}] {c.claim}: {c.detail}")
    click.echo(f"{result.report_md} ({result.wall_seconds:.1f} s wall)")
    if result.failures:
        click.echo(f"{result.failures} simulations failed (see the sweeps' failures/ dirs)", err=True)
        sys.exit(1)


def _root(param: str, value: str, default: str):
    """The folder option ``param`` gave, with where it came from (for the error naming it); the
    default's folder however spelled (an absolute $SCHEDLAB_DATA, a trailing slash) as the default
    spells it, so that the specs -- and the results dirs they resume -- stay the same."""
    from click.core import ParameterSource

    from schedlab.pipelines.inputs import INPUTS, Root

    source = click.get_current_context().get_parameter_source(param)
    option, env = INPUTS[param].option, INPUTS[param].env
    if source is ParameterSource.COMMANDLINE:
        origin = option
    elif source is ParameterSource.ENVIRONMENT:
        origin = f"${env}"
    else:
        origin = f"the default of {option} (${env} unset)"
    if value.strip() and Path(value).expanduser().resolve() == Path(default).resolve():
        value = default
    return Root(value, origin)


@pipelines.command("pages")
@click.argument("names", nargs=-1)
@click.option(
    "--results",
    "results_root",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Dir holding the pipelines' output dirs (ROOT/NAME, as `pipelines run --out ROOT/NAME` wrote them).",
)
@click.option(
    "--to",
    "pages_dir",
    default="docs/reproductions",
    show_default=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Where the pages, their figures and the index go.",
)
def pipelines_pages(names: tuple[str, ...], results_root: Path, pages_dir: Path) -> None:
    """Write a reproduction page per pipeline run (default: every one under --results) and the index."""
    from schedlab.pipelines.pages import write_pages

    for path in write_pages(results_root, list(names) or None, pages_dir):
        click.echo(str(path))
