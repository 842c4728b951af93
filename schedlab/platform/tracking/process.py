"""Live tracking in a process of its own (`TrackingProcess`), beside the
driver, so that MLflow costs the sweep no time on a machine with a core to
spare.

MLflow's import and store opening are ~2 s of Python (more on a loaded
machine), and a thread of the driver's process shares one interpreter lock
with the sweep: the two took turns, and the README's first sweep, 0.3 s of
simulation, took over 5 s. Here the same `Tracker` (connect, reconcile, log
what is submitted, finalize and verify) runs in a child process on the
other core; the driver only sends it configuration ids and, at the end,
figures to add to the sweep's parent run, and waits for its report.

The child is spawned (a fresh interpreter: not the local pool's
forkserver, whose preloaded engines it does not need and whose start it
would otherwise set), ignores Ctrl-C and exits when the driver is gone. It is kept for the life of the
driver's process: a second sweep in one Python session (``schedlab.run``
twice in a notebook) finds MLflow imported and its store open. It tracks one
sweep at a time. Nothing the child does can fail the sweep: if it dies, the
report says so (MLflow is a function of Parquet: ``schedlab track DIR`` or
the next run finishes the job), and a Ctrl-C while the driver waits for it
ends it at once (the same promise).

The child begins importing MLflow (`sync.preload`) the moment it starts,
before it is told which sweep to track, and a run starts it as soon as it
knows that it will track (`warm`, before planning): for a small sweep that
import, not the logging, is most of tracking's cost, and this way it runs
beside the driver's own start-up.

Messages, driver to child: ``("open", uri, experiment, results_dir)``,
``("submit", ids)``, ``("close", stall, figures)``; child to driver, only
after a close: ``("progress", TrackProgress)`` every `POLL_SECONDS`, then
``("report", TrackReport)``.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from schedlab.platform.children import become_child, main_not_reimported, sigint_ignored
from schedlab.platform.tracking.store import resolve_uri
from schedlab.platform.tracking.sync import TrackReport, preload
from schedlab.platform.tracking.tracker import POLL_SECONDS, STALL_SECONDS, Tracker, TrackProgress

#: Seconds the driver waits for a word from the child, beyond the child's own
#: ``stall`` limit, before it gives up on a child that answers nothing at all.
SILENCE_SECONDS = 30.0
#: Seconds the driver waits for a killed or released child to be gone.
JOIN_SECONDS = 2.0

#: The child kept for this process's life (a warm session), with the driver's end of its pipe.
_CHILD: list[tuple[Any, Connection]] = []


def serve(conn: Connection) -> None:
    """The child: track the sweeps the driver opens, one after another, until
    the driver closes the pipe or is gone."""
    become_child()
    threading.Thread(target=preload, name="schedlab-tracking-preload", daemon=True).start()
    tracker: Tracker | None = None
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        kind = message[0]
        if kind == "open":
            _, uri, experiment, results_dir = message
            tracker = Tracker(uri, experiment, results_dir)
            tracker.start()
        elif kind == "submit" and tracker is not None:
            tracker.submit(message[1])
        elif kind == "close" and tracker is not None:
            _, stall, figures = message
            conn.send(("report", tracker.close(stall, lambda p: conn.send(("progress", p)), figures)))
            tracker = None


def warm() -> None:
    """Start the kept tracking child now (if none is alive), so that it
    imports MLflow while the driver plans: a run calls this as soon as it
    knows it will track. Cheap when the child is already up."""
    _child()


def _child() -> tuple[Any, Connection]:
    """The kept child if it is alive, else a new one."""
    if _CHILD:
        proc, conn = _CHILD[0]
        if proc.is_alive():
            return proc, conn
        _forget()
    context = multiprocessing.get_context("spawn")
    ours, theirs = context.Pipe()
    proc = context.Process(target=serve, args=(theirs,), name="schedlab-tracking", daemon=True)
    with main_not_reimported(), sigint_ignored():
        proc.start()
    theirs.close()
    _CHILD.append((proc, ours))
    return proc, ours


def _forget(kill: bool = False) -> None:
    """Drop the kept child (killed first when ``kill``)."""
    while _CHILD:
        proc, conn = _CHILD.pop()
        if kill and proc.is_alive():
            with contextlib.suppress(OSError, ValueError):
                proc.kill()
            proc.join(JOIN_SECONDS)
        with contextlib.suppress(OSError):
            conn.close()


class TrackingProcess:
    """`Tracker`'s interface (``start``, ``submit``, ``progress``, ``close``),
    its work done by the child process (see the module docstring)."""

    def __init__(self, uri: str | None, experiment: str | None, results_dir: str | Path):
        self.uri = resolve_uri(uri)
        self._open = ("open", self.uri, experiment, str(results_dir))
        self._conn: Connection | None = None
        self._proc: Any = None
        self._last = TrackProgress(self.uri, "connecting", 0, 0, 0.0, 0.0)
        self._report: TrackReport | None = None

    def start(self) -> None:
        if self._proc is None:
            self._proc, self._conn = _child()
            self._send(self._open)

    def _send(self, message: tuple[Any, ...]) -> bool:
        """False when the child is gone (the close reports it)."""
        if self._conn is None:
            return False
        try:
            self._conn.send(message)
            return True
        except (OSError, ValueError):
            return False

    def submit(self, config_ids: Iterable[str]) -> None:
        ids = [str(cid) for cid in config_ids]
        if ids and self._report is None:
            self._send(("submit", ids))

    def progress(self, waited: float = 0.0, idle: float = 0.0) -> TrackProgress:
        return self._last

    def close(
        self,
        stall: float = STALL_SECONDS,
        progress: Callable[[TrackProgress], None] | None = None,
        figures: Sequence[str | Path] = (),
    ) -> TrackReport:
        """Wait for the child's report: it drains, reconciles, verifies and
        adds ``figures`` to the sweep's parent run (`Tracker.close`'s promise,
        ``progress`` called with its `TrackProgress`). A child that dies, or
        says nothing for ``stall`` + `SILENCE_SECONDS`, is reported as a
        failure. Ctrl-C kills the child and propagates."""
        if self._report is not None:
            return self._report
        self.start()
        if not self._send(("close", stall, [str(f) for f in figures])):
            return self._failed("the tracking process could not be reached")
        heard = time.monotonic()
        try:
            while True:
                if self._conn is not None and self._conn.poll(POLL_SECONDS):
                    try:
                        kind, body = self._conn.recv()
                    except (EOFError, OSError):
                        return self._failed("the tracking process ended without a report")
                    heard = time.monotonic()
                    if kind == "report" and isinstance(body, TrackReport):
                        self._report = body
                        if body.failed:  # a store that failed may have left the child's threads stuck on it
                            _forget(kill=True)
                        return body
                    if not isinstance(body, TrackProgress):
                        continue
                    self._last = body
                    if progress is not None:
                        progress(body)
                elif not self._proc.is_alive():
                    return self._failed(f"the tracking process died (exit code {self._proc.exitcode})")
                elif time.monotonic() - heard > stall + SILENCE_SECONDS:
                    return self._failed(f"the tracking process said nothing for {stall + SILENCE_SECONDS:g} s")
        except KeyboardInterrupt:
            _forget(kill=True)
            raise

    def _failed(self, why: str) -> TrackReport:
        _forget(kill=True)
        self._report = TrackReport(failed=True, error=why)
        return self._report
