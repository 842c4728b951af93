"""Hand-worked schedules, each derived in its docstring, plus the paper's
Fig. 2 example (sizes 10, 5, 2 arriving at 0, 3, 5)."""

import numpy as np
import pytest

from schedlab.engines.queue.policies.fsp import VirtualLag
from tests.conftest import run

#: Every test here runs on both engine paths: the Python reference and the
#: compiled kernels (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("engine_path")

SUBMIT = [0.0, 3.0, 5.0]
SIZE = [10.0, 5.0, 2.0]


def test_fig2_virtual_lag_values():
    """§4.2.2: g = 3 when J2 arrives, g = 4 when J3 arrives; g_1 = 10,
    g_2 = 8, g_3 = 6 (= 4 + 2); virtual completions J3 at t = 11 (6 virtual
    time units after its arrival), J2 at 15, J1 at 17."""
    v = VirtualLag()
    v.arrive(0.0, 0, 10.0, 1.0)
    assert v.g == 0.0
    v.arrive(3.0, 1, 5.0, 1.0)
    assert v.g == 3.0
    v.arrive(5.0, 2, 2.0, 1.0)
    assert v.g == 4.0
    assert sorted((g_i, job) for _, job, g_i, _ in v.O) == [(6.0, 2), (8.0, 1), (10.0, 0)]
    assert v.head() == 2
    finished = []
    while v.next_completion_time() < float("inf"):
        t = v.next_completion_time()
        finished.append((t, v.complete_next(t)))
    assert finished == [(11.0, 2), (15.0, 1), (17.0, 0)]


@pytest.mark.parametrize("policy", ["FSP", "PSBS", "FSPE+PS", "SRPT"])
def test_fig2_real_schedule(policy):
    """J1 runs 0-3; J2 (g_2 = 8 < g_1 = 10) preempts it 3-5; J3 (g_3 = 6)
    runs 5-7; then J2 finishes at 10 and J1 at 17: order J3, J2, J1."""
    assert run(policy, SUBMIT, SIZE).tolist() == [17.0, 10.0, 7.0]


def test_ps_and_las_by_hand():
    """PS: 0-3 J1 alone (7 left); 3-5 halves (J1 6, J2 4 left); from 5 thirds:
    J3 ends at 11, then halves: J2 at 15, J1 at 17.
    LAS: J2 (attained 0) runs 3-5; J3 runs 5-7 and ends; J2 alone 7-8 until it
    reaches J1's 3 units; then J1, J2 share: J2's last 2 units end at 12, J1 at 17."""
    assert run("PS", SUBMIT, SIZE).tolist() == [17.0, 15.0, 11.0]
    assert run("LAS", SUBMIT, SIZE).tolist() == [17.0, 12.0, 7.0]


UNDER = [1.0, 5.0, 2.0]  # J1 (size 10) estimated at 1: it becomes late


def test_late_job_monopolises_srpte():
    """SRPTE: J1's estimated remaining hits 0 at t = 1; no newcomer can preempt
    it, so it runs to t = 10; then J3 (est 2) ends at 12 and J2 at 17."""
    assert run("SRPTE", SUBMIT, SIZE, UNDER).tolist() == [10.0, 17.0, 12.0]


def test_srpte_plus_ps_shares_with_late_jobs():
    """SRPTE+PS: J1 late at 1; J2 (head) shares with it from 3; J3 (est 2 < J2's
    remaining estimate 4) replaces J2 at 5, sharing with J1: J3 ends at 9. J1 has
    then had 3 + 1 + 2 = 6 units; J2 (4 left) rejoins; both have 4 left: 17."""
    assert run("SRPTE+PS", SUBMIT, SIZE, UNDER).tolist() == [17.0, 17.0, 9.0]
    assert run("SRPTE+LAS", SUBMIT, SIZE, UNDER).tolist() == [17.0, 17.0, 9.0]


def test_fspe_serves_late_jobs_one_at_a_time():
    """FSPE: J1 finishes virtually at 1 (late) and runs alone to 10. Virtually,
    J2 (alone from 3) and J3 (from 5) share: J3 ends virtually at 9, J2 at 10,
    both late; J1's real completion at 10 comes first (ties: completions first),
    then J3 (late first) runs 10-12 and J2 12-17."""
    assert run("FSPE", SUBMIT, SIZE, UNDER).tolist() == [10.0, 17.0, 12.0]


def test_fspe_plus_ps_shares_among_late_jobs():
    """FSPE+PS: J1 alone (late) until J3 becomes late at 9, by when it has had
    9 units (1 left). 9-10: J1 and J3 share (J1 0.5 left, J3 1.5); at 10 J2 is
    late too: thirds, J1 ends at 11.5 (J3 1 left, J2 4.5); halves: J3 ends at
    13.5 and J2 (3.5 left) at 17."""
    assert run("FSPE+PS", SUBMIT, SIZE, UNDER).tolist() == [11.5, 17.0, 13.5]
    assert run("PSBS", SUBMIT, SIZE, UNDER).tolist() == [11.5, 17.0, 13.5]


def test_fspe_plus_las_among_late_jobs():
    """FSPE+LAS: J1 alone until 9 (9 units). J3 late at 9 with 0 units: alone.
    J2 late at 10 with 0 units (J3 has 1): alone until 11, then J2, J3 share at
    level 1: J3 ends at 13 (2 units) with J2 at 2; J2 alone to its 5 units at 16;
    J1's last unit ends at 17."""
    assert run("FSPE+LAS", SUBMIT, SIZE, UNDER).tolist() == [17.0, 16.0, 13.0]


def test_gps_weights():
    """Two jobs of size 2 at t = 0 with weights 3 and 1: A gets 3/4 of the
    server and ends at 8/3, having given B 2/3; B's 4/3 left end at 4."""
    c = run("GPS", [0.0, 0.0], [2.0, 2.0], weight=[3.0, 1.0])
    np.testing.assert_allclose(c, [8 / 3, 4.0], rtol=1e-15)
    assert run("PS", [0.0, 0.0], [2.0, 2.0], weight=[3.0, 1.0]).tolist() == [4.0, 4.0]


def test_psbs_weights_exact_sizes():
    """PSBS, exact sizes 2, 2, weights 3, 1: g_A = 2/3 < g_B = 2, so A runs
    alone to 2 and B to 4 (FSP order on the weighted virtual GPS)."""
    assert run("PSBS", [0.0, 0.0], [2.0, 2.0], weight=[3.0, 1.0]).tolist() == [2.0, 4.0]


def test_psbs_weights_among_late_jobs():
    """PSBS, sizes 2, 2, estimates 0.5, 0.5, weights 3, 1: g_A = 1/6,
    g_B = 1/2, w_v = 4. A ends virtually at t = 4/6 (late; it ran alone, 2/3
    units); w_v = 1, so B ends virtually at 2/3 + 1/3 = 1 (late). A had 1 unit by
    then; GPS 3:1 among the late: A's last unit ends at 1 + 4/3 = 7/3 with B at
    1/3 unit; B's 5/3 left end at 4. FSPE+PS ignores weights: g tie at 0.5, A
    first (arrival order) runs 0-1; both late at 1; PS: A ends at 3, B at 4."""
    c = run("PSBS", [0.0, 0.0], [2.0, 2.0], [0.5, 0.5], [3.0, 1.0])
    np.testing.assert_allclose(c, [7 / 3, 4.0], rtol=1e-15)
    c = run("FSPE+PS", [0.0, 0.0], [2.0, 2.0], [0.5, 0.5], [3.0, 1.0])
    assert c.tolist() == [3.0, 4.0]


def test_simultaneous_arrivals_ps():
    """Three equal jobs at once under PS all end together at 3."""
    assert run("PS", [0.0, 0.0, 0.0], [1.0, 1.0, 1.0]).tolist() == [3.0, 3.0, 3.0]
