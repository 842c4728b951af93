"""Tests of schedlab.sim.stretch_bound (DFRS paper §3 Theorem 1 bound, §5.3.1 underutilization)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedlab.sim.stretch_bound import (
    BOUNDED_STRETCH_THRESHOLD,
    STRETCH_BOUND_REL_PRECISION,
    UsageProfile,
    batch_usage_profile,
    bounded_stretch,
    max_stretch_lower_bound,
    normalized_underutilization,
    stretch_lp_feasible,
    underutilization,
)

REL = STRETCH_BOUND_REL_PRECISION


def close_below(bound: float, exact: float) -> bool:
    """The bound is the lower end of a bracket of relative width REL around the optimum."""
    return exact * (1 - 1.01 * REL) <= bound <= exact * (1 + 1e-9)


# ---------------------------------------------------------------- hand examples


def test_two_jobs_one_node_hand_worked():
    """One node, two jobs (need 1, one task) released at 0, p1 = 100, p2 = 200
    (both >= the 10 s threshold, so bounded stretch = plain stretch).

    Target S gives deadlines d1 = 100 S, d2 = 200 S. With preemption, a
    single machine meets all deadlines iff EDF does, i.e. iff for each
    deadline the work due by it fits: 100 <= 100 S (S >= 1) and
    100 + 200 <= 200 S (S >= 1.5). Sharing cannot beat this: all 300 s of
    work need one fully used node until 300, so the last job to finish has
    stretch >= 300/200 = 1.5 if it is job 2, or >= 300/100 = 3 if it is job 1.
    SRPT (job 1 on [0, 100), job 2 on [100, 300)) has stretches 1 and 1.5,
    so the optimum is exactly 1.5.

    Linear system at S = 1.5: points {0, 150, 300}, intervals [0,150),
    [150,300). alpha_1 = 1 in the first (1d: 100 <= 150); (1e) in the first:
    100 + 200 alpha_2^1 <= 150 -> alpha_2^1 <= 1/4; second: 200 alpha_2^2 <= 150
    -> alpha_2^2 <= 3/4; (1a) sum = 1 is reached exactly: feasible at 1.5 and
    not below.
    """
    args = ([0, 0], [100, 200], [1, 1], [1, 1], 1)
    assert stretch_lp_feasible(*args, 1.5)
    assert not stretch_lp_feasible(*args, 1.49)
    bound = max_stretch_lower_bound(*args)
    assert close_below(bound, 1.5)
    # Same instance in other units with no threshold: same answer.
    assert close_below(max_stretch_lower_bound([0, 0], [1, 2], [1, 1], [1, 1], 1, threshold=0), 1.5)


def test_staggered_release_hand_worked():
    """One node, need 1: A (r=0, p=300), B (r=100, p=100).

    d_A = 300 S, d_B = 100 + 100 S. All 400 s of work must be done by the
    later deadline: if A is last, 400 <= 300 S -> S >= 4/3; B's window
    alone needs S >= 1. At S = 4/3 (d_B = 233.3 < d_A = 400) the schedule
    A [0,100), B [100,200), A [200,400) meets both: stretches 4/3 and 1.
    B last would need 400 <= 100 + 100 S (S >= 3). Optimum = 4/3.
    """
    bound = max_stretch_lower_bound([0, 100], [300, 100], [1, 1], [1, 1], 1)
    assert close_below(bound, 4 / 3)


def test_single_job_bound_is_one():
    assert max_stretch_lower_bound([5.0], [123.0], [3], [0.7], 4) == 1.0
    assert max_stretch_lower_bound([0.0], [1.0], [1], [1.0], 1, threshold=0) == 1.0


def test_single_job_wider_than_platform():
    """4 tasks of need 1 on 2 nodes: at most half speed (1e), so stretch 2."""
    assert close_below(max_stretch_lower_bound([0], [100], [4], [1], 2), 2.0)


def test_cpu_need_half_runs_two_at_once():
    """Need 0.5: two tasks share a node at full speed (1e: 2 * 100 * 0.5 <= 100)."""
    assert max_stretch_lower_bound([0, 0], [100, 100], [1, 1], [0.5, 0.5], 1) == 1.0
    # Need 1: the two jobs must share one node: 200 s of work by 100 S -> S = 2.
    assert close_below(max_stretch_lower_bound([0, 0], [100, 100], [1, 1], [1, 1], 1), 2.0)
    # Three jobs of need 0.5: 150 s of node-CPU work by 100 S -> S = 1.5.
    assert close_below(max_stretch_lower_bound([0, 0, 0], [100] * 3, [1] * 3, [0.5] * 3, 1), 1.5)


def test_task_cannot_exceed_its_need():
    """(1d): a need-0.5 job alone on 10 nodes still takes p; bound 1, not < 1,
    and at S slightly below 1 the system is infeasible."""
    args = ([0], [100], [1], [0.5], 10)
    assert stretch_lp_feasible(*args, 1.0)
    assert not stretch_lp_feasible(*args, 0.999)


def test_bounded_stretch_threshold_convention():
    """Two 1 s jobs on one node: plain optimum 1.5, but with the 10 s threshold
    deadlines are r + S * max(p, 10) and both fit by 10 s: bounded optimum 1."""
    args = ([0, 0], [1, 2], [1, 1], [1, 1], 1)
    assert BOUNDED_STRETCH_THRESHOLD == 10.0
    assert max_stretch_lower_bound(*args) == 1.0
    np.testing.assert_allclose(bounded_stretch([0, 0], [1, 2], [1, 3]), [1.0, 1.0])
    np.testing.assert_allclose(bounded_stretch([0, 0], [100, 200], [100, 300]), [1.0, 1.5])
    np.testing.assert_allclose(bounded_stretch([0, 0], [1, 2], [1, 3], threshold=0), [1.0, 1.5])


def test_invalid_inputs():
    with pytest.raises(ValueError):
        max_stretch_lower_bound([0], [0], [1], [1], 1)
    with pytest.raises(ValueError):
        max_stretch_lower_bound([0], [1], [1], [1.5], 1)
    with pytest.raises(ValueError):
        max_stretch_lower_bound([0, 1], [1], [1], [1], 1)
    with pytest.raises(ValueError):
        max_stretch_lower_bound([0], [1], [1], [1], 1, rel_precision=0)


# ------------------------------------------------- feasible reference schedules


def serial_fcfs(r, p, k, c, nodes):
    """One job at a time in release order, at rate min(1, nodes / (c k))."""
    done = np.empty(len(r))
    clock = -np.inf
    for j in np.argsort(r, kind="stable"):
        clock = max(clock, r[j]) + p[j] * max(1.0, c[j] * k[j] / nodes)
        done[j] = clock
    return done


def processor_sharing(r, p, k, c, nodes):
    """Every released unfinished job at the same rate min(1, nodes / sum c k)."""
    n = len(r)
    rem = np.array(p, dtype=float)
    done = np.full(n, np.nan)
    clock = float(np.min(r))
    while np.isnan(done).any():
        active = (r <= clock) & np.isnan(done)
        future = r[r > clock]
        if not active.any():
            clock = float(future.min())
            continue
        rate = min(1.0, nodes / float(np.sum(c[active] * k[active])))
        t_fin = float(rem[active].min()) / rate
        dt = min(t_fin, float(future.min()) - clock) if len(future) else t_fin
        rem[active] -= rate * dt
        clock += dt
        for j in np.flatnonzero(active):
            if rem[j] <= 1e-9 * p[j]:
                done[j] = clock
    return done


def fcfs_batch(r, p, k, nodes):
    """Rigid FCFS batch (no backfilling): job j takes k_j whole nodes for p_j."""
    done = np.empty(len(r))
    running: list[tuple[float, int]] = []  # (end, nodes)
    prev_start = -np.inf
    for j in np.argsort(r, kind="stable"):
        t = max(r[j], prev_start)
        while True:
            running = [(e, m) for e, m in running if e > t]
            if nodes - sum(m for _, m in running) >= k[j]:
                break
            t = min(e for e, _ in running)
        running.append((t + p[j], int(k[j])))
        prev_start = t
        done[j] = t + p[j]
    return done


@st.composite
def instances(draw):
    nodes = draw(st.integers(1, 3))
    n = draw(st.integers(1, 8))
    r = np.array(draw(st.lists(st.integers(0, 400), min_size=n, max_size=n)), dtype=float)
    p = np.array(draw(st.lists(st.integers(1, 300), min_size=n, max_size=n)), dtype=float)
    k = np.array(draw(st.lists(st.integers(1, nodes), min_size=n, max_size=n)), dtype=float)
    c = np.array(draw(st.lists(st.sampled_from([0.25, 0.5, 0.8, 1.0]), min_size=n, max_size=n)))
    threshold = draw(st.sampled_from([0.0, BOUNDED_STRETCH_THRESHOLD]))
    return r, p, k, c, nodes, threshold


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances())
def test_bound_below_feasible_schedules(inst):
    r, p, k, c, nodes, tau = inst
    bound = max_stretch_lower_bound(r, p, k, c, nodes, threshold=tau)
    assert bound >= 1.0
    for done in (serial_fcfs(r, p, k, c, nodes), processor_sharing(r, p, k, c, nodes), fcfs_batch(r, p, k, nodes)):
        achieved = bounded_stretch(r, p, done, threshold=tau).max()
        assert bound <= achieved * (1 + 1e-7)
    # Bracket: feasible just above the returned value (feasibility is monotone in S).
    assert stretch_lp_feasible(r, p, k, c, nodes, bound * (1 + 1.01 * REL), threshold=tau)
    if bound > 1.0:
        assert not stretch_lp_feasible(r, p, k, c, nodes, bound * (1 - 1e-3), threshold=tau)


# --------------------------------------------------------------- underutilization


def test_idle_gap_while_demand_counts_exactly():
    """One node, one job (need 1) submitted at 0, started at 5, ends at 15:
    D = 1 on [0, 15), u = 1 on [5, 15): underutilization 5; total work 10."""
    prof = batch_usage_profile([0], [5], [15], [1], [1.0])
    assert underutilization(prof, 1) == pytest.approx(5.0)
    jobs = {"submit": [0], "start": [5], "end": [15], "tasks": [1], "cpu_need": [1.0]}
    assert normalized_underutilization(1, jobs=jobs) == pytest.approx(0.5)


def test_demand_below_platform_counts_only_demand():
    """4 nodes, one 1-task need-0.5 job waiting 3 s: min(|P|, D) = 0.5 -> 1.5."""
    jobs = {"submit": [0], "start": [3], "end": [13], "tasks": [1], "cpu_need": [0.5]}
    # total work = 0.5 * 1 * 10 = 5
    assert normalized_underutilization(4, jobs=jobs) == pytest.approx(1.5 / 5)


def test_schedule_using_min_of_platform_and_demand_has_zero():
    """2 nodes; A (2 tasks) runs [0,10), B (2 tasks) waits then runs [10,20):
    D = 4 > |P| = 2 = u on [0,10); D = 2 = u on [10,20): underutilization 0.
    Also two need-0.5 tasks sharing one node at full demand: 0."""
    jobs = pl.DataFrame(
        {"submit": [0.0, 0.0], "start": [0.0, 10.0], "end": [10.0, 20.0], "tasks": [2, 2], "cpu_need": [1.0, 1.0]}
    )
    assert normalized_underutilization(2, jobs=jobs) == 0.0
    jobs2 = {"submit": [0, 0], "start": [0, 0], "end": [10, 10], "tasks": [1, 1], "cpu_need": [0.5, 0.5]}
    assert normalized_underutilization(1, jobs=jobs2) == 0.0


def test_profile_input():
    """Piecewise-constant profile on [0,10),[10,20),[20,30) with |P| = 2:
    min(2, D) - u = 0, 1, 0 -> 10 node-CPU seconds; total work 20 -> 0.5.
    An idle period between jobs (D = 0) contributes nothing."""
    prof = ([0, 10, 20, 30, 40], [1, 3, 0, 1], [1, 1, 0, 1])
    assert underutilization(UsageProfile(*map(np.asarray, prof)), 2) == pytest.approx(10.0)
    assert normalized_underutilization(2, profile=prof, total_work=20) == pytest.approx(0.5)


def test_underutilization_validation():
    with pytest.raises(ValueError):  # allocation above demand
        underutilization(UsageProfile(np.array([0.0, 1.0]), np.array([1.0]), np.array([2.0])), 4)
    with pytest.raises(ValueError):  # allocation above platform
        underutilization(UsageProfile(np.array([0.0, 1.0]), np.array([5.0]), np.array([3.0])), 2)
    with pytest.raises(ValueError):
        normalized_underutilization(1, profile=([0, 1], [1], [1]))  # total_work required
    with pytest.raises(ValueError):
        normalized_underutilization(1)
    with pytest.raises(ValueError):
        batch_usage_profile([1], [0], [2], [1], [1])  # start before submit


def test_bound_is_memoised_by_instance_content():
    from schedlab.sim import stretch_bound as sb

    r, p, k, c = np.array([0.0, 5.0]), np.array([100.0, 20.0]), np.array([2, 1]), np.array([1.0, 1.0])
    sb._BOUND_MEMO.clear()
    first = sb.max_stretch_lower_bound(r, p, k, c, 2.0)
    assert len(sb._BOUND_MEMO) == 1
    assert sb.max_stretch_lower_bound(r.copy(), p.copy(), k.copy(), c.copy(), 2.0) == first
    assert len(sb._BOUND_MEMO) == 1  # same content: no second search
    sb.max_stretch_lower_bound(r, p, k, c, 3.0)  # another platform: another instance
    assert len(sb._BOUND_MEMO) == 2
