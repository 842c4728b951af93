"""RLScheduler's loop as options of the batch policies
(schedlab.engines.batch.policies.rlscheduler): hand-worked schedules from its
rules (HPCSimPickJobs.py; docs/gym.md), each small enough to follow on paper,
beside schedlab's own rules on the same jobs; a property of its backfilling;
the parameters' rules as one-line errors; its test-sequence draws.
benchmarks/rlscheduler_compare.py checks the same options job for job
against RLScheduler's simulator (not available here)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.engines.batch import ENGINE, run_table
from schedlab.engines.batch.policies import BATCH_POLICIES
from schedlab.engines.batch.sim.engine import simulate_batch
from schedlab.errors import UserError
from schedlab.workloads.rlscheduler_starts import sequence_starts

RLSCHED_EASY = {"backfill": "rlscheduler", "passes": "event"}
RLSCHED = {"commit": True, "passes": "event"}


def run(name, submit, runtime, requested, need, capacity, **params):
    cls = BATCH_POLICIES[name]
    res = simulate_batch(
        np.array(submit, dtype=float),
        np.array(runtime, dtype=float),
        np.array(requested, dtype=float),
        np.array(need),
        capacity,
        lambda m: cls(m, **params),
    )
    return res.start.tolist(), res.policy


def starts(*args, **params):
    return run(*args, **params)[0]


def test_the_shadow_time_is_kept_as_jobs_end_early():
    # 4 units. Job 0 (2 units, requested 300) and job 1 (1 unit, requested 100) start at 0.
    # Job 2 (4 units) blocks at 1: walking the requested ends, 1 + 1 (job 1, at 100) < 4,
    # + 2 (job 0, at 300) = 4: shadow 300. Job 0 ends early at 10 (3 free).
    # Job 3 (1 unit, requested 150) arrives at 20: 20 + 150 = 170 < 300, the kept shadow:
    # it backfills at 20, and holds its unit until 170, so job 2 starts at 170.
    # EASY recomputes the shadow at 20 (100, job 1's end; extra 0): job 3 waits;
    # job 2 starts at 100 and job 3 after it, at 110.
    w = ([0, 0, 1, 20], [10, 100, 10, 150], [300, 100, 10, 150], [2, 1, 4, 1], 4)
    got, policy = run("EASY", *w, **RLSCHED_EASY)
    assert got == [0.0, 0.0, 170.0, 20.0]
    assert policy.loop.reservation == {2: 300.0}
    assert starts("EASY", *w) == [0.0, 0.0, 100.0, 110.0]


def test_a_backfilled_job_must_end_strictly_before_the_shadow_time():
    # 2 units. Job 0 (1 unit) runs 0..100; job 1 (2 units) blocks at 1, shadow 100.
    # Job 2 (1 unit, requested 98) at 2 would end at exactly 100: not < 100, it waits
    # (EASY's <= backfills it at 2); job 1 starts at 100, job 2 at 110.
    w = ([0, 1, 2], [100, 10, 98], [100, 10, 98], [1, 2, 1], 2)
    assert starts("EASY", *w, **RLSCHED_EASY) == [0.0, 100.0, 110.0]
    assert starts("EASY", *w) == [0.0, 100.0, 2.0]
    # the same with SJF's committed head
    assert starts("SJF+EASY", *w, **RLSCHED, backfill="rlscheduler") == [0.0, 100.0, 110.0]


def test_no_extra_units_rule():
    # 4 units. Job 0 (2 units) runs 0..100; job 1 (3 units) blocks at 1: shadow 100,
    # EASY's extra units 4 - 3 = 1. Job 2 (1 unit, requested 500) at 2: EASY starts it
    # on the extra unit; RLScheduler's rule has none (2 + 500 >= 100): it waits for job 1
    # (100) and then fits beside it.
    w = ([0, 1, 2], [100, 10, 500], [100, 10, 500], [2, 3, 1], 4)
    assert starts("EASY", *w, **RLSCHED_EASY) == [0.0, 100.0, 100.0]
    assert starts("EASY", *w) == [0.0, 100.0, 2.0]


def test_event_passes_commit_to_the_first_arrival_of_an_instant():
    # 2 units, job 0 holds both until 10. Jobs 1 (1 unit, requested 100) and 2 (2 units,
    # requested 1) arrive at 5. One pass per event: job 1 arrives alone and is committed
    # (SJF's pick among one); it starts at 10, job 2 waits for it (110). One pass per
    # instant: both are queued when the head is chosen: job 2 (10), then job 1 (11).
    w = ([0, 5, 5], [10, 100, 1], [10, 100, 1], [2, 1, 2], 2)
    assert starts("SJF", *w, **RLSCHED) == [0.0, 10.0, 110.0]
    assert starts("SJF", *w, commit=True) == [0.0, 11.0, 10.0]
    # re-chosen head, a pass per event: nothing fits until 10, then both wait and job 2 goes first
    assert starts("SJF", *w, passes="event") == [0.0, 11.0, 10.0]


def test_backfilling_scans_between_two_completions_of_one_instant():
    # 3 units. Jobs 0 and 1 (1 unit each) end at 10, job 2 (1 unit) at 50. Job 3 (3 units)
    # blocks at 1: shadow 50. Job 4 (2 units, requested 30) arrives at 2, job 5 (1 unit,
    # requested 30) at 3; no unit is free. At 10, one pass per event: job 0 is released,
    # 1 unit free: job 4 does not fit, job 5 does (10 + 30 < 50) and starts; job 1 is
    # released, 1 unit free: job 4 still does not fit. Job 3 starts at 50 (until 55),
    # job 4 at 55. One pass per instant sees 2 units free at 10: job 4 (first in submit
    # order) starts, job 5 waits until 55.
    w = ([0, 0, 0, 1, 2, 3], [10, 10, 50, 5, 30, 30], [10, 10, 50, 5, 30, 30], [1, 1, 1, 3, 2, 1], 3)
    assert starts("EASY", *w, **RLSCHED_EASY) == [0.0, 0.0, 0.0, 50.0, 55.0, 10.0]
    assert starts("EASY", *w, backfill="rlscheduler") == [0.0, 0.0, 0.0, 50.0, 10.0, 55.0]


def test_wfp3_and_unicep_read_the_wait_as_rlscheduler_does():
    # 1 unit; job 0 runs 0..10; job 1 (submit 1, requested 10), job 2 (submit 2, requested
    # 100). At 10 the real wait favours job 1 ((9/10)^3 > (8/100)^3); RLScheduler's
    # -1 - s gives ((1 + s) / r)^3 ascending: (3/100)^3 < (2/10)^3, job 2 first.
    w = ([0, 1, 2], [10, 10, 100], [10, 10, 100], [1, 1, 1], 1)
    assert starts("WFP3", *w) == [0.0, 10.0, 20.0]
    assert starts("WFP3", *w, wait="rlscheduler") == [0.0, 110.0, 10.0]
    # UNICEP: (1 + s) / (log2(n) r) ascending: 3 / (log2(1 + 1e-15) 100) < 2 / (... 10)
    assert starts("UNICEP", *w) == [0.0, 10.0, 20.0]
    assert starts("UNICEP", *w, wait="rlscheduler") == [0.0, 110.0, 10.0]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 30), st.integers(1, 20), st.integers(1, 4)),
        min_size=1,
        max_size=12,
    ),
    st.sampled_from(["EASY", "SJF+EASY", "F1+EASY"]),
)
def test_with_exact_estimates_no_head_starts_after_its_shadow_time(jobs, name):
    """Backfilled jobs end strictly before the kept shadow time, so with exact
    estimates the units the head needs are free by then: it never waits longer."""
    jobs.sort(key=lambda j: j[0])
    submit, runtime, need = (list(c) for c in zip(*jobs, strict=True))
    params = dict(RLSCHED_EASY) if name == "EASY" else {**RLSCHED, "backfill": "rlscheduler"}
    got, policy = run(name, submit, runtime, runtime, need, 4, **params)
    assert all(not np.isnan(s) for s in got)
    for head, shadow in policy.loop.reservation.items():
        assert got[head] <= shadow


@pytest.mark.parametrize(
    ("name", "params", "says"),
    [
        ("SJF", {"backfill": "rlscheduler", "commit": True}, "SJF does not backfill"),
        ("SJF+EASY", {"backfill": "rlscheduler"}, "needs commit = true"),
        ("SJF+EASY", {"commit": True, "passes": "event"}, 'needs backfill = "rlscheduler"'),
        ("SJF", {"wait": "rlscheduler"}, "does not read the wait"),
        ("EASY", {"passes": "event"}, 'needs backfill = "rlscheduler"'),
        ("SJF", {"passes": "hourly"}, "passes"),
    ],
)
def test_the_parameters_rules_are_one_line_errors(name, params, says):
    with pytest.raises(UserError, match=says) as err:
        ENGINE.check_policy_params(BATCH_POLICIES[name], params, "spec.toml: policies[0].params")
    assert "\n" not in str(err.value) and "policies[0].params" in str(err.value)


def test_the_options_run_through_the_engine_and_defaults_keep_the_kernel():
    import polars as pl

    jobs = pl.DataFrame(
        {"job_id": [1, 2, 3], "submit": [0.0, 1.0, 2.0], "runtime": [100.0, 10.0, 500.0], "procs": [2, 3, 1]}
    )
    per_job, _ = run_table(jobs, BATCH_POLICIES["EASY"], path="fast", procs=4, backfill="rlscheduler")
    assert per_job["start"].tolist() == [0.0, 100.0, 100.0]
    per_job, _ = run_table(jobs, BATCH_POLICIES["EASY"], path="fast", procs=4)
    assert per_job["start"].tolist() == [0.0, 100.0, 2.0]
    with pytest.raises(UserError, match="vcsim"):
        run_table(jobs, BATCH_POLICIES["EASY"], procs=4, easy_backfill="vcsim", backfill="rlscheduler")


def test_rlschedulers_test_sequences():
    # compare-pick-jobs.py --seed 1 --iter 10 --len 1024 on a 10,000-job log (the Lublin
    # files): the starts gym 0.17.3's seeding gives (checked by running it, docs/gym.md)
    assert sequence_starts(10_000) == [1981, 2756, 4299, 8850, 3316, 2714, 5228, 7762, 4022, 7085]
    assert all(1024 <= k < 202_871 - 1025 for k in sequence_starts(202_871))
    with pytest.raises(ValueError, match="more than"):
        sequence_starts(2048)


def test_a_policys_own_choose_picks_where_rlschedulers_loop_picks():
    """A subclass with its own ``choose`` (a learned agent, ``schedlab.api.agent.MLPAgent``) is asked
    by RLScheduler's loop, reading ``waiting()`` and ``free``: shortest requested first written as
    such a ``choose`` gives SJF's schedule in that setting, and it is asked once per committed head."""
    from schedlab.engines.batch.policies.priority import SJF_EASY, PriorityPolicy

    asked = []

    class Shortest(PriorityPolicy):
        name = "shortest"
        backfill = True

        def choose(self, now):
            asked.append((now, self.free, list(self.waiting())))
            return min(self.waiting(), key=lambda j: self.machine.requested[j])

    w = ([0, 1, 2, 5, 5], [10, 100, 8, 1, 30], [10, 100, 8, 1, 30], [2, 2, 1, 2, 1], 2)
    params = {**RLSCHED, "backfill": "rlscheduler"}
    args = [np.array(c, dtype=float) for c in w[:3]] + [np.array(w[3]), w[4]]
    mine = simulate_batch(*args, lambda m: Shortest(m, **params)).start.tolist()
    assert mine == simulate_batch(*args, lambda m: SJF_EASY(m, **params)).start.tolist()
    heads = [min(q, key=lambda j: w[2][j]) for _, _, q in asked]
    assert len(heads) == len(set(heads)) == 5  # each job chosen once: committed until it starts
