"""The engine registry: the one seam between the platform/CLI and the simulators.

An engine turns (job table, policy, params, [system]) into per-job rows and a
summary of metrics (``Engine.run`` -> ``RunResult``). The registry is a table
of names: each entry names the module (in this package) whose ``ENGINE``
declares the engine -- its policies, seam, ``[system]`` schema, job table,
metrics and units, headline metrics, sources and adapter, and by reference
its invariants (check-policy), schedule recorder (view), Gymnasium
environment and compiled kernels. Adding an engine is one new module and
one line below; nothing outside an engine keys a table by its name
(tests/test_engine_registry.py). A researcher's own engine
(``engine = "my_engine.py:MyEngine"``, ``schedlab.engines.user``) is the same
``Engine`` declaration, found by name once loaded. The CLI and the sweep
platform only ever go through :func:`get_engine`; they never reach into an
engine's internals. The simulators themselves are imported only when a run
needs them, so listing engines stays light.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from schedlab.engines.base import ENGINE_PATHS, Engine, LazyPolicies, RunResult
from schedlab.engines.user import LOADED
from schedlab.errors import UserError

if TYPE_CHECKING:
    from pathlib import Path

    from schedlab.usercode import CodeRef

#: Engine name -> the module declaring its ``ENGINE``.
ENGINE_MODULES: dict[str, str] = {
    "queue": "schedlab.engines.queue",
    "packing": "schedlab.engines.packing",
    "batch": "schedlab.engines.batch",
    "dfrs": "schedlab.engines.dfrs",
}

ENGINES: dict[str, Engine] = {name: importlib.import_module(module).ENGINE for name, module in ENGINE_MODULES.items()}


def get_engine(name: str | CodeRef) -> Engine:
    """A built-in engine or a user's engine loaded in this process, by name;
    or a user's engine by its code reference (imported, digest-checked and
    registered: what a worker does with the plan's ``engine`` code)."""
    if not isinstance(name, str):
        from schedlab.engines import user

        return user.load(name, frozenset(ENGINES))
    found = ENGINES.get(name) or LOADED.get(name)
    if found is None:
        raise UserError(
            f"unknown engine {name!r}; choose from: {', '.join(ENGINES)} "
            f'(or your own with engine = "my_engine.py:MyEngine")'
        )
    return found


def spec_engine(ref: str, base_dir: str | Path, where: str) -> tuple[Engine, CodeRef | None]:
    """A spec's ``engine``: a built-in's name, or a reference to your own
    (``"my_engine.py:MyEngine"``, relative to ``base_dir``) with its code."""
    from schedlab.usercode import is_reference

    if is_reference(ref):
        from schedlab.engines import user

        return user.resolve(ref, base_dir, where, frozenset(ENGINES))
    return get_engine(ref), None


def known_engines() -> dict[str, Engine]:
    """The built-in engines and the users' engines loaded in this process, by name."""
    return {**ENGINES, **LOADED}


__all__ = [
    "ENGINES",
    "ENGINE_MODULES",
    "ENGINE_PATHS",
    "Engine",
    "LazyPolicies",
    "RunResult",
    "get_engine",
    "known_engines",
    "spec_engine",
]
