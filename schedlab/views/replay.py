"""Choosing one run of a sweep and re-simulating it with a recorder.

A sweep stores rows, not schedules: a view re-runs the one configuration and
replication it shows, from the results dir's own manifest (the spec that
defined the rows), on the same workload instance (the same seed words, so
common random numbers hold) and the reference engine path, with the
engine's recorder on. Before anything is drawn the replay's summary is
compared with the stored row, metric by metric, to the bit (timings aside):
a view never shows a schedule that is not the one the row measured.

User code (a policy, a generator, a reader, a metric) is replayed from the
copy the results dir keeps of it (``code/<sha256>/``), not from the file the
spec names: a view of a run still works after that file was edited, and from
any folder. A results dir without that copy re-simulates with the user's file
as it is now, and a mismatch names the field and file whose code changed.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from schedlab.errors import UserError
from schedlab.views.schedule import Schedule

if TYPE_CHECKING:
    from schedlab.engines import Engine

#: Summary values that measure the machine, not the schedule: never compared.
TIMING_METRICS = ("sim_seconds", "bound_seconds")


@dataclass(frozen=True)
class Selected:
    """One stored run: its results dir, configuration, replication and row."""

    root: Path
    config_id: str
    replication: int
    row: dict[str, Any]
    manifest: dict[str, Any]

    @property
    def label(self) -> str:
        """The policy, the sweep's grid values of this configuration (the
        axes only: a run's name in MLflow reads the same) and the replication."""
        from schedlab.platform.tracking.data import varying_params

        params = self.manifest.get("configs", {}).get(self.config_id, {}).get("params", {})
        axes = [a for a in varying_params(self.manifest) if a in params]
        grid = " ".join(f"{k}={params[k]}" for k in axes)
        return f"{self.row['policy']}{' ' + grid if grid else ''} r{self.replication}"


def select(
    root: str | Path,
    *,
    policy: str | None = None,
    where: dict[str, Any] | None = None,
    replication: int | None = None,
    config_id: str | None = None,
) -> Selected:
    """The one stored row the selectors name (``schedlab results``/``plot``'s
    ``--policy``, ``--where``, ``--replication`` or a config id). Without
    ``replication`` the lowest one stored. No row, or rows of several
    configurations, is a `UserError` saying which values to fix."""
    from schedlab.platform.storage.query import filter_where, stored_rows

    root, manifest, frame = stored_rows(root)
    if config_id is not None:
        frame = frame.filter(frame["config_id"] == config_id)
        if frame.height == 0:
            raise UserError(f"{root}: no configuration {config_id!r}")
    if policy is not None:
        kept = frame.filter(frame["policy"] == policy)
        if kept.height == 0:
            raise UserError(f"--policy {policy}: no rows; policies: {', '.join(sorted(frame['policy'].unique()))}")
        frame = kept
    frame = filter_where(frame, where or {}, root)
    configs = sorted(frame["config_id"].unique().to_list())
    if len(configs) > 1:
        params = [c for c in manifest.get("param_columns") or [] if c in frame.columns]
        varying = [c for c in ["policy", *params] if frame[c].n_unique() > 1]
        detail = "; ".join(f"{c} takes {', '.join(map(str, sorted(frame[c].unique().to_list())))}" for c in varying)
        raise UserError(
            f"{root}: the selection matches {len(configs)} configurations; fix one with --policy / --where ({detail})"
        )
    reps = sorted(frame["replication"].unique().to_list())
    if replication is None:
        replication = reps[0]
    elif replication not in reps:
        raise UserError(f"--replication {replication}: no such replication of {configs[0]}; stored: {_ranges(reps)}")
    row = frame.filter(frame["replication"] == replication).row(0, named=True)
    return Selected(root, configs[0], int(replication), row, manifest)


def _ranges(values: list[int]) -> str:
    return f"{values[0]}..{values[-1]}" if values == list(range(values[0], values[-1] + 1)) else str(values)


def partner(sel: Selected, policy: str) -> Selected:
    """The run of ``policy`` on the same instance as ``sel`` (``--vs``): the
    same workload parameters and system, the same replication."""
    configs = sel.manifest.get("configs", {})
    mine = configs.get(sel.config_id, {})
    point = {k: v for k, v in mine.get("params", {}).items() if not k.startswith("policy_")}
    match = [
        cid
        for cid, c in configs.items()
        if c.get("policy") == policy
        and {k: v for k, v in c.get("params", {}).items() if not k.startswith("policy_")} == point
    ]
    if not match:
        raise UserError(f"--vs {policy}: no configuration of {policy} on the same workload point as {sel.label}")
    if len(match) > 1:
        raise UserError(f"--vs {policy}: {len(match)} configurations of {policy} there (policy params vary)")
    return select(sel.root, config_id=match[0], replication=sel.replication)


def replay(sel: Selected) -> Schedule:
    """Re-simulate ``sel`` with the engine's recorder on and check it against
    the stored row; a mismatch is a `UserError` naming the metric."""
    from schedlab.docs_columns import time_unit
    from schedlab.engines import get_engine
    from schedlab.platform.execution.instance import run_planned
    from schedlab.platform.planning.plan import build_plan
    from schedlab.platform.planning.validate import parse_spec

    defining = dict(sel.manifest["spec"])
    outputs = {"per_job": defining.pop("per_job", False)}
    if "warmup" in defining:
        outputs["warmup"] = defining.pop("warmup")
    defining.pop("user_code", None)
    defining = stored_code(defining, sel.manifest, sel.root)
    spec = parse_spec({**defining, "outputs": outputs}, f"{sel.root}/manifest.json")
    plan = build_plan(spec, f"{sel.root}/manifest.json")
    config = plan.configs.get(sel.config_id)
    if config is None:
        changed = [
            f"{field_} ({info.get('use')}): sha256 {str(info.get('sha256'))[:12]} in manifest.json, "
            f"{plan.code[field_].sha256[:12]} of {plan.code[field_].root}"
            for field_, info in sorted((sel.manifest.get("user_code") or {}).items())
            if field_ in plan.code and plan.code[field_].sha256 != info.get("sha256")
        ]
        if changed:
            raise UserError(
                f"{sel.root}: cannot re-simulate {sel.label}: its code is not the code the rows came from "
                f"({'; '.join(changed)}); `schedlab run` on the spec re-runs it with the code as it is now"
            )
        raise UserError(f"{sel.root}: configuration {sel.config_id} is not in the spec of manifest.json")
    engine = get_engine(plan.engine_ref)
    recorder = _recorder(engine)
    planned = run_planned(plan, sel.config_id, sel.replication, recorder=recorder)
    result, jobs, point = planned.run.result, planned.jobs, planned.point
    summary = planned.run.metrics
    check_replay(sel, summary)
    per_job = {k: np.asarray(v) for k, v in result.jobs.items()}
    schedule = _schedule(engine, recorder, per_job, summary, jobs, {**engine.system_defaults, **config.system})
    schedule.label = sel.label
    schedule.time_unit = time_unit(plan.engine, point.kind)
    return schedule


_FIELD = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def stored_code(defining: dict[str, Any], manifest: dict[str, Any], root: Path) -> dict[str, Any]:
    """The manifest's spec with each piece of user code (``user_code``:
    spec field -> use, module, attr, digest) referring to the copy the
    results dir keeps under ``code/<sha256>/`` (absolute, so the replay
    works from any folder) where that copy exists."""
    import copy

    from schedlab.platform.storage.store import CODE

    out = copy.deepcopy(defining)
    for field_, info in (manifest.get("user_code") or {}).items():
        folder = Path(root).resolve() / CODE / str(info.get("sha256"))
        module, files = str(info.get("module", "")), set(info.get("files") or [])
        rel = next(
            (f for f in (module.replace(".", "/") + ".py", module.replace(".", "/") + "/__init__.py") if f in files),
            None,
        )
        if rel is None or not (folder / rel).is_file():
            continue
        keys = [int(i) if i else name for name, i in _FIELD.findall(field_)]
        node: Any = out
        try:
            for key in keys[:-1]:
                node = node[key]
            if node[keys[-1]] == info.get("use"):
                node[keys[-1]] = f"{folder / rel}:{info['attr']}"
        except (KeyError, IndexError, TypeError):
            continue  # a field this spec does not have as written: replayed from the file as the spec names it
    return out


def check_replay(sel: Selected, summary: dict[str, Any]) -> None:
    """Every metric of the replay equals the stored row's, to the bit (NaN
    equals NaN; timings are not compared)."""
    for key, value in summary.items():
        if key in TIMING_METRICS or key not in sel.row:
            continue
        stored = sel.row[key]
        if stored is None:
            continue
        a, b = float(value), float(stored)
        if not (a == b or (math.isnan(a) and math.isnan(b))):
            raise UserError(
                f"{sel.root}: replay of {sel.label} does not match its stored row: {key} = {a!r}, stored {b!r} "
                f"(the engine or the inputs changed since the sweep ran)"
            )


def engine_of(sel: Selected) -> Any:
    """The engine of ``sel``'s sweep: a built-in by name, a user's engine
    from the code the results dir keeps (``stored_code``)."""
    from schedlab.engines import get_engine, known_engines

    name = str(sel.manifest.get("engine", ""))
    if name in known_engines():
        return get_engine(name)
    from schedlab.engines.user import resolve

    ref = stored_code(dict(sel.manifest["spec"]), sel.manifest, sel.root).get("engine", name)
    return resolve(str(ref), sel.root, f"{sel.root}/manifest.json: engine")[0]


def _recorder(engine: Engine) -> Any:
    """A fresh recorder of ``engine`` (``Engine.recorder``), or a UserError: it declares none."""
    cls = engine.declared("recorder")
    if cls is None:
        raise UserError(f"view: engine {engine.name!r} declares no schedule recorder (Engine.recorder)")
    return cls()


def _schedule(
    engine: Engine,
    recorder: Any,
    per_job: dict[str, np.ndarray],
    summary: dict[str, Any],
    jobs: Any,
    system: dict[str, Any],
) -> Schedule:
    """The engine's recorder and rows as a Schedule (the recorder's ``finish``)."""
    schedule: Schedule = recorder.finish(per_job, summary, jobs, system)
    return schedule


def record_run(
    engine_name: str, jobs: Any, policy: Any, params: dict[str, Any] | None = None, system: dict[str, Any] | None = None
) -> Schedule:
    """One policy on one job table, recorded (no results dir): what tests and
    the benchmark call, and what ``replay`` does after choosing the run."""
    from schedlab.engines import get_engine
    from schedlab.engines.instance import run_instance

    engine = get_engine(engine_name)
    recorder = _recorder(engine)
    result = run_instance(engine, jobs, policy, params or {}, system or {}, recorder=recorder).result
    per_job = {k: np.asarray(v) for k, v in result.jobs.items()}
    return _schedule(
        engine, recorder, per_job, dict(result.summary), jobs, {**engine.system_defaults, **(system or {})}
    )
