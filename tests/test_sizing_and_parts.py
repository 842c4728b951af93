"""Tasks sized by measurement (`sizing.TaskSizer`) and rows encoded by the
workers (`parts`): every instance is handed out once and in order, a task
follows the measured cost, the last tasks spread over the CPUs, and the rows
on disk are those `ResultStore.commit` writes from the same results -- and
the same whatever the packing."""

from __future__ import annotations

import pytest

import schedlab
from schedlab.platform.execution import parts, sizing
from schedlab.platform.execution.runner import run_sweep
from schedlab.platform.execution.sizing import TaskSizer
from schedlab.platform.execution.tasks import run_instances
from schedlab.platform.planning.plan import Plan, build_plan
from schedlab.platform.planning.validate import parse_spec
from schedlab.platform.storage.part import decode
from schedlab.platform.storage.store import ResultStore, publish

TIMING = ["sim_seconds"]


def spec_of(tmp_path, name="sizing", **changes):
    data = {
        "name": name,
        "engine": "queue",
        "seed": 3,
        "policies": ["FIFO", "PS", "SRPT"],
        "workload": {"kind": "synthetic", "njobs": 300, "shape": [0.5, 1.0, 2.0], "sigma": [0.5, 1.0]},
        "replications": {"n": 4},
        "outputs": {"dir": str(tmp_path / name), "per_job": True},
        "tracking": {"enabled": False},
    }
    data.update(changes)
    return parse_spec(data, f"{name}.toml")


def work_of(plan: Plan, reps: int = 4):
    return [(i, list(i.point.configs)) for i in plan.instances(range(reps))]


def drain(sizer: TaskSizer, cpus: float, observe=None):
    """Every task: (instances, job-runs, job-runs left before it)."""
    tasks = []
    while sizer:
        left = sizer.remaining
        task, units = sizer.next(cpus)
        assert task, "an empty task"
        tasks.append((task, units, left))
        if observe:
            observe(sizer, task, units)
    return tasks


def test_fixed_task_jobs_pack_exactly_as_plan_tasks(tmp_path):
    plan = build_plan(spec_of(tmp_path))
    for task_jobs in (1, 2000, 5000, 10**9):
        got = [t for t, _, _ in drain(TaskSizer(work_of(plan), task_jobs), cpus=2)]
        assert got == Plan.tasks(plan.instances(range(4)), task_jobs)


def test_measured_sizes_follow_the_cost_and_spread_the_tail(tmp_path):
    plan = build_plan(spec_of(tmp_path))
    work = work_of(plan)
    per_instance = 300 * 3
    total = per_instance * len(work)
    cpus = 2
    seconds_per_unit = 1e-4  # target task 10,000 job-runs (floor MIN_SECONDS): the tail rule decides at this size

    sizer = TaskSizer(work)
    tasks = drain(sizer, cpus, observe=lambda s, t, u: s.observe(u, u * seconds_per_unit))
    assert [i for t, _, _ in tasks for i in t] == [i for i, _ in work]  # every instance once, in plan order
    assert sum(u for _, u, _ in tasks) == total
    # before any measurement: FIRST_TASK_WORK, or less so that the plan spreads over the CPUs
    first_target = min(sizing.FIRST_TASK_WORK, total / (sizing.TAIL_TASKS_PER_CPU * cpus))
    assert tasks[0][1] <= max(1.5 * first_target, per_instance)
    target = sizing.TARGET_SECONDS / seconds_per_unit
    floor = sizing.MIN_SECONDS / seconds_per_unit
    for task, units, left in tasks[1:]:
        want = max(min(target, left / (sizing.TAIL_TASKS_PER_CPU * cpus)), floor)
        assert units <= max(1.5 * want, per_instance), (units, want)
        assert units >= min(want, left) or len(task) == 1 or units == left, (units, want)
    assert len(tasks) >= sizing.TAIL_TASKS_PER_CPU * cpus

    # a cost so high that one instance is a whole target task: one instance per task once measured
    tasks = drain(TaskSizer(work), cpus, observe=lambda s, t, u: s.observe(u, u * 1.0))
    assert all(len(t) == 1 for t, _, _ in tasks[1:])


def test_summary_only_parts_are_merged_per_policy_and_hold_the_rows_commit_writes(tmp_path):
    plan = build_plan(spec_of(tmp_path))
    work = work_of(plan, 2)
    rows = run_instances(plan.engine, work, None, False)
    first = run_instances(plan.engine, work[:5], None, False, encode=True)
    rest = run_instances(plan.engine, work[5:], None, False, encode=True)
    assert all(p.table is not None and not p.files for p in first.parts + rest.parts)
    by_commit, by_parts = ResultStore(tmp_path / "commit"), ResultStore(tmp_path / "parts")
    by_commit.commit(rows.summary, [], [])
    by_parts.commit([], [], [], parts=first.parts + rest.parts)
    assert len(by_parts.files("summary")) == 3  # one file per policy, not one per task and policy
    a = by_commit.scan().collect().drop(TIMING).sort("config_id", "replication")
    b = by_parts.scan().collect().drop(TIMING).sort("config_id", "replication")
    assert a.equals(b.select(a.columns))
    part = first.parts[0]
    kept = parts.keep_only(part, set(part.keys[1:]))
    assert kept.keys == part.keys[1:] and kept.table.num_rows == len(part.keys) - 1


def test_parts_hold_the_rows_commit_writes_and_keep_only_filters_by_key(tmp_path):
    spec = spec_of(tmp_path)
    plan = build_plan(spec)
    work = work_of(plan, 2)
    rows = run_instances(plan.engine, work, None, True)
    encoded = run_instances(plan.engine, work, None, True, encode=True)
    assert not encoded.summary and not encoded.jobs and len(encoded.parts) == 3
    assert sorted(encoded.delivered()) == sorted((r["config_id"], r["replication"]) for r in rows.summary)

    by_commit, by_parts = ResultStore(tmp_path / "commit"), ResultStore(tmp_path / "parts")
    by_commit.commit(rows.summary, rows.jobs, rows.failures)
    publish(by_parts, encoded.parts)
    for table in ("summary", "jobs"):
        keys = ["config_id", "replication"] + (["job_id"] if table == "jobs" else [])
        a = by_commit.scan(table).collect().drop(TIMING, strict=False).sort(keys)
        b = by_parts.scan(table).collect().drop(TIMING, strict=False).sort(keys)
        assert a.equals(b.select(a.columns)), table

    part = encoded.parts[0]
    half = set(part.keys[::2])
    kept = parts.keep_only(part, half)
    assert set(kept.keys) == half and kept is not part
    summary, jobs = decode(kept.files["summary"]), decode(kept.files["jobs"])
    assert set(zip(summary["config_id"].to_pylist(), summary["replication"].to_pylist())) == half
    assert set(zip(jobs["config_id"].to_pylist(), jobs["replication"].to_pylist())) == half
    assert jobs.num_rows == kept.job_rows == 300 * len(half)
    assert parts.keep_only(part, set(part.keys)) is part and parts.keep_only(part, set()) is None


@pytest.fixture(scope="module")
def local_ray():
    import ray

    ray.init(address="local", num_cpus=2, include_dashboard=False)
    yield
    ray.shutdown()


def test_measured_packing_gives_the_rows_of_one_instance_per_task(tmp_path, local_ray):
    measured = spec_of(tmp_path, "measured")
    fixed = spec_of(tmp_path, "fixed", execution={"task_jobs": 1, "max_in_flight": 2})
    a, b = run_sweep(measured), run_sweep(fixed)
    assert a.rows_written == b.rows_written == 3 * 6 * 4 and not a.failures and not b.failures
    assert b.tasks == 6 * 4 and a.tasks < b.tasks
    for table in ("summary", "jobs"):
        keys = ["config_id", "replication"] + (["job_id"] if table == "jobs" else [])
        x = schedlab.load(measured.results_dir(), table).collect().drop(TIMING, strict=False).sort(keys)
        y = schedlab.load(fixed.results_dir(), table).collect().drop(TIMING, strict=False).sort(keys)
        assert x.equals(y.select(x.columns)), table
        assert x.select(keys).is_duplicated().sum() == 0
    assert set(a.stages) >= {"plan", "commit", "task_engine", "task_build", "task_encode"}
    assert a.stages["task_engine"] == pytest.approx(a.sim_seconds)


#: RLIMIT_FSIZE while parts are published: above every summary file, below the big per-job file.
FSIZE_LIMIT = 256 * 1024


def test_a_part_too_large_to_write_is_not_published_and_leaves_no_temp_file(tmp_path):
    import resource

    from schedlab.platform.storage.store import StoreWriteError

    spec = spec_of(
        tmp_path, workload={"kind": "synthetic", "njobs": 20_000, "shape": [0.5, 1.0]}, policies=["FIFO", "PS"]
    )
    plan = build_plan(spec)
    result = run_instances(plan.engine, work_of(plan, 1), None, True, encode=True)
    big = [p for p in result.parts if p.nbytes() > FSIZE_LIMIT]
    assert big and all(p.files["summary"].size < FSIZE_LIMIT for p in result.parts)
    store = ResultStore(tmp_path / "full")
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (FSIZE_LIMIT, hard))
    try:
        with pytest.raises(StoreWriteError) as err:
            publish(store, result.parts)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    assert "File too large" in str(err.value) and "not committed" in str(err.value)
    assert not list((store.root / ".tmp").glob("*")), "a temp file left behind"
    assert not list(store.root.glob("*/*/*.parquet")), "a file of an unpublished part"
    publish(store, result.parts)  # space back: all of it lands, once
    keys = schedlab.load(store.root).select("config_id", "replication").collect()
    assert keys.height == len(result.delivered()) and keys.is_duplicated().sum() == 0
    jobs = schedlab.load(store.root, "jobs").select("config_id", "replication", "job_id").collect()
    assert jobs.height == 20_000 * keys.height and jobs.is_duplicated().sum() == 0
