"""A policy that stops serving is stopped at the instant the server(s) first
sit idle with a job waiting -- not when the workload runs out (issue 41: a
queue policy that stopped after job 9 of 2,000 was reported at t = 4617.56,
"idle with 1991 jobs unserved", long after it went idle).

For each engine that runs user policies (queue, batch, packing, DFRS) the
same broken policy -- correct on jobs 0..9, blind to every later job -- runs
on a 2,000-job workload; the instant it must be stopped at is computed
independently: the correct policy on the first ten jobs alone gives when
they are all done, and the stall starts at the later of that and job 10's
arrival (the correct policy never idles with one of its jobs waiting, since
each fits the empty server). A periodic DFRS policy is stopped at the end of
its next periodic call at the latest (at most one period later)."""

from __future__ import annotations

import re
from collections import deque

import numpy as np
import pytest

from schedlab.api import batch, dfrs, queue
from schedlab.errors import PolicyError
from tests.packing_policies import FirstFit

#: Jobs of the broken policies' workloads, and how many of them they serve.
N = 2000
SERVED = 10


def _arrivals(seed: int, rate: float) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.cumsum(rng.exponential(1.0 / rate, N))


def _stall_time(message: str) -> float:
    return float(re.search(r"t=([^:]+):", message).group(1))


# ---- queue -------------------------------------------------------------------------------------------


class FifoUpTo(queue.Policy):
    """FIFO over the jobs numbered below ``limit``; the others are never served."""

    name = "FifoUpTo"
    limit = N

    def __init__(self, server):
        super().__init__(server)
        self.q = deque()

    def arrive(self, job, estimate, weight):
        if job < self.limit:
            self.q.append(job)
        self.server.serve_job(self.q[0] if self.q else None)

    def depart(self, job):
        self.q.popleft()
        self.server.serve_job(self.q[0] if self.q else None)


class Stops(FifoUpTo):
    limit = SERVED


class StopsHonest(Stops):
    """The same bug in a policy that says it may idle (``work_conserving = False``)."""

    work_conserving = False


def _queue_inputs():
    submit = _arrivals(1, 0.9)
    size = np.random.default_rng(2).exponential(1.0, N)
    return submit, size, size.copy(), np.ones(N)


def test_queue_stall_is_reported_when_the_server_first_idles_with_a_job_waiting():
    from schedlab.engines.queue.sim.engine import PolicyStalled, simulate

    submit, size, estimate, weight = _queue_inputs()
    c = 0.0
    for i in range(SERVED):  # the FIFO recursion: the engine's FIFO reproduces it to the last bit
        c = max(submit[i], c) + size[i]
    t = max(c, float(submit[SERVED]))
    waiting = int(np.count_nonzero(submit <= t)) - SERVED
    with pytest.raises(PolicyStalled) as err:
        simulate(submit, size, estimate, weight, Stops)
    assert str(err.value).startswith(
        f"t={t}: job {SERVED}: the server is idle with {waiting} jobs unserved since t={t} "
    ), str(err.value)
    assert t < submit[-1] / 100  # found at the start, not at the last arrival (the t = 4617.56)
    # the correct policy on the whole workload: no stall, the FIFO recursion
    done, _ = simulate(submit, size, estimate, weight, FifoUpTo)
    assert done[SERVED - 1] == c


def test_a_queue_policy_that_may_idle_is_stopped_when_no_arrival_is_left():
    """``work_conserving = False`` may wait for an arrival with nothing announced
    (a better job); it is stopped when nothing is left to arrive."""
    from schedlab.engines.queue.sim.engine import PolicyStalled, simulate

    submit, size, estimate, weight = _queue_inputs()
    with pytest.raises(PolicyStalled, match=rf"^t={submit[-1]}: job {SERVED}: the server is idle with {N - SERVED} "):
        simulate(submit, size, estimate, weight, StopsHonest)


# ---- batch -------------------------------------------------------------------------------------------


class FcfsUpTo(batch.Policy):
    """FCFS over the jobs numbered below ``limit``."""

    name = "FcfsUpTo"
    limit = N

    def __init__(self, machine):
        super().__init__(machine)
        self.q = deque()

    def arrive(self, job):
        if job < self.limit:
            self.q.append(job)

    def complete(self, job):
        pass

    def schedule(self, now):
        free, out = self.machine.free, []
        while self.q and self.machine.need[self.q[0]] <= free:
            job = self.q.popleft()
            free -= self.machine.need[job]
            out.append(job)
        return out


def test_batch_stall_is_reported_when_the_machine_first_idles_with_a_job_queued():
    from schedlab.engines.batch.sim.engine import BatchStalled, simulate_batch

    units = 8
    submit = _arrivals(3, 0.5)
    rng = np.random.default_rng(4)
    runtime = rng.exponential(3.0, N)
    need = rng.integers(1, units + 1, N)
    Stops = type("Stops", (FcfsUpTo,), {"limit": SERVED})
    first = simulate_batch(submit[:SERVED], runtime[:SERVED], runtime[:SERVED], need[:SERVED], units, FcfsUpTo)
    t = max(float(first.end.max()), float(submit[SERVED]))
    with pytest.raises(BatchStalled) as err:
        simulate_batch(submit, runtime, runtime, need, units, Stops)
    assert str(err.value).startswith(f"t={t}: job {SERVED} never starts ("), str(err.value)
    assert str(err.value).endswith(f"since t={t}")
    full = simulate_batch(submit, runtime, runtime, need, units, FcfsUpTo)
    assert not np.isnan(full.start).any()


# ---- packing -----------------------------------------------------------------------------------------


class FirstFitUpTo(FirstFit):
    name = "FirstFitUpTo"
    limit = N

    def eligible(self, job):
        return job < self.limit


@pytest.mark.parametrize("epoch", [None, 1.0])
def test_packing_stall_is_reported_at_the_epoch_every_server_first_idles_with_a_job_queued(epoch):
    from schedlab.engines.packing.sim.engine import PackingStalled, arrival_epochs, simulate_packing

    submit = _arrivals(5, 1.0)
    rng = np.random.default_rng(6)
    duration = rng.exponential(4.0, N)
    demand = rng.uniform(0.05, 0.9, (N, 1))
    capacity = np.ones((2, 1))
    Stops = type("Stops", (FirstFitUpTo,), {"limit": SERVED})
    first = simulate_packing(submit[:SERVED], duration[:SERVED], demand[:SERVED], capacity, FirstFit, epoch=epoch)
    leaves = arrival_epochs(first.end, epoch)
    t = max(float(leaves.max()), float(arrival_epochs(submit, epoch)[SERVED]))
    with pytest.raises(PackingStalled) as err:
        simulate_packing(submit, duration, demand, capacity, Stops, epoch=epoch)
    message = str(err.value)
    waiting = int(np.count_nonzero(arrival_epochs(submit, epoch) <= t)) - SERVED
    assert message.startswith(f"policy 'FirstFitUpTo': t={t}: {waiting} of {N} jobs are still queued "), message
    assert f"first job {SERVED} (demand {demand[SERVED].tolist()}) waits while every server is idle since t={t}" in (
        message
    )
    assert _stall_time(message) < submit[-1] / 100


# ---- DFRS --------------------------------------------------------------------------------------------


class GreedyUpTo(dfrs.Policy):
    """Greedy placement (memory permitting) of the jobs numbered below ``limit``."""

    name = "GreedyUpTo"
    opt = "MIN"
    limit = N

    def place(self, state, job):
        if job >= self.limit:
            return
        nodes = dfrs.greedy_place(state.free_mem, state.load, state.tasks[job], state.mem[job], state.cpu[job])
        if nodes is not None:
            state.apply(places={job: nodes})

    def on_arrival(self, state, job):
        self.place(state, job)

    def on_completion(self, state):
        for job in sorted(state.pending):
            self.place(state, job)


class GreedyUpToPeriodic(GreedyUpTo):
    """The same, with a periodic call that does nothing: the engine waits for it before it stops the policy."""

    period = 500.0

    def on_period(self, state):
        pass


def _dfrs_inputs():
    submit = _arrivals(7, 0.01)
    rng = np.random.default_rng(8)
    processing = rng.exponential(200.0, N)
    tasks = rng.integers(1, 4, N)
    cpu = rng.uniform(0.2, 1.0, N)
    mem = rng.uniform(0.1, 0.6, N)
    return submit, processing, tasks, cpu, mem


@pytest.mark.parametrize("cls", [GreedyUpTo, GreedyUpToPeriodic], ids=["no-period", "periodic"])
def test_dfrs_stall_is_reported_when_the_cluster_first_idles_with_a_job_pending(cls):
    from schedlab.engines.dfrs.sim import simulate_dfrs

    nodes = 3
    submit, processing, tasks, cpu, mem = _dfrs_inputs()
    cut = slice(0, SERVED)
    first = simulate_dfrs(submit[cut], processing[cut], tasks[cut], cpu[cut], mem[cut], nodes, cls())
    t = max(float(first.state.end.max()), float(submit[SERVED]))
    stops = type("Stops", (cls,), {"limit": SERVED})
    with pytest.raises(PolicyError) as err:
        simulate_dfrs(submit, processing, tasks, cpu, mem, nodes, stops())
    message = str(err.value)
    assert f": job {SERVED}: " in message and "jobs pending but nothing runs since t=" in message, message
    if cls.period is None:
        assert message.startswith(f"t={t}: job {SERVED}: ") and f"since t={t} (" in message, message
    else:  # at the end of the next periodic call, at most one period later; idle since t
        assert t <= _stall_time(message) <= t + cls.period and f"since t={t} after its periodic call" in message
    assert _stall_time(message) < submit[-1] / 100
