"""Batch-engine policies (rigid parallel jobs), by registry name."""

from __future__ import annotations

from schedlab.policies.batch.base import BatchPolicy
from schedlab.policies.batch.easy import EASY
from schedlab.policies.batch.fcfs import FCFS

BATCH_POLICIES: dict[str, type[BatchPolicy]] = {cls.name: cls for cls in (FCFS, EASY)}

__all__ = ["BATCH_POLICIES", "BatchPolicy", "EASY", "FCFS"]
