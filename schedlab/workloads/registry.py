"""Workload kinds a sweep can name: how to check their parameters (on the
driver, before anything runs), how to load shared inputs once (on the driver,
then shared through Ray's object store), and how to build one instance (in a
task, from a seeded generator).

Adding a trace reader (later issues) means adding one entry here.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from schedlab.errors import UserError, UserErrors, did_you_mean, messages


@dataclass(frozen=True)
class WorkloadKind:
    name: str
    summary: str
    defaults: dict[str, Any]  # every parameter with its default (None: required)
    check: Callable[[dict[str, Any]], None]  # raises UserError naming the parameter
    build: Callable[[Any, dict[str, Any], Any], Any]  # (rng, params, shared) -> polars job table
    load_shared: Callable[[dict[str, Any]], Any] | None = None  # driver side, e.g. read a file once
    shared_keys: tuple[str, ...] = field(default=())  # params that identify the shared input
    open_prefix: str | None = None  # params with this prefix are accepted as they are (reader options)
    expand: Callable[[dict[str, Any]], list[dict[str, Any]]] | None = None  # e.g. window="all" -> 0..K-1
    #: Parameters added after sweeps were already written: a workload point
    #: leaves them out while they hold their default (``trim``), so the
    #: configuration ids of those sweeps stay valid; ``instance`` fills them in.
    late: tuple[str, ...] = field(default=())
    #: Names that must be given (default: those whose default is None).
    required: tuple[str, ...] | None = None
    #: Parameters declared integer: their result columns are Int64 (the
    #: others' numbers are Float64) -- schedlab.platform.execution.tasks, docs/columns.md.
    integers: tuple[str, ...] = field(default=())
    #: Required parameters (default None) whose values are text: their result
    #: columns are String (docs/columns.md; a default's own type says the rest).
    strings: tuple[str, ...] = field(default=())
    #: (point params) -> the parameters that do not change the random draw of
    #: an instance (e.g. a Lublin trace's ``load`` with ``same_trace``): the
    #: instance seed is then keyed by the point without them, so the points that
    #: differ only there draw the same trace (``Plan.instances``). None / ():
    #: the whole point keys the seed.
    draw_excludes: Callable[[dict[str, Any]], tuple[str, ...]] | None = None
    #: (rng, params, shared) -> the same draw as ``build`` as numpy columns
    #: (``schedlab.workloads.arrays.JobArrays``), for an engine that reads
    #: arrays (``Engine.job_arrays``): no polars frame per instance (issue 42).
    #: None: the kind only builds frames.
    build_arrays: Callable[[Any, dict[str, Any], Any], Any] | None = None
    #: The kind's array draw reads only the first ``spawns`` children of its
    #: generator (``rng.spawn(spawns)``), and ``build_children(children,
    #: params, shared)`` is that draw given them: a sweep's task then makes
    #: the children of all its instances at once (``schedlab.workloads.streams``,
    #: the same states) instead of numpy's seed sequences one by one (issue 42).
    #: 0: the kind needs its generator itself.
    spawns: int = 0
    build_children: Callable[[Any, dict[str, Any], Any], Any] | None = None

    def unknown(self, params: dict[str, Any]) -> list[str]:
        """The names of ``params`` the kind does not take, sorted."""
        return sorted(
            k for k in set(params) - set(self.defaults) if not (self.open_prefix and k.startswith(self.open_prefix))
        )

    def unknown_errors(self, params: dict[str, Any], where: str) -> list[str]:
        """One line per unknown name of ``params``."""
        allowed = ", ".join(self.defaults)
        return [
            f"{where}.{k}: unknown parameter for workload kind {self.name!r}; allowed: {allowed}"
            + did_you_mean(k, self.defaults)
            for k in self.unknown(params)
        ]

    def complete(self, params: dict[str, Any], where: str) -> dict[str, Any]:
        """Params with defaults filled in; unknown or missing names are errors
        (every one of them: `UserErrors`)."""
        from schedlab.errors import UserErrors

        unknown = self.unknown_errors(params, where)
        if unknown:
            raise UserErrors(unknown) if len(unknown) > 1 else UserError(unknown[0])
        full = {k: params.get(k, v) for k, v in self.defaults.items()}
        full.update({k: v for k, v in params.items() if k not in self.defaults})
        missing = (
            [k for k in self.required if k not in params]
            if self.required is not None
            else [k for k, v in full.items() if v is None]
        )
        if missing:
            raise UserError(f"{where}.{missing[0]}: required for workload kind {self.name!r}")
        return full

    def trim(self, params: dict[str, Any]) -> dict[str, Any]:
        """A point's parameters without the ``late`` ones at their default."""
        return {k: v for k, v in params.items() if not (k in self.late and v == self.defaults[k])}

    def instance(self, rng, params: dict[str, Any], shared: Any, arrays: bool = False):
        """Build one instance from a (trimmed) point's parameters. ``arrays``:
        as `JobArrays` when the kind can (``build_arrays``), else its frame."""
        full = {**{k: self.defaults[k] for k in self.late}, **params}
        if arrays and self.build_arrays is not None:
            return self.build_arrays(rng, full, shared)
        return self.build(rng, full, shared)

    def instance_of_children(self, children: list[Any], params: dict[str, Any], shared: Any):
        """`instance`'s array draw from the first `spawns` children of its
        generator, made by the caller (``build_children``)."""
        assert self.build_children is not None
        full = {**{k: self.defaults[k] for k in self.late}, **params}
        return self.build_children(children, full, shared)


def _synthetic() -> WorkloadKind:
    from schedlab.workloads import synthetic
    from schedlab.workloads.arrays import JobArrays

    sig = inspect.signature(synthetic.queue_columns)
    defaults = {name: p.default for name, p in sig.parameters.items() if p.kind is p.KEYWORD_ONLY}
    integers = tuple(
        name for name, p in sig.parameters.items() if p.kind is p.KEYWORD_ONLY and p.annotation in (int, "int")
    )
    return WorkloadKind(
        name="synthetic",
        summary="the PSBS paper's generator: Weibull/Pareto sizes, Weibull arrivals, log-normal errors, weight classes",
        defaults=defaults,
        check=lambda params: synthetic.check_params(**params),
        build=lambda rng, params, shared: synthetic.queue_workload(rng, **params),
        build_arrays=lambda rng, params, shared: JobArrays(
            synthetic.queue_columns(rng, **params), synthetic.WORKLOAD_SCHEMA
        ),
        spawns=synthetic.STREAMS,
        build_children=lambda children, params, shared: JobArrays(
            synthetic.queue_columns_of(children, **params), synthetic.WORKLOAD_SCHEMA
        ),
        integers=integers,
    )


def _file() -> WorkloadKind:
    from schedlab.workloads.files import read_job_table

    def check(params: dict[str, Any]) -> None:
        if not isinstance(params["path"], str):
            raise UserError(f"path: must be a file path string; got {params['path']!r}")

    return WorkloadKind(
        name="file",
        summary="a job table from CSV or Parquet (job_id, submit, size[, estimate, weight]), replayed as is",
        defaults={"path": None},
        strings=("path",),
        check=check,
        build=lambda rng, params, shared: shared,
        load_shared=lambda params: read_job_table(params["path"]),
        shared_keys=("path",),
    )


def _trace() -> WorkloadKind:
    from schedlab.workloads import trace_kind

    return WorkloadKind(
        name="trace",
        summary=(
            "a real trace (reader + path + reader_* options) with windows, load/traffic scaling and estimate errors"
        ),
        defaults=trace_kind.DEFAULTS,
        strings=("reader", "path"),
        check=trace_kind.check,
        build=trace_kind.build,
        load_shared=trace_kind.load_shared,
        shared_keys=trace_kind.SHARED_KEYS,
        open_prefix=trace_kind.READER_PREFIX,
        expand=trace_kind.expand,
        late=trace_kind.LATE,
        integers=("window", "max_procs", "cores_per_node", "sequence", "sequence_within", "sequence_start"),
    )


def _lublin() -> WorkloadKind:
    """The Lublin-Feitelson model; ``load`` > 0 rescales arrival times so the
    trace offers that load to ``nodes`` processors (0 keeps the model's own
    arrivals): the inter-arrival times from the first submission are
    multiplied by one constant, run times and sizes unchanged.

    ``same_trace = true`` makes the DFRS paper's *scaled* set (RR-7659
    §5.3.2: "we multiplied the job inter-arrival times in each generated trace
    by 9 computed constants, obtaining 9 new traces with identical job mixes
    but offered load [...] levels of 0.1 to 0.9"): the instance seed leaves
    ``load`` out (``draw_excludes``), so replication r of every load draws
    the same trace (jobs and annotation) and scales it to its load; with
    ``same_trace = false`` (the default, as before) every load point draws
    its own trace. Annotation: ``annotation`` (workloads/annotate.py); the
    paper's synthetic rule is ``"dfrs-synthetic"`` with ``nodes = 128``."""
    from schedlab.workloads import annotate, lublin

    def check(params: dict[str, Any]) -> None:
        lublin.check_params(njobs=params["njobs"], nodes=params["nodes"], params=lublin.LublinParams())
        load = params["load"]
        # Any finite load >= 0 runs: > 1 is an overloaded machine (queues grow, every job still ends) --
        # exactly what transforms.scale_rigid_load accepts; it needs two submit times, so two jobs.
        if isinstance(load, bool) or not isinstance(load, (int, float)) or not (load >= 0 and math.isfinite(load)):
            raise UserError(f"load: must be a finite number >= 0 (0: the model's own arrivals); got {load!r}")
        if load and isinstance(params["njobs"], int) and params["njobs"] < 2:
            raise UserError(
                f"load: scaling to load {load!r} needs at least 2 jobs (the span of their arrivals); "
                f"njobs is {params['njobs']}"
            )
        if not isinstance(params["same_trace"], bool):
            raise UserError(f"same_trace: must be true or false; got {params['same_trace']!r}")
        annotate.check(params)
        if params["memory"] == "trace":
            raise UserError('memory: "trace" needs a trace with memory fields; use a fraction or "uniform"')
        if params["annotation"] == "dfrs-hpc2n":
            raise UserError(
                'annotation: "dfrs-hpc2n" needs the SWF memory fields of a trace; '
                'the Lublin model\'s rule is "dfrs-synthetic"'
            )

    def build(rng, params: dict[str, Any], shared: Any):
        from schedlab.workloads.transforms import scale_rigid_load

        jobs = lublin.lublin_workload(rng, njobs=params["njobs"], nodes=params["nodes"])
        jobs = scale_rigid_load(jobs, params["load"], params["nodes"]) if params["load"] else jobs
        return annotate.annotate(jobs, rng, params) if annotate.wanted(params) else jobs

    return WorkloadKind(
        name="lublin",
        summary="the Lublin-Feitelson (2003) rigid parallel job model (runtime, procs, daily-cycle arrivals)",
        defaults={"njobs": 10_000, "nodes": 256, "load": 0.0, **annotate.DEFAULTS, "same_trace": False},
        check=check,
        build=build,
        late=(*annotate.DEFAULTS, "same_trace"),
        draw_excludes=lambda params: ("load",) if params.get("same_trace") else (),
        integers=("njobs", "nodes", "cores_per_node"),
    )


def _packing() -> WorkloadKind:
    """Psychas & Ghaderi §VII-A slotted workloads. ``rate`` is Poisson jobs per
    slot; or give ``intensity`` (alpha) and ``intensity_servers`` (L) for the
    paper's rate = alpha x L x mu / mean size, mu = 1 / mean_service."""
    import numpy as np

    from schedlab.workloads.packing_synthetic import check_expected_jobs, finite, packing_workload

    defaults: dict[str, Any] = {
        "slots": None,
        "rate": 0.0,
        "intensity": 0.0,
        "intensity_servers": 0,
        "sizes": [],
        "probs": [],
        "uniform_lo": 0.0,
        "uniform_hi": 0.0,
        "service": "geometric",
        "mean_service": 100,
    }

    def arguments(params: dict[str, Any]) -> dict[str, Any]:
        """packing_workload's keyword arguments (intensity made a rate)."""
        p = dict(params)
        sizes, probs = p.pop("sizes") or None, p.pop("probs") or None
        lo, hi = p.pop("uniform_lo"), p.pop("uniform_hi")
        uniform = (lo, hi) if (lo or hi) else None
        alpha, servers = p.pop("intensity"), p.pop("intensity_servers")
        if not (finite(alpha) and alpha >= 0):
            raise UserError(f"intensity: must be a finite number >= 0 (0: give rate instead); got {alpha!r}")
        if alpha:
            if not (isinstance(servers, int) and servers >= 1):
                raise UserError(f"intensity_servers: must be an integer >= 1 with intensity; got {servers!r}")
            if not (finite(p["mean_service"]) and p["mean_service"] >= 1):  # packing_workload's rule, before /
                raise UserError(f"mean_service: must be a finite number >= 1; got {p['mean_service']!r}")
            mean_size = 0.0  # a malformed sizes / probs / uniform: packing_workload names it
            if uniform is not None and finite(lo) and finite(hi):
                mean_size = (lo + hi) / 2
            elif sizes and all(map(finite, sizes)) and (not probs or len(probs) == len(sizes)):
                w = np.asarray(probs, float) if probs else np.full(len(sizes), 1 / len(sizes))
                # products then numpy's pairwise sum, not np.dot: BLAS's kernel (and so the last bit) depends
                # on the CPU (schedlab.sim.common.portable.dot, which this layer below sim/ does not import)
                mean_size = float(np.add.reduce(np.multiply(np.asarray(sizes, float), w)))
            if mean_size > 0:
                p["rate"] = alpha * servers / p["mean_service"] / mean_size
        return {"sizes": sizes, "probs": probs, "uniform": uniform, **p}

    def check(params):
        slots = params["slots"]
        if isinstance(slots, bool) or not isinstance(slots, int) or slots < 1:
            raise UserError(f"slots: must be an integer >= 1; got {slots!r}")
        args = arguments(params)
        packing_workload(np.random.default_rng(0), **{**args, "slots": 0})  # every other rule, on an empty draw
        check_expected_jobs(args["rate"], slots)

    return WorkloadKind(
        name="packing",
        summary=(
            "Psychas & Ghaderi slotted workloads: Poisson arrivals, discrete or uniform demands, "
            "geometric/fixed service"
        ),
        defaults=defaults,
        check=check,
        build=lambda rng, params, shared: packing_workload(rng, **arguments(params)),
        integers=("slots", "intensity_servers"),
    )


def user_kind(code, label: str) -> WorkloadKind:
    """A workload kind from a user's generator ``fn(rng, *, param=default,
    ...) -> polars.DataFrame`` (``[workload] use = "gen.py:fn"``): its
    parameters are the function's typed keyword arguments; the table it
    returns is checked against the engine's job-table schema
    (``schedlab.api.workloads.check_job_table``) in the task."""
    import inspect as _inspect

    from schedlab.params import check_params, declared
    from schedlab.usercode import worker_load

    fn = code.load()
    if not callable(fn):
        raise UserError(f"{code.ref} is not a function (a generator is fn(rng, **params) -> job table)")
    decl = declared(fn, skip=1)
    defaults = {n: (None if p.default is _inspect.Parameter.empty else p.default) for n, p in decl.items()}

    def check(params: dict[str, Any]) -> None:
        try:
            check_params(fn, params, "", skip=1, what="generator", sep="")
        except UserError as err:  # "alpha: ..." (one line each) -- build_plan prefixes workload.
            lines = [m.removeprefix(": ") for m in messages(err)]
            raise (UserErrors(lines) if len(lines) > 1 else UserError(lines[0])) from None

    def build(rng, params: dict[str, Any], shared: Any):
        return worker_load(code)(rng, **params)

    required = tuple(n for n, p in decl.items() if p.default is _inspect.Parameter.empty)
    integers = tuple(n for n, p in decl.items() if p.is_integer)
    return WorkloadKind(
        name=label,
        summary=(fn.__doc__ or "").strip().split("\n")[0],
        defaults=defaults,
        check=check,
        build=build,
        required=required,
        integers=integers,
    )


_KINDS: dict[str, Callable[[], WorkloadKind]] = {
    "synthetic": _synthetic,
    "file": _file,
    "trace": _trace,
    "lublin": _lublin,
    "packing": _packing,
}


def workload_kind(name: str, where: str = "workload.kind") -> WorkloadKind:
    try:
        return _KINDS[name]()
    except KeyError:
        raise UserError(
            f"{where}: unknown workload kind {name!r}; choose from: {', '.join(_KINDS)}{did_you_mean(name, _KINDS)}"
        ) from None


def workload_kinds() -> list[str]:
    return list(_KINDS)
