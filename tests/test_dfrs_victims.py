"""The dfrs engine's ``victims`` option (docs/dfrs.md row 7): GreedyP /
GreedyPM's victims are the lowest-priority prefix of the lower-priority
running jobs that makes room (default) or, as the authors' simulator picks
them (``"put-back"``), any mapped job taken off one at a time until Greedy
places the new job, then every victim whose own nodes still have the memory
put back, highest priority first."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedlab.engines import get_engine
from schedlab.engines.dfrs.policies import DFRS_POLICIES
from schedlab.engines.dfrs.sim import MEM_EPS, PAUSED, RUNNING, simulate_dfrs
from schedlab.errors import UserError


def hand_example() -> pl.DataFrame:
    """Two nodes, one-task jobs, no penalty.

    t = 0: Q (job 0: need .5, mem .5), Y (job 1: need 1, mem .7), X (job 2:
    need .5, mem .5) arrive in that order. Greedy: Q -> node 0 (tie on load,
    lowest index); Y -> node 1 (node 0 has .5 free < .7); X -> node 0 (node 1
    has .3 free). Node 0 holds Q + X (CPU 1, memory 1), node 1 holds Y: every
    yield is 1.
    t = 10: J (job 3: need 1, mem .6) arrives; no node has .6 free. Q, Y, X
    all have virtual time 10 and flow time 10, so equal priority; ties by
    submission: Q highest, then Y, then X lowest.

    Default ("prefix"): the candidates are Q, Y, X (lower priority than J,
    whose virtual time is 0); lowest first: X off -> node 0 has .5 free, no
    slot for .6; Y off -> node 1 has 1.0 free: one slot, enough. Victims X and
    Y are paused; J goes to node 1.

    "put-back": X off, Greedy still fails; Y off, Greedy places J on node 1
    (.4 left). Put back, highest priority first: Y needs .7 on node 1 (.4
    free): stays paused; X needs .5 on node 0 (.5 free): put back. Only Y is
    paused; X never stops.

    GreedyPM (both rules) then tries to re-place the paused victims with
    Greedy: Y (.7) fits nowhere (node 0: 0 or .5 free, node 1: .4), X under
    "prefix" goes back to node 0 (its own node: neither paused nor
    migrated). So GreedyPM* pauses only Y under both rules."""
    return pl.DataFrame(
        {
            "job_id": [0, 1, 2, 3],
            "submit": [0.0, 0.0, 0.0, 10.0],
            "runtime": [1000.0, 1000.0, 1000.0, 100.0],
            "procs": [1, 1, 1, 1],
            "cpu_need": [0.5, 1.0, 0.5, 1.0],
            "memory": [0.5, 0.7, 0.5, 0.6],
        }
    )


def run(policy: str, victims: str | None) -> dict[str, list]:
    system = {"nodes": 2, "penalty": 0.0} | ({} if victims is None else {"victims": victims})
    res = get_engine("dfrs").run(hand_example(), policy, None, system)
    return {k: np.asarray(res.jobs[k]).tolist() for k in ("pauses", "migrations", "start", "end")}


def test_hand_example_default_pauses_the_prefix():
    for victims in (None, "prefix"):
        out = run("GreedyP*/OPT=MIN", victims)
        assert out["pauses"] == [0, 1, 1, 0]
        assert out["start"] == [0.0, 0.0, 0.0, 10.0] and out["end"][3] == 110.0


def test_hand_example_put_back_pauses_only_y():
    out = run("GreedyP*/OPT=MIN", "put-back")
    assert out["pauses"] == [0, 1, 0, 0]
    assert out["end"][3] == 110.0  # J runs alone on node 1 at yield 1
    # X kept running: 1000 s at yield 1 from t = 0
    assert out["end"][2] == 1000.0


@pytest.mark.parametrize("victims", ["prefix", "put-back"])
def test_hand_example_greedypm_pauses_only_y(victims):
    out = run("GreedyPM*/OPT=MIN", victims)
    assert out["pauses"] == [0, 1, 0, 0] and out["migrations"] == [0, 0, 0, 0]


def test_bad_value_is_one_line():
    with pytest.raises(UserError, match="victims"):
        run("GreedyP*/OPT=MIN", "all")


class _Probe:
    """Wraps a GreedyP-family policy; after each arrival checks the put-back
    rule's two promises: the arriving job runs, and no job it paused has room
    on its own nodes again."""

    def __init__(self, inner):
        self.inner = inner
        self.opt = inner.opt
        self.period = inner.period
        self.checked = 0

    def on_arrival(self, s, j):
        before = {v: s.nodes_of(v).copy() for v in s.running}
        self.inner.on_arrival(s, j)
        assert s.status[j] == RUNNING, (s.now, j)
        for v, nodes in before.items():
            if s.status[v] == PAUSED:
                self.checked += 1
                hosts, count = np.unique(nodes, return_counts=True)
                room = np.all(s.free_mem[hosts] + MEM_EPS >= s.mem[v] * count)
                assert not room, (s.now, v, nodes.tolist())

    def on_completion(self, s):
        self.inner.on_completion(s)

    def on_period(self, s):
        self.inner.on_period(s)


_job = st.tuples(
    st.integers(0, 300),
    st.integers(1, 600),
    st.integers(1, 3),
    st.sampled_from([0.25, 0.5, 1.0]),
    st.sampled_from([0.2, 0.3, 0.4, 0.5, 0.6, 0.7]),
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    jobs=st.lists(_job, min_size=1, max_size=9),
    nodes=st.integers(1, 3),
    name=st.sampled_from(["GreedyP*/OPT=MIN", "GreedyPM*/OPT=MIN", "GreedyP*/per/OPT=MIN/MINVT=600"]),
    penalty=st.sampled_from([0.0, 300.0]),
)
def test_put_back_invariants(jobs, nodes, name, penalty):
    """Memory never exceeded (check=True verifies every node after every
    instant), every job completes with its work done, the arriving job always
    runs, and no victim is left paused while its nodes have room."""
    rel, proc, tasks, cpu, mem = (list(x) for x in zip(*jobs))
    tasks = [min(t, nodes) for t in tasks]
    cls = DFRS_POLICIES[name]
    pol = _Probe(cls(period=300.0) if "/per" in name else cls())
    res = simulate_dfrs(rel, proc, tasks, cpu, mem, nodes, pol, penalty=penalty, check=True, victims="put-back")
    s = res.state
    assert np.all(np.isfinite(s.end))
    np.testing.assert_allclose(s.vt, proc)


def _hand_arrays():
    df = hand_example()
    return [df[c].to_list() for c in ("submit", "runtime", "procs", "cpu_need", "memory")]


def test_probe_sees_the_hand_example_victim_and_catches_the_prefix_rule():
    """The probe's room test has teeth: under the default rule X is left
    paused while node 0 has its .5 free (the probe fails); under put-back it
    checks exactly one paused victim (Y) and passes."""
    pol = _Probe(DFRS_POLICIES["GreedyP*/OPT=MIN"]())
    simulate_dfrs(*_hand_arrays(), 2, pol, penalty=0.0, check=True, victims="put-back")
    assert pol.checked == 1
    with pytest.raises(AssertionError):
        simulate_dfrs(*_hand_arrays(), 2, _Probe(DFRS_POLICIES["GreedyP*/OPT=MIN"]()), penalty=0.0, victims="prefix")
