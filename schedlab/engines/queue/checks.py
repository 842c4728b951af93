"""Invariants of the queue engine (one server of rate 1, preemptive fluid
sharing), checked on small random workloads.

Why each holds for every correct queue policy:

* ``completes`` -- a policy exists to serve jobs; leaving one unserved (the
  engine's ``PolicyStalled``) or announcing internal events forever without
  the clock moving (the engine's own guard, ``PolicyStuck``: more than
  ``STALL_EVENTS`` + ``STALL_PER_JOB`` x n loop turns at one instant with no
  arrival or departure, the same in a sweep; ``MAX_EVENTS`` in all) is a bug.
* ``work-conserving`` (policies with ``work_conserving = True``, the
  default) -- a server that is never idle while jobs are present does the
  same amount of work by every instant whatever the order of service, so each
  busy period ends exactly when the FIFO recursion C_i = max(a_i, C_{i-1}) +
  s_i says: every job arrived by the end of a busy period is done by then.
* ``no-early-completion`` -- the shares of the jobs in service sum to at most
  1, so no job finishes before submit + size, and the jobs arrived by the end
  of a busy period cannot all be done before FIFO (which never idles) does it.
* ``deterministic`` -- the engine is deterministic, so the same workload must
  give bit-identical completion times twice (a policy with hidden state, e.g.
  class attributes, randomness or set order over ids, fails this).
* ``no-size-access`` -- a real scheduler does not know true sizes: in check
  mode ``Server._size`` is a guard (``schedlab.checks.guard``) that refuses
  reads from outside ``schedlab.engines.queue.sim.engine``. Not checked for a policy with
  ``exact_size = True`` (it is given the sizes as estimates anyway).
* ``runs`` -- the policy raises nothing and asks for nothing the engine
  refuses (e.g. a GPS weight that is not a positive number).

Workloads: 1..12 jobs, gaps that are often 0 (equal submit times), sizes and
weights drawn from short lists (equal sizes) or ranges, estimates = size x a
factor in [0.05, 20] (often exactly 1).
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

#: Times are compared with this relative tolerance (x max(1, the FIFO
#: makespan)). The engine completes a job whose residual work is within its
#: ``DONE_REL_TOL`` = 1e-9 of its size at a coinciding event, so a busy period
#: may end up to 1e-9 x (sum of sizes) early; rounding along different paths
#: adds ~1e-15 per event. 1e-8 is 10x the first, far below any scheduling
#: difference (sizes are >= 0.01).
TIME_REL_TOL = 1e-8
#: Engine loop turns in one run before the policy is declared stuck
#: (quantum-based round robin on the largest workload needs ~1e5).
MAX_EVENTS = 1_000_000

INVARIANTS = (
    Invariant("completes", "every job completes: the policy eventually serves every job"),
    Invariant(
        "work-conserving",
        "the server is never idle while jobs are present: every busy period ends when "
        "the FIFO recursion says (for policies with work_conserving = True)",
    ),
    Invariant(
        "no-early-completion",
        "shares sum to at most 1: no job completes before submit + size, no busy "
        "period's work is done before FIFO does it",
    ),
    Invariant("deterministic", "two runs on the same workload give bit-identical completion times"),
    Invariant(
        "no-size-access",
        "the policy never reads a job's true size (Server._size), unless it declares exact_size = True",
    ),
    Invariant("runs", "the policy raises no exception and asks the engine for nothing it refuses"),
)


class _Stuck(Exception):
    pass


class _Watched:
    """The policy as the engine sees it in check mode: every attribute passes
    through; ``next_event_time`` (called once per engine loop turn) counts the
    turns of the whole run (``MAX_EVENTS``). Turns at one instant are the
    engine's own guard (``PolicyStuck``, ``STALL_EVENTS``), the same in a
    sweep."""

    def __init__(self, policy, server) -> None:
        self._policy = policy
        self._server = server
        self._total = 0

    def __getattr__(self, name):
        return getattr(self._policy, name)

    def next_event_time(self):
        self._total += 1
        if self._total > MAX_EVENTS:
            raise _Stuck(f"t={self._server.now}: {MAX_EVENTS} events without finishing the workload")
        return self._policy.next_event_time()


def fifo_recursion(submit: list[float], size: list[float]) -> list[float]:
    """FIFO completion times: C_i = max(a_i, C_{i-1}) + s_i."""
    out, prev = [], -math.inf
    for a, s in zip(submit, size):
        prev = max(a, prev) + s
        out.append(prev)
    return out


def _workloads():
    from hypothesis import strategies as st

    gap = st.one_of(st.sampled_from([0.0, 1.0, 0.5, 2.0, 5.0]), st.floats(0.0, 10.0))
    size = st.one_of(st.sampled_from([1.0, 2.0, 3.0, 0.5, 4.0, 10.0]), st.floats(0.01, 20.0))
    factor = st.one_of(st.sampled_from([1.0, 0.5, 2.0, 0.1, 10.0]), st.floats(0.05, 20.0))
    weight = st.sampled_from([1.0, 2.0, 0.5, 4.0, 0.25])

    def build(jobs) -> Workload:
        submit = arrivals(jobs)
        return Workload(
            {
                "job": list(range(len(jobs))),
                "submit": submit,
                "size": [j[1] for j in jobs],
                "estimate": [j[1] * j[2] for j in jobs],
                "weight": [j[3] for j in jobs],
            }
        )

    return st.lists(st.tuples(gap, size, factor, weight), min_size=1, max_size=MAX_JOBS).map(build)


class Check(EngineCheck):
    engine = "queue"
    invariants = INVARIANTS

    def __init__(self, cls, params) -> None:
        super().__init__(cls, params)
        if getattr(cls, "exact_size", False):
            self.skipped["no-size-access"] = "the policy declares exact_size = True"
        if not getattr(cls, "work_conserving", True):
            self.skipped["work-conserving"] = "the policy declares work_conserving = False"

    def workloads(self):
        return _workloads()

    def run(self, w: Workload) -> list[float]:
        """The completion times of the policy on ``w``: the instance a sweep
        runs (``schedlab.engines.instance.start_instance``), built in check mode
        (the sizes guarded, the policy watched) and stepped to its end."""
        from schedlab.checks.guard import HiddenTruthError, hider
        from schedlab.engines.instance import start_instance
        from schedlab.engines.queue.sim.engine import PolicyStalled, PolicyStuck
        from schedlab.sim.common.stepping import run_to_end

        guard = (
            None
            if "no-size-access" in self.skipped
            else hider("schedlab.engines.queue.sim.engine", "a job's true size")
        )
        try:
            started = start_instance(self.engine, w.table(), self.cls, self.params, hidden=guard, watch=_Watched)
            completion, _ = run_to_end(started.run)
        except Exception as err:  # noqa: BLE001 - every failure of the policy is a finding
            if isinstance(err, HiddenTruthError):
                raise violation("no-size-access", str(err)) from None
            swallowed_reads(guard, "no-size-access")
            if isinstance(err, (PolicyStalled, PolicyStuck)):
                raise violation("completes", str(err)) from None
            if isinstance(err, _Stuck):
                raise violation("completes", f"the policy never finishes: {err}") from None
            raise crashed(err) from None
        swallowed_reads(guard, "no-size-access")
        return completion.tolist()

    def check(self, w: Workload) -> None:
        c = self.run(w)
        self._timing(w, c)
        diff = first_difference("completion", c, self.run(w))
        if diff:
            raise violation("deterministic", diff)

    def _timing(self, w: Workload, c: list[float]) -> None:
        submit, size = w.columns["submit"], w.columns["size"]
        fifo = fifo_recursion(submit, size)
        tol = TIME_REL_TOL * max(1.0, fifo[-1])
        for j, (a, s, cj) in enumerate(zip(submit, size, c)):
            if not cj >= a + s - tol:
                raise violation(
                    "no-early-completion",
                    f"job {j} completes at t={cj!r}, before submit + size = {a + s!r} (tolerance {tol:.3g})",
                )
        n = len(submit)
        first = 0
        for i in range(n):
            if i < n - 1 and submit[i + 1] <= fifo[i]:
                continue  # the busy period goes on
            latest = max(range(i + 1), key=lambda j: c[j])
            if c[latest] < fifo[i] - tol:
                raise violation(
                    "no-early-completion",
                    f"jobs 0..{i} are all done at t={c[latest]!r}, before the "
                    f"FIFO recursion finishes their work at t={fifo[i]!r} "
                    f"(tolerance {tol:.3g})",
                )
            if "work-conserving" not in self.skipped and c[latest] > fifo[i] + tol:
                raise violation(
                    "work-conserving",
                    f"the busy period of jobs {first}..{i} (from t={submit[first]!r}) "
                    f"should end at t={fifo[i]!r} (FIFO recursion) but job {latest} "
                    f"completes at t={c[latest]!r} (tolerance {tol:.3g}): the server "
                    f"was idle while jobs were present",
                )
            first = i + 1


__all__ = ["INVARIANTS", "MAX_EVENTS", "TIME_REL_TOL", "Check", "fifo_recursion"]
