"""One way to build an instance: `start_instance` hands out the run that
`run_instance` runs, and check-policy and the environments build theirs with it.

`schedlab.api.start_instance` builds an engine's steppable reference run
(QueueRun, PackingRun, BatchRun, DfrsRun) from a job table exactly as
`run_instance`'s reference path does; stepped to its end, its rows are
`run_instance`'s, to the bit. ``schedlab check-policy`` (with its guard,
check mode and watch hooks) and the Gymnasium environments (with their
agent's decision point as the policy) call it: a spy on the function sees
every call, and the instance each caller built gives, stepped to its end, the
rows `run_instance` gives for the same table, policy and system.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from schedlab.api import run_instance, start_instance

#: Summary values that measure the machine, not the schedule (``views.replay.TIMING_METRICS``).
TIMINGS = ("sim_seconds", "bound_seconds")


def _same_value(a, b) -> bool:
    return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))


def assert_same_rows(got, want, what: str) -> None:
    """Per-job columns, summary and series equal to the bit (timings aside)."""
    assert list(got.jobs) == list(want.jobs), what
    for col in want.jobs:
        a, b = np.asarray(got.jobs[col]), np.asarray(want.jobs[col])
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), f"{what}: column {col} differs"
    keys = [k for k in want.summary if k not in TIMINGS]
    assert [k for k in got.summary if k not in TIMINGS] == keys, what
    for k in keys:
        assert _same_value(got.summary[k], want.summary[k]), f"{what}: {k} {got.summary[k]!r} != {want.summary[k]!r}"
    assert (got.series is None) == (want.series is None), what
    for col in want.series or {}:
        assert got.series[col].tobytes() == want.series[col].tobytes(), f"{what}: series {col} differs"


def _tables():
    from schedlab.workloads.lublin import lublin_workload
    from schedlab.workloads.packing_synthetic import packing_workload
    from schedlab.workloads.synthetic import queue_workload

    rng = np.random.default_rng(11)
    lublin = lublin_workload(rng, njobs=40, nodes=32)
    return {
        "queue": (queue_workload(rng, njobs=300, load=0.9), ["FIFO", "PS", "PSBS"], None),
        "packing": (
            packing_workload(rng, slots=60, rate=1.5, uniform=(0.1, 0.5), mean_service=10),
            ["FIFO-FF", "BF-J"],
            {"servers": 4, "capacity": 1.0, "epoch": 1.0, "sample_every": 5.0},
        ),
        "batch": (lublin, ["FCFS", "EASY"], {"model": "procs", "procs": 32}),
        "dfrs": (lublin, ["GreedyPM*/OPT=MIN"], {"nodes": 32}),
    }


@pytest.mark.parametrize("engine", ["queue", "packing", "batch", "dfrs"])
def test_a_started_instance_stepped_to_its_end_is_run_instance_to_the_bit(engine):
    jobs, policies, system = _tables()[engine]
    for policy in policies:
        started = start_instance(engine, jobs, policy, None, system)
        run = started.run
        assert not run.done and run.peek() >= 0.0
        steps = 0
        while not run.done:
            run.step()
            steps += 1
        assert steps > 1  # stepped here: an event, an epoch or an instant at a time
        want = run_instance(engine, jobs, policy, None, system, path="reference").result
        assert_same_rows(started.rows(), want, f"{engine} {policy}")


def test_a_hook_the_engine_does_not_take_is_one_clear_error():
    from schedlab.errors import UserError

    jobs, _, _ = _tables()["queue"]
    with pytest.raises(UserError, match="engine 'queue': its run takes no check"):
        start_instance("queue", jobs, "FIFO", check=True)


@pytest.fixture
def spy(monkeypatch):
    """Every call of `start_instance` (the function's own module, where
    check-policy finds it) and the run it returned."""
    import schedlab.engines.instance as instance

    calls: list[tuple[str, tuple, dict, object]] = []
    real = instance.start_instance

    def recording(engine, jobs, policy, params=None, system=None, **hooks):
        started = real(engine, jobs, policy, params, system, **hooks)
        calls.append((engine, (jobs, policy, params, system), hooks, started))
        return started

    monkeypatch.setattr(instance, "start_instance", recording)
    return calls


@pytest.mark.parametrize(
    ("engine", "policy", "hooks"),
    [
        ("queue", "PSBS", {"hidden", "watch"}),
        ("packing", "BF-J", {"hidden", "check"}),
        ("batch", "EASY", {"hidden"}),
        ("dfrs", "Greedy*/OPT=MIN", {"hidden", "check", "watch"}),
    ],
)
def test_check_policy_builds_its_runs_with_start_instance(spy, engine, policy, hooks):
    from schedlab.checks import check_policy
    from schedlab.engines import get_engine

    report = check_policy(engine, policy, examples=5, seed=3)
    assert report.ok, report.render()
    assert len(spy) >= 2 * report.workloads  # every workload, twice (the determinism invariant)
    cls = get_engine(engine).policy(policy)
    for name, (jobs, got_cls, params, system), got_hooks, started in spy[:4]:
        assert (name, got_cls, set(got_hooks)) == (engine, cls, hooks)
        assert started.run.done  # check-policy stepped it to its end
        want = run_instance(engine, jobs, policy, params, system, path="reference").result
        assert_same_rows(started.rows(), want, f"check-policy's {engine} run")


def _spy_on(monkeypatch, module) -> list:
    calls: list = []
    real = module.start_instance

    def recording(engine, jobs, policy, params=None, system=None, **hooks):
        started = real(engine, jobs, policy, params, system, **hooks)
        calls.append((engine, jobs, policy, params, system, hooks))
        return started

    monkeypatch.setattr(module, "start_instance", recording)
    return calls


def _first_slot(info) -> int:
    return int(np.flatnonzero(info["action_mask"])[0])


@pytest.mark.parametrize(
    ("env_id", "module", "engine", "same_as", "kwargs"),
    [
        ("schedlab/Queue-v0", "schedlab.engines.queue.gym", "queue", "FIFO", {}),
        ("schedlab/Packing-v0", "schedlab.engines.packing.gym", "packing", "FIFO-FF", {}),
        ("schedlab/Batch-v0", "schedlab.engines.batch.gym_reference", "batch", "FCFS", {"loop": "reference"}),
        (
            "schedlab/Batch-v0",
            "schedlab.engines.batch.gym_reference",
            "batch",
            "EASY",
            {"loop": "reference", "backfill": "easy"},
        ),
    ],
)
def test_an_environment_builds_its_episode_with_start_instance(monkeypatch, env_id, module, engine, same_as, kwargs):
    """The episode is the instance `start_instance` builds with the agent's
    decision point as its policy; the first-slot agent is the built-in it
    mirrors, so the episode's rows are `run_instance`'s for that policy
    (Batch-v0: its reference loop; its compiled kernel reads the same arrays,
    the next test, and gives the same schedules, tests/test_batch_gym_reference.py)."""
    import importlib

    gymnasium = pytest.importorskip("gymnasium")
    import schedlab.gym  # noqa: F401  (registers the environments)

    calls = _spy_on(monkeypatch, importlib.import_module(module))
    env = gymnasium.make(env_id, sequence=120, **kwargs)
    obs, info = env.reset(seed=7)
    done = False
    while not done:
        obs, _, done, _, info = env.step(_first_slot(info))
    u = env.unwrapped
    assert len(calls) >= 1
    name, jobs, policy, params, system, hooks = calls[-1]
    assert (name, params, hooks) == (engine, None, {})
    assert jobs is u.episode and policy.name == "agent"
    want = run_instance(engine, u.episode, same_as, None, system, path="reference").result
    assert_same_rows(u.result, want, f"{env_id}'s episode")


def test_batch_env_episodes_are_the_arrays_start_instance_builds():
    """Batch-v0's compiled kernel (its default loop) runs its episodes on the
    arrays of the ``BatchRun`` `start_instance` builds (which its reference
    loop runs): submit, runtime, requested time and need, to the bit, on both sources."""
    gymnasium = pytest.importorskip("gymnasium")
    from schedlab.engines.batch import gym_kernel as K
    from schedlab.workloads.lublin import lublin_workload

    table = lublin_workload(np.random.default_rng(2), njobs=300, nodes=64)
    for kw in ({"nodes": 64}, {"jobs": table.with_columns(pl.col("runtime").alias("requested_time")), "nodes": 64}):
        env = gymnasium.make("schedlab/Batch-v0", sequence=100, window=16, **kw).unwrapped
        env.reset(seed=5)
        F, N = env._state[0], env._state[1]
        run = start_instance("batch", env.episode, "FCFS", None, {"model": "procs", "procs": env.nodes}).run
        assert F[0, K.SUBMIT].tolist() == run.sub_l
        assert F[0, K.RUNTIME].tolist() == list(run.run_l)
        assert F[0, K.REQUESTED].tolist() == run.machine.requested
        assert N[0, K.NEED].tolist() == run.need_l
        assert run.machine.capacity == env.nodes
