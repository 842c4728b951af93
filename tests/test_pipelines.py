"""Pipelines: `pipelines list`, smoke-scale runs of psbs-shape, pg-fig4, psbs-weights,
psbs-slowdown, pg-fig3 and psbs-ircache (one Ray session, tracking off), their figures, series and
report.md, and CLI errors."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

from schedlab.cli import main
from schedlab.pipelines.registry import PIPELINES
from tests.pipeline_outputs import check_outputs, run_smoke

EXPECTED_SERIES = {
    "psbs-shape": ["FIFO", "PS", "LAS", "SRPTE", "FSPE", "PSBS"],
    "pg-fig4": ["BF-J/S", "VQS", "VQS-BF", "FIFO-FF"],
    "psbs-weights": ["PSBS", "GPS"],
    "psbs-slowdown": ["FIFO", "PS", "LAS", "SRPTE", "FSPE", "PSBS"],
    "pg-fig3": ["VQS", "BF-J/S", "VQS-BF"],
    "psbs-ircache": ["PS", "LAS", "SRPTE", "FSPE", "PSBS"],
}
FIGURES = {"psbs-shape": 1, "pg-fig4": 1, "psbs-weights": 1, "psbs-slowdown": 2, "pg-fig3": 1, "psbs-ircache": 1}
NEW_PIPELINES = [
    "psbs-weights",
    "psbs-pareto",
    "psbs-load",
    "psbs-fb2010",
    "psbs-slowdown",
    "psbs-heatmap",
    "psbs-ircache",
    "psbs-ecdf",
]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return run_smoke(EXPECTED_SERIES, tmp_path_factory.mktemp("pipelines"))


def test_list():
    res = CliRunner().invoke(main, ["pipelines", "list"])
    assert res.exit_code == 0, res.output
    lines = res.output.strip().splitlines()
    assert len(lines) == len(PIPELINES) == 20
    for line, (name, p) in zip(lines, PIPELINES.items()):
        assert line.split()[0] == name
        assert p.figure in line and p.paper in line
    assert "quick|paper|smoke" in CliRunner().invoke(main, ["pipelines", "run", "--help"]).output


def test_unknown_pipeline_exit_2():
    res = CliRunner().invoke(main, ["pipelines", "run", "no-such-pipeline"])
    assert res.exit_code == 2
    assert "unknown pipeline 'no-such-pipeline'" in res.output
    for name in PIPELINES:
        assert name in res.output


def test_unknown_scale_exit_2():
    res = CliRunner().invoke(main, ["pipelines", "run", "psbs-shape", "--scale", "huge"])
    assert res.exit_code == 2 and "unknown scale" in res.output


def test_specs_every_scale_valid():
    from schedlab.platform.planning.validate import parse_spec

    for p in PIPELINES.values():
        for scale in ("smoke", "quick", "paper"):
            specs = p.specs(scale, {})
            assert specs and len({s["name"] for s in specs}) == len(specs)
            for s in specs:
                parse_spec(s, p.name)
    assert PIPELINES["psbs-shape"].specs("quick", {})[0]["workload"]["njobs"] == 5000
    over = PIPELINES["psbs-shape"].specs("quick", {"workload": {"njobs": 7}})[0]
    assert over["workload"]["njobs"] == 7 and over["workload"]["sigma"] == 0.5


@pytest.mark.parametrize("name", list(EXPECTED_SERIES))
def test_pipeline_outputs(runs, name):
    check_outputs(runs[name], [EXPECTED_SERIES[name]] * FIGURES[name])


def test_resume_is_idempotent(runs):
    from schedlab.pipelines.run import run_pipeline

    first = runs["pg-fig4"]
    again = run_pipeline("pg-fig4", "smoke", out=first.out_dir, tracking=False)
    assert all(r.rows_written == 0 and r.rows_skipped > 0 for r in again.sweeps)
    assert [c.holds for c in again.figures[0].checks] == [c.holds for c in first.figures[0].checks]


def test_new_pipelines_specs_every_scale():
    """The PSBS pipelines added after Figs. 5, 6: valid specs at every scale, the
    paper's settings where stated, overrides merged."""
    from schedlab.platform.planning.validate import parse_spec

    for name in NEW_PIPELINES:
        p = PIPELINES[name]
        for scale in ("smoke", "quick", "paper"):
            specs = p.specs(scale, {})
            assert specs and all(s["name"].endswith(f"-{scale}") for s in specs)
            for s in specs:
                parse_spec(s, name)
                assert "SRPT" in s["policies"] or name in ("psbs-weights", "psbs-slowdown", "psbs-heatmap", "psbs-ecdf")
        over = p.specs("quick", {"workload": {"load": 0.8}})
        assert all(s["workload"]["load"] == 0.8 for s in over)
    w = PIPELINES["psbs-weights"].specs("paper", {})[0]["workload"]
    assert w["beta"] == [0.0, 1.0, 2.0] and w["shape"] == [0.25, 1.0, 4.0] and w["weight_classes"] == 5
    assert PIPELINES["psbs-pareto"].specs("paper", {})[0]["workload"]["alpha"] == [2.0, 1.0]
    assert [s["name"] for s in PIPELINES["psbs-load"].specs("quick", {})] == ["psbs-load-quick", "psbs-timeshape-quick"]
    fb = PIPELINES["psbs-fb2010"].specs("quick", {})[0]["workload"]
    assert fb["kind"] == "trace" and fb["reader"] == "swim" and fb["load"] == 0.9
    sd = PIPELINES["psbs-slowdown"].specs("smoke", {})[0]
    assert sd["outputs"]["per_job"] is True and sd["workload"]["shape"] == 0.25


def test_slowdown_checks_from_per_job_rows(runs):
    """Fig. 7 is computed from the per-job rows: 100 classes (or fewer, at smoke scale) per policy."""
    from schedlab.pipelines import psbs_slowdown

    result = runs["psbs-slowdown"]
    (d,) = result.results_dirs.values()
    cond = psbs_slowdown.curves(psbs_slowdown.per_job(d))
    assert set(cond) == set(psbs_slowdown.POLICIES)
    for x, y in cond.values():
        assert len(x) == len(y) == 100 and np.all(np.diff(x) >= 0) and np.all(y >= 1.0 - 1e-9)
    # the claim reads each replication's largest slowdown from the summary rows and counts the jobs above from
    # the per-job rows of only the replications whose largest is above: both equal to every job read
    import polars as pl

    from schedlab import load

    jobs = load(d, "jobs").filter(pl.col("policy").is_in(psbs_slowdown.NO_HIGH)).collect()
    top = jobs.group_by("replication").agg(pl.col("slowdown").max())
    maxima = psbs_slowdown.replication_maxima(d)
    assert maxima == dict(top.iter_rows()) and len(maxima) == 2
    than = float(np.median(list(maxima.values())))  # one replication above, one not
    above = jobs.group_by("policy").agg((pl.col("slowdown") > than).sum().alias("above"), pl.len(), pl.max("slowdown"))
    assert psbs_slowdown.jobs_above(d, maxima, than) == {p: (k, n, m) for p, k, n, m in above.iter_rows()}
    # smoke scale runs 2 replications, under one sample of the paper's 121 runs: the claim has none to read
    (none_high,) = [c for c in result.figures[1].checks if "samples of the paper's size (121 runs)" in c.claim]
    assert none_high.outcome == "inconclusive" and "no complete sample of the paper's size" in none_high.detail


def test_pg_fig3_specs_every_scale():
    """Fig. 3: two single-server sweeps per scale, the paper's settings, list values wrapped."""
    from schedlab.platform.planning.validate import parse_spec

    p = PIPELINES["pg-fig3"]
    slots = {"smoke": 40_000, "quick": 300_000, "paper": 1_000_000}
    for scale in ("smoke", "quick", "paper"):
        specs = p.specs(scale, {})
        assert [s["name"] for s in specs] == [f"pg-fig3a-{scale}", f"pg-fig3b-{scale}"]
        for s in specs:
            parse_spec(s, "pg-fig3")
            assert s["system"]["servers"] == 1 and s["system"]["sample_every"] > 0
            assert s["workload"]["slots"] == slots[scale] and s["replications"]["n"] == 1
    a, b = (s["workload"] for s in p.specs("quick", {}))
    assert a["sizes"] == [[0.4, 0.6]] and a["rate"] == 0.014 and a["service"] == "geometric"
    assert b["sizes"] == [[0.2, 0.5]] and b["rate"] == 0.0306 and b["service"] == "fixed"
    assert b["probs"][0][0] == pytest.approx(2 / 3)
    assert all(s["workload"]["slots"] == 7 for s in p.specs("quick", {"workload": {"slots": 7}}))


def test_pg_fig3_checks_from_series(runs):
    """The slopes behind Fig. 3's checks are recomputed from the series dataset, arrival horizon only."""
    from schedlab.pipelines import pg_fig3

    result = runs["pg-fig3"]
    assert len(result.figures[0].checks) == 5
    for name, d in result.results_dirs.items():
        tag = name.removeprefix("pg-fig3")[0]
        (series,) = pg_fig3.load_series(d, pg_fig3.COLUMNS[tag]).values()  # one sample path at smoke scale
        assert set(series) == set(pg_fig3.POLICIES)
        for t, y in series.values():
            assert len(t) > 10 and t.max() < 40_000 and np.all(np.diff(t) > 0) and np.all(y >= 0)
            assert f"{pg_fig3.slope(t, y):.2e}" in result.figures[0].checks[0 if tag == "a" else 2].detail


def test_pg_fig5_specs_every_scale():
    """Fig. 5: the Google prefix setting of sweeps/google-packing.toml at every scale."""
    from pathlib import Path

    from schedlab.pipelines import inputs
    from schedlab.platform.planning.validate import parse_spec

    fig5 = PIPELINES["pg-fig5"].doc  # the pipeline's data (pg_fig5.toml)
    written, traffic = fig5["sweeps"][0]["workload"]["path"], fig5["scales"]["paper"]["traffic"]
    trace = inputs.substitute(written, check=False)  # below the data root ($SCHEDLAB_DATA: conftest)
    if not Path(trace).exists():
        pytest.skip(f"Google trace not found at {trace}")
    p = PIPELINES["pg-fig5"]
    for scale in ("smoke", "quick", "paper"):
        (s,) = p.specs(scale, {})
        parse_spec(s, "pg-fig5")
        assert s["name"] == f"pg-fig5-{scale}" and s["policies"] == ["BF-J/S", "VQS-BF", "VQS", "FIFO-FF"]
        w = s["workload"]
        assert w["reader"] == "google" and w["reader_single_resource"] is True and w["path"] == trace
        assert s["system"]["epoch"] == 0.1
    paper = p.specs("paper", {})[0]
    assert paper["workload"]["traffic"] == traffic and paper["system"]["servers"] == 1000
    assert [round(1 / b, 6) for b in traffic] == [1.0, 1.2, 1.4, 1.6]
    assert p.specs("quick", {})[0]["workload"]["traffic"] == [1.0, 0.7142857142857143, 0.625]
    smoke = p.specs("smoke", {})[0]
    assert smoke["system"]["servers"] == 100 and smoke["workload"]["window_length"] == 3600.0


def test_ircache_specs_every_scale():
    """Fig. 15: two web-proxy panels by default; a workload.path override (the user's own
    IRCache access.log) gives one squid panel."""
    from schedlab.pipelines import inputs, psbs_ircache
    from schedlab.platform.planning.validate import parse_spec

    p = PIPELINES["psbs-ircache"]
    sigmas = {"smoke": [1.0], "quick": [0.25, 1.0, 4.0], "paper": [0.125, 0.25, 0.5, 1.0, 2.0, 4.0]}
    for scale in ("smoke", "quick", "paper"):
        specs = p.specs(scale, {})
        assert [s["name"] for s in specs] == [f"psbs-ircache-squid-{scale}", f"psbs-ircache-bu98-{scale}"]
        for s in specs:
            parse_spec(s, "psbs-ircache")
            w = s["workload"]
            assert w["kind"] == "trace" and w["load"] == 0.9 and w["sigma"] == sigmas[scale]
            assert s["policies"] == ["PS", "LAS", "SRPTE", "FSPE", "PSBS", "SRPT"]
        squid, bu98 = (s["workload"] for s in specs)
        squid_path, bu98_path = (inputs.substitute(p) for p in (psbs_ircache.SQUID, psbs_ircache.BU98))
        assert squid["reader"] == "squid" and squid["path"] == squid_path and "arrival_load" not in squid
        assert bu98["reader"] == "bu98" and bu98["path"] == bu98_path and bu98["arrival_load"] == 0.9
    assert [s["replications"]["n"] for s in p.specs("quick", {})] == [3, 3]
    assert [s["replications"]["n"] for s in p.specs("smoke", {})] == [1, 1]
    (own,) = p.specs("quick", {"workload": {"path": "/data/access.log"}})
    assert own["name"] == "psbs-ircache-quick"
    assert own["workload"]["reader"] == "squid" and own["workload"]["path"] == "/data/access.log"
    assert "arrival_load" not in own["workload"]
    assert psbs_ircache.panel_title(own["name"]) == psbs_ircache.OWN_TITLE


def test_ecdf_specs_every_scale():
    """Fig. 4: per-job rows, sigma 0.5, the seven policies, the shape grid per scale."""
    from schedlab.pipelines import psbs_ecdf
    from schedlab.platform.planning.validate import parse_spec

    p = PIPELINES["psbs-ecdf"]
    shapes = {"smoke": [0.25, 1.0], "quick": [0.25, 1.0], "paper": [0.125, 0.25, 0.5, 1.0]}
    for scale in ("smoke", "quick", "paper"):
        (s,) = p.specs(scale, {})
        parse_spec(s, "psbs-ecdf")
        assert s["name"] == f"psbs-ecdf-{scale}" and s["outputs"]["per_job"] is True
        assert s["policies"] == ["PS", "SRPTE", "FSPE", "SRPTE+PS", "SRPTE+LAS", "FSPE+PS", "FSPE+LAS"]
        assert s["workload"]["shape"] == shapes[scale] and s["workload"]["sigma"] == 0.5
    a, b = np.array([1.0, 2.0, 3.0]), np.array([1.0, 2.0, 3.0, 10.0])
    assert psbs_ecdf.ecdf_distance(a, a) == 0.0
    assert psbs_ecdf.ecdf_distance(a, b) == pytest.approx(0.25)


def test_psbs_shape_verdicts_read_from_paired_intervals(runs):
    """psbs-shape's "LAS outperforms PS for heavy-tailed workloads" on the real smoke run: its
    outcome is what the paired 95 % intervals of LAS / PS (recomputed here with scipy from the
    rows) say -- holds only if every upper end is below 1, fails if a lower end is at or above 1,
    else inconclusive -- never what the means alone say; the report shows the intervals."""
    import math

    import polars as pl
    from scipy import stats as sps

    from schedlab import load

    result = runs["psbs-shape"]
    (d,) = result.results_dirs.values()
    rows = load(d).select("shape", "policy", "replication", "mst").collect()
    wide = rows.pivot(on="policy", index=["shape", "replication"], values="mst")
    (check,) = [c for c in result.figures[0].checks if c.claim.startswith("LAS outperforms PS")]
    ends = []
    for s in sorted(x for x in wide["shape"].unique().to_list() if x < 1):
        lr = np.log(wide.filter(pl.col("shape") == s).select(pl.col("LAS") / pl.col("PS")).to_series().to_numpy())
        lo, hi = sps.t.interval(0.95, lr.size - 1, loc=lr.mean(), scale=lr.std(ddof=1) / math.sqrt(lr.size))
        ends.append((math.exp(lo), math.exp(hi)))
        assert f"LAS/PS {math.exp(lr.mean()):.3f} [{math.exp(lo):.3f}, {math.exp(hi):.3f}]" in check.detail
    expected = (
        "holds" if all(hi < 1 for _, hi in ends) else "fails" if any(lo >= 1 for lo, _ in ends) else "inconclusive"
    )
    assert ends and check.outcome == expected
    text = result.report_md.read_text()
    assert f"- **{check.outcome}**" in text and "read from the 95 % intervals shown" in text


def test_claims_per_panel_pair_each_panels_own_rows(runs):
    """psbs-ircache checks its claims on each log's panel in turn: the paired
    ratio each reports comes from that panel's own sweep (a regression: both
    panels once read the first sweep's rows, so the BU panel showed the
    Squid panel's intervals)."""
    import re

    from schedlab import load

    result = runs["psbs-ircache"]
    beat_ps = [c for c in result.figures[0].checks if "beat PS" in c.claim]
    assert len(beat_ps) == 2
    for check, (sweep, d) in zip(beat_ps, sorted(result.results_dirs.items(), key=lambda kv: "bu98" in kv[0])):
        rows = load(d).collect()
        mst = {p: rows.filter(rows["policy"] == p)["mst"].mean() for p in ("FSPE", "PS")}
        shown = float(re.search(r"FSPE / PS ([0-9.]+)", check.detail).group(1))
        assert shown == pytest.approx(mst["FSPE"] / mst["PS"], abs=5e-4), (sweep, check.detail)


def test_slowdown_ecdf_is_exact_where_drawn():
    """Fig. 8's ECDF is drawn from a few thousand points (every job of a
    paper-scale run took matplotlib past 9 GB): at each point it draws the CDF
    is the exact empirical one, the largest values are all there (the zoomed
    top-10 % panel), and a small sample is drawn whole."""
    import numpy as np

    from schedlab.pipelines.psbs_slowdown import ECDF_POINTS, ecdf_points

    rng = np.random.default_rng(5)
    v = 1.0 + np.exp(rng.normal(0.0, 4.0, 200_000))
    v[::97] = np.nan
    x, y = ecdf_points(v)
    kept = np.sort(v[~np.isnan(v)])
    assert x.size <= 2 * ECDF_POINTS + ECDF_POINTS // 8
    assert np.array_equal(y, np.searchsorted(kept, x, side="right") / kept.size)
    assert set(kept[-(ECDF_POINTS // 8) :]) <= set(x) and x[0] == kept[0] and y[-1] == 1.0
    small = v[:500]
    xs_, ys_ = ecdf_points(small)
    assert np.array_equal(xs_, np.sort(small[~np.isnan(small)])) and ys_[-1] == 1.0


def test_slowdown_none_high_read_on_samples_of_the_papers_size():
    """psbs-slowdown's "no job of PS, LAS or PSBS above 100" (issue #40): per complete block of
    121 replications (the paper's 121 runs) whether no replication's maximum is above 100; the
    verdict is the share of blocks, its exact 95 % interval against 0.5 (6 of 6 decide it, 5 of 5
    do not); a trailing incomplete block, and one a missing replication broke, are not counted."""
    from schedlab.pipelines.base import FAILS, HOLDS, INCONCLUSIVE
    from schedlab.pipelines.common import bounds, judge
    from schedlab.pipelines.psbs_slowdown import PAPER_RUNS, on_samples, paper_samples

    assert PAPER_RUNS == 121

    def runs(blocks: int, high: set[int] = frozenset(), extra: int = 0) -> dict[int, float]:
        """Replication maxima of ``blocks`` blocks and ``extra`` more: 100 (not above) except ``high``."""
        return {r: 250.0 if r in high else 100.0 for r in range(blocks * PAPER_RUNS + extra)}

    maxima = runs(3, high={121 + 60}, extra=50) | {3 * PAPER_RUNS + 7: 500.0}  # trailing block: above, ignored
    assert paper_samples(maxima, 100.0) == ([True, False, True], 50)
    del maxima[5]  # block 0 lacks a replication: not a sample of the paper's size
    assert paper_samples(maxima, 100.0) == ([False, True], 120 + 50)

    def verdict(maxima):
        found, text = on_samples(maxima, 100.0, 0.5)
        return judge(found, ">", 0.5), bounds(found), text

    outcome, (low, high), text = verdict(runs(6))
    assert outcome == HOLDS and 0.5 < low < 0.55 and high == 1.0 and "holds in 6 of 6 samples of 121 runs" in text
    outcome, (low, _), _ = verdict(runs(5, extra=120))  # 5 of 5: [0.478, 1]
    assert outcome == INCONCLUSIVE and 0.45 < low < 0.5
    every_block = {b * PAPER_RUNS for b in range(6)}
    outcome, (_, high), _ = verdict(runs(6, high=every_block))  # 0 of 6: [0, 0.459]
    assert outcome == FAILS and 0.45 < high < 0.5
    outcome, _, text = verdict(runs(2, high={PAPER_RUNS}))  # 1 of 2: on the bound, --decide grows it
    assert outcome == INCONCLUSIVE and "holds in 1 of 2" in text and "0.50 [0.01, 0.99]" in text
    found, text = on_samples(runs(0, extra=120), 100.0, 0.5)  # no sample: no share, no interval
    assert judge(found, ">", 0.5) == INCONCLUSIVE and np.isnan(found) and bounds(found) == (-np.inf, np.inf)
    assert text == "no complete sample of the paper's size (121 runs) in 120 replications"
    _, _, text = verdict(runs(1, extra=3))
    assert text.endswith("; 3 replications in incomplete blocks are not counted")
