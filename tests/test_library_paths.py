"""The library stands apart from the repository (issue #37): data, agents and
pages come from arguments, settings or the spec, never from where schedlab
happens to be checked out. Every string literal of ``schedlab/`` outside
docstrings is read with ``ast``; one naming the repository's data folder, its
sweeps or its reproduction pages fails the test with the places it was found,
except in the command line (``schedlab/cli``), whose defaults may name them."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "schedlab"
#: What only the repository has: its shared data folder, its sweeps and its reproduction pages.
REPOSITORY_PATHS = ("shared/data", "sweeps/", "docs/reproductions")
#: The same folders as the parts of a path joined with ``/`` (``root / "shared" / "data"``).
REPOSITORY_FOLDERS = ("shared", "sweeps", "reproductions")
#: The command line: its options' defaults may name the repository's folders (it runs there).
CLI = PACKAGE / "cli"
#: Literals that break the rule and are allowed until another change removes them: (file, literal's
#: start) -> why. Each must still be found (test_known_exceptions_are_still_there).
KNOWN_EXCEPTIONS: dict[tuple[str, str], str] = {
    (
        "pipelines/dfrs_common.py",
        "../shared/data/pwa-swf/",
    ): "the DFRS pipelines' HPC2N trace: a value of the sweep specs they generate, relative to the working "
    "directory like the paths of the pipelines' own .toml specs (a data-root setting for `pipelines run` is not "
    "part of this change)",
}


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


def _allowed(rel: str, literal: str) -> bool:
    return any(rel == f and literal.startswith(start) for f, start in KNOWN_EXCEPTIONS)


def test_no_repository_path_in_the_library():
    bad = [
        f"schedlab/{rel}:{line}: {literal!r}"
        for rel, line, literal in repository_literals()
        if not _allowed(rel, literal)
    ]
    assert not bad, (
        "the library names repository folders (take them from an argument, a setting or the spec):\n" + "\n".join(bad)
    )


def test_known_exceptions_are_still_there():
    found = repository_literals()
    for rel, start in KNOWN_EXCEPTIONS:
        assert any(r == rel and lit.startswith(start) for r, _, lit in found), (rel, start)


def test_the_check_sees_what_it_looks_for(tmp_path):
    """The scan is of literals, not docstrings: a planted literal is found, the same words in a docstring are not."""
    module = tmp_path / "m.py"
    module.write_text(
        '"""Reads ../shared/data/x."""\nDATA = "../shared/data/lublin"\nPAGES = f"docs/reproductions/{1}"\n'
        'AGENT = ROOT / "sweeps" / "rl"\nTABLE = {"sweeps": []}\n'
    )
    hits = [node.value for node in _hits(ast.parse(module.read_text()))]
    assert hits == ["../shared/data/lublin", "docs/reproductions/", "sweeps"]
