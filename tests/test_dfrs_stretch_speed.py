"""/stretch-per's speed-ups give the frozen reference's results bit for bit
(``tests.dfrs_reference.stretch``, never edited).

* MCB8-stretch's memory shortcut (``stretch._memory_overflow``: prefixes of
  the priority table whose memory cannot fit are dropped without a packing)
  on instances built to drop jobs: many memory-heavy tasks, pinned jobs
  (MINVT / MINFT), pinned nodes filled past capacity, ties in priority;
* the shortcut's boundary: a table whose memory is exactly the capacity is
  packed, not dropped.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedlab.engines.dfrs.policies import stretch as fast
from schedlab.engines.dfrs.policies.mcb8 import FIT_TOL
from tests.dfrs_reference import stretch as ref

_row = st.tuples(
    st.integers(1, 3),  # tasks
    st.sampled_from([0.25, 0.5, 1.0]),  # CPU need
    st.sampled_from([0.05, 0.1, 0.3, 0.34, 0.5, 0.6, 1.0]),  # memory per task
    st.sampled_from([0.0, 1.0, 2.5]),  # priority (ties)
    st.floats(600.0, 5000.0),  # F
    st.sampled_from([0.0, 5.0, 100.0, 900.0]),  # v
)


def _same(a, b) -> bool:
    return np.float64(a).tobytes() == np.float64(b).tobytes()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(_row, min_size=1, max_size=12), nodes=st.integers(1, 4), data=st.data())
def test_mcb8_stretch_identical_to_reference(rows, nodes, data):
    jobs = [((5 * i) % 13, t, c, m, p, F, v) for i, (t, c, m, p, F, v) in enumerate(rows)]
    pinned: dict = {}
    for jid, t, *_ in jobs:  # pinned anywhere, memory not checked: overfilled pinned nodes included
        if data.draw(st.booleans()):
            pinned[jid] = data.draw(st.lists(st.integers(0, nodes - 1), min_size=t, max_size=t))
    try:
        want = ref.mcb8_stretch(jobs, nodes, 600.0, pinned=pinned)
    except ValueError as e:  # pack rejects no input here; any error must be the same one
        with np.testing.assert_raises(type(e)):
            fast.mcb8_stretch(jobs, nodes, 600.0, pinned=pinned)
        return
    got = fast.mcb8_stretch(jobs, nodes, 600.0, pinned=pinned)
    assert got[0] == want[0] and list(got[0]) == list(want[0])
    assert got[1] == want[1]
    assert _same(got[2], want[2])


def test_memory_shortcut_boundary():
    """Four tasks of memory 0.5 on two nodes fill them exactly: packed (nothing dropped);
    a fifth job of 0.5 is over the capacity by 0.5: the shortcut drops it, as the packing would."""
    rows = [(j, 1, 0.5, 0.5, 1.0, 1000.0, 0.0) for j in range(4)]
    assert not fast._memory_overflow(rows, {}, 2).any()
    mapping, dropped, S = fast.mcb8_stretch(rows, 2, 600.0)
    assert dropped == [] and sorted(mapping) == [0, 1, 2, 3] and math.isfinite(S)
    rows5 = [*rows, (4, 1, 0.5, 0.5, 0.0, 1000.0, 0.0)]
    assert fast._memory_overflow(rows5, {}, 2).tolist() == [False] * 5 + [True]
    assert fast.mcb8_stretch(rows5, 2, 600.0) == ref.mcb8_stretch(rows5, 2, 600.0)
    # capacity plus a rounding-sized excess (below the shortcut's margin): left to the packing
    tiny = [(0, 1, 0.5, 1.0 + FIT_TOL, 1.0, 1000.0, 0.0), (1, 1, 0.5, 1e-12, 0.0, 1000.0, 0.0)]
    assert not fast._memory_overflow(tiny, {}, 1).any()
    assert fast.mcb8_stretch(tiny, 1, 600.0) == ref.mcb8_stretch(tiny, 1, 600.0)
