"""DFRS annotation (workloads/annotate.py), the trace filter max_procs, and the
batch engine's DFRS view (underutilization, LP bound) on annotated jobs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from schedlab.engines import get_engine
from schedlab.errors import UserError
from schedlab.workloads import annotate
from schedlab.workloads.registry import workload_kind

HPC2N = Path(__file__).resolve().parents[2] / "shared" / "data" / "pwa-swf" / "HPC2N-2002-2.2-cln.swf.gz"
# HPC2N's per-processor memory: nearly every job records 409,600 KB; the largest is 2,048,000 KB.
HPC2N_TYPICAL_KB, HPC2N_MAX_KB = 409_600.0, 2_048_000.0


def run(engine, jobs, policy, system):
    return get_engine(engine).run(jobs, policy, None, system)


def params(**kw):
    return {**annotate.DEFAULTS, **kw}


def lublin(seed: int, **kw):
    kind = workload_kind("lublin")
    p = kind.complete({"njobs": 200, "nodes": 64, **kw}, "workload")
    kind.check(p)
    return kind.build(np.random.default_rng(np.random.SeedSequence(seed)), p, None)


def test_numbers_annotate_every_task_and_zero_means_none():
    jobs = pl.DataFrame({"job_id": [1, 2], "procs": [1, 4]})
    out = annotate.annotate(jobs, np.random.default_rng(0), params(cpu_need=0.5, memory=0.25))
    assert out["cpu_need"].to_list() == [0.5, 0.5] and out["memory"].to_list() == [0.25, 0.25]
    assert not annotate.wanted(params())
    assert annotate.annotate(jobs, np.random.default_rng(0), params()).columns == jobs.columns


def test_uniform_memory_is_seeded_in_range_and_leaves_the_jobs_alone():
    plain = lublin(5)
    a = lublin(5, memory="uniform", memory_lo=0.1, memory_hi=0.3, cpu_need=0.25)
    b = lublin(5, memory="uniform", memory_lo=0.1, memory_hi=0.3, cpu_need=0.25)
    assert a.equals(b)  # deterministic
    assert a.drop("cpu_need", "memory").equals(plain)  # the child stream does not change the jobs
    m = a["memory"].to_numpy()
    assert ((m >= 0.1) & (m <= 0.3)).all() and np.unique(m).size == len(m)
    assert (a["cpu_need"] == 0.25).all()


def test_trace_memory_from_swf_fields_with_fallback():
    jobs = pl.DataFrame({"used_mem": [1000.0, -1.0, -1.0, 4000.0], "req_mem": [-1.0, 2000.0, -1.0, 8000.0]})
    out = annotate.annotate(jobs, np.random.default_rng(0), params(memory="trace", memory_lo=0.05))
    # node memory = largest per-processor value (used_mem preferred): 4000 KB
    assert out["memory"].to_list() == [0.25, 0.5, 0.05, 1.0]
    out = annotate.annotate(jobs, np.random.default_rng(0), params(memory="trace", node_memory_kb=8000.0))
    assert out["memory"].to_list() == [0.125, 0.25, 0.01, 0.5]


@pytest.mark.parametrize("bad, field", [
    ({"cpu_need": 1.5}, "cpu_need"), ({"cpu_need": -0.1}, "cpu_need"), ({"memory": "lots"}, "memory"),
    ({"memory": 2}, "memory"), ({"memory_lo": 0.5, "memory_hi": 0.2}, "memory_lo"),
    ({"node_memory_kb": -1}, "node_memory_kb"), ({"memory_lo": 0}, "memory_lo"),
])
def test_bad_annotation_names_the_field(bad, field):
    with pytest.raises(UserError, match=f"^{field}:"):
        annotate.check(params(**bad))


def test_lublin_rejects_trace_memory():
    kind = workload_kind("lublin")
    with pytest.raises(UserError, match="^memory:"):
        kind.check(kind.complete({"njobs": 10, "nodes": 8, "memory": "trace"}, "workload"))


def hpc2n_week(index: int, **kw):
    kind = workload_kind("trace")
    p = kind.complete({"reader": "swf", "path": str(HPC2N), "window_length": 604800.0, "window": index, **kw},
                      "workload")
    kind.check(p)
    return kind.build(np.random.default_rng(0), p, kind.load_shared(p))


def test_cores_per_node_packs_processors_into_node_tasks():
    jobs = pl.DataFrame({"job_id": [1, 2, 3, 4], "procs": [1, 2, 3, 8], "used_mem": [100.0, 100.0, 50.0, 25.0]})
    out = annotate.annotate(jobs, np.random.default_rng(0), params(cores_per_node=2, memory="trace"))
    assert out["procs"].to_list() == [1, 1, 2, 4]  # ceil(p / 2) tasks
    assert out["procs_trace"].to_list() == [1, 2, 3, 8]
    assert out["cpu_need"].to_list() == [0.5, 1.0, 0.75, 1.0]  # p / (2 x tasks)
    # node memory = 2 x the largest per-processor value (200 KB); memory per task =
    # per-processor KB x processors per task / node
    assert out["memory"].to_list() == pytest.approx([0.5, 1.0, 0.375, 0.25])
    with pytest.raises(UserError, match="^cpu_need: give either"):
        annotate.check(params(cores_per_node=2, cpu_need=0.5))
    with pytest.raises(UserError, match="^cores_per_node:"):
        annotate.check(params(cores_per_node=1.5))


def test_hpc2n_week_annotated_on_the_trace_wide_node_memory_and_filtered():
    full = hpc2n_week(40)
    week = hpc2n_week(40, cores_per_node=2, memory="trace", max_procs=16)
    assert week.height == int((full["procs"] <= 16).sum()) < full.height
    assert (week["procs_trace"] <= 16).all()
    serial = week["procs_trace"].to_numpy() == 1
    assert serial.any() and (week["cpu_need"].to_numpy()[serial] == 0.5).all()
    mem = week["memory"].to_numpy()
    typical = (week["used_mem"].to_numpy() == HPC2N_TYPICAL_KB) & (week["procs_trace"].to_numpy() % 2 == 0)
    assert typical.any()
    # every window uses the node memory of the whole trace (2 x its largest value), not the window's
    assert np.allclose(mem[typical], 2 * HPC2N_TYPICAL_KB / (2 * HPC2N_MAX_KB))
    with pytest.raises(UserError, match="^max_procs:"):
        workload_kind("trace").check(workload_kind("trace").complete(
            {"reader": "swf", "path": str(HPC2N), "max_procs": -3}, "workload"))


# ---- the batch engine's DFRS view -------------------------------------------------------------

TWO_JOBS = pl.DataFrame({"job_id": [1, 2], "submit": [0.0, 0.0], "runtime": [10.0, 10.0], "procs": [2, 1],
                         "requested_time": [10.0, 10.0], "cpu_need": [0.5, 0.5]})


def test_batch_underutilization_hand_worked():
    # 2 whole nodes, one task per node, need 0.5. FCFS: job 1 (2 tasks) on [0, 10),
    # job 2 waits, runs on [10, 20). D = 1.5 and u = 1.0 on [0, 10): 5 node-CPU s idle
    # although demanded; nothing on [10, 20). Work = 0.5 x 2 x 10 + 0.5 x 1 x 10 = 15.
    res = run("batch", TWO_JOBS, "FCFS", system={"model": "nodes", "nodes": 2, "bound": True})
    assert res.summary["underutilization"] == pytest.approx(5 / 15, rel=1e-12)
    # Theorem 1 bound on 2 nodes of CPU 1 with needs 0.5: both jobs can run at full speed
    # side by side (1.5 <= 2), so the bound is 1; FCFS's job 2 has stretch 2.
    assert res.summary["stretch_lower_bound"] == pytest.approx(1.0)
    assert res.summary["degradation"] == pytest.approx(2.0)


def test_batch_view_needs_tasks_that_fit_their_node():
    with pytest.raises(UserError, match="tasks_per_node x cpu_need"):
        run("batch", TWO_JOBS.with_columns(pl.lit(1.0).alias("cpu_need")), "FCFS",
            system={"model": "nodes", "nodes": 2, "tasks_per_node": 2, "bound": True})


def test_batch_and_dfrs_share_the_bound_and_it_holds_for_every_policy():
    jobs = lublin(11, load=0.7, cores_per_node=2, memory="uniform", memory_lo=0.05, memory_hi=0.4).head(80)
    jobs = jobs.with_columns(pl.col("runtime").alias("requested_time"))
    out = {p: run("batch", jobs, p, system={"model": "nodes", "nodes": 64, "bound": True}).summary
           for p in ("FCFS", "EASY")}
    out["GreedyPM*/per/OPT=MIN"] = run("dfrs", jobs, "GreedyPM*/per/OPT=MIN",
                                       system={"nodes": 64, "bound": True}).summary
    bounds = {s["stretch_lower_bound"] for s in out.values()}
    assert len(bounds) == 1  # one instance, one bound
    for s in out.values():
        assert s["stretch_lower_bound"] <= s["stretch_max"]
        assert 0.0 <= s["underutilization"] < 1.0


def test_annotation_fields_left_out_of_points_at_their_defaults():
    """Added after sweeps were written: a point omits them at their defaults, so
    the configuration ids of earlier lublin / trace sweeps stay valid."""
    from schedlab.platform.plan import build_plan
    from schedlab.platform.spec import parse_spec

    def plan(**extra):
        return build_plan(parse_spec({
            "name": "a", "engine": "dfrs", "seed": 1, "policies": ["GreedyPM*/OPT=MIN"],
            "workload": {"kind": "lublin", "njobs": 20, "nodes": 32, **extra}, "replications": {"n": 1}}, "a.toml"))

    plain, packed = plan(), plan(cores_per_node=4, memory="uniform")
    assert set(plain.points[0].params) == {"njobs", "nodes", "load"}
    assert set(plain.configs) == set(plan(cores_per_node=0, memory=0.0).configs)
    assert packed.points[0].params["cores_per_node"] == 4 and not set(packed.configs) & set(plain.configs)
    kind = workload_kind("lublin")
    inst = plain.instances([0])[0]
    jobs = kind.instance(np.random.default_rng(np.random.SeedSequence(list(inst.seed_words))), inst.point.params, None)
    assert "cpu_need" not in jobs.columns and jobs.height == 20
