"""The status line of a running sweep or pipeline (`run`, `pipelines run`):
its own module because it is the one stateful piece of the CLI (redrawn in
place on a terminal, throttled otherwise) and the one that ends a command on
Ctrl-C."""

from __future__ import annotations

import sys
import time

import click

from schedlab.cli.group import EXIT_INTERRUPTED


def _seconds(x: float) -> str:
    x = int(round(x))
    return f"{x // 3600}h{x % 3600 // 60:02d}m" if x >= 3600 else f"{x // 60}m{x % 60:02d}s" if x >= 60 else f"{x}s"


class ProgressLine:
    """One status line on stderr for a running sweep: simulations done /
    total, failed, elapsed, ETA and the round (``runner.Progress``). On a
    terminal it is redrawn in place (at most 10 times a second); otherwise a
    line is printed at each round's end and every 30 s."""

    def __init__(self, enabled: bool = True, stream=None) -> None:
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.tty = self.stream.isatty()
        self.last, self.width, self.open = 0.0, 0, False

    @staticmethod
    def text(p) -> str:
        if hasattr(p, "line"):  # tracking catching up at the run's end (tracking.TrackProgress)
            return p.line()
        eta = p.eta
        return (
            f"{p.sweep}: round {p.round}, {p.done}/{p.total} simulations, {p.failed} failed, "
            f"{_seconds(p.elapsed)} elapsed, ETA {_seconds(eta) if eta is not None else '?'}"
        )

    def update(self, p) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        end_of_round = p.done >= p.total and not hasattr(p, "line")  # tracking: every 30 s off a terminal
        if self.tty:
            if now - self.last < 0.1 and not end_of_round:
                return
            text = self.text(p)
            self.stream.write("\r" + text.ljust(self.width))
            self.width, self.open = len(text), True
        elif end_of_round or now - self.last >= 30.0:
            self.stream.write(self.text(p) + "\n")
        self.stream.flush()
        self.last = now

    def run(self, work):
        """``work(progress)`` with this line as its progress callback; Ctrl-C
        (or the runner's `Interrupted`) ends the command with one line and
        exit 130 -- what arrived is committed, running again resumes."""
        from schedlab.platform.execution.runner import Interrupted

        try:
            return work(self.update)
        except (Interrupted, KeyboardInterrupt) as err:
            self.close()
            click.echo(f"\nschedlab: {str(err) or 'interrupted; run again to resume'}", err=True)
            sys.exit(EXIT_INTERRUPTED)
        finally:
            self.close()

    def close(self) -> None:
        if self.open:
            self.stream.write("\n")
            self.stream.flush()
            self.open = False
