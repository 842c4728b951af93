"""schedlab/Batch-v0's two loops are one environment: ``loop="reference"``
(each episode the ``BatchRun`` `start_instance` builds, the agent its policy,
driven through the run's halves) and the compiled kernel (the default) give
identical observations, masks, slots, rewards, terminations and schedules,
step for step, to the bit -- on the Lublin generator, the Lublin log and
HPC2N's, without and with EASY backfilling, for small and large windows,
scripted and random agents and invalid actions, every reward; and over small
random job tables (hypothesis). The first-slot agent on the reference loop is
FCFS / EASY, row for row, as `run_instance` gives them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

gymnasium = pytest.importorskip("gymnasium")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import schedlab.gym  # noqa: E402,F401  (registers the environments)
from schedlab.api import run_instance, start_instance  # noqa: E402
from schedlab.engines.batch.gym import BatchEnv  # noqa: E402
from schedlab.errors import UserError  # noqa: E402
from schedlab.gym.common import InvalidAction  # noqa: E402
from tests.test_start_instance import assert_same_rows  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
LUBLIN = DATA / "lublin" / "lublin_256.swf.gz"
HPC2N = DATA / "pwa-swf" / "HPC2N-2002-2.2-cln.swf.gz"
needs_traces = pytest.mark.skipif(not (LUBLIN.exists() and HPC2N.exists()), reason="Lublin / HPC2N logs not present")


# ---- agents: (environment, info, rng) -> action; both loops get the action the kernel's side chose ----------


def first(env, info, rng):
    return 0


def last_filled(env, info, rng):
    return int(np.flatnonzero(info["action_mask"])[-1])


def shortest(env, info, rng):
    return int(np.argmin(env.requested[info["jobs"][info["action_mask"]]]))


def random_valid(env, info, rng):
    return int(rng.choice(np.flatnonzero(info["action_mask"])))


def random_slot(env, info, rng):
    """Any slot of the action space: often an empty one (``invalid_action`` reads it)."""
    return int(rng.integers(0, len(info["action_mask"])))


def same_bits(a: float, b: float) -> bool:
    """The same float64, bit for bit (a NaN -- utilisation over an empty horizon -- equal to itself)."""
    return np.float64(a).tobytes() == np.float64(b).tobytes()


def same_info(a: dict, b: dict, where: str) -> None:
    assert np.array_equal(a["action_mask"], b["action_mask"]), f"{where}: masks differ"
    assert np.array_equal(a["jobs"], b["jobs"]), f"{where}: slots differ"
    assert a["time"] == b["time"], f"{where}: time {a['time']!r} != {b['time']!r}"


def same_schedule(kernel: BatchEnv, reference: BatchEnv, where: str) -> None:
    (s1, e1), (s2, e2) = kernel.schedule(), reference.schedule()
    assert np.array_equal(s1, s2, equal_nan=True) and np.array_equal(e1, e2, equal_nan=True), f"{where}: schedules"


def lockstep(kernel: BatchEnv, reference: BatchEnv, agent, seed: int, options=None) -> int:
    """Run one episode on both loops with the same actions; every output equal, to the bit. Returns the steps."""
    assert (kernel.loop, reference.loop) == ("kernel", "reference")
    o1, i1 = kernel.reset(seed=seed, options=options)
    o2, i2 = reference.reset(seed=seed, options=options)
    assert o1.dtype == o2.dtype == np.float32 and np.array_equal(o1, o2), "reset: observations differ"
    same_info(i1, i2, "reset")
    assert kernel.episode.equals(reference.episode)
    rng = np.random.default_rng(seed)
    steps = 0
    while True:
        a = agent(kernel, i1, rng)
        o1, r1, t1, u1, i1 = kernel.step(a)
        o2, r2, t2, u2, i2 = reference.step(a)
        steps += 1
        where = f"step {steps} (action {a})"
        assert np.array_equal(o1, o2), f"{where}: observations differ"
        assert type(r1) is type(r2) is float and same_bits(r1, r2), f"{where}: reward {r1!r} != {r2!r}"
        assert (t1, u1) == (t2, u2), f"{where}: terminations differ"
        same_info(i1, i2, where)
        same_schedule(kernel, reference, where)
        if t1:
            break
    start, end = reference.schedule()
    assert not np.isnan(start).any() and not np.isnan(end).any()  # every job started
    return steps


def scripted(actions: list[int]):
    """An agent playing ``actions`` in turn (an empty slot: ``invalid_action``), then cycling
    them with an empty slot read as slot 0 (under "penalty" an empty slot forever would never end)."""
    turn = iter(range(10**6))

    def agent(env, info, rng):
        i = next(turn)
        a = actions[i % len(actions)] % len(info["action_mask"])
        return a if i < len(actions) or info["action_mask"][a] else 0

    return agent


def pair(**kw) -> tuple[BatchEnv, BatchEnv]:
    return BatchEnv(**kw), BatchEnv(loop="reference", **kw)


@pytest.fixture(scope="module")
def hpc2n() -> pl.DataFrame:
    from schedlab.workloads.traces.swf import read

    return read(HPC2N).jobs


#: (source, backfill, window, agent, invalid_action, reward, reward_mode): every agent, source,
#: backfilling and reward somewhere, small windows (1, 2, 3) as well as large ones.
CASES = [
    ("generator", "none", 128, random_valid, "nearest", "bsld", "final"),
    ("generator", "easy", 128, random_valid, "nearest", "bsld", "step"),
    ("generator", "easy", 3, random_slot, "penalty", "wait", "step"),
    ("generator", "none", 1, random_slot, "nearest", "utilisation", "final"),
    ("lublin", "none", 16, shortest, "nearest", "bsld", "step"),
    ("lublin", "easy", 16, shortest, "nearest", "wait", "final"),
    ("lublin", "easy", 2, random_slot, "nearest", "bsld", "step"),
    ("lublin", "easy", 64, last_filled, "nearest", "utilisation", "final"),
    ("lublin", "none", 64, random_slot, "penalty", "bsld", "final"),
    ("hpc2n", "none", 8, random_valid, "nearest", "wait", "step"),
    ("hpc2n", "easy", 8, random_valid, "nearest", "bsld", "step"),
    ("hpc2n", "easy", 128, random_slot, "penalty", "bsld", "final"),
    ("hpc2n", "none", 1, first, "nearest", "bsld", "step"),
    ("hpc2n", "easy", 32, last_filled, "nearest", "wait", "step"),
]


@needs_traces
@pytest.mark.parametrize(("source", "backfill", "window", "agent", "invalid", "reward", "mode"), CASES)
def test_the_reference_loop_is_the_kernel_step_for_step(hpc2n, source, backfill, window, agent, invalid, reward, mode):
    kw = {
        "sequence": 200,
        "window": window,
        "backfill": backfill,
        "invalid_action": invalid,
        "reward": reward,
        "reward_mode": mode,
    }
    if source == "generator":
        kw["nodes"] = 64
    elif source == "lublin":
        kw["trace"] = str(LUBLIN)
    else:
        kw["jobs"], kw["nodes"] = hpc2n, 240
    kernel, reference = pair(**kw)
    for seed in (0, 1):
        steps = lockstep(kernel, reference, agent, seed)
        assert steps >= 1
    assert reference.result is not None and kernel.result is None  # the engine's rows: the reference loop's


@needs_traces
@pytest.mark.parametrize(("backfill", "policy"), [("none", "FCFS"), ("easy", "EASY")])
def test_the_first_slot_on_the_reference_loop_is_fcfs_and_easy_row_for_row(backfill, policy):
    env = gymnasium.make(
        "schedlab/Batch-v0", trace=str(LUBLIN), sequence=300, window=300, backfill=backfill, loop="reference"
    )
    _, info = env.reset(seed=7)
    done, total = False, 0.0
    while not done:
        _, total, done, _, info = env.step(0)
    u = env.unwrapped
    system = {"model": "procs", "procs": 256}
    for path in ("fast", "reference"):
        want = run_instance("batch", u.episode, policy, None, system, path=path).result
        assert_same_rows(u.result, want, f"slot 0 on the reference loop vs {policy} ({path})")
    assert total == -want.summary["stretch_mean"]  # the final reward: the engine's metric, to the bit


def test_the_reference_loop_passes_gymnasiums_check_env():
    from gymnasium.utils.env_checker import check_env

    check_env(gymnasium.make("schedlab/Batch-v0", loop="reference").unwrapped)  # the defaults: Lublin jobs, window 128


def test_the_episode_is_the_run_start_instance_builds(monkeypatch):
    """The reference loop's episode is `start_instance`'s run of the job table
    with the agent as its policy, stepped to its end by the environment."""
    import schedlab.engines.batch.gym_reference as gym_module

    calls = []

    def recording(engine, jobs, policy, params=None, system=None, **hooks):
        started = start_instance(engine, jobs, policy, params, system, **hooks)
        calls.append((engine, jobs, policy, params, system, hooks, started))
        return started

    monkeypatch.setattr(gym_module, "start_instance", recording)
    env = BatchEnv(loop="reference", nodes=32, sequence=60, window=8, backfill="easy")
    _, info = env.reset(seed=3)
    done = False
    while not done:
        _, _, done, _, info = env.step(last_filled(env, info, None))
    [(engine, jobs, policy, params, system, hooks, started)] = calls
    assert (engine, params, system, hooks) == ("batch", None, {"model": "procs", "procs": 32}, {})
    assert jobs is env.episode and policy.name == "agent" and policy.backfill
    assert started.run.done and started.run.policy.queue == {}


def test_an_episode_without_a_decision_ends_at_its_first_step_on_both_loops():
    jobs = pl.DataFrame(
        {"job_id": [0, 1, 2], "submit": [0.0, 0.0, 3.0], "runtime": [4.0, 1.0, 2.0], "procs": [1, 2, 1]}
    )
    for mode in ("final", "step"):
        kernel, reference = pair(jobs=jobs, nodes=4, sequence=3, window=4, reward_mode=mode)
        assert lockstep(kernel, reference, random_slot, 0) == 1
    kernel, reference = pair(jobs=jobs, nodes=4, sequence=3, window=4, invalid_action="penalty")
    assert lockstep(kernel, reference, random_slot, 2) >= 1


def test_invalid_actions_raise_alike_and_a_step_after_the_end_is_refused():
    from tests.test_gym_batch import burst

    kernel, reference = pair(jobs=burst(), nodes=4, sequence=12, window=16, invalid_action="raise")
    errors = []
    for env in (kernel, reference):
        env.reset(seed=0)
        with pytest.raises(InvalidAction) as err:
            env.step(12)
        errors.append(str(err.value))
        with pytest.raises(InvalidAction, match="outside"):
            env.step(16)  # outside the action space
    assert errors[0] == errors[1]
    _, reference = pair(jobs=burst(), nodes=4, sequence=12, window=16)
    reference.reset(seed=0)
    done = False
    while not done:
        done = reference.step(0)[2]
    with pytest.raises(UserError, match="step\\(\\) after the episode ended"):
        reference.step(0)


def test_the_vector_environment_is_the_kernels_alone():
    with pytest.raises(UserError, match="the vector environment steps its episodes in the compiled kernel only"):
        gymnasium.make_vec("schedlab/Batch-v0", num_envs=2, loop="reference", sequence=20)
    with pytest.raises(UserError, match="loop must be one of 'kernel', 'reference'; got 'python'"):
        gymnasium.make("schedlab/Batch-v0", loop="python")
    sync = gymnasium.make_vec("schedlab/Batch-v0", num_envs=2, vectorization_mode="sync", loop="reference", sequence=20)
    obs, _ = sync.reset(seed=0)
    assert obs.shape == (2, 128 * 5 + 2)
    sync.close()


@st.composite
def job_tables(draw):
    """A small job table (ties in submit and runtime, zero runtimes, requested times shorter
    than runtimes) and the machine, window and settings of an episode over it."""
    n = draw(st.integers(2, 10))
    nodes = draw(st.integers(1, 6))
    ints = st.integers
    submit = sorted(draw(st.lists(ints(0, 12), min_size=n, max_size=n)))
    table = pl.DataFrame(
        {
            "job_id": np.arange(n),
            "submit": np.array(submit, dtype=float),
            "runtime": np.array(draw(st.lists(ints(0, 20), min_size=n, max_size=n)), dtype=float),
            "procs": draw(st.lists(ints(1, nodes), min_size=n, max_size=n)),
            "requested_time": np.array(draw(st.lists(ints(1, 25), min_size=n, max_size=n)), dtype=float),
        }
    )
    reward, mode = draw(
        st.sampled_from(
            [("bsld", "final"), ("bsld", "step"), ("wait", "final"), ("wait", "step"), ("utilisation", "final")]
        )
    )
    kw = {
        "jobs": table,
        "nodes": nodes,
        "sequence": n,
        "window": draw(ints(1, 4)),
        "backfill": draw(st.sampled_from(["none", "easy"])),
        "reward": reward,
        "reward_mode": mode,
        "invalid_action": draw(st.sampled_from(["nearest", "penalty"])),
    }
    return kw, draw(st.lists(ints(0, 3), min_size=1, max_size=12))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(job_tables())
def test_property_the_reference_loop_is_the_kernel_on_small_tables(case):
    kw, actions = case
    kernel, reference = pair(**kw)
    lockstep(kernel, reference, scripted(actions), 0, options={"start": 0})
