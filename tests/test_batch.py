"""The batch engine (schedlab.engines.batch.sim.engine) with FCFS and EASY: hand-worked
schedules, the protection of the head job's reservation, property tests on
small random instances and a replay of the HPC2N log. The tests that go
through ``run_table`` run on both engine paths (the `engine_path` fixture:
the Python reference and the compiled kernels of schedlab.engines.batch.sim.fast)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.engines.batch.policies import BATCH_POLICIES, EASY, FCFS
from schedlab.engines.batch.policies.base import BatchPolicy
from schedlab.engines.batch.sim.engine import (
    BOUNDED_STRETCH_THRESHOLD,
    BatchCapacityExceeded,
    BatchStartError,
    simulate_batch,
)
from schedlab.errors import UserError
from tests.conftest import run_batch_table

HPC2N = Path(__file__).resolve().parents[2] / "shared" / "data" / "pwa-swf" / "HPC2N-2002-2.2-cln.swf.gz"


def table(rows, requested=None):
    """rows: (submit, runtime, procs); job ids 100, 101, ...; requested
    defaults to runtime (exact estimates)."""
    submit, runtime, procs = zip(*rows)
    return pl.DataFrame(
        {
            "job_id": [100 + k for k in range(len(rows))],
            "submit": [float(x) for x in submit],
            "runtime": [float(x) for x in runtime],
            "procs": list(procs),
            "requested_time": [float(x) for x in (requested or runtime)],
        }
    )


def run(rows, policy, requested=None, **system):
    system.setdefault("model", "procs")
    if system["model"] == "procs":
        system.setdefault("procs", 4)
    per_job, summary = run_batch_table(table(rows, requested), policy, **system)
    return per_job, summary


# Example 1, 4 processors (submit, runtime = requested, procs):
#   A (0, 10, 2)  B (1, 10, 4)  C (2, 100, 2)  D (3, 5, 2)
# FCFS: A 0-10; B (head, needs 4) waits for A: 10-20; C and D both fit at 20:
#   C 20-120, D 20-25.
# EASY: at t=1 head B, free 2, running A ends (requested) at 10 -> shadow 10,
#   extra 4 - 4 = 0. At t=2 C fits now but ends at 102 > 10 and 2 > extra 0:
#   not backfilled. At t=3 D ends at 8 <= 10: backfilled 3-8. B 10-20, C 20-120.
# Conservative backfilling gives EASY's schedule here (D fits before every
#   reservation). An unprotected "backfill whatever fits" starts C at 2 and
#   pushes B to 102.
EX1 = [(0, 10, 2), (1, 10, 4), (2, 100, 2), (3, 5, 2)]

# Example 2, 4 processors: A (0, 10, 3)  B (1, 10, 3)  C (2, 10, 4)  D (3, 30, 1)
# FCFS: A 0-10, B 10-20, C 20-30, D 30-60.
# EASY: at t=1 head B, free 1, shadow 10 (A ends), extra = 4 - 3 = 1. At t=3 D
#   fits (1 free), runs past the shadow (33 > 10) but 1 <= extra: backfilled
#   3-33 (extra -> 0). B starts at 10 (free 3) as reserved; C (needs 4) waits
#   for D: 33-43. EASY only protects the head: D delays C by 13 s.
# Conservative backfilling reserves C at 20 too, so D (1 proc for 30 s) cannot
#   start before C ends: D 30-60, C 20-30 -- the FCFS schedule.
EX2 = [(0, 10, 3), (1, 10, 3), (2, 10, 4), (3, 30, 1)]


def starts(per_job):
    return per_job["start"].tolist()


def test_example1_fcfs_and_easy(engine_path):
    fj, _ = run(EX1, FCFS)
    assert starts(fj) == [0, 10, 20, 20]
    ej, es = run(EX1, EASY)
    assert starts(ej) == [0, 10, 20, 3]
    assert ej["end"].tolist() == [10, 20, 120, 8]
    assert ej["wait"].tolist() == [0, 9, 18, 0]
    # bounded stretch max(C - r, 10) / max(p, 10): D ran 5 s and finished 5 s
    # after its submission, both below the threshold -> 10 / 10
    assert BOUNDED_STRETCH_THRESHOLD == 10.0
    assert ej["stretch"].tolist() == [1.0, 19 / 10, 118 / 100, 1.0]
    assert es["n_jobs"] == 4 and es["makespan"] == 120
    assert es["utilisation"] == pytest.approx((2 * 10 + 4 * 10 + 2 * 100 + 2 * 5) / (4 * 120))
    assert es["wait_mean"] == pytest.approx(27 / 4) and es["wait_max"] == 18
    assert es["stretch_max"] == 1.9
    assert es["model_nodes"] == 0.0 and es["capacity"] == 4.0


def test_example2_easy_protects_only_the_head(engine_path):
    fj, _ = run(EX2, FCFS)
    assert starts(fj) == [0, 10, 20, 30]
    ej, _ = run(EX2, EASY)
    assert starts(ej) == [0, 10, 33, 3]


def test_backfill_never_delays_the_head_reservation():
    """EX1's job C (2 procs, 100 s) fits in the free processors at t=2; an
    unprotected backfill would start it and the head B (4 procs) would start at
    102. EASY must start B at its shadow time 10 (A's requested end)."""
    policy = lambda m: EASY(m, record_reservations=True)  # noqa: E731
    t = table(EX1)
    res = simulate_batch(
        t["submit"].to_numpy(),
        t["runtime"].to_numpy(),
        t["requested_time"].to_numpy(),
        t["procs"].to_numpy(),
        4,
        policy,
    )
    assert res.policy.reservation[1] == 10.0
    assert res.start[1] == 10.0
    assert res.start[2] == 20.0  # C was not backfilled


def test_head_reservation_uses_requested_not_actual_times(engine_path):
    """4 procs: A (0, runtime 10, requested 50, 2 procs), B (1, 10, 4 procs),
    C (2, runtime 30 = requested, 2 procs). Shadow for B is 50 (A's requested
    end), so C (ends 32 <= 50) is backfilled at 2; A actually ends at 10, C
    still holds 2 procs, so B starts at 32 (<= its reservation 50)."""
    rows = [(0, 10, 2), (1, 10, 4), (2, 30, 2)]
    ej, _ = run(rows, EASY, requested=[50, 10, 30])
    assert starts(ej) == [0, 32, 2]
    fj, _ = run(rows, FCFS, requested=[50, 10, 30])
    assert starts(fj) == [0, 10, 20]


def test_overrun_of_requested_time_is_tolerated(engine_path):
    """A's requested time (5) is shorter than its runtime (10): from t=5 on EASY
    treats A as ending now; nothing breaks and the head starts when A ends."""
    rows = [(0, 10, 3), (1, 10, 4), (6, 2, 1)]
    ej, _ = run(rows, EASY, requested=[5, 10, 2])
    # at t=6 shadow = now = 6, extra = 4 - 4 = 0: job 2 (ends 8 > 6) waits
    assert starts(ej) == [0, 10, 20]


def test_nodes_model(engine_path):
    rows = [(0, 10, 3), (0, 10, 1)]
    # 2 nodes x 2 tasks per node: job 0 needs ceil(3/2) = 2 nodes, job 1 one node
    nj, ns = run(rows, FCFS, model="nodes", nodes=2, tasks_per_node=2)
    assert starts(nj) == [0, 10]
    assert ns["model_nodes"] == 1.0 and ns["capacity"] == 2.0 and ns["tasks_per_node"] == 2.0
    assert ns["utilisation"] == pytest.approx((2 * 10 + 1 * 10) / (2 * 20))
    # the procs model (4 processors) runs both at once
    pj, _ = run(rows, FCFS, model="procs", procs=4)
    assert starts(pj) == [0, 0]
    # default tasks_per_node = 1: a task holds a whole node
    dj, _ = run([(0, 10, 2), (0, 10, 2)], FCFS, model="nodes", nodes=3)
    assert starts(dj) == [0, 10]


def test_oversized_job_is_an_error_or_dropped(engine_path):
    rows = [(0, 10, 2), (1, 10, 5), (2, 10, 1)]
    with pytest.raises(UserError, match="job 101 needs 5 processors"):
        run(rows, FCFS)
    pj, ps = run(rows, FCFS, oversize="drop")
    assert pj["job_id"].tolist() == [100, 102]
    assert ps["dropped_oversize"] == 1.0 and ps["n_jobs"] == 2.0


def test_bad_inputs(engine_path):
    with pytest.raises(UserError, match="model"):
        run(EX1, FCFS, model="cores")
    with pytest.raises(UserError, match="needs the number of nodes"):
        run(EX1, FCFS, model="nodes")
    with pytest.raises(UserError, match="job 100: requested_time"):
        run(EX1, FCFS, requested=[0, 10, 100, 5])


class _Greedy(BatchPolicy):
    """Starts every queued job: a broken policy the engine must catch."""

    def __init__(self, machine):
        super().__init__(machine)
        self.queue = []

    def arrive(self, job):
        self.queue.append(job)

    def complete(self, job):
        pass

    def schedule(self, now):
        out, self.queue = self.queue, []
        return out


class _Twice(_Greedy):
    def schedule(self, now):
        out = super().schedule(now)
        return out + out


def test_engine_checks_capacity_and_queued_state():
    t = table(EX1)
    args = (t["submit"].to_numpy(), t["runtime"].to_numpy(), t["requested_time"].to_numpy(), t["procs"].to_numpy())
    with pytest.raises(BatchCapacityExceeded):
        simulate_batch(*args, 4, _Greedy)
    with pytest.raises(BatchStartError):
        simulate_batch(*args, 100, _Twice)


def test_zero_runtime_jobs(engine_path):
    rows = [(0, 0, 4), (0, 5, 4), (0, 0, 4)]
    for policy in (FCFS, EASY):
        pj, _ = run(rows, policy, requested=[1, 5, 1])
        assert starts(pj) == [0, 0, 5]


# --- properties over random small instances ---------------------------------------------------------


@st.composite
def instances(draw, exact=True):
    cap = draw(st.integers(1, 6))
    n = draw(st.integers(1, 7))
    submit = draw(st.lists(st.integers(0, 20), min_size=n, max_size=n))
    runtime = draw(st.lists(st.integers(1, 15), min_size=n, max_size=n))
    procs = draw(st.lists(st.integers(1, cap), min_size=n, max_size=n))
    if exact:
        requested = list(runtime)
    else:
        requested = [
            max(1, r + d) for r, d in zip(runtime, draw(st.lists(st.integers(-5, 10), min_size=n, max_size=n)))
        ]
    return cap, np.array(submit, float), np.array(runtime, float), np.array(requested, float), np.array(procs)


def _check_schedule(cap, submit, runtime, procs, res):
    assert np.all(np.isfinite(res.start)) and np.all(np.isfinite(res.end))  # every job finished
    assert np.all(res.start >= submit)
    assert np.array_equal(res.end, res.start + runtime)
    for t in np.unique(res.start):  # independent capacity check at every start instant
        held = procs[(res.start <= t) & (res.end > t)].sum()
        assert held <= cap


@settings(max_examples=300, deadline=None)
@given(instances(exact=True))
def test_easy_exact_estimates_heads_never_start_after_their_reservation(inst):
    cap, submit, runtime, requested, procs = inst
    res = simulate_batch(submit, runtime, requested, procs, cap, lambda m: EASY(m, record_reservations=True))
    _check_schedule(cap, submit, runtime, procs, res)
    for job, reserved in res.policy.reservation.items():
        assert res.start[job] <= reserved + 1e-9, (job, reserved, res.start.tolist())


@settings(max_examples=300, deadline=None)
@given(instances(exact=False))
def test_both_policies_finish_every_job_fcfs_in_submit_order(inst):
    cap, submit, runtime, requested, procs = inst
    order = np.argsort(submit, kind="stable")
    for name, cls in BATCH_POLICIES.items():
        res = simulate_batch(submit, runtime, requested, procs, cap, cls)
        _check_schedule(cap, submit, runtime, procs, res)
        if name == "FCFS":
            assert np.all(np.diff(res.start[order]) >= 0)


# --- the HPC2N log ------------------------------------------------------------------------------------


@pytest.mark.skipif(not HPC2N.exists(), reason="HPC2N log not present")
def test_hpc2n_full_log_fcfs_vs_easy(engine_path):
    """The whole cleaned log (202,871 jobs, 240 processors, model procs)
    through both policies: ~2.5 s in total."""
    from schedlab.workloads.traces.swf import read

    trace = read(HPC2N)
    assert trace.meta["machine_procs"] == 240
    out = {}
    for name in ("FCFS", "EASY"):
        per_job, summary = run_batch_table(trace.jobs, BATCH_POLICIES[name], model="procs", procs=240)
        assert summary["n_jobs"] == trace.jobs.height
        assert np.all(np.isfinite(per_job["end"]))
        out[name] = summary
    assert out["EASY"]["wait_mean"] < out["FCFS"]["wait_mean"]
    assert out["EASY"]["stretch_mean"] < out["FCFS"]["stretch_mean"]
    assert out["EASY"]["utilisation"] == pytest.approx(out["FCFS"]["utilisation"], rel=0.05)
    assert math.isfinite(out["EASY"]["makespan"])
