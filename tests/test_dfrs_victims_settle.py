"""The dfrs engine's ``victims_settle`` option (docs/dfrs.md row 8): GreedyP /
GreedyPM's victims settled at each arrival (default) or, as the authors'
simulator does, held until the end of the instant, after that instant's
other arrivals. A hand-worked case where the two differ, and the engine's
one-line error for a bad value."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from schedlab.engines import get_engine
from schedlab.errors import UserError


def two_arrivals() -> pl.DataFrame:
    """Two nodes; every task needs CPU .25 (no CPU contention: every yield 1).
    A (job 0) and B (job 1), memory .5, runtime 1000, at t = 0: A on node 0,
    B on node 1. At t = 100 two jobs arrive in the same second: C (job 2,
    memory .8, runtime 300) and then D (job 3, memory .2, runtime 300)."""
    return pl.DataFrame(
        {
            "job_id": [0, 1, 2, 3],
            "submit": [0.0, 0.0, 100.0, 100.0],
            "runtime": [1000.0, 1000.0, 300.0, 300.0],
            "procs": [1, 1, 1, 1],
            "cpu_need": [0.25, 0.25, 0.25, 0.25],
            "memory": [0.5, 0.5, 0.8, 0.2],
        }
    )


@pytest.mark.parametrize(
    "settle,end,pauses,migrations",
    [
        ("arrival", [1000.0, 1100.0, 400.0, 400.0], [0, 0, 0, 0], [0, 1, 0, 0]),
        ("instant-end", [1000.0, 1400.0, 400.0, 400.0], [0, 1, 0, 0], [0, 0, 0, 0]),
    ],
)
def test_victims_settle(settle, end, pauses, migrations):
    """GreedyPM*/OPT=MIN, put-back victims, penalty 100 s. C fits nowhere
    (.5 free per node); A and B tie in priority, B (the later) is the lowest:
    B is taken off and C goes to node 1; B cannot go back (.2 free there).

    "arrival": B is re-placed by Greedy at once, on node 0 beside A (a
    migration: penalty to 200, 900 s left, ends at 1100); then D finds node 0
    full and goes to node 1 beside C. "instant-end": B is held; D, placed
    next, goes to node 0 (both nodes carry load .25: the lower index), which
    leaves .3 free there and .2 on node 1; at the end of the instant B fits
    nowhere and stays paused. At 400 (C and D done) the '*' pass puts B on the
    emptier node 1 (a resume: penalty to 500, 900 s left): B ends at 1400."""
    system = {"nodes": 2, "penalty": 100.0, "victims": "put-back", "victims_settle": settle}
    res = get_engine("dfrs").run(two_arrivals(), "GreedyPM*/OPT=MIN", None, system)
    got = {k: np.asarray(res.jobs[k]).tolist() for k in ("end", "pauses", "migrations")}
    assert got == {"end": pytest.approx(end, abs=1e-9), "pauses": pauses, "migrations": migrations}


def test_victims_settle_bad_value_is_one_line():
    with pytest.raises(UserError, match="victims_settle") as err:
        get_engine("dfrs").run(two_arrivals(), "GreedyPM*/OPT=MIN", None, {"nodes": 2, "victims_settle": "later"})
    assert "\n" not in str(err.value)
