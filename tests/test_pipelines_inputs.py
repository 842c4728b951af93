"""A pipeline's traces come from a data root and its agent from a folder the
caller gives (issue #37, schedlab.pipelines.inputs): `pipelines run --data`
(``$SCHEDLAB_DATA``) and ``--agent`` (``$SCHEDLAB_AGENT``). The defaults
(``../shared/data``, ``sweeps/rl``) expand every pipeline's specs byte for
byte as before the roots existed (pinned digests: a trace's path is part of
the configuration ids, and the spec of a results dir must match for a run to
resume); another root finds a trace linked into it; a wrong root is one line
naming the option, the variable and the path tried (exit 2)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from schedlab.cli import main
from schedlab.cli.pipeline_commands import DEFAULT_AGENT, DEFAULT_DATA
from schedlab.errors import UserError
from schedlab.pipelines import dfrs_common, inputs
from schedlab.pipelines.registry import PIPELINES

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / DEFAULT_DATA  # the default, from the checkout's root
needs_data = pytest.mark.skipif(not DATA.exists(), reason="the trace pipelines need ../shared/data")

#: sha256 (first 16 hex digits) of ``json.dumps(specs)`` of every pipeline that reads a trace or an agent, per
#: scale (and a paper-scale subset), computed on the commit before the data root (0177c19: the specs' paths were
#: literals ``../shared/data/...`` and ``sweeps/rl/agent.py:Agent``), from the checkout's root. rlsched-tables'
#: three were re-pinned when it gained RLScheduler's setting (a new sweep, rlsched-theirs, and four policies
#: appended to its agent sweep; every earlier sweep's spec unchanged, its policies a prefix of the new list);
#: its paper scale again when its agent sweep became every held-out sequence once (rlsched-rl-every-paper in
#: place of rlsched-rl-lublin1-paper; its other sweeps' specs, and its smoke and quick scales, unchanged).
PINNED = {
    "dfrs-fig1/smoke": "13ab72f38447eb9c",
    "dfrs-fig1/quick": "3d0d5b652d897da0",
    "dfrs-fig1/paper": "a3105b3b3d4cc3e4",
    "dfrs-fig1/paper/subset0.1": "1e21abb7df45d3b7",
    "dfrs-period/smoke": "8c36c2715e298328",
    "dfrs-period/quick": "ed26f42362e38b52",
    "dfrs-period/paper": "acd62fd005e77c41",
    "dfrs-period/paper/subset0.1": "81e4dccb0b2bb574",
    "dfrs-table/smoke": "33c8ad37a87644cd",
    "dfrs-table/quick": "8ee7bf97704b018a",
    "dfrs-table/paper": "ab14af68d6498990",
    "dfrs-table/paper/subset0.1": "a4ca00fc885bfab5",
    "pg-fig5/smoke": "3329f6ec5c144caa",
    "pg-fig5/quick": "ddd3a1fa22c803ad",
    "pg-fig5/paper": "e7886dae490f0a69",
    "psbs-fb2010/smoke": "3581e048b06f8561",
    "psbs-fb2010/quick": "8f12280fbc67aef8",
    "psbs-fb2010/paper": "a0c3b31fbbdf9640",
    "psbs-ircache/smoke": "3dea38e4d058cdd0",
    "psbs-ircache/quick": "c567324a9482a3fb",
    "psbs-ircache/paper": "ea64e3868c6e97f6",
    "rlsched-tables/smoke": "e34360b901ae4cfc",
    "rlsched-tables/quick": "9e4d44fe0df809e4",
    "rlsched-tables/paper": "5952a337ce2d4730",
    "tetris-fairness/smoke": "e945d70f0ee58875",
    "tetris-fairness/quick": "aa7d4f46858c5d3f",
    "tetris-fairness/paper": "f6585e985248d09f",
    "tetris-packing/smoke": "9e4e42f734790667",
    "tetris-packing/quick": "b8bbbd4ddee32208",
    "tetris-packing/paper": "e3f0bb8308cc9d57",
}
#: The smallest pipeline on one trace: what the end-to-end runs below run, at smoke scale.
SMALL = "psbs-fb2010"
TRACE = "swim-facebook/FB-2010_samples_24_times_1hr_0.tsv.gz"
#: SMALL's policies that read no size estimate (half of them): their rows depend on the trace alone.
EXACT = ("LAS", "PS", "SRPT")
ERROR = "schedlab: error: "  # how the command line prints a UserError


def digest(specs: list[dict]) -> str:
    return hashlib.sha256(json.dumps(specs).encode()).hexdigest()[:16]


@needs_data
def test_the_default_roots_expand_every_spec_as_before(monkeypatch):
    monkeypatch.chdir(ROOT)
    got = {}
    with inputs.using(data=DEFAULT_DATA, agent=DEFAULT_AGENT):
        for key in PINNED:
            name, scale, *subset = key.split("/")
            overrides = {dfrs_common.SUBSET_KEY: float(subset[0].removeprefix("subset"))} if subset else {}
            got[key] = digest(PIPELINES[name].specs(scale, overrides))
    assert got == PINNED


@needs_data
def test_every_pipeline_naming_a_folder_is_pinned(tmp_path):
    """A pipeline whose specs name the data root or the agent's folder (its TOML's, or one it borrows,
    or its code's) is in PINNED: the specs expanded with roots linked from a temporary folder say it.
    (PINNED also holds dfrs-fig1, which reads no trace but is built by dfrs_common, as those are.)"""
    (tmp_path / "data").symlink_to(DATA)
    (tmp_path / "agent").symlink_to(ROOT / DEFAULT_AGENT)
    with inputs.using(data=str(tmp_path / "data"), agent=str(tmp_path / "agent")):
        naming = {name for name, p in PIPELINES.items() if str(tmp_path) in json.dumps(p.specs("smoke", {}))}
    assert naming == {key.split("/")[0] for key in PINNED} - {"dfrs-fig1"}


def test_no_root_is_one_error_naming_the_option_and_the_variable(monkeypatch):
    monkeypatch.delenv(inputs.DATA_ENV, raising=False)
    with pytest.raises(UserError, match=r"^--data: .*give --data DIR or set SCHEDLAB_DATA$"):
        PIPELINES[SMALL].specs("smoke", {})
    monkeypatch.delenv(inputs.AGENT_ENV, raising=False)
    with inputs.using(data=str(DATA)), pytest.raises(UserError, match=r"^--agent: .*SCHEDLAB_AGENT$"):
        PIPELINES["rlsched-tables"].specs("smoke", {})


def test_a_root_is_written_as_given(tmp_path, monkeypatch):
    """No path made absolute or resolved (a path is part of ids); a trailing slash is not doubled; an
    agent's reference is checked by its file."""
    (tmp_path / "d" / "x").mkdir(parents=True)
    (tmp_path / "d" / "x" / "t.swf").write_text("")
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "agent.py").write_text("")
    monkeypatch.chdir(tmp_path)
    with inputs.using(data="d/", agent=inputs.Root("./a", "--agent")):
        assert inputs.data_path("x/t.swf") == "d/x/t.swf"
        assert inputs.substitute("{data}/x/t.swf") == "d/x/t.swf"
        assert inputs.substitute("{agent}/agent.py:Agent") == "./a/agent.py:Agent"
        assert inputs.substitute("x/{data}/t.swf") == "x/{data}/t.swf"  # a placeholder only leads a path
        with pytest.raises(UserError, match=r"^--agent: no such file or folder \./a/other\.py .*from --agent\)"):
            inputs.substitute("{agent}/other.py:Agent")
    monkeypatch.setenv(inputs.DATA_ENV, str(tmp_path / "d"))
    assert inputs.data_path("x/t.swf") == f"{tmp_path}/d/x/t.swf"


def test_the_variable_is_the_gym_environments_data_folder():
    from schedlab.gym.common import DATA_ENV

    assert inputs.DATA_ENV == DATA_ENV


def run(args: list[str], env: dict[str, str | None]):
    return CliRunner().invoke(main, ["pipelines", "run", SMALL, "--scale", "smoke", "--no-tracking", *args], env=env)


def test_a_wrong_root_is_one_line_with_exit_2(tmp_path):
    for args, env, origin in [
        (["--data", str(tmp_path / "none")], {}, "from --data"),
        ([], {"SCHEDLAB_DATA": str(tmp_path / "none")}, "from $SCHEDLAB_DATA"),
    ]:
        res = run([*args, "--out", str(tmp_path / "out")], env)
        assert res.exit_code == 2, res.output
        (line,) = res.output.splitlines()
        tried = f"{tmp_path}/none/{TRACE}"
        assert line.startswith(f"{ERROR}--data: no such file or folder {tried} ") and origin in line, line
        assert line.endswith(f"give --data DIR or set SCHEDLAB_DATA to the folder holding {TRACE}"), line
    assert not (tmp_path / "out").exists()  # nothing written
    res = CliRunner().invoke(
        main, ["pipelines", "run", "rlsched-tables", "--scale", "smoke", "--no-tracking", "--agent", str(tmp_path)]
    )
    assert res.exit_code == 2 and res.output.startswith(f"{ERROR}--agent: no such file or folder {tmp_path}/agent.py ")


def rows_of(out: Path) -> tuple[str, pl.DataFrame]:
    """(the trace path of the sweep's spec, its rows without ids) of a finished SMALL run."""
    from schedlab import load

    results = out / f"{SMALL}-smoke"
    path = json.loads((results / "manifest.json").read_text())["spec"]["workload"]["path"]
    frame = load(results).collect()
    keep = ["policy", "sigma", "replication", "n_jobs", "mst", "slowdown_mean", "slowdown_max", "makespan", "events"]
    return path, frame.select(keep).sort(["policy", "sigma", "replication"])


@needs_data
def test_a_linked_trace_under_another_root_and_the_default(tmp_path, monkeypatch):
    """--data DIR holding a link to the trace runs the pipeline on it; without --data and $SCHEDLAB_DATA the
    specs say ../shared/data as before, with the same rows; the default's folder named otherwise
    ($SCHEDLAB_DATA absolute, as the tests set it) is the default and resumes that run without a new row."""
    linked = tmp_path / "data" / TRACE
    linked.parent.mkdir(parents=True)
    linked.symlink_to(DATA / TRACE)
    monkeypatch.chdir(ROOT)  # the default is relative to the working directory: the checkout's root
    res = run(["--data", str(tmp_path / "data"), "--out", str(tmp_path / "other")], {})
    assert res.exit_code == 0, res.output
    path, theirs = rows_of(tmp_path / "other")
    assert path == str(linked) and theirs.height > 0

    res = run(["--out", str(tmp_path / "default")], {"SCHEDLAB_DATA": None})
    assert res.exit_code == 0, res.output
    path, ours = rows_of(tmp_path / "default")
    assert path == f"{DEFAULT_DATA}/{TRACE}"
    # the same trace, read through the link: the same rows for the policies that read no estimate (the random
    # estimate errors are drawn from the configuration, whose trace path differs: another root, other draws)
    exact = pl.col("policy").is_in(EXACT)
    assert ours.filter(exact).equals(theirs.filter(exact)) and ours.filter(exact).height == theirs.height // 2

    res = run(["--out", str(tmp_path / "default")], {"SCHEDLAB_DATA": str(DATA.resolve())})
    assert res.exit_code == 0, res.output
    assert rows_of(tmp_path / "default")[0] == f"{DEFAULT_DATA}/{TRACE}"
    assert "0 rows new" in (tmp_path / "default" / "report.md").read_text()


@needs_data
def test_an_agent_elsewhere_keeps_its_configuration_ids(tmp_path, monkeypatch):
    """--agent names a folder; the agent's configuration ids are its code's digest, not that path: a copy of
    the repository's agent elsewhere plans the same configurations."""
    import shutil

    from schedlab.platform.planning.plan import build_plan
    from schedlab.platform.planning.validate import parse_spec

    shutil.copytree(ROOT / DEFAULT_AGENT, tmp_path / "rl")
    monkeypatch.chdir(ROOT)

    def configs(agent: str) -> list[str]:
        with inputs.using(data=DEFAULT_DATA, agent=agent):
            (spec,) = [s for s in PIPELINES["rlsched-tables"].specs("smoke", {}) if s["name"].startswith("rlsched-rl-")]
        assert spec["policies"][0]["use"] == f"{agent}/agent.py:Agent"
        return sorted(build_plan(parse_spec(spec, "rlsched-tables"), "rlsched-tables").configs)

    moved, here = configs(str(tmp_path / "rl")), configs(DEFAULT_AGENT)
    # the agent, EASY, SJF+EASY, F1+EASY on the smoke sequence, in schedlab's setting and in RLScheduler's
    assert moved == here and len(here) == 8
