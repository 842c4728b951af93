"""New child runs written many to a transaction into an MLflow database
(a SQLite file, or PostgreSQL reached directly, not through a server).

Through MLflow's client a new run is three store calls (``create_run``,
``log_batch``, ``set_terminated``) and MLflow's ORM spends about 15 ms of CPU
on them -- 60 tracked configurations per second at best, before the
database's commits. Into a database the runs of configurations that have
none yet are instead written by `build_new_runs` and `insert_new_runs`: ``BULK_RUNS`` runs per
transaction, through MLflow's own store (its engine, its managed sessions,
its table models, its validators), as the same rows the client path writes
-- the ``runs`` row (FINISHED, ``user_id`` ``unknown``, artifact URI under
the experiment's), its tags with ``mlflow.runName``, its params, one
``metrics`` and one ``latest_metrics`` row per metric at step 0.
``tests/test_tracking_bulk.py`` (SQLite) and ``tests/test_tracking_postgres.py``
(PostgreSQL) read every run of both paths back through ``MlflowClient``
(runs, search filters, metric history, latest metrics) and compare them, and
every row of the five tables.

A transaction commits all its runs or none, so a kill or a failed commit can
never leave a half-logged run, and no retry can create a run twice: a run is
created in exactly one committed transaction, and the reconcile after a
failure finds the committed ones by their ``schedlab.config_id`` tag.

Only a store whose schema is one this module was checked against is written
this way: a database of `BULK_DIALECTS`, its Alembic revision in
`KNOWN_REVISIONS` and the five tables with exactly the columns of `COLUMNS`
(read from the database, not assumed). Any other store -- another MLflow
schema, another database, an ``http(s)://`` server -- goes through the
client, as before.

``mlflow`` and ``sqlalchemy`` are imported inside functions only.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from schedlab.platform.tracking.data import Expected

if TYPE_CHECKING:
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore
    from mlflow.tracking import MlflowClient

#: The databases new runs are written to in bulk (MLflow's ``db_type``): the
#: ones ``tests/test_tracking_bulk.py`` and ``tests/test_tracking_postgres.py``
#: compare with the client path.
BULK_DIALECTS = frozenset({"sqlite", "postgresql"})

#: Runs written per transaction: large enough that the commit and the
#: experiment check are a small share, small enough that the live tracker
#: still reports progress often and a failed commit loses little work.
BULK_RUNS = 1000

#: MLflow schema revisions (``alembic_version``) whose run tables are the
#: `COLUMNS` below and for which the test compares both paths (MLflow 3.x heads).
KNOWN_REVISIONS = frozenset({"dc11669786a5"})

#: The columns this module writes, per table, as the revisions above have them.
COLUMNS: dict[str, frozenset[str]] = {
    "runs": frozenset(
        {
            "run_uuid",
            "name",
            "source_type",
            "source_name",
            "entry_point_name",
            "user_id",
            "status",
            "start_time",
            "end_time",
            "deleted_time",
            "source_version",
            "lifecycle_stage",
            "artifact_uri",
            "experiment_id",
        }
    ),
    "tags": frozenset({"key", "value", "run_uuid"}),
    "params": frozenset({"key", "value", "run_uuid"}),
    "metrics": frozenset({"key", "value", "timestamp", "step", "is_nan", "run_uuid"}),
    "latest_metrics": frozenset({"key", "value", "timestamp", "step", "is_nan", "run_uuid"}),
}

RUN_NAME_TAG = "mlflow.runName"
PARENT_TAG = "mlflow.parentRunId"


@dataclass
class NewRun:
    """What `build_new_runs` made for one configuration (its run id, its tags
    and params as MLflow holds them: its validators may cut long values) or
    why not (``error``: a data problem of this configuration, MLflow's own
    validation error)."""

    exp: Expected
    run_id: str = ""
    tags: dict[str, str] = field(default_factory=dict)
    params: dict[str, str] = field(default_factory=dict)
    error: Exception | None = None


def bulk_store(client: MlflowClient) -> SqlAlchemyStore | None:
    """The client's store if new runs may be written to it in bulk: a
    `SqlAlchemyStore` on a database of `BULK_DIALECTS` at a known revision
    with the expected columns; else None."""
    try:
        from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore
        from sqlalchemy import inspect, text
    except ImportError:
        return None
    store = getattr(getattr(client, "_tracking_client", None), "store", None)
    if not isinstance(store, SqlAlchemyStore) or store.db_type not in BULK_DIALECTS:
        return None
    try:
        with store.engine.connect() as con:
            revisions = [row[0] for row in con.execute(text("SELECT version_num FROM alembic_version"))]
            inspector = inspect(con)
            columns = {table: frozenset(c["name"] for c in inspector.get_columns(table)) for table in COLUMNS}
    except Exception:  # noqa: BLE001 - an unreadable or foreign schema: the client path decides
        return None
    if len(revisions) != 1 or revisions[0] not in KNOWN_REVISIONS or columns != COLUMNS:
        return None
    return store


def _validated(exp: Expected, tags: dict[str, str]) -> tuple[list[Any], list[Any], list[Any]]:
    """MLflow's own checks of one run's entities (raises its INVALID_PARAMETER_VALUE error)."""
    from mlflow.entities import Metric, Param, RunTag
    from mlflow.utils.validation import _validate_batch_log_data, _validate_param_keys_unique

    now = int(time.time() * 1000)
    metrics = [Metric(k, v, now, 0) for k, v in exp.values.items()]
    params = [Param(k, v) for k, v in exp.params.items()]
    tag_list = [RunTag(k, v) for k, v in tags.items()]
    # MLflow leaves these unannotated: they return the entities, long values cut, or raise.
    validate: Callable[..., tuple[list[Any], list[Any], list[Any]]] = _validate_batch_log_data
    unique: Callable[[list[Any]], None] = _validate_param_keys_unique
    metrics, params, tag_list = validate(metrics, params, tag_list)
    unique(params)
    return metrics, params, tag_list


#: Metric, param and tag names MLflow's validators (`_validated`) accepted in
#: this process. A name's check (its characters, that it is not a path that
#: resolves elsewhere, its length) depends on the name alone, and a sweep's
#: runs share their names: checked once, not once per run.
_ACCEPTED: dict[str, set[str]] = {"metrics": set(), "params": set(), "tags": set()}
_ACCEPTED_LOCK = threading.Lock()


def _limits() -> tuple[int, int]:
    """MLflow's longest param value and tag value (longer ones are cut or refused)."""
    from mlflow.utils.validation import MAX_PARAM_VAL_LENGTH, MAX_TAG_VAL_LENGTH

    return int(MAX_PARAM_VAL_LENGTH), int(MAX_TAG_VAL_LENGTH)


def _passes_unchanged(exp: Expected, tags: dict[str, str]) -> bool:
    """Whether `_validated` would accept this run's entities and leave them
    as they are: every name accepted before, every metric value a number
    (not a bool), every param and tag value a string within MLflow's length
    limit. Anything else goes through MLflow's validators themselves."""
    param_limit, tag_limit = _limits()
    accepted = _ACCEPTED
    names = accepted["metrics"]
    for key, value in exp.values.items():
        if key not in names or type(value) not in (float, int):
            return False
    names = accepted["params"]
    for key, text in exp.params.items():
        if key not in names or type(text) is not str or len(text) > param_limit:
            return False
    names = accepted["tags"]
    for key, text in tags.items():
        if key not in names or type(text) is not str or len(text) > tag_limit:
            return False
    return True


def checked(exp: Expected, tags: dict[str, str]) -> tuple[dict[str, float], dict[str, str], dict[str, str]]:
    """One run's metric values, params and tags as MLflow's validators leave
    them (long values cut), or their INVALID_PARAMETER_VALUE error raised:
    `_validated`'s answer, computed by it the first time a name is met
    (`_passes_unchanged` then answers for the runs whose entities it would
    leave unchanged: a sweep's runs share their names). At 10,000 runs
    MLflow's validators were the largest cost of writing them.
    ``tests/test_tracking_bulk.py`` compares both on awkward input."""
    if _passes_unchanged(exp, tags):
        return exp.values, dict(exp.params), tags
    metrics, params, tag_list = _validated(exp, tags)
    with _ACCEPTED_LOCK:  # no error: every name passed its check
        _ACCEPTED["metrics"].update(m.key for m in metrics)
        _ACCEPTED["params"].update(p.key for p in params)
        _ACCEPTED["tags"].update(t.key for t in tag_list)
    return {m.key: m.value for m in metrics}, {p.key: p.value for p in params}, {t.key: t.value for t in tag_list}


_clock = threading.Lock()
_last_start_ms = 0


def _start_time_ms() -> int:
    """A run's start (and end) time in ms: the clock, but strictly after the
    previous run's. MLflow lists runs newest first by start time, ties by
    run id (random): runs written in one transaction within the same
    millisecond would come out in random order, where the client path,
    creating them one at a time, lists them in the order they were logged."""
    global _last_start_ms
    with _clock:
        _last_start_ms = max(int(time.time() * 1000), _last_start_ms + 1)
        return _last_start_ms


#: The bits of a version-7 UUID (RFC 9562) around its 48-bit millisecond time: version, variant, random.
_UUID7_VERSION = 0x7 << 76
_UUID7_VARIANT = 0b10 << 62
_RAND_A_BITS, _RAND_B_BITS = 12, 62


def time_ordered_id(ms: int) -> str:
    """A new run id that sorts by its creation time ``ms`` (Unix ms): a
    version-7 UUID (48 bits of ``ms``, then 74 random bits from
    ``os.urandom``) as 32 lowercase hex digits, the form of MLflow's own ids
    (``uuid.uuid4().hex``), which it reads like any other. Random ids put
    each new run at a random place in every index keyed by run id (the five
    tables' primary keys and ``run_uuid`` indexes): at 10,000 runs that
    index upkeep was most of SQLite's time. Ids that grow with time are
    appended at the end instead. Not deterministic, as uuid4 ids were not:
    a run id is an identity, not a result."""
    rand = int.from_bytes(os.urandom(10), "big")
    rand_a = (rand >> _RAND_B_BITS) & ((1 << _RAND_A_BITS) - 1)
    rand_b = rand & ((1 << _RAND_B_BITS) - 1)
    value = (ms & 0xFFFF_FFFF_FFFF) << 80 | _UUID7_VERSION | rand_a << 64 | _UUID7_VARIANT | rand_b
    return f"{value:032x}"


#: The columns written per table, in the order `build_new_runs` builds its row tuples.
ROW_COLUMNS: dict[str, tuple[str, ...]] = {
    "runs": (
        "run_uuid",
        "name",
        "source_type",
        "source_name",
        "entry_point_name",
        "user_id",
        "status",
        "start_time",
        "end_time",
        "deleted_time",
        "source_version",
        "lifecycle_stage",
        "artifact_uri",
        "experiment_id",
    ),
    "tags": ("key", "value", "run_uuid"),
    "params": ("key", "value", "run_uuid"),
    "metrics": ("key", "value", "timestamp", "step", "is_nan", "run_uuid"),
    "latest_metrics": ("key", "value", "timestamp", "step", "is_nan", "run_uuid"),
}


def _stored(
    sanitize: Callable[[float], tuple[bool, float]], key: str, value: float, timestamp: int, run_id: str
) -> tuple[Any, ...]:
    """The ``metrics`` row of a NaN or an infinity, as MLflow's store writes it (``sanitize_metric_value``:
    NaN -> 0 with ``is_nan``, +-inf -> the largest double)."""
    is_nan, stored = sanitize(value)
    return (key, stored, timestamp, 0, is_nan, run_id)


@dataclass
class NewRows:
    """A batch of new runs built and checked, not yet written (`build_new_runs`):
    the rows of each table, and what each configuration became."""

    experiment_id: str
    rows: dict[str, list[tuple[Any, ...]]]
    runs: list[NewRun]


def build_new_runs(store: SqlAlchemyStore, experiment_id: str, parent_id: str, exps: list[Expected]) -> NewRows:
    """The rows of a finished child run of ``parent_id`` for each of ``exps``
    (none may have a run yet), checked by MLflow's validators; nothing is
    written (`insert_new_runs` does). Configurations whose data MLflow
    rejects come back with ``error`` set and no rows. Apart so that the
    caller can build the next batch while the database takes this one
    (`tracking_sync.Sync`): the building is Python, the writing mostly the
    database's own work (SQLite's C, PostgreSQL's server)."""
    from mlflow.entities import LifecycleStage, RunStatus, SourceType
    from mlflow.utils.uri import append_to_uri_path

    out: list[NewRun] = []
    rows: dict[str, list[tuple[Any, ...]]] = {"runs": [], "tags": [], "params": [], "metrics": []}
    # MLflow leaves these unannotated.
    get_experiment: Callable[[str], Any] = store.get_experiment
    artifact_uri: Callable[..., str] = append_to_uri_path
    sanitize: Callable[[float], tuple[bool, float]] = store.sanitize_metric_value
    source_type = SourceType.to_string(SourceType.UNKNOWN)
    finished = RunStatus.to_string(RunStatus.FINISHED)
    location = get_experiment(experiment_id).artifact_location
    folder = store.ARTIFACTS_FOLDER_NAME
    experiment_key = int(experiment_id)
    for exp in exps:
        name = exp.run_name or exp.config_id
        tags = dict(exp.tags)
        tags.update({PARENT_TAG: parent_id, RUN_NAME_TAG: name})
        try:
            values, params, tags = checked(exp, tags)
        except Exception as err:  # noqa: BLE001 - MlflowException(INVALID_PARAMETER_VALUE): this config's data
            out.append(NewRun(exp, error=err))
            continue
        now = _start_time_ms()
        logged = int(time.time() * 1000)  # the metrics' timestamp, as MLflow's log_batch stamps them
        run_id = time_ordered_id(now)
        uri = artifact_uri(location, run_id, folder)
        rows["runs"].append(
            (run_id, name, source_type, "", "", "unknown", finished, now, now, None, "")
            + (LifecycleStage.ACTIVE, uri, experiment_key)
        )
        rows["tags"] += [(k, v, run_id) for k, v in tags.items()]
        rows["params"] += [(k, v, run_id) for k, v in params.items()]
        rows["metrics"] += [
            (k, v, logged, 0, False, run_id) if math.isfinite(v) else _stored(sanitize, k, v, logged, run_id)
            for k, v in values.items()
        ]
        out.append(NewRun(exp, run_id, tags, params))
    return NewRows(experiment_id, rows, out)


def insert_new_runs(store: SqlAlchemyStore, batch: NewRows) -> list[NewRun]:
    """Write a built batch in one transaction, the experiment checked active
    inside it; a failure of the store is raised, and then none of these runs
    exists. The rows go in through the driver (`tracking_bulk_insert`), runs
    first: the others refer to them. Into PostgreSQL the transaction is set
    up by `tracking_bulk_pg.prepare_batch` (its commit not waiting for the
    disk and, where allowed, no foreign-key trigger per row: every child row
    names a run of this batch, checked here first). Returns what each
    configuration became."""
    from schedlab.platform.tracking.bulk_insert import insert_rows
    from schedlab.platform.tracking.bulk_pg import prepare_batch

    new_ids = {row[0] for row in batch.rows["runs"]}
    for table in ("tags", "params", "metrics"):
        if not {row[-1] for row in batch.rows[table]} <= new_ids:  # invariant: build_new_runs made them together
            raise RuntimeError(f"a {table} row of the batch names a run outside it")
    # MLflow leaves these unannotated.
    get_experiment: Callable[[str], Any] = store.get_experiment
    check_active: Callable[[Any], None] = store._check_experiment_is_active
    with store.ManagedSessionMaker(read_only=False) as session:
        check_active(get_experiment(batch.experiment_id))
        if store.db_type == "postgresql":
            cursor = session.connection().connection.cursor()  # the transaction's own DBAPI connection
            try:
                prepare_batch(cursor, str(store.db_uri), int(batch.experiment_id))
            finally:
                cursor.close()
        for table in ("runs", "tags", "params"):  # runs first: the others refer to them
            insert_rows(session, store.db_type, (table,), ROW_COLUMNS[table], batch.rows[table])
        # one point per metric: it is also the latest (the two tables' columns are the same)
        both = ("metrics", "latest_metrics")
        insert_rows(session, store.db_type, both, ROW_COLUMNS["metrics"], batch.rows["metrics"])
    return batch.runs
