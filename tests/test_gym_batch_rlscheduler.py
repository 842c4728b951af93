"""``schedlab/Batch-v0`` in RLScheduler's setting (``setting="rlscheduler"``,
``loop="reference"``; schedlab.engines.batch.gym_rlscheduler): Gymnasium's
checker, a scripted agent against the batch engine's policy in the same
setting, bit for bit, its observation's fill worked by hand, its decision
points (the compiled kernel of this setting is checked against this loop in
tests/test_gym_batch_rlscheduler_kernel.py)."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import schedlab.gym  # noqa: F401 (registers the environments)
from schedlab.engines.batch.gym_rlscheduler import fill
from schedlab.engines.batch.policies import BATCH_POLICIES
from schedlab.engines.batch.sim.engine import simulate_batch
from schedlab.errors import UserError

LUBLIN = Path(__file__).resolve().parents[2] / "shared" / "data" / "lublin" / "lublin_256.swf.gz"
needs_lublin = pytest.mark.skipif(not LUBLIN.exists(), reason="Lublin log not present")


def make(backfill, loop="reference", **kw):
    return gym.make("schedlab/Batch-v0", trace=str(LUBLIN), backfill=backfill, setting="rlscheduler", loop=loop, **kw)


@needs_lublin
@pytest.mark.parametrize("loop", ["reference", "kernel"])
@pytest.mark.parametrize("backfill", ["none", "easy"])
def test_gymnasium_check_env_passes(backfill, loop):
    check_env(make(backfill, loop, sequence=128, window=16).unwrapped, skip_render_check=True)


@needs_lublin
@pytest.mark.parametrize(("backfill", "policy"), [("none", "SJF"), ("easy", "SJF+EASY")])
def test_a_shortest_first_agent_is_sjf_in_rlschedulers_setting_bit_for_bit(backfill, policy):
    """The agent picking the shortest requested time (ties: submit) among its
    slots gives the batch engine's SJF with RLScheduler's rules, start for
    start, on 1,024 jobs of Table V's first sequence; it is asked once per job
    that is not backfilled (every job without backfilling), even when one job waits."""
    env = make(backfill, sequence=1024, window=128)
    u = env.unwrapped
    obs, info = env.reset(options={"start": 1981})
    submit = u.episode["submit"].to_numpy()
    steps, done = 0, False
    while not done:
        jobs = info["jobs"][info["jobs"] >= 0]
        pick = min(range(len(jobs)), key=lambda i: (u.requested[jobs[i]], submit[jobs[i]]))
        obs, reward, term, trunc, info = env.step(pick)
        steps += 1
        done = term or trunc
    start, _ = u.schedule()
    params = {"commit": True, "passes": "event", **({"backfill": "rlscheduler"} if backfill == "easy" else {})}
    cls = BATCH_POLICIES[policy]
    table = u.episode
    res = simulate_batch(
        table["submit"].to_numpy().astype(float),
        table["runtime"].to_numpy().astype(float),
        table["requested_time"].to_numpy().astype(float),
        table["procs"].to_numpy(),
        u.nodes,
        lambda m: cls(m, **params),
    )
    assert start.tolist() == res.start.tolist()
    assert -reward == u.result.summary["stretch_mean"]
    backfilled = len(res.policy.loop.launched) - steps
    assert steps == 1024 if backfill == "none" else 0 < backfilled and steps + backfilled == 1024


def test_the_observation_is_filled_shortest_and_narrowest_first_when_the_queue_overflows():
    # 5 jobs waiting (submit order 0..4), window 3. Shortest requested first (ties: submit):
    # 3 (r 5), 1 (r 10), 4 (r 10); fewest processors first: 2 (n 1), 3 (n 1), 0 (n 2).
    # Interleaved, each once: 3, 2, then 1 (3 is already in): [3, 2, 1].
    submit = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
    requested = np.array([50.0, 10.0, 40.0, 5.0, 10.0])
    need = np.array([2, 4, 1, 1, 8])
    queue = [4, 0, 3, 1, 2]
    assert fill(queue, 3, submit, requested, need) == [3, 2, 1]
    assert queue == [2, 3, 0, 1, 4]  # its queue left sorted by fewest processors, as RLScheduler's
    # with room for every waiting job: oldest first
    assert fill([4, 0, 3], 3, submit, requested, need) == [0, 3, 4]


def test_an_unknown_setting_is_one_line():
    with pytest.raises(UserError, match="setting must be one of 'schedlab', 'rlscheduler'") as err:
        gym.make("schedlab/Batch-v0", setting="slurm", sequence=20)
    assert "\n" not in str(err.value)
