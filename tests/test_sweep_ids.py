"""Configuration ids, workload point ids and spec hashes of every spec in
sweeps/ are pinned (tests/sweep_ids.json, computed on the commit before the
validation and column-type changes): existing results dirs are keyed by them,
so no change to checking or to result columns may move one."""

import json
from pathlib import Path

import pytest

from schedlab.platform.execution.runner import manifest_for
from schedlab.platform.planning.plan import build_plan
from schedlab.platform.planning.validate import load_spec

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data"  # the specs' ../shared/data
PINNED = json.loads((ROOT / "tests" / "sweep_ids.json").read_text())


def test_every_sweep_is_pinned():
    assert sorted(PINNED) == sorted(p.name for p in (ROOT / "sweeps").glob("*.toml"))


@pytest.mark.parametrize("name", sorted(PINNED))
def test_ids_unchanged(name, monkeypatch):
    if "../shared/data" in (ROOT / "sweeps" / name).read_text() and not DATA.exists():
        pytest.skip("shared/data traces not present")
    monkeypatch.chdir(ROOT)  # the specs' trace paths are relative to the repository root
    spec = load_spec(Path("sweeps") / name)
    plan = build_plan(spec, f"sweeps/{name}")
    want = PINNED[name]
    assert manifest_for(spec, plan)["spec_hash"] == want["spec_hash"]
    assert sorted(p.point_id for p in plan.points) == want["points"]
    assert sorted(plan.configs) == want["configs"]
