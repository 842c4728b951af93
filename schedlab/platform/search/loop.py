"""A search's loop: Optuna asks, the sweep runner runs, Optuna is told.

Trials go in *batches* of ``parallel``: the batch's trials are asked
together, run together as one ordinary sweep (the tuned policy once per
trial, every trial on instances ``0..replications-1`` of the workload point:
common random numbers; Ray runs them like any sweep's configurations) and
told in trial-number order once all their rows are on disk. The sampler
for batch b is built afresh, seeded from ``SeedSequence([seed, SAMPLER_WORD,
b])`` (QMC: from the seed alone, its position in the sequence is the
study's), so what it asks depends only on the spec, the seed and the trials
told before -- never on how many CPUs ran them or in which order they
finished: the same trials, rows and winner on one core or a cluster.

Where the truth is. The rows in Parquet are the results: a trial's value is
the mean of the metric over its ``replications`` rows, read back from disk.
The Optuna study (``search/study.journal``, Optuna's JournalStorage on a
JournalFileBackend: an append-only log, fsynced per write) is the record of
what the sampler asked; ``search/state.json`` says how many batches were
told and the journal's length at that moment. A killed search resumes by
cutting the journal back to that length (dropping the asks of the batch that
was running) and asking that batch again: the sampler, rebuilt with the
batch's seed on the same history, asks the same trials, whose rows on disk
are skipped (no simulation runs twice, no row is written twice), and the
batch is told. A journal that is missing or shorter than the state says is
rebuilt the same way from batch 0 -- the study is a function of the spec and
the rows. ``search/trials.json`` lists every trial (number, parameters,
configuration id, value, state) for people and for MLflow's trial tags.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import shutil
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from schedlab.errors import UserError
from schedlab.platform.execution.runner import Interrupted, Progress, SweepReport, run_sweep
from schedlab.platform.planning.plan import canonical
from schedlab.platform.planning.spec import ReplicationsSpec, SweepSpec
from schedlab.platform.search.space import (
    TrialRecord,
    distributions,
    grid_size,
    grid_space,
    trials_spec,
    workload_key,
)
from schedlab.platform.storage.seam import ResultsStore, open_store

if TYPE_CHECKING:
    import optuna

    from schedlab.platform.tracking.tracker import TrackProgress

#: The search's folder in the results dir, and its files.
FOLDER = "search"
JOURNAL = "study.journal"
STATE = "state.json"
TRIALS = "trials.json"
IDENTITY = "identity.json"
REPORT = "report.md"
#: A word in the sampler's seed sequence that instance seeds never have
#: (theirs are [seed, point id, replication]).
SAMPLER_WORD = 0x5EA4C4
#: Draws the convergence figure: (spec, trial records, selection document, PNG path) -> the files written.
Draw = Callable[["SweepSpec", "list[TrialRecord]", "dict[str, Any] | None", Path], "list[Path]"]


@dataclass
class SearchReport(SweepReport):
    """A sweep's report plus the search's end: ``selection`` is the
    ``selection.json`` document (`schedlab.platform.search.select`)."""

    trials: int = 0
    selection: dict[str, Any] | None = None
    figure: str | None = None
    batches_run: int = 0
    per_batch: list[float] = field(default_factory=list)


def _atomic_json(path: Path, doc: Any) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}-", suffix=".json")
    with os.fdopen(fd, "w") as fh:
        json.dump(doc, fh, indent=1, sort_keys=True, allow_nan=False)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _sampler(spec: SweepSpec, batch: int) -> optuna.samplers.BaseSampler:
    """The sampler that asks batch ``batch`` (see the module docstring)."""
    import optuna

    with warnings.catch_warnings():  # Optuna marks QMC and GP experimental: not the user's concern
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return _new_sampler(spec, batch)


def _new_sampler(spec: SweepSpec, batch: int) -> optuna.samplers.BaseSampler:
    import numpy as np
    import optuna

    search = spec.search
    if search is None:  # run_search is only called with a search
        raise ValueError("no [search]")
    seed = int(np.random.SeedSequence([spec.seed, SAMPLER_WORD, batch]).generate_state(1)[0])
    if search.sampler == "tpe":
        return optuna.samplers.TPESampler(seed=seed)
    if search.sampler == "cmaes":
        return optuna.samplers.CmaEsSampler(seed=seed, warn_independent_sampling=False)
    if search.sampler == "gp":
        return optuna.samplers.GPSampler(seed=seed)
    if search.sampler == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    if search.sampler == "grid":
        return _grid_sampler(grid_space(spec), seed)
    base = int(np.random.SeedSequence([spec.seed, SAMPLER_WORD]).generate_state(1)[0])
    return optuna.samplers.QMCSampler(scramble=True, seed=base, warn_asynchronous_seeding=False)


def _grid_sampler_class() -> type:
    import optuna

    class GridSampler(optuna.samplers.GridSampler):
        """Optuna's grid sampler without its stop: it calls `Study.stop` once the
        grid is visited, which only works inside `Study.optimize`; the search
        asks at most the grid's size itself (`planned_trials`)."""

        def after_trial(self, study: Any, trial: Any, state: Any, values: Any) -> None:
            return None

    return GridSampler


def _grid_sampler(space: dict[str, list[Any]], seed: int) -> optuna.samplers.BaseSampler:
    sampler: optuna.samplers.BaseSampler = _grid_sampler_class()(space, seed=seed)
    return sampler


def planned_trials(spec: SweepSpec) -> int:
    """Trials the search runs: ``trials``, at most the grid's size under the grid sampler."""
    if spec.search is None:
        return 0
    if spec.search.sampler == "grid":
        return min(spec.search.trials, grid_size(spec))
    return spec.search.trials


def describe_plan(spec: SweepSpec) -> list[str]:
    """What a search will run (`schedlab plan`)."""
    search = spec.search
    if search is None:
        return []
    sel = search.select
    total = planned_trials(spec)

    def space(name: str) -> str:
        p = search.params[name]
        if p.choices is not None:
            return f"{name} in {p.choices}"
        scale = ", log" if p.log else (f", step {p.step:g}" if p.step is not None else "")
        return f"{name} in [{p.low:g}, {p.high:g}{scale}]"

    how = (
        f"KN (delta {sel.delta:g}, n0 {sel.n0}, confidence {sel.confidence:g})"
        if sel.delta is not None
        else f"paired t intervals to the best (Bonferroni, confidence {sel.confidence:g})"
    )
    base = sel.replications if sel.baseline is not None else 0
    return [
        f"  policy            {spec.policy_entries()[0].name}",
        f"  search            {search.sampler} on {search.metric} ({search.direction}): {total} trials, "
        f"{search.parallel} at a time, each on replications 0..{search.replications - 1} (the same instances)",
        f"  parameters        {'; '.join(space(n) for n in sorted(search.params))}",
        f"  selection         the best {sel.top} trials on fresh replications {search.replications}.."
        f"{search.replications + sel.replications - 1}: {how}"
        + (f"; baseline {sel.baseline}" if sel.baseline is not None else ""),
        f"  simulations       at most {total * search.replications} (trials) + "
        f"{sel.top * sel.replications + base} (selection)",
    ]


def _identity(spec: SweepSpec) -> dict[str, Any]:
    """What the journal's trials mean: everything but the trials' count and the selection."""
    data = spec.result_defining()
    data.pop("replications", None)
    return data


def _open_study(root: Path, spec: SweepSpec) -> tuple[optuna.Study, int]:
    """The study cut back to its last told batch (see the module docstring), and that batch count."""
    import optuna
    from optuna.storages.journal import JournalFileBackend, JournalFileOpenLock, JournalStorage

    journal, state_path = root / JOURNAL, root / STATE
    lock = Path(f"{journal}.lock")
    lock.unlink(missing_ok=True)  # a killed run's; this process holds the results dir's lock
    state = {"batches": 0, "journal_bytes": 0}
    if state_path.exists():
        with contextlib.suppress(OSError, ValueError):
            state = json.loads(state_path.read_text())
    size = journal.stat().st_size if journal.exists() else 0
    if size < state["journal_bytes"] or (state["batches"] and not journal.exists()):
        state = {"batches": 0, "journal_bytes": 0}  # lost: rebuilt from the rows, batch by batch
        journal.unlink(missing_ok=True)
    elif size > state["journal_bytes"]:
        with journal.open("r+b") as fh:
            fh.truncate(state["journal_bytes"])
            fh.flush()
            os.fsync(fh.fileno())
    if state["journal_bytes"] == 0:
        journal.unlink(missing_ok=True)
    search = spec.search
    if search is None:
        raise ValueError("no [search]")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage = JournalStorage(JournalFileBackend(str(journal), lock_obj=JournalFileOpenLock(str(journal))))
    study = optuna.create_study(
        storage=storage,
        study_name=spec.name,
        direction=search.direction,
        sampler=_sampler(spec, int(state["batches"])),
        load_if_exists=True,
    )
    return study, int(state["batches"])


def records(study: optuna.Study, parallel: int) -> list[TrialRecord]:
    import optuna

    out = []
    for t in study.get_trials(deepcopy=False):
        state = {
            optuna.trial.TrialState.COMPLETE: "complete",
            optuna.trial.TrialState.FAIL: "fail",
        }.get(t.state, "running")
        out.append(
            TrialRecord(
                t.number,
                int(t.user_attrs.get("batch", t.number // parallel)),
                dict(t.params),
                t.user_attrs.get("config_id"),
                state,
                t.value,
            )
        )
    return out


def read_trials(results_dir: str | Path) -> list[dict[str, Any]] | None:
    """``search/trials.json`` of a results dir (None when it is not a search's)."""
    path = Path(results_dir) / FOLDER / TRIALS
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, list) else None


def trial_values(store: ResultsStore, config_ids: list[str], metric: str, replications: int) -> dict[str, float]:
    """config id -> mean of ``metric`` over replications 0..replications-1, for
    each configuration that has all of them with a finite value."""
    import polars as pl

    if not store.has("summary") or not config_ids:
        return {}
    rows = (
        store.scan()
        .filter(pl.col("config_id").is_in(config_ids) & (pl.col("replication") < replications))
        .select("config_id", "replication", pl.col(metric).cast(pl.Float64))
        .collect()
        .sort("config_id", "replication")
    )
    per: dict[str, list[float]] = {}
    for cid, _, v in rows.iter_rows():
        if v is not None and math.isfinite(v):
            per.setdefault(cid, []).append(v)
    return {cid: math.fsum(v) / len(v) for cid, v in per.items() if len(v) == replications}


class _Runs:
    """Runs ordinary sweeps of settings into the search's results dir (the
    lock held), summing their reports into the search's."""

    def __init__(
        self,
        spec: SweepSpec,
        store: ResultsStore,
        report: SearchReport,
        *,
        address: str | None,
        backend: str | None = None,
        fresh: bool,
        tracking: bool | None,
        progress: Callable[[Progress | TrackProgress], None] | None,
    ) -> None:
        self.spec, self.store, self.report = spec, store, report
        self.address, self.fresh, self.tracking, self.progress = address, fresh, tracking, progress
        self.backend = backend
        self.done: set[tuple[str, int]] = set() if fresh else store.done_keys()

    def sweeps(self, settings: list[dict[str, Any]], reps: ReplicationsSpec) -> list[tuple[SweepSpec, list[str]]]:
        """The ordinary sweeps that run ``settings`` (deduplicated, one per
        workload point) with ``reps``, each with its configuration ids."""
        from schedlab.platform.planning.plan import build_plan

        unique = list({canonical(s): s for s in settings}.values())
        groups: dict[Any, list[dict[str, Any]]] = {}
        for s in unique:
            groups.setdefault(workload_key(self.spec, s), []).append(s)
        out = []
        for group in groups.values():
            sweep = trials_spec(self.spec, group).model_copy(update={"replications": reps})
            plan = build_plan(sweep)
            if len(plan.points) != 1:  # check_search: a search runs on one workload point
                raise RuntimeError("a search's sweep has more than one workload point")
            out.append((sweep, [c.config_id for c in plan.points[0].configs]))
        return out

    def ids(self, settings: list[dict[str, Any]], reps: ReplicationsSpec) -> list[str]:
        """Each setting's configuration id, in the order given."""
        unique = list({canonical(s): s for s in settings}.values())
        groups: dict[Any, list[dict[str, Any]]] = {}
        for s in unique:
            groups.setdefault(workload_key(self.spec, s), []).append(s)
        found: dict[str, str] = {}
        for group, (_, cids) in zip(groups.values(), self.sweeps(settings, reps), strict=True):
            found.update({canonical(s): c for s, c in zip(group, cids, strict=True)})
        return [found[canonical(s)] for s in settings]

    def run(self, settings: list[dict[str, Any]], reps: ReplicationsSpec, label: str) -> None:
        """Run ``settings`` with ``reps``; a sweep whose rows are all on
        disk is not started (a fixed count only: select-best decides as it goes)."""
        for sweep, cids in self.sweeps(settings, reps):
            wanted = range(reps.first, reps.first + (reps.n or 0))
            if reps.n is not None and all((c, r) in self.done for c in cids for r in wanted):
                continue
            self._sweep(sweep, label)

    def _sweep(self, sweep: SweepSpec, label: str) -> None:
        def show(p: Progress | TrackProgress) -> None:
            if self.progress is not None:
                self.progress(
                    dataclasses.replace(p, sweep=f"{self.spec.name} {label}") if isinstance(p, Progress) else p
                )

        t = time.monotonic()
        got = run_sweep(
            sweep,
            address=self.address,
            backend=self.backend,
            fresh=self.fresh,
            tracking=self.tracking,
            progress=show,
            store=self.store,
        )
        self.fresh = False
        if got.interrupted:  # Ctrl-C while the batch compacted: its rows are complete; no next batch
            raise Interrupted(
                f"interrupted: {got.rows_written} rows committed to {self.store.root}; run again to resume"
            )
        r = self.report
        r.rows_written += got.rows_written
        r.rows_skipped += got.rows_skipped
        r.failures += got.failures
        r.tasks += got.tasks
        r.sim_seconds += got.sim_seconds
        r.rounds += got.rounds
        r.compaction, r.compaction_error = got.compaction, got.compaction_error or r.compaction_error
        r.tracking = got.tracking if got.tracking is not None else r.tracking
        if got.backend:  # where the last batch that ran anything ran, and why
            r.backend, r.backend_why = got.backend, got.backend_why
        r.batches_run += 1
        r.per_batch.append(time.monotonic() - t)
        for k, v in got.stages.items():
            r.stages[k] = r.stages.get(k, 0.0) + v
        self.done = self.store.done_keys()


def run_search(
    spec: SweepSpec,
    *,
    address: str | None = None,
    backend: str | None = None,
    fresh: bool = False,
    tracking: bool | None = None,
    progress: Callable[[Progress | TrackProgress], None] | None = None,
    draw: Draw | None = None,
) -> SearchReport:
    """Run (or resume) ``spec``'s search, then its final selection (`select`)
    and, with ``draw`` (`schedlab.search_figure.convergence`, handed down by
    `schedlab.platform.sweep`: figures sit above the platform), the convergence figure
    before tracking logs it; returns a `SearchReport`."""
    store = open_store(spec.results_dir())
    store.lock()
    try:
        return _search_locked(
            spec, store, address=address, backend=backend, fresh=fresh, tracking=tracking, progress=progress, draw=draw
        )
    finally:
        store.tidy_tmp()
        store.unlock()


def _search_locked(
    spec: SweepSpec,
    store: ResultsStore,
    *,
    address: str | None,
    backend: str | None,
    fresh: bool,
    tracking: bool | None,
    progress: Callable[[Progress | TrackProgress], None] | None,
    draw: Draw | None,
) -> SearchReport:
    import optuna

    from schedlab.platform.search.select import report_markdown, select

    started = time.monotonic()
    search = spec.search
    if search is None:
        raise ValueError("run_search needs a spec with [search]")
    root = store.root / FOLDER
    if fresh and root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True, exist_ok=True)
    identity = _identity(spec)
    known = root / IDENTITY
    if known.exists():
        old = json.loads(known.read_text())
        if canonical(old) != canonical(identity):
            changed = sorted(k for k in set(old) | set(identity) if canonical(old.get(k)) != canonical(identity.get(k)))
            raise UserError(
                f"{store.root}: the search changed ({', '.join(changed)}): its trials would mean something else; "
                f"run with --fresh to start again, or set outputs.dir (only trials and [search.select] may change)"
            )
    else:
        _atomic_json(known, identity)
    report = SearchReport(str(store.root), configs=0)
    runs = _Runs(
        spec, store, report, address=address, backend=backend, fresh=fresh, tracking=tracking, progress=progress
    )
    dists = distributions(spec)
    total = planned_trials(spec)
    study, told = _open_study(root, spec)
    parallel = search.parallel
    trial_reps = ReplicationsSpec(n=search.replications)
    b = told
    while len(study.trials) < total:  # after the cut, every trial of the study is told
        study.sampler = _sampler(spec, b)
        asked = [study.ask(dists) for _ in range(min(parallel, total - len(study.trials)))]
        settings = [dict(t.params) for t in asked]
        label = f"trials {asked[0].number + 1}-{asked[-1].number + 1}/{total}"
        cids = _ids_then_run(runs, study, asked, settings, trial_reps, label, root, b)
        values = trial_values(store, sorted(set(cids)), search.metric, search.replications)
        for trial, cid in zip(asked, cids, strict=True):
            if cid in values:
                study.tell(trial, values[cid])
            else:
                study.tell(trial, state=optuna.trial.TrialState.FAIL)
        journal = root / JOURNAL
        _write_trials(root, records(study, parallel))
        _atomic_json(root / STATE, {"batches": b + 1, "journal_bytes": journal.stat().st_size})
        b += 1
    recs = records(study, parallel)
    _write_trials(root, recs)
    report.trials = len(recs)
    report.configs = len({r.config_id for r in recs if r.config_id})
    report.selection = select(spec, store, recs, runs)
    report.figure = _figure(spec, store, recs, report.selection, draw)
    if report.selection is not None:
        figure = Path(report.figure).name if report.figure else None
        (store.root / FOLDER / REPORT).write_text(report_markdown(report.selection, figure))
    if (spec.tracking.enabled if tracking is None else tracking) and report.selection is not None:
        from schedlab.platform.tracking.tracker import track_results

        report.tracking = track_results(store.root, spec.tracking.uri, spec.experiment())
    report.wall_seconds = time.monotonic() - started
    return report


def _ids_then_run(
    runs: _Runs,
    study: optuna.Study,
    asked: list[optuna.trial.Trial],
    settings: list[dict[str, Any]],
    reps: ReplicationsSpec,
    label: str,
    root: Path,
    batch: int,
) -> list[str]:
    """Record each asked trial's configuration id (a trial user attribute and
    trials.json, before anything runs: MLflow tags a trial's run with its
    number from the first time it logs it), then run the batch."""
    ids = runs.ids(settings, reps)
    for trial, cid in zip(asked, ids, strict=True):
        trial.set_user_attr("config_id", cid)
        trial.set_user_attr("batch", batch)
    _write_trials(root, records(study, len(asked) if runs.spec.search is None else runs.spec.search.parallel))
    runs.run(settings, reps, label)
    return ids


def _write_trials(root: Path, recs: list[TrialRecord]) -> None:
    _atomic_json(root / TRIALS, [dataclasses.asdict(r) for r in recs])


def _figure(
    spec: SweepSpec, store: ResultsStore, recs: list[TrialRecord], doc: dict[str, Any] | None, draw: Draw | None
) -> str | None:
    if draw is None:
        return None
    paths = draw(spec, recs, doc, store.root / FOLDER / "convergence.png")
    return str(paths[-1]) if paths else None
