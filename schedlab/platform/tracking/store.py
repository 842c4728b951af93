"""The MLflow tracking store: which one, is it there, and -- for a SQLite file --
creating it so that a kill at any moment leaves either no store or a whole one.

MLflow creates a new SQLite store in place, table by table and migration by
migration (alembic); a process killed meanwhile leaves a half-migrated file
that MLflow then refuses forever ("table _alembic_tmp_... already exists",
"out-of-date database schema"). Here a new store is built in a temporary file
beside the target and hard-linked into place only once complete (`os.link`
never overwrites: if another process got there first, its store is used). A
half-created file left by an older schedlab or another tool is detected;
when it holds no runs it is moved aside (``<name>.broken-<time>``) and
replaced, otherwise it is an error saying what to do.

Commits. MLflow writes a run in several transactions, and in SQLite's default
rollback-journal mode each one waits for several fsyncs: that, not MLflow's
own work, was most of the time of tracking into a SQLite file. The store is
switched to WAL mode (persistent, in the file; readers such as ``mlflow ui``
work as before, on the same machine) and this process's connections to it
use ``synchronous=NORMAL``: a commit no longer waits for the disk, a crash
of this process loses nothing, and a power cut can only lose the last
commits, never corrupt the file -- and what MLflow holds is a function of
the results dir, re-logged by the next run or ``schedlab track``.

Template. Building a store is MLflow's ~270 Alembic migrations: about 1 s,
paid by the first tracked run in every new folder (the README's first
command). The first build on a machine is kept, with its ``Default``
experiment removed, as a template (`template_path`: per MLflow version and
schema head); later stores are a copy of it, which MLflow completes on its
first open exactly as it does any store without a ``Default`` experiment
(it creates that row, with its artifact location from the opener's working
dir). A template that is damaged or of another schema is not used.

``mlflow`` is imported inside functions only.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from schedlab.platform.storage.durable import fsync_dir as _fsync_dir

if TYPE_CHECKING:
    import logging

DEFAULT_URI = "sqlite:///mlflow.db"

HEALTH_TIMEOUT = 3.0
# Applied with os.environ.setdefault for http(s) URIs: an explicit user setting wins.
# Connection refused then fails in ~3 s instead of ~4 min; a hung server in ~1.5 min
# (30 s per try: with several clients logging at once, a busy server's queue can
# hold a request for seconds, and a timed-out create is retried -- a duplicate
# that the final reconcile has to delete).
# MLflow also prints two "View run" lines per terminated run to stdout over HTTP:
# one per configuration would flood the sweep's output.
HTTP_ENV_DEFAULTS = {
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "30",
    "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT": "true",
}
#: Seconds SQLite waits for another process's write lock while we inspect a store.
SQLITE_TIMEOUT = 30.0
CREATING = ".creating-"  # infix of the temporary file a new store is built in


class TrackingError(Exception):
    """A tracking failure that is not a user mistake (store unreachable, ...)."""


def resolve_uri(uri: str | None) -> str:
    """The tracking URI: the argument, else ``MLFLOW_TRACKING_URI``, else
    `DEFAULT_URI`; a bare ``postgresql://`` one with its driver (`with_driver`)."""
    return with_driver(uri or os.environ.get("MLFLOW_TRACKING_URI") or DEFAULT_URI)


def with_driver(uri: str) -> str:
    """A ``postgresql://`` database URI as ``postgresql+psycopg2://`` when
    psycopg2 (the driver ``schedlab[postgres]`` installs) is there and
    psycopg 3 is not: SQLAlchemy 2.1 reads a bare ``postgresql://`` as
    psycopg 3 and would fail to import it. Any other URI is returned as is."""
    from importlib.util import find_spec

    if uri.startswith("postgresql://") and find_spec("psycopg") is None and find_spec("psycopg2") is not None:
        return "postgresql+psycopg2://" + uri[len("postgresql://") :]
    return uri


def is_http(uri: str) -> bool:
    return uri.startswith(("http://", "https://"))


def health_check(uri: str) -> None:
    """Raise TrackingError if nothing answers at ``uri`` within a few seconds.
    An HTTP error status still means a server is there: MLflow gets to try."""
    url = uri.rstrip("/") + "/health"
    try:
        with urllib.request.urlopen(url, timeout=HEALTH_TIMEOUT):
            pass
    except urllib.error.HTTPError:
        return
    except Exception as err:  # URLError, timeout, connection reset, ...
        reason = getattr(err, "reason", err)
        raise TrackingError(f"MLflow server {uri} unreachable: {reason}") from None


def sqlite_path(uri: str) -> Path | None:
    """The file of a ``sqlite:///`` URI (relative to the working dir unless
    absolute), or None for other URIs and in-memory databases."""
    if not uri.startswith("sqlite:///"):
        return None
    path = uri[len("sqlite:///") :].split("?", 1)[0]
    if not path or path == ":memory:":
        return None
    return Path(path)


def prepare_store(uri: str) -> None:
    """Make ``uri`` usable before MLflow touches it (see the module docstring)."""
    if is_http(uri):
        health_check(uri)
        for key, value in HTTP_ENV_DEFAULTS.items():
            os.environ.setdefault(key, value)
        return
    path = sqlite_path(uri)
    if path is not None:
        _quiet_sqlalchemy_errors()
        ensure_sqlite_store(path)
        use_wal(path)


class _DropCaughtDbErrors:
    """MLflow logs every SQLAlchemy error it re-raises with a full traceback
    (``mlflow.store.db.utils``); the tracker reports the failure itself, in one line."""

    @staticmethod
    def filter(record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("SQLAlchemy database error")


def _quiet_sqlalchemy_errors() -> None:
    import logging

    log = logging.getLogger("mlflow.store.db.utils")
    if not any(isinstance(f, _DropCaughtDbErrors) for f in log.filters):
        log.addFilter(_DropCaughtDbErrors())


# --------------------------------------------------------------------------- SQLite

#: Store files whose connections in this process commit without waiting for the disk.
_FAST_COMMITS: set[str] = set()


def use_wal(path: Path) -> None:
    """Put the store at ``path`` in WAL mode (a no-op when it is; skipped when
    another process holds it busy: tracking is correct either way, only
    slower) and have this process's connections to it commit with
    ``synchronous=NORMAL``."""
    try:
        con = sqlite3.connect(str(path), timeout=1.0)
        try:
            con.execute("PRAGMA journal_mode=WAL")
        finally:
            con.close()
    except sqlite3.Error:
        pass
    key = os.path.realpath(path)
    if key in _FAST_COMMITS:
        return
    if not _FAST_COMMITS:
        from sqlalchemy import event
        from sqlalchemy.engine import Engine

        event.listen(Engine, "connect", _on_connect)
    _FAST_COMMITS.add(key)


def _on_connect(dbapi_connection: object, _record: object) -> None:
    """SQLAlchemy's connect event, for every engine of this process: only
    SQLite connections to a store `use_wal` was asked for are changed."""
    if not isinstance(dbapi_connection, sqlite3.Connection):
        return
    try:
        files = [row[2] for row in dbapi_connection.execute("PRAGMA database_list") if row[1] == "main"]
        if files and files[0] and os.path.realpath(files[0]) in _FAST_COMMITS:
            dbapi_connection.execute("PRAGMA synchronous=NORMAL")
    except sqlite3.Error:
        pass


def ensure_sqlite_store(path: Path) -> None:
    """A complete MLflow store at ``path``: kept if whole, created atomically if
    absent, replaced if half-created and empty; TrackingError otherwise."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise TrackingError(f"{path.parent}: cannot create the MLflow store's directory ({err.strerror})") from None
    _remove_dead_temporaries(path)
    if path.exists():
        problem, runs = inspect_sqlite_store(path)
        if problem is None:
            return
        if runs:
            raise TrackingError(
                f"{path}: damaged MLflow store ({problem}) holding {runs} runs; back it up, then try "
                f"`mlflow db upgrade sqlite:///{path.resolve()}` (or point tracking elsewhere)"
            )
        aside = path.with_name(f"{path.name}.broken-{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:6]}")
        for suffix in ("", "-journal", "-wal", "-shm"):
            src = Path(f"{path}{suffix}")
            if src.exists():
                os.replace(src, f"{aside}{suffix}")
    _create_atomically(path)


def inspect_sqlite_store(path: Path) -> tuple[str | None, int]:
    """(what is wrong with the store at ``path`` or None, how many runs it holds)."""
    try:
        con = sqlite3.connect(str(path), timeout=SQLITE_TIMEOUT)
    except sqlite3.Error as err:
        return f"cannot open: {err}", 0
    try:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        runs = con.execute("SELECT COUNT(*) FROM runs").fetchone()[0] if "runs" in tables else 0
        leftovers = sorted(t for t in tables if t.startswith("_alembic_tmp_"))
        if leftovers:
            return f"an interrupted schema migration left table {leftovers[0]}", runs
        missing = [t for t in ("alembic_version", "experiments", "runs") if t not in tables]
        if missing:
            return f"schema creation never finished (no table {missing[0]})", runs
        rows = con.execute("SELECT version_num FROM alembic_version").fetchall()
        head = _head_revision()
        if len(rows) != 1 or (head is not None and rows[0][0] != head):
            found = rows[0][0] if rows else "none"
            return f"schema at revision {found}, not {head}", runs
        return None, runs
    except sqlite3.DatabaseError as err:
        return f"not a readable SQLite database: {err}", 0
    finally:
        con.close()


def _head_revision() -> str | None:
    try:
        from mlflow.store.db.utils import _get_latest_schema_revision

        # MLflow leaves it unannotated; it returns the head Alembic revision id.
        head: Callable[[], str] = _get_latest_schema_revision
        return head()
    except Exception:  # noqa: BLE001 - an MLflow without it: MLflow's own check still applies
        return None


def _create_atomically(path: Path) -> None:
    tmp = path.with_name(f".{path.name}{CREATING}{os.getpid()}-{uuid.uuid4().hex[:8]}")
    try:
        _create_schema(tmp)
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        try:
            os.link(tmp, path)  # never overwrites
        except FileExistsError:
            pass  # another process finished first: its store is complete too
        _fsync_dir(path.parent)
    except OSError as err:
        raise TrackingError(f"{path}: cannot create the MLflow store ({err.strerror or err})") from None
    finally:
        _remove_with_journals(tmp)


def _remove_with_journals(path: Path) -> None:
    """Delete a temporary SQLite file and its journal, WAL and shared-memory files, if any."""
    for suffix in ("", "-journal", "-wal", "-shm"):
        try:
            os.unlink(f"{path}{suffix}")
        except OSError:
            pass


def _create_schema(tmp: Path) -> None:
    """A complete store in ``tmp``: a copy of the template (`template_path`)
    when there is a sound one, else built by MLflow (and kept as the template)."""
    template = template_path()
    if template is not None and template.is_file() and inspect_sqlite_store(template)[0] is None:
        shutil.copyfile(template, tmp)
        return
    _build_schema(tmp)
    if template is not None:
        _save_template(tmp, template)


def template_path() -> Path | None:
    """Where this machine keeps the template store: ``$SCHEDLAB_CACHE_DIR/mlflow``,
    else ``~/.cache/schedlab/mlflow``, one file per MLflow version and schema
    head; None when the head is unknown (no template then)."""
    from importlib.metadata import version

    head = _head_revision()
    if head is None:
        return None
    env = os.environ.get("SCHEDLAB_CACHE_DIR")
    root = Path(env) if env else Path.home() / ".cache" / "schedlab"
    return root / "mlflow" / f"store-{version('mlflow')}-{head}.db"


def _save_template(store: Path, template: Path) -> None:
    """Keep a copy of the fresh ``store`` as the template, its ``Default``
    experiment deleted (MLflow re-creates it for each store's opener). Written
    beside and renamed into place; any failure only means no template."""
    part = template.with_name(f".{template.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}")
    try:
        template.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(store, part)
        con = sqlite3.connect(str(part), timeout=SQLITE_TIMEOUT)
        try:
            with con:
                con.execute("DELETE FROM experiments WHERE experiment_id = 0")
            con.execute("VACUUM")
        finally:
            con.close()
        if inspect_sqlite_store(part)[0] is None:
            os.replace(part, template)
    except (OSError, sqlite3.Error):
        pass
    finally:
        _remove_with_journals(part)


def _build_schema(tmp: Path) -> None:
    """Let MLflow build its whole schema (and Default experiment) in ``tmp``,
    exactly as it would for the real URI."""
    import logging

    from mlflow.tracking import MlflowClient

    quiet = [logging.getLogger(name) for name in ("mlflow.store.db.utils", "alembic")]
    levels = [log.level for log in quiet]
    for log in quiet:  # "Creating initial MLflow database tables..." for a file the user never sees
        log.setLevel(logging.WARNING)
    try:
        client = MlflowClient(tracking_uri=f"sqlite:///{tmp}")
        client.search_experiments(max_results=1)
    finally:
        for log, level in zip(quiet, levels):
            log.setLevel(level)
    try:  # close MLflow's cached connections to the temporary name
        client._tracking_client.store.engine.dispose()
    except Exception:  # noqa: BLE001 - only tidiness
        pass
    problem, _ = inspect_sqlite_store(tmp)
    if problem is not None:
        raise TrackingError(f"{tmp}: MLflow did not create a complete store ({problem})")


def _remove_dead_temporaries(path: Path) -> None:
    """Temporary stores of creators that died (killed mid-creation)."""
    for f in path.parent.glob(f".{path.name}{CREATING}*"):
        try:
            pid = int(f.name[len(f".{path.name}{CREATING}") :].split("-", 1)[0])
        except ValueError:
            continue
        if pid != os.getpid() and not _alive(pid):
            try:
                f.unlink()
            except OSError:
                pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# --------------------------------------------------------------------------- indexes for searches

#: Indexes schedlab adds to an MLflow database (SQLite or PostgreSQL) for the
#: searches a sweep's user runs: "runs where a swept value equals x (a param
#: or tag), ordered by a metric". MLflow's own keys on these tables are
#: (key, run_uuid): a filter on a value read every run's row of that key.
#: A PostgreSQL btree entry must fit in a third of a page and MLflow's values
#: may be 8000 characters long, so there the value index is an SP-GiST one
#: (a radix tree of the text: ``=`` and any length; MLflow's ``=`` filters
#: are what it serves). Not a hash index (what these were before,
#: `RETIRED_INDEXES`): a hash index keeps all entries of one value in one
#: bucket's chain of pages and walks the whole chain on every insert, and a
#: sweep's runs share most values (its fixed params, the parent-run tag), so
#: each new run cost time in proportion to the runs already there -- at
#: 300,000 equal values one insert took 186 us, where SP-GiST takes ~10 and
#: stays there.
SEARCH_INDEXES = {
    "sqlite": (
        "CREATE INDEX IF NOT EXISTS schedlab_params_key_value ON params (key, value)",
        "CREATE INDEX IF NOT EXISTS schedlab_tags_key_value ON tags (key, value)",
        "CREATE INDEX IF NOT EXISTS schedlab_latest_metrics_key_value ON latest_metrics (key, value)",
        "CREATE INDEX IF NOT EXISTS schedlab_runs_experiment_start ON runs (experiment_id, start_time)",
    ),
    "postgresql": (
        "CREATE INDEX IF NOT EXISTS schedlab_params_value_radix ON params USING spgist (value)",
        "CREATE INDEX IF NOT EXISTS schedlab_tags_value_radix ON tags USING spgist (value)",
        "CREATE INDEX IF NOT EXISTS schedlab_latest_metrics_key_value ON latest_metrics (key, value)",
        "CREATE INDEX IF NOT EXISTS schedlab_runs_experiment_start ON runs (experiment_id, start_time)",
    ),
}
#: Indexes earlier schedlab versions added and this one drops where it finds
#: them (the hash value indexes that SP-GiST ones replaced: see `SEARCH_INDEXES`).
RETIRED_INDEXES = {
    "sqlite": (),
    "postgresql": ("schedlab_params_value", "schedlab_tags_value"),
}
#: How long (ms) PostgreSQL may wait for a table's lock to change its indexes: dropping a retired
#: one locks its table, and a lock request queued behind a long read (a server's search) would hold
#: up every later query of that table; past it the store is searched as it is (see `ensure_indexes`).
INDEX_LOCK_TIMEOUT_MS = 5000
#: Stores (database URIs) this process has already given `SEARCH_INDEXES`.
_INDEXED: set[str] = set()


def ensure_indexes(client: object) -> None:
    """Give the database behind an MLflow client (a SQL store: not a server,
    which owns its database) `SEARCH_INDEXES`, once per process and store,
    and drop its `RETIRED_INDEXES`; idempotent (``IF NOT EXISTS``, ``IF
    EXISTS``). A store that refuses (read-only, a
    role without the right, a lock held too long) is searched without them:
    slower, never wrong."""
    store = getattr(getattr(client, "_tracking_client", None), "store", None)
    engine, db_type = getattr(store, "engine", None), getattr(store, "db_type", None)
    if engine is None or db_type not in SEARCH_INDEXES:
        return
    key = str(getattr(store, "db_uri", id(store)))
    if key in _INDEXED:
        return
    from sqlalchemy import text

    try:
        with engine.begin() as con:
            if db_type == "postgresql":
                con.execute(text(f"SET LOCAL lock_timeout = {INDEX_LOCK_TIMEOUT_MS}"))
            for name in RETIRED_INDEXES[db_type]:
                con.execute(text(f"DROP INDEX IF EXISTS {name}"))
            for statement in SEARCH_INDEXES[db_type]:
                con.execute(text(statement))
    except Exception:  # noqa: BLE001 - an optimisation only: see the docstring
        return
    _INDEXED.add(key)
