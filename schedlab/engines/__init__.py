"""The engine registry: the one seam between the platform/CLI and the simulators.

An engine turns (job table, policy, params, [system]) into per-job rows and a
summary of metrics (``Engine.run`` -> ``RunResult``). The registry is a table
of names: each entry names the module (in this package) whose ``ENGINE``
declares the engine -- its policies, seam, ``[system]`` schema, sources and
adapter. Adding an engine is one new module and one line below. The CLI and
the sweep platform only ever go through :func:`get_engine`; they never reach
into an engine's internals. The simulators themselves are imported only when
a run needs them, so listing engines stays light.
"""

from __future__ import annotations

import importlib

from schedlab.engines.base import ENGINE_PATHS, Engine, LazyPolicies, RunResult
from schedlab.errors import UserError

#: Engine name -> the module declaring its ``ENGINE``.
ENGINE_MODULES: dict[str, str] = {
    "queue": "schedlab.engines.queue",
    "packing": "schedlab.engines.packing",
    "batch": "schedlab.engines.batch",
    "dfrs": "schedlab.engines.dfrs",
}

ENGINES: dict[str, Engine] = {name: importlib.import_module(module).ENGINE for name, module in ENGINE_MODULES.items()}


def get_engine(name: str) -> Engine:
    try:
        return ENGINES[name]
    except KeyError:
        raise UserError(f"unknown engine {name!r}; choose from: {', '.join(ENGINES)}") from None


__all__ = ["ENGINES", "ENGINE_MODULES", "ENGINE_PATHS", "Engine", "LazyPolicies", "RunResult", "get_engine"]
