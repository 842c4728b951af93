"""Speed of the Gymnasium environments (schedlab.gym): decisions per second
with scripted agents (prints figures; no pass/fail).

* ``schedlab/Batch-v0`` on Lublin-1 (``lublin_256.swf``), 1024-job episodes
  (RLScheduler's test length), window 128, without and with EASY
  backfilling; agents: the oldest job (FCFS / EASY) and the shortest
  requested time (SJF / SJF+EASY, exact values through ``info["jobs"]``);
  beside it the batch engine's compiled kernel on the same sequences
  (jobs/s), for scale;
* ``schedlab/Packing-v0`` (head mode, first fit: FIFO-FF) and
  ``schedlab/Queue-v0`` (the oldest job: FIFO) on their default generators.

Each figure is decisions / wall seconds of the ``step`` loop (resets
excluded), best of ``--repeat``. RLScheduler's own environment
(``HPCSimPickJobs.HPCEnv``) runs beside Batch-v0 in
``benchmarks/gym_vs_rlscheduler.py``, from a checkout you point it to.

Usage: python benchmarks/gym_env.py [--episodes 5] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

# Batch-v0 looks ``lublin_256.swf`` up in $SCHEDLAB_DATA: by default the repository's ../shared/data.
os.environ.setdefault("SCHEDLAB_DATA", str(Path(__file__).resolve().parents[2] / "shared" / "data"))


def run(env, agent, episodes: int, seed: int = 0) -> tuple[int, float]:
    """(decisions, seconds in step) over ``episodes`` episodes."""
    decisions, spent = 0, 0.0
    for e in range(episodes):
        obs, info = env.reset(seed=seed + e)
        t = time.perf_counter()
        while True:
            obs, r, term, trunc, info = env.step(agent(env.unwrapped, info))
            decisions += 1
            if term or trunc:
                break
        spent += time.perf_counter() - t
    return decisions, spent


def oldest(env, info):
    return 0


def shortest(env, info):
    rows = info["jobs"][info["action_mask"]]
    return int(np.argmin(env.requested[rows]))


def first_fit(env, info):
    return int(np.flatnonzero(info["action_mask"])[0])


def main() -> None:
    import gymnasium

    import schedlab.gym  # noqa: F401
    from schedlab.engines.batch import run_table
    from schedlab.engines.batch.policies import BATCH_POLICIES

    ap = argparse.ArgumentParser()
    ap.add_argument("--episodes", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    print(f"{'environment':<22} {'agent':<10} {'decisions':>9} {'decisions/s':>12}  engine kernel, same jobs")
    for backfill, agents in (
        ("none", (("FCFS", oldest), ("SJF", shortest))),
        ("easy", (("EASY", oldest), ("SJF+EASY", shortest))),
    ):
        env = gymnasium.make("schedlab/Batch-v0", trace="lublin_256.swf", sequence=1024, window=128, backfill=backfill)
        for name, agent in agents:
            best = max((run(env, agent, args.episodes) for _ in range(args.repeat)), key=lambda r: r[0] / r[1])
            jobs, secs = 0, 0.0
            for e in range(args.episodes):
                env.reset(seed=e)
                _, s = run_table(env.unwrapped.episode, BATCH_POLICIES[name], procs=256, path="fast")
                jobs += int(s["n_jobs"])
                secs += s["sim_seconds"]
            print(
                f"{'Batch-v0 ' + backfill:<22} {name:<10} {best[0]:>9} {best[0] / best[1]:>12,.0f}  "
                f"{jobs / secs:,.0f} jobs/s"
            )
    for env_id, name, agent, kw in (
        ("schedlab/Packing-v0", "FIFO-FF", first_fit, {"sequence": 1000}),
        ("schedlab/Queue-v0", "FIFO", oldest, {"sequence": 1000}),
    ):
        env = gymnasium.make(env_id, **kw)
        best = max((run(env, agent, args.episodes) for _ in range(args.repeat)), key=lambda r: r[0] / r[1])
        print(f"{env_id.split('/')[1]:<22} {name:<10} {best[0]:>9} {best[0] / best[1]:>12,.0f}")
        env.close()
    print("RLScheduler's HPCEnv side by side: benchmarks/gym_vs_rlscheduler.py --peer DIR")


if __name__ == "__main__":
    main()
