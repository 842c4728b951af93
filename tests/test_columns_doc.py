"""docs/columns.md is generated from the code and matches it; result rows keep
integer parameters integer (the issue "Types and units")."""

from pathlib import Path

import numpy as np
import pytest

from schedlab.docs_columns import METRICS, render
from schedlab.engines import get_engine
from schedlab.platform.execution.tasks import run_instances
from schedlab.platform.planning.plan import build_plan
from schedlab.platform.planning.validate import parse_spec
from schedlab.workloads.registry import workload_kind

ROOT = Path(__file__).resolve().parent.parent


def test_doc_is_what_the_generator_writes():
    assert (ROOT / "docs" / "columns.md").read_text() == render(), (
        "regenerate: python -m schedlab.docs_columns > docs/columns.md"
    )


def _instance(kind, params):
    k = workload_kind(kind)
    full = k.complete(params, "w")
    return k.instance(np.random.default_rng(1), full, k.load_shared(full) if k.load_shared else None)


def _declared(engine, name):
    for c in METRICS[engine]:
        if c.name == name or ("<" in c.name and name.startswith(c.name.split("<")[0])):
            return True
    return False


@pytest.mark.parametrize(
    "engine, policy, kind, params, system",
    [
        ("queue", "PS", "synthetic", {"njobs": 50, "weight_classes": 2}, {}),
        ("batch", "EASY", "lublin", {"njobs": 40, "nodes": 16}, {"procs": 16, "bound": True}),
        ("dfrs", "Greedy*/OPT=MIN", "lublin", {"njobs": 20, "nodes": 16}, {"nodes": 16, "bound": True}),
        (
            "packing",
            "FIFO-FF",
            "packing",
            {"slots": 200, "rate": 0.5, "uniform_lo": 0.1, "uniform_hi": 0.3},
            {"servers": 2},
        ),
    ],
)
def test_every_metric_is_declared(engine, policy, kind, params, system):
    summary = get_engine(engine).run(_instance(kind, params), policy, {}, system).summary
    undeclared = [k for k in summary if not _declared(engine, k)]
    assert not undeclared, f"declare them in schedlab/docs_columns.py: {undeclared}"


def test_integer_parameters_stay_integer():
    spec = parse_spec(
        {
            "name": "t",
            "engine": "queue",
            "policies": ["PS"],
            "seed": 4,
            "workload": {"kind": "synthetic", "njobs": 30, "weight_classes": 2, "load": 1},
        },
        "t.toml",
    )
    plan = build_plan(spec)
    inst = plan.instances([0])[0]
    row = run_instances("queue", [(inst, list(inst.point.configs))], None, False).summary[0]
    assert type(row["njobs"]) is int and type(row["weight_classes"]) is int
    assert type(row["load"]) is float  # a Float64 parameter written as 1 in TOML
    assert row["seed"] == f"4/{inst.point.point_id}/0"  # seed words: by design text (docs/columns.md)
    spec = parse_spec(
        {
            "name": "b",
            "engine": "batch",
            "policies": ["FCFS"],
            "system": {"procs": 16},
            "workload": {"kind": "lublin", "njobs": 20, "nodes": 16},
        },
        "b.toml",
    )
    config = next(iter(build_plan(spec).configs.values()))
    assert {"njobs", "nodes", "system_procs", "system_nodes", "system_tasks_per_node"} <= config.integers
    assert "system_cpu_need" not in config.integers


FB2010 = ROOT.parent / "shared" / "data" / "swim-facebook" / "FB-2010_samples_24_times_1hr_0.tsv.gz"


def _real_schema(tmp_path, name, engine, policy, workload, system=None):
    """The Parquet schema of a real run's summary rows (task function -> store -> part files)."""
    import polars as pl

    from schedlab.platform.execution.runner import manifest_for
    from schedlab.platform.storage.store import ResultStore

    spec = parse_spec(
        {
            "name": name,
            "engine": engine,
            "policies": [policy],
            "workload": workload,
            "system": system or {},
            "outputs": {"dir": str(tmp_path / name)},
            "tracking": {"enabled": False},
        },
        f"{name}.toml",
    )
    plan = build_plan(spec)
    (inst,) = plan.instances([0])
    kind = workload_kind(inst.point.kind)
    shared = kind.load_shared(inst.point.params) if kind.load_shared else None
    result = run_instances(engine, [(inst, list(inst.point.configs))], shared, False)
    assert not result.failures, result.failures
    store = ResultStore(spec.results_dir())
    store.prepare(manifest_for(spec, plan), True)
    store.commit(result.summary, result.jobs, result.failures)
    (part,) = [p for p in store.files() if p.suffix == ".parquet"]
    return pl.read_parquet_schema(part)


def test_documented_dtypes_are_the_parquet_dtypes_of_real_runs(tmp_path):
    """Every documented parameter column of a kind (and an engine's [system]) has, in a real run's
    Parquet file, the dtype docs/columns.md gives (its first word: "String (JSON)" is String)."""
    from schedlab.docs_columns import system_columns, workload_columns

    table = tmp_path / "jobs.csv"
    table.write_text("job_id,submit,size\n0,0.0,1.0\n1,0.5,2.0\n2,1.0,0.5\n")
    cases = [
        ("syn", "queue", "PS", {"kind": "synthetic", "njobs": 30, "weight_classes": 2}, None),
        ("file", "queue", "PS", {"kind": "file", "path": str(table)}, None),
        ("lub", "batch", "EASY", {"kind": "lublin", "njobs": 30, "nodes": 16}, {"procs": 16}),
        ("pack", "packing", "FIFO-FF", {"kind": "packing", "slots": 100, "rate": 0.5, "sizes": [[0.2, 0.5]]}, None),
    ]
    if FB2010.exists():
        trace = {"kind": "trace", "reader": "swim", "path": str(FB2010), "window_length": 3600.0, "window": 0}
        cases.append(("trace", "queue", "PS", trace, None))
    checked = set()
    for name, engine, policy, workload, system in cases:
        system = system or ({"servers": 2} if engine == "packing" else None)
        schema = _real_schema(tmp_path, name, engine, policy, workload, system)
        documented = workload_columns(workload["kind"]) + system_columns(engine)
        for col in documented:
            if col.name in schema:
                assert str(schema[col.name]) == col.dtype.split()[0], (workload["kind"], col.name, schema[col.name])
                checked.add((workload["kind"], col.name))
    assert {("file", "path"), ("synthetic", "njobs"), ("lublin", "nodes")} <= checked
    if FB2010.exists():
        assert {("trace", "reader"), ("trace", "path"), ("trace", "window")} <= checked
