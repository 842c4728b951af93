"""Every engine's reference loop is a run an outside driver can step
(``schedlab.sim.common.stepping``): driven by hand -- ``peek()`` before
every step, the packing engine's epochs opened by ``advance()`` first now
and then -- a run ends with exactly what the engine's ``simulate*`` function
returns, to the bit; ``peek()`` is a query (asking twice changes nothing) and
names the time the next step moves the clock to."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedlab.engines.batch.policies import BATCH_POLICIES
from schedlab.engines.batch.sim.engine import BatchRun, simulate_batch
from schedlab.engines.dfrs.policies import DFRS_POLICIES
from schedlab.engines.dfrs.sim.events import DfrsRun, simulate_dfrs
from schedlab.engines.packing.policies import PACKING_POLICIES
from schedlab.engines.packing.sim.engine import PackingRun, simulate_packing
from schedlab.engines.queue.policies import QUEUE_POLICIES
from schedlab.engines.queue.sim.engine import QueueRun, simulate
from schedlab.sim.common.stepping import run_to_end, run_until

#: Single-resource packing policies (Tetris and Slots-Fair have their own multi-resource tests).
PACKING = ("FIFO-FF", "BF-J", "BF-S", "BF-J/S", "VQS", "VQS-BF")
#: DFRS policies stepped here: each Greedy variant and MCB8, with and without a period.
DFRS = ("Greedy*/OPT=MIN", "GreedyP*/OPT=AVG", "GreedyPM*/OPT=MIN", "GreedyPM*/per/OPT=MIN", "MCB8*/OPT=MIN")
EXAMPLES = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def grid(draw, n: int, lo: int, hi: int, den: int) -> np.ndarray:
    """``n`` numbers k / den, k in lo..hi (on a grid: ties and simultaneous events are common)."""
    return np.array(draw(st.lists(st.integers(lo, hi), min_size=n, max_size=n)), dtype=float) / den


def arrivals(draw, n: int) -> np.ndarray:
    """Non-decreasing submit times, with some equal."""
    return np.cumsum(grid(draw, n, 0, 30, 10))


def drive(run, peek_clock) -> None:
    """Step ``run`` to its end by hand, checking ``peek()`` before every step."""
    while not run.done:
        t = run.peek()
        assert run.peek() == t  # a query
        run.step()
        if not run.done:
            assert peek_clock(run) == t
        else:
            assert t == math.inf


@st.composite
def queue_cases(draw):
    n = draw(st.integers(1, 12))
    size = grid(draw, n, 1, 50, 10)
    estimate = size * grid(draw, n, 5, 20, 10)
    weight = np.array(draw(st.lists(st.sampled_from([1.0, 0.5, 0.25]), min_size=n, max_size=n)))
    return draw(st.sampled_from(sorted(QUEUE_POLICIES))), (arrivals(draw, n), size, estimate, weight)


@EXAMPLES
@given(case=queue_cases())
def test_a_queue_run_stepped_by_hand_is_simulate(case):
    name, arrays = case
    cls = QUEUE_POLICIES[name]
    run = QueueRun(*arrays, cls)
    drive(run, lambda r: r.now)
    completion, events = run.result()
    expected, expected_events = simulate(*arrays, cls)
    assert completion.tolist() == expected.tolist() and events == expected_events


@st.composite
def packing_cases(draw):
    n = draw(st.integers(1, 15))
    submit = np.floor(arrivals(draw, n))
    duration = grid(draw, n, 1, 10, 1)
    demand = grid(draw, n, 1, 10, 10)
    servers = draw(st.integers(1, 3))
    epoch = draw(st.sampled_from([1.0, None]))
    opens = draw(st.lists(st.booleans(), min_size=1, max_size=8))  # open the next epoch with advance() first?
    return draw(st.sampled_from(PACKING)), (submit, duration, demand, np.ones(servers)), epoch, opens


@EXAMPLES
@given(case=packing_cases())
def test_a_packing_run_stepped_by_hand_is_simulate_packing(case):
    name, arrays, epoch, opens = case
    cls = PACKING_POLICIES[name]
    run = PackingRun(*arrays, cls, epoch=epoch, sample_every=1.5)
    k = 0
    while not run.done:
        t = run.peek()
        if opens[k % len(opens)] and run.advance():
            assert run.deciding and run.now == t and run.peek() == t
        k += 1
        run.step()
        assert not run.deciding
        assert run.now == t if not run.done else t == math.inf
    got = run.result()
    want = simulate_packing(*arrays, cls, epoch=epoch, sample_every=1.5)
    for field in ("start", "server", "wait"):
        assert getattr(got, field).tolist() == getattr(want, field).tolist()
    assert got.summary() == pytest.approx(want.summary(), rel=0, abs=0, nan_ok=True)
    assert {k: v.tolist() for k, v in got.samples.items()} == {k: v.tolist() for k, v in want.samples.items()}


@st.composite
def dfrs_cases(draw):
    n = draw(st.integers(1, 8))
    nodes = draw(st.integers(1, 3))
    release = np.floor(arrivals(draw, n) * 100)
    processing = grid(draw, n, 1, 20, 1) * 100
    tasks = np.array(draw(st.lists(st.integers(1, nodes), min_size=n, max_size=n)))
    cpu = grid(draw, n, 1, 10, 10)
    mem = grid(draw, n, 1, 10, 10)
    return draw(st.sampled_from(DFRS)), (release, processing, tasks, cpu, mem, nodes)


@EXAMPLES
@given(case=dfrs_cases())
def test_a_dfrs_run_stepped_by_hand_is_simulate_dfrs(case):
    name, arrays = case
    run = DfrsRun(*arrays, DFRS_POLICIES[name](), penalty=30.0)
    drive(run, lambda r: r.now)
    got = run.result()
    want = simulate_dfrs(*arrays, DFRS_POLICIES[name](), penalty=30.0)
    assert got.events == want.events and got.lp_failures == want.lp_failures
    for field in ("start", "end", "vt", "pauses", "migrations"):
        assert getattr(got.state, field).tolist() == getattr(want.state, field).tolist()
    assert got.profile.times.tolist() == want.profile.times.tolist()


@st.composite
def batch_cases(draw):
    n = draw(st.integers(1, 15))
    capacity = draw(st.integers(1, 8))
    runtime = grid(draw, n, 0, 40, 2)
    requested = (runtime + 1.0) * grid(draw, n, 10, 30, 10)  # > 0 (the priority keys take its log)
    need = np.array(draw(st.lists(st.integers(1, capacity), min_size=n, max_size=n)))
    return draw(st.sampled_from(sorted(BATCH_POLICIES))), (arrivals(draw, n), runtime, requested, need, capacity)


@EXAMPLES
@given(case=batch_cases())
def test_a_batch_run_stepped_by_hand_is_simulate_batch(case):
    name, arrays = case
    cls = BATCH_POLICIES[name]
    run = BatchRun(*arrays, cls)
    drive(run, lambda r: r.machine.now)
    got, want = run.result(), simulate_batch(*arrays, cls)
    assert got.start.tolist() == want.start.tolist() and got.end.tolist() == want.end.tolist()
    assert got.events == want.events


def test_run_until_stops_where_asked_and_a_finished_run_refuses_more_steps():
    submit, size = np.array([0.0, 0.0, 1.0]), np.array([2.0, 1.0, 1.0])
    run = QueueRun(submit, size, size, np.ones(3), QUEUE_POLICIES["PS"])
    assert run_until(run, lambda: run.completed == 1)
    assert run.completed == 1 and run.now == 2.5  # PS: 1/2 each until job 2 arrives at t=1, then 1/3: job 1 ends at 2.5
    assert not run_until(run, lambda: False) and run.done
    with pytest.raises(RuntimeError, match="finished run"):
        run.step()
    assert run_to_end(QueueRun(submit, size, size, np.ones(3), QUEUE_POLICIES["PS"]))[0].tolist() == (
        run.result()[0].tolist()
    )


def test_run_to_end_steps_a_run_that_offers_only_step():
    """A researcher's run (docs/guide/your-own-engine.md) need not have
    step_to_end: run_to_end then steps it one event at a time."""
    from schedlab.sim.common.stepping import run_to_end

    class Countdown:
        def __init__(self, n):
            self.left, self.seen = n, []

        @property
        def done(self):
            return self.left == 0

        def peek(self):
            return float(self.left) if self.left else float("inf")

        def step(self):
            self.seen.append(self.left)
            self.left -= 1

        def result(self):
            return self.seen

    assert run_to_end(Countdown(3)) == [3, 2, 1]
    assert run_to_end(Countdown(0)) == []
