"""Every algorithm the DFRS paper names (INRIA RR-7659, the long version) is in the engine's
registry: Table 2's rows (its two batch rows are the batch engine's), and the whole family of
§5.1 -- Table 1's 14 combinations x OPT (MIN / AVG; /stretch-per: MAX / AVG), the last 11 also
with MINVT / MINFT = 300 / 600: 3 x 2 + 11 x 2 x 5 = 116 algorithms."""

from __future__ import annotations

import pytest

from schedlab.engines import get_engine
from schedlab.engines.dfrs.policies import DFRS_POLICIES

#: Table 2 of RR-7659, row by row, as printed ("Greedy */OPT = MIN" ...).
TABLE2 = [
    "FCFS",
    "EASY",
    "Greedy */OPT = MIN",
    "GreedyP */OPT = MIN",
    "GreedyPM */OPT = MIN",
    "Greedy/per/OPT = MIN",
    "GreedyP/per/OPT = MIN",
    "GreedyPM/per/OPT = MIN",
    "Greedy */per/OPT = MIN",
    "GreedyP */per/OPT = MIN",
    "GreedyPM */per/OPT = MIN",
    "GreedyP/per/OPT = MIN/MINVT =600",
    "GreedyPM/per/OPT = MIN/MINVT =600",
    "GreedyP */per/OPT = MIN/MINVT =600",
    "GreedyPM */per/OPT = MIN/MINVT =600",
    "MCB8 */OPT = MIN/MINVT =600",
    "MCB8/per/OPT = MIN/MINVT =600",
    "MCB8 */per/OPT = MIN/MINVT =600",
    "/per/OPT = MIN/MINVT =600",
    "/stretch-per/OPT = MAX/MINVT =600",
]
#: Table 1 of RR-7659: the 14 combinations (the last 11 use MCB8 or MCB8-stretch).
TABLE1 = [
    "Greedy*",
    "GreedyP*",
    "GreedyPM*",
    "Greedy/per",
    "GreedyP/per",
    "GreedyPM/per",
    "Greedy*/per",
    "GreedyP*/per",
    "GreedyPM*/per",
    "MCB8*",
    "MCB8/per",
    "MCB8*/per",
    "/per",
    "/stretch-per",
]


def registry_name(printed: str) -> str:
    return printed.replace(" ", "")


def test_table2_has_20_rows_and_18_dfrs_algorithms():
    assert len(TABLE2) == 20 and len(TABLE2) - 2 == 18  # "18 of our proposed algorithms"


@pytest.mark.parametrize("row", TABLE2)
def test_every_table2_row_resolves(row):
    name = registry_name(row)
    if name in ("FCFS", "EASY"):
        assert get_engine("batch").policy(name) is not None
        return
    cls = get_engine("dfrs").policy(name)
    assert cls is DFRS_POLICIES[name] and cls.name == name


def test_the_paper_s_116_algorithms_exist_and_behave_as_named():
    names = []
    for i, combo in enumerate(TABLE1):
        opts = ("MAX", "AVG") if combo == "/stretch-per" else ("MIN", "AVG")
        limits = [""] + ([f"/{k}={b}" for k in ("MINVT", "MINFT") for b in (300, 600)] if i >= 3 else [])
        names += [f"{combo}/OPT={o}{lim}" for o in opts for lim in limits]
    assert len(names) == len(set(names)) == 3 * 2 + 11 * 2 * 5 == 116
    missing = [n for n in names if n not in DFRS_POLICIES]
    assert not missing
    for n in names:
        pol = DFRS_POLICIES[n]()
        assert type(pol).name == n
        assert (getattr(pol, "period", None) is not None) == ("per" in n)  # /per and /stretch-per: periodic
        b = n.rsplit("=", 1)[1] if "/MIN" in n.split("/OPT=")[1] else None
        assert (getattr(pol, "minvt", None), getattr(pol, "minft", None)) == (
            (float(b), None) if "/MINVT=" in n else (None, float(b)) if b else (None, None)
        )
    # the bare /stretch-per (Table 1's 14th row): nothing on submission, nothing on completion,
    # MCB8-stretch periodically, OPT=MAX on the expected stretch
    from schedlab.engines.dfrs.policies.stretch import StretchPer

    bare = DFRS_POLICIES["/stretch-per/OPT=MAX/MINVT=600"]()
    assert isinstance(bare, StretchPer) and bare.opt == "MAX" and bare.period == 600.0
    assert bare.on_arrival(None, 0) is None and bare.on_completion(None) is None  # touch no state


def test_bare_stretch_per_runs_and_schedules_only_periodically():
    """/stretch-per/OPT=MAX/MINVT=600 on a small Lublin trace: every job ends, and every job
    starts at a multiple of the period (nothing happens on a submission or completion)."""
    import numpy as np

    from schedlab.engines.dfrs.sim import run_table
    from schedlab.workloads.lublin import lublin_workload

    jobs = lublin_workload(np.random.default_rng(3), njobs=25, nodes=8)
    per_job, summary = run_table(jobs, DFRS_POLICIES["/stretch-per/OPT=MAX/MINVT=600"], nodes=8, memory=0.3, check=True)
    assert summary["n_jobs"] == 25 and np.all(np.isfinite(per_job["end"]))
    # periodic instants: the first submission + k x 600 s (the engine's period clock)
    phase = np.mod(per_job["start"] - per_job["submit"].min(), 600.0)
    assert np.all(np.minimum(phase, 600.0 - phase) < 1e-6)
    assert np.any(per_job["start"] > per_job["submit"] + 1.0)  # jobs wait for the next period
