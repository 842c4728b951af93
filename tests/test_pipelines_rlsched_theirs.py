"""rlsched-tables in RLScheduler's setting: the sequences its Table V used
(workloads/rlscheduler_starts.py) as the pipeline states them, and the trace
workload's ``sequence_start`` that runs them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from schedlab.errors import UserError
from schedlab.pipelines import rlsched_tables as rt
from schedlab.workloads import trace_kind
from schedlab.workloads.rlscheduler_starts import sequence_starts

LUBLIN = Path(__file__).resolve().parents[2] / "shared" / "data" / "lublin" / "lublin_256.swf.gz"
#: make_table_script.py: every trace's sequences drawn among 10,000 jobs (the Lublin logs' size,
#: HPC2N's batch_job_slice)
TABLE_V_JOBS = 10_000


def test_the_pipeline_runs_rlschedulers_table_v_sequences():
    starts = sequence_starts(TABLE_V_JOBS)
    assert rt.DOC["scales"]["paper"]["rlscheduler_starts"] == starts
    assert rt.DOC["scales"]["quick"]["rlscheduler_starts"] == starts
    assert rt.DOC["scales"]["smoke"]["rlscheduler_starts"] == starts[:2]
    (sweep,) = [s for s in rt.DOC["sweeps"] if s["name"].startswith(rt.THEIRS_SWEEP)]
    assert sweep["workload"]["sequence_start"] == "$rlscheduler_starts"
    assert [Path(p).name for p in sweep["workload"]["path"]] == list(rt.THEIRS_TRACES)
    named = [p if isinstance(p, str) else p["name"] for p in sweep["policies"]]
    assert sorted(named) == sorted(rt.THEIRS_POLICIES)


@pytest.mark.skipif(not LUBLIN.exists(), reason="Lublin log not present")
def test_sequence_start_is_the_first_job_not_a_draw():
    params = {**trace_kind.DEFAULTS, "reader": "swf", "path": str(LUBLIN), "sequence": 100, "sequence_start": 1981}
    trace_kind.check(params)
    shared = trace_kind.load_shared(params)
    a = trace_kind.build(np.random.default_rng(3), params, shared)
    b = trace_kind.build(np.random.default_rng(4), params, shared)
    assert a.equals(b)  # not drawn: every replication's seed gives the same jobs
    assert a["job_id"].to_list() == shared.sort("submit", maintain_order=True)["job_id"].to_list()[1981:2081]
    with pytest.raises(UserError, match="sequence_start: 9950 \\+ 100 jobs is past the trace's 10000"):
        trace_kind.build(np.random.default_rng(0), {**params, "sequence_start": 9950}, shared)
    with pytest.raises(UserError, match="sequence_start: needs sequence > 0"):
        trace_kind.check({**params, "sequence": 0})
    with pytest.raises(UserError, match="sequence_start: must be an integer >= 0"):
        trace_kind.check({**params, "sequence_start": -2})


def test_a_sequence_start_left_at_its_default_keeps_configuration_ids():
    assert "sequence_start" in trace_kind.LATE and trace_kind.DEFAULTS["sequence_start"] == -1
