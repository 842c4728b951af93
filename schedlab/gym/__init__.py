"""Gymnasium environments over schedlab's engines (``pip install 'schedlab[rl]'``).

``import schedlab.gym`` registers ``schedlab/Batch-v0`` (:mod:`schedlab.engines.batch.gym`),
``schedlab/Packing-v0`` (:mod:`schedlab.engines.packing.gym`) and ``schedlab/Queue-v0``
(:mod:`schedlab.engines.queue.gym`) with Gymnasium; ``gymnasium.make(...)`` and
``gymnasium.make_vec(...)`` then build them. docs/gym.md describes each
environment's observations, actions, rewards and episodes.
"""

from __future__ import annotations

import gymnasium

ENVIRONMENTS = {
    "schedlab/Batch-v0": "schedlab.engines.batch.gym:BatchEnv",
    "schedlab/Packing-v0": "schedlab.engines.packing.gym:PackingEnv",
    "schedlab/Queue-v0": "schedlab.engines.queue.gym:QueueEnv",
}

#: Environments with their own vector environment (``gymnasium.make_vec`` uses it
#: unless given ``vectorization_mode="sync"`` or ``"async"``).
VECTOR_ENVIRONMENTS = {"schedlab/Batch-v0": "schedlab.engines.batch.gym:BatchVectorEnv"}

for _id, _entry in ENVIRONMENTS.items():
    if _id not in gymnasium.registry:
        gymnasium.register(id=_id, entry_point=_entry, vector_entry_point=VECTOR_ENVIRONMENTS.get(_id))

__all__ = ["ENVIRONMENTS", "VECTOR_ENVIRONMENTS"]
