"""The batch engine in RLScheduler's setting against RLScheduler's own
simulator, job for job: the start time of every job of its test sequences
under each of its heuristics, without and with its backfilling (issue 38).

The peer is ``HPCSimPickJobs.HPCEnv`` from a checkout of
DIR-LAB/deep-batch-scheduler that you point to (``--peer DIR`` or
``$SCHEDLAB_RLSCHEDULER``), loaded as ``benchmarks/gym_vs_rlscheduler.py``
loads it (its TensorFlow import left out); nothing is fetched, and with no
checkout the script says so and stops. Its heuristics run through its own
``schedule_curr_sequence_reset`` (what ``compare-pick-jobs.py`` calls); each
job's start is read when it is scored (``job_score`` is called as a job starts).

Sequences: RLScheduler's own test sequences, ``--sequences`` (10) of
``--length`` (1,024) jobs, first jobs drawn by its generator seeded with
``--seed`` (1) among the log's jobs, HPC2N's among its first 10,000 (the
``batch_job_slice`` of its ``make_table_script.py``, which made Table V;
``schedlab.workloads.rlscheduler_starts``), each handed to its ``reset_for_test``. schedlab runs the jobs of
schedlab's own SWF reader at the same positions (checked equal to the peer's:
submit, run time, requested time, processors) on the log's machine
(MaxProcs, else MaxNodes), each heuristic with RLScheduler's rules as
parameters: ``commit = true``, ``passes = "event"``, ``backfill =
"rlscheduler"`` with backfilling, ``wait = "rlscheduler"`` for WFP3 and
UNICEP (FCFS needs none: its head is always the oldest job).

Output: per trace and heuristic, the jobs whose start differs (of all the
sequences' jobs), the largest difference, and the mean bounded slowdown of
each side (the mean over sequences of the per-sequence mean: Table V's number).

With ``--environments``: the environments instead, side by side --
RLScheduler's ``HPCEnv`` stepped by ``step_for_test`` and ``schedlab/Batch-v0``
with ``setting="rlscheduler"`` (``--loop``: the compiled kernel, the default,
or the reference loop; ``window=128``, its ``MAX_QUEUE_SIZE``) -- with the same scripted agents on the same sequences:
``last`` takes the last filled slot and ``widest`` the job needing the most
processors (the first such slot), choices that depend on which jobs fill the
slots and in which order; each job's start and the decisions asked are compared.

Usage: python benchmarks/rlscheduler_compare.py --peer DIR [--traces lublin1,lublin2,hpc2n] [--environments [--loop L]]
"""

from __future__ import annotations

import argparse
import gzip
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gym_vs_rlscheduler import PEER_ENV, _Start, load_peer, peer_env  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
#: Trace -> (Table V's name, the log, the jobs its sequences are drawn among: make_table_script.py's
#: batch_job_slice, 0 = all).
TRACES = {
    "lublin1": ("Lublin-1", DATA / "lublin" / "lublin_256.swf.gz", 0),
    "lublin2": ("Lublin-2", DATA / "lublin" / "lublin_256_new2.swf.gz", 0),
    "hpc2n": ("HPC2N", DATA / "pwa-swf" / "HPC2N-2002-2.2-cln.swf.gz", 10_000),
}
#: Heuristic -> (RLScheduler's score function, schedlab's policy without, with backfilling, extra params).
HEURISTICS = {
    "FCFS": ("fcfs_score", "FCFS", "EASY", {}),
    "SJF": ("sjf_score", "SJF", "SJF+EASY", {"commit": True}),
    "F1": ("f1_score", "F1", "F1+EASY", {"commit": True}),
    "WFP3": ("wfp_score", "WFP3", "WFP3+EASY", {"commit": True, "wait": "rlscheduler"}),
    "UNICEP": ("uni_score", "UNICEP", "UNICEP+EASY", {"commit": True, "wait": "rlscheduler"}),
}
BSLD_FLOOR = 10.0  # RLScheduler's and schedlab's bounded-slowdown threshold (s)


def peer_starts(env, start: int, length: int, score: str) -> dict[int, int]:
    """Job number -> start time of one sequence under the peer's heuristic ``score``."""
    env.np_random = _Start(start)
    env.reset_for_test(length, start)
    started: dict[int, int] = {}
    scorer = type(env).job_score

    def record(job):
        started[job.job_id] = job.scheduled_time
        return scorer(env, job)

    env.job_score = record
    try:
        env.schedule_curr_sequence_reset(getattr(env, score))
    finally:
        del env.job_score
    return started


def ours_starts(table, policy: str, params: dict, capacity: int) -> np.ndarray:
    from schedlab.engines.batch.policies import BATCH_POLICIES
    from schedlab.engines.batch.sim.engine import simulate_batch

    cls = BATCH_POLICIES[policy]
    res = simulate_batch(
        table["submit"],
        table["runtime"],
        table["requested"],
        table["procs"],
        capacity,
        lambda m: cls(m, **params),
    )
    return res.start


#: The scripted agents of --environments: slot index from the slots' (job, processors) in slot order.
AGENTS = {
    "last": lambda slots: len(slots) - 1,
    "widest": lambda slots: max(range(len(slots)), key=lambda i: (slots[i][1], -i)),
}


def peer_episode(env, start: int, length: int, agent) -> tuple[dict[int, int], int]:
    """Job number -> start time of one HPCEnv episode under ``agent``, and its decisions."""
    env.np_random = _Start(start)
    env.reset_for_test(length, start)
    started: dict[int, int] = {}
    scorer = type(env).job_score

    def record(job):
        started[job.job_id] = job.scheduled_time
        return scorer(env, job)

    env.job_score = record
    decisions = 0
    try:
        env.build_observation()
        while True:
            slots = [(p[0], p[0].request_number_of_processors) for p in env.pairs if p[0] is not None]
            _, _, done, _ = env.step_for_test(agent(slots))
            decisions += 1
            if done:
                break
    finally:
        del env.job_score
    return started, decisions


def ours_episode(env, start: int, agent) -> tuple[np.ndarray, np.ndarray, int]:
    """(job numbers, start times, decisions) of one Batch-v0 episode in RLScheduler's setting under ``agent``."""
    obs, info = env.reset(options={"start": start})
    u = env.unwrapped
    procs = u.episode["procs"].to_numpy()
    decisions, done = 0, False
    while not done:
        jobs = info["jobs"][info["jobs"] >= 0]
        obs, _, term, trunc, info = env.step(agent([(j, procs[j]) for j in jobs]))
        decisions += 1
        done = term or trunc
    return u.episode["job_id"].to_numpy(), u.schedule()[0], decisions


def environments(args, peer, tmp: str) -> None:
    import gymnasium

    import schedlab.gym  # noqa: F401 (registers the environments)
    from schedlab.workloads.rlscheduler_starts import sequence_starts

    print(
        f"{'trace':<9} {'agent':<7} {'backfill':<9} {'jobs differing':>15} {'decisions HPCEnv':>17} "
        f"{'decisions Batch-v0':>19} {'bsld HPCEnv':>12} {'bsld Batch-v0':>14}"
    )
    for key in args.traces.split(","):
        label, path, within = TRACES[key]
        swf = Path(tmp) / path.name.removesuffix(".gz")
        swf.write_bytes(gzip.decompress(path.read_bytes()))
        for bf in (False, True):
            penv = peer_env(peer, swf, bf)
            loads = penv.loads
            starts = sequence_starts(within or len(loads.all_jobs), args.seed, args.sequences, args.length)
            env = gymnasium.make(
                "schedlab/Batch-v0",
                trace=str(path),
                nodes=int(loads.max_procs),
                sequence=args.length,
                window=128,
                backfill="easy" if bf else "none",
                setting="rlscheduler",
                loop=args.loop,
            )
            for name, agent in AGENTS.items():
                differ = total = dec_p = dec_o = 0
                bp, bo = [], []
                for k in starts:
                    got, d_p = peer_episode(penv, k, args.length, agent)
                    ids, mine, d_o = ours_episode(env, k, agent)
                    theirs = np.array([got[int(j)] for j in ids], dtype=float)
                    differ += int((theirs != mine).sum())
                    total += len(ids)
                    dec_p, dec_o = dec_p + d_p, dec_o + d_o
                    seq = np.array([[j.submit_time, j.run_time] for j in loads.all_jobs[k : k + args.length]])
                    bp.append(bsld(seq[:, 0], seq[:, 1], theirs))
                    bo.append(bsld(seq[:, 0], seq[:, 1], mine))
                print(
                    f"{label:<9} {name:<7} {'theirs' if bf else 'none':<9} {differ:>8} / {total:<5} {dec_p:>17} "
                    f"{dec_o:>19} {np.mean(bp):>12.2f} {np.mean(bo):>14.2f}",
                    flush=True,
                )
            env.close()


def bsld(submit: np.ndarray, run: np.ndarray, start: np.ndarray) -> float:
    return float(np.mean(np.maximum(1.0, (start - submit + run) / np.maximum(run, BSLD_FLOOR))))


def main() -> None:
    from schedlab.workloads.rlscheduler_starts import sequence_starts
    from schedlab.workloads.traces.registry import read_trace

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--peer", type=Path, default=os.environ.get(PEER_ENV), help=f"checkout (or ${PEER_ENV})")
    ap.add_argument("--traces", default=",".join(TRACES))
    ap.add_argument("--sequences", type=int, default=10)
    ap.add_argument("--length", type=int, default=1024)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--passes",
        choices=("event", "instant"),
        default="event",
        help="schedlab's passes (instant: to measure the rule)",
    )
    ap.add_argument("--environments", action="store_true", help="compare the environments (HPCEnv, Batch-v0)")
    ap.add_argument("--loop", choices=("kernel", "reference"), default="kernel", help="Batch-v0 loop")
    args = ap.parse_args()
    if args.peer is None or not (Path(args.peer) / "HPCSimPickJobs.py").is_file():
        print(f"RLScheduler's HPCEnv: skipped (no checkout: give --peer DIR or ${PEER_ENV})")
        return
    peer = load_peer(Path(args.peer))
    if args.environments:
        print(
            f"{args.sequences} sequences of {args.length} jobs (seed {args.seed}), Batch-v0 loop={args.loop}; "
            f"load {os.getloadavg()[0]:.2f}"
        )
        with tempfile.TemporaryDirectory() as tmp:
            environments(args, peer, tmp)
        print(f"load at the end: {os.getloadavg()[0]:.2f}")
        return
    print(
        f"{args.sequences} sequences of {args.length} jobs (seed {args.seed}), schedlab's passes = {args.passes!r}; "
        f"load {os.getloadavg()[0]:.2f}"
    )
    print(
        f"{'trace':<9} {'heuristic':<9} {'backfill':<9} {'jobs differing':>15} {'max |diff| s':>13} "
        f"{'bsld RLScheduler':>17} {'bsld schedlab':>14}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for key in args.traces.split(","):
            label, path, within = TRACES[key]
            swf = Path(tmp) / path.name.removesuffix(".gz")
            swf.write_bytes(gzip.decompress(path.read_bytes()))
            envs = {bf: peer_env(peer, swf, bf) for bf in (False, True)}
            loads = envs[False].loads
            capacity = int(loads.max_procs)
            jobs = read_trace("swf", str(path)).jobs.sort("submit", maintain_order=True)
            ids = jobs["job_id"].to_numpy()
            theirs = np.array(
                [
                    [j.job_id, j.submit_time, j.run_time, j.request_time, j.request_number_of_processors]
                    for j in loads.all_jobs
                ],
                dtype=float,
            )
            ours = np.column_stack([ids, jobs["submit"], jobs["runtime"], jobs["requested_time"], jobs["procs"]])
            if theirs.shape != ours.shape or not np.array_equal(theirs, ours.astype(float)):
                print(f"{label}: schedlab's reader and RLScheduler's Workloads differ; comparing on RLScheduler's jobs")
            starts = sequence_starts(within or len(loads.all_jobs), args.seed, args.sequences, args.length)
            for name, (score, none, easy, extra) in HEURISTICS.items():
                for bf, policy in ((False, none), (True, easy)):
                    if policy == "FCFS":
                        params: dict = {}
                    elif policy == "EASY":
                        params = {"backfill": "rlscheduler", "passes": args.passes}
                    else:
                        params = {**extra, "passes": args.passes, **({"backfill": "rlscheduler"} if bf else {})}
                    differ = total = 0
                    worst = 0.0
                    ours_b, theirs_b = [], []
                    for k in starts:
                        seq = theirs[k : k + args.length]
                        table = {
                            "submit": seq[:, 1],
                            "runtime": seq[:, 2],
                            "requested": seq[:, 3],
                            "procs": seq[:, 4].astype(np.int64),
                        }
                        got = peer_starts(envs[bf], k, args.length, score)
                        peer_start = np.array([got[int(j)] for j in seq[:, 0]], dtype=float)
                        mine = ours_starts(table, policy, params, capacity)
                        d = np.abs(mine - peer_start)
                        differ += int((d > 0).sum())
                        total += len(d)
                        worst = max(worst, float(d.max()))
                        ours_b.append(bsld(seq[:, 1], seq[:, 2], mine))
                        theirs_b.append(bsld(seq[:, 1], seq[:, 2], peer_start))
                    print(
                        f"{label:<9} {name:<9} {'theirs' if bf else 'none':<9} {differ:>8} / {total:<5} "
                        f"{worst:>13.0f} {np.mean(theirs_b):>17.2f} {np.mean(ours_b):>14.2f}",
                        flush=True,
                    )
    print(f"load at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
