"""MLflow tracking that mirrors a sweep's results dir.

MLflow is a function of Parquet: what a results dir's MLflow runs must hold is
computed from ``manifest.json`` and the summary rows alone
(`tracking_data.expected_runs`), and every way of logging -- live during a
sweep (`Tracker`), backfill (`track_results`, ``schedlab track DIR``) -- brings
the runs to that state and then *checks* it, so a kill at any moment, a
Ctrl-C or a tracking server that was down cannot leave runs missing or stale
without someone being told.

Layout in MLflow:

* one experiment per sweep (default name: the manifest's ``name``);
* one parent run per sweep, tagged ``schedlab.sweep=<name>`` and found again by
  that tag (extra parents, e.g. from a retried create, are deleted with their
  children); the results dir's ``code/`` folder, if any, is logged under its
  ``code/`` artifacts once (tag ``schedlab.code_artifacts`` = digest of the folder);
* the parent's description (MLflow's note) says what the sweep is: the spec's
  description, its grid axes, a table of the headline metric per
  configuration (mean ± 95 % CI, n) and the result-defining spec; the
  experiment's description is the spec's description;
* one child run per configuration with rows (tag ``mlflow.parentRunId``),
  named by its policy and the grid values that tell it apart (``PSBS
  shape=0.25 sigma=0.5``), found again by its ``schedlab.config_id`` tag,
  never duplicated (duplicates and runs of configurations without rows are
  deleted). Params: the configuration's flattened params plus engine, policy,
  workload_kind, config_id. Metrics, each logged once at step 0: for every
  metric m its mean as ``m``, its CI half-width as ``m_ci95`` when positive
  (null/NaN skipped), and ``n``. Tags: config id, engine, policy, version,
  spec hash, ``code_sha256`` and ``schedlab_digest`` when the results dir has
  them, and -- logged last, so a run has them only once complete --
  ``schedlab.rows`` (rows the values come from) and ``schedlab.rows_digest``
  (digest of their replication numbers). A run whose values already equal
  the disk is left alone (idempotent); one whose values changed (more or fewer
  rows) or whose params changed is deleted and logged anew, so a run's metric
  history is always one point per metric: the final values.

When: `Tracker.start` returns at once; its thread connects (creates the
store, experiment and parent run) and reconciles every configuration (runs
missing or behind after a kill are re-logged), then logs each round's
settled configurations as the driver submits them -- the sweep never waits
on MLflow before its end. `Tracker.close` drains what is queued,
reconciles and verifies everything once more (reconnecting if the store
failed during the run), reporting `TrackProgress` meanwhile; it waits as
long as tracking makes progress and gives up only after ``stall`` seconds
without any (`STALL_SECONDS`). A Ctrl-C there stops waiting (the caller says
that ``schedlab track DIR`` finishes the job). The `TrackReport` says
whether MLflow matched the disk at the end; the CLI exits 3 if not.

Modules: `tracking_data` (what the runs must hold, from the disk),
`tracking_mirror` (the runs in one store and how to bring one up to date),
`tracking_sync` (reconcile, the pool of clients, verify), `tracking_store`
(which store; SQLite created atomically, in WAL mode; server health).

``mlflow`` and ``polars`` are imported inside functions only: the CLI imports
this module without paying for them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from schedlab.platform.tracking.data import read_manifest
from schedlab.platform.tracking.store import HTTP_ENV_DEFAULTS as HTTP_ENV_DEFAULTS  # the client settings, public
from schedlab.platform.tracking.store import resolve_uri
from schedlab.platform.tracking.sync import Sync, TrackReport, describe_error

#: `Tracker.close` gives up after this many seconds in which tracking made no
#: progress at all (no store call answered, no configuration logged): a hung
#: server, not a slow one (MLflow's own HTTP timeout and retries are shorter).
STALL_SECONDS = 120.0
#: How often `Tracker.close` looks at the worker and reports progress.
POLL_SECONDS = 0.25


@dataclass
class TrackProgress:
    """Where tracking stands while a finished sweep waits for it: ``done`` of
    ``total`` configurations handed to it are up to date in MLflow; ``stage``:
    connecting, logging, reconciling or verifying; ``elapsed``: seconds
    waited so far; ``idle``: seconds since it last made progress."""

    uri: str
    stage: str
    done: int
    total: int
    elapsed: float
    idle: float

    def line(self) -> str:
        """The progress line (`cli.ProgressLine` shows it as it is)."""
        idle = f", no progress for {self.idle:.0f} s" if self.idle >= 5 else ""
        return (
            f"MLflow {self.uri}: {self.stage}, {self.done}/{self.total} configuration runs logged, "
            f"waited {self.elapsed:.0f} s{idle} (Ctrl-C: stop waiting, `schedlab track` finishes)"
        )


def track_results(results_dir: str | Path, uri: str | None = None, experiment: str | None = None) -> TrackReport:
    """Synchronously make MLflow mirror a results dir (backfill; idempotent)
    and verify it. A missing or invalid manifest or a damaged part file is a
    `UserError`; tracking failures are reported, never raised."""
    from schedlab.platform.storage.seam import open_store

    results_dir = Path(results_dir)
    manifest = read_manifest(results_dir)
    open_store(results_dir).files()  # a damaged part file: UserError before MLflow is touched
    return Sync(resolve_uri(uri), experiment, results_dir, manifest).finalize()


class Tracker:
    """Live tracking during a sweep. ``start()`` (returns at once: a daemon
    thread connects -- store, experiment, parent run -- and reconciles every
    configuration), ``submit(ids)`` (non-blocking: the thread reads,
    aggregates and logs those configurations, FIFO, coalescing ids still
    pending), ``close(stall, progress)`` (waits while the thread drains,
    reconciles and verifies everything; returns a `TrackReport` of the end
    state). No method raises because of tracking; ``close`` lets a Ctrl-C
    through after telling the thread to stop."""

    def __init__(self, uri: str | None, experiment: str | None, results_dir: str | Path):
        self._sync = Sync(resolve_uri(uri), experiment, Path(results_dir))
        self._cond = threading.Condition()
        self._pending: dict[str, None] = {}  # insertion-ordered set
        self._full = False  # a full reconcile is due
        self._closing = False
        self._stop = False
        self._thread: threading.Thread | None = None
        self._report: TrackReport | None = None

    @property
    def uri(self) -> str:
        return self._sync.uri

    def start(self) -> None:
        with self._cond:
            if self._thread is not None or self._closing:
                return
            self._full = True
            self._thread = threading.Thread(target=self._work, name="schedlab-tracking", daemon=True)
        self._thread.start()

    def submit(self, config_ids: Iterable[str]) -> None:
        with self._cond:
            if self._thread is None or self._closing or self._stop:
                return  # the final reconcile covers them
            for cid in config_ids:
                self._pending.setdefault(str(cid), None)
            self._cond.notify()

    def _work(self) -> None:
        """The thread: connect, then reconcile / log what is submitted; at
        close, the final reconcile and verify (`Sync.finalize`)."""
        sync = self._sync
        try:
            connected = sync.connect()
            while connected and not sync.dead:
                with self._cond:
                    while not self._pending and not self._full and not self._closing and not self._stop:
                        self._cond.wait()
                    if self._stop or not (self._pending or self._full):
                        break  # closing with nothing queued
                    full, self._full = self._full, False
                    batch = list(self._pending)
                    self._pending.clear()
                if full:
                    sync.reconcile()
                if batch:
                    sync.stage = "logging"
                    sync.track(batch)
            with self._cond:
                self._pending.clear()
                while not self._closing and not self._stop:  # the store failed: only close() tries again
                    self._cond.wait()
                if self._stop:
                    return
            self._report = sync.finalize()
        except Exception as err:  # a damaged part file, a bug: must not take the sweep down
            sync.record(f"tracking failed: {describe_error(err)}", fatal=True)
            self._report = sync.report()

    def progress(self, waited: float = 0.0, idle: float = 0.0) -> TrackProgress:
        sync = self._sync
        with self._cond:
            queued = len(self._pending)
        return TrackProgress(sync.uri, sync.stage, sync.logged_total, sync.queued_total + queued, waited, idle)

    def close(
        self,
        stall: float = STALL_SECONDS,
        progress: Callable[[TrackProgress], None] | None = None,
        figures: Sequence[str | Path] = (),
    ) -> TrackReport:
        """Wait for tracking to finish (drain, final reconcile, verify) as
        long as it makes progress; give up after ``stall`` seconds without
        any (the report then says so). ``progress`` gets a `TrackProgress`
        every `POLL_SECONDS`. Then, if MLflow matches the disk, the files
        ``figures`` are added to the sweep's parent run (`Sync.log_figures`;
        the report lists them, or says why not). Ctrl-C: the thread is told
        to stop and the KeyboardInterrupt propagates (MLflow is then behind
        the disk, which ``schedlab track DIR`` or the next run's tracker
        repairs)."""
        if self._report is None:
            self._report = self._wait(stall, progress)
            if figures and not self._report.failed:
                self._report.figures, self._report.figures_error = self._sync.log_figures([str(f) for f in figures])
        return self._report

    def _wait(self, stall: float, progress: Callable[[TrackProgress], None] | None) -> TrackReport:
        with self._cond:
            self._closing = True
            self._cond.notify()
            if self._thread is None:  # never started: the thread does the final reconcile alone
                self._thread = threading.Thread(target=self._work, name="schedlab-tracking", daemon=True)
                self._thread.start()
        started = moved = time.monotonic()
        seen = (-1, "")
        try:
            while True:
                self._thread.join(POLL_SECONDS)
                if not self._thread.is_alive():
                    break
                now = time.monotonic()
                mark = (self._sync.ticks, self._sync.stage)
                if mark != seen:
                    seen, moved = mark, now
                if progress is not None:
                    progress(self.progress(now - started, now - moved))
                if now - moved > stall:
                    with self._cond:
                        self._stop = True
                        left = len(self._pending)
                    self._sync.record(
                        f"tracking made no progress for {stall:g} s ({self._sync.stage}; "
                        f"{left} configuration(s) still queued)",
                        fatal=True,
                    )
                    return self._sync.report()
        except KeyboardInterrupt:
            with self._cond:
                self._stop = True
                self._cond.notify()
            self._sync.record("interrupted while waiting for tracking", fatal=True)
            raise
        return self._report if self._report is not None else self._sync.report()
