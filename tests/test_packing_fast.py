"""The packing engine's compiled fast path (schedlab.sim.packing_fast):
bit-identity with the reference for FIFO-FF, BF-J, BF-S and BF-J/S on
workloads full of ties, the engine tests' scenarios on both paths, the
Engine-level switch, and what declines to the reference."""

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
from schedlab.errors import UserError
from schedlab.policies.packing import PACKING_POLICIES
from schedlab.sim import packing_fast
from schedlab.sim.packing import CapacityExceeded, run_table, simulate_packing
from schedlab.workloads.packing_synthetic import packing_workload

FAST = ("FIFO-FF", "BF-J", "BF-S", "BF-J/S")
CLASSES = [PACKING_POLICIES[name] for name in FAST]


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


def both(cls, submit, duration, demand, capacity, **kw):
    """Run the reference and the kernel; assert they agree to the bit (or
    that the kernel declined a run on which the reference raises)."""
    fast = packing_fast.simulate(cls, submit, duration, demand, capacity, **kw)
    if fast is None:  # MISFIT: the reference must reject a placement there
        with pytest.raises(CapacityExceeded):
            simulate_packing(submit, duration, demand, capacity, cls, **kw)
        return None
    ref = simulate_packing(submit, duration, demand, capacity, cls, **kw)
    assert_same_result(ref, fast)
    return ref


# ---- hypothesis: ties and coincidences --------------------------------------------------------------

#: Sizes that tie, sum exactly or nearly to 1 (0.1 + 0.2 != 0.3), or sit a
#: hair from the fit tolerance.
SIZES = [0.1, 0.2, 0.3, 0.1 + 0.2, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1 / 3, 2 / 3, 0.25, 0.75,
         1 - 1e-9, 1 - 2e-9, 1e-9, 0.0, 0.3 - 1e-9, 0.7 + 1e-9]
CAPACITIES = [1.0, 1.0, 1.0, 0.5, 0.7, 0.1 + 0.2 + 0.7, 1 / 3 + 2 / 3, 2.0]


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
    kw = {"epoch": epoch}
    if draw(st.booleans()):
        kw["sample_every"] = draw(st.sampled_from([1.0, 0.7, 0.1, 3.0, 2]))
    if draw(st.integers(0, 3)) == 0:
        kw["until"] = draw(st.sampled_from([0.0, 2.0, 3.5, 7, -1.0]))
    if draw(st.integers(0, 3)) == 0:
        kw["group"] = draw(st.lists(st.integers(0, 4), min_size=n, max_size=n))
    return submit, duration, demand, capacity, kw


@settings(max_examples=120, deadline=None)
@given(workloads())
def test_bit_identical_on_ties(w):
    submit, duration, demand, capacity, kw = w
    for cls in CLASSES:
        both(cls, submit, duration, demand, capacity, **kw)


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
    # a job larger than every server never runs (and blocks FIFO-FF's queue)
    for cls in CLASSES:
        both(cls, [0, 1, 1], [1, 1, 1], [1.5, 0.2, 0.2], [1.0])
    # no epoch at all before `until`
    for cls in CLASSES:
        r = both(cls, [5.0], [1.0], [0.5], [1.0], until=2.0, sample_every=1.0)
        assert r.epochs == 0


def test_synthetic_workloads_both_paths():
    """Fig. 4 settings (and the deterministic-run test's workload) over several slots."""
    for seed, (lo, hi) in enumerate(((0.01, 0.19), (0.1, 0.9))):
        jobs = packing_workload(np.random.default_rng(seed), slots=3000, rate=0.95 * 5 / (100 * (lo + hi) / 2),
                                uniform=(lo, hi), service="geometric", mean_service=100)
        for cls in CLASSES:
            for epoch in (1.0, None):
                both(cls, jobs["submit"], jobs["duration"], jobs["demand"], np.ones(5), epoch=epoch,
                     sample_every=100.0)
    jobs = packing_workload(np.random.default_rng(3), slots=2000, rate=0.2, uniform=(0.1, 0.9), mean_service=10)
    for cls in CLASSES:
        both(cls, jobs["submit"], jobs["duration"], jobs["demand"], np.ones(3))


def test_vii_a_examples_both_paths():
    jobs = packing_workload(np.random.default_rng(0), slots=50_000, rate=0.014, sizes=[0.4, 0.6],
                            service="geometric", mean_service=100)
    both(BFJS, jobs["submit"], jobs["duration"], jobs["demand"], [1.0], sample_every=100.0, until=50_000)
    jobs = packing_workload(np.random.default_rng(0), slots=100_000, rate=0.0306, sizes=[2, 5], probs=[2 / 3, 1 / 3],
                            service="fixed", mean_service=100)
    for cls in CLASSES:  # a growing queue of two sizes: ties everywhere
        both(cls, jobs["submit"], jobs["duration"], jobs["demand"], [10.0], sample_every=100.0, until=100_000)


GOOGLE = Path(__file__).resolve().parents[2] / "shared" / "data" / "google-clusterdata-2011"


@pytest.mark.skipif(not GOOGLE.exists(), reason="the Google clusterdata-2011 prefix is not available")
def test_google_prefix_slice_both_paths():
    from schedlab.workloads.registry import workload_kind

    kind = workload_kind("trace")
    params = kind.complete({"reader": "google", "path": str(GOOGLE), "reader_single_resource": True,
                            "traffic": 0.625}, "workload")
    jobs = kind.build(np.random.default_rng(0), params, kind.load_shared(params)).head(5_000)
    engine = get_engine("packing")
    system = {"servers": 100, "capacity": 1.0, "epoch": 0.1, "sample_every": 600.0}
    for name in FAST:
        assert_same_run(engine.run(jobs, name, {}, system, path="reference"),
                        engine.run(jobs, name, {}, system, path="fast"))


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
    assert engine.fast_path and "sim/packing_fast.py" in engine.sources and "sim/jit.py" in engine.sources
    for system in ({"servers": 3, "epoch": 1.0, "sample_every": 5.0}, {"servers": 4, "epoch": 0.0},
                   {"servers": 2, "capacity": 2.0, "epoch": 0.5}):
        for group in (False, True):
            jobs = _table(group=group)
            for name in FAST:
                runs = [engine.run(jobs, name, {}, system, path=p) for p in ENGINE_PATHS]
                assert_same_run(*runs)
                assert runs[1].summary["completed"] == jobs.height
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
    assert packing_fast.kernel_for(Mine) is None
    with pytest.raises(AssertionError, match="the kernel ran"):
        engine.run(jobs, "BF-J/S", {}, {"servers": 2}, path="fast")
    # policy params: the reference, whose policies take none
    with pytest.raises(UserError, match="takes no parameters"):
        engine.run(jobs, "BF-J", {"J": 3}, {"servers": 2}, path="fast")
    assert packing_fast.simulate(BFJ, [0.0], [1.0], [0.5], [1.0], params={"J": 3}) is None
    # several resources: the reference's error
    two = pl.DataFrame({"job_id": [0], "submit": [0.0], "duration": [1.0], "cpu": [0.5], "mem": [0.2]})
    with pytest.raises(UserError, match="single-resource"):
        engine.run(two, "BF-S", {}, {"servers": 2}, path="fast")


def test_declines_unusual_inputs():
    ok = ([0.0, 1.0], [1.0, 1.0], [0.5, 0.5], [1.0])
    assert packing_fast.simulate(BFJS, *ok) is not None
    declined = [
        ([1.0, 0.0], [1.0, 1.0], [0.5, 0.5], [1.0]),  # unsorted submits
        ([0.0, 1.0], [1.0, -1.0], [0.5, 0.5], [1.0]),  # negative duration
        ([0.0, math.nan], [1.0, 1.0], [0.5, 0.5], [1.0]),
        ([0.0, 1.0], [1.0, 1.0], [[0.5, 0.1], [0.5, 0.1]], [[1.0, 1.0]]),  # two resources
        ([], [], [], [1.0]),
        ([0.0, 1.0], [1.0, 1.0], [0.5, 0.5], [math.inf]),
    ]
    for args in declined:
        assert packing_fast.simulate(BFJS, *args) is None, args
    assert packing_fast.simulate(BFJS, *ok, epoch=-1.0) is None
    assert packing_fast.simulate(BFJS, *ok, group=[0]) is None  # the reference's ValueError
    assert packing_fast.simulate(PACKING_POLICIES["VQS"], *ok) is None
    with pytest.raises(UserError, match="non-decreasing"):
        get_engine("packing").run(pl.DataFrame({"job_id": [0, 1], "submit": [1.0, 0.0], "duration": [1.0, 1.0],
                                                "demand": [0.5, 0.5]}), "BF-J", path="fast")


def test_reference_and_user_runs_do_not_import_numba():
    code = textwrap.dedent("""
        import sys
        import polars as pl
        from schedlab.engines import get_engine
        from schedlab.policies.packing import PACKING_POLICIES

        class Mine(PACKING_POLICIES["BF-J"]):
            pass

        jobs = pl.DataFrame({"job_id": [0, 1], "submit": [0.0, 0.0], "duration": [1.0, 2.0], "demand": [0.5, 0.7]})
        get_engine("packing").run(jobs, Mine, {}, {"servers": 2})
        get_engine("packing").run(jobs, "BF-J/S", {}, {"servers": 2}, path="reference")
        get_engine("packing").run(jobs, "VQS", {}, {"servers": 2})
        print([m for m in ("numba", "schedlab.sim.packing_fast") if m in sys.modules])
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
