"""Plan-time checks of ``[system]`` values against a sweep's workload points,
before any instance is drawn: the rules that read the job table
(:func:`check_workload_points`, on :func:`job_columns`) and the engines'
oversize rules (:func:`check_jobs_fit`, on :func:`probe_jobs`); a tiny job
table to construct policies on (:func:`tiny_jobs`). Split from
the declarations because it reads workload kinds (traces, generators), not
an engine's parameters.

Jobs wider than the machine (``SystemSchema.fits``, the engines' own
``oversize = "error"`` rule) are checked at plan time on what is known of a
workload point's jobs without drawing its instances (:func:`probe_jobs`):

* ``trace``: the point's instance itself -- the window, ``max_procs`` and the
  ``cores_per_node`` annotation do not depend on the seed, so the widths are
  exact (and building it also reports what the build would reject at run
  time: an empty window, a load that cannot be scaled, a missing column).
  ``memory = "uniform"`` is taken at ``memory_hi``, the largest it draws.
  Not checked with ``arrival_load`` (arrivals drawn per replication move jobs
  between windows).
* ``lublin``: the model's bound. Every width from 1 to ``nodes`` processors
  has a positive probability in every draw (``schedlab.workloads.lublin``),
  so a machine narrower than the widest job the model can draw fails some
  replication as soon as it draws one: rejected, with ``oversize = "drop"``
  as the way to run it anyway. Memory: the number, or ``memory_hi``.
* other kinds (synthetic, file, packing, your own generator) have no widths
  for these rules; their instances are checked at run time.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from schedlab.errors import UserError
from schedlab.sim.system.schema import SystemSchema

#: Generated kinds: the parameters that make an instance tiny without
#: changing its columns (the packing kind's own check draws slots = 0 too;
#: a lublin load only moves submit times, and one job cannot be rescaled).
_TINY_DRAW: dict[str, dict[str, Any]] = {
    "packing": {"slots": 0},
    "lublin": {"njobs": 1, "load": 0.0},
    "synthetic": {"njobs": 1},
}
#: Columns a shared-input kind's instance may add to the parsed input
#: (trace_kind.build: grouping, estimates, weights; the annotation).
_ADDED_BY_BUILD = frozenset({"group", "estimate", "weight"})
_ADDED_BY_ANNOTATION = frozenset({"procs", "procs_trace", "cpu_need", "memory"})


def job_columns(kind, params: Mapping[str, Any], shared_cache: dict) -> frozenset[str] | None:
    """The columns a workload point's job table will have, as far as they are
    known without drawing its instances; None if they are not.

    Generated kinds (packing, lublin): the columns of a tiny draw from a fixed
    generator -- columns never depend on the draw. Shared-input kinds (trace,
    file): the parsed input's columns (read once per input, through the
    reader's cache; ``shared_cache`` memoises them across workload points),
    plus every column building an instance may add -- an over-approximation,
    so a rule that needs a column to be absent never fires wrongly."""
    full = {**{k: kind.defaults[k] for k in kind.late}, **params}
    if kind.load_shared is not None:
        key = json.dumps(
            {
                k: v
                for k, v in full.items()
                if k in kind.shared_keys or (kind.open_prefix and k.startswith(kind.open_prefix))
            },
            sort_keys=True,
            default=str,
        )
        if key not in shared_cache:
            shared_cache[key] = frozenset(kind.load_shared(full).columns)
        cols = shared_cache[key]
        from schedlab.workloads import annotate

        annotated = all(k in full for k in annotate.DEFAULTS) and annotate.wanted(full)
        return cols | _ADDED_BY_BUILD | (_ADDED_BY_ANNOTATION if annotated else frozenset())
    tiny = _TINY_DRAW.get(kind.name)
    if tiny is None:
        return None
    try:
        return frozenset(kind.instance(np.random.default_rng(0), {**full, **tiny}, None).columns)
    except (UserError, ValueError):  # the tiny draw itself is not a valid instance: say unknown
        return None


def tiny_jobs(kind, params: Mapping[str, Any]) -> Any:
    """A generated workload point's tiny draw (no job or one, its columns):
    plan time constructs policies on it, to report what a constructor
    refuses of a [system] point; None for kinds without a tiny draw or
    when the draw fails."""
    tiny = _TINY_DRAW.get(kind.name)
    if tiny is None:
        return None
    full = {**{k: kind.defaults[k] for k in kind.late}, **params, **tiny}
    try:
        return kind.instance(np.random.default_rng(0), full, None)
    except (UserError, ValueError):  # the tiny draw itself is not a valid instance: nothing to probe with
        return None


def check_workload_points(
    schema: SystemSchema, table: Mapping[str, Any], kind, points, where: str, workload_where: str
) -> None:
    """Plan time: the table-reading rules of ``schema`` for every workload
    point (``points``: their params). The columns of a point are looked up
    only when a rule asks (e.g. only for a capacity list), so specs that give
    no such value never read a trace here."""
    if not any(r.reads_table for r in schema.rules):
        return
    shared_cache: dict = {}
    for params in points:
        memo: list = []

        def columns(params=params, memo=memo):
            if not memo:
                try:
                    memo.append(job_columns(kind, params, shared_cache))
                except UserError as err:  # reading the input failed: run would fail the same way
                    raise UserError(f"{workload_where}: {err}") from None
            return memo[0]

        schema.check_workload(table, columns, where)


@dataclass(frozen=True)
class Probe:
    """What plan time knows of a workload point's jobs: ``jobs`` holds every
    job a run could be given (``exact``: the instance's own rows) or the
    widest the model can draw; ``what`` says which, for messages."""

    jobs: Any  # polars.DataFrame
    what: str
    exact: bool


def probe_jobs(kind, params: Mapping[str, Any], shared_cache: dict) -> Probe | None:
    """The jobs of a workload point as far as they are known without a seed
    (module docstring); None for kinds without widths. A build that fails
    raises its UserError (run would fail the same way)."""
    import polars as pl

    from schedlab.workloads import annotate

    full = {**{k: kind.defaults[k] for k in kind.late}, **params}
    if kind.name == "lublin":
        nodes = int(full["nodes"])
        jobs = pl.DataFrame(
            {"job_id": [0], "submit": [0.0], "runtime": [1.0], "procs": [nodes]},
            schema={"job_id": pl.Int64, "submit": pl.Float64, "runtime": pl.Float64, "procs": pl.Int64},
        )
        if annotate.wanted(full):
            jobs = annotate.annotate(jobs, np.random.default_rng(0), full)
        if full["memory"] == "uniform":
            jobs = jobs.with_columns(pl.lit(float(full["memory_hi"])).alias("memory"))
        tasks = int(jobs["procs"][0])
        wide = f"{nodes} processors" + (f" ({tasks} tasks)" if tasks != nodes else "")
        mem = f" with memory up to {float(full['memory_hi']):g}" if full["memory"] == "uniform" else ""
        return Probe(
            jobs,
            f"Lublin jobs drawn for workload.nodes = {nodes} can be {wide} wide{mem} "
            f"(every width up to nodes can be drawn)",
            exact=False,
        )
    if kind.name == "trace" and not full["arrival_load"]:
        key = json.dumps(
            {k: v for k, v in full.items() if k in kind.shared_keys or k.startswith(kind.open_prefix)},
            sort_keys=True,
            default=str,
        )
        if key not in shared_cache:
            shared = kind.load_shared(full)
            # sorted once here (stable, as build sorts each window): build's own sort is then a no-op
            shared_cache[key] = shared.sort("submit", maintain_order=True) if "submit" in shared.columns else shared
        jobs = kind.instance(np.random.default_rng(0), params, shared_cache[key])
        if full["memory"] == "uniform" and "memory" in jobs.columns:
            jobs = jobs.with_columns(pl.lit(float(full["memory_hi"])).alias("memory"))
        where = f"window {full['window']} of " if full["window_length"] else ""
        return Probe(jobs, f"{where}{full['path']}", exact=True)
    return None


def check_jobs_fit(
    schema: SystemSchema, table: Mapping[str, Any], kind, points, where: str, workload_where: str
) -> None:
    """Plan time: the engine's oversize rule (``schema.fits``) for every
    workload point and every grid point of ``table`` with oversize "error",
    on :func:`probe_jobs`; a point whose build fails is reported as a
    workload error. Errors are collected: one line per system grid point
    (naming the first workload point that does not fit and how many more do
    not), plus one per failed build."""
    from schedlab.errors import Collector

    errors = Collector()
    needed = schema.fits is not None or kind.name == "trace"  # a trace's build can fail whatever the engine
    if not needed:
        return
    shared_cache: dict = {}
    probes = []
    for params in points:
        with errors.check(f"{workload_where}: "):
            probe = probe_jobs(kind, params, shared_cache)
            if probe is not None:
                probes.append(probe)
    if schema.fits is not None:
        for point, path in schema._grid(table, where):
            if point.get("oversize", "error") != "error":
                continue
            bad = [(probe, found) for probe in probes if (found := schema.fits(probe.jobs, point)) is not None]
            if not bad:
                continue
            probe, (field_, machine, job, need) = bad[0]
            more = f" (and {len(bad) - 1} more workload points)" if len(bad) > 1 else ""
            if not field_:  # a job table the engine cannot read: the workload's mistake
                errors.add(f"{workload_where}: {machine} ({probe.what}){more}")
                continue
            at, _ = path(field_)
            if probe.exact:
                text, how = f"{machine} but job {job} of {probe.what}{more} needs {need}", "every run of it fails"
            else:
                text, how = f"{machine} but {probe.what}{more}", "a run fails as soon as it draws such a job"
            errors.add(
                f'{at}: {text}; with oversize = "error" (the default) {how} -- give a larger machine, '
                f'narrower jobs, or oversize = "drop" (such jobs dropped and counted)'
            )
    errors.raise_any()
