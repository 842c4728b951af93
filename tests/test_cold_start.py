"""A first run on an empty kernel cache (`schedlab.platform.execution.precompile`,
`schedlab.sim.common.compiling`): simulations run on the reference loop while
a child compiles their kernels, and the rows are those of an all-kernel run.

* a sweep run half on the reference (its kernels "being compiled": the gate,
  this package's own seam) and half on the kernels gives the rows of an
  all-kernel run, for the queue, packing and batch engines;
* the auto rule and the task sizer do not time a task run on the reference
  while its kernels compiled;
* end to end: `schedlab run` on an empty cache (``NUMBA_CACHE_DIR``) says on
  its progress and summary lines that kernels were compiled beside it, gives
  the rows of a run on a warm cache, and leaves no process behind.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import schedlab
from schedlab.platform.execution.precompile import cold_units, unit_of
from schedlab.sim.common import compiling
from tests.processes import checkout_env, kill_session, session_members

SPECS = {
    "queue": {
        "policies": ["FIFO", "PS", "SRPTE", "PSBS"],
        "workload": {"kind": "synthetic", "njobs": 300, "load": [0.7, 0.95]},
    },
    "packing": {
        "policies": ["FIFO-FF", "BF-J/S", "VQS", "Tetris"],
        "system": {"servers": 3, "capacity": 1.0, "epoch": 1.0},
        "workload": {
            "kind": "packing",
            "slots": 300,
            "uniform_lo": 0.05,
            "uniform_hi": 0.3,
            "service": "geometric",
            "mean_service": 20,
            "intensity": [0.8, 0.95],
            "intensity_servers": 3,
        },
    },
    "batch": {
        "policies": ["FCFS", "EASY", "SJF"],
        "system": {"model": "nodes", "nodes": 64, "tasks_per_node": 1},
        "workload": {"kind": "lublin", "njobs": 200, "nodes": 64, "load": [0.6, 0.9]},
    },
}


def _work(engine: str):
    from schedlab.platform.planning.plan import build_plan
    from schedlab.platform.planning.validate import parse_spec

    data = {"name": f"cold-{engine}", "engine": engine, "seed": 4, **SPECS[engine], "replications": {"n": 2}}
    data["tracking"] = {"enabled": False}
    plan = build_plan(parse_spec(data, "spec.toml"))
    return [(inst, list(inst.point.configs)) for inst in plan.instances(range(2))]


def _rows(result):
    rows = []
    for row in result.summary:
        row = dict(row)
        row.pop("sim_seconds")
        rows.append(row)
    return rows


@pytest.mark.parametrize("engine", sorted(SPECS))
def test_half_on_the_reference_half_on_the_kernels_gives_the_all_kernel_rows(engine):
    from schedlab.platform.execution.tasks import run_instances

    work = _work(engine)
    units = sorted({unit_of(engine, p).name for p in SPECS[engine]["policies"]})
    assert units, "every policy here has a kernel"
    kernels = run_instances(engine, work, None, True)
    assert not kernels.failures and kernels.reference_runs == 0
    half = len(work) // 2
    compiling.reset()
    try:
        compiling.begin(units)  # as while a child compiles them (`precompile.Background`)
        first = run_instances(engine, work[:half], None, True)
        for unit in units:
            compiling.finished(unit, 0.0)
        second = run_instances(engine, work[half:], None, True)
    finally:
        compiling.stopped()
        compiling.reset()
    simulations = sum(len(configs) for _, configs in work[:half])
    assert first.reference_runs == simulations and second.reference_runs == 0
    assert not first.failures and not second.failures
    assert _rows(first) + _rows(second) == _rows(kernels)
    mixed = first.jobs + second.jobs
    assert len(mixed) == len(kernels.jobs)
    for (pa, ta), (pb, tb) in zip(mixed, kernels.jobs):
        assert pa == pb and ta.equals(tb)


def test_a_task_run_on_the_reference_while_kernels_compile_is_not_timed():
    from schedlab.platform.execution.backends import Auto
    from schedlab.platform.execution.executor import Task
    from schedlab.platform.execution.tasks import TaskResult

    class Done:
        """An executor whose tasks finish at once with a given result (this package's own seam)."""

        name, in_flight, cold = "in-process", 0, False

        def __init__(self):
            self.results = []

        def submit(self, task):
            self.results.append(task)

        def wait(self, timeout):
            out = [(t, self.result) for t in self.results]
            self.results = []
            return out

    inner = Done()
    auto = Auto(lambda tier: inner, allow_ray=False, cpus=2, why="auto")
    auto.begin_round(10_000_000)
    slow = TaskResult([], [], [], 9.0, stages={"engine": 9.0}, job_runs=1000, reference_runs=6)
    inner.result = slow
    auto.submit(Task([], 1000))
    auto.wait(0.0)
    assert auto.rate is None and auto.tier == "in-process"  # 9 ms per job-run on the reference: not timed
    inner.result = TaskResult([], [], [], 0.001, stages={"engine": 0.001}, job_runs=1000)
    auto.submit(Task([], 1000))
    auto.wait(0.0)
    assert auto.rate == pytest.approx(1e-6)


@pytest.fixture(scope="module")
def basic_cache(tmp_path_factory):
    """A kernel cache holding the queue engine's _basic kernel (FIFO, PS), compiled by the child."""
    cache = tmp_path_factory.mktemp("warm")
    env = checkout_env({**os.environ, "NUMBA_CACHE_DIR": str(cache)})
    child = [sys.executable, "-m", "schedlab.platform.execution.precompile", "queue", "FIFO"]
    out = subprocess.run(child, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0 and out.stdout.startswith("compiled queue._basic "), out.stderr
    return cache


def _cold(cache) -> str:
    code = "from schedlab.platform.execution.precompile import cold_units; "
    code += "print(sorted(cold_units('queue', [('FIFO', {}), ('PS', {}), ('PSBS', {})])))"
    env = checkout_env({**os.environ, "NUMBA_CACHE_DIR": str(cache)})
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_cold_units_are_those_the_cache_lacks(tmp_path, basic_cache):
    assert _cold(tmp_path / "empty") == "['queue._basic', 'queue._fsp']"
    assert _cold(basic_cache) == "['queue._fsp']"
    assert cold_units("queue", [("FIFO", {"x": 1})]) == {}  # a policy with params runs on the reference


SWEEP = """\
name = "cold"
engine = "queue"
seed = 2
policies = ["FIFO", "PS"]

[workload]
kind = "synthetic"
njobs = 2000
load = [0.8, 0.9]
shape = [0.5, 1.0]

[replications]
n = 3

[tracking]
enabled = false
"""


def _sweep(folder, cache):
    """`schedlab run` in its own session on kernel cache ``cache``: (output, rows, processes left)."""
    env = checkout_env({**os.environ, "NUMBA_CACHE_DIR": str(cache), "SCHEDLAB_PROGRESS_SECONDS": "0.05"})
    env.pop("RAY_ADDRESS", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "schedlab.cli", "run", "spec.toml", "--fresh"],
        cwd=folder,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=600)
        left = session_members(proc.pid)
    finally:
        kill_session(proc)
    assert proc.returncode == 0, err
    rows = schedlab.load(folder / "results" / "cold").collect()
    return out + err, rows.drop("sim_seconds").sort("config_id", "replication"), left


def test_a_sweep_on_an_empty_cache_says_so_and_gives_the_warm_rows(tmp_path, basic_cache):
    (tmp_path / "spec.toml").write_text(SWEEP)
    text, cold, left = _sweep(tmp_path, tmp_path / "empty")
    assert not left, "the compile child outlived the sweep"
    assert "compiling kernels beside the sweep (the reference loop runs meanwhile)" in text
    summary = next(line for line in text.splitlines() if " rows written" in line)
    assert "kernels: " in summary and "simulations ran on the reference loop meanwhile" in summary
    text, hot, left = _sweep(tmp_path, basic_cache)
    summary = next(line for line in text.splitlines() if " rows written" in line)
    assert "kernels:" not in summary and "compiling kernels" not in text  # every kernel loaded from the cache
    assert not left
    assert cold.height == hot.height == 2 * 2 * 2 * 3
    assert cold.equals(hot)
