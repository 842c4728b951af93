"""Every mistake at once, with a suggestion (issue #41): one `validate`
round reports every error of a spec, each one line naming the field, with
"did you mean" for keys, policy names, workload kinds, trace readers and
parameters; and a value that makes no sense (``mean_service = 0``) is one
line, exit 2, never a traceback."""

from __future__ import annotations

import contextlib
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from schedlab.cli import main
from schedlab.errors import UserError, UserErrors, close_names, did_you_mean, messages
from schedlab.platform.planning.validate import load_spec, parse_spec
from tests.processes import CHECKOUT, checkout_env

THREE_MISTAKES = """\
name = "three"
engine = "queue"
polices = ["PS", "SRPT"]

[workload]
kind = "synthetic"
njobs = 100
lod = 0.5

[replications]
m = 3
"""


def _lines(spec: str, tmp_path: Path, name: str = "spec.toml") -> list[str]:
    path = tmp_path / name
    path.write_text(spec)
    with pytest.raises(UserError) as err:
        load_spec(path)
    return messages(err.value)


def test_the_helper_suggests_the_closest_known_names():
    assert did_you_mean("Psbs", ["PS", "PSBS", "SRPT"]) == "; did you mean 'PSBS'?"  # another case
    assert close_names("SRTP", ["PS", "PSBS", "SRPT"]) == ["SRPT"]
    assert close_names("polices", ["policies", "engine"]) == ["policies"]
    assert close_names("m", ["n", "metric", "min", "max"]) == ["n"]  # too short for a ratio: one letter away
    assert did_you_mean("zzz", ["PS", "SRPT"]) == ""
    assert did_you_mean("PS", ["PS", "SRPT"]) == ""  # a known name is no mistake


def test_three_mistakes_in_one_round_each_with_a_suggestion(tmp_path):
    lines = _lines(THREE_MISTAKES, tmp_path)
    src = str(tmp_path / "spec.toml")
    assert sorted(lines) == sorted(
        [
            f"{src}: polices: unknown field; did you mean 'policies'?",
            f"{src}: replications.m: unknown field; did you mean 'n'?",
            f"{src}: workload.lod: unknown parameter for workload kind 'synthetic'; allowed: njobs, shape, "
            f"timeshape, load, sigma, size_dist, alpha, beta, weight_classes, load_mode; did you mean 'load'?",
        ]
    ), lines


def test_the_cli_prints_the_three_in_one_validate(tmp_path):
    spec = tmp_path / "three.toml"
    spec.write_text(THREE_MISTAKES)
    result = CliRunner().invoke(main, ["validate", str(spec)])
    assert result.exit_code == 2 and result.exception is None or isinstance(result.exception, SystemExit)
    errors = [x for x in result.output.splitlines() if x.startswith("schedlab: error: ")]
    assert len(errors) == 3, result.output
    for said in ("did you mean 'policies'?", "did you mean 'load'?", "did you mean 'n'?"):
        assert any(said in x for x in errors), result.output


def test_the_guide_shows_what_validate_prints(tmp_path):
    """docs/guide/sweeps.md's validation section: its three-mistake spec and the lines validate prints for it."""
    text = (CHECKOUT / "docs" / "guide" / "sweeps.md").read_text()
    section = text[text.index("This spec has three mistakes:") :]
    spec, shown = re.findall(r"^```[a-z]*\n(.*?)^```", section, re.S | re.M)[:2]
    assert tomllib.loads(spec) == tomllib.loads(THREE_MISTAKES)
    (tmp_path / "three.toml").write_text(spec)
    with contextlib.chdir(tmp_path):
        result = CliRunner().invoke(main, ["validate", "three.toml"])
    assert result.exit_code == 2
    assert result.output.splitlines() == shown.strip().splitlines()


def test_policy_names_get_a_suggestion(tmp_path):
    spec = THREE_MISTAKES.replace("polices", "policies").replace("lod", "load").replace("m = 3", "n = 3")
    spec = spec.replace('["PS", "SRPT"]', '["PS", "Psbs", "SRTP"]')
    lines = _lines(spec, tmp_path)
    assert len(lines) == 2, lines
    assert lines[0].endswith("did you mean 'PSBS'?") and ": policies[1]: unknown policy 'Psbs'" in lines[0]
    assert ": policies[2]: unknown policy 'SRTP'" in lines[1] and "did you mean 'SRPT'" in lines[1]


def test_engines_kinds_readers_and_tables_get_a_suggestion():
    base = {"name": "s", "engine": "queue", "policies": ["PS"], "replications": {"n": 1}}
    cases = [
        ({**base, "engine": "queu"}, "engine: unknown engine 'queu'", "did you mean 'queue'?"),
        ({**base, "workload": {"kind": "synthetik"}}, "workload.kind: engine 'queue' does not take", "'synthetic'"),
        (
            {**base, "workload": {"kind": "trace", "reader": "swff", "path": "x.swf"}},
            "unknown trace reader 'swff'",
            "did you mean 'swf'?",
        ),
        ({**base, "outputs": {"per_jb": True}}, "outputs.per_jb: unknown field", "did you mean 'per_job'?"),
        (
            {**base, "execution": {"max_in_flght": 2}},
            "execution.max_in_flght: unknown field",
            "did you mean 'max_in_flight'?",
        ),
    ]
    for data, where, suggestion in cases:
        with pytest.raises(UserError) as err:
            parse_spec(data, "s.toml")
        line = next((x for x in messages(err.value) if where in x), None)
        assert line is not None and suggestion in line, (where, messages(err.value))


def test_system_and_policy_parameters_every_one_with_a_suggestion():
    data = {
        "name": "s",
        "engine": "packing",
        "policies": [{"name": "Tetris", "params": {"fairnes": 0.5, "epsilonn": 0.1}}],
        "workload": {"kind": "packing", "slots": 10, "rate": 1.0, "uniform_lo": 0.1, "uniform_hi": 0.5},
        "system": {"server": 2, "capacty": 1.0},
        "replications": {"n": 1},
    }
    with pytest.raises(UserErrors) as err:
        parse_spec(data, "s.toml")
    lines = err.value.errors
    for field, meant in [
        ("policies[0].params.fairnes", "fairness"),
        ("policies[0].params.epsilonn", "epsilon"),
        ("system.server", "servers"),
        ("system.capacty", "capacity"),
    ]:
        assert any(x.startswith(f"s.toml: {field}: ") and f"did you mean '{meant}'" in x for x in lines), (field, lines)


def test_your_generators_parameters_every_one_its_own_line(tmp_path):
    (tmp_path / "gen.py").write_text(
        "def gen(rng, *, njobs: int = 10, load: float = 0.5):\n    raise AssertionError('not drawn by validate')\n"
    )
    data = {
        "name": "g",
        "engine": "queue",
        "policies": ["PS"],
        "workload": {"use": "gen.py:gen", "njobs": "x", "load": "y", "lod": 3},
        "replications": {"n": 1},
    }
    with pytest.raises(UserErrors) as err:
        parse_spec(data, "g.toml", tmp_path)
    assert err.value.errors == [
        "g.toml: workload.lod: unknown parameter for workload kind 'gen'; allowed: njobs, load; did you mean 'load'?",
        "g.toml: workload.njobs: input should be a valid integer; got 'x'",
        "g.toml: workload.load: input should be a valid number; got 'y'",
    ]


CUTOFF_POLICY = '''\
from schedlab.api import queue


class Cut(queue.Policy):
    """FIFO with a (here unused) size cutoff: a policy parameter to search."""

    def __init__(self, server, *, cutoff: float = 1.0):
        super().__init__(server)
        self.cutoff = cutoff
        self.pool = server.new_pool()
        server.serve(self.pool)

    def arrive(self, job, estimate, weight):
        self.server.place(job, self.pool)

    def depart(self, job):
        pass
'''


def test_a_search_parameter_suggests_policy_and_workload_names_at_the_parameter(tmp_path):
    (tmp_path / "cut.py").write_text(CUTOFF_POLICY)
    spec = tmp_path / "search.toml"
    spec.write_text(
        """\
name = "cut"
engine = "queue"
policies = [{name = "Cut", use = "cut.py:Cut"}]

[workload]
kind = "synthetic"
njobs = 50

[search]
metric = "mst"
trials = 2
[search.params]
cutof = {low = 0.5, high = 2.0}
lod = {low = 0.3, high = 0.8}
"""
    )
    with pytest.raises(UserErrors) as err:
        load_spec(spec)
    lines = err.value.errors
    cut = next(x for x in lines if ": search.params.cutof" in x)
    assert cut.startswith(f"{spec}: search.params.cutof: no such parameter (policy 'Cut' takes cutoff; ")
    assert cut.endswith("did you mean 'cutoff'?"), cut
    assert not any("cutof.low" in x for x in lines), lines  # the parameter, not its range end
    assert any(x.startswith(f"{spec}: search.params.lod: ") and "did you mean 'load'?" in x for x in lines), lines


def test_a_search_is_checked_beside_another_tables_mistake():
    data = {
        "name": "s",
        "engine": "packing",
        "policies": ["Tetris"],
        "workload": {"kind": "packing", "slots": 10, "rate": 1.0, "uniform_lo": 0.1, "uniform_hi": 0.5},
        "search": {"metric": "wait_mean", "trials": 2, "params": {"fairnes": {"low": 0.1, "high": 1.0}}},
        "outputs": {"per_jb": True},
    }
    with pytest.raises(UserErrors) as err:
        parse_spec(data, "s.toml")
    lines = err.value.errors
    assert lines[0] == "s.toml: outputs.per_jb: unknown field; did you mean 'per_job'?"
    assert lines[1].startswith("s.toml: search.params.fairnes: no such parameter (policy 'Tetris' takes epsilon")
    assert lines[1].endswith("did you mean 'fairness'?") and len(lines) == 2, lines


def test_what_only_running_shows_is_found_on_a_tiny_draw():
    """VQS refuses a capacity other than 1 in its constructor; a built-in metric's column the per-job
    table lacks: both were exit 0 from validate, then failed runs."""
    data = {
        "name": "s",
        "engine": "packing",
        "policies": ["VQS", "FIFO-FF"],
        "workload": {"kind": "packing", "slots": 10, "rate": 1.0, "uniform_lo": 0.1, "uniform_hi": 0.5},
        "system": {"capacity": [1.0, 2.0]},
        "replications": {"n": 1},
    }
    with pytest.raises(UserError) as err:
        parse_spec(data, "s.toml")
    assert messages(err.value) == [
        "s.toml: system: policy 'VQS' with [system] {capacity = 2.0}: policy VQS: needs every server capacity = 1 "
        "(normalise sizes), server 0 has 2.0"
    ]
    queue = {
        "name": "q",
        "engine": "queue",
        "policies": ["PS"],
        "workload": {"kind": "synthetic", "njobs": 20},
        "metrics": [{"name": "p9", "use": "quantile", "params": {"column": "sojorn", "q": 0.9}}],
        "replications": {"n": 1},
    }
    with pytest.raises(UserError) as err:
        parse_spec(queue, "q.toml")
    assert messages(err.value) == [
        "q.toml: metrics[0].params: the per-job table has no column 'sojorn'; columns: job_id, submit, size, "
        "estimate, weight, completion, sojourn, slowdown"
    ]


@pytest.mark.parametrize(
    ("table", "field", "value"),
    [
        ("execution", "sim_budget_seconds", 1e308),  # was every simulation failing (OverflowError of the timer)
        ("execution", "connect_timeout_seconds", float("inf")),
        ("execution", "cpus_per_task", float("inf")),
        ("replications", "n", 10**15),
        ("system", "penalty", 1e308),  # was a run that never ends (the clock lost in the penalty)
        ("system", "nodes", 10**12),
    ],
)
def test_absurd_values_are_one_line_naming_the_field(table, field, value):
    data = {
        "name": "s",
        "engine": "dfrs" if table == "system" else "queue",
        "policies": ["GreedyPM*/OPT=MIN"] if table == "system" else ["PS"],
        "workload": {"kind": "lublin", "njobs": 20, "nodes": 8} if table == "system" else {"kind": "synthetic"},
        "replications": {"n": 1},
    }
    data[table] = {**data.get(table, {}), field: value}
    with pytest.raises(UserError) as err:
        parse_spec(data, "s.toml")
    assert [x.split(": ")[1] for x in messages(err.value)] == [f"{table}.{field}"], messages(err.value)


def test_mean_service_zero_is_one_line_exit_2_no_traceback(tmp_path):
    """The seeded malformed spec: sweeps/tetris-knob.toml with mean_service = 0 (was a ZeroDivisionError
    from validate, exit 0, and from run)."""
    text = (CHECKOUT / "sweeps" / "tetris-knob.toml").read_text()
    assert "\nmean_service = 20\n" in text
    spec = tmp_path / "tetris-zero.toml"
    spec.write_text(text.replace("\nmean_service = 20\n", "\nmean_service = 0\n"))
    for command in ("validate", "run"):
        args = [command, str(spec)] + (["--no-tracking", "--no-progress"] if command == "run" else [])
        proc = subprocess.run(
            [sys.executable, "-m", "schedlab.cli", *args],
            capture_output=True,
            text=True,
            env=checkout_env(),
            cwd=tmp_path,
            timeout=300,
        )
        assert proc.returncode == 2, (command, proc.stdout, proc.stderr)
        assert "Traceback" not in proc.stderr, proc.stderr
        expected = f"schedlab: error: {spec}: workload.mean_service: must be a finite number >= 1; got 0"
        assert proc.stderr.strip().splitlines() == [expected], (command, proc.stderr)
