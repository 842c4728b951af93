"""One way to run an instance: a job table, a policy, its parameters and
``[system]`` -> the run's rows.

A sweep's task (``schedlab.platform.execution.tasks``), a view's replay
(``schedlab.views.replay``, through ``schedlab.platform.execution.instance``
for a stored configuration) and ``schedlab simulate`` all run a policy on a
workload instance through `run_instance`, so what a view draws and what
``simulate`` prints are computed by the very code that computed the sweep's
rows: the engine's run, then the spec's extra metrics, then (``[outputs]
warmup``) the columns the warm-up cut changes, in that order.

`build_workload` draws the instance itself (a built-in workload kind or a
user's generator) from a workload point and a generator seeded with the
instance's seed words.
"""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, overload

import numpy as np

from schedlab.workloads.streams import entropy_words

if TYPE_CHECKING:
    import polars as pl

    from schedlab.engines.base import Engine, RunResult, StartedRun
    from schedlab.workloads.arrays import JobArrays

#: An extra metric as the spec declares it (``name``, ``params``: ``schedlab.platform.planning.plan.MetricSpec``)
#: with its function (per-job table, **params -> number: ``schedlab.api.metrics``).
MetricFn = tuple[Any, Callable[..., Any]]
#: After the extra metrics: (run result, metric functions) -> the columns the warm-up cut changes.
AfterRun = Callable[["RunResult", Sequence[MetricFn]], Mapping[str, Any]]


@dataclass(frozen=True)
class InstanceRun:
    """One policy on one workload instance."""

    #: The engine's result: per-job columns, its summary metrics, a time series.
    result: RunResult
    #: The spec's extra metrics, then the warm-up cut's columns (which may replace engine metrics).
    extra: dict[str, Any] = field(default_factory=dict)
    #: Wall seconds of the engine's run alone (the extra metrics excluded).
    engine_wall: float = 0.0

    @property
    def metrics(self) -> dict[str, Any]:
        """The metrics of the run's summary row: the engine's summary (as
        floats), then `extra`, keys in that order (the order of a sweep's row)."""
        return {**{k: float(v) for k, v in self.result.summary.items()}, **self.extra}


#: Built-in workload kinds, built once per process (a kind's construction reads signatures).
_KINDS: dict[str, Any] = {}


@overload
def build_workload(
    engine_name: str, point: Any, rng: np.random.Generator, shared: Any = None, arrays: Literal[False] = False
) -> pl.DataFrame: ...


@overload
def build_workload(
    engine_name: str, point: Any, rng: np.random.Generator, shared: Any = None, arrays: bool = False
) -> pl.DataFrame | JobArrays: ...


def build_workload(
    engine_name: str, point: Any, rng: np.random.Generator, shared: Any = None, arrays: bool = False
) -> pl.DataFrame | JobArrays:
    """One workload instance of ``point`` (a plan's workload point: ``kind``,
    ``params``, ``code``): a built-in kind, or a user's generator (whose table
    is checked against the engine's schema). ``shared``: the kind's shared
    input (a trace), loaded once per process. ``arrays`` (for an engine that
    reads them, ``Engine.job_arrays``): a built-in kind that can draw numpy
    columns returns them as ``schedlab.workloads.arrays.JobArrays`` (the same
    draw, no polars frame: issue 42); every other table is a polars frame."""
    from schedlab.api.workloads import check_job_table
    from schedlab.usercode import worker_load
    from schedlab.workloads.registry import workload_kind, workload_kinds

    if point.code is not None and point.kind not in workload_kinds():
        jobs = worker_load(point.code)(rng, **point.params)
        return check_job_table(jobs, engine_name, f"workload {point.kind} ({point.code.ref})")
    kind = _KINDS.get(point.kind)
    if kind is None:
        kind = _KINDS[point.kind] = workload_kind(point.kind)
    table: pl.DataFrame | JobArrays = kind.instance(rng, point.params, shared, arrays)
    return table


def seeded(seed_words: Sequence[int]) -> np.random.Generator:
    """The generator an instance is drawn with: its seed words (common random
    numbers: every policy of a replication sees the same draw).

    The seed sequence's entropy is given as the 32-bit words numpy makes of
    the seed words itself (`entropy_words`), so it is not converted again
    by every child a generator spawns (``rng.spawn(4)`` in the synthetic
    kind: most of an instance's seeding time at 50 jobs, issue 42): the very
    same pool, states and draws as ``SeedSequence(list(seed_words))``
    (tests/test_workloads_arrays.py)."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(entropy_words(seed_words))))


class Draws:
    """The workload instances of a task's work list, drawn from children made
    all at once: for each instance of a built-in kind that declares them
    (``WorkloadKind.spawns``, the array draw: ``synthetic``), the states of its
    generator's children are computed for the whole list in one vectorised
    pass (``schedlab.workloads.streams``) and set into reused generators --
    the same streams as ``seeded(words).spawn(n)``, a fifth of the cost
    (issue 42). Every other instance is drawn by `build_workload`."""

    def __init__(self, instances: Sequence[Any], arrays: bool) -> None:
        from schedlab.workloads.registry import workload_kind, workload_kinds
        from schedlab.workloads.streams import Streams, spawned_states

        self.states: dict[int, list[tuple[int, int]]] = {}
        self.streams: dict[int, Streams] = {}
        if not arrays:
            return
        known = workload_kinds()
        by_spawns: dict[int, list[int]] = {}
        for k, instance in enumerate(instances):
            point = instance.point
            if point.code is not None or point.kind not in known:
                continue
            kind = _KINDS.get(point.kind)
            if kind is None:
                kind = _KINDS[point.kind] = workload_kind(point.kind)
            if kind.spawns and kind.build_children is not None:
                by_spawns.setdefault(kind.spawns, []).append(k)
        for n, ks in by_spawns.items():
            self.streams[n] = Streams(n)
            for k, states in zip(ks, spawned_states([instances[k].seed_words for k in ks], n), strict=True):
                self.states[k] = states

    def build(self, k: int, engine_name: str, instance: Any, shared: Any, arrays: bool) -> Any:
        """Instance ``k`` of the list (`build_workload`'s table of it)."""
        states = self.states.get(k)
        if states is None:
            return build_workload(engine_name, instance.point, seeded(instance.seed_words), shared, arrays)
        kind = _KINDS[instance.point.kind]
        return kind.instance_of_children(self.streams[len(states)].set(states), instance.point.params, shared)


def extra_metrics(result: RunResult, metric_fns: Sequence[MetricFn], engine_name: str) -> dict[str, float]:
    """The spec's extra metrics of one run (``schedlab.api.metrics``)."""
    if not metric_fns:
        return {}
    import polars as pl

    table = pl.DataFrame(result.jobs)
    out = {}
    for m, fn in metric_fns:
        if m.name in result.summary:
            raise ValueError(
                f"metric {m.name!r}: the {engine_name} engine already reports a metric of that name; rename yours"
            )
        out[m.name] = float(fn(table, **m.params))
    return out


@functools.cache
def _keywords(start: Callable[..., Any]) -> frozenset[str]:
    """The names an engine's ``start`` takes (read once: check-policy starts thousands of small runs)."""
    return frozenset(inspect.signature(start).parameters)


def start_instance(
    engine: str | Engine,
    jobs: Any,
    policy: str | type,
    params: Mapping[str, Any] | None = None,
    system: Mapping[str, Any] | None = None,
    *,
    recorder: Any = None,
    hidden: Any = None,
    check: bool = False,
    watch: Callable[[Any, Any], Any] | None = None,
) -> StartedRun:
    """The instance `run_instance` runs, built and not yet run: ``policy``
    (a built-in's name or a policy class) with ``params`` on the job table
    ``jobs`` under ``system``, as the engine's reference run
    (``StartedRun.run``: ``QueueRun``, ``PackingRun``, ``BatchRun``,
    ``DfrsRun``; peek / step / done / result) and ``StartedRun.rows()``, the
    rows of that run once stepped to its end -- bit for bit `run_instance`'s
    with ``path="reference"``, whose reference path builds its run with the
    same engine function (``Engine.start``).

    For the callers that step a run themselves: an environment passes its
    agent's decision point as the policy class (a policy that leaves its
    question for the agent); ``schedlab check-policy`` passes its hooks:
    ``hidden`` (the hidden-truth guard, ``schedlab.checks.guard.hider``),
    ``check`` (the engine's own consistency checks, where it has them:
    packing, DFRS) and ``watch(policy, handle) -> object`` (what the engine
    calls instead of the policy: check mode's counters). ``recorder``: the
    engine's schedule recorder (``schedlab.views.record``). An engine without
    a steppable run, or without a hook asked for, is a UserError."""
    from schedlab.engines import get_engine
    from schedlab.errors import UserError

    eng = get_engine(engine) if isinstance(engine, str) else engine
    start = eng.declared("start")
    if start is None:
        raise UserError(f"engine {eng.name!r} declares no steppable run (Engine.start)")
    cls = eng.policy(policy) if isinstance(policy, str) else policy
    hooks = {"recorder": recorder, "hidden": hidden, "check": check, "watch": watch}
    asked = {name: value for name, value in hooks.items() if value is not None and value is not False}
    missing = sorted(name for name in asked if name not in _keywords(start))
    if missing:
        raise UserError(f"engine {eng.name!r}: its run takes no {', '.join(missing)}")
    started: StartedRun = start(jobs, cls, params, system, **asked)
    return started


def run_instance(
    engine: str | Engine,
    jobs: Any,
    policy: str | type,
    params: Mapping[str, Any] | None = None,
    system: Mapping[str, Any] | None = None,
    *,
    path: str = "fast",
    recorder: Any = None,
    metrics: Sequence[MetricFn] = (),
    after: AfterRun | None = None,
) -> InstanceRun:
    """Run ``policy`` (a built-in's name or a policy class) with ``params`` on
    the job table ``jobs`` under ``system`` (``[system]``; the engine's
    defaults fill the rest). ``path``: "fast" or "reference"
    (``schedlab.engines.base.ENGINE_PATHS``); ``recorder``: the engine's
    schedule recorder (``schedlab.views.record``; the reference loop runs).
    ``metrics``: the spec's extra metrics, computed from the per-job rows;
    ``after``: the warm-up cut's columns (``[outputs] warmup``). Same inputs,
    same numbers, to the bit, whichever caller asks."""
    from schedlab.engines import get_engine

    eng = get_engine(engine) if isinstance(engine, str) else engine
    t0 = time.perf_counter()
    result = eng.run(jobs, policy, params, system, path=path, recorder=recorder)
    wall = time.perf_counter() - t0
    extra: dict[str, Any] = extra_metrics(result, metrics, eng.name)
    if after is not None:  # warm-up deletion: the same cut for every policy of an instance
        extra.update(after(result, metrics))
    return InstanceRun(result, extra, wall)


__all__ = ["InstanceRun", "build_workload", "extra_metrics", "run_instance", "seeded", "start_instance"]
