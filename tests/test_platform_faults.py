"""Faults with real processes on Ray (``backend = "ray"``; the local backend's
are in test_backends.py): the driver SIGKILLed mid-sweep (then resumed),
and a Ray worker SIGKILLed mid-task (Ray retries it).

Every sweep runs as ``schedlab run`` in a subprocess started in its own
session, with a private Ray temp dir (``RAY_TMPDIR``) and token auth with a
fresh token, so it starts its own in-process Ray and cannot touch (or be
joined to) another Ray on this host. A driver's Ray processes (GCS, raylet,
workers) stay in its session, so clean-up -- also after a SIGKILL or a
failed assertion -- kills exactly that session's processes (never ``ray stop``,
which would stop every Ray on the host).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import schedlab
from tests.processes import cmdline, kill_session, proc_stat, session_members, sigint_as_at_a_terminal

SCHEDLAB = [sys.executable, "-m", "schedlab.cli"]
TIMING = ["sim_seconds"]  # wall-clock columns: the only ones allowed to differ
RUN_TIMEOUT = 120.0


@pytest.fixture
def ray_env():
    """A factory of environments for `schedlab run` subprocesses: each with a
    private Ray temp dir (short: Ray's Unix socket paths live under it), no
    inherited cluster address, and token auth with a fresh token (the user's
    ~/.ray/auth_token is not touched)."""
    temp_dirs: list[str] = []

    def make() -> dict[str, str]:
        temp_dirs.append(tempfile.mkdtemp(prefix="slray-", dir="/tmp"))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_ADDRESS", "RAY_AUTH_"))}
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
def sweep_process(spec: Path, env: dict[str, str], cwd: Path, *extra: str):
    """`schedlab run SPEC --no-tracking --no-progress` in its own session;
    its whole session is killed on the way out, whatever happened."""
    out, err = open(cwd / f"{spec.stem}.out", "w+"), open(cwd / f"{spec.stem}.err", "w+")
    proc = subprocess.Popen(
        [*SCHEDLAB, "run", str(spec), "--no-tracking", "--no-progress", *extra],
        env=env,
        cwd=cwd,
        stdout=out,
        stderr=err,
        text=True,
        start_new_session=True,
        preexec_fn=sigint_as_at_a_terminal,
    )
    try:
        yield proc
    finally:
        kill_session(proc)
        out.close()
        err.close()


def output_of(spec: Path, cwd: Path) -> str:
    return (cwd / f"{spec.stem}.out").read_text() + (cwd / f"{spec.stem}.err").read_text()


def finish(proc: subprocess.Popen, spec: Path, cwd: Path) -> str:
    """Wait for a sweep started with `sweep_process`; its output if it succeeded."""
    try:
        rc = proc.wait(timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"`schedlab run {spec}` timed out:\n{output_of(spec, cwd)[-4000:]}")
    text = output_of(spec, cwd)
    assert rc == 0, f"`schedlab run {spec}` exited {rc}:\n{text[-4000:]}"
    return text


def write_spec(path: Path, name: str, out_dir: Path, body: str) -> Path:
    path.write_text(
        f'name = "{name}"\nengine = "queue"\n'
        + textwrap.dedent(body)
        + f'\n[outputs]\ndir = "{out_dir}"\nper_job = true\n\n[tracking]\nenabled = false\n'
    )
    return path


def wait_for(predicate, proc: subprocess.Popen, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if proc.poll() is not None:
            pytest.fail(f"the sweep exited ({proc.returncode}) before {what}")
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.05)


def summary(results_dir: Path) -> pl.DataFrame:
    return schedlab.load(results_dir).collect().drop(TIMING).sort("config_id", "replication")


def jobs(results_dir: Path) -> pl.DataFrame:
    frame = schedlab.load(results_dir, "jobs").collect().sort("config_id", "replication", "job_id")
    return frame.select(sorted(frame.columns))


# ---- a. the driver SIGKILLed mid-sweep ------------------------------------------------
DRIVER_SWEEP = """\
    seed = 21
    policies = ["PS", "SRPT", "LAS", "PSBS"]

    [workload]
    kind = "synthetic"
    njobs = 10000
    shape = [0.25, 1.0]
    sigma = 1.0

    [replications]
    n = 10

    [execution]
    backend = "ray"
    task_jobs = 40000
    """  # 80 rows, 800k per-job rows, 20 tasks; ~15 s locally on 2 cores


def test_driver_sigkill_then_resume_equals_uninterrupted_run(tmp_path, ray_env):
    killed_dir, reference_dir = tmp_path / "killed", tmp_path / "reference"
    spec = write_spec(tmp_path / "driver.toml", "faults-driver", killed_dir, DRIVER_SWEEP)
    reference = write_spec(tmp_path / "reference.toml", "faults-driver", reference_dir, DRIVER_SWEEP)
    total = 2 * 4 * 10

    def committed() -> bool:
        return any((killed_dir / "summary").glob("*/part-*.parquet"))

    with sweep_process(spec, ray_env(), tmp_path) as proc:
        wait_for(committed, proc, RUN_TIMEOUT, "the first summary commit")
        os.killpg(proc.pid, signal.SIGKILL)  # the driver's process group (Ray workers go with the session)
        proc.wait(timeout=10)
    assert proc.returncode == -signal.SIGKILL
    assert not session_members(proc.pid), "processes of the killed sweep survived clean-up"

    on_disk = schedlab.load(killed_dir).select(pl.len()).collect().item()
    assert 0 < on_disk < total, f"the kill did not land mid-sweep ({on_disk} of {total} rows on disk)"

    # Resume, and meanwhile run the same spec uninterrupted in another dir (its own Ray).
    with sweep_process(reference, ray_env(), tmp_path) as ref_proc:
        with sweep_process(spec, ray_env(), tmp_path) as resume_proc:
            resumed = finish(resume_proc, spec, tmp_path)
        finish(ref_proc, reference, tmp_path)
    assert re.search(rf"\b{total - on_disk} rows written, {on_disk} already on disk\b", resumed), resumed[-2000:]

    got, want = summary(killed_dir), summary(reference_dir)
    assert got.height == total
    assert got.select("config_id", "replication").is_duplicated().sum() == 0
    assert_frame_equal(got, want.select(got.columns), check_exact=True)

    got_jobs, want_jobs = jobs(killed_dir), jobs(reference_dir)
    assert got_jobs.height == 10_000 * total
    assert got_jobs.select("config_id", "replication", "job_id").is_duplicated().sum() == 0
    assert_frame_equal(got_jobs, want_jobs, check_exact=True)
    assert not (killed_dir / "failures").exists()
    assert not any((killed_dir / ".tmp").glob("*")), "temp files left behind"


# ---- b. a Ray worker SIGKILLed mid-task -------------------------------------------------
WORKER_SWEEP = """\
    seed = 5
    policies = ["LAS", "PSBS", "SRPTE+LAS"]

    [workload]
    kind = "synthetic"
    njobs = 20000
    shape = [0.25, 1.0]

    [replications]
    n = 6

    [execution]
    backend = "ray"
    task_jobs = 120000
    retries = 2
    """  # 36 rows, 6 tasks of 2 instances each (~2 s per task)


def running_task(sid: int, name: str) -> list[int]:
    """Workers of session ``sid`` executing a task ``name`` (Ray sets a worker's
    process title to ``ray::<task name>`` while it runs a task)."""
    return [pid for pid in session_members(sid) if cmdline(pid).startswith(f"ray::{name}")]


def test_worker_sigkill_mid_task_is_retried(tmp_path, ray_env):
    out_dir = tmp_path / "out"
    spec = write_spec(tmp_path / "worker.toml", "faults-worker", out_dir, WORKER_SWEEP)
    total = 2 * 3 * 6

    with sweep_process(spec, ray_env(), tmp_path) as proc:
        first_seen: dict[int, float] = {}
        victim = None

        def mid_task() -> bool:
            nonlocal victim
            now = time.monotonic()
            for pid in running_task(proc.pid, "run_instances"):
                # 0.5 s into a ~2 s task: surely mid-task, not between tasks.
                if now - first_seen.setdefault(pid, now) >= 0.5 and cmdline(pid).startswith("ray::run_instances"):
                    os.kill(pid, signal.SIGKILL)
                    victim = pid
                    return True
            return False

        wait_for(mid_task, proc, RUN_TIMEOUT, "a worker running run_instances")
        try:
            rc = proc.wait(timeout=RUN_TIMEOUT)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the sweep did not finish after the worker was killed:\n{output_of(spec, tmp_path)[-4000:]}")
    text = output_of(spec, tmp_path)
    assert rc == 0, f"exit {rc}:\n{text[-4000:]}"
    assert proc_stat(victim) is None or proc_stat(victim)[0] == "Z"
    # Ray's death notice for the worker names its PID (sent to the driver's log).
    assert re.search(rf"\bPID\W+{victim}\b", text), f"no report of worker {victim} dying:\n{text[-4000:]}"
    assert re.search(rf"\b{total} rows written, 0 already on disk\b", text), text[-2000:]

    rows = summary(out_dir)
    assert rows.height == total
    assert rows.select("config_id", "replication").is_duplicated().sum() == 0
    assert not (out_dir / "failures").exists()
    per_job = schedlab.load(out_dir, "jobs").select("config_id", "replication", "job_id").collect()
    assert per_job.height == 20_000 * total
    assert per_job.is_duplicated().sum() == 0


# ---- c. Ctrl-C: a clean stop that leaves a resumable state ----------------------------
def test_ctrl_c_commits_what_arrived_and_resumes(tmp_path, ray_env):
    out_dir = tmp_path / "interrupted"
    spec = write_spec(tmp_path / "ctrlc.toml", "faults-ctrlc", out_dir, DRIVER_SWEEP)
    total = 2 * 4 * 10

    with sweep_process(spec, ray_env(), tmp_path) as proc:
        wait_for(
            lambda: any((out_dir / "summary").glob("*/part-*.parquet")), proc, RUN_TIMEOUT, "the first summary commit"
        )
        os.kill(proc.pid, signal.SIGINT)  # what Ctrl-C sends to the driver
        rc = proc.wait(timeout=60)
    text = output_of(spec, tmp_path)
    assert rc == 130, text[-3000:]
    assert "interrupted" in text and "run again to resume" in text and "Traceback" not in text
    on_disk = schedlab.load(out_dir).select(pl.len()).collect().item()
    assert 0 < on_disk <= total

    with sweep_process(spec, ray_env(), tmp_path) as proc:
        text = finish(proc, spec, tmp_path)
    rows = schedlab.load(out_dir).collect()
    assert rows.height == total
    assert rows.select("config_id", "replication").is_duplicated().sum() == 0
    assert f"{on_disk} already on disk" in text


def test_ctrl_c_stops_a_pipeline_with_one_line_and_exit_130(tmp_path, ray_env):
    """`schedlab pipelines run` answers Ctrl-C as `run` does: what arrived is
    committed, one line says so, exit 130, no traceback."""
    out_dir = tmp_path / "pipe"
    out, err = open(tmp_path / "pipe.out", "w+"), open(tmp_path / "pipe.err", "w+")
    proc = subprocess.Popen(
        [*SCHEDLAB, "pipelines", "run", "dfrs-fig1", "--scale", "quick", "--out", str(out_dir), "--no-tracking"],
        env=ray_env(),
        cwd=tmp_path,
        stdout=out,
        stderr=err,
        text=True,
        start_new_session=True,
        preexec_fn=sigint_as_at_a_terminal,
    )
    try:
        wait_for(
            lambda: any(out_dir.glob("*/summary/*/part-*.parquet")),
            proc,
            RUN_TIMEOUT,
            "the pipeline's first summary commit",
        )
        os.kill(proc.pid, signal.SIGINT)  # what Ctrl-C sends to the driver
        rc = proc.wait(timeout=60)
    finally:
        kill_session(proc)
        out.close()
        err.close()
    text = (tmp_path / "pipe.out").read_text() + (tmp_path / "pipe.err").read_text()
    assert rc == 130, text[-3000:]
    assert "Traceback" not in text
    said = [line for line in text.splitlines() if line.startswith("schedlab: ")]
    assert len(said) == 1 and "run again to resume" in said[0], text[-3000:]


def test_ctrl_c_while_a_sweep_compacts_stops_the_pipeline_before_its_next_sweep(tmp_path, monkeypatch):
    """Ctrl-C that lands while a sweep compacts its part files (after its last
    commit) leaves that sweep complete and reported; a pipeline must then stop
    with `Interrupted` instead of starting its next sweep (it went on, and
    `pipelines run` exited 0 after a Ctrl-C). The compaction is our own seam:
    it raises the KeyboardInterrupt the signal handler would."""
    from schedlab.pipelines.registry import get_pipeline
    from schedlab.pipelines.run import run_pipeline
    from schedlab.platform.execution.report import Interrupted
    from schedlab.platform.storage import compact

    def interrupted(store):
        raise KeyboardInterrupt

    monkeypatch.setattr(compact, "compact_locked", interrupted)
    first, second = [s["name"] for s in get_pipeline("pg-fig3").specs("smoke", {})]
    out = tmp_path / "pipe"
    with pytest.raises(Interrupted, match="run again to resume"):
        run_pipeline("pg-fig3", scale="smoke", out=out, tracking=False, backend="local")
    assert len(schedlab.load(out / first).collect()) > 0  # the first sweep is complete on disk
    assert not (out / second).exists(), "the pipeline started its next sweep after a Ctrl-C"
    logged = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]
    assert logged[-1]["interrupted"] is True
