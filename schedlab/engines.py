"""The engine registry: the one seam between the platform and the simulators.

An engine turns (job table, policy name, policy params) into per-job rows and a
summary of metrics. The CLI and the sweep platform only ever go through
:func:`get_engine`; they never reach into an engine's internals. Adding the
packing or batch simulator means adding one :class:`Engine` entry here.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import numpy as np

from schedlab.errors import UserError


@dataclass(frozen=True)
class RunResult:
    """One policy on one workload: per-job columns and summary metrics."""

    jobs: dict[str, np.ndarray]
    summary: dict[str, float]


@dataclass(frozen=True)
class Engine:
    name: str
    summary: str
    policies: Mapping[str, Any]  # name -> policy class (with .summary)
    run: Callable[..., RunResult]  # run(jobs: polars.DataFrame, policy: str, **params)
    workload_kinds: tuple[str, ...]  # workload kinds (schedlab.workloads.registry) it accepts

    def policy(self, name: str):
        try:
            return self.policies[name]
        except KeyError:
            raise UserError(
                f"unknown policy {name!r} for engine {self.name!r}; choose from: {', '.join(self.policies)}"
            ) from None


def _run_queue(jobs, policy: str, **params: Any) -> RunResult:
    """Run one queue policy over a canonical job table (see workloads.schema)."""
    from schedlab.sim.metrics import queue_summary, slowdown
    from schedlab.sim.queue import simulate

    if params:
        raise UserError(f"policy {policy!r} takes no parameters (got {', '.join(sorted(params))})")
    cls = ENGINES["queue"].policy(policy)
    submit = jobs["submit"].to_numpy()
    size = jobs["size"].to_numpy()
    estimate = jobs["estimate"].to_numpy()
    weight = jobs["weight"].to_numpy()
    started = time.perf_counter()
    completion, events = simulate(submit, size, estimate, weight, cls)
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


def _queue_policies():
    from schedlab.policies.queue import QUEUE_POLICIES

    return QUEUE_POLICIES


class _LazyPolicies(Mapping):
    """Policy table imported on first use, so `schedlab --help` stays light."""

    def __init__(self, load: Callable[[], Mapping[str, Any]]) -> None:
        self._load = load

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
        policies=_LazyPolicies(_queue_policies),
        run=_run_queue,
        workload_kinds=("synthetic", "file", "trace"),
    ),
}


def get_engine(name: str) -> Engine:
    try:
        return ENGINES[name]
    except KeyError:
        raise UserError(f"unknown engine {name!r}; choose from: {', '.join(ENGINES)}") from None
