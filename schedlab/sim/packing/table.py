"""The packing engine's registry adapter: :func:`run_table` and its choice of path.

``run_table`` turns a job table and the engine's system parameters into a
``simulate_packing`` run (or a compiled kernel's: ``_fast_path`` picks
``schedlab.sim.packing.fast`` or ``schedlab.sim.packing.multi_fast`` for the
built-in classes, ``fast_vqs_J`` checks VQS's J). Kept apart from the engine
itself (``schedlab.sim.packing.engine``), which re-exports these names. Each of
the two modules imports the other last, so either can be imported first.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from schedlab.errors import UserError
from schedlab.sim import system as system_params
from schedlab.sim.packing.engine import simulate_packing


def run_table(
    jobs, policy_cls, *, path: str = "fast", **params: Any
) -> tuple[dict[str, np.ndarray], dict[str, float], dict | None]:
    """Run ``policy_cls`` over a job table: columns job_id, submit, duration (or
    runtime) and either demand (one resource) or cpu/mem (whichever present, in
    that order). Params: ``servers`` (L, default 1), ``capacity`` (a number or
    one per resource, default 1), ``epoch`` (Δ; 0 or None: event-driven;
    default 1), ``sample_every`` (0 or None: no series), ``until``; anything
    else goes to the policy. The system parameters are checked against the
    engine's declaration (``schedlab.sim.system.PACKING``), the same one a
    sweep's plan checks. Optional columns ``group`` (task -> multi-task job
    id) and ``estimate`` (the scheduler's duration estimate) are passed to
    ``simulate_packing``; with ``group`` the per-job columns include it and
    the summary has JCTs. ``path``: "fast" runs a built-in single-resource
    policy class (FIFO-FF, BF-J, BF-S, BF-J/S without params, VQS and VQS-BF
    with the default or an int ``J`` up to FAST_VQS_MAX_J; by identity: never
    a subclass) on its compiled kernel (``schedlab.sim.packing.fast``, the same numbers to
    the bit), and Tetris and Slots-Fair on theirs (``schedlab.sim.packing.multi_fast``),
    unless the kernel declines; "reference" (and every other policy)
    runs ``simulate_packing``. ``sim_seconds`` times the simulation only (the
    kernel is compiled or loaded first). Returns (per-job columns, summary,
    sampled series or None)."""
    if path not in ("fast", "reference"):
        raise UserError(f"packing engine: path must be 'fast' or 'reference'; got {path!r}")
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
    group = jobs["group"].to_numpy() if "group" in cols else None
    estimate = jobs["estimate"].to_numpy().astype(float) if "estimate" in cols else None
    res = None
    fast = _fast_path(policy_cls, params) if path == "fast" else None
    if fast is not None:
        fast.warm()  # compile or load the kernel outside the timed run
        started = time.perf_counter()
        res = fast.simulate(
            policy_cls,
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
        factory = (lambda cluster: policy_cls(cluster, **params)) if params else policy_cls
        started = time.perf_counter()
        try:
            res = simulate_packing(
                submit,
                duration,
                demand,
                capacity,
                factory,
                epoch=epoch,
                sample_every=sample_every,
                until=until,
                group=group,
                estimate=estimate,
            )
        except ValueError as exc:
            raise UserError(f"packing engine: {exc}") from None
    wall = time.perf_counter() - started
    summary = res.summary(None if res_names == [""] else res_names)
    summary["sim_seconds"] = wall
    per_job = {
        "job_id": jobs["job_id"].to_numpy(),
        "submit": submit,
        "duration": duration,
        "start": res.start,
        "end": res.end,
        "wait": res.wait,
        "server": res.server,
    }
    if group is not None:
        per_job["group"] = np.asarray(group)
    return per_job, summary, res.samples


#: The largest VQS / VQS-BF ``J`` the compiled path takes (its configuration
#: weights k·Q, at most 3·2^(J-2) times the queue length, stay exact in int64).
FAST_VQS_MAX_J = 24


def fast_vqs_J(params) -> int | None:
    """VQS / VQS-BF's ``J`` for the compiled path: the default, or a given
    int 2 <= J <= FAST_VQS_MAX_J and no other parameter; None otherwise (the
    reference then runs, or raises its UserError)."""
    from schedlab.policies.packing.vqs import DEFAULT_J

    params = params or {}
    if set(params) - {"J"}:
        return None
    J = params.get("J", DEFAULT_J)
    if isinstance(J, bool) or not isinstance(J, int) or not 2 <= J <= FAST_VQS_MAX_J:
        return None
    return int(J)


def _fast_path(policy_cls, params=None):
    """``schedlab.sim.packing.fast`` if ``policy_cls`` *is* one of the built-in
    classes it compiles (identity) with parameters it takes (none; VQS and
    VQS-BF: ``J``); ``schedlab.sim.packing.multi_fast`` for Tetris and
    Slots-Fair (any parameters: its ``simulate`` declines those their
    constructors refuse); else None. numba is imported only here."""
    from schedlab.policies.packing.best_fit import BFJ, BFJS, BFS
    from schedlab.policies.packing.fifo_ff import FIFOFF
    from schedlab.policies.packing.tetris import SlotsFair, Tetris
    from schedlab.policies.packing.vqs import VQS, VQSBF

    if policy_cls is Tetris or policy_cls is SlotsFair:  # their params are checked by their own constructor
        from schedlab.sim.packing import multi_fast as packing_multi_fast

        return packing_multi_fast
    if any(policy_cls is builtin for builtin in (FIFOFF, BFJ, BFS, BFJS)):
        if params:
            return None
    elif policy_cls is VQS or policy_cls is VQSBF:
        if fast_vqs_J(params) is None:
            return None
    else:
        return None
    from schedlab.sim.packing import fast as packing_fast

    return packing_fast
