"""Pipelines as data: the example of docs/architecture.md run as written (its
sweep's rows made without Ray, its figure and claims checked against the rows
by hand), the TOML files the registry declares, bad data named by place, and
the pipelines' imports running one way (no cycle; base without the registry)."""

from __future__ import annotations

import ast
import dataclasses
import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy import stats as sps

from schedlab.errors import UserError
from schedlab.pipelines.declare import Declared
from schedlab.platform.execution.runner import manifest_for
from schedlab.platform.execution.tasks import run_instances
from schedlab.platform.planning.plan import build_plan
from schedlab.platform.planning.validate import parse_spec
from schedlab.platform.storage.store import ResultStore

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
    pipe = Declared(path)
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
    # the verdict reads the paired 95 % interval of PSBS / PS (t interval of the mean log ratio, scipy), not the means
    paired = rows.pivot(on="policy", index=["load", "replication"], values="mst")
    ci = {}
    for x in loads:
        d = np.log(paired.filter(pl.col("load") == x).select(pl.col("PSBS") / pl.col("PS")).to_series().to_numpy())
        lo, hi = sps.t.interval(0.95, d.size - 1, loc=d.mean(), scale=d.std(ddof=1) / np.sqrt(d.size))
        ci[x] = (math.exp(d.mean()), math.exp(lo), math.exp(hi))
    expected = (
        "holds"
        if all(c[2] < 1 for c in ci.values())
        else "fails"
        if any(c[1] >= 1 for c in ci.values())
        else "inconclusive"
    )
    assert check.outcome == expected
    assert check.detail == "PSBS / PS: " + ", ".join(
        f"{x:g}: {r[(x, 'PSBS')] / r[(x, 'PS')]:.3f} (PSBS / PS {ci[x][0]:.3f} [{ci[x][1]:.3f}, {ci[x][2]:.3f}])"
        for x in loads
    )
    assert fig.measured.startswith("MST / optimal (SRPT), per replication then averaged:\n\n| load | PS | PSBS |")
    assert "Replications per point: 3" in fig.measured


def test_registry_declares_every_toml():
    from schedlab.pipelines.registry import PIPELINES

    tomls = sorted(PIPELINES_DIR.glob("*.toml"))
    assert len(PIPELINES) == len(tomls)
    for path in tomls:  # every claim a check function states exists in the module beside the TOML
        d = PIPELINES[Declared(path).name]
        for fig in d.doc.get("figures", []):
            for name in [c["check"] for c in fig.get("claims", []) if "check" in c] + [
                fig[k] for k in ("table", "plot", "measured", "paper_says_fields") if isinstance(fig.get(k), str)
            ]:
                assert callable(d.fn(name)), (path.name, name)


def test_missing_scale_value_names_the_place(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(doc_example().replace("njobs = 300, ", ""))
    with pytest.raises(
        UserError, match=r"example-load\.sweeps\[0\]\.workload\.njobs: \$njobs has no value at scale 'smoke'"
    ):
        Declared(path).specs("smoke", {})


def test_missing_pipeline_field_names_the_file(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(doc_example().replace('paper = "Example: PSBS against PS as the load grows"\n', ""))
    with pytest.raises(UserError, match=r"bad\.toml: 'paper' must be given, as a string"):
        Declared(path)


def test_bad_claim_row_names_the_place(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(doc_example().replace('comparison = "<"', 'comparision = "<"'))
    with pytest.raises(UserError, match=r"bad\.toml: figures\[0\]\.claims\[0\]: unknown field 'comparision'"):
        Declared(path)
    path.write_text(doc_example().replace('comparison = "<"', 'comparison = "<<"'))
    with pytest.raises(UserError, match=r"figures\[0\]\.claims\[0\]: comparison must be one of <, <=, >, >="):
        Declared(path)
    path.write_text(doc_example().replace('comparison = "<"', 'comparison = "<", only = "middle"'))
    with pytest.raises(UserError, match=r"figures\[0\]\.claims\[0\]: only must be \"first\" or \"last\""):
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
        "not in ('base', 'common', 'declare', 'inputs')], sorted(sys.modules)"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


#: the 95 % half-width of every mean of the hand-made tables
HALF = 0.01


def _means(x: str, values: dict[tuple, float], facet: str | None = None) -> pl.DataFrame:
    """A summarized table by hand: ``values`` {(policy, x value[, facet value]): ratio_mean}, each ± `HALF`."""
    rows = [
        {"policy": k[0], x: k[1], **({facet: k[2]} if facet else {}), "ratio_mean": v, "ratio_ci95": HALF}
        for k, v in values.items()
    ]
    return pl.DataFrame(rows)


def test_claim_kinds_spread_and_gap_grows():
    """The claim kinds of declare's vocabulary, against values worked by hand."""
    from schedlab.pipelines.declare import KINDS, Claim, FigureData

    t = _means(
        "sigma",
        {
            ("A", 0.5, 0.25): 1.2, ("B", 0.5, 0.25): 1.0, ("A", 1.0, 0.25): 1.5, ("B", 1.0, 0.25): 1.0,
            ("A", 0.5, 0.125): 3.0, ("B", 0.5, 0.125): 1.0, ("A", 1.0, 0.125): 2.0, ("B", 1.0, 0.125): 1.0,
        },
        "shape",
    )  # fmt: skip
    fig = {"plot": {"x": "sigma", "y": "ratio"}, "panels": [{"where": {"shape": 0.25}}, {"where": {"shape": 0.125}}]}
    data = FigureData(t, {}, {}, fig)
    gap = KINDS["gap_grows"](data, Claim(says="gap", quantity="A / B"))
    # max A/B: 1.5 in [1.49 / 1.01, 1.51 / 0.99] at shape 0.25; 3.0 in [2.99 / 1.01, 3.01 / 0.99] at 0.125
    assert gap.outcome == "holds"
    assert gap.detail == "shape 0.25: max A/B 1.50 [1.48, 1.53], shape 0.125: max A/B 3.00 [2.96, 3.04]"
    spread = Claim(says="within {tolerance:.0%} at sigma {sigma:g}", quantity="B, A", at={"shape": 0.25, "sigma": 0.5})
    found = KINDS["spread"](data, dataclasses.replace(spread, tolerance=0.25))
    # A / B - 1 = 0.2, in [1.19 / 1.01 - 1, 1.21 / 0.99 - 1] = [0.178, 0.222]
    assert found.outcome == "holds" and found.claim == "within 25% at sigma 0.5"
    assert found.detail == "B 1.000 [0.990, 1.010], A 1.200 [1.190, 1.210] (spread 20.0%, between 17.8% and 22.2%)"
    assert KINDS["spread"](data, dataclasses.replace(spread, tolerance=0.1)).outcome == "fails"
    # 0.2 <= 0.2 by the means, but the interval reaches 0.222: inconclusive, not "holds"
    assert KINDS["spread"](data, dataclasses.replace(spread, tolerance=0.2)).outcome == "inconclusive"
    assert KINDS["spread"](data, dataclasses.replace(spread, at={"shape": 0.25, "sigma": 2.0})) is None
    middle = KINDS["spread"](data, dataclasses.replace(spread, at={"shape": 0.125, "sigma": 2.0}, at_else="middle"))
    assert middle.claim == "within 0% at sigma 1"
    assert middle.detail == "B 1.000 [0.990, 1.010], A 2.000 [1.990, 2.010] (spread 100.0%, between 97.0% and 103.0%)"


def test_comparison_of_several_quantities_first_point_and_per_panel(tmp_path):
    from schedlab.pipelines.declare import Claim, FigureData

    t = _means(
        "load", {("A", 0.5): 1.0, ("B", 0.5): 2.0, ("C", 0.5): 4.0, ("A", 0.9): 3.0, ("B", 0.9): 2.5, ("C", 0.9): 5.0}
    )
    data = FigureData(t, {}, {}, {})
    both = Claim(
        says="s", quantity="A / C, B / C", comparison="<", label="", sep="; ", point="{x:g}: A {A:.1f}, C {C:.1f}"
    )
    found = both.compare(data, "load", "ratio")
    # without rows at hand the quotient's interval is the bounds' quotient: A / C at 0.5 in [0.99 / 4.01, 1.01 / 3.99]
    assert found.outcome == "holds"
    assert found.detail == (
        "0.5: A 1.0, C 4.0 (A / C 0.250 [0.247, 0.253]; B / C 0.500 [0.496, 0.504]); "
        "0.9: A 3.0, C 5.0 (A / C 0.600 [0.597, 0.603]; B / C 0.500 [0.497, 0.503])"
    )
    # A / B at 0.9: 3.0 / 2.5 = 1.2 in [2.99 / 2.51, 3.01 / 2.49]: wholly above 1
    assert dataclasses.replace(both, quantity="A / B, B / C").compare(data, "load", "ratio").outcome == "fails"
    close = t.with_columns(
        pl.when(pl.col("policy") == "B")
        .then(pl.col("ratio_mean") * 0 + 3.005)
        .otherwise(pl.col("ratio_mean"))
        .alias("ratio_mean")
    )
    # A 3.0 ± 0.01 against B 3.005 ± 0.01 at 0.9: the means say A < B, the intervals overlap across 1
    ab = dataclasses.replace(both, quantity="A / B", only="last")
    assert ab.compare(FigureData(close, {}, {}, {}), "load", "ratio").outcome == "inconclusive"
    first = dataclasses.replace(both, says="at {lo:g}", quantity="A / B", only="first")
    assert first.compare(data, "load", "ratio").holds and first.compare(data, "load", "ratio").claim == "at 0.5"
    assert dataclasses.replace(first, where={"load": {">": 1}}).compare(data, "load", "ratio") is None
    none = dataclasses.replace(both, where={"load": {">": 1}}, empty="no load above 1")
    assert none.compare(data, "load", "ratio").detail == "no load above 1"
    path = tmp_path / "example.toml"
    path.write_text(doc_example())
    fig = {
        "claims_per_panel": True,
        "plot": {"x": "load", "y": "ratio"},
        "panels": [{"name": "one"}, {"name": "two"}],
        "claims": [{"says": "{panel}: B below C", "quantity": "B / C", "comparison": "<"}],
    }
    slower = t.with_columns(
        pl.when(pl.col("policy") == "B").then(9.0).otherwise(pl.col("ratio_mean")).alias("ratio_mean")
    )
    checks = Declared(path).checks(fig, FigureData(None, {"one": t, "two": slower}, {}, fig))
    assert [(c.claim, c.outcome) for c in checks] == [("one: B below C", "holds"), ("two: B below C", "fails")]


def test_every_sweep_holds_what_the_sweeps_share():
    from schedlab.pipelines.declare import sweep_specs

    doc = {
        "name": "x",
        "every_sweep": {"engine": "queue", "workload": {"kind": "synthetic", "load": 0.9, "sigma": 0.5}},
        "sweeps": [{"name": "a-{scale}", "workload": {"load": "$load"}}, {"name": "b-{scale}", "seed": 2}],
        "scales": {"smoke": {"load": [0.5]}},
    }
    a, b = sweep_specs(doc, "smoke", {"workload": {"sigma": 1.0}})
    assert a == {"engine": "queue", "workload": {"kind": "synthetic", "load": [0.5], "sigma": 1.0}, "name": "a-smoke"}
    assert b == {
        "engine": "queue",
        "workload": {"kind": "synthetic", "load": 0.9, "sigma": 1.0},
        "name": "b-smoke",
        "seed": 2,
    }
