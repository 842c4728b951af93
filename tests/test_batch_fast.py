"""The batch engine's compiled fast path (schedlab.engines.batch.sim.fast) against the
reference (schedlab.engines.batch.sim.engine.simulate_batch with the Python FCFS and EASY).

The claim is bit-identity: the kernels give the reference's start and end
times to the last bit and the same number of scheduling passes. So every
comparison here is exact equality (``tolist() ==``), never a tolerance.
Inputs are drawn to provoke ties: many equal submits (in and out of order),
equal ends, runtime 0 (a second pass at the same instant), jobs outliving
their requested time, requested times far from runtimes, needs equal to the
capacity, values on grids where sums coincide only up to rounding (1/10),
arbitrary floats, and both machine models through the engine. The tests of
tests/test_batch.py that go through ``run_table`` also run on both paths;
speed is measured in benchmarks/batch_fast.py, never here.
"""

from __future__ import annotations

import math
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedlab.engines import batch as batch_engine
from schedlab.engines import get_engine
from schedlab.engines.batch import kernel_id
from schedlab.engines.batch.policies import BATCH_POLICIES, EASY, FCFS
from schedlab.engines.batch.policies import priority as prio
from schedlab.engines.batch.policies.priority import PRIORITY_POLICIES, PriorityPolicy
from schedlab.engines.batch.sim import engine as batch
from schedlab.engines.batch.sim import fast as batch_fast
from schedlab.engines.batch.sim.engine import simulate_batch, units_needed
from schedlab.errors import UserError
from tests.conftest import run_batch_table

HPC2N = Path(__file__).resolve().parents[2] / "shared" / "data" / "pwa-swf" / "HPC2N-2002-2.2-cln.swf.gz"
POLICIES = sorted(BATCH_POLICIES)
#: FCFS and EASY get their own hypothesis runs; the 14 priority policies share
#: one kernel and one run that draws the policy with the workload.
OWN_KERNELS = ["EASY", "FCFS"]
PRIORITY = sorted(cls.name for cls in PRIORITY_POLICIES)


def assert_identical(name, submit, runtime, requested, need, capacity):
    cls = BATCH_POLICIES[name]
    ref = simulate_batch(submit, runtime, requested, need, capacity, cls)
    out = batch_fast.simulate(kernel_id(cls), submit, runtime, requested, need, capacity)
    assert out is not None, f"{name}: the fast path declined this workload"
    start, end, passes = out
    where = (
        f"{name}: submit={list(submit)}, runtime={list(runtime)}, requested={list(requested)}, "
        f"need={list(need)}, capacity={capacity}"
    )
    assert start.tolist() == ref.start.tolist(), where
    assert end.tolist() == ref.end.tolist(), where
    assert passes == ref.events, where


# ---- workloads ---------------------------------------------------------------------------


@st.composite
def tie_workloads(draw, max_jobs=40):
    """Few distinct values: many jobs submitted at one instant, equal ends,
    runtime 0, requested below the runtime (over-running jobs) or far above
    it, needs equal to the capacity. Submits are in order or shuffled (the
    engine orders arrivals by a stable argsort)."""
    n = draw(st.integers(1, max_jobs))
    capacity = draw(st.integers(1, 8))
    den = draw(st.sampled_from([1, 4, 10]))
    submit = (
        np.array(draw(st.lists(st.sampled_from([0, 0, 0, 1, 2, 3, 5, 8]), min_size=n, max_size=n)), dtype=float) / den
    )
    if draw(st.booleans()):
        submit = np.sort(submit)
    runtime = np.array(
        draw(st.lists(st.sampled_from([0.0, 0.0, 0.1, 0.2, 0.3, 0.5, 1.0, 2.0, 3.0]), min_size=n, max_size=n))
    )
    mode = draw(st.sampled_from(["exact", "factor", "grid", "far"]))
    if mode == "exact":
        requested = np.where(runtime > 0, runtime, 0.1)
    elif mode == "factor":  # below (over-running jobs) or above the runtime
        factor = np.array(draw(st.lists(st.sampled_from([0.3, 0.5, 1.0, 1.5, 3.0]), min_size=n, max_size=n)))
        requested = np.where(runtime > 0, runtime * factor, 0.2)
    elif mode == "grid":
        requested = np.array(draw(st.lists(st.sampled_from([0.1, 0.2, 0.3, 0.5, 1.0, 2.0]), min_size=n, max_size=n)))
    else:  # far from the runtime
        requested = np.array(draw(st.lists(st.sampled_from([0.01, 100.0, 1e4]), min_size=n, max_size=n)))
    need = np.array(
        draw(st.lists(st.one_of(st.just(capacity), st.integers(1, capacity)), min_size=n, max_size=n)), dtype=np.int64
    )
    return submit, runtime, requested, need, capacity


@st.composite
def float_workloads(draw, max_jobs=30):
    """Arbitrary floats (values one ulp apart included), some zero gaps and zero runtimes."""
    n = draw(st.integers(1, max_jobs))
    capacity = draw(st.integers(1, 16))
    gaps = draw(st.lists(st.one_of(st.just(0.0), st.floats(0.0, 50.0)), min_size=n, max_size=n))
    runtime = np.array(draw(st.lists(st.one_of(st.just(0.0), st.floats(0.0, 100.0)), min_size=n, max_size=n)))
    requested = np.array(draw(st.lists(st.floats(1e-3, 200.0), min_size=n, max_size=n)))
    need = np.array(draw(st.lists(st.integers(1, capacity), min_size=n, max_size=n)), dtype=np.int64)
    return np.cumsum(gaps), runtime, requested, need, capacity


@pytest.mark.parametrize("policy", OWN_KERNELS)
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(w=st.one_of(tie_workloads(), float_workloads()))
def test_fast_path_is_bit_identical_on_random_workloads(policy, w):
    assert_identical(policy, *w)


@settings(max_examples=1200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(policy=st.sampled_from(PRIORITY), w=st.one_of(tie_workloads(), float_workloads()))
def test_priority_kernel_is_bit_identical_on_random_workloads(policy, w):
    assert_identical(policy, *w)


class _Constant(PriorityPolicy):
    name = "constant"


class _ConstantEASY(PriorityPolicy):
    name = "constant+EASY"
    backfill = True


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(w=st.one_of(tie_workloads(), float_workloads()))
def test_a_constant_key_is_fcfs_and_easy(w):
    """Every job of equal priority: the committed head is the queue's head, so
    the priority rule is FCFS, and with backfilling EASY, start for start."""
    for mine, theirs in ((_Constant, FCFS), (_ConstantEASY, EASY)):
        a = simulate_batch(*w, mine)
        b = simulate_batch(*w, theirs)
        assert a.start.tolist() == b.start.tolist() and a.events == b.events


def test_priority_keys_constants_agree_with_the_kernel():
    assert (batch_fast.UNICEP_EPS, batch_fast.F_SUBMIT_FLOOR) == (prio.UNICEP_EPS, prio.F_SUBMIT_FLOOR)
    assert all(batch_fast.kernel_for(kernel_id(cls)) is batch_fast._priority for cls in PRIORITY_POLICIES)
    assert len({(cls.kind, cls.backfill) for cls in PRIORITY_POLICIES}) == len(PRIORITY_POLICIES)


@pytest.mark.parametrize("policy", POLICIES)
def test_fast_path_on_hand_picked_coincidences(policy):
    # 0.1 + 0.2 != 0.3: the end of a job started at 0.1 with runtime 0.2 comes
    # one ulp after a submit at 0.3 (two instants, not one).
    assert_identical(
        policy,
        np.array([0.0, 0.1, 0.3, 0.3]),
        np.array([0.1, 0.2, 1.0, 0.0]),
        np.array([0.1, 0.2, 1.0, 0.5]),
        np.array([2, 2, 2, 1]),
        2,
    )
    # every job at once, all needing the whole machine, runtimes 0 and not
    assert_identical(policy, np.zeros(6), np.array([0.0, 1.0, 0.0, 0.0, 2.0, 0.0]), np.ones(6), np.full(6, 3), 3)
    # a head behind an over-running job (requested end in the past: shadow = now)
    assert_identical(
        policy,
        np.array([0.0, 1.0, 6.0, 6.0]),
        np.array([10.0, 10.0, 2.0, 0.0]),
        np.array([5.0, 10.0, 2.0, 1.0]),
        np.array([3, 4, 1, 1]),
        4,
    )
    # shuffled submits with ties: arrivals in stable order
    assert_identical(
        policy,
        np.array([3.0, 0.0, 3.0, 0.0, 1.0]),
        np.array([1.0, 4.0, 1.0, 4.0, 2.0]),
        np.array([2.0, 4.0, 1.0, 8.0, 2.0]),
        np.array([1, 2, 2, 1, 3]),
        3,
    )


# ---- through the engine: every number of the summary -----------------------------------------


def _table(w, seed=0):
    submit, runtime, requested, need, _ = w
    n = len(submit)
    rng = np.random.default_rng(seed)
    return pl.DataFrame(
        {
            "job_id": np.arange(1000, 1000 + n),
            "submit": submit,
            "runtime": runtime,
            "procs": need,
            "requested_time": requested,
            "cpu_need": rng.choice([0.25, 0.5, 1.0], n),
        }
    )


def _both(jobs, policy, system):
    out = {}
    for path in ("reference", "fast"):
        res = get_engine("batch").run(jobs, policy, None, system, path=path)
        out[path] = res
    ref, fast = out["reference"], out["fast"]
    assert set(ref.jobs) == set(fast.jobs)
    for col in ref.jobs:
        assert np.asarray(fast.jobs[col]).tolist() == np.asarray(ref.jobs[col]).tolist(), col
    drop = ("sim_seconds", "bound_seconds")
    s_ref = {k: v for k, v in ref.summary.items() if k not in drop}
    s_fast = {k: v for k, v in fast.summary.items() if k not in drop}
    assert s_fast.keys() == s_ref.keys()
    for k in s_ref:  # NaN (e.g. no underutilization) equals NaN
        assert s_fast[k] == s_ref[k] or (math.isnan(s_fast[k]) and math.isnan(s_ref[k])), k
    return ref


@pytest.mark.parametrize("policy", [*OWN_KERNELS, "priority"])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(w=tie_workloads(max_jobs=25), model=st.sampled_from(["procs", "nodes"]), drawn=st.sampled_from(PRIORITY))
def test_engine_summary_is_identical_on_both_paths(policy, w, model, drawn):
    policy = drawn if policy == "priority" else policy
    capacity = w[4]
    if model == "procs":
        system = {"model": "procs", "procs": capacity}
    else:  # the table's procs are tasks; two per node
        system = {"model": "nodes", "nodes": capacity, "tasks_per_node": 2}
    jobs = _table(w)
    if model == "nodes":
        jobs = jobs.with_columns(pl.col("procs") * 2 - (pl.col("procs") % 2), pl.lit(0.5).alias("cpu_need"))
    _both(jobs, policy, system)


@pytest.mark.parametrize("policy", POLICIES)
def test_engine_with_bound_oversize_drop_and_nodes(policy):
    w = (
        np.array([0.0, 0.0, 1.0, 1.0, 2.5, 4.0]),
        np.array([3.0, 0.5, 2.0, 20.0, 1.0, 5.0]),
        np.array([5.0, 1.0, 1.0, 25.0, 1.0, 30.0]),
        np.array([2, 4, 1, 3, 9, 2]),
        4,
    )
    jobs = _table(w, seed=1)
    s = _both(jobs, policy, {"model": "procs", "procs": 4, "oversize": "drop", "bound": True}).summary
    assert s["dropped_oversize"] == 1.0 and math.isfinite(s["stretch_lower_bound"])
    _both(jobs, policy, {"model": "nodes", "nodes": 3, "tasks_per_node": 3, "cpu_need": 0.25, "oversize": "drop"})


# ---- when the fast path is not used ---------------------------------------------------------


class MyEASY(EASY):
    """A user's subclass: it may change anything, so it runs on the reference."""


class _Spy:
    """Counts the reference runs run_table builds (``reference_run``, the
    ``BatchRun`` that ``start_instance`` hands out too; patched into
    schedlab.engines.batch.sim.engine)."""

    def __init__(self, monkeypatch):
        self.calls = 0
        reference = batch.reference_run

        def spy(*args, **kwargs):
            self.calls += 1
            return reference(*args, **kwargs)

        monkeypatch.setattr(batch, "reference_run", spy)


def test_kernel_for_matches_by_identity():
    assert batch_fast.kernel_for(kernel_id(FCFS)) is batch_fast._fcfs
    assert batch_fast.kernel_for(kernel_id(EASY)) is batch_fast._easy
    assert kernel_id(MyEASY) is None and batch_fast.kernel_for(None) is None
    assert batch_fast.simulate(None, np.zeros(2), np.ones(2), np.ones(2), np.ones(2, dtype=np.int64), 2) is None


def test_user_subclass_and_params_run_on_the_reference(monkeypatch):
    w = (
        np.array([0.0, 1.0, 2.0, 3.0]),
        np.array([10.0, 10.0, 100.0, 5.0]),
        np.array([10.0, 10.0, 100.0, 5.0]),
        np.array([2, 4, 2, 2]),
        4,
    )
    jobs = _table(w)
    system = dict(model="procs", procs=4)
    spy = _Spy(monkeypatch)
    fast, _ = batch_engine.run_table(jobs, EASY, path="fast", **system)
    assert spy.calls == 0  # the built-in itself: the kernel
    mine, _ = batch_engine.run_table(jobs, MyEASY, path="fast", **system)
    assert spy.calls == 1
    recorded, _ = batch_engine.run_table(jobs, EASY, path="fast", record_reservations=True, **system)
    assert spy.calls == 2
    assert mine["start"].tolist() == fast["start"].tolist() == recorded["start"].tolist() == [0.0, 10.0, 20.0, 3.0]
    assert batch_fast.simulate("EASY", *w, params={"record_reservations": True}) is None


@pytest.mark.parametrize(
    "bad",
    [
        "nan_submit",
        "inf_runtime",
        "negative_runtime",
        "negative_submit",
        "zero_requested",
        "need_too_big",
        "need_zero",
        "no_jobs",
        "int_submit",
    ],
)
def test_fast_path_declines_unusual_inputs(bad):
    submit, runtime, requested = np.array([0.0, 1.0]), np.array([1.0, 2.0]), np.array([1.0, 2.0])
    need, capacity = np.array([1, 2], dtype=np.int64), 2
    if bad == "nan_submit":
        submit[1] = math.nan
    elif bad == "inf_runtime":
        runtime[0] = math.inf
    elif bad == "negative_runtime":
        runtime[0] = -1.0
    elif bad == "negative_submit":
        submit[0] = -1.0
    elif bad == "zero_requested":
        requested[1] = 0.0
    elif bad == "need_too_big":
        need[1] = 3
    elif bad == "need_zero":
        need[0] = 0
    elif bad == "no_jobs":
        submit, runtime, requested, need = submit[:0], runtime[:0], requested[:0], need[:0]
    elif bad == "int_submit":
        submit = np.array([0, 1])
    for kernel in ("FCFS", "EASY"):
        assert batch_fast.simulate(kernel, submit, runtime, requested, need, capacity) is None


def test_declined_inputs_get_the_references_answer():
    """The engine's own checks run before either path: a negative runtime is
    the same UserError on both."""
    jobs = _table((np.array([0.0, 1.0]), np.array([-1.0, 2.0]), np.array([1.0, 2.0]), np.array([1, 1]), 2))
    for path in ("reference", "fast"):
        with pytest.raises(UserError, match="job 1000: runtime is negative"):
            run_batch_table(jobs, EASY, path=path, model="procs", procs=2)
    with pytest.raises(UserError, match="path must be"):
        batch_engine.run_table(jobs, EASY, path="quick", model="procs", procs=2)


def test_engine_declares_the_fast_path():
    engine = get_engine("batch")
    assert engine.fast_path
    assert {
        "engines/batch/sim/fast.py",
        "sim/common/jit.py",
        "engines/batch/sim/engine.py",
        "engines/batch/policies",
    } <= set(engine.sources)


def test_reference_runs_and_user_policies_do_not_import_numba():
    code = textwrap.dedent("""
        import sys
        import polars as pl
        from schedlab.engines import get_engine
        from schedlab.engines.batch.policies import EASY

        class Mine(EASY):
            pass

        jobs = pl.DataFrame({"job_id": [1, 2, 3], "submit": [0.0, 1.0, 1.0], "runtime": [5.0, 1.0, 0.0],
                             "procs": [2, 3, 1], "requested_time": [6.0, 1.0, 1.0]})
        engine = get_engine("batch")
        engine.run(jobs, Mine, None, {"model": "procs", "procs": 4})
        engine.run(jobs, "EASY", None, {"model": "procs", "procs": 4}, path="reference")
        engine.run(jobs, "FCFS", None, {"model": "nodes", "nodes": 4}, path="reference")
        engine.run(jobs, "EASY", {"record_reservations": True}, {"model": "procs", "procs": 4})
        print([m for m in ("numba", "schedlab.engines.batch.sim.fast") if m in sys.modules])
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


LUBLIN = Path(__file__).resolve().parents[2] / "shared" / "data" / "lublin" / "lublin_256.swf.gz"


@pytest.mark.skipif(not LUBLIN.exists(), reason="Lublin log not present")
def test_simulate_engine_path_option():
    import json

    from click.testing import CliRunner

    from schedlab.cli import main

    out = {}
    for path in ("reference", "fast"):
        r = CliRunner().invoke(
            main,
            [
                "simulate",
                "--engine",
                "batch",
                "--policy",
                "EASY",
                "--workload-file",
                str(LUBLIN),
                "--json",
                "--engine-path",
                path,
            ],
        )
        assert r.exit_code == 0, r.output
        out[path] = {k: v for k, v in json.loads(r.output).items() if k not in ("sim_seconds", "wall_seconds")}
    assert out["fast"] == out["reference"]


# ---- the HPC2N log -------------------------------------------------------------------------------


@pytest.mark.skipif(not HPC2N.exists(), reason="HPC2N log not present")
@pytest.mark.parametrize("policy", POLICIES)
def test_hpc2n_both_paths(policy):
    """5000 jobs of the HPC2N log on both machine models: every per-job column
    and summary value equal on both paths, and the kernel's start/end/passes
    equal to simulate_batch's."""
    from schedlab.workloads.traces.swf import read

    jobs = read(HPC2N).jobs.head(5000 if policy in OWN_KERNELS else 2000)
    _both(jobs, policy, {"model": "procs", "procs": 240})
    _both(jobs, policy, {"model": "nodes", "nodes": 120, "tasks_per_node": 2})
    submit = jobs["submit"].to_numpy().astype(float)
    runtime = jobs["runtime"].to_numpy().astype(float)
    requested = jobs["requested_time"].to_numpy().astype(float)
    need = units_needed(jobs["procs"].to_numpy(), "nodes", 2)
    assert_identical(policy, submit, runtime, requested, need, 120)
