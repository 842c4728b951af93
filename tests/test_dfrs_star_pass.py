"""The dfrs engine's ``star_pass`` option (docs/dfrs.md): the Greedy '*' pass
right after the completions (default) or, as the authors' simulator runs it,
at the end of every instant -- after the arrivals and the periodic remap."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from schedlab.engines import get_engine
from schedlab.errors import UserError

SYSTEM = {"nodes": 1, "penalty": 0.0}


def contended() -> pl.DataFrame:
    """One node, three one-task jobs of memory 0.6 (two never fit together):
    A runs 0..10, B waits from t = 1, C arrives at t = 10 when A completes."""
    return pl.DataFrame(
        {
            "job_id": [0, 1, 2],
            "submit": [0.0, 1.0, 10.0],
            "runtime": [10.0, 5.0, 5.0],
            "procs": [1, 1, 1],
            "cpu_need": [1.0, 1.0, 1.0],
            "memory": [0.6, 0.6, 0.6],
        }
    )


def starts(system: dict, policy: str = "Greedy*/OPT=MIN", jobs=None) -> list[float]:
    res = get_engine("dfrs").run(contended() if jobs is None else jobs, policy, None, system)
    return [float(x) for x in res.jobs["start"]]


def test_completion_pass_runs_before_the_arrivals_by_default():
    # A completes at 10: the '*' pass places the waiting B first, the arriving C then waits for B
    assert starts(SYSTEM) == starts({**SYSTEM, "star_pass": "completion"}) == [0.0, 10.0, 15.0]


def test_instant_end_pass_runs_after_the_arrivals():
    # vcsim's order: C's arrival takes the freed node, the end-of-instant pass finds no room for B
    assert starts({**SYSTEM, "star_pass": "instant-end"}) == [0.0, 15.0, 10.0]


@pytest.mark.parametrize(
    "policy", ["MCB8*/OPT=MIN/MINVT=600", "/stretch-per/OPT=MAX/MINVT=600", "/per/OPT=MIN/MINVT=600"]
)
def test_other_policies_are_unaffected(policy):
    from schedlab.workloads.lublin import lublin_workload

    jobs = lublin_workload(np.random.default_rng(3), njobs=40, nodes=16).with_columns(
        pl.lit(1.0).alias("cpu_need"), pl.lit(0.3).alias("memory")
    )
    eng = get_engine("dfrs")
    a = eng.run(jobs, policy, None, {"nodes": 16}).jobs
    b = eng.run(jobs, policy, None, {"nodes": 16, "star_pass": "instant-end"}).jobs
    assert np.array_equal(a["end"], b["end"]) and np.array_equal(a["migrations"], b["migrations"])


def test_bad_value_is_one_line():
    with pytest.raises(UserError, match="star_pass"):
        starts({**SYSTEM, "star_pass": "sometimes"})
