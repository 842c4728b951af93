"""The pipelines, by name: every ``<stem>.toml`` of this folder (with the
module ``<stem>.py`` for its code, if there is one; `declare`), and the
pipelines written wholly in code (`CODE_ONLY`, each a module's ``PIPELINE``).
Adding a figure is adding its TOML file (and, for code of its own, its module)."""

from __future__ import annotations

import importlib
from pathlib import Path

from schedlab.errors import UserError
from schedlab.pipelines.base import Pipeline
from schedlab.pipelines.declare import Declared

#: modules whose pipeline is written in code, without a TOML file
CODE_ONLY: tuple[str, ...] = ()
HERE = Path(__file__).parent


def _declared() -> dict[str, Declared]:
    found = {}
    for path in sorted(HERE.glob("*.toml")):
        module = importlib.import_module(f"{__package__}.{path.stem}") if path.with_suffix(".py").exists() else None
        declared = Declared(path, module)
        found[declared.doc["name"]] = declared
    return found


#: the pipelines declared in TOML, by name (their data: `Declared.doc`)
DECLARED: dict[str, Declared] = _declared()
PIPELINES: dict[str, Pipeline] = {
    **{name: d.pipeline() for name, d in DECLARED.items()},
    **{(p := importlib.import_module(f"{__package__}.{m}").PIPELINE).name: p for m in CODE_ONLY},
}


def get_pipeline(name: str) -> Pipeline:
    if name not in PIPELINES:
        raise UserError(f"unknown pipeline {name!r}; pipelines: {', '.join(sorted(PIPELINES))}")
    return PIPELINES[name]
