"""The batch engine's ``easy_backfill`` option (docs/dfrs.md, the EASY row):
``"vcsim"`` is the DFRS authors' simulator's EASY (vcsim's ``easy_sched``,
``results/scripts/sim.py``), ``"canonical"`` (the default) the textbook rule.

Checked three ways: a hand-worked six-node case that separates the two
rules; a property test against a transliteration of vcsim's own
``easy_sched`` (hosts, per-host available times, its reservation) on random
small instances; and, when vcsim and Python 2.7 are on this machine
(``VCSIM_DIR`` / ``VCSIM_PYTHON``, as ``benchmarks/vcsim_compare.py``), the
real vcsim on the hand-worked trace and on a 300-job Lublin trace -- skipped
with the reason otherwise (CI has no Python 2)."""

from __future__ import annotations

import bisect
import importlib.util
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.engines import get_engine
from schedlab.engines.batch.policies.easy import EASY
from schedlab.engines.batch.sim.engine import simulate_batch
from schedlab.errors import UserError

SYSTEM = {"model": "nodes", "nodes": 6, "tasks_per_node": 1, "estimates": "exact"}
VCSIM = {**SYSTEM, "easy_backfill": "vcsim"}


def hand_jobs() -> pl.DataFrame:
    """A (2 nodes, 10 s) and B (2 nodes, 20 s) at t = 0; C (5 nodes, 5 s) at
    1; D (2 nodes, 5 s) at 2; E (1 node, 100 s) at 3. Job ids 1..5."""
    return pl.DataFrame(
        {
            "job_id": [1, 2, 3, 4, 5],
            "submit": [0.0, 0.0, 1.0, 2.0, 3.0],
            "runtime": [10.0, 20.0, 5.0, 5.0, 100.0],
            "procs": [2, 2, 5, 2, 1],
        }
    )


def starts(table: pl.DataFrame, system: dict, path: str = "fast") -> list[float]:
    res = get_engine("batch").run(table, "EASY", None, system, path=path)
    order = np.argsort(np.asarray(res.jobs["job_id"]))
    return [float(x) for x in np.asarray(res.jobs["start"])[order]]


def test_hand_worked_canonical_and_vcsim_differ():
    """Six nodes. A and B start at 0 (2 free). At 1, C (5 nodes) blocks:
    the running jobs end at 10 (A, +2 -> 4 free) and 20 (B, +2 -> 6 >= 5),
    so C's shadow time is 20 under both rules.

    Canonical: extra = 6 - 5 = 1. At 2, D (2 nodes) fits the 2 free nodes
    and ends at 7 <= 20: it backfills (rule a), D 2-7. At 3, E: nothing
    free. At 7 D ends (2 free): E ends at 107 > 20 but needs 1 <= extra 1
    (rule b): E 7-107. At 20 B ends, 5 free: C 20-25.

    vcsim: the reservation is pinned at 1: the 5 latest-available hosts by
    20 are B's 2, A's 2 and 1 free host; 1 free host is outside it. At 2, D
    needs 2 > 1 outside: it waits (vcsim's rule (a) test compares with the
    reservation's start time, None until it starts: never true). At 3, E
    needs 1 <= 1 outside: E 3-103. At 10 A ends onto reserved hosts
    (outside still 0). At 20 C starts on its 5 hosts (E holds the sixth),
    C 20-25; D, the new head, gets 2 of C's hosts at 25: D 25-30.

    Starts (A, B, C, D, E): canonical 0, 0, 20, 2, 7; vcsim 0, 0, 20, 25, 3."""
    assert starts(hand_jobs(), SYSTEM) == [0.0, 0.0, 20.0, 2.0, 7.0]
    assert starts(hand_jobs(), {**SYSTEM, "easy_backfill": "canonical"}) == [0.0, 0.0, 20.0, 2.0, 7.0]
    assert starts(hand_jobs(), VCSIM) == [0.0, 0.0, 20.0, 25.0, 3.0]
    assert starts(hand_jobs(), VCSIM, path="reference") == [0.0, 0.0, 20.0, 25.0, 3.0]


def test_fcfs_ignores_the_option_and_keeps_its_kernel():
    fcfs = [
        float(x) for x in get_engine("batch").run(hand_jobs(), "FCFS", None, VCSIM).jobs["start"]
    ]  # A, B at 0; C at 20 (B's end); D at 25; E at 25
    assert fcfs == [0.0, 0.0, 20.0, 25.0, 25.0]


def test_bad_value_is_one_line():
    with pytest.raises(UserError, match="easy_backfill"):
        starts(hand_jobs(), {**SYSTEM, "easy_backfill": "lifka"})


# --- vcsim's easy_sched, transliterated --------------------------------------------------------------


def vcsim_easy(numhosts: int, jobs: list[tuple[int, int, int, int]]) -> dict[int, int]:
    """vcsim's ``easy_sched`` (sim.py, d9465bc) line for line in Python 3,
    for jobs (id, submit, tasks, runtime) with integer times: start time per
    id. Its events are (time, action, id): 0 = an alloc ends, 2 = a job is
    submitted; all events of an instant are applied before one pass. The
    reservation's ``starttime`` is None until it starts: Python 2 evaluates
    ``time + job.runtime <= None`` as False, written out below."""
    runtime = {j: r for j, _, _, r in jobs}
    tasks = {j: p for j, _, p, _ in jobs}
    events = sorted((s, 2, j) for j, s, _, _ in jobs)
    hosts = set(range(numhosts))
    atimes = [0] * numhosts
    held: dict[int, set[int]] = {}
    queue: list[int] = []
    resalloc: tuple[int, set[int]] | None = None
    restime = 0
    start: dict[int, int] = {}

    def run(job: int, jhosts: set[int], time: int) -> None:
        start[job] = time
        held[job] = jhosts
        bisect.insort(events, (time + runtime[job], 0, job))

    while events:
        time, action, job = events.pop(0)
        if action == 0:
            hosts |= held.pop(job)
        else:
            queue.append(job)
        if events and events[0][0] == time:
            continue
        if resalloc and restime == time:
            rjob, rhosts = resalloc
            run(rjob, rhosts, time)
            hosts -= rhosts
            for host in rhosts:
                atimes[host] = time + runtime[rjob]
            resalloc = None
        ujobs = []
        nreshosts = hosts - resalloc[1] if resalloc else hosts
        for job in queue:
            phosts = hosts if not resalloc else nreshosts  # time + runtime <= None: False in Python 2
            if tasks[job] <= len(phosts):
                jhosts = set()
                for _ in range(tasks[job]):
                    host = phosts.pop()
                    atimes[host] = time + runtime[job]
                    hosts.discard(host)
                    nreshosts.discard(host)
                    jhosts.add(host)
                run(job, jhosts, time)
            elif not resalloc:
                order = sorted(range(numhosts), key=lambda x: (atimes[x], x))
                restime = atimes[order[tasks[job] - 1]]
                order.reverse()
                for i in range(numhosts):
                    if atimes[order[i]] <= restime:
                        break
                resalloc = (job, set(order[i : i + tasks[job]]))
                nreshosts = hosts - resalloc[1]
            else:
                ujobs.append(job)
        queue = ujobs
    return start


@st.composite
def instances(draw):
    cap = draw(st.integers(1, 6))
    n = draw(st.integers(1, 9))
    submit = draw(st.lists(st.integers(0, 20), min_size=n, max_size=n))
    runtime = draw(st.lists(st.integers(1, 15), min_size=n, max_size=n))
    procs = draw(st.lists(st.integers(1, cap), min_size=n, max_size=n))
    return cap, list(zip(range(1, n + 1), submit, procs, runtime))


@settings(max_examples=300, deadline=None)
@given(instances())
def test_vcsim_rule_equals_vcsims_easy_sched(inst):
    cap, jobs = inst
    table = pl.DataFrame(
        {
            "job_id": [j for j, *_ in jobs],
            "submit": [float(s) for _, s, _, _ in jobs],
            "runtime": [float(r) for *_, r in jobs],
            "procs": [p for _, _, p, _ in jobs],
        }
    )
    theirs = vcsim_easy(cap, jobs)
    ours = starts(table, {**VCSIM, "nodes": cap})
    assert ours == [float(theirs[j]) for j, *_ in jobs]


@settings(max_examples=300, deadline=None)
@given(instances(), st.lists(st.integers(-5, 10), min_size=9, max_size=9))
def test_vcsim_rule_schedules_are_valid_and_heads_keep_their_reservation(inst, slack):
    """Any estimates: every job runs, never on more units than the machine has
    (the engine checks each start; a run that leaves a job queued raises).
    Exact estimates: every head starts exactly at its reservation's time."""
    cap, jobs = inst
    submit = np.array([s for _, s, _, _ in jobs], float)
    runtime = np.array([r for *_, r in jobs], float)
    procs = np.array([p for _, _, p, _ in jobs])
    requested = np.maximum(1.0, runtime + np.array(slack[: len(jobs)], float))
    for req, exact in ((runtime, True), (requested, False)):
        res = simulate_batch(
            submit, runtime, req, procs, cap, lambda m: EASY(m, record_reservations=True), easy_backfill="vcsim"
        )
        assert np.all(res.start >= submit) and np.array_equal(res.end, res.start + runtime)
        for t in np.unique(res.start):
            assert procs[(res.start <= t) & (res.end > t)].sum() <= cap
        if exact:
            for job, reserved in res.policy.reservation.items():
                assert res.start[job] == reserved, (job, reserved, res.start.tolist())


def test_transliteration_on_the_hand_worked_case():
    """The transliteration gives the hand-worked vcsim starts (a check of the checker)."""
    t = hand_jobs()
    jobs = list(zip(t["job_id"], t["submit"].cast(int), t["procs"], t["runtime"].cast(int)))
    got = vcsim_easy(6, jobs)
    assert [got[j] for j in range(1, 6)] == [0, 0, 20, 25, 3]


# --- the real vcsim (Python 2.7), when present -------------------------------------------------------

VCSIM_DIR = Path(os.environ.get("VCSIM_DIR", "vcsim-run/src"))
VCSIM_PYTHON = Path(os.environ.get("VCSIM_PYTHON") or shutil.which("python2.7") or "python2.7")
SIM = VCSIM_DIR / "results" / "scripts" / "sim.py"
BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "vcsim_compare.py"


def _compare_module():
    spec = importlib.util.spec_from_file_location("vcsim_compare", BENCH)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.skipif(
    not (SIM.is_file() and VCSIM_PYTHON.is_file()),
    reason=f"vcsim ({SIM}) or Python 2 ({VCSIM_PYTHON}) not present: see benchmarks/vcsim_compare.py",
)
@pytest.mark.parametrize("case", ["hand", "lublin"])
def test_real_vcsim_equals_the_vcsim_rule(case):
    """vcsim's own ``easy`` on the hand-worked trace (6 hosts) and on a
    300-job Lublin trace (seed 1, 128 nodes, the comparison's): every
    completion time equal under ``easy_backfill = "vcsim"``; the canonical
    rule differs on both."""
    mod = _compare_module()
    if case == "hand":
        jobs = hand_jobs().with_columns(cpu_need=pl.lit(1.0), memory=pl.lit(0.1))
        nodes = 6
    else:
        jobs, nodes = mod.build_trace(300, 1, 0.0, "first"), mod.NODES
    with tempfile.TemporaryDirectory() as d:
        work = Path(d)
        (work / "shim").mkdir()
        (work / "shim" / "pymprog.py").write_text(mod.PYMPROG_SHIM)
        (work / "driver.py").write_text(mod.DRIVER)
        mod.write_dat(jobs, work / "trace.dat")
        ends, _out, _wall = mod.run_vcsim(str(VCSIM_PYTHON), SIM, work, work / "trace.dat", ["easy"], nodes)
    ref = np.array([ends[int(i)] for i in jobs["job_id"]], dtype=float)
    ours, _ = mod.run_schedlab(jobs, "EASY", {"easy_backfill": "vcsim"}, nodes)
    canonical, _ = mod.run_schedlab(jobs, "EASY", {}, nodes)
    assert np.array_equal(ours, ref)
    assert not np.array_equal(canonical, ref)
