"""Invariants of the batch engine (rigid parallel jobs space-shared without
preemption on a machine of identical units), checked on small random
workloads.

Why each holds for every correct batch policy:

* ``capacity`` -- processors are never over-committed: a start must fit the
  free units left after the earlier starts of the same pass (the engine's
  ``BatchCapacityExceeded``; it counts free units in a local variable no
  policy can reach, so the check cannot be fooled).
* ``start-after-submit`` -- a job cannot start before it is submitted (the
  engine refuses to start a job that has not arrived: ``BatchStartError``
  for a job whose submit time is still ahead).
* ``starts-queued`` -- only queued jobs start, each once (starting a running
  or finished job, or a job id that does not exist, is refused).
* ``completes`` -- every job fits the empty machine (procs <= capacity), so
  a correct policy eventually starts every job: every job has a start (the
  engine's own guard, ``BatchStalled``, the same in a sweep).
* ``deterministic`` -- the engine is deterministic: two runs give
  bit-identical start and end times.
* ``no-runtime-access`` -- a batch scheduler knows requested times, never
  actual runtimes. The ``Machine`` handle holds only ``capacity``, ``free``,
  ``now``, ``need``, ``requested`` and ``submit`` (its ``__slots__``; nothing
  else reaches the policy), and in check mode the engine's runtime list is a
  guard (``schedlab.checks.guard``) refusing reads from outside
  ``schedlab.engines.batch.sim.engine``.
* ``runs`` -- the policy raises nothing.

Workloads: a machine of 1..16 processors, 1..12 jobs, equal submit times,
wide jobs (all processors, all but one, half) among narrow ones, runtimes
from a short list (0 included) or a range, requested times = runtime x a
factor in [0.5, 20] (mostly over-estimates, sometimes under: traces have
both).
"""

from __future__ import annotations

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

INVARIANTS = (
    Invariant(
        "capacity",
        "processors are never over-committed: the jobs running at any instant need at most the machine's capacity",
    ),
    Invariant("start-after-submit", "no job starts before it is submitted"),
    Invariant("starts-queued", "only queued jobs start, each once"),
    Invariant("completes", "every job starts (and so ends)"),
    Invariant("deterministic", "two runs on the same workload give bit-identical start and end times"),
    Invariant("no-runtime-access", "the policy never reads a job's actual runtime (only requested times)"),
    Invariant("runs", "the policy raises no exception"),
)

#: What a batch policy's handle exposes; tests check that nothing else does
#: (``easy_backfill``: the ``[system]`` rule EASY reads, a word, not a duration).
MACHINE_FIELDS = ("capacity", "free", "now", "need", "requested", "submit", "easy_backfill")


def _workloads():
    from hypothesis import strategies as st

    gap = st.one_of(st.sampled_from([0.0, 1.0, 5.0, 10.0, 100.0]), st.floats(0.0, 500.0))
    runtime = st.one_of(st.sampled_from([1.0, 2.0, 10.0, 0.0, 100.0, 1000.0]), st.floats(0.0, 2000.0))
    factor = st.one_of(st.sampled_from([1.0, 2.0, 0.5, 10.0]), st.floats(0.5, 20.0))

    @st.composite
    def workload(draw) -> Workload:
        capacity = draw(st.one_of(st.sampled_from([4, 1, 2, 8, 16]), st.integers(1, 16)))
        wide = sorted({capacity, max(1, capacity - 1), max(1, capacity // 2)}, reverse=True)
        procs = st.one_of(st.sampled_from([1, *wide]), st.integers(1, capacity))
        jobs = draw(st.lists(st.tuples(gap, runtime, factor, procs), min_size=1, max_size=MAX_JOBS))
        submit = arrivals(jobs)
        return Workload(
            {
                "job": list(range(len(jobs))),
                "submit": submit,
                "runtime": [j[1] for j in jobs],
                # > 0 always (the engine requires it): a zero runtime requests the factor itself.
                "requested": [j[1] * j[2] if j[1] > 0 else j[2] for j in jobs],
                "procs": [j[3] for j in jobs],
            },
            {"procs": capacity},
        )

    return workload()


class Check(EngineCheck):
    engine = "batch"
    invariants = INVARIANTS

    def workloads(self):
        return _workloads()

    def run(self, w: Workload):
        """The policy's run on ``w`` (a ``BatchResult``): the instance a sweep
        runs (``schedlab.engines.instance.start_instance``; model procs on
        ``procs`` processors, the requested times as estimates), built in check
        mode (runtimes guarded) and stepped to its end."""
        from schedlab.checks.guard import HiddenTruthError, hider
        from schedlab.engines.batch.sim.engine import BatchCapacityExceeded, BatchStalled, BatchStartError
        from schedlab.engines.instance import start_instance
        from schedlab.sim.common.stepping import run_to_end

        cols = w.columns
        guard = hider("schedlab.engines.batch.sim.engine", "a job's actual runtime")
        try:
            table = w.table(requested="requested_time")
            started = start_instance(self.engine, table, self.cls, self.params, w.system, hidden=guard)
            res = run_to_end(started.run)
        except Exception as err:  # noqa: BLE001 - every failure of the policy is a finding
            if isinstance(err, HiddenTruthError):
                raise violation("no-runtime-access", str(err)) from None
            swallowed_reads(guard, "no-runtime-access")
            if isinstance(err, BatchCapacityExceeded):
                raise violation("capacity", str(err)) from None
            if isinstance(err, BatchStalled):
                raise violation("completes", str(err)) from None
            if isinstance(err, BatchStartError):
                job = err.job
                if isinstance(job, int) and 0 <= job < w.n and err.now is not None and cols["submit"][job] > err.now:
                    raise violation(
                        "start-after-submit", f"{err} (job {job} is submitted at t={cols['submit'][job]!r})"
                    ) from None
                raise violation("starts-queued", str(err)) from None
            raise crashed(err) from None
        swallowed_reads(guard, "no-runtime-access")
        return res

    def check(self, w: Workload) -> None:
        a = self.run(w)
        start = a.start.tolist()
        never = [j for j, s in enumerate(start) if s != s]
        if never:
            raise violation(
                "completes",
                f"job {never[0]} never starts ({len(never)} of {w.n} jobs) although it fits the empty machine",
            )
        for j, (s, sub) in enumerate(zip(start, w.columns["submit"])):
            if s < sub:
                raise violation("start-after-submit", f"job {j} starts at t={s!r}, before its submit time {sub!r}")
        b = self.run(w)
        diff = first_difference("start", a.start, b.start) or first_difference("end", a.end, b.end)
        if diff:
            raise violation("deterministic", diff)


__all__ = ["INVARIANTS", "MACHINE_FIELDS", "Check"]
