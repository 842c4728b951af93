"""``schedlab/Batch-v0`` in RLScheduler's setting on the compiled kernel
(``setting="rlscheduler"``, ``loop="kernel"``: ``gym_kernel._rl_run``) is its
reference loop (``schedlab.engines.batch.gym_rlscheduler``, the batch engine's
run under ``RLSchedulerLoop``), step for step, to the bit: every observation,
mask, slot, reward, termination and the schedule after each step -- on
Lublin-1, Lublin-2 and HPC2N sequences of 1,024 jobs (HPC2N's jobs arrive
together: its submit groups exercise the fill's re-sorted queue and the
release order of jobs ending together), without and with its backfilling, with
agents whose choice reads the slots' fill and order (first, last, widest,
random with a seed); over small random job tables (hypothesis); and the
vector environment's episodes are the single one's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

gymnasium = pytest.importorskip("gymnasium")

from hypothesis import HealthCheck, given, settings  # noqa: E402

import schedlab.gym  # noqa: E402,F401  (registers the environments)
from schedlab.engines.batch import gym_kernel as K  # noqa: E402
from schedlab.engines.batch.gym import BatchEnv, dense_rank  # noqa: E402
from tests.test_batch_gym_reference import (  # noqa: E402
    first,
    job_tables,
    last_filled,
    lockstep,
    random_valid,
    scripted,
)

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
LUBLIN1 = DATA / "lublin" / "lublin_256.swf.gz"
LUBLIN2 = DATA / "lublin" / "lublin_256_new2.swf.gz"
HPC2N = DATA / "pwa-swf" / "HPC2N-2002-2.2-cln.swf.gz"
needs_traces = pytest.mark.skipif(
    not (LUBLIN1.exists() and LUBLIN2.exists() and HPC2N.exists()), reason="Lublin-1/2 / HPC2N logs not present"
)


def widest(env, info, rng):
    """The job needing the most processors (ties: the first such slot)."""
    jobs = info["jobs"][info["action_mask"]]
    return int(np.argmax(env.episode["procs"].to_numpy()[jobs]))


def pair(**kw) -> tuple[BatchEnv, BatchEnv]:
    return BatchEnv(setting="rlscheduler", **kw), BatchEnv(setting="rlscheduler", loop="reference", **kw)


@pytest.fixture(scope="module")
def hpc2n() -> pl.DataFrame:
    from schedlab.workloads.traces.swf import read

    return read(HPC2N).jobs.head(12_000)


#: (source, backfill, agent, reward, reward_mode, start): every agent and trace with and without backfilling.
CASES = [
    ("lublin1", "none", first, "bsld", "step", 1981),
    ("lublin1", "easy", first, "bsld", "final", 2756),
    ("lublin1", "easy", last_filled, "wait", "step", 4299),
    ("lublin1", "none", widest, "bsld", "final", 8850),
    ("lublin1", "easy", random_valid, "bsld", "step", 3316),
    ("lublin2", "none", last_filled, "bsld", "step", 1981),
    ("lublin2", "easy", widest, "wait", "step", 2714),
    ("lublin2", "easy", first, "utilisation", "final", 5228),
    ("lublin2", "none", random_valid, "wait", "final", 7762),
    ("hpc2n", "none", first, "bsld", "step", 1981),
    ("hpc2n", "easy", last_filled, "bsld", "step", 4022),
    ("hpc2n", "easy", widest, "bsld", "final", 7085),
    ("hpc2n", "none", widest, "wait", "step", 2756),
    ("hpc2n", "easy", random_valid, "wait", "step", 8850),
    ("hpc2n", "easy", first, "bsld", "step", 3316),
]


@needs_traces
@pytest.mark.parametrize(("source", "backfill", "agent", "reward", "mode", "start"), CASES)
def test_the_kernel_is_the_reference_loop_step_for_step(hpc2n, source, backfill, agent, reward, mode, start):
    kw = {"sequence": 1024, "window": 128, "backfill": backfill, "reward": reward, "reward_mode": mode}
    if source == "hpc2n":
        kw["jobs"], kw["nodes"] = hpc2n, 240
    else:
        kw["trace"] = str(LUBLIN1 if source == "lublin1" else LUBLIN2)
    kernel, reference = pair(**kw)
    assert kernel.loop == "kernel" and BatchEnv(setting="rlscheduler", **kw).loop == "kernel"  # the default
    steps = lockstep(kernel, reference, agent, 0, options={"start": start})
    assert steps == 1024 if backfill == "none" else 0 < steps < 1024  # its decisions: one per job not backfilled


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(job_tables())
def test_property_the_kernel_is_the_reference_loop_on_small_tables(case):
    kw, actions = case
    kernel, reference = pair(**kw)
    lockstep(kernel, reference, scripted(actions), 0, options={"start": 0})


@needs_traces
@pytest.mark.parametrize("backfill", ["none", "easy"])
def test_the_vector_environments_episodes_are_the_single_ones(backfill):
    """Two episodes stepped together by one compiled call each step (``make_vec``) give the
    single environment's observations, masks, slots and rewards, the first valid slot chosen."""
    kw = {"trace": str(LUBLIN1), "sequence": 256, "window": 32, "backfill": backfill, "reward_mode": "step"}
    starts = [1981, 4299]
    venv = gymnasium.make_vec("schedlab/Batch-v0", num_envs=2, setting="rlscheduler", **kw)
    obs, info = venv.reset(options={"start": starts})
    singles = [BatchEnv(setting="rlscheduler", loop="reference", **kw) for _ in starts]
    outs = [env.reset(options={"start": k}) for env, k in zip(singles, starts, strict=True)]
    done = [False, False]
    while not all(done):
        for e, (o, i) in enumerate(outs):
            if not done[e]:
                assert np.array_equal(obs[e], o) and np.array_equal(info["jobs"][e], i["jobs"])
        obs, reward, term, _, info = venv.step(np.zeros(2, dtype=np.int64))
        for e, env in enumerate(singles):
            if not done[e]:
                o, r, t, _, i = env.step(0)
                outs[e] = (o, i)
                assert reward[e] == r and term[e] == t
                done[e] = t
    venv.close()


def test_dense_ranks_share_ties_and_follow_the_keys_in_order():
    requested = np.array([5.0, 1.0, 5.0, 1.0, 3.0])
    submit = np.array([0.0, 2.0, 0.0, 1.0, 1.0])
    assert dense_rank(requested, submit).tolist() == [3, 1, 3, 0, 2]
    need = np.array([2, 2, 1, 1, 2])
    assert dense_rank(need, submit, requested).tolist() == [2, 4, 0, 1, 3]


def test_a_kernel_episode_asks_once_per_job_without_backfilling_even_with_nothing_fitting():
    # 3 jobs on 2 units: job 0 (2 units) runs from 0 to 5; jobs 1 (2 units) and 2 (1 unit) arrive at 1.
    # RLScheduler's agent is asked at job 1's arrival though one job waits and nothing fits; its pick is
    # kept, so job 2's arrival asks nothing; job 1 starts at 5, then job 2 is asked for and waits for it.
    jobs = pl.DataFrame(
        {"job_id": [0, 1, 2], "submit": [0.0, 1.0, 1.0], "runtime": [5.0, 2.0, 2.0], "procs": [2, 2, 1]}
    )
    env = BatchEnv(jobs=jobs, nodes=2, sequence=3, window=4, setting="rlscheduler")
    _, info = env.reset(options={"start": 0})
    assert env._state[2][0, K.SETTING] == K.SETTING_RLSCHEDULER
    asked = [(info["time"], info["jobs"][info["action_mask"]].tolist())]
    term = False
    while not term:
        _, _, term, _, info = env.step(0)
        if not term:
            asked.append((info["time"], info["jobs"][info["action_mask"]].tolist()))
    assert asked == [(0.0, [0]), (1.0, [1]), (5.0, [2])]
    assert env.schedule()[0].tolist() == [0.0, 5.0, 7.0]
