"""New runs written in bulk into a SQLite store (`tracking_bulk`) must be the
runs MLflow's own client path writes: both paths track the same results dir
into two real SQLite stores (tests/test_tracking_postgres.py: two PostgreSQL
databases, with `assert_bulk_equals_client`), and everything MLflow reads back -- runs, their
params, tags and latest metrics, metric histories, search filters and
ordering -- and every row of the five tables (ids and times aside) is compared."""

from __future__ import annotations

import json
import math
import re
import sqlite3
import uuid
from pathlib import Path

import pytest

from schedlab.platform.tracking import bulk as tracking_bulk
from schedlab.platform.tracking import bulk_read
from schedlab.platform.tracking import sync as tracking_sync
from schedlab.platform.tracking.bulk import bulk_store
from schedlab.platform.tracking.sync import Sync, TrackReport
from tests.test_tracking import (
    CONFIGS,
    METRICS,
    SWEEP,
    check_runs,
    expected,
    make_results,
    sqlite_children,
    write_summary,
)

#: Columns that differ between any two trackings (ids, clocks) and are compared separately.
VOLATILE = {"run_uuid", "start_time", "end_time", "timestamp", "artifact_uri"}
SEARCHES = [
    "metrics.n = 4",
    "metrics.mst > 0",
    "params.policy = 'FIFO'",
    "params.load = '0.9'",
    "tags.`schedlab.policy` = 'SRPTE+PS'",
    "attributes.status = 'FINISHED'",
    "attributes.run_name LIKE 'SRPTE%'",
]


def track(d: Path, uri: str, bulk: bool) -> TrackReport:
    sync = Sync(uri, None, d, bulk=bulk)
    report = sync.finalize()
    assert sync.mirror is not None and (sync.mirror.bulk is not None) == bulk  # the path under test was taken
    return report


def table_rows(uri: str, run_config: dict[str, str]) -> dict[str, list[tuple]]:
    """Every row of the tables a run is written to, its run id replaced by its
    configuration (the parent: 'parent'), volatile columns dropped, sorted."""
    from sqlalchemy import create_engine, text

    engine = create_engine(uri)
    try:
        out = {}
        with engine.connect() as con:
            for table in tracking_bulk.COLUMNS:
                rows = []
                for rec in con.execute(text(f"SELECT * FROM {table}")).mappings():  # noqa: S608 - fixed names
                    rec = dict(rec)
                    rec["run"] = run_config.get(rec["run_uuid"], "parent")
                    if rec.get("key") == "mlflow.parentRunId":
                        rec["value"] = "parent"
                    rows.append(tuple(sorted((k, v) for k, v in rec.items() if k not in VOLATILE)))
                out[table] = sorted(rows, key=repr)
        return out
    finally:
        engine.dispose()


#: A param value CSV and SQL quoting must carry through unchanged.
TRICKY = 'say "hi", C:\\dir\\n\nnext\tline, \'quoted\' ""'


def assert_read_equals_search(uri: str) -> None:
    """The children `tracking_bulk_read.child_runs` reads straight from the
    tables are the ones MLflow's ``search_runs`` returns, in its order."""
    from mlflow.tracking import MlflowClient

    from schedlab.platform.tracking.bulk_read import child_runs

    client = MlflowClient(tracking_uri=uri)
    store = bulk_store(client)
    assert store is not None
    exp = client.get_experiment_by_name(SWEEP)
    parent = next(r for r in client.search_runs([exp.experiment_id]) if "mlflow.parentRunId" not in r.data.tags)
    flt = f"tags.`mlflow.parentRunId` = '{parent.info.run_id}'"
    searched = client.search_runs([exp.experiment_id], flt, order_by=["attributes.start_time ASC"])
    want = [
        (r.info.run_id, r.info.run_name, r.info.status, r.data.params, r.data.tags, r.data.metrics) for r in searched
    ]
    got = [
        (r.run_id, r.name, r.status, r.params, r.tags, r.metrics)
        for r in child_runs(store, exp.experiment_id, parent.info.run_id)
    ]
    assert len(got) == len(CONFIGS) and got == want
    blocks = list(bulk_read.child_run_blocks(store, exp.experiment_id, parent.info.run_id))
    assert [r for b in blocks for r in b] == list(child_runs(store, exp.experiment_id, parent.info.run_id))
    assert all(0 < len(b) <= bulk_read.READ_BLOCK for b in blocks)


def assert_bulk_equals_client(d: Path, uris: dict[bool, str], monkeypatch, tricky: bool = False) -> None:
    """Track ``d`` in bulk into ``uris[True]`` and through the client into
    ``uris[False]`` (two fresh stores of one kind), 2 runs to a transaction,
    and compare everything MLflow reads back and every table row."""
    monkeypatch.setattr(tracking_sync, "BULK_RUNS", 2)  # 3 configurations: two transactions
    monkeypatch.setattr(bulk_read, "READ_BLOCK", 2)  # ... and read back in two blocks (the verify, the search)
    if tricky:  # a tag of every run: quotes, comma, backslash, newline, tab through SQLite's and COPY's paths
        manifest = json.loads((d / "manifest.json").read_text())
        manifest["spec_hash"] = TRICKY
        (d / "manifest.json").write_text(json.dumps(manifest))
    for bulk, uri in uris.items():
        assert track(d, uri, bulk) == TrackReport(logged=len(CONFIGS), failed=False, error=None)
        assert_read_equals_search(uri)
    seen = {}
    for bulk, uri in uris.items():
        client, runs, view = sqlite_children(uri)
        if not tricky:  # (check_runs knows the usual spec hash)
            check_runs(view, expected(d))  # against numpy/scipy, as for the client path
        exp = client.get_experiment_by_name(SWEEP)
        parent_id = next(iter(runs.values())).data.tags["mlflow.parentRunId"]
        info, history, fresh = {}, {}, {}
        for cid, run in runs.items():
            i = run.info
            assert i.artifact_uri == f"{exp.artifact_location}/{i.run_id}/artifacts"
            assert i.start_time <= i.end_time
            info[cid] = (i.status, i.lifecycle_stage, i.user_id, i.run_name, i.experiment_id == exp.experiment_id)
            history[cid] = {k: [(m.step, m.value) for m in client.get_metric_history(i.run_id, k)] for k in METRICS}
            got = client.get_run(i.run_id).data
            tags = {**got.tags, "mlflow.parentRunId": got.tags["mlflow.parentRunId"] == parent_id}
            fresh[cid] = (got.params, tags, got.metrics)
        found = {
            flt: [r.data.tags.get("schedlab.config_id") for r in client.search_runs([exp.experiment_id], flt)]
            for flt in SEARCHES
        }
        ordered = client.search_runs([exp.experiment_id], "metrics.n > 0", order_by=["metrics.mst DESC"])
        run_config = {r.info.run_id: cid for cid, r in runs.items()}
        seen[bulk] = (info, history, fresh, found, [r.info.run_name for r in ordered], table_rows(uri, run_config))
    assert all(flt for flt in seen[True][3].values())  # every search finds something
    for part, (a, b) in enumerate(zip(seen[True], seen[False])):
        assert a == b, f"part {part} differs between the bulk and the client path"


def test_bulk_runs_equal_client_runs(tmp_path, monkeypatch):
    d = make_results(tmp_path / "results")
    uris = {bulk: f"sqlite:///{tmp_path / ('bulk' if bulk else 'client')}.db" for bulk in (True, False)}
    assert_bulk_equals_client(d, uris, monkeypatch)


def test_bulk_runs_equal_client_runs_with_awkward_text(tmp_path, monkeypatch):
    d = make_results(tmp_path / "results")
    uris = {bulk: f"sqlite:///{tmp_path / ('bulk' if bulk else 'client')}.db" for bulk in (True, False)}
    assert_bulk_equals_client(d, uris, monkeypatch, tricky=True)


def test_known_runs_are_held_by_id_and_read_back_to_be_logged_again(tmp_path, monkeypatch):
    """Into a bulk store the mirror keeps each child run's id, not its
    contents; a configuration whose rows grow (a later commit of the live
    tracker) has its run read back, a block at a time, and replaced; the
    contents are let go after."""
    monkeypatch.setattr(bulk_read, "READ_BLOCK", 1)
    d = make_results(tmp_path / "results")
    uri = f"sqlite:///{tmp_path}/m.db"
    sync = Sync(uri, None, d)
    assert sync.finalize() == TrackReport(logged=len(CONFIGS), failed=False, error=None)
    assert sync.mirror is not None
    children = sync.mirror.children()
    assert set(children) == set(CONFIGS) and children.states == {}
    before = dict(children.ids)

    read: list[list[str]] = []
    reader = children._read
    assert reader is not None
    monkeypatch.setattr(children, "_read", lambda ids: read.append(ids) or reader(ids))
    write_summary(d, {"c1": range(4, 6)}, part=1, seed=2)
    sync.track(["c1", "c2"])
    assert read == [[before["c1"], before["c2"]]] and children.states == {}
    assert children.ids["c1"] != before["c1"] and children.ids["c2"] == before["c2"]  # c1 behind: replaced
    assert sync.finalize() == TrackReport(logged=len(CONFIGS), failed=False, error=None)
    _, _, view = sqlite_children(uri)
    check_runs(view, expected(d))


@pytest.mark.parametrize("block", [1, 2, 1000])
def test_verify_reads_runs_a_block_at_a_time_and_finds_every_problem(tmp_path, monkeypatch, block):
    """The final verify compares each run as its block is read: a run behind
    the rows, a duplicated run and a run of a configuration without rows are
    found whichever block they fall in, and counted as the whole read did."""
    from mlflow.tracking import MlflowClient

    d = make_results(tmp_path / "results")
    uri = f"sqlite:///{tmp_path}/m.db"
    assert track(d, uri, True) == TrackReport(logged=len(CONFIGS), failed=False, error=None)
    monkeypatch.setattr(bulk_read, "READ_BLOCK", block)
    sync = Sync(uri, None, d)
    assert sync.connect() and sync.mirror is not None and sync.mirror.bulk is not None
    expected = sync._expected(None)
    assert expected is not None
    sync.verify(expected)
    assert (sync.failed, sync.logged) == (False, set(CONFIGS))

    client = MlflowClient(tracking_uri=uri)
    children = {s.tags["schedlab.config_id"]: s for s in sync.mirror.search_children()}
    first, second = sorted(children)[:2]
    client.log_metric(children[first].run_id, "n", 99.0)  # behind the rows: another value
    parent = sync.mirror.parent.run_id
    exp_id = sync.mirror.experiment_id
    client.create_run(exp_id, tags={"schedlab.config_id": second, "mlflow.parentRunId": parent})  # duplicated
    client.create_run(exp_id, tags={"schedlab.config_id": "gone", "mlflow.parentRunId": parent})  # no rows
    sync.verify(expected)
    assert sync.failed and sync.logged == set(CONFIGS) - {first, second}
    assert sync.error is not None and "(3 problem(s); first: config " in sync.error


@pytest.mark.parametrize("bulk", [True, False])
def test_rejected_configuration_is_reported_others_logged(tmp_path, bulk):
    """MLflow's own validation rejects one configuration (a param name it does
    not allow): both paths record it by its id and log the others."""
    d = make_results(tmp_path / "results")
    manifest = json.loads((d / "manifest.json").read_text())
    manifest["configs"]["c2"]["params"]["x*y"] = 1
    (d / "manifest.json").write_text(json.dumps(manifest))
    report = track(d, f"sqlite:///{tmp_path}/m.db", bulk)
    assert report.failed and report.logged == len(CONFIGS) - 1
    assert report.error is not None and report.error.startswith("config c2: MlflowException: Invalid value")


def test_bulk_only_for_a_known_schema(tmp_path):
    d = make_results(tmp_path / "results")
    db = tmp_path / "s.db"
    assert track(d, f"sqlite:///{db}", True).failed is False
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{db}")
    assert bulk_store(client) is not None
    con = sqlite3.connect(db)
    try:
        [(revision,)] = con.execute("SELECT version_num FROM alembic_version").fetchall()
        with con:
            con.execute("UPDATE alembic_version SET version_num = 'fffffffffff0'")
        assert bulk_store(client) is None  # a schema revision this code was not checked against
        with con:
            con.execute("UPDATE alembic_version SET version_num = ?", (revision,))
        assert bulk_store(client) is not None
        with con:
            con.execute("ALTER TABLE params ADD COLUMN origin VARCHAR(20)")
        assert bulk_store(client) is None  # a column the bulk path would not fill
    finally:
        con.close()


@pytest.mark.parametrize("table", ["tags", "params", "metrics"])
def test_a_batch_naming_a_run_outside_it_is_refused_whole(tmp_path, table):
    """`insert_new_runs` writes a batch's child rows only when each names a run
    of the same batch (what lets PostgreSQL skip the foreign-key triggers,
    `tracking_bulk_pg`): a row naming any other run stops the batch before
    anything of it is written."""
    d = make_results(tmp_path / "results")
    uri = f"sqlite:///{tmp_path / 's.db'}"
    sync = Sync(uri, None, d)
    assert sync.connect() and sync.mirror is not None and sync.mirror.bulk is not None
    expected = sync._expected(None)
    assert expected
    batch = sync.mirror.build_new(list(expected.values()))
    row = batch.rows[table][0]
    batch.rows[table][0] = (*row[:-1], uuid.uuid4().hex)  # a run the batch does not create
    with pytest.raises(RuntimeError, match=f"a {table} row of the batch names a run outside it"):
        sync.mirror.commit_new(batch)
    assert sync.mirror.search_children() == []  # none of the batch's runs exists
    batch.rows[table][0] = row
    assert {new.exp.config_id for new in sync.mirror.commit_new(batch)} == set(CONFIGS)


def test_row_tuples_fill_exactly_the_checked_columns():
    """The column order the driver path writes its tuples in covers exactly the
    columns `bulk_store` checks the database for."""
    assert {table: frozenset(cols) for table, cols in tracking_bulk.ROW_COLUMNS.items()} == tracking_bulk.COLUMNS
    assert all(len(set(cols)) == len(cols) for cols in tracking_bulk.ROW_COLUMNS.values())


def test_run_ids_are_time_ordered_and_read_by_mlflow(tmp_path):
    """Bulk-written run ids are MLflow's form (32 lowercase hex digits), version-7
    UUIDs whose time is the run's start time, so they grow with it; MLflow's
    client fetches each by id and finds it by an id filter."""
    from mlflow.tracking import MlflowClient

    d = make_results(tmp_path / "results")
    uri = f"sqlite:///{tmp_path}/ids.db"
    assert track(d, uri, True).failed is False
    client, runs, _ = sqlite_children(uri)
    exp = client.get_experiment_by_name(SWEEP)
    infos = sorted((r.info for r in runs.values()), key=lambda i: i.start_time)
    ids = [i.run_id for i in infos]
    assert len(ids) == len(CONFIGS) and ids == sorted(ids)
    for info in infos:
        run_id = info.run_id
        assert re.fullmatch(r"[0-9a-f]{32}", run_id)
        as_uuid = uuid.UUID(hex=run_id)
        assert as_uuid.version == 7 and as_uuid.variant == uuid.RFC_4122
        assert int(run_id[:12], 16) == info.start_time
        assert MlflowClient(tracking_uri=uri).get_run(run_id).info.run_id == run_id
        [found] = client.search_runs([exp.experiment_id], f"attributes.run_id = '{run_id}'")
        assert found.info.run_id == run_id


def test_time_ordered_ids_sort_by_time_and_differ():
    ms = 1_765_000_000_000
    ids = [tracking_bulk.time_ordered_id(ms + i // 3) for i in range(300)]  # three per millisecond
    assert len(set(ids)) == len(ids)
    assert [i[:12] for i in ids] == sorted(i[:12] for i in ids)
    assert all(uuid.UUID(hex=i).version == 7 for i in ids)


def _mlflow_answer(exp, tags):
    """`_validated`'s answer as dicts, or its error's message."""
    try:
        metrics, params, tag_list = tracking_bulk._validated(exp, tags)
    except Exception as err:  # noqa: BLE001 - MLflow's own validation error, compared
        return _message(err)
    return {m.key: m.value for m in metrics}, {p.key: p.value for p in params}, {t.key: t.value for t in tag_list}


def _checked_answer(exp, tags):
    try:
        return tracking_bulk.checked(exp, dict(tags))
    except Exception as err:  # noqa: BLE001 - MLflow's own validation error, compared
        return _message(err)


def _message(err: Exception) -> str:
    """An error's type and text, the clock it names (a metric's timestamp, ms) masked."""
    return type(err).__name__ + ": " + re.sub(r"timestamp=\d+", "timestamp=T", str(err))


@pytest.mark.parametrize(
    "change",
    [
        {},
        {"params": {"long": "p" * 7000}},  # cut to MLflow's param length
        {"tags": {"note": "t" * 9000}},  # cut to MLflow's tag length
        {"params": {"x*y": "1"}},  # a name MLflow refuses
        {"params": {"../up": "1"}},  # a name that resolves to another path
        {"values": {"nan": math.nan, "inf": math.inf}},
        {"values": {"flag": True}},  # a bool is not a metric value
        {"values": {"count": 3}},
        {"values": {"n" * 300: 1.0}},  # a name longer than MLflow's key limit
        {"tags": {"mlflow.runName": "r"}},
    ],
)
def test_checked_is_mlflows_validation(change):
    """`checked` answers as MLflow's validators (`_validated`) do: the first
    time a run's names are met (MLflow checks them) and again once they were
    accepted (the check of names done before)."""
    base = {"params": {"policy": "FIFO", "load": "0.9"}, "tags": {"schedlab.config_id": "c1"}}
    exp = tracking_bulk.Expected(
        config_id="c1",
        params={**base["params"], **change.get("params", {})},
        tags={**base["tags"], **change.get("tags", {})},
        values={"mst": 1.5, "n": 4.0, **change.get("values", {})},
        n=4,
    )
    tags = {**exp.tags, "mlflow.parentRunId": "p" * 32}
    want = _mlflow_answer(exp, tags)
    assert _checked_answer(exp, tags) == want  # names maybe new
    assert _checked_answer(exp, tags) == want  # names accepted the first time: the quick check
