"""A buggy policy fails its own configuration, never the sweep (issue 26).

* the engines stop what ``schedlab check-policy`` detects with the same
  message: a clock that stops (a queue policy's ``next_event_time()`` in the
  past or at the current instant, forever), a stall with work present (queue,
  batch, DFRS; packing: jobs still queued on an empty cluster when nothing
  is left to arrive), a livelock of pauses (DFRS), a capacity breach (every
  engine);
* a wall-clock budget per simulation (``[execution] sim_budget_seconds``,
  ``schedlab simulate --budget``) turns what no rule can tell from a slow run
  into a failure, and a policy's ``except Exception`` cannot swallow it;
* ``schedlab run`` with such policies beside built-ins finishes, exits 1,
  keeps every built-in row (the same Ray tasks as the failing ones), records
  the failures with the user's message, and its progress written to a file
  has heartbeat lines while a task runs and none finishes;
* ``schedlab simulate`` with a failing user policy: one line, the user's
  frames only, exit 1 -- and never a spin.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import schedlab
from schedlab.api import batch, dfrs, queue
from schedlab.checks import check_policy
from schedlab.engines import get_engine
from schedlab.errors import PolicyError
from schedlab.platform.execution.budget import DEFAULT_SIM_BUDGET_SECONDS, BudgetExceeded, sim_budget
from schedlab.platform.planning.spec import ExecutionSpec
from tests.packing_policies import FirstFit

SCHEDLAB = [sys.executable, "-m", "schedlab.cli"]
#: check-policy search size for the message comparisons (each finds its bug in a few workloads).
EXAMPLES = 40
#: A `simulate` that the guards stop must end well within this (start-up ~2 s on a busy machine).
SIMULATE_BOUND = 60.0
#: The sweep's [execution] sim_budget_seconds (see the sweep test's docstring).
BUDGET = 8.0

USER_POLICIES = '''\
"""Broken queue policies, as a user's file."""
from collections import deque

from schedlab.api import batch, dfrs, queue


class PastFIFO(queue.Policy):
    """FIFO whose next_event_time() answers a time in the past while jobs wait."""

    def __init__(self, server):
        super().__init__(server)
        self.q = deque()

    def arrive(self, job, estimate, weight):
        self.q.append(job)
        if len(self.q) == 1:
            self.server.serve_job(job)

    def depart(self, job):
        self.q.popleft()
        self.server.serve_job(self.q[0] if self.q else None)

    def next_event_time(self):
        return self.server.now - 1.0 if self.q else queue.INF

    def on_event(self):
        pass


class Crawl(PastFIFO):
    """Internal events 1e-9 apart, forever: the clock moves, nothing ends."""

    def next_event_time(self):
        return self.server.now + 1e-9

    def on_event(self):
        try:
            pass
        except Exception:  # a policy that swallows errors cannot swallow the budget
            pass


class Crash(PastFIFO):
    def next_event_time(self):
        return queue.INF

    def depart(self, job):
        raise ZeroDivisionError("my own bug")
'''


class QPast(queue.Policy):
    """In-process twin of the user file's PastFIFO (check-policy takes a class)."""

    def __init__(self, server):
        super().__init__(server)
        self.q = []

    def arrive(self, job, estimate, weight):
        self.q.append(job)
        if len(self.q) == 1:
            self.server.serve_job(job)

    def depart(self, job):
        self.q.pop(0)
        self.server.serve_job(self.q[0] if self.q else None)

    def next_event_time(self):
        return self.server.now - 1.0 if self.q else queue.INF

    def on_event(self):
        pass


class BNarrowOnly(batch.Policy):
    """FCFS that never starts a job wider than one unit: wide jobs wait forever."""

    def __init__(self, machine):
        super().__init__(machine)
        self.queue = []

    def arrive(self, job):
        self.queue.append(job)

    def complete(self, job):
        pass

    def schedule(self, now):
        free, out = self.machine.free, []
        while self.queue and self.machine.need[self.queue[0]] == 1 and self.machine.need[self.queue[0]] <= free:
            job = self.queue.pop(0)
            free -= self.machine.need[job]
            out.append(job)
        return out


class PNoLarge(FirstFit):
    """First fit in arrival order that never places a job larger than one half."""

    def eligible(self, job):
        return self.cluster.demand(job).max() <= 0.5


class DChurn(dfrs.Policy):
    """Greedy placement, and every period (50 s, under the 300 s penalty) each
    running job paused and resumed at once: no job ever leaves its penalty."""

    opt = "MIN"
    period = 50.0

    def place(self, state, job):
        nodes = dfrs.greedy_place(state.free_mem, state.load, state.tasks[job], state.mem[job], state.cpu[job])
        if nodes is not None:
            state.apply(places={job: nodes})

    def on_arrival(self, state, job):
        self.place(state, job)

    def on_completion(self, state):
        for job in sorted(state.pending):
            self.place(state, job)

    def on_period(self, state):
        running = sorted(state.running)
        if running:
            where = {j: state.where[j].copy() for j in running}
            state.apply(pauses=running)
            state.apply(places=where)


def _queue_table(n=50, seed=3):
    from schedlab.workloads.synthetic import queue_workload

    return queue_workload(np.random.default_rng(seed), njobs=n, shape=1.0)


# ---- the engines' guards: check-policy's message, in every run ------------------------------------------


def _engine_message(engine: str, cls, workload) -> str:
    """The engine's own refusal of ``cls`` on check-policy's minimal workload (a direct run)."""
    from schedlab.engines.batch.sim.engine import simulate_batch
    from schedlab.engines.dfrs.sim import simulate_dfrs
    from schedlab.engines.packing.sim.engine import simulate_packing
    from schedlab.engines.queue.sim.engine import simulate

    cols, system = workload.columns, workload.system
    with pytest.raises(PolicyError) as err:
        if engine == "queue":
            simulate(*(np.asarray(cols[c], dtype=float) for c in ("submit", "size", "estimate", "weight")), cls)
        elif engine == "batch":
            simulate_batch(cols["submit"], cols["runtime"], cols["requested"], cols["procs"], system["procs"], cls)
        elif engine == "packing":
            names = ["demand"] if "demand" in cols else ["cpu", "mem"]
            demand = np.column_stack([np.asarray(cols[c], dtype=float) for c in names])
            simulate_packing(
                cols["submit"],
                cols["duration"],
                demand,
                np.full((system["servers"], len(names)), system["capacity"]),
                cls,
                epoch=system["epoch"] or None,
                group=cols.get("group"),
            )
        else:
            simulate_dfrs(
                cols["submit"],
                cols["runtime"],
                cols["procs"],
                cols["cpu_need"],
                cols["memory"],
                system["nodes"],
                cls(),
                penalty=system["penalty"],
            )
    return str(err.value)


@pytest.mark.parametrize(
    "engine,cls,fragment",
    [
        ("queue", QPast, "internal events at this instant with no job arriving or leaving"),
        ("batch", BNarrowOnly, "never starts"),
        ("dfrs", DChurn, "a livelock of jobs kept paused"),
        ("packing", PNoLarge, "each of them fits an empty server, so the policy never places them"),
    ],
    ids=["queue-past-time", "batch-stall", "dfrs-livelock", "packing-stall"],
)
def test_engines_refuse_what_check_policy_finds_with_its_message(engine, cls, fragment):
    report = check_policy(engine, cls, examples=EXAMPLES, seed=0)
    assert not report.ok and report.failure.invariant.name == "completes", report.render()
    message = _engine_message(engine, cls, report.failure.workload)
    assert fragment in message
    assert report.failure.message == message  # the very text a sweep records


def test_the_queue_guard_names_a_past_time_and_the_engine_path_prefixes_the_policy():
    jobs = _queue_table()
    with pytest.raises(PolicyError, match=r"^policy 'QPast': the policy never finishes: t=.*\(in the past\)\)$"):
        get_engine("queue").run(jobs, QPast)


def test_builtins_on_the_reference_loop_are_untouched_by_the_guards():
    """The guards never fire on a correct policy, however many events share
    an instant: 300 jobs submitted at once with equal estimates make PSBS
    complete 300 virtual jobs at one instant."""
    n = 300
    zeros, ones = np.zeros(n), np.ones(n)
    for name in ("PSBS", "LAS", "FSPE+PS", "SRPTE+PS"):
        ref = get_engine("queue").run(
            pl.DataFrame({"job_id": np.arange(n), "submit": zeros, "size": ones, "estimate": ones, "weight": ones}),
            name,
            path="reference",
        )
        assert ref.summary["n_jobs"] == n


# ---- the wall-clock budget ------------------------------------------------------------------------------


def test_the_budget_stops_a_loop_and_cannot_be_swallowed():
    def stubborn():
        while True:
            try:
                sum(range(1000))
            except Exception:  # noqa: BLE001 - what a careless policy does
                pass

    started = time.monotonic()
    with pytest.raises(BudgetExceeded, match=r"budget of 0.3 s .*\(--here\)"):
        with sim_budget(0.3, "--here"):
            stubborn()
    assert time.monotonic() - started < 5.0
    # the alarm is disarmed and the previous handler back once the block is left
    import signal

    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert signal.getsignal(signal.SIGALRM) in (signal.SIG_DFL, None)
    with sim_budget(5.0):
        pass  # a quick block leaves nothing armed either
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    # a timer armed before (someone else's) is given back, less the time spent inside
    signal.setitimer(signal.ITIMER_REAL, 100.0)
    try:
        with sim_budget(5.0):
            time.sleep(0.2)
        left, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 99.0 < left < 99.9
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0.0)


def test_the_spec_default_is_the_budget_default_and_bad_values_name_the_field():
    from schedlab.errors import UserError
    from schedlab.platform.planning.validate import parse_spec

    assert ExecutionSpec().sim_budget_seconds == DEFAULT_SIM_BUDGET_SECONDS
    base = {"name": "b", "engine": "queue", "policies": ["PS"]}
    assert parse_spec({**base, "execution": {"sim_budget_seconds": 2.5}}, "b.toml").execution.sim_budget_seconds == 2.5
    for field in ("sim_budget_seconds", "connect_timeout_seconds"):
        with pytest.raises(UserError, match=rf"b\.toml: execution\.{field}"):
            parse_spec({**base, "execution": {field: 0}}, "b.toml")


# ---- `schedlab simulate` -----------------------------------------------------------------------------------


def _simulate(tmp_path: Path, policy: str, *extra: str) -> tuple[subprocess.CompletedProcess, float]:
    (tmp_path / "mine.py").write_text(USER_POLICIES)
    env = {**os.environ, "PYTHONPATH": str(Path(schedlab.__file__).parent.parent)}
    started = time.monotonic()
    res = subprocess.run(
        [*SCHEDLAB, "simulate", "--policy", f"mine.py:{policy}", "--njobs", "200", *extra],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=SIMULATE_BOUND * 2,
    )
    return res, time.monotonic() - started


def test_simulate_stops_a_past_time_policy_with_one_line(tmp_path):
    res, took = _simulate(tmp_path, "PastFIFO")
    assert res.returncode == 1 and took < SIMULATE_BOUND
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr  # the engine's refusal says it all: no traceback
    assert lines[0].startswith("schedlab: the simulation failed: PolicyStuck: policy 'PastFIFO': the policy never")
    assert "(in the past)" in lines[0]


def test_simulate_shows_only_the_users_frames(tmp_path):
    res, _ = _simulate(tmp_path, "Crash")
    assert res.returncode == 1
    err = res.stderr
    assert "schedlab: the simulation failed: ZeroDivisionError: my own bug" in err
    assert f'File "{tmp_path / "mine.py"}"' in err and 'raise ZeroDivisionError("my own bug")' in err
    assert "schedlab/" not in err.replace(str(tmp_path), "")  # no frame of schedlab's, no click, no engine
    assert len(err.strip().splitlines()) <= 7, err


def test_simulate_budget_ends_a_crawling_policy(tmp_path):
    res, took = _simulate(tmp_path, "Crawl", "--budget", "1.5")
    assert res.returncode == 1 and took < SIMULATE_BOUND
    assert "BudgetExceeded: the simulation ran past its budget of 1.5 s of wall-clock time (--budget)" in res.stderr
    assert "schedlab/" not in res.stderr.replace(str(tmp_path), "")  # the user's frames at most, never ours


# ---- `schedlab run`: the failures are recorded, every other row lands ----------------------------------


def test_run_keeps_builtin_rows_records_failures_and_beats_while_waiting(tmp_path):
    """Built-in FIFO and PS share their Ray task with three broken user
    policies (``task_jobs`` packs both instances, every configuration, into
    one task). The crawling one runs its budget per simulation: the progress
    written to a file keeps coming meanwhile, with simulations running. (The
    budget also covers a built-in's first call in a worker, which loads its
    compiled kernel: seconds on a loaded machine, hence not 1 s here.)"""
    (tmp_path / "mine.py").write_text(USER_POLICIES)
    spec = tmp_path / "broken.toml"
    spec.write_text(
        textwrap.dedent(f"""\
        name = "broken"
        engine = "queue"
        seed = 5
        policies = [
            "FIFO",
            "PS",
            {{name = "Past", use = "mine.py:PastFIFO"}},
            {{name = "Crash", use = "mine.py:Crash"}},
            {{name = "Crawl", use = "mine.py:Crawl"}},
        ]

        [workload]
        kind = "synthetic"
        njobs = 300
        shape = 1.0

        [replications]
        n = 2

        [outputs]
        dir = "{tmp_path / "out"}"

        [tracking]
        enabled = false

        [execution]
        num_cpus = 2
        task_jobs = 100000
        sim_budget_seconds = {BUDGET}
        """)
    )
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("RAY_ADDRESS")},
        "PYTHONPATH": str(Path(schedlab.__file__).parent.parent),
        "SCHEDLAB_PROGRESS_SECONDS": "1.5",
    }
    log = tmp_path / "progress.log"
    with open(log, "w") as fh:
        res = subprocess.run(
            [*SCHEDLAB, "run", str(spec)], cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=fh, text=True
        )
    err = log.read_text()
    assert res.returncode == 1, err
    rows = schedlab.load(tmp_path / "out").collect()
    assert sorted(rows["policy"].unique()) == ["FIFO", "PS"] and rows.height == 2 * 2, err
    failures = schedlab.load(tmp_path / "out", "failures").collect()
    by = {p: failures.filter(pl.col("policy") == p) for p in ("Past", "Crash", "Crawl")}
    assert failures.height == 6 and all(f.height == 2 for f in by.values())
    assert by["Past"]["error"].str.contains("the policy never finishes: t=").all()
    assert by["Past"]["error"].str.contains(r"\(in the past\)").all()
    assert (by["Crash"]["error"] == "ZeroDivisionError: my own bug").all()
    assert by["Crawl"]["error"].str.contains(f"ran past its budget of {BUDGET:g} s").all()
    assert "6 simulations failed" in err
    # Off a terminal: lines while the crawling simulations ran and no task came back.
    beats = [line for line in err.splitlines() if line.startswith("broken: round 1,") and " running," in line]
    busy = [line for line in beats if " 0 running," not in line]
    assert len(busy) >= 3, err
