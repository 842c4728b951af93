"""The engine registry: the one seam between the platform and the simulators.

An engine turns (job table, policy name, policy params) into per-job rows and a
summary of metrics. The CLI and the sweep platform only ever go through
:func:`get_engine`; they never reach into an engine's internals. Adding the
packing or batch simulator means adding one :class:`Engine` entry here.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np

from schedlab.errors import PolicyError, UserError
from schedlab.sim.system import SYSTEMS, SystemSchema, check_workload_points


@dataclass(frozen=True)
class RunResult:
    """One policy on one workload: per-job columns, summary metrics and, for
    engines that sample one, a time series (columns of equal length)."""

    jobs: dict[str, np.ndarray]
    summary: dict[str, float]
    series: dict[str, np.ndarray] | None = None


_DIGESTS: dict[str, str] = {}

#: Values of ``Engine.run``'s ``path``: "fast" (the default) runs a built-in
#: policy on its compiled kernel when the engine has one and the reference
#: otherwise; "reference" always runs the readable Python engine. Both give the
#: same numbers (see ``schedlab.sim.queue_fast``); ``[execution] engine_path``
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
    system: SystemSchema = field(default_factory=lambda: SYSTEMS["queue"])
    #: The policy seam (``schedlab.api.<engine>.Policy``): user classes must subclass it.
    seam: str = ""
    #: Positional arguments of a policy's constructor before its parameters (the engine's handle).
    handle_args: int = 1
    #: Source files and folders (relative to the schedlab package) whose
    #: content defines this engine's results: hashed into ``digest()``.
    sources: tuple[str, ...] = ()
    #: The adapter takes ``path=`` (a compiled fast path for built-in policies).
    fast_path: bool = False

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

            from schedlab.usercode import source_digest

            root = Path(__file__).resolve().parent
            h = hashlib.sha256()
            for rel in sorted(self.sources):
                h.update(rel.encode() + b"\0" + source_digest(root / rel).encode())
            _DIGESTS[self.name] = h.hexdigest()[:16]
        return _DIGESTS[self.name]

    def check_system(self, system: Mapping[str, Any], where: str) -> None:
        """Plan time: unknown names, every value of every grid axis and the
        rules between fields; errors name ``where.field[i]``."""
        self.system.check_spec(system, where)

    def check_system_workload(self, system: Mapping[str, Any], kind, points, where: str, workload_where: str) -> None:
        """Plan time: the rules between system values and the workload's job
        table (e.g. a capacity list's length), for every workload point."""
        check_workload_points(self.system, system, kind, points, where, workload_where)

    def policy_param_names(self, policy: str | type) -> set[str]:
        """Keyword parameters the policy's constructor takes (beyond its handle)."""
        from schedlab.params import declared

        cls = self.policy(policy) if isinstance(policy, str) else policy
        return set(declared(cls, self.handle_args))

    def policy(self, name: str):
        try:
            return self.policies[name]
        except KeyError:
            raise UserError(
                f"unknown policy {name!r} for engine {self.name!r}; choose from: {', '.join(self.policies)} "
                f"(or your own class with use = \"file.py:Name\")"
            ) from None

    def seam_class(self) -> type:
        """The base class every policy of this engine subclasses."""
        import importlib

        module, _, attr = self.seam.rpartition(".")
        return getattr(importlib.import_module(module), attr)

    def check_policy_class(self, obj: Any, where: str) -> type:
        """``obj`` (loaded user code) must be a class implementing this
        engine's seam, with every abstract method defined."""
        seam = self.seam_class()
        if not (isinstance(obj, type) and issubclass(obj, seam)):
            what = type(obj).__name__ if not isinstance(obj, type) else f"class {obj.__name__}"
            raise UserError(f"{where}: {what} is not a {self.name} policy: subclass schedlab.api.{self.name}.Policy")
        missing = sorted(getattr(obj, "__abstractmethods__", ()))
        if missing:
            raise UserError(f"{where}: class {obj.__name__} does not implement {', '.join(missing)} "
                            f"(required by schedlab.api.{self.name}.Policy)")
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

    def run(self, jobs, policy: str | type, params: Mapping[str, Any] | None = None,
            system: Mapping[str, Any] | None = None, *, path: str = "fast") -> RunResult:
        """Run one policy (a built-in name or a policy class) over a job
        table. A policy that asks for something the engine forbids raises
        :class:`PolicyError` naming the policy, the time and the job.
        ``path``: "fast" (compiled kernels for the built-in policies that have
        one, the reference otherwise) or "reference" (see ENGINE_PATHS)."""
        if path not in ENGINE_PATHS:
            raise UserError(f"engine path must be one of {', '.join(ENGINE_PATHS)}; got {path!r}")
        cls = self.policy(policy) if isinstance(policy, str) else policy
        try:
            if self.fast_path:
                return self.adapter(jobs, cls, params, system, path=path)
            return self.adapter(jobs, cls, params, system)
        except PolicyError as err:
            label = getattr(cls, "name", "") or cls.__name__
            if not str(err).startswith("policy "):
                err.args = (f"policy {label!r}: {err}", *err.args[1:])
            raise


def _run_queue(jobs, cls: type, params: Mapping[str, Any] | None = None,
               system: Mapping[str, Any] | None = None, path: str = "fast") -> RunResult:
    """Run one queue policy over a canonical job table (see workloads.schema).

    ``path="fast"``: a built-in policy class (by identity, never a subclass)
    runs on its compiled kernel (``schedlab.sim.queue_fast``, the same
    completion times to the bit); everything else, and whatever the kernels
    decline, runs on the reference engine (``schedlab.sim.queue``)."""
    from schedlab.sim.metrics import queue_summary, slowdown
    from schedlab.sim.queue import simulate

    if system:
        raise UserError(f"the queue engine takes no system parameters (got {', '.join(sorted(system))})")
    submit = jobs["submit"].to_numpy()
    size = jobs["size"].to_numpy()
    estimate = jobs["estimate"].to_numpy()
    weight = jobs["weight"].to_numpy()
    out = None
    fast = _queue_fast(cls) if path == "fast" and not params else None
    if fast is not None:
        fast.warm(cls)  # compile or load the kernel outside the timed run
        started = time.perf_counter()
        out = fast.simulate(cls, submit, size, estimate, weight)
    if out is None:  # the reference path (or the kernel declined)
        factory = (lambda server: cls(server, **params)) if params else cls
        started = time.perf_counter()
        out = simulate(submit, size, estimate, weight, factory)
    completion, events = out
    wall = time.perf_counter() - started
    sojourn = completion - submit
    classes = jobs["weight_class"].to_numpy() if "weight_class" in jobs.columns else None
    summary = queue_summary(size, sojourn, classes)
    summary.update(makespan=float(completion.max()), events=float(events), sim_seconds=wall)
    per_job = {
        "job_id": jobs["job_id"].to_numpy(),
        "submit": submit,
        "size": size,
        "estimate": estimate,
        "weight": weight,
        "completion": completion,
        "sojourn": sojourn,
        "slowdown": slowdown(sojourn, size),
    }
    return RunResult(per_job, summary)


def _queue_fast(cls: type):
    """The fast-path module if ``cls`` is one of the built-in queue policy
    classes (identity), else None. numba is imported only here."""
    from schedlab.policies.queue import QUEUE_POLICIES

    if not any(cls is builtin for builtin in QUEUE_POLICIES.values()):
        return None
    from schedlab.sim import queue_fast

    return queue_fast


def _run_packing(jobs, cls: type, params: Mapping[str, Any] | None = None,
                 system: Mapping[str, Any] | None = None, path: str = "fast") -> RunResult:
    """Run one packing policy over a job table: job_id, submit, duration (or
    runtime), demand (or cpu/mem). System: servers, capacity, epoch (0 = at
    every event), sample_every (0 = no time series).

    ``path="fast"``: the built-in single-resource classes FIFO-FF, BF-J, BF-S,
    BF-J/S, VQS and VQS-BF (by identity, never a subclass) run on their compiled kernel
    (``schedlab.sim.packing_fast``, the same numbers to the bit); everything
    else, and whatever the kernel declines, runs on the reference engine."""
    from schedlab.sim.packing import run_table

    sys_params = {**ENGINES["packing"].system_defaults, **(system or {})}
    per_job, summary, samples = run_table(jobs, cls, path=path, **sys_params, **(params or {}))
    series = None
    if samples is not None:
        series = {}
        for key, values in samples.items():
            arr = np.asarray(values, dtype=float)
            if arr.ndim == 1:
                series[key] = arr
            else:  # one column per resource
                for r in range(arr.shape[1]):
                    series[key if arr.shape[1] == 1 else f"{key}_{r}"] = arr[:, r]
    return RunResult(per_job, summary, series)


def _run_batch(jobs, cls: type, params: Mapping[str, Any] | None = None,
               system: Mapping[str, Any] | None = None, path: str = "fast") -> RunResult:
    """Run one batch policy over a rigid-job table: job_id, submit, runtime,
    procs[, requested_time] (SWF traces, Lublin). System: model ("procs" or
    "nodes"), procs (model procs; 0 = the trace's machine size from a
    ``machine_procs`` column if the table carries one), nodes (model nodes),
    tasks_per_node, oversize ("error" or "drop"), cpu_need (when the table
    has no such column) and bound (the DFRS view: underutilization and Theorem
    1's max-stretch lower bound, see ``schedlab.sim.batch``).

    ``path="fast"``: FCFS and EASY themselves (by identity, never a subclass)
    without params run on their compiled kernels (``schedlab.sim.batch_fast``,
    the same start and end times to the bit); everything else, and whatever
    the kernels decline, runs on the reference engine."""
    from schedlab.sim.batch import run_table

    sys_params = {**ENGINES["batch"].system_defaults, **(system or {})}
    per_job, summary = run_table(jobs, cls, **sys_params, path=path, **(params or {}))
    return RunResult(per_job, summary)


def _run_dfrs(jobs, cls: type, params: Mapping[str, Any] | None = None,
              system: Mapping[str, Any] | None = None) -> RunResult:
    """Run one DFRS policy over a rigid-job table: job_id, submit, runtime,
    procs[, cpu_need, memory] (Lublin, SWF traces). System: nodes, penalty (s
    per pause or migration), cpu_need and memory (the per-task annotation used
    when the table has no such columns -- explicit assumptions: the DFRS
    paper's own annotation rules are in its web supplement, not available
    here), bound (also compute the LP max-stretch lower bound and the
    degradation), oversize ("error" or "drop"). Policy params: period (/per)."""
    from schedlab.sim.dfrs import run_table

    sys_params = {**ENGINES["dfrs"].system_defaults, **(system or {})}
    per_job, summary = run_table(jobs, cls, **sys_params, **(params or {}))
    return RunResult(per_job, summary)


class _LazyPolicies(Mapping):
    """Policy table (``module.attr``) imported on first use, so `schedlab
    --help` stays light."""

    def __init__(self, module: str, attr: str) -> None:
        self._where = (module, attr)

    def _load(self) -> Mapping[str, Any]:
        import importlib

        return getattr(importlib.import_module(self._where[0]), self._where[1])

    def __getitem__(self, key):
        return self._load()[key]

    def __iter__(self):
        return iter(self._load())

    def __len__(self):
        return len(self._load())


ENGINES: dict[str, Engine] = {
    "queue": Engine(
        name="queue",
        summary="one shared server, preemptive fluid sharing (PSBS paper)",
        policies=_LazyPolicies("schedlab.policies.queue", "QUEUE_POLICIES"),
        adapter=_run_queue,
        seam="schedlab.policies.queue.base.QueuePolicy",
        sources=("engines.py", "params.py", "errors.py", "sim/queue.py", "sim/queue_fast", "sim/jit.py", "sim/metrics.py",
                 "policies/queue"),
        workload_kinds=("synthetic", "file", "trace"),
        fast_path=True,
    ),
    "packing": Engine(
        name="packing",
        summary="L servers with capacities; jobs with demands packed without preemption (Psychas & Ghaderi, Tetris)",
        policies=_LazyPolicies("schedlab.policies.packing", "PACKING_POLICIES"),
        adapter=_run_packing,
        seam="schedlab.policies.packing.base.PackingPolicy",
        sources=("engines.py", "params.py", "errors.py", "sim/system.py", "sim/packing.py", "sim/packing_fast.py",
                 "sim/jit.py", "policies/packing"),
        workload_kinds=("packing", "trace"),
        system=SYSTEMS["packing"],
        fast_path=True,
    ),
    "batch": Engine(
        name="batch",
        summary="rigid parallel jobs space-shared on a homogeneous cluster, no preemption (FCFS, EASY backfilling)",
        policies=_LazyPolicies("schedlab.policies.batch", "BATCH_POLICIES"),
        adapter=_run_batch,
        seam="schedlab.policies.batch.base.BatchPolicy",
        sources=("engines.py", "params.py", "errors.py", "sim/system.py", "sim/batch.py", "sim/batch_fast.py",
                 "sim/jit.py", "sim/stretch_bound.py", "policies/batch"),
        workload_kinds=("trace", "lublin"),
        system=SYSTEMS["batch"],
        fast_path=True,
    ),
    "dfrs": Engine(
        name="dfrs",
        summary="DFRS: VM time-sharing of parallel jobs with pausing/migration (Greedy*, GreedyP*, GreedyPM*, /per; OPT=MIN/AVG)",
        policies=_LazyPolicies("schedlab.policies.dfrs", "DFRS_POLICIES"),
        adapter=_run_dfrs,
        seam="schedlab.policies.dfrs.base.DfrsPolicy",
        sources=("engines.py", "params.py", "errors.py", "sim/system.py", "sim/dfrs.py", "sim/stretch_bound.py", "policies/dfrs"),
        handle_args=0,
        workload_kinds=("trace", "lublin"),
        system=SYSTEMS["dfrs"],
    ),
}


def get_engine(name: str) -> Engine:
    try:
        return ENGINES[name]
    except KeyError:
        raise UserError(f"unknown engine {name!r}; choose from: {', '.join(ENGINES)}") from None
