"""The production engine agrees with the independent naive reference in
``tests/reference_queue.py`` on every policy in QUEUE_POLICIES.

Agreement means that, for every job, |engine - reference| <= RTOL *
max(|engine|, |reference|). RTOL is deliberately tight. If this test fails,
do not loosen it: shrink the example and work it out by hand.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedlab.policies.queue import QUEUE_POLICIES
from tests.conftest import run
from tests.reference_queue import POLICIES, reference_completions

RTOL = 1e-6

WEIGHTS = [1.0, 0.5, 0.25, 1 / 3, 0.2]


@st.composite
def workloads(draw):
    n = draw(st.integers(1, 20))
    gap = st.one_of(st.just(0.0), st.floats(0.0, 5.0))
    gaps = draw(st.lists(gap, min_size=n, max_size=n))
    submit = np.cumsum(gaps)
    size = np.array(draw(st.lists(st.floats(0.05, 10.0), min_size=n, max_size=n)))
    factor = np.array(draw(st.lists(st.floats(0.1, 10.0), min_size=n, max_size=n)))
    weight = np.array(draw(st.lists(st.sampled_from(WEIGHTS), min_size=n, max_size=n)))
    return submit, size, size * factor, weight


def assert_agree(policy, submit, size, estimate, weight):
    got = np.asarray(run(policy, submit, size, estimate, weight), dtype=float)
    ref = reference_completions(policy, submit, size, estimate, weight)
    scale = np.maximum(np.abs(got), np.abs(ref))
    bad = ~(np.abs(got - ref) <= RTOL * scale)
    assert not bad.any(), (
        f"{policy}: engine {got.tolist()} != reference {ref.tolist()} "
        f"(jobs {np.flatnonzero(bad).tolist()}; submit={submit.tolist()}, "
        f"size={size.tolist()}, estimate={estimate.tolist()}, weight={weight.tolist()})"
    )


def test_reference_covers_every_production_policy():
    assert set(QUEUE_POLICIES) == set(POLICIES)


@pytest.mark.parametrize("policy", sorted(QUEUE_POLICIES))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(w=workloads())
def test_engine_matches_reference(policy, w):
    assert_agree(policy, *w)


# --- spot checks of the reference itself, worked by hand ---------------------

S3 = [0.0, 3.0, 5.0]
Z3 = [10.0, 5.0, 2.0]
UNDER = [1.0, 5.0, 2.0]  # J1 (size 10) estimated at 1
ONES = [1.0, 1.0, 1.0]


def ref(policy, submit, size, estimate=None, weight=None):
    estimate = size if estimate is None else estimate
    weight = [1.0] * len(size) if weight is None else weight
    return reference_completions(policy, submit, size, estimate, weight).tolist()


@pytest.mark.parametrize("policy,expected", [
    # PS: 0-3 J1 alone (7 left); 3-5 halves (6, 4 left); thirds from 5: J3 ends
    # at 11 (J1 4, J2 2 left); halves: J2 ends at 15, J1 at 17.
    ("PS", [17.0, 15.0, 11.0]),
    ("GPS", [17.0, 15.0, 11.0]),
    # LAS: J2 3-5 (att 2), J3 5-7 (ends), J2 7-8 reaches J1's 3; J1, J2 share,
    # J2's last 2 units end at 12, J1 at 17.
    ("LAS", [17.0, 12.0, 7.0]),
    # SRPT: J2 (5 < 7) preempts at 3; J3 (2 < 3) at 5, ends 7; J2 10; J1 17.
    ("SRPT", [17.0, 10.0, 7.0]),
    # FSP: g_1 = 10, g_2 = 8, g_3 = 6 (paper Fig. 2) gives the same order.
    ("FSP", [17.0, 10.0, 7.0]),
    ("PSBS", [17.0, 10.0, 7.0]),
    ("FIFO", [10.0, 15.0, 17.0]),
])
def test_reference_exact_sizes(policy, expected):
    assert ref(policy, S3, Z3) == expected


@pytest.mark.parametrize("policy,expected", [
    # SRPTE: J1 late at 1 and never preempted: ends at 10; J3 (est 2) 10-12;
    # J2 12-17.
    ("SRPTE", [10.0, 17.0, 12.0]),
    # SRPTE+PS: J1 alone to 3 (att 3); J1+J2 3-5 (J1 4, J2 erem 4); J3 (2 < 4)
    # becomes the head: J1+J3 5-9, J3 ends at 9 (J1 att 6, 4 left); J1+J2
    # share 4 and 4: both end at 17.
    ("SRPTE+PS", [17.0, 17.0, 9.0]),
    # SRPTE+LAS: only J1 is ever late, so the same as SRPTE+PS here.
    ("SRPTE+LAS", [17.0, 17.0, 9.0]),
    # FSPE: virtually J1 ends at 1 (late); J2 alone 3-5, then J2/J3 halves: J3
    # virtual end at 9, J2 at 10. Real: J1 alone to 10; J3 (late before J2)
    # 10-12; J2 12-17.
    ("FSPE", [10.0, 17.0, 12.0]),
    # FSPE+PS: J1 alone to 9 (1 left); J1+J3 9-10 (0.5, 1.5 left); thirds from
    # 10: J1 ends at 11.5 (J3 1, J2 4.5 left); halves: J3 13.5, J2 17.
    ("FSPE+PS", [11.5, 17.0, 13.5]),
    # FSPE+LAS: J1 alone to 9 (att 9); J3 (att 0) alone from 9; at 10 J2 late
    # (att 0 < J3's 1): J2 alone 10-11; J2+J3 halves from 11: J3 ends at 13
    # (J2 att 2); J2 alone 13-16 (ends, att 5 < 9); J1 16-17.
    ("FSPE+LAS", [17.0, 16.0, 13.0]),
    # PSBS with equal weights behaves like FSPE+PS.
    ("PSBS", [11.5, 17.0, 13.5]),
])
def test_reference_underestimated_large_job(policy, expected):
    assert ref(policy, S3, Z3, UNDER) == expected


def test_reference_weights():
    # GPS: shares 2/3, 1/3; J1 ends at 1.5 (J2 has 0.5 left), J2 at 2.
    assert ref("GPS", [0.0, 0.0], [1.0, 1.0], weight=[1.0, 0.5]) == [1.5, 2.0]
    # PSBS, exact: virtual GPS ends J1 at 1.5, J2 at 2, so J1 runs 0-1 and J2 1-2.
    assert ref("PSBS", [0.0, 0.0], [1.0, 1.0], weight=[1.0, 0.5]) == [1.0, 2.0]
    # PSBS, J1 (size 5) estimated 1: virtual GPS ends J1 at 1.5 and J2 at 2.
    # Real: J1 alone 0-2 (late from 1.5; 3 left). From 2 both late and share
    # 2/3 : 1/3, so J2 (1 left) ends at 5. J1 then has 1 left and ends at 6.
    assert ref("PSBS", [0.0, 0.0], [5.0, 1.0], [1.0, 1.0], [1.0, 0.5]) == [6.0, 5.0]


def test_reference_las_ties_and_idle_gap():
    # Two simultaneous equal jobs under LAS share: both end at 2. An idle gap
    # follows, then a lone job from 10 to 11.
    assert ref("LAS", [0.0, 0.0, 10.0], [1.0, 1.0, 1.0]) == [2.0, 2.0, 11.0]
    # SRPT tie (remaining 1 vs newcomer 1): the earlier arrival keeps running.
    assert ref("SRPT", [0.0, 1.0], [2.0, 1.0]) == [2.0, 3.0]
    # FSP tie: virtual finishes are equal (both at 3), earlier arrival first.
    assert ref("FSP", [0.0, 1.0], [2.0, 1.0]) == [2.0, 3.0]
