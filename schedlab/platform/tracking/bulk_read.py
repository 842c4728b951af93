"""A parent's child runs read straight from an MLflow database (SQLite, or
PostgreSQL reached directly) of a known schema -- the reading side of
`tracking_bulk`.

MLflow's ``search_runs`` builds an ORM object per run, tag, param and latest
metric and pages 1,000 runs at a time: about 3 ms per run, so the two
searches of a ``schedlab track`` (the reconcile's, the final verify's) took
over a minute at 10,000 configurations. `child_runs` answers the same
question -- the active runs of one experiment tagged with one parent, oldest
first (start time, then run id: MLflow's own order), each with its name (the
``mlflow.runName`` tag when the column is empty, as MLflow does), status,
params, tags and latest metric values (``is_nan`` -> NaN) -- in four queries,
read through the database driver's own cursor (``fetchall``: SQLAlchemy's
row objects, one per fetched row, were half of the reading at 10,000 runs).
``tests/test_tracking_bulk.py`` compares it with ``search_runs`` on the same
stores.

`child_run_blocks` gives the same runs `READ_BLOCK` at a time: the runs'
ids, names and statuses are read first (a few hundred bytes a run), then
each block's tags, params and metrics by run id. A caller that looks at
each run once (the final verify) then holds one block of runs' contents,
not every run's: at 1,000,000 configurations those were about 7 GB of
Python objects at once (issue 42).

Only used on a store `tracking_bulk.bulk_store` accepted (its revision and
columns checked).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

PARENT_TAG = "mlflow.parentRunId"
RUN_NAME_TAG = "mlflow.runName"


@dataclass
class StoredRun:
    """One run as the database holds it (what ``search_runs`` would return of it)."""

    run_id: str
    name: str
    status: str
    params: dict[str, str] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)


#: A bound value in the driver's own SQL, per MLflow ``db_type``: sqlite3's named style, psycopg's pyformat.
_PLACEHOLDER = {"sqlite": ":{}", "postgresql": "%({})s"}


def _children(db_type: str) -> str:
    """The runs of the experiment tagged with the parent, as one subquery the four reads share."""
    experiment, parent_key, parent = (_PLACEHOLDER[db_type].format(n) for n in ("experiment", "parent_key", "parent"))
    return (
        "SELECT r.run_uuid FROM runs r JOIN tags p ON p.run_uuid = r.run_uuid "
        f"WHERE r.experiment_id = {experiment} AND r.lifecycle_stage = 'active' "
        f"AND p.key = {parent_key} AND p.value = {parent}"
    )


#: Runs whose tags, params and metrics `child_run_blocks` reads at a time (one bound value a run:
#: well under SQLite's 32,766 and PostgreSQL's 65,535 bound values a statement).
READ_BLOCK = 2_000


def child_runs(store: SqlAlchemyStore, experiment_id: str, parent_id: str) -> list[StoredRun]:
    """The active runs of ``experiment_id`` whose ``mlflow.parentRunId`` tag is
    ``parent_id``, oldest first, as ``search_runs(..., order_by=["attributes.start_time
    ASC"])`` lists them."""
    return [run for block in child_run_blocks(store, experiment_id, parent_id) for run in block]


def child_run_blocks(store: SqlAlchemyStore, experiment_id: str, parent_id: str) -> Iterator[list[StoredRun]]:
    """`child_runs`, `READ_BLOCK` runs at a time, in the same order."""
    args = {"experiment": int(experiment_id), "parent_key": PARENT_TAG, "parent": parent_id}
    children = _children(store.db_type)
    with store.engine.connect() as con:
        cursor = con.connection.dbapi_connection.cursor()
        try:
            cursor.execute(
                "SELECT run_uuid, name, status FROM runs "  # noqa: S608 - fixed text, bound values
                f"WHERE run_uuid IN ({children}) ORDER BY start_time ASC, run_uuid ASC",
                args,
            )
            listed = cursor.fetchall()
            for start in range(0, len(listed), READ_BLOCK):
                yield _contents(cursor, store.db_type, listed[start : start + READ_BLOCK])
        finally:
            cursor.close()


def runs_by_id(store: SqlAlchemyStore, run_ids: Sequence[str]) -> list[StoredRun]:
    """The active runs among ``run_ids`` (others are left out), `READ_BLOCK` at a time."""
    mark = _PLACEHOLDER[store.db_type]
    out: list[StoredRun] = []
    with store.engine.connect() as con:
        cursor = con.connection.dbapi_connection.cursor()
        try:
            for start in range(0, len(run_ids), READ_BLOCK):
                ids = {f"r{i}": run_id for i, run_id in enumerate(run_ids[start : start + READ_BLOCK])}
                cursor.execute(
                    "SELECT run_uuid, name, status FROM runs "  # noqa: S608 - fixed text, bound values
                    f"WHERE run_uuid IN ({', '.join(mark.format(k) for k in ids)}) AND lifecycle_stage = 'active'",
                    ids,
                )
                out += _contents(cursor, store.db_type, cursor.fetchall())
        finally:
            cursor.close()
    return out


def _contents(cursor: Any, db_type: str, listed: Sequence[tuple[str, str | None, str]]) -> list[StoredRun]:
    """The runs ``listed`` ((run id, name, status) rows, at most `READ_BLOCK`)
    with their tags, params and latest metrics, in the order listed."""
    if not listed:
        return []
    mark = _PLACEHOLDER[db_type]
    runs = {run_id: StoredRun(run_id, name or "", status) for run_id, name, status in listed}
    ids = {f"r{i}": run_id for i, run_id in enumerate(runs)}
    among = ", ".join(mark.format(k) for k in ids)
    for table in ("tags", "params"):
        cursor.execute(f"SELECT run_uuid, key, value FROM {table} WHERE run_uuid IN ({among})", ids)  # noqa: S608
        for run_id, key, value in cursor.fetchall():
            getattr(runs[run_id], table)[key] = value
    cursor.execute(f"SELECT run_uuid, key, value, is_nan FROM latest_metrics WHERE run_uuid IN ({among})", ids)  # noqa: S608
    for run_id, key, value, is_nan in cursor.fetchall():
        runs[run_id].metrics[key] = float("nan") if is_nan else float(value)
    for run in runs.values():
        if not run.name:  # MLflow's Run entity: the name column, else the run-name tag
            run.name = run.tags.get(RUN_NAME_TAG, "")
    return list(runs.values())
