"""Batch-v0's observation: the batch engine's decision point as numbers, built
from what a batch policy may read (submit, requested, need, free units; never
runtimes). The environment (``gym.py``, its compiled ``gym_kernel.py``) and an
exported agent (``schedlab.api.agent.MLPAgent``, numpy only) build it with the
same function, so an agent sees in a sweep what it saw in training."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

JOB_FEATURES = 5
MACHINE_FEATURES = 2
#: Waits are scaled by 12 h (RLScheduler's MAX_WAIT_TIME) and clipped at 1.
WAIT_SCALE = 12 * 3600.0


def size(window: int) -> int:
    """Length of the observation for ``window`` slots."""
    return window * JOB_FEATURES + MACHINE_FEATURES


def batch_observation(
    jobs: Sequence[int],
    waiting: int,
    now: float,
    submit: np.ndarray,
    requested: np.ndarray,
    need: np.ndarray,
    free: int,
    nodes: int,
    runtime_scale: float,
    window: int,
) -> np.ndarray:
    """Slots (``jobs``: the first ``window`` waiting jobs, oldest first):
    present, wait / WAIT_SCALE (at most 1), requested / ``runtime_scale`` (at
    most 1), need / nodes, fits in ``free``; then free / nodes and the
    ``waiting`` jobs beyond the window / window (at most 1). float32."""
    obs = np.zeros(size(window), dtype=np.float32)
    k = len(jobs)
    if k:
        j = np.asarray(jobs)
        f = obs[: window * JOB_FEATURES].reshape(window, JOB_FEATURES)
        f[:k, 0] = 1.0
        f[:k, 1] = np.minimum((now - submit[j]) / WAIT_SCALE, 1.0)
        f[:k, 2] = np.minimum(requested[j] / runtime_scale, 1.0)
        f[:k, 3] = need[j] / nodes
        f[:k, 4] = need[j] <= free
        obs[-2] = free / nodes
        obs[-1] = min((waiting - k) / window, 1.0)
    return obs
