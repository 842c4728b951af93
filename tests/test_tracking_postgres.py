"""A team's tracking server, for real: `infra/mlflow-postgres.sh` starts a real
PostgreSQL (initdb into a temporary dir, 127.0.0.1, a free port) and a real
`mlflow server` on it; a sweep's results dir is tracked into it live and by
backfill, and every run is checked -- by the tracker's own verify (the
report) and independently (numpy/scipy values, one finished run per
configuration). Skipped, with the reason, where PostgreSQL's server binaries
or the psycopg2 driver are missing (`.ci/run` installs Debian's postgresql)."""

from __future__ import annotations

import glob
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from schedlab.platform.tracking.tracker import HTTP_ENV_DEFAULTS, Tracker, TrackReport, track_results
from tests.test_hardening_tracking import assert_mirrors, free_port, make_results, mlflow_state, write_part

ROOT = Path(__file__).resolve().parents[1]
RECIPE = ROOT / "infra" / "mlflow-postgres.sh"
#: Seconds for initdb + PostgreSQL + `mlflow server` (alembic migrations) to answer on a busy 2-core machine.
SERVER_BOOT = 300.0
STOP_WAIT = 30.0


def postgres_bin() -> str | None:
    """The folder of initdb and pg_ctl, found as the recipe finds it."""
    candidates = []
    if shutil.which("pg_config"):
        out = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True)
        candidates.append(out.stdout.strip())
    candidates += sorted(
        glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: [int(x) if x.isdigit() else x for x in p.split("/")]
    )[::-1]
    if shutil.which("initdb"):
        candidates.append(str(Path(shutil.which("initdb")).parent))
    for c in candidates:
        if c and os.access(os.path.join(c, "initdb"), os.X_OK) and os.access(os.path.join(c, "pg_ctl"), os.X_OK):
            return c
    return None


def missing() -> str | None:
    """Why this machine cannot run the recipe, or None."""
    if postgres_bin() is None:
        return "PostgreSQL server binaries not found (apt-get install -y postgresql)"
    try:
        import psycopg2  # noqa: F401
    except ImportError:
        return "psycopg2 not installed (pip install -e '.[test]')"
    if os.geteuid() == 0:
        import pwd

        try:
            pwd.getpwnam(os.environ.get("PG_USER", "postgres"))
        except KeyError:
            return "running as root without an unprivileged 'postgres' user for PostgreSQL"
    return None


REASON = missing()
if REASON:
    print(f"\ntest_tracking_postgres: skipped: {REASON}", file=sys.stderr)
pytestmark = pytest.mark.skipif(REASON is not None, reason=REASON or "")


@pytest.fixture(autouse=True)
def _restore_mlflow_http_env():
    saved = {k: os.environ.get(k) for k in HTTP_ENV_DEFAULTS}
    yield
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


class Recipe:
    """`infra/mlflow-postgres.sh DATA_DIR PG_PORT MLFLOW_PORT` in its own session."""

    def __init__(self, root: Path):
        self.root = root
        self.data = root / "data"
        self.pg_port, self.port = free_port(), free_port()
        env = {
            **os.environ,
            "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
            "PG_BIN": postgres_bin(),
            "MLFLOW_WORKERS": "2",
        }
        env.pop("MLFLOW_TRACKING_URI", None)
        if os.geteuid() == 0:  # the recipe hands DATA_DIR/pg to the unprivileged user; it must reach it
            os.chmod(root, 0o755)
        self.log = open(root / "recipe.err", "wb")
        self.proc = subprocess.Popen(
            ["bash", str(RECIPE), str(self.data), str(self.pg_port), str(self.port)],
            stdout=subprocess.PIPE,
            stderr=self.log,
            env=env,
            start_new_session=True,
        )
        self.uri: str | None = None

    def wait_uri(self) -> str:
        """The recipe prints the URI on stdout once the server answers."""
        got: list[str] = []
        reader = threading.Thread(target=lambda: got.append(self.proc.stdout.readline().decode().strip()), daemon=True)
        reader.start()
        reader.join(SERVER_BOOT)
        if not got or not got[0]:
            pytest.fail(f"recipe gave no URI in {SERVER_BOOT:g} s (exit {self.proc.poll()}):\n{self.errors()}")
        self.uri = got[0]
        return self.uri

    def errors(self) -> str:
        self.log.flush()
        return (self.root / "recipe.err").read_text(errors="replace")[-3000:]

    def stop(self) -> None:
        """SIGTERM to the recipe's session: its trap stops MLflow, then PostgreSQL."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=STOP_WAIT)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        pid_file = self.data / "pg" / "postmaster.pid"
        if pid_file.exists():  # a postmaster left behind: stop exactly that one
            pid = int(pid_file.read_text().split()[0])
            try:
                os.kill(pid, signal.SIGQUIT)
            except ProcessLookupError:
                pass
        self.log.close()


@pytest.fixture(scope="module")
def recipe():
    # Not under pytest's tmp dir: that is private to this user (0700), and as root the recipe runs
    # PostgreSQL as an unprivileged user who must reach its data dir.
    root = Path(tempfile.mkdtemp(prefix="schedlab-mlflow-postgres-"))
    r = Recipe(root)
    try:
        r.wait_uri()
        yield r
    finally:
        r.stop()
        shutil.rmtree(root, ignore_errors=True)


def test_recipe_starts_postgres_backed_server_and_tracks_a_sweep(tmp_path, recipe):
    uri = recipe.uri
    assert uri == f"http://127.0.0.1:{recipe.port}"
    # The server's backend really is this PostgreSQL: its cluster was made by initdb and MLflow's tables are there.
    assert (recipe.data / "pg" / "PG_VERSION").exists()
    import psycopg2

    with psycopg2.connect(host="127.0.0.1", port=recipe.pg_port, user="mlflow", dbname="mlflow") as con:
        with con.cursor() as cur:
            cur.execute("SHOW synchronous_commit")
            assert cur.fetchone()[0] == "off"

    # Live, as a sweep does: start, commits' configurations submitted, close verifies every run.
    d = make_results(tmp_path / "results", reps=3)
    tracker = Tracker(uri, None, d)
    tracker.start()
    tracker.submit(["c1", "c2"])
    write_part(d, {"c1": range(3, 5)}, "1", seed=2)  # a later commit
    tracker.submit(["c1", "c3"])
    assert tracker.close(stall=60) == TrackReport(3, False, None)
    first = assert_mirrors(uri, d)  # values checked with numpy/scipy, one finished run each

    with psycopg2.connect(host="127.0.0.1", port=recipe.pg_port, user="mlflow", dbname="mlflow") as con:
        with con.cursor() as cur:
            cur.execute("SELECT count(*) FROM runs WHERE lifecycle_stage = 'active'")
            assert cur.fetchone()[0] == 4  # the parent and three children, in PostgreSQL itself

    # Backfill is idempotent: the same runs, verified again.
    assert track_results(d, uri=uri) == TrackReport(3, False, None)
    again = assert_mirrors(uri, d)
    assert {c: r.info.run_id for c, r in again.items()} == {c: r.info.run_id for c, r in first.items()}
    parents, _ = mlflow_state(uri)
    assert len(parents) == 1 and parents[0].info.status == "FINISHED"


def test_many_configurations_through_the_pool(tmp_path, recipe):
    """More configurations than the pool has threads, each created exactly once."""
    import json

    import polars as pl

    d = tmp_path / "wide"
    d.mkdir()
    n = 40
    configs = {
        f"k{i:02d}": {
            "engine": "queue",
            "policy": "PS",
            "workload_kind": "synthetic",
            "params": {"load": round(0.5 + i / 100, 2)},
        }
        for i in range(n)
    }
    (d / "manifest.json").write_text(
        json.dumps(
            {
                "name": "pool-sweep",
                "engine": "queue",
                "spec_hash": "h",
                "schedlab_version": "0.1.0",
                "created": "",
                "spec": {},
                "param_columns": ["load"],
                "configs": configs,
            }
        )
    )
    rows = [
        {
            "config_id": cid,
            "replication": r,
            "engine": "queue",
            "workload_kind": "synthetic",
            "seed": f"s{r}",
            "load": c["params"]["load"],
            "mst": float(i + r),
        }
        for i, (cid, c) in enumerate(configs.items())
        for r in range(2)
    ]
    (d / "summary" / "policy=PS").mkdir(parents=True)
    pl.DataFrame(rows).write_parquet(d / "summary" / "policy=PS" / "part-0.parquet")
    t0 = time.monotonic()
    assert track_results(d, uri=recipe.uri) == TrackReport(n, False, None)
    took = time.monotonic() - t0
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=recipe.uri)
    exp = client.get_experiment_by_name("pool-sweep")
    runs = client.search_runs([exp.experiment_id], "tags.`schedlab.config_id` LIKE 'k%'", max_results=1000)
    assert sorted(r.data.tags["schedlab.config_id"] for r in runs) == sorted(configs)  # exactly once each
    for i, cid in enumerate(configs):
        [run] = [r for r in runs if r.data.tags["schedlab.config_id"] == cid]
        assert run.data.metrics["mst"] == i + 0.5 and run.data.metrics["n"] == 2.0
    print(f"\n{n} configurations tracked into mlflow server on PostgreSQL in {took:.1f} s")


def fresh_database(pg_port: int, name: str) -> str:
    """A new, empty database on the recipe's PostgreSQL (``pg_port``); its SQLAlchemy URI (psycopg2, the
    driver of ``schedlab[postgres]``), for tracking into the database directly, without the server.
    Also used by benchmarks/tracking.py."""
    import psycopg2

    con = psycopg2.connect(host="127.0.0.1", port=pg_port, user="mlflow", dbname="postgres")
    try:
        con.autocommit = True  # CREATE DATABASE cannot run in a transaction
        with con.cursor() as cur:
            cur.execute(f'CREATE DATABASE "{name}"')
    finally:
        con.close()
    return f"postgresql+psycopg2://mlflow@127.0.0.1:{pg_port}/{name}"


@pytest.mark.parametrize("tricky", [False, True], ids=["plain", "awkward-text"])
def test_bulk_runs_equal_client_runs_in_postgres(tmp_path, monkeypatch, recipe, tricky):
    """Straight into PostgreSQL (a database URI, not the server), new runs are
    written in bulk (`tracking_bulk`: COPY), and they are the runs the client path
    writes: everything MLflow reads back and every table row, as for SQLite
    (awkward-text: quotes, commas, backslashes and newlines in a tag of every run)."""
    from tests.test_tracking import make_results as three_configurations
    from tests.test_tracking_bulk import assert_bulk_equals_client

    monkeypatch.chdir(tmp_path)  # a database store's artifacts go to ./mlflow-artifacts (tracking_ui.artifact_root)
    uris = {
        bulk: fresh_database(recipe.pg_port, f"{'bulk' if bulk else 'client'}_{tricky:d}") for bulk in (True, False)
    }
    # (assert_bulk_equals_client also checks that each path was the one taken)
    assert_bulk_equals_client(three_configurations(tmp_path / "results"), uris, monkeypatch, tricky)


def _prepared(monkeypatch) -> list[bool]:
    """What `tracking_bulk_pg.prepare_batch` answered for each batch from now on (whether it skipped the
    foreign-key triggers), by a wrapper on it."""
    from schedlab.platform.tracking import bulk_pg

    answers: list[bool] = []
    real = bulk_pg.prepare_batch

    def spy(cursor, database, experiment_id):
        answers.append(real(cursor, database, experiment_id))
        return answers[-1]

    monkeypatch.setattr(bulk_pg, "prepare_batch", spy)
    return answers


def _sql(pg_port: int, dbname: str, *statements: str, user: str = "mlflow") -> list[tuple]:
    """Run ``statements`` in one committed transaction; the last one's rows (if it returns any)."""
    import psycopg2

    con = psycopg2.connect(host="127.0.0.1", port=pg_port, user=user, dbname=dbname)
    try:
        with con, con.cursor() as cur:
            for statement in statements:
                cur.execute(statement)
            return cur.fetchall() if cur.description else []
    finally:
        con.close()


def _children_of_bulk(pg_port: int, dbname: str) -> int:
    rows = _sql(pg_port, dbname, "SELECT count(*) FROM tags WHERE key = 'mlflow.parentRunId'")
    return rows[0][0]


def test_bulk_batches_skip_foreign_key_triggers_only_where_allowed(tmp_path, monkeypatch, recipe):
    """A batch's transaction skips the foreign-key triggers (`tracking_bulk_pg`) only as a role that may
    set ``session_replication_role`` and only where the five tables have no trigger but the foreign
    keys': a trigger added to ``tags`` still sees every tag row written in bulk, and a role that is not
    a superuser writes the runs with the checks. The runs are whole either way (the tracker's verify)."""
    from mlflow.tracking import MlflowClient

    from schedlab.platform.tracking import sync as tracking_sync
    from tests.test_tracking import CONFIGS
    from tests.test_tracking import make_results as three_configurations

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(tracking_sync, "BULK_RUNS", 2)  # 3 configurations: two transactions
    d = three_configurations(tmp_path / "results")
    n = len(CONFIGS)

    answers = _prepared(monkeypatch)
    uri = fresh_database(recipe.pg_port, "fk_superuser")
    assert track_results(d, uri=uri) == TrackReport(n, False, None)
    assert answers == [True, True] and _children_of_bulk(recipe.pg_port, "fk_superuser") == n

    # Someone's trigger on tags: the batches keep every trigger, and it fires for every tag row.
    uri = fresh_database(recipe.pg_port, "fk_trigger")
    MlflowClient(tracking_uri=uri).search_experiments()  # MLflow's schema, so that the trigger has its table
    _sql(
        recipe.pg_port,
        "fk_trigger",
        "CREATE TABLE seen_tags (run_uuid varchar(32), key varchar(250))",
        "CREATE FUNCTION note_tag() RETURNS trigger LANGUAGE plpgsql AS "
        "$$ BEGIN INSERT INTO seen_tags VALUES (NEW.run_uuid, NEW.key); RETURN NEW; END $$",
        "CREATE TRIGGER note_tag AFTER INSERT ON tags FOR EACH ROW EXECUTE FUNCTION note_tag()",
    )
    answers.clear()
    assert track_results(d, uri=uri) == TrackReport(n, False, None)
    assert answers == [False, False]
    unseen = _sql(recipe.pg_port, "fk_trigger", "SELECT run_uuid, key FROM tags EXCEPT SELECT * FROM seen_tags")
    assert unseen == [] and _children_of_bulk(recipe.pg_port, "fk_trigger") == n

    # A role that is not a superuser (and was not granted SET on the setting): the checks run.
    _sql(recipe.pg_port, "postgres", "CREATE ROLE plain LOGIN")
    uri = fresh_database(recipe.pg_port, "fk_plain")
    _sql(recipe.pg_port, "postgres", 'ALTER DATABASE "fk_plain" OWNER TO plain')
    _sql(recipe.pg_port, "fk_plain", "ALTER SCHEMA public OWNER TO plain")
    answers.clear()
    plain = uri.replace("//mlflow@", "//plain@")
    assert track_results(d, uri=plain) == TrackReport(n, False, None)
    assert answers == [False, False] and _children_of_bulk(recipe.pg_port, "fk_plain") == n


def test_value_indexes_are_radix_trees_that_take_any_length(tmp_path, monkeypatch, recipe):
    """schedlab's value indexes on params and tags are SP-GiST (`tracking_store.SEARCH_INDEXES`): the
    hash ones of earlier versions are dropped where found, a search by value can use the new ones, and
    values of MLflow's longest lengths go in (a btree would refuse them)."""
    import secrets

    from mlflow.tracking import MlflowClient
    from mlflow.utils.validation import MAX_PARAM_VAL_LENGTH, MAX_TAG_VAL_LENGTH

    from tests.test_tracking import SWEEP
    from tests.test_tracking import make_results as three_configurations

    monkeypatch.chdir(tmp_path)
    d = three_configurations(tmp_path / "results")
    uri = fresh_database(recipe.pg_port, "radix")
    MlflowClient(tracking_uri=uri).search_experiments()
    _sql(recipe.pg_port, "radix", "CREATE INDEX schedlab_params_value ON params USING hash (value)")  # as before
    assert track_results(d, uri=uri).failed is False
    indexes = dict(
        _sql(recipe.pg_port, "radix", "SELECT indexname, indexdef FROM pg_indexes WHERE indexname LIKE 'schedlab_%'")
    )
    assert "schedlab_params_value" not in indexes and "schedlab_tags_value" not in indexes
    for table in ("params", "tags"):
        assert "USING spgist (value)" in indexes[f"schedlab_{table}_value_radix"]

    client = MlflowClient(tracking_uri=uri)
    run = client.search_runs([client.get_experiment_by_name(SWEEP).experiment_id])[0]
    long_param = secrets.token_urlsafe(MAX_PARAM_VAL_LENGTH)[:MAX_PARAM_VAL_LENGTH]
    long_tag = secrets.token_urlsafe(MAX_TAG_VAL_LENGTH)[:MAX_TAG_VAL_LENGTH]
    client.log_param(run.info.run_id, "long", long_param)
    client.set_tag(run.info.run_id, "long", long_tag)
    found = client.search_runs([run.info.experiment_id], f"params.long = '{long_param}'")
    assert [r.info.run_id for r in found] == [run.info.run_id]
    plan = _sql(
        recipe.pg_port,
        "radix",
        "SET LOCAL enable_seqscan = off",
        f"EXPLAIN SELECT run_uuid FROM params WHERE key = 'long' AND value = '{long_param}'",
    )
    assert "schedlab_params_value_radix" in " ".join(row[0] for row in plan)
