"""Batch-engine policies (rigid parallel jobs), by registry name."""

from __future__ import annotations

from schedlab.engines.batch.policies.base import BatchPolicy
from schedlab.engines.batch.policies.easy import EASY
from schedlab.engines.batch.policies.fcfs import FCFS
from schedlab.engines.batch.policies.priority import PRIORITY_POLICIES, PriorityPolicy

_BUILTINS: tuple[type[BatchPolicy], ...] = (FCFS, EASY, *PRIORITY_POLICIES)
BATCH_POLICIES: dict[str, type[BatchPolicy]] = {cls.name: cls for cls in _BUILTINS}

__all__ = ["BATCH_POLICIES", "BatchPolicy", "EASY", "FCFS", "PriorityPolicy"]
