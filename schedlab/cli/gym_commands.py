"""`schedlab gym export`: a trained model as an agent (agent.py + agent.npz + training.json)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import click

from schedlab.cli.group import main
from schedlab.errors import UserError


@main.group()
def gym() -> None:
    """Learned schedulers: the Gymnasium environments' agents (docs/gym.md)."""


@gym.command("export")
@click.argument("model", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--out",
    "out",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder the agent is written to: agent.py, agent.npz, training.json.",
)
@click.option(
    "--training",
    "training_path",
    default=None,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The training record (its env settings give the agent's window and scale) "
    "[default: training.json beside MODEL].",
)
@click.option(
    "--data",
    default=None,
    type=click.Path(file_okay=False, path_type=Path),
    help="The data folder a bare trace name of the record is looked up in [default: $SCHEDLAB_DATA].",
)
@click.option("--name", default="RL", show_default=True, help="The agent's policy name (its rows' policy column).")
def gym_export(model: Path, out: Path, training_path: Path | None, data: Path | None, name: str) -> None:
    """Write MODEL (a MaskablePPO model.zip that `python -m schedlab.gym.train` saved) as an agent
    swept with `use = "OUT/agent.py:Agent"`: its actor's weights, the training record with the
    commit of this export added. Needs pip install -e '.[rl]'."""
    training_path = training_path or model.parent / "training.json"
    for path, what in ((model, "MODEL"), (training_path, "--training")):
        if not path.is_file():
            raise UserError(f"{what}: no such file {path}")
    try:
        record = json.loads(training_path.read_text())
        env_kwargs = dict(record["env"])
    except (ValueError, KeyError, TypeError) as err:
        raise UserError(f"{training_path}: not a training record with an 'env' table ({err})") from None
    if isinstance(env_kwargs.get("span"), list):
        env_kwargs["span"] = tuple(env_kwargs["span"])
    try:
        from sb3_contrib import MaskablePPO
    except ImportError:
        raise UserError("schedlab gym export needs the rl extra: pip install -e '.[rl]'") from None
    from schedlab.engines.batch.gym import BatchEnv
    from schedlab.gym.common import DATA_ENV
    from schedlab.gym.train import export, policy_layers, provenance

    if data is not None:
        os.environ[DATA_ENV] = str(data)
    probe = BatchEnv(**env_kwargs)  # a trace or setting it cannot read: one line, before loading torch's model
    try:
        trained = MaskablePPO.load(model, device="cpu")
    except Exception as err:  # noqa: BLE001 - a zip Stable-Baselines3 cannot read, whatever it raises
        raise UserError(f"{model}: not a MaskablePPO model ({type(err).__name__}: {err})") from None
    record["export"] = provenance()
    path = export(
        policy_layers(trained),
        out,
        window=probe.window,
        runtime_scale=probe.runtime_scale,
        backfill=probe.backfill == "easy",
        name=name,
        training=record,
    )
    click.echo(str(path))
