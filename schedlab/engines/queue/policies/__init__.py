"""Queue-engine policies, by registry name (the names the paper uses)."""

from __future__ import annotations

from schedlab.engines.queue.policies.base import QueuePolicy
from schedlab.engines.queue.policies.basic import FIFO, GPS, PS
from schedlab.engines.queue.policies.fsp import FSP, FSPE, PSBS, FSPEPlusLAS, FSPEPlusPS
from schedlab.engines.queue.policies.las import LAS
from schedlab.engines.queue.policies.srpt import SRPT, SRPTE, SRPTEPlusLAS, SRPTEPlusPS

QUEUE_POLICIES: dict[str, type[QueuePolicy]] = {
    cls.name: cls
    for cls in (FIFO, PS, GPS, LAS, SRPT, SRPTE, SRPTEPlusPS, SRPTEPlusLAS, FSP, FSPE, FSPEPlusPS, FSPEPlusLAS, PSBS)
}

__all__ = ["QUEUE_POLICIES", "QueuePolicy"]
