"""``schedlab/Batch-v0`` against RLScheduler's own environment, side by side
in one run: jobs scheduled per second and decisions per second on Lublin-1
(``lublin_256.swf``), 1,024-job sequences, without and with backfilling
(issue 38's speed claim: >= 10x per scheduled job).

The peer is ``HPCSimPickJobs.HPCEnv`` from a checkout of
DIR-LAB/deep-batch-scheduler that you point to (``--peer DIR`` or the
environment variable ``SCHEDLAB_RLSCHEDULER``); nothing is fetched at run
time, and with no checkout the peer's rows are skipped with a message. Its
module imports TensorFlow 1.x for helpers the environment never calls: that
one line (``import tensorflow as tf``) is left out when the module is loaded
(the file on disk is not changed), and where the old ``gym`` package is not
installed Gymnasium stands in for it (the environment uses ``gym.Env`` and
``gym.spaces`` only; its RNG is replaced below to fix each sequence's start).

Protocol: the same ``--sequences`` starts (drawn once from ``--seed``) for
both; each figure is jobs (or decisions) / wall seconds of the stepping
loop, resets excluded, the two environments alternating per sequence; the
last column and the ratios in brackets divide by the process's CPU seconds
instead (on a shared machine the wall clock also counts the time the
process waited for a core).
Agents: the first valid slot (RLScheduler: slot 0, a job whenever the queue
is not empty; schedlab: slot 0) and the same agent behind a forward pass of
a 64 x 64 tanh MLP in numpy (Stable-Baselines3's default policy shape, as
``schedlab.api.agent.MLPAgent``; random weights: the cost is the point), on
each environment's own observation. schedlab runs as one environment
(``gymnasium.make``) and as a vector environment stepping every sequence per
call (``gymnasium.make_vec``, ``--envs`` episodes, autoreset, random
starts; the agent's forward pass is batched too), and in RLScheduler's own
setting (``setting="rlscheduler"``: its committed pick, its backfilling and
decision points), one environment and vector, on the compiled kernel (and,
with ``--reference``, one environment on the reference loop too); the vector
environments are measured in steady state
until twice ``--envs`` episodes have ended (jobs of the ended episodes /
seconds: the partial ones count for nothing). BLAS runs one thread.

Usage: python benchmarks/gym_vs_rlscheduler.py --peer DIR [--sequences 20] [--length 1024] [--reference]
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import os
import sys
import tempfile
import time
import types
from pathlib import Path

import numpy as np

LUBLIN = Path(__file__).resolve().parents[2] / "shared" / "data" / "lublin" / "lublin_256.swf.gz"
PEER_ENV = "SCHEDLAB_RLSCHEDULER"
HIDDEN = 64


def mlp(inputs: int, outputs: int, seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """Random float32 layers inputs -> 64 -> 64 -> outputs."""
    rng = np.random.default_rng(seed)
    sizes = [inputs, HIDDEN, HIDDEN, outputs]
    return [
        (rng.standard_normal((b, a)).astype(np.float32) / np.sqrt(a), np.zeros(b, np.float32))
        for a, b in zip(sizes, sizes[1:], strict=False)
    ]


def forward(layers, obs: np.ndarray) -> np.ndarray:
    from schedlab.api.agent import logits

    return logits(layers, obs)


# ---- the peer ---------------------------------------------------------------------------------


class _Start:
    """Stands in for the peer's ``np_random``: ``randint`` gives the sequence's start."""

    def __init__(self, start: int) -> None:
        self.start = start

    def randint(self, lo: int, hi: int) -> int:
        return self.start


def load_peer(folder: Path):
    """``HPCSimPickJobs`` from ``folder``, its TensorFlow import left out."""
    sys.path.insert(0, str(folder))
    try:
        import gym  # noqa: F401
    except ImportError:
        import gymnasium

        shim = types.ModuleType("gym")
        shim.__dict__.update(gymnasium.__dict__)
        sys.modules["gym"] = shim
        sys.modules["gym.spaces"] = gymnasium.spaces
        sys.modules["gym.utils"] = gymnasium.utils
        sys.modules["gym.utils.seeding"] = gymnasium.utils.seeding
    source = (folder / "HPCSimPickJobs.py").read_text()
    source = "\n".join(line for line in source.splitlines() if line.strip() != "import tensorflow as tf")
    spec = importlib.util.spec_from_loader("HPCSimPickJobs", loader=None)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    exec(compile(source, str(folder / "HPCSimPickJobs.py"), "exec"), module.__dict__)  # noqa: S102
    return module


def peer_env(module, swf: Path, backfill: bool):
    env = module.HPCEnv(backfil=backfill, job_score_type=0)
    stdout, sys.stdout = sys.stdout, open(os.devnull, "w")  # noqa: SIM115 (its loader prints)
    try:
        env.my_init(workload_file=str(swf))
    finally:
        sys.stdout.close()
        sys.stdout = stdout
    return env


def peer_run(env, module, start: int, length: int, layers) -> tuple[int, int, float, float]:
    """(jobs, decisions, wall seconds, CPU seconds) of one sequence: the first
    valid slot, after the MLP if ``layers``."""
    env.np_random = _Start(start)
    env.reset_for_test(length, start)
    o = env.build_observation()
    decisions = 0
    c, t = time.process_time(), time.perf_counter()
    while True:
        if layers is not None:
            forward(layers, np.asarray(o, np.float32))
        o, r, d, _ = env.step_for_test(0)
        decisions += 1
        if d:
            break
    return len(env.scheduled_rl), decisions, time.perf_counter() - t, time.process_time() - c


# ---- schedlab ---------------------------------------------------------------------------------


def ours_run(env, start: int, layers) -> tuple[int, int, float, float]:
    obs, info = env.reset(options={"start": start})
    decisions = 0
    c, t = time.process_time(), time.perf_counter()
    while True:
        if layers is not None:
            out = forward(layers, obs)
            np.argmax(np.where(info["action_mask"], out, -np.inf))
        obs, r, term, trunc, info = env.step(0)
        decisions += 1
        if term or trunc:
            break
    return env.unwrapped.sequence, decisions, time.perf_counter() - t, time.process_time() - c


def ours_vector(envs, episodes: int, layers) -> tuple[int, int, float, float]:
    """Steady state of a vector environment (autoreset, random starts): (jobs of
    the episodes ended, decisions, wall and CPU seconds) until ``episodes`` have ended."""
    u = envs.unwrapped
    obs, info = envs.reset(seed=0)
    mask = info["action_mask"]
    ended = decisions = 0
    zeros = np.zeros(u.num_envs, dtype=np.int64)
    c, t = time.process_time(), time.perf_counter()
    while ended < episodes:
        if layers is not None:
            out = forward(layers, obs)
            np.argmax(np.where(mask, out, -np.inf), axis=1)
        stepping = ~u._autoreset
        obs, r, term, trunc, info = envs.step(zeros)
        mask = info["action_mask"]
        decisions += int(stepping.sum())
        ended += int(term.sum())
    return ended * u.env.sequence, decisions, time.perf_counter() - t, time.process_time() - c


def add(tot: dict[str, list], name: str, got: tuple) -> None:
    """Add one sequence's (jobs, decisions, wall, CPU) to ``tot[name]``."""
    tot[name] = [a + b for a, b in zip(tot.get(name, [0, 0, 0.0, 0.0]), got, strict=True)]


def main() -> None:
    import gymnasium
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)  # one BLAS thread: a batched matmul's threads only contend on a shared machine

    import schedlab.gym  # noqa: F401

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--peer", type=Path, default=os.environ.get(PEER_ENV), help=f"checkout (or ${PEER_ENV})")
    ap.add_argument("--sequences", type=int, default=20)
    ap.add_argument("--length", type=int, default=1024)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--envs", type=int, default=64, help="episodes the vector environment steps per call")
    ap.add_argument("--reference", action="store_true", help="also RLScheduler's setting on the reference loop")
    args = ap.parse_args()

    peer = None
    if args.peer is None or not (Path(args.peer) / "HPCSimPickJobs.py").is_file():
        print(f"RLScheduler's HPCEnv: skipped (no checkout: give --peer DIR or ${PEER_ENV})")
    else:
        peer = load_peer(Path(args.peer))
    tmp = tempfile.TemporaryDirectory()
    swf = Path(tmp.name) / "lublin_256.swf"
    swf.write_bytes(gzip.decompress(LUBLIN.read_bytes()))

    # RLScheduler draws starts in [length, size - length - 1); the same starts here
    rng = np.random.default_rng(args.seed)
    starts = sorted(int(k) for k in rng.integers(args.length, 10_000 - args.length - 1, args.sequences))
    print(f"Lublin-1, {args.sequences} sequences of {args.length} jobs; load: {os.getloadavg()[0]:.2f}")
    print(
        f"{'backfill':<9} {'agent':<10} {'environment':<24} {'jobs/s':>9} {'decisions/s':>12} {'dec/job':>8} "
        f"{'jobs/CPU-s':>11}"
    )
    for backfill in ("none", "easy"):
        kw = {"trace": str(swf), "sequence": args.length, "window": 128, "backfill": backfill}
        env = gymnasium.make("schedlab/Batch-v0", **kw)
        envs = gymnasium.make_vec("schedlab/Batch-v0", num_envs=args.envs, **kw)
        # RLScheduler's own setting (committed pick, its backfilling and decision points): the compiled kernel
        its = {**kw, "setting": "rlscheduler"}
        env_its = gymnasium.make("schedlab/Batch-v0", **its)
        envs_its = gymnasium.make_vec("schedlab/Batch-v0", num_envs=args.envs, **its)
        env_ref = gymnasium.make("schedlab/Batch-v0", **its, loop="reference") if args.reference else None
        ours_run(env, starts[0], None)  # compile / load the kernel
        ours_run(env_its, starts[0], None)
        penv = peer_env(peer, swf, backfill == "easy") if peer is not None else None
        for agent, layers_ours, layers_peer in (
            ("first", None, None),
            ("MLP", mlp(env.unwrapped.obs_size, 128), mlp(8 * 128, 128)),
        ):
            tot: dict[str, list] = {}
            for k in starts:  # alternating
                if penv is not None:
                    add(tot, "peer", peer_run(penv, peer, k, args.length, layers_peer))
                add(tot, "ours", ours_run(env, k, layers_ours))
                add(tot, "its", ours_run(env_its, k, layers_ours))
                if env_ref is not None:
                    add(tot, "ref", ours_run(env_ref, k, layers_ours))
            tot["vec"] = list(ours_vector(envs, 2 * args.envs, layers_ours))
            tot["its vec"] = list(ours_vector(envs_its, 2 * args.envs, layers_ours))
            rows = [
                ("peer", "RLScheduler HPCEnv"),
                ("ours", "schedlab Batch-v0"),
                ("vec", f"schedlab vector x{args.envs}"),
                ("its", "its setting, kernel"),
                ("its vec", f"its setting, vector x{args.envs}"),
                ("ref", "its setting, reference"),
            ]
            for key, name in rows:
                if key in tot:
                    j, d, s, c = tot[key]
                    figures = f"{j / s:>9,.0f} {d / s:>12,.0f} {d / j:>8.3f} {j / c:>11,.0f}"
                    print(f"{backfill:<9} {agent:<10} {name:<24} {figures}")
            if penv is not None:
                pj, _, ps, pc = tot["peer"]
                ratios = []
                for key, name in rows[1:]:
                    if key in tot:
                        j, _, s, c = tot[key]
                        ratios.append(f"{name} {j / s / (pj / ps):.1f}x (CPU {j / c / (pj / pc):.1f}x)")
                print(f"{'':<9} {'':<10} {'ratio to RLScheduler':<24} " + "; ".join(ratios))
        envs.close()
        envs_its.close()
    print(f"load at the end: {os.getloadavg()[0]:.2f}")
    tmp.cleanup()


if __name__ == "__main__":
    main()
