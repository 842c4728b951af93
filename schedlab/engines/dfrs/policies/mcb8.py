"""MCB8: task mapping as two-dimensional vector packing (dfrs-vs-batch-scheduling §4.3).

Model: ``nodes`` identical nodes, capacity 1 in CPU and 1 in memory. A job has
``tasks`` identical tasks, each with a CPU *need* (the fraction of a node it
would use at full speed) and a memory requirement ``mem``. For a yield ``Y``
every task's CPU *requirement* is ``Y * need``; its memory requirement stays
``mem``. A mapping is valid when, on every node, the CPU requirements and the
memory requirements each sum to at most 1 (up to ``FIT_TOL``).

``pack`` -- the MCB8 fill for fixed requirements (Leinberger et al.'s
multi-capacity bin packing, two dimensions; RR-7659 §3.1):

1. Task ``i`` is *CPU-heavy* when ``cpu[i] > mem[i]`` (strictly) and
   *memory-heavy* otherwise (ties, including ``0 == 0``, go to the memory
   list). Each list is sorted by the task's larger dimension
   (``max(cpu, mem)``), descending, with a stable sort: equal keys keep task
   index order.
2. Nodes are filled one at a time, node 0 first; a node is never revisited.
   While the current node has load ``(c, m)``: the *preferred* list is the
   CPU list when ``c <= m`` (so an empty node starts from the CPU list) and
   the memory list otherwise. The preferred list is scanned in list order and
   the **first task that fits** (``c + cpu <= 1 + FIT_TOL`` and
   ``m + mem <= 1 + FIT_TOL``) is placed -- it is a scan, not "look at the
   head only". If no task of the preferred list fits (in particular when the
   list is exhausted), the other list is scanned the same way. If no task of
   either list fits, the node is closed and the next node is opened.
3. Success when both lists are empty; failure (``None``) when the nodes run
   out, or as soon as a node is closed empty (no remaining task fits an empty
   node, so none will fit a later one).

Cost (the reference's list scans): O(T log T) for the sorts plus one list
scan per placement and per closed node, O(T · (T + N)) worst case for T tasks
on N nodes, O(T) memory. Implementation: compiled (numba,
``schedlab.engines.dfrs.policies.mcb8_fast``), the first fitting task found by a
binary search and a min-tree instead of the scan -- the same task, so the same
packing -- in O((T + N) log T) per pack.

``mcb8`` -- the yield search and the job dropping:

* The active jobs' tasks are laid out job by job in priority order (highest
  first; ties by job id ascending), each job's tasks consecutively; this
  fixes the task indices, hence ``pack``'s stable tie-breaking.
* Feasibility at ``Y = 0`` (CPU requirements all zero: memory alone) is
  tested first. If it fails, the lowest-priority active job is dropped (all
  its tasks) and the search restarts; among equal priorities the job with the
  **largest job id** is dropped first (the paper breaks priority ties by
  submission order, and job ids are taken to increase with submission).
* Otherwise ``Y`` is binary-searched on the grid ``k / K``, ``k = 0..K``,
  ``K = ceil(1 / precision)`` (grid step <= ``precision``): the invariant is
  "``lo`` packs, ``hi`` does not (``hi = K + 1`` stands for 'above 1')", and
  the search stops when ``hi - lo == 1``. The result is the grid yield
  ``lo / K`` and its packing. ``pack`` is a heuristic and is not monotone in
  ``Y`` in general; the search guarantees that the returned ``Y`` packs, that
  ``Y + 1/K`` (if <= 1) was found not to pack, and that ``Y`` is at least the
  largest grid yield below which every grid yield packs -- so when feasibility
  is monotone in ``Y`` it is the best grid yield exactly, within ``precision``
  of the best real yield. About ``log2(K + 2)`` packs per attempt
  (7 for ``precision = 0.01``), so O(J · log K · T · (T + N)) overall when J
  jobs are dropped.

A mapping at ``Y = 0`` can be returned when memory fits but no positive grid
yield packs (e.g. many zero-memory tasks on one node); ``yield_`` is then 0.0.
With no job left (or none given) the result is ``yield_ = 1.0`` and an empty
mapping.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Generic, TypeVar

import numpy as np
from numpy.typing import ArrayLike

if TYPE_CHECKING:
    from _typeshed import SupportsRichComparison

#: A job id: hashable and ordered (ties in priority break on it).
K = TypeVar("K", bound="SupportsRichComparison")

FIT_TOL = 1e-9  # same tolerance as the packing engine's capacity test

__all__ = ["FIT_TOL", "MCB8Result", "mcb8", "pack"]


def pack(
    cpu: ArrayLike,
    mem: ArrayLike,
    nodes: int,
    init_cpu: Sequence[float] | None = None,
    init_mem: Sequence[float] | None = None,
) -> list[int] | None:
    """MCB8 fill of tasks with requirements ``(cpu[i], mem[i])`` on ``nodes``
    unit nodes (rules in the module docstring). Returns the node of each task
    (``result[i]`` for task ``i``), or ``None`` if not all tasks fit.

    ``init_cpu`` / ``init_mem`` (optional, one value per node): load already on
    each node (pinned tasks, MINVT / MINFT): node k is opened with load
    ``(init_cpu[k], init_mem[k])`` instead of ``(0, 0)``; the fill rules are
    unchanged. The early failure on a node closed empty applies only to nodes
    opened with zero load (a pre-loaded node closed without a placement says
    nothing about the later nodes)."""
    c = np.asarray(cpu, dtype=float).reshape(-1)
    m = np.asarray(mem, dtype=float).reshape(-1)
    if len(c) != len(m):
        raise ValueError(f"cpu and mem differ in length ({len(c)} != {len(m)})")
    if nodes < 0:
        raise ValueError(f"nodes must be >= 0, got {nodes}")
    if not (np.all(c >= 0) and np.all(m >= 0)):  # NaN fails ">= 0" too
        raise ValueError("requirements must be non-negative numbers")
    if (init_cpu is None) != (init_mem is None):
        raise ValueError("init_cpu and init_mem go together")
    has_init = init_cpu is not None and init_mem is not None
    if init_cpu is not None and init_mem is not None and (len(init_cpu) != nodes or len(init_mem) != nodes):
        raise ValueError("init_cpu / init_mem need one value per node")
    from schedlab.engines.dfrs.policies.mcb8_fast import pack_kernel  # numba, loaded only when packing

    ic = np.asarray([float(x) for x in init_cpu], dtype=float) if init_cpu is not None else np.zeros(0)
    im = np.asarray([float(x) for x in init_mem], dtype=float) if init_mem is not None else np.zeros(0)
    ok, where = pack_kernel(np.ascontiguousarray(c), np.ascontiguousarray(m), int(nodes), ic, im, has_init)
    return where.tolist() if ok else None


@dataclass(frozen=True)
class MCB8Result(Generic[K]):
    """``yield_``: the yield achieved by every mapped job; ``mapping``: job id
    -> node of each of its tasks; ``dropped``: job ids removed, in drop order."""

    yield_: float
    mapping: dict[K, list[int]] = field(default_factory=dict)
    dropped: list[K] = field(default_factory=list)


def mcb8(
    jobs: Iterable[tuple[K, int, float, float, float]],
    nodes: int,
    precision: float = 0.01,
    pinned: Mapping[K, Sequence[int]] | None = None,
) -> MCB8Result[K]:
    """MCB8 on ``jobs`` = ``(job_id, tasks, need, mem, priority)`` tuples in any
    order (higher priority = more important; job ids unique and mutually
    comparable). See the module docstring for the search and dropping rules.

    ``pinned`` (MINVT / MINFT, dfrs-vs-batch-scheduling §4.3 "Limiting
    Migration"): job id -> node of each of its tasks. A pinned job takes part
    in the priority order and in the dropping exactly like the others (it may
    be dropped, i.e. paused), but while it is kept its tasks stay on those
    nodes: for each attempt at yield Y its tasks are put first on their nodes
    (memory ``mem`` and CPU ``Y x need`` each; if that alone overfills a node's
    CPU, Y fails) and ``pack`` fills the other jobs' tasks around them
    (``init_cpu`` / ``init_mem``). The mapping of a kept pinned job is its
    pinned nodes. Nodes are then no longer interchangeable, so a caller may
    only renumber nodes that hold no kept pinned task."""
    if not 0 < precision <= 1:
        raise ValueError(f"precision must be in (0, 1], got {precision}")
    if nodes < 0:
        raise ValueError(f"nodes must be >= 0, got {nodes}")
    table = []
    seen = set()
    for job_id, tasks, need, mem, priority in jobs:
        if job_id in seen:
            raise ValueError(f"duplicate job id {job_id!r}")
        seen.add(job_id)
        if int(tasks) != tasks or tasks < 0:
            raise ValueError(f"job {job_id!r}: tasks must be a non-negative integer, got {tasks}")
        if not (need >= 0 and mem >= 0):
            raise ValueError(f"job {job_id!r}: need and mem must be non-negative")
        if math.isnan(priority):
            raise ValueError(f"job {job_id!r}: priority is NaN")
        table.append((job_id, int(tasks), float(need), float(mem), float(priority)))
    # Highest priority first; ties: smaller job id first. The last entry is the
    # next to drop (lowest priority, largest id among ties).
    table.sort(key=lambda j: j[0])
    table.sort(key=lambda j: -j[4])

    pinned = dict(pinned or {})
    row_of = {row[0]: r for r, row in enumerate(table)} if pinned else {}
    for job_id, where in pinned.items():
        if job_id not in row_of:
            raise ValueError(f"pinned job {job_id!r} is not among the jobs")
        row = table[row_of[job_id]]
        if len(where) != row[1] or any(not (0 <= int(k) < nodes) for k in where):
            raise ValueError(f"pinned job {job_id!r}: needs {row[1]} nodes in 0..{nodes - 1}, got {list(where)}")

    steps = math.ceil(1.0 / precision - 1e-12)
    # The search (the module docstring), compiled: schedlab.engines.dfrs.policies.mcb8_fast.mcb8_kernel
    # (the reference's Python loop, transcribed operation for operation).
    from schedlab.engines.dfrs.policies.mcb8_fast import mcb8_kernel  # numba, loaded only when packing

    nrows = len(table)
    pin_rows = sorted(row_of[job_id] for job_id in pinned)  # table order
    is_pin = np.zeros(nrows, dtype=np.bool_)
    is_pin[pin_rows] = True
    pin_ptr = np.zeros(nrows + 1, dtype=np.int64)
    pin_nodes: list[int] = []
    for r in pin_rows:
        where = pinned[table[r][0]]
        pin_nodes.extend(int(k) for k in where)
        pin_ptr[r + 1] = len(where)
    np.cumsum(pin_ptr, out=pin_ptr)
    cols = list(zip(*table)) if table else [(), (), (), ()]
    kept, lo, best, status = mcb8_kernel(
        np.asarray(cols[1], dtype=np.int64),
        np.asarray(cols[2], dtype=float),
        np.asarray(cols[3], dtype=float),
        is_pin,
        pin_ptr,
        np.asarray(pin_nodes, dtype=np.int64),
        int(nodes),
        int(steps),
    )
    if status == 1:
        raise ValueError("pinned tasks overfill a node's memory")
    dropped: list[K] = [table[r][0] for r in range(nrows - 1, kept - 1, -1)]
    if kept == 0:
        return MCB8Result(1.0, {}, dropped)
    del table[kept:]
    # job id -> nodes, in table order: a kept pinned job's pinned nodes, the others' packing (task order)
    mapping: dict[K, list[int]] = {}
    best = best.tolist()
    t = 0
    for row in table:
        if row[0] in pinned:
            mapping[row[0]] = [int(k) for k in pinned[row[0]]]
        else:
            mapping[row[0]] = best[t : t + row[1]]
            t += row[1]
    return MCB8Result(lo / steps, mapping, dropped)
