"""Queue-engine policies, by registry name (the names the paper uses)."""

from __future__ import annotations

from schedlab.policies.queue.base import QueuePolicy
from schedlab.policies.queue.basic import FIFO, GPS, PS
from schedlab.policies.queue.fsp import FSP, FSPE, PSBS, FSPEPlusLAS, FSPEPlusPS
from schedlab.policies.queue.las import LAS
from schedlab.policies.queue.srpt import SRPT, SRPTE, SRPTEPlusLAS, SRPTEPlusPS

QUEUE_POLICIES: dict[str, type[QueuePolicy]] = {
    cls.name: cls
    for cls in (FIFO, PS, GPS, LAS, SRPT, SRPTE, SRPTEPlusPS, SRPTEPlusLAS, FSP, FSPE, FSPEPlusPS, FSPEPlusLAS, PSBS)
}

__all__ = ["QUEUE_POLICIES", "QueuePolicy"]
