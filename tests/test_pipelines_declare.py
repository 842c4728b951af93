"""Pipelines as data: the example of docs/architecture.md run as written (its
sweep's rows made without Ray, its figure and claims checked against the rows
by hand), the TOML files the registry declares, bad data named by place, and
the pipelines' imports running one way (no cycle; base without the registry)."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from schedlab.errors import UserError
from schedlab.pipelines.declare import Declared
from schedlab.platform.plan import build_plan
from schedlab.platform.runner import manifest_for
from schedlab.platform.spec import parse_spec
from schedlab.platform.store import ResultStore
from schedlab.platform.tasks import run_instances

ROOT = Path(__file__).resolve().parents[1]
PIPELINES_DIR = ROOT / "schedlab" / "pipelines"


def doc_example() -> str:
    """The TOML block of docs/architecture.md's Pipelines section."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    section = text[text.index("## Pipelines\n") :]
    section = section[: section.index("\n## ", 1)]
    (block,) = re.findall(r"```toml\n(.*?)```", section, re.S)
    return block


def make_rows(spec: dict, out: Path) -> Path:
    """A sweep's results dir written without Ray: the plan's instances run by the
    task function and committed through the store (as tests/test_compare.py)."""
    spec = parse_spec({**spec, "outputs": {"dir": str(out / spec["name"])}, "tracking": {"enabled": False}}, "ex")
    plan = build_plan(spec)
    store = ResultStore(spec.results_dir())
    store.prepare(manifest_for(spec, plan), True)
    n = spec.replications.n
    result = run_instances(
        plan.engine, [(i, list(i.point.configs)) for i in plan.instances(range(n))], None, False, plan.metrics
    )
    assert not result.failures
    store.commit(result.summary, result.jobs, result.failures)
    return spec.results_dir()


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    root = tmp_path_factory.mktemp("declare")
    path = root / "example_load.toml"
    path.write_text(doc_example())
    pipe = Declared(path).pipeline()
    dirs = {s["name"]: make_rows(s, root) for s in pipe.specs("smoke", {})}
    from schedlab.plotting import style

    with style():
        figures = pipe.report(dirs, root)
    return pipe, dirs, figures


def test_doc_example_specs(example):
    pipe, _, _ = example
    (spec,) = pipe.specs("quick", {"workload": {"load": [0.7]}})
    assert spec["name"] == "example-load-quick" and spec["workload"]["njobs"] == 3000
    assert spec["replications"] == {"n": 5} and spec["workload"]["load"] == [0.7]  # overrides merged last


def test_doc_example_figure_and_claim_match_the_rows(example):
    """The claim's verdict and detail, recomputed from the raw rows: per
    replication MST / SRPT's MST, averaged over replications, per load."""
    _, dirs, (fig,) = example
    from schedlab import load

    rows = load(next(iter(dirs.values()))).select(["load", "policy", "replication", "mst"]).collect()
    srpt = rows.filter(pl.col("policy") == "SRPT").select(["load", "replication", pl.col("mst").alias("opt")])
    ratio = (
        rows.join(srpt, on=["load", "replication"])
        .with_columns((pl.col("mst") / pl.col("opt")).alias("r"))
        .group_by(["load", "policy"])
        .agg(pl.col("r").mean())
    )
    r = {(row["load"], row["policy"]): row["r"] for row in ratio.iter_rows(named=True)}
    loads = sorted({k[0] for k in r})
    assert fig.series == ["PS", "PSBS"] and fig.png.exists() and fig.pdf.read_bytes()[:5] == b"%PDF-"
    (check,) = fig.checks
    assert check.claim == "PSBS beats PS at every load"
    assert check.holds == all(r[(x, "PSBS")] < r[(x, "PS")] for x in loads)
    assert check.detail == "PSBS / PS: " + ", ".join(f"{x:g}: {r[(x, 'PSBS')] / r[(x, 'PS')]:.3f}" for x in loads)
    assert fig.measured.startswith("MST / optimal (SRPT), per replication then averaged:\n\n| load | PS | PSBS |")
    assert "Replications per point: 3" in fig.measured


def test_registry_declares_every_toml():
    from schedlab.pipelines.registry import CODE_ONLY, DECLARED, PIPELINES

    tomls = sorted(PIPELINES_DIR.glob("*.toml"))
    assert len(DECLARED) == len(tomls) and set(PIPELINES) == set(DECLARED) | {
        __import__(f"schedlab.pipelines.{m}", fromlist=["PIPELINE"]).PIPELINE.name for m in CODE_ONLY
    }
    for path in tomls:  # every claim a check function states exists in the module beside the TOML
        d = DECLARED[Declared(path).doc["name"]]
        for fig in d.doc.get("figures", []):
            for name in [c["check"] for c in fig.get("claims", []) if "check" in c] + [
                fig[k] for k in ("table", "plot", "measured", "paper_says_fields") if isinstance(fig.get(k), str)
            ]:
                assert callable(d.fn(name)), (path.name, name)


def test_missing_scale_value_names_the_place(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(doc_example().replace("njobs = 300\n", ""))
    with pytest.raises(
        UserError, match=r"example-load\.sweeps\[0\]\.workload\.njobs: \$njobs has no value at scale 'smoke'"
    ):
        Declared(path).pipeline().specs("smoke", {})


def test_bad_claim_row_names_the_place(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(doc_example().replace('comparison = "<"', 'comparision = "<"'))
    with pytest.raises(UserError, match=r"bad\.toml: figures\[0\]\.claims\[0\]: unknown field 'comparision'"):
        Declared(path)
    path.write_text(doc_example().replace('comparison = "<"', 'comparison = "<<"'))
    with pytest.raises(UserError, match=r"figures\[0\]\.claims\[0\]: comparison must be one of <, <=, >, >="):
        Declared(path)


def _imports(path: Path) -> set[str]:
    """The schedlab.pipelines modules a module imports, at any depth of its code."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "schedlab.pipelines":
                out |= {f"schedlab.pipelines.{a.name}" for a in node.names}
            elif node.module.startswith("schedlab.pipelines."):
                out.add(node.module)
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("schedlab.pipelines.")}
    return out


def test_pipeline_imports_have_no_cycle():
    graph = {f"schedlab.pipelines.{p.stem}": _imports(p) for p in PIPELINES_DIR.glob("*.py")}
    done, active = set(), []

    def visit(m: str) -> None:
        assert m not in active, f"import cycle: {' -> '.join(active[active.index(m) :] + [m])}"
        if m in done:
            return
        active.append(m)
        for n in sorted(graph.get(m, ())):
            visit(n)
        active.pop()
        done.add(m)

    for m in sorted(graph):
        visit(m)
    assert "schedlab.pipelines.registry" not in graph["schedlab.pipelines.base"]


def test_base_imports_without_the_registry():
    code = (
        "import sys, schedlab.pipelines.base, schedlab.pipelines.declare; "
        "assert not [m for m in sys.modules if m.startswith('schedlab.pipelines.') and m.split('.')[-1] "
        "not in ('base', 'common', 'declare')], sorted(sys.modules)"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
