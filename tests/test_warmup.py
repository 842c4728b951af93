"""Warm-up deletion (MSER-5) and the one-run overlapping batch-means interval:
the statistics against brute-force references, the bias of M/M/1 runs
started empty with and without the cut, and the task hook (the same cut for
every policy of an instance; metrics on the jobs kept)."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from scipy import stats as sps

import schedlab
from schedlab.errors import UserError
from schedlab.platform.execution.runner import manifest_for
from schedlab.platform.execution.tasks import run_instances
from schedlab.platform.planning.plan import build_plan
from schedlab.platform.planning.validate import parse_spec
from schedlab.platform.statistics.stats import mser5, obm
from schedlab.platform.statistics.warmup import PILOTS, apply, cut, point_cut, work_found
from schedlab.platform.storage.store import ResultStore


def mser5_brute(x) -> int:
    """White's MSER-5 straight from the definition, O(n^2)."""
    x = np.asarray(x, dtype=float)
    m = x.size // 5
    z = x[: 5 * m].reshape(m, 5).mean(axis=1)
    best, arg = math.inf, 0
    for d in range(m // 2 + 1):
        tail = z[d:]
        v = float(((tail - tail.mean()) ** 2).sum()) / (m - d) ** 2
        if v < best:
            best, arg = v, d
    return 5 * arg


def test_mser5_hand_worked_and_brute_force():
    assert mser5([5.0] * 5 + [1.0] * 45) == 5  # one high batch, then flat: cut exactly that batch
    assert mser5([9.0] * 10 + [1.0, 2.0] * 20) == 10
    assert mser5(np.ones(100)) == 0  # ties go to the smallest d
    assert mser5([1.0, 2.0, 3.0]) == 0  # too short to say anything
    rng = np.random.default_rng(7)
    for n in (23, 100, 1003):
        x = np.cumsum(rng.normal(size=n)) + np.linspace(-5, 0, n)
        assert mser5(x) == mser5_brute(x)


def test_work_found_is_lindleys_recursion():
    rng = np.random.default_rng(3)
    submit = np.cumsum(rng.exponential(1.0, 500))
    size = rng.exponential(0.9, 500)
    w = np.zeros(500)
    for i in range(1, 500):
        w[i] = max(0.0, w[i - 1] + size[i - 1] - (submit[i] - submit[i - 1]))
    assert np.allclose(work_found(submit, size), w, rtol=0, atol=1e-9)


OBM_IID_BAND = (0.92, 0.98)  # nominal 0.95, 400 intervals (binomial sd 0.011)


def test_obm_formula_and_iid_coverage():
    rng = np.random.default_rng(11)
    x = rng.normal(size=40)
    b = obm(x, batches=4)
    n, bs = 40, 10
    means = np.array([x[j : j + bs].mean() for j in range(n - bs + 1)])
    v = n * bs / ((n - bs + 1) * (n - bs)) * ((means - x.mean()) ** 2).sum()
    dof = 1.5 * (n / bs - 1)
    assert b.batch == bs and b.dof == dof
    assert b.halfwidth == pytest.approx(sps.t.ppf(0.975, dof) * math.sqrt(v / n), rel=1e-12)
    hits = 0
    for _ in range(400):  # iid data: the interval must be about right (no autocorrelation to miss)
        y = rng.normal(size=2000)
        r = obm(y)
        hits += abs(r.mean) <= r.halfwidth
    assert OBM_IID_BAND[0] <= hits / 400 <= OBM_IID_BAND[1]


# ---------------------------------------------------------------- bias on M/M/1 started empty

BIAS_SEED = 97
BIAS_RUNS = 200
BIAS_JOBS = 200  # short runs: the initial transient is a large part of each
BIAS_LOAD = 0.9


def _mm1(rng, n):
    gaps = rng.exponential(1.0 / BIAS_LOAD, n)
    submit = np.cumsum(gaps) - gaps[0]
    size = rng.exponential(1.0, n)
    return pl.DataFrame(
        {"job_id": np.arange(n), "submit": submit, "size": size, "estimate": size, "weight": np.ones(n)}
    )


@pytest.mark.slow
def test_mser5_reduces_the_bias_of_mm1_started_empty():
    """FIFO on M/M/1 at load 0.9 (E[T] = 1 / (1 - 0.9) = 10) started empty,
    200 runs of 200 jobs (one workload point, 200 replications): the cut is
    the sweep's -- the largest MSER-5 cut of 5 pilot instances of the point
    -- and the mean over runs of the truncated MST is closer to E[T] than
    that of the untruncated MST. (Cuts chosen on each run's own data would
    bias runs of 2,000+ jobs low: benchmarks/steady_state.py.)"""
    from schedlab.engines import get_engine

    engine = get_engine("queue")
    expected = 1.0 / (1.0 - BIAS_LOAD)
    rng = np.random.default_rng(BIAS_SEED)
    d = cut("mser5", [_mm1(np.random.default_rng([BIAS_SEED, 1, k]), BIAS_JOBS) for k in range(PILOTS)])
    raw, trunc = [], []
    for _ in range(BIAS_RUNS):
        result = engine.run(_mm1(rng, BIAS_JOBS), "FIFO")
        raw.append(result.summary["mst"])
        trunc.append(apply(result, d)["mst"])
    bias_raw = float(np.mean(raw)) - expected
    bias_trunc = float(np.mean(trunc)) - expected
    print(
        f"M/M/1 load {BIAS_LOAD}, {BIAS_RUNS} runs x {BIAS_JOBS} jobs: bias untruncated {bias_raw:+.3f}, "
        f"MSER-5 truncated (cut {d} jobs, from {PILOTS} pilots) {bias_trunc:+.3f}"
    )
    assert 0 < d <= BIAS_JOBS // 2
    assert abs(bias_trunc) < abs(bias_raw)


# ---------------------------------------------------------------- in a sweep


def _sweep(tmp_path, warmup="mser5", metrics=(), per_job=True):
    spec = parse_spec(
        {
            "name": "wu",
            "engine": "queue",
            "seed": 9,
            "policies": ["FIFO", "PS", "PSBS"],
            "workload": {"kind": "synthetic", "njobs": 2000, "shape": 1.0, "beta": 1.0},
            "metrics": list(metrics),
            "replications": {"n": 2},
            "outputs": {"dir": str(tmp_path / "wu"), "per_job": per_job, "warmup": warmup},
            "tracking": {"enabled": False},
        },
        "wu.toml",
    )
    plan = build_plan(spec)
    store = ResultStore(spec.results_dir())
    store.prepare(manifest_for(spec, plan), True)
    work = [(inst, list(inst.point.configs)) for inst in plan.instances(range(2))]
    res = run_instances(plan.engine, work, None, per_job, plan.metrics)
    assert not res.failures
    store.commit(res.summary, res.jobs, res.failures)
    return spec, plan, res


def test_warmup_same_cut_for_every_policy_and_metrics_on_kept_jobs(tmp_path):
    spec, plan, _ = _sweep(
        tmp_path, metrics=[{"name": "sojourn_p90", "use": "quantile", "params": {"column": "sojourn", "q": 0.9}}]
    )
    rows = schedlab.load(spec.results_dir()).collect()
    jobs = schedlab.load(spec.results_dir(), "jobs").collect()
    assert rows["warmup_jobs"].max() > 0  # this point is cut (a cut of 0 would be legitimate)
    assert rows["warmup_jobs"].n_unique() == 1  # one cut per point: every policy, every replication
    for rec in rows.iter_rows(named=True):
        mine = jobs.filter((pl.col("config_id") == rec["config_id"]) & (pl.col("replication") == rec["replication"]))
        kept = mine.sort("submit", maintain_order=True)[int(rec["warmup_jobs"]) :]
        assert rec["n_jobs"] == 2000  # the run's size, not the jobs kept
        assert rec["mst"] == pytest.approx(kept["sojourn"].mean(), rel=1e-12)
        assert rec["slowdown_p99"] == pytest.approx(np.percentile(kept["slowdown"].to_numpy(), 99), rel=1e-12)
        assert rec["sojourn_p90"] == pytest.approx(np.quantile(kept["sojourn"].to_numpy(), 0.9), rel=1e-12)
        assert rec["mst_obm_ci95"] == pytest.approx(obm(kept["sojourn"].to_numpy()).halfwidth, rel=1e-12)
        assert any(k.startswith("mst_class_") for k in rec)  # weight classes (beta = 1) on the kept jobs too


def test_warmup_cut_does_not_depend_on_which_policies_run(tmp_path):
    spec, plan, full = _sweep(tmp_path, per_job=False)
    inst = plan.instances([1])[0]
    alone = run_instances(plan.engine, [(inst, [inst.point.configs[1]])], None, False, plan.metrics)
    row = next(r for r in full.summary if r["config_id"] == inst.point.configs[1].config_id and r["replication"] == 1)
    assert alone.summary[0]["warmup_jobs"] == row["warmup_jobs"] and alone.summary[0]["mst"] == row["mst"]


def test_point_cut_is_the_largest_pilot_cut_and_memoised():
    from schedlab.platform.statistics.warmup import pilot_seeds, table_cut

    calls = []

    def build(rng):
        calls.append(1)
        return _mm1(rng, 500)

    d = point_cut("mser5", 3, "00ff", build)
    assert len(calls) == PILOTS
    expected = max(table_cut("mser5", _mm1(np.random.default_rng(ss), 500)) for ss in pilot_seeds(3, "00ff"))
    assert d == expected
    assert point_cut("mser5", 3, "00ff", build) == d and len(calls) == PILOTS  # memoised


def test_no_warmup_leaves_rows_alone(tmp_path):
    spec, plan, res = _sweep(tmp_path, warmup=None, per_job=False)
    assert all("warmup_jobs" not in r and "mst_obm_ci95" not in r for r in res.summary)


def test_warmup_spec_validation():
    base = {
        "name": "w",
        "engine": "packing",
        "policies": ["FIFO-FF"],
        "workload": {"kind": "packing"},
        "replications": {"n": 2},
    }
    with pytest.raises(UserError, match=r"^w.toml: outputs.warmup: warm-up deletion works on the queue engine"):
        parse_spec({**base, "outputs": {"warmup": "mser5"}}, "w.toml")
    with pytest.raises(UserError, match=r"^w.toml: outputs.warmup: "):
        parse_spec({"name": "w", "engine": "queue", "policies": ["PS"], "outputs": {"warmup": "welch"}}, "w.toml")
