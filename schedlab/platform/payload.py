"""What the driver sends Ray with each task: a few integers per instance.

Ray serializes a task's arguments with cloudpickle and scans them for object
refs. For the dataclasses a task runs (`plan.Instance`: its workload point,
configurations, parameter dicts) that cost the driver ~25 us per instance at
``remote()``, whatever the task's size: with tiny simulations it capped one
driver near 12k summary rows/s (issue 20). So the plan's workload points go
to the object store once per sweep (`ray.put`), each worker process loads
them once (cached by the object's id), and a task carries, per instance,
(point index, replication, seed words, positions of the configurations to
run in the point, or None for all of them): a few small ints.

A task's work is rebuilt from those exactly: the same point object (the
plan's, whose configurations are a superset of an adaptive round's subset:
the task runs the configurations listed, never ``point.configs``), the same
seed words, the same configurations in the same order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from schedlab.platform.plan import Config, Instance, WorkloadPoint

#: Plans a worker process keeps loaded (a worker may serve a few sweeps of one Ray session in turn).
CACHED_PLANS = 2
#: Object id -> the plan's points, in this worker process (oldest first).
_LOADED: dict[str, Sequence[WorkloadPoint]] = {}

Item = tuple[int, int, tuple[int, ...], tuple[int, ...] | None]


@dataclass(frozen=True)
class PackedWork:
    """One task's work. ``source`` holds one thing: the plan's points, or the
    object ref Ray stores them under -- nested in a list so that Ray hands the
    ref to the task unresolved (a top-level ref argument would be fetched and
    deserialized for every task) and keeps the object alive while the task
    may run or be retried."""

    source: list[Any]
    items: list[Item]


class Packer:
    """Packs (instance, configurations) pairs of one plan's points."""

    def __init__(self, points: Sequence[WorkloadPoint], source: Any) -> None:
        """``source``: ``points`` themselves, or their object ref (`ray.put`)."""
        self.points = points
        self.source = [source]
        self.index = {p.point_id: k for k, p in enumerate(points)}
        if len(self.index) != len(points):  # invariant: point ids are digests of distinct points
            raise RuntimeError("two workload points of the plan share an id")
        self._positions: dict[int, dict[str, int]] = {}

    def pack(self, work: list[tuple[Instance, list[Config]]]) -> PackedWork:
        items: list[Item] = []
        for inst, todo in work:
            k = self.index[inst.point.point_id]
            every = self.points[k].configs
            if len(todo) == len(every) and all(a is b for a, b in zip(todo, every, strict=True)):
                chosen = None
            else:
                at = self._positions.get(k)
                if at is None:
                    at = self._positions[k] = {c.config_id: j for j, c in enumerate(every)}
                chosen = tuple(at[c.config_id] for c in todo)
            items.append((k, inst.replication, inst.seed_words, chosen))
        return PackedWork(self.source, items)


def unpack(packed: PackedWork) -> list[tuple[Instance, list[Config]]]:
    """The (instance, configurations) pairs ``packed`` was made from."""
    points = _points(packed.source[0])
    out = []
    for k, replication, seed_words, chosen in packed.items:
        point = points[k]
        configs = list(point.configs) if chosen is None else [point.configs[j] for j in chosen]
        out.append((Instance(point, replication, seed_words), configs))
    return out


def _points(source: Any) -> Sequence[WorkloadPoint]:
    if isinstance(source, (list, tuple)):
        return source
    key = source.hex()  # a Ray object ref: loaded once per worker process
    points = _LOADED.get(key)
    if points is None:
        import ray

        points = ray.get(source)
        _LOADED[key] = points
        while len(_LOADED) > CACHED_PLANS:
            del _LOADED[next(iter(_LOADED))]
    return points
