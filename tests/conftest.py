"""Shared test helpers."""

import numpy as np
import pytest

from schedlab.policies.queue import QUEUE_POLICIES
from schedlab.sim.queue import simulate


def run(policy: str, submit, size, estimate=None, weight=None) -> np.ndarray:
    """Completion times of ``policy`` on the given arrays."""
    submit = np.asarray(submit, dtype=float)
    size = np.asarray(size, dtype=float)
    estimate = size if estimate is None else np.asarray(estimate, dtype=float)
    weight = np.ones_like(size) if weight is None else np.asarray(weight, dtype=float)
    completion, _ = simulate(submit, size, estimate, weight, QUEUE_POLICIES[policy])
    return completion


@pytest.fixture
def run_policy():
    return run
