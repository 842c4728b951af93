"""Schedule views are the schedule: the recorded boxes against the per-job
rows, and the resources they hold never double-booked (queue shares sum to 1
while the server is busy; no processor held twice; no server capacity or
node memory exceeded). Hypothesis draws small workloads with ties."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.views.record import QueueRecorder
from schedlab.views.replay import record_run
from schedlab.views.schedule import PAUSED, RESERVATION, RUN, Stack, step_count

#: Service delivered by the recorded shares equals the job's size to this
#: relative error (sums of share x duration in double precision).
SERVICE_REL_TOL = 1e-9
#: Shares of the served pool sum to 1 to this error (w_i / W summed).
SHARE_SUM_TOL = 1e-12
#: Capacity checks: a sum of held amounts may exceed the capacity by rounding only.
HELD_TOL = 1e-9

SETTINGS = settings(max_examples=25, deadline=None)


def _queue_jobs(draw_sub, draw_size, draw_err):
    n = len(draw_sub)
    submit = np.cumsum(draw_sub)
    size = np.asarray(draw_size, dtype=float)
    return pl.DataFrame(
        {
            "job_id": np.arange(n) + 10,
            "submit": submit,
            "size": size,
            "estimate": size * np.asarray(draw_err),
            "weight": np.ones(n),
        }
    )


queue_workloads = st.integers(1, 14).flatmap(
    lambda n: st.tuples(
        st.lists(st.sampled_from([0.0, 0.25, 0.5, 1.0, 2.0]), min_size=n, max_size=n),
        st.lists(st.sampled_from([0.1, 0.5, 1.0, 1.5, 3.0]), min_size=n, max_size=n),
        st.lists(st.sampled_from([0.5, 1.0, 2.0]), min_size=n, max_size=n),
    )
)


@pytest.mark.parametrize("policy", ["PS", "PSBS", "LAS", "SRPTE", "FSPE+PS", "FIFO"])
@SETTINGS
@given(w=queue_workloads)
def test_queue_views_are_the_schedule(policy, w):
    jobs = _queue_jobs(*w)
    s = record_run("queue", jobs, policy)
    b = s.boxes
    size, submit, completion = jobs["size"].to_numpy(), s.jobs["submit"], s.jobs["completion"]
    run0 = (b["panel"] == 0) & (b["kind"] == RUN)
    for r in range(jobs.height):
        mine = run0 & (b["row"] == r)
        served = float(np.sum(b["value"][mine] * (b["t1"][mine] - b["t0"][mine])))
        assert math.isclose(served, size[r], rel_tol=SERVICE_REL_TOL, abs_tol=1e-12)
        assert b["t0"][mine].min() >= submit[r]
        assert b["t1"][mine].max() == completion[r]  # the interval ends at the row's completion, to the bit
    # the server panel: stacked shares of one instant never overlap, and fill [0, 1] when busy
    srv = b["panel"] == 1
    cuts = np.unique(np.r_[b["t0"][srv], b["t1"][srv]])
    for a, c in zip(cuts[:-1], cuts[1:]):
        on = srv & (b["t0"] <= a) & (b["t1"] >= c)
        if on.any():
            y0, y1 = np.sort(b["y0"][on]), np.sort(b["y1"][on])
            assert abs(y1[-1] - 1.0) <= SHARE_SUM_TOL * on.sum() and y0[0] == 0.0
            assert np.all(y0[1:] >= y1[:-1] - SHARE_SUM_TOL)


@SETTINGS
@given(w=queue_workloads)
def test_queue_shares_sum_to_one_whenever_busy(w):
    from schedlab.engines import get_engine

    for policy in ("PS", "PSBS", "LAS"):
        rec = QueueRecorder()
        get_engine("queue").run(_queue_jobs(*w), policy, recorder=rec)
        for _, shares in rec.epochs:
            if shares:
                assert abs(sum(x for _, x in shares) - 1.0) <= SHARE_SUM_TOL


def _batch_jobs(subs, runs, procs, extra):
    n = len(subs)
    runtime = np.asarray(runs, dtype=float)
    return pl.DataFrame(
        {
            "job_id": np.arange(n),
            "submit": np.cumsum(subs).astype(float),
            "runtime": runtime,
            "procs": np.asarray(procs, dtype=np.int64),
            "requested_time": runtime + np.asarray(extra, dtype=float) + 1.0,
        }
    )


batch_workloads = st.integers(1, 16).flatmap(
    lambda n: st.tuples(
        st.lists(st.sampled_from([0, 0, 1, 3, 5]), min_size=n, max_size=n),
        st.lists(st.sampled_from([0, 1, 2, 4, 10]), min_size=n, max_size=n),
        st.lists(st.integers(1, 8), min_size=n, max_size=n),
        st.lists(st.sampled_from([0, 0, 2, 9]), min_size=n, max_size=n),
    )
)


def _no_double_booking(lanes: np.ndarray, t0: np.ndarray, t1: np.ndarray) -> None:
    """On every lane, intervals of positive length do not overlap."""
    for lane in np.unique(lanes):
        on = (lanes == lane) & (t1 > t0)
        order = np.argsort(t0[on], kind="stable")
        a, b = t0[on][order], t1[on][order]
        assert np.all(a[1:] >= b[:-1]), f"lane {lane} held twice"


@pytest.mark.parametrize("policy", ["FCFS", "EASY"])
@pytest.mark.parametrize("model", ["procs", "nodes"])
@SETTINGS
@given(w=batch_workloads)
def test_batch_processors_never_double_booked(policy, model, w):
    jobs = _batch_jobs(*w)
    system = {"model": model, "procs": 8} if model == "procs" else {"model": "nodes", "nodes": 4, "tasks_per_node": 2}
    s = record_run("batch", jobs, policy, system=system)
    b = s.boxes
    run = b["kind"] == RUN
    need = s.jobs["need"]
    for r in range(jobs.height):
        mine = run & (b["row"] == r)
        assert b["held"][mine].sum() == need[r]  # exactly its processors
        assert np.all(b["t0"][mine] == s.jobs["start"][r]) and np.all(b["t1"][mine] == s.jobs["end"][r])
        ids = [p for a, c in s.allocation[r] for p in range(a, c + 1)]
        assert len(ids) == len(set(ids)) == need[r] and all(0 <= p < s.capacity for p in ids)
    # one box per processor, so a lane is one processor id
    lanes, t0, t1 = [], [], []
    for r, ranges in s.allocation.items():
        for a, c in ranges:
            for p in range(a, c + 1):
                lanes.append(p)
                t0.append(s.jobs["start"][r])
                t1.append(s.jobs["end"][r])
    _no_double_booking(np.asarray(lanes), np.asarray(t0), np.asarray(t1))


@SETTINGS
@given(w=batch_workloads)
def test_easy_heads_start_by_their_first_reservation_with_exact_estimates(w):
    jobs = _batch_jobs(*w).with_columns(pl.col("runtime").alias("requested_time"))
    jobs = jobs.with_columns(pl.col("requested_time").clip(lower_bound=1.0), pl.col("runtime").clip(lower_bound=1.0))
    s = record_run("batch", jobs, "EASY", system={"procs": 8})
    b = s.boxes
    res = b["kind"] == RESERVATION
    for r in np.unique(b["row"][res]):
        shadow = b["t0"][res & (b["row"] == r)].min()
        assert s.jobs["start"][r] <= shadow


def test_batch_contiguous_first_and_lowest_ids():
    """Hand-worked: 8 processors; A(4) and B(2) start at 0, A ends at 1, C(4)
    starts at 1 and takes A's 0-3 (the lowest contiguous block), D(3) at 1
    must split: 6-7 and... none left contiguous, so it waits; here it fits
    after B ends at 2: 4-6."""
    jobs = pl.DataFrame(
        {
            "job_id": [0, 1, 2, 3],
            "submit": [0.0, 0.0, 0.5, 0.5],
            "runtime": [1.0, 2.0, 5.0, 1.0],
            "procs": [4, 2, 4, 3],
            "requested_time": [1.0, 2.0, 5.0, 1.0],
        }
    )
    s = record_run("batch", jobs, "FCFS", system={"procs": 8})
    assert s.allocation == {0: [(0, 3)], 1: [(4, 5)], 2: [(0, 3)], 3: [(4, 6)]}


def test_stack_splits_only_when_no_block_fits():
    stack = Stack(8)
    a, b, c = stack.take(2), stack.take(3), stack.take(3)
    assert (a, b, c) == ([(0, 2)], [(2, 5)], [(5, 8)])
    stack.give(a)
    stack.give(c)
    assert stack.take(4) == [(0, 2), (5, 7)]  # no 4-block free: the lowest pieces
    assert stack.take(1) == [(7, 8)]


packing_workloads = st.integers(1, 14).flatmap(
    lambda n: st.tuples(
        st.lists(st.sampled_from([0.0, 0.0, 0.5, 1.0, 2.0]), min_size=n, max_size=n),
        st.lists(st.sampled_from([0.0, 0.5, 1.0, 3.0]), min_size=n, max_size=n),
        st.lists(st.sampled_from([0.1, 0.2, 0.3, 0.4, 0.6, 1.0]), min_size=n, max_size=n),
    )
)


@pytest.mark.parametrize("policy", ["FIFO-FF", "BF-J", "VQS"])
@pytest.mark.parametrize("epoch", [0.0, 1.0])
@SETTINGS
@given(w=packing_workloads)
def test_packing_server_capacity_never_exceeded(policy, epoch, w):
    subs, durs, dem = w
    jobs = pl.DataFrame(
        {
            "job_id": np.arange(len(subs)),
            "submit": np.cumsum(subs),
            "duration": np.asarray(durs, dtype=float),
            "demand": np.asarray(dem, dtype=float),
        }
    )
    s = record_run("packing", jobs, policy, system={"servers": 2, "capacity": 1.0, "epoch": epoch})
    b = s.boxes
    for r in range(jobs.height):
        mine = b["row"] == r
        if not np.isnan(s.jobs["start"][r]):
            assert math.isclose(b["held"][mine].sum(), dem[r], abs_tol=HELD_TOL)
            assert np.all(b["t0"][mine] == s.jobs["start"][r])
            assert np.all(b["t1"][mine] == s.jobs["hold_end"][r])
            assert s.jobs["hold_end"][r] >= s.jobs["end"][r]
            assert np.all(np.floor(b["y0"][mine] + 1e-12) == s.jobs["server"][r])
    # stacked pieces of one server never overlap in (time, place): capacity is never exceeded
    for server in (0, 1):
        on = (np.floor(b["y0"] + 1e-12) == server) & (b["t1"] > b["t0"])
        idx = np.flatnonzero(on)
        for i in idx:
            for j in idx:
                if i < j and b["t0"][i] < b["t1"][j] and b["t0"][j] < b["t1"][i]:
                    assert b["y1"][i] <= b["y0"][j] + HELD_TOL or b["y1"][j] <= b["y0"][i] + HELD_TOL


def test_dfrs_node_memory_and_cpu_never_exceeded():
    rng = np.random.default_rng(5)
    n = 40
    jobs = pl.DataFrame(
        {
            "job_id": np.arange(n),
            "submit": np.cumsum(rng.exponential(40.0, n)),
            "runtime": rng.exponential(200.0, n) + 1.0,
            "procs": rng.integers(1, 6, n),
            "cpu_need": rng.choice([0.25, 0.5, 1.0], n),
            "memory": rng.choice([0.1, 0.2, 0.4], n),
        }
    )
    for policy in ("GreedyPM*/OPT=MIN", "GreedyPM/per/OPT=AVG", "MCB8*/per/OPT=MIN"):
        s = record_run("dfrs", jobs, policy, system={"nodes": 6, "penalty": 30.0})
        b = s.boxes
        nodes = (b["panel"] == 0) & (b["t1"] > b["t0"])
        for k in range(6):
            on = nodes & (np.floor(b["y0"] + 1e-12) == k)
            times = np.unique(np.r_[b["t0"][on], b["t1"][on]])
            for a, c in zip(times[:-1], times[1:]):
                live = on & (b["t0"] <= a) & (b["t1"] >= c)
                assert b["held"][live].sum() <= 1.0 + HELD_TOL  # node memory
                assert b["y1"][live].max(initial=k) <= k + 1 + HELD_TOL  # node CPU
        for r in range(n):
            mine = nodes & (b["row"] == r)
            assert b["t0"][mine].min() == s.jobs["start"][r] and b["t1"][mine].max() == s.jobs["end"][r]
        assert len(s.marks["migration"]["t"]) == int(s.jobs["migrations"].sum())  # one mark per migration
        paused = (b["panel"] == 1) & (b["kind"] == PAUSED)
        for r in range(n):  # a paused interval per pause that was resumed (every job completes)
            assert (paused & (b["row"] == r)).sum() == s.jobs["pauses"][r]


def test_step_count_counts_intervals():
    t, v = step_count(np.array([0.0, 1.0, 1.0]), np.array([2.0, 1.0, 3.0]))
    assert t.tolist() == [0.0, 1.0, 2.0, 3.0] and v.tolist() == [1.0, 2.0, 1.0, 0.0]


def test_envelope_keeps_every_value_in_force():
    from schedlab.views.page import envelope

    rng = np.random.default_rng(3)
    t = np.cumsum(rng.exponential(1.0, 5000))
    v = rng.integers(0, 50, 5000).astype(float)
    x, low, high = envelope(t, v, 37)
    edges = np.r_[x, t[-1]]
    for i in range(37):
        inside = (t > edges[i]) & (t < edges[i + 1])
        carried = v[max(np.searchsorted(t, edges[i], side="right") - 1, 0)]
        vals = np.r_[v[inside], carried]
        assert low[i] <= vals.min() and high[i] >= vals.max()


def test_a_windowed_page_carries_only_the_jobs_it_draws():
    from schedlab.views.page import build_figure

    jobs = _batch_jobs([1] * 40, [5] * 40, [2] * 40, [0] * 40)
    s = record_run("batch", jobs, "FCFS", system={"procs": 4})
    _, whole = build_figure([s])
    _, part = build_figure([s], window=(10.0, 20.0))
    assert whole["0"]["rows"] is None and len(whole["0"]["cols"]["job_id"]) == 40
    b = s.boxes
    drawn = np.unique(b["row"][(b["t1"] >= 10.0) & (b["t0"] <= 20.0)])
    assert part["0"]["rows"] == drawn.tolist() and part["0"]["cols"]["job_id"] == s.jobs["job_id"][drawn].tolist()
