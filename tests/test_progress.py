"""The progress line (issue 26): off a terminal a line at least every interval
while anything runs -- a heartbeat even when no task finished -- and on a
terminal a redraw at least once a second. Driven by a fake clock (the
``clock`` seam); the real thread and a real sweep writing to a file are in
tests/test_policy_safety.py."""

from __future__ import annotations

import io

import pytest

from schedlab.cli.progress import LOG_EVERY, TTY_EVERY, TTY_MIN_GAP, ProgressLine, log_every
from schedlab.platform.execution.runner import Progress


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def progress(done: int, elapsed: float, running: int = 4) -> Progress:
    return Progress("s", 1, done, 100, 0, elapsed, running)


def lines(stream: io.StringIO) -> list[str]:
    return stream.getvalue().splitlines()


def test_off_a_terminal_a_line_every_interval_even_with_frequent_updates():
    """The old bug: the time of the last line moved on every update, printed
    or not, so updates every 5 s never let 30 s pass and no line appeared."""
    clock, out = Clock(), io.StringIO()
    line = ProgressLine(stream=out, clock=clock)
    start = clock.now
    for k in range(0, 13):  # an update every 5 s for 60 s
        clock.now = start + 5 * k
        line.update(progress(k, 5.0 * k))
    assert [row.split(", ")[1] for row in lines(out)] == [
        "0/100 simulations",
        "6/100 simulations",
        "12/100 simulations",
    ]


def test_off_a_terminal_the_heartbeat_prints_when_nothing_finishes():
    clock, out = Clock(), io.StringIO()
    line = ProgressLine(stream=out, clock=clock)
    line.update(progress(3, 10.0, running=6))
    assert len(lines(out)) == 1
    for dt in (1.0, 10.0, LOG_EVERY - 0.5):
        clock.now = 1000.0 + dt  # ticks before the interval: nothing
        line.tick()
    assert len(lines(out)) == 1
    clock.now = 1000.0 + LOG_EVERY + 0.5
    line.tick()
    clock.now = 1000.0 + 2 * LOG_EVERY + 1.0
    line.tick()
    rows = lines(out)
    assert len(rows) == 3
    # the same counts, the elapsed time brought up to date: 10 s + the time since the update
    assert rows[1] == "s: round 1, 3/100 simulations, 0 failed, 6 running, 40s elapsed, ETA 21m50s"
    assert ", 6 running, 1m11s elapsed" in rows[2]


def test_off_a_terminal_the_end_of_a_round_is_always_printed():
    clock, out = Clock(), io.StringIO()
    line = ProgressLine(stream=out, clock=clock)
    line.update(progress(99, 1.0))
    clock.now += 0.5
    line.update(Progress("s", 1, 100, 100, 2, 1.5, 0))
    assert lines(out)[-1].startswith("s: round 1, 100/100 simulations, 2 failed, 0 running")


def test_on_a_terminal_a_redraw_every_second_and_at_most_ten_a_second():
    clock, out = Clock(), Tty()
    line = ProgressLine(stream=out, clock=clock)
    assert line.every == TTY_EVERY
    line.update(progress(1, 0.0))
    for _ in range(5):  # a burst of results within TTY_MIN_GAP: one redraw
        clock.now += TTY_MIN_GAP / 10
        line.update(progress(2, 0.0))
    assert out.getvalue().count("\r") == 1
    for _ in range(5):  # nothing finishes: the heartbeat redraws each second, the elapsed time moving
        clock.now += TTY_EVERY
        line.tick()
    frames = out.getvalue().split("\r")[1:]
    assert len(frames) == 6
    assert [f.split(", ")[4].strip() for f in frames[1:]] == [f"{k}s elapsed" for k in range(1, 6)]
    line.close()
    assert out.getvalue().endswith("\n")


def test_disabled_prints_nothing_and_the_interval_is_configurable(monkeypatch):
    clock, out = Clock(), io.StringIO()
    line = ProgressLine(enabled=False, stream=out, clock=clock)
    line.update(progress(1, 1.0))
    line.tick()
    assert out.getvalue() == ""
    monkeypatch.setenv("SCHEDLAB_PROGRESS_SECONDS", "2.5")
    assert log_every() == 2.5 and ProgressLine(stream=io.StringIO()).every == 2.5
    for bad in ("0", "-1", "nan", "soon"):
        monkeypatch.setenv("SCHEDLAB_PROGRESS_SECONDS", bad)
        assert log_every() == LOG_EVERY


def test_run_beats_from_its_thread_while_work_runs(monkeypatch):
    """``run`` starts the heartbeat beside the work (real time, short interval)."""
    import time

    monkeypatch.setenv("SCHEDLAB_PROGRESS_SECONDS", "0.2")
    out = io.StringIO()
    line = ProgressLine(stream=out)

    def work(update):
        update(progress(1, 0.0))
        time.sleep(1.5)  # no update meanwhile
        return "done"

    assert line.run(work) == "done"
    assert len(lines(out)) >= 4, out.getvalue()


@pytest.mark.parametrize("elapsed,text", [(0.0, "0s"), (59.4, "59s"), (61.0, "1m01s"), (3700.0, "1h01m")])
def test_elapsed_format(elapsed, text):
    assert f"{text} elapsed" in ProgressLine.text(progress(0, elapsed))
