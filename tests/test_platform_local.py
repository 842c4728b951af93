"""The sweep platform end to end on local Ray (in-process, the default):
spec -> Ray tasks -> Parquet rows equal to direct engine runs; resume; spec
changes; recorded failures; adaptive replications; the results command."""

import subprocess
import sys
import textwrap

import numpy as np
import polars as pl
import pytest

import schedlab
from schedlab.engines import get_engine
from schedlab.errors import UserError
from schedlab.platform.plan import build_plan
from schedlab.platform.runner import run_sweep
from schedlab.platform.spec import parse_spec
from schedlab.workloads.registry import workload_kind

TIMING = {"sim_seconds"}  # wall-clock columns: the only ones allowed to differ between runs


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    import ray

    ray.init(num_cpus=2, include_dashboard=False)
    yield
    ray.shutdown()


def make_spec(tmp_path, **changes):
    data = {
        "name": "e2e",
        "engine": "queue",
        "seed": 7,
        "policies": ["FIFO", "PS", "PSBS"],
        "workload": {"kind": "synthetic", "njobs": 400, "shape": [0.5, 1.0], "sigma": 1.0},
        "replications": {"n": 3},
        "outputs": {"dir": str(tmp_path / "out"), "per_job": True},
        "tracking": {"enabled": False},
        "execution": {"task_jobs": 2000},
    }
    data.update(changes)
    return parse_spec(data, "e2e.toml")


def sorted_summary(path):
    return schedlab.load(path).collect().sort("config_id", "replication")


def test_rows_equal_direct_simulation(tmp_path):
    spec = make_spec(tmp_path)
    report = run_sweep(spec)
    assert report.rows_written == 2 * 3 * 3 and not report.failures
    rows = sorted_summary(spec.results_dir())
    assert rows.height == 18
    assert rows.select("config_id", "replication").is_duplicated().sum() == 0
    for column in ("config_id", "replication", "policy", "engine", "seed", "shape", "sigma", "njobs", "mst",
                   "slowdown_p99", "makespan"):
        assert column in rows.columns
    jobs = schedlab.load(spec.results_dir(), "jobs").collect()
    assert jobs.height == 18 * 400

    plan = build_plan(spec)
    engine = get_engine("queue")
    for inst in plan.instances(range(3)):
        rng = np.random.default_rng(np.random.SeedSequence(list(inst.seed_words)))
        table = workload_kind("synthetic").build(rng, inst.point.params, None)
        for config in inst.point.configs:
            direct = engine.run(table, config.policy)
            row = rows.filter((pl.col("config_id") == config.config_id) & (pl.col("replication") == inst.replication))
            for metric, value in direct.summary.items():
                if metric not in TIMING:
                    assert row[metric][0] == value, (config.policy, metric)
            mine = jobs.filter((pl.col("config_id") == config.config_id) & (pl.col("replication") == inst.replication))
            mine = mine.sort("job_id")
            assert mine["completion"].to_list() == direct.jobs["completion"].tolist()


def test_resume_skips_rows_on_disk_and_packing_does_not_change_results(tmp_path):
    spec = make_spec(tmp_path)
    first = run_sweep(spec)
    again = run_sweep(spec)
    assert (first.rows_written, again.rows_written, again.rows_skipped) == (18, 0, 18)
    other = make_spec(tmp_path, outputs={"dir": str(tmp_path / "other"), "per_job": True},
                      execution={"task_jobs": 1, "max_in_flight": 1})
    run_sweep(other)
    a, b = sorted_summary(spec.results_dir()), sorted_summary(other.results_dir())
    cols = [c for c in a.columns if c not in TIMING]
    assert a.select(cols).equals(b.select(cols))


def test_changed_spec_needs_fresh(tmp_path):
    run_sweep(make_spec(tmp_path))
    changed = make_spec(tmp_path, seed=8)
    with pytest.raises(UserError, match="different spec"):
        run_sweep(changed)
    report = run_sweep(changed, fresh=True)
    assert report.rows_written == 18
    assert set(sorted_summary(changed.results_dir())["seed"].str.split("/").list.first()) == {"8"}


def test_more_replications_extend_a_sweep(tmp_path):
    """Raising n is a different spec: --fresh is required (results stay consistent)."""
    run_sweep(make_spec(tmp_path))
    with pytest.raises(UserError):
        run_sweep(make_spec(tmp_path, replications={"n": 4}))


def test_a_failing_simulation_is_recorded_and_the_sweep_goes_on(tmp_path):
    spec = make_spec(tmp_path, workload={"kind": "synthetic", "njobs": 200, "shape": [1.0, 0.001]},
                     outputs={"dir": str(tmp_path / "out"), "per_job": False})
    report = run_sweep(spec)
    assert report.rows_written == 9  # the shape=1 point: 3 policies x 3 replications
    assert len(report.failures) == 9 and all("too extreme" in f["error"] for f in report.failures)
    failures = schedlab.load(spec.results_dir(), "failures").collect()
    assert failures.height == 9


def test_adaptive_replications_reach_the_target(tmp_path):
    spec = make_spec(tmp_path, replications={"metric": "mst", "rel_halfwidth": 0.08, "min": 3, "max": 12, "batch": 3},
                     outputs={"dir": str(tmp_path / "out"), "per_job": False},
                     workload={"kind": "synthetic", "njobs": 300, "shape": [1.0, 2.0], "load": 0.7})
    report = run_sweep(spec)
    rows = sorted_summary(spec.results_dir())
    stats = rows.group_by("config_id").agg(
        pl.len().alias("n"), pl.col("mst").mean().alias("mean"), pl.col("mst").std().alias("sd"))
    from scipy import stats as st

    for rec in stats.iter_rows(named=True):
        half = st.t.ppf(0.975, rec["n"] - 1) * rec["sd"] / np.sqrt(rec["n"])
        assert rec["n"] % 3 == 0 and 3 <= rec["n"] <= 12
        assert half <= 0.08 * rec["mean"] or rec["n"] == 12
    # every policy of a workload point has the same replications (common random numbers)
    per_point = rows.group_by("shape", "policy").agg(pl.col("replication").sort().alias("r"))
    for shape in (1.0, 2.0):
        assert per_point.filter(pl.col("shape") == shape)["r"].n_unique() == 1
    assert report.rounds >= 1


def test_results_command(tmp_path):
    spec = make_spec(tmp_path)
    run_sweep(spec)
    out = subprocess.run([sys.executable, "-m", "schedlab.cli", "results", str(spec.results_dir()),
                          "--by", "policy,shape", "--metric", "mst", "--csv"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    table = pl.read_csv(out.stdout.encode())
    assert table.height == 6 and set(table.columns) == {"policy", "shape", "n", "mst_mean", "mst_ci95"}
    rows = sorted_summary(spec.results_dir())
    ps = rows.filter((pl.col("policy") == "PS") & (pl.col("shape") == 0.5))["mst"]
    got = table.filter((pl.col("policy") == "PS") & (pl.col("shape") == 0.5))
    assert got["mst_mean"][0] == pytest.approx(ps.mean(), rel=1e-12)
    bad = subprocess.run([sys.executable, "-m", "schedlab.cli", "results", str(spec.results_dir()), "--by", "nope"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "'nope' is not a column" in bad.stderr
