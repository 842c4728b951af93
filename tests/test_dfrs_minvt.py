"""MINVT / MINFT migration limits of the periodic MCB8 remap (dfrs-vs-batch-scheduling §4.3
"Limiting Migration", §4.5 naming, §5.1 bounds)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedlab.engines.dfrs.policies import DFRS_POLICIES
from schedlab.engines.dfrs.policies.mcb8 import mcb8, pack
from schedlab.engines.dfrs.sim import PAUSED, RUNNING, run_table, simulate_dfrs
from schedlab.errors import UserError

# the forms without '*': their own test below; /stretch-per: tests/test_dfrs_stretch.py
STARRED = [n for n in DFRS_POLICIES if "*" in n and "/stretch-per" not in n]
LIMITED = sorted(n for n in STARRED if "/MINVT=" in n or "/MINFT=" in n)
NEW = sorted(set(LIMITED) | {n for n in STARRED if n.startswith("MCB8")})


def test_registry_has_the_paper_names():
    expected = {
        f"{m}*/per/OPT={o}/{kind}={b}"
        for m in ("Greedy", "GreedyP", "GreedyPM")
        for o in ("MIN", "AVG")
        for kind in ("MINVT", "MINFT")
        for b in (300, 600)
    }
    expected |= {
        f"MCB8*{per}/OPT={o}/{kind}={b}"
        for per in ("", "/per")
        for o in ("MIN", "AVG")
        for kind in ("MINVT", "MINFT")
        for b in (300, 600)
    }
    assert set(LIMITED) == expected
    assert set(NEW) - set(LIMITED) == {"MCB8*/OPT=MIN", "MCB8*/OPT=AVG", "MCB8*/per/OPT=MIN", "MCB8*/per/OPT=AVG"}
    assert DFRS_POLICIES["MCB8*/OPT=AVG"]().period is None and DFRS_POLICIES["MCB8*/per/OPT=MIN"]().period == 600.0
    assert "GreedyPM*/per/OPT=MIN/MINVT=600" in DFRS_POLICIES
    for name in LIMITED:
        cls = DFRS_POLICIES[name]
        pol = cls()
        assert cls.name == name and cls.summary and pol.period == (600.0 if "/per" in name else None)
        assert pol.opt == name.split("/OPT=")[1][:3]
        b = float(name.rsplit("=", 1)[1])
        assert (pol.minvt, pol.minft) == ((b, None) if "/MINVT=" in name else (None, b))
    # the plain /per classes take the bound as a parameter; no limit by default
    pol = DFRS_POLICIES["GreedyP*/per/OPT=MIN"](minft=450)
    assert (pol.minvt, pol.minft) == (None, 450.0)
    assert DFRS_POLICIES["GreedyP*/per/OPT=MIN"]().minvt is None
    assert DFRS_POLICIES["GreedyPM*/OPT=MIN"]().period is None


def test_bad_bounds():
    cls = DFRS_POLICIES["Greedy*/per/OPT=MIN"]
    for kw in ({"minvt": -1}, {"minft": float("inf")}, {"minvt": True}, {"minvt": "600"}, {"minvt": 300, "minft": 300}):
        with pytest.raises(TypeError):
            cls(**kw)
    with pytest.raises(TypeError):  # a MINVT name cannot also get a MINFT bound
        DFRS_POLICIES["Greedy*/per/OPT=MIN/MINVT=600"](minft=300)
    df = pl.DataFrame({"job_id": [0], "submit": [0.0], "runtime": [10.0], "procs": [1]})
    with pytest.raises(UserError):
        run_table(df, cls, nodes=1, minvt=-5)


class _Probe:
    """Wraps a /per policy; records (t, where before, where after, status after) at each periodic remap."""

    def __init__(self, inner):
        self.inner = inner
        self.opt = inner.opt
        self.period = inner.period
        self.log = []

        self.all = []  # (kind, t, before, after, status, vt) for every callback

    def _wrap(self, kind, s, call):
        before = {j: sorted(s.where[j].tolist()) for j in s.running}
        vt = s.vt.copy()
        call()
        after = {j: (sorted(s.where[j].tolist()) if s.where[j] is not None else None) for j in range(s.n)}
        self.all.append((kind, s.now, before, after, list(s.status), vt))
        if kind == "period":
            self.log.append((s.now, before, after, list(s.status), vt))

    def on_arrival(self, s, j):
        self._wrap("arrival", s, lambda: self.inner.on_arrival(s, j))

    def on_completion(self, s):
        self._wrap("completion", s, lambda: self.inner.on_completion(s))

    def on_period(self, s):
        self._wrap("period", s, lambda: self.inner.on_period(s))


# Hand example (2 nodes, all single-task jobs, penalty 300, period 600, first release 0):
#   job 0: r=0, p=2000, need .25, mem .3 -> Greedy puts it on node 0
#   job 1: r=0, p=2000, need .5,  mem .3 -> node 1 (load 0 < .25)
#   job 2: r=100, p=5000, need .5, mem .5 -> node 0 (load .25 < .5); no node is overloaded, all yields 1.
# At t=600: vt = 600, 600, 500; priority ft/vt^2 = 1/600, 1/600, 1/500, so MCB8 orders 2, 0, 1.
# At Y=1 the CPU list is [1] and the memory list [2, 0]: bin 0 = {1, 2} (1.0 CPU, .8 mem), bin 1 = {0}.
# Without a limit the renumbering keeps the most memory in place: bin 0 -> node 1 (job 1 stays, .3) and
# bin 1 -> node 0 (job 0 stays, .3) beats the identity (job 2 stays, .5), so the YOUNG job 2 (vt 500)
# is migrated to node 1 and pays 300 s: it ends at 100 + 5000 + 300 = 5400.
# With MINVT=600 job 2 (vt 500 < 600) is pinned on node 0 (jobs 0 and 1 have vt 600, not < 600):
# node 0 opens with load (.5, .5), takes job 1 (1.0, .8); node 1 takes job 0. Node 0 is fixed, so there
# is nothing to renumber: jobs 0 and 1 migrate, job 2 keeps node 0 and ends at 5100.
HAND = ([0.0, 0.0, 100.0], [2000.0, 2000.0, 5000.0], [1, 1, 1], [0.25, 0.5, 0.5], [0.3, 0.3, 0.5])


@pytest.mark.parametrize("name", ["Greedy*/per/OPT=MIN", "GreedyPM*/per/OPT=AVG"])
def test_hand_example_young_job_migrated_without_minvt_kept_with_minvt(name):
    plain = _Probe(DFRS_POLICIES[name]())
    a = simulate_dfrs(*HAND, 2, plain, penalty=300.0, check=True)
    t, before, after, _status, _vt = plain.log[0]
    assert t == 600.0 and before == {0: [0], 1: [1], 2: [0]}
    assert after[2] == [1] and after[0] == [0] and after[1] == [1]
    assert a.state.migrations.tolist() == [0, 0, 1]
    np.testing.assert_allclose(a.state.end, [2000.0, 2000.0, 5400.0])

    limited = _Probe(DFRS_POLICIES[name + "/MINVT=600"]())
    b = simulate_dfrs(*HAND, 2, limited, penalty=300.0, check=True)
    t, before, after, _status, _vt = limited.log[0]
    assert t == 600.0 and before == {0: [0], 1: [1], 2: [0]}
    assert after[2] == [0] and after[1] == [0] and after[0] == [1]
    assert b.state.migrations.tolist() == [1, 1, 0] and b.state.pauses.tolist() == [0, 0, 0]
    np.testing.assert_allclose(b.state.end, [2300.0, 2300.0, 5100.0])

    # MINVT=300: job 2's virtual time 500 is not below the bound, so it moves as without a limit
    c = simulate_dfrs(*HAND, 2, DFRS_POLICIES[name + "/MINVT=300"](), penalty=300.0, check=True)
    assert c.state.migrations.tolist() == [0, 0, 1]
    # MINFT=600: flow time of job 2 at t=600 is 500 < 600 -> pinned as with MINVT=600
    d = simulate_dfrs(*HAND, 2, DFRS_POLICIES[name + "/MINFT=600"](), penalty=300.0, check=True)
    assert d.state.migrations.tolist() == [1, 1, 0]


def test_mcb8_star_hand_example():
    # MCB8* on HAND: t=0 job 0 -> node 0; job 1 arrives, MCB8 (both vt 0, order 0, 1) packs them on
    # one bin, renumbered to node 0 (job 0 stays). t=100, job 2 arrives: order 2, 0, 1; bin 0 = {1, 2},
    # bin 1 = {0}; both renumberings keep .3 of memory and the one chosen moves job 0 (vt 100) to node 1.
    # With MINVT=600 jobs 0 and 1 (vt 100) are pinned on node 0 (load .75, .6); job 2 (.5, .5) does not
    # fit there and goes to node 1: nothing moves.
    plain = _Probe(DFRS_POLICIES["MCB8*/OPT=MIN"]())
    a = simulate_dfrs(*HAND, 2, plain, penalty=300.0, check=True)
    kind, t, before, after, _status, vt = plain.all[2]
    assert (kind, t, before, vt[0]) == ("arrival", 100.0, {0: [0], 1: [0]}, 100.0)
    assert after[0] == [1] and after[1] == [0] and after[2] == [0]
    assert a.state.migrations[0] >= 1
    limited = _Probe(DFRS_POLICIES["MCB8*/OPT=MIN/MINVT=600"]())
    b = simulate_dfrs(*HAND, 2, limited, penalty=300.0, check=True)
    kind, t, before, after, _status, _vt = limited.all[2]
    assert (kind, t, before) == ("arrival", 100.0, {0: [0], 1: [0]})
    assert after == {0: [0], 1: [0], 2: [1]}
    assert b.state.migrations.tolist() == [0, 0, 0] and b.state.pauses.tolist() == [0, 0, 0]
    np.testing.assert_allclose(b.state.end, [2000.0, 2000.0, 5100.0])


def test_run_table_with_parameter_and_check():
    rel, proc, tasks, cpu, mem = HAND
    df = pl.DataFrame(
        {"job_id": [0, 1, 2], "submit": rel, "runtime": proc, "procs": tasks, "cpu_need": cpu, "memory": mem}
    )
    per_job, summary = run_table(df, DFRS_POLICIES["Greedy*/per/OPT=MIN"], nodes=2, check=True, minvt=600)
    assert per_job["migrations"].tolist() == [1, 1, 0] and summary["migrations"] == 2.0


def test_young_job_may_still_be_paused():
    # 1 node. Job 0 (r=0, p=50) only fixes the periodic grid at 600, 1200, ...
    # Job 1: r=100, mem .6, starts at 100. Job 2: r=200, mem .6: Greedy* cannot place it, it waits.
    # At t=600 job 1 has vt 500 < 600 (pinned) but job 2 (vt 0) has the higher priority: MCB8 cannot
    # keep both (memory), drops the lowest priority job -- the pinned job 1 -- which is paused (the
    # paper: such jobs "may be paused in order to run higher priority jobs").
    pol = _Probe(DFRS_POLICIES["Greedy*/per/OPT=MIN/MINVT=600"]())
    res = simulate_dfrs(
        [0, 100, 200], [50, 5000, 100], [1, 1, 1], [1, 1, 1], [0.1, 0.6, 0.6], 1, pol, penalty=300.0, check=True
    )
    t, before, after, status, vt = pol.log[0]
    assert t == 600.0 and before == {1: [0]} and vt[1] == 500.0
    assert status[1] == PAUSED and status[2] == RUNNING and after[2] == [0]
    assert res.state.pauses.tolist() == [0, 1, 0] and res.state.migrations.tolist() == [0, 0, 0]
    np.testing.assert_allclose(res.state.end, [50.0, 100 + 500 + 300 + 4500 + 100, 700.0])


def test_mcb8_pinned_unit():
    jobs = [("a", 1, 0.5, 0.5, 2.0), ("b", 1, 0.5, 0.3, 1.0), ("c", 1, 0.25, 0.3, 1.0)]
    free = mcb8(jobs, 2)
    assert free.mapping == {"a": [0], "b": [0], "c": [1]} and free.yield_ == 1.0
    pinned = mcb8(jobs, 2, pinned={"a": [1]})
    assert pinned.mapping["a"] == [1] and pinned.yield_ == 1.0
    assert pinned.mapping == {"a": [1], "b": [0], "c": [0]}
    # a pinned job that overloads its node's CPU caps the yield: two pinned need-1 tasks on node 0
    r = mcb8([("x", 1, 1.0, 0.1, 1.0), ("y", 1, 1.0, 0.1, 1.0)], 2, pinned={"x": [0], "y": [0]})
    assert r.mapping == {"x": [0], "y": [0]} and r.yield_ == 0.5
    # a pinned job is dropped like any other when memory does not fit (lowest priority)
    r = mcb8([("p", 1, 1.0, 0.6, 1.0), ("q", 1, 1.0, 0.6, 5.0)], 1, pinned={"p": [0]})
    assert r.dropped == ["p"] and r.mapping == {"q": [0]}
    with pytest.raises(ValueError):
        mcb8(jobs, 2, pinned={"zz": [0]})
    with pytest.raises(ValueError):
        mcb8(jobs, 2, pinned={"a": [2]})
    # zero initial loads change nothing; a pre-loaded node closed empty does not stop the fill
    assert pack([0.5, 0.3], [0.2, 0.6], 2, [0.0, 0.0], [0.0, 0.0]) == pack([0.5, 0.3], [0.2, 0.6], 2)
    assert pack([0.5], [0.5], 2, [0.0, 0.0], [0.9, 0.0]) == [1]


_job = st.tuples(
    st.integers(0, 900),
    st.integers(1, 900),
    st.integers(1, 3),
    st.sampled_from([0.25, 0.5, 1.0]),
    st.sampled_from([0.2, 0.3, 0.5, 0.6]),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    jobs=st.lists(_job, min_size=1, max_size=7),
    nodes=st.integers(2, 3),
    name=st.sampled_from(NEW),
    penalty=st.sampled_from([0.0, 300.0]),
    period=st.sampled_from([100.0, 300.0, 600.0]),
)
def test_invariants_and_pinning_hold(jobs, nodes, name, penalty, period):
    rel, proc, tasks, cpu, mem = (list(x) for x in zip(*jobs))
    tasks = [min(t, nodes) for t in tasks]
    pol = _Probe(DFRS_POLICIES[name](period=period) if "/per" in name else DFRS_POLICIES[name]())
    res = simulate_dfrs(rel, proc, tasks, cpu, mem, nodes, pol, penalty=penalty, check=True)
    s = res.state
    assert np.all(np.isfinite(s.end)) and np.all(s.end >= np.asarray(rel) + np.asarray(proc) - 1e-6)
    np.testing.assert_allclose(s.vt, proc)
    if name not in LIMITED:
        return
    bound = float(name.rsplit("=", 1)[1])
    for kind, t, before, after, status, vt in pol.all:
        if kind == "arrival" and name.startswith("GreedyPM"):
            continue  # migrations by GreedyPM are not limited (§4.3)
        for j, nodes_j in before.items():
            young = vt[j] < bound if "/MINVT=" in name else t - rel[j] < bound
            if young:  # paused, or still on exactly its nodes
                assert status[j] == PAUSED or after[j] == nodes_j, (t, j)


def test_the_forms_without_star_complete_the_13_basic_algorithms():
    """§4.5: 4 submission strategies x {*, /per, */per} + /per alone = 13. The
    forms without '*' do nothing on a completion (and /per alone nothing on a
    submission): waiting jobs start at the next periodic remap."""
    from schedlab.engines.dfrs.policies import DFRS_POLICIES
    from schedlab.engines.dfrs.sim import run_table
    from schedlab.workloads.lublin import lublin_workload

    basic = {
        n.rsplit("/OPT=", 1)[0] for n in DFRS_POLICIES if "/MIN" not in n.split("/OPT=")[1] and "/stretch-per" not in n
    }
    assert basic == {
        "Greedy*",
        "GreedyP*",
        "GreedyPM*",
        "MCB8*",
        "Greedy*/per",
        "GreedyP*/per",
        "GreedyPM*/per",
        "MCB8*/per",
        "Greedy/per",
        "GreedyP/per",
        "GreedyPM/per",
        "MCB8/per",
        "/per",
    }
    jobs = lublin_workload(np.random.default_rng(3), njobs=40, nodes=8)
    for name in (
        "Greedy/per/OPT=MIN",
        "GreedyPM/per/OPT=AVG",
        "MCB8/per/OPT=MIN",
        "/per/OPT=MIN",
        "GreedyP/per/OPT=MIN/MINVT=600",
    ):
        per_job, summary = run_table(jobs, DFRS_POLICIES[name], nodes=8, memory=0.3, check=True)
        assert summary["n_jobs"] == 40 and np.all(np.isfinite(per_job["end"])), name
    # /per alone starts nothing before the first periodic instant (first release + 600 s)
    per_job, _ = run_table(jobs, DFRS_POLICIES["/per/OPT=MIN"], nodes=8, memory=0.3, check=True)
    assert np.min(per_job["start"]) >= jobs["submit"].min() + 600.0 - 1e-9
