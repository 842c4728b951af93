"""Run logs that survive a killed run (`pipelines.runlog`, issue #40): real
`schedlab pipelines run` processes ended by SIGTERM and by SIGKILL, then
resumed to the end, and the page that reads their records; the guard against
two runs into one dir; SIGTERM's handler while a run goes on
(`platform.execution.interrupts`)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

import schedlab
from schedlab.cli import main
from schedlab.errors import UserError
from schedlab.pipelines import pages, runlog
from schedlab.platform.execution import interrupts
from tests.processes import checkout_env, kill_session

#: The quickest pipeline of two sweeps, run with `--decide` (`BUDGET`): a run stopped at its first
#: commit always leaves rows to write (the later rounds').
NAME, SCALE = "pg-fig3", "smoke"
#: `--decide`'s budget: its rounds (1 -> 2 -> 4 replications) commit rows again after both sweeps
#: have some, so a second invocation commits more than once and can be frozen between commits.
BUDGET = 4
#: How long a run may take to start writing rows, or to end once told (a loaded 2-core machine).
START_TIMEOUT = 120.0
END_TIMEOUT = 120.0


def _start(out: Path, log: Path) -> subprocess.Popen:
    command = [sys.executable, "-m", "schedlab.cli", "pipelines", "run", NAME, "--scale", SCALE]
    command += ["--no-tracking", "--backend", "local", "--decide", "--budget", str(BUDGET), "--out", str(out)]
    with open(log, "a") as fh:
        return subprocess.Popen(
            command, env=checkout_env(), stdout=fh, stderr=subprocess.STDOUT, start_new_session=True
        )


def _has_rows(sweep_dir: Path) -> bool:
    return any(sweep_dir.glob("summary/*/part-*.parquet"))


def _rows(out: Path) -> int:
    """Summary rows committed under ``out`` (a sweep dir with a manifest but no rows yet counts 0)."""
    return sum(_rows_of(d) for d in out.iterdir() if d.is_dir())


#: How long the run goes on between two looks at its output dir, frozen while the test looks.
SLICE = 0.05


def _stop_when(what, proc: subprocess.Popen, log: Path, timeout: float = START_TIMEOUT) -> None:
    """Let the run go in slices of `SLICE` seconds and freeze it (SIGSTOP) to look between
    them, until ``what`` holds: it returns with the run frozen at that point, so the run can
    neither write more nor end before the test's signal lands, whatever the machine's load.
    (Polling a running process instead lost the race once: a quick second invocation had
    finished, its open record removed, between the look and the SIGSTOP.)"""
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None or time.monotonic() > deadline:
            pytest.fail(f"{what.__doc__} never came (exit {proc.poll()}):\n{log.read_text()[-3000:]}")
        os.kill(proc.pid, signal.SIGSTOP)
        if what():
            return
        os.kill(proc.pid, signal.SIGCONT)
        time.sleep(SLICE)


@pytest.fixture(scope="module")
def killed_and_resumed(tmp_path_factory):
    """Three invocations into one dir: the first ended by SIGTERM at the first
    sweep's first commit, the second by SIGKILL at its own first commit, the
    third to the end. Each is frozen (SIGSTOP, `_stop_when`) when the test sees
    what it waits for, so the signal lands while the run has rows to write
    whatever the machine's load (SIGCONT then lets it handle SIGTERM)."""
    from schedlab.pipelines.registry import get_pipeline

    first = get_pipeline(NAME).specs(SCALE, {})[0]["name"]
    root = tmp_path_factory.mktemp("runlog")
    out, log = root / NAME, root / "run.log"
    seen: dict = {}

    proc = _start(out, log)
    try:

        def first_rows():
            """the first sweep's first committed rows"""
            return _has_rows(out / first)

        _stop_when(first_rows, proc, log)
        os.kill(proc.pid, signal.SIGTERM)
        os.kill(proc.pid, signal.SIGCONT)
        seen["sigterm_rc"] = proc.wait(timeout=END_TIMEOUT)
    finally:
        kill_session(proc)
    seen["sigterm_log"] = log.read_text()
    seen["after_sigterm"] = {"runs": runlog.read_runs(out), "rows": _rows(out)}
    seen["open_left_by_sigterm"] = (out / runlog.OPEN_FILE).exists()

    before = _rows(out)
    proc = _start(out, log)
    started = time.monotonic()
    try:

        def new_rows():
            """rows the invocation in progress committed, its open record there"""
            opened = out / runlog.OPEN_FILE
            return opened.exists() and _rows(out) > json.loads(opened.read_text())["rows_on_disk_at_start"]

        _stop_when(new_rows, proc, log)
        seen["open"] = json.loads((out / runlog.OPEN_FILE).read_text())
        seen["sigkill_elapsed"] = time.monotonic() - started
        kill_session(proc)  # SIGKILL, the driver and its pool
    finally:
        kill_session(proc)
    seen["after_sigkill"] = {"runs": runlog.read_runs(out), "rows": _rows(out), "rows_before": before}
    seen["open_left_by_sigkill"] = (out / runlog.OPEN_FILE).exists()
    seen["unsettled"] = runlog.unsettled(out)  # what a page drawn now counts for it (and writes nothing)

    proc = _start(out, log)
    try:
        seen["resumed_rc"] = proc.wait(timeout=END_TIMEOUT * 2)
    finally:
        kill_session(proc)
    seen["runs"], seen["rows"], seen["log"] = runlog.read_runs(out), _rows(out), log.read_text()
    return root, out, seen


def _rows_of(sweep_dir: Path) -> int:
    has = (sweep_dir / "manifest.json").exists() and _has_rows(sweep_dir)
    return schedlab.load(sweep_dir).collect().height if has else 0


def test_sigterm_is_an_interruption_with_its_record(killed_and_resumed):
    _, out, seen = killed_and_resumed
    text = seen["sigterm_log"]
    assert seen["sigterm_rc"] == 130, text[-3000:]  # as Ctrl-C: what arrived is committed, run again to resume
    assert "Traceback" not in text and "run again to resume" in text, text[-3000:]
    (record,) = seen["after_sigterm"]["runs"]
    assert record["interrupted"] is True and record["ended_by"] == "SIGTERM"
    assert record["rows_new"] == seen["after_sigterm"]["rows"] > 0 and record["rows_resumed"] == 0
    assert seen["rows"] > seen["after_sigterm"]["rows"]  # it stopped with rows still to write
    assert record["wall_seconds"] > 0 and "wall_is_lower_bound" not in record
    assert not seen["open_left_by_sigterm"]  # replaced by its line


def test_sigkill_leaves_an_open_record_the_next_run_settles(killed_and_resumed):
    _, out, seen = killed_and_resumed
    opened = seen["open"]
    assert opened["pid"] > 0 and opened["command"].startswith(f"schedlab pipelines run {NAME}")
    assert opened["rows_on_disk_at_start"] >= seen["after_sigkill"]["rows_before"]
    assert seen["open_left_by_sigkill"]  # nothing said it ended
    # --decide's rounds before the killed one ended normally; none said the killed one ended
    assert all("interrupted" not in r for r in seen["after_sigkill"]["runs"][1:])

    runs = seen["runs"]
    first, last = runs[0], runs[-1]
    (killed,) = [r for r in runs if r.get("ended_by") == runlog.NO_END]
    assert killed["id"] == opened["id"] and killed["started"] == opened["started"]
    assert seen["unsettled"] == killed  # a page drawn before the next run counted it the same
    assert killed["interrupted"] is True and killed["ended_by"] == runlog.NO_END
    assert killed["wall_is_lower_bound"] is True and killed["driver_cpu_is_lower_bound"] is True
    # its wall runs to its last heartbeat: not more than it ran, and the heartbeat came at least once
    assert 0 < killed["wall_seconds"] <= seen["sigkill_elapsed"]
    assert killed["rows_new"] == seen["after_sigkill"]["rows"] - opened["rows_on_disk_at_start"] > 0
    assert killed["rows_resumed"] == opened["rows_on_disk_at_start"]
    assert seen["resumed_rc"] == 0, seen["log"][-3000:]
    assert "interrupted" not in last and sum(r["rows_new"] for r in runs) == seen["rows"]
    assert first["ended_by"] == "SIGTERM"
    assert not (out / runlog.OPEN_FILE).exists()


def test_the_page_counts_every_invocation(killed_and_resumed, tmp_path):
    root, _, seen = killed_and_resumed
    got = CliRunner().invoke(main, ["pipelines", "pages", NAME, "--results", str(root), "--to", str(tmp_path)])
    assert got.exit_code == 0, got.output
    summary = json.loads((tmp_path / NAME / pages.SUMMARY).read_text())
    runs = seen["runs"]
    assert summary["rows"] == seen["rows"] == summary["rows_logged"] == sum(r["rows_new"] for r in runs)
    assert summary["wall_seconds"] == pytest.approx(sum(r["wall_seconds"] for r in runs))
    assert summary["wall_is_lower_bound"] is True
    page = (tmp_path / f"{NAME}.md").read_text()
    said = f"| invocations | {len(runs)} (1 ended by SIGTERM, 1 with no end recorded: its wall is a lower bound), "
    assert said in page, page
    assert f"| wall | at least {pages._duration(summary['wall_seconds'])} summed over the invocations |" in page
    index = (tmp_path / pages.INDEX).read_text()
    assert f"| at least {pages._duration(summary['wall_seconds'])} |" in index


def test_the_page_says_how_many_were_interrupted_and_by_what():
    runs = [
        {"interrupted": True, "ended_by": "SIGTERM"},
        {"interrupted": True, "ended_by": runlog.NO_END, "wall_is_lower_bound": True},
        {"interrupted": True, "ended_by": "SIGTERM"},
        {},
    ]
    said = " (2 ended by SIGTERM, 1 with no end recorded: its wall is a lower bound)"
    assert pages._interruptions(runs) == said
    assert pages._interruptions([{"interrupted": True}, {}]) == " (1 interrupted)"  # a record from before ended_by
    assert pages._interruptions([{}, {}]) == ""  # nothing cut short: the page's line as it was


def test_a_second_run_into_the_same_dir_stops_with_one_line(tmp_path):
    """The dir's lock is held (here by this process, as a running invocation
    holds it): `pipelines run` into it says who holds it, exit 2, and writes
    nothing; once it is released the next run goes on."""
    invocation = runlog.Invocation.start(tmp_path, "smoke", None)
    invocation.open([tmp_path / "pg-fig3a-smoke"])
    with pytest.raises(UserError, match=f"another `schedlab pipelines run` is writing here \\(PID {os.getpid()}, "):
        runlog.hold(tmp_path)
    command = [sys.executable, "-m", "schedlab.cli", "pipelines", "run", NAME, "--scale", SCALE]
    got = subprocess.run(
        [*command, "--no-tracking", "--out", str(tmp_path)], env=checkout_env(), capture_output=True, text=True
    )
    assert got.returncode == 2, got.stderr
    assert got.stderr.strip().count("\n") == 0 and f"PID {os.getpid()}" in got.stderr, got.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([runlog.LOCK_FILE, runlog.OPEN_FILE])  # nothing new
    record = invocation.finish(rows_new=0, rows_resumed=0, failures=0)
    assert runlog.read_runs(tmp_path) == [record] and not (tmp_path / runlog.OPEN_FILE).exists()
    runlog.hold(tmp_path).close()  # released


def test_an_unreadable_open_record_is_one_line(tmp_path):
    (tmp_path / runlog.OPEN_FILE).write_text("{not json")
    with pytest.raises(UserError, match=f"{runlog.OPEN_FILE}: not an open run record"):
        runlog.Invocation.start(tmp_path, "smoke", None).open([])
    runlog.hold(tmp_path).close()  # the failed open let go of the dir


def test_sigterm_as_ctrl_c_restores_the_handler_it_replaced():
    def mine(signum, frame):
        raise AssertionError("the caller's handler ran inside the block")

    previous = signal.signal(signal.SIGTERM, mine)
    try:
        with pytest.raises(KeyboardInterrupt), interrupts.sigterm_as_ctrl_c() as handler:
            signal.raise_signal(signal.SIGTERM)
            time.sleep(1.0)  # the handler runs at the next bytecode, long before this ends
        assert handler.ended_by == "SIGTERM"
        assert signal.getsignal(signal.SIGTERM) is mine
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_ray_init_does_not_take_sigterm_from_a_run(tmp_path):
    """``ray.init`` installs Ray's SIGTERM handlers (``sys.exit``: past the
    runner's clean-up; a pipeline on Ray then exited 15 with its record
    saying "error: SystemExit"); starting Ray for a sweep keeps the run's
    (`interrupts.keep_sigterm_handler`). Real Ray, started here."""
    import ray

    from schedlab.platform.execution import ray_backend
    from schedlab.platform.planning.validate import parse_spec

    spec = parse_spec(
        {
            "name": "sigterm-ray",
            "engine": "queue",
            "policies": ["FIFO"],
            "workload": {"kind": "synthetic", "njobs": 100},
            "outputs": {"dir": str(tmp_path / "out")},
            "tracking": {"enabled": False},
            "execution": {"num_cpus": 1},
        },
        "sigterm-ray.toml",
        tmp_path,
    )
    if ray.is_initialized():
        ray.shutdown()
    ray_backend.forget_ray()
    try:
        with interrupts.sigterm_as_ctrl_c() as handler:
            ray_backend._init_ray(spec, None)
            assert ray.is_initialized() and signal.getsignal(signal.SIGTERM) is handler
    finally:
        ray.shutdown()
        ray_backend.forget_ray()


def test_held_back_delivers_sigterm_after_the_block():
    """A commit is never cut by SIGTERM (nor Ctrl-C), even when the signal
    reaches another thread: blocking it in the main thread does not hold back
    its Python handler, which runs in the main thread whichever thread the
    signal reached; `held_back` notes it and hands it over after the block."""
    import threading

    other = threading.Event()
    helper = threading.Thread(target=other.wait, daemon=True)  # started before: SIGTERM not blocked there
    helper.start()
    done = []
    try:
        with pytest.raises(KeyboardInterrupt), interrupts.sigterm_as_ctrl_c() as handler:
            with interrupts.held_back():
                os.kill(os.getpid(), signal.SIGTERM)  # to the process: the helper thread takes it
                time.sleep(0.5)
                done.append("the whole block")
            time.sleep(1.0)
    finally:
        other.set()
        helper.join()
    assert done == ["the whole block"] and handler.ended_by == "SIGTERM"


def test_a_sigterm_the_task_swallows_is_noticed():
    """An in-process task may swallow the KeyboardInterrupt (numba's ctypes
    callback does): a SIGTERM handled as Ctrl-C is noted all the same, so the
    executor raises it again; a caller's own SIGTERM handler is left alone."""
    with interrupts.sigterm_as_ctrl_c(), interrupts.noticed() as stopped:
        try:
            signal.raise_signal(signal.SIGTERM)
            time.sleep(1.0)
        except KeyboardInterrupt:
            pass  # the task swallowed it
    assert stopped == [signal.SIGTERM]
    calls = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: calls.append(signum))
    try:
        with interrupts.noticed() as stopped:
            signal.raise_signal(signal.SIGTERM)
            time.sleep(0.2)
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert stopped == [] and calls == [signal.SIGTERM]
