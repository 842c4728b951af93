"""schedlab: sweeps of scheduling policies over synthetic workloads and trace replays.

Import-light on purpose: the CLI imports this package at start-up, so nothing
here may pull in ray, mlflow or polars.
"""

from schedlab.version import __version__

__all__ = ["__version__", "compare", "load", "plot"]


def run(spec, *, backend=None, address=None, fresh: bool = False, tracking=None, progress=None):
    """Run (or resume) a sweep from Python: ``spec`` is a TOML path, a spec
    dict (as the TOML would give) or a parsed spec. Returns the run's report
    (``rows_written``, ``failures``, ``backend`` and ``backend_why``, ...).
    Calling it again in the same process (a notebook) reuses what the first
    call warmed: the imports and compiled kernels in this process, its local
    pool of processes, or the Ray it started, and its tracking process
    (MLflow imported, the store open). With tracking on, the headline figure
    goes to the sweep's MLflow parent run, as with ``schedlab run``.
    ``backend``: "auto" (default: the spec's), "local" or "ray"."""
    from pathlib import Path

    from schedlab.platform.planning.spec import SweepSpec
    from schedlab.platform.planning.validate import load_spec, parse_spec
    from schedlab.platform.sweep import run_sweep
    from schedlab.search_figure import convergence
    from schedlab.views.tracking import headline_figure

    if isinstance(spec, (str, Path)):
        spec = load_spec(spec)
    elif isinstance(spec, dict):
        spec = parse_spec(spec, "schedlab.run(spec)")
    elif not isinstance(spec, SweepSpec):
        raise TypeError(f"schedlab.run: spec must be a path, a dict or a SweepSpec; got {type(spec).__name__}")
    return run_sweep(
        spec,
        backend=backend,
        address=address,
        fresh=fresh,
        tracking=tracking,
        progress=progress,
        figures=headline_figure,
        draw=convergence,
    )


def load(results_dir, table: str = "summary", columns=None, where=None):
    """A sweep's results as a polars LazyFrame (table: summary, jobs, series
    or failures). ``columns``: only these columns, in this order; ``where``:
    ``{column: value}``, only the rows where every column takes its value, as
    ``--where`` selects them (a numeric column within
    `schedlab.platform.storage.query.WHERE_REL_TOL`, any other as text). Both
    go into the scan: the rows left out are never read, so ten million rows
    filtered down to a few are read in seconds and little memory. A column
    that is not there (or a text value for a numeric column) is a
    `UserError` naming it."""
    from schedlab.errors import UserError
    from schedlab.platform.storage.query import where_exprs
    from schedlab.platform.storage.store import load as _load

    lf = _load(results_dir, table)
    if where:
        lf = lf.filter(*where_exprs(lf.collect_schema(), dict(where), results_dir))
    if columns is not None:
        columns = [columns] if isinstance(columns, str) else list(columns)
        names = lf.collect_schema().names()
        missing = [c for c in columns if c not in names]
        if missing:
            raise UserError(
                f"columns: {', '.join(map(repr, missing))} not in {results_dir}; columns: {', '.join(names)}"
            )
        lf = lf.select(columns)
    return lf


def compare(results_dir, baseline: str, metric=None, by=None, ratio: bool = False):
    """Paired comparison of every policy with ``baseline`` (same workload point
    and replication = a pair): per workload point (``by``) and policy, the
    mean difference or geometric mean ratio, its 95 % t interval, n pairs and
    Holm-adjusted p values, as a polars DataFrame
    (``schedlab.platform.statistics.compare``). ``metric``: by default the
    engine's headline metric (``mst`` for the queue engine)."""
    from schedlab.platform.statistics.compare import compare as _compare

    return _compare(results_dir, baseline, metric=metric, by=by, ratio=ratio)


def plot(
    results_dir,
    x: str,
    y: str,
    by: str = "policy",
    ratio_to=None,
    facet=None,
    out=None,
    logx: str = "auto",
    logy: str = "auto",
    where=None,
):
    """A publication-style figure of a sweep: ``y`` against ``x``, a line per
    ``by``, a panel per ``facet``, means (or, with ``ratio_to``, paired
    geometric-mean ratios to that policy) with 95 % intervals on the axis's
    scale. Writes a PDF (or SVG), a 300-dpi PNG and a CSV of the drawn points;
    returns a `schedlab.plotting.PlotResult` (``.paths``, ``.table``)."""
    from schedlab.plotting import plot as _plot

    return _plot(
        results_dir, x=x, y=y, by=by, ratio_to=ratio_to, facet=facet, out=out, logx=logx, logy=logy, where=where
    )
