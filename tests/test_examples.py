"""The example project (examples/): each policy on hand-worked cases, against
an independent reference or an equivalent built-in, and on the invariants
its docstring promises; the generators and the metric on what they claim.

The example code is loaded as a spec loads it (``load_example``: a file
reference resolved against examples/), never by putting examples/ on
sys.path. Tolerances are explicit where a comparison is not exact.
"""

from __future__ import annotations

import ast
import math

import numpy as np
import polars as pl
import pytest

from schedlab.api.workloads import check_job_table
from schedlab.engines import get_engine
from schedlab.engines.batch.policies import EASY
from schedlab.engines.batch.sim.engine import simulate_batch
from schedlab.engines.dfrs.policies import GreedyStar
from schedlab.engines.dfrs.sim import simulate_dfrs
from schedlab.engines.packing.sim.engine import simulate_packing
from schedlab.engines.queue.policies import SRPTE
from schedlab.engines.queue.sim.engine import simulate
from schedlab.errors import UserError
from schedlab.platform.planning.validate import parse_spec
from tests.example_checks import EXAMPLES, conservative_reference, load_example

AgedSRPT = load_example("mypolicies/aged_srpt.py:AgedSRPT")
DotProductPacker = load_example("mypolicies/dot_product.py:DotProductPacker")
Conservative = load_example("mypolicies/conservative.py:ConservativeBackfilling")
MemPackStar = load_example("mypolicies/mem_pack.py:MemPackStar")
mem_pack = load_example("mypolicies/mem_pack.py:mem_pack")
Profile = load_example("mypolicies/profile.py:Profile")
bursty = load_example("mygenerators.py:bursty")
two_resource = load_example("mygenerators.py:two_resource")
rigid_jobs = load_example("mygenerators.py:rigid_jobs")
top_mean = load_example("mymetrics.py:top_mean")


def test_the_examples_import_only_the_public_api():
    """A copied project must keep working when schedlab's internals move."""
    for path in sorted(EXAMPLES.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            for name in names:
                if name == "schedlab" or name.startswith("schedlab."):
                    assert name == "schedlab.api" or name.startswith("schedlab.api."), f"{path.name} imports {name}"


# ---- AgedSRPT ----------------------------------------------------------------------------------------


def aged(submit, size, estimate=None, alpha=0.5) -> list[float]:
    size = np.asarray(size, dtype=float)
    est = size if estimate is None else np.asarray(estimate, dtype=float)
    completion, _ = simulate(
        np.asarray(submit, dtype=float), size, est, np.ones_like(size), lambda server: AgedSRPT(server, alpha=alpha)
    )
    return completion.tolist()


def test_aged_srpt_aging_keeps_an_old_job_from_being_preempted():
    # Job 0 (size 10) has 4 left at t = 6 when job 1 (size 3) arrives.
    # SRPTE (alpha 0): 3 < 4, job 1 preempts. alpha 0.5: job 1's key is
    # 3 + 0.5 x 6 = 6 > 4, job 0 keeps the server.
    assert aged([0, 6], [10, 3], alpha=0.0) == [13.0, 9.0]
    assert aged([0, 6], [10, 3], alpha=0.5) == [10.0, 13.0]


def test_aged_srpt_orders_waiting_jobs_by_static_keys_with_arrival_order_on_ties():
    # Job 0 (size 5) runs; jobs 1 (t=1, size 4) and 2 (t=2, size 3.5) wait.
    # Keys R + alpha a: alpha 0 -> 4 vs 3.5 (job 2 first); alpha 1 -> 5 vs 5.5
    # (job 1 first); alpha 0.5 -> 4.5 vs 4.5, a tie: the earlier arrival.
    assert aged([0, 1, 2], [5, 4, 3.5], alpha=0.0) == [5.0, 12.5, 8.5]
    assert aged([0, 1, 2], [5, 4, 3.5], alpha=1.0) == [5.0, 9.0, 12.5]
    assert aged([0, 1, 2], [5, 4, 3.5], alpha=0.5) == [5.0, 9.0, 12.5]


def test_aged_srpt_ties_that_hold_only_up_to_rounding_go_by_arrival():
    # Keys 0.16 + 0.1 x 0.1 and 0.15 + 0.1 x 0.2 are both 0.17 exactly, but in
    # doubles the second is 0.16999999999999998: compared as tie keys they
    # tie, and job 1 (the earlier) goes first. Job 0 (size 0.25) blocks both.
    assert 0.16 + 0.1 * 0.1 != 0.15 + 0.1 * 0.2
    done = aged([0.0, 0.1, 0.2], [0.25, 0.16, 0.15], alpha=0.1)
    assert done == pytest.approx([0.25, 0.41, 0.56], rel=0, abs=1e-12)
    assert done[1] < done[2]


def aged_reference(submit, size, estimate, alpha) -> list[float]:
    """Naive AgedSRPT: at every arrival and completion, serve the present job
    of least (estimate - attained) - alpha (t - arrival), earliest arrival
    on ties; O(n) per event, no heap, no static keys. Exact on dyadic
    inputs (every sum below is then exact in doubles)."""
    n = len(submit)
    attained = [0.0] * n
    done = [math.nan] * n
    present: list[int] = []
    t, i = 0.0, 0
    while i < n or present:
        if not present:
            t = max(t, submit[i])
        while i < n and submit[i] <= t:
            present.append(i)
            i += 1
        j = min(present, key=lambda k: (estimate[k] - attained[k] - alpha * (t - submit[k]), k))
        t_done = t + (size[j] - attained[j])
        t_next = submit[i] if i < n else math.inf
        if t_done <= t_next:
            t, attained[j], done[j] = t_done, size[j], t_done
            present.remove(j)
        else:
            attained[j] += t_next - t
            t = t_next
    return done


@pytest.mark.parametrize("seed", range(12))
def test_aged_srpt_agrees_with_a_naive_reference(seed):
    """Dyadic grids (1/8) and alphas make every key exact, so the heap's
    static keys and the naive recomputation must agree exactly, ties and
    late jobs (estimate < size) included."""
    rng = np.random.default_rng(seed)
    n = 40
    submit = np.cumsum(rng.integers(0, 12, n)) / 8.0  # gaps of 0..1.375, some simultaneous
    size = rng.integers(1, 40, n) / 8.0
    estimate = np.maximum(1, np.round(size * 8 * rng.choice([0.5, 1.0, 2.0], n))) / 8.0
    for alpha in (0.0, 0.25, 1.0, 4.0):
        ref = aged_reference(submit.tolist(), size.tolist(), estimate.tolist(), alpha)
        assert aged(submit, size, estimate, alpha=alpha) == ref, alpha


@pytest.mark.parametrize("seed", range(4))
def test_aged_srpt_with_alpha_zero_is_srpte_bit_for_bit(seed):
    jobs = check_job_table(bursty(np.random.default_rng(seed), njobs=3000, sigma=1.0), "queue", "bursty")
    queue = get_engine("queue")
    mine = queue.run(jobs, AgedSRPT, {"alpha": 0.0})
    builtin = queue.run(jobs, "SRPTE")
    assert mine.jobs["completion"].tobytes() == builtin.jobs["completion"].tobytes()
    assert mine.summary["events"] == builtin.summary["events"]
    # ties everywhere: integer arrivals and sizes from {1, 2, 3}
    rng = np.random.default_rng(100 + seed)
    submit = np.sort(rng.integers(0, 200, 300)).astype(float)
    size = rng.integers(1, 4, 300).astype(float)
    ones = np.ones_like(size)
    a, _ = simulate(submit, size, size, ones, lambda s: AgedSRPT(s, alpha=0.0))
    b, _ = simulate(submit, size, size, ones, SRPTE)
    assert a.tobytes() == b.tobytes()


def test_aged_srpt_alpha_must_be_non_negative():
    with pytest.raises(ValueError, match="alpha"):
        AgedSRPT(None, alpha=-0.1)
    spec = {
        "name": "x",
        "engine": "queue",
        "workload": {"njobs": 10},
        "policies": [{"name": "AgedSRPT", "use": "mypolicies/aged_srpt.py:AgedSRPT", "params": {"alpha": [0.5, -1.0]}}],
    }
    with pytest.raises(UserError, match=r"policies\[0\]\.params\.alpha: .*greater than or equal to 0"):
        parse_spec(spec, "x.toml", EXAMPLES)


# ---- DotProductPacker ----------------------------------------------------------------------------------


def pack(policy, submit, duration, demand, servers=2, epoch=None, **params):
    res = simulate_packing(
        submit,
        duration,
        demand,
        np.ones((servers, np.shape(demand)[1])),
        lambda c: policy(c, **params),
        epoch=epoch,
        check=True,
    )
    return res.start.tolist(), res.server.tolist()


def test_dot_product_sends_each_job_to_the_server_free_where_it_is_heavy():
    # t=0: a CPU-heavy and a memory-heavy long job fill server 0 to (0.8, 0.2)
    # and server 1 to (0.2, 0.8) (job 1 fits server 0 exactly, but aligns
    # better with the empty server 1). t=1: a small CPU-heavy job 2 and a
    # memory-heavy job 3. Alignments: job 3 on server 0 (free 0.2, 0.8):
    # 0.05 x 0.2 + 0.15 x 0.8 = 0.13; job 2 on server 1: 0.13 too (a tie:
    # the lower server first), every other pair 0.07 or less.
    demand = [[0.8, 0.2], [0.2, 0.8], [0.15, 0.05], [0.05, 0.15]]
    start, server = pack(DotProductPacker, [0, 0, 1, 1], [100, 100, 10, 10], demand)
    assert start == [0.0, 0.0, 1.0, 1.0]
    assert server == [0, 1, 1, 0]


def test_dot_product_ties_go_to_the_lower_server_then_the_earlier_job():
    # Two equally aligned jobs (0.6+0.1 = 0.1+0.6) and empty servers: job 2
    # (alignment 1.0) first on server 0, then job 0 (the earlier of the tied
    # pair) on server 1, then job 1 on server 1 (it no longer fits server 0).
    start, server = pack(DotProductPacker, [0, 0, 0], [5, 5, 5], [[0.6, 0.1], [0.1, 0.6], [0.5, 0.5]])
    assert server == [1, 1, 0]
    assert start == [0.0, 0.0, 0.0]


class BruteForceDotProduct:
    """Reference: score every (queued job, server) pair at every placement.
    O(Q L) per placement; same ties (largest alignment, lowest server,
    earliest job)."""

    def __init__(self, cluster) -> None:
        self.c = cluster
        self.queue: list[int] = []

    def arrive(self, job):
        self.queue.append(job)

    def depart(self, job, server):
        pass

    def schedule(self):
        c, out = self.c, []
        free = np.array([c.free(s) for s in range(c.servers)])
        w = 1.0 / np.array([c.capacity(s) for s in range(c.servers)]) ** 2
        while True:
            best = None
            for j in self.queue:
                d = c.demand(j)
                for s in range(c.servers):
                    if np.all(d <= free[s] + 1e-9):
                        key = (-float(((free[s] * w[s]) * d).sum()), s, j)
                        best = key if best is None or key < best else best
            if best is None:
                return out
            _, s, j = best
            free[s] -= c.demand(j)
            self.queue.remove(j)
            out.append((j, s))


@pytest.mark.parametrize("seed", range(6))
def test_dot_product_agrees_with_brute_force_and_with_tetris_alignment_only(seed):
    rng = np.random.default_rng(seed)
    n, servers = 150, 4
    submit = np.sort(rng.integers(0, 60, n)).astype(float)
    duration = rng.integers(1, 20, n).astype(float)
    if seed % 2:  # few distinct shapes: ties and shape sharing
        demand = rng.choice([0.1, 0.2, 0.3, 0.5], (n, 2))
    else:
        demand = rng.uniform(0.02, 0.7, (n, 2))
    for epoch in (None, 1.0):
        mine = pack(DotProductPacker, submit, duration, demand, servers, epoch)
        assert mine == pack(BruteForceDotProduct, submit, duration, demand, servers, epoch)
        tetris = get_engine("packing").policy("Tetris")
        assert mine == pack(tetris, submit, duration, demand, servers, epoch, fairness=1.0, epsilon=0.0)


# ---- Conservative backfilling ---------------------------------------------------------------------------


def batch_run(policy, submit, need, requested, runtime=None, capacity=4):
    runtime = requested if runtime is None else runtime
    res = simulate_batch(submit, runtime, requested, need, capacity, policy)
    return res.start.tolist(), res.policy


def test_profile_earliest_fit_hold_and_release():
    p = Profile(4, 0.0)
    p.hold(0.0, 10.0, 3)  # 1 free until 10
    p.hold(10.0, 20.0, 4)  # none free on [10, 20)
    assert (p.t, p.f) == ([0.0, 10.0, 20.0], [1, 0, 4])
    assert p.earliest(1, 5.0) == 0.0
    assert p.earliest(1, 15.0) == 20.0  # would cross [10, 20)
    assert p.earliest(2, 1.0) == 20.0
    p.release(5.0, 10.0, 3)  # a job ended early at 5
    assert (p.t, p.f) == ([0.0, 5.0, 10.0, 20.0], [1, 4, 0, 4])
    assert p.earliest(4, 5.0) == 5.0
    p.advance(7.0)
    assert (p.t, p.f) == ([7.0, 10.0, 20.0], [4, 0, 4])
    p.release(10.0, 20.0, 4)  # equal neighbours merge
    assert (p.t, p.f) == ([7.0], [4])


def test_conservative_protects_every_reservation_where_easy_protects_only_the_head():
    # 4 units. t=0: job 0 (3 units, 10 s) runs; job 1 (2 units) is reserved
    # at 10; job 2 (4 units) at 20. t=1: job 3 (1 unit, 100 s) fits now, and
    # EASY backfills it (the head's reservation keeps 2 spare units), which
    # pushes job 2 to 101. Conservative reserves job 3 at 30, after job 2.
    submit, need, req = [0, 0, 0, 1], [3, 2, 4, 1], [10, 10, 10, 100]
    start, pol = batch_run(Conservative, submit, need, req)
    assert start == [0.0, 10.0, 20.0, 30.0]
    assert pol.promised == {0: 0.0, 1: 10.0, 2: 20.0, 3: 30.0}
    assert batch_run(EASY, submit, need, req)[0] == [0.0, 10.0, 101.0, 1.0]


def test_conservative_compresses_the_schedule_when_a_job_ends_early():
    # 4 units. Job 0 (4 units) asks for 10 s but ends at 4. Reservations on
    # arrival: job 1 (2 units, 10 s) at 10, job 2 (2 units, 3 s) at 10 beside
    # it, job 3 (4 units, 5 s) at 20. At t=4 each moves to its earliest fit in
    # arrival order: job 1 -> 4, job 2 -> 4, job 3 -> 14 (when job 1 ends).
    start, pol = batch_run(Conservative, [0, 1, 2, 3], [4, 2, 2, 4], [10, 10, 3, 5], runtime=[4, 10, 3, 5])
    assert start == [0.0, 4.0, 4.0, 14.0]
    assert pol.promised == {0: 0.0, 1: 10.0, 2: 10.0, 3: 20.0}
    assert pol.rebuilds == 0


def test_compression_never_delays_a_later_job_and_runs_to_a_fixed_point():
    # 3 units, all submitted at 0. Jobs 0-2 (1 unit each) start; job 0 asks
    # 10 s, ends at 1. Job 3 (2 units, 5 s) is reserved at 10, job 4 (1 unit,
    # 5 s) at 2 (when job 2 ends). At t=1 a rebuild in arrival order would
    # put job 3 at 2 and push job 4 to 7; compression moves job 3 to 7 (job 4
    # keeps its slot), then job 4 to 1; the second pass moves job 3 to 6, the
    # end of job 4's new slot -- without it, job 3 would wait for an instant
    # (7) at which nothing happens, and start at 10.
    submit, need, req, run = [0] * 5, [1, 1, 1, 2, 1], [10, 10, 2, 5, 5], [1, 10, 2, 5, 5]
    start, pol = batch_run(Conservative, submit, need, req, runtime=run, capacity=3)
    assert start == [0.0, 0.0, 0.0, 6.0, 1.0]
    assert pol.promised[3] == 10.0 and pol.promised[4] == 2.0


def test_conservative_with_exact_times_is_the_earliest_fit_in_arrival_order():
    for seed in range(8):
        jobs = rigid_jobs(np.random.default_rng(seed), njobs=300, procs=32, load=0.9)
        sub, run, procs = (jobs[c].to_numpy() for c in ("submit", "runtime", "procs"))
        start, pol = batch_run(Conservative, sub, procs, run, capacity=32)
        assert start == conservative_reference(sub, run, procs, 32).tolist()
        assert start == [pol.promised[j] for j in range(len(sub))]  # every promise kept exactly


class Watched(Conservative):
    """Checks after every pass that no queued job's reservation got later."""

    def schedule(self, now):
        before = dict(self.queue)
        out = super().schedule(now)
        for job, start in self.queue.items():
            assert job not in before or start <= before[job], (now, job, before[job], start)
        return out


@pytest.mark.parametrize("overestimate", [1.5, 4.0])
def test_conservative_never_delays_a_reservation_when_jobs_end_early(overestimate):
    """Users over-estimate (runtime <= requested): every job starts no later
    than the reservation it got on arrival, and no pass moves any queued
    job's reservation later. (Not checked: "no job starts later than under
    FCFS", which inexact estimates can break.)"""
    for seed in range(6):
        jobs = rigid_jobs(np.random.default_rng(seed), njobs=300, procs=32, load=0.95, overestimate=overestimate)
        sub, run, req, procs = (jobs[c].to_numpy() for c in ("submit", "runtime", "requested_time", "procs"))
        start, pol = batch_run(Watched, sub, procs, req, runtime=run, capacity=32)
        assert all(s <= pol.promised[j] for j, s in enumerate(start))
        assert pol.rebuilds == 0
        assert sum(s < pol.promised[j] for j, s in enumerate(start)) > 0  # early ends were used


def test_conservative_survives_jobs_that_overrun_their_requested_time():
    rng = np.random.default_rng(7)
    jobs = rigid_jobs(rng, njobs=300, procs=32, load=0.95, overestimate=2.0)
    sub, run, req, procs = (jobs[c].to_numpy() for c in ("submit", "runtime", "requested_time", "procs"))
    run = run * rng.choice([1.0, 3.0], len(run), p=[0.8, 0.2])  # a fifth run past their request
    start, pol = batch_run(Conservative, sub, procs, req, runtime=run, capacity=32)  # the engine checks capacity
    assert not np.isnan(start).any()
    assert pol.rebuilds > 0


def test_a_requested_time_below_the_clock_resolution_still_holds_its_units():
    # 1 processor; job 1 asks for 1.2e-38 s at t = 1, where 1 + 1.2e-38 == 1.
    # Its hold must still cover the instant 1, or job 2 would be given the same
    # processor at the same pass (found by `schedlab check-policy`). Job 1
    # ends at 1 in a second pass of the same instant; job 2 starts after it.
    tiny = 1.1754943508222875e-38
    assert 1.0 + tiny == 1.0
    start, pol = batch_run(Conservative, [0, 0, 0], [1, 1, 1], [1, tiny, 1], capacity=1)
    assert start == [0.0, 1.0, 1.0]
    assert pol.rebuilds == 0


def test_conservative_handles_zero_runtimes_and_simultaneous_events():
    start, pol = batch_run(Conservative, [0, 0, 0, 5], [4, 2, 2, 4], [10, 10, 10, 10], runtime=[0, 5, 0, 1])
    # job 0 starts and ends at 0; jobs 1 and 2 start at 0 too (second pass);
    # job 2 ends at once, job 1 at 5, then job 3 starts at 5.
    assert start == [0.0, 0.0, 0.0, 5.0]


# ---- MemPack* (DFRS) -----------------------------------------------------------------------------------


def test_mem_pack_fills_the_fullest_nodes_first():
    free = np.array([0.5, 0.25, 1.0, 0.3])
    load = np.array([0.0, 2.0, 0.0, 1.0])
    assert mem_pack(free, load, 3, 0.25) == [1, 3, 0]  # node 0 still has a slot, but it comes last
    assert mem_pack(free, load, 4, 0.25) == [1, 3, 0, 0]
    assert mem_pack(free, load, 10, 0.25) is None  # 2 + 1 + 4 + 1 = 8 slots
    # ties on free memory go to the lower CPU load, then the lower index
    assert mem_pack(np.array([0.5, 0.5, 0.5]), np.array([1.0, 0.5, 0.5]), 2, 0.5) == [1, 2]


def test_mem_pack_keeps_a_node_free_where_greedy_spreads():
    # 2 nodes; jobs 0 and 1 (1 task, memory 0.5), job 2 (1 task, memory 1),
    # all released at 0, 100 s each, CPU need 1. MemPack puts jobs 0 and 1 on
    # node 0 (they share its CPU: yield 1/2, end at 200) and job 2 on the empty
    # node 1 (ends at 100). Greedy* spreads jobs 0 and 1 (end at 100), and job
    # 2 waits for a whole node (100 to 200).
    args = ([0.0, 0.0, 0.0], [100.0] * 3, [1, 1, 1], [1.0] * 3, [0.5, 0.5, 1.0], 2)
    mine = simulate_dfrs(*args, MemPackStar(), check=True).state
    assert mine.end.tolist() == [200.0, 200.0, 100.0]
    assert mine.start.tolist() == [0.0, 0.0, 0.0]
    greedy = simulate_dfrs(*args, GreedyStar(), check=True).state
    assert greedy.end.tolist() == [100.0, 100.0, 200.0]


@pytest.mark.parametrize("opt", ["MIN", "AVG"])
def test_mem_pack_keeps_the_engine_invariants_on_random_workloads(opt):
    jobs = rigid_jobs(np.random.default_rng(3), njobs=120, procs=32, load=0.9)
    rng = np.random.default_rng(4)
    mem = rng.choice([0.1, 0.25, 0.4], jobs.height)
    res = simulate_dfrs(
        jobs["submit"].to_numpy(),
        jobs["runtime"].to_numpy(),
        jobs["procs"].to_numpy(),
        np.full(jobs.height, 0.5),
        mem,
        32,
        MemPackStar(opt=opt),
        check=True,
    )  # memory, yields, CPU
    assert not np.isnan(res.state.end).any()
    assert res.state.pauses.sum() == 0 and res.state.migrations.sum() == 0
    with pytest.raises(ValueError, match="opt"):
        MemPackStar(opt="MAX")


# ---- generators and the metric -------------------------------------------------------------------------


def test_bursty_offers_its_load_in_bursts_from_independent_streams():
    n = 200_000
    a = bursty(np.random.default_rng(0), njobs=n, load=0.8, shape=0.5, sigma=0.5)
    assert a.equals(bursty(np.random.default_rng(0), njobs=n, load=0.8, shape=0.5, sigma=0.5))
    assert check_job_table(a, "queue", "bursty").height == n
    submit, size = a["submit"].to_numpy(), a["size"].to_numpy()
    assert np.all(np.diff(submit) >= 0)
    # Weibull(0.5) of mean 1 has sd sqrt(5): the sample mean's sd is 0.005; 0.03 is 6 sd.
    assert abs(size.mean() - 1.0) < 0.03
    # Long-run rate = load. Arrivals and time per on/off cycle (mean 200) vary
    # a lot (CV ~0.75 each, correlated): over ~1250 cycles the rate's relative
    # sd is ~2 %; 10 % is ~5 sd.
    assert abs(len(submit) / submit[-1] / 0.8 - 1.0) < 0.10
    counts = np.bincount((submit // 20).astype(int))  # arrivals per window of 20
    assert counts.var() / counts.mean() > 3.0  # bursty: far above a Poisson process's 1
    b = bursty(np.random.default_rng(0), njobs=n, load=0.8, shape=0.5, sigma=2.0)
    assert b["submit"].equals(a["submit"]) and b["size"].equals(a["size"])  # sigma moves only estimates
    assert not b["estimate"].equals(a["estimate"])
    poisson = bursty(np.random.default_rng(0), njobs=n, load=0.8, burstiness=1.0)["submit"].to_numpy()
    counts = np.bincount((poisson // 20).astype(int))
    assert abs(counts.var() / counts.mean() - 1.0) < 0.1  # ~12,500 windows: the ratio's sd is ~0.013


def test_two_resource_and_rigid_jobs_tables():
    jobs = two_resource(np.random.default_rng(1), njobs=20_000, correlation=-0.5)
    check_job_table(jobs, "packing", "two_resource")
    cpu, mem = jobs["cpu"].to_numpy(), jobs["mem"].to_numpy()
    assert cpu.min() >= 0.05 and max(cpu.max(), mem.max()) <= 0.6
    assert -0.55 < np.corrcoef(cpu, mem)[0, 1] < -0.4  # the copula keeps most of the -0.5
    rigid = rigid_jobs(np.random.default_rng(2), njobs=5000, procs=48, overestimate=3.0)
    check_job_table(rigid, "batch", "rigid_jobs")
    procs, run, req = (rigid[c].to_numpy() for c in ("procs", "runtime", "requested_time"))
    assert set(np.unique(procs)) <= {1, 2, 4, 8, 16, 32} and np.all(req >= run) and np.all(req % 60 == 0)
    exact = rigid_jobs(np.random.default_rng(2), njobs=5000, procs=48)
    assert exact["requested_time"].equals(exact["runtime"])


def test_top_mean():
    jobs = pl.DataFrame({"size": [1.0, 5.0, 3.0, 5.0, 2.0], "slowdown": [10.0, 1.0, 4.0, 3.0, float("nan")]})
    assert top_mean(jobs, top=0.2) == 2.0  # the largest job: size 5, tied with another 5 -> both count
    assert top_mean(jobs, top=0.5) == 2.0  # 2 of the 4 jobs with both values (the NaN row is dropped first)
    assert top_mean(jobs, top=0.75) == pytest.approx((1 + 4 + 3) / 3, rel=1e-15)  # sizes 5, 3, 5
    assert top_mean(jobs, top=1.0) == pytest.approx(18 / 4, rel=1e-15)
    assert math.isnan(top_mean(jobs.head(0)))
    with pytest.raises(ValueError, match="no column 'sojourn'"):
        top_mean(jobs, column="sojourn")
