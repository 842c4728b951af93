"""The status line of a running sweep or pipeline (`run`, `pipelines run`):
its own module because it is the one stateful piece of the CLI (redrawn in
place on a terminal, a line now and then otherwise) and the one that ends a
command on Ctrl-C."""

from __future__ import annotations

import dataclasses
import math
import os
import sys
import threading
import time
from collections.abc import Callable

import click

from schedlab.cli.group import EXIT_INTERRUPTED

#: Off a terminal (a log file, nohup, a batch job): a line at least this
#: often while anything runs, whether or not a task finished meanwhile;
#: ``SCHEDLAB_PROGRESS_SECONDS`` overrides it.
LOG_EVERY = 30.0
#: On a terminal: the line is redrawn at least this often (the elapsed time
#: moves) ...
TTY_EVERY = 1.0
#: ... and at most this often however fast results arrive.
TTY_MIN_GAP = 0.1


def _seconds(x: float) -> str:
    x = int(round(x))
    return f"{x // 3600}h{x % 3600 // 60:02d}m" if x >= 3600 else f"{x // 60}m{x % 60:02d}s" if x >= 60 else f"{x}s"


def log_every() -> float:
    """The off-terminal interval: ``SCHEDLAB_PROGRESS_SECONDS`` if it is a
    number > 0, else LOG_EVERY."""
    try:
        value = float(os.environ.get("SCHEDLAB_PROGRESS_SECONDS", ""))
    except ValueError:
        return LOG_EVERY
    return value if value > 0 and math.isfinite(value) else LOG_EVERY


class ProgressLine:
    """One status line on stderr for a running sweep: simulations done /
    total, failed, running, elapsed, ETA and the round (``runner.Progress``).

    Lines come from two places: ``update`` (the runner's callback: a round
    starts, a task finished) and ``tick`` (a heartbeat: the thread ``run``
    starts calls it every ``TTY_EVERY`` seconds). On a terminal the line is
    redrawn in place at most every ``TTY_MIN_GAP`` s and at least every
    ``TTY_EVERY`` s; otherwise a line is printed at each round's end and
    whenever ``log_every()`` seconds passed since the last line printed --
    a heartbeat even when no task finished, with the elapsed time brought up
    to date. ``clock`` is the seam tests replace."""

    def __init__(self, enabled: bool = True, stream=None, clock: Callable[[], float] = time.monotonic) -> None:
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.tty = self.stream.isatty()
        self.clock = clock
        self.every = TTY_EVERY if self.tty else log_every()
        self.last = -math.inf  # when a line was last printed
        self.width, self.open = 0, False
        self.latest = None  # the last progress record and when it came
        self.received = 0.0
        self._lock = threading.RLock()  # re-entered by close() on Ctrl-C inside update()

    @staticmethod
    def text(p) -> str:
        if hasattr(p, "line"):  # tracking catching up at the run's end (tracking.TrackProgress)
            return p.line()
        eta = p.eta
        return (
            f"{p.sweep}: round {p.round}, {p.done}/{p.total} simulations, {p.failed} failed, "
            f"{getattr(p, 'running', 0)} running, {_seconds(p.elapsed)} elapsed, "
            f"ETA {_seconds(eta) if eta is not None else '?'}" + (f"; {p.note}" if getattr(p, "note", "") else "")
        )

    def update(self, p) -> None:
        if not self.enabled:
            return
        with self._lock:
            self.latest, self.received = p, self.clock()
            end_of_round = p.done >= p.total and not hasattr(p, "line")  # tracking: every interval off a terminal
            self._show(p, force=end_of_round)

    def tick(self) -> None:
        """The heartbeat: the last record again, its elapsed time brought up
        to now, if the interval is due."""
        if not self.enabled:
            return
        with self._lock:
            p = self.latest
            if p is None:
                return
            if dataclasses.is_dataclass(p) and hasattr(p, "elapsed"):
                p = dataclasses.replace(p, elapsed=p.elapsed + max(self.clock() - self.received, 0.0))
            self._show(p, force=False)

    def _show(self, p, force: bool) -> None:
        now = self.clock()
        if self.tty:
            if not force and now - self.last < TTY_MIN_GAP:
                return
            text = self.text(p)
            self.stream.write("\r" + text.ljust(self.width))
            self.width, self.open = len(text), True
        elif force or now - self.last >= self.every:
            self.stream.write(self.text(p) + "\n")
        else:
            return
        self.stream.flush()
        self.last = now

    def run(self, work):
        """``work(progress)`` with this line as its progress callback, and
        the heartbeat thread beside it; Ctrl-C (or the runner's
        `Interrupted`) ends the command with one line and exit 130 -- what
        arrived is committed, running again resumes."""
        from schedlab.platform.execution.runner import Interrupted

        stop = threading.Event()
        beat = threading.Thread(target=self._beat, args=(stop,), name="schedlab-progress", daemon=True)
        if self.enabled:
            beat.start()
        try:
            return work(self.update)
        except (Interrupted, KeyboardInterrupt) as err:
            stop.set()
            self.close()
            click.echo(f"\nschedlab: {str(err) or 'interrupted; run again to resume'}", err=True)
            sys.exit(EXIT_INTERRUPTED)
        finally:
            stop.set()
            if beat.is_alive():
                beat.join(timeout=2.0)
            self.close()

    def _beat(self, stop: threading.Event) -> None:
        while not stop.wait(min(TTY_EVERY, self.every)):
            self.tick()

    def close(self) -> None:
        with self._lock:
            if self.open:
                self.stream.write("\n")
                self.stream.flush()
                self.open = False
