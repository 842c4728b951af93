"""rlsched-tables: the published values it compares with, the trace-sequence
workload it runs on (N consecutive jobs from a start drawn per replication,
the log's own times), and a smoke run (``-m full``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from schedlab.errors import UserError
from schedlab.pipelines import rlsched_tables as rt
from schedlab.workloads import trace_kind

LUBLIN = Path(__file__).resolve().parents[2] / "shared" / "data" / "lublin" / "lublin_256.swf.gz"


def test_published_values_are_read_by_policy():
    assert rt.published("Lublin-1", "FCFS") == 7273.77
    assert rt.published("Lublin-1", "EASY") == 235.82  # FCFS with backfilling
    assert rt.published("HPC2N", "F1+EASY") == 71.95
    assert rt.published("Lublin-2", "SJF (commit)") == 787.89
    assert rt.published("Lublin-1", "F2") is None


@pytest.mark.skipif(not LUBLIN.exists(), reason="Lublin log not present")
def test_sequences_are_consecutive_jobs_with_the_logs_times():
    params = {**trace_kind.DEFAULTS, "reader": "swf", "path": str(LUBLIN), "sequence": 100, "sequence_within": 500}
    trace_kind.check(params)
    shared = trace_kind.load_shared(params)
    a = trace_kind.build(np.random.default_rng(3), params, shared)
    b = trace_kind.build(np.random.default_rng(3), params, shared)
    assert a.equals(b) and a.height == 100
    ids = shared["job_id"].to_list()
    k = ids.index(a["job_id"][0])
    assert a["job_id"].to_list() == ids[k : k + 100] and k + 100 <= 500
    assert a["submit"].to_list() == shared["submit"].to_list()[k : k + 100]  # not shifted to 0
    with pytest.raises(UserError, match="sequence: 20000 jobs asked but the trace has 10000"):
        trace_kind.build(np.random.default_rng(0), {**params, "sequence": 20000, "sequence_within": 0}, shared)
    with pytest.raises(UserError, match="set window_length = 0"):
        trace_kind.check({**params, "window_length": 100.0})


@pytest.mark.full
def test_smoke_run(tmp_path):
    from tests.pipeline_outputs import run_smoke

    run_smoke({"rlsched-tables": rt.POLICIES}, tmp_path)
