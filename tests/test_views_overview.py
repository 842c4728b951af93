"""The pieces behind pages and figures that read at any scale, checked by hand:
time-averages per bin, the whole-run aggregates (they add up to what the
series say), the proposed windows, colour classes that say what they are,
axis units from the engine's declaration, and the small-n rule for error bars."""

from __future__ import annotations

import math

import numpy as np
import polars as pl

from schedlab.views.replay import record_run

#: Time-averages of the same step function computed two ways agree to this.
AVERAGE_TOL = 1e-9


def _queue(n: int = 300, seed: int = 1) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    size = rng.weibull(0.5, n)
    return pl.DataFrame(
        {
            "job_id": np.arange(n),
            "submit": np.cumsum(rng.exponential(1.2, n)),
            "size": size,
            "estimate": size * rng.lognormal(0, 1.0, n),
            "weight": np.ones(n),
        }
    )


def test_binned_mean_is_the_time_average_per_bin():
    from schedlab.views.overview import binned_mean

    t = np.array([0.0, 1.0, 3.0, 6.0])
    v = np.array([2.0, 4.0, 1.0, 0.0])
    # bins [0, 2): 2 x 1 + 4 x 1 = 6 / 2 = 3; [2, 4): 4 x 1 + 1 x 1 = 5 / 2; [4, 8): 1 x 2 / 4
    assert np.allclose(binned_mean(t, v, np.array([0.0, 2.0, 4.0, 8.0])), [3.0, 2.5, 0.5], atol=AVERAGE_TOL)
    assert np.allclose(binned_mean(t, v, np.array([-2.0, 0.0])), [0.0])  # before the first change: 0


def test_class_loads_add_up_to_the_series():
    from schedlab.views.overview import binned_mean, class_load
    from schedlab.views.page import color_values

    s = record_run("queue", _queue(), "SRPTE")
    codes, _, names = color_values(s, None)
    lo, hi = s.span()
    edges = np.linspace(lo, hi, 41)
    jobs, title = class_load(s, 0, codes, len(names), edges)
    assert title == "jobs"
    present = binned_mean(*s.series["jobs present"], edges)
    assert np.allclose(jobs.sum(axis=0), present, atol=AVERAGE_TOL)  # jobs in the system, split by class
    share, title = class_load(s, 1, codes, len(names), edges)
    busy_t, busy_v = s.series["jobs present"]
    busy = binned_mean(busy_t, (busy_v > 0).astype(float), edges)
    assert title == "share held" and np.allclose(share.sum(axis=0), busy, atol=1e-6)  # the server: 1 while busy


def test_proposed_windows_are_where_the_runs_differ_most():
    from schedlab.views.overview import PROPOSED, SCORE_BINS, propose_windows, score

    jobs = _queue(600)
    runs = [record_run("queue", jobs, p) for p in ("PS", "FIFO")]
    windows = propose_windows(runs)
    lo, hi = runs[0].span()
    assert 1 <= len(windows) <= PROPOSED
    assert all(lo <= a < b <= hi for a, b in windows)
    assert all(b1 <= a2 for (_, b1), (a2, _) in zip(windows, windows[1:]))  # disjoint, in time order
    edges = np.linspace(lo, max(r.span()[1] for r in runs), SCORE_BINS + 1)
    per_bin = score(runs, edges) * np.diff(edges)
    width = windows[0][1] - windows[0][0]
    m = round(width / (edges[1] - edges[0]))
    sums = np.convolve(per_bin, np.ones(m), mode="valid")
    best = max(float(per_bin[(edges[:-1] >= a - 1e-9) & (edges[:-1] < b - 1e-9)].sum()) for a, b in windows)
    assert math.isclose(best, float(sums.max()), rel_tol=1e-9)  # the best window of that width is proposed


def test_colours_name_their_classes_never_a_modulo():
    from schedlab.views.page import color_title, color_values

    s = record_run("queue", _queue(), "PS")
    _, _, names = color_values(s, None)
    assert names[0].startswith("size 1e-") and all("mod" not in n for n in names)  # sizes span decades
    assert color_title(s, "size") == "colour: job size, decade classes"
    _, _, by_id = color_values(s, "job_id")
    assert "arrival order" in color_title(s, "job_id") and all("mod" not in n for n in by_id)
    s.jobs["user"] = np.array([f"u{k % 15}" for k in range(s.n_jobs)])
    _, colours, users = color_values(s, "user")
    assert len(users) == len(colours) == 12 and users[-1] == "user: 4 others"


def test_axis_units_come_from_the_engine():
    from schedlab.plotting import column_label

    assert column_label("mst", "queue", "trace") == "mean sojourn time [s]"
    assert column_label("mst", "queue", "synthetic") == "mean sojourn time [time units of the workload]"
    assert column_label("wait_mean", "packing", "packing") == "mean wait, start - submit [slots]"
    assert column_label("throughput", "packing", "packing").endswith("[jobs per slot]")
    assert column_label("load", "batch", "trace").endswith("[fraction of the machine]")
    assert column_label("load", "queue", "synthetic") == "offered load (> 1: overloaded) [fraction of the server]"


def test_a_bar_that_would_swamp_the_figure_is_left_out_and_said():
    from schedlab.plotting import FEW, WIDE, bar_caption, unreadable_bar

    plotted = (10.0, 20.0)
    assert unreadable_bar(9.0, 11.0, 2, plotted, False) == FEW
    assert unreadable_bar(9.0, 11.0, 3, plotted, False) is None
    assert unreadable_bar(0.0, 30.0, 5, plotted, False) == WIDE  # 30 wide against a span of 10
    assert unreadable_bar(1.0, 1e3, 5, plotted, True) == WIDE  # 3 decades against 0.3
    assert unreadable_bar(9.0, 15.0, 5, plotted, True) is None  # a factor 1.7 against the span, a factor 2
    assert bar_caption({}) == ""
    text = bar_caption({FEW: 4, WIDE: 1})
    assert "4 from fewer than 3 replications" in text and "1 wider than the range the means span" in text
