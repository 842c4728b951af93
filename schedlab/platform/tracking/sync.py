"""Bringing one tracking store to what a results dir says (`Sync`): connect,
reconcile, log through a bounded pool of MLflow clients, verify.

Concurrency follows the store. An ``http(s)://`` server answers requests in
parallel (its workers, its database's connection pool), so `LOG_THREADS`
threads each bring one configuration's run up to date at a time; MLflow's
client shares one keep-alive connection pool between them
(``MLFLOW_HTTP_POOL_MAXSIZE``, default 10 >= `LOG_THREADS`). A SQLite file
has one writer at a time: threads would only queue on its lock, so it gets
one thread, and each run's contents go in as few transactions as MLflow
allows (`tracking_mirror`) on a store in WAL mode (`tracking_store`).

Failure policy: nothing here raises into a sweep except a damaged part file
(`UserError`, the user's to fix). A failure of the tracking store
(connection refused, timeouts, server errors) stops talking to it until the
final reconcile tries again; data problems of one configuration are
recorded and the others are still logged.
"""

from __future__ import annotations

import importlib
import itertools
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from schedlab.errors import UserError
from schedlab.platform.tracking.bulk import BULK_RUNS, NewRun
from schedlab.platform.tracking.data import (
    CONFIG_TAG,
    Expected,
    ExpectedRuns,
    Gathering,
    code_digest,
    expected_runs,
    lacking_of,
    read_manifest,
    some_of,
)
from schedlab.platform.tracking.mirror import (
    CODE_ARTIFACTS_TAG,
    CODE_DIR,
    Children,
    Mirror,
    behind,
    is_data_error,
    up_to_date,
)
from schedlab.platform.tracking.store import is_http, prepare_store
from schedlab.platform.tracking.ui import TableRows, browse_hint

READ_ATTEMPTS = 3
#: The parent run's artifact folder of a sweep's figures (the headline figure, `Sync.log_figures`).
FIGURES_DIR = "figures"
#: Configurations logged at once into an MLflow server (one MLflow client call in flight per thread).
LOG_THREADS = 8


@dataclass
class TrackReport:
    """What tracking achieved. ``logged``: configurations whose MLflow run now
    mirrors the results dir; ``failed``: MLflow does not (or may not) match the
    results dir (``error`` says why; ``schedlab track DIR`` finishes it)."""

    logged: int = 0
    failed: bool = False
    error: str | None = None
    #: figures added to the sweep's parent run (artifact paths, `FIGURES_DIR`/name), and why not, if not
    figures: list[str] = field(default_factory=list)
    figures_error: str | None = None
    #: where to look at the runs in MLflow's UI (`tracking_ui.browse_hint`), once connected;
    #: a hint, not part of the outcome (reports compare equal without it)
    browse: str | None = field(default=None, compare=False)


def describe_error(err: Exception) -> str:
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0] if text else ''}"[:500]


#: What connecting imports, first of all: MLflow's client and SQL store
#: (about 1.5 s) and the storage layer that reads the results dir.
PRELOAD = (
    "mlflow.tracking",
    "mlflow.store.tracking.sqlalchemy_store",
    "mlflow.store.db.utils",
    "schedlab.platform.storage.store",
)
_PRELOADING = threading.Lock()


def preload() -> None:
    """Import `PRELOAD`, one thread at a time: the tracking process starts
    this the moment it is spawned (`tracking.process`), and `Sync.connect`
    calls it again, which waits for an import in progress instead of racing
    it (two threads importing MLflow's package at once can each see the other's
    half-initialized module). A failure is left for connecting to meet and
    report."""
    with _PRELOADING:
        for name in PRELOAD:
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001 - connect's own imports report it
                return


class Sync:
    """Reads the results dir and mirrors it; records failures instead of raising
    (a damaged part file is a `UserError`, raised). One caller at a time (the
    tracker's worker, or backfill); the pool's threads are its own.
    ``logged_total`` / ``queued_total`` / ``ticks`` tell a watcher how far it
    got and whether it still moves."""

    def __init__(
        self,
        uri: str,
        experiment: str | None,
        results_dir: Path,
        manifest: dict[str, Any] | None = None,
        bulk: bool = True,
    ):
        self.uri = uri
        self.bulk = bulk  # False: new runs through MLflow's client even into a database (`tracking_bulk`)
        self.experiment = experiment
        self.results_dir = results_dir
        self.manifest = manifest
        self.mirror: Mirror | None = None
        self.logged: set[str] = set()
        self.failed = False
        self.error: str | None = None
        self.dead = False  # the store failed: stop talking to it
        self.threads = LOG_THREADS if is_http(uri) else 1
        self.queued_total = 0  # configurations handed to the pool so far
        self.logged_total = 0  # of those, brought up to date (or recorded as a data problem)
        self.ticks = 0  # store calls answered: moves while tracking makes progress
        self.stage = "connecting"
        self._lock = threading.Lock()

    def record(self, message: str, fatal: bool = False) -> None:
        with self._lock:
            self.failed = True
            if self.error is None:
                self.error = message
            if fatal:
                self.dead = True

    def report(self) -> TrackReport:
        browse = browse_hint(self.uri, self.mirror.experiment_id) if self.mirror is not None else None
        return TrackReport(logged=len(self.logged), failed=self.failed, error=self.error, browse=browse)

    def connect(self) -> bool:
        preload()
        try:
            if self.manifest is None:
                self.manifest = read_manifest(self.results_dir)
            prepare_store(self.uri)
            self.mirror = Mirror(self.uri, self.experiment, self.manifest, self.bulk)
            self.mirror.tick = self.tick
        except Exception as err:
            self.record(f"tracking to {self.uri} failed: {describe_error(err)}", fatal=True)
            return False
        self.dead = False
        return True

    def _expected(self, config_ids: list[str] | None) -> ExpectedRuns | None:
        """What the runs must hold (None after recording a failure). A damaged
        part file is raised (`UserError`): it is the user's to fix."""
        if self.manifest is None:  # invariant: only called once connected, and connect() read the manifest
            raise RuntimeError("Sync._expected called before connect()")
        stale = getattr(self.manifest["configs"], "stale", None)
        if stale is not None and stale():  # written again since (a search's new trials): its lines moved
            self.manifest = read_manifest(self.results_dir)
        delay = 0.2
        for attempt in range(READ_ATTEMPTS):
            try:
                expected, unknown = expected_runs(self.results_dir, self.manifest, config_ids)
                break
            except UserError:
                raise
            except Exception as err:  # noqa: BLE001 - e.g. a filesystem hiccup
                if attempt == READ_ATTEMPTS - 1:
                    self.record(f"reading {self.results_dir / 'summary'} failed: {describe_error(err)}")
                    return None
                time.sleep(delay)
                delay *= 2.5
        if unknown:
            try:  # configurations added since we read it
                self.manifest = read_manifest(self.results_dir)
                expected, unknown = expected_runs(self.results_dir, self.manifest, config_ids)
            except UserError as err:
                self.record(str(err))
        if unknown:
            listed = ", ".join(unknown[:5])
            self.record(f"{len(unknown)} configuration(s) in the summary are not in manifest.json: {listed}")
        return expected

    def tick(self) -> None:
        with self._lock:
            self.ticks += 1

    def _log_one(self, exp: Expected) -> bool:
        """Log one configuration; False when the store failed (recorded)."""
        if self.mirror is None:  # invariant: only reached through track/reconcile, which need the mirror
            raise RuntimeError("Sync._log_one called before connect()")
        try:
            self.mirror.log(exp)
        except Exception as err:
            if not is_data_error(err):
                self.record(f"tracking to {self.uri} failed: {describe_error(err)}", fatal=True)
                return False
            self.record(f"config {exp.config_id}: {describe_error(err)}")
        else:
            with self._lock:
                self.logged.add(exp.config_id)
        with self._lock:
            self.logged_total += 1
            self.ticks += 1
        return True

    def _log_new(self, blocks: Iterable[list[Expected]]) -> None:
        """Create the runs of configurations that have none, `BULK_RUNS` to a
        transaction (a database of a known schema), from ``blocks`` of them
        as they are made. One
        writer thread commits a batch while this one builds the next
        (`Mirror.build_new`, `Mirror.commit_new`): building is Python under
        the GIL, committing is mostly the database's work (SQLite's C with
        the GIL released, PostgreSQL's server), so the two overlap. Batches
        are committed in order, one at a time; after a failure of the store
        nothing more is committed (a built batch not yet handed over is
        dropped: its configurations have no run, which the reconcile finds)."""
        if self.mirror is None:  # invariant: only reached through _log_all
            raise RuntimeError("Sync._log_new called before connect()")
        mirror = self.mirror

        def settle(pending: Future[list[NewRun]]) -> bool:
            try:
                written = pending.result()
            except Exception as err:
                self.record(f"tracking to {self.uri} failed: {describe_error(err)}", fatal=True)
                return False
            for new in written:
                if new.error is not None:
                    self.record(f"config {new.exp.config_id}: {describe_error(new.error)}")
            with self._lock:
                self.logged.update(new.exp.config_id for new in written if new.error is None)
                self.logged_total += len(written)
                self.ticks += 1
            return True

        pending: Future[list[NewRun]] | None = None
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="schedlab-bulk") as writer:
            for batch_runs in _chunks(itertools.chain.from_iterable(blocks), BULK_RUNS):
                if self.dead:
                    break
                try:
                    batch = mirror.build_new(batch_runs)
                except Exception as err:
                    self.record(f"tracking to {self.uri} failed: {describe_error(err)}", fatal=True)
                    break
                if pending is not None and not settle(pending):
                    pending = None
                    break
                pending = writer.submit(mirror.commit_new, batch)
            if pending is not None:
                settle(pending)

    def _log_all(self, expected: Iterable[Expected]) -> None:
        """Log each configuration, `threads` at a time; stop at the first
        failure of the store (the calls in flight finish). ``expected`` is
        read as it is made, `BULK_RUNS` at a time: a block's new runs go to
        the bulk writer, the others are brought up to date block by block
        (into a database written in bulk, new runs first)."""
        if self.mirror is None:  # invariant: only reached through track/reconcile, which need the mirror
            raise RuntimeError("Sync._log_all called before connect()")
        children = self.mirror.children()  # the one search, before any thread reads it
        old: list[Expected] = []  # runs there are, to bring up to date: those behind the rows, usually few

        def counted(blocks: Iterable[list[Expected]]) -> Iterator[list[Expected]]:
            for block in blocks:
                with self._lock:
                    self.queued_total += len(block)
                yield block

        try:
            if self.mirror.bulk is not None:

                def new_ones() -> Iterator[list[Expected]]:
                    for block in counted(_chunks(expected, BULK_RUNS)):
                        old.extend(exp for exp in block if exp.config_id in children)
                        yield [exp for exp in block if exp.config_id not in children]

                self._log_new(new_ones())
                self._log_each(old, children)
            else:
                for block in counted(_chunks(expected, BULK_RUNS)):
                    self._log_each(block, children)
                    if self.dead:
                        break
        finally:
            children.release()  # the contents of runs read back to log them again (`Children`)

    def _log_each(self, todo: list[Expected], children: Children) -> None:
        """`_log_one` of each configuration, `threads` at a time (their runs'
        contents read back a block at a time first, `Children.load`)."""
        if self.threads == 1:
            for start in range(0, len(todo), BULK_RUNS):
                block = todo[start : start + BULK_RUNS]
                children.load([exp.config_id for exp in block])
                for exp in block:
                    if self.dead or not self._log_one(exp):
                        return
                children.release()
            return
        with ThreadPoolExecutor(self.threads, thread_name_prefix="schedlab-mlflow") as pool:
            running: set[Future[bool]] = set()
            for exp in todo:
                if self.dead:
                    break
                if len(running) >= 2 * self.threads:  # bounded: a 100k-configuration reconcile queues no more
                    _, running = wait(running, return_when=FIRST_COMPLETED)
                running.add(pool.submit(self._log_one, exp))
            wait(running)

    def track(self, config_ids: list[str] | None) -> None:
        """Mirror the given configurations (all with summary rows when None)."""
        if self.dead or self.mirror is None:
            return
        expected = self._expected(config_ids)
        if expected:
            self._log_all(expected.values())

    def reconcile(self, expected: ExpectedRuns | None = None) -> ExpectedRuns | None:
        """Make the whole experiment match the disk: tidy (extra parents,
        duplicated or orphan children), log every run that is missing or
        behind, log ``code/``. Returns what was expected (None on failure)."""
        if self.dead or self.mirror is None:
            return None
        self.stage = "reconciling"
        if expected is None:
            expected = self._expected(None)
            if expected is None:
                return None
        try:
            behind_rows = self.mirror.tidy(expected)
            children = self.mirror.children()
            todo = (cid for cid in expected if cid not in children or cid in behind_rows)
            self._log_all(exp for ids in _chunks(todo, BULK_RUNS) for exp in some_of(expected, ids).values())
            if not self.dead:
                self.mirror.sync_code(self.results_dir)
        except Exception as err:
            self.record(f"tracking to {self.uri} failed: {describe_error(err)}", fatal=True)
            return None
        return expected

    def verify(self, expected: Mapping[str, Expected]) -> None:
        """Check, fresh from the store, that MLflow holds exactly ``expected``:
        one parent, one finished child per configuration with rows, equal to
        the disk; record what does not hold. The children are read a block at
        a time (`Mirror.search_children_blocks`) and each is compared as it
        comes: what is kept per run is its count and, when it is behind, why
        -- not its contents (a 10^6 sweep's runs read at once were about 7 GB)."""
        if self.dead or self.mirror is None:
            return
        self.stage = "verifying"
        counts: dict[str, int] = {}  # config id -> its child runs
        behind_by: dict[str, str] = {}  # config id -> how its (first, oldest) run differs from the disk
        # every run is made here once: what describing them needs is gathered too, the results table's rows written
        gathered = Gathering()
        if isinstance(expected, ExpectedRuns) and expected._overview is None:
            gathered = Gathering(TableRows([a for a in expected.varying if a != "policy"], expected.key_order()))
        try:
            parents = self.mirror.parents()
            for block in self.mirror.search_children_blocks():
                made = some_of(expected, [state.tags[CONFIG_TAG] for state in block])  # the block's, made at once
                for state in block:
                    cid = state.tags[CONFIG_TAG]
                    seen = counts.get(cid, 0)
                    counts[cid] = seen + 1
                    exp = made.get(cid)
                    if not seen and exp is not None:
                        gathered.add(exp)
                        if not up_to_date(state, exp):
                            behind_by[cid] = behind(state, exp)
            code = code_digest(self.results_dir / CODE_DIR)
            parent_tags = next((p.tags for p in parents if p.run_id == self.mirror.parent.run_id), {})
        except Exception as err:
            gathered.drop()
            self.record(f"tracking to {self.uri} failed: {describe_error(err)}", fatal=True)
            return
        problems = []
        if len(parents) != 1:
            problems.append(f"{len(parents)} parent runs of sweep {self.mirror.sweep}")
        if code is not None and parent_tags.get(CODE_ARTIFACTS_TAG) != code:
            problems.append(f"code/ not logged to the parent run (digest {code})")
        good = set()
        for cid in expected:
            n = counts.get(cid, 0)
            if n != 1:
                problems.append(f"config {cid}: {n} runs")
            elif cid in behind_by:
                problems.append(f"config {cid}: {behind_by[cid]}")
            else:
                good.add(cid)
        extra = sorted(lacking_of(expected, counts))
        if isinstance(expected, ExpectedRuns) and expected._overview is None:
            expected.adopt(gathered)
        else:
            gathered.drop()
        if extra:
            problems.append(f"{len(extra)} run(s) of configurations without rows, e.g. {extra[0]}")
        self.logged = good
        if problems:
            self.record(
                f"MLflow at {self.uri} does not match {self.results_dir} "
                f"({len(problems)} problem(s); first: {problems[0]})"
            )

    def finalize(self) -> TrackReport:
        """Reconcile everything once more (reconnecting if the store failed
        earlier), verify, mark the parent finished. The report is the end
        state: earlier failures that this repaired do not count."""
        self.failed, self.error, self.logged = False, None, set()
        if self.mirror is None or self.dead:
            self.mirror = None
            if not self.connect():
                return self.report()
        expected = self.reconcile()
        if expected is not None:
            self.manifest = expected.manifest  # read again if it was written since (`ExpectedRuns.reread`)
            self.verify(expected)
        if not self.dead:
            if self.mirror is None or self.manifest is None:  # invariant: connect() set both or we returned
                raise RuntimeError("Sync.finalize without a connected mirror")
            try:
                from schedlab.platform.tracking.selection import log_selection

                log_selection(self.mirror.client, self.mirror.parent.run_id, self.results_dir)  # selection.json, if any
                if expected is not None:
                    self.mirror.describe(self.manifest, expected)
                self.mirror.finish()
            except Exception as err:
                self.record(f"tracking to {self.uri} failed: {describe_error(err)}", fatal=True)
        return self.report()

    def log_figures(self, paths: list[str]) -> tuple[list[str], str | None]:
        """Add the files ``paths`` to the sweep's parent run under
        `FIGURES_DIR`; (their artifact paths, None) or ([], why not). A
        picture never fails tracking: nothing is recorded."""
        if self.dead or self.mirror is None:
            return [], "tracking is not connected"
        try:
            for path in paths:
                self.mirror.client.log_artifact(self.mirror.parent.run_id, path, artifact_path=FIGURES_DIR)
        except Exception as err:  # noqa: BLE001 - reported as a warning by the caller
            return [], describe_error(err)
        return [f"{FIGURES_DIR}/{Path(p).name}" for p in paths], None


T = TypeVar("T")


def _chunks(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """``items`` (read lazily) in lists of ``size``, the last shorter; no empty list."""
    it = iter(items)
    while chunk := list(itertools.islice(it, size)):
        yield chunk
