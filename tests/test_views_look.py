"""Checked by looking: each engine's schedule page and one sweep figure per engine,
rendered in headless Chromium (Debian's, driven by playwright), read back from the
page itself: the colour legend says what the colours mean (the engine's declaration,
never a modulo), the time axis is in the engine's unit (slots for packing), load is a
fraction of what the engine has, labels are one line, no text runs past the page's
or the figure's edge, and a figure of 2 replications draws no error bar but says why.
``python benchmarks/view_screenshots.py`` writes the same pages and figures as PNGs."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from tests.view_cases import ARGS, CASES, LOOK_JS, SVG_JS, open_page, results_dir

CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (.ci/run installs Debian's)")


@pytest.fixture(scope="module")
def browser():
    sync = pytest.importorskip("playwright.sync_api")
    with sync.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory):
    root = tmp_path_factory.mktemp("look")
    return {engine: results_dir(engine, root) for engine in CASES}


@pytest.mark.parametrize("engine", list(CASES))
def test_each_engines_page_says_what_its_colours_and_axes_mean(browser, sweeps, engine, tmp_path):
    from schedlab.docs_columns import UNITS, time_unit
    from schedlab.views import replay as rp
    from schedlab.views.page import write_page

    case = CASES[engine]
    x = case["x"]
    first = case["workload"][x][0]
    a = rp.select(sweeps[engine], policy=case["policies"][0], where={x: str(first)})
    b = rp.partner(a, case["policies"][1])
    runs = [rp.replay(a), rp.replay(b)]
    out = write_page(runs, tmp_path / f"{engine}.html", window=None, color_by=None, title=f"{engine}", command="cmd")
    errors: list[str] = []
    page = open_page(browser, out, errors)
    seen = page.evaluate(LOOK_JS)
    notes = page.inner_text("#page-notes")
    page.close()
    assert errors == []
    assert seen["overflow"] == [], seen["overflow"]
    assert UNITS[engine].color_meaning in seen["legendTitle"]
    assert not [e for e in seen["legend"] if "mod" in e]
    unit = time_unit(engine, case["workload"]["kind"])
    assert runs[0].time_unit == unit
    assert f"time [{unit}]" in seen["xtitles"]
    assert "cmd --window " in notes  # the windows worth a job-level look, as commands


def test_a_whole_run_opens_on_aggregates_and_a_window_is_one_click_away(browser, tmp_path):
    from schedlab.views.overview import propose_windows
    from schedlab.views.page import is_overview, write_page
    from schedlab.views.replay import record_run

    rng = np.random.default_rng(7)
    n = 3000
    size = rng.weibull(0.25, n)
    size /= size.mean()
    jobs = pl.DataFrame(
        {
            "job_id": np.arange(n),
            "submit": np.cumsum(rng.exponential(1 / 0.9, n)),
            "size": size,
            "estimate": size * rng.lognormal(0, 0.5, n),
            "weight": np.ones(n),
        }
    )
    runs = [record_run("queue", jobs, p) for p in ("PSBS", "SRPTE")]
    runs[0].label, runs[1].label = "PSBS", "SRPTE"
    assert is_overview(runs, None)
    windows = propose_windows(runs)
    assert windows and all(b > a for a, b in windows)
    out = write_page(runs, tmp_path / "whole.html", window=None, color_by=None, title="whole run")
    errors: list[str] = []
    page = open_page(browser, out, errors)
    seen = page.evaluate(LOOK_JS)
    assert errors == [] and seen["overflow"] == [], seen["overflow"]
    titles = page.evaluate("() => Array.from(document.querySelectorAll('.annotation-text')).map(e => e.textContent)")
    assert any("jobs in the system per colour class" in t for t in titles)
    assert any("job level: the proposed windows" in t for t in titles)
    page.locator(".updatemenu-button", has_text="window 1").click()
    page.wait_for_function(
        "([a, b]) => { const r = document.getElementById('plot').layout.xaxis.range;"
        " return Math.abs(r[0] - a) < 1e-6 && Math.abs(r[1] - b) < 1e-6; }",
        arg=list(windows[0]),
    )
    page.close()


@pytest.mark.parametrize("engine", list(CASES))
def test_each_engines_figure_fits_speaks_its_units_and_skips_swamping_bars(browser, sweeps, engine, tmp_path):
    from schedlab.docs_columns import UNITS, time_unit
    from schedlab.plotting import MIN_BAR_N, plot

    case = CASES[engine]
    res = plot(sweeps[engine], x=case["x"], y=case["y"], out=tmp_path / f"{engine}.svg")
    assert f"fewer than {MIN_BAR_N} replications" in res.caption  # 2 replications: no bar, and why
    errors: list[str] = []
    page = open_page(browser, res.vector, errors)
    seen = page.evaluate(SVG_JS)
    page.close()
    assert errors == [] and seen["overflow"] == [], seen["overflow"]
    text = " ".join(seen["texts"])
    assert "Hollow markers" in text
    if case["x"] == "load":
        assert f"[{UNITS[engine].load}]" in text
    if case["y"] in ("wait_mean", "mst"):
        assert f"[{time_unit(engine, case['workload']['kind'])}]" in text
    assert ", /" not in text and "time units of the workload (s for traces)" not in text
