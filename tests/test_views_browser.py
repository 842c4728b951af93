"""The schedule page in a real headless browser (Debian's chromium, driven
by playwright without downloading a browser): it renders with no console
error and no network request, the screenshot is not blank, and hovering a
job's box shows that job's fields."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from tests.view_cases import ARGS  # headless Chromium as every page test starts it

CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (.ci/run installs Debian's)")
#: A page "not blank": at least this share of the screenshot's pixels is not the background.
MIN_INK = 0.05


def _schedules():
    from schedlab.views.replay import record_run

    rng = np.random.default_rng(2)
    n = 120
    jobs = pl.DataFrame(
        {
            "job_id": np.arange(n) + 1000,
            "submit": np.cumsum(rng.exponential(8.0, n)),
            "runtime": rng.exponential(40.0, n) + 1,
            "procs": rng.integers(1, 9, n),
            "requested_time": rng.exponential(40.0, n) + 60,
        }
    )
    a = record_run("batch", jobs, "EASY", system={"procs": 16})
    b = record_run("batch", jobs, "FCFS", system={"procs": 16})
    a.label, b.label = "EASY", "FCFS"
    return a, b


@pytest.fixture(scope="module")
def browser():
    sync = pytest.importorskip("playwright.sync_api")
    with sync.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


@pytest.mark.parametrize("window", [None, (300.0, 600.0)])
def test_page_renders_offline_and_hover_shows_the_job(browser, tmp_path, window):
    from PIL import Image

    from schedlab.views.page import write_page

    a, b = _schedules()
    page_file = write_page([a, b], tmp_path / "p.html", window=window, color_by="procs", title="EASY vs FCFS")
    page = browser.new_page(viewport={"width": 1400, "height": 1600})
    errors: list[str] = []
    requests: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("request", lambda r: requests.append(r.url))
    page.goto(page_file.as_uri())
    page.wait_for_selector(".plotly-graph-div .main-svg")
    page.wait_for_function("document.querySelectorAll('.plotly-graph-div canvas').length > 0")
    assert errors == []
    assert [u for u in requests if not u.startswith(("file:", "data:", "blob:"))] == []

    shot = Image.open(io.BytesIO(page.screenshot())).convert("RGB")
    pixels = np.asarray(shot).reshape(-1, 3)
    ink = np.mean(np.any(pixels < 235, axis=1))
    assert ink > MIN_INK, f"only {ink:.1%} of the page is drawn"
    assert len(np.unique(pixels[::7], axis=0)) > 20  # the colours of the boxes, not one flat fill

    # the widest EASY job box: hover its centre, its fields appear
    run = (a.boxes["panel"] == 0) & (a.boxes["kind"] == 0)
    if window is not None:  # a box wholly inside the window
        run &= (a.boxes["t0"] >= window[0]) & (a.boxes["t1"] <= window[1])
    k = int(np.argmax(np.where(run, (a.boxes["t1"] - a.boxes["t0"]) * (a.boxes["y1"] - a.boxes["y0"]), -1)))
    tx = float(a.boxes["t0"][k] + a.boxes["t1"][k]) / 2
    ty = float(a.boxes["y0"][k] + a.boxes["y1"][k]) / 2
    row = int(a.boxes["row"][k])
    xy = page.evaluate(
        """([x, y]) => {
            const gd = document.getElementsByClassName('plotly-graph-div')[0], L = gd._fullLayout;
            const r = gd.getBoundingClientRect();
            return [r.left + L.xaxis._offset + L.xaxis.l2p(x), r.top + L.yaxis._offset + L.yaxis.l2p(y)];
        }""",
        [tx, ty],
    )
    page.mouse.move(xy[0], xy[1])
    page.wait_for_selector("#job-info", state="visible", timeout=5000)
    text = page.inner_text("#job-info")
    assert f"job_id: {int(a.jobs['job_id'][row])}" in text
    for field in ("submit:", "start:", "end:", "wait:", "stretch:", "procs:", "requested_time:"):
        assert field in text
    assert errors == []
    page.close()
