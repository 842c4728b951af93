"""schedlab/Batch-v0 is the batch engine: scripted agents reproduce the
built-in policies' schedules bit for bit and the episode's reward is minus
the engine's metric on the same jobs; Gymnasium's own checker passes; bad
input gets one clear error."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

gymnasium = pytest.importorskip("gymnasium")

import schedlab.gym  # noqa: E402,F401  (registers the environments)
from schedlab.engines.batch import run_table  # noqa: E402
from schedlab.engines.batch.policies import BATCH_POLICIES  # noqa: E402
from schedlab.errors import UserError  # noqa: E402
from schedlab.gym.common import InvalidAction  # noqa: E402

LUBLIN = Path(__file__).resolve().parents[2] / "shared" / "data" / "lublin" / "lublin_256.swf.gz"
needs_lublin = pytest.mark.skipif(not LUBLIN.exists(), reason="Lublin log not present")
#: Per-step rewards sum the jobs' terms in start order, the engine's mean in job order.
SUM_ORDER_RTOL = 1e-12


def burst(n=12, nodes=4, seed=0):
    """``n`` jobs submitted at once then a few later: every slot of a small window is full at the first decisions."""
    rng = np.random.default_rng(seed)
    return pl.DataFrame(
        {
            "job_id": np.arange(n),
            "submit": np.r_[np.zeros(n - 3), [5.0, 7.0, 7.0]],
            "runtime": rng.integers(1, 50, n).astype(float),
            "procs": rng.integers(1, nodes + 1, n),
            "requested_time": rng.integers(50, 100, n).astype(float),
        }
    )


def play(env, agent, seed=0, options=None):
    """Run one episode; return (summed reward, steps)."""
    obs, info = env.reset(seed=seed, options=options)
    total, steps = 0.0, 0
    while True:
        obs, r, term, trunc, info = env.step(agent(env.unwrapped, info))
        total += r
        steps += 1
        assert env.observation_space.contains(obs)
        if term or trunc:
            return total, steps


def head(env, info):
    return 0


def shortest(env, info):
    return int(np.argmin(env.requested[info["jobs"][info["action_mask"]]]))  # first of the smallest: SJF's tie rule


@needs_lublin
@pytest.mark.parametrize(
    "backfill,agent,policy",
    [("none", head, "FCFS"), ("easy", head, "EASY"), ("none", shortest, "SJF"), ("easy", shortest, "SJF+EASY")],
)
def test_scripted_agents_are_the_built_in_policies_bit_for_bit(backfill, agent, policy):
    env = gymnasium.make("schedlab/Batch-v0", trace="lublin_256.swf", sequence=300, window=300, backfill=backfill)
    total, steps = play(env, agent, seed=7)
    u = env.unwrapped
    per_job, summary = run_table(u.episode, BATCH_POLICIES[policy], procs=256, path="fast")
    start, end = u.schedule()
    assert start.tolist() == per_job["start"].tolist() and end.tolist() == per_job["end"].tolist()
    assert total == -summary["stretch_mean"]  # final reward: the engine's metric, to the bit
    assert steps >= 300 or backfill == "easy"


@needs_lublin
@pytest.mark.parametrize("reward,metric", [("bsld", "stretch_mean"), ("wait", "wait_mean")])
def test_per_step_rewards_sum_to_minus_the_engines_metric(reward, metric):
    env = gymnasium.make(
        "schedlab/Batch-v0",
        trace=str(LUBLIN),
        sequence=200,
        window=64,
        backfill="easy",
        reward=reward,
        reward_mode="step",
    )
    rng = np.random.default_rng(1)
    total, _ = play(env, lambda e, info: int(rng.choice(np.flatnonzero(info["action_mask"]))), seed=3)
    u = env.unwrapped
    start, _ = u.schedule()
    jobs = u.episode.with_columns(pl.Series("start", start))
    # replay the agent's schedule as a policy: the engine's metric on the same schedule
    _, summary = run_table(jobs, _replay(start), procs=256, path="reference")
    assert total == pytest.approx(-summary[metric], rel=SUM_ORDER_RTOL)


def _replay(start):
    """A batch policy that starts each job at the given time (the agent's schedule)."""
    from schedlab.api.batch import Policy

    class Replay(Policy):
        name = "replay"

        def __init__(self, machine):
            super().__init__(machine)
            self.queue = []

        def arrive(self, job):
            self.queue.append(job)

        def complete(self, job):
            pass

        def schedule(self, now):
            out = [j for j in self.queue if start[j] == now]
            self.queue = [j for j in self.queue if start[j] != now]
            return out

    return Replay


def test_utilisation_reward_is_the_engines():
    env = gymnasium.make("schedlab/Batch-v0", jobs=burst(), nodes=4, sequence=12, window=4, reward="utilisation")
    total, _ = play(env, head)
    _, summary = run_table(env.unwrapped.episode, BATCH_POLICIES["FCFS"], procs=4)
    assert total == summary["utilisation"]


def test_gymnasium_check_env_passes():
    from gymnasium.utils.env_checker import check_env

    env = gymnasium.make("schedlab/Batch-v0", jobs=burst(), nodes=4, sequence=10, window=4)
    check_env(env.unwrapped)
    check_env(gymnasium.make("schedlab/Batch-v0").unwrapped)  # the defaults: Lublin jobs, window 128


def test_an_action_outside_the_mask_is_the_nearest_slot_or_a_penalised_no_op():
    from schedlab.gym.common import INVALID_ACTION_PENALTY

    kw = {"jobs": burst(), "nodes": 4, "sequence": 12, "window": 16}
    near = gymnasium.make("schedlab/Batch-v0", **kw)
    last = gymnasium.make("schedlab/Batch-v0", **kw)
    _, info = near.reset(seed=0)
    last.reset(seed=0)
    top = int(np.flatnonzero(info["action_mask"])[-1])
    assert top < 15
    a = near.step(15)  # an empty slot: the nearest filled one, the last
    b = last.step(top)
    assert np.array_equal(a[0], b[0]) and a[1:4] == b[1:4]
    pen = gymnasium.make("schedlab/Batch-v0", invalid_action="penalty", **kw)
    obs, info = pen.reset(seed=0)
    obs2, r, term, trunc, info2 = pen.step(15)  # a no-op: same state, the penalty
    assert np.array_equal(obs, obs2) and r == -INVALID_ACTION_PENALTY and not (term or trunc)
    assert np.array_equal(info["jobs"], info2["jobs"])


@pytest.mark.parametrize("loop", ["kernel", "reference"])
def test_what_a_step_returns_is_the_users_never_written_again_nor_read_back(loop):
    """The observation, mask and slots a step hands out are fresh arrays: the
    environment never writes them again (the user keeps them, as a rollout
    buffer does), and what the user writes into them does not change the
    episode (the environment reads its own state, not them)."""
    kw = {"jobs": burst(n=30), "nodes": 4, "sequence": 30, "window": 8, "backfill": "easy", "loop": loop}
    kept, scribbled = gymnasium.make("schedlab/Batch-v0", **kw), gymnasium.make("schedlab/Batch-v0", **kw)
    rng = np.random.default_rng(0)
    returned, snapshots = [], []
    a, ia = kept.reset(seed=0)
    b, ib = scribbled.reset(seed=0)
    term = False
    while not term:
        assert np.array_equal(a, b) and np.array_equal(ia["action_mask"], ib["action_mask"])
        assert np.array_equal(ia["jobs"], ib["jobs"])
        returned.append((a, ia["action_mask"], ia["jobs"]))
        snapshots.append((a.copy(), ia["action_mask"].copy(), ia["jobs"].copy()))
        b[:] = 1.0  # the user's own arrays now
        ib["action_mask"][:] = False
        ib["jobs"][:] = 0
        action = int(rng.integers(0, 8))  # empty slots included: the nearest filled one
        a, ra, term, _, ia = kept.step(action)
        b, rb, term_b, _, ib = scribbled.step(action)
        assert ra == rb and term == term_b
    for got, want in zip(returned, snapshots, strict=True):
        assert all(np.array_equal(g, w) for g, w in zip(got, want, strict=True))
    assert np.array_equal(kept.unwrapped.schedule()[0], scribbled.unwrapped.schedule()[0])


def test_decisions_that_cannot_change_the_schedule_are_not_asked():
    """Three jobs that fit together start without a question; then one job waits alone: none either."""
    jobs = pl.DataFrame(
        {
            "job_id": [0, 1, 2, 3, 4],
            "submit": [0.0, 0.0, 0.0, 100.0, 100.0],
            "runtime": [10.0, 20.0, 30.0, 5.0, 5.0],
            "procs": [1, 1, 2, 4, 4],
        }
    )
    env = gymnasium.make("schedlab/Batch-v0", jobs=jobs, nodes=4, sequence=5, window=4)
    _, info = env.reset(seed=0, options={"start": 0})
    assert info["time"] == 100.0 and info["action_mask"].tolist() == [
        True,
        True,
        False,
        False,
    ]  # the first pass asked nothing
    _, r, term, _, info = env.step(1)  # job 4 first: it fills the machine; job 3 then waits alone, and starts at 105
    assert term and env.unwrapped.schedule()[0].tolist() == [0.0, 0.0, 0.0, 105.0, 100.0]


@needs_lublin
@pytest.mark.parametrize("backfill", ["none", "easy"])
def test_the_vector_environment_is_the_environment_episode_for_episode(backfill):
    kw = {"trace": "lublin_256.swf", "sequence": 64, "window": 32, "backfill": backfill, "reward_mode": "step"}
    envs = gymnasium.make_vec("schedlab/Batch-v0", num_envs=3, **kw)
    singles = [gymnasium.make("schedlab/Batch-v0", **kw) for _ in range(3)]
    assert type(envs.unwrapped).__name__ == "BatchVectorEnv"
    obs, info = envs.reset(seed=4)
    for i, env in enumerate(singles):
        o, _ = env.reset(seed=4 + i)
        assert np.array_equal(o, obs[i])
    rng = np.random.default_rng(0)
    done = np.zeros(3, dtype=bool)
    while not done.all():
        acts = rng.integers(0, 32, 3)  # often an empty slot: the nearest filled one
        obs, r, term, trunc, info = envs.step(acts)
        for i, env in enumerate(singles):
            if done[i]:
                continue
            o, ri, ti, _, _ = env.step(acts[i])
            assert np.array_equal(o, obs[i]) and ri == r[i] and ti == term[i]
            done[i] = ti
    envs.close()


def test_defaults_draw_lublin_jobs_and_episodes_are_seeded():
    env = gymnasium.make("schedlab/Batch-v0", sequence=64)
    rng = np.random.default_rng(0)
    agent = lambda e, info: int(rng.choice(np.flatnonzero(info["action_mask"])))  # noqa: E731
    play(env, agent, seed=5)
    a = env.unwrapped.episode
    obs1, _ = env.reset(seed=5)
    assert env.unwrapped.episode.equals(a)
    obs2, _ = env.reset(seed=5)
    assert np.array_equal(obs1, obs2) and obs1.shape == (128 * 5 + 2,)


@needs_lublin
def test_vector_environments_run():
    envs = gymnasium.make_vec(
        "schedlab/Batch-v0", num_envs=3, vectorization_mode="sync", trace="lublin_256.swf", sequence=32
    )
    obs, info = envs.reset(seed=0)
    assert obs.shape == (3, 128 * 5 + 2) and info["action_mask"].shape == (3, 128)
    for _ in range(40):  # past the first episodes' ends: autoreset
        obs, r, term, trunc, info = envs.step(np.zeros(3, dtype=np.int64))
    envs.close()


def test_bad_input_gets_one_clear_error():
    with pytest.raises(UserError, match="window must be an integer >= 1; got 0"):
        gymnasium.make("schedlab/Batch-v0", window=0)
    with pytest.raises(UserError, match="job 0 needs 4 processors but the machine has 2 \\(give nodes >= 4"):
        gymnasium.make("schedlab/Batch-v0", jobs=burst(seed=2), nodes=2, sequence=5)
    with pytest.raises(UserError, match="sequence 50 is longer than the job table"):
        gymnasium.make("schedlab/Batch-v0", jobs=burst(), nodes=4, sequence=50)
    # the columns the batch engine declares (Engine.jobs), in its words
    with pytest.raises(UserError, match="^schedlab/Batch-v0: the job table needs the columns procs$"):
        gymnasium.make("schedlab/Batch-v0", jobs=burst().drop("procs"), nodes=4, sequence=5)
    with pytest.raises(UserError, match="no such file"):
        gymnasium.make("schedlab/Batch-v0", trace="no-such-trace.swf")
    with pytest.raises(UserError, match="reward 'utilisation' is given at the end only"):
        gymnasium.make("schedlab/Batch-v0", reward="utilisation", reward_mode="step")
    with pytest.raises(UserError, match="invalid_action must be one of 'nearest', 'penalty', 'raise'; got 'skip'"):
        gymnasium.make("schedlab/Batch-v0", invalid_action="skip")
    env = gymnasium.make("schedlab/Batch-v0", jobs=burst(), nodes=4, sequence=12, window=16, invalid_action="raise")
    env.reset(seed=0)
    with pytest.raises(InvalidAction, match=r"action 12 is outside info\['action_mask'\] \(valid: 0\.\.8\)"):
        env.step(12)
    with pytest.raises(InvalidAction, match="outside"):
        env.step(-1)


def test_the_vector_environment_reads_invalid_actions_as_told():
    from schedlab.gym.common import INVALID_ACTION_PENALTY

    kw = {"jobs": burst(), "nodes": 4, "sequence": 12, "window": 16}
    envs = gymnasium.make_vec("schedlab/Batch-v0", num_envs=2, invalid_action="penalty", **kw)
    obs, _ = envs.reset(seed=0)
    obs2, r, term, _, _ = envs.step(np.array([15, 15]))
    assert np.array_equal(obs, obs2) and r.tolist() == [-INVALID_ACTION_PENALTY] * 2 and not term.any()
    strict = gymnasium.make_vec("schedlab/Batch-v0", num_envs=2, invalid_action="raise", **kw)
    strict.reset(seed=0)
    with pytest.raises(InvalidAction, match=r"sub-environment 1\): action 15 is outside"):
        strict.step(np.array([0, 15]))
    with pytest.raises(InvalidAction, match="outside"):
        envs.step(np.array([0, 16]))  # outside the action space: whatever the option
