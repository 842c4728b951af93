"""No module of schedlab reaches into another package's private names.

A leading underscore says "this package's business": a name another package
needs is a seam, and a seam has a public name (and a docstring that says what
it promises). Read from the source with ``ast``, every module of ``schedlab``:

* ``from X import _name`` where ``X`` is a schedlab module of another package
  than the importer's (a module's own package may share its privates);
* ``m._name`` (read or written) where ``m`` is bound, in that module, to a
  schedlab module of another package (``from schedlab.x import y``,
  ``import schedlab.x.y as m``);
* ``obj._name = ...`` on any object but ``self``/``cls`` (an object's private
  state is written by its own class's methods; ``spec.place(...)``, not
  ``spec._base_dir = ...``). Names bound to modules outside schedlab (a
  library patched for a run) are not schedlab's objects and are left out.

Each test prints what breaks it, as ``file:line: what``.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "schedlab"


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _modules(root: Path) -> dict[str, tuple[Path, str]]:
    """Module name -> (file, its package's name)."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
            package = ".".join(parts)
        else:
            package = ".".join(parts[:-1])
        out[".".join(parts)] = (path, package)
    return out


def _package_of(module: str, modules: dict[str, tuple[Path, str]]) -> str:
    return modules[module][1] if module in modules else module.rpartition(".")[0]


def _resolve(node: ast.ImportFrom, package: str) -> str:
    if not node.level:
        return node.module or ""
    base = package.split(".")
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def reaches(root: Path = PACKAGE) -> list[str]:
    """Every use of another package's private name, as ``file:line: what``."""
    modules = _modules(root)
    found = []
    for path, package in modules.values():
        tree = ast.parse(path.read_text(), str(path))
        where = path.relative_to(root.parent)
        foreign_modules: dict[str, str] = {}  # local name -> schedlab module of another package
        outside: set[str] = set()  # local names bound to modules outside schedlab
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    top = alias.name.split(".")[0]
                    local = alias.asname or top
                    if top != "schedlab":
                        outside.add(local)
                    elif alias.asname and alias.name in modules and modules[alias.name][1] != package:
                        foreign_modules[local] = alias.name
            elif isinstance(node, ast.ImportFrom):
                source = _resolve(node, package)
                for alias in node.names:
                    local = alias.asname or alias.name
                    if source.split(".")[0] != "schedlab":
                        outside.add(local)
                        continue
                    sub = f"{source}.{alias.name}"
                    if sub in modules:  # ``from pkg import module``
                        if _package_of(sub, modules) != package:
                            foreign_modules[local] = sub
                    elif _private(alias.name) and _package_of(source, modules) != package:
                        found.append(f"{where}:{node.lineno}: from {source} import {alias.name} (another package)")
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and _private(node.attr) and isinstance(node.value, ast.Name):
                name = node.value.id
                if name in foreign_modules:
                    found.append(
                        f"{where}:{node.lineno}: {name}.{node.attr} ({foreign_modules[name]}: another package)"
                    )
                elif isinstance(node.ctx, ast.Store) and name not in ("self", "cls") and name not in outside:
                    found.append(f"{where}:{node.lineno}: {name}.{node.attr} = ... (another object's private state)")
    return found


def test_no_private_name_crosses_a_package():
    found = reaches()
    assert not found, "private names used outside their package:\n" + "\n".join(found)


def test_the_reader_sees_each_kind_of_reach(tmp_path):
    """The reader itself, on a hand-made package: each kind of reach it must
    report, and what it must let pass (a package's own privates, a library's)."""
    root = tmp_path / "schedlab"
    (root / "a").mkdir(parents=True)
    (root / "b").mkdir()
    for init in (root / "__init__.py", root / "a" / "__init__.py", root / "b" / "__init__.py"):
        init.write_text("")
    (root / "a" / "low.py").write_text("_SECRET = 1\nclass Spec:\n    def place(self):\n        self._dir = 1\n")
    (root / "a" / "same.py").write_text("from schedlab.a.low import _SECRET\nfrom .low import _SECRET as S\n")
    (root / "b" / "high.py").write_text(
        "from schedlab.a.low import _SECRET\n"
        "from ..a import low\n"
        "import schedlab.a.low as L\n"
        "import hypothesis\n"
        "def f(spec):\n"
        "    low._SECRET\n"
        "    L._SECRET = 2\n"
        "    spec._dir = 3\n"
        "    hypothesis._patched = 4\n"
    )
    assert reaches(root) == [
        "schedlab/b/high.py:1: from schedlab.a.low import _SECRET (another package)",
        "schedlab/b/high.py:6: low._SECRET (schedlab.a.low: another package)",
        "schedlab/b/high.py:7: L._SECRET (schedlab.a.low: another package)",
        "schedlab/b/high.py:8: spec._dir = ... (another object's private state)",
    ]
