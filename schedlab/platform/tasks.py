"""What one Ray task does: build workload instances and run policies on them.

Runs in a worker process; pure apart from the simulation itself. A task never
raises for a failing simulation: the exception becomes a failure record (config,
replication, error text) so the sweep goes on, and Ray only retries *system*
failures (a dead worker or node), for which the driver's sink keeps exactly one
row per key.
"""

from __future__ import annotations

import traceback
import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from schedlab.platform.plan import Config, Instance


@dataclass
class TaskResult:
    summary: list[dict[str, Any]]
    jobs: list[tuple[str, pa.Table]]  # (policy, per-job rows)
    failures: list[dict[str, Any]]
    sim_seconds: float
    series: list[tuple[str, pa.Table]] = field(default_factory=list)  # (policy, time-series rows)


def _column_value(v: Any) -> Any:
    """Parameters as stable column types: numbers -> float64, lists -> JSON
    text, others as they are."""
    if isinstance(v, list):
        return json.dumps(v)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return v
    return float(v)


def _keyed_table(config: Config, replication: int, columns: dict) -> pa.Table:
    n = len(next(iter(columns.values())))
    return pa.table({
        "config_id": pa.array([config.config_id] * n, pa.string()),
        "replication": pa.array(np.full(n, replication, dtype=np.int64)),
        **{k: pa.array(v) for k, v in columns.items()},
    })


def _failure(config: Config, replication: int, error: str) -> dict[str, Any]:
    return {"config_id": config.config_id, "replication": replication, "policy": config.policy, "error": error}


def run_instances(engine_name: str, work: list[tuple[Instance, list[Config]]], shared: Any, per_job: bool) -> TaskResult:
    """Run, for each workload instance, the configurations still to do."""
    from schedlab.engines import get_engine
    from schedlab.workloads.registry import workload_kind

    engine = get_engine(engine_name)
    out = TaskResult([], [], [], 0.0)
    for instance, configs in work:
        point = instance.point
        try:
            rng = np.random.default_rng(np.random.SeedSequence(list(instance.seed_words)))
            jobs = workload_kind(point.kind).instance(rng, point.params, shared)
        except Exception as err:  # noqa: BLE001 - becomes a failure record, see module docstring
            text = f"building the workload failed: {type(err).__name__}: {err}"
            out.failures += [_failure(c, instance.replication, text) for c in configs]
            continue
        for config in configs:
            try:
                result = engine.run(jobs, config.policy, config.policy_params, config.system)
            except Exception as err:  # noqa: BLE001
                detail = "".join(traceback.format_exception_only(type(err), err)).strip()
                out.failures.append(_failure(config, instance.replication, detail))
                continue
            out.sim_seconds += result.summary.get("sim_seconds", 0.0)
            row = {
                "config_id": config.config_id,
                "replication": instance.replication,
                "policy": config.policy,
                "engine": engine_name,
                "workload_kind": point.kind,
                "seed": instance.seed_label,
                **{k: _column_value(v) for k, v in config.flat_params().items()},
                **{k: float(v) for k, v in result.summary.items()},
            }
            out.summary.append(row)
            if per_job:
                out.jobs.append((config.policy, _keyed_table(config, instance.replication, result.jobs)))
            if result.series:
                out.series.append((config.policy, _keyed_table(config, instance.replication, result.series)))
    return out
