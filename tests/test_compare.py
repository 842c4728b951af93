"""Paired comparisons: the statistics against scipy and hand-worked numbers,
pairing by (workload point, replication), `schedlab compare` (table, CSV,
JSON, errors), the adaptive paired target end to end, and the coverage of the
paired interval on M/M/1 (FIFO vs PS: a difference whose expectation is known
exactly)."""

from __future__ import annotations

import json
import math

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner
from scipy import stats as sps

import schedlab
from schedlab.cli import main
from schedlab.errors import UserError
from schedlab.platform.execution.runner import manifest_for
from schedlab.platform.execution.tasks import run_instances
from schedlab.platform.planning.plan import build_plan
from schedlab.platform.planning.validate import parse_spec
from schedlab.platform.statistics.stats import holm, paired
from schedlab.platform.storage.store import ResultStore

EXACT = 1e-12  # same arithmetic, different code paths


def make_results(tmp_path, policies=("FIFO", "PS", "PSBS", "LAS"), workload=None, n=6, name="cmp"):
    """A results dir made without Ray: the plan's instances run by the task
    function itself and committed through the store (the rows a sweep writes)."""
    spec = parse_spec(
        {
            "name": name,
            "engine": "queue",
            "seed": 4,
            "policies": list(policies),
            "workload": workload or {"kind": "synthetic", "njobs": 300, "shape": [0.5, 1.0], "sigma": [0.5, 1.0]},
            "replications": {"n": n},
            "outputs": {"dir": str(tmp_path / name)},
            "tracking": {"enabled": False},
        },
        "cmp.toml",
    )
    plan = build_plan(spec)
    store = ResultStore(spec.results_dir())
    store.prepare(manifest_for(spec, plan), True)
    from schedlab.workloads.registry import workload_kind

    instances = list(plan.instances(range(n)))
    kind = workload_kind(instances[0].point.kind)
    shared = kind.load_shared(instances[0].point.params) if kind.load_shared else None  # one point: one input
    work = [(inst, list(inst.point.configs)) for inst in instances]
    result = run_instances(plan.engine, work, shared, False, plan.metrics)
    assert not result.failures
    store.commit(result.summary, result.jobs, result.failures)
    return spec.results_dir()


# ---------------------------------------------------------------- statistics


def test_paired_matches_scipy_ttest_rel():
    rng = np.random.default_rng(3)
    a = rng.normal(10, 2, 12)
    b = a + rng.normal(0.5, 0.3, 12)
    p = paired(b - a)
    ref = sps.ttest_rel(b, a)
    ci = ref.confidence_interval(0.95)
    assert abs(p.mean - (b - a).mean()) < EXACT
    assert abs(p.low - ci.low) < 1e-9 and abs(p.high - ci.high) < 1e-9
    assert abs(p.p_value - ref.pvalue) < 1e-12
    assert p.n == 12


def test_paired_edge_cases():
    assert math.isnan(paired([1.0]).halfwidth) and paired([1.0]).n == 1
    # identical differences are one sample: no interval, no p value (not 0-width, p = 0 or 1)
    same = paired([0.0, 0.0, 0.0])
    assert same.identical and same.n == 3 and same.n_effective == 1
    assert math.isnan(same.halfwidth) and math.isnan(same.p_value) and same.mean == 0.0
    shifted = paired([2.0, 2.0, 2.0])
    assert shifted.identical and shifted.mean == 2.0 and math.isnan(shifted.halfwidth) and math.isnan(shifted.p_value)
    # 0.1 three times: the rounded mean of equal values need not be the value; identity is exact equality
    tenth = paired([0.1, 0.1, 0.1])
    assert tenth.identical and tenth.mean == 0.1
    assert not paired([2.0, 2.0, 2.0 + 2**-51]).identical


def test_holm_hand_worked():
    # sorted 0.01, 0.03, 0.04 -> x3 = 0.03, x2 = 0.06, x1 = 0.04 -> running max 0.03, 0.06, 0.06
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06], abs=1e-15)
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])
    out = holm([0.02, float("nan"), 0.01])
    assert out[0] == pytest.approx(0.02) and math.isnan(out[1]) and out[2] == pytest.approx(0.02)


# ---------------------------------------------------------------- schedlab.compare


def test_compare_pairs_by_point_and_replication(tmp_path):
    d = make_results(tmp_path)
    rows = schedlab.load(d).collect()
    table = schedlab.compare(d, baseline="PS", metric="mst")
    assert table.columns[:4] == ["shape", "sigma", "policy", "baseline"]
    assert table.height == 4 * 3 and set(table["policy"]) == {"FIFO", "PSBS", "LAS"}
    for rec in table.iter_rows(named=True):
        at = rows.filter((pl.col("shape") == rec["shape"]) & (pl.col("sigma") == rec["sigma"]))
        mine = at.filter(pl.col("policy") == rec["policy"]).sort("replication")["mst"].to_numpy()
        base = at.filter(pl.col("policy") == "PS").sort("replication")["mst"].to_numpy()
        ref = sps.ttest_rel(mine, base)
        ci = ref.confidence_interval(0.95)
        assert rec["n"] == 6
        assert abs(rec["diff"] - (mine - base).mean()) < 1e-9
        assert abs(rec["ci_low"] - ci.low) < 1e-9 and abs(rec["ci_high"] - ci.high) < 1e-9
        assert abs(rec["p_value"] - ref.pvalue) < 1e-12
    # Holm within each point: the adjusted p values of the 3 policies
    for _point, grp in table.group_by(["shape", "sigma"]):
        assert grp["p_holm"].to_list() == pytest.approx(holm(grp["p_value"].to_list()))


def test_compare_ratio_is_log_scale_and_pools_points(tmp_path):
    d = make_results(tmp_path)
    rows = schedlab.load(d).collect()
    table = schedlab.compare(d, baseline="PS", metric="mst", by=["shape"], ratio=True)
    assert set(table.columns) >= {"ratio", "ci_low", "ci_high"} and "sigma" not in table.columns
    rec = table.filter((pl.col("shape") == 0.5) & (pl.col("policy") == "PSBS")).row(0, named=True)
    at = rows.filter(pl.col("shape") == 0.5)
    key = ["sigma", "replication"]
    mine = at.filter(pl.col("policy") == "PSBS").sort(key)["mst"].to_numpy()
    base = at.filter(pl.col("policy") == "PS").sort(key)["mst"].to_numpy()
    logs = np.log(mine / base)
    half = sps.t.ppf(0.975, logs.size - 1) * logs.std(ddof=1) / math.sqrt(logs.size)
    assert rec["n"] == 12  # 2 sigma points x 6 replications
    assert abs(rec["ratio"] - math.exp(logs.mean())) < 1e-9
    assert abs(rec["ci_low"] - math.exp(logs.mean() - half)) < 1e-9
    assert abs(rec["ci_high"] - math.exp(logs.mean() + half)) < 1e-9


def test_compare_identical_policies_and_errors(tmp_path):
    d = make_results(
        tmp_path, policies=("PS", "GPS", "FIFO"), workload={"kind": "synthetic", "njobs": 200}, name="same"
    )
    table = schedlab.compare(d, baseline="PS")
    gps = table.filter(pl.col("policy") == "GPS").row(0, named=True)  # equal weights: GPS is PS
    # the same schedule on every instance: the n differences (all 0) are one sample, no interval, no p
    assert gps["diff"] == 0.0 and gps["identical"] and gps["n_effective"] == 1 and gps["n"] > 1
    assert math.isnan(gps["ci_low"]) and math.isnan(gps["p_value"]) and gps["significant"] is None
    fifo = table.filter(pl.col("policy") == "FIFO").row(0, named=True)
    assert not fifo["identical"] and fifo["n_effective"] == fifo["n"] and fifo["ci_low"] < fifo["ci_high"]
    with pytest.raises(UserError, match="--baseline: 'SRPT' is not a policy"):
        schedlab.compare(d, baseline="SRPT")
    with pytest.raises(UserError, match="--metric: 'nope'"):
        schedlab.compare(d, baseline="PS", metric="nope")
    with pytest.raises(UserError, match="--by: 'nope'"):
        schedlab.compare(d, baseline="PS", by="nope")


# ---------------------------------------------------------------- CLI


def test_cli_compare_table_csv_json(tmp_path):
    d = make_results(tmp_path)
    runner = CliRunner()
    out = runner.invoke(main, ["compare", str(d), "--baseline", "PS", "--by", "shape"])
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert "Holm" in lines[0] and "paired" in lines[0]
    assert lines[1].split()[:2] == ["shape", "policy"]
    assert len(lines) == 2 + 2 * 3
    csv = runner.invoke(main, ["compare", str(d), "--baseline", "PS", "--csv", "--ratio"])
    assert csv.exit_code == 0
    frame = pl.read_csv(csv.output.encode())
    assert frame.height == 12 and "ratio" in frame.columns and "p_holm" in frame.columns
    js = runner.invoke(main, ["compare", str(d), "--baseline", "PS", "--json"])
    doc = json.loads(js.output)
    assert doc["correction"] == "holm" and doc["baseline"] == "PS" and len(doc["rows"]) == 12
    table = schedlab.compare(d, baseline="PS")
    assert [r["diff"] for r in doc["rows"]] == pytest.approx(table["diff"].to_list())


@pytest.mark.parametrize(
    "args, field",
    [
        (["--baseline", "XYZ"], "--baseline"),
        (["--baseline", "PS", "--metric", "nope"], "--metric"),
        (["--baseline", "PS", "--by", "nope"], "--by"),
    ],
)
def test_cli_compare_bad_input_one_line_exit_2(tmp_path, args, field):
    d = make_results(tmp_path, workload={"kind": "synthetic", "njobs": 100}, n=2, name="bad")
    out = CliRunner().invoke(main, ["compare", str(d), *args])
    assert out.exit_code == 2
    text = out.output.strip().splitlines()
    assert len(text) == 1 and text[0].startswith(f"schedlab: error: {field}")


# ---------------------------------------------------------------- spec fields


@pytest.mark.parametrize(
    "reps, where",
    [
        ({"metric": "mst", "rel_halfwidth": 0.05, "target": "paired"}, "replications.baseline"),
        ({"metric": "mst", "rel_halfwidth": 0.05, "target": "paired", "baseline": "SRPT"}, "replications.baseline"),
        ({"metric": "mst", "rel_halfwidth": 0.05, "baseline": "PS"}, "replications.baseline"),
        ({"metric": "mst", "rel_halfwidth": 0.05, "target": "pairs", "baseline": "PS"}, "replications.target"),
        (
            {"metric": "mst", "rel_halfwidth": 0.05, "target": "paired", "baseline": "PS", "ratio": "maybe"},
            "replications.ratio",
        ),
        ({"n": 3, "ratio": True}, "replications.ratio"),
        ({"n": 3, "target": "paired", "baseline": "PS"}, "replications.target"),
        ({"metric": "mst", "rel_halfwidth": 0.05, "target": "paired", "baseline": "PS", "min": 1}, "replications.min"),
    ],
)
def test_paired_target_validation_names_the_field(reps, where):
    data = {
        "name": "v",
        "engine": "queue",
        "policies": ["PS", "FIFO"],
        "workload": {"njobs": 100},
        "replications": reps,
    }
    with pytest.raises(UserError) as err:
        parse_spec(data, "v.toml")
    assert str(err.value).startswith(f"v.toml: {where}: ")


def test_new_fields_leave_old_spec_hashes_alone():
    data = {
        "name": "h",
        "engine": "queue",
        "policies": ["PS", "FIFO"],
        "workload": {"njobs": 100},
        "replications": {"metric": "mst", "rel_halfwidth": 0.05},
    }
    plain = parse_spec(data, "h.toml").result_defining()
    assert set(plain["replications"]) == {"n", "metric", "rel_halfwidth", "min", "max", "batch"}
    assert "warmup" not in plain
    paired_spec = parse_spec(
        {**data, "replications": {**data["replications"], "target": "paired", "baseline": "PS"}}, "h.toml"
    ).result_defining()
    assert paired_spec["replications"]["target"] == "paired" and paired_spec != plain


# ---------------------------------------------------------------- adaptive, paired target (Ray)


@pytest.fixture(scope="module")
def local_ray():
    import ray

    if ray.is_initialized():
        ray.shutdown()
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.mark.parametrize("ratio", [False, True])
def test_adaptive_paired_target_stops_when_every_interval_is_within(tmp_path, local_ray, ratio):
    from schedlab.platform.execution.runner import run_sweep

    rel = 0.05
    spec = parse_spec(
        {
            "name": "ap",
            "engine": "queue",
            "seed": 2,
            "policies": ["PS", "PSBS", "LAS"],
            "workload": {"kind": "synthetic", "njobs": 300, "shape": [0.5, 2.0]},
            "replications": {
                "metric": "mst",
                "rel_halfwidth": rel,
                "target": "paired",
                "baseline": "PS",
                "ratio": ratio,
                "min": 3,
                "max": 40,
                "batch": 2,
            },
            "outputs": {"dir": str(tmp_path / "ap")},
            "tracking": {"enabled": False},
        },
        "ap.toml",
    )
    report = run_sweep(spec)
    assert not report.failures and report.rounds > 1
    table = schedlab.compare(spec.results_dir(), baseline="PS", ratio=ratio)
    rows = schedlab.load(spec.results_dir()).collect()
    for shape, grp in table.group_by("shape"):
        n = grp["n"][0]
        if ratio:
            within = (grp["halfwidth"] <= math.log1p(rel)).all()
        else:
            within = (grp["halfwidth"] <= rel * grp["baseline_mean"].abs()).all()
        assert within or n == 40, (shape, grp)
        # the round before did not meet the target (else the point would have stopped there)
        if n > 3:
            fewer = rows.filter((pl.col("shape") == shape[0]) & (pl.col("replication") < n - 2))
            sub = tmp_path / f"prev{shape[0]}"
            store = ResultStore(sub)
            store.prepare(json.loads((spec.results_dir() / "manifest.json").read_text()), True)
            store.commit([{**r} for r in fewer.to_dicts()], [], [])
            prev = schedlab.compare(sub, baseline="PS", ratio=ratio)
            if ratio:
                assert not (prev["halfwidth"] <= math.log1p(rel)).all()
            else:
                assert not (prev["halfwidth"] <= rel * prev["baseline_mean"].abs()).all()


# ---------------------------------------------------------------- coverage

COVERAGE_SEED = 2026
COVERAGE_MACRO = 400  # macro-replications
COVERAGE_PAIRS = 10  # pairs (replications) per interval
COVERAGE_JOBS = 400  # jobs per run
COVERAGE_LOAD = 0.8
COVERAGE_BAND = (0.93, 0.97)  # nominal 0.95


@pytest.mark.slow
def test_paired_interval_coverage_mm1_fifo_vs_ps():
    """M/M/1 (exponential sizes and gaps, load 0.8, nominal load mode), FIFO
    vs PS, each run started empty. Under both policies the number of jobs in
    the system is the same birth-death process in law (arrivals at rate
    lambda, departures at rate mu whenever the system is busy, PS by
    memorylessness), also after the last arrival, so the expected total
    sojourn -- the integral of that process -- is the same: E[MST_FIFO -
    MST_PS] = 0 exactly for any number of jobs, with no steady-state or
    warm-up argument needed. The paired 95 % interval from 10 pairs must
    cover 0 in 93-97 % of 400 macro-replications."""
    from schedlab.engines import get_engine
    from schedlab.workloads.registry import workload_kind

    engine = get_engine("queue")
    kind = workload_kind("synthetic")
    params = kind.complete(
        {
            "njobs": COVERAGE_JOBS,
            "shape": 1.0,
            "timeshape": 1.0,
            "load": COVERAGE_LOAD,
            "sigma": 0.0,
            "load_mode": "nominal",
        },
        "workload",
    )
    covered = 0
    for m in range(COVERAGE_MACRO):
        d = []
        for r in range(COVERAGE_PAIRS):
            jobs = kind.instance(np.random.default_rng(np.random.SeedSequence([COVERAGE_SEED, m, r])), params, None)
            d.append(engine.run(jobs, "FIFO").summary["mst"] - engine.run(jobs, "PS").summary["mst"])
        p = paired(d)
        covered += p.low <= 0.0 <= p.high
    rate = covered / COVERAGE_MACRO
    print(f"paired 95% interval coverage of E[MST_FIFO - MST_PS] = 0: {rate:.3f} over {COVERAGE_MACRO}")
    assert COVERAGE_BAND[0] <= rate <= COVERAGE_BAND[1]
