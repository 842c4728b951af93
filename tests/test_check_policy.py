"""`schedlab check-policy`: every built-in passes; for each invariant of each
engine a deliberately broken policy is caught, with that invariant named and
a shrunk (minimal) workload; the CLI's pass / fail / bad-input behaviour."""

from __future__ import annotations

import importlib
import sys
from collections import deque

import numpy as np
import pytest
from click.testing import CliRunner

from schedlab.api import batch, dfrs, queue
from schedlab.checks import check_policy
from schedlab.checks.common import Violation
from schedlab.cli import main
from schedlab.engines import ENGINES
from tests.packing_policies import FirstFit as PFirstFit

#: Workloads per built-in: enough to meet ties, contention and wide jobs,
#: small enough for the whole file to take well under a minute.
BUILTIN_EXAMPLES = {"queue": 80, "packing": 80, "batch": 150, "dfrs": 25}
#: Workloads per broken policy (each fails within the first few).
BROKEN_EXAMPLES = 100

#: A representative subset of the 146 DFRS names: each submission policy,
#: with and without '*', /per, the migration limits and /stretch-per, both
#: allocations.
DFRS_SUBSET = [
    "Greedy*/OPT=MIN",
    "GreedyP*/OPT=AVG",
    "GreedyPM*/OPT=MIN",
    "MCB8*/OPT=AVG",
    "GreedyPM*/per/OPT=AVG",
    "Greedy/per/OPT=MIN",
    "MCB8/per/OPT=AVG",
    "/per/OPT=MIN",
    "GreedyP*/per/OPT=MIN/MINVT=600",
    "MCB8*/per/OPT=MIN/MINFT=300",
    "GreedyPM*/stretch-per/OPT=MAX",
    "MCB8*/stretch-per/OPT=AVG/MINVT=300",
]

BUILTINS = (
    [("queue", n) for n in ENGINES["queue"].policies]
    + [("packing", n) for n in ENGINES["packing"].policies]
    + [("batch", n) for n in ENGINES["batch"].policies]
    + [("dfrs", n) for n in DFRS_SUBSET]
)


@pytest.mark.parametrize("engine,name", BUILTINS, ids=[f"{e}:{n}" for e, n in BUILTINS])
def test_builtin_policies_pass(engine, name):
    report = check_policy(engine, name, examples=BUILTIN_EXAMPLES[engine], seed=1)
    assert report.ok, report.render()
    assert report.workloads == BUILTIN_EXAMPLES[engine]
    assert report.render() == f"ok ({BUILTIN_EXAMPLES[engine]} workloads)"


def test_every_dfrs_subset_name_exists():
    assert set(DFRS_SUBSET) <= set(ENGINES["dfrs"].policies)


def test_module_references_and_params():
    """``module:Name`` resolves like a file reference; params reach the
    policy (a /per period) and are named in the report."""
    report = check_policy("queue", "schedlab.engines.queue.policies.basic:FIFO", examples=10)
    assert report.ok and report.policy == "schedlab.engines.queue.policies.basic:FIFO"
    per = check_policy("dfrs", "GreedyPM*/per/OPT=MIN", {"period": 120.0}, examples=10)
    assert per.ok and per.params == {"period": 120.0}


# ---- queue: broken policies ----------------------------------------------------------------------------------


class QFifo(queue.Policy):
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


class QForgetful(QFifo):
    """Serves nothing after the first departure."""

    def depart(self, job):
        self.q.popleft()
        self.server.serve_job(None)


class QSpinner(QFifo):
    """Announces an internal event at the current instant, forever."""

    def next_event_time(self):
        return self.server.now

    def on_event(self):
        pass


class QLazy(QFifo):
    """Waits one time unit after a job arrives at an empty queue (idles)."""

    def __init__(self, server):
        super().__init__(server)
        self.wake = queue.INF

    def arrive(self, job, estimate, weight):
        self.q.append(job)
        if len(self.q) == 1:
            self.wake = self.server.now + 1.0

    def next_event_time(self):
        return self.wake

    def on_event(self):
        self.wake = queue.INF
        self.server.serve_job(self.q[0])


class QLazyHonest(QLazy):
    work_conserving = False


class QTurbo(QFifo):
    """Halves the served pool's weight behind the engine's back: the job gets
    twice the server."""

    def arrive(self, job, estimate, weight):
        super().arrive(job, estimate, weight)
        self.server.pool_of(self.q[0]).weight *= 0.5


class QAlternating(QFifo):
    """FIFO on odd-numbered instances, LIFO on even ones (class state)."""

    instances = 0

    def __init__(self, server):
        super().__init__(server)
        QAlternating.instances += 1
        self.lifo = QAlternating.instances % 2 == 0

    def arrive(self, job, estimate, weight):
        if self.lifo:
            self.q.appendleft(job)
            self.server.serve_job(job)
        else:
            super().arrive(job, estimate, weight)


class QPeeker(QFifo):
    def arrive(self, job, estimate, weight):
        self.last_size = self.server._size[job]
        super().arrive(job, estimate, weight)


class QSwallower(QFifo):
    """Reads the true size and swallows the guard's error."""

    def arrive(self, job, estimate, weight):
        try:
            self.last_size = self.server._size[job]
        except Exception:  # noqa: BLE001
            pass
        super().arrive(job, estimate, weight)


class QExactPeeker(QPeeker):
    exact_size = True


class QCrasher(QFifo):
    def depart(self, job):
        raise KeyError(job)


class QBadWeight(QFifo):
    def arrive(self, job, estimate, weight):
        self.server.place(job, self.server.pool_of(job), -1.0)


# ---- packing: broken policies --------------------------------------------------------------------------------


class PAllOnZero(PFirstFit):
    def schedule(self):
        out = [(j, 0) for j in self.queue]
        self.queue = []
        return out


class PTwice(PFirstFit):
    def schedule(self):
        out = super().schedule()
        return out + out[:1]


class PPicky(PFirstFit):
    def eligible(self, job):
        return self.cluster.demand(job)[0] <= 0.5


class PAlternating(PFirstFit):
    instances = 0

    def __init__(self, cluster):
        super().__init__(cluster)
        PAlternating.instances += 1
        self.reverse = PAlternating.instances % 2 == 0

    def server_order(self):
        order = range(self.cluster.servers)
        return reversed(order) if self.reverse else order


class PFramePeeker(PFirstFit):
    """Walks up to the engine's frame and reads its duration list."""

    def schedule(self):
        durations = sys._getframe(1).f_locals["dur"]
        self.longest = max(durations[j] for j in self.queue) if self.queue else 0.0
        return super().schedule()


class PCrasher(PFirstFit):
    def depart(self, job, server):
        raise RuntimeError("bookkeeping bug")


# ---- batch: broken policies ----------------------------------------------------------------------------------


class BFcfs(batch.Policy):
    def __init__(self, machine):
        super().__init__(machine)
        self.queue = []

    def arrive(self, job):
        self.queue.append(job)

    def complete(self, job):
        pass

    def startable(self, job):
        return True

    def schedule(self, now):
        free, out = self.machine.free, []
        while self.queue and self.startable(self.queue[0]) and self.machine.need[self.queue[0]] <= free:
            job = self.queue.pop(0)
            free -= self.machine.need[job]
            out.append(job)
        return out


class BStartAll(BFcfs):
    def schedule(self, now):
        out, self.queue = self.queue, []
        return out


class BPrescient(BFcfs):
    """Also starts the next job in the table, whether submitted or not."""

    def __init__(self, machine):
        super().__init__(machine)
        self.seen = -1

    def arrive(self, job):
        super().arrive(job)
        self.seen = max(self.seen, job)

    def schedule(self, now):
        out = super().schedule(now)
        nxt = self.seen + 1
        if nxt < len(self.machine.submit) and self.machine.need[nxt] <= self.machine.free - sum(
            self.machine.need[j] for j in out
        ):
            out.append(nxt)
            self.seen = nxt
        return out


class BDouble(BFcfs):
    def schedule(self, now):
        out = super().schedule(now)
        return out + out[:1]


class BNarrowOnly(BFcfs):
    def startable(self, job):
        return self.machine.need[job] == 1


class BAlternating(BFcfs):
    instances = 0

    def __init__(self, machine):
        super().__init__(machine)
        BAlternating.instances += 1
        self.lifo = BAlternating.instances % 2 == 0

    def arrive(self, job):
        if self.lifo:
            self.queue.insert(0, job)
        else:
            self.queue.append(job)


class BFramePeeker(BFcfs):
    def schedule(self, now):
        runtimes = sys._getframe(1).f_locals["self"].run_l  # the engine loop: BatchRun.step
        self.shortest = min(runtimes[j] for j in self.queue) if self.queue else 0.0
        return super().schedule(now)


class BCrasher(BFcfs):
    def complete(self, job):
        raise ZeroDivisionError("oops")


# ---- dfrs: broken policies -----------------------------------------------------------------------------------


class DGreedy(dfrs.Policy):
    """Greedy on arrival, the pending jobs again at completions."""

    opt = "MIN"

    def place(self, state, job):
        nodes = dfrs.greedy_place(state.free_mem, state.load, state.tasks[job], state.mem[job], state.cpu[job])
        if nodes is not None:
            state.apply(places={job: nodes})

    def on_arrival(self, state, job):
        self.place(state, job)

    def on_completion(self, state):
        for job in sorted(state.pending):
            self.place(state, job)


class DNodeZero(DGreedy):
    def place(self, state, job):
        state.apply(places={job: [0] * state.tasks[job]})


class DPauseDone(DGreedy):
    """Pauses a job that has already finished."""

    def on_completion(self, state):
        done = [j for j in range(state.n) if state.status[j] == 4]
        state.apply(pauses=done[:1])
        super().on_completion(state)


class DOverYield(DGreedy):
    """Its own allocation gives every running job yield 2."""

    def allocate(self, state, next_period):
        for j in state.running:
            state.y[j] = 2.0
        return 0


class DSerialOnly(DGreedy):
    def place(self, state, job):
        if state.tasks[job] == 1:
            super().place(state, job)


class DChurn(DGreedy):
    """Every period, pauses every running job and resumes it at once: each
    resume costs the penalty again, so with period < penalty no job ever runs
    past the first periodic instant (50 s: before any job of the shortest
    common runtime, 100 s, is done)."""

    period = 50.0

    def on_period(self, state):
        running = sorted(state.running)
        if running:
            where = {j: state.where[j].copy() for j in running}
            state.apply(pauses=running)
            state.apply(places=where)


class DAlternating(DGreedy):
    """The engine's allocation on odd-numbered instances, every yield halved
    on even ones (class state): a legal allocation, but not the same twice."""

    instances = 0

    def __init__(self):
        DAlternating.instances += 1
        self.slow = DAlternating.instances % 2 == 0

    def allocate(self, state, next_period):
        from schedlab.engines.dfrs.sim import allocate

        failures = allocate(state, self.opt)
        if self.slow:
            for j in state.running:
                state.y[j] *= 0.5
        return failures


class DPeeker(DGreedy):
    def on_arrival(self, state, job):
        self.expected = state.processing[job]
        super().on_arrival(state, job)


class DCrasher(DGreedy):
    def on_completion(self, state):
        raise IndexError("no such node")


# (engine, policy, invariant it breaks, jobs in the minimal workload: the
# number, or the numbers a minimal workload can have when there are several)
BROKEN = [
    ("queue", QForgetful, "completes", 2),
    ("queue", QSpinner, "completes", 1),
    ("queue", QLazy, "work-conserving", 1),
    ("queue", QTurbo, "no-early-completion", 1),
    ("queue", QAlternating, "deterministic", 2),
    ("queue", QPeeker, "no-size-access", 1),
    ("queue", QSwallower, "no-size-access", 1),
    ("queue", QCrasher, "runs", 1),
    ("queue", QBadWeight, "runs", 1),
    ("packing", PAllOnZero, "capacity", 2),
    ("packing", PTwice, "placements-queued", 1),
    ("packing", PPicky, "completes", 1),
    ("packing", PAlternating, "deterministic", 1),
    ("packing", PFramePeeker, "no-duration-access", 1),
    ("packing", PCrasher, "runs", 1),
    ("batch", BStartAll, "capacity", 2),
    ("batch", BPrescient, "start-after-submit", 2),
    ("batch", BDouble, "starts-queued", 1),
    ("batch", BNarrowOnly, "completes", 1),
    ("batch", BAlternating, "deterministic", 2),
    ("batch", BFramePeeker, "no-runtime-access", 1),
    ("batch", BCrasher, "runs", 1),
    ("dfrs", DNodeZero, "memory", (1, 2, 3)),  # one wide job, or two or three narrow ones stacked: all minimal
    ("dfrs", DPauseDone, "consistent", 1),
    ("dfrs", DOverYield, "consistent", 1),
    ("dfrs", DSerialOnly, "completes", 1),
    ("dfrs", DChurn, "completes", 1),
    ("dfrs", DAlternating, "deterministic", 1),
    ("dfrs", DPeeker, "no-processing-access", 1),
    ("dfrs", DCrasher, "runs", 1),
]


@pytest.mark.parametrize("engine,cls,invariant,jobs", BROKEN, ids=[f"{e}:{c.__name__}" for e, c, _, _ in BROKEN])
def test_broken_policy_is_caught_with_a_minimal_workload(engine, cls, invariant, jobs):
    report = check_policy(engine, cls, examples=BROKEN_EXAMPLES, seed=0)
    assert not report.ok
    f = report.failure
    assert f.invariant.name == invariant, report.render()
    assert f.workload.n in (jobs if isinstance(jobs, tuple) else (jobs,)), report.render()
    # Minimal: without any one of its jobs the workload no longer breaks this
    # invariant (workloads have at least one job).
    check = importlib.import_module(f"schedlab.engines.{engine}.checks").Check(cls, {})
    for k in range(f.workload.n if f.workload.n > 1 else 0):
        try:
            check.check(f.workload.without(k))
        except Violation as v:
            assert v.invariant != invariant, f"job {k} is not needed:\n{report.render()}"
    text = report.render()
    assert f"invariant {invariant} violated" in text
    header = "  ".join(f.workload.columns)
    assert f"smallest failing workload: {f.workload.n} job" in text and header in text


def test_minimal_workloads_are_the_simplest_values():
    """Shrinking goes all the way: the idle FIFO fails on one job of size 1
    at t=0, the over-committing packer on two jobs that together exceed one
    server, the stalled DFRS policy on one parallel job."""
    lazy = check_policy("queue", QLazy, examples=50).failure.workload
    assert lazy.columns["submit"] == [0.0] and lazy.columns["size"] == [1.0]
    assert "should end at t=1.0" in check_policy("queue", QLazy, examples=50).failure.message
    packer = check_policy("packing", PAllOnZero, examples=50).failure.workload
    assert packer.system["servers"] == 1 and sum(packer.columns["demand"]) > 1.0
    serial = check_policy("dfrs", DSerialOnly, examples=50).failure.workload
    assert serial.n == 1 and serial.columns["procs"][0] > 1


def test_declared_exemptions_are_honoured():
    """An exact-size policy may read sizes; a policy declaring
    work_conserving = False may idle -- each is told what was not checked."""
    exact = check_policy("queue", QExactPeeker, examples=30)
    assert exact.ok and "no-size-access" in exact.skipped and "no-size-access" not in exact.checked
    honest = check_policy("queue", QLazyHonest, examples=30)
    assert honest.ok and "work-conserving" in honest.skipped


def test_the_search_is_reproducible():
    a = check_policy("batch", BAlternating, examples=60, seed=3)
    b = check_policy("batch", BAlternating, examples=60, seed=3)
    assert a.render() == b.render()
    assert "seed 3" in a.render()


def test_the_search_does_not_depend_on_the_modules_loaded(tmp_path, monkeypatch):
    """Hypothesis can draw constants found in loaded local modules' source;
    a check does not, so importing new code does not change its workloads."""

    class Recorder(PFirstFit):
        seen: list = []

        def __init__(self, cluster):
            super().__init__(cluster)
            Recorder.seen.append(cluster.demand(slice(None)).tolist())

    def searched():
        Recorder.seen = []
        assert check_policy("packing", Recorder, examples=100, seed=0).ok
        return Recorder.seen

    before = searched()
    # A few floats in every generated range (hypothesis ignores modules with
    # very many constants).
    (tmp_path / "cp_constants_galore.py").write_text("FLOATS = [0.0137, 0.2093, 0.4411, 0.6673, 0.8819]\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module("cp_constants_galore")
    assert searched() == before


def test_a_failure_that_does_not_repeat_is_reported_as_nondeterminism():
    """A policy that crashes on every third instance fails a workload once
    and passes it when replayed: the report names determinism, not the crash."""

    class Moody(QFifo):
        made = 0

        def __init__(self, server):
            super().__init__(server)
            Moody.made += 1
            if Moody.made % 3 == 0:
                raise RuntimeError("bad mood")

    for seed in range(3):
        report = check_policy("queue", Moody, examples=50, seed=seed)
        assert report.failure.invariant.name == "deterministic", report.render()
        assert report.failure.message.startswith("this workload violated runs on one run (RuntimeError: bad mood")
        assert report.failure.message.endswith("and passed on another")
        assert report.failure.workload.n == 1


# ---- the guard and the handles -------------------------------------------------------------------------------


def test_guard_allows_the_engine_and_refuses_everyone_else():
    from schedlab.checks.guard import Hidden, HiddenTruthError

    g = Hidden([1.0, 2.0], __name__, "secrets")
    assert g[1] == 2.0 and list(g) == [1.0, 2.0] and len(g) == 2  # this module is the owner here
    other = Hidden([1.0, 2.0], "schedlab.engines.queue.sim.engine", "secrets")
    assert len(other) == 2
    for read in (lambda: other[0], lambda: list(other), lambda: np.asarray(other), lambda: other.count(1.0)):
        with pytest.raises(HiddenTruthError, match="secrets"):
            read()
    assert len(other.reads) == 4 and all("test_check_policy.py" in r for r in other.reads)


def test_normal_runs_have_no_guard():
    from schedlab.engines.queue.sim.engine import Server, simulate

    seen = {}

    class Spy(QFifo):
        def __init__(self, server: Server):
            super().__init__(server)
            seen["sizes"] = server._size

    simulate(np.zeros(2), np.ones(2), np.ones(2), np.ones(2), Spy)
    assert type(seen["sizes"]) is list


def test_handles_expose_no_durations():
    """Batch: the Machine holds exactly capacity, free, now, need, requested,
    submit and easy_backfill (the [system] rule, a word). Packing: the
    Cluster's only per-job float list is the estimate."""
    from schedlab.engines.batch.checks import MACHINE_FIELDS
    from schedlab.engines.batch.sim.engine import Machine
    from schedlab.engines.packing.sim.engine import Cluster

    assert set(Machine.__slots__) == set(MACHINE_FIELDS)
    assert "runtime" not in " ".join(Machine.__slots__)
    assert not any("dur" in s for s in Cluster.__slots__) and "_est" in Cluster.__slots__


# ---- the CLI ---------------------------------------------------------------------------------------------------

GOOD = '''
from collections import deque
from schedlab.api import queue


class AgedFifo(queue.Policy):
    """FIFO; alpha is accepted to show parameters."""

    def __init__(self, server, *, alpha: float = 0.5):
        super().__init__(server)
        self.alpha = alpha
        self.q = deque()

    def arrive(self, job, estimate, weight):
        self.q.append(job)
        if len(self.q) == 1:
            self.server.serve_job(job)

    def depart(self, job):
        self.q.popleft()
        self.server.serve_job(self.q[0] if self.q else None)


class Idle(AgedFifo):
    def depart(self, job):
        self.q.popleft()
        self.server.serve_job(None)


NOT_A_CLASS = 3
'''


@pytest.fixture(scope="module")
def user_folder(tmp_path_factory):
    """One folder outside the repository for the user's file: a process
    knows one folder per user module name."""
    folder = tmp_path_factory.mktemp("user_code")
    (folder / "cp_userpolicies.py").write_text(GOOD)
    return folder


@pytest.fixture
def user_dir(user_folder, monkeypatch):
    """The user's folder as the working directory (REF is relative to it)."""
    monkeypatch.chdir(user_folder)
    return user_folder


def test_cli_ok_for_a_good_user_file(user_dir):
    res = CliRunner().invoke(
        main,
        ["check-policy", "cp_userpolicies.py:AgedFifo", "--engine", "queue", "--param", "alpha=2", "--examples", "30"],
    )
    assert res.exit_code == 0, res.output
    assert res.output == "ok (30 workloads)\n"


def test_cli_builtin_name():
    res = CliRunner().invoke(main, ["check-policy", "PSBS", "--engine", "queue", "--examples", "20"])
    assert res.exit_code == 0 and res.output == "ok (20 workloads)\n"


def test_cli_fail_prints_the_invariant_and_the_table(user_dir):
    res = CliRunner().invoke(main, ["check-policy", "cp_userpolicies.py:Idle", "--engine", "queue", "--examples", "50"])
    assert res.exit_code == 1, res.output
    lines = res.output.splitlines()
    assert lines[0] == "FAIL cp_userpolicies.py:Idle (queue): invariant completes violated"
    assert "smallest failing workload: 2 jobs" in res.output
    table = lines[lines.index(next(x for x in lines if x.startswith("smallest"))) + 1 :]
    assert table[0].split() == ["job", "submit", "size", "estimate", "weight"]
    assert len(table) == 3 and table[1].split()[0] == "0" and table[2].split()[0] == "1"


BAD_INPUT = [
    (["nope.py:X", "--engine", "queue"], "no such file nope.py"),
    (["cp_userpolicies.py:Missing", "--engine", "queue"], "has no attribute 'Missing'"),
    (["cp_userpolicies.py:AgedFifo", "--engine", "packing"], "is not a packing policy"),
    (["cp_userpolicies.py:NOT_A_CLASS", "--engine", "queue"], "int is not a queue policy"),
    (["cp_userpolicies.py:AgedFifo", "--engine", "quantum"], "unknown engine 'quantum'"),
    (["cp_userpolicies.py:AgedFifo"], "--engine is required"),
    (["cp_userpolicies.py:AgedFifo", "--engine", "queue", "--param", "beta=1"], "--param beta: policy"),
    (["cp_userpolicies.py:AgedFifo", "--engine", "queue", "--param", "alpha=fast"], "is not a TOML value"),
    (["cp_userpolicies.py:AgedFifo", "--engine", "queue", "--param", "alpha='x'"], "--param alpha:"),
    (["cp_userpolicies.py:AgedFifo", "--engine", "queue", "--param", "alpha=[1, 2]"], "not an array"),
    (["cp_userpolicies.py:AgedFifo", "--engine", "queue", "--param", "alpha"], "expected NAME=VALUE"),
    (["NOPE", "--engine", "queue"], "unknown policy 'NOPE'"),
    (["GreedyPM*/per/OPT=MIN", "--engine", "dfrs", "--param", "period=-1"], "period must be a number > 0"),
    (["PSBS", "--engine", "queue", "--examples", "0"], "--examples must be an integer >= 1"),
]


@pytest.mark.parametrize("args,fragment", BAD_INPUT, ids=[a[-1] if len(a) > 1 else a[0] for a, _ in BAD_INPUT])
def test_cli_bad_input_is_one_line_and_exit_2(user_dir, args, fragment):
    res = CliRunner().invoke(main, ["check-policy", *args])
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output
    assert len(res.output.strip().splitlines()) == 1, res.output
    assert res.output.startswith("schedlab: error: ") and fragment in res.output, res.output
