"""schedlab/Packing-v0 and schedlab/Queue-v0 are the engines: the first-fit
agent is FIFO-FF and the oldest-job agent is FIFO, bit for bit, with the
engine's metric as the final reward; Gymnasium's checker passes."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

gymnasium = pytest.importorskip("gymnasium")

import schedlab.gym  # noqa: E402,F401  (registers the environments)
from schedlab.engines import get_engine  # noqa: E402
from schedlab.errors import UserError  # noqa: E402
from schedlab.gym.common import InvalidAction  # noqa: E402

#: Per-step rewards sum the jobs' terms in event order, the engine's mean in job order.
SUM_ORDER_RTOL = 1e-12


def play(env, agent, seed=0):
    obs, info = env.reset(seed=seed)
    total = 0.0
    while True:
        obs, r, term, trunc, info = env.step(agent(info))
        total += r
        assert env.observation_space.contains(obs)
        if term or trunc:
            return total


def first(info):
    return int(np.flatnonzero(info["action_mask"])[0])


@pytest.mark.parametrize("reward_mode", ["final", "step"])
def test_first_fit_agent_is_fifo_ff(reward_mode):
    env = gymnasium.make("schedlab/Packing-v0", sequence=300, reward_mode=reward_mode)
    total = play(env, first, seed=4)
    u = env.unwrapped
    ref = get_engine("packing").run(u.episode, "FIFO-FF", None, u.system(), path="fast")
    for col in ("start", "server", "end"):
        assert np.asarray(ref.jobs[col]).tolist() == np.asarray(u.result.jobs[col]).tolist()
    if reward_mode == "final":
        assert total == -ref.summary["wait_mean"]
    else:
        assert total == pytest.approx(-ref.summary["wait_mean"], rel=SUM_ORDER_RTOL)


def test_pair_mode_places_any_fitting_pair_and_reports_the_engines_utilisation():
    env = gymnasium.make("schedlab/Packing-v0", sequence=150, mode="pair", window=4, reward="utilisation")
    rng = np.random.default_rng(0)
    total = play(env, lambda info: int(rng.choice(np.flatnonzero(info["action_mask"]))), seed=1)
    u = env.unwrapped
    assert u.action_space.n == 4 * 10 and total == u.result.summary["utilisation"] > 0
    assert np.all(np.isfinite(u.result.jobs["start"]))


@pytest.mark.parametrize("reward,metric", [("sojourn", "mst"), ("slowdown", "slowdown_mean")])
def test_oldest_job_agent_is_fifo(reward, metric):
    for mode in ("final", "step"):
        env = gymnasium.make("schedlab/Queue-v0", sequence=300, reward=reward, reward_mode=mode)
        total = play(env, lambda info: 0, seed=2)
        u = env.unwrapped
        ref = get_engine("queue").run(u.episode, "FIFO", path="fast")
        assert np.asarray(ref.jobs["completion"]).tolist() == np.asarray(u.result.jobs["completion"]).tolist()
        if mode == "final":
            assert total == -ref.summary[metric]
        else:
            assert total == pytest.approx(-ref.summary[metric], rel=SUM_ORDER_RTOL)


def test_a_different_choice_changes_the_schedule():
    """Serving the newest job (LCFS-preemptive) is not FIFO: the choices are real."""
    env = gymnasium.make("schedlab/Queue-v0", sequence=200)
    lcfs = play(env, lambda info: int(np.flatnonzero(info["action_mask"])[-1]), seed=2)
    fifo = play(env, lambda info: 0, seed=2)
    assert lcfs != fifo


def test_gymnasium_check_env_passes():
    from gymnasium.utils.env_checker import check_env

    check_env(gymnasium.make("schedlab/Packing-v0", sequence=50).unwrapped)
    burst = pl.DataFrame({"job_id": np.arange(20), "submit": np.zeros(20), "size": np.linspace(1.0, 2.0, 20)})
    check_env(gymnasium.make("schedlab/Queue-v0", jobs=burst, sequence=20, window=2).unwrapped)


def test_vector_environments_run():
    for name in ("schedlab/Packing-v0", "schedlab/Queue-v0"):
        envs = gymnasium.make_vec(name, num_envs=2, vectorization_mode="sync", sequence=20)
        obs, info = envs.reset(seed=0)
        for _ in range(60):
            a = np.array([int(np.flatnonzero(m)[0]) if m.any() else 0 for m in info["action_mask"]])
            obs, r, term, trunc, info = envs.step(a)
        envs.close()


def test_bad_input_gets_one_clear_error():
    with pytest.raises(UserError, match="window must be an integer >= 1; got 0"):
        gymnasium.make("schedlab/Queue-v0", window=0)
    with pytest.raises(UserError, match="mode must be one of 'head', 'pair'"):
        gymnasium.make("schedlab/Packing-v0", mode="any")
    wide = pl.DataFrame({"job_id": [1, 2], "submit": [0.0, 1.0], "duration": [1.0, 1.0], "demand": [0.5, 1.5]})
    with pytest.raises(UserError, match="job 2 demands 1.5 but a server's capacity is 1.0"):
        gymnasium.make("schedlab/Packing-v0", jobs=wide, sequence=2)
    apart = pl.DataFrame({"job_id": [1, 2], "submit": [0.0, 10.0], "size": [1.0, 1.0]})
    with pytest.raises(UserError, match="without any decision"):
        gymnasium.make("schedlab/Queue-v0", jobs=apart, sequence=2).reset(seed=0, options={"start": 0})
    env = gymnasium.make("schedlab/Queue-v0", sequence=50, invalid_action="raise")
    env.reset(seed=0)
    with pytest.raises(InvalidAction, match="outside info"):
        env.step(15)
    env.close()
    with pytest.raises(UserError, match="invalid_action must be one of 'nearest', 'penalty', 'raise'"):
        gymnasium.make("schedlab/Packing-v0", invalid_action="ignore")


@pytest.mark.parametrize("env_id", ["schedlab/Queue-v0", "schedlab/Packing-v0"])
def test_check_env_passes_on_the_defaults(env_id):
    from gymnasium.utils.env_checker import check_env

    env = gymnasium.make(env_id)
    check_env(env.unwrapped)
    env.close()


@pytest.mark.parametrize(
    "env_id,kw", [("schedlab/Queue-v0", {"sequence": 50}), ("schedlab/Packing-v0", {"mode": "pair"})]
)
def test_an_action_outside_the_mask_is_the_nearest_or_a_penalised_no_op(env_id, kw):
    from schedlab.gym.common import INVALID_ACTION_PENALTY, nearest_valid

    near, chosen, pen = (gymnasium.make(env_id, invalid_action=m, **kw) for m in ("nearest", "raise", "penalty"))
    _, info = near.reset(seed=0)
    chosen.reset(seed=0)
    obs, _ = pen.reset(seed=0)
    mask = info["action_mask"]
    bad = int(np.flatnonzero(~mask)[-1])
    a, b = near.step(bad), chosen.step(nearest_valid(bad, mask))
    assert np.array_equal(a[0], b[0]) and a[1:4] == b[1:4]
    obs2, r, term, trunc, _ = pen.step(bad)
    assert np.array_equal(obs, obs2) and r == -INVALID_ACTION_PENALTY and not (term or trunc)
    for env in (near, chosen, pen):
        env.close()


#: Seeded episodes with a fixed action rule (the ((7 k + 3) mod |valid|)-th valid action at step k):
#: steps and the SHA-256 of every observation, mask and reward, recorded from the environments as they
#: were before they stepped their engine's run themselves (an engine loop in a worker thread, commit
#: aa04a74). Stepping the run in the environment's own thread must give the same episodes.
EPISODES = {
    "queue-sojourn-step": (
        "schedlab/Queue-v0",
        {"sequence": 120, "reward_mode": "step"},
        162,
        "3983b94b1d8045e862ad2859acd37e50b93cfd7276763ba679fcd856d138c305",
    ),
    "queue-slowdown-final": (
        "schedlab/Queue-v0",
        {"sequence": 120, "reward": "slowdown", "window": 4},
        162,
        "4348970dd2b3f29189e0e9ec987a278f4b4a987a96af01875b6ed5e16d0e9672",
    ),
    "packing-head-step": (
        "schedlab/Packing-v0",
        {"sequence": 150, "reward_mode": "step"},
        150,
        "882dcbf2b8c655b30a764e382653431bc78422cc35f6175d9a4893a6cfed32c5",
    ),
    "packing-pair-step": (
        "schedlab/Packing-v0",
        {"sequence": 150, "mode": "pair", "window": 4, "servers": 4, "reward_mode": "step"},
        150,
        "fec74c16aca8f43539d10f861dd8e9d9fe603c669aebf3e23431430d18b11b71",
    ),
    "packing-pair-event": (
        "schedlab/Packing-v0",
        {"sequence": 100, "mode": "pair", "window": 3, "servers": 3, "epoch": 0.0, "reward": "utilisation"},
        100,
        "9fcdb3e0a76e9063322a67d8e4a434257307d57bd476af1718f51dfa6a4d8d62",
    ),
}


@pytest.mark.parametrize("case", sorted(EPISODES))
def test_seeded_episodes_are_those_of_the_threaded_environments(case):
    import hashlib
    import threading

    env_id, kwargs, steps, digest = EPISODES[case]
    env = gymnasium.make(env_id, **kwargs)
    h = hashlib.sha256()
    threads = threading.active_count()
    obs, info = env.reset(seed=3)
    assert threading.active_count() == threads  # the run is stepped here, in no thread of its own
    h.update(obs.tobytes())
    h.update(info["action_mask"].tobytes())
    k = 0
    while True:
        valid = np.flatnonzero(info["action_mask"])
        obs, r, term, trunc, info = env.step(int(valid[(k * 7 + 3) % len(valid)]))
        h.update(obs.tobytes())
        h.update(info["action_mask"].tobytes())
        h.update(repr(float(r)).encode())
        k += 1
        if term or trunc:
            break
    assert (k, h.hexdigest()) == (steps, digest)


def test_packing_reads_the_job_table_the_engine_declares():
    """Packing-v0 takes the columns of the packing engine's declaration
    (``Engine.jobs``), read as the engine reads them: a table whose durations
    are in ``runtime`` (the declared alternative of ``duration``) plays the
    very episodes of the same table with ``duration``; a table the
    declaration refuses is one line naming what it lacks, in the
    declaration's words; two resources (cpu, mem) are one line too (the
    environment observes one resource, ``demand``)."""
    rng = np.random.default_rng(7)
    n = 120
    table = pl.DataFrame(
        {
            "job_id": np.arange(n),
            "submit": np.sort(rng.uniform(0.0, 60.0, n)),
            "duration": rng.integers(1, 30, n).astype(float),
            "demand": rng.uniform(0.1, 0.5, n),
        }
    )
    runs = []
    for jobs in (table, table.rename({"duration": "runtime"})):
        env = gymnasium.make("schedlab/Packing-v0", jobs=jobs, sequence=100)
        total = play(env, first, seed=0)
        runs.append((env.unwrapped.scale, total, env.unwrapped.result.jobs["start"]))
    assert runs[0][:2] == runs[1][:2] and np.array_equal(runs[0][2], runs[1][2])

    declared = get_engine("packing").jobs
    for drop, named in (("duration", "duration or runtime"), ("submit", "submit"), ("demand", "demand or cpu")):
        lacking = table.drop(drop)
        with pytest.raises(UserError) as err:
            gymnasium.make("schedlab/Packing-v0", jobs=lacking, sequence=100)
        assert declared.missing(lacking.columns) == [named]
        assert str(err.value) == f"schedlab/Packing-v0: the job table needs the columns {named}"
    two = table.drop("demand").with_columns(cpu=pl.lit(0.2), mem=pl.lit(0.3))
    one_resource = r"^schedlab/Packing-v0: one resource: the job table needs a 'demand' column, not cpu, mem$"
    with pytest.raises(UserError, match=one_resource):
        gymnasium.make("schedlab/Packing-v0", jobs=two, sequence=100)
