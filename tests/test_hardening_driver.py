"""One sweep through every fault of issue 13, with real processes: `schedlab
run` subprocesses (own session, private Ray temp dir, token auth), a real
SQLite MLflow store created by the first (killed) run, SIGKILLs of the
driver's process group at seeded moments, a second driver on the same results
dir, a file size limit put on the running driver (EFBIG: disk full as root
sees it), a tracking server that is not there, and at the end MLflow checked
against the rows on disk.

Kill moments come from ``SCHEDLAB_KILL_SEED`` (default `SEED`); each run of the
scenario prints where its kills landed.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import random
import re
import resource
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy import stats

import schedlab
from tests.processes import cmdline, kill_session, session_members

SCHEDLAB = [sys.executable, "-m", "schedlab.cli"]
SEED = int(os.environ.get("SCHEDLAB_KILL_SEED", "13"))
RUN_TIMEOUT = 180.0
REL = 1e-12  # numpy/scipy vs polars aggregation: last-bit differences only
#: RLIMIT_FSIZE put on the running driver: summary files fit, per-job files do not.
FSIZE_LIMIT = 64 * 1024
#: How a listening socket's local address looks in /proc/net/tcp{,6} when bound to loopback.
LOOPBACK = {"tcp": {"0100007F"}, "tcp6": {"0000000000000000FFFF00000100007F", "00000000000000000000000001000000"}}

POLICIES = ["PS", "SRPT", "LAS"]
SHAPES = [0.5, 1.0]
REPS = 6
#: Long enough that a kill within a second of the first commit lands mid-sweep and the disk-full run
#: still has tasks to run: the Python reference engine ([execution] engine_path), ~0.1-0.3 s a simulation.
NJOBS = 30_000
TOTAL = len(POLICIES) * len(SHAPES) * REPS
SWEEP = f"""\
    seed = 8
    policies = {POLICIES!r}

    [workload]
    kind = "synthetic"
    njobs = {NJOBS}
    shape = {SHAPES!r}

    [replications]
    n = {REPS}

    [execution]
    backend = "ray"
    task_jobs = {NJOBS * len(POLICIES)}
    engine_path = "reference"
    """.replace("'", '"')  # 36 rows, 12 tasks, 1.08M per-job rows: several seconds of simulation on 2 cores


@pytest.fixture
def ray_env():
    """Environments for `schedlab run` subprocesses: private Ray temp dir, no
    inherited cluster address, token auth with a fresh token."""
    temp_dirs: list[str] = []

    def make() -> dict[str, str]:
        temp_dirs.append(tempfile.mkdtemp(prefix="slray-", dir="/tmp"))
        env = {
            k: v for k, v in os.environ.items() if not k.startswith(("RAY_ADDRESS", "RAY_AUTH_", "MLFLOW_TRACKING_URI"))
        }
        env.update(
            RAY_TMPDIR=temp_dirs[-1],
            RAY_AUTH_MODE="token",
            RAY_AUTH_TOKEN=secrets.token_hex(32),
            RAY_USAGE_STATS_ENABLED="0",
            PYTHONUNBUFFERED="1",
        )
        return env

    yield make
    for d in temp_dirs:
        shutil.rmtree(d, ignore_errors=True)


@contextlib.contextmanager
def driver(name: str, args: list[str], env: dict[str, str], cwd: Path):
    """`schedlab ARGS` in its own session; the whole session is killed on the way out."""
    out = open(cwd / f"{name}.log", "w+")
    proc = subprocess.Popen(
        [*SCHEDLAB, *args], env=env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )
    proc.log = cwd / f"{name}.log"
    try:
        yield proc
    finally:
        kill_session(proc)
        out.close()


def wait_exit(proc: subprocess.Popen, timeout: float = RUN_TIMEOUT) -> tuple[int, str]:
    try:
        rc = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{' '.join(proc.args)} timed out:\n{proc.log.read_text()[-3000:]}")
    return rc, proc.log.read_text()


def poll(predicate, proc: subprocess.Popen | None, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if proc is not None and proc.poll() is not None:
            pytest.fail(f"exited ({proc.returncode}) before {what}:\n{proc.log.read_text()[-3000:]}")
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.05)


def sigkill_group(proc: subprocess.Popen) -> None:
    os.killpg(proc.pid, signal.SIGKILL)  # the driver's process group; Ray's go with kill_session
    proc.wait(timeout=10)
    kill_session(proc)


def holds_lock(d: Path, proc: subprocess.Popen) -> bool:
    """The driver wrote its pid into the results dir's lock file (it does so once it holds the lock)."""
    try:
        return f"pid {proc.pid}" in (d / ".lock").read_text()
    except OSError:
        return False


def running_tasks(proc: subprocess.Popen) -> bool:
    """A Ray worker of the driver's session is running a sweep task."""
    return any(cmdline(pid).startswith("ray::run_instances") for pid in session_members(proc.pid))


def summary_files(d: Path) -> int:
    return len(list((d / "summary").glob("*/part-*.parquet")))


def rows_on_disk(d: Path) -> int:
    return schedlab.load(d).select(pl.len()).collect().item() if summary_files(d) else 0


def listening(pids: list[int]) -> list[tuple[int, str, str, int]]:
    """(pid, tcp|tcp6, local address as in /proc/net, port) of the LISTEN sockets of ``pids``."""
    owner = {}
    for pid in pids:
        with contextlib.suppress(OSError):
            for fd in os.listdir(f"/proc/{pid}/fd"):
                with contextlib.suppress(OSError):
                    target = os.readlink(f"/proc/{pid}/fd/{fd}")
                    if target.startswith("socket:["):
                        owner[target[8:-1]] = pid
    out = []
    for proto in ("tcp", "tcp6"):
        with open(f"/proc/net/{proto}") as fh:
            next(fh)
            for line in fh:
                f = line.split()
                if f[3] == "0A" and f[9] in owner:  # 0A: LISTEN
                    addr, port = f[1].split(":")
                    out.append((owner[f[9]], proto, addr, int(port, 16)))
    return out


def expected(d: Path) -> dict[str, dict]:
    rows = schedlab.load(d).collect()
    metrics = [
        c
        for c, t in rows.schema.items()
        if t.is_numeric() and c not in ("replication", "shape", "njobs") and c in ("mst", "slowdown_p99")
    ]
    out = {}
    for cid in sorted(set(rows["config_id"])):
        sub = rows.filter(pl.col("config_id") == cid)
        n = sub.height
        values = {"n": float(n)}
        for m in metrics:
            x = sub[m].to_numpy().astype(float)
            values[m] = float(np.mean(x))
            ci = float(stats.t.ppf(0.975, n - 1) * np.std(x, ddof=1) / np.sqrt(n))
            if ci > 0:  # logged only when positive
                values[f"{m}_ci95"] = ci
        reps = ",".join(str(r) for r in sorted(sub["replication"].to_list()))
        out[cid] = {"values": values, "rows": str(n), "digest": hashlib.sha256(reps.encode()).hexdigest()[:16]}
    return out


def test_a_sweep_through_kills_a_second_driver_disk_full_and_tracking_down(tmp_path, ray_env):
    rng = random.Random(SEED)
    out_dir, db = tmp_path / "out", tmp_path / "mlflow.db"
    spec = tmp_path / "sweep.toml"
    spec.write_text(
        'name = "hardening-driver"\nengine = "queue"\n'
        + textwrap.dedent(SWEEP)
        + f'\n[outputs]\ndir = "{out_dir}"\nper_job = true\n\n'
        f'[tracking]\nuri = "sqlite:///{db}"\n'
    )
    run = ["run", str(spec), "--no-progress"]
    landed: list[str] = []

    # 1. Killed at a seeded moment after start: store creation, Ray start-up or the first tasks.
    t1 = rng.uniform(0.5, 4.0)
    with driver("run1", run, ray_env(), tmp_path) as proc:
        time.sleep(t1)  # the kill moment itself (not a synchronisation)
        if proc.poll() is None:
            sigkill_group(proc)
    landed.append(
        f"kill 1 at {t1:.2f} s: rc {proc.returncode}, {rows_on_disk(out_dir)} rows on disk, "
        f"mlflow.db {'present' if db.exists() else 'absent'}"
    )
    assert proc.returncode == -signal.SIGKILL, landed[-1]

    # 2. A driver that is killed mid-sweep; meanwhile a second driver and the sockets are checked.
    with driver("run2", run, ray_env(), tmp_path) as proc:
        before = summary_files(out_dir)
        poll(lambda: holds_lock(out_dir, proc), proc, RUN_TIMEOUT, "run 2 to take the lock")
        with driver("second", run, ray_env(), tmp_path) as second:
            rc2, text2 = wait_exit(second, 60)
        poll(lambda: summary_files(out_dir) > before, proc, RUN_TIMEOUT, "run 2's first commit")
        socks = [
            (pid, cmdline(pid), proto, addr, port) for pid, proto, addr, port in listening(session_members(proc.pid))
        ]
        t2 = rng.uniform(0.0, 1.0)
        time.sleep(t2)  # the kill moment
        mid = proc.poll() is None
        if mid:
            sigkill_group(proc)
    landed.append(
        f"kill 2 at {t2:.2f} s after run 2's first commit: "
        f"{'mid-sweep' if mid else 'after it ended'}, {rows_on_disk(out_dir)} rows on disk"
    )
    # Local means local: GCS, raylet, agents and workers listen on loopback only.
    exposed = [
        (pid, cmd[:60], proto, addr, port) for pid, cmd, proto, addr, port in socks if addr not in LOOPBACK[proto]
    ]
    assert not exposed, f"listening beyond loopback: {exposed}"
    names = {cmd.split()[0].rsplit("/", 1)[-1] for _, cmd, *_ in socks if cmd}
    assert {"gcs_server", "raylet"} <= names, (names, socks)
    # One writer: the second driver stopped at once with one line, exit 2.
    assert rc2 == 2, text2[-2000:]
    assert len(text2.strip().splitlines()) == 1 and f"{out_dir}: in use by another process" in text2, text2

    # 3. Disk full: a file size limit put on the running driver once its tasks run (Ray's own
    #    processes, started by then, keep theirs), before its first commit.
    with driver("run3", run, ray_env(), tmp_path) as proc:
        before = summary_files(out_dir)
        poll(lambda: running_tasks(proc), proc, RUN_TIMEOUT, "run 3's first task")
        assert summary_files(out_dir) == before, "run 3 committed before its first task was seen"
        resource.prlimit(proc.pid, resource.RLIMIT_FSIZE, (FSIZE_LIMIT, FSIZE_LIMIT))
        rc3, text3 = wait_exit(proc)
    landed.append(f"disk full on run 3: rc {rc3}, {rows_on_disk(out_dir)} rows on disk")
    assert rc3 == 2, text3[-3000:]
    errors = [line for line in text3.splitlines() if line.startswith("schedlab: error:")]
    assert len(errors) == 1 and "cannot write results (File too large" in errors[0], text3[-3000:]
    assert "Traceback" not in text3
    keys = schedlab.load(out_dir).select("config_id", "replication").collect()
    job_keys = schedlab.load(out_dir, "jobs").select("config_id", "replication").unique().collect()
    assert keys.is_duplicated().sum() == 0
    assert job_keys.sort(pl.all()).equals(keys.sort(pl.all())), "per-job rows without their summary (or lost)"
    assert not list((out_dir / ".tmp").glob("*"))

    # 4. Space is back but the tracking server is not there: rows complete, exit 3, what to do said.
    dead = f"http://127.0.0.1:{free_port()}"
    with driver("run4", [*run, "--tracking-uri", dead], ray_env(), tmp_path) as proc:
        rc4, text4 = wait_exit(proc)
    assert rc4 == 3, text4[-3000:]
    assert f"`schedlab track {out_dir}` finishes it" in text4 and dead in text4, text4[-2000:]
    assert rows_on_disk(out_dir) == TOTAL

    # 5. The next run (tracking to the SQLite store again): nothing to simulate, MLflow reconciled.
    with driver("run5", run, ray_env(), tmp_path) as proc:
        rc5, text5 = wait_exit(proc)
    assert rc5 == 0, text5[-3000:]
    assert re.search(rf"\b0 rows written, {TOTAL} already on disk\b", text5), text5[-2000:]
    assert f"MLflow: {len(POLICIES) * len(SHAPES)} configuration runs match" in text5, text5[-2000:]
    print("\n".join(landed))
    assert not list(tmp_path.glob(".mlflow.db.creating-*")), "a killed creator's temporary store was left"

    rows = schedlab.load(out_dir).collect()
    assert rows.height == TOTAL and rows.select("config_id", "replication").is_duplicated().sum() == 0
    jobs = schedlab.load(out_dir, "jobs").select("config_id", "replication", "job_id").collect()
    assert jobs.height == TOTAL * NJOBS and jobs.is_duplicated().sum() == 0

    assert_mlflow_matches(db, out_dir)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def assert_mlflow_matches(db: Path, out_dir: Path) -> None:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{db}")
    exp = client.get_experiment_by_name("hardening-driver")
    runs = client.search_runs([exp.experiment_id], max_results=1000)
    parents = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    children = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
    assert len(parents) == 1
    want = expected(out_dir)
    assert sorted(r.data.tags["schedlab.config_id"] for r in children) == sorted(want)
    for r in children:
        w = want[r.data.tags["schedlab.config_id"]]
        assert r.info.status == "FINISHED" and r.data.tags["mlflow.parentRunId"] == parents[0].info.run_id
        assert (r.data.tags["schedlab.rows"], r.data.tags["schedlab.rows_digest"]) == (w["rows"], w["digest"])
        for k, v in w["values"].items():
            assert r.data.metrics[k] == pytest.approx(v, rel=REL), k


CAMPAIGN = int(os.environ.get("SCHEDLAB_KILL_CAMPAIGN", "0"))


@pytest.mark.skipif(not CAMPAIGN, reason="a long kill campaign: SCHEDLAB_KILL_CAMPAIGN=<number of kills>")
def test_kill_campaign(tmp_path, ray_env):
    """SIGKILLs at seeded moments spread over a whole run (store creation, Ray
    start, commits, the final reconcile), one after another on one results dir
    and one SQLite store; whenever a run gets to finish (exit 0) MLflow must
    match the rows, and the next run starts over with --fresh (its runs are
    then replaced). Prints every moment and what was on disk after it."""
    rng = random.Random(SEED)
    out_dir, db = tmp_path / "out", tmp_path / "mlflow.db"
    spec = tmp_path / "sweep.toml"
    spec.write_text(
        'name = "hardening-driver"\nengine = "queue"\n'
        + textwrap.dedent(SWEEP)
        + f'\n[outputs]\ndir = "{out_dir}"\nper_job = true\n\n'
        f'[tracking]\nuri = "sqlite:///{db}"\n'
    )
    log, kills, fresh = [], 0, []
    while kills < CAMPAIGN:
        moment = rng.uniform(0.5, 25.0)
        with driver(f"c{len(log)}", ["run", str(spec), "--no-progress", *fresh], ray_env(), tmp_path) as proc:
            try:
                rc = proc.wait(timeout=moment)
            except subprocess.TimeoutExpired:
                sigkill_group(proc)
                rc = proc.returncode
        text = proc.log.read_text()
        if rc == -signal.SIGKILL:
            kills += 1
            fresh = []
        else:
            assert rc == 0, text[-3000:]
            assert_mlflow_matches(db, out_dir)
            fresh = ["--fresh"]
        log.append(f"{moment:5.2f} s: rc {rc}, {rows_on_disk(out_dir)} rows, db {'yes' if db.exists() else 'no'}")
    with driver("final", ["run", str(spec), "--no-progress"], ray_env(), tmp_path) as proc:
        rc, text = wait_exit(proc)
    assert rc == 0, text[-3000:]
    assert rows_on_disk(out_dir) == TOTAL
    assert_mlflow_matches(db, out_dir)
    print("\n" + "\n".join(log))
