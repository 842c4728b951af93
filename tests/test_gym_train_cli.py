"""`python -m schedlab.gym.train` is a command-line tool like the others:
``--help`` documents every option with its default, bad input is one line
and exit code 2, and ``training.json`` keeps typed values (ints, nulls,
lists), not their str(). The training run needs the ``rl`` extra and the
Lublin log (skipped without them, saying which)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from schedlab.gym.train import main, parser
from tests.processes import checkout_env

TRAIN = [sys.executable, "-m", "schedlab.gym.train"]
LUBLIN = Path(__file__).resolve().parents[2] / "shared" / "data" / "lublin" / "lublin_256.swf.gz"


def test_help_documents_every_option_with_its_default():
    out = subprocess.run([*TRAIN, "--help"], capture_output=True, text=True, env=checkout_env(), timeout=120)
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())
    options = [a for a in parser()._actions if a.dest != "help"]
    assert len(options) == 15
    for action in options:
        assert action.help, action.dest
        assert action.option_strings[0] in text
        assert "default" in action.help, action.dest  # a value, or what none means
    for shown in (
        "(default: lublin_256.swf)",
        "(default: 256)",
        "(default: 100000)",
        "(default: 64 64)",
        "(default: $SCHEDLAB_DATA)",
    ):
        assert shown in text


@pytest.mark.skipif(importlib.util.find_spec("sb3_contrib") is None, reason="needs the rl extra (sb3-contrib)")
@pytest.mark.skipif(not LUBLIN.exists(), reason="Lublin log not present")
def test_the_command_line_trains_and_writes_typed_training_json(tmp_path, capsys):
    """The command line's `main`, in this process (a subprocess would import torch a second time)."""
    args = ["--sequence", "48", "--window", "16", "--span", "3000", "10000", "--timesteps", "256"]
    main([*args, "--envs", "2", "--n-steps", "128", "--net", "16", "16", "--out", str(tmp_path)])
    assert "256 timesteps" in capsys.readouterr().out
    doc = json.loads((tmp_path / "training.json").read_text())
    assert doc["env"] == {
        "trace": "lublin_256.swf",
        "nodes": None,
        "sequence": 48,
        "window": 16,
        "backfill": "easy",
        "span": [3000, 10000],
        "reward": "bsld",
        "reward_mode": "step",
    }
    assert (doc["seed"], doc["n_envs"], doc["net"], doc["n_steps"]) == (0, 2, [16, 16], 128)
    assert isinstance(doc["timesteps"], int) and doc["timesteps"] >= 256


@pytest.mark.skipif(not LUBLIN.exists(), reason="Lublin log not present")
def test_bad_input_is_one_line_and_exit_2_before_training(tmp_path):
    bad = subprocess.run(
        [*TRAIN, "--sequence", "48", "--span", "10", "5", "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        env=checkout_env(),
        timeout=300,
    )
    assert bad.returncode == 2 and "Traceback" not in bad.stderr, bad.stderr
    assert bad.stderr.strip().count("\n") == 0 and "span must be two job indices" in bad.stderr
    assert not (tmp_path / "out").exists()


def test_the_readme_says_how_to_run_the_training_test():
    """`.[test]` alone skips tests/test_gym_train.py (sb3-contrib is in `[rl]`): the README says so, in one line."""
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    line = next(line for line in readme.splitlines() if "tests/test_gym_train.py" in line)
    assert "pip install -e '.[test,rl]'" in line and "python -m pytest -q tests/test_gym_train.py" in line
