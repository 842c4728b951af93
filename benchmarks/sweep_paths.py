"""Whole sweeps on the compiled fast path and on the Python reference: the
same rows, and the wall time a user waits (a benchmark: prints figures; it
also says, for each spec, whether the two results dirs hold the same rows).

For each spec it runs the sweep twice on one local Ray session, tracking off,
into two temporary results dirs -- ``[execution] engine_path = "fast"`` (the
default) and ``"reference"`` -- then compares every summary row (all columns
but ``sim_seconds``, a wall-clock time), every per-job row and every series
row, keyed by (config id, replication), and prints both wall times, the time
inside the engines, and the ratios reference / fast.

    python benchmarks/sweep_paths.py [SPEC ...] [--order fast,reference]

A SPEC may also be ``pipeline:NAME[:SCALE]``: every sweep of that pipeline at
that scale (default smoke), e.g. ``pipeline:tetris-packing`` (Tetris and
Slots-Fair on the Google trace grouped into jobs; run from the repository
root, where the pipelines' trace paths start).

Default specs: sweeps/psbs-shape.toml, sweeps/packing-fig4.toml and
sweeps/batch-hpc2n-weeks.toml (the last needs the HPC2N log under
../shared/data; it is skipped with a line when absent). Relative trace paths
resolve against the spec's folder, as in ``schedlab run``.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import polars as pl

import schedlab
from schedlab.errors import UserError
from schedlab.platform.execution.runner import run_sweep
from schedlab.platform.planning.validate import load_spec

REPO = Path(__file__).resolve().parents[1]
DEFAULT = ["sweeps/psbs-shape.toml", "sweeps/packing-fig4.toml", "sweeps/batch-hpc2n-weeks.toml"]
WALL_CLOCK = {"sim_seconds"}


def with_path(spec, engine_path: str, out: Path):
    return spec.model_copy(
        update={
            "execution": spec.execution.model_copy(update={"engine_path": engine_path}),
            "outputs": spec.outputs.model_copy(update={"dir": str(out)}),
            "tracking": spec.tracking.model_copy(update={"enabled": False}),
        }
    )


def specs_of(name: str) -> list[tuple[str, object]]:
    """(label, spec) of a spec file, or of every sweep of ``pipeline:NAME[:SCALE]``."""
    if name.startswith("pipeline:"):
        from schedlab.pipelines.registry import get_pipeline
        from schedlab.platform.planning.validate import parse_spec

        _, pipe, *scale = name.split(":")
        datas = get_pipeline(pipe).specs(scale[0] if scale else "smoke", {})
        return [(d["name"], parse_spec(d, f"pipeline {pipe} ({d['name']})")) for d in datas]
    path = Path(name) if Path(name).is_absolute() else REPO / name
    return [(path.name, load_spec(path))]


def table(out: Path, which: str) -> pl.DataFrame | None:
    try:
        frame = schedlab.load(out, which).collect()
    except (UserError, FileNotFoundError):
        return None
    if frame.height == 0:
        return None
    keys = [c for c in ("config_id", "replication", "job_id", "time") if c in frame.columns]
    cols = sorted(c for c in frame.columns if c not in WALL_CLOCK)
    return frame.select(cols).sort(keys)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("specs", nargs="*", default=DEFAULT)
    parser.add_argument("--order", default="fast,reference", help="which path runs first (the other second)")
    args = parser.parse_args()
    import ray

    ray.init(num_cpus=None, include_dashboard=False, logging_level="ERROR")
    order = args.order.split(",")
    print(
        f"{'spec':28s} {'rows':>6s} {'same rows':>9s} {'fast wall':>10s} {'ref wall':>9s} {'wall ratio':>10s} "
        f"{'fast engines':>12s} {'ref engines':>11s} {'engine ratio':>12s}"
    )
    todo = []
    for name in args.specs:
        try:
            todo += specs_of(name)
        except UserError as err:
            print(f"{name:28s} skipped: {err}")
    for label, spec in todo:
        root = Path(tempfile.mkdtemp(prefix="schedlab-paths-"))
        try:
            reports, outs = {}, {}
            for engine_path in order:
                outs[engine_path] = root / engine_path
                started = time.perf_counter()
                report = run_sweep(with_path(spec, engine_path, outs[engine_path]))
                reports[engine_path] = (report, time.perf_counter() - started)
                if report.failures:
                    print(
                        f"{label}: {len(report.failures)} failures on the {engine_path} path; first: "
                        f"{report.failures[0]['error'][:200]}"
                    )
            same = True
            for which in ("summary", "jobs", "series"):
                a, b = table(outs["fast"], which), table(outs["reference"], which)
                if (a is None) != (b is None) or (a is not None and not a.equals(b)):
                    same = False
                    print(f"{label}: {which} rows differ between the paths")
            (fr, fw), (rr, rw) = reports["fast"], reports["reference"]
            print(
                f"{label:28s} {fr.rows_written:6d} {'yes' if same else 'NO':>9s} {fw:9.1f}s {rw:8.1f}s "
                f"{rw / fw:10.2f} {fr.sim_seconds:11.1f}s {rr.sim_seconds:10.1f}s "
                f"{rr.sim_seconds / max(fr.sim_seconds, 1e-9):12.1f}"
            )
        finally:
            shutil.rmtree(root, ignore_errors=True)
    ray.shutdown()


if __name__ == "__main__":
    main()
