"""The priority policies (schedlab.engines.batch.policies.priority) on hand-worked
schedules: each case is small enough to follow on paper, and each is run on
the reference and on the compiled kernel (tests/test_batch_fast.py checks
the two agree bit for bit on random workloads)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from schedlab.engines.batch import kernel_id
from schedlab.engines.batch.policies import BATCH_POLICIES
from schedlab.engines.batch.sim import fast as batch_fast
from schedlab.engines.batch.sim.engine import simulate_batch


def starts(name, submit, runtime, requested, need, capacity):
    """Start times of policy ``name``, the same on both paths."""
    cls = BATCH_POLICIES[name]
    args = [np.array(submit, dtype=float), np.array(runtime, dtype=float), np.array(requested, dtype=float)]
    ref = simulate_batch(*args, np.array(need), capacity, cls).start.tolist()
    fast = batch_fast.simulate(kernel_id(cls), *args, np.array(need, dtype=np.int64), capacity)
    assert fast is not None and fast[0].tolist() == ref
    return ref


def test_sjf_starts_the_shortest_request_first():
    # one unit; job 0 runs 0..10; at 10 job 2 (requested 3) goes before job 1 (requested 5)
    w = ([0, 1, 2], [10, 5, 3], [10, 5, 3], [1, 1, 1], 1)
    assert starts("SJF", *w) == [0.0, 13.0, 10.0]
    assert starts("FCFS", *w) == [0.0, 10.0, 15.0]


def test_a_later_arrival_of_higher_priority_overtakes_the_head():
    # two units; job 0 holds one until 10; job 1 (two units) waits from 1; job
    # 2 (one unit, shorter) arrives at 2: SJF chooses it and it fits.
    w = ([0, 1, 2], [10, 100, 1], [10, 100, 1], [1, 2, 1], 2)
    assert starts("SJF", *w) == [0.0, 10.0, 2.0]
    assert starts("FCFS", *w) == [0.0, 10.0, 110.0]


def test_easy_backfills_around_the_priority_head():
    # at 2 SJF's head is job 1 (requested 5 < 8), which needs both units:
    # without backfilling job 2 waits for it (starts at 15); with EASY it ends
    # by the shadow time (2 + 8 <= 10) and starts at once.
    w = ([0, 1, 2], [10, 5, 8], [10, 5, 8], [1, 2, 1], 2)
    assert starts("SJF", *w) == [0.0, 10.0, 15.0]
    assert starts("SJF+EASY", *w) == [0.0, 10.0, 2.0]


def test_wfp3_weighs_the_wait_against_the_request():
    # at 10: job 1 waited 10 for 100 requested, (0.1)^3 = 1e-3; job 2 waited
    # 1 for 20 requested, (0.05)^3 = 1.25e-4: job 1 first (SJF: job 2 first)
    w = ([0, 0, 9], [10, 100, 20], [10, 100, 20], [1, 1, 1], 1)
    assert starts("WFP3", *w) == [0.0, 10.0, 110.0]
    assert starts("SJF", *w) == [0.0, 30.0, 10.0]


def test_unicep_divides_by_log2_of_the_need():
    # four units, full until 10. At 10: job 1 (4 units, waited 10, requested
    # 10): 10 / (2 x 10) = 0.5; job 2 (2 units, waited 5, requested 5):
    # 5 / (1 x 5) = 1: job 2 first; job 1 then waits for its 4 units (15).
    w = ([0, 0, 5], [10, 10, 5], [10, 10, 5], [4, 4, 2], 4)
    assert starts("UNICEP", *w) == [0.0, 15.0, 10.0]
    assert starts("FCFS", *w) == [0.0, 10.0, 20.0]


def test_f1_reads_the_absolute_submit_time():
    # job 1: log10(1e6) x 200 + 870 log10(100) = 1200 + 1740 = 2940;
    # job 2: log10(10) x 1 + 870 log10(1000) = 1 + 2610 = 2611: job 2 first.
    w = ([0, 100, 1000], [2000, 10, 10], [2000, 1e6, 10], [200, 200, 1], 200)
    assert starts("F1", *w) == [0.0, 2010.0, 2000.0]
    key = math.log10(1e6) * 200 + 870 * math.log10(100), math.log10(10) + 870 * math.log10(1000)
    assert key[1] < key[0]
    # shifted by 1e6 s the submit terms nearly tie and the request decides: job 1 waits longer
    shifted = ([1e6, 1e6 + 100, 1e6 + 1000], *w[1:])
    assert starts("F1", *shifted) == [1e6, 1e6 + 2010.0, 1e6 + 2000.0]


@pytest.mark.parametrize("name", ["F2", "F3", "F4"])
def test_the_other_carastan_santos_functions_prefer_small_short_jobs(name):
    # equal submits: the key is increasing in the request and the need; at
    # 10 job 2 starts first, job 1 (two units) then waits for it to end
    w = ([0, 1, 1], [10, 10, 10], [10, 50, 5], [2, 2, 1], 2)
    assert starts(name, *w) == [0.0, 20.0, 10.0]


def test_commit_is_rlschedulers_pick():
    """commit=True: the head is chosen as soon as the queue is not empty (job 1
    at 1, the machine full) and kept until it starts; job 2, shorter, arrives
    at 2 and waits behind it. Without commit job 2 is chosen at 10."""
    w = (np.array([0.0, 1.0, 2.0]), np.array([10.0, 5.0, 3.0]), np.array([10.0, 5.0, 3.0]), np.array([1, 1, 1]), 1)
    sjf = BATCH_POLICIES["SJF"]
    assert simulate_batch(*w, lambda m: sjf(m, commit=True)).start.tolist() == [0.0, 10.0, 15.0]
    assert simulate_batch(*w, sjf).start.tolist() == [0.0, 13.0, 10.0]
    # a constant key commits to the queue's head: FCFS either way
    assert starts("FCFS", *w) == simulate_batch(*w, lambda m: sjf(m, commit=True)).start.tolist()
