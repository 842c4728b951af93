"""Driver memory that does not grow with a sweep (issue 42): the key set in
8 bytes a key, the manifest written a chunk at a time, a round streamed
through the task sizer, and configuration ids built part by part equal to
the digest of the whole identity."""

from __future__ import annotations

import itertools
import json
import random
import tracemalloc
from collections import ChainMap

import numpy as np
import pyarrow as pa
import pytest

from schedlab.platform.execution.runner import manifest_for, run_sweep
from schedlab.platform.execution.sizing import LOOKAHEAD, TaskSizer
from schedlab.platform.planning.plan import Grid, build_plan, config_identity, digest
from schedlab.platform.planning.validate import parse_spec
from schedlab.platform.storage.keyset import KeySet, id_numbers
from schedlab.platform.storage.manifest import ConfigEntries, manifest_text
from schedlab.platform.storage.store import ResultStore

#: Bytes of Python allocations a configuration may cost at once while the manifest is written
#: (json's indent=2 Python encoder held about 3,000).
MANIFEST_BYTES_PER_CONFIG = 1_000
#: Bytes a key of a `KeySet` may cost (a Python set of (str, int) tuples: about 200).
KEYSET_BYTES_PER_KEY = 24
#: Bytes a configuration of a built plan may keep (held whole, a plan kept about 800; streamed,
#: it keeps the grid's axes, the policies and the checking pass's ids: 8 bytes a configuration
#: and 8 a point, `plan.PlanIds`, so that no later pass hashes them again).
PLAN_BYTES_PER_CONFIG = 24


def spec_of(tmp_path, loads: int, sigmas: int, **changes):
    data = {
        "name": "scale",
        "engine": "queue",
        "seed": 5,
        "policies": ["FIFO", "PS"],
        "workload": {
            "kind": "synthetic",
            "njobs": 20,
            "load": [round(0.2 + 0.7 * i / loads, 6) for i in range(loads)],
            "sigma": [round(0.1 + 2.0 * i / sigmas, 6) for i in range(sigmas)],
        },
        "replications": {"n": 1},
        "outputs": {"dir": str(tmp_path / "out")},
        "tracking": {"enabled": False},
        "execution": {"backend": "local", "num_cpus": 1},
    }
    data.update(changes)
    return parse_spec(data, "test")


def hex_id(rng: random.Random) -> str:
    return f"{rng.getrandbits(64):016x}"


def test_key_set_answers_as_a_python_set_does():
    rng = random.Random(3)
    keys = [(hex_id(rng), rng.randrange(3)) for _ in range(5_000)]
    odd = [("not-an-id", 0), ("ABCDEF0123456789", 1), ("", 2), ("0123456789abcdeg", 0)]
    expected: set[tuple[str, int]] = set()
    ks = KeySet()
    for key in keys[:3_000] + odd:
        ks.add(key)
        expected.add(key)
    ks.add(keys[0])  # again: still one key
    ks |= {k for k in keys[2_500:4_000]}
    expected |= set(keys[2_500:4_000])
    fresh = keys[4_000:4_300] + [("odd id", 1)]
    assert not ks.contains_many([k for k, _ in fresh], [r for _, r in fresh]).any()
    ks.add_absent(fresh)  # what the sink adds once it has looked them up
    expected |= set(fresh)
    absent = keys[4_300:] + [(keys[0][0], 7), ("abcdef0123456789", 1)]
    assert len(ks) == len(expected)
    assert ks == expected and set(ks) == expected
    assert all(k in ks for k in expected) and not any(k in ks for k in absent)
    probe = list(expected) + absent
    got = ks.contains_many([k for k, _ in probe], [r for _, r in probe])
    assert got.tolist() == [k in expected for k in probe]
    # a key set into an empty one (its arrays taken as they are) and into one that has keys
    into_empty = KeySet()
    into_empty |= ks
    assert into_empty == expected and len(into_empty) == len(expected)
    more = KeySet()
    more.add(keys[-1])
    more.add(keys[0])  # in ``ks`` too
    more |= ks
    assert more == expected | {keys[-1]} and len(more) == len(expected | {keys[-1]})
    into_empty.add(keys[-2])  # the taken arrays are not written in place: ``ks`` unchanged
    assert keys[-2] not in ks and keys[-2] in into_empty


def test_key_set_looks_up_sixteen_character_ids_as_pyarrow_reads_them():
    """Lists of 16-character ids take the bytes path (no pyarrow conversion: no pandas import), odd ones
    included: upper case, a non-hex digit, non-ASCII text; the answers are a Python set's, and the numbers
    and the mask are `id_numbers`' of the same strings through pyarrow."""
    from schedlab.platform.storage.keyset import _str_id_numbers

    rng = random.Random(5)
    ids = [hex_id(rng) for _ in range(300)] + ["ABCDEF0123456789", "0123456789abcdeg", "é" * 16, "0123456789abcde\0"]
    numbers, ok = _str_id_numbers(ids)
    want_numbers, want_ok = id_numbers(pa.array(ids, pa.string()))
    assert ok.tolist() == want_ok.tolist() and numbers[ok].tolist() == want_numbers[want_ok].tolist()
    ks = KeySet()
    stored = {(i, 0) for i in ids[::2]}
    for key in stored:
        ks.add(key)
    assert ks.contains_many(ids, [0] * len(ids)).tolist() == [(i, 0) in stored for i in ids]


def test_key_set_from_part_columns_and_its_size():
    rng = random.Random(4)
    n = 50_000
    ids = [hex_id(rng) for _ in range(n)] + ["short"]
    reps = [i % 2 for i in range(n + 1)]
    numbers, ok = id_numbers(pa.array(ids))
    assert ok.tolist() == [True] * n + [False]
    assert numbers[:n].tolist() == [int(x, 16) for x in ids[:n]]
    table = pa.table({"config_id": ids, "replication": reps})
    tracemalloc.start()
    try:
        ks = KeySet.from_columns([table.slice(0, 20_000), table.slice(20_000)])
        size = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert ks == set(zip(ids, reps, strict=True))
    assert size / n < KEYSET_BYTES_PER_KEY, size / n


def test_manifest_text_parses_to_the_manifest(tmp_path):
    spec = spec_of(tmp_path, 7, 5)
    plan = build_plan(spec)
    manifest = manifest_for(spec, plan)
    text = b"".join(manifest_text(manifest))
    assert json.loads(text) == json.loads(json.dumps({**manifest, "configs": dict(manifest["configs"])}))
    for other in ({}, {"a": [1, {"b": None}], "configs": {}}, {"configs": ChainMap({"x": {"p": 1}}, {"y": {}})}):
        plain = {k: dict(v) if isinstance(v, ChainMap) else v for k, v in other.items()}
        assert json.loads(b"".join(manifest_text(other))) == plain


def test_writing_the_manifest_holds_little_per_configuration(tmp_path):
    spec = spec_of(tmp_path, 100, 50)  # 10,000 configurations
    plan = build_plan(spec)
    store = ResultStore(spec.results_dir())
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        store.prepare(manifest_for(spec, plan), fresh=False)
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    assert peak / len(plan.configs) < MANIFEST_BYTES_PER_CONFIG, peak / len(plan.configs)
    assert set(store.read_manifest()["configs"]) == set(plan.configs)


def test_configuration_ids_are_the_digest_of_their_identity(tmp_path):
    spec = spec_of(tmp_path, 3, 2, system={}, policies=["FIFO", {"name": "PSBS"}])
    plan = build_plan(spec)
    for point in plan.points:
        workload = {"kind": point.kind, "params": point.params}
        for c in point.configs:
            identity = config_identity(c.engine, c.policy, c.policy_params, workload, c.system, c.code)
            assert c.config_id == digest(identity)


def test_a_streamed_round_queues_at_most_the_lookahead(tmp_path):
    spec = spec_of(tmp_path, 100, 90)  # 18,000 configurations, 9,000 instances
    plan = build_plan(spec)
    instances = plan.each_instance(range(1))
    assert len(instances) == len(plan.points) and list(instances) == plan.instances(range(1))
    work = ((i, i.point.configs) for i in instances)
    sizer = TaskSizer(work, remaining=sum(20 * len(i.point.configs) for i in instances))
    drawn = []
    while sizer:
        assert len(sizer.queue) <= LOOKAHEAD
        task, _ = sizer.next(2)
        drawn += task
    assert drawn == plan.instances(range(1)) and sizer.remaining == 0


@pytest.mark.parametrize("kept", [0.0, 0.5])
def test_a_resume_runs_exactly_what_is_not_on_disk(tmp_path, kept):
    spec = spec_of(tmp_path, 6, 4)
    first = run_sweep(spec)
    assert first.rows_written == len(build_plan(spec).configs) == 48 and not first.failures
    store = ResultStore(spec.results_dir())
    rows = store.scan().collect()
    if kept:  # keep half the rows: rewrite the summary as one part of the first half
        import shutil

        half = rows.head(int(rows.height * kept))
        shutil.rmtree(store.root / "summary")
        store.commit(half.to_dicts(), [], [])
    again = run_sweep(spec)
    assert again.rows_skipped == (int(rows.height * kept) if kept else 48)
    assert again.rows_written == 48 - again.rows_skipped
    after = store.scan().collect()
    assert after.height == 48 and not after.select("config_id", "replication").is_duplicated().any()
    cols = [c for c in rows.columns if c not in ("sim_seconds",) and not c.endswith("_seconds")]
    assert after.sort("config_id").select(cols).equals(rows.sort("config_id").select(cols))
    assert np.array_equal(np.sort(store.done_key_set().contains_many(list(after["config_id"]), [0] * 48)), [True] * 48)


def test_a_built_plan_keeps_only_its_ids_per_configuration(tmp_path):
    spec = spec_of(tmp_path, 100, 50)  # 10,000 configurations
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        plan = build_plan(spec)
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(plan.configs) == 10_000 and len(plan.points) == 5_000
    assert kept / len(plan.configs) < PLAN_BYTES_PER_CONFIG, kept / len(plan.configs)


def test_streamed_points_are_the_same_every_pass_and_by_position(tmp_path):
    plan = build_plan(spec_of(tmp_path, 7, 5))
    points = list(plan.points)
    assert points == list(plan.points) and len(points) == len(plan.points) == 35
    assert [plan.points[k] for k in range(-35, 35)] == points + points
    assert plan.points[3:30:4] == points[3:30:4] and plan.points[::-1] == points[::-1]
    with pytest.raises(IndexError):
        plan.points[35]
    configs = [c for p in points for c in p.configs]
    assert list(plan.configs) == [c.config_id for c in configs] and list(plan.configs.values()) == configs
    assert len(plan.configs) == len(set(plan.configs)) == 70
    # a lookup scans; the next ones read the id -> configuration map
    assert [plan.configs[c.config_id] for c in configs[::-1]] == configs[::-1]
    assert "0123456789abcdef" not in plan.configs
    instances = list(plan.each_instance(range(2)))
    assert [i.index for i in instances] == [k for k in range(35) for _ in range(2)]


def test_a_grid_is_the_cross_product_by_position():
    axes = [[{"a": 1}, {"a": 2}], [{"b": 1, "c": 1}, {"b": 2, "c": 2}, {"b": 3, "c": 3}], [{"d": 0}]]
    grid = Grid(axes)
    crossed = [{k: v for part in combo for k, v in part.items()} for combo in itertools.product(*axes)]
    assert list(grid) == crossed and [grid[k] for k in range(len(grid))] == crossed and len(grid) == 6
    assert grid[-1] == crossed[-1] and grid[1:5:2] == crossed[1:5:2] and list(Grid([])) == [{}]
    assert all(list(grid.walk(k)) == crossed[k:] for k in range(6)) and list(grid.walk(6)) == []
    assert [list(p) for p in grid.walk(3)] == [list(p) for p in crossed[3:]]  # the keys' order too


def _hashed_points(plan):
    """The plan's points made with every id hashed again (as if the plan had kept none)."""
    make = plan.points.make
    kept, make.ids = make.ids, None
    try:
        return list(plan.points)
    finally:
        make.ids = kept


def test_points_made_with_the_kept_ids_equal_the_hashed_ones(tmp_path):
    plan = build_plan(spec_of(tmp_path, 7, 5, system={}, policies=["FIFO", {"name": "PSBS"}]))
    ids = plan.points.ids
    assert ids is not None and ids.per_point == 2 and ids.draws is None
    assert len(ids.points) == 35 and len(ids.configs) == 70
    made = list(plan.points)
    assert made == _hashed_points(plan) and [p.draw_id for p in made] == [None] * 35
    # the manifest's entries made without the points equal those made from them
    entries = ConfigEntries(plan)
    flat = list(entries.items())
    assert flat == [(c.config_id, entries.entry(c, None)) for p in made for c in p.configs]
    assert [json.dumps(e) for _, e in flat] == [json.dumps(entries.entry(c, None)) for p in made for c in p.configs]
    assert [f"{n:016x}" for n in ids.configs.tolist()] == list(plan.configs)
    assert [p.point_id for p in made] == [f"{n:016x}" for n in ids.points.tolist()]
    # a kind whose points share a draw (a Lublin trace scaled to each load): the draw ids kept too
    from tests.test_lublin import _scaled_plan

    scaled = _scaled_plan(True)
    assert scaled.points.ids is not None and scaled.points.ids.draws is not None
    points = list(scaled.points)
    assert points == _hashed_points(scaled) and all(p.draw_id is not None for p in points)
    assert len({p.seed_id for p in points}) == 1


def test_a_round_checked_by_the_kept_ids_is_the_round_checked_by_text(tmp_path):
    """`_Sweep.unwritten` on the plan's own instances (by its ids, a point made only with
    work left) yields what the generic path yields on the same instances as a list:
    the same instances (with their positions) and configurations, in the same order, and
    counts the same configurations looked at; keys merged and keys pending alike."""
    import time

    from schedlab.platform.execution import runner
    from schedlab.platform.execution.backends import choose

    spec = spec_of(tmp_path, 30, 20)  # 600 points, 1,200 configurations
    plan = build_plan(spec)
    store = ResultStore(spec.results_dir())
    sweep = runner._Sweep(spec, plan, store, time.monotonic(), choose(spec, None, "local"), None, None)
    rng = random.Random(3)
    ids = list(plan.configs)
    for r in range(3):
        chosen = [cid for cid in ids if rng.random() < 0.5]  # half of them, some whole points
        sweep.sink.written.add_numbers(np.array([int(c, 16) for c in chosen[::2]], np.uint64), r)
        for cid in chosen[1::2]:
            sweep.sink.written.add((cid, r))  # pending: not merged into the sorted array
    sweep.sink.written.add_numbers(np.array([int(c, 16) for c in ids[:200]], np.uint64), 1)
    old_block = runner.UNWRITTEN_BLOCK
    runner.UNWRITTEN_BLOCK = 64  # several blocks, one of them short
    try:
        by_ids, by_text = [0], [0]
        fast = list(sweep.unwritten(plan.each_instance(range(3)), by_ids))
        slow = list(sweep.unwritten(list(plan.each_instance(range(3))), by_text))
    finally:
        runner.UNWRITTEN_BLOCK = old_block
    assert by_ids == by_text == [3 * 1_200]
    # the round's counting pass by the kept ids (no point made) counts what the generic one counts,
    # tasks sized by measurement or of a fixed size (`TaskSizer.units_of`)
    fixed = spec_of(tmp_path, 30, 20, execution={"backend": "local", "num_cpus": 1, "task_jobs": 500})
    other = runner._Sweep(fixed, build_plan(fixed), store, time.monotonic(), choose(fixed, None, "local"), None, None)
    other.sink.written = sweep.sink.written
    for one in (sweep, other):
        counted = []
        for instances in (one.plan.each_instance(range(3)), list(one.plan.each_instance(range(3)))):
            one.report.rows_skipped, one.counts["total"] = 0, 0
            pending = one.round_work(instances)
            counted.append((pending.remaining, one.counts["total"], one.report.rows_skipped))
        assert counted[0] == counted[1] and counted[0][1] + counted[0][2] == 3 * 1_200 and counted[0][0] > 0
    assert [(i, i.index, list(todo)) for i, todo in fast] == [(i, i.index, list(todo)) for i, todo in slow]
    assert 0 < sum(len(todo) for _, todo in fast) < 3 * 1_200
    every = set(itertools.product(ids, range(3)))
    left = {(c.config_id, i.replication) for i, todo in fast for c in todo}
    assert left == {k for k in every if k not in sweep.sink.written}


def test_a_manifest_read_lean_is_the_manifest_read_whole(tmp_path):
    """`manifest.read_lean` (16 bytes a configuration: a resume of millions) gives the
    manifest `json.loads` gives, its configurations looked up and streamed from disk;
    a resume's grown manifest written from it is the same text; a manifest not laid out
    one configuration a line is left to json.loads; a file replaced since is refused."""
    from schedlab.platform.storage.manifest import OnDiskConfigs, grown_manifest, read_lean

    spec = spec_of(tmp_path, 9, 6)
    plan = build_plan(spec)
    store = ResultStore(spec.results_dir())
    store.prepare(manifest_for(spec, plan), fresh=False)
    path = store.root / "manifest.json"
    whole = json.loads(path.read_text())
    lean = read_lean(path)
    assert lean is not None and isinstance(lean["configs"], OnDiskConfigs)
    assert {k: v for k, v in lean.items() if k != "configs"} == {k: v for k, v in whole.items() if k != "configs"}
    assert dict(lean["configs"].items()) == whole["configs"] and list(lean["configs"]) == list(whole["configs"])
    some = list(whole["configs"])[::7]
    assert [lean["configs"][cid] for cid in some] == [whole["configs"][cid] for cid in some]
    assert "0123456789abcdef" not in lean["configs"] and len(lean["configs"]) == len(whole["configs"]) == 108
    # a resume with a smaller grid: the old-only entries come from disk, streamed, in the same order
    old_only = {"odd id": {"policy": "X"}, **{f"{n:016x}": {"policy": str(n)} for n in (1, 2)}}
    with_old = {**whole, "configs": {**whole["configs"], **old_only}}
    path.write_bytes(b"".join(manifest_text(with_old)))
    smaller = spec_of(tmp_path, 9, 3)
    new = manifest_for(smaller, build_plan(smaller))
    by_lean = b"".join(manifest_text(grown_manifest(read_lean(path), new)))
    by_whole = b"".join(manifest_text(grown_manifest(json.loads(path.read_text()), new)))
    assert by_lean == by_whole and json.loads(by_lean)["configs"]["odd id"] == {"policy": "X"}
    assert store.read_manifest(lean=True)["configs"]["odd id"] == {"policy": "X"}
    # json.dumps(indent=2)'s layout (an older schedlab's): not read lean, read whole by the store
    path.write_text(json.dumps(whole, indent=2))
    assert read_lean(path) is None and store.read_manifest(lean=True) == whole
    path.write_bytes(b"".join(manifest_text(whole)))
    lean = store.read_manifest(lean=True)
    path.write_bytes(b"".join(manifest_text(with_old)))  # replaced: the offsets read no longer hold
    with pytest.raises(RuntimeError, match="changed since"):
        lean["configs"][some[0]]
