"""The Tetris pipelines (tetris-packing, tetris-fairness): smoke-scale runs
(one Ray session, tracking off), their figures and report.md, valid specs at
every scale, the job-by-job slowdown computation on a hand-made table, and the
trace kind's ``group_column`` (Google tasks grouped into jobs, two resources)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from schedlab.pipelines import inputs
from schedlab.pipelines import tetris_fairness as tf_pipe
from schedlab.pipelines import tetris_packing as tp_pipe
from schedlab.pipelines.registry import PIPELINES
from tests.pipeline_outputs import check_outputs, run_smoke

TRACE = inputs.substitute(tp_pipe.TRACE, check=False)  # below the data root ($SCHEDLAB_DATA: conftest)
HAVE_TRACE = Path(TRACE).exists()
needs_trace = pytest.mark.skipif(not HAVE_TRACE, reason=f"Google trace not found at {TRACE}")

EXPECTED_SERIES = {
    "tetris-packing": ["Tetris", "FIFO-FF", "BF-J/S", "Slots-Fair"],
    "tetris-fairness": ["fraction slowed", "mean slowdown of slowed", "mean JCT", "makespan"],
}
RATIO_TOL = 1e-12  # ratios recomputed from the summary rows


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    if not HAVE_TRACE:
        pytest.skip(f"Google trace not found at {TRACE}")
    return run_smoke(EXPECTED_SERIES, tmp_path_factory.mktemp("tetris"))


@pytest.mark.parametrize("name", list(EXPECTED_SERIES))
def test_pipeline_outputs(runs, name):
    check_outputs(runs[name], [EXPECTED_SERIES[name]])


def test_packing_ratios_match_summary_rows(runs):
    """The bars are per-window ratios to Slots-Fair: recompute Tetris's from the raw rows;
    the two-resource sweep really ran on cpu and mem and reported JCTs."""
    from schedlab import load

    result = runs["tetris-packing"]
    frame, table = tp_pipe.load_table(result.results_dirs)
    assert set(frame["policy"].to_list()) == set(tp_pipe.POLICIES)
    windows = sorted(set(frame["window"].to_list()))
    assert windows == tp_pipe.DOC["scales"]["smoke"]["windows"]
    by = {(r["policy"], r["window"]): r for r in frame.iter_rows(named=True)}
    expect = np.mean([by[("Tetris", w)]["jct_mean"] / by[("Slots-Fair", w)]["jct_mean"] for w in windows])
    row = table.filter(pl.col("policy") == "Tetris").row(0, named=True)
    assert abs(row["jct_mean_ratio_mean"] - expect) <= RATIO_TOL * expect and row["n"] == len(windows)
    two_d = load(result.results_dirs["tetris-packing-2d-smoke"]).collect()
    assert {"utilisation_cpu", "utilisation_mem", "jct_mean"} <= set(two_d.columns)
    assert two_d["group_column"].unique().to_list() == ["google_job_id"]


def test_fairness_jct_from_per_job_rows(runs):
    """Per-job JCTs recomputed from the task rows agree with the engine's jct_mean."""
    result = runs["tetris-fairness"]
    (d,) = result.results_dirs.values()
    jct, summ = tf_pipe.load_jct(d)
    assert set(jct.columns) >= {"window", "group", "policy", "f", "jct"}
    for r in summ.iter_rows(named=True):
        sub = jct.filter((pl.col("policy") == r["policy"]) & (pl.col("window") == int(r["window"])))
        if r["policy"] == "Tetris":
            sub = sub.filter(pl.col("f") == r["policy_fairness"])
        assert math.isclose(sub["jct"].mean(), r["jct_mean"], rel_tol=1e-9)


def test_job_slowdowns_hand_made():
    """Two windows, reference f = 0.1: job-by-job slowed fraction and mean slowdown."""
    base = pl.DataFrame({"window": [0, 0, 0, 1, 1], "group": [1, 2, 3, 1, 7], "jct": [100.0, 50.0, 0.2, 10.0, 40.0]})
    runs = pl.DataFrame(
        {
            "window": [0, 0, 0, 1, 1] * 2,
            "group": [1, 2, 3, 1, 7] * 2,
            "f": [0.5] * 5 + [1.0] * 5,
            # f = 0.5: job (0,1) +10 %, (0,3) 0.2 s -> 0.9 s (both below the 1-s floor: tie), (1,7) +50 %
            # f = 1.0: only faster or equal (one unfinished job is left out)
            "jct": [110.0, 50.0, 0.9, 8.0, 60.0, 90.0, 50.0, 0.2, 10.0, float("nan")],
        }
    )
    out = tf_pipe.job_slowdowns(runs, base, ["f"], floor=1.0)
    assert out["f"].to_list() == [0.5, 1.0]
    a, b = out.row(0, named=True), out.row(1, named=True)
    assert (a["jobs"], a["slowed"]) == (5, 2)
    assert math.isclose(a["frac_slowed"], 0.4)
    assert math.isclose(a["slowdown_mean"], (0.1 + 0.5) / 2)
    assert (b["jobs"], b["slowed"], b["frac_slowed"]) == (4, 0, 0.0) and b["slowdown_mean"] is None
    per_window = tf_pipe.job_slowdowns(runs, base, ["window", "f"], floor=1.0)
    w = {(r["window"], r["f"]): r for r in per_window.iter_rows(named=True)}
    assert w[(0, 0.5)]["slowed"] == 1 and math.isclose(w[(1, 0.5)]["frac_slowed"], 0.5)
    # without the floor the 0.2 s -> 0.9 s job counts as slowed (by 350 %)
    assert tf_pipe.job_slowdowns(runs, base, ["f"], floor=0.0).row(0, named=True)["slowed"] == 3


def test_window_ratios_hand_made():
    """The per-window ratios tetris-packing's table is built from (`common.ratios_to` on the window)."""
    from schedlab.pipelines.common import ratios_to

    frame = pl.DataFrame(
        {
            "policy": ["Slots-Fair", "Tetris", "Slots-Fair", "Tetris"],
            "window": [0, 0, 1, 1],
            "makespan": [100.0, 60.0, 50.0, 50.0],
            "jct_mean": [10.0, 6.0, 4.0, 2.0],
        }
    )
    r = ratios_to(frame, ["makespan", "jct_mean"], tp_pipe.BASELINE, ["window"])
    r = r.filter(pl.col("policy") == "Tetris").sort("window")
    assert r["makespan_ratio"].to_list() == [0.6, 1.0] and r["jct_mean_ratio"].to_list() == [0.6, 0.5]


def test_specs_every_scale():
    """(test_pipelines.py parses every pipeline's specs at every scale.)"""
    for name in EXPECTED_SERIES:
        for scale in ("smoke", "quick", "paper"):
            specs = PIPELINES[name].specs(scale, {})
            assert specs and all(s["name"].endswith(f"-{scale}") for s in specs)
            for s in specs:
                w = s["workload"]
                assert w["reader"] == "google" and w["group_column"] == "google_job_id" and w["path"] == TRACE
    two, one = PIPELINES["tetris-packing"].specs("quick", {})
    assert "reader_single_resource" not in two["workload"] and one["workload"]["reader_single_resource"] is True
    assert two["policies"][0] == {"name": "Tetris", "params": {"fairness": 0.75}}
    assert set(one["policies"]) == {"FIFO-FF", "BF-J/S"}
    fair = PIPELINES["tetris-fairness"].specs("quick", {})[0]
    assert fair["outputs"]["per_job"] is True and 0.75 in fair["policies"][0]["params"]["fairness"]
    assert fair["workload"] == two["workload"] and fair["system"] == two["system"]
    over = PIPELINES["tetris-fairness"].specs("quick", {"system": {"servers": 9}})[0]
    assert over["system"]["servers"] == 9 and over["system"]["epoch"] == tp_pipe.EPOCH


@needs_trace
def test_trace_group_column(tmp_path):
    """group_column copies a trace column into the packing engine's `group`; an empty
    one is left out of the workload point, so existing configuration ids do not change."""
    from schedlab.errors import UserError
    from schedlab.platform.planning.plan import build_plan
    from schedlab.platform.planning.validate import parse_spec
    from schedlab.workloads.registry import workload_kind

    def plan(**extra):
        return build_plan(
            parse_spec(
                {
                    "name": "g",
                    "engine": "packing",
                    "seed": 1,
                    "policies": ["Tetris", "Slots-Fair"],
                    "system": {"servers": 5},
                    "replications": {"n": 1},
                    "outputs": {"dir": str(tmp_path / "g")},
                    "workload": {
                        "kind": "trace",
                        "reader": "google",
                        "path": TRACE,
                        "window_length": 300.0,
                        "window": 0,
                        **extra,
                    },
                },
                "g.toml",
            )
        )

    assert set(plan().configs) == set(plan(group_column="").configs)
    grouped = plan(group_column="google_job_id")
    assert not set(grouped.configs) & set(plan().configs)
    (point,) = grouped.points
    kind = workload_kind("trace")
    shared = kind.load_shared(point.params)
    jobs = kind.instance(np.random.default_rng(0), point.params, shared)
    assert (jobs["group"] == jobs["google_job_id"]).all() and {"cpu", "mem"} <= set(jobs.columns)
    assert "demand" not in jobs.columns  # two resources reach the engine
    assert "group" not in kind.instance(np.random.default_rng(0), plan().points[0].params, shared).columns
    with pytest.raises(UserError, match="group_column: the trace has no column 'nope'"):
        plan(group_column="nope")


@needs_trace
def test_offered_loads_read_the_trace_the_sweep_ran(tmp_path):
    """The report's offered load per window is read from the trace the sweep's spec names (its manifest),
    wherever the data root was: a link to the trace under another folder gives the same loads."""
    import json

    from schedlab.platform.storage.seam import manifest_path

    rows = [{"window": 0, "window_length": 3600.0, "system_servers": 100}]
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "google").symlink_to(Path(TRACE).resolve())
    loads = {}
    for name, trace in (("here", TRACE), ("linked", str(tmp_path / "data" / "google"))):
        (tmp_path / name).mkdir()
        manifest_path(tmp_path / name).write_text(json.dumps({"spec": {"workload": {"path": trace}}}))
        loads[name] = tp_pipe.offered_loads(rows, tmp_path / name)
    assert loads["here"] is not None and loads["here"][0] > 0 and loads["linked"] == loads["here"]
