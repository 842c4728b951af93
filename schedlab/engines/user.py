"""A researcher's own engine, named in a spec the way a policy is:
``engine = "my_engine.py:MyEngine"`` (or ``"module:Name"``), the name of an
:class:`~schedlab.engines.base.Engine` declared in that file -- the same
declaration class the four built-in engines use.

The reference is resolved, hashed and shipped by ``schedlab.usercode``
exactly like ``use = ...``: the plan keeps its :class:`CodeRef` (spec field
``engine``), its digest enters every configuration id (``engine_code``) and
the rows' ``schedlab_digest``, and Ray or pool workers import the shipped
file by name and check its digest before running it (``load``). Once loaded
in a process the engine is found by its declared name like a built-in one
(``schedlab.engines.get_engine``), so the views, figures and tracking that
read an engine name from the rows find its declarations too.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from schedlab.engines.base import Engine
from schedlab.errors import UserError

if TYPE_CHECKING:
    from schedlab.usercode import CodeRef

#: Engines loaded from user code in this process, by declared name.
LOADED: dict[str, Engine] = {}


def resolve(
    ref: str, base_dir: str | Path, where: str, builtin: frozenset[str] = frozenset()
) -> tuple[Engine, CodeRef]:
    """Driver side (validate / plan): the engine ``ref`` names and its code
    reference; a UserError naming ``where`` when it is not an ``Engine`` or
    takes a built-in engine's name."""
    from schedlab.usercode import resolve as resolve_code

    code = resolve_code(ref, base_dir, where)
    return check(code.load(), code, where, builtin), code


def load(code: CodeRef, builtin: frozenset[str] = frozenset()) -> Engine:
    """Worker side: the shipped engine, imported and checked against its digest."""
    from schedlab.usercode import worker_load

    return check(worker_load(code), code, f"engine {code.ref}", builtin)


def check(obj: Any, code: CodeRef, where: str, builtin: frozenset[str]) -> Engine:
    if not isinstance(obj, Engine):
        raise UserError(
            f"{where}: {code.attr} is a {type(obj).__name__}, not an engine: declare it as "
            f"{code.attr} = schedlab.api.engine.Engine(name=..., adapter=..., ...)"
        )
    if obj.name in builtin:
        raise UserError(f"{where}: {code.attr} is named {obj.name!r}, a built-in engine's name; choose another")
    user = replace(obj, code_sha256=code.sha256)
    LOADED[obj.name] = user
    return user


__all__ = ["LOADED", "check", "load", "resolve"]
