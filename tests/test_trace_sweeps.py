"""Trace replays as sweeps: a real trace (Facebook FB-2010) sharded by window,
with load scaling and estimate errors, end to end on local Ray."""

from pathlib import Path

import numpy as np
import polars as pl
import pytest

import schedlab
from schedlab.engines import get_engine
from schedlab.errors import UserError
from schedlab.platform.execution.runner import run_sweep
from schedlab.platform.planning.plan import build_plan
from schedlab.platform.planning.validate import parse_spec
from schedlab.workloads import transforms as tf
from schedlab.workloads.traces.registry import read_trace

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
FB2010 = DATA / "swim-facebook" / "FB-2010_samples_24_times_1hr_0.tsv.gz"
HPC2N = DATA / "pwa-swf" / "HPC2N-2002-2.2-cln.swf.gz"
pytestmark = pytest.mark.skipif(not FB2010.exists(), reason="shared/data traces not present")
SIX_HOURS = 6 * 3600.0


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SCHEDLAB_CACHE_DIR", str(tmp_path / "cache"))


def fb_spec(tmp_path, **workload):
    return parse_spec(
        {
            "name": "fb",
            "engine": "queue",
            "seed": 4,
            "policies": ["SRPT", "PS", "PSBS"],
            "workload": {
                "kind": "trace",
                "reader": "swim",
                "path": str(FB2010),
                "load": 0.9,
                "window_length": SIX_HOURS,
                "window": "all",
                "sigma": [0.0, 1.0],
                **workload,
            },
            "replications": {"n": 1},
            "outputs": {"dir": str(tmp_path / "out")},
            "tracking": {"enabled": False},
        },
        "fb.toml",
    )


def test_windows_expand_into_points_with_their_identity(tmp_path):
    plan = build_plan(fb_spec(tmp_path))
    assert sorted({p.params["window"] for p in plan.points}) == [0, 1, 2, 3]
    assert len(plan.configs) == 4 * 2 * 3
    assert {"window", "window_length", "sigma", "load", "reader", "path"} <= set(plan.param_columns)


def test_trace_spec_errors_name_the_field(tmp_path):
    with pytest.raises(UserError, match=r"fb.toml: workload.reader: unknown trace reader 'nope'"):
        fb_spec(tmp_path, reader="nope")
    with pytest.raises(UserError, match=r"fb.toml: workload.sigma: must be a number >= 0"):
        fb_spec(tmp_path, sigma=-1.0)
    with pytest.raises(UserError, match=r"fb.toml: workload.path: no such file or folder: .*missing.tsv"):
        fb_spec(tmp_path, path=str(tmp_path / "missing.tsv"))
    with pytest.raises(UserError, match=r"fb.toml: workload.window"):
        fb_spec(tmp_path, window=-2)


def test_fb_replay_sweep_matches_direct_replay(tmp_path):
    import ray

    ray.init(address="local", num_cpus=2, include_dashboard=False)
    try:
        spec = fb_spec(tmp_path)
        report = run_sweep(spec)
    finally:
        ray.shutdown()
    assert report.rows_written == 24 and not report.failures
    rows = schedlab.load(spec.results_dir()).collect()
    assert sorted(rows["window"].unique().to_list()) == [0.0, 1.0, 2.0, 3.0]

    # one row recomputed by hand: window 2, sigma 0 (exact sizes), PSBS == FSP semantics
    trace = read_trace("swim", str(FB2010)).jobs
    jobs = tf.scale_load(tf.window(trace, SIX_HOURS, 2), 0.9)
    jobs = tf.add_estimates(jobs, np.random.default_rng(0), 0.0).with_columns(pl.lit(1.0).alias("weight"))
    direct = get_engine("queue").run(jobs, "PSBS")
    row = rows.filter((pl.col("window") == 2) & (pl.col("sigma") == 0.0) & (pl.col("policy") == "PSBS"))
    assert row["n_jobs"][0] == jobs.height
    assert row["mst"][0] == direct.summary["mst"]
    # the load really is 0.9 in every window, and SRPT is best on each
    for w in range(4):
        part = rows.filter((pl.col("window") == w) & (pl.col("sigma") == 0.0))
        mst = dict(zip(part["policy"].to_list(), part["mst"].to_list()))
        assert mst["SRPT"] <= mst["PSBS"] <= mst["PS"] * (1 + 1e-9)


@pytest.mark.skipif(not HPC2N.exists(), reason="HPC2N trace not present")
def test_hpc2n_weekly_windows(tmp_path):
    """HPC2N's 1264.4-day submit span in 604,800 s weeks: 181 windows (the
    DFRS paper speaks of 182 week-long traces; it does not say how it cut)."""
    spec = parse_spec(
        {
            "name": "hpc2n",
            "engine": "queue",
            "policies": ["FIFO"],
            "workload": {
                "kind": "trace",
                "reader": "swf",
                "path": str(HPC2N),
                "window_length": 604800.0,
                "window": "all",
                "load": 0.9,
            },
            "tracking": {"enabled": False},
            "outputs": {"dir": str(tmp_path / "h")},
        },
        "hpc2n.toml",
    )
    plan = build_plan(spec)
    assert len(plan.points) == 181
