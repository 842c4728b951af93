"""schedlab's layers point down and no import goes round in a circle.

The import graph is read from the source with ``ast``: every ``import`` and
``from ... import`` statement anywhere in a module -- at the top, inside
functions, under ``if TYPE_CHECKING:`` -- is an edge; relative imports are
resolved against the importing module's package; ``from pkg import name`` is
an edge to the module ``pkg.name`` when there is one, else to ``pkg`` itself.
Out of scope: modules named by a string at run time (``importlib.import_module``:
the engine registry's table, ``LazyPolicies``, the trace readers' table, the
pipelines' own modules, a user's ``use = ...``) and the implicit import of a
package's ``__init__`` that importing one of its modules triggers (a package
that re-exports its own modules would otherwise count as a circle with each).

Two rules, each a test that prints what breaks it:

* no cycle anywhere in ``schedlab``;
* no upward import against the declared order of :data:`LAYERS` (the top
  level) and :data:`ROOMS` (inside a package): a module may import its own
  layer and the layers below it, never one above. In particular the engines'
  core (``schedlab.sim``) imports nothing above itself: an engine receives its
  policy (a class, used through its duck-typed methods, or a compiled kernel's
  id) from the engine registry (``schedlab.engines``).
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "schedlab"

#: The top level, lowest first; a module may import from its own layer and the
#: ones before it. ``schedlab`` alone is the package's own ``__init__`` (the
#: ``schedlab.load / compare / plot`` shortcuts), which sits above the
#: platform and plotting it calls.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("schedlab.errors", "schedlab.version"),
    ("schedlab.params", "schedlab.usercode"),
    ("schedlab.workloads",),
    # the toolkit every engine builds on: shared metrics, numba set-up, bounds, [system] schemas; the
    # check-policy search (checks.common, checks.guard) and the environments' plumbing (gym.common,
    # ) -- each engine's package declares its own invariants and environment on them
    (
        "schedlab.sim",
        "schedlab.checks.common",
        "schedlab.checks.guard",
        "schedlab.gym.common",
    ),
    # one package per engine (its core, policies, invariants, environment: see ENGINE_ROOMS), the registry
    # and the public seams that re-export them
    ("schedlab.api", "schedlab.engines"),
    ("schedlab.checks", "schedlab.platform", "schedlab.docs_columns", "schedlab.gym"),
    ("schedlab.plotting", "schedlab.search_figure"),
    # schedule views: re-run a stored run through the engines, draw it (plotting's style and --where)
    ("schedlab.views",),
    # the package's own __init__ (schedlab.load / run / ...)
    ("schedlab",),
    ("schedlab.pipelines",),
    ("schedlab.cli",),
)

#: The built-in engines' packages. Inside each, its rooms, lowest first: the
#: core (``sim``: the loop and its compiled kernels) never imports the
#: policies; the invariants and the environment sit on both. The package's
#: ``__init__`` (the ``ENGINE`` declaration) imports its rooms lazily.
BUILTIN_ENGINES = ("queue", "packing", "batch", "dfrs")
ENGINE_ROOMS: dict[str, tuple[tuple[str, ...], ...]] = {
    f"schedlab.engines.{name}": (
        (f"schedlab.engines.{name}.sim",),
        (f"schedlab.engines.{name}.policies",),
        (f"schedlab.engines.{name}.checks", f"schedlab.engines.{name}.gym"),
    )
    for name in BUILTIN_ENGINES
}

#: Inside a package: its rooms, lowest first (the platform along the data flow:
#: a spec is planned, results are stored, summarised, tracked; execution drives
#: them all; a search drives sweeps). Modules of the package outside every room
#: are not ordered.
ROOMS: dict[str, tuple[tuple[str, ...], ...]] = {
    "schedlab.platform": (
        # search.space: a [search] table's space, checked with the spec (planning.validate)
        ("schedlab.platform.planning", "schedlab.platform.search.space"),
        ("schedlab.platform.storage",),
        ("schedlab.platform.statistics",),
        ("schedlab.platform.tracking",),
        ("schedlab.platform.execution",),
        # the search loop runs sweeps (execution) trial after trial
        ("schedlab.platform.search",),
        # run_sweep: a spec to its search or to the runner
        ("schedlab.platform.sweep",),
    ),
    **ENGINE_ROOMS,
}

#: Imports that break a rule and are allowed until another change removes them: (importer,
#: imported) -> why. The graph the tests read leaves them out; each must still exist
#: (test_known_exceptions_are_still_there), so an allowance never outlives its import.
#: Empty when the house is in order.
KNOWN_EXCEPTIONS: dict[tuple[str, str], str] = {}


def _modules(root: Path) -> dict[str, tuple[Path, bool]]:
    """Module name -> (file, is a package's __init__)."""
    out = {}
    for path in root.rglob("*.py"):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        out[".".join(parts)] = (path, is_package)
    return out


def _targets(node: ast.Import | ast.ImportFrom, module: str, is_package: bool, known: set[str]) -> Iterator[str]:
    """The module names one import statement reaches."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
        return
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        prefix = ".".join(base + ([node.module] if node.module else []))
    else:
        prefix = node.module or ""
    for alias in node.names:
        sub = f"{prefix}.{alias.name}"
        yield sub if sub in known else prefix


@functools.cache
def import_graph(root: Path = PACKAGE, exceptions: bool = True) -> dict[str, dict[str, str]]:
    """schedlab module -> {imported schedlab module: "file:line" of the first such import}
    (``root``: the package's folder), without the imports of KNOWN_EXCEPTIONS
    (``exceptions=True``)."""
    modules = _modules(root)
    known = set(modules)
    graph: dict[str, dict[str, str]] = {}
    for module, (path, is_package) in modules.items():
        edges: dict[str, str] = {}
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            for target in _targets(node, module, is_package, known):
                while target and target not in known:  # ``import a.b.c`` where c is a name: a.b
                    target = target.rpartition(".")[0]
                if exceptions and (module, target) in KNOWN_EXCEPTIONS:
                    continue
                if target and target != module and target.split(".")[0] == "schedlab":
                    edges.setdefault(target, f"{path.relative_to(root.parent)}:{node.lineno}")
        graph[module] = edges
    return graph


def cycles(graph: dict[str, dict[str, str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each
    as one cycle through all of its members when there is one, else its members."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(root: str) -> None:  # iterative Tarjan: no recursion limit
        nonlocal counter
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def _cycle_path(graph: dict[str, dict[str, str]], component: list[str]) -> str:
    """One cycle inside a component, as ``a (file:line) -> b ... -> a`` (a
    shortest path back to the first member, breadth first)."""
    members = set(component)
    start = component[0]
    parent: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt = []
        for node in frontier:
            for child in sorted(graph[node]):
                if child not in members:
                    continue
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(parent[path[-1]])
                    path.reverse()
                    hops = [f"{a} ({graph[a][b]})" for a, b in zip(path, path[1:] + [start])]
                    return " -> ".join(hops + [start])
                if child not in parent:
                    parent[child] = node
                    nxt.append(child)
        frontier = nxt
    return ", ".join(component)


def _rank(module: str, order: tuple[tuple[str, ...], ...]) -> int | None:
    """The index of ``module``'s layer in ``order`` (longest matching prefix;
    ``schedlab`` alone names the package's own ``__init__``), or None."""
    best, rank = -1, None
    for i, layer in enumerate(order):
        for prefix in layer:
            matches = module == prefix or (prefix != "schedlab" and module.startswith(prefix + "."))
            if matches and len(prefix) > best:
                best, rank = len(prefix), i
    return rank


def upward_imports(graph: dict[str, dict[str, str]]) -> list[str]:
    """Every import of a higher layer (or room) than the importer's."""
    out = []
    orders = [("top level", LAYERS), *((f"rooms of {pkg}", rooms) for pkg, rooms in ROOMS.items())]
    for module, edges in sorted(graph.items()):
        for target, where in sorted(edges.items()):
            for name, order in orders:
                mine, theirs = _rank(module, order), _rank(target, order)
                if mine is not None and theirs is not None and theirs > mine:
                    out.append(f"{where}: {module} imports {target}, a higher layer ({name})")
    return out


def test_every_module_is_in_a_layer():
    """A new top-level module or package must be given its place in LAYERS."""
    missing = sorted(m for m in import_graph() if _rank(m, LAYERS) is None)
    assert not missing, f"modules in no layer of LAYERS: {missing}"


def test_every_platform_module_is_in_a_room():
    rooms = ROOMS["schedlab.platform"]
    missing = sorted(
        m for m in import_graph() if m.startswith("schedlab.platform.") and m.count(".") > 2 and _rank(m, rooms) is None
    )
    assert not missing, f"platform modules in no room: {missing}"


def test_no_import_cycle():
    graph = import_graph()
    found = cycles(graph)
    assert not found, "import cycles:\n" + "\n".join(_cycle_path(graph, c) for c in found)


def _reaches(graph: dict[str, dict[str, str]], start: str, goal: str) -> bool:
    seen, todo = {start}, [start]
    while todo:
        for child in graph.get(todo.pop(), {}):
            if child == goal:
                return True
            if child not in seen:
                seen.add(child)
                todo.append(child)
    return False


def test_known_exceptions_are_still_there():
    """An allowance outlives its import never: once the import is gone, or no
    longer closes a cycle nor points up, remove it."""
    full = import_graph(PACKAGE, exceptions=False)
    orders = [LAYERS, *ROOMS.values()]
    stale = []
    for a, b in KNOWN_EXCEPTIONS:
        upward = any((_rank(b, o) or -1) > (_rank(a, o) if _rank(a, o) is not None else 10**6) for o in orders)
        if b not in full.get(a, {}) or not (upward or _reaches(full, b, a)):
            stale.append(f"{a} -> {b}")
    assert not stale, f"KNOWN_EXCEPTIONS entries that break no rule any more (remove them): {stale}"


def test_layers_point_down():
    found = upward_imports(import_graph())
    assert not found, "upward imports:\n" + "\n".join(found)


def test_sim_imports_nothing_above_sim():
    """The rule the layers exist for, spelled out: an engine's core (its
    ``sim`` room) imports only its own core and the toolkit below the engines
    -- never the policies, another engine, the registry, the platform or
    anything above; and the toolkit (``schedlab.sim``) imports no engine."""
    graph = import_graph()
    toolkit = _rank("schedlab.sim", LAYERS) or 0
    bad = []
    for module, edges in graph.items():
        core = next(
            (f"schedlab.engines.{n}.sim" for n in BUILTIN_ENGINES if module.startswith(f"schedlab.engines.{n}.sim")),
            None,
        )
        if not (module.startswith("schedlab.sim.") or core):
            continue
        for target, where in edges.items():
            own = core is not None and (target == core or target.startswith(core + "."))
            if not own and (_rank(target, LAYERS) or 0) > toolkit:
                bad.append(f"{where}: {module} imports {target}")
    assert not bad, "\n".join(bad)


def test_the_graph_reader_sees_every_kind_of_import(tmp_path, monkeypatch):
    """The reader itself, on a hand-made package: a top-level import, one in a
    function, one under TYPE_CHECKING, relative ones (module and package), and
    ``from pkg import module`` against ``from pkg import name``; and the cycle
    and the upward import it must report."""
    root = tmp_path / "schedlab"
    (root / "low").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "low" / "__init__.py").write_text("from .a import X\n")
    (root / "low" / "a.py").write_text("X = 1\ndef f():\n    from schedlab.high import b\n")
    (root / "low" / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import a\nfrom schedlab.low import X\n"
    )
    (root / "high").mkdir()
    (root / "high" / "__init__.py").write_text("")
    (root / "high" / "b.py").write_text("import schedlab.low.a\nfrom ..low import c\n")
    graph = import_graph(root)
    assert graph["schedlab.low"] == {"schedlab.low.a": "schedlab/low/__init__.py:1"}
    assert graph["schedlab.low.a"] == {"schedlab.high.b": "schedlab/low/a.py:3"}
    assert graph["schedlab.low.c"] == {"schedlab.low.a": "schedlab/low/c.py:3", "schedlab.low": "schedlab/low/c.py:4"}
    assert graph["schedlab.high.b"] == {
        "schedlab.low.a": "schedlab/high/b.py:1",
        "schedlab.low.c": "schedlab/high/b.py:2",
    }
    assert cycles(graph) == [["schedlab.high.b", "schedlab.low", "schedlab.low.a", "schedlab.low.c"]]
    assert _cycle_path(graph, ["schedlab.high.b", "schedlab.low.a"]) == (
        "schedlab.high.b (schedlab/high/b.py:1) -> schedlab.low.a (schedlab/low/a.py:3) -> schedlab.high.b"
    )
    monkeypatch.setitem(globals(), "LAYERS", (("schedlab.low",), ("schedlab.high",)))
    monkeypatch.setitem(globals(), "ROOMS", {})
    assert upward_imports(graph) == [
        "schedlab/low/a.py:3: schedlab.low.a imports schedlab.high.b, a higher layer (top level)"
    ]
