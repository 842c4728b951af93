"""Sweep spec -> plan: configurations, workload points, seeds and tasks.

A *configuration* is engine + policy (+ params) + workload kind (+ params, one
grid point). Its id is a hash of its canonical form (sorted keys, every number
as a float, defaults filled in), so it is stable across runs, machines and the
order of keys in the spec. The row key of a result is (config id, replication).

A *workload point* is one grid point of the workload; replication r of it is
one workload *instance*, drawn from ``SeedSequence([sweep seed, point id, r])``
and shared by every policy (common random numbers). Results therefore do not
depend on how instances are spread over tasks, cores or machines.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import dataclass, field
from typing import Any, Iterable

from schedlab.errors import UserError


def canonical(obj: Any) -> str:
    """JSON with sorted keys and every (non-bool) number as a float, so 1 and
    1.0 name the same configuration."""

    def norm(v):
        if isinstance(v, bool) or v is None or isinstance(v, str):
            return v
        if isinstance(v, (int, float)):
            return float(v)
        if isinstance(v, dict):
            return {str(k): norm(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [norm(x) for x in v]
        raise TypeError(f"cannot canonicalise {type(v).__name__}")

    return json.dumps(norm(obj), sort_keys=True, separators=(",", ":"))


def digest(obj: Any) -> str:
    return hashlib.sha256(canonical(obj).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Config:
    config_id: str
    engine: str
    policy: str
    policy_params: dict[str, Any]
    workload_kind: str
    workload_params: dict[str, Any]
    point_id: str
    system: dict[str, Any] = field(default_factory=dict)

    def flat_params(self) -> dict[str, Any]:
        """Every parameter as its own column / MLflow param."""
        return {**self.workload_params, **{f"system_{k}": v for k, v in self.system.items()},
                **{f"policy_{k}": v for k, v in self.policy_params.items()}}


@dataclass(frozen=True)
class WorkloadPoint:
    point_id: str
    kind: str
    params: dict[str, Any]
    configs: tuple[Config, ...]

    def work(self) -> int:
        """Job-runs one instance costs: jobs x configurations (a packing hint)."""
        return int(self.params.get("njobs", 10_000)) * len(self.configs)


@dataclass(frozen=True)
class Instance:
    point: WorkloadPoint
    replication: int
    seed_words: tuple[int, ...]

    @property
    def seed_label(self) -> str:
        return "/".join(str(w) for w in (self.seed_words[0], self.point.point_id, self.replication))


@dataclass
class Plan:
    name: str
    engine: str
    seed: int
    points: list[WorkloadPoint]
    param_columns: list[str]
    configs: dict[str, Config] = field(default_factory=dict)

    def instances(self, replications: Iterable[int], points: Iterable[WorkloadPoint] | None = None) -> list[Instance]:
        reps = list(replications)
        return [
            Instance(p, r, (self.seed, int(p.point_id, 16), r))
            for p in (self.points if points is None else points)
            for r in reps
        ]

    @staticmethod
    def tasks(instances: list[Instance], task_jobs: int) -> list[list[Instance]]:
        """Pack consecutive instances into tasks of about ``task_jobs``
        job-runs each (tiny simulations share a task; a task never mixes
        instances that need different shared inputs, e.g. two traces)."""
        out: list[list[Instance]] = []
        current: list[Instance] = []
        work, key = 0, None
        for inst in instances:
            k = shared_input_key(inst.point)
            if current and (work >= task_jobs or k != key):
                out.append(current)
                current, work = [], 0
            current.append(inst)
            work += max(1, inst.point.work())
            key = k
        if current:
            out.append(current)
        return out


def shared_input_key(point: WorkloadPoint) -> str | None:
    """Identity of the input a point loads once and shares (a parsed trace),
    or None when its instances are generated from the seed alone."""
    from schedlab.workloads.registry import workload_kind

    kind = workload_kind(point.kind)
    if kind.load_shared is None:
        return None
    return canonical({k: v for k, v in point.params.items()
                      if k in kind.shared_keys or (kind.open_prefix and k.startswith(kind.open_prefix))})


def _grid(params: dict[str, Any], zips: list[list[str]], where: str) -> list[dict[str, Any]]:
    """Cross every list-valued param, except that each zip group varies together."""
    zipped: set[str] = set()
    axes: list[list[dict[str, Any]]] = []
    for g, group in enumerate(zips):
        for name in group:
            if name not in params:
                raise UserError(f"{where}.zip[{g}]: {name!r} is not a workload parameter")
            if not isinstance(params[name], list):
                raise UserError(f"{where}.zip[{g}]: {name!r} is not a list, so it cannot be zipped")
            if name in zipped:
                raise UserError(f"{where}.zip[{g}]: {name!r} appears in more than one zip group")
            zipped.add(name)
        lengths = {len(params[n]) for n in group}
        if len(lengths) > 1:
            raise UserError(f"{where}.zip[{g}]: zipped lists differ in length ({', '.join(f'{n}: {len(params[n])}' for n in group)})")
        axes.append([dict(zip(group, values)) for values in zip(*(params[n] for n in group))])
    for name, value in params.items():
        if name in zipped:
            continue
        if isinstance(value, list):
            axes.append([{name: v} for v in value])
        else:
            axes.append([{name: value}])
    for name, value in params.items():
        if isinstance(value, list) and not value:
            raise UserError(f"{where}.{name}: empty grid axis")
    return [dict(kv for part in combo for kv in part.items()) for combo in itertools.product(*axes)]


def _points(kind, params: dict[str, Any], zips: list[list[str]], where: str) -> list[dict[str, Any]]:
    """Grid points with defaults filled in, checked, and expanded by the kind
    (e.g. a trace's window = "all" becomes one point per window)."""
    out = []
    for raw in _grid(params, zips, where):
        full = kind.complete(raw, where)
        try:
            kind.check(full)
        except UserError as err:  # names a parameter: workload.<param>: ...
            raise UserError(f"{where}.{err}") from None
        try:
            out += kind.expand(full) if kind.expand else [full]
        except UserError as err:  # names a file:line or a parameter
            raise UserError(f"{where}: {err}") from None
    return [kind.trim(p) for p in out]


def build_plan(spec, source: str = "spec") -> Plan:
    """Expand and check a validated `SweepSpec`; every error names its field."""
    from schedlab.engines import get_engine
    from schedlab.workloads.registry import workload_kind

    try:
        engine = get_engine(spec.engine)
    except UserError as err:
        raise UserError(f"{source}: engine: {err}") from None
    kind_name = spec.workload.kind
    if kind_name not in engine.workload_kinds:
        raise UserError(
            f"{source}: workload.kind: engine {engine.name!r} does not take {kind_name!r}; "
            f"choose from: {', '.join(engine.workload_kinds)}"
        )
    kind = workload_kind(kind_name, f"{source}: workload.kind")

    policies: list[tuple[str, dict[str, Any]]] = []
    for i, entry in enumerate(spec.policy_entries()):
        try:
            engine.policy(entry.name)
        except UserError as err:
            raise UserError(f"{source}: policies[{i}]: {err}") from None
        allowed = engine.policy_param_names(entry.name)
        for name in entry.params:
            if name not in allowed:
                takes = f"takes: {', '.join(sorted(allowed))}" if allowed else "takes no parameters"
                raise UserError(f"{source}: policies[{i}].params.{name}: policy {entry.name!r} {takes}")
        for point in _grid(entry.params, [], f"{source}: policies[{i}].params"):
            policies.append((entry.name, point))
    engine.check_system(spec.system, f"{source}: system")
    systems = _grid(dict(spec.system), [], f"{source}: system")
    seen: set[str] = set()
    for i, (name, params) in enumerate(policies):
        key = canonical([name, params])
        if key in seen:
            raise UserError(f"{source}: policies: {name!r} is listed twice")
        seen.add(key)

    points: list[WorkloadPoint] = []
    configs: dict[str, Config] = {}
    for params in _points(kind, spec.workload.params(), spec.workload.zip, f"{source}: workload"):
        point_id = digest({"kind": kind_name, "params": params})
        point_configs = []
        for system in systems:
            for name, pparams in policies:
                identity = {"engine": engine.name, "policy": name, "policy_params": pparams,
                            "workload": {"kind": kind_name, "params": params}}
                if system:  # only engines with system params carry the key (queue ids unchanged)
                    identity["system"] = system
                cid = digest(identity)
                config = Config(cid, engine.name, name, pparams, kind_name, params, point_id, system)
                configs[cid] = config
                point_configs.append(config)
        points.append(WorkloadPoint(point_id, kind_name, params, tuple(point_configs)))
    # [system] x workload rules (e.g. a capacity list has one entry per resource of the job table)
    engine.check_system_workload(spec.system, kind, [p.params for p in points], f"{source}: system",
                                 f"{source}: workload")
    if len({p.point_id for p in points}) != len(points):
        raise UserError(f"{source}: workload: the grid repeats a point (a value is listed twice)")

    columns = list(dict.fromkeys(k for c in configs.values() for k in c.flat_params()))
    clash = set(columns) & {"config_id", "replication", "engine", "policy", "workload_kind", "seed"}
    if clash:
        raise UserError(f"{source}: workload.{sorted(clash)[0]}: reserved column name")
    return Plan(spec.name, engine.name, spec.seed, points, columns, configs)
