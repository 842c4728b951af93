"""The pipelines, by name: every ``<stem>.toml`` of this folder, with the
module ``<stem>.py`` for its code if there is one (`declare.Declared`).
Adding a figure is adding its TOML file (and, for code of its own, its module)."""

from __future__ import annotations

import importlib
from pathlib import Path

from schedlab.errors import UserError
from schedlab.pipelines.declare import Declared

HERE = Path(__file__).parent


def _declared() -> dict[str, Declared]:
    found = {}
    for path in sorted(HERE.glob("*.toml")):
        module = importlib.import_module(f"{__package__}.{path.stem}") if path.with_suffix(".py").exists() else None
        declared = Declared(path, module)
        found[declared.name] = declared
    return found


#: the pipelines, by name (each one's data: `Declared.doc`)
PIPELINES: dict[str, Declared] = _declared()


def get_pipeline(name: str) -> Declared:
    if name not in PIPELINES:
        raise UserError(f"unknown pipeline {name!r}; pipelines: {', '.join(sorted(PIPELINES))}")
    return PIPELINES[name]
