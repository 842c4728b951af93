"""The DFRS engine (schedlab.engines.dfrs.sim) and the Greedy mapping policies
(schedlab.engines.dfrs.policies.greedy): hand-worked cases, invariants, LP bound."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedlab.engines.dfrs.policies import DFRS_POLICIES
from schedlab.engines.dfrs.sim import WAITING, DfrsState, allocate, max_min_yields, run_table, simulate_dfrs
from schedlab.errors import UserError
from tests.dfrs_checks import check_progress


def _sim(policy_name, release, proc, tasks, cpu, mem, nodes, penalty=300.0, period=None, **kw):
    cls = DFRS_POLICIES[policy_name]
    pol = cls(period=period) if period and "/per" in policy_name else cls()
    return simulate_dfrs(release, proc, tasks, cpu, mem, nodes, pol, penalty=penalty, check=True, **kw)


def test_registry_names():
    base = {
        n
        for n in DFRS_POLICIES  # MINVT / MINFT, MCB8* and the forms without '*': tests/test_dfrs_minvt.py
        if "/MINVT=" not in n
        and "/MINFT=" not in n
        and not n.startswith("MCB8")
        and "*" in n
        and "/stretch-per" not in n
    }  # /stretch-per: tests/test_dfrs_stretch.py
    assert base == {
        f"{m}*{per}/OPT={o}" for m in ("Greedy", "GreedyP", "GreedyPM") for per in ("", "/per") for o in ("MIN", "AVG")
    }
    assert DFRS_POLICIES["GreedyPM*/per/OPT=MIN"]().period == 600.0
    assert DFRS_POLICIES["GreedyPM*/OPT=MIN"]().period is None
    for name, cls in DFRS_POLICIES.items():
        assert cls.name == name and cls.summary


def test_greedy_hand_example_two_nodes_three_jobs():
    """Greedy*/OPT=MIN, 2 nodes, c = 1, m = 0.5 (two tasks per node), penalty 300.

    * t=0: J0 (2 tasks, p=100) -> nodes [0, 1] (lowest load, ties to node 0); y0 = 1.
    * t=10: J1 (1 task, p=50): loads [1, 1] -> node 0. Node 0 load 2: y0 = y1 = 1/2.
      vt0 = 10.
    * t=20: J2 (2 tasks, p=60): free memory [0, 0.5] -> 1 slot < 2: waits.
      vt0 = 15, vt1 = 5.
    * J1 ends at 20 + 45 / 0.5 = 110 (vt0 = 60). '*' pass: J2 fits; loads
      [1, 1] -> node 0, then node 1 (load 2 vs 1). Both nodes hold J0 + J2:
      y0 = y2 = 1/2. First start: no penalty.
    * J0 ends at 110 + 40 / 0.5 = 190 (vt2 = 40); J2 alone, y2 = 1, ends 210.

    Bounded stretches: J0 190/100 = 1.9, J1 100/50 = 2, J2 190/60.
    """
    res = _sim("Greedy*/OPT=MIN", [0, 10, 20], [100, 50, 60], [2, 1, 2], [1, 1, 1], [0.5, 0.5, 0.5], 2, snapshots=True)
    s = res.state
    np.testing.assert_allclose(s.start, [0, 10, 110])
    np.testing.assert_allclose(s.end, [190, 110, 210])
    assert s.pauses.sum() == 0 and s.migrations.sum() == 0
    snaps = {round(t, 9): snap for t, *snap in res.snapshots}
    np.testing.assert_allclose(snaps[10.0][3][:2], [0.5, 0.5])  # yields after t=10
    np.testing.assert_allclose(snaps[110.0][3], [0.5, 0.0, 0.5])
    np.testing.assert_allclose(snaps[110.0][0], [60, 50, 0])  # virtual times at t=110
    jobs = pl.DataFrame(
        {
            "job_id": [0, 1, 2],
            "submit": [0.0, 10.0, 20.0],
            "runtime": [100.0, 50.0, 60.0],
            "procs": [2, 1, 2],
            "memory": [0.5, 0.5, 0.5],
        }
    )
    per_job, summary = run_table(jobs, DFRS_POLICIES["Greedy*/OPT=MIN"], nodes=2, check=True)
    np.testing.assert_allclose(per_job["stretch"], [1.9, 2.0, 190 / 60])
    assert summary["stretch_max"] == pytest.approx(190 / 60)
    assert summary["pauses"] == 0 and summary["mem_moved"] == 0


# Preemption example: 2 nodes, c = 1. A, B (m = 0.5, p = 1000) start at 0 on nodes 0 and 1;
# C (m = 0.6, p = 50) arrives at 100 and fits nowhere. At t=100 vt_A = vt_B = 100: equal
# priorities 100/100^2, ties by submission -> B (later) has the lowest priority.
PRE = dict(release=[0, 0, 100], proc=[1000, 1000, 50], tasks=[1, 1, 1], cpu=[1, 1, 1], mem=[0.5, 0.5, 0.6], nodes=2)


def test_greedyp_pauses_lowest_priority_job():
    """GreedyP*: B is paused at 100, C runs on node 1 to 150; at 150 the '*' pass
    resumes B on node 1 (load 0 < 1), penalty until 450, B ends 450 + 900 = 1350.
    A is never touched: ends 1000."""
    res = _sim("GreedyP*/OPT=MIN", **PRE)
    s = res.state
    np.testing.assert_allclose(s.start, [0, 0, 100])
    np.testing.assert_allclose(s.end, [1000, 1350, 150])
    assert s.pauses.tolist() == [0, 1, 0] and s.migrations.sum() == 0
    assert s.mem_moved.tolist() == [0.0, 0.5, 0.0]
    # without pausing, C waits for the first completion (A at 1000)
    g = _sim("Greedy*/OPT=MIN", **PRE).state
    np.testing.assert_allclose(g.end, [1000, 1000, 1050])


def test_greedyp_pauses_the_lowest_priority_of_several():
    """Three running 1-task jobs (m = 1, one per node) at t=100: job 1 (started
    at 50) has priority 50/50^2 = 0.02, jobs 0 and 2 have 100/100^2 = 0.01:
    a tie, broken by submission (same release, job index) -> job 2 is the
    lowest and is the one paused for job 3."""
    res = _sim("GreedyP*/OPT=MIN", [0, 50, 0, 100], [1000, 1000, 1000, 10], [1, 1, 1, 1], [1, 1, 1, 1], [1, 1, 1, 1], 3)
    s = res.state
    assert s.pauses.tolist() == [0, 0, 1, 0]
    assert s.start[3] == 100 and s.end[3] == 110


def test_greedypm_migrates_instead_of_pausing():
    """GreedyPM*: B is the victim; C is placed first (node 1, the only node with
    room once B is off); B is re-placed with Greedy on node 0 (0.5 free): a
    migration of 1 task (0.5 memory), penalty until 400. Node 0 holds A and B:
    y = 1/2 each. A: vt 100 at t=100, +150 by 400, rem 750 at 1/2 -> ends 1900;
    B: vt 100 until 400, +750 by 1900, then alone at y=1: ends 2050. C: 150."""
    res = _sim("GreedyPM*/OPT=MIN", **PRE, snapshots=True)
    s = res.state
    np.testing.assert_allclose(s.end, [1900, 2050, 150])
    assert s.pauses.sum() == 0
    assert s.migrations.tolist() == [0, 1, 0] and s.migrated_tasks.tolist() == [0, 1, 0]
    assert s.mem_moved.tolist() == [0.0, 0.5, 0.0]
    snaps = {round(t, 9): snap for t, *snap in res.snapshots}
    vt400 = snaps[400.0][0]
    np.testing.assert_allclose(vt400[:2], [250, 100])


def test_per_mcb8_pauses_lower_priority_then_resumes():
    """Greedy*/per/OPT=MIN, 1 node, period 50, penalty 20. A (m 0.6, p 1000)
    starts at 0; B (m 0.6, p 30) arrives at 10 and does not fit. At t=50 MCB8
    sees B (vt 0: infinite priority) and A (50/50^2): both do not fit even at
    yield 0, so the lowest priority, A, is dropped -> A paused, B starts at 50
    (first start, no penalty) and ends at 80. At 80 the '*' pass resumes A
    (penalty to 100). At the periodic instants that follow MCB8 maps A alone
    to its own node: no migration. A: 950 s of work left from 100 -> ends 1050."""
    pol = DFRS_POLICIES["Greedy*/per/OPT=MIN"](period=50.0)
    res = simulate_dfrs([0, 10], [1000, 30], [1, 1], [1, 1], [0.6, 0.6], 1, pol, penalty=20.0, check=True)
    s = res.state
    np.testing.assert_allclose(s.start, [0, 50])
    np.testing.assert_allclose(s.end, [1050, 80])
    assert s.pauses.tolist() == [1, 0] and s.migrations.sum() == 0


def test_per_relabels_bins_to_avoid_migration():
    """2 nodes: A (p 10) on node 0, B (p 1000) on node 1 (m 0.6 each). After A
    ends, MCB8 packs B into its first bin; bins are renumbered to keep B on
    node 1, so no migration and B ends at 1000."""
    pol = DFRS_POLICIES["GreedyPM*/per/OPT=AVG"](period=50.0)
    res = simulate_dfrs([0, 0], [10, 1000], [1, 1], [1, 1], [0.6, 0.6], 2, pol, penalty=300.0, check=True)
    assert res.state.migrations.sum() == 0 and res.state.pauses.sum() == 0
    np.testing.assert_allclose(res.state.end, [10, 1000])
    with pytest.raises(TypeError):
        DFRS_POLICIES["GreedyPM*/per/OPT=AVG"](period=0)


def _state_with(placements, cpu, tasks, nodes, mem=0.1):
    n = len(cpu)
    stt = DfrsState(nodes, [0.0] * n, [1.0] * n, tasks, cpu, [mem] * n, 0.0)
    for j in range(n):
        stt.status[j] = WAITING
        stt.pending.add(j)
    stt.apply(places=placements)
    return stt


def test_opt_min_vs_opt_avg():
    """Node 0: A, B (c = 1); node 1: X (c = 1), Y (c = 0.6); node 2: X, Z (c = 0.6).
    Loads 2, 1.6, 1.6 -> floor 1/2. OPT=MIN (progressive filling): node 0
    saturates at 1/2 (A, B frozen), nodes 1 and 2 at 1/1.6 = 0.625 (X, Y, Z):
    total 2.875. OPT=AVG: A = B = 1/2 forced; X down to the floor 1/2 lets
    Y = Z = 0.5/0.6: total 1 + 0.5 + 2 x 5/6 = 3.1667."""
    pl_ = {0: [0], 1: [0], 2: [1, 2], 3: [1], 4: [2]}
    cpu = [1, 1, 1, 0.6, 0.6]
    tasks = [1, 1, 2, 1, 1]
    s_min = _state_with(pl_, cpu, tasks, 3)
    allocate(s_min, "MIN")
    np.testing.assert_allclose(s_min.y, [0.5, 0.5, 0.625, 0.625, 0.625])
    s_avg = _state_with(pl_, cpu, tasks, 3)
    assert allocate(s_avg, "AVG") == 0
    np.testing.assert_allclose(s_avg.y, [0.5, 0.5, 0.5, 5 / 6, 5 / 6], atol=1e-7)
    assert s_avg.y.sum() > s_min.y.sum() + 0.29


def test_max_min_spare_cpu_goes_to_others():
    """Node 0 overloaded (A, B: c = 1, load 2), node 1 has B's second task and
    C (c = 0.5): B frozen at 1/2 by node 0, C gets the rest of node 1 -> 1."""
    s = _state_with({0: [0], 1: [0, 1], 2: [1]}, [1, 1, 0.5], [1, 2, 1], 2)
    allocate(s, "MIN")
    np.testing.assert_allclose(s.y, [0.5, 0.5, 1.0])
    assert max_min_yields(np.zeros((0, 0))).shape == (0,)


def test_priority_convention():
    s = DfrsState(1, [0.0, 0.0, 5.0], [1, 1, 1], [1, 1, 1], [1, 1, 1], [0.1] * 3, 0.0)
    s.now = 10.0
    s.vt[:] = [2.0, 0.0, 0.0]
    assert s.priority(0) == pytest.approx(10 / 4) and math.isinf(s.priority(1))
    assert s.by_priority([0, 1, 2]) == [1, 2, 0]  # infinite first, ties by submission


def test_priority_of_a_virtual_time_whose_square_underflows_is_infinite():
    """Found by `schedlab check-policy`: a job run for ~1e-253 s (two submits
    that close) has vt^2 == 0.0; its priority is the limit, +inf, not a
    ZeroDivisionError in GreedyP's victim ordering."""
    s = DfrsState(1, [0.0, 0.0, 0.0], [1, 1, 1], [1, 1, 1], [1, 1, 1], [0.1] * 3, 0.0)
    s.now = 10.0
    s.vt[:] = [3.7e-253, 1e-160, 2.0]  # squares: 0.0 (underflow), 1e-320 (10 / 1e-320 overflows)
    assert math.isinf(s.priority(0)) and math.isinf(s.priority(1))
    assert s.by_priority([2, 1, 0]) == [0, 1, 2]
    jobs = pl.DataFrame(
        {
            "job_id": [0, 1],
            "submit": [0.0, 3.6581897313751635e-253],
            "runtime": [100.0, 100.0],
            "procs": [1, 4],
            "cpu_need": [1.0, 1.0],
            "memory": [0.5, 0.5],
        }
    )
    per_job, _ = run_table(jobs, DFRS_POLICIES["GreedyP*/OPT=MIN"], nodes=2, check=True)
    assert np.isfinite(per_job["end"]).all()


_job = st.tuples(
    st.integers(0, 400),
    st.integers(1, 600),
    st.integers(1, 4),
    st.sampled_from([0.25, 0.5, 1.0]),
    st.sampled_from([0.2, 0.3, 0.5, 0.6, 1.0]),
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    jobs=st.lists(_job, min_size=1, max_size=8),
    nodes=st.integers(2, 4),
    name=st.sampled_from(sorted(DFRS_POLICIES)),
    penalty=st.sampled_from([0.0, 30.0, 300.0]),
    period=st.sampled_from([40.0, 150.0, 600.0]),
)
def test_invariants_and_no_progress_while_paused_or_in_penalty(jobs, nodes, name, penalty, period):
    rel, proc, tasks, cpu, mem = (list(x) for x in zip(*jobs))
    tasks = [min(t, nodes) for t in tasks]
    res = _sim(
        name, rel, proc, tasks, cpu, mem, nodes, penalty=penalty, period=period, snapshots=True
    )  # check=True inside
    check_progress(res, rel, proc)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    jobs=st.lists(_job, min_size=1, max_size=6), nodes=st.integers(2, 3), name=st.sampled_from(sorted(DFRS_POLICIES))
)
def test_lp_bound_below_achieved_max_stretch(jobs, nodes, name):
    rel, proc, tasks, cpu, mem = (list(x) for x in zip(*jobs))
    tasks = [min(t, nodes) for t in tasks]
    df = pl.DataFrame(
        {
            "job_id": list(range(len(rel))),
            "submit": [float(x) for x in rel],
            "runtime": [float(x) for x in proc],
            "procs": tasks,
            "cpu_need": cpu,
            "memory": mem,
        }
    )
    per_job, summary = run_table(df, DFRS_POLICIES[name], nodes=nodes, bound=True, check=True)
    assert summary["stretch_lower_bound"] <= summary["stretch_max"] * (1 + 1e-9)
    assert summary["degradation"] >= 1 - 1e-9
    assert -1e-9 <= summary["underutilization"]


def test_penalty_time_is_underutilization_hand_worked():
    """1 node, memory 0.6 (one job at a time), penalty 300, GreedyP*/OPT=MIN.
    J0 (p = 1000) runs from 0; J1 (p = 100) arrives at 100, has infinite
    priority and pauses J0; J1 ends at 200; the '*' pass resumes J0, which
    makes no progress for 300 s, then runs 500 .. 1400. D(t) >= 1 = |P| on
    [0, 1400); the node works except on [200, 500) (J0 in its penalty): the
    underutilization is 300 node-seconds, / total work 1100 (§5.3.1; the
    penalty CPU does no work, §5.3.2)."""
    df = pl.DataFrame({"job_id": [0, 1], "submit": [0.0, 100.0], "runtime": [1000.0, 100.0], "procs": [1, 1]})
    per_job, summary = run_table(df, DFRS_POLICIES["GreedyP*/OPT=MIN"], nodes=1, memory=0.6, check=True)
    assert per_job["end"].tolist() == [1400.0, 200.0] and per_job["pauses"].tolist() == [1, 0]
    assert summary["underutilization"] == pytest.approx(300 / 1100, rel=1e-12)


def test_single_job_alone_no_underutilization_and_lublin_smoke():
    df = pl.DataFrame({"job_id": [0], "submit": [5.0], "runtime": [100.0], "procs": [4]})
    per_job, summary = run_table(df, DFRS_POLICIES["GreedyPM*/OPT=AVG"], nodes=4, check=True)
    assert per_job["end"][0] == 105.0 and summary["underutilization"] == pytest.approx(0.0, abs=1e-12)
    from schedlab.workloads.lublin import lublin_workload

    jobs = lublin_workload(np.random.default_rng(3), njobs=80, nodes=16)
    for name in ("GreedyPM*/OPT=MIN", "GreedyP*/OPT=AVG"):
        pj, sm = run_table(jobs, DFRS_POLICIES[name], nodes=16, memory=0.4, check=True)
        assert np.all(pj["end"] >= pj["submit"] + pj["runtime"] - 1e-6)
        assert sm["n_jobs"] == 80 and 0 <= sm["underutilization"] < 1


def test_user_errors():
    df = pl.DataFrame({"job_id": [0, 1], "submit": [0.0, 1.0], "runtime": [10.0, 10.0], "procs": [1, 50]})
    with pytest.raises(UserError, match="job 1 has 50 tasks"):
        run_table(df, DFRS_POLICIES["Greedy*/OPT=MIN"], nodes=4, memory=0.5)
    pj, sm = run_table(df, DFRS_POLICIES["Greedy*/OPT=MIN"], nodes=4, memory=0.5, oversize="drop")
    assert sm["dropped_oversize"] == 1 and len(pj["end"]) == 1
    with pytest.raises(UserError, match="memory"):
        run_table(df, DFRS_POLICIES["Greedy*/OPT=MIN"], nodes=4, memory=1.5)


class _Recorder:
    """Greedy*/per/OPT=MIN that records the instants of its periodic calls."""

    def __init__(self, period):
        self.inner = DFRS_POLICIES["Greedy*/per/OPT=MIN"](period=period)
        self.period, self.opt, self.calls = period, "MIN", []

    def on_arrival(self, st, j):
        self.inner.on_arrival(st, j)

    def on_completion(self, st):
        self.inner.on_completion(st)

    def on_period(self, st):
        self.calls.append(st.now)
        self.inner.on_period(st)


def test_periodic_instants_are_on_the_grid_and_skipped_while_idle():
    """Jobs at 0 (p 250) and 1000 (p 100), period 100 from r_min = 0: remaps at
    100, 200 (job 0 running), none while idle (300..900; the instant 1000 is an
    arrival instant on the grid), then 1000 (job 1 just arrived) and 1100 is
    its completion instant: nothing is left, so no call."""
    pol = _Recorder(100.0)
    res = simulate_dfrs([0, 1000], [250, 100], [1, 1], [1, 1], [0.5, 0.5], 1, pol, check=True)
    assert pol.calls == [100.0, 200.0, 1000.0]
    np.testing.assert_allclose(res.state.end, [250, 1100])
