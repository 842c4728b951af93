"""MLflow as a function of Parquet (issue 13, points 1 and 2, and the user-code
provenance tags), against real stores: SQLite files and a real `mlflow server`
that is killed and restarted. Results dirs are written by hand following the
results-dir contract; expected values are computed here with numpy/scipy."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import random
import signal
import socket
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
from scipy import stats

from schedlab.platform.tracking.store import ensure_sqlite_store, inspect_sqlite_store
from schedlab.platform.tracking.tracker import HTTP_ENV_DEFAULTS, Tracker, TrackReport, track_results

SWEEP = "hardening-tracking"
POLICY = {"c1": "FIFO", "c2": "PS", "c3": "PS"}
PARAMS = {"c1": {"load": 0.5}, "c2": {"load": 0.5}, "c3": {"load": 0.9}}
REL = 1e-12  # numpy/scipy vs polars aggregation: last-bit differences only
SEED = 13
SERVER_BOOT = 90.0  # seconds for `mlflow server` to answer /health on a busy 2-core machine


@pytest.fixture(autouse=True)
def _restore_mlflow_http_env():
    saved = {k: os.environ.get(k) for k in HTTP_ENV_DEFAULTS}
    yield
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def write_manifest(d: Path, extra: dict[str, dict] | None = None) -> None:
    d.mkdir(parents=True, exist_ok=True)
    configs = {
        cid: {
            "engine": "queue",
            "policy": POLICY[cid],
            "workload_kind": "synthetic",
            "params": PARAMS[cid],
            **(extra or {}).get(cid, {}),
        }
        for cid in POLICY
    }
    (d / "manifest.json").write_text(
        json.dumps(
            {
                "name": SWEEP,
                "engine": "queue",
                "spec_hash": "h1",
                "schedlab_version": "0.1.0",
                "created": "",
                "spec": {},
                "param_columns": ["load"],
                "configs": configs,
            }
        )
    )


def write_part(d: Path, reps: dict[str, range], part: str, seed: int, digest: str | None = None) -> None:
    rng = np.random.default_rng(seed)
    by_policy: dict[str, list[dict]] = {}
    for cid, rr in reps.items():
        for r in rr:
            row = {
                "config_id": cid,
                "replication": r,
                "engine": "queue",
                "workload_kind": "synthetic",
                "seed": f"s{r}",
                **PARAMS[cid],
                "mst": float(rng.gamma(2.0, 3.0)),
                "makespan": float(rng.uniform(900, 1100)),
            }
            if digest is not None:
                row.update(schedlab_version="0.1.0", schedlab_digest=digest)
            by_policy.setdefault(POLICY[cid], []).append(row)
    for policy, rows in by_policy.items():
        out = d / "summary" / f"policy={urllib.parse.quote(policy, safe='')}"
        out.mkdir(parents=True, exist_ok=True)
        pl.DataFrame(rows).write_parquet(out / f"part-{part}.parquet")


def make_results(d: Path, reps: int = 4) -> Path:
    write_manifest(d)
    write_part(d, {cid: range(reps) for cid in POLICY}, "0", seed=1)
    return d


def expected(d: Path) -> dict[str, dict]:
    """Per configuration: n, metric values and the row-key digest, computed with numpy/scipy."""
    rows = pl.concat([pl.read_parquet(f) for f in sorted((d / "summary").rglob("*.parquet"))], how="diagonal")
    out = {}
    for cid in sorted(set(rows["config_id"])):
        sub = rows.filter(pl.col("config_id") == cid)
        n = sub.height
        values = {"n": float(n)}
        for m in ("mst", "makespan"):
            x = sub[m].to_numpy()
            values[m] = float(np.mean(x))
            ci = float(stats.t.ppf(0.975, n - 1) * np.std(x, ddof=1) / np.sqrt(n))
            if ci > 0:  # logged only when positive
                values[f"{m}_ci95"] = ci
        reps = ",".join(str(r) for r in sorted(sub["replication"].to_list()))
        out[cid] = {"values": values, "rows": str(n), "digest": hashlib.sha256(reps.encode()).hexdigest()[:16]}
    return out


def mlflow_state(uri: str) -> tuple[list, dict[str, list]]:
    """(active parent runs, config_id -> active child runs), fresh from the store."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name(SWEEP)
    runs = client.search_runs([exp.experiment_id], max_results=1000)
    parents = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    children: dict[str, list] = {}
    for r in runs:
        if "mlflow.parentRunId" in r.data.tags:
            children.setdefault(r.data.tags["schedlab.config_id"], []).append(r)
    return parents, children


def assert_mirrors(uri: str, d: Path) -> dict[str, object]:
    """Exactly one parent and one finished child per configuration with rows,
    each equal to the disk; returns config_id -> run."""
    want = expected(d)
    parents, children = mlflow_state(uri)
    assert len(parents) == 1
    assert sorted(children) == sorted(want)
    runs = {}
    for cid, w in want.items():
        assert len(children[cid]) == 1, f"{cid}: {len(children[cid])} runs"
        run = children[cid][0]
        assert run.data.tags["mlflow.parentRunId"] == parents[0].info.run_id
        assert run.info.status == "FINISHED"
        assert run.data.tags["schedlab.rows"] == w["rows"]
        assert run.data.tags["schedlab.rows_digest"] == w["digest"]
        assert run.data.params["policy"] == POLICY[cid] and run.data.params["load"] == str(PARAMS[cid]["load"])
        assert set(run.data.metrics) == set(w["values"])
        for k, v in w["values"].items():
            assert run.data.metrics[k] == pytest.approx(v, rel=REL), (cid, k)
        runs[cid] = run
    return runs


# ---- point 1: reconcile ---------------------------------------------------------------------
def test_start_reconciles_missing_stale_duplicated_and_orphan_runs(tmp_path):
    from mlflow.tracking import MlflowClient

    d = make_results(tmp_path / "results")
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    assert track_results(d, uri=uri) == TrackReport(3, False, None)
    first = assert_mirrors(uri, d)

    # What kills leave behind: a run never created, a run behind the rows (more
    # rows committed, tracker killed before logging), a duplicated run, a run of
    # a configuration without rows, a second parent (a retried create) with a child.
    client = MlflowClient(tracking_uri=uri)
    parent = first["c1"].data.tags["mlflow.parentRunId"]
    exp_id = first["c1"].info.experiment_id
    client.delete_run(first["c1"].info.run_id)
    write_part(d, {"c2": range(4, 7)}, "1", seed=2)
    client.create_run(exp_id, tags={"schedlab.config_id": "c3", "mlflow.parentRunId": parent})
    client.create_run(exp_id, tags={"schedlab.config_id": "gone", "mlflow.parentRunId": parent})
    extra_parent = client.create_run(exp_id, tags={"schedlab.sweep": SWEEP}).info.run_id
    client.create_run(exp_id, tags={"schedlab.config_id": "c2", "mlflow.parentRunId": extra_parent})

    # A new driver's tracker: start() reconciles, close() verifies.
    tracker = Tracker(uri, None, d)
    tracker.start()
    report = tracker.close(stall=30)
    assert report == TrackReport(3, False, None)
    runs = assert_mirrors(uri, d)
    assert runs["c3"].info.run_id == first["c3"].info.run_id  # the original, not the duplicate
    # behind the rows: logged anew, its history one point per metric (the final values)
    assert runs["c2"].info.run_id != first["c2"].info.run_id
    assert [(m.step, m.value) for m in client.get_metric_history(runs["c2"].info.run_id, "n")] == [(0, 7.0)]


def test_fewer_rows_than_a_run_was_computed_from_replace_the_run(tmp_path):
    d = make_results(tmp_path / "results")
    write_part(d, {"c1": range(4, 8)}, "1", seed=2)
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    assert track_results(d, uri=uri).failed is False
    old = assert_mirrors(uri, d)["c1"]
    assert old.data.tags["schedlab.rows"] == "8"
    for f in (d / "summary").rglob("part-1.parquet"):  # e.g. a damaged file moved away on the user's advice
        f.unlink()
    assert track_results(d, uri=uri) == TrackReport(3, False, None)
    new = assert_mirrors(uri, d)["c1"]
    # Logged anew (a run's history is its final values only).
    assert new.info.run_id != old.info.run_id and new.data.metrics["n"] == 4.0


def test_tracking_that_cannot_finish_is_reported(tmp_path):
    d = make_results(tmp_path / "results")
    dead = f"http://127.0.0.1:{free_port()}"
    tracker = Tracker(dead, None, d)
    tracker.start()
    tracker.submit(["c1"])
    report = tracker.close(stall=10)
    assert report.failed and report.logged == 0 and "unreachable" in report.error


# ---- provenance of user code ------------------------------------------------------------------
def test_code_provenance_tags_and_artifacts_logged_once(tmp_path, monkeypatch):
    from mlflow.tracking import MlflowClient

    monkeypatch.chdir(tmp_path)  # MLflow's default artifact root (./mlruns) for a SQLite store
    d = tmp_path / "results"
    sha_a, sha_b = "a" * 64, "b" * 64
    write_manifest(d, {"c1": {"code_sha256": sha_a}, "c2": {"code_sha256": sha_b}})  # c3: built-in policy
    write_part(d, {"c1": range(3), "c2": range(3), "c3": range(3)}, "0", seed=1, digest="d1")
    write_part(d, {"c1": range(3, 5)}, "1", seed=2, digest="d0")  # rows from two schedlab builds
    for sha, rel in ((sha_a, "mypolicies/fast.py"), (sha_b, "mypolicies/slow.py")):
        (d / "code" / sha / rel).parent.mkdir(parents=True)
        (d / "code" / sha / rel).write_text(f"# policy source {sha[:4]}\n")
    uri = f"sqlite:///{tmp_path}/mlflow.db"

    assert track_results(d, uri=uri) == TrackReport(3, False, None)
    parents, children = mlflow_state(uri)
    tags = {cid: runs[0].data.tags for cid, runs in children.items()}
    assert tags["c1"]["code_sha256"] == sha_a and tags["c2"]["code_sha256"] == sha_b
    assert "code_sha256" not in tags["c3"]
    assert tags["c1"]["schedlab_digest"] == "d0,d1" and tags["c3"]["schedlab_digest"] == "d1"
    client = MlflowClient(tracking_uri=uri)
    parent_id = parents[0].info.run_id
    logged = sorted(
        f"{a.path}"
        for top in client.list_artifacts(parent_id, "code")
        for mid in client.list_artifacts(parent_id, top.path)
        for a in client.list_artifacts(parent_id, mid.path)
    )
    assert logged == [f"code/{sha_a}/mypolicies/fast.py", f"code/{sha_b}/mypolicies/slow.py"]
    local = Path(parents[0].info.artifact_uri.removeprefix("file://")) / "code" / sha_a / "mypolicies" / "fast.py"
    assert local.read_text() == "# policy source aaaa\n"
    stamp = local.stat().st_mtime_ns

    # A resume does not log the folder again.
    tracker = Tracker(uri, None, d)
    tracker.start()
    assert tracker.close(stall=30) == TrackReport(3, False, None)
    assert local.stat().st_mtime_ns == stamp

    # New user code (a new hash): logged, the old files stay.
    (d / "code" / ("c" * 64)).mkdir()
    (d / "code" / ("c" * 64) / "p.py").write_text("# new\n")
    assert track_results(d, uri=uri).failed is False
    assert (local.parent.parent.parent / ("c" * 64) / "p.py").read_text() == "# new\n"
    assert local.stat().st_mtime_ns >= stamp


# ---- point 2: a SQLite store killed while it is created ---------------------------------------
def _create_in_place(path: str) -> None:
    """MLflow's own in-place creation (what older schedlab versions did)."""
    from mlflow.tracking import MlflowClient

    MlflowClient(tracking_uri=f"sqlite:///{path}").search_experiments(max_results=1)
    os._exit(0)


def _create_atomically(path: str) -> None:
    ensure_sqlite_store(Path(path))
    os._exit(0)


def killed_at(target, path: Path, delay: float) -> bool:
    """Run ``target(path)`` in a forked child, SIGKILL it after ``delay`` s;
    True if the kill landed before the child finished."""
    child = multiprocessing.get_context("fork").Process(target=target, args=(str(path),))
    child.start()
    child.join(delay)
    landed = child.is_alive()
    if landed:
        os.kill(child.pid, signal.SIGKILL)
    child.join()
    return landed


#: Kill moments: seeded, one in each of STORE_KILLS equal slices of the time a
#: creation takes on this machine right now (measured first); SCHEDLAB_STORE_KILLS
#: sets how many (2 in the default run).
STORE_KILLS = int(os.environ.get("SCHEDLAB_STORE_KILLS", "2"))


def test_store_creation_killed_at_any_moment_is_usable_without_manual_steps(tmp_path, monkeypatch):
    # MLflow's own build (no template: a copy of one is too quick for the kills to land in it)
    monkeypatch.setattr("schedlab.platform.tracking.store.template_path", lambda: None)
    d = make_results(tmp_path / "results")
    rng = random.Random(SEED)
    fractions = [(i + rng.uniform(0.05, 0.95)) / STORE_KILLS for i in range(STORE_KILLS)]
    ensure_sqlite_store(tmp_path / "warm-up" / "mlflow.db")  # MLflow's store and alembic imported before forking
    t0 = time.monotonic()
    assert not killed_at(_create_atomically, tmp_path / "timing" / "mlflow.db", 300.0)  # timed, as it is killed
    took = time.monotonic() - t0
    landed = {"atomic": 0, "in place": 0}
    half_created = 0
    for i, u in enumerate(fractions):
        # Ours: a kill leaves no store or a whole one, never half of one.
        db = tmp_path / f"atomic{i}" / "mlflow.db"
        landed["atomic"] += killed_at(_create_atomically, db, u * took)
        assert not db.exists() or inspect_sqlite_store(db)[0] is None, f"half-created store at {u:.2f}"
        # MLflow's in-place creation killed (the broken mlflow.db): repaired on first use.
        db = tmp_path / f"inplace{i}" / "mlflow.db"
        landed["in place"] += killed_at(_create_in_place, db, u * took)
        if db.exists() and inspect_sqlite_store(db)[0] is not None:
            half_created += 1
            ensure_sqlite_store(db)
            assert list(db.parent.glob("mlflow.db.broken-*")), "the broken store was not kept aside"
        else:
            ensure_sqlite_store(db)
        assert inspect_sqlite_store(db)[0] is None
        assert not list(db.parent.glob(".mlflow.db.creating-*"))
    print(
        f"\nstore creation kills at {[round(u, 2) for u in fractions]} of {took:.1f} s: landed {landed}, "
        f"{half_created} in-place kills left a half-created store, all usable afterwards"
    )
    assert landed["atomic"] >= 1 and landed["in place"] >= 1, landed  # load varies: not every moment lands
    assert half_created >= 1, "no kill reproduced the half-created store"
    # A repaired store works for tracking.
    uri = f"sqlite:///{tmp_path}/inplace0/mlflow.db"
    assert track_results(d, uri=uri) == TrackReport(3, False, None)
    assert_mirrors(uri, d)


def _schema(db: Path) -> tuple[list[list[str]], list[tuple[str, ...]]]:
    """The store's tables and indexes, each statement as its sorted clauses
    (lines without their trailing comma): MLflow's own migrations write a
    table's constraints in an order that differs from one build to the next
    (alembic's batch mode on SQLite), which means nothing to the schema."""
    con = sqlite3.connect(db)
    try:
        statements = [r[0] for r in con.execute("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL")]
        sql = sorted(sorted(line.strip().rstrip(",").strip() for line in s.splitlines()) for s in statements)
        return sql, con.execute("SELECT version_num FROM alembic_version").fetchall()
    finally:
        con.close()


def test_new_stores_are_copies_of_a_template_that_mlflow_completes(tmp_path, monkeypatch):
    """The first store built on a machine is kept (without its Default experiment) as the template;
    the next store is a copy, which MLflow completes on first open as it would any store, with the
    Default experiment's artifact location from the opener's working dir; it tracks a sweep. A
    damaged template is not used, and is replaced by a sound one."""
    from mlflow.tracking import MlflowClient

    from schedlab.platform.tracking.store import template_path

    monkeypatch.setenv("SCHEDLAB_CACHE_DIR", str(tmp_path / "cache"))
    template = template_path()
    assert template is not None and template.parent == tmp_path / "cache" / "mlflow"
    built = tmp_path / "built" / "mlflow.db"
    ensure_sqlite_store(built)  # built by MLflow, kept as the template
    assert template.is_file() and inspect_sqlite_store(template)[0] is None
    with sqlite3.connect(template) as con:
        assert con.execute("SELECT COUNT(*) FROM experiments").fetchone()[0] == 0
    copied = tmp_path / "copied" / "mlflow.db"
    ensure_sqlite_store(copied)
    assert _schema(copied) == _schema(built)
    monkeypatch.chdir(copied.parent)
    default = MlflowClient(tracking_uri=f"sqlite:///{copied}").get_experiment("0")
    assert default.name == "Default"
    assert default.artifact_location.rstrip("/").endswith(str(copied.parent / "mlruns" / "0"))
    d = make_results(tmp_path / "results")
    uri = f"sqlite:///{copied}"
    assert track_results(d, uri=uri) == TrackReport(3, False, None)
    assert_mirrors(uri, d)
    template.write_bytes(b"not a database")
    again = tmp_path / "again" / "mlflow.db"
    ensure_sqlite_store(again)
    assert inspect_sqlite_store(again)[0] is None and _schema(again) == _schema(built)
    assert inspect_sqlite_store(template)[0] is None  # rebuilt and kept again


def test_half_migrated_store_with_runs_is_not_thrown_away(tmp_path):
    d = make_results(tmp_path / "results")
    db = tmp_path / "mlflow.db"
    assert track_results(d, uri=f"sqlite:///{db}").failed is False
    with sqlite3.connect(db) as con:  # what an interrupted migration leaves
        con.execute("CREATE TABLE _alembic_tmp_runs (x INTEGER)")
    report = track_results(d, uri=f"sqlite:///{db}")
    assert report.failed and "damaged MLflow store" in report.error and "holding 4 runs" in report.error, report
    assert "_alembic_tmp_runs" in report.error and db.exists()


# ---- a real tracking server, killed and restarted -----------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """`mlflow server` on 127.0.0.1 in its own session (killed as a group)."""

    def __init__(self, root: Path):
        self.root, self.port, self.proc = root, free_port(), None
        self.uri = f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
        env.pop("MLFLOW_TRACKING_URI", None)
        self.log = open(self.root / "server.log", "ab")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "mlflow",
                "server",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--workers",
                "1",
                "--backend-store-uri",
                f"sqlite:///{self.root}/server.db",
                "--artifacts-destination",
                str(self.root / "artifacts"),
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )

    def wait_healthy(self) -> None:
        deadline = time.monotonic() + SERVER_BOOT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(
                    f"mlflow server exited {self.proc.returncode}: {(self.root / 'server.log').read_text()[-2000:]}"
                )
            try:
                with urllib.request.urlopen(f"{self.uri}/health", timeout=2) as resp:
                    if resp.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.2)
        pytest.fail("mlflow server not healthy in time")

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)  # the group this test started (uvicorn is a child)
            self.proc.wait(timeout=10)
        if self.proc is not None and not self.log.closed:
            self.log.close()


@pytest.fixture(scope="module", autouse=True)
def server(tmp_path_factory):
    """Started when this module starts (it takes seconds to boot), so the
    SQLite tests above run meanwhile; killed at the end."""
    root = tmp_path_factory.mktemp("mlflow-server")
    srv = Server(root)
    srv.start()
    yield srv
    srv.kill()


def test_server_killed_mid_sweep_then_restarted(tmp_path, server):
    d = make_results(tmp_path / "results", reps=2)
    server.wait_healthy()
    tracker = Tracker(server.uri, None, d)
    tracker.start()
    tracker.submit(["c1", "c2", "c3"])
    # What a sweep's commits do while the server dies: more rows, submitted.
    write_part(d, {"c1": range(2, 4)}, "1", seed=2)
    server.kill()
    write_part(d, {"c2": range(2, 5), "c3": range(2, 3)}, "2", seed=3)
    tracker.submit(["c1", "c2", "c3"])
    report = tracker.close(stall=30)
    assert report.failed and server.uri in report.error  # -> `schedlab run` exits 3

    server.start()  # same port, same backend store
    server.wait_healthy()
    tracker = Tracker(server.uri, None, d)  # the resume's tracker
    tracker.start()
    assert tracker.close(stall=60) == TrackReport(3, False, None)
    assert_mirrors(server.uri, d)
