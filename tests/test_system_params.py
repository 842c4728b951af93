"""[system] parameters: `validate` rejects exactly what `run` would reject.

Every field of every engine gets a seeded batch of generated values (wrong
types, NaN and infinities, negatives, zero, bools where numbers go, unknown
names, list-valued points, grid axes with one bad entry). The oracle below is
written from the engines' documented rules, independently of
``schedlab.sim.system``; each value is then put through ``parse_spec`` (so
``build_plan``) and through the engine itself on a small instance of the
same spec, and the two must agree: an invalid value is rejected at plan time
with its field path, and run time rejects it too; a valid one passes both.
"""

from __future__ import annotations

import hashlib
import inspect
import math
import random
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import numpy as np
import pytest

from schedlab.engines import ENGINES, get_engine
from schedlab.errors import UserError
from schedlab.platform.planning.plan import build_plan, digest
from schedlab.platform.planning.spec import SweepSpec
from schedlab.platform.planning.validate import load_spec, parse_spec
from schedlab.sim import system as system_schema
from schedlab.workloads.registry import workload_kind

DATA = Path("../shared/data")

# ---- one valid spec per engine; the field under test is replaced ---------------------------------

BASE = {
    "packing": {
        "policies": ["FIFO-FF"],
        "workload": {"kind": "packing", "slots": 80, "rate": 0.2, "sizes": [[0.3, 0.6]], "mean_service": 5},
        "system": {"servers": 2, "capacity": 1.0, "epoch": 1.0, "sample_every": 10.0},
    },
    "batch": {
        "policies": ["EASY"],
        "workload": {"kind": "lublin", "njobs": 25, "nodes": 32},
        "system": {
            "model": "procs",
            "procs": 64,
            "nodes": 16,
            "tasks_per_node": 1,
            "oversize": "drop",
            "cpu_need": 1.0,
            "bound": False,
            "estimates": "requested",
            "easy_backfill": "canonical",
        },
    },
    "dfrs": {
        "policies": ["GreedyP*/OPT=MIN"],
        "workload": {"kind": "lublin", "njobs": 20, "nodes": 16},
        "system": {
            "nodes": 16,
            "penalty": 30.0,
            "cpu_need": 1.0,
            "memory": 0.2,
            "bound": False,
            "oversize": "drop",
            "star_pass": "completion",
            "victims": "prefix",
            "stretch_realloc": "mapping-change",
            "mcb8_rules": "schedlab",
            "relabel": "memory",
            "cpu_units": "real",
            "penalties": "each-change",
            "period_origin": "first-release",
            "time_units": "real",
            "priority_units": "real",
            "victims_settle": "arrival",
            "mcb8_remaps": "each-event",
            "minvt_units": "real",
            "arrival_at_period": "placed",
        },
    },
}


def spec_dict(engine: str, system: dict) -> dict:
    return {
        "name": "t",
        "engine": engine,
        "seed": 1,
        "replications": {"n": 1},
        "tracking": {"enabled": False},
        "policies": BASE[engine]["policies"],
        "workload": BASE[engine]["workload"],
        "system": system,
    }


# ---- the oracle: each field's valid values, from the engines' docstrings ----------------------------


def _int(v) -> bool:
    return type(v) is int


def _num(v) -> bool:
    return type(v) in (int, float) and math.isfinite(v)


VALID = {
    "packing": {
        "servers": lambda v: _int(v) and v >= 1,
        # a number > 0, or one per resource: the packing workload has one resource ("demand")
        "capacity": lambda v: (_num(v) and v > 0) or (type(v) is list and len(v) == 1 and _num(v[0]) and v[0] > 0),
        "epoch": lambda v: _num(v) and v >= 0,  # 0: a decision at every event
        "sample_every": lambda v: _num(v) and v >= 0,  # 0: no series
    },
    "batch": {
        "model": lambda v: v in ("procs", "nodes") and type(v) is str,
        "procs": lambda v: _int(v) and v >= 1,  # 0 would take machine_procs, which a lublin table lacks
        "nodes": lambda v: _int(v) and v >= 0,  # model procs here: 0 = not set
        "tasks_per_node": lambda v: _int(v) and v >= 1,
        "oversize": lambda v: v in ("error", "drop") and type(v) is str,
        "cpu_need": lambda v: _num(v) and 0 < v <= 1,
        "bound": lambda v: type(v) is bool,
        "estimates": lambda v: v in ("requested", "exact") and type(v) is str,
        "easy_backfill": lambda v: v in ("canonical", "vcsim") and type(v) is str,
    },
    "dfrs": {
        "nodes": lambda v: _int(v) and v >= 1,
        "penalty": lambda v: _num(v) and v >= 0,
        "cpu_need": lambda v: _num(v) and 0 < v <= 1,
        "memory": lambda v: _num(v) and 0 < v <= 1,
        "bound": lambda v: type(v) is bool,
        "oversize": lambda v: v in ("error", "drop") and type(v) is str,
        "star_pass": lambda v: v in ("completion", "instant-end", "vcsim") and type(v) is str,
        "victims": lambda v: v in ("prefix", "put-back") and type(v) is str,
        "stretch_realloc": lambda v: v in ("mapping-change", "every-instant") and type(v) is str,
        "mcb8_rules": lambda v: v in ("schedlab", "vcsim") and type(v) is str,
        "relabel": lambda v: v in ("memory", "none") and type(v) is str,
        "cpu_units": lambda v: v in ("real", "percent") and type(v) is str,
        "penalties": lambda v: v in ("each-change", "instant-net") and type(v) is str,
        "period_origin": lambda v: v in ("first-release", "zero") and type(v) is str,
        "time_units": lambda v: v in ("real", "seconds") and type(v) is str,
        "priority_units": lambda v: v in ("real", "ms") and type(v) is str,
        "victims_settle": lambda v: v in ("arrival", "instant-end") and type(v) is str,
        "mcb8_remaps": lambda v: v in ("each-event", "instant-end") and type(v) is str,
        "minvt_units": lambda v: v in ("real", "ms") and type(v) is str,
        "arrival_at_period": lambda v: v in ("placed", "remap") and type(v) is str,
    },
}

NAN, INF = float("nan"), float("inf")
FIXED = [
    0,
    1,
    2,
    7,
    -1,
    -5,
    0.0,
    -0.0,
    0.5,
    1.0,
    2.0,
    1.5,
    -0.25,
    1 + 1e-12,
    1e-3,
    64.0,
    NAN,
    INF,
    -INF,
    True,
    False,
    "1",
    "",
    "true",
    "procs",
    "nodes",
    "error",
    "drop",
    "Procs",
    "NODES",
    " drop",
    "cores",
    "completion",
    "instant-end",
    "Completion",
    "prefix",
    "put-back",
    "Put-back",
    "requested",
    "exact",
    [[]],
    [[1.0]],
    [[0.5]],
    [[0.5, 0.5]],
    [[1.0, NAN]],
    [[-1.0]],
    [[INF]],
    [["a"]],
    [[True]],
    [[0]],
    [[2, 3]],
]


def generated(engine: str, field: str) -> list:
    """FIXED plus a seeded random batch (the same values on every run)."""
    rng = random.Random(f"{engine}.{field}")
    out = list(FIXED)
    out += [rng.randint(-300, 300) for _ in range(8)]
    out += [round(rng.uniform(-3.0, 3.0), 3) for _ in range(8)]
    out += [round(rng.uniform(0.0, 1.2), 3) for _ in range(4)]
    out += ["".join(rng.choice("abcdeprocsnod_-") for _ in range(rng.randint(1, 8))) for _ in range(4)]
    out += [[[round(rng.uniform(-1.0, 2.0), 2) for _ in range(rng.randint(1, 3))]] for _ in range(4)]
    return out


CASES = [(engine, field, value) for engine in VALID for field in VALID[engine] for value in generated(engine, field)]


def _instance(plan):
    point = plan.points[0]
    kind = workload_kind(point.kind)
    rng = np.random.default_rng(np.random.SeedSequence(list(plan.instances([0])[0].seed_words)))
    return kind.instance(rng, point.params, None)


def _run(engine: str, system: dict, jobs):
    return get_engine(engine).run(jobs, BASE[engine]["policies"][0], None, system)


@pytest.fixture(scope="module")
def instances():
    return {e: _instance(build_plan(parse_spec(spec_dict(e, BASE[e]["system"]), "t.toml"))) for e in BASE}


def test_the_oracle_covers_every_declared_field():
    """A field added to an engine's schema must get generated values here too."""
    for engine, fields in VALID.items():
        assert set(fields) == set(ENGINES[engine].system.defaults())
    assert ENGINES["queue"].system.defaults() == {}


@pytest.mark.parametrize("engine", list(VALID))
def test_generated_values_plan_and_run_agree(engine, instances):
    cases = [(f, v) for e, f, v in CASES if e == engine]
    rejected = 0
    for field, value in cases:
        system = {**BASE[engine]["system"], field: value}
        # a list value is a grid axis: [[a, b]] is the one point [a, b]
        point = value[0] if isinstance(value, list) else value
        valid = VALID[engine][field](point)
        try:
            parse_spec(spec_dict(engine, system), "t.toml")
            plan_error = None
        except UserError as err:
            plan_error = str(err)
        if valid:
            assert plan_error is None, (field, value, plan_error)
        else:
            rejected += 1
            assert plan_error is not None, f"{engine} system.{field} = {value!r} passed validate"
            path = f"t.toml: system.{field}[0]: " if isinstance(value, list) else f"t.toml: system.{field}: "
            assert plan_error.startswith(path), plan_error
            assert "\n" not in plan_error
        # the engine itself, on an instance of the same spec: same verdict
        try:
            _run(engine, {**BASE[engine]["system"], field: point}, instances[engine])
            run_error = None
        except UserError as err:
            run_error = str(err)
        if valid and engine == "packing" and field == "capacity" and np.min(point) < instances[engine]["demand"].max():
            # a valid capacity, but below this instance's largest demand (0.6): the job no server holds is refused
            assert run_error is not None and "which fits no server even when empty" in run_error, (value, run_error)
            continue
        assert (run_error is None) == valid, (field, value, run_error)
        if run_error is not None:
            assert run_error.startswith(f"{engine} engine: {field}: must be "), run_error
    assert rejected >= len(cases) // 2


@pytest.mark.parametrize("engine", list(VALID))
def test_a_bad_entry_in_a_grid_axis_is_named_by_index(engine):
    rng = random.Random(engine)
    for field, ok in VALID[engine].items():
        good = BASE[engine]["system"][field]
        bad = [v for v in generated(engine, field) if not isinstance(v, list) and not ok(v)]
        for value in rng.sample(bad, 6):
            with pytest.raises(UserError) as info:
                parse_spec(spec_dict(engine, {**BASE[engine]["system"], field: [good, value]}), "t.toml")
            assert str(info.value).startswith(f"t.toml: system.{field}[1]: must be "), str(info.value)


def test_unknown_names_and_queue_takes_none():
    for engine in VALID:
        with pytest.raises(UserError, match=rf"t.toml: system.cores: unknown system parameter for engine '{engine}'"):
            parse_spec(spec_dict(engine, {**BASE[engine]["system"], "cores": 4}), "t.toml")
    queue = {"name": "q", "engine": "queue", "policies": ["PS"], "workload": {"njobs": 10}, "system": {"servers": 2}}
    with pytest.raises(
        UserError, match="q.toml: system.servers: unknown system parameter for engine 'queue'; allowed: none"
    ):
        parse_spec(queue, "q.toml")


def test_malformed_value_count():
    """The generator is not silently empty: how many invalid values the two tests above reject."""
    invalid = [(e, f, v) for e, f, v in CASES if not VALID[e][f](v[0] if isinstance(v, list) else v)]
    assert len(CASES) == 33 * len(generated("dfrs", "nodes")) and len(invalid) >= 600


# ---- rules across fields and with the workload -------------------------------------------------------


@pytest.mark.parametrize(
    "engine, system, message",
    [
        (
            "batch",
            {"model": "nodes"},
            "t.toml: system.nodes: must be an integer >= 1 with model 'nodes' (it needs the "
            "number of nodes); got 0 (the default)",
        ),
        (
            "batch",
            {"model": "nodes", "nodes": [8, 0]},
            "t.toml: system.nodes[1]: must be an integer >= 1 with model 'nodes'",
        ),
        (
            "batch",
            {"model": ["procs", "nodes"], "procs": 8, "nodes": 0},
            "t.toml: system.nodes: must be an integer >= 1",
        ),
        # a lublin table has no machine size to take procs = 0 from
        (
            "batch",
            {"model": "procs"},
            "t.toml: system.procs: must be an integer >= 1 with model 'procs': the job table "
            "has no machine_procs column",
        ),
        (
            "batch",
            {"model": "nodes", "nodes": 32, "tasks_per_node": 2, "bound": True},
            "t.toml: system.bound: must be false with model 'nodes' and tasks_per_node x cpu_need = 2 x 1 > 1",
        ),
        (
            "batch",
            {"model": "nodes", "nodes": 32, "tasks_per_node": [1, 3], "cpu_need": 0.5, "bound": True},
            "t.toml: system.bound: must be false with model 'nodes' and tasks_per_node x cpu_need = 3 x 0.5 > 1",
        ),
        (
            "packing",
            {"capacity": [[1.0, 1.0]]},
            "t.toml: system.capacity[0]: must be a single number (the job table has "
            "one resource, 'demand'); got [1.0, 1.0]",
        ),
    ],
)
def test_rules_across_fields_and_the_workload(engine, system, message):
    with pytest.raises(UserError) as info:
        parse_spec(spec_dict(engine, system), "t.toml")
    assert str(info.value).startswith(message), str(info.value)


def test_rules_that_hold():
    ok = [
        ("batch", {"model": "nodes", "nodes": 32, "tasks_per_node": 2, "cpu_need": 0.5, "bound": True}),
        ("batch", {"model": "nodes", "nodes": 32, "procs": 0}),  # procs is not used by model nodes
        ("batch", {"model": "procs", "procs": 32, "nodes": 0}),
        ("packing", {"capacity": [[2.0]], "epoch": 0, "sample_every": 0}),
    ]
    for engine, system in ok:
        assert build_plan(parse_spec(spec_dict(engine, system), "t.toml")).configs
    # the workload gives each task its CPU need: the bound's tasks_per_node x need is the drawn rows' business
    annotated = spec_dict("batch", {"model": "nodes", "nodes": 32, "tasks_per_node": 2, "bound": True})
    annotated["workload"] = {**annotated["workload"], "cpu_need": 0.5}
    assert build_plan(parse_spec(annotated, "t.toml")).configs


def test_run_time_rules_match_plan_time():
    """The engines check the same rules on the real table (direct calls, `simulate`)."""
    from schedlab.engines.packing import run_table as packing_run
    from schedlab.engines.packing.policies import PACKING_POLICIES

    plan = build_plan(parse_spec(spec_dict("packing", BASE["packing"]["system"]), "t.toml"))
    jobs = _instance(plan)
    with pytest.raises(UserError, match=r"^packing engine: capacity: must be a single number \(the job table has one"):
        packing_run(jobs, PACKING_POLICIES["FIFO-FF"], capacity=[1.0, 1.0])
    # 0 and None both mean "every event" / "no series" in a direct call
    a = packing_run(jobs, PACKING_POLICIES["FIFO-FF"], epoch=0, sample_every=0)
    b = packing_run(jobs, PACKING_POLICIES["FIFO-FF"], epoch=None, sample_every=None)
    assert np.array_equal(a[0]["start"], b[0]["start"]) and a[2] is None and b[2] is None
    lublin = _instance(build_plan(parse_spec(spec_dict("batch", BASE["batch"]["system"]), "t.toml")))
    with pytest.raises(UserError, match="^batch engine: procs: must be an integer >= 1 with model 'procs'"):
        get_engine("batch").run(lublin, "FCFS", None, {"model": "procs"})
    with_machine = lublin.with_columns(machine_procs=np.full(lublin.height, 40))
    assert get_engine("batch").run(with_machine, "FCFS", None, {}).summary["capacity"] == 40.0
    with pytest.raises(UserError, match="^batch engine: bound: must be false with model 'nodes'"):
        get_engine("batch").run(
            lublin, "FCFS", None, {"model": "nodes", "nodes": 32, "tasks_per_node": 2, "bound": True}
        )


@pytest.mark.skipif(not (DATA / "pwa-swf").exists(), reason="needs the PWA SWF traces")
def test_an_swf_trace_gives_the_machine_size():
    spec = spec_dict("batch", {"model": "procs"})  # procs = 0: the header's MaxProcs
    spec["workload"] = {
        "kind": "trace",
        "reader": "swf",
        "path": str(DATA / "pwa-swf/HPC2N-2002-2.2-cln.swf.gz"),
        "window_length": 604800.0,
        "window": 3,
    }
    assert len(build_plan(parse_spec(spec, "t.toml")).configs) == 1


@pytest.mark.skipif(not (DATA / "google-clusterdata-2011").exists(), reason="needs the Google trace")
def test_a_capacity_list_against_the_trace_resources():
    google = tomllib.loads(Path("sweeps/google-packing.toml").read_text())  # reader_single_resource: demand
    data = {**google, "policies": ["FIFO-FF"], "system": {**google["system"], "capacity": [[1.0, 0.5]]}}
    with pytest.raises(UserError, match=r"^g.toml: system.capacity\[0\]: must be a single number"):
        parse_spec(data, "g.toml")
    workload = {k: v for k, v in google["workload"].items() if k != "reader_single_resource"}
    assert build_plan(parse_spec({**data, "workload": workload}, "g.toml")).configs  # cpu and mem


RULE_COLUMNS = {"demand", "cpu", "mem", "machine_procs", "cpu_need"}  # what the table rules ask about


@pytest.mark.parametrize(
    "engine, workload",
    [
        ("packing", {"kind": "packing", "slots": 200, "rate": 0.3, "sizes": [[0.2, 0.7]], "mean_service": 4}),
        ("batch", {"kind": "lublin", "njobs": 40, "nodes": 32}),
        ("batch", {"kind": "lublin", "njobs": 40, "nodes": 32, "load": 0.7, "cores_per_node": 4, "memory": "uniform"}),
        ("dfrs", {"kind": "lublin", "njobs": 40, "nodes": 32, "cpu_need": 0.5, "memory": 0.3}),
        pytest.param(
            "batch",
            {
                "kind": "trace",
                "reader": "swf",
                "path": str(DATA / "pwa-swf/HPC2N-2002-2.2-cln.swf.gz"),
                "window_length": 604800.0,
                "window": 5,
                "cores_per_node": 2,
                "memory": "trace",
            },
            marks=pytest.mark.skipif(not (DATA / "pwa-swf").exists(), reason="needs the PWA SWF traces"),
        ),
    ],
)
def test_plan_time_columns_match_a_drawn_instance(engine, workload):
    """The columns the plan-time rules read are those of the real table: the
    same set for generated kinds, and a superset that agrees on every column
    a rule asks about for a trace."""
    plan = build_plan(parse_spec({**spec_dict(engine, BASE[engine]["system"]), "workload": workload}, "t.toml"))
    point = plan.points[0]
    kind = workload_kind(point.kind)
    shared = kind.load_shared(point.params) if kind.load_shared else None
    rng = np.random.default_rng(np.random.SeedSequence(list(plan.instances([0])[0].seed_words)))
    real = set(kind.instance(rng, point.params, shared).columns)
    probe = system_schema.job_columns(kind, point.params, {})
    if kind.load_shared is None:
        assert probe == real
    else:
        assert probe >= real and probe & RULE_COLUMNS == real & RULE_COLUMNS


# ---- the declaration and the engines' signatures cannot drift ----------------------------------------


def test_run_table_arguments_are_the_declared_fields():
    from schedlab.engines.batch.sim import engine as batch
    from schedlab.engines.batch.sim.system import BATCH
    from schedlab.engines.dfrs import sim as dfrs
    from schedlab.engines.dfrs.sim import table as dfrs_table
    from schedlab.engines.dfrs.sim.system import DFRS

    # run_table takes the settings as **kwargs and hands them to table_inputs, whose keywords (and
    # defaults) are the one list of them (TABLE_SETTINGS); recorder: schedlab view's replay.
    for run_table, own in (
        (batch.run_table, {"path", "kernel", "recorder"}),
        (dfrs.run_table, {"nodes", "check", "recorder"}),
    ):
        assert {n for n, p in inspect.signature(run_table).parameters.items() if p.kind is p.KEYWORD_ONLY} == own
    assert batch.TABLE_SETTINGS == set(BATCH.defaults())
    assert dfrs_table.TABLE_SETTINGS | {"nodes"} == set(DFRS.defaults())
    for function, schema, extra in ((batch.table_inputs, BATCH, set()), (dfrs_table.table_inputs, DFRS, set())):
        sig = inspect.signature(function)
        kw = {n: p for n, p in sig.parameters.items() if p.kind is p.KEYWORD_ONLY}
        assert set(kw) - extra == set(schema.defaults())
        for name, p in kw.items():
            if name in extra or p.default is p.empty:  # dfrs nodes: the adapter always passes it
                continue
            declared = schema[name]
            assert p.default == declared.default or (p.default is None and declared.zero), name


# ---- valid specs keep their configuration ids --------------------------------------------------------

#: Config ids of the example sweeps (sha256 of the sorted ids, 16 hex digits),
#: computed before [system] values were checked: checking must not change them.
#: The four DFRS sweeps and batch twins (batch-hpc2n-nodes, batch-lublin-loads,
#: dfrs-hpc2n-weeks, dfrs-lublin-loads) were re-pinned when they took the DFRS
#: paper's annotation (RR-7659 §5.3), as in tests/sweep_ids.json.
SWEEP_IDS = {
    "batch-hpc2n-nodes.toml": "2b76a4400f68ba36",
    "batch-hpc2n-weeks.toml": "2605c5b4171457af",
    "batch-lublin-loads.toml": "02cadc16d641927c",
    "dfrs-hpc2n-weeks.toml": "897946c0274f501c",
    "dfrs-lublin-loads.toml": "0a485a3edcd8b1c3",
    "fb2010-sigma.toml": "000164433a63dd9b",
    "google-packing.toml": "84afe23dab84ed87",
    "packing-fig4.toml": "031f49c2eb131db4",
    "psbs-shape.toml": "31e9fdc9b03e9dfb",
    "psbs-sigma.toml": "11d065a3072ccfbb",
    # a trained agent (user code; its digest is of the syntax tree since #41, and of its declared data files:
    # agent.npz, training.json, since #37)
    # re-pinned: the slot-scoring agent replaced the PPO one, then (issue #38) the one reading time-invariant
    # features replaced the shift-trained one (the agent's code digest)
    "rl-lublin1.toml": "39a0dfd3446e7c51",
    "tetris-knob.toml": "b1dbc391affa7377",  # a [search] spec (new): its plan's one base configuration
}


def _ids_digest(plan) -> str:
    return hashlib.sha256(" ".join(sorted(plan.configs)).encode()).hexdigest()[:16]


@pytest.mark.skipif(not DATA.exists(), reason="the trace sweeps need ../shared/data")
def test_example_sweeps_validate_and_keep_their_config_ids():
    assert {p.name for p in Path("sweeps").glob("*.toml")} == set(SWEEP_IDS)
    for name, expected in SWEEP_IDS.items():
        path = Path("sweeps") / name
        plan = build_plan(load_spec(path), str(path))  # load_spec: user code resolved beside the spec
        assert _ids_digest(plan) == expected, name
        _assert_system_is_the_spec_grid(plan, tomllib.loads(path.read_text()).get("system", {}))


def _assert_system_is_the_spec_grid(plan, table: dict) -> None:
    """Each configuration carries its grid point of [system] as written (no
    default filled in, no value converted), and its id hashes that point."""
    axes = {k for k, v in table.items() if isinstance(v, list)}
    for config in plan.configs.values():
        assert set(config.system) == set(table)
        for k, v in config.system.items():
            assert (v in table[k] if k in axes else v == table[k]) and type(v) in {
                type(x) for x in (table[k] if k in axes else [table[k]])
            }
        identity = {
            "engine": config.engine,
            "policy": config.policy,
            "policy_params": config.policy_params,
            "workload": {"kind": config.workload_kind, "params": config.workload_params},
        }
        if config.system:
            identity["system"] = config.system
        if config.code is not None:  # a user's policy (e.g. a trained agent): its code's digest is in the id
            identity["code"] = config.code.identity
        assert digest(identity) == config.config_id


@pytest.mark.skipif(not DATA.exists(), reason="the trace pipelines need ../shared/data")
def test_every_pipeline_spec_at_every_scale_validates_with_its_system_as_written():
    from schedlab.pipelines.registry import PIPELINES

    seen = 0
    for p in PIPELINES.values():
        for scale in ("smoke", "quick", "paper"):
            for s in p.specs(scale, {}):
                plan = build_plan(SweepSpec.model_validate(s), p.name)  # what parse_spec checks, built once
                _assert_system_is_the_spec_grid(plan, s.get("system", {}))
                seen += 1
    assert seen >= 100


# ---- the command line --------------------------------------------------------------------------------


def test_cli_validate_names_the_system_field(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text(
        textwrap.dedent("""
        name = "b"
        engine = "packing"
        policies = ["FIFO-FF"]
        [workload]
        kind = "packing"
        slots = 50
        rate = 0.1
        sizes = [[0.5]]
        [system]
        servers = [2, -5]
        [replications]
        n = 1
    """)
    )
    res = subprocess.run([sys.executable, "-m", "schedlab.cli", "validate", str(bad)], capture_output=True, text=True)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert res.stderr.splitlines() == [f"schedlab: error: {bad}: system.servers[1]: must be an integer >= 1; got -5"]
    assert not (tmp_path / "results").exists()
    bad.write_text(bad.read_text().replace("servers = [2, -5]", "epoch = nan"))
    res = subprocess.run([sys.executable, "-m", "schedlab.cli", "validate", str(bad)], capture_output=True, text=True)
    assert res.returncode == 2
    assert res.stderr.splitlines() == [
        f"schedlab: error: {bad}: system.epoch: must be a number >= 0 (0: a decision at every event); got nan"
    ]
