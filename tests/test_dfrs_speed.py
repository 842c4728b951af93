"""The fast DFRS engine and policies reproduce the pre-speed-up implementation
bit for bit (exact equality, NaN-aware: floats compared by their IEEE bytes).

Reference: ``tests.dfrs_reference``, a frozen copy of schedlab/engines/dfrs/sim.py and
schedlab/engines/dfrs/policies/{base,greedy,mcb8,stretch}.py at commit 3aa6bc9.

* hypothesis instances (every registered policy, penalties, periods): every
  event's time, virtual times, statuses, penalty ends and yields, the usage
  profile, the per-job counters and the event and solver-failure counts;
* the MCB8 building blocks (``pack``, ``mcb8`` with and without pinned jobs)
  on random task sets;
* Lublin traces of 120-300 jobs (``tests/dfrs_speed_cases.py``): digests of
  everything the reference produced, pinned in tests/dfrs_speed_digests.json.
"""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedlab.engines.dfrs import sim as fast_dfrs
from schedlab.engines.dfrs.policies import DFRS_POLICIES
from schedlab.engines.dfrs.policies import mcb8 as fast_mcb8
from tests import dfrs_reference
from tests.dfrs_reference import dfrs as ref_dfrs
from tests.dfrs_reference import mcb8 as ref_mcb8
from tests.dfrs_speed_cases import DIGESTS, blas_kernel, cases, digest_run, lublin


def same(a, b) -> bool:
    """Bit-identical arrays (same dtype, shape and bytes: NaN == NaN, 0.0 != -0.0)."""
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def _run(module, policies, name, rel, proc, tasks, cpu, mem, nodes, penalty, period):
    cls = policies[name]
    pol = cls(period=period) if "per" in name else cls()
    return module.simulate_dfrs(rel, proc, tasks, cpu, mem, nodes, pol, penalty=penalty, snapshots=True)


def assert_same_run(new, ref) -> None:
    assert new.events == ref.events and new.lp_failures == ref.lp_failures
    assert len(new.snapshots) == len(ref.snapshots)
    for (t1, vt1, s1, p1, y1), (t2, vt2, s2, p2, y2) in zip(new.snapshots, ref.snapshots):
        assert same(np.float64(t1), np.float64(t2)), (t1, t2)
        assert list(s1) == list(s2), t1
        assert same(vt1, vt2), t1
        assert same(p1, p2), t1
        assert same(y1, y2), t1
    for attr in ("times", "demand", "allocated"):
        assert same(getattr(new.profile, attr), getattr(ref.profile, attr)), attr
    for attr in ("start", "end", "vt", "pauses", "migrations", "migrated_tasks", "mem_moved", "pen_until", "y"):
        assert same(getattr(new.state, attr), getattr(ref.state, attr)), attr


_job = st.tuples(
    st.integers(0, 400),
    st.integers(1, 600),
    st.integers(1, 4),
    st.sampled_from([0.25, 0.5, 0.7, 1.0]),
    st.sampled_from([0.2, 0.3, 0.45, 0.5, 0.6, 1.0]),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    jobs=st.lists(_job, min_size=1, max_size=10),
    nodes=st.integers(2, 4),
    name=st.sampled_from(sorted(set(DFRS_POLICIES) & set(dfrs_reference.REF_POLICIES))),
    penalty=st.sampled_from([0.0, 30.0, 300.0]),
    period=st.sampled_from([40.0, 150.0, 600.0]),
)
def test_hypothesis_instances_identical_to_reference(jobs, nodes, name, penalty, period):
    rel, proc, tasks, cpu, mem = (list(x) for x in zip(*jobs))
    tasks = [min(t, nodes) for t in tasks]
    args = (rel, proc, tasks, cpu, mem, nodes, penalty, period)
    ref = _run(ref_dfrs, dfrs_reference.REF_POLICIES, name, *args)
    new = _run(fast_dfrs, DFRS_POLICIES, name, *args)
    assert_same_run(new, ref)


_many = st.tuples(
    st.integers(0, 200), st.integers(1, 3000), st.integers(1, 6), st.floats(0.05, 1.0), st.floats(0.02, 0.6)
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    jobs=st.lists(_many, min_size=5, max_size=40),
    nodes=st.integers(3, 8),
    name=st.sampled_from(
        [
            "GreedyPM*/per/OPT=MIN/MINVT=600",
            "MCB8*/per/OPT=MIN/MINVT=600",
            "Greedy*/OPT=MIN",
            "GreedyP*/OPT=AVG",
            "GreedyPM*/stretch-per/OPT=MAX/MINVT=600",
            "MCB8*/OPT=AVG/MINFT=300",
            "GreedyP*/per/OPT=MIN",
            "MCB8*/stretch-per/OPT=AVG",
            "/per/OPT=MIN",
        ]
    ),
)
def test_busier_instances_identical_to_reference(jobs, nodes, name):
    """More jobs and tasks, arbitrary needs and memories: many overloaded nodes,
    pauses and migrations."""
    rel, proc, tasks, cpu, mem = (list(x) for x in zip(*jobs))
    tasks = [min(t, nodes) for t in tasks]
    args = (rel, proc, tasks, cpu, mem, nodes, 300.0, 600.0)
    ref = _run(ref_dfrs, dfrs_reference.REF_POLICIES, name, *args)
    new = _run(fast_dfrs, DFRS_POLICIES, name, *args)
    assert_same_run(new, ref)


_task = st.tuples(st.floats(0.0, 1.0), st.floats(0.0, 1.0))


@settings(max_examples=300, deadline=None)
@given(tasks=st.lists(_task, max_size=40), nodes=st.integers(0, 8), preload=st.booleans(), data=st.data())
def test_pack_identical_to_reference(tasks, nodes, preload, data):
    cpu = [c for c, _ in tasks]
    mem = [m for _, m in tasks]
    init = {}
    if preload:
        init = {
            "init_cpu": data.draw(st.lists(st.floats(0.0, 1.0), min_size=nodes, max_size=nodes)),
            "init_mem": data.draw(st.lists(st.floats(0.0, 1.0), min_size=nodes, max_size=nodes)),
        }
    assert fast_mcb8.pack(cpu, mem, nodes, **init) == ref_mcb8.pack(cpu, mem, nodes, **init)


_mjob = st.tuples(
    st.integers(1, 5),
    st.floats(0.0, 1.0),
    st.sampled_from([0.0, 0.05, 0.1, 0.25, 0.3, 0.5, 0.9]),
    st.sampled_from([0.0, 1.0, 2.5, float("inf")]),
)


@settings(max_examples=300, deadline=None)
@given(
    jobs=st.lists(_mjob, max_size=14),
    nodes=st.integers(1, 6),
    precision=st.sampled_from([0.01, 0.1, 0.3, 1.0]),
    data=st.data(),
)
def test_mcb8_identical_to_reference(jobs, nodes, precision, data):
    # ids unique, not in priority order (7 i mod 17 is a permutation for i < 17)
    rows = [((7 * i) % 17, t, c, m, p) for i, (t, c, m, p) in enumerate(jobs)]
    pinned = {}
    free = [1.0] * nodes
    for jid, t, _c, m, _p in rows:  # pin some jobs where their memory fits (greedily, first fit)
        if data.draw(st.booleans()):
            where = []
            for _ in range(t):
                k = next((k for k in range(nodes) if free[k] >= m), None)
                if k is None:
                    break
                free[k] -= m
                where.append(k)
            if len(where) == t:
                pinned[jid] = where
            else:
                for k in where:
                    free[k] += m
    new = fast_mcb8.mcb8(rows, nodes, precision, pinned=pinned)
    ref = ref_mcb8.mcb8(rows, nodes, precision, pinned=pinned)
    assert same(np.float64(new.yield_), np.float64(ref.yield_))
    assert new.mapping == ref.mapping and list(new.mapping) == list(ref.mapping)
    assert new.dropped == ref.dropped


def test_mcb8_errors_as_reference():
    with pytest.raises(ValueError, match="overfill"):
        fast_mcb8.mcb8([(0, 2, 0.5, 0.6, 1.0)], 2, pinned={0: [0, 0]})
    with pytest.raises(ValueError, match="non-negative"):
        fast_mcb8.pack([float("nan")], [0.1], 1)
    with pytest.raises(ValueError, match="go together"):
        fast_mcb8.pack([0.1], [0.1], 1, init_cpu=[0.0])


def test_run_table_identical_to_reference_with_bound():
    rng = np.random.default_rng(7)
    n = 30
    jobs = pl.DataFrame(
        {
            "job_id": np.arange(n),
            "submit": np.sort(rng.uniform(0, 3000, n)),
            "runtime": rng.uniform(1, 2000, n),
            "procs": rng.integers(1, 9, n),
            "cpu_need": rng.uniform(0.1, 1.0, n),
            "memory": rng.uniform(0.05, 0.5, n),
        }
    )
    for name in ("GreedyPM*/per/OPT=AVG/MINVT=300", "MCB8*/OPT=MIN"):
        p1, s1 = fast_dfrs.run_table(jobs, DFRS_POLICIES[name], nodes=6, bound=True, check=True)
        p2, s2 = ref_dfrs.run_table(jobs, dfrs_reference.REF_POLICIES[name], nodes=6, bound=True, check=True)
        assert sorted(p1) == sorted(p2) and all(same(p1[k], p2[k]) for k in p1)
        skip = {"sim_seconds", "bound_seconds"}
        assert {k for k in s1 if k not in skip} == {k for k in s2 if k not in skip}
        assert all(same(np.float64(s1[k]), np.float64(s2[k])) for k in s1 if k not in skip)


#: Digests per BLAS kernel (``dfrs_speed_cases.blas_kernel``): the DFRS allocations' BLAS sums round
#: differently on different kernels, so the pinned bits are those of the kernel they were recorded on.
PINNED = json.loads(DIGESTS.read_text()).get(blas_kernel())


@pytest.mark.parametrize("label,n,seed,policy", list(cases()), ids=[f"{c[0]}-{c[3]}" for c in cases()])
def test_lublin_digests_pinned_from_reference(label, n, seed, policy):
    """Digests of the reference's schedules on Lublin traces (recorded with
    ``python -m tests.dfrs_speed_cases --record`` on the base commit, per BLAS
    kernel). On a kernel with no recorded digests the frozen reference runs
    here instead (slow, the same check)."""
    jobs = lublin(n, seed)
    got = digest_run(fast_dfrs, fast_dfrs.run_table, DFRS_POLICIES[policy], jobs)
    if PINNED is not None:
        assert got == PINNED[f"{label}|{policy}"]
    else:
        want = digest_run(ref_dfrs, ref_dfrs.run_table, dfrs_reference.REF_POLICIES[policy], jobs)
        assert got == want


def test_the_frozen_reference_covers_every_policy_it_predates():
    """Names registered after the frozen copy was taken (the bare
    /stretch-per family, RR-7659's Table 2 rows) are the only ones the
    comparison above cannot draw; they run the same MCB8-stretch code as the
    /stretch-per forms it does compare."""
    later = set(DFRS_POLICIES) - set(dfrs_reference.REF_POLICIES)
    assert later and all(name.startswith("/stretch-per") for name in later), sorted(later)
    assert not set(dfrs_reference.REF_POLICIES) - set(DFRS_POLICIES)
