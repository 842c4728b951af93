"""Sweep specs and plans: every bad spec is one clear error naming the field
(exit 2, nothing written); config ids and seeds are stable."""

import hashlib
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from schedlab.errors import UserError
from schedlab.platform.planning.plan import Plan, build_plan, canonical, digest
from schedlab.platform.planning.validate import load_spec, parse_spec

BASE = {
    "name": "t",
    "engine": "queue",
    "seed": 3,
    "policies": ["PS", "PSBS"],
    "workload": {"kind": "synthetic", "njobs": 100, "shape": [0.25, 1.0], "sigma": [0.5, 1.0]},
    "replications": {"n": 2},
}


def spec_with(**changes):
    data = {**BASE, **changes}
    return parse_spec(data, "t.toml")


@pytest.mark.parametrize(
    "changes, expected",
    [
        ({"engine": "nope"}, "t.toml: engine: unknown engine 'nope'"),
        ({"policies": ["PS", "NOPE"]}, "t.toml: policies[1]: unknown policy 'NOPE'"),
        ({"policies": []}, "t.toml: policies:"),
        ({"policies": ["PS", "PS"]}, "'PS' is listed twice"),
        ({"bogus": 1}, "t.toml: bogus: unknown field"),
        ({"seed": "x"}, "t.toml: seed:"),
        ({"seed": -1}, "t.toml: seed:"),
        ({"name": "a b"}, "t.toml: name:"),
        ({"replications": {"n": -1}}, "t.toml: replications.n:"),
        ({"replications": {"n": 0}}, "t.toml: replications.n:"),
        ({"replications": {"n": 2, "metric": "mst"}}, "either n, or metric"),
        ({"replications": {"metric": "mst"}}, "need both metric and rel_halfwidth"),
        ({"workload": {"kind": "synthetic", "shape": []}}, "t.toml: workload.shape: empty grid axis"),
        (
            {"workload": {"kind": "synthetic", "shape": [0.5, -1]}},
            "t.toml: workload.shape: must be a number > 0; got -1",
        ),
        ({"workload": {"kind": "synthetic", "njobs": 2.5}}, "t.toml: workload.njobs:"),
        ({"workload": {"kind": "synthetic", "shpe": 1}}, "t.toml: workload.shpe: unknown parameter"),
        ({"workload": {"kind": "nope"}}, "t.toml: workload.kind:"),
        ({"workload": {"kind": "file"}}, "t.toml: workload.path: required"),
        (
            {"workload": {"kind": "synthetic", "shape": [1, 2], "load": [0.5], "zip": [["shape", "load"]]}},
            "t.toml: workload.zip[0]: zipped lists differ in length",
        ),
        (
            {"workload": {"kind": "synthetic", "shape": [1, 2], "zip": [["shape", "nope"]]}},
            "t.toml: workload.zip[0]: 'nope' is not a workload parameter",
        ),
        ({"workload": {"kind": "synthetic", "shape": [1, 1.0]}}, "repeats a point"),
        (
            {"policies": [{"name": "PS", "params": {"x": 1}}]},
            "t.toml: policies[0].params.x: policy 'PS' takes no parameters",
        ),
        ({"tracking": {"enabled": "maybe"}}, "t.toml: tracking.enabled:"),
        ({"execution": {"retries": -2}}, "t.toml: execution.retries:"),
    ],
)
def test_bad_specs_name_the_field(changes, expected):
    with pytest.raises(UserError) as info:
        spec_with(**changes)
    assert expected in str(info.value)


_ENGINE_SPECS = {
    "packing": {
        "engine": "packing",
        "policies": ["FIFO-FF"],
        "workload": {"kind": "packing", "slots": 50, "rate": 0.1, "sizes": [[0.5]]},
    },
    "batch": {"engine": "batch", "policies": ["FCFS"], "workload": {"kind": "lublin", "njobs": 20, "nodes": 16}},
    "dfrs": {
        "engine": "dfrs",
        "policies": ["Greedy*/OPT=MIN"],
        "workload": {"kind": "lublin", "njobs": 20, "nodes": 16},
    },
}


@pytest.mark.parametrize(
    "engine, system, expected",
    [
        # the malformed [system] values of issue 13 that used to pass validate
        # (tests/test_system_params.py generates more)
        ("packing", {"servers": -5}, "t.toml: system.servers: must be an integer >= 1; got -5"),
        ("packing", {"servers": 0}, "t.toml: system.servers: must be an integer >= 1; got 0"),
        (
            "packing",
            {"capacity": float("nan")},
            "t.toml: system.capacity: must be a number > 0 or a list of numbers > 0",
        ),
        (
            "packing",
            {"epoch": -1.0},
            "t.toml: system.epoch: must be a number >= 0 (0: a decision at every event); got -1.0",
        ),
        ("dfrs", {"nodes": -3}, "t.toml: system.nodes: must be an integer >= 1; got -3"),
        ("batch", {"model": "cores", "procs": 8}, "t.toml: system.model: must be one of 'procs', 'nodes'; got 'cores'"),
        ("batch", {"procs": [8, -1]}, "t.toml: system.procs[1]: must be an integer >= 0"),
    ],
)
def test_bad_system_values_name_the_field(engine, system, expected):
    with pytest.raises(UserError) as info:
        parse_spec({**BASE, **_ENGINE_SPECS[engine], "system": system}, "t.toml")
    assert str(info.value).startswith(expected), str(info.value)


def test_grid_cross_and_zip():
    plan = build_plan(spec_with())
    assert len(plan.points) == 4 and len(plan.configs) == 8
    zipped = build_plan(
        spec_with(
            workload={"kind": "synthetic", "shape": [0.25, 1.0], "sigma": [0.5, 1.0], "zip": [["shape", "sigma"]]}
        )
    )
    assert [(p.params["shape"], p.params["sigma"]) for p in zipped.points] == [(0.25, 0.5), (1.0, 1.0)]


def test_config_ids_are_canonical():
    """Stable across key order, int-vs-float spelling and explicit defaults."""
    a = build_plan(spec_with(workload={"kind": "synthetic", "njobs": 100, "shape": 1, "sigma": 0.5}))
    b = build_plan(spec_with(workload={"sigma": 0.5, "shape": 1.0, "njobs": 100, "kind": "synthetic", "load": 0.9}))
    assert set(a.configs) == set(b.configs)
    assert canonical({"b": 1, "a": [2, "x"]}) == '{"a":[2.0,"x"],"b":1.0}'
    # pinned: a change to hashing would silently orphan every existing results dir
    assert digest({"engine": "queue", "n": 1}) == hashlib.sha256(b'{"engine":"queue","n":1.0}').hexdigest()[:16]


def test_replications_share_the_workload_draw_and_differ_across_r():
    plan = build_plan(spec_with())
    inst = plan.instances(range(2))
    assert inst[0].seed_words == (3, int(inst[0].point.point_id, 16), 0)
    assert inst[0].seed_words != inst[1].seed_words


def test_tasks_pack_small_instances():
    plan = build_plan(spec_with())
    instances = plan.instances(range(10))
    tasks = Plan.tasks(instances, task_jobs=1000)  # an instance is 100 jobs x 2 policies = 200 job-runs
    assert [len(t) for t in tasks] == [5] * 8  # 40 instances, 5 (1000 job-runs) per task
    assert [i for t in tasks for i in t] == instances  # order kept, nothing lost
    assert len(Plan.tasks(instances, task_jobs=10**9)) == 1  # synthetic points need no shared input: one task


def test_cli_validate_exit_codes(tmp_path):
    good = tmp_path / "good.toml"
    good.write_text(
        textwrap.dedent("""
        name = "g"
        engine = "queue"
        policies = ["PS"]
        [workload]
        njobs = 10
        [replications]
        n = 1
    """)
    )
    bad = tmp_path / "bad.toml"
    bad.write_text(good.read_text().replace('["PS"]', '["PS", "XYZ"]'))
    ok = subprocess.run([sys.executable, "-m", "schedlab.cli", "validate", str(good)], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    res = subprocess.run([sys.executable, "-m", "schedlab.cli", "validate", str(bad)], capture_output=True, text=True)
    assert res.returncode == 2
    assert "policies[1]: unknown policy 'XYZ'" in res.stderr and "Traceback" not in res.stderr
    assert not (tmp_path / "results").exists()
    broken = tmp_path / "broken.toml"
    broken.write_text("name = [")
    res = subprocess.run(
        [sys.executable, "-m", "schedlab.cli", "validate", str(broken)], capture_output=True, text=True
    )
    assert res.returncode == 2 and "broken.toml: not valid TOML" in res.stderr


def test_example_specs_validate():
    names = ["psbs-shape", "psbs-sigma"]
    if Path("../shared/data/swim-facebook").exists():
        names.append("fb2010-sigma")
    for name in names:
        spec = load_spec(f"sweeps/{name}.toml")
        assert build_plan(spec).configs
