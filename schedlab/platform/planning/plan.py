"""Sweep spec -> plan: configurations, workload points, seeds and tasks.

A *configuration* is engine + policy (+ params) + workload kind (+ params, one
grid point). Its id is a hash of its canonical form (sorted keys, every number
as a float, defaults filled in), so it is stable across runs, machines and the
order of keys in the spec. The row key of a result is (config id, replication).

A *workload point* is one grid point of the workload; replication r of it is
one workload *instance*, drawn from ``SeedSequence([sweep seed, draw id, r])``
and shared by every policy (common random numbers). Results therefore do not
depend on how instances are spread over tasks, cores or machines. The draw id
is the point id, except for a kind that names parameters which do not change
the draw (``WorkloadKind.draw_excludes``, e.g. the ``load`` of a Lublin trace
with ``same_trace``): then it is the id of the point without them, so points
differing only there share their instances' random draws.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import math
from collections.abc import Callable, ItemsView, Iterable, Iterator, Mapping, Sequence, ValuesView
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from schedlab.errors import UserError, did_you_mean
from schedlab.usercode import CodeRef

if TYPE_CHECKING:
    import numpy as np

    from schedlab.engines.base import Engine
    from schedlab.errors import Collector
    from schedlab.platform.planning.spec import MetricEntry, SweepSpec
    from schedlab.workloads.registry import WorkloadKind


def canonical(obj: Any) -> str:
    """JSON with sorted keys and every (non-bool) number as a float, so 1 and
    1.0 name the same configuration."""

    def norm(v: Any) -> Any:
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
    return text_digest(canonical(obj))


def text_digest(text: str) -> str:
    """`digest` of an object whose `canonical` text is ``text``."""
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def canonical_object(parts: dict[str, str]) -> str:
    """``canonical({k: v})`` from the canonical text of each value: the same
    characters (keys sorted, escaped and separated as `canonical` does), so a
    plan canonicalises a workload point once, not once per configuration."""
    keys = _sorted_key_texts(tuple(parts))
    return "{" + ",".join([f"{text}:{parts[k]}" for k, text in keys]) + "}"


@functools.lru_cache(maxsize=256)
def _sorted_key_texts(keys: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """``keys`` sorted, each with its `_key_text`: a plan's points share a handful of key sets."""
    return tuple((k, _key_text(k)) for k in sorted(keys))


@functools.lru_cache(maxsize=256)
def _key_text(key: str) -> str:
    """A key as `canonical` writes it (a plan has a handful)."""
    return json.dumps(key)


def _text(value: Any) -> str:
    """``canonical(value)``; a scalar's made once (`_value_text`): a grid's
    values repeat across its points, and every pass over a streamed plan
    makes each point's identity again."""
    if type(value) in _SCALARS or not isinstance(value, (dict, list, tuple)):
        return _value_text(value)
    return canonical(value)


#: Types `_text` takes straight to `_value_text` (every parameter of every point asks).
_SCALARS = frozenset({float, int, str, bool, type(None)})


@functools.lru_cache(maxsize=65_536, typed=True)  # typed: 1, 1.0 and True are three keys (True stays true)
def _value_text(value: Any) -> str:
    return canonical(value)


@dataclass(frozen=True, slots=True)
class Config:
    config_id: str
    engine: str
    policy: str
    policy_params: dict[str, Any]
    workload_kind: str
    workload_params: dict[str, Any]
    point_id: str
    system: dict[str, Any] = field(default_factory=dict)
    code: CodeRef | None = None  # a user's policy class (None: the built-in named `policy`)
    #: flat_params() names declared integer (workload kind, [system] schema,
    #: policy constructor): Int64 result columns. Not part of the id.
    integers: frozenset[str] = frozenset()

    def flat_params(self) -> dict[str, Any]:
        """Every parameter as its own column / MLflow param."""
        return flat_params(self.workload_params, self.system, self.policy_params)


def flat_params(workload: dict[str, Any], system: dict[str, Any], policy: dict[str, Any]) -> dict[str, Any]:
    """`Config.flat_params` of a configuration's three parameter tables."""
    return {
        **workload,
        **{f"system_{k}": v for k, v in system.items()},
        **{f"policy_{k}": v for k, v in policy.items()},
    }


@dataclass(frozen=True, slots=True)
class FlatConfig:
    """What the manifest says of a configuration, made without its point
    (`PlanPoints.flat_configs`): the fields of `Config` it reads."""

    config_id: str
    engine: str
    policy: str
    workload_kind: str
    params: dict[str, Any]  # `Config.flat_params`
    code: CodeRef | None
    point_code: CodeRef | None  # its workload point's code (`WorkloadPoint.code`)


@dataclass(frozen=True, slots=True)
class WorkloadPoint:
    point_id: str
    kind: str
    params: dict[str, Any]
    configs: tuple[Config, ...]
    code: CodeRef | None = None  # a user's generator (kind = its label) or trace reader
    #: Warm-up deletion the task applies to every run of this point's instances
    #: ([outputs] warmup; not part of the point's identity: the instance is the same).
    warmup: str | None = None
    #: Keys the instance seeds when not the point id (``WorkloadKind.draw_excludes``).
    draw_id: str | None = None

    @property
    def seed_id(self) -> str:
        return self.draw_id or self.point_id

    def work(self) -> int:
        """Job-runs one instance costs: jobs x configurations (a packing hint)."""
        return int(self.params.get("njobs", 10_000)) * len(self.configs)


@dataclass(frozen=True, slots=True)
class Instance:
    point: WorkloadPoint
    replication: int
    seed_words: tuple[int, ...]
    #: The point's position in the plan (-1: not known, e.g. an adaptive round's copy of a point):
    #: how `payload.Packer` finds its block without an index of the plan's point ids.
    index: int = field(default=-1, compare=False)

    @property
    def seed_label(self) -> str:
        return "/".join(str(w) for w in (self.seed_words[0], self.point.seed_id, self.replication))


@dataclass(frozen=True)
class MetricSpec:
    """An extra metric of every summary row: ``fn(jobs, **params)`` on the
    per-job table, a built-in (``code`` None, ``use`` its name) or user code."""

    name: str
    use: str
    params: dict[str, Any]
    code: CodeRef | None = None

    def function(self) -> Callable[..., Any]:
        from schedlab.api.metrics import BUILTIN_METRICS
        from schedlab.usercode import worker_load

        return worker_load(self.code) if self.code is not None else BUILTIN_METRICS[self.use]


@dataclass
class Plan:
    """A sweep's plan. Its workload points and configurations are streamed
    (`PlanPoints`, `PlanConfigs`): made from the spec's grid, in the grid's
    order, each time they are iterated, so the plan holds the grid's axes,
    not its points (ten million configurations are not ten gigabytes)."""

    name: str
    engine: str
    seed: int
    points: Sequence[WorkloadPoint]
    param_columns: list[str]
    configs: Mapping[str, Config] = field(default_factory=dict)
    metrics: tuple[MetricSpec, ...] = ()
    #: spec field -> resolved user code, e.g. "policies[3].use" -> CodeRef
    code: dict[str, CodeRef] = field(default_factory=dict)
    #: (name, params of one grid point, user code) per policy configuration: what every point crosses
    policies: tuple[tuple[str, dict[str, Any], CodeRef | None], ...] = ()
    #: What the plan's ids are a function of (`ids_key`): the key its kept ids are filed under
    #: (`ids_file`); None: not kept (a workload that reads files, or a plan that did not check).
    ids_key: str | None = None
    #: The ids were read from the results dir (`ids_file.read`), not hashed by the checking pass.
    ids_read: bool = False

    @property
    def engine_ref(self) -> str | CodeRef:
        """What finds the engine in any process (``schedlab.engines.get_engine``):
        a built-in's name, or the code of your own engine (shipped to the workers)."""
        return self.code.get("engine") or self.engine

    def shipped(self) -> tuple[tuple[str, str], ...]:
        """(file or package folder, digest) of the user code Ray's py_modules
        must ship to the workers."""
        return tuple(sorted({(c.root, c.sha256) for c in self.code.values() if c.shipped}))

    def instances(self, replications: Iterable[int], points: Iterable[WorkloadPoint] | None = None) -> list[Instance]:
        reps = list(replications)
        if points is None:
            return list(self.each_instance(reps))
        return [Instance(p, r, (self.seed, int(p.seed_id, 16), r)) for p in points for r in reps]

    def each_instance(self, replications: Iterable[int]) -> Instances:
        """`instances` of every point, made one at a time as they are iterated
        (a round of ten million instances is never a list)."""
        return Instances(self, tuple(replications))

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


@dataclass(frozen=True)
class Instances:
    """``plan.instances(replications)`` in the same order, re-iterable, each
    `Instance` made when it is reached (`Plan.each_instance`)."""

    plan: Plan
    replications: tuple[int, ...]

    def __iter__(self) -> Iterator[Instance]:
        seed, reps = self.plan.seed, self.replications
        for k, p in enumerate(self.plan.points):
            words = int(p.seed_id, 16)
            for r in reps:
                yield Instance(p, r, (seed, words, r), k)

    def __len__(self) -> int:
        return len(self.plan.points) * len(self.replications)


#: Built-in workload kinds by name, for `shared_input_key` (asked once per task submitted).
_BUILTIN_KINDS: dict[str, Any] = {}


def shared_input_key(point: WorkloadPoint) -> str | None:
    """Identity of the input a point loads once and shares (a parsed trace),
    or None when its instances are generated from the seed alone."""
    from schedlab.workloads.registry import workload_kind, workload_kinds

    if point.kind not in workload_kinds():  # a user's generator: drawn from the seed alone
        return None
    kind = _BUILTIN_KINDS.get(point.kind)
    if kind is None:  # built once per process: constructing a kind reads signatures (~0.3 ms)
        kind = _BUILTIN_KINDS[point.kind] = workload_kind(point.kind)
    if kind.load_shared is None:
        return None
    return canonical(
        {
            k: v
            for k, v in point.params.items()
            if k in kind.shared_keys or (kind.open_prefix and k.startswith(kind.open_prefix))
        }
    )


class Grid(Sequence[dict[str, Any]]):
    """The cross product of a grid's axes (each a list of parameter dicts),
    in ``itertools.product``'s order (the last axis fastest), each point made
    when it is reached: the length is the product of the axes' lengths, point
    k is read off k's mixed-radix digits, so nothing the size of the grid is
    held."""

    def __init__(self, axes: list[list[dict[str, Any]]]) -> None:
        self.axes = axes
        self.size = math.prod(len(a) for a in axes)

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, k: Any) -> Any:
        if isinstance(k, slice):
            return [self[i] for i in range(*k.indices(self.size))]
        if k < 0:
            k += self.size
        if not 0 <= k < self.size:
            raise IndexError(k)
        parts = []
        for axis in reversed(self.axes):
            k, digit = divmod(k, len(axis))
            parts.append(axis[digit])
        point: dict[str, Any] = {}
        for part in reversed(parts):
            point.update(part)
        return point

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return self.walk(0)

    def walk(self, start: int) -> Iterator[dict[str, Any]]:
        """Points ``start``, ``start + 1``, ... to the end, each a new dict
        equal to ``self[k]``: the digits counted up like an odometer, the
        points' common part (every axis but the last) made again only when
        it changes."""
        if not 0 <= start < self.size:
            return
        axes = self.axes
        if not axes:
            yield {}
            return
        digits = []
        k = start
        for axis in reversed(axes):
            k, digit = divmod(k, len(axis))
            digits.append(digit)
        digits.reverse()
        last, head = axes[-1], axes[:-1]
        while True:
            prefix: dict[str, Any] = {}
            for axis, digit in zip(head, digits, strict=False):
                prefix.update(axis[digit])
            for d in range(digits[-1], len(last)):
                point = prefix.copy()
                point.update(last[d])
                yield point
            digits[-1] = 0
            i = len(axes) - 2  # carry into the axes before the last
            while i >= 0:
                digits[i] += 1
                if digits[i] < len(axes[i]):
                    break
                digits[i] = 0
                i -= 1
            if i < 0:
                return


def _grid(params: dict[str, Any], zips: list[list[str]], where: str) -> Grid:
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
            raise UserError(
                f"{where}.zip[{g}]: zipped lists differ in length "
                f"({', '.join(f'{n}: {len(params[n])}' for n in group)})"
            )
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
    return Grid(axes)


def _check_params(kind: WorkloadKind, full: dict[str, Any], where: str, errors: Collector) -> None:
    """``kind.check`` reports one parameter (``njobs: ...``); to report every
    bad parameter of a grid point, the one named is put back to its default
    and the check runs again (at most once per parameter)."""
    from schedlab.errors import messages

    params = dict(full)
    for _ in range(len(params) + 1):
        try:
            kind.check(params)
            return
        except UserError as err:
            reset = False
            for line in messages(err):  # each names a parameter: workload.<param>: ...
                errors.add(f"{where}.{line}")
                name = line.split(":", 1)[0]
                default = kind.defaults.get(name)
                if name in params and default is not None and params[name] != default:
                    params[name] = default
                    reset = True
            if not reset:
                return


def _checked_points(
    kind: WorkloadKind, make: _PointMaker, raw: dict[str, Any], where: str, base_dir: Any, errors: Collector
) -> list[WorkloadPoint]:
    """The workload points of one grid point of the spec, checked: defaults
    filled in, every bad parameter reported into ``errors`` (then no point),
    expanded by the kind (e.g. a trace's window = "all" becomes one point per
    window). A trace point whose ``reader`` is a code reference gets it made
    absolute (the driver loads the trace from anywhere) and identified by the
    reader's name and digest, not its path (`_PointMaker`)."""
    from schedlab.errors import Collector
    from schedlab.workloads.files import check_path

    mine = Collector()
    with mine.check():
        # an unknown name is one error; the names the kind takes are still checked, so that one
        # validate round shows every mistake
        unknown = kind.unknown(raw)  # once: every grid point of a sweep asks (issue 42)
        if unknown:
            for line in kind.unknown_errors(raw, where):
                mine.add(line)
        full = kind.complete({k: v for k, v in raw.items() if k not in unknown} if unknown else raw, where)
        full, code = make.reader(full)
        _check_params(kind, full, where, mine)
        if "path" in kind.shared_keys:  # a missing input file: said here, not after Ray starts
            with mine.check(f"{where}."):
                check_path(full["path"], base_dir)
    if mine:
        for line in mine.errors:
            errors.add(line)
        return []
    try:
        return make.expand(full, code)
    except UserError as err:  # names a file:line or a parameter
        raise UserError(f"{where}: {err}") from None


@dataclass(frozen=True)
class PlanIds:
    """The ids the checking pass hashed, as 64-bit numbers in plan order (an
    id is 16 hex digits, `text_digest`): 8 bytes a configuration and 8 a
    point, so that every later pass (the manifest's write, the round's
    counting pass, the tasks) makes a point without hashing its identity
    again (two thirds of making it), and a round checks its keys on disk
    without making a point (`configs_of`). ``draws``: the draw id of each
    point (``drawn``: where it is not its point id), None when no point has
    one."""

    points: np.ndarray
    configs: np.ndarray
    draws: np.ndarray | None = None
    drawn: np.ndarray | None = None

    @property
    def per_point(self) -> int:
        return len(self.configs) // len(self.points) if len(self.points) else 0

    def configs_of(self, start: int, stop: int) -> np.ndarray:
        """The configuration ids of points ``start`` to ``stop`` (a view), point by point."""
        per = self.per_point
        return self.configs[start * per : stop * per]

    def texts(self, start: int, stop: int) -> tuple[list[str], list[str | None], list[str]]:
        """(point ids, draw ids, configuration ids) of points ``start`` to
        ``stop`` as the hex text the plan's objects carry, made a block at a
        time (one ``bytes.hex`` of the block, not a format per id)."""
        points = _hex(self.points[start:stop])
        draws: list[str | None] = [None] * len(points)
        if self.draws is not None and self.drawn is not None:
            drawn = self.drawn[start:stop].tolist()
            draws = [d if has else None for d, has in zip(_hex(self.draws[start:stop]), drawn, strict=True)]
        return points, draws, _hex(self.configs_of(start, stop))


def _hex(numbers: np.ndarray) -> list[str]:
    """uint64 ids -> their 16 lower-case hex digits (`text_digest`'s form)."""
    text = numbers.astype(">u8").tobytes().hex()
    return [text[i : i + 16] for i in range(0, len(text), 16)]


#: Points whose ids `_PointMaker` turns into text at once (`PlanIds.texts`).
TEXT_BLOCK = 1024


class _PointMaker:
    """A grid point of the spec -> its workload points, each with its
    configurations (every [system] grid point x every policy configuration),
    ids and seeds: the one way the checking pass (`_expand`) and every later
    pass over the plan (`PlanPoints`) make them, so every pass makes the same
    points with the same ids. The canonical text of each part of a
    configuration's identity is made once (`canonical_object`)."""

    def __init__(
        self,
        spec: SweepSpec,
        source: str,
        engine: Any,
        kind: Any,
        kind_name: str,
        wl_code: CodeRef | None,
        codes: dict[str, CodeRef],
        systems: list[dict[str, Any]] | None,
        policies: _PolicyPoints,
        policy_integers: dict[str, frozenset[str]],
    ) -> None:
        self.kind, self.kind_name, self.wl_code = kind, kind_name, wl_code
        self.where, self.base_dir = f"{source}: workload", spec.base_dir
        self.warmup = getattr(spec.outputs, "warmup", None)
        self.engine_name = engine.name if engine is not None else ""
        integers = frozenset(kind.integers if kind is not None else ()) | frozenset(
            f"system_{p.name}" for p in (engine.system.params if engine is not None else ()) if p.integer
        )
        self.codes = codes  # the plan's user code: the checking pass adds a trace reader's
        engine_code = codes.get("engine")  # your own engine's code: part of its configurations' identity
        engine_text = {} if engine is None else {"engine": canonical(engine.name)}
        if engine_code is not None:
            engine_text["engine_code"] = canonical(engine_code.identity)
        self.texts = [
            (system, {"system": canonical(system)} if system else {}, engine_text) for system in systems or ()
        ]
        self.policies = policies
        self.policy_texts = [
            {"policy": canonical(name), "policy_params": canonical(pparams)}
            | ({"code": canonical(code.identity)} if code is not None else {})
            for name, pparams, code in policies
        ]
        # one frozenset per policy, shared by its configurations (not 200 bytes each)
        self.columns_of = {name: integers | policy_integers.get(name, frozenset()) for name, _, _ in policies}
        #: a trace reader's reference -> its code and absolute reference, resolved (and hashed) once a plan
        self.readers: dict[str, tuple[CodeRef, str]] = {}
        #: (system, policy, params, code) of each configuration of a point, in the order of its ids
        self.names = [(system, name, pparams, code) for system, _, _ in self.texts for name, pparams, code in policies]
        #: the ids of every point, set by the checking pass (`_expand`): later passes reuse them
        self.ids: PlanIds | None = None
        self._texts: tuple[int, tuple[list[str], list[str | None], list[str]]] = (-1, ([], [], []))
        self.trims = bool(getattr(kind, "late", ()))  # `kind.trim` changes a point (else: a copy per point saved)

    @property
    def per_point(self) -> int:
        """Configurations of every workload point."""
        return len(self.texts) * len(self.policies)

    def reader(self, full: dict[str, Any]) -> tuple[dict[str, Any], CodeRef | None]:
        """(``full`` with a reader given as code made absolute, that code)."""
        if self.kind.name != "trace":  # before the import: asked once a point on every pass
            return full, None
        from schedlab.usercode import absolute, is_reference, resolve

        if not is_reference(full.get("reader")):
            return full, None
        ref = full["reader"]
        got = self.readers.get(ref)
        if got is None:
            code = resolve(ref, self.base_dir, f"{self.where}.reader")
            got = self.readers[ref] = (code, absolute(ref, self.base_dir))
        return {**full, "reader": got[1]}, got[0]

    def expand(self, full: dict[str, Any], code: CodeRef | None, first: int = -1) -> list[WorkloadPoint]:
        """The points of a complete grid point (``kind.expand``), trimmed;
        ``first``: the plan position of the first (-1: not known, ids hashed)."""
        out = []
        for j, p in enumerate(self.kind.expand(full) if self.kind.expand else [full]):
            p = self.kind.trim(p) if self.trims else p
            at = first + j if first >= 0 else -1
            out.append(self.point(p, {**p, "reader": code.attr} if code is not None else p, code, at))
        return out

    def point(
        self, params: dict[str, Any], ident: dict[str, Any], reader_code: CodeRef | None, at: int = -1
    ) -> WorkloadPoint:
        """Workload point ``at`` of the plan; its ids are the checking pass's
        (`PlanIds`) when known, else hashed from its identity."""
        pcode = self.wl_code or reader_code
        if self.ids is not None and at >= 0:
            point_id, draw_id, config_ids = self.known(at)
        else:
            workload_text, point_id, draw_id = _point_ids(self.kind, self.kind_name, params, ident, pcode)
            config_ids = [
                text_digest(canonical_object({**engine_text, **policy_text, **system_text, "workload": workload_text}))
                for _, system_text, engine_text in self.texts
                for policy_text in self.policy_texts
            ]
        configs = tuple(
            Config(
                cid,
                self.engine_name,
                name,
                pparams,
                self.kind_name,
                params,
                point_id,
                system,
                code,
                self.columns_of[name],
            )
            for cid, (system, name, pparams, code) in zip(config_ids, self.names, strict=True)
        )
        return WorkloadPoint(point_id, self.kind_name, params, configs, pcode, self.warmup, draw_id)

    def params(self, raw: dict[str, Any]) -> list[dict[str, Any]]:
        """The parameters of the points ``self(raw)`` makes, without making
        them (no ids, no configurations): what a round's counting pass needs."""
        full, _ = self.reader({**self.kind.defaults, **raw})
        return [
            self.kind.trim(p) if self.trims else p for p in (self.kind.expand(full) if self.kind.expand else [full])
        ]

    def known(self, at: int) -> tuple[str, str | None, list[str]]:
        """(point id, draw id, configuration ids) of point ``at``, from the kept
        ids (`PlanIds.texts`, `TEXT_BLOCK` points' worth at a time)."""
        assert self.ids is not None
        block, texts = self._texts
        if block != at // TEXT_BLOCK:
            block = at // TEXT_BLOCK
            texts = self.ids.texts(block * TEXT_BLOCK, min((block + 1) * TEXT_BLOCK, len(self.ids.points)))
            self._texts = (block, texts)
        j, per = at - block * TEXT_BLOCK, self.per_point
        return texts[0][j], texts[1][j], texts[2][j * per : (j + 1) * per]

    def __call__(self, raw: dict[str, Any], first: int = -1) -> list[WorkloadPoint]:
        """The points of a grid point the checking pass accepted (not checked
        again): ``kind.complete`` of a sound point without its checks (the
        defaults in their order with the point's values, then the names the
        kind's open prefix admits, in the point's order: the same dict);
        ``first``: the plan position of its first point."""
        full, code = self.reader({**self.kind.defaults, **raw})
        return self.expand(full, code, first)


class PlanPoints(Sequence[WorkloadPoint]):
    """The plan's workload points in the grid's order, each made (with its
    configurations) when it is reached, never held: iterating makes them
    one at a time. Point k of a kind that makes one point per grid point (no
    ``expand``) is made from grid point k alone (`Grid`); otherwise (a
    trace's windows) by iterating to it. The length is counted by the plan's
    checking pass (the grid's size, for one point per grid point)."""

    def __init__(
        self, grid: Sequence[dict[str, Any]], make: Callable[[dict[str, Any], int], list[WorkloadPoint]], count: int
    ) -> None:
        self.grid, self.make, self.size = grid, make, count
        self.one_each = getattr(getattr(make, "kind", None), "expand", None) is None and len(grid) == count

    @property
    def ids(self) -> PlanIds | None:
        """The checking pass's ids of every point and configuration (None: not known)."""
        ids: PlanIds | None = getattr(self.make, "ids", None)
        return ids

    def __len__(self) -> int:
        return self.size

    def __iter__(self) -> Iterator[WorkloadPoint]:
        k = 0
        for raw in self.grid:
            made = self.make(raw, k)
            k += len(made)
            yield from made

    def flat_configs(self) -> Iterator[FlatConfig]:
        """Every configuration in plan order as a `FlatConfig`: with the kept
        ids (`PlanIds`), from each grid point's parameters, as
        `_PointMaker.expand` makes its points, without making them (what the
        manifest's write needs); otherwise from the points made."""
        make = self.make
        if not isinstance(make, _PointMaker) or make.ids is None:
            for p in self:
                for c in p.configs:
                    yield FlatConfig(c.config_id, c.engine, c.policy, c.workload_kind, c.flat_params(), c.code, p.code)
            return
        k, kind = 0, make.kind
        for raw in self.grid:
            full, code = make.reader({**kind.defaults, **raw})
            pcode = make.wl_code or code
            for params in kind.expand(full) if kind.expand else [full]:
                params = kind.trim(params) if make.trims else params
                _, _, ids = make.known(k)
                k += 1
                for cid, (system, name, pparams, ccode) in zip(ids, make.names, strict=True):
                    flat = flat_params(params, system, pparams)
                    yield FlatConfig(cid, make.engine_name, name, make.kind_name, flat, ccode, pcode)

    def same_value(self, name: str) -> tuple[bool, Any]:
        """(True, the value) when every point's parameter ``name`` is known
        to be the same without making a point (None: no point has it): the
        grid gives it one value (or none: the kind's default) and the kind
        neither expands a grid point into several nor trims one; else
        (False, None). What a round's counting pass asks of ``njobs``."""
        make, grid = self.make, self.grid
        if not isinstance(make, _PointMaker) or not isinstance(grid, Grid) or make.kind is None:
            return False, None
        if make.kind.expand is not None or make.trims or make.kind.name == "trace":
            return False, None
        value = make.kind.defaults.get(name)
        for axis in grid.axes:
            if any(name in part for part in axis):
                if len(axis) != 1:
                    return False, None
                value = axis[0][name]
        return True, value

    def some_params(self, wanted: Iterable[int]) -> Iterator[tuple[int, dict[str, Any]]]:
        """(k, the parameters of point k) for the increasing positions
        ``wanted``, without making the points (`_PointMaker.params`)."""
        params = getattr(self.make, "params", None)
        if params is None:
            for k, point in self.some(wanted):
                yield k, point.params
            return
        if self.one_each:
            for k, raw in self._raws(wanted):
                yield k, params(raw)[0]
            return
        want = iter(wanted)
        k = next(want, -1)
        at = 0
        for raw in self.grid:
            if k < 0:
                return
            made = params(raw)
            while 0 <= k < at + len(made):
                yield k, made[k - at]
                k = next(want, -1)
            at += len(made)

    def _raws(self, wanted: Iterable[int]) -> Iterator[tuple[int, dict[str, Any]]]:
        """(k, grid point k) for the increasing ``wanted`` (one point a grid point)."""
        walk = getattr(self.grid, "walk", None)
        at, raws = -2, iter(())  # -2: no walk yet
        for k in wanted:
            if walk is None:
                yield k, self.grid[k]
                continue
            if k != at + 1:  # a run of consecutive points: the grid walked, not each point's digits read
                raws = walk(k)
            at = k
            yield k, next(raws)

    def some(self, wanted: Iterable[int]) -> Iterator[tuple[int, WorkloadPoint]]:
        """(k, point k) for the increasing positions ``wanted``, only those
        made when each grid point makes one point; otherwise by iterating."""
        if self.one_each:
            for k, raw in self._raws(wanted):
                yield k, self.make(raw, k)[0]
            return
        want = iter(wanted)
        k = next(want, -1)
        for at, point in enumerate(self):
            if k < 0:
                return
            if at == k:
                yield at, point
                k = next(want, -1)

    def __getitem__(self, k: Any) -> Any:
        if isinstance(k, slice):
            at = range(*k.indices(self.size))
            if self.one_each and at.step > 0:  # a block of the plan (`payload.Packer`): the grid walked
                return [point for _, point in self.some(at)]
            if self.one_each or at.step < 0:
                return [self[i] for i in at]
            return list(itertools.islice(iter(self), at.start, at.stop, at.step))
        if k < 0:
            k += self.size
        if not 0 <= k < self.size:
            raise IndexError(k)
        if self.one_each:
            return self.make(self.grid[k], k)[0]
        return next(itertools.islice(iter(self), k, None))


class PlanConfigs(Mapping[str, Config]):
    """The plan's configurations by id, in plan order, streamed from its
    points (`PlanPoints`): iterating, ``values()`` and ``items()`` make them
    as they go; the length is points x configurations per point. A lookup by
    id scans the points; a second one builds the id -> configuration map
    (what adaptive rounds' statistics and a lookup-heavy caller need: the
    plan's full footprint, paid only by them)."""

    def __init__(self, points: Sequence[WorkloadPoint], per_point: int) -> None:
        self.points, self.per_point = points, per_point
        self._index: dict[str, Config] | None = None
        self._lookups = 0

    def __len__(self) -> int:
        return len(self.points) * self.per_point

    def __iter__(self) -> Iterator[str]:
        for p in self.points:
            for c in p.configs:
                yield c.config_id

    def __getitem__(self, cid: str) -> Config:
        if self._index is None:
            self._lookups += 1
            if self._lookups == 1:
                for c in self.values():
                    if c.config_id == cid:
                        return c
                raise KeyError(cid)
            self._index = {c.config_id: c for c in self.values()}
        return self._index[cid]

    def values(self) -> _ConfigValues:
        return _ConfigValues(self)

    def items(self) -> _ConfigItems:
        return _ConfigItems(self)


class _ConfigValues(ValuesView[Config]):
    """`PlanConfigs.values`, streamed (no lookup per id)."""

    _mapping: PlanConfigs

    def __iter__(self) -> Iterator[Config]:
        for p in self._mapping.points:
            yield from p.configs


class _ConfigItems(ItemsView[str, Config]):
    """`PlanConfigs.items`, streamed (no lookup per id)."""

    _mapping: PlanConfigs

    def __iter__(self) -> Iterator[tuple[str, Config]]:
        for p in self._mapping.points:
            for c in p.configs:
                yield c.config_id, c


def _policies(
    spec: SweepSpec, engine: Engine, source: str
) -> tuple[list[tuple[str, dict[str, Any], CodeRef | None]], dict[str, CodeRef], dict[str, frozenset[str]]]:
    """(name, params of one grid point, user code) per policy configuration;
    built-ins by name, user classes by ``use`` (checked against the engine's
    seam), params checked against the class's declaration."""
    from schedlab.usercode import resolve

    policies: list[tuple[str, dict[str, Any], CodeRef | None]] = []
    codes: dict[str, CodeRef] = {}
    from schedlab.errors import Collector

    errors = Collector()
    integers: dict[str, frozenset[str]] = {}  # policy name -> its policy_<param> columns declared int
    for i, entry in enumerate(spec.policy_entries()):
        where = f"{source}: policies[{i}]"
        code = None
        with errors.check():
            if entry.use is not None:
                if entry.name in engine.policies:
                    raise UserError(
                        f"{where}.name: {entry.name!r} is a built-in {engine.name} policy; "
                        f"give your policy another name"
                    )
                code = resolve(entry.use, spec.base_dir, f"{where}.use")
                cls = engine.check_policy_class(code.load(), f"{where}.use")
                codes[f"policies[{i}].use"] = code
            else:
                try:
                    cls = engine.policy(entry.name)
                except UserError as err:
                    raise UserError(f"{where}: {err}{did_you_mean(entry.name, engine.policies)}") from None
            from schedlab.params import declared

            integers[entry.name] = frozenset(
                f"policy_{n}" for n, p in declared(cls, engine.handle_args).items() if p.is_integer
            )
            for point in _grid(entry.params, [], f"{where}.params"):
                with errors.check():
                    engine.check_policy_params(cls, point, f"{where}.params")
                    policies.append((entry.name, point, code))
    errors.raise_any()
    seen: set[str] = set()
    for name, params, _ in policies:
        key = canonical([name, params])
        if key in seen:
            raise UserError(f"{source}: policies: {name!r} is listed twice")
        seen.add(key)
    return policies, codes, integers


def _metrics(spec: SweepSpec, source: str) -> tuple[tuple[MetricSpec, ...], dict[str, CodeRef]]:
    """The spec's extra metrics, each checked on its own (every mistake reported)."""
    from schedlab.errors import Collector

    out: list[MetricSpec] = []
    codes: dict[str, CodeRef] = {}
    errors = Collector()
    for i, m in enumerate(spec.metrics):
        with errors.check():
            _metric(spec, m, i, source, out, codes)
    errors.raise_any()
    return tuple(out), codes


def _metric(
    spec: SweepSpec, m: MetricEntry, i: int, source: str, out: list[MetricSpec], codes: dict[str, CodeRef]
) -> None:
    from schedlab.api.metrics import BUILTIN_METRICS
    from schedlab.params import check_params
    from schedlab.usercode import is_reference, resolve

    where = f"{source}: metrics[{i}]"
    code = None
    if is_reference(m.use):
        code = resolve(m.use, spec.base_dir, f"{where}.use")
        fn = code.load()
        if not callable(fn):
            raise UserError(f"{where}.use: {m.use} is not a function (a metric is fn(jobs, **params) -> number)")
        codes[f"metrics[{i}].use"] = code
    elif m.use in BUILTIN_METRICS:
        fn = BUILTIN_METRICS[m.use]
    else:
        raise UserError(
            f"{where}.use: unknown metric {m.use!r}; choose from: {', '.join(BUILTIN_METRICS)} "
            f'(or your own function with use = "file.py:fn")'
        )
    check_params(fn, dict(m.params), f"{where}.params", skip=1, what="metric")
    if any(x.name == m.name for x in out):
        raise UserError(f"{where}.name: {m.name!r} is listed twice")
    out.append(MetricSpec(m.name, m.use, dict(m.params), code))


#: Columns every row has from the platform itself: no workload parameter or metric may take their names.
RESERVED_COLUMNS = frozenset(
    {
        "config_id",
        "replication",
        "engine",
        "policy",
        "workload_kind",
        "seed",
        "schedlab_version",
        "schedlab_digest",
        "code_sha256",
        "workload_code_sha256",
        "engine_code_sha256",
    }
)

#: (policy name, params of one grid point, user code) per policy configuration.
_PolicyPoints = list[tuple[str, dict[str, Any], CodeRef | None]]


def plan_key(spec: SweepSpec) -> str:
    """What a plan is built from: the spec but its [tracking] and [execution]
    tables (which no plan reads), and the folder its paths start from
    (`plan_of` reuses the plan `validate.parse_spec` built while this key holds)."""
    return f"{spec.base_dir}\0" + spec.model_dump_json(exclude={"tracking", "execution"})


def plan_of(spec: SweepSpec) -> Plan:
    """``build_plan(spec)``, or the plan `validate.parse_spec` already built for
    this very spec (same fields, same base folder): a run does not expand and
    check a large grid twice. Not with user code: its files may have been
    edited since (a notebook), and a run resolves and hashes them anew."""
    checked = spec.checked_plan
    if checked is not None and not checked[1].code and checked[0] == plan_key(spec):
        plan: Plan = checked[1]
        return plan
    return build_plan(spec)


def build_plan(spec: SweepSpec, source: str = "spec", kept: bool = True) -> Plan:
    """Expand and check a validated `SweepSpec`; every error names its field.
    ``kept``: the ids of an unchanged sweep are read from its results dir
    (`ids_file`, `_kept_points`) instead of hashed; False: never (a partial
    spec checked beside a wrong one).

    Every independent mistake is reported (a `UserErrors` when there are
    several): the policies, metrics, [system] values and workload grid points
    are checked each on its own; a check that needs another part (the
    workload kind needs the engine, the jobs-fit-the-machine check needs
    valid [system] values and workload points) runs when that part is sound.
    In order: the engine and the workload kind (:func:`_engine_and_kind`),
    the policies, metrics and [system] grid (:func:`_parts`), the
    configurations of every workload point (:func:`_expand`), the rules
    between [system] and the workload's jobs (:func:`_check_points`), the
    user code and the columns (:func:`_columns`)."""
    from schedlab.errors import Collector

    errors = Collector()
    engine, kind, kind_name, wl_code, codes = _engine_and_kind(spec, source, errors)
    policies, policy_integers, metrics, systems = _parts(spec, source, errors, engine, codes)
    key = ids_key(spec, kind, codes) if kept and not errors and kind is not None else None
    points, columns, repeats, read = _expand(
        spec, source, errors, engine, kind, kind_name, wl_code, codes, systems, policies, policy_integers, key
    )
    if not read:  # ids read from the results dir: the points they name were checked (`_kept_points`)
        _check_points(spec, source, errors, engine, kind, points, systems, repeats)
    _columns(source, errors, codes, columns, metrics)
    errors.raise_any()
    configs = PlanConfigs(points, points.make.per_point if isinstance(points.make, _PointMaker) else 0)
    return Plan(spec.name, engine.name, spec.seed, points, columns, configs, metrics, codes, tuple(policies), key, read)


def _engine_and_kind(
    spec: SweepSpec, source: str, errors: Collector
) -> tuple[Any, Any, str, CodeRef | None, dict[str, CodeRef]]:
    """(engine, workload kind, its name, the workload's user code, the user
    code so far); the engine and the kind are None when wrong (reported)."""
    from schedlab.engines import ENGINES, spec_engine
    from schedlab.platform.planning.spec import warmup_applies
    from schedlab.usercode import is_reference, resolve
    from schedlab.workloads.registry import user_kind, workload_kind, workload_kinds

    engine = None
    codes: dict[str, CodeRef] = {}
    try:
        engine, engine_code = spec_engine(spec.engine, spec.base_dir, f"{source}: engine")
        if engine_code is not None:  # your own engine: hashed and shipped like a policy's code
            codes["engine"] = engine_code
            if spec.outputs.warmup is not None and not warmup_applies(engine.name):
                errors.add(f"{source}: outputs.warmup: engine {engine.name!r} declares no warm-up deletion")
    except UserError as err:
        errors.add(
            str(err) if is_reference(spec.engine) else f"{source}: engine: {err}{did_you_mean(spec.engine, ENGINES)}"
        )
    kind = wl_code = None
    kind_name = spec.workload.kind
    with errors.check():
        if spec.workload.use is not None:
            wl_code = resolve(spec.workload.use, spec.base_dir, f"{source}: workload.use")
            kind_name = spec.workload.kind if "kind" in spec.workload.model_fields_set else wl_code.attr
            if kind_name in workload_kinds():
                raise UserError(
                    f"{source}: workload.kind: {kind_name!r} is a built-in workload kind; with use, "
                    f"leave kind out or name your generator differently"
                )
            try:
                kind = user_kind(wl_code, kind_name)
            except UserError as err:
                raise UserError(f"{source}: workload.use: {err}") from None
            codes["workload.use"] = wl_code
        elif engine is not None:
            if kind_name not in engine.workload_kinds:
                raise UserError(
                    f"{source}: workload.kind: engine {engine.name!r} does not take {kind_name!r}; "
                    f'choose from: {", ".join(engine.workload_kinds)} (or your own generator with use = "gen.py:fn")'
                    + did_you_mean(kind_name, engine.workload_kinds)
                )
            kind = workload_kind(kind_name, f"{source}: workload.kind")
    return engine, kind, kind_name, wl_code, codes


def _parts(
    spec: SweepSpec, source: str, errors: Collector, engine: Engine | None, codes: dict[str, CodeRef]
) -> tuple[_PolicyPoints, dict[str, frozenset[str]], tuple[MetricSpec, ...], list[dict[str, Any]] | None]:
    """(policy configurations, their integer columns, metrics, [system] grid
    points or None when the engine or a value is wrong); the user code found
    is added to ``codes``."""
    policies: _PolicyPoints = []
    policy_integers: dict[str, frozenset[str]] = {}
    if engine is not None:
        with errors.check():
            policies, policy_codes, policy_integers = _policies(spec, engine, source)
            codes.update(policy_codes)
    metrics: tuple[MetricSpec, ...] = ()
    with errors.check():
        metrics, metric_codes = _metrics(spec, source)
        codes.update(metric_codes)
    systems: list[dict[str, Any]] | None = None
    if engine is not None:
        with errors.check():
            engine.check_system(spec.system, f"{source}: system")
            systems = list(_grid(dict(spec.system), [], f"{source}: system"))
    return policies, policy_integers, metrics, systems


def _expand(
    spec: SweepSpec,
    source: str,
    errors: Collector,
    engine: Any,
    kind: Any,
    kind_name: str,
    wl_code: CodeRef | None,
    codes: dict[str, CodeRef],
    systems: list[dict[str, Any]] | None,
    policies: _PolicyPoints,
    policy_integers: dict[str, frozenset[str]],
    key: str | None = None,
) -> tuple[PlanPoints, list[str], bool, bool]:
    """The workload grid's points, streamed (`PlanPoints`), with the ids of
    every point and configuration: read from the results dir when ``key``
    names the ids kept there (`_kept_points`), else made by the checking
    pass (`_hashing_pass`). Returns the points, the parameter columns of
    their configurations (in order of first appearance), whether two points
    share an id (a grid that repeats a point) and whether the ids were read."""
    make = _PointMaker(spec, source, engine, kind, kind_name, wl_code, codes, systems, policies, policy_integers)
    if key is not None:
        kept = _kept_points(spec, source, errors, make, key)
        if kept is not None:
            return kept[0], kept[1], False, True
    points, columns, repeats = _hashing_pass(spec, source, errors, make)
    return points, columns, repeats, False


def _kept_points(
    spec: SweepSpec, source: str, errors: Collector, make: _PointMaker, key: str
) -> tuple[PlanPoints, list[str]] | None:
    """The points of a plan whose ids a run of this very plan kept in the
    results dir (`ids_file`; None when there are none, or they are another
    plan's, torn or damaged). The per-point checks are not run again: the
    key covers everything they read (the spec's values and the folder its
    paths start from, the user code's digests and schedlab's own source,
    `ids_key`), and the file is only written for a plan that passed them,
    so they would pass again; only the existence of input files is outside
    the key, and a plan whose points read files is never keyed. The spec's
    models, its engine, policies, metrics and [system] values are checked
    before (`build_plan`), and `probe_plan` after, as for any plan."""
    from schedlab.platform.planning import ids_file

    kept = ids_file.read(spec.results_dir(), key)
    if kept is None:
        return None
    grid: Sequence[dict[str, Any]] = []
    with errors.check():
        grid = _grid(spec.workload.params(), spec.workload.zip, f"{source}: workload")
    if errors or len(kept.points) * make.per_point != len(kept.configs):
        return None
    make.ids = PlanIds(kept.points, kept.configs, kept.draws, kept.drawn)
    return PlanPoints(grid, make, len(kept.points)), kept.columns


def _hashing_pass(
    spec: SweepSpec, source: str, errors: Collector, make: _PointMaker
) -> tuple[PlanPoints, list[str], bool]:
    """The checking pass over the workload grid: every grid point checked
    and made into its workload points and their configurations (as the run
    will make them again, `PlanPoints`), one at a time, every id hashed.
    Returns the streamed points, the parameter columns of their
    configurations (in order of first appearance) and whether two points
    share an id (a grid that repeats a point). What it keeps meanwhile is 8
    bytes a point (the ids, for that check), dropped on return."""
    import array

    import numpy as np

    from schedlab.errors import Collector

    kind, codes = make.kind, make.codes
    grid: Sequence[dict[str, Any]] = []
    count = 0
    columns: dict[str, None] = {}
    shapes: set[tuple[str, ...]] = set()  # the parameter names of the points seen (their columns are in)
    ids, config_ids, draw_ids = array.array("Q"), array.array("Q"), array.array("Q")
    drawn = bytearray()  # 1 where the point's draw id is not its point id
    if kind is not None:
        where = f"{source}: workload"
        with errors.check():
            grid = _grid(spec.workload.params(), spec.workload.zip, where)
            found = Collector()
            base_dir = spec.base_dir  # a pydantic private attribute: read once, not once a grid point
            for raw in grid:
                for point in _checked_points(kind, make, raw, where, base_dir, found):
                    count += 1
                    ids.append(int(point.point_id, 16))
                    config_ids.extend(int(c.config_id, 16) for c in point.configs)
                    draw_ids.append(int(point.draw_id, 16) if point.draw_id is not None else 0)
                    drawn.append(point.draw_id is not None)
                    shape = tuple(point.params)  # a configuration's columns follow from its point's names
                    if shape not in shapes:
                        shapes.add(shape)
                        for c in point.configs:
                            columns.update(dict.fromkeys(c.flat_params()))
            found.raise_any()
    for _, (code, _) in make.readers.items():
        codes.setdefault("workload.reader", code)
        break
    keys = np.frombuffer(ids, dtype=np.uint64).copy() if ids else np.zeros(0, dtype=np.uint64)
    repeats = bool(keys.size > 1 and (np.diff(np.sort(keys)) == 0).any())
    if not errors and count:  # later passes make each point with these ids (`PlanIds`), not by hashing again
        any_drawn = any(drawn)
        make.ids = PlanIds(
            keys,
            np.frombuffer(config_ids, dtype=np.uint64).copy(),
            np.frombuffer(draw_ids, dtype=np.uint64).copy() if any_drawn else None,
            np.frombuffer(bytes(drawn), dtype=np.bool_).copy() if any_drawn else None,
        )
    return PlanPoints(grid, make, count), list(columns), repeats


def ids_key(spec: SweepSpec, kind: Any, codes: dict[str, CodeRef]) -> str | None:
    """What every id of ``spec``'s plan is a function of, as one digest (the
    key its ids are kept under, `ids_file`): the spec as the plan reads it
    and the folder its paths start from (`plan_key`), the identity of every
    piece of user code resolved before the checking pass (engine, policies,
    generator, metrics) and the digest of schedlab's own source (the
    workload kinds' defaults, expansions and trims, and the canonical form,
    enter every id). None for a workload whose points read files (a trace:
    its windows and its reader's code are found by reading them), whose ids
    are hashed every time."""
    from schedlab.platform.planning.ids_file import source_digest

    if "path" in getattr(kind, "shared_keys", ()):
        return None
    identity = {
        "plan": plan_key(spec),
        "code": {field_: code.identity for field_, code in sorted(codes.items())},
        "schedlab": source_digest(),
    }
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()


def _point_ids(
    kind: Any, kind_name: str, params: dict[str, Any], ident: dict[str, Any], pcode: CodeRef | None
) -> tuple[str, str, str | None]:
    """(the canonical text of the workload point's identity, its id, its
    draw id: None when it is the point id, see the module docstring)."""
    workload_identity = {"kind": kind_name, "params": ident}
    parts = {"kind": _value_text(kind_name), "params": canonical_object({str(k): _text(v) for k, v in ident.items()})}
    if pcode is not None:
        workload_identity["code"] = pcode.identity
        parts["code"] = canonical(pcode.identity)
    workload_text = canonical_object(parts)  # == canonical(workload_identity), from the values' texts
    point_id = text_digest(workload_text)
    excluded = kind.draw_excludes(params) if kind.draw_excludes is not None else ()
    draw_id = None
    if excluded:
        draw_id = digest(
            {
                **workload_identity,
                "params": {k: v for k, v in ident.items() if k not in excluded},
                "draw_excludes": sorted(excluded),
            }
        )
    return workload_text, point_id, draw_id


def config_identity(
    engine: str,
    policy: str,
    policy_params: dict[str, Any],
    workload_identity: dict[str, Any],
    system: dict[str, Any],
    code: CodeRef | None,
    engine_code: CodeRef | None = None,
) -> dict[str, Any]:
    """What a configuration's id is the digest of (the module docstring):
    `_expand` builds the same text part by part (`canonical_object`)."""
    identity: dict[str, Any] = {
        "engine": engine,
        "policy": policy,
        "policy_params": policy_params,
        "workload": workload_identity,
    }
    if system:  # only engines with system params carry the key (queue ids unchanged)
        identity["system"] = system
    if code is not None:  # only user code carries a digest (built-in ids unchanged)
        identity["code"] = code.identity
    if engine_code is not None:  # your own engine's code, likewise
        identity["engine_code"] = engine_code.identity
    return identity


def _check_points(
    spec: SweepSpec,
    source: str,
    errors: Collector,
    engine: Any,
    kind: Any,
    points: Sequence[WorkloadPoint],
    systems: list[dict[str, Any]] | None,
    repeats: bool,
) -> None:
    """The rules between [system] and the workload points' jobs (the points
    streamed to them), and a grid that repeats a point (``repeats``, found by
    the checking pass)."""
    if points and systems is not None:
        from schedlab.sim.system import check_jobs_fit

        # [system] x workload rules (e.g. a capacity list has one entry per resource of the job table)
        with errors.check():
            engine.check_system_workload(
                spec.system, kind, (p.params for p in points), f"{source}: system", f"{source}: workload"
            )
            # what run would reject in every instance, known now: jobs wider than the machine, a build that fails
            check_jobs_fit(
                engine.system, spec.system, kind, (p.params for p in points), f"{source}: system", f"{source}: workload"
            )
    if repeats:
        errors.add(f"{source}: workload: the grid repeats a point (a value is listed twice)")


def probe_plan(plan: Plan, source: str = "spec") -> None:
    """What only running says, on a tiny draw of the plan's first workload
    point (generated kinds: ``tiny_jobs``, no job or one): every built-in
    policy configuration is run, so what a policy's constructor refuses of a
    [system] point is said now (VQS: every capacity 1), and the built-in
    extra metrics are computed on its per-job table (a column it does not
    have). Only a refusal is the spec's mistake (a UserError of the run, a
    ValueError of a built-in metric); anything else is left to the run.
    `validate.parse_spec` calls it on the spec's plan; a search's trial
    sweeps do not (a refused trial setting fails that trial, not the search)."""
    import polars as pl

    from schedlab.engines import get_engine
    from schedlab.errors import Collector
    from schedlab.sim.system import tiny_jobs
    from schedlab.workloads.registry import workload_kind, workload_kinds

    if not plan.points or plan.points[0].kind not in workload_kinds():  # your own generator: no tiny draw
        return
    point, engine, metrics = plan.points[0], get_engine(plan.engine), plan.metrics
    jobs = tiny_jobs(workload_kind(point.kind), point.params)
    if jobs is None:
        return
    errors = Collector()
    for config in point.configs:
        if config.code is not None:  # your own class: loaded by the run, not here
            continue
        try:
            result = engine.run(jobs, config.policy, config.policy_params, config.system, path="reference")
        except UserError as err:  # the [system] point, the policy's params, or the two together
            given = [("system", "[system]", config.system), ("policies", "params", config.policy_params)]
            where = " and ".join(name for name, _, values in given if values) or "policies"
            setting = " and ".join(f"{label} {_show_table(values)}" for _, label, values in given if values)
            errors.add(f"{source}: {where}: policy {config.policy!r}{' with ' + setting if setting else ''}: {err}")
            continue
        except Exception:  # noqa: BLE001 - not a refusal of the spec's values: the run reports it
            continue
        table = pl.DataFrame(result.jobs)
        if table.height:  # the per-job table of one run says what the metrics see
            for i, m in enumerate(metrics):
                if m.code is None:
                    try:
                        m.function()(table, **m.params)
                    except ValueError as err:
                        errors.add(f"{source}: metrics[{i}].params: {err}")
            metrics = ()
    errors.raise_any()


def _show_table(values: dict[str, Any]) -> str:
    """A table as TOML's inline table reads (``{capacity = 2.0}``)."""
    return "{" + ", ".join(f"{k} = {v!r}" for k, v in values.items()) + "}"


def _columns(
    source: str,
    errors: Collector,
    codes: dict[str, CodeRef],
    columns: list[str],
    metrics: tuple[MetricSpec, ...],
) -> None:
    """The parameter columns of the rows (``columns``, found by the checking
    pass) checked: user code that differs under one name, and a column or
    metric that takes a reserved name, are errors."""
    from schedlab.usercode import check_distinct

    with errors.check():
        check_distinct(codes, source)
    clash = set(columns) & RESERVED_COLUMNS
    if clash:
        errors.add(f"{source}: workload.{sorted(clash)[0]}: reserved column name")
    for i, m in enumerate(metrics):
        if m.name in RESERVED_COLUMNS or m.name in columns:
            errors.add(f"{source}: metrics[{i}].name: {m.name!r} is already a column (a parameter or reserved)")
