"""A researcher's own engine (docs/guide/your-own-engine.md) gets the whole
platform: the chapter's multi-server queue, written out from the page, runs
as a sweep through the CLI, and its FCFS and LCFS mean waits agree with
Erlang C's M/M/c mean wait within the sweep's 95 % interval and
`ERLANG_REL_TOL`; `results`, `compare`, `view` and `check-policy` run on it
(`results` and `compare` on its headline metric when no --metric is given);
its rows carry its digest and its ids change with its code (not with a
comment); a pool runs it to the same rows, bit for bit, as the driver; its
declared decision point, the page's Gymnasium environment (mmc_env.py), is
registered from the declaration, keeps the page's invalid-action rule and
refuses bad input in one line.
"""

from __future__ import annotations

import math
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import schedlab
from tests.processes import checkout_env
from tests.test_docs import FILE_MARK, GUIDE, blocks, forget_modules

PAGE = GUIDE / "your-own-engine.md"
#: How far (a fraction of W) the sweep's mean wait may sit beyond its 95 % interval
#: from Erlang C's: each replication starts empty, a little below the steady state.
ERLANG_REL_TOL = 0.05


def erlang_c_wait(c: int, lam: float, mu: float = 1.0) -> float:
    """The M/M/c queue's mean wait: C(c, a) / (c mu - lambda), a = lambda / mu."""
    a = lam / mu
    top = a**c / math.factorial(c) * c / (c - a)
    return top / (sum(a**k / math.factorial(k) for k in range(c)) + top) / (c * mu - lam)


def cli(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "schedlab.cli", *args],
        cwd=folder,
        env=checkout_env(),
        capture_output=True,
        text=True,
        timeout=900,
    )


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> Path:
    """The page's files in a folder of their own: my_engine.py, my-engine.toml and mmc_env.py."""
    folder = tmp_path_factory.mktemp("own-engine").resolve()
    for _, text, _ in blocks(PAGE):
        first, _, rest = text.partition("\n")
        mark = FILE_MARK.fullmatch(first.strip())
        if mark:
            (folder / mark.group(1)).write_text(rest)
    assert {p.name for p in folder.iterdir()} >= {"my_engine.py", "my-engine.toml", "mmc_env.py"}
    return folder


@pytest.fixture(scope="module")
def swept(written) -> Path:
    run = cli(written, "run", "my-engine.toml", "--no-tracking")
    assert run.returncode == 0, run.stderr[-2000:]
    return written / "results" / "my-engine"


def test_the_mean_wait_is_erlang_c(written, swept):
    spec = tomllib.loads((written / "my-engine.toml").read_text())
    c, lam = spec["system"]["servers"], spec["workload"]["load"]  # mu = 1: exponential sizes of mean 1
    w = erlang_c_wait(c, lam)
    out = cli(written, "results", str(swept), "--metric", "wait_mean", "--csv")
    assert out.returncode == 0, out.stderr
    import io

    table = pl.read_csv(io.StringIO(out.stdout))
    means = {row["policy"]: row for row in table.iter_rows(named=True)}
    for policy in ("FCFS", "LCFS"):  # size-blind orders: the same mean wait
        row = means[policy]
        assert row["n"] == spec["replications"]["n"]
        assert abs(row["wait_mean_mean"] - w) <= row["wait_mean_ci95"] + ERLANG_REL_TOL * w, (policy, row, w)
    assert means["SJF"]["wait_mean_mean"] < w


def test_compare_view_and_check_policy_run_on_it(written, swept):
    compared = cli(written, "compare", str(swept), "--metric", "wait_mean", "--baseline", "FCFS")
    assert compared.returncode == 0, compared.stderr
    assert "SJF" in compared.stdout and "LCFS" in compared.stdout
    viewed = cli(written, "view", str(swept), "--policy", "SJF", "--window", "0:20")
    assert viewed.returncode == 0, viewed.stderr
    assert "replay matches the row" in viewed.stdout
    checked = cli(written, "check-policy", "my_engine.py:LCFS", "--engine", "my_engine.py:MyEngine", "--examples", "40")
    assert checked.returncode == 0 and checked.stdout.startswith("ok (40 workloads)"), checked.stdout + checked.stderr
    (written / "skip.py").write_text(
        "from my_engine import Policy\n\n\nclass Skip(Policy):\n"
        "    def pick(self, waiting, submit, size):\n        return len(waiting)\n"
    )
    broken = cli(written, "check-policy", "skip.py:Skip", "--engine", "my_engine.py:MyEngine", "--examples", "40")
    assert broken.returncode == 1 and "invariant runs violated" in broken.stdout, broken.stdout + broken.stderr


def test_results_and_compare_default_to_its_headline_metric(written, swept, tmp_path):
    """Without --metric, `results` and `compare` report the engine's headline
    (``headline=("wait_mean", ...)``), its declaration read from the copy of
    its code the results dir keeps: run from a folder without my_engine.py."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for command in (["results", str(swept), "--csv"], ["compare", str(swept), "--baseline", "FCFS", "--csv"]):
        default = cli(elsewhere, *command)
        named = cli(elsewhere, *command, "--metric", "wait_mean")
        assert default.returncode == 0, default.stderr
        assert default.stdout == named.stdout and "wait_mean" in default.stdout.splitlines()[0]


def test_plot_labels_its_metrics_as_it_declares_them(written, swept, tmp_path):
    """A figure's axis reads the meaning the engine declares for its metric
    (``Column("wait_mean", ..., "time units", "mean wait, start - submit")``)
    in the time unit it declares (``EngineUnits("time units of the
    workload", ...)``), read from the code copy the results dir keeps, not
    the bare column name; run from a folder without my_engine.py. (`plot`
    labels its axes with `axis_labels`; this sweep has one point, no x to
    draw, so the labels are asked for directly.)"""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    code = (
        "import sys\n"
        "from schedlab.plotting import axis_labels\n"
        "from schedlab.platform.storage.query import stored_scan\n"
        "root, manifest, _ = stored_scan(sys.argv[1])\n"
        "print(axis_labels(root, manifest, 'replication', 'wait_mean', None)[1])\n"
        "print(axis_labels(root, manifest, 'replication', 'wait_mean', 'FCFS')[1])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(swept)],
        cwd=elsewhere,
        env=checkout_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "mean wait, start - submit [time units of the workload]",
        "mean wait, start - submit / FCFS",
    ]


def test_rows_carry_the_engine_digest_and_ids_follow_its_code(written, swept):
    from schedlab.platform.planning.plan import build_plan
    from schedlab.platform.planning.validate import load_spec
    from schedlab.usercode import source_digest

    rows = schedlab.load(swept).collect()
    assert set(rows["engine"]) == {"mmc"}
    assert set(rows["engine_code_sha256"]) == {source_digest(written / "my_engine.py")}
    try:
        ids = set(build_plan(load_spec(written / "my-engine.toml"), "spec").configs)
        assert ids == set(rows["config_id"])
        source = (written / "my_engine.py").read_text()
        (written / "my_engine.py").write_text(source + "\n# a comment changes no id\n")
        forget_modules(written)
        assert set(build_plan(load_spec(written / "my-engine.toml"), "spec").configs) == ids
        (written / "my_engine.py").write_text(source.replace("wait = start - submit", "wait = (start - submit) * 1"))
        forget_modules(written)
        assert not set(build_plan(load_spec(written / "my-engine.toml"), "spec").configs) & ids
    finally:
        (written / "my_engine.py").write_text(source)
        forget_modules(written)


def test_a_pool_gives_the_drivers_rows(written, monkeypatch):
    from schedlab.platform.execution import backends
    from schedlab.platform.planning.validate import parse_spec
    from schedlab.platform.sweep import run_sweep

    data = tomllib.loads((written / "my-engine.toml").read_text())
    data["workload"]["njobs"] = 2000
    data["tracking"] = {"enabled": False}
    tables = {}
    try:
        for where in ("in-process", "pool"):
            if where == "pool":
                monkeypatch.setattr(backends, "IN_PROCESS_SECONDS", 0.0)  # any estimate asks for the pool
                monkeypatch.setattr(backends, "COLD_POOL_SECONDS", 0.0)
            data["outputs"] = {"dir": str(written / where)}
            report = run_sweep(parse_spec(data, str(written / "my-engine.toml"), written), backend="local")
            assert not report.failures and report.backend.startswith("in a local pool" if where == "pool" else where)
            tables[where] = schedlab.load(report.results_dir).collect().sort("config_id", "replication")
    finally:
        forget_modules(written)
    assert_frame_equal(
        tables["pool"].drop("sim_seconds", strict=False),
        tables["in-process"].drop("sim_seconds", strict=False),
        check_exact=True,
    )


@pytest.fixture
def mmc_env(written, monkeypatch):
    """The page's environment module (mmc_env.py, beside my_engine.py, which it
    imports), its engine's environment registered as ``schedlab/Mmc-v0``."""
    gymnasium = pytest.importorskip("gymnasium")
    import importlib

    import schedlab.gym

    monkeypatch.syspath_prepend(str(written))
    try:
        module = importlib.import_module("mmc_env")
        assert schedlab.gym.register(module.MyEngine) == module.ENV == "schedlab/Mmc-v0"
        yield module
    finally:
        gymnasium.registry.pop("schedlab/Mmc-v0", None)
        forget_modules(written)


def play(env, agent, seed):
    """One episode of ``agent(obs, mask, env) -> action``: the masks asked with and the rewards."""
    obs, info = env.reset(seed=seed)
    masks, rewards, done = [], [], False
    while not done:
        masks.append(info["action_mask"])
        obs, reward, done, _, info = env.step(agent(obs, info["action_mask"], env))
        rewards.append(reward)
    return masks, rewards


def test_the_pages_environment_is_its_engines_decision_point(written, mmc_env):
    """The environment of the page, made from the declaration of the engine a
    spec names (``decision_point="mmc_env:MmcEnv"``): each question has two
    waiting jobs or more; an action on an empty slot is the last filled slot
    (the page's rule), so an agent naming the last slot of the window is
    LCFS when the window holds every waiting job (the engine's own LCFS rows,
    bit for bit) and plays the episode of the nearest-slot agent otherwise;
    the same seed gives the same episode; an engine without a decision point
    registers nothing."""
    import gymnasium

    import schedlab.gym
    from schedlab.api import run_instance
    from schedlab.engines import spec_engine

    engine, _ = spec_engine("my_engine.py:MyEngine", written, "engine")
    assert engine.decision_point == "mmc_env:MmcEnv"
    assert gymnasium.spec(schedlab.gym.register(engine)).entry_point == "mmc_env:MmcEnv"

    env = gymnasium.make("schedlab/Mmc-v0", sequence=150, window=150).unwrapped
    masks, _ = play(env, lambda obs, mask, env: 149, seed=3)
    assert masks and all(int(m.sum()) >= 2 for m in masks)
    lcfs = run_instance(mmc_env.MyEngine, env.episode, sys.modules["my_engine"].LCFS, None, {"servers": 3}).result
    assert env.result.summary == lcfs.summary
    assert all(np.array_equal(env.result.jobs[k], lcfs.jobs[k]) for k in lcfs.jobs)

    last, nearest = (gymnasium.make("schedlab/Mmc-v0", window=4).unwrapped for _ in range(2))
    by_last = play(last, lambda obs, mask, env: 3, seed=4)
    by_nearest = play(nearest, lambda obs, mask, env: int(np.flatnonzero(mask)[-1]), seed=4)
    assert any(int(m.sum()) < 4 for m in by_last[0])  # the rule was used
    assert by_last[1] == by_nearest[1] and np.array_equal(last.result.jobs["start"], nearest.result.jobs["start"])
    again = gymnasium.make("schedlab/Mmc-v0", window=4).unwrapped
    assert play(again, lambda obs, mask, env: 3, seed=4)[1] == by_last[1]

    from dataclasses import replace

    with pytest.raises(ValueError, match="declares no decision point"):
        schedlab.gym.register(replace(engine, decision_point=None))


def test_the_pages_environment_refuses_bad_input_in_one_line(mmc_env):
    from schedlab.errors import UserError

    for options, message in (
        ({"servers": 0}, "schedlab/Mmc-v0.servers: must be an integer >= 1; got 0"),
        ({"window": 0}, "schedlab/Mmc-v0: window must be an integer >= 1; got 0"),
        ({"load": "high"}, "schedlab/Mmc-v0: load must be > 0; got 'high'"),
    ):
        with pytest.raises(UserError) as err:
            mmc_env.MmcEnv(**options)
        assert str(err.value) == message
    env = mmc_env.MmcEnv(window=4)
    env.reset(seed=0)
    with pytest.raises(UserError, match=r"^schedlab/Mmc-v0: action 4 is not a slot 0\.\.3$"):
        env.step(4)
    play(env, lambda obs, mask, env: 0, seed=0)
    with pytest.raises(UserError, match="step\\(\\) after the episode ended; call reset\\(\\)"):
        env.step(0)
