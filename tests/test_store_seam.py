"""Every results dir is read and written through the results-store seam.

``schedlab.platform.storage.seam`` is the one entry (`open_store`,
`read_manifest`, `require_manifest`, `is_results_dir`, `manifest_path`) and
the local Parquet store its only implementation: no other module builds
``ResultStore(...)``, joins a path with the manifest's file name
(``dir / "manifest.json"``, ``dir / MANIFEST``) or globs for it. A store on
another filesystem then has one place to go. Read with ``ast``; the test
prints ``file:line: what`` for each break.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "schedlab"
#: The seam and the local store it opens (compaction merges that store's Parquet files).
IMPLEMENTATION = {
    "schedlab/platform/storage/seam.py",
    "schedlab/platform/storage/store.py",
    "schedlab/platform/storage/compact.py",
}
MANIFEST_NAMES = {"manifest.json", "MANIFEST"}


def _names_manifest(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value in MANIFEST_NAMES or node.value.endswith("/manifest.json")
    return isinstance(node, (ast.Name, ast.Attribute)) and (
        (node.id if isinstance(node, ast.Name) else node.attr) == "MANIFEST"
    )


def bypasses(root: Path = PACKAGE, allowed: frozenset[str] | set[str] = IMPLEMENTATION) -> list[str]:
    """Every place outside ``allowed`` that builds the local store or finds the manifest file itself."""
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = str(path.relative_to(root.parent))
        if rel in allowed:
            continue
        for node in sorted(ast.walk(ast.parse(path.read_text(), rel)), key=lambda n: getattr(n, "lineno", 0)):
            if isinstance(node, ast.Call):
                fn = node.func
                name = fn.id if isinstance(fn, ast.Name) else fn.attr if isinstance(fn, ast.Attribute) else ""
                if name == "ResultStore":
                    found.append(f"{rel}:{node.lineno}: ResultStore(...) (open_store)")
                elif name in ("glob", "rglob") and any(_names_manifest(a) for a in node.args):
                    found.append(f"{rel}:{node.lineno}: a glob for manifest.json (is_results_dir)")
            elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and _names_manifest(node.right):
                found.append(f"{rel}:{node.lineno}: a path to manifest.json (read_manifest / manifest_path)")
    return found


def test_no_module_goes_round_the_store_seam():
    found = bypasses()
    assert not found, "results dirs reached round the seam (schedlab.platform.storage.seam):\n" + "\n".join(found)


def test_the_reader_sees_each_way_round(tmp_path):
    root = tmp_path / "schedlab"
    root.mkdir()
    (root / "a.py").write_text(
        "import json\n"
        "from pathlib import Path\n"
        "from schedlab.platform.storage.store import MANIFEST, ResultStore\n"
        "def f(d):\n"
        "    s = ResultStore(d)\n"
        "    m = json.loads((Path(d) / 'manifest.json').read_text())\n"
        "    n = Path(d) / MANIFEST\n"
        "    return sorted(Path(d).glob('*/manifest.json'))\n"
    )
    (root / "ok.py").write_text("def f(d):\n    raise ValueError(f'{d}: no manifest.json')\n")
    assert bypasses(root, set()) == [
        "schedlab/a.py:5: ResultStore(...) (open_store)",
        "schedlab/a.py:6: a path to manifest.json (read_manifest / manifest_path)",
        "schedlab/a.py:7: a path to manifest.json (read_manifest / manifest_path)",
        "schedlab/a.py:8: a glob for manifest.json (is_results_dir)",
    ]


def test_the_seam_reads_what_the_store_wrote(tmp_path):
    """The seam's entries on a real results dir: none before a manifest, the
    manifest after, rows through the store it opens."""
    from schedlab.errors import UserError
    from schedlab.platform.storage.seam import is_results_dir, open_store, read_manifest, require_manifest

    root = tmp_path / "results"
    assert read_manifest(root) is None and not is_results_dir(root)
    with pytest.raises(UserError, match="manifest.json: not found"):
        require_manifest(root)
    store = open_store(root)
    store.prepare({"name": "s", "spec": {}, "configs": {"c1": {"policy": "FIFO", "params": {}}}}, fresh=True)
    store.commit([{"policy": "FIFO", "config_id": "c1", "replication": 0, "mst": 1.5}], [], [])
    assert is_results_dir(root) and read_manifest(root) == require_manifest(root)
    assert require_manifest(root)["configs"] == {"c1": {"policy": "FIFO", "params": {}}}
    assert open_store(root).scan().collect()["mst"].to_list() == [1.5]
