"""One way to run an instance: a sweep's task, a planned run and a run by hand agree to the bit.

`schedlab.platform.execution.tasks.run_instances` (a sweep's rows),
`schedlab.platform.execution.instance.run_planned` (what ``schedlab view``
re-simulates) and `schedlab.api.run_instance` (a job table by hand, what
``schedlab simulate`` calls) are one code path: the same configuration on
the same replication gives the same metrics, extra metrics and warm-up
columns included, on every engine.
"""

from __future__ import annotations

import math

import pytest

from schedlab.platform.planning.plan import build_plan
from schedlab.platform.planning.validate import parse_spec

#: Summary values that measure the machine, not the schedule (``views.replay.TIMING_METRICS``).
TIMINGS = ("sim_seconds", "bound_seconds")

SPECS = {
    "queue": {
        "engine": "queue",
        "policies": ["FIFO", "PS", "PSBS"],
        "workload": {"kind": "synthetic", "njobs": 400, "shape": 0.5, "beta": 1.0},
        "metrics": [{"name": "sojourn_p90", "use": "quantile", "params": {"column": "sojourn", "q": 0.9}}],
        "outputs": {"warmup": "mser5"},
    },
    "packing": {
        "engine": "packing",
        "policies": ["FIFO-FF", "BF-J"],
        "workload": {
            "kind": "packing",
            "slots": 60,
            "uniform_lo": 0.05,
            "uniform_hi": 0.5,
            "service": "geometric",
            "mean_service": 10,
            "intensity": 0.8,
            "intensity_servers": 3,
        },
        "system": {"servers": 3, "capacity": 1.0, "epoch": 1.0},
    },
    "batch": {
        "engine": "batch",
        "policies": ["FCFS", "EASY"],
        "system": {"model": "procs", "procs": 64},
        "workload": {"kind": "lublin", "njobs": 80, "nodes": 64},
    },
    "dfrs": {
        "engine": "dfrs",
        "policies": ["GreedyPM*/OPT=MIN"],
        "workload": {"kind": "lublin", "njobs": 20, "nodes": 32},
    },
}


def _same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


@pytest.mark.parametrize("engine", sorted(SPECS))
def test_a_task_a_planned_run_and_a_run_by_hand_agree_to_the_bit(engine):
    from schedlab.api import run_instance
    from schedlab.platform.execution.instance import run_planned
    from schedlab.platform.execution.tasks import run_instances

    spec = parse_spec(
        {"name": "one", "seed": 5, "replications": {"n": 2}, "tracking": {"enabled": False}, **SPECS[engine]}, "o.toml"
    )
    plan = build_plan(spec)
    work = [(inst, list(inst.point.configs)) for inst in plan.instances(range(2))]
    task = run_instances(plan.engine, work, None, False, plan.metrics)
    assert not task.failures and len(task.summary) == 2 * len(plan.configs)
    for row in task.summary:
        planned = run_planned(plan, row["config_id"], row["replication"], path="reference")
        metrics = planned.run.metrics
        assert set(metrics) <= set(row), f"{engine}: metrics not in the sweep's row: {set(metrics) - set(row)}"
        differ = [k for k, v in metrics.items() if k not in TIMINGS and not _same(float(v), float(row[k]))]
        assert not differ, (
            f"{engine} {row['policy']} r{row['replication']}: {[(k, metrics[k], row[k]) for k in differ]}"
        )
        if spec.outputs.warmup is None and not plan.metrics:  # by hand: the table, the policy, its [system]
            config = planned.config
            hand = run_instance(engine, planned.jobs, config.policy, config.policy_params, config.system)
            assert set(hand.metrics) == set(metrics)
            assert all(_same(hand.metrics[k], metrics[k]) for k in metrics if k not in TIMINGS), engine
    if engine == "queue":  # the warm-up cut and the extra metric are in every row
        assert all("warmup_jobs" in r and "sojourn_p90" in r for r in task.summary)
