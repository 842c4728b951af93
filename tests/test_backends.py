"""Where a sweep's tasks run (schedlab.platform.execution.backends): the same
rows, bit for bit, in the driver's process, in a local pool and on Ray; the
auto rule; a pool's dead worker retried, then recorded; the summary line;
a local run killed (Ctrl-C, then SIGKILL) resumes to the rows of an
uninterrupted run."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner
from polars.testing import assert_frame_equal

import schedlab
from schedlab.errors import UserError
from schedlab.platform.execution import backends, local_backend
from schedlab.platform.execution.backends import Auto, choose
from schedlab.platform.execution.executor import Executor, Lost, Task, TaskCall
from schedlab.platform.execution.runner import run_sweep
from schedlab.platform.planning.plan import build_plan
from schedlab.platform.planning.validate import parse_spec
from tests.processes import kill_session, session_members, sigint_as_at_a_terminal

TIMING = ["sim_seconds"]  # wall-clock columns: the only ones allowed to differ
SCHEDLAB = [sys.executable, "-m", "schedlab.cli"]
RUN_TIMEOUT = 120.0

#: A generator of the test's own: ``pause`` seconds per instance (a slow sweep
#: whose rows do not depend on time), and with ``crash_marker`` the process
#: that first builds an instance dies (os._exit), as a worker killed mid-task.
GENERATOR = """\
import os
import time

import numpy as np
import polars as pl


def slow(rng, *, njobs: int = 200, load: float = 0.8, pause: float = 0.0, crash_marker: str = ""):
    if crash_marker and not os.path.exists(crash_marker):
        open(crash_marker, "w").close()
        os._exit(1)
    time.sleep(pause)
    submit = np.cumsum(rng.exponential(1.0 / load, njobs))
    size = rng.weibull(0.5, njobs)
    return pl.DataFrame({"job_id": np.arange(njobs), "submit": submit, "size": size, "estimate": size})
"""


def spec_of(tmp_path: Path, name: str, **changes):
    data = {
        "name": name,
        "engine": "queue",
        "seed": 11,
        "policies": ["FIFO", "PS", "PSBS", "LAS"],
        "workload": {"kind": "synthetic", "njobs": 300, "shape": [0.5, 2.0], "sigma": 1.0},
        "replications": {"metric": "mst", "rel_halfwidth": 0.0001, "min": 2, "max": 3, "batch": 1},
        "outputs": {"dir": str(tmp_path / name), "per_job": True},
        "tracking": {"enabled": False},
        "execution": {"num_cpus": 2},
    }
    data.update(changes)
    return parse_spec(data, f"{name}.toml", tmp_path)


def rows(results_dir, table: str = "summary") -> pl.DataFrame:
    frame = schedlab.load(results_dir, table).collect()
    keys = ["config_id", "replication"] + (["job_id"] if table == "jobs" else [])
    frame = frame.drop([c for c in TIMING if c in frame.columns]).sort(keys)
    return frame.select(sorted(frame.columns))


@pytest.fixture
def ray_owner():
    """A test below starts local Ray itself (``backend = "ray"``); stop it after."""
    yield
    import ray

    from schedlab.platform.execution import runner

    if ray.is_initialized():
        ray.shutdown()
    runner.forget_ray()


def test_rows_are_bit_identical_in_process_in_a_pool_and_on_ray(tmp_path, ray_owner, monkeypatch):
    """An adaptive sweep with per-job rows and a user generator: every Parquet
    row (summary and per-job) the same, bit for bit, whatever ran the tasks."""
    (tmp_path / "slowgen.py").write_text(GENERATOR)
    workload = {"use": "slowgen.py:slow", "njobs": [200, 400], "load": 0.9}
    on_ray = run_sweep(spec_of(tmp_path, "ray", workload=workload), backend="ray")
    import ray

    ray.shutdown()
    in_process = run_sweep(spec_of(tmp_path, "inproc", workload=workload), backend="local")
    monkeypatch.setattr(backends, "IN_PROCESS_SECONDS", 0.0)  # any estimate asks for the pool
    monkeypatch.setattr(backends, "COLD_POOL_SECONDS", 0.0)
    pooled = run_sweep(spec_of(tmp_path, "pool", workload=workload), backend="local")

    assert (on_ray.backend, in_process.backend) == ("on Ray", "in-process")
    assert pooled.backend == "in a local pool of 2 processes" and "> 0 s" in pooled.backend_why
    for report in (on_ray, in_process, pooled):
        assert not report.failures and report.rounds == 2
        assert report.rows_written == 2 * 4 * 3  # 2 points x 4 policies x 3 replications (max)
    for table in ("summary", "jobs"):
        want = rows(tmp_path / "ray", table)
        assert want.height == (24 if table == "summary" else 4 * 3 * 600)
        assert_frame_equal(rows(tmp_path / "inproc", table), want, check_exact=True)
        assert_frame_equal(rows(tmp_path / "pool", table), want, check_exact=True)


def test_failures_are_recorded_locally_and_the_sweep_goes_on(tmp_path):
    spec = spec_of(
        tmp_path,
        "fail",
        workload={"kind": "synthetic", "njobs": 200, "shape": [1.0, 0.001]},
        replications={"n": 3},
        outputs={"dir": str(tmp_path / "fail"), "per_job": False},
    )
    report = run_sweep(spec, backend="local")
    assert report.backend == "in-process" and report.rows_written == 12  # the shape = 1 point
    assert len(report.failures) == 12 and all("too extreme" in f["error"] for f in report.failures)
    assert schedlab.load(spec.results_dir(), "failures").collect().height == 12


def test_a_pool_retries_a_dead_workers_task_then_records_it(tmp_path):
    """A pool process that dies mid-task (the generator's os._exit) breaks the
    pool: its task goes to a new pool and succeeds; with retries = 0 it
    becomes a `Lost` (failure records), as on Ray."""
    (tmp_path / "slowgen.py").write_text(GENERATOR)
    spec = spec_of(
        tmp_path,
        "crash",
        workload={"use": "slowgen.py:slow", "njobs": 100, "crash_marker": str(tmp_path / "marker")},
        replications={"n": 1},
    )
    plan = build_plan(spec)
    call = TaskCall(plan.engine, False, plan.metrics, "fast")
    work = [(inst, list(inst.point.configs)) for inst in plan.instances([0])]

    def finish(retries: int) -> list:
        pool = local_backend.Pool(call, 2, retries)
        pool.submit(Task(work, 400))
        got = []
        while pool.in_flight:
            got += pool.wait(5.0)
        return got

    ((task, result),) = finish(retries=1)
    assert not isinstance(result, Lost) and len(result.parts[0].keys) == 1 and not result.failures
    assert sorted(p.policy for p in result.parts) == ["FIFO", "LAS", "PS", "PSBS"]
    (tmp_path / "marker").unlink()
    ((task, result),) = finish(retries=0)
    assert isinstance(result, Lost) and "after 0 retries: BrokenProcessPool" in result.text


class _Fake(Executor):
    """An in-process stand-in whose tasks report ``busy`` seconds per job-run."""

    def __init__(self, per_unit: float, cold_first: bool = False) -> None:
        self.per_unit, self.cold, self.cold_first, self.queue = per_unit, False, cold_first, []
        self.name = "in-process"

    def slots(self) -> float:
        return 1.0

    def max_in_flight(self) -> int:
        return 1

    @property
    def in_flight(self) -> int:
        return len(self.queue)

    def submit(self, task: Task) -> None:
        self.queue.append(task)

    def wait(self, timeout: float) -> list:
        from schedlab.platform.execution.tasks import TaskResult

        task = self.queue.pop(0)
        self.cold, self.cold_first = self.cold_first, False
        busy = 100.0 if self.cold else task.units * self.per_unit  # a cold first task: one-off imports
        return [(task, TaskResult([], [], [], 0.0, stages={"engine": busy, "warmup": 5.0, "task": busy + 5}))]

    def cancel(self) -> None:
        self.queue.clear()


def _auto(
    per_unit: float, allow_ray: bool = True, cpus: int = 2, cold_first: bool = False, warm: bool = False
) -> tuple[Auto, list]:
    made: list[str] = []

    def make(tier):
        made.append(tier)
        return _Fake(per_unit, cold_first) if tier == "in-process" else _Fake(per_unit)

    return Auto(make, allow_ray=allow_ray, cpus=cpus, why="auto", pool_warm=lambda: warm), made


@pytest.mark.parametrize(
    "per_unit,allow_ray,cpus,warm,tier,reason",
    [
        (1e-6, True, 2, False, "in-process", "<= 10 s (a new pool)"),  # 1M job-runs x 1 us = 1 s
        (5e-6, True, 2, False, "in-process", "<= 10 s (a new pool)"),  # 5 s: not worth a new pool
        (5e-6, True, 2, True, "pool", "> 3 s and <= 120 s (a warm pool)"),  # ... but worth a warm one
        (2e-5, True, 2, False, "pool", "> 10 s and <= 120 s (a new pool)"),  # 20 s
        (1e-3, True, 2, False, "ray", "> 120 s"),  # 1000 s
        (1e-3, False, 2, False, "pool", "> 10 s (a new pool)"),  # backend = "local": never Ray
        (2e-5, True, 1, False, "in-process", "> 10 s and <= 120 s, but one CPU"),
    ],
)
def test_the_auto_rule(per_unit, allow_ray, cpus, warm, tier, reason):
    auto, made = _auto(per_unit, allow_ray, cpus, warm=warm)
    auto.begin_round(1_000_000)
    auto.submit(Task([], 1000))
    auto.wait(1.0)
    assert auto.tier == tier and made == ["in-process"] + ([tier] if tier != "in-process" else [])
    seconds = f"{1_000_000 * per_unit:.2g}"
    want = (
        re.escape(f"auto: ~{seconds} s of work estimated (1000000 job-runs x ")
        + r"\S+"
        + re.escape(f" us, timed in-process) {reason}")
    )
    assert re.fullmatch(want, auto.why), auto.why


def test_auto_skips_a_cold_first_task_and_never_moves_down():
    auto, made = _auto(2e-5, cold_first=True)  # the first task's 100 s are one-off imports: not timed
    auto.begin_round(1_000_000)
    auto.submit(Task([], 1000))
    auto.wait(1.0)
    assert auto.rate is None and auto.tier == "in-process"
    auto.submit(Task([], 1000))
    auto.wait(1.0)
    assert auto.tier == "pool" and made == ["in-process", "pool"]
    auto.begin_round(10)  # a tiny adaptive round: stays in the pool
    assert auto.tier == "pool" and made == ["in-process", "pool"]


def test_choose_rules_1_and_2(tmp_path, monkeypatch):
    spec = spec_of(tmp_path, "c", replications={"n": 1})
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setattr(backends, "_ray_running_here", lambda: False)
    assert choose(spec, None, None) == backends.Choice("auto", None, "auto")
    monkeypatch.setattr(backends, "_ray_running_here", lambda: True)
    assert choose(spec, None, None) == backends.Choice("auto", "ray", "auto: Ray is already running in this process")
    assert choose(spec, None, "local").tier is None
    monkeypatch.setattr(backends, "_ray_running_here", lambda: False)
    assert choose(spec, "auto", None).tier == "ray" and "--address" in choose(spec, "auto", None).why
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:6379")
    assert choose(spec, None, None).why == "auto: $RAY_ADDRESS names a Ray cluster"
    assert choose(spec, None, "local").tier is None  # the environment's address does not override --backend local
    assert choose(spec, None, "ray") == backends.Choice("ray", "ray", "--backend ray")
    with pytest.raises(UserError, match="--backend local: runs without Ray, but --address"):
        choose(spec, "auto", "local")


def test_the_summary_line_says_which_backend_ran_and_why(tmp_path):
    from schedlab.cli import main

    spec = tmp_path / "s.toml"
    spec.write_text(
        textwrap.dedent(
            f"""\
            name = "line"
            engine = "queue"
            policies = ["FIFO", "PS"]
            [workload]
            kind = "synthetic"
            njobs = 200
            load = [0.5, 0.6, 0.7]
            [outputs]
            dir = "{tmp_path / "out"}"
            """
        )
    )
    out = CliRunner().invoke(main, ["run", str(spec), "--no-tracking", "--no-progress"])
    assert out.exit_code == 0, out.output
    assert re.search(r"6 rows written, .* s simulating, ran in-process \(auto: .*\) -> ", out.output), out.output
    again = CliRunner().invoke(main, ["run", str(spec), "--no-tracking", "--no-progress"])
    assert "0 rows written, 6 already on disk" in again.output and " ran " not in again.output  # nothing ran
    bad = CliRunner().invoke(main, ["run", str(spec), "--backend", "local", "--address", "auto"])
    assert bad.exit_code == 2 and "--backend local: runs without Ray, but --address" in bad.output


# ---- a local run stopped (Ctrl-C, then SIGKILL) resumes to the uninterrupted rows ------------------
KILL_SWEEP = """\
    name = "kill-local"
    engine = "queue"
    seed = 4
    policies = ["FIFO", "PS", "PSBS"]

    [workload]
    use = "slowgen.py:slow"
    njobs = 300
    load = [0.5, 0.7, 0.9]
    pause = 0.2

    [replications]
    n = 20

    [outputs]
    dir = "{out}"
    per_job = true

    [tracking]
    enabled = false

    [execution]
    backend = "local"
    num_cpus = 2
    task_jobs = 900
    """  # 60 instances of 0.2 s each, 180 rows: ~12 s of work, so a (new) pool of 2 after two tasks in-process


def _start(spec: Path, cwd: Path, log: str) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_ADDRESS")}
    with open(cwd / log, "w") as fh:
        return subprocess.Popen(
            [*SCHEDLAB, "run", str(spec), "--no-progress"],
            cwd=cwd,
            env={**env, "PYTHONUNBUFFERED": "1"},
            stdout=fh,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=sigint_as_at_a_terminal,
        )


def _wait_for_rows(out: Path, more_than: int, proc: subprocess.Popen) -> None:
    import time

    deadline = time.monotonic() + RUN_TIMEOUT
    while (schedlab.load(out).select(pl.len()).collect().item() if (out / "summary").exists() else 0) <= more_than:
        assert proc.poll() is None, f"the sweep ended ({proc.returncode}) before the commit awaited"
        assert time.monotonic() < deadline, "timed out waiting for a commit"
        time.sleep(0.05)


def test_a_local_run_stopped_then_killed_resumes_to_the_same_rows(tmp_path):
    (tmp_path / "slowgen.py").write_text(GENERATOR)
    out = tmp_path / "out"
    spec = tmp_path / "kill.toml"
    spec.write_text(textwrap.dedent(KILL_SWEEP).format(out=out))
    total = 3 * 3 * 20

    proc = _start(spec, tmp_path, "ctrlc.log")
    try:
        _wait_for_rows(out, 0, proc)
        os.kill(proc.pid, signal.SIGINT)  # what Ctrl-C sends to the driver
        assert proc.wait(timeout=60) == 130
    finally:
        kill_session(proc)
    text = (tmp_path / "ctrlc.log").read_text()
    assert "interrupted" in text and "run again to resume" in text and "Traceback" not in text, text[-3000:]
    after_ctrl_c = schedlab.load(out).select(pl.len()).collect().item()
    assert 0 < after_ctrl_c < total

    proc = _start(spec, tmp_path, "killed.log")
    try:
        _wait_for_rows(out, after_ctrl_c, proc)
        os.killpg(proc.pid, signal.SIGKILL)  # the driver (its pool's processes exit when orphaned)
        proc.wait(timeout=10)
    finally:
        kill_session(proc)
    assert not session_members(proc.pid)
    on_disk = schedlab.load(out).select(pl.len()).collect().item()
    assert after_ctrl_c < on_disk < total, f"the kill did not land mid-sweep ({on_disk} of {total})"

    proc = _start(spec, tmp_path, "resumed.log")
    try:
        assert proc.wait(timeout=RUN_TIMEOUT) == 0, (tmp_path / "resumed.log").read_text()[-3000:]
    finally:
        kill_session(proc)
    assert f"{total - on_disk} rows written, {on_disk} already on disk" in (tmp_path / "resumed.log").read_text()

    reference = parse_spec(
        {**_toml(spec), "outputs": {"dir": str(tmp_path / "ref"), "per_job": True}}, "ref.toml", tmp_path
    )
    assert run_sweep(reference).rows_written == total  # uninterrupted, in this process or its pool
    for table in ("summary", "jobs"):
        got = rows(out, table)
        assert (
            got.select("config_id", "replication", *(["job_id"] if table == "jobs" else [])).is_duplicated().sum() == 0
        )
        assert_frame_equal(got, rows(tmp_path / "ref", table), check_exact=True)


def _toml(path: Path) -> dict:
    import tomllib

    return tomllib.loads(path.read_text())


def test_an_in_process_run_never_imports_ray(tmp_path):
    """A small sweep from Python: run in-process, Ray never imported (its
    start-up is what auto saves), and the second call in the process is warm."""
    code = textwrap.dedent(
        f"""\
        import sys, schedlab
        spec = {{"name": "noray", "engine": "queue", "policies": ["FIFO", "PS"],
                 "workload": {{"kind": "synthetic", "njobs": 100, "load": [0.5, 0.9]}},
                 "outputs": {{"dir": {str(tmp_path / "noray")!r}}}, "tracking": {{"enabled": False}}}}
        a = schedlab.run(spec)
        b = schedlab.run(spec, fresh=True)
        print(a.backend, b.backend, a.rows_written, b.rows_written, "ray" in sys.modules, "mlflow" in sys.modules)
        """
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_ADDRESS")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=RUN_TIMEOUT)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split() == ["in-process", "in-process", "4", "4", "False", "False"], out.stdout


# ---- a Ctrl-C that the running task swallows still stops an in-process run -------------------------
SWALLOWING_GENERATOR = """\
import time

import numpy as np
import polars as pl


def swallow(rng, *, njobs: int = 100, pause: float = 0.0):
    # catches Ctrl-C, as numba's kernel loading does inside a ctypes callback (it prints and drops it)
    end = time.monotonic() + pause
    while time.monotonic() < end:
        try:
            time.sleep(0.01)
        except KeyboardInterrupt:
            pass
    submit = np.cumsum(rng.exponential(1.25, njobs))
    size = rng.exponential(1.0, njobs)
    return pl.DataFrame({"job_id": np.arange(njobs), "submit": submit, "size": size, "estimate": size})
"""

SWALLOW_SWEEP = """\
    name = "swallow"
    engine = "queue"
    seed = 4
    policies = ["FIFO", "PS"]

    [workload]
    use = "swallowgen.py:swallow"
    pause = 0.25

    [replications]
    n = 60

    [outputs]
    dir = "{out}"

    [tracking]
    enabled = false

    [execution]
    backend = "local"
    num_cpus = 1
    """  # 60 instances of 0.25 s in the driver's process: 15 s of work


def test_a_ctrl_c_the_task_swallows_still_stops_an_in_process_run(tmp_path):
    (tmp_path / "swallowgen.py").write_text(SWALLOWING_GENERATOR)
    out = tmp_path / "out"
    spec = tmp_path / "swallow.toml"
    spec.write_text(textwrap.dedent(SWALLOW_SWEEP).format(out=out))
    proc = _start(spec, tmp_path, "swallow.log")
    try:
        _wait_for_rows(out, 0, proc)
        os.kill(proc.pid, signal.SIGINT)  # lands, almost surely, while the generator sleeps
        assert proc.wait(timeout=60) == 130
    finally:
        kill_session(proc)
    text = (tmp_path / "swallow.log").read_text()
    assert "interrupted" in text and "run again to resume" in text and "Traceback" not in text, text[-3000:]
    assert 0 < schedlab.load(out).select(pl.len()).collect().item() < 120
