"""Packing-engine policies, by registry name (the names of Psychas & Ghaderi)."""

from __future__ import annotations

from schedlab.engines.packing.policies.base import PackingPolicy
from schedlab.engines.packing.policies.best_fit import BFJ, BFJS, BFS
from schedlab.engines.packing.policies.fifo_ff import FIFOFF
from schedlab.engines.packing.policies.tetris import SlotsFair, Tetris
from schedlab.engines.packing.policies.vqs import VQS, VQSBF

PACKING_POLICIES: dict[str, type[PackingPolicy]] = {
    cls.name: cls for cls in (BFJ, BFS, BFJS, FIFOFF, VQS, VQSBF, Tetris, SlotsFair)
}

__all__ = ["PACKING_POLICIES", "PackingPolicy"]
