"""Invariants of the packing engine (L servers with capacity vectors, jobs
with demand vectors placed without preemption), checked on small random
workloads.

Why each holds for every correct packing policy:

* ``capacity`` -- the model forbids it: the demands held on a server never
  exceed its capacity in any resource (the engine raises
  ``CapacityExceeded`` on a placement that does not fit, and in check mode
  re-derives every server's load and free capacity from the jobs on it after
  every epoch, ``check=True``).
* ``placements-queued`` -- a placement names a job that is in the queue (not
  yet arrived, already running or finished is a bug) and an existing server
  (the engine's ``PlacementError``).
* ``completes`` -- every demand fits an empty server (capacity 1, demands at
  most 1), so a correct policy eventually places every job: the run goes to
  the end (no ``until``) and every job must have a start (the engine's own
  guard, ``PackingStalled``, the same in a sweep).
* ``deterministic`` -- the engine is deterministic: two runs give
  bit-identical start times and servers.
* ``no-duration-access`` -- a scheduler does not know durations; the
  ``Cluster`` handle holds none (only ``cluster.estimate``, which policies that
  model known durations may read: it is the estimate column, here the oracle
  default). In check mode the engine's own duration list is a guard
  (``schedlab.checks.guard``) refusing reads from outside ``schedlab.engines.packing.sim.engine``.
* ``runs`` -- the policy raises nothing.

Workloads: 1..12 jobs on 1..3 servers of capacity 1, decisions every event or
at multiples of 1 (the slotted model), equal submit times, durations from a
short list (0 included) or a range, demands at and near capacity (1, 0.9,
1/3 + 2/3, 0.3 + 0.7 that add up to 1 only up to rounding), sometimes tasks
grouped into multi-task jobs. Two resources (``cpu``, ``mem``) only for a
policy that accepts a two-resource cluster: the single-resource built-ins
raise ``UserError`` for one, which is how a policy says it is single-resource.
"""

from __future__ import annotations

from typing import Any

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
from schedlab.errors import UserError

INVARIANTS = (
    Invariant("capacity", "the demands on a server never exceed its capacity in any resource"),
    Invariant("placements-queued", "only queued jobs are placed (each once, after it arrives), on existing servers"),
    Invariant("completes", "every job is eventually placed and ends"),
    Invariant("deterministic", "two runs on the same workload give bit-identical start times and servers"),
    Invariant(
        "no-duration-access",
        "the policy never reads a job's duration (cluster.estimate is the only duration it may see)",
    ),
    Invariant("runs", "the policy raises no exception"),
)

#: Demands the search favours: at capacity, near it, and pairs adding up to
#: the capacity only up to rounding (0.1 + 0.2 + 0.7, 1/3 + 2/3).
DEMANDS = [0.5, 1.0, 0.3, 0.7, 0.4, 0.6, 0.9, 0.1, 0.2, 0.8, 0.25, 0.75, 1 / 3, 2 / 3, 0.999999]


def accepts_two_resources(cls, params) -> bool:
    """Whether the policy can be built on a two-resource cluster (see the
    module docstring)."""
    import numpy as np

    from schedlab.engines.packing.sim.engine import Cluster

    try:
        cls(Cluster(np.ones((1, 2)), np.zeros((0, 2))), **params)
    except UserError:
        return False
    except Exception:  # noqa: BLE001 - it will fail on real workloads too and be reported there
        return True
    return True


def _workloads(resources: tuple[int, ...]):
    from hypothesis import strategies as st

    gap = st.one_of(st.sampled_from([0.0, 1.0, 0.5, 2.0, 3.0]), st.floats(0.0, 5.0))
    duration = st.one_of(st.sampled_from([1.0, 2.0, 3.0, 0.5, 0.0, 5.0]), st.floats(0.0, 10.0))
    demand = st.one_of(st.sampled_from(DEMANDS), st.floats(0.01, 1.0))

    @st.composite
    def workload(draw) -> Workload:
        servers = draw(st.integers(1, 3))
        d = draw(st.sampled_from(resources))
        epoch = draw(st.sampled_from([0.0, 1.0]))  # as in a spec's [system]: 0 = a decision at every event
        grouped = draw(st.booleans())
        jobs = draw(
            st.lists(
                st.tuples(gap, duration, st.lists(demand, min_size=d, max_size=d), st.integers(0, 3)),
                min_size=1,
                max_size=MAX_JOBS,
            )
        )
        submit = arrivals(jobs)
        cols: dict[str, list[Any]] = {"job": list(range(len(jobs))), "submit": submit, "duration": [j[1] for j in jobs]}
        names = ["demand"] if d == 1 else ["cpu", "mem"]
        for k, name in enumerate(names):
            cols[name] = [j[2][k] for j in jobs]
        if grouped:
            cols["group"] = [j[3] for j in jobs]
        return Workload(cols, {"servers": servers, "capacity": 1.0, "epoch": epoch})

    return workload()


class Check(EngineCheck):
    engine = "packing"
    invariants = INVARIANTS

    def __init__(self, cls, params) -> None:
        super().__init__(cls, params)
        self.resources = (1, 2) if accepts_two_resources(cls, params) else (1,)

    def workloads(self):
        return _workloads(self.resources)

    def run(self, w: Workload):
        """The policy's run on ``w`` (a ``PackingResult``): the instance a sweep
        runs (``schedlab.engines.instance.start_instance``), built in check mode
        (durations guarded, the engine's re-check after each epoch on) and
        stepped to its end."""
        from schedlab.checks.guard import HiddenTruthError, hider
        from schedlab.engines.instance import start_instance
        from schedlab.engines.packing.sim.engine import CapacityExceeded, PackingStalled, PlacementError
        from schedlab.sim.common.stepping import run_to_end

        guard = hider("schedlab.engines.packing.sim.engine", "a job's duration")
        try:
            started = start_instance(self.engine, w.table(), self.cls, self.params, w.system, hidden=guard, check=True)
            res = run_to_end(started.run)
        except Exception as err:  # noqa: BLE001 - every failure of the policy is a finding
            if isinstance(err, HiddenTruthError):
                raise violation("no-duration-access", str(err)) from None
            swallowed_reads(guard, "no-duration-access")
            if isinstance(err, CapacityExceeded):
                raise violation("capacity", str(err)) from None
            if isinstance(err, PlacementError):
                raise violation("placements-queued", str(err)) from None
            if isinstance(err, PackingStalled):
                raise violation("completes", str(err)) from None
            if isinstance(err, AssertionError) and _raised_in_engine(err):
                raise violation("capacity", f"the engine's re-check after an epoch: {err}") from None
            raise crashed(err) from None
        swallowed_reads(guard, "no-duration-access")
        return res

    def check(self, w: Workload) -> None:
        a = self.run(w)  # a job never placed: the engine's PackingStalled (run without until), in run()
        b = self.run(w)
        diff = first_difference("start", a.start, b.start) or first_difference("server", a.server, b.server)
        if diff:
            raise violation("deterministic", diff)


def _raised_in_engine(err: BaseException) -> bool:
    """True if ``err`` was raised by the engine's own consistency check
    (``schedlab.engines.packing.sim.engine._check_cluster``), not by an assert of the policy."""
    import traceback
    from pathlib import Path

    from schedlab.engines.packing.sim import engine as packing

    frames = traceback.extract_tb(err.__traceback__)
    return (
        bool(frames)
        and frames[-1].name == "_check_cluster"
        and Path(frames[-1].filename).resolve() == Path(packing.__file__).resolve()
    )


__all__ = ["DEMANDS", "INVARIANTS", "Check", "accepts_two_resources"]
