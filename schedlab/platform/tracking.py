"""MLflow tracking that mirrors a sweep's results dir.

Tracking is a pure function of what is on disk (``manifest.json`` and the
hive-partitioned ``summary/`` Parquet), so live logging during a sweep
(`Tracker`) and backfill afterwards (`track_results`, ``schedlab track DIR``)
share one code path (`_Sync`).

Layout in MLflow:

* one experiment per sweep (default name: the manifest's ``name``);
* one parent run per sweep, tagged ``schedlab.sweep=<name>`` and found again by
  that tag;
* one child run per configuration (tag ``mlflow.parentRunId``), found again by
  its ``schedlab.config_id`` tag among the parent's children, never duplicated.
  Params: the configuration's flattened params plus engine, policy,
  workload_kind, config_id. Metrics: ``m_mean`` and ``m_ci95`` for every metric
  m (null/NaN skipped) and ``n``, all logged at step n, so more replications
  append a point and the latest point is the current value. A run whose latest
  values already equal what is on disk is left alone, so re-tracking is
  idempotent. Only configurations with at least one summary row get a run.

Failure policy: tracking never raises into a sweep. The first failure of the
tracking store (connection refused, timeouts, server errors) is recorded in the
`TrackReport` and the tracker stops talking to MLflow; data problems of a single
configuration (a param whose value changed, an unreadable summary) are recorded
and the others are still logged. An ``http(s)://`` URI is health-checked
(``<uri>/health``, a few seconds at most) before MLflow is used, and unless
the user set them, ``MLFLOW_HTTP_REQUEST_MAX_RETRIES`` /
``MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR`` / ``MLFLOW_HTTP_REQUEST_TIMEOUT`` are
lowered for this process (MLflow's defaults retry for about four minutes) and
``MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT`` is set (see `HTTP_ENV_DEFAULTS`).

``mlflow`` and ``polars`` are imported inside functions only: the CLI imports
this module without paying for them.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator

from schedlab.errors import UserError

if TYPE_CHECKING:
    import polars as pl

DEFAULT_URI = "sqlite:///mlflow.db"

# Columns of a summary row that are neither params nor metrics (`policy` comes
# from the hive path).
ID_COLUMNS = ("config_id", "replication", "engine", "workload_kind", "seed", "policy")

# MLflow's log_batch limits (mlflow.utils.validation).
MAX_METRICS_PER_BATCH = 1000
MAX_PARAMS_PER_BATCH = 100
MAX_TAGS_PER_BATCH = 100
MAX_ENTITIES_PER_BATCH = 1000

HEALTH_TIMEOUT = 3.0
# Applied with os.environ.setdefault for http(s) URIs: an explicit user setting wins.
# Connection refused then fails in ~3 s instead of ~4 min; a hung server in ~30 s.
# MLflow also prints two "View run" lines per terminated run to stdout over HTTP:
# one per configuration would flood the sweep's output.
HTTP_ENV_DEFAULTS = {
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "10",
    "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT": "true",
}
READ_ATTEMPTS = 3

SWEEP_TAG = "schedlab.sweep"
CONFIG_TAG = "schedlab.config_id"
PARENT_TAG = "mlflow.parentRunId"


@dataclass
class TrackReport:
    """What tracking achieved. ``logged``: configurations whose MLflow run now
    mirrors the results dir; ``failed``: something could not be tracked
    (``error`` says what; re-run ``schedlab track DIR`` to backfill)."""

    logged: int = 0
    failed: bool = False
    error: str | None = None


class TrackingError(Exception):
    """A tracking failure that is not a user mistake (store unreachable, ...)."""


def resolve_uri(uri: str | None) -> str:
    """The tracking URI: the argument, else ``MLFLOW_TRACKING_URI``, else `DEFAULT_URI`."""
    return uri or os.environ.get("MLFLOW_TRACKING_URI") or DEFAULT_URI


# --------------------------------------------------------------------------- disk


def read_manifest(results_dir: str | Path) -> dict[str, Any]:
    """The sweep's manifest (read by the store); a `UserError` naming the file
    if it is missing or lacks what tracking needs."""
    from schedlab.platform.store import MANIFEST, ResultStore

    path = Path(results_dir) / MANIFEST
    try:
        manifest = ResultStore(results_dir).read_manifest()
    except (OSError, ValueError) as err:
        raise UserError(f"{path}: cannot read manifest: {err}") from None
    if manifest is None:
        raise UserError(f"{path}: not found (is {results_dir} a sweep results dir?)")
    if not isinstance(manifest, dict):
        raise UserError(f"{path}: expected a JSON object")
    for key in ("name", "configs"):
        if key not in manifest:
            raise UserError(f"{path}: missing field {key!r}")
    return manifest


def _summary_files(results_dir: Path) -> list[Path]:
    root = results_dir / "summary"
    return sorted(root.rglob("*.parquet")) if root.is_dir() else []


def _aggregate(lf: pl.LazyFrame, param_columns: Iterable[str], config_ids: Iterable[str] | None):
    import polars as pl

    from schedlab.platform.stats import summarize

    metrics = metric_columns(lf.collect_schema().items(), param_columns)
    lf = lf.with_columns(pl.col("config_id").cast(pl.String))
    if config_ids is not None:
        lf = lf.filter(pl.col("config_id").is_in(list(config_ids)))
    return summarize(lf, by=["config_id"], metrics=metrics), metrics


def metric_columns(schema: Iterable[tuple[str, Any]], param_columns: Iterable[str]) -> list[str]:
    """Every numeric column that is neither an identifier nor a param column."""
    skip = set(ID_COLUMNS) | set(param_columns)
    return [name for name, dtype in schema if name not in skip and dtype.is_numeric()]


def aggregate_summary(
    results_dir: str | Path, param_columns: Iterable[str], config_ids: Iterable[str] | None = None
) -> tuple[pl.DataFrame | None, list[str]]:
    """`stats.summarize` of the summary rows by config_id (restricted to
    ``config_ids`` when given) and the metric names; (None, []) if no rows."""
    import polars as pl

    results_dir = Path(results_dir)
    files = _summary_files(results_dir)
    if not files:
        return None, []
    param_columns = list(param_columns)
    try:
        lf = pl.scan_parquet(str(results_dir / "summary" / "**" / "*.parquet"), hive_partitioning=True)
        frame, metrics = _aggregate(lf, param_columns, config_ids)
    except (pl.exceptions.SchemaError, pl.exceptions.ColumnNotFoundError):
        # Part files whose schemas differ (a metric only some files have, int in
        # one and float in another): read them one by one, polars finds supertypes.
        lf = pl.concat([pl.scan_parquet(f, hive_partitioning=True) for f in files], how="diagonal_relaxed")
        frame, metrics = _aggregate(lf, param_columns, config_ids)
    return (frame if frame.height else None), metrics


def _number_or_none(value: Any) -> float | None:
    if value is None:
        return None
    value = float(value)
    return None if math.isnan(value) else value


def _param_value(value: Any) -> str:
    if value is None or isinstance(value, (str, bool, int, float)):
        return str(value)
    return json.dumps(value, sort_keys=True)


def run_contents(manifest: dict[str, Any], config_id: str, row: dict[str, Any], metrics: list[str]):
    """(params, tags, metric values, n) of one configuration's child run."""
    config = manifest["configs"][config_id]
    params = {k: _param_value(v) for k, v in (config.get("params") or {}).items()}
    params.update(
        engine=str(config.get("engine", manifest.get("engine", ""))),
        policy=str(config.get("policy", "")),
        workload_kind=str(config.get("workload_kind", "")),
        config_id=config_id,
    )
    tags = {
        CONFIG_TAG: config_id,
        "schedlab.engine": params["engine"],
        "schedlab.policy": params["policy"],
        "schedlab.version": str(manifest.get("schedlab_version", "")),
        "schedlab.spec_hash": str(manifest.get("spec_hash", "")),
    }
    n = int(row["n"])
    values: dict[str, float] = {}
    for m in metrics:
        for key in (f"{m}_mean", f"{m}_ci95"):
            v = _number_or_none(row.get(key))
            if v is not None:
                values[key] = v
    values["n"] = float(n)
    return params, tags, values, n


def _batches(metrics: list, params: list, tags: list) -> Iterator[tuple[list, list, list]]:
    """Split one run's entities into log_batch calls within MLflow's limits."""
    while metrics or params or tags:
        p, params = params[:MAX_PARAMS_PER_BATCH], params[MAX_PARAMS_PER_BATCH:]
        t, tags = tags[:MAX_TAGS_PER_BATCH], tags[MAX_TAGS_PER_BATCH:]
        room = min(MAX_METRICS_PER_BATCH, MAX_ENTITIES_PER_BATCH - len(p) - len(t))
        m, metrics = metrics[:room], metrics[room:]
        yield m, p, t


# --------------------------------------------------------------------------- MLflow


def _is_http(uri: str) -> bool:
    return uri.startswith(("http://", "https://"))


def _health_check(uri: str) -> None:
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


def _prepare_store(uri: str) -> None:
    if _is_http(uri):
        _health_check(uri)
        for key, value in HTTP_ENV_DEFAULTS.items():
            os.environ.setdefault(key, value)
    elif uri.startswith("sqlite:///"):
        path = uri[len("sqlite:///"):].split("?", 1)[0]
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)


def _filter_eq(key: str, value: str) -> str | None:
    if "'" not in value:
        return f"tags.`{key}` = '{value}'"
    if '"' not in value:
        return f'tags.`{key}` = "{value}"'
    return None


def _is_data_error(err: Exception) -> bool:
    """A problem with one configuration's data, not with the tracking store."""
    return getattr(err, "error_code", None) == "INVALID_PARAMETER_VALUE"


@dataclass
class _RunState:
    run_id: str
    params: dict[str, str]
    tags: dict[str, str]
    metrics: dict[str, float]
    finished: bool

    @classmethod
    def of(cls, run) -> _RunState:
        return cls(
            run.info.run_id,
            dict(run.data.params),
            dict(run.data.tags),
            dict(run.data.metrics),
            run.info.status == "FINISHED",
        )


class _Mirror:
    """The sweep's experiment, parent run and child runs in one tracking store."""

    def __init__(self, uri: str, experiment: str | None, manifest: dict[str, Any]):
        from mlflow.tracking import MlflowClient

        self.client = MlflowClient(tracking_uri=uri)
        self.sweep = str(manifest["name"])
        self.experiment_id = self._experiment(experiment or self.sweep)
        self.parent = self._parent(manifest)
        self._children: dict[str, _RunState] | None = None

    def _experiment(self, name: str) -> str:
        from mlflow.exceptions import MlflowException

        exp = self.client.get_experiment_by_name(name)
        if exp is None:
            try:
                return self.client.create_experiment(name)
            except MlflowException as err:  # created meanwhile by another process
                exp = self.client.get_experiment_by_name(name)
                if exp is None:
                    raise err
        if exp.lifecycle_stage != "active":
            raise TrackingError(f"MLflow experiment {name!r} is deleted: restore it or choose another name")
        return exp.experiment_id

    def _parent(self, manifest: dict[str, Any]) -> _RunState:
        tags = {
            SWEEP_TAG: self.sweep,
            "schedlab.engine": str(manifest.get("engine", "")),
            "schedlab.version": str(manifest.get("schedlab_version", "")),
            "schedlab.spec_hash": str(manifest.get("spec_hash", "")),
        }
        flt = _filter_eq(SWEEP_TAG, self.sweep) or f"tags.`{SWEEP_TAG}` LIKE '%'"
        runs = self.client.search_runs(
            [self.experiment_id], flt, max_results=1000, order_by=["attributes.start_time ASC"]
        )
        runs = [r for r in runs if r.data.tags.get(SWEEP_TAG) == self.sweep and PARENT_TAG not in r.data.tags]
        if not runs:
            run = self.client.create_run(self.experiment_id, tags=tags, run_name=self.sweep)
            return _RunState.of(run)
        state = _RunState.of(runs[0])
        changed = [_tag(k, v) for k, v in tags.items() if state.tags.get(k) != v]
        if changed:
            self.client.log_batch(state.run_id, tags=changed, synchronous=True)
            state.tags.update(tags)
        return state

    def children(self) -> dict[str, _RunState]:
        """config_id -> child run, one search (paged) the first time."""
        if self._children is None:
            found: dict[str, _RunState] = {}
            token = None
            while True:
                page = self.client.search_runs(
                    [self.experiment_id],
                    f"tags.`{PARENT_TAG}` = '{self.parent.run_id}'",
                    max_results=1000,
                    order_by=["attributes.start_time ASC"],
                    page_token=token,
                )
                for run in page:
                    cid = run.data.tags.get(CONFIG_TAG)
                    if cid is not None:
                        found.setdefault(cid, _RunState.of(run))
                token = page.token
                if not token:
                    break
            self._children = found
        return self._children

    def log(
        self, config_id: str, params: dict[str, str], tags: dict[str, str], values: dict[str, float], n: int
    ) -> list[str]:
        """Bring the config's child run up to date; returns data warnings."""
        from mlflow.entities import Metric, Param

        children = self.children()
        state = children.get(config_id)
        if state is None:
            run = self.client.create_run(
                self.experiment_id,
                tags={**tags, PARENT_TAG: self.parent.run_id},
                run_name=f"{params.get('policy', '')} {config_id}".strip(),
            )
            state = children[config_id] = _RunState.of(run)
        warnings = [
            f"config {config_id}: param {k!r} is {state.params[k]!r} in MLflow but {v!r} on disk (not updated)"
            for k, v in params.items()
            if k in state.params and state.params[k] != v
        ]
        new_params = {k: v for k, v in params.items() if k not in state.params}
        new_tags = {k: v for k, v in tags.items() if state.tags.get(k) != v}
        stale = any(state.metrics.get(k) != v for k, v in values.items())
        now = int(time.time() * 1000)
        metrics = [Metric(k, v, now, n) for k, v in values.items()] if stale else []
        param_list = [Param(k, v) for k, v in new_params.items()]
        tag_list = [_tag(k, v) for k, v in new_tags.items()]
        for m, p, t in _batches(metrics, param_list, tag_list):
            self.client.log_batch(state.run_id, metrics=m, params=p, tags=t, synchronous=True)
        state.params.update(new_params)
        state.tags.update(new_tags)
        if stale:
            state.metrics.update(values)
        if not state.finished:
            self.client.set_terminated(state.run_id, "FINISHED")
            state.finished = True
        return warnings

    def finish(self) -> None:
        if not self.parent.finished:
            self.client.set_terminated(self.parent.run_id, "FINISHED")
            self.parent.finished = True


def _tag(key: str, value: str):
    from mlflow.entities import RunTag

    return RunTag(key, value)


# --------------------------------------------------------------------------- sync


class _Sync:
    """Reads the results dir and mirrors it; records failures instead of raising.
    Not thread-safe: one caller at a time (the tracker's worker, or backfill)."""

    def __init__(self, uri: str, experiment: str | None, results_dir: Path, manifest: dict[str, Any] | None = None):
        self.uri = uri
        self.experiment = experiment
        self.results_dir = results_dir
        self.manifest = manifest
        self.mirror: _Mirror | None = None
        self.logged: set[str] = set()
        self.failed = False
        self.error: str | None = None
        self.dead = False  # the store failed: stop talking to it

    def record(self, message: str, fatal: bool = False) -> None:
        self.failed = True
        if self.error is None:
            self.error = message
        if fatal:
            self.dead = True

    def report(self) -> TrackReport:
        return TrackReport(logged=len(self.logged), failed=self.failed, error=self.error)

    def connect(self) -> bool:
        try:
            if self.manifest is None:
                self.manifest = read_manifest(self.results_dir)
            _prepare_store(self.uri)
            self.mirror = _Mirror(self.uri, self.experiment, self.manifest)
        except Exception as err:
            self.record(f"tracking to {self.uri} failed: {_describe(err)}", fatal=True)
            return False
        return True

    def _aggregate(self, config_ids: list[str] | None):
        delay = 0.2
        for attempt in range(READ_ATTEMPTS):
            try:
                return aggregate_summary(self.results_dir, self.manifest.get("param_columns") or [], config_ids)
            except Exception as err:  # a part file being written, ...
                if attempt == READ_ATTEMPTS - 1:
                    self.record(f"reading {self.results_dir / 'summary'} failed: {_describe(err)}")
                    return None, []
                time.sleep(delay)
                delay *= 2.5

    def track(self, config_ids: list[str] | None) -> None:
        """Mirror the given configurations (all with summary rows when None)."""
        if self.dead or self.mirror is None:
            return
        frame, metrics = self._aggregate(config_ids)
        if frame is None:
            return
        rows = frame.to_dicts()
        if any(row["config_id"] not in self.manifest["configs"] for row in rows):
            try:  # configurations added since we read it
                self.manifest = read_manifest(self.results_dir)
            except UserError as err:
                self.record(str(err))
        unknown = [row["config_id"] for row in rows if row["config_id"] not in self.manifest["configs"]]
        if unknown:
            listed = ", ".join(unknown[:5])
            self.record(f"{len(unknown)} configuration(s) in the summary are not in manifest.json: {listed}")
            unknown = set(unknown)
        for row in rows:
            cid = row["config_id"]
            if cid in unknown:
                continue
            try:
                params, tags, values, n = run_contents(self.manifest, cid, row, metrics)
                for warning in self.mirror.log(cid, params, tags, values, n):
                    self.record(warning)
            except Exception as err:
                if _is_data_error(err):
                    self.record(f"config {cid}: {_describe(err)}")
                    continue
                self.record(f"tracking to {self.uri} failed: {_describe(err)}", fatal=True)
                return
            self.logged.add(cid)

    def finish(self) -> None:
        if self.dead or self.mirror is None:
            return
        try:
            from schedlab.platform.selection import log_to_mlflow

            log_to_mlflow(self.mirror.client, self.mirror.parent.run_id, self.results_dir)  # selection.json, if any
            self.mirror.finish()
        except Exception as err:
            self.record(f"tracking to {self.uri} failed: {_describe(err)}", fatal=True)


def _describe(err: Exception) -> str:
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0] if text else ''}"[:500]


def track_results(results_dir: str | Path, uri: str | None = None, experiment: str | None = None) -> TrackReport:
    """Synchronously mirror every configuration of a results dir into MLflow
    (backfill; idempotent). A missing or invalid manifest is a `UserError`;
    tracking failures are reported, never raised."""
    results_dir = Path(results_dir)
    sync = _Sync(resolve_uri(uri), experiment, results_dir, read_manifest(results_dir))
    if sync.connect():
        sync.track(None)
        sync.finish()
    return sync.report()


class Tracker:
    """Live tracking during a sweep. ``start()`` (before any task: creates the
    store, experiment and parent run), ``submit(ids)`` (non-blocking: a daemon
    thread reads, aggregates and logs those configurations, FIFO, coalescing
    ids still pending), ``close(timeout)`` (flushes; returns a `TrackReport`).
    No method raises because of tracking."""

    def __init__(self, uri: str | None, experiment: str | None, results_dir: str | Path):
        self._sync = _Sync(resolve_uri(uri), experiment, Path(results_dir))
        self._cond = threading.Condition()
        self._pending: dict[str, None] = {}  # insertion-ordered set
        self._closing = False
        self._stop = False
        self._thread: threading.Thread | None = None
        self._report: TrackReport | None = None

    @property
    def uri(self) -> str:
        return self._sync.uri

    def start(self) -> None:
        if self._thread is not None or self._closing:
            return
        if not self._sync.connect():
            return
        self._thread = threading.Thread(target=self._work, name="schedlab-tracking", daemon=True)
        self._thread.start()

    def submit(self, config_ids: Iterable[str]) -> None:
        with self._cond:
            if self._thread is None or self._closing or self._stop:
                if not self._sync.failed:
                    self._sync.record("submit() called before start() or after close(); not tracked")
                return
            for cid in config_ids:
                self._pending.setdefault(str(cid), None)
            self._cond.notify()

    def _work(self) -> None:
        while True:
            with self._cond:
                while not self._pending and not self._closing and not self._stop:
                    self._cond.wait()
                if self._stop or not self._pending:
                    return
                batch = list(self._pending)
                self._pending.clear()
            try:
                self._sync.track(batch)
            except Exception as err:  # a bug must not take the sweep down either
                self._sync.record(f"tracking failed: {_describe(err)}", fatal=True)
            if self._sync.dead:
                with self._cond:
                    self._pending.clear()
                    self._stop = True
                return

    def close(self, timeout: float = 60.0) -> TrackReport:
        if self._report is not None:
            return self._report
        with self._cond:
            self._closing = True
            self._cond.notify()
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                with self._cond:
                    self._stop = True
                    left = len(self._pending)
                self._sync.record(
                    f"tracking did not finish within {timeout:g} s ({left} configuration(s) still queued); "
                    "run `schedlab track DIR` to backfill",
                    fatal=True,
                )
                report = self._sync.report()
                self._report = report
                return report
            self._sync.finish()
        self._report = self._sync.report()
        return self._report
