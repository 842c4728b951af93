"""rlsched-tables: the published values it compares with, the trace-sequence
workload it runs on (N consecutive jobs from a start drawn per replication,
the log's own times), and a smoke run (``-m full``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from schedlab.errors import UserError
from schedlab.pipelines import rlsched_tables as rt
from schedlab.workloads import trace_kind

LUBLIN = Path(__file__).resolve().parents[2] / "shared" / "data" / "lublin" / "lublin_256.swf.gz"


def test_published_values_are_read_by_policy():
    assert rt.published("Lublin-1", "FCFS") == 7273.77
    assert rt.published("Lublin-1", "EASY") == 235.82  # FCFS with backfilling
    assert rt.published("HPC2N", "F1+EASY") == 71.95
    assert rt.published("Lublin-2", "SJF (commit)") == 787.89
    assert rt.published("Lublin-1", "F2") is None


@pytest.mark.skipif(not LUBLIN.exists(), reason="Lublin log not present")
def test_sequences_are_consecutive_jobs_with_the_logs_times():
    params = {**trace_kind.DEFAULTS, "reader": "swf", "path": str(LUBLIN), "sequence": 100, "sequence_within": 500}
    trace_kind.check(params)
    shared = trace_kind.load_shared(params)
    a = trace_kind.build(np.random.default_rng(3), params, shared)
    b = trace_kind.build(np.random.default_rng(3), params, shared)
    assert a.equals(b) and a.height == 100
    ids = shared["job_id"].to_list()
    k = ids.index(a["job_id"][0])
    assert a["job_id"].to_list() == ids[k : k + 100] and k + 100 <= 500
    assert a["submit"].to_list() == shared["submit"].to_list()[k : k + 100]  # not shifted to 0
    with pytest.raises(UserError, match="sequence: 20000 jobs asked but the trace has 10000"):
        trace_kind.build(np.random.default_rng(0), {**params, "sequence": 20000, "sequence_within": 0}, shared)
    with pytest.raises(UserError, match="set window_length = 0"):
        trace_kind.check({**params, "window_length": 100.0})


@pytest.mark.full
def test_smoke_run(tmp_path):
    from tests.pipeline_outputs import run_smoke

    run_smoke({"rlsched-tables": rt.POLICIES}, tmp_path)


# ---- the agent's held-out population read whole (issue #40) ------------------------------------------------

#: A hand-made held-out population: 2 sequences of 1 job within the first 2 (starts 0 and 1).
TINY = {"sequence": 1, "sequence_within": 2}
#: How far from the bound the "just above" and "just below" populations are (a relative step of one value).
NUDGE = 1e-4


def population_rows(rl: list[float], other: list[float], starts: list[int] | None = None):
    """Rows of the agent's sweep on every sequence of `TINY` once: RL and F1+EASY's mean bounded slowdowns."""
    import polars as pl

    starts = list(range(len(rl))) if starts is None else starts
    return pl.DataFrame(
        {
            "policy": ["RL"] * len(rl) + ["F1+EASY"] * len(other),
            "replication": [0] * (len(rl) + len(other)),
            "sequence": [TINY["sequence"]] * (len(rl) + len(other)),
            "sequence_within": [TINY["sequence_within"]] * (len(rl) + len(other)),
            "sequence_start": starts + starts,
            rt.METRIC: rl + other,
        }
    )


def verdict_on(frame):
    from schedlab.pipelines.declare import Claim, FigureData

    claim = Claim(says="The agent beats F1", quantity="RL / F1+EASY", check="rl_beats")
    return rt.rl_beats(FigureData((frame, None, {}), {}, {}), claim)


@pytest.mark.parametrize(
    ("f1_second", "outcome", "shown"),
    [
        (2.0, "fails", "1.0000"),  # RL / F1 = 2 and 1/2: geometric mean exactly 1, the bound -- a strict claim fails
        (2.0 * (1 + NUDGE), "holds", "0.99995"),  # just below 1 (shown to the digit that says so)
        (2.0 * (1 - NUDGE), "fails", "1.0001"),  # just above 1
    ],
)
def test_a_whole_population_is_decided_on_its_exact_value(f1_second, outcome, shown):
    frame = population_rows([2.0, 1.0], [1.0, f1_second])
    assert rt.population(frame) == 2
    ratio, row = rt.rl_ratio(frame, "RL", "F1+EASY")
    assert ratio.exact and (ratio.low, ratio.high) == (float(ratio), float(ratio))
    assert float(ratio) == pytest.approx((2.0 / 1.0 * 1.0 / f1_second) ** 0.5, rel=1e-12) and row["n"] == 2
    check = verdict_on(frame)
    assert check.outcome == outcome
    assert check.detail == f"RL / F1+EASY = {shown} (all 2 held-out sequences: exact)"


def test_a_sample_of_the_population_keeps_its_interval():
    """Drawn sequences (no sequence_start column), or a population one policy did not finish: not
    the whole population, so the paired interval decides -- here straddling 1: inconclusive."""
    import polars as pl

    from schedlab.pipelines.base import INCONCLUSIVE

    drawn = (  # three draws, the second sequence twice: replications 0, 1, 2
        population_rows([2.0, 1.0, 1.0], [1.0, 2.0 * (1 + NUDGE), 2.0 * (1 + NUDGE)], starts=[0, 1, 1])
        .with_columns(replication=pl.Series([0, 1, 2, 0, 1, 2]))
        .drop("sequence_start")
    )
    assert rt.population(drawn) is None
    ratio, _ = rt.rl_ratio(drawn, "RL", "F1+EASY")
    assert not ratio.exact and ratio.low < 1 < ratio.high
    check = verdict_on(drawn)
    assert check.outcome == INCONCLUSIVE and check.detail.endswith(" over 3 sequences")
    whole = population_rows([2.0, 1.0, 3.0], [1.0, 2.0, 3.0], starts=[0, 1, 2])
    assert rt.population(whole.with_columns(sequence_within=pl.lit(3))) == 3
    assert rt.population(whole) is None  # three starts of a population of two: not it, each once
    missing = whole.with_columns(sequence_within=pl.lit(3)).filter(
        ~((pl.col("policy") == "RL") & (pl.col("sequence_start") == 2))
    )
    assert rt.population(missing) is None


def test_common_exact_reads_the_side_of_the_bound():
    from schedlab.pipelines.common import exact, interval_text, judge

    at = exact(1.0, 1977, "held-out sequences")
    assert (judge(at, "<", 1.0), judge(at, "<=", 1.0), judge(at, ">", 1.0)) == ("fails", "holds", "fails")
    assert judge(exact(1.0 - NUDGE, 3, "x"), "<", 1.0) == "holds"
    assert judge(exact(1.0 + NUDGE, 3, "x"), "<", 1.0) == "fails"
    assert interval_text(at) == "1.000 (all 1,977 held-out sequences: exact)"
    assert exact(2.5, 182, "weeks").basis == "all 182 weeks: exact"  # dfrs_common's, unchanged


AGENT = Path(__file__).resolve().parents[1] / "sweeps" / "rl"
#: The smoke test's held-out window: 3 sequences of the smoke scale's 256 jobs (the paper's: 1,977 of 1,024
#: jobs among the first 3,000).
SMOKE_WITHIN = 258


@pytest.mark.skipif(not LUBLIN.exists(), reason="Lublin log not present")
def test_every_held_out_sequence_is_read_exactly_at_smoke_scale(tmp_path):
    """The pipeline's enumerating sweep (``held_out = "every"``, here on a held-out window of 3
    sequences) run for real: each start once, and every agent claim decided on the geometric mean
    over all of them, recomputed here from the rows -- its interval the point, said "exact"."""
    import copy

    import matplotlib
    import numpy as np
    import polars as pl

    from schedlab import load
    from schedlab.pipelines import inputs
    from schedlab.pipelines.registry import PIPELINES
    from schedlab.platform.planning.validate import parse_spec
    from schedlab.platform.sweep import run_sweep

    matplotlib.use("Agg")
    pipe = PIPELINES["rlsched-tables"]
    doc = copy.deepcopy(pipe.doc)
    doc["scales"]["smoke"]["held_out"] = "every"
    with inputs.using(data=str(LUBLIN.parents[1]), agent=str(AGENT)):
        specs = rt.specs(doc, "smoke", {"workload": {"sequence_within": SMOKE_WITHIN}})
    assert not any(s["name"].startswith(rt.RL_SWEEP) for s in specs)  # the drawn sweep is replaced, not kept
    (spec,) = [s for s in specs if s["name"].startswith(rt.RL_EVERY)]
    assert spec["workload"]["sequence_start"] == [0, 1, 2] and spec["replications"] == {"n": 1}
    results = tmp_path / spec["name"]
    spec = {**spec, "outputs": {"dir": str(results)}, "tracking": {"enabled": False}}
    assert run_sweep(parse_spec(spec, "rlsched-tables"), backend="local").rows_written == 3 * 8

    fig = next(f for f in doc["figures"] if f["key"] == "rl")
    report = pipe.figure_report(fig, {spec["name"]: results}, tmp_path)
    frame, _, _ = rt.rl_table({spec["name"]: results})
    assert rt.population(frame) == 3
    rows = load(results).collect()
    assert sorted(rows["sequence_start"].unique().to_list()) == [0, 1, 2]
    assert len(report.checks) == len(fig["claims"]) == 5
    for check, claim in zip(report.checks, fig["claims"]):
        a, b = claim["quantity"].split(" / ")
        per = frame.filter(pl.col("policy") == a).join(
            frame.filter(pl.col("policy") == b), on=["replication", "sequence_start"], suffix="_b"
        )
        assert per.height == 3
        gm = float(np.exp(np.mean(np.log((per[rt.METRIC] / per[f"{rt.METRIC}_b"]).to_numpy()))))
        assert check.outcome == ("holds" if gm < rt.BOUND else "fails")
        shown = f"{a} / {b} = {rt.exact_digits(gm)} (all 3 held-out sequences: exact)"
        assert check.detail == shown and check.straddle is None
    assert "every one of the 3 sequences of 256 consecutive jobs" in report.paper_says
    assert "Every one of the 3 held-out sequences, each once" in report.measured
    assert report.png.exists()
