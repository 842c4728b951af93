"""The queue engine's entry: one shared server, preemptive fluid sharing (the
PSBS paper). The simulator is ``schedlab.sim.queue.engine`` (readable reference, the
seam user policies run on) with compiled kernels for the built-in policies in
``schedlab.sim.queue.fast``."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from schedlab.engines.base import Engine, LazyPolicies, RunResult
from schedlab.errors import UserError
from schedlab.sim.system import SYSTEMS

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
    """Run one queue policy over a canonical job table (see workloads.schema).

    ``path="fast"``: a built-in policy class (by identity, never a subclass)
    runs on its compiled kernel (``schedlab.sim.queue.fast``, the same
    completion times to the bit); everything else, whatever the kernels
    decline, and a kernel another process is compiling right now
    (``schedlab.sim.common.compiling``) run on the reference engine
    (``schedlab.sim.queue.engine``).
    ``recorder``: the schedule recorder of ``simulate`` (the reference runs)."""
    from schedlab.sim.queue.engine import simulate

    if system:
        raise UserError(f"the queue engine takes no system parameters (got {', '.join(sorted(system))})")
    submit = jobs["submit"].to_numpy()
    size = jobs["size"].to_numpy()
    estimate = jobs["estimate"].to_numpy()
    weight = jobs["weight"].to_numpy()
    out = None
    kernel = kernel_id(cls) if path == "fast" and not params and recorder is None else None
    if kernel is not None:  # numba is imported only here
        from schedlab.sim.common import compiling
        from schedlab.sim.queue import fast

        if compiling.ready(fast.unit(kernel)):  # else compiled beside this process now: the reference runs
            fast.warm(kernel)  # compile or load the kernel outside the timed run
            started = time.perf_counter()
            out = fast.simulate(kernel, submit, size, estimate, weight)
    if out is None:  # the reference path (or the kernel declined)
        factory = (lambda server: cls(server, **params)) if params else cls
        started = time.perf_counter()
        out = simulate(submit, size, estimate, weight, factory, recorder=recorder)
    completion, events = out
    return outcome(jobs, completion, events, time.perf_counter() - started)


def outcome(jobs: pl.DataFrame, completion: Any, events: int, wall: float) -> RunResult:
    """The :class:`RunResult` of a run's completion times and event count
    (``wall``: its seconds): :func:`run`'s, and that of a run stepped by
    another driver (``schedlab.gym.queue``)."""
    from schedlab.sim.common.metrics import queue_summary, slowdown

    submit = jobs["submit"].to_numpy()
    size = jobs["size"].to_numpy()
    sojourn = completion - submit
    classes = jobs["weight_class"].to_numpy() if "weight_class" in jobs.columns else None
    slowdowns = slowdown(sojourn, size)
    summary = queue_summary(size, sojourn, classes, slowdowns)
    summary.update(makespan=float(completion.max()), events=float(events), sim_seconds=wall)
    per_job = {
        "job_id": jobs["job_id"].to_numpy(),
        "submit": submit,
        "size": size,
        "estimate": jobs["estimate"].to_numpy(),
        "weight": jobs["weight"].to_numpy(),
        "completion": completion,
        "sojourn": sojourn,
        "slowdown": slowdowns,
    }
    return RunResult(per_job, summary)


def kernel_id(cls: type) -> str | None:
    """The id of ``cls``'s compiled kernel in ``schedlab.sim.queue.fast``: its
    registry name if it *is* a built-in queue policy class (identity, never a
    subclass), else None (the reference engine runs it)."""
    return ENGINE.builtin_name(cls)


ENGINE = Engine(
    name="queue",
    summary="one shared server, preemptive fluid sharing (PSBS paper)",
    policies=LazyPolicies("schedlab.policies.queue", "QUEUE_POLICIES"),
    adapter=run,
    seam="schedlab.policies.queue.base.QueuePolicy",
    sources=(
        "engines/base.py",
        "engines/queue.py",
        "params.py",
        "errors.py",
        "sim/queue/engine.py",
        "sim/queue/fast",
        "sim/common/jit.py",
        "sim/common/metrics.py",
        "policies/queue",
    ),
    workload_kinds=("synthetic", "file", "trace"),
    system=SYSTEMS["queue"],
    fast_path=True,
)
