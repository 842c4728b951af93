"""A sweep spec checked completely: the models' checks (``spec``), then the
plan's (``plan.build_plan``: engine, policies, metrics, every workload grid
point and ``[system]`` value), so a spec that validates also plans.

Above both: the models know nothing of the plan, and the plan only reads
the models.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from schedlab.errors import Collector, UserError
from schedlab.platform.planning.plan import build_plan, plan_key, probe_plan
from schedlab.platform.planning.spec import _PLAN_FIELDS, SweepSpec, _pydantic_messages


def parse_spec(data: dict[str, Any], source: str = "spec", base_dir: str | Path | None = None) -> SweepSpec:
    """Validate a spec dict (from TOML) completely; raise a UserError naming
    the field (``UserErrors``, one line each, when there are several
    independent mistakes). ``base_dir``: the folder relative ``use`` paths
    start from (default: the current directory)."""
    errors = Collector()
    try:
        spec = SweepSpec.model_validate(data)
    except ValidationError as err:
        spec = None
        for line in _pydantic_messages(err, source):
            errors.add(line)
        if isinstance(data, dict):
            _check_sound_parts(data, {e["loc"][0] for e in err.errors() if e["loc"]}, source, base_dir, errors)
        errors.raise_any()
    if spec is None:  # invariant: a failed validation added its messages above, so raise_any() raised
        raise AssertionError("spec validation failed without reporting an error")
    if base_dir is not None:
        spec.place(base_dir)
    # Engine, policies and every workload grid point: checked by plan expansion.
    plan = build_plan(spec, source)
    probe_plan(plan, source)  # what only running says: a policy refusing the [system], a metric's column
    spec.keep_checked_plan(plan_key(spec), plan)
    if spec.search is not None:  # the searched parameters against what the policy and workload declare
        from schedlab.platform.search.space import check_search

        check_search(spec, source)
    return spec


def _check_sound_parts(
    data: dict[str, Any], failed: set[int | str], source: str, base_dir: str | Path | None, errors: Collector
) -> None:
    """The plan's checks on the parts of a spec the models accepted, so one
    round reports the mistakes of both layers (``workload.lod`` beside a
    missing ``policies``). A plan field the models refused is left at its
    default (``policies``: the engine's first built-in, to plan with) and the
    plan's lines about it are left out: the models' line said it."""
    if "engine" in failed or not isinstance(data.get("engine"), str):
        return
    partial = {k: data[k] for k in _PLAN_FIELDS if k in data and k not in failed}
    muted = [k for k in _PLAN_FIELDS if k in failed]
    if "policies" in failed or "policies" not in data:
        from schedlab.engines import ENGINES

        # an unknown engine: build_plan says so, and checks no policy (any name stands in)
        engine = ENGINES.get(data["engine"])
        partial["policies"] = [next(iter(engine.policies)) if engine is not None else "-"]
        muted.append("policies")
    try:
        checked = SweepSpec.model_validate({"name": "spec", **partial})
    except ValidationError:
        return
    if base_dir is not None:
        checked.place(base_dir)
    plan_errors = Collector()
    with plan_errors.check():
        probe_plan(build_plan(checked, source, kept=False), source)
    if not plan_errors and "policies" not in muted and isinstance(data.get("search"), dict) and "search" not in failed:
        _check_search_alone(checked, data["search"], source, plan_errors)
    prefixes = tuple(f"{source}: {k}{sep}" for k in muted for sep in (".", "[", ":"))
    for line in plan_errors.errors:
        if not line.startswith(prefixes):
            errors.add(line)


def _check_search_alone(checked: SweepSpec, search: dict[str, Any], source: str, errors: Collector) -> None:
    """`check_search` on a sound plan with the spec's [search] (the models
    accepted it), while another table of the spec is wrong."""
    from schedlab.platform.search.space import check_search

    try:
        spec = SweepSpec.model_validate({**checked.model_dump(exclude_unset=True), "search": search})
    except ValidationError:  # a rule between [search] and the rest: the models' lines said it
        return
    spec.place(checked.base_dir)
    with errors.check():
        check_search(spec, source)


def load_spec(path: str | Path) -> SweepSpec:
    path = Path(path)
    try:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except tomllib.TOMLDecodeError as err:
        raise UserError(f"{path}: not valid TOML: {err}") from None
    if "description" not in data:
        text = leading_comment(path.read_text(errors="replace"))
        if text:
            data["description"] = text
    return parse_spec(data, str(path), path.parent)


def leading_comment(text: str) -> str:
    """The comment lines a TOML file starts with (blank lines before them
    skipped), without their ``#``: how the sweeps in sweeps/ say what they are."""
    out: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            out.append(stripped[1:].strip())
        elif stripped or out:
            break
    return " ".join(x for x in out if x)
