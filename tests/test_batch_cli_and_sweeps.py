"""The batch engine from the command line (SWF replay, per-job output) and in
sweeps (Lublin model and SWF traces, machine size from the spec or the trace)."""

import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from schedlab.engines import get_engine
from schedlab.errors import UserError
from schedlab.platform.planning.plan import build_plan
from schedlab.platform.planning.validate import parse_spec
from schedlab.workloads.registry import workload_kind

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
LUBLIN = DATA / "lublin" / "lublin_256.swf.gz"


def cli(*args):
    return subprocess.run([sys.executable, "-m", "schedlab.cli", *args], capture_output=True, text=True)


@pytest.mark.skipif(not LUBLIN.exists(), reason="shared/data absent")
def test_simulate_replays_an_swf_log(tmp_path):
    out = tmp_path / "easy.parquet"
    res = cli(
        "simulate",
        "--engine",
        "batch",
        "--policy",
        "EASY",
        "--workload-file",
        str(LUBLIN),
        "--jobs-out",
        str(out),
        "--json",
    )
    assert res.returncode == 0, res.stderr
    summary = json.loads(res.stdout)
    jobs = pl.read_parquet(out)
    assert jobs.columns == ["job_id", "submit", "start", "end", "procs", "wait", "stretch"]
    assert jobs.height == summary["n_jobs"] == 10000
    assert (jobs["start"] >= jobs["submit"]).all() and (jobs["end"] >= jobs["start"]).all()
    fcfs = json.loads(
        cli("simulate", "--engine", "batch", "--policy", "FCFS", "--workload-file", str(LUBLIN), "--json").stdout
    )
    assert summary["wait_mean"] <= fcfs["wait_mean"]


def test_simulate_batch_errors(tmp_path):
    res = cli("simulate", "--engine", "batch", "--policy", "EASY")
    assert res.returncode == 2 and "needs --workload-file" in res.stderr
    res = cli("simulate", "--policy", "PS", "--procs", "8")
    assert res.returncode == 2 and "--procs is only for --engine batch" in res.stderr


def test_lublin_sweep_point_runs_on_the_batch_engine(engine_path):
    spec = parse_spec(
        {
            "name": "b",
            "engine": "batch",
            "policies": ["FCFS", "EASY"],
            "system": {"model": "procs", "procs": 256},
            "workload": {"kind": "lublin", "njobs": 300, "nodes": 256},
            "tracking": {"enabled": False},
        },
        "b.toml",
    )
    plan = build_plan(spec)
    assert {"system_procs", "system_model", "nodes", "njobs"} <= set(plan.param_columns)
    import numpy as np

    inst = plan.instances([0])[0]
    jobs = workload_kind("lublin").instance(
        np.random.default_rng(np.random.SeedSequence(list(inst.seed_words))), inst.point.params, None
    )
    results = {
        c.policy: get_engine("batch").run(jobs, c.policy, c.policy_params, c.system, path=engine_path)
        for c in inst.point.configs
    }
    assert results["EASY"].summary["wait_mean"] <= results["FCFS"].summary["wait_mean"]
    with pytest.raises(UserError, match="system.cores"):
        parse_spec(
            {
                "name": "b",
                "engine": "batch",
                "policies": ["FCFS"],
                "system": {"cores": 2},
                "workload": {"kind": "lublin"},
            },
            "b.toml",
        )


def test_dfrs_engine_in_a_spec():
    """DFRS policies are named as the paper writes them; /per takes a period (and the MINVT / MINFT bounds)."""
    spec = parse_spec(
        {
            "name": "d",
            "engine": "dfrs",
            "policies": ["GreedyPM*/OPT=MIN", {"name": "GreedyPM*/per/OPT=MIN", "params": {"period": [600.0, 1200.0]}}],
            "system": {"nodes": 32, "memory": 0.25},
            "workload": {"kind": "lublin", "njobs": 60, "nodes": 32},
            "tracking": {"enabled": False},
        },
        "d.toml",
    )
    plan = build_plan(spec)
    assert len(plan.configs) == 3
    import numpy as np

    inst = plan.instances([0])[0]
    jobs = workload_kind("lublin").instance(
        np.random.default_rng(np.random.SeedSequence(list(inst.seed_words))), inst.point.params, None
    )
    for c in inst.point.configs:
        s = get_engine("dfrs").run(jobs, c.policy, c.policy_params, c.system).summary
        assert s["n_jobs"] == 60 and s["stretch_max"] >= 1.0
    with pytest.raises(UserError, match="takes: minft, minvt, period"):
        parse_spec(
            {
                "name": "d",
                "engine": "dfrs",
                "policies": [{"name": "GreedyPM*/per/OPT=MIN", "params": {"J": 1}}],
                "workload": {"kind": "lublin"},
            },
            "d.toml",
        )
