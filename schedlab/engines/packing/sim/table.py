"""The packing engine's registry adapter: :func:`run_table` and its choice of path.

``run_table`` turns a job table and the engine's system parameters into a
``simulate_packing`` run (or a compiled kernel's: ``fast_path`` picks
``schedlab.engines.packing.sim.fast`` or ``schedlab.engines.packing.sim.multi_fast`` for the
kernel id the engine registry gives, ``fast_io.fast_vqs_J`` checks VQS's J).
Kept apart from the engine itself (``schedlab.engines.packing.sim.engine``).
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from schedlab.engines.packing.sim import system as system_params
from schedlab.engines.packing.sim.engine import PackingResult, PackingRun, misfit
from schedlab.engines.packing.sim.fast_io import MULTI_KERNELS, SINGLE_KERNELS, VQS_KERNELS, fast_vqs_J
from schedlab.errors import UserError
from schedlab.sim.common import compiling
from schedlab.sim.common.stepping import run_to_end


def run_table(
    jobs, policy_cls, *, path: str = "fast", kernel: str | None = None, recorder=None, **params: Any
) -> tuple[dict[str, np.ndarray], dict[str, float], dict | None]:
    """Run ``policy_cls`` over a job table: columns job_id, submit, duration (or
    runtime) and either demand (one resource) or cpu/mem (whichever present, in
    that order). Params: ``servers`` (L, default 1), ``capacity`` (a number or
    one per resource, default 1), ``epoch`` (Δ; 0 or None: event-driven;
    default 1), ``sample_every`` (0 or None: no series), ``until``; anything
    else goes to the policy. The system parameters are checked against the
    engine's declaration (``schedlab.engines.packing.sim.system.PACKING``), the same one a
    sweep's plan checks. Optional columns ``group`` (task -> multi-task job
    id) and ``estimate`` (the scheduler's duration estimate) are passed to
    ``simulate_packing``; with ``group`` the per-job columns include it and
    the summary has JCTs. ``path``: "fast" runs the compiled kernel of id
    ``kernel`` (the engine registry, ``schedlab.engines.packing``, gives it
    for the built-in classes themselves, by identity: never a subclass):
    FIFO-FF, BF-J, BF-S, BF-J/S without params, VQS and VQS-BF with the
    default or an int ``J`` up to FAST_VQS_MAX_J on ``schedlab.engines.packing.sim.fast``
    (the same numbers to the bit), Tetris and Slots-Fair on
    ``schedlab.engines.packing.sim.multi_fast``, unless the kernel declines or
    another process is compiling it right now (``schedlab.sim.common.compiling``);
    "reference" (and a run without a kernel) runs ``simulate_packing``. ``sim_seconds`` times the simulation only (the
    kernel is compiled or loaded first). ``recorder`` goes to
    ``simulate_packing`` (the reference path then runs). Returns (per-job columns, summary,
    sampled series or None)."""
    if path not in ("fast", "reference"):
        raise UserError(f"packing engine: path must be 'fast' or 'reference'; got {path!r}")
    t = table_inputs(jobs, params)
    submit, duration, demand, capacity = t.submit, t.duration, t.demand, t.capacity
    epoch, sample_every, until, group, estimate, params = (
        t.epoch,
        t.sample_every,
        t.until,
        t.group,
        t.estimate,
        t.params,
    )
    res = None
    fast = fast_path(kernel, params) if path == "fast" and recorder is None else None
    if fast is not None and not compiling.ready(fast.UNIT):  # compiled beside this process now: the reference runs
        fast = None
    if fast is not None:
        # compile or load the kernel outside the timed run
        if kernel in MULTI_KERNELS:  # its tables come from the policy's own constructor: it takes the class
            fast.warm(kernel, policy_cls)
            run = functools.partial(fast.simulate, kernel, policy_cls)
        else:
            fast.warm()
            run = functools.partial(fast.simulate, kernel)
        started = time.perf_counter()
        res = run(
            submit,
            duration,
            demand,
            capacity,
            epoch=epoch,
            sample_every=sample_every,
            until=until,
            group=group,
            estimate=estimate,
            params=params,
        )
    if res is None:  # the reference path (or the kernel declined)
        started = time.perf_counter()
        stepped = reference_run(t, policy_cls, recorder)
        try:
            res = run_to_end(stepped)
        except ValueError as exc:
            raise UserError(f"packing engine: {exc}") from None
    return table_outcome(jobs, t, res, time.perf_counter() - started)


@dataclass
class TableInputs:
    """A job table and system parameters as the engine takes them (:func:`table_inputs`)."""

    submit: np.ndarray
    duration: np.ndarray
    demand: np.ndarray  # n x d
    capacity: np.ndarray  # L x d
    res_names: list[str]  # [""]: one unnamed resource
    epoch: float | None
    sample_every: float | None
    until: float | None
    group: np.ndarray | None
    estimate: np.ndarray | None
    params: dict[str, Any]  # the policy's


def table_inputs(jobs, params: dict[str, Any]) -> TableInputs:
    """Read and check a job table and the parameters of :func:`run_table`
    (system parameters against the engine's declaration; the rest are the policy's)."""
    params = dict(params)
    system = {name: params.pop(name) for name in system_params.PACKING.defaults() if name in params}
    until = params.pop("until", None)
    cols = jobs.columns
    dur_col = "duration" if "duration" in cols else "runtime" if "runtime" in cols else None
    if dur_col is None:
        raise UserError("packing engine: the job table needs a 'duration' (or 'runtime') column")
    res_names = system_params.resources(cols)
    if not res_names:
        raise UserError("packing engine: the job table needs a 'demand' column or cpu/mem columns")
    system = {**system_params.PACKING.defaults(), **system_params.PACKING.check_call(system, "packing engine", cols)}
    servers, cap = system["servers"], system["capacity"]
    epoch, sample_every = system["epoch"] or None, system["sample_every"] or None
    if res_names == [""]:
        demand = jobs["demand"].to_numpy().astype(float)[:, None]
    else:
        demand = np.column_stack([jobs[c].to_numpy().astype(float) for c in res_names])
    d = demand.shape[1]
    cap_v = np.broadcast_to(np.atleast_1d(np.asarray(cap, dtype=float)), (d,))
    capacity = np.tile(cap_v, (servers, 1))
    submit = jobs["submit"].to_numpy().astype(float)
    duration = jobs[dur_col].to_numpy().astype(float)
    why = misfit(demand, capacity, jobs["job_id"])
    if why is not None:  # the workload's problem, on either path (the engine's ValueError would name the row)
        raise UserError(f"packing engine: {why}")
    group = jobs["group"].to_numpy() if "group" in cols else None
    estimate = jobs["estimate"].to_numpy().astype(float) if "estimate" in cols else None
    return TableInputs(
        submit, duration, demand, capacity, res_names, epoch, sample_every, until, group, estimate, params
    )


def reference_run(
    t: TableInputs, policy_cls, recorder=None, *, hidden=None, check: bool = False, watch=None
) -> PackingRun:
    """The reference engine's run of ``policy_cls`` over ``t``, not yet
    stepped (:func:`run_table`'s reference path; ``schedlab.engines.packing.start``
    builds the runs ``schedlab.engines.instance.start_instance`` hands out).
    ``hidden`` and ``check``: ``simulate_packing``'s hidden-truth guard and
    consistency checks; ``watch(policy, cluster)``: what the engine calls
    instead of the policy (check mode)."""
    params = t.params
    if watch is not None:
        factory = lambda cluster: watch(policy_cls(cluster, **params), cluster)  # noqa: E731
    else:
        factory = (lambda cluster: policy_cls(cluster, **params)) if params else policy_cls
    try:
        return PackingRun(
            t.submit,
            t.duration,
            t.demand,
            t.capacity,
            factory,
            epoch=t.epoch,
            sample_every=t.sample_every,
            until=t.until,
            check=check,
            group=t.group,
            estimate=t.estimate,
            hidden=hidden,
            recorder=recorder,
        )
    except ValueError as exc:
        raise UserError(f"packing engine: {exc}") from None


def table_outcome(
    jobs, t: TableInputs, res: PackingResult, wall: float
) -> tuple[dict[str, np.ndarray], dict[str, float], dict | None]:
    """:func:`run_table`'s return value for a run's result ``res`` (``wall``: its seconds)."""
    res_names = t.res_names
    summary = res.summary(None if res_names == [""] else res_names)
    summary["sim_seconds"] = wall
    per_job = {
        "job_id": jobs["job_id"].to_numpy(),
        "submit": t.submit,
        "duration": t.duration,
        "start": res.start,
        "end": res.end,
        "wait": res.wait,
        "server": res.server,
    }
    if t.group is not None:
        per_job["group"] = np.asarray(t.group)
    return per_job, summary, res.samples


def fast_path(kernel: str | None, params=None):
    """``schedlab.engines.packing.sim.fast`` if ``kernel`` is one of the kernels it
    compiles with parameters it takes (none; VQS and VQS-BF: ``J``);
    ``schedlab.engines.packing.sim.multi_fast`` for Tetris and Slots-Fair (any
    parameters: its ``simulate`` declines those their constructors refuse);
    else None. numba is imported only here."""
    if kernel in MULTI_KERNELS:
        from schedlab.engines.packing.sim import multi_fast as packing_multi_fast

        return packing_multi_fast
    if kernel in SINGLE_KERNELS:
        if params:
            return None
    elif kernel in VQS_KERNELS:
        if fast_vqs_J(params) is None:
            return None
    else:
        return None
    from schedlab.engines.packing.sim import fast as packing_fast

    return packing_fast
