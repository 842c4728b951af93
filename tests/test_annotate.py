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


@pytest.mark.parametrize(
    "bad, field",
    [
        ({"cpu_need": 1.5}, "cpu_need"),
        ({"cpu_need": -0.1}, "cpu_need"),
        ({"memory": "lots"}, "memory"),
        ({"memory": 2}, "memory"),
        ({"memory_lo": 0.5, "memory_hi": 0.2}, "memory_lo"),
        ({"node_memory_kb": -1}, "node_memory_kb"),
        ({"memory_lo": 0}, "memory_lo"),
    ],
)
def test_bad_annotation_names_the_field(bad, field):
    with pytest.raises(UserError, match=f"^{field}:"):
        annotate.check(params(**bad))


def test_lublin_rejects_trace_memory():
    kind = workload_kind("lublin")
    with pytest.raises(UserError, match="^memory:"):
        kind.check(kind.complete({"njobs": 10, "nodes": 8, "memory": "trace"}, "workload"))


def hpc2n_week(index: int, **kw):
    kind = workload_kind("trace")
    p = kind.complete(
        {"reader": "swf", "path": str(HPC2N), "window_length": 604800.0, "window": index, **kw}, "workload"
    )
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
        workload_kind("trace").check(
            workload_kind("trace").complete({"reader": "swf", "path": str(HPC2N), "max_procs": -3}, "workload")
        )


# ---- the batch engine's DFRS view -------------------------------------------------------------

TWO_JOBS = pl.DataFrame(
    {
        "job_id": [1, 2],
        "submit": [0.0, 0.0],
        "runtime": [10.0, 10.0],
        "procs": [2, 1],
        "requested_time": [10.0, 10.0],
        "cpu_need": [0.5, 0.5],
    }
)


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
        run(
            "batch",
            TWO_JOBS.with_columns(pl.lit(1.0).alias("cpu_need")),
            "FCFS",
            system={"model": "nodes", "nodes": 2, "tasks_per_node": 2, "bound": True},
        )


def test_batch_and_dfrs_share_the_bound_and_it_holds_for_every_policy():
    jobs = lublin(11, load=0.7, cores_per_node=2, memory="uniform", memory_lo=0.05, memory_hi=0.4).head(80)
    jobs = jobs.with_columns(pl.col("runtime").alias("requested_time"))
    out = {
        p: run("batch", jobs, p, system={"model": "nodes", "nodes": 64, "bound": True}).summary
        for p in ("FCFS", "EASY")
    }
    out["GreedyPM*/per/OPT=MIN"] = run(
        "dfrs", jobs, "GreedyPM*/per/OPT=MIN", system={"nodes": 64, "bound": True}
    ).summary
    bounds = {s["stretch_lower_bound"] for s in out.values()}
    assert len(bounds) == 1  # one instance, one bound
    for s in out.values():
        assert s["stretch_lower_bound"] <= s["stretch_max"]
        assert 0.0 <= s["underutilization"] < 1.0


def test_annotation_fields_left_out_of_points_at_their_defaults():
    """Added after sweeps were written: a point omits them at their defaults, so
    the configuration ids of earlier lublin / trace sweeps stay valid."""
    from schedlab.platform.planning.plan import build_plan
    from schedlab.platform.planning.validate import parse_spec

    def plan(**extra):
        return build_plan(
            parse_spec(
                {
                    "name": "a",
                    "engine": "dfrs",
                    "seed": 1,
                    "policies": ["GreedyPM*/OPT=MIN"],
                    "workload": {"kind": "lublin", "njobs": 20, "nodes": 32, **extra},
                    "replications": {"n": 1},
                },
                "a.toml",
            )
        )

    plain, packed = plan(), plan(cores_per_node=4, memory="uniform")
    assert set(plain.points[0].params) == {"njobs", "nodes", "load"}
    assert set(plain.configs) == set(plan(cores_per_node=0, memory=0.0).configs)
    assert packed.points[0].params["cores_per_node"] == 4 and not set(packed.configs) & set(plain.configs)
    kind = workload_kind("lublin")
    inst = plain.instances([0])[0]
    jobs = kind.instance(np.random.default_rng(np.random.SeedSequence(list(inst.seed_words))), inst.point.params, None)
    assert "cpu_need" not in jobs.columns and jobs.height == 20


# -- the paper's annotation rules (RR-7659 §5.3.1 and §5.3.2) -------------------------------

GB2 = 2 * 1024 * 1024  # KB: the HPC2N node memory of §5.3.1


def test_dfrs_hpc2n_hand_worked():
    """§5.3.1 on hand-made SWF jobs: m = max(req, used) / 2 GB per processor, at least 10 %
    (-1 = unknown); p even and m < 50 %: p / 2 tasks, CPU 100 %, memory 2 m; else p tasks,
    CPU 50 %, memory m."""
    jobs = pl.DataFrame(
        {
            "job_id": [1, 2, 3, 4, 5, 6, 7, 8, 9],
            "procs": [4, 3, 2, 2, 6, 8, 1, 2, 5],
            # 1: used 25 % > requested 12.5 %     -> even, 25 % < 50 %: 2 tasks, 100 %, 50 %
            # 2: odd, 25 %                          -> 3 tasks, 50 %, 25 %
            # 3: exactly 50 % (requested) > used    -> not "less than 50%": 2 tasks, 50 %, 50 %
            # 4: 75 % requested, used unknown       -> 2 tasks, 50 %, 75 %
            # 5: neither known (-1, -1)             -> floor 10 %, even: 3 tasks, 100 %, 20 %
            # 6: 1 % used, requested unknown        -> floor 10 %: 4 tasks, 100 %, 20 %
            # 7: serial, 40 %                       -> 1 task, 50 %, 40 %
            # 8: requested 49.9 % (just below half) -> 1 task, 100 %, 99.8 %
            # 9: odd, neither known                 -> 5 tasks, 50 %, 10 %
            "used_mem": [GB2 / 4, GB2 / 4, GB2 / 4, -1.0, -1.0, GB2 / 100, -1.0, -1.0, -1.0],
            "req_mem": [GB2 / 8, -1.0, GB2 / 2, 0.75 * GB2, -1.0, -1.0, 0.4 * GB2, 0.499 * GB2, -1.0],
        }
    )
    p = params(annotation="dfrs-hpc2n")
    annotate.check(p)
    assert annotate.wanted(p)
    out = annotate.annotate(jobs, np.random.default_rng(0), p)
    assert out["procs"].to_list() == [2, 3, 2, 2, 3, 4, 1, 1, 5]
    assert out["procs_trace"].to_list() == [4, 3, 2, 2, 6, 8, 1, 2, 5]
    assert out["cpu_need"].to_list() == [1.0, 0.5, 0.5, 0.5, 1.0, 1.0, 0.5, 1.0, 0.5]
    assert np.allclose(out["memory"].to_numpy(), [0.5, 0.25, 0.5, 0.75, 0.2, 0.2, 0.4, 0.998, 0.1], rtol=0, atol=1e-12)
    assert out["memory"][2] == 0.5 and out["memory"][0] == 0.5  # exact: powers of two
    # deterministic: no random draw
    assert out.equals(annotate.annotate(jobs, np.random.default_rng(99), p))


def test_dfrs_hpc2n_rejects_what_it_cannot_annotate():
    p = params(annotation="dfrs-hpc2n")
    with pytest.raises(UserError, match="^annotation: .*more than the 2 GB node"):
        annotate.annotate(
            pl.DataFrame({"job_id": [7], "procs": [1], "used_mem": [GB2 + 1.0], "req_mem": [-1.0]}),
            np.random.default_rng(0),
            p,
        )
    with pytest.raises(UserError, match="^annotation: .*memory fields"):
        annotate.annotate(pl.DataFrame({"job_id": [7], "procs": [1]}), np.random.default_rng(0), p)


def test_dfrs_synthetic_hand_worked_and_distribution():
    """§5.3.2: p tasks; CPU 25 % for a one-task job, else 100 %; memory 10 % for a job with
    probability 0.55, else x / 10, x uniform on {2..10}; from a child stream of the rng."""
    jobs = pl.DataFrame({"job_id": [0, 1, 2], "procs": [1, 2, 128]})
    p = params(annotation="dfrs-synthetic")
    annotate.check(p)
    out = annotate.annotate(jobs, np.random.default_rng(4), p)
    assert out["procs"].to_list() == [1, 2, 128] and "procs_trace" not in out.columns
    assert out["cpu_need"].to_list() == [0.25, 1.0, 1.0]
    # the rule, replayed on the same child stream
    child = np.random.default_rng(4).spawn(1)[0]
    small, x = child.random(3) < 0.55, child.integers(2, 11, 3)
    assert out["memory"].to_list() == [0.1 if s else k / 10 for s, k in zip(small, x)]
    big = pl.DataFrame({"job_id": np.arange(200_000), "procs": np.ones(200_000, np.int64)})
    m = annotate.annotate(big, np.random.default_rng(5), p)["memory"].to_numpy()
    values, counts = np.unique(m, return_counts=True)
    assert values.tolist() == [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]  # exact tenths
    share = counts / m.size
    assert abs(share[0] - 0.55) < 0.005  # P(10 %) = 0.55 (binomial sd 0.0011)
    assert np.all(np.abs(share[1:] - 0.45 / 9) < 0.003)  # each of 20 % .. 100 %: 0.05 (sd 0.0005)


def test_lublin_dfrs_synthetic_leaves_the_jobs_alone():
    plain = lublin(6, nodes=128)
    a = lublin(6, nodes=128, annotation="dfrs-synthetic")
    assert a.equals(lublin(6, nodes=128, annotation="dfrs-synthetic"))
    assert a.drop("cpu_need", "memory").equals(plain)
    one = a["procs"].to_numpy() == 1
    assert one.any() and (~one).any()
    assert (a["cpu_need"].to_numpy()[one] == 0.25).all() and (a["cpu_need"].to_numpy()[~one] == 1.0).all()


@pytest.mark.parametrize(
    "bad, field",
    [
        ({"annotation": "paper"}, "annotation"),
        ({"annotation": "dfrs-hpc2n", "cores_per_node": 2}, "cores_per_node"),
        ({"annotation": "dfrs-hpc2n", "memory": "trace"}, "memory"),
        ({"annotation": "dfrs-synthetic", "memory_lo": 0.1}, "memory_lo"),
        ({"annotation": "dfrs-synthetic", "cpu_need": 0.25}, "cpu_need"),
    ],
)
def test_paper_annotations_take_no_rule_fields(bad, field):
    with pytest.raises(UserError, match=f"^{field}:"):
        annotate.check(params(**bad))


def test_lublin_rejects_the_hpc2n_rule():
    kind = workload_kind("lublin")
    with pytest.raises(UserError, match="^annotation:"):
        kind.check(kind.complete({"njobs": 10, "nodes": 8, "annotation": "dfrs-hpc2n"}, "workload"))


@pytest.mark.skipif(not HPC2N.exists(), reason="shared/data HPC2N log not present")
def test_dfrs_hpc2n_on_the_log():
    """The paper's counts: 2,142 of 202,876 jobs have no memory value (the cleaned log here
    has 202,871 jobs, 2,137 of them without); every task fits a node and the 120-node
    cluster; a header-origin week carries the annotation."""
    from schedlab.workloads.traces.registry import read_trace

    jobs = read_trace("swf", str(HPC2N)).jobs
    out = annotate.dfrs_hpc2n(jobs)
    unknown = (jobs["used_mem"].to_numpy() <= 0) & (jobs["req_mem"].to_numpy() <= 0)
    assert jobs.height == 202_871 and int(unknown.sum()) == 2_137
    mem = out["memory"].to_numpy()
    halved = out["procs"].to_numpy() < out["procs_trace"].to_numpy()
    assert (mem[unknown & ~halved] == 0.1).all() and (mem[unknown & halved] == 0.2).all()
    assert mem.min() == 0.1 and mem.max() <= 1.0 and out["procs"].max() <= 120
    assert set(out["cpu_need"].unique().to_list()) == {0.5, 1.0}
    assert (out["cpu_need"].to_numpy()[halved] == 1.0).all() and (out["procs_trace"].to_numpy()[halved] % 2 == 0).all()
    week = hpc2n_week(3, annotation="dfrs-hpc2n", window_origin="header")
    assert {"procs_trace", "cpu_need", "memory"} <= set(week.columns) and week["submit"].max() < 604800.0
