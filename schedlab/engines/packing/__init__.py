"""The packing engine's entry: L servers with capacities, jobs with demands
packed without preemption (Psychas & Ghaderi; Tetris). The simulator is
``schedlab.engines.packing.sim.engine``; compiled kernels for the built-in single-resource
policies are in ``schedlab.engines.packing.sim.fast``, for Tetris and Slots-Fair in
``schedlab.engines.packing.sim.multi_fast``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from schedlab.engines.base import Engine, LazyPolicies, RunResult, StartedRun
from schedlab.engines.packing.columns import METRICS, UNITS
from schedlab.engines.packing.sim.system import PACKING
from schedlab.sim.system.jobs import PACKING_JOBS

if TYPE_CHECKING:
    import polars as pl


def run(
    jobs: pl.DataFrame,
    cls: type,
    params: Mapping[str, Any] | None = None,
    system: Mapping[str, Any] | None = None,
    path: str = "fast",
    recorder: Any = None,
) -> RunResult:
    """Run one packing policy over a job table: job_id, submit, duration (or
    runtime), demand (or cpu/mem). System: servers, capacity, epoch (0 = at
    every event), sample_every (0 = no time series).

    ``path="fast"``: the built-in single-resource classes FIFO-FF, BF-J, BF-S,
    BF-J/S, VQS and VQS-BF (by identity, never a subclass) run on their compiled kernel
    (``schedlab.engines.packing.sim.fast``, the same numbers to the bit), and so do the
    multi-resource Tetris and Slots-Fair (``schedlab.engines.packing.sim.multi_fast``);
    everything else, and whatever a kernel declines, runs on the reference engine.
    ``recorder``: the schedule recorder of ``simulate_packing`` (the reference path runs)."""
    sys_params = {**ENGINE.system_defaults, **(system or {})}
    return rows(*run_table(jobs, cls, path=path, recorder=recorder, **sys_params, **(params or {})))


def rows(per_job: dict[str, Any], summary: dict[str, float], samples: dict[str, Any] | None) -> RunResult:
    """The :class:`RunResult` of a run's per-job columns, summary and sampled
    series (one column per resource)."""
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


def start(
    jobs: pl.DataFrame,
    cls: type,
    params: Mapping[str, Any] | None = None,
    system: Mapping[str, Any] | None = None,
    *,
    recorder: Any = None,
    hidden: Any = None,
    check: bool = False,
    watch: Any = None,
) -> StartedRun:
    """The reference run of ``cls`` with ``params`` over a job table under
    ``system`` (the engine's defaults fill the rest), not yet stepped: the
    inputs and the run :func:`run`'s reference path builds
    (``schedlab.engines.packing.sim.table``: ``table_inputs``, ``reference_run``).
    ``recorder``, ``hidden`` and ``check``: ``simulate_packing``'s;
    ``watch(policy, cluster)``: what the engine calls instead of the policy."""
    import time

    from schedlab.engines.packing.sim.table import reference_run, table_inputs, table_outcome

    t = table_inputs(jobs, {**ENGINE.system_defaults, **(system or {}), **(params or {})})
    started = time.perf_counter()
    run = reference_run(t, cls, recorder, hidden=hidden, check=check, watch=watch)
    return StartedRun(run, lambda res, t0: rows(*table_outcome(jobs, t, res, time.perf_counter() - t0)), started)


def run_table(
    jobs: pl.DataFrame, cls: type, *, path: str = "fast", **kwargs: Any
) -> tuple[dict[str, Any], dict[str, float], dict[str, Any] | None]:
    """``schedlab.engines.packing.sim.table.run_table`` with the kernel of ``cls`` on
    the fast path: the built-in classes themselves (:func:`kernel_id`)."""
    from schedlab.engines.packing.sim.table import run_table as simulate_table

    kernel = kernel_id(cls) if path == "fast" else None
    return simulate_table(jobs, cls, path=path, kernel=kernel, **kwargs)


def compiled_unit(cls: type, params: Mapping[str, Any] | None) -> tuple[str, Any, Any] | None:
    """(name, cached, warm) of the kernel ``cls`` runs on with ``params`` (None: the reference)."""
    from schedlab.engines.packing.sim.fast_io import MULTI_KERNELS
    from schedlab.engines.packing.sim.table import fast_path

    pk = kernel_id(cls)
    module = fast_path(pk, dict(params or {}))
    if module is None:
        return None

    def warm() -> None:
        if pk in MULTI_KERNELS:
            module.warm(pk, cls)
        else:
            module.warm()

    return module.UNIT, module.cached, warm


def kernel_id(cls: type) -> str | None:
    """The id of ``cls``'s compiled kernel (``schedlab.engines.packing.sim.fast`` or
    ``multi_fast``): its registry name if it *is* a built-in packing policy
    class (identity, never a subclass), else None (the reference engine runs it)."""
    return ENGINE.builtin_name(cls)


ENGINE = Engine(
    name="packing",
    summary="L servers with capacities; jobs with demands packed without preemption (Psychas & Ghaderi, Tetris)",
    policies=LazyPolicies("schedlab.engines.packing.policies", "PACKING_POLICIES"),
    adapter=run,
    seam="schedlab.engines.packing.policies.base.PackingPolicy",
    sources=(
        "engines/base.py",
        "engines/packing/__init__.py",
        "params.py",
        "errors.py",
        "sim/system",
        "engines/packing/sim/engine.py",
        "engines/packing/sim/table.py",
        "engines/packing/sim/fast",
        "engines/packing/sim/fast_io.py",
        "engines/packing/sim/vqs_partition.py",
        "engines/packing/sim/multi_fast",
        "engines/packing/sim/tetris_fast.py",
        "sim/common/jit.py",
        "engines/packing/policies",
    ),
    workload_kinds=("packing", "trace"),
    system=PACKING,
    jobs=PACKING_JOBS,
    metrics=METRICS,
    headline=("queue_jobs_mean", "wait_mean"),
    units=UNITS,
    compiled_unit="schedlab.engines.packing:compiled_unit",
    checks="schedlab.engines.packing.checks:Check",
    recorder="schedlab.views.record:PackingRecorder",
    start=start,
    decision_point="schedlab.engines.packing.gym:PackingEnv",
    fast_path=True,
)
