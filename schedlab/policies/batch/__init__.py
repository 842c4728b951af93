"""Batch-engine policies (rigid parallel jobs), by registry name."""

from __future__ import annotations

from schedlab.policies.batch.base import BatchPolicy
from schedlab.policies.batch.easy import EASY
from schedlab.policies.batch.fcfs import FCFS
from schedlab.policies.batch.priority import PRIORITY_POLICIES, PriorityPolicy

_BUILTINS: tuple[type[BatchPolicy], ...] = (FCFS, EASY, *PRIORITY_POLICIES)
BATCH_POLICIES: dict[str, type[BatchPolicy]] = {cls.name: cls for cls in _BUILTINS}

__all__ = ["BATCH_POLICIES", "BatchPolicy", "EASY", "FCFS", "PriorityPolicy"]
