"""A sweep as MLflow's web UI shows it (`schedlab.platform.tracking.ui`):
the experiment's kind and saved view, the printed link, artifacts beside
the store, the parent's results table, the search indexes -- against a real
SQLite store -- and, in headless Chromium against a real ``mlflow server``,
the page the link opens: the Runs table (not the GenAI overview) with every
configuration a row, named by its swept value, with the metric beside it."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from schedlab.platform.tracking.data import Expected
from schedlab.platform.tracking.tracker import track_results
from schedlab.platform.tracking.ui import (
    EXPERIMENT_KIND_TAG,
    MAX_VIEW,
    MODEL_TRAINING,
    RESULTS_CSV,
    VIEW_TAG,
    browse_hint,
    experiment_url,
    view_state,
)

SWEEP = "ui-sweep"
POLICIES = ["FIFO", "PS", "SRPT"]
SHAPES = [0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0]  # 3 x 8 = 24 configurations: more than 20 rows
REPLICATIONS = 3
CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
#: Seconds a page may take to show its runs on this shared machine (the benchmark measures the real figure).
PAGE_SECONDS = 60.0


def grid_results(d: Path) -> Path:
    """A results dir of policies x shapes (a queue sweep's manifest and summary rows, written by hand)."""
    configs = {
        f"c{i:02d}": {
            "engine": "queue",
            "policy": policy,
            "workload_kind": "synthetic",
            "params": {"shape": shape, "load": 0.9},
        }
        for i, (policy, shape) in enumerate((p, s) for p in POLICIES for s in SHAPES)
    }
    d.mkdir(parents=True, exist_ok=True)
    manifest = {
        "name": SWEEP,
        "engine": "queue",
        "spec_hash": "ui",
        "schedlab_version": "0.1.0",
        "created": "2026-01-01T00:00:00",
        "description": "Three policies along the job-size shape.",
        "spec": {"name": SWEEP},
        "param_columns": ["shape", "load"],
        "configs": configs,
    }
    (d / "manifest.json").write_text(json.dumps(manifest))
    rng = np.random.default_rng(7)
    for policy in POLICIES:
        rows = [
            {
                "config_id": cid,
                "replication": r,
                "engine": "queue",
                "workload_kind": "synthetic",
                "seed": f"{cid}-{r}",
                **cfg["params"],
                "mst": float(rng.gamma(2.0, 1.0 + POLICIES.index(policy))),
                "slowdown_mean": float(rng.uniform(1, 5)),
            }
            for cid, cfg in configs.items()
            if cfg["policy"] == policy
            for r in range(REPLICATIONS)
        ]
        part = d / "summary" / f"policy={urllib.parse.quote(policy, safe='')}"
        part.mkdir(parents=True, exist_ok=True)
        pl.DataFrame(rows, schema_overrides={"replication": pl.Int64}).write_parquet(part / "part-0.parquet")
    return d


def test_links_name_the_runs_tab_in_machine_learning_mode():
    url = experiment_url("http://127.0.0.1:5000/", "7")
    assert url == "http://127.0.0.1:5000/#/experiments/7/runs?viewStateShareKey=schedlab&workflowType=machine_learning"
    assert browse_hint("http://h:1", "7") == experiment_url("http://h:1", "7")
    hint = browse_hint("sqlite:///some/mlflow.db", "7")
    assert f"--backend-store-uri sqlite:///{Path('some/mlflow.db').resolve()}" in hint
    assert hint.endswith(experiment_url("http://127.0.0.1:5000", "7"))


def test_the_view_of_a_very_wide_sweep_fits_an_experiment_tag():
    """Forty axes with MLflow's longest parameter names: the view stays within the tag's limit
    (MLflow would refuse it, and the tracking would fail), still sorted by the metric."""
    from mlflow.utils.validation import MAX_ENTITY_KEY_LENGTH, MAX_EXPERIMENT_TAG_VAL_LENGTH

    assert MAX_VIEW == MAX_EXPERIMENT_TAG_VAL_LENGTH
    keys = [f"{i:02d}".ljust(MAX_ENTITY_KEY_LENGTH, "x") for i in range(40)]
    configs = {f"c{j}": {"policy": "P", "params": {k: j for k in keys}} for j in range(2)}
    manifest = {"engine": "queue", "configs": configs}
    expected = {
        cid: Expected(cid, {k: str(j) for k in keys} | {"policy": "P"}, {}, {"mst": 1.0 + j, "n": 2.0}, 2)
        for j, cid in enumerate(configs)
    }
    view = view_state(manifest, expected)
    assert len(view) <= MAX_VIEW
    assert json.loads(view)["orderByKey"] == "metrics.`mst`"


def test_sqlite_experiment_view_artifacts_and_indexes(tmp_path, monkeypatch):
    from mlflow.tracking import MlflowClient

    d = grid_results(tmp_path / "results")
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)  # where MLflow would have put ./mlruns
    store = tmp_path / "store" / "mlflow.db"
    uri = f"sqlite:///{store}"
    report = track_results(d, uri=uri)
    assert not report.failed, report.error
    assert report.logged == len(POLICIES) * len(SHAPES)
    assert list(work.iterdir()) == [], "nothing may land in the working directory (no ./mlruns)"

    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name(SWEEP)
    assert exp.tags[EXPERIMENT_KIND_TAG] == MODEL_TRAINING
    assert Path(exp.artifact_location) == store.parent / "mlflow-artifacts"
    assert report.browse is not None and f"#/experiments/{exp.experiment_id}/runs?" in report.browse

    view = json.loads(exp.tags[VIEW_TAG])
    assert view["orderByKey"] == "metrics.`mst`" and view["orderByAsc"] is True  # not by time: no nesting
    assert view["selectedColumns"][:2] == ["params.`policy`", "params.`shape`"]
    assert "metrics.`mst`" in view["selectedColumns"] and "metrics.`n`" in view["selectedColumns"]
    charts = {c["type"]: c for c in view["compareRunCharts"]}
    assert charts["PARALLEL"]["selectedParams"] == ["shape"] and charts["PARALLEL"]["selectedMetrics"][0] == "mst"
    assert charts["SCATTER"]["xaxis"] == {"key": "shape", "type": "PARAM"}
    assert all(c["metricSectionId"] == view["compareRunSections"][0]["uuid"] for c in view["compareRunCharts"])

    parent = client.search_runs([exp.experiment_id], "tags.`schedlab.sweep` = 'ui-sweep'")[0]
    table = Path(client.download_artifacts(parent.info.run_id, RESULTS_CSV, str(tmp_path)))
    rows = list(csv.DictReader(io.StringIO(table.read_text())))
    children = {
        r.data.tags["schedlab.config_id"]: r
        for r in client.search_runs([exp.experiment_id], f"tags.`mlflow.parentRunId` = '{parent.info.run_id}'")
    }
    assert len(rows) == len(children) == 24
    for row in rows:  # the table is the child runs' values
        child = children[row["config_id"]]
        assert row["run"] == child.info.run_name == f"{row['policy']} shape={row['shape']}"
        assert float(row["mst"]) == child.data.metrics["mst"] and float(row["n"]) == REPLICATIONS
    assert (store.parent / "mlflow-artifacts" / parent.info.run_id / "artifacts" / RESULTS_CSV).read_text() == (
        table.read_text()
    )

    with sqlite3.connect(store) as con:
        names = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
        plan = " ".join(
            str(r)
            for r in con.execute("EXPLAIN QUERY PLAN SELECT run_uuid FROM params WHERE key = 'shape' AND value = '0.5'")
        )
    assert {"schedlab_params_key_value", "schedlab_tags_key_value", "schedlab_latest_metrics_key_value"} <= names
    assert "schedlab_params_key_value" in plan

    # Idempotent: a second track changes nothing (same runs, the table not logged again).
    before = {cid: r.info.run_id for cid, r in children.items()}
    again = track_results(d, uri=uri)
    assert not again.failed and again.logged == 24
    parent2 = client.get_run(parent.info.run_id)
    assert parent2.data.tags["schedlab.results_csv"] == parent.data.tags["schedlab.results_csv"]
    after = client.search_runs([exp.experiment_id], f"tags.`mlflow.parentRunId` = '{parent.info.run_id}'")
    assert {r.data.tags["schedlab.config_id"]: r.info.run_id for r in after} == before


# --------------------------------------------------------------------------- the page, in Chromium


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A real `mlflow server` on 127.0.0.1 (a free port), its own process group, stopped at the end."""
    from tests.test_tracking import free_port

    root = tmp_path_factory.mktemp("mlflow-ui-server")
    port = free_port()
    log = open(root / "server.log", "wb")
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    env.pop("MLFLOW_TRACKING_URI", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port), "--workers", "1"]
        + ["--backend-store-uri", f"sqlite:///{root}/mlflow.db", "--artifacts-destination", str(root / "artifacts")],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,
        cwd=root,
    )
    uri = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"mlflow server did not start:\n{(root / 'server.log').read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{uri}/health", timeout=2):
                    break
            except OSError:
                time.sleep(0.25)
        yield uri
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # the group this fixture created
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        log.close()


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (.ci/run installs Debian's)")
def test_the_printed_link_opens_the_runs_with_every_configuration_a_row(tmp_path, server):
    sync = pytest.importorskip("playwright.sync_api")
    d = grid_results(tmp_path / "results")
    report = track_results(d, uri=server)
    assert not report.failed, report.error
    assert report.browse is not None and report.browse.startswith(server + "/#/experiments/")
    shots = Path(os.environ.get("SCHEDLAB_SHOTS") or tmp_path / "shots")
    shots.mkdir(parents=True, exist_ok=True)
    with sync.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1600, "height": 1400})
            page.goto(report.browse)
            page.wait_for_selector("text=SRPT shape=16.0", timeout=PAGE_SECONDS * 1000)
            page.wait_for_selector("text=FIFO shape=0.125", timeout=PAGE_SECONDS * 1000)
            page.screenshot(path=str(shots / "runs.png"))
            assert "/runs?" in page.url and "workflowType=machine_learning" in page.url
            # The grid draws a row in parts (the pinned name, the other columns): joined by row index.
            rows = page.evaluate(
                """() => {
                    const rows = {};
                    for (const r of document.querySelectorAll('[role=row][row-index]')) {
                        const i = r.getAttribute('row-index');
                        rows[i] = (rows[i] || '') + '\\n' + r.innerText;
                    }
                    return Object.values(rows);
                }"""
            )
            names = [f"{pol} shape={s}" for pol in POLICIES for s in SHAPES]
            shown = [r for r in rows if any(n in r.split("\n") for n in names)]
            assert len(shown) >= 20, rows[:5]
            for row in shown:  # the swept value (its own column) and the metric beside the name
                cells = [c.strip() for c in row.split("\n") if c.strip()]
                name = next(c for c in cells if c in names)
                policy, shape = name.split(" shape=")
                assert policy in cells and shape in cells
                assert any(c[0].isdigit() and "." in c and c != shape for c in cells), cells
            body = page.inner_text("body")
            assert "Traces" not in page.locator("h2, h1").all_inner_texts()
            assert "Detect Issues" not in body and "overview" not in page.url
            charts = browser.new_page(viewport={"width": 1600, "height": 1400})
            charts.goto(report.browse + "&compareRunsMode=CHART")
            try:  # the saved view's charts: parallel coordinates, and the metric against the numeric axis
                charts.wait_for_selector("text=Parallel Coordinates", timeout=PAGE_SECONDS * 1000)
                charts.wait_for_selector("svg .xtitle >> text=shape", timeout=PAGE_SECONDS * 1000)
            finally:
                charts.screenshot(path=str(shots / "charts.png"))
            # A numeric axis: ticks of its own (0, 5, 10, 15), not one category per logged value ("16.0").
            ticks = charts.locator("svg .xtick text").all_text_contents()
            assert "10" in ticks and "16.0" not in ticks, ticks
        finally:
            browser.close()
