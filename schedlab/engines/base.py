"""What an engine is: the :class:`Engine` record the registry holds, the
:class:`RunResult` every adapter returns and the engine paths.

Each engine module of this package (``queue``, ``packing``, ``batch``,
``dfrs``) declares one ``ENGINE``: its policy table, the public seam user
policies subclass, its ``[system]`` schema (``schedlab.sim.system``), the
sources that define its results and the adapter ``run`` from a job table to
rows. The platform and the CLI only ever go through
``schedlab.engines.get_engine``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from schedlab.engines.declare import Column, EngineUnits, lazy
from schedlab.errors import PolicyError, UserError
from schedlab.sim.system import SystemSchema, check_workload_points
from schedlab.sim.system.jobs import JobColumns

if TYPE_CHECKING:
    import polars as pl


@dataclass(frozen=True)
class RunResult:
    """One policy on one workload: per-job columns, summary metrics and, for
    engines that sample one, a time series (columns of equal length)."""

    jobs: dict[str, np.ndarray]
    summary: dict[str, float]
    series: dict[str, np.ndarray] | None = None


@dataclass
class StartedRun:
    """One instance built and not yet run (an engine's ``start``,
    ``schedlab.engines.instance.start_instance``): the engine's steppable
    reference run (``QueueRun``, ``PackingRun``, ``BatchRun``, ``DfrsRun``:
    peek / step / done / result, ``schedlab.sim.common.stepping``) and how its
    result becomes the rows, so whoever steps it (a sweep's reference path, an
    environment, ``check-policy``) gets the rows ``run_instance`` gives."""

    #: The engine's run, not yet stepped.
    run: Any
    #: ``finish(run.result(), started) -> RunResult``: the rows of the finished run
    #: (``started``: when it began, by ``time.perf_counter``, for ``sim_seconds``).
    finish: Callable[[Any, float], RunResult]
    #: When the run began (``time.perf_counter``; the engine's own loop times from there).
    started: float

    def rows(self) -> RunResult:
        """The rows of the finished run (the engine's per-job columns and summary)."""
        return self.finish(self.run.result(), self.started)


def run_to_end_rows(started: StartedRun) -> RunResult:
    """Step a started run to its end and return its rows: every engine's
    reference path (its ``adapter`` without a compiled kernel), so that path
    and ``start`` build the very same run."""
    from schedlab.sim.common.stepping import run_to_end

    run_to_end(started.run)
    return started.rows()


_DIGESTS: dict[str, str] = {}

#: Values of ``Engine.run``'s ``path``: "fast" (the default) runs a built-in
#: policy on its compiled kernel when the engine has one and the reference
#: otherwise; "reference" always runs the readable Python engine. Both give the
#: same numbers (see ``schedlab.engines.queue.sim.fast``); ``[execution] engine_path``
#: and ``schedlab simulate --engine-path`` choose it.
ENGINE_PATHS = ("fast", "reference")


@dataclass(frozen=True)
class Engine:
    name: str
    summary: str
    policies: Mapping[str, Any]  # name -> built-in policy class (with .summary)
    adapter: Callable[..., RunResult]  # adapter(jobs: polars.DataFrame, policy_cls, params, system)
    workload_kinds: tuple[str, ...]  # workload kinds (schedlab.workloads.registry) it accepts
    #: The spec's [system] table: every parameter's type, range, default and
    #: the cross-field rules (``schedlab.sim.system``); the engine's
    #: ``run_table`` checks its arguments against the same declaration.
    system: SystemSchema = field(default_factory=lambda: SystemSchema(""))  # default: no parameters
    #: The policy seam (``schedlab.api.<engine>.Policy``): user classes must subclass it.
    seam: str | type = ""
    #: Positional arguments of a policy's constructor before its parameters (the engine's handle).
    handle_args: int = 1
    #: Source files and folders (relative to the schedlab package) whose
    #: content defines this engine's results: hashed into ``digest()``.
    sources: tuple[str, ...] = ()
    #: The adapter takes ``path=`` (a compiled fast path for built-in policies).
    fast_path: bool = False
    #: The job table it reads (checked on every generator's table; read by the environments).
    jobs: JobColumns = field(default_factory=JobColumns)
    #: ``jobs -> jobs``: a generator's table completed to the engine's canonical
    #: form and validated (or a "module:attr" string; None: only ``jobs`` is checked
    #: and rows must be sorted by submit).
    complete_jobs: Any = None
    #: The metrics of its summary rows (docs/columns.md, tests/test_columns_doc.py).
    metrics: tuple[Column, ...] = ()
    #: The metrics a sweep's MLflow parent run and views show first.
    headline: tuple[str, ...] = ()
    #: The units its figures and schedule views speak in (None: the generic ones).
    units: EngineUnits | None = None
    #: ``schedlab check-policy``: its invariants, an ``schedlab.checks.common.EngineCheck``
    #: subclass (or "module:attr"); None: the engine declares none.
    checks: Any = None
    #: ``schedlab view``: a recorder class (or "module:attr") the engine loop
    #: records into, with ``finish(per_job, summary, jobs, system) -> Schedule``; None: no view.
    recorder: Any = None
    #: ``start(jobs, cls, params, system, **hooks) -> StartedRun`` (or "module:attr"):
    #: its reference run built from a job table the way ``adapter`` builds it, not yet
    #: stepped (``schedlab.engines.instance.start_instance``); hooks: ``recorder``,
    #: ``hidden``, ``check``, ``watch`` as the engine takes them. None: no steppable run.
    start: Any = None
    #: Its Gymnasium environment: the class whose steps are its decision points
    #: (or "module:attr"); None: no environment.
    decision_point: Any = None
    #: Its vector environment (``gymnasium.make_vec`` builds it unless asked for
    #: ``vectorization_mode="sync"`` or ``"async"``): a class or "module:attr"; None: Gymnasium's own.
    vector_decision_point: Any = None
    #: ``compiled_unit(cls, params) -> (name, cached, warm) | None``: the compiled
    #: function a built-in policy runs on, which the sweep compiles beside the
    #: first round (``schedlab.platform.execution.precompile``); or "module:attr".
    compiled_unit: Any = None
    #: Offered loads (a workload's ``load``) at or above which the engine has no
    #: steady state, warned about by ``schedlab validate`` (None: no such bound).
    unstable_load: float | None = None
    #: ``[outputs] warmup`` (MSER-5 deletion of the start of each run) applies:
    #: its per-job rows are one stream in submission order with a ``sojourn``.
    warmup: bool = False
    #: ``schedlab simulate`` needs a job-table file (no built-in generator fits it).
    needs_workload_file: bool = False
    #: ``schedlab simulate --workload-file``: ``read(path, procs) -> (jobs, system,
    #: described)`` (or "module:attr"); None: a job-table file (CSV / Parquet) and no ``--procs``.
    read_workload_file: Any = None
    #: ``schedlab simulate``: ``lines(summary) -> [(label, value)]`` (or "module:attr");
    #: None: every summary metric.
    summary_lines: Any = None
    #: ``schedlab simulate --jobs-out``: the per-job columns written (empty: all).
    jobs_out: tuple[str, ...] = ()
    #: ``schedlab view --batsim-csv``: the schedule can be written as Batsim's jobs CSV.
    batsim: bool = False
    #: Its adapter, ``start`` and ``warmup`` read a job table given as
    #: ``schedlab.workloads.arrays.JobArrays`` too (through
    #: ``schedlab.workloads.arrays.column``): a sweep's task then draws the
    #: built-in kinds that can as numpy columns, without a polars frame per
    #: instance (issue 42). False: always a polars frame.
    job_arrays: bool = False
    #: A user's engine (``engine = "file.py:Name"``): the digest of its code
    #: (``schedlab.engines.user`` sets it), part of ``digest()``.
    code_sha256: str = ""

    def __post_init__(self) -> None:
        if not self.system.engine:  # the default: no [system] parameters, named after the engine
            object.__setattr__(self, "system", SystemSchema(self.name))

    def declared(self, what: str) -> Any:
        """One of the declarations given by reference (``checks``,
        ``recorder``, ``decision_point``, ``complete_jobs``, ``start``), imported now."""
        return lazy(getattr(self, what))

    @property
    def system_defaults(self) -> dict[str, Any]:
        return self.system.defaults()

    def digest(self) -> str:
        """SHA-256 (16 hex digits) of the engine's and its built-in policies'
        source (``sources``): recorded in every result row as
        ``schedlab_digest``, so rows from before and after a change to the
        engine can be told apart (``schedlab results`` warns when a table
        mixes them)."""
        if self.name not in _DIGESTS:
            from pathlib import Path

            from schedlab.usercode import file_digest

            root = Path(__file__).resolve().parent.parent  # the schedlab package
            h = hashlib.sha256()
            for rel in sorted(self.sources):
                h.update(rel.encode() + b"\0" + file_digest(root / rel).encode())
            _DIGESTS[self.name] = h.hexdigest()[:16]
        if self.code_sha256:  # a user's engine: its own code too
            return hashlib.sha256(f"{_DIGESTS[self.name]}\0{self.code_sha256}".encode()).hexdigest()[:16]
        return _DIGESTS[self.name]

    def check_system(self, system: Mapping[str, Any], where: str) -> None:
        """Plan time: unknown names, every value of every grid axis and the
        rules between fields; errors name ``where.field[i]``."""
        self.system.check_spec(system, where)

    def check_system_workload(
        self, system: Mapping[str, Any], kind: Any, points: Any, where: str, workload_where: str
    ) -> None:
        """Plan time: the rules between system values and the workload's job
        table (e.g. a capacity list's length), for every workload point."""
        check_workload_points(self.system, system, kind, points, where, workload_where)

    def policy_param_names(self, policy: str | type) -> set[str]:
        """Keyword parameters the policy's constructor takes (beyond its handle)."""
        from schedlab.params import declared

        cls = self.policy(policy) if isinstance(policy, str) else policy
        return set(declared(cls, self.handle_args))

    def policy(self, name: str) -> type:
        try:
            cls: type = self.policies[name]
            return cls
        except KeyError:
            raise UserError(
                f"unknown policy {name!r} for engine {self.name!r}; choose from: {', '.join(self.policies)} "
                f'(or your own class with use = "file.py:Name")'
            ) from None

    def builtin_name(self, cls: type) -> str | None:
        """The registry name of ``cls`` if it *is* one of this engine's
        built-in policy classes (identity, never a subclass: a user's subclass
        may change anything), else None. An engine's adapter passes it down as
        the id of the class's compiled kernel: the simulators never import
        the policies to recognise them."""
        return next((name for name, builtin in self.policies.items() if cls is builtin), None)

    def seam_class(self) -> type:
        """The base class every policy of this engine subclasses."""
        import importlib

        if isinstance(self.seam, type):  # a user's engine may give its seam class itself
            return self.seam
        module, _, attr = self.seam.rpartition(".")
        seam: type = getattr(importlib.import_module(module), attr)
        return seam

    @property
    def seam_name(self) -> str:
        """How messages name the seam: the public ``schedlab.api.<engine>.Policy``
        of a built-in engine, the class itself of a user's engine."""
        if isinstance(self.seam, type):
            return f"{self.seam.__module__}.{self.seam.__qualname__}"
        return f"schedlab.api.{self.name}.Policy"

    def check_policy_class(self, obj: Any, where: str) -> type:
        """``obj`` (loaded user code) must be a class implementing this
        engine's seam, with every abstract method defined."""
        seam = self.seam_class()
        if not (isinstance(obj, type) and issubclass(obj, seam)):
            what = type(obj).__name__ if not isinstance(obj, type) else f"class {obj.__name__}"
            raise UserError(f"{where}: {what} is not a {self.name} policy: subclass {self.seam_name}")
        missing = sorted(getattr(obj, "__abstractmethods__", ()))
        if missing:
            raise UserError(
                f"{where}: class {obj.__name__} does not implement {', '.join(missing)} (required by {self.seam_name})"
            )
        return obj

    def check_policy_params(self, cls: type, params: Mapping[str, Any], where: str, sep: str = ".") -> None:
        """Names and types of one grid point of a policy's params (declared
        by its constructor); policies built without a handle (DFRS) are also
        constructed, so the rules their constructors enforce apply now.
        Messages read ``{where}{sep}{param}: ...`` (a spec field path by
        default; ``sep=" "`` for command-line options)."""
        from schedlab.params import check_params

        check_params(cls, dict(params), where, self.handle_args, sep=sep)
        if self.handle_args == 0:
            try:
                cls(**params)
            except (TypeError, ValueError) as err:
                raise UserError(f"{where}: {err}") from None

    def run(
        self,
        jobs: pl.DataFrame,
        policy: str | type,
        params: Mapping[str, Any] | None = None,
        system: Mapping[str, Any] | None = None,
        *,
        path: str = "fast",
        recorder: Any = None,
    ) -> RunResult:
        """Run one policy (a built-in name or a policy class) over a job
        table. A policy that asks for something the engine forbids raises
        :class:`PolicyError` naming the policy, the time and the job.
        ``path``: "fast" (compiled kernels for the built-in policies that have
        one, the reference otherwise) or "reference" (see ENGINE_PATHS).
        ``recorder`` (``schedlab.views``): the engine loop's schedule
        recorder; given, the reference path runs (the only one that records,
        with the same numbers to the bit). None, the default, records nothing."""
        if path not in ENGINE_PATHS:
            raise UserError(f"engine path must be one of {', '.join(ENGINE_PATHS)}; got {path!r}")
        cls = self.policy(policy) if isinstance(policy, str) else policy
        try:
            extra = {} if recorder is None else {"recorder": recorder}
            if self.fast_path:
                return self.adapter(jobs, cls, params, system, path=path if recorder is None else "reference", **extra)
            return self.adapter(jobs, cls, params, system, **extra)
        except PolicyError as err:
            label = getattr(cls, "name", "") or cls.__name__
            if not str(err).startswith("policy "):
                err.args = (f"policy {label!r}: {err}", *err.args[1:])
            raise


class LazyPolicies(Mapping[str, Any]):
    """Policy table (``module.attr``) imported on first use, so `schedlab
    --help` stays light."""

    def __init__(self, module: str, attr: str) -> None:
        self._where = (module, attr)

    def _load(self) -> Mapping[str, Any]:
        import importlib

        table: Mapping[str, Any] = getattr(importlib.import_module(self._where[0]), self._where[1])
        return table

    def __getitem__(self, key: str) -> Any:
        return self._load()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._load())

    def __len__(self) -> int:
        return len(self._load())
