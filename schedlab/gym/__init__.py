"""Gymnasium environments over schedlab's engines (``pip install 'schedlab[rl]'``).

``import schedlab.gym`` registers, for every engine that declares a decision
point (``Engine.decision_point``: its environment class), ``schedlab/<Name>-v0``:
``schedlab/Batch-v0`` (:mod:`schedlab.engines.batch.gym`, with its own vector
environment: ``Engine.vector_decision_point``), ``schedlab/Packing-v0``
(:mod:`schedlab.engines.packing.gym`) and ``schedlab/Queue-v0``
(:mod:`schedlab.engines.queue.gym`) with Gymnasium; ``gymnasium.make(...)`` and
``gymnasium.make_vec(...)`` then build them. Your own engine's environment is registered by :func:`register`.
docs/gym.md describes each environment's observations, actions, rewards and
episodes.
"""

from __future__ import annotations

from typing import Any

import gymnasium

from schedlab.engines import ENGINES, Engine


def env_id(engine: Engine) -> str:
    """The Gymnasium id of ``engine``'s environment: ``schedlab/<Name>-v0``."""
    return f"schedlab/{engine.name.capitalize()}-v0"


def register(engine: Engine) -> str:
    """Register ``engine``'s environment (``Engine.decision_point``: a class or
    "module:Class") with Gymnasium, once; its id."""
    entry: Any = engine.decision_point
    if entry is None:
        raise ValueError(f"engine {engine.name!r} declares no decision point (Engine.decision_point)")
    if env_id(engine) not in gymnasium.registry:
        gymnasium.register(id=env_id(engine), entry_point=entry, vector_entry_point=engine.vector_decision_point)
    return env_id(engine)


#: Gymnasium id -> environment entry point, of the built-in engines.
ENVIRONMENTS = {env_id(e): e.decision_point for e in ENGINES.values() if e.decision_point is not None}

for _engine in ENGINES.values():
    if _engine.decision_point is not None:
        register(_engine)

__all__ = ["ENVIRONMENTS", "env_id", "register"]
