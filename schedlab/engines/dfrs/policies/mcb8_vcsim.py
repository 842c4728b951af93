"""MCB8 with the authors' simulator's rules (``[system] mcb8_rules = "vcsim"``; docs/dfrs.md rows 11-12).

The paper (§4.3) describes MCB8 as Leinberger et al.'s two-list heuristic
under "a binary search on the yield"; its secondary sort keys, its ties and
its search are unspecified. schedlab's own reading is ``mcb8.mcb8``. The
authors' simulator (marklee77/vcsim, ``sim.py``; read, never copied, and run
on a shared trace: ``benchmarks/vcsim_compare.py``) makes other choices, and
on that trace they decide which jobs a periodic remap moves, hence which pay
the migration penalty. This module re-states those choices from their
description, in integer percent as that simulator computes:

* CPU need and memory per task in integer percent of a node,
  ``round(100 x)``; at trial yield Y a task's CPU requirement is
  ``max(1, floor(Y x need))`` percent.
* Before any search, the lowest-priority jobs are dropped until the jobs'
  *total* memory fits the cluster (``sum tasks x mem <= 100 x nodes``).
* The search bisects the real interval (0, 1): Y = (lo + hi) / 2 while
  ``hi - lo > 0.01`` (7 midpoints, never Y = 1); a packing that succeeds
  raises ``lo`` and is kept, one that fails lowers ``hi``. If no midpoint
  packs, the lowest-priority job is dropped and the search starts again.
* Packing at Y: a job is CPU-heavy when its CPU requirement exceeds its
  memory (strictly). The CPU list is sorted by (CPU requirement, memory,
  job id) descending, the memory list by (memory, CPU requirement, job id)
  descending -- so among equal jobs the *larger id* (the later submission)
  comes first. Nodes are filled in index order; a node takes from the CPU
  list when its CPU load is at most its memory load (and the CPU list has
  jobs left to try), else from the memory list, the first job in list order
  whose next task fits; a job may put several tasks on one node; a node is
  left when neither list has a task that fits. Pinned jobs (MINVT / MINFT)
  are put on their nodes first (and fail Y if their CPU overfills a node).
  There is no early failure on an empty node.

Lowest priority = the largest ``priority`` value's opposite, ties by the
larger job id, as ``mcb8.mcb8``. Returns an ``MCB8Result`` like ``mcb8.mcb8``
(``yield_`` = the last successful midpoint, or 1.0 with nothing left).
Pure Python: the option is for comparisons, not the paper-scale default.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from schedlab.engines.dfrs.policies.mcb8 import MCB8Result

SEARCH_WIDTH = 0.01  # the bisection stops when hi - lo <= this (vcsim's precision)

__all__ = ["SEARCH_WIDTH", "mcb8_vcsim", "pack_vcsim"]


def pack_vcsim(
    jobs: Sequence[tuple[Any, int, int, int]],
    nodes: int,
    pinned: Mapping[Any, Sequence[int]] | None = None,
) -> dict[Any, list[int]] | None:
    """Pack ``jobs`` = (job id, tasks, CPU requirement %, memory %) on
    ``nodes`` nodes of 100 % each (rules in the module docstring); pinned jobs
    keep their nodes. Returns job id -> node of each task, or None."""
    pinned = pinned or {}
    cpu_load = [0] * nodes
    mem_load = [0] * nodes
    mapping: dict[Any, list[int]] = {}
    free_jobs = []
    for job_id, tasks, cpu, mem in jobs:
        if job_id in pinned:
            for k in pinned[job_id]:
                cpu_load[k] += cpu
                mem_load[k] += mem
            mapping[job_id] = list(pinned[job_id])
        else:
            free_jobs.append([job_id, tasks, cpu, mem])
    if max(cpu_load, default=0) > 100:
        return None
    cpu_list = sorted((j for j in free_jobs if j[2] > j[3]), key=lambda j: (j[2], j[3], j[0]), reverse=True)
    mem_list = sorted((j for j in free_jobs if j[2] <= j[3]), key=lambda j: (j[3], j[2], j[0]), reverse=True)
    for j in free_jobs:
        mapping[j[0]] = []
    lists = (cpu_list, mem_list)
    for k in range(nodes):
        if not cpu_list and not mem_list:
            break
        idx = [0, 0]
        while idx[0] < len(cpu_list) or idx[1] < len(mem_list):
            kind = 0 if (cpu_load[k] <= mem_load[k] and idx[0] < len(cpu_list)) or idx[1] >= len(mem_list) else 1
            lst, i = lists[kind], idx[kind]
            while i < len(lst):  # the first job in list order whose next task fits node k
                job_id, left, cpu, mem = lst[i]
                if cpu_load[k] + cpu <= 100 and mem_load[k] + mem <= 100:
                    cpu_load[k] += cpu
                    mem_load[k] += mem
                    mapping[job_id].append(k)
                    if left == 1:
                        del lst[i]
                    else:
                        lst[i][1] = left - 1
                    break
                i += 1
            idx[kind] = i
    if cpu_list or mem_list:
        return None
    return mapping


def mcb8_vcsim(
    jobs: Iterable[tuple[Any, int, float, float, float]],
    nodes: int,
    pinned: Mapping[Any, Sequence[int]] | None = None,
) -> MCB8Result[Any]:
    """The search and job dropping of the module docstring over ``jobs`` =
    (job id, tasks, need, mem, priority) (need and mem as fractions of a node)."""
    table = sorted(jobs, key=lambda j: j[0])
    table.sort(key=lambda j: -j[4])  # highest priority first; ties: smaller id first; the last is dropped first
    kept = [(j[0], int(j[1]), int(round(100 * j[2])), int(round(100 * j[3]))) for j in table]
    pinned = pinned or {}
    dropped: list[Any] = []
    total_mem = sum(tasks * mem for _, tasks, _, mem in kept)
    while kept and total_mem > 100 * nodes:
        job_id, tasks, _, mem = kept.pop()
        dropped.append(job_id)
        total_mem -= tasks * mem
    while kept:
        ids = {r[0] for r in kept}
        kept_pins = {j: nodes_ for j, nodes_ in pinned.items() if j in ids}
        lo, hi = 0.0, 1.0
        best: dict[Any, list[int]] | None = None
        while hi - lo > SEARCH_WIDTH:
            y = (lo + hi) / 2.0
            trial = [(job_id, tasks, max(1, int(y * need)), mem) for job_id, tasks, need, mem in kept]
            packed = pack_vcsim(trial, nodes, kept_pins)
            if packed is None:
                hi = y
            else:
                best, lo = packed, y
        if best is not None:
            return MCB8Result(lo, best, dropped)
        dropped.append(kept.pop()[0])
    return MCB8Result(1.0, {}, dropped)
