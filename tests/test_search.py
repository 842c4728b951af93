"""Parameter search ([search], schedlab.platform.search): the spec's checks,
the sampler's resumption (a journal cut back to its last told batch asks the
same trials again), the selection's intervals against scipy, and on real Ray:
a known answer from a dense grid, and the same trials, rows and winner on one
core, on two, and after a SIGKILL and a resume."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import math
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import schedlab
from schedlab.errors import UserError, messages
from schedlab.platform.planning.validate import parse_spec
from tests.processes import kill_session

REPO = Path(__file__).resolve().parent.parent
AGED = str(REPO / "examples" / "mypolicies" / "aged_srpt.py") + ":AgedSRPT"
GENERATOR = str(REPO / "examples" / "mygenerators.py") + ":two_resource"


def packing(search: dict, **extra) -> dict:
    return {
        "name": "s",
        "engine": "packing",
        "policies": ["Tetris"],
        "workload": {"use": GENERATOR, "njobs": 100, "servers": 4, "load": 0.9},
        "system": {"servers": 4, "capacity": 1.0, "epoch": 0},
        "search": {"metric": "wait_mean", "trials": 4, **search},
        **extra,
    }


def errors_of(data: dict) -> list[str]:
    with pytest.raises(UserError) as err:
        parse_spec(data, "s.toml")
    return messages(err.value)


# ---- the spec's checks -------------------------------------------------------------------


def test_search_spec_errors_name_their_field():
    got = errors_of(
        packing(
            {
                "sampler": "grid",
                "metric": "jct",
                "params": {
                    "epsilon": {"low": 0.0, "high": 1.0},
                    "zeta": {"low": 0.1, "high": 1.0},
                    "load": {"low": 0.5, "high": 0.9},
                },
                "select": {"baseline": {"epsilon": 0.5}},
            }
        )
    )
    assert got == [
        "s.toml: search.metric: 'jct' is not a summary metric of engine 'packing' (queue_jobs_mean, "
        "running_jobs_mean, wait_mean, wait_p99, jct_mean, jct_p99, throughput, makespan, completed, started, "
        "epochs, queue_resource_mean, queue_resource_mean_<r>, utilisation, utilisation_<r>, sim_seconds)",
        "s.toml: search.params.zeta: no such parameter (policy 'Tetris' takes epsilon, fairness; workload kind "
        "'two_resource' takes njobs, servers, load, mean_duration, correlation)",
        "s.toml: search.params.load: also set in [workload]; a searched parameter takes the trial's value",
        "s.toml: search.sampler: grid needs every parameter discrete (choices, an integer, or step); epsilon, "
        "zeta, load is a continuous range",
        "s.toml: search.select.baseline: gives no value for zeta",
        "s.toml: search.select.baseline: gives no value for load",
    ]


def test_search_spec_types_and_scales():
    # VQS's J is declared int: a search over it is over whole numbers
    vqs = packing({"params": {"J": {"low": 1.5, "high": 6}}})
    vqs["policies"] = ["VQS"]
    assert errors_of(vqs) == ["s.toml: search.params.J.low: J is an integer parameter; give a whole number"]
    vqs["search"]["params"] = {"J": {"low": 0, "high": 6, "log": True}}
    assert errors_of(vqs) == ["s.toml: search.params.J.log: a log scale needs low > 0 (got 0)"]
    vqs["search"]["params"] = {"J": {"choices": [2, "four"]}}
    assert errors_of(vqs) == ["s.toml: search.params.J.choices[1]: input should be a valid integer; got 'four'"]
    vqs["search"]["params"] = {"J": {"low": 2, "high": 6}}
    spec = parse_spec(vqs, "s.toml")
    from optuna.distributions import IntDistribution

    from schedlab.platform.search.space import distributions

    assert distributions(spec) == {"J": IntDistribution(2, 6)}
    # a user policy's declared parameter (Annotated[float, Field(ge=0)]) bounds the range
    aged = {
        "name": "a",
        "engine": "queue",
        "policies": [{"name": "AgedSRPT", "use": AGED}],
        "workload": {"kind": "synthetic", "njobs": 100},
        "search": {"metric": "mst", "trials": 2, "params": {"alpha": {"low": -1.0, "high": 1.0}}},
    }
    assert errors_of(aged) == ["s.toml: search.params.alpha.low: input should be greater than or equal to 0; got -1.0"]
    aged["replications"] = {"n": 3}
    aged["search"]["params"] = {"alpha": {"low": 0.0, "high": 1.0}}
    assert errors_of(aged) == [
        "s.toml: replications: a search sets its own (search.replications per trial, "
        "search.select.replications for the final selection)"
    ]


def test_search_validate_cli_exit_2(tmp_path):
    from click.testing import CliRunner

    from schedlab.cli import main

    (tmp_path / "s.toml").write_text(
        textwrap.dedent(
            f"""\
            name = "s"
            engine = "queue"
            policies = [{{name = "AgedSRPT", use = "{AGED}"}}, "PS"]
            [search]
            metric = "mst"
            trials = 3
            params = {{alpha = {{low = 0.0, high = 1.0}}}}
            """
        )
    )
    result = CliRunner().invoke(main, ["validate", str(tmp_path / "s.toml")])
    assert result.exit_code == 2
    assert result.output.strip().endswith("policies: a search tunes one policy; name exactly one"), result.output
    assert "Traceback" not in result.output


def test_plan_shows_the_search(tmp_path):
    from click.testing import CliRunner

    from schedlab.cli import main

    (tmp_path / "s.toml").write_text((REPO / "sweeps" / "tetris-knob.toml").read_text())
    result = CliRunner().invoke(main, ["plan", str(tmp_path / "s.toml")])
    assert result.exit_code == 0, result.output
    assert "tpe on wait_mean (minimize): 8 trials, 4 at a time, each on replications 0..2" in result.output
    assert "epsilon in [0.01, 1, log]; fairness in [0.05, 1]" in result.output
    assert "the best 3 trials on fresh replications 3..8: paired t intervals" in result.output
    assert "at most 24 (trials) + 24 (selection)" in result.output
    assert "warning" not in result.output  # a search sets its own replications: no "n = 1" lint


# ---- the sampler: deterministic, resumable -----------------------------------------------

SAMPLERS = ["tpe", "cmaes", "random", "qmc", "grid"] + (["gp"] if importlib.util.find_spec("torch") else [])


def objective(params: dict) -> float:
    """A smooth bowl with its minimum at x = 0.3, y = 7 (the grid has both)."""
    return (math.log(params["x"]) - math.log(0.3)) ** 2 + 0.01 * (params["y"] - 7) ** 2


def run_batches(root: Path, spec, batches: int, kill_in: int | None = None) -> list[dict]:
    """Ask / tell ``batches`` batches as run_search does; ``kill_in``: stop in
    that batch after its asks, before its tells (a kill mid-batch)."""
    from schedlab.platform.search import loop
    from schedlab.platform.search.space import distributions

    study, told = loop._open_study(root, spec)
    dists = distributions(spec)
    for b in range(told, batches):
        study.sampler = loop._sampler(spec, b)
        asked = [study.ask(dists) for _ in range(spec.search.parallel)]
        if b == kill_in:
            return []
        for t in asked:
            study.tell(t, objective(t.params))
        loop._atomic_json(root / loop.STATE, {"batches": b + 1, "journal_bytes": (root / loop.JOURNAL).stat().st_size})
    return [{"number": t.number, "params": t.params, "value": t.value} for t in study.get_trials()]


@pytest.mark.parametrize("sampler", SAMPLERS)
def test_a_killed_batch_is_asked_again_exactly(tmp_path, monkeypatch, sampler):
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    from schedlab.platform.search import loop, space

    data = {
        "name": "bowl",
        "engine": "queue",
        "seed": 4,
        "policies": [{"name": "AgedSRPT", "use": AGED}],
        "workload": {"kind": "synthetic", "njobs": 100},
        "search": {
            "sampler": sampler,
            "metric": "mst",
            "trials": 12,
            "parallel": 3,
            "params": {"alpha": {"low": 0.0, "high": 1.0, **({"step": 0.5} if sampler == "grid" else {})}},
        },
    }
    spec = parse_spec(data, "s.toml")
    # the bowl's parameters instead of alpha: a float (log scale, or choices for the grid) and an integer
    xs = [0.1, 0.3, 1.0, 3.0]
    x = CategoricalDistribution(xs) if sampler == "grid" else FloatDistribution(0.01, 10.0, log=True)
    monkeypatch.setattr(space, "distributions", lambda _spec: {"x": x, "y": IntDistribution(0, 10)})
    monkeypatch.setattr(loop, "grid_space", lambda _spec: {"x": xs, "y": list(range(11))})
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    whole = run_batches(tmp_path / "a", spec, 4)
    assert run_batches(tmp_path / "b", spec, 4, kill_in=2) == []
    with (tmp_path / "b" / "study.journal").open("ab") as fh:
        fh.write(b'{"op_code": 5, "half a li')  # a kill in the middle of a write
    resumed = run_batches(tmp_path / "b", spec, 4)
    assert len(whole) == 12
    assert resumed == whole
    assert len({json.dumps(t["params"], sort_keys=True) for t in whole}) > 3  # not one point asked again and again


# ---- the selection's intervals -----------------------------------------------------------


def test_difference_intervals_match_scipy():
    from scipy import stats

    from schedlab.platform.search.select import candidates, difference, interval
    from schedlab.platform.search.space import TrialRecord
    from schedlab.search_figure import best_so_far

    rng = np.random.default_rng(3)
    a, b = rng.normal(1.0, 1.0, 12), rng.normal(1.4, 2.0, 9)
    paired = difference(list(a[:9]), list(b), 0.9, paired=True)
    ref = stats.ttest_rel(a[:9], b).confidence_interval(0.9)
    assert paired["n"] == 9 and paired["low"] == pytest.approx(ref.low, rel=1e-12)
    assert paired["high"] == pytest.approx(ref.high, rel=1e-12)
    welch = difference(list(a), list(b), 0.95, paired=False)
    ref = stats.ttest_ind(a, b, equal_var=False).confidence_interval(0.95)
    assert welch["low"] == pytest.approx(ref.low, rel=1e-9) and welch["high"] == pytest.approx(ref.high, rel=1e-9)
    one = interval(list(a), 0.95)
    ref = stats.ttest_1samp(a, 0.0).confidence_interval(0.95)
    assert one["low"] == pytest.approx(ref.low, rel=1e-12) and one["mean"] == pytest.approx(a.mean(), rel=1e-15)

    assert best_so_far([3.0, None, 4.0, 1.0, 2.0], minimize=True) == [3.0, 3.0, 3.0, 1.0, 1.0]
    assert best_so_far([None, 3.0, 4.0, 1.0], minimize=False) == [None, 3.0, 4.0, 4.0]
    recs = [
        TrialRecord(0, 0, {"a": 1}, "c1", "complete", 5.0),
        TrialRecord(1, 0, {"a": 2}, "c2", "fail", None),
        TrialRecord(2, 1, {"a": 3}, "c3", "complete", 2.0),
        TrialRecord(3, 1, {"a": 1}, "c1", "complete", 5.0),  # the same configuration again
        TrialRecord(4, 2, {"a": 4}, "c4", "complete", 2.0),  # a tie: the earlier trial ranks first
    ]
    assert [r.number for r in candidates(recs, 3, minimize=True)] == [2, 4, 0]
    assert [r.number for r in candidates(recs, 2, minimize=False)] == [0, 2]


# ---- on Ray: a known answer ----------------------------------------------------------------


def test_search_finds_the_dense_grid_optimum_with_a_fifth_of_its_simulations(tmp_path):
    """benchmarks/search.py --quick: Tetris's epsilon, a 12 x 15 grid against
    6 trials x 3 replications and KN on fresh instances."""
    import ray

    from schedlab.platform.execution import runner

    path = REPO / "benchmarks" / "search.py"
    mod_spec = importlib.util.spec_from_file_location("bench_search", path)
    assert mod_spec is not None and mod_spec.loader is not None
    bench = importlib.util.module_from_spec(mod_spec)
    mod_spec.loader.exec_module(bench)
    try:
        got = bench.known_answer(tmp_path, quick=True)
    finally:
        if ray.is_initialized():
            ray.shutdown()
        runner.forget_ray()
    assert got["search"]["simulations"] <= got["grid"]["simulations"] / 5
    assert got["no_worse"], got  # the winner, on the grid's instances, within (or below) the optimum's interval
    sel = json.loads((tmp_path / "search" / "selection.json").read_text())
    assert sel["first_replication"] == 3 and sel["winner"]["n"] >= 4
    trials = json.loads((tmp_path / "search" / "search" / "trials.json").read_text())
    assert [t["number"] for t in trials] == list(range(6))
    rows = schedlab.load(tmp_path / "search").collect()
    # trials on replications 0..2, the selection only on fresh ones (3..10)
    top = {c["config_id"] for c in sel["candidates"]}
    fresh = rows.filter(pl.col("replication") >= 3)
    assert set(fresh["config_id"].to_list()) <= top
    assert rows.filter(pl.col("replication") < 3).height == 3 * len({t["config_id"] for t in trials})
    assert (tmp_path / "search" / "search" / "convergence.png").stat().st_size > 10_000


def test_a_refused_setting_fails_its_trial_and_mlflow_has_every_trial(tmp_path):
    """Tetris refuses fairness = 0 when it is built: that trial fails (a failure
    record), the search goes on and selects among the others; MLflow holds a
    child run per configuration tagged with its trial number and the best so
    far, and the parent run the selection."""
    import mlflow
    import ray

    from schedlab.platform.execution import runner
    from schedlab.platform.sweep import run_sweep
    from schedlab.search_figure import convergence

    data = {
        "name": "refused",
        "engine": "packing",
        "seed": 2,
        "policies": ["Tetris"],
        "workload": {
            "kind": "packing",
            "slots": 300,
            "uniform_lo": 0.05,
            "uniform_hi": 0.5,
            "service": "geometric",
            "mean_service": 20,
            "intensity": 0.9,
            "intensity_servers": 3,
        },
        "system": {"servers": 3, "capacity": 1.0, "epoch": 1.0},
        "search": {
            "sampler": "grid",
            "metric": "wait_mean",
            "trials": 5,
            "parallel": 3,
            "replications": 2,
            "params": {"fairness": {"choices": [0.0, 0.5, 1.0]}},
            "select": {"top": 2, "replications": 3, "n0": 2, "baseline": {"fairness": 0.5}},
        },
        "outputs": {"dir": str(tmp_path / "out")},
        "tracking": {"uri": f"sqlite:///{tmp_path}/mlflow.db"},
    }
    try:
        report = run_sweep(parse_spec(data, "s.toml"), draw=convergence)
    finally:
        if ray.is_initialized():
            ray.shutdown()
        runner.forget_ray()
    trials = json.loads((tmp_path / "out" / "search" / "trials.json").read_text())
    assert len(trials) == 3  # the grid has 3 settings: trials = min(trials, grid size)
    states = {t["params"]["fairness"]: t["state"] for t in trials}
    assert states == {0.0: "fail", 0.5: "complete", 1.0: "complete"}
    assert report.failures and all("fairness" in f["error"] for f in report.failures)
    sel = report.selection
    assert sel is not None and {c["params"]["fairness"] for c in sel["candidates"]} == {0.5, 1.0}
    assert sel["baseline"]["difference"]["n"] == 3
    assert report.tracking is not None and not report.tracking.failed
    client = mlflow.tracking.MlflowClient(f"sqlite:///{tmp_path}/mlflow.db")
    runs = client.search_runs([client.get_experiment_by_name("refused").experiment_id])
    parent = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    children = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
    assert len(parent) == 1 and parent[0].data.tags["schedlab.selection.winner_trial"] == str(sel["winner"]["trial"])
    by_trial = {r.data.tags["schedlab.search.trial"]: r for r in children}
    complete = [t for t in trials if t["state"] == "complete"]
    assert sorted(by_trial) == sorted(str(t["number"]) for t in complete)  # the failed one has no rows
    best = min(complete, key=lambda t: t["value"])
    last = max(complete, key=lambda t: t["number"])
    assert float(by_trial[str(last["number"])].data.tags["schedlab.search.best_so_far"]) == best["value"]
    artifacts = {a.path for a in client.list_artifacts(parent[0].info.run_id)}
    assert {"selection.json", "convergence.png"} <= artifacts


# ---- on Ray: one core, two cores, killed and resumed -------------------------------------

SEARCH_SPEC = """\
name = "search-det"
engine = "queue"
seed = 9
policies = [{{name = "AgedSRPT", use = "{aged}"}}]

[workload]
kind = "synthetic"
njobs = 2000
shape = 0.5
sigma = 1.0
load = 0.9

[search]
sampler = "tpe"
metric = "mst"
trials = 8
parallel = 2
replications = 3
params = {{alpha = {{low = 0.001, high = 3.0, log = true}}}}
select = {{top = 2, replications = 5, n0 = 3}}

[execution]
num_cpus = {cpus}
task_jobs = 2000

[outputs]
dir = "{out}"

[tracking]
enabled = false
"""


RUN_TIMEOUT = 300.0


@contextlib.contextmanager
def search_process(spec: Path, env: dict[str, str], cwd: Path):
    """`schedlab run SPEC --no-tracking --no-progress` in its own session, killed whole on the way out."""
    out = open(cwd / f"{spec.stem}.out", "w+")
    proc = subprocess.Popen(
        [sys.executable, "-m", "schedlab.cli", "run", str(spec), "--no-tracking", "--no-progress"],
        env=env,
        cwd=cwd,
        stdout=out,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        yield proc
    finally:
        kill_session(proc)
        out.close()


def finish(proc: subprocess.Popen, spec: Path, cwd: Path) -> str:
    try:
        rc = proc.wait(timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"`schedlab run {spec}` timed out:\n{(cwd / f'{spec.stem}.out').read_text()[-4000:]}")
    text = (cwd / f"{spec.stem}.out").read_text()
    assert rc == 0, f"`schedlab run {spec}` exited {rc}:\n{text[-4000:]}"
    return text


def test_search_is_the_same_on_one_core_two_cores_and_after_a_kill(tmp_path):
    import secrets
    import shutil
    import tempfile
    import time

    env_dirs: list[str] = []

    def env() -> dict[str, str]:
        env_dirs.append(tempfile.mkdtemp(prefix="slray-", dir="/tmp"))
        out = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_ADDRESS", "RAY_AUTH_"))}
        out.update(
            RAY_TMPDIR=env_dirs[-1],
            RAY_AUTH_MODE="token",
            RAY_AUTH_TOKEN=secrets.token_hex(32),
            RAY_USAGE_STATS_ENABLED="0",
            PYTHONUNBUFFERED="1",
        )
        return out

    def spec(name: str, cpus: int) -> Path:
        path = tmp_path / f"{name}.toml"
        path.write_text(SEARCH_SPEC.format(aged=AGED, cpus=cpus, out=tmp_path / name))
        return path

    one, two, killed = spec("one", 1), spec("two", 2), spec("killed", 2)
    state = tmp_path / "killed" / "search" / "state.json"
    try:
        with search_process(one, env(), tmp_path) as p1, search_process(killed, env(), tmp_path) as pk:
            # killed mid-search: after its first batch was told, while the next ones run
            deadline = time.monotonic() + RUN_TIMEOUT
            while not state.exists():
                assert pk.poll() is None, (tmp_path / "killed.out").read_text()[-4000:]
                assert time.monotonic() < deadline, "timed out waiting for the first told batch"
                time.sleep(0.05)
            os.killpg(pk.pid, signal.SIGKILL)
            pk.wait(timeout=10)
            assert pk.returncode == -signal.SIGKILL
            kill_session(pk)  # its Ray processes too, before the resume starts its own
            text_one = finish(p1, one, tmp_path)
        told = json.loads(state.read_text())["batches"]
        assert 1 <= told < 4
        with search_process(two, env(), tmp_path) as p2, search_process(killed, env(), tmp_path) as pr:
            finish(p2, two, tmp_path)
            resumed = finish(pr, killed, tmp_path)
    finally:
        for d in env_dirs:
            shutil.rmtree(d, ignore_errors=True)
    assert "winner: trial" in text_one and "selection.json" in text_one

    def rows(name: str) -> pl.DataFrame:
        return schedlab.load(tmp_path / name).collect().drop("sim_seconds").sort("config_id", "replication")

    def trials(name: str) -> list:
        return json.loads((tmp_path / name / "search" / "trials.json").read_text())

    def winner(name: str) -> dict:
        doc = json.loads((tmp_path / name / "selection.json").read_text())
        return {k: doc[k] for k in ("winner", "candidates", "conclusive", "runner_up")}

    ref = rows("one")
    assert ref.select("config_id", "replication").is_duplicated().sum() == 0
    for other in ("two", "killed"):
        assert trials(other) == trials("one")
        assert_frame_equal(rows(other), ref.select(rows(other).columns), check_exact=True)
        assert winner(other) == winner("one")
    # the resumed run computed only what the killed one had not committed
    written = int(resumed.split(" rows written")[0].rsplit(" ", 1)[-1])
    assert written < ref.height, resumed


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
