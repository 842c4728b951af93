"""MCB8 (schedlab.engines.dfrs.policies.mcb8): hand-worked fills, the yield search
against a brute-force grid, capacity of every returned mapping, dropping order."""

import math

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from schedlab.engines.dfrs.policies.mcb8 import FIT_TOL, MCB8Result, mcb8, pack


def test_pack_hand_example_alternates_lists():
    """2 nodes; (cpu, mem): t0 (.6,.2) t1 (.5,.3) CPU-heavy; t2 (.1,.7) t3 (.3,.4) memory-heavy.
    CPU list [t0 .6, t1 .5]; memory list [t2 .7, t3 .4].
    Node 0: (0,0) c<=m -> CPU list: t0 -> (.6,.2); c>m -> memory list: t2 -> (.7,.9);
            c<=m -> CPU list: t1 (cpu 1.2) no; memory list: t3 (mem 1.3) no -> close.
    Node 1: CPU list: t1 -> (.5,.3); c>m -> memory list: t3 -> (.8,.7). Done."""
    assert pack([0.6, 0.5, 0.1, 0.3], [0.2, 0.3, 0.7, 0.4], 2) == [0, 1, 0, 1]


def test_pack_hand_example_scans_past_head_and_exhausted_list():
    """2 nodes; t0 (.6,.1) t1 (.5,.2) t2 (.3,.1) CPU-heavy; t3 (.1,.5) memory-heavy.
    CPU list [t0, t1, t2]; memory list [t3].
    Node 0: CPU: t0 -> (.6,.1); c>m -> memory: t3 -> (.7,.6); c>m -> memory list exhausted
            -> CPU list: t1 (cpu 1.2) no, t2 fits (first fitting, not the head) -> (1.0,.7);
            then t1 does not fit anywhere -> close.
    Node 1: t1."""
    assert pack([0.6, 0.5, 0.3, 0.1], [0.1, 0.2, 0.1, 0.5], 2) == [0, 1, 0, 0]


def test_pack_hand_example_preferred_list_has_no_fit():
    """2 nodes; t0 (.5,.1) t1 (.9,.05) t3 (.3,.1) CPU-heavy; t2 (.2,.6) memory-heavy.
    CPU list [t1 .9, t0 .5, t3 .3]; memory list [t2 .6].
    Node 0: CPU: t1 -> (.9,.05); c>m -> memory: t2 (cpu 1.1) no -> CPU: t0, t3 no -> close.
    Node 1: CPU: t0 -> (.5,.1); memory: t2 -> (.7,.7); c<=m -> CPU: t3 -> (1.0,.8)."""
    assert pack([0.5, 0.9, 0.2, 0.3], [0.1, 0.05, 0.6, 0.1], 2) == [1, 0, 1, 1]


def test_pack_ties_and_failures():
    # cpu == mem goes to the memory list: t0 (.6,.6) is memory-heavy, so node 0 starts
    # from the CPU list [t1 .5, t2 .45] -> t1, t0 no (cpu 1.1), t2 -> (.95,.2); node 1: t0.
    # (Were t0 CPU-heavy it would head the CPU list and the result would be [0, 1, 1].)
    assert pack([0.6, 0.5, 0.45], [0.6, 0.1, 0.1], 2) == [1, 0, 0]
    # equal keys keep index order: t0, t1 on node 0, t2 on node 1
    assert pack([0.5, 0.5, 0.5], [0.5, 0.5, 0.5], 2) == [0, 0, 1]
    assert pack([0.5, 0.5, 0.5], [0.5, 0.5, 0.5], 1) is None
    assert pack([0.4, 0.4, 0.4], [0.1, 0.1, 0.1], 2) == [0, 0, 1]
    assert pack([0.1] * 3, [0.6] * 3, 2) is None  # memory alone does not fit
    assert pack([1.2], [0.0], 5) is None  # never fits an empty node
    assert pack([], [], 0) == []
    assert pack([0.1], [0.1], 0) is None
    with pytest.raises(ValueError):
        pack([0.1], [0.1, 0.2], 1)


def test_mcb8_hand_example_yield():
    """2 nodes; job 1: 2 tasks need 1, mem .3, priority 2; job 2: 2 tasks need .5, mem .3, priority 1.
    Each node must hold one task of each job: Y + .5Y <= 1 -> best grid Y = .66.
    At Y=.66 all four are CPU-heavy: CPU list [1a .66, 1b .66, 2a .33, 2b .33];
    node 0: 1a, then (memory list empty) 1b no, 2a -> .99; node 1: 1b, 2b.
    At Y=.67: .67 + .335 > 1 -> fails."""
    res = mcb8([(2, 2, 0.5, 0.3, 1.0), (1, 2, 1.0, 0.3, 2.0)], nodes=2)
    assert isinstance(res, MCB8Result)
    assert res.yield_ == pytest.approx(0.66)
    assert res.mapping == {1: [0, 1], 2: [0, 1]}
    assert res.dropped == []


def test_mcb8_all_fit_at_full_yield_and_empty():
    res = mcb8([(0, 2, 0.4, 0.2, 1.0)], nodes=1)
    assert res.yield_ == 1.0 and res.mapping == {0: [0, 0]}
    assert mcb8([], nodes=3) == MCB8Result(1.0, {}, [])


def test_mcb8_drop_order_ties_latest_id_first():
    """2 nodes, every task mem .6 (one per node). Job 1 (2 tasks, prio 3), jobs 2 and 3 (1 task, prio 1).
    4 tasks > 2: drop among priority 1 the largest id (3), still 3 tasks: drop 2."""
    res = mcb8([(3, 1, 0.5, 0.6, 1.0), (1, 2, 0.5, 0.6, 3.0), (2, 1, 0.5, 0.6, 1.0)], nodes=2)
    assert res.dropped == [3, 2]
    assert res.mapping == {1: [0, 1]}
    assert res.yield_ == 1.0


def test_mcb8_drops_by_priority_only():
    """A job that can never fit (mem 1.5) but has high priority is dropped only after the
    lower-priority job: the rule is "drop the lowest-priority job", not "drop the culprit"."""
    res = mcb8([(1, 1, 0.5, 1.5, 10.0), (2, 1, 0.5, 0.5, 1.0)], nodes=4)
    assert res.dropped == [2, 1]
    assert res.mapping == {} and res.yield_ == 1.0


def test_mcb8_rejects_bad_input():
    with pytest.raises(ValueError):
        mcb8([(1, 1, 0.5, 0.5, 1.0), (1, 1, 0.5, 0.5, 1.0)], nodes=1)
    with pytest.raises(ValueError):
        mcb8([(1, 1, 0.5, 0.5, 1.0)], nodes=1, precision=0.0)
    with pytest.raises(ValueError):
        mcb8([(1, -1, 0.5, 0.5, 1.0)], nodes=1)


# ---------------------------------------------------------------- properties

job_rows = st.lists(
    st.tuples(
        st.integers(1, 3),  # tasks
        st.integers(5, 100).map(lambda x: x / 100),  # need
        st.integers(0, 70).map(lambda x: x / 100),  # mem
        st.integers(0, 3).map(float),  # priority
    ),
    min_size=1,
    max_size=4,
)


def _jobs(rows):
    return [(i, t, n, m, p) for i, (t, n, m, p) in enumerate(rows)]


def _order(jobs):
    """Task layout used by mcb8: priority descending, then job id ascending."""
    return sorted(jobs, key=lambda j: (-j[4], j[0]))


def _pack_at(active, y, nodes):
    needs = [j[2] for j in active for _ in range(j[1])]
    mems = [j[3] for j in active for _ in range(j[1])]
    return pack([y * x for x in needs], mems, nodes)


def _check_capacity(jobs, res, nodes):
    by_id = {j[0]: j for j in jobs}
    cpu = [0.0] * nodes
    mem = [0.0] * nodes
    for jid, where in res.mapping.items():
        _, tasks, need, m, _ = by_id[jid]
        assert len(where) == tasks
        for node in where:
            assert 0 <= node < nodes
            cpu[node] += res.yield_ * need
            mem[node] += m
    assert max(cpu) <= 1 + 1e-6 and max(mem) <= 1 + 1e-6
    assert set(res.mapping).isdisjoint(res.dropped)
    assert set(res.mapping) | set(res.dropped) == set(by_id)


@settings(max_examples=150, deadline=None)
@given(rows=job_rows, nodes=st.integers(1, 3))
def test_mcb8_yield_matches_brute_force(rows, nodes):
    jobs = _jobs(rows)
    res = mcb8(jobs, nodes)
    _check_capacity(jobs, res, nodes)
    active = [j for j in _order(jobs) if j[0] in res.mapping]
    if not active:
        return
    k = round(res.yield_ * 100)
    assert res.yield_ == k / 100
    # the returned mapping is pack's at the returned yield, and one grid step up failed
    flat = [node for j in active for node in res.mapping[j[0]]]
    assert _pack_at(active, res.yield_, nodes) == flat
    if k < 100:
        assert _pack_at(active, (k + 1) / 100, nodes) is None
    # brute force on a 0.001 grid (the 0.01 grid is a subset of it)
    ok = [_pack_at(active, i / 1000, nodes) is not None for i in range(1001)]
    best = max(i for i in range(1001) if ok[i]) / 1000
    prefix = (ok.index(False) - 1 if False in ok else 1000) / 1000
    assert res.yield_ <= best + 1e-12
    assert res.yield_ >= prefix - 0.01 - 1e-12
    if prefix == best:
        event("monotone")
        assert best - 0.01 - 1e-12 <= res.yield_ <= best + 1e-12
    else:
        event("non-monotone")


@settings(max_examples=150, deadline=None)
@given(rows=job_rows, nodes=st.integers(1, 3))
def test_mcb8_drops_lowest_priority_suffix(rows, nodes):
    jobs = _jobs([(t, n, m * 2, p) for t, n, m, p in rows])  # mem up to 1.4: drops happen
    res = mcb8(jobs, nodes)
    _check_capacity(jobs, res, nodes)
    order = _order(jobs)
    kept = len(order) - len(res.dropped)
    # kept jobs are the highest-priority prefix; dropped ones come off the end, in reverse
    assert [j[0] for j in order[:kept]] == sorted(res.mapping, key=lambda i: (-jobs[i][4], i))
    assert res.dropped == [j[0] for j in reversed(order[kept:])]
    if res.dropped:
        event("dropped")
        last = order[kept]
        assert _pack_at(order[:kept] + [last], 0.0, nodes) is None
    if kept:
        assert _pack_at(order[:kept], 0.0, nodes) is not None


@settings(max_examples=150, deadline=None)
@given(
    reqs=st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1)), max_size=12),
    nodes=st.integers(0, 4),
)
def test_pack_respects_capacity(reqs, nodes):
    cpu = [c for c, _ in reqs]
    mem = [m for _, m in reqs]
    where = pack(cpu, mem, nodes)
    if where is None:
        return
    assert len(where) == len(reqs)
    for node in range(nodes):
        assert sum(c for c, w in zip(cpu, where) if w == node) <= 1 + FIT_TOL * (len(reqs) + 1)
        assert sum(m for m, w in zip(mem, where) if w == node) <= 1 + FIT_TOL * (len(reqs) + 1)
    assert all(0 <= w < nodes for w in where)
    assert not math.isnan(sum(cpu))


def _pack_front_scan(cpu, mem, nodes, init_cpu=None, init_mem=None):
    """The fill rules read literally (module docstring): every choice scans its
    list from the front. The reference for pack's resumed scans."""
    n = len(cpu)
    key = [max(c, m) for c, m in zip(cpu, mem)]
    lists = (
        sorted((i for i in range(n) if cpu[i] > mem[i]), key=lambda i: -key[i]),
        sorted((i for i in range(n) if not cpu[i] > mem[i]), key=lambda i: -key[i]),
    )
    where, left = [-1] * n, n
    for node in range(nodes):
        if not left:
            break
        c = init_cpu[node] if init_cpu else 0.0
        m = init_mem[node] if init_mem else 0.0
        placed = 0
        while left:
            order = (0, 1) if c <= m else (1, 0)
            pick = next(
                ((k, i) for k in order for i in lists[k] if c + cpu[i] <= 1 + FIT_TOL and m + mem[i] <= 1 + FIT_TOL),
                None,
            )
            if pick is None:
                break
            k, i = pick
            lists[k].remove(i)
            where[i], c, m, placed, left = node, c + cpu[i], m + mem[i], placed + 1, left - 1
        if placed == 0 and not (init_cpu and (init_cpu[node] > 0 or init_mem[node] > 0)):
            return None
    return where if left == 0 else None


@settings(max_examples=300, deadline=None)
@given(
    jobs=st.lists(st.tuples(st.integers(1, 5), st.floats(0, 1), st.floats(0, 1)), max_size=10),
    nodes=st.integers(0, 5),
    preload=st.booleans(),
    data=st.data(),
)
def test_pack_equals_the_front_scan_reference(jobs, nodes, preload, data):
    """Tasks come in runs of identical requirements (a job's tasks), as in MCB8's use."""
    cpu = [c for k, c, _ in jobs for _ in range(k)]
    mem = [m for k, _, m in jobs for _ in range(k)]
    init = None
    if preload and nodes:
        init = data.draw(st.lists(st.tuples(st.floats(0, 0.6), st.floats(0, 0.6)), min_size=nodes, max_size=nodes))
    init_cpu = [c for c, _ in init] if init else None
    init_mem = [m for _, m in init] if init else None
    assert pack(cpu, mem, nodes, init_cpu, init_mem) == _pack_front_scan(cpu, mem, nodes, init_cpu, init_mem)
