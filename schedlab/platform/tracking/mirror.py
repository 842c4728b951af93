"""The sweep's experiment, parent run and child runs in one MLflow tracking
store (`Mirror`), and how a run compares with what the disk says it must hold
(`RunState`, `up_to_date`, `behind`).

A new child run costs three store calls: ``create_run`` with every tag but
the provenance ones, one ``log_batch`` with params, metrics and the
provenance tags (``schedlab.rows``, ``schedlab.rows_digest``), and
``set_terminated`` -- except into a database (SQLite, or PostgreSQL reached
directly) of a known schema, where the
runs of configurations that have none yet are written many to a transaction
(`Mirror.build_new` and `Mirror.commit_new`, `tracking_bulk`). MLflow writes a ``log_batch``'s params, then its
metrics, then its tags, so the provenance tags still land last: a run has
them only once its values are in (a run wider than one batch gets them in a
batch of their own, after the others). `Mirror.log` is safe to call from
several threads at once for *different* configurations (the pool in
`tracking_sync`): each call touches only its configuration's entry.

``mlflow`` is imported inside functions only.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from schedlab.platform.tracking.bulk import (
    PARENT_TAG,
    NewRows,
    NewRun,
    build_new_runs,
    bulk_store,
    insert_new_runs,
)
from schedlab.platform.tracking.bulk_read import child_run_blocks, runs_by_id
from schedlab.platform.tracking.data import (
    CONFIG_TAG,
    PROVENANCE_TAGS,
    ROWS_TAG,
    Expected,
    code_digest,
    some_of,
    sweep_note,
)
from schedlab.platform.tracking.store import TrackingError, ensure_indexes
from schedlab.platform.tracking.ui import (
    EXPERIMENT_KIND_TAG,
    MODEL_TRAINING,
    RESULTS_CSV,
    VIEW_TAG,
    artifact_root,
    results_csv,
    view_state,
)

if TYPE_CHECKING:
    from mlflow.entities import Metric, Param, Run, RunTag

# MLflow's log_batch limits (mlflow.utils.validation).
MAX_METRICS_PER_BATCH = 1000
MAX_PARAMS_PER_BATCH = 100
MAX_TAGS_PER_BATCH = 100
MAX_ENTITIES_PER_BATCH = 1000

SWEEP_TAG = "schedlab.sweep"
#: MLflow's description of a run or an experiment (shown above its details).
NOTE_TAG = "mlflow.note.content"
CODE_ARTIFACTS_TAG = "schedlab.code_artifacts"
CODE_DIR = "code"
#: The parent run's tag: digest of the results table it holds (`RESULTS_CSV`), logged again only when it changes.
RESULTS_TAG = "schedlab.results_csv"
#: Runs per page of a search (MLflow's maximum for search_runs).
SEARCH_PAGE = 1000


def batches(
    metrics: list[Metric], params: list[Param], tags: list[RunTag]
) -> Iterator[tuple[list[Metric], list[Param], list[RunTag]]]:
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


def is_data_error(err: Exception) -> bool:
    """A problem with one configuration's data, not with the tracking store."""
    return getattr(err, "error_code", None) == "INVALID_PARAMETER_VALUE"


def _tag(key: str, value: str) -> RunTag:
    from mlflow.entities import RunTag

    return RunTag(key, value)


@dataclass
class RunState:
    run_id: str
    params: dict[str, str]
    tags: dict[str, str]
    metrics: dict[str, float]
    finished: bool
    run_name: str = ""

    @classmethod
    def of(cls, run: Run) -> RunState:
        return cls(
            run.info.run_id,
            dict(run.data.params),
            dict(run.data.tags),
            dict(run.data.metrics),
            run.info.status == "FINISHED",
            run.info.run_name or "",
        )


def up_to_date(state: RunState, exp: Expected) -> bool:
    """Does the run hold exactly what the disk says (name, params, tags, metric values)?"""
    return (
        state.finished
        and state.run_name == exp.run_name
        and all(state.params.get(k) == v for k, v in exp.params.items())
        and all(state.tags.get(k) == v for k, v in exp.tags.items())
        and state.metrics == exp.values
    )


def behind(state: RunState, exp: Expected) -> str:
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
    for k, value in exp.values.items():
        if state.metrics.get(k) != value:
            return f"metric {k} is {state.metrics.get(k)!r}, disk says {value!r}"
    extra = sorted(set(state.metrics) - set(exp.values))
    if extra:
        return f"metric {extra[0]} is not in the rows"
    return "up to date"


class Children:
    """config id -> its child run, as the mirror knows the store's. Into a
    database written in bulk (`tracking_bulk`: where big sweeps go) only
    each run's id is kept, about a hundred bytes a configuration; a run's
    contents are read back from the store when it is logged again
    (`state`, `load`) and let go after (`release`). A run's contents are
    about 7 KB of Python objects: held for every run, a 10^6 sweep's tracking
    reached 15 GB (issue 42). Through a server (``read`` None) every run's
    contents are kept as they were read: a server takes ~30 runs/s, and
    reading a run back would be one more request."""

    def __init__(self, read: Callable[[list[str]], list[RunState]] | None) -> None:
        self.ids: dict[str, str] = {}  # config id -> run id
        self.states: dict[str, RunState] = {}  # config id -> contents (through a server: all; else: loaded)
        self._read = read

    def __contains__(self, cid: object) -> bool:
        return cid in self.ids

    def __len__(self) -> int:
        return len(self.ids)

    def __iter__(self) -> Iterator[str]:
        return iter(self.ids)

    def add(self, cid: str, state: RunState) -> None:
        """Know ``state`` as ``cid``'s run (its contents kept through a server only)."""
        self.ids[cid] = state.run_id
        if self._read is None:
            self.states[cid] = state
        else:
            self.states.pop(cid, None)

    def know(self, cid: str, run_id: str) -> None:
        """Know ``run_id`` as ``cid``'s run, its contents not held (a run just written in bulk)."""
        self.ids[cid] = run_id
        self.states.pop(cid, None)

    def remove(self, cid: str) -> None:
        del self.ids[cid]
        self.states.pop(cid, None)

    def state(self, cid: str) -> RunState | None:
        """``cid``'s run with its contents (read from the store if not held), or None."""
        if cid not in self.ids:
            return None
        if cid not in self.states:
            self.load([cid])
        return self.states.get(cid)

    def load(self, cids: list[str]) -> None:
        """Read the contents of the runs of ``cids`` not held (a block of reads,
        not one per run); a run no longer in the store is forgotten."""
        if self._read is None:
            return
        wanted = {self.ids[c]: c for c in cids if c in self.ids and c not in self.states}
        found = {state.run_id: state for state in self._read(list(wanted))}
        for run_id, cid in wanted.items():
            if run_id in found:
                self.states[cid] = found[run_id]
            else:
                self.remove(cid)

    def release(self) -> None:
        """Let go of the contents read back (a server's are kept)."""
        if self._read is not None:
            self.states.clear()


class Mirror:
    """The sweep's experiment, parent run and child runs in one tracking store."""

    def __init__(self, uri: str, experiment: str | None, manifest: dict[str, Any], bulk: bool = True):
        from mlflow.tracking import MlflowClient

        #: Called after every page of a search: progress for a caller that watches for stalls.
        self.tick: Callable[[], None] = lambda: None
        self.client = MlflowClient(tracking_uri=uri)
        self.uri = uri
        ensure_indexes(self.client)
        self.sweep = str(manifest["name"])
        self.experiment_id = self._experiment(experiment or self.sweep)
        self.parent = self._parent(manifest)
        self._children: Children | None = None
        #: The store new runs are written to in bulk, or None: through the client (`tracking_bulk.bulk_store`;
        #: ``bulk=False``: always the client, the path the bulk one is compared with).
        self.bulk = bulk_store(self.client) if bulk else None

    def _experiment(self, name: str) -> str:
        from mlflow.exceptions import MlflowException

        """The experiment's id, created if absent: tagged for model training
        (MLflow's UI opens it on its runs, `tracking_ui`), its artifacts beside
        the store (`tracking_ui.artifact_root`; an experiment's artifact
        location is fixed at its creation)."""
        exp = self.client.get_experiment_by_name(name)
        if exp is None:
            try:
                return self.client.create_experiment(
                    name, artifact_location=artifact_root(self.uri), tags={EXPERIMENT_KIND_TAG: MODEL_TRAINING}
                )
            except MlflowException as err:  # created meanwhile by another process
                exp = self.client.get_experiment_by_name(name)
                if exp is None:
                    raise err
        if exp.lifecycle_stage != "active":
            raise TrackingError(f"MLflow experiment {name!r} is deleted: restore it or choose another name")
        if exp.tags.get(EXPERIMENT_KIND_TAG) != MODEL_TRAINING:  # made by an older schedlab, or by hand
            self.client.set_experiment_tag(exp.experiment_id, EXPERIMENT_KIND_TAG, MODEL_TRAINING)
        return exp.experiment_id

    def _search(self, flt: str) -> list[Run]:
        runs, token = [], None
        while True:
            page = self.client.search_runs(
                [self.experiment_id],
                flt,
                max_results=SEARCH_PAGE,
                order_by=["attributes.start_time ASC"],
                page_token=token,
            )
            runs += list(page)
            self.tick()
            token = page.token
            if not token:
                return runs

    def parents(self) -> list[RunState]:
        """Active parent runs of this sweep, oldest first."""
        flt = _filter_eq(SWEEP_TAG, self.sweep) or f"tags.`{SWEEP_TAG}` LIKE '%'"
        runs = self._search(flt)
        return [
            RunState.of(r) for r in runs if r.data.tags.get(SWEEP_TAG) == self.sweep and PARENT_TAG not in r.data.tags
        ]

    def _parent(self, manifest: dict[str, Any]) -> RunState:
        tags = {
            SWEEP_TAG: self.sweep,
            "schedlab.engine": str(manifest.get("engine", "")),
            "schedlab.version": str(manifest.get("schedlab_version", "")),
            "schedlab.spec_hash": str(manifest.get("spec_hash", "")),
        }
        runs = self.parents()
        if not runs:
            run = self.client.create_run(self.experiment_id, tags=tags, run_name=self.sweep)
            return RunState.of(run)
        state = runs[0]
        changed = [_tag(k, v) for k, v in tags.items() if state.tags.get(k) != v]
        if changed:
            self.client.log_batch(state.run_id, tags=changed, synchronous=True)
            state.tags.update(tags)
        return state

    def search_children(self, parent_id: str | None = None) -> list[RunState]:
        """Child runs of a parent (ours by default), oldest first, fresh from the store
        (a bulk store: read straight from its tables, `tracking_bulk_read`)."""
        return [state for block in self.search_children_blocks(parent_id) for state in block]

    def search_children_blocks(self, parent_id: str | None = None) -> Iterator[list[RunState]]:
        """`search_children` a block of runs at a time, in the same order: from a
        bulk store `tracking_bulk_read.READ_BLOCK` runs' contents at a time (a
        caller that looks at each run once holds one block); through MLflow's
        client, one block of them all."""
        if self.bulk is None:
            runs = self._search(f"tags.`{PARENT_TAG}` = '{parent_id or self.parent.run_id}'")
            yield [RunState.of(r) for r in runs if r.data.tags.get(CONFIG_TAG) is not None]
            return
        for stored in child_run_blocks(self.bulk, self.experiment_id, parent_id or self.parent.run_id):
            self.tick()
            yield [
                RunState(r.run_id, r.params, r.tags, r.metrics, r.status == "FINISHED", r.name)
                for r in stored
                if r.tags.get(CONFIG_TAG) is not None
            ]

    def children(self) -> Children:
        """config_id -> child run (the oldest), one search the first time."""
        if self._children is None:
            found = self._new_children()
            for block in self.search_children_blocks():
                for state in block:
                    if state.tags[CONFIG_TAG] not in found:
                        found.add(state.tags[CONFIG_TAG], state)
            self._children = found
        return self._children

    def _new_children(self) -> Children:
        bulk = self.bulk
        if bulk is None:
            return Children(None)

        def read(run_ids: list[str]) -> list[RunState]:
            return [
                RunState(r.run_id, r.params, r.tags, r.metrics, r.status == "FINISHED", r.name)
                for r in runs_by_id(bulk, run_ids)
            ]

        return Children(read)

    def tidy(self, expected: Mapping[str, Expected]) -> set[str]:
        """Delete what no results dir row accounts for: extra parent runs of
        this sweep (with their children), duplicated child runs (the oldest is
        kept), child runs of configurations without rows (not in
        ``expected``). Refreshes the children, reading them a block at a time.
        Returns the configurations whose kept run is not up to date with
        ``expected`` (`log` reads their contents back, `Children.load`).
        ``expected`` is made a block of children at a time (`some_of`)."""
        for extra in self.parents():
            if extra.run_id == self.parent.run_id:
                continue
            for block in self.search_children_blocks(extra.run_id):
                for child in block:
                    self.client.delete_run(child.run_id)
            self.client.delete_run(extra.run_id)
        found = self._new_children()
        behind: set[str] = set()
        for block in self.search_children_blocks():
            made = some_of(expected, [state.tags[CONFIG_TAG] for state in block])  # the block's, made at once
            for state in block:
                cid = state.tags[CONFIG_TAG]
                if cid in found or cid not in made:
                    self.client.delete_run(state.run_id)
                    continue
                found.add(cid, state)
                if not up_to_date(state, made[cid]):
                    behind.add(cid)
        self._children = found
        return behind

    def log(self, exp: Expected) -> None:
        """Bring one configuration's child run to ``exp``."""
        from mlflow.entities import Metric, Param

        children = self.children()
        cid = exp.config_id
        state = children.state(cid)
        if state is not None and self._must_replace(state, exp):
            self.client.delete_run(state.run_id)
            children.remove(cid)
            state = None
        if state is None:
            run = self.client.create_run(
                self.experiment_id,
                tags={
                    **{k: v for k, v in exp.tags.items() if k not in PROVENANCE_TAGS},
                    PARENT_TAG: self.parent.run_id,
                },
                run_name=exp.run_name or cid,
            )
            state = RunState.of(run)
            children.add(cid, state)
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
        provenance = [_tag(k, exp.tags[k]) for k in PROVENANCE_TAGS if state.tags.get(k) != exp.tags[k]]
        chunks = list(batches(metrics, param_list, tag_list))
        if provenance and len(chunks) <= 1 and len(tag_list) + len(provenance) <= MAX_TAGS_PER_BATCH:
            # One call: MLflow writes the batch's tags after its params and metrics.
            m, p, t = chunks[0] if chunks else ([], [], [])
            chunks, provenance = [(m, p, t + provenance)], []
        for m, p, t in chunks:
            self.client.log_batch(state.run_id, metrics=m, params=p, tags=t, synchronous=True)
        if provenance:  # last: the run now holds everything these rows give
            self.client.log_batch(state.run_id, tags=provenance, synchronous=True)
        state.params.update(new_params)
        state.tags.update(new_tags)
        state.tags.update({k: exp.tags[k] for k in PROVENANCE_TAGS})
        if stale:
            state.metrics = dict(exp.values)
        if not state.finished:
            self.client.set_terminated(state.run_id, "FINISHED")
            state.finished = True

    def build_new(self, exps: list[Expected]) -> NewRows:
        """The new runs of configurations that have none, built and checked,
        not written (`tracking_bulk.build_new_runs`)."""
        if self.bulk is None:  # invariant: callers check
            raise RuntimeError("Mirror.build_new without a bulk store")
        return build_new_runs(self.bulk, self.experiment_id, self.parent.run_id, exps)

    def commit_new(self, batch: NewRows) -> list[NewRun]:
        """Write a built batch in one transaction (`tracking_bulk.insert_new_runs`)
        and know its runs from then on. Safe in another thread than
        `build_new`'s: the two share no state until this returns."""
        if self.bulk is None:  # invariant: callers check
            raise RuntimeError("Mirror.commit_new without a bulk store")
        children = self.children()
        written = insert_new_runs(self.bulk, batch)
        for new in written:
            if new.error is None:
                children.know(new.exp.config_id, new.run_id)  # read back from the store if logged again
        return written

    @staticmethod
    def _must_replace(state: RunState, exp: Expected) -> bool:
        """A run not to correct in place: a param value changed (params are
        immutable), or it holds metric values that differ from the disk's
        (logging the new ones would leave a history of several points per
        metric, and MLflow cannot delete a metric)."""
        if any(k in state.params and state.params[k] != v for k, v in exp.params.items()):
            return True
        return bool(state.metrics) and state.metrics != exp.values

    def describe(self, manifest: dict[str, Any], expected: Mapping[str, Expected]) -> None:
        """The parent's and the experiment's descriptions (MLflow notes): what
        the sweep is for, its grid axes, the headline metrics per
        configuration and the result-defining spec; the experiment's saved
        view (`tracking_ui.view_state`); the parent's results table. Set only
        when changed. What each needs of every run is one pass over them
        (`data.overview_of`); the runs shown are then made a block at a time."""
        text = sweep_note(manifest, expected)
        if self.parent.tags.get(NOTE_TAG) != text:
            self.client.set_tag(self.parent.run_id, NOTE_TAG, text)
            self.parent.tags[NOTE_TAG] = text
        about = str(manifest.get("description") or "")
        exp = self.client.get_experiment(self.experiment_id)
        if about and exp.tags.get(NOTE_TAG) != about:
            self.client.set_experiment_tag(self.experiment_id, NOTE_TAG, about)
        view = view_state(manifest, expected)
        if exp.tags.get(VIEW_TAG) != view:
            self.client.set_experiment_tag(self.experiment_id, VIEW_TAG, view)
        self._log_results(manifest, expected)

    def _log_results(self, manifest: dict[str, Any], expected: Mapping[str, Expected]) -> None:
        """The results table (`RESULTS_CSV`, `tracking_ui.results_csv`) on the
        parent run, unless it already holds this exact table (tag
        `RESULTS_TAG`, the digest of its text). Written to a file as it is
        made (at 10^6 configurations the table is about 280 MB)."""
        import hashlib
        import tempfile

        with tempfile.TemporaryDirectory(prefix="schedlab-mlflow-") as tmp:
            path = Path(tmp) / RESULTS_CSV
            with path.open("w", encoding="utf-8", newline="") as out:
                results_csv(manifest, expected, out)
            h = hashlib.sha256()
            with path.open("rb") as fh:
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    h.update(chunk)
            digest = h.hexdigest()[:16]
            if self.parent.tags.get(RESULTS_TAG) == digest:
                return
            self.client.log_artifact(self.parent.run_id, str(path))
        self.client.set_tag(self.parent.run_id, RESULTS_TAG, digest)
        self.parent.tags[RESULTS_TAG] = digest

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
