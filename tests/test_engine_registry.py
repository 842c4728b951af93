"""Everything engine-specific is declared by the engine and found through
the registry (``schedlab.engines``): no module outside an engine's own code
keys a table by an engine's name.

The source is read with ``ast``: a built-in engine's name (``queue``,
``packing``, ``batch``, ``dfrs``) as a string constant that is a dict
literal's key, a subscript (``table["queue"]``), or an operand of ``==``,
``!=``, ``in`` or ``not in`` is a finding, anywhere in ``schedlab/`` outside
the engines' own code (``schedlab/engines/``, ``schedlab/sim/``,
``schedlab/policies/``). The same words with another meaning (the ``packing``
workload kind, a Lublin job's ``batch`` type, the ``batch`` of a spec's
replications, the DFRS paper's claims) are listed in :data:`OTHER_MEANINGS`, each with why; the test
prints every finding with its file and line.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "schedlab"
ENGINE_NAMES = frozenset({"queue", "packing", "batch", "dfrs"})
#: The engines' own code: the registry's modules, the simulators, the policies.
OWN = ("engines", "sim", "policies")
#: (file relative to schedlab/, the word) -> why the word is not an engine's name there.
OTHER_MEANINGS: dict[tuple[str, str], str] = {
    ("workloads/registry.py", "packing"): "the `packing` workload kind (Psychas & Ghaderi's generator)",
    ("docs_columns.py", "packing"): "the `packing` workload kind's parameter columns",
    ("platform/planning/spec.py", "batch"): "the replications table's `batch` field (replications per round)",
    ("pipelines/dfrs_common.py", "batch"): "the DFRS paper's sweeps, written as specs naming their engines",
    ("pipelines/dfrs_common.py", "dfrs"): "the DFRS paper's sweeps, written as specs naming their engines",
    ("pipelines/dfrs_table.py", "batch"): "the DFRS paper's group of batch algorithms a claim names",
    ("gym/slot_scorer.py", "batch"): "the training record's `batch`: the episodes each CMA-ES candidate is scored on",
}


def _names(node: ast.AST) -> list[str]:
    return [node.value] if isinstance(node, ast.Constant) and node.value in ENGINE_NAMES else []


def findings() -> list[tuple[str, int, str, str]]:
    """(file, line, word, how) of every engine name keying or compared outside the engines."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.split("/")[0] in OWN:
            continue
        for node in ast.walk(ast.parse(path.read_text(), rel)):
            hits: list[tuple[ast.AST, str]] = []
            if isinstance(node, ast.Dict):
                hits += [(k, "a dict key") for k in node.keys if k is not None]
            elif isinstance(node, ast.Subscript):
                hits.append((node.slice, "a subscript"))
            elif isinstance(node, ast.Compare) and any(
                isinstance(op, (ast.Eq, ast.NotEq, ast.In, ast.NotIn)) for op in node.ops
            ):
                for side in (node.left, *node.comparators):
                    hits.append((side, "compared"))
                    if isinstance(side, (ast.Tuple, ast.List, ast.Set)):
                        hits += [(e, "compared") for e in side.elts]
            for sub, how in hits:
                for word in _names(sub):
                    out.append((rel, getattr(sub, "lineno", 0), word, how))
    return out


def test_no_table_keyed_by_engine_name_outside_the_engines():
    bad = [f for f in findings() if (f[0], f[2]) not in OTHER_MEANINGS]
    assert not bad, "engine names keying a table or compared outside schedlab/engines (declare it on Engine):\n" + (
        "\n".join(f"  schedlab/{rel}:{line}: {word!r} {how}" for rel, line, word, how in bad)
    )


def test_other_meanings_are_still_there():
    """An allowance never outlives the use it allows."""
    seen = {(f[0], f[2]) for f in findings()}
    stale = sorted(k for k in OTHER_MEANINGS if k not in seen)
    assert not stale, f"OTHER_MEANINGS lists uses that are gone: {stale}"


def test_the_builtin_engines_declare_everything_through_the_same_record():
    """Every declaration given by reference resolves (so a typo in an engine
    module fails here, not in the one command that reads it)."""
    from schedlab.engines import ENGINES
    from schedlab.engines.base import Engine

    lazy = ("checks", "recorder", "complete_jobs", "compiled_unit", "read_workload_file", "summary_lines")
    for name, engine in ENGINES.items():
        assert type(engine) is Engine and engine.name == name
        assert engine.metrics and engine.headline and engine.units is not None, name
        assert set(engine.headline) <= {c.name for c in engine.metrics}, name
        assert engine.system.engine == name and engine.jobs.required[:2] == ("job_id", "submit"), name
        for what in lazy:
            if getattr(engine, what) is not None:
                assert engine.declared(what) is not None, (name, what)
