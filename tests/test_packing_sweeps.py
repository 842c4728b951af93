"""The packing engine inside sweeps: [system] parameters, policy parameters,
the sampled time series as its own dataset, and the example specs."""

from pathlib import Path

import numpy as np
import polars as pl
import pytest

import schedlab
from schedlab.engines import get_engine
from schedlab.errors import UserError
from schedlab.platform.execution.runner import run_sweep
from schedlab.platform.planning.plan import build_plan
from schedlab.platform.planning.validate import load_spec, parse_spec
from schedlab.workloads.registry import workload_kind

SYSTEM = {"servers": 2, "capacity": 1.0, "epoch": 1.0, "sample_every": 500.0}


def spec(tmp_path, **changes):
    data = {
        "name": "pk",
        "engine": "packing",
        "seed": 2,
        "policies": ["BF-J/S", "FIFO-FF", {"name": "VQS", "params": {"J": [3, 4]}}],
        "system": SYSTEM,
        "workload": {
            "kind": "packing",
            "slots": 3000,
            "uniform_lo": 0.1,
            "uniform_hi": 0.5,
            "intensity": 0.8,
            "intensity_servers": 2,
            "mean_service": 20,
        },
        "replications": {"n": 2},
        "outputs": {"dir": str(tmp_path / "out")},
        "tracking": {"enabled": False},
    }
    data.update(changes)
    return parse_spec(data, "pk.toml")


def test_system_and_policy_params_are_part_of_the_configuration(tmp_path):
    plan = build_plan(spec(tmp_path))
    assert len(plan.configs) == 4  # BF-J/S, FIFO-FF, VQS J=3, VQS J=4
    assert {"system_servers", "system_epoch", "policy_J", "intensity"} <= set(plan.param_columns)
    other = build_plan(spec(tmp_path, system={**SYSTEM, "servers": 3}))
    assert not set(plan.configs) & set(other.configs)


@pytest.mark.parametrize(
    "changes, expected",
    [
        (
            {"system": {"servers": 2, "cores": 4}},
            "pk.toml: system.cores: unknown system parameter for engine 'packing'",
        ),
        (
            {"policies": [{"name": "BF-J/S", "params": {"J": 3}}]},
            "pk.toml: policies[0].params.J: policy 'BF-J/S' takes no parameters",
        ),
        (
            {"workload": {"kind": "packing", "slots": 0, "rate": 0.1, "sizes": [[0.5]]}},
            "pk.toml: workload.slots: must be an integer >= 1",
        ),
        (
            {"workload": {"kind": "packing", "slots": 10, "rate": 0.1, "sizes": [0.4, 0.6]}},
            "pk.toml: workload.sizes: must be a non-empty list",
        ),
        ({"workload": {"kind": "synthetic"}}, "pk.toml: workload.kind: engine 'packing' does not take 'synthetic'"),
    ],
)
def test_bad_packing_specs(tmp_path, changes, expected):
    with pytest.raises(UserError) as info:
        spec(tmp_path, **changes)
    assert expected in str(info.value)


def test_packing_sweep_rows_and_series(tmp_path):
    import ray

    ray.init(address="local", num_cpus=2, include_dashboard=False)
    try:
        s = spec(tmp_path)
        report = run_sweep(s)
    finally:
        ray.shutdown()
    assert report.rows_written == 8 and not report.failures
    rows = schedlab.load(s.results_dir()).collect()
    series = schedlab.load(s.results_dir(), "series").collect()
    assert set(series.columns) >= {"config_id", "replication", "t", "queue_jobs", "queue_resource", "policy"}
    assert series.group_by("config_id", "replication").len()["len"].min() >= 5  # 3000 slots / 500
    # one row recomputed directly
    plan = build_plan(s)
    inst = plan.instances(range(2))[1]
    jobs = workload_kind("packing").build(
        np.random.default_rng(np.random.SeedSequence(list(inst.seed_words))), inst.point.params, None
    )
    config = next(c for c in inst.point.configs if c.policy == "VQS" and c.policy_params["J"] == 3)
    direct = get_engine("packing").run(jobs, "VQS", {"J": 3}, SYSTEM)
    row = rows.filter((pl.col("config_id") == config.config_id) & (pl.col("replication") == 1))
    assert row["queue_jobs_mean"][0] == direct.summary["queue_jobs_mean"]
    assert row["completed"][0] == direct.summary["completed"]


@pytest.mark.parametrize("name", ["packing-fig4", "google-packing"])
def test_example_specs_plan(name):
    if name == "google-packing" and not Path("../shared/data/google-clusterdata-2011").exists():
        pytest.skip("shared/data absent")
    plan = build_plan(load_spec(f"sweeps/{name}.toml"))
    assert len(plan.configs) == 16
