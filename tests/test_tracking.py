"""MLflow tracking of a results dir, against real stores: a SQLite file and a
real `mlflow server` subprocess (no mocks). Results dirs are built by hand here,
following the results-dir contract (manifest.json + hive-partitioned summary)."""

from __future__ import annotations

import json
import math
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy import stats

from schedlab.platform.tracking.data import aggregate_summary
from schedlab.platform.tracking.mirror import batches as _batches
from schedlab.platform.tracking.tracker import HTTP_ENV_DEFAULTS, Tracker, TrackReport, track_results

SWEEP = "demo-sweep"
PARAM_COLUMNS = ["load", "sigma", "njobs"]
CONFIGS = {
    "c1": {
        "engine": "queue",
        "policy": "FIFO",
        "workload_kind": "synthetic",
        "params": {"load": 0.5, "sigma": 0.5, "njobs": 1000},
    },
    "c2": {
        "engine": "queue",
        "policy": "SRPTE+PS",
        "workload_kind": "synthetic",
        "params": {"load": 0.5, "sigma": 0.5, "njobs": 1000},
    },
    "c3": {
        "engine": "queue",
        "policy": "SRPTE+PS",
        "workload_kind": "synthetic",
        "params": {"load": 0.9, "sigma": 1.0, "njobs": 1000},
    },
}
METRICS = ["mst", "slowdown_p99", "makespan", "events", "mst_class_1"]


# --------------------------------------------------------------------------- results dirs


def write_manifest(d: Path) -> None:
    d.mkdir(parents=True, exist_ok=True)
    (d / "manifest.json").write_text(
        json.dumps(
            {
                "name": SWEEP,
                "engine": "queue",
                "spec_hash": "abc123",
                "schedlab_version": "0.1.0",
                "created": "2026-01-01T00:00:00",
                "spec": {"name": SWEEP},
                "param_columns": PARAM_COLUMNS,
                "configs": CONFIGS,
            }
        )
    )


def write_summary(d: Path, reps: dict[str, range], part: int, seed: int) -> None:
    """One part file per policy with rows for ``reps[config_id]`` replications."""
    rng = np.random.default_rng(seed)
    by_policy: dict[str, list[dict]] = {}
    for cid, replications in reps.items():
        cfg = CONFIGS[cid]
        for r in replications:
            by_policy.setdefault(cfg["policy"], []).append(
                {
                    "config_id": cid,
                    "replication": r,
                    "engine": cfg["engine"],
                    "workload_kind": cfg["workload_kind"],
                    "seed": f"{seed}-{cid}-{r}",
                    **cfg["params"],
                    "mst": float(rng.gamma(2.0, 3.0)),
                    "slowdown_p99": float(rng.uniform(5, 50)),
                    "makespan": float(rng.uniform(900, 1100)),
                    "events": int(rng.integers(1000, 3000)),
                    # a metric with no value for one policy: must be skipped, not logged as NaN
                    "mst_class_1": None if cfg["policy"] == "FIFO" else float(rng.uniform(1, 2)),
                }
            )
    for policy, rows in by_policy.items():
        part_dir = d / "summary" / f"policy={urllib.parse.quote(policy, safe='')}"
        part_dir.mkdir(parents=True, exist_ok=True)
        frame = pl.DataFrame(
            rows, schema_overrides={"replication": pl.Int64, "events": pl.Int64, "mst_class_1": pl.Float64}
        )
        frame.write_parquet(part_dir / f"part-{part}.parquet")


def make_results(d: Path) -> Path:
    write_manifest(d)
    write_summary(d, {cid: range(4) for cid in CONFIGS}, part=0, seed=1)
    return d


def expected(d: Path) -> dict[str, dict[str, float]]:
    """n, m_mean, m_ci95 per config computed independently of schedlab (numpy/scipy)."""
    rows = pl.concat([pl.read_parquet(f) for f in sorted((d / "summary").rglob("*.parquet"))], how="diagonal")
    out: dict[str, dict[str, float]] = {}
    for cid in CONFIGS:
        sub = rows.filter(pl.col("config_id") == cid)
        n = sub.height
        values = {"n": float(n)}
        for m in METRICS:
            x = sub[m].drop_nulls().to_numpy().astype(float)
            if len(x) == 0:
                continue
            # correctly rounded sums (math.fsum): the definition schedlab's statistics use, for any row order
            mean = math.fsum(x) / len(x)
            sd = math.sqrt(math.fsum((x - mean) ** 2) / (len(x) - 1)) if len(x) > 1 else math.nan
            values[m] = mean
            ci = float(stats.t.ppf(0.975, n - 1) * sd / np.sqrt(n))
            if ci > 0:  # logged only when positive
                values[f"{m}_ci95"] = ci
        out[cid] = values
    return out


# --------------------------------------------------------------------------- helpers


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(autouse=True)
def _restore_mlflow_http_env():
    """The tracker lowers MLflow's HTTP retry settings for its process: undo after each test."""
    saved = {k: os.environ.get(k) for k in HTTP_ENV_DEFAULTS}
    yield
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def check_runs(children: dict[str, dict], want: dict[str, dict[str, float]]) -> None:
    """children: config_id -> {"params": {}, "tags": {}, "metrics": {}} (latest values)."""
    assert sorted(children) == sorted(CONFIGS)
    for cid, run in children.items():
        cfg = CONFIGS[cid]
        assert run["params"] == {
            "load": str(cfg["params"]["load"]),
            "sigma": str(cfg["params"]["sigma"]),
            "njobs": str(cfg["params"]["njobs"]),
            "engine": "queue",
            "policy": cfg["policy"],
            "workload_kind": "synthetic",
            "config_id": cid,
        }
        tags = run["tags"]
        assert tags["schedlab.config_id"] == cid
        assert tags["schedlab.engine"] == "queue"
        assert tags["schedlab.policy"] == cfg["policy"]
        assert tags["schedlab.version"] == "0.1.0"
        assert tags["schedlab.spec_hash"] == "abc123"
        assert sorted(run["metrics"]) == sorted(want[cid])
        for key, value in want[cid].items():
            assert run["metrics"][key] == pytest.approx(value, rel=1e-12), (cid, key)
    assert "mst_class_1" not in children["c1"]["metrics"]  # all-null metric skipped


# --------------------------------------------------------------------------- (1) SQLite store


def sqlite_children(uri: str, experiment: str = SWEEP):
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name(experiment)
    runs = client.search_runs([exp.experiment_id], max_results=1000)
    parents = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    children = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
    assert len(parents) == 1
    assert parents[0].data.tags["schedlab.sweep"] == SWEEP
    assert all(r.data.tags["mlflow.parentRunId"] == parents[0].info.run_id for r in children)
    by_id = {r.data.tags["schedlab.config_id"]: r for r in children}
    assert len(by_id) == len(children), "duplicated child runs"
    view = {cid: {"params": r.data.params, "tags": r.data.tags, "metrics": r.data.metrics} for cid, r in by_id.items()}
    return client, by_id, view


def test_sqlite_backfill_idempotent_and_updates(tmp_path):
    d = make_results(tmp_path / "results")
    uri = f"sqlite:///{tmp_path}/mlflow.db"

    assert track_results(d, uri=uri) == TrackReport(logged=3, failed=False, error=None)
    client, runs, view = sqlite_children(uri)
    check_runs(view, expected(d))
    assert {r.info.status for r in runs.values()} == {"FINISHED"}

    # Twice: same runs, no error, no duplicate metric points.
    assert track_results(d, uri=uri) == TrackReport(logged=3, failed=False, error=None)
    _, runs2, view2 = sqlite_children(uri)
    assert {c: r.info.run_id for c, r in runs2.items()} == {c: r.info.run_id for c, r in runs.items()}
    check_runs(view2, expected(d))
    assert [(m.step, m.value) for m in client.get_metric_history(runs["c1"].info.run_id, "n")] == [(0, 4.0)]

    # Two more replications of c1 and c3 on disk: their runs are logged anew with the final values
    # (one point per metric, at step 0); c2's run is left alone.
    write_summary(d, {"c1": range(4, 6), "c3": range(4, 6)}, part=1, seed=2)
    assert track_results(d, uri=uri).logged == 3
    _, runs3, view3 = sqlite_children(uri)
    want = expected(d)
    assert want["c1"]["n"] == 6 and want["c2"]["n"] == 4
    check_runs(view3, want)
    assert runs3["c1"].info.run_id != runs["c1"].info.run_id and runs3["c2"].info.run_id == runs["c2"].info.run_id
    for cid in ("c1", "c2"):
        for key in ("mst", "n"):
            history = client.get_metric_history(runs3[cid].info.run_id, key)
            assert [(m.step, m.value) for m in history] == [(0, want[cid][key])], (cid, key)


def test_sqlite_tracker_live(tmp_path):
    d = make_results(tmp_path / "results")
    uri = f"sqlite:///{tmp_path}/live/mlflow.db"  # parent dir created by the tracker
    tracker = Tracker(uri, "live", d)
    tracker.start()
    tracker.submit(["c1"])
    tracker.submit(["c2", "c3", "c2"])
    tracker.submit(["nope"])  # no summary rows: nothing to log, not an error
    report = tracker.close(stall=30)
    assert report == TrackReport(logged=3, failed=False, error=None)
    _, _, view = sqlite_children(uri, "live")
    check_runs(view, expected(d))


def test_missing_manifest_is_reported_not_raised(tmp_path):
    tracker = Tracker(f"sqlite:///{tmp_path}/m.db", None, tmp_path / "nothing")
    tracker.start()
    tracker.submit(["c1"])
    report = tracker.close(stall=5)
    assert report.failed and report.logged == 0 and "manifest.json" in report.error


def test_part_files_with_different_schemas(tmp_path):
    """A metric only some part files have, int in one file and float in another."""
    d = tmp_path / "results"
    for policy, frame in {
        "FIFO": pl.DataFrame({"config_id": ["a", "a"], "replication": [0, 1], "mst": [1, 3]}),
        "SRPTE+PS": pl.DataFrame(
            {
                "config_id": ["b", "b", "b"],
                "replication": [0, 1, 2],
                "mst": [1.5, 2.5, 3.5],
                "mst_class_1": [1.0, 2.0, 4.0],
            }
        ),
    }.items():
        part = d / "summary" / f"policy={urllib.parse.quote(policy, safe='')}"
        part.mkdir(parents=True)
        frame.write_parquet(part / "part-0.parquet")
    frame, metrics = aggregate_summary(d, [])
    assert sorted(metrics) == ["mst", "mst_class_1"]
    rows = {r["config_id"]: r for r in frame.to_dicts()}
    assert rows["a"]["n"] == 2 and rows["a"]["mst_mean"] == 2.0 and rows["a"]["mst_class_1_mean"] is None
    assert rows["b"]["n"] == 3 and rows["b"]["mst_class_1_mean"] == pytest.approx(7 / 3)
    assert rows["b"]["mst_ci95"] == pytest.approx(stats.t.ppf(0.975, 2) * 1.0 / np.sqrt(3))
    frame, _ = aggregate_summary(d, [], config_ids=["b"])
    assert frame["config_id"].to_list() == ["b"]


@pytest.mark.parametrize(
    ("have", "uri", "resolved"),
    [
        ({"psycopg2"}, "postgresql://u@h:5432/db", "postgresql+psycopg2://u@h:5432/db"),
        ({"psycopg", "psycopg2"}, "postgresql://u@h/db", "postgresql://u@h/db"),  # SQLAlchemy's default driver is there
        (set(), "postgresql://u@h/db", "postgresql://u@h/db"),  # neither: MLflow's own error names what is missing
        ({"psycopg2"}, "postgresql+psycopg://u@h/db", "postgresql+psycopg://u@h/db"),  # a driver named: kept
        ({"psycopg2"}, "sqlite:///m.db", "sqlite:///m.db"),
    ],
)
def test_bare_postgresql_uri_gets_the_installed_driver(monkeypatch, have, uri, resolved):
    import importlib.util

    from schedlab.platform.tracking.store import resolve_uri

    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object() if name in have else None)
    assert resolve_uri(uri) == resolved


def test_batches_respect_mlflow_limits():
    metrics, params, tags = list(range(2500)), list(range(250)), list(range(120))
    batches = list(_batches(metrics, params, tags))
    for m, p, t in batches:
        assert len(m) <= 1000 and len(p) <= 100 and len(t) <= 100 and len(m) + len(p) + len(t) <= 1000
    assert [x for b in batches for x in b[0]] == metrics
    assert [x for b in batches for x in b[1]] == params
    assert [x for b in batches for x in b[2]] == tags
    assert list(_batches([], [], [])) == []


def test_wide_configuration_is_chunked(tmp_path):
    """160 params and 1201 metric values: more than one log_batch, all accepted by MLflow."""
    d = tmp_path / "results"
    d.mkdir()
    pcols = [f"p{i}" for i in range(160)]
    params = {p: i for i, p in enumerate(pcols)}
    (d / "manifest.json").write_text(
        json.dumps(
            {
                "name": "wide",
                "engine": "queue",
                "spec_hash": "h",
                "schedlab_version": "0.1.0",
                "created": "",
                "spec": {},
                "param_columns": pcols,
                "configs": {"w": {"engine": "queue", "policy": "PS", "workload_kind": "synthetic", "params": params}},
            }
        )
    )
    rng = np.random.default_rng(3)
    frame = pl.DataFrame(
        {
            "config_id": ["w"] * 3,
            "replication": [0, 1, 2],
            "engine": ["queue"] * 3,
            "workload_kind": ["synthetic"] * 3,
            "seed": ["s0", "s1", "s2"],
            **{p: [v] * 3 for p, v in params.items()},
            **{f"m{i}": rng.uniform(size=3) for i in range(600)},
        }
    )
    (d / "summary" / "policy=PS").mkdir(parents=True)
    frame.write_parquet(d / "summary" / "policy=PS" / "part-0.parquet")
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    assert track_results(d, uri=uri) == TrackReport(1, False, None)
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name("wide")
    [child] = client.search_runs([exp.experiment_id], "tags.`schedlab.config_id` = 'w'")
    assert len(child.data.params) == 164 and child.data.params["p159"] == "159"
    assert len(child.data.metrics) == 1201
    assert child.data.metrics["m599"] == pytest.approx(float(np.mean(frame["m599"].to_numpy())))


# --------------------------------------------------------------------------- (2) real MLflow server


@pytest.fixture(scope="module", autouse=True)
def _server_process(tmp_path_factory):
    """Start `mlflow server` as soon as this module starts (it takes ~15 s to boot),
    so the SQLite tests run meanwhile; killed (whole process group) at the end."""
    root = tmp_path_factory.mktemp("mlflow-server")
    port = free_port()
    log = open(root / "server.log", "wb")
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    env.pop("MLFLOW_TRACKING_URI", None)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mlflow",
            "server",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            "1",
            "--backend-store-uri",
            f"sqlite:///{root}/mlflow.db",
            "--artifacts-destination",
            str(root / "artifacts"),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,
    )
    yield proc, f"http://127.0.0.1:{port}", root / "server.log"
    try:
        os.killpg(proc.pid, signal.SIGTERM)  # the group this fixture created (uvicorn is a child)
        proc.wait(timeout=10)
    except ProcessLookupError:
        pass
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    log.close()


@pytest.fixture(scope="module")
def mlflow_server(_server_process) -> str:
    proc, uri, log = _server_process
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"mlflow server exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{uri}/health", timeout=2) as resp:
                if resp.status == 200:
                    return uri
        except OSError:
            pass
        time.sleep(0.25)
    pytest.fail(f"mlflow server not healthy after 90 s:\n{log.read_text()[-3000:]}")


def rest(uri: str, endpoint: str, body: dict | None = None) -> dict:
    if body is None:
        req = urllib.request.Request(f"{uri}/api/2.0/mlflow/{endpoint}")
    else:
        req = urllib.request.Request(
            f"{uri}/api/2.0/mlflow/{endpoint}",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read())


def rest_children(uri: str, experiment: str) -> dict[str, dict]:
    exp = rest(uri, "experiments/get-by-name?" + urllib.parse.urlencode({"experiment_name": experiment}))
    runs = rest(uri, "runs/search", {"experiment_ids": [exp["experiment"]["experiment_id"]], "max_results": 1000})
    runs = runs.get("runs", [])

    def kv(items):
        return {i["key"]: i["value"] for i in items or []}

    parents = [r for r in runs if "mlflow.parentRunId" not in kv(r["data"].get("tags"))]
    assert len(parents) == 1
    assert kv(parents[0]["data"]["tags"])["schedlab.sweep"] == SWEEP
    children: dict[str, dict] = {}
    for r in runs:
        tags = kv(r["data"].get("tags"))
        if "mlflow.parentRunId" not in tags:
            continue
        assert tags["mlflow.parentRunId"] == parents[0]["info"]["run_id"]
        cid = tags["schedlab.config_id"]
        assert cid not in children, "duplicated child run"
        children[cid] = {
            "params": kv(r["data"].get("params")),
            "tags": tags,
            "metrics": kv(r["data"].get("metrics")),
            "run_id": r["info"]["run_id"],
        }
    return children


def test_tracker_against_server(tmp_path, mlflow_server, capfd):
    d = make_results(tmp_path / "results")
    tracker = Tracker(mlflow_server, "live-http", d)
    tracker.start()
    tracker.submit(["c1"])
    tracker.submit(["c2", "c3"])
    assert tracker.close(stall=30) == TrackReport(logged=3, failed=False, error=None)
    assert "View run" not in capfd.readouterr().out  # no per-run URL lines flooding the sweep's output
    children = rest_children(mlflow_server, "live-http")
    check_runs(children, expected(d))

    # Backfill into the same experiment: no duplicates, no param conflicts.
    assert track_results(d, uri=mlflow_server, experiment="live-http") == TrackReport(3, False, None)
    again = rest_children(mlflow_server, "live-http")
    assert {c: r["run_id"] for c, r in again.items()} == {c: r["run_id"] for c, r in children.items()}

    # MLflow itself (REST store) accepts re-logging an identical param value and
    # rejects a changed one: the tracker logs only params not yet on the run anyway.
    from mlflow.entities import Param
    from mlflow.exceptions import MlflowException
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=mlflow_server)
    run_id = children["c1"]["run_id"]
    client.log_batch(run_id, params=[Param("load", "0.5")], synchronous=True)
    with pytest.raises(MlflowException, match="Changing param values is not allowed"):
        client.log_batch(run_id, params=[Param("load", "0.7")], synchronous=True)


# --------------------------------------------------------------------------- (3) unreachable server


def test_unreachable_server_is_fast_then_backfill(tmp_path, mlflow_server):
    d = make_results(tmp_path / "results")
    dead = f"http://127.0.0.1:{free_port()}"
    t0 = time.monotonic()
    tracker = Tracker(dead, None, d)
    tracker.start()
    tracker.submit(["c1", "c2"])
    tracker.submit(["c3"])
    report = tracker.close(stall=10)
    elapsed = time.monotonic() - t0
    assert elapsed < 5, elapsed
    assert report.failed and report.logged == 0
    assert dead in report.error and "unreachable" in report.error

    # Synchronous backfill fails fast too, without raising.
    t0 = time.monotonic()
    report = track_results(d, uri=dead)
    assert report.failed and report.logged == 0 and time.monotonic() - t0 < 5

    # Once a server is there, backfill mirrors everything.
    assert track_results(d, uri=mlflow_server, experiment="backfill") == TrackReport(3, False, None)
    check_runs(rest_children(mlflow_server, "backfill"), expected(d))


def test_varying_params_compares_values_as_json_does():
    """The grid axes are the params whose JSON text differs between
    configurations: 1 and 1.0, true and 1, "1" and 1 differ; equal lists and
    dicts (in any key order) do not."""
    from schedlab.platform.tracking.data import varying_params

    pairs = {
        "int_float": (1, 1.0),
        "bool_int": (True, 1),
        "str_int": ("1", 1),
        "none_str": (None, "None"),
        "zeros": (0.0, -0.0),
        "same_list": ([1, 2], [1, 2]),
        "same_dict": ({"a": 1, "b": 2}, {"b": 2, "a": 1}),
        "same_float": (0.1, 0.1),
        "same_nan": (math.nan, float("nan")),
        "other_list": ([1, 2], [1, 2.0]),
    }
    manifest = {
        "configs": {f"c{i}": {"params": {k: v[i] for k, v in pairs.items()}} for i in (0, 1)},
    }
    want = [k for k, (a, b) in pairs.items() if json.dumps(a, sort_keys=True) != json.dumps(b, sort_keys=True)]
    assert varying_params(manifest) == want
    assert want == ["int_float", "bool_int", "str_int", "none_str", "zeros", "other_list"]
