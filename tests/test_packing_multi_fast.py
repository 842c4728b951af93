"""The compiled Tetris and Slots-Fair (schedlab.engines.packing.sim.multi_fast):
bit-identity with the reference on tie-heavy multi-resource workloads with
multi-task jobs, the Tetris tests' scenarios on both paths, the Engine-level
switch (the kernel is really taken), and what declines to the reference."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedlab.engines import ENGINE_PATHS, get_engine
from schedlab.engines.packing import kernel_id
from schedlab.engines.packing.policies.tetris import SlotsFair, Tetris
from schedlab.engines.packing.sim import multi_fast as packing_multi_fast
from schedlab.engines.packing.sim.engine import PackingStalled, simulate_packing
from schedlab.errors import UserError
from tests.test_packing_fast import assert_same_result, assert_same_run, fitting, outcome
from tests.test_packing_tetris import SLIDES_CAP, SLIDES_DEMAND, SLIDES_GROUP, instances

CLASSES = (Tetris, SlotsFair)


def both(cls, submit, duration, demand, capacity, params=None, **kw):
    """Run the reference and the kernel; assert the kernel ran and the two
    agree to the bit, or raise the same PackingStalled. Returns the
    reference's result (None for a stall)."""
    fast = outcome(
        lambda: packing_multi_fast.simulate(
            kernel_id(cls), cls, submit, duration, demand, capacity, params=params, **kw
        )
    )
    assert fast is not None, "the kernel declined"
    factory = (lambda cluster: cls(cluster, **params)) if params else cls
    ref = outcome(lambda: simulate_packing(submit, duration, demand, capacity, factory, **kw))
    if isinstance(ref, str) or isinstance(fast, str):
        assert cls is SlotsFair and ref == fast  # the same message from the shared finish_result
        return None
    assert_same_result(ref, fast)
    return ref


# ---- hypothesis: ties and coincidences ------------------------------------------------------------------

#: Per-resource demands that tie, fill a unit capacity exactly or only up to
#: rounding (0.1 + 0.2 + 0.7), sit a hair from the fit tolerance, or are 0.
PARTS = [0.0, 0.1, 0.2, 0.3, 0.1 + 0.2, 0.25, 0.5, 0.7, 1 / 3, 2 / 3, 1.0, 1 - 1e-9, 1e-9, 0.75]
#: Capacities per resource: equal ones (ties between servers), and sums that are 1 only up to rounding.
CAPS = [1.0, 1.0, 1.0, 0.1 + 0.2 + 0.7, 1 / 3 + 2 / 3, 2.0, 0.5]


def tetris_params(draw):
    params = {}
    if draw(st.booleans()):
        params["fairness"] = draw(st.sampled_from([1e-6, 0.3, 0.5, 0.75, 1.0, 1]))
    if draw(st.booleans()):
        params["epsilon"] = draw(st.sampled_from([0.0, 0, 1.0, 2.5, 1e-9]))
    return params or None


def slots_params(draw, d):
    choice = draw(st.sampled_from(["default", "scalar", "vector", "none"]))
    if choice == "scalar":
        return {"slot": draw(st.sampled_from([0.25, 1 / 3, 0.1, 0.5]))}
    if choice == "vector":
        return {"slot": [draw(st.sampled_from([0.25, 1 / 3, 0.1, 0.5, 0.2])) for _ in range(d)]}
    return None


@st.composite
def workloads(draw, max_tasks=40, max_servers=4, max_groups=6):
    n = draw(st.integers(1, max_tasks))
    d = draw(st.sampled_from([1, 2, 2, 3]))
    if draw(st.booleans()):  # slotted: integer times, many equal submits and durations
        submit = sorted(draw(st.lists(st.integers(0, 8), min_size=n, max_size=n)))
        duration = draw(st.lists(st.integers(0, 4), min_size=n, max_size=n))
        epoch = draw(st.sampled_from([1.0, 1.0, 2.0, 1, None]))
    else:
        grid = st.sampled_from([0.0, 0.1, 0.2, 0.3, 0.1 + 0.2, 0.7, 1 / 3, 1.0, 2.5])
        submit = sorted(draw(st.lists(grid, min_size=n, max_size=n)))
        duration = draw(st.lists(st.one_of(grid, st.floats(0, 3)), min_size=n, max_size=n))
        epoch = draw(st.sampled_from([None, None, 0.1, 0.5, 1 / 3]))
    shapes = draw(st.lists(st.lists(st.sampled_from(PARTS), min_size=d, max_size=d), min_size=1, max_size=6))
    row = st.one_of(
        st.sampled_from(shapes),
        st.sampled_from(shapes),
        st.lists(st.one_of(st.sampled_from(PARTS), st.floats(0, 1)), min_size=d, max_size=d),
    )
    demand = draw(st.lists(row, min_size=n, max_size=n))
    L = draw(st.integers(1, max_servers))
    if draw(st.booleans()):
        capacity = [[1.0] * d] * L
    else:
        capacity = [draw(st.lists(st.sampled_from(CAPS), min_size=d, max_size=d)) for _ in range(L)]
    demand = fitting(demand, capacity)
    kw = {"epoch": epoch}
    if draw(st.booleans()):
        kw["group"] = draw(st.lists(st.integers(-2, max_groups), min_size=n, max_size=n))
    if draw(st.integers(0, 2)) == 0:
        kw["estimate"] = draw(st.lists(st.sampled_from([0.0, 1.0, 2.0, 0.5, 1 / 3]), min_size=n, max_size=n))
    if draw(st.booleans()):
        kw["sample_every"] = draw(st.sampled_from([1.0, 0.7, 3.0, 2]))
    if draw(st.integers(0, 3)) == 0:
        kw["until"] = draw(st.sampled_from([0.0, 2.0, 3.5, 7, -1.0]))
    return submit, duration, demand, capacity, {"tetris": tetris_params(draw), "slots": slots_params(draw, d)}, kw


def _run_both(w):
    submit, duration, demand, capacity, params, kw = w
    both(Tetris, submit, duration, demand, capacity, params["tetris"], **kw)
    try:
        SlotsFair(_cluster(demand, capacity), **(params["slots"] or {}))
    except UserError:  # a slot larger than every server: the reference's error, on both paths
        assert (
            packing_multi_fast.simulate(
                kernel_id(SlotsFair), SlotsFair, submit, duration, demand, capacity, params=params["slots"], **kw
            )
            is None
        )
        return
    both(SlotsFair, submit, duration, demand, capacity, params["slots"], **kw)


def _cluster(demand, capacity):
    from schedlab.engines.packing.sim.engine import Cluster

    return Cluster(np.array(capacity, dtype=float), np.array(demand, dtype=float))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workloads())
def test_bit_identical_on_ties(w):
    _run_both(w)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workloads(max_tasks=400, max_servers=40, max_groups=30))
def test_bit_identical_many_tasks_and_servers(w):
    """More than 16 live shapes (the alignment pool grows), trees of several levels."""
    _run_both(w)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    inst=instances(),
    f=st.sampled_from([1e-6, 0.3, 0.75, 1.0]),
    m=st.sampled_from([0.0, 1.0, 3.0]),
    slot=st.sampled_from([None, 1.0, 2.0]),
    epoch=st.sampled_from([1.0, None]),
)
def test_tetris_test_instances_both_paths(inst, f, m, slot, epoch):
    """The instances of tests/test_packing_tetris.py (integer demands up to the capacity, groups)."""
    submit, duration, demand, cap, group = inst
    both(Tetris, submit, duration, demand, cap, {"fairness": f, "epsilon": m}, group=group, epoch=epoch)
    try:
        SlotsFair(_cluster(demand, cap), slot=slot)
    except UserError:
        return
    both(SlotsFair, submit, duration, demand, cap, {"slot": slot}, group=group, epoch=epoch)


def test_slides_example_both_paths():
    n = len(SLIDES_DEMAND)
    for cls, params in (
        (Tetris, None),
        (Tetris, {"fairness": 1e-6}),
        (Tetris, {"fairness": 1.0, "epsilon": 0.0}),
        (SlotsFair, None),
    ):
        r = both(cls, np.zeros(n), np.ones(n), SLIDES_DEMAND, SLIDES_CAP, params, group=SLIDES_GROUP)
        assert r.completed == n


def test_integer_epoch_until_and_sampling():
    demand = [[0.5, 0.2], [0.7, 0.7], [0.5, 0.3], [0.2, 0.9]]
    for cls in CLASSES:
        r = both(
            cls,
            [0, 1, 1, 3],
            [2, 2, 1, 4],
            demand,
            [[1.0, 1.0], [1.0, 1.0]],
            epoch=1,
            sample_every=2,
            group=[3, 3, 1, 3],
        )
        assert type(r.horizon[1]) is int and r.samples["queue_resource"].shape[1] == 2
        r = both(cls, [0, 1, 1, 3], [2, 2, 1, 4], demand, [[1.0, 1.0]], epoch=2, until=9)
        assert type(r.horizon[1]) is int and r.horizon[1] == 9
        r = both(cls, [0, 1, 1, 3], [2, 2, 1, 4], demand, [[1.0, 1.0]], epoch=None, until=-2)
        assert r.horizon == (-2, -2) and r.epochs == 0


# ---- declines ---------------------------------------------------------------------------------------------


def test_declines_to_the_reference():
    sub, dur, cap = [0.0, 0.0, 1.0], [1.0, 2.0, 1.0], [[1.0, 1.0]]
    # a -0.0 demand would make two bit-different rows one shape: Tetris declines, Slots-Fair takes it
    neg = [[-0.0, 0.5], [0.0, 0.5], [0.5, 0.5]]
    assert packing_multi_fast.simulate(kernel_id(Tetris), Tetris, sub, dur, neg, cap) is None
    both(SlotsFair, sub, dur, neg, cap)
    # parameters the policies refuse: the kernel declines, the reference raises
    for cls, params in (
        (Tetris, {"fairness": 0.0}),
        (Tetris, {"nope": 1}),
        (SlotsFair, {"slot": 5.0}),
        (SlotsFair, {"slot": [0.5, 0.5, 0.5]}),
    ):
        assert packing_multi_fast.simulate(kernel_id(cls), cls, sub, dur, [[0.5, 0.5]] * 3, cap, params=params) is None
        with pytest.raises(UserError):
            simulate_packing(sub, dur, [[0.5, 0.5]] * 3, cap, lambda c, cls=cls, params=params: cls(c, **params))
    # bad inputs and a subclass
    assert packing_multi_fast.simulate(kernel_id(Tetris), Tetris, [1.0, 0.0], [1.0, 1.0], [[0.5, 0.5]] * 2, cap) is None
    assert packing_multi_fast.simulate(kernel_id(Tetris), Tetris, [], [], np.zeros((0, 2)), cap) is None

    class Mine(Tetris):
        name = "mine"

    assert kernel_id(Mine) is None and packing_multi_fast.simulate(kernel_id(Mine), Mine, sub, dur, neg, cap) is None


def test_row_sum_order_is_checked():
    """Tetris's kernel runs only for a d whose numpy row sums it reproduces; then to the bit."""
    rng = np.random.default_rng(3)
    for d in (1, 2, 3, 5, 8, 12):
        demand = rng.choice([0.1, 0.2, 0.3, 1 / 3, 0.7], (30, d)) * rng.choice([1.0, 1e-8, 1e8], (30, d))
        cap = np.full((3, d), 1e8)
        fast = packing_multi_fast.simulate(kernel_id(Tetris), Tetris, np.zeros(30), np.ones(30), demand, cap)
        if packing_multi_fast._row_sums_in_order(d):
            assert_same_result(simulate_packing(np.zeros(30), np.ones(30), demand, cap, Tetris), fast)
        else:
            assert fast is None
    assert packing_multi_fast._row_sums_in_order(2)  # the Google trace's cpu, mem


# ---- the Engine switch ------------------------------------------------------------------------------------


def _table(seed=0, n=300):
    rng = np.random.default_rng(seed)
    return pl.DataFrame(
        {
            "job_id": np.arange(n) + 100,
            "submit": np.sort(rng.integers(0, 60, n)).astype(float),
            "duration": rng.integers(1, 12, n).astype(float),
            "cpu": rng.choice([0.1, 0.2, 0.3, 0.5, 1.0], n),
            "mem": rng.choice([0.1, 0.25, 0.5, 0.1 + 0.2, 1.0], n),
            "group": rng.integers(0, 40, n),
            "estimate": rng.uniform(1, 10, n),
        }
    )


def test_engine_paths_agree_and_the_kernel_runs(monkeypatch):
    engine = get_engine("packing")
    assert {
        "engines/packing/sim/multi_fast",
        "engines/packing/sim/tetris_fast.py",
        "engines/packing/sim/fast_io.py",
    } <= set(engine.sources)
    jobs = _table()
    for system in (
        {"servers": 3, "epoch": 1.0, "sample_every": 5.0},
        {"servers": 4, "epoch": 0.0},
        {"servers": 2, "capacity": 2.0, "epoch": 0.5},
    ):
        for name, params in (
            ("Tetris", {}),
            ("Tetris", {"fairness": 0.3, "epsilon": 2.0}),
            ("Slots-Fair", {}),
            ("Slots-Fair", {"slot": [0.25, 0.5]}),
        ):
            if name == "Slots-Fair" and params and system.get("capacity", 1.0) == 1.0:
                # a task needing more slots of [0.25, 0.5] than a server has (min(4, 2)): never placed
                for p in ENGINE_PATHS:
                    with pytest.raises(PackingStalled, match=r"^policy 'Slots-Fair': t="):
                        engine.run(jobs, name, params, system, path=p)
                continue
            runs = [engine.run(jobs, name, params, system, path=p) for p in ENGINE_PATHS]
            assert_same_run(*runs)
            assert "jct_mean" in runs[0].summary
            assert runs[0].summary["completed"] == jobs.height
    calls = []
    real = packing_multi_fast._run

    def counting(*args, **kwargs):
        calls.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(packing_multi_fast, "_run", counting)
    engine.run(jobs, "Tetris", {}, {"servers": 3}, path="reference")
    engine.run(jobs, "Slots-Fair", {}, {"servers": 3}, path="reference")
    assert calls == []
    engine.run(jobs, "Tetris", {}, {"servers": 3}, path="fast")
    engine.run(jobs, "Slots-Fair", {}, {"servers": 3}, path="fast")
    assert calls == [packing_multi_fast.TETRIS, packing_multi_fast.SLOTS]


def test_user_subclass_and_bad_params_as_on_the_reference(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the kernel ran")

    monkeypatch.setattr(packing_multi_fast, "_run", refuse)
    engine = get_engine("packing")
    jobs = _table(2, n=60)

    class Mine(Tetris):
        name = "mine"

    assert_same_run(
        engine.run(jobs, Mine, {}, {"servers": 2}, path="fast"),
        engine.run(jobs, "Tetris", {}, {"servers": 2}, path="reference"),
    )
    for path in ENGINE_PATHS:
        with pytest.raises(UserError, match="fairness"):
            engine.run(jobs, "Tetris", {"fairness": 2.0}, {"servers": 2}, path=path)
        with pytest.raises(UserError, match="slot"):
            engine.run(jobs, "Slots-Fair", {"slot": [9.0, 9.0]}, {"servers": 2}, path=path)


GOOGLE = Path(__file__).resolve().parents[2] / "shared" / "data" / "google-clusterdata-2011"


@pytest.mark.skipif(not GOOGLE.exists(), reason="the Google clusterdata-2011 prefix is not available")
def test_google_prefix_slice_grouped_both_paths():
    """The Tetris pipelines' setting: tasks grouped into jobs, cpu and mem."""
    from schedlab.workloads.registry import workload_kind

    kind = workload_kind("trace")
    params = kind.complete({"reader": "google", "path": str(GOOGLE), "group_column": "google_job_id"}, "workload")
    jobs = kind.build(np.random.default_rng(0), params, kind.load_shared(params)).head(3_000)
    assert {"cpu", "mem", "group"} <= set(jobs.columns)
    engine = get_engine("packing")
    system = {"servers": 10, "capacity": 1.0, "epoch": 1.0, "sample_every": 600.0}
    for name in ("Tetris", "Slots-Fair"):
        a = engine.run(jobs, name, {}, system, path="reference")
        b = engine.run(jobs, name, {}, system, path="fast")
        assert_same_run(a, b)
        assert a.summary["completed"] > 0


def test_slots_fair_huge_slot_counts_decline():
    """Slot counts past 2^52 would not be exact in the kernel's floats: the reference runs."""
    sub, dur, dem, cap = [0.0, 0.0], [1.0, 1.0], [[0.5, 0.5], [1e-17, 0.5]], [[1.0, 1.0]]
    params = {"slot": [1e-17, 1e-17]}
    assert packing_multi_fast.simulate(kernel_id(SlotsFair), SlotsFair, sub, dur, dem, cap, params=params) is None
    both(SlotsFair, sub, dur, dem, cap, {"slot": [0.25, 1.0]})
