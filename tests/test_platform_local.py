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
from schedlab.platform.execution.runner import run_sweep
from schedlab.platform.planning.plan import build_plan
from schedlab.platform.planning.validate import parse_spec
from schedlab.workloads.registry import workload_kind

TIMING = {"sim_seconds"}  # wall-clock columns: the only ones allowed to differ between runs


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    import ray

    ray.init(address="local", num_cpus=2, include_dashboard=False)
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
    for column in (
        "config_id",
        "replication",
        "policy",
        "engine",
        "seed",
        "shape",
        "sigma",
        "njobs",
        "mst",
        "slowdown_p99",
        "makespan",
    ):
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
    other = make_spec(
        tmp_path,
        outputs={"dir": str(tmp_path / "other"), "per_job": True},
        execution={"task_jobs": 1, "max_in_flight": 1},
    )
    run_sweep(other)
    a, b = sorted_summary(spec.results_dir()), sorted_summary(other.results_dir())
    cols = [c for c in a.columns if c not in TIMING]
    assert a.select(cols).equals(b.select(cols))


def test_changed_spec_needs_fresh(tmp_path):
    """A change that alters what every row means (here the seed, which draws
    every instance) is refused naming the field and both values."""
    run_sweep(make_spec(tmp_path))
    changed = make_spec(tmp_path, seed=8)
    with pytest.raises(UserError, match=r"different spec: seed: 7 -> 8 -- this changes what every row"):
        run_sweep(changed)
    report = run_sweep(changed, fresh=True)
    assert report.rows_written == 18
    assert set(sorted_summary(changed.results_dir())["seed"].str.split("/").list.first()) == {"8"}


def test_refusals_name_every_changed_field(tmp_path):
    run_sweep(make_spec(tmp_path))
    changed = make_spec(
        tmp_path, seed=9, outputs={"dir": str(tmp_path / "out"), "per_job": False}, policies=["FIFO", "PS"]
    )
    with pytest.raises(UserError) as err:
        run_sweep(changed)
    text = str(err.value)
    assert "per_job: true -> false" in text and "seed: 7 -> 9" in text
    assert "policies" not in text  # a growable field is not a reason to refuse


def nonclock(frame):
    return frame.select([c for c in frame.columns if c not in TIMING]).sort("config_id", "replication")


def test_a_sweep_grows_by_replications_policies_and_grid_values(tmp_path):
    """More replications, another policy and another grid value only add
    rows: the rows on disk are kept (not recomputed), and the result equals a
    from-scratch run of the grown spec."""
    run_sweep(make_spec(tmp_path))
    report = run_sweep(make_spec(tmp_path, replications={"n": 4}))
    assert (report.rows_written, report.rows_skipped) == (6, 18)
    assert report.grew and "replications" in report.grew

    grown = make_spec(
        tmp_path,
        replications={"n": 4},
        policies=["FIFO", "PS", "PSBS", "LAS"],
        workload={"kind": "synthetic", "njobs": 400, "shape": [0.5, 1.0, 2.0], "sigma": 1.0},
    )
    report = run_sweep(grown)
    assert (report.rows_written, report.rows_skipped) == (3 * 4 * 4 - 24, 24)
    assert "policies" in report.grew and "workload" in report.grew
    again = run_sweep(grown)  # the grown spec is now the dir's own: a plain resume
    assert (again.rows_written, again.rows_skipped, again.grew) == (0, 48, None)

    scratch = make_spec(
        tmp_path,
        replications={"n": 4},
        policies=["FIFO", "PS", "PSBS", "LAS"],
        workload={"kind": "synthetic", "njobs": 400, "shape": [0.5, 1.0, 2.0], "sigma": 1.0},
        outputs={"dir": str(tmp_path / "scratch"), "per_job": True},
    )
    run_sweep(scratch)
    assert nonclock(sorted_summary(grown.results_dir())).equals(nonclock(sorted_summary(scratch.results_dir())))
    jobs = schedlab.load(grown.results_dir(), "jobs").select("config_id", "replication", "job_id").collect()
    assert jobs.height == 48 * 400 and jobs.is_duplicated().sum() == 0

    import json

    manifest = json.loads((grown.results_dir() / "manifest.json").read_text())
    assert len(manifest["configs"]) == 12 and len(manifest["history"]) == 2


def test_rows_of_dropped_configurations_stay(tmp_path):
    run_sweep(make_spec(tmp_path))
    report = run_sweep(make_spec(tmp_path, policies=["FIFO", "PS"]))
    assert (report.rows_written, report.rows_skipped) == (0, 12)
    assert sorted_summary(make_spec(tmp_path).results_dir()).height == 18


def test_a_spec_that_wrote_no_row_gives_way_to_the_corrected_one(tmp_path):
    """Every simulation of the first spec failed (no summary row): the
    corrected spec runs without --fresh, whatever it changed."""
    bad = make_spec(tmp_path, workload={"kind": "synthetic", "njobs": 200, "shape": 0.001})
    first = run_sweep(bad)
    assert first.rows_written == 0 and first.failures
    fixed = make_spec(tmp_path, seed=3, workload={"kind": "synthetic", "njobs": 200, "shape": 1.0})
    report = run_sweep(fixed)
    assert report.rows_written == 9 and not report.failures and report.grew is None


def test_a_grown_sweep_is_tracked_whole(tmp_path):
    """MLflow after growth: one parent, one child per configuration with
    rows (including a policy the grown spec dropped), matching Parquet."""
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    tracking = {"enabled": True, "uri": uri}
    first = run_sweep(make_spec(tmp_path, tracking=tracking))
    assert not first.tracking.failed and first.tracking.logged == 6
    grown = run_sweep(make_spec(tmp_path, tracking=tracking, policies=["FIFO", "PS", "LAS"], replications={"n": 4}))
    assert not grown.tracking.failed and grown.tracking.logged == 8
    assert grown.rows_written == 3 * 4 * 2 - 2 * 3 * 2
    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name("e2e")
    runs = client.search_runs([exp.experiment_id], max_results=1000)
    parents = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    children = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
    assert len(parents) == 1
    assert sorted({r.data.tags["schedlab.policy"] for r in children}) == ["FIFO", "LAS", "PS", "PSBS"]
    assert len(children) == 8
    by_policy = {r.data.tags["schedlab.policy"]: int(r.data.tags["schedlab.rows"]) for r in children}
    assert by_policy == {"FIFO": 4, "PS": 4, "LAS": 4, "PSBS": 3}


def test_a_failing_simulation_is_recorded_and_the_sweep_goes_on(tmp_path):
    spec = make_spec(
        tmp_path,
        workload={"kind": "synthetic", "njobs": 200, "shape": [1.0, 0.001]},
        outputs={"dir": str(tmp_path / "out"), "per_job": False},
    )
    report = run_sweep(spec)
    assert report.rows_written == 9  # the shape=1 point: 3 policies x 3 replications
    assert len(report.failures) == 9 and all("too extreme" in f["error"] for f in report.failures)
    failures = schedlab.load(spec.results_dir(), "failures").collect()
    assert failures.height == 9


def test_adaptive_replications_reach_the_target(tmp_path):
    spec = make_spec(
        tmp_path,
        replications={"metric": "mst", "rel_halfwidth": 0.08, "min": 3, "max": 12, "batch": 3},
        outputs={"dir": str(tmp_path / "out"), "per_job": False},
        workload={"kind": "synthetic", "njobs": 300, "shape": [1.0, 2.0], "load": 0.7},
    )
    report = run_sweep(spec)
    rows = sorted_summary(spec.results_dir())
    stats = rows.group_by("config_id").agg(
        pl.len().alias("n"), pl.col("mst").mean().alias("mean"), pl.col("mst").std().alias("sd")
    )
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
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "schedlab.cli",
            "results",
            str(spec.results_dir()),
            "--by",
            "policy,shape",
            "--metric",
            "mst",
            "--csv",
        ],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    table = pl.read_csv(out.stdout.encode())
    assert table.height == 6 and set(table.columns) == {
        "policy",
        "shape",
        "n",
        "mst_mean",
        "mst_ci95",
        "mst_identical",
        "mst_dominated",
    }
    assert not table["mst_identical"].any() and not table["mst_dominated"].any()
    rows = sorted_summary(spec.results_dir())
    ps = rows.filter((pl.col("policy") == "PS") & (pl.col("shape") == 0.5))["mst"]
    got = table.filter((pl.col("policy") == "PS") & (pl.col("shape") == 0.5))
    assert got["mst_mean"][0] == pytest.approx(ps.mean(), rel=1e-12)
    bad = subprocess.run(
        [sys.executable, "-m", "schedlab.cli", "results", str(spec.results_dir()), "--by", "nope"],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and "'nope' is not a column" in bad.stderr


def test_progress_counts_simulations_failures_and_rounds(tmp_path):
    """The progress records count simulations (configuration x replication),
    not Ray tasks; failures are counted; each adaptive round says its number
    and the total grows by the round's simulations."""
    seen = []
    spec = make_spec(
        tmp_path,
        workload={"kind": "synthetic", "njobs": 200, "shape": [1.0, 0.001]},
        outputs={"dir": str(tmp_path / "out"), "per_job": False},
    )
    run_sweep(spec, progress=seen.append)
    assert seen[0].done == 0 and seen[0].total == 18 and seen[0].round == 1 and seen[0].eta is None
    last = seen[-1]
    assert (last.done, last.total, last.failed, last.sweep) == (18, 18, 9, "e2e")
    assert [p.done for p in seen] == sorted(p.done for p in seen) and last.eta == 0.0

    seen.clear()
    adaptive = make_spec(
        tmp_path,
        replications={"metric": "mst", "rel_halfwidth": 0.001, "min": 2, "max": 4, "batch": 1},
        outputs={"dir": str(tmp_path / "adaptive"), "per_job": False},
        workload={"kind": "synthetic", "njobs": 200, "shape": [1.0, 2.0], "load": 0.7},
    )
    report = run_sweep(adaptive, progress=seen.append)
    rounds = sorted({p.round for p in seen})
    assert rounds == [1, 2, 3] and report.rounds == 3
    ends = [max((p for p in seen if p.round == r), key=lambda p: p.done) for r in rounds]
    assert [(p.done, p.total) for p in ends] == [(12, 12), (18, 18), (24, 24)]
    # 0.1 % of the mean is out of reach in 4 replications: both points stopped at max, named by their shape
    assert sorted(w["shape"] for w in report.at_max) == [1.0, 2.0]


def test_progress_line_text():
    from schedlab.cli import ProgressLine
    from schedlab.platform.execution.runner import Progress

    p = Progress("sweep", 2, 30, 120, 1, 15.0)
    assert p.eta == 45.0
    assert ProgressLine.text(p) == "sweep: round 2, 30/120 simulations, 1 failed, 0 running, 15s elapsed, ETA 45s"
    assert ", 8 running, " in ProgressLine.text(Progress("sweep", 2, 30, 120, 1, 15.0, running=8))
    assert "ETA ?" in ProgressLine.text(Progress("s", 1, 0, 10, 0, 0.5))
    assert "1h01m elapsed, ETA 1h01m" in ProgressLine.text(Progress("s", 1, 1, 2, 0, 3660.0))
    assert "2m05s elapsed" in ProgressLine.text(Progress("s", 1, 1, 2, 0, 125.0))


def test_run_prints_progress_lines_and_the_points_at_max(tmp_path):
    """`schedlab run` without a terminal prints one progress line per round
    (simulations, failed, elapsed, ETA, round) and, at the end of an adaptive
    sweep, the points that stopped at max above their target."""
    spec = tmp_path / "a.toml"
    spec.write_text(
        textwrap.dedent(f"""\
        name = "cli-progress"
        engine = "queue"
        seed = 3
        policies = ["FIFO", "PS"]
        [workload]
        kind = "synthetic"
        njobs = 200
        shape = [1.0, 2.0]
        [replications]
        metric = "mst"
        rel_halfwidth = 0.001
        min = 2
        max = 3
        batch = 1
        [outputs]
        dir = "{tmp_path / "out"}"
        [tracking]
        enabled = false
        """)
    )
    out = subprocess.run(
        [sys.executable, "-m", "schedlab.cli", "run", str(spec)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    lines = [line for line in out.stderr.splitlines() if line.startswith("cli-progress: round")]
    assert any(line.startswith("cli-progress: round 1, 8/8 simulations, 0 failed") for line in lines), out.stderr
    assert any(line.startswith("cli-progress: round 2, 12/12 simulations, 0 failed") for line in lines), out.stderr
    assert "2 workload point(s) stopped at max = 3 replications" in out.stderr
    assert "  shape=1.0" in out.stderr and "  shape=2.0" in out.stderr


def test_mlflow_at_a_glance(tmp_path):
    """Runs named by policy and grid values; final values logged once (step
    0) under plain names, no interval for a constant; the parent and the
    experiment say what the sweep is (description from the spec file's
    leading comment, grid axes, a headline table, the spec)."""
    from mlflow.tracking import MlflowClient

    from schedlab.platform.planning.validate import load_spec

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    path = tmp_path / "glance.toml"
    path.write_text(
        textwrap.dedent(f"""\

        # Two policies as the job-size skew varies:
        # a small check of what MLflow shows.
        name = "glance"
        engine = "queue"
        seed = 2
        policies = ["FIFO", "PS"]
        [workload]
        kind = "synthetic"
        njobs = 300
        shape = [0.5, 2.0]
        sigma = 1.0
        [replications]
        n = 3
        [outputs]
        dir = "{tmp_path / "out"}"
        [tracking]
        uri = "{uri}"
        """)
    )
    spec = load_spec(path)
    assert spec.description == "Two policies as the job-size skew varies: a small check of what MLflow shows."
    report = run_sweep(spec)
    assert not report.tracking.failed and report.tracking.logged == 4
    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name("glance")
    assert exp.tags["mlflow.note.content"] == spec.description
    runs = client.search_runs([exp.experiment_id], max_results=100)
    [parent] = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    children = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
    assert sorted(r.info.run_name for r in children) == [
        "FIFO shape=0.5",
        "FIFO shape=2.0",
        "PS shape=0.5",
        "PS shape=2.0",
    ]
    rows = sorted_summary(spec.results_dir())
    for run in children:
        cid = run.data.tags["schedlab.config_id"]
        mine = rows.filter(pl.col("config_id") == cid)
        assert run.data.metrics["mst"] == pytest.approx(mine["mst"].mean(), rel=1e-12)
        assert run.data.metrics["mst_ci95"] > 0 and run.data.metrics["n"] == 3.0
        assert "mst_mean" not in run.data.metrics and "n_jobs_ci95" not in run.data.metrics
        assert run.data.metrics["n_jobs"] == 300.0
        for key in ("mst", "n"):
            assert [m.step for m in client.get_metric_history(run.info.run_id, key)] == [0]
    note = parent.data.tags["mlflow.note.content"]
    assert note.startswith(spec.description)
    assert "**Grid axes:** policy, shape" in note and "| run | mst (mean ± 95 % CI) |" in note
    assert "| FIFO shape=0.5 | " in note and '"seed": 2' in note


def test_a_changed_input_file_is_refused_naming_it(tmp_path):
    """Rows computed from a job table (or trace) file stay tied to its
    content: an edited file is refused naming it; the same content with a new
    modification time resumes; --fresh recomputes."""
    import os

    table = tmp_path / "jobs.csv"
    table.write_text("job_id,submit,size\n0,0.0,1.0\n1,0.5,2.0\n2,1.0,0.5\n")
    spec = make_spec(
        tmp_path, workload={"kind": "file", "path": str(table)}, policies=["FIFO", "PS"], replications={"n": 1}
    )
    assert run_sweep(spec).rows_written == 2
    os.utime(table, ns=(1, 1))  # touched, same bytes: the fingerprint is recomputed and equal
    assert run_sweep(spec).rows_skipped == 2
    table.write_text("job_id,submit,size\n0,0.0,1.0\n1,0.5,2.0\n2,1.0,0.75\n")
    with pytest.raises(UserError, match=rf"workload\.path: {table} changed since these rows were written"):
        run_sweep(spec)
    again = run_sweep(spec, fresh=True)
    assert again.rows_written == 2
