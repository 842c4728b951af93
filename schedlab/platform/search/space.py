"""A search's space: ``[search.params]`` checked against what the policy and
the workload declare, as Optuna distributions, and a trial's values as an
ordinary sweep configuration.

A searched name is the tuned policy's parameter when the policy declares it
(its constructor's typed keyword arguments, `schedlab.params`: built-ins and
``use = "file.py:Class"`` alike), else a workload parameter; ``policy.NAME``
or ``workload.NAME`` says which when both have it. Each range end and each
choice is checked like a value written in the spec (type, the declared
constraints, the workload kind's own rules), and an integer parameter is
searched over integers. Searched workload values change the workload point,
so common random numbers hold between trials with the same workload values
(the instances of a point are ``SeedSequence([seed, point, r])``).
"""

from __future__ import annotations

import importlib.util
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from schedlab.errors import Collector, UserError, did_you_mean, messages

if TYPE_CHECKING:
    from optuna.distributions import BaseDistribution

    from schedlab.platform.planning.spec import SearchParam, SearchSpec, SweepSpec


@dataclass
class TrialRecord:
    """One trial of a search as the loop records it (``trials.json``), read by the
    selection and the convergence figure."""

    number: int
    batch: int
    params: dict[str, Any]
    config_id: str | None
    state: str  # "running", "complete" or "fail"
    value: float | None


@dataclass(frozen=True)
class Target:
    """Where a searched name's value goes: the policy's params or the workload's."""

    name: str  # as written in [search.params]
    part: Literal["policy", "workload"]
    param: str  # the parameter's own name
    integer: bool


def _policy_class(spec: SweepSpec) -> tuple[Any, type]:
    from schedlab.engines import spec_engine
    from schedlab.usercode import resolve

    engine = spec_engine(spec.engine, spec.base_dir, "engine")[0]
    entry = spec.policy_entries()[0]
    if entry.use is not None:
        return engine, engine.check_policy_class(resolve(entry.use, spec.base_dir, "policies[0].use").load(), "use")
    return engine, engine.policy(entry.name)


def targets(spec: SweepSpec) -> dict[str, Target]:
    """Searched name -> `Target` (the spec's engine and policy are sound: `build_plan` passed)."""
    from schedlab.params import declared

    if spec.search is None:
        return {}
    engine, cls = _policy_class(spec)
    decl = declared(cls, engine.handle_args)
    out: dict[str, Target] = {}
    for name in spec.search.params:
        part, _, param = name.partition(".") if name.startswith(("policy.", "workload.")) else ("", "", name)
        if part == "workload" or (not part and param not in decl):
            out[name] = Target(name, "workload", param, False)
        else:
            integer = param in decl and decl[param].is_integer
            out[name] = Target(name, "policy", param, integer)
    return out


def _values(p: SearchParam) -> list[tuple[str, Any]]:
    """(field, value) of every value a check must accept: both ends, or every choice."""
    if p.choices is not None:
        return [(f"choices[{i}]", v) for i, v in enumerate(p.choices)]
    if p.low is None or p.high is None:  # SearchParam._range_or_choices: a range has both ends
        raise ValueError("a range without both ends")
    return [("low", p.low), ("high", p.high)]


def _tail(message: str, prefixes: int) -> str:
    """A check's message without its first ``prefixes`` ``part: `` prefixes
    (``file: field.path: `` of a plan error, ``field.path: `` of a policy's)."""
    parts = message.split(": ", prefixes)
    return parts[prefixes] if len(parts) > prefixes else message


def plan_engine(spec: SweepSpec) -> str:
    """The name of the spec's engine (your own engine's declared name)."""
    return str(_policy_class(spec)[0].name)


def check_search(spec: SweepSpec, source: str) -> None:
    """Every mistake of ``[search]`` as one line (`UserError` / `UserErrors`),
    after the rest of the spec passed `build_plan`."""
    from schedlab.docs_columns import METRICS
    from schedlab.platform.planning.plan import build_plan

    search = spec.search
    if search is None:
        return
    errors = Collector()
    where = f"{source}: search"
    metrics = [c.name for c in METRICS.get(plan_engine(spec), ())] + [m.name for m in spec.metrics]
    known = search.metric in metrics or any(
        m.endswith("_<r>") and search.metric.startswith(m[: -len("<r>")]) for m in metrics
    )
    if not known:
        errors.add(
            f"{where}.metric: {search.metric!r} is not a summary metric of engine {spec.engine!r} "
            f"({', '.join(metrics)})"
        )
    if search.sampler == "gp" and importlib.util.find_spec("torch") is None:
        errors.add(f"{where}.sampler: Optuna's GP sampler needs PyTorch: pip install 'schedlab[gp]'")
    entry = spec.policy_entries()[0]
    grid = [k for k, v in entry.params.items() if isinstance(v, list)]
    if grid:
        errors.add(
            f"{source}: policies[0].params: a search runs one configuration per trial; {', '.join(grid)} is a list"
        )
    axes = [k for k, v in spec.workload.params().items() if isinstance(v, list)]
    axes += [f"system.{k}" for k, v in spec.system.items() if isinstance(v, list)]
    if axes:
        errors.add(f"{source}: workload: a search runs on one workload point; {', '.join(axes)} is a list")
    engine, cls = _policy_class(spec)
    found = targets(spec)
    unknown = _unknown_names(spec, engine, cls)
    for name, p in search.params.items():
        at = f"{where}.params.{name}"
        if name in unknown:
            errors.add(f"{at}: {unknown[name]}")
            continue
        t = found[name]
        if t.part == "policy" and t.param in entry.params:
            errors.add(f"{at}: also set in policies[0].params; a searched parameter takes the trial's value")
            continue
        if t.part == "workload" and t.param in spec.workload.params():
            errors.add(f"{at}: also set in [workload]; a searched parameter takes the trial's value")
            continue
        if t.integer and p.choices is None:
            bad = [f for f, v in (("low", p.low), ("high", p.high), ("step", p.step)) if v is not None and v != int(v)]
            if bad:
                errors.add(f"{at}.{bad[0]}: {t.param} is an integer parameter; give a whole number")
                continue
            if p.log and p.low is not None and p.low < 1:
                errors.add(f"{at}.low: an integer log range starts at 1 or more (got {p.low:g})")
                continue
        for field_, value in _values(p):  # the first value refused names the mistake
            value = int(value) if t.integer and p.choices is None else value
            try:
                if t.part == "policy":
                    engine.check_policy_params(cls, {**entry.params, t.param: value}, "policies[0].params")
                else:
                    probe = spec.model_copy(update={"workload": _workload(spec, {t.param: value}), "search": None})
                    build_plan(probe, source)
            except UserError as err:
                for m in messages(err):
                    errors.add(f"{at}.{field_}: {_tail(m, 1 if t.part == 'policy' else 2)}")
                break
    if search.sampler == "grid":
        loose = [n for n, p in search.params.items() if p.choices is None and p.step is None and not found[n].integer]
        if loose:
            errors.add(
                f"{where}.sampler: grid needs every parameter discrete (choices, an integer, or step); "
                f"{', '.join(loose)} is a continuous range"
            )
    base = search.select.baseline
    if base is not None:
        for k in base:
            if k not in search.params:
                errors.add(f"{where}.select.baseline.{k}: not a searched parameter ({', '.join(search.params)})")
        for k in search.params:
            if k not in base:
                errors.add(f"{where}.select.baseline: gives no value for {k}")
    errors.raise_any()


def _workload_kind(spec: SweepSpec) -> Any:
    """The spec's workload kind (built-in or ``use``: the plan has checked it)."""
    from schedlab.usercode import resolve
    from schedlab.workloads.registry import user_kind, workload_kind

    if spec.workload.use is not None:
        code = resolve(spec.workload.use, spec.base_dir, "workload.use")
        return user_kind(code, spec.workload.kind if "kind" in spec.workload.model_fields_set else code.attr)
    return workload_kind(spec.workload.kind)


def _unknown_names(spec: SweepSpec, engine: Any, cls: type) -> dict[str, str]:
    """Searched name -> why it names nothing: neither a parameter the tuned
    policy declares nor one of the workload kind's (``policy.`` /
    ``workload.`` narrow it to one), with a "did you mean" over both."""
    from schedlab.params import declared

    if spec.search is None:
        return {}
    kind = _workload_kind(spec)
    policy_names = sorted(declared(cls, engine.handle_args))
    label = spec.policy_entries()[0].name
    out: dict[str, str] = {}
    for name in spec.search.params:
        part, _, param = name.partition(".") if name.startswith(("policy.", "workload.")) else ("", "", name)
        in_policy = param in policy_names
        in_workload = not kind.unknown({param: None})
        if (in_policy and part != "workload") or (in_workload and part != "policy"):
            continue
        says, meant = [], []
        if part != "workload":
            says.append(f"policy {label!r} takes {', '.join(policy_names) or 'no parameters'}")
            meant += policy_names
        if part != "policy":
            says.append(f"workload kind {kind.name!r} takes {', '.join(kind.defaults) or 'no parameters'}")
            meant += list(kind.defaults)
        out[name] = f"no such parameter ({'; '.join(says)})" + did_you_mean(param, meant)
    return out


def distributions(spec: SweepSpec) -> dict[str, BaseDistribution]:
    """Searched name -> Optuna distribution (sorted by name: the sampler sees one order)."""
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    search = spec.search
    if search is None:
        return {}
    found = targets(spec)
    out: dict[str, BaseDistribution] = {}
    for name in sorted(search.params):
        p = search.params[name]
        if p.choices is not None:
            out[name] = CategoricalDistribution(list(p.choices))
        elif p.low is None or p.high is None:  # SearchParam._range_or_choices: a range has both ends
            raise ValueError(f"{name}: a range without both ends")
        elif found[name].integer:
            out[name] = IntDistribution(int(p.low), int(p.high), log=p.log, step=int(p.step or 1))
        else:
            out[name] = FloatDistribution(p.low, p.high, log=p.log, step=p.step)
    return out


def grid_space(spec: SweepSpec) -> dict[str, list[Any]]:
    """The grid sampler's axes: every value of each (discrete) parameter."""
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    out: dict[str, list[Any]] = {}
    for name, d in distributions(spec).items():
        if isinstance(d, CategoricalDistribution):
            out[name] = list(d.choices)
        elif isinstance(d, IntDistribution):
            out[name] = list(range(d.low, d.high + 1, d.step))
        elif isinstance(d, FloatDistribution) and d.step is not None:
            count = int(math.floor((d.high - d.low) / d.step + 1e-9)) + 1
            out[name] = [d.low + i * d.step for i in range(count)]
        else:  # check_search refuses a continuous range under the grid sampler
            raise ValueError(f"{name}: a continuous range has no grid")
    return out


def grid_size(spec: SweepSpec) -> int:
    return math.prod(len(v) for v in grid_space(spec).values())


def _workload(spec: SweepSpec, values: dict[str, Any]) -> Any:
    """``spec``'s workload with ``values`` set (a validated copy: the values are extra fields)."""
    from schedlab.platform.planning.spec import WorkloadSpec

    return WorkloadSpec.model_validate({**spec.workload.model_dump(exclude_unset=True), **values})


def trials_spec(spec: SweepSpec, settings: list[dict[str, Any]], search: SearchSpec | None = None) -> SweepSpec:
    """The ordinary sweep of ``settings`` (searched name -> value, one per
    configuration): the tuned policy once per setting, with the searched
    workload values; replications are set by the caller. The spec keeps its
    ``search`` (part of the results dir's identity) unless ``search`` is given."""
    from schedlab.platform.planning.spec import PolicyEntry

    found = targets(spec)
    entry = spec.policy_entries()[0]
    policies: list[str | PolicyEntry] = []
    workload: dict[str, Any] = {}
    for values in settings:
        params = dict(entry.params)
        for name, v in values.items():
            t = found[name]
            if t.part == "policy":
                params[t.param] = v
            else:
                if workload.setdefault(t.param, v) != v:
                    raise ValueError("trials_spec: one sweep holds one workload point; split by workload values")
        policies.append(PolicyEntry(name=entry.name, params=params, use=entry.use))
    update: dict[str, Any] = {"policies": policies}
    if workload:
        update["workload"] = _workload(spec, workload)
    if search is not None:
        update["search"] = search
    return spec.model_copy(update=update)


def workload_key(spec: SweepSpec, values: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    """The searched workload values of a setting (trials with the same key share a workload point)."""
    found = targets(spec)
    return tuple(sorted((found[n].param, v) for n, v in values.items() if found[n].part == "workload"))
