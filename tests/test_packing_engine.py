"""The packing engine (schedlab.engines.packing.sim.engine): hand-worked timing and metrics,
capacity invariants on generated instances, errors, the synthetic workload."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.engines.packing import run_table
from schedlab.engines.packing.policies import PACKING_POLICIES
from schedlab.engines.packing.policies.base import PackingPolicy
from schedlab.engines.packing.sim.engine import FIT_TOL, CapacityExceeded, PlacementError, simulate_packing
from schedlab.errors import UserError
from schedlab.workloads.packing_synthetic import packing_workload

FIFOFF = PACKING_POLICIES["FIFO-FF"]


class GreedyVector(PackingPolicy):
    """Multi-resource test policy: queue order, first server that fits in every dimension."""

    name = "greedy-vector"

    def __init__(self, cluster, **params):
        super().__init__(cluster)
        self.queue: list[int] = []

    def arrive(self, job):
        self.queue.append(job)

    def depart(self, job, server):
        pass

    def schedule(self):
        c = self.cluster
        free = [c.free(s).copy() for s in range(c.servers)]
        out, keep = [], []
        for j in self.queue:
            r = c.demand(j)
            for s in range(c.servers):
                if np.all(r <= free[s] + FIT_TOL):
                    free[s] -= r
                    out.append((j, s))
                    break
            else:
                keep.append(j)
        self.queue = keep
        return out


def run(policy, submit, duration, demand, capacity, **kw):
    return simulate_packing(submit, duration, demand, capacity, policy, **kw)


# ---- hand-worked ---------------------------------------------------------------------------------


def test_slotted_timing_capacity_free_again_at_t_plus_duration():
    # job 0 arrives at slot 2 with duration 3: runs slots 2, 3, 4; the server is free at slot 5.
    r = run(FIFOFF, [2, 2], [3, 1], [1.0, 1.0], [1.0])
    assert r.start.tolist() == [2.0, 5.0]
    assert r.end.tolist() == [5.0, 6.0]
    assert r.wait.tolist() == [0.0, 3.0]
    assert r.server.tolist() == [0, 0]
    assert r.epochs == 3  # slots 2, 5, 6: the empty slots 0, 1, 3, 4 are skipped


def test_epoch_grid_and_event_driven():
    # Δ = 0.5: a job submitted at 0.3 joins at 0.5; its end 1.5 + 0.7 = 2.2 frees the server at 2.5
    r = run(FIFOFF, [0.3, 0.4], [1.7, 1.0], [1.0, 1.0], [1.0], epoch=0.5)
    assert r.start.tolist() == [0.5, 2.5]
    r = run(FIFOFF, [0.3, 0.4], [1.7, 1.0], [1.0, 1.0], [1.0], epoch=None)
    assert r.start.tolist() == [0.3, 2.0]
    assert r.end.tolist() == [2.0, 3.0]


def test_time_average_metrics_by_hand():
    # one server of capacity 1, FIFO-FF:
    #   t=0 job0 (1.0, dur 4) starts; t=1 job1 (0.5) queues; t=2 job2 (0.5) queues;
    #   t=4 job0 leaves, job1 and job2 start; t=5 job2 leaves; t=6 job1 leaves.
    r = run(FIFOFF, [0, 1, 2], [4, 2, 1], [1.0, 0.5, 0.5], [1.0], sample_every=1.0)
    assert r.start.tolist() == [0, 4, 4]
    assert r.horizon == (0.0, 6.0)
    assert r.queue_jobs_mean == pytest.approx((1 * 1 + 2 * 2) / 6)
    assert r.queue_resource_mean[0] == pytest.approx((0.5 * 1 + 1.0 * 2) / 6)
    assert r.running_jobs_mean == pytest.approx((1 * 4 + 2 * 1 + 1 * 1) / 6)
    assert r.utilisation[0] == pytest.approx((1.0 * 4 + 1.0 * 1 + 0.5 * 1) / 6)
    assert r.wait_mean == pytest.approx(5 / 3)
    assert r.wait_p99 == pytest.approx(2.98)  # waits 0, 2, 3; linear interpolation at rank 1.98
    assert r.throughput == pytest.approx(0.5)
    assert r.makespan == 6.0
    s = r.samples
    assert s["t"].tolist() == [0, 1, 2, 3, 4, 5, 6]
    assert s["queue_jobs"].tolist() == [0, 1, 2, 2, 0, 0, 0]
    assert s["queue_resource"][:, 0].tolist() == [0, 0.5, 1.0, 1.0, 0, 0, 0]
    assert s["running_jobs"].tolist() == [1, 1, 1, 1, 2, 1, 0]
    summary = r.summary()
    assert summary["queue_resource_mean"] == pytest.approx(2.5 / 6) and "utilisation" in summary


def test_until_stops_the_run_and_leaves_unstarted_jobs_nan():
    r = run(FIFOFF, [0, 0], [10, 1], [1.0, 1.0], [1.0], until=5.0)
    assert r.start[0] == 0 and np.isnan(r.start[1]) and r.server[1] == -1
    assert r.horizon == (0.0, 5.0)
    assert r.queue_jobs_mean == 1.0 and r.completed == 0 and np.isnan(r.makespan)


def test_bad_placements_raise():
    class Overfill(GreedyVector):
        def schedule(self):
            out = [(j, 0) for j in self.queue]
            self.queue = []
            return out

    with pytest.raises(CapacityExceeded) as e:
        run(Overfill, [0, 0], [1, 1], [0.6, 0.6], [1.0])
    assert e.value.job == 1 and e.value.server == 0 and e.value.free.tolist() == pytest.approx([0.4])

    class Twice(GreedyVector):
        def schedule(self):
            return [(0, 0), (0, 0)]

    with pytest.raises(PlacementError):
        run(Twice, [0], [1], [0.1], [1.0])


def test_cluster_views_are_read_only():
    seen = {}

    class Peek(GreedyVector):
        def schedule(self):
            seen["free"] = self.cluster.free(0)
            return super().schedule()

    run(Peek, [0], [1], [[0.5, 0.5]], [[1.0, 2.0]])
    with pytest.raises(ValueError):
        seen["free"][0] = 5.0


def test_multi_resource_vector_fit():
    # (cpu, mem) capacity (1, 1): jobs (0.6, 0.2) and (0.3, 0.9) cannot share (mem 1.1)
    r = run(GreedyVector, [0, 0], [2, 2], [[0.6, 0.2], [0.3, 0.9]], [[1.0, 1.0]])
    assert r.start.tolist() == [0, 2]
    assert r.utilisation.tolist() == pytest.approx([(0.6 * 2 + 0.3 * 2) / 4, (0.2 * 2 + 0.9 * 2) / 4])


def test_single_resource_policies_reject_several_resources():
    for cls in PACKING_POLICIES.values():
        if getattr(cls, "single_resource", True) and cls.__module__.endswith(("best_fit", "fifo_ff")):
            with pytest.raises(UserError, match="single-resource.*2 resources"):
                run(cls, [0], [1], [[0.5, 0.5]], [[1.0, 1.0]])


def test_deterministic():
    jobs = packing_workload(np.random.default_rng(3), slots=2000, rate=0.2, uniform=(0.1, 0.9), mean_service=10)
    a = run(PACKING_POLICIES["BF-J/S"], jobs["submit"], jobs["duration"], jobs["demand"], np.ones(3))
    b = run(PACKING_POLICIES["BF-J/S"], jobs["submit"], jobs["duration"], jobs["demand"], np.ones(3))
    assert np.array_equal(a.start, b.start) and np.array_equal(a.server, b.server)
    assert a.queue_resource_mean.tolist() == b.queue_resource_mean.tolist()


# ---- properties on generated instances -------------------------------------------------------------

SIZES = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]


@st.composite
def instances(draw):
    n = draw(st.integers(0, 14))
    submit = sorted(draw(st.lists(st.integers(0, 12), min_size=n, max_size=n)))
    duration = draw(st.lists(st.integers(1, 5), min_size=n, max_size=n))
    demand = draw(st.lists(st.sampled_from(SIZES), min_size=n, max_size=n))
    capacity = draw(st.lists(st.sampled_from([0.5, 0.7, 1.0]), min_size=1, max_size=3))
    demand = [min(r, max(capacity)) for r in demand]  # every job fits an empty server (the engine refuses others)
    return submit, duration, demand, capacity


def assert_capacity_respected(submit, duration, demand, capacity, r):
    """Independent check from the output: at every start, each server's load ≤ capacity."""
    demand = np.asarray(demand, dtype=float)
    for j in np.flatnonzero(~np.isnan(r.start)):
        s, t = r.server[j], r.start[j]
        on = (r.server == s) & (r.start <= t) & (r.end > t)
        assert demand[on].sum() <= capacity[s] + 1e-9 * max(1, on.sum())


@settings(max_examples=60, deadline=None)
@given(instances())
def test_every_policy_respects_capacity_and_little(inst):
    submit, duration, demand, capacity = inst
    for name, cls in PACKING_POLICIES.items():
        if not cls.__module__.endswith(("best_fit", "fifo_ff")):
            continue
        r = run(cls, submit, duration, demand, capacity, check=True)  # check: invariant after every epoch
        assert_capacity_respected(submit, duration, demand, capacity, r)
        assert not np.isnan(r.start).any(), name  # every job runs (else the engine raises PackingStalled)
        assert np.all(r.wait >= 0) and np.all(r.start == np.floor(r.start))
        if len(submit):
            # integer slots: queue area = Σ wait, queued-resource area = Σ demand·wait, held = Σ demand·duration
            h = r.horizon[1] - r.horizon[0]
            if h > 0:
                assert r.horizon == (submit[0], r.end.max())
                assert r.queue_jobs_mean * h == pytest.approx(r.wait.sum(), abs=1e-9)
                assert r.queue_resource_mean[0] * h == pytest.approx(np.dot(demand, r.wait), abs=1e-9)
                assert r.utilisation[0] * sum(capacity) * h == pytest.approx(np.dot(demand, duration), abs=1e-9)


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_vector_engine_respects_capacity(data):
    n = data.draw(st.integers(1, 12))
    submit = sorted(data.draw(st.lists(st.integers(0, 8), min_size=n, max_size=n)))
    duration = data.draw(st.lists(st.integers(1, 4), min_size=n, max_size=n))
    demand = data.draw(st.lists(st.tuples(st.sampled_from(SIZES), st.sampled_from(SIZES)), min_size=n, max_size=n))
    L = data.draw(st.integers(1, 3))
    r = run(GreedyVector, submit, duration, demand, np.ones((L, 2)), check=True, epoch=None)
    dem = np.asarray(demand)
    for j in range(n):
        on = (r.server == r.server[j]) & (r.start <= r.start[j]) & (r.end > r.start[j])
        assert np.all(dem[on].sum(axis=0) <= 1 + 1e-9 * on.sum())


# ---- workload and the registry adapter ----------------------------------------------------------------


def test_packing_workload():
    rng = np.random.default_rng(0)
    jobs = packing_workload(
        rng, slots=50_000, rate=0.2, sizes=[2, 5], probs=[2 / 3, 1 / 3], service="geometric", mean_service=10
    )
    assert jobs.columns == ["job_id", "submit", "duration", "demand"]
    assert len(jobs) / 50_000 == pytest.approx(0.2, rel=0.03)
    sub = jobs["submit"].to_numpy()
    assert np.all(np.diff(sub) >= 0) and np.all(sub == np.floor(sub))
    dur = jobs["duration"].to_numpy()
    assert dur.min() >= 1 and np.all(dur == np.floor(dur)) and dur.mean() == pytest.approx(10, rel=0.03)
    assert (jobs["demand"] == 2).mean() == pytest.approx(2 / 3, abs=0.02)
    fixed = packing_workload(
        np.random.default_rng(0), slots=100, rate=1.0, uniform=(0.1, 0.2), service="fixed", mean_service=7
    )
    assert set(fixed["duration"].to_list()) == {7.0}
    assert fixed["demand"].min() >= 0.1 and fixed["demand"].max() <= 0.2
    with pytest.raises(UserError):
        packing_workload(rng, slots=10, rate=1.0)


def test_run_table_adapter():
    import polars as pl

    jobs = pl.DataFrame({"job_id": [10, 11], "submit": [0.0, 0.0], "runtime": [3.0, 1.0], "demand": [0.7, 0.7]})
    per_job, summary, samples = run_table(jobs, PACKING_POLICIES["BF-J/S"], servers=1, capacity=1.0, epoch=1.0)
    assert per_job["start"].tolist() == [0.0, 3.0] and per_job["job_id"].tolist() == [10, 11]
    assert summary["makespan"] == 4.0 and samples is None
    two = pl.DataFrame({"job_id": [0], "submit": [0.0], "duration": [1.0], "cpu": [0.5], "mem": [0.2]})
    per_job, summary, _ = run_table(two, GreedyVector, servers=2, capacity=[1.0, 1.0])
    assert "utilisation_cpu" in summary and "utilisation_mem" in summary
    with pytest.raises(UserError, match="single-resource"):
        run_table(two, PACKING_POLICIES["BF-J"], servers=2)


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_every_registered_policy_respects_capacity_unit_servers(data):
    """All registered policies (VQS needs capacity 1 and sizes in (0, 1]) on unit servers."""
    n = data.draw(st.integers(1, 14))
    submit = sorted(data.draw(st.lists(st.integers(0, 10), min_size=n, max_size=n)))
    duration = data.draw(st.lists(st.integers(1, 5), min_size=n, max_size=n))
    demand = data.draw(st.lists(st.one_of(st.sampled_from(SIZES), st.floats(0.05, 1.0)), min_size=n, max_size=n))
    capacity = [1.0] * data.draw(st.integers(1, 3))
    for name, cls in PACKING_POLICIES.items():
        r = run(cls, submit, duration, demand, capacity, check=True)
        assert_capacity_respected(submit, duration, demand, capacity, r)
        assert np.all(np.isnan(r.start) | (r.wait >= 0)), name
