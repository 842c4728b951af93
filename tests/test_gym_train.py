"""A short real MaskablePPO training run on schedlab/Batch-v0 (the ``rl``
extra; skipped without it): the curve reaches MLflow, the exported
``agent.py`` (+ ``agent.npz``, ``training.json``) is a batch policy whose
numpy network is the trained actor, the engine running it gives the schedule
the same network gives in the environment, bit for bit, and `schedlab gym
export` writes the same agent again from the saved model."""

from __future__ import annotations

import importlib.util
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sb3_contrib")
gymnasium = pytest.importorskip("gymnasium")

import schedlab.gym  # noqa: E402,F401
from schedlab.api.agent import load_layers, logits  # noqa: E402
from schedlab.engines.batch.sim.engine import run_table  # noqa: E402
from schedlab.gym.train import quiet_logger, train  # noqa: E402

LUBLIN = Path(__file__).resolve().parents[2] / "shared" / "data" / "lublin" / "lublin_256.swf.gz"
#: numpy's float32 forward pass against torch's: the same weights, summation orders may differ.
FORWARD_ATOL = 1e-4


@pytest.mark.skipif(not LUBLIN.exists(), reason="Lublin log not present")
def test_train_log_export_and_run_the_agent(tmp_path, monkeypatch):
    env_kwargs = {"trace": "lublin_256.swf", "sequence": 48, "window": 16, "backfill": "easy", "span": (3000, 10000)}
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))  # where SB3's default logger would make SB3-<date>
    monkeypatch.delenv("SB3_LOGDIR", raising=False)
    budget = train(env_kwargs, timesteps=512, out=tmp_path, seed=0, n_envs=2, n_steps=128, net=(32, 32))
    assert not list(temp.glob("SB3-*"))  # training leaves no SB3-<date> folder behind
    assert budget["timesteps"] >= 512 and budget["curve"] and budget["cpu_seconds"] > 0
    assert {"model.zip", "agent.py", "agent.npz", "training.json", "mlflow.db"} <= {p.name for p in tmp_path.iterdir()}
    record = json.loads((tmp_path / "training.json").read_text())
    assert record["timesteps"] == budget["timesteps"] and record["env"]["window"] == 16
    assert len(record["commit"]) == 40 and isinstance(record["dirty"], bool)  # the checkout's commit, recorded

    import mlflow

    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    history = client.get_metric_history(budget["mlflow_run_id"], "ep_bsld_mean")
    assert [m.value for m in history] == pytest.approx([v for _, v in budget["curve"]])

    spec = importlib.util.spec_from_file_location("trained_agent", tmp_path / "agent.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["trained_agent"] = module
    spec.loader.exec_module(module)
    Agent = module.Agent

    # the exported numpy network is the trained actor
    from sb3_contrib import MaskablePPO

    model = MaskablePPO.load(tmp_path / "model.zip", device="cpu")
    env = gymnasium.make("schedlab/Batch-v0", **{**env_kwargs, "span": None})
    obs, info = env.reset(seed=11, options={"start": 200})
    import torch

    with torch.no_grad():
        ref = model.policy.get_distribution(torch.as_tensor(obs[None])).distribution.logits.numpy()[0]
    mine = logits(load_layers(Agent.weights), obs)
    assert np.allclose(mine - mine.max(), ref - ref.max(), atol=FORWARD_ATOL)

    # the same network in the environment and as a policy in the engine: one schedule
    layers = load_layers(Agent.weights)
    done = False
    while not done:
        out = logits(layers, obs)[: int(info["action_mask"].sum())]
        obs, r, term, trunc, info = env.step(int(np.argmax(out)))
        done = term or trunc
    u = env.unwrapped
    per_job, summary = run_table(u.episode, Agent, procs=256)
    assert per_job["start"].tolist() == u.schedule()[0].tolist() and r == -summary["stretch_mean"]

    # `schedlab gym export` writes the same agent again from model.zip and training.json, byte for byte
    from click.testing import CliRunner

    from schedlab.cli import main

    out = CliRunner().invoke(main, ["gym", "export", str(tmp_path / "model.zip"), "--out", str(tmp_path / "again")])
    assert out.exit_code == 0, out.output
    for name in ("agent.py", "agent.npz"):
        assert (tmp_path / "again" / name).read_bytes() == (tmp_path / name).read_bytes(), name
    again = json.loads((tmp_path / "again" / "training.json").read_text())
    assert again["export"]["commit"] == record["commit"] and again["curve"] == record["curve"]


def test_plain_ppo_trains_on_the_defaults_and_maskable_ppo_keeps_its_masks():
    """Stable-Baselines3's PPO knows no masks: an empty slot means the nearest
    filled one (``invalid_action``'s default), so it trains without error;
    sb3-contrib's MaskablePPO reads ``action_masks()`` and never picks an empty slot."""
    from sb3_contrib import MaskablePPO
    from sb3_contrib.common.wrappers import ActionMasker
    from stable_baselines3 import PPO

    env = gymnasium.make("schedlab/Batch-v0", sequence=64, window=16)
    model = PPO("MlpPolicy", env, n_steps=512, batch_size=128, n_epochs=1, seed=0, device="cpu")
    model.set_logger(quiet_logger())  # no SB3-<date> folder left in the temp dir
    model.learn(total_timesteps=2048)
    assert model.num_timesteps >= 2048

    strict = gymnasium.make("schedlab/Batch-v0", sequence=64, window=16, invalid_action="raise")
    masked = ActionMasker(strict, lambda e: e.unwrapped.action_masks())
    maskable = MaskablePPO("MlpPolicy", masked, n_steps=256, batch_size=64, n_epochs=1, seed=0, device="cpu")
    maskable.set_logger(quiet_logger())
    maskable.learn(total_timesteps=512)  # an action outside the mask would raise here
    assert maskable.num_timesteps >= 512
