"""The dfrs engine's MCB8-remap options (docs/dfrs.md rows 11, 12 and 20):
``mcb8_rules = "vcsim"`` packs with the authors' simulator's rules
(``schedlab.engines.dfrs.policies.mcb8_vcsim``) and ``relabel = "none"`` keeps
MCB8's node numbers as they come. Hand-worked cases, and a property test of
the vcsim-rule packing's capacities."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.engines import get_engine
from schedlab.engines.dfrs.policies.mcb8 import mcb8
from schedlab.engines.dfrs.policies.mcb8_vcsim import mcb8_vcsim, pack_vcsim
from schedlab.engines.dfrs.sim import WAITING, DfrsState
from schedlab.engines.dfrs.sim.allocation import percent_max_min, percent_yields
from schedlab.errors import UserError

END_TOL = 1e-9  # s: completion times of the hand-worked cases, equal up to float residue


def test_vcsim_rules_hand_example():
    """Two nodes; jobs a (id 0) and b (id 1), one task each, need 1, memory
    0.5; a has the higher priority.

    schedlab (``mcb8``): tasks laid out in priority order, Y on the grid
    k/100 up to 1: at Y = 1 each task (CPU 1, memory .5) fills a node's CPU,
    a goes to node 0 and b to node 1; yield 1.

    vcsim rules: bisection midpoints of (0, 1). Y = .5: CPU 50 % = memory
    50 %, so both are in the memory list, sorted (memory, CPU, id) descending:
    b first on node 0 (50/50), then a fits beside it (100/100): success.
    Y = .75, .875, .9375, .96875, .984375, .9921875: CPU (75 ... 99 %) >
    memory, the CPU list, (CPU, memory, id) descending: b on node 0, a does
    not fit there (CPU > 100), a on node 1: every one succeeds. Then
    hi - lo = 1 - 127/128 < .01: yield 127/128, b on node 0, a on node 1 --
    the later job first on ties, whatever the priorities."""
    jobs = [(0, 1, 1.0, 0.5, 2.0), (1, 1, 1.0, 0.5, 1.0)]
    ours = mcb8(jobs, 2)
    assert ours.yield_ == 1.0 and ours.mapping == {0: [0], 1: [1]}
    theirs = mcb8_vcsim(jobs, 2)
    assert theirs.yield_ == 127 / 128 and theirs.mapping == {1: [0], 0: [1]} and theirs.dropped == []


def test_vcsim_rules_drop_by_total_memory_first():
    """One node, two one-task jobs of memory .6 (120 % > 100 % in total): the
    lower-priority one (id 1) is dropped before any packing; the other packs
    at every midpoint (CPU 25 % x Y), yield 127/128."""
    res = mcb8_vcsim([(0, 1, 0.25, 0.6, 5.0), (1, 1, 0.25, 0.6, 1.0)], 1)
    assert res.dropped == [1] and res.mapping == {0: [0]} and res.yield_ == 127 / 128


def test_vcsim_rules_integer_percent_and_pinning():
    """One node holding a pinned job p (need 1, memory .2) and a free job f
    (need .25, memory .2). At Y: p takes int(100 Y) %, f max(1, int(25 Y)) %
    (CPU 25 Y > 20 % only from Y > .8). Both fit while
    int(100 Y) + int(25 Y) <= 100: Y = .5 (50 + 12), .75 (75 + 18), .875
    (87 + 21 = 108) fails, .8125 (81 + 20 = 101) fails, .78125 (78 + 19 = 97)
    fits, .796875 (79 + 19 = 98) fits, .8046875 (80 + 20 = 100) fits; stop:
    yield .8046875 (103/128), f on node 0."""
    res = mcb8_vcsim([(0, 1, 1.0, 0.2, 1.0), (1, 1, 0.25, 0.2, 2.0)], 1, pinned={0: [0]})
    assert res.mapping == {0: [0], 1: [0]} and res.yield_ == 103 / 128


def per_example() -> pl.DataFrame:
    """Two nodes; A (job 0) at t = 0 and B (job 1) at t = 1, one task each,
    need 1, memory .6 (no two on a node), runtime 1000. Greedy*/per with a
    period of 10 s, penalty 100 s.

    Greedy: A -> node 0, B -> node 1. The remap at t = 10: priorities
    flow / virtual^2 = 10/100 for A, 9/81 for B: B first. MCB8 (either
    rules) puts B in bin 0 and A in bin 1. ``relabel = "memory"`` renumbers
    the bins so both stay (no migration: A ends at 1000, B at 1001);
    ``"none"`` moves both: each pays 100 s, A ends at 1100, B at 1101. Later
    remaps keep B first (its flow time and virtual time trail A's by 1 s,
    and x / (x - 100)^2 decreases), so nobody moves again."""
    return pl.DataFrame(
        {
            "job_id": [0, 1],
            "submit": [0.0, 1.0],
            "runtime": [1000.0, 1000.0],
            "procs": [1, 1],
            "cpu_need": [1.0, 1.0],
            "memory": [0.6, 0.6],
        }
    )


def run_per(**system) -> dict[str, list]:
    res = get_engine("dfrs").run(
        per_example(), "Greedy*/per/OPT=MIN", {"period": 10.0}, {"nodes": 2, "penalty": 100.0, **system}
    )
    return {k: np.asarray(res.jobs[k]).tolist() for k in ("migrations", "end")}


@pytest.mark.parametrize("rules", ["schedlab", "vcsim"])
def test_relabel_keeps_jobs_in_place(rules):
    for system in ({"mcb8_rules": rules}, {"mcb8_rules": rules, "relabel": "memory"}):
        assert run_per(**system) == {"migrations": [0, 0], "end": [1000.0, 1001.0]}


@pytest.mark.parametrize("rules", ["schedlab", "vcsim"])
def test_no_relabel_migrates_both(rules):
    assert run_per(mcb8_rules=rules, relabel="none") == {"migrations": [1, 1], "end": [1100.0, 1101.0]}


def test_bad_values_are_one_line():
    for key in (
        "mcb8_rules",
        "relabel",
        "cpu_units",
        "penalties",
        "period_origin",
        "time_units",
        "priority_units",
        "arrival_at_period",
        "minvt_units",
    ):
        with pytest.raises(UserError, match=key):
            run_per(**{key: "other"})


_job = st.tuples(st.integers(1, 4), st.integers(1, 100), st.integers(1, 100))


@settings(max_examples=150, deadline=None)
@given(jobs=st.lists(_job, min_size=1, max_size=8), nodes=st.integers(1, 4))
def test_pack_vcsim_respects_capacities(jobs, nodes):
    """A packing, when there is one, puts every task on a node and no node
    above 100 % CPU or memory."""
    table = [(i, tasks, cpu, mem) for i, (tasks, cpu, mem) in enumerate(jobs)]
    out = pack_vcsim(table, nodes)
    if out is None:
        return
    cpu = [0] * nodes
    mem = [0] * nodes
    for job_id, tasks, c, m in table:
        assert len(out[job_id]) == tasks
        for k in out[job_id]:
            cpu[k] += c
            mem[k] += m
    assert max(cpu) <= 100 and max(mem) <= 100


def test_percent_yields_hand_values():
    """Level 1/3 -> .33; need 1 -> 33 % (yield .33); need .25 -> floor(8.25) = 8 % (yield .32); need .75
    at level .5 -> 37 % (yield 37/75); a tiny level still gets 1 %; OPT=AVG (no level step) floors only the
    CPU: yield .999 of need 1 -> 99 %."""
    y = percent_yields(np.array([1 / 3, 1 / 3, 0.5, 0.001]), np.array([1.0, 0.25, 0.75, 1.0]), level_step=True)
    assert y.tolist() == pytest.approx([0.33, 0.32, 37 / 75, 0.01], abs=1e-12)
    assert percent_yields(np.array([0.999]), np.array([1.0]), level_step=False).tolist() == pytest.approx([0.99])


def test_cpu_units_percent_on_the_engine():
    """One node, three one-task jobs of need 1 and runtime 33 at t = 0: real yields 1/3 end them all at 99 s;
    in whole percents each gets 33 % and ends at 100 s."""
    jobs = pl.DataFrame(
        {
            "job_id": [0, 1, 2],
            "submit": [0.0] * 3,
            "runtime": [33.0] * 3,
            "procs": [1] * 3,
            "cpu_need": [1.0] * 3,
            "memory": [0.1] * 3,
        }
    )
    for units, end in (("real", 99.0), ("percent", 100.0)):
        res = get_engine("dfrs").run(jobs, "Greedy*/OPT=MIN", None, {"nodes": 1, "cpu_units": units})
        assert np.asarray(res.jobs["end"]).tolist() == pytest.approx([end] * 3, abs=1e-9)


def fresh_example() -> pl.DataFrame:
    """Two nodes; A (job 0) at t = 0 and B (job 1) at t = 10, one task each,
    need 1, memory .6, runtime 1000. Greedy*/per, period 10 s, penalty 100 s,
    ``mcb8_rules = "vcsim"`` and ``relabel = "none"``.

    t = 0: Greedy puts A on node 0. t = 10, B arrives at the periodic
    instant: Greedy puts it on node 1; then the remap: equal jobs, so the
    vcsim rules take the later one first: B -> node 0, A -> node 1 (and so at
    every later remap while both run). A migrates (it ran 10 s) and, its
    penalty over at 110, would end at 10 + 100 + 990 = 1100. B started at
    this very instant: ``penalties = "each-change"`` counts a migration and B
    ends at 10 + 100 + 1000 = 1110, after A: nothing moves again.
    ``"instant-net"`` counts nothing (B is first started in that instant): B ends at 1010; the remap at 1020 finds A
    alone, puts it on node 0 (a second migration, 80 s of work left):
    A ends at 1020 + 100 + 80 = 1200."""
    return pl.DataFrame(
        {
            "job_id": [0, 1],
            "submit": [0.0, 10.0],
            "runtime": [1000.0, 1000.0],
            "procs": [1, 1],
            "cpu_need": [1.0, 1.0],
            "memory": [0.6, 0.6],
        }
    )


@pytest.mark.parametrize(
    "fresh,migrations,end", [("each-change", [1, 1], [1100.0, 1110.0]), ("instant-net", [2, 0], [1200.0, 1010.0])]
)
def test_penalties_first_start(fresh, migrations, end):
    system = {"nodes": 2, "penalty": 100.0, "mcb8_rules": "vcsim", "relabel": "none", "penalties": fresh}
    res = get_engine("dfrs").run(fresh_example(), "Greedy*/per/OPT=MIN", {"period": 10.0}, system)
    assert np.asarray(res.jobs["migrations"]).tolist() == migrations
    assert np.asarray(res.jobs["end"]).tolist() == end


@pytest.mark.parametrize(
    "origin,migrations,end", [("first-release", [0, 1], [13.0, 206.0]), ("zero", [1, 1], [113.0, 206.0])]
)
def test_period_origin(origin, migrations, end):
    """Two nodes; A (job 0, runtime 8) at t = 5 and B (job 1, runtime 100) at
    t = 6, need 1, memory .6: Greedy puts A on node 0, B on node 1.
    Greedy*/per, period 10 s, penalty 100 s, vcsim rules, no relabel (the
    later job packs first, on node 0).

    "first-release": instants at 15, 25, ...; A ends at 13 before the first;
    at 15 B alone goes to node 0 (a migration; 9 s done): 15 + 100 + 91 = 206.
    "zero": instants at 10, 20, ...; at 10 B -> node 0, A -> node 1, both
    migrate: A ends at 10 + 100 + 3 = 113, B at 10 + 100 + 96 = 206."""
    jobs = pl.DataFrame(
        {
            "job_id": [0, 1],
            "submit": [5.0, 6.0],
            "runtime": [8.0, 100.0],
            "procs": [1, 1],
            "cpu_need": [1.0, 1.0],
            "memory": [0.6, 0.6],
        }
    )
    system = {"nodes": 2, "penalty": 100.0, "mcb8_rules": "vcsim", "relabel": "none", "period_origin": origin}
    res = get_engine("dfrs").run(jobs, "Greedy*/per/OPT=MIN", {"period": 10.0}, system)
    assert np.asarray(res.jobs["migrations"]).tolist() == migrations
    assert np.asarray(res.jobs["end"]).tolist() == end


@pytest.mark.parametrize("units,end", [("real", [20.8, 30.4]), ("seconds", [21.0, 31.0])])
def test_time_units(units, end):
    """One node, two jobs of need 1 at t = 0, runtimes 10.4 and 20: yields .5
    each. Real time: job 0 ends at 20.8, job 1 (10.4 done) then runs alone:
    30.4. Whole seconds: job 0 holds its half of the CPU until 21, job 1 has
    10.5 done then and runs alone: 30.5, rounded up to 31."""
    jobs = pl.DataFrame(
        {
            "job_id": [0, 1],
            "submit": [0.0, 0.0],
            "runtime": [10.4, 20.0],
            "procs": [1, 1],
            "cpu_need": [1.0, 1.0],
            "memory": [0.1, 0.1],
        }
    )
    res = get_engine("dfrs").run(jobs, "Greedy*/OPT=MIN", None, {"nodes": 1, "time_units": units})
    assert np.asarray(res.jobs["end"]).tolist() == pytest.approx(end, abs=1e-9)


@pytest.mark.parametrize("rule", ["each-change", "instant-net"])
def test_penalties_net_change_of_an_instant(rule):
    """Two nodes, two one-task jobs (memory .5), penalty 50. t = 0: job 0 on
    node 0, job 1 on node 1 (first starts: no penalty either way). t = 10:
    job 0 is paused and placed back on node 0, job 1 moves to node 0.
    "each-change": job 0 pays a resume (penalty until 60, one pause), job 1 a
    migration. "instant-net": job 0 ends the instant where it began, so
    nothing is charged or counted for it; job 1 really moved and pays."""
    s = DfrsState(2, [0.0, 0.0], [100.0, 100.0], [1, 1], [1.0, 1.0], [0.5, 0.5], 50.0)
    s.penalties = rule
    for j in (0, 1):
        s.status[j] = WAITING
        s.pending.add(j)
    s.apply(places={0: [0], 1: [1]})
    s.settle_instant()
    assert s.pen_until.tolist() == [-np.inf, -np.inf]
    s.now = 10.0
    s.apply(pauses=[0])
    s.apply(places={0: [0]}, moves={1: [0]})
    s.settle_instant()
    assert s.migrations.tolist() == [0, 1] and s.pen_until[1] == 60.0
    if rule == "each-change":
        assert s.pauses.tolist() == [1, 0] and s.pen_until[0] == 60.0
    else:
        assert s.pauses.tolist() == [0, 0] and s.pen_until[0] == -np.inf


def test_percent_max_min_floors_at_each_step():
    """Job a has a task on node 0 and one on node 1; b and c are on node 0,
    d on node 1; every need is 1 (100 %). Node 0 (300 %) offers
    floor(10000 / 300) / 100 = .33, node 1 (200 %) .5: a, b, c get 33 %.
    Node 1 then has 67 % left for d's 100 %: level floor(100 x 67 / 100) / 100
    = .67, so d gets 67 %. (The exact max-min gives d 2/3, floored
    afterwards .66: the step-wise floor is what the authors' simulator does.)"""
    A = np.array([[1.0, 1.0, 1.0, 0.0], [1.0, 0.0, 0.0, 1.0]])
    y = percent_max_min(A, np.ones(4))
    assert y.tolist() == pytest.approx([0.33, 0.33, 0.33, 0.67], abs=1e-12)
    quarter = percent_max_min(np.array([[0.25, 1.0, 1.0]]), np.array([0.25, 1.0, 1.0]))
    # 225 %: level floor(10000 / 225) / 100 = .44; 25 % x .44 = 11 %, 100 % x .44 = 44 %
    assert quarter.tolist() == pytest.approx([0.44, 0.44, 0.44], abs=1e-12)


@pytest.mark.parametrize("star,end", [("instant-end", [1990.0, 2015.0, 110.0]), ("vcsim", [1000.0, 1150.0, 110.0])])
def test_star_pass_vcsim_leaves_this_instants_victims(star, end):
    """Two nodes, GreedyP*/OPT=MIN, put-back victims, penalty 50 s. A (job 0)
    and B (job 1), memory .5, need 1, runtime 1000, at t = 0: A on node 0, B
    on node 1. t = 10: J (job 2, memory .6, runtime 100) fits nowhere; A and
    B tie, B (the later) is the lowest priority: B is paused and J takes
    node 1; B cannot go back (.4 free there).

    "instant-end": the '*' pass at the end of t = 10 puts B on node 0 beside
    A (a resume, penalty to 60); A and B share node 0 at yield .5: A ends at
    10 + 990 / .5 = 1990, B (975 done then) at 2015. "vcsim": B, paused as a
    victim in this instant, waits; at 110 (J done) the pass puts it on the
    empty node 1 (penalty to 160): B ends at 1150, A alone at 1000."""
    jobs = pl.DataFrame(
        {
            "job_id": [0, 1, 2],
            "submit": [0.0, 0.0, 10.0],
            "runtime": [1000.0, 1000.0, 100.0],
            "procs": [1, 1, 1],
            "cpu_need": [1.0, 1.0, 1.0],
            "memory": [0.5, 0.5, 0.6],
        }
    )
    system = {"nodes": 2, "penalty": 50.0, "victims": "put-back", "star_pass": star}
    res = get_engine("dfrs").run(jobs, "GreedyP*/OPT=MIN", None, system)
    assert np.asarray(res.jobs["end"]).tolist() == pytest.approx(end, abs=1e-9)


@pytest.mark.parametrize("units,order", [("real", [2, 1, 0]), ("ms", [2, 0, 1])])
def test_priority_units(units, order):
    """At t = 100, jobs released at 0 with virtual times 10.0004 s (job 0),
    10 s (job 1) and 0 (job 2). Floats: 100 / 100.008 < 100 / 100, so job 1
    ranks before job 0; job 2 (no virtual time) first. Whole milliseconds:
    both have vt = 10,000 ms, 10,000^2 // 100,000 = 1,000: a tie, the earlier
    job (0) first; job 2's value is 0, the smallest, first."""
    s = DfrsState(1, [0.0] * 3, [50.0] * 3, [1] * 3, [1.0] * 3, [0.1] * 3, 0.0)
    s.priority_units = units
    s.now = 100.0
    s.vt[:] = [10.0004, 10.0, 0.0]
    assert s.by_priority([0, 1, 2]) == order
    if units == "real":
        assert s.priority(1) > s.priority(0)
    else:
        assert s.priority(1) == s.priority(0) == -1000.0


@pytest.mark.parametrize(
    "rule,migrations,end", [("placed", [1, 1], [1100.0, 1110.0]), ("remap", [2, 0], [1200.0, 1010.0])]
)
def test_arrival_at_period(rule, migrations, end):
    """``fresh_example`` (B arrives at the periodic instant t = 10), penalties
    each change. "placed": Greedy puts B on node 1, the remap moves it to node
    0 (a migration): as in ``test_penalties_first_start``, ends 1100 / 1110.
    "remap": Greedy does not run for B; the remap's packing is the same (B on
    node 0, A on node 1) but B's is a first start: B ends at 1010, and at
    1020 A, alone, moves to node 0 again: 1020 + 100 + 80 = 1200."""
    system = {"nodes": 2, "penalty": 100.0, "mcb8_rules": "vcsim", "relabel": "none", "arrival_at_period": rule}
    res = get_engine("dfrs").run(fresh_example(), "Greedy*/per/OPT=MIN", {"period": 10.0}, system)
    assert np.asarray(res.jobs["migrations"]).tolist() == migrations
    assert np.asarray(res.jobs["end"]).tolist() == end


def test_below_minvt_units():
    """MINVT's test at a bound of 600 s. 480 s of virtual time plus 120 s
    gained at yield .2 over intervals of 11, 99, 127, 9, 54 and 300 s (the
    instants of job 975 of the 1,000-job Lublin seed 1 between two periodic
    remaps, docs/dfrs.md) sums in floats to 599.9999999999999 s: below 600 in
    floats (pinned), exactly 600,000 ms in whole milliseconds, not below
    600,000 (the authors' simulator's ``vtmsecs() < 1000 * minvt``: not
    pinned). A virtual time one millisecond short (599.999 s) is below in
    both; 600.0004 s (600,000 ms) is below in neither."""
    s = DfrsState(1, [0.0] * 3, [1000.0] * 3, [1] * 3, [1.0] * 3, [0.1] * 3, 0.0)
    vt = 480.0
    for dt in (11.0, 99.0, 127.0, 9.0, 54.0, 300.0):
        vt += 0.2 * dt
    assert vt == 599.9999999999999
    s.vt[:] = [vt, 599.999, 600.0004]
    assert [s.below_minvt(j, 600.0) for j in range(3)] == [True, True, False]
    s.minvt_units = "ms"
    assert [s.below_minvt(j, 600.0) for j in range(3)] == [False, True, False]


def minvt_example() -> pl.DataFrame:
    """Two nodes; A (job 0) at t = 0, runtime 2 s, and B (job 1) at t = .61,
    runtime 5 s, one task each, need 1, memory .6 (one job a node).
    /per/OPT=MIN with a period of .3 s and MINVT = .6 s, penalty 1 s,
    vcsim's MCB8 rules and no relabelling. The periodic instants are k x .3
    in floats: .3, .6, .8999999999999999, 1.2, 1.5, ...

    A is placed on node 0 at .3 and runs at yield 1; at the third instant its
    virtual time is .3 + (.8999999999999999 - .6) = .5999999999999999 s,
    .6 s exactly. MCB8 maps A and B there.

    ``minvt_units = "real"``: .5999999999999999 < .6, A is pinned on node 0
    and B goes to node 1. At 1.2 A (vt .9) is free but B (vt .3) pinned: A
    stays on node 0. At 1.5 both are free (B's vt .6000000000000001):
    vcsim's lists put the later job first on ties, B on node 0 and A on node
    1: both migrate, each paying 1 s. A (vt 1.2) ends at 1.5 + 1 + .8 = 3.3,
    B (vt .6) at 1.5 + 1 + 4.4 = 6.9.

    ``"ms"``: A's 600 ms are not below 600 ms, so A is not pinned: B (the
    later job) goes to node 0 and A migrates to node 1 at .9 (vt .6, penalty
    to 1.9): A ends at 1.9 + 1.4 = 3.3, B, never moved, at .9 + 5 = 5.9."""
    return pl.DataFrame(
        {
            "job_id": [0, 1],
            "submit": [0.0, 0.61],
            "runtime": [2.0, 5.0],
            "procs": [1, 1],
            "cpu_need": [1.0, 1.0],
            "memory": [0.6, 0.6],
        }
    )


@pytest.mark.parametrize("units,migrations,end", [("real", [1, 1], [3.3, 6.9]), ("ms", [1, 0], [3.3, 5.9])])
def test_minvt_units(units, migrations, end):
    """``minvt_example``: with MINVT's test in floats B runs on the other node
    until both are free and then both migrate; in whole milliseconds (the
    authors' simulator) A is repacked at once and B never moves."""
    system = {"nodes": 2, "penalty": 1.0, "mcb8_rules": "vcsim", "relabel": "none", "minvt_units": units}
    res = get_engine("dfrs").run(minvt_example(), "/per/OPT=MIN", {"period": 0.3, "minvt": 0.6}, system)
    assert np.asarray(res.jobs["migrations"]).tolist() == migrations
    assert np.asarray(res.jobs["end"]).tolist() == pytest.approx(end, abs=END_TOL)
