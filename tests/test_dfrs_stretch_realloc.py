"""The dfrs engine's ``stretch_realloc`` option (docs/dfrs.md row 18): a
policy with its own allocation (/stretch-per) re-allocates when the mapping
changes (default) or, as the authors' simulator does, at every instant with
the horizon T shrinking to the next period ("every-instant")."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedlab.engines import get_engine
from schedlab.engines.dfrs.policies import DFRS_POLICIES, STRETCH_PER_POLICIES
from schedlab.engines.dfrs.sim import simulate_dfrs
from schedlab.errors import UserError
from tests.test_dfrs_stretch import _job  # the /stretch-per invariants' job strategy

TOL = 1e-12  # relative: the hand-worked values are a few float operations away
WORK_TOL = 1e-9  # relative: the integral of the allocated CPU vs the total work (sums over events)
MODES = ("mapping-change", "every-instant")


def _hand(mode: str):
    return simulate_dfrs(
        [0.0, 0.0, 10.0],
        [2000.0, 2000.0, 20.0],
        [1, 1, 1],
        [1.0, 1.0, 1.0],
        [0.4, 0.4, 0.4],
        1,
        STRETCH_PER_POLICIES["GreedyP*/stretch-per/OPT=MAX"](period=1000.0),
        penalty=50.0,
        check=True,
        snapshots=True,
        stretch_realloc=mode,
    )


def test_hand_example_penalty_end():
    """1 node, CPU need 1, memory .4 (two jobs fit), period 1000 (instants 1000, 2000, ...), penalty 50;
    A, B (r = 0, p = 2000), C (r = 10, p = 20); GreedyP*/stretch-per/OPT=MAX.

    t=0: Greedy places A and B (load 2); T = 1000, F = 1000, v = 0 for both: y = 1/2 each.
    t=10: v = 5 each; C (virtual time 0, top priority) needs memory: GreedyP pauses B, places C; T = 990:
      y_A = (1000u - 5)/990, y_C = 990u/990, sum 1 -> u = 1/2, y = 1/2 each.
    t=50: C done (v_C = 20), the '*' pass resumes B (penalty until 100); v_A = 25, v_B = 5, T = 950:
      (1000u - 25) + (1000u - 5) = 950 -> u = 0.49, y_A = 465/950, y_B = 485/950.
    t=100 (B's penalty ends; the mapping is unchanged), v_A = 25 + 50 x 465/950 = 940/19, v_B = 5:
      * mapping-change: the yields are held: 465/950, 485/950;
      * every-instant: T = 900, (1000u - 940/19) + (1000u - 5) = 900 -> u = 18135/38000,
        y_A = 16255/34200, y_B = 17945/34200.
    t=1000 (period): every-instant reaches its target, v_A = v_B = 1000u = 18135/38; with the held yields
      v_A = 940/19 + 900 x 465/950 = 490, v_B = 5 + 900 x 485/950 = 8825/19 (B's penalty made the
      expected stretches unequal)."""
    snaps = {}
    for mode in MODES:
        res = _hand(mode)
        snaps[mode] = res.snapshots
        times = [t for t, *_ in res.snapshots]
        assert times[:5] == pytest.approx([0.0, 10.0, 50.0, 100.0, 1000.0], rel=TOL)
        _t, _vt, status, pen, y = res.snapshots[2]
        assert pen[1] == pytest.approx(100.0, rel=TOL)
        np.testing.assert_allclose(y[:2], [465 / 950, 485 / 950], rtol=TOL)
        np.testing.assert_allclose(res.snapshots[1][4], [0.5, 0.0, 0.5], rtol=TOL)
    held, each = snaps["mapping-change"], snaps["every-instant"]
    np.testing.assert_allclose(held[3][4][:2], [465 / 950, 485 / 950], rtol=TOL)
    np.testing.assert_allclose(each[3][4][:2], [16255 / 34200, 17945 / 34200], rtol=TOL)
    np.testing.assert_allclose(held[4][1][:2], [490.0, 8825 / 19], rtol=TOL)
    np.testing.assert_allclose(each[4][1][:2], [18135 / 38, 18135 / 38], rtol=TOL)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    jobs=st.lists(_job, min_size=1, max_size=8),
    nodes=st.integers(2, 3),
    name=st.sampled_from(sorted(STRETCH_PER_POLICIES)),
    penalty=st.sampled_from([0.0, 30.0, 300.0]),
    period=st.sampled_from([40.0, 150.0]),
)
def test_every_instant_invariants(jobs, nodes, name, penalty, period):
    """Capacity never exceeded (the engine's check mode: memory and allocated CPU <= 1 per node,
    yields in [0, 1], at every instant) and work conserved: every job ends with virtual time =
    its runtime, and the integral of the allocated CPU is the total work."""
    rel, proc, tasks, cpu, mem = (list(x) for x in zip(*jobs))
    tasks = [min(t, nodes) for t in tasks]  # every job fits the empty cluster (run_table's check)
    res = simulate_dfrs(
        rel,
        proc,
        tasks,
        cpu,
        mem,
        nodes,
        STRETCH_PER_POLICIES[name](period=period),
        penalty=penalty,
        check=True,
        stretch_realloc="every-instant",
    )
    s = res.state
    assert np.array_equal(s.vt, np.asarray(proc, dtype=float))
    assert np.all(s.end >= np.asarray(rel, dtype=float) + np.asarray(proc, dtype=float) * (1 - TOL))
    p = res.profile
    work = float(np.sum(np.diff(p.times) * p.allocated[: len(p.times) - 1]))
    total = float(np.sum(np.asarray(cpu) * np.asarray(tasks) * np.asarray(proc, dtype=float)))
    assert work == pytest.approx(total, rel=WORK_TOL)


def test_default_unchanged_and_other_policies_unaffected():
    """The default is "mapping-change" (bit-identical to not naming it); a policy without its own
    allocation (OPT=MIN) is not affected by "every-instant"."""
    from schedlab.workloads.lublin import lublin_workload

    jobs = lublin_workload(np.random.default_rng(3), njobs=30, nodes=16).with_columns(
        pl.lit(1.0).alias("cpu_need"), pl.lit(0.3).alias("memory")
    )
    eng = get_engine("dfrs")
    pol = "GreedyPM*/stretch-per/OPT=MAX/MINVT=600"
    a = eng.run(jobs, pol, None, {"nodes": 16}).jobs
    b = eng.run(jobs, pol, None, {"nodes": 16, "stretch_realloc": "mapping-change"}).jobs
    assert all(np.array_equal(a[k], b[k], equal_nan=True) for k in a)
    for policy in ("GreedyPM*/per/OPT=MIN/MINVT=600", "GreedyP*/OPT=AVG"):
        assert policy in DFRS_POLICIES
        a = eng.run(jobs, policy, None, {"nodes": 16}).jobs
        b = eng.run(jobs, policy, None, {"nodes": 16, "stretch_realloc": "every-instant"}).jobs
        assert all(np.array_equal(a[k], b[k], equal_nan=True) for k in a)


def test_bad_value_is_one_line():
    with pytest.raises(UserError, match="stretch_realloc") as e:
        get_engine("dfrs").run(
            pl.DataFrame({"job_id": [0], "submit": [0.0], "runtime": [10.0], "procs": [1]}),
            "/stretch-per/OPT=MAX",
            None,
            {"stretch_realloc": "x"},
        )
    assert "\n" not in str(e.value)
