"""Running a pipeline: its sweeps through the platform, then its figures and report.md.

`run_pipeline` runs every spec of a pipeline through
`schedlab.platform.sweep.run_sweep` (so resume, Ray, MLflow and searches come for
free), then writes the figures and ``report.md`` to the pipeline's output dir
and, with tracking on, attaches them to each sweep's MLflow parent run. It
lives apart from `base` (the pipeline types) so that `base` imports nothing
of the registry and `registry` imports nothing of this module: the imports
run one way, types <- pipelines <- registry <- run.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from schedlab.pipelines.base import (
    MIN_REPLICATIONS,
    WINDOW_COLUMNS,
    PipelineResult,
    check_scale,
    deep_merge,
    tally,
)
from schedlab.pipelines.inputs import Root, using
from schedlab.pipelines.runlog import Invocation, rows_on_disk, settle_if_idle


def point_counts(results_dir: Path) -> Any:
    """Independent instances behind each point of a sweep, as a polars frame
    (``policy``, ``k``): rows per (policy, parameters other than a trace
    window) -- the replications of a configuration, times the windows when a
    trace is replayed window by window (``WINDOW_COLUMNS``), which the
    pipelines pool as replications. None for a sweep without rows."""
    import polars as pl

    from schedlab import load
    from schedlab.platform.storage.seam import require_manifest

    manifest = require_manifest(results_dir)
    frame = load(results_dir).collect()
    if frame.height == 0:
        return None
    keys = ["policy"] + [c for c in manifest.get("param_columns", []) if c in frame.columns and c not in WINDOW_COLUMNS]
    return frame.group_by(keys).agg(pl.len().alias("k")).select("policy", "k")


def instances_per_point(results_dir: Path, most: bool = False) -> int | None:
    """Fewest (``most``: most) independent instances behind a point of a
    sweep (`point_counts`); None for a sweep without rows."""
    counts = point_counts(results_dir)
    if counts is None:
        return None
    return int(counts["k"].max() if most else counts["k"].min())


def grown(replications: dict[str, Any], n: int) -> dict[str, Any]:
    """A sweep's ``replications`` table asking for at least ``n`` replications
    per configuration: a fixed ``n`` raised to it, an adaptive one's ``min``
    (and ``max``, if below). Replications only grow a results dir
    (`GROWABLE` in platform/storage/manifest.py): the rows on disk are kept
    and replications n0..n-1 of the same points run, under the same common
    random numbers."""
    if replications.get("n") is not None or not replications:
        return {**replications, "n": max(n, int(replications.get("n") or 1))}
    lo, hi = int(replications.get("min", 5)), int(replications.get("max", 200))
    return {**replications, "min": max(n, lo), "max": max(n, hi)}


def policy_name(entry: Any) -> str:
    """The name of a spec's policy entry (a name, or a table with ``name``)."""
    return entry if isinstance(entry, str) else entry["name"]


def replications_per_policy(results_dir: Path) -> dict[str, int]:
    """{policy: the most replications any of its points took} of a sweep (as
    `instances_per_point` counts them, ``most``), in the order of the rows' policies."""
    import polars as pl

    counts = point_counts(results_dir)
    if counts is None:
        return {}
    most = counts.group_by("policy").agg(pl.col("k").max())
    return {p: int(k) for p, k in sorted(most.iter_rows(), key=lambda r: str(r[0]))}


def _attach_artifacts(spec, paths: list[Path]) -> None:
    """Log figures and report.md to the sweep's MLflow parent run; warn on any failure."""
    try:
        from mlflow.tracking import MlflowClient

        from schedlab.platform.tracking.mirror import SWEEP_TAG
        from schedlab.platform.tracking.store import resolve_uri

        client = MlflowClient(tracking_uri=resolve_uri(spec.tracking.uri))
        exp = client.get_experiment_by_name(spec.experiment())
        if exp is None:
            raise RuntimeError(f"no MLflow experiment {spec.experiment()!r}")
        runs = client.search_runs(
            [exp.experiment_id],
            f"tags.`{SWEEP_TAG}` = '{spec.name}'",
            max_results=1000,
            order_by=["attributes.start_time ASC"],
        )
        parents = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
        if not parents:
            raise RuntimeError(f"no parent run tagged {SWEEP_TAG}={spec.name}")
        for p in paths:
            client.log_artifact(parents[0].info.run_id, str(p), artifact_path="pipeline")
    except Exception as err:  # tracking never fails a pipeline
        warnings.warn(f"pipeline artifacts not attached to MLflow run of {spec.name}: {err}", stacklevel=2)


def run_pipeline(
    name: str,
    scale: str = "quick",
    address: str | None = None,
    backend: str | None = None,
    out: str | Path | None = None,
    fresh: bool = False,
    tracking: bool = True,
    overrides: dict[str, Any] | None = None,
    progress: Callable[[Any], None] | None = None,
    report_only: bool = False,
    grow: dict[str, int] | None = None,
    grow_policies: dict[str, list[str]] | None = None,
    data: str | Root | None = None,
    agent: str | Root | None = None,
) -> PipelineResult:
    """Run every sweep of a pipeline (resuming), then write its figures and
    report.md. ``report_only``: run nothing, write them from the rows on
    disk (a long run cut short: the DFRS reports then use the instances
    every algorithm has finished, and say how many). An invocation that
    runs sweeps is logged in ``OUT/runs.jsonl`` (`runlog`), also when it is
    interrupted (Ctrl-C, SIGTERM -- handled as Ctrl-C while it runs --, an
    error): the rows it committed and its cost; one killed outright
    (SIGKILL) leaves its open record, which the next invocation settles.
    Two invocations into one output dir: the second stops (UserError).
    ``grow``: {sweep name: n}, at least n replications per configuration of
    that sweep (`grown`): the sweep resumes, only the new replications run.
    ``grow_policies``: {sweep name: policies}, a grown sweep runs only
    those policies' configurations (a configuration's id does not depend on
    the policy list, so the rows of the others stay on disk, untouched).
    ``data``, ``agent``: the folders of the traces and of the trained agent
    the pipeline's specs name (`inputs`; None: ``$SCHEDLAB_DATA``,
    ``$SCHEDLAB_AGENT``), written into the specs as given."""
    import matplotlib

    matplotlib.use("Agg")
    from schedlab.pipelines.registry import get_pipeline
    from schedlab.platform.execution.report import Interrupted
    from schedlab.platform.planning.validate import parse_spec
    from schedlab.platform.sweep import run_sweep
    from schedlab.search_figure import convergence

    pipe = get_pipeline(name)
    check_scale(scale)
    started = time.monotonic()
    with using(data=data, agent=agent):  # a trace or agent not there: one line, before anything is written
        expanded = pipe.specs(scale, overrides or {})
    out_dir = Path(out) if out is not None else Path("results") / "pipelines" / name
    out_dir.mkdir(parents=True, exist_ok=True)
    from schedlab.platform.execution.interrupts import sigterm_as_ctrl_c

    invocation = None if report_only else Invocation.start(out_dir, scale, overrides)

    specs = []
    for spec_data in expanded:
        if want := (grow or {}).get(spec_data["name"]):
            spec_data = {**spec_data, "replications": grown(spec_data.get("replications") or {}, want)}
            if keep := (grow_policies or {}).get(spec_data["name"]):
                spec_data["policies"] = [p for p in spec_data["policies"] if policy_name(p) in keep]
        spec_data = deep_merge(
            spec_data, {"outputs": {"dir": str(out_dir / spec_data["name"])}, "tracking": {"enabled": bool(tracking)}}
        )
        specs.append(parse_spec(spec_data, f"pipeline {name} ({spec_data['name']})"))

    results_dirs = {s.name: s.results_dir() for s in specs}
    sweeps: list[Any] = []
    if invocation is None:  # a run killed outright before this one is settled all the same
        settle_if_idle(out_dir)
        figures, report_md, failures = _write_report(pipe, scale, specs, None, results_dirs, out_dir)
    else:
        with sigterm_as_ctrl_c() as terminated:  # SIGTERM, as a session's end sends it, stops the run as Ctrl-C does
            before = invocation.open(list(results_dirs.values()))

            def beating(p: Any) -> None:
                invocation.beat()
                if progress is not None:
                    progress(p)

            try:
                for spec in specs:
                    sweeps.append(
                        run_sweep(
                            spec,
                            address=address,
                            backend=backend,
                            fresh=fresh,
                            tracking=tracking,
                            progress=beating,
                            draw=convergence,
                        )
                    )
                    if sweeps[-1].interrupted:  # Ctrl-C while it compacted: it is complete; the next one must not start
                        raise Interrupted(f"interrupted: {spec.name} is complete in {out_dir}; run again to resume")
                figures, report_md, failures = _write_report(pipe, scale, specs, sweeps, results_dirs, out_dir)
            except BaseException as err:  # Ctrl-C, SIGTERM, Interrupted, an error: what it committed, and its cost
                after = sum(rows_on_disk(d) for d in results_dirs.values())
                invocation.finish(
                    rows_new=max(0, after - before),
                    rows_resumed=before,
                    failures=0,
                    interrupted=True,
                    ended_by=terminated.ended_by
                    or (
                        "SIGINT" if isinstance(err, KeyboardInterrupt | Interrupted) else f"error: {type(err).__name__}"
                    ),
                )
                raise
            invocation.finish(
                rows_new=sum(r.rows_written for r in sweeps),
                rows_resumed=sum(r.rows_skipped for r in sweeps),
                failures=failures,
            )
    if tracking:
        artifacts = [p for f in figures for p in (f.pdf, f.png) if p.exists()] + [report_md]
        for spec in specs:
            _attach_artifacts(spec, artifacts)
    return PipelineResult(
        name, scale, out_dir, results_dirs, sweeps, figures, report_md, time.monotonic() - started, failures
    )


def _write_report(
    pipe: Any, scale: str, specs: list[Any], sweeps: list[Any] | None, results_dirs: dict[str, Path], out_dir: Path
) -> tuple[list[Any], Path, int]:
    """The figures and report.md from the rows on disk: (figures, report.md's
    path, failed simulations). ``sweeps``: the reports of the sweeps this
    invocation ran (None: it only writes the report, ``--report-only``)."""
    from schedlab.plotting import style

    with style():
        figures = pipe.report(results_dirs, out_dir)
    counts = [n for d in results_dirs.values() if (n := instances_per_point(d)) is not None]
    for f in figures:
        if f.replications is None and counts:
            f.replications = min(counts)
    failures = sum(len(r.failures) for r in sweeps or [])
    report_md = out_dir / "report.md"
    if sweeps is not None:
        ran = ", ".join(
            f"`{s.name}` ({r.configs} configurations, {r.rows_written} rows new, {r.rows_skipped} resumed)"
            for s, r in zip(specs, sweeps)
        )
    else:
        ran = ", ".join(f"`{s.name}` ({rows_on_disk(d)} rows on disk)" for s, d in zip(specs, results_dirs.values()))
        ran += " -- **written from the rows on disk, without running** (`--report-only`)"
    header = [
        f"# {pipe.name}: {pipe.paper}, {pipe.figure}",
        "",
        pipe.description,
        "",
        f"Scale `{scale}`; sweeps: {ran}.",
        "",
    ]
    if failures:
        header += [f"**{failures} simulations failed**; see the sweeps' `failures/` dirs.", ""]
    verdicts = [c for f in figures for c in f.checks]
    header += [tally(verdicts), ""]
    weak = sum(c.too_few(f.replications) for f in figures for c in f.checks)
    if weak:
        header += [
            f"**{weak} of these verdicts rest on fewer than {MIN_REPLICATIONS} replications per point** "
            f"(marked below): indicative only.",
            "",
        ]
    report_md.write_text("\n".join(header + [f.markdown() for f in figures]))
    return figures, report_md, failures
