"""`schedlab pipelines list` keeps its columns aligned whatever the names'
lengths (the real registry, and with a pipeline of a long name added), and
`pipelines run --help` lists every scale that runs, `smoke` included."""

from __future__ import annotations

import shutil

from click.testing import CliRunner

from schedlab.cli import main
from schedlab.cli.pipeline_commands import ALL_SCALES
from schedlab.pipelines.base import check_scale
from schedlab.pipelines.declare import Declared
from schedlab.pipelines.registry import HERE, PIPELINES

LONG = "a-pipeline-with-a-much-longer-name-than-any-of-the-registry"


def columns_start(lines: list[str], texts: list[tuple[str, str]]) -> set[int]:
    """Where each line's figure column starts: after its name and the gap."""
    return {line.index(figure, len(name)) for line, (name, figure) in zip(lines, texts)}


def listed() -> list[str]:
    res = CliRunner().invoke(main, ["pipelines", "list"])
    assert res.exit_code == 0, res.output
    return res.output.splitlines()


def test_the_registry_lists_in_aligned_columns():
    lines = listed()
    assert len(lines) == len(PIPELINES)
    pipes = list(PIPELINES.values())
    assert len(columns_start(lines, [(p.name, p.figure) for p in pipes])) == 1
    assert len({line.index(p.paper, len(p.name) + len(p.figure)) for line, p in zip(lines, pipes)}) == 1
    for line, p in zip(lines, pipes):
        assert line.split()[0] == p.name and line.endswith(p.paper)


def test_a_long_name_keeps_the_columns_aligned(tmp_path, monkeypatch):
    path = tmp_path / "long.toml"
    shutil.copy(HERE / "psbs_fb2010.toml", path)
    text = path.read_text()
    name = PIPELINES["psbs-fb2010"].name
    path.write_text(text.replace(f'name = "{name}"', f'name = "{LONG}"', 1))
    declared = Declared(path)
    assert declared.name == LONG
    monkeypatch.setitem(PIPELINES, LONG, declared)
    lines = listed()
    pipes = list(PIPELINES.values())
    assert lines[-1].startswith(LONG + "  ")
    assert len(columns_start(lines, [(p.name, p.figure) for p in pipes])) == 1
    assert all(line.split()[0] == p.name for line, p in zip(lines, pipes))


def test_help_lists_every_scale_that_runs():
    help_text = CliRunner().invoke(main, ["pipelines", "run", "--help"]).output
    assert "|".join(ALL_SCALES) in help_text and "smoke" in help_text
    for scale in ALL_SCALES:
        check_scale(scale)  # each one listed is accepted
        assert f"{scale}:" in " ".join(help_text.split())  # and described
    res = CliRunner().invoke(main, ["pipelines", "run", "psbs-shape", "--scale", "huge"])
    assert res.exit_code == 2 and "unknown scale 'huge'" in res.output and "smoke" in res.output
