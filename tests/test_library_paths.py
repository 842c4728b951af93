"""The library stands apart from the repository (issue #37): data, agents and
pages come from arguments, settings or the spec, never from where schedlab
happens to be checked out. Every string literal of ``schedlab/`` outside
docstrings is read with ``ast``, and every string value of a pipeline's TOML
outside what its report says (``figures``, the prose keys); one naming the
repository's data folder, its sweeps or its reproduction pages fails the test
with the places it was found, except in the command line (``schedlab/cli``),
whose defaults may name them. A pipeline names a trace as ``{data}/...`` and
its agent as ``{agent}/...`` (schedlab.pipelines.inputs) instead."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "schedlab"
#: What only the repository has: its shared data folder, its sweeps and its reproduction pages.
REPOSITORY_PATHS = ("shared/data", "sweeps/", "docs/reproductions")
#: The same folders as the parts of a path joined with ``/`` (``root / "shared" / "data"``).
REPOSITORY_FOLDERS = ("shared", "sweeps", "reproductions")
#: The command line: its options' defaults may name the repository's folders (it runs there).
CLI = PACKAGE / "cli"
#: What a pipeline's TOML says, not what it reads: its figures (titles, captions, claims) and its prose.
TOML_PROSE = ("figures", "description", "paper", "figure")


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the docstring constants of the module and of every class and function."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def repository_literals() -> list[tuple[str, int, str]]:
    """(file relative to schedlab/, line, literal) of every string literal outside docstrings
    and outside the command line that names a repository folder."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if CLI in path.parents:
            continue
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in _hits(tree):
            found.append((path.relative_to(PACKAGE).as_posix(), node.lineno, node.value))
    return found


def _hits(tree: ast.AST) -> list[ast.Constant]:
    """The string literals of ``tree`` outside docstrings naming a repository folder: containing one
    of REPOSITORY_PATHS, or one of REPOSITORY_FOLDERS joined into a path (an operand of ``/``)."""
    skip = _docstrings(tree)
    joined = {
        id(side)
        for node in ast.walk(tree)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div)
        for side in (node.left, node.right)
    }
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in skip
        and (
            any(p in node.value for p in REPOSITORY_PATHS) or (id(node) in joined and node.value in REPOSITORY_FOLDERS)
        )
    ]


def _toml_hits(doc: dict, place: str = "") -> list[tuple[str, str]]:
    """(key path, value) of the string values of a TOML document outside `TOML_PROSE` (and keys
    ending in ``_says``) naming a repository folder (containing one of REPOSITORY_PATHS)."""
    if isinstance(doc, dict):
        return [
            hit
            for key, value in doc.items()
            if place or (key not in TOML_PROSE and not key.endswith("_says"))
            for hit in _toml_hits(value, f"{place}.{key}" if place else key)
        ]
    if isinstance(doc, list):
        return [hit for i, value in enumerate(doc) for hit in _toml_hits(value, f"{place}[{i}]")]
    if isinstance(doc, str) and any(p in doc for p in REPOSITORY_PATHS):
        return [(place, doc)]
    return []


def repository_values() -> list[tuple[str, str, str]]:
    """(file relative to schedlab/, key path, value) of every TOML string value of ``schedlab/``
    naming a repository folder (what a pipeline reads: its sweeps, scales, tables)."""
    return [
        (path.relative_to(PACKAGE).as_posix(), key, value)
        for path in sorted(PACKAGE.rglob("*.toml"))
        for key, value in _toml_hits(tomllib.loads(path.read_text()))
    ]


def test_no_repository_path_in_the_library():
    bad = [f"schedlab/{rel}:{line}: {literal!r}" for rel, line, literal in repository_literals()]
    bad += [f"schedlab/{rel}: {key} = {value!r}" for rel, key, value in repository_values()]
    assert not bad, (
        "the library names repository folders (take them from an argument, a setting or the spec):\n" + "\n".join(bad)
    )


def test_the_check_sees_what_it_looks_for(tmp_path):
    """The scan is of literals, not docstrings: a planted literal is found, the same words in a docstring are not."""
    module = tmp_path / "m.py"
    module.write_text(
        '"""Reads ../shared/data/x."""\nDATA = "../shared/data/lublin"\nPAGES = f"docs/reproductions/{1}"\n'
        'AGENT = ROOT / "sweeps" / "rl"\nTABLE = {"sweeps": []}\n'
    )
    hits = [node.value for node in _hits(ast.parse(module.read_text()))]
    assert hits == ["../shared/data/lublin", "docs/reproductions/", "sweeps"]


def test_the_check_sees_what_a_pipeline_reads(tmp_path):
    """A pipeline's TOML: a repository path in a sweep (or a scale's value, or the agent's ``use``) is found;
    the same words in a comment, the description or a figure's text are not, nor a path below ``{data}``."""
    spec = tmp_path / "p.toml"
    spec.write_text(
        '# traces in ../shared/data\ndescription = "from ../shared/data"\n'
        'sweeps = [{name = "a", workload = {path = "../shared/data/lublin/x.swf.gz"}},\n'
        '  {name = "b", workload = {path = "{data}/lublin/x.swf.gz"}, '
        'policies = [{name = "RL", use = "sweeps/rl/agent.py:Agent"}]}]\n'
        '[scales.quick]\npath = "../shared/data/pwa-swf"\n'
        '[[figures]]\npaper_says = "the agent of sweeps/rl/agent.py"\n'
    )
    hits = _toml_hits(tomllib.loads(spec.read_text()))
    assert hits == [
        ("sweeps[0].workload.path", "../shared/data/lublin/x.swf.gz"),
        ("sweeps[1].policies[0].use", "sweeps/rl/agent.py:Agent"),
        ("scales.quick.path", "../shared/data/pwa-swf"),
    ]
