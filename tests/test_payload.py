"""What the driver sends per task (`payload`): a task's work packed as indices
into the plan's points comes back as exactly the work it was made from --
the same point objects, replications, seed words and configurations in
order -- for whole points, partly done points (a resumed sweep) and an
adaptive round's points copied with a subset of their configurations; and a
task run from the packed work gives the rows of the same task run from the
plain work. The Ray path (the points through the object store) runs in every
sweep test (tests/test_platform_local.py, tests/test_platform_cluster.py)."""

from __future__ import annotations

import dataclasses
import pickle

from schedlab.platform.execution.payload import Packer, unpack
from schedlab.platform.execution.tasks import run_instances
from schedlab.platform.planning.plan import build_plan
from schedlab.platform.planning.validate import parse_spec


def plan_of(tmp_path):
    spec = parse_spec(
        {
            "name": "payload",
            "engine": "queue",
            "seed": 11,
            "policies": ["FIFO", "PS", "SRPT"],
            "workload": {"kind": "synthetic", "njobs": 60, "shape": [0.5, 1.0, 2.0], "load": [0.5, 0.9]},
            "replications": {"n": 3},
            "outputs": {"dir": str(tmp_path / "out")},
            "tracking": {"enabled": False},
        },
        "payload.toml",
    )
    return build_plan(spec)


def same(a, b) -> bool:
    """Equal work: the same instances, the same configurations (equal, not the
    same objects: a block's points are made anew from the plan's grid, `plan.PlanPoints`)."""
    return len(a) == len(b) and all(
        ia == ib and len(ca) == len(cb) and all(x == y for x, y in zip(ca, cb, strict=True))
        for (ia, ca), (ib, cb) in zip(a, b, strict=True)
    )


def test_packed_work_unpacks_to_the_work_it_was_made_from(tmp_path):
    plan = plan_of(tmp_path)
    packer = Packer(plan.points)  # outside Ray: blocks of the points themselves
    instances = plan.instances(range(3))
    whole = [(i, list(i.point.configs)) for i in instances]
    partly = [(i, [c for j, c in enumerate(i.point.configs) if (j + i.replication) % 2]) for i in instances]
    partly = [(i, todo) for i, todo in partly if todo]
    adaptive = []  # as adaptive.select_best builds a round: points copied with a subset of configurations
    for p in plan.points:
        subset = dataclasses.replace(p, configs=p.configs[1:])
        adaptive += [(i, list(subset.configs)) for i in plan.instances([2, 0], [subset])]
    for work in (whole, partly, adaptive, whole[::-1]):
        packed = packer.pack(work)
        assert all(isinstance(x, int) for item in packed.items for x in item[:2])
        back = unpack(pickle.loads(pickle.dumps(packed)))  # as Ray would carry it
        if work is adaptive:  # the plan's point (a superset of configurations), otherwise the same instance
            assert [(i.replication, i.seed_words, i.point.point_id) for i, _ in back] == [
                (i.replication, i.seed_words, i.point.point_id) for i, _ in work
            ]
            assert [[c.config_id for c in todo] for _, todo in back] == [[c.config_id for c in t] for _, t in work]
        else:
            assert same(unpack(packed), work)
            assert [(i, [c.config_id for c in t]) for i, t in back] == [(i, [c.config_id for c in t]) for i, t in work]


def test_a_task_from_packed_work_gives_the_same_rows(tmp_path):
    plan = plan_of(tmp_path)
    instances = plan.instances(range(2))
    work = [(i, [c for c in i.point.configs if c.policy != "PS" or i.replication]) for i in instances]
    plain = run_instances(plan.engine, work, None, True, plan.metrics)
    packed = run_instances(plan.engine, Packer(plan.points).pack(work), None, True, plan.metrics)

    def rows(result):
        return [{k: v for k, v in r.items() if k != "sim_seconds"} for r in result.summary]

    assert rows(packed) == rows(plain) and len(plain.summary) == sum(len(t) for _, t in work)
    assert packed.jobs and all(
        pa == pb and ta.equals(tb) for (pa, ta), (pb, tb) in zip(packed.jobs, plain.jobs, strict=True)
    )


def test_blocks_are_put_once_while_kept_and_again_after(tmp_path, monkeypatch):
    """Points travel in blocks: a block is put when a task first needs it,
    reused while the driver keeps it, put again once dropped; every task's
    work unpacks exactly whatever the blocks it spans."""
    from schedlab.platform.execution import payload

    monkeypatch.setattr(payload, "BLOCK_POINTS", 2)
    monkeypatch.setattr(payload, "KEPT_BLOCKS", 1)
    plan = plan_of(tmp_path)  # 6 points: blocks 0, 1, 2
    puts = []

    def put(block):
        puts.append(tuple(p.point_id for p in block))
        return block

    packer = Packer(plan.points, put)
    instances = plan.instances(range(3))  # point-major: 3 replications of each point in turn
    tasks = [instances[i : i + 4] for i in range(0, len(instances), 4)]
    for task in tasks + tasks[:2]:  # the first two tasks again: block 0 was dropped meanwhile
        work = [(i, list(i.point.configs)) for i in task]
        assert same(unpack(packer.pack(work)), work)
    ids = [p.point_id for p in plan.points]
    blocks = [tuple(ids[0:2]), tuple(ids[2:4]), tuple(ids[4:6])]
    # task 1 spans blocks 0 and 1; the repeated tasks 0 and 1 need blocks 0 and 1 again
    assert puts == [blocks[0], blocks[1], blocks[2], blocks[0], blocks[1]]
