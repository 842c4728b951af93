"""Live tracking in a process of its own (`schedlab.platform.tracking.process`):
a tracked `schedlab run` never imports MLflow in the driver and starts its
tracking process before it plans, its headline
figure reaches the sweep's parent run, a second sweep in one Python session
reuses the warm tracking process, and a tracking process that dies mid-sweep
costs the sweep nothing (reported; `schedlab track` repairs). Real MLflow
(SQLite), real Parquet, the sweep in-process or in a local pool."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import polars as pl

import schedlab
from schedlab.platform.planning.validate import parse_spec

REPO = Path(__file__).resolve().parent.parent


def _toml(root: Path, name: str, shapes: str = "[0.5, 1.0]") -> Path:
    path = root / f"{name}.toml"
    path.write_text(
        textwrap.dedent(
            f"""\
            name = "{name}"
            engine = "queue"
            seed = 5
            policies = ["PS", "SRPT"]
            [workload]
            kind = "synthetic"
            njobs = 200
            shape = {shapes}
            [replications]
            n = 3
            [outputs]
            dir = "{root / name}"
            [tracking]
            enabled = true
            uri = "sqlite:///{root}/mlflow.db"
            """
        )
    )
    return path


def _python(code: str, cwd: Path) -> dict:
    """Run ``code`` in a new Python (a fresh driver); its last stdout line is JSON."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def _mlflow_matches(uri: str, results: Path, experiment: str) -> list[str]:
    """The children's figures equal the Parquet rows (count and mean of mst); the parent's figures."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name(experiment)
    runs = client.search_runs([exp.experiment_id], max_results=100)
    parents = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    children = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
    rows = schedlab.load(results).collect()
    per_config = rows.group_by("config_id").agg(pl.col("mst").mean(), pl.len())
    means = {cid: (mean, n) for cid, mean, n in per_config.iter_rows()}
    assert len(parents) == 1 and len(children) == len(means)
    for run in children:
        mean, n = means[run.data.tags["schedlab.config_id"]]
        assert run.info.status == "FINISHED" and run.data.tags["schedlab.rows"] == str(n)
        assert math.isclose(run.data.metrics["mst"], mean, rel_tol=1e-12)
    return sorted(a.path for a in client.list_artifacts(parents[0].info.run_id, "figures"))


def test_a_tracked_cli_run_keeps_mlflow_out_of_the_driver_and_logs_the_headline_figure(tmp_path):
    spec = _toml(tmp_path, "tp")
    got = _python(
        f"""
        import json, sys
        from click.testing import CliRunner
        from schedlab.cli import main
        r = CliRunner().invoke(main, ["run", "{spec}"])
        print(json.dumps({{"code": r.exit_code, "out": r.output, "mlflow": "mlflow" in sys.modules}}))
        """,
        tmp_path,
    )
    assert got["code"] == 0, got["out"]
    assert not got["mlflow"], "the driver imported MLflow: tracking did not run in its own process"
    assert "MLflow: 4 configuration runs match" in got["out"]
    assert "MLflow: headline figure mst-vs-shape.png on the sweep's parent run" in got["out"]
    figures = _mlflow_matches(f"sqlite:///{tmp_path}/mlflow.db", tmp_path / "tp", "tp")
    assert figures == ["figures/mst-vs-shape.pdf", "figures/mst-vs-shape.png"]


def test_a_second_sweep_in_one_session_reuses_the_warm_tracking_process(tmp_path):
    """schedlab.run twice in one Python (a notebook): one tracking process serves both."""
    a, b = _toml(tmp_path, "ta"), _toml(tmp_path, "tb", "[0.25, 2.0]")
    got = _python(
        f"""
        import json
        import schedlab
        from schedlab.platform.tracking import process
        pids = []
        for spec in ["{a}", "{b}"]:
            report = schedlab.run(spec)
            pids.append(process._CHILD[0][0].pid)
            assert not report.tracking.failed, report.tracking
        print(json.dumps({{"pids": pids}}))
        """,
        tmp_path,
    )
    assert got["pids"][0] == got["pids"][1]
    _mlflow_matches(f"sqlite:///{tmp_path}/mlflow.db", tmp_path / "ta", "ta")
    _mlflow_matches(f"sqlite:///{tmp_path}/mlflow.db", tmp_path / "tb", "tb")


def test_the_tracking_process_starts_before_the_plan_and_imports_mlflow_beside_it(tmp_path):
    """A tracked run starts its tracking process before it plans (`process.warm`), and the process's
    import of MLflow, begun at once, does not race its tracker's connect: the sweep is tracked."""
    spec = _toml(tmp_path, "tw")
    got = _python(
        f"""
        import json
        import schedlab
        from schedlab.platform.execution import runner
        from schedlab.platform.tracking import process
        seen = []
        plan_of = runner.plan_of
        def spying(spec):
            seen.append([p.pid for p, _ in process._CHILD])
            return plan_of(spec)
        runner.plan_of = spying
        report = schedlab.run("{spec}")
        print(json.dumps({{"at_plan": seen, "now": process._CHILD[0][0].pid, "failed": report.tracking.failed,
                          "error": report.tracking.error}}))
        """,
        tmp_path,
    )
    assert not got["failed"], got["error"]
    assert got["at_plan"] == [[got["now"]]], "the tracking process was not up when the run planned"
    _mlflow_matches(f"sqlite:///{tmp_path}/mlflow.db", tmp_path / "tw", "tw")


def test_the_cli_starts_the_tracking_process_only_for_a_spec_that_tracks(tmp_path):
    """`schedlab run` starts the tracking process before validating the spec, but only when the file
    asks for tracking (the default): not for ``enabled = false``, nor for a file that does not parse."""
    on = _toml(tmp_path, "on")
    off = tmp_path / "off.toml"
    off.write_text(on.read_text().replace("enabled = true", "enabled = false"))
    bad = tmp_path / "bad.toml"
    bad.write_text("name = [")
    default = tmp_path / "default.toml"
    default.write_text(on.read_text().replace("enabled = true\n", ""))
    got = _python(
        f"""
        import json
        from schedlab.cli.sweeps import _warm_tracking
        from schedlab.platform.tracking import process
        seen = {{}}
        for name in ["{off}", "{bad}", "{default}", "{on}"]:
            _warm_tracking(name)
            seen[name.rsplit("/", 1)[1]] = [p.pid for p, _ in process._CHILD]
        print(json.dumps(seen))
        """,
        tmp_path,
    )
    assert got["off.toml"] == [] and got["bad.toml"] == []
    assert len(got["default.toml"]) == 1 and got["on.toml"] == got["default.toml"]


def test_a_tracking_process_that_dies_costs_the_sweep_nothing(tmp_path, monkeypatch):
    """Killed mid-sweep: every row is committed, the report says tracking failed and why,
    the next sweep gets a new tracking process, and `schedlab track` brings MLflow up to date."""
    import signal

    from schedlab.platform.execution.runner import run_sweep
    from schedlab.platform.tracking import process
    from schedlab.platform.tracking.tracker import track_results

    monkeypatch.chdir(tmp_path)
    spec = parse_spec(json.loads(json.dumps(_spec_dict(tmp_path))), "tk.toml")
    killed: list[int] = []

    def kill_it(progress) -> None:  # at the first progress line, the tracking process is running
        if not killed and process._CHILD:
            pid = process._CHILD[0][0].pid
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    report = run_sweep(spec, progress=kill_it)
    assert killed and not report.failures and report.rows_written == 12
    assert report.tracking is not None and report.tracking.failed
    assert "tracking process" in (report.tracking.error or ""), report.tracking.error
    again = run_sweep(spec)  # resumes (nothing to run) with a new tracking process, which repairs MLflow
    assert not again.tracking.failed and process._CHILD[0][0].pid != killed[0]
    assert track_results(tmp_path / "tk", uri=f"sqlite:///{tmp_path}/mlflow.db").failed is False
    _mlflow_matches(f"sqlite:///{tmp_path}/mlflow.db", tmp_path / "tk", "tk")


def _spec_dict(root: Path) -> dict:
    return {
        "name": "tk",
        "engine": "queue",
        "seed": 5,
        "policies": ["PS", "SRPT"],
        "workload": {"kind": "synthetic", "njobs": 200, "shape": [0.5, 1.0]},
        "replications": {"n": 3},
        "execution": {"backend": "local"},
        "outputs": {"dir": str(root / "tk")},
        "tracking": {"enabled": True, "uri": f"sqlite:///{root}/mlflow.db"},
    }
