"""User code declares data files (issue #37): ``DATA_FILES = ("agent.npz",)``
beside the code, each hashed into its digest (new weights re-run its
configurations as an edit does), kept with it in the results dir, shipped
with it to the workers (Ray's too) and read with
``schedlab.api.data_file(__file__, name)``. A trained agent is such code:
``agent.py`` + ``agent.npz`` + ``training.json`` (schedlab.gym.train's
export), swept with numpy only -- in a process where importing Gymnasium,
Stable-Baselines3 or torch fails.

Real sweeps in tmp dirs, real Parquet; the Ray test starts a local Ray.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner

import schedlab
from schedlab.api.agent import save_layers, size
from schedlab.cli import main
from schedlab.errors import UserError
from schedlab.gym.train import export
from schedlab.platform.execution.runner import run_sweep
from schedlab.platform.planning.validate import parse_spec
from schedlab.usercode import data_file, source_digest
from tests.processes import checkout_env

ROOT = Path(__file__).resolve().parent.parent
WINDOW = 8
KEY = ["config_id", "replication"]


def layers(seed: int, hidden: int = 6) -> list[tuple[np.ndarray, np.ndarray]]:
    """A small random network of the agent's shape (WINDOW slots)."""
    rng = np.random.default_rng(seed)
    shapes = [(hidden, size(WINDOW)), (WINDOW, hidden)]
    return [(rng.normal(size=s).astype(np.float32), rng.normal(size=s[0]).astype(np.float32)) for s in shapes]


def agent_folder(folder: Path, seed: int = 0) -> Path:
    """An exported agent (schedlab.gym.train.export): agent.py, agent.npz, training.json."""
    training = {"timesteps": 0, "seed": seed, "env": {"window": WINDOW}, "commit": None, "dirty": None}
    export(layers(seed), folder, window=WINDOW, runtime_scale=3600.0, backfill=True, name="RL", training=training)
    return folder / "agent.py"


def spec_of(folder: Path, use: str = "agent/agent.py:Agent", backend: str = "local") -> dict:
    return {
        "name": "agents",
        "engine": "batch",
        "seed": 3,
        "workload": {"kind": "lublin", "njobs": 120, "nodes": 32, "load": 0.8},
        "system": {"model": "procs", "procs": 32},
        "policies": [{"name": "RL", "use": use}, "EASY"],
        "replications": {"n": 2},
        "tracking": {"enabled": False},
        "execution": {"backend": backend},
        "outputs": {"dir": str(folder / "results" / "agents")},
    }


def sweep(spec: dict, folder: Path):
    return run_sweep(parse_spec(spec, "spec.toml", folder))


def rows(root: Path) -> pl.DataFrame:
    return schedlab.load(root).collect().sort(KEY)


def test_declared_data_files_are_hashed_kept_and_read(tmp_path):
    code = agent_folder(tmp_path / "agent")
    digest = source_digest(code)
    (tmp_path / "agent" / "agent.npz").write_bytes(save_layers(layers(0), tmp_path / "same.npz").read_bytes())
    assert source_digest(code) == digest  # the same weights, the same bytes (fixed zip time stamps)
    save_layers(layers(1), tmp_path / "agent" / "agent.npz")
    assert source_digest(code) != digest  # new weights: new code
    assert data_file(code, "agent.npz") == tmp_path / "agent" / "agent.npz"
    with pytest.raises(UserError, match="'other.npz' is not in its DATA_FILES"):
        data_file(code, "other.npz")

    sweep(spec_of(tmp_path), tmp_path)
    root = tmp_path / "results" / "agents"
    got = rows(root)
    assert got.height == 4 and not (root / "failures").exists()
    entry = json.loads((root / "manifest.json").read_text())["user_code"]["policies[0].use"]
    assert entry["files"] == ["agent.npz", "agent.py", "training.json"]
    kept = root / "code" / entry["sha256"]
    assert (kept / "agent.npz").read_bytes() == (tmp_path / "agent" / "agent.npz").read_bytes()
    assert json.loads((kept / "training.json").read_text())["seed"] == 0
    from schedlab.pipelines.rlsched_tables import _training

    assert _training(root) == json.loads((tmp_path / "agent" / "training.json").read_text())  # the page's record


def test_new_weights_rerun_exactly_the_agents_configurations(tmp_path):
    agent_folder(tmp_path / "agent")
    root = tmp_path / "results" / "agents"
    sweep(spec_of(tmp_path), tmp_path)
    before = rows(root)
    save_layers(layers(7), tmp_path / "agent" / "agent.npz")
    sweep(spec_of(tmp_path), tmp_path)
    after = rows(root)
    easy = pl.col("policy") == "EASY"
    assert after.filter(easy).equals(before.filter(easy))  # the other policy's rows, bit for bit
    old, new = set(before.filter(~easy)["config_id"]), set(after.filter(~easy)["config_id"])
    assert old.isdisjoint(new) and len(new) == 1  # the agent's configuration, re-run under its new id
    assert (root / "superseded").is_dir()  # its old rows moved aside, not mixed


def test_a_missing_data_file_is_one_line_naming_the_field_and_the_file(tmp_path):
    agent_folder(tmp_path / "agent")
    (tmp_path / "agent" / "training.json").unlink()
    (tmp_path / "spec.toml").write_text(
        'name = "agents"\nengine = "batch"\npolicies = [{name = "RL", use = "agent/agent.py:Agent"}]\n'
        '[workload]\nkind = "lublin"\nnjobs = 50\nnodes = 32\nload = 0.5\n[system]\nmodel = "procs"\nprocs = 32\n'
    )
    out = CliRunner().invoke(main, ["validate", str(tmp_path / "spec.toml")])
    assert out.exit_code == 2 and "Traceback" not in out.output, out.output
    (line,) = out.output.strip().splitlines()
    assert "policies[0].use" in line and "DATA_FILES: training.json" in line and "No such file" in line, line


def test_a_malformed_declaration_names_its_line(tmp_path):
    (tmp_path / "pol.py").write_text('from schedlab.api.agent import MLPAgent\n\nDATA_FILES = "agent.npz"\n')
    with pytest.raises(UserError, match=r"pol\.py:3: DATA_FILES must be a tuple of file names"):
        source_digest(tmp_path / "pol.py")
    (tmp_path / "pol.py").write_text('DATA_FILES = ("../up.npz",)\n')
    with pytest.raises(UserError, match=r"pol\.py:1: DATA_FILES: '../up.npz' must be a path below"):
        source_digest(tmp_path / "pol.py")


@pytest.fixture
def ray_owner():
    """The sweep below starts Ray itself (``run_sweep``); stop it after."""
    yield
    import ray

    from schedlab.platform.execution import ray_backend

    if ray.is_initialized():
        ray.shutdown()
    ray_backend._OWNED.clear()


def test_ray_workers_get_a_lone_files_data_files(tmp_path, ray_owner):
    """Ray ships a lone .py file alone: the data files follow in their own folder
    (usercode.ship_paths), the worker checks the digest over both and reads them."""
    agent_folder(tmp_path / "agent")
    sweep(spec_of(tmp_path / "local"), tmp_path)
    on_ray = {**spec_of(tmp_path / "ray", backend="ray"), "execution": {"backend": "ray", "num_cpus": 1}}
    sweep(on_ray, tmp_path)
    local, ray_rows = rows(tmp_path / "local" / "results" / "agents"), rows(tmp_path / "ray" / "results" / "agents")
    measured = [c for c in local.columns if c not in ("sim_seconds",)]
    assert ray_rows.height == 4 and ray_rows.select(measured).equals(local.select(measured))


BLOCKER = '''
"""Installed as sitecustomize: importing Gymnasium, Stable-Baselines3, sb3-contrib or torch raises
ImportError (their specs are found, as polars' optional-dependency probes expect, but never load)."""
import importlib.abc
import importlib.machinery
import sys

BLOCKED = ("gymnasium", "stable_baselines3", "sb3_contrib", "torch")


class Refuse(importlib.abc.Loader):
    def create_module(self, spec):
        raise ModuleNotFoundError(f"{spec.name} is blocked (a base install)", name=spec.name)

    def exec_module(self, module):
        raise ModuleNotFoundError(f"{module.__name__} is blocked (a base install)", name=module.__name__)


class Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] in BLOCKED:
            return importlib.machinery.ModuleSpec(fullname, Refuse())
        return None


sys.meta_path.insert(0, Blocker())
'''


def test_the_checked_in_agent_sweeps_with_numpy_only(tmp_path):
    """sweeps/rl/agent.py (its weights in agent.npz) swept by `schedlab run` in a
    process (and its workers) where importing Gymnasium, Stable-Baselines3 or torch fails."""
    (tmp_path / "blocker").mkdir()
    (tmp_path / "blocker" / "sitecustomize.py").write_text(BLOCKER)
    env = checkout_env()
    env["PYTHONPATH"] = f"{tmp_path / 'blocker'}:{env['PYTHONPATH']}"
    probe = subprocess.run([sys.executable, "-c", "import gymnasium"], env=env, capture_output=True, text=True)
    assert probe.returncode == 1 and "blocked" in probe.stderr  # the blocker works
    (tmp_path / "spec.toml").write_text(
        f'name = "rl-base"\nengine = "batch"\nseed = 30\n'
        f'policies = [{{name = "RL", use = "{ROOT / "sweeps" / "rl" / "agent.py"}:Agent"}}, "EASY"]\n'
        '[workload]\nkind = "lublin"\nnjobs = 300\nnodes = 256\nload = 0.9\n'
        '[system]\nmodel = "procs"\nprocs = 256\n[replications]\nn = 2\n[tracking]\nenabled = false\n'
    )
    run = subprocess.run(
        [sys.executable, "-m", "schedlab.cli", "run", "spec.toml", "--no-tracking", "--no-progress"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr
    got = schedlab.load(tmp_path / "results" / "rl-base").collect()
    assert sorted(got["policy"].unique().to_list()) == ["EASY", "RL"] and got.height == 4
    assert got.filter(pl.col("policy") == "RL")["stretch_mean"].min() >= 1.0  # a bounded slowdown, computed
