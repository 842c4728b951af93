"""What the driver sends Ray with each task: a few integers per instance.

Ray serializes a task's arguments with cloudpickle and scans them for object
refs. For the dataclasses a task runs (`plan.Instance`: its workload point,
configurations, parameter dicts) that cost the driver ~25 us per instance at
``remote()``, whatever the task's size: with tiny simulations it capped one
driver near 12k summary rows/s (issue 20). So the plan's workload points go
to the object store in blocks of `BLOCK_POINTS`, each put once when a task
first needs it (a sweep's tasks take the points in plan order), each worker
process loads a block once (cached by the object's id), and a task carries,
per instance, (point index, replication, seed words, positions of the
configurations to run in the point, or None for all of them): a few small
ints. A block goes as the bytes of the standard pickler (`ray_put`): Ray's
own serializer walks every object through Python hooks: 3.5x the CPU.
The driver keeps the refs of its last `KEPT_BLOCKS` blocks (a task in
flight keeps its own blocks alive, retries included), so neither its memory
nor the object store grows with the plan beyond that; a block needed again
later (an adaptive round) is put again.

A task's work is rebuilt from those exactly: the same point (the plan's,
whose configurations are a superset of an adaptive round's subset: the task
runs the configurations listed, never ``point.configs``), the same seed
words, the same configurations in the same order.
"""

from __future__ import annotations

import pickle
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from schedlab.platform.planning.plan import Config, Instance, WorkloadPoint

#: Workload points per object put in Ray's object store: a put is a round trip to
#: the raylet (milliseconds on a loaded machine), so few and large (~1 KB a point).
BLOCK_POINTS = 4096
#: Blocks whose refs the driver keeps for tasks still to come.
KEPT_BLOCKS = 4
#: Blocks a worker process keeps loaded (its tasks take consecutive points).
CACHED_BLOCKS = 4
#: Object id -> a block of points, in this worker process (least recently used first).
_LOADED: OrderedDict[str, tuple[WorkloadPoint, ...]] = OrderedDict()

Item = tuple[int, int, tuple[int, ...], tuple[int, ...] | None]


@dataclass(frozen=True)
class PackedWork:
    """One task's work. ``blocks``: block number -> that block of the plan's
    points, or the object ref Ray stores it under -- inside a dict, so that
    Ray hands the ref to the task unresolved (a top-level ref argument would
    be fetched and deserialized for every task) and keeps the object alive
    while the task may run or be retried."""

    blocks: dict[int, Any]
    items: list[Item]


class Packer:
    """Packs (instance, configurations) pairs of one plan's points."""

    def __init__(
        self, points: Sequence[WorkloadPoint], put: Callable[[tuple[WorkloadPoint, ...]], Any] = lambda b: b
    ) -> None:
        """``put``: a block of points -> what a task carries for it (``ray.put``;
        by default the block itself)."""
        self.points = points
        self.put = put
        #: point id -> its index, built for the first instance whose index is not known (`_index`)
        self.index: dict[str, int] | None = None
        #: block number -> (what a task carries for it, the block's points): the last `KEPT_BLOCKS`
        self._refs: OrderedDict[int, tuple[Any, tuple[WorkloadPoint, ...]]] = OrderedDict()

    def _block(self, b: int) -> tuple[Any, tuple[WorkloadPoint, ...]]:
        kept = self._refs.pop(b, None)
        if kept is None:
            block = tuple(self.points[b * BLOCK_POINTS : (b + 1) * BLOCK_POINTS])  # made now (`plan.PlanPoints`)
            kept = (self.put(block), block)
        self._refs[b] = kept
        while len(self._refs) > KEPT_BLOCKS:
            self._refs.popitem(last=False)
        return kept

    def _index(self, inst: Instance) -> int:
        """``inst``'s point's index in the plan: the one the plan's instances
        carry (`plan.Instances`), so no index of ten million ids is held;
        otherwise (an adaptive round's points, which are copies) by the id
        index, built then."""
        if inst.index >= 0:
            return inst.index
        if self.index is None:
            self.index = {p.point_id: k for k, p in enumerate(self.points)}
            if len(self.index) != len(self.points):  # invariant: point ids are digests of distinct points
                raise RuntimeError("two workload points of the plan share an id")
        return self.index[inst.point.point_id]

    def pack(self, work: list[tuple[Instance, list[Config]]]) -> PackedWork:
        items: list[Item] = []
        blocks: dict[int, Any] = {}
        for inst, todo in work:
            k = self._index(inst)
            ref, points = self._block(k // BLOCK_POINTS)
            blocks[k // BLOCK_POINTS] = ref
            every = points[k % BLOCK_POINTS].configs  # the plan's point (a copy's configurations are a subset)
            chosen: tuple[int, ...] | None = None
            if len(todo) != len(every) or any(a.config_id != b.config_id for a, b in zip(todo, every, strict=True)):
                at = {c.config_id: j for j, c in enumerate(every)}
                chosen = tuple(at[c.config_id] for c in todo)
            items.append((k, inst.replication, inst.seed_words, chosen))
        return PackedWork(blocks, items)


def ray_put(ray: Any) -> Callable[[tuple[WorkloadPoint, ...]], Any]:
    """`Packer`'s ``put`` for a sweep on Ray: the block pickled, into the object store."""
    return lambda block: ray.put(pickle.dumps(block, protocol=pickle.HIGHEST_PROTOCOL))


def unpack(packed: PackedWork) -> list[tuple[Instance, list[Config]]]:
    """The (instance, configurations) pairs ``packed`` was made from."""
    blocks = {b: _load(source) for b, source in packed.blocks.items()}
    out = []
    for k, replication, seed_words, chosen in packed.items:
        point = blocks[k // BLOCK_POINTS][k % BLOCK_POINTS]
        configs = list(point.configs) if chosen is None else [point.configs[j] for j in chosen]
        out.append((Instance(point, replication, seed_words), configs))
    return out


def _load(source: Any) -> tuple[WorkloadPoint, ...]:
    if isinstance(source, tuple):
        return source
    key = source.hex()  # a Ray object ref: loaded once per worker process
    block = _LOADED.pop(key, None)
    if block is None:
        import ray

        block = pickle.loads(ray.get(source))  # the driver's own bytes (`ray_put`)
    _LOADED[key] = block
    while len(_LOADED) > CACHED_BLOCKS:
        _LOADED.popitem(last=False)
    return block
