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

When: `Tracker.start` reconciles every configuration in the background (runs
missing or behind after a kill are re-logged), each commit's configurations
follow, and `Tracker.close` reconciles and verifies everything once more
(reconnecting if the store failed during the run). The `TrackReport` says
whether MLflow matched the disk at the end; the CLI exits 3 if not.

Failure policy: tracking never raises into a sweep. A failure of the tracking
store (connection refused, timeouts, server errors) stops talking to it until
the final reconcile tries again; data problems of one configuration are
recorded and the others are still logged. An ``http(s)://`` URI is
health-checked before MLflow is used and MLflow's HTTP retries are shortened
(`tracking_store`); a new SQLite store is created atomically.

``mlflow`` and ``polars`` are imported inside functions only: the CLI imports
this module without paying for them.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator

from schedlab.errors import UserError
from schedlab.platform.tracking_data import (  # noqa: F401 - re-exported
    CODE_TAG,
    CONFIG_TAG,
    ID_COLUMNS,
    PROVENANCE_TAGS,
    ROWS_DIGEST_TAG,
    ROWS_TAG,
    SCHEDLAB_DIGEST_TAG,
    Expected,
    aggregate_summary,
    code_digest,
    expected_runs,
    metric_columns,
    read_manifest,
    run_contents,
)
from schedlab.platform.tracking_store import (  # noqa: F401 - re-exported
    DEFAULT_URI,
    HEALTH_TIMEOUT,
    HTTP_ENV_DEFAULTS,
    TrackingError,
    prepare_store,
    resolve_uri,
)

# MLflow's log_batch limits (mlflow.utils.validation).
MAX_METRICS_PER_BATCH = 1000
MAX_PARAMS_PER_BATCH = 100
MAX_TAGS_PER_BATCH = 100
MAX_ENTITIES_PER_BATCH = 1000

READ_ATTEMPTS = 3

SWEEP_TAG = "schedlab.sweep"
PARENT_TAG = "mlflow.parentRunId"
#: MLflow's description of a run or an experiment (shown above its details).
NOTE_TAG = "mlflow.note.content"
#: A run tag's value limit (mlflow.utils.validation.MAX_TAG_VAL_LENGTH): the
#: parent's description is cut to fit, table rows first.
MAX_NOTE = 8000
#: Metrics the parent's table shows per engine, the first ones the rows have
#: (an adaptive sweep's own metric comes first).
HEADLINE = {"queue": ("mst", "slowdown_mean"), "packing": ("queue_jobs_mean", "wait_mean"),
            "batch": ("stretch_max", "wait_mean"), "dfrs": ("stretch_max", "degradation")}
CODE_ARTIFACTS_TAG = "schedlab.code_artifacts"
CODE_DIR = "code"


@dataclass
class TrackReport:
    """What tracking achieved. ``logged``: configurations whose MLflow run now
    mirrors the results dir; ``failed``: MLflow does not (or may not) match the
    results dir (``error`` says why; ``schedlab track DIR`` finishes it)."""

    logged: int = 0
    failed: bool = False
    error: str | None = None


def _batches(metrics: list, params: list, tags: list) -> Iterator[tuple[list, list, list]]:
    """Split one run's entities into log_batch calls within MLflow's limits."""
    while metrics or params or tags:
        p, params = params[:MAX_PARAMS_PER_BATCH], params[MAX_PARAMS_PER_BATCH:]
        t, tags = tags[:MAX_TAGS_PER_BATCH], tags[MAX_TAGS_PER_BATCH:]
        room = min(MAX_METRICS_PER_BATCH, MAX_ENTITIES_PER_BATCH - len(p) - len(t))
        m, metrics = metrics[:room], metrics[room:]
        yield m, p, t


def _filter_eq(key: str, value: str) -> str | None:
    if "'" not in value:
        return f"tags.`{key}` = '{value}'"
    if '"' not in value:
        return f'tags.`{key}` = "{value}"'
    return None


def _is_data_error(err: Exception) -> bool:
    """A problem with one configuration's data, not with the tracking store."""
    return getattr(err, "error_code", None) == "INVALID_PARAMETER_VALUE"


def _tag(key: str, value: str):
    from mlflow.entities import RunTag

    return RunTag(key, value)


@dataclass
class _RunState:
    run_id: str
    params: dict[str, str]
    tags: dict[str, str]
    metrics: dict[str, float]
    finished: bool
    run_name: str = ""

    @classmethod
    def of(cls, run) -> _RunState:
        return cls(
            run.info.run_id,
            dict(run.data.params),
            dict(run.data.tags),
            dict(run.data.metrics),
            run.info.status == "FINISHED",
            run.info.run_name or "",
        )


def up_to_date(state: _RunState, exp: Expected) -> bool:
    """Does the run hold exactly what the disk says (name, params, tags, metric values)?"""
    return (
        state.finished
        and state.run_name == exp.run_name
        and all(state.params.get(k) == v for k, v in exp.params.items())
        and all(state.tags.get(k) == v for k, v in exp.tags.items())
        and state.metrics == exp.values
    )


def _behind(state: _RunState, exp: Expected) -> str:
    """A short description of how a run differs from the disk."""
    if not state.finished:
        return "not finished"
    if state.run_name != exp.run_name:
        return f"named {state.run_name!r}, disk says {exp.run_name!r}"
    for k, v in exp.params.items():
        if state.params.get(k) != v:
            return f"param {k} is {state.params.get(k)!r}, disk says {v!r}"
    for k in PROVENANCE_TAGS:
        if state.tags.get(k) != exp.tags.get(k):
            return f"computed from {state.tags.get(ROWS_TAG, '?')} rows, disk has {exp.n}"
    for k, v in exp.tags.items():
        if state.tags.get(k) != v:
            return f"tag {k} is {state.tags.get(k)!r}, disk says {v!r}"
    for k, v in exp.values.items():
        if state.metrics.get(k) != v:
            return f"metric {k} is {state.metrics.get(k)!r}, disk says {v!r}"
    extra = sorted(set(state.metrics) - set(exp.values))
    if extra:
        return f"metric {extra[0]} is not in the rows"
    return "up to date"


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

    def _search(self, flt: str) -> list:
        runs, token = [], None
        while True:
            page = self.client.search_runs(
                [self.experiment_id], flt, max_results=1000, order_by=["attributes.start_time ASC"], page_token=token
            )
            runs += list(page)
            token = page.token
            if not token:
                return runs

    def parents(self) -> list[_RunState]:
        """Active parent runs of this sweep, oldest first."""
        flt = _filter_eq(SWEEP_TAG, self.sweep) or f"tags.`{SWEEP_TAG}` LIKE '%'"
        runs = self._search(flt)
        return [_RunState.of(r) for r in runs if r.data.tags.get(SWEEP_TAG) == self.sweep and PARENT_TAG not in r.data.tags]

    def _parent(self, manifest: dict[str, Any]) -> _RunState:
        tags = {
            SWEEP_TAG: self.sweep,
            "schedlab.engine": str(manifest.get("engine", "")),
            "schedlab.version": str(manifest.get("schedlab_version", "")),
            "schedlab.spec_hash": str(manifest.get("spec_hash", "")),
        }
        runs = self.parents()
        if not runs:
            run = self.client.create_run(self.experiment_id, tags=tags, run_name=self.sweep)
            return _RunState.of(run)
        state = runs[0]
        changed = [_tag(k, v) for k, v in tags.items() if state.tags.get(k) != v]
        if changed:
            self.client.log_batch(state.run_id, tags=changed, synchronous=True)
            state.tags.update(tags)
        return state

    def search_children(self, parent_id: str | None = None) -> list[_RunState]:
        """Child runs of a parent (ours by default), oldest first, fresh from the store."""
        runs = self._search(f"tags.`{PARENT_TAG}` = '{parent_id or self.parent.run_id}'")
        return [_RunState.of(r) for r in runs if r.data.tags.get(CONFIG_TAG) is not None]

    def children(self) -> dict[str, _RunState]:
        """config_id -> child run (the oldest), one search the first time."""
        if self._children is None:
            found: dict[str, _RunState] = {}
            for state in self.search_children():
                found.setdefault(state.tags[CONFIG_TAG], state)
            self._children = found
        return self._children

    def tidy(self, configs_with_rows: set[str]) -> int:
        """Delete what no results dir row accounts for: extra parent runs of
        this sweep (with their children), duplicated child runs (the oldest is
        kept), child runs of configurations without rows. Refreshes the
        children. Returns how many runs were deleted."""
        deleted = 0
        for extra in self.parents():
            if extra.run_id == self.parent.run_id:
                continue
            for child in self.search_children(extra.run_id):
                self.client.delete_run(child.run_id)
                deleted += 1
            self.client.delete_run(extra.run_id)
            deleted += 1
        found: dict[str, _RunState] = {}
        for state in self.search_children():
            cid = state.tags[CONFIG_TAG]
            if cid in found or cid not in configs_with_rows:
                self.client.delete_run(state.run_id)
                deleted += 1
            else:
                found[cid] = state
        self._children = found
        return deleted

    def log(self, exp: Expected) -> None:
        """Bring one configuration's child run to ``exp``."""
        from mlflow.entities import Metric, Param

        children = self.children()
        cid = exp.config_id
        state = children.get(cid)
        if state is not None and self._must_replace(state, exp):
            self.client.delete_run(state.run_id)
            del children[cid]
            state = None
        if state is None:
            run = self.client.create_run(
                self.experiment_id,
                tags={**{k: v for k, v in exp.tags.items() if k not in PROVENANCE_TAGS},
                      PARENT_TAG: self.parent.run_id},
                run_name=exp.run_name or cid,
            )
            state = children[cid] = _RunState.of(run)
        elif state.run_name != exp.run_name:  # the grid grew an axis: names say more now
            self.client.update_run(state.run_id, name=exp.run_name)
            state.run_name = exp.run_name
        new_params = {k: v for k, v in exp.params.items() if k not in state.params}
        new_tags = {k: v for k, v in exp.tags.items() if k not in PROVENANCE_TAGS and state.tags.get(k) != v}
        stale = state.metrics != exp.values
        now = int(time.time() * 1000)
        metrics = [Metric(k, v, now, 0) for k, v in exp.values.items()] if stale else []
        param_list = [Param(k, v) for k, v in new_params.items()]
        tag_list = [_tag(k, v) for k, v in new_tags.items()]
        for m, p, t in _batches(metrics, param_list, tag_list):
            self.client.log_batch(state.run_id, metrics=m, params=p, tags=t, synchronous=True)
        state.params.update(new_params)
        state.tags.update(new_tags)
        if stale:
            state.metrics = dict(exp.values)
        provenance = {k: exp.tags[k] for k in PROVENANCE_TAGS if state.tags.get(k) != exp.tags[k]}
        if provenance:  # last: the run now holds everything these rows give
            self.client.log_batch(state.run_id, tags=[_tag(k, v) for k, v in provenance.items()], synchronous=True)
            state.tags.update(provenance)
        if not state.finished:
            self.client.set_terminated(state.run_id, "FINISHED")
            state.finished = True

    @staticmethod
    def _must_replace(state: _RunState, exp: Expected) -> bool:
        """A run not to correct in place: a param value changed (params are
        immutable), or it holds metric values that differ from the disk's
        (logging the new ones would leave a history of several points per
        metric, and MLflow cannot delete a metric)."""
        if any(k in state.params and state.params[k] != v for k, v in exp.params.items()):
            return True
        return bool(state.metrics) and state.metrics != exp.values

    def describe(self, manifest: dict[str, Any], expected: dict[str, Expected]) -> None:
        """The parent's and the experiment's descriptions (MLflow notes): what
        the sweep is for, its grid axes, the headline metrics per
        configuration and the result-defining spec. Set only when changed."""
        text = sweep_note(manifest, expected)
        if self.parent.tags.get(NOTE_TAG) != text:
            self.client.set_tag(self.parent.run_id, NOTE_TAG, text)
            self.parent.tags[NOTE_TAG] = text
        about = str(manifest.get("description") or "")
        if about:
            exp = self.client.get_experiment(self.experiment_id)
            if exp.tags.get(NOTE_TAG) != about:
                self.client.set_experiment_tag(self.experiment_id, NOTE_TAG, about)

    def sync_code(self, results_dir: Path) -> None:
        """Log the results dir's ``code/`` folder under the parent's ``code/``
        artifacts, unless the parent already has this exact folder."""
        code = results_dir / CODE_DIR
        digest = code_digest(code)
        if digest is None or self.parent.tags.get(CODE_ARTIFACTS_TAG) == digest:
            return
        self.client.log_artifacts(self.parent.run_id, str(code), artifact_path=CODE_DIR)
        self.client.log_batch(self.parent.run_id, tags=[_tag(CODE_ARTIFACTS_TAG, digest)], synchronous=True)
        self.parent.tags[CODE_ARTIFACTS_TAG] = digest

    def finish(self) -> None:
        if not self.parent.finished:
            self.client.set_terminated(self.parent.run_id, "FINISHED")
            self.parent.finished = True


# --------------------------------------------------------------------------- sync


class _Sync:
    """Reads the results dir and mirrors it; records failures instead of raising
    (a damaged part file is a `UserError`, raised). Not thread-safe: one caller
    at a time (the tracker's worker, then `finalize`; or backfill)."""

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
            prepare_store(self.uri)
            self.mirror = _Mirror(self.uri, self.experiment, self.manifest)
        except Exception as err:
            self.record(f"tracking to {self.uri} failed: {_describe(err)}", fatal=True)
            return False
        self.dead = False
        return True

    def _expected(self, config_ids: list[str] | None) -> dict[str, Expected] | None:
        """What the runs must hold (None after recording a failure). A damaged
        part file is raised (`UserError`): it is the user's to fix."""
        delay = 0.2
        for attempt in range(READ_ATTEMPTS):
            try:
                expected, unknown = expected_runs(self.results_dir, self.manifest, config_ids)
                break
            except UserError:
                raise
            except Exception as err:  # noqa: BLE001 - e.g. a filesystem hiccup
                if attempt == READ_ATTEMPTS - 1:
                    self.record(f"reading {self.results_dir / 'summary'} failed: {_describe(err)}")
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

    def _log_all(self, expected: Iterable[Expected]) -> None:
        for exp in expected:
            if self.dead:
                return
            try:
                self.mirror.log(exp)
            except Exception as err:
                if _is_data_error(err):
                    self.record(f"config {exp.config_id}: {_describe(err)}")
                    continue
                self.record(f"tracking to {self.uri} failed: {_describe(err)}", fatal=True)
                return
            self.logged.add(exp.config_id)

    def track(self, config_ids: list[str] | None) -> None:
        """Mirror the given configurations (all with summary rows when None)."""
        if self.dead or self.mirror is None:
            return
        expected = self._expected(config_ids)
        if expected:
            self._log_all(expected.values())

    def reconcile(self, expected: dict[str, Expected] | None = None) -> dict[str, Expected] | None:
        """Make the whole experiment match the disk: tidy (extra parents,
        duplicated or orphan children), log every run that is missing or
        behind, log ``code/``. Returns what was expected (None on failure)."""
        if self.dead or self.mirror is None:
            return None
        if expected is None:
            expected = self._expected(None)
            if expected is None:
                return None
        try:
            self.mirror.tidy(set(expected))
            children = self.mirror.children()
            self._log_all(exp for cid, exp in expected.items()
                          if cid not in children or not up_to_date(children[cid], exp))
            if not self.dead:
                self.mirror.sync_code(self.results_dir)
        except Exception as err:
            self.record(f"tracking to {self.uri} failed: {_describe(err)}", fatal=True)
            return None
        return expected

    def verify(self, expected: dict[str, Expected]) -> None:
        """Check, fresh from the store, that MLflow holds exactly ``expected``:
        one parent, one finished child per configuration with rows, equal to
        the disk; record what does not hold."""
        if self.dead or self.mirror is None:
            return
        try:
            parents = self.mirror.parents()
            children: dict[str, list[_RunState]] = {}
            for state in self.mirror.search_children():
                children.setdefault(state.tags[CONFIG_TAG], []).append(state)
            code = code_digest(self.results_dir / CODE_DIR)
            parent_tags = next((p.tags for p in parents if p.run_id == self.mirror.parent.run_id), {})
        except Exception as err:
            self.record(f"tracking to {self.uri} failed: {_describe(err)}", fatal=True)
            return
        problems = []
        if len(parents) != 1:
            problems.append(f"{len(parents)} parent runs of sweep {self.mirror.sweep}")
        if code is not None and parent_tags.get(CODE_ARTIFACTS_TAG) != code:
            problems.append(f"code/ not logged to the parent run (digest {code})")
        good = set()
        for cid, exp in expected.items():
            runs = children.get(cid, [])
            if len(runs) != 1:
                problems.append(f"config {cid}: {len(runs)} runs")
            elif not up_to_date(runs[0], exp):
                problems.append(f"config {cid}: {_behind(runs[0], exp)}")
            else:
                good.add(cid)
        extra = sorted(set(children) - set(expected))
        if extra:
            problems.append(f"{len(extra)} run(s) of configurations without rows, e.g. {extra[0]}")
        self.logged = good
        if problems:
            self.record(f"MLflow at {self.uri} does not match {self.results_dir} "
                        f"({len(problems)} problem(s); first: {problems[0]})")

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
            self.verify(expected)
        if not self.dead:
            try:
                from schedlab.platform.selection import log_to_mlflow

                log_to_mlflow(self.mirror.client, self.mirror.parent.run_id, self.results_dir)  # selection.json, if any
                if expected is not None:
                    self.mirror.describe(self.manifest, expected)
                self.mirror.finish()
            except Exception as err:
                self.record(f"tracking to {self.uri} failed: {_describe(err)}", fatal=True)
        return self.report()


def sweep_note(manifest: dict[str, Any], expected: dict[str, Expected]) -> str:
    """Markdown for the parent run: description, grid axes, a table of the
    headline metrics (mean ± 95 % CI, n) per configuration, the spec."""
    import json

    from schedlab.platform.tracking_data import varying_params

    spec = manifest.get("spec") or {}
    axes = varying_params(manifest)
    lines = [str(manifest.get("description") or f"Sweep {manifest.get('name', '')}."), ""]
    lines.append(f"**Grid axes:** {', '.join(['policy', *axes]) if axes else 'policy'}; "
                 f"**configurations with rows:** {len(expected)}.")
    reps = spec.get("replications") or {}
    wanted = [reps["metric"]] if reps.get("metric") else []
    wanted += list(HEADLINE.get(str(manifest.get("engine", "")), ()))
    have = {k for e in expected.values() for k in e.values}
    metrics = [m for m in dict.fromkeys(wanted) if m in have][:2]
    rows = []
    if metrics:
        head = ["run", *[f"{m} (mean ± 95 % CI)" for m in metrics], "n"]
        rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for exp in sorted(expected.values(), key=lambda e: e.run_name):
            cells = [exp.run_name]
            for m in metrics:
                v, ci = exp.values.get(m), exp.values.get(f"{m}_ci95")
                cells.append("" if v is None else f"{v:.4g}" + (f" ± {ci:.2g}" if ci is not None else ""))
            cells.append(str(exp.n))
            rows.append("| " + " | ".join(cells) + " |")
    tail = ["", "Spec (result-defining part):", "", "```json", json.dumps(spec, indent=1, sort_keys=True), "```"]
    body = "\n".join(lines)
    table = rows
    while table and len(body) + sum(len(r) + 1 for r in table) + sum(len(t) + 1 for t in tail) + 120 > MAX_NOTE:
        table = table[:-1]
    if rows and len(table) < len(rows):
        table = [*table, "", f"(first {max(len(table) - 2, 0)} of {len(rows) - 2} configurations; "
                            f"all of them: `schedlab results`)"]
    text = "\n".join([body, "", *table, *tail])
    return text if len(text) <= MAX_NOTE else text[:MAX_NOTE - 4] + "\n..."


def _describe(err: Exception) -> str:
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0] if text else ''}"[:500]


def track_results(results_dir: str | Path, uri: str | None = None, experiment: str | None = None) -> TrackReport:
    """Synchronously make MLflow mirror a results dir (backfill; idempotent)
    and verify it. A missing or invalid manifest or a damaged part file is a
    `UserError`; tracking failures are reported, never raised."""
    from schedlab.platform.store import ResultStore

    results_dir = Path(results_dir)
    manifest = read_manifest(results_dir)
    ResultStore(results_dir).files()  # a damaged part file: UserError before MLflow is touched
    return _Sync(resolve_uri(uri), experiment, results_dir, manifest).finalize()


class Tracker:
    """Live tracking during a sweep. ``start()`` (before any task: creates the
    store, experiment and parent run, then reconciles every configuration in
    the background), ``submit(ids)`` (non-blocking: a daemon thread reads,
    aggregates and logs those configurations, FIFO, coalescing ids still
    pending), ``close(timeout)`` (drains, then reconciles and verifies
    everything; returns a `TrackReport` of the end state). No method raises
    because of tracking."""

    def __init__(self, uri: str | None, experiment: str | None, results_dir: str | Path):
        self._sync = _Sync(resolve_uri(uri), experiment, Path(results_dir))
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
        if self._thread is not None or self._closing:
            return
        if not self._sync.connect():
            return
        self._full = True
        self._thread = threading.Thread(target=self._work, name="schedlab-tracking", daemon=True)
        self._thread.start()

    def submit(self, config_ids: Iterable[str]) -> None:
        with self._cond:
            if self._thread is None or self._closing or self._stop:
                return  # the final reconcile in close() covers them
            for cid in config_ids:
                self._pending.setdefault(str(cid), None)
            self._cond.notify()

    def _work(self) -> None:
        while True:
            with self._cond:
                while not self._pending and not self._full and not self._closing and not self._stop:
                    self._cond.wait()
                if self._stop or not (self._pending or self._full):
                    return
                full, self._full = self._full, False
                batch = list(self._pending)
                self._pending.clear()
            try:
                if full:
                    self._sync.reconcile()
                if batch:
                    self._sync.track(batch)
            except Exception as err:  # a damaged file, a bug: must not take the sweep down
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
                    f"tracking did not finish within {timeout:g} s ({left} configuration(s) still queued)",
                    fatal=True,
                )
                self._report = self._sync.report()
                return self._report
        try:
            self._report = self._sync.finalize()
        except Exception as err:  # a damaged part file, a bug
            self._sync.record(f"tracking failed: {_describe(err)}", fatal=True)
            self._report = self._sync.report()
        return self._report
