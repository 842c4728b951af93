"""Train an agent on ``schedlab/Batch-v0`` with sb3-contrib's MaskablePPO,
log its training curve to MLflow and export it as a batch policy.

    python -m schedlab.gym.train --trace lublin_256.swf --backfill easy --span 3000 10000 \\
        --timesteps 200000 --out runs/rl-lublin1

writes ``OUT/model.zip`` (Stable-Baselines3's own file, to resume or
inspect) and the agent: ``OUT/agent.py`` (``use = "OUT/agent.py:Agent"`` in
a sweep: a short :class:`schedlab.api.agent.MLPAgent` subclass, numpy only),
``OUT/agent.npz`` (the actor's weights) and ``OUT/training.json`` (the
training spec -- the environment's and the training's settings as typed JSON
values --, the schedlab commit and version, the budget: timesteps, wall and
CPU seconds, the curve, the last mean episode bounded slowdown). agent.py
declares the other two as its data files, so a sweep hashes them into its
code digest and ships them with it (``schedlab.usercode``). Every rollout logs to the MLflow run (experiment
``schedlab-rl``; ``--tracking-uri``, default a SQLite store in OUT): the mean
bounded slowdown of the episodes finished (``ep_bsld_mean``: minus the
mean episode return, which sums to minus the engine's mean bounded slowdown)
and Stable-Baselines3's training values (losses, entropy, KL, clip
fraction). ``--span LO HI`` draws training episodes among jobs LO..HI-1 of
the trace only, so that sequences outside it are held out for the sweep.

Rewards are per step (``reward_mode="step"``: each started job's bounded
slowdown / sequence, the same sum as the final reward, denser), normalised
by a running estimate of the return's scale (``VecNormalize``), with no
discount (gamma = 1: the return is then the episode's mean bounded slowdown).
Needs ``pip install -e '.[rl]'``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from schedlab.errors import UserError

#: What an agent is on disk: the policy file, its weights and its training record (the last two its DATA_FILES).
AGENT_FILE, WEIGHTS_FILE, TRAINING_FILE = "agent.py", "agent.npz", "training.json"

AGENT_TEMPLATE = '''"""{what}, exported as a batch policy
by {by}. Its network is {weights} and its training record (spec,
commit, budget, curve) {training}, both beside this file: declared data files,
hashed into the code's digest and shipped with it. Training:
{about}
"""

from schedlab.api import data_file
from schedlab.api.agent import {base}

DATA_FILES = ("{weights}", "{training}")


class Agent({base}):
    name = "{name}"
    summary = "{summary} choosing the head among the first {window} waiting jobs"
    backfill = {backfill}
    window = {window}
    runtime_scale = {runtime_scale!r}
    weights = data_file(__file__, "{weights}")
{extra}'''


#: Per agent base class: its module docstring's first words, the module that trains it, its summary's first words.
AGENT_KINDS = {
    "MLPAgent": ("A MaskablePPO agent trained on schedlab/Batch-v0", "schedlab.gym.train", "a MaskablePPO agent"),
    "SlotAgent": (
        "A slot-scoring agent (a heuristic cloned, then CMA-ES) trained on schedlab/Batch-v0",
        "schedlab.gym.slot_scorer",
        "a slot-scoring network",
    ),
}


def policy_layers(model: Any) -> list[tuple[Any, Any]]:
    """(W, b) of the actor's hidden layers then of its action layer, as numpy."""
    import torch

    layers = [m for m in model.policy.mlp_extractor.policy_net if isinstance(m, torch.nn.Linear)]
    layers.append(model.policy.action_net)
    return [(m.weight.detach().cpu().numpy(), m.bias.detach().cpu().numpy()) for m in layers]


def export(
    layers: list[tuple[Any, Any]],
    out: Path,
    *,
    window: int,
    runtime_scale: float,
    backfill: bool,
    name: str,
    training: dict[str, Any],
    base: str = "MLPAgent",
    attributes: dict[str, str] | None = None,
) -> Path:
    """Write the agent into the folder ``out``: ``agent.py`` (the policy
    class, a subclass of ``schedlab.api.agent``'s ``base``: ``MLPAgent``, the
    network of the whole observation, or ``SlotAgent``, a slot-scoring
    network), ``agent.npz`` (``layers``) and ``training.json``
    (``training``); ``attributes`` adds class attributes (name -> string
    value, e.g. a ``SlotAgent``'s ``features``); returns the path of agent.py."""
    import textwrap

    from schedlab.api.agent import save_layers

    out.mkdir(parents=True, exist_ok=True)
    save_layers(layers, out / WEIGHTS_FILE)
    (out / TRAINING_FILE).write_text(json.dumps(training, indent=1) + "\n")
    env = training.get("env", {})
    about = textwrap.fill(
        f"{training.get('timesteps')} timesteps, seed {training.get('seed')}, "
        f"{training.get('cpu_seconds', 0.0):.0f} CPU s, env {env}".replace('"', "'"),
        width=100,
    )
    path = out / AGENT_FILE
    path.write_text(
        AGENT_TEMPLATE.format(
            what=AGENT_KINDS[base][0],
            by=AGENT_KINDS[base][1],
            summary=AGENT_KINDS[base][2],
            base=base,
            about=about,
            name=name,
            window=window,
            backfill=backfill,
            runtime_scale=runtime_scale,
            weights=WEIGHTS_FILE,
            training=TRAINING_FILE,
            extra="".join(f"    {k} = {json.dumps(v)}\n" for k, v in (attributes or {}).items()),  # ruff's quotes
        )
    )
    return path


def provenance() -> dict[str, Any]:
    """The schedlab version and, when schedlab runs from a git checkout, its
    commit (and whether the work tree had uncommitted changes): what a
    trained agent records of the code it was trained with."""
    import subprocess

    from schedlab.version import __version__

    checkout = Path(__file__).resolve().parents[2]
    record: dict[str, Any] = {"schedlab_version": __version__, "commit": None, "dirty": None}
    try:
        head = subprocess.run(
            ["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, check=True
        )
        status = subprocess.run(
            ["git", "-C", str(checkout), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return record  # not a git checkout (an installed schedlab): the version says it
    record.update(commit=head.stdout.strip(), dirty=bool(status.stdout.strip()))
    return record


def quiet_logger() -> Any:
    """A Stable-Baselines3 logger that writes nothing and makes no folder: its
    values (``name_to_value``) still reach the MLflow callback. Without one,
    ``learn()`` configures SB3's default, which creates an empty
    ``tempdir/SB3-<date>`` folder on every call."""
    from stable_baselines3.common.logger import Logger

    return Logger(folder=None, output_formats=[])


def make_env(env_kwargs: dict[str, Any]) -> Any:
    import gymnasium
    from sb3_contrib.common.wrappers import ActionMasker

    import schedlab.gym  # noqa: F401  (registers the environments)

    return ActionMasker(gymnasium.make("schedlab/Batch-v0", **env_kwargs), lambda e: e.unwrapped.action_masks())  # type: ignore[attr-defined]


def train(
    env_kwargs: dict[str, Any],
    *,
    timesteps: int,
    out: Path,
    seed: int = 0,
    n_envs: int = 4,
    tracking_uri: str | None = None,
    name: str = "RL",
    net: tuple[int, ...] = (64, 64),
    n_steps: int = 512,
) -> dict[str, Any]:
    """Train, log, save and export (module docstring); returns the budget and what it reached."""
    import mlflow
    import numpy as np
    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.vec_env import DummyVecEnv, VecMonitor, VecNormalize

    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    torch.set_num_threads(1)
    env_kwargs = {**env_kwargs, "reward": "bsld", "reward_mode": "step"}
    monitored = VecMonitor(DummyVecEnv([lambda: make_env(env_kwargs) for _ in range(n_envs)]))
    monitored.seed(seed)
    venv = VecNormalize(monitored, norm_obs=False, norm_reward=True, gamma=1.0)
    model = MaskablePPO(
        "MlpPolicy",
        venv,
        seed=seed,
        gamma=1.0,
        n_steps=n_steps,
        batch_size=256,
        policy_kwargs={"net_arch": list(net)},
        verbose=0,
        device="cpu",
    )
    model.set_logger(quiet_logger())  # else each learn() makes an empty tempdir/SB3-<date> folder
    mlflow.set_tracking_uri(tracking_uri or f"sqlite:///{(out / 'mlflow.db').resolve()}")
    mlflow.set_experiment("schedlab-rl")
    curve: list[tuple[int, float]] = []

    class Log(BaseCallback):
        def _on_step(self) -> bool:
            return True

        def _on_rollout_end(self) -> None:
            eps = list(self.model.ep_info_buffer or [])
            values = {k.replace("/", "_"): float(v) for k, v in self.model.logger.name_to_value.items()}
            if eps:
                values["ep_bsld_mean"] = -float(np.mean([e["r"] for e in eps]))
                curve.append((self.num_timesteps, values["ep_bsld_mean"]))
            mlflow.log_metrics(values, step=self.num_timesteps)

    wall, cpu = time.perf_counter(), time.process_time()
    with mlflow.start_run(run_name=f"{name}-seed{seed}") as run:
        mlflow.log_params({**{k: str(v) for k, v in env_kwargs.items()}, "timesteps": timesteps, "seed": seed})
        model.learn(total_timesteps=timesteps, callback=Log())
        budget = {
            "method": "MaskablePPO (schedlab gym train)",
            "timesteps": int(model.num_timesteps),
            "wall_seconds": time.perf_counter() - wall,
            "cpu_seconds": time.process_time() - cpu,
            "curve": curve,
            "last_ep_bsld_mean": curve[-1][1] if curve else None,
            "mlflow_run_id": run.info.run_id,
            "env": _json_values(env_kwargs),
            "seed": seed,
            "n_envs": n_envs,
            "net": list(net),
            "n_steps": n_steps,
            **provenance(),
        }
        mlflow.log_metrics({"cpu_seconds": budget["cpu_seconds"], "wall_seconds": budget["wall_seconds"]})
    model.save(out / "model.zip")
    probe = make_env(env_kwargs).unwrapped
    export(
        policy_layers(model),
        out,
        window=probe.window,
        runtime_scale=probe.runtime_scale,
        backfill=probe.backfill == "easy",
        name=name,
        training=budget,
    )
    return budget


def _json_values(values: dict[str, Any]) -> dict[str, Any]:
    """``values`` as JSON keeps them: tuples as lists, None as null, numbers as numbers (never their str())."""
    return {k: list(v) if isinstance(v, tuple) else v for k, v in values.items()}


def add_env_arguments(ap: argparse.ArgumentParser, *, sequence: int) -> None:
    """The environment's options of a training command line (this one and ``schedlab.gym.slot_scorer``'s):
    the trace, the data folder, the machine, the episodes' jobs and window, the backfilling, the span."""
    ap.add_argument(
        "--trace",
        default="lublin_256.swf",
        help="SWF trace the episodes are drawn from: a path, or a bare name looked up in the subfolders of "
        "--data (default: %(default)s)",
    )
    ap.add_argument(
        "--data",
        type=Path,
        default=None,
        help="the data folder a bare --trace name is looked up in (default: $SCHEDLAB_DATA)",
    )
    ap.add_argument(
        "--nodes", type=int, default=None, help="processors of the machine (default: the trace's MaxProcs / MaxNodes)"
    )
    ap.add_argument("--sequence", type=int, default=sequence, help="jobs per training episode (default: %(default)s)")
    ap.add_argument(
        "--window", type=int, default=128, help="waiting jobs the agent chooses among (default: %(default)s)"
    )
    ap.add_argument(
        "--backfill",
        default="easy",
        choices=["none", "easy"],
        help="backfilling behind the agent (default: %(default)s)",
    )
    ap.add_argument(
        "--span",
        type=int,
        nargs=2,
        default=None,
        metavar=("LO", "HI"),
        help="draw episodes among jobs LO..HI-1 of the trace only (default: the whole trace)",
    )


def parser() -> argparse.ArgumentParser:
    """The command line: every option with its meaning and default (``--help``)."""
    ap = argparse.ArgumentParser(
        prog="python -m schedlab.gym.train",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
        epilog='Writes OUT/model.zip and the agent: OUT/agent.py (a batch policy: use = "OUT/agent.py:Agent"), '
        "OUT/agent.npz (its weights) and OUT/training.json (spec, commit, budget). Needs pip install -e '.[rl]'.",
    )
    add_env_arguments(ap, sequence=256)
    ap.add_argument(
        "--timesteps", type=int, default=100_000, help="environment steps to train for (default: %(default)s)"
    )
    ap.add_argument(
        "--seed", type=int, default=0, help="seed of the environments and the network (default: %(default)s)"
    )
    ap.add_argument("--envs", type=int, default=4, help="environments stepped side by side (default: %(default)s)")
    ap.add_argument(
        "--net", type=int, nargs="+", default=[64, 64], help="hidden layer widths of the actor (default: 64 64)"
    )
    ap.add_argument(
        "--n-steps", type=int, default=512, help="steps per environment in each rollout (default: %(default)s)"
    )
    ap.add_argument("--out", type=Path, required=True, help="output dir (required; no default)")
    ap.add_argument("--tracking-uri", default=None, help="MLflow tracking URI (default: a SQLite store OUT/mlflow.db)")
    ap.add_argument(
        "--name", default="RL", help="the exported policy's name (its rows' policy column) (default: %(default)s)"
    )
    return ap


def main(argv: list[str] | None = None) -> None:
    """The command line; bad input (a trace, a span, a size the environment
    refuses) is one line naming it and exit code 2, as for ``schedlab``."""
    ap = parser()
    a = ap.parse_args(argv)
    try:
        run(a)
    except UserError as err:
        print(f"{ap.prog}: error: {err}", file=sys.stderr)
        sys.exit(UserError.exit_code)


def run(a: argparse.Namespace) -> None:
    """Train with the parsed options ``a`` and print what it cost and reached."""
    env_kwargs: dict[str, Any] = {
        "trace": a.trace,
        "nodes": a.nodes,
        "sequence": a.sequence,
        "window": a.window,
        "backfill": a.backfill,
        "span": tuple(a.span) if a.span else None,
    }
    from schedlab.engines.batch.gym import BatchEnv
    from schedlab.gym.common import DATA_ENV

    if a.data is not None:  # this process's environments (and the training's) read it
        os.environ[DATA_ENV] = str(a.data)

    BatchEnv(**env_kwargs)  # bad input fails here, in a second, not after importing torch and MLflow
    budget = train(
        env_kwargs,
        timesteps=a.timesteps,
        out=a.out,
        seed=a.seed,
        n_envs=a.envs,
        tracking_uri=a.tracking_uri,
        name=a.name,
        net=tuple(a.net),
        n_steps=a.n_steps,
    )
    print(
        f"{budget['timesteps']} timesteps in {budget['wall_seconds']:.0f} s wall, {budget['cpu_seconds']:.0f} CPU s; "
        f"last mean episode bounded slowdown {budget['last_ep_bsld_mean']}; {a.out / 'agent.py'}"
    )


if __name__ == "__main__":
    main()
