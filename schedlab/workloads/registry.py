"""Workload kinds a sweep can name: how to check their parameters (on the
driver, before anything runs), how to load shared inputs once (on the driver,
then shared through Ray's object store), and how to build one instance (in a
task, from a seeded generator).

Adding a trace reader (later issues) means adding one entry here.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, Callable

from schedlab.errors import UserError


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

    def complete(self, params: dict[str, Any], where: str) -> dict[str, Any]:
        """Params with defaults filled in; unknown or missing names are errors."""
        unknown = sorted(k for k in set(params) - set(self.defaults)
                         if not (self.open_prefix and k.startswith(self.open_prefix)))
        if unknown:
            raise UserError(
                f"{where}.{unknown[0]}: unknown parameter for workload kind {self.name!r}; "
                f"allowed: {', '.join(self.defaults)}"
            )
        full = {k: params.get(k, v) for k, v in self.defaults.items()}
        full.update({k: v for k, v in params.items() if k not in self.defaults})
        missing = [k for k, v in full.items() if v is None]
        if missing:
            raise UserError(f"{where}.{missing[0]}: required for workload kind {self.name!r}")
        return full


def _synthetic() -> WorkloadKind:
    from schedlab.workloads import synthetic

    sig = inspect.signature(synthetic.queue_workload)
    defaults = {name: p.default for name, p in sig.parameters.items() if p.kind is p.KEYWORD_ONLY}
    return WorkloadKind(
        name="synthetic",
        summary="the PSBS paper's generator: Weibull/Pareto sizes, Weibull arrivals, log-normal errors, weight classes",
        defaults=defaults,
        check=lambda params: synthetic.check_params(**params),
        build=lambda rng, params, shared: synthetic.queue_workload(rng, **params),
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
        check=check,
        build=lambda rng, params, shared: shared,
        load_shared=lambda params: read_job_table(params["path"]),
        shared_keys=("path",),
    )


def _trace() -> WorkloadKind:
    from schedlab.workloads import trace_kind

    return WorkloadKind(
        name="trace",
        summary="a real trace (reader + path + reader_* options) with windows, load/traffic scaling and estimate errors",
        defaults=trace_kind.DEFAULTS,
        check=trace_kind.check,
        build=trace_kind.build,
        load_shared=trace_kind.load_shared,
        shared_keys=trace_kind.SHARED_KEYS,
        open_prefix=trace_kind.READER_PREFIX,
        expand=trace_kind.expand,
    )


def _lublin() -> WorkloadKind:
    from schedlab.workloads import lublin

    def check(params: dict[str, Any]) -> None:
        lublin.check_params(njobs=params["njobs"], nodes=params["nodes"], params=lublin.LublinParams())

    return WorkloadKind(
        name="lublin",
        summary="the Lublin-Feitelson (2003) rigid parallel job model (runtime, procs, daily-cycle arrivals)",
        defaults={"njobs": 10_000, "nodes": 256},
        check=check,
        build=lambda rng, params, shared: lublin.lublin_workload(rng, njobs=params["njobs"], nodes=params["nodes"]),
    )


_KINDS: dict[str, Callable[[], WorkloadKind]] = {
    "synthetic": _synthetic, "file": _file, "trace": _trace, "lublin": _lublin,
}


def workload_kind(name: str, where: str = "workload.kind") -> WorkloadKind:
    try:
        return _KINDS[name]()
    except KeyError:
        raise UserError(f"{where}: unknown workload kind {name!r}; choose from: {', '.join(_KINDS)}") from None


def workload_kinds() -> list[str]:
    return list(_KINDS)
