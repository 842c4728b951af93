"""`schedlab view` on real sweeps (local Ray, Parquet, MLflow on SQLite):
the selectors, the replay check, `--vs` pairing the same job ids, bad input
as one line and exit 2, Batsim's jobs.csv read by evalys with the same
intervals, and the pictures in MLflow."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner

from schedlab.cli import main
from schedlab.platform.planning.validate import parse_spec

#: evalys rounds every float of a jobs.csv to 6 decimals (JobSet's float_precision).
EVALYS_ROUNDING = 0.5e-6


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory):
    """A queue sweep (tracked in MLflow on SQLite) and a batch sweep, run once."""
    import os

    import ray

    from schedlab.platform.execution.runner import run_sweep

    root = tmp_path_factory.mktemp("views")
    cwd = os.getcwd()
    os.chdir(root)  # MLflow's artifact root for a SQLite store is ./mlruns
    if ray.is_initialized():
        ray.shutdown()
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    uri = f"sqlite:///{root}/mlflow.db"
    queue = parse_spec(
        {
            "name": "vq",
            "engine": "queue",
            "seed": 4,
            "policies": ["PS", "PSBS", "SRPTE"],
            "workload": {"kind": "synthetic", "njobs": 150, "shape": [0.25, 0.5]},
            "replications": {"n": 2},
            "outputs": {"dir": str(root / "vq")},
            "tracking": {"enabled": True, "uri": uri},
        },
        "vq.toml",
    )
    batch = parse_spec(
        {
            "name": "vb",
            "engine": "batch",
            "seed": 1,
            "policies": ["EASY", "FCFS"],
            "system": {"model": "nodes", "nodes": 16},
            "workload": {"kind": "lublin", "njobs": 120, "nodes": 16, "load": 0.8},
            "outputs": {"dir": str(root / "vb")},
            "tracking": {"enabled": False},
        },
        "vb.toml",
    )
    try:
        for spec in (queue, batch):
            report = run_sweep(spec)
            assert not report.failures
        yield {"root": root, "queue": queue, "batch": batch, "uri": uri}
    finally:
        ray.shutdown()
        os.chdir(cwd)


def view(*args):
    return CliRunner().invoke(main, ["view", *map(str, args)])


def test_vs_pairs_the_same_job_ids_and_shows_each_difference(sweeps):
    from schedlab.views import replay as rp
    from schedlab.views.page import build_figure

    root = sweeps["root"]
    out = root / "psbs.html"
    r = view(
        root / "vq", "--policy", "PSBS", "--where", "shape=0.25", "--replication", "1", "--vs", "SRPTE", "--out", out
    )
    assert r.exit_code == 0, r.output
    assert "replay matches the row" in r.output and out.stat().st_size > 0
    a = rp.select(root / "vq", policy="PSBS", where={"shape": "0.25"}, replication=1)
    b = rp.partner(a, "SRPTE")
    assert b.replication == 1 and b.row["shape"] == a.row["shape"] and b.row["policy"] == "SRPTE"
    sa, sb = rp.replay(a), rp.replay(b)
    assert np.array_equal(sa.jobs["job_id"], sb.jobs["job_id"])  # common random numbers: the same jobs
    assert np.array_equal(sa.jobs["size"], sb.jobs["size"]) and np.array_equal(sa.jobs["submit"], sb.jobs["submit"])
    fig, _ = build_figure([sa, sb])
    diff = next(t for t in fig.data if t.name == "finish difference")
    assert np.allclose(np.asarray(diff.y), sb.jobs["completion"] - sa.jobs["completion"], rtol=0, atol=0)


def test_replay_equals_the_stored_row_and_a_changed_row_is_refused(sweeps, tmp_path):
    import shutil

    from schedlab.views import replay as rp

    sel = rp.select(sweeps["root"] / "vq", policy="PS", where={"shape": "0.5"})
    assert sel.replication == 0  # the lowest stored
    s = rp.replay(sel)
    assert s.summary["mst"] == sel.row["mst"]
    # tamper with the stored mst of that row: the view refuses, one line, exit 2
    copy = tmp_path / "vq"
    shutil.copytree(sweeps["root"] / "vq", copy)
    for part in (copy / "summary").rglob("*.parquet"):
        frame = pl.read_parquet(part)
        hit = (frame["config_id"] == sel.config_id) & (frame["replication"] == 0)
        if hit.any():
            frame.with_columns(
                pl.when(hit).then(pl.col("mst") * 1.01).otherwise(pl.col("mst")).alias("mst")
            ).write_parquet(part)
    r = view(copy, "--config", sel.config_id, "--replication", 0)
    assert r.exit_code == 2 and "does not match its stored row: mst" in r.output
    assert len(r.output.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "args,says",
    [
        (["--policy", "PSBS"], "matches 2 configurations"),
        (["--policy", "NOPE"], "--policy NOPE: no rows"),
        (["--policy", "PS", "--where", "shape=9"], "--where shape=9: no rows"),
        (["--policy", "PS", "--where", "shape=0.5", "--replication", "5"], "--replication 5: no such replication"),
        (["--config", "0000"], "no configuration '0000'"),
        (["--policy", "PS", "--where", "shape=0.5", "--window", "1e12:2e12"], "--window 1e12:2e12: outside the run"),
        (["--policy", "PS", "--where", "shape=0.5", "--window", "5:1"], "START < END"),
        (["--policy", "PS", "--where", "shape=0.5", "--color-by", "nope"], "--color-by 'nope': not a job column"),
        (["--policy", "PS", "--where", "shape=0.5", "--vs", "LAS"], "--vs LAS: no configuration"),
        (["--policy", "PS", "--where", "shape=0.5", "--batsim-csv", "x.csv"], "describes batch runs"),
    ],
)
def test_bad_input_is_one_line_exit_2(sweeps, args, says):
    r = view(sweeps["root"] / "vq", *args)
    assert r.exit_code == 2, r.output
    assert says in r.output and len(r.output.strip().splitlines()) == 1


def test_evalys_reads_our_batsim_csv_with_the_same_intervals(sweeps):
    import matplotlib

    matplotlib.use("Agg")
    from evalys.jobset import JobSet
    from evalys.visu import core, gantt

    from schedlab.views import replay as rp

    root = sweeps["root"]
    csv = root / "jobs.csv"
    r = view(root / "vb", "--policy", "EASY", "--batsim-csv", csv, "--static", root / "easy.pdf")
    assert r.exit_code == 0, r.output
    assert (root / "easy.pdf").stat().st_size > 0 and (root / "easy.png").stat().st_size > 0
    js = JobSet.from_csv(str(csv))  # evalys 4.0.7 reads it as it is: no compatibility shim
    layout = core.SimpleLayout(wtitle="t")
    plot = layout.inject(gantt.GanttVisualization, spskey="all", title="t")
    plot.build(js)
    theirs = sorted((p.get_x(), p.get_y(), p.get_width(), p.get_height()) for p in plot._ax.patches)
    s = rp.replay(rp.select(root / "vb", policy="EASY"))
    ours = sorted(
        (float(s.jobs["start"][r_]), a, float(s.jobs["end"][r_] - s.jobs["start"][r_]), b - a + 1)
        for r_, ranges in s.allocation.items()
        for a, b in ranges
    )
    assert len(theirs) == len(ours) == sum(len(v) for v in s.allocation.values())
    for (x, y, w, h), (x2, y2, w2, h2) in zip(theirs, ours):
        assert (y, h) == (y2, h2)
        assert abs(x - x2) <= EVALYS_ROUNDING * max(1.0, abs(x2)) and abs(w - w2) <= 2 * EVALYS_ROUNDING * max(1.0, x2)
    frame = pl.read_csv(csv)
    assert frame.columns[:3] == ["job_id", "workload_name", "profile"] and "allocated_resources" in frame.columns
    assert set(frame["final_state"]) == {"COMPLETED_SUCCESSFULLY"}


def test_mlflow_gets_the_headline_figure_and_the_page(sweeps):
    from mlflow.tracking import MlflowClient

    from schedlab.platform.tracking.data import CONFIG_TAG
    from schedlab.views import replay as rp
    from schedlab.views.tracking import log_headline

    spec, uri, root = sweeps["queue"], sweeps["uri"], sweeps["root"]
    png = log_headline(spec.results_dir(), uri, spec.experiment(), spec.name)
    assert png is not None and png.name == "mst-vs-shape.png"
    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name("vq")
    runs = client.search_runs([exp.experiment_id], max_results=100)
    parent = next(r for r in runs if "mlflow.parentRunId" not in r.data.tags)
    assert {a.path for a in client.list_artifacts(parent.info.run_id, "figures")} >= {
        "figures/mst-vs-shape.png",
        "figures/mst-vs-shape.pdf",
    }
    r = view(root / "vq", "--policy", "PS", "--where", "shape=0.25", "--log", "--uri", uri, "--out", root / "ps.html")
    assert r.exit_code == 0, r.output
    child = [r_ for r_ in runs if r_.info.run_id in r.output]
    assert len(child) == 1 and child[0].data.params["shape"] == "0.25"
    want = rp.select(root / "vq", policy="PS", where={"shape": "0.25"}).config_id
    assert child[0].data.tags[CONFIG_TAG] == want
    assert [a.path for a in client.list_artifacts(child[0].info.run_id, "views")] == ["views/ps.html"]


def test_batsim_workload_json_round_trips(tmp_path):
    from schedlab.workloads.traces.batsim import write_workload
    from schedlab.workloads.traces.registry import read_trace

    jobs = pl.DataFrame(
        {
            "job_id": [3, 1, 2],
            "submit": [5.0, 0.0, 0.0],
            "runtime": [10.5, 1.0, 0.0],
            "procs": [4, 1, 2],
            "requested_time": [20.0, 1.0, 3.0],
        }
    )
    path = write_workload(jobs, tmp_path / "w.json", nb_res=8)
    trace = read_trace("batsim", str(path), use_cache=False)
    back = trace.jobs
    want = jobs.sort("submit", maintain_order=True)
    for col in want.columns:
        assert back[col].to_list() == want[col].to_list()
    assert trace.meta["machine_procs"] == 8


def test_batsim_profiles_parallel_and_composed(tmp_path):
    from schedlab.errors import UserError
    from schedlab.workloads.traces.registry import read_trace

    doc = {
        "nb_res": 4,
        "jobs": [
            {"id": "w0!1", "subtime": 0, "res": 2, "profile": "par", "walltime": -1},
            {"id": 2, "subtime": 1, "res": 2, "profile": "hom"},
            {"id": 3, "subtime": 2, "res": 1, "profile": "both"},
        ],
        "profiles": {
            "par": {"type": "parallel", "cpu": [4e9, 2e9], "com": [0, 1e6, 3e6, 0]},
            "hom": {"type": "parallel_homogeneous", "cpu": 1e9, "com": 0},
            "d": {"type": "delay", "delay": 2.5},
            "both": {"type": "composed", "repeat": 2, "seq": ["d", "hom"]},
        },
    }
    path = tmp_path / "p.json"
    path.write_text(json.dumps(doc))
    jobs = read_trace("batsim", str(path), use_cache=False, speed=1e9, bandwidth=1e6).jobs
    # par: busiest host computes 4 s; host 0's link carries 1e6 + 3e6 bytes = 4 s: 4 s
    assert jobs["runtime"].to_list() == [4.0, 1.0, 2 * (2.5 + 1.0)]
    assert jobs["job_id"].to_list() == [1, 2, 3] and jobs["requested_time"][0] == 4.0
    with pytest.raises(UserError, match=r"profiles.par: a parallel profile needs the reader option speed"):
        read_trace("batsim", str(path), use_cache=False)
    doc["profiles"]["par"] = {"type": "smpi", "trace": "x"}
    path.write_text(json.dumps(doc))
    with pytest.raises(UserError, match=r"p.json: profiles.par: profile type 'smpi' is not supported"):
        read_trace("batsim", str(path), use_cache=False, speed=1e9, bandwidth=1e6)
