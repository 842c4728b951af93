"""The packing engine's compiled fast path (schedlab.engines.packing.sim.fast):
bit-identity with the reference for FIFO-FF, BF-J, BF-S, BF-J/S, VQS and
VQS-BF on workloads full of ties, the engine tests' scenarios on both paths,
the Engine-level switch, and what declines to the reference."""

from __future__ import annotations

import math
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.engines import ENGINE_PATHS, get_engine
from schedlab.engines.packing import kernel_id, run_table
from schedlab.engines.packing.policies import PACKING_POLICIES
from schedlab.engines.packing.sim import fast as packing_fast
from schedlab.engines.packing.sim.engine import FIT_TOL, CapacityExceeded, PackingStalled, simulate_packing
from schedlab.engines.packing.sim.vqs_partition import universal_partition
from schedlab.errors import UserError
from schedlab.workloads.packing_synthetic import packing_workload

FAST = ("FIFO-FF", "BF-J", "BF-S", "BF-J/S")
CLASSES = [PACKING_POLICIES[name] for name in FAST]
VQS_FAST = ("VQS", "VQS-BF")
VQS_CLASSES = [PACKING_POLICIES[name] for name in VQS_FAST]


def _key(x):
    """A float's bits (NaN-aware, -0.0 != 0.0); other values as they are."""
    if isinstance(x, (float, np.floating)):
        return "nan" if math.isnan(x) else struct.pack("<d", float(x))
    return x


def assert_same_result(a, b):
    """Two PackingResults equal to the bit: per-job arrays, every summary
    value, the horizon, the counters, the series and the JCTs."""
    for name in ("start", "end", "wait", "server"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and x.shape == y.shape, name
        assert x.tobytes() == y.tobytes(), (name, x.tolist(), y.tolist())
    sa, sb = a.summary(), b.summary()
    assert list(sa) == list(sb)
    assert {k: _key(v) for k, v in sa.items()} == {k: _key(v) for k, v in sb.items()}
    assert [_key(v) for v in a.horizon] == [_key(v) for v in b.horizon]
    assert [type(v) for v in a.horizon] == [type(v) for v in b.horizon]
    assert (a.completed, a.started, a.epochs) == (b.completed, b.started, b.epochs)
    assert a.queue_resource_mean.tobytes() == b.queue_resource_mean.tobytes()
    assert a.utilisation.tobytes() == b.utilisation.tobytes()
    assert (a.samples is None) == (b.samples is None)
    if a.samples is not None:
        assert list(a.samples) == list(b.samples)
        for k in a.samples:
            x, y = a.samples[k], b.samples[k]
            assert x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes(), k
    assert (a.groups is None) == (b.groups is None)
    if a.groups is not None:
        assert a.groups.tobytes() == b.groups.tobytes() and a.jct.tobytes() == b.jct.tobytes()


def fitting(demand, capacity):
    """``demand`` with every row that fits no empty server cut to the first
    server's capacity: the engine refuses a job no server can hold (that
    refusal has its own tests), so generated workloads keep to ones it runs."""
    dem = np.array(demand, dtype=float).reshape(len(demand), -1)
    cap = np.array(capacity, dtype=float).reshape(len(capacity), -1)
    ok = np.zeros(len(dem), dtype=bool)
    for c in cap:
        ok |= ~np.any(dem > c + FIT_TOL, axis=1)
    dem[~ok] = np.minimum(dem[~ok], cap[0])
    return dem.reshape(np.shape(demand)).tolist()


def outcome(run):
    """A run's result, or the text of its PackingStalled: a built-in whose own
    fit test refuses a job the engine's accepts (a demand within FIT_TOL
    above a capacity: ``size - FIT_TOL <= free`` and ``size <= free +
    FIT_TOL`` differ at the last bit; Slots-Fair's slot counts) never places
    it, and both paths stop with the same message from ``finish_result``."""
    try:
        return run()
    except PackingStalled as err:
        return str(err)


def both(cls, submit, duration, demand, capacity, params=None, **kw):
    """Run the reference and the kernel; assert they agree to the bit, or
    raise the same PackingStalled (returns None then), or that the kernel
    declined a run on which the reference raises."""
    fast = outcome(
        lambda: packing_fast.simulate(kernel_id(cls), submit, duration, demand, capacity, params=params, **kw)
    )
    factory = (lambda cluster: cls(cluster, **params)) if params else cls
    if fast is None:  # MISFIT: the reference must reject a placement there
        with pytest.raises(CapacityExceeded):
            simulate_packing(submit, duration, demand, capacity, factory, **kw)
        return None
    ref = outcome(lambda: simulate_packing(submit, duration, demand, capacity, factory, **kw))
    if isinstance(ref, str) or isinstance(fast, str):
        assert ref == fast
        return None
    assert_same_result(ref, fast)
    return ref


# ---- hypothesis: ties and coincidences --------------------------------------------------------------

#: Sizes that tie, sum exactly or nearly to 1 (0.1 + 0.2 != 0.3), or sit a
#: hair from the fit tolerance.
SIZES = [
    0.1,
    0.2,
    0.3,
    0.1 + 0.2,
    0.4,
    0.5,
    0.6,
    0.7,
    0.8,
    0.9,
    1.0,
    1 / 3,
    2 / 3,
    0.25,
    0.75,
    1 - 1e-9,
    1 - 2e-9,
    1e-9,
    0.0,
    0.3 - 1e-9,
    0.7 + 1e-9,
]
CAPACITIES = [1.0, 1.0, 1.0, 0.5, 0.7, 0.1 + 0.2 + 0.7, 1 / 3 + 2 / 3, 2.0]


def engine_options(draw, n):
    """The engine's optional inputs, each drawn or left out: a sampled
    series, a horizon cut (`until`) and task groups (JCT)."""
    kw = {}
    if draw(st.booleans()):
        kw["sample_every"] = draw(st.sampled_from([1.0, 0.7, 0.1, 3.0, 2]))
    if draw(st.integers(0, 3)) == 0:
        kw["until"] = draw(st.sampled_from([0.0, 2.0, 3.5, 7, -1.0]))
    if draw(st.integers(0, 3)) == 0:
        kw["group"] = draw(st.lists(st.integers(0, 4), min_size=n, max_size=n))
    return kw


@st.composite
def workloads(draw, max_jobs=40, max_servers=4):
    n = draw(st.integers(1, max_jobs))
    slotted = draw(st.booleans())
    if slotted:  # integer times (the paper's slotted model)
        submit = sorted(draw(st.lists(st.integers(0, 12), min_size=n, max_size=n)))
        duration = draw(st.lists(st.integers(0, 6), min_size=n, max_size=n))
        epoch = draw(st.sampled_from([1.0, 1.0, 2.0, 1, None]))  # an int Δ: the reference's times become ints
    else:  # tenths and thirds: epochs and ends that land on multiples only up to rounding
        grid = st.sampled_from([0.0, 0.1, 0.2, 0.3, 0.1 + 0.2, 0.7, 1 / 3, 1.0, 1.1, 2.5])
        submit = sorted(draw(st.lists(grid, min_size=n, max_size=n)))
        duration = draw(st.lists(st.one_of(grid, st.floats(0, 3)), min_size=n, max_size=n))
        epoch = draw(st.sampled_from([None, None, 0.1, 0.5, 1 / 3]))
    demand = draw(st.lists(st.one_of(st.sampled_from(SIZES), st.floats(0, 1)), min_size=n, max_size=n))
    L = draw(st.integers(1, max_servers))
    if draw(st.booleans()):
        capacity = [1.0] * L  # equal free capacities: ties between servers
    else:
        capacity = draw(st.lists(st.sampled_from(CAPACITIES), min_size=L, max_size=L))
    return submit, duration, fitting(demand, capacity), capacity, {"epoch": epoch, **engine_options(draw, n)}


@settings(max_examples=120, deadline=None)
@given(workloads())
def test_bit_identical_on_ties(w):
    submit, duration, demand, capacity, kw = w
    for cls in CLASSES:
        both(cls, submit, duration, demand, capacity, **kw)


@pytest.mark.parametrize("n", [63, 64, 65, 4096])
def test_a_server_with_room_for_the_largest_job_sees_the_whole_queue(n):
    """Best-Fit's "largest queued job that fits" when the server has room for
    every queued size: the bitset tree is asked for its greatest member below
    the number of ranks, a word boundary of its top level when that is 64 or
    4096. The kernel once answered "none" there (every start NaN)."""
    submit = [0.0] * n
    duration = [1.0 + (k % 7) for k in range(n)]
    demand = [[(1 + k % 13) / 64.0] for k in range(n)]
    capacity = [[1.0], [1.0]]
    for cls in CLASSES + VQS_CLASSES:
        ref = both(cls, submit, duration, demand, capacity)
        assert ref is not None and np.all(np.isfinite(ref.start))


@settings(max_examples=15, deadline=None)
@given(workloads(max_jobs=400, max_servers=80))
def test_bit_identical_many_jobs_and_servers(w):
    """Bitset trees of two levels (> 64 jobs) and skip lists of several levels."""
    submit, duration, demand, capacity, kw = w
    for cls in CLASSES:
        both(cls, submit, duration, demand, capacity, **kw)


def test_integer_epoch_until_and_sampling():
    # an int Δ makes the reference's departure epochs ints (math.ceil(...) * Δ): the same values
    for cls in CLASSES:
        r = both(cls, [0, 1, 1, 3], [2, 2, 1, 4], [0.5, 0.7, 0.5, 0.2], [1.0, 1.0], epoch=1, sample_every=2)
        assert r.horizon == (-0.0, 7) and type(r.horizon[1]) is int
        r = both(cls, [0, 1, 1, 3], [2, 2, 1, 4], [0.5, 0.7, 0.5, 0.2], [1.0], epoch=2, until=9)
        assert type(r.horizon[1]) is int and r.horizon[1] == 9
        r = both(cls, [0, 1, 1, 3], [2, 2, 1, 4], [0.5, 0.7, 0.5, 0.2], [1.0], epoch=None, until=-2)
        assert r.horizon == (-2, -2) and r.epochs == 0


def test_kernel_is_used_and_exact_fits():
    # 0.1 + 0.2 + 0.7 fills a server of capacity 1 only within FIT_TOL; three
    # equal servers: every placement is a tie between servers
    submit, duration = [0, 0, 0, 0, 0, 1], [2, 2, 2, 1, 1, 1]
    demand = [0.1, 0.2, 0.7, 0.3, 0.7, 0.1 + 0.2]
    for cls in CLASSES:
        r = both(cls, submit, duration, demand, [1.0, 1.0, 1.0])
        assert r is not None and not np.isnan(r.start).any()


# ---- VQS and VQS-BF: partition boundaries, equal submits, renewals -------------------------------------


def _boundary_sizes(J, extremes=True):
    """Sizes on the universal partition's boundaries for J (1/2, 2/3, 1/3,
    2^-m, ...) and one ulp either side, at and below 2^-J, sizes that sum to
    1 only up to rounding; with ``extremes`` also sizes a tolerance from 0 and
    1 (1e-9, 1 - 1e-9, and 1 + 1e-9, the largest the policies accept), on
    which the reference policies can overfill a server by a few ulps and the
    engine raises CapacityExceeded (the kernel then declines)."""
    out = []
    for _, hi in universal_partition(J):
        out += [hi, float(np.nextafter(hi, 0.0)), float(np.nextafter(hi, 2.0))]
    lowest = 2.0**-J
    out += [lowest, float(np.nextafter(lowest, 0.0)), lowest / 3, 0.0]
    out += [0.5, 2 / 3, 1 / 3, 0.25, 0.125, 0.1, 0.2, 0.3, 0.1 + 0.2, 0.4, 0.6, 0.7, 1.0]
    if extremes:
        out += [1e-9, 1 - 1e-9, 1.0 + 1e-9]
    return out


#: Capacities VQS and VQS-BF accept (|c - 1| <= FIT_TOL): the engine's free
#: capacity then differs from the policies' 1 in the last bits.
VQS_CAPACITIES = [1.0, 1.0, 0.1 + 0.2 + 0.7, 1 / 3 + 2 / 3, 1 - 5e-10, 1 + 5e-10]


@st.composite
def vqs_workloads(draw, max_jobs=40, max_servers=6):
    J = draw(st.sampled_from([None, None, 2, 3, 5]))
    sizes = _boundary_sizes(J or 4)
    n = draw(st.integers(1, max_jobs))
    if draw(st.booleans()):  # slotted, few distinct submits: bursts, many servers renewing in one epoch
        submit = sorted(draw(st.lists(st.integers(0, 6), min_size=n, max_size=n)))
        duration = draw(st.lists(st.integers(0, 6), min_size=n, max_size=n))
        epoch = draw(st.sampled_from([1.0, 1.0, 2.0, 1, None]))
    else:
        grid = st.sampled_from([0.0, 0.1, 0.2, 0.3, 0.1 + 0.2, 0.7, 1 / 3, 1.0, 1.1, 2.5])
        submit = sorted(draw(st.lists(grid, min_size=n, max_size=n)))
        duration = draw(st.lists(st.one_of(grid, st.floats(0, 3)), min_size=n, max_size=n))
        epoch = draw(st.sampled_from([None, None, 0.1, 0.5, 1 / 3]))
    demand = draw(
        st.lists(st.one_of(st.sampled_from(sizes), st.sampled_from(sizes), st.floats(0, 1)), min_size=n, max_size=n)
    )
    L = draw(st.integers(1, max_servers))
    if draw(st.booleans()):
        capacity = [1.0] * L
    else:
        capacity = draw(st.lists(st.sampled_from(VQS_CAPACITIES), min_size=L, max_size=L))
    return (
        submit,
        duration,
        fitting(demand, capacity),
        capacity,
        {"epoch": epoch, "params": None if J is None else {"J": J}, **engine_options(draw, n)},
    )


@settings(max_examples=150, deadline=None)
@given(vqs_workloads())
def test_vqs_bit_identical_on_ties(w):
    submit, duration, demand, capacity, kw = w
    for cls in VQS_CLASSES:
        both(cls, submit, duration, demand, capacity, **kw)


@settings(max_examples=15, deadline=None)
@given(vqs_workloads(max_jobs=400, max_servers=80))
def test_vqs_bit_identical_many_jobs_and_servers(w):
    """Bitset trees of two levels (> 64 servers or jobs), wakes of many servers."""
    submit, duration, demand, capacity, kw = w
    for cls in VQS_CLASSES:
        both(cls, submit, duration, demand, capacity, **kw)


def test_vqs_many_empty_servers_renew_in_one_epoch():
    # 70 empty servers and bursts of boundary sizes: every server renews in the
    # first epoch, each with Q as the earlier ones left it; equal durations
    # empty them all again at once, and they renew again in one epoch
    rng = np.random.default_rng(7)
    for J in (2, 4):
        sizes = np.array(_boundary_sizes(J, extremes=False))
        n = 600
        submit = np.repeat([0.0, 0.0, 5.0, 10.0, 10.0, 20.0], n // 6)
        duration = np.full(n, 5.0)
        demand = rng.choice(sizes, n)
        for cls in VQS_CLASSES:
            for L in (1, 7, 70):
                r = both(cls, submit, duration, demand, np.ones(L), params={"J": J}, sample_every=1.0)
                assert r is not None and r.started > 0


def test_vqs_hand_worked_scenarios_both_paths():
    """test_packing_vqs's rules by hand, on the engine (all jobs at t = 0)."""
    VQS, VQSBF = VQS_CLASSES
    # two empty servers renew in turn: server 0 takes 3e3 (the three 0.3), server 1 then e1 + e3
    r = both(VQS, [0] * 4, [5] * 4, [0.6, 0.3, 0.3, 0.3], [1.0, 1.0], params={"J": 2})
    assert r.server.tolist() == [1, 0, 0, 0] and r.start.tolist() == [0] * 4
    # head-of-line blocking: 0.2 does not fit the 0.1 left, the 0.05 behind it waits
    r = both(VQS, [0] * 5, [5] * 5, [0.3, 0.3, 0.3, 0.2, 0.05], [1.0], params={"J": 2})
    assert r.start.tolist() == [0, 0, 0, 5, 5]
    # five jobs of 0.2 fill a unit server
    r = both(VQS, [0] * 6, [3] * 6, [0.2] * 6, [1.0])
    assert r.start.tolist() == [0] * 5 + [3]
    # VQS-BF: no head-of-line blocking, largest first, ties to the earliest
    r = both(VQSBF, [0] * 6, [5] * 6, [0.2, 0.3, 0.05, 0.3, 0.3, 0.3], [1.0], params={"J": 2})
    assert r.start.tolist() == [5, 0, 0, 0, 0, 5]
    # VQS-BF rule (ii) then BF-S: 2e2 takes 0.45 and 0.4, then 0.1
    r = both(VQSBF, [0] * 4, [5] * 4, [0.45, 0.4, 0.35, 0.1], [1.0], params={"J": 3})
    assert r.start.tolist() == [0, 0, 5, 0]


def test_vqs_fig4_both_paths():
    """sweeps/packing-fig4.toml's workload (both panels, its highest
    intensity) at a small horizon, through the Engine on both paths."""
    import tomllib

    spec = tomllib.loads((Path(__file__).resolve().parents[1] / "sweeps" / "packing-fig4.toml").read_text())
    from schedlab.workloads.registry import workload_kind

    kind = workload_kind("packing")
    engine = get_engine("packing")
    system = dict(spec["system"], sample_every=100.0)
    for lo, hi in ((spec["workload"]["uniform_lo"], spec["workload"]["uniform_hi"]), (0.1, 0.9)):
        wl = {k: v for k, v in spec["workload"].items() if k != "kind"}
        wl.update(slots=3000, intensity=max(spec["workload"]["intensity"]), uniform_lo=lo, uniform_hi=hi)
        jobs = kind.build(np.random.default_rng(spec["seed"]), kind.complete(wl, "workload"), None)
        for name in VQS_FAST:
            runs = [engine.run(jobs, name, {}, system, path=p) for p in ENGINE_PATHS]
            assert_same_run(*runs)
            assert runs[0].summary["started"] > 0.9 * jobs.height


# ---- the engine tests' scenarios, on both paths --------------------------------------------------------

FIFOFF, BFJ, BFS, BFJS = CLASSES


def test_hand_worked_scenarios_both_paths():
    r = both(FIFOFF, [2, 2], [3, 1], [1.0, 1.0], [1.0])
    assert r.start.tolist() == [2.0, 5.0] and r.epochs == 3
    r = both(FIFOFF, [0.3, 0.4], [1.7, 1.0], [1.0, 1.0], [1.0], epoch=0.5)
    assert r.start.tolist() == [0.5, 2.5]
    r = both(FIFOFF, [0.3, 0.4], [1.7, 1.0], [1.0, 1.0], [1.0], epoch=None)
    assert r.start.tolist() == [0.3, 2.0]
    r = both(FIFOFF, [0, 1, 2], [4, 2, 1], [1.0, 0.5, 0.5], [1.0], sample_every=1.0)
    assert r.samples["running_jobs"].tolist() == [1, 1, 1, 1, 2, 1, 0]
    r = both(FIFOFF, [0, 0], [10, 1], [1.0, 1.0], [1.0], until=5.0)
    assert np.isnan(r.start[1]) and r.horizon == (0.0, 5.0)
    assert both(BFJ, [0], [1], [0.4], [1.0, 0.5, 0.5]).server.tolist() == [1]
    assert both(BFJ, [0, 0], [1, 1], [0.6, 0.4], [1.0, 0.6]).server.tolist() == [1, 0]
    assert both(BFS, [0, 0, 0, 0], [2, 2, 2, 2], [0.3, 0.5, 0.6, 0.5], [1.0]).start.tolist() == [0, 2, 0, 2]
    assert both(BFS, [0, 0, 0], [1, 1, 1], [0.2, 0.5, 0.5], [0.5, 0.5]).server.tolist() == [0, 0, 1]
    args = ([0, 1, 2], [10, 5, 5], [0.8, 0.5, 0.1], [1.0])
    assert both(FIFOFF, *args).start.tolist() == [0, 10, 10]
    assert both(BFJ, *args).start.tolist() == [0, 10, 2]
    assert both(BFJS, *args).start.tolist() == [0, 10, 2]
    r = both(BFJS, [0, 0, 1, 1], [3, 9, 1, 1], [0.9, 0.7, 0.4, 0.5], [1.0, 1.0])
    assert r.server.tolist() == [0, 1, 0, 0] and r.start.tolist() == [0, 0, 3, 3]
    # a job larger than every server could never run: refused up front (the kernel declines)
    for cls in CLASSES:
        assert packing_fast.simulate(kernel_id(cls), [0, 1, 1], [1, 1, 1], [1.5, 0.2, 0.2], [1.0]) is None
        with pytest.raises(ValueError, match=r"^job 0 has demand \[1.5\], which fits no server even when empty"):
            simulate_packing([0, 1, 1], [1, 1, 1], [1.5, 0.2, 0.2], [1.0], cls)
    # no epoch at all before `until`
    for cls in CLASSES:
        r = both(cls, [5.0], [1.0], [0.5], [1.0], until=2.0, sample_every=1.0)
        assert r.epochs == 0


def test_synthetic_workloads_both_paths():
    """Fig. 4 settings (and the deterministic-run test's workload) over several slots."""
    for seed, (lo, hi) in enumerate(((0.01, 0.19), (0.1, 0.9))):
        jobs = packing_workload(
            np.random.default_rng(seed),
            slots=3000,
            rate=0.95 * 5 / (100 * (lo + hi) / 2),
            uniform=(lo, hi),
            service="geometric",
            mean_service=100,
        )
        for cls in CLASSES:
            for epoch in (1.0, None):
                both(cls, jobs["submit"], jobs["duration"], jobs["demand"], np.ones(5), epoch=epoch, sample_every=100.0)
    jobs = packing_workload(np.random.default_rng(3), slots=2000, rate=0.2, uniform=(0.1, 0.9), mean_service=10)
    for cls in CLASSES:
        both(cls, jobs["submit"], jobs["duration"], jobs["demand"], np.ones(3))


def test_vii_a_examples_both_paths():
    jobs = packing_workload(
        np.random.default_rng(0), slots=50_000, rate=0.014, sizes=[0.4, 0.6], service="geometric", mean_service=100
    )
    both(BFJS, jobs["submit"], jobs["duration"], jobs["demand"], [1.0], sample_every=100.0, until=50_000)
    jobs = packing_workload(
        np.random.default_rng(0),
        slots=100_000,
        rate=0.0306,
        sizes=[2, 5],
        probs=[2 / 3, 1 / 3],
        service="fixed",
        mean_service=100,
    )
    for cls in CLASSES:  # a growing queue of two sizes: ties everywhere
        both(cls, jobs["submit"], jobs["duration"], jobs["demand"], [10.0], sample_every=100.0, until=100_000)


def test_vii_a_examples_vqs_both_paths():
    """§VII-A examples 1 and 2 (test_packing_vqs), shortened: VQS's queue
    grows on example 1, the normalised sizes 0.2 and 0.5 of example 2."""
    jobs = packing_workload(
        np.random.default_rng(1), slots=50_000, rate=0.014, sizes=[0.4, 0.6], service="geometric", mean_service=100
    )
    for cls in VQS_CLASSES:
        both(cls, jobs["submit"], jobs["duration"], jobs["demand"], [1.0], sample_every=100.0, until=50_000)
    jobs = packing_workload(
        np.random.default_rng(2),
        slots=50_000,
        rate=0.0306,
        sizes=[0.2, 0.5],
        probs=[2 / 3, 1 / 3],
        service="fixed",
        mean_service=100,
    )
    for cls in VQS_CLASSES:
        r = both(cls, jobs["submit"], jobs["duration"], jobs["demand"], [1.0], sample_every=100.0, until=50_000)
        assert r.started > 0.9 * len(jobs)


GOOGLE = Path(__file__).resolve().parents[2] / "shared" / "data" / "google-clusterdata-2011"


@pytest.mark.skipif(not GOOGLE.exists(), reason="the Google clusterdata-2011 prefix is not available")
def test_google_prefix_slice_both_paths():
    from schedlab.workloads.registry import workload_kind

    kind = workload_kind("trace")
    params = kind.complete(
        {"reader": "google", "path": str(GOOGLE), "reader_single_resource": True, "traffic": 0.625}, "workload"
    )
    jobs = kind.build(np.random.default_rng(0), params, kind.load_shared(params)).head(5_000)
    engine = get_engine("packing")
    system = {"servers": 100, "capacity": 1.0, "epoch": 0.1, "sample_every": 600.0}
    for name in FAST + VQS_FAST:
        assert_same_run(
            engine.run(jobs, name, {}, system, path="reference"), engine.run(jobs, name, {}, system, path="fast")
        )


# ---- the Engine switch ------------------------------------------------------------------------------------


def assert_same_run(a, b):
    assert list(a.jobs) == list(b.jobs)
    for k in a.jobs:
        x, y = np.asarray(a.jobs[k]), np.asarray(b.jobs[k])
        assert x.dtype == y.dtype and x.tobytes() == y.tobytes(), k
    sa = {k: _key(v) for k, v in a.summary.items() if k != "sim_seconds"}
    sb = {k: _key(v) for k, v in b.summary.items() if k != "sim_seconds"}
    assert sa == sb and list(a.summary) == list(b.summary)
    assert (a.series is None) == (b.series is None)
    if a.series is not None:
        assert list(a.series) == list(b.series)
        for k in a.series:
            assert a.series[k].tobytes() == b.series[k].tobytes(), k


def _table(seed=0, n=300, group=False):
    rng = np.random.default_rng(seed)
    cols = {
        "job_id": np.arange(n) + 100,
        "submit": np.sort(rng.integers(0, 60, n)).astype(float),
        "duration": rng.integers(1, 12, n).astype(float),
        "demand": rng.choice(SIZES[:12], n),
        "estimate": rng.uniform(1, 10, n),
    }
    if group:
        cols["group"] = rng.integers(0, 40, n)
    return pl.DataFrame(cols)


def test_engine_paths_agree():
    engine = get_engine("packing")
    assert engine.fast_path and "engines/packing/sim/fast" in engine.sources and "sim/common/jit.py" in engine.sources
    for system in (
        {"servers": 3, "epoch": 1.0, "sample_every": 5.0},
        {"servers": 4, "epoch": 0.0},
        {"servers": 2, "capacity": 2.0, "epoch": 0.5},
    ):
        for group in (False, True):
            jobs = _table(group=group)
            for name in FAST:
                runs = [engine.run(jobs, name, {}, system, path=p) for p in ENGINE_PATHS]
                assert_same_run(*runs)
                assert runs[1].summary["completed"] == jobs.height
                assert ("jct_mean" in runs[0].summary) == group


def test_engine_paths_agree_vqs():
    engine = get_engine("packing")
    for system in (
        {"servers": 3, "epoch": 1.0, "sample_every": 5.0},
        {"servers": 4, "epoch": 0.0},
        {"servers": 70, "epoch": 0.5},
    ):
        for group in (False, True):
            jobs = _table(group=group)
            for name in VQS_FAST:
                for params in ({}, {"J": 2}, {"J": 6}):
                    runs = [engine.run(jobs, name, params, system, path=p) for p in ENGINE_PATHS]
                    assert_same_run(*runs)
                    assert ("jct_mean" in runs[0].summary) == group


def test_run_table_path_and_until():
    jobs = _table(1)
    for cls in CLASSES:
        outs = [run_table(jobs, cls, path=p, servers=2, until=30) for p in ENGINE_PATHS]
        (ja, sa, _), (jb, sb, _) = outs
        for k in ja:
            assert np.asarray(ja[k]).tobytes() == np.asarray(jb[k]).tobytes(), k
        sa.pop("sim_seconds"), sb.pop("sim_seconds")
        assert {k: _key(v) for k, v in sa.items()} == {k: _key(v) for k, v in sb.items()}
    for cls in VQS_CLASSES:
        outs = [run_table(jobs, cls, path=p, servers=5, until=30, J=3) for p in ENGINE_PATHS]
        (ja, sa, _), (jb, sb, _) = outs
        for k in ja:
            assert np.asarray(ja[k]).tobytes() == np.asarray(jb[k]).tobytes(), k
        sa.pop("sim_seconds"), sb.pop("sim_seconds")
        assert {k: _key(v) for k, v in sa.items()} == {k: _key(v) for k, v in sb.items()}
    with pytest.raises(UserError, match="path"):
        run_table(jobs, BFJ, path="quick")


def test_user_subclass_and_params_run_on_the_reference(monkeypatch):
    class Mine(PACKING_POLICIES["BF-J/S"]):
        name = "mine"

    def refuse(*args, **kwargs):
        raise AssertionError("the kernel ran")

    monkeypatch.setattr(packing_fast, "_run", refuse)
    engine = get_engine("packing")
    jobs = _table(2, n=50)
    fast = engine.run(jobs, Mine, {}, {"servers": 2}, path="fast")
    ref = engine.run(jobs, "BF-J/S", {}, {"servers": 2}, path="reference")
    assert_same_run(fast, ref)  # same code, reached through the subclass on the reference
    assert kernel_id(Mine) is None
    with pytest.raises(AssertionError, match="the kernel ran"):
        engine.run(jobs, "BF-J/S", {}, {"servers": 2}, path="fast")
    # policy params: the reference, whose policies take none
    with pytest.raises(UserError, match="takes no parameters"):
        engine.run(jobs, "BF-J", {"J": 3}, {"servers": 2}, path="fast")
    assert packing_fast.simulate(kernel_id(BFJ), [0.0], [1.0], [0.5], [1.0], params={"J": 3}) is None
    # several resources: the reference's error
    two = pl.DataFrame({"job_id": [0], "submit": [0.0], "duration": [1.0], "cpu": [0.5], "mem": [0.2]})
    with pytest.raises(UserError, match="single-resource"):
        engine.run(two, "BF-S", {}, {"servers": 2}, path="fast")


def test_vqs_subclass_params_and_refused_clusters_as_on_the_reference(monkeypatch):
    VQS, VQSBF = VQS_CLASSES
    engine = get_engine("packing")
    jobs = _table(4, n=80)
    calls = []
    real_run = packing_fast._run
    monkeypatch.setattr(packing_fast, "_run", lambda *a: calls.append(a[0]) or real_run(*a))
    for cls in VQS_CLASSES:
        # the built-in with J (default or an int in 2..24) runs on the kernel
        for params in ({}, {"J": 3}, {"J": 24}):
            calls.clear()
            fast = engine.run(jobs, cls, params, {"servers": 3}, path="fast")
            assert calls == [packing_fast.kernel_for(kernel_id(cls))]
            assert_same_run(fast, engine.run(jobs, cls, params, {"servers": 3}, path="reference"))

        # a subclass runs on the reference: the same numbers through the same code
        class Mine(cls):
            name = "mine"

        calls.clear()
        assert kernel_id(Mine) is None
        assert_same_run(
            engine.run(jobs, Mine, {}, {"servers": 3}, path="fast"),
            engine.run(jobs, cls, {}, {"servers": 3}, path="reference"),
        )
        # a J the kernel does not take but the reference does (J > 24): the reference
        assert_same_run(
            engine.run(jobs, cls, {"J": 30}, {"servers": 3}, path="fast"),
            engine.run(jobs, cls, {"J": 30}, {"servers": 3}, path="reference"),
        )
        assert calls == []
        # bad params: the reference's UserError, on both paths
        for params in (
            {"J": 1},
            {"J": 2.0},
            {"J": True},
            {"J": "4"},
            {"J": np.int64(3)},
            {"bogus": 1},
            {"J": 3, "bogus": 1},
        ):
            assert packing_fast.simulate(kernel_id(cls), [0.0], [1.0], [0.5], [1.0], params=params) is None
            for path in ENGINE_PATHS:
                with pytest.raises(UserError, match="J|bogus"):
                    engine.run(jobs, cls, params, {"servers": 3}, path=path)
        # refused clusters: capacity != 1 (beyond FIT_TOL), several resources, a size > 1 + FIT_TOL
        for system, match in (
            ({"servers": 2, "capacity": 2.0}, "capacity"),
            ({"servers": 2, "capacity": 1 + 2e-9}, "capacity"),
            ({"servers": 2, "capacity": 0.5}, "capacity"),
        ):
            assert packing_fast.simulate(kernel_id(cls), [0.0], [1.0], [0.5], [system["capacity"]] * 2) is None
            for path in ENGINE_PATHS:
                with pytest.raises(UserError, match=match):
                    engine.run(jobs, cls, {}, system, path=path)
        two = pl.DataFrame({"job_id": [0], "submit": [0.0], "duration": [1.0], "cpu": [0.5], "mem": [0.2]})
        for path in ENGINE_PATHS:
            with pytest.raises(UserError, match="d = 2"):
                engine.run(two, cls, {}, {"servers": 2}, path=path)
        big = pl.DataFrame({"job_id": [0, 1], "submit": [0.0, 1.0], "duration": [1.0, 1.0], "demand": [0.5, 1 + 2e-9]})
        assert packing_fast.simulate(kernel_id(cls), [0.0, 1.0], [1.0, 1.0], [0.5, 1 + 2e-9], [1.0]) is None
        for path in ENGINE_PATHS:  # no server could hold it, whatever the policy: the engine refuses it first
            for system in ({"servers": 2}, {"servers": 2, "until": 0.5}):
                with pytest.raises(UserError, match=r"job_id 1 \(row 1\) has demand \[1.000000002\], which fits no"):
                    engine.run(big, cls, {}, system, path=path)
        assert calls == []


def test_declines_unusual_inputs():
    ok = ([0.0, 1.0], [1.0, 1.0], [0.5, 0.5], [1.0])
    assert packing_fast.simulate(kernel_id(BFJS), *ok) is not None
    declined = [
        ([1.0, 0.0], [1.0, 1.0], [0.5, 0.5], [1.0]),  # unsorted submits
        ([0.0, 1.0], [1.0, -1.0], [0.5, 0.5], [1.0]),  # negative duration
        ([0.0, math.nan], [1.0, 1.0], [0.5, 0.5], [1.0]),
        ([0.0, 1.0], [1.0, 1.0], [[0.5, 0.1], [0.5, 0.1]], [[1.0, 1.0]]),  # two resources
        ([], [], [], [1.0]),
        ([0.0, 1.0], [1.0, 1.0], [0.5, 0.5], [math.inf]),
    ]
    for args in declined:
        assert packing_fast.simulate(kernel_id(BFJS), *args) is None, args
    assert packing_fast.simulate(kernel_id(BFJS), *ok, epoch=-1.0) is None
    assert packing_fast.simulate(kernel_id(BFJS), *ok, group=[0]) is None  # the reference's ValueError
    assert packing_fast.simulate(kernel_id(PACKING_POLICIES["Tetris"]), *ok) is None
    for cls in VQS_CLASSES:
        both(cls, *ok)
    with pytest.raises(UserError, match="non-decreasing"):
        get_engine("packing").run(
            pl.DataFrame({"job_id": [0, 1], "submit": [1.0, 0.0], "duration": [1.0, 1.0], "demand": [0.5, 0.5]}),
            "BF-J",
            path="fast",
        )


def test_reference_and_user_runs_do_not_import_numba():
    code = textwrap.dedent("""
        import sys
        import polars as pl
        from schedlab.engines import get_engine
        from schedlab.engines.packing.policies import PACKING_POLICIES

        class Mine(PACKING_POLICIES["BF-J"]):
            pass

        class MyVQS(PACKING_POLICIES["VQS"]):
            pass

        jobs = pl.DataFrame({"job_id": [0, 1], "submit": [0.0, 0.0], "duration": [1.0, 2.0], "demand": [0.5, 0.7]})
        get_engine("packing").run(jobs, Mine, {}, {"servers": 2})
        get_engine("packing").run(jobs, "BF-J/S", {}, {"servers": 2}, path="reference")
        get_engine("packing").run(jobs, MyVQS, {}, {"servers": 2})
        get_engine("packing").run(jobs, "VQS", {}, {"servers": 2}, path="reference")
        get_engine("packing").run(jobs, "VQS-BF", {"J": 3}, {"servers": 2}, path="reference")
        class MyTetris(PACKING_POLICIES["Tetris"]):  # Tetris has a kernel now: a user's subclass has not
            pass

        get_engine("packing").run(jobs, MyTetris, {}, {"servers": 2})
        get_engine("packing").run(jobs, "Slots-Fair", {}, {"servers": 2}, path="reference")
        print([m for m in ("numba", "schedlab.engines.packing.sim.fast", "schedlab.engines.packing.sim.multi_fast")
               if m in sys.modules])
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
