"""A trained network as a batch policy: the base class of an exported agent
(``schedlab.gym.train.export`` writes ``agent.py``, a subclass holding its
weights).

:class:`MLPAgent` is a priority policy (``schedlab.engines.batch.policies.priority``)
whose head is chosen by the network, exactly where ``schedlab/Batch-v0``
asks its agent: it builds the environment's observation with
:func:`schedlab.gym.features.batch_observation` from what a batch policy may
read (submit, requested, need, free units; never runtimes) and takes the
slot of the largest logit among the filled ones (the first on ties). The
forward pass is numpy (Linear + tanh layers, then the action layer:
Stable-Baselines3's default MLP policy), so a sweep needs neither torch nor
Stable-Baselines3, and the weights are part of the exported file: hashed
and shipped with the code (``schedlab.usercode``).
"""

from __future__ import annotations

import base64
import io
from typing import Any, ClassVar

import numpy as np

from schedlab.engines.batch.policies.priority import PriorityPolicy
from schedlab.gym.features import batch_observation


def decode(weights: str) -> list[tuple[np.ndarray, np.ndarray]]:
    """(W, b) per layer from the base64 text of an ``.npz`` holding W0, b0, W1, b1, ..."""
    with np.load(io.BytesIO(base64.b64decode(weights))) as z:
        n = len(z.files) // 2
        return [(z[f"W{i}"].astype(np.float32), z[f"b{i}"].astype(np.float32)) for i in range(n)]


def encode(layers: list[tuple[np.ndarray, np.ndarray]]) -> str:
    buf = io.BytesIO()
    arrays: dict[str, Any] = {}
    for i, (w, b) in enumerate(layers):
        arrays[f"W{i}"], arrays[f"b{i}"] = np.asarray(w, np.float32), np.asarray(b, np.float32)
    np.savez_compressed(buf, **arrays)
    return base64.b64encode(buf.getvalue()).decode()


def logits(layers: list[tuple[np.ndarray, np.ndarray]], obs: np.ndarray) -> np.ndarray:
    """tanh hidden layers, a linear last layer."""
    h = obs.astype(np.float32)
    for w, b in layers[:-1]:
        h = np.tanh(h @ w.T + b)
    w, b = layers[-1]
    out: np.ndarray = h @ w.T + b
    return out


class MLPAgent(PriorityPolicy):
    """Subclasses set ``weights`` (:func:`encode`), ``window``,
    ``runtime_scale`` (the training source's scale of requested times) and
    ``backfill``."""

    name = "agent"
    weights: ClassVar[str] = ""
    window: ClassVar[int] = 128
    runtime_scale: ClassVar[float] = 1.0
    _cache: ClassVar[dict[str, list[tuple[np.ndarray, np.ndarray]]]] = {}

    def __init__(self, machine: Any) -> None:
        super().__init__(machine)
        m = self.machine
        self._submit = np.asarray(m.submit, dtype=float)
        self._requested = np.asarray(m.requested, dtype=float)
        self._need = np.asarray(m.need, dtype=np.int64)
        key = self.weights
        if key not in MLPAgent._cache:
            MLPAgent._cache[key] = decode(key)
        self._layers = MLPAgent._cache[key]

    def choose(self, now: float) -> int:
        jobs = []
        for job in self.queue:
            jobs.append(job)
            if len(jobs) == self.window:
                break
        obs = batch_observation(
            jobs,
            len(self.queue),
            now,
            self._submit,
            self._requested,
            self._need,
            self.free,
            self.machine.capacity,
            self.runtime_scale,
            self.window,
        )
        out = logits(self._layers, obs)[: len(jobs)]
        return jobs[int(np.argmax(out))]
