"""validate / plan reject before Ray what run would reject, and report every
independent mistake of a spec, one line each (the issue "validate passes specs
that run then rejects")."""

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from schedlab.engines import get_engine
from schedlab.errors import UserError, UserErrors
from schedlab.platform.planning.validate import parse_spec
from schedlab.workloads.registry import workload_kind

ROOT = Path(__file__).resolve().parent.parent
HPC2N = ROOT.parent / "shared" / "data" / "pwa-swf" / "HPC2N-2002-2.2-cln.swf.gz"


def lublin_batch(procs=16, nodes=64, **extra):
    system = {"model": "procs", "procs": procs, **extra.pop("system", {})}
    return {
        "name": "w",
        "engine": "batch",
        "policies": ["FCFS"],
        "system": system,
        "workload": {"kind": "lublin", "njobs": 200, "nodes": nodes, **extra},
    }


def run_one(kind, params, engine, system, policy):
    """What a worker does with one instance (replication seed 1)."""
    k = workload_kind(kind)
    full = k.complete(params, "workload")
    jobs = k.instance(np.random.default_rng(1), full, k.load_shared(full) if k.load_shared else None)
    return get_engine(engine).run(jobs, policy, {}, system)


def test_lublin_wider_than_the_machine_is_rejected_and_run_rejects_it_too():
    with pytest.raises(
        UserError,
        match=r"^w.toml: system.procs: the machine has 16 processors but Lublin jobs drawn "
        r"for workload.nodes = 64 can be 64 processors wide.*oversize = \"drop\"",
    ):
        parse_spec(lublin_batch(), "w.toml")
    with pytest.raises(UserError, match="needs .* processors but the machine has 16"):
        run_one("lublin", {"njobs": 200, "nodes": 64}, "batch", {"procs": 16}, "FCFS")


def test_lublin_that_fits_or_drops_is_accepted():
    parse_spec(lublin_batch(procs=64), "w.toml")
    parse_spec(lublin_batch(system={"oversize": "drop"}), "w.toml")
    # model nodes: 256 processors in tasks of 4 cores -> 64 tasks on 64 nodes fits, on 32 does not
    nodes = {"model": "nodes", "nodes": 64, "procs": 0}
    parse_spec(lublin_batch(nodes=256, cores_per_node=4, system=nodes), "w.toml")
    with pytest.raises(UserError, match=r"system.nodes\[1\]: the machine has 32 nodes but .* \(64 tasks\)"):
        parse_spec(lublin_batch(nodes=256, cores_per_node=4, system={**nodes, "nodes": [64, 32]}), "w.toml")


def test_dfrs_memory_bound():
    spec = {
        "name": "d",
        "engine": "dfrs",
        "policies": ["Greedy*/OPT=MIN"],
        "system": {"nodes": 16},
        "workload": {"kind": "lublin", "njobs": 50, "nodes": 64, "memory": "uniform", "memory_hi": 0.5},
    }
    with pytest.raises(UserError, match=r"system.nodes: 16 nodes hold at most 32 tasks of memory 0.5 but Lublin"):
        parse_spec(spec, "d.toml")
    parse_spec({**spec, "workload": {**spec["workload"], "memory_hi": 0.25}}, "d.toml")  # 64 tasks fit


def test_overload_is_accepted_because_run_accepts_it():
    """load > 1 is an overloaded system on a finite job list: every engine
    runs it (queues grow, every job ends), so validate accepts it."""
    parse_spec(
        {
            "name": "q",
            "engine": "queue",
            "policies": ["PS"],
            "workload": {"kind": "synthetic", "njobs": 100, "load": 1.2},
        },
        "q.toml",
    )
    assert run_one("synthetic", {"njobs": 100, "load": 1.2}, "queue", {}, "PS").summary["n_jobs"] == 100
    parse_spec(lublin_batch(procs=64, load=1.2), "w.toml")
    assert (
        run_one("lublin", {"njobs": 100, "nodes": 64, "load": 1.2}, "batch", {"procs": 64}, "FCFS").summary["n_jobs"]
        == 100
    )


@pytest.mark.parametrize(
    "params, expected",
    [
        ({"load": float("inf")}, "workload.load: must be a finite number >= 0"),
        ({"njobs": 1, "load": 0.5}, "workload.load: scaling to load 0.5 needs at least 2 jobs"),
    ],
)
def test_lublin_loads_run_would_reject(params, expected):
    with pytest.raises(UserError, match=expected):
        parse_spec(lublin_batch(procs=64, **params), "w.toml")
    with pytest.raises(UserError, match="load: "):
        run_one("lublin", {"njobs": 200, "nodes": 64, **params}, "batch", {"procs": 64}, "FCFS")


def test_missing_trace_says_what_it_was_resolved_against(tmp_path, monkeypatch):
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "t.swf").write_text("")
    monkeypatch.chdir(tmp_path)
    spec = {
        "name": "t",
        "engine": "batch",
        "policies": ["FCFS"],
        "workload": {"kind": "trace", "reader": "swf", "path": "t.swf"},
    }
    with pytest.raises(UserError) as err:
        parse_spec(spec, "specs/t.toml", tmp_path / "specs")
    msg = str(err.value)
    assert msg.startswith(
        "specs/t.toml: workload.path: no such file or folder: 't.swf' resolved against the "
        f"current directory {tmp_path} is {tmp_path / 't.swf'}"
    )
    assert f"relative to the spec's folder it would be {tmp_path / 'specs' / 't.swf'}, which exists" in msg
    with pytest.raises(UserError, match=r"^f.toml: workload.path: no such file or folder: /nonexistent/x.csv$"):
        parse_spec(
            {
                "name": "f",
                "engine": "queue",
                "policies": ["PS"],
                "workload": {"kind": "file", "path": "/nonexistent/x.csv"},
            },
            "f.toml",
        )


@pytest.mark.skipif(not HPC2N.exists(), reason="HPC2N trace not present")
def test_trace_widths_are_exact():
    spec = {
        "name": "h",
        "engine": "batch",
        "policies": ["FCFS"],
        "system": {"model": "procs", "procs": 32},
        "workload": {"kind": "trace", "reader": "swf", "path": str(HPC2N), "window_length": 604800.0, "window": [0, 1]},
    }
    with pytest.raises(
        UserError,
        match=r"^h.toml: system.procs: the machine has 32 processors but job \d+ of window "
        r"0 of .*HPC2N.* \(and 1 more workload points\) needs \d+ processors; with "
        r"oversize = \"error\" \(the default\) every run of it fails",
    ):
        parse_spec(spec, "h.toml")
    parse_spec({**spec, "system": {"model": "procs", "procs": 240}}, "h.toml")  # the machine's own size
    parse_spec({**spec, "workload": {**spec["workload"], "max_procs": 32}}, "h.toml")  # narrow jobs only


def test_every_independent_mistake_is_reported():
    data = {
        "name": "bad name",
        "engine": "queue",
        "seed": -1,
        "policies": ["PS", "NOPE", {"name": "SRPT", "bogus": 1}],
        "workload": {"kind": "synthetic", "njobs": 0, "load": [0.5, -1.0], "sigma": -1},
        "replications": {"n": 0},
    }
    with pytest.raises(UserErrors) as err:
        parse_spec(data, "m.toml")
    assert err.value.errors == [
        "m.toml: name: must be letters, digits, '.', '_' or '-' (it names a directory)",
        "m.toml: seed: Input should be greater than or equal to 0",
        "m.toml: policies[2].bogus: unknown field",
        "m.toml: replications.n: Input should be greater than or equal to 1",
        "m.toml: workload.njobs: must be an integer >= 1; got 0",
        "m.toml: workload.sigma: must be a number >= 0; got -1",
        "m.toml: workload.load: must be a number > 0; got -1.0",
    ]  # the policies are broken at the pydantic level: the plan's checks run on the rest
    data["policies"] = ["PS", "NOPE"]
    with pytest.raises(UserErrors) as err:
        parse_spec(data, "m.toml")
    lines = err.value.errors
    assert lines[:2] == [
        "m.toml: name: must be letters, digits, '.', '_' or '-' (it names a directory)",
        "m.toml: seed: Input should be greater than or equal to 0",
    ]
    assert "m.toml: replications.n: Input should be greater than or equal to 1" in lines
    assert any(line.startswith("m.toml: policies[1]: unknown policy 'NOPE'") for line in lines)
    for expected in (
        "m.toml: workload.njobs: must be an integer >= 1; got 0",
        "m.toml: workload.sigma: must be a number >= 0; got -1",
        "m.toml: workload.load: must be a number > 0; got -1.0",
    ):
        assert expected in lines
    assert len(lines) == len(set(lines)) == 7  # njobs and sigma once, not once per load grid point


def test_one_mistake_keeps_the_one_line_format():
    with pytest.raises(UserError) as err:
        parse_spec(
            {"name": "o", "engine": "queue", "policies": ["PS"], "workload": {"kind": "synthetic", "njobs": 0}},
            "o.toml",
        )
    assert type(err.value) is UserError
    assert str(err.value) == "o.toml: workload.njobs: must be an integer >= 1; got 0"


def test_cli_prints_each_error_on_its_own_line(tmp_path):
    spec = tmp_path / "bad.toml"
    spec.write_text(
        textwrap.dedent("""
        name = "bad"
        engine = "batch"
        policies = ["FCFS", "NOPE"]
        [system]
        model = "procs"
        procs = 16
        [workload]
        kind = "lublin"
        njobs = 100
        nodes = 64
        load = 1e400
    """)
    )
    for command in ("validate", "plan"):
        out = subprocess.run(
            [sys.executable, "-m", "schedlab.cli", command, str(spec)], capture_output=True, text=True, cwd=tmp_path
        )
        assert out.returncode == 2, out.stderr
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 2, out.stderr
        assert lines[0].startswith(f"schedlab: error: {spec}: policies[1]: unknown policy 'NOPE'")
        assert (
            lines[1] == f"schedlab: error: {spec}: workload.load: must be a finite number >= 0 "
            "(0: the model's own arrivals); got inf"
        )
        assert "Traceback" not in out.stderr


def test_unknown_workload_key_does_not_hide_the_other_errors(tmp_path):
    """Issue 26: an unknown workload key hid the other mistakes (three validate rounds); now one round
    shows all of them, each on its line, exit 2."""
    spec = tmp_path / "bad.toml"
    spec.write_text(
        textwrap.dedent("""
        name = "bad"
        engine = "queue"
        policies = ["PS", "NOPE"]
        [workload]
        kind = "synthetic"
        njobs = 100
        lod = 0.9
        shpe = 2.0
        shape = -1.0
        [replications]
        n = 0
    """)
    )
    out = subprocess.run([sys.executable, "-m", "schedlab.cli", "validate", str(spec)], capture_output=True, text=True)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 5, out.stderr
    for place in ("replications.n:", "policies[1]: unknown policy 'NOPE'", "workload.lod: unknown parameter",
                  "workload.shpe: unknown parameter", "workload.shape: must be a number > 0"):  # fmt: skip
        assert sum(place in line for line in lines) == 1, (place, lines)


def test_validate_warns_on_an_unstable_queue_and_a_silent_single_replication(tmp_path):
    spec = tmp_path / "warn.toml"
    spec.write_text(
        textwrap.dedent("""
        name = "warn"
        engine = "queue"
        policies = ["PS"]
        [workload]
        njobs = 100
        load = [0.5, 1.0, 1.5]
    """)
    )
    for command in ("validate", "plan", "run"):  # run: warned before it starts, and it runs
        extra = ["--no-tracking", "--no-progress"] if command == "run" else []
        out = subprocess.run(
            [sys.executable, "-m", "schedlab.cli", command, str(spec), *extra],
            capture_output=True,
            text=True,
            cwd=tmp_path,
        )
        assert out.returncode == 0, out.stderr
        warnings = [line for line in out.stderr.splitlines() if line.startswith("schedlab: warning: ")]
        assert len(warnings) == 2, out.stderr
        assert f"{spec}: workload.load: 1, 1.5 >= 1: an open queue" in warnings[0] and "unstable" in warnings[0]
        assert f"{spec}: replications: not given, so n = 1" in warnings[1]
    assert (tmp_path / "results" / "warn" / "manifest.json").exists()
    spec.write_text(spec.read_text().replace("load = [0.5, 1.0, 1.5]", "load = 0.9") + "[replications]\nn = 1\n")
    out = subprocess.run([sys.executable, "-m", "schedlab.cli", "validate", str(spec)], capture_output=True, text=True)
    assert out.returncode == 0 and "warning" not in out.stderr, out.stderr
