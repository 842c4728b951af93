"""`schedlab pipelines run --decide`: real smoke-scale runs of pg-fig3 (seeded, so the
verdicts per round are facts of the run): an inconclusive claim gets more replications
of the sweeps it reads and becomes decided, the budget stops the rounds and the page
says how close each claim came and what budget the trend predicts, a one-sample-path
claim is judged on the share of paths with its exact interval, and a run interrupted
between two sweeps resumes running only the missing replications."""

from __future__ import annotations

import json
import math

import pytest
from click.testing import CliRunner

from schedlab.cli import main
from schedlab.pipelines import decide, pages
from schedlab.pipelines.base import Straddle
from schedlab.pipelines.common import share
from schedlab.pipelines.runlog import read_runs

NAME = "pg-fig3"
FLAT = "(a) BF-J/S and VQS-BF stay flat"  # inconclusive up to 8 paths at smoke scale, holds at 16
GROWS_B = "(b) BF-J/S grows"  # fails at 16 paths at smoke scale


def claims(state, prefix):
    """(replications, verdict) of the claim starting with ``prefix``, per round."""
    return [(s["n"], s["outcome"]) for r in state["rounds"] for c, s in r["claims"].items() if c.startswith(prefix)]


@pytest.fixture(scope="module")
def budget_4(tmp_path_factory):
    """pg-fig3 at smoke scale with --decide and a budget of 4 paths."""
    out = tmp_path_factory.mktemp("decide") / NAME
    result = decide.decide_pipeline(NAME, "smoke", 4, out=out, tracking=False, backend="local")
    return out, result


def test_budget_stops_the_rounds_and_the_page_says_how_close(budget_4, tmp_path):
    out, result = budget_4
    state = json.loads((out / decide.DECIDE_FILE).read_text())
    assert state["grown"] == {"pg-fig3a-smoke": 4, "pg-fig3b-smoke": 4}
    assert claims(state, FLAT) == [(1, "inconclusive"), (2, "inconclusive"), (4, "inconclusive")]
    report = result.report_md.read_text()
    assert decide.SECTION in report and "| 1 → 2 → 4 |" in report
    assert "Grown: `pg-fig3a-smoke` 1 → 4, `pg-fig3b-smoke` 1 → 4 replications per point" in report
    written = pages.write_pages(out.parent, [NAME], tmp_path)
    page = written[0].read_text()
    line = next(x for x in page.splitlines() if x.startswith(f"- {FLAT}") and "replications per point" in x)
    # the interval and bound are the flat claim's share of paths, and the predicted budget is n (h / d)^2
    last = state["rounds"][-1]["claims"]
    s = Straddle(**next(v["straddle"] for c, v in last.items() if c.startswith(FLAT)))
    assert s.bound == 0.5 and s.low < 0.5 < s.high
    assert f"[{s.low:.4g}, {s.high:.4g}] around the bound 0.5" in line
    assert f"about {math.ceil(4 * (s.reach / s.distance) ** 2):,} replications per point" in line
    assert "an extrapolation" in line
    assert "the section *Replications per claim*" in page
    assert f"`schedlab pipelines run {NAME} --scale smoke --decide --budget 4`" in page  # re-runnable as it was made


def test_more_replications_decide_and_only_new_ones_run(budget_4):
    """Raising the budget resumes the same dir: replications 4..15 run, 0..3 are kept;
    the flat claim holds at 16 paths and BF-J/S's growth in (b) fails."""
    out, _ = budget_4
    before = len(read_runs(out))
    result = decide.decide_pipeline(NAME, "smoke", 16, out=out, tracking=False, backend="local")
    state = json.loads((out / decide.DECIDE_FILE).read_text())
    assert claims(state, FLAT)[-2:] == [(8, "inconclusive"), (16, "holds")]
    assert claims(state, GROWS_B)[-1] == (16, "fails")
    new = read_runs(out)[before:]
    # 3 policies x 2 sweeps: the resumed round at 4 runs nothing, then 4 and 8 new paths
    assert [r["rows_new"] for r in new] == [0, 3 * 2 * 4, 3 * 2 * 8]
    check = next(c for f in result.figures for c in f.checks if c.claim.startswith(FLAT))
    k = int(check.detail.split("holds on ")[1].split(" of ")[0])
    want = share(k, 16)
    assert f"{k} of 16 sample paths (share {want:.2f} [{want.low:.2f}, {want.high:.2f}]" in check.detail
    assert want.low > 0.5  # holds: the share's interval lies above the declared 0.5


def test_share_is_clopper_pearson():
    from scipy.stats import beta

    s = share(11, 16)
    assert float(s) == 11 / 16
    assert s.low == pytest.approx(beta.ppf(0.025, 11, 6)) and s.high == pytest.approx(beta.ppf(0.975, 12, 5))
    assert share(8, 8).high == 1.0 and share(0, 8).low == 0.0


def test_interrupted_between_sweeps_resumes_only_missing_replications(tmp_path, monkeypatch):
    """A round killed after its first sweep grew: the next invocation runs only the second sweep's new paths."""
    from schedlab.pipelines import run

    real = run.run_pipeline
    calls = []

    def killed_in_round_2(name, scale, grow=None, **kw):
        calls.append(dict(grow or {}))
        if len(calls) == 2:  # round 2 asked both sweeps for 2 paths: the first grows, then the run dies
            real(name, scale, grow={"pg-fig3a-smoke": 2}, **kw)
            raise KeyboardInterrupt
        return real(name, scale, grow=grow, **kw)

    monkeypatch.setattr(run, "run_pipeline", killed_in_round_2)
    out = tmp_path / NAME
    with pytest.raises(KeyboardInterrupt):
        decide.decide_pipeline(NAME, "smoke", 2, out=out, tracking=False, backend="local")
    assert json.loads((out / decide.DECIDE_FILE).read_text())["grown"] == {"pg-fig3a-smoke": 2, "pg-fig3b-smoke": 2}
    monkeypatch.setattr(run, "run_pipeline", real)
    decide.decide_pipeline(NAME, "smoke", 2, out=out, tracking=False, backend="local")
    last = read_runs(out)[-1]
    assert (last["rows_new"], last["rows_resumed"]) == (3, 9)  # (b)'s second path only; (a)'s two and (b)'s first kept


def test_cli_budget_needs_decide():
    res = CliRunner().invoke(main, ["pipelines", "run", NAME, "--budget", "8"])
    assert res.exit_code == 2 and "--budget: only with --decide" in res.output
    res = CliRunner().invoke(main, ["pipelines", "run", NAME, "--decide", "--report-only"])
    assert res.exit_code == 2 and "not with --report-only" in res.output


def test_grown_raises_fixed_and_adaptive_replications():
    from schedlab.pipelines.run import grown

    assert grown({"n": 5}, 10) == {"n": 10} and grown({"n": 12}, 10) == {"n": 12} and grown({}, 4) == {"n": 4}
    adaptive = {"metric": "mst", "rel_halfwidth": 0.05, "min": 30, "max": 300, "batch": 10}
    assert grown(adaptive, 64) == {**adaptive, "min": 64}
    assert grown(adaptive, 500) == {**adaptive, "min": 500, "max": 500}


def test_closest_call_and_what_more_replications_can_decide():
    from schedlab.pipelines.base import Check
    from schedlab.pipelines.common import Estimate, judge, judgments
    from schedlab.pipelines.declare import closest_call

    with judgments() as judged:
        judge(Estimate(0.9, 0.7, 1.1), "<", 1.0)  # straddles 1: half-width 0.2, distance 0.1
        judge(Estimate(2.0, 1.5, 2.5), ">", Estimate(1.8, 1.6, 2.0))  # as a difference: 0.2 in [-0.5, 0.9]
        judge(Estimate(0.5, 0.4, 0.6), "<", 1.0)  # holds: not a straddle
    assert [o for *_, o in judged] == ["inconclusive", "inconclusive", "holds"]
    s = closest_call(judged)  # the one furthest from decided: the difference, (0.7 / 0.2)^2 > (0.2 / 0.1)^2
    assert Straddle(0.1, 0.0, 0.5, 0.2).reach == 0.4 and Straddle(0.1, 0.0, 0.5, -0.1).reach == 0.1
    assert (s.value, s.low, s.high, s.bound) == pytest.approx((0.2, -0.5, 0.9, 0.0))
    assert s.predicted(10) == pytest.approx(10 * (0.7 / 0.2) ** 2)
    flat = Check("c", "inconclusive", "", straddle=Straddle(1.0, -math.inf, math.inf, 0.0))
    assert decide.growable(flat, 1) and not decide.growable(flat, 2)  # no interval at 2+: identical replications
    assert decide.growable(Check("c", "inconclusive", "", straddle=s), 10)
    # a share on its bound (1 of 2 samples hold: 0.5 [0.013, 0.987] against 0.5): no trend to extrapolate,
    # but more samples move it off, so it grows, and the report says it sits on the bound
    half = Straddle(0.5, 0.013, 0.987, 0.5)
    assert math.isinf(half.predicted(242)) and decide.growable(Check("c", "inconclusive", "", straddle=half), 242)
    assert "sits on the bound" in decide.closeness(242, {"value": 0.5, "low": 0.013, "high": 0.987, "bound": 0.5})


def test_pg_fig5_identical_replications_are_an_exact_replay(tmp_path):
    """The Google-trace replay draws nothing at random: one replication gives no interval
    (inconclusive), two that agree at every point show it deterministic and decide the claims."""
    from pathlib import Path

    from schedlab.pipelines import inputs
    from schedlab.pipelines.registry import PIPELINES
    from schedlab.pipelines.run import run_pipeline

    trace = inputs.substitute(PIPELINES["pg-fig5"].doc["sweeps"][0]["workload"]["path"], check=False)
    if not Path(trace).exists():
        pytest.skip(f"Google trace not found at {trace} (below $SCHEDLAB_DATA)")
    one = run_pipeline("pg-fig5", "smoke", out=tmp_path, tracking=False, backend="local")
    assert {c.outcome for f in one.figures for c in f.checks} == {"inconclusive"}
    two = run_pipeline("pg-fig5", "smoke", out=tmp_path, tracking=False, backend="local", grow={"pg-fig5-smoke": 2})
    assert [r.rows_written for r in two.sweeps] == [8]  # 4 policies x 2 traffic points: replication 1 only
    checks = [c for f in two.figures for c in f.checks]
    assert {c.outcome for c in checks} <= {"holds", "fails"} and len(checks) == 2
    assert all("a deterministic replay: every point identical in its 2 replications" in c.detail for c in checks)
