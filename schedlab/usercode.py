"""User code referenced from a spec: ``use = "mypolicies.py:AgedSRPT"`` or
``use = "mylab.policies:AgedSRPT"``.

A reference names an attribute of a Python module, given either as a file
path (relative to the spec's folder; ``~`` is expanded) or as an importable
module name. Resolving it (driver side, at ``validate``/``plan`` time) yields a
:class:`CodeRef`: what to import, what to ship to Ray workers and the SHA-256
of the code that defines it. That digest is part of the identity of every
configuration the code takes part in, so a result row can always be traced
back to the exact code that produced it, and an edit is never silently
mixed with results of the code before it.

The digest is of what the code *does*, not of its bytes (`source_digest`):
each Python file counts as its syntax tree (``ast.dump`` of the parsed
module, docstrings stripped), so adding a comment, a docstring or
reformatting leaves every configuration id -- and the rows on disk -- as
they are, while any edit to a statement changes them (`schedlab run` then
re-runs exactly the configurations of that code: `schedlab.platform.storage.manifest`).
A file that does not parse counts by its bytes. The syntax tree is Python's
own, so a digest holds for one Python minor version (what a Ray cluster
requires of its nodes anyway).

What is hashed and shipped:

* a single file ``mypolicies.py`` (its folder has no ``__init__.py``): that
  file; it is imported on the workers as the module ``mypolicies``;
* a file inside a package (``lab/policies.py`` with ``lab/__init__.py``): the
  whole top-level package folder (every ``.py`` file below it), imported as
  ``lab.policies`` -- the way to split user code over several modules;
* ``module:attr`` naming an importable module outside ``site-packages``
  (e.g. an editable install): its top-level package folder, likewise;
  modules of installed distributions and of schedlab itself are not shipped
  (the cluster's image provides them) and are hashed by their own files;
* the data files a module declares: a module-level ``DATA_FILES =
  ("agent.npz",)`` (string literals, read from the syntax tree: never by
  running the code) names files relative to the module's own file, each
  hashed by its bytes into the digest (new weights re-run the configurations
  of that code, as an edit does) and shipped with it; the code reads one with
  :func:`data_file` (``schedlab.api.data_file(__file__, "agent.npz")``).

Shipping goes through Ray's ``runtime_env`` ``py_modules`` (the runner adds
:meth:`CodeRef.ship` paths), never as a pickled closure of the driver's
globals; the worker imports the module by name and checks the digest of what
it imported against the driver's, so the code that ran is the code hashed.
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import importlib.abc
import importlib.util
import os
import re
import shutil
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from schedlab.errors import UserError

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: Folders never hashed or shipped inside a user package.
SKIP_DIRS = ("__pycache__", ".git", ".hg", ".svn", ".mypy_cache", ".pytest_cache", ".ruff_cache")
#: The module-level name a user module declares its data files with (``DATA_FILES = ("agent.npz",)``).
DATA_FILES_NAME = "DATA_FILES"
#: Prefix of the folder a single-file module's data files travel to Ray's workers in (`ship_paths`).
DATA_PACKAGE_PREFIX = "_schedlab_data_"


@dataclass(frozen=True)
class CodeRef:
    """A resolved reference to user code (picklable: it travels in tasks)."""

    ref: str  # as written in the spec
    module: str  # importable module name (on the driver and on the workers)
    attr: str  # attribute of the module (may be dotted: Outer.Inner)
    root: str  # the file or top-level package folder that defines the module
    sha256: str  # digest of the source under ``root`` (see ``source_digest``)
    shipped: bool  # True: ``root`` goes to the workers with runtime_env py_modules

    @property
    def identity(self) -> dict[str, str]:
        """What enters configuration ids: the attribute and the digest, not
        the path (moving a folder keeps the ids; editing the code does not)."""
        return {"attr": self.attr, "sha256": self.sha256}

    def sources(self) -> dict[str, bytes]:
        """Relative path -> content of every source file the digest covers."""
        return _sources(Path(self.root))

    def load(self) -> Any:
        """Import the module (registering the driver-side path finder for
        shipped code when needed), check its digest, return the attribute."""
        module = _import(self)
        obj: Any = module
        for part in self.attr.split("."):
            try:
                obj = getattr(obj, part)
            except AttributeError:
                raise UserError(f"{self.ref}: module {self.module!r} has no attribute {self.attr!r}") from None
        return obj


def declared_data(file: Path, source: bytes) -> tuple[str, ...]:
    """The file names of the module's top-level ``DATA_FILES = (...)`` (a
    tuple or list of string literals: relative paths below the module's
    folder), or () when it declares none or does not parse; a malformed
    declaration is a `UserError` naming ``file:line``."""
    if DATA_FILES_NAME.encode() not in source:
        return ()  # the common case, without parsing
    try:
        tree = ast.parse(source, filename=str(file))
    except (SyntaxError, ValueError):
        return ()
    for node in tree.body:
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        )
        if not any(isinstance(t, ast.Name) and t.id == DATA_FILES_NAME for t in targets):
            continue
        value = getattr(node, "value", None)
        where = f"{file}:{node.lineno}: {DATA_FILES_NAME}"
        if not isinstance(value, (ast.Tuple, ast.List)) or not all(
            isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts
        ):
            raise UserError(f'{where} must be a tuple of file names written as strings, e.g. ("agent.npz",)')
        names = tuple(str(e.value) for e in value.elts)  # type: ignore[attr-defined]
        for name in names:
            rel = Path(name)
            if not name or rel.is_absolute() or ".." in rel.parts:
                raise UserError(f"{where}: {name!r} must be a path below the module's folder (no '..', not absolute)")
        return names
    return ()


def _read_data(module: Path, name: str, folder: Path) -> bytes:
    try:
        return (folder / name).read_bytes()
    except OSError as err:
        raise UserError(f"{module}: {DATA_FILES_NAME}: {name}: {err.strerror or err} ({folder / name})") from None


def _sources(root: Path, data_dir: Path | None = None) -> dict[str, bytes]:
    """Relative path -> bytes of every source file under ``root`` and of the
    data files their modules declare (each right after its module).
    ``data_dir``: where a single-file module's data files are, when not
    beside it (a Ray worker's copy: `ship_paths`)."""
    out: dict[str, bytes] = {}
    if root.is_file():
        data = root.read_bytes()
        out[root.name] = data
        for name in declared_data(root, data):
            out.setdefault(name, _read_data(root, name, data_dir or root.parent))
        return out
    for f in sorted(root.rglob("*.py")):
        rel = f.relative_to(root.parent)
        if any(part in SKIP_DIRS for part in rel.parts):
            continue
        data = f.read_bytes()
        out[rel.as_posix()] = data
        for name in declared_data(f, data):
            out.setdefault((rel.parent / name).as_posix(), _read_data(f, name, f.parent))
    return out


def data_file(module_file: str | Path, name: str) -> Path:
    """The path of the data file ``name`` that the module at ``module_file``
    (its ``__file__``) declares in its ``DATA_FILES``: beside the module on the
    driver and the local pool's workers, in the copy shipped with it on Ray's.
    A name not declared there (so neither hashed nor shipped) or a file
    missing is a `UserError` naming the module and the file."""
    here = Path(module_file).resolve()
    if name not in declared_data(here, here.read_bytes()):
        raise UserError(
            f"{here}: data file {name!r} is not in its {DATA_FILES_NAME} "
            "(a file not declared there is neither hashed nor shipped with the code)"
        )
    path = _DATA_DIRS.get(str(here), here.parent) / name
    if not path.is_file():
        raise UserError(f"{here}: data file {name!r}: no such file ({path})")
    return path


def ship_paths(root: str, sha256: str) -> list[str]:
    """What Ray's ``py_modules`` ships for the user code at ``root``: the file
    or package folder itself, and for a single-file module that declares data
    files a folder ``_schedlab_data_<digest>`` holding copies of them (Ray
    ships a lone ``.py`` file alone; a package folder carries its data files
    inside it already). The worker finds that folder by the digest
    (`worker_load`)."""
    path = Path(root)
    if not path.is_file():
        return [root]
    names = declared_data(path, path.read_bytes())
    if not names:
        return [root]
    import tempfile

    folder = Path(tempfile.gettempdir()) / "schedlab-data" / sha256 / (DATA_PACKAGE_PREFIX + sha256[:16])
    if not folder.is_dir():
        staging = folder.parent / f".staging-{os.getpid()}"
        for name in names:
            (staging / name).parent.mkdir(parents=True, exist_ok=True)
            (staging / name).write_bytes(_read_data(path, name, path.parent))
        try:
            os.replace(staging, folder)
        except OSError:  # another driver staged the same digest meanwhile
            shutil.rmtree(staging, ignore_errors=True)
    return [root, str(folder)]


def _without_docstrings(tree: ast.AST) -> ast.AST:
    """``tree`` with the docstring of the module and of every class and
    function removed (in place): documentation, not behaviour."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                if isinstance(body[0].value.value, str):
                    node.body = body[1:]
    return tree


def code_form(rel: str, data: bytes) -> bytes:
    """What the digest covers of one source file: a Python file's syntax
    tree without docstrings (comments and layout are not in it), or the
    file's bytes when it is not Python or does not parse."""
    if rel.endswith(".py"):
        try:
            tree = ast.parse(data, filename=rel)
        except (SyntaxError, ValueError):  # ValueError: a NUL byte in the source
            return data
        return b"ast\0" + ast.dump(_without_docstrings(tree), include_attributes=False).encode()
    return data


def source_digest(root: Path, data_dir: Path | None = None) -> str:
    """SHA-256 over (relative path, NUL, `code_form`, NUL) of every source
    file, in sorted path order: a file's name and its code, nothing else (no
    timestamps, comments, docstrings or formatting), so the same code hashes
    the same on every machine (with the same Python minor version). A
    declared data file counts by its bytes (`_sources`; ``data_dir`` as there)."""
    h = hashlib.sha256()
    for rel, data in _sources(root, data_dir).items():
        h.update(rel.encode() + b"\0" + code_form(rel, data) + b"\0")
    return h.hexdigest()


def file_digest(root: Path, data_dir: Path | None = None) -> str:
    """SHA-256 over (relative path, NUL, bytes, NUL) of every source file:
    the bytes themselves (schedlab's own engine digest, ``schedlab_digest``;
    the arguments are `source_digest`'s)."""
    h = hashlib.sha256()
    for rel, data in _sources(root, data_dir).items():
        h.update(rel.encode() + b"\0" + data + b"\0")
    return h.hexdigest()


def check_distinct(codes: dict[str, CodeRef], source: str) -> None:
    """Two pieces of user code in one sweep must not share a top-level module
    name from different places: the workers import each by that name."""
    seen: dict[str, tuple[str, CodeRef]] = {}
    for field_, code in codes.items():
        top = code.module.split(".")[0]
        if top in seen and seen[top][1].root != code.root:
            raise UserError(
                f"{source}: {field_}: module {top!r} ({code.root}) has the name of {seen[top][0]}'s "
                f"module ({seen[top][1].root}); rename one of them"
            )
        seen.setdefault(top, (field_, code))


def is_reference(value: Any) -> bool:
    """True for a string of the form ``something:attr`` (a built-in name
    never contains a colon)."""
    return isinstance(value, str) and ":" in value


def _split(ref: str, where: str) -> tuple[str, str]:
    target, _, attr = ref.rpartition(":")
    if not target or not attr or not all(_IDENT.fullmatch(p) for p in attr.split(".")):
        raise UserError(f'{where}: {ref!r} is not a code reference; write "file.py:Name" or "module:Name"')
    return target, attr


def _is_path(target: str) -> bool:
    return target.endswith(".py") or "/" in target or "\\" in target or target.startswith(("~", "."))


def absolute(ref: str, base_dir: str | Path) -> str:
    """``ref`` with a relative file path made absolute against ``base_dir``
    (module references are returned as they are)."""
    target, _, attr = ref.rpartition(":")
    if not _is_path(target):
        return ref
    path = Path(target).expanduser()
    return f"{(path if path.is_absolute() else Path(base_dir) / path).resolve()}:{attr}"


def _installed(path: Path) -> bool:
    """Inside an installed distribution's folder (site-packages) or the
    standard library: provided by the environment, not shipped."""
    roots = {sysconfig.get_paths()[k] for k in ("purelib", "platlib", "stdlib", "platstdlib")}
    parts = set(path.parts)
    return any(str(path).startswith(r) for r in roots) or "site-packages" in parts or "dist-packages" in parts


def resolve(ref: str, base_dir: str | Path, where: str) -> CodeRef:
    """Resolve a reference written in a spec (``where`` names the spec field,
    e.g. ``spec.toml: policies[3].use``) or raise one UserError naming it."""
    if not isinstance(ref, str):
        raise UserError(f'{where}: must be a string "file.py:Name" or "module:Name"; got {ref!r}')
    target, attr = _split(ref, where)
    if _is_path(target):
        base = Path(base_dir)
        path = Path(target).expanduser()
        path = (path if path.is_absolute() else base / path).resolve()
        if not path.is_file():
            raise UserError(f"{where}: no such file {target} (resolved against {base.resolve()})")
        if path.suffix != ".py":
            raise UserError(f"{where}: {target} is not a .py file")
        parts = [path.stem]
        top = path
        folder = path.parent
        while (folder / "__init__.py").is_file():
            parts.insert(0, folder.name)
            top = folder
            folder = folder.parent
        if path.name == "__init__.py":
            parts.pop()
        for p in parts:
            if not _IDENT.fullmatch(p):
                raise UserError(f"{where}: {p!r} (in {target}) is not a valid Python module name")
        try:
            digest = source_digest(top)
        except UserError as err:  # a data file the code declares is missing or unreadable
            raise UserError(f"{where}: {err}") from None
        code = CodeRef(ref, ".".join(parts), attr, str(top), digest, shipped=True)
    else:
        if not all(_IDENT.fullmatch(p) for p in target.split(".")):
            raise UserError(f"{where}: {target!r} is not a module name")
        try:
            importlib.import_module(target)  # imported for its package's location below
        except ImportError as err:
            raise UserError(f"{where}: cannot import {target!r}: {err}") from None
        except Exception as err:  # noqa: BLE001 - the user's module raised while importing
            raise UserError(f"{where}: importing {target!r} raised {type(err).__name__}: {err}") from None
        top_name = target.split(".")[0]
        top_module = sys.modules[top_name]
        location = getattr(top_module, "__file__", None)
        if location is None:
            raise UserError(f"{where}: module {top_name!r} has no source file to hash")
        top = Path(location).resolve()
        if top.name == "__init__.py":
            top = top.parent
        shipped = top_name != "schedlab" and not _installed(top)
        try:
            digest = source_digest(top)
        except UserError as err:
            raise UserError(f"{where}: {err}") from None
        code = CodeRef(ref, target, attr, str(top), digest, shipped=shipped)
    try:
        code.load()  # the module must import and the attribute exist now, at validate time
    except UserError as err:
        raise UserError(f"{where}: {err}") from None
    return code


class _UserFinder(importlib.abc.MetaPathFinder):
    """Driver side: makes exactly the top-level names of resolved user code
    importable from their folders, without putting those folders (and
    whatever else they hold) on ``sys.path``."""

    def __init__(self) -> None:
        self.roots: dict[str, Path] = {}  # top-level module name -> file or package folder

    def find_spec(self, fullname, path=None, target=None):
        top = fullname.split(".")[0]
        root = self.roots.get(top)
        if root is None:
            return None
        if fullname == top:
            if root.is_dir():
                return importlib.util.spec_from_file_location(
                    fullname, root / "__init__.py", submodule_search_locations=[str(root)]
                )
            return importlib.util.spec_from_file_location(fullname, root)
        return None  # submodules: the package's __path__ finds them


_FINDER = _UserFinder()
_LOADED: dict[str, str] = {}  # top-level module name -> digest of what is loaded
_VERIFIED: set[tuple[str, str]] = set()  # (imported file or folder, digest) already checked in this process
_WORKER_ROOTS: dict[str, str] = {}  # where shipped code sits on this worker -> where it came from
_DATA_DIRS: dict[str, Path] = {}  # a shipped single-file module on this worker -> the folder its data files came in


def _unload(top: str) -> None:
    for name in [m for m in sys.modules if m == top or m.startswith(top + ".")]:
        del sys.modules[name]


def _import(code: CodeRef):
    top = code.module.split(".")[0]
    root = Path(code.root)
    if code.shipped:
        if _FINDER not in sys.meta_path:
            sys.meta_path.insert(0, _FINDER)
        known = _FINDER.roots.get(top)
        on_worker = known is None and top in sys.modules and _LOADED.get(top) is None
        if not on_worker:
            if (known is not None and known != root) or _LOADED.get(top) not in (None, code.sha256):
                _unload(top)  # another folder's module of that name, or the file changed since it was imported
            _FINDER.roots[top] = root
    try:
        module = importlib.import_module(code.module)
    except UserError:
        raise
    except Exception as err:  # noqa: BLE001 - the user's module raised while importing
        raise UserError(f"{code.ref}: importing {code.module!r} raised {type(err).__name__}: {err}") from None
    _LOADED[top] = code.sha256
    return module


def _imported_root(top: str) -> Path:
    file = sys.modules[top].__file__
    if file is None:  # a namespace package: resolve() only accepts modules and regular packages
        raise UserError(f"{top}: a namespace package has no source file to ship")
    location = Path(file).resolve()
    return location.parent if location.name == "__init__.py" else location


def _shipped_data(found: Path, sha256: str) -> Path | None:
    """Where the data files of the single-file module ``found`` are when they
    are not beside it: the folder `ship_paths` sent with it to this Ray
    worker (registered for `data_file`); None when beside it or none is declared."""
    if not found.is_file() or str(found) in _DATA_DIRS:
        return _DATA_DIRS.get(str(found))
    names = declared_data(found, found.read_bytes())
    if not names or all((found.parent / n).is_file() for n in names):
        return None
    spec = importlib.util.find_spec(DATA_PACKAGE_PREFIX + sha256[:16])
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations:
        return None  # missing: the digest check names the file
    _DATA_DIRS[str(found)] = Path(locations[0])
    return _DATA_DIRS[str(found)]


def _find_shipped_data(code: CodeRef) -> None:
    """Register, for `data_file`, where a shipped lone file's data files came
    to this worker (`_shipped_data`), before its module is executed."""
    if not code.root.endswith(".py"):
        return  # a package folder carries its data files inside it
    try:
        spec = importlib.util.find_spec(code.module)
    except (ImportError, ValueError):
        return  # not shipped to this process: loaded from the driver's path, data beside it
    if spec is not None and spec.origin and spec.submodule_search_locations is None:
        _shipped_data(Path(spec.origin).resolve(), code.sha256)


def worker_load(code: CodeRef) -> Any:
    """Worker side: import the module (shipped code: by name, from the copy
    Ray put on ``sys.path``; otherwise as the driver did), check that the
    source imported has the digest the driver resolved -- so a node with
    another installed version, or an edited file, fails loudly instead of
    running other code -- and return the attribute."""
    top = code.module.split(".")[0]
    obj: Any = None
    if code.shipped and top not in _FINDER.roots:
        _find_shipped_data(code)  # before the import: a module may read its data files as it loads
        try:
            obj = importlib.import_module(code.module)
        except ImportError:
            obj = None  # not shipped to this process (an in-process call): loaded from the driver's path below
        else:
            _WORKER_ROOTS[str(_imported_root(top))] = code.root
            for part in code.attr.split("."):
                obj = getattr(obj, part)
    if obj is None:
        obj = code.load()
    found = _imported_root(top)
    if (str(found), code.sha256) in _VERIFIED:
        return obj
    digest = source_digest(found, _shipped_data(found, code.sha256))
    if digest == code.sha256:
        _VERIFIED.add((str(found), code.sha256))
    else:
        raise RuntimeError(
            f"{code.ref}: the code on this worker ({found}, sha256 {digest[:12]}) is not the "
            f"code the driver resolved (sha256 {code.sha256[:12]})"
        )
    return obj


def user_frames_traceback(err: BaseException, *, fallback: bool = True) -> str:
    """The traceback of an exception raised inside user code, keeping only the
    frames outside schedlab's own package (the user's bug, the user's lines)
    and the exception line. With no frame outside: all frames
    (``fallback``), or "" (``fallback=False``: an engine's own refusal, e.g.
    a policy that stalls, whose message says it all)."""
    import traceback

    package = str(Path(__file__).resolve().parent)
    frames = traceback.extract_tb(err.__traceback__)
    mine = [f for f in frames if not str(Path(f.filename).resolve()).startswith(package + "/")]
    if not mine and not fallback:
        return ""
    shown = mine or frames
    lines = [
        "Traceback (most recent call last):\n",
        *traceback.format_list(shown),
        *traceback.format_exception_only(type(err), err),
    ]
    text = "".join(lines).rstrip()
    for shipped, origin in _WORKER_ROOTS.items():  # name the user's own files, not Ray's copies
        text = text.replace(shipped, origin)
    return text


__all__ = [
    "CodeRef",
    "code_form",
    "data_file",
    "declared_data",
    "file_digest",
    "is_reference",
    "resolve",
    "ship_paths",
    "source_digest",
    "user_frames_traceback",
    "worker_load",
]
