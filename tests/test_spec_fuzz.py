"""No traceback from any spec (issue #41): every spec in ``sweeps/`` and in
the docs' ```toml blocks, with one field mutated -- a number to 0, -1, NaN,
infinity or 1e308, a string to an unknown name or "" -- is either refused by
``schedlab validate`` (exit 2, one line per mistake, the mutated field named)
or accepted *and* its plan's first instance builds and runs a tiny
simulation. Never a traceback, never exit 0 followed by a failing run.

Hypothesis picks the mutations (derandomized: the same ones every run);
``validate`` runs in-process through the CLI's own group (click's runner on
``schedlab.cli.main``: its UserError handling included), and a few through
the real CLI in a subprocess. The specs are shrunk first (a few dozen jobs
or slots) so that a run is tiny; specs of the real traces are left out (a
trace window cannot be shrunk: ``REAL_TRACES``).
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedlab.cli import main
from tests.processes import CHECKOUT, checkout_env

ROOT = CHECKOUT
FENCE = re.compile(r"^```([A-Za-z0-9_+-]*)[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)
FILE_MARK = re.compile(r"#\s*file:\s*(\S+)\s*$")
#: What a number is mutated to, and a string.
NUMBERS: tuple[float, ...] = (0, -1, math.nan, math.inf, 1e308)
STRINGS = ("no-such-name", "")
#: Jobs (or slots) a shrunk spec's workload has at most: a run of its first instance is tiny.
TINY = 40
#: Workload sizes the shrinking caps at TINY.
SIZES = ("njobs", "slots")
#: Mutations per base spec (hypothesis examples) in-process, and through the real CLI.
EXAMPLES_PER_SPEC = 16
CLI_EXAMPLES = 3
#: Wall-clock seconds the tiny run of one instance may take.
RUN_BUDGET_SECONDS = 60.0
#: Where the real traces are (from the checkout): no parameter makes their instances tiny (a window is the
#: trace's own jobs: a run of one is minutes, and validate reads the trace), so their specs are left out,
#: wherever the traces exist. The docs' traces (a few lines of their own) stay in.
REAL_TRACES = "../shared/data/"
#: String fields whose value is free text or a place, where any string is legal: mutating them proves nothing.
FREE_TEXT = {("name",), ("description",)}


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {_toml_value(x)}" for k, x in v.items()) + "}"
    raise TypeError(type(v).__name__)


def dump_toml(data: dict[str, Any]) -> str:
    """A spec dict as TOML: its scalars and arrays, then a [table] per table
    (nested ones as [a.b]); a table inside an array is an inline table."""
    lines: list[str] = []

    def table(d: dict[str, Any], prefix: str) -> None:
        subs = {k: v for k, v in d.items() if isinstance(v, dict)}
        for k, v in d.items():
            if k not in subs:
                lines.append(f"{json.dumps(k)} = {_toml_value(v)}")
        for k, v in subs.items():
            name = f"{prefix}.{json.dumps(k)}" if prefix else json.dumps(k)
            lines.append(f"[{name}]")
            table(v, name)

    table(data, "")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Base:
    """A spec that validates as it is (shrunk), the folder it lives in and
    the folder its relative workload paths start from (the CLI's cwd)."""

    label: str
    folder: Path
    data: dict[str, Any]
    cwd: Path = ROOT


def _shrink(data: dict[str, Any]) -> dict[str, Any]:
    out = json.loads(json.dumps(data))
    workload = out.get("workload", {})
    for key in SIZES:
        v = workload.get(key)
        if isinstance(v, int) and not isinstance(v, bool):
            workload[key] = min(v, TINY)
        elif isinstance(v, list):
            workload[key] = [min(x, TINY) if isinstance(x, int) else x for x in v]
    out.setdefault("tracking", {})["enabled"] = False
    return out


def _doc_specs(tmp: Path) -> list[tuple[str, Path, dict[str, Any]]]:
    """The specs of the docs' toml blocks, each in the folder of its page
    (with the page's `# file:` blocks written beside it: its own code)."""
    out = []
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    for page in pages:
        folder = tmp / "docs" / page.relative_to(ROOT).with_suffix("")
        for i, m in enumerate(FENCE.finditer(page.read_text())):
            lang, text = m.group(1), m.group(2)
            first, _, rest = text.partition("\n")
            mark = FILE_MARK.fullmatch(first.strip())
            if mark:
                target = folder / mark.group(1)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(rest)
            if lang != "toml":
                continue
            try:
                data = tomllib.loads(rest if mark else text)
            except tomllib.TOMLDecodeError:
                continue
            if "engine" in data and "name" in data and "policies" in data:
                out.append((f"{page.relative_to(ROOT)}#{i}", folder, data))
    return out


def _validate(path: Path, cwd: Path) -> tuple[int, str, BaseException | None]:
    with contextlib.chdir(cwd):
        result = CliRunner().invoke(main, ["validate", str(path)])
    exc = result.exception if not isinstance(result.exception, SystemExit) else None
    return result.exit_code, result.output, exc


@pytest.fixture(scope="module")
def bases(tmp_path_factory) -> list[Base]:
    """Every spec of sweeps/ (recursively) and the docs that validates as it
    is, shrunk; the cwd is the checkout's (relative paths as the CLI reads them)."""
    tmp = tmp_path_factory.mktemp("fuzz")
    shutil.copytree(ROOT / "sweeps", tmp / "sweeps")  # mutated specs beside a copy of their own files
    found = [
        (str(p.relative_to(ROOT)), (tmp / p.relative_to(ROOT)).parent, tomllib.loads(p.read_text()))
        for p in sorted(ROOT.glob("sweeps/**/*.toml"))
    ]
    found += _doc_specs(tmp)
    out = []
    for label, folder, data in found:
        if str(data.get("workload", {}).get("path", "")).startswith(REAL_TRACES):
            continue
        base = Base(label, folder, _shrink(data), ROOT if label.startswith("sweeps/") else folder)
        path = _write(base, base.data)
        code, output, exc = _validate(path, base.cwd)
        assert exc is None, f"{label}: validate raised {exc!r}"
        if code == 0:
            out.append(base)
    assert len(out) >= 12, [b.label for b in out]
    return out


def _write(base: Base, data: dict[str, Any]) -> Path:
    """The spec written beside its own files (its `use` paths hold)."""
    path = base.folder / f"fuzz-{re.sub(r'[^A-Za-z0-9]+', '-', base.label)}.toml"
    path.write_text(dump_toml(data))
    return path


def leaves(data: Any, path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], Any]]:
    """(path, value) of every number and string of a spec."""
    if isinstance(data, dict):
        return [x for k, v in data.items() for x in leaves(v, (*path, k))]
    if isinstance(data, list):
        return [x for i, v in enumerate(data) for x in leaves(v, (*path, i))]
    if isinstance(data, (int, float, str)) and not isinstance(data, bool):
        return [(path, data)]
    return []


def mutations(data: dict[str, Any]) -> list[tuple[tuple[Any, ...], Any]]:
    out = []
    for path, value in leaves(data):
        if path in FREE_TEXT or path[:1] == ("tracking",):
            continue
        if isinstance(value, str):
            out += [(path, s) for s in STRINGS]
        else:
            out += [(path, n) for n in NUMBERS]
    return out


def _set(data: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    out = json.loads(json.dumps(data))
    at = out
    for part in path[:-1]:
        at = at[part]
    at[path[-1]] = value
    return out


def dotted(path: tuple[Any, ...]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _named(path: tuple[Any, ...], output: str) -> bool:
    """Some error line names the mutated field, or a table above it (a rule
    across its fields, e.g. ``search.select: n0 (3) is larger than replications``)."""
    lines = [x for x in output.splitlines() if x.startswith("schedlab: error: ")]
    names = [dotted(path[:i]) for i in range(len(path), 0, -1)]
    bare = [re.sub(r"\[\d+\]", "", n) for n in names]
    return bool(lines) and any(f": {n}" in x for x in lines for n in (*names, *bare))


def run_first_instance(path: Path) -> list[dict[str, Any]]:
    """The failures of the plan's first instance, every configuration of it run (`run`'s task code)."""
    from schedlab.platform.execution.tasks import run_instances
    from schedlab.platform.planning.plan import build_plan
    from schedlab.platform.planning.validate import load_spec
    from schedlab.workloads.registry import workload_kind, workload_kinds

    spec = load_spec(path)
    plan = build_plan(spec, str(path))
    instance = plan.instances([spec.replications.first], plan.points[:1])[0]
    shared = None
    if instance.point.kind in workload_kinds():
        kind = workload_kind(instance.point.kind)
        if kind.load_shared is not None:
            shared = kind.load_shared(instance.point.params)
    budget = spec.execution.sim_budget_seconds  # the spec's own when it sets one: its value is run too
    result = run_instances(
        plan.engine,
        [(instance, list(instance.point.configs))],
        shared,
        per_job=False,
        metrics=plan.metrics,
        engine_path="reference",
        sim_budget_seconds=budget if "sim_budget_seconds" in spec.execution.model_fields_set else RUN_BUDGET_SECONDS,
    )
    return result.failures


#: Workload kinds validate draws a tiny instance of (sim.system.workload_checks.tiny_jobs) and runs the
#: built-in policies and metrics on: the per-job table's columns are known only by running.
TINY_KINDS = ("synthetic", "packing", "lublin")


def _unprobed(data: dict[str, Any], path: tuple[Any, ...]) -> bool:
    """A metric's parameter of a spec whose workload has no tiny draw (your
    own generator, a file, a trace): validate checks its type, not whether the
    per-job table has the column it names -- the one gap left, said here."""
    workload = data.get("workload", {})
    tiny = "use" not in workload and workload.get("kind", "synthetic") in TINY_KINDS
    return path[:1] == ("metrics",) and "params" in path and not tiny


def check_mutation(base: Base, path: tuple[Any, ...], value: Any) -> None:
    spec_path = _write(base, _set(base.data, path, value))
    code, output, exc = _validate(spec_path, base.cwd)
    what = f"{base.label}: {dotted(path)} = {value!r}"
    assert exc is None, f"{what}: validate raised {exc!r}"
    assert code in (0, 2), f"{what}: exit {code}\n{output}"
    assert "Traceback" not in output, f"{what}\n{output}"
    if code == 2:
        assert _named(path, output), f"{what}: the error does not name the field\n{output}"
        return
    if _unprobed(base.data, path):
        return
    with contextlib.chdir(base.cwd):
        failures = run_first_instance(spec_path)
    assert failures == [], f"{what}: validate exit 0, then the run failed: {failures[0]['error']}"


def test_every_spec_is_mutated(bases):
    """The specs the property test draws from: the sweeps and the docs' specs, each with fields to mutate."""
    labels = [b.label for b in bases]
    assert any(x.startswith("sweeps/") for x in labels) and any(x.startswith("docs/") for x in labels), labels
    assert all(mutations(b.data) for b in bases)


@settings(
    max_examples=EXAMPLES_PER_SPEC * 20,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_a_mutated_spec_is_refused_or_runs(bases, data):
    base = data.draw(st.sampled_from(bases), label="spec")
    path, value = data.draw(st.sampled_from(mutations(base.data)), label="mutation")
    check_mutation(base, path, value)


@settings(max_examples=CLI_EXAMPLES, derandomize=True, deadline=None, database=None)
@given(data=st.data())
def test_the_real_cli_keeps_the_contract(data, tmp_path_factory):
    """Through `schedlab validate` in a subprocess: exit 0 or 2 (then lines naming the field), no traceback."""
    spec = _shrink(tomllib.loads((ROOT / "sweeps" / "tetris-knob.toml").read_text()))
    path, value = data.draw(st.sampled_from(mutations(spec)), label="mutation")
    folder = tmp_path_factory.mktemp("cli")
    spec_file = folder / "spec.toml"
    spec_file.write_text(dump_toml(_set(spec, path, value)))
    proc = subprocess.run(
        [sys.executable, "-m", "schedlab.cli", "validate", str(spec_file)],
        capture_output=True,
        text=True,
        env=checkout_env(),
        cwd=folder,
        timeout=120,
    )
    assert proc.returncode in (0, 2), proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    if proc.returncode == 2:
        assert _named(path, proc.stderr), proc.stderr
