"""MemPack*: Greedy* with a different node choice, for the DFRS engine.

The built-in Greedy (Stillwell, Vivien & Casanova 2012, §4.2) puts each task
on the node with the lowest CPU load: it balances CPU, and spreads every job
over many nodes. MemPack puts the tasks on the nodes with the *least* free
memory that still hold a task (best fit on memory; ties: lower CPU load,
then lower node index), each node filled up to its memory before the next.
It keeps whole nodes empty for wide or memory-hungry jobs, at the price of
more CPU sharing (lower yields) on the packed nodes -- a trade-off the
sweep in ``examples/dfrs.toml`` measures against Greedy*.

Like Greedy* (the '*'): all or nothing on arrival (a job whose tasks do not
all fit stays pending), and at each completion instant the pending jobs are
tried again, highest priority first (the engine's §4.1 priority:
``state.by_priority``). No pausing, no migration.

Cost: O(N log N) per placement attempt (N nodes: one sort of the nodes
with room); the completion pass tries every pending job once.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from schedlab.api import dfrs

#: The engine's memory tolerance: a node with free memory >= m - MEM_TOL holds a task of memory m.
MEM_TOL = 1e-9


def mem_pack(free_mem: np.ndarray, load: np.ndarray, tasks: int, mem: float) -> list[int] | None:
    """Nodes for ``tasks`` tasks of memory ``mem``: fullest nodes first, each
    filled to its memory; None if they cannot all fit. Pure function."""
    slots = np.floor((free_mem + MEM_TOL) / mem).astype(np.int64)
    if int(slots.sum()) < tasks:
        return None
    room = np.flatnonzero(slots > 0)
    order = sorted(room.tolist(), key=lambda k: (float(free_mem[k]), float(load[k]), k))
    out: list[int] = []
    for k in order:
        take = min(int(slots[k]), tasks - len(out))
        out += [k] * take
        if len(out) == tasks:
            break
    return out


class MemPackStar(dfrs.Policy):
    """Best fit on memory on arrival; pending jobs retried at completions."""

    name = "MemPack*"
    summary = "DFRS: tasks on the fullest nodes that fit (best fit on memory), retried on completion"

    def __init__(self, *, opt: Literal["MIN", "AVG"] = "MIN") -> None:
        if opt not in ("MIN", "AVG"):  # the spec's check covers sweeps; this covers Python callers
            raise ValueError(f"opt must be 'MIN' or 'AVG'; got {opt!r}")
        self.opt = opt

    def _try(self, state: dfrs.State, job: int) -> None:
        nodes = mem_pack(state.free_mem, state.load, state.tasks[job], state.mem[job])
        if nodes is not None:
            state.apply(places={job: nodes})

    def on_arrival(self, state: dfrs.State, job: int) -> None:
        self._try(state, job)

    def on_completion(self, state: dfrs.State) -> None:
        for job in state.by_priority(state.pending):
            self._try(state, job)
