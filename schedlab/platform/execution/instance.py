"""A planned instance run: a configuration of a plan on one replication.

What a sweep's task does for each (instance, configuration), reachable one at
a time: the workload instance drawn from the replication's seed words
(`schedlab.engines.instance.build_workload`), the warm-up cut of its point
(``[outputs] warmup``, `warmup_hook`), and the policy run with the spec's
extra metrics (`schedlab.engines.instance.run_instance`). ``schedlab view``
re-simulates a stored row with `run_planned` and a recorder; the sweep's
tasks call the same two steps, so the two agree by construction.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from schedlab.engines.instance import InstanceRun, MetricFn, build_workload, run_instance, seeded

if TYPE_CHECKING:
    import polars as pl

    from schedlab.engines.base import RunResult
    from schedlab.platform.planning.plan import Config, Instance, Plan, WorkloadPoint
    from schedlab.workloads.arrays import JobArrays


def warmup_hook(
    engine_name: str, instance: Instance, jobs: pl.DataFrame | JobArrays, shared: Any
) -> Callable[[RunResult, Sequence[MetricFn]], dict[str, Any]] | None:
    """With ``[outputs] warmup``: a function (run result, extra metrics) ->
    the columns the cut changes (``schedlab.platform.statistics.warmup``: one cut per
    workload point, from pilot instances); None without warm-up deletion."""
    point = instance.point
    method = getattr(point, "warmup", None)
    if method is None:
        return None
    from schedlab.platform.statistics import warmup

    d = warmup.point_cut(
        method, instance.seed_words[0], point.point_id, lambda rng: build_workload(engine_name, point, rng, shared)
    )
    from schedlab.workloads.arrays import column

    classes = column(jobs, "weight_class") if "weight_class" in jobs.columns else None
    return lambda result, metric_fns: warmup.apply(result, d, classes, metric_fns)


def shared_input(point: WorkloadPoint) -> Any:
    """The point's workload kind's shared input (a trace), or None for a kind without one."""
    from schedlab.platform.planning.plan import shared_input_key
    from schedlab.workloads.registry import workload_kind

    if shared_input_key(point) is None:
        return None
    kind = workload_kind(point.kind)
    assert kind.load_shared is not None  # shared_input_key gives a key only to kinds that load one
    return kind.load_shared(point.params)


@dataclass(frozen=True)
class PlannedRun:
    """A configuration run on one replication of its workload point."""

    config: Config
    point: WorkloadPoint
    instance: Instance
    #: The workload instance (job table) the run simulated.
    jobs: pl.DataFrame
    run: InstanceRun


def run_planned(
    plan: Plan, config_id: str, replication: int, *, recorder: Any = None, path: str = "fast"
) -> PlannedRun:
    """Configuration ``config_id`` of ``plan`` on replication ``replication``:
    the same instance, seed words, extra metrics and warm-up cut as the
    sweep's row of that key (``InstanceRun.metrics`` equals the row's
    metrics to the bit). A config id not in the plan is a `KeyError`."""
    from schedlab.engines import get_engine
    from schedlab.usercode import worker_load

    engine = get_engine(plan.engine_ref)  # your own engine: loaded (and known by name) from its code
    config = plan.configs[config_id]
    point = next(p for p in plan.points if any(c.config_id == config_id for c in p.configs))
    (instance,) = plan.instances([replication], [point])
    shared = shared_input(point)
    jobs = build_workload(plan.engine, point, seeded(instance.seed_words), shared)
    policy = worker_load(config.code) if config.code is not None else config.policy
    metric_fns = [(m, m.function()) for m in plan.metrics]
    after = warmup_hook(plan.engine, instance, jobs, shared)
    run = run_instance(
        engine,
        jobs,
        policy,
        config.policy_params,
        config.system,
        path=path,
        recorder=recorder,
        metrics=metric_fns,
        after=after,
    )
    return PlannedRun(config, point, instance, jobs, run)


__all__ = ["PlannedRun", "run_planned", "shared_input", "warmup_hook"]
