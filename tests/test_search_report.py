"""An honest search report (issue 41): every candidate named by its parameter
values (report.md and the CLI summary), the selection's intervals from
`statistics.stats` (equal paired differences are one sample, so a degenerate
interval never makes a selection conclusive), and a convergence figure with
an axis per searched parameter beside the trial axis, the best so far drawn
through the last trial and the baseline as a horizontal line."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from schedlab.platform.planning.validate import parse_spec
from schedlab.platform.search.select import degenerate, difference, interval
from schedlab.platform.search.space import TrialRecord

REPO = Path(__file__).resolve().parent.parent
AGED = str(REPO / "examples" / "mypolicies" / "aged_srpt.py") + ":AgedSRPT"
ALPHAS = [0.0, 0.3, 1.0, 3.0]


# ---- the intervals ---------------------------------------------------------------------------------------


def test_equal_paired_differences_are_one_sample_not_a_zero_width_interval():
    a, b = [5.0, 7.0, 9.0], [4.0, 6.0, 8.0]  # every difference 1.0
    d = difference(a, b, 0.95, paired=True)
    assert d["identical"] and d["n_effective"] == 1 and d["n"] == 3 and d["mean"] == 1.0
    assert math.isnan(d["low"]) and math.isnan(d["high"])
    assert degenerate(d) == "every paired difference equal"
    one = interval([2.5, 2.5, 2.5], 0.95)
    assert one["identical"] and one["n_effective"] == 1 and one["mean"] == 2.5 and math.isnan(one["low"])
    assert degenerate(difference([1.0, 2.0], [0.0], 0.95, paired=True)) == "n_eff = 1 < 2"
    welch = difference([3.0, 3.0, 3.0], [1.0, 1.0], 0.95, paired=False)
    assert welch["mean"] == 2.0 and welch["identical"] and degenerate(welch) == "every value equal"
    spread = difference([5.0, 7.5, 9.0], [4.0, 6.0, 8.0], 0.95, paired=True)
    assert degenerate(spread) is None and spread["low"] < spread["mean"] < spread["high"]


def test_the_intervals_do_not_depend_on_the_order_of_the_replications():
    rng = np.random.default_rng(0)
    a = (1e8 + rng.normal(0, 1, 25)).tolist()  # large offsets: a plain sum's rounding depends on the order
    b = (1e8 + rng.normal(0, 1, 25)).tolist()
    order = rng.permutation(25)
    d1 = difference(a, b, 0.95, paired=True)
    d2 = difference([a[i] for i in order], [b[i] for i in order], 0.95, paired=True)
    assert d1 == d2
    assert interval(a, 0.9) == interval([a[i] for i in order], 0.9)


# ---- a search whose replications are one instance: a fixed job table -------------------------------------


def fixed_data(root: Path, **select) -> dict:
    """AgedSRPT's alpha searched on a job table read from a file: every
    replication is the same instance, so every candidate's paired differences
    are equal (the old numpy intervals had zero width there and called the
    selection conclusive)."""
    rng = np.random.default_rng(0)
    n = 200
    size = rng.pareto(1.5, n) + 0.1
    pl.DataFrame(
        {
            "job_id": list(range(n)),
            "submit": np.sort(rng.uniform(0, 100, n)),
            "size": size,
            "estimate": size * rng.lognormal(0, 1, n),
            "weight": np.ones(n),
        }
    ).write_csv(root / "jobs.csv")
    return {
        "name": "fixed",
        "engine": "queue",
        "seed": 3,
        "policies": [{"name": "AgedSRPT", "use": AGED}],
        "workload": {"kind": "file", "path": str(root / "jobs.csv")},
        "search": {
            "sampler": "grid",
            "metric": "mst",
            "trials": 4,
            "parallel": 4,
            "replications": 2,
            "params": {"alpha": {"choices": ALPHAS}},
            "select": {"top": 3, "replications": 3, "n0": 2, "baseline": {"alpha": 0.5}, **select},
        },
        "outputs": {"dir": str(root / "res")},
        "tracking": {"enabled": False},
    }


@pytest.fixture(scope="module")
def fixed_search(tmp_path_factory):
    from schedlab.platform.sweep import run_sweep
    from schedlab.search_figure import convergence

    root = tmp_path_factory.mktemp("fixed")
    spec = parse_spec(fixed_data(root), "s.toml")
    report = run_sweep(spec, backend="local", draw=convergence)
    return spec, report, root / "res"


def test_a_degenerate_selection_is_not_conclusive(fixed_search):
    _, report, _ = fixed_search
    sel = report.selection
    assert sel["procedure"].startswith("search, then paired t intervals")
    assert sel["conclusive"] is False
    assert sel["guarantee"].startswith("inconclusive: no interval separates the winner from trial ")
    assert "every paired difference equal" in sel["guarantee"]
    diff = sel["runner_up"]["difference"]
    assert diff["identical"] and diff["n_effective"] == 1 and diff["low"] is None and diff["mean"] != 0.0
    assert all(c["identical"] and c["low"] is None for c in sel["candidates"])


def test_the_report_names_every_candidates_parameters(fixed_search):
    from schedlab.platform.statistics.selection import describe_search

    _, report, res = fixed_search
    sel = report.selection
    lines = describe_search(sel)
    md = (res / "search" / "report.md").read_text()
    assert len(sel["candidates"]) == 3
    for c in sel["candidates"]:
        alpha = f"alpha={c['params']['alpha']:.6g}"
        assert any(line.strip().startswith(f"trial {c['trial']}") and alpha in line for line in lines), lines
        row = next(r for r in md.splitlines() if r.startswith(f"| {c['trial']}"))
        assert row.split("|")[2].strip() == f"{c['params']['alpha']:.6g}", row
    ru = sel["runner_up"]
    assert any(f"vs runner-up trial {ru['trial']} alpha={ru['params']['alpha']:.6g}:" in line for line in lines)
    assert "no interval: every paired difference equal" in md and "![convergence](convergence.png)" in md


def test_the_figure_has_an_axis_per_parameter_and_the_trial_axis(fixed_search):
    from schedlab.search_figure import convergence_figure

    spec, report, res = fixed_search
    from schedlab.platform.search.loop import read_trials

    recs = [TrialRecord(**t) for t in read_trials(res)]
    fig = convergence_figure(spec, recs, report.selection)
    axes = fig.get_axes()
    assert [ax.get_xlabel() for ax in axes] == ["alpha", "trial"]
    assert [t.get_text() for t in axes[0].get_xticklabels()] == [f"{a:g}" for a in ALPHAS]  # the choices
    base = report.selection["baseline"]["mean"]
    for ax in axes:  # the baseline, a horizontal line in every panel
        assert any(list(line.get_ydata()) == [base, base] for line in ax.get_lines()), ax.get_xlabel()
    best = max(axes[1].get_lines(), key=lambda line: len(line.get_xdata()))  # the best-so-far step
    assert best.get_xdata()[-1] >= max(r.number for r in recs)
    with (res / "search" / "convergence.csv").open() as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["trial", "state", "alpha", "value", "best_so_far"] and len(rows) == 1 + len(recs)
    assert (res / "search" / "convergence.png").stat().st_size > 10_000


def test_two_searched_parameters_get_a_panel_each():
    from schedlab.search_figure import convergence_figure

    spec = parse_spec(
        {
            "name": "two",
            "engine": "packing",
            "policies": ["Tetris"],
            "workload": {
                "kind": "packing",
                "slots": 50,
                "uniform_lo": 0.05,
                "uniform_hi": 0.5,
                "intensity": 0.9,
                "intensity_servers": 2,
            },
            "system": {"servers": 2, "capacity": 1.0, "epoch": 1.0},
            "search": {
                "metric": "wait_mean",
                "trials": 6,
                "params": {
                    "fairness": {"low": 0.05, "high": 1.0},
                    "epsilon": {"low": 0.01, "high": 1.0, "log": True},
                },
            },
            "tracking": {"enabled": False},
        },
        "s.toml",
    )
    rng = np.random.default_rng(1)
    recs = [
        TrialRecord(
            i,
            i // 2,
            {"epsilon": float(10 ** rng.uniform(-2, 0)), "fairness": float(rng.uniform(0.05, 1))},
            f"c{i}",
            "fail" if i == 5 else "complete",
            None if i == 5 else float(rng.uniform(5, 10)),
        )
        for i in range(6)
    ]
    fig = convergence_figure(spec, recs, None)
    axes = fig.get_axes()
    assert [ax.get_xlabel() for ax in axes] == ["epsilon (log scale)", "fairness", "trial"]
    assert axes[0].get_xscale() == "log"
    best = max(axes[2].get_lines(), key=lambda line: len(line.get_xdata()))
    assert best.get_xdata()[-1] >= 5  # through the last trial, a failed one


def test_kn_on_equal_paired_differences_is_not_conclusive(tmp_path):
    """KN's variance of a pair whose differences are all equal is 0, so it
    drops the worse one at its first stage: one left, but on one sample."""
    from schedlab.platform.sweep import run_sweep

    sel = run_sweep(parse_spec(fixed_data(tmp_path, delta=1.0), "s.toml"), backend="local").selection
    assert sel["procedure"].startswith("search, then KN") and sel["kn"]["stopped"] == "one left"
    assert sel["conclusive"] is False
    assert sel["guarantee"].startswith("inconclusive: no interval separates the winner from trial ")
