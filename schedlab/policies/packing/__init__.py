"""Packing-engine policies, by registry name (the names of Psychas & Ghaderi)."""

from __future__ import annotations

from schedlab.policies.packing.base import PackingPolicy
from schedlab.policies.packing.best_fit import BFJ, BFJS, BFS
from schedlab.policies.packing.fifo_ff import FIFOFF
from schedlab.policies.packing.tetris import SlotsFair, Tetris
from schedlab.policies.packing.vqs import VQS, VQSBF

PACKING_POLICIES: dict[str, type[PackingPolicy]] = {
    cls.name: cls for cls in (BFJ, BFS, BFJS, FIFOFF, VQS, VQSBF, Tetris, SlotsFair)
}

__all__ = ["PACKING_POLICIES", "PackingPolicy"]
