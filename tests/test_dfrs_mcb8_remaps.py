"""The dfrs engine's ``mcb8_remaps`` option (docs/dfrs.md row 4): MCB8* and
MCB8/per remap at each arrival and completion instant (default) or, as the
authors' simulator does, once at the end of the instant. A hand-worked
case where they differ."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from schedlab.engines import get_engine
from schedlab.errors import UserError


def three_at_once() -> pl.DataFrame:
    """Two nodes; three one-task jobs of memory .5 arrive at t = 0: A (job 0,
    need .2, runtime 2000), B (job 1, need .9, runtime 1000) and C (job 2,
    need .9, runtime 500)."""
    return pl.DataFrame(
        {
            "job_id": [0, 1, 2],
            "submit": [0.0, 0.0, 0.0],
            "runtime": [2000.0, 1000.0, 500.0],
            "procs": [1, 1, 1],
            "cpu_need": [0.2, 0.9, 0.9],
            "memory": [0.5, 0.5, 0.5],
        }
    )


@pytest.mark.parametrize(
    "remaps,end", [("each-event", [2050.0, 1000.0, 550.0]), ("instant-end", [2100.0, 1100.0, 500.0])]
)
def test_mcb8_remaps(remaps, end):
    """MCB8*/OPT=MIN/MINVT=600, schedlab's MCB8 rules. "instant-end": one
    remap of all three; at the best yield (.9) B (CPU list, ties in priority
    order: B before C) opens node 0 and A (memory list) joins it, C takes
    node 1. Node 0 carries 1.1: OPT=MIN gives A and B 1/1.1; C alone ends at
    500; the remap then keeps A and B where they are (virtual time < 600:
    pinned), so B ends at 1100 and A, with 1000 s done, at 2100.

    "each-event": a remap per arrival. A alone goes to node 0; at B's
    arrival A (virtual time 0) is pinned there and B goes to node 1; at C's,
    both are pinned and C joins A on node 0 (1.1 of CPU). C ends at
    500 x 1.1 = 550, B alone at 1000, A (500 done at 550) at 2050."""
    system = {"nodes": 2, "penalty": 100.0, "mcb8_remaps": remaps}
    res = get_engine("dfrs").run(three_at_once(), "MCB8*/OPT=MIN/MINVT=600", None, system)
    assert np.asarray(res.jobs["end"]).tolist() == pytest.approx(end, abs=1e-9)
    assert np.asarray(res.jobs["migrations"]).tolist() == [0, 0, 0]


def test_mcb8_remaps_leaves_greedy_alone():
    """The option concerns MCB8* and MCB8/per only: a Greedy-family policy's schedule is the same."""
    ends = [
        np.asarray(
            get_engine("dfrs")
            .run(three_at_once(), "GreedyPM*/per/OPT=MIN/MINVT=600", {"period": 100.0}, {"nodes": 2, "mcb8_remaps": r})
            .jobs["end"]
        ).tolist()
        for r in ("each-event", "instant-end")
    ]
    assert ends[0] == ends[1]


def test_mcb8_remaps_bad_value_is_one_line():
    with pytest.raises(UserError, match="mcb8_remaps") as err:
        get_engine("dfrs").run(three_at_once(), "MCB8*/OPT=MIN", None, {"nodes": 2, "mcb8_remaps": "never"})
    assert "\n" not in str(err.value)
