"""Invariants of the DFRS engine (tasks of parallel jobs as VMs on nodes:
fractional CPU, no memory overcommit, pausing and migration at a penalty),
checked on small random workloads.

Why each holds for every correct DFRS policy:

* ``memory`` -- the model forbids it: the memory of a node never exceeds 1
  (the engine's ``DfrsCapacityError`` on a placement that overfills a node,
  and ``check_state`` after every event in check mode, ``check=True``).
* ``consistent`` -- the state stays consistent: every mapping change is
  valid (pause or move only running jobs, place only waiting or paused ones,
  one node per task, existing nodes) and after every event only running jobs
  hold nodes, the per-node bookkeeping is exact, yields are in [0, 1] and no
  node's CPU is over-allocated (``check_state``); and, since a job
  progresses at its yield <= 1, no job ends before release + processing time.
* ``completes`` -- every job fits the empty cluster, so a correct policy
  completes every job: no idle cluster with pending jobs (the engine's
  error), no livelock. Only periodic policies can loop forever (the other
  events are finitely many); one is declared livelocked when, at a periodic
  call, no job has progressed, arrived or completed for ``STALL_FACTOR``
  times the time the whole workload needs when run one job after another
  (span of submits + sum of runtimes + one penalty per job + one period):
  jobs paused or migrated over and over so that none ever leaves its
  penalty, or kept waiting for good. That rule is the engine's own guard
  (``DfrsLivelock``, ``schedlab.engines.dfrs.sim.events.STALL_FACTOR``), the same in
  a sweep. ``MAX_CALLS`` policy calls in one run is
  a backstop (progress ever smaller, never finishing).
* ``deterministic`` -- the engine is deterministic: two runs give
  bit-identical start and end times, pauses and migrations.
* ``no-processing-access`` -- a scheduler does not know processing times:
  in check mode ``state.processing`` is a guard (``schedlab.checks.guard``)
  refusing reads from outside ``schedlab.engines.dfrs.sim.events`` (a finished job's
  processing time is its virtual time, ``state.vt``, known by then).
* ``runs`` -- the policy raises nothing.

Workloads: 1..4 nodes, penalty 300 s or 0 or 30, 1..12 jobs with equal
submit times, runtimes from a short list (0 included) or a range, wide jobs
(as many tasks as the cluster's memory holds, one per node, ...), CPU needs
and memory per task from short lists (1, 0.5, ...) or ranges.
"""

from __future__ import annotations

import math

from schedlab.checks.common import (
    MAX_JOBS,
    EngineCheck,
    Invariant,
    Workload,
    arrivals,
    crashed,
    first_difference,
    swallowed_reads,
    violation,
)

#: A job ends no earlier than release + processing, up to the yield
#: tolerance of ``check_state`` (CPU_CHECK_TOL = 1e-6: a yield may exceed 1
#: by that much) times 10, relative to the processing time, plus 1e-9 of the
#: time scale for rounding.
END_REL_TOL = 1e-5
#: Policy calls in one run before the policy is declared stuck (a /per policy
#: with period >= 1 s needs at most ~1e5 on these workloads).
MAX_CALLS = 1_000_000
#: Most tasks per generated job (keeps MCB8's packing small).
MAX_TASKS = 16

INVARIANTS = (
    Invariant("memory", "the memory of a node never exceeds 1"),
    Invariant(
        "consistent",
        "every mapping change is valid and the state stays consistent (only running jobs hold "
        "nodes, exact bookkeeping, yields in [0, 1], CPU per node <= 1); no job ends before "
        "release + processing time",
    ),
    Invariant(
        "completes", "every job completes (no idle cluster with pending jobs, no livelock of pauses and migrations)"
    ),
    Invariant(
        "deterministic", "two runs on the same workload give bit-identical start and end times, pauses and migrations"
    ),
    Invariant("no-processing-access", "the policy never reads state.processing (the true processing times)"),
    Invariant("runs", "the policy raises no exception"),
)


class _Stuck(Exception):
    pass


class _Watched:
    """The policy as the engine sees it in check mode: every attribute passes
    through (``opt``, ``period``, ``allocate``); the callbacks are counted
    (``MAX_CALLS``). The livelock rule is the engine's own guard
    (``DfrsLivelock``, ``STALL_FACTOR``), the same in a sweep."""

    def __init__(self, policy) -> None:
        self._policy = policy
        self._calls = 0

    def __getattr__(self, name):
        return getattr(self._policy, name)

    def _count(self, state) -> None:
        self._calls += 1
        if self._calls > MAX_CALLS:
            raise _Stuck(f"t={state.now}: {MAX_CALLS} policy calls without finishing the workload")

    def on_arrival(self, state, job):
        self._count(state)
        return self._policy.on_arrival(state, job)

    def on_completion(self, state):
        self._count(state)
        return self._policy.on_completion(state)

    def on_period(self, state):
        self._count(state)
        return self._policy.on_period(state)


def _watch(policy, handle) -> _Watched:
    """``start_instance``'s ``watch``: a DFRS policy has no handle."""
    return _Watched(policy)


def _workloads():
    from hypothesis import strategies as st

    from schedlab.engines.dfrs.sim import MEM_EPS

    gap = st.one_of(st.sampled_from([0.0, 100.0, 600.0, 10.0, 1000.0]), st.floats(0.0, 3000.0))
    runtime = st.one_of(st.sampled_from([100.0, 600.0, 1000.0, 10.0, 0.0, 3600.0]), st.floats(0.0, 5000.0))
    cpu = st.one_of(st.sampled_from([1.0, 0.5, 0.25, 0.75]), st.floats(0.05, 1.0))
    mem = st.one_of(st.sampled_from([0.5, 0.25, 1.0, 0.1, 0.3, 0.6]), st.floats(0.05, 1.0))

    @st.composite
    def job(draw, nodes: int):
        m = draw(mem)
        most = min(MAX_TASKS, nodes * math.floor((1.0 + MEM_EPS) / m))
        wide = sorted({most, nodes, max(1, most - 1)}, reverse=True)
        tasks = draw(st.one_of(st.sampled_from([1, *wide]), st.integers(1, most)))
        return draw(gap), draw(runtime), tasks, draw(cpu), m

    @st.composite
    def workload(draw) -> Workload:
        nodes = draw(st.one_of(st.sampled_from([2, 1, 3, 4])))
        penalty = draw(st.sampled_from([300.0, 0.0, 30.0]))
        jobs = draw(st.lists(job(nodes), min_size=1, max_size=MAX_JOBS))
        submit = arrivals(jobs)
        return Workload(
            {
                "job": list(range(len(jobs))),
                "submit": submit,
                "runtime": [j[1] for j in jobs],
                "procs": [j[2] for j in jobs],
                "cpu_need": [j[3] for j in jobs],
                "memory": [j[4] for j in jobs],
            },
            {"nodes": nodes, "penalty": penalty},
        )

    return workload()


class Check(EngineCheck):
    engine = "dfrs"
    invariants = INVARIANTS

    def workloads(self):
        return _workloads()

    def run(self, w: Workload):
        """The final state of the policy's run on ``w``: the instance a sweep
        runs (``schedlab.engines.instance.start_instance``), built in check mode
        (processing times guarded, the engine's invariants checked at every
        event, the policy's calls counted) and stepped to its end."""
        from schedlab.checks.guard import HiddenTruthError, hider
        from schedlab.engines.dfrs.sim import DfrsCapacityError, DfrsCheckError
        from schedlab.engines.instance import start_instance
        from schedlab.errors import PolicyError
        from schedlab.sim.common.stepping import run_to_end

        guard = hider("schedlab.engines.dfrs.sim.events", "the true processing times (state.processing)")
        try:
            started = start_instance(
                self.engine, w.table(), self.cls, self.params, w.system, hidden=guard, check=True, watch=_watch
            )
            res = run_to_end(started.run)
        except Exception as err:  # noqa: BLE001 - every failure of the policy is a finding
            if isinstance(err, HiddenTruthError):
                raise violation("no-processing-access", str(err)) from None
            swallowed_reads(guard, "no-processing-access")
            if isinstance(err, (DfrsCapacityError, DfrsCheckError)):
                memory = "memory" in str(err) and ("overfills" in str(err) or "> 1" in str(err))
                raise violation("memory" if memory else "consistent", str(err)) from None
            if isinstance(err, _Stuck):
                raise violation("completes", f"the policy never finishes: {err}") from None
            if isinstance(err, PolicyError):
                raise violation("completes", str(err)) from None
            raise crashed(err) from None
        swallowed_reads(guard, "no-processing-access")
        return res.state

    def check(self, w: Workload) -> None:
        a = self.run(w)
        end = a.end.tolist()
        never = [j for j, e in enumerate(end) if e != e]
        if never:
            raise violation("completes", f"job {never[0]} never completes ({len(never)} of {w.n} jobs)")
        scale = max(1.0, max(end))
        for j, (r, p, e) in enumerate(zip(w.columns["submit"], w.columns["runtime"], end)):
            if e < r + p - (END_REL_TOL * max(1.0, p) + 1e-9 * scale):
                raise violation(
                    "consistent",
                    f"job {j} ends at t={e!r}, before release + processing time = "
                    f"{r + p!r}: it progressed faster than a dedicated node",
                )
        b = self.run(w)
        for label in ("start", "end", "pauses", "migrations"):
            diff = first_difference(label, getattr(a, label), getattr(b, label))
            if diff:
                raise violation("deterministic", diff)


__all__ = ["END_REL_TOL", "INVARIANTS", "MAX_CALLS", "Check"]
